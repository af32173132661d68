//! Renumbering the nodes of a graph file for locality, without changing any embedding.
//!
//! A query reads the `indptr` entries of every node it touches and the rows of the nodes it
//! pushes. With arbitrary (e.g. shuffled) internal indices each of them is a different cache line
//! and, on a cold file, a different page; when the nodes of one neighbourhood have nearby
//! indices, a query touches far fewer lines and pages. [`locality_order`] computes such an order
//! (communities by label propagation, or breadth-first search) and [`write_permuted`] writes a
//! copy of the file with nodes renumbered in that order.
//!
//! Embeddings do not change, bit for bit: the projection hashes external ids, and the renumbered
//! file keeps every row in the order of its neighbours' *external ids* (the order the original
//! file had), flagged `FLAG_PERMUTED` in the header, so the push visits the same nodes in the same
//! order and performs the same floating-point operations. Only the internal indices differ.

use std::cmp::Reverse;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3Default;

use crate::error::{Error, Result};
use crate::graph::build::{as_bytes, section_layout, AtomicFile};
use crate::graph::csr::Graph;
use crate::graph::external::{section_lengths, ProgressFn, SecWriter};
use crate::graph::format::{Header, IdKind, Sec, HEADER_LEN, VERSION};
use crate::hashing::splitmix64;

/// How [`locality_order`] orders the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Communities found by label propagation, one after the other; inside a community, nodes by
    /// decreasing degree (the most-touched rows share pages).
    Communities,
    /// Breadth-first search, started from the highest-degree unvisited node; neighbours in row
    /// order. Cheaper (one pass), weaker on small-world graphs.
    Bfs,
}

impl Method {
    /// The methods' names, as [`parse`](Self::parse) reads them.
    pub const NAMES: &'static [&'static str] = &["communities", "bfs"];

    pub fn parse(s: &str) -> Result<Method> {
        match s {
            "communities" => Ok(Method::Communities),
            "bfs" => Ok(Method::Bfs),
            _ => Err(Error::input(format!(
                "unknown reorder method {s:?} (expected \"communities\" or \"bfs\")"
            ))),
        }
    }
}

/// Label-propagation sweeps at most; sweeps stop earlier once fewer than 1 node in 1,000 changes.
pub const DEFAULT_ROUNDS: usize = 5;

/// What a reorder did.
#[derive(Clone, Debug, Default)]
pub struct ReorderStats {
    pub num_nodes: u64,
    pub num_arcs: u64,
    /// Label-propagation sweeps run (0 for BFS).
    pub rounds: u64,
    /// Communities found (connected components' starts for BFS).
    pub groups: u64,
    /// Arcs whose endpoints are in the same group.
    pub internal_arcs: u64,
    pub order_nanos: u64,
    pub write_nanos: u64,
    pub file_size: u64,
}

/// Calls `progress(done, total)` and turns a `false` answer into `Error::Cancelled`.
fn tick(progress: Option<&ProgressFn<'_>>, done: u64, total: u64) -> Result<()> {
    match progress {
        Some(p) if !p(done, total) => Err(Error::Cancelled),
        _ => Ok(()),
    }
}

/// A new order of the nodes: `order[new] = old`. Deterministic (no dependence on threads).
/// `progress(done, total)` counts arcs scanned over all passes.
pub fn locality_order(
    g: &Graph,
    method: Method,
    rounds: usize,
    pool: &rayon::ThreadPool,
    progress: Option<&ProgressFn<'_>>,
    stats: &mut ReorderStats,
) -> Result<Vec<u32>> {
    let n = g.num_nodes();
    let m = g.num_arcs();
    let passes = match method {
        Method::Bfs => 1,
        Method::Communities => rounds.max(1) as u64,
    };
    let total = m * passes;
    let degree: Vec<u32> = pool.install(|| {
        (0..n as u32)
            .into_par_iter()
            .map(|v| g.degree(v).map(|d| d.min(u64::from(u32::MAX)) as u32))
            .collect::<Result<_>>()
    })?;
    let (order, groups) = match method {
        Method::Bfs => bfs_order(g, &degree, pool, progress, total)?,
        Method::Communities => {
            let labels = propagate_labels(g, rounds.max(1), progress, total, stats)?;
            let mut order: Vec<u32> = (0..n as u32).collect();
            pool.install(|| {
                order.par_sort_unstable_by_key(|&v| {
                    (labels[v as usize], Reverse(degree[v as usize]), v)
                })
            });
            let groups = 1 + order
                .windows(2)
                .filter(|w| labels[w[0] as usize] != labels[w[1] as usize])
                .count() as u64;
            stats.internal_arcs = pool.install(|| internal_arcs(g, &labels))?;
            (order, groups.min(n as u64))
        }
    };
    stats.groups = groups;
    tick(progress, total, total)?;
    Ok(order)
}

fn internal_arcs(g: &Graph, labels: &[u32]) -> Result<u64> {
    (0..labels.len() as u32)
        .into_par_iter()
        .map(|v| {
            let l = labels[v as usize];
            Ok(g.neighbors_checked(v)?
                .iter()
                .filter(|&&u| labels[u as usize] == l)
                .count() as u64)
        })
        .sum()
}

fn bfs_order(
    g: &Graph,
    degree: &[u32],
    pool: &rayon::ThreadPool,
    progress: Option<&ProgressFn<'_>>,
    total: u64,
) -> Result<(Vec<u32>, u64)> {
    let n = degree.len();
    let mut starts: Vec<u32> = (0..n as u32).collect();
    pool.install(|| starts.par_sort_unstable_by_key(|&v| (Reverse(degree[v as usize]), v)));
    let mut visited = vec![false; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let (mut head, mut done, mut next_tick, mut components) = (0usize, 0u64, 1u64 << 24, 0u64);
    for s in starts {
        if visited[s as usize] {
            continue;
        }
        components += 1;
        visited[s as usize] = true;
        order.push(s);
        while head < order.len() {
            let v = order[head];
            head += 1;
            let r = g.neighbors_checked(v)?;
            for &u in r.iter() {
                if !visited[u as usize] {
                    visited[u as usize] = true;
                    order.push(u);
                }
            }
            done += r.len() as u64;
            if done >= next_tick {
                tick(progress, done, total)?;
                next_tick = done + (1 << 24);
            }
        }
    }
    Ok((order, components))
}

/// Asynchronous label propagation, sweeping the nodes in index order: each node takes the label
/// most frequent among its neighbours (ties: keep its own if tied, else a hash decides).
/// Sequential, so the result does not depend on the thread count.
fn propagate_labels(
    g: &Graph,
    rounds: usize,
    progress: Option<&ProgressFn<'_>>,
    total: u64,
    stats: &mut ReorderStats,
) -> Result<Vec<u32>> {
    let n = g.num_nodes();
    let m = g.num_arcs();
    let mut labels: Vec<u32> = (0..n as u32).collect();
    let mut buf: Vec<u32> = Vec::new();
    let mut next_tick = 1u64 << 24;
    for round in 0..rounds {
        let mut changed = 0u64;
        let mut done = round as u64 * m;
        for v in 0..n as u32 {
            let r = g.neighbors_checked(v)?;
            if r.is_empty() {
                continue;
            }
            buf.clear();
            buf.extend(r.iter().map(|&u| labels[u as usize]));
            buf.sort_unstable();
            let own = labels[v as usize];
            // Ties between labels are broken by a hash of (label, node, round): a fixed rule
            // such as "smallest label" lets a few labels flood the whole graph.
            let salt = (u64::from(v) << 8) ^ round as u64;
            let tie = |l: u32| splitmix64((u64::from(l) << 40) ^ salt);
            let (mut best, mut best_count, mut own_count) = (own, 0usize, 0usize);
            let mut i = 0;
            while i < buf.len() {
                let l = buf[i];
                let mut j = i + 1;
                while j < buf.len() && buf[j] == l {
                    j += 1;
                }
                let c = j - i;
                if c > best_count || (c == best_count && tie(l) < tie(best)) {
                    (best, best_count) = (l, c);
                }
                if l == own {
                    own_count = j - i;
                }
                i = j;
            }
            if own_count < best_count {
                labels[v as usize] = best;
                changed += 1;
            }
            done += r.len() as u64;
            if done >= next_tick {
                tick(progress, done, total)?;
                next_tick = done + (1 << 24);
            }
        }
        stats.rounds = round as u64 + 1;
        if changed * 1000 < n as u64 {
            break;
        }
    }
    Ok(labels)
}

/// Writes `g` with its nodes renumbered: new node `i` is old node `order[i]`. Rows keep their
/// order (that of their neighbours' external ids), so embeddings are bit-identical. A graph with
/// implicit ids gets int64 ids (its old indices). The source's section checksums are verified
/// first, so a corrupted source is refused instead of being re-checksummed into a valid-looking
/// file. Written atomically (temporary file + rename), `progress(done, total)` in arcs.
pub fn write_permuted(
    g: &Graph,
    order: &[u32],
    target: &Path,
    pool: &rayon::ThreadPool,
    progress: Option<&ProgressFn<'_>>,
    stats: &mut ReorderStats,
) -> Result<()> {
    let file = AtomicFile::create_graph(target)?;
    write_permuted_file(g, order, file, pool, progress, stats)
}

/// [`write_permuted`] into an already created temporary file (renamed into place at the end).
pub(crate) fn write_permuted_file(
    g: &Graph,
    order: &[u32],
    mut file: AtomicFile,
    pool: &rayon::ThreadPool,
    progress: Option<&ProgressFn<'_>>,
    stats: &mut ReorderStats,
) -> Result<()> {
    let start = Instant::now();
    let n = g.num_nodes();
    let m = g.num_arcs();
    if order.len() != n {
        return Err(Error::input(format!(
            "the order has {} entries for {n} nodes",
            order.len()
        )));
    }
    let mut new_of = vec![u32::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        if v as usize >= n || new_of[v as usize] != u32::MAX {
            return Err(Error::input("the order is not a permutation of the nodes"));
        }
        new_of[v as usize] = i as u32;
    }
    // Every row is read: with read-ahead (a cold file, e.g. compacting a large graph).
    let _scan = g.scan();
    g.verify_checksums()?;
    let identity = !g.permuted() && order.iter().enumerate().all(|(i, &v)| v as usize == i);
    let id_kind = match g.id_kind() {
        IdKind::Implicit if identity => IdKind::Implicit,
        IdKind::Implicit => IdKind::Int64,
        k => k,
    };
    let weighted = g.weighted();
    let id_bytes_len = g.id_bytes_len()?;
    let lens = section_lengths(n as u64, m, weighted, id_kind, id_bytes_len);
    let (mut table, file_len) = section_layout(&lens);

    let tmp = file.tmp_path().to_path_buf();
    let out = file.writer();
    out.write_all(&[0u8; HEADER_LEN])
        .map_err(|e| Error::io(&tmp, e))?;
    let mut sw = SecWriter {
        out,
        path: &tmp,
        pos: HEADER_LEN as u64,
        h: Xxh3Default::new(),
        written: 0,
    };
    const BLOCK: usize = 1 << 16;

    // indptr
    let sec = &mut table[Sec::Indptr as usize];
    sw.begin(sec.offset)?;
    let acc = put_offsets(&mut sw, order, |v| g.degree(v))?;
    sec.checksum = sw.end(sec.len)?;
    if acc != m {
        return Err(Error::format(format!(
            "the rows hold {acc} arcs but the header says {m}"
        )));
    }

    // indices (mapped, in parallel by block; the block order keeps the output deterministic),
    // then weights (copied).
    let sec = &mut table[Sec::Indices as usize];
    sw.begin(sec.offset)?;
    let mut done = 0u64;
    for block in order.chunks(BLOCK) {
        let parts: Vec<Vec<u32>> = pool.install(|| {
            block
                .par_chunks(1024)
                .map(|vs| {
                    let mut out = Vec::new();
                    for &v in vs {
                        out.extend(g.neighbors_checked(v)?.iter().map(|&u| new_of[u as usize]));
                    }
                    Ok(out)
                })
                .collect::<Result<_>>()
        })?;
        for p in &parts {
            sw.put(as_bytes(p))?;
            done += p.len() as u64;
        }
        tick(progress, done, m)?;
    }
    sec.checksum = sw.end(sec.len)?;
    if weighted {
        let sec = &mut table[Sec::Weights as usize];
        sw.begin(sec.offset)?;
        for &v in order {
            sw.put(as_bytes(&g.weights(v)?.unwrap_or_default()))?;
        }
        sec.checksum = sw.end(sec.len)?;
        let sec = &mut table[Sec::Strength as usize];
        sw.begin(sec.offset)?;
        for block in order.chunks(BLOCK) {
            let st: Vec<f64> = block
                .iter()
                .map(|&v| g.strength(v))
                .collect::<Result<_>>()?;
            sw.put(as_bytes(&st))?;
        }
        sec.checksum = sw.end(sec.len)?;
    }

    // ids, id_bytes, id_index
    match id_kind {
        IdKind::Implicit => {}
        IdKind::Int64 => {
            let sec = &mut table[Sec::Ids as usize];
            sw.begin(sec.offset)?;
            let words = g.ids_words();
            let base_n = g.base_num_nodes();
            for block in order.chunks(BLOCK) {
                let ids: Vec<u64> = if g.id_kind() == IdKind::Implicit {
                    block.iter().map(|&v| u64::from(v)).collect()
                } else {
                    // Nodes created by a change log have their ids in the log.
                    block
                        .iter()
                        .map(|&v| match words.get(v as usize) {
                            Some(&w) if (v as usize) < base_n => Ok(w),
                            _ => g.int_id(v).map(|i| i as u64),
                        })
                        .collect::<Result<_>>()?
                };
                sw.put(as_bytes(&ids))?;
            }
            sec.checksum = sw.end(sec.len)?;
        }
        IdKind::Utf8 => {
            let offs = g.ids_words();
            let bytes = g.id_bytes();
            let base_n = g.base_num_nodes();
            // A base node's id bytes, or a created node's (from the change log).
            let id = |v: u32| -> Result<&[u8]> {
                if v as usize >= base_n {
                    return g.string_id(v).map(str::as_bytes);
                }
                let (s, e) = (offs[v as usize], offs[v as usize + 1]);
                if s > e || e > bytes.len() as u64 {
                    return Err(Error::format(format!(
                        "corrupted string id offsets at node {v}"
                    )));
                }
                Ok(&bytes[s as usize..e as usize])
            };
            let sec = &mut table[Sec::Ids as usize];
            sw.begin(sec.offset)?;
            put_offsets(&mut sw, order, |v| id(v).map(|b| b.len() as u64))?;
            sec.checksum = sw.end(sec.len)?;
            let sec = &mut table[Sec::IdBytes as usize];
            sw.begin(sec.offset)?;
            for &v in order {
                sw.put(id(v)?)?;
            }
            sec.checksum = sw.end(sec.len)?;
        }
    }
    if id_kind != IdKind::Implicit {
        let sec = &mut table[Sec::IdIndex as usize];
        sw.begin(sec.offset)?;
        // Id order: the file's id_index, merged with the nodes a change log created.
        let merged;
        let src = if g.is_live() {
            merged = g.id_order()?;
            &merged[..]
        } else {
            g.id_index()
        };
        for k in (0..n).step_by(BLOCK) {
            let end = (k + BLOCK).min(n);
            let idx: Vec<u32> = if g.id_kind() == IdKind::Implicit {
                (k..end).map(|v| new_of[v]).collect()
            } else {
                src[k..end]
                    .iter()
                    .map(|&v| new_of.get(v as usize).copied().unwrap_or(u32::MAX))
                    .collect()
            };
            if idx.contains(&u32::MAX) {
                return Err(Error::format("id_index holds an index >= num_nodes"));
            }
            sw.put(as_bytes(&idx))?;
        }
        sec.checksum = sw.end(sec.len)?;
    }
    // nbr_codes: per arc of the new rows, the code of its target's strength (the strengths
    // read once per node, through the change log when compacting).
    let node_code: Vec<u8> = (0..n as u32)
        .map(|v| {
            Ok(crate::graph::strength_code::code_of(
                weighted,
                g.strength(v)?,
            ))
        })
        .collect::<Result<_>>()?;
    let sec = &mut table[Sec::NbrCodes as usize];
    sw.begin(sec.offset)?;
    for block in order.chunks(BLOCK) {
        let mut codes = Vec::new();
        for &v in block {
            codes.extend(
                g.neighbors_checked(v)?
                    .iter()
                    .map(|&u| node_code[u as usize]),
            );
        }
        sw.put(&codes)?;
    }
    sec.checksum = sw.end(sec.len)?;
    // A trailing empty section still extends the file to its (aligned) offset.
    sw.pad_to(file_len)?;
    let out = sw.out;
    let header = Header {
        version: VERSION,
        directed: g.directed(),
        weighted,
        permuted: !identity,
        id_kind,
        num_nodes: n as u64,
        num_arcs: m,
        num_edges: g.num_edges(),
        file_len,
        sections: table,
    };
    out.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io(&tmp, e))?;
    out.write_all(&header.encode())
        .map_err(|e| Error::io(&tmp, e))?;
    out.flush().map_err(|e| Error::io(&tmp, e))?;
    out.get_ref()
        .set_len(file_len)
        .map_err(|e| Error::io(&tmp, e))?;
    file.commit()?;
    stats.num_nodes = n as u64;
    stats.num_arcs = m;
    stats.file_size = file_len;
    stats.write_nanos = start.elapsed().as_nanos() as u64;
    Ok(())
}

/// Writes the offsets section `0, len(order[0]), len(order[0]) + len(order[1]), ...` (`indptr`
/// or utf8 id offsets) in blocks; returns the total.
fn put_offsets(
    sw: &mut SecWriter<'_>,
    order: &[u32],
    len: impl Fn(u32) -> Result<u64>,
) -> Result<u64> {
    const BLOCK: usize = 1 << 16;
    let mut acc = 0u64;
    let mut buf: Vec<u64> = Vec::with_capacity(BLOCK + 1);
    buf.push(0);
    for &v in order {
        acc += len(v)?;
        buf.push(acc);
        if buf.len() >= BLOCK {
            sw.put(as_bytes(&buf))?;
            buf.clear();
        }
    }
    sw.put(as_bytes(&buf))?;
    Ok(acc)
}

/// [`locality_order`] then [`write_permuted`].
pub fn reorder(
    g: &Graph,
    target: &Path,
    method: Method,
    rounds: usize,
    threads: usize,
    progress: Option<&ProgressFn<'_>>,
) -> Result<ReorderStats> {
    let pool = crate::parallel::pool(threads)?;
    let mut stats = ReorderStats::default();
    let _scan = g.scan(); // the order's rounds read every row too
    let t = Instant::now();
    let order = locality_order(g, method, rounds, &pool, progress, &mut stats)?;
    stats.order_nanos = t.elapsed().as_nanos() as u64;
    write_permuted(g, &order, target, &pool, progress, &mut stats)?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::config::{EmbeddingConfig, Value};
    use crate::embed::embed_one;
    use crate::embed::ppr::{ppr_state, PprConfig};
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};

    /// Two dense communities joined by a few edges, plus a path and an isolated node, with the
    /// node indices shuffled so that a locality order has something to recover.
    fn community_graph(weighted: bool, ids: &str) -> Graph {
        let n = 60u32;
        let shuffle = |v: u32| ((u64::from(v) * 37 + 11) % u64::from(n)) as u32;
        let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
        let mut add = |a: u32, b: u32, k: u64| {
            src.push(shuffle(a));
            dst.push(shuffle(b));
            w.push(1.0 + (splitmix64(k) % 5) as f32);
        };
        let mut k = 0;
        for c in 0..2u32 {
            for a in 0..25 {
                for b in a + 1..25 {
                    k += 1;
                    if splitmix64(k) % 3 == 0 {
                        add(c * 25 + a, c * 25 + b, k);
                    }
                }
            }
        }
        for (a, b) in [
            (0, 25),
            (3, 40),
            (49, 50),
            (50, 51),
            (51, 52),
            (52, 53),
            (54, 55),
        ] {
            k += 1;
            add(a, b, k);
        }
        let table = match ids {
            "implicit" => IdTable::Implicit,
            "int" => IdTable::Int((0..n).map(|v| i64::from(v) * 7 - 100).collect()),
            _ => IdTable::Str((0..n).map(|v| format!("node-{v:03}")).collect()),
        };
        let parts = csr_from_edges(
            n as usize,
            &src,
            &dst,
            weighted.then_some(&w[..]),
            false,
            Merge::Sum,
            table,
        )
        .unwrap();
        build_in_memory(&parts).unwrap()
    }

    fn by_id(g: &Graph) -> Vec<u64> {
        (0..g.num_nodes() as u32)
            .map(|v| g.hash_key(v).unwrap())
            .collect()
    }

    #[test]
    fn reordered_files_give_bit_identical_embeddings() {
        let dir = tempfile::tempdir().unwrap();
        for weighted in [false, true] {
            for ids in ["implicit", "int", "str"] {
                let g = community_graph(weighted, ids);
                let keys = by_id(&g);
                for (name, method) in [
                    ("c", Some(Method::Communities)),
                    ("b", Some(Method::Bfs)),
                    ("r", None),
                ] {
                    let path = dir.path().join(format!("{weighted}-{ids}-{name}.graph"));
                    let stats = match method {
                        Some(m) => reorder(&g, &path, m, DEFAULT_ROUNDS, 2, None).unwrap(),
                        None => {
                            // Any permutation, here a pseudo-random one.
                            let mut order: Vec<u32> = (0..g.num_nodes() as u32).collect();
                            order.sort_by_key(|&v| splitmix64(u64::from(v) + 99));
                            let mut s = ReorderStats::default();
                            write_permuted(
                                &g,
                                &order,
                                &path,
                                &crate::parallel::pool(2).unwrap(),
                                None,
                                &mut s,
                            )
                            .unwrap();
                            s
                        }
                    };
                    let h = Graph::open(&path).unwrap();
                    h.validate().unwrap();
                    assert!(h.permuted(), "{weighted} {ids} {name}");
                    assert_eq!(stats.num_arcs, g.num_arcs());
                    assert_eq!(h.num_edges(), g.num_edges());
                    assert_eq!(h.weighted(), weighted);
                    if ids == "implicit" {
                        assert_eq!(h.id_kind(), IdKind::Int64);
                    } else {
                        assert_eq!(h.id_kind(), g.id_kind());
                    }
                    // The same node, found by its external id, embeds to the same bits, and its
                    // push state is the same set of (id, p, r).
                    let new_keys = by_id(&h);
                    for v in 0..g.num_nodes() as u32 {
                        let nv = match g.node_id(v).unwrap() {
                            crate::graph::csr::NodeId::Int(i) => h.lookup_int(i).unwrap().unwrap(),
                            crate::graph::csr::NodeId::Str(s) => h.lookup_str(s).unwrap().unwrap(),
                        };
                        assert_eq!(new_keys[nv as usize], keys[v as usize]);
                        for value in [Value::PPlusR, Value::P] {
                            let cfg = EmbeddingConfig {
                                dim: 32,
                                seed: 3,
                                value,
                                ppr: PprConfig {
                                    eps: 1e-7,
                                    ..PprConfig::default()
                                },
                                ..EmbeddingConfig::default()
                            };
                            let (mut a, mut b) = (vec![0f32; 32], vec![0f32; 32]);
                            embed_one(&g, v, &cfg, &mut a).unwrap();
                            embed_one(&h, nv, &cfg, &mut b).unwrap();
                            let bits =
                                |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                            assert_eq!(bits(&a), bits(&b), "{weighted} {ids} {name} node {v}");
                        }
                        let cfg = PprConfig {
                            eps: 1e-6,
                            ..PprConfig::default()
                        };
                        let mut sa: Vec<(u64, u64, u64)> = ppr_state(&g, v, &cfg)
                            .unwrap()
                            .into_iter()
                            .map(|(u, p, r)| (keys[u as usize], p.to_bits(), r.to_bits()))
                            .collect();
                        let mut sb: Vec<(u64, u64, u64)> = ppr_state(&h, nv, &cfg)
                            .unwrap()
                            .into_iter()
                            .map(|(u, p, r)| (new_keys[u as usize], p.to_bits(), r.to_bits()))
                            .collect();
                        sa.sort_unstable();
                        sb.sort_unstable();
                        assert_eq!(sa, sb);
                    }
                    // Reordering a reordered file works too (rows stay in id order).
                    let again = dir.path().join(format!("{weighted}-{ids}-{name}-2.graph"));
                    reorder(&h, &again, Method::Bfs, 1, 1, None).unwrap();
                    Graph::open(&again).unwrap().validate().unwrap();
                }
            }
        }
    }

    #[test]
    fn output_does_not_depend_on_threads() {
        let dir = tempfile::tempdir().unwrap();
        let g = community_graph(true, "str");
        for method in [Method::Communities, Method::Bfs] {
            let images: Vec<Vec<u8>> = [1, 2, 3]
                .iter()
                .map(|&t| {
                    let p = dir.path().join(format!("t{t}.graph"));
                    reorder(&g, &p, method, DEFAULT_ROUNDS, t, None).unwrap();
                    std::fs::read(&p).unwrap()
                })
                .collect();
            assert!(images.windows(2).all(|w| w[0] == w[1]), "{method:?}");
        }
    }

    #[test]
    fn communities_are_contiguous() {
        let g = community_graph(false, "int");
        let mut stats = ReorderStats::default();
        let order = locality_order(
            &g,
            Method::Communities,
            DEFAULT_ROUNDS,
            &crate::parallel::pool(1).unwrap(),
            None,
            &mut stats,
        )
        .unwrap();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..60).collect::<Vec<u32>>());
        // The 25 members of each planted community (before the shuffle, nodes 0..25 and 25..50)
        // end up within a window of 25 + a few positions. 13 inverts the shuffle's 37 mod 60.
        let ext = |v: u32| (g.ids_words()[v as usize] as i64 + 100) / 7;
        let planted = |v: u32| (13 * (ext(v) + 60 - 11)) % 60;
        for c in 0..2 {
            let pos: Vec<usize> = (0..60)
                .filter(|&i| planted(order[i]) / 25 == c && planted(order[i]) < 50)
                .collect();
            assert_eq!(pos.len(), 25);
            assert!(pos[24] - pos[0] < 30, "community {c} spread over {pos:?}");
        }
        assert!(stats.internal_arcs * 10 > g.num_arcs() * 9);
    }

    #[test]
    fn refuses_bad_orders_and_corrupted_sources() {
        let dir = tempfile::tempdir().unwrap();
        let g = community_graph(false, "int");
        let out = dir.path().join("out.graph");
        let mut s = ReorderStats::default();
        let pool = crate::parallel::pool(2).unwrap();
        let e = write_permuted(&g, &[0, 1, 2], &out, &pool, None, &mut s).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        let mut dup: Vec<u32> = (0..60).collect();
        dup[5] = 4;
        let e = write_permuted(&g, &dup, &out, &pool, None, &mut s).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        assert!(!out.exists());
        // A neighbour id changed to another valid id: only the checksum tells, and the
        // reorder must not launder it into a file with fresh checksums.
        let src = dir.path().join("src.graph");
        save(&g, &src).unwrap();
        let mut bytes = std::fs::read(&src).unwrap();
        let off = g.header().sections[Sec::Indices as usize].offset as usize;
        bytes[off] ^= 1;
        std::fs::write(&src, &bytes).unwrap();
        let bad = Graph::open(&src).unwrap();
        let e = reorder(&bad, &out, Method::Bfs, 1, 2, None).unwrap_err();
        assert!(matches!(e, Error::Format(_)), "{e}");
        assert!(!out.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // Cancelled through the progress callback: no output, no temporary file left.
        let stop = |_: u64, _: u64| false;
        let e = reorder(&g, &out, Method::Communities, 2, 2, Some(&stop)).unwrap_err();
        assert!(matches!(e, Error::Cancelled), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn permuted_implicit_header_is_refused() {
        let g = community_graph(false, "implicit");
        let mut h = g.header().clone();
        h.permuted = true;
        let mut img = g.image().to_vec();
        img[..HEADER_LEN].copy_from_slice(&h.encode());
        let e = Header::decode(&img, img.len() as u64).unwrap_err();
        assert!(e.to_string().contains("permuted"), "{e}");
    }
}
