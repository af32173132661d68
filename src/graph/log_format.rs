//! The change log of a live graph: the file `GRAPH.live` next to a graph file `GRAPH`, format
//! version 2 (specified in docs/FORMAT.md, "Change log").
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
pub const LOG_VERSION: u32 = 2;
/// File header: bytes `0..128`.
pub const LOG_HEADER_LEN: usize = 128;
/// Superblock slots: bytes `128..192` and `192..256`.
pub const SLOT_OFFSETS: [u64; 2] = [128, 192];
pub const SLOT_LEN: usize = 64;
/// First segment.
pub const DATA_START: u64 = 256;
pub const TRAILER_LEN: usize = 128;
/// Index levels: sorted runs from node to record, at most `MAX_LEVELS` of them (the
/// binary-counter rule keeps O(log) levels: 64 would take 2^64 entries).
pub const MAX_LEVELS: u32 = 64;
pub const LEVEL_HEADER_LEN: usize = 24;
/// A level's fence holds every `FENCE_STRIDE`-th node: one 4 KiB page of its node array.
pub const FENCE_STRIDE: usize = 1024;
pub const LEVEL_MAGIC: u32 = u32::from_le_bytes(*b"LVL1");
/// A level of at least this many entries carries a bitmap of its nodes with a rank per word
/// (when that is no larger than its entries): a lookup in it is then a bit test and a
/// popcount, not a search, so a reader just opened on a large log looks nodes up at once
/// about as fast as one that built its index in memory.
pub const LEVEL_BITMAP_MIN_ENTRIES: u64 = 1024;
pub const LEVEL_DIR_MAGIC: u32 = u32::from_le_bytes(*b"LDR1");
/// Length of a segment's operations header.
pub const OPS_HEADER_LEN: usize = 40;
pub const RUN_HEADER_LEN: usize = 32;
pub const RECORD_HEADER_LEN: usize = 16;
/// A delta record: `u32 node`, `u32 count | DELTA_FLAG`, `f64 strength`, `u64 older`,
/// `u32 degree`, `u32 chain`, then `u32[count]` neighbours and `f32[count]` values.
pub const DELTA_HEADER_LEN: usize = 32;
/// Bit 31 of a record's second word: the record is a delta on an older row.
pub const DELTA_FLAG: u32 = 1 << 31;

pub const OPS_MAGIC: u32 = u32::from_le_bytes(*b"OPS1");
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
        if version == 1 {
            return Err(Error::format(
                "change log version 1 (whole rows per commit) is not read by this library, which \
                 reads version 2: fold it into the graph file with the version that wrote it \
                 (`instant-embedding compact GRAPH`), or re-convert the graph from its edges",
            ));
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
    /// Offset of the segment (its operations header).
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
        put_u64(&mut b, 40, self.num_nodes);
        put_u64(&mut b, 48, self.num_arcs);
        put_u64(&mut b, 56, self.self_loops);
        put_u64(&mut b, 64, self.runs);
        put_u64(&mut b, 72, self.adds);
        put_u64(&mut b, 80, self.removes);
        put_u64(&mut b, 88, self.changed);
        put_u64(&mut b, 104, self.segment_checksum);
        let c = checksum(&b[..120]);
        put_u64(&mut b, 120, c);
        b
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
        let c = rd_u64(b, 120);
        if c != checksum(&b[..120]) {
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
            num_nodes: rd_u64(b, 40),
            num_arcs: rd_u64(b, 48),
            self_loops: rd_u64(b, 56),
            runs: rd_u64(b, 64),
            adds: rd_u64(b, 72),
            removes: rd_u64(b, 80),
            changed: rd_u64(b, 88),
            segment_checksum: rd_u64(b, 104),
        };
        if t.flags & !TRAILER_PERMUTED != 0
            || (t.index == 0) != (t.levels == 0)
            || t.levels > MAX_LEVELS
            || t.start < DATA_START
            || t.start >= off
            || t.index >= off
            || t.runs >= off
            || t.num_nodes > u64::from(u32::MAX)
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

/// Appends the encoding of `op` to `out` (see docs/FORMAT.md).
pub fn encode_op(out: &mut Vec<u8>, op: &Op) {
    let put_id = |out: &mut Vec<u8>, id: &LogId| match id {
        LogId::Int(i) => out.extend_from_slice(&i.to_le_bytes()),
        LogId::Str(s) => {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
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
    // Each operation takes at least 9 bytes: a cheap bound before allocating.
    if count > payload.len() as u64 / 9 + 1 {
        return Err(bad("operation count exceeds its record"));
    }
    let mut ops = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let kind = take(1)?[0];
        let mut id = || -> Result<LogId> {
            if str_ids {
                let len = u32::from_le_bytes(take(4)?.try_into().unwrap()) as usize;
                let s = std::str::from_utf8(take(len)?)
                    .map_err(|_| bad("node id is not valid UTF-8"))?;
                Ok(LogId::Str(s.to_owned()))
            } else {
                Ok(LogId::Int(i64::from_le_bytes(take(8)?.try_into().unwrap())))
            }
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

/// Header of a segment's operations record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpsHeader {
    pub seq: u64,
    pub num_ops: u64,
    pub payload_len: u64,
    /// Bytes from the start of the segment to the end of its trailer.
    pub segment_len: u64,
}

impl OpsHeader {
    pub fn encode(&self) -> [u8; OPS_HEADER_LEN] {
        let mut b = [0u8; OPS_HEADER_LEN];
        put_u32(&mut b, 0, OPS_MAGIC);
        put_u64(&mut b, 8, self.seq);
        put_u64(&mut b, 16, self.num_ops);
        put_u64(&mut b, 24, self.payload_len);
        put_u64(&mut b, 32, self.segment_len);
        b
    }
    pub fn decode(b: &[u8]) -> Result<OpsHeader> {
        if b.len() < OPS_HEADER_LEN || rd_u32(b, 0) != OPS_MAGIC {
            return Err(Error::format("change log corrupted: no operations record"));
        }
        Ok(OpsHeader {
            seq: rd_u64(b, 8),
            num_ops: rd_u64(b, 16),
            payload_len: rd_u64(b, 24),
            segment_len: rd_u64(b, 32),
        })
    }
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

/// [`read_log`] up to the commit named by `slot` (a snapshot's).
pub fn read_log_at(bytes: &[u8], slot: Slot) -> Result<LogContents> {
    let header = LogHeader::decode(bytes)?;
    let mut commits = Vec::new();
    let mut pos = DATA_START;
    if slot.seq > 0 {
        let (last, c) = Trailer::decode(bytes, slot.trailer)?;
        if c != slot.trailer_checksum || last.seq != slot.seq {
            return Err(Error::format(
                "change log corrupted: the superblock does not match its commit record",
            ));
        }
        let end = slot.trailer + TRAILER_LEN as u64;
        let mut prev: Option<Trailer> = None;
        while pos < end {
            let seq = commits.len() as u64 + 1;
            if seq > slot.seq {
                return Err(Error::format(
                    "change log corrupted: more commits than recorded",
                ));
            }
            let head = bytes
                .get(pos as usize..pos as usize + OPS_HEADER_LEN)
                .ok_or_else(|| Error::format("change log truncated"))?;
            let oh = OpsHeader::decode(head)?;
            let seg_end = pos
                .checked_add(oh.segment_len)
                .filter(|&e| e <= end && oh.segment_len >= (OPS_HEADER_LEN + TRAILER_LEN) as u64)
                .ok_or_else(|| Error::format("change log corrupted: bad segment length"))?;
            let at = seg_end - TRAILER_LEN as u64;
            let (t, _) = Trailer::decode(bytes, at)?;
            if t.start != pos || t.seq != seq || oh.seq != seq {
                return Err(Error::format(format!(
                    "change log corrupted: commit {seq} is out of sequence"
                )));
            }
            if checksum(&bytes[pos as usize..at as usize]) != t.segment_checksum {
                return Err(Error::format(format!(
                    "change log corrupted: checksum mismatch in commit {seq}"
                )));
            }
            let payload_end = (pos + OPS_HEADER_LEN as u64)
                .checked_add(oh.payload_len)
                .filter(|&e| e <= at)
                .ok_or_else(|| Error::format("change log corrupted: bad operations length"))?;
            let ops = decode_ops(
                &bytes[pos as usize + OPS_HEADER_LEN..payload_end as usize],
                oh.num_ops,
                header.str_ids,
                header.weighted,
            )?;
            if let Some(p) = prev {
                if t.adds < p.adds || t.removes < p.removes || t.num_nodes < p.num_nodes {
                    return Err(Error::format(format!(
                        "change log corrupted: counts decrease at commit {seq}"
                    )));
                }
            }
            let adds = ops.iter().filter(|o| matches!(o, Op::Add(..))).count() as u64;
            let before = prev.map_or((0, 0), |p| (p.adds, p.removes));
            if t.adds != before.0 + adds || t.removes != before.1 + (ops.len() as u64 - adds) {
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
            pos = seg_end;
        }
        if pos != end || commits.len() as u64 != slot.seq {
            return Err(Error::format(
                "change log corrupted: the commits do not end at the recorded end",
            ));
        }
    }
    Ok(LogContents {
        header,
        slot,
        commits,
        end: pos,
    })
}

/// Recomputes every checksum of a (possibly damaged) log in place: the header's, each
/// segment's and trailer's found by walking the segment lengths from the start, and the
/// slots' (which are also pointed at the trailers they name). For fuzzing and tests: lets a
/// mutation get past the checksums and reach the structural checks. Never panics.
pub fn forge_checksums(b: &mut [u8]) {
    if b.len() < DATA_START as usize {
        return;
    }
    let c = checksum(&b[..120]);
    put_u64(b, 120, c);
    let mut trailers: Vec<(u64, u64)> = Vec::new(); // (offset, checksum)
    let mut pos = DATA_START as usize;
    while pos + OPS_HEADER_LEN <= b.len() && rd_u32(b, pos) == OPS_MAGIC {
        let len = rd_u64(b, pos + 32);
        let Some(end) = (pos as u64)
            .checked_add(len)
            .filter(|&e| e <= b.len() as u64 && len >= (OPS_HEADER_LEN + TRAILER_LEN) as u64)
        else {
            break;
        };
        let at = end as usize - TRAILER_LEN;
        let seg = checksum(&b[pos..at]);
        put_u64(b, at + 104, seg);
        let tc = checksum(&b[at..at + 120]);
        put_u64(b, at + 120, tc);
        trailers.push((at as u64, tc));
        pos = end as usize;
    }
    for off in SLOT_OFFSETS {
        let o = off as usize;
        let trailer = rd_u64(b, o + 8);
        if let Some(&(_, tc)) = trailers.iter().find(|t| t.0 == trailer) {
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
    pub fn patch_u64(&mut self, at: u64, v: u64) {
        let i = (at - self.base) as usize;
        put_u64(&mut self.bytes, i, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
