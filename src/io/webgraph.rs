//! WebGraph BV graphs (`BASENAME.graph` + `BASENAME.properties`) -> graph file, through the
//! out-of-core builder (`external.rs`).
//!
//! The bit stream is decoded by the `webgraph` crate (the Rust port of the reference
//! implementation), sequentially: no `.offsets` or `.ef` file is needed, and memory is the
//! builder's budget plus the decoder's window of `windowsize + 1` successor lists. The `.graph`
//! file is memory-mapped (page cache, not heap).
//!
//! Node ids are the WebGraph node numbers `0..n-1`, `n` from the properties (isolated nodes are
//! kept). Arcs are directed; an undirected build symmetrises them as for any other input (a
//! reciprocal pair becomes one edge), and self-loops follow `BuildOptions::self_loops`.
//!
//! # Corrupt input
//! The crate's decoder trusts its input: a corrupt stream can make it slice out of bounds,
//! allocate without limit or run a loop for 2^64 turns. Every value it reads therefore goes
//! through [`Checked`], which follows the BV layout (degree, reference, copy blocks, intervals,
//! residuals) and stops the decode at the first value that no graph with the declared node and
//! arc counts can contain, and the word source stops a decode that runs past the end of the
//! file. So a damaged file gives a one-line `Error::Format`, never a panic, an abort or a hang
//! (dsi-bitstream's own debug assertions, which assume a valid stream, are off in every
//! profile: see Cargo.toml).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use ::webgraph::graphs::bvgraph::sequential::NodeLabels;
use ::webgraph::graphs::bvgraph::{CompFlags, Decode, DynCodesDecoder};
use dsi_bitstream::codes::ToInt;
use dsi_bitstream::impls::BufBitReader;
use dsi_bitstream::prelude::CodesRead;
use dsi_bitstream::traits::{BitSeek, Endianness, WordRead, WordSeek, BE, LE};

use crate::error::{Error, Result};
use crate::graph::external::{BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn};
use crate::io::source::EdgeSink;

/// The reading options this format uses beyond those every format takes (`io::FORMATS`).
pub const OPTIONS: &[&str] = &["weighted", "id_kind", "properties"];

/// Largest node count (the graph file indexes nodes with u32).
const MAX_NODES: u64 = u32::MAX as u64;
/// Largest `windowsize` accepted (the decoder allocates one list per window slot; WebGraph's
/// own tools use 7 by default).
const MAX_WINDOW: u64 = 1 << 20;
/// Arcs between two progress calls.
const PROGRESS_ARCS: u64 = 1 << 12;

/// The two files of a BV graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebGraphFiles {
    pub graph: PathBuf,
    pub properties: PathBuf,
}

impl WebGraphFiles {
    /// Files named by `path`: `BASENAME.graph`, `BASENAME.properties` or `BASENAME` itself.
    /// `properties` overrides the properties file (for a graph whose properties live elsewhere
    /// or under another name).
    pub fn resolve(path: &Path, properties: Option<&Path>) -> WebGraphFiles {
        let with = |ext: &str| {
            let mut s = path.as_os_str().to_owned();
            s.push(ext);
            PathBuf::from(s)
        };
        let (graph, props) = match path.extension().and_then(|e| e.to_str()) {
            Some("graph") => (path.to_path_buf(), path.with_extension("properties")),
            Some("properties") => (path.with_extension("graph"), path.to_path_buf()),
            _ => (with(".graph"), with(".properties")),
        };
        WebGraphFiles {
            graph,
            properties: properties.map_or(props, Path::to_path_buf),
        }
    }
}

/// What the `.properties` file declares.
#[derive(Clone, Debug)]
pub struct BvProperties {
    pub num_nodes: u64,
    pub num_arcs: u64,
    pub big_endian: bool,
    pub flags: CompFlags,
}

/// What the reader saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebGraphStats {
    /// Size of the `.graph` file.
    pub input_bytes: u64,
    /// Nodes declared by the properties (all present in the output).
    pub nodes: u64,
    /// Arcs decoded (equal to the declared count).
    pub arcs: u64,
}

fn get<'a>(map: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    map.get(key).map(|s| s.trim())
}

fn count(map: &HashMap<String, String>, key: &str, name: &str) -> Result<u64> {
    let v = get(map, key).ok_or_else(|| {
        Error::format(format!(
            "{name}: no '{key}' property (is this the .properties file of a WebGraph BV graph?)"
        ))
    })?;
    v.parse::<u64>().map_err(|_| {
        Error::format(format!(
            "{name}: property '{key}' is not a non-negative integer: {v:?}"
        ))
    })
}

/// Reads and checks a BV graph's `.properties` file.
pub fn read_properties(path: &Path) -> Result<BvProperties> {
    let name = path.display().to_string();
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let map = java_properties::read(BufReader::new(f))
        .map_err(|e| Error::format(format!("{name}: not a Java properties file: {e}")))?;
    if let Some(class) = get(&map, "graphclass") {
        if !(class == "BVGraph" || class.ends_with(".BVGraph")) {
            let hint = match get(&map, "underlyinggraph") {
                Some(u) => format!("; convert its underlying graph {u:?} instead"),
                None => String::new(),
            };
            return Err(Error::format(format!(
                "{name}: graphclass {class} is not a BV graph (only it.unimi.dsi.webgraph.BVGraph \
                 files can be read){hint}"
            )));
        }
    }
    let num_nodes = count(&map, "nodes", &name)?;
    let num_arcs = count(&map, "arcs", &name)?;
    if num_nodes > MAX_NODES {
        return Err(Error::input(format!(
            "{name}: the graph has {num_nodes} nodes, more than the graph file format's limit \
             of {MAX_NODES}"
        )));
    }
    if u128::from(num_arcs) > u128::from(num_nodes) * u128::from(num_nodes) {
        return Err(Error::format(format!(
            "{name}: {num_arcs} arcs cannot exist between {num_nodes} nodes"
        )));
    }
    let big_endian = match get(&map, "endianness").unwrap_or("big") {
        "big" => true,
        "little" => false,
        other => {
            return Err(Error::format(format!(
                "{name}: endianness must be 'big' or 'little', got {other:?}"
            )))
        }
    };
    let flags = if big_endian {
        CompFlags::from_properties::<BE>(&map)
    } else {
        CompFlags::from_properties::<LE>(&map)
    }
    .map_err(|e| Error::format(format!("{name}: {}", one_line(&e))))?;
    if flags.compression_window as u64 > MAX_WINDOW {
        return Err(Error::format(format!(
            "{name}: windowsize {} is out of range (at most {MAX_WINDOW})",
            flags.compression_window
        )));
    }
    Ok(BvProperties {
        num_nodes,
        num_arcs,
        big_endian,
        flags,
    })
}

/// An error chain of the crate (`anyhow`) on one line ("context: cause: cause").
fn one_line(e: &dyn std::fmt::Display) -> String {
    format!("{e:#}").replace('\n', " ")
}

/// Converts the BV graph `files` into a graph file at `output` (atomically: on any error nothing
/// is left at `output`).
///
/// `build.weighted` must be false (BV graphs have no arc labels), `build.ids` `Auto` or
/// `Implicit`, and `build.num_nodes` unset or equal to the declared count. `progress(done,
/// total)`: bytes of the `.graph` file decoded out of its size; while the graph is sorted and
/// written it is called with `(total, total)`.
pub fn convert_webgraph(
    files: &WebGraphFiles,
    output: &Path,
    build: &BuildOptions,
    progress: Option<&ProgressFn<'_>>,
) -> Result<(BuildStats, WebGraphStats)> {
    if build.weighted {
        return Err(Error::param(
            "a WebGraph BV graph has no arc weights; weighted must be False",
        ));
    }
    if !matches!(build.ids, IdMode::Auto | IdMode::Implicit) {
        return Err(Error::param(
            "WebGraph node ids are the integers 0..n-1; id_kind must be 'auto' or 'implicit'",
        ));
    }
    let props = read_properties(&files.properties)?;
    if let Some(k) = build.num_nodes.filter(|&k| k != props.num_nodes) {
        return Err(Error::param(format!(
            "num_nodes is {k}, but {} declares {} nodes",
            files.properties.display(),
            props.num_nodes
        )));
    }
    with_bit_stream(files, |bytes, name| {
        let total = (bytes.len() as u64).max(1);
        let mut b = ExternalBuilder::new(
            output,
            BuildOptions {
                ids: IdMode::Implicit,
                num_nodes: Some(props.num_nodes),
                ..build.clone()
            },
        )?;
        let report = |done: u64| progress.is_none_or(|h| h(done.min(total), total));
        let arcs = decode_into(&props, bytes, name, &mut b, &report)?;
        let finish_hook = |_d: u64, _t: u64| progress.is_none_or(|h| h(total, total));
        let st = b.finish(Some(&finish_hook))?;
        Ok((
            st,
            WebGraphStats {
                input_bytes: bytes.len() as u64,
                nodes: props.num_nodes,
                arcs,
            },
        ))
    })
}

/// Decodes every arc of the BV graph `files` into `sink` (ids `0..n-1`, weight 1), for an
/// update that streams the file into a live graph; returns the number of arcs.
pub fn read_webgraph(files: &WebGraphFiles, sink: &mut impl EdgeSink) -> Result<u64> {
    let props = read_properties(&files.properties)?;
    with_bit_stream(files, |bytes, name| {
        decode_into(&props, bytes, name, sink, &|_| true)
    })
}

/// Runs `f` on the memory-mapped bit stream of `files.graph` (empty for an empty file) and
/// the file's name.
fn with_bit_stream<T>(
    files: &WebGraphFiles,
    f: impl FnOnce(&[u8], &str) -> Result<T>,
) -> Result<T> {
    let name = files.graph.display().to_string();
    let file = File::open(&files.graph).map_err(|e| Error::io(&files.graph, e))?;
    let meta = file.metadata().map_err(|e| Error::io(&files.graph, e))?;
    if meta.is_dir() {
        return Err(Error::io(
            &files.graph,
            std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
        ));
    }
    let mmap = if meta.len() == 0 {
        None
    } else {
        // SAFETY: the map is read-only; as for graph files, the input must not be truncated by
        // another process while it is read.
        let m = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(&files.graph, e))?;
        #[cfg(unix)]
        let _ = m.advise(memmap2::Advice::Sequential);
        Some(m)
    };
    f(mmap.as_deref().unwrap_or(&[]), &name)
}

/// [`decode`] in the stream's byte order.
fn decode_into(
    props: &BvProperties,
    bytes: &[u8],
    name: &str,
    b: &mut impl EdgeSink,
    report: &dyn Fn(u64) -> bool,
) -> Result<u64> {
    if props.big_endian {
        decode::<BE>(props, bytes, name, b, report)
    } else {
        decode::<LE>(props, bytes, name, b, report)
    }
}

/// Decodes every node's successors into `b`; returns the number of arcs.
fn decode<E: Endianness>(
    props: &BvProperties,
    bytes: &[u8],
    name: &str,
    b: &mut impl EdgeSink,
    report: &dyn Fn(u64) -> bool,
) -> Result<u64>
where
    for<'a> BufBitReader<E, Words<'a>>: CodesRead<E> + BitSeek,
{
    let reader = BufBitReader::<E, _>::new(Words { bytes, pos: 0 });
    let decoder = DynCodesDecoder::new(reader, &props.flags)
        .map_err(|e| Error::format(format!("{name}: {}", one_line(&e))))?;
    let stream_bits = bytes.len() as u64 * 8;
    let checked = Checked::new(decoder, props, stream_bits);
    let n = props.num_nodes;
    let mut lists = NodeLabels::new(
        checked,
        n as usize,
        props.flags.compression_window,
        props.flags.min_interval_length,
    );
    let run = catch_unwind(AssertUnwindSafe(|| -> Result<u64> {
        let mut arcs = 0u64;
        let mut next_report = PROGRESS_ARCS;
        for node in 0..n {
            let succ = lists
                .next_successors()
                .map_err(|e| Error::format(format!("{name}: node {node}: {}", one_line(&e))))?;
            // The lists are sorted by the decoder; a repeat means overlapping parts.
            if let Some(w) = succ.windows(2).find(|w| w[0] >= w[1]) {
                return Err(Error::format(format!(
                    "{name}: corrupt bit stream: node {node} lists successor {} twice",
                    w[0]
                )));
            }
            for &s in succ {
                b.push_int(node as i64, s as i64, 1.0)?;
            }
            arcs += succ.len() as u64;
            if arcs >= next_report {
                next_report = arcs + PROGRESS_ARCS;
                if !report(lists.bit_pos().unwrap_or(0) / 8) {
                    return Err(Error::Cancelled);
                }
            }
        }
        let end = lists.bit_pos().unwrap_or(u64::MAX);
        if end > stream_bits {
            return Err(Error::format(format!(
                "{name}: truncated: the bit stream of the {n} nodes needs {end} bits, the file \
                 has {stream_bits}"
            )));
        }
        Ok(arcs)
    }));
    let arcs = match run {
        Ok(r) => r?,
        Err(payload) => {
            return Err(Error::format(match payload.downcast::<Corrupt>() {
                Ok(c) => format!("{name}: {}", c.0),
                Err(other) => {
                    let why = other
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| other.downcast_ref::<&str>().copied())
                        .unwrap_or("unknown cause");
                    format!("{name}: corrupt bit stream (the decoder failed: {why})")
                }
            }))
        }
    };
    if arcs != props.num_arcs {
        return Err(Error::format(format!(
            "{name}: decoded {arcs} arcs, but the properties declare {} (a corrupt .graph, or \
             the .properties file of another graph)",
            props.num_arcs
        )));
    }
    Ok(arcs)
}

/// The `.graph` bytes as the 32-bit words the bit reader consumes (the last one zero-padded).
///
/// The reader may look up to a word beyond the data when it peeks near the end of a valid
/// stream (table decoding), so the first [`SLACK_WORDS`] words past the end are [`PAST_END`]
/// (each byte holds a 1 bit, so a code read there ends within a byte); reading further means
/// the stream runs past the end of the file, and the decode stops there.
struct Words<'a> {
    bytes: &'a [u8],
    pos: usize,
}

const PAST_END: u32 = 0x0101_0101;
const SLACK_WORDS: usize = 4;

impl Words<'_> {
    #[inline]
    fn word(&self, i: usize) -> Option<u32> {
        let rest = self.bytes.get(i.checked_mul(4)?..)?;
        if rest.is_empty() {
            return None;
        }
        let mut w = [0u8; 4];
        let k = rest.len().min(4);
        w[..k].copy_from_slice(&rest[..k]);
        // Words are loaded from memory as the crate's own readers load them.
        Some(u32::from_ne_bytes(w))
    }
}

impl WordRead for Words<'_> {
    type Error = std::convert::Infallible;
    type Word = u32;

    #[inline]
    fn read_word(&mut self) -> std::result::Result<u32, Self::Error> {
        let w = match self.word(self.pos) {
            Some(w) => w,
            None if self.pos < self.bytes.len().div_ceil(4) + SLACK_WORDS => PAST_END,
            None => resume_unwind(Box::new(Corrupt(
                "truncated or corrupt: the bit stream runs past the end of the file".into(),
            ))),
        };
        self.pos += 1;
        Ok(w)
    }

    #[inline]
    fn read_word_opt(&mut self) -> Option<u32> {
        let w = self.word(self.pos)?;
        self.pos += 1;
        Some(w)
    }
}

impl WordSeek for Words<'_> {
    type Error = std::convert::Infallible;

    fn word_pos(&mut self) -> std::result::Result<u64, Self::Error> {
        Ok(self.pos as u64)
    }

    fn set_word_pos(&mut self, word_pos: u64) -> std::result::Result<(), Self::Error> {
        self.pos = usize::try_from(word_pos).unwrap_or(usize::MAX);
        Ok(())
    }
}

/// Why a decode stopped (the unwind payload of [`Checked::fail`]).
struct Corrupt(String);

/// A [`Decode`] that checks each value before the crate's `NodeLabels` uses it, mirroring its
/// use of the values (see `webgraph::graphs::bvgraph::sequential`): the crate never sees a
/// value that would make it slice out of bounds, overflow, over-allocate or loop without end.
/// A bad value unwinds with a [`Corrupt`] payload (without the panic hook: nothing is printed),
/// caught in [`decode`].
struct Checked<D> {
    inner: D,
    n: u64,
    window: u64,
    min_interval: u64,
    arcs_left: u64,
    stream_bits: u64,
    /// Out-degrees of the last `window + 1` nodes (node `v` at `v % (window + 1)`).
    degrees: Vec<u64>,
    started: bool,
    node: u64,
    degree: u64,
    /// Successors of `node` produced so far (copied, in intervals, residuals).
    filled: u64,
    ref_len: u64,
    blocks: u64,
    block_id: u64,
    block_pos: u64,
    first_interval: bool,
    interval_start: u64,
    next_start: u64,
    last_residual: u64,
}

impl<D: Decode + BitSeek> Checked<D> {
    fn new(inner: D, props: &BvProperties, stream_bits: u64) -> Self {
        let window = props.flags.compression_window as u64;
        Checked {
            inner,
            n: props.num_nodes,
            window,
            min_interval: props.flags.min_interval_length as u64,
            arcs_left: props.num_arcs,
            stream_bits,
            degrees: vec![0; window as usize + 1],
            started: false,
            node: 0,
            degree: 0,
            filled: 0,
            ref_len: 0,
            blocks: 0,
            block_id: 0,
            block_pos: 0,
            first_interval: true,
            interval_start: 0,
            next_start: 0,
            last_residual: 0,
        }
    }

    #[cold]
    fn fail(&mut self, what: String) -> ! {
        // A value read from past the end of the file is truncation, whatever it looks like.
        let msg = if self.inner.bit_pos().unwrap_or(u64::MAX) > self.stream_bits {
            self.truncated()
        } else {
            format!("corrupt bit stream at node {}: {what}", self.node)
        };
        resume_unwind(Box::new(Corrupt(msg)))
    }

    fn truncated(&self) -> String {
        format!(
            "truncated: the file ends inside node {} of {} ({} bits)",
            self.node, self.n, self.stream_bits
        )
    }

    /// Adds `k` successors to the current node, which must not exceed its degree.
    #[inline]
    fn fill(&mut self, k: u64, what: &str) {
        match self.filled.checked_add(k) {
            Some(f) if f <= self.degree => self.filled = f,
            _ => self.fail(format!(
                "{what} give more successors than its out-degree {}",
                self.degree
            )),
        }
    }
}

impl<D: Decode + BitSeek> BitSeek for Checked<D> {
    type Error = D::Error;

    fn bit_pos(&mut self) -> std::result::Result<u64, Self::Error> {
        self.inner.bit_pos()
    }

    fn set_bit_pos(&mut self, bit_pos: u64) -> std::result::Result<(), Self::Error> {
        self.inner.set_bit_pos(bit_pos)
    }
}

impl<D: Decode + BitSeek> Decode for Checked<D> {
    #[inline]
    fn read_outdegree(&mut self) -> u64 {
        if self.started {
            self.node += 1;
        }
        self.started = true;
        if self.inner.bit_pos().unwrap_or(u64::MAX) > self.stream_bits {
            self.node -= 1; // the previous node ran past the end
            resume_unwind(Box::new(Corrupt(self.truncated())));
        }
        let d = self.inner.read_outdegree();
        if d > self.n {
            self.fail(format!(
                "out-degree {d} exceeds the {} nodes of the graph",
                self.n
            ));
        }
        if d > self.arcs_left {
            self.fail("the arcs exceed the declared count (wrong .properties file?)".into());
        }
        self.arcs_left -= d;
        self.degree = d;
        self.filled = 0;
        let slot = (self.node % (self.window + 1)) as usize;
        self.degrees[slot] = d;
        d
    }

    #[inline]
    fn read_reference_offset(&mut self) -> u64 {
        let r = self.inner.read_reference_offset();
        if r > self.window || r > self.node {
            self.fail(format!(
                "reference {r} is outside the window of {}",
                self.window
            ));
        }
        if r > 0 {
            self.ref_len = self.degrees[((self.node - r) % (self.window + 1)) as usize];
        }
        r
    }

    #[inline]
    fn read_block_count(&mut self) -> u64 {
        let c = self.inner.read_block_count();
        if c == 0 {
            let all = self.ref_len;
            self.fill(all, "the copied list");
        } else if c - 1 > self.ref_len {
            // Every block after the first has at least one element.
            self.fail(format!(
                "{c} copy blocks for a reference list of {}",
                self.ref_len
            ));
        }
        self.blocks = c;
        self.block_id = 0;
        c
    }

    #[inline]
    fn read_block(&mut self) -> u64 {
        let b = self.inner.read_block();
        if self.block_id == 0 {
            if b > self.ref_len {
                self.fail(format!(
                    "copy block {b} is longer than the reference list ({})",
                    self.ref_len
                ));
            }
            self.fill(b, "the copy blocks");
            self.block_pos = b;
        } else {
            let end = u128::from(self.block_pos) + u128::from(b) + 1;
            if end > u128::from(self.ref_len) {
                self.fail(format!(
                    "copy blocks run past the reference list ({})",
                    self.ref_len
                ));
            }
            if self.block_id % 2 == 0 {
                self.fill(b + 1, "the copy blocks");
            }
            self.block_pos = end as u64;
        }
        self.block_id += 1;
        if self.block_id == self.blocks && self.blocks % 2 == 0 {
            let rest = self.ref_len - self.block_pos;
            self.fill(rest, "the copy blocks");
        }
        b
    }

    #[inline]
    fn read_interval_count(&mut self) -> u64 {
        let k = self.inner.read_interval_count();
        // Called only when successors are left and min_interval > 0.
        let left = self.degree - self.filled;
        if k > left / self.min_interval.max(1) {
            self.fail(format!("{k} intervals for {left} remaining successors"));
        }
        self.first_interval = true;
        k
    }

    #[inline]
    fn read_interval_start(&mut self) -> u64 {
        let v = self.inner.read_interval_start();
        let start = if self.first_interval {
            self.first_interval = false;
            i128::from(self.node) + i128::from(v.to_int())
        } else {
            i128::from(self.next_start) + 1 + i128::from(v)
        };
        if start < 0 || start > i128::from(self.n) {
            self.fail(format!("interval start {start} is outside 0..{}", self.n));
        }
        self.interval_start = start as u64;
        v
    }

    #[inline]
    fn read_interval_len(&mut self) -> u64 {
        let v = self.inner.read_interval_len();
        let len = u128::from(v) + u128::from(self.min_interval);
        let end = u128::from(self.interval_start) + len;
        if end > u128::from(self.n) {
            self.fail(format!("interval end {end} is past node {}", self.n));
        }
        self.fill(len as u64, "the intervals");
        self.next_start = end as u64;
        v
    }

    #[inline]
    fn read_first_residual(&mut self) -> u64 {
        let v = self.inner.read_first_residual();
        let x = i128::from(self.node) + i128::from(v.to_int());
        if x < 0 || x >= i128::from(self.n) {
            self.fail(format!("successor {x} is outside 0..{}", self.n));
        }
        self.last_residual = x as u64;
        self.fill(1, "the residuals");
        v
    }

    #[inline]
    fn read_residual(&mut self) -> u64 {
        let v = self.inner.read_residual();
        let x = u128::from(self.last_residual) + 1 + u128::from(v);
        if x >= u128::from(self.n) {
            self.fail(format!("successor {x} is outside 0..{}", self.n));
        }
        self.last_residual = x as u64;
        self.fill(1, "the residuals");
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::csr::Graph;
    use crate::graph::external::SelfLoops;
    use ::webgraph::graphs::bvgraph::BvComp;
    use ::webgraph::graphs::vec_graph::VecGraph;
    use dsi_bitstream::dispatch::Codes;
    use std::cell::Cell;
    use std::collections::BTreeSet;

    thread_local! {
        static PANICS: Cell<u32> = const { Cell::new(0) };
    }

    /// Counts panics on this thread (a `resume_unwind` does not call the hook): the corrupt
    /// inputs must be stopped by the checks, not by a panic inside the crate.
    fn count_panics() {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                PANICS.with(|p| p.set(p.get() + 1));
                default(info);
            }));
        });
    }

    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    /// (name, nodes, arcs)
    type ArcList = (&'static str, u64, Vec<(u64, u64)>);

    /// Arc lists: self-loops, reciprocal pairs, isolated nodes (also the last one), runs of
    /// consecutive successors (intervals) and lists that share most successors with an earlier
    /// one (references with copy blocks).
    fn arc_lists() -> Vec<ArcList> {
        let small = vec![
            (0, 1),
            (0, 4),
            (1, 0),
            (2, 2),
            (2, 3),
            (3, 2),
            (4, 5),
            (4, 6),
            (4, 8),
            (4, 9),
            (4, 10),
            (5, 5),
            (6, 0),
            (8, 4),
            (9, 1),
        ];
        let mut mixed = Vec::new();
        let mut s = 7u64;
        let n = 300u64;
        let base: Vec<u64> = (0..40).map(|_| lcg(&mut s) % n).collect();
        for u in 0..n {
            if u % 17 == 5 {
                continue; // isolated (unless some list points here)
            }
            let mut list: BTreeSet<u64> = BTreeSet::new();
            if u % 3 != 0 {
                list.extend(base.iter().filter(|_| lcg(&mut s) % 8 != 0));
            }
            let start = lcg(&mut s) % (n - 20);
            list.extend(start..start + lcg(&mut s) % 12);
            for _ in 0..lcg(&mut s) % 6 {
                list.insert(lcg(&mut s) % n);
            }
            if u % 11 == 0 {
                list.insert(u);
            }
            list.retain(|&v| v % 17 != 5 || u % 2 == 0);
            mixed.extend(list.into_iter().map(|v| (u, v)));
        }
        let star: Vec<(u64, u64)> = (1..50).map(|v| (0, v)).chain([(7, 0)]).collect();
        vec![
            ("small", 12, small),
            ("mixed", n, mixed),
            ("star", 50, star),
            ("no arcs", 5, vec![]),
        ]
    }

    fn flag_sets() -> Vec<(&'static str, CompFlags)> {
        let all = |code| CompFlags {
            outdegrees: code,
            references: code,
            blocks: code,
            intervals: code,
            residuals: code,
            ..CompFlags::default()
        };
        vec![
            ("default", CompFlags::default()),
            (
                "delta, window 10, intervals of 2",
                CompFlags {
                    compression_window: 10,
                    max_ref_count: 5,
                    min_interval_length: 2,
                    ..all(Codes::Delta)
                },
            ),
            ("zeta5", all(Codes::Zeta(5))),
            (
                "pi and omega",
                CompFlags {
                    outdegrees: Codes::Pi(2),
                    references: Codes::Gamma,
                    blocks: Codes::Omega,
                    intervals: Codes::Pi(3),
                    residuals: Codes::Pi(2),
                    ..CompFlags::default()
                },
            ),
            (
                "no references, no intervals",
                CompFlags {
                    compression_window: 0,
                    min_interval_length: 0,
                    ..CompFlags::default()
                },
            ),
        ]
    }

    /// Writes `arcs` (sorted by source and target) as the BV graph `dir/name` with the crate's
    /// own compressor; returns the basename.
    fn compress(
        dir: &Path,
        name: &str,
        n: u64,
        arcs: &[(u64, u64)],
        flags: CompFlags,
        big_endian: bool,
    ) -> PathBuf {
        let mut g = VecGraph::empty(n as usize);
        for &(u, v) in arcs {
            g.add_arc(u as usize, v as usize);
        }
        let base = dir.join(name);
        let mut conf = BvComp::with_basename(&base).comp_flags(flags);
        if big_endian {
            conf.comp_graph::<BE>(&g).unwrap();
        } else {
            conf.comp_graph::<LE>(&g).unwrap();
        }
        base
    }

    /// The expected rows, computed from the arc list alone.
    fn oracle(n: u64, arcs: &[(u64, u64)], directed: bool, loops: SelfLoops) -> Vec<Vec<u32>> {
        let mut rows = vec![BTreeSet::new(); n as usize];
        for &(u, v) in arcs {
            if u == v && loops == SelfLoops::Drop {
                continue;
            }
            rows[u as usize].insert(v as u32);
            if !directed {
                rows[v as usize].insert(u as u32);
            }
        }
        rows.into_iter().map(|r| r.into_iter().collect()).collect()
    }

    fn rows(g: &Graph) -> Vec<Vec<u32>> {
        (0..g.num_nodes() as u32)
            .map(|v| g.neighbors(v).unwrap().to_vec())
            .collect()
    }

    fn convert(
        files: &WebGraphFiles,
        out: &Path,
        build: &BuildOptions,
    ) -> Result<(Graph, BuildStats, WebGraphStats)> {
        let (b, w) = convert_webgraph(files, out, build, None)?;
        let g = Graph::open(out).unwrap();
        g.validate().unwrap();
        Ok((g, b, w))
    }

    #[test]
    fn converts_to_the_arc_list_graph() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.graph");
        for (gname, n, arcs) in arc_lists() {
            for (fname, flags) in flag_sets() {
                for big_endian in [true, false] {
                    let base = compress(dir.path(), "g", n, &arcs, flags, big_endian);
                    let files = WebGraphFiles::resolve(&base, None);
                    for directed in [true, false] {
                        for loops in [SelfLoops::Keep, SelfLoops::Drop] {
                            let build = BuildOptions {
                                directed,
                                self_loops: loops,
                                ..BuildOptions::default()
                            };
                            let what = format!(
                                "{gname}, {fname}, big_endian={big_endian}, \
                                 directed={directed}, {loops:?}"
                            );
                            let (g, b, w) = convert(&files, &out, &build)
                                .unwrap_or_else(|e| panic!("{what}: {e}"));
                            assert_eq!(g.num_nodes() as u64, n, "{what}");
                            assert_eq!(g.directed(), directed, "{what}");
                            assert_eq!(rows(&g), oracle(n, &arcs, directed, loops), "{what}");
                            let loops_in = arcs.iter().filter(|(u, v)| u == v).count() as u64;
                            assert_eq!(w.arcs, arcs.len() as u64, "{what}");
                            assert_eq!(b.input_edges, arcs.len() as u64, "{what}");
                            let dropped = if loops == SelfLoops::Drop {
                                loops_in
                            } else {
                                0
                            };
                            assert_eq!(b.self_loops_dropped, dropped, "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn read_webgraph_streams_every_arc_in_order_into_a_sink() {
        use crate::io::source::{BufferedIds, EdgeBuffer};
        let dir = tempfile::tempdir().unwrap();
        for (gname, n, arcs) in arc_lists() {
            for big_endian in [true, false] {
                let flags = flag_sets()[0].1;
                let base = compress(dir.path(), "g", n, &arcs, flags, big_endian);
                let mut b = EdgeBuffer::new(IdMode::Int, None);
                let count = read_webgraph(&WebGraphFiles::resolve(&base, None), &mut b).unwrap();
                let BufferedIds::Int(s, t) = &b.ids else {
                    panic!("{gname}: string ids")
                };
                let got: Vec<(u64, u64)> = s
                    .iter()
                    .zip(t)
                    .map(|(&u, &v)| (u as u64, v as u64))
                    .collect();
                let mut want = arcs.clone();
                want.sort_unstable();
                want.dedup();
                assert_eq!(got, want, "{gname}, big_endian={big_endian}");
                assert_eq!(count, want.len() as u64, "{gname}");
                assert!(b.weights.iter().all(|&w| w == 1.0), "{gname}");
            }
        }
    }

    #[test]
    fn finds_the_files_from_a_basename_either_file_or_an_explicit_properties_path() {
        let dir = tempfile::tempdir().unwrap();
        let (_, n, arcs) = arc_lists().remove(0);
        // A basename may hold dots (LAW names versions so: eu-2005.v2).
        let dotted = Path::new("d/eu-2005.v2");
        for p in [
            "d/eu-2005.v2",
            "d/eu-2005.v2.graph",
            "d/eu-2005.v2.properties",
        ] {
            assert_eq!(
                WebGraphFiles::resolve(Path::new(p), None),
                WebGraphFiles {
                    graph: dotted.with_extension("v2.graph"),
                    properties: dotted.with_extension("v2.properties"),
                }
            );
        }
        let base = compress(dir.path(), "web", n, &arcs, CompFlags::default(), true);
        let graph = dir.path().join("web.graph");
        let props = dir.path().join("web.properties");
        assert_eq!(WebGraphFiles::resolve(&base, None).graph, graph);
        // Properties elsewhere, under another name.
        let sub = dir.path().join("original");
        std::fs::create_dir(&sub).unwrap();
        std::fs::rename(&graph, sub.join("web.graph")).unwrap();
        let moved = dir.path().join("web.properties.reconstructed");
        std::fs::rename(&props, &moved).unwrap();
        let files = WebGraphFiles::resolve(&sub.join("web.graph"), Some(&moved));
        assert_eq!(files.properties, moved);
        let out = dir.path().join("out.graph");
        let (g, _, _) = convert(&files, &out, &BuildOptions::default()).unwrap();
        assert_eq!(rows(&g), oracle(n, &arcs, false, SelfLoops::Keep));
        // Without it, the missing default properties file is an OS error naming it.
        let e = convert(
            &WebGraphFiles::resolve(&sub.join("web.graph"), None),
            &out,
            &BuildOptions::default(),
        )
        .err()
        .unwrap();
        assert!(
            matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
                && e.to_string().contains("original/web.properties"),
            "{e}"
        );
    }

    /// Only the converter's output may appear in `dir` besides the inputs.
    fn leftovers(dir: &Path, keep: &[&str]) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect()
    }

    #[test]
    fn truncated_or_damaged_streams_are_format_errors_without_panics() {
        count_panics();
        let dir = tempfile::tempdir().unwrap();
        let (_, n, arcs) = arc_lists().remove(1);
        let base = compress(dir.path(), "g", n, &arcs, CompFlags::default(), true);
        let files = WebGraphFiles::resolve(&base, None);
        let good = std::fs::read(&files.graph).unwrap();
        let props = std::fs::read_to_string(&files.properties).unwrap();
        let bits: u64 = props
            .lines()
            .find_map(|l| l.strip_prefix("length="))
            .unwrap()
            .parse()
            .unwrap();
        let expected = oracle(n, &arcs, false, SelfLoops::Keep);
        let out = dir.path().join("out.graph");
        let keep = ["g.graph", "g.properties", "g.offsets"];
        // Every cut that loses stream bits is an error; cutting padding changes nothing. (All
        // cuts near both ends, every 16th one in between.)
        let len = good.len();
        for cut in (0..len).filter(|&c| c < 48 || c + 48 > len || c % 16 == 0) {
            std::fs::write(&files.graph, &good[..cut]).unwrap();
            let r = convert(&files, &out, &BuildOptions::default());
            if (cut as u64) * 8 < bits {
                let e = r.err().unwrap_or_else(|| panic!("cut at {cut}: no error"));
                assert!(matches!(e, Error::Format(_)), "cut at {cut}: {e}");
                assert!(!out.exists());
            } else {
                assert_eq!(rows(&r.unwrap().0), expected, "cut at {cut}");
                std::fs::remove_file(&out).unwrap();
            }
            assert_eq!(leftovers(dir.path(), &keep), Vec::<String>::new());
        }
        // Flipped bits: an error, or a graph that passes validation.
        let mut s = 3u64;
        let mut errors = 0;
        for _ in 0..200 {
            let mut bad = good.clone();
            for _ in 0..1 + lcg(&mut s) % 3 {
                let bit = lcg(&mut s) % bits;
                bad[(bit / 8) as usize] ^= 0x80 >> (bit % 8);
            }
            std::fs::write(&files.graph, &bad).unwrap();
            match convert(&files, &out, &BuildOptions::default()) {
                Err(e) => {
                    assert!(matches!(e, Error::Format(_)), "{e}");
                    assert!(!e.to_string().contains('\n'), "{e}");
                    errors += 1;
                }
                Ok(_) => std::fs::remove_file(&out).unwrap(),
            }
            assert_eq!(leftovers(dir.path(), &keep), Vec::<String>::new());
        }
        assert!(
            errors > 150,
            "only {errors} of 200 damaged streams were noticed"
        );
        assert_eq!(PANICS.with(Cell::get), 0, "the crate panicked");
    }

    #[test]
    fn bad_properties_are_reported_on_one_line() {
        count_panics();
        let dir = tempfile::tempdir().unwrap();
        let (_, n, arcs) = arc_lists().remove(0);
        let base = compress(dir.path(), "g", n, &arcs, CompFlags::default(), true);
        let files = WebGraphFiles::resolve(&base, None);
        let good = std::fs::read_to_string(&files.properties).unwrap();
        let set = |key: &str, value: &str| -> String {
            let mut lines: Vec<String> = good
                .lines()
                .filter(|l| !l.starts_with(&format!("{key}=")))
                .map(String::from)
                .collect();
            lines.push(format!("{key}={value}"));
            lines.join("\n")
        };
        let without = |key: &str| -> String {
            good.lines()
                .filter(|l| !l.starts_with(&format!("{key}=")))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let m = arcs.len();
        let cases: Vec<(String, &str)> = vec![
            (without("nodes"), "no 'nodes' property"),
            (
                set("nodes", "twelve"),
                "property 'nodes' is not a non-negative integer",
            ),
            (
                set("arcs", "-3"),
                "property 'arcs' is not a non-negative integer",
            ),
            (
                set("arcs", &(m + 1).to_string()),
                "decoded 15 arcs, but the properties declare 16",
            ),
            (
                set("arcs", &(m - 1).to_string()),
                "the arcs exceed the declared count",
            ),
            (set("nodes", "9"), "successor 9 is outside 0..9"),
            (set("nodes", "40"), "truncated"),
            (set("arcs", "200"), "200 arcs cannot exist between 12 nodes"),
            (
                set("compressionflags", "OUTDEGREES_NIBBLE"),
                "OUTDEGREES_NIBBLE",
            ),
            (set("compressionflags", "WHATEVER_GAMMA"), "WHATEVER_GAMMA"),
            (set("zetak", "9"), "ζ"),
            (
                set("windowsize", "99999999999"),
                "windowsize 99999999999 is out of range",
            ),
            (
                set("endianness", "middle"),
                "endianness must be 'big' or 'little'",
            ),
            (set("endianness", "little"), "version"),
            (
                set("graphclass", "it.unimi.dsi.webgraph.EFGraph"),
                "graphclass it.unimi.dsi.webgraph.EFGraph is not a BV graph",
            ),
            (
                format!(
                    "{}\nunderlyinggraph=base",
                    set(
                        "graphclass",
                        "it.unimi.dsi.webgraph.labelling.BitStreamArcLabelledImmutableGraph"
                    )
                ),
                "convert its underlying graph \"base\" instead",
            ),
            ("\u{0}\u{1}PK binary".to_string(), "no 'nodes' property"),
        ];
        let out = dir.path().join("out.graph");
        for (content, want) in cases {
            std::fs::write(&files.properties, &content).unwrap();
            let e = convert(&files, &out, &BuildOptions::default())
                .err()
                .unwrap_or_else(|| panic!("no error for {want}"));
            let msg = e.to_string();
            assert!(matches!(e, Error::Format(_)), "{msg}");
            assert!(msg.contains(want), "{msg:?} lacks {want:?}");
            assert!(!msg.contains('\n'), "{msg:?}");
            assert!(!out.exists());
        }
        std::fs::write(&files.properties, set("nodes", "5000000000")).unwrap();
        let e = convert(&files, &out, &BuildOptions::default())
            .err()
            .unwrap();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
        assert_eq!(PANICS.with(Cell::get), 0, "the crate panicked");
    }

    #[test]
    fn options_that_cannot_apply_are_parameter_errors_and_progress_can_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let (_, n, arcs) = arc_lists().remove(1);
        let base = compress(dir.path(), "g", n, &arcs, CompFlags::default(), true);
        let files = WebGraphFiles::resolve(&base, None);
        let out = dir.path().join("out.graph");
        for build in [
            BuildOptions {
                weighted: true,
                ..BuildOptions::default()
            },
            BuildOptions {
                ids: IdMode::Str,
                ..BuildOptions::default()
            },
            BuildOptions {
                num_nodes: Some(n + 1),
                ..BuildOptions::default()
            },
        ] {
            let e = convert(&files, &out, &build).err().unwrap();
            assert!(matches!(e, Error::InvalidParameter(_)), "{e}");
        }
        // A tiny memory limit spills to disk and gives the same graph.
        let small = BuildOptions {
            memory_limit: crate::graph::external::MIN_MEMORY_LIMIT,
            ..BuildOptions::default()
        };
        let (g, b, _) = convert(&files, &out, &small).unwrap();
        assert!(b.segments > 0);
        assert_eq!(rows(&g), oracle(n, &arcs, false, SelfLoops::Keep));
        std::fs::remove_file(&out).unwrap();
        // Progress: bytes of the .graph file; returning false cancels and leaves nothing.
        let size = std::fs::metadata(&files.graph).unwrap().len();
        let calls = std::cell::RefCell::new(Vec::new());
        let hook = |d: u64, t: u64| {
            calls.borrow_mut().push((d, t));
            true
        };
        convert_webgraph(&files, &out, &small, Some(&hook)).unwrap();
        let calls = calls.into_inner();
        assert!(calls.len() > 2 && calls.iter().all(|&(d, t)| t == size && d <= t));
        assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0));
        std::fs::remove_file(&out).unwrap();
        let stop = |_d: u64, _t: u64| false;
        let e = convert_webgraph(&files, &out, &small, Some(&stop))
            .err()
            .unwrap();
        assert!(matches!(e, Error::Cancelled));
        assert!(!out.exists());
    }
}
