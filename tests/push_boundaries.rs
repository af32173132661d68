//! The push's two boundaries, hit exactly: the threshold test `r > eps * max(deg, 1)` at a tie
//! (a node whose residual equals its threshold is *not* pushed, docs/SPEC.md §1), and the
//! `max_touched` budget (a push touching exactly `max_touched` nodes succeeds, one more fails).
//!
//! Every value below is exact in binary floating point (alpha = 1/2, eps a power of two), so the
//! expected states are written out by hand from the SPEC's rules, not computed by the library.
//! Each case runs through every code path that decides the test: the per-node floor table and
//! the file's degrees, the dense and the hash workspaces, the plain and the read-ahead push.

use instant_embedding::embed::ppr::{push, PprConfig, Variant, Workspace};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};
use instant_embedding::graph::csr::{Graph, TABLE_MAX_NODES};
use instant_embedding::Error;

/// The ways a graph can be queried; each takes a different path to the threshold test.
#[derive(Clone, Copy, Debug)]
enum Path {
    /// In memory, degrees read from the CSR (no per-node table yet).
    FromFile,
    /// In memory, after enough work for the per-node floor-strength table.
    FromTable,
    /// Saved and memory-mapped with read-ahead on: the pipelined push.
    Prefetch,
    /// More nodes than the dense workspace takes: the hash workspace.
    Hash,
}

const PATHS: [Path; 4] = [Path::FromFile, Path::FromTable, Path::Prefetch, Path::Hash];

/// A small graph on nodes `0..n` (implicit ids), padded with isolated nodes for `Path::Hash`.
fn graph(
    path: Path,
    n: usize,
    edges: &[(u32, u32)],
    weighted: bool,
    dir: &std::path::Path,
) -> Graph {
    let n = if matches!(path, Path::Hash) {
        TABLE_MAX_NODES + 1
    } else {
        n
    };
    let src: Vec<u32> = edges.iter().map(|e| e.0).collect();
    let dst: Vec<u32> = edges.iter().map(|e| e.1).collect();
    let w = vec![1.0f32; edges.len()];
    let parts = csr_from_edges(
        n,
        &src,
        &dst,
        weighted.then_some(&w[..]),
        false,
        Merge::Sum,
        IdTable::Implicit,
    )
    .unwrap();
    let g = build_in_memory(&parts).unwrap();
    match path {
        Path::FromFile | Path::Hash => g,
        Path::FromTable => {
            // A graph builds its table once its pushes have done n edge updates: warm it up.
            let warm = PprConfig {
                eps: 1e-6,
                ..PprConfig::default()
            };
            let mut ws = Workspace::new();
            for _ in 0..n {
                push(&g, 0, &warm, &mut ws).unwrap();
            }
            g
        }
        Path::Prefetch => {
            let file = dir.join(format!("g{}.graph", weighted as u8));
            save(&g, &file).unwrap();
            let mut g = Graph::open(&file).unwrap();
            g.set_prefetch(true);
            if cfg!(unix) {
                assert!(g.prefetch());
            }
            g
        }
    }
}

/// `(node, p, r)` of every touched node after a push from `seed`.
fn state(g: &Graph, seed: u32, cfg: &PprConfig) -> Result<Vec<(u32, f64, f64)>, Error> {
    let mut ws = Workspace::new();
    push(g, seed, cfg, &mut ws)?;
    Ok(ws.state())
}

/// Path `1 - 0 - 2`, pushed from 0 with alpha = 1/2 and eps = 1/4. The seed (degree 2,
/// threshold 1/2) is pushed: p0 = 1/2, each leaf gets 1/4, exactly its threshold 1/4 * 1, so
/// neither leaf is pushed. A push at `r >= threshold` would give each leaf p = 1/8.
#[test]
fn a_residual_equal_to_its_threshold_is_not_pushed() {
    let dir = tempfile::tempdir().unwrap();
    for weighted in [false, true] {
        for path in PATHS {
            let g = graph(path, 3, &[(0, 1), (0, 2)], weighted, dir.path());
            let cfg = PprConfig {
                alpha: 0.5,
                eps: 0.25,
                ..PprConfig::default()
            };
            let got = state(&g, 0, &cfg).unwrap();
            let want = vec![(0, 0.5, 0.0), (1, 0.0, 0.25), (2, 0.0, 0.25)];
            assert_eq!(got, want, "{path:?} weighted={weighted}");
        }
    }
}

/// The same tie on a node of degree 2, whose threshold (2 eps) is above eps, so the test reads
/// its degree: path `1 - 0 - 2 - 3` from 0, alpha = 1/2, eps = 1/8. Node 2 receives 1/4 =
/// 1/8 * 2 (a tie: kept); node 1 (degree 1) receives 1/4 > 1/8 and is pushed: p1 = 1/8, and its
/// 1/8 returns to the seed (threshold 1/4: kept).
#[test]
fn a_tie_on_a_node_of_higher_degree_is_not_pushed() {
    let dir = tempfile::tempdir().unwrap();
    for weighted in [false, true] {
        for path in PATHS {
            let g = graph(path, 4, &[(0, 1), (0, 2), (2, 3)], weighted, dir.path());
            let cfg = PprConfig {
                alpha: 0.5,
                eps: 0.125,
                ..PprConfig::default()
            };
            let got = state(&g, 0, &cfg).unwrap();
            let want = vec![(0, 0.5, 0.125), (1, 0.125, 0.0), (2, 0.0, 0.25)];
            assert_eq!(got, want, "{path:?} weighted={weighted}");
        }
    }
}

/// The lazy variant keeps half of the spread on the pushed node and queues it again only while
/// that half is above its threshold. Path `1 - 0 - 2` from 0, alpha = 1/2, eps = 1/8: the seed
/// keeps 1/4 = 1/8 * 2 (a tie: not queued again) and each leaf gets 1/8 = 1/8 * 1 (a tie).
#[test]
fn the_lazy_variant_does_not_requeue_a_node_at_its_threshold() {
    let dir = tempfile::tempdir().unwrap();
    for weighted in [false, true] {
        for path in PATHS {
            let g = graph(path, 3, &[(0, 1), (0, 2)], weighted, dir.path());
            let cfg = PprConfig {
                alpha: 0.5,
                eps: 0.125,
                variant: Variant::Lazy,
                ..PprConfig::default()
            };
            let got = state(&g, 0, &cfg).unwrap();
            let want = vec![(0, 0.5, 0.25), (1, 0.0, 0.125), (2, 0.0, 0.125)];
            assert_eq!(got, want, "{path:?} weighted={weighted}");
        }
    }
}

/// A push that touches exactly `max_touched` nodes succeeds; with one fewer allowed it fails
/// with `BudgetExceeded`. Path `1 - 0 - 2 - 3` from 0 with a small eps touches all 4 nodes.
#[test]
fn max_touched_admits_exactly_its_count() {
    let dir = tempfile::tempdir().unwrap();
    for path in PATHS {
        let g = graph(path, 4, &[(0, 1), (0, 2), (2, 3)], false, dir.path());
        let at = |max_touched| PprConfig {
            eps: 1e-3,
            max_touched,
            ..PprConfig::default()
        };
        let got = state(&g, 0, &at(4)).unwrap();
        assert_eq!(got.len(), 4, "{path:?}");
        match state(&g, 0, &at(3)) {
            Err(Error::BudgetExceeded(m)) => assert!(m.contains("max_touched=3"), "{m}"),
            other => panic!("{path:?}: expected BudgetExceeded, got {other:?}"),
        }
    }
}
