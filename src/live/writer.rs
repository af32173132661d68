//! The one writer of a live graph: the lock, staging, durable commits (segments, the index's
//! levels, the superblock), compaction and node removal.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::graph::build::Merge;
use crate::graph::csr::base_identity;
use crate::graph::csr::{Graph, NodeId};
use crate::graph::format::IdKind;
use crate::graph::log_format::{
    best_slot, fence_stride, level_entry_len, LogHeader, LogId, Op, SegmentBuf, Slot, Trailer,
    BITMAP_BLOCK_LEN, BITMAP_BLOCK_NODES, DATA_START, DIR_MAGIC, INLINE_DELTA,
    LEVEL_BITMAP_MIN_ENTRIES, LEVEL_MAGIC, MAX_LEVELS, RUN_MAGIC, SLOT_LEN, SLOT_OFFSETS,
    TRAILER_LEN, TRAILER_PERMUTED,
};

use crate::graph::overlay::*;
use crate::graph::replace::*;
use crate::live::open::*;
use crate::live::stage::*;

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
    /// Threads of staging and commits (None: `RAYON_NUM_THREADS`, else every CPU).
    threads: Option<usize>,
    /// Whether this writer created the log when it opened the path (there was none): a writer
    /// that then commits nothing removes it when dropped, so a failed `update` leaves the
    /// path as it was.
    created_log: bool,
    /// The memory of a dropped snapshot's level filter, for the next commit's copy.
    filter_spare: Arc<FilterSpare>,
    /// Bytes this writer's commits appended to the log since it opened or last wrote the
    /// index file (see `write_index_when_due`).
    since_index: u64,
}

impl Drop for LiveWriter {
    fn drop(&mut self) {
        if self.created_log && self.slot.seq == 0 && std::fs::remove_file(&self.log_path).is_ok() {
            sync_dir(&self.log_path);
        }
    }
}

/// Writes a new empty log for the base file `g` to `target` (atomically).
pub(crate) fn create_log(g: &Graph, target: &Path, merge: Merge) -> Result<LogHeader> {
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

impl LiveWriter {
    /// Opens `path` for writing: takes the lock, creates the change log if there is none.
    /// `merge` is how weights of duplicate edges merge; it is fixed when the log is created
    /// (None: the log's, or `Sum` for a new log) and must match an existing log's.
    pub fn open(path: &Path, merge: Option<Merge>, prefetch: bool) -> Result<LiveWriter> {
        let lock = lock(path)?;
        let (dir, name) = dir_and_name(path);
        // Holding the lock, every temporary file of this path on this host is a leftover
        // (e.g. of a killed compaction).
        crate::graph::replace::remove_leftovers(&dir, &name, true);
        let lp = log_path(path);
        let base = Graph::open_base(path)?;
        let fresh = |merge: Merge| -> Result<()> {
            create_log(&base, &lp, merge)?;
            sync_dir(&lp);
            Ok(())
        };
        let mut created_log = false;
        match File::open(&lp) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fresh(merge.unwrap_or(Merge::Sum))?;
                created_log = true;
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
        let filter_spare = Arc::new(FilterSpare::default());
        let mut snapshot = open(path, prefetch)?;
        snapshot.give_filter_to(&filter_spare);
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
            threads: None,
            filter_spare,
            created_log,
            since_index: 0,
        })
    }

    /// The newest committed state.
    pub fn snapshot(&self) -> Arc<Graph> {
        self.snapshot.clone()
    }

    /// Sets the threads that stage calls and write commits (None: `RAYON_NUM_THREADS`, else
    /// every CPU). The log's bytes do not depend on it.
    pub fn set_threads(&mut self, threads: Option<usize>) -> Result<()> {
        crate::parallel::resolve_threads(threads)?;
        self.threads = threads;
        Ok(())
    }

    /// The pool for work of `jobs` independent parts (None: one thread).
    fn pool(&self, jobs: usize) -> Result<Option<Arc<rayon::ThreadPool>>> {
        crate::parallel::pool_for(crate::parallel::resolve_threads(self.threads)?, jobs)
    }

    /// Operations staged and not yet committed.
    pub fn staged_ops(&self) -> u64 {
        self.stage.as_ref().map_or(0, |s| s.num_ops)
    }

    pub(crate) fn stage(&mut self) -> Result<&mut Stage> {
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
        let pool = self.pool(ops.len() / 4096)?;
        self.stage()?
            .apply_call(&g, &ops, pool.as_deref())
            .map(|_| ())
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
        let pool = self.pool(ops.len() / 4096)?;
        self.stage()?.apply_call(&g, &ops, pool.as_deref())
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
        let pool = self.pool((stage.arcs_set.len() + stage.run.len()) / 4096)?;
        let (trailer_at, trailer_checksum) =
            write_segment(&self.file, lp, &g, &stage, seq, self.end, pool.as_deref())?;
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
        self.since_index += trailer_at + TRAILER_LEN as u64 - self.end;
        self.end = trailer_at + TRAILER_LEN as u64;
        // The base file's map is kept: the pages the next commits read stay mapped.
        let mut next = reopen(&self.snapshot, &self.path)?;
        next.give_filter_to(&self.filter_spare);
        drop(g);
        let prev = std::mem::replace(&mut self.snapshot, Arc::new(next));
        Graph::carry_level_filter(prev, &self.snapshot, Some(&self.filter_spare));
        self.write_index_when_due(false);
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
    pub(crate) fn replace_base(&mut self, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let (dir, name) = dir_and_name(&self.path);
        let tag = crate::graph::replace::owner_tag();
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
            // The old log's index file (readers would ignore it: it names the old commit).
            let _ = std::fs::remove_file(crate::graph::index_file::index_path(&self.path));
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
        // The new (empty) log replaces one that held commits: it stays.
        self.created_log = false;
        let mut snapshot = open(&self.path, self.prefetch)?;
        snapshot.give_filter_to(&self.filter_spare);
        self.snapshot = Arc::new(snapshot);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the index file of the last commit when due (see `write_index_when_due`), then
    /// releases the lock (staged operations are dropped).
    pub fn close(mut self) {
        self.write_index_when_due(true);
    }

    /// Writes the index file of the last commit once the commits since the last one appended
    /// at least its size to the log (so its bytes add at most the log's to the writes, and a
    /// few small commits on a large graph do not pay O(n) bytes each), unless the file there
    /// still serves this commit with newer levels whose entries take less than half its size:
    /// readers take those entries with the file (`Overlay::index_from_file`), for less than
    /// a rewrite would cost. A writer that closes (`closing`) writes it once its commits
    /// appended a quarter of its size, unless the file names its last commit or serves it
    /// without newer entries: the readers after it then load the file alone (on a 65M-node
    /// graph a cold query took about half the time of one that also read the newer levels).
    /// The index file is a cache: a failure to write it is not reported (readers then build
    /// the level filter, as without the file).
    fn write_index_when_due(&mut self, closing: bool) {
        let Some(len) = index_file_len(&self.snapshot) else {
            return;
        };
        if self.since_index < if closing { len / 4 } else { len } {
            return;
        }
        let newer = indexed(&self.snapshot).and_then(|ov| ov.newer_than_index_file(&self.path));
        let serves = match newer {
            Some(0) => true,
            Some(bytes) => !closing && 2 * bytes < len,
            None => false,
        };
        if !serves && self.write_index().is_ok() {
            self.since_index = 0;
        }
    }

    /// Bytes appended since the index file was last written (see `write_index_when_due`).
    #[cfg(test)]
    pub(crate) fn since_index(&self) -> u64 {
        self.since_index
    }

    /// Writes the index file of the last commit (`crate::graph::index_file`), so that readers
    /// opened on it get their lookups at the speed of the index in memory from their first
    /// query, or removes a stale one when the commit needs none. O(n / 8 + changed nodes)
    /// bytes, after reading the last index file and the levels written since, or every
    /// level when there is none. Returns whether it wrote one.
    pub fn write_index(&self) -> Result<bool> {
        let path = crate::graph::index_file::index_path(&self.path);
        let Some(ov) = indexed(&self.snapshot) else {
            let _ = std::fs::remove_file(&path);
            return Ok(false);
        };
        // Not synced: a reader checks the file, and a crash leaves at worst one it ignores.
        crate::graph::build::write_cache_atomic(&path, &ov.index_file_bytes(&self.path)?)?;
        Ok(true)
    }
}

/// The log of `g`'s commit when the commit gets an index file (`Overlay::takes_index_file`).
fn indexed(g: &Graph) -> Option<&Overlay> {
    g.overlay().filter(|ov| ov.takes_index_file())
}

/// The size of the index file of `g`'s commit, None when it gets none.
pub(crate) fn index_file_len(g: &Graph) -> Option<u64> {
    let ov = indexed(g)?;
    Some(crate::graph::index_file::file_len(
        u64::from(ov.n),
        ov.trailer.changed,
    ))
}

pub(crate) fn merge_name(m: Merge) -> &'static str {
    match m {
        Merge::Sum => "sum",
        Merge::Max => "max",
    }
}

/// Appends a segment's bytes to the log file, hashing all but the trailer.
pub(crate) struct SegmentWriter<'a> {
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

    pub(crate) fn pos(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    pub(crate) fn put(&mut self, b: &[u8]) -> Result<()> {
        self.hash.update(b);
        self.put_unhashed(b)
    }

    pub(crate) fn put_unhashed(&mut self, b: &[u8]) -> Result<()> {
        self.bytes.extend_from_slice(b);
        if self.bytes.len() >= Self::CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// As [`SegmentWriter::put`]; 64 KB or more are written directly, without a copy.
    pub(crate) fn put_large(&mut self, b: &[u8]) -> Result<()> {
        if b.len() < 1 << 16 {
            return self.put(b);
        }
        self.flush()?;
        self.hash.update(b);
        write_at(self.file, b, self.base).map_err(|e| Error::io(self.log_path, e))?;
        self.base += b.len() as u64;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        write_at(self.file, &self.bytes, self.base).map_err(|e| Error::io(self.log_path, e))?;
        self.base += self.bytes.len() as u64;
        self.bytes.clear();
        Ok(())
    }
}

/// Writes a commit's segment at `at`, the committed end (a crash before the superblock names
/// it leaves the log as it was), without syncing; returns its trailer's offset and checksum.
///
/// The new rows are merged from the committed rows and the batch's changes and streamed to
/// the file in node order, in windows of records built in parallel on `pool`; the index after
/// them names their offsets. The bytes do not depend on the pool, and the writer holds one
/// window of records at a time, never all of them.
pub(crate) fn write_segment(
    file: &File,
    log_path: &Path,
    g: &Graph,
    stage: &Stage,
    seq: u64,
    at: u64,
    pool: Option<&rayon::ThreadPool>,
) -> Result<(u64, u64)> {
    let mut out = SegmentWriter {
        file,
        log_path,
        base: at,
        bytes: Vec::with_capacity(SegmentWriter::CHUNK + (1 << 16)),
        hash: xxhash_rust::xxh3::Xxh3Default::new(),
    };
    // Operations (their length is in the trailer).
    let mut head = SegmentBuf {
        base: at,
        bytes: Vec::with_capacity(stage.ops.len() + 8),
    };
    head.put(&stage.ops);
    head.align8();
    out.put(&head.bytes)?;

    // The records of the changed nodes (ascending), and for the index where each went and
    // its leaf's value (the threshold's input: the strength, or the degree).
    let ov = g.overlay();
    let changes = stage.sorted_changes(g, pool)?;
    let groups: Vec<&[ArcChange]> = changes.chunk_by(|x, y| x.0 == y.0).collect();
    let mut entries = Vec::with_capacity(groups.len());
    let mut changed = ov.map_or(0, |o| o.trailer.changed);
    for window in record_windows(g, &groups, pool) {
        let parts =
            crate::parallel::map_chunks(pool, &window, 1, |(range, cost)| -> Result<RecordsPart> {
                // About 4 bytes per arc, and a record's header.
                let mut part = RecordsPart {
                    bytes: Vec::with_capacity((4 * cost + 24 * range.len() as u64) as usize),
                    entries: Vec::with_capacity(range.len()),
                };
                let mut sc = RecordScratch::default();
                let groups = &groups[range.clone()];
                for (i, group) in groups.iter().enumerate() {
                    // Each node's index entry and offsets, asked for in steps (each step's
                    // lines say where the next one's are) while the nodes before it are
                    // written: they are scattered over the log and the file.
                    if let Some(o) = ov {
                        let steps = [
                            (0, 2 * PREFETCH_AHEAD),
                            (1, PREFETCH_AHEAD),
                            (2, PREFETCH_AHEAD / 2),
                        ];
                        for (step, ahead) in steps {
                            if let Some(a) = groups.get(i + ahead) {
                                o.prefetch_leaf_step(a[0].0, step);
                            }
                        }
                    }
                    if let Some(a) = groups.get(i + PREFETCH_AHEAD) {
                        g.prefetch_base_offsets(a[0].0);
                    }
                    part.add(g, stage, group, &mut sc)?;
                }
                Ok(part)
            });
        for part in parts {
            let part = part?;
            let base = out.pos();
            for &(v, word, leaf, had) in &part.entries {
                changed += u64::from(!had);
                let word = if word & INLINE_DELTA != 0 {
                    word
                } else {
                    base + word
                };
                entries.push((v, word, leaf));
            }
            out.put_large(&part.bytes)?;
        }
    }
    let rows_end = out.pos();

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
        write_levels(&mut tail, ov, &entries, stage.n, stage.weighted)?
    };
    tail.align8();
    let trailer_at = tail.pos();
    out.put_large(&tail.bytes)?;
    let trailer = Trailer {
        flags: if stage.permuted { TRAILER_PERMUTED } else { 0 },
        seq,
        start: at,
        index,
        levels,
        num_nodes: u64::from(stage.n),
        num_arcs: stage.arcs,
        self_loops: stage.self_loops,
        runs: runs_at,
        adds: stage.adds,
        removes: stage.removes,
        changed,
        ops_len: stage.ops.len() as u64,
        segment_checksum: out.hash.digest(),
    };
    let tb = trailer.encode();
    out.put_unhashed(&tb)?;
    out.flush()?;
    Ok((trailer_at, Trailer::stored_checksum(&tb)))
}

/// The encoded records of consecutive changed nodes, built by one task of [`write_segment`]:
/// their bytes, and per node (node, offset in the bytes or an inline delta, leaf value, whether
/// it had a record).
#[derive(Default)]
struct RecordsPart {
    bytes: Vec<u8>,
    entries: Vec<(u32, u64, f64, bool)>,
}

impl RecordsPart {
    fn add(
        &mut self,
        g: &Graph,
        stage: &Stage,
        group: &[ArcChange],
        sc: &mut RecordScratch,
    ) -> Result<()> {
        let at = self.bytes.len() as u64;
        let (v, leaf, word, had) = stage.record(g, group, sc, |v, rec, had| {
            rec.encode_into(v, stage.weighted, &mut self.bytes);
            debug_assert_eq!(self.bytes.len() as u64 - at, rec.len(stage.weighted));
            // An inline delta's word, or the record's offset in this part.
            let word = match rec {
                NewRecord::Inline { word, .. } => word,
                _ => at,
            };
            Ok((v, rec.leaf(stage.weighted), word, had))
        })?;
        self.entries.push((v, word, leaf, had));
        Ok(())
    }
}

/// Arcs (about 4 bytes each) of records per parallel task of [`write_segment`].
const RECORDS_PER_TASK: u64 = 1 << 16;

/// The changed nodes' `groups` cut into windows of ranges (with their costs), each range one
/// task's records: a window holds as many tasks as the pool has threads (one without a pool),
/// each task about [`RECORDS_PER_TASK`] arcs of rows (estimated from the committed degrees),
/// so that a window takes a few megabytes at most beside its largest rows.
fn record_windows(
    g: &Graph,
    groups: &[&[ArcChange]],
    pool: Option<&rayon::ThreadPool>,
) -> Vec<Vec<(std::ops::Range<usize>, u64)>> {
    let tasks = pool.map_or(1, |p| p.current_num_threads().max(1));
    // Cost of a record: its changes, and the arcs of the committed row it may rewrite,
    // estimated by the base file's row (the log is not searched for an estimate; an
    // unreadable degree counts as none: building the record reports the error).
    let base_n = g.base_num_nodes();
    let chunks: Vec<&[&[ArcChange]]> = groups.chunks(4096).collect();
    let costs = crate::parallel::map_chunks(pool, &chunks, 1, |chunk| {
        let mut out = Vec::with_capacity(chunk.len());
        for (i, group) in chunk.iter().enumerate() {
            // The nodes are scattered over the file's offsets: each asked for ahead.
            if let Some(ahead) = chunk.get(i + PREFETCH_AHEAD) {
                g.prefetch_base_offsets(ahead[0].0);
            }
            let v = group[0].0;
            let degree = if (v as usize) < base_n {
                g.base_degree(v).unwrap_or(0)
            } else {
                0
            };
            out.push(group.len() as u64 + degree);
        }
        out
    });
    let costs: Vec<u64> = costs.into_iter().flatten().collect();
    let mut windows = Vec::new();
    let mut window = Vec::with_capacity(tasks);
    let (mut start, mut cost) = (0, 0);
    for (k, c) in costs.iter().enumerate() {
        cost += c;
        if cost >= RECORDS_PER_TASK || k + 1 == groups.len() {
            window.push((start..k + 1, cost));
            (start, cost) = (k + 1, 0);
            if window.len() == tasks {
                windows.push(std::mem::replace(&mut window, Vec::with_capacity(tasks)));
            }
        }
    }
    if !window.is_empty() {
        windows.push(window);
    }
    windows
}

/// Writes the id runs after adding this stage's created nodes (merging the newest runs while
/// the older one is not larger than twice... the binary-counter rule below), and the run
/// directory; returns the directory's offset.
pub(crate) fn write_runs(seg: &mut SegmentBuf, ov: Option<&Overlay>, stage: &Stage) -> Result<u64> {
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

pub(crate) fn write_run(seg: &mut SegmentBuf, first: u32, ids: &[LogId]) {
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
    seg.put(&RUN_MAGIC.to_le_bytes());
    seg.put(&(count as u32).to_le_bytes());
    seg.put(&first.to_le_bytes());
    seg.put(&0u32.to_le_bytes());
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

/// Levels of one tier (`level_tier`) that a commit merges into one: a commit's new level is
/// merged with the newest levels of its tier or below once they are this many with it, so
/// that each entry is rewritten about log16(entries) times, not log2 as when every level
/// merges with the next as large. Measured on an 8M-node graph, 1 % of its edges changed in
/// 100 commits: a log of 0.122 of the graph file with log2 merging and 6 levels, 0.086 with
/// this rule and 10 levels (docs/LIVE.md, "Cost"); the level filter keeps a lookup at one
/// level's search however many there are.
pub(crate) const LEVEL_TIER_FANOUT: usize = 16;

/// Levels of fewer entries (one page of entries) merge with the next commit's level while
/// they are not larger than it, as a binary counter, whatever their tiers.
pub(crate) const LEVEL_TIER_MIN: u64 = 256;

/// Levels past which a commit also merges its new level with the next one whatever their
/// tiers, so that a log stays below `MAX_LEVELS`: up to 15 levels of each tier can stand,
/// and commits of varied sizes fill many tiers.
pub(crate) const LEVEL_CAP: usize = 48;

/// A level's tier: how many times 16 divides its entry count (`LEVEL_TIER_FANOUT`).
fn level_tier(count: u64) -> u32 {
    count.max(1).ilog(LEVEL_TIER_FANOUT as u64)
}

/// Adds `entries` (node, record offset, strength or degree; ascending by node) to the index:
/// a new level, merged with the newest levels by tiers (see `LEVEL_TIER_FANOUT`; an entry of
/// a newer level replaces an older one's), then the level directory. Returns the directory's
/// offset and the number of levels.
pub(crate) fn write_levels(
    seg: &mut SegmentBuf,
    ov: Option<&Overlay>,
    entries: &[(u32, u64, f64)],
    num_nodes: u32,
    weighted: bool,
) -> Result<(u64, u32)> {
    let mut merged: Vec<(u32, u64, u64)> = entries
        .iter()
        .map(|&(v, at, x)| (v, at, x.to_bits()))
        .collect();
    let old = ov.map_or(&[][..], |o| &o.levels[..]);
    let mut kept = 0;
    if let Some(o) = ov {
        loop {
            // Small levels merge as a binary counter: a commit of a few changes then writes
            // a few entries, not a directory of many one-entry levels.
            if let Some(l) = old.get(kept) {
                if l.count < LEVEL_TIER_MIN && l.count <= merged.len() as u64 {
                    merged = o.merged_with_level(l, &merged)?;
                    kept += 1;
                    continue;
                }
            }
            let tier = level_tier(merged.len() as u64);
            let run = old[kept..]
                .iter()
                .take_while(|l| level_tier(l.count) <= tier)
                .count();
            let take = if run + 1 >= LEVEL_TIER_FANOUT {
                run
            } else if old.len() - kept >= LEVEL_CAP {
                1
            } else {
                break;
            };
            for l in &old[kept..kept + take] {
                merged = o.merged_with_level(l, &merged)?;
            }
            kept += take;
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
    // A bitmap (64 bytes per 448 nodes of the graph) where it is no larger than the entries.
    let blocks = Level::blocks_for(u64::from(num_nodes));
    let entry_len = level_entry_len(weighted);
    let blocks =
        if count >= LEVEL_BITMAP_MIN_ENTRIES && BITMAP_BLOCK_LEN * blocks <= entry_len * count {
            blocks
        } else {
            0
        };
    // Counts fit in u32: at most one entry per node.
    seg.put(&LEVEL_MAGIC.to_le_bytes());
    seg.put(&(count as u32).to_le_bytes());
    seg.put(&(blocks as u32).to_le_bytes());
    seg.put(&0u32.to_le_bytes());
    if fence_len(count, weighted) > 0 {
        for e in merged.iter().step_by(fence_stride(weighted) as usize) {
            seg.put(&e.0.to_le_bytes());
        }
        seg.align8();
    }
    // Entries: node, then degree (exact in u32) and record word, or record word and strength.
    let start = seg.bytes.len();
    // The entries, the bitmap with its padding, and the directory.
    seg.bytes.reserve(
        (entry_len * count + BITMAP_BLOCK_LEN * blocks + 64 + 8 * MAX_LEVELS as u64) as usize,
    );
    for e in &merged {
        seg.bytes.extend_from_slice(&e.0.to_le_bytes());
        if weighted {
            seg.bytes.extend_from_slice(&[0; 4]);
            seg.bytes.extend_from_slice(&e.1.to_le_bytes());
            seg.bytes.extend_from_slice(&e.2.to_le_bytes());
        } else {
            seg.bytes
                .extend_from_slice(&(f64::from_bits(e.2) as u32).to_le_bytes());
            seg.bytes.extend_from_slice(&e.1.to_le_bytes());
        }
    }
    debug_assert_eq!(seg.bytes.len() - start, (entry_len * count) as usize);
    if blocks > 0 {
        let pad = pad64(seg.pos()).ok_or_else(|| Error::format("change log too large"))?;
        seg.put(&vec![0u8; (pad - seg.pos()) as usize]);
        let mut bits = vec![0u64; 8 * blocks as usize];
        for e in &merged {
            let (b, i) = (
                (u64::from(e.0) / BITMAP_BLOCK_NODES) as usize,
                (u64::from(e.0) % BITMAP_BLOCK_NODES) as usize,
            );
            // An older level of a corrupted log may hold any node.
            let w = bits.get_mut(8 * b + 1 + i / 64).ok_or_else(|| {
                Error::format("change log corrupted: a row for a node that does not exist")
            })?;
            *w |= 1 << (i % 64);
        }
        let mut before = 0u64;
        for b in 0..blocks as usize {
            bits[8 * b] = before;
            before += bits[8 * b + 1..8 * b + 8]
                .iter()
                .map(|w| u64::from(w.count_ones()))
                .sum::<u64>();
        }
        seg.bytes.extend(bits.iter().flat_map(|w| w.to_le_bytes()));
    }
    // The directory, newest first (the trailer holds its length).
    let dir = seg.pos();
    let levels = 1 + rest.len() as u32;
    seg.put(&at.to_le_bytes());
    for l in rest {
        seg.put(&l.at.to_le_bytes());
    }
    Ok((dir, levels))
}

// ------------------------------------------------------------------------------ checking

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable};
    use crate::graph::log_format::INLINE_DELTA;

    /// Saves the unweighted graph of `n` nodes and arcs `src[i] -> dst[i]` at `path`.
    /// A stream of pseudo-random words, the same in every run.
    fn seeded_stream() -> impl FnMut() -> u64 {
        let mut k = 0u64;
        move || {
            k += 1;
            crate::hashing::splitmix64(k)
        }
    }

    /// Saves a graph of `edges` random edges on `n` nodes, drawn from `next`.
    fn save_random_graph(path: &Path, n: u32, edges: usize, next: &mut impl FnMut() -> u64) {
        let (src, dst): (Vec<u32>, Vec<u32>) = (0..edges)
            .map(|_| {
                let a = (next() % u64::from(n)) as u32;
                (a, (next() % u64::from(n)) as u32)
            })
            .unzip();
        save_graph(path, n as usize, &src, &dst);
    }

    fn save_graph(path: &Path, n: usize, src: &[u32], dst: &[u32]) {
        let parts =
            csr_from_edges(n, src, dst, None, false, Merge::Sum, IdTable::Implicit).unwrap();
        save(&build_in_memory(&parts).unwrap(), path).unwrap();
    }

    /// A star of 400 leaves whose hub every commit changes by one arc (removed one by one,
    /// then added back): its records are deltas (never the whole row while they are small and
    /// the row is not small), their chains stay within the limit, and a whole row is written
    /// once the deltas would outweigh it.
    #[test]
    fn a_change_to_a_large_row_is_a_delta_and_chains_stay_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("star.graph");
        let leaves: Vec<u32> = (1..=400).collect();
        save_graph(&path, 401, &[0; 400], &leaves);
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
                        // One arc on the file's row: held by the index entry.
                        assert_eq!((d.nbrs().len(), d.chain, d.older), (1, 1, 0));
                        assert_eq!(d.vals(), &[0.0]);
                        assert_ne!(o.leaf(0).unwrap().0 & INLINE_DELTA, 0);
                    }
                    assert!(2 * d.nbrs().len() as u64 <= u64::from(d.degree));
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

    /// The level filter of a reader names for each node the newest level that holds it, by
    /// the levels' own search (bitmaps, and the entries of the levels too small for one),
    /// and lookups through it give what the levels give. Commits of varied sizes
    /// make levels with and without bitmaps, and two and more of them.
    #[test]
    fn the_level_filter_holds_the_nodes_of_every_level() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("random.graph");
        let n = 5000u32;
        let mut next = seeded_stream();
        save_random_graph(&path, n, 20_000, &mut next);
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        let (mut filtered, mut unfiltered) = (0, 0);
        let (mut small_levels, mut bitmap_levels) = (0, 0);
        let mut hinted_entries = 0;
        for commit in 0..9 {
            let edges = if commit % 3 == 2 { 100 } else { 900 };
            let a: Vec<i64> = (0..edges).map(|_| (next() % u64::from(n)) as i64).collect();
            let b: Vec<i64> = (0..edges).map(|_| (next() % u64::from(n)) as i64).collect();
            w.add_edges(&Ids::Int(a), &Ids::Int(b), None).unwrap();
            assert!(w.commit().unwrap());
            let g = Graph::open(&path).unwrap().with_index_on_disk();
            let o = g.overlay().unwrap();
            let nodes = g.num_nodes() as u32;
            let found = |v: u32| -> Option<usize> {
                o.levels
                    .iter()
                    .position(|l| o.find_in(l, v).unwrap().is_some())
            };
            let before: Vec<(u64, u64)> = (0..nodes)
                .map(|v| o.leaf(v).map(|(w, s)| (w, s.to_bits())).unwrap())
                .collect();
            // The writer's read-ahead is a hint: any node, in range or not, any step, with
            // or without the filter, reads nothing out of bounds.
            let hint = |o: &Overlay| {
                for v in 0..nodes + 3 {
                    (0..4).for_each(|step| o.prefetch_leaf_step(v, step));
                }
            };
            hint(o);
            // Without the filter, the entries' hints name a block in every level without a
            // bitmap.
            let ranges = |v: u32| {
                let mut r = Vec::new();
                o.leaf_hint_ranges(v, |off, len| r.push((off, len)));
                r
            };
            let small = o.levels.iter().filter(|l| l.blocks == 0).count();
            for v in 0..nodes {
                assert_eq!(ranges(v).len(), small, "node {v}");
            }
            o.build_level_filter();
            hint(o);
            let Some(f) = o.level_filter.get() else {
                assert!(o.levels.len() < LEVEL_FILTER_MIN_LEVELS);
                unfiltered += 1;
                continue;
            };
            small_levels += o.levels.iter().filter(|l| l.blocks == 0).count();
            bitmap_levels += o.levels.iter().filter(|l| l.blocks > 0).count();
            assert!(o.levels.len() >= LEVEL_FILTER_MIN_LEVELS);
            assert_eq!(f.len(), nodes as usize);
            filtered += 1;
            for v in 0..nodes {
                let newest = found(v).map_or(0, |at| o.levels.len() - at);
                assert_eq!(
                    usize::from(f[v as usize]),
                    newest,
                    "node {v}, commit {commit}"
                );
                let (word, s) = o.leaf(v).unwrap();
                assert_eq!((word, s.to_bits()), before[v as usize], "node {v}");
                // With it, `v`'s entry in the newest level that holds it (the block of
                // entries that holds it, in a level without a bitmap); nothing for a node
                // that no level holds.
                let holder = found(v).map(|at| &o.levels[at]);
                match (holder, &ranges(v)[..]) {
                    (None, r) => assert!(r.is_empty(), "node {v}: {r:?}"),
                    (Some(l), &[(off, len)]) => {
                        let (mut lo, mut hi) = (0, l.count);
                        while lo < hi {
                            let mid = (lo + hi) / 2;
                            match o.level_entry(l, mid).unwrap().0.cmp(&v) {
                                std::cmp::Ordering::Less => lo = mid + 1,
                                _ => hi = mid,
                            }
                        }
                        let e = level_entry_len(l.weighted);
                        let at = l.entries + e * lo;
                        assert!(off <= at && at + e <= off + len, "node {v}");
                        if l.blocks > 0 {
                            assert_eq!((off, len), (at, e), "node {v}");
                        }
                        hinted_entries += 1;
                    }
                    (Some(_), r) => panic!("node {v}: {r:?}"),
                }
            }
        }
        assert!(hinted_entries > 0);
        assert!(
            filtered > 0 && unfiltered > 0 && small_levels > 0 && bitmap_levels > 0,
            "{filtered} states with a filter ({bitmap_levels} levels with a bitmap, \
             {small_levels} without), {unfiltered} states without"
        );
    }

    /// A writer carries the level filter from one snapshot to the next (marking the new
    /// level's nodes, the older levels keeping their numbers): after every commit it equals
    /// the filter built from the new snapshot's levels. Commits of three sizes make levels of
    /// three tiers, merged and not; some commits create nodes, one changes no row; the
    /// previous snapshot is sometimes still held elsewhere (the filter is then copied, into
    /// the memory of a dropped snapshot's filter when the writer kept one).
    #[test]
    fn a_writer_carries_the_level_filter_across_commits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("random.graph");
        let n = 3000u32;
        let mut next = seeded_stream();
        save_random_graph(&path, n, 12_000, &mut next);
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        let (mut carried, mut merges, mut most_levels, mut reused) = (0, 0, 0, 0);
        let mut held = None;
        for commit in 0..60u64 {
            let before = w.snapshot().overlay().map_or(0, |o| o.levels.len());
            if commit == 41 {
                // Removals of absent edges only: a commit that writes no index.
                let a: Vec<i64> = (0..5).map(|i| i64::from(n) + 100 + i).collect();
                w.remove_edges(&Ids::Int(a.clone()), &Ids::Int(a)).unwrap();
            } else {
                let edges = [400, 60, 7][commit as usize % 3];
                let top = u64::from(n) + commit * 2 * u64::from(commit % 5 == 0);
                let a: Vec<i64> = (0..edges).map(|_| (next() % top) as i64).collect();
                let b: Vec<i64> = (0..edges).map(|_| (next() % top) as i64).collect();
                w.add_edges(&Ids::Int(a), &Ids::Int(b), None).unwrap();
            }
            held = (commit % 4 == 1).then(|| w.snapshot());
            let spare = w.filter_spare.lock().unwrap().is_some();
            assert!(w.commit().unwrap());
            if held.is_some() && spare {
                // The copy took the spare memory.
                assert!(w.filter_spare.lock().unwrap().is_none());
                reused += 1;
            }
            let g = w.snapshot();
            let o = g.overlay().unwrap();
            most_levels = most_levels.max(o.levels.len());
            merges += usize::from(o.levels.len() <= before && commit != 41);
            match o.level_filter.get() {
                Some(f) => {
                    let built = o.level_filter_marks().unwrap();
                    assert_eq!(f.len(), g.num_nodes());
                    assert!(f[..] == built[..], "commit {commit}");
                    carried += 1;
                }
                None => {
                    // Start one: the next commits carry it.
                    let _ = o.level_filter.set(o.level_filter_marks().unwrap().into());
                }
            }
        }
        drop(held);
        assert!(
            carried >= 58 && merges > 2 && most_levels >= 16 && reused >= 10,
            "{carried} carried, {merges} merging commits, {most_levels} levels at most, \
             {reused} copies into spare memory"
        );
    }
}
