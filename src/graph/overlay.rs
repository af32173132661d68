//! Reading a change log: the committed snapshot of a graph file's `GRAPH.live` (format in
//! docs/FORMAT.md, "Change log"), mapped: its records (whole rows and deltas, merged with the
//! row beneath them as they are read), its index from node to record, the ids of the nodes it
//! created. The graph reads rows through it; the live wing (`crate::live`) writes it.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering as AtomicOrdering};
use std::sync::OnceLock;

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::graph::format::IdKind;
use crate::graph::format::NodeId;
use crate::graph::log_format::{
    decode_inline_delta, delta_header_len, fence_stride, level_entry_len, pad8, row_header_len,
    LogHeader, Slot, Trailer, BITMAP_BLOCK_LEN, BITMAP_BLOCK_NODES, DATA_START, DELTA_FLAG,
    DIR_MAGIC, INLINE_DELTA, LEVEL_HEADER_LEN, LEVEL_MAGIC, RUN_HEADER_LEN, RUN_MAGIC,
};
use crate::graph::pages::HintedPages;

/// `v`'s entry number in a level, from the level's bitmap block of `v` (its count of the
/// nodes before the block, then 448 bits), or None when the bit of `v` is clear.
#[inline(always)]
fn bitmap_rank(block: &[u64], v: u32) -> Option<u64> {
    let i = (u64::from(v) % BITMAP_BLOCK_NODES) as usize;
    let word = block[1 + i / 64];
    let bit = 1u64 << (i % 64);
    if word & bit == 0 {
        return None;
    }
    let before: u32 = block[1..1 + i / 64].iter().map(|w| w.count_ones()).sum();
    Some(block[0].saturating_add(u64::from(before + (word & (bit - 1)).count_ones())))
}

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
pub(crate) struct FileIdent(pub(crate) u64, pub(crate) u64);

pub(crate) fn ident(meta: &std::fs::Metadata) -> FileIdent {
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

pub(crate) enum Bytes {
    Map(Mmap),
    /// `u64` storage so typed views are aligned.
    Owned(Vec<u64>, usize),
}

impl Bytes {
    pub(crate) fn get(&self) -> &[u8] {
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
pub(crate) struct Run {
    pub(crate) first: u32,
    pub(crate) count: u32,
    /// Offset of `i64[count]` (int ids) or `u64[count + 1]` string offsets.
    pub(crate) ids: u64,
    /// utf8: offset and length of the string bytes.
    pub(crate) bytes: u64,
    pub(crate) bytes_len: u64,
    /// Offset of `u32[count]`.
    pub(crate) order: u64,
    /// Offset of the run's header.
    pub(crate) at: u64,
}

/// A node's whole row as the log stores it.
pub(crate) struct Rec<'a> {
    pub nbrs: &'a [u32],
    pub wts: &'a [f32],
    pub strength: f64,
}

/// A node's row as a delta on an older row: the neighbours it sets (value > 0: the arc's
/// weight, 1 on unweighted graphs) or removes (value 0), sorted like rows (see `nbrs`, `vals`).
pub(crate) struct Delta<'a> {
    entries: DeltaEntries<'a>,
    pub strength: f64,
    pub degree: u32,
    /// Delta records in the chain, this one included.
    pub chain: u32,
    /// The older record (0: the row beneath is the graph file's, or empty for a created node).
    pub older: u64,
}

/// Where a delta's entries are: in its record, or in the index entry (one arc, see
/// `INLINE_DELTA`).
enum DeltaEntries<'a> {
    Stored(&'a [u32], &'a [f32]),
    Inline(u32, f32),
}

impl Delta<'_> {
    /// The neighbours the delta sets or removes, sorted like rows.
    #[inline]
    pub(crate) fn nbrs(&self) -> &[u32] {
        match &self.entries {
            DeltaEntries::Stored(n, _) => n,
            DeltaEntries::Inline(u, _) => std::slice::from_ref(u),
        }
    }

    /// Their values: the arc's weight (1 on unweighted graphs), or 0 for a removal.
    #[inline]
    pub(crate) fn vals(&self) -> &[f32] {
        match &self.entries {
            DeltaEntries::Stored(_, x) => x,
            DeltaEntries::Inline(_, x) => std::slice::from_ref(x),
        }
    }
}

/// See [`Overlay::changed_strength`].
pub(crate) enum ChangedStrength {
    Unchanged,
    Code(u8),
    Exact(f64),
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

/// A file row's neighbour codes and the code of a neighbour that a delta adds (see
/// [`Overlay::merge_row`]).
pub(crate) type RowCodes<'a> = (&'a [u8], &'a dyn Fn(u32) -> Result<u8>);

/// A row merged from the log's deltas, and the work space that merging needs.
#[derive(Default)]
pub struct RowBuf {
    pub(crate) nbrs: Vec<u32>,
    pub(crate) wts: Vec<f32>,
    /// The merged row's neighbour codes, when `merge_row` was given the base row's.
    pub(crate) codes: Vec<u8>,
    acc: Vec<(u32, f32)>,
    tmp: Vec<(u32, f32)>,
}

/// Merges two sorted runs of `(neighbour, value)` into `out`; on equal neighbours `newer`'s
/// entry wins. `cmp` orders neighbours like rows (by index, or by id in a permuted graph).
pub(crate) fn compose(
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
    pub(crate) data: Bytes,
    /// Committed end: nothing at or past it is read.
    pub(crate) end: u64,
    pub(crate) trailer: Trailer,
    pub(crate) slot: Slot,
    pub(crate) header: LogHeader,
    pub(crate) base_n: u32,
    pub(crate) n: u32,
    pub(crate) runs: Vec<Run>,
    /// The index's levels, newest first (see [`Level`]).
    pub(crate) levels: Vec<Level>,
    /// One bit per node: whether its row is in the log (see `build_changed`). Empty when the
    /// index could not be read whole (lookups then search it and report what is wrong).
    pub(crate) changed: OnceLock<ChangedIndex>,
    /// The index loaded from the snapshot's index file (see `load_index_file`), used instead
    /// of building `changed`; empty when there is no such file for this commit or it could
    /// not be used.
    pub(crate) changed_file: OnceLock<ChangedIndex>,
    /// One byte per node: the number, counted from the oldest (1), of the newest level that
    /// holds it, 0 when none does (see `build_level_filter`): a commit that merges the newest
    /// levels leaves the older levels' numbers as they were, so a writer carries the filter
    /// to its next snapshot by marking the new level's nodes (`carry_level_filter`). Unset
    /// for a log of fewer levels, unless carried; empty when
    /// the levels could not be read whole (lookups then search them and report what is
    /// wrong).
    pub(crate) level_filter: OnceLock<Box<[u8]>>,
    /// What the push's threshold tests found for each node before the index is in memory
    /// (see [`CodeMemo`]): set at the first push, filled by the tests.
    pub(crate) code_memo: OnceLock<CodeMemo>,
    /// Whether `build_changed` may build it (off only in tests: see
    /// `Graph::with_index_on_disk`).
    pub(crate) index_in_memory: bool,
    /// The pages of the log that read-ahead hints asked for (see [`HintedPages`]).
    pub(crate) hinted: HintedPages,
    /// A writer's spare level filter (see [`FilterSpare`]): a snapshot of the writer gives
    /// its filter's memory back there when it is dropped.
    pub(crate) filter_spare: Option<std::sync::Weak<FilterSpare>>,
}

/// The memory of a writer's dropped level filter, kept for the next commit's copy. A commit
/// copies the previous snapshot's filter (n bytes) when that snapshot is still held (a graph
/// opened with `writable=True` holds it until the commit returns): into fresh memory the
/// copy cost its page faults and zeroing, and the old snapshot's release its unmapping, about
/// 10 % of a commit of 100,000 changes on a 65M-node graph.
pub(crate) type FilterSpare = std::sync::Mutex<Option<Box<[u8]>>>;

impl Drop for Overlay {
    fn drop(&mut self) {
        let Some(spare) = self
            .filter_spare
            .as_ref()
            .and_then(std::sync::Weak::upgrade)
        else {
            return;
        };
        let Some(f) = self.level_filter.take() else {
            return;
        };
        if let Ok(mut slot) = spare.lock() {
            if slot.as_ref().is_none_or(|s| s.len() < f.len()) {
                *slot = Some(f);
            }
        };
    }
}

/// The index of a snapshot in memory (see [`Overlay::build_changed`]): which nodes have a
/// record, and each such node's index entry and code in node order. A lookup is then one
/// block, a bit test and a popcount, however many levels the log has. Loaded from the
/// snapshot's index file (`crate::graph::index_file`), it holds each node's level instead of
/// its entry: a threshold test reads the same block, a row's lookup searches that one level.
#[derive(Default)]
pub(crate) struct ChangedIndex {
    /// One per 32 nodes (see [`Block`]).
    blocks: Box<[Block]>,
    /// Each such node's index entry (built from the levels), or nothing (loaded from the
    /// index file: see `marks`).
    pub(crate) entries: Box<[[u64; 2]]>,
    /// Each such node's neighbour code (`strength_code.rs`) of its current strength; the
    /// first [`Block::INLINE`] of each block's nodes are in the block too.
    pub(crate) codes: Box<[u8]>,
    /// Without `entries`: each such node's level, as the level filter marks it (1 the
    /// oldest).
    pub(crate) marks: Box<[u8]>,
}

/// Where [`ChangedIndex::find`] says a node's index entry is.
pub(crate) enum IndexHit {
    /// The node has no record.
    Unchanged,
    Entry([u64; 2]),
    /// In the level of this mark (an index loaded from its file).
    InLevel(u8),
}

/// 32 nodes of [`ChangedIndex`] in half a cache line: which of them have a record, how many
/// nodes before them do, and the codes of their first `INLINE` such nodes. A push tests
/// nodes at random, so the test of a changed node reads its code from the line that says it
/// changed, not from a second array (on a large graph, a second cache miss per test). 24
/// codes for 32 nodes: more are read from `codes`, rare unless most nodes changed.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Block {
    bits: u32,
    rank: u32,
    codes: [u8; Block::INLINE],
}

impl Block {
    const INLINE: usize = 24;
}

impl ChangedIndex {
    /// Nodes per block.
    const SPAN: usize = 32;

    /// Whether it holds nothing: a failed build (lookups then search the levels).
    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Whether `v` has a record (false past the end).
    #[inline(always)]
    pub(crate) fn contains(&self, v: u32) -> bool {
        self.blocks
            .get(v as usize / Self::SPAN)
            .is_some_and(|b| b.bits >> (v as usize % Self::SPAN) & 1 != 0)
    }

    /// `v`'s code, or None when it has no record (see `entry`).
    #[inline(always)]
    pub(crate) fn code(&self, v: u32) -> Option<u8> {
        self.codes.get(self.rank(v)?).copied()
    }

    /// Asks the memory for `v`'s block (see `code_or`).
    #[inline(always)]
    pub(crate) fn prefetch(&self, v: u32) {
        crate::graph::pages::prefetch_line(
            self.blocks.as_ptr().wrapping_add(v as usize / Self::SPAN),
        );
    }

    /// The code the push's threshold test takes for `v` (`v < n`): its code when it has a
    /// record, else `row_code`, the code of `v` in the row being pushed. That row's codes
    /// hold for every node without a record: an unchanged node of the file has its file
    /// strength, and a created node without a record has strength 0, whose code the merged
    /// row gives it.
    #[inline(always)]
    pub(crate) fn code_or(&self, v: u32, row_code: u8) -> u8 {
        let Some(b) = self.blocks.get(v as usize / Self::SPAN) else {
            return row_code;
        };
        let bit = v as usize % Self::SPAN;
        let i = (b.bits & ((1 << bit) - 1)).count_ones() as usize;
        // Read whether or not the bit is set (a third of a large log's tests have it set, at
        // random: a branch on it would be mispredicted as often).
        let code = match b.codes.get(i) {
            Some(&c) => c,
            None => self
                .codes
                .get(b.rank as usize + i)
                .copied()
                .unwrap_or(row_code),
        };
        if b.bits >> bit & 1 != 0 {
            code
        } else {
            row_code
        }
    }

    /// Where `v`'s entry is (`v < n`).
    #[inline(always)]
    pub(crate) fn find(&self, v: u32) -> IndexHit {
        let Some(r) = self.rank(v) else {
            return IndexHit::Unchanged;
        };
        match self.entries.get(r) {
            Some(&e) => IndexHit::Entry(e),
            None => IndexHit::InLevel(self.marks.get(r).copied().unwrap_or(0)),
        }
    }

    /// The level mark of `v`'s entry in an index loaded from its file, None when `v` has no
    /// record or the index holds the entries themselves.
    #[inline(always)]
    pub(crate) fn mark(&self, v: u32) -> Option<u8> {
        self.marks.get(self.rank(v)?).copied()
    }

    /// The membership bitmap, 64 nodes a word.
    pub(crate) fn bit_words(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks
            .chunks(2)
            .map(|p| u64::from(p[0].bits) | p.get(1).map_or(0, |b| u64::from(b.bits)) << 32)
    }

    /// An index of `n` nodes from its file's parts (see `crate::graph::index_file`): the
    /// membership bitmap, and each member's level mark and code in node order. None when
    /// they disagree (a bit past `n`, another count of members than of marks).
    pub(crate) fn from_marks(
        n: usize,
        bits: &[u64],
        marks: Box<[u8]>,
        codes: Box<[u8]>,
    ) -> Option<ChangedIndex> {
        if bits.len() != n.div_ceil(64) || n % 64 != 0 && bits.last()? >> (n % 64) != 0 {
            return None;
        }
        let total: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
        if total != marks.len() || total != codes.len() {
            return None;
        }
        let mut index = ChangedIndex {
            blocks: ChangedIndex::blocks_of(bits).into_boxed_slice(),
            entries: Box::new([]),
            codes,
            marks,
        };
        index.fill_inline_codes();
        Some(index)
    }

    /// `v`'s position among the nodes with a record, or None when it has none.
    #[inline(always)]
    fn rank(&self, v: u32) -> Option<usize> {
        let b = self.blocks.get(v as usize / Self::SPAN)?;
        let bit = 1u32 << (v as usize % Self::SPAN);
        if b.bits & bit == 0 {
            return None;
        }
        Some(b.rank as usize + (b.bits & (bit - 1)).count_ones() as usize)
    }

    /// The blocks of a membership bitmap of `bits.len() * 64` nodes, codes not yet filled
    /// (ranks below 2^32: nodes are u32).
    fn blocks_of(bits: &[u64]) -> Vec<Block> {
        let mut blocks = Vec::with_capacity(2 * bits.len());
        huge_pages(&blocks);
        let mut total = 0u32;
        for &w in bits {
            for half in [w as u32, (w >> 32) as u32] {
                blocks.push(Block {
                    bits: half,
                    rank: total,
                    codes: [0; Block::INLINE],
                });
                total = total.wrapping_add(half.count_ones());
            }
        }
        blocks
    }

    /// Copies each block's first codes from `codes` into it.
    fn fill_inline_codes(&mut self) {
        for b in self.blocks.iter_mut() {
            let k = b.rank as usize;
            let m = (b.bits.count_ones() as usize).min(Block::INLINE);
            if let Some(c) = self.codes.get(k..k + m) {
                b.codes[..m].copy_from_slice(c);
            }
        }
    }
}

/// One byte per node: what a threshold test of a reader without the index in memory found
/// for the node, so that the next test of it, in this query or a later one, reads this byte
/// instead of searching the levels (the level filter's byte, a bitmap block and an entry:
/// three cache misses on a large log). `UNKNOWN` until a test looks the node up; `UNCHANGED`
/// when the node has no record (the pushing row's code holds); else the code of its current
/// strength. Its pages are zeroed by the system as they are first written, so a reader pays
/// for the nodes its queries test, not for n. Tests on several threads may fill the same
/// byte: each writes the value the snapshot determines, so the race changes nothing.
pub(crate) struct CodeMemo(Box<[AtomicU8]>);

impl CodeMemo {
    pub(crate) const UNKNOWN: u8 = 0;
    pub(crate) const UNCHANGED: u8 = 1;

    fn new(n: usize) -> CodeMemo {
        // `vec![0; n]` asks the allocator for zeroed memory: untouched pages stay unmapped. In
        // huge pages, the first tests of a reader fault in a few of them rather than a page
        // for nearly every node they test.
        let bytes = vec![0u8; n];
        huge_pages(&bytes);
        let bytes = bytes.into_boxed_slice();
        let len = bytes.len();
        let ptr = Box::into_raw(bytes) as *mut AtomicU8;
        // SAFETY: AtomicU8 has the size, alignment and bit validity of u8, and the pointer
        // comes from a boxed slice of `len` u8 with the global allocator.
        CodeMemo(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) })
    }

    /// `v`'s byte (`UNKNOWN` past the end).
    #[inline(always)]
    pub(crate) fn get(&self, v: u32) -> u8 {
        self.0
            .get(v as usize)
            .map_or(Self::UNKNOWN, |b| b.load(AtomicOrdering::Relaxed))
    }

    /// Records what a lookup found for `v`: None when it has no record, else the code of its
    /// current strength. Codes 0 and 1 are not kept (they would read as `UNKNOWN` and
    /// `UNCHANGED`): such nodes are looked up each time.
    #[inline(always)]
    pub(crate) fn keep(&self, v: u32, code: Option<u8>) {
        let m = match code {
            None => Self::UNCHANGED,
            Some(c) if c > Self::UNCHANGED => c,
            Some(_) => return,
        };
        if let Some(b) = self.0.get(v as usize) {
            b.store(m, AtomicOrdering::Relaxed);
        }
    }

    /// Asks the memory for `v`'s byte.
    #[inline(always)]
    pub(crate) fn prefetch(&self, v: u32) {
        crate::graph::pages::prefetch_line(self.0.as_ptr().wrapping_add(v as usize));
    }
}

/// Asks for `v`'s memory (its capacity, before it is first written) in transparent huge
/// pages where the system allows them. The index in memory is read at random, a node at a time:
/// in 4 KiB pages nearly every read of a large index also misses the TLB, and the page walk
/// costs as much again as the miss itself.
fn huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let (p, len) = (v.as_ptr() as usize, v.capacity() * std::mem::size_of::<T>());
        let (start, end) = (p.next_multiple_of(HUGE), (p + len) & !(HUGE - 1));
        if end > start {
            // SAFETY: the range lies inside `v`'s allocation; the advice changes how its pages
            // are backed, never their contents (a failure, huge pages off, changes nothing).
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// A copy of `m` in memory asked for in transparent huge pages (see `huge_pages`): a level
/// filter's copy is n bytes, in 4 KiB pages one fault per 4,096 nodes.
pub(crate) fn copy_in_huge_pages(m: &[u8]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(m.len());
    huge_pages(&v);
    v.extend_from_slice(m);
    v.into_boxed_slice()
}

/// A copy of `m`, in `spare`'s memory when it holds some (see [`FilterSpare`]).
pub(crate) fn copy_into_spare(m: &[u8], spare: Option<&FilterSpare>) -> Box<[u8]> {
    match spare.and_then(|s| s.lock().ok()?.take()) {
        Some(buf) => {
            let mut v = buf.into_vec();
            v.clear();
            v.extend_from_slice(m);
            v.into_boxed_slice()
        }
        None => copy_in_huge_pages(m),
    }
}

/// A weighted index entry's words (node, record word, strength bits), as `level_entry` gives
/// them.
fn weighted_entry(e: &[u64]) -> Result<(u32, u64, u64)> {
    if e[0] >> 32 != 0 {
        return Err(Error::format(
            "change log corrupted: an index entry is malformed",
        ));
    }
    Ok((e[0] as u32, e[1], e[2]))
}

/// An unweighted index entry's words (node, degree, record word in two halves), as
/// `level_entry` gives them (the degree as f64 bits).
fn unweighted_entry(e: &[u32]) -> (u32, u64, u64) {
    let word = u64::from(e[2]) | u64::from(e[3]) << 32;
    (e[0], word, f64::from(e[1]).to_bits())
}

/// A log of at most this many bytes is hinted whole when a graph is opened with `prefetch`
/// (see [`Overlay::hint_at_open`]).
pub(crate) const WHOLE_LOG_HINT: u64 = 4 << 20;

/// The levels from which a reader builds the level filter (`Overlay::build_level_filter`).
/// The bitmap blocks of a node in two levels are asked for together and cost about one
/// miss; the filter, one line, then saves nothing and costs the nodes it lets through a
/// line more. Measured with a filter of one bit per node and a reader just opened (its
/// second query), 1 % of the edges changed, against the compacted file: an 8M-node graph
/// with 3 levels, 1.8x-1.95x with the filter and 2.05x-2.2x without; a 65M-node graph with
/// 2 levels, 3.0x-3.8x with a filter and 2.5x-3.0x without (docs/BENCHMARKS.md).
pub(crate) const LEVEL_FILTER_MIN_LEVELS: usize = 3;

/// A log whose index holds at most this many entries has it built in memory when it is opened
/// (see [`Overlay::build_changed`]): cheaper than the searches of a first query.
pub(crate) const EAGER_INDEX_ENTRIES: u64 = 1 << 16;

/// A level of the index: `count` entries ascending by node, each with its newest record (its
/// offset, or a one-arc delta) and its row's strength (its degree on unweighted graphs), so
/// that the push reads a threshold without touching the record. A node's entry is in the
/// newest level that holds it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Level {
    /// Offset of the level's header.
    pub(crate) at: u64,
    pub(crate) count: u64,
    /// Offsets of `u32[fences]` (the node of every `fence_stride`-th entry; none in a level of
    /// one page of entries) and of the entries (`level_entry_len` bytes each).
    pub(crate) fence: u64,
    pub(crate) fences: u64,
    pub(crate) entries: u64,
    pub(crate) weighted: bool,
    /// Blocks of the level's bitmap (0: none; see `LEVEL_BITMAP_MIN_ENTRIES`) at `bits`, 64
    /// bytes each: `u64` the entries before the block, then 7 words, bit `v % 64` of word
    /// `(v % 448) / 64` of block `v / 448` set when `v` is in the level.
    pub(crate) blocks: u64,
    pub(crate) bits: u64,
}

/// Entries of a level's fence: the node of every `fence_stride`-th entry, none when the
/// level's entries fit in one block (the search is then of the entries alone).
pub(crate) fn fence_len(count: u64, weighted: bool) -> u64 {
    let stride = fence_stride(weighted);
    if count > stride {
        count.div_ceil(stride)
    } else {
        0
    }
}

/// `x` rounded up to a multiple of 64 (a cache line).
pub(crate) fn pad64(x: u64) -> Option<u64> {
    Some(x.checked_add(63)? & !63)
}

impl Level {
    /// The offset of this level's bitmap block that covers `v`, None when it has none.
    #[inline(always)]
    pub(crate) fn bitmap_block_at(&self, v: u32) -> Option<u64> {
        let b = u64::from(v) / BITMAP_BLOCK_NODES;
        (b < self.blocks).then(|| self.bits + BITMAP_BLOCK_LEN * b)
    }

    /// The level's layout at `at`, whose header says it holds `count` entries and a bitmap of
    /// `blocks` blocks.
    pub(crate) fn layout(at: u64, count: u64, blocks: u64, weighted: bool) -> Option<Level> {
        let fences = fence_len(count, weighted);
        let fence = at.checked_add(LEVEL_HEADER_LEN as u64)?;
        let entries = fence.checked_add(pad8(fences.checked_mul(4)?))?;
        let after = entries.checked_add(count.checked_mul(level_entry_len(weighted))?)?;
        let bits = if blocks > 0 { pad64(after)? } else { after };
        bits.checked_add(blocks.checked_mul(BITMAP_BLOCK_LEN)?)?;
        Some(Level {
            at,
            count,
            fence,
            fences,
            entries,
            weighted,
            blocks,
            bits,
        })
    }

    pub(crate) fn end(&self) -> u64 {
        self.bits + self.blocks * BITMAP_BLOCK_LEN
    }

    /// The bitmap blocks a graph of `n` nodes needs.
    pub(crate) fn blocks_for(n: u64) -> u64 {
        n.div_ceil(BITMAP_BLOCK_NODES)
    }
}

impl Overlay {
    /// Reads the commit named by `slot` (O(1) plus the run directory, at most ~64 entries).
    pub(crate) fn new(
        data: Bytes,
        header: LogHeader,
        slot: Slot,
        base_n: u32,
        kind: IdKind,
    ) -> Result<Overlay> {
        let bytes = data.get();
        let (trailer, c) = Trailer::decode(bytes, slot.trailer)?;
        if c != slot.trailer_checksum || trailer.seq != slot.seq {
            return Err(Error::format(
                "change log corrupted: the superblock does not match its commit record",
            ));
        }
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
            changed_file: OnceLock::new(),
            level_filter: OnceLock::new(),
            code_memo: OnceLock::new(),
            index_in_memory: true,
            hinted: HintedPages::new(slot.trailer as usize),
            filter_spare: None,
        };
        o.runs = o.read_runs(kind)?;
        o.levels = o.read_levels()?;
        Ok(o)
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        self.data.get()
    }

    #[cfg(unix)]
    pub(crate) fn advise(&self, advice: memmap2::Advice) {
        if let Bytes::Map(m) = &self.data {
            let _ = m.advise(advice);
        }
    }

    /// `count` items of `T` at `off`, inside the committed bytes and aligned.
    pub(crate) fn slice<T: Copy>(&self, off: u64, count: u64) -> Result<&[T]> {
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

    pub(crate) fn read_runs(&self, kind: IdKind) -> Result<Vec<Run>> {
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
            let h: &[u32] = self.slice(at, 4)?;
            let bytes_len = self.slice::<u64>(at + 16, 1)?[0];
            let (first, count) = (u64::from(h[2]), u64::from(h[1]));
            if h[0] != RUN_MAGIC || first != next || count == 0 || h[3] != 0 {
                return Err(bad("bad id run"));
            }
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

    /// Every commit's checksums and operations (see `log_format::read_log`), up to this one.
    pub(crate) fn verify(&self) -> Result<()> {
        crate::graph::log_format::read_log_at(self.bytes(), self.slot).map(|_| ())
    }

    /// The index entry of `v` (`v < n`): its newest record's offset (0: none) and the row's
    /// strength (its degree on unweighted graphs), which the push's thresholds read without
    /// touching the record. Searches the levels newest first: in each, the fence (one entry
    /// per 4 KiB of nodes) and then one page of its nodes.
    #[inline]
    pub(crate) fn leaf(&self, v: u32) -> Result<(u64, f64)> {
        if let Some(c) = self.changed_in_memory() {
            return match c.find(v) {
                IndexHit::Unchanged => Ok((0, 0.0)),
                IndexHit::Entry(e) => Ok((e[0], f64::from_bits(e[1]))),
                IndexHit::InLevel(k) => {
                    let found = match self.level_of_mark(k) {
                        Some(l) => self.find_in(l, v)?,
                        None => None,
                    };
                    let (word, value) = found.ok_or_else(|| {
                        Error::format(format!(
                            "change log corrupted: node {v} is not in the level its index \
                             file names"
                        ))
                    })?;
                    Ok((word, f64::from_bits(value)))
                }
            };
        }
        if let Some(m) = self.level_map() {
            // The level the map names is the first that the search below would find (only a
            // corrupted level's search can disagree: it then runs, and reports what is wrong).
            let k = m.get(v as usize).copied().unwrap_or(0);
            if k == 0 {
                return Ok((0, 0.0));
            }
            if let Some(l) = self.level_of_mark(k) {
                if let Some((word, value)) = self.find_in(l, v)? {
                    return Ok((word, f64::from_bits(value)));
                }
            }
        }
        for l in &self.levels {
            if let Some((word, value)) = self.find_in(l, v)? {
                return Ok((word, f64::from_bits(value)));
            }
        }
        Ok((0, 0.0))
    }

    /// Whether the level filter, once built, says no level holds `v`.
    #[inline(always)]
    fn filtered_out(&self, v: u32) -> bool {
        self.level_map()
            .and_then(|m| m.get(v as usize))
            .is_some_and(|&k| k == 0)
    }

    /// The level filter once built (and not empty).
    #[inline(always)]
    pub(crate) fn level_map(&self) -> Option<&[u8]> {
        self.level_filter
            .get()
            .map(|m| &m[..])
            .filter(|m| !m.is_empty())
    }

    /// Builds the level filter (n bytes, once per snapshot): for each node, the newest level
    /// that holds it, so that a lookup reads one byte and then searches that level only (a
    /// node that no level holds, most of them, reads nothing more) instead of a bitmap
    /// block or a page of entries in every level down to it. It reads each level's bitmap
    /// (n/7 bytes; the entries of a level too small to have one) and writes a byte per
    /// entry, far less than the index in memory reads, so a reader builds it at its first
    /// push (`Graph::prepare_lookups`). Only for a log of `LEVEL_FILTER_MIN_LEVELS` levels
    /// or more, and not once the index is in memory.
    pub(crate) fn build_level_filter(&self) {
        if self.levels.len() < LEVEL_FILTER_MIN_LEVELS || self.changed_in_memory().is_some() {
            return;
        }
        self.level_filter.get_or_init(|| {
            self.level_filter_marks()
                .unwrap_or_default()
                .into_boxed_slice()
        });
    }

    /// The level filter's bytes (see `build_level_filter`). A corrupted bitmap gives a
    /// wrong filter only where the level's own bitmap is wrong, which lookups took as it is
    /// before: the filter answers nothing the levels would not.
    pub(crate) fn level_filter_marks(&self) -> Result<Vec<u8>> {
        // It reads the bitmaps and the small levels' entries whole: asked for at once, a cold
        // log's pages come in large reads instead of one fault at a time (the map is advised
        // random).
        #[cfg(unix)]
        if let Bytes::Map(m) = &self.data {
            for l in &self.levels {
                let (at, len) = if l.blocks > 0 {
                    (l.bits, BITMAP_BLOCK_LEN * l.blocks)
                } else {
                    (l.entries, level_entry_len(l.weighted) * l.count)
                };
                let len = len.min(self.end.saturating_sub(at));
                let _ = m.advise_range(memmap2::Advice::WillNeed, at as usize, len as usize);
            }
        }
        let mut map = vec![0u8; self.n as usize];
        // Its pages are first written below: zeroed and mapped 2 MiB at a time where allowed.
        huge_pages(&map);
        let words_per_block = (BITMAP_BLOCK_NODES / 64) as usize;
        let bitmaps = self
            .levels
            .iter()
            .map(|l| match l.blocks {
                0 => Ok(&[][..]),
                _ => self.slice::<u64>(l.bits, l.blocks * (BITMAP_BLOCK_LEN / 8)),
            })
            .collect::<Result<Vec<_>>>()?;
        // The small levels' next entries, and the node of the last one (they are sorted).
        let mut next = vec![(0u64, 0u32); self.levels.len()];
        // The nodes in chunks of 64 blocks (28,672 nodes), each marked by every level in turn,
        // oldest first, so that a newer level's mark overwrites an older one's (at most
        // `MAX_LEVELS` levels: the marks fit in a byte): the chunk's 28 KB of marks stay in
        // the cache while the levels write them.
        let levels = self.levels.len();
        let total_blocks = u64::from(self.n).div_ceil(BITMAP_BLOCK_NODES);
        // (Two blocks in tests, whose graphs have a few thousand nodes.)
        const CHUNK_BLOCKS: u64 = if cfg!(test) { 2 } else { 64 };
        for first in (0..total_blocks).step_by(CHUNK_BLOCKS as usize) {
            let last = (first + CHUNK_BLOCKS).min(total_blocks);
            for (at, l) in self.levels.iter().enumerate().rev() {
                let mark = (levels - at) as u8;
                if l.blocks > 0 {
                    // Block b's 7 words after its count cover nodes 448b.. in order.
                    for b in first..last.min(l.blocks) {
                        let block = &bitmaps[at][b as usize * (1 + words_per_block)..]
                            [..1 + words_per_block];
                        for (k, &w) in block[1..].iter().enumerate() {
                            let mut w = w;
                            while w != 0 {
                                let v = (b as usize * words_per_block + k) * 64
                                    + w.trailing_zeros() as usize;
                                if let Some(m) = map.get_mut(v) {
                                    *m = mark;
                                }
                                w &= w - 1;
                            }
                        }
                    }
                } else {
                    let (k, prev) = &mut next[at];
                    while *k < l.count {
                        let v = self.level_entry(l, *k)?.0;
                        if u64::from(v) >= last * BITMAP_BLOCK_NODES {
                            break;
                        }
                        if *k > 0 && v <= *prev {
                            return Err(Error::format(
                                "change log corrupted: an index level is not sorted",
                            ));
                        }
                        if let Some(m) = map.get_mut(v as usize) {
                            *m = mark;
                        }
                        (*k, *prev) = (*k + 1, v);
                    }
                }
            }
        }
        Ok(map)
    }

    /// This snapshot's level filter from the previous snapshot's (`prev`, the filter of
    /// the levels `prev_levels`, newest first), for a writer's next snapshot: the commit
    /// between them wrote one level, the union of its changes and of the newest previous
    /// levels, and kept the others. Marking the new level's nodes with its number gives the
    /// filter `level_filter_marks` builds, at the cost of that level's entries, not of n.
    /// Nothing is set when the levels are not those of such a commit. (A commit that wrote
    /// no index left the levels as they were: its newest level is marked again, unchanged.)
    pub(crate) fn carry_level_filter(&self, prev: Box<[u8]>, prev_levels: &[Level]) {
        let Some((newest, kept)) = self.levels.split_first() else {
            return;
        };
        let carried = prev_levels.len() >= kept.len()
            && kept
                .iter()
                .zip(&prev_levels[prev_levels.len() - kept.len()..])
                .all(|(a, b)| a.at == b.at);
        if !carried || prev.len() > self.n as usize {
            return;
        }
        let mut map = prev.into_vec();
        map.resize(self.n as usize, 0);
        let mark = self.levels.len() as u8;
        let marked = self.for_each_entry(newest, |v, _, _| {
            map.get_mut(v as usize)
                .map(|m| *m = mark)
                .ok_or_else(|| Error::format("change log corrupted: a node out of range"))
        });
        if marked.is_ok() {
            let _ = self.level_filter.set(map.into_boxed_slice());
        }
    }

    /// Entry `k` of level `l` (`k < count`): its node, its record word (an offset, or a
    /// one-arc delta) and its row's strength as f64 bits (the degree on unweighted graphs).
    #[inline]
    pub(crate) fn level_entry(&self, l: &Level, k: u64) -> Result<(u32, u64, u64)> {
        let at = l.entries + level_entry_len(l.weighted) * k;
        if l.weighted {
            weighted_entry(self.slice(at, 3)?)
        } else {
            Ok(unweighted_entry(self.slice(at, 4)?))
        }
    }

    /// `f(node, record word, strength bits)` for each entry of level `l` in order, as
    /// `level_entry` gives them; the level's bounds are checked once, not per entry (an
    /// index of a few thousand entries is built at open, where a cold query waits for it).
    pub(crate) fn for_each_entry(
        &self,
        l: &Level,
        mut f: impl FnMut(u32, u64, u64) -> Result<()>,
    ) -> Result<()> {
        if l.weighted {
            for e in self.slice::<u64>(l.entries, 3 * l.count)?.chunks_exact(3) {
                let (v, word, value) = weighted_entry(e)?;
                f(v, word, value)?;
            }
        } else {
            for e in self.slice::<u32>(l.entries, 4 * l.count)?.chunks_exact(4) {
                let (v, word, value) = unweighted_entry(e);
                f(v, word, value)?;
            }
        }
        Ok(())
    }

    /// Level `l`'s entries merged with `newer` (ascending by node, newer than `l`): in node
    /// order, `newer`'s entry where both hold a node. Reads the level in place, without a copy
    /// of its entries (a large level holds millions).
    pub(crate) fn merged_with_level(
        &self,
        l: &Level,
        newer: &[(u32, u64, u64)],
    ) -> Result<Vec<(u32, u64, u64)>> {
        let count = l.count as usize;
        let mut out = Vec::with_capacity(newer.len() + count);
        let mut merge = |older: &dyn Fn(usize) -> Result<(u32, u64, u64)>| -> Result<()> {
            let mut j = 0;
            for i in 0..count {
                let o = older(i)?;
                while j < newer.len() && newer[j].0 < o.0 {
                    out.push(newer[j]);
                    j += 1;
                }
                if j < newer.len() && newer[j].0 == o.0 {
                    out.push(newer[j]);
                    j += 1;
                } else {
                    out.push(o);
                }
            }
            out.extend_from_slice(&newer[j..]);
            Ok(())
        };
        if l.weighted {
            let e: &[u64] = self.slice(l.entries, 3 * l.count)?;
            merge(&|i| weighted_entry(&e[3 * i..3 * i + 3]))?;
        } else {
            let e: &[u32] = self.slice(l.entries, 4 * l.count)?;
            merge(&|i| Ok(unweighted_entry(&e[4 * i..4 * i + 4])))?;
        }
        Ok(out)
    }

    /// The first index and the length of the block of `l`'s entries that may hold `v` (reads
    /// only the level's fence).
    #[inline]
    fn block_range(&self, l: &Level, v: u32) -> Result<(u64, u64)> {
        let stride = fence_stride(l.weighted);
        let fence: &[u32] = self.slice(l.fence, l.fences)?;
        let b = fence.partition_point(|&x| x <= v).saturating_sub(1) as u64;
        let first = b * stride;
        Ok((first, (l.count - first.min(l.count)).min(stride)))
    }

    /// `v`'s entry in level `l`, if it has one (its record word and value, as `level_entry`):
    /// from the level's bitmap when it has one (one cache line; the entry found is checked to
    /// be `v`'s), else by searching its fence and one page of its entries.
    #[inline]
    pub(crate) fn find_in(&self, l: &Level, v: u32) -> Result<Option<(u64, u64)>> {
        let k = if l.blocks > 0 {
            let Some(at) = l.bitmap_block_at(v) else {
                return Ok(None);
            };
            let block: &[u64] = self.slice(at, 8)?;
            match bitmap_rank(block, v) {
                Some(k) => k,
                None => return Ok(None),
            }
        } else {
            let (first, len) = self.block_range(l, v)?;
            let per = (level_entry_len(l.weighted) / 4) as usize;
            let e: &[u32] = self.slice(
                l.entries + level_entry_len(l.weighted) * first,
                len * per as u64,
            )?;
            // Binary search of the block's nodes (the first word of each entry).
            let (mut lo, mut hi) = (0usize, len as usize);
            while lo < hi {
                let mid = (lo + hi) / 2;
                match e[mid * per].cmp(&v) {
                    Ordering::Less => lo = mid + 1,
                    Ordering::Greater => hi = mid,
                    Ordering::Equal => {
                        lo = mid;
                        break;
                    }
                }
            }
            if lo >= len as usize || e[lo * per] != v {
                return Ok(None);
            }
            first + lo as u64
        };
        if k >= l.count {
            return Err(Error::format(
                "change log corrupted: an index level's bitmap is wrong",
            ));
        }
        let (node, word, value) = self.level_entry(l, k)?;
        if node != v {
            return Err(Error::format(
                "change log corrupted: an index level's bitmap is wrong",
            ));
        }
        Ok(Some((word, value)))
    }

    /// Asks the memory for the bitmap block of each of `nodes` in each level that has one:
    /// the lines `find_in` reads first (a hint for a reader whose index is not in memory yet).
    #[inline(always)]
    pub(crate) fn prefetch_levels(&self, nodes: &[u32]) {
        if let Some(f) = self.level_map() {
            // The filter's lines only: the nodes it lets through miss their level's block.
            for &v in nodes {
                crate::graph::pages::prefetch_line(f.as_ptr().wrapping_add(v as usize));
            }
            return;
        }
        let base = self.bytes().as_ptr();
        for &v in nodes {
            for at in self.levels.iter().filter_map(|l| l.bitmap_block_at(v)) {
                crate::graph::pages::prefetch_line(base.wrapping_add(at as usize));
            }
        }
    }

    /// Step `step` of asking the memory for the lines that `leaf(v)` reads, for a caller that
    /// walks nodes in order and asks each step for a node further ahead than the next step:
    /// 0 the level filter's byte (or the index block in memory), 1 the bitmap block of the
    /// level the byte names, 2 the entry the block's rank gives. A step whose input is not
    /// there yet reads it from memory; nothing is checked: a hint.
    #[inline]
    pub(crate) fn prefetch_leaf_step(&self, v: u32, step: u8) {
        use crate::graph::pages::prefetch_line;
        let k = match self.changed_in_memory() {
            Some(c) if step == 0 => return c.prefetch(v),
            // An index loaded from its file names the level (its block was asked for at
            // step 0).
            Some(c) => match c.mark(v) {
                Some(k) => k,
                None => return,
            },
            None => {
                let Some(f) = self.level_map() else { return };
                let Some(&k) = f.get(v as usize) else { return };
                if step == 0 {
                    return prefetch_line(f.as_ptr().wrapping_add(v as usize));
                }
                k
            }
        };
        let line = |off: u64| prefetch_line(self.bytes().as_ptr().wrapping_add(off as usize));
        match step {
            0 => {}
            1 => {
                if let Some(at) = self.level_of_mark(k).and_then(|l| l.bitmap_block_at(v)) {
                    line(at);
                }
            }
            _ => {
                if let Some(at) = self
                    .level_of_mark(k)
                    .and_then(|l| self.bitmap_entry_at(l, v))
                {
                    line(at);
                }
            }
        }
    }

    /// The level that the level filter's mark `k` names (1 the oldest), None for 0 or a mark
    /// past the levels.
    #[inline(always)]
    fn level_of_mark(&self, k: u8) -> Option<&Level> {
        match usize::from(k) {
            0 => None,
            k => self.levels.len().checked_sub(k).map(|i| &self.levels[i]),
        }
    }

    /// The offset of `v`'s entry in level `l`, from `l`'s bitmap block: None when `l` has no
    /// block for `v`, the block cannot be read, `v`'s bit is clear or its rank is past the
    /// level (for hints: `find_in` reports those as it finds them).
    #[inline(always)]
    fn bitmap_entry_at(&self, l: &Level, v: u32) -> Option<u64> {
        let block = self.slice::<u64>(l.bitmap_block_at(v)?, 8).ok()?;
        let k = bitmap_rank(block, v).filter(|&k| k < l.count)?;
        Some(l.entries + level_entry_len(l.weighted) * k)
    }

    /// Reads the level directory named by the trailer (O(levels)).
    pub(crate) fn read_levels(&self) -> Result<Vec<Level>> {
        self.levels_of(&self.trailer)
    }

    /// The levels of the commit of trailer `t` (this snapshot's, or an earlier commit's of
    /// this log), newest first.
    fn levels_of(&self, t: &Trailer) -> Result<Vec<Level>> {
        if t.index == 0 {
            return Ok(Vec::new());
        }
        let bad = || Error::format("change log corrupted: its index is malformed");
        let offs: &[u64] = self.slice(t.index, u64::from(t.levels))?;
        let mut out = Vec::with_capacity(offs.len());
        for &at in offs {
            let head: &[u32] = self.slice(at, 4)?;
            let (count, blocks) = (u64::from(head[1]), u64::from(head[2]));
            // A bitmap covers at most the nodes of the snapshot that wrote the level.
            if head[0] != LEVEL_MAGIC
                || count == 0
                || blocks > Level::blocks_for(t.num_nodes)
                || head[3] != 0
            {
                return Err(bad());
            }
            let l = Level::layout(at, count, blocks, self.header.weighted).ok_or_else(bad)?;
            if l.end() > self.end {
                return Err(bad());
            }
            out.push(l);
        }
        Ok(out)
    }

    /// Read-ahead hint for the bytes `[off, off + len)` of the mapped log, unless every page
    /// of it was asked for already (see [`HintedPages`]).
    #[cfg(unix)]
    pub(crate) fn will_need(&self, off: u64, len: u64) {
        if let Bytes::Map(m) = &self.data {
            let end = off.saturating_add(len).min(self.end);
            if off >= end {
                return;
            }
            if self.hinted.mark(off as usize, (end - off) as usize) {
                let _ = m.advise_range(
                    memmap2::Advice::WillNeed,
                    off as usize,
                    (end - off) as usize,
                );
            }
        }
    }

    /// Read-ahead hints (asynchronous) for the index, for a graph opened with `prefetch`:
    /// each level's bitmap (64 bytes per 448 nodes) when it has one, else its fence (4 bytes
    /// per 4 KiB of entries), which every lookup reads and a cold file would otherwise
    /// serve one synchronous fault at a time. A log of at most `WHOLE_LOG_HINT` bytes is
    /// hinted whole instead: a cold query on a graph with a small log would otherwise fault
    /// most of it in one page at a time.
    #[cfg(unix)]
    pub(crate) fn hint_at_open(&self) {
        let Bytes::Map(m) = &self.data else {
            return;
        };
        if self.end <= WHOLE_LOG_HINT {
            // A file of at most that size was asked for whole when it was mapped.
            if m.len() as u64 > WHOLE_LOG_HINT {
                let _ = m.advise_range(memmap2::Advice::WillNeed, 0, self.end as usize);
            }
            return;
        }
        for l in &self.levels {
            let (at, len) = if l.blocks > 0 {
                (l.bits, BITMAP_BLOCK_LEN * l.blocks)
            } else {
                (l.fence, 4 * l.fences)
            };
            let len = len.min(self.end - at);
            let _ = m.advise_range(memmap2::Advice::WillNeed, at as usize, len as usize);
        }
    }

    /// Hints the index entry of `v` (its threshold): the entries that `leaf_hint_ranges`
    /// names.
    #[cfg(unix)]
    pub(crate) fn prefetch_leaf(&self, v: u32) {
        // In memory (the index built), or hinted whole at open (a small log): nothing to do.
        if self.changed.get().is_some() || self.file_index().is_some() || self.end <= WHOLE_LOG_HINT
        {
            return;
        }
        self.leaf_hint_ranges(v, |off, len| self.will_need(off, len));
    }

    /// The log's bytes, as `(offset, length)` ranges given to `f`, that a lookup of `v` reads
    /// for its index entry: with the level filter, in the one level that holds `v`, its entry
    /// (from the level's bitmap block, which the filter's build read whole and the lookup reads
    /// next) or, in a level without a bitmap, the block of entries that holds it; without the
    /// filter, the block of each level without a bitmap that may hold `v` (their fences say
    /// which; a bitmap level's entry needs its block, which a hint then does not read).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn leaf_hint_ranges(&self, v: u32, mut f: impl FnMut(u64, u64)) {
        let mut block_of = |l: &Level| match self.block_range(l, v) {
            Ok((first, len)) => {
                let e = level_entry_len(l.weighted);
                f(l.entries + e * first, e * len);
                true
            }
            Err(_) => false,
        };
        let mark = match self.file_index() {
            Some(c) => Some(c.mark(v).unwrap_or(0)),
            None => self
                .level_map()
                .map(|m| m.get(v as usize).copied().unwrap_or(0)),
        };
        if let Some(k) = mark {
            match self.level_of_mark(k) {
                Some(l) if l.blocks == 0 => {
                    block_of(l);
                }
                Some(l) => {
                    if let Some(at) = self.bitmap_entry_at(l, v) {
                        f(at, level_entry_len(l.weighted));
                    }
                }
                None => {}
            }
            return;
        }
        for l in self.levels.iter().filter(|l| l.blocks == 0) {
            if !block_of(l) {
                return;
            }
        }
    }

    /// Hints `v`'s row record when it has one (returns whether it has). A record may be a delta
    /// on the base file's row: the caller hints that row too.
    #[cfg(unix)]
    pub(crate) fn prefetch_record(&self, v: u32) -> bool {
        match self.leaf(v) {
            // A one-arc delta is in the index entry: only the row beneath is read.
            Ok((word, _)) if word & INLINE_DELTA != 0 => true,
            Ok((off, strength)) if off != 0 => {
                // A whole row's length is known on unweighted graphs (the leaf holds the
                // degree), a delta's is not: hint at most 16 pages (a delta fits in the first).
                let len = if self.header.weighted {
                    4096
                } else {
                    row_header_len(false)
                        .saturating_add((strength as u64).saturating_mul(4))
                        .min(1 << 16)
                };
                self.will_need(off, len);
                true
            }
            _ => false,
        }
    }

    /// Whether `v`'s row is known not to be in the log without reading the log (for read-ahead
    /// hints, which must not fault pages in): true only once the index or the level filter
    /// is built in memory and `v`'s bit is clear.
    #[inline(always)]
    pub(crate) fn known_unchanged(&self, v: u32) -> bool {
        (v as usize) < self.n as usize
            && match self.changed_in_memory() {
                Some(c) => !c.contains(v),
                None => self.filtered_out(v),
            }
    }

    /// The index in memory once built (a failed build holds nothing: None, and lookups
    /// search the levels).
    #[inline(always)]
    pub(crate) fn changed_in_memory(&self) -> Option<&ChangedIndex> {
        match self.changed.get().filter(|c| !c.is_empty()) {
            Some(c) => Some(c),
            None => self.file_index(),
        }
    }

    /// The index loaded from the index file, when it was (see `load_index_file`).
    #[inline(always)]
    fn file_index(&self) -> Option<&ChangedIndex> {
        self.changed_file.get().filter(|c| !c.is_empty())
    }

    /// Loads the index from the snapshot's index file `path` (`crate::graph::index_file`),
    /// once, when there is one that serves this commit (see `index_from_file`), for a log of
    /// `LEVEL_FILTER_MIN_LEVELS` levels or more, unless the index is in memory already or
    /// this is a writer's snapshot (whose level filter the next commit carries at the cost of
    /// the new level's entries, where the file would cost O(n / 64 + changed nodes) at every
    /// commit): it reads a bit per node and 2 bytes per changed node, less than the level
    /// filter it replaces (a bitmap of each level), and lookups then read one block however
    /// many levels there are. Anything wrong with the file (another log's, torn, corrupted)
    /// leaves it unused: the reader builds the level filter as without it.
    pub(crate) fn load_index_file(&self, path: &Path) {
        if !self.index_in_memory
            || !self.takes_index_file()
            || self.changed_in_memory().is_some()
            || self.filter_spare.is_some()
        {
            return;
        }
        self.changed_file
            .get_or_init(|| self.index_from_file(path).unwrap_or_default());
    }

    /// Whether this commit gets an index file: a log of `LEVEL_FILTER_MIN_LEVELS` levels or
    /// more, whose readers would otherwise build the level filter (with fewer, a lookup
    /// searches the levels directly).
    pub(crate) fn takes_index_file(&self) -> bool {
        self.levels.len() >= LEVEL_FILTER_MIN_LEVELS
    }

    /// The commit this snapshot shows, as its index file names it.
    pub(crate) fn index_commit(&self) -> crate::graph::index_file::Commit {
        crate::graph::index_file::Commit {
            base_checksum: self.header.base_checksum,
            trailer: self.slot.trailer,
            trailer_checksum: self.slot.trailer_checksum,
            n: u64::from(self.n),
        }
    }

    /// The index of this commit from the index file of the graph file `path`, or None when
    /// there is no usable one or anything in it is wrong. The file may name this commit, or
    /// an earlier commit of this log whose oldest levels this commit kept (commits write a
    /// level and merge only the newest ones): its marks of those levels still hold, and the
    /// entries of the newer levels, read from the log, replace the others
    /// ([`Overlay::index_updated`]). A writer thus need not rewrite the file at every commit.
    pub(crate) fn index_from_file(&self, path: &Path) -> Option<ChangedIndex> {
        let parts = self.index_file_parts(path)?;
        ChangedIndex::from_marks(
            self.n as usize,
            &parts.bits,
            parts.marks.into(),
            parts.codes.into(),
        )
    }

    /// The parts of this commit's index (see `index_from_file`) from the index file of the
    /// graph file `path`, or None when it cannot serve.
    pub(crate) fn index_file_parts(&self, path: &Path) -> Option<crate::graph::index_file::Parts> {
        let mut kept = 0;
        let (commit, parts) = crate::graph::index_file::read(path, |c| {
            let (levels, k) = self.index_file_levels(c)?;
            kept = k;
            Some(levels)
        })?;
        if commit == self.index_commit() {
            Some(parts)
        } else {
            self.index_updated(parts, commit.n, kept)
        }
    }

    /// Whether an index file naming `c` can serve this snapshot: its number of levels and
    /// how many of them, the oldest, this snapshot still has (all for this commit), or None
    /// when `c` is not this log's or keeps none of this snapshot's levels.
    pub(crate) fn index_file_levels(
        &self,
        c: &crate::graph::index_file::Commit,
    ) -> Option<(usize, usize)> {
        if *c == self.index_commit() {
            return Some((self.levels.len(), self.levels.len()));
        }
        if c.base_checksum != self.header.base_checksum
            || c.n > u64::from(self.n)
            || c.trailer >= self.slot.trailer
        {
            return None;
        }
        // The commit's record, still in the log (it only grows until compaction, which
        // replaces the base file and so its checksum).
        let (t, checksum) = Trailer::decode(&self.bytes()[..self.end as usize], c.trailer).ok()?;
        if checksum != c.trailer_checksum || t.num_nodes != c.n {
            return None;
        }
        let old = self.levels_of(&t).ok()?;
        let kept = old
            .iter()
            .rev()
            .zip(self.levels.iter().rev())
            .take_while(|(a, b)| a.at == b.at && a.count == b.count)
            .count();
        (kept > 0).then_some((old.len(), kept))
    }

    /// Read-ahead for the entries of the levels above the oldest `kept`, which a reader with
    /// an earlier commit's index file reads whole (its map is advised random: without the
    /// hint a cold log's entries would come one page fault at a time).
    pub(crate) fn will_need_levels_above(&self, kept: usize) {
        #[cfg(unix)]
        for l in &self.levels[..self.levels.len().saturating_sub(kept)] {
            self.will_need(l.entries, level_entry_len(l.weighted) * l.count);
        }
        #[cfg(not(unix))]
        let _ = kept;
    }

    /// The bytes of the entries of this snapshot's levels that are newer than those of the
    /// index file of the graph file `path` (0 when it names this commit), or None when there
    /// is no file that can serve this snapshot (reads its header only).
    pub(crate) fn newer_than_index_file(&self, path: &Path) -> Option<u64> {
        let commit = crate::graph::index_file::named_commit(path)?;
        let (_, kept) = self.index_file_levels(&commit)?;
        let newer = &self.levels[..self.levels.len() - kept];
        Some(
            newer
                .iter()
                .map(|l| l.count * level_entry_len(l.weighted))
                .sum(),
        )
    }

    /// The parts of an index file of an earlier commit (`old_n` nodes, whose oldest `kept`
    /// levels are this snapshot's oldest) brought to this snapshot: each entry of this
    /// snapshot's newer levels replaces the file's mark and code of its node or adds the
    /// node. O(n / 64 + changed nodes + those entries). None when a node the file marks in
    /// one of its newer levels has no entry in this snapshot's (those levels were merged into
    /// these, so each such node has one), or when the file does not match this log.
    pub(crate) fn index_updated(
        &self,
        old: crate::graph::index_file::Parts,
        old_n: u64,
        kept: usize,
    ) -> Option<crate::graph::index_file::Parts> {
        let levels = self.levels.len();
        let weighted = self.header.weighted;
        self.will_need_levels_above(kept);
        // The newer levels' entries (node, mark, code), oldest level first, then in node
        // order with each node's newest entry last (a stable sort).
        let mut newer = Vec::new();
        for (at, l) in self.levels[..levels - kept].iter().enumerate().rev() {
            let mark = (levels - at) as u8;
            self.for_each_entry(l, |v, _, value| {
                let s = f64::from_bits(value);
                if !(s.is_finite() && s >= 0.0) {
                    return Err(Error::format("change log corrupted: a strength"));
                }
                newer.push((v, mark, crate::graph::strength_code::code_of(weighted, s)));
                Ok(())
            })
            .ok()?;
        }
        newer.sort_by_key(|e| e.0);
        let n = self.n as usize;
        // (`read` checked the file's bitmap against its `n` and its marks.)
        if old_n > n as u64 {
            return None;
        }
        let mut bits = old.bits;
        bits.resize(n.div_ceil(64), 0);
        let cap = old.marks.len() + newer.len();
        let (mut marks, mut codes) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        // The old members between two newer nodes are copied as one run: their marks must
        // name kept levels (the others were merged into the newer levels, so each of their
        // nodes has a newer entry).
        let kept = kept as u8;
        let copy = |marks: &mut Vec<u8>, codes: &mut Vec<u8>, from: usize, to: usize| {
            let m = old.marks.get(from..to)?;
            if m.iter().any(|&k| k > kept) {
                return None;
            }
            marks.extend_from_slice(m);
            codes.extend_from_slice(old.codes.get(from..to)?);
            Some::<()>(())
        };
        // `r`: old members copied or replaced so far; `rank`: old members before word `w`;
        // `fresh`: the bits of new members set in word `w` (all below the node at hand).
        let (mut r, mut w, mut rank, mut fresh) = (0usize, 0usize, 0usize, 0usize);
        let mut k = 0;
        while k < newer.len() {
            // The node's newest entry: the last of its entries.
            let v = newer[k].0 as usize;
            while k + 1 < newer.len() && newer[k + 1].0 as usize == v {
                k += 1;
            }
            let (_, mark, code) = newer[k];
            k += 1;
            if v >= n {
                return None;
            }
            while w < v / 64 {
                rank += bits[w].count_ones() as usize - fresh;
                (w, fresh) = (w + 1, 0);
            }
            let bit = 1u64 << (v % 64);
            let below = rank + (bits[w] & (bit - 1)).count_ones() as usize - fresh;
            copy(&mut marks, &mut codes, r, below)?;
            // An old member's entry is replaced; a new member's bit is set.
            if bits[w] & bit != 0 {
                r = below + 1;
            } else {
                r = below;
                bits[w] |= bit;
                fresh += 1;
            }
            marks.push(mark);
            codes.push(code);
        }
        copy(&mut marks, &mut codes, r, old.marks.len())?;
        (marks.len() as u64 == self.trailer.changed).then_some(crate::graph::index_file::Parts {
            bits,
            marks,
            codes,
        })
    }

    /// Whether the index file of the graph file `path` gives this commit the index its levels
    /// give (None when no file serves it): what `validate` checks, and what a copy of a
    /// remote graph checks before it keeps the file.
    pub(crate) fn index_file_agrees(&self, path: &Path) -> Result<Option<bool>> {
        let Some(file) = self.index_from_file(path) else {
            return Ok(None);
        };
        let levels = self.index_of(false)?;
        Ok(Some(
            file.marks == levels.marks
                && file.codes == levels.codes
                && file.bit_words().eq(levels.bit_words()),
        ))
    }

    /// The bytes of this commit's index file (see `crate::graph::index_file`) for the graph
    /// file `path`: from its index file and the levels written since, when that serves, else
    /// from all the levels.
    pub(crate) fn index_file_bytes(&self, path: &Path) -> Result<Vec<u8>> {
        let parts = match self.index_file_parts(path) {
            Some(parts) => parts,
            None => {
                let index = self.index_of(false)?;
                crate::graph::index_file::Parts {
                    bits: index.bit_words().collect(),
                    marks: index.marks.into_vec(),
                    codes: index.codes.into_vec(),
                }
            }
        };
        Ok(crate::graph::index_file::encode(
            &self.index_commit(),
            &parts,
        ))
    }

    /// The threshold tests' memo (see [`CodeMemo`]), set up at the first push on this
    /// snapshot while the index is not in memory; None once it is (its blocks hold the codes).
    #[inline(always)]
    pub(crate) fn code_memo(&self) -> Option<&CodeMemo> {
        if self.changed_in_memory().is_some() {
            return None;
        }
        self.code_memo.get()
    }

    /// Sets up the threshold tests' memo, unless the index is in memory.
    pub(crate) fn build_code_memo(&self) {
        if self.changed_in_memory().is_none() {
            self.code_memo
                .get_or_init(|| CodeMemo::new(self.n as usize));
        }
    }

    /// The entries of all the index's levels.
    pub(crate) fn index_entries(&self) -> u64 {
        self.levels.iter().map(|l| l.count).sum()
    }

    /// Builds the index in memory ([`ChangedIndex`]: n bytes and 17 bytes per changed node,
    /// once per snapshot): afterwards a lookup reads one block, not one per level, which on a
    /// graph of tens of millions of nodes costs cache misses (the push tests nodes it
    /// deposits on). Reads every level, so `Graph::note_work` calls it only once the pushes
    /// on this snapshot have done enough work to pay for it.
    pub(crate) fn build_changed(&self) {
        // Not over an index loaded from its file: it answers the same lookups (an entry by a
        // search of one level), and on a 65M-node graph the build stalled a query for about
        // a second while the steady queries after it ran no faster (docs/BENCHMARKS.md).
        if !self.index_in_memory || self.file_index().is_some() {
            return;
        }
        self.changed.get_or_init(|| {
            // Read-ahead for the levels of a large log (a small one is read in a few pages:
            // two system calls would cost a cold query more than they save).
            let large = self.end > WHOLE_LOG_HINT;
            #[cfg(unix)]
            if large {
                self.advise(memmap2::Advice::Sequential);
            }
            let built = self.changed_index();
            #[cfg(unix)]
            if large {
                self.advise(memmap2::Advice::Random);
            }
            built.unwrap_or_default()
        });
    }

    pub(crate) fn changed_index(&self) -> Result<ChangedIndex> {
        self.index_of(true)
    }

    /// The index of this snapshot with each changed node's entry (`with_entries`), or with
    /// the level mark of its entry instead (what the index file holds).
    pub(crate) fn index_of(&self, with_entries: bool) -> Result<ChangedIndex> {
        let n = self.n as usize;
        let mut bits = vec![0u64; n.div_ceil(64)];
        for l in &self.levels {
            self.for_each_entry(l, |v, _, _| {
                let v = v as usize;
                if v >= n {
                    return Err(Error::format("change log corrupted: a node out of range"));
                }
                bits[v / 64] |= 1 << (v % 64);
                Ok(())
            })?;
        }
        let total: u64 = bits.iter().map(|w| u64::from(w.count_ones())).sum();
        let mut index = ChangedIndex {
            blocks: ChangedIndex::blocks_of(&bits).into_boxed_slice(),
            ..ChangedIndex::default()
        };
        drop(bits);
        let total = total as usize;
        let mut entries = vec![[0u64; 2]; if with_entries { total } else { 0 }];
        huge_pages(&entries);
        let mut marks = vec![0u8; if with_entries { 0 } else { total }];
        let mut codes = vec![0u8; if with_entries { 0 } else { total }];
        // A code decides tests without the value's checks: every value is checked here.
        let weighted = self.header.weighted;
        let code = |value: u64| -> Result<u8> {
            let s = f64::from_bits(value);
            if !(s.is_finite() && s >= 0.0) {
                return Err(Error::format(format!(
                    "change log corrupted: a strength of {s}"
                )));
            }
            Ok(crate::graph::strength_code::code_of(weighted, s))
        };
        // Newest level first: a node's entry is the first one found (record offsets are never
        // 0, the log's head is there; marks start at 1).
        let levels = self.levels.len();
        for (at, l) in self.levels.iter().enumerate() {
            let mark = (levels - at) as u8;
            self.for_each_entry(l, |v, word, value| {
                let Some(r) = index.rank(v) else {
                    return Ok(());
                };
                if with_entries {
                    if entries[r][0] == 0 {
                        entries[r] = [word, value];
                    }
                } else if marks[r] == 0 {
                    (marks[r], codes[r]) = (mark, code(value)?);
                }
                Ok(())
            })?;
        }
        index.codes = if with_entries {
            entries.iter().map(|e| code(e[1])).collect::<Result<_>>()?
        } else {
            codes.into_boxed_slice()
        };
        index.entries = entries.into_boxed_slice();
        index.marks = marks.into_boxed_slice();
        index.fill_inline_codes();
        Ok(index)
    }

    /// What the push's threshold test may read for `v` (`v < n`), from one lookup: nothing
    /// when its row is the base file's (`Unchanged`), else its code once the index is in
    /// memory, or its strength.
    #[inline(always)]
    pub(crate) fn changed_strength(&self, v: u32) -> Result<ChangedStrength> {
        if let Some(c) = self.changed_in_memory() {
            return Ok(c
                .code(v)
                .map_or(ChangedStrength::Unchanged, ChangedStrength::Code));
        }
        Ok(match self.leaf(v)? {
            (0, _) => ChangedStrength::Unchanged,
            (_, s) => ChangedStrength::Exact(s),
        })
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
        match self.leaf(v)? {
            (0, _) => Ok(None),
            (word, value) => self.record_of_entry(v, word, value).map(Some),
        }
    }

    /// The record named by `v`'s index entry: its record word (an offset, or a one-arc
    /// delta, see `INLINE_DELTA`) and value (the row's degree, or strength when weighted).
    pub(crate) fn record_of_entry(&self, v: u32, word: u64, value: f64) -> Result<Record<'_>> {
        if word & INLINE_DELTA == 0 {
            return self.record_at(v, word);
        }
        let corrupted = || {
            Error::format(format!(
                "change log corrupted: the index entry of node {v} is malformed"
            ))
        };
        // Unweighted only: the value is then the degree the delta gives.
        let (u, set) = decode_inline_delta(word).ok_or_else(corrupted)?;
        if self.header.weighted
            || !(0.0..=f64::from(u32::MAX)).contains(&value)
            || value.fract() != 0.0
        {
            return Err(corrupted());
        }
        Ok(Record::Delta(Delta {
            entries: DeltaEntries::Inline(u, if set { 1.0 } else { 0.0 }),
            strength: value,
            degree: value as u32,
            chain: 1,
            older: 0,
        }))
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
        let weighted = self.header.weighted;
        // Unweighted rows store no strength: it is the degree.
        let strength_at =
            |at: u64| -> Result<f64> { Ok(f64::from_bits(self.slice::<u64>(at, 1)?[0])) };
        if count & DELTA_FLAG == 0 {
            let deg = u64::from(count);
            let strength = if weighted {
                strength_at(off + 8)?
            } else {
                deg as f64
            };
            let nb_off = off + row_header_len(weighted);
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
        let more: &[u64] = self.slice(off + 8, 2)?;
        let older = more[0];
        let (degree, chain) = (more[1] as u32, (more[1] >> 32) as u32);
        // Older records lie before this one: a chain always ends.
        if older != 0 && older >= off || chain == 0 || older == 0 && chain != 1 {
            return Err(Error::format(format!(
                "change log corrupted: the delta chain of node {v} is malformed"
            )));
        }
        let strength = if weighted {
            strength_at(off + 24)?
        } else {
            f64::from(degree)
        };
        let nb_off = off + delta_header_len(weighted);
        let nbrs: &[u32] = self.slice(nb_off, count)?;
        let vals: &[f32] = self.slice(pad8(nb_off + 4 * count), count)?;
        Ok(Record::Delta(Delta {
            entries: DeltaEntries::Stored(nbrs, vals),
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
    ///
    /// With `codes` (the base row's neighbour codes, and the code of a neighbour a delta
    /// adds), a row merged from the base row by index also gets its codes in `buf.codes`, so
    /// the push decides its deposits as on the file's rows; returns whether it did.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn merge_row(
        &self,
        v: u32,
        d: &Delta<'_>,
        base: (&[u32], &[f32]),
        by_index: bool,
        cmp: &impl Fn(u32, u32) -> Result<Ordering>,
        codes: Option<RowCodes<'_>>,
        buf: &mut RowBuf,
    ) -> Result<bool> {
        let RowBuf {
            nbrs,
            wts,
            codes: out_codes,
            acc,
            tmp,
        } = buf;
        out_codes.clear();
        acc.clear();
        acc.extend(d.nbrs().iter().copied().zip(d.vals().iter().copied()));
        let mut older = d.older;
        let mut whole: Option<Rec<'_>> = None;
        let mut deltas = 1;
        while older != 0 {
            match self.record_at(v, older)? {
                Record::Delta(o) => {
                    deltas += 1;
                    compose((o.nbrs(), o.vals()), acc, cmp, tmp)?;
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
            // Codes only over the base file's row (a whole row in the log has none).
            let codes = codes.filter(|c| whole.is_none() && c.0.len() == bn.len());
            // Rows sorted by index: copy the row's runs between the deltas' entries, each
            // found by binary search (O(row) copying plus O(deltas log row) comparisons).
            let mut i = 0;
            for &(u, x) in acc.iter() {
                let k = i + bn[i..].partition_point(|&b| b < u);
                nbrs.extend_from_slice(&bn[i..k]);
                if weighted {
                    wts.extend_from_slice(&bw[i..k]);
                }
                if let Some((c, _)) = codes {
                    out_codes.extend_from_slice(&c[i..k]);
                }
                let present = bn.get(k) == Some(&u);
                if x > 0.0 {
                    nbrs.push(u);
                    if weighted {
                        wts.push(x);
                    }
                    if let Some((c, code_of)) = codes {
                        out_codes.push(if present { c[k] } else { code_of(u)? });
                    }
                } else if x != 0.0 {
                    return Err(Error::format(format!(
                        "change log corrupted: a delta of node {v} holds the value {x}"
                    )));
                }
                i = k + usize::from(present);
            }
            nbrs.extend_from_slice(&bn[i..]);
            if weighted {
                wts.extend_from_slice(&bw[i..]);
            }
            if let Some((c, _)) = codes {
                out_codes.extend_from_slice(&c[i..]);
            }
            self.check_merged(v, d, nbrs.len())?;
            return Ok(codes.is_some());
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
        self.check_merged(v, d, nbrs.len())?;
        Ok(false)
    }

    /// A merged row must have the degree its newest delta records.
    pub(crate) fn check_merged(&self, v: u32, d: &Delta<'_>, len: usize) -> Result<()> {
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

    pub(crate) fn run_of(&self, v: u32) -> Result<&Run> {
        let i = self.runs.partition_point(|r| r.first <= v);
        self.runs
            .get(i.wrapping_sub(1))
            .filter(|r| v - r.first < r.count)
            .ok_or_else(|| Error::format(format!("change log has no id for node {v}")))
    }

    pub(crate) fn run_int(&self, r: &Run, k: u32) -> Result<i64> {
        Ok(self.slice::<u64>(r.ids + 8 * u64::from(k), 1)?[0] as i64)
    }

    pub(crate) fn run_str(&self, r: &Run, k: u32) -> Result<&str> {
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
    pub(crate) fn search_runs(
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
    pub(crate) fn changed_nodes(&self) -> Result<Vec<u32>> {
        let bad = |m: &str| Error::format(format!("change log corrupted: {m}"));
        let mut out = Vec::new();
        for l in &self.levels {
            let nodes = (0..l.count)
                .map(|k| self.level_entry(l, k).map(|e| e.0))
                .collect::<Result<Vec<u32>>>()?;
            if nodes.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad("an index level is not sorted"));
            }
            let stride = fence_stride(l.weighted) as usize;
            let fence: &[u32] = self.slice(l.fence, l.fences)?;
            if fence
                .iter()
                .enumerate()
                .any(|(b, &x)| nodes[b * stride] != x)
            {
                return Err(bad("an index level's fence is wrong"));
            }
            if nodes.last().is_some_and(|&v| v >= self.n) {
                return Err(bad("a row for a node that does not exist"));
            }
            if l.blocks > 0 {
                // Every node's bit set, each block counting the entries before it, and no
                // other bit: then a bitmap lookup finds exactly the nodes a search would.
                let blocks: &[u64] = self.slice(l.bits, 8 * l.blocks)?;
                let mut want = vec![0u64; 8 * l.blocks as usize];
                for &v in &nodes {
                    let (b, i) = (
                        (u64::from(v) / BITMAP_BLOCK_NODES) as usize,
                        (u64::from(v) % BITMAP_BLOCK_NODES) as usize,
                    );
                    let w = want
                        .get_mut(8 * b + 1 + i / 64)
                        .ok_or_else(|| bad("an index level's bitmap is wrong"))?;
                    *w |= 1 << (i % 64);
                }
                let mut seen = 0u64;
                for b in 0..l.blocks as usize {
                    want[8 * b] = seen;
                    seen += want[8 * b + 1..8 * b + 8]
                        .iter()
                        .map(|w| u64::from(w.count_ones()))
                        .sum::<u64>();
                }
                if blocks != &want[..] {
                    return Err(bad("an index level's bitmap is wrong"));
                }
            }
            out.extend_from_slice(&nodes);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}
