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
use super::ids::node_ids;
use super::{count_argument, to_vec, PyGraph};
use crate::embed::job::{Hooks, Job, RowSink};
use crate::error::{Error, Result};
use crate::graph::build::AtomicFile;
use crate::graph::csr::Graph;
use crate::output::{EmbeddingFile, Format, Ids, Kind, RowCheck};

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

/// Where an embedding file's rows go: the kernel's writer (npy, npz, word2vec files), a writer
/// outside it (Parquet through pyarrow: an object with ``write(ids, rows)``, ``close(kind)``
/// and ``abort()``) behind the kernel's checks, or word2vec text written straight to a Python
/// text stream (stdout: no file to commit).
enum Backend {
    Kernel(Box<EmbeddingFile>),
    Python { check: RowCheck, writer: Py<PyAny> },
    Stream { check: RowCheck, stream: Py<PyAny> },
}

/// A batch's ids as Python values: an int64 array or a list of str.
fn py_ids<'py>(py: Python<'py>, ids: Ids) -> PyResult<Bound<'py, PyAny>> {
    Ok(match ids {
        Ids::Int(v) => v.into_pyarray(py).into_any(),
        Ids::Str(v) => pyo3::types::PyList::new(py, v)?.into_any(),
    })
}

impl Backend {
    /// Appends a checked batch (the GIL held: a Python writer is called directly).
    fn write(&mut self, py: Python<'_>, ids: Ids, rows: &[f32]) -> PyResult<()> {
        match self {
            Backend::Kernel(f) => py.detach(|| f.write(&ids, rows)).py_err(),
            Backend::Python { check, writer } => {
                check.admit(&ids, rows.len()).py_err()?;
                if ids.is_empty() {
                    return Ok(());
                }
                let k = ids.len();
                let m = rows.to_vec().into_pyarray(py).reshape([k, check.dim])?;
                writer.call_method1(py, "write", (py_ids(py, ids)?, m))?;
                Ok(())
            }
            Backend::Stream { check, stream } => {
                if let Ids::Str(v) = &ids {
                    crate::output::check_word2vec_ids(v).py_err()?;
                }
                check.admit(&ids, rows.len()).py_err()?;
                let mut text = Vec::new();
                crate::output::write_word2vec_rows(&mut text, &ids, rows, check.dim)?;
                let text = String::from_utf8(text).expect("ids and numbers are UTF-8");
                stream.call_method1(py, "write", (text,)).map(drop)
            }
        }
    }

    fn check(&self) -> &RowCheck {
        match self {
            Backend::Kernel(f) => f.check(),
            Backend::Python { check, .. } | Backend::Stream { check, .. } => check,
        }
    }
}

/// The embedding job's rows go to the file (with the GIL for a Python writer).
struct FileSink<'a> {
    backend: Backend,
    pending: &'a Pending,
}

impl RowSink for FileSink<'_> {
    fn write(&mut self, graph: &Graph, nodes: &[u32], rows: &[f32]) -> Result<()> {
        if let Backend::Kernel(f) = &mut self.backend {
            return RowSink::write(f.as_mut(), graph, nodes, rows);
        }
        let ids = Ids::of_nodes(graph, nodes)?;
        let r = Python::attach(|py| self.backend.write(py, ids, rows));
        stash(self.pending, r)
    }
}

/// An embedding file being written, committed atomically by :meth:`close`; see
/// ``instant_embedding.export.EmbeddingWriter``, which wraps it.
#[pyclass(module = "instant_embedding._core", name = "EmbeddingFile")]
pub struct PyEmbeddingFile {
    inner: Mutex<Option<Backend>>,
}

impl PyEmbeddingFile {
    fn take(&self) -> PyResult<Backend> {
        self.inner
            .lock()
            .ok()
            .and_then(|mut g| g.take())
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("the EmbeddingFile is closed"))
    }

    fn put(&self, b: Backend) {
        if let Ok(mut g) = self.inner.lock() {
            *g = Some(b);
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
    /// A writer of ``dim``-wide rows in ``format`` to ``path`` (by ``writer``, when given; to
    /// the text ``stream``, when given, which gets the word2vec header line at once);
    /// ``num_rows``, when given, is checked at close.
    #[new]
    #[pyo3(signature = (path, format, dim, num_rows=None, writer=None, stream=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        format: &str,
        dim: &Bound<'_, PyAny>,
        num_rows: Option<&Bound<'_, PyAny>>,
        writer: Option<Py<PyAny>>,
        stream: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let dim = count_argument(dim, "dim")?;
        let num_rows = num_rows
            .map(|n| count_argument(n, "num_rows"))
            .transpose()?;
        let num_rows = num_rows.map(|n| n as u64);
        let check = RowCheck::new(dim, num_rows).py_err()?;
        let backend = match (writer, stream) {
            (_, Some(stream)) => {
                let refuse = pyo3::exceptions::PyValueError::new_err;
                if format != "w2v" {
                    return Err(refuse(
                        "only the w2v text format can be written to a stream",
                    ));
                }
                let n = num_rows.ok_or_else(|| {
                    refuse("writing to a stream needs num_rows (for the header line)")
                })?;
                stream.call_method1(py, "write", (format!("{n} {dim}\n"),))?;
                Backend::Stream { check, stream }
            }
            (Some(writer), None) => Backend::Python { check, writer },
            (None, None) => Backend::Kernel(Box::new(
                EmbeddingFile::create(&path, Format::parse(format).py_err()?, dim, num_rows)
                    .py_err()?,
            )),
        };
        Ok(PyEmbeddingFile {
            inner: Mutex::new(Some(backend)),
        })
    }

    /// Appends ``rows`` (float32, ``(len(ids), dim)``) for ``ids`` (int or str, of one kind in
    /// every batch); a missing id names its row.
    fn write(
        &self,
        py: Python<'_>,
        ids: &Bound<'_, PyAny>,
        rows: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<()> {
        let ids = node_ids(py, ids, "auto", "ids", "ids", self.rows_written())?;
        let ids = ids_of(&ids)?;
        let view = rows.as_array();
        let mut b = self.take()?;
        let dim = b.check().dim;
        let refused = if view.nrows() != ids.len() || view.ncols() != dim {
            Some(pyo3::exceptions::PyValueError::new_err(format!(
                "rows must have shape ({}, {dim}) to match ids, got {:?}",
                ids.len(),
                view.shape()
            )))
        } else {
            // (a TypeError, as for ids of the wrong kind anywhere in the API)
            b.check()
                .kind_change(&ids)
                .map(pyo3::exceptions::PyTypeError::new_err)
        };
        if let Some(e) = refused {
            self.put(b);
            return Err(e);
        }
        let rows: Vec<f32> = view.iter().copied().collect();
        let r = b.write(py, ids, &rows);
        self.put(b);
        r
    }

    #[getter]
    fn rows_written(&self) -> u64 {
        self.inner
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|b| b.check().rows))
            .unwrap_or(0)
    }

    /// Finishes the file and moves it into place (the writer is closed even on an error; a
    /// Python writer that fails is aborted). Idempotent: a closed or aborted file stays so.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.lock().ok().and_then(|mut g| g.take());
        match taken {
            None => Ok(()),
            Some(Backend::Kernel(f)) => py.detach(move || f.close()).py_err(),
            Some(Backend::Python { check, writer }) => {
                let kind = check.kind.map_or("int", Kind::name);
                let r = check
                    .finish()
                    .py_err()
                    .and_then(|()| writer.call_method1(py, "close", (kind,)));
                if r.is_err() {
                    writer.call_method0(py, "abort")?;
                }
                r.map(drop)
            }
            Some(Backend::Stream { check, stream }) => {
                check.finish().py_err()?;
                stream.call_method0(py, "flush").map(drop)
            }
        }
    }

    /// Discards what was written; the target keeps its previous content (idempotent).
    fn abort(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.lock().ok().and_then(|mut g| g.take());
        if let Some(Backend::Python { writer, .. }) = taken {
            writer.call_method0(py, "abort")?;
        }
        Ok(())
    }
}

/// The embeddings of internal nodes ``nodes`` computed batch by batch (``batch_size`` nodes,
/// or sized to take about 0.2 s each), smoothed as ``config`` says. Between batches it checks
/// for Ctrl-C and calls ``progress(done, total)``. The rows go to ``sink``, an
/// :class:`EmbeddingFile` (left open), and None is returned; without a sink, the
/// ``(len(nodes), dim)`` float32 matrix is returned.
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
    sink: Option<&PyEmbeddingFile>,
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
    let backend = sink.map(PyEmbeddingFile::take).transpose()?;
    let (rows, pending, backend) = py.detach(move || {
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
        let mut file = backend.map(|backend| FileSink {
            backend,
            pending: &pending,
        });
        let r = job.run(
            &nodes,
            &mut hooks,
            file.as_mut().map(|f| f as &mut dyn RowSink),
        );
        let backend = file.map(|f| f.backend);
        (r, pending.into_inner(), backend)
    });
    if let (Some(f), Some(b)) = (sink, backend) {
        f.put(b);
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

/// The format of an embedding file at ``path`` (``"-"``: word2vec text to stdout): the one
/// its extension implies, else ``format``; ``ValueError`` for a ``format`` the extension
/// contradicts, an unknown one, or none.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
pub fn output_format(path: PathBuf, format: Option<&str>) -> PyResult<&'static str> {
    crate::output::output_format(&path.to_string_lossy(), format).py_err()
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
