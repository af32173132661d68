//! Text edge lists -> graph file, through the out-of-core builder (`external.rs`).
//!
//! One edge per line: `src dst [weight]` (columns chosen by index), fields separated by runs of
//! spaces/tabs, by tabs, or by commas (detected per file from its first data line unless given).
//! Blank lines and lines whose first non-blank character is a comment character (`#`, `%`) are
//! skipped, as are the first `skip_lines` lines of every file (headers). Inputs may be plain,
//! gzip (also multi-member/bgzip), zstd or bzip2 files, detected from their first bytes. Every
//! data line of a file must have the same number of fields.
//!
//! Every problem is an `Error::Format` naming the file, the line number and the offending line:
//! malformed line, wrong column count, non-numeric/NaN/inf/negative/zero weight, id overflow,
//! invalid UTF-8 in a string id, no edges at all.

use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::external::{
    check_weight, BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn,
};

/// How fields are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delimiter {
    /// Runs of spaces and tabs.
    Whitespace,
    /// One byte (tab, comma, semicolon, ...); spaces around fields are trimmed.
    Byte(u8),
}

impl Delimiter {
    pub fn parse(s: &str) -> Result<Delimiter> {
        match s {
            "whitespace" | "space" | " " => Ok(Delimiter::Whitespace),
            "tab" | "\t" | "\\t" => Ok(Delimiter::Byte(b'\t')),
            "comma" | "," => Ok(Delimiter::Byte(b',')),
            s if s.len() == 1 && s.as_bytes()[0].is_ascii_punctuation() => {
                Ok(Delimiter::Byte(s.as_bytes()[0]))
            }
            other => Err(Error::param(format!(
                "delimiter must be 'whitespace', 'tab', 'comma' or one punctuation character, got {other:?}"
            ))),
        }
    }
}

/// Text options of [`convert_text`].
#[derive(Clone, Debug)]
pub struct TextOptions {
    /// `None`: per file, tab if the first data line has a tab, else comma if it has a comma,
    /// else whitespace.
    pub delimiter: Option<Delimiter>,
    /// Characters that start a comment line.
    pub comment: Vec<u8>,
    /// Lines skipped at the start of every file (headers).
    pub skip_lines: u64,
    pub src_col: usize,
    pub dst_col: usize,
    /// Weight column; for a weighted build it defaults to 2 (the third column).
    pub weight_col: Option<usize>,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            delimiter: None,
            comment: b"#%".to_vec(),
            skip_lines: 0,
            src_col: 0,
            dst_col: 1,
            weight_col: None,
        }
    }
}

/// What the reader saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextStats {
    /// Bytes read from the input files (compressed size for compressed files).
    pub input_bytes: u64,
    /// Lines read (all files, the last pass when the id kind had to be re-detected).
    pub lines: u64,
    /// Lines that held an edge.
    pub edge_lines: u64,
    /// 2 when `id_kind` "auto" met a non-integer id after integer edges and re-read the input
    /// as strings.
    pub passes: u32,
}

const BLOCK: usize = 1 << 22;
const MAX_SHOWN: usize = 200;

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
fn open_input(path: &Path, count: Rc<Cell<u64>>) -> Result<Box<dyn Read>> {
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
    } else {
        Box::new(r)
    })
}

enum IntTok {
    Int(i64),
    NotInt,
    Overflow,
}

#[inline]
fn parse_int(t: &[u8]) -> IntTok {
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() {
        return IntTok::NotInt;
    }
    let mut v: u64 = 0;
    let mut over = false;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return IntTok::NotInt;
        }
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(d))) {
            Some(x) => v = x,
            None => over = true,
        }
    }
    if over {
        return IntTok::Overflow;
    }
    if neg {
        if v > 1u64 << 63 {
            IntTok::Overflow
        } else {
            IntTok::Int((v as i64).wrapping_neg())
        }
    } else if v > i64::MAX as u64 {
        IntTok::Overflow
    } else {
        IntTok::Int(v as i64)
    }
}

/// Python-style single-quoted text for messages.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('\'');
    for c in s.chars() {
        match c {
            '\'' => q.push_str("\\'"),
            '\\' => q.push_str("\\\\"),
            '\t' => q.push_str("\\t"),
            c if c.is_control() => q.push_str(&c.escape_default().to_string()),
            c => q.push(c),
        }
    }
    q.push('\'');
    q
}

fn quote_bytes(t: &[u8]) -> String {
    quote(&String::from_utf8_lossy(t))
}

#[inline]
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn trim(mut t: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = t {
        if is_blank(*first) {
            t = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = t {
        if is_blank(*last) {
            t = rest;
        } else {
            break;
        }
    }
    t
}

/// Parse state of one file.
struct FileParser<'a> {
    name: &'a str,
    opts: &'a TextOptions,
    ids: IdMode,
    weighted: bool,
    weight_col: usize,
    need: usize,
    delim: Option<Delimiter>,
    ncols: Option<(usize, u64)>,
    line_no: u64,
    edge_lines: u64,
}

enum Flow {
    Go,
    /// Auto ids met a non-integer: restart reading with string ids.
    NeedStr,
}

impl FileParser<'_> {
    fn err(&self, line: &[u8], msg: impl std::fmt::Display) -> Error {
        let text = String::from_utf8_lossy(line);
        let shown: String = text.chars().take(MAX_SHOWN).collect();
        let more = if shown.len() < text.len() { "..." } else { "" };
        Error::format(format!(
            "{}:{}: {msg}: {}{more}",
            self.name,
            self.line_no,
            quote(&shown)
        ))
    }

    /// Splits `line` into fields; stores src/dst/weight fields and returns the field count.
    #[inline]
    fn split<'l>(&self, line: &'l [u8], f: &mut [&'l [u8]; 3]) -> usize {
        let want = [self.opts.src_col, self.opts.dst_col, self.weight_col];
        let mut k = 0usize;
        let mut store = |k: usize, t: &'l [u8]| {
            for (slot, &w) in f.iter_mut().zip(&want) {
                if w == k {
                    *slot = t;
                }
            }
        };
        match self.delim.unwrap_or(Delimiter::Whitespace) {
            Delimiter::Whitespace => {
                let mut i = 0;
                let n = line.len();
                loop {
                    while i < n && is_blank(line[i]) {
                        i += 1;
                    }
                    if i >= n {
                        break;
                    }
                    let s = i;
                    while i < n && !is_blank(line[i]) {
                        i += 1;
                    }
                    store(k, &line[s..i]);
                    k += 1;
                }
            }
            Delimiter::Byte(c) => {
                for t in line.split(|&b| b == c) {
                    store(k, trim(t));
                    k += 1;
                }
            }
        }
        k
    }

    #[inline]
    fn line(&mut self, b: &mut ExternalBuilder, raw: &[u8]) -> Result<Flow> {
        self.line_no += 1;
        let mut line = raw;
        if self.line_no == 1 {
            line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line);
        }
        if self.line_no <= self.opts.skip_lines {
            return Ok(Flow::Go);
        }
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        let first = match line.iter().position(|&c| !is_blank(c)) {
            None => return Ok(Flow::Go),
            Some(i) => line[i],
        };
        if self.opts.comment.contains(&first) {
            return Ok(Flow::Go);
        }
        if self.delim.is_none() {
            self.delim = Some(if line.contains(&b'\t') {
                Delimiter::Byte(b'\t')
            } else if line.contains(&b',') {
                Delimiter::Byte(b',')
            } else {
                Delimiter::Whitespace
            });
        }
        let mut f: [&[u8]; 3] = [&[], &[], &[]];
        let k = self.split(line, &mut f);
        match self.ncols {
            None => {
                if k < self.need {
                    return Err(self.err(
                        raw,
                        format!(
                            "found {k} column(s), but the column options need at least {}",
                            self.need
                        ),
                    ));
                }
                self.ncols = Some((k, self.line_no));
            }
            Some((c, at)) if c != k => {
                return Err(self.err(raw, format!("found {k} columns, but line {at} has {c}")));
            }
            _ => {}
        }
        let w = if self.weighted {
            let t = f[2];
            let x = std::str::from_utf8(t)
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .ok_or_else(|| self.err(raw, format!("non-numeric weight {}", quote_bytes(t))))?;
            let why = if x.is_nan() {
                Some("is NaN")
            } else if x.is_infinite() {
                Some("is infinite")
            } else if x <= 0.0 {
                Some("is <= 0")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(self.err(raw, format!("weight {} {why}", quote_bytes(t))));
            }
            check_weight(x).map_err(|_| {
                self.err(
                    raw,
                    format!("weight {} is outside the float32 range", quote_bytes(t)),
                )
            })?
        } else {
            1.0
        };
        let r = match self.ids {
            IdMode::Str => {
                let s = std::str::from_utf8(f[0]);
                let d = std::str::from_utf8(f[1]);
                match (s, d) {
                    (Ok(s), Ok(d)) => b.push_str(s, d, w),
                    _ => return Err(self.err(raw, "node id is not valid UTF-8")),
                }
            }
            mode => {
                let mut v = [0i64; 2];
                for (slot, t) in v.iter_mut().zip(&f[..2]) {
                    match parse_int(t) {
                        IntTok::Int(x) => *slot = x,
                        IntTok::Overflow => {
                            return Err(self.err(
                                raw,
                                format!(
                                    "id {} overflows int64 (use id_kind='str' to keep such ids as strings)",
                                    String::from_utf8_lossy(t)
                                ),
                            ))
                        }
                        IntTok::NotInt if mode == IdMode::Auto => return Ok(Flow::NeedStr),
                        IntTok::NotInt => {
                            return Err(self.err(
                                raw,
                                format!(
                                    "id {} is not an integer (id_kind={})",
                                    quote_bytes(t),
                                    if mode == IdMode::Int { "'int'" } else { "'implicit'" }
                                ),
                            ))
                        }
                    }
                }
                b.push_int(v[0], v[1], w)
            }
        };
        match r {
            Ok(()) => {}
            Err(Error::InvalidInput(m)) => return Err(self.err(raw, m)),
            Err(e) => return Err(e),
        }
        self.edge_lines += 1;
        Ok(Flow::Go)
    }
}

/// Reads every input into `b`. Returns `Flow::NeedStr` when auto ids must restart as strings.
fn read_all(
    inputs: &[PathBuf],
    b: &mut ExternalBuilder,
    text: &TextOptions,
    ids: IdMode,
    weight_col: Option<usize>,
    stats: &mut TextStats,
    report: &dyn Fn(u64) -> bool,
) -> Result<Flow> {
    let weighted = b.options().weighted;
    let need = 1 + text.src_col.max(text.dst_col).max(weight_col.unwrap_or(0));
    let mut before = 0u64;
    let mut buf = vec![0u8; BLOCK];
    for path in inputs {
        let name = path.display().to_string();
        let count = Rc::new(Cell::new(0u64));
        let mut r = open_input(path, count.clone())?;
        let mut p = FileParser {
            name: &name,
            opts: text,
            ids,
            weighted,
            weight_col: weight_col.unwrap_or(usize::MAX),
            need,
            delim: text.delimiter,
            ncols: None,
            line_no: 0,
            edge_lines: 0,
        };
        let (mut start, mut end) = (0usize, 0usize);
        loop {
            if start > 0 {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            }
            if end == buf.len() {
                buf.resize(buf.len() * 2, 0); // a line longer than the block
            }
            let k = loop {
                match r.read(&mut buf[end..]) {
                    Ok(k) => break k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::InvalidData
                                | std::io::ErrorKind::InvalidInput
                                | std::io::ErrorKind::UnexpectedEof
                        ) || e.kind() == std::io::ErrorKind::Other =>
                    {
                        return Err(Error::format(format!(
                            "{name}: corrupt or truncated compressed data after line {}: {e}",
                            p.line_no
                        )))
                    }
                    Err(e) => return Err(Error::io(path, e)),
                }
            };
            end += k;
            let data = &buf[..end];
            let mut pos = start;
            while let Some(nl) = memchr::memchr(b'\n', &data[pos..]) {
                if let Flow::NeedStr = p.line(b, &data[pos..pos + nl])? {
                    return Ok(Flow::NeedStr);
                }
                pos += nl + 1;
            }
            if k == 0 {
                if pos < end {
                    if let Flow::NeedStr = p.line(b, &data[pos..end])? {
                        return Ok(Flow::NeedStr);
                    }
                }
                break;
            }
            start = pos;
            if !report(before + count.get()) {
                return Err(Error::Cancelled);
            }
        }
        before += count.get();
        stats.lines += p.line_no;
        stats.edge_lines += p.edge_lines;
    }
    stats.input_bytes = before;
    Ok(Flow::Go)
}

/// Converts text edge lists into a graph file at `output` (atomically: on any error nothing is
/// left at `output` and the temporary files are removed).
///
/// `build.ids` is `Auto` for "int ids if every id is an integer (implicit when they are exactly
/// `0..n-1`), else string ids"; an id that is not an integer after integer ones makes the reader
/// start again in string mode (the rest of the file is read twice). `progress(done, total)`:
/// bytes of input read (compressed bytes for compressed files) out of the inputs' total size;
/// while the graph is sorted and written it is called with `(total, total)`.
pub fn convert_text(
    inputs: &[PathBuf],
    output: &Path,
    text: &TextOptions,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, TextStats)> {
    if inputs.is_empty() {
        return Err(Error::param("no input files given"));
    }
    let weight_col = match (build.weighted, text.weight_col) {
        (true, None) => Some(2),
        (true, Some(c)) => Some(c),
        (false, None) => None,
        (false, Some(_)) => {
            return Err(Error::param(
                "weight_col is given but weighted is False; pass weighted=True to read weights",
            ))
        }
    };
    if text.src_col == text.dst_col
        || weight_col.is_some_and(|w| w == text.src_col || w == text.dst_col)
    {
        return Err(Error::param(
            "src_col, dst_col and weight_col must be different columns",
        ));
    }
    let mut total = 0u64;
    for p in inputs {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        total += meta.len();
    }
    let total = total.max(1);
    let mut ids = build.ids;
    if ids == IdMode::Auto && build.num_nodes.is_some() {
        ids = IdMode::Implicit;
    }
    let mut passes = 1;
    loop {
        let mut stats = TextStats {
            passes,
            ..TextStats::default()
        };
        let mut b = ExternalBuilder::new(
            output,
            BuildOptions {
                ids,
                ..build.clone()
            },
        )?;
        let report = |done: u64| progress.is_none_or(|h| h(done.min(total), total));
        match read_all(inputs, &mut b, text, ids, weight_col, &mut stats, &report)? {
            Flow::NeedStr => {
                // Re-read as strings (only a second pass if integer edges were already read).
                if b.input_edges() > 0 {
                    passes += 1;
                }
                drop(b);
                ids = IdMode::Str;
                continue;
            }
            Flow::Go => {}
        }
        if stats.edge_lines == 0 {
            let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
            return Err(Error::format(format!(
                "{}: no edges found (the input is empty, or every line is blank, a comment or skipped)",
                names.join(", ")
            )));
        }
        // Sorting and writing report (total, total): the input is read; the calls keep
        // Ctrl-C (and callback exceptions) working.
        let finish_hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
        let st = b.finish(Some(&finish_hook))?;
        return Ok((st, stats));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{build_in_memory, csr_from_edges, IdTable, Merge};
    use crate::csr::Graph;
    use std::io::Write;

    fn conv(
        dir: &Path,
        files: &[(&str, &[u8])],
        text: &TextOptions,
        build: &BuildOptions,
    ) -> Result<(Graph, BuildStats, TextStats)> {
        let paths: Vec<PathBuf> = files
            .iter()
            .map(|(n, c)| {
                let p = dir.join(n);
                std::fs::write(&p, c).unwrap();
                p
            })
            .collect();
        let out = dir.join("out.graph");
        let (b, t) = convert_text(&paths, &out, text, build, None)?;
        let g = Graph::open(&out).unwrap();
        g.validate().unwrap();
        Ok((g, b, t))
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn parses_snap_style_and_compressed_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let body =
            b"# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n1\t2\r\n\n  % note\n2\t0\n2\t0";
        let reference = {
            let p = csr_from_edges(
                3,
                &[0, 1, 2, 2],
                &[1, 2, 0, 0],
                None,
                false,
                Merge::Sum,
                IdTable::Implicit,
            )
            .unwrap();
            build_in_memory(&p).unwrap()
        };
        let zst = zstd::encode_all(&body[..], 1).unwrap();
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(body).unwrap();
        let bz = bz.finish().unwrap();
        let mut two_members = gz(&body[..40]);
        two_members.extend(gz(&body[40..]));
        for content in [body.to_vec(), gz(body), zst, bz, two_members] {
            let (g, b, t) = conv(
                dir.path(),
                &[("e.txt", &content)],
                &TextOptions::default(),
                &BuildOptions::default(),
            )
            .unwrap();
            assert_eq!(g.image(), reference.image());
            assert_eq!(
                (b.num_edges, b.duplicates_merged, t.edge_lines, t.lines),
                (3, 1, 4, 8)
            );
        }
    }

    #[test]
    fn csv_with_header_weights_and_string_ids() {
        let dir = tempfile::tempdir().unwrap();
        let csv = b"src,dst,w\nalice, bob ,2.5\nbob,carol,1\n";
        let text = TextOptions {
            skip_lines: 1,
            ..TextOptions::default()
        };
        let build = BuildOptions {
            weighted: true,
            directed: true,
            ..BuildOptions::default()
        };
        let (g, b, _) = conv(dir.path(), &[("e.csv", csv)], &text, &build).unwrap();
        assert_eq!((b.id_kind, b.num_nodes, b.num_edges), ("utf8", 3, 2));
        let a = g.lookup_str("alice").unwrap().unwrap();
        assert_eq!(g.weights(a).unwrap().unwrap(), &[2.5]);
        // Int ids then a string id: restart in string mode.
        let (g, _, t) = conv(
            dir.path(),
            &[("a.txt", b"1 2\n2 3\n"), ("b.txt", b"3 x\n")],
            &TextOptions::default(),
            &BuildOptions::default(),
        )
        .unwrap();
        assert_eq!((t.passes, g.id_kind()), (2, crate::format::IdKind::Utf8));
        assert!(g.lookup_str("x").unwrap().is_some());
        // Sparse int ids, custom columns, several files.
        let text = TextOptions {
            src_col: 2,
            dst_col: 0,
            delimiter: Some(Delimiter::Whitespace),
            ..TextOptions::default()
        };
        let (g, b, _) = conv(
            dir.path(),
            &[("a.txt", b"-5 x 10\n"), ("b.txt", b"7 y 10\n")],
            &text,
            &BuildOptions {
                directed: true,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        assert_eq!((b.id_kind, b.num_nodes), ("int64", 3));
        assert_eq!(g.int_ids().unwrap(), vec![-5, 7, 10]);
        assert_eq!(g.neighbors(2).unwrap(), &[0, 1]);
    }

    #[test]
    fn errors_name_file_line_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let w = BuildOptions {
            weighted: true,
            ..BuildOptions::default()
        };
        let d = BuildOptions::default();
        let t = TextOptions::default();
        let cases: Vec<(&[u8], BuildOptions, TextOptions, &str)> = vec![
            (
                b"1 2\n3\n",
                d.clone(),
                t.clone(),
                ":2: found 1 columns, but line 1 has 2: '3'",
            ),
            (
                b"1\n",
                d.clone(),
                t.clone(),
                ":1: found 1 column(s), but the column options need at least 2",
            ),
            (
                b"# c\n1 2 x\n",
                w.clone(),
                t.clone(),
                ":2: non-numeric weight 'x'",
            ),
            (
                b"1 2 nan\n",
                w.clone(),
                t.clone(),
                ":1: weight 'nan' is NaN",
            ),
            (
                b"1 2 inf\n",
                w.clone(),
                t.clone(),
                ":1: weight 'inf' is infinite",
            ),
            (b"1 2 -1\n", w.clone(), t.clone(), ":1: weight '-1' is <= 0"),
            (b"1 2 0\n", w.clone(), t.clone(), ":1: weight '0' is <= 0"),
            (
                b"1 2 1e39\n",
                w.clone(),
                t.clone(),
                "outside the float32 range",
            ),
            (
                b"1 99999999999999999999\n",
                d.clone(),
                t.clone(),
                ":1: id 99999999999999999999 overflows int64",
            ),
            (b"", d.clone(), t.clone(), "no edges found"),
            (b"# only\n\n", d.clone(), t.clone(), "no edges found"),
            (
                b"1 2\n1 x\n",
                BuildOptions {
                    ids: IdMode::Int,
                    ..d.clone()
                },
                t.clone(),
                ":2: id 'x' is not an integer",
            ),
            (
                b"1 2\n1 -3\n",
                BuildOptions {
                    ids: IdMode::Implicit,
                    ..d.clone()
                },
                t.clone(),
                ":2: node id -3 is negative",
            ),
            (
                b"1 2\n1 7\n",
                BuildOptions {
                    num_nodes: Some(5),
                    ..d.clone()
                },
                t.clone(),
                ":2: node id 7 is outside 0..num_nodes-1",
            ),
            (
                b"a \xff\n",
                BuildOptions {
                    ids: IdMode::Str,
                    ..d.clone()
                },
                t.clone(),
                ":1: node id is not valid UTF-8",
            ),
            (
                b"1,2\n1;2\n",
                d.clone(),
                t.clone(),
                ":2: found 1 columns, but line 1 has 2",
            ),
        ];
        for (content, build, text, want) in cases {
            let out = dir.path().join("out.graph");
            let e = conv(dir.path(), &[("in.txt", content)], &text, &build)
                .err()
                .unwrap_or_else(|| panic!("no error for {want}"));
            let msg = e.to_string();
            assert!(matches!(e, Error::Format(_)), "{msg}");
            assert!(
                msg.contains(want) && msg.contains("in.txt"),
                "{msg:?} lacks {want:?}"
            );
            assert!(!out.exists());
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(names.len(), 1, "{names:?}");
        }
        // Parameter errors.
        let p = [dir.path().join("in.txt")];
        let out = dir.path().join("o.graph");
        let bad = TextOptions {
            weight_col: Some(2),
            ..TextOptions::default()
        };
        assert!(matches!(
            convert_text(&p, &out, &bad, &d, None),
            Err(Error::InvalidParameter(_))
        ));
        let bad = TextOptions {
            dst_col: 0,
            ..TextOptions::default()
        };
        assert!(matches!(
            convert_text(&p, &out, &bad, &d, None),
            Err(Error::InvalidParameter(_))
        ));
        assert!(matches!(
            convert_text(&[dir.path().join("nope")], &out, &t, &d, None),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn int_parser() {
        assert!(matches!(
            parse_int(b"-9223372036854775808"),
            IntTok::Int(i64::MIN)
        ));
        assert!(matches!(
            parse_int(b"9223372036854775807"),
            IntTok::Int(i64::MAX)
        ));
        assert!(matches!(
            parse_int(b"9223372036854775808"),
            IntTok::Overflow
        ));
        assert!(matches!(
            parse_int(b"-9223372036854775809"),
            IntTok::Overflow
        ));
        assert!(matches!(parse_int(b"+7"), IntTok::Int(7)));
        for t in [&b""[..], b"-", b"1.0", b"0x1", b"1e3", b"12a"] {
            assert!(matches!(parse_int(t), IntTok::NotInt), "{t:?}");
        }
    }
}
