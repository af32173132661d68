//! Arbitrary bytes as a graph file (see `ie_fuzz::open_bytes`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ie_fuzz::open_bytes(data));
