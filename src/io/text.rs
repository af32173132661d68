//! Text edge lists and CSV/TSV files -> graph file, through the out-of-core builder
//! (`external.rs`).
//!
//! # What a text file means
//!
//! One edge per record: the source, destination and (for weighted graphs) weight columns are
//! chosen by index or, with a header, by name. Every rule below is stated once in
//! `docs/CLI.md` ("What a text file means"); this is its implementation.
//!
//! - **Fields.** Runs of spaces and tabs (SNAP edge lists), or one delimiter byte read as RFC
//!   4180 CSV: fields may be quoted with `"` (delimiters, quotes written as `""`, and line
//!   breaks inside); CRLF and LF line ends; a UTF-8 byte order mark is skipped. Spaces and tabs
//!   around a field are removed. The CSV grammar is the `csv` crate's parser core
//!   (`csv-core`), run over our own buffers so records stream straight into the builder and
//!   errors name physical line numbers. Records without a quote take a faster split with the
//!   same result.
//! - **Delimiter** (unless given): tab for TSV; for CSV the candidate among `,` tab `;` `|`
//!   that splits the first data line (quotes respected) into the most fields; for other text,
//!   tab if the first data line has one, else a comma if it has one, else whitespace.
//! - **Comments and blank lines.** A line whose first non-blank byte is a comment character
//!   (`#`, `%`) is skipped where a record may start, as are blank lines.
//! - **Header.** `header` forces it. Otherwise, per file, the first record is data when its id
//!   fields are integers, a header when it names a known pair of edge columns (`src`/`dst`,
//!   `source`/`target`, ...), a `weight` column, or starts with an empty name (the index
//!   column of pandas and R); else the whole file decides: a header above integer ids; data
//!   when one of its ids appears again as an id; otherwise a header in CSV/TSV (the convention
//!   of pandas, Polars, R and Excel) and data in other text (SNAP edge lists have no header).
//! - **Id typing.** Ids are integers only if every id of every file is a canonical int64
//!   (`0`, `-12`, `7`: no sign `+`, no leading zeros, no `-0`); otherwise every id is a string,
//!   so `001` and `1` stay two nodes. The reader starts with integers and, at the first id that
//!   is not canonical, starts again with strings: the decision always sees every id.
//! - Every data record of a file has the same number of fields as its first record.
//!
//! Inputs may be plain, gzip (also multi-member/bgzip), zstd, bzip2 or xz files, detected from
//! their first bytes. Files that are not text edge lists (binary data, JSON, a graph file) are
//! refused before any edge is read. Every problem is an `Error::Format` naming the file, the
//! line and the offending text; the output path is never left with a partial file.

use std::cell::Cell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::graph::build::Merge;
use crate::graph::external::{
    check_weight, BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn,
};
use crate::io::input::open_input;
use crate::io::sniff::Content;
use crate::io::source::EdgeSink;

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &[
    "decimal_comma",
    "weighted",
    "delimiter",
    "comment",
    "header",
    "src_col",
    "dst_col",
    "weight_col",
    "id_kind",
];

/// How fields are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delimiter {
    /// Runs of spaces and tabs; no quoting.
    Whitespace,
    /// One byte (tab, comma, semicolon, ...), RFC 4180 quoting.
    Byte(u8),
}

impl Delimiter {
    pub fn parse(s: &str) -> Result<Delimiter> {
        match s {
            "whitespace" | "space" | "ws" => Ok(Delimiter::Whitespace),
            "tab" | "\t" | "\\t" => Ok(Delimiter::Byte(b'\t')),
            "comma" | "," => Ok(Delimiter::Byte(b',')),
            "semicolon" => Ok(Delimiter::Byte(b';')),
            "pipe" => Ok(Delimiter::Byte(b'|')),
            // A single space is a CSV delimiter (quoted fields allowed), unlike "whitespace".
            " " => Ok(Delimiter::Byte(b' ')),
            s if s.len() == 1 && s.as_bytes()[0].is_ascii_punctuation() && s != "\"" => {
                Ok(Delimiter::Byte(s.as_bytes()[0]))
            }
            other => Err(Error::param(format!(
                "delimiter must be 'whitespace', 'tab', 'comma', ' ' or one punctuation character \
                 other than '\"', got {other:?}"
            ))),
        }
    }

    fn show(self) -> String {
        match self {
            Delimiter::Whitespace => "whitespace".into(),
            Delimiter::Byte(b'\t') => "tab".into(),
            Delimiter::Byte(c) => format!("'{}'", c as char),
        }
    }
}

/// Which conventions apply to a text file: its default delimiter and header rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Edge lists (`.txt`, `.edges`, SNAP, KONECT): no header unless the file shows one.
    EdgeList,
    /// `.csv`: a header unless the file shows otherwise.
    Csv,
    /// `.tsv`, `.tab`: as CSV, tab-separated.
    Tsv,
}

impl Flavor {
    pub fn parse(s: &str) -> Result<Flavor> {
        match s {
            "edgelist" => Ok(Flavor::EdgeList),
            "csv" => Ok(Flavor::Csv),
            "tsv" => Ok(Flavor::Tsv),
            other => Err(Error::param(format!(
                "text format must be 'edgelist', 'csv' or 'tsv', got {other:?}"
            ))),
        }
    }
}

/// A column chosen by 0-based index or by header name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    Index(usize),
    Name(String),
}

/// Text options of [`convert_text`].
#[derive(Clone, Debug)]
pub struct TextOptions {
    pub flavor: Flavor,
    /// `None`: detected per file (see the module docs).
    pub delimiter: Option<Delimiter>,
    /// Bytes that start a comment line.
    pub comment: Vec<u8>,
    /// `None`: detected per file.
    pub header: Option<bool>,
    /// Default: a known pair of names in the header, else the first two columns (with a
    /// header: the first two with a name).
    pub src_col: Option<Column>,
    pub dst_col: Option<Column>,
    pub weight_col: Option<Column>,
    /// `None`: weighted iff `weight_col` is given or the header names a `weight` column.
    /// `Some(true)` without `weight_col`: the column named `weight`, else column 2.
    pub weighted: Option<bool>,
    /// Whether a weight may be written with a decimal comma (`1,5`); `None`: with a `;`
    /// delimiter, as the spreadsheets of the locales that write `;` do.
    pub decimal_comma: Option<bool>,
    /// The direction given (`None`: not given, the graph is undirected). A Gephi edge table
    /// says each edge's direction in its `Type` column: a `Directed` edge in a graph read as
    /// undirected by default is refused, naming `directed`.
    pub directed: Option<bool>,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            flavor: Flavor::EdgeList,
            delimiter: None,
            comment: b"#%".to_vec(),
            header: None,
            src_col: None,
            dst_col: None,
            weight_col: None,
            weighted: None,
            decimal_comma: None,
            directed: None,
        }
    }
}

/// What the reader saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextStats {
    /// Bytes read from the input files (compressed size for compressed files).
    pub input_bytes: u64,
    /// Physical lines read (all files, last pass).
    pub lines: u64,
    /// Records that held an edge.
    pub edge_lines: u64,
    /// Passes over the input: 2 (rarely 3) when a decision needed the whole input (an id that
    /// is not a canonical integer after integer ones, a first line found to be an edge).
    pub passes: u32,
    /// Header records skipped by detection (not by `header=True`): `file:line: 'text'`.
    pub headers: Vec<String>,
    /// The columns read: names with a header, else `column N`.
    pub columns: Vec<String>,
    /// Whether weights were read.
    pub weighted: bool,
    /// The delimiter of the first file, as a word (`whitespace`, `tab`, `','`...).
    pub delimiter: String,
}

const BLOCK: usize = 1 << 22;
const MAX_SHOWN: usize = 200;
/// Bytes examined for binary content at the start of a file.
const SNIFF: usize = 8192;
/// Read size when only the first record is wanted.
const PEEK: usize = 1 << 16;

// ------------------------------------------------------------------------------ input files

/// Reads into `buf`, mapping decompression failures to a format error.
fn read_some(r: &mut dyn Read, buf: &mut [u8], path: &Path, line: u64) -> Result<usize> {
    loop {
        match r.read(buf) {
            Ok(k) => return Ok(k),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::InvalidData
                        | std::io::ErrorKind::InvalidInput
                        | std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::Other
                ) =>
            {
                return Err(Error::format(format!(
                    "{}: corrupt or truncated compressed data after line {line}: {e}",
                    path.display()
                )))
            }
            Err(e) => return Err(Error::io(path, e)),
        }
    }
}

/// Refuses the start of a file that is not text: a one-line description and what to do.
fn check_head(path: &Path, head: &[u8]) -> Result<()> {
    let name = path.display();
    // Excel's delimiter hint line (`sep=;`) is not data: read as a record it would make the
    // real header an edge.
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if text.len() >= 5
        && text[..4].eq_ignore_ascii_case(b"sep=")
        && matches!(text.get(5), None | Some(b'\r') | Some(b'\n'))
    {
        let c = text[4] as char;
        return Err(Error::format(format!(
            "{name}:1: 'sep={c}' is a spreadsheet's delimiter hint, not data: delete that line \
             and pass delimiter='{c}'"
        )));
    }
    if head.starts_with(b"IEGRAPH\0") {
        return Err(Error::format(format!(
            "{name} is an instant-embedding graph file already: open it, there is nothing to convert"
        )));
    }
    if crate::graph::format::webgraph_properties(path).is_some() {
        return Err(Error::format(format!(
            "{name} is a WebGraph BV graph (a .properties file is beside it), not a text edge \
             list: convert it with format='webgraph'"
        )));
    }
    let probe = &head[..head.len().min(SNIFF)];
    if memchr::memchr(0, probe).is_some() {
        return Err(Error::format(format!(
            "{name} holds binary data, not a text edge list: if it is a Parquet, Arrow, .npy, \
             .mat or .bcsr file, pass its format (format='parquet', ...); if it is compressed, \
             decompress it first"
        )));
    }
    let body = probe.strip_prefix(b"\xef\xbb\xbf").unwrap_or(probe);
    if body.starts_with(b"% bip ") {
        return Err(Error::format(format!(
            "{name} is a KONECT bipartite network ('% bip' header): its left and right nodes \
             are numbered separately, so '1 1' is not a self-loop; give the two sides distinct \
             ids (e.g. prefix the right ones) and convert that file"
        )));
    }
    let content = crate::io::sniff::classify(probe);
    match content {
        Content::Json => Err(Error::format(format!(
            "{name} is JSON, not a text edge list: read node-link JSON or JSON Lines edges \
             with format='json'"
        ))),
        Content::MatrixMarket => Err(Error::format(format!(
            "{name} is a Matrix Market file (its first line is a %%MatrixMarket banner), not a \
             text edge list: read it with format='mtx'"
        ))),
        _ => match crate::io::sniff::unsupported(path, &content) {
            Some(e) => Err(e),
            None => Ok(()),
        },
    }
}

// ------------------------------------------------------------------------------ messages

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

/// The record as shown in messages: at most `MAX_SHOWN` characters, quoted.
fn shown(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let cut: String = text.chars().take(MAX_SHOWN).collect();
    let more = if cut.len() < text.len() { "..." } else { "" };
    format!("{}{more}", quote(&cut))
}

// ------------------------------------------------------------------------------ tokens

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum IntTok {
    Int(i64),
    NotInt,
    Overflow,
}

/// Any decimal integer: optional `+`/`-`, digits (leading zeros allowed).
#[inline]
pub(crate) fn parse_int(t: &[u8]) -> IntTok {
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

/// A canonical int64: the text `i64::to_string` writes (no `+`, no leading zeros, no `-0`).
/// Anything else is not an integer id in automatic typing.
#[inline]
pub(crate) fn canonical_int(t: &[u8]) -> Option<i64> {
    let digits = t.strip_prefix(b"-").unwrap_or(t);
    match digits {
        [] | [b'+', ..] => return None,
        [b'0', _, ..] => return None,
        [b'0'] if digits.len() != t.len() => return None,
        _ => {}
    }
    match parse_int(t) {
        IntTok::Int(v) => Some(v),
        _ => None,
    }
}

fn int_like(t: &[u8]) -> bool {
    !matches!(parse_int(t), IntTok::NotInt)
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
        if is_blank(*last) || *last == b'\r' {
            t = rest;
        } else {
            break;
        }
    }
    t
}

/// Parses a weight token, with a decimal comma (`1,5`) if `decimal_comma`.
fn parse_weight(t: &[u8], decimal_comma: bool) -> Option<f64> {
    let s = std::str::from_utf8(t).ok()?;
    if let Ok(x) = s.parse::<f64>() {
        return Some(x);
    }
    if decimal_comma && s.bytes().filter(|&c| c == b',').count() == 1 && !s.contains('.') {
        return s.replace(',', ".").parse::<f64>().ok();
    }
    None
}

// ------------------------------------------------------------------------------ records

/// One record: its fields (trimmed) and where it is.
struct Rec<'a> {
    /// Physical line where the record starts (1-based).
    line: u64,
    /// The record's text, without its line end.
    raw: &'a [u8],
    base: &'a [u8],
    ranges: &'a [(usize, usize)],
}

impl<'a> Rec<'a> {
    #[inline]
    fn len(&self) -> usize {
        self.ranges.len()
    }
    #[inline]
    fn get(&self, i: usize) -> &'a [u8] {
        let (a, b) = self.ranges[i];
        &self.base[a..b]
    }
    fn fields(&self) -> Vec<Vec<u8>> {
        (0..self.len()).map(|i| self.get(i).to_vec()).collect()
    }
}

enum Step {
    Go,
    Stop,
}

/// Splits a file into records. Whitespace: one record per line. A byte delimiter: lines with
/// no quote are split directly; a record with a quote goes through `csv-core` (which also
/// handles line breaks inside quotes).
struct Scanner {
    delim: Delimiter,
    comment: Vec<u8>,
    csv: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
    ranges: Vec<(usize, usize)>,
}

#[inline]
fn trimmed_range(base: &[u8], mut a: usize, mut b: usize) -> (usize, usize) {
    while a < b && is_blank(base[a]) {
        a += 1;
    }
    while b > a && (is_blank(base[b - 1]) || base[b - 1] == b'\r') {
        b -= 1;
    }
    (a, b)
}

impl Scanner {
    fn new(delim: Delimiter, comment: &[u8]) -> Scanner {
        let c = match delim {
            Delimiter::Byte(c) => c,
            Delimiter::Whitespace => b',',
        };
        Scanner {
            delim,
            comment: comment.to_vec(),
            csv: csv_core::ReaderBuilder::new()
                .delimiter(c)
                .quote(b'"')
                .double_quote(true)
                .terminator(csv_core::Terminator::Any(b'\n'))
                .build(),
            out: Vec::new(),
            ends: vec![0; 16],
            ranges: Vec::with_capacity(16),
        }
    }

    #[inline]
    fn split_plain(&mut self, line: &[u8]) {
        self.ranges.clear();
        match self.delim {
            Delimiter::Whitespace => {
                let n = line.len();
                let mut i = 0;
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
                    self.ranges.push((s, i));
                }
            }
            Delimiter::Byte(c) => {
                // Lines are short: a plain loop beats a vectorised search here.
                let mut s = 0;
                for (e, &x) in line.iter().enumerate() {
                    if x == c {
                        self.ranges.push(trimmed_range(line, s, e));
                        s = e + 1;
                    }
                }
                self.ranges.push(trimmed_range(line, s, line.len()));
            }
        }
    }

    /// Parses one CSV record at the start of `data`. `Ok(None)`: the record continues past
    /// the data (and `eof` is false). Else the bytes consumed and whether the record ran to the
    /// end of the input inside a quote.
    fn split_csv(&mut self, data: &[u8], eof: bool) -> Option<(usize, bool)> {
        self.csv.reset();
        if self.out.len() < data.len() + 1 {
            self.out.resize(data.len() + 1, 0);
        }
        let (mut nin, mut nout, mut nend) = (0usize, 0usize, 0usize);
        loop {
            let input = &data[nin..];
            let (res, i, o, e) =
                self.csv
                    .read_record(input, &mut self.out[nout..], &mut self.ends[nend..]);
            nin += i;
            nout += o;
            nend += e;
            match res {
                csv_core::ReadRecordResult::Record => break,
                csv_core::ReadRecordResult::End => break,
                csv_core::ReadRecordResult::OutputFull => {
                    let l = self.out.len();
                    self.out.resize(l * 2 + 64, 0);
                }
                csv_core::ReadRecordResult::OutputEndsFull => {
                    let l = self.ends.len();
                    self.ends.resize(l * 2, 0);
                }
                csv_core::ReadRecordResult::InputEmpty => {
                    if !eof {
                        return None;
                    }
                    // The end of the input closes the record; if the data ended with a line
                    // break the parser was inside a quote.
                    loop {
                        let (res, _, _, e) = self.csv.read_record(
                            &[],
                            &mut self.out[nout..],
                            &mut self.ends[nend..],
                        );
                        nend += e;
                        match res {
                            csv_core::ReadRecordResult::OutputEndsFull => {
                                let l = self.ends.len();
                                self.ends.resize(l * 2, 0);
                            }
                            _ => break,
                        }
                    }
                    let runaway = matches!(data[..nin].last(), Some(b'\n' | b'\r'));
                    self.fill_ranges(nend);
                    return Some((nin, runaway));
                }
            }
        }
        self.fill_ranges(nend);
        Some((nin, false))
    }

    fn fill_ranges(&mut self, nend: usize) {
        self.ranges.clear();
        let mut s = 0;
        for &e in &self.ends[..nend] {
            let r = trimmed_range(&self.out, s, e);
            self.ranges.push(r);
            s = e;
        }
    }

    fn is_skipped(&self, line: &[u8]) -> bool {
        match line.iter().position(|&c| !is_blank(c) && c != b'\r') {
            None => true,
            Some(i) => self.comment.contains(&line[i]),
        }
    }

    /// Reads `path` and calls `visit` for every record. Returns the physical lines read.
    fn scan(
        &mut self,
        path: &Path,
        block: usize,
        count: Rc<Cell<u64>>,
        report: &dyn Fn(u64) -> bool,
        visit: &mut dyn FnMut(&Rec<'_>) -> Result<Step>,
    ) -> Result<u64> {
        let name = path.display().to_string();
        let mut r = open_input(path, count.clone())?;
        let mut buf = vec![0u8; block.max(SNIFF)];
        let (mut start, mut end) = (0usize, 0usize);
        let mut eof = false;
        let mut line_no = 0u64; // lines fully consumed
        let mut first = true;
        loop {
            if !eof {
                if start > 0 {
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                }
                if end == buf.len() {
                    buf.resize(buf.len() * 2, 0); // a record longer than the block
                }
                let k = read_some(&mut *r, &mut buf[end..], path, line_no)?;
                end += k;
                eof = k == 0;
                if first {
                    // Fill enough to recognise binary content before reading records.
                    while !eof && end < SNIFF.min(buf.len()) {
                        let k = read_some(&mut *r, &mut buf[end..], path, line_no)?;
                        end += k;
                        eof = k == 0;
                    }
                    check_head(path, &buf[..end])?;
                    if buf[..end].starts_with(b"\xef\xbb\xbf") {
                        start = 3;
                    }
                    first = false;
                }
            }
            let data = &buf[..end];
            let mut pos = start;
            // Position of the next quote (usize::MAX: none in the buffer), searched once per
            // stretch of records without quotes.
            let mut next_quote: Option<usize> = None;
            let byte_delim = matches!(self.delim, Delimiter::Byte(_));
            while pos < end {
                let rest = &data[pos..];
                let (line_end, next) = match memchr::memchr(b'\n', rest) {
                    Some(i) => (pos + i, pos + i + 1),
                    None if eof => (end, end),
                    None => break,
                };
                let line = &data[pos..line_end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if self.is_skipped(line) {
                    line_no += 1;
                    pos = next;
                    continue;
                }
                // The next quote in the buffer, searched once per stretch without quotes.
                let quoted = byte_delim && {
                    let q = match next_quote {
                        Some(q) if q >= pos => q,
                        _ => memchr::memchr(b'"', rest).map_or(usize::MAX, |i| pos + i),
                    };
                    next_quote = Some(q);
                    q < line_end
                };
                if !quoted {
                    self.split_plain(line);
                    let raw = trim(line);
                    let rec = Rec {
                        line: line_no + 1,
                        raw,
                        base: line,
                        ranges: &self.ranges,
                    };
                    line_no += 1;
                    pos = next;
                    if let Step::Stop = visit(&rec)? {
                        return Ok(line_no);
                    }
                    continue;
                }
                let Some((used, runaway)) = self.split_csv(rest, eof) else {
                    break; // the record continues in the next block
                };
                let raw = trim(&rest[..used]);
                let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
                if runaway {
                    return Err(Error::format(format!(
                        "{name}:{}: a quoted field is never closed (it runs to the end of the \
                         file): {}",
                        line_no + 1,
                        shown(raw)
                    )));
                }
                if let Delimiter::Byte(c) = self.delim {
                    if stray_quote(raw, c) {
                        return Err(Error::format(format!(
                            "{name}:{}: a quote inside a quoted field is neither doubled nor \
                             the field's end (RFC 4180 writes a quote as \"\"); a file that \
                             escapes quotes with a backslash (Spark's default) is not read: \
                             write it with the quote as its escape (Spark: option escape '\"'): {}",
                            line_no + 1,
                            shown(raw)
                        )));
                    }
                }
                let rec = Rec {
                    line: line_no + 1,
                    raw,
                    base: &self.out,
                    ranges: &self.ranges,
                };
                line_no += memchr::memchr_iter(b'\n', &rest[..used]).count() as u64;
                if eof && used == rest.len() && rest.last() != Some(&b'\n') {
                    line_no += 1; // a last line without a line end
                }
                pos += used.max(1);
                if let Step::Stop = visit(&rec)? {
                    return Ok(line_no);
                }
            }
            start = pos;
            if eof && start >= end {
                return Ok(line_no);
            }
            if !report(count.get()) {
                return Err(Error::Cancelled);
            }
        }
    }
}

/// Whether a record holds a quote that RFC 4180 does not allow inside a quoted field: one that
/// is neither doubled nor followed (after blanks) by the delimiter or the record's end. A
/// lenient parser reads such a field as something else than its writer meant (`"a \"b\""`
/// written with backslash escapes becomes `a \b\""`), so it is refused, never guessed.
/// Quotes inside unquoted fields (`5'10"`) are literal text and allowed.
fn stray_quote(raw: &[u8], delim: u8) -> bool {
    let n = raw.len();
    let (mut i, mut field_start, mut quoted) = (0, true, false);
    while i < n {
        let c = raw[i];
        if quoted {
            if c == b'"' {
                if raw.get(i + 1) == Some(&b'"') {
                    i += 2;
                    continue;
                }
                let mut j = i + 1;
                while j < n && raw[j] != delim && is_blank(raw[j]) {
                    j += 1;
                }
                if j < n && raw[j] != delim && raw[j] != b'\r' && raw[j] != b'\n' {
                    return true;
                }
                quoted = false;
                field_start = false;
                i = j;
                continue;
            }
            i += 1;
        } else {
            if c == delim || c == b'\n' {
                field_start = true;
            } else if c == b'"' && field_start {
                quoted = true;
            } else if !is_blank(c) {
                field_start = false;
            }
            i += 1;
        }
    }
    false
}

/// The first data record of `path` (all fields), read with `delim`.
fn first_record(path: &Path, delim: Delimiter, comment: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
    Ok(records(path, delim, comment, 1)?.pop())
}

/// The fields of the first `n` records of `path`.
fn records(path: &Path, delim: Delimiter, comment: &[u8], n: usize) -> Result<Vec<Vec<Vec<u8>>>> {
    let mut sc = Scanner::new(delim, comment);
    let mut got = Vec::new();
    sc.scan(path, PEEK, Rc::new(Cell::new(0)), &|_| true, &mut |rec| {
        got.push(rec.fields());
        Ok(if got.len() < n { Step::Go } else { Step::Stop })
    })?;
    Ok(got)
}

/// Fields of one line read as CSV with delimiter `c` (quotes respected).
fn csv_fields(line: &[u8], c: u8) -> usize {
    let mut sc = Scanner::new(Delimiter::Byte(c), b"");
    match sc.split_csv(line, true) {
        Some(_) => sc.ranges.len(),
        None => 1,
    }
}

/// The delimiter of a file whose first data line is `line`.
fn detect_delimiter(flavor: Flavor, line: &[u8]) -> Delimiter {
    match flavor {
        Flavor::Tsv => Delimiter::Byte(b'\t'),
        Flavor::Csv => {
            let mut best = (1usize, b',');
            for c in [b',', b'\t', b';', b'|'] {
                if memchr::memchr(c, line).is_some() {
                    let k = csv_fields(line, c);
                    if k > best.0 {
                        best = (k, c);
                    }
                }
            }
            Delimiter::Byte(best.1)
        }
        Flavor::EdgeList => {
            // networkx write_edgelist ends a line with its edge data, `{'weight': 1, ...}`.
            let line = match memchr::memchr(b'{', line) {
                Some(i) => &line[..i],
                None => line,
            };
            if line.contains(&b'\t') {
                Delimiter::Byte(b'\t')
            } else if line.contains(&b',') {
                Delimiter::Byte(b',')
            } else if line.first() == Some(&b'"') && line.windows(3).any(|w| w == b"\" \"") {
                // R write.table: quoted fields separated by one space.
                Delimiter::Byte(b' ')
            } else {
                Delimiter::Whitespace
            }
        }
    }
}

/// The first non-blank, non-comment physical line of `path` (for delimiter detection).
fn first_line(path: &Path, comment: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut sc = Scanner::new(Delimiter::Whitespace, comment);
    let mut got = None;
    sc.scan(path, PEEK, Rc::new(Cell::new(0)), &|_| true, &mut |rec| {
        got = Some(rec.raw.to_vec());
        Ok(Step::Stop)
    })?;
    Ok(got)
}

// ------------------------------------------------------------------------------ columns

/// Names of edge columns, as pairs, tried in order when no column is named.
pub const COLUMN_PAIRS: [(&str, &str); 6] = [
    ("src", "dst"),
    ("source", "target"),
    ("source", "destination"),
    ("from", "to"),
    ("node1", "node2"),
    ("u", "v"),
];
pub const WEIGHT_NAMES: [&str; 3] = ["weight", "weights", "w"];

fn lower(fields: &[Vec<u8>]) -> Vec<String> {
    fields
        .iter()
        .map(|f| String::from_utf8_lossy(f).to_lowercase())
        .collect()
}

/// Whether a first record is a header by its names alone: a known pair (but `u`/`v`, which
/// are also common node names), `weight`/`weights`, or an empty first name (the index column
/// that pandas and R write).
fn names_a_header(fields: &[Vec<u8>], table: bool) -> bool {
    let low = lower(fields);
    let has = |n: &str| low.iter().any(|x| x == n);
    // In a CSV/TSV file (a table, which has a header by convention) `u`/`v` name columns too.
    let pairs = if table {
        &COLUMN_PAIRS[..]
    } else {
        &COLUMN_PAIRS[..5]
    };
    pairs.iter().any(|(a, b)| has(a) && has(b))
        || has("weight")
        || has("weights")
        || index_header(fields)
}

/// The header of a table written with an index column (pandas `to_csv()`, R `write.csv`):
/// an unnamed first column (empty, or pandas' `Unnamed: 0` of such a table read back and
/// written again) before at least two columns. A header whatever the names after it.
fn index_header(fields: &[Vec<u8>]) -> bool {
    fields.len() >= 3 && std::str::from_utf8(&fields[0]).is_ok_and(unnamed)
}

/// `0,1[,2...]`: the header pandas writes for default column labels (`to_csv(index=False)`),
/// or an edge `0 -> 1`: the file cannot say which.
fn default_labels(fields: &[Vec<u8>]) -> bool {
    fields.len() >= 2
        && fields
            .iter()
            .enumerate()
            .all(|(i, f)| f.as_slice() == i.to_string().as_bytes())
}

/// networkx `write_edgelist` edge data at the end of a line (`{}`, `{'weight': 2.0}`): the
/// value of its `weight` key, `Ok(None)` when it has none.
fn dict_weight(dict: &[u8]) -> std::result::Result<Option<&[u8]>, ()> {
    let inner = dict
        .strip_prefix(b"{")
        .and_then(|d| d.strip_suffix(b"}"))
        .ok_or(())?;
    for key in [&b"'weight'"[..], b"\"weight\""] {
        if let Some(i) = inner.windows(key.len()).position(|w| w == key) {
            let rest = trim(&inner[i + key.len()..]);
            let rest = trim(rest.strip_prefix(b":").ok_or(())?);
            let end = rest.iter().position(|&c| c == b',').unwrap_or(rest.len());
            return Ok(Some(trim(&rest[..end])));
        }
    }
    Ok(None)
}

/// Resolved columns.
#[derive(Clone, Debug)]
struct Cols {
    src: usize,
    dst: usize,
    weight: Option<usize>,
    /// Header names of the first file, when it has a header.
    names: Option<Vec<String>>,
    /// Gephi's `Type` column (`Directed`/`Undirected` per edge), beside `Source`/`Target`.
    edge_type: Option<usize>,
    /// The header names every column but the first, which holds row names (R `write.table`,
    /// pandas `to_string`): `names` starts with an empty name for it.
    row_names: bool,
}

impl Cols {
    fn need(&self) -> usize {
        1 + self.src.max(self.dst).max(self.weight.unwrap_or(0))
    }

    fn describe(&self) -> Vec<String> {
        let name = |i: usize| match &self.names {
            Some(n) => quote(&n[i]),
            None => format!("column {i}"),
        };
        let mut v = vec![name(self.src), name(self.dst)];
        if let Some(w) = self.weight {
            v.push(name(w));
        }
        v
    }
}

/// A column name that is no name: empty (R, pandas `to_csv`), or pandas' `Unnamed: N` for
/// such a column read back: an index, never an end of an edge.
fn unnamed(name: &str) -> bool {
    name.is_empty()
        || name
            .strip_prefix("Unnamed: ")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
}

/// The column rule (docs/CLI.md, "The reading contract") applied to the column names of a
/// table (Parquet, Arrow, pandas): `(src, dst, weight)` indices, as a text header with these
/// names is read.
pub fn table_columns(
    names: &[String],
    opts: &TextOptions,
) -> Result<(usize, usize, Option<usize>)> {
    if names.len() < 2 {
        return Err(Error::format(format!(
            "needs at least two columns, found {}",
            names
                .iter()
                .map(|x| quote(x))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    // Only the column options (`src_col`, `dst_col`, `weight_col`, `weighted`) apply.
    let c = resolve_columns(opts, Some(names))?;
    Ok((c.src, c.dst, c.weight))
}

fn resolve_columns(opts: &TextOptions, names: Option<&[String]>) -> Result<Cols> {
    let pick = |c: &Column, what: &str| -> Result<usize> {
        match (c, names) {
            (Column::Index(i), Some(n)) if *i >= n.len() => Err(Error::param(format!(
                "{what} {i} is out of range: there are {} columns ({})",
                n.len(),
                n.join(", ")
            ))),
            (Column::Index(i), _) => Ok(*i),
            (Column::Name(s), Some(n)) => n.iter().position(|x| x == s).ok_or_else(|| {
                Error::param(format!(
                    "no column named {} ({what}); the columns are: {}",
                    quote(s),
                    n.iter().map(|x| quote(x)).collect::<Vec<_>>().join(", ")
                ))
            }),
            (Column::Name(s), None) => Err(Error::param(format!(
                "{what}={} names a column, but the file has no header line (header=False)",
                quote(s)
            ))),
        }
    };
    let low: Option<Vec<String>> = names.map(|n| n.iter().map(|x| x.to_lowercase()).collect());
    let (src, dst) = match (&opts.src_col, &opts.dst_col) {
        (None, None) => {
            let pair = low.as_ref().and_then(|low| {
                COLUMN_PAIRS.iter().find_map(|(a, b)| {
                    let i = low.iter().position(|x| x == a)?;
                    let j = low.iter().position(|x| x == b)?;
                    Some((i, j))
                })
            });
            match (pair, names) {
                (Some(p), _) => p,
                (None, Some(n)) => {
                    // The first two named columns (an unnamed first column is an index), when
                    // no other column could be an end of the edge.
                    let low = low.as_ref().expect("names");
                    let named: Vec<usize> = (0..n.len()).filter(|&i| !unnamed(&n[i])).collect();
                    let given_w = match &opts.weight_col {
                        Some(c) => Some(pick(c, "weight_col")?),
                        None => None,
                    };
                    let candidates: Vec<usize> = named
                        .iter()
                        .copied()
                        .filter(|&i| !WEIGHT_NAMES.contains(&low[i].as_str()) && Some(i) != given_w)
                        .collect();
                    let weight_named = named.len() > candidates.len();
                    let third_is_weight =
                        opts.weighted == Some(true) && !weight_named && candidates.len() == 3;
                    if named.len() < 2 {
                        (0, 1)
                    } else if candidates.len() == 2 {
                        (candidates[0], candidates[1])
                    } else if candidates.len() < 2 || third_is_weight {
                        (named[0], named[1])
                    } else {
                        return Err(Error::format(format!(
                            "{} columns ({}) and no known pair (src/dst, source/target, \
                             from/to, u/v, node1/node2) says which hold the edge: pass src_col \
                             and dst_col",
                            candidates.len(),
                            candidates
                                .iter()
                                .map(|&i| quote(&n[i]))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                }
                (None, None) => (0, 1),
            }
        }
        (s, d) => (
            pick(s.as_ref().unwrap_or(&Column::Index(0)), "src_col")?,
            pick(d.as_ref().unwrap_or(&Column::Index(1)), "dst_col")?,
        ),
    };
    if src == dst {
        return Err(Error::param(format!(
            "src_col and dst_col are the same column ({src})"
        )));
    }
    let weight = match (&opts.weight_col, opts.weighted) {
        (Some(_), Some(false)) => {
            return Err(Error::param(
                "weight_col is given but weighted=False; drop one of them",
            ))
        }
        (Some(c), _) => Some(pick(c, "weight_col")?),
        (None, w) => {
            let named = low.as_ref().and_then(|low| {
                WEIGHT_NAMES
                    .iter()
                    .find_map(|n| low.iter().position(|x| x == n))
                    .filter(|&i| i != src && i != dst)
            });
            match (w, named, names) {
                (Some(false), _, _) => None,
                (_, Some(i), _) => Some(i),
                (None, None, _) => None,
                (Some(true), None, Some(n)) => {
                    let others: Vec<usize> = (0..n.len())
                        .filter(|&i| i != src && i != dst && !unnamed(&n[i]))
                        .collect();
                    if others.len() == 1 {
                        Some(others[0])
                    } else {
                        return Err(Error::param(format!(
                            "weighted=True, but no column is named weight: pass weight_col \
                             (the columns are: {})",
                            n.join(", ")
                        )));
                    }
                }
                (Some(true), None, None) => Some(2),
            }
        }
    };
    if weight.is_some_and(|w| w == src || w == dst) {
        return Err(Error::param(
            "weight_col is also an id column (src_col or dst_col)",
        ));
    }
    Ok(Cols {
        src,
        dst,
        weight,
        names: names.map(<[String]>::to_vec),
        edge_type: names.and_then(|n| {
            let gephi = n.get(src).is_some_and(|x| x.eq_ignore_ascii_case("source"))
                && n.get(dst).is_some_and(|x| x.eq_ignore_ascii_case("target"));
            n.iter()
                .position(|x| x.eq_ignore_ascii_case("type"))
                .filter(|_| gephi)
        }),
        row_names: false,
    })
}

// ------------------------------------------------------------------------------ one pass

/// Decisions that outlive a pass.
#[derive(Clone, Debug)]
struct Plan {
    ids: IdMode,
    /// Per file: whether its first record is a header, once known for sure.
    header: Vec<Option<bool>>,
}

enum Outcome {
    Done,
    /// Read everything again with this plan.
    Again(Plan),
}

/// A first record whose role the rest of the file decides.
struct Held {
    line: u64,
    raw: Vec<u8>,
    src: Vec<u8>,
    dst: Vec<u8>,
    weight: Vec<u8>,
    /// Every later id of the file is an integer (any syntax).
    rest_int: bool,
    rest: u64,
}

struct FileState<'a> {
    name: &'a str,
    index: usize,
    text: &'a TextOptions,
    cols: &'a Cols,
    plan: &'a Plan,
    delim: Delimiter,
    weighted: bool,
    ids: IdMode,
    ncols: Option<(usize, u64)>,
    held: Option<Held>,
    edge_lines: u64,
    /// Header records skipped by detection, for the stats.
    headers: Vec<String>,
    /// The first record was a header (the only data line so far, for "no edges" messages).
    header_seen: Option<(u64, Vec<u8>)>,
    /// A first record of 2 to 4 integers, read as an edge: METIS's `n m [fmt [ncon]]` counts?
    counts: Option<(u64, u64, Vec<u8>)>,
    /// The first record ended in empty fields (a delimiter at the end of every line): they are
    /// no column, so a later record with a value there is refused.
    blank_tail: bool,
}

enum Flow {
    Go,
    /// Auto ids met a non-canonical integer: start again with string ids.
    NeedStr,
}

impl FileState<'_> {
    fn err(&self, line: u64, raw: &[u8], msg: impl std::fmt::Display) -> Error {
        Error::format(format!("{}:{line}: {msg}: {}", self.name, shown(raw)))
    }

    /// A hint for a record with too few fields.
    fn few_columns(&self, rec: &Rec<'_>, k: usize) -> Error {
        let need = self.cols.need();
        let raw = rec.raw;
        let other: Vec<String> = [b',', b'\t', b';', b'|', b' ']
            .into_iter()
            .filter(|&c| Delimiter::Byte(c) != self.delim && raw.contains(&c))
            .map(|c| Delimiter::Byte(c).show())
            .collect();
        let hint = if !other.is_empty() {
            format!(
                "; if {} separates the fields, pass delimiter={}",
                other[0],
                if other[0] == "tab" {
                    "'\\t'".into()
                } else {
                    other[0].clone()
                }
            )
        } else if k == 1 {
            "; a file of one column lists nodes, not edges".into()
        } else {
            String::new()
        };
        self.err(
            rec.line,
            raw,
            format!(
                "found {k} column{} ({} delimiter), but an edge needs {need} (the source, \
                 destination{} columns){hint}",
                if k == 1 { "" } else { "s" },
                self.delim.show(),
                if self.cols.weight.is_some() {
                    " and weight"
                } else {
                    ""
                },
            ),
        )
    }

    /// Whether a file's first record is a header; `None` when the rest of the file decides.
    fn first_is_header(&self, rec: &Rec<'_>) -> Result<Option<bool>> {
        if let Some(h) = self.plan.header[self.index] {
            return Ok(Some(h));
        }
        if let Some(h) = self.text.header {
            return Ok(Some(h));
        }
        let fields = rec.fields();
        if index_header(&fields) {
            return Ok(Some(true));
        }
        // pandas writes no comment or blank line before its header.
        if rec.line == 1 && self.delim != Delimiter::Whitespace && default_labels(&fields) {
            return Err(self.err(
                rec.line,
                rec.raw,
                "the first line is either the header pandas writes for unnamed columns \
                 (to_csv(index=False)) or an edge; pass header=True or header=False",
            ));
        }
        let (s, d) = (rec.get(self.cols.src), rec.get(self.cols.dst));
        if int_like(s) && int_like(d) {
            return Ok(Some(false));
        }
        if names_a_header(&fields, self.text.flavor != Flavor::EdgeList) {
            return Ok(Some(true));
        }
        Ok(None)
    }

    /// The refusal for a first record with more fields than the columns chosen, when nothing
    /// (a flag, a header's names) says what the others are.
    fn extra_fields(&self, rec: &Rec<'_>, k: usize) -> Option<Error> {
        let t = self.text;
        let columns = t.weight_col.is_some()
            || t.src_col.is_some()
            || t.dst_col.is_some()
            || self.cols.names.is_some();
        if columns || self.used_fields(rec) <= self.cols.need() {
            return None;
        }
        // A row of numbers, most of them 0: a row of an adjacency matrix (igraph
        // write_adjacency, numpy savetxt of a dense matrix), which no weighting reads
        // (`update` gives the graph's).
        let zeros = (0..k).filter(|&i| rec.get(i) == b"0").count();
        if k >= 4 && 2 * zeros >= k && (0..k).all(|i| parse_weight(rec.get(i), false).is_some()) {
            return Some(self.err(
                rec.line,
                rec.raw,
                format!(
                    "a row of {k} numbers, most of them 0, looks like a row of an adjacency \
                     matrix, not an edge: load the matrix (e.g. numpy.loadtxt) and pass \
                     scipy.sparse.csr_matrix(A) to ie.from_scipy"
                ),
            ));
        }
        if t.weighted.is_some() {
            return None;
        }
        Some(self.err(
            rec.line,
            rec.raw,
            format!(
                "{k} fields, but an edge is read from {}: pass weighted=True to read the third \
                 as weights, weighted=False to ignore the others, src_col and dst_col to choose \
                 the columns, or format='adjlist' if each line lists a node and its neighbours",
                self.cols.need()
            ),
        ))
    }

    /// The fields of a record up to its last non-empty one, in a delimited file (a delimiter
    /// ending every line adds an empty field that is no column).
    fn used_fields(&self, rec: &Rec<'_>) -> usize {
        let mut k = rec.len();
        if matches!(self.delim, Delimiter::Byte(_)) {
            while k > self.cols.need() && rec.get(k - 1).is_empty() {
                k -= 1;
            }
        }
        k
    }

    fn header(
        &mut self,
        line: u64,
        raw: &[u8],
        fields: Option<Vec<Vec<u8>>>,
        auto: bool,
    ) -> Result<()> {
        if let (Some(names), Some(fields)) = (&self.cols.names, fields) {
            let names = &names[usize::from(self.cols.row_names)..];
            let these: Vec<String> = fields
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect();
            if these != names {
                return Err(self.err(
                    line,
                    raw,
                    format!(
                        "this header differs from the first file's ({})",
                        names.join(",")
                    ),
                ));
            }
        }
        if auto {
            self.headers
                .push(format!("{}:{line}: {}", self.name, shown(raw)));
        }
        self.header_seen = Some((line, raw.to_vec()));
        Ok(())
    }

    #[inline]
    fn record<S: EdgeSink>(&mut self, b: &mut S, rec: &Rec<'_>) -> Result<Flow> {
        let mut k = rec.len();
        // networkx edge data (`u v {'weight': 2}`): one field however many words it has.
        let mut dict: Option<&[u8]> = None;
        if k > 2 && self.delim == Delimiter::Whitespace && rec.get(2).first() == Some(&b'{') {
            let start = rec.ranges[2].0;
            dict = Some(trim(&rec.base[start..]));
            k = 3;
        } else if k > 2
            && self.cols.names.is_none()
            && rec.get(2).first() == Some(&b'{')
            && !rec.raw.contains(&b'"')
        {
            // write_edgelist(delimiter=','): the data's own commas split it into fields.
            if let Some(i) = memchr::memchr(b'{', rec.raw) {
                dict = Some(trim(&rec.raw[i..]));
                k = 3;
            }
        }
        if k >= 2 && self.delim == Delimiter::Whitespace && rec.get(1).first() == Some(&b'{') {
            return Err(self.err(
                rec.line,
                rec.raw,
                "edge data where a node id should be: a multiline adjacency list (networkx \
                 write_multiline_adjlist) is not read; load it with \
                 networkx.read_multiline_adjlist and pass the graph to ie.from_networkx",
            ));
        }
        let mut dict_w: Option<&[u8]> = None;
        if let Some(d) = dict {
            let w = dict_weight(d)
                .map_err(|()| self.err(rec.line, rec.raw, "malformed edge data (networkx)"))?;
            match (w, self.text.weighted, self.cols.weight) {
                (Some(_), None, None) => {
                    return Err(self.err(
                        rec.line,
                        rec.raw,
                        "the edge data has a 'weight': pass weighted=True to read it or \
                         weighted=False to ignore it",
                    ))
                }
                (None, _, Some(_)) => {
                    return Err(self.err(rec.line, rec.raw, "the edge data has no 'weight'"))
                }
                (w, _, _) => dict_w = w,
            }
        }
        match self.ncols {
            None if self.cols.row_names && self.plan.header[self.index] != Some(false) => {
                // A header without the row names' column: the records have one field more.
                self.ncols = Some((k + 1, rec.line));
                self.header(
                    rec.line,
                    rec.raw,
                    Some(rec.fields()),
                    self.text.header.is_none(),
                )?;
                return Ok(Flow::Go);
            }
            None => {
                if k < self.cols.need() {
                    return Err(self.few_columns(rec, k));
                }
                if self.delim == Delimiter::Whitespace && rec.raw.first() == Some(&b'"') {
                    return Err(self.err(
                        rec.line,
                        rec.raw,
                        "a quoted field in a whitespace-separated file; if fields are quoted, \
                         pass the delimiter (e.g. delimiter=' ' or delimiter='\\t')",
                    ));
                }
                self.ncols = Some((k, rec.line));
                let first = self.first_is_header(rec)?;
                if first == Some(false) && (2..=4).contains(&rec.len()) {
                    let v: Vec<Option<i64>> =
                        (0..rec.len()).map(|i| canonical_int(rec.get(i))).collect();
                    if let (Some(Some(n)), Some(Some(m))) = (v.first(), v.get(1)) {
                        if v.iter().all(Option::is_some) && *n > 0 && *m >= 0 {
                            self.counts = Some((*n as u64, *m as u64, rec.raw.to_vec()));
                        }
                    }
                }
                if dict.is_none() && first != Some(true) {
                    if let Some(e) = self.extra_fields(rec, k) {
                        return Err(e);
                    }
                    self.blank_tail = self.used_fields(rec) < k
                        && self.cols.weight.is_none_or(|w| w < self.used_fields(rec));
                }
                match first {
                    Some(true) => {
                        let auto =
                            self.text.header.is_none() && self.plan.header[self.index].is_none();
                        self.header(rec.line, rec.raw, Some(rec.fields()), auto)?;
                        return Ok(Flow::Go);
                    }
                    Some(false) => {}
                    None => {
                        self.held = Some(Held {
                            line: rec.line,
                            raw: rec.raw.to_vec(),
                            src: rec.get(self.cols.src).to_vec(),
                            dst: rec.get(self.cols.dst).to_vec(),
                            weight: match dict {
                                Some(_) => dict_w.unwrap_or(b"").to_vec(),
                                None => self
                                    .cols
                                    .weight
                                    .map(|w| rec.get(w).to_vec())
                                    .unwrap_or_default(),
                            },
                            rest_int: true,
                            rest: 0,
                        });
                        return Ok(Flow::Go);
                    }
                }
            }
            Some((c, at)) if c != k => {
                let hint = match self.delim {
                    Delimiter::Byte(d) if k > c => format!(
                        " (a field that contains {} must be quoted)",
                        Delimiter::Byte(d).show()
                    ),
                    _ => String::new(),
                };
                let hint = if hint.is_empty() && rec.raw.contains(&b'"') {
                    " (fields are quoted: pass the delimiter, e.g. delimiter=' ')".to_string()
                } else if hint.is_empty()
                    && k < c
                    && self.delim == Delimiter::Byte(b'\t')
                    && rec.raw.contains(&b' ')
                {
                    "; if spaces separate fields too, pass delimiter='whitespace'".to_string()
                } else if hint.is_empty() {
                    "; if each line lists a node and its neighbours (an adjacency list), pass \
                     format='adjlist'"
                        .to_string()
                } else {
                    hint
                };
                return Err(self.err(
                    rec.line,
                    rec.raw,
                    format!(
                        "found {k} column{}, but line {at} has {c}{hint}",
                        if k == 1 { "" } else { "s" }
                    ),
                ));
            }
            _ => {}
        }
        if self.blank_tail && self.used_fields(rec) > self.cols.need() {
            return Err(self.err(
                rec.line,
                rec.raw,
                format!(
                    "{} fields, but the first line's fields after column {} are empty: pass \
                     weighted=True or weighted=False to say what the others are",
                    self.used_fields(rec),
                    self.cols.need() - 1
                ),
            ));
        }
        if let (Some(t), None) = (self.cols.edge_type, self.text.directed) {
            let kind = rec.get(t);
            if !kind.eq_ignore_ascii_case(b"undirected") {
                return Err(self.err(
                    rec.line,
                    rec.raw,
                    format!(
                        "an edge of Type {} in a Gephi edge table, read as undirected: pass \
                         directed=True to keep the directions, or directed=False to merge them",
                        quote_bytes(kind)
                    ),
                ));
            }
        }
        let (s, d) = (rec.get(self.cols.src), rec.get(self.cols.dst));
        if let Some(h) = &mut self.held {
            h.rest += 1;
            h.rest_int &= int_like(s) && int_like(d);
        }
        let w = match dict {
            Some(_) => dict_w.unwrap_or(b""),
            None => self.cols.weight.map_or(b"".as_slice(), |c| rec.get(c)),
        };
        self.edge(b, rec.line, rec.raw, s, d, w)
    }

    #[inline]
    fn edge<S: EdgeSink>(
        &mut self,
        b: &mut S,
        line: u64,
        raw: &[u8],
        s: &[u8],
        d: &[u8],
        wt: &[u8],
    ) -> Result<Flow> {
        let w = if self.weighted {
            let comma = (self.text.decimal_comma).unwrap_or(self.delim == Delimiter::Byte(b';'));
            let x = parse_weight(wt, comma).ok_or_else(|| {
                self.err(line, raw, format!("non-numeric weight {}", quote_bytes(wt)))
            })?;
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
                return Err(self.err(
                    line,
                    raw,
                    format!(
                        "weight {} {why}; weights must be finite and > 0",
                        quote_bytes(wt)
                    ),
                ));
            }
            check_weight(x).map_err(|_| {
                self.err(
                    line,
                    raw,
                    format!("weight {} is outside the float32 range", quote_bytes(wt)),
                )
            })?
        } else {
            1.0
        };
        if self.delim == Delimiter::Whitespace
            && (s.first() == Some(&b'"') || d.first() == Some(&b'"'))
        {
            return Err(self.err(
                line,
                raw,
                "a quoted field in a whitespace-separated file; if fields are quoted, pass the \
                 delimiter (e.g. delimiter=' ' or delimiter='\\t')",
            ));
        }
        let r = match self.ids {
            IdMode::Str => {
                for (t, col) in [(s, self.cols.src), (d, self.cols.dst)] {
                    if t.is_empty() {
                        return Err(self.err(line, raw, format!("empty node id in column {col}")));
                    }
                }
                match (std::str::from_utf8(s), std::str::from_utf8(d)) {
                    (Ok(s), Ok(d)) => b.push_str(s, d, w),
                    _ => return Err(self.err(line, raw, "node id is not valid UTF-8")),
                }
            }
            mode => {
                let mut v = [0i64; 2];
                for (slot, t) in v.iter_mut().zip([s, d]) {
                    if mode == IdMode::Auto {
                        match canonical_int(t) {
                            Some(x) => *slot = x,
                            None => return Ok(Flow::NeedStr),
                        }
                        continue;
                    }
                    match parse_int(t) {
                        IntTok::Int(x) => *slot = x,
                        IntTok::Overflow => {
                            return Err(self.err(
                                line,
                                raw,
                                format!(
                                "id {} overflows int64 (id_kind='str' keeps such ids as strings)",
                                String::from_utf8_lossy(t)
                            ),
                            ))
                        }
                        IntTok::NotInt => {
                            return Err(self.err(
                                line,
                                raw,
                                format!(
                                    "id {} is not an integer (id_kind={})",
                                    quote_bytes(t),
                                    if mode == IdMode::Int {
                                        "'int'"
                                    } else {
                                        "'implicit'"
                                    }
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
            Err(Error::InvalidInput(m)) => return Err(self.err(line, raw, m)),
            Err(e) => return Err(e),
        }
        self.edge_lines += 1;
        Ok(Flow::Go)
    }

    /// Settles a held first record at the end of its file. `Some(plan)`: read again.
    fn settle<S: EdgeSink>(&mut self, b: &mut S, merge: Merge) -> Result<Option<Plan>> {
        let Some(h) = self.held.take() else {
            return Ok(None);
        };
        let header = if h.rest > 0 && h.rest_int {
            true
        } else if b.has_str_id(&h.src) || b.has_str_id(&h.dst) {
            false
        } else {
            self.text.flavor != Flavor::EdgeList
        };
        if header {
            self.header(h.line, &h.raw, None, true)?;
            return Ok(None);
        }
        // Data: an edge read last gives the same graph when the order of duplicates does not
        // matter; otherwise read again with the decision made.
        let order_free = !self.weighted || merge == Merge::Max;
        if self.ids == IdMode::Str && order_free {
            return match self.edge(b, h.line, &h.raw, &h.src, &h.dst, &h.weight)? {
                Flow::Go => Ok(None),
                Flow::NeedStr => unreachable!("string ids"),
            };
        }
        let mut plan = self.plan.clone();
        plan.header[self.index] = Some(false);
        if self.ids == IdMode::Auto {
            plan.ids = IdMode::Str;
        }
        Ok(Some(plan))
    }
}

struct PassInput<'a> {
    inputs: &'a [PathBuf],
    delims: &'a [Delimiter],
    text: &'a TextOptions,
    cols: &'a Cols,
    weighted: bool,
    merge: Merge,
}

fn read_pass<S: EdgeSink>(
    input: &PassInput<'_>,
    plan: &Plan,
    b: &mut S,
    stats: &mut TextStats,
    report: &dyn Fn(u64) -> bool,
) -> Result<Outcome> {
    let mut before = 0u64;
    for (index, path) in input.inputs.iter().enumerate() {
        let name = path.display().to_string();
        let count = Rc::new(Cell::new(0u64));
        let delim = input.delims[index];
        let mut fs = FileState {
            name: &name,
            index,
            text: input.text,
            cols: input.cols,
            plan,
            delim,
            weighted: input.weighted,
            ids: plan.ids,
            ncols: None,
            held: None,
            edge_lines: 0,
            headers: Vec::new(),
            header_seen: None,
            counts: None,
            blank_tail: false,
        };
        let mut need_str = false;
        let mut sc = Scanner::new(delim, &input.text.comment);
        let rep = |done: u64| report(before + done);
        let lines = sc.scan(path, BLOCK, count.clone(), &rep, &mut |rec| {
            Ok(match fs.record(b, rec)? {
                Flow::Go => Step::Go,
                Flow::NeedStr => {
                    need_str = true;
                    Step::Stop
                }
            })
        })?;
        if need_str {
            let mut p = plan.clone();
            p.ids = IdMode::Str;
            return Ok(Outcome::Again(p));
        }
        if let Some(p) = fs.settle(b, input.merge)? {
            return Ok(Outcome::Again(p));
        }
        // METIS (`n m` then one line of neighbours per vertex) where every line happens to
        // have as many fields as the first: its counts add up, which an edge list's do not.
        if let (Some((n, m, raw)), Some((k, _))) = (&fs.counts, fs.ncols) {
            let rest = fs.edge_lines.saturating_sub(1);
            if rest == *n && rest * k as u64 == 2 * m {
                return Err(Error::format(format!(
                    "{name}:1: the first line, {}, counts the {n} vertices and {m} edges of a \
                     METIS graph file (one line of neighbours per vertex follows), which is not \
                     an edge list; convert it to an edge list (e.g. with networkx) first",
                    shown(raw)
                )));
            }
        }
        if fs.edge_lines == 0 && input.inputs.len() == 1 {
            return Err(no_edges(&name, lines, fs.header_seen.as_ref()));
        }
        before += count.get();
        stats.lines += lines;
        stats.edge_lines += fs.edge_lines;
        stats.headers.extend(fs.headers);
    }
    stats.input_bytes = before;
    Ok(Outcome::Done)
}

fn no_edges(name: &str, lines: u64, header: Option<&(u64, Vec<u8>)>) -> Error {
    match header {
        Some((line, raw)) => Error::format(format!(
            "{name}: no edges: the only data line, {} (line {line}), is a header; if it is an \
             edge, pass header=False",
            shown(raw)
        )),
        None if lines == 0 => Error::format(format!("{name}: empty file (no edges found)")),
        None => Error::format(format!(
            "{name}: no edges found (every line is blank or a comment)"
        )),
    }
}

/// Converts text edge lists into a graph file at `output` (atomically: on any error nothing is
/// left at `output` and the temporary files are removed).
///
/// `build.ids` is `Auto` for the typing rule of the module docs; `Int`, `Implicit` and `Str`
/// force a kind (`Int` and `Implicit` accept any decimal integer, `007` included).
/// `build.weighted` is replaced by what `text` resolves. `progress(done, total)`: bytes of input
/// read (compressed bytes for compressed files) out of the inputs' total size; while the graph
/// is sorted and written it is called with `(total, total)`.
pub fn convert_text(
    inputs: &[PathBuf],
    output: &Path,
    text: &TextOptions,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, TextStats)> {
    let mut ids = build.ids;
    if ids == IdMode::Auto && build.num_nodes.is_some() {
        ids = IdMode::Implicit;
    }
    let mut make = |ids: IdMode, weighted: bool| {
        ExternalBuilder::new(
            output,
            BuildOptions {
                ids,
                weighted,
                ..build.clone()
            },
        )
    };
    let (b, stats, total) = read_text(inputs, text, ids, build.merge, &mut make, progress)?;
    // Sorting and writing report (total, total): the input is read; the calls keep Ctrl-C
    // (and callback exceptions) working.
    let finish_hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
    let st = b.finish(Some(&finish_hook))?;
    Ok((st, stats))
}

/// Reads text edge lists into a sink made by `make(ids, weighted)` (made again when a pass
/// must be repeated), by the rules of the module docs. Returns the sink, what the reader saw,
/// and the inputs' total size.
pub fn read_text<S: EdgeSink>(
    inputs: &[PathBuf],
    text: &TextOptions,
    ids: IdMode,
    merge: Merge,
    make: &mut dyn FnMut(IdMode, bool) -> Result<S>,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(S, TextStats, u64)> {
    if inputs.is_empty() {
        return Err(Error::param("no input files given"));
    }
    let named = [&text.src_col, &text.dst_col, &text.weight_col]
        .iter()
        .any(|c| matches!(c, Some(Column::Name(_))));
    let mut text = text.clone();
    if named {
        match text.header {
            Some(false) => {
                return Err(Error::param(
                    "columns are selected by name, but header=False: a name needs a header line",
                ))
            }
            None => text.header = Some(true),
            Some(true) => {}
        }
    }
    let mut total = 0u64;
    for p in inputs {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        total += meta.len();
    }
    let total = total.max(1);
    // Delimiters, per file.
    let mut delims = Vec::with_capacity(inputs.len());
    for p in inputs {
        let d = match text.delimiter {
            Some(d) => d,
            None => match first_line(p, &text.comment)? {
                Some(line) => detect_delimiter(text.flavor, &line),
                None => detect_delimiter(text.flavor, b""),
            },
        };
        delims.push(d);
    }
    // Columns, from the first file's first record when it is a header.
    let first = first_record(&inputs[0], delims[0], &text.comment)?;
    let probe = resolve_columns(&text, None);
    let names: Option<Vec<String>> = match &first {
        Some(r) => {
            let header = match text.header {
                Some(h) => h,
                None => {
                    let ints = probe.as_ref().is_ok_and(|c| {
                        r.len() > c.src.max(c.dst) && int_like(&r[c.src]) && int_like(&r[c.dst])
                    });
                    index_header(r) || (!ints && names_a_header(r, text.flavor != Flavor::EdgeList))
                }
            };
            header.then(|| {
                r.iter()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect()
            })
        }
        None => None,
    };
    // A first record with one field fewer than the next, and not ids (or pandas' default
    // labels `0 1`), is a header without the row names' column (R write.table, pandas
    // to_string): no edge list has that shape.
    let row_names = match &first {
        Some(r)
            if text.header != Some(false)
                && !unnamed(&String::from_utf8_lossy(&r[0]))
                && !r.iter().any(|f| f.first() == Some(&b'{')) =>
        {
            let second = records(&inputs[0], delims[0], &text.comment, 2)?;
            // pandas' labels over its RangeIndex: the next record starts with row 0
            let labels = default_labels(r) && second.get(1).is_some_and(|x| x[0] == b"0");
            second.get(1).is_some_and(|x| x.len() == r.len() + 1)
                && (names.is_some() || labels || !r.iter().all(|f| int_like(f)))
        }
        _ => false,
    };
    let names = if row_names {
        let r = first.as_ref().expect("a first record");
        let given = r.iter().map(|f| String::from_utf8_lossy(f).into_owned());
        Some(std::iter::once(String::new()).chain(given).collect())
    } else {
        names
    };
    let mut cols = resolve_columns(&text, names.as_deref()).map_err(|e| match e {
        Error::Format(m) => Error::format(format!("{}:1: {m}", inputs[0].display())),
        e => e,
    })?;
    cols.row_names = row_names;
    let weighted = cols.weight.is_some();
    let input = PassInput {
        inputs,
        delims: &delims,
        text: &text,
        cols: &cols,
        weighted,
        merge,
    };
    let mut plan = Plan {
        ids,
        header: vec![None; inputs.len()],
    };
    let mut passes = 1;
    loop {
        let mut stats = TextStats {
            passes,
            columns: cols.describe(),
            weighted,
            delimiter: delims[0].show(),
            ..TextStats::default()
        };
        let mut b = make(plan.ids, weighted)?;
        let report = |done: u64| progress.is_none_or(|h| h(done.min(total), total));
        match read_pass(&input, &plan, &mut b, &mut stats, &report)? {
            Outcome::Again(p) => {
                if b.input_edges() > 0 {
                    passes += 1;
                }
                drop(b);
                plan = p;
                continue;
            }
            Outcome::Done => {}
        }
        if stats.edge_lines == 0 {
            let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
            return Err(Error::format(format!(
                "{}: no edges found (the files are empty, or hold only blank lines, comments \
                 and headers)",
                names.join(", ")
            )));
        }
        return Ok((b, stats, total));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::build::{build_in_memory, csr_from_edges, IdTable, Merge};
    use crate::graph::csr::Graph;
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

    fn csv() -> TextOptions {
        TextOptions {
            flavor: Flavor::Csv,
            ..TextOptions::default()
        }
    }

    fn str_ids(g: &Graph) -> Vec<String> {
        (0..g.num_nodes() as u32)
            .map(|v| match g.node_id(v).unwrap() {
                crate::graph::csr::NodeId::Str(s) => s.to_string(),
                other => panic!("not a string id: {other:?}"),
            })
            .collect()
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// The sorted edges of a graph with string ids, as `u-v` (and `:w` when weighted).
    fn edge_set(g: &Graph) -> Vec<String> {
        let ids = str_ids(g);
        let mut out = Vec::new();
        for v in 0..g.num_nodes() as u32 {
            let w = g.weights(v).unwrap();
            for (j, &u) in g.neighbors(v).unwrap().iter().enumerate() {
                let (a, b) = (&ids[v as usize], &ids[u as usize]);
                if g.directed() || a <= b {
                    let w = w.as_ref().map_or(String::new(), |w| format!(":{}", w[j]));
                    out.push(format!("{a}-{b}{w}"));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn what_tools_write_around_an_edge() {
        let dir = tempfile::tempdir().unwrap();
        let d = BuildOptions::default();
        let w = TextOptions {
            weighted: Some(true),
            ..TextOptions::default()
        };
        let cases: Vec<(&str, &[u8], TextOptions, &[&str])> = vec![
            // R write.table(df): a quoted, space-separated header without the row names' column
            (
                "r.txt",
                b"\"from\" \"to\"\n\"1\" \"a\" \"b\"\n\"2\" \"b\" \"c\"\n",
                TextOptions::default(),
                &["a-b", "b-c"],
            ),
            // pandas to_string(): aligned columns under a header without the index's name
            (
                "s.txt",
                b"  source target  weight\n0      a      b     1.5\n1      b      c     2.0\n",
                TextOptions::default(),
                &["a-b:1.5", "b-c:2"],
            ),
            // pandas DataFrame(array).to_string(): default labels `0 1` over `index a b`
            (
                "i.txt",
                b"    0   1\n0  a  b\n1  b  c\n",
                TextOptions::default(),
                &["a-b", "b-c"],
            ),
            // networkx write_edgelist(delimiter=','): the data's commas are not delimiters
            (
                "n.csv",
                b"a,b,{'weight': 2.5, 'color': 'red'}\nb,c,{'weight': 1}\n",
                TextOptions {
                    header: Some(false),
                    ..w.clone()
                },
                &["a-b:2.5", "b-c:1"],
            ),
            // a delimiter ending every line is no column
            ("t.csv", b"a,b,\nb,c,\n", csv(), &["a-b", "b-c"]),
            (
                "t.tsv",
                b"a\tb\t\nb\tc\t\n",
                TextOptions::default(),
                &["a-b", "b-c"],
            ),
            // Gephi's edge table: every edge Undirected
            (
                "g.csv",
                b"Source,Target,Type,Id,Label,Weight\na,b,Undirected,0,,2.0\n",
                csv(),
                &["a-b:2"],
            ),
        ];
        for (name, body, text, want) in cases {
            let (g, _, _) = conv(dir.path(), &[(name, body)], &text, &d)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(edge_set(&g), want, "{name}");
        }
        // Refused, naming what settles it.
        let refused: Vec<(&str, &[u8], &str)> = vec![
            // a trailing delimiter, then a value there
            ("u.csv", b"a,b,\nb,c,5\n", "weighted="),
            // Gephi: a Directed edge in a graph read as undirected
            (
                "h.csv",
                b"Source,Target,Type,Id,Label,Weight\na,b,Directed,0,,1.0\n",
                "directed=True",
            ),
            // a row of an adjacency matrix
            (
                "m.txt",
                b"0 1 0 0\n1 0 1 0\n0 1 0 1\n0 0 1 0\n",
                "ie.from_scipy",
            ),
            // tab-separated, then a line separated by a space
            ("x.txt", b"1\t2\n2 3\n", "delimiter='whitespace'"),
        ];
        for (name, body, want) in refused {
            let opts = if name.ends_with(".csv") {
                csv()
            } else {
                TextOptions::default()
            };
            let _ = std::fs::remove_file(dir.path().join("out.graph"));
            let e = match conv(dir.path(), &[(name, body)], &opts, &d) {
                Ok(_) => panic!("{name}: read"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(want), "{name}: {e}");
            assert!(!dir.path().join("out.graph").exists(), "{name}");
        }
        // Gephi's Directed edges with the direction given
        let (g, _, _) = conv(
            dir.path(),
            &[(
                "k.csv",
                b"Source,Target,Type,Id,Label,Weight\na,b,Directed,0,,1.0\nb,a,Directed,1,,2.0\n",
            )],
            &TextOptions {
                directed: Some(true),
                ..csv()
            },
            &BuildOptions {
                directed: true,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        assert_eq!(edge_set(&g), ["a-b:1", "b-a:2"]);
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
    fn rfc4180_quotes_crlf_bom_and_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let body = "\u{feff}from,to,weight\r\n\"New York\",\"Boston, MA\",1\r\n\"say \"\"hi\"\"\",\"two\nlines\",2\r\nBoston,\"New York\",3\r\n";
        let (g, b, t) = conv(
            dir.path(),
            &[("e.csv", body.as_bytes())],
            &csv(),
            &BuildOptions {
                directed: true,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            str_ids(&g),
            [
                "Boston",
                "Boston, MA",
                "New York",
                "say \"hi\"",
                "two\nlines"
            ]
        );
        assert_eq!((b.num_edges, t.edge_lines, t.lines), (3, 3, 5));
        assert!(t.weighted && t.headers.len() == 1); // a header by its names
        assert!(
            t.headers[0].ends_with("e.csv:1: 'from,to,weight'"),
            "{:?}",
            t.headers
        );
        // A bad record after a multi-line one names its physical line.
        let bad = "a,b\n\"x\ny\",c\nd\n";
        let e = conv(
            dir.path(),
            &[("e.csv", bad.as_bytes())],
            &csv(),
            &BuildOptions::default(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("e.csv:4: found 1 column, but line 1 has 2"),
            "{e}"
        );
        let open = "a,b\nc,\"d\ne,f\n";
        let e = conv(
            dir.path(),
            &[("e.csv", open.as_bytes())],
            &csv(),
            &BuildOptions::default(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("e.csv:2: a quoted field is never closed"), "{e}");
    }

    #[test]
    fn ids_are_integers_only_when_every_id_is_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let d = BuildOptions::default();
        let t = TextOptions::default();
        for (body, kind, nodes) in [
            (&b"0 1\n1 2\n"[..], "implicit", 3),
            (b"1 2\n001 2\n", "utf8", 3),
            (b"1 2\n-0 2\n", "utf8", 3),
            (b"1 2\n+1 2\n", "utf8", 3),
            (b"1 99999999999999999999\n", "utf8", 2),
            (b"-5 7\n", "int64", 2),
        ] {
            let (g, b, _) = conv(dir.path(), &[("e.txt", body)], &t, &d).unwrap();
            assert_eq!((b.id_kind, g.num_nodes()), (kind, nodes), "{body:?}");
        }
        // Int ids then a string id in a later file: read again with strings.
        let (g, _, t2) = conv(
            dir.path(),
            &[("a.txt", b"1 2\n2 3\n"), ("b.txt", b"3 x\n")],
            &t,
            &d,
        )
        .unwrap();
        assert_eq!(
            (t2.passes, str_ids(&g)),
            (2, vec!["1".into(), "2".into(), "3".into(), "x".into()])
        );
        // Forced kinds read any decimal integer.
        let (g, _, _) = conv(
            dir.path(),
            &[("e.txt", b"007 +8\n")],
            &t,
            &BuildOptions {
                ids: IdMode::Int,
                ..BuildOptions::default()
            },
        )
        .unwrap();
        assert_eq!(g.int_ids().unwrap(), vec![7, 8]);
    }

    #[test]
    fn header_rule() {
        let dir = tempfile::tempdir().unwrap();
        let d = BuildOptions::default();
        let txt = TextOptions::default();
        // (file, options, nodes, edges, header detected)
        type Case<'a> = (&'a str, &'a [u8], TextOptions, u64, u64, bool);
        let cases: Vec<Case<'_>> = vec![
            // names a known pair: a header in any text
            ("a.txt", b"src dst\nx y\n", txt.clone(), 2, 1, true),
            // a non-integer line above integer ids
            ("b.txt", b"a b\n1 2\n2 3\n", txt.clone(), 3, 2, true),
            // string ids: the first line's ids appear again -> data
            ("c.csv", b"alice,bob\nbob,carol\n", csv(), 3, 2, false),
            // CSV convention: unknown names, never seen again -> header
            ("d.csv", b"id_1,id_2\nuser_3,user_17\n", csv(), 2, 1, true),
            // edge list convention: no header
            (
                "e.txt",
                b"id_1 id_2\nuser_3 user_17\n",
                txt.clone(),
                4,
                2,
                false,
            ),
            // pandas/R index column: empty first name
            ("f.csv", b",a,b\n0,x,y\n1,y,z\n", csv(), 3, 2, true),
            // integers: data
            ("g.csv", b"1,2\n2,3\n", csv(), 3, 2, false),
        ];
        for (name, body, text, n, m, header) in cases {
            let (g, b, t) = conv(dir.path(), &[(name, body)], &text, &d).unwrap();
            assert_eq!(
                (g.num_nodes() as u64, b.num_edges, !t.headers.is_empty()),
                (n, m, header),
                "{name}"
            );
        }
        // Forced either way.
        let no = TextOptions {
            header: Some(false),
            ..csv()
        };
        let (_, b, _) = conv(dir.path(), &[("d.csv", b"id_1,id_2\nu,v\n")], &no, &d).unwrap();
        assert_eq!(b.num_edges, 2);
        // Header only: refused, with the way out.
        let e = conv(dir.path(), &[("h.csv", b"alice,bob\n")], &csv(), &d)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("is a header; if it is an edge, pass header=False"),
            "{e}"
        );
        // A weighted read where the data line is the first line and weights are summed:
        // the decision is made by a second pass so duplicates add in file order.
        let w = TextOptions {
            weighted: Some(true),
            ..csv()
        };
        let (g, _, t) = conv(
            dir.path(),
            &[("w.csv", b"a,b,0.1\nb,a,0.2\na,b,0.3\n")],
            &w,
            &d,
        )
        .unwrap();
        assert_eq!((g.num_nodes(), t.passes), (2, 2));
        let a = g.lookup_str("a").unwrap().unwrap();
        assert_eq!(
            &*g.weights(a).unwrap().unwrap(),
            &[(0.1f32 + 0.2f32) + 0.3f32]
        );
    }

    #[test]
    fn refuses_what_is_not_an_edge_list() {
        let dir = tempfile::tempdir().unwrap();
        let d = BuildOptions::default();
        let t = TextOptions::default();
        for (body, want) in [
            (&b"{\"a\": [1, 2]}"[..], "is JSON, not a text edge list"),
            (b"\x00\x01\x02binary", "holds binary data"),
            (
                b"IEGRAPH\x00rest",
                "is an instant-embedding graph file already",
            ),
            (b"alice\nbob\n", "found 1 column"),
            (b"a;b\nc;d\n", "pass delimiter=';'"),
            (
                b"sep=;\r\nsource;target\r\n1;2\r\n",
                "delete that line and pass delimiter=';'",
            ),
            (
                b"src,dst\n\"say \\\"hi\\\"\",bob\n",
                "a quote inside a quoted field is neither doubled",
            ),
            (b"", "empty file"),
            (b"# only\n\n", "every line is blank or a comment"),
        ] {
            let e = conv(dir.path(), &[("in.txt", body)], &t, &d).err().unwrap();
            let msg = e.to_string();
            assert!(matches!(e, Error::Format(_)) && msg.contains(want), "{msg}");
            assert!(!dir.path().join("out.graph").exists());
        }
        std::fs::write(dir.path().join("w.graph"), b"\x81\x02").unwrap();
        std::fs::write(dir.path().join("w.properties"), b"nodes=2\n").unwrap();
        let e = convert_text(
            &[dir.path().join("w.graph")],
            &dir.path().join("o.graph"),
            &t,
            &d,
            None,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("is a WebGraph BV graph"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let w = TextOptions {
            weighted: Some(true),
            ..TextOptions::default()
        };
        let d = BuildOptions::default();
        let t = TextOptions::default();
        let cases: Vec<(&[u8], BuildOptions, TextOptions, &str)> = vec![
            (
                b"1 2\n3\n",
                d.clone(),
                t.clone(),
                ":2: found 1 column, but line 1 has 2; if each line lists a node",
            ),
            (
                b"# c\n1 2 x\n",
                d.clone(),
                w.clone(),
                ":2: non-numeric weight 'x'",
            ),
            (
                b"1 2 nan\n",
                d.clone(),
                w.clone(),
                ":1: weight 'nan' is NaN",
            ),
            (
                b"1 2 inf\n",
                d.clone(),
                w.clone(),
                ":1: weight 'inf' is infinite",
            ),
            (b"1 2 -1\n", d.clone(), w.clone(), ":1: weight '-1' is <= 0"),
            (
                b"1 2 1e39\n",
                d.clone(),
                w.clone(),
                "outside the float32 range",
            ),
            (
                b"1 99999999999999999999\n",
                BuildOptions {
                    ids: IdMode::Int,
                    ..d.clone()
                },
                t.clone(),
                ":1: id 99999999999999999999 overflows int64",
            ),
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
                b"a,b\nc,\n",
                d.clone(),
                t.clone(),
                ":2: empty node id in column 1",
            ),
            (
                b"\"a b\" c\n",
                d.clone(),
                t.clone(),
                "a quoted field in a whitespace",
            ),
            (
                b"1,2\n1;2\n",
                d.clone(),
                t.clone(),
                ":2: found 1 column, but line 1 has 2",
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
        for bad in [
            TextOptions {
                weight_col: Some(Column::Index(2)),
                weighted: Some(false),
                ..TextOptions::default()
            },
            TextOptions {
                dst_col: Some(Column::Index(0)),
                ..TextOptions::default()
            },
            TextOptions {
                src_col: Some(Column::Name("from".into())),
                header: Some(false),
                ..TextOptions::default()
            },
        ] {
            assert!(matches!(
                convert_text(&p, &out, &bad, &d, None),
                Err(Error::InvalidParameter(_))
            ));
        }
        assert!(matches!(
            convert_text(&[dir.path().join("nope")], &out, &t, &d, None),
            Err(Error::Io { .. })
        ));
    }

    #[test]
    fn int_parsers() {
        assert_eq!(parse_int(b"-9223372036854775808"), IntTok::Int(i64::MIN));
        assert_eq!(parse_int(b"9223372036854775807"), IntTok::Int(i64::MAX));
        assert_eq!(parse_int(b"9223372036854775808"), IntTok::Overflow);
        assert_eq!(parse_int(b"-9223372036854775809"), IntTok::Overflow);
        assert_eq!(parse_int(b"+7"), IntTok::Int(7));
        for t in [&b""[..], b"-", b"1.0", b"0x1", b"1e3", b"12a"] {
            assert_eq!(parse_int(t), IntTok::NotInt, "{t:?}");
        }
        for (t, want) in [
            (&b"0"[..], Some(0)),
            (b"-12", Some(-12)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"007", None),
            (b"-0", None),
            (b"+7", None),
            (b"-", None),
            (b"", None),
            (b"00", None),
            (b"9223372036854775808", None),
        ] {
            assert_eq!(canonical_int(t), want, "{t:?}");
        }
        assert_eq!(parse_weight(b"1,5", true), Some(1.5));
        assert_eq!(parse_weight(b"1,5", false), None);
    }
}
