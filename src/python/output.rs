//! The embedding job (`crate::embed::job`) and the embedding file writer (`crate::output`):
//! one call runs every batch without the GIL, taking it between batches for Ctrl-C, the
//! progress callback and a Python sink.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Mutex;

use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::compress::PyLinearMap;
use super::config::PyEmbeddingConfig;
use super::errors::IntoPy;
use super::{to_vec, PyGraph};
use crate::embed::job::{Hooks, Job, RowSink};
use crate::error::{Error, Result};
use crate::graph::build::AtomicFile;
use crate::graph::csr::Graph;
use crate::output::{EmbeddingFile, Format, Ids};

/// A Python exception raised in a callback, kept until the job returns.
type Pending = RefCell<Option<PyErr>>;

fn stash<T>(pending: &Pending, r: PyResult<T>) -> Result<T> {
    r.map_err(|e| {
        *pending.borrow_mut() = Some(e);
        Error::Cancelled
    })
}

/// Between batches: Ctrl-C, then `progress(done, total)`.
struct PyHooks<'a> {
    progress: Option<&'a Py<PyAny>>,
    pending: &'a Pending,
}

impl Hooks for PyHooks<'_> {
    fn progress(&mut self, done: usize, total: usize) -> Result<()> {
        let r = Python::attach(|py| {
            py.check_signals()?;
            match self.progress {
                Some(cb) => cb.call1(py, (done, total)).map(drop),
                None => Ok(()),
            }
        });
        stash(self.pending, r)
    }
}

/// A Python callable `sink(nodes, rows)` given each batch (internal indices, float32 matrix).
struct PySink<'a> {
    sink: &'a Py<PyAny>,
    dim: usize,
    pending: &'a Pending,
}

impl RowSink for PySink<'_> {
    fn write(&mut self, _: &Graph, nodes: &[u32], rows: &[f32]) -> Result<()> {
        let r = Python::attach(|py| {
            let m = rows
                .to_vec()
                .into_pyarray(py)
                .reshape([nodes.len(), self.dim])?;
            self.sink
                .call1(py, (nodes.to_vec().into_pyarray(py), m))
                .map(drop)
        });
        stash(self.pending, r)
    }
}

/// An embedding file being written (npy with its ids file, npz, word2vec text); see
/// ``instant_embedding.export.EmbeddingWriter``, which wraps it.
#[pyclass(module = "instant_embedding._core", name = "EmbeddingFile")]
pub struct PyEmbeddingFile {
    inner: Mutex<Option<EmbeddingFile>>,
}

impl PyEmbeddingFile {
    fn take(&self) -> PyResult<EmbeddingFile> {
        self.inner
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("the EmbeddingFile is closed"))
    }

    fn put(&self, f: EmbeddingFile) {
        if let Ok(mut g) = self.inner.lock() {
            *g = Some(f);
        }
    }
}

fn ids_of(ids: &Bound<'_, PyAny>) -> PyResult<Ids> {
    if let Ok(a) = ids.extract::<PyReadonlyArray1<'_, i64>>() {
        return Ok(Ids::Int(to_vec(&a)));
    }
    Ok(Ids::Str(ids.extract::<Vec<String>>()?))
}

#[pymethods]
impl PyEmbeddingFile {
    #[new]
    #[pyo3(signature = (path, format, dim, num_rows=None))]
    fn new(path: PathBuf, format: &str, dim: usize, num_rows: Option<u64>) -> PyResult<Self> {
        let f = EmbeddingFile::create(&path, Format::parse(format).py_err()?, dim, num_rows)
            .py_err()?;
        Ok(PyEmbeddingFile {
            inner: Mutex::new(Some(f)),
        })
    }

    /// Appends ``rows`` (float32, ``(len(ids), dim)``) for ``ids`` (an int64 array or a list
    /// of str).
    fn write(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        rows: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<()> {
        let ids = ids_of(ids)?;
        let rows: Vec<f32> = rows.as_array().iter().copied().collect();
        let mut f = self.take()?;
        let r = py.detach(|| f.write(&ids, &rows));
        self.put(f);
        r.py_err()
    }

    #[getter]
    fn rows_written(&self) -> u64 {
        self.inner
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(EmbeddingFile::rows_written))
            .unwrap_or(0)
    }

    /// Finishes the file and moves it into place (the writer is closed even on an error).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let f = self.take()?;
        py.detach(move || f.close()).py_err()
    }

    /// Discards what was written; the target keeps its previous content (idempotent).
    fn abort(&self) {
        if let Ok(mut g) = self.inner.lock() {
            g.take();
        }
    }
}

/// The embeddings of internal nodes ``nodes`` computed batch by batch (``batch_size`` nodes,
/// or sized to take about 0.2 s each), smoothed as ``config`` says. Between batches it checks
/// for Ctrl-C and calls ``progress(done, total)``. The rows go to ``sink``, an
/// :class:`EmbeddingFile` (left open) or a callable ``sink(nodes, rows)``, and None is
/// returned; without a sink, the ``(len(nodes), dim)`` float32 matrix is returned.
#[pyfunction]
#[pyo3(signature = (graph, nodes, config, threads=None, map=None, batch_size=None,
                    progress=None, sink=None))]
#[allow(clippy::too_many_arguments)]
pub fn embed_job<'py>(
    py: Python<'py>,
    graph: &PyGraph,
    nodes: PyReadonlyArray1<'py, u32>,
    config: &PyEmbeddingConfig,
    threads: Option<usize>,
    map: Option<&PyLinearMap>,
    batch_size: Option<usize>,
    progress: Option<Py<PyAny>>,
    sink: Option<Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyArray2<f32>>>> {
    if batch_size == Some(0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "batch_size must be >= 1",
        ));
    }
    let nodes = to_vec(&nodes);
    let cfg = config.inner;
    let map = map.map(|m| m.inner.clone());
    let threads = crate::parallel::resolve_threads(threads).py_err()?;
    let g = graph.inner.clone();
    let file = match &sink {
        Some(s) => s.cast::<PyEmbeddingFile>().ok().map(|f| f.clone().unbind()),
        None => None,
    };
    let mut owned = match &file {
        Some(f) => Some(f.borrow(py).take()?),
        None => None,
    };
    let callable = match (&sink, &file) {
        (Some(s), None) => Some(s.clone().unbind()),
        _ => None,
    };
    let (rows, pending, owned) = py.detach(move || {
        let pending: Pending = RefCell::new(None);
        let job = Job {
            graph: &g,
            config: &cfg,
            map: map.as_deref(),
            threads,
            batch_size,
        };
        let mut hooks = PyHooks {
            progress: progress.as_ref(),
            pending: &pending,
        };
        let mut py_sink = callable.as_ref().map(|s| PySink {
            sink: s,
            dim: cfg.dim,
            pending: &pending,
        });
        let sink: Option<&mut dyn RowSink> = match (owned.as_mut(), py_sink.as_mut()) {
            (Some(f), _) => Some(f),
            (None, Some(s)) => Some(s),
            (None, None) => None,
        };
        let r = job.run(&nodes, &mut hooks, sink);
        (r, pending.into_inner(), owned)
    });
    if let (Some(f), Some(o)) = (&file, owned) {
        f.borrow(py).put(o);
    }
    let rows = match (rows, pending) {
        (Ok(v), _) => v,
        (Err(_), Some(e)) => return Err(e),
        (Err(e), None) => return Err(e).py_err(),
    };
    if sink.is_some() {
        return Ok(None);
    }
    let k = rows.len() / cfg.dim;
    Ok(Some(rows.into_pyarray(py).reshape([k, cfg.dim])?))
}

/// The word2vec text lines of ``rows`` for ``ids`` (for a stream such as stdout).
#[pyfunction]
pub fn word2vec_lines(
    py: Python<'_>,
    ids: &Bound<'_, PyAny>,
    rows: PyReadonlyArray2<'_, f32>,
) -> PyResult<String> {
    let ids = ids_of(ids)?;
    let view = rows.as_array();
    let dim = view.ncols();
    if view.nrows() != ids.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "rows must have shape ({}, {dim}) to match ids, got {:?}",
            ids.len(),
            view.shape()
        )));
    }
    if let Ids::Str(v) = &ids {
        crate::output::check_word2vec_ids(v).py_err()?;
    }
    let flat: Vec<f32> = view.iter().copied().collect();
    let out = py.detach(|| {
        let mut out = Vec::new();
        crate::output::write_word2vec_rows(&mut out, &ids, &flat, dim).map(|()| out)
    });
    let out = out.map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    Ok(String::from_utf8(out).expect("ids and numbers are UTF-8"))
}

/// The ids (str) and float32 ``(n, d)`` rows of a word2vec text file (``.gz``: compressed).
#[pyfunction]
pub fn read_word2vec<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<(Vec<String>, Bound<'py, PyArray2<f32>>)> {
    let (ids, rows, dim) = py.detach(|| crate::output::text::read(&path)).py_err()?;
    let n = ids.len();
    Ok((ids, rows.into_pyarray(py).reshape([n, dim])?))
}

/// Writes ``data`` to ``path`` atomically (temporary file in the same directory, fsync,
/// rename): the path holds its old content or all of ``data``.
#[pyfunction]
pub fn write_atomic(py: Python<'_>, path: PathBuf, data: Vec<u8>) -> PyResult<()> {
    py.detach(move || crate::graph::build::write_atomic(&path, &data))
        .py_err()
}

/// The ids file beside the ``.npy`` embedding file at ``path``: ``.ids.npy`` for integer ids,
/// ``.ids.txt`` for strings.
#[pyfunction]
pub fn sidecar_path(path: PathBuf, int_ids: bool) -> PathBuf {
    crate::output::sidecar_path(&path, int_ids)
}

/// A temporary file beside ``target`` for a writer outside the kernel (pyarrow's Parquet
/// writer): write ``path``, then :meth:`commit` fsyncs it and renames it over ``target``;
/// :meth:`abort` (or dropping it) removes it.
#[pyclass(module = "instant_embedding._core", name = "AtomicFile")]
pub struct PyAtomicFile {
    inner: Mutex<Option<AtomicFile>>,
    path: PathBuf,
}

#[pymethods]
impl PyAtomicFile {
    #[new]
    fn new(target: PathBuf) -> PyResult<Self> {
        let f = AtomicFile::create(&target).py_err()?;
        let path = f.tmp_path().to_path_buf();
        Ok(PyAtomicFile {
            inner: Mutex::new(Some(f)),
            path,
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let f = self
            .inner
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err("the AtomicFile is already closed")
            })?;
        py.detach(move || f.commit()).py_err()
    }

    fn abort(&self) {
        if let Ok(mut g) = self.inner.lock() {
            g.take();
        }
    }
}
