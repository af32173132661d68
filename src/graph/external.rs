//! Out-of-core graph builder: edges arrive in chunks, the graph file (format v1, byte-identical
//! to what `build::build_in_memory` + `build::save` write for the same graph) is produced with
//! memory bounded by `BuildOptions::memory_limit`, whatever the number of edges.
//!
//! # Algorithm
//! 1. **Ingest.** Every endpoint id is mapped to a *provisional* index (`u32`): the id itself for
//!    implicit ids and for small non-negative int ids (a bitmap records which are present), a
//!    hash table entry otherwise (int ids far from `0..n`, string ids). Edges
//!    `(src, dst[, weight])` are appended to an in-memory buffer of at most `memory_limit / 2`
//!    bytes; a full buffer is written unsorted to a *segment* file in the temporary directory.
//!    A per-node arc counter (4 bytes per node) is kept for planning.
//! 2. **Ids.** At `finish`, the final node order is fixed: `0..n-1` for implicit ids, ascending
//!    ids for int ids, bytewise-sorted ids for string ids (so `id_index` is the identity). A
//!    `provisional -> final` table (4 bytes per provisional index) is built.
//! 3. **Buckets.** Final source nodes are cut into contiguous ranges (*buckets*) whose arcs fit in
//!    the memory budget. Each segment is read back, remapped, expanded to arcs (both directions for
//!    undirected graphs, a self-loop once) and appended to its bucket file; the segment is deleted.
//!    Peak temporary disk is therefore about one copy of the arcs (8 bytes per arc, 12 weighted).
//! 4. **Rows.** Buckets are processed in node order: the arcs are scattered into rows (counting
//!    sort, as `csr_from_edges` does), each row is sorted and its duplicates merged, and the rows are
//!    streamed into the output file (`indices` directly; `weights` and `strength` through temporary
//!    files appended afterwards). A bucket too large for memory (a hub node, or a memory limit so
//!    small that the bucket count would exceed [`MAX_BUCKETS`]) is sorted externally instead: sorted
//!    runs plus a stable k-way merge.
//! 5. **Finish.** `indptr` (8 bytes per node, in memory) and the header are written last, then the
//!    temporary file is fsynced and renamed over the target.
//!
//! If everything fits in the first buffer, steps 3 and 4 happen in memory without temporary files.
//!
//! Arcs keep their input order through every step (segments and buckets are append-only, row
//! scatter is stable, runs are merged with ties broken by run order), so duplicate weights are
//! summed in input order and the file equals the in-memory builder's bit for bit.
//!
//! # Memory
//! `memory_limit` covers the builder's heap: per-node structures plus edge/arc buffers (I/O
//! buffers of a few MiB aside). Per-node structures cannot spill: arc counters (4 B/node),
//! `indptr` (8 B/node, at finish), the `provisional -> final` table (4 B/node, int/string ids).
//! Id maps: int ids in the dense range cost 1 bit per id up to the largest id; other int ids
//! cost about 14-18 B/node (8 B id + hash table); string ids cost their UTF-8 length + 14-18
//! B/node (8 B offset + hash table), plus 4 B/node for the sort order at finish. Their size is
//! tracked as they grow (`BuildStats::peak_node_bytes`) and the buffers get what is left: half
//! of it for the ingest buffer, three quarters for a bucket at finish. When the per-node
//! structures alone exceed the limit, the buffers keep a floor of
//! `min(memory_limit / 4, 64 MiB)` and the build completes over the limit.
//!
//! Temporary files are named `.{output}.build-{pid}@{host}-*` (and the output's
//! `.{output}.tmp-{pid}@{host}-*`): a later build of the same output removes those left by a
//! killed process of this host (see `replace::remove_stale`).
//!
//! # Failure
//! Errors, cancellation (the progress hook returns false) and dropping an unfinished builder
//! remove the temporary directory and the temporary output file: the target path is only ever
//! replaced by a complete, valid graph file.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use hashbrown::HashTable;
use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

use crate::error::{Error, Result};
use crate::graph::build::{as_bytes, count_edges, section_layout, strength_of, AtomicFile, Merge};
use crate::graph::chunk_writer::ChunkWriter;
use crate::graph::format::{Header, IdKind, Sec, HEADER_LEN, NUM_SECTIONS, VERSION};
use crate::hashing::splitmix64;

/// Default `memory_limit`: 2 GiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 2 << 30;
/// Smallest accepted `memory_limit` (tiny limits are useful to test the spilling paths).
pub const MIN_MEMORY_LIMIT: u64 = 4096;
/// Most bucket files written at once; beyond this buckets grow and are sorted externally.
pub const MAX_BUCKETS: usize = 256;
/// Most sorted runs merged at once.
const FANIN: usize = 64;
/// Progress hook: `(done, total)` work units; returning `false` cancels (`Error::Cancelled`).
pub type ProgressFn<'a> = dyn Fn(u64, u64) -> bool + 'a;
/// Work units between two progress calls.
const PROGRESS_EVERY: u64 = 1 << 20;
const IO_BUF: usize = 1 << 20;
/// Buffers never shrink below `min(memory_limit / 4, BUFFER_FLOOR)`, whatever the per-node
/// structures take: a build with more nodes than the limit allows goes on, over the limit.
const BUFFER_FLOOR: u64 = 64 << 20;

/// Bytes left for edge/arc buffers once `node_bytes` of per-node structures are held.
fn buffer_bytes(memory_limit: u64, node_bytes: u64) -> u64 {
    memory_limit
        .saturating_sub(node_bytes)
        .max((memory_limit / 4).min(BUFFER_FLOOR))
}

/// How node ids are given and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdMode {
    /// Int ids; stored as implicit ids when they are exactly `0..n-1`, else as int64 ids
    /// (the rule of `Graph.from_edges`). With `num_nodes`, the same as `Implicit`.
    Auto,
    /// Ids are the internal indices `0..n-1` (`n` = `num_nodes`, or the largest id + 1).
    Implicit,
    /// Arbitrary int64 ids (internal order: ascending id); stored as implicit ids when they are
    /// exactly `0..n-1`, as `Graph.from_edges` does. Unlike `Auto` in the text reader, a
    /// non-integer id is an error.
    Int,
    /// UTF-8 string ids (internal order: bytewise ascending).
    Str,
}

impl IdMode {
    pub fn parse(s: &str) -> Result<IdMode> {
        match s {
            "auto" => Ok(IdMode::Auto),
            "implicit" => Ok(IdMode::Implicit),
            "int" | "int64" => Ok(IdMode::Int),
            "str" | "string" | "utf8" => Ok(IdMode::Str),
            other => Err(Error::param(format!(
                "id_kind must be 'auto', 'implicit', 'int' or 'str', got {other:?}"
            ))),
        }
    }
}

/// What happens to self-loops `(v, v)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelfLoops {
    /// Stored (once per node, also in undirected graphs).
    Keep,
    /// Dropped; a node seen only in self-loops still exists (isolated).
    Drop,
}

impl SelfLoops {
    pub fn parse(s: &str) -> Result<SelfLoops> {
        match s {
            "keep" => Ok(SelfLoops::Keep),
            "drop" => Ok(SelfLoops::Drop),
            other => Err(Error::param(format!(
                "self_loops must be 'keep' or 'drop', got {other:?}"
            ))),
        }
    }
}

impl Merge {
    pub fn parse(s: &str) -> Result<Merge> {
        match s {
            "sum" => Ok(Merge::Sum),
            "max" => Ok(Merge::Max),
            other => Err(Error::param(format!(
                "merge must be 'sum' or 'max', got {other:?}"
            ))),
        }
    }
}

/// Options of [`ExternalBuilder`].
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub directed: bool,
    pub weighted: bool,
    pub ids: IdMode,
    /// Number of nodes for implicit ids (isolated nodes included); ids must be below it.
    pub num_nodes: Option<u64>,
    pub self_loops: SelfLoops,
    /// How the weights of duplicate edges are merged (unweighted duplicates are dropped).
    pub merge: Merge,
    /// Memory budget in bytes: per-node structures plus edge and arc buffers (see the module
    /// docs).
    pub memory_limit: u64,
    /// Directory for temporary files (default: the output file's directory).
    pub tmp_dir: Option<PathBuf>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            directed: false,
            weighted: false,
            ids: IdMode::Auto,
            num_nodes: None,
            self_loops: SelfLoops::Keep,
            merge: Merge::Sum,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            tmp_dir: None,
        }
    }
}

/// What a build did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    pub num_nodes: u64,
    /// Undirected edges (a self-loop once) or directed arcs in the graph.
    pub num_edges: u64,
    /// Stored arcs (entries of `indices`).
    pub num_arcs: u64,
    /// Edges given to the builder.
    pub input_edges: u64,
    pub self_loops_dropped: u64,
    /// Input edges (after dropping self-loops) that repeated an earlier edge and were merged.
    pub duplicates_merged: u64,
    pub id_kind: &'static str,
    /// Segment files spilled during ingestion (0: the build ran in memory).
    pub segments: u64,
    /// Buckets of source nodes processed (1 for an in-memory build).
    pub buckets: u64,
    /// Buckets that needed an external sort.
    pub external_buckets: u64,
    /// Largest total size of temporary files at any time (bytes).
    pub peak_tmp_bytes: u64,
    /// Largest estimated size of the per-node structures (id map, arc counters, remap table,
    /// final ids, `indptr`) at any time (bytes). They count against `memory_limit`; when they
    /// alone exceed it, the buffers shrink to a floor and memory exceeds the limit by about
    /// this much.
    pub peak_node_bytes: u64,
    /// The budget the build was given (`BuildOptions::memory_limit`).
    pub memory_limit: u64,
    /// Size of the graph file written.
    pub file_size: u64,
    pub nanos: u64,
}

impl BuildStats {
    pub fn seconds(&self) -> f64 {
        self.nanos as f64 * 1e-9
    }

    /// What to tell the user when the per-node structures alone, which cannot spill, exceeded
    /// `memory_limit` (the build completed over the budget); None when the limit held.
    pub fn over_budget(&self) -> Option<String> {
        let (held, memory_limit) = (self.peak_node_bytes, self.memory_limit);
        if held <= memory_limit {
            return None;
        }
        let (n, mib) = (self.num_nodes.max(1), |b: u64| {
            b as f64 / f64::from(1 << 20)
        });
        Some(format!(
            "memory_limit {:.0} MiB was exceeded: the id map, counters and indptr of {n} nodes \
             alone took {:.0} MiB ({:.0} B per node), which cannot spill to disk. Give at \
             least {:.1} GiB to hold the limit.",
            mib(memory_limit),
            mib(held),
            held as f64 / n as f64,
            (held + (256 << 20)) as f64 / f64::from(1 << 30),
        ))
    }
}

// ------------------------------------------------------------------------------------------
// Id maps

const ABSENT: u32 = u32::MAX;
/// Largest number of nodes (the format indexes nodes with u32).
const MAX_NODES: u64 = u32::MAX as u64;

/// Int ids: a bitmap for ids in `0..dense_len` (provisional index = id), a hash table for the rest
/// (provisional index = `dense_len + k`). The dense range may grow while no id has been hashed.
struct IntIds {
    dense_allow: u64,
    dense_len: u64,
    frozen: bool,
    present: Vec<u64>,
    dense_count: u64,
    extra: Vec<i64>,
    table: HashTable<u32>,
}

impl IntIds {
    fn new(memory_limit: u64) -> Self {
        IntIds {
            // ~8.1 bytes per slot (counter + bit): let the dense range use half the budget.
            dense_allow: (memory_limit / 16).clamp(1 << 16, MAX_NODES),
            dense_len: 0,
            frozen: false,
            present: Vec::new(),
            dense_count: 0,
            extra: Vec::new(),
            table: HashTable::new(),
        }
    }

    fn distinct(&self) -> u64 {
        self.dense_count + self.extra.len() as u64
    }

    fn heap_bytes(&self) -> u64 {
        (self.present.capacity() * 8 + self.extra.capacity() * 8 + self.table.allocation_size())
            as u64
    }

    #[inline]
    fn mark(&mut self, x: u64) {
        let w = (x >> 6) as usize;
        if w >= self.present.len() {
            let want = (w + 1).max(self.present.len() + self.present.len() / 2);
            self.present.resize(want, 0);
        }
        let bit = 1u64 << (x & 63);
        if self.present[w] & bit == 0 {
            self.present[w] |= bit;
            self.dense_count += 1;
        }
    }

    #[inline]
    fn get(&mut self, id: i64) -> Result<u32> {
        if id >= 0 {
            let x = id as u64;
            if !self.frozen {
                let allow = self
                    .dense_allow
                    .max(4 * (self.dense_count + 1))
                    .min(MAX_NODES);
                if x < allow {
                    self.mark(x);
                    self.dense_len = self.dense_len.max(x + 1);
                    return Ok(x as u32);
                }
                self.frozen = true;
            } else if x < self.dense_len {
                self.mark(x);
                return Ok(x as u32);
            }
        } else if !self.frozen {
            self.frozen = true;
        }
        let distinct = self.distinct();
        let extra = &mut self.extra;
        let h = splitmix64(id as u64);
        if let Some(&k) = self.table.find(h, |&k| extra[k as usize] == id) {
            return Ok((self.dense_len + u64::from(k)) as u32);
        }
        let k = extra.len() as u64;
        if self.dense_len + k >= MAX_NODES || distinct >= MAX_NODES {
            return Err(Error::input(format!(
                "more than {MAX_NODES} distinct node ids (the format's limit)"
            )));
        }
        extra.push(id);
        self.table
            .insert_unique(h, k as u32, |&j| splitmix64(extra[j as usize] as u64));
        Ok((self.dense_len + k) as u32)
    }
}

/// String ids in insertion (provisional) order, with a hash table over them.
struct StrIds {
    offs: Vec<u64>,
    bytes: Vec<u8>,
    table: HashTable<u32>,
}

impl StrIds {
    fn new() -> Self {
        StrIds {
            offs: vec![0],
            bytes: Vec::new(),
            table: HashTable::new(),
        }
    }

    fn heap_bytes(&self) -> u64 {
        (self.offs.capacity() * 8 + self.bytes.capacity() + self.table.allocation_size()) as u64
    }

    #[inline]
    fn slice<'a>(offs: &[u64], bytes: &'a [u8], p: u32) -> &'a [u8] {
        &bytes[offs[p as usize] as usize..offs[p as usize + 1] as usize]
    }

    #[inline]
    fn get(&mut self, s: &str) -> Result<u32> {
        let s = s.as_bytes();
        let h = xxh3_64(s);
        let StrIds { offs, bytes, table } = self;
        if let Some(&p) = table.find(h, |&p| Self::slice(offs, bytes, p) == s) {
            return Ok(p);
        }
        let p = offs.len() as u64 - 1;
        if p >= MAX_NODES {
            return Err(Error::input(format!(
                "more than {MAX_NODES} distinct node ids (the format's limit)"
            )));
        }
        bytes.extend_from_slice(s);
        offs.push(bytes.len() as u64);
        table.insert_unique(h, p as u32, |&q| xxh3_64(Self::slice(offs, bytes, q)));
        Ok(p as u32)
    }
}

enum Ids {
    Implicit { limit: u64 },
    Int { ids: IntIds, collapse: bool },
    Str(StrIds),
}

impl Ids {
    fn heap_bytes(&self) -> u64 {
        match self {
            Ids::Implicit { .. } => 0,
            Ids::Int { ids, .. } => ids.heap_bytes(),
            Ids::Str(s) => s.heap_bytes(),
        }
    }
}

/// The final id table, in internal order.
enum FinalIds {
    Implicit,
    Int(Vec<i64>),
    /// Provisional indices in final (sorted) order, and the string storage.
    Str {
        order: Vec<u32>,
        offs: Vec<u64>,
        bytes: Vec<u8>,
    },
}

impl FinalIds {
    fn kind(&self) -> IdKind {
        match self {
            FinalIds::Implicit => IdKind::Implicit,
            FinalIds::Int(_) => IdKind::Int64,
            FinalIds::Str { .. } => IdKind::Utf8,
        }
    }
    fn id_bytes_len(&self) -> u64 {
        match self {
            FinalIds::Str { bytes, .. } => bytes.len() as u64,
            _ => 0,
        }
    }
    fn heap_bytes(&self) -> u64 {
        match self {
            FinalIds::Implicit => 0,
            FinalIds::Int(v) => v.capacity() as u64 * 8,
            FinalIds::Str { order, offs, bytes } => {
                (order.capacity() * 4 + offs.capacity() * 8 + bytes.capacity()) as u64
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// Temporary files

/// The temporary directory and its size accounting.
struct Scratch {
    dir: tempfile::TempDir,
    next: u64,
    bytes: u64,
    peak: u64,
}

impl Scratch {
    fn path(&mut self, what: &str) -> PathBuf {
        self.next += 1;
        self.dir.path().join(format!("{what}-{}.bin", self.next))
    }
    fn grew(&mut self, n: u64) {
        self.bytes += n;
        self.peak = self.peak.max(self.bytes);
    }
    fn remove(&mut self, path: &Path, n: u64) {
        let _ = fs::remove_file(path);
        self.bytes = self.bytes.saturating_sub(n);
    }
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    Ok(BufWriter::with_capacity(IO_BUF, f))
}

fn open(path: &Path, buf: usize) -> Result<BufReader<File>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(BufReader::with_capacity(buf, f))
}

/// Reads fixed-size records until EOF into `buf` (at most `buf.capacity()` bytes, a multiple
/// of `rec`). Returns the number of bytes read.
fn read_records(r: &mut impl Read, buf: &mut [u8], path: &Path) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(got)
}

#[inline]
fn rd_u32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Progress accounting for `finish`.
struct Ticker<'a> {
    hook: Option<&'a ProgressFn<'a>>,
    done: u64,
    total: u64,
    next: u64,
}

impl Ticker<'_> {
    #[inline]
    fn add(&mut self, k: u64) -> Result<()> {
        self.done += k;
        if self.done >= self.next {
            self.next = self.done + PROGRESS_EVERY;
            if let Some(h) = self.hook {
                if !h(self.done.min(self.total), self.total) {
                    return Err(Error::Cancelled);
                }
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// Output

/// Streams rows into the output: `indices` into the graph file, weights and strengths into
/// temporary files (their sections follow `indices`, whose final length is unknown until the
/// end).
struct Sink {
    weighted: bool,
    merge: Merge,
    indptr: Vec<u64>,
    next_row: usize,
    m: u64,
    self_loops: u64,
    idx: Vec<u32>,
    wts: Vec<f32>,
    st: Vec<f64>,
    h_idx: Xxh3Default,
    h_w: Xxh3Default,
    h_st: Xxh3Default,
    w_file: Option<(PathBuf, BufWriter<File>)>,
    st_file: Option<(PathBuf, BufWriter<File>)>,
    // streaming row state
    row_open: bool,
    row_strength: f64,
    last: Option<(u32, f32)>,
}

const SINK_BUF: usize = 1 << 16;

impl Sink {
    fn new(n: usize, weighted: bool, merge: Merge, scratch: &mut Scratch) -> Result<Sink> {
        let (w_file, st_file) = if weighted {
            let wp = scratch.path("weights");
            let sp = scratch.path("strength");
            let w = create(&wp)?;
            let s = create(&sp)?;
            (Some((wp, w)), Some((sp, s)))
        } else {
            (None, None)
        };
        let mut indptr = Vec::new();
        indptr
            .try_reserve_exact(n + 1)
            .map_err(|_| Error::input(format!("cannot allocate indptr for {n} nodes")))?;
        indptr.push(0);
        Ok(Sink {
            weighted,
            merge,
            indptr,
            next_row: 0,
            m: 0,
            self_loops: 0,
            idx: Vec::with_capacity(SINK_BUF),
            wts: Vec::with_capacity(if weighted { SINK_BUF } else { 0 }),
            st: Vec::with_capacity(if weighted { SINK_BUF / 2 } else { 0 }),
            h_idx: Xxh3Default::new(),
            h_w: Xxh3Default::new(),
            h_st: Xxh3Default::new(),
            w_file,
            st_file,
            row_open: false,
            row_strength: 0.0,
            last: None,
        })
    }

    fn flush(&mut self, out: &mut ChunkWriter, out_path: &Path) -> Result<()> {
        let b = as_bytes(&self.idx);
        self.h_idx.update(b);
        out.write_all(b).map_err(|e| Error::io(out_path, e))?;
        self.idx.clear();
        if let Some((p, f)) = &mut self.w_file {
            let b = as_bytes(&self.wts);
            self.h_w.update(b);
            f.write_all(b).map_err(|e| Error::io(&*p, e))?;
            self.wts.clear();
        }
        if let Some((p, f)) = &mut self.st_file {
            let b = as_bytes(&self.st);
            self.h_st.update(b);
            f.write_all(b).map_err(|e| Error::io(&*p, e))?;
            self.st.clear();
        }
        Ok(())
    }

    #[inline]
    fn maybe_flush(&mut self, out: &mut ChunkWriter, out_path: &Path) -> Result<()> {
        if self.idx.len() >= SINK_BUF || self.st.len() >= SINK_BUF / 2 {
            self.flush(out, out_path)?;
        }
        Ok(())
    }

    /// Closes empty rows up to (excluding) `v`.
    fn skip_to(&mut self, v: usize) {
        while self.next_row < v {
            self.indptr.push(self.m);
            if self.weighted {
                self.st.push(0.0);
            }
            self.next_row += 1;
        }
    }

    /// Writes the complete, sorted, duplicate-free row of node `v`.
    fn row(
        &mut self,
        v: usize,
        cols: &[u32],
        wts: Option<&[f32]>,
        out: &mut ChunkWriter,
        out_path: &Path,
    ) -> Result<()> {
        debug_assert!(v >= self.next_row && !self.row_open);
        self.skip_to(v);
        if cols.binary_search(&(v as u32)).is_ok() {
            self.self_loops += 1;
        }
        self.idx.extend_from_slice(cols);
        if let Some(w) = wts {
            self.wts.extend_from_slice(w);
            self.st.push(strength_of(w));
        }
        self.m += cols.len() as u64;
        self.indptr.push(self.m);
        self.next_row = v + 1;
        self.maybe_flush(out, out_path)
    }

    /// Streaming row API (for externally sorted buckets): arcs of one row in ascending `u`
    /// order, duplicates adjacent and in input order.
    fn stream_arc(
        &mut self,
        v: usize,
        u: u32,
        w: f32,
        out: &mut ChunkWriter,
        out_path: &Path,
    ) -> Result<()> {
        if !self.row_open || self.next_row != v {
            self.stream_end(out, out_path)?;
            self.skip_to(v);
            self.row_open = true;
            self.row_strength = 0.0;
        }
        match &mut self.last {
            Some((lu, lw)) if *lu == u => {
                *lw = match self.merge {
                    Merge::Sum => *lw + w,
                    Merge::Max => lw.max(w),
                };
                Ok(())
            }
            _ => {
                self.emit_last(v)?;
                self.last = Some((u, w));
                self.maybe_flush(out, out_path)
            }
        }
    }

    fn emit_last(&mut self, v: usize) -> Result<()> {
        if let Some((u, w)) = self.last.take() {
            if self.weighted {
                if !w.is_finite() {
                    return Err(Error::input(format!(
                        "merged weight of arc ({v}, {u}) overflows f32"
                    )));
                }
                self.wts.push(w);
                self.row_strength += f64::from(w);
            }
            if u as usize == v {
                self.self_loops += 1;
            }
            self.idx.push(u);
            self.m += 1;
        }
        Ok(())
    }

    fn stream_end(&mut self, out: &mut ChunkWriter, out_path: &Path) -> Result<()> {
        if self.row_open {
            let v = self.next_row;
            self.emit_last(v)?;
            if self.weighted {
                self.st.push(self.row_strength);
            }
            self.indptr.push(self.m);
            self.next_row = v + 1;
            self.row_open = false;
            self.maybe_flush(out, out_path)?;
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------
// The builder

/// Builds a graph file from edges given in chunks, with bounded memory. See the module docs.
pub struct ExternalBuilder {
    opts: BuildOptions,
    out: AtomicFile,
    scratch: Scratch,
    ids: Ids,
    counts: Vec<u32>,
    edges: Vec<[u32; 2]>,
    wbuf: Vec<f32>,
    edge_cap: usize,
    peak_node_bytes: u64,
    segments: Vec<(PathBuf, u64)>,
    input_edges: u64,
    self_loops_dropped: u64,
    kept_edges: u64,
    /// Largest provisional index seen + 1.
    p_hi: u64,
    start: Instant,
}

fn bad_weight(w: f64) -> Error {
    Error::input(format!(
        "weight {w} is invalid: weights must be finite and > 0"
    ))
}

/// Checks one weight (finite, > 0, representable as a positive finite f32).
#[inline]
pub fn check_weight(w: f64) -> Result<f32> {
    if !(w.is_finite() && w > 0.0) {
        return Err(bad_weight(w));
    }
    let x = w as f32;
    if !(x.is_finite() && x > 0.0) {
        return Err(Error::input(format!(
            "weight {w} is outside the float32 range (weights are stored as float32)"
        )));
    }
    Ok(x)
}

impl ExternalBuilder {
    /// Starts a build of `output`. The output directory must exist; nothing appears at `output`
    /// before `finish` succeeds.
    pub fn new(output: impl AsRef<Path>, opts: BuildOptions) -> Result<ExternalBuilder> {
        if opts.memory_limit < MIN_MEMORY_LIMIT {
            return Err(Error::param(format!(
                "memory_limit must be at least {MIN_MEMORY_LIMIT} bytes, got {}",
                opts.memory_limit
            )));
        }
        let mut ids_mode = opts.ids;
        if let Some(n) = opts.num_nodes {
            if n > MAX_NODES {
                return Err(Error::param(format!(
                    "num_nodes {n} exceeds the format's limit of {MAX_NODES} nodes"
                )));
            }
            match ids_mode {
                IdMode::Auto | IdMode::Implicit => ids_mode = IdMode::Implicit,
                _ => {
                    return Err(Error::param(
                        "num_nodes applies to implicit ids 0..num_nodes-1 (id_kind 'implicit' or 'auto')",
                    ))
                }
            }
        }
        let output = output.as_ref();
        // Creating the output's temporary file also removes stale leftovers in its directory;
        // a separate `tmp_dir` is cleaned here.
        let out = AtomicFile::create_graph(output)?;
        let name = output
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "graph".into());
        let dir = match &opts.tmp_dir {
            Some(d) => {
                crate::graph::replace::remove_stale(d, &name);
                d.clone()
            }
            None => match output.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            },
        };
        let dir = tempfile::Builder::new()
            .prefix(&format!(
                ".{name}.build-{}-",
                crate::graph::replace::owner_tag()
            ))
            .tempdir_in(&dir)
            .map_err(|e| Error::io(&dir, e))?;
        let ids = match ids_mode {
            IdMode::Implicit => Ids::Implicit {
                limit: opts.num_nodes.unwrap_or(MAX_NODES),
            },
            IdMode::Auto => Ids::Int {
                ids: IntIds::new(opts.memory_limit),
                collapse: true,
            },
            IdMode::Int => Ids::Int {
                ids: IntIds::new(opts.memory_limit),
                collapse: true,
            },
            IdMode::Str => Ids::Str(StrIds::new()),
        };
        let edge_cap = Self::edge_cap_for(&opts, 0);
        Ok(ExternalBuilder {
            opts,
            out,
            scratch: Scratch {
                dir,
                next: 0,
                bytes: 0,
                peak: 0,
            },
            ids,
            counts: Vec::new(),
            edges: Vec::new(),
            wbuf: Vec::new(),
            edge_cap,
            peak_node_bytes: 0,
            segments: Vec::new(),
            input_edges: 0,
            self_loops_dropped: 0,
            kept_edges: 0,
            p_hi: 0,
            start: Instant::now(),
        })
    }

    pub fn options(&self) -> &BuildOptions {
        &self.opts
    }

    /// Whether this builder takes string ids (`push_str`/`add_str`) rather than int ids.
    pub fn takes_str(&self) -> bool {
        matches!(self.ids, Ids::Str(_))
    }

    /// Edges given so far.
    pub fn input_edges(&self) -> u64 {
        self.input_edges
    }

    #[inline]
    fn int_index(&mut self, id: i64) -> Result<u32> {
        match &mut self.ids {
            Ids::Implicit { limit } => {
                if id < 0 || id as u64 >= *limit {
                    return Err(if id < 0 {
                        Error::input(format!(
                            "node id {id} is negative (implicit ids are 0..n-1)"
                        ))
                    } else if *limit == MAX_NODES {
                        Error::input(format!(
                            "node id {id} exceeds the largest implicit id {}",
                            MAX_NODES - 1
                        ))
                    } else {
                        Error::input(format!("node id {id} is outside 0..num_nodes-1 ({limit})"))
                    });
                }
                Ok(id as u32)
            }
            Ids::Int { ids, .. } => ids.get(id),
            Ids::Str(_) => Err(Error::input(
                "this builder takes string node ids, got an int id",
            )),
        }
    }

    #[inline]
    fn str_index(&mut self, id: &str) -> Result<u32> {
        match &mut self.ids {
            Ids::Str(s) => s.get(id),
            _ => Err(Error::input(format!(
                "this builder takes int node ids, got the string id {id:?}"
            ))),
        }
    }

    /// Edges the ingest buffer may hold: half of what the per-node structures leave.
    fn edge_cap_for(opts: &BuildOptions, node_bytes: u64) -> usize {
        let edge_bytes = if opts.weighted { 12 } else { 8 };
        (buffer_bytes(opts.memory_limit, node_bytes) / 2 / edge_bytes).max(64) as usize
    }

    /// Re-plans the edge buffer after the per-node structures grew.
    fn update_node_bytes(&mut self) {
        let nb = self.counts.capacity() as u64 * 4 + self.ids.heap_bytes();
        self.peak_node_bytes = self.peak_node_bytes.max(nb);
        self.edge_cap = Self::edge_cap_for(&self.opts, nb);
    }

    #[cold]
    fn grow_counts(&mut self, hi: usize) {
        let want = (hi + 1).max(self.counts.len() + self.counts.len() / 2);
        self.counts.resize(want, 0);
        self.update_node_bytes();
    }

    /// Grows the edge buffer by doubling, but never past `edge_cap` (plain `push` doubling
    /// could allocate up to twice the budget).
    #[cold]
    fn grow_edges(&mut self) {
        let len = self.edges.len();
        let add = len.max(4096).min(self.edge_cap.saturating_sub(len)).max(1);
        self.edges.reserve_exact(add);
        if self.opts.weighted {
            self.wbuf
                .reserve_exact(self.edges.capacity() - self.wbuf.len());
        }
    }

    #[inline]
    fn bump(&mut self, p: u32) -> Result<()> {
        let c = &mut self.counts[p as usize];
        *c = c.checked_add(1).ok_or_else(|| {
            Error::input(format!(
                "a node has more than {} incident arcs (the builder's limit)",
                u32::MAX
            ))
        })?;
        Ok(())
    }

    #[inline]
    fn push_index(&mut self, s: u32, d: u32, w: f32) -> Result<()> {
        self.input_edges += 1;
        let hi = s.max(d) as usize;
        if hi >= self.counts.len() {
            self.grow_counts(hi);
        }
        self.p_hi = self.p_hi.max(hi as u64 + 1);
        if s == d && self.opts.self_loops == SelfLoops::Drop {
            self.self_loops_dropped += 1;
            return Ok(());
        }
        self.bump(s)?;
        if !self.opts.directed && s != d {
            self.bump(d)?;
        }
        self.kept_edges += 1;
        if self.edges.len() == self.edges.capacity() {
            self.grow_edges();
        }
        self.edges.push([s, d]);
        if self.opts.weighted {
            self.wbuf.push(w);
        }
        if self.edges.len() >= self.edge_cap {
            self.spill()?;
        }
        Ok(())
    }

    /// Adds one edge with int ids. `w` must be finite and > 0 (ignored for unweighted builds).
    #[inline]
    pub fn push_int(&mut self, src: i64, dst: i64, w: f32) -> Result<()> {
        let s = self.int_index(src)?;
        let d = self.int_index(dst)?;
        self.push_index(s, d, w)
    }

    /// Adds one edge with string ids.
    #[inline]
    pub fn push_str(&mut self, src: &str, dst: &str, w: f32) -> Result<()> {
        let s = self.str_index(src)?;
        let d = self.str_index(dst)?;
        self.push_index(s, d, w)
    }

    /// Adds a node with an int id and no edges (isolated unless edges name it later).
    pub fn push_node_int(&mut self, id: i64) -> Result<()> {
        let p = self.int_index(id)?;
        self.note_node(p);
        Ok(())
    }

    /// Adds a node with a string id and no edges.
    pub fn push_node_str(&mut self, id: &str) -> Result<()> {
        let p = self.str_index(id)?;
        self.note_node(p);
        Ok(())
    }

    fn note_node(&mut self, p: u32) {
        if p as usize >= self.counts.len() {
            self.grow_counts(p as usize);
        }
        self.p_hi = self.p_hi.max(u64::from(p) + 1);
    }

    /// Whether a string id was given to this builder (false for int-id builders).
    pub fn has_str_id(&self, id: &[u8]) -> bool {
        match &self.ids {
            Ids::Str(s) => {
                let StrIds { offs, bytes, table } = s;
                table
                    .find(xxh3_64(id), |&p| StrIds::slice(offs, bytes, p) == id)
                    .is_some()
            }
            _ => false,
        }
    }

    fn check_batch(&self, len_s: usize, len_d: usize, weights: Option<usize>) -> Result<()> {
        if len_s != len_d {
            return Err(Error::input(format!(
                "src and dst have different lengths ({len_s} and {len_d})"
            )));
        }
        match (weights, self.opts.weighted) {
            (Some(k), true) if k != len_s => Err(Error::input(format!(
                "weights has length {k} but there are {len_s} edges"
            ))),
            (None, true) => Err(Error::input("this graph is weighted: give weights")),
            (Some(_), false) => Err(Error::input(
                "weights given, but the graph is unweighted (weighted=False)",
            )),
            _ => Ok(()),
        }
    }

    /// Adds edges with int ids; `weights` exactly when the build is weighted. On error, edges
    /// before the offending one have been added.
    pub fn add_int(&mut self, src: &[i64], dst: &[i64], weights: Option<&[f32]>) -> Result<()> {
        self.check_batch(src.len(), dst.len(), weights.map(<[f32]>::len))?;
        for (i, (&s, &d)) in src.iter().zip(dst).enumerate() {
            let w = match weights {
                Some(w) => check_weight(f64::from(w[i])).map_err(|e| at_edge(i, e))?,
                None => 1.0,
            };
            self.push_int(s, d, w).map_err(|e| at_edge(i, e))?;
        }
        Ok(())
    }

    /// Adds edges with string ids.
    pub fn add_str<S: AsRef<str>>(
        &mut self,
        src: &[S],
        dst: &[S],
        weights: Option<&[f32]>,
    ) -> Result<()> {
        self.check_batch(src.len(), dst.len(), weights.map(<[f32]>::len))?;
        for (i, (s, d)) in src.iter().zip(dst).enumerate() {
            let w = match weights {
                Some(w) => check_weight(f64::from(w[i])).map_err(|e| at_edge(i, e))?,
                None => 1.0,
            };
            self.push_str(s.as_ref(), d.as_ref(), w)
                .map_err(|e| at_edge(i, e))?;
        }
        Ok(())
    }

    /// Writes the edge buffer to a new segment file.
    fn spill(&mut self) -> Result<()> {
        if self.edges.is_empty() {
            return Ok(());
        }
        let path = self.scratch.path("segment");
        let mut f = create(&path)?;
        let n = self.edges.len() as u64;
        let rec = if self.opts.weighted { 12 } else { 8 };
        let mut buf = Vec::with_capacity(IO_BUF);
        for (i, e) in self.edges.iter().enumerate() {
            buf.extend_from_slice(&e[0].to_le_bytes());
            buf.extend_from_slice(&e[1].to_le_bytes());
            if self.opts.weighted {
                buf.extend_from_slice(&self.wbuf[i].to_le_bytes());
            }
            if buf.len() + rec > IO_BUF {
                f.write_all(&buf).map_err(|e| Error::io(&path, e))?;
                buf.clear();
            }
        }
        f.write_all(&buf).map_err(|e| Error::io(&path, e))?;
        f.flush().map_err(|e| Error::io(&path, e))?;
        self.scratch.grew(n * rec as u64);
        self.segments.push((path, n));
        self.edges.clear();
        self.wbuf.clear();
        self.update_node_bytes();
        if self.edges.capacity() > self.edge_cap + self.edge_cap / 4 {
            self.edges.shrink_to(self.edge_cap);
            self.wbuf.shrink_to(self.edge_cap);
        }
        Ok(())
    }

    /// Fixes the final node order. Returns (n, provisional -> final table or None for identity,
    /// final ids).
    fn resolve_ids(&mut self) -> Result<(usize, Option<Vec<u32>>, FinalIds)> {
        let ids = std::mem::replace(&mut self.ids, Ids::Implicit { limit: 0 });
        let p_len = self.counts.len();
        match ids {
            Ids::Implicit { limit } => {
                let n = if limit == MAX_NODES {
                    self.p_hi as usize
                } else {
                    limit as usize
                };
                Ok((n, None, FinalIds::Implicit))
            }
            Ids::Int { ids, collapse } => {
                let IntIds {
                    dense_len,
                    present,
                    dense_count,
                    extra,
                    table,
                    ..
                } = ids;
                drop(table);
                if collapse && extra.is_empty() && dense_count == dense_len {
                    return Ok((dense_len as usize, None, FinalIds::Implicit));
                }
                let n = (dense_count + extra.len() as u64) as usize;
                // Extra ids sorted; negative ones come before the dense range, the others after.
                let mut order: Vec<u32> = (0..extra.len() as u32).collect();
                order.sort_unstable_by_key(|&k| extra[k as usize]);
                let split = order.partition_point(|&k| extra[k as usize] < 0);
                let mut remap = vec![ABSENT; p_len.max(dense_len as usize + extra.len())];
                let mut out = Vec::with_capacity(n);
                for &k in &order[..split] {
                    remap[dense_len as usize + k as usize] = out.len() as u32;
                    out.push(extra[k as usize]);
                }
                for (w, &word) in present.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let p = (w as u64) * 64 + u64::from(bits.trailing_zeros());
                        bits &= bits - 1;
                        remap[p as usize] = out.len() as u32;
                        out.push(p as i64);
                    }
                }
                for &k in &order[split..] {
                    remap[dense_len as usize + k as usize] = out.len() as u32;
                    out.push(extra[k as usize]);
                }
                debug_assert_eq!(out.len(), n);
                let held = self.counts.capacity() * 4
                    + present.capacity() * 8
                    + extra.capacity() * 8
                    + order.capacity() * 4
                    + remap.capacity() * 4
                    + out.capacity() * 8;
                self.peak_node_bytes = self.peak_node_bytes.max(held as u64);
                Ok((n, Some(remap), FinalIds::Int(out)))
            }
            Ids::Str(s) => {
                let StrIds { offs, bytes, table } = s;
                drop(table);
                let n = offs.len() - 1;
                let mut order: Vec<u32> = (0..n as u32).collect();
                {
                    use rayon::slice::ParallelSliceMut;
                    let (o, b) = (&offs, &bytes);
                    order.par_sort_unstable_by(|&x, &y| {
                        StrIds::slice(o, b, x).cmp(StrIds::slice(o, b, y))
                    });
                }
                let mut remap = vec![ABSENT; p_len.max(n)];
                for (i, &p) in order.iter().enumerate() {
                    remap[p as usize] = i as u32;
                }
                let held = self.counts.capacity() * 4
                    + offs.capacity() * 8
                    + bytes.capacity()
                    + order.capacity() * 4
                    + remap.capacity() * 4;
                self.peak_node_bytes = self.peak_node_bytes.max(held as u64);
                Ok((n, Some(remap), FinalIds::Str { order, offs, bytes }))
            }
        }
    }

    /// Abandons the build: removes the temporary files; the target is left untouched.
    pub fn abort(self) {}

    /// Sorts, merges and writes the graph, then renames it over the target. `progress` is called
    /// with `(done, total)` work units (arcs distributed and arcs written); returning `false`
    /// cancels with `Error::Cancelled`.
    pub fn finish(mut self, progress: Option<&ProgressFn<'_>>) -> Result<BuildStats> {
        let (n, remap, final_ids) = self.resolve_ids()?;
        if n as u64 > MAX_NODES {
            return Err(Error::input(format!(
                "{n} nodes exceed the format's limit of {MAX_NODES}"
            )));
        }
        let remap_bytes = remap.as_ref().map_or(0, |r| r.capacity() as u64 * 4);
        let old_counts_bytes = if remap.is_some() {
            self.counts.capacity() as u64 * 4
        } else {
            0
        };
        // Arc counters in final order.
        let counts: Vec<u32> = match &remap {
            None => {
                let mut c = std::mem::take(&mut self.counts);
                c.resize(n, 0);
                c
            }
            Some(r) => {
                let mut c = vec![0u32; n];
                for (p, &cnt) in self.counts.iter().enumerate() {
                    if cnt > 0 {
                        c[r[p] as usize] = cnt;
                    }
                }
                self.counts = Vec::new();
                c
            }
        };
        // Held until the end: counters, remap table, final ids and `indptr` (the old counters
        // coexist with the new ones for a moment).
        let node_bytes = counts.capacity() as u64 * 4
            + remap_bytes
            + final_ids.heap_bytes()
            + (n as u64 + 1) * 8;
        self.peak_node_bytes = self.peak_node_bytes.max(node_bytes + old_counts_bytes);
        let buffers = buffer_bytes(self.opts.memory_limit, node_bytes);
        let total_arcs: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let weighted = self.opts.weighted;
        let scatter_bytes: u64 = if weighted { 8 } else { 4 };
        let cost = |c: u32| 16 + u64::from(c) * scatter_bytes;
        let budget = (buffers / 4 * 3).max(1024);
        let edge_bytes: u64 = if weighted { 12 } else { 8 };
        let spilled_edges: u64 = self.segments.iter().map(|s| s.1).sum();
        let mut ticker = Ticker {
            hook: progress,
            done: 0,
            total: spilled_edges + total_arcs,
            next: 0,
        };
        ticker.add(0)?;

        let indices_off = {
            let (t, _) = section_layout(&[
                Some((n as u64 + 1) * 8),
                Some(0),
                None,
                None,
                None,
                None,
                None,
                None,
            ]);
            t[Sec::Indices as usize].offset
        };
        let out_path = self.out.tmp_path().to_path_buf();
        let mut sink = Sink::new(n, weighted, self.opts.merge, &mut self.scratch)?;
        let in_memory_cost: u64 =
            counts.iter().map(|&c| cost(c)).sum::<u64>() + self.edges.len() as u64 * edge_bytes;
        let mut stats = BuildStats {
            segments: self.segments.len() as u64,
            memory_limit: self.opts.memory_limit,
            ..BuildStats::default()
        };
        {
            let out = self.out.writer();
            out.seek(SeekFrom::Start(indices_off))
                .map_err(|e| Error::io(&out_path, e))?;
        }
        if self.segments.is_empty() && in_memory_cost <= buffers {
            // Everything in memory: one bucket fed from the edge buffer.
            let edges = std::mem::take(&mut self.edges);
            let wbuf = std::mem::take(&mut self.wbuf);
            let directed = self.opts.directed;
            let r = remap.as_deref();
            let map = |p: u32| r.map_or(p, |r| r[p as usize]);
            let out = self.out.writer();
            scatter_bucket(
                0,
                n,
                &counts,
                weighted,
                self.opts.merge,
                |put| {
                    for (i, e) in edges.iter().enumerate() {
                        let (s, d) = (map(e[0]), map(e[1]));
                        let w = if weighted { wbuf[i] } else { 1.0 };
                        put(s, d, w);
                        if !directed && s != d {
                            put(d, s, w);
                        }
                    }
                    Ok(())
                },
                &mut sink,
                out,
                &out_path,
                &mut ticker,
            )?;
            stats.buckets = 1;
        } else {
            // Plan buckets of consecutive source nodes.
            let total_cost: u64 = counts.iter().map(|&c| cost(c)).sum();
            let target = budget.max(total_cost.div_ceil(MAX_BUCKETS as u64));
            let mut starts: Vec<u32> = vec![0];
            let mut cur = 0u64;
            for (v, &c) in counts.iter().enumerate() {
                if cur > 0 && cur + cost(c) > target {
                    starts.push(v as u32);
                    cur = 0;
                }
                cur += cost(c);
            }
            let nb = starts.len();
            let bucket_cost = |b: usize| -> u64 {
                let lo = starts[b] as usize;
                let hi = starts.get(b + 1).map_or(n, |&x| x as usize);
                counts[lo..hi].iter().map(|&c| cost(c)).sum()
            };
            // Distribute segments (and what is left in memory) into bucket files.
            let rec = if weighted { 12 } else { 8 };
            let wbuf_size = (budget as usize / 4 / nb).clamp(4096, IO_BUF) / rec * rec;
            let mut paths = Vec::with_capacity(nb);
            let mut writers = Vec::with_capacity(nb);
            for _ in 0..nb {
                let p = self.scratch.path("bucket");
                let f = File::create(&p).map_err(|e| Error::io(&p, e))?;
                writers.push(BufWriter::with_capacity(wbuf_size, f));
                paths.push(p);
            }
            let mut bucket_bytes = vec![0u64; nb];
            let in_buckets = std::cell::Cell::new(0u64);
            let directed = self.opts.directed;
            let r = remap.as_deref();
            let map = |p: u32| r.map_or(p, |r| r[p as usize]);
            let bucket_of = |v: u32| starts.partition_point(|&s| s <= v) - 1;
            let mut emit = |s: u32, d: u32, w: f32| -> Result<()> {
                let b = bucket_of(s);
                let mut rb = [0u8; 12];
                rb[..4].copy_from_slice(&s.to_le_bytes());
                rb[4..8].copy_from_slice(&d.to_le_bytes());
                rb[8..].copy_from_slice(&w.to_le_bytes());
                writers[b]
                    .write_all(&rb[..rec])
                    .map_err(|e| Error::io(&paths[b], e))?;
                bucket_bytes[b] += rec as u64;
                in_buckets.set(in_buckets.get() + rec as u64);
                Ok(())
            };
            let mut seg_buf = vec![0u8; IO_BUF / rec * rec];
            for (path, count) in std::mem::take(&mut self.segments) {
                let mut rd = open(&path, 0)?;
                loop {
                    let got = read_records(&mut rd, &mut seg_buf, &path)?;
                    if got == 0 {
                        break;
                    }
                    if got % rec != 0 {
                        return Err(Error::format(format!(
                            "{}: temporary segment file truncated",
                            path.display()
                        )));
                    }
                    for r in seg_buf[..got].chunks_exact(rec) {
                        let (s, d) = (map(rd_u32(r, 0)), map(rd_u32(r, 4)));
                        let w = if weighted {
                            f32::from_bits(rd_u32(r, 8))
                        } else {
                            1.0
                        };
                        emit(s, d, w)?;
                        if !directed && s != d {
                            emit(d, s, w)?;
                        }
                    }
                    ticker.add((got / rec) as u64)?;
                }
                drop(rd);
                self.scratch.remove(&path, count * rec as u64);
                self.scratch.peak = self.scratch.peak.max(self.scratch.bytes + in_buckets.get());
            }
            let edges = std::mem::take(&mut self.edges);
            let wbuf = std::mem::take(&mut self.wbuf);
            for (i, e) in edges.iter().enumerate() {
                let (s, d) = (map(e[0]), map(e[1]));
                let w = if weighted { wbuf[i] } else { 1.0 };
                emit(s, d, w)?;
                if !directed && s != d {
                    emit(d, s, w)?;
                }
            }
            drop(edges);
            drop(wbuf);
            for (w, p) in writers.into_iter().zip(&paths) {
                let f = w.into_inner().map_err(|e| Error::io(p, e.into_error()))?;
                drop(f);
            }
            let all: u64 = bucket_bytes.iter().sum();
            self.scratch.grew(all);
            // Process buckets in node order.
            for b in 0..nb {
                let lo = starts[b] as usize;
                let hi = starts.get(b + 1).map_or(n, |&x| x as usize);
                let path = &paths[b];
                let out = self.out.writer();
                if bucket_cost(b) <= budget {
                    scatter_bucket(
                        lo,
                        hi,
                        &counts,
                        weighted,
                        self.opts.merge,
                        |put| {
                            let mut rd = open(path, 0)?;
                            let mut buf = vec![0u8; IO_BUF / rec * rec];
                            loop {
                                let got = read_records(&mut rd, &mut buf, path)?;
                                if got == 0 {
                                    break;
                                }
                                for r in buf[..got].chunks_exact(rec) {
                                    let w = if weighted {
                                        f32::from_bits(rd_u32(r, 8))
                                    } else {
                                        1.0
                                    };
                                    put(rd_u32(r, 0), rd_u32(r, 4), w);
                                }
                            }
                            Ok(())
                        },
                        &mut sink,
                        out,
                        &out_path,
                        &mut ticker,
                    )?;
                } else {
                    stats.external_buckets += 1;
                    external_bucket(
                        path,
                        weighted,
                        budget,
                        &mut self.scratch,
                        &mut sink,
                        out,
                        &out_path,
                        &mut ticker,
                    )?;
                }
                self.scratch.remove(path, bucket_bytes[b]);
            }
            stats.buckets = nb as u64;
        }
        sink.stream_end(self.out.writer(), &out_path)?;
        sink.skip_to(n);
        sink.flush(self.out.writer(), &out_path)?;
        let m = sink.m;
        debug_assert_eq!(sink.indptr.len(), n + 1);

        // Remaining sections, in file order.
        let id_kind = final_ids.kind();
        let lens = section_lengths(n as u64, m, weighted, id_kind, final_ids.id_bytes_len());
        let (mut table, file_len) = section_layout(&lens);
        if table[Sec::Indices as usize].offset != indices_off {
            return Err(Error::format("internal error: indices section moved"));
        }
        table[Sec::Indices as usize].checksum = sink.h_idx.digest();
        let mut sw = SecWriter {
            out: self.out.writer(),
            path: &out_path,
            pos: indices_off + m * 4,
            h: Xxh3Default::new(),
            written: 0,
        };
        // The strength code of every node, for the `nbr_codes` section (n bytes).
        let mut node_code: Vec<u8> = Vec::new();
        if weighted {
            node_code.reserve_exact(n);
            for (sec, file, h) in [
                (Sec::Weights, sink.w_file.take(), &sink.h_w),
                (Sec::Strength, sink.st_file.take(), &sink.h_st),
            ] {
                let (p, w) = file.expect("weighted sink has temp files");
                let mut f = w.into_inner().map_err(|e| Error::io(&p, e.into_error()))?;
                let len = f.stream_position().map_err(|e| Error::io(&p, e))?;
                let s = &mut table[sec as usize];
                if len != s.len {
                    return Err(Error::format("internal error: section length mismatch"));
                }
                s.checksum = h.digest();
                sw.pad_to(s.offset)?;
                f.seek(SeekFrom::Start(0)).map_err(|e| Error::io(&p, e))?;
                if sec == Sec::Strength {
                    let mut rd = BufReader::with_capacity(IO_BUF, &mut f);
                    let mut buf = vec![0u8; IO_BUF];
                    loop {
                        let got = read_records(&mut rd, &mut buf, &p)?;
                        if got == 0 {
                            break;
                        }
                        node_code.extend(buf[..got].chunks_exact(8).map(|b| {
                            let st = f64::from_le_bytes(b.try_into().unwrap());
                            crate::graph::strength_code::code_of_strength(st)
                        }));
                        sw.out
                            .write_all(&buf[..got])
                            .map_err(|e| Error::io(&out_path, e))?;
                    }
                } else {
                    std::io::copy(&mut f, sw.out).map_err(|e| Error::io(&out_path, e))?;
                }
                sw.pos += len;
                drop(f);
                self.scratch.remove(&p, len);
            }
        } else {
            node_code.extend(
                sink.indptr
                    .windows(2)
                    .map(|w| crate::graph::strength_code::code_of_degree(w[1] - w[0])),
            );
        }
        if node_code.len() != n {
            return Err(Error::format("internal error: strength count mismatch"));
        }
        match &final_ids {
            FinalIds::Implicit => {}
            FinalIds::Int(ids) => {
                sw.begin(table[Sec::Ids as usize].offset)?;
                sw.put(as_bytes(ids))?;
                table[Sec::Ids as usize].checksum = sw.end(table[Sec::Ids as usize].len)?;
                sw.identity(n, &mut table[Sec::IdIndex as usize])?;
            }
            FinalIds::Str { order, offs, bytes } => {
                sw.begin(table[Sec::Ids as usize].offset)?;
                let mut buf: Vec<u64> = Vec::with_capacity(1 << 16);
                let mut acc = 0u64;
                buf.push(0);
                for &p in order {
                    acc += offs[p as usize + 1] - offs[p as usize];
                    buf.push(acc);
                    if buf.len() == 1 << 16 {
                        sw.put(as_bytes(&buf))?;
                        buf.clear();
                    }
                }
                sw.put(as_bytes(&buf))?;
                table[Sec::Ids as usize].checksum = sw.end(table[Sec::Ids as usize].len)?;
                sw.begin(table[Sec::IdBytes as usize].offset)?;
                for &p in order {
                    sw.put(StrIds::slice(offs, bytes, p))?;
                }
                table[Sec::IdBytes as usize].checksum = sw.end(table[Sec::IdBytes as usize].len)?;
                sw.identity(n, &mut table[Sec::IdIndex as usize])?;
            }
        }
        // nbr_codes: the indices written above, read back, each mapped to its node's code.
        sw.out.flush().map_err(|e| Error::io(&out_path, e))?;
        let mut rd = File::open(&out_path).map_err(|e| Error::io(&out_path, e))?;
        rd.seek(SeekFrom::Start(indices_off))
            .map_err(|e| Error::io(&out_path, e))?;
        put_nbr_codes(
            &mut sw,
            &mut rd.take(m * 4),
            &node_code,
            &mut table[Sec::NbrCodes as usize],
        )?;
        drop(node_code);
        // A trailing empty section still extends the file to its (aligned) offset.
        sw.pad_to(file_len)?;
        let out = sw.out;
        drop(final_ids);
        // indptr, then the header.
        let ip = as_bytes(&sink.indptr);
        table[Sec::Indptr as usize].checksum = xxh3_64(ip);
        out.seek(SeekFrom::Start(HEADER_LEN as u64))
            .map_err(|e| Error::io(&out_path, e))?;
        out.write_all(ip).map_err(|e| Error::io(&out_path, e))?;
        let header = Header {
            version: VERSION,
            directed: self.opts.directed,
            weighted,
            permuted: false,
            id_kind,
            num_nodes: n as u64,
            num_arcs: m,
            num_edges: count_edges(self.opts.directed, m, sink.self_loops),
            file_len,
            sections: table,
        };
        out.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&out_path, e))?;
        out.write_all(&header.encode())
            .map_err(|e| Error::io(&out_path, e))?;
        out.flush().map_err(|e| Error::io(&out_path, e))?;
        // The file may end in a hole (an empty last section at an aligned offset).
        out.get_ref()
            .set_len(file_len)
            .map_err(|e| Error::io(&out_path, e))?;
        if let Some(h) = progress {
            if !h(ticker.total, ticker.total) {
                return Err(Error::Cancelled);
            }
        }
        let ExternalBuilder {
            out,
            scratch,
            input_edges,
            self_loops_dropped,
            kept_edges,
            start,
            peak_node_bytes,
            ..
        } = self;
        out.commit()?;
        stats.num_nodes = n as u64;
        stats.num_arcs = m;
        stats.num_edges = header.num_edges;
        stats.input_edges = input_edges;
        stats.self_loops_dropped = self_loops_dropped;
        stats.duplicates_merged = kept_edges - header.num_edges;
        stats.id_kind = id_kind.name();
        stats.peak_tmp_bytes = scratch.peak;
        stats.peak_node_bytes = peak_node_bytes;
        stats.file_size = file_len;
        stats.nanos = start.elapsed().as_nanos() as u64;
        drop(scratch);
        Ok(stats)
    }
}

/// Writes sections of the output sequentially, with zero padding and streaming checksums.
pub(crate) struct SecWriter<'a> {
    pub(crate) out: &'a mut ChunkWriter,
    pub(crate) path: &'a Path,
    pub(crate) pos: u64,
    pub(crate) h: Xxh3Default,
    pub(crate) written: u64,
}

impl SecWriter<'_> {
    pub(crate) fn pad_to(&mut self, off: u64) -> Result<()> {
        if off < self.pos || off - self.pos >= 64 {
            return Err(Error::format("internal error: bad section offset"));
        }
        let zeros = [0u8; 64];
        self.out
            .write_all(&zeros[..(off - self.pos) as usize])
            .map_err(|e| Error::io(self.path, e))?;
        self.pos = off;
        Ok(())
    }
    pub(crate) fn begin(&mut self, off: u64) -> Result<()> {
        self.pad_to(off)?;
        self.h = Xxh3Default::new();
        self.written = 0;
        Ok(())
    }
    pub(crate) fn put(&mut self, b: &[u8]) -> Result<()> {
        self.h.update(b);
        self.written += b.len() as u64;
        self.pos += b.len() as u64;
        self.out.write_all(b).map_err(|e| Error::io(self.path, e))
    }
    /// Ends a section; returns its checksum.
    pub(crate) fn end(&mut self, expect_len: u64) -> Result<u64> {
        if self.written != expect_len {
            return Err(Error::format("internal error: section length mismatch"));
        }
        Ok(self.h.digest())
    }
    /// Writes `id_index` = the identity permutation (ids are stored sorted).
    fn identity(&mut self, n: usize, s: &mut crate::graph::format::Section) -> Result<()> {
        self.begin(s.offset)?;
        let mut buf: Vec<u32> = Vec::with_capacity(1 << 16);
        let mut v = 0usize;
        while v < n {
            let end = (v + (1 << 16)).min(n);
            buf.clear();
            buf.extend(v as u32..end as u32);
            self.put(as_bytes(&buf))?;
            v = end;
        }
        s.checksum = self.end(s.len)?;
        Ok(())
    }
}

/// Writes the `nbr_codes` section `s`: for each neighbour index read from `indices` (the
/// `indices` section's bytes), the code of that node in `node_code`.
pub(crate) fn put_nbr_codes(
    sw: &mut SecWriter<'_>,
    indices: &mut impl Read,
    node_code: &[u8],
    s: &mut crate::graph::format::Section,
) -> Result<()> {
    sw.begin(s.offset)?;
    let mut buf = vec![0u8; IO_BUF];
    let mut codes = Vec::with_capacity(IO_BUF / 4);
    let path = sw.path;
    loop {
        let got = read_records(indices, &mut buf, path)?;
        if got == 0 {
            break;
        }
        codes.clear();
        for b in buf[..got].chunks_exact(4) {
            let u = u32::from_le_bytes(b.try_into().unwrap()) as usize;
            let c = node_code
                .get(u)
                .ok_or_else(|| Error::format("internal error: neighbour index out of range"))?;
            codes.push(*c);
        }
        sw.put(&codes)?;
    }
    s.checksum = sw.end(s.len)?;
    Ok(())
}

fn at_edge(i: usize, e: Error) -> Error {
    match e {
        Error::InvalidInput(m) => Error::InvalidInput(format!("edge {i}: {m}")),
        other => other,
    }
}

/// Section lengths of a graph (`None`: absent), in table order.
pub(crate) fn section_lengths(
    n: u64,
    m: u64,
    weighted: bool,
    id_kind: IdKind,
    id_bytes_len: u64,
) -> [Option<u64>; NUM_SECTIONS] {
    let mut l = [None; NUM_SECTIONS];
    l[Sec::Indptr as usize] = Some((n + 1) * 8);
    l[Sec::Indices as usize] = Some(m * 4);
    if weighted {
        l[Sec::Weights as usize] = Some(m * 4);
        l[Sec::Strength as usize] = Some(n * 8);
    }
    match id_kind {
        IdKind::Implicit => {}
        IdKind::Int64 => {
            l[Sec::Ids as usize] = Some(n * 8);
            l[Sec::IdIndex as usize] = Some(n * 4);
        }
        IdKind::Utf8 => {
            l[Sec::Ids as usize] = Some((n + 1) * 8);
            l[Sec::IdBytes as usize] = Some(id_bytes_len);
            l[Sec::IdIndex as usize] = Some(n * 4);
        }
    }
    l[Sec::NbrCodes as usize] = Some(m);
    l
}

/// Builds the rows of nodes `lo..hi` in memory: arcs (fed in input order by `feed`) are
/// scattered into rows by a counting sort, then each row is sorted and merged exactly as
/// `csr_from_edges` does.
#[allow(clippy::too_many_arguments)]
fn scatter_bucket(
    lo: usize,
    hi: usize,
    counts: &[u32],
    weighted: bool,
    merge: Merge,
    feed: impl FnOnce(&mut dyn FnMut(u32, u32, f32)) -> Result<()>,
    sink: &mut Sink,
    out: &mut ChunkWriter,
    out_path: &Path,
    ticker: &mut Ticker<'_>,
) -> Result<()> {
    let k = hi - lo;
    let mut fill = Vec::with_capacity(k + 1);
    let mut acc = 0u64;
    fill.push(0u64);
    for &c in &counts[lo..hi] {
        acc += u64::from(c);
        fill.push(acc);
    }
    let total = acc as usize;
    let starts = fill.clone();
    let mut cols = vec![0u32; total];
    let mut wts = vec![0f32; if weighted { total } else { 0 }];
    let mut overflow = false;
    // One random access per arc (fill[r]); a row that overflows its range is detected after
    // the loop by comparing `fill` with the next row's start.
    feed(&mut |s: u32, d: u32, w: f32| {
        let r = (s as usize).wrapping_sub(lo);
        let Some(f) = fill.get_mut(r) else {
            overflow = true;
            return;
        };
        let p = *f as usize;
        *f += 1;
        match cols.get_mut(p) {
            Some(c) => *c = d,
            None => overflow = true,
        }
        if weighted {
            if let Some(x) = wts.get_mut(p) {
                *x = w;
            }
        }
    })?;
    if overflow || fill[..k] != starts[1..] || fill[k] != starts[k] {
        return Err(Error::format(
            "internal error: bucket arc counts do not match (temporary files modified?)",
        ));
    }
    drop(fill);
    let mut pairs: Vec<(u32, f32)> = Vec::new();
    let mut done = 0u64;
    for r in 0..k {
        let (s, e) = (starts[r] as usize, starts[r + 1] as usize);
        let v = lo + r;
        if s == e {
            continue;
        }
        if weighted {
            pairs.clear();
            pairs.extend(cols[s..e].iter().copied().zip(wts[s..e].iter().copied()));
            let out_n =
                crate::graph::build::merge_row(v, &mut pairs, merge, &mut cols, &mut wts, s)?;
            sink.row(v, &cols[s..out_n], Some(&wts[s..out_n]), out, out_path)?;
        } else {
            let row = &mut cols[s..e];
            row.sort_unstable();
            let mut out_n = 0;
            for i in 0..row.len() {
                if i == 0 || row[i] != row[out_n - 1] {
                    row[out_n] = row[i];
                    out_n += 1;
                }
            }
            sink.row(v, &cols[s..s + out_n], None, out, out_path)?;
        }
        done += (e - s) as u64;
        if done >= PROGRESS_EVERY {
            ticker.add(done)?;
            done = 0;
        }
    }
    ticker.add(done)
}

/// One sorted run of arcs: `(key = src << 32 | dst, weight)` records.
struct Run {
    path: PathBuf,
    bytes: u64,
}

fn run_rec(weighted: bool) -> usize {
    if weighted {
        12
    } else {
        8
    }
}

/// Sorts a bucket too large for memory: sorted runs of at most `budget` bytes, then a stable
/// k-way merge (ties by run order, i.e. input order) streamed into the sink.
#[allow(clippy::too_many_arguments)]
fn external_bucket(
    path: &Path,
    weighted: bool,
    budget: u64,
    scratch: &mut Scratch,
    sink: &mut Sink,
    out: &mut ChunkWriter,
    out_path: &Path,
    ticker: &mut Ticker<'_>,
) -> Result<()> {
    let rec = if weighted { 12 } else { 8 };
    let rrec = run_rec(weighted);
    let cap = ((budget / 16) as usize).max(1024);
    let mut rd = open(path, IO_BUF)?;
    let mut runs: Vec<Run> = Vec::new();
    let mut items: Vec<(u64, f32)> = Vec::with_capacity(cap);
    let mut buf = vec![0u8; IO_BUF / rec * rec];
    let mut pending_len = 0usize;
    let mut pending_off = 0usize;
    let mut eof = false;
    loop {
        items.clear();
        while items.len() < cap {
            if pending_off >= pending_len {
                if eof {
                    break;
                }
                let got = read_records(&mut rd, &mut buf, path)?;
                if got == 0 {
                    eof = true;
                    break;
                }
                pending_len = got;
                pending_off = 0;
            }
            let r = &buf[pending_off..pending_off + rec];
            pending_off += rec;
            let key = (u64::from(rd_u32(r, 0)) << 32) | u64::from(rd_u32(r, 4));
            let w = if weighted {
                f32::from_bits(rd_u32(r, 8))
            } else {
                1.0
            };
            items.push((key, w));
        }
        if items.is_empty() {
            break;
        }
        if weighted {
            items.sort_by_key(|x| x.0); // stable: duplicates stay in input order
        } else {
            items.sort_unstable_by_key(|x| x.0);
            items.dedup_by_key(|x| x.0);
        }
        let rp = scratch.path("run");
        let mut w = create(&rp)?;
        let mut b = Vec::with_capacity(IO_BUF);
        for &(k, x) in &items {
            b.extend_from_slice(&k.to_le_bytes());
            if weighted {
                b.extend_from_slice(&x.to_le_bytes());
            }
            if b.len() + rrec > IO_BUF {
                w.write_all(&b).map_err(|e| Error::io(&rp, e))?;
                b.clear();
            }
        }
        w.write_all(&b).map_err(|e| Error::io(&rp, e))?;
        w.flush().map_err(|e| Error::io(&rp, e))?;
        let bytes = (items.len() * rrec) as u64;
        scratch.grew(bytes);
        runs.push(Run { path: rp, bytes });
        if eof && pending_off >= pending_len {
            break;
        }
    }
    drop(items);
    drop(rd);
    // Reduce the fan-in, merging the oldest runs first so run order stays input order.
    while runs.len() > FANIN {
        let group: Vec<Run> = runs.drain(..FANIN).collect();
        let rp = scratch.path("run");
        let mut w = create(&rp)?;
        let mut bytes = 0u64;
        merge_runs(&group, weighted, &mut |k, x| {
            w.write_all(&k.to_le_bytes())
                .map_err(|e| Error::io(&rp, e))?;
            if weighted {
                w.write_all(&x.to_le_bytes())
                    .map_err(|e| Error::io(&rp, e))?;
            }
            bytes += rrec as u64;
            Ok(())
        })?;
        w.flush().map_err(|e| Error::io(&rp, e))?;
        drop(w);
        scratch.grew(bytes);
        for r in &group {
            scratch.remove(&r.path, r.bytes);
        }
        runs.insert(0, Run { path: rp, bytes });
    }
    let mut done = 0u64;
    merge_runs(&runs, weighted, &mut |k, x| {
        sink.stream_arc((k >> 32) as usize, k as u32, x, out, out_path)?;
        done += 1;
        if done >= PROGRESS_EVERY {
            ticker.add(done)?;
            done = 0;
        }
        Ok(())
    })?;
    sink.stream_end(out, out_path)?;
    ticker.add(done)?;
    for r in &runs {
        scratch.remove(&r.path, r.bytes);
    }
    Ok(())
}

/// Stable k-way merge of sorted runs: records with equal keys come out in run order.
fn merge_runs(
    runs: &[Run],
    weighted: bool,
    emit: &mut dyn FnMut(u64, f32) -> Result<()>,
) -> Result<()> {
    let rrec = run_rec(weighted);
    let buf = (IO_BUF / runs.len().max(1)).max(1 << 14);
    let mut readers = Vec::with_capacity(runs.len());
    for r in runs {
        readers.push(open(&r.path, buf)?);
    }
    let mut next = |i: usize| -> Result<Option<(u64, f32)>> {
        let mut b = [0u8; 12];
        let got = read_records(&mut readers[i], &mut b[..rrec], &runs[i].path)?;
        if got == 0 {
            return Ok(None);
        }
        if got != rrec {
            return Err(Error::format("internal error: truncated run file"));
        }
        let k = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let w = if weighted {
            f32::from_bits(rd_u32(&b, 8))
        } else {
            1.0
        };
        Ok(Some((k, w)))
    };
    let mut heap = BinaryHeap::with_capacity(runs.len());
    let mut cur_w = vec![0f32; runs.len()];
    for (i, w) in cur_w.iter_mut().enumerate() {
        if let Some((k, x)) = next(i)? {
            *w = x;
            heap.push(Reverse((k, i)));
        }
    }
    while let Some(Reverse((k, i))) = heap.pop() {
        emit(k, cur_w[i])?;
        if let Some((k2, x)) = next(i)? {
            cur_w[i] = x;
            heap.push(Reverse((k2, i)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_over_its_budget_says_by_how_much() {
        let mut st = BuildStats {
            num_nodes: 1000,
            peak_node_bytes: 3 << 20,
            memory_limit: 3 << 20,
            ..BuildStats::default()
        };
        assert_eq!(st.over_budget(), None, "at the limit, it held");
        st.memory_limit = 1 << 20;
        let msg = st.over_budget().unwrap();
        assert!(msg.starts_with("memory_limit 1 MiB was exceeded"), "{msg}");
        assert!(
            msg.contains("of 1000 nodes alone took 3 MiB (3146 B per node)"),
            "{msg}"
        );
        assert!(msg.contains("Give at least 0.3 GiB"), "{msg}");
    }
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable};
    use crate::graph::csr::Graph;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(1);
            splitmix64(self.0)
        }
        fn below(&mut self, k: u64) -> u64 {
            self.next() % k
        }
    }

    /// The in-memory reference: ids -> dense indices (sorted), `csr_from_edges`, `save`.
    fn reference(
        dir: &Path,
        src: &[i64],
        dst: &[i64],
        w: Option<&[f32]>,
        opts: &BuildOptions,
    ) -> Vec<u8> {
        let mut all: Vec<i64> = src.iter().chain(dst).copied().collect();
        all.sort_unstable();
        all.dedup();
        let implicit = match opts.ids {
            IdMode::Implicit => true,
            IdMode::Auto | IdMode::Int => all.iter().enumerate().all(|(i, &x)| x == i as i64),
            IdMode::Str => false,
        };
        let n = if implicit {
            opts.num_nodes
                .map_or(all.last().map_or(0, |&x| x as usize + 1), |k| k as usize)
        } else {
            all.len()
        };
        let idx = |x: i64| -> u32 {
            if implicit {
                x as u32
            } else {
                all.binary_search(&x).unwrap() as u32
            }
        };
        let keep: Vec<usize> = (0..src.len())
            .filter(|&i| opts.self_loops == SelfLoops::Keep || src[i] != dst[i])
            .collect();
        let s: Vec<u32> = keep.iter().map(|&i| idx(src[i])).collect();
        let d: Vec<u32> = keep.iter().map(|&i| idx(dst[i])).collect();
        let ww: Option<Vec<f32>> = w.map(|w| keep.iter().map(|&i| w[i]).collect());
        let ids = if implicit {
            IdTable::Implicit
        } else {
            IdTable::Int(all.clone())
        };
        let p = csr_from_edges(n, &s, &d, ww.as_deref(), opts.directed, opts.merge, ids).unwrap();
        let g = build_in_memory(&p).unwrap();
        g.validate().unwrap();
        let path = dir.join("ref.graph");
        save(&g, &path).unwrap();
        std::fs::read(&path).unwrap()
    }

    fn external(
        dir: &Path,
        src: &[i64],
        dst: &[i64],
        w: Option<&[f32]>,
        opts: &BuildOptions,
        chunk: usize,
    ) -> (Vec<u8>, BuildStats) {
        let path = dir.join("ext.graph");
        let mut b = ExternalBuilder::new(&path, opts.clone()).unwrap();
        let mut i = 0;
        while i < src.len() {
            let j = (i + chunk).min(src.len());
            b.add_int(&src[i..j], &dst[i..j], w.map(|w| &w[i..j]))
                .unwrap();
            i = j;
        }
        let stats = b.finish(None).unwrap();
        let g = Graph::open(&path).unwrap();
        g.validate().unwrap();
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with('.')),
            "temporary files left: {names:?}"
        );
        (std::fs::read(&path).unwrap(), stats)
    }

    fn random_edges(
        rng: &mut Rng,
        n: u64,
        m: usize,
        ids: &dyn Fn(u64) -> i64,
    ) -> (Vec<i64>, Vec<i64>, Vec<f32>) {
        let mut s = Vec::new();
        let mut d = Vec::new();
        let mut w = Vec::new();
        for _ in 0..m {
            // skewed: node 0 is a hub
            let a = if rng.below(5) == 0 { 0 } else { rng.below(n) };
            let b = rng.below(n);
            s.push(ids(a));
            d.push(ids(b));
            w.push([0.5f32, 1.0, 1.25, 3.0, 1e-3][rng.below(5) as usize]);
        }
        (s, d, w)
    }

    #[test]
    fn byte_identical_to_in_memory_builder_in_every_mode() {
        let mut rng = Rng(42);
        let dir = tempfile::tempdir().unwrap();
        type IdMap = Box<dyn Fn(u64) -> i64>;
        let id_maps: [(&str, IdMap); 3] = [
            ("dense", Box::new(|x| x as i64)),
            ("sparse", Box::new(|x| x as i64 * 7919 - 50_000)),
            (
                "huge",
                Box::new(|x| (splitmix64(x) >> 1) as i64 * if x % 2 == 0 { 1 } else { -1 }),
            ),
        ];
        let mut external_seen = false;
        for (name, f) in &id_maps {
            for &(n, m) in &[(1u64, 3usize), (50, 400), (600, 5000)] {
                let (s, d, w) = random_edges(&mut rng, n, m, f.as_ref());
                for directed in [false, true] {
                    for weighted in [false, true] {
                        for ids in [IdMode::Auto, IdMode::Int] {
                            for self_loops in [SelfLoops::Keep, SelfLoops::Drop] {
                                for merge in [Merge::Sum, Merge::Max] {
                                    if merge == Merge::Max && !weighted {
                                        continue;
                                    }
                                    for memory_limit in [DEFAULT_MEMORY_LIMIT, 4096, 20_000] {
                                        if memory_limit == 20_000 && m < 5000 {
                                            continue;
                                        }
                                        let opts = BuildOptions {
                                            directed,
                                            weighted,
                                            ids,
                                            self_loops,
                                            merge,
                                            memory_limit,
                                            ..BuildOptions::default()
                                        };
                                        let wopt = weighted.then_some(&w[..]);
                                        let want = reference(dir.path(), &s, &d, wopt, &opts);
                                        let (got, st) =
                                            external(dir.path(), &s, &d, wopt, &opts, 97);
                                        assert!(
                                            got == want,
                                            "{name} n={n} m={m} {opts:?}: files differ"
                                        );
                                        assert_eq!(st.input_edges, m as u64);
                                        if memory_limit == 4096 && m == 5000 {
                                            assert!(st.segments > 10 && st.buckets > 1, "{st:?}");
                                            external_seen |= st.external_buckets > 0;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(external_seen, "the external-sort path was not exercised");
    }

    #[test]
    fn implicit_ids_with_num_nodes_and_isolated_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let s = [0i64, 3, 3, 5];
        let d = [3i64, 0, 5, 5];
        for num_nodes in [None, Some(9)] {
            let opts = BuildOptions {
                ids: IdMode::Implicit,
                num_nodes,
                ..BuildOptions::default()
            };
            let want = reference(dir.path(), &s, &d, None, &opts);
            let (got, st) = external(dir.path(), &s, &d, None, &opts, 2);
            assert_eq!(got, want);
            assert_eq!(st.num_nodes, num_nodes.unwrap_or(6));
            assert_eq!(st.id_kind, "implicit");
            assert_eq!(st.num_edges, 3); // 0-3 (twice), 3-5, 5-5
            assert_eq!(st.duplicates_merged, 1);
        }
        // Auto with gaps stores int64 ids (the Graph.from_edges rule).
        let (_, st) = external(dir.path(), &s, &d, None, &BuildOptions::default(), 10);
        assert_eq!((st.id_kind, st.num_nodes), ("int64", 3));
    }

    #[test]
    fn string_ids_sorted_bytewise() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.graph");
        let opts = BuildOptions {
            ids: IdMode::Str,
            weighted: true,
            memory_limit: 4096,
            ..BuildOptions::default()
        };
        let names: Vec<String> = (0..500)
            .map(|i| format!("n{}é", splitmix64(i) % 300))
            .collect();
        let mut b = ExternalBuilder::new(&path, opts).unwrap();
        for i in 0..499 {
            b.push_str(&names[i], &names[i + 1], 1.0 + (i % 3) as f32)
                .unwrap();
        }
        let st = b.finish(None).unwrap();
        let g = Graph::open(&path).unwrap();
        g.validate().unwrap();
        let mut uniq = names.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(st.num_nodes as usize, uniq.len());
        // Reference via the in-memory builder.
        let idx = |x: &String| uniq.binary_search(x).unwrap() as u32;
        let s: Vec<u32> = names[..499].iter().map(idx).collect();
        let d: Vec<u32> = names[1..].iter().map(idx).collect();
        let w: Vec<f32> = (0..499).map(|i| 1.0 + (i % 3) as f32).collect();
        let p = csr_from_edges(
            uniq.len(),
            &s,
            &d,
            Some(&w),
            false,
            Merge::Sum,
            IdTable::Str(uniq.clone()),
        )
        .unwrap();
        let r = build_in_memory(&p).unwrap();
        assert_eq!(g.image(), r.image());
        assert_eq!(g.lookup_str(&uniq[7]).unwrap(), Some(7));
    }

    #[test]
    fn errors_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.graph");
        let empty = |dir: &Path| std::fs::read_dir(dir).unwrap().count() == 0;
        let opts = BuildOptions {
            ids: IdMode::Implicit,
            num_nodes: Some(3),
            memory_limit: 4096,
            ..BuildOptions::default()
        };
        let mut b = ExternalBuilder::new(&path, opts.clone()).unwrap();
        for i in 0..2000 {
            b.push_int(i % 3, (i + 1) % 3, 1.0).unwrap();
        }
        let e = b.add_int(&[0, 1], &[1, 3], None).unwrap_err();
        assert!(
            e.to_string().contains("edge 1") && e.to_string().contains("outside"),
            "{e}"
        );
        assert!(matches!(
            b.push_int(-1, 0, 1.0),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            b.add_int(&[0], &[1, 2], None),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            b.add_int(&[0], &[1], Some(&[1.0])),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            b.push_str("a", "b", 1.0),
            Err(Error::InvalidInput(_))
        ));
        drop(b);
        assert!(empty(dir.path()));
        // Weighted: invalid weights.
        let wopts = BuildOptions {
            weighted: true,
            ..BuildOptions::default()
        };
        let mut b = ExternalBuilder::new(&path, wopts).unwrap();
        for bad in [f32::NAN, f32::INFINITY, -1.0, 0.0] {
            assert!(matches!(
                b.add_int(&[0], &[1], Some(&[bad])),
                Err(Error::InvalidInput(_))
            ));
        }
        assert!(matches!(
            b.add_int(&[0], &[1], None),
            Err(Error::InvalidInput(_))
        ));
        assert!(check_weight(1e300).is_err() && check_weight(1e-300).is_err());
        // Merged weights overflowing f32.
        b.add_int(&[0, 1], &[1, 0], Some(&[3e38, 3e38])).unwrap();
        assert!(matches!(b.finish(None), Err(Error::InvalidInput(_))));
        assert!(empty(dir.path()));
        // Cancellation from the progress hook.
        let mut b = ExternalBuilder::new(&path, opts).unwrap();
        for i in 0..5000 {
            b.push_int(i % 3, (i + 1) % 3, 1.0).unwrap();
        }
        let calls = std::cell::Cell::new(0);
        let hook = |_d: u64, _t: u64| {
            calls.set(calls.get() + 1);
            false
        };
        assert!(matches!(b.finish(Some(&hook)), Err(Error::Cancelled)));
        assert_eq!(calls.get(), 1);
        assert!(empty(dir.path()));
        // Bad parameters.
        let p = |o: BuildOptions| ExternalBuilder::new(&path, o).err().unwrap();
        assert!(matches!(
            p(BuildOptions {
                memory_limit: 10,
                ..Default::default()
            }),
            Error::InvalidParameter(_)
        ));
        assert!(matches!(
            p(BuildOptions {
                ids: IdMode::Str,
                num_nodes: Some(3),
                ..Default::default()
            }),
            Error::InvalidParameter(_)
        ));
        assert!(matches!(
            ExternalBuilder::new(dir.path().join("missing/x.graph"), BuildOptions::default()),
            Err(Error::Io { .. })
        ));
        assert!(empty(dir.path()));
    }

    #[test]
    fn empty_and_existing_targets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.graph");
        std::fs::write(&path, b"old").unwrap();
        // Dropping keeps the old file.
        drop(ExternalBuilder::new(&path, BuildOptions::default()).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let st = ExternalBuilder::new(&path, BuildOptions::default())
            .unwrap()
            .finish(None)
            .unwrap();
        assert_eq!((st.num_nodes, st.num_arcs), (0, 0));
        let g = Graph::open(&path).unwrap();
        g.validate().unwrap();
        let r = build_in_memory(
            &csr_from_edges(0, &[], &[], None, false, Merge::Sum, IdTable::Implicit).unwrap(),
        )
        .unwrap();
        assert_eq!(g.image(), r.image());
    }
}
