//! PyO3 bindings: extract arguments, release the GIL around kernel calls, convert results.
//! Ids, defaults and user-facing conveniences live in the Python facade.

mod cli;
mod compress;
mod config;
mod convert;
mod errors;
mod ids;
mod live;
mod output;
mod read_options;

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::embed as kembed;
use crate::embed::ppr as kppr;
use crate::embed::smooth::Plan;
use crate::error::Error;
use crate::graph::build::{self, Merge};
use crate::graph::csr::{Graph, NodeId};
use crate::graph::external::SelfLoops;
use crate::hashing::{fnv1a64, splitmix64, SignedHasher};
use crate::io::ids::{self as io_ids, IdColumn};
use config::PyEmbeddingConfig;
use errors::IntoPy;
use ids::{id_argument, weight_argument};

/// A graph file opened for reading (memory-mapped), or built in memory. Immutable and
/// thread-safe.
#[pyclass(frozen, module = "instant_embedding._core", name = "Graph")]
pub struct PyGraph {
    inner: Arc<Graph>,
}

/// A byte count as the command line shows it (``24.1 KiB``).
#[pyfunction]
fn human_bytes(n: f64) -> String {
    crate::human::bytes(n)
}

/// A duration in seconds as the command line shows it (``35 µs``, ``9.2 ms``).
#[pyfunction]
fn human_seconds(s: f64) -> String {
    crate::human::seconds(s)
}

/// When and what to write of the progress status line on a stream (`progress::StatusLine`).
#[pyclass(module = "instant_embedding._core", name = "StatusLine")]
struct PyStatusLine {
    inner: crate::progress::StatusLine,
}

#[pymethods]
impl PyStatusLine {
    #[new]
    fn new(desc: &str, unit: &str, in_place: bool, now: f64) -> Self {
        let inner = crate::progress::StatusLine::new(desc, unit, in_place, now);
        PyStatusLine { inner }
    }

    fn update(&mut self, done: u64, total: u64, now: f64) -> Option<String> {
        self.inner.update(done, total, now)
    }

    fn finish(&mut self, done: u64, total: u64, now: f64) -> Option<String> {
        self.inner.finish(done, total, now)
    }
}

/// A count given as the argument `name` (``num_nodes``, ``num_rows``): an int >= 0.
fn count_argument(x: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    let t = x.get_type().name()?.to_string();
    if t == "bool" || t == "bool_" || !x.hasattr("__index__")? {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name} must be an int, got {t}"
        )));
    }
    let n: i128 = x.call_method0("__index__")?.extract()?;
    usize::try_from(n).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!("{name} must be >= 0, got {n}"))
    })
}

fn to_vec<T: numpy::Element + Copy>(a: &PyReadonlyArray1<'_, T>) -> Vec<T> {
    match a.as_slice() {
        Ok(s) => s.to_vec(),
        Err(_) => a.as_array().iter().copied().collect(),
    }
}

#[pymethods]
impl PyGraph {
    #[staticmethod]
    #[pyo3(signature = (path, prefetch=false))]
    fn open(py: Python<'_>, path: PathBuf, prefetch: bool) -> PyResult<Self> {
        let g = py
            .detach(|| crate::live::open::open(&path, prefetch))
            .py_err()?;
        Ok(PyGraph { inner: Arc::new(g) })
    }

    /// A newer snapshot of this graph's file and change log, or None when nothing changed.
    fn refreshed(&self, py: Python<'_>) -> PyResult<Option<PyGraph>> {
        let g = self.inner.clone();
        let fresh = py.detach(move || crate::live::refreshed(&g)).py_err()?;
        Ok(fresh.map(|g| PyGraph { inner: Arc::new(g) }))
    }

    /// Facts about the change log this snapshot shows (``commits``, ``adds``, ``removes``,
    /// ``changed_nodes``, ``new_nodes``, ``bytes``, ``merge``), or None when the file has none.
    fn log_info<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
        self.inner
            .log_state()
            .filter(|s| s.info.exists)
            .map(|s| live::info_dict(py, &s.info))
            .transpose()
    }

    /// Nodes of the graph file alone (without those its change log created).
    #[getter]
    fn base_num_nodes(&self) -> usize {
        self.inner.base_num_nodes()
    }

    /// Whether pushes send read-ahead hints for this mapping (`Graph.open(prefetch=True)`).
    #[getter]
    fn prefetch(&self) -> bool {
        self.inner.prefetch()
    }

    /// Whether internal indices differ from id order (a file written by `reorder`).
    #[getter]
    fn permuted(&self) -> bool {
        self.inner.permuted()
    }

    /// ``Graph(num_nodes=1,000, num_edges=..., undirected, weighted, ids=..., path='...')``.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let g = &self.inner;
        let thousands = |n: u64| {
            let d = n.to_string();
            let mut out = String::new();
            for (i, c) in d.chars().enumerate() {
                if i > 0 && (d.len() - i) % 3 == 0 {
                    out.push(',');
                }
                out.push(c);
            }
            out
        };
        let kind = if g.directed() {
            "directed"
        } else {
            "undirected"
        };
        let w = if g.weighted() { ", weighted" } else { "" };
        let place = match g.path() {
            Some(p) => format!(", path={}", p.to_string_lossy().into_pyobject(py)?.repr()?),
            None => ", in memory".to_string(),
        };
        Ok(format!(
            "Graph(num_nodes={}, num_edges={}, {kind}{w}, ids={}{place})",
            thousands(g.num_nodes() as u64),
            thousands(g.num_edges()),
            g.id_kind().name()
        ))
    }

    /// Pickles by path (reopened with the same ``prefetch``): file-backed graphs only.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (PathBuf, bool))> {
        let g = &slf.borrow().inner;
        let path = g.path().ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(
                "an in-memory Graph cannot be pickled; save() it and pass Graph.open(path)",
            )
        })?;
        let open = slf.get_type().getattr("open")?;
        Ok((open, (path.to_path_buf(), g.prefetch())))
    }

    /// A graph built in memory from edges given by the caller's ids (``src``, ``dst`` and
    /// extra ``nodes``: arrays or sequences of one kind, int or str), numbered by the kernel;
    /// ``self_loops="drop"`` leaves out the edges ``v -> v`` (their nodes stay).
    #[staticmethod]
    #[pyo3(signature = (src, dst, nodes, num_nodes, directed, weights, merge, self_loops="keep"))]
    #[allow(clippy::too_many_arguments)]
    fn build(
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        nodes: &Bound<'_, PyAny>,
        num_nodes: Option<&Bound<'_, PyAny>>,
        directed: bool,
        weights: Option<&Bound<'_, PyAny>>,
        merge: &str,
        self_loops: &str,
    ) -> PyResult<Self> {
        let drop_loops = SelfLoops::parse(self_loops).py_err()? == SelfLoops::Drop;
        let (s, d) = (id_argument(src, "src")?, id_argument(dst, "dst")?);
        let extra = id_argument(nodes, "nodes")?;
        if s.len() != d.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "src and dst have different lengths ({} and {})",
                s.len(),
                d.len()
            )));
        }
        let ids = match (s, d, extra) {
            (IdColumn::Int(src), IdColumn::Int(dst), IdColumn::Int(nodes)) => {
                build::EdgeIds::Int { src, dst, nodes }
            }
            (s, d, n) => {
                let strs = |c: IdColumn| match c {
                    IdColumn::Str(v) => Ok(v),
                    IdColumn::Int(v) if v.is_empty() => Ok(Vec::new()),
                    IdColumn::Int(_) => Err(pyo3::exceptions::PyTypeError::new_err(
                        "src, dst and nodes mix int and str node ids; use one kind",
                    )),
                };
                build::EdgeIds::Str {
                    src: strs(s)?,
                    dst: strs(d)?,
                    nodes: strs(n)?,
                }
            }
        };
        let count = match &ids {
            build::EdgeIds::Int { src, .. } => src.len(),
            build::EdgeIds::Str { src, .. } => src.len(),
        };
        let mut weights = weights.map(|w| weight_argument(w, count)).transpose()?;
        let merge = match merge {
            "sum" => Merge::Sum,
            "max" => Merge::Max,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "merge must be 'sum' or 'max', got {other:?}"
                )))
            }
        };
        let num_nodes = num_nodes
            .map(|n| count_argument(n, "num_nodes"))
            .transpose()?;
        let g = py
            .detach(|| {
                let mut e = build::index_edge_ids(ids, num_nodes)?;
                if drop_loops {
                    e.drop_self_loops(weights.as_mut());
                }
                let parts = build::csr_from_edges(
                    e.num_nodes,
                    &e.src,
                    &e.dst,
                    weights.as_deref(),
                    directed,
                    merge,
                    e.ids,
                )?;
                build::build_in_memory(&parts)
            })
            .py_err()?;
        Ok(PyGraph { inner: Arc::new(g) })
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let g = self.inner.clone();
        py.detach(move || crate::live::save(&g, &path)).py_err()
    }

    fn validate(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.inner.clone();
        py.detach(move || g.validate()).py_err()
    }

    #[getter]
    fn num_nodes(&self) -> usize {
        self.inner.num_nodes()
    }
    #[getter]
    fn num_arcs(&self) -> u64 {
        self.inner.num_arcs()
    }
    #[getter]
    fn num_edges(&self) -> u64 {
        self.inner.num_edges()
    }
    #[getter]
    fn directed(&self) -> bool {
        self.inner.directed()
    }
    #[getter]
    fn weighted(&self) -> bool {
        self.inner.weighted()
    }
    #[getter]
    fn id_kind(&self) -> &'static str {
        self.inner.id_kind().name()
    }
    /// The file this graph is mapped from, as a str (None for an in-memory graph).
    #[getter]
    fn path(&self) -> Option<std::ffi::OsString> {
        self.inner.path().map(|p| p.as_os_str().to_owned())
    }
    #[getter]
    fn file_size(&self) -> usize {
        self.inner.image().len()
    }

    fn degree(&self, v: u32) -> PyResult<u64> {
        self.inner.degree(v).py_err()
    }

    fn strength(&self, v: u32) -> PyResult<f64> {
        self.inner.strength(v).py_err()
    }

    /// Degrees of all nodes (O(n); for statistics).
    fn degrees<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let g = self.inner.clone();
        let d = py
            .detach(move || {
                (0..g.num_nodes() as u32)
                    .map(|v| g.degree(v))
                    .collect::<Result<Vec<_>, _>>()
            })
            .py_err()?;
        Ok(d.into_pyarray(py))
    }

    #[allow(clippy::type_complexity)]
    fn neighbors<'py>(
        &self,
        py: Python<'py>,
        v: u32,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Option<Bound<'py, PyArray1<f32>>>)> {
        let nb = self.inner.neighbors_checked(v).py_err()?.to_vec();
        let w = self
            .inner
            .weights(v)
            .py_err()?
            .map(|w| w.to_vec().into_pyarray(py));
        Ok((nb.into_pyarray(py), w))
    }

    /// Internal indices (uint32) of node ids (an array or a sequence of ints or of strs);
    /// NodeNotFoundError names the first that is not a node, TypeError refuses other values.
    fn index<'py>(
        &self,
        py: Python<'py>,
        nodes: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let ids = id_argument(nodes, "nodes")?;
        let g = self.inner.clone();
        let out = py.detach(move || io_ids::indices(&g, &ids)).py_err()?;
        Ok(out.into_pyarray(py))
    }

    /// Whether ``node`` is a node id of this graph (a value of the other kind, or no id at all,
    /// is not).
    fn __contains__(&self, node: &Bound<'_, PyAny>) -> bool {
        let one = pyo3::types::PyList::new(node.py(), [node]);
        let ids = one.ok().and_then(|l| id_argument(&l, "node").ok());
        ids.is_some_and(|ids| io_ids::indices(&self.inner, &ids).is_ok())
    }

    /// The order (int64 positions) that sorts internal nodes ``nodes`` by their external ids.
    fn id_order<'py>(
        &self,
        py: Python<'py>,
        nodes: PyReadonlyArray1<'py, u32>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let (nodes, g) = (to_vec(&nodes), self.inner.clone());
        let order = py.detach(move || io_ids::id_order(&g, &nodes)).py_err()?;
        Ok(order
            .into_iter()
            .map(i64::from)
            .collect::<Vec<_>>()
            .into_pyarray(py))
    }

    /// Int ids of all nodes in internal order (None for string-id graphs).
    fn int_ids<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<i64>>> {
        self.inner.int_ids().map(|v| v.into_pyarray(py))
    }

    /// String ids of the given internal indices (all nodes when None).
    #[pyo3(signature = (indices=None))]
    fn str_ids(&self, indices: Option<PyReadonlyArray1<'_, u32>>) -> PyResult<Vec<String>> {
        let idx: Vec<u32> = match indices {
            Some(a) => to_vec(&a),
            None => (0..self.inner.num_nodes() as u32).collect(),
        };
        idx.iter()
            .map(|&v| match self.inner.node_id(v).py_err()? {
                NodeId::Str(s) => Ok(s.to_owned()),
                NodeId::Int(i) => Ok(i.to_string()),
            })
            .collect()
    }

    /// External ids of internal indices (any integer array): an int64 array, or a list of str
    /// for string ids; IndexError for an index out of range.
    fn ids<'py>(
        &self,
        py: Python<'py>,
        indices: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let a = py
            .import("numpy")?
            .call_method1("asarray", (indices, "int64"))?;
        let n = self.inner.num_nodes() as i64;
        let mut idx = Vec::new();
        for &v in a.extract::<PyReadonlyArray1<'_, i64>>()?.as_array() {
            if !(0..n).contains(&v) {
                return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                    "internal index out of range 0..{}",
                    n - 1
                )));
            }
            idx.push(v as u32);
        }
        let g = self.inner.clone();
        match py
            .detach(move || crate::output::Ids::of_nodes(&g, &idx))
            .py_err()?
        {
            crate::output::Ids::Int(v) => Ok(v.into_pyarray(py).into_any()),
            crate::output::Ids::Str(v) => Ok(v.into_pyobject(py)?.into_any()),
        }
    }

    /// The 64-bit hash key of internal node `v` (see docs/SPEC.md).
    fn hash_key(&self, v: u32) -> PyResult<u64> {
        self.inner.hash_key(v).py_err()
    }
}

/// Approximate PPR of internal node `node` with `config`'s push settings: (internal indices
/// ascending, scores).
#[pyfunction(name = "ppr")]
#[allow(clippy::type_complexity)]
fn py_ppr<'py>(
    py: Python<'py>,
    graph: &PyGraph,
    node: u32,
    config: &PyEmbeddingConfig,
) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f64>>)> {
    let cfg = config.inner.ppr;
    let g = graph.inner.clone();
    let support = py.detach(move || kppr::ppr(&g, node, &cfg)).py_err()?;
    let (idx, p): (Vec<u32>, Vec<f64>) = support.into_iter().unzip();
    Ok((idx.into_pyarray(py), p.into_pyarray(py)))
}

/// Full push state of internal node `node`: (touched indices ascending, p, r).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn ppr_state<'py>(
    py: Python<'py>,
    graph: &PyGraph,
    node: u32,
    config: &PyEmbeddingConfig,
) -> PyResult<(
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
)> {
    let cfg = config.inner.ppr;
    let g = graph.inner.clone();
    let state = py
        .detach(move || kppr::ppr_state(&g, node, &cfg))
        .py_err()?;
    let mut idx = Vec::with_capacity(state.len());
    let mut p = Vec::with_capacity(state.len());
    let mut r = Vec::with_capacity(state.len());
    for (u, pu, ru) in state {
        idx.push(u);
        p.push(pu);
        r.push(ru);
    }
    Ok((idx.into_pyarray(py), p.into_pyarray(py), r.into_pyarray(py)))
}

/// Cost of one query: `{"touched", "pushes", "support", "heap_bytes"}` (for `info`).
#[pyfunction]
fn ppr_stats(
    py: Python<'_>,
    graph: &PyGraph,
    node: u32,
    config: &PyEmbeddingConfig,
) -> PyResult<std::collections::HashMap<&'static str, u64>> {
    let cfg = config.inner.ppr;
    let g = graph.inner.clone();
    py.detach(move || {
        let mut ws = kppr::Workspace::new();
        kppr::push(&g, node, &cfg, &mut ws)?;
        let mut sup = Vec::new();
        ws.support(&mut sup);
        Ok::<_, Error>(std::collections::HashMap::from([
            ("touched", ws.touched() as u64),
            ("pushes", ws.pushes),
            ("support", sup.len() as u64),
            ("heap_bytes", ws.heap_bytes() as u64),
        ]))
    })
    .py_err()
}

/// The measured cost of embedding each of the internal `nodes` alone on one thread (for
/// `info`): arrays `seconds` (float64) and `support`, `touched`, `pushes`, `heap_bytes`
/// (uint64), one entry per node.
#[pyfunction]
#[pyo3(signature = (graph, nodes, config, map=None))]
fn node_costs<'py>(
    py: Python<'py>,
    graph: &PyGraph,
    nodes: PyReadonlyArray1<'py, u32>,
    config: &PyEmbeddingConfig,
    map: Option<&compress::PyLinearMap>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let (cfg, nodes, g) = (config.inner, to_vec(&nodes), graph.inner.clone());
    let map = map.map(|m| m.inner.clone());
    let costs = py
        .detach(move || kembed::cost::node_costs(&g, &nodes, &cfg, map.as_deref()))
        .py_err()?;
    let out = pyo3::types::PyDict::new(py);
    let seconds: Vec<f64> = costs.iter().map(|c| c.seconds).collect();
    out.set_item("seconds", seconds.into_pyarray(py))?;
    type Field = fn(&kembed::cost::NodeCost) -> u64;
    let fields: [(&str, Field); 4] = [
        ("support", |c| c.support),
        ("touched", |c| c.touched),
        ("pushes", |c| c.pushes),
        ("heap_bytes", |c| c.heap_bytes),
    ];
    for (name, field) in fields {
        let v: Vec<u64> = costs.iter().map(field).collect();
        out.set_item(name, v.into_pyarray(py))?;
    }
    Ok(out)
}

/// What ``info`` reports of a graph: its facts, degree statistics and the spread of one
/// node's embedding cost with ``config`` (``map``: a compressed config's fitted map) over a
/// deterministic sample of ``sample`` nodes (``seed`` picks them); as JSON text and as the
/// text ``info`` prints, whose first line names the graph ``label``.
#[pyfunction]
#[pyo3(signature = (graph, config, label, map=None, sample=50, seed=0))]
fn graph_info(
    py: Python<'_>,
    graph: &PyGraph,
    config: &PyEmbeddingConfig,
    label: &str,
    map: Option<&compress::PyLinearMap>,
    sample: usize,
    seed: u64,
) -> PyResult<(String, String)> {
    let (cfg, g) = (config.inner, graph.inner.clone());
    let map = map.map(|m| m.inner.clone());
    let threads = crate::parallel::resolve_threads(None).py_err()?;
    let report = py
        .detach(move || {
            kembed::report::Report::measure(&g, &cfg, map.as_deref(), sample, seed, threads)
        })
        .py_err()?;
    let json = serde_json::to_string(&report).expect("a report serializes");
    Ok((json, report.text(label)))
}

/// Embeddings of internal nodes `nodes` as a (len(nodes), dim) float32 array, smoothed as
/// `config` says (the nodes within `config.smooth` hops are embedded first); a compressed
/// `config` (`wide_dim > 0`) needs its fitted `map`.
#[pyfunction(name = "embed")]
#[pyo3(signature = (graph, nodes, config, threads=None, map=None))]
fn py_embed<'py>(
    py: Python<'py>,
    graph: &PyGraph,
    nodes: PyReadonlyArray1<'py, u32>,
    config: &PyEmbeddingConfig,
    threads: Option<usize>,
    map: Option<&compress::PyLinearMap>,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let cfg = config.inner;
    let map = map.map(|m| m.inner.clone());
    let nodes = to_vec(&nodes);
    let k = nodes.len();
    let threads = crate::parallel::resolve_threads(threads).py_err()?;
    let g = graph.inner.clone();
    let out = py
        .detach(move || {
            let pool = crate::parallel::pool_for(threads, k)?;
            kembed::embed_nodes_mapped(&g, &nodes, &cfg, map.as_deref(), pool.as_deref())
        })
        .py_err()?;
    out.into_pyarray(py).reshape([k, cfg.dim])
}

/// Smooths `rows`, the unsmoothed rows (before `normalize="l2"`'s scaling) of the nodes `nodes`'
/// smoothing needs (every node, in order, when `nodes` is every node in order), into the rows of
/// `nodes` (`config.smooth` steps), scaled as `config.normalize` says.
#[pyfunction]
#[pyo3(signature = (graph, nodes, rows, config, threads=None))]
fn smooth<'py>(
    py: Python<'py>,
    graph: &PyGraph,
    nodes: PyReadonlyArray1<'py, u32>,
    rows: PyReadonlyArray2<'py, f32>,
    config: &PyEmbeddingConfig,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let nodes = to_vec(&nodes);
    let view = rows.as_array();
    let dim = config.inner.dim;
    if view.ncols() != dim {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "smooth: source rows have {} columns, the config's dim is {dim}",
            view.ncols()
        )));
    }
    // Row-major copy (iter() walks the logical order whatever the strides).
    let rows: Vec<f32> = view.iter().copied().collect();
    let k = nodes.len();
    let steps = config.inner.smooth;
    let threads = crate::parallel::resolve_threads(threads).py_err()?;
    let g = graph.inner.clone();
    let out = py
        .detach(move || {
            let plan = Plan::new(&g, &nodes, steps)?;
            let pool = crate::parallel::pool_for(threads, k)?;
            let mut out = plan.apply(&g, rows, dim, pool.as_deref())?;
            kembed::finish_rows(&config.inner, &mut out, pool.as_deref());
            Ok::<_, crate::error::Error>(out)
        })
        .py_err()?;
    out.into_pyarray(py).reshape([k, dim])
}

/// The `k` rows of `rows` most cosine-similar to row `v` (itself left out), most similar
/// first, with their similarity (for `demo`).
#[pyfunction]
fn cosine_nearest(
    rows: PyReadonlyArray2<'_, f32>,
    v: usize,
    k: usize,
) -> PyResult<Vec<(usize, f64)>> {
    let (flat, dim) = row_major(&rows);
    kembed::similarity::nearest(&flat, dim, v, k).py_err()
}

/// Each row's group (0 or 1) by cosine 2-means started at the rows `seeds` (for `demo`).
#[pyfunction]
fn cosine_two_means<'py>(
    py: Python<'py>,
    rows: PyReadonlyArray2<'py, f32>,
    seeds: [usize; 2],
    rounds: usize,
) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let (flat, dim) = row_major(&rows);
    let groups = kembed::similarity::two_means(&flat, dim, seeds, rounds).py_err()?;
    Ok(groups.into_pyarray(py))
}

/// A 2-D array's values in row-major order, and its row length.
fn row_major(rows: &PyReadonlyArray2<'_, f32>) -> (Vec<f32>, usize) {
    let view = rows.as_array();
    (view.iter().copied().collect(), view.ncols())
}

/// `(dim(key), sign(key))` of the frozen signed hash (for tests and other implementations).
#[pyfunction]
fn hash_bucket(key: u64, seed: u64, dim: usize) -> PyResult<(usize, i32)> {
    if dim == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err("dim must be >= 1"));
    }
    let (d, s) = SignedHasher::new(seed, dim).bucket(key);
    Ok((d, s as i32))
}

#[pyfunction(name = "splitmix64")]
fn py_splitmix64(x: u64) -> u64 {
    splitmix64(x)
}

#[pyfunction(name = "fnv1a64")]
fn py_fnv1a64(data: &[u8]) -> u64 {
    fnv1a64(data)
}

/// xxh3-64 of `data`: the graph file's checksum (for tests and other implementations).
#[pyfunction]
fn xxh3_64(data: &[u8]) -> u64 {
    crate::graph::format::checksum(data)
}

#[pyfunction]
fn resolve_threads(threads: Option<usize>) -> PyResult<usize> {
    crate::parallel::resolve_threads(threads).py_err()
}

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGraph>()?;
    m.add_class::<PyEmbeddingConfig>()?;
    m.add_class::<compress::PyLinearMap>()?;
    m.add_class::<convert::PyGraphBuilder>()?;
    m.add_class::<live::PyLiveWriter>()?;
    m.add_class::<read_options::PyReadOptions>()?;
    m.add_function(wrap_pyfunction!(convert::read_edges, m)?)?;
    m.add_function(wrap_pyfunction!(convert::convert_native, m)?)?;
    m.add_function(wrap_pyfunction!(convert::detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(convert::resolve_format, m)?)?;
    m.add_function(wrap_pyfunction!(convert::dataset_files, m)?)?;
    m.add_function(wrap_pyfunction!(convert::mat_variable, m)?)?;
    m.add_function(wrap_pyfunction!(convert::formats, m)?)?;
    m.add_function(wrap_pyfunction!(convert::table_columns, m)?)?;
    m.add_function(wrap_pyfunction!(convert::csr_edges, m)?)?;
    m.add_function(wrap_pyfunction!(convert::is_graph_file, m)?)?;
    m.add_function(wrap_pyfunction!(ids::node_ids, m)?)?;
    m.add_function(wrap_pyfunction!(ids::edge_weights, m)?)?;
    m.add_function(wrap_pyfunction!(read_options::py_parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(convert::reorder_graph, m)?)?;
    m.add_function(wrap_pyfunction!(py_ppr, m)?)?;
    m.add_function(wrap_pyfunction!(ppr_state, m)?)?;
    m.add_function(wrap_pyfunction!(ppr_stats, m)?)?;
    m.add_function(wrap_pyfunction!(node_costs, m)?)?;
    m.add_function(wrap_pyfunction!(graph_info, m)?)?;
    m.add_function(wrap_pyfunction!(py_embed, m)?)?;
    m.add_class::<output::PyEmbeddingFile>()?;
    m.add_function(wrap_pyfunction!(output::embed_job, m)?)?;
    m.add_function(wrap_pyfunction!(output::output_format, m)?)?;
    m.add_function(wrap_pyfunction!(live::remote_copy, m)?)?;
    m.add_function(wrap_pyfunction!(live::clear_copies, m)?)?;
    m.add_function(wrap_pyfunction!(live::default_cache_dir, m)?)?;
    m.add_function(wrap_pyfunction!(live::file_key, m)?)?;
    m.add_function(wrap_pyfunction!(live::ship_copy, m)?)?;
    m.add_function(wrap_pyfunction!(live::check_shipped, m)?)?;
    m.add_function(wrap_pyfunction!(output::read_word2vec, m)?)?;
    m.add_class::<PyStatusLine>()?;
    m.add_function(wrap_pyfunction!(cli::cli_commands, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli_flag, m)?)?;
    m.add_function(wrap_pyfunction!(human_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(human_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(output::write_atomic, m)?)?;
    m.add_function(wrap_pyfunction!(output::sidecar_path, m)?)?;
    m.add_class::<output::PyAtomicFile>()?;
    m.add_function(wrap_pyfunction!(compress::fit_map, m)?)?;
    m.add_function(wrap_pyfunction!(smooth, m)?)?;
    m.add_function(wrap_pyfunction!(cosine_nearest, m)?)?;
    m.add_function(wrap_pyfunction!(cosine_two_means, m)?)?;
    m.add_function(wrap_pyfunction!(hash_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(py_splitmix64, m)?)?;
    m.add_function(wrap_pyfunction!(py_fnv1a64, m)?)?;
    m.add_function(wrap_pyfunction!(xxh3_64, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_threads, m)?)?;
    m.add("HEADER_LEN", crate::graph::format::HEADER_LEN)?;
    // A change log's header and superblocks: the bytes that name its newest commit.
    m.add("LOG_HEAD_LEN", crate::graph::log_format::DATA_START)?;
    m.add("MAX_DIM", crate::embed::config::MAX_DIM)?;
    // The column-name rule of every reader (text headers, tables, pandas frames).
    m.add(
        "DEFAULT_MEMORY_LIMIT",
        crate::graph::external::DEFAULT_MEMORY_LIMIT,
    )?;
    m.add("COLUMN_PAIRS", crate::io::text::COLUMN_PAIRS.to_vec())?;
    m.add("WEIGHT_NAMES", crate::io::text::WEIGHT_NAMES.to_vec())?;
    m.add("MAX_SMOOTH", crate::embed::smooth::MAX_SMOOTH)?;
    m.add("MAX_FIT_NODES", crate::embed::compress::MAX_FIT_NODES)?;
    m.add(
        "DEFAULT_REORDER_ROUNDS",
        crate::graph::reorder::DEFAULT_ROUNDS,
    )?;
    m.add("FORMAT_VERSION", crate::graph::format::VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
