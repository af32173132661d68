//! Bindings of the out-of-core builder (`GraphBuilder`), the one native entry point of the
//! kernel's readers (`convert_native`, `read_edges`), their format table and detection
//! (`formats`, `detect_format`), the column rule for tables (`table_columns`) and `reorder`.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use numpy::{PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::errors::IntoPy;
use super::read_options::PyReadOptions;
use crate::error::Error;
use crate::graph::build::Merge;
use crate::graph::external::{
    check_weight, BuildOptions, BuildStats, ExternalBuilder, IdMode, ProgressFn, SelfLoops,
    DEFAULT_MEMORY_LIMIT,
};
use crate::graph::reorder;
use crate::io::ids::Ids;
use crate::io::source::BufferedIds;
use crate::io::text::{TextOptions, TextStats};
use crate::io::{self, Stat};

enum State {
    Open(Box<ExternalBuilder>),
    Finished(BuildStats),
    Closed,
}

/// Builds a graph file from edges given in chunks, with bounded memory (see `external.rs`).
#[pyclass(frozen, module = "instant_embedding._core", name = "GraphBuilder")]
pub struct PyGraphBuilder {
    state: Mutex<State>,
}

impl PyGraphBuilder {
    /// Runs `f` on the state with the mutex taken *without* the GIL, so a thread waiting for the
    /// lock never holds the GIL that the lock holder needs to return.
    fn with_state<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut State) -> R + Send) -> R {
        py.detach(|| {
            let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut g)
        })
    }
}

fn closed() -> PyErr {
    PyRuntimeError::new_err("this GraphBuilder is finished or aborted")
}

#[allow(clippy::too_many_arguments)]
fn build_options(
    directed: bool,
    weighted: bool,
    id_kind: &str,
    num_nodes: Option<u64>,
    self_loops: &str,
    merge: &str,
    memory_limit: Option<u64>,
    tmp_dir: Option<PathBuf>,
) -> PyResult<BuildOptions> {
    let memory_limit = memory_limit.unwrap_or(DEFAULT_MEMORY_LIMIT);
    Ok(BuildOptions {
        directed,
        weighted,
        ids: IdMode::parse(id_kind).py_err()?,
        num_nodes,
        self_loops: SelfLoops::parse(self_loops).py_err()?,
        merge: Merge::parse(merge).py_err()?,
        memory_limit,
        tmp_dir,
    })
}

fn extract_ids(x: &Bound<'_, PyAny>, want_str: bool, name: &str) -> PyResult<Ids> {
    if want_str {
        if x.is_instance_of::<pyo3::types::PyString>() {
            return Err(PyTypeError::new_err(format!(
                "{name} must be a sequence of str, not a str"
            )));
        }
        return x.extract::<Vec<String>>().map(Ids::Str).map_err(|_| {
            PyTypeError::new_err(format!(
                "{name} must be a sequence of str for id_kind='str'"
            ))
        });
    }
    if let Ok(a) = x.cast::<numpy::PyArray1<i64>>() {
        let r = a.readonly();
        return Ok(Ids::Int(match r.as_slice() {
            Ok(s) => s.to_vec(),
            Err(_) => r.as_array().iter().copied().collect(),
        }));
    }
    if let Ok(a) = x.cast::<numpy::PyUntypedArray>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a one-dimensional int64 array, got dtype {} with {} dimension(s)",
            a.dtype(),
            a.ndim()
        )));
    }
    x.extract::<Vec<i64>>().map(Ids::Int).map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be an int64 numpy array or a sequence of int (str ids need id_kind='str')"
        ))
    })
}

fn extract_weights(w: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    let as64: Vec<f64> = if let Ok(a) = w.extract::<PyReadonlyArray1<'_, f32>>() {
        a.as_array().iter().map(|&x| f64::from(x)).collect()
    } else if let Ok(a) = w.extract::<PyReadonlyArray1<'_, f64>>() {
        a.as_array().to_vec()
    } else {
        w.extract::<Vec<f64>>().map_err(|_| {
            PyTypeError::new_err("weights must be a float32/float64 array or a sequence of float")
        })?
    };
    as64.iter()
        .enumerate()
        .map(|(i, &x)| check_weight(x).map_err(|e| Error::input(format!("edge {i}: {e}"))))
        .collect::<Result<Vec<f32>, Error>>()
        .py_err()
}

fn stats_dict<'py>(
    py: Python<'py>,
    s: &BuildStats,
    t: Option<&TextStats>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("num_nodes", s.num_nodes)?;
    d.set_item("num_edges", s.num_edges)?;
    d.set_item("num_arcs", s.num_arcs)?;
    d.set_item("input_edges", s.input_edges)?;
    d.set_item("self_loops_dropped", s.self_loops_dropped)?;
    d.set_item("duplicates_merged", s.duplicates_merged)?;
    d.set_item("id_kind", s.id_kind)?;
    d.set_item("segments", s.segments)?;
    d.set_item("buckets", s.buckets)?;
    d.set_item("external_buckets", s.external_buckets)?;
    d.set_item("peak_tmp_bytes", s.peak_tmp_bytes)?;
    d.set_item("peak_node_bytes", s.peak_node_bytes)?;
    d.set_item("over_budget", s.over_budget())?;
    d.set_item("file_size", s.file_size)?;
    d.set_item("seconds", s.seconds())?;
    if let Some(t) = t {
        d.set_item("input_bytes", t.input_bytes)?;
        d.set_item("lines", t.lines)?;
        d.set_item("edge_lines", t.edge_lines)?;
        d.set_item("passes", t.passes)?;
    }
    Ok(d)
}

/// Runs `f` without the GIL with a progress hook that calls `progress(done, total)` at most
/// ~10 times a second and checks for signals (Ctrl-C) at the same rate. A Python exception from
/// either cancels the work and is re-raised.
fn with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    f: impl FnOnce(&ProgressFn<'_>) -> Result<T, Error> + Send,
) -> PyResult<T> {
    let (r, pending) = py.detach(move || {
        let last = Cell::new(Instant::now());
        let pending: RefCell<Option<PyErr>> = RefCell::new(None);
        let hook = |done: u64, total: u64| -> bool {
            let final_call = done >= total;
            if !final_call && last.get().elapsed() < Duration::from_millis(100) {
                return true;
            }
            last.set(Instant::now());
            Python::attach(|py| {
                let r = py.check_signals().and_then(|()| match &progress {
                    Some(cb) => cb.call1(py, (done, total)).map(drop),
                    None => Ok(()),
                });
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        *pending.borrow_mut() = Some(e);
                        false
                    }
                }
            })
        };
        let r = f(&hook);
        (r, pending.into_inner())
    });
    match (r, pending) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(e).py_err(),
    }
}

#[pymethods]
impl PyGraphBuilder {
    #[new]
    #[pyo3(signature = (output, *, directed=false, weighted=false, id_kind="auto", num_nodes=None,
                        self_loops="keep", merge="sum", memory_limit=None, tmp_dir=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        output: PathBuf,
        directed: bool,
        weighted: bool,
        id_kind: &str,
        num_nodes: Option<u64>,
        self_loops: &str,
        merge: &str,
        memory_limit: Option<u64>,
        tmp_dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        let opts = build_options(
            directed,
            weighted,
            id_kind,
            num_nodes,
            self_loops,
            merge,
            memory_limit,
            tmp_dir,
        )?;
        let b = py
            .detach(move || ExternalBuilder::new(&output, opts))
            .py_err()?;
        Ok(PyGraphBuilder {
            state: Mutex::new(State::Open(Box::new(b))),
        })
    }

    /// Adds edges: `src`/`dst` int64 arrays (or sequences of int), or sequences of str for
    /// `id_kind="str"`; `weights` (float32/float64) exactly when the graph is weighted.
    #[pyo3(signature = (src, dst, weights=None))]
    fn add_edges(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        weights: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let want_str = self
            .with_state(py, |st| match st {
                State::Open(b) => Some(b.takes_str()),
                _ => None,
            })
            .ok_or_else(closed)?;
        let s = extract_ids(src, want_str, "src")?;
        let d = extract_ids(dst, want_str, "dst")?;
        let w = weights.map(extract_weights).transpose()?;
        self.with_state(py, |st| {
            let State::Open(b) = st else {
                return Err(Error::param("this GraphBuilder is finished or aborted"));
            };
            match (&s, &d) {
                (Ids::Int(s), Ids::Int(d)) => b.add_int(s, d, w.as_deref()),
                (Ids::Str(s), Ids::Str(d)) => b.add_str(s, d, w.as_deref()),
                _ => Err(Error::input("src and dst hold different id kinds")),
            }
        })
        .py_err()
    }

    /// Sorts, merges and writes the graph file; returns statistics. `progress(done, total)` is
    /// called at most ~10 times a second; Ctrl-C cancels (no output file is left).
    #[pyo3(signature = (progress=None))]
    fn finish<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let taken = self.with_state(py, |st| match std::mem::replace(st, State::Closed) {
            State::Open(b) => Ok(b),
            State::Finished(s) => {
                *st = State::Finished(s.clone());
                Err(Some(Box::new(s)))
            }
            State::Closed => Err(None),
        });
        let b = match taken {
            Ok(b) => b,
            Err(Some(s)) => return stats_dict(py, &s, None),
            Err(None) => return Err(closed()),
        };
        let stats = with_progress(py, progress, move |hook| b.finish(Some(hook)))?;
        let d = stats_dict(py, &stats, None)?;
        self.with_state(py, |st| *st = State::Finished(stats));
        Ok(d)
    }

    /// Abandons the build: temporary files are removed and the target is left untouched.
    fn abort(&self, py: Python<'_>) {
        let old = self.with_state(py, |st| match st {
            State::Open(_) => Some(std::mem::replace(st, State::Closed)),
            _ => None,
        });
        // Removing the temporary files can take a moment: do it without the GIL.
        py.detach(move || drop(old));
    }

    /// Edges added so far.
    #[getter]
    fn input_edges(&self, py: Python<'_>) -> u64 {
        self.with_state(py, |st| match st {
            State::Open(b) => b.input_edges(),
            State::Finished(s) => s.input_edges,
            State::Closed => 0,
        })
    }

    /// Statistics of the finished build (None before `finish`).
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let s = self.with_state(py, |st| match st {
            State::Finished(s) => Some(s.clone()),
            _ => None,
        });
        s.map(|s| stats_dict(py, &s, None)).transpose()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Finishes on a normal exit (if not finished yet), aborts on an exception.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let open = self.with_state(py, |st| matches!(st, State::Open(_)));
        if exc_type.is_some() {
            self.abort(py);
        } else if open {
            self.finish(py, None)?;
        }
        Ok(false)
    }
}

/// A node order given as an argument: a one-dimensional integer array of `n` entries in
/// `0..n` (the kernel checks that it is a permutation).
fn order_argument(order: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<u32>> {
    let a = order
        .py()
        .import("numpy")?
        .call_method1("asarray", (order,))?;
    let a = a.cast::<numpy::PyUntypedArray>()?;
    if a.ndim() != 1 || !matches!(a.dtype().kind(), b'i' | b'u') {
        return Err(PyTypeError::new_err(
            "order must be a 1-d array of integers",
        ));
    }
    let v: Vec<i64> = a
        .call_method1("astype", ("int64",))?
        .extract::<PyReadonlyArray1<'_, i64>>()?
        .as_slice()?
        .to_vec();
    if v.len() != n || v.iter().any(|&x| x < 0 || x as u64 >= n as u64) {
        return Err(PyValueError::new_err(format!(
            "order must be a permutation of 0..{} (got {} entries)",
            n as i64 - 1,
            v.len()
        )));
    }
    Ok(v.into_iter().map(|x| x as u32).collect())
}

/// Writes a copy of `graph` with its nodes renumbered for locality (see `reorder.rs`); returns
/// statistics.
#[pyfunction]
#[pyo3(signature = (graph, output, *, method="communities", rounds=None,
                    threads=None, progress=None, order=None))]
#[allow(clippy::too_many_arguments)]
pub fn reorder_graph<'py>(
    py: Python<'py>,
    graph: &super::PyGraph,
    output: PathBuf,
    method: &str,
    rounds: Option<&Bound<'py, PyAny>>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    order: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let method = reorder::Method::parse(method).py_err()?;
    let rounds = rounds
        .map(|r| super::count_argument(r, "rounds"))
        .transpose()?;
    let rounds = rounds.unwrap_or(reorder::DEFAULT_ROUNDS);
    let n = graph.inner.num_nodes();
    let order = order.map(|o| order_argument(o, n)).transpose()?;
    if !(1..=100).contains(&rounds) {
        return Err(PyValueError::new_err(format!(
            "rounds must be between 1 and 100, got {rounds}"
        )));
    }
    let threads = crate::parallel::resolve_threads(threads).py_err()?;
    let g = graph.inner.clone();
    let given = order.is_some();
    let s = with_progress(py, progress, move |hook| match order {
        Some(o) => {
            let mut s = reorder::ReorderStats::default();
            let pool = crate::parallel::pool(threads)?;
            reorder::write_permuted(&g, &o, &output, &pool, Some(hook), &mut s)?;
            Ok(s)
        }
        None => reorder::reorder(&g, &output, method, rounds, threads, Some(hook)),
    })?;
    let d = PyDict::new(py);
    let name = if given {
        "given".to_string()
    } else {
        format!("{method:?}").to_lowercase()
    };
    d.set_item("method", name)?;
    d.set_item("num_nodes", s.num_nodes)?;
    d.set_item("num_arcs", s.num_arcs)?;
    d.set_item("rounds", s.rounds)?;
    d.set_item("groups", s.groups)?;
    d.set_item("internal_arcs", s.internal_arcs)?;
    d.set_item("order_seconds", s.order_nanos as f64 * 1e-9)?;
    d.set_item("write_seconds", s.write_nanos as f64 * 1e-9)?;
    d.set_item("file_size", s.file_size)?;
    d.set_item("threads", threads)?;
    Ok(d)
}

fn stats_to_dict(d: &Bound<'_, PyDict>, stats: io::Stats) -> PyResult<()> {
    for (k, v) in stats {
        match v {
            Stat::Int(i) => d.set_item(k, i)?,
            Stat::Bool(b) => d.set_item(k, b)?,
            Stat::Text(t) => d.set_item(k, t)?,
            Stat::List(l) => d.set_item(k, l)?,
        }
    }
    Ok(())
}

/// Converts `inputs` of a format the kernel parses (`options.format`, settled: never "auto")
/// into the graph file `output` (see `io::convert`); returns statistics.
#[pyfunction]
#[pyo3(signature = (inputs, output, options, *, progress=None))]
pub fn convert_native<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    options: &PyReadOptions,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = options.inner.clone();
    let (b, st) = with_progress(py, progress, move |hook| {
        io::convert(&inputs, &output, &opts, Some(hook))
    })?;
    let d = stats_dict(py, &b, None)?;
    stats_to_dict(&d, st)?;
    Ok(d)
}

/// The format of the file `path` (see `io::detect`): a format's name, or an error that says
/// what the file is and what reads it.
#[pyfunction]
pub fn detect_format(py: Python<'_>, path: PathBuf) -> PyResult<&'static str> {
    py.detach(move || io::detect(&path)).py_err()
}

/// The format ``inputs`` are read as with ``options`` (``io::resolve_format``: detected
/// when ``auto``, and checked against the inputs and the options).
#[pyfunction]
pub fn resolve_format(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    options: &PyReadOptions,
) -> PyResult<&'static str> {
    let opts = options.inner.clone();
    py.detach(move || io::resolve_format(&inputs, &opts).map(|f| f.name))
        .py_err()
}

/// The variable of a `.mat` file that holds the graph (``io::mat::pick_variable``), from the
/// file's `(name, class, shape)` listing.
#[pyfunction]
#[pyo3(signature = (path, variables, var=None))]
pub fn mat_variable(
    path: &str,
    variables: Vec<crate::io::mat::MatVariable>,
    var: Option<&str>,
) -> PyResult<String> {
    crate::io::mat::pick_variable(path, &variables, var).py_err()
}

/// The data files of a dataset directory (``io::dataset_files``), as str paths.
#[pyfunction]
pub fn dataset_files(py: Python<'_>, path: PathBuf) -> PyResult<Vec<String>> {
    let files = py.detach(move || io::dataset_files(&path)).py_err()?;
    Ok(files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect())
}

/// Whether `path` is a graph file of this library (its magic; whether it is valid is
/// `Graph.open`'s business).
#[pyfunction]
pub fn is_graph_file(path: PathBuf) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(8);
    std::fs::File::open(&path)
        .and_then(|f| f.take(8).read_to_end(&mut head))
        .is_ok_and(|_| head.starts_with(&crate::graph::format::MAGIC))
}

/// The input formats (`io::FORMATS`), in the order users see them: name, extensions, whether
/// the kernel parses it (`native`), `several`, `compressed`, `directories`, whether `update`
/// reads it straight into its commit (`updates`), and the row of the
/// docs' format table (`files`, `notes`).
#[pyfunction]
pub fn formats(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    io::FORMATS
        .iter()
        .map(|f| {
            let d = PyDict::new(py);
            d.set_item("name", f.name)?;
            d.set_item("extensions", PyTuple::new(py, f.extensions)?)?;
            d.set_item("native", f.native)?;
            d.set_item("several", f.several)?;
            d.set_item("compressed", f.compressed)?;
            d.set_item("directories", f.directories)?;
            d.set_item("updates", f.updates)?;
            d.set_item("files", f.files)?;
            d.set_item("notes", f.notes)?;
            Ok(d)
        })
        .collect()
}

/// Reads the edges of `inputs` (a format the kernel parses) for an update of `graph`, with
/// the readers of `convert` (see `io::read_edges`). Returns `src`, `dst` (int64 arrays or lists
/// of str), `weights` (float32, or None), `headers`, `columns` and `edge_lines`.
#[pyfunction]
#[pyo3(signature = (inputs, options, graph))]
pub fn read_edges<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    options: &PyReadOptions,
    graph: &super::PyGraph,
) -> PyResult<Bound<'py, PyDict>> {
    let g = graph.inner.clone();
    let opts = options.inner.clone();
    let weighted = opts.weighted.unwrap_or(false);
    let r = py
        .detach(move || io::read_edges(&inputs, &opts, &g))
        .py_err()?;
    let d = PyDict::new(py);
    match r.ids {
        BufferedIds::Int(s, t) => {
            d.set_item("src", numpy::PyArray1::from_vec(py, s))?;
            d.set_item("dst", numpy::PyArray1::from_vec(py, t))?;
        }
        BufferedIds::Str(s, t) => {
            d.set_item("src", s)?;
            d.set_item("dst", t)?;
        }
    }
    if r.weights.is_empty() && !weighted {
        d.set_item("weights", py.None())?;
    } else {
        d.set_item("weights", numpy::PyArray1::from_vec(py, r.weights))?;
    }
    d.set_item("headers", r.headers)?;
    d.set_item("columns", r.columns)?;
    d.set_item("edge_lines", r.edge_lines)?;
    Ok(d)
}

/// The column rule of `convert` applied to a table's column names (see
/// `text::table_columns`): `(src, dst, weight)` indices; errors name the input (`where_`).
#[pyfunction]
#[pyo3(signature = (names, options, where_))]
pub fn table_columns(
    names: Vec<String>,
    options: &PyReadOptions,
    where_: &str,
) -> PyResult<(usize, usize, Option<usize>)> {
    // Only the column options apply to a table, whatever the format: not `inner.text()`,
    // which refuses a format that is not text.
    let o = &options.inner;
    let columns = TextOptions {
        src_col: o.src_col.clone(),
        dst_col: o.dst_col.clone(),
        weight_col: o.weight_col.clone(),
        weighted: o.weighted,
        ..TextOptions::default()
    };
    crate::io::text::table_columns(&names, &columns)
        .map_err(|e| match e {
            Error::Format(m) => Error::format(format!("{where_}: {m}")),
            Error::InvalidParameter(m) => Error::param(format!("{where_}: {m}")),
            e => e,
        })
        .py_err()
}

/// The edges of a square sparse adjacency matrix given as CSR arrays, read by the kernel's CSR
/// walk (`io::bcsr::csr_edges`, the `.bcsr` reader's): ``(src, dst, weights or None, n,
/// directed, weighted)``; ``directed``/``weighted`` None: decided by the matrix.
#[pyfunction]
#[pyo3(signature = (indptr, indices, data, directed, weighted, where_))]
#[allow(clippy::type_complexity)]
pub fn csr_edges<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, u64>,
    indices: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, f64>,
    directed: Option<bool>,
    weighted: Option<bool>,
    where_: &str,
) -> PyResult<(
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Option<Bound<'py, numpy::PyArray1<f64>>>,
    usize,
    bool,
    bool,
)> {
    use numpy::IntoPyArray;
    let (indptr, indices, data) = (
        indptr.as_array().to_vec(),
        indices.as_array().to_vec(),
        data.as_array().to_vec(),
    );
    let n = indptr.len().saturating_sub(1);
    let where_ = where_.to_string();
    let (edges, directed, weighted) = py
        .detach(move || io::bcsr::csr_edges(indptr, indices, data, directed, weighted, &where_))
        .py_err()?;
    let BufferedIds::Int(src, dst) = edges.ids else {
        unreachable!("a matrix's ids are its rows")
    };
    let w = weighted.then(|| {
        let w: Vec<f64> = edges.weights.iter().map(|&x| f64::from(x)).collect();
        w.into_pyarray(py)
    });
    let (src, dst) = (
        src.into_pyarray(py).into_any(),
        dst.into_pyarray(py).into_any(),
    );
    Ok((src, dst, w, n, directed, weighted))
}
