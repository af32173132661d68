//! The on-disk graph format, version 1 (specified in docs/FORMAT.md).
//!
//! A 256-byte little-endian header followed by 64-byte aligned sections. The header carries its
//! own xxh3 checksum (checked by `open`) and one xxh3 checksum per section (checked by
//! `Graph::validate`).

use crate::error::{Error, Result};

#[cfg(target_endian = "big")]
compile_error!("the graph format is little-endian; big-endian targets are not supported");

pub const MAGIC: [u8; 8] = *b"IEGRAPH\0";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 256;
pub const ALIGN: u64 = 64;

pub const FLAG_DIRECTED: u32 = 1;
pub const FLAG_WEIGHTED: u32 = 1 << 1;
/// Internal indices are not in external-id order (a renumbered file, see `reorder.rs`); rows are
/// then sorted by the *rank* of their neighbours' ids, so the push visits them in the same order
/// as in the unpermuted file.
pub const FLAG_PERMUTED: u32 = 1 << 2;
const ID_KIND_SHIFT: u32 = 8;
const KNOWN_FLAGS: u32 = FLAG_DIRECTED | FLAG_WEIGHTED | FLAG_PERMUTED | (0xff << ID_KIND_SHIFT);

/// How external node ids are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdKind {
    /// External id = internal index `0..n-1`; no id sections.
    Implicit = 0,
    /// `int64` ids: `ids: i64[n]` plus `id_index`.
    Int64 = 1,
    /// UTF-8 string ids: `ids: u64[n+1]` byte offsets into `id_bytes`, plus `id_index`.
    Utf8 = 2,
}

impl IdKind {
    fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(IdKind::Implicit),
            1 => Some(IdKind::Int64),
            2 => Some(IdKind::Utf8),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            IdKind::Implicit => "implicit",
            IdKind::Int64 => "int64",
            IdKind::Utf8 => "utf8",
        }
    }
}

/// Section slots of the section table, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sec {
    Indptr = 0,
    Indices = 1,
    Weights = 2,
    Strength = 3,
    Ids = 4,
    IdBytes = 5,
    IdIndex = 6,
    /// `u8[m]` aligned with `indices`: per arc, a code bounding its target's
    /// `max(strength, 1)` (see `strength_code.rs`). Optional (files written before it existed
    /// have none); its table entry holds no length (the length is `m`), see [`NBR_CODES_OFF`].
    NbrCodes = 7,
}

pub const NUM_SECTIONS: usize = 8;
pub const SECTION_NAMES: [&str; NUM_SECTIONS] = [
    "indptr",
    "indices",
    "weights",
    "strength",
    "ids",
    "id_bytes",
    "id_index",
    "nbr_codes",
];
/// The first seven sections' `{offset, len, xxh3}` entries.
const SECTION_TABLE_OFF: usize = 64;
const FULL_ENTRIES: usize = 7;
/// The `nbr_codes` entry: `{offset, xxh3}` (its length is `m` when present); both zero when
/// the section is absent.
pub const NBR_CODES_OFF: usize = 232;
const HEADER_CHECKSUM_OFF: usize = 248;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub len: u64,
    pub checksum: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub directed: bool,
    pub weighted: bool,
    /// See [`FLAG_PERMUTED`].
    pub permuted: bool,
    pub id_kind: IdKind,
    pub num_nodes: u64,
    pub num_arcs: u64,
    pub num_edges: u64,
    pub file_len: u64,
    pub sections: [Section; NUM_SECTIONS],
}

#[inline]
fn rd_u32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
#[inline]
fn rd_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

pub fn align_up(x: u64) -> u64 {
    x.div_ceil(ALIGN) * ALIGN
}

/// The length of the file that a graph header declares, after the header's own checks (magic,
/// version, checksum, section layout): what a complete copy of the file measures. Lets a caller
/// that has only the first [`HEADER_LEN`] bytes (a remote file) check them and size the copy.
pub fn declared_len(header: &[u8]) -> Result<u64> {
    let len = if header.len() >= 48 {
        rd_u64(header, 40)
    } else {
        0
    };
    Header::decode(header, len).map(|h| h.file_len)
}

impl Header {
    pub fn flags(&self) -> u32 {
        let mut f = (self.id_kind as u32) << ID_KIND_SHIFT;
        if self.directed {
            f |= FLAG_DIRECTED;
        }
        if self.weighted {
            f |= FLAG_WEIGHTED;
        }
        if self.permuted {
            f |= FLAG_PERMUTED;
        }
        f
    }

    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags().to_le_bytes());
        b[16..24].copy_from_slice(&self.num_nodes.to_le_bytes());
        b[24..32].copy_from_slice(&self.num_arcs.to_le_bytes());
        b[32..40].copy_from_slice(&self.num_edges.to_le_bytes());
        b[40..48].copy_from_slice(&self.file_len.to_le_bytes());
        for (i, s) in self.sections[..FULL_ENTRIES].iter().enumerate() {
            let o = SECTION_TABLE_OFF + 24 * i;
            b[o..o + 8].copy_from_slice(&s.offset.to_le_bytes());
            b[o + 8..o + 16].copy_from_slice(&s.len.to_le_bytes());
            b[o + 16..o + 24].copy_from_slice(&s.checksum.to_le_bytes());
        }
        let codes = self.sections[Sec::NbrCodes as usize];
        if codes.offset != 0 {
            b[NBR_CODES_OFF..NBR_CODES_OFF + 8].copy_from_slice(&codes.offset.to_le_bytes());
            b[NBR_CODES_OFF + 8..NBR_CODES_OFF + 16].copy_from_slice(&codes.checksum.to_le_bytes());
        }
        let c = checksum(&b[..HEADER_CHECKSUM_OFF]);
        b[HEADER_CHECKSUM_OFF..].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Parses and checks the header against the real file length. O(1): never reads sections.
    pub fn decode(bytes: &[u8], actual_len: u64) -> Result<Header> {
        if bytes.len() < HEADER_LEN {
            if bytes.len() >= 8 && bytes[..8] != MAGIC {
                return Err(Error::format(
                    "not an instant-embedding graph file (bad magic)",
                ));
            }
            return Err(Error::format(format!(
                "file is too short for a graph header ({} bytes, need {HEADER_LEN})",
                bytes.len()
            )));
        }
        if bytes[..8] != MAGIC {
            return Err(Error::format(
                "not an instant-embedding graph file (bad magic)",
            ));
        }
        let version = rd_u32(bytes, 8);
        if version != VERSION {
            return Err(Error::format(format!(
                "unsupported graph format version {version} (this library reads version {VERSION})"
            )));
        }
        let stored = rd_u64(bytes, HEADER_CHECKSUM_OFF);
        if stored != checksum(&bytes[..HEADER_CHECKSUM_OFF]) {
            return Err(Error::format("header checksum mismatch (corrupted header)"));
        }
        let flags = rd_u32(bytes, 12);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Error::format(format!("unknown header flags {flags:#x}")));
        }
        let id_kind = IdKind::from_u32(flags >> ID_KIND_SHIFT)
            .ok_or_else(|| Error::format(format!("unknown id kind {}", flags >> ID_KIND_SHIFT)))?;
        let mut sections = [Section::default(); NUM_SECTIONS];
        for (i, s) in sections[..FULL_ENTRIES].iter_mut().enumerate() {
            let o = SECTION_TABLE_OFF + 24 * i;
            *s = Section {
                offset: rd_u64(bytes, o),
                len: rd_u64(bytes, o + 8),
                checksum: rd_u64(bytes, o + 16),
            };
        }
        let (codes_off, codes_sum) = (
            rd_u64(bytes, NBR_CODES_OFF),
            rd_u64(bytes, NBR_CODES_OFF + 8),
        );
        sections[Sec::NbrCodes as usize] = match codes_off {
            0 if codes_sum != 0 => {
                return Err(Error::format(
                    "section nbr_codes has a checksum but no offset",
                ))
            }
            0 => Section {
                offset: 0,
                len: 0,
                checksum: checksum(&[]),
            },
            off => Section {
                offset: off,
                len: rd_u64(bytes, 24),
                checksum: codes_sum,
            },
        };
        let h = Header {
            version,
            directed: flags & FLAG_DIRECTED != 0,
            weighted: flags & FLAG_WEIGHTED != 0,
            permuted: flags & FLAG_PERMUTED != 0,
            id_kind,
            num_nodes: rd_u64(bytes, 16),
            num_arcs: rd_u64(bytes, 24),
            num_edges: rd_u64(bytes, 32),
            file_len: rd_u64(bytes, 40),
            sections,
        };
        h.check(actual_len)?;
        Ok(h)
    }

    /// Structural checks that cost O(1): sizes, alignment, bounds and overlap of sections.
    fn check(&self, actual_len: u64) -> Result<()> {
        if self.file_len != actual_len {
            return Err(Error::format(format!(
                "file length {actual_len} does not match the header's {} (truncated or still being written?)",
                self.file_len
            )));
        }
        let n = self.num_nodes;
        let m = self.num_arcs;
        if n > u64::from(u32::MAX) {
            return Err(Error::format(format!(
                "num_nodes {n} exceeds the u32 index limit"
            )));
        }
        if m > self.file_len / 4 {
            // Also keeps every size computed from m below free of overflow.
            return Err(Error::format(format!(
                "num_arcs {m} cannot fit in a file of {} bytes",
                self.file_len
            )));
        }
        if self.permuted && self.id_kind == IdKind::Implicit {
            return Err(Error::format(
                "a permuted graph must store its node ids (id kind is implicit)",
            ));
        }
        if !self.directed && self.num_edges > m {
            return Err(Error::format("num_edges exceeds the number of stored arcs"));
        }
        let expect = |sec: Sec| -> Option<u64> {
            match sec {
                Sec::Indptr => (n + 1).checked_mul(8),
                Sec::Indices => m.checked_mul(4),
                Sec::Weights => Some(if self.weighted { m.checked_mul(4)? } else { 0 }),
                Sec::Strength => Some(if self.weighted { n * 8 } else { 0 }),
                Sec::Ids => Some(match self.id_kind {
                    IdKind::Implicit => 0,
                    IdKind::Int64 => n * 8,
                    IdKind::Utf8 => (n + 1) * 8,
                }),
                Sec::IdBytes => None, // any length, utf8 only (checked below)
                Sec::IdIndex => Some(if self.id_kind == IdKind::Implicit {
                    0
                } else {
                    n * 4
                }),
                // Optional: `m` bytes when present (the length is not stored, see `decode`).
                Sec::NbrCodes => Some(if self.sections[sec as usize].offset == 0 {
                    0
                } else {
                    m
                }),
            }
        };
        let all = [
            Sec::Indptr,
            Sec::Indices,
            Sec::Weights,
            Sec::Strength,
            Sec::Ids,
            Sec::IdBytes,
            Sec::IdIndex,
            Sec::NbrCodes,
        ];
        let mut end_prev = HEADER_LEN as u64;
        for sec in all {
            let s = self.sections[sec as usize];
            let name = SECTION_NAMES[sec as usize];
            match expect(sec) {
                Some(len) if s.len != len => {
                    return Err(Error::format(format!(
                        "section {name} has length {} but {len} is expected",
                        s.len
                    )))
                }
                None if self.id_kind != IdKind::Utf8 && s.len != 0 => {
                    return Err(Error::format(format!("unexpected section {name}")))
                }
                _ => {}
            }
            if s.len == 0 && s.offset == 0 {
                continue;
            }
            if s.offset % ALIGN != 0 {
                return Err(Error::format(format!(
                    "section {name} is not 64-byte aligned"
                )));
            }
            let end = s
                .offset
                .checked_add(s.len)
                .ok_or_else(|| Error::format(format!("section {name} offset overflows")))?;
            if s.offset < end_prev || end > self.file_len {
                return Err(Error::format(format!(
                    "section {name} [{}, {end}) overlaps another section or lies outside the file",
                    s.offset
                )));
            }
            end_prev = end;
        }
        Ok(())
    }
}

/// The `.properties` file of a WebGraph BV graph at `path` (`NAME.graph` next to
/// `NAME.properties`), if there is one.
pub fn webgraph_properties(path: &std::path::Path) -> Option<std::path::PathBuf> {
    if path.extension()? != "graph" {
        return None;
    }
    let p = path.with_extension("properties");
    p.is_file().then_some(p)
}

/// What a file that is not a graph file looks like, from its first bytes, and what to do: the
/// message of a graph open that meets another format.
pub fn not_a_graph_file(path: &std::path::Path, head: &[u8]) -> String {
    let name = path.display();
    let what = if let Some(props) = webgraph_properties(path) {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default();
        return format!(
            "{name} is a WebGraph BV graph ({} is beside it), not an instant-embedding graph \
             file: convert it first, e.g. instant_embedding.convert({:?}, \"{stem}-ie.graph\")",
            props.display(),
            name.to_string()
        );
    } else if head.starts_with(b"PAR1") {
        "a Parquet file"
    } else if head.starts_with(b"ARROW1") {
        "an Arrow IPC file"
    } else if head.starts_with(b"\x93NUMPY") {
        "a .npy array"
    } else if head.starts_with(b"MATLAB") {
        "a MATLAB file"
    } else if head.starts_with(b"XGFS") {
        "a VERSE .bcsr file"
    } else if [
        &b"\x1f\x8b"[..],
        b"BZh",
        b"\x28\xb5\x2f\xfd",
        b"\xfd7zXZ\x00",
    ]
    .iter()
    .any(|m| head.starts_with(m))
    {
        "compressed data"
    } else if head
        .strip_prefix(b"\xef\xbb\xbf")
        .unwrap_or(head)
        .iter()
        .find(|c| !c.is_ascii_whitespace())
        .is_some_and(|&c| c == b'{' || c == b'[')
    {
        "JSON"
    } else if !head.is_empty() && !head.contains(&0) {
        "text (an edge list?)"
    } else {
        return format!("{name}: not an instant-embedding graph file (bad magic)");
    };
    format!(
        "{name} is {what}, not an instant-embedding graph file (bad magic): convert it first \
         with instant_embedding.convert"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_corruption() {
        let mut h = Header {
            version: VERSION,
            directed: false,
            weighted: false,
            permuted: false,
            id_kind: IdKind::Implicit,
            num_nodes: 3,
            num_arcs: 4,
            num_edges: 2,
            file_len: 0,
            sections: [Section::default(); NUM_SECTIONS],
        };
        h.sections[0] = Section {
            offset: 256,
            len: 32,
            checksum: 1,
        };
        h.sections[1] = Section {
            offset: 320,
            len: 16,
            checksum: 2,
        };
        h.sections[Sec::NbrCodes as usize].checksum = checksum(&[]);
        h.file_len = 336;
        let b = h.encode();
        assert_eq!(Header::decode(&b, 336).unwrap(), h);
        // With neighbour codes: m bytes after the last section, length implied.
        let mut hc = h.clone();
        hc.sections[Sec::NbrCodes as usize] = Section {
            offset: 384,
            len: 4,
            checksum: 3,
        };
        hc.file_len = 388;
        let bc = hc.encode();
        assert_eq!(Header::decode(&bc, 388).unwrap(), hc);
        assert!(Header::decode(&bc, 387).is_err());
        assert!(Header::decode(&b, 335).is_err());
        for i in 0..HEADER_LEN {
            let mut c = b;
            c[i] ^= 0x10;
            assert!(
                Header::decode(&c, 336).is_err(),
                "flip at byte {i} not detected"
            );
        }
    }
}

/// A node's external id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeId<'a> {
    Int(i64),
    Str(&'a str),
}
