//! The change log of a live graph (`GRAPH.live`): edits to one of three valid logs (byte and
//! word overwrites, truncation, extension, copies), tried as they are and with every checksum
//! forged so they reach the structural checks. `read_log` must return or fail cleanly; a log
//! that attaches to its graph must be safe to query, and once it validates, every in-range
//! query must succeed (`touch_everything`). The same mutations run without nightly in
//! `tests/live_graphs.rs` (`mutated_logs_never_crash_and_validated_ones_answer_queries`).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use ie_fuzz::{base_graphs, from_bytes, touch_everything, valid_logs};
use instant_embedding::live::with_log_bytes;
use instant_embedding::livelog::{forge_checksums, read_log};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Edit {
    Byte { at: u16, value: u8 },
    U32 { at: u16, value: u32 },
    U64 { at: u16, value: u64 },
    Truncate { at: u16 },
    Extend { bytes: Vec<u8> },
    Copy { from: u16, to: u16, len: u8 },
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(which) = u8::arbitrary(&mut u) else {
        return;
    };
    let Ok(forge) = bool::arbitrary(&mut u) else {
        return;
    };
    let Ok(edits) = Vec::<Edit>::arbitrary(&mut u) else {
        return;
    };
    let logs = valid_logs();
    let (base, log) = &logs[which as usize % logs.len()];
    let mut m = log.clone();
    for e in edits.iter().take(8) {
        let len = m.len();
        if len == 0 {
            break;
        }
        match e {
            Edit::Byte { at, value } => m[*at as usize % len] = *value,
            Edit::U32 { at, value } => {
                let i = (*at as usize % len) & !3;
                if i + 4 <= len {
                    m[i..i + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
            Edit::U64 { at, value } => {
                let i = (*at as usize % len) & !7;
                if i + 8 <= len {
                    m[i..i + 8].copy_from_slice(&value.to_le_bytes());
                }
            }
            Edit::Truncate { at } => m.truncate(*at as usize % len),
            Edit::Extend { bytes } => m.extend_from_slice(bytes),
            Edit::Copy { from, to, len: l } => {
                let (f, t, l) = (*from as usize % len, *to as usize % len, *l as usize);
                if f + l <= len && t + l <= len {
                    let chunk = m[f..f + l].to_vec();
                    m[t..t + l].copy_from_slice(&chunk);
                }
            }
        }
    }
    if forge {
        forge_checksums(&mut m);
    }
    if let Err(e) = read_log(&m) {
        assert!(!e.to_string().is_empty());
    }
    let g = from_bytes(&base_graphs()[*base]).expect("valid base graph");
    if let Ok(live) = with_log_bytes(g, &m) {
        touch_everything(&live);
    }
});
