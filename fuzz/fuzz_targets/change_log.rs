//! Edits to valid change logs of live graphs (see `ie_fuzz::change_log`).
#![no_main]

libfuzzer_sys::fuzz_target!(|inp: ie_fuzz::ChangeLogInput| ie_fuzz::change_log(inp));
