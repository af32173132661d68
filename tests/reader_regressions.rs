//! Regression tests for the graph-file reader on hostile bytes (see docs/RELIABILITY.md).
//!
//! Each test crafts a file the builder would never write (header checksum fixed up so the
//! mutation gets past the O(1) header check) and asserts the reader answers with an `Error`,
//! never a panic, a hang or an out-of-bounds read. Tests marked "found by" reproduce a bug
//! found while fuzzing or reviewing the reader; the others pin behaviour the fuzz targets in
//! `fuzz/` rely on. Everything runs on in-memory images (`Graph::from_image`), so the suite also
//! runs under Miri; the mmap path is covered by the `open_*` tests (skipped under Miri).

use instant_embedding::embed::ppr::{push, PprConfig, Variant, Workspace};
use instant_embedding::embed::{embed_nodes, EmbeddingConfig};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
use instant_embedding::graph::csr::{Graph, NodeId};
use instant_embedding::graph::format::{checksum, Sec, NBR_CODES_OFF, NUM_SECTIONS};
use instant_embedding::Error;

// ------------------------------------------------------------------------------ helpers

/// The bytes of a small valid graph.
fn image(
    n: usize,
    edges: &[(u32, u32)],
    weights: Option<&[f32]>,
    directed: bool,
    ids: IdTable,
) -> Vec<u8> {
    let src: Vec<u32> = edges.iter().map(|e| e.0).collect();
    let dst: Vec<u32> = edges.iter().map(|e| e.1).collect();
    let parts = csr_from_edges(n, &src, &dst, weights, directed, Merge::Sum, ids).unwrap();
    build_in_memory(&parts).unwrap().image().to_vec()
}

fn ring_edges(n: u32) -> Vec<(u32, u32)> {
    (0..n).map(|v| (v, (v + 1) % n)).collect()
}

/// An owned graph over arbitrary bytes (the same checks as `Graph::open`, without a file).
fn from_bytes(b: &[u8]) -> instant_embedding::Result<Graph> {
    let mut words = vec![0u64; b.len().div_ceil(8)];
    for (w, c) in words.iter_mut().zip(b.chunks(8)) {
        let mut a = [0u8; 8];
        a[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(a);
    }
    Graph::from_image(words, b.len())
}

fn section(b: &[u8], i: usize) -> (usize, usize) {
    let rd = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().unwrap()) as usize;
    if i == Sec::NbrCodes as usize {
        // {offset, xxh3} at NBR_CODES_OFF; the length is the arc count m.
        let off = rd(NBR_CODES_OFF);
        return (off, if off == 0 { 0 } else { rd(24) });
    }
    let o = 64 + 24 * i;
    (rd(o), rd(o + 8))
}

/// Where section `i`'s checksum is in the header.
fn checksum_at(i: usize) -> usize {
    if i == Sec::NbrCodes as usize {
        NBR_CODES_OFF + 8
    } else {
        64 + 24 * i + 16
    }
}

/// Recomputes the header checksum so a mutation elsewhere in the header is not caught by it.
fn fix_header(b: &mut [u8]) {
    let c = checksum(&b[..248]);
    b[248..256].copy_from_slice(&c.to_le_bytes());
}

/// Recomputes every (in-bounds) section checksum and the header checksum, so that only the
/// structural checks of `validate` stand between a mutation and the caller.
fn fix_all_checksums(b: &mut [u8]) {
    for i in 0..NUM_SECTIONS {
        let (off, len) = section(b, i);
        if let Some(end) = off.checked_add(len).filter(|&e| e <= b.len()) {
            if i == Sec::NbrCodes as usize && off == 0 {
                continue;
            }
            let c = checksum(&b[off..end]);
            let o = checksum_at(i);
            b[o..o + 8].copy_from_slice(&c.to_le_bytes());
        }
    }
    fix_header(b);
}

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Calls every read accessor on every node (and a few out of range), a push and an embedding
/// per node, id lookups and `validate`. Returns the errors seen; panics only on a broken
/// contract: a fully validated graph must answer every call without error.
fn touch_everything(g: &Graph) -> Vec<Error> {
    let mut errs = Vec::new();
    let n = g.num_nodes() as u32;
    let cfg = PprConfig {
        eps: 1e-2,
        ..PprConfig::default()
    };
    let mut ws = Workspace::new();
    let mut record = |r: instant_embedding::Result<()>| {
        if let Err(e) = r {
            assert!(!e.to_string().is_empty(), "error without a message: {e:?}");
            errs.push(e);
        }
    };
    for v in 0..n.saturating_add(2) {
        record(g.degree(v).map(drop));
        record(g.neighbors(v).map(drop));
        record(g.neighbors_checked(v).map(drop));
        record(g.weights(v).map(drop));
        record(g.strength(v).map(drop));
        record(g.node_id(v).map(drop));
        record(g.hash_key(v).map(drop));
        for variant in [Variant::Standard, Variant::Lazy] {
            record(push(g, v, &PprConfig { variant, ..cfg }, &mut ws));
        }
    }
    if let Some(ids) = g.int_ids() {
        for id in ids.iter().copied().chain([-1, i64::MAX, i64::MIN]) {
            record(g.lookup_int(id).map(drop));
        }
    }
    for v in 0..n {
        if let Ok(NodeId::Str(s)) = g.node_id(v) {
            let s = s.to_owned();
            record(g.lookup_str(&s).map(drop));
        }
    }
    record(g.lookup_str("no such node").map(drop));
    let nodes: Vec<u32> = (0..n).collect();
    let ecfg = EmbeddingConfig {
        dim: 8,
        seed: 0,
        ppr: cfg,
        ..EmbeddingConfig::default()
    };
    record(embed_nodes(g, &nodes, &ecfg, None).map(drop));
    let valid = g.validate();
    let valid_ok = valid.is_ok();
    record(valid);
    if valid_ok {
        // A graph that passes validate() must answer every in-range query.
        let bad: Vec<_> = errs
            .iter()
            .filter(|e| !matches!(e, Error::NodeIndexOutOfRange { .. }))
            .collect();
        assert!(
            bad.is_empty(),
            "validate() passed but queries failed: {bad:?}"
        );
    }
    errs
}

fn expect_format_error(r: instant_embedding::Result<Graph>, needle: &str) {
    match r {
        Err(Error::Format(m)) => assert!(m.contains(needle), "message {m:?} lacks {needle:?}"),
        Err(e) => panic!("expected a format error about {needle:?}, got {e:?}"),
        Ok(g) => panic!(
            "expected a format error about {needle:?}, but the file opened ({} nodes, {} arcs)",
            g.num_nodes(),
            g.num_arcs()
        ),
    }
}

// ------------------------------------------------------------------------------ baseline

#[test]
fn valid_graphs_of_every_kind_answer_everything() {
    let ring = ring_edges(6);
    let w: Vec<f32> = (0..6).map(|i| 0.5 + i as f32).collect();
    let imgs = [
        image(6, &ring, None, false, IdTable::Implicit),
        image(
            6,
            &ring,
            Some(&w),
            true,
            IdTable::Int(vec![-5, 0, 7, 100, i64::MAX, i64::MIN]),
        ),
        image(
            6,
            &ring,
            Some(&w),
            false,
            IdTable::Str(["a", "bb", "", "é", "z", "0"].map(String::from).to_vec()),
        ),
        image(0, &[], None, false, IdTable::Implicit),
        image(3, &[(0, 0), (1, 1)], None, false, IdTable::Implicit),
    ];
    for img in imgs {
        let g = from_bytes(&img).unwrap();
        g.validate().unwrap();
        let errs = touch_everything(&g);
        assert!(errs
            .iter()
            .all(|e| matches!(e, Error::NodeIndexOutOfRange { .. })));
    }
}

#[test]
fn every_single_byte_flip_is_an_error_or_harmless() {
    // Exhaustive over a small weighted string-id graph: flip each byte (with and without the
    // header checksum fixed up) and touch everything. A flip must be refused by open() or
    // reported by some call (validate's checksums at least), unless the byte carries nothing:
    // the padding between sections, the reserved header bytes (ignored by readers of this
    // version), and the header checksum itself when it is recomputed. The nbr_codes entry
    // (bytes 232..248) is checked like the others.
    let w = [1.0f32, 2.0, 3.0, 4.0];
    let base = image(
        4,
        &ring_edges(4),
        Some(&w),
        false,
        IdTable::Str(["w", "x", "y", "z"].map(String::from).to_vec()),
    );
    let in_section = |i: usize| {
        (0..NUM_SECTIONS).any(|k| {
            let (off, len) = section(&base, k);
            (off..off + len).contains(&i)
        })
    };
    let reserved = |i: usize| (48..64).contains(&i);
    let mut wrong = Vec::new();
    for i in 0..base.len() {
        for fix in [false, true] {
            let mut b = base.clone();
            b[i] ^= 0x5a;
            if fix {
                fix_header(&mut b);
            }
            let outcome = match from_bytes(&b) {
                Err(_) => "refused",
                Ok(g) => {
                    let errs = touch_everything(&g);
                    if errs
                        .iter()
                        .all(|e| matches!(e, Error::NodeIndexOutOfRange { .. }))
                    {
                        "harmless"
                    } else {
                        "caught"
                    }
                }
            };
            let expected: &[&str] = if i < 256 && !fix {
                &["refused"]
            } else if i < 256 && (reserved(i) || i >= 248) {
                &["harmless"]
            } else if i < 256 || in_section(i) {
                &["refused", "caught"]
            } else {
                &["harmless"] // padding
            };
            if !expected.contains(&outcome) {
                wrong.push((i, fix, outcome));
            }
        }
    }
    assert!(wrong.is_empty(), "(byte, header fixed, outcome): {wrong:?}");
}

#[test]
fn every_truncation_is_refused() {
    let base = image(
        5,
        &ring_edges(5),
        None,
        false,
        IdTable::Int(vec![9, 8, 7, 6, 5]),
    );
    for cut in 0..base.len() {
        assert!(
            matches!(from_bytes(&base[..cut]), Err(Error::Format(_))),
            "cut {cut}"
        );
    }
}

// ------------------------------------------------------------------------------ header

#[test]
fn header_sizes_that_overflow_are_refused() {
    // Found by review: with string ids, a `num_arcs` whose byte size overflows u64 made the
    // expected length of `indices` "unknown", so it was not checked; indptr = [0, 2^62] then
    // passed the cheap checks and `neighbors(0)` returned a slice of 2^62 entries reaching far
    // outside the file (an out-of-bounds read in safe code).
    for (weighted, ids) in [
        (false, IdTable::Str(vec!["a".into()])),
        (true, IdTable::Str(vec!["a".into()])),
        (false, IdTable::Implicit),
        (true, IdTable::Int(vec![3])),
    ] {
        let w = [1.0f32];
        let mut b = image(1, &[(0, 0)], weighted.then_some(&w[..]), true, ids);
        let m: u64 = 1 << 62;
        put_u64(&mut b, 24, m); // num_arcs
        put_u64(&mut b, 32, m); // num_edges (directed: = arcs)
        let (ip, _) = section(&b, Sec::Indptr as usize);
        put_u64(&mut b, ip + 8, m); // indptr[n] == num_arcs keeps the cheap check quiet
        fix_header(&mut b);
        expect_format_error(from_bytes(&b), "num_arcs");
    }
}

#[test]
fn num_nodes_above_u32_is_refused() {
    let mut b = image(1, &[], None, false, IdTable::Implicit);
    put_u64(&mut b, 16, 1 << 33);
    fix_header(&mut b);
    expect_format_error(from_bytes(&b), "u32");
}

#[test]
fn overlapping_unaligned_and_outside_sections_are_refused() {
    let base = image(4, &ring_edges(4), None, false, IdTable::Implicit);
    let (ip_off, _) = section(&base, Sec::Indptr as usize);
    let (ix_off, _) = section(&base, Sec::Indices as usize);
    let indices_offset = 64 + 24 * Sec::Indices as usize;
    let cases: [(u64, &str); 4] = [
        (ip_off as u64, "overlaps"),    // indices moved onto indptr
        (ix_off as u64 + 8, "aligned"), // misaligned indices
        (1 << 40, "outside the file"),  // past the end of the file
        (u64::MAX - 63, "outside the file"),
    ];
    for (val, needle) in cases {
        let mut b = base.clone();
        put_u64(&mut b, indices_offset, val);
        fix_header(&mut b);
        expect_format_error(from_bytes(&b), needle);
    }
    // id_bytes may have any length, so its offset + length can wrap around u64.
    let s = image(
        2,
        &[(0, 1)],
        None,
        false,
        IdTable::Str(vec!["a".into(), "b".into()]),
    );
    let idb = 64 + 24 * Sec::IdBytes as usize;
    let mut b = s.clone();
    put_u64(&mut b, idb, u64::MAX - 63);
    put_u64(&mut b, idb + 8, 128);
    fix_header(&mut b);
    expect_format_error(from_bytes(&b), "overflows");
}

#[test]
fn from_image_with_a_length_beyond_the_buffer_is_refused() {
    // Found by review: `from_image(words, len)` is a safe function that trusted `len`; a len
    // larger than the buffer built a byte slice past the end of the allocation.
    let b = image(3, &ring_edges(3), None, false, IdTable::Implicit);
    let mut words = vec![0u64; b.len().div_ceil(8)];
    for (w, c) in words.iter_mut().zip(b.chunks(8)) {
        let mut a = [0u8; 8];
        a[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(a);
    }
    let too_long = words.len() * 8 + 4096;
    assert!(matches!(
        Graph::from_image(words, too_long),
        Err(Error::InvalidInput(_) | Error::Format(_))
    ));
}

// ------------------------------------------------------------------------------ accessors

#[test]
fn hash_key_of_an_out_of_range_node_is_an_error() {
    // Found by review: `hash_key(v)` indexed the id table without a range check, so
    // `Graph._core.hash_key(10**6)` panicked (int64 and string ids) or returned a key for a
    // node that does not exist (implicit ids).
    for ids in [
        IdTable::Implicit,
        IdTable::Int(vec![10, 20, 30]),
        IdTable::Str(vec!["a".into(), "b".into(), "c".into()]),
    ] {
        let g = from_bytes(&image(3, &ring_edges(3), None, false, ids)).unwrap();
        for v in [3u32, 4, 1_000_000, u32::MAX] {
            assert!(
                matches!(g.hash_key(v), Err(Error::NodeIndexOutOfRange { .. })),
                "hash_key({v}) on {:?}",
                g.id_kind()
            );
        }
        assert!(g.hash_key(2).is_ok());
    }
}

#[test]
fn corrupted_indptr_rows_are_errors() {
    let base = image(5, &ring_edges(5), None, false, IdTable::Implicit);
    let (ip, _) = section(&base, Sec::Indptr as usize);
    for (k, val) in [(2usize, 0u64), (2, 9), (3, 1 << 60), (1, u64::MAX)] {
        let mut b = base.clone();
        put_u64(&mut b, ip + 8 * k, val);
        let g = from_bytes(&b).unwrap(); // sections are not read by open
        let errs = touch_everything(&g);
        assert!(errs
            .iter()
            .any(|e| matches!(e, Error::Format(m) if m.contains("indptr"))));
    }
}

#[test]
fn out_of_range_neighbours_ids_and_offsets_are_errors() {
    let names = ["p", "q", "r", "s"].map(String::from).to_vec();
    let base = image(4, &ring_edges(4), None, false, IdTable::Str(names));
    let (ix, _) = section(&base, Sec::Indices as usize);
    let (ids, _) = section(&base, Sec::Ids as usize);
    let (order, _) = section(&base, Sec::IdIndex as usize);
    let (bytes, _) = section(&base, Sec::IdBytes as usize);
    let edits: [(usize, &[u8]); 5] = [
        (ix, &u32::MAX.to_le_bytes()),          // neighbour >= n
        (ids + 8, &(1u64 << 50).to_le_bytes()), // string offset past id_bytes
        (ids + 16, &0u64.to_le_bytes()),        // offsets decrease
        (order, &77u32.to_le_bytes()),          // id_index entry >= n
        (bytes, &[0xff]),                       // invalid UTF-8
    ];
    for (off, val) in edits {
        let mut b = base.clone();
        b[off..off + val.len()].copy_from_slice(val);
        let g = from_bytes(&b).unwrap();
        let errs = touch_everything(&g);
        assert!(
            errs.iter().any(|e| matches!(e, Error::Format(_))),
            "edit at {off} not reported"
        );
    }
}

#[test]
fn in_range_neighbour_flip_is_caught_by_the_section_checksum() {
    let base = image(6, &ring_edges(6), None, false, IdTable::Implicit);
    let (ix, _) = section(&base, Sec::Indices as usize);
    let mut b = base.clone();
    let first = u32::from_le_bytes(b[ix..ix + 4].try_into().unwrap());
    b[ix..ix + 4].copy_from_slice(&((first + 2) % 6).to_le_bytes());
    let g = from_bytes(&b).expect("open does not read sections");
    match g.validate() {
        Err(Error::Format(m)) => assert!(m.contains("checksum") && m.contains("indices"), "{m}"),
        other => panic!("expected a checksum error, got {other:?}"),
    }
    // With the checksum forged as well, the structural checks still catch it.
    fix_all_checksums(&mut b);
    let g = from_bytes(&b).unwrap();
    assert!(matches!(g.validate(), Err(Error::Format(_))));
}

// ------------------------------------------------------------------------------ push

#[test]
fn corrupted_strength_cannot_make_the_push_diverge() {
    // Found by review: on a weighted graph whose stored `strength` is smaller than the sum of
    // its weights (or a tiny positive subnormal), each push multiplied the residual mass
    // instead of shrinking it; the residuals grew to infinity and the push looped forever
    // (mass moving back and forth on a cycle). Now an error.
    let w = [1.0f32, 1.0, 1.0];
    let base = image(3, &ring_edges(3), Some(&w), false, IdTable::Implicit);
    let (st, _) = section(&base, Sec::Strength as usize);
    for bad in [1e-310f64, 1e-3, 0.5, 1.0] {
        let mut b = base.clone();
        for v in 0..3 {
            b[st + 8 * v..st + 8 * v + 8].copy_from_slice(&bad.to_le_bytes());
        }
        let g = from_bytes(&b).unwrap();
        for variant in [Variant::Standard, Variant::Lazy] {
            let cfg = PprConfig {
                variant,
                eps: 1e-6,
                ..PprConfig::default()
            };
            let r = push(&g, 0, &cfg, &mut Workspace::new());
            assert!(
                matches!(&r, Err(Error::Format(m)) if m.contains("strength")),
                "strength {bad}: {r:?}"
            );
        }
    }
    // A strength larger than the weights only loses mass: it terminates (validate flags it).
    let mut b = base.clone();
    b[st..st + 8].copy_from_slice(&1e300f64.to_le_bytes());
    let g = from_bytes(&b).unwrap();
    push(&g, 0, &PprConfig::default(), &mut Workspace::new()).unwrap();
    assert!(g.validate().is_err());
}

#[test]
fn nan_and_infinite_weights_are_errors() {
    let w = [1.0f32, 2.0, 3.0];
    let base = image(3, &ring_edges(3), Some(&w), true, IdTable::Implicit);
    let (ws, _) = section(&base, Sec::Weights as usize);
    let (st, _) = section(&base, Sec::Strength as usize);
    for (off, val) in [
        (ws, f32::NAN.to_le_bytes().to_vec()),
        (ws, f32::INFINITY.to_le_bytes().to_vec()),
        (ws, (-1.0f32).to_le_bytes().to_vec()),
        (st, f64::NAN.to_le_bytes().to_vec()),
        (st, (-2.0f64).to_le_bytes().to_vec()),
        (st, 0.0f64.to_le_bytes().to_vec()),
    ] {
        let mut b = base.clone();
        b[off..off + val.len()].copy_from_slice(&val);
        let g = from_bytes(&b).unwrap();
        let errs = touch_everything(&g);
        assert!(errs.iter().any(|e| matches!(e, Error::Format(_))));
    }
}

// ------------------------------------------------------------------------------ files

#[test]
#[cfg_attr(miri, ignore = "Miri cannot mmap files")]
fn open_refuses_bad_files_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.graph");
    let base = image(4, &ring_edges(4), None, false, IdTable::Implicit);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "too short"),
        (b"IEGRAPH\0".to_vec(), "too short"),
        (b"not a graph at all".to_vec(), "magic"),
        (base[..base.len() - 1].to_vec(), "length"),
        ([base.clone(), vec![0; 64]].concat(), "length"),
        (
            {
                let mut b = base.clone();
                b[100] ^= 1;
                b
            },
            "checksum",
        ),
        (
            {
                let mut b = base.clone();
                b[8] = 2;
                fix_header(&mut b);
                b
            },
            "version",
        ),
        (
            {
                let mut b = base.clone();
                b[13] = 0x7f; // flags bits 8..16: id kind 0x7f
                fix_header(&mut b);
                b
            },
            "id kind",
        ),
    ];
    for (bytes, needle) in cases {
        std::fs::write(&p, &bytes).unwrap();
        match Graph::open(&p) {
            Err(Error::Format(m)) => {
                assert!(m.contains(needle), "{m:?} lacks {needle:?}");
                assert!(m.contains("g.graph"), "{m:?} does not name the file");
            }
            Err(e) => panic!("{needle}: {e:?}"),
            Ok(_) => panic!("{needle}: opened"),
        }
    }
    assert!(matches!(Graph::open(dir.path()), Err(Error::Io { .. })));
    assert!(matches!(
        Graph::open(dir.path().join("missing")),
        Err(Error::Io { .. })
    ));
}

#[test]
#[cfg_attr(miri, ignore = "Miri cannot mmap files")]
fn open_and_from_image_agree_on_mutated_files() {
    // The mmap path and the in-memory path run the same checks.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.graph");
    let base = image(
        5,
        &ring_edges(5),
        Some(&[1.0, 2.0, 3.0, 4.0, 5.0]),
        false,
        IdTable::Int(vec![4, 3, 2, 1, 0]),
    );
    let mut rng = 0x1234_5678_9abc_def0u64;
    for _ in 0..300 {
        let mut b = base.clone();
        for _ in 0..1 + (rng % 3) {
            rng = instant_embedding::hashing::splitmix64(rng);
            let i = (rng % b.len() as u64) as usize;
            b[i] ^= (rng >> 32) as u8 | 1;
        }
        if rng & (1 << 40) != 0 {
            fix_header(&mut b);
        }
        std::fs::write(&p, &b).unwrap();
        let a = Graph::open(&p);
        let m = from_bytes(&b);
        assert_eq!(a.is_ok(), m.is_ok());
        if let (Ok(a), Ok(m)) = (a, m) {
            let ea: Vec<String> = touch_everything(&a).iter().map(|e| e.to_string()).collect();
            let em: Vec<String> = touch_everything(&m).iter().map(|e| e.to_string()).collect();
            assert_eq!(ea, em);
        }
    }
}

#[test]
#[cfg(unix)]
#[cfg_attr(miri, ignore = "Miri cannot run mkfifo")]
fn open_refuses_fifos_and_devices_instead_of_blocking() {
    // Found by review: `Graph::open` on a named pipe blocked forever in open(2), waiting for a
    // writer. Now every non-regular file is refused up front.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.graph");
    match std::process::Command::new("mkfifo").arg(&fifo).status() {
        Ok(s) if s.success() => {}
        _ => return, // no mkfifo on this system
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let p = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Graph::open(&p).map(|_| ()));
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("Graph::open on a FIFO blocked");
    assert!(matches!(r, Err(Error::Io { .. })), "{r:?}");
    for dev in ["/dev/null", "/dev/zero"] {
        if std::path::Path::new(dev).exists() {
            let r = Graph::open(dev);
            assert!(
                matches!(&r, Err(Error::Io { source, .. }) if source.to_string().contains("regular file")),
                "{dev}: {:?}",
                r.map(|_| ())
            );
        }
    }
}

#[test]
fn residuals_that_underflow_to_zero_are_not_touched_twice() {
    // Found by the hostile-parameter tests: with a subnormal eps, a deposit can underflow to
    // +0.0, and -0.0 (a pushed node's residual) + +0.0 == +0.0 made a touched node look
    // untouched again; it was recorded a second time and the dense touched list (written
    // without bounds checks) overran its buffer: heap corruption in safe API use
    // (`ppr(g, 0, eps=5e-324, alpha=0.999999)` from Python).
    let mut edges = Vec::new();
    for a in 0..12u32 {
        for b in a + 1..12 {
            if (a * 7 + b * 3) % 4 != 0 {
                edges.push((a, b));
            }
        }
    }
    let w: Vec<f32> = (0..edges.len()).map(|i| 1e-30 + i as f32).collect();
    for img in [
        image(12, &edges, None, false, IdTable::Implicit),
        image(12, &edges, Some(&w), true, IdTable::Implicit),
    ] {
        let g = from_bytes(&img).unwrap();
        let mut ws = Workspace::new();
        for variant in [Variant::Standard, Variant::Lazy] {
            // (one configuration and two seeds under Miri, which runs ~1000x slower)
            let configs = [(0.999999, 5e-324), (0.5, 1e-320), (0.15, f64::MIN_POSITIVE)];
            for &(alpha, eps) in &configs[..if cfg!(miri) { 1 } else { 3 }] {
                let cfg = PprConfig {
                    alpha,
                    eps,
                    variant,
                    ..PprConfig::default()
                };
                for seed in 0..if cfg!(miri) { 2 } else { 12 } {
                    push(&g, seed, &cfg, &mut ws).unwrap();
                    assert!(ws.touched() <= 12, "touched {} of 12 nodes", ws.touched());
                    let mut sup = Vec::new();
                    ws.support(&mut sup);
                    assert!(sup.windows(2).all(|p| p[0].0 < p[1].0), "node listed twice");
                    assert!(sup.iter().map(|e| e.1).sum::<f64>() <= 1.0 + 1e-9);
                }
            }
        }
    }
}

#[test]
fn subnormal_eps_is_refused() {
    // Found by the `push_params` fuzz target: with a subnormal eps, residuals live among the
    // subnormals, where (1 - alpha) * r rounds back up to r (2 units * 0.93 -> 2 units): the
    // mass stops decaying and the push loops forever (a dangling seed of a directed star with
    // eps = 5e-324 hung `ie.ppr`). Thresholds must be normal numbers.
    for eps in [5e-324, 1e-320, f64::MIN_POSITIVE / 2.0] {
        let cfg = PprConfig {
            eps,
            ..PprConfig::default()
        };
        assert!(
            matches!(&cfg.validate(), Err(Error::InvalidParameter(m)) if m.contains("eps")),
            "eps {eps:e} accepted"
        );
    }
    let ok = PprConfig {
        eps: f64::MIN_POSITIVE,
        variant: Variant::Lazy,
        alpha: 0.0686,
        ..PprConfig::default()
    };
    ok.validate().unwrap();
    // ... and the smallest accepted eps terminates on the graph that hung.
    let star: Vec<(u32, u32)> = (1..9).map(|v| (0, v)).collect();
    let g = from_bytes(&image(9, &star, None, true, IdTable::Implicit)).unwrap();
    for variant in [Variant::Lazy, Variant::Standard] {
        for seed in 0..if cfg!(miri) { 1 } else { 9 } {
            push(
                &g,
                seed,
                &PprConfig { variant, ..ok },
                &mut Workspace::new(),
            )
            .unwrap();
        }
    }
}
