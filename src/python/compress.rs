//! The Python face of the kernel's fitted linear map (`crate::embed::compress`): a frozen class that
//! pickles as its bytes, and the fit.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use super::config::PyEmbeddingConfig;
use super::errors::IntoPy;
use super::PyGraph;
use crate::embed::compress::{self, LinearMap};

/// A fitted linear map from the wide hashed rows to ``dim`` dimensions, with the settings it
/// was fitted for. Immutable; pickles as :meth:`to_bytes`.
#[pyclass(frozen, module = "instant_embedding._core", name = "LinearMap")]
pub struct PyLinearMap {
    pub(crate) inner: Arc<LinearMap>,
}

#[pymethods]
impl PyLinearMap {
    /// Reads :meth:`to_bytes`'s output (``GraphFormatError`` for anything else).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let data = data.to_vec();
        let m = py.detach(move || LinearMap::from_bytes(&data)).py_err()?;
        Ok(PyLinearMap { inner: Arc::new(m) })
    }

    /// The map as bytes: the model file's content (docs/SPEC.md §2c).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    /// The settings the map was fitted for.
    #[getter]
    fn config(&self) -> PyEmbeddingConfig {
        PyEmbeddingConfig {
            inner: *self.inner.config(),
        }
    }

    /// Nodes in the sample it was fitted on.
    #[getter]
    fn sample(&self) -> usize {
        self.inner.sample()
    }

    /// The ``(wide_dim, dim)`` float32 matrix (a read-only copy).
    #[getter]
    fn components<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let c = self.inner.config();
        let m = self.inner.components().to_vec().into_pyarray(py);
        let m = m.reshape([c.wide_dim, c.dim])?;
        m.getattr("flags")?.setattr("writeable", false)?;
        Ok(m)
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let ctor = slf.get_type().getattr("from_bytes")?;
        let bytes = slf.get().to_bytes(py);
        Ok((ctor, PyTuple::new(py, [bytes])?))
    }
}

/// Fits the linear map of `config` (whose `wide_dim` must be > 0) on `graph` (docs/SPEC.md
/// §2c); bit-identical for any `threads`.
#[pyfunction]
#[pyo3(signature = (graph, config, threads=None))]
pub fn fit_map(
    py: Python<'_>,
    graph: &PyGraph,
    config: &PyEmbeddingConfig,
    threads: Option<usize>,
) -> PyResult<PyLinearMap> {
    let cfg = config.inner;
    let threads = crate::parallel::resolve_threads(threads).py_err()?;
    let g = graph.inner.clone();
    let m = py
        .detach(move || {
            let pool = crate::parallel::pool_for(threads, cfg.fit_nodes)?;
            compress::fit(&g, &cfg, pool.as_deref())
        })
        .py_err()?;
    Ok(PyLinearMap { inner: Arc::new(m) })
}
