//! Criterion benchmarks of the Rust kernels (no Python in the loop) on a synthetic graph built
//! in code: the push alone and push + projection (`embed_one`), one query per iteration, over
//! a fixed cycle of seeded random query nodes.
//!
//! ```text
//! cargo bench --bench ppr                 # all
//! cargo bench --bench ppr -- 'push/1e-5'  # a filter
//! ```
//!
//! The graph is the generator's model (`examples/generate_graph/model.rs`): 100,000 nodes,
//! average degree ~32 (Chung–Lu with communities, gamma 2.5, mu 0.2, seed 0), built in memory.

#[path = "../examples/generate_graph/model.rs"]
#[allow(dead_code)]
mod model;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use instant_embedding::embed::config::{EmbeddingConfig, Value};
use instant_embedding::embed::embed_one;
use instant_embedding::embed::ppr::{push, PprConfig, Workspace};
use instant_embedding::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
use instant_embedding::hashing::splitmix64;
use instant_embedding::Graph;

const NODES: u64 = 100_000;
const AVG_DEGREE: f64 = 32.0;
const QUERIES: u64 = 256;

fn graph() -> Graph {
    let m = model::Model::new(model::Params {
        n: NODES,
        m: (NODES as f64 * AVG_DEGREE / 2.0) as u64,
        w_max: 1000.0,
        ..model::Params::default()
    });
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    m.generate::<std::convert::Infallible>(4, |es| {
        for &(u, v) in es {
            src.push(u as u32);
            dst.push(v as u32);
        }
        Ok(())
    })
    .unwrap();
    let parts = csr_from_edges(
        NODES as usize,
        &src,
        &dst,
        None,
        false,
        Merge::Sum,
        IdTable::Implicit,
    )
    .unwrap();
    build_in_memory(&parts).unwrap()
}

fn bench(c: &mut Criterion) {
    let g = graph();
    let seeds: Vec<u32> = (0..QUERIES)
        .map(|i| (splitmix64(i) % NODES) as u32)
        .collect();
    for eps in [1e-4, 1e-5] {
        let cfg = PprConfig {
            eps,
            ..PprConfig::default()
        };
        let mut ws = Workspace::new();
        // Edge updates per query over the seed cycle, so criterion can report updates/s.
        let mut updates = 0u64;
        for &s in &seeds {
            push(&g, s, &cfg, &mut ws).unwrap();
            updates += ws.pushes;
        }
        let mut grp = c.benchmark_group(format!("push/{eps:.0e}"));
        grp.throughput(Throughput::Elements(updates / QUERIES));
        let mut i = 0usize;
        grp.bench_function("query", |b| {
            b.iter(|| {
                let s = seeds[i % seeds.len()];
                i += 1;
                push(&g, black_box(s), &cfg, &mut ws).unwrap();
                black_box(ws.pushes)
            })
        });
        grp.finish();

        let ecfg = EmbeddingConfig {
            dim: 512,
            seed: 0,
            value: Value::PPlusR,
            ppr: cfg,
            ..EmbeddingConfig::default()
        };
        let mut out = vec![0f32; 512];
        let mut i = 0usize;
        c.bench_function(&format!("embed_one/d512/{eps:.0e}"), |b| {
            b.iter(|| {
                let s = seeds[i % seeds.len()];
                i += 1;
                embed_one(&g, black_box(s), &ecfg, &mut out).unwrap();
                black_box(out[0])
            })
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
