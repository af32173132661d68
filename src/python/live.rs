//! Bindings of live graphs: the writer (`_core.LiveWriter`) and the log facts of a snapshot.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use super::errors::IntoPy;
use super::{to_vec, PyGraph};
use crate::error::Error;
use crate::graph::build::Merge;
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

fn ids_int(a: &PyReadonlyArray1<'_, i64>) -> Ids {
    Ids::Int(to_vec(a))
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

    #[pyo3(signature = (src, dst, weights=None))]
    fn add_int(
        &self,
        py: Python<'_>,
        src: PyReadonlyArray1<'_, i64>,
        dst: PyReadonlyArray1<'_, i64>,
        weights: Option<PyReadonlyArray1<'_, f32>>,
    ) -> PyResult<()> {
        let (s, d) = (ids_int(&src), ids_int(&dst));
        let w = weights.as_ref().map(to_vec);
        py.detach(|| self.with(|lw| lw.add_edges(&s, &d, w.as_deref())))
    }

    #[pyo3(signature = (src, dst, weights=None))]
    fn add_str(
        &self,
        py: Python<'_>,
        src: Vec<String>,
        dst: Vec<String>,
        weights: Option<PyReadonlyArray1<'_, f32>>,
    ) -> PyResult<()> {
        let (s, d) = (Ids::Str(src), Ids::Str(dst));
        let w = weights.as_ref().map(to_vec);
        py.detach(|| self.with(|lw| lw.add_edges(&s, &d, w.as_deref())))
    }

    fn remove_int(
        &self,
        py: Python<'_>,
        src: PyReadonlyArray1<'_, i64>,
        dst: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<u64> {
        let (s, d) = (ids_int(&src), ids_int(&dst));
        py.detach(|| self.with(|lw| lw.remove_edges(&s, &d)))
    }

    fn remove_str(&self, py: Python<'_>, src: Vec<String>, dst: Vec<String>) -> PyResult<u64> {
        let (s, d) = (Ids::Str(src), Ids::Str(dst));
        py.detach(|| self.with(|lw| lw.remove_edges(&s, &d)))
    }

    fn remove_nodes_int(&self, py: Python<'_>, ids: PyReadonlyArray1<'_, i64>) -> PyResult<u64> {
        let ids = ids_int(&ids);
        py.detach(|| self.with(|lw| lw.remove_nodes(&ids)))
    }

    fn remove_nodes_str(&self, py: Python<'_>, ids: Vec<String>) -> PyResult<u64> {
        let ids = Ids::Str(ids);
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

    /// Releases the lock (staged operations are dropped).
    fn close(&self) {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *guard = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

pub(super) fn info_dict(i: &LogInfo) -> std::collections::HashMap<&'static str, u64> {
    std::collections::HashMap::from([
        ("commits", i.commits),
        ("adds", i.adds),
        ("removes", i.removes),
        ("changed_nodes", i.changed_nodes),
        ("new_nodes", i.new_nodes),
        ("bytes", i.bytes),
        ("merge_max", u64::from(i.merge_max)),
    ])
}
