//! Bindings of live graphs: the writer (`_core.LiveWriter`) and the log facts of a snapshot.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::errors::IntoPy;
use super::ids::{id_argument, weight_argument};
use super::PyGraph;
use crate::error::Error;
use crate::graph::build::Merge;
use crate::graph::format::IdKind;
use crate::io::ids::IdColumn;
use crate::live::{Ids, LiveWriter, LogInfo};

/// The one writer of a live graph file (holds its lock until closed).
#[pyclass(frozen, module = "instant_embedding._core", name = "LiveWriter")]
pub struct PyLiveWriter {
    inner: Mutex<Option<LiveWriter>>,
}

fn parse_merge(merge: Option<&str>) -> PyResult<Option<Merge>> {
    match merge {
        None => Ok(None),
        Some("sum") => Ok(Some(Merge::Sum)),
        Some("max") => Ok(Some(Merge::Max)),
        Some(other) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "merge must be 'sum' or 'max', got {other:?}"
        ))),
    }
}

impl PyLiveWriter {
    fn with<T>(&self, f: impl FnOnce(&mut LiveWriter) -> Result<T, Error>) -> PyResult<T> {
        let mut guard: MutexGuard<'_, Option<LiveWriter>> =
            self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            Some(w) => f(w).py_err(),
            None => Err(pyo3::exceptions::PyValueError::new_err(
                "the graph was closed for writing",
            )),
        }
    }
}

impl PyLiveWriter {
    /// Ids given as the argument `name`, of this graph's kind (an empty argument has none).
    fn ids(&self, values: &Bound<'_, PyAny>, name: &str) -> PyResult<Ids> {
        let strings = self.with(|w| Ok(w.snapshot().id_kind() == IdKind::Utf8))?;
        match (id_argument(values, name)?, strings) {
            (IdColumn::Str(v), true) => Ok(Ids::Str(v)),
            (IdColumn::Int(v), false) => Ok(Ids::Int(v)),
            (IdColumn::Int(v), true) if v.is_empty() => Ok(Ids::Str(Vec::new())),
            (c, _) => Err(PyTypeError::new_err(format!(
                "{name} holds {} ids but this graph has {} node ids",
                if matches!(c, IdColumn::Str(_)) {
                    "str"
                } else {
                    "int"
                },
                if strings { "string" } else { "integer" }
            ))),
        }
    }

    fn edge_ids(&self, src: &Bound<'_, PyAny>, dst: &Bound<'_, PyAny>) -> PyResult<(Ids, Ids)> {
        let (s, d) = (self.ids(src, "src")?, self.ids(dst, "dst")?);
        let len = |i: &Ids| match i {
            Ids::Int(v) => v.len(),
            Ids::Str(v) => v.len(),
        };
        if len(&s) != len(&d) {
            return Err(PyValueError::new_err(format!(
                "src and dst have different lengths ({} and {})",
                len(&s),
                len(&d)
            )));
        }
        Ok((s, d))
    }
}

#[pymethods]
impl PyLiveWriter {
    #[staticmethod]
    #[pyo3(signature = (path, merge=None, prefetch=false))]
    fn open(py: Python<'_>, path: PathBuf, merge: Option<&str>, prefetch: bool) -> PyResult<Self> {
        let merge = parse_merge(merge)?;
        let w = py
            .detach(|| LiveWriter::open(&path, merge, prefetch))
            .py_err()?;
        Ok(PyLiveWriter {
            inner: Mutex::new(Some(w)),
        })
    }

    /// The newest committed state.
    fn snapshot(&self) -> PyResult<PyGraph> {
        let g = self.with(|w| Ok(w.snapshot()))?;
        Ok(PyGraph { inner: g })
    }

    #[getter]
    fn staged_ops(&self) -> PyResult<u64> {
        self.with(|w| Ok(w.staged_ops()))
    }

    /// Stages edges ``src[i] -> dst[i]`` (ids of the graph's kind, as arrays or sequences)
    /// with optional weights.
    #[pyo3(signature = (src, dst, weights=None))]
    fn add(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        weights: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (s, d) = self.edge_ids(src, dst)?;
        let w = weights.map(|w| weight_argument(w, s.len())).transpose()?;
        py.detach(|| self.with(|lw| lw.add_edges(&s, &d, w.as_deref())))
    }

    /// Stages the removal of edges ``src[i] -> dst[i]``; how many existed.
    fn remove(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let (s, d) = self.edge_ids(src, dst)?;
        py.detach(|| self.with(|lw| lw.remove_edges(&s, &d)))
    }

    /// Removes the nodes ``ids`` and their edges (a compaction); how many were nodes.
    fn remove_nodes(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<u64> {
        let ids = self.ids(ids, "ids")?;
        py.detach(|| self.with(|lw| lw.remove_nodes(&ids)))
    }

    /// Writes the staged operations as one durable commit; False when none were staged.
    fn commit(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.with(|w| w.commit()))
    }

    fn discard(&self) -> PyResult<()> {
        self.with(|w| {
            w.discard();
            Ok(())
        })
    }

    #[pyo3(signature = (threads=None))]
    fn compact(&self, py: Python<'_>, threads: Option<usize>) -> PyResult<()> {
        let threads = crate::parallel::resolve_threads(threads).py_err()?;
        py.detach(|| self.with(|w| w.compact(threads)))
    }

    /// Writes the log's index file of the last commit now; False when the log needs none.
    fn write_index(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.with(|w| w.write_index()))
    }

    /// Writes the log's index file of the last commit when due (see `LiveWriter::close`),
    /// then releases the lock (staged operations are dropped).
    fn close(&self, py: Python<'_>) {
        let taken = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = taken {
            py.detach(|| w.close());
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

pub(super) fn info_dict<'py>(py: Python<'py>, i: &LogInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py); // in name order
    d.set_item("adds", i.adds)?;
    d.set_item("bytes", i.bytes)?;
    d.set_item("changed_nodes", i.changed_nodes)?;
    d.set_item("commits", i.commits)?;
    d.set_item("merge", if i.merge_max { "max" } else { "sum" })?;
    d.set_item("new_nodes", i.new_nodes)?;
    d.set_item("removes", i.removes)?;
    Ok(d)
}

/// Removes the cache entries in ``directory`` (see ``remote_copy``).
#[pyfunction]
pub fn clear_copies(py: Python<'_>, directory: PathBuf) -> PyResult<()> {
    py.detach(|| crate::live::copy::clear(&directory)).py_err()
}

/// The content key of the graph file at ``path``: 32 hex digits of a hash of its header, which
/// holds every section's checksum and its own.
#[pyfunction]
pub fn file_key(path: PathBuf) -> PyResult<String> {
    crate::live::copy::file_key(&path).py_err()
}

/// ``(file, key)`` to ship to an engine's workers for the local graph at ``path``: a hard link
/// named by its content in ``directory`` (else the file itself), a live graph's change log
/// folded in first.
#[pyfunction]
pub fn ship_copy(py: Python<'_>, path: PathBuf, directory: PathBuf) -> PyResult<(PathBuf, String)> {
    py.detach(|| crate::live::copy::ship_copy(&path, &directory))
        .py_err()
}

/// A remote graph read by Python callables: ``read(suffix, length)`` (bytes, or None when the
/// object ``URI + suffix`` does not exist) and ``download(suffix, target, head)``.
struct PyRemote<'a> {
    read: &'a Py<PyAny>,
    download: &'a Py<PyAny>,
    pending: &'a std::cell::RefCell<Option<PyErr>>,
}

impl PyRemote<'_> {
    fn call<T>(&self, f: impl FnOnce(Python<'_>) -> PyResult<T>) -> Result<T, Error> {
        Python::attach(f).map_err(|e| {
            *self.pending.borrow_mut() = Some(e);
            Error::Cancelled
        })
    }
}

impl crate::live::copy::Remote for PyRemote<'_> {
    fn read(&mut self, suffix: &str, len: usize) -> Result<Option<Vec<u8>>, Error> {
        self.call(|py| {
            let v = self.read.call1(py, (suffix, len))?;
            let v = v.bind(py);
            Ok(match v.is_none() {
                true => None,
                false => Some(v.cast::<pyo3::types::PyBytes>()?.as_bytes().to_vec()),
            })
        })
    }

    fn download(
        &mut self,
        suffix: &str,
        target: &std::path::Path,
        head: &[u8],
    ) -> Result<(), Error> {
        let target = target.to_string_lossy();
        self.call(|py| {
            let head = pyo3::types::PyBytes::new(py, head);
            self.download.call1(py, (suffix, &*target, head)).map(drop)
        })
    }
}

/// A local copy of the remote graph ``uri`` (with its change log ``URI.live`` at its newest
/// commit) in the cache ``directory``, made once per machine; ``read`` and ``download`` reach
/// the remote objects (see ``PyRemote``).
#[pyfunction]
pub fn remote_copy(
    py: Python<'_>,
    directory: PathBuf,
    uri: &str,
    read: Py<PyAny>,
    download: Py<PyAny>,
) -> PyResult<PathBuf> {
    let (r, pending) = py.detach(move || {
        let pending = std::cell::RefCell::new(None);
        let mut remote = PyRemote {
            read: &read,
            download: &download,
            pending: &pending,
        };
        let r = crate::live::copy::remote_copy(&directory, uri, &mut remote);
        (r, pending.into_inner())
    });
    match (r, pending) {
        (Err(_), Some(e)) => Err(e),
        (r, _) => r.py_err(),
    }
}

/// Where remote graphs are copied by default (see ``batch.default_cache_dir``).
#[pyfunction]
pub fn default_cache_dir() -> PathBuf {
    crate::live::copy::default_dir()
}

/// Checks a worker's copy ``path`` of the graph file shipped as ``name`` with content ``key``
/// (not checked when empty): FileNotFoundError when missing, GraphFormatError when stale.
#[pyfunction]
pub fn check_shipped(path: PathBuf, key: &str, name: &str) -> PyResult<()> {
    crate::live::copy::check_shipped(&path, key, name).py_err()
}
