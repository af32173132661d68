//! Arbitrary bytes as a graph file: opening must either fail with an error or give a graph on
//! which every accessor, a push from every node, an embedding and `validate` are safe.
//!
//! Each input is tried twice: as it is, and with the header checksum recomputed, so that random
//! bytes get past the header checksum and reach the size/offset checks and the sections.
#![no_main]

use ie_fuzz::{fix_header, from_bytes, touch_everything};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(g) = from_bytes(data) {
        touch_everything(&g);
    }
    let mut fixed = data.to_vec();
    fix_header(&mut fixed);
    if fixed != data {
        if let Ok(g) = from_bytes(&fixed) {
            touch_everything(&g);
        }
    }
});
