//! Opening an input file: decompression (gzip, zstd, bzip2, xz, detected from the magic
//! bytes) and a count of the bytes read, for progress. Every edge source reads through it.

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

/// Opens `path`, decompressing gzip/zstd/bzip2 (detected from the magic bytes).
pub fn open_input(path: &Path, count: Rc<Cell<u64>>) -> Result<Box<dyn Read>> {
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
