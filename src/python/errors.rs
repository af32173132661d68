//! The one place kernel errors become Python exceptions.
//!
//! The package's exception classes live in `instant_embedding/errors.py` (so they can have two
//! bases, e.g. `GraphFormatError(InstantEmbeddingError, ValueError)`); they are looked up once.

use pyo3::exceptions::{
    PyBlockingIOError, PyFileExistsError, PyFileNotFoundError, PyIndexError, PyIsADirectoryError,
    PyKeyboardInterrupt, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::error::Error;

fn package_exception(py: Python<'_>, name: &str, msg: String) -> PyErr {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let cls = MODULE
        .get_or_try_init(py, || {
            py.import("instant_embedding.errors").map(|m| m.unbind())
        })
        .and_then(|m| m.bind(py).getattr(name))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match cls {
        Ok(cls) => PyErr::from_type(cls, msg),
        // The facade is not importable (should not happen in an installed package).
        Err(_) => PyValueError::new_err(msg),
    }
}

/// `(errno, message)` when the OS gave an errno, so Python sets `OSError.errno` like the stdlib.
fn os_error<T: pyo3::PyTypeInfo>(code: Option<i32>, msg: String) -> PyErr {
    match code {
        Some(c) => PyErr::new::<T, _>((c, msg)),
        None => PyErr::new::<T, _>(msg),
    }
}

pub fn to_pyerr(err: Error) -> PyErr {
    Python::attach(|py| {
        let msg = err.to_string();
        match err {
            Error::Format(_) => package_exception(py, "GraphFormatError", msg),
            Error::UnknownNode(_) => package_exception(py, "NodeNotFoundError", msg),
            Error::BudgetExceeded(_) => package_exception(py, "BudgetExceededError", msg),
            Error::InvalidParameter(_) | Error::InvalidInput(_) => PyValueError::new_err(msg),
            Error::NodeIndexOutOfRange { .. } => PyIndexError::new_err(msg),
            Error::Cancelled => PyKeyboardInterrupt::new_err(msg),
            Error::Io { source, .. } => {
                use std::io::ErrorKind as K;
                let code = source.raw_os_error();
                match source.kind() {
                    K::NotFound => os_error::<PyFileNotFoundError>(code, msg),
                    K::PermissionDenied => os_error::<PyPermissionError>(code, msg),
                    K::IsADirectory => os_error::<PyIsADirectoryError>(code, msg),
                    K::AlreadyExists => os_error::<PyFileExistsError>(code, msg),
                    // A second writer of a live graph (its lock is taken).
                    K::WouldBlock => os_error::<PyBlockingIOError>(code, msg),
                    _ => os_error::<PyOSError>(code, msg),
                }
            }
        }
    })
}

/// `?`-friendly conversion for kernel results.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}
