//! A buffered file writer that writes whole 2 MiB chunks at 2 MiB-aligned offsets.
//!
//! Why: Linux keeps a file's pages in the page cache in folios as large as the writes that
//! made them (on file systems with large folios, ext4 and XFS among them), and maps a folio
//! of 2 MiB into a process with one huge-page entry. A graph file written 1 MiB at a time at
//! unaligned offsets stays in 4 KiB mappings, and reads scattered over a large file (a
//! writer's batch, warm queries) walk the page tables at almost every row. Written in aligned
//! 2 MiB chunks, the same file read back from the page cache is mapped 2 MiB at a time
//! (docs/BENCHMARKS.md, "Huge pages of the page cache": a writer 1.14x faster on the
//! billion-edge graph). Bytes and results are the same either way; only the folios differ.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

use crate::graph::replace::write_at;

/// The chunk: a huge page on x86-64 and on aarch64 with 4 KiB pages.
const CHUNK: u64 = 2 << 20;

/// Like `BufWriter<File>` (with `Write`, `Seek`, `get_ref` and `into_inner`), but it writes
/// at explicit offsets, from its buffer up to the next 2 MiB boundary, so that every chunk of
/// the file not cut by a seek reaches the kernel in one write. Everything passes through the
/// buffer, also large writes: the kernel copies a write from a source it cannot read without
/// a page fault (a memory map of another file, as a copied graph's sections are) in smaller
/// and smaller pieces, down to 4 KiB folios.
pub struct ChunkWriter {
    /// `None` only once `into_inner` took it.
    file: Option<File>,
    /// Bytes for the file from offset `pos`, never past the next chunk boundary after `pos`.
    buf: Vec<u8>,
    pos: u64,
}

impl ChunkWriter {
    /// A writer at the start of `file` (its own cursor is neither read nor moved).
    pub fn new(file: File) -> ChunkWriter {
        ChunkWriter {
            file: Some(file),
            buf: Vec::with_capacity(CHUNK as usize),
            pos: 0,
        }
    }

    pub fn get_ref(&self) -> &File {
        self.file
            .as_ref()
            .expect("ChunkWriter used after into_inner")
    }

    /// Writes what is buffered and returns the file.
    pub fn into_inner(mut self) -> io::Result<File> {
        self.write_buffer()?;
        Ok(self.file.take().expect("ChunkWriter used after into_inner"))
    }

    /// The offset of the next chunk boundary after `pos`.
    fn boundary(pos: u64) -> u64 {
        (pos / CHUNK + 1) * CHUNK
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            write_at(self.get_ref(), &self.buf, self.pos)?;
            self.pos += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            let room = (Self::boundary(self.pos) - self.pos) as usize - self.buf.len();
            let take = room.min(rest.len());
            self.buf.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if take == room {
                self.write_buffer()?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_buffer()
    }
}

impl Seek for ChunkWriter {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let here = self.pos + self.buf.len() as u64;
        let target = match to {
            SeekFrom::Current(0) => return Ok(here),
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => here.checked_add_signed(d),
            SeekFrom::End(d) => {
                self.write_buffer()?;
                self.get_ref().metadata()?.len().checked_add_signed(d)
            }
        };
        let target = target.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek to a negative offset")
        })?;
        self.write_buffer()?;
        self.pos = target;
        Ok(target)
    }
}

impl Drop for ChunkWriter {
    /// Writes what is buffered, as `BufWriter` does (errors are lost: call `flush`).
    fn drop(&mut self) {
        if self.file.is_some() {
            let _ = self.write_buffer();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A writer that records each positional write it makes, through a file it then reads.
    fn written(ops: &[(Option<SeekFrom>, usize)]) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut expect: Vec<u8> = Vec::new();
        let mut at = 0usize;
        {
            let mut w = ChunkWriter::new(File::create(&path).unwrap());
            for (k, (seek, len)) in ops.iter().enumerate() {
                if let Some(s) = seek {
                    at = w.seek(*s).unwrap() as usize;
                }
                let data: Vec<u8> = (0..*len).map(|i| (i * 31 + k * 7) as u8).collect();
                w.write_all(&data).unwrap();
                if expect.len() < at + len {
                    expect.resize(at + len, 0);
                }
                expect[at..at + len].copy_from_slice(&data);
                at += len;
                assert_eq!(w.stream_position().unwrap() as usize, at);
            }
            w.into_inner().unwrap();
        }
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        (got, expect)
    }

    #[test]
    fn bytes_land_where_a_buffered_writer_puts_them() {
        let c = CHUNK as usize;
        for ops in [
            vec![(None, 100), (None, c), (None, 3 * c + 5), (None, 7)],
            vec![(None, 4 * c)],
            vec![(None, 10), (Some(SeekFrom::Start(c as u64 - 3)), 2 * c + 9)],
            vec![
                (None, c + 1),
                (Some(SeekFrom::Start(0)), 64),
                (Some(SeekFrom::End(0)), 5),
                (Some(SeekFrom::Current(-2)), 4),
            ],
            vec![(Some(SeekFrom::Start(5 * c as u64 + 17)), 40)],
        ] {
            let (got, expect) = written(&ops);
            assert_eq!(got.len(), expect.len(), "{ops:?}");
            assert!(got == expect, "{ops:?}");
        }
    }

    /// Every write to the file ends at a chunk boundary unless a flush, a seek or the end cut
    /// it: checked by the buffer never crossing one.
    #[test]
    fn buffered_bytes_never_cross_a_chunk_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ChunkWriter::new(File::create(dir.path().join("f")).unwrap());
        let mut written = 0u64;
        for len in [1usize, 4095, 1 << 20, 3 << 20, 77, 2 << 20, 5] {
            w.write_all(&vec![1u8; len]).unwrap();
            written += len as u64;
            assert!(w.pos + w.buf.len() as u64 <= ChunkWriter::boundary(w.pos));
            assert_eq!(w.pos, written / CHUNK * CHUNK, "after {len}");
        }
    }

    #[test]
    fn a_seek_before_the_start_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ChunkWriter::new(File::create(dir.path().join("f")).unwrap());
        w.write_all(b"abc").unwrap();
        assert!(w.seek(SeekFrom::Current(-4)).is_err());
        assert_eq!(w.seek(SeekFrom::Current(-1)).unwrap(), 2);
    }
}
