//! Opening a graph file with its change log: binding the log to the file, retrying across a
//! concurrent compaction, refreshing a snapshot to the newest commit.

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::graph::csr::base_identity;
use crate::graph::csr::Graph;
use crate::graph::format::IdKind;
use crate::graph::log_format::{best_slot, LogHeader, Slot, DATA_START, TRAILER_LEN};

use crate::graph::overlay::*;
use crate::graph::replace::*;

// ------------------------------------------------------------------------------ opening

/// How many times `open` retries when the graph file and its log were replaced between the
/// two opens (a concurrent compaction); more than that is a real mismatch.
pub(crate) const OPEN_RETRIES: usize = 8;

/// Opens a graph file and, if it has one, its change log (see [`Graph::open`]).
pub(crate) fn open(path: &Path, prefetch: bool) -> Result<Graph> {
    let lp = log_path(path);
    #[cfg(unix)]
    if prefetch {
        hint_small_log(&lp);
    }
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
            Some(g) => return Ok(g),
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

/// Starts reading a small log (at most `WHOLE_LOG_HINT` bytes, which `attach` asks for whole)
/// before the graph file's header is read: a cold open then waits for the two reads
/// together instead of one after the other. Only a hint; `attach` opens the log again.
#[cfg(unix)]
fn hint_small_log(lp: &Path) {
    use std::os::fd::AsRawFd;
    let Ok(f) = File::open(lp) else {
        return;
    };
    if f.metadata().is_ok_and(|m| m.len() <= WHOLE_LOG_HINT) {
        // SAFETY: a valid descriptor; the call only starts an asynchronous read.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
    }
}

/// The newest commit of the log of `prev`'s graph, for the writer that holds its lock (so
/// neither file can be replaced meanwhile): `prev`'s map of the base file is reused.
pub(crate) fn reopen(prev: &Graph, path: &Path) -> Result<Graph> {
    let (Some(g), Some(state)) = (prev.base_snapshot(), prev.log_state()) else {
        return open(path, prev.prefetch());
    };
    let lp = log_path(path);
    let file = File::open(&lp).map_err(|e| Error::io(&lp, e))?;
    match attach(g, &file, &lp, state.base_ident)? {
        Some(g) => Ok(g),
        None => open(path, prev.prefetch()),
    }
}

/// Reads the log's header and superblocks and maps it. None when the log belongs to another
/// base file (the caller retries: a compaction may have replaced both files in between).
pub(crate) fn attach(
    mut g: Graph,
    file: &File,
    lp: &Path,
    base_ident: FileIdent,
) -> Result<Option<Graph>> {
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
    {
        let _ = map.advise(memmap2::Advice::Random);
        // A small log is read whole for a cold query (see `Overlay::hint_at_open`): asked for
        // now, the header, trailer and index reads below wait for that one read instead of
        // faulting their pages in one after another.
        if g.prefetch() && len <= WHOLE_LOG_HINT {
            let _ = map.advise(memmap2::Advice::WillNeed);
        }
    }
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
    let ov = Overlay::new(
        Bytes::Map(map),
        header,
        slot,
        g.base_num_nodes() as u32,
        g.id_kind(),
    )
    .map_err(fmt)?;
    install(&mut g, ov, state);
    Ok(Some(g))
}

/// Attaches a commit's overlay to its base graph.
pub(crate) fn install(g: &mut Graph, ov: Overlay, mut state: LogState) {
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
    // A small index on a graph of at most 1 M nodes is built in memory now: O(n +
    // entries) bytes, less than the searches of the first query would cost.
    let eager = ov.index_entries() <= EAGER_INDEX_ENTRIES && t.num_nodes <= 1 << 20;
    // The first query of a reader opened with `prefetch` loads the index file that serves this
    // commit (it then reads no level's bitmap or fence, only the entries of levels newer than
    // the file), else reads the levels.
    #[cfg(unix)]
    if g.prefetch() {
        let from_file = !eager
            && ov.takes_index_file()
            && g.path().is_some_and(|p| {
                // (and for the levels written since the file's commit, which it reads whole)
                crate::graph::index_file::will_need(p, |c| match ov.index_file_levels(c) {
                    Some((_, kept)) => {
                        ov.will_need_levels_above(kept);
                        true
                    }
                    None => false,
                })
            });
        if !from_file {
            ov.hint_at_open();
        }
    }
    if eager {
        ov.build_changed();
    }
    g.set_log(changes.then(|| Box::new(ov)), state);
}

pub(crate) fn read_slot(file: &File, lp: &Path) -> Result<Slot> {
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
    let ov = Overlay::new(
        Bytes::Owned(words, log.len()),
        header,
        slot,
        g.base_num_nodes() as u32,
        g.id_kind(),
    )?;
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

impl Graph {
    /// Memory-maps a graph file and, when there is one, its change log (`PATH.live`, see
    /// docs/LIVE.md). Cost O(1) in the graph and log sizes: only the headers and the newest commit
    /// record are read and checked.
    pub fn open(path: impl AsRef<Path>) -> Result<Graph> {
        open(path.as_ref(), false)
    }
}
