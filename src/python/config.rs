//! The Python face of the kernel's `EmbeddingConfig`: a frozen, picklable, hashable class built
//! and read through the kernel's settings table (`crate::embed::config::SETTINGS`), so that no setting
//! is named here. It is validated once, when it is made; every function that takes it passes
//! it to the kernel whole.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyTuple};

use super::errors::IntoPy;
use crate::embed::config::{
    setting, EmbeddingConfig, Setting, SettingKind, SettingValue, SETTINGS,
};

/// The settings that determine an embedding (everything but the graph and the nodes).
///
/// Immutable: ``replace(**changes)`` gives a changed copy. Every setting is checked when the
/// object is made, so a config that exists is valid. Equal configs give bit-identical
/// embeddings.
#[pyclass(frozen, module = "instant_embedding._core", name = "EmbeddingConfig")]
pub struct PyEmbeddingConfig {
    pub(crate) inner: EmbeddingConfig,
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn is_bool(obj: &Bound<'_, PyAny>) -> bool {
    // Python's bool and numpy's (np.bool_, np.bool) are ints to Python, never settings.
    obj.is_instance_of::<PyBool>() || matches!(type_name(obj).as_str(), "bool_" | "bool")
}

/// `min <= name <= max` written the way users think of the bound.
fn range_text(name: &str, min: u64, max: u64) -> String {
    match max {
        u64::MAX => format!("{min} <= {name} < 2**64"),
        m if m == (1 << 63) - 1 => format!("{min} <= {name} < 2**63"),
        m => format!("{min} <= {name} <= {m}"),
    }
}

/// Converts a Python value to the kind `s` declares: TypeError for a wrong type, ValueError for
/// an out-of-range integer or an unknown choice (the domain itself is `validate`'s).
fn extract(s: &Setting, obj: &Bound<'_, PyAny>) -> PyResult<SettingValue> {
    let name = s.name;
    match s.kind {
        SettingKind::Int { min, max } => {
            let int_like = obj.is_instance_of::<PyInt>() || obj.hasattr("__index__")?;
            if is_bool(obj) || obj.is_instance_of::<PyFloat>() || !int_like {
                return Err(PyTypeError::new_err(format!(
                    "{name} must be an int, got {}",
                    type_name(obj)
                )));
            }
            let out_of_range = || {
                PyValueError::new_err(format!(
                    "{name} must satisfy {}, got {obj}",
                    range_text(name, min, max)
                ))
            };
            let v: i128 = obj
                .call_method0("__index__")?
                .extract()
                .map_err(|_| out_of_range())?;
            if v < i128::from(min) || v > i128::from(max) {
                return Err(PyValueError::new_err(format!(
                    "{} must satisfy {}, got {v}",
                    name,
                    range_text(name, min, max)
                )));
            }
            Ok(SettingValue::Int(v as u64))
        }
        SettingKind::Float => {
            let number = obj.is_instance_of::<PyFloat>()
                || obj.is_instance_of::<PyInt>()
                || obj.hasattr("__float__")?;
            if is_bool(obj) || !number || obj.is_instance_of::<pyo3::types::PyString>() {
                return Err(PyTypeError::new_err(format!(
                    "{name} must be a number, got {}",
                    type_name(obj)
                )));
            }
            let v: f64 = obj.extract().map_err(|e| {
                PyValueError::new_err(format!("{name} must be a finite number, got {obj}: {e}"))
            })?;
            Ok(SettingValue::Float(v))
        }
        SettingKind::Choice(names) => {
            let given: Option<String> = obj.extract().ok();
            match given.and_then(|g| names.iter().find(|&&n| n == g)) {
                Some(&n) => Ok(SettingValue::Choice(n)),
                None => Err(PyValueError::new_err(format!(
                    "{name} must be one of {}, got {}",
                    names
                        .iter()
                        .map(|n| format!("'{n}'"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    obj.repr().map(|r| r.to_string()).unwrap_or_default()
                ))),
            }
        }
    }
}

/// `dir()` of a settings object: its type's names and its settings' (read by `__getattr__`).
pub(crate) fn dir_with<'a>(
    obj: &Bound<'_, PyAny>,
    settings: impl Iterator<Item = &'a str>,
) -> PyResult<Vec<String>> {
    let mut names: Vec<String> = obj
        .get_type()
        .dir()?
        .iter()
        .map(|n| n.extract())
        .collect::<PyResult<_>>()?;
    names.extend(settings.map(str::to_string));
    names.sort();
    Ok(names)
}

pub(super) fn to_py(py: Python<'_>, v: SettingValue) -> PyResult<Py<PyAny>> {
    Ok(match v {
        SettingValue::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        SettingValue::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        SettingValue::Choice(c) => c.into_pyobject(py)?.into_any().unbind(),
    })
}

/// Applies `changes` (setting name -> Python value) to `cfg`, then validates the result.
fn with_changes(
    mut cfg: EmbeddingConfig,
    changes: Option<&Bound<'_, PyDict>>,
) -> PyResult<EmbeddingConfig> {
    if let Some(changes) = changes {
        for (key, value) in changes.iter() {
            let name: String = key.extract()?;
            let s = setting(&name).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "unknown setting '{name}'; the settings are {}",
                    SETTINGS
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            cfg.set(s.name, extract(s, &value)?).py_err()?;
        }
    }
    cfg.validate().py_err()?;
    Ok(cfg)
}

#[pymethods]
impl PyEmbeddingConfig {
    #[new]
    #[pyo3(signature = (**settings))]
    fn new(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyEmbeddingConfig {
            inner: with_changes(EmbeddingConfig::DEFAULT, settings)?,
        })
    }

    /// A copy with the given settings changed (validated like a new config).
    #[pyo3(signature = (**changes))]
    fn replace(&self, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(PyEmbeddingConfig {
            inner: with_changes(self.inner, changes)?,
        })
    }

    /// The settings as a dict, in their documented order.
    pub(crate) fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for s in SETTINGS {
            if let Some(v) = self.inner.get(s.name) {
                d.set_item(s.name, to_py(py, v)?)?;
            }
        }
        Ok(d)
    }

    /// Every setting's name, type ("int", "float" or "str"), default, choices (a tuple, or
    /// None), bounds (ints), one-line help and full documentation (``doc``).
    #[staticmethod]
    fn settings<'py>(py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        SETTINGS
            .iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("name", s.name)?;
                let default = EmbeddingConfig::DEFAULT.get(s.name);
                d.set_item("default", default.map(|v| to_py(py, v)).transpose()?)?;
                let (kind, choices) = match s.kind {
                    SettingKind::Int { min, max } => {
                        d.set_item("min", min)?;
                        d.set_item("max", max)?;
                        ("int", None)
                    }
                    SettingKind::Float => ("float", None),
                    SettingKind::Choice(names) => ("str", Some(PyTuple::new(py, names)?)),
                };
                d.set_item("type", kind)?;
                d.set_item("choices", choices)?;
                d.set_item("help", s.help)?;
                d.set_item("doc", s.doc)?;
                Ok(d)
            })
            .collect()
    }

    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        match self.inner.get(name) {
            Some(v) => to_py(py, v),
            None => Err(PyAttributeError::new_err(format!(
                "'EmbeddingConfig' object has no attribute '{name}'"
            ))),
        }
    }

    fn __dir__(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        dir_with(slf.as_any(), SETTINGS.iter().map(|s| s.name))
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner == other.inner
    }

    fn __hash__(&self) -> u64 {
        let mut h = DefaultHasher::new();
        for s in SETTINGS {
            s.name.hash(&mut h);
            match self.inner.get(s.name) {
                Some(SettingValue::Int(i)) => i.hash(&mut h),
                // Valid floats are finite and nonzero: equal values have equal bits.
                Some(SettingValue::Float(f)) => f.to_bits().hash(&mut h),
                Some(SettingValue::Choice(c)) => c.hash(&mut h),
                None => {}
            }
        }
        h.finish()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut parts = Vec::with_capacity(SETTINGS.len());
        for s in SETTINGS {
            if let Some(v) = self.inner.get(s.name) {
                parts.push(format!("{}={}", s.name, to_py(py, v)?.bind(py).repr()?));
            }
        }
        Ok(format!("EmbeddingConfig({})", parts.join(", ")))
    }

    /// Pickles as its settings (``EmbeddingConfig(**settings)``), so a config can be shipped
    /// to worker processes.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        Ok((PyTuple::empty(py), self.to_dict(py)?))
    }
}
