//! Replacing a graph file whose path may have a change log: the writers' lock of a path and
//! the atomic replacement that marks the old log superseded before the new file is renamed
//! into place (docs/FORMAT.md, "Compaction"). Every writer of a graph path goes through it.

use std::fs;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::graph::csr::base_identity;
use crate::graph::csr::Graph;
use crate::graph::log_format::{best_slot, rd_u64, LogHeader, Slot, DATA_START, SLOT_OFFSETS};

use crate::graph::overlay::*;

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
pub(crate) fn dir_and_name(path: &Path) -> (PathBuf, String) {
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
        remove_leftovers(&dir, &name, true);
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
        // The old log's index file (readers would ignore it: it names the old log's commit).
        let _ = std::fs::remove_file(crate::graph::index_file::index_path(&self.target));
        sync_dir(&self.target);
        Ok(())
    }
}

pub(crate) fn sync_dir(path: &Path) {
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

pub(crate) fn write_at(file: &File, bytes: &[u8], off: u64) -> std::io::Result<()> {
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

pub(crate) fn read_at(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
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

/// Tag naming this process in temporary file names: `{pid}@{host hash}`. A leftover whose tag
/// names this host and a process that no longer runs was abandoned by a killed writer
/// (SIGKILL, OOM killer, power loss) and is removed by [`remove_stale`].
pub(crate) fn owner_tag() -> String {
    format!("{}@{:08x}", std::process::id(), host_hash())
}

fn host_hash() -> u32 {
    static HOST: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *HOST.get_or_init(|| {
        let host = fs::read("/proc/sys/kernel/hostname").unwrap_or_default();
        xxhash_rust::xxh3::xxh3_64(&host) as u32
    })
}

/// Removes leftovers of killed writers of `name` in `dir`: entries `.{name}.tmp-{tag}-*`,
/// `.{name}.build-{tag}-*`, `..{name}.tmp-{tag}-*`, `.{name}.live.tmp-{tag}-*` and
/// `.{name}.live.index.tmp-{tag}-*` whose tag
/// names this host and a dead process. Only on Linux (a
/// missing `/proc/{pid}` proves the process is gone); never touches other hosts' files on a
/// shared filesystem. Errors are ignored: cleanup must not fail a build.
pub(crate) fn remove_stale(dir: &Path, name: &str) {
    remove_leftovers(dir, name, false)
}

/// [`remove_stale`], or with `any_pid` every such entry of this host whatever its process:
/// for a caller holding the path's writers' lock ([`lock`]), which every writer of that
/// path takes, so no other process is writing them (a dead writer's process id may have been
/// reused by another process since).
pub(crate) fn remove_leftovers(dir: &Path, name: &str, any_pid: bool) {
    if !cfg!(target_os = "linux") || !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let host = format!("@{:08x}-", host_hash());
    // Also the temporary files of a writer's own temporary files (compaction's new file and
    // log) and of its change log.
    let prefixes = [
        format!(".{name}.tmp-"),
        format!(".{name}.build-"),
        format!("..{name}.tmp-"),
        format!(".{name}.live.tmp-"),
        format!(".{name}.live.index.tmp-"),
    ];
    for e in entries.flatten() {
        let file_name = e.file_name();
        let Some(f) = file_name.to_str() else {
            continue;
        };
        let Some(rest) = prefixes.iter().find_map(|p| f.strip_prefix(p.as_str())) else {
            continue;
        };
        let Some(at) = rest.find(&host) else {
            continue;
        };
        let Ok(pid) = rest[..at].parse::<u32>() else {
            continue;
        };
        if !any_pid && (pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()) {
            continue;
        }
        let path = e.path();
        let _ = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
}
