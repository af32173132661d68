//! Live graphs against rebuilds: random sequences of adds and removes, committed in random
//! batches, must give the rows, ids, PPR states and embeddings of a graph built from scratch
//! from the final edge list, bit for bit; so must the compacted file. Also: crash safety of
//! the log at every byte, corrupted logs, one writer at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use instant_embedding::embed::config::{EmbeddingConfig, Normalize, Value};
use instant_embedding::embed::embed_nodes;
use instant_embedding::embed::ppr::{ppr_state, PprConfig, Variant};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};
use instant_embedding::graph::csr::{Graph, NodeId};
use instant_embedding::hashing::splitmix64;
use instant_embedding::live::log::{LogId, DATA_START};
use instant_embedding::live::{log_path, Ids, LiveWriter};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Implicit,
    Int,
    Str,
}

/// The reference: the graph's edges (undirected: each unordered pair once) and nodes.
struct Model {
    kind: Kind,
    directed: bool,
    weighted: bool,
    merge: Merge,
    edges: BTreeMap<(LogId, LogId), f32>,
    nodes: BTreeSet<LogId>,
}

impl Model {
    fn new(kind: Kind, directed: bool, weighted: bool, merge: Merge) -> Model {
        Model {
            kind,
            directed,
            weighted,
            merge,
            edges: BTreeMap::new(),
            nodes: BTreeSet::new(),
        }
    }
    fn key(&self, a: &LogId, b: &LogId) -> (LogId, LogId) {
        if self.directed || a <= b {
            (a.clone(), b.clone())
        } else {
            (b.clone(), a.clone())
        }
    }
    fn add(&mut self, a: LogId, b: LogId, w: f32) {
        if let (Kind::Implicit, LogId::Int(x)) = (self.kind, &a) {
            let _ = x;
        }
        for id in [&a, &b] {
            if let (Kind::Implicit, LogId::Int(x)) = (self.kind, id) {
                let top = self.nodes.len() as i64;
                for k in top..=*x {
                    self.nodes.insert(LogId::Int(k));
                }
            } else {
                self.nodes.insert(id.clone());
            }
        }
        let k = self.key(&a, &b);
        let merge = self.merge;
        let weighted = self.weighted;
        self.edges
            .entry(k)
            .and_modify(|x| {
                if weighted {
                    *x = match merge {
                        Merge::Sum => *x + w,
                        Merge::Max => x.max(w),
                    }
                }
            })
            .or_insert(if weighted { w } else { 1.0 });
    }
    fn remove(&mut self, a: &LogId, b: &LogId) -> bool {
        let k = self.key(a, b);
        self.edges.remove(&k).is_some()
    }

    /// A graph built from scratch from the edge list (ids in id order).
    fn build(&self) -> Graph {
        let ids: Vec<LogId> = self.nodes.iter().cloned().collect();
        let pos: BTreeMap<&LogId, u32> =
            ids.iter().enumerate().map(|(i, x)| (x, i as u32)).collect();
        let (mut s, mut d, mut w) = (Vec::new(), Vec::new(), Vec::new());
        for ((a, b), x) in &self.edges {
            s.push(pos[a]);
            d.push(pos[b]);
            w.push(*x);
        }
        let table = match self.kind {
            Kind::Implicit => IdTable::Implicit,
            Kind::Int => IdTable::Int(
                ids.iter()
                    .map(|x| match x {
                        LogId::Int(i) => *i,
                        LogId::Str(_) => unreachable!(),
                    })
                    .collect(),
            ),
            Kind::Str => IdTable::Str(
                ids.iter()
                    .map(|x| match x {
                        LogId::Str(s) => s.clone(),
                        LogId::Int(_) => unreachable!(),
                    })
                    .collect(),
            ),
        };
        let parts = csr_from_edges(
            ids.len(),
            &s,
            &d,
            self.weighted.then_some(&w[..]),
            self.directed,
            self.merge,
            table,
        )
        .unwrap();
        build_in_memory(&parts).unwrap()
    }
}

fn id_of(kind: Kind, k: u64) -> LogId {
    match kind {
        Kind::Implicit => LogId::Int(k as i64),
        // Spread and signed, so created ids fall between and below existing ones.
        Kind::Int => LogId::Int((splitmix64(k) % 1000) as i64 * 37 - 9000),
        Kind::Str => LogId::Str(format!("n{}", splitmix64(k ^ 5) % 1000)),
    }
}

fn ids(kind: Kind, v: &[LogId]) -> Ids {
    match kind {
        Kind::Str => Ids::Str(
            v.iter()
                .map(|x| match x {
                    LogId::Str(s) => s.clone(),
                    LogId::Int(_) => unreachable!(),
                })
                .collect(),
        ),
        _ => Ids::Int(
            v.iter()
                .map(|x| match x {
                    LogId::Int(i) => *i,
                    LogId::Str(_) => unreachable!(),
                })
                .collect(),
        ),
    }
}

fn ext(g: &Graph, v: u32) -> LogId {
    match g.node_id(v).unwrap() {
        NodeId::Int(i) => LogId::Int(i),
        NodeId::Str(s) => LogId::Str(s.to_owned()),
    }
}

fn index_of(g: &Graph, id: &LogId) -> u32 {
    match id {
        LogId::Int(i) => g.lookup_int(*i).unwrap(),
        LogId::Str(s) => g.lookup_str(s).unwrap(),
    }
    .unwrap_or_else(|| panic!("{id} not found"))
}

/// Rows (by id, with weight bits), PPR states (by id, bits) and embeddings of every node agree.
fn assert_same(live: &Graph, want: &Graph, what: &str) {
    let order = assert_rows_same(live, want, what);
    let n = want.num_nodes() as u32;
    for variant in [Variant::Standard, Variant::Lazy] {
        let cfg = PprConfig {
            eps: 1e-4,
            variant,
            ..PprConfig::default()
        };
        for v in (0..n).step_by(3) {
            let mut a: Vec<(LogId, u64, u64)> = ppr_state(live, order[v as usize], &cfg)
                .unwrap()
                .into_iter()
                .map(|(u, p, r)| (ext(live, u), p.to_bits(), r.to_bits()))
                .collect();
            let mut b: Vec<(LogId, u64, u64)> = ppr_state(want, v, &cfg)
                .unwrap()
                .into_iter()
                .map(|(u, p, r)| (ext(want, u), p.to_bits(), r.to_bits()))
                .collect();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{what}: ppr of {}", ext(want, v));
        }
    }
    // `ln_n` divides by the live graph's current node count, which a rebuild has too.
    for (value, normalize) in [
        (Value::PPlusR, Normalize::LnN),
        (Value::Log1p, Normalize::LnN),
        (Value::PPlusR, Normalize::None),
    ] {
        let cfg = EmbeddingConfig {
            dim: 32,
            value,
            normalize,
            ppr: PprConfig {
                eps: 1e-4,
                ..PprConfig::default()
            },
            ..EmbeddingConfig::default()
        };
        // Every third node, as above: each push touches most of these graphs' nodes, so
        // the sample reads every node's row and threshold through the log.
        let sample: Vec<u32> = (0..n).step_by(3).collect();
        let live_sample: Vec<u32> = sample.iter().map(|&v| order[v as usize]).collect();
        let a = embed_nodes(live, &live_sample, &cfg, None).unwrap();
        let b = embed_nodes(want, &sample, &cfg, None).unwrap();
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{what}: embeddings differ"
        );
    }
}

/// Rows (by id, with weight bits), strengths and hash keys of every node agree; returns the
/// live graph's node of each of `want`'s nodes.
fn assert_rows_same(live: &Graph, want: &Graph, what: &str) -> Vec<u32> {
    assert_eq!(live.num_nodes(), want.num_nodes(), "{what}: nodes");
    assert_eq!(live.num_arcs(), want.num_arcs(), "{what}: arcs");
    assert_eq!(live.num_edges(), want.num_edges(), "{what}: edges");
    let n = want.num_nodes() as u32;
    let order: Vec<u32> = (0..n).map(|v| index_of(live, &ext(want, v))).collect();
    for v in 0..n {
        let lv = order[v as usize];
        assert_eq!(ext(live, lv), ext(want, v));
        let a: Vec<(LogId, u32)> = {
            let nb = live.neighbors_checked(lv).unwrap();
            let w = live.weights(lv).unwrap();
            nb.iter()
                .enumerate()
                .map(|(k, &u)| (ext(live, u), w.as_ref().map_or(0, |w| w[k].to_bits())))
                .collect()
        };
        let b: Vec<(LogId, u32)> = {
            let nb = want.neighbors_checked(v).unwrap();
            let w = want.weights(v).unwrap();
            nb.iter()
                .enumerate()
                .map(|(k, &u)| (ext(want, u), w.as_ref().map_or(0, |w| w[k].to_bits())))
                .collect()
        };
        assert_eq!(a, b, "{what}: row of {}", ext(want, v));
        assert_eq!(
            live.strength(lv).unwrap().to_bits(),
            want.strength(v).unwrap().to_bits(),
            "{what}: strength"
        );
        assert_eq!(live.hash_key(lv).unwrap(), want.hash_key(v).unwrap());
    }
    order
}

/// A seeded stream of pseudo-random numbers (splitmix64 of a counter).
fn seeded(seed: u64) -> impl FnMut() -> u64 {
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    move || {
        rng = rng.wrapping_add(1);
        splitmix64(rng)
    }
}

/// One random scenario: a base graph, then `batches` commits of random adds and removes.
fn scenario(dir: &Path, seed: u64, kind: Kind, directed: bool, weighted: bool, merge: Merge) {
    let mut next = seeded(seed);
    let mut model = Model::new(kind, directed, weighted, merge);
    let span = 30u64;
    let weight = |x: u64| 0.25 + (x % 12) as f32 / 4.0;
    for _ in 0..40 {
        let (a, b, w) = (next() % span, next() % span, next());
        model.add(id_of(kind, a), id_of(kind, b), weight(w));
    }
    let path = dir.join(format!("g{seed}.graph"));
    save(&model.build(), &path).unwrap();
    let mut w = LiveWriter::open(&path, Some(merge), false).unwrap();
    assert_same(&w.snapshot(), &model.build(), "base");
    for batch in 0..6 {
        let calls = 1 + next() % 3;
        for _ in 0..calls {
            let k = 1 + next() % 8;
            let (mut s, mut d, mut ws) = (Vec::new(), Vec::new(), Vec::new());
            let removing = next() % 3 == 0;
            for _ in 0..k {
                // Mostly existing ids, some new ones (a wider span).
                let top = if next() % 4 == 0 { span + 20 } else { span };
                let (a, b) = if removing && next() % 2 == 0 && !model.edges.is_empty() {
                    let i = (next() % model.edges.len() as u64) as usize;
                    let e = model.edges.keys().nth(i).unwrap().clone();
                    if next() % 2 == 0 {
                        (e.0, e.1)
                    } else {
                        (e.1, e.0)
                    }
                } else {
                    (id_of(kind, next() % top), id_of(kind, next() % top))
                };
                s.push(a);
                d.push(b);
                ws.push(weight(next()));
            }
            if removing {
                let mut expect = 0;
                for (a, b) in s.iter().zip(&d) {
                    expect += u64::from(model.remove(a, b));
                }
                let got = w.remove_edges(&ids(kind, &s), &ids(kind, &d)).unwrap();
                assert_eq!(got, expect);
            } else {
                for ((a, b), x) in s.iter().zip(&d).zip(&ws) {
                    model.add(a.clone(), b.clone(), *x);
                }
                let wts = weighted.then_some(&ws[..]);
                w.add_edges(&ids(kind, &s), &ids(kind, &d), wts).unwrap();
            }
        }
        assert!(w.commit().unwrap());
        let want = model.build();
        let what = format!("seed {seed} {kind:?} dir={directed} w={weighted} batch {batch}");
        assert_same(&w.snapshot(), &want, &what);
        let reopened = Graph::open(&path).unwrap();
        reopened.validate().unwrap();
        assert_same(&reopened, &want, &format!("{what} reopened"));
        // Its pushes have built the bitmap of changed nodes: rows and results through it.
        assert_same(&reopened, &want, &format!("{what} reopened, bitmap"));
    }
    w.compact(1).unwrap();
    let want = model.build();
    let compacted = Graph::open(&path).unwrap();
    assert!(!compacted.is_live());
    compacted.validate().unwrap();
    assert_same(&compacted, &want, "compacted");
    // Changes after a compaction go to the new log.
    let (a, b) = (id_of(kind, 1), id_of(kind, span + 5));
    model.add(a.clone(), b.clone(), 1.5);
    w.add_edges(
        &ids(kind, &[a]),
        &ids(kind, &[b]),
        weighted.then_some(&[1.5][..]),
    )
    .unwrap();
    w.commit().unwrap();
    let g = Graph::open(&path).unwrap();
    g.validate().unwrap();
    assert_same(&g, &model.build(), "after compaction");
}

#[test]
fn random_changes_match_a_rebuild_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 0;
    for kind in [Kind::Implicit, Kind::Int, Kind::Str] {
        for directed in [false, true] {
            for weighted in [false, true] {
                for merge in [Merge::Sum, Merge::Max] {
                    if merge == Merge::Max && !weighted {
                        continue;
                    }
                    seed += 1;
                    scenario(dir.path(), seed, kind, directed, weighted, merge);
                }
            }
        }
    }
}

/// A hub that every commit changes: one or two arcs of a row of ~60 at a time, so its records
/// are deltas on deltas (chains, merged by the binary-counter rule, and whole rows once the
/// deltas outweigh the row), with removals, re-adds of removed arcs, weight merges and new
/// nodes (which make a string- or int-id graph permuted). Each commit against a rebuild.
fn hub_scenario(dir: &Path, seed: u64, kind: Kind, directed: bool, weighted: bool, merge: Merge) {
    let mut rng = seed.wrapping_mul(0x2545_F491_4F6C_DD1D);
    let mut next = || {
        rng = rng.wrapping_add(1);
        splitmix64(rng)
    };
    let mut model = Model::new(kind, directed, weighted, merge);
    let hub = id_of(kind, 5);
    let weight = |x: u64| 0.5 + (x % 8) as f32 / 4.0;
    for k in 10..70 {
        model.add(hub.clone(), id_of(kind, k), weight(k));
    }
    let path = dir.join(format!("hub{seed}.graph"));
    save(&model.build(), &path).unwrap();
    let mut w = LiveWriter::open(&path, Some(merge), false).unwrap();
    let log_len = |p: &Path| std::fs::metadata(log_path(p)).map_or(0, |m| m.len());
    let mut grown = 0;
    for commit in 0..45 {
        let before = log_len(&path);
        for _ in 0..1 + next() % 2 {
            // Ids 0..4 and 70..90 are new nodes (below and above the others); 10..70 the
            // hub's neighbours.
            let pick = next() % 100;
            let other = id_of(kind, if pick < 8 { pick % 5 } else { 10 + pick % 80 });
            if next() % 3 == 0 {
                model.remove(&hub, &other);
                w.remove_edges(&ids(kind, std::slice::from_ref(&hub)), &ids(kind, &[other]))
                    .unwrap();
            } else {
                let x = weight(next());
                model.add(hub.clone(), other.clone(), x);
                let wts = [x];
                w.add_edges(
                    &ids(kind, std::slice::from_ref(&hub)),
                    &ids(kind, &[other]),
                    weighted.then_some(&wts[..]),
                )
                .unwrap();
            }
        }
        w.commit().unwrap();
        let what = format!(
            "hub seed {seed} {kind:?} dir={directed} w={weighted} {merge:?} commit {commit}"
        );
        grown += log_len(&path) - before;
        if commit % 3 != 2 {
            continue;
        }
        let want = model.build();
        assert_same(&w.snapshot(), &want, &what);
        if commit % 9 == 8 {
            let reopened = Graph::open(&path).unwrap();
            reopened.validate().unwrap();
            assert_same(&reopened, &want, &format!("{what} reopened"));
        }
    }
    // A commit of 1-2 arcs: its operations, a delta or two (40-48 bytes each), the index's
    // new level (with the levels it merges: O(log) rewrites per entry), the trailer.
    assert!(grown < 45 * 700, "{seed}: 45 commits wrote {grown} bytes");
    w.compact(1).unwrap();
    assert_same(
        &Graph::open(&path).unwrap(),
        &model.build(),
        "hub compacted",
    );
}

#[test]
fn a_hub_changed_by_every_commit_matches_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 100;
    for kind in [Kind::Implicit, Kind::Int, Kind::Str] {
        for (weighted, merge) in [(false, Merge::Sum), (true, Merge::Sum), (true, Merge::Max)] {
            seed += 1;
            // Directed on every other seed: the hub's out-row changes, its in-arcs do not.
            hub_scenario(dir.path(), seed, kind, seed % 2 == 0, weighted, merge);
        }
    }
}

fn small_base(dir: &Path, name: &str) -> std::path::PathBuf {
    let parts = csr_from_edges(
        6,
        &[0, 1, 2, 3, 4],
        &[1, 2, 3, 4, 5],
        None,
        false,
        Merge::Sum,
        IdTable::Implicit,
    )
    .unwrap();
    let path = dir.join(name);
    save(&build_in_memory(&parts).unwrap(), &path).unwrap();
    path
}

/// Bytes of the log after each commit.
fn commits(path: &Path, batches: &[(Vec<i64>, Vec<i64>)]) -> Vec<Vec<u8>> {
    let mut w = LiveWriter::open(path, None, false).unwrap();
    let mut out = vec![std::fs::read(log_path(path)).unwrap()];
    for (s, d) in batches {
        w.add_edges(&Ids::Int(s.clone()), &Ids::Int(d.clone()), None)
            .unwrap();
        w.commit().unwrap();
        out.push(std::fs::read(log_path(path)).unwrap());
    }
    out
}

/// A commit is written as: the segment appended (at the committed end), synced, then one
/// superblock slot. Power loss after any byte of that sequence (the file cut short inside the
/// segment, or a torn slot) must show the previous commit, and the whole sequence the new one.
#[test]
fn power_loss_at_every_byte_of_a_commit_shows_a_complete_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_base(dir.path(), "g.graph");
    let states = commits(
        &path,
        &[
            (vec![0, 5], vec![3, 9]),
            (vec![7, 1, 2], vec![8, 4, 0]),
            (vec![2], vec![11]),
        ],
    );
    let edges_of = |g: &Graph| -> Vec<(u32, Vec<u32>)> {
        (0..g.num_nodes() as u32)
            .map(|v| (v, g.neighbors_checked(v).unwrap().to_vec()))
            .collect()
    };
    let log = log_path(&path);
    let mut expected = Vec::new();
    for s in &states {
        std::fs::write(&log, s).unwrap();
        expected.push(edges_of(&Graph::open(&path).unwrap()));
    }
    assert_ne!(expected[0], expected[1]);
    let mut cuts = 0;
    for k in 1..states.len() {
        let (pre, post) = (&states[k - 1], &states[k]);
        let slot = instant_embedding::live::log::SLOT_OFFSETS[k % 2] as usize;
        let slot_len = instant_embedding::live::log::SLOT_LEN;
        let seg_start = pre.len();
        assert!(post.len() > seg_start);
        // Only the slot changes in place; the rest is appended.
        let mut outside = post[..seg_start].to_vec();
        outside[slot..slot + slot_len].copy_from_slice(&pre[slot..slot + slot_len]);
        assert_eq!(&outside[..], &pre[..]);
        // Cut inside the appended segment: the old slots name the old commit.
        for cut in seg_start..post.len() {
            let mut f = post[..cut].to_vec();
            f[..DATA_START as usize].copy_from_slice(&pre[..DATA_START as usize]);
            std::fs::write(&log, &f).unwrap();
            let g = Graph::open(&path).unwrap();
            assert_eq!(edges_of(&g), expected[k - 1], "commit {k} cut at {cut}");
            cuts += 1;
        }
        // Segment complete, the slot written up to every byte.
        for written in 0..=slot_len {
            let mut f = post.clone();
            f[slot + written..slot + slot_len]
                .copy_from_slice(&pre[slot + written..slot + slot_len]);
            std::fs::write(&log, &f).unwrap();
            let g = Graph::open(&path).unwrap();
            let want = if written == slot_len { k } else { k - 1 };
            assert_eq!(
                edges_of(&g),
                expected[want],
                "commit {k} slot written to {written}"
            );
        }
    }
    assert!(cuts > 100);
}

/// Any corruption of committed bytes gives a format error from `validate` (or already from
/// `open`), never a panic or a silently different graph that validates.
#[test]
fn corrupted_logs_are_refused_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_base(dir.path(), "c.graph");
    let states = commits(
        &path,
        &[(vec![0, 5, 6], vec![3, 9, 1]), (vec![9, 2], vec![4, 12])],
    );
    let good = states.last().unwrap().clone();
    let log = log_path(&path);
    for i in 0..good.len() {
        for bit in [0x01u8, 0x80] {
            let mut f = good.clone();
            f[i] ^= bit;
            std::fs::write(&log, &f).unwrap();
            match Graph::open(&path) {
                Err(e) => assert!(
                    matches!(e, instant_embedding::Error::Format(_)),
                    "byte {i}: {e}"
                ),
                Ok(g) => {
                    // The inactive slot may be flipped harmlessly; anything else that opens
                    // must fail validation.
                    let r = g.validate();
                    let in_inactive_slot = (128..256).contains(&i);
                    if r.is_ok() {
                        assert!(in_inactive_slot, "flip at byte {i} not detected");
                    }
                    // Every access is safe either way.
                    for v in 0..g.num_nodes() as u32 {
                        let _ = g.neighbors_checked(v);
                        let _ = g.node_id(v);
                    }
                }
            }
        }
    }
    // Truncation inside committed data is an error, not a silent loss.
    for cut in [DATA_START as usize, good.len() - 1, good.len() - 200] {
        std::fs::write(&log, &good[..cut]).unwrap();
        assert!(Graph::open(&path).is_err(), "cut at {cut}");
    }
    // An operation whose id is out of range for the graph's ids (implicit here: 0 ..
    // 2^32 - 2), checksums forged: `validate` replays it and reports it. The first operation
    // adds the edge 0 -> 3: its source id, one byte, becomes -1 (zigzag 1).
    let mut bad_id = good.clone();
    let op = DATA_START as usize;
    assert_eq!(bad_id[op + 1], 0);
    bad_id[op + 1] = 1;
    instant_embedding::live::log::forge_checksums(&mut bad_id);
    std::fs::write(&log, &bad_id).unwrap();
    if let Ok(g) = Graph::open(&path) {
        assert!(
            g.validate().is_err(),
            "an out-of-range id in an operation validated"
        );
    }
    // A log of version 1 (whole rows, a radix tree) is refused, saying how to convert it.
    let mut v1 = good.clone();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    instant_embedding::live::log::forge_checksums(&mut v1);
    std::fs::write(&log, &v1).unwrap();
    let msg = Graph::open(&path)
        .err()
        .expect("a version-1 log opens")
        .to_string();
    assert!(
        msg.contains("version 1") && msg.contains("compact"),
        "{msg}"
    );
}

#[test]
fn one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_base(dir.path(), "l.graph");
    let w = LiveWriter::open(&path, None, false).unwrap();
    let e = LiveWriter::open(&path, None, false).err().unwrap();
    match e {
        instant_embedding::Error::Io { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::WouldBlock);
            assert!(source.to_string().contains("another writer"));
        }
        e => panic!("{e}"),
    }
    drop(w);
    LiveWriter::open(&path, None, false).unwrap();
}

/// Logs of a few committed batches (created nodes, removals, a hub) for three base graphs.
fn sample_logs(dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (k, (kind, directed, weighted)) in [
        (Kind::Implicit, false, false),
        (Kind::Int, true, true),
        (Kind::Str, false, true),
    ]
    .into_iter()
    .enumerate()
    {
        let mut model = Model::new(kind, directed, weighted, Merge::Sum);
        for i in 0..12u64 {
            model.add(id_of(kind, i), id_of(kind, (i * 5 + 1) % 12), 1.0);
        }
        // Node 0 has 40 more arcs: the commits below change its row by deltas.
        for i in 20..60u64 {
            model.add(id_of(kind, 0), id_of(kind, i), 1.0);
        }
        let path = dir.join(format!("s{k}.graph"));
        save(&model.build(), &path).unwrap();
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        let wts = [0.5f32, 2.0, 1.25];
        let add = |w: &mut LiveWriter, a: &[u64], b: &[u64]| {
            let s: Vec<LogId> = a.iter().map(|&x| id_of(kind, x)).collect();
            let d: Vec<LogId> = b.iter().map(|&x| id_of(kind, x)).collect();
            w.add_edges(
                &ids(kind, &s),
                &ids(kind, &d),
                weighted.then_some(&wts[..s.len()]),
            )
            .unwrap();
        };
        add(&mut w, &[0, 13, 14], &[15, 2, 13]);
        w.commit().unwrap();
        let s: Vec<LogId> = [0u64, 3].iter().map(|&x| id_of(kind, x)).collect();
        let d: Vec<LogId> = [15u64, 4].iter().map(|&x| id_of(kind, x)).collect();
        w.remove_edges(&ids(kind, &s), &ids(kind, &d)).unwrap();
        add(&mut w, &[16, 1], &[1, 16]);
        w.commit().unwrap();
        add(&mut w, &[5, 5, 5], &[17, 18, 19]);
        w.commit().unwrap();
        drop(w);
        out.push((
            std::fs::read(&path).unwrap(),
            std::fs::read(log_path(&path)).unwrap(),
        ));
    }
    out
}

fn graph_from(image: &[u8]) -> Graph {
    let mut words = vec![0u64; image.len().div_ceil(8)];
    for (w, c) in words.iter_mut().zip(image.chunks(8)) {
        let mut a = [0u8; 8];
        a[..c.len()].copy_from_slice(c);
        *w = u64::from_le_bytes(a);
    }
    Graph::from_image(words, image.len()).unwrap()
}

/// Every accessor, a push and an embedding per node, lookups and `validate` on a graph read
/// through a (possibly damaged) log: errors only, never a panic; once `validate` passes, every
/// in-range query works.
fn touch(g: &Graph) {
    let n = g.num_nodes() as u32;
    let mut errors = Vec::new();
    let mut note = |r: instant_embedding::Result<()>| {
        if let Err(e) = r {
            assert!(!e.to_string().is_empty());
            errors.push(e);
        }
    };
    let cfg = PprConfig {
        eps: 1e-2,
        ..PprConfig::default()
    };
    for v in 0..n + 2 {
        note(g.degree(v).map(drop));
        note(g.neighbors_checked(v).map(drop));
        note(g.weights(v).map(drop));
        note(g.strength(v).map(drop));
        note(g.node_id(v).map(drop));
        note(g.hash_key(v).map(drop));
        note(ppr_state(g, v, &cfg).map(drop));
    }
    for id in g.int_ids().unwrap_or_default() {
        note(g.lookup_int(id).map(drop));
    }
    note(g.lookup_str("n5").map(drop));
    let all: Vec<u32> = (0..n).collect();
    let ecfg = EmbeddingConfig {
        dim: 8,
        ppr: cfg,
        ..EmbeddingConfig::default()
    };
    note(embed_nodes(g, &all, &ecfg, None).map(drop));
    if g.validate().is_ok() {
        let bad: Vec<_> = errors
            .iter()
            .filter(|e| !matches!(e, instant_embedding::Error::NodeIndexOutOfRange { .. }))
            .collect();
        assert!(
            bad.is_empty(),
            "validate() passed but queries failed: {bad:?}"
        );
    }
}

/// The property-test twin of the `change_log` fuzz target (which needs nightly): thousands of
/// structured mutations of valid logs, half with every checksum forged so they reach the
/// structural checks, read by `read_log` and attached to their graph.
#[test]
fn mutated_logs_never_crash_and_validated_ones_answer_queries() {
    use instant_embedding::live::log::{forge_checksums, read_log};
    let dir = tempfile::tempdir().unwrap();
    let logs = sample_logs(dir.path());
    // The unmutated logs are valid and read back.
    for (base, log) in &logs {
        let g = instant_embedding::live::with_log_bytes(graph_from(base), log).unwrap();
        assert!(g.is_live());
        g.validate().unwrap();
        assert_eq!(read_log(log).unwrap().commits.len(), 3);
        touch(&g);
    }
    let cases = std::env::var("IE_LOG_MUTATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500u64);
    let (mut opened, mut validated) = (0, 0);
    for case in 0..cases {
        let r = |k: u64| splitmix64(case * 7 + k);
        let (base, log) = &logs[(r(0) % logs.len() as u64) as usize];
        let mut m = log.clone();
        for step in 0..1 + r(1) % 3 {
            let at = (r(2 + step) % m.len() as u64) as usize;
            match r(10 + step) % 6 {
                0 => m[at] ^= 1 << (r(20 + step) % 8),
                1 if at + 4 <= m.len() => {
                    let v = [0u32, 1, 2, 255, 256, u32::MAX, 20, 12][(r(30) % 8) as usize];
                    m[at & !3..(at & !3) + 4].copy_from_slice(&v.to_le_bytes());
                }
                2 if at + 8 <= m.len() => {
                    let v = [0u64, 256, 8, u64::MAX, m.len() as u64, 1 << 40][(r(31) % 6) as usize];
                    m[at & !7..(at & !7) + 8].copy_from_slice(&v.to_le_bytes());
                }
                3 => m.truncate(at.max(1)),
                4 => m.extend(std::iter::repeat_n(r(40) as u8, (r(41) % 300) as usize)),
                _ => {
                    let len = (r(50) % 64) as usize;
                    let from = (r(51) % m.len() as u64) as usize;
                    if from + len <= m.len() && at + len <= m.len() {
                        let chunk = m[from..from + len].to_vec();
                        m[at..at + len].copy_from_slice(&chunk);
                    }
                }
            }
        }
        if r(60) % 2 == 0 {
            forge_checksums(&mut m);
        }
        let _ = read_log(&m);
        if let Ok(g) = instant_embedding::live::with_log_bytes(graph_from(base), &m) {
            opened += 1;
            validated += u64::from(g.validate().is_ok());
            touch(&g);
        }
    }
    eprintln!("{cases} mutated logs: {opened} opened, {validated} validated");
    // The mutations reach the checks past the header and the superblocks.
    assert!(opened > cases / 10, "{opened} of {cases} opened");
    assert!(
        validated > 0 && validated < opened,
        "{validated} of {opened} validated"
    );
}

/// Commits that change over a thousand nodes write index levels with a bitmap of their nodes
/// (a lookup is a bit test and a popcount), merged with small levels by later commits. With
/// the index kept out of memory, every row, threshold and result goes through those levels,
/// against a rebuild after each commit; `validate` checks each bitmap against its level.
#[test]
fn large_commits_write_bitmap_levels_that_match_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, kind, directed, weighted) in [
        (500u64, Kind::Int, false, false),
        (501, Kind::Str, true, true),
    ] {
        let mut next = seeded(seed);
        let mut model = Model::new(kind, directed, weighted, Merge::Sum);
        // Ids from a wider range than `id_of`'s: levels of more than 1,024 nodes get bitmaps.
        let id_of = |kind: Kind, k: u64| match kind {
            Kind::Str => LogId::Str(format!("n{}", splitmix64(k ^ 5) % 20_000)),
            _ => LogId::Int((splitmix64(k) % 20_000) as i64 * 37 - 9000),
        };
        let span = 4000u64;
        for _ in 0..8000 {
            let (a, b) = (next() % span, next() % span);
            model.add(id_of(kind, a), id_of(kind, b), 1.0);
        }
        let path = dir.path().join(format!("bitmap{seed}.graph"));
        save(&model.build(), &path).unwrap();
        let mut w = LiveWriter::open(&path, Some(Merge::Sum), false).unwrap();
        for (commit, size) in [3000u64, 3, 40, 2500, 1, 3000].into_iter().enumerate() {
            let (mut adds, mut removes) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
            // Removals of existing edges first, then additions (the writer's order below).
            for _ in 0..size / 3 {
                let i = (next() % model.edges.len() as u64) as usize;
                let e = model.edges.keys().nth(i).unwrap().clone();
                if model.remove(&e.0, &e.1) {
                    removes.0.push(e.0);
                    removes.1.push(e.1);
                }
            }
            for _ in size / 3..size {
                {
                    // A few new ids too.
                    let top = if next() % 20 == 0 { span + 50 } else { span };
                    let (a, b) = (id_of(kind, next() % top), id_of(kind, next() % top));
                    model.add(a.clone(), b.clone(), 1.0);
                    adds.0.push(a);
                    adds.1.push(b);
                }
            }
            w.remove_edges(&ids(kind, &removes.0), &ids(kind, &removes.1))
                .unwrap();
            let ones = vec![1.0f32; adds.0.len()];
            w.add_edges(
                &ids(kind, &adds.0),
                &ids(kind, &adds.1),
                weighted.then_some(&ones[..]),
            )
            .unwrap();
            assert!(w.commit().unwrap());
            let reopened = Graph::open(&path).unwrap().with_index_on_disk();
            reopened.validate().unwrap();
            if commit == 5 {
                let what = format!("bitmap levels, seed {seed}, commit {commit}");
                assert_same(&reopened, &model.build(), &what);
            }
        }
    }
}

/// One new edge on a hub writes a commit of a few hundred bytes whatever the hub's degree: the
/// hub's delta of one entry, the other end's row, the operation, one index level and the
/// trailer (the figure the benchmark `benches/live.py --parts hub` reports at degree 1 M).
#[test]
fn one_edge_on_a_hub_writes_at_most_256_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let leaves = 5000i64;
    let parts = csr_from_edges(
        leaves as usize + 1,
        &vec![0; leaves as usize],
        &(1..=leaves as u32).collect::<Vec<_>>(),
        None,
        false,
        Merge::Sum,
        IdTable::Implicit,
    )
    .unwrap();
    let path = dir.path().join("star.graph");
    save(&build_in_memory(&parts).unwrap(), &path).unwrap();
    let log_len = |p: &Path| std::fs::metadata(log_path(p)).map_or(0, |m| m.len());
    let mut w = LiveWriter::open(&path, None, false).unwrap();
    let mut sizes = Vec::new();
    for k in 0..24i64 {
        let leaf = 1 + (k * 577) % leaves;
        let (hub, other) = (Ids::Int(vec![0]), Ids::Int(vec![leaf]));
        assert_eq!(w.remove_edges(&hub, &other).unwrap(), 1);
        w.commit().unwrap();
        let before = log_len(&path);
        w.add_edges(&hub, &other, None).unwrap();
        w.commit().unwrap();
        sizes.push(log_len(&path) - before);
    }
    let max = *sizes.iter().max().unwrap();
    assert!(max <= 256, "commit sizes {sizes:?}");
    Graph::open(&path).unwrap().validate().unwrap();
}

/// Commits large enough to be staged and written in parallel (calls of more than 8,192
/// operations, records of several tasks) write the same log bytes for any thread count, and
/// the graph they give is a rebuild's.
#[test]
fn commits_write_the_same_bytes_for_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    for (seed, kind, directed, weighted) in [
        (700u64, Kind::Int, false, false),
        (701, Kind::Str, true, true),
    ] {
        let mut next = seeded(seed);
        // Ids spread so that new ones fall between existing ones (a permuted graph).
        let id = |k: u64| match kind {
            Kind::Str => LogId::Str(format!("u{k}")),
            _ => LogId::Int(k as i64 * 3 - 4000),
        };
        let span = 6000u64;
        let mut model = Model::new(kind, directed, weighted, Merge::Sum);
        for k in 0..30_000u64 {
            // A few hubs, whose rows get deltas.
            let a = if k % 8 == 0 {
                next() % 4
            } else {
                next() % span
            };
            model.add(id(a), id(next() % span), 1.0 + (k % 3) as f32);
        }
        let base = dir.path().join(format!("threads{seed}.graph"));
        save(&model.build(), &base).unwrap();
        // The calls of three commits: (removals, additions).
        let mut commits = Vec::new();
        for size in [12_000u64, 40, 10_000] {
            let (mut rs, mut rd, mut s, mut d, mut w) = (vec![], vec![], vec![], vec![], vec![]);
            for _ in 0..size / 4 {
                let i = (next() % model.edges.len() as u64) as usize;
                let e = model.edges.keys().nth(i).unwrap().clone();
                model.remove(&e.0, &e.1);
                rs.push(e.0);
                rd.push(e.1);
            }
            for k in size / 4..size {
                let top = if k % 10 == 0 { 2 * span } else { span };
                let a = if k % 16 == 0 {
                    next() % 4
                } else {
                    next() % top
                };
                let (a, b, x) = (id(a), id(next() % top), 0.5 + (k % 5) as f32);
                model.add(a.clone(), b.clone(), x);
                s.push(a);
                d.push(b);
                w.push(x);
            }
            commits.push((rs, rd, s, d, w));
        }
        let mut logs: Vec<Vec<Vec<u8>>> = Vec::new();
        for threads in [1usize, 2, 3] {
            let path = dir.path().join(format!("threads{seed}-{threads}.graph"));
            std::fs::copy(&base, &path).unwrap();
            let mut w = LiveWriter::open(&path, Some(Merge::Sum), false).unwrap();
            w.set_threads(Some(threads)).unwrap();
            let mut bytes = Vec::new();
            for (rs, rd, s, d, x) in &commits {
                w.remove_edges(&ids(kind, rs), &ids(kind, rd)).unwrap();
                w.add_edges(&ids(kind, s), &ids(kind, d), weighted.then_some(&x[..]))
                    .unwrap();
                assert!(w.commit().unwrap());
                bytes.push(std::fs::read(log_path(&path)).unwrap());
            }
            if threads == 2 {
                let g = Graph::open(&path).unwrap();
                g.validate().unwrap();
                assert_rows_same(
                    &g,
                    &model.build(),
                    &format!("seed {seed}, {threads} threads"),
                );
            }
            logs.push(bytes);
        }
        for (k, log) in logs.iter().enumerate().skip(1) {
            for (c, (a, b)) in logs[0].iter().zip(log).enumerate() {
                assert!(
                    a == b,
                    "seed {seed}: commit {c} with {} threads differs from 1 thread",
                    k + 1
                );
            }
        }
    }
}
