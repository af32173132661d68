//! Replays every file of `fuzz/corpus/<target>/` through the fuzz targets' own entry points
//! (`fuzz/src/lib.rs`), so the inputs the fuzzers kept, the crashes they found among them, stay
//! checked by `cargo test` on a stable toolchain, without libFuzzer. A panic (a broken oracle
//! contract: an error without a message, a validated graph that fails a query, a PPR mass above
//! 1, ...) fails the test and names the file.

#[allow(dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod ie_fuzz;

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} is empty", dir.display());
    files
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

/// Runs `f` on every corpus file of `target`; returns how many decoded to an input.
fn replay(target: &str, f: impl Fn(&[u8]) -> bool) -> usize {
    let mut ran = 0;
    for (path, bytes) in corpus(target) {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&bytes)));
        match r {
            Ok(decoded) => ran += usize::from(decoded),
            Err(_) => panic!("{target}: {} breaks the oracle", path.display()),
        }
    }
    ran
}

#[test]
fn corpus_open_bytes() {
    let n = replay("open_bytes", |b| {
        ie_fuzz::open_bytes(b);
        true
    });
    assert!(n > 0);
}

#[test]
fn corpus_mutate_valid() {
    let n = replay("mutate_valid", |b| {
        ie_fuzz::decode::<ie_fuzz::MutateInput>(b)
            .map(ie_fuzz::mutate_valid)
            .is_some()
    });
    assert!(n > 0, "no corpus file decodes to an input");
}

#[test]
fn corpus_push_params() {
    let n = replay("push_params", |b| {
        ie_fuzz::decode::<ie_fuzz::PushInput>(b)
            .map(ie_fuzz::push_params)
            .is_some()
    });
    assert!(n > 0, "no corpus file decodes to an input");
}

#[test]
fn corpus_change_log() {
    let n = replay("change_log", |b| {
        ie_fuzz::decode::<ie_fuzz::ChangeLogInput>(b)
            .map(ie_fuzz::change_log)
            .is_some()
    });
    assert!(n > 0, "no corpus file decodes to an input");
}
