//! Opening an input file: decompression (gzip, zstd, bzip2, xz, detected from the magic
//! bytes), UTF-16 text (with its byte order mark, as Excel's "Unicode Text" is written)
//! decoded to UTF-8, and a count of the bytes read, for progress. Every edge source reads
//! through it.

use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use crate::error::{Error, Result};

struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.count.set(self.count.get() + k as u64);
        Ok(k)
    }
}

/// UTF-16 text decoded to UTF-8; unpaired surrogates become U+FFFD (then refused as ids
/// that are not valid text would be, by what reads them).
struct Utf16<R> {
    inner: R,
    big_endian: bool,
    raw: Vec<u8>,
    out: Vec<u8>,
    at: usize,
    /// A high surrogate waiting for its pair across reads.
    high: Option<u16>,
}

impl<R: Read> Utf16<R> {
    fn refill(&mut self) -> std::io::Result<bool> {
        self.out.clear();
        self.at = 0;
        let keep = self.raw.len();
        self.raw.resize(keep + (1 << 16), 0);
        let k = loop {
            match self.inner.read(&mut self.raw[keep..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                r => break r?,
            }
        };
        self.raw.truncate(keep + k);
        let end = if k == 0 {
            self.raw.len()
        } else {
            self.raw.len() & !1
        };
        let mut units = Vec::with_capacity(end / 2 + 1);
        units.extend(self.high.take());
        for c in self.raw[..end].chunks(2) {
            units.push(match (c, self.big_endian) {
                ([a, b], true) => u16::from_be_bytes([*a, *b]),
                ([a, b], false) => u16::from_le_bytes([*a, *b]),
                _ => 0xFFFD, // an odd byte at the end of the file
            });
        }
        self.raw.drain(..end);
        if k > 0 && units.last().is_some_and(|u| (0xD800..0xDC00).contains(u)) {
            self.high = units.pop();
        }
        for ch in char::decode_utf16(units) {
            let ch = ch.unwrap_or(char::REPLACEMENT_CHARACTER);
            let mut b = [0u8; 4];
            self.out
                .extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
        }
        Ok(k > 0 || !self.out.is_empty())
    }
}

impl<R: Read> Read for Utf16<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            if !self.refill()? {
                return Ok(0);
            }
        }
        let k = buf.len().min(self.out.len() - self.at);
        buf[..k].copy_from_slice(&self.out[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

/// Opens `path`, decompressing gzip/zstd/bzip2/xz (detected from the magic bytes) and decoding
/// UTF-16 text (detected from its byte order mark, which becomes UTF-8's).
pub fn open_input(path: &Path, count: Rc<Cell<u64>>) -> Result<Box<dyn Read>> {
    let mut r = BufReader::with_capacity(1 << 16, decompressed(path, count)?);
    let head = r.fill_buf().map_err(|e| Error::io(path, e))?;
    let big_endian = match head {
        [0xFF, 0xFE, ..] => false,
        [0xFE, 0xFF, ..] => true,
        _ => return Ok(Box::new(r)),
    };
    Ok(Box::new(Utf16 {
        inner: r,
        big_endian,
        raw: Vec::new(),
        out: Vec::new(),
        at: 0,
        high: None,
    }))
}

fn decompressed(path: &Path, count: Rc<Cell<u64>>) -> Result<Box<dyn Read>> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    if f.metadata().map_err(|e| Error::io(path, e))?.is_dir() {
        return Err(Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
        ));
    }
    let mut r = BufReader::with_capacity(1 << 20, Counting { inner: f, count });
    let head = r.fill_buf().map_err(|e| Error::io(path, e))?.to_vec();
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::bufread::MultiGzDecoder::new(r))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(zstd::stream::read::Decoder::with_buffer(r).map_err(|e| Error::io(path, e))?)
    } else if head.starts_with(b"BZh") {
        Box::new(bzip2::bufread::MultiBzDecoder::new(r))
    } else if head.starts_with(b"\xfd7zXZ\x00") {
        Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(r))
    } else {
        Box::new(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.txt");
        std::fs::write(&p, bytes).unwrap();
        let mut out = Vec::new();
        open_input(&p, Rc::new(Cell::new(0)))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn utf16_text_is_read_as_utf8() {
        // Excel's "Unicode Text": UTF-16 LE with a byte order mark, TAB-separated, CRLF.
        let text = "\u{feff}source\ttarget\r\nZürich\t\u{1F600}\r\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(read_all(&le), text.as_bytes());
        assert_eq!(read_all(&be), text.as_bytes());
        // Long enough to split surrogate pairs across reads.
        let long: String = std::iter::once('\u{feff}')
            .chain(std::iter::repeat_n('\u{1F600}', 70_000))
            .collect();
        let le: Vec<u8> = long.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(read_all(&le), long.as_bytes());
        // Not UTF-16: bytes as they are.
        assert_eq!(read_all(b"a\tb\n"), b"a\tb\n");
    }
}
