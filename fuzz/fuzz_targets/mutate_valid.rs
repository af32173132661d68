//! Structure-aware: start from a small valid graph file, apply edits aimed at the header fields,
//! the section table and the sections, then (usually) forge the header checksum and sometimes
//! every section checksum too, so the mutation reaches the structural checks of `open`, the
//! bounds checks of every accessor and the invariant checks of `validate`.
#![no_main]

use arbitrary::Arbitrary;
use ie_fuzz::{base_graphs, fix_all_checksums, fix_header, from_bytes, touch_everything};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Edit {
    /// XOR one byte anywhere.
    Xor { pos: u16, mask: u8 },
    /// Overwrite a little-endian u32 (neighbour ids, id_index entries, f32 weights).
    U32 { pos: u16, val: u32 },
    /// Overwrite a little-endian u64 (indptr, offsets, f64 strengths, int ids).
    U64 { pos: u16, val: u64 },
    /// Set a header field or section-table entry to a boundary value.
    Field { field: u8, val: Boundary },
    /// Copy 8 bytes from one place to another (e.g. one section's offset into another's).
    Copy { from: u16, to: u16 },
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Boundary {
    Zero,
    One,
    Max,
    Half,
    NumNodes(i8),
    NumArcs(i8),
    FileLen(i8),
    Raw(u64),
}

#[derive(Arbitrary, Debug)]
struct Input {
    base: u8,
    edits: Vec<Edit>,
    forge_header: bool,
    forge_sections: bool,
    truncate: Option<u16>,
    extend: u8,
}

/// Offsets of the u64 header fields: num_nodes, num_arcs, num_edges, file_len, then
/// (offset, len) of each of the 7 sections.
fn field_offset(field: u8) -> usize {
    let f = field as usize % 18;
    if f < 4 {
        16 + 8 * f
    } else {
        let s = (f - 4) / 2;
        64 + 24 * s + 8 * ((f - 4) % 2)
    }
}

fn rd(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn put(b: &mut [u8], pos: usize, bytes: &[u8]) {
    if b.len() >= bytes.len() {
        let pos = pos % (b.len() - bytes.len() + 1);
        b[pos..pos + bytes.len()].copy_from_slice(bytes);
    }
}

fuzz_target!(|inp: Input| {
    let bases = base_graphs();
    let mut b = bases[inp.base as usize % bases.len()].clone();
    let (n, m, len) = (rd(&b, 16), rd(&b, 24), rd(&b, 40));
    for e in inp.edits.iter().take(16) {
        match *e {
            Edit::Xor { pos, mask } => {
                let i = pos as usize % b.len();
                b[i] ^= mask;
            }
            Edit::U32 { pos, val } => put(&mut b, pos as usize, &val.to_le_bytes()),
            Edit::U64 { pos, val } => put(&mut b, pos as usize, &val.to_le_bytes()),
            Edit::Field { field, val } => {
                let v = match val {
                    Boundary::Zero => 0,
                    Boundary::One => 1,
                    Boundary::Max => u64::MAX,
                    Boundary::Half => 1 << 63,
                    Boundary::NumNodes(d) => n.wrapping_add(d as i64 as u64),
                    Boundary::NumArcs(d) => m.wrapping_add(d as i64 as u64),
                    Boundary::FileLen(d) => len.wrapping_add(d as i64 as u64),
                    Boundary::Raw(x) => x,
                };
                let off = field_offset(field);
                b[off..off + 8].copy_from_slice(&v.to_le_bytes());
            }
            Edit::Copy { from, to } => {
                let from = from as usize % (b.len() - 7);
                let chunk: [u8; 8] = b[from..from + 8].try_into().unwrap();
                put(&mut b, to as usize, &chunk);
            }
        }
    }
    if let Some(t) = inp.truncate {
        b.truncate(t as usize % (b.len() + 1));
    }
    b.extend(std::iter::repeat_n(0u8, inp.extend as usize % 128));
    if inp.forge_sections {
        fix_all_checksums(&mut b);
    } else if inp.forge_header {
        fix_header(&mut b);
    }
    if let Ok(g) = from_bytes(&b) {
        touch_everything(&g);
    }
});
