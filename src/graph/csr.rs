//! Read access to a graph file: memory-mapped (or an owned in-memory image of the same bytes).
//!
//! Invariants (checked by `Graph::validate`, O(n + m)): `indptr[0] == 0`, `indptr` non-decreasing,
//! `indptr[n] == m`, every row's `indices` strictly increasing and `< n`, weights finite and > 0,
//! `strength[v] == sum of v's weights` (as f64), ids unique and `id_index` their sorted order,
//! section checksums match. `open` checks only the header (O(1)); every access re-checks the
//! row bounds and neighbour ids it touches, so a corrupted file yields `Error::Format`, never
//! an out-of-bounds read.

use std::cmp::Ordering;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::graph::format::{checksum, Header, IdKind, Sec, HEADER_LEN, SECTION_NAMES};
use crate::graph::pages::prefetch_line;
use crate::hashing::fnv1a64;
use std::borrow::Cow;

use crate::graph::overlay::{
    ChangedIndex, ChangedStrength, CodeMemo, LogState, Overlay, Record, RowBuf,
};
use crate::graph::pages::HintedPages;

/// See [`Graph::scan`].
pub(crate) struct ScanGuard<'a>(&'a Graph);

impl Drop for ScanGuard<'_> {
    fn drop(&mut self) {
        if self.0.scans.fetch_sub(1, AtomicOrdering::Relaxed) == 1 {
            self.0.advise(false);
        }
    }
}

enum Backing {
    /// Shared by the snapshots of a live graph (see [`Graph::base_snapshot`]).
    Mmap(std::sync::Arc<Mmap>),
    /// `u64` storage so typed section views are 8-byte aligned.
    Owned(Vec<u64>, usize),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mmap(m) => m,
            Backing::Owned(v, len) => {
                // SAFETY: a Vec<u64> of v.len() words holds 8 * v.len() >= len initialised bytes.
                unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), *len) }
            }
        }
    }
}

/// Largest graph given per-node tables (`floor_strengths`, `hash_keys`): O(n) memory per
/// process is then at most a few MB, like the push's dense workspace per thread.
pub const TABLE_MAX_NODES: usize = 1 << 20;

/// The push reads the neighbour codes (`nbr_codes`) only when `indptr` spans at least this
/// many 4 KiB pages. On a smaller `indptr` a query's degree lookups fall mostly on pages that
/// the row lookups of its pushed nodes read anyway, and the codes' pages only add to them
/// (BlogCatalog, 20 pages of `indptr`: 38 pages per cold query without the codes, 46 with
/// them; cnr-2000, 636 pages: 21.5 and 15; docs/BENCHMARKS.md).
pub const NBR_CODES_MIN_INDPTR_PAGES: u64 = 64;

/// An immutable CSR graph. `Sync`: safe to share across threads.
pub struct Graph {
    backing: Backing,
    header: Header,
    path: Option<PathBuf>,
    /// Hot-path views into `backing`, resolved once (see `Hot::new`).
    hot: Hot,
    /// Ask the kernel to read pages ahead during pushes (see [`Graph::set_prefetch`]).
    prefetch: bool,
    /// The pages of the mapping that hints asked for (see [`HintedPages`]).
    hinted: HintedPages,
    /// `max(strength(v), 1)` for every node, built and checked once amortised (see
    /// [`Graph::floor_strengths`]); the error message if a row or strength is corrupted.
    floor_strengths: OnceLock<std::result::Result<Box<[f64]>, String>>,
    /// Edge updates done by pushes on this graph so far (decides when that table pays).
    work: AtomicU64,
    /// Hash keys of every node of a string-id graph (see [`Graph::hash_keys`]), or the
    /// error message if an id is corrupted.
    hash_keys: OnceLock<std::result::Result<Box<[u64]>, String>>,
    /// Keys hashed by projections on this graph so far (decides when that table pays).
    keyed: AtomicU64,
    /// Node count: the base file's, plus the nodes its change log created.
    n: usize,
    /// The change log's rows and ids, when it changes anything (see `overlay.rs`); None reads
    /// the base file alone, through the same code as a graph without a log.
    live: Option<Box<Overlay>>,
    /// Which change log (if any) and which commit of it this snapshot shows.
    log: Option<LogState>,
    /// Passes over the whole file in progress (see [`Graph::scan`]).
    scans: AtomicU64,
}

/// Raw pointers to the sections the push reads per arc, so the hot loop does not re-derive
/// them from the header on every access.
struct Hot {
    indptr: *const u64,
    indices: *const u32,
    /// The `nbr_codes` section, aligned with `indices`; null when the file has none.
    codes: *const u8,
    n: usize,
    m: u64,
}

// SAFETY: the pointers point into `Graph::backing`, which is immutable, owned by the same Graph
// and never moved (mmap pages or a heap buffer), so sharing them across threads is as safe as
// sharing `&[u8]`.
unsafe impl Send for Graph {}
unsafe impl Sync for Graph {}

/// A row as `live_row` returns it: neighbours and weights (empty on unweighted graphs).
type LiveRow<'a> = (&'a [u32], &'a [f32]);

/// A row for the push: neighbours, weights, neighbour codes (see [`Graph::row_in`]).
type PushRow<'a> = (&'a [u32], &'a [f32], Option<&'a [u8]>);

/// A row borrowed or merged (see [`Graph::neighbors`]).
type OwnedRow<'a> = (Cow<'a, [u32]>, Cow<'a, [f32]>);

/// See [`Graph::live_source`].
enum LiveSource<'a> {
    Row(LiveRow<'a>),
    Delta(crate::graph::overlay::Delta<'a>, LiveRow<'a>),
}

pub use crate::graph::format::NodeId;

macro_rules! section_view {
    ($name:ident, $ty:ty, $sec:expr) => {
        #[inline]
        pub(crate) fn $name(&self) -> &[$ty] {
            let s = self.header.sections[$sec as usize];
            if s.len == 0 {
                return &[];
            }
            let bytes = self.backing.bytes();
            // Offsets and lengths were bounds- and alignment-checked against the file length in
            // Header::decode, and the backing base is page- (mmap) or 8-byte (Vec<u64>) aligned.
            let start = s.offset as usize;
            let len = s.len as usize / std::mem::size_of::<$ty>();
            debug_assert!(start + s.len as usize <= bytes.len());
            debug_assert_eq!(
                (bytes.as_ptr() as usize + start) % std::mem::align_of::<$ty>(),
                0
            );
            // SAFETY: in bounds and aligned (see above); every bit pattern is a valid $ty.
            unsafe { std::slice::from_raw_parts(bytes.as_ptr().add(start).cast::<$ty>(), len) }
        }
    };
}

impl Graph {
    /// Memory-maps a graph file alone, ignoring any change log (`Graph::open`, in the live
    /// wing, reads the change log too).
    pub fn open_base(path: impl AsRef<Path>) -> Result<Graph> {
        let path = path.as_ref();
        // Opening a FIFO blocks until a writer appears: refuse anything but a regular file or a
        // directory (reported below) before opening it.
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() && !meta.is_dir() {
                return Err(Error::io(
                    path,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a regular file (a FIFO, socket or device)",
                    ),
                ));
            }
        }
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, e))?;
        if meta.is_dir() {
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        let len = meta.len();
        {
            // Another format (a WebGraph `.graph`, an edge list...): say which, and what to do.
            use std::io::Read;
            let mut head = Vec::with_capacity(64);
            (&file)
                .take(64)
                .read_to_end(&mut head)
                .map_err(|e| Error::io(path, e))?;
            let magic = &crate::graph::format::MAGIC;
            let foreign = if head.len() >= 8 {
                head[..8] != magic[..]
            } else {
                !magic.starts_with(&head) // a truncated graph file starts with the magic
            };
            if foreign {
                return Err(Error::format(crate::graph::format::not_a_graph_file(
                    path, &head,
                )));
            }
        }
        if len < HEADER_LEN as u64 {
            let mut head = Vec::new();
            use std::io::Read;
            (&file)
                .take(HEADER_LEN as u64)
                .read_to_end(&mut head)
                .map_err(|e| Error::io(path, e))?;
            return Err(Error::format(format!(
                "{}: {}",
                path.display(),
                Header::decode(&head, len)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default()
            )));
        }
        // SAFETY: the map is read-only and private to this process. Another process truncating the
        // file while it is mapped would make later page faults raise SIGBUS; our writers never
        // modify a graph file in place (they write a temporary file and rename it over the old
        // one, which leaves existing maps of the old inode intact), which is the documented
        // contract in docs/FORMAT.md.
        let mmap = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        #[cfg(unix)]
        {
            // Queries touch a few scattered pages; read-ahead would only pollute the page cache.
            let _ = mmap.advise(memmap2::Advice::Random);
        }
        let header = Header::decode(&mmap, len)
            .map_err(|e| Error::format(format!("{}: {e}", path.display())))?;
        let g = Graph::assemble(
            Backing::Mmap(std::sync::Arc::new(mmap)),
            header,
            Some(path.to_path_buf()),
        );
        g.check_cheap()
            .map_err(|e| Error::format(format!("{}: {e}", path.display())))?;
        Ok(g)
    }

    /// Wraps an in-memory file image (as produced by the builder).
    pub fn from_image(words: Vec<u64>, len: usize) -> Result<Graph> {
        if words.len().checked_mul(8).is_none_or(|cap| len > cap) {
            return Err(Error::input(format!(
                "image length {len} exceeds its buffer of {} words",
                words.len()
            )));
        }
        let backing = Backing::Owned(words, len);
        let header = Header::decode(backing.bytes(), len as u64)?;
        let g = Graph::assemble(backing, header, None);
        g.check_cheap()?;
        Ok(g)
    }

    fn assemble(backing: Backing, header: Header, path: Option<PathBuf>) -> Graph {
        let n = header.num_nodes as usize;
        let mapped_len = match &backing {
            Backing::Mmap(m) => m.len(),
            _ => 0,
        };
        let mut g = Graph {
            backing,
            header,
            path,
            hot: Hot {
                indptr: std::ptr::null(),
                indices: std::ptr::null(),
                codes: std::ptr::null(),
                n: 0,
                m: 0,
            },
            prefetch: false,
            hinted: HintedPages::new(mapped_len),
            floor_strengths: OnceLock::new(),
            work: AtomicU64::new(0),
            hash_keys: OnceLock::new(),
            keyed: AtomicU64::new(0),
            n,
            live: None,
            log: None,
            scans: AtomicU64::new(0),
        };
        let indptr_pages = g.header.sections[Sec::Indptr as usize].len / 4096;
        let codes = if g.header.sections[Sec::NbrCodes as usize].offset == 0
            || indptr_pages < NBR_CODES_MIN_INDPTR_PAGES
        {
            std::ptr::null()
        } else {
            g.nbr_codes().as_ptr()
        };
        g.hot = Hot {
            indptr: g.indptr().as_ptr(),
            indices: g.indices().as_ptr(),
            codes,
            n: g.header.num_nodes as usize,
            m: g.header.num_arcs,
        };
        g
    }

    /// Turns read-ahead hints on or off for pushes on this graph. With it on, a push asks the
    /// kernel (`madvise(MADV_WILLNEED)`, asynchronous) for the `indptr` pages of a pushed node's
    /// neighbours before it visits them and for the rows of nodes as they are queued, so a query
    /// on a file that is not in the page cache issues its page reads in parallel instead of one
    /// page fault at a time. A page is hinted once, not once per query, until a push takes a
    /// major fault (see [`HintedPages`]); the read-ahead push's bookkeeping still costs a warm
    /// query on a small graph up to twice its time, so it is off by default. No effect on
    /// in-memory graphs or outside Unix.
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = on && cfg!(unix) && matches!(self.backing, Backing::Mmap(_));
    }

    /// Whether pushes send read-ahead hints (see [`Graph::set_prefetch`]).
    #[inline]
    pub fn prefetch(&self) -> bool {
        self.prefetch
    }

    /// Hints that the bytes `[ptr, ptr + len)` of the mapping will be read soon, unless every
    /// 4 KiB page of the range was asked for already (see [`HintedPages`]).
    #[cfg(unix)]
    fn will_need(&self, ptr: *const u8, len: usize) {
        if let Backing::Mmap(m) = &self.backing {
            let off = (ptr as usize).wrapping_sub(m.as_ptr() as usize);
            if off >= m.len() || len == 0 {
                return;
            }
            let len = len.min(m.len() - off);
            if self.hinted.mark(off, len) {
                let _ = m.advise_range(memmap2::Advice::WillNeed, off, len);
            }
        }
    }

    /// The file's pages that hints asked for (tests).
    #[cfg(test)]
    pub(crate) fn hinted_pages(&self) -> &HintedPages {
        &self.hinted
    }

    /// The change log's pages that hints asked for (tests).
    #[cfg(test)]
    pub(crate) fn hinted_log_pages(&self) -> Option<&HintedPages> {
        self.live.as_deref().map(|l| &l.hinted)
    }

    /// Drops the file's pages from this process's page tables and from the page cache
    /// (tests); whether its first page then is out of the cache (false where the file system
    /// keeps it, as tmpfs does).
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn evict_for_test(&self) -> bool {
        let Backing::Mmap(m) = &self.backing else {
            return false;
        };
        let f = std::fs::File::open(self.path.as_ref().unwrap()).unwrap();
        use std::os::fd::AsRawFd;
        let mut resident = [0u8; 1];
        // SAFETY: the map's own range; MADV_DONTNEED on a read-only file map only drops
        // page-table entries (later reads fault the file's bytes in again).
        unsafe {
            libc::madvise(
                m.as_ptr() as *mut libc::c_void,
                m.len(),
                libc::MADV_DONTNEED,
            );
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
            libc::mincore(m.as_ptr() as *mut libc::c_void, 4096, resident.as_mut_ptr());
        }
        resident[0] & 1 == 0
    }

    /// Forgets which pages hints asked for, of the file and of its log (see [`HintedPages`]):
    /// a push that took a major page fault calls it.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn forget_hints(&self) {
        self.hinted.forget();
        if let Some(l) = self.live.as_deref() {
            l.hinted.forget();
        }
    }

    /// Read-ahead hint for node `v`'s `indptr` entries (its degree). Ignores bad `v`.
    #[inline]
    pub fn prefetch_degree(&self, v: u32) {
        #[cfg(unix)]
        if let Some(l) = self.live.as_deref() {
            // The threshold of a changed row is in its tree leaf.
            if (v as usize) < self.n && !l.known_unchanged(v) {
                l.prefetch_leaf(v);
            }
        }
        #[cfg(unix)]
        if (v as usize) < self.hot.n {
            // SAFETY: v < n and indptr has n + 1 entries.
            let p = unsafe { self.hot.indptr.add(v as usize) };
            self.will_need(p.cast(), 16);
        }
        #[cfg(not(unix))]
        let _ = v;
    }

    /// Read-ahead hint for node `v`'s external id (its hash key): the `ids` entry (int64) or
    /// string offsets (utf8). Nothing to read for implicit ids. Ignores bad `v`.
    #[inline]
    pub fn prefetch_id(&self, v: u32) {
        #[cfg(unix)]
        if (v as usize) < self.hot.n {
            let len = match self.header.id_kind {
                IdKind::Implicit => return,
                IdKind::Int64 => 8,
                IdKind::Utf8 => 16,
            };
            let p = self.ids_words()[v as usize..].as_ptr();
            self.will_need(p.cast(), len);
        }
        #[cfg(not(unix))]
        let _ = v;
    }

    /// Read-ahead hint for node `v`'s row (neighbours and weights). Reads `v`'s `indptr`
    /// entries, so call it once they are resident. Ignores bad rows.
    #[inline]
    pub fn prefetch_row(&self, v: u32) {
        #[cfg(unix)]
        if let Some(l) = self.live.as_deref() {
            if (v as usize) < self.n && !l.known_unchanged(v) {
                l.prefetch_record(v);
            }
            if v >= l.base_n() {
                return;
            }
        }
        #[cfg(unix)]
        if let Ok((s, e)) = self.row(v) {
            if e > s {
                // SAFETY: s <= e <= m = len(indices) (checked by `row`).
                let p = unsafe { self.hot.indices.add(s) };
                self.will_need(p.cast(), (e - s) * 4);
                if let Ok(Some(w)) = self.base_weights(v) {
                    self.will_need(w.as_ptr().cast(), w.len() * 4);
                }
            }
        }
        #[cfg(not(unix))]
        let _ = v;
    }

    /// O(1) checks beyond the header: the first and last `indptr` entries.
    fn check_cheap(&self) -> Result<()> {
        let ip = self.indptr();
        if ip[0] != 0 || ip[self.num_nodes()] != self.header.num_arcs {
            return Err(Error::format(
                "indptr does not start at 0 or end at the number of arcs",
            ));
        }
        Ok(())
    }

    section_view!(indptr, u64, Sec::Indptr);
    section_view!(indices, u32, Sec::Indices);
    section_view!(weights_all, f32, Sec::Weights);
    section_view!(strength_all, f64, Sec::Strength);
    section_view!(ids_words, u64, Sec::Ids);
    section_view!(id_index, u32, Sec::IdIndex);
    section_view!(nbr_codes, u8, Sec::NbrCodes);

    /// Whether the file stores the neighbour codes (`nbr_codes`, see `strength_code.rs`).
    pub fn has_nbr_codes(&self) -> bool {
        self.header.sections[Sec::NbrCodes as usize].offset != 0
    }

    /// Whether the push reads the neighbour codes: the file has them and its `indptr` spans
    /// at least [`NBR_CODES_MIN_INDPTR_PAGES`] pages.
    pub fn push_reads_nbr_codes(&self) -> bool {
        !self.hot.codes.is_null()
    }

    pub(crate) fn id_bytes(&self) -> &[u8] {
        let s = self.header.sections[Sec::IdBytes as usize];
        let b = self.backing.bytes();
        &b[s.offset as usize..(s.offset + s.len) as usize]
    }

    pub fn header(&self) -> &Header {
        &self.header
    }
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
    /// The raw file bytes (for saving a copy).
    pub fn image(&self) -> &[u8] {
        self.backing.bytes()
    }
    #[inline]
    pub fn num_nodes(&self) -> usize {
        self.n
    }
    /// Nodes of the base file (without those its change log created).
    #[inline]
    pub fn base_num_nodes(&self) -> usize {
        self.hot.n
    }
    pub fn num_arcs(&self) -> u64 {
        match &self.live {
            Some(l) => l.trailer.num_arcs,
            None => self.header.num_arcs,
        }
    }
    pub fn num_edges(&self) -> u64 {
        match &self.live {
            Some(l) if self.header.directed => l.trailer.num_arcs,
            Some(l) => (l.trailer.num_arcs + l.trailer.self_loops) / 2,
            None => self.header.num_edges,
        }
    }
    pub fn directed(&self) -> bool {
        self.header.directed
    }
    pub fn weighted(&self) -> bool {
        self.header.weighted
    }
    pub fn id_kind(&self) -> IdKind {
        self.header.id_kind
    }

    /// Read-ahead on for a pass over the whole file and change log (checksums, validation,
    /// compaction), until the guard is dropped. Files are mapped for queries, which read
    /// scattered pages, with read-ahead off: a pass would then fault in one 4 KiB page at a
    /// time, which on a cold billion-edge file is several times slower than reading ahead.
    /// Guards nest (the outermost one switches the advice) and only change performance.
    pub(crate) fn scan(&self) -> ScanGuard<'_> {
        if self.scans.fetch_add(1, AtomicOrdering::Relaxed) == 0 {
            self.advise(true);
        }
        ScanGuard(self)
    }

    fn advise(&self, scan: bool) {
        #[cfg(unix)]
        {
            use memmap2::Advice;
            let advice = if scan {
                Advice::Sequential
            } else {
                Advice::Random
            };
            if let Backing::Mmap(m) = &self.backing {
                let _ = m.advise(advice);
            }
            if let Some(l) = self.live.as_deref() {
                l.advise(advice);
            }
        }
        #[cfg(not(unix))]
        let _ = scan;
    }

    /// Whether rows are read through a change log (see `overlay.rs`).
    #[inline]
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }
    pub(crate) fn overlay(&self) -> Option<&Overlay> {
        self.live.as_deref()
    }
    /// This graph's base file without its change log, sharing this graph's map of the file
    /// (None for an in-memory graph): a writer's next snapshot, so that the pages its commits
    /// read stay mapped from one commit to the next instead of being faulted in again.
    pub(crate) fn base_snapshot(&self) -> Option<Graph> {
        let Backing::Mmap(m) = &self.backing else {
            return None;
        };
        let mut g = Graph::assemble(
            Backing::Mmap(m.clone()),
            self.header.clone(),
            self.path.clone(),
        );
        g.prefetch = self.prefetch;
        Some(g)
    }

    /// The change log this snapshot was opened with (None for in-memory graphs).
    pub fn log_state(&self) -> Option<&LogState> {
        self.log.as_ref()
    }
    /// Moves this snapshot's level filter to `next`, the snapshot a commit on it made (see
    /// `Overlay::carry_level_filter`); copies it when this snapshot is shared.
    pub(crate) fn carry_level_filter(
        this: Arc<Graph>,
        next: &Graph,
        spare: Option<&crate::graph::overlay::FilterSpare>,
    ) {
        let (Some(prev), Some(o)) = (this.overlay(), next.overlay()) else {
            return;
        };
        if prev.level_map().is_none() {
            return;
        }
        let levels = prev.levels.clone();
        let filter = match Arc::try_unwrap(this) {
            Ok(mut g) => g.live.as_mut().and_then(|l| l.level_filter.take()),
            Err(shared) => shared
                .overlay()
                .and_then(|l| l.level_map())
                .map(|m| crate::graph::overlay::copy_into_spare(m, spare)),
        };
        if let Some(f) = filter {
            o.carry_level_filter(f, &levels);
        }
    }

    /// Where this snapshot's level filter goes when it is dropped (a writer's snapshots:
    /// see [`crate::graph::overlay::FilterSpare`]).
    pub(crate) fn give_filter_to(&mut self, spare: &Arc<crate::graph::overlay::FilterSpare>) {
        if let Some(l) = self.live.as_deref_mut() {
            l.filter_spare = Some(Arc::downgrade(spare));
        }
    }

    pub(crate) fn set_log(&mut self, overlay: Option<Box<Overlay>>, state: LogState) {
        self.n = overlay.as_ref().map_or(self.hot.n, |o| o.num_nodes());
        self.live = overlay;
        self.log = Some(state);
    }

    #[inline]
    fn check_node(&self, v: u32) -> Result<()> {
        if (v as usize) < self.num_nodes() {
            Ok(())
        } else {
            Err(Error::NodeIndexOutOfRange {
                index: u64::from(v),
                num_nodes: self.n as u64,
            })
        }
    }

    /// Bounds-checked row range of node `v` in the base file's `indices`.
    #[inline(always)]
    fn row(&self, v: u32) -> Result<(usize, usize)> {
        let h = &self.hot;
        if v as usize >= h.n {
            return Err(self.out_of_range(v));
        }
        // SAFETY: indptr has n + 1 entries (checked in Header::decode) and v < n.
        let (s, e) = unsafe { (*h.indptr.add(v as usize), *h.indptr.add(v as usize + 1)) };
        if s > e || e > h.m {
            return Err(corrupt_row(v, s, e, h.m));
        }
        Ok((s as usize, e as usize))
    }

    #[cold]
    fn out_of_range(&self, v: u32) -> Error {
        Error::NodeIndexOutOfRange {
            index: u64::from(v),
            num_nodes: self.n as u64,
        }
    }

    /// Out-neighbours of `v` (internal indices), borrowed from the file or the change log, or
    /// merged from the log's deltas. Neighbour ids are not range-checked here; use
    /// `neighbors_checked` or check each id before using it as an index.
    #[inline]
    pub fn neighbors(&self, v: u32) -> Result<Cow<'_, [u32]>> {
        if let Some(l) = self.live.as_deref() {
            return self.owned_live_row(l, v).map(|r| r.0);
        }
        self.neighbors_in::<false>(v).map(Cow::Borrowed)
    }

    /// The base file's row of `v` (`LIVE` must be false: a live graph reads rows with
    /// [`Graph::row_in`], which may merge them).
    #[inline(always)]
    pub(crate) fn neighbors_in<const LIVE: bool>(&self, v: u32) -> Result<&[u32]> {
        debug_assert!(!LIVE);
        let (s, e) = self.row(v)?;
        // SAFETY: s <= e <= m = len(indices), checked by `row`.
        Ok(unsafe { std::slice::from_raw_parts(self.hot.indices.add(s), e - s) })
    }

    /// Asks the memory for the line of `indptr` that gives `v`'s base row, the read that
    /// [`Graph::prefetch_base_row`] then makes without waiting.
    #[inline]
    pub(crate) fn prefetch_base_offsets(&self, v: u32) {
        if (v as usize) < self.hot.n {
            prefetch_line(self.hot.indptr.wrapping_add(v as usize));
        }
    }

    /// Asks the CPU to bring `v`'s row in the base file into its caches: its first cache line,
    /// and its last for a row of more than 8 arcs (a binary search reads both ends early).
    /// No effect for `v` out of range or on other architectures.
    #[inline]
    pub(crate) fn prefetch_base_row(&self, v: u32) {
        if (v as usize) < self.hot.n {
            if let Ok((s, e)) = self.row(v) {
                prefetch_line(self.hot.indices.wrapping_add(s));
                if e > s + 8 {
                    prefetch_line(self.hot.indices.wrapping_add(e - 1));
                }
            }
        }
    }

    /// `v`'s row for the push: neighbours, weights (empty on unweighted graphs) and, when
    /// `CODES` and the row is the base file's (a row from the change log has none: the push
    /// then reads exact strengths), the row's neighbour codes. The change log is read only when
    /// `LIVE`: the push is compiled once per case, so a graph without a log runs exactly the
    /// code it ran before logs existed. A row with deltas is merged into `buf`.
    #[inline(always)]
    pub(crate) fn row_in<'a, const LIVE: bool, const CODES: bool>(
        &'a self,
        v: u32,
        buf: &'a mut RowBuf,
    ) -> Result<PushRow<'a>> {
        if LIVE {
            if let Some(l) = self.live.as_deref() {
                if v as usize >= self.n {
                    return Err(self.out_of_range(v));
                }
                // One index lookup: an unchanged node of the file has no entry.
                let (word, value) = l.leaf(v)?;
                if word != 0 || v >= l.base_n() {
                    return match self.live_source_of(l, v, word, value)? {
                        LiveSource::Row(r) => Ok((r.0, r.1, None)),
                        LiveSource::Delta(d, base) => {
                            // A delta on the file's row keeps the row's codes (an added
                            // neighbour's is computed): the push decides as on the file.
                            let base_codes = if CODES && v < l.base_n() {
                                self.base_codes(v)?
                            } else {
                                None
                            };
                            let weighted = self.weighted();
                            let code_of = |u: u32| -> Result<u8> {
                                Ok(if u < l.base_n() {
                                    crate::graph::strength_code::code_of(
                                        weighted,
                                        self.strength_in::<false>(u)?,
                                    )
                                } else {
                                    // A created node is always looked up (it is not in the
                                    // file): its code is never read.
                                    0
                                })
                            };
                            let coded = l.merge_row(
                                v,
                                &d,
                                base,
                                self.rows_by_index(),
                                &|a, b| self.row_order(a, b),
                                base_codes.map(|c| (c, &code_of as &dyn Fn(u32) -> Result<u8>)),
                                buf,
                            )?;
                            Ok((&buf.nbrs, &buf.wts, coded.then_some(&buf.codes[..])))
                        }
                    };
                }
            }
        }
        let (s, e) = self.row(v)?;
        // SAFETY: s <= e <= m = len(indices) = len(nbr_codes) = len(weights), checked by `row`
        // and Header::decode.
        unsafe {
            let nbrs = std::slice::from_raw_parts(self.hot.indices.add(s), e - s);
            let codes = (CODES && !self.hot.codes.is_null())
                .then(|| std::slice::from_raw_parts(self.hot.codes.add(s), e - s));
            let wts = if self.header.weighted {
                &self.weights_all()[s..e]
            } else {
                &[]
            };
            Ok((nbrs, wts, codes))
        }
    }

    /// The neighbour codes of the file's row of `v` (`v` < the file's node count), or None
    /// when the push does not read them.
    #[inline]
    fn base_codes(&self, v: u32) -> Result<Option<&[u8]>> {
        if self.hot.codes.is_null() {
            return Ok(None);
        }
        let (s, e) = self.row(v)?;
        // SAFETY: s <= e <= m = len(nbr_codes), checked by `row` and Header::decode.
        Ok(Some(unsafe {
            std::slice::from_raw_parts(self.hot.codes.add(s), e - s)
        }))
    }

    /// The change log's index when it is built in memory (see `Overlay::build_changed`):
    /// a push takes it once and reads each node's code from it without the lookups'
    /// dispatch. None without a log or until built.
    #[inline]
    pub(crate) fn changed_in_memory(&self) -> Option<&ChangedIndex> {
        self.live.as_deref()?.changed_in_memory()
    }

    /// The change log's threshold-test memo (`Overlay::code_memo`): None without a log, before
    /// the first push, or once the index is in memory.
    #[inline]
    pub(crate) fn code_memo(&self) -> Option<&CodeMemo> {
        self.live.as_deref()?.code_memo()
    }

    /// Asks the memory for the change log's index blocks that lookups of `nodes` read first,
    /// while the index is not in memory (a hint).
    #[inline(always)]
    pub(crate) fn prefetch_changed_levels(&self, nodes: &[u32]) {
        if let Some(l) = self.live.as_deref() {
            l.prefetch_levels(nodes);
        }
    }

    /// What the push's threshold test knows of node `v` from one lookup: `Unchanged` when
    /// the neighbour codes in base-file rows hold for it (always, except for a node the
    /// change log changed: its strength may differ from the base file's), else its current
    /// code, or `max(strength(v), 1)` as `strength_in::<LIVE>` gives it.
    #[inline(always)]
    pub(crate) fn changed_floor_strength<const LIVE: bool>(
        &self,
        v: u32,
    ) -> Result<ChangedStrength> {
        if LIVE {
            if let Some(l) = self.live.as_deref() {
                if v as usize >= self.n {
                    return Err(self.out_of_range(v));
                }
                return match l.changed_strength(v)? {
                    ChangedStrength::Exact(s) => {
                        Ok(ChangedStrength::Exact(checked_strength(v, s)?.max(1.0)))
                    }
                    // A created node without a record: strength 0.
                    ChangedStrength::Unchanged if v >= l.base_n() => {
                        Ok(ChangedStrength::Exact(1.0))
                    }
                    other => Ok(other),
                };
            }
        }
        Ok(ChangedStrength::Unchanged)
    }

    /// Whether the base file's nodes are numbered in id order (it is not a permuted file).
    #[inline]
    pub(crate) fn base_in_id_order(&self) -> bool {
        !self.header.permuted
    }

    /// Whether rows are sorted by index (else by id: a permuted graph).
    #[inline]
    pub(crate) fn rows_by_index(&self) -> bool {
        !self.permuted() || self.id_kind() == IdKind::Implicit
    }

    /// Orders two neighbours as rows are sorted: by index, or by id in a permuted graph.
    pub(crate) fn row_order(&self, a: u32, b: u32) -> Result<Ordering> {
        let base = |v: u32| (v as usize) < self.hot.n;
        if self.rows_by_index() || self.base_in_id_order() && base(a) && base(b) {
            return Ok(a.cmp(&b));
        }
        Ok(match (self.node_id(a)?, self.node_id(b)?) {
            (NodeId::Int(x), NodeId::Int(y)) => x.cmp(&y),
            (NodeId::Str(x), NodeId::Str(y)) => x.cmp(y),
            _ => Ordering::Equal,
        })
    }

    /// Where `v`'s row is: slices of the log or the base file (unchanged nodes; empty for
    /// created nodes without arcs), or a delta to merge with the row beneath it.
    #[inline]
    fn live_source<'a>(&'a self, l: &'a Overlay, v: u32) -> Result<LiveSource<'a>> {
        if v as usize >= self.n {
            return Err(self.out_of_range(v));
        }
        // One lookup: an unchanged node has no record.
        let (word, value) = l.leaf(v)?;
        self.live_source_of(l, v, word, value)
    }

    /// `live_source` given `v`'s index entry (`Overlay::leaf`; `v < n`).
    #[inline]
    fn live_source_of<'a>(
        &'a self,
        l: &'a Overlay,
        v: u32,
        word: u64,
        value: f64,
    ) -> Result<LiveSource<'a>> {
        let base = || -> Result<LiveRow<'a>> {
            if v < l.base_n() {
                let nb = self.neighbors_in::<false>(v)?;
                let w = self.base_weights(v)?.unwrap_or(&[]);
                Ok((nb, w))
            } else {
                Ok((&[], &[]))
            }
        };
        if word == 0 {
            return base().map(LiveSource::Row);
        }
        match l.record_of_entry(v, word, value)? {
            Record::Row(r) => Ok(LiveSource::Row((r.nbrs, r.wts))),
            Record::Delta(d) => Ok(LiveSource::Delta(d, base()?)),
        }
    }

    /// `live_row`, owned where it was merged.
    fn owned_live_row<'a>(&'a self, l: &'a Overlay, v: u32) -> Result<OwnedRow<'a>> {
        match self.live_source(l, v)? {
            LiveSource::Row((nb, w)) => Ok((Cow::Borrowed(nb), Cow::Borrowed(w))),
            LiveSource::Delta(d, base) => {
                let mut buf = RowBuf::default();
                l.merge_row(
                    v,
                    &d,
                    base,
                    self.rows_by_index(),
                    &|a, b| self.row_order(a, b),
                    None,
                    &mut buf,
                )?;
                let RowBuf { nbrs, wts, .. } = buf;
                Ok((Cow::Owned(nbrs), Cow::Owned(wts)))
            }
        }
    }

    /// Out-neighbours of `v`, each checked to be `< n`.
    pub fn neighbors_checked(&self, v: u32) -> Result<Cow<'_, [u32]>> {
        let nb = self.neighbors(v)?;
        let n = self.num_nodes();
        if let Some(bad) = nb.iter().find(|&&u| u as usize >= n) {
            return Err(Error::format(format!(
                "corrupted indices: node {v} has neighbour {bad} >= {n}"
            )));
        }
        Ok(nb)
    }

    /// Edge weights of `v`'s out-arcs (weighted graphs only).
    #[inline]
    pub fn weights(&self, v: u32) -> Result<Option<Cow<'_, [f32]>>> {
        if !self.header.weighted {
            return Ok(None);
        }
        if let Some(l) = self.live.as_deref() {
            return self.owned_live_row(l, v).map(|r| Some(r.1));
        }
        self.base_weights(v).map(|w| w.map(Cow::Borrowed))
    }

    /// The base file's weights of `v`'s row (weighted graphs only).
    #[inline(always)]
    pub(crate) fn base_weights(&self, v: u32) -> Result<Option<&[f32]>> {
        if !self.header.weighted {
            return Ok(None);
        }
        let (s, e) = self.row(v)?;
        Ok(Some(&self.weights_all()[s..e]))
    }

    /// The degree of `v`'s row in the base file (`v < base_num_nodes()`), whatever the log
    /// holds for it.
    #[inline(always)]
    pub(crate) fn base_degree(&self, v: u32) -> Result<u64> {
        let (s, e) = self.row(v)?;
        Ok((e - s) as u64)
    }

    /// Out-degree (number of out-arcs) of `v`.
    #[inline(always)]
    pub fn degree(&self, v: u32) -> Result<u64> {
        if let Some(l) = self.live.as_deref() {
            if v as usize >= self.n {
                return Err(self.out_of_range(v));
            }
            if let Some(r) = l.record(v)? {
                return Ok(r.degree());
            }
            if v >= l.base_n() {
                return Ok(0);
            }
        }
        let (s, e) = self.row(v)?;
        Ok((e - s) as u64)
    }

    /// Weighted out-degree (sum of out-arc weights); the plain degree for unweighted graphs.
    #[inline(always)]
    pub fn strength(&self, v: u32) -> Result<f64> {
        self.strength_in::<true>(v)
    }

    /// `strength`, reading the change log only when `LIVE` (see `neighbors_in`).
    #[inline(always)]
    pub(crate) fn strength_in<const LIVE: bool>(&self, v: u32) -> Result<f64> {
        if LIVE {
            if let Some(l) = self.live.as_deref() {
                if v as usize >= self.n {
                    return Err(self.out_of_range(v));
                }
                // From the index entry, one lookup (no read of the row itself: a threshold
                // lookup of a cold query costs no extra page); None: the file's row.
                return match l.strength(v)? {
                    Some(s) => checked_strength(v, s),
                    None if v < l.base_n() => self.strength_in::<false>(v),
                    None => Ok(0.0),
                };
            }
        }
        if self.header.weighted {
            if v as usize >= self.hot.n {
                return Err(self.out_of_range(v));
            }
            checked_strength(v, self.strength_all()[v as usize])
        } else {
            let (s, e) = self.row(v)?;
            Ok((e - s) as f64)
        }
    }

    /// `max(strength(v), 1)` of every node: the push's thresholds divided by eps, in one pass
    /// that checks every row (as `degree` does) or stored strength, then shared by all
    /// threads: a deposit costs one load instead of a checked row lookup and an integer
    /// conversion (a third of the push's instructions on BlogCatalog). O(n) time and 8 bytes
    /// per node, so only the push's dense workspace (graphs of at most 2^20 nodes, whose
    /// workspace is O(n) per thread anyway) uses it, and only once the pushes on this graph
    /// have done at least n edge updates (`note_work`): the build then costs no more than the
    /// work done so far, and a single query on a freshly opened (cold) file never reads all
    /// of `indptr`. None until then.
    pub(crate) fn floor_strengths(&self) -> Result<Option<&[f64]>> {
        self.amortised_table(&self.floor_strengths, &self.work, |v| {
            self.strength(v).map(|s| s.max(1.0))
        })
    }

    /// `cell`'s table of `value(v)` for every node, built (once, shared by all threads) when the
    /// work counted in `done` has reached n, so the O(n) build never costs more than the work
    /// it speeds up; None until then. A failed build is kept and reported on every call.
    fn amortised_table<'a, T>(
        &'a self,
        cell: &'a OnceLock<std::result::Result<Box<[T]>, String>>,
        done: &AtomicU64,
        value: impl Fn(u32) -> Result<T>,
    ) -> Result<Option<&'a [T]>> {
        if cell.get().is_none() && done.load(AtomicOrdering::Relaxed) < self.num_nodes() as u64 {
            return Ok(None);
        }
        let table = cell.get_or_init(|| {
            (0..self.num_nodes() as u32)
                .map(value)
                .collect::<Result<Box<[T]>>>()
                .map_err(|e| e.to_string())
        });
        match table {
            Ok(t) => Ok(Some(t)),
            Err(msg) => Err(Error::format(msg.clone())),
        }
    }

    /// Test support: drops the change log's index from memory and never builds it again, so
    /// every lookup goes through the index's levels, as in a reader just opened on a large log
    /// (results are the same either way).
    #[doc(hidden)]
    pub fn with_index_on_disk(mut self) -> Graph {
        if let Some(l) = self.live.as_deref_mut() {
            l.changed = OnceLock::new();
            l.index_in_memory = false;
        }
        self
    }

    /// Test support: drops the change log's index from memory, as in a reader just opened on
    /// a large log (a small one has it built when it is opened); it is loaded or built again
    /// as in such a reader.
    #[cfg(test)]
    pub(crate) fn with_index_not_built(mut self) -> Graph {
        if let Some(l) = self.live.as_deref_mut() {
            l.changed = OnceLock::new();
        }
        self
    }

    /// Readies the change log's lookups for a push: the first push on a snapshot builds the
    /// level filter (`Overlay::build_level_filter`). Does nothing without a log.
    #[inline]
    pub(crate) fn prepare_lookups(&self) {
        if let Some(l) = self.live.as_deref() {
            if let Some(p) = self.path() {
                l.load_index_file(p);
            }
            l.build_level_filter();
            l.build_code_memo();
        }
    }

    /// Counts `updates` edge updates of a finished push (see `floor_strengths`).
    #[inline]
    pub(crate) fn note_work(&self, updates: u64) {
        if self.floor_strengths.get().is_none() || self.live.is_some() {
            let done = self.work.fetch_add(updates.max(1), AtomicOrdering::Relaxed);
            // A change log's bitmap of changed nodes: it reads 16 bytes per node (the tree's
            // leaves, in order), a few ns per node against ~50 ns per edge update, so it is
            // built once the pushes on this snapshot have done n/8 edge updates.
            if let Some(l) = self.live.as_deref() {
                if done >= self.n as u64 / 8 {
                    l.build_changed();
                }
            }
        }
    }

    /// The hash key of every node of a string-id graph, built once the projections on this
    /// graph have hashed at least n keys (`note_keyed`), so the build costs about the hashing
    /// done so far. A string id's key is an FNV-1a pass over its bytes after a checked offset
    /// read and a UTF-8 check (~150 instructions, a third of a BlogCatalog query with string
    /// ids); from the table it is one load. 8 bytes per node, for the graphs of at most
    /// `TABLE_MAX_NODES` nodes only. None for other id kinds (their key is the id itself) and
    /// until built. Every id is checked by the build: a corrupted one fails the query.
    pub(crate) fn hash_keys(&self) -> Result<Option<&[u64]>> {
        if self.header.id_kind != IdKind::Utf8 || self.num_nodes() > TABLE_MAX_NODES {
            return Ok(None);
        }
        self.amortised_table(&self.hash_keys, &self.keyed, |v| self.hash_key(v))
    }

    /// Counts `keys` hash keys computed by a projection (see `hash_keys`).
    #[inline]
    pub(crate) fn note_keyed(&self, keys: usize) {
        if self.header.id_kind == IdKind::Utf8 && self.hash_keys.get().is_none() {
            self.keyed.fetch_add(keys as u64, AtomicOrdering::Relaxed);
        }
    }

    // ---------------------------------------------------------------- ids

    /// External id of internal node `v`.
    pub fn node_id(&self, v: u32) -> Result<NodeId<'_>> {
        if v as usize >= self.hot.n {
            self.check_node(v)?;
            return self.new_node_id(v);
        }
        match self.header.id_kind {
            IdKind::Implicit => Ok(NodeId::Int(i64::from(v))),
            IdKind::Int64 => Ok(NodeId::Int(self.ids_words()[v as usize] as i64)),
            IdKind::Utf8 => Ok(NodeId::Str(self.str_id(v)?)),
        }
    }

    /// The hash key of a node created by the change log, or the out-of-range error.
    #[cold]
    #[inline(never)]
    fn new_hash_key(&self, v: u32) -> Result<u64> {
        self.check_node(v)?;
        Ok(match self.new_node_id(v)? {
            NodeId::Int(i) => i as u64,
            NodeId::Str(s) => fnv1a64(s.as_bytes()),
        })
    }

    /// The id of a node created by the change log (`base n <= v < n`).
    #[cold]
    fn new_node_id(&self, v: u32) -> Result<NodeId<'_>> {
        match self.live.as_deref() {
            Some(l) => l.new_id(v, self.header.id_kind),
            None => Err(self.out_of_range(v)),
        }
    }

    /// The string id of base node `v` (`v < base n`).
    fn str_id(&self, v: u32) -> Result<&str> {
        std::str::from_utf8(self.str_id_bytes(v)?)
            .map_err(|_| Error::format(format!("string id of node {v} is not valid UTF-8")))
    }

    /// The bytes of `v`'s string id, not checked as UTF-8: enough to compare it with a valid
    /// id (equal bytes are that id), which the id search does ~20 times per lookup.
    #[inline]
    fn str_id_bytes(&self, v: u32) -> Result<&[u8]> {
        let offs = self.ids_words();
        let (s, e) = (offs[v as usize], offs[v as usize + 1]);
        let bytes = self.id_bytes();
        if s > e || e > bytes.len() as u64 {
            return Err(Error::format(format!(
                "corrupted string id offsets at node {v}"
            )));
        }
        Ok(&bytes[s as usize..e as usize])
    }

    /// The 64-bit hash key of internal node `v` (see docs/SPEC.md).
    #[inline]
    pub fn hash_key(&self, v: u32) -> Result<u64> {
        // One compare against the file's node count: the range check of a graph without a
        // log, and the branch to the log's ids otherwise (kept out of line so that this stays
        // small enough to inline into the projection loop).
        if v as usize >= self.hot.n {
            return self.new_hash_key(v);
        }
        match self.header.id_kind {
            IdKind::Implicit => Ok(u64::from(v)),
            IdKind::Int64 => Ok(self.ids_words()[v as usize]),
            IdKind::Utf8 => Ok(fnv1a64(self.str_id(v)?.as_bytes())),
        }
    }

    /// Internal index of the int id `id`, by binary search over `id_index` (O(log n), no
    /// in-memory map so opening stays O(1)), then over the change log's created ids.
    pub fn lookup_int(&self, id: i64) -> Result<Option<u32>> {
        match self.header.id_kind {
            IdKind::Implicit => Ok(if id >= 0 && (id as u64) < self.n as u64 {
                Some(id as u32)
            } else {
                None
            }),
            IdKind::Int64 => {
                let ids = self.ids_words();
                // A file in id order holds its ids sorted: search them directly, without the
                // indirection through `id_index`.
                let found = if self.header.permuted {
                    self.search(|v| (ids[v as usize] as i64).cmp(&id))?
                } else {
                    ids.binary_search_by(|&w| (w as i64).cmp(&id))
                        .ok()
                        .map(|v| v as u32)
                };
                match found {
                    Some(v) => Ok(Some(v)),
                    None => match self.live.as_deref() {
                        Some(l) => l.lookup_int(id),
                        None => Ok(None),
                    },
                }
            }
            IdKind::Utf8 => Ok(None),
        }
    }

    /// Internal index of the string id `id`.
    pub fn lookup_str(&self, id: &str) -> Result<Option<u32>> {
        match self.header.id_kind {
            IdKind::Utf8 => {
                let mut err = None;
                let r = self.search(|v| match self.str_id_bytes(v) {
                    Ok(s) => s.cmp(id.as_bytes()),
                    Err(e) => {
                        err = Some(e);
                        Ordering::Equal
                    }
                })?;
                if let Some(e) = err {
                    return Err(e);
                }
                match (r, self.live.as_deref()) {
                    (Some(v), _) => Ok(Some(v)),
                    (None, Some(l)) => l.lookup_str(id),
                    (None, None) => Ok(None),
                }
            }
            _ => Ok(None),
        }
    }

    /// Internal indices of many int ids, as [`Graph::lookup_int`] gives them one by one; `ids`
    /// ascending (see [`Graph::lookup_sorted`]).
    pub(crate) fn lookup_ints_sorted(&self, ids: &[i64]) -> Result<Vec<Option<u32>>> {
        match self.header.id_kind {
            IdKind::Int64 => {
                let words = self.ids_words();
                let idx = self.id_index();
                let permuted = self.header.permuted;
                self.lookup_sorted(
                    ids,
                    |r| Ok(if permuted { idx[r] } else { r as u32 }),
                    |v, id| (words[v as usize] as i64).cmp(id),
                    |id| match self.live.as_deref() {
                        Some(l) => l.lookup_int(*id),
                        None => Ok(None),
                    },
                )
            }
            _ => ids.iter().map(|&i| self.lookup_int(i)).collect(),
        }
    }

    /// Internal indices of many string ids, as [`Graph::lookup_str`] gives them one by one;
    /// `ids` ascending (see [`Graph::lookup_sorted`]).
    pub(crate) fn lookup_strs_sorted(&self, ids: &[&str]) -> Result<Vec<Option<u32>>> {
        match self.header.id_kind {
            IdKind::Utf8 => {
                let idx = self.id_index();
                let err = std::cell::Cell::new(None);
                let r = self.lookup_sorted(
                    ids,
                    |r| Ok(idx[r]),
                    |v, id| match self.str_id_bytes(v) {
                        Ok(b) => cmp_id_bytes(b, id.as_bytes()),
                        Err(e) => {
                            err.set(Some(e));
                            Ordering::Equal
                        }
                    },
                    |id| match self.live.as_deref() {
                        Some(l) => l.lookup_str(id),
                        None => Ok(None),
                    },
                );
                match err.into_inner() {
                    Some(e) => Err(e),
                    None => r,
                }
            }
            _ => ids.iter().map(|i| self.lookup_str(i)).collect(),
        }
    }

    /// Looks up ascending `ids` in the base file's sorted ids (rank `r` is node `node(r)`,
    /// compared to an id by `cmp`), each from where the previous one was found: a gallop,
    /// then a binary search of the range it brackets. `k` ids cost O(k log(n/k)) probes that
    /// walk the file in id order, not O(k log n) random ones. An id the file lacks is
    /// `miss(id)` (the change log's created ids).
    fn lookup_sorted<Q>(
        &self,
        ids: &[Q],
        node: impl Fn(usize) -> Result<u32>,
        cmp: impl Fn(u32, &Q) -> Ordering,
        miss: impl Fn(&Q) -> Result<Option<u32>>,
    ) -> Result<Vec<Option<u32>>> {
        let n = self.hot.n;
        let at = |r: usize| -> Result<u32> {
            let v = node(r)?;
            if v as usize >= n {
                return Err(Error::format(format!(
                    "corrupted id_index entry {v} >= {n}"
                )));
            }
            Ok(v)
        };
        // The first rank in `lo..hi` whose id is not below `q`.
        let first_not_below = |q: &Q, mut lo: usize, mut hi: usize| -> Result<usize> {
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if cmp(at(mid)?, q) == Ordering::Less {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            Ok(lo)
        };
        let (Some(head), Some(tail)) = (ids.first(), ids.last()) else {
            return Ok(Vec::new());
        };
        // Ids spread thin over the file's (fewer than one per 64 ranks they span) are each
        // found by a plain binary search: a gallop over long gaps would probe more pages.
        let start = first_not_below(head, 0, n)?;
        let span = first_not_below(tail, start, n)? - start;
        let dense = ids.len().saturating_mul(64) >= span;
        let mut out = Vec::with_capacity(ids.len());
        // Ranks below `lo` hold ids below the current one.
        let mut lo = start;
        for q in ids {
            let r = if dense {
                let mut step = 1;
                while lo + step <= n && cmp(at(lo + step - 1)?, q) == Ordering::Less {
                    lo += step;
                    step *= 2;
                }
                first_not_below(q, lo, (lo + step - 1).min(n))?
            } else {
                first_not_below(q, 0, n)?
            };
            lo = r;
            let hit = match r < n {
                true => Some(at(r)?).filter(|&v| cmp(v, q) == Ordering::Equal),
                false => None,
            };
            out.push(match hit {
                Some(v) => Some(v),
                None => miss(q)?,
            });
        }
        Ok(out)
    }

    /// Binary search of the base file's `id_index`.
    fn search(&self, mut cmp: impl FnMut(u32) -> Ordering) -> Result<Option<u32>> {
        let idx = self.id_index();
        let n = self.hot.n as u32;
        let (mut lo, mut hi) = (0usize, idx.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let v = idx[mid];
            if v >= n {
                return Err(Error::format(format!(
                    "corrupted id_index entry {v} >= {n}"
                )));
            }
            match cmp(v) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Some(v)),
            }
        }
        Ok(None)
    }

    /// All int ids in internal order (None for string-id graphs).
    pub fn int_ids(&self) -> Option<Vec<i64>> {
        match self.header.id_kind {
            IdKind::Implicit => Some((0..self.n as i64).collect()),
            IdKind::Int64 => {
                let mut ids: Vec<i64> = self.ids_words().iter().map(|&w| w as i64).collect();
                for v in self.hot.n..self.n {
                    // Created ids were checked when the graph was opened only for their
                    // bounds; a corrupted one reads as 0 here and fails `validate`.
                    ids.push(match self.node_id(v as u32) {
                        Ok(NodeId::Int(i)) => i,
                        _ => 0,
                    });
                }
                Some(ids)
            }
            IdKind::Utf8 => None,
        }
    }

    /// The int id of node `v` (int64 and implicit ids).
    pub(crate) fn int_id(&self, v: u32) -> Result<i64> {
        match self.node_id(v)? {
            NodeId::Int(i) => Ok(i),
            NodeId::Str(_) => Err(Error::input("this graph has string ids")),
        }
    }

    /// The string id of node `v` (utf8 ids).
    pub(crate) fn string_id(&self, v: u32) -> Result<&str> {
        match self.node_id(v)? {
            NodeId::Str(s) => Ok(s),
            NodeId::Int(_) => Err(Error::input("this graph has integer ids")),
        }
    }

    /// Total bytes of the string ids (base and created).
    pub(crate) fn id_bytes_len(&self) -> Result<u64> {
        let mut total = self.id_bytes().len() as u64;
        if self.header.id_kind == IdKind::Utf8 {
            for v in self.hot.n..self.n {
                total += self.string_id(v as u32)?.len() as u64;
            }
        }
        Ok(total)
    }

    // ---------------------------------------------------------------- full validation

    /// Every node in id order (internal indices sorted by external id): the base file's
    /// `id_index` merged with the change log's created nodes. O(n) time and 4n bytes.
    pub fn id_order(&self) -> Result<Vec<u32>> {
        let n = self.num_nodes();
        if self.header.id_kind == IdKind::Implicit {
            return Ok((0..n as u32).collect());
        }
        let base = self.id_index();
        let Some(l) = self.live.as_deref() else {
            return Ok(base.to_vec());
        };
        let created = l.new_nodes_by_id(self.header.id_kind)?;
        let mut out = Vec::with_capacity(n);
        let (mut i, mut j) = (0, 0);
        while i < base.len() || j < created.len() {
            let take_base = if i == base.len() {
                false
            } else if j == created.len() {
                true
            } else {
                let (a, b) = (base[i], created[j]);
                if a as usize >= self.hot.n {
                    return Err(Error::format("id_index is not a permutation of the nodes"));
                }
                match (self.node_id(a)?, self.node_id(b)?) {
                    (NodeId::Int(x), NodeId::Int(y)) => x < y,
                    (NodeId::Str(x), NodeId::Str(y)) => x.as_bytes() < y.as_bytes(),
                    _ => true,
                }
            };
            if take_base {
                out.push(base[i]);
                i += 1;
            } else {
                out.push(created[j]);
                j += 1;
            }
        }
        Ok(out)
    }

    /// `id_ranks` of the base file alone.
    fn base_ranks(&self) -> Result<Vec<u32>> {
        let n = self.hot.n;
        let mut rank = vec![u32::MAX; n];
        for (k, &v) in self.id_index().iter().enumerate() {
            if v as usize >= n || rank[v as usize] != u32::MAX {
                return Err(Error::format("id_index is not a permutation of the nodes"));
            }
            rank[v as usize] = k as u32;
        }
        Ok(rank)
    }

    /// `rank[v]`: the position of `v`'s external id in id order (the inverse of `id_order`).
    /// For an unpermuted file this is the identity. O(n) time and 4n bytes.
    pub fn id_ranks(&self) -> Result<Vec<u32>> {
        let n = self.num_nodes();
        if self.header.id_kind == IdKind::Implicit {
            return Ok((0..n as u32).collect());
        }
        let mut rank = vec![u32::MAX; n];
        for (k, &v) in self.id_order()?.iter().enumerate() {
            if v as usize >= n || rank[v as usize] != u32::MAX {
                return Err(Error::format("id_index is not a permutation of the nodes"));
            }
            rank[v as usize] = k as u32;
        }
        Ok(rank)
    }

    /// Whether internal indices differ from id order (a renumbered file, see `reorder.rs`, or
    /// a change log that created nodes with ids below existing ones).
    pub fn permuted(&self) -> bool {
        match &self.live {
            Some(l) => l.trailer.permuted(),
            None => self.header.permuted,
        }
    }

    /// Checks every section's checksum (reads the whole file once, sequentially), and every
    /// commit's checksum in the change log.
    pub fn verify_checksums(&self) -> Result<()> {
        let _scan = self.scan();
        let bytes = self.backing.bytes();
        for (i, s) in self.header.sections.iter().enumerate() {
            let data = &bytes[s.offset as usize..(s.offset + s.len) as usize];
            if checksum(data) != s.checksum {
                return Err(Error::format(format!(
                    "checksum mismatch in section {} (file corrupted)",
                    SECTION_NAMES[i]
                )));
            }
        }
        if let Some(l) = self.live.as_deref() {
            l.verify()?;
        }
        Ok(())
    }

    /// Full O(n + m) check of the graph file's invariants and checksums.
    pub(crate) fn validate_base(&self) -> Result<()> {
        let bytes = self.backing.bytes();
        for (i, s) in self.header.sections.iter().enumerate() {
            let data = &bytes[s.offset as usize..(s.offset + s.len) as usize];
            if checksum(data) != s.checksum {
                return Err(Error::format(format!(
                    "checksum mismatch in section {} (file corrupted)",
                    SECTION_NAMES[i]
                )));
            }
        }
        let n = self.hot.n;
        let ip = self.indptr();
        let idx = self.indices();
        for v in 0..n {
            if ip[v] > ip[v + 1] {
                return Err(Error::format(format!("indptr decreases at node {v}")));
            }
        }
        // Rows are sorted by internal index, or, in a permuted file, by the rank of the id.
        let rank = if self.header.permuted {
            Some(self.base_ranks()?)
        } else {
            None
        };
        let key = |u: u32| rank.as_ref().map_or(u, |r| r[u as usize]);
        let mut self_loops = 0u64;
        for v in 0..n {
            let row = &idx[ip[v] as usize..ip[v + 1] as usize];
            for (k, &u) in row.iter().enumerate() {
                if u as usize >= n {
                    return Err(Error::format(format!("node {v} has neighbour {u} >= {n}")));
                }
                if k > 0 && key(row[k - 1]) >= key(u) {
                    return Err(Error::format(format!(
                        "neighbours of node {v} are not strictly increasing"
                    )));
                }
                if u as usize == v {
                    self_loops += 1;
                }
            }
        }
        let m = self.header.num_arcs;
        let expect_edges = if self.header.directed {
            m
        } else {
            (m + self_loops) / 2
        };
        if self.header.num_edges != expect_edges {
            return Err(Error::format(format!(
                "num_edges {} does not match the stored arcs ({expect_edges})",
                self.header.num_edges
            )));
        }
        if !self.header.directed {
            // Symmetry: every arc (v, u) has its reverse (u, v).
            for v in 0..n {
                for &u in &idx[ip[v] as usize..ip[v + 1] as usize] {
                    let back = &idx[ip[u as usize] as usize..ip[u as usize + 1] as usize];
                    if back
                        .binary_search_by_key(&key(v as u32), |&x| key(x))
                        .is_err()
                    {
                        return Err(Error::format(format!(
                            "undirected graph is not symmetric: arc {v}->{u} has no reverse"
                        )));
                    }
                }
            }
        }
        if self.header.weighted {
            let w = self.weights_all();
            let st = self.strength_all();
            for v in 0..n {
                let row = &w[ip[v] as usize..ip[v + 1] as usize];
                let mut sum = 0f64;
                for &x in row {
                    if !(x.is_finite() && x > 0.0) {
                        return Err(Error::format(format!("node {v} has invalid weight {x}")));
                    }
                    sum += f64::from(x);
                }
                if sum.to_bits() != st[v].to_bits() {
                    return Err(Error::format(format!(
                        "strength of node {v} does not match its weights"
                    )));
                }
            }
        }
        if self.has_nbr_codes() {
            // Each arc's code must bound its target's strength, or the push would decide its
            // threshold tests wrongly.
            let weighted = self.header.weighted;
            let codes = self.nbr_codes();
            let mut node_code = Vec::with_capacity(n);
            for v in 0..n as u32 {
                node_code.push(crate::graph::strength_code::code_of(
                    weighted,
                    self.strength_in::<false>(v)?,
                ));
            }
            if let Some(k) = (0..idx.len()).find(|&k| codes[k] != node_code[idx[k] as usize]) {
                let v = ip.partition_point(|&x| x <= k as u64) - 1;
                return Err(Error::format(format!(
                    "neighbour code of arc {v}->{} does not match the neighbour's strength",
                    idx[k]
                )));
            }
        }
        match self.header.id_kind {
            IdKind::Implicit => {}
            IdKind::Int64 | IdKind::Utf8 => {
                let order = self.id_index();
                let mut seen = vec![false; n];
                for &v in order {
                    if v as usize >= n || std::mem::replace(&mut seen[v as usize], true) {
                        return Err(Error::format("id_index is not a permutation of the nodes"));
                    }
                }
                if self.header.id_kind == IdKind::Utf8 {
                    let offs = self.ids_words();
                    if offs[0] != 0 || offs[n] != self.header.sections[Sec::IdBytes as usize].len {
                        return Err(Error::format("string id offsets do not span id_bytes"));
                    }
                    for v in 0..n {
                        self.str_id(v as u32)?;
                    }
                }
                for k in 1..order.len() {
                    let (a, b) = (order[k - 1], order[k]);
                    let ord = match self.header.id_kind {
                        IdKind::Int64 => (self.ids_words()[a as usize] as i64)
                            .cmp(&(self.ids_words()[b as usize] as i64)),
                        _ => self.str_id(a)?.as_bytes().cmp(self.str_id(b)?.as_bytes()),
                    };
                    if ord != Ordering::Less {
                        return Err(Error::format(
                            "external ids are not unique and sorted in id_index",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cold]
fn corrupt_row(v: u32, s: u64, e: u64, m: u64) -> Error {
    Error::format(format!(
        "corrupted indptr at node {v}: [{s}, {e}) with {m} arcs"
    ))
}

/// The base file's identity as a log records it: its header checksum and length.
pub(crate) fn base_identity(g: &Graph) -> (u64, u64) {
    let img = g.image();
    // A graph's image holds at least its 256-byte header (checked when it was opened).
    let checksum = img
        .get(248..256)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes);
    (checksum, img.len() as u64)
}

/// `s`, node `v`'s stored strength, or an error when a corrupted file gives one that is not
/// finite and >= 0.
#[inline(always)]
fn checked_strength(v: u32, s: f64) -> Result<f64> {
    if s.is_finite() && s >= 0.0 {
        Ok(s)
    } else {
        Err(Error::format(format!(
            "corrupted strength at node {v}: {s}"
        )))
    }
}

/// `a.cmp(b)`, deciding most pairs of ids by one compare of their first 8 bytes as a
/// big-endian word (a search compares a query with many ids: a `memcmp` call each costs more).
#[inline]
fn cmp_id_bytes(a: &[u8], b: &[u8]) -> Ordering {
    match (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        (Some(x), Some(y)) => u64::from_be_bytes(*x)
            .cmp(&u64::from_be_bytes(*y))
            .then_with(|| a[8..].cmp(&b[8..])),
        _ => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::cmp_id_bytes;

    /// The word compare orders ids as comparing their bytes does: lengths 0 to 20, equal
    /// and differing first words, bytes above 0x7f, one id a prefix of the other.
    #[test]
    fn id_byte_compare_matches_the_slice_order() {
        let mut x = 3u64;
        let mut ids: Vec<Vec<u8>> = Vec::new();
        for i in 0..400u64 {
            x = crate::hashing::splitmix64(x);
            let len = (x % 21) as usize;
            // Few distinct bytes, so that many ids share their first 8 bytes.
            let mut id: Vec<u8> = (0..len)
                .map(|k| [b'a', b'b', 0xe9][((x >> (k * 2)) % 3) as usize])
                .collect();
            if i % 7 == 0 && !ids.is_empty() {
                id = ids[(x as usize / 7) % ids.len()].clone();
                id.truncate((x % 12) as usize);
            }
            ids.push(id);
        }
        for a in &ids {
            for b in &ids {
                assert_eq!(
                    cmp_id_bytes(a, b),
                    a.as_slice().cmp(b.as_slice()),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
