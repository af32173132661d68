//! Verified copies of a graph file (and of its change log at one commit) in a cache directory
//! shared by processes: what the engines' workers read a remote graph from. An entry is named
//! by its content key, made once (under an exclusive lock) in a private directory, checked
//! completely and renamed into place, so a name that exists is always a whole, valid copy.

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The content key of a graph file, from its header (which holds every section's checksum
/// and its own) and, for a copy with its change log, the log's head (its newest commit):
/// 32 hex digits. A header the kernel does not accept is a format error naming `name`.
pub fn content_key(header: &[u8], log_head: Option<&[u8]>, name: &str) -> Result<String> {
    crate::graph::format::declared_len(header)
        .map_err(|e| Error::format(format!("{name}: {e}")))?;
    let mut bytes = header.to_vec();
    bytes.extend_from_slice(log_head.unwrap_or_default());
    Ok(format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes)))
}

/// Waits for the exclusive `flock` of `path` (created if missing), held until the file closes.
/// Elsewhere than Unix there is no lock: two processes may then both make the copy.
fn lock(path: &Path) -> Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a valid descriptor we own; closing it releases the lock.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Error::io(path, std::io::Error::last_os_error()));
        }
    }
    Ok(f)
}

/// The cache entry in `dir` of the graph whose file begins with `header` (with its change log
/// at the commit `log_head` names, if given): made by `fill`, which writes the graph file to
/// the path it gets (and the log beside it, `PATH.live`), unless the entry exists. The copy
/// must begin with `header` (else the source changed while it was read) and pass every check
/// of `validate` before it is renamed into place, the log first. `what` names the source in
/// errors.
pub fn cached_copy(
    dir: &Path,
    header: &[u8],
    log_head: Option<&[u8]>,
    what: &str,
    fill: &mut dyn FnMut(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let key = content_key(header, log_head, what)?;
    let entry = dir.join(format!("{key}.graph"));
    let live = crate::live::log_path(&entry);
    let done = || entry.exists() && (log_head.is_none() || live.exists());
    if done() {
        return Ok(entry);
    }
    let _lock = lock(&dir.join(format!("{key}.graph.lock")))?;
    if done() {
        return Ok(entry); // copied by another process meanwhile
    }
    let work = tempfile::Builder::new()
        .prefix(&format!(".{key}.graph.tmp-{}-", std::process::id()))
        .tempdir_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    let copy = work.path().join("g.graph");
    fill(&copy)?;
    let mut head = vec![0; header.len()];
    let same = File::open(&copy)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| head == header);
    if !same {
        return Err(Error::format(format!(
            "copy of {what} has a different header than the object had before the download \
             (it was replaced during the download; retry)"
        )));
    }
    match crate::live::open::open(&copy, false).and_then(|g| g.validate()) {
        Err(Error::Format(m)) => {
            let source = match log_head {
                Some(_) => format!("{what}.live"),
                None => what.to_string(),
            };
            return Err(Error::format(format!(
                "copy of {source} failed verification: {m}"
            )));
        }
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    if log_head.is_some() {
        // The log's index file, when `fill` left one (a cache: its failure is no error).
        let index = crate::graph::index_file::index_path(&copy);
        if index.exists() {
            let _ = fs::rename(&index, crate::graph::index_file::index_path(&entry));
        }
        let from = crate::live::log_path(&copy);
        fs::rename(&from, &live).map_err(|e| Error::io(&live, e))?;
    }
    fs::rename(&copy, &entry).map_err(|e| Error::io(&entry, e))?;
    Ok(entry)
}

/// Where remote graphs are copied by default: `$INSTANT_EMBEDDING_CACHE_DIR`, else
/// `$XDG_CACHE_HOME` (or `~/.cache`) `/instant-embedding/graphs` when it can be made and
/// written, else `instant-embedding-UID/graphs` in the temporary directory (no writable home).
pub fn default_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("INSTANT_EMBEDDING_CACHE_DIR") {
        return d.into();
    }
    let base = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")));
    if let Some(d) = base.map(|b| b.join("instant-embedding").join("graphs")) {
        // (writable: a file can be made there)
        if fs::create_dir_all(&d).is_ok() && tempfile::tempfile_in(&d).is_ok() {
            return d;
        }
    }
    #[cfg(unix)]
    // SAFETY: getuid has no preconditions and cannot fail.
    let user = unsafe { libc::getuid() };
    #[cfg(not(unix))]
    let user = std::process::id();
    std::env::temp_dir()
        .join(format!("instant-embedding-{user}"))
        .join("graphs")
}

/// How a remote graph is read (by the Python facade, through fsspec): ranged reads of the
/// object `URI + suffix` (None: there is no such object) and whole downloads of it into a
/// local file whose first bytes are then overwritten by `head` (a change log's superblocks as
/// first read: a later commit's bytes lie past them).
pub trait Remote {
    fn read(&mut self, suffix: &str, len: usize) -> Result<Option<Vec<u8>>>;
    fn download(&mut self, suffix: &str, target: &Path, head: &[u8]) -> Result<()>;
}

/// A local copy of the remote graph `uri` in the cache directory `dir` (see [`cached_copy`]),
/// with its change log `URI.live` at its newest commit, if it has one. A compaction may
/// replace the log between two reads: the log is read again, three times at most.
pub fn remote_copy(dir: &Path, uri: &str, remote: &mut dyn Remote) -> Result<PathBuf> {
    let not_found = || {
        let e = std::io::Error::new(std::io::ErrorKind::NotFound, "graph file not found");
        Error::io(uri, e)
    };
    let header = remote
        .read("", crate::graph::format::HEADER_LEN)?
        .ok_or_else(not_found)?;
    content_key(&header, None, uri)?;
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let base = cached_copy(dir, &header, None, uri, &mut |g| {
        remote.download("", g, &[])
    })?;
    let log_len = crate::graph::log_format::DATA_START as usize;
    let mut last = String::new();
    for _ in 0..3 {
        let Some(head) = remote.read(".live", log_len)? else {
            return Ok(base);
        };
        if head.len() < log_len {
            last = format!("{uri}.live: change log is too short ({} bytes)", head.len());
            continue;
        }
        let mut fill = |g: &Path| {
            remote.download(".live", &crate::live::log_path(g), &head)?;
            fs::hard_link(&base, g)
                .or_else(|_| fs::copy(&base, g).map(drop))
                .map_err(|e| Error::io(g, e))?;
            copy_index_file(g, remote);
            Ok(())
        };
        match cached_copy(dir, &header, Some(&head), uri, &mut fill) {
            Err(Error::Format(m)) => last = m,
            r => return r,
        }
    }
    Err(Error::format(format!(
        "{uri}: could not copy the graph with its change log {uri}.live: {last}; copy the \
         graph file and its log together, or compact it first"
    )))
}

/// Downloads the remote log's index file (`URI.live.index`) beside the copy `g` (its graph
/// file and log), and keeps it when it serves the copy's commit (it names that commit or an
/// earlier one it builds on) and equals the index of the copy's levels, so that the copy's
/// readers load it as the source's would. A cache: a failure leaves the copy without one.
fn copy_index_file(g: &Path, remote: &mut dyn Remote) {
    let index = crate::graph::index_file::index_path(g);
    let kept = matches!(remote.read(".live.index", 64), Ok(Some(_)))
        && remote.download(".live.index", &index, &[]).is_ok()
        && crate::live::open::open(g, false).is_ok_and(|c| {
            c.overlay()
                .is_some_and(|o| matches!(o.index_file_agrees(g), Ok(Some(true))))
        });
    if !kept {
        let _ = fs::remove_file(&index);
    }
}

/// The first `n` bytes of the file at `path` (fewer if it is shorter).
fn head(path: &Path, n: usize) -> Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(n);
    File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, n as u64), &mut buf))
        .map_err(|e| Error::io(path, e))?;
    Ok(buf)
}

/// The content key of the graph file at `path` (see [`content_key`]).
pub fn file_key(path: &Path) -> Result<String> {
    let header = head(path, crate::graph::format::HEADER_LEN)?;
    content_key(&header, None, &path.to_string_lossy())
}

/// The file to ship to an engine's workers for the local graph at `path`, and its content
/// key: a hard link `KEY.graph` in `dir` (else the file itself), so a graph rebuilt at the
/// path ships under a new name. A live graph with commits is first folded into one file
/// (`fold-KEY.graph`, named by the graph and its log's newest commit): the graph file alone
/// would drop its changes.
pub fn ship_copy(path: &Path, dir: &Path) -> Result<(PathBuf, String)> {
    if !path.is_file() {
        let e = std::io::Error::new(std::io::ErrorKind::NotFound, "graph file not found");
        return Err(Error::io(path, e));
    }
    let mut file = path.to_path_buf();
    let graph = crate::live::open::open(path, false)?;
    if graph.log_state().is_some_and(|s| s.info.commits > 0) {
        let header = head(path, crate::graph::format::HEADER_LEN)?;
        let log = head(
            &crate::live::log_path(path),
            crate::graph::log_format::DATA_START as usize,
        )?;
        let commit = content_key(&header, Some(&log), &path.to_string_lossy())?;
        file = dir.join(format!("fold-{commit}.graph"));
        if !file.exists() {
            crate::live::save(&graph, &file)?;
        }
    }
    let key = file_key(&file)?;
    let link = dir.join(format!("{key}.graph"));
    if link.exists() || fs::hard_link(&file, &link).is_ok() {
        return Ok((link, key));
    }
    let file = std::path::absolute(&file).map_err(|e| Error::io(&file, e))?;
    Ok((file, key))
}

/// Checks a worker's copy `path` of the file shipped as `name` whose content key is `key` (not
/// checked when empty): engines ship a name only once, so a changed file must be refused.
pub fn check_shipped(path: &Path, key: &str, name: &str) -> Result<()> {
    if !path.exists() {
        let what = format!("graph file '{name}' was shipped but is not on this worker");
        return Err(Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, what),
        ));
    }
    if !key.is_empty() && file_key(path)? != key {
        return Err(Error::format(format!(
            "the workers' copy of '{name}' is stale: the file changed after it was shipped; \
             save the new graph under another name or restart the session"
        )));
    }
    Ok(())
}

/// Removes the cache entries in `dir` (graphs, logs and their index files, locks, and the
/// working directories of copies that were killed); safe on POSIX while another process maps
/// an entry.
pub fn clear(dir: &Path) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let gone = if name.contains(".graph.tmp-") {
            let _ = fs::remove_dir_all(&path); // a killed copy's: whatever is left of it
            Ok(())
        } else if [".graph", ".graph.live", ".graph.live.index", ".lock"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            fs::remove_file(&path)
        } else {
            Ok(())
        };
        match gone {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path, e));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};

    fn graph_file(dir: &Path, name: &str, edges: u32) -> PathBuf {
        let path = dir.join(name);
        let src: Vec<u32> = (0..edges).collect();
        let dst: Vec<u32> = (1..=edges).collect();
        let parts = csr_from_edges(
            edges as usize + 1,
            &src,
            &dst,
            None,
            false,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap();
        save(&build_in_memory(&parts).unwrap(), &path).unwrap();
        path
    }

    /// An entry is made once by `fill`, checked (a changed header or a corrupted copy is
    /// refused and leaves nothing), and found again without `fill`.
    #[test]
    fn cached_copies_are_checked_made_once_and_cleared() {
        let src_dir = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let a = graph_file(src_dir.path(), "a.graph", 5);
        let b = graph_file(src_dir.path(), "b.graph", 6);
        let header = head(&a, crate::graph::format::HEADER_LEN).unwrap();
        let mut fills = 0;
        let from = |src: &Path| {
            let src = src.to_path_buf();
            move |g: &Path| fs::copy(&src, g).map(drop).map_err(|e| Error::io(g, e))
        };
        let entry = cached_copy(cache.path(), &header, None, "a", &mut |g| {
            fills += 1;
            from(&a)(g)
        })
        .unwrap();
        assert_eq!(fs::read(&entry).unwrap(), fs::read(&a).unwrap());
        let again = cached_copy(cache.path(), &header, None, "a", &mut |_| unreachable!());
        assert_eq!((again.unwrap(), fills), (entry.clone(), 1));
        fs::remove_file(&entry).unwrap();
        let swapped = cached_copy(cache.path(), &header, None, "a", &mut from(&b));
        assert!(swapped
            .unwrap_err()
            .to_string()
            .contains("replaced during the download"));
        let mut bytes = fs::read(&a).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        let corrupt = cached_copy(cache.path(), &header, None, "a", &mut |g| {
            fs::write(g, &bytes).map_err(|e| Error::io(g, e))
        });
        assert!(corrupt
            .unwrap_err()
            .to_string()
            .contains("failed verification"));
        let names = || fs::read_dir(cache.path()).unwrap().count();
        assert_eq!(names(), 1); // the lock file only: no entry, no working directory
        check_shipped(&a, &file_key(&a).unwrap(), "a").unwrap();
        let stale = check_shipped(&a, &file_key(&b).unwrap(), "a").unwrap_err();
        assert!(stale.to_string().contains("stale"));
        clear(cache.path()).unwrap();
        assert_eq!(names(), 0);
    }
}
