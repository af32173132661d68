//! Structure-aware edits of small valid graph files (see `ie_fuzz::mutate_valid`).
#![no_main]

libfuzzer_sys::fuzz_target!(|inp: ie_fuzz::MutateInput| ie_fuzz::mutate_valid(inp));
