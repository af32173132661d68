//! The change log of a live graph: the file `GRAPH.live` next to a graph file `GRAPH`, format
//! version 4 (specified in docs/FORMAT.md, "Change log").
//!
//! The file is append-only except for two 64-byte superblock slots near its start. Every commit
//! appends one *segment*: the operations as given (adds and removes by external id, the log
//! proper), a record per node whose row it changed (a delta on the older row, or the whole
//! row), the ids of the nodes it created, a level of the index from node to record, and a
//! checksummed trailer. The commit becomes visible (and durable) when a superblock slot naming its trailer
//! has been written and synced after the segment: a crash before that leaves the previous
//! commit, and bytes past the committed end are ignored (the next commit overwrites them).
//!
//! This module encodes and decodes those structures; `overlay.rs` reads rows through them and
//! the live wing writes commits. [`read_log`] walks the whole log (every segment's checksum
//! and operations): it is what `validate`, `info` and the fuzz target use.

use crate::error::{Error, Result};
use crate::graph::format::checksum;

pub const LOG_MAGIC: [u8; 8] = *b"IELIVE\0\0";
pub const LOG_VERSION: u32 = 4;
/// File header: bytes `0..128`.
pub const LOG_HEADER_LEN: usize = 128;
/// Superblock slots: bytes `128..192` and `192..256`.
pub const SLOT_OFFSETS: [u64; 2] = [128, 192];
pub const SLOT_LEN: usize = 64;
/// First segment.
pub const DATA_START: u64 = 256;
/// A commit's trailer, the end of its segment. It also says where the segment starts and how
/// long its operations are, so a segment has no header of its own (the log is walked from
/// the newest trailer back).
pub const TRAILER_LEN: usize = 104;
/// Index levels: sorted runs from node to record, at most `MAX_LEVELS` of them (the writer
/// merges them by tiers and keeps at most 48: see `live::writer::LEVEL_CAP`).
pub const MAX_LEVELS: u32 = 64;
pub const LEVEL_HEADER_LEN: usize = 16;
/// A level entry: `u32 node`, `u32 degree`, `u64` record word (unweighted graphs); `u32 node`,
/// `u32` 0, `u64` record word, `f64 strength` (weighted). One read gives a lookup all it needs.
pub const fn level_entry_len(weighted: bool) -> u64 {
    if weighted {
        24
    } else {
        16
    }
}
/// A level's fence holds the node of every `fence_stride`-th entry: the first of each 4 KiB
/// of entries, so that a search reads the fence and then one page.
pub const fn fence_stride(weighted: bool) -> u64 {
    4096 / level_entry_len(weighted)
}
/// A level's bitmap is in blocks of one 64-byte cache line: `u64` the level's entries before
/// the block, then 7 words of bits for `BITMAP_BLOCK_NODES` nodes, so a lookup is one line.
pub const BITMAP_BLOCK_LEN: u64 = 64;
pub const BITMAP_BLOCK_NODES: u64 = 7 * 64;
pub const LEVEL_MAGIC: u32 = u32::from_le_bytes(*b"LVL1");
/// A level of at least this many entries carries a bitmap of its nodes (when that is no
/// larger than its entries): a lookup in it is then a bit test and a popcount in one cache
/// line, not a search, so a reader just opened on a large log looks nodes up at once about as
/// fast as one that built its index in memory.
pub const LEVEL_BITMAP_MIN_ENTRIES: u64 = 1024;
pub const RUN_HEADER_LEN: usize = 24;
/// An index entry whose record word has this bit set holds a one-arc delta on the row beneath
/// (the base file's, or empty for a created node) instead of a record's offset: the neighbour
/// in bits 0-31 and in bit 32 whether the arc is set (1) or removed (0); bits 33-62 are 0.
/// Unweighted graphs only (the entry's value, the degree, is then the row's whole state).
/// Most rows that a commit changes get one arc: their record would cost 24 bytes or a whole
/// row, and an extra page for a cold query.
pub const INLINE_DELTA: u64 = 1 << 63;

/// The index entry's record word for a one-arc delta setting (`set`) or removing the arc to `u`.
pub const fn inline_delta(u: u32, set: bool) -> u64 {
    INLINE_DELTA | (set as u64) << 32 | u as u64
}

/// The arc of an inline delta `word` (see [`INLINE_DELTA`]): its neighbour and whether it is
/// set; None when the unused bits are not 0.
pub const fn decode_inline_delta(word: u64) -> Option<(u32, bool)> {
    if (word & !INLINE_DELTA) >> 33 != 0 {
        return None;
    }
    Some((word as u32, word >> 32 & 1 == 1))
}

/// A whole-row record's header: `u32 node`, `u32 degree`, and on weighted graphs `f64
/// strength` (an unweighted row's strength is its degree).
pub const fn row_header_len(weighted: bool) -> u64 {
    if weighted {
        16
    } else {
        8
    }
}

/// A delta record's header: `u32 node`, `u32 count | DELTA_FLAG`, `u64 older`, `u32 degree`,
/// `u32 chain`, and on weighted graphs `f64 strength`; then `u32[count]` neighbours and
/// `f32[count]` values.
pub const fn delta_header_len(weighted: bool) -> u64 {
    if weighted {
        32
    } else {
        24
    }
}
/// Bit 31 of a record's second word: the record is a delta on an older row.
pub const DELTA_FLAG: u32 = 1 << 31;

pub const RUN_MAGIC: u32 = u32::from_le_bytes(*b"RUN1");
pub const DIR_MAGIC: u32 = u32::from_le_bytes(*b"DIR1");
pub const TRAILER_MAGIC: u32 = u32::from_le_bytes(*b"CMT1");

const FLAG_MERGE_MAX: u32 = 1;
const FLAG_STR_IDS: u32 = 1 << 1;
const FLAG_WEIGHTED: u32 = 1 << 2;
const FLAG_DIRECTED: u32 = 1 << 3;
const KNOWN_FLAGS: u32 = FLAG_MERGE_MAX | FLAG_STR_IDS | FLAG_WEIGHTED | FLAG_DIRECTED;
/// Trailer flag: internal order differs from id order (see docs/FORMAT.md, permuted files).
pub const TRAILER_PERMUTED: u32 = 1;

const OP_ADD: u8 = 1;
const OP_ADD_WEIGHTED: u8 = 2;
const OP_REMOVE: u8 = 3;

#[inline]
pub(crate) fn rd_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
#[inline]
pub(crate) fn rd_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn pad8(x: u64) -> u64 {
    x.div_ceil(8) * 8
}

/// The immutable file header: which base file the log belongs to and how it merges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogHeader {
    /// Duplicate weighted edges keep the largest weight (else their weights are added).
    pub merge_max: bool,
    pub str_ids: bool,
    pub weighted: bool,
    pub directed: bool,
    /// The base file's header checksum (its bytes 248..256): identifies its content.
    pub base_checksum: u64,
    pub base_file_len: u64,
    pub base_num_nodes: u64,
}

impl LogHeader {
    pub fn encode(&self) -> [u8; LOG_HEADER_LEN] {
        let mut b = [0u8; LOG_HEADER_LEN];
        b[..8].copy_from_slice(&LOG_MAGIC);
        put_u32(&mut b, 8, LOG_VERSION);
        let mut f = 0;
        for (on, bit) in [
            (self.merge_max, FLAG_MERGE_MAX),
            (self.str_ids, FLAG_STR_IDS),
            (self.weighted, FLAG_WEIGHTED),
            (self.directed, FLAG_DIRECTED),
        ] {
            if on {
                f |= bit;
            }
        }
        put_u32(&mut b, 12, f);
        put_u64(&mut b, 16, self.base_checksum);
        put_u64(&mut b, 24, self.base_file_len);
        put_u64(&mut b, 32, self.base_num_nodes);
        let c = checksum(&b[..120]);
        put_u64(&mut b, 120, c);
        b
    }

    pub fn decode(b: &[u8]) -> Result<LogHeader> {
        if b.len() < LOG_HEADER_LEN {
            return Err(Error::format(format!(
                "change log is too short for its header ({} bytes)",
                b.len()
            )));
        }
        if b[..8] != LOG_MAGIC {
            return Err(Error::format("not a change log (bad magic)"));
        }
        let version = rd_u32(b, 8);
        if (1..LOG_VERSION).contains(&version) {
            return Err(Error::format(format!(
                "change log version {version} is not read by this library, which reads version \
                 {LOG_VERSION}: fold it into the graph file with the version that wrote it \
                 (`instant-embedding compact GRAPH`), or re-convert the graph from its edges"
            )));
        }
        if version != LOG_VERSION {
            return Err(Error::format(format!(
                "unsupported change log version {version} (this library reads version {LOG_VERSION})"
            )));
        }
        if rd_u64(b, 120) != checksum(&b[..120]) {
            return Err(Error::format("change log header checksum mismatch"));
        }
        let f = rd_u32(b, 12);
        if f & !KNOWN_FLAGS != 0 {
            return Err(Error::format(format!("unknown change log flags {f:#x}")));
        }
        Ok(LogHeader {
            merge_max: f & FLAG_MERGE_MAX != 0,
            str_ids: f & FLAG_STR_IDS != 0,
            weighted: f & FLAG_WEIGHTED != 0,
            directed: f & FLAG_DIRECTED != 0,
            base_checksum: rd_u64(b, 16),
            base_file_len: rd_u64(b, 24),
            base_num_nodes: rd_u64(b, 32),
        })
    }
}

/// A superblock slot: names the trailer of the newest commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    pub seq: u64,
    /// Offset of the commit's trailer; 0 for the empty log (seq 0).
    pub trailer: u64,
    /// The trailer's own checksum (ties the slot to that exact trailer).
    pub trailer_checksum: u64,
    /// Non-zero once the changes were folded into a new base file with this header checksum
    /// (written by `compact` before it replaces the base file).
    pub superseded_by: u64,
}

impl Slot {
    pub fn encode(&self) -> [u8; SLOT_LEN] {
        let mut b = [0u8; SLOT_LEN];
        put_u64(&mut b, 0, self.seq);
        put_u64(&mut b, 8, self.trailer);
        put_u64(&mut b, 16, self.trailer_checksum);
        put_u64(&mut b, 24, self.superseded_by);
        let c = checksum(&b[..56]);
        put_u64(&mut b, 56, c);
        b
    }

    /// None if the slot does not hold a valid record (never written, or torn).
    pub fn decode(b: &[u8]) -> Option<Slot> {
        if b.len() < SLOT_LEN || rd_u64(b, 56) != checksum(&b[..56]) {
            return None;
        }
        let s = Slot {
            seq: rd_u64(b, 0),
            trailer: rd_u64(b, 8),
            trailer_checksum: rd_u64(b, 16),
            superseded_by: rd_u64(b, 24),
        };
        // The empty log names no trailer, every commit one.
        ((s.seq == 0) == (s.trailer == 0)).then_some(s)
    }
}

/// The newest valid slot of the two in `bytes` (the file's first 256 bytes). On equal sequence
/// numbers the one carrying a compaction mark wins.
pub fn best_slot(bytes: &[u8]) -> Result<Slot> {
    let mut best: Option<Slot> = None;
    for off in SLOT_OFFSETS {
        let off = off as usize;
        if let Some(s) = bytes.get(off..off + SLOT_LEN).and_then(Slot::decode) {
            let better = match best {
                None => true,
                Some(b) => s.seq > b.seq || (s.seq == b.seq && s.superseded_by != 0),
            };
            if better {
                best = Some(s);
            }
        }
    }
    best.ok_or_else(|| Error::format("change log has no valid superblock (corrupted)"))
}

/// The state after a commit. Counts are cumulative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trailer {
    pub flags: u32,
    pub seq: u64,
    /// Offset of the segment (its first operation); the previous commit's trailer ends there.
    pub start: u64,
    /// Offset of the index's level directory; 0 when no node has a record in the log.
    pub index: u64,
    /// Levels of the index (0 when `index` is 0).
    pub levels: u32,
    pub num_nodes: u64,
    pub num_arcs: u64,
    pub self_loops: u64,
    /// Offset of the id-run directory; 0 when no node was created (or ids are implicit).
    pub runs: u64,
    pub adds: u64,
    pub removes: u64,
    /// Nodes whose row lives in the log.
    pub changed: u64,
    /// Bytes of the segment's operations (from `start`, before their padding).
    pub ops_len: u64,
    /// XXH3-64 of the segment's bytes before the trailer.
    pub segment_checksum: u64,
}

impl Trailer {
    pub fn permuted(&self) -> bool {
        self.flags & TRAILER_PERMUTED != 0
    }

    pub fn encode(&self) -> [u8; TRAILER_LEN] {
        let mut b = [0u8; TRAILER_LEN];
        put_u32(&mut b, 0, TRAILER_MAGIC);
        put_u32(&mut b, 4, self.flags);
        put_u64(&mut b, 8, self.seq);
        put_u64(&mut b, 16, self.start);
        put_u64(&mut b, 24, self.index);
        put_u32(&mut b, 32, self.levels);
        // At most u32::MAX nodes (checked when read).
        put_u32(&mut b, 36, self.num_nodes as u32);
        put_u64(&mut b, 40, self.num_arcs);
        // Self-loops and changed nodes: at most one per node.
        put_u32(&mut b, 48, self.self_loops as u32);
        put_u32(&mut b, 52, self.changed as u32);
        put_u64(&mut b, 56, self.runs);
        put_u64(&mut b, 64, self.adds);
        put_u64(&mut b, 72, self.removes);
        put_u64(&mut b, 80, self.ops_len);
        put_u64(&mut b, 88, self.segment_checksum);
        let c = checksum(&b[..TRAILER_LEN - 8]);
        put_u64(&mut b, TRAILER_LEN - 8, c);
        b
    }

    /// The trailer's own checksum, as stored (its last 8 bytes).
    pub fn stored_checksum(b: &[u8]) -> u64 {
        rd_u64(b, TRAILER_LEN - 8)
    }

    /// Decodes the trailer at `off` of `bytes` and checks what can be checked in O(1).
    pub fn decode(bytes: &[u8], off: u64) -> Result<(Trailer, u64)> {
        let b = off
            .checked_add(TRAILER_LEN as u64)
            .filter(|&e| off >= DATA_START && off % 8 == 0 && e <= bytes.len() as u64)
            .map(|e| &bytes[off as usize..e as usize])
            .ok_or_else(|| {
                Error::format(format!(
                    "change log truncated: its commit record at {off} lies past the end ({} bytes)",
                    bytes.len()
                ))
            })?;
        if rd_u32(b, 0) != TRAILER_MAGIC {
            return Err(Error::format(format!(
                "change log corrupted: no commit record at {off}"
            )));
        }
        let c = Trailer::stored_checksum(b);
        if c != checksum(&b[..TRAILER_LEN - 8]) {
            return Err(Error::format(format!(
                "change log corrupted: commit record checksum mismatch at {off}"
            )));
        }
        let t = Trailer {
            flags: rd_u32(b, 4),
            seq: rd_u64(b, 8),
            start: rd_u64(b, 16),
            index: rd_u64(b, 24),
            levels: rd_u32(b, 32),
            num_nodes: u64::from(rd_u32(b, 36)),
            num_arcs: rd_u64(b, 40),
            self_loops: u64::from(rd_u32(b, 48)),
            changed: u64::from(rd_u32(b, 52)),
            runs: rd_u64(b, 56),
            adds: rd_u64(b, 64),
            removes: rd_u64(b, 72),
            ops_len: rd_u64(b, 80),
            segment_checksum: rd_u64(b, 88),
        };
        if t.flags & !TRAILER_PERMUTED != 0
            || (t.index == 0) != (t.levels == 0)
            || t.levels > MAX_LEVELS
            || t.start < DATA_START
            || t.start % 8 != 0
            || t.start > off
            || t.ops_len > off - t.start
            || t.index >= off
            || t.runs >= off
        {
            return Err(Error::format(format!(
                "change log corrupted: inconsistent commit record at {off}"
            )));
        }
        Ok((t, c))
    }
}

/// A node id as the log stores it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogId {
    Int(i64),
    Str(String),
}

impl std::fmt::Display for LogId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogId::Int(i) => write!(f, "{i}"),
            LogId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// One logged operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Add the edge; `weight` is `None` on unweighted graphs.
    Add(LogId, LogId, Option<f32>),
    Remove(LogId, LogId),
}

/// Appends `x` as LEB128 (7 bits per byte, low groups first, high bit: more follow).
fn put_varint(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// Appends the encoding of `op` to `out` (see docs/FORMAT.md): ids as variable-length
/// integers, so a commit's operations cost a few bytes per edge.
pub fn encode_op(out: &mut Vec<u8>, op: &Op) {
    let put_id = |out: &mut Vec<u8>, id: &LogId| match id {
        // Zigzag: small ids of either sign take few bytes.
        LogId::Int(i) => put_varint(out, ((i << 1) ^ (i >> 63)) as u64),
        LogId::Str(s) => {
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    };
    match op {
        Op::Add(a, b, w) => {
            out.push(if w.is_some() { OP_ADD_WEIGHTED } else { OP_ADD });
            put_id(out, a);
            put_id(out, b);
            if let Some(w) = w {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        Op::Remove(a, b) => {
            out.push(OP_REMOVE);
            put_id(out, a);
            put_id(out, b);
        }
    }
}

/// Decodes `count` operations from `payload` (exactly).
pub fn decode_ops(payload: &[u8], count: u64, str_ids: bool, weighted: bool) -> Result<Vec<Op>> {
    let bad = |what: &str| Error::format(format!("change log corrupted: {what}"));
    let mut pos = 0usize;
    let mut take = |k: usize| -> Result<&[u8]> {
        let s = payload
            .get(
                pos..pos
                    .checked_add(k)
                    .ok_or_else(|| bad("operation too long"))?,
            )
            .ok_or_else(|| bad("operation runs past its record"))?;
        pos += k;
        Ok(s)
    };
    // Each operation takes at least 3 bytes: a cheap bound before allocating.
    if count > payload.len() as u64 / 3 + 1 {
        return Err(bad("operation count exceeds its record"));
    }
    let mut ops = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let kind = take(1)?[0];
        let mut id = || -> Result<LogId> {
            let mut x = 0u64;
            for shift in (0..64).step_by(7) {
                let byte = take(1)?[0];
                // The tenth byte holds bit 63 only; a longer or overlong encoding is refused.
                if shift == 63 && byte > 1 || shift > 0 && byte == 0 {
                    return Err(bad("malformed node id"));
                }
                x |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return if str_ids {
                        let len = usize::try_from(x).map_err(|_| bad("node id too long"))?;
                        let s = std::str::from_utf8(take(len)?)
                            .map_err(|_| bad("node id is not valid UTF-8"))?;
                        Ok(LogId::Str(s.to_owned()))
                    } else {
                        Ok(LogId::Int((x >> 1) as i64 ^ -((x & 1) as i64)))
                    };
                }
            }
            Err(bad("malformed node id"))
        };
        let (a, b) = (id()?, id()?);
        ops.push(match kind {
            OP_ADD if !weighted => Op::Add(a, b, None),
            OP_ADD_WEIGHTED if weighted => {
                let w = f32::from_le_bytes(take(4)?.try_into().unwrap());
                if !(w.is_finite() && w > 0.0) {
                    return Err(bad("invalid edge weight"));
                }
                Op::Add(a, b, Some(w))
            }
            OP_REMOVE => Op::Remove(a, b),
            _ => return Err(bad("unknown operation kind")),
        });
    }
    if pos != payload.len() {
        return Err(bad("trailing bytes after the operations"));
    }
    Ok(ops)
}

/// One commit as read back by [`read_log`].
#[derive(Clone, Debug)]
pub struct Commit {
    pub trailer: Trailer,
    /// Offset of the trailer.
    pub at: u64,
    pub ops: Vec<Op>,
}

/// Everything [`read_log`] found.
#[derive(Clone, Debug)]
pub struct LogContents {
    pub header: LogHeader,
    pub slot: Slot,
    pub commits: Vec<Commit>,
    /// End of the committed bytes (the newest trailer's end).
    pub end: u64,
}

/// Reads a whole change log: header, superblocks, and every committed segment in order, each
/// with its checksums and operations verified, the sequence numbers consecutive and the
/// segments contiguous. Bytes past the committed end (a write interrupted by a crash) are
/// ignored. Any inconsistency is a `GraphFormatError`; never a panic, whatever the bytes.
pub fn read_log(bytes: &[u8]) -> Result<LogContents> {
    read_log_at(bytes, best_slot(bytes)?)
}

/// [`read_log`] up to the commit named by `slot` (a snapshot's). Walks the trailers from the
/// newest back (each segment starts where the previous trailer ends), then checks each
/// commit's checksum, operations and counts oldest first.
pub fn read_log_at(bytes: &[u8], slot: Slot) -> Result<LogContents> {
    let header = LogHeader::decode(bytes)?;
    let mut commits = Vec::new();
    let mut end = DATA_START;
    if slot.seq > 0 {
        let (last, c) = Trailer::decode(bytes, slot.trailer)?;
        if c != slot.trailer_checksum || last.seq != slot.seq {
            return Err(Error::format(
                "change log corrupted: the superblock does not match its commit record",
            ));
        }
        end = slot.trailer + TRAILER_LEN as u64;
        let mut trailers = vec![(slot.trailer, last)];
        let mut t = last;
        while t.start > DATA_START {
            let at = t
                .start
                .checked_sub(TRAILER_LEN as u64)
                .filter(|&a| a >= DATA_START && (trailers.len() as u64) < slot.seq)
                .ok_or_else(|| Error::format("change log corrupted: more commits than recorded"))?;
            let (prev, _) = Trailer::decode(bytes, at)?;
            if prev.seq.checked_add(1) != Some(t.seq) {
                return Err(Error::format(format!(
                    "change log corrupted: commit {} is out of sequence",
                    t.seq
                )));
            }
            trailers.push((at, prev));
            t = prev;
        }
        if t.seq != 1 || trailers.len() as u64 != slot.seq {
            return Err(Error::format(
                "change log corrupted: the commits do not start at the log's start",
            ));
        }
        let mut prev: Option<Trailer> = None;
        for &(at, t) in trailers.iter().rev() {
            let seq = t.seq;
            if checksum(&bytes[t.start as usize..at as usize]) != t.segment_checksum {
                return Err(Error::format(format!(
                    "change log corrupted: checksum mismatch in commit {seq}"
                )));
            }
            let before = prev.map_or((0, 0, 0), |p| (p.adds, p.removes, p.num_nodes));
            if t.adds < before.0 || t.removes < before.1 || t.num_nodes < before.2 {
                return Err(Error::format(format!(
                    "change log corrupted: counts decrease at commit {seq}"
                )));
            }
            let (adds, removes) = (t.adds - before.0, t.removes - before.1);
            let payload = t.start as usize..(t.start + t.ops_len) as usize;
            let ops = decode_ops(
                &bytes[payload],
                adds.saturating_add(removes),
                header.str_ids,
                header.weighted,
            )?;
            let added = ops.iter().filter(|o| matches!(o, Op::Add(..))).count() as u64;
            if added != adds {
                return Err(Error::format(format!(
                    "change log corrupted: commit {seq} counts other operations than it holds"
                )));
            }
            prev = Some(t);
            commits.push(Commit {
                trailer: t,
                at,
                ops,
            });
        }
    }
    Ok(LogContents {
        header,
        slot,
        commits,
        end,
    })
}

/// Recomputes every checksum of a (possibly damaged) log in place: the header's; for the
/// trailer each slot names and the trailers before it (found by walking the segment starts
/// back), each segment's and trailer's; then the slots' own. For fuzzing and tests: lets a
/// mutation get past the checksums and reach the structural checks. Never panics.
pub fn forge_checksums(b: &mut [u8]) {
    if b.len() < DATA_START as usize {
        return;
    }
    let c = checksum(&b[..120]);
    put_u64(b, 120, c);
    let len = b.len() as u64;
    let is_trailer = |b: &[u8], at: u64| {
        at >= DATA_START
            && at % 8 == 0
            && at.checked_add(TRAILER_LEN as u64).is_some_and(|e| e <= len)
            && rd_u32(b, at as usize) == TRAILER_MAGIC
    };
    for off in SLOT_OFFSETS {
        let o = off as usize;
        // The trailers back from the one the slot names, newest first (each step moves back
        // by at least a trailer, so the walk ends).
        let mut chain = Vec::new();
        let mut at = rd_u64(b, o + 8);
        while is_trailer(b, at) {
            chain.push(at);
            let start = rd_u64(b, at as usize + 16);
            if start > at || start < DATA_START + TRAILER_LEN as u64 {
                break;
            }
            at = start - TRAILER_LEN as u64;
        }
        for &t in chain.iter().rev() {
            let t = t as usize;
            let start = rd_u64(b, t + 16);
            if (DATA_START..=t as u64).contains(&start) {
                let seg = checksum(&b[start as usize..t]);
                put_u64(b, t + 88, seg);
            }
            let tc = checksum(&b[t..t + TRAILER_LEN - 8]);
            put_u64(b, t + TRAILER_LEN - 8, tc);
        }
        if let Some(&t) = chain.first() {
            let tc = Trailer::stored_checksum(&b[t as usize..]);
            put_u64(b, o + 16, tc);
        }
        let c = checksum(&b[o..o + 56]);
        put_u64(b, o + 56, c);
    }
}

/// A segment under construction: bytes to be written at `base` (the committed end).
pub(crate) struct SegmentBuf {
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl SegmentBuf {
    /// Offset the next appended item gets.
    pub fn pos(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
    pub fn put(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
    }
    pub fn align8(&mut self) {
        let len = pad8(self.bytes.len() as u64) as usize;
        self.bytes.resize(len, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_deltas_roundtrip_and_refuse_stray_bits() {
        for (u, set) in [
            (0u32, true),
            (7, false),
            (u32::MAX, true),
            (u32::MAX, false),
        ] {
            let w = inline_delta(u, set);
            assert_ne!(w & INLINE_DELTA, 0);
            assert_eq!(decode_inline_delta(w), Some((u, set)));
        }
        for bit in 33..63 {
            assert_eq!(decode_inline_delta(inline_delta(5, true) | 1 << bit), None);
        }
    }

    #[test]
    fn ops_roundtrip_and_reject_garbage() {
        let ops = vec![
            Op::Add(LogId::Str("a".into()), LogId::Str("ü".into()), Some(2.5)),
            Op::Remove(LogId::Str(String::new()), LogId::Str("a".into())),
        ];
        let mut b = Vec::new();
        for o in &ops {
            encode_op(&mut b, o);
        }
        assert_eq!(decode_ops(&b, 2, true, true).unwrap(), ops);
        assert!(decode_ops(&b, 3, true, true).is_err());
        assert!(decode_ops(&b, 1, true, true).is_err());
        assert!(decode_ops(&b[..b.len() - 1], 2, true, true).is_err());
        assert!(decode_ops(&b, 2, true, false).is_err());
        let mut int = Vec::new();
        encode_op(
            &mut int,
            &Op::Add(LogId::Int(-5), LogId::Int(i64::MAX), None),
        );
        assert_eq!(
            decode_ops(&int, 1, false, false).unwrap(),
            vec![Op::Add(LogId::Int(-5), LogId::Int(i64::MAX), None)]
        );
        // A NaN weight is refused.
        let mut w = Vec::new();
        encode_op(
            &mut w,
            &Op::Add(LogId::Int(0), LogId::Int(1), Some(f32::NAN)),
        );
        assert!(decode_ops(&w, 1, false, true).is_err());
        // Ids of every length round-trip; an id costs one byte per 7 bits of its zigzag form.
        for id in [
            0i64,
            -1,
            1,
            63,
            -64,
            64,
            1 << 20,
            -(1 << 40),
            i64::MIN,
            i64::MAX,
        ] {
            let mut b = Vec::new();
            encode_op(&mut b, &Op::Remove(LogId::Int(id), LogId::Int(0)));
            let zz = ((id << 1) ^ (id >> 63)) as u64;
            assert_eq!(
                b.len(),
                2 + (64 - zz.leading_zeros() as usize).max(1).div_ceil(7)
            );
            assert_eq!(
                decode_ops(&b, 1, false, false).unwrap(),
                vec![Op::Remove(LogId::Int(id), LogId::Int(0))]
            );
        }
        // Overlong, too long and unterminated ids are refused.
        for bad in [
            &[3u8, 0x80, 0x00, 0][..],
            &[
                3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0,
            ],
            &[3, 0x80],
        ] {
            assert!(decode_ops(bad, 1, false, false).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn header_slot_trailer_roundtrip_and_every_flip_detected() {
        let h = LogHeader {
            merge_max: true,
            str_ids: false,
            weighted: true,
            directed: false,
            base_checksum: 0x1234,
            base_file_len: 999,
            base_num_nodes: 7,
        };
        let b = h.encode();
        assert_eq!(LogHeader::decode(&b).unwrap(), h);
        for i in 0..LOG_HEADER_LEN {
            let mut c = b;
            c[i] ^= 4;
            assert!(LogHeader::decode(&c).is_err(), "flip at {i}");
        }
        let s = Slot {
            seq: 3,
            trailer: 4096,
            trailer_checksum: 77,
            superseded_by: 0,
        };
        let sb = s.encode();
        assert_eq!(Slot::decode(&sb), Some(s));
        for i in 0..SLOT_LEN {
            let mut c = sb;
            c[i] ^= 1;
            assert_eq!(Slot::decode(&c), None, "flip at {i}");
        }
        let t = Trailer {
            flags: TRAILER_PERMUTED,
            seq: 2,
            start: 512,
            index: 600,
            levels: 3,
            num_nodes: u64::from(u32::MAX),
            num_arcs: 1 << 40,
            self_loops: 5,
            runs: 640,
            adds: 9,
            removes: 4,
            changed: u64::from(u32::MAX),
            ops_len: 40,
            segment_checksum: 0xabcd,
        };
        let mut file = vec![0u8; 4096];
        file[4096 - TRAILER_LEN..].copy_from_slice(&t.encode());
        let at = (4096 - TRAILER_LEN) as u64;
        assert_eq!(Trailer::decode(&file, at).unwrap().0, t);
        for i in 0..TRAILER_LEN {
            let mut c = file.clone();
            c[at as usize + i] ^= 1;
            assert!(Trailer::decode(&c, at).is_err(), "flip at {i}");
        }
    }
}
