//! The index file of a change log, `GRAPH.live.index` (docs/FORMAT.md, "Index file"): for one
//! commit, which nodes have a record, and each one's level and neighbour code, so that a
//! reader just opened gets the lookups of the index in memory without building it from the
//! levels. A cache: written by a writer once its commits grew the log by the file's size
//! (`crate::live`), read by `Overlay::index_from_file`, which uses it for the commit it names
//! or a later one that kept its oldest levels, when its checksums hold; never needed for a
//! correct result. This module is its format only.
//!
//! Layout (little-endian): a 64-byte header (magic, version, the log's base-file checksum, the
//! commit's trailer offset and trailer checksum, nodes, changed nodes, the header's checksum),
//! then the membership bitmap (a u64 per 64 nodes), a level mark per changed node, a code per
//! changed node (both in node order), zero padding to 8 bytes, and the XXH3-64 of those.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::graph::format::checksum;
use crate::graph::log_format::pad8;

const MAGIC: [u8; 8] = *b"IELOGIDX";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 64;

/// The index file of the graph file `base`: `base` with `.live.index` appended.
pub fn index_path(base: &Path) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(".live.index");
    PathBuf::from(s)
}

/// Which commit an index file describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Commit {
    /// The log's `base_checksum` (its header's).
    pub base_checksum: u64,
    /// The commit's trailer offset and the trailer's checksum (its slot's).
    pub trailer: u64,
    pub trailer_checksum: u64,
    /// Its node count.
    pub n: u64,
}

/// What an index file holds: the membership bitmap (64 nodes a word) and each member's level
/// mark and code, in node order.
pub struct Parts {
    pub bits: Vec<u64>,
    pub marks: Vec<u8>,
    pub codes: Vec<u8>,
}

/// The header of an index file of `commit` with `changed` changed nodes.
fn header(commit: &Commit, changed: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    for (at, v) in [
        (16, commit.base_checksum),
        (24, commit.trailer),
        (32, commit.trailer_checksum),
        (40, commit.n),
        (48, changed),
    ] {
        h[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    let c = checksum(&h[..56]);
    h[56..].copy_from_slice(&c.to_le_bytes());
    h
}

/// The bytes after the header for `changed` changed nodes of `n`, checksum included.
fn body_len(n: u64, changed: u64) -> u64 {
    8 * n.div_ceil(64) + pad8(2 * changed) + 8
}

/// The size of the index file of a commit of `n` nodes, `changed` of them changed.
pub fn file_len(n: u64, changed: u64) -> u64 {
    HEADER_LEN as u64 + body_len(n, changed)
}

/// The bytes of the index file of `commit` with these parts.
pub fn encode(commit: &Commit, parts: &Parts) -> Vec<u8> {
    let changed = parts.marks.len() as u64;
    let mut bytes = Vec::with_capacity(file_len(commit.n, changed) as usize);
    bytes.extend_from_slice(&header(commit, changed));
    for w in &parts.bits {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    bytes.extend_from_slice(&parts.marks);
    bytes.extend_from_slice(&parts.codes);
    bytes.resize(pad8(bytes.len() as u64) as usize, 0);
    let c = checksum(&bytes[HEADER_LEN..]);
    bytes.extend_from_slice(&c.to_le_bytes());
    bytes
}

/// The index file of `base` opened after its header, when the header is one of this version
/// (magic, version and checksum hold): the commit it names and its count of changed nodes.
fn open_header(base: &Path) -> Option<(std::fs::File, Commit, u64)> {
    let mut file = std::fs::File::open(index_path(base)).ok()?;
    let mut head = [0u8; HEADER_LEN];
    file.read_exact(&mut head).ok()?;
    let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap());
    let commit = Commit {
        base_checksum: word(16),
        trailer: word(24),
        trailer_checksum: word(32),
        n: word(40),
    };
    let changed = word(48);
    (head == header(&commit, changed)).then_some((file, commit, changed))
}

/// The commit the index file of `base` names, when it has a valid header.
pub fn named_commit(base: &Path) -> Option<Commit> {
    open_header(base).map(|(_, commit, _)| commit)
}

/// Asks the system to read the index file of `base` ahead, when `wanted` accepts the commit
/// it names (returns whether it does): for a reader opened with `prefetch`, whose first query
/// loads it whole.
#[cfg(unix)]
pub fn will_need(base: &Path, wanted: impl FnOnce(&Commit) -> bool) -> bool {
    match open_header(base) {
        Some((file, commit, _)) if wanted(&commit) => {
            advise_whole(&file);
            true
        }
        _ => false,
    }
}

#[cfg(unix)]
fn advise_whole(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor; the call only starts an asynchronous read.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
}

/// The commit the index file of `base` names and its parts, when `levels_of` accepts that
/// commit (giving its number of levels) and every check holds (the length, both checksums,
/// zero padding, no bit past `n`, a mark per bit, every mark in `1..=levels`), else None.
pub fn read(
    base: &Path,
    levels_of: impl FnOnce(&Commit) -> Option<usize>,
) -> Option<(Commit, Parts)> {
    let (mut file, commit, changed) = open_header(base)?;
    let levels = levels_of(&commit)?;
    let n = commit.n;
    if file.metadata().ok()?.len() != file_len(n, changed) || changed > n {
        return None;
    }
    // Asked for whole: a cold file then comes in large reads.
    #[cfg(unix)]
    advise_whole(&file);
    // Each part read into its own memory (no copies), the checksum taken as it comes.
    let nwords = n.div_ceil(64) as usize;
    let changed = changed as usize;
    let mut bits = vec![0u64; nwords];
    let (mut marks, mut codes) = (vec![0u8; changed], vec![0u8; changed]);
    let mut padding = vec![0u8; pad8(2 * changed as u64) as usize - 2 * changed];
    let mut sum = [0u8; 8];
    let mut hash = xxhash_rust::xxh3::Xxh3::new();
    // SAFETY: viewing the u64 buffer as its bytes.
    let bit_bytes =
        unsafe { std::slice::from_raw_parts_mut(bits.as_mut_ptr().cast::<u8>(), 8 * nwords) };
    for part in [bit_bytes, &mut marks[..], &mut codes[..], &mut padding[..]] {
        file.read_exact(part).ok()?;
        hash.update(part);
    }
    file.read_exact(&mut sum).ok()?;
    if hash.digest() != u64::from_le_bytes(sum) {
        return None;
    }
    if padding.iter().any(|&b| b != 0) || marks.iter().any(|&k| k == 0 || usize::from(k) > levels) {
        return None;
    }
    for w in &mut bits {
        *w = u64::from_le(*w);
    }
    let tail = n % 64;
    let past_n = tail != 0 && bits.last().is_some_and(|&x| x >> tail != 0);
    let members: usize = bits.iter().map(|x| x.count_ones() as usize).sum();
    (!past_n && members == changed).then_some((commit, Parts { bits, marks, codes }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::ppr::{ppr, PprConfig};
    use crate::graph::build::{build_in_memory, csr_from_edges, save, IdTable, Merge};
    use crate::graph::csr::Graph;
    use crate::live::{Ids, LiveWriter};

    /// A graph of `n` nodes with random edges (weighted when asked) and a log of 4 commits of
    /// random additions and removals (several hundred rows each, so 4 levels), its writer
    /// closed. Returns the path.
    fn live_graph(dir: &Path, weighted: bool, seed: u64) -> PathBuf {
        // The edges are among the first `n` nodes; the others (isolated) make the file large
        // enough for the push to read its neighbour codes (NBR_CODES_MIN_INDPTR_PAGES).
        let (n, all) = (3000usize, 40_000);
        let mut k = seed;
        let mut next = move || {
            k += 1;
            crate::hashing::splitmix64(k)
        };
        let (src, dst): (Vec<u32>, Vec<u32>) = (0..12_000)
            .map(|_| ((next() % n as u64) as u32, (next() % n as u64) as u32))
            .unzip();
        let w: Vec<f32> = src.iter().map(|_| 1.0 + (next() % 5) as f32).collect();
        let parts = csr_from_edges(
            all,
            &src,
            &dst,
            weighted.then_some(&w[..]),
            false,
            Merge::Sum,
            IdTable::Implicit,
        )
        .unwrap();
        let path = dir.join(format!("g{weighted}{seed}.graph"));
        save(&build_in_memory(&parts).unwrap(), &path).unwrap();
        let mut writer = LiveWriter::open(&path, None, false).unwrap();
        for commit in 0..4u64 {
            let count = 700 - 150 * commit as usize;
            let a: Vec<i64> = (0..count).map(|_| (next() % n as u64) as i64).collect();
            // Some edges to created nodes.
            let b: Vec<i64> = (0..count)
                .map(|_| (next() % (n as u64 + 20)) as i64)
                .collect();
            let ws: Vec<f32> = a.iter().map(|_| 0.5 + (next() % 4) as f32).collect();
            writer
                .add_edges(&Ids::Int(a), &Ids::Int(b), weighted.then_some(&ws[..]))
                .unwrap();
            let i: Vec<usize> = (0..count / 2)
                .map(|_| (next() % src.len() as u64) as usize)
                .collect();
            let ra = i.iter().map(|&i| i64::from(src[i])).collect();
            let rb = i.iter().map(|&i| i64::from(dst[i])).collect();
            writer.remove_edges(&Ids::Int(ra), &Ids::Int(rb)).unwrap();
            assert!(writer.commit().unwrap());
        }
        assert!(writer.snapshot().overlay().unwrap().takes_index_file());
        writer.close();
        path
    }

    fn loaded(g: &Graph) -> bool {
        g.overlay()
            .unwrap()
            .changed_file
            .get()
            .is_some_and(|c| !c.is_empty())
    }

    /// A reader loads the index file its writer left for the commit it opened, before its
    /// first push, and finds every node's entry and code as the index built from the levels
    /// does; its pushes give exactly the PPR of a reader that searches the levels and of
    /// the compacted copy.
    #[test]
    fn a_reader_loads_its_commits_index_file_and_reads_as_from_the_levels() {
        let dir = tempfile::tempdir().unwrap();
        for weighted in [false, true] {
            let path = live_graph(dir.path(), weighted, 11);
            assert!(index_path(&path).exists());
            let g = Graph::open(&path).unwrap().with_index_not_built();
            g.prepare_lookups();
            assert!(loaded(&g), "weighted {weighted}");
            assert!(g.push_reads_nbr_codes());
            // No level filter was built: the loaded index answers its lookups, and is not
            // replaced by one built from the levels after enough work.
            assert!(g.overlay().unwrap().level_map().is_none());
            g.note_work(u64::from(u32::MAX));
            g.note_work(1);
            assert!(g.overlay().unwrap().changed.get().is_none());
            let built = Graph::open(&path).unwrap();
            let (o, b) = (g.overlay().unwrap(), built.overlay().unwrap());
            let bi = b.changed.get().unwrap();
            let fi = o.changed_in_memory().unwrap();
            assert!(fi.entries.is_empty() && !bi.entries.is_empty());
            assert_eq!(fi.codes.len(), bi.codes.len());
            assert_eq!(fi.codes.len() as u64, o.trailer.changed);
            for v in 0..g.num_nodes() as u32 {
                assert_eq!(fi.contains(v), bi.contains(v), "{v}");
                assert_eq!(fi.code(v), bi.code(v), "{v}");
                for row_code in [0, 200] {
                    assert_eq!(fi.code_or(v, row_code), bi.code_or(v, row_code));
                }
                let (x, y) = (o.leaf(v).unwrap(), b.leaf(v).unwrap());
                assert_eq!((x.0, x.1.to_bits()), (y.0, y.1.to_bits()), "{v}");
            }
            let levels = Graph::open(&path).unwrap().with_index_on_disk();
            let copy = dir.path().join(format!("copy{weighted}.graph"));
            crate::live::save(&g, &copy).unwrap();
            let compacted = Graph::open(&copy).unwrap();
            for eps in [1e-3, 1e-4] {
                let cfg = PprConfig {
                    eps,
                    ..PprConfig::default()
                };
                for seed in (0..3000).step_by(23).chain(40_000..g.num_nodes() as u32) {
                    let want = ppr(&compacted, seed, &cfg).unwrap();
                    let bits = |p: Vec<(u32, f64)>| -> Vec<(u32, u64)> {
                        p.into_iter().map(|(v, x)| (v, x.to_bits())).collect()
                    };
                    let want = bits(want);
                    assert_eq!(bits(ppr(&g, seed, &cfg).unwrap()), want, "{seed}");
                    assert_eq!(bits(ppr(&levels, seed, &cfg).unwrap()), want, "{seed}");
                }
            }
            assert!(loaded(&g) && levels.overlay().unwrap().changed_file.get().is_none());
            assert!(std::ptr::eq(
                g.changed_in_memory().unwrap(),
                g.overlay().unwrap().changed_file.get().unwrap()
            ));
        }
    }

    /// A file that does not describe the reader's commit exactly is not used: another
    /// commit's, a flipped byte anywhere, a truncated one. The reader then builds the level
    /// filter, as without the file.
    #[test]
    fn an_index_file_of_another_commit_or_damaged_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = live_graph(dir.path(), false, 5);
        let ip = index_path(&path);
        let good = std::fs::read(&ip).unwrap();
        let fresh = || {
            let g = Graph::open(&path).unwrap().with_index_not_built();
            g.prepare_lookups();
            g
        };
        assert!(loaded(&fresh()));
        let n = good.len();
        for at in [0, 9, 20, 30, 40, 50, 60, 64, 64 + 8, n - 20, n - 9, n - 1] {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            std::fs::write(&ip, &bad).unwrap();
            let g = fresh();
            assert!(!loaded(&g), "byte {at}");
            assert!(g.overlay().unwrap().level_map().is_some());
        }
        // Checksums that hold over a mark naming no level (a writer's bug, not damage).
        let nodes = Graph::open(&path).unwrap().num_nodes() as u64;
        let first_mark = HEADER_LEN + 8 * nodes.div_ceil(64) as usize;
        for mark in [0, 200] {
            let mut bad = good.clone();
            bad[first_mark] = mark;
            let c = checksum(&bad[HEADER_LEN..n - 8]);
            bad[n - 8..].copy_from_slice(&c.to_le_bytes());
            std::fs::write(&ip, &bad).unwrap();
            assert!(!loaded(&fresh()), "mark {mark}");
        }
        // Nor over a bitmap with one member more than marks (the first word's lowest unset
        // bit set).
        let mut bad = good.clone();
        let w = u64::from_le_bytes(bad[HEADER_LEN..HEADER_LEN + 8].try_into().unwrap());
        bad[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&(w | (w + 1)).to_le_bytes());
        let c = checksum(&bad[HEADER_LEN..n - 8]);
        bad[n - 8..].copy_from_slice(&c.to_le_bytes());
        std::fs::write(&ip, &bad).unwrap();
        assert!(read(&path, |_| Some(64)).is_none());
        assert!(!loaded(&fresh()));
        // A wrong code under checksums that hold is used (a writer's bug): validate finds it.
        let changed = u64::from_le_bytes(good[48..56].try_into().unwrap()) as usize;
        let mut bad = good.clone();
        bad[first_mark + 2 * changed - 1] ^= 1;
        let c = checksum(&bad[HEADER_LEN..n - 8]);
        bad[n - 8..].copy_from_slice(&c.to_le_bytes());
        std::fs::write(&ip, &bad).unwrap();
        assert!(loaded(&fresh()));
        let e = Graph::open(&path)
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("index file"), "{e}");
        std::fs::write(&ip, &good).unwrap();
        Graph::open(&path).unwrap().validate().unwrap();
        std::fs::write(&ip, &good[..n - 8]).unwrap();
        assert!(!loaded(&fresh()));
        std::fs::write(&ip, &good).unwrap();
        assert!(loaded(&fresh()));
        // A newer commit by a writer that did not close: the file names the older one, whose
        // oldest levels the new commit kept, so a reader uses it with the newer levels.
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        w.add_edges(&Ids::Int(vec![1, 2, 3]), &Ids::Int(vec![4, 5, 6]), None)
            .unwrap();
        w.commit().unwrap();
        drop(w);
        assert_eq!(std::fs::read(&ip).unwrap(), good);
        reads_as_built(&path, true);
        // A writer whose commits appended less than the file's size leaves it as it is.
        for edges in [0, 1] {
            let mut w = LiveWriter::open(&path, None, false).unwrap();
            if edges > 0 {
                w.add_edges(&Ids::Int(vec![7]), &Ids::Int(vec![8]), None)
                    .unwrap();
                w.commit().unwrap();
            }
            w.close();
            assert_eq!(std::fs::read(&ip).unwrap(), good, "{edges} edges");
            reads_as_built(&path, true);
        }
        // One that closes after commits that appended a quarter of its size (and less than
        // its size: none of them wrote it) writes the file of its last commit, for the readers
        // after it.
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        let len = crate::live::writer::index_file_len(&w.snapshot()).unwrap();
        let mut k = 0i64;
        while w.since_index() < len / 4 {
            let a: Vec<i64> = (0..20).map(|i| (k * 20 + i) * 37 % 3000).collect();
            let b: Vec<i64> = (0..20).map(|i| (k * 20 + i) * 91 % 3000).collect();
            w.add_edges(&Ids::Int(a), &Ids::Int(b), None).unwrap();
            w.commit().unwrap();
            k += 1;
        }
        assert!(w.since_index() < len);
        assert_eq!(std::fs::read(&ip).unwrap(), good);
        let last = w.snapshot().overlay().unwrap().index_commit();
        w.close();
        assert_eq!(open_header(&path).unwrap().1, last);
        // One whose commits appended more writes the file of its last commit.
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        let a: Vec<i64> = (0..2000).map(|i| (i * 7919) % 3000).collect();
        let b: Vec<i64> = (0..2000).map(|i| (i * 104_729 + 1) % 3000).collect();
        w.add_edges(&Ids::Int(a), &Ids::Int(b), None).unwrap();
        w.commit().unwrap();
        let len = crate::live::writer::index_file_len(&w.snapshot()).unwrap();
        w.close();
        assert_eq!(std::fs::metadata(&ip).unwrap().len(), len);
        let commit = Graph::open(&path)
            .unwrap()
            .overlay()
            .unwrap()
            .index_commit();
        assert_eq!(open_header(&path).unwrap().1, commit);
        assert!(loaded(&fresh()));
    }

    /// Whether a reader of `path` just opened loads an index (`loaded`, as expected), and
    /// that it then reads every node as the index built from the levels does.
    fn reads_as_built(path: &Path, expect_loaded: bool) {
        let g = Graph::open(path).unwrap().with_index_not_built();
        g.prepare_lookups();
        assert_eq!(loaded(&g), expect_loaded);
        if !expect_loaded {
            return;
        }
        let built = Graph::open(path).unwrap();
        let (o, b) = (g.overlay().unwrap(), built.overlay().unwrap());
        let (fi, bi) = (o.changed_in_memory().unwrap(), b.changed.get().unwrap());
        assert_eq!(fi.codes.len() as u64, o.trailer.changed);
        for v in 0..g.num_nodes() as u32 {
            assert_eq!(fi.contains(v), bi.contains(v), "{v}");
            assert_eq!(fi.code(v), bi.code(v), "{v}");
            let (x, y) = (o.leaf(v).unwrap(), b.leaf(v).unwrap());
            assert_eq!((x.0, x.1.to_bits()), (y.0, y.1.to_bits()), "{v}");
        }
    }

    /// A writer that stays open writes the index file once its commits since the last one
    /// appended the file's size, unless the file serves the commit with a few newer entries,
    /// and readers opened on the commits between use the last
    /// file with the levels written since (merged or not) and read every node as the index
    /// built from the levels does, their PPR bit-identical to a reader that searches the
    /// levels; a file of a commit whose levels were all merged since is not used.
    #[test]
    fn readers_use_an_earlier_commits_index_file_with_the_newer_levels() {
        let dir = tempfile::tempdir().unwrap();
        for weighted in [false, true] {
            let path = live_graph(dir.path(), weighted, 21);
            let ip = index_path(&path);
            let mut w = LiveWriter::open(&path, None, false).unwrap();
            let mut k = 99u64;
            let mut next = move || {
                k += 1;
                crate::hashing::splitmix64(k)
            };
            let (mut earlier, mut rewritten, mut kept_serving) = (0, 0, 0);
            let mut last = std::fs::read(&ip).unwrap();
            for commit in 0..40 {
                // Mostly small commits, some large: the writer merges levels by tiers.
                let count = if commit % 9 == 8 {
                    1500
                } else {
                    1 + next() % 60
                } as usize;
                let a: Vec<i64> = (0..count).map(|_| (next() % 3030) as i64).collect();
                let b: Vec<i64> = (0..count).map(|_| (next() % 3000) as i64).collect();
                let ws: Vec<f32> = a.iter().map(|_| 0.25 + (next() % 7) as f32).collect();
                w.add_edges(
                    &Ids::Int(a.clone()),
                    &Ids::Int(b.clone()),
                    weighted.then_some(&ws[..]),
                )
                .unwrap();
                w.remove_edges(
                    &Ids::Int(b[..count / 3].to_vec()),
                    &Ids::Int(a[..count / 3].to_vec()),
                )
                .unwrap();
                assert!(w.commit().unwrap());
                let now = std::fs::read(&ip).unwrap();
                let snap = w.snapshot();
                let ov = snap.overlay().unwrap();
                if now != last {
                    rewritten += 1;
                    assert_eq!(w.since_index(), 0);
                } else {
                    // Not rewritten: the commits since the last file appended less than its
                    // size, or it serves this commit with newer entries of less than half.
                    let len = crate::live::writer::index_file_len(&snap).unwrap();
                    let newer = ov.newer_than_index_file(&path);
                    let serves = newer.is_some_and(|b| 2 * b < len);
                    assert!(w.since_index() < len || serves, "commit {commit}");
                    kept_serving += usize::from(w.since_index() >= len);
                }
                last = now;
                let c = open_header(&path).unwrap().1;
                let serves = ov.index_file_levels(&c);
                earlier += usize::from(c != ov.index_commit() && serves.is_some());
                reads_as_built(&path, serves.is_some());
                // A query on the writer's own snapshot builds the level filter (which the
                // next commit carries) or uses the index in memory, rather than loading the
                // file at each commit.
                // A writer's snapshot (one with a filter spare) whose index is not in memory
                // builds the level filter, which the next commit carries, rather than load
                // the file at each commit. (This graph's are in memory: it is small.)
                let mut own = Graph::open(&path).unwrap().with_index_not_built();
                own.give_filter_to(&std::sync::Arc::new(Default::default()));
                own.prepare_lookups();
                let o = own.overlay().unwrap();
                assert!(o.changed_file.get().is_none());
                assert_eq!(
                    o.level_map().is_some(),
                    o.levels.len() >= 3,
                    "commit {commit}"
                );
            }
            assert!(
                earlier > 5 && rewritten > 1 && kept_serving > 0,
                "{earlier} {rewritten} {kept_serving}"
            );
            // Another graph's file (another base file) serves none of this log's commits.
            let before = std::fs::read(&ip).unwrap();
            let first = live_graph(dir.path(), weighted, 22);
            std::fs::copy(index_path(&first), &ip).unwrap();
            reads_as_built(&path, false);
            // PPR through an earlier commit's file (the one before this commit, put back if
            // the commit wrote another), against the levels and the compacted copy.
            let a: Vec<i64> = (0..40).map(|_| (next() % 3000) as i64).collect();
            let b: Vec<i64> = (0..40).map(|_| (next() % 3000) as i64).collect();
            let ws: Vec<f32> = a.iter().map(|_| 2.0).collect();
            w.add_edges(&Ids::Int(a), &Ids::Int(b), weighted.then_some(&ws[..]))
                .unwrap();
            w.commit().unwrap();
            drop(w);
            std::fs::write(&ip, &before).unwrap();
            let g = Graph::open(&path).unwrap().with_index_not_built();
            g.prepare_lookups();
            assert!(loaded(&g));
            assert_ne!(
                open_header(&path).unwrap().1,
                g.overlay().unwrap().index_commit()
            );
            let levels = Graph::open(&path).unwrap().with_index_on_disk();
            let copy = dir.path().join(format!("later{weighted}.graph"));
            crate::live::save(&g, &copy).unwrap();
            let compacted = Graph::open(&copy).unwrap();
            let cfg = PprConfig {
                eps: 1e-4,
                ..PprConfig::default()
            };
            let bits = |p: Vec<(u32, f64)>| -> Vec<(u32, u64)> {
                p.into_iter().map(|(v, x)| (v, x.to_bits())).collect()
            };
            for seed in (0..3030).step_by(37) {
                let want = bits(ppr(&compacted, seed, &cfg).unwrap());
                assert_eq!(bits(ppr(&g, seed, &cfg).unwrap()), want, "{seed}");
                assert_eq!(bits(ppr(&levels, seed, &cfg).unwrap()), want, "{seed}");
            }
        }
    }

    /// An earlier commit's file that marks a node in a level the reader's commit does not
    /// keep, where none of its newer levels holds the node, is not used (its mark would name
    /// another level).
    #[test]
    fn an_earlier_file_marking_a_node_in_a_merged_level_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = live_graph(dir.path(), false, 31);
        let g = Graph::open(&path).unwrap();
        let ov = g.overlay().unwrap();
        let (_, parts) = read(&path, |c| ov.index_file_levels(c).map(|x| x.0)).unwrap();
        let levels = ov.levels.len();
        let n = ov.n as u64;
        // Brought through the newest level, the file's own parts read as they are.
        let kept = levels - 1;
        let same = ov
            .index_updated(
                Parts {
                    bits: parts.bits.clone(),
                    marks: parts.marks.clone(),
                    codes: parts.codes.clone(),
                },
                n,
                kept,
            )
            .unwrap();
        assert_eq!(
            (&same.bits, &same.marks, &same.codes),
            (&parts.bits, &parts.marks, &parts.codes)
        );
        // One node of an older level marked in the newest: no entry there replaces it.
        let r = parts
            .marks
            .iter()
            .position(|&m| usize::from(m) <= kept)
            .unwrap();
        let mut marks = parts.marks.clone();
        marks[r] = levels as u8;
        let bad = Parts {
            bits: parts.bits.clone(),
            marks,
            codes: parts.codes.clone(),
        };
        assert!(ov.index_updated(bad, n, kept).is_none());
    }

    /// Compaction and a write of the path (`save` over it) remove the index file with the
    /// log it describes.
    #[test]
    fn compaction_and_replacing_the_file_remove_the_index_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = live_graph(dir.path(), false, 7);
        let ip = index_path(&path);
        assert!(ip.exists());
        let mut w = LiveWriter::open(&path, None, false).unwrap();
        w.compact(1).unwrap();
        assert!(!ip.exists());
        w.close();
        assert!(!ip.exists());
        let path = live_graph(dir.path(), true, 8);
        assert!(index_path(&path).exists());
        let g = Graph::open(&path).unwrap();
        let copy = dir.path().join("copy.graph");
        crate::live::save(&g, &copy).unwrap();
        let plain = Graph::open(&copy).unwrap();
        save(&plain, &path).unwrap();
        assert!(!index_path(&path).exists());
        assert!(!crate::graph::overlay::log_path(&path).exists());
    }
}
