//! Synthetic graph generator: power-law degrees with community structure (see `model.rs` for
//! the exact model), written straight into a graph file.
//!
//! ```text
//! cargo run --release --example generate_graph -- --nodes 1000000 --avg-degree 32 \
//!     --out /tmp/synth_1m.graph [--sink memory|count] [--seed 0] [--gamma 2.5] [--mu 0.2] ...
//! ```
//!
//! `--avg-degree D` sets the number of edge draws to `n * D / 2` (use `--draws` to give it
//! directly). Sinks: `external` (default) streams the edges into the out-of-core builder
//! (`external::ExternalBuilder`, memory bounded by `--memory-limit` bytes of edge buffers plus
//! ~12 bytes per node, temporary files in `--tmp-dir` or beside the output); `memory` builds
//! the CSR in RAM (`build::csr_from_edges`, about 30 bytes per draw) and saves it atomically;
//! `count` only generates (timing the generator).
//! Prints one JSON line with the parameters, counts, timings and degree statistics.

mod model;

use std::path::PathBuf;
use std::time::Instant;

use instant_embedding::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};
use instant_embedding::graph::external::{BuildOptions, ExternalBuilder, SelfLoops};
use instant_embedding::Graph;
use model::{Model, Params};

struct Args {
    p: Params,
    avg_degree: Option<f64>,
    out: Option<PathBuf>,
    sink: String,
    threads: Option<usize>,
    window: usize,
    memory_limit: u64,
    tmp_dir: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: generate_graph --nodes N (--avg-degree D | --draws M) [--out PATH] \
         [--sink external|memory|count] [--memory-limit BYTES] [--tmp-dir DIR] [--seed S] [--gamma G] [--wmin X] [--wmax X] [--mu F] \
         [--tau T] [--cmin K] [--cmax K] [--no-shuffle] [--threads T]"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        p: Params::default(),
        avg_degree: None,
        out: None,
        sink: "external".into(),
        threads: None,
        window: 0,
        memory_limit: 4 << 30,
        tmp_dir: None,
    };
    let mut draws = None;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        if k == "--no-shuffle" {
            a.p.shuffle = false;
            continue;
        }
        if k == "-h" || k == "--help" {
            usage();
        }
        let v = it.next().unwrap_or_else(|| usage());
        let f = || v.parse::<f64>().unwrap_or_else(|_| usage());
        let u = || {
            // Accept 1e9-style integers too.
            v.parse::<u64>()
                .or_else(|_| v.parse::<f64>().map(|x| x as u64))
                .unwrap_or_else(|_| usage())
        };
        match k.as_str() {
            "--nodes" => a.p.n = u(),
            "--avg-degree" => a.avg_degree = Some(f()),
            "--draws" => draws = Some(u()),
            "--gamma" => a.p.gamma = f(),
            "--wmin" => a.p.w_min = f(),
            "--wmax" => a.p.w_max = f(),
            "--mu" => a.p.mu = f(),
            "--tau" => a.p.tau = f(),
            "--cmin" => a.p.c_min = u(),
            "--cmax" => a.p.c_max = u(),
            "--seed" => a.p.seed = u(),
            "--out" => a.out = Some(PathBuf::from(&v)),
            "--sink" => a.sink = v.clone(),
            "--threads" => a.threads = Some(u() as usize),
            "--window" => a.window = u() as usize,
            "--memory-limit" => a.memory_limit = u(),
            "--tmp-dir" => a.tmp_dir = Some(PathBuf::from(&v)),
            _ => usage(),
        }
    }
    a.p.m = match (draws, a.avg_degree) {
        (Some(m), _) => m,
        (None, Some(d)) => (a.p.n as f64 * d / 2.0).round() as u64,
        (None, None) => usage(),
    };
    a
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn degree_stats(g: &Graph) -> String {
    let n = g.num_nodes();
    let mut deg: Vec<u64> = (0..n as u32).map(|v| g.degree(v).unwrap_or(0)).collect();
    let isolated = deg.iter().filter(|&&d| d == 0).count();
    deg.sort_unstable();
    let q = |f: f64| deg[((n - 1) as f64 * f) as usize];
    format!(
        "{{\"isolated\":{isolated},\"mean\":{:.3},\"median\":{},\"p90\":{},\"p99\":{},\"p999\":{},\"max\":{}}}",
        g.num_arcs() as f64 / n as f64,
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        deg[n - 1]
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse();
    if let Some(t) = a.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()?;
    }
    let window = if a.window > 0 {
        a.window
    } else {
        2 * rayon::current_num_threads()
    };
    let t0 = Instant::now();
    let model = Model::new(a.p.clone());
    let t_model = t0.elapsed().as_secs_f64();
    let p = &model.p;
    eprintln!(
        "model: n={} draws={} communities={} W={:.0} ({t_model:.1} s)",
        p.n,
        p.m,
        model.num_communities(),
        model.total_weight
    );

    let t1 = Instant::now();
    let mut extra = String::new();
    let emitted = match a.sink.as_str() {
        "count" => model.generate::<std::convert::Infallible>(window, |_| Ok(()))?,
        "external" => {
            let out = a.out.clone().unwrap_or_else(|| usage());
            let opts = BuildOptions {
                num_nodes: Some(p.n),
                self_loops: SelfLoops::Drop,
                merge: Merge::Sum,
                memory_limit: a.memory_limit,
                tmp_dir: a.tmp_dir.clone(),
                ..BuildOptions::default()
            };
            let mut b = ExternalBuilder::new(&out, opts)?;
            let emitted = model.generate(window, |es| {
                for &(u, v) in es {
                    b.push_int(u as i64, v as i64, 1.0)?;
                }
                Ok::<(), instant_embedding::Error>(())
            })?;
            let t_gen = t1.elapsed().as_secs_f64();
            let st = b.finish(None)?;
            let g = Graph::open(&out)?;
            extra = format!(
                ",\"generate_s\":{t_gen:.2},\"finish_s\":{:.2},\"path\":\"{}\",\"file_bytes\":{},\"edges\":{},\"duplicates_merged\":{},\"segments\":{},\"buckets\":{},\"external_buckets\":{},\"peak_tmp_bytes\":{},\"memory_limit\":{},\"degrees\":{}",
                t1.elapsed().as_secs_f64() - t_gen,
                out.display(),
                st.file_size,
                g.num_edges(),
                st.duplicates_merged,
                st.segments,
                st.buckets,
                st.external_buckets,
                st.peak_tmp_bytes,
                a.memory_limit,
                degree_stats(&g)
            );
            emitted
        }
        "memory" => {
            let out = a.out.clone().unwrap_or_else(|| usage());
            let cap = (p.m as f64 * 1.01) as usize;
            let (mut src, mut dst) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
            let emitted = model.generate::<std::convert::Infallible>(window, |es| {
                for &(u, v) in es {
                    src.push(u as u32);
                    dst.push(v as u32);
                }
                Ok(())
            })?;
            let t_gen = t1.elapsed().as_secs_f64();
            let parts = csr_from_edges(
                p.n as usize,
                &src,
                &dst,
                None,
                false,
                Merge::Sum,
                IdTable::Implicit,
            )?;
            drop((src, dst));
            let g = build_in_memory(&parts)?;
            drop(parts);
            save(&g, &out)?;
            drop(g);
            let g = Graph::open(&out)?;
            extra = format!(
                ",\"generate_s\":{t_gen:.2},\"path\":\"{}\",\"file_bytes\":{},\"edges\":{},\"degrees\":{}",
                out.display(),
                std::fs::metadata(&out)?.len(),
                g.num_edges(),
                degree_stats(&g)
            );
            emitted
        }
        other => {
            eprintln!("unknown sink {other:?}");
            usage()
        }
    };
    let total = t1.elapsed().as_secs_f64();
    println!(
        "{{\"model\":\"chung-lu communities\",\"n\":{},\"draws\":{},\"gamma\":{},\"w_min\":{},\"w_max\":{},\"mu\":{},\"tau\":{},\"c_min\":{},\"c_max\":{},\"shuffle\":{},\"seed\":{},\"communities\":{},\"threads\":{},\"sink\":\"{}\",\"emitted\":{},\"model_s\":{t_model:.2},\"build_s\":{total:.2},\"peak_rss_mib\":{:.0}{extra}}}",
        p.n,
        p.m,
        p.gamma,
        p.w_min,
        p.w_max,
        p.mu,
        p.tau,
        p.c_min,
        p.c_max,
        p.shuffle,
        p.seed,
        model.num_communities(),
        rayon::current_num_threads(),
        a.sink,
        emitted,
        peak_rss_mib()
    );
    Ok(())
}
