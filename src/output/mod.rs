//! Embedding files: `.npy` (with an ids sidecar), `.npz` and word2vec text (optionally gzipped),
//! streamed batch by batch and committed atomically (temporary files in the target's directory,
//! fsync, rename; see [`AtomicFile`]). An error or a drop before [`EmbeddingFile::close`] leaves
//! the target as it was and no temporary file behind. docs/CLI.md describes the formats.

mod npz;
pub mod text;

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::embed::job::RowSink;
use crate::error::{Error, Result};
use crate::graph::build::AtomicFile;
use crate::graph::csr::Graph;

/// The output formats by name, and the file extensions that imply them (`.gz` after a word2vec
/// extension: compressed). Parquet is written by the Python facade through pyarrow.
pub const FORMATS: [&str; 4] = ["npy", "npz", "parquet", "w2v"];
const EXTENSIONS: [(&str, &str); 8] = [
    (".npy", "npy"),
    (".npz", "npz"),
    (".parquet", "parquet"),
    (".pq", "parquet"),
    (".w2v", "w2v"),
    (".emb", "w2v"),
    (".vec", "w2v"),
    (".txt", "w2v"),
];

/// The format of an embedding file at `path` (`-`: word2vec text to stdout): the one its
/// extension implies, else `given`; a `given` format that the extension contradicts, an
/// unknown name, or neither is a parameter error.
pub fn output_format(path: &str, given: Option<&str>) -> Result<&'static str> {
    let lower = path.to_lowercase();
    let stem = lower.strip_suffix(".gz").unwrap_or(&lower);
    let implied = if path == "-" {
        Some("w2v")
    } else {
        EXTENSIONS
            .iter()
            .find(|(ext, f)| stem.ends_with(ext) && (stem.len() == lower.len() || *f == "w2v"))
            .map(|&(_, f)| f)
    };
    let known = |name: &str| FORMATS.iter().copied().find(|f| *f == name);
    match (implied, given) {
        (Some(f), Some(g)) if f != g => Err(Error::param(format!(
            "{path}: format='{g}' does not match the file's extension, which means '{f}': \
             change the extension or drop format="
        ))),
        (Some(f), _) => Ok(f),
        (None, Some(g)) => known(g).ok_or_else(|| {
            Error::param(format!(
                "format must be one of {}, got '{g}'",
                FORMATS.join(", ")
            ))
        }),
        (None, None) => Err(Error::param(format!(
            "{path}: cannot tell the output format from the extension; use .npy, .npz, \
             .parquet or .w2v/.emb/.txt, or pass format= (one of {})",
            FORMATS.join(", ")
        ))),
    }
}

/// The formats written here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Npy,
    Npz,
    W2v,
}

impl Format {
    pub fn parse(name: &str) -> Result<Format> {
        match name {
            "npy" => Ok(Format::Npy),
            "npz" => Ok(Format::Npz),
            "w2v" => Ok(Format::W2v),
            _ => Err(Error::param(format!(
                "format must be one of npy, npz, w2v here, got {name:?}"
            ))),
        }
    }
}

pub use crate::io::ids::Ids;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Str,
}

impl Kind {
    pub fn of(ids: &Ids) -> Kind {
        match ids {
            Ids::Int(_) => Kind::Int,
            Ids::Str(_) => Kind::Str,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "int",
            Kind::Str => "str",
        }
    }
}

/// The checks of every embedding writer, whatever it writes (the kernel's files or a writer
/// outside it): rows `dim` wide, ids of one kind, at most (and at close exactly) `num_rows`.
#[derive(Debug)]
pub struct RowCheck {
    pub dim: usize,
    pub num_rows: Option<u64>,
    pub rows: u64,
    pub kind: Option<Kind>,
}

impl RowCheck {
    pub fn new(dim: usize, num_rows: Option<u64>) -> Result<RowCheck> {
        if dim == 0 {
            return Err(Error::param("dim must be >= 1"));
        }
        Ok(RowCheck {
            dim,
            num_rows,
            rows: 0,
            kind: None,
        })
    }

    /// Checks a batch of `values` floats for `ids` and counts it; returns the ids' kind when
    /// this is the first batch with rows (the writer starts its ids then).
    pub fn admit(&mut self, ids: &Ids, values: usize) -> Result<Option<Kind>> {
        if values != ids.len() * self.dim {
            return Err(Error::param(format!(
                "rows must have shape ({}, {}) to match ids, got {} values",
                ids.len(),
                self.dim,
                values
            )));
        }
        if ids.is_empty() {
            return Ok(None);
        }
        if let Some(m) = self.kind_change(ids) {
            return Err(Error::input(m));
        }
        if let Some(n) = self.num_rows {
            if self.rows + ids.len() as u64 > n {
                return Err(Error::param(format!("more rows than num_rows={n}")));
            }
        }
        self.rows += ids.len() as u64;
        let first = self.kind.is_none();
        self.kind = Some(Kind::of(ids));
        Ok(first.then_some(Kind::of(ids)))
    }

    /// Why a non-empty batch of `ids` cannot follow the earlier ones: ids of another kind.
    pub fn kind_change(&self, ids: &Ids) -> Option<String> {
        let (k, new) = (self.kind?, Kind::of(ids));
        (k != new && !ids.is_empty()).then(|| {
            format!(
                "ids changed kind from {} to {} between batches",
                k.name(),
                new.name()
            )
        })
    }

    /// At close: the declared row count was written.
    pub fn finish(&self) -> Result<()> {
        match self.num_rows {
            Some(n) if self.rows != n => Err(Error::param(format!(
                "{} rows were written but num_rows={n}",
                self.rows
            ))),
            _ => Ok(()),
        }
    }
}

/// The ids file beside `path.npy`: `path.ids.npy` (int64) or `path.ids.txt` (one id a line).
pub fn sidecar_path(path: &Path, int_ids: bool) -> PathBuf {
    let p = path.as_os_str().to_string_lossy();
    let base = if p.to_lowercase().ends_with(".npy") {
        &p[..p.len() - 4]
    } else {
        &p[..]
    };
    PathBuf::from(format!(
        "{base}{}",
        if int_ids { ".ids.npy" } else { ".ids.txt" }
    ))
}

/// A `.npy` version 1.0 header for `descr` and `shape`, padded with spaces to `size` bytes when
/// given, else to the next multiple of 64.
pub fn npy_header(descr: &str, shape: &[u64], size: Option<usize>) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let fixed = 8 + 2 + dict.len() + 1;
    let size = size.unwrap_or(fixed.div_ceil(64) * 64);
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend_from_slice(&((size - 10) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(size - 1, b' ');
    h.push(b'\n');
    h
}

/// A `.npy` array written row block by row block; the header is exact when the row count is
/// known up front, else reserved for the largest count and rewritten by `finish`.
struct NpyPart {
    file: AtomicFile,
    descr: &'static str,
    width: Option<u64>,
    header_len: usize,
    declared: Option<u64>,
    rows: u64,
}

impl NpyPart {
    fn create(
        target: &Path,
        descr: &'static str,
        width: Option<u64>,
        rows: Option<u64>,
    ) -> Result<NpyPart> {
        let mut file = AtomicFile::create(target)?;
        let shape = |n: u64| -> Vec<u64> { width.map_or(vec![n], |d| vec![n, d]) };
        let header = npy_header(descr, &shape(rows.unwrap_or(i64::MAX as u64)), None);
        let tmp = file.tmp_path().to_path_buf();
        let bytes = if rows.is_some() {
            header.clone()
        } else {
            vec![0; header.len()]
        };
        file.writer()
            .write_all(&bytes)
            .map_err(|e| Error::io(&tmp, e))?;
        Ok(NpyPart {
            file,
            descr,
            width,
            header_len: header.len(),
            declared: rows,
            rows: 0,
        })
    }

    fn write(&mut self, bytes: &[u8], rows: u64) -> Result<()> {
        let tmp = self.file.tmp_path().to_path_buf();
        self.file
            .writer()
            .write_all(bytes)
            .map_err(|e| Error::io(&tmp, e))?;
        self.rows += rows;
        Ok(())
    }

    fn finish(mut self) -> Result<AtomicFile> {
        if self.declared.is_none() {
            let shape: Vec<u64> = self.width.map_or(vec![self.rows], |d| vec![self.rows, d]);
            let header = npy_header(self.descr, &shape, Some(self.header_len));
            let tmp = self.file.tmp_path().to_path_buf();
            let w = self.file.writer();
            (|| {
                w.seek(SeekFrom::Start(0))?;
                w.write_all(&header)?;
                w.seek(SeekFrom::End(0)).map(drop)
            })()
            .map_err(|e| Error::io(&tmp, e))?;
        }
        Ok(self.file)
    }
}

/// Where the ids go: an int64 `.npy` or UTF-8 lines.
enum IdsPart {
    Int(NpyPart),
    Lines(AtomicFile),
}

/// A streaming embedding file writer (see the module doc).
pub struct EmbeddingFile {
    format: Format,
    path: PathBuf,
    gzip: bool,
    check: RowCheck,
    /// The matrix (`.npy`: at `path`; `.npz`: a scratch file zipped at close).
    matrix: Option<NpyPart>,
    ids: Option<IdsPart>,
    /// word2vec text without its first line (prepended at close, when the count is known).
    body: Option<AtomicFile>,
    /// Longest string id in characters (the width of `.npz`'s `<U` ids array).
    max_id_chars: usize,
}

fn is_dir_error(path: &Path) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
    )
}

impl EmbeddingFile {
    /// A writer of `dim`-wide rows to `path`; `num_rows`, when given, is checked at close.
    pub fn create(
        path: &Path,
        format: Format,
        dim: usize,
        num_rows: Option<u64>,
    ) -> Result<EmbeddingFile> {
        let check = RowCheck::new(dim, num_rows)?;
        if path.is_dir() {
            return Err(is_dir_error(path));
        }
        let gzip = path.to_string_lossy().to_lowercase().ends_with(".gz");
        let mut w = EmbeddingFile {
            format,
            path: path.to_path_buf(),
            gzip,
            check,
            matrix: None,
            ids: None,
            body: None,
            max_id_chars: 0,
        };
        match format {
            Format::Npy => {
                w.matrix = Some(NpyPart::create(path, "<f4", Some(dim as u64), num_rows)?)
            }
            Format::Npz => {
                let scratch = w.with_suffix(".embeddings");
                w.matrix = Some(NpyPart::create(
                    &scratch,
                    "<f4",
                    Some(dim as u64),
                    num_rows,
                )?);
            }
            Format::W2v => w.body = Some(AtomicFile::create(w.with_suffix(".body"))?),
        }
        Ok(w)
    }

    fn with_suffix(&self, suffix: &str) -> PathBuf {
        let mut s = self.path.clone().into_os_string();
        s.push(suffix);
        PathBuf::from(s)
    }

    /// The rows written so far, the ids' kind, `dim` and `num_rows`.
    pub fn check(&self) -> &RowCheck {
        &self.check
    }

    /// Appends `rows` (row-major, `dim` wide): `rows[i]` embeds `ids[i]`.
    pub fn write(&mut self, ids: &Ids, rows: &[f32]) -> Result<()> {
        if let Ids::Str(v) = ids {
            match self.format {
                Format::W2v => text::check_word(v)?,
                Format::Npy | Format::Npz => text::check_lines(v)?,
            }
        }
        if let Some(kind) = self.check.admit(ids, rows.len())? {
            self.start_ids(kind)?;
        }
        if ids.is_empty() {
            return Ok(());
        }
        match self.format {
            Format::W2v => {
                let body = self.body.as_mut().expect("w2v writer has a body");
                let tmp = body.tmp_path().to_path_buf();
                text::write_rows(body.writer(), ids, rows, self.check.dim)
                    .map_err(|e| Error::io(&tmp, e))?;
            }
            Format::Npy | Format::Npz => {
                self.write_ids(ids)?;
                let bytes: Vec<u8> = rows.iter().flat_map(|x| x.to_le_bytes()).collect();
                self.matrix
                    .as_mut()
                    .expect("npy writer has a matrix")
                    .write(&bytes, ids.len() as u64)?;
            }
        }
        Ok(())
    }

    fn start_ids(&mut self, kind: Kind) -> Result<()> {
        let target = match self.format {
            Format::Npy => sidecar_path(&self.path, kind == Kind::Int),
            Format::Npz => self.with_suffix(".ids"),
            Format::W2v => return Ok(()),
        };
        self.ids = Some(match kind {
            Kind::Int => IdsPart::Int(NpyPart::create(&target, "<i8", None, self.check.num_rows)?),
            Kind::Str => IdsPart::Lines(AtomicFile::create(&target)?),
        });
        Ok(())
    }

    fn write_ids(&mut self, ids: &Ids) -> Result<()> {
        match (self.ids.as_mut().expect("ids started"), ids) {
            (IdsPart::Int(part), Ids::Int(v)) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                part.write(&bytes, v.len() as u64)
            }
            (IdsPart::Lines(f), Ids::Str(v)) => {
                let tmp = f.tmp_path().to_path_buf();
                let w = f.writer();
                for s in v {
                    self.max_id_chars = self.max_id_chars.max(s.chars().count());
                    w.write_all(s.as_bytes()).map_err(|e| Error::io(&tmp, e))?;
                    w.write_all(b"\n").map_err(|e| Error::io(&tmp, e))?;
                }
                Ok(())
            }
            _ => unreachable!("the ids part follows the first batch's kind"),
        }
    }

    /// Finishes the file and moves it into place. On an error, nothing is left behind.
    pub fn close(mut self) -> Result<()> {
        self.check.finish()?;
        if self.check.kind.is_none() && self.format != Format::W2v {
            // No rows: an empty int64 id list.
            self.check.kind = Some(Kind::Int);
            self.start_ids(Kind::Int)?;
        }
        match self.format {
            Format::Npy => self.close_npy(),
            Format::Npz => self.close_npz(),
            Format::W2v => self.close_w2v(),
        }
    }

    fn close_npy(mut self) -> Result<()> {
        let int = self.check.kind == Some(Kind::Int);
        let ids = match self.ids.take().expect("ids started") {
            IdsPart::Int(p) => p.finish()?,
            IdsPart::Lines(f) => f,
        };
        let mut ids = ids;
        let mut matrix = self
            .matrix
            .take()
            .expect("npy writer has a matrix")
            .finish()?;
        // Both durable before either is renamed (a full disk fails here, leaving nothing);
        // then the sidecar first: a matrix in place always has its ids.
        ids.sync()?;
        matrix.sync()?;
        ids.commit()?;
        matrix.commit()?;
        match std::fs::remove_file(sidecar_path(&self.path, !int)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io(sidecar_path(&self.path, !int), e))
            }
            _ => Ok(()),
        }
    }

    fn close_npz(mut self) -> Result<()> {
        let mut ids = match self.ids.take().expect("ids started") {
            IdsPart::Int(p) => p.finish()?,
            IdsPart::Lines(f) => f,
        };
        let mut matrix = self
            .matrix
            .take()
            .expect("npz writer has a matrix")
            .finish()?;
        let mut out = AtomicFile::create(&self.path)?;
        let tmp = out.tmp_path().to_path_buf();
        let rows = self.check.rows;
        let width = self.max_id_chars.max(1);
        let str_ids = self.check.kind == Some(Kind::Str);
        (|| -> std::io::Result<()> {
            let mut zip = npz::Writer::new(out.writer());
            let ids_src = reopen(&mut ids)?;
            if str_ids {
                let header = npy_header(&format!("<U{width}"), &[rows], None);
                let len = header.len() as u64 + rows * 4 * width as u64;
                zip.entry("ids.npy", len, |w| {
                    w.write_all(&header)?;
                    utf32_ids(BufReader::new(ids_src), width, w)
                })?;
            } else {
                let len = ids_src.metadata()?.len();
                zip.entry("ids.npy", len, |w| {
                    std::io::copy(&mut BufReader::new(ids_src), w).map(drop)
                })?;
            }
            let m = reopen(&mut matrix)?;
            let len = m.metadata()?.len();
            zip.entry("embeddings.npy", len, |w| {
                std::io::copy(&mut BufReader::new(m), w).map(drop)
            })?;
            zip.finish()
        })()
        .map_err(|e| Error::io(&tmp, e))?;
        out.commit()
        // `ids` and `matrix` are scratch files: dropped (removed) here.
    }

    fn close_w2v(mut self) -> Result<()> {
        let mut body = self.body.take().expect("w2v writer has a body");
        let mut out = AtomicFile::create(&self.path)?;
        let tmp = out.tmp_path().to_path_buf();
        let header = format!("{} {}\n", self.check.rows, self.check.dim);
        let gzip = self.gzip;
        (|| -> std::io::Result<()> {
            let mut src = BufReader::with_capacity(1 << 20, reopen(&mut body)?);
            if gzip {
                let mut gz =
                    flate2::GzBuilder::new().write(out.writer(), flate2::Compression::default());
                gz.write_all(header.as_bytes())?;
                std::io::copy(&mut src, &mut gz)?;
                gz.finish()?;
            } else {
                let w = out.writer();
                w.write_all(header.as_bytes())?;
                std::io::copy(&mut src, w)?;
            }
            Ok(())
        })()
        .map_err(|e| Error::io(&tmp, e))?;
        out.commit()
    }
}

/// The finished temporary file of `part`, opened for reading from its start.
fn reopen(part: &mut AtomicFile) -> std::io::Result<File> {
    part.writer().flush()?;
    File::open(part.tmp_path())
}

/// Lines of UTF-8 ids as NumPy `<U{width}` items (UTF-32LE, zero-padded).
fn utf32_ids(src: impl BufRead, width: usize, w: &mut dyn Write) -> std::io::Result<()> {
    let mut item = Vec::with_capacity(4 * width);
    for line in src.lines() {
        item.clear();
        for c in line?.chars() {
            item.extend_from_slice(&(c as u32).to_le_bytes());
        }
        item.resize(4 * width, 0);
        w.write_all(&item)?;
    }
    Ok(())
}

/// A [`RowSink`] that writes the external ids of the embedded nodes with their rows.
impl RowSink for EmbeddingFile {
    fn write(&mut self, graph: &Graph, nodes: &[u32], rows: &[f32]) -> Result<()> {
        let ids = Ids::of_nodes(graph, nodes)?;
        EmbeddingFile::write(self, &ids, rows)
    }
}

pub use text::{check_word as check_word2vec_ids, format_g9, write_rows as write_word2vec_rows};

#[cfg(test)]
mod tests;
