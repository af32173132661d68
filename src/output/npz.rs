//! The `.npz` container: a ZIP archive of stored (uncompressed) `.npy` members, always with
//! ZIP64 fields so that members and offsets may exceed 4 GiB. Timestamps are fixed (1980-01-01),
//! so the same rows give the same bytes.

use std::io::{Seek, SeekFrom, Write};

const VERSION: u16 = 45; // ZIP64
const DOS_DATE: u16 = (1 << 5) | 1; // 1980-01-01
const FULL: u32 = u32::MAX;

struct Member {
    name: &'static str,
    crc: u32,
    len: u64,
    offset: u64,
}

/// Writes members one after the other, then the central directory at `finish`.
pub struct Writer<W: Write + Seek> {
    out: W,
    members: Vec<Member>,
}

/// Counts bytes and their CRC-32 on their way to `inner`.
struct Crc<'a, W: Write> {
    inner: &'a mut W,
    crc: flate2::Crc,
}

impl<W: Write> Write for Crc<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write + Seek> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer {
            out,
            members: Vec::new(),
        }
    }

    /// A member of exactly `len` bytes, written by `body`; its CRC is patched in afterwards.
    pub fn entry(
        &mut self,
        name: &'static str,
        len: u64,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let offset = self.out.stream_position()?;
        let mut h = Vec::with_capacity(50);
        h.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        h.extend_from_slice(&VERSION.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes()); // flags
        h.extend_from_slice(&0u16.to_le_bytes()); // stored
        h.extend_from_slice(&0u16.to_le_bytes()); // time
        h.extend_from_slice(&DOS_DATE.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes()); // CRC, patched below
        h.extend_from_slice(&FULL.to_le_bytes());
        h.extend_from_slice(&FULL.to_le_bytes());
        h.extend_from_slice(&(name.len() as u16).to_le_bytes());
        h.extend_from_slice(&20u16.to_le_bytes());
        h.extend_from_slice(name.as_bytes());
        h.extend_from_slice(&1u16.to_le_bytes()); // ZIP64 extra: sizes
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        let start = self.out.stream_position()?;
        let mut w = Crc {
            inner: &mut self.out,
            crc: flate2::Crc::new(),
        };
        body(&mut w)?;
        let crc = w.crc.sum();
        let end = self.out.stream_position()?;
        if end - start != len {
            return Err(std::io::Error::other(format!(
                "npz member {name}: {} bytes written, {len} expected",
                end - start
            )));
        }
        self.out.seek(SeekFrom::Start(offset + 14))?;
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.seek(SeekFrom::Start(end))?;
        self.members.push(Member {
            name,
            crc,
            len,
            offset,
        });
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<()> {
        let cd_start = self.out.stream_position()?;
        for m in &self.members {
            let mut h = Vec::with_capacity(80);
            h.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            h.extend_from_slice(&VERSION.to_le_bytes()); // made by
            h.extend_from_slice(&VERSION.to_le_bytes()); // needed
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            h.extend_from_slice(&DOS_DATE.to_le_bytes());
            h.extend_from_slice(&m.crc.to_le_bytes());
            h.extend_from_slice(&FULL.to_le_bytes());
            h.extend_from_slice(&FULL.to_le_bytes());
            h.extend_from_slice(&(m.name.len() as u16).to_le_bytes());
            h.extend_from_slice(&28u16.to_le_bytes()); // extra
            h.extend_from_slice(&0u16.to_le_bytes()); // comment
            h.extend_from_slice(&0u16.to_le_bytes()); // disk
            h.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
            h.extend_from_slice(&(0o600u32 << 16).to_le_bytes()); // rw-------
            h.extend_from_slice(&FULL.to_le_bytes()); // offset: in the extra
            h.extend_from_slice(m.name.as_bytes());
            h.extend_from_slice(&1u16.to_le_bytes());
            h.extend_from_slice(&24u16.to_le_bytes());
            h.extend_from_slice(&m.len.to_le_bytes());
            h.extend_from_slice(&m.len.to_le_bytes());
            h.extend_from_slice(&m.offset.to_le_bytes());
            self.out.write_all(&h)?;
        }
        let cd_end = self.out.stream_position()?;
        let n = self.members.len() as u64;
        let mut t = Vec::with_capacity(98);
        t.extend_from_slice(&0x0606_4b50u32.to_le_bytes()); // ZIP64 end of central directory
        t.extend_from_slice(&44u64.to_le_bytes());
        t.extend_from_slice(&VERSION.to_le_bytes());
        t.extend_from_slice(&VERSION.to_le_bytes());
        t.extend_from_slice(&0u32.to_le_bytes());
        t.extend_from_slice(&0u32.to_le_bytes());
        t.extend_from_slice(&n.to_le_bytes());
        t.extend_from_slice(&n.to_le_bytes());
        t.extend_from_slice(&(cd_end - cd_start).to_le_bytes());
        t.extend_from_slice(&cd_start.to_le_bytes());
        t.extend_from_slice(&0x0706_4b50u32.to_le_bytes()); // its locator
        t.extend_from_slice(&0u32.to_le_bytes());
        t.extend_from_slice(&cd_end.to_le_bytes());
        t.extend_from_slice(&1u32.to_le_bytes());
        t.extend_from_slice(&0x0605_4b50u32.to_le_bytes()); // end of central directory
        t.extend_from_slice(&0u16.to_le_bytes());
        t.extend_from_slice(&0u16.to_le_bytes());
        t.extend_from_slice(&(n as u16).to_le_bytes());
        t.extend_from_slice(&(n as u16).to_le_bytes());
        t.extend_from_slice(&FULL.to_le_bytes());
        t.extend_from_slice(&FULL.to_le_bytes());
        t.extend_from_slice(&0u16.to_le_bytes());
        self.out.write_all(&t)
    }
}
