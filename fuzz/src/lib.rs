//! Shared pieces of the fuzz targets: reading a byte image as a graph, forging checksums so a
//! mutation reaches the section checks, a set of small valid base graphs, and the
//! "touch everything" oracle.
//!
//! The oracle's contract (what a crash means):
//! - no panic, no out-of-bounds access (the targets are built with AddressSanitizer), no hang
//!   (libFuzzer `-timeout`);
//! - every error has a message;
//! - a graph that passes `validate()` answers every in-range query without error, and its PPR
//!   vectors are non-negative with mass at most 1.

use std::sync::OnceLock;

use instant_embedding::build::{build_in_memory, csr_from_edges, IdTable, Merge};
use instant_embedding::csr::{Graph, NodeId};
use instant_embedding::embed::{embed_nodes, EmbedConfig};
use instant_embedding::format::{checksum, HEADER_LEN, NUM_SECTIONS};
use instant_embedding::ppr::{push, PprConfig, Variant, Workspace};
use instant_embedding::{Error, Result};

/// Offset of the header checksum (the header's last 8 bytes).
pub const HEADER_CHECKSUM_OFF: usize = HEADER_LEN - 8;

/// A graph over an owned copy of `b` (the same checks as `Graph::open`, without a file).
pub fn from_bytes(b: &[u8]) -> Result<Graph> {
    let mut words = vec![0u64; b.len().div_ceil(8)];
    for (w, c) in words.iter_mut().zip(b.chunks(8)) {
        let mut a = [0u8; 8];
        a[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(a);
    }
    Graph::from_image(words, b.len())
}

fn rd_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Recomputes the header checksum (no-op on a buffer shorter than a header).
pub fn fix_header(b: &mut [u8]) {
    if b.len() >= HEADER_LEN {
        let c = checksum(&b[..HEADER_CHECKSUM_OFF]);
        b[HEADER_CHECKSUM_OFF..HEADER_LEN].copy_from_slice(&c.to_le_bytes());
    }
}

/// Recomputes the checksum of every section that lies inside `b`, then the header's.
pub fn fix_all_checksums(b: &mut [u8]) {
    if b.len() < HEADER_LEN {
        return;
    }
    for i in 0..NUM_SECTIONS {
        let o = 64 + 24 * i;
        let (off, len) = (rd_u64(b, o), rd_u64(b, o + 8));
        if let Some(end) = off.checked_add(len).filter(|&e| e <= b.len() as u64) {
            let c = checksum(&b[off as usize..end as usize]);
            b[o + 16..o + 24].copy_from_slice(&c.to_le_bytes());
        }
    }
    fix_header(b);
}

fn image(
    n: usize,
    edges: &[(u32, u32)],
    weights: Option<&[f32]>,
    directed: bool,
    ids: IdTable,
) -> Vec<u8> {
    let src: Vec<u32> = edges.iter().map(|e| e.0).collect();
    let dst: Vec<u32> = edges.iter().map(|e| e.1).collect();
    let parts = csr_from_edges(n, &src, &dst, weights, directed, Merge::Sum, ids)
        .expect("valid base graph");
    build_in_memory(&parts)
        .expect("valid base graph")
        .image()
        .to_vec()
}

/// Small valid graphs covering every flag and id kind (a few hundred bytes each).
pub fn base_graphs() -> &'static [Vec<u8>] {
    static BASES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BASES.get_or_init(|| {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |k: u64| {
            rng = instant_embedding::hashing::splitmix64(rng);
            (rng % k) as u32
        };
        let random: Vec<(u32, u32)> = (0..30).map(|_| (next(12), next(12))).collect();
        let w: Vec<f32> = (0..30).map(|i| 0.25 + i as f32 * 0.5).collect();
        let star: Vec<(u32, u32)> = (1..9).map(|v| (0, v)).collect();
        let names: Vec<String> = ["a", "b", "é", "", "dd", "z9", "x", "yy", "q", "r", "s", "t"]
            .map(String::from)
            .to_vec();
        vec![
            image(12, &random, None, false, IdTable::Implicit),
            image(
                12,
                &random,
                Some(&w),
                true,
                IdTable::Int((0..12).map(|i| i * 7 - 40).collect()),
            ),
            image(12, &random, Some(&w), false, IdTable::Str(names.clone())),
            image(9, &star, None, true, IdTable::Str(names[..9].to_vec())),
            image(
                5,
                &[(0, 0), (2, 2), (3, 4)],
                None,
                false,
                IdTable::Int(vec![i64::MIN, -1, 0, 1, i64::MAX]),
            ),
            image(0, &[], None, false, IdTable::Implicit),
            image(1, &[], None, true, IdTable::Str(vec!["solo".into()])),
        ]
    })
}

/// Valid change logs of `base_graphs()[0..3]`, each with three commits (created nodes,
/// removals, a hub): `(index of the base graph, log bytes)`. Written once through the real
/// writer in a temporary directory.
pub fn valid_logs() -> &'static [(usize, Vec<u8>)] {
    use instant_embedding::live::{log_path, Ids, LiveWriter};
    static LOGS: OnceLock<Vec<(usize, Vec<u8>)>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut out = Vec::new();
        for (k, base) in base_graphs().iter().enumerate().take(3) {
            let path = dir.path().join(format!("b{k}.graph"));
            std::fs::write(&path, base).expect("write base graph");
            let mut w = LiveWriter::open(&path, None, false).expect("writer");
            let g = w.snapshot();
            let ids = |v: &[i64]| match g.id_kind() {
                instant_embedding::format::IdKind::Utf8 => {
                    Ids::Str(v.iter().map(|x| format!("new{x}")).collect())
                }
                _ => Ids::Int(v.to_vec()),
            };
            let w3 = [0.5f32, 2.0, 1.25];
            let wts = |n: usize| g.weighted().then_some(&w3[..n]);
            w.add_edges(&ids(&[1, 13, 14]), &ids(&[15, 2, 13]), wts(3))
                .expect("add");
            w.commit().expect("commit");
            w.remove_edges(&ids(&[1, 3]), &ids(&[15, 4])).expect("remove");
            w.add_edges(&ids(&[16, 1]), &ids(&[1, 16]), wts(2)).expect("add");
            w.commit().expect("commit");
            w.add_edges(&ids(&[5, 5, 5]), &ids(&[17, 18, 19]), wts(3))
                .expect("add");
            w.commit().expect("commit");
            drop(w);
            out.push((k, std::fs::read(log_path(&path)).expect("read log")));
        }
        out
    })
}

/// Calls every read accessor on every node (and two past the end), a standard and a lazy push
/// and an embedding per node, id lookups and `validate`, checking the oracle's contract.
pub fn touch_everything(g: &Graph) {
    let n = g.num_nodes() as u32;
    let mut errors: Vec<Error> = Vec::new();
    let mut record = |r: Result<()>| {
        if let Err(e) = r {
            assert!(!e.to_string().is_empty(), "error without a message: {e:?}");
            errors.push(e);
        }
    };
    let cfg = PprConfig {
        eps: 1e-2,
        ..PprConfig::default()
    };
    let mut ws = Workspace::new();
    let mut support = Vec::new();
    let mut masses = Vec::new();
    for v in 0..n.saturating_add(2) {
        record(g.degree(v).map(drop));
        record(g.neighbors(v).map(drop));
        record(g.neighbors_checked(v).map(drop));
        record(g.weights(v).map(drop));
        record(g.strength(v).map(drop));
        record(g.node_id(v).map(drop));
        record(g.hash_key(v).map(drop));
        for variant in [Variant::Standard, Variant::Lazy] {
            let r = push(g, v, &PprConfig { variant, ..cfg }, &mut ws);
            if r.is_ok() {
                ws.support(&mut support);
                masses.push(support.iter().map(|e| e.1).collect::<Vec<f64>>());
            }
            record(r);
        }
    }
    if let Some(ids) = g.int_ids() {
        for id in ids
            .iter()
            .copied()
            .take(64)
            .chain([-1, 0, i64::MAX, i64::MIN])
        {
            record(g.lookup_int(id).map(drop));
        }
    }
    for v in 0..n.min(64) {
        if let Ok(NodeId::Str(s)) = g.node_id(v) {
            let s = s.to_owned();
            record(g.lookup_str(&s).map(drop));
        }
    }
    record(g.lookup_str("").map(drop));
    let nodes: Vec<u32> = (0..n).collect();
    let ecfg = EmbedConfig {
        dim: 8,
        seed: 1,
        ppr: cfg,
        ..EmbedConfig::default()
    };
    record(embed_nodes(g, &nodes, &ecfg, None).map(drop));
    let valid = g.validate();
    let valid_ok = valid.is_ok();
    record(valid);
    if valid_ok {
        let bad: Vec<&Error> = errors
            .iter()
            .filter(|e| !matches!(e, Error::NodeIndexOutOfRange { .. }))
            .collect();
        assert!(
            bad.is_empty(),
            "validate() passed but queries failed: {bad:?}"
        );
        for p in &masses {
            assert!(
                p.iter().all(|&x| x > 0.0 && x.is_finite()),
                "bad PPR values {p:?}"
            );
            assert!(
                p.iter().sum::<f64>() <= 1.0 + 1e-9,
                "PPR mass above 1: {p:?}"
            );
        }
    }
}
