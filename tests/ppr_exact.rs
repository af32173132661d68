//! The push (docs/SPEC.md §1) against exact Personalized PageRank on small graphs.
//!
//! The oracle works on the raw edge list, not on the CSR the library builds: a dense weight
//! matrix (undirected edges in both directions, a self-loop once, duplicates summed or, when
//! unweighted, collapsed), the transition matrix `P = D^-1 W` whose dangling rows jump to the
//! seed (`(I + P) / 2` for the lazy variant) and `Pi = alpha (I - (1 - alpha) P)^-1` by
//! Gauss-Jordan elimination, cross-checked by power iteration. Checked for both variants on
//! undirected, weighted and directed graphs with dangling nodes:
//!
//! - the push's invariant `pi_s = p + r . Pi` (every push moves `alpha r_w` into `p_w` and
//!   spreads the rest along `w`'s row of `P`), which pins the residual `r` as well as `p`;
//! - the termination rule `r_j <= eps * max(str(j), 1)` for every node;
//! - the documented bound `0 <= pi_j - p_j <= eps * max(str(j), 1)` on undirected graphs;
//! - convergence to `pi` as `eps` goes to 0.

// Dense matrix code reads best with explicit indices.
#![allow(clippy::needless_range_loop)]

use instant_embedding::embed::ppr::{ppr_state, PprConfig, Variant};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
use instant_embedding::graph::csr::Graph;
use instant_embedding::hashing::splitmix64;

type Matrix = Vec<Vec<f64>>;

/// A raw edge list: what both the library and the oracle are built from.
struct Case {
    name: &'static str,
    n: usize,
    src: Vec<u32>,
    dst: Vec<u32>,
    weights: Option<Vec<f32>>,
    directed: bool,
}

/// Pseudo-random edges with a hub (node 0), a repeated edge, a repeated self-loop, isolated
/// nodes and, in directed graphs, dangling nodes (the last three have no out-arcs). Weights
/// are multiples of 1/4, so merged sums are exact in f32 and equal the oracle's f64 sums.
fn case(name: &'static str, directed: bool, weighted: bool, salt: u64) -> Case {
    let n = 30usize;
    let mut rnd = salt;
    let mut next = |k: u64| {
        rnd = splitmix64(rnd);
        rnd % k
    };
    let (mut src, mut dst, mut weights) = (vec![4, 4, 6, 6], vec![5, 5, 6, 6], vec![1.0; 4]);
    for _ in 0..80 {
        src.push(next(n as u64 - 3) as u32);
        dst.push(if next(5) == 0 {
            0
        } else {
            next(n as u64) as u32
        });
        weights.push((1 + next(12)) as f32 / 4.0);
    }
    Case {
        name,
        n,
        src,
        dst,
        weights: weighted.then_some(weights),
        directed,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case("undirected", false, false, 1),
        case("undirected weighted", false, true, 2),
        case("directed", true, false, 3),
        case("directed weighted", true, true, 4),
    ]
}

fn graph(c: &Case) -> Graph {
    let parts = csr_from_edges(
        c.n,
        &c.src,
        &c.dst,
        c.weights.as_deref(),
        c.directed,
        Merge::Sum,
        IdTable::Implicit,
    )
    .unwrap();
    build_in_memory(&parts).unwrap()
}

/// `W[u][v]` from the raw edge list.
fn weight_matrix(c: &Case) -> Matrix {
    let mut w = vec![vec![0.0; c.n]; c.n];
    for (k, (&s, &d)) in c.src.iter().zip(&c.dst).enumerate() {
        let x = c.weights.as_ref().map_or(1.0, |w| f64::from(w[k]));
        let (s, d) = (s as usize, d as usize);
        w[s][d] += x;
        if !c.directed && s != d {
            w[d][s] += x;
        }
    }
    if c.weights.is_none() {
        for row in &mut w {
            for x in row.iter_mut() {
                *x = if *x > 0.0 { 1.0 } else { 0.0 };
            }
        }
    }
    w
}

fn strengths(w: &Matrix) -> Vec<f64> {
    w.iter().map(|row| row.iter().sum()).collect()
}

/// Row-stochastic transition matrix; dangling rows jump to `seed`.
fn transition(w: &Matrix, seed: usize, variant: Variant) -> Matrix {
    let n = w.len();
    let st = strengths(w);
    let mut p = vec![vec![0.0; n]; n];
    for u in 0..n {
        if st[u] == 0.0 {
            p[u][seed] = 1.0;
        } else {
            for v in 0..n {
                p[u][v] = w[u][v] / st[u];
            }
        }
        if variant == Variant::Lazy {
            for v in 0..n {
                p[u][v] *= 0.5;
            }
            p[u][u] += 0.5;
        }
    }
    p
}

/// `alpha (I - (1 - alpha) P)^-1` by Gauss-Jordan elimination with partial pivoting.
fn exact_ppr_matrix(p: &Matrix, alpha: f64) -> Matrix {
    let n = p.len();
    let mut a: Matrix = (0..n)
        .map(|i| {
            let mut row: Vec<f64> = (0..n)
                .map(|j| f64::from(u8::from(i == j)) - (1.0 - alpha) * p[i][j])
                .collect();
            row.extend((0..n).map(|j| f64::from(u8::from(i == j))));
            row
        })
        .collect();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
            .unwrap();
        a.swap(col, piv);
        let d = a[col][col];
        assert!(d.abs() > 1e-9, "singular system");
        for x in a[col].iter_mut() {
            *x /= d;
        }
        let pivot_row = a[col].clone();
        for (i, row) in a.iter_mut().enumerate() {
            if i != col && row[col] != 0.0 {
                let f = row[col];
                for (x, y) in row.iter_mut().zip(&pivot_row) {
                    *x -= f * y;
                }
            }
        }
    }
    a.into_iter()
        .map(|row| row[n..].iter().map(|x| alpha * x).collect())
        .collect()
}

/// `pi_s` by power iteration `pi <- alpha e_s + (1 - alpha) pi P` until it moves < 1e-15.
fn power_iteration(p: &Matrix, seed: usize, alpha: f64) -> Vec<f64> {
    let n = p.len();
    let mut pi = vec![0.0; n];
    pi[seed] = 1.0;
    for _ in 0..100_000 {
        let mut next = vec![0.0; n];
        next[seed] = alpha;
        for u in 0..n {
            for v in 0..n {
                next[v] += (1.0 - alpha) * pi[u] * p[u][v];
            }
        }
        let moved = next
            .iter()
            .zip(&pi)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>();
        pi = next;
        if moved < 1e-15 {
            return pi;
        }
    }
    panic!("power iteration did not converge");
}

/// `(p, r)` of the push from `seed`, dense.
fn push_state(g: &Graph, seed: usize, cfg: &PprConfig) -> (Vec<f64>, Vec<f64>) {
    let n = g.num_nodes();
    let (mut p, mut r) = (vec![0.0; n], vec![0.0; n]);
    for (v, pv, rv) in ppr_state(g, seed as u32, cfg).unwrap() {
        p[v as usize] = pv;
        r[v as usize] = rv;
    }
    (p, r)
}

const VARIANTS: [Variant; 2] = [Variant::Standard, Variant::Lazy];

#[test]
fn the_oracle_agrees_with_power_iteration() {
    for c in cases() {
        let w = weight_matrix(&c);
        for variant in VARIANTS {
            for seed in [0, 4, c.n - 1] {
                let p = transition(&w, seed, variant);
                let pi = &exact_ppr_matrix(&p, 0.15)[seed];
                let it = power_iteration(&p, seed, 0.15);
                for (a, b) in pi.iter().zip(&it) {
                    assert!((a - b).abs() < 1e-13, "{} {variant:?} {seed}", c.name);
                }
                assert!((pi.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn push_state_satisfies_the_exact_identity_and_the_termination_rule() {
    for c in cases() {
        let g = graph(&c);
        let w = weight_matrix(&c);
        let st = strengths(&w);
        if c.directed {
            assert!(st.contains(&0.0), "{}: no dangling node", c.name);
        }
        for variant in VARIANTS {
            for (eps, alpha) in [(3e-2, 0.15), (1e-3, 0.15), (1e-5, 0.5)] {
                let cfg = PprConfig {
                    alpha,
                    eps,
                    variant,
                    ..PprConfig::default()
                };
                for seed in [0, 4, 6, c.n - 1] {
                    let pim = exact_ppr_matrix(&transition(&w, seed, variant), alpha);
                    let (p, r) = push_state(&g, seed, &cfg);
                    let what = format!("{} {variant:?} eps={eps} seed={seed}", c.name);
                    for j in 0..c.n {
                        let thr = eps * st[j].max(1.0);
                        assert!(p[j] >= 0.0 && r[j] >= 0.0, "{what}: negative at {j}");
                        assert!(r[j] <= thr, "{what}: r[{j}] = {} above {thr}", r[j]);
                        let rpi: f64 = (0..c.n).map(|u| r[u] * pim[u][j]).sum();
                        let gap = (p[j] + rpi - pim[seed][j]).abs();
                        assert!(gap < 1e-12, "{what}: p + r.Pi misses pi at {j} by {gap}");
                        if !c.directed {
                            let err = pim[seed][j] - p[j];
                            assert!(err > -1e-12 && err <= thr + 1e-12, "{what}: error {err}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn push_converges_to_exact_ppr() {
    for c in cases() {
        let g = graph(&c);
        let w = weight_matrix(&c);
        for variant in VARIANTS {
            let cfg = PprConfig {
                eps: 1e-13,
                variant,
                ..PprConfig::default()
            };
            for seed in [0, 4, c.n - 1] {
                let pi = power_iteration(&transition(&w, seed, variant), seed, cfg.alpha);
                let (p, _) = push_state(&g, seed, &cfg);
                for j in 0..c.n {
                    assert!(
                        (p[j] - pi[j]).abs() < 1e-10,
                        "{} {variant:?} seed={seed}: p[{j}] = {} but pi = {}",
                        c.name,
                        p[j],
                        pi[j]
                    );
                }
            }
        }
    }
}

#[test]
fn identity_cases_leave_residual_mass() {
    // Without residual mass left, the identity would check only p.
    for c in cases() {
        let (_, r) = push_state(
            &graph(&c),
            0,
            &PprConfig {
                eps: 3e-2,
                ..PprConfig::default()
            },
        );
        assert!(r.iter().sum::<f64>() > 0.05, "{}", c.name);
    }
}
