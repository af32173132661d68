//! The neighbour codes (`nbr_codes`, docs/FORMAT.md): every writer stores, per arc, a code that
//! bounds the target's true degree or strength (computed here from the edge lists, not from the
//! file); `validate()` catches a corrupted section; and the push, which decides threshold tests
//! from the codes where it can, makes exactly the decisions of a push that reads every degree
//! (the same file with the section removed from its header), bit for bit, on graphs built to
//! produce ties `r == eps * deg`, weighted and unweighted, directed and undirected, renumbered,
//! and through a change log whose nodes' degrees changed.

use std::collections::BTreeMap;
use std::path::Path;

use instant_embedding::embed::ppr::{ppr_state, push, PprConfig, Variant, Workspace};
use instant_embedding::embed::project::embed_nodes;
use instant_embedding::embed::{embed_one, EmbeddingConfig};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};
use instant_embedding::graph::csr::Graph;
use instant_embedding::graph::format::{checksum, NBR_CODES_OFF};
use instant_embedding::graph::strength_code::bounds;
use instant_embedding::hashing::splitmix64;
use instant_embedding::live::{Ids, LiveWriter};

fn rd(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// The file's `nbr_codes` section (offset at NBR_CODES_OFF, length the arc count).
fn codes_of(image: &[u8]) -> &[u8] {
    let (off, m) = (rd(image, NBR_CODES_OFF) as usize, rd(image, 24) as usize);
    assert_ne!(off, 0, "the writer stored no nbr_codes section");
    &image[off..off + m]
}

/// The same file without the section: its pushes read every neighbour's degree.
fn strip(image: &[u8]) -> Vec<u8> {
    let mut b = image.to_vec();
    b[NBR_CODES_OFF..NBR_CODES_OFF + 16].fill(0);
    let c = checksum(&b[..248]);
    b[248..256].copy_from_slice(&c.to_le_bytes());
    b
}

/// A fresh graph over a copy of `image` (fresh: no per-graph tables built yet, so every push
/// goes through the file's rows and codes).
fn graph(image: &[u8]) -> Graph {
    Graph::from_image(image_words(image), image.len()).unwrap()
}

/// `graph(image)`, checked to push with the codes (or without them, when stripped).
fn coded(image: &[u8], with: bool) -> Graph {
    let g = graph(image);
    assert_eq!(g.push_reads_nbr_codes(), with);
    g
}

struct Edges {
    n: usize,
    src: Vec<u32>,
    dst: Vec<u32>,
    w: Option<Vec<f32>>,
    directed: bool,
}

/// Nodes with out-degrees that are powers of two (below and above the exact codes' limit of
/// 128, and one of 200), dyadic weights, so that with `alpha = 1/2` and `eps = 2^-k` residuals
/// are dyadic and land exactly on thresholds.
fn tie_graph(seed: u64, directed: bool, weighted: bool) -> Edges {
    // Arcs among the first 1500 nodes; the others are isolated, there so that `indptr` spans
    // enough pages for the push to read the codes (NBR_CODES_MIN_INDPTR_PAGES).
    let (active, n) = (1500u64, 40_000usize);
    let mut rng = seed;
    let mut next = |k: u64| {
        rng = splitmix64(rng);
        rng % k
    };
    let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
    for v in 0..active as u32 {
        let deg = match v % 25 {
            0 => 256,
            1 => 512,
            2 => 200,
            3 => 128,
            _ => 1 << next(5),
        };
        for _ in 0..deg {
            src.push(v);
            dst.push(next(active) as u32);
            w.push([0.5f32, 1.0, 2.0, 4.0][next(4) as usize]);
        }
    }
    Edges {
        n,
        src,
        dst,
        w: weighted.then_some(w),
        directed,
    }
}

fn image_of(e: &Edges) -> Vec<u8> {
    let parts = csr_from_edges(
        e.n,
        &e.src,
        &e.dst,
        e.w.as_deref(),
        e.directed,
        Merge::Sum,
        IdTable::Implicit,
    )
    .unwrap();
    build_in_memory(&parts).unwrap().image().to_vec()
}

/// `max(strength, 1)` of every node and its arcs, from the edge list alone (duplicates merged by
/// summing weights, as `Merge::Sum`), in row order (by target).
fn true_rows(e: &Edges) -> Vec<BTreeMap<u32, f32>> {
    let mut rows = vec![BTreeMap::new(); e.n];
    for (k, (&s, &d)) in e.src.iter().zip(&e.dst).enumerate() {
        let x = e.w.as_ref().map_or(1.0, |w| w[k]);
        let mut put = |a: u32, b: u32| {
            rows[a as usize]
                .entry(b)
                .and_modify(|y: &mut f32| *y += x)
                .or_insert(x);
        };
        put(s, d);
        if !e.directed && s != d {
            put(d, s);
        }
    }
    rows
}

fn true_floor_strength(e: &Edges, rows: &[BTreeMap<u32, f32>], v: usize) -> f64 {
    let s = if e.w.is_some() {
        rows[v].values().fold(0f64, |a, &x| a + f64::from(x))
    } else {
        rows[v].len() as f64
    };
    s.max(1.0)
}

type StateBits = Vec<(u32, u64, u64)>;

fn state_bits(g: &Graph, seed: u32, cfg: &PprConfig) -> StateBits {
    let mut s: StateBits = ppr_state(g, seed, cfg)
        .unwrap()
        .into_iter()
        .map(|(u, p, r)| (u, p.to_bits(), r.to_bits()))
        .collect();
    s.sort_unstable();
    s
}

/// Compares the coded push with the exact one on `image` for many seeds and settings; returns
/// how many final residuals sit exactly on their threshold (ties decided "not crossed") at
/// nodes whose code is exact and at nodes whose code is an interval.
fn same_decisions(image: &[u8], floor: &dyn Fn(u32) -> f64, seeds: &[u32]) -> (usize, usize) {
    let bare = strip(image);
    let (mut exact_ties, mut interval_ties) = (0, 0);
    let weighted = graph(image).weighted();
    let table = bounds(weighted);
    for alpha in [0.5, 0.25] {
        for k in [4, 6, 8, 10, 12] {
            let eps = (0.5f64).powi(k);
            for variant in [Variant::Standard, Variant::Lazy] {
                let cfg = PprConfig {
                    alpha,
                    eps,
                    variant,
                    ..PprConfig::default()
                };
                for &seed in seeds {
                    let with = state_bits(&coded(image, true), seed, &cfg);
                    let without = state_bits(&coded(&bare, false), seed, &cfg);
                    assert!(
                        with == without,
                        "alpha {alpha} eps 2^-{k} {variant:?} seed {seed}: the coded push differs"
                    );
                    for &(u, _, r) in &with {
                        let t = eps * floor(u);
                        if f64::from_bits(r) == t {
                            let (lo, hi) = table.0[usize::from(code_for(weighted, floor(u)))];
                            if lo == hi {
                                exact_ties += 1;
                            } else {
                                interval_ties += 1;
                            }
                        }
                    }
                }
                // Embeddings too (the projection of the same vectors).
                let ecfg = EmbeddingConfig {
                    dim: 32,
                    ppr: cfg,
                    ..EmbeddingConfig::DEFAULT
                };
                let (mut a, mut b) = (vec![0f32; 32], vec![0f32; 32]);
                embed_one(&coded(image, true), seeds[0], &ecfg, &mut a).unwrap();
                embed_one(&coded(&bare, false), seeds[0], &ecfg, &mut b).unwrap();
                assert_eq!(
                    a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }
    (exact_ties, interval_ties)
}

fn code_for(weighted: bool, floor: f64) -> u8 {
    instant_embedding::graph::strength_code::code_of(weighted, floor)
}

#[test]
fn stored_codes_bound_the_true_strengths_for_every_writer() {
    let dir = tempfile::tempdir().unwrap();
    for (directed, weighted) in [(false, false), (true, false), (false, true), (true, true)] {
        let e = tie_graph(
            7 + u64::from(directed) * 2 + u64::from(weighted),
            directed,
            weighted,
        );
        let rows = true_rows(&e);
        let table = bounds(weighted);
        let check = |image: &[u8], new_of: &[u32]| {
            let g = graph(image);
            let codes = codes_of(image);
            let mut k = 0;
            let mut old_of = vec![0u32; e.n];
            for (v, &x) in new_of.iter().enumerate() {
                old_of[x as usize] = v as u32;
            }
            for v in 0..e.n as u32 {
                let nb = g.neighbors(v).unwrap();
                // The row is the edge list's row (oracle), in the file's numbering.
                let want: Vec<u32> = rows[old_of[v as usize] as usize]
                    .keys()
                    .map(|&u| new_of[u as usize])
                    .collect();
                let mut got = nb.to_vec();
                got.sort_unstable();
                let mut want_sorted = want.clone();
                want_sorted.sort_unstable();
                assert_eq!(got, want_sorted);
                for &u in nb.iter() {
                    let (lo, hi) = table.0[codes[k] as usize];
                    let x = true_floor_strength(&e, &rows, old_of[u as usize] as usize);
                    assert!(lo <= x && x <= hi, "arc {v}->{u}: {x} not in [{lo}, {hi}]");
                    k += 1;
                }
            }
            assert_eq!(k, codes.len());
        };
        let identity: Vec<u32> = (0..e.n as u32).collect();
        let image = image_of(&e);
        check(&image, &identity);
        // The out-of-core builder writes the same bytes (checked in external.rs); the permuted
        // writer (reorder, compaction) recomputes them for the new numbering.
        let order: Vec<u32> = {
            let mut o = identity.clone();
            let mut rng = 99u64;
            for i in (1..o.len()).rev() {
                rng = splitmix64(rng);
                o.swap(i, (rng % (i as u64 + 1)) as usize);
            }
            o
        };
        let path = dir.path().join(format!("p{directed}{weighted}.graph"));
        let pool = instant_embedding::parallel::pool(2).unwrap();
        let mut stats = instant_embedding::graph::reorder::ReorderStats::default();
        instant_embedding::graph::reorder::write_permuted(
            &graph(&image),
            &order,
            &path,
            &pool,
            None,
            &mut stats,
        )
        .unwrap();
        let permuted = std::fs::read(&path).unwrap();
        let mut new_of = vec![0u32; e.n];
        for (i, &v) in order.iter().enumerate() {
            new_of[v as usize] = i as u32;
        }
        check(&permuted, &new_of);
        Graph::open(&path).unwrap().validate().unwrap();
    }
}

#[test]
fn validate_reports_a_corrupted_code() {
    let e = tie_graph(3, false, false);
    let image = image_of(&e);
    graph(&image).validate().unwrap();
    let off = rd(&image, NBR_CODES_OFF) as usize;
    for pos in [off, off + 17, off + codes_of(&image).len() - 1] {
        let mut b = image.clone();
        b[pos] ^= 1;
        // The flip passes the O(1) open; validate() names the section.
        let err = graph(&b).validate().unwrap_err().to_string();
        assert!(
            err.contains("checksum mismatch in section nbr_codes"),
            "{err}"
        );
        // With the checksum forged, the consistency check catches the wrong code.
        let c = checksum(&b[off..off + codes_of(&b).len()]);
        b[NBR_CODES_OFF + 8..NBR_CODES_OFF + 16].copy_from_slice(&c.to_le_bytes());
        let h = checksum(&b[..248]);
        b[248..256].copy_from_slice(&h.to_le_bytes());
        let err = graph(&b).validate().unwrap_err().to_string();
        assert!(err.contains("neighbour code of arc"), "{err}");
    }
    // A checksum without an offset is refused at open.
    let mut b = image.clone();
    b[NBR_CODES_OFF..NBR_CODES_OFF + 8].fill(0);
    let h = checksum(&b[..248]);
    b[248..256].copy_from_slice(&h.to_le_bytes());
    assert!(Graph::from_image(image_words(&b), b.len()).is_err());
}

fn image_words(b: &[u8]) -> Vec<u64> {
    b.chunks(8)
        .map(|c| {
            let mut a = [0u8; 8];
            a[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(a)
        })
        .collect()
}

#[test]
fn push_decides_exactly_as_with_exact_degrees_on_ties() {
    let mut totals = (0, 0);
    for (directed, weighted) in [(false, false), (true, false), (false, true), (true, true)] {
        let e = tie_graph(
            11 + u64::from(directed) + 2 * u64::from(weighted),
            directed,
            weighted,
        );
        let rows = true_rows(&e);
        let floor = |u: u32| true_floor_strength(&e, &rows, u as usize);
        let image = image_of(&e);
        // Hubs (codes that are intervals) and ordinary nodes as seeds.
        let seeds: Vec<u32> = vec![0, 1, 2, 3, 5, 77, 151, 1000, 1499];
        let (a, b) = same_decisions(&image, &floor, &seeds);
        totals.0 += a;
        totals.1 += b;
        // The read-ahead push (files opened with prefetch) decides from the codes when it
        // queues a deposit: the same results.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.graph");
        std::fs::write(&path, &image).unwrap();
        let bare = graph(&strip(&image));
        for variant in [Variant::Standard, Variant::Lazy] {
            for k in [6, 10] {
                let cfg = PprConfig {
                    alpha: 0.5,
                    eps: (0.5f64).powi(k),
                    variant,
                    ..PprConfig::default()
                };
                for &seed in &seeds {
                    let mut g = Graph::open(&path).unwrap();
                    g.set_prefetch(true);
                    assert!(g.prefetch() && g.push_reads_nbr_codes());
                    assert_eq!(state_bits(&g, seed, &cfg), state_bits(&bare, seed, &cfg));
                }
            }
        }
    }
    // The graphs do produce ties, at exact codes and at interval codes (where the code alone
    // cannot decide them).
    assert!(totals.0 > 100 && totals.1 >= 5, "ties: {totals:?}");
}

#[test]
fn push_on_a_renumbered_file_decides_as_with_exact_degrees() {
    let dir = tempfile::tempdir().unwrap();
    let e = tie_graph(5, false, true);
    let image = image_of(&e);
    let n = e.n as u32;
    let order: Vec<u32> = (0..n)
        .map(|i| ((u64::from(i) * 619) % u64::from(n)) as u32)
        .collect();
    let path = dir.path().join("r.graph");
    let pool = instant_embedding::parallel::pool(1).unwrap();
    let mut stats = instant_embedding::graph::reorder::ReorderStats::default();
    instant_embedding::graph::reorder::write_permuted(
        &graph(&image),
        &order,
        &path,
        &pool,
        None,
        &mut stats,
    )
    .unwrap();
    let permuted = std::fs::read(&path).unwrap();
    let g = graph(&permuted);
    assert!(g.permuted());
    let floor = |u: u32| g.strength(u).unwrap().max(1.0);
    // Seeds among the nodes with arcs (the first 1500 of the unpermuted file).
    let seeds: Vec<u32> = (0..n)
        .filter(|&s| order[s as usize] < 1500)
        .take(6)
        .collect();
    same_decisions(&permuted, &floor, &seeds);
    // And as the unpermuted file, node for node (docs/SPEC.md: bit-identical after reorder).
    let cfg = PprConfig {
        alpha: 0.5,
        eps: 1.0 / 1024.0,
        ..PprConfig::default()
    };
    for &s in &seeds {
        let a = state_bits(&graph(&image), order[s as usize], &cfg);
        let mut b: StateBits = state_bits(&g, s, &cfg)
            .into_iter()
            .map(|(u, p, r)| (order[u as usize], p, r))
            .collect();
        b.sort_unstable();
        assert_eq!(a, b);
    }
}

/// A live graph whose changed nodes' degrees moved far from the base file's (so the codes that
/// other rows store for them are stale): the push through the log must equal a rebuild from the
/// final edge list. The graph has more nodes than the per-graph threshold table allows, so
/// every push reads the file's rows and codes, and enough pushes run for the reader to build
/// its bitmap of changed nodes (it then trusts codes of unchanged nodes only).
#[test]
fn live_graph_with_changed_degrees_decides_as_a_rebuild() {
    for directed in [false, true] {
        live_graph_decides_as_a_rebuild(directed);
    }
}

fn live_graph_decides_as_a_rebuild(directed: bool) {
    let dir = tempfile::tempdir().unwrap();
    let core = 3000u32;
    let n = (1usize << 20) + 10;
    let mut rng = 5u64;
    let mut next = |k: u64| {
        rng = splitmix64(rng);
        rng % k
    };
    let key = |a: u32, b: u32| {
        if directed {
            (a, b)
        } else {
            (a.min(b), a.max(b))
        }
    };
    let mut edges: std::collections::BTreeSet<(u32, u32)> = Default::default();
    for v in 0..core {
        for _ in 0..(1 << next(4)) {
            let u = next(u64::from(core)) as u32;
            edges.insert(key(v, u));
        }
    }
    let build = |edges: &std::collections::BTreeSet<(u32, u32)>, path: &Path| {
        let (s, d): (Vec<u32>, Vec<u32>) = edges.iter().copied().unzip();
        let parts =
            csr_from_edges(n, &s, &d, None, directed, Merge::Sum, IdTable::Implicit).unwrap();
        save(&build_in_memory(&parts).unwrap(), path).unwrap();
    };
    let path = dir.path().join("live.graph");
    build(&edges, &path);
    // Changes: nodes 10..20 gain 200 arcs each (code of degree ~2 becomes stale by 100x);
    // nodes 30..40 lose all their arcs; every 7th node from 100 gains one arc (a one-arc
    // delta on its file row: the push reads the merged row's codes, and on a directed graph
    // the added neighbour is unchanged, so its code is used).
    let mut w = LiveWriter::open(&path, None, false).unwrap();
    let (mut add_s, mut add_d) = (Vec::new(), Vec::new());
    let one_arc = (100..core).step_by(7);
    let pairs = (10..20u32)
        .flat_map(|v| (0..200u32).map(move |k| (v, (v * 7919 + k * 13) % core)))
        .chain(one_arc.clone().map(|a| (a, (a * 31 + 17) % core)));
    for (v, u) in pairs {
        if u != v && !(30..40).contains(&u) && edges.insert(key(v, u)) {
            add_s.push(i64::from(v));
            add_d.push(i64::from(u));
        }
    }
    w.add_edges(&Ids::Int(add_s), &Ids::Int(add_d), None)
        .unwrap();
    let (mut rm_s, mut rm_d) = (Vec::new(), Vec::new());
    for &(a, b) in edges
        .iter()
        .filter(|&&(a, b)| (30..40).contains(&a) || (30..40).contains(&b))
    {
        rm_s.push(i64::from(a));
        rm_d.push(i64::from(b));
    }
    edges.retain(|&(a, b)| !((30..40).contains(&a) || (30..40).contains(&b)));
    w.remove_edges(&Ids::Int(rm_s), &Ids::Int(rm_d)).unwrap();
    assert!(w.commit().unwrap());
    drop(w);
    let rebuilt = dir.path().join("rebuilt.graph");
    build(&edges, &rebuilt);
    let fresh = Graph::open(&rebuilt).unwrap();
    let mut ws = Workspace::new();
    // Both pushes: the plain one and the read-ahead one (files opened with prefetch), which
    // decides deposits when it queues them; with the log's index in memory (its codes of
    // changed nodes) and on disk (their strengths).
    for (prefetch, on_disk) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut live = Graph::open(&path).unwrap();
        if on_disk {
            live = live.with_index_on_disk();
        }
        live.set_prefetch(prefetch);
        assert!(live.is_live() && live.push_reads_nbr_codes());
        for eps in [1e-3, 1e-4, 1.0 / 4096.0] {
            let cfg = PprConfig {
                eps,
                ..PprConfig::default()
            };
            // Neighbours of the changed nodes as seeds: their rows (unchanged) store stale
            // codes; and nodes with a one-arc delta.
            let seeds = (0..core)
                .step_by(37)
                .chain(10..40)
                .chain(one_arc.clone().step_by(3));
            for seed in seeds {
                push(&live, seed, &cfg, &mut ws).unwrap();
                assert_eq!(
                    state_bits(&live, seed, &cfg),
                    state_bits(&fresh, seed, &cfg),
                    "directed {directed} prefetch {prefetch} index on disk {on_disk} eps {eps} \
                     seed {seed}"
                );
            }
        }
    }
    // A reader whose index stays on disk shares its tests' memo between threads: embeddings
    // on 3 threads, twice (the second pass reads what the first one's threads kept), equal
    // the rebuild's on 1 thread bit for bit.
    let cfg = EmbeddingConfig {
        dim: 64,
        ..EmbeddingConfig::default()
    };
    let seeds: Vec<u32> = (0..core).step_by(5).chain(10..40).collect();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let want = embed_nodes(&fresh, &seeds, &cfg, Some(&one)).unwrap();
    let live = Graph::open(&path).unwrap().with_index_on_disk();
    for pass in 0..2 {
        let got = embed_nodes(&live, &seeds, &cfg, Some(&three)).unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "directed {directed}: pass {pass} on 3 threads differs from the rebuild"
        );
    }
}
