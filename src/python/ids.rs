//! The node-id and weight boundary of the readers that take columns from a library (numpy,
//! Arrow, pandas): Python values become typed columns here, checked by `io::ids` with one
//! error contract.

use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

use super::errors::IntoPy;
use crate::error::Error;
use crate::io::ids::{self, IdColumn, Place};

fn type_name(x: &Bound<'_, PyAny>) -> String {
    x.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// One Python value of an id column: an int, a str (bytes: UTF-8), or why it is neither.
enum Value {
    Int(i64),
    Str(String),
    Missing,
    Overflow(String),
    Other(String),
}

fn value(x: &Bound<'_, PyAny>) -> PyResult<Value> {
    if x.is_none() {
        return Ok(Value::Missing);
    }
    if let Ok(s) = x.cast::<PyString>() {
        return Ok(Value::Str(s.to_str()?.to_owned()));
    }
    if let Ok(b) = x.cast::<PyBytes>() {
        return Ok(match std::str::from_utf8(b.as_bytes()) {
            Ok(s) => Value::Str(s.to_owned()),
            Err(_) => Value::Other(x.repr()?.to_string()),
        });
    }
    let is_bool = x.is_instance_of::<PyBool>() || type_name(x) == "bool_";
    if !is_bool
        && (x.is_instance_of::<PyInt>()
            || type_name(x).starts_with("int")
            || type_name(x).starts_with("uint"))
    {
        let n: i128 = x.call_method0("__index__")?.extract()?;
        return Ok(match i64::try_from(n) {
            Ok(v) => Value::Int(v),
            Err(_) => Value::Overflow(n.to_string()),
        });
    }
    if x.is_instance_of::<PyFloat>() && x.extract::<f64>()?.is_nan() {
        return Ok(Value::Missing);
    }
    Ok(Value::Other(format!("{} ({})", x.repr()?, type_name(x))))
}

/// Ids of a sequence of Python values: all int or all str (the first decides).
fn from_objects(items: &Bound<'_, PyList>, at: &Place<'_>) -> PyResult<IdColumn> {
    let mut ints = Vec::new();
    let mut strs = Vec::new();
    let mut strings = None;
    for (i, x) in items.iter().enumerate() {
        let bad = |m: String| Error::format(format!("{}: column {} {m}", at.row(i), at.name()));
        match (value(&x)?, strings) {
            (Value::Int(v), None | Some(false)) => {
                strings = Some(false);
                ints.push(v);
            }
            (Value::Str(s), None | Some(true)) => {
                strings = Some(true);
                strs.push(s);
            }
            (Value::Missing, _) => return Err(bad("is missing".into())).py_err(),
            (Value::Overflow(n), _) => {
                return Err(Error::format(format!(
                    "{}: id {n} in column {} overflows int64",
                    at.row(i),
                    at.name()
                )))
                .py_err()
            }
            (Value::Int(v), Some(true)) => {
                return Err(bad(format!(
                    "holds {v} (int); node ids must be all int or all str"
                )))
                .py_err()
            }
            (Value::Str(s), Some(false)) => {
                return Err(bad(format!(
                    "holds {} (str); node ids must be all int or all str",
                    ids::repr_str(&s)
                )))
                .py_err()
            }
            (Value::Other(what), _) => {
                return Err(bad(format!(
                    "holds {what}; node ids must be all int or all str"
                )))
                .py_err()
            }
        }
    }
    Ok(if strings == Some(true) {
        IdColumn::Str(strs)
    } else {
        IdColumn::Int(ints)
    })
}

/// A pandas Series or a pyarrow Array as numpy, or as a list with None for each missing value
/// (so the refusal names its row); any other value as it is.
fn library_column<'py>(values: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = values.py();
    if values.hasattr("hasnans")? && values.hasattr("to_numpy")? {
        // pandas: missing values as None, numpy's own dtypes as they are
        if !values.getattr("hasnans")?.is_truthy()? {
            return values.call_method0("to_numpy");
        }
        let kw = PyDict::new(py);
        kw.set_item("dtype", "object")?;
        kw.set_item("na_value", py.None())?;
        return values.call_method("to_numpy", (), Some(&kw));
    }
    if values.hasattr("null_count")? && values.hasattr("to_pylist")? {
        // pyarrow: a dictionary-encoded column by its values
        let v = if values.hasattr("dictionary_decode")? {
            values.call_method0("dictionary_decode")?
        } else {
            values.clone()
        };
        if v.getattr("null_count")?.extract::<usize>()? > 0 {
            return v.call_method0("to_pylist");
        }
        let kw = PyDict::new(py);
        kw.set_item("zero_copy_only", false)?;
        return v.call_method("to_numpy", (), Some(&kw));
    }
    Ok(values.clone())
}

/// A column of node ids (a one-dimensional numpy array of any integer, float, str, bytes or
/// object dtype, a pandas Series, a pyarrow Array, or a sequence) as an int64 array or a list of str, typed as `id_kind` asks.
/// Refusals are `GraphFormatError`s naming `input`, the row (from `row0`) and `column`.
#[pyfunction]
#[pyo3(signature = (values, id_kind, input, column, row0))]
pub fn node_ids<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    id_kind: &str,
    input: &str,
    column: &str,
    row0: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let at = Place {
        input,
        column,
        row0,
    };
    let bad = |m: String| Err(Error::format(format!("{input}: column {} {m}", at.name()))).py_err();
    let values = &library_column(values)?;
    let col = if let Ok(a) = values.cast::<PyUntypedArray>() {
        if a.ndim() != 1 {
            return bad("must be one-dimensional".into());
        }
        let dtype = a.dtype();
        let (kind, size) = (dtype.kind(), dtype.itemsize());
        let as_array = |t: &str| a.call_method1("astype", (t,));
        match kind {
            b'b' => return bad("holds booleans, not node ids".into()),
            b'u' if size == 8 => {
                let v = a.cast::<PyArray1<u64>>()?.to_vec()?;
                IdColumn::Int(ids::from_u64(&v, &at).py_err()?)
            }
            b'i' | b'u' => IdColumn::Int(as_array("int64")?.cast::<PyArray1<i64>>()?.to_vec()?),
            b'f' => {
                let v = as_array("float64")?.cast::<PyArray1<f64>>()?.to_vec()?;
                IdColumn::Int(ids::from_f64(&v, &at).py_err()?)
            }
            b'O' | b'U' | b'S' | b'T' => {
                let list = a.call_method0("tolist")?;
                from_objects(list.cast::<PyList>()?, &at)?
            }
            _ => {
                return bad(format!(
                    "has dtype {dtype}; node ids must be integers or strings"
                ))
            }
        }
    } else {
        let list = PyList::new(py, values.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
        from_objects(&list, &at)?
    };
    Ok(match ids::coerce(col, id_kind, &at).py_err()? {
        IdColumn::Int(v) => PyArray1::from_vec(py, v).into_any(),
        IdColumn::Str(v) => PyList::new(py, v)?.into_any(),
    })
}

/// A pandas Series (numeric: float64 with NaN for a missing value) or a pyarrow Array (a
/// missing value refused, naming its row) as numpy; any other value as it is.
fn weight_column<'py>(
    values: &Bound<'py, PyAny>,
    input: &str,
    row0: u64,
    column: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = values.py();
    if values.hasattr("hasnans")? && values.hasattr("to_numpy")? {
        let kind = values.getattr("dtype")?.getattr("kind");
        let numeric = kind.is_ok_and(|k| k.extract::<String>().is_ok_and(|k| "biuf".contains(&k)));
        let kw = PyDict::new(py);
        if numeric {
            kw.set_item("dtype", "float64")?;
            kw.set_item("na_value", f64::NAN)?;
        } else {
            kw.set_item("dtype", "object")?;
        }
        return values.call_method("to_numpy", (), Some(&kw));
    }
    if values.hasattr("null_count")? && values.hasattr("to_pylist")? {
        if values.getattr("null_count")?.extract::<usize>()? > 0 {
            let list = values.call_method0("to_pylist")?;
            let i = list.try_iter()?.position(|x| x.is_ok_and(|x| x.is_none()));
            let name = ids::repr_str(column.unwrap_or("weight"));
            return Err(Error::format(format!(
                "{input}: row {}: weight in column {name} is missing",
                row0 + i.unwrap_or(0) as u64
            )))
            .py_err();
        }
        let kw = PyDict::new(py);
        kw.set_item("zero_copy_only", false)?;
        return values.call_method("to_numpy", (), Some(&kw));
    }
    Ok(values.clone())
}

/// Weights (an array, a pandas Series, a pyarrow Array or a sequence of numbers) as a float64
/// array, checked finite and > 0; refusals name `input`, the `unit` (`row`, `edge`) from `row0` and the `column` if any.
#[pyfunction]
#[pyo3(signature = (values, input, row0, column=Some("weight"), unit="row"))]
pub fn edge_weights<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
    input: &str,
    row0: u64,
    column: Option<&str>,
    unit: &str,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let values = &weight_column(values, input, row0, column)?;
    let numeric = values
        .cast::<PyUntypedArray>()
        .is_ok_and(|a| matches!(a.dtype().kind(), b'i' | b'u' | b'f'));
    let v: Vec<f64> = if numeric {
        let a = values.call_method1("astype", ("float64",))?;
        a.cast::<PyArray1<f64>>()?.to_vec()?
    } else {
        let mut out = Vec::new();
        for (i, x) in values.try_iter()?.enumerate() {
            let x = x?;
            // As numpy's astype(float64) reads them: numbers, and text that is a number.
            let f = match x.cast::<PyString>() {
                Ok(t) => t.to_str()?.trim().parse::<f64>().ok(),
                Err(_) if x.is_none() || x.is_instance_of::<PyBytes>() => None,
                Err(_) => x.extract::<f64>().ok(),
            };
            match f {
                Some(f) => out.push(f),
                None => {
                    let incol = column.map_or(String::new(), |c| {
                        format!(" in column {}", ids::repr_str(c))
                    });
                    return Err(Error::format(format!(
                        "{input}: {unit} {}: non-numeric weight {}{incol}",
                        row0 + i as u64,
                        x.repr()?
                    )))
                    .py_err();
                }
            }
        }
        out
    };
    ids::check_weights(&v, input, row0, column, unit).py_err()?;
    Ok(PyArray1::from_vec(py, v))
}

/// Node ids given as an argument of the API (`Graph.index`, `Graph.from_edges`, the live
/// writer): an integer or str array, or a sequence of ints or of strs. Other values are a
/// TypeError naming the argument `name`; a shape or an int beyond int64 a ValueError.
pub(crate) fn id_argument(values: &Bound<'_, PyAny>, name: &str) -> PyResult<IdColumn> {
    let type_err = |m: String| Err(PyTypeError::new_err(format!("{name} {m}")));
    let items = if let Ok(a) = values.cast::<PyUntypedArray>() {
        if a.ndim() != 1 {
            let shape = a.shape().to_vec();
            return Err(PyValueError::new_err(format!(
                "{name} must be one-dimensional, got shape {shape:?}"
            )));
        }
        match a.dtype().kind() {
            b'i' | b'u' => {
                let at = Place {
                    input: name,
                    column: name,
                    row0: 0,
                };
                let v = match a.cast::<PyArray1<u64>>() {
                    Ok(u) => ids::from_u64(&u.to_vec()?, &at).map_err(|_| {
                        PyValueError::new_err(format!("{name} holds ids above the int64 range"))
                    })?,
                    Err(_) => {
                        let i = a.call_method1("astype", ("int64",))?;
                        i.cast::<PyArray1<i64>>()?.to_vec()?
                    }
                };
                return Ok(IdColumn::Int(v));
            }
            b'U' | b'O' | b'T' => a.call_method0("tolist")?.cast_into::<PyList>()?,
            _ => {
                return type_err(format!(
                    "must hold integer or string node ids, got dtype {}",
                    a.dtype()
                ))
            }
        }
    } else {
        PyList::new(
            values.py(),
            values.try_iter()?.collect::<PyResult<Vec<_>>>()?,
        )?
    };
    let (mut ints, mut strs) = (Vec::new(), Vec::new());
    let out_of_range =
        || PyValueError::new_err(format!("{name} holds ids outside the int64 range"));
    for x in items.iter() {
        // A str first: the type checks of an int read its type's name.
        if let Ok(s) = x.cast::<PyString>() {
            strs.push(s.to_str()?.to_owned());
        } else if x.is_exact_instance_of::<PyInt>() {
            // A plain int (most lists): read directly; one beyond int64 is refused below.
            ints.push(x.extract::<i64>().map_err(|_| out_of_range())?);
        } else if !is_bool(&x) && (x.is_instance_of::<PyInt>() || is_numpy_int(&x)) {
            let n: i128 = x.call_method0("__index__")?.extract()?;
            ints.push(i64::try_from(n).map_err(|_| out_of_range())?);
        } else {
            return type_err(format!(
                "must hold int or str node ids, got {} {}",
                type_name(&x),
                x.repr()?
            ));
        }
        if !ints.is_empty() && !strs.is_empty() {
            return type_err("mixes int and str node ids; use one kind".into());
        }
    }
    Ok(if strs.is_empty() {
        IdColumn::Int(ints)
    } else {
        IdColumn::Str(strs)
    })
}

fn is_bool(x: &Bound<'_, PyAny>) -> bool {
    x.is_instance_of::<PyBool>() || type_name(x) == "bool_"
}

fn is_numpy_int(x: &Bound<'_, PyAny>) -> bool {
    let t = type_name(x);
    t.starts_with("int") || t.starts_with("uint")
}

/// Edge weights given as an argument: `count` finite positive numbers that fit float32.
pub(crate) fn weight_argument(values: &Bound<'_, PyAny>, count: usize) -> PyResult<Vec<f32>> {
    let py = values.py();
    // A bad argument is a ValueError, not a file's GraphFormatError.
    let v = edge_weights(py, values, "weights", 0, None, "edge")
        .map_err(|e| PyValueError::new_err(e.value(py).to_string()))?
        .to_vec()?;
    if v.len() != count {
        return Err(PyValueError::new_err(format!(
            "weights must have shape ({count},), got ({},)",
            v.len()
        )));
    }
    // (edge_weights refused non-finite and non-positive values)
    v.iter()
        .map(|&w| {
            let w32 = w as f32;
            if w32.is_finite() {
                Ok(w32)
            } else {
                Err(PyValueError::new_err(format!(
                    "weight {w} overflows float32"
                )))
            }
        })
        .collect()
}
