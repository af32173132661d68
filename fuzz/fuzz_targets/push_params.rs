//! Hostile push parameters on valid graphs (see `ie_fuzz::push_params`).
#![no_main]

libfuzzer_sys::fuzz_target!(|inp: ie_fuzz::PushInput| ie_fuzz::push_params(inp));
