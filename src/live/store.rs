//! Live graphs: edges added and removed after conversion, visible to queries at once, without
//! a rebuild (semantics in docs/LIVE.md, file format in docs/FORMAT.md, "Change log").
//!
//! A graph file `GRAPH` may have a change log `GRAPH.live` next to it (see `log.rs`). Every
//! commit appends the operations and, for each node whose row changed, a record: a delta on
//! its older row (the arcs set and removed) or, once the deltas would outweigh it, its whole
//! new row (sorted like a rebuilt file's, with its strength); then a level of the index from
//! node to record (sorted runs merged by the binary-counter rule). A reader maps the log and,
//! for a node with a record, reads that row, merging a delta chain with the row beneath it;
//! every other node's row comes from the base file. Nothing is replayed when a graph is opened
//! or queried: opening reads the 256-byte log head, one commit record and its level
//! directory, and a query searches the levels for each row it reads. Graphs without a log (or
//! with a log that changes nothing) read the base file exactly as before, through the same
//! code.
//!
//! New nodes get the next internal indices. A rebuilt file would number nodes in id order, so
//! a live graph is like a renumbered ("permuted", see `reorder.rs`) file: rows are kept in the
//! order of their neighbours' external ids, the push performs the same operations on the same
//! nodes, and embeddings and PPR vectors are bit-identical to those of a rebuild.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::graph::build::{strength_of, Merge};
use crate::graph::csr::{Graph, NodeId};
use crate::graph::format::IdKind;
use crate::live::log::{
    best_slot, decode_ops, pad8, rd_u64, read_log, LogHeader, LogId, Op, OpsHeader, SegmentBuf,
    Slot, Trailer, DATA_START, DELTA_FLAG, DELTA_HEADER_LEN, DIR_MAGIC, FENCE_STRIDE,
    LEVEL_DIR_MAGIC, LEVEL_HEADER_LEN, LEVEL_MAGIC, MAX_LEVELS, OPS_HEADER_LEN, RECORD_HEADER_LEN,
    RUN_HEADER_LEN, RUN_MAGIC, SLOT_LEN, SLOT_OFFSETS, TRAILER_LEN, TRAILER_PERMUTED,
};

/// The change log of the graph file `base`: `base` with `.live` appended.
pub fn log_path(base: &Path) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(".live");
    PathBuf::from(s)
}

/// The writers' lock file of `base`: `base` with `.lock` appended. Never replaced, so the lock
/// survives compactions (which replace the graph and the log by rename).
pub fn lock_path(base: &Path) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// A file's identity: replaced files (rename) get another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileIdent(u64, u64);

fn ident(meta: &std::fs::Metadata) -> FileIdent {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        FileIdent(meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let t = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        FileIdent(meta.len(), t)
    }
}

/// What a reader knows about the change log it opened (for `refresh` and `info`).
#[derive(Clone, Debug)]
pub struct LogState {
    pub(crate) base_ident: FileIdent,
    /// None when there was no log file.
    pub(crate) log_ident: Option<FileIdent>,
    pub info: LogInfo,
}

/// Cheap facts about a change log (from its newest commit record).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogInfo {
    /// Whether `GRAPH.live` exists.
    pub exists: bool,
    /// Commits in the log (0 for a new or just compacted log).
    pub commits: u64,
    pub adds: u64,
    pub removes: u64,
    /// Nodes whose row lives in the log.
    pub changed_nodes: u64,
    /// Nodes created by the log (not in the base file).
    pub new_nodes: u64,
    /// Committed bytes of the log file.
    pub bytes: u64,
    pub merge_max: bool,
}

/// The base file's identity as a log records it: its header checksum and length.
fn base_identity(g: &Graph) -> (u64, u64) {
    let img = g.image();
    (rd_u64(img, 248), img.len() as u64)
}

enum Bytes {
    Map(Mmap),
    /// `u64` storage so typed views are aligned.
    Owned(Vec<u64>, usize),
}

impl Bytes {
    fn get(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            // SAFETY: a Vec<u64> of v.len() words holds 8 * v.len() >= len initialised bytes.
            Bytes::Owned(v, len) => unsafe {
                std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), *len)
            },
        }
    }
}

/// A run of ids of created nodes: nodes `first .. first + count` (consecutive), their ids in
/// node order and a permutation of `0..count` sorting them.
#[derive(Clone, Copy, Debug)]
struct Run {
    first: u32,
    count: u32,
    /// Offset of `i64[count]` (int ids) or `u64[count + 1]` string offsets.
    ids: u64,
    /// utf8: offset and length of the string bytes.
    bytes: u64,
    bytes_len: u64,
    /// Offset of `u32[count]`.
    order: u64,
    /// Offset of the run's header.
    at: u64,
}

/// A node's whole row as the log stores it.
pub(crate) struct Rec<'a> {
    pub nbrs: &'a [u32],
    pub wts: &'a [f32],
    pub strength: f64,
}

/// A node's row as a delta on an older row: the neighbours it sets (value > 0: the arc's
/// weight, 1 on unweighted graphs) or removes (value 0), sorted like rows.
pub(crate) struct Delta<'a> {
    pub nbrs: &'a [u32],
    pub vals: &'a [f32],
    pub strength: f64,
    pub degree: u32,
    /// Delta records in the chain, this one included.
    pub chain: u32,
    /// The older record (0: the row beneath is the graph file's, or empty for a created node).
    pub older: u64,
}

/// A record of the log.
pub(crate) enum Record<'a> {
    Row(Rec<'a>),
    Delta(Delta<'a>),
}

impl Record<'_> {
    pub(crate) fn degree(&self) -> u64 {
        match self {
            Record::Row(r) => r.nbrs.len() as u64,
            Record::Delta(d) => u64::from(d.degree),
        }
    }
}

/// A row merged from the log's deltas, and the work space that merging needs.
#[derive(Default)]
pub struct RowBuf {
    pub(crate) nbrs: Vec<u32>,
    pub(crate) wts: Vec<f32>,
    acc: Vec<(u32, f32)>,
    tmp: Vec<(u32, f32)>,
}

/// Merges two sorted runs of `(neighbour, value)` into `out`; on equal neighbours `newer`'s
/// entry wins. `cmp` orders neighbours like rows (by index, or by id in a permuted graph).
fn compose(
    older: (&[u32], &[f32]),
    newer: &[(u32, f32)],
    cmp: &impl Fn(u32, u32) -> Result<Ordering>,
    out: &mut Vec<(u32, f32)>,
) -> Result<()> {
    out.clear();
    let (on, ov) = older;
    let (mut i, mut j) = (0, 0);
    while i < on.len() || j < newer.len() {
        let order = if i == on.len() {
            Ordering::Greater
        } else if j == newer.len() {
            Ordering::Less
        } else {
            cmp(on[i], newer[j].0)?
        };
        match order {
            Ordering::Less => {
                out.push((on[i], ov[i]));
                i += 1;
            }
            _ => {
                out.push(newer[j]);
                i += usize::from(order.is_eq());
                j += 1;
            }
        }
    }
    Ok(())
}

/// One committed state of a change log, mapped: the rows, the tree and the created ids.
pub struct Overlay {
    data: Bytes,
    /// Committed end: nothing at or past it is read.
    end: u64,
    pub(crate) trailer: Trailer,
    slot: Slot,
    header: LogHeader,
    base_n: u32,
    n: u32,
    runs: Vec<Run>,
    /// The index's levels, newest first (see [`Level`]).
    levels: Vec<Level>,
    /// One bit per node: whether its row is in the log (see `build_changed`). Empty when the
    /// index could not be read whole (lookups then search it and report what is wrong).
    changed: OnceLock<ChangedIndex>,
}

/// The index of a snapshot in memory (see [`Overlay::build_changed`]): a bitmap of the nodes
/// with a record, the count of set bits before each word, and each such node's index entry
/// in node order. A lookup is then a bit test and a popcount, however many levels the log has.
#[derive(Default)]
struct ChangedIndex {
    bits: Box<[u64]>,
    ranks: Box<[u32]>,
    entries: Box<[[u64; 2]]>,
}

impl ChangedIndex {
    /// `v`'s entry, or None when it has no record (`v < n`; a failed build holds nothing and
    /// answers None for every node, and `unchanged` is then false for every node).
    #[inline(always)]
    fn entry(&self, v: u32) -> Option<[u64; 2]> {
        let w = *self.bits.get(v as usize / 64)?;
        let bit = 1u64 << (v % 64);
        if w & bit == 0 {
            return None;
        }
        let rank = self.ranks[v as usize / 64] + (w & (bit - 1)).count_ones();
        self.entries.get(rank as usize).copied()
    }
}

/// A level of the index: `count` nodes ascending, each with its newest record's offset and
/// its row's strength (its degree on unweighted graphs), so that the push reads a threshold
/// without touching the record. A node's entry is in the newest level that holds it.
#[derive(Clone, Copy, Debug)]
struct Level {
    /// Offset of the level's header.
    at: u64,
    count: u64,
    /// Offsets of `u32[fences]` (every `FENCE_STRIDE`-th node), `u32[count]` nodes and
    /// `u64[2 * count]` entries (record offset, strength bits).
    fence: u64,
    fences: u64,
    nodes: u64,
    entries: u64,
}

impl Level {
    /// The level's layout at `at`, whose header says it holds `count` nodes.
    fn layout(at: u64, count: u64) -> Option<Level> {
        let fences = count.div_ceil(FENCE_STRIDE as u64);
        let fence = at.checked_add(LEVEL_HEADER_LEN as u64)?;
        let nodes = fence.checked_add(pad8(fences.checked_mul(4)?))?;
        let entries = nodes.checked_add(pad8(count.checked_mul(4)?))?;
        entries.checked_add(count.checked_mul(16)?)?;
        Some(Level {
            at,
            count,
            fence,
            fences,
            nodes,
            entries,
        })
    }

    fn end(&self) -> u64 {
        self.entries + 16 * self.count
    }
}

impl Overlay {
    /// Reads the commit named by `slot` (O(1) plus the run directory, at most ~64 entries).
    fn new(data: Bytes, header: LogHeader, slot: Slot, base: &Graph) -> Result<Overlay> {
        let bytes = data.get();
        let (trailer, c) = Trailer::decode(bytes, slot.trailer)?;
        if c != slot.trailer_checksum || trailer.seq != slot.seq {
            return Err(Error::format(
                "change log corrupted: the superblock does not match its commit record",
            ));
        }
        let base_n = base.base_num_nodes() as u32;
        if trailer.num_nodes < u64::from(base_n) {
            return Err(Error::format(
                "change log corrupted: fewer nodes than the base file",
            ));
        }
        let mut o = Overlay {
            data,
            end: slot.trailer,
            trailer,
            slot,
            header,
            base_n,
            n: trailer.num_nodes as u32,
            runs: Vec::new(),
            levels: Vec::new(),
            changed: OnceLock::new(),
        };
        o.runs = o.read_runs(base.id_kind())?;
        o.levels = o.read_levels()?;
        Ok(o)
    }

    fn bytes(&self) -> &[u8] {
        self.data.get()
    }

    #[cfg(unix)]
    pub(crate) fn advise(&self, advice: memmap2::Advice) {
        if let Bytes::Map(m) = &self.data {
            let _ = m.advise(advice);
        }
    }

    /// `count` items of `T` at `off`, inside the committed bytes and aligned.
    fn slice<T: Copy>(&self, off: u64, count: u64) -> Result<&[T]> {
        let size = std::mem::size_of::<T>() as u64;
        let end = count
            .checked_mul(size)
            .and_then(|l| off.checked_add(l))
            .filter(|&e| off >= DATA_START && off % size == 0 && e <= self.end)
            .ok_or_else(|| {
                Error::format(format!(
                    "change log corrupted: a reference to [{off}, +{count}) lies outside it"
                ))
            })?;
        let _ = end;
        let b = self.bytes();
        // SAFETY: in bounds (checked above, end <= self.end <= b.len()) and aligned (offsets are
        // multiples of the item size and the map or Vec<u64> base is 8-byte aligned); every bit
        // pattern is a valid u32/u64/f32/f64/i64.
        Ok(unsafe {
            std::slice::from_raw_parts(b.as_ptr().add(off as usize).cast::<T>(), count as usize)
        })
    }

    fn read_runs(&self, kind: IdKind) -> Result<Vec<Run>> {
        let t = &self.trailer;
        let bad = |m: &str| Error::format(format!("change log corrupted: {m}"));
        if t.runs == 0 {
            if kind != IdKind::Implicit && t.num_nodes > u64::from(self.base_n) {
                return Err(bad("created nodes have no ids"));
            }
            return Ok(Vec::new());
        }
        if kind == IdKind::Implicit {
            return Err(bad("id runs in a graph with implicit ids"));
        }
        let head: &[u32] = self.slice(t.runs, 2)?;
        if head[0] != DIR_MAGIC || head[1] as u64 > 64 {
            return Err(bad("bad id-run directory"));
        }
        let offs: &[u64] = self.slice(t.runs + 8, u64::from(head[1]))?;
        let mut runs = Vec::with_capacity(offs.len());
        let mut next = u64::from(self.base_n);
        for &at in offs {
            let h: &[u64] = self.slice(at, 4)?;
            if h[0] != u64::from(RUN_MAGIC) || h[1] != next || h[2] == 0 {
                return Err(bad("bad id run"));
            }
            let (first, count, bytes_len) = (h[1], h[2], h[3]);
            if count > t.num_nodes || first + count > t.num_nodes {
                return Err(bad("id run past the node count"));
            }
            let ids = at + RUN_HEADER_LEN as u64;
            let (bytes, order) = if kind == IdKind::Utf8 {
                let b = ids + 8 * (count + 1);
                let b_end = b.checked_add(bytes_len).ok_or_else(|| bad("bad id run"))?;
                (b, pad8(b_end))
            } else {
                (0, ids + 8 * count)
            };
            // Bounds of every part (the values are checked when read).
            self.slice::<u64>(
                ids,
                if kind == IdKind::Utf8 {
                    count + 1
                } else {
                    count
                },
            )?;
            self.slice::<u32>(order, count)?;
            if kind == IdKind::Utf8 {
                self.slice::<u8>(bytes, bytes_len)?;
            }
            runs.push(Run {
                first: first as u32,
                count: count as u32,
                ids,
                bytes,
                bytes_len,
                order,
                at,
            });
            next = first + count;
        }
        if next != t.num_nodes {
            return Err(bad("id runs do not cover the created nodes"));
        }
        Ok(runs)
    }

    /// Every commit's checksums and operations (see `livelog::read_log`), up to this one.
    pub(crate) fn verify(&self) -> Result<()> {
        crate::live::log::read_log_at(self.bytes(), self.slot).map(|_| ())
    }

    /// The index entry of `v` (`v < n`): its newest record's offset (0: none) and the row's
    /// strength (its degree on unweighted graphs), which the push's thresholds read without
    /// touching the record. Searches the levels newest first: in each, the fence (one entry
    /// per 4 KiB of nodes) and then one page of its nodes.
    #[inline]
    fn leaf(&self, v: u32) -> Result<(u64, f64)> {
        if let Some(c) = self.changed.get().filter(|c| !c.bits.is_empty()) {
            return Ok(c
                .entry(v)
                .map_or((0, 0.0), |e| (e[0], f64::from_bits(e[1]))));
        }
        for l in &self.levels {
            if let Some(k) = self.find_in(l, v)? {
                let e: &[u64] = self.slice(l.entries + 16 * k, 2)?;
                return Ok((e[0], f64::from_bits(e[1])));
            }
        }
        Ok((0, 0.0))
    }

    /// The block of `l`'s nodes that may hold `v`: its first index and its nodes.
    #[inline]
    fn block_of(&self, l: &Level, v: u32) -> Result<(u64, &[u32])> {
        let fence: &[u32] = self.slice(l.fence, l.fences)?;
        let b = fence.partition_point(|&x| x <= v).saturating_sub(1) as u64;
        let first = b * FENCE_STRIDE as u64;
        let len = (l.count - first.min(l.count)).min(FENCE_STRIDE as u64);
        Ok((first, self.slice(l.nodes + 4 * first, len)?))
    }

    /// `v`'s position in level `l`, if it has one.
    #[inline]
    fn find_in(&self, l: &Level, v: u32) -> Result<Option<u64>> {
        let (first, block) = self.block_of(l, v)?;
        Ok(block.binary_search(&v).ok().map(|k| first + k as u64))
    }

    /// Reads the level directory named by the trailer (O(levels)).
    fn read_levels(&self) -> Result<Vec<Level>> {
        let t = &self.trailer;
        if t.index == 0 {
            return Ok(Vec::new());
        }
        let bad = || Error::format("change log corrupted: its index is malformed");
        let head: &[u32] = self.slice(t.index, 2)?;
        if head[0] != LEVEL_DIR_MAGIC || head[1] != t.levels {
            return Err(bad());
        }
        let offs: &[u64] = self.slice(t.index + 8, u64::from(t.levels))?;
        let mut out = Vec::with_capacity(offs.len());
        for &at in offs {
            let head: &[u64] = self.slice(at, 3)?;
            if head[0] != u64::from(LEVEL_MAGIC) || head[1] == 0 || head[2] != 0 {
                return Err(bad());
            }
            let l = Level::layout(at, head[1]).ok_or_else(bad)?;
            if l.end() > self.end {
                return Err(bad());
            }
            out.push(l);
        }
        Ok(out)
    }

    /// Read-ahead hint for the bytes `[off, off + len)` of the mapped log, unless every page
    /// of it was hinted in this query (`hinted`, shared with the graph file's hints: log pages
    /// are keyed with a high bit set).
    #[cfg(unix)]
    fn will_need(&self, off: u64, len: u64, hinted: &mut std::collections::HashSet<usize>) {
        const LOG_PAGE: usize = 1 << 62;
        if let Bytes::Map(m) = &self.data {
            let end = off.saturating_add(len).min(self.end);
            if off >= end {
                return;
            }
            let (first, last) = (off / 4096, (end - 1) / 4096);
            let mut fresh = last - first > 64;
            if !fresh {
                for page in first..=last {
                    fresh |= hinted.insert(LOG_PAGE | page as usize);
                }
            }
            if fresh {
                let _ = m.advise_range(
                    memmap2::Advice::WillNeed,
                    off as usize,
                    (end - off) as usize,
                );
            }
        }
    }

    /// Read-ahead hints (asynchronous) for the fences of the index's levels, for a graph
    /// opened with `prefetch`: every lookup reads its level's fence (4 bytes per 1,024
    /// changed nodes: 80 KB for 20 M), which on a cold file would otherwise be read one
    /// synchronous fault at a time.
    #[cfg(unix)]
    pub(crate) fn hint_inner_pages(&self) {
        let Bytes::Map(m) = &self.data else {
            return;
        };
        for l in &self.levels {
            let len = (4 * l.fences).min(self.end - l.fence);
            let _ = m.advise_range(memmap2::Advice::WillNeed, l.fence as usize, len as usize);
        }
    }

    /// Hints the index entry of `v` (its threshold): in each level, the page of nodes that
    /// may hold it and the entries of that page (reads only the fences).
    #[cfg(unix)]
    pub(crate) fn prefetch_leaf(&self, v: u32, hinted: &mut std::collections::HashSet<usize>) {
        for l in &self.levels {
            let Ok(fence) = self.slice::<u32>(l.fence, l.fences) else {
                return;
            };
            let b = fence.partition_point(|&x| x <= v).saturating_sub(1) as u64;
            let first = b * FENCE_STRIDE as u64;
            let len = (l.count - first.min(l.count)).min(FENCE_STRIDE as u64);
            self.will_need(l.nodes + 4 * first, 4 * len, hinted);
            self.will_need(l.entries + 16 * first, 16 * len, hinted);
        }
    }

    /// Hints `v`'s row record when it has one (returns whether it has). A record may be a delta
    /// on the base file's row: the caller hints that row too.
    #[cfg(unix)]
    pub(crate) fn prefetch_record(
        &self,
        v: u32,
        hinted: &mut std::collections::HashSet<usize>,
    ) -> bool {
        match self.leaf(v) {
            Ok((off, strength)) if off != 0 => {
                // A whole row's length is known on unweighted graphs (the leaf holds the
                // degree), a delta's is not: hint at most 16 pages (a delta fits in the first).
                let len = if self.header.weighted {
                    4096
                } else {
                    (RECORD_HEADER_LEN as u64)
                        .saturating_add((strength as u64).saturating_mul(4))
                        .min(1 << 16)
                };
                self.will_need(off, len, hinted);
                true
            }
            _ => false,
        }
    }

    /// Whether `v`'s row is known not to be in the log, without walking the tree: true only
    /// once the bitmap of changed nodes is built (`build_changed`) and `v`'s bit is clear.
    #[inline(always)]
    pub(crate) fn unchanged(&self, v: u32) -> bool {
        match self.changed.get() {
            Some(c) => c
                .bits
                .get(v as usize / 64)
                .is_some_and(|w| w & (1 << (v % 64)) == 0),
            None => false,
        }
    }

    /// Builds the bitmap of nodes whose row is in the log (n/8 bytes, once per snapshot):
    /// afterwards a lookup of an unchanged node skips the search of the index, which on a
    /// graph of tens of millions of nodes costs cache misses (the push looks up every node it
    /// deposits on). Reads the node arrays of every level, so `Graph::note_work` calls it
    /// only once the pushes on this snapshot have done enough work to pay for it.
    pub(crate) fn build_changed(&self) {
        self.changed.get_or_init(|| {
            #[cfg(unix)]
            self.advise(memmap2::Advice::Sequential);
            let built = self.changed_index();
            #[cfg(unix)]
            self.advise(memmap2::Advice::Random);
            built.unwrap_or_default()
        });
    }

    fn changed_index(&self) -> Result<ChangedIndex> {
        let n = self.n as usize;
        let mut bits = vec![0u64; n.div_ceil(64)];
        for l in &self.levels {
            let nodes: &[u32] = self.slice(l.nodes, l.count)?;
            if nodes.iter().any(|&v| v as usize >= n) {
                return Err(Error::format("change log corrupted: a node out of range"));
            }
            for &v in nodes {
                bits[v as usize / 64] |= 1 << (v % 64);
            }
        }
        let mut ranks = Vec::with_capacity(bits.len());
        let mut total = 0u32;
        for w in &bits {
            ranks.push(total);
            total += w.count_ones();
        }
        let mut index = ChangedIndex {
            bits: bits.into_boxed_slice(),
            ranks: ranks.into_boxed_slice(),
            entries: vec![[0u64; 2]; total as usize].into_boxed_slice(),
        };
        // Newest level first: a node's entry is the first one found.
        let mut entries = std::mem::take(&mut index.entries);
        for l in &self.levels {
            let nodes: &[u32] = self.slice(l.nodes, l.count)?;
            let vals: &[u64] = self.slice(l.entries, 2 * l.count)?;
            for (k, &v) in nodes.iter().enumerate() {
                let w = index.bits[v as usize / 64];
                let rank = index.ranks[v as usize / 64] + (w & ((1 << (v % 64)) - 1)).count_ones();
                let e = &mut entries[rank as usize];
                if e[0] == 0 {
                    *e = [vals[2 * k], vals[2 * k + 1]];
                }
            }
        }
        index.entries = entries;
        Ok(index)
    }

    #[inline]
    fn entry(&self, v: u32) -> Result<u64> {
        self.leaf(v).map(|e| e.0)
    }

    /// The strength (unweighted: degree) of `v`'s row in the log, or None when the row is
    /// not in the log. `v < n`.
    #[inline]
    pub(crate) fn strength(&self, v: u32) -> Result<Option<f64>> {
        let (off, s) = self.leaf(v)?;
        Ok((off != 0).then_some(s))
    }

    /// `v`'s newest record in the log, or None when its row is the base file's (or empty, for
    /// a created node). `v < n`.
    #[inline]
    pub(crate) fn record(&self, v: u32) -> Result<Option<Record<'_>>> {
        match self.entry(v)? {
            0 => Ok(None),
            off => self.record_at(v, off).map(Some),
        }
    }

    /// The record of `v` at `off`.
    pub(crate) fn record_at(&self, v: u32, off: u64) -> Result<Record<'_>> {
        let head: &[u32] = self.slice(off, 4)?;
        let (node, count) = (head[0], head[1]);
        if node != v {
            return Err(Error::format(format!(
                "change log corrupted: the row of node {v} is that of node {node}"
            )));
        }
        let strength = f64::from_bits(rd_u64(self.bytes(), off as usize + 8));
        if count & DELTA_FLAG == 0 {
            let deg = u64::from(count);
            let nb_off = off + RECORD_HEADER_LEN as u64;
            let nbrs: &[u32] = self.slice(nb_off, deg)?;
            let wts: &[f32] = if self.header.weighted {
                self.slice(pad8(nb_off + 4 * deg), deg)?
            } else {
                &[]
            };
            return Ok(Record::Row(Rec {
                nbrs,
                wts,
                strength,
            }));
        }
        let count = u64::from(count & !DELTA_FLAG);
        let more: &[u64] = self.slice(off + 16, 2)?;
        let older = more[0];
        let (degree, chain) = (more[1] as u32, (more[1] >> 32) as u32);
        // Older records lie before this one: a chain always ends.
        if older != 0 && older >= off || chain == 0 || older == 0 && chain != 1 {
            return Err(Error::format(format!(
                "change log corrupted: the delta chain of node {v} is malformed"
            )));
        }
        let nb_off = off + DELTA_HEADER_LEN as u64;
        let nbrs: &[u32] = self.slice(nb_off, count)?;
        let vals: &[f32] = self.slice(pad8(nb_off + 4 * count), count)?;
        Ok(Record::Delta(Delta {
            nbrs,
            vals,
            strength,
            degree,
            chain,
            older,
        }))
    }

    /// Merges `v`'s row from its delta `d`, the deltas beneath it and the row beneath them
    /// (`base`: the graph file's row, or empty for a created node) into `buf`. Rows are sorted
    /// by index when `by_index`, else by `cmp` (by id, in a permuted graph). The deltas are composed first (newest wins), then merged with the
    /// row in one pass: O(row + deltas).
    pub(crate) fn merge_row(
        &self,
        v: u32,
        d: &Delta<'_>,
        base: (&[u32], &[f32]),
        by_index: bool,
        cmp: &impl Fn(u32, u32) -> Result<Ordering>,
        buf: &mut RowBuf,
    ) -> Result<()> {
        let RowBuf {
            nbrs,
            wts,
            acc,
            tmp,
        } = buf;
        acc.clear();
        acc.extend(d.nbrs.iter().copied().zip(d.vals.iter().copied()));
        let mut older = d.older;
        let mut whole: Option<Rec<'_>> = None;
        let mut deltas = 1;
        while older != 0 {
            match self.record_at(v, older)? {
                Record::Delta(o) => {
                    deltas += 1;
                    compose((o.nbrs, o.vals), acc, cmp, tmp)?;
                    std::mem::swap(acc, tmp);
                    older = o.older;
                }
                Record::Row(r) => {
                    whole = Some(r);
                    break;
                }
            }
        }
        if deltas != d.chain {
            return Err(Error::format(format!(
                "change log corrupted: the delta chain of node {v} is malformed"
            )));
        }
        let (bn, bw) = match &whole {
            Some(r) => (r.nbrs, r.wts),
            None => base,
        };
        let weighted = self.header.weighted;
        nbrs.clear();
        wts.clear();
        if by_index {
            // Rows sorted by index: copy the row's runs between the deltas' entries, each
            // found by binary search (O(row) copying plus O(deltas log row) comparisons).
            let mut i = 0;
            for &(u, x) in acc.iter() {
                let k = i + bn[i..].partition_point(|&b| b < u);
                nbrs.extend_from_slice(&bn[i..k]);
                if weighted {
                    wts.extend_from_slice(&bw[i..k]);
                }
                i = k + usize::from(bn.get(k) == Some(&u));
                if x > 0.0 {
                    nbrs.push(u);
                    if weighted {
                        wts.push(x);
                    }
                } else if x != 0.0 {
                    return Err(Error::format(format!(
                        "change log corrupted: a delta of node {v} holds the value {x}"
                    )));
                }
            }
            nbrs.extend_from_slice(&bn[i..]);
            if weighted {
                wts.extend_from_slice(&bw[i..]);
            }
            return self.check_merged(v, d, nbrs.len());
        }
        let (mut i, mut j) = (0, 0);
        while i < bn.len() || j < acc.len() {
            let order = if i == bn.len() {
                Ordering::Greater
            } else if j == acc.len() {
                Ordering::Less
            } else {
                cmp(bn[i], acc[j].0)?
            };
            if order.is_lt() {
                nbrs.push(bn[i]);
                if weighted {
                    wts.push(bw[i]);
                }
                i += 1;
            } else {
                let (u, x) = acc[j];
                if x > 0.0 {
                    nbrs.push(u);
                    if weighted {
                        wts.push(x);
                    }
                } else if x != 0.0 {
                    return Err(Error::format(format!(
                        "change log corrupted: a delta of node {v} holds the value {x}"
                    )));
                }
                i += usize::from(order.is_eq());
                j += 1;
            }
        }
        self.check_merged(v, d, nbrs.len())
    }

    /// A merged row must have the degree its newest delta records.
    fn check_merged(&self, v: u32, d: &Delta<'_>, len: usize) -> Result<()> {
        if len as u64 != u64::from(d.degree) {
            return Err(Error::format(format!(
                "change log corrupted: the delta chain of node {v} gives {len} arcs, not {}",
                d.degree
            )));
        }
        Ok(())
    }

    pub(crate) fn num_nodes(&self) -> usize {
        self.n as usize
    }
    pub(crate) fn base_n(&self) -> u32 {
        self.base_n
    }

    fn run_of(&self, v: u32) -> Result<&Run> {
        let i = self.runs.partition_point(|r| r.first <= v);
        self.runs
            .get(i.wrapping_sub(1))
            .filter(|r| v - r.first < r.count)
            .ok_or_else(|| Error::format(format!("change log has no id for node {v}")))
    }

    fn run_int(&self, r: &Run, k: u32) -> Result<i64> {
        Ok(self.slice::<u64>(r.ids + 8 * u64::from(k), 1)?[0] as i64)
    }

    fn run_str(&self, r: &Run, k: u32) -> Result<&str> {
        let o: &[u64] = self.slice(r.ids + 8 * u64::from(k), 2)?;
        let (s, e) = (o[0], o[1]);
        if s > e || e > r.bytes_len {
            return Err(Error::format(format!(
                "change log corrupted: bad string id offsets of node {}",
                r.first + k
            )));
        }
        let b: &[u8] = self.slice(r.bytes + s, e - s)?;
        std::str::from_utf8(b).map_err(|_| {
            Error::format(format!(
                "change log corrupted: string id of node {} is not valid UTF-8",
                r.first + k
            ))
        })
    }

    /// The id of a created node `v` (`base_n <= v < n`; implicit ids: `v` itself).
    pub(crate) fn new_id(&self, v: u32, kind: IdKind) -> Result<NodeId<'_>> {
        match kind {
            IdKind::Implicit => Ok(NodeId::Int(i64::from(v))),
            IdKind::Int64 => {
                let r = self.run_of(v)?;
                Ok(NodeId::Int(self.run_int(r, v - r.first)?))
            }
            IdKind::Utf8 => {
                let r = self.run_of(v)?;
                Ok(NodeId::Str(self.run_str(r, v - r.first)?))
            }
        }
    }

    /// Binary search of each run for an id; `cmp(k)` compares the run's `k`-th id to the target.
    fn search_runs(
        &self,
        mut cmp: impl FnMut(&Run, u32) -> Result<Ordering>,
    ) -> Result<Option<u32>> {
        for r in &self.runs {
            let order: &[u32] = self.slice(r.order, u64::from(r.count))?;
            let (mut lo, mut hi) = (0usize, order.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let k = order[mid];
                if k >= r.count {
                    return Err(Error::format("change log corrupted: bad id-run order"));
                }
                match cmp(r, k)? {
                    Ordering::Less => lo = mid + 1,
                    Ordering::Greater => hi = mid,
                    Ordering::Equal => return Ok(Some(r.first + k)),
                }
            }
        }
        Ok(None)
    }

    pub(crate) fn lookup_int(&self, id: i64) -> Result<Option<u32>> {
        self.search_runs(|r, k| Ok(self.run_int(r, k)?.cmp(&id)))
    }

    pub(crate) fn lookup_str(&self, id: &str) -> Result<Option<u32>> {
        self.search_runs(|r, k| Ok(self.run_str(r, k)?.as_bytes().cmp(id.as_bytes())))
    }

    /// The created nodes sorted by id.
    pub(crate) fn new_nodes_by_id(&self, kind: IdKind) -> Result<Vec<u32>> {
        let mut v: Vec<u32> = (self.base_n..self.n).collect();
        match kind {
            IdKind::Implicit => {}
            IdKind::Int64 => {
                let ids = v
                    .iter()
                    .map(|&x| match self.new_id(x, kind)? {
                        NodeId::Int(i) => Ok(i),
                        NodeId::Str(_) => unreachable!(),
                    })
                    .collect::<Result<Vec<i64>>>()?;
                v.sort_unstable_by_key(|&x| ids[(x - self.base_n) as usize]);
            }
            IdKind::Utf8 => {
                let ids = v
                    .iter()
                    .map(|&x| match self.new_id(x, kind)? {
                        NodeId::Str(s) => Ok(s),
                        NodeId::Int(_) => unreachable!(),
                    })
                    .collect::<Result<Vec<&str>>>()?;
                v.sort_unstable_by(|&a, &b| {
                    ids[(a - self.base_n) as usize]
                        .as_bytes()
                        .cmp(ids[(b - self.base_n) as usize].as_bytes())
                });
            }
        }
        Ok(v)
    }

    /// Every node with a record in the log, ascending (reads every level; checks that each is
    /// sorted and its fence right).
    fn changed_nodes(&self) -> Result<Vec<u32>> {
        let bad = |m: &str| Error::format(format!("change log corrupted: {m}"));
        let mut out = Vec::new();
        for l in &self.levels {
            let nodes: &[u32] = self.slice(l.nodes, l.count)?;
            if nodes.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad("an index level is not sorted"));
            }
            let fence: &[u32] = self.slice(l.fence, l.fences)?;
            if fence
                .iter()
                .enumerate()
                .any(|(b, &x)| nodes[b * FENCE_STRIDE] != x)
            {
                return Err(bad("an index level's fence is wrong"));
            }
            if nodes.last().is_some_and(|&v| v >= self.n) {
                return Err(bad("a row for a node that does not exist"));
            }
            out.extend_from_slice(nodes);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}

// ------------------------------------------------------------------------------ opening

/// How many times `open` retries when the graph file and its log were replaced between the
/// two opens (a concurrent compaction); more than that is a real mismatch.
const OPEN_RETRIES: usize = 8;

/// Opens a graph file and, if it has one, its change log (see [`Graph::open`]).
pub(crate) fn open(path: &Path, prefetch: bool) -> Result<Graph> {
    let lp = log_path(path);
    for _ in 0..OPEN_RETRIES {
        let mut g = Graph::open_base(path)?;
        g.set_prefetch(prefetch);
        let base_meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let base_ident = ident(&base_meta);
        let file = match File::open(&lp) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                g.set_log(
                    None,
                    LogState {
                        base_ident,
                        log_ident: None,
                        info: LogInfo::default(),
                    },
                );
                return Ok(g);
            }
            Err(e) => return Err(Error::io(&lp, e)),
        };
        match attach(g, &file, &lp, base_ident)? {
            Some(g) => {
                #[cfg(unix)]
                if let Some(l) = g.overlay().filter(|_| g.prefetch()) {
                    l.hint_inner_pages();
                }
                return Ok(g);
            }
            None => continue,
        }
    }
    Err(Error::format(format!(
        "{} belongs to another graph file than {} (was the graph file replaced? delete the \
         log to discard its changes)",
        lp.display(),
        path.display()
    )))
}

/// Reads the log's header and superblocks and maps it. None when the log belongs to another
/// base file (the caller retries: a compaction may have replaced both files in between).
fn attach(mut g: Graph, file: &File, lp: &Path, base_ident: FileIdent) -> Result<Option<Graph>> {
    let fmt = |e: Error| match e {
        Error::Format(m) => Error::format(format!("{}: {m}", lp.display())),
        e => e,
    };
    let meta = file.metadata().map_err(|e| Error::io(lp, e))?;
    let len = meta.len();
    if len < DATA_START {
        return Err(fmt(Error::format(format!(
            "change log is too short ({len} bytes)"
        ))));
    }
    // SAFETY: read-only private map. The writer only appends to the file and rewrites the two
    // superblock slots; the bytes a snapshot reads (below its committed end) never change, and
    // the file is never truncated (a compaction replaces it by rename).
    let map = unsafe { Mmap::map(file) }.map_err(|e| Error::io(lp, e))?;
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Random);
    let header = LogHeader::decode(&map).map_err(fmt)?;
    // The slots are read with a plain read: the map may not show a concurrent slot write as
    // atomically, and a torn read of both would look like corruption. Retried a few times.
    let slot = read_slot(file, lp)?;
    let (cs, flen) = base_identity(&g);
    let state = LogState {
        base_ident,
        log_ident: Some(ident(&meta)),
        info: LogInfo {
            exists: true,
            merge_max: header.merge_max,
            bytes: DATA_START,
            ..LogInfo::default()
        },
    };
    if slot.superseded_by == cs {
        // Folded into (compact) or replaced by (convert, save, reorder) this very file; the
        // writer is about to replace or remove this log, or was killed before it could.
        g.set_log(None, state);
        return Ok(Some(g));
    }
    if header.base_checksum != cs || header.base_file_len != flen {
        return Ok(None);
    }
    if header.base_num_nodes != g.base_num_nodes() as u64
        || header.directed != g.directed()
        || header.weighted != g.weighted()
        || header.str_ids != (g.id_kind() == IdKind::Utf8)
    {
        return Err(fmt(Error::format(
            "change log does not match its graph file's kind",
        )));
    }
    if slot.seq == 0 {
        g.set_log(None, state);
        return Ok(Some(g));
    }
    let ov = Overlay::new(Bytes::Map(map), header, slot, &g).map_err(fmt)?;
    install(&mut g, ov, state);
    Ok(Some(g))
}

/// Attaches a commit's overlay to its base graph.
fn install(g: &mut Graph, ov: Overlay, mut state: LogState) {
    let t = ov.trailer;
    state.info = LogInfo {
        exists: true,
        commits: t.seq,
        adds: t.adds,
        removes: t.removes,
        changed_nodes: t.changed,
        new_nodes: t.num_nodes - g.base_num_nodes() as u64,
        bytes: ov.slot.trailer + TRAILER_LEN as u64,
        merge_max: ov.header.merge_max,
    };
    // A log that changes no row and creates no node leaves the base file as it is: keep the
    // plain read path.
    let changes = t.index != 0 || t.num_nodes != g.base_num_nodes() as u64;
    g.set_log(changes.then(|| Box::new(ov)), state);
}

fn read_slot(file: &File, lp: &Path) -> Result<Slot> {
    let mut head = [0u8; DATA_START as usize];
    let mut last = None;
    for _ in 0..16 {
        read_at(file, &mut head, 0).map_err(|e| Error::io(lp, e))?;
        match best_slot(&head) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
        std::thread::yield_now();
    }
    Err(Error::format(format!(
        "{}: {}",
        lp.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    )))
}

/// Builds a live graph from a base graph and a change log held in memory (for tests and the
/// fuzz target: the same checks as a mapped log).
pub fn with_log_bytes(base: Graph, log: &[u8]) -> Result<Graph> {
    let mut g = base;
    let header = LogHeader::decode(log)?;
    let slot = best_slot(log)?;
    let (cs, flen) = base_identity(&g);
    let superseded = slot.superseded_by == cs;
    if !superseded && (header.base_checksum != cs || header.base_file_len != flen) {
        return Err(Error::format("change log belongs to another graph file"));
    }
    if header.base_num_nodes != g.base_num_nodes() as u64
        || header.directed != g.directed()
        || header.weighted != g.weighted()
        || header.str_ids != (g.id_kind() == IdKind::Utf8)
    {
        return Err(Error::format("change log does not match its graph's kind"));
    }
    let state = LogState {
        base_ident: FileIdent(0, 0),
        log_ident: None,
        info: LogInfo {
            exists: true,
            merge_max: header.merge_max,
            bytes: DATA_START,
            ..LogInfo::default()
        },
    };
    if slot.seq == 0 || superseded {
        g.set_log(None, state);
        return Ok(g);
    }
    let mut words = vec![0u64; log.len().div_ceil(8)];
    // SAFETY: viewing the u64 buffer as bytes; log.len() <= 8 * words.len().
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), log.len()) }
        .copy_from_slice(log);
    let ov = Overlay::new(Bytes::Owned(words, log.len()), header, slot, &g)?;
    install(&mut g, ov, state);
    Ok(g)
}

/// A newer snapshot of `g`'s file and log, or None when nothing changed since `g` was opened.
/// Costs two `stat`s and, if the log exists, one 256-byte read.
pub fn refreshed(g: &Graph) -> Result<Option<Graph>> {
    let (Some(path), Some(state)) = (g.path(), g.log_state()) else {
        return Ok(None);
    };
    let base_now = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let lp = log_path(path);
    let log_now = match std::fs::metadata(&lp) {
        Ok(m) => Some(ident(&m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&lp, e)),
    };
    let same_files = ident(&base_now) == state.base_ident && log_now == state.log_ident;
    if same_files {
        let Some(_) = log_now else {
            return Ok(None);
        };
        let file = File::open(&lp).map_err(|e| Error::io(&lp, e))?;
        let slot = read_slot(&file, &lp)?;
        if slot.seq == state.info.commits {
            return Ok(None);
        }
    }
    open(path, g.prefetch()).map(Some)
}

// ------------------------------------------------------------------------------ staging

/// Node ids as a caller passes them.
#[derive(Clone, Debug)]
pub enum Ids {
    Int(Vec<i64>),
    Str(Vec<String>),
}

impl Ids {
    pub fn len(&self) -> usize {
        match self {
            Ids::Int(v) => v.len(),
            Ids::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn get(&self, i: usize) -> LogId {
        match self {
            Ids::Int(v) => LogId::Int(v[i]),
            Ids::Str(v) => LogId::Str(v[i].clone()),
        }
    }
}

/// A changed arc `(a, b)` and its weight now (None: removed).
type ArcChange = (u32, u32, Option<f32>);

/// What undoing a failed call needs: arc `(a, b)`'s entry in `Stage::arcs` before the call
/// (None: it had none), and the change it made to `a`'s degree.
struct Undo(u32, u32, Option<Option<f32>>, i8);

/// Changes applied on top of a committed graph, not yet written: the arcs they set or removed,
/// the nodes they created, the counts. Shared by the writer and by `validate`'s replay.
///
/// Only the changed arcs are kept, not the rows they belong to: memory grows with the batch,
/// not with the degrees of the nodes it touches. The new rows are merged from the committed
/// ones while the segment is written ([`Stage::for_each_row`]).
struct Stage {
    kind: IdKind,
    directed: bool,
    weighted: bool,
    merge: Merge,
    /// Node count of the committed graph, and with this batch's created nodes.
    committed_n: u32,
    n: u32,
    /// Arc `(a, b)` → its weight now, or None if removed (a key here may also record a
    /// removal of an arc added by this batch). Node `a` gets a new row in the segment.
    arcs_set: HashMap<(u32, u32), Option<f32>>,
    /// Node → its degree now minus its committed degree (nodes of `arcs_set` only).
    degree_change: HashMap<u32, i64>,
    created: HashMap<LogId, u32>,
    /// Ids of created nodes `committed_n..n` (empty for implicit ids).
    new_ids: Vec<LogId>,
    arcs: u64,
    self_loops: u64,
    adds: u64,
    removes: u64,
    permuted: bool,
    /// Largest id in the graph (internal order equals id order while ids arrive increasing).
    max_id: Option<LogId>,
    ops: Vec<u8>,
    num_ops: u64,
    undo: Vec<Undo>,
}

/// The counts a stage starts from.
#[derive(Clone)]
struct Counts {
    n: u32,
    arcs: u64,
    self_loops: u64,
    adds: u64,
    removes: u64,
    permuted: bool,
    max_id: Option<LogId>,
}

impl Stage {
    fn new(g: &Graph, merge: Merge, c: Counts) -> Stage {
        Stage {
            kind: g.id_kind(),
            directed: g.directed(),
            weighted: g.weighted(),
            merge,
            committed_n: c.n,
            n: c.n,
            arcs_set: HashMap::new(),
            degree_change: HashMap::new(),
            created: HashMap::new(),
            new_ids: Vec::new(),
            arcs: c.arcs,
            self_loops: c.self_loops,
            adds: c.adds,
            removes: c.removes,
            permuted: c.permuted,
            max_id: c.max_id,
            ops: Vec::new(),
            num_ops: 0,
            undo: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.num_ops == 0
    }

    fn lookup(&self, g: &Graph, id: &LogId) -> Result<Option<u32>> {
        match (self.kind, id) {
            (IdKind::Implicit, LogId::Int(i)) => {
                Ok((*i >= 0 && (*i as u64) < u64::from(self.n)).then_some(*i as u32))
            }
            (IdKind::Utf8, LogId::Int(_)) | (IdKind::Implicit | IdKind::Int64, LogId::Str(_)) => {
                Ok(None)
            }
            _ => {
                if let Some(&v) = self.created.get(id) {
                    return Ok(Some(v));
                }
                match id {
                    LogId::Int(i) => g.lookup_int(*i),
                    LogId::Str(s) => g.lookup_str(s),
                }
            }
        }
    }

    fn check_id(&self, id: &LogId) -> Result<()> {
        match (self.kind, id) {
            (IdKind::Implicit, LogId::Int(i)) if *i < 0 || *i >= i64::from(u32::MAX) => {
                Err(Error::input(format!(
                    "node id {i} is outside 0..2**32-2: this graph has implicit ids 0..n-1"
                )))
            }
            (IdKind::Utf8, LogId::Int(i)) => Err(Error::input(format!(
                "node id {i} is an int but this graph has string ids"
            ))),
            (IdKind::Implicit | IdKind::Int64, LogId::Str(s)) => Err(Error::input(format!(
                "node id {s:?} is a string but this graph has integer ids"
            ))),
            _ => Ok(()),
        }
    }

    fn resolve_or_create(&mut self, g: &Graph, id: &LogId) -> Result<u32> {
        if let Some(v) = self.lookup(g, id)? {
            return Ok(v);
        }
        if self.kind == IdKind::Implicit {
            let LogId::Int(i) = id else { unreachable!() };
            // Ids are indices: every id up to this one becomes a node (isolated unless given
            // edges), as a rebuild with these ids would have them.
            self.n = *i as u32 + 1;
            return Ok(*i as u32);
        }
        if self.n == u32::MAX {
            return Err(Error::input("the graph would exceed 2**32-1 nodes"));
        }
        let v = self.n;
        self.n += 1;
        if self.max_id.as_ref().is_some_and(|m| m > id) {
            self.permuted = true;
        }
        if self.max_id.as_ref().is_none_or(|m| m < id) {
            self.max_id = Some(id.clone());
        }
        self.created.insert(id.clone(), v);
        self.new_ids.push(id.clone());
        Ok(v)
    }

    /// The weight of arc `a -> b` in the committed graph `g`, if it has that arc. Rows are
    /// sorted by index, or by id in a permuted graph: a binary search in each delta of `a`'s
    /// row in the log, newest first, then in the row beneath them. Never merges the row.
    fn committed_arc(&self, g: &Graph, a: u32, b: u32) -> Result<Option<f32>> {
        let n = g.num_nodes();
        if a as usize >= n || b as usize >= n {
            return Ok(None);
        }
        let find = |nb: &[u32]| -> Result<Option<usize>> {
            if !g.permuted() || g.id_kind() == IdKind::Implicit {
                return Ok(nb.binary_search(&b).ok());
            }
            let key = self.id_of(g, b)?;
            let (mut lo, mut hi) = (0, nb.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                match self.id_of(g, nb[mid])?.cmp(&key) {
                    Ordering::Less => lo = mid + 1,
                    Ordering::Greater => hi = mid,
                    Ordering::Equal => return Ok(Some(mid)),
                }
            }
            Ok(None)
        };
        let weighted = |w: f32| if g.weighted() { w } else { 1.0 };
        if let Some(o) = g.overlay() {
            let mut rec = if o.unchanged(a) { None } else { o.record(a)? };
            loop {
                match rec {
                    Some(Record::Delta(d)) => {
                        if let Some(k) = find(d.nbrs)? {
                            let x = d.vals[k];
                            return Ok((x > 0.0).then(|| weighted(x)));
                        }
                        rec = match d.older {
                            0 => None,
                            off => Some(o.record_at(a, off)?),
                        };
                    }
                    Some(Record::Row(r)) => {
                        return Ok(find(r.nbrs)?.map(|k| r.wts.get(k).copied().unwrap_or(1.0)));
                    }
                    None => break,
                }
            }
            if a >= o.base_n() {
                return Ok(None);
            }
        }
        let nb = g.neighbors_in::<false>(a)?;
        Ok(match find(nb)? {
            None => None,
            Some(k) => Some(g.base_weights(a)?.map_or(1.0, |w| w[k])),
        })
    }

    /// The weight of arc `a -> b` with this batch applied, if the arc exists.
    fn current_arc(&self, g: &Graph, a: u32, b: u32) -> Result<Option<f32>> {
        match self.arcs_set.get(&(a, b)) {
            Some(&w) => Ok(w),
            None => self.committed_arc(g, a, b),
        }
    }

    /// Sets arc `(a, b)` to `w`; `delta` is the change to `a`'s degree (-1, 0 or 1).
    fn set_arc(&mut self, a: u32, b: u32, w: Option<f32>, delta: i8) {
        let before = self.arcs_set.insert((a, b), w);
        *self.degree_change.entry(a).or_insert(0) += i64::from(delta);
        self.undo.push(Undo(a, b, before, delta));
    }

    /// Adds the arc `a -> b` with weight `w`, merging with an existing one.
    fn add_arc(&mut self, g: &Graph, a: u32, b: u32, w: f32) -> Result<()> {
        let old = self.current_arc(g, a, b)?;
        let new = match old {
            None => w,
            Some(_) if !self.weighted => 1.0,
            Some(x) => match self.merge {
                Merge::Sum => x + w,
                Merge::Max => x.max(w),
            },
        };
        if !new.is_finite() {
            return Err(Error::input(format!(
                "merged weight of arc ({a}, {b}) overflows float32"
            )));
        }
        self.set_arc(a, b, Some(new), i8::from(old.is_none()));
        if old.is_none() {
            self.arcs += 1;
            // Self-loops are counted for undirected graphs only (their edge count).
            if a == b && !self.directed {
                self.self_loops += 1;
            }
        }
        Ok(())
    }

    fn remove_arc(&mut self, g: &Graph, a: u32, b: u32) -> Result<()> {
        // The reverse arc of an undirected edge is looked up too: a damaged file may lack it.
        let old = self.current_arc(g, a, b)?;
        self.set_arc(a, b, None, -i8::from(old.is_some()));
        if old.is_some() {
            self.arcs -= 1;
            if a == b && !self.directed {
                self.self_loops -= 1;
            }
        }
        Ok(())
    }

    fn has_arc(&self, g: &Graph, a: u32, b: u32) -> Result<bool> {
        Ok(self.current_arc(g, a, b)?.is_some())
    }

    fn apply_add(&mut self, g: &Graph, a: &LogId, b: &LogId, w: Option<f32>) -> Result<()> {
        let s = self.resolve_or_create(g, a)?;
        let d = self.resolve_or_create(g, b)?;
        let w = w.unwrap_or(1.0);
        self.add_arc(g, s, d, w)?;
        if !self.directed && s != d {
            self.add_arc(g, d, s, w)?;
        }
        self.adds += 1;
        Ok(())
    }

    /// Returns whether the edge existed.
    fn apply_remove(&mut self, g: &Graph, a: &LogId, b: &LogId) -> Result<bool> {
        let (Some(s), Some(d)) = (self.lookup(g, a)?, self.lookup(g, b)?) else {
            self.removes += 1;
            return Ok(false);
        };
        self.removes += 1;
        if !self.has_arc(g, s, d)? {
            return Ok(false);
        }
        self.remove_arc(g, s, d)?;
        if !self.directed && s != d {
            self.remove_arc(g, d, s)?;
        }
        Ok(true)
    }

    fn apply(&mut self, g: &Graph, op: &Op) -> Result<bool> {
        match op {
            Op::Add(a, b, w) => self.apply_add(g, a, b, *w).map(|_| true),
            Op::Remove(a, b) => self.apply_remove(g, a, b),
        }
    }

    /// Applies one call's operations, all or none: on an error the stage is as before.
    fn apply_call(&mut self, g: &Graph, ops: &[Op]) -> Result<u64> {
        for op in ops {
            let (Op::Add(a, b, _) | Op::Remove(a, b)) = op;
            self.check_id(a)?;
            self.check_id(b)?;
        }
        self.undo.clear();
        let saved = (
            self.n,
            self.arcs,
            self.self_loops,
            self.adds,
            self.removes,
            self.permuted,
            self.max_id.clone(),
            self.new_ids.len(),
        );
        let mut changed = 0u64;
        let result = ops.iter().try_for_each(|op| {
            changed += u64::from(self.apply(g, op)?);
            Ok(())
        });
        match result {
            Ok(()) => {
                for op in ops {
                    crate::live::log::encode_op(&mut self.ops, op);
                }
                self.num_ops += ops.len() as u64;
                self.undo.clear();
                Ok(changed)
            }
            Err(e) => {
                while let Some(Undo(a, b, before, delta)) = self.undo.pop() {
                    *self.degree_change.entry(a).or_insert(0) -= i64::from(delta);
                    match before {
                        Some(w) => self.arcs_set.insert((a, b), w),
                        None => self.arcs_set.remove(&(a, b)),
                    };
                }
                for id in self.new_ids.drain(saved.7..) {
                    self.created.remove(&id);
                }
                (
                    self.n,
                    self.arcs,
                    self.self_loops,
                    self.adds,
                    self.removes,
                    self.permuted,
                    self.max_id,
                ) = (
                    saved.0, saved.1, saved.2, saved.3, saved.4, saved.5, saved.6,
                );
                Err(e)
            }
        }
    }

    /// The external id of `v` for sorting rows.
    fn id_of<'a>(&'a self, g: &'a Graph, v: u32) -> Result<LogIdRef<'a>> {
        if v >= self.committed_n {
            return Ok(match &self.new_ids[(v - self.committed_n) as usize] {
                LogId::Int(i) => LogIdRef::Int(*i),
                LogId::Str(s) => LogIdRef::Str(s),
            });
        }
        Ok(match g.node_id(v)? {
            NodeId::Int(i) => LogIdRef::Int(i),
            NodeId::Str(s) => LogIdRef::Str(s),
        })
    }

    /// The changed arcs in the order of the new rows (the input of [`Stage::for_each_row`]):
    /// by node, then by the neighbours' ids (by index while internal order is id order).
    fn sorted_changes(&self, g: &Graph) -> Result<Vec<ArcChange>> {
        let mut changes: Vec<ArcChange> = self
            .arcs_set
            .iter()
            .map(|(&(a, b), &w)| (a, b, w))
            .collect();
        changes.sort_unstable_by_key(|c| (c.0, c.1));
        if !self.rows_by_index() {
            for group in changes.chunk_by_mut(|x, y| x.0 == y.0) {
                let mut keyed = group
                    .iter()
                    .map(|c| Ok((self.id_of(g, c.1)?, *c)))
                    .collect::<Result<Vec<_>>>()?;
                keyed.sort_unstable_by(|x, y| x.0.cmp(&y.0));
                for (slot, (_, c)) in group.iter_mut().zip(keyed) {
                    *slot = c;
                }
            }
        }
        Ok(changes)
    }

    /// Whether rows are sorted by index (internal order is id order) rather than by id.
    fn rows_by_index(&self) -> bool {
        !self.permuted || self.kind == IdKind::Implicit
    }

    /// Calls `f(v, neighbours, weights)` with the new row of every node this batch changed,
    /// ascending by node; each row sorted like `changes` (from [`Stage::sorted_changes`]),
    /// weights merged (`weights` is empty for an unweighted graph). The rows are merged one at
    /// a time from the committed rows and the changed arcs.
    fn for_each_row(
        &self,
        g: &Graph,
        changes: &[ArcChange],
        mut f: impl FnMut(u32, &[u32], &[f32]) -> Result<()>,
    ) -> Result<()> {
        let (mut nbrs, mut wts) = (Vec::new(), Vec::new());
        for group in changes.chunk_by(|x, y| x.0 == y.0) {
            self.merge_group(g, group, &mut nbrs, &mut wts)?;
            f(group[0].0, &nbrs, &wts)?;
        }
        Ok(())
    }

    /// The new row of node `group[0].0`: its committed row merged with `group`, its changed
    /// arcs (sorted like rows).
    fn merge_group(
        &self,
        g: &Graph,
        group: &[ArcChange],
        nbrs: &mut Vec<u32>,
        wts: &mut Vec<f32>,
    ) -> Result<()> {
        let by_index = self.rows_by_index();
        let v = group[0].0;
        // The committed row is sorted in the output order: by index, or by id, which is
        // the same order for committed nodes while the graph is not permuted.
        let (old, old_w) = if (v as usize) < g.num_nodes() {
            (g.neighbors_checked(v)?, g.weights(v)?)
        } else {
            (Cow::Borrowed(&[][..]), None)
        };
        nbrs.clear();
        wts.clear();
        let mut emit = |u: u32, w: f32| {
            nbrs.push(u);
            if self.weighted {
                wts.push(w);
            }
        };
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < group.len() {
            let order = if i == old.len() {
                Ordering::Greater
            } else if j == group.len() {
                Ordering::Less
            } else if by_index {
                old[i].cmp(&group[j].1)
            } else {
                self.id_of(g, old[i])?.cmp(&self.id_of(g, group[j].1)?)
            };
            match order {
                Ordering::Less => {
                    emit(old[i], old_w.as_ref().map_or(1.0, |w| w[i]));
                    i += 1;
                }
                Ordering::Equal | Ordering::Greater => {
                    if let Some(w) = group[j].2 {
                        emit(group[j].1, w);
                    }
                    i += usize::from(order.is_eq());
                    j += 1;
                }
            }
        }
        Ok(())
    }

    /// Calls `f(v, row)` with the record that the segment gets for every node this batch
    /// changed, ascending by node: a delta on the node's committed row, or its whole new row
    /// (see [`delta_pays`]). Deterministic: the writer calls it twice per commit.
    fn for_each_record(
        &self,
        g: &Graph,
        changes: &[ArcChange],
        mut f: impl FnMut(u32, NewRecord<'_>) -> Result<()>,
    ) -> Result<()> {
        let by_index = self.rows_by_index();
        let cmp = |a: u32, b: u32| -> Result<Ordering> {
            if by_index {
                Ok(a.cmp(&b))
            } else {
                Ok(self.id_of(g, a)?.cmp(&self.id_of(g, b)?))
            }
        };
        let ov = g.overlay();
        let (mut nbrs, mut wts) = (Vec::new(), Vec::new());
        let (mut entries, mut merged) = (Vec::new(), Vec::new());
        for group in changes.chunk_by(|x, y| x.0 == y.0) {
            let v = group[0].0;
            let committed = (v as usize) < g.num_nodes();
            entries.clear();
            entries.extend(group.iter().map(|c| (c.1, c.2.unwrap_or(0.0))));
            // The committed record and the deltas beneath it: merge the newest deltas into
            // this one while they are not larger (the binary-counter rule: a chain holds
            // O(log) deltas, and each entry is rewritten O(log) times).
            let mut below = match ov {
                Some(o) if committed && !o.unchanged(v) => o.entry(v)?,
                _ => 0,
            };
            let o = ov.filter(|_| below != 0);
            let mut rec = match o {
                Some(o) => Some(o.record_at(v, below)?),
                None => None,
            };
            while let Some(Record::Delta(d)) = &rec {
                if d.nbrs.len() > entries.len() {
                    break;
                }
                compose((d.nbrs, d.vals), &entries, &cmp, &mut merged)?;
                std::mem::swap(&mut entries, &mut merged);
                below = d.older;
                rec = match (o, below) {
                    (Some(o), off) if off != 0 => Some(o.record_at(v, off)?),
                    _ => None,
                };
            }
            let (mut chain, mut total) = (1u32, entries.len() as u64);
            let mut r = rec;
            while let (Some(Record::Delta(d)), Some(o)) = (&r, o) {
                chain += 1;
                total += d.nbrs.len() as u64;
                r = match d.older {
                    0 => None,
                    off => Some(o.record_at(v, off)?),
                };
            }
            let old_degree = if committed { g.degree(v)? } else { 0 };
            let change = self.degree_change.get(&v).copied().unwrap_or(0);
            let degree = u64::try_from(old_degree as i64 + change)
                .map_err(|_| Error::format(format!("node {v} would get a negative degree")))?;
            let delta = committed && delta_pays(total, chain, degree);
            // A weighted row's strength is the sum of its weights in row order, as a rebuild
            // computes it: the merged row is read once for it.
            let strength = if self.weighted || !delta {
                self.merge_group(g, group, &mut nbrs, &mut wts)?;
                if nbrs.len() as u64 != degree {
                    return Err(Error::format(format!(
                        "the committed row of node {v} is inconsistent with its degree"
                    )));
                }
                if self.weighted {
                    strength_of(&wts)
                } else {
                    0.0
                }
            } else {
                0.0
            };
            if delta {
                f(
                    v,
                    NewRecord::Delta {
                        entries: &entries,
                        older: below,
                        degree: degree as u32,
                        chain,
                        strength,
                    },
                )?;
            } else {
                f(
                    v,
                    NewRecord::Row {
                        nbrs: &nbrs,
                        wts: &wts,
                        strength,
                    },
                )?;
            }
        }
        Ok(())
    }
}

/// Builds the committed snapshot's index in memory (see [`Overlay::build_changed`]) before a
/// call of `ops` operations when they are at least n/64: each operation looks up the index
/// twice or more, and the build costs O(n/64 + index entries).
fn index_for_batch(g: &Graph, ops: usize) {
    if let Some(o) = g.overlay() {
        if (ops as u64).saturating_mul(64) >= g.num_nodes() as u64 {
            o.build_changed();
        }
    }
}

/// Longest chain of deltas a row may have: the reader composes them all.
pub const MAX_DELTA_CHAIN: u32 = 24;

/// Rows with fewer arcs always get whole-row records: a delta saves them few bytes and costs
/// every read a merge (docs/LIVE.md, "Cost").
pub const MIN_DELTA_DEGREE: u64 = 32;

/// Whether a node's new record is a delta (else its whole row): for a row of at least
/// `MIN_DELTA_DEGREE` arcs, while the chain is short and its deltas hold at most half as many
/// entries as the row has arcs. A delta entry takes 8 bytes (neighbour and value) where a
/// row's arc takes 4 (8 weighted): past that point the whole row is smaller, and merging it
/// costs readers more than the row itself.
fn delta_pays(total_entries: u64, chain: u32, degree: u64) -> bool {
    degree >= MIN_DELTA_DEGREE && chain <= MAX_DELTA_CHAIN && 2 * total_entries <= degree
}

/// A record for the segment (see [`Stage::for_each_record`]).
enum NewRecord<'a> {
    Row {
        nbrs: &'a [u32],
        wts: &'a [f32],
        strength: f64,
    },
    Delta {
        entries: &'a [(u32, f32)],
        older: u64,
        degree: u32,
        chain: u32,
        strength: f64,
    },
}

impl NewRecord<'_> {
    /// The bytes it takes in a segment (it starts 8-aligned).
    fn len(&self, weighted: bool) -> u64 {
        match self {
            NewRecord::Row { nbrs, .. } => record_len(nbrs.len(), weighted),
            NewRecord::Delta { entries, .. } => {
                DELTA_HEADER_LEN as u64 + 2 * pad8(4 * entries.len() as u64)
            }
        }
    }

    /// The leaf's value: the row's strength, or its degree on an unweighted graph.
    fn leaf(&self, weighted: bool) -> f64 {
        match self {
            NewRecord::Row { nbrs, strength, .. } => {
                if weighted {
                    *strength
                } else {
                    nbrs.len() as f64
                }
            }
            NewRecord::Delta {
                degree, strength, ..
            } => {
                if weighted {
                    *strength
                } else {
                    f64::from(*degree)
                }
            }
        }
    }

    fn encode(&self, v: u32, weighted: bool, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&v.to_le_bytes());
        match self {
            NewRecord::Row {
                nbrs,
                wts,
                strength,
            } => {
                out.extend_from_slice(&(nbrs.len() as u32).to_le_bytes());
                out.extend_from_slice(&strength.to_bits().to_le_bytes());
                for u in *nbrs {
                    out.extend_from_slice(&u.to_le_bytes());
                }
                out.resize(pad8(out.len() as u64) as usize, 0);
                if weighted {
                    for w in *wts {
                        out.extend_from_slice(&w.to_le_bytes());
                    }
                    out.resize(pad8(out.len() as u64) as usize, 0);
                }
            }
            NewRecord::Delta {
                entries,
                older,
                degree,
                chain,
                strength,
            } => {
                out.extend_from_slice(&(entries.len() as u32 | DELTA_FLAG).to_le_bytes());
                out.extend_from_slice(&strength.to_bits().to_le_bytes());
                out.extend_from_slice(&older.to_le_bytes());
                out.extend_from_slice(&degree.to_le_bytes());
                out.extend_from_slice(&chain.to_le_bytes());
                for (u, _) in *entries {
                    out.extend_from_slice(&u.to_le_bytes());
                }
                out.resize(pad8(out.len() as u64) as usize, 0);
                for (_, x) in *entries {
                    out.extend_from_slice(&x.to_le_bytes());
                }
                out.resize(pad8(out.len() as u64) as usize, 0);
            }
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum LogIdRef<'a> {
    Int(i64),
    Str(&'a str),
}

/// The counts of `g`'s current state (its newest commit, or its base file).
fn counts_of(g: &Graph) -> Result<Counts> {
    let (adds, removes) = g
        .overlay()
        .map_or((0, 0), |o| (o.trailer.adds, o.trailer.removes));
    let info = g.log_state().map(|s| s.info).unwrap_or_default();
    let self_loops = if g.directed() {
        0
    } else {
        2 * g.num_edges() - g.num_arcs()
    };
    Ok(Counts {
        n: g.num_nodes() as u32,
        arcs: g.num_arcs(),
        self_loops,
        adds: adds.max(info.adds),
        removes: removes.max(info.removes),
        permuted: g.permuted(),
        max_id: max_id(g)?,
    })
}

/// The largest id of `g` (None when empty).
fn max_id(g: &Graph) -> Result<Option<LogId>> {
    let n = g.num_nodes();
    if n == 0 {
        return Ok(None);
    }
    let mut best: Option<LogId> = None;
    let mut consider = |v: u32| -> Result<()> {
        let id = match g.node_id(v)? {
            NodeId::Int(i) => LogId::Int(i),
            NodeId::Str(s) => LogId::Str(s.to_owned()),
        };
        if best.as_ref().is_none_or(|b| *b < id) {
            best = Some(id);
        }
        Ok(())
    };
    match g.id_kind() {
        IdKind::Implicit => consider(n as u32 - 1)?,
        _ => {
            let base_n = g.base_num_nodes();
            if base_n > 0 {
                consider(g.id_index()[base_n - 1])?;
            }
            if let Some(o) = g.overlay() {
                for r in &o.runs {
                    let order: &[u32] = o.slice(r.order, u64::from(r.count))?;
                    if let Some(&k) = order.last() {
                        if k >= r.count {
                            return Err(Error::format("change log corrupted: bad id-run order"));
                        }
                        consider(r.first + k)?;
                    }
                }
            }
        }
    }
    Ok(best)
}

// ------------------------------------------------------------------------------ writing

/// The one writer of a live graph: holds the lock, stages calls, commits them durably.
pub struct LiveWriter {
    path: PathBuf,
    log_path: PathBuf,
    _lock: PathLock,
    file: File,
    header: LogHeader,
    slot: Slot,
    /// End of the committed bytes: the next segment goes here (bytes past it are garbage from
    /// an interrupted commit and are overwritten).
    end: u64,
    snapshot: Arc<Graph>,
    merge: Merge,
    prefetch: bool,
    stage: Option<Stage>,
}

fn write_at(file: &File, bytes: &[u8], off: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.write_all_at(bytes, off)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = file;
        f.seek(SeekFrom::Start(off))?;
        f.write_all(bytes)
    }
}

fn read_at(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, off)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(off))?;
        f.read_exact(buf)
    }
}

/// The writers' lock of a graph path, held while this lives. Dropping it removes the lock
/// file (while still holding the lock, so that no one is left locking a removed file: a taker
/// checks after locking that the file it locked is still the one at the path).
pub(crate) struct PathLock {
    path: PathBuf,
    // Declared last: closed (unlocked) after the file is removed in `drop`.
    _file: File,
}

impl Drop for PathLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Takes the writers' lock of `base` without waiting: a second writer (a live-graph writer,
/// `convert`, `save`, `reorder` or `compact` of the same path) gets an error.
pub(crate) fn lock(base: &Path) -> Result<PathLock> {
    let lp = lock_path(base);
    loop {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lp)
            .map_err(|e| Error::io(&lp, e))?;
        #[cfg(unix)]
        {
            use std::io::{Read, Seek, SeekFrom, Write};
            use std::os::unix::io::AsRawFd;
            // SAFETY: flock on a valid descriptor we own. The lock belongs to this open file
            // description and is released when it is closed, including by the process dying.
            let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                let err = std::io::Error::last_os_error();
                if err.kind() == std::io::ErrorKind::WouldBlock {
                    let mut pid = String::new();
                    let _ = (&f).read_to_string(&mut pid);
                    let holder = match pid.trim() {
                        "" => String::new(),
                        p => format!(" (process {p})"),
                    };
                    return Err(Error::io(
                        base,
                        std::io::Error::new(
                            std::io::ErrorKind::WouldBlock,
                            format!(
                                "is already open for writing by another writer{holder}; one \
                                 writer at a time"
                            ),
                        ),
                    ));
                }
                return Err(Error::io(&lp, err));
            }
            // The previous holder may have removed the file between our open and our lock.
            let mine = f.metadata().map_err(|e| Error::io(&lp, e))?;
            match std::fs::metadata(&lp) {
                Ok(now) if ident(&now) == ident(&mine) => {}
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(&lp, e)),
            }
            let mut w = &f;
            let _ = w.seek(SeekFrom::Start(0));
            let _ = f.set_len(0);
            let _ = write!(w, "{}", std::process::id());
        }
        return Ok(PathLock { path: lp, _file: f });
    }
}

/// The directory and file name of a graph path (for its temporary files).
fn dir_and_name(path: &Path) -> (PathBuf, String) {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "graph".into());
    (dir, name)
}

/// A write that replaces the graph file at a path (`convert`, `save`, `reorder`): holds the
/// path's writers' lock from before the first byte is written until the new file is in place,
/// removes leftovers of killed writers of that path, refuses a path whose change log it cannot
/// account for (before anything is replaced), and detaches the log atomically: a crash at any
/// moment leaves the old file with its log or the new file without one.
pub struct BaseReplace {
    target: PathBuf,
    /// The log bound to the file being replaced, and its current slot.
    log: Option<(File, Slot)>,
    _lock: PathLock,
}

impl BaseReplace {
    pub fn begin(target: &Path) -> Result<BaseReplace> {
        let lock = lock(target)?;
        let (dir, name) = dir_and_name(target);
        // Holding the lock, every temporary file of this path on this host is a leftover.
        crate::graph::build::remove_leftovers(&dir, &name, true);
        let lp = log_path(target);
        let file = match OpenOptions::new().read(true).write(true).open(&lp) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(BaseReplace {
                    target: target.to_path_buf(),
                    log: None,
                    _lock: lock,
                })
            }
            Err(e) => return Err(Error::io(&lp, e)),
        };
        let refuse = |why: String| {
            Error::format(format!(
                "{}: {why}; nothing was written. Delete the log to discard its changes (or move \
                 it away), then write {} again",
                lp.display(),
                target.display()
            ))
        };
        let mut head = [0u8; DATA_START as usize];
        read_at(&file, &mut head, 0)
            .map_err(|e| refuse(format!("not a readable change log ({e})")))?;
        let header = LogHeader::decode(&head).map_err(|e| refuse(e.to_string()))?;
        let slot = best_slot(&head).map_err(|e| refuse(e.to_string()))?;
        let base = match Graph::open_base(target) {
            Ok(b) => b,
            Err(e) => {
                return Err(refuse(format!(
                    "the graph file it belongs to cannot be read ({e})"
                )))
            }
        };
        let (cs, flen) = base_identity(&base);
        drop(base);
        if slot.superseded_by == cs {
            // Left by a killed writer after it replaced the file: already ignored by readers.
            std::fs::remove_file(&lp).map_err(|e| Error::io(&lp, e))?;
            sync_dir(&lp);
            return Ok(BaseReplace {
                target: target.to_path_buf(),
                log: None,
                _lock: lock,
            });
        }
        if (header.base_checksum, header.base_file_len) != (cs, flen) {
            return Err(refuse(format!(
                "belongs to another graph file than {}",
                target.display()
            )));
        }
        Ok(BaseReplace {
            target: target.to_path_buf(),
            log: Some((file, slot)),
            _lock: lock,
        })
    }

    /// Renames the complete, synced file `tmp` over the target. With a log: first marks the
    /// log as superseded by the new file (in the slot that does not hold the newest commit, as
    /// compaction does), so a reader that finds the new file with the old log ignores the
    /// log; then renames, then removes the log.
    pub fn install(self, tmp: &Path) -> Result<()> {
        let lp = log_path(&self.target);
        if let Some((file, slot)) = &self.log {
            let mut head = [0u8; 256];
            let f = File::open(tmp).map_err(|e| Error::io(tmp, e))?;
            read_at(&f, &mut head, 0).map_err(|e| Error::io(tmp, e))?;
            let mark = Slot {
                superseded_by: rd_u64(&head, 248),
                ..*slot
            };
            let at = SLOT_OFFSETS[((slot.seq + 1) % 2) as usize];
            write_at(file, &mark.encode(), at).map_err(|e| Error::io(&lp, e))?;
            file.sync_data().map_err(|e| Error::io(&lp, e))?;
            if let Err(e) = std::fs::rename(tmp, &self.target) {
                // Not replaced: take the mark back (the log stays bound to the old file).
                let unmark = Slot {
                    superseded_by: 0,
                    ..*slot
                };
                let _ = write_at(file, &unmark.encode(), at).and_then(|_| file.sync_data());
                return Err(Error::io(&self.target, e));
            }
            std::fs::remove_file(&lp).map_err(|e| Error::io(&lp, e))?;
        } else {
            std::fs::rename(tmp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        }
        sync_dir(&self.target);
        Ok(())
    }
}

/// Writes a new empty log for the base file `g` to `target` (atomically).
fn create_log(g: &Graph, target: &Path, merge: Merge) -> Result<LogHeader> {
    let (cs, flen) = base_identity(g);
    let header = LogHeader {
        merge_max: merge == Merge::Max,
        str_ids: g.id_kind() == IdKind::Utf8,
        weighted: g.weighted(),
        directed: g.directed(),
        base_checksum: cs,
        base_file_len: flen,
        base_num_nodes: g.base_num_nodes() as u64,
    };
    let mut bytes = vec![0u8; DATA_START as usize];
    bytes[..crate::live::log::LOG_HEADER_LEN].copy_from_slice(&header.encode());
    let s = SLOT_OFFSETS[0] as usize;
    bytes[s..s + SLOT_LEN].copy_from_slice(&Slot::default().encode());
    crate::graph::build::write_atomic(target, &bytes)?;
    Ok(header)
}

fn sync_dir(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

impl LiveWriter {
    /// Opens `path` for writing: takes the lock, creates the change log if there is none.
    /// `merge` is how weights of duplicate edges merge; it is fixed when the log is created
    /// (None: the log's, or `Sum` for a new log) and must match an existing log's.
    pub fn open(path: &Path, merge: Option<Merge>, prefetch: bool) -> Result<LiveWriter> {
        let lock = lock(path)?;
        let (dir, name) = dir_and_name(path);
        // Holding the lock, every temporary file of this path on this host is a leftover
        // (e.g. of a killed compaction).
        crate::graph::build::remove_leftovers(&dir, &name, true);
        let lp = log_path(path);
        let base = Graph::open_base(path)?;
        let fresh = |merge: Merge| -> Result<()> {
            create_log(&base, &lp, merge)?;
            sync_dir(&lp);
            Ok(())
        };
        match File::open(&lp) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fresh(merge.unwrap_or(Merge::Sum))?;
            }
            Err(e) => return Err(Error::io(&lp, e)),
            Ok(f) => {
                let mut head = [0u8; DATA_START as usize];
                read_at(&f, &mut head, 0).map_err(|e| {
                    Error::format(format!("{}: change log is too short ({e})", lp.display()))
                })?;
                let h = LogHeader::decode(&head)
                    .map_err(|e| Error::format(format!("{}: {e}", lp.display())))?;
                let slot = best_slot(&head)
                    .map_err(|e| Error::format(format!("{}: {e}", lp.display())))?;
                let (cs, flen) = base_identity(&base);
                if slot.superseded_by == cs {
                    // A compaction (or another write of the file) replaced the graph file
                    // but was killed before it replaced or removed the log.
                    let m = if h.merge_max { Merge::Max } else { Merge::Sum };
                    fresh(m)?;
                } else if (h.base_checksum, h.base_file_len) != (cs, flen) {
                    return Err(Error::format(format!(
                        "{} belongs to another graph file than {} (was the graph file \
                         replaced? delete the log to discard its changes)",
                        lp.display(),
                        path.display()
                    )));
                }
            }
        }
        drop(base);
        let snapshot = open(path, prefetch)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&lp)
            .map_err(|e| Error::io(&lp, e))?;
        let mut head = [0u8; DATA_START as usize];
        read_at(&file, &mut head, 0).map_err(|e| Error::io(&lp, e))?;
        let header = LogHeader::decode(&head)?;
        let slot = best_slot(&head)?;
        let log_merge = if header.merge_max {
            Merge::Max
        } else {
            Merge::Sum
        };
        if let Some(m) = merge {
            if m != log_merge && snapshot.weighted() {
                return Err(Error::param(format!(
                    "merge={:?} differs from the change log's merge={:?} (fixed when the log was \
                     created; compact and delete the log to change it)",
                    merge_name(m),
                    merge_name(log_merge)
                )));
            }
        }
        let end = if slot.seq == 0 {
            DATA_START
        } else {
            slot.trailer + TRAILER_LEN as u64
        };
        Ok(LiveWriter {
            path: path.to_path_buf(),
            log_path: lp,
            _lock: lock,
            file,
            header,
            slot,
            end,
            snapshot: Arc::new(snapshot),
            merge: log_merge,
            prefetch,
            stage: None,
        })
    }

    /// The newest committed state.
    pub fn snapshot(&self) -> Arc<Graph> {
        self.snapshot.clone()
    }

    /// Operations staged and not yet committed.
    pub fn staged_ops(&self) -> u64 {
        self.stage.as_ref().map_or(0, |s| s.num_ops)
    }

    fn stage(&mut self) -> Result<&mut Stage> {
        if self.stage.is_none() {
            let c = counts_of(&self.snapshot)?;
            self.stage = Some(Stage::new(&self.snapshot, self.merge, c));
        }
        Ok(self.stage.as_mut().expect("set above"))
    }

    /// Stages edges `src[i] -> dst[i]` (both directions on undirected graphs), creating nodes
    /// for unknown ids. All or nothing: on an error nothing of this call is staged.
    pub fn add_edges(&mut self, src: &Ids, dst: &Ids, weights: Option<&[f32]>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::input(format!(
                "src and dst have different lengths ({} and {})",
                src.len(),
                dst.len()
            )));
        }
        let weighted = self.snapshot.weighted();
        if let Some(w) = weights {
            if !weighted {
                return Err(Error::input("weights given but the graph is unweighted"));
            }
            crate::graph::build::check_edge_weights(w, src.len())?;
        }
        let ops: Vec<Op> = (0..src.len())
            .map(|i| {
                let w = weighted.then(|| weights.map_or(1.0, |w| w[i]));
                Op::Add(src.get(i), dst.get(i), w)
            })
            .collect();
        let g = self.snapshot.clone();
        index_for_batch(&g, ops.len());
        self.stage()?.apply_call(&g, &ops).map(|_| ())
    }

    /// Stages the removal of edges `src[i] -> dst[i]`; absent edges and unknown ids are
    /// ignored. Returns how many edges existed and are removed.
    pub fn remove_edges(&mut self, src: &Ids, dst: &Ids) -> Result<u64> {
        if src.len() != dst.len() {
            return Err(Error::input(format!(
                "src and dst have different lengths ({} and {})",
                src.len(),
                dst.len()
            )));
        }
        let ops: Vec<Op> = (0..src.len())
            .map(|i| Op::Remove(src.get(i), dst.get(i)))
            .collect();
        let g = self.snapshot.clone();
        index_for_batch(&g, ops.len());
        self.stage()?.apply_call(&g, &ops)
    }

    /// Drops the staged operations.
    pub fn discard(&mut self) {
        self.stage = None;
    }

    /// Writes the staged operations as one commit, durably (returns after the data and then
    /// the superblock are synced). Returns false when nothing was staged.
    pub fn commit(&mut self) -> Result<bool> {
        let Some(stage) = self.stage.take() else {
            return Ok(false);
        };
        if stage.is_empty() {
            return Ok(false);
        }
        let g = self.snapshot.clone();
        let seq = self.slot.seq + 1;
        let lp = &self.log_path;
        let (trailer_at, trailer_checksum) =
            write_segment(&self.file, lp, &g, &stage, seq, self.end)?;
        self.file.sync_data().map_err(|e| Error::io(lp, e))?;
        let slot = Slot {
            seq,
            trailer: trailer_at,
            trailer_checksum,
            superseded_by: 0,
        };
        write_at(&self.file, &slot.encode(), SLOT_OFFSETS[(seq % 2) as usize])
            .map_err(|e| Error::io(lp, e))?;
        self.file.sync_data().map_err(|e| Error::io(lp, e))?;
        self.slot = slot;
        self.end = trailer_at + TRAILER_LEN as u64;
        self.snapshot = Arc::new(open(&self.path, self.prefetch)?);
        Ok(true)
    }

    /// Folds the log into a new graph file, atomically, and starts an empty log. Readers keep
    /// the state they opened until they refresh; the graph stays the same, only its storage
    /// changes. Fails if operations are staged.
    pub fn compact(&mut self, threads: usize) -> Result<()> {
        if self.staged_ops() > 0 {
            return Err(Error::input(
                "operations are staged: commit or discard them before compacting",
            ));
        }
        if self.slot.seq == 0 {
            return Ok(());
        }
        let g = self.snapshot.clone();
        self.replace_base(|new_base| {
            let pool = crate::parallel::pool(threads.max(1))?;
            let order: Vec<u32> = (0..g.num_nodes() as u32).collect();
            let mut stats = crate::graph::reorder::ReorderStats::default();
            let file = crate::graph::build::AtomicFile::create(new_base)?;
            crate::graph::reorder::write_permuted_file(&g, &order, file, &pool, None, &mut stats)
        })
    }

    /// Removes the nodes with these ids and all their edges: writes the graph without them
    /// as a new file (as a rebuild from the remaining edges and nodes would, in id order) and
    /// replaces the file and the log as [`LiveWriter::compact`] does, so the ids are gone from
    /// both when it returns. Unknown ids are ignored; returns how many nodes were removed.
    /// Costs a compaction (O(n + m)), whatever the number of ids. Fails if operations are
    /// staged.
    pub fn remove_nodes(&mut self, ids: &Ids) -> Result<u64> {
        if self.staged_ops() > 0 {
            return Err(Error::input(
                "operations are staged: commit or discard them before removing nodes",
            ));
        }
        let g = self.snapshot.clone();
        let n = g.num_nodes();
        let mut gone = vec![false; n];
        let mut removed = 0u64;
        for i in 0..ids.len() {
            let v = match ids {
                Ids::Int(v) => g.lookup_int(v[i])?,
                Ids::Str(v) => g.lookup_str(&v[i])?,
            };
            if let Some(v) = v {
                removed += u64::from(!gone[v as usize]);
                gone[v as usize] = true;
            }
        }
        if removed == 0 {
            return Ok(0);
        }
        let str_ids = g.id_kind() == IdKind::Utf8;
        self.replace_base(|new_base| {
            let opts = crate::graph::external::BuildOptions {
                directed: g.directed(),
                weighted: g.weighted(),
                ids: if str_ids {
                    crate::graph::external::IdMode::Str
                } else {
                    crate::graph::external::IdMode::Int
                },
                ..Default::default()
            };
            let mut b = crate::graph::external::ExternalBuilder::new(new_base, opts)?;
            let _scan = g.scan();
            // Each remaining edge once (undirected: from its endpoint of lower index; a
            // self-loop once), with its stored weight; every remaining node, isolated or not.
            for u in 0..n as u32 {
                if gone[u as usize] {
                    continue;
                }
                let nbrs = g.neighbors(u)?;
                let ws = g.weights(u)?;
                if str_ids {
                    let a = g.string_id(u)?;
                    b.push_node_str(a)?;
                    for (k, &v) in nbrs.iter().enumerate() {
                        if !gone[v as usize] && (g.directed() || u <= v) {
                            let w = ws.as_ref().map_or(1.0, |w| w[k]);
                            b.push_str(a, g.string_id(v)?, w)?;
                        }
                    }
                } else {
                    let a = g.int_id(u)?;
                    b.push_node_int(a)?;
                    for (k, &v) in nbrs.iter().enumerate() {
                        if !gone[v as usize] && (g.directed() || u <= v) {
                            let w = ws.as_ref().map_or(1.0, |w| w[k]);
                            b.push_int(a, g.int_id(v)?, w)?;
                        }
                    }
                }
            }
            b.finish(None).map(|_| ())
        })?;
        Ok(removed)
    }

    /// Replaces the graph file by the one `write` writes to the path it is given (the graph
    /// file's temporary name) and the log by a new empty one for it: the old log is marked as
    /// superseded by the new file first, so that a crash between the two renames leaves the
    /// new file with a log readers ignore.
    fn replace_base(&mut self, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let (dir, name) = dir_and_name(&self.path);
        let tag = crate::graph::build::owner_tag();
        let new_base = dir.join(format!(".{name}.tmp-{tag}-compacted"));
        let new_log = dir.join(format!(".{name}.tmp-{tag}-compacted.live"));
        let result = (|| -> Result<()> {
            write(&new_base)?;
            let fresh = Graph::open_base(&new_base)?;
            let (cs, _) = base_identity(&fresh);
            let merge = self.merge;
            create_log(&fresh, &new_log, merge)?;
            drop(fresh);
            // Mark the old log as folded into the new file before the file replaces the old
            // one: a reader that finds the new file with the old log then ignores the log.
            let mark = Slot {
                superseded_by: cs,
                ..self.slot
            };
            let lp = &self.log_path;
            write_at(
                &self.file,
                &mark.encode(),
                SLOT_OFFSETS[((self.slot.seq + 1) % 2) as usize],
            )
            .map_err(|e| Error::io(lp, e))?;
            self.file.sync_data().map_err(|e| Error::io(lp, e))?;
            std::fs::rename(&new_base, &self.path).map_err(|e| Error::io(&self.path, e))?;
            std::fs::rename(&new_log, lp).map_err(|e| Error::io(lp, e))?;
            sync_dir(&self.path);
            Ok(())
        })();
        let _ = std::fs::remove_file(&new_base);
        let _ = std::fs::remove_file(&new_log);
        result?;
        let lp = &self.log_path;
        self.file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(lp)
            .map_err(|e| Error::io(lp, e))?;
        let mut head = [0u8; DATA_START as usize];
        read_at(&self.file, &mut head, 0).map_err(|e| Error::io(lp, e))?;
        self.header = LogHeader::decode(&head)?;
        self.slot = best_slot(&head)?;
        self.end = DATA_START;
        self.snapshot = Arc::new(open(&self.path, self.prefetch)?);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn merge_name(m: Merge) -> &'static str {
    match m {
        Merge::Sum => "sum",
        Merge::Max => "max",
    }
}

/// The bytes a record of `degree` arcs takes in a segment (it starts 8-aligned).
fn record_len(degree: usize, weighted: bool) -> u64 {
    let arcs = pad8(4 * degree as u64);
    RECORD_HEADER_LEN as u64 + arcs * (1 + u64::from(weighted))
}

/// Appends a segment's bytes to the log file, hashing all but the trailer.
struct SegmentWriter<'a> {
    file: &'a File,
    log_path: &'a Path,
    /// Offset of `bytes[0]` in the file.
    base: u64,
    bytes: Vec<u8>,
    hash: xxhash_rust::xxh3::Xxh3Default,
}

impl SegmentWriter<'_> {
    /// Buffered bytes written at once: large rows stream out, small commits take one write.
    const CHUNK: usize = 8 << 20;

    fn pos(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    fn put(&mut self, b: &[u8]) -> Result<()> {
        self.hash.update(b);
        self.put_unhashed(b)
    }

    fn put_unhashed(&mut self, b: &[u8]) -> Result<()> {
        self.bytes.extend_from_slice(b);
        if self.bytes.len() >= Self::CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        write_at(self.file, &self.bytes, self.base).map_err(|e| Error::io(self.log_path, e))?;
        self.base += self.bytes.len() as u64;
        self.bytes.clear();
        Ok(())
    }
}

/// Writes a commit's segment at `at`, the committed end (a crash before the superblock names
/// it leaves the log as it was), without syncing; returns its trailer's offset and checksum.
///
/// The segment's length heads it and is under its checksum, so the new rows are merged twice
/// from the committed rows and the batch's changes: once for their sizes, offsets and
/// strengths, once to stream them to the file. The writer never holds them all.
fn write_segment(
    file: &File,
    log_path: &Path,
    g: &Graph,
    stage: &Stage,
    seq: u64,
    at: u64,
) -> Result<(u64, u64)> {
    // Operations.
    let ops_at = at;
    let mut head = SegmentBuf {
        base: at,
        bytes: Vec::with_capacity(OPS_HEADER_LEN + stage.ops.len() + 8),
    };
    head.put(
        &OpsHeader {
            seq,
            num_ops: stage.num_ops,
            payload_len: stage.ops.len() as u64,
            segment_len: 0, // patched in below
        }
        .encode(),
    );
    head.put(&stage.ops);
    head.align8();

    // First pass over the rows of the changed nodes (ascending): where each goes, and the
    // tree leaf's value (the threshold's input: the strength, or the degree).
    let ov = g.overlay();
    let changes = stage.sorted_changes(g)?;
    let mut entries = Vec::new();
    let mut changed = ov.map_or(0, |o| o.trailer.changed);
    let mut rows_end = head.pos();
    stage.for_each_record(g, &changes, |v, rec| {
        let had = match ov {
            Some(o) if (v as usize) < o.num_nodes() => o.entry(v)? != 0,
            _ => false,
        };
        changed += u64::from(!had);
        entries.push((v, rows_end, rec.leaf(stage.weighted)));
        rows_end += rec.len(stage.weighted);
        Ok(())
    })?;

    // After the rows: the ids of the created nodes, merged into runs of decreasing size, and
    // the index's new level.
    let mut tail = SegmentBuf {
        base: rows_end,
        bytes: Vec::new(),
    };
    let mut runs_at = ov.map_or(0, |o| o.trailer.runs);
    if !stage.new_ids.is_empty() {
        runs_at = write_runs(&mut tail, ov, stage)?;
    }
    let (index, levels) = if entries.is_empty() {
        ov.map_or((0, 0), |o| (o.trailer.index, o.trailer.levels))
    } else {
        write_levels(&mut tail, ov, &entries)?
    };
    tail.align8();
    let trailer_at = tail.pos();
    head.patch_u64(ops_at + 32, trailer_at + TRAILER_LEN as u64 - ops_at);

    // Second pass: the bytes, in order.
    let mut out = SegmentWriter {
        file,
        log_path,
        base: at,
        bytes: Vec::with_capacity(SegmentWriter::CHUNK + (1 << 16)),
        hash: xxhash_rust::xxh3::Xxh3Default::new(),
    };
    out.put(&head.bytes)?;
    let mut next = entries.iter();
    let mut record = Vec::new();
    stage.for_each_record(g, &changes, |v, rec| {
        // The same records as the first pass, or the segment would not match its tree.
        if next
            .next()
            .filter(|e| (e.0, e.1) == (v, out.pos()))
            .is_none()
        {
            return Err(Error::format(format!(
                "the committed graph changed while a commit was written (node {v})"
            )));
        }
        rec.encode(v, stage.weighted, &mut record);
        out.put(&record)
    })?;
    if out.pos() != rows_end {
        return Err(Error::format(
            "the committed graph changed while a commit was written",
        ));
    }
    out.put(&tail.bytes)?;
    let trailer = Trailer {
        flags: if stage.permuted { TRAILER_PERMUTED } else { 0 },
        seq,
        start: ops_at,
        index,
        levels,
        num_nodes: u64::from(stage.n),
        num_arcs: stage.arcs,
        self_loops: stage.self_loops,
        runs: runs_at,
        adds: stage.adds,
        removes: stage.removes,
        changed,
        segment_checksum: out.hash.digest(),
    };
    let tb = trailer.encode();
    out.put_unhashed(&tb)?;
    out.flush()?;
    Ok((trailer_at, rd_u64(&tb, 120)))
}

/// Writes the id runs after adding this stage's created nodes (merging the newest runs while
/// the older one is not larger than twice... the binary-counter rule below), and the run
/// directory; returns the directory's offset.
fn write_runs(seg: &mut SegmentBuf, ov: Option<&Overlay>, stage: &Stage) -> Result<u64> {
    enum R {
        Old(Run),
        New(u32, Vec<LogId>),
    }
    let load = |r: &R| -> Result<(u32, Vec<LogId>)> {
        match r {
            R::New(f, ids) => Ok((*f, ids.clone())),
            R::Old(run) => {
                let o = ov.expect("old runs come from the overlay");
                let ids = (0..run.count)
                    .map(|k| match o.new_id(run.first + k, stage.kind)? {
                        NodeId::Int(i) => Ok(LogId::Int(i)),
                        NodeId::Str(s) => Ok(LogId::Str(s.to_owned())),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok((run.first, ids))
            }
        }
    };
    let count = |r: &R| match r {
        R::Old(run) => run.count as usize,
        R::New(_, ids) => ids.len(),
    };
    let mut runs: Vec<R> = ov.map_or(Vec::new(), |o| o.runs.iter().map(|&r| R::Old(r)).collect());
    runs.push(R::New(stage.committed_n, stage.new_ids.clone()));
    // Binary-counter merging: an older run at most as large as the newest absorbs it, so sizes
    // strictly decrease, there are O(log n) runs, and each id is rewritten O(log n) times.
    while runs.len() >= 2 && count(&runs[runs.len() - 2]) <= count(&runs[runs.len() - 1]) {
        let b = runs.pop().expect("len >= 2");
        let a = runs.pop().expect("len >= 2");
        let (fa, mut ia) = load(&a)?;
        let (_, ib) = load(&b)?;
        ia.extend(ib);
        runs.push(R::New(fa, ia));
    }
    let mut offsets = Vec::with_capacity(runs.len());
    for r in &runs {
        match r {
            R::Old(run) => offsets.push(run.at),
            R::New(first, ids) => {
                offsets.push(seg.pos());
                write_run(seg, *first, ids);
            }
        }
    }
    let dir = seg.pos();
    seg.put(&DIR_MAGIC.to_le_bytes());
    seg.put(&(offsets.len() as u32).to_le_bytes());
    for o in offsets {
        seg.put(&o.to_le_bytes());
    }
    Ok(dir)
}

fn write_run(seg: &mut SegmentBuf, first: u32, ids: &[LogId]) {
    let count = ids.len() as u64;
    let mut order: Vec<u32> = (0..ids.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
    let strs: Vec<&str> = ids
        .iter()
        .filter_map(|i| match i {
            LogId::Str(s) => Some(s.as_str()),
            LogId::Int(_) => None,
        })
        .collect();
    let bytes_len: u64 = strs.iter().map(|s| s.len() as u64).sum();
    seg.put(&u64::from(RUN_MAGIC).to_le_bytes());
    seg.put(&u64::from(first).to_le_bytes());
    seg.put(&count.to_le_bytes());
    seg.put(&(if strs.is_empty() { 0 } else { bytes_len }).to_le_bytes());
    if strs.is_empty() {
        for id in ids {
            if let LogId::Int(i) = id {
                seg.put(&i.to_le_bytes());
            }
        }
    } else {
        let mut acc = 0u64;
        seg.put(&acc.to_le_bytes());
        for s in &strs {
            acc += s.len() as u64;
            seg.put(&acc.to_le_bytes());
        }
        for s in &strs {
            seg.put(s.as_bytes());
        }
        seg.align8();
    }
    for k in order {
        seg.put(&k.to_le_bytes());
    }
    seg.align8();
}

/// Adds `entries` (node, record offset, strength or degree; ascending by node) to the index:
/// a new level, merged with the newest levels while they are not larger (the binary-counter
/// rule: O(log) levels, each entry rewritten O(log) times; an entry of a newer level replaces
/// an older one's), then the level directory. Returns the directory's offset and the number
/// of levels.
fn write_levels(
    seg: &mut SegmentBuf,
    ov: Option<&Overlay>,
    entries: &[(u32, u64, f64)],
) -> Result<(u64, u32)> {
    let mut merged: Vec<(u32, u64, u64)> = entries
        .iter()
        .map(|&(v, at, x)| (v, at, x.to_bits()))
        .collect();
    let old = ov.map_or(&[][..], |o| &o.levels[..]);
    let mut kept = 0;
    if let Some(o) = ov {
        for l in old {
            if l.count > merged.len() as u64 {
                break;
            }
            let nodes: &[u32] = o.slice(l.nodes, l.count)?;
            let vals: &[u64] = o.slice(l.entries, 2 * l.count)?;
            let mut out = Vec::with_capacity(merged.len() + nodes.len());
            let (mut i, mut j) = (0, 0);
            while i < nodes.len() || j < merged.len() {
                if j == merged.len() || i < nodes.len() && nodes[i] < merged[j].0 {
                    out.push((nodes[i], vals[2 * i], vals[2 * i + 1]));
                    i += 1;
                } else {
                    i += usize::from(i < nodes.len() && nodes[i] == merged[j].0);
                    out.push(merged[j]);
                    j += 1;
                }
            }
            merged = out;
            kept += 1;
        }
    }
    let rest = &old[kept..];
    if rest.len() + 1 > MAX_LEVELS as usize {
        return Err(Error::format("change log corrupted: too many index levels"));
    }
    // The level.
    seg.align8();
    let at = seg.pos();
    let count = merged.len() as u64;
    seg.put(&LEVEL_MAGIC.to_le_bytes());
    seg.put(&0u32.to_le_bytes());
    seg.put(&count.to_le_bytes());
    seg.put(&0u64.to_le_bytes());
    for e in merged.iter().step_by(FENCE_STRIDE) {
        seg.put(&e.0.to_le_bytes());
    }
    seg.align8();
    for e in &merged {
        seg.put(&e.0.to_le_bytes());
    }
    seg.align8();
    for e in &merged {
        seg.put(&e.1.to_le_bytes());
        seg.put(&e.2.to_le_bytes());
    }
    // The directory, newest first.
    let dir = seg.pos();
    let levels = 1 + rest.len() as u32;
    seg.put(&LEVEL_DIR_MAGIC.to_le_bytes());
    seg.put(&levels.to_le_bytes());
    seg.put(&at.to_le_bytes());
    for l in rest {
        seg.put(&l.at.to_le_bytes());
    }
    Ok((dir, levels))
}

// ------------------------------------------------------------------------------ checking

/// Full check of a live graph's log (O(log + changed rows), plus a pass over every row for
/// symmetry): every segment's checksums and operations; the operations replayed on the base
/// file give exactly the rows, ids and counts the log stores; every row is sorted by id, in
/// range, with valid weights and an exact strength.
pub(crate) fn validate_log(g: &Graph) -> Result<()> {
    let Some(o) = g.overlay() else {
        // A log that changes nothing (or none): its bytes must still read back.
        if let Some(bytes) = read_log_file(g)? {
            read_log(&bytes)?;
        }
        return Ok(());
    };
    let contents = crate::live::log::read_log_at(o.bytes(), o.slot)?;
    // The base file alone (the same bytes this snapshot reads beneath its log).
    let base = match g.path() {
        Some(p) => {
            let b = Graph::open_base(p)?;
            if base_identity(&b) != base_identity(g) {
                return Err(Error::io(
                    p,
                    std::io::Error::other(
                        "the graph file was replaced since this graph was opened; reopen it \
                         to validate",
                    ),
                ));
            }
            b
        }
        None => {
            let img = g.image();
            let mut words = vec![0u64; img.len().div_ceil(8)];
            // SAFETY: viewing the u64 buffer as bytes; img.len() <= 8 * words.len().
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), img.len()) }
                .copy_from_slice(img);
            Graph::from_image(words, img.len())?
        }
    };
    let merge = if contents.header.merge_max {
        Merge::Max
    } else {
        Merge::Sum
    };
    let c = counts_of(&base)?;
    let mut stage = Stage::new(&base, merge, c);
    for commit in &contents.commits {
        for op in &commit.ops {
            stage.apply(&base, op)?;
        }
    }
    let bad = |m: String| Error::format(format!("change log inconsistent: {m}"));
    let expect_n = stage.n as usize;
    if g.num_nodes() != expect_n || g.num_arcs() != stage.arcs {
        return Err(bad(format!(
            "replaying it gives {expect_n} nodes and {} arcs, it records {} and {}",
            stage.arcs,
            g.num_nodes(),
            g.num_arcs()
        )));
    }
    let stored = o.changed_nodes()?;
    if o.trailer.changed != stored.len() as u64 {
        return Err(bad("the changed-node count is wrong".into()));
    }
    let differ = || bad("the nodes with rows differ from the replayed ones".into());
    let mut listed = stored.iter();
    stage.for_each_row(&base, &stage.sorted_changes(&base)?, |v, nbrs, wts| {
        if listed.next() != Some(&v) {
            return Err(differ());
        }
        let listed = o
            .record(v)?
            .ok_or_else(|| bad(format!("node {v} is in the index but its lookup misses it")))?;
        let strength = match listed {
            Record::Row(r) => r.strength,
            Record::Delta(d) => d.strength,
        };
        let (got, got_w) = (g.neighbors(v)?, g.weights(v)?.unwrap_or_default());
        let same = *got == *nbrs
            && (!g.weighted()
                || got_w.len() == wts.len()
                    && got_w
                        .iter()
                        .zip(wts)
                        .all(|(a, b)| a.to_bits() == b.to_bits()));
        if !same {
            return Err(bad(format!("the row of node {v} differs from its replay")));
        }
        if g.weighted() && strength.to_bits() != strength_of(&got_w).to_bits() {
            return Err(bad(format!("the strength of node {v} is wrong")));
        }
        let leaf = if g.weighted() {
            strength
        } else {
            got.len() as f64
        };
        if o.strength(v)?.map(f64::to_bits) != Some(leaf.to_bits()) {
            return Err(bad(format!("the tree's strength of node {v} is wrong")));
        }
        Ok(())
    })?;
    if listed.next().is_some() {
        return Err(differ());
    }
    for (k, id) in stage.new_ids.iter().enumerate() {
        let v = base.num_nodes() as u32 + k as u32;
        let got = match o.new_id(v, g.id_kind())? {
            NodeId::Int(i) => LogId::Int(i),
            NodeId::Str(s) => LogId::Str(s.to_owned()),
        };
        if &got != id {
            return Err(bad(format!("the id of created node {v} is wrong")));
        }
        let found = match id {
            LogId::Int(i) => o.lookup_int(*i)?,
            LogId::Str(s) => o.lookup_str(s)?,
        };
        if found != Some(v) {
            return Err(bad(format!("created node {v} cannot be found by its id")));
        }
    }
    if o.trailer.permuted() != stage.permuted {
        return Err(bad("the permuted flag is wrong".into()));
    }
    // The live rows as a whole: sorted by id rank, in range, symmetric when undirected.
    let rank = g.id_ranks()?;
    let n = g.num_nodes();
    let mut self_loops = 0u64;
    for v in 0..n as u32 {
        let row = g.neighbors_checked(v)?;
        for (k, &u) in row.iter().enumerate() {
            if k > 0 && rank[row[k - 1] as usize] >= rank[u as usize] {
                return Err(bad(format!("neighbours of node {v} are not sorted by id")));
            }
            if u == v {
                self_loops += 1;
            }
            if !g.directed() {
                let back = g.neighbors_checked(u)?;
                if back
                    .binary_search_by_key(&rank[v as usize], |&x| rank[x as usize])
                    .is_err()
                {
                    return Err(bad(format!("arc {v}->{u} has no reverse")));
                }
            }
        }
        if let Some(w) = g.weights(v)? {
            if let Some(x) = w.iter().find(|x| !(x.is_finite() && **x > 0.0)) {
                return Err(bad(format!("node {v} has invalid weight {x}")));
            }
        }
    }
    if !g.directed() && 2 * g.num_edges() != g.num_arcs() + self_loops {
        return Err(bad("the edge count does not match the arcs".into()));
    }
    Ok(())
}

/// The log bytes of a live graph's file, read whole (for `validate` and `info`).
pub(crate) fn read_log_file(g: &Graph) -> Result<Option<Vec<u8>>> {
    let Some(path) = g.path() else {
        return Ok(None);
    };
    let lp = log_path(path);
    match std::fs::read(&lp) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&lp, e)),
    }
}

/// Every commit of `g`'s log with its operations (for `info` and inspection).
pub fn read_commits(g: &Graph) -> Result<Vec<crate::live::log::Commit>> {
    match read_log_file(g)? {
        None => Ok(Vec::new()),
        Some(b) => Ok(read_log(&b)?.commits),
    }
}

/// Decodes the operations of the segment at `start` (used by tests).
pub fn ops_at(log: &[u8], start: u64, header: &LogHeader) -> Result<Vec<Op>> {
    let h = OpsHeader::decode(&log[start as usize..])?;
    let p = start as usize + OPS_HEADER_LEN;
    decode_ops(
        &log[p..p + h.payload_len as usize],
        h.num_ops,
        header.str_ids,
        header.weighted,
    )
}

/// Writes `graph` to `target` atomically: a graph without a change log as its image
/// ([`crate::graph::build::save`]), a live graph as its current state, rows merged with the log, in
/// its internal order (a permuted file when nodes were created by the log).
pub fn save(graph: &Graph, target: impl AsRef<Path>) -> Result<()> {
    if !graph.is_live() {
        return crate::graph::build::save(graph, target);
    }
    let order: Vec<u32> = (0..graph.num_nodes() as u32).collect();
    let pool = crate::parallel::pool(1)?;
    let mut stats = crate::graph::reorder::ReorderStats::default();
    crate::graph::reorder::write_permuted(graph, &order, target.as_ref(), &pool, None, &mut stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable};

    /// A star of 400 leaves whose hub every commit changes by one arc (removed one by one,
    /// then added back): its records are deltas (never the whole row while they are small and
    /// the row is not small), their chains stay within the limit, and a whole row is written
    /// once the deltas would outweigh it.
    #[test]
    fn a_change_to_a_large_row_is_a_delta_and_chains_stay_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("star.graph");
        let leaves: Vec<u32> = (1..=400).collect();
        let parts = csr_from_edges(
            401,
            &vec![0; 400],
            &leaves,
            None,
            false,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap();
        save(&build_in_memory(&parts).unwrap(), &path).unwrap();
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        let (mut deltas, mut rows, mut longest) = (0, 0, 0);
        for k in 0..600i64 {
            let leaf = 1 + k % 400;
            if k < 400 {
                w.remove_edges(&Ids::Int(vec![0]), &Ids::Int(vec![leaf]))
                    .unwrap();
            } else {
                w.add_edges(&Ids::Int(vec![0]), &Ids::Int(vec![leaf]), None)
                    .unwrap();
            }
            w.commit().unwrap();
            let g = w.snapshot();
            let o = g.overlay().unwrap();
            match o.record(0).unwrap().unwrap() {
                Record::Delta(d) => {
                    if k == 0 {
                        assert_eq!((d.nbrs.len(), d.chain, d.older), (1, 1, 0));
                        assert_eq!(d.vals, &[0.0]);
                    }
                    assert!(2 * d.nbrs.len() as u64 <= u64::from(d.degree));
                    assert!(u64::from(d.degree) >= MIN_DELTA_DEGREE);
                    longest = longest.max(d.chain);
                    deltas += 1;
                }
                Record::Row(r) => {
                    assert!(k > 0, "the first change to the hub wrote its whole row");
                    assert_eq!(r.nbrs.len() as u64, g.degree(0).unwrap());
                    rows += 1;
                }
            }
            let expect = if k < 400 { 399 - k } else { k - 399 } as u64;
            assert_eq!(g.degree(0).unwrap(), expect);
        }
        assert!(
            longest > 1 && longest <= MAX_DELTA_CHAIN,
            "longest chain {longest}"
        );
        assert!(
            deltas > 5 * rows && rows > 0,
            "{deltas} deltas, {rows} rows"
        );
    }
}
