//! The fuzz targets' bodies and their shared pieces: reading a byte image as a graph, forging
//! checksums so a mutation reaches the section checks, a set of small valid base graphs, and the
//! "touch everything" oracle. Each target in `fuzz_targets/` only hands libFuzzer's input to
//! one of `open_bytes`, `mutate_valid` or `push_params`; the library's `cargo test` replays
//! every file of `corpus/` through the same functions (`tests/fuzz_corpus.rs`), decoding typed
//! inputs with [`decode`] exactly as `libfuzzer-sys` does.
//!
//! The oracle's contract (what a crash means):
//! - no panic, no out-of-bounds access (the targets are built with AddressSanitizer), no hang
//!   (libFuzzer `-timeout`);
//! - every error has a message;
//! - a graph that passes `validate()` answers every in-range query without error, and its PPR
//!   vectors are non-negative with mass at most 1.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use instant_embedding::embed::config::{EmbeddingConfig, Normalize, Value};
use instant_embedding::embed::ppr::{push, PprConfig, Variant, Workspace};
use instant_embedding::embed::{embed_nodes, embed_one};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
use instant_embedding::graph::csr::{Graph, NodeId};
use instant_embedding::graph::format::{checksum, HEADER_LEN, NBR_CODES_OFF, NUM_SECTIONS};
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
    // The first seven entries are {offset, len, xxh3}; the last (nbr_codes) is {offset, xxh3}
    // at NBR_CODES_OFF, its length the header's arc count.
    for i in 0..NUM_SECTIONS - 1 {
        let o = 64 + 24 * i;
        let (off, len) = (rd_u64(b, o), rd_u64(b, o + 8));
        if let Some(end) = off.checked_add(len).filter(|&e| e <= b.len() as u64) {
            let c = checksum(&b[off as usize..end as usize]);
            b[o + 16..o + 24].copy_from_slice(&c.to_le_bytes());
        }
    }
    let (off, len) = (rd_u64(b, NBR_CODES_OFF), rd_u64(b, 24));
    if let Some(end) = off
        .checked_add(len)
        .filter(|&e| off != 0 && e <= b.len() as u64)
    {
        let c = checksum(&b[off as usize..end as usize]);
        b[NBR_CODES_OFF + 8..NBR_CODES_OFF + 16].copy_from_slice(&c.to_le_bytes());
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
        let hub: Vec<(u32, u32)> = (1..41).map(|v| (0, v)).collect();
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
            // A hub of 40 arcs: rows of 32 arcs or more change by delta records.
            image(41, &hub, None, false, IdTable::Implicit),
        ]
    })
}

/// Valid change logs of `base_graphs()[0..3]`, each with three commits (created nodes,
/// removals, a hub), and of the last base graph (a row of 40 arcs changed by deltas):
/// `(index of the base graph, log bytes)`. Written once through the real
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
                instant_embedding::graph::format::IdKind::Utf8 => {
                    Ids::Str(v.iter().map(|x| format!("new{x}")).collect())
                }
                _ => Ids::Int(v.to_vec()),
            };
            let w3 = [0.5f32, 2.0, 1.25];
            let wts = |n: usize| g.weighted().then_some(&w3[..n]);
            w.add_edges(&ids(&[1, 13, 14]), &ids(&[15, 2, 13]), wts(3))
                .expect("add");
            w.commit().expect("commit");
            w.remove_edges(&ids(&[1, 3]), &ids(&[15, 4]))
                .expect("remove");
            w.add_edges(&ids(&[16, 1]), &ids(&[1, 16]), wts(2))
                .expect("add");
            w.commit().expect("commit");
            w.add_edges(&ids(&[5, 5, 5]), &ids(&[17, 18, 19]), wts(3))
                .expect("add");
            w.commit().expect("commit");
            drop(w);
            out.push((k, std::fs::read(log_path(&path)).expect("read log")));
        }
        // The hub's row (base graph 7) through a chain of deltas: removals, a new node, an
        // arc removed and added back, over four commits.
        let hub = base_graphs().len() - 1;
        let path = dir.path().join("hub.graph");
        std::fs::write(&path, &base_graphs()[hub]).expect("write base graph");
        let mut w = LiveWriter::open(&path, None, false).expect("writer");
        let one = |v: i64| Ids::Int(vec![v]);
        for (remove, v) in [(true, 1), (false, 41), (true, 2), (false, 1)] {
            if remove {
                w.remove_edges(&one(0), &one(v)).expect("remove");
            } else {
                w.add_edges(&one(0), &one(v), None).expect("add");
            }
            w.commit().expect("commit");
        }
        drop(w);
        out.push((hub, std::fs::read(log_path(&path)).expect("read log")));
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
    let ecfg = EmbeddingConfig {
        dim: 8,
        seed: 1,
        ppr: cfg,
        ..EmbeddingConfig::default()
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

// ------------------------------------------------------------------------------ the targets

/// Decodes a typed fuzz input from raw bytes the way `libfuzzer-sys`'s `fuzz_target!` does
/// (inputs shorter than the type's minimum size, or that fail to decode, are skipped).
pub fn decode<'a, T: Arbitrary<'a>>(bytes: &'a [u8]) -> Option<T> {
    if bytes.len() < T::size_hint(0).0 {
        return None;
    }
    T::arbitrary_take_rest(Unstructured::new(bytes)).ok()
}

/// Arbitrary bytes as a graph file: opening must either fail with an error or give a graph on
/// which every accessor, a push from every node, an embedding and `validate` are safe.
///
/// Each input is tried twice: as it is, and with the header checksum recomputed, so that random
/// bytes get past the header checksum and reach the size/offset checks and the sections.
pub fn open_bytes(data: &[u8]) {
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
}

#[derive(Arbitrary, Debug)]
pub enum Edit {
    /// XOR one byte anywhere.
    Xor { pos: u16, mask: u8 },
    /// Overwrite a little-endian u32 (neighbour ids, id_index entries, f32 weights).
    U32 { pos: u16, val: u32 },
    /// Overwrite a little-endian u64 (indptr, offsets, f64 strengths, int ids).
    U64 { pos: u16, val: u64 },
    /// Set a header field or section-table entry to a boundary value.
    Field { field: u8, val: Boundary },
    /// Copy 8 bytes from one place to another (e.g. one section's offset into another's).
    Copy { from: u16, to: u16 },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Boundary {
    Zero,
    One,
    Max,
    Half,
    NumNodes(i8),
    NumArcs(i8),
    FileLen(i8),
    Raw(u64),
}

#[derive(Arbitrary, Debug)]
pub struct MutateInput {
    base: u8,
    edits: Vec<Edit>,
    forge_header: bool,
    forge_sections: bool,
    truncate: Option<u16>,
    extend: u8,
}

/// Offsets of the u64 header fields: num_nodes, num_arcs, num_edges, file_len, then
/// (offset, len) of each of the 7 sections.
fn field_offset(field: u8) -> usize {
    let f = field as usize % 18;
    if f < 4 {
        16 + 8 * f
    } else {
        let s = (f - 4) / 2;
        64 + 24 * s + 8 * ((f - 4) % 2)
    }
}

fn put(b: &mut [u8], pos: usize, bytes: &[u8]) {
    if b.len() >= bytes.len() {
        let pos = pos % (b.len() - bytes.len() + 1);
        b[pos..pos + bytes.len()].copy_from_slice(bytes);
    }
}

/// Structure-aware: start from a small valid graph file, apply edits aimed at the header fields,
/// the section table and the sections, then (usually) forge the header checksum and sometimes
/// every section checksum too, so the mutation reaches the structural checks of `open`, the
/// bounds checks of every accessor and the invariant checks of `validate`.
pub fn mutate_valid(inp: MutateInput) {
    let bases = base_graphs();
    let mut b = bases[inp.base as usize % bases.len()].clone();
    let (n, m, len) = (rd_u64(&b, 16), rd_u64(&b, 24), rd_u64(&b, 40));
    for e in inp.edits.iter().take(16) {
        match *e {
            Edit::Xor { pos, mask } => {
                let i = pos as usize % b.len();
                b[i] ^= mask;
            }
            Edit::U32 { pos, val } => put(&mut b, pos as usize, &val.to_le_bytes()),
            Edit::U64 { pos, val } => put(&mut b, pos as usize, &val.to_le_bytes()),
            Edit::Field { field, val } => {
                let v = match val {
                    Boundary::Zero => 0,
                    Boundary::One => 1,
                    Boundary::Max => u64::MAX,
                    Boundary::Half => 1 << 63,
                    Boundary::NumNodes(d) => n.wrapping_add(d as i64 as u64),
                    Boundary::NumArcs(d) => m.wrapping_add(d as i64 as u64),
                    Boundary::FileLen(d) => len.wrapping_add(d as i64 as u64),
                    Boundary::Raw(x) => x,
                };
                let off = field_offset(field);
                b[off..off + 8].copy_from_slice(&v.to_le_bytes());
            }
            Edit::Copy { from, to } => {
                let from = from as usize % (b.len() - 7);
                let chunk: [u8; 8] = b[from..from + 8].try_into().unwrap();
                put(&mut b, to as usize, &chunk);
            }
        }
    }
    if let Some(t) = inp.truncate {
        b.truncate(t as usize % (b.len() + 1));
    }
    b.extend(std::iter::repeat_n(0u8, inp.extend as usize % 128));
    if inp.forge_sections {
        fix_all_checksums(&mut b);
    } else if inp.forge_header {
        fix_header(&mut b);
    }
    if let Ok(g) = from_bytes(&b) {
        touch_everything(&g);
    }
}

#[derive(Arbitrary, Debug)]
pub struct PushInput {
    base: u8,
    alpha: u32,
    /// Raw bits of eps (made positive and finite below).
    eps_bits: u64,
    lazy: bool,
    seeds: Vec<u16>,
    max_touched: u16,
    dim: u16,
    value_p: bool,
}

/// Hostile parameters on valid graphs: any `alpha` in [0.05, 1), any positive `eps` down to
/// the smallest normal float, both variants, any seed node and a small `max_touched`. The push
/// must terminate, touch each node at most once, keep `p` non-negative with mass at most 1,
/// and give the same answer from a fresh and from a reused workspace.
///
/// (`alpha` is kept >= 0.05: below that the push is correct but its running time grows like
/// 1/alpha, see docs/RELIABILITY.md, and the fuzzer would only report slow inputs.)
pub fn push_params(inp: PushInput) {
    let bases = base_graphs();
    let g = from_bytes(&bases[inp.base as usize % bases.len()]).expect("valid base");
    let n = g.num_nodes();
    if n == 0 {
        return;
    }
    let alpha = 0.05 + 0.95 * (f64::from(inp.alpha) / (f64::from(u32::MAX) + 1.0));
    // Any positive normal eps (subnormal ones are refused by validate(): they made the push
    // loop forever, found by this target).
    let mut eps = f64::from_bits(inp.eps_bits & !(1 << 63));
    if !eps.is_normal() {
        eps = f64::MIN_POSITIVE;
    }
    let cfg = PprConfig {
        alpha,
        eps,
        variant: if inp.lazy {
            Variant::Lazy
        } else {
            Variant::Standard
        },
        max_touched: 1 + inp.max_touched as usize % (2 * n),
    };
    cfg.validate().expect("in-domain config");
    let mut reused = Workspace::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &s in inp.seeds.iter().take(4) {
        let seed = u32::from(s) % n as u32;
        let r = push(&g, seed, &cfg, &mut reused);
        let mut fresh = Workspace::new();
        let r2 = push(&g, seed, &cfg, &mut fresh);
        match (&r, &r2) {
            (Ok(()), Ok(())) => {}
            (Err(Error::BudgetExceeded(_)), Err(Error::BudgetExceeded(_))) => {
                assert!(cfg.max_touched < n, "budget error with max_touched >= n");
                continue;
            }
            _ => panic!("push failed on a valid graph: {r:?} / {r2:?}"),
        }
        assert!(reused.touched() <= n && reused.touched() <= cfg.max_touched + n);
        reused.support(&mut a);
        fresh.support(&mut b);
        assert_eq!(a, b, "reused and fresh workspaces disagree");
        assert!(a.windows(2).all(|w| w[0].0 < w[1].0), "node listed twice");
        assert!(
            a.iter().all(|e| e.1 > 0.0 && e.1.is_finite()),
            "bad p {a:?}"
        );
        assert!(
            a.iter().map(|e| e.1).sum::<f64>() <= 1.0 + 1e-9,
            "mass above 1"
        );
        let ecfg = EmbeddingConfig {
            dim: 1 + inp.dim as usize % 64,
            seed: inp.eps_bits,
            ppr: cfg,
            value: if inp.value_p { Value::P } else { Value::PPlusR },
            // Both scales, from a bit the input already has (the corpus keeps decoding as it did).
            normalize: if inp.eps_bits & 2 == 0 {
                Normalize::LnN
            } else {
                Normalize::None
            },
            smooth: 0,
            ..EmbeddingConfig::DEFAULT
        };
        let mut out = vec![0f32; ecfg.dim];
        embed_one(&g, seed, &ecfg, &mut out).expect("embed on a valid graph");
        assert!(out.iter().all(|x| x.is_finite()));
    }
}

/// One edit of a change log (`change_log`).
#[derive(Arbitrary, Debug)]
pub enum LogEdit {
    Byte { at: u16, value: u8 },
    U32 { at: u16, value: u32 },
    U64 { at: u16, value: u64 },
    Truncate { at: u16 },
    Extend { bytes: Vec<u8> },
    Copy { from: u16, to: u16, len: u8 },
}

/// Input of `change_log`: which valid log, whether to forge its checksums, the edits.
#[derive(Arbitrary, Debug)]
pub struct ChangeLogInput {
    pub which: u8,
    pub forge: bool,
    pub edits: Vec<LogEdit>,
}

/// The change log of a live graph (`GRAPH.live`): edits to one of three valid logs (byte and
/// word overwrites, truncation, extension, copies), tried as they are or with every checksum
/// forged so they reach the structural checks. `read_log` must return or fail cleanly; a log
/// that attaches to its graph must be safe to query, and once it validates, every in-range
/// query must succeed (`touch_everything`). The same kind of mutations run without nightly in
/// `tests/live_graphs.rs` (`mutated_logs_never_crash_and_validated_ones_answer_queries`).
pub fn change_log(inp: ChangeLogInput) {
    use instant_embedding::live::log::{forge_checksums, read_log};
    use instant_embedding::live::with_log_bytes;
    let logs = valid_logs();
    let (base, log) = &logs[inp.which as usize % logs.len()];
    let mut m = log.clone();
    for e in inp.edits.iter().take(8) {
        let len = m.len();
        if len == 0 {
            break;
        }
        match e {
            LogEdit::Byte { at, value } => m[*at as usize % len] = *value,
            LogEdit::U32 { at, value } => {
                let i = (*at as usize % len) & !3;
                if i + 4 <= len {
                    m[i..i + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
            LogEdit::U64 { at, value } => {
                let i = (*at as usize % len) & !7;
                if i + 8 <= len {
                    m[i..i + 8].copy_from_slice(&value.to_le_bytes());
                }
            }
            LogEdit::Truncate { at } => m.truncate(*at as usize % len),
            LogEdit::Extend { bytes } => m.extend_from_slice(bytes),
            LogEdit::Copy { from, to, len: l } => {
                let (f, t, l) = (*from as usize % len, *to as usize % len, *l as usize);
                if f + l <= len && t + l <= len {
                    let chunk = m[f..f + l].to_vec();
                    m[t..t + l].copy_from_slice(&chunk);
                }
            }
        }
    }
    if inp.forge {
        forge_checksums(&mut m);
    }
    if let Err(e) = read_log(&m) {
        assert!(!e.to_string().is_empty(), "error without a message");
    }
    let g = from_bytes(&base_graphs()[*base]).expect("valid base graph");
    if let Ok(live) = with_log_bytes(g, &m) {
        touch_everything(&live);
    }
}
