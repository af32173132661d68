//! Building graph files: from in-memory edge arrays, and writing them atomically.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::graph::chunk_writer::ChunkWriter;
use crate::graph::csr::Graph;
use crate::graph::format::{
    align_up, checksum, Header, IdKind, Sec, Section, HEADER_LEN, NUM_SECTIONS, VERSION,
};

/// External ids to store with a graph.
#[derive(Clone, Debug)]
pub enum IdTable {
    /// Ids are the internal indices `0..n-1`.
    Implicit,
    /// `ids[v]` is the int64 id of internal node `v`; must be unique.
    Int(Vec<i64>),
    /// `ids[v]` is the string id of internal node `v`; must be unique.
    Str(Vec<String>),
}

/// How parallel arcs (the same `(u, v)` given more than once) are merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    /// Weights of duplicates are added (scipy's COO->CSR convention).
    Sum,
    /// The largest weight is kept.
    Max,
}

/// A CSR in memory, ready to be encoded. Rows must be sorted and duplicate-free.
pub struct CsrParts {
    pub num_nodes: usize,
    pub directed: bool,
    pub indptr: Vec<u64>,
    pub indices: Vec<u32>,
    pub weights: Option<Vec<f32>>,
    pub ids: IdTable,
}

/// Edge weights as the builders take them: one per edge, finite and > 0.
pub fn check_edge_weights(weights: &[f32], edges: usize) -> Result<()> {
    if weights.len() != edges {
        return Err(Error::input(format!(
            "weights has length {} but there are {edges} edges",
            weights.len()
        )));
    }
    if let Some((i, x)) = weights
        .iter()
        .enumerate()
        .find(|(_, x)| !(x.is_finite() && **x > 0.0))
    {
        return Err(Error::input(format!(
            "edge {i} has weight {x}; weights must be finite and > 0"
        )));
    }
    Ok(())
}

/// Edge endpoints (and extra nodes) by the caller's own ids: all integers or all strings.
pub enum EdgeIds {
    Int {
        src: Vec<i64>,
        dst: Vec<i64>,
        nodes: Vec<i64>,
    },
    Str {
        src: Vec<String>,
        dst: Vec<String>,
        nodes: Vec<String>,
    },
}

/// Edges by internal index, the node count and the id table, for [`csr_from_edges`].
#[derive(Debug)]
pub struct IndexedEdges {
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub num_nodes: usize,
    pub ids: IdTable,
}

impl IndexedEdges {
    /// Drops the edges `v -> v` (and their `weights`); their nodes stay, as the out-of-core
    /// builder keeps them (isolated unless other edges reach them). The number dropped.
    pub fn drop_self_loops(&mut self, weights: Option<&mut Vec<f32>>) -> usize {
        let keep: Vec<bool> = self
            .src
            .iter()
            .zip(&self.dst)
            .map(|(a, b)| a != b)
            .collect();
        let dropped = keep.iter().filter(|k| !**k).count();
        fn retain<T>(v: &mut Vec<T>, keep: &[bool]) {
            let mut k = keep.iter();
            v.retain(|_| *k.next().unwrap_or(&true));
        }
        if dropped > 0 {
            retain(&mut self.src, &keep);
            retain(&mut self.dst, &keep);
            if let Some(w) = weights {
                retain(w, &keep);
            }
        }
        dropped
    }
}

fn node_count(n: usize) -> Result<usize> {
    if n > u32::MAX as usize {
        return Err(Error::param(format!(
            "{n} nodes exceed the 2**32-1 node limit"
        )));
    }
    Ok(n)
}

/// Numbers the nodes of `ids`: integer ids that are exactly `0..n-1` (or, with `num_nodes`,
/// lie in `0..num_nodes`) are the internal indices themselves; other integers and strings are
/// numbered in sorted order and kept in the id table.
pub fn index_edge_ids(ids: EdgeIds, num_nodes: Option<usize>) -> Result<IndexedEdges> {
    fn positions<T: Ord>(table: &[T], ids: &[T]) -> Vec<u32> {
        ids.iter()
            .map(|x| table.binary_search(x).expect("every id is in the table") as u32)
            .collect()
    }
    match ids {
        EdgeIds::Int { src, dst, nodes } => {
            let all = || src.iter().chain(&dst).chain(&nodes).copied();
            if let Some(n) = num_nodes {
                if let Some(bad) = all().find(|&x| x < 0 || x as u64 >= n as u64) {
                    return Err(Error::param(format!(
                        "node id {bad} is outside 0..num_nodes-1 ({n})"
                    )));
                }
                let n = node_count(n)?;
                let idx = |v: &[i64]| v.iter().map(|&x| x as u32).collect();
                return Ok(IndexedEdges {
                    src: idx(&src),
                    dst: idx(&dst),
                    num_nodes: n,
                    ids: IdTable::Implicit,
                });
            }
            let mut table: Vec<i64> = all().collect();
            table.sort_unstable();
            table.dedup();
            let n = node_count(table.len())?;
            if table.first().is_none_or(|&x| x == 0)
                && table.last().is_none_or(|&x| x == n as i64 - 1)
            {
                let idx = |v: &[i64]| v.iter().map(|&x| x as u32).collect();
                return Ok(IndexedEdges {
                    src: idx(&src),
                    dst: idx(&dst),
                    num_nodes: n,
                    ids: IdTable::Implicit,
                });
            }
            Ok(IndexedEdges {
                src: positions(&table, &src),
                dst: positions(&table, &dst),
                num_nodes: n,
                ids: IdTable::Int(table),
            })
        }
        EdgeIds::Str { src, dst, nodes } => {
            if num_nodes.is_some() {
                return Err(Error::param(
                    "num_nodes applies to integer ids 0..n-1, not string ids",
                ));
            }
            // Byte order of UTF-8 is code point order: the order Python's sorted() gives.
            let mut table: Vec<String> = src.iter().chain(&dst).chain(&nodes).cloned().collect();
            table.sort_unstable();
            table.dedup();
            let n = node_count(table.len())?;
            Ok(IndexedEdges {
                src: positions(&table, &src),
                dst: positions(&table, &dst),
                num_nodes: n,
                ids: IdTable::Str(table),
            })
        }
    }
}

/// Builds sorted, merged CSR rows from an arc list. Undirected graphs get both directions of
/// every edge (a self-loop is stored once). Weights must be finite and > 0.
pub fn csr_from_edges(
    num_nodes: usize,
    src: &[u32],
    dst: &[u32],
    weights: Option<&[f32]>,
    directed: bool,
    merge: Merge,
    ids: IdTable,
) -> Result<CsrParts> {
    if src.len() != dst.len() {
        return Err(Error::input(format!(
            "src and dst have different lengths ({} and {})",
            src.len(),
            dst.len()
        )));
    }
    if let Some(w) = weights {
        check_edge_weights(w, src.len())?;
    }
    if num_nodes > u32::MAX as usize {
        return Err(Error::input(format!(
            "{num_nodes} nodes exceed the u32 index limit"
        )));
    }
    for (i, (&s, &d)) in src.iter().zip(dst).enumerate() {
        if s as usize >= num_nodes || d as usize >= num_nodes {
            return Err(Error::input(format!(
                "edge {i} ({s}, {d}) refers to a node >= num_nodes ({num_nodes})"
            )));
        }
    }
    match &ids {
        IdTable::Implicit => {}
        IdTable::Int(v) if v.len() != num_nodes => {
            return Err(Error::input("id table length differs from num_nodes"))
        }
        IdTable::Str(v) if v.len() != num_nodes => {
            return Err(Error::input("id table length differs from num_nodes"))
        }
        _ => {}
    }

    // Counting sort of arcs by source.
    let mut counts = vec![0u64; num_nodes + 1];
    for (&s, &d) in src.iter().zip(dst) {
        counts[s as usize + 1] += 1;
        if !directed && s != d {
            counts[d as usize + 1] += 1;
        }
    }
    for i in 0..num_nodes {
        counts[i + 1] += counts[i];
    }
    let total = counts[num_nodes] as usize;
    let mut fill = counts.clone();
    let mut cols = vec![0u32; total];
    let mut wts: Vec<f32> = if weights.is_some() {
        vec![0.0; total]
    } else {
        Vec::new()
    };
    let mut put = |a: u32, b: u32, w: f32, cols: &mut Vec<u32>, wts: &mut Vec<f32>| {
        let p = fill[a as usize] as usize;
        fill[a as usize] += 1;
        cols[p] = b;
        if !wts.is_empty() {
            wts[p] = w;
        }
    };
    for (i, (&s, &d)) in src.iter().zip(dst).enumerate() {
        let w = weights.map_or(1.0, |w| w[i]);
        put(s, d, w, &mut cols, &mut wts);
        if !directed && s != d {
            put(d, s, w, &mut cols, &mut wts);
        }
    }

    // Sort each row and merge duplicates in place.
    let mut indptr = vec![0u64; num_nodes + 1];
    let mut out = 0usize;
    let mut pairs: Vec<(u32, f32)> = Vec::new();
    for v in 0..num_nodes {
        let (s, e) = (counts[v] as usize, counts[v + 1] as usize);
        if weights.is_some() {
            pairs.clear();
            pairs.extend(cols[s..e].iter().copied().zip(wts[s..e].iter().copied()));
            out = merge_row(v, &mut pairs, merge, &mut cols, &mut wts, out)?;
        } else {
            cols[s..e].sort_unstable();
            let mut last = None;
            for k in s..e {
                let u = cols[k];
                if last != Some(u) {
                    cols[out] = u;
                    out += 1;
                    last = Some(u);
                }
            }
        }
        indptr[v + 1] = out as u64;
    }
    cols.truncate(out);
    cols.shrink_to_fit();
    let weights = if weights.is_some() {
        wts.truncate(out);
        wts.shrink_to_fit();
        Some(wts)
    } else {
        None
    };
    Ok(CsrParts {
        num_nodes,
        directed,
        indptr,
        indices: cols,
        weights,
        ids,
    })
}

/// Sorts one row's `(neighbour, weight)` pairs (stably: duplicates merge in input order, so sums
/// are reproducible), merges duplicates per `merge`, and writes the row to `cols[at..]` /
/// `wts[at..]`. Returns the end of the written row. Shared by the in-memory and out-of-core
/// builders so both produce byte-identical files.
pub(crate) fn merge_row(
    v: usize,
    pairs: &mut [(u32, f32)],
    merge: Merge,
    cols: &mut [u32],
    wts: &mut [f32],
    mut at: usize,
) -> Result<usize> {
    pairs.sort_by_key(|p| p.0);
    let mut k = 0;
    while k < pairs.len() {
        let (u, mut w) = pairs[k];
        let mut j = k + 1;
        while j < pairs.len() && pairs[j].0 == u {
            w = match merge {
                Merge::Sum => w + pairs[j].1,
                Merge::Max => w.max(pairs[j].1),
            };
            j += 1;
        }
        if !w.is_finite() {
            return Err(Error::input(format!(
                "merged weight of arc ({v}, {u}) overflows f32"
            )));
        }
        cols[at] = u;
        wts[at] = w;
        at += 1;
        k = j;
    }
    Ok(at)
}

pub(crate) fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is a plain numeric type (u32/u64/f32/f64/i64) without padding.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Weighted degree of a row: its weights summed in storage order, starting from +0.0 (so an
/// isolated node has strength +0.0, which `Graph::validate` recomputes bit for bit; `Iterator::sum`
/// of an empty f64 iterator is -0.0).
pub(crate) fn strength_of(w: &[f32]) -> f64 {
    w.iter().fold(0.0f64, |acc, &x| acc + f64::from(x))
}

/// Number of edges a CSR with `m` arcs (`self_loops` of them self-loops) represents: arcs for a
/// directed graph; for an undirected one every edge is stored in both directions and a
/// self-loop once.
pub(crate) fn count_edges(directed: bool, m: u64, self_loops: u64) -> u64 {
    if directed {
        m
    } else {
        (m + self_loops) / 2
    }
}

/// Places the present sections (`Some(len)`) in table order, each 64-byte aligned after the
/// header, and returns the section table and the file length. Absent sections get offset and
/// length 0. Every checksum is that of zero bytes; writers fill in the real ones for non-empty
/// sections. `encode` and the out-of-core builder (`external.rs`) share this layout, so both
/// produce byte-identical files for the same graph.
pub(crate) fn section_layout(lens: &[Option<u64>; NUM_SECTIONS]) -> ([Section; NUM_SECTIONS], u64) {
    let empty = checksum(&[]);
    let mut table = [Section {
        offset: 0,
        len: 0,
        checksum: empty,
    }; NUM_SECTIONS];
    let mut pos = HEADER_LEN as u64;
    for (slot, len) in table.iter_mut().zip(lens) {
        if let Some(len) = *len {
            pos = align_up(pos);
            slot.offset = pos;
            slot.len = len;
            pos += len;
        }
    }
    (table, pos)
}

/// The encoded sections of a graph, in section-table order.
struct Encoded {
    header: Header,
    sections: Vec<(Sec, Vec<u8>)>,
}

fn encode(parts: &CsrParts) -> Result<Encoded> {
    let n = parts.num_nodes;
    let m = parts.indices.len() as u64;
    let self_loops = (0..n)
        .map(|v| {
            let row = &parts.indices[parts.indptr[v] as usize..parts.indptr[v + 1] as usize];
            u64::from(row.binary_search(&(v as u32)).is_ok())
        })
        .sum::<u64>();
    let num_edges = count_edges(parts.directed, m, self_loops);
    let mut secs: Vec<(Sec, Vec<u8>)> = vec![
        (Sec::Indptr, as_bytes(&parts.indptr).to_vec()),
        (Sec::Indices, as_bytes(&parts.indices).to_vec()),
    ];
    if let Some(w) = &parts.weights {
        let strength: Vec<f64> = (0..n)
            .map(|v| strength_of(&w[parts.indptr[v] as usize..parts.indptr[v + 1] as usize]))
            .collect();
        secs.push((Sec::Weights, as_bytes(w).to_vec()));
        secs.push((Sec::Strength, as_bytes(&strength).to_vec()));
    }
    let id_kind = match &parts.ids {
        IdTable::Implicit => IdKind::Implicit,
        IdTable::Int(ids) => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_unstable_by_key(|&v| ids[v as usize]);
            if let Some(w) = order
                .windows(2)
                .find(|w| ids[w[0] as usize] == ids[w[1] as usize])
            {
                return Err(Error::input(format!(
                    "duplicate node id {}",
                    ids[w[0] as usize]
                )));
            }
            secs.push((Sec::Ids, as_bytes(ids).to_vec()));
            secs.push((Sec::IdIndex, as_bytes(&order).to_vec()));
            IdKind::Int64
        }
        IdTable::Str(ids) => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_unstable_by(|&a, &b| {
                ids[a as usize].as_bytes().cmp(ids[b as usize].as_bytes())
            });
            if let Some(w) = order
                .windows(2)
                .find(|w| ids[w[0] as usize] == ids[w[1] as usize])
            {
                return Err(Error::input(format!(
                    "duplicate node id {:?}",
                    ids[w[0] as usize]
                )));
            }
            let mut offs = Vec::with_capacity(n + 1);
            let mut bytes = Vec::new();
            offs.push(0u64);
            for s in ids {
                bytes.extend_from_slice(s.as_bytes());
                offs.push(bytes.len() as u64);
            }
            secs.push((Sec::Ids, as_bytes(&offs).to_vec()));
            secs.push((Sec::IdBytes, bytes));
            secs.push((Sec::IdIndex, as_bytes(&order).to_vec()));
            IdKind::Utf8
        }
    };
    // Per arc, the code of its target's strength (the degree when unweighted).
    let node_code: Vec<u8> = (0..n)
        .map(|v| {
            let (s, e) = (parts.indptr[v] as usize, parts.indptr[v + 1] as usize);
            match &parts.weights {
                Some(w) => crate::graph::strength_code::code_of_strength(strength_of(&w[s..e])),
                None => crate::graph::strength_code::code_of_degree((e - s) as u64),
            }
        })
        .collect();
    let codes: Vec<u8> = parts
        .indices
        .iter()
        .map(|&u| node_code[u as usize])
        .collect();
    secs.push((Sec::NbrCodes, codes));
    let mut lens = [None; NUM_SECTIONS];
    for (sec, data) in &secs {
        lens[*sec as usize] = Some(data.len() as u64);
    }
    let (mut table, file_len) = section_layout(&lens);
    for (sec, data) in &secs {
        table[*sec as usize].checksum = checksum(data);
    }
    Ok(Encoded {
        header: Header {
            version: VERSION,
            directed: parts.directed,
            weighted: parts.weights.is_some(),
            permuted: false,
            id_kind,
            num_nodes: n as u64,
            num_arcs: m,
            num_edges,
            file_len,
            sections: table,
        },
        sections: secs,
    })
}

/// Encodes `parts` into an in-memory graph.
pub fn build_in_memory(parts: &CsrParts) -> Result<Graph> {
    let enc = encode(parts)?;
    let len = enc.header.file_len as usize;
    let mut words = vec![0u64; len.div_ceil(8)];
    {
        // SAFETY: viewing the u64 buffer as bytes; len <= 8 * words.len().
        let buf = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) };
        buf[..HEADER_LEN].copy_from_slice(&enc.header.encode());
        for (sec, data) in &enc.sections {
            let off = enc.header.sections[*sec as usize].offset as usize;
            buf[off..off + data.len()].copy_from_slice(data);
        }
    }
    Graph::from_image(words, len)
}

/// A temporary file next to `target`, renamed over it on `commit`, removed on drop otherwise.
pub struct AtomicFile {
    tmp: PathBuf,
    target: PathBuf,
    file: Option<ChunkWriter>,
    /// For graph files: the lock and change-log handling of the replaced path.
    replace: Option<crate::graph::replace::BaseReplace>,
}

impl AtomicFile {
    pub fn create(target: impl AsRef<Path>) -> Result<AtomicFile> {
        Self::create_with(target.as_ref(), None)
    }

    /// A temporary file for a new graph file at `target`: takes the path's writers' lock and
    /// checks its change log before anything is written (see [`crate::graph::replace::BaseReplace`]).
    pub fn create_graph(target: impl AsRef<Path>) -> Result<AtomicFile> {
        let target = target.as_ref();
        if target.is_dir() {
            return Self::create_with(target, None);
        }
        let replace = crate::graph::replace::BaseReplace::begin(target)?;
        Self::create_with(target, Some(replace))
    }

    fn create_with(
        target: &Path,
        replace: Option<crate::graph::replace::BaseReplace>,
    ) -> Result<AtomicFile> {
        let target = target.to_path_buf();
        if target.is_dir() {
            return Err(Error::io(
                &target,
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "graph".into());
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        crate::graph::replace::remove_stale(&dir, &name);
        let tmp = dir.join(format!(
            ".{name}.tmp-{}-{nonce:08x}",
            crate::graph::replace::owner_tag()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        Ok(AtomicFile {
            tmp,
            target,
            file: Some(ChunkWriter::new(file)),
            replace,
        })
    }

    pub fn writer(&mut self) -> &mut ChunkWriter {
        self.file.as_mut().expect("AtomicFile used after commit")
    }

    pub fn tmp_path(&self) -> &Path {
        &self.tmp
    }

    /// Flushes and fsyncs the temporary file, so that a later [`commit`](Self::commit) only
    /// renames it: a writer of several files makes them all durable before it renames any.
    pub fn sync(&mut self) -> Result<()> {
        let tmp = self.tmp.clone();
        let w = self.writer();
        w.flush().map_err(|e| Error::io(&tmp, e))?;
        w.get_ref().sync_all().map_err(|e| Error::io(&tmp, e))
    }

    /// Flushes, fsyncs and renames the temporary file over the target.
    /// On failure (e.g. the final flush hits a full disk) the temporary file is removed.
    pub fn commit(self) -> Result<()> {
        self.finish(true)
    }

    /// Renames the temporary file over the target without syncing its data first: for a
    /// cache that its readers check (after a crash it may be short or zeroed, never another
    /// file's bytes).
    pub fn commit_unsynced(self) -> Result<()> {
        self.finish(false)
    }

    fn finish(mut self, sync: bool) -> Result<()> {
        let w = self.file.take().expect("AtomicFile committed twice");
        let r = (|| {
            let f = w.into_inner().map_err(|e| Error::io(&self.tmp, e))?;
            if sync {
                f.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
            }
            drop(f);
            match self.replace.take() {
                Some(r) => r.install(&self.tmp),
                None => fs::rename(&self.tmp, &self.target).map_err(|e| Error::io(&self.target, e)),
            }
        })();
        if r.is_err() {
            let _ = fs::remove_file(&self.tmp);
        }
        r
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.is_some() {
            self.file = None;
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `target` atomically (temporary file + fsync + rename).
pub fn write_atomic(target: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    write_atomic_with(target.as_ref(), bytes, true)
}

/// Writes `bytes` to `target` atomically (temporary file + rename) without an fsync: for a
/// cache that its readers check (see [`AtomicFile::commit_unsynced`]).
pub fn write_cache_atomic(target: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    write_atomic_with(target.as_ref(), bytes, false)
}

fn write_atomic_with(target: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let mut f = AtomicFile::create(target)?;
    let tmp = f.tmp_path().to_path_buf();
    f.writer()
        .write_all(bytes)
        .map_err(|e| Error::io(&tmp, e))?;
    if sync {
        f.commit()
    } else {
        f.commit_unsynced()
    }
}

/// Saves a graph (in memory or mapped) to `target` atomically. A live graph is written with
/// its change log folded in (as `compact` writes it).
pub fn save(graph: &Graph, target: impl AsRef<Path>) -> Result<()> {
    if graph.is_live() {
        // The live wing writes a live graph's current state (crate::live::save).
        return Err(Error::param(
            "a graph with a change log is saved by live::save, not build::save",
        ));
    }
    let _scan = graph.scan();
    let target = target.as_ref();
    let mut f = AtomicFile::create_graph(target)?;
    let tmp = f.tmp_path().to_path_buf();
    f.writer()
        .write_all(graph.image())
        .map_err(|e| Error::io(&tmp, e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::ppr::{push, PprConfig, Variant, Workspace};

    #[test]
    fn edge_ids_are_numbered_as_documented() {
        let int = |s: &[i64], d: &[i64], n: &[i64]| EdgeIds::Int {
            src: s.to_vec(),
            dst: d.to_vec(),
            nodes: n.to_vec(),
        };
        // 0..n-1: the ids are the indices.
        let e = index_edge_ids(int(&[2, 0], &[1, 1], &[]), None).unwrap();
        assert_eq!((e.src, e.dst, e.num_nodes), (vec![2, 0], vec![1, 1], 3));
        assert!(matches!(e.ids, IdTable::Implicit));
        // Other integers: a sorted table (extra nodes included), indices into it.
        let e = index_edge_ids(int(&[10, -5], &[7, 10], &[99]), None).unwrap();
        assert_eq!((e.src, e.dst, e.num_nodes), (vec![2, 0], vec![1, 2], 4));
        assert!(matches!(e.ids, IdTable::Int(ref t) if t == &[-5, 7, 10, 99]));
        // num_nodes: ids in range are indices, isolated nodes included; others refused.
        let e = index_edge_ids(int(&[3], &[1], &[]), Some(6)).unwrap();
        assert_eq!((e.src, e.dst, e.num_nodes), (vec![3], vec![1], 6));
        let err = index_edge_ids(int(&[3], &[6], &[]), Some(6)).unwrap_err();
        assert_eq!(err.to_string(), "node id 6 is outside 0..num_nodes-1 (6)");
        // Strings: sorted by code point.
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let ids = EdgeIds::Str {
            src: s(&["é", "b"]),
            dst: s(&["a", "é"]),
            nodes: s(&["z"]),
        };
        let e = index_edge_ids(ids, None).unwrap();
        assert_eq!((e.src, e.dst, e.num_nodes), (vec![3, 1], vec![0, 3], 4));
        assert!(matches!(e.ids, IdTable::Str(ref t) if t == &s(&["a", "b", "z", "é"])));
        let ids = EdgeIds::Str {
            src: s(&["a"]),
            dst: s(&["b"]),
            nodes: vec![],
        };
        assert!(index_edge_ids(ids, Some(2)).is_err());
        // Nothing at all: an empty graph.
        let e = index_edge_ids(int(&[], &[], &[]), None).unwrap();
        assert_eq!(e.num_nodes, 0);
    }

    fn ring(n: u32) -> CsrParts {
        let src: Vec<u32> = (0..n).collect();
        let dst: Vec<u32> = (0..n).map(|v| (v + 1) % n).collect();
        csr_from_edges(
            n as usize,
            &src,
            &dst,
            None,
            false,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap()
    }

    #[test]
    fn builds_sorted_deduplicated_symmetric_rows() {
        let p = csr_from_edges(
            4,
            &[0, 1, 0, 2, 3],
            &[1, 0, 2, 2, 0],
            None,
            false,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap();
        assert_eq!(p.indptr, vec![0, 3, 4, 6, 7]);
        assert_eq!(p.indices, vec![1, 2, 3, 0, 0, 2, 0]);
        let g = build_in_memory(&p).unwrap();
        g.validate().unwrap();
        assert_eq!(g.num_edges(), 4); // 0-1, 0-2, 2-2, 0-3
    }

    #[test]
    fn file_roundtrip_is_byte_identical() {
        let g = build_in_memory(&ring(10)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ring.graph");
        save(&g, &path).unwrap();
        let h = Graph::open(&path).unwrap();
        h.validate().unwrap();
        assert_eq!(g.image(), h.image());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn rejects_bad_edges_and_duplicate_ids() {
        let e = csr_from_edges(2, &[0], &[2], None, false, Merge::Sum, IdTable::Implicit);
        assert!(matches!(e, Err(Error::InvalidInput(_))));
        let e = csr_from_edges(
            2,
            &[0],
            &[1],
            Some(&[f32::NAN]),
            false,
            Merge::Sum,
            IdTable::Implicit,
        );
        assert!(matches!(e, Err(Error::InvalidInput(_))));
        let p = csr_from_edges(
            2,
            &[0],
            &[1],
            None,
            false,
            Merge::Sum,
            IdTable::Int(vec![5, 5]),
        )
        .unwrap();
        assert!(matches!(build_in_memory(&p), Err(Error::InvalidInput(_))));
    }

    #[test]
    fn push_conserves_mass_and_respects_threshold() {
        let g = build_in_memory(&ring(50)).unwrap();
        for variant in [Variant::Standard, Variant::Lazy] {
            let cfg = PprConfig {
                eps: 1e-6,
                variant,
                ..PprConfig::default()
            };
            let mut ws = Workspace::new();
            push(&g, 3, &cfg, &mut ws).unwrap();
            let mut sup = Vec::new();
            ws.support(&mut sup);
            let p: f64 = sup.iter().map(|e| e.1).sum();
            let r: f64 = (0..50).map(|v| ws.residual(v)).sum();
            // p + alpha-discounted residual mass: with a symmetric ring, total mass p + r <= 1
            // and r at every node is below its threshold.
            assert!(
                p <= 1.0 + 1e-12 && p > 0.99 - 50.0 * 2.0 * 1e-6,
                "{variant:?} p={p}"
            );
            assert!((0..50).all(|v| ws.residual(v) <= 1e-6 * 2.0));
            assert!(p + r <= 1.0 + 1e-12);
            assert!(sup.windows(2).all(|w| w[0].0 < w[1].0));
        }
    }

    #[test]
    fn push_touching_every_node_stays_in_bounds() {
        // Every node of a small complete graph gets touched: exercises the dense touched list
        // at its capacity (and, under Miri/ASan, its bounds).
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for a in 0..5u32 {
            for b in a + 1..5 {
                src.push(a);
                dst.push(b);
            }
        }
        let p = csr_from_edges(5, &src, &dst, None, false, Merge::Sum, IdTable::Implicit).unwrap();
        let g = build_in_memory(&p).unwrap();
        let mut ws = Workspace::new();
        for seed in 0..5 {
            push(
                &g,
                seed,
                &PprConfig {
                    eps: 1e-9,
                    ..PprConfig::default()
                },
                &mut ws,
            )
            .unwrap();
            assert_eq!(ws.touched(), 5);
        }
    }

    #[test]
    fn workspace_reuse_gives_identical_results() {
        let g = build_in_memory(&ring(200)).unwrap();
        let cfg = PprConfig {
            eps: 1e-7,
            ..PprConfig::default()
        };
        let mut ws = Workspace::new();
        let mut first = Vec::new();
        push(&g, 10, &cfg, &mut ws).unwrap();
        ws.support(&mut first);
        push(&g, 150, &cfg, &mut ws).unwrap();
        push(&g, 10, &cfg, &mut ws).unwrap();
        let mut again = Vec::new();
        ws.support(&mut again);
        assert_eq!(first, again);
    }

    #[test]
    fn dropped_self_loops_keep_their_nodes_and_the_weights_aligned() {
        let ids = EdgeIds::Str {
            src: ["a", "b", "c", "d"].map(String::from).to_vec(),
            dst: ["a", "c", "c", "b"].map(String::from).to_vec(),
            nodes: Vec::new(),
        };
        let mut e = index_edge_ids(ids, None).unwrap();
        let mut w = vec![1.0, 2.0, 3.0, 4.0];
        assert_eq!(e.drop_self_loops(Some(&mut w)), 2);
        // a=0, b=1, c=2, d=3: b->c (2.0) and d->b (4.0) remain; "a" is still a node
        assert_eq!((e.src, e.dst, w), (vec![1, 3], vec![2, 1], vec![2.0, 4.0]));
        assert_eq!(e.num_nodes, 4);
    }
}
