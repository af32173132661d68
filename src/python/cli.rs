//! The command line's table (`crate::cli::COMMANDS`) as `argparse` arguments.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::cli::{ArgKind, Flag, COMMANDS};
use crate::io::options::Stage;

/// The subcommands: dicts of ``name``, ``help``, ``description`` (None: none), ``examples``
/// and ``flags``. A flag is a dict of ``names`` and ``add_argument``'s keywords (``type``:
/// the name of the type), or ``{"settings": {name: default}}`` (the embedding settings' flags,
/// those defaults changed) or ``{"reading": stage}`` (the reading options' flags of a stage).
#[pyfunction]
pub fn cli_commands(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    COMMANDS
        .iter()
        .map(|c| {
            let d = PyDict::new(py);
            d.set_item("name", c.name)?;
            d.set_item("help", c.help)?;
            d.set_item(
                "description",
                (!c.description.is_empty()).then_some(c.description),
            )?;
            d.set_item("examples", c.examples.to_vec())?;
            let flags = c
                .flags
                .iter()
                .map(|f| flag(py, f))
                .collect::<PyResult<Vec<_>>>()?;
            d.set_item("flags", flags)?;
            Ok(d)
        })
        .collect()
}

fn flag<'py>(py: Python<'py>, f: &Flag) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let a = match f {
        Flag::Settings(defaults) => {
            let changed = PyDict::new(py);
            for &(name, value) in *defaults {
                changed.set_item(name, super::config::to_py(py, value)?)?;
            }
            d.set_item("settings", changed)?;
            return Ok(d);
        }
        Flag::Reading(stage) => {
            let stage = match stage {
                Stage::Parse => "parse",
                Stage::Build => "build",
            };
            d.set_item("reading", stage)?;
            return Ok(d);
        }
        Flag::One(a) => a,
    };
    d.set_item("names", a.names.to_vec())?;
    if !a.metavar.is_empty() {
        d.set_item("metavar", a.metavar)?;
    }
    d.set_item("help", a.help)?;
    match a.kind {
        ArgKind::Text(default) => d.set_item("default", default)?,
        ArgKind::Required => d.set_item("required", true)?,
        ArgKind::Optional => d.set_item("nargs", "?")?,
        ArgKind::Many => d.set_item("nargs", "*")?,
        ArgKind::Repeated => d.set_item("action", "append")?,
        ArgKind::Int(default) => {
            d.set_item("type", "int")?;
            d.set_item("default", default)?;
        }
        ArgKind::Choice(choices, default) => {
            d.set_item("choices", choices.to_vec())?;
            d.set_item("default", default)?;
        }
        ArgKind::Switch => d.set_item("action", "store_true")?,
    }
    Ok(d)
}
