//! The Python face of the kernel's `ReadOptions`: a frozen class built and read through the
//! kernel's table (`crate::io::options::READ_SETTINGS`), so that no option is named here. It is
//! validated once, when it is made; every reader takes it whole.

use std::path::PathBuf;

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple};

use super::errors::IntoPy;
use crate::io::options::{
    format_size, parse_size, read_setting, ReadKind, ReadOptions, ReadSetting, ReadValue, Stage,
    READ_SETTINGS,
};
use crate::io::text::Column;
use crate::io::FORMATS;

/// How to read an input: every option of :func:`instant_embedding.convert`.
///
/// Immutable: ``replace(**changes)`` gives a changed copy. Every option is checked when the
/// object is made, so options that exist are valid.
#[pyclass(frozen, eq, module = "instant_embedding._core", name = "ReadOptions")]
#[derive(PartialEq)]
pub struct PyReadOptions {
    pub(crate) inner: ReadOptions,
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn is_bool(obj: &Bound<'_, PyAny>) -> bool {
    // Python's bool and numpy's (np.bool_, np.bool).
    obj.is_instance_of::<PyBool>() || matches!(type_name(obj).as_str(), "bool_" | "bool")
}

fn is_int(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(!is_bool(obj) && (obj.is_instance_of::<PyInt>() || obj.hasattr("__index__")?))
}

/// Converts a Python value to the kind `s` declares: TypeError for a wrong type, ValueError
/// for a bad value.
fn extract(s: &ReadSetting, obj: &Bound<'_, PyAny>) -> PyResult<ReadValue> {
    let name = s.name;
    if obj.is_none() {
        return Ok(ReadValue::None);
    }
    let type_error = |what: &str| {
        PyTypeError::new_err(format!(
            "{name} must be {what}, got {}",
            obj.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    };
    Ok(match s.kind {
        ReadKind::Flag => {
            if !is_bool(obj) {
                return Err(type_error("True, False or None"));
            }
            ReadValue::Bool(obj.is_truthy()?)
        }
        // A choice that is no str is refused with the choices (by `set`), like a wrong str.
        ReadKind::Choice(_) | ReadKind::Format => ReadValue::Text(match obj.extract::<String>() {
            Ok(t) => t,
            Err(_) => obj.repr()?.to_string(),
        }),
        ReadKind::Text => ReadValue::Text(obj.extract().map_err(|_| type_error("a str"))?),
        ReadKind::Column => {
            if let Ok(t) = obj.cast::<PyString>() {
                ReadValue::Column(Column::Name(t.to_string()))
            } else if is_int(obj)? {
                let i: i128 = obj.call_method0("__index__")?.extract()?;
                let i = usize::try_from(i)
                    .map_err(|_| type_error("a column index >= 0 or a column name"))?;
                ReadValue::Column(Column::Index(i))
            } else {
                return Err(type_error("a column index >= 0 or a column name"));
            }
        }
        ReadKind::Int | ReadKind::Size => {
            if s.kind == ReadKind::Size && obj.is_instance_of::<PyString>() {
                let t: String = obj.extract()?;
                return Ok(ReadValue::Int(parse_size(&t).py_err()?));
            }
            if !is_int(obj)? {
                return Err(type_error(if s.kind == ReadKind::Size {
                    "an int or a size string such as '2G'"
                } else {
                    "an int"
                }));
            }
            let v: i128 = obj.call_method0("__index__")?.extract()?;
            let bad = s.kind == ReadKind::Size && v <= 0;
            match u64::try_from(v) {
                Ok(v) if !bad => ReadValue::Int(v),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "{name} must be > {}, got {v}",
                        if s.kind == ReadKind::Size { "0" } else { "= 0" }
                    )))
                }
            }
        }
        ReadKind::Path => {
            ReadValue::Path(obj.extract::<PathBuf>().map_err(|_| type_error("a path"))?)
        }
    })
}

fn to_py(py: Python<'_>, v: ReadValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        ReadValue::None => py.None(),
        ReadValue::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        ReadValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        ReadValue::Text(t) => t.into_pyobject(py)?.into_any().unbind(),
        ReadValue::Column(Column::Index(i)) => i.into_pyobject(py)?.into_any().unbind(),
        ReadValue::Column(Column::Name(t)) => t.into_pyobject(py)?.into_any().unbind(),
        ReadValue::Path(p) => p
            .to_string_lossy()
            .into_owned()
            .into_pyobject(py)?
            .into_any()
            .unbind(),
    })
}

/// Applies `changes` (option name -> Python value) to `opts`, then validates the result.
fn with_changes(
    mut opts: ReadOptions,
    changes: Option<&Bound<'_, PyDict>>,
) -> PyResult<ReadOptions> {
    if let Some(changes) = changes {
        for (key, value) in changes.iter() {
            let name: String = key.extract()?;
            let s = read_setting(&name).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "unknown reading option '{name}'; the options are {}",
                    READ_SETTINGS
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            opts.set(s.name, extract(s, &value)?).py_err()?;
        }
    }
    opts.validate().py_err()?;
    Ok(opts)
}

/// The names an option of a choice takes (a format: "auto" or a format's name).
pub(super) fn choices(s: &ReadSetting) -> Option<Vec<&'static str>> {
    match s.kind {
        ReadKind::Choice(c) => Some(c.to_vec()),
        ReadKind::Format => Some(
            std::iter::once("auto")
                .chain(FORMATS.iter().map(|f| f.name))
                .collect(),
        ),
        _ => None,
    }
}

/// A default as users read it in `--help` and the docs.
pub(super) fn shown_default(s: &ReadSetting) -> String {
    match ReadOptions::default().get(s.name) {
        Some(ReadValue::Text(t)) => t,
        Some(ReadValue::Int(i)) if s.kind == ReadKind::Size => format_size(i),
        Some(ReadValue::Int(i)) => i.to_string(),
        Some(ReadValue::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

#[pymethods]
impl PyReadOptions {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyReadOptions {
            inner: with_changes(ReadOptions::default(), options)?,
        })
    }

    /// A copy with the given options changed (validated like new options).
    #[pyo3(signature = (**changes))]
    fn replace(&self, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyReadOptions {
            inner: with_changes(self.inner.clone(), changes)?,
        })
    }

    /// The options as a dict, in their documented order.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for s in READ_SETTINGS {
            if let Some(v) = self.inner.get(s.name) {
                d.set_item(s.name, to_py(py, v)?)?;
            }
        }
        Ok(d)
    }

    /// Names of the options that differ from their defaults (``format`` aside).
    fn given(&self) -> Vec<&'static str> {
        self.inner.given()
    }

    /// Refuses (ValueError) options that mean nothing for input format ``fmt``.
    fn check_applies(&self, fmt: &str) -> PyResult<()> {
        self.inner.check_applies(fmt).py_err()
    }

    /// Every option's name, type (``"flag"``, ``"choice"``, ``"text"``, ``"column"``,
    /// ``"int"``, ``"size"``, ``"path"``), choices (a tuple, or None), default as the command
    /// line shows it (``""``: decided by the input), stage (``"parse"``: how records are read,
    /// which ``update`` takes too; ``"build"``: how the graph is built), the formats that use
    /// it (a tuple; every format for most) and one-line help.
    #[staticmethod]
    fn settings<'py>(py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        READ_SETTINGS
            .iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("name", s.name)?;
                d.set_item("type", s.kind.name())?;
                let choices = choices(s).map(|c| PyTuple::new(py, c)).transpose()?;
                d.set_item("choices", choices)?;
                d.set_item("default", shown_default(s))?;
                d.set_item(
                    "stage",
                    match s.stage {
                        Stage::Parse => "parse",
                        Stage::Build => "build",
                    },
                )?;
                d.set_item("formats", PyTuple::new(py, s.formats())?)?;
                d.set_item("metavar", s.metavar)?;
                d.set_item("help", s.help)?;
                Ok(d)
            })
            .collect()
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        match self.inner.get(name) {
            Some(v) => to_py(py, v),
            None => Err(PyAttributeError::new_err(format!(
                "'ReadOptions' object has no attribute '{name}'"
            ))),
        }
    }

    fn __dir__(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        crate::python::config::dir_with(slf.as_any(), READ_SETTINGS.iter().map(|s| s.name))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut parts = Vec::new();
        for name in self.inner.given() {
            if let Some(v) = self.inner.get(name) {
                parts.push(format!("{name}={}", to_py(py, v)?.bind(py).repr()?));
            }
        }
        if self.inner.format != "auto" {
            parts.insert(0, format!("format='{}'", self.inner.format));
        }
        Ok(format!("ReadOptions({})", parts.join(", ")))
    }

    /// Pickles as its options (``ReadOptions(**options)``).
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        Ok((PyTuple::empty(py), self.to_dict(py)?))
    }
}

/// Parses a memory size: an int (bytes), a string such as ``"2G"``, ``"512MiB"``, ``"1.5g"``
/// (binary units: ``1K = 1024``), or None (the default budget). Returns bytes.
#[pyfunction(name = "parse_size")]
#[pyo3(signature = (value=None))]
pub fn py_parse_size(value: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    let s = read_setting("memory_limit").expect("memory_limit is a reading option");
    match value.map(|v| extract(s, v)).transpose()? {
        Some(ReadValue::Int(n)) => Ok(n),
        _ => Ok(ReadOptions::default().memory_limit),
    }
}
