//! The command line's table (`crate::cli::COMMANDS`) as `argparse` arguments, the flags of
//! the embedding settings and reading options generated from their tables.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::config::to_py;
use super::read_options::{choices, shown_default};
use crate::cli::{flag_names, metavar, ArgKind, Flag, COMMANDS};
use crate::embed::config::{EmbeddingConfig, SettingKind, SettingValue, SETTINGS};
use crate::human::general;
use crate::io::options::{ReadKind, Stage, READ_SETTINGS};

/// The subcommands: dicts of ``name``, ``help``, ``description`` (None: none), ``examples``
/// and ``flags``. A flag is a dict of ``names`` and ``add_argument``'s keywords (``type``:
/// the name of the type: int, float, str or column); a reading flag also has ``negative``,
/// the flag that sets it to false.
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
            let mut flags = Vec::new();
            for f in c.flags {
                flags.extend(flag(py, f)?);
            }
            d.set_item("flags", flags)?;
            Ok(d)
        })
        .collect()
}

/// The flag that sets the setting or reading option ``name`` to ``value`` (False: the
/// negative of a reading flag): ``--weight-col``, ``--no-header``, ``--undirected``.
#[pyfunction]
#[pyo3(signature = (name, value=true))]
pub fn cli_flag(name: &str, value: bool) -> String {
    crate::cli::flag(name, value)
}

fn flag<'py>(py: Python<'py>, f: &Flag) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let a = match f {
        Flag::Settings(defaults) => return setting_flags(py, defaults),
        Flag::Reading(stage) => return reading_flags(py, *stage),
        Flag::One(a) => a,
    };
    let d = PyDict::new(py);
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
    Ok(vec![d])
}

/// One flag per embedding setting, with the kernel's defaults but `defaults`.
fn setting_flags<'py>(
    py: Python<'py>,
    defaults: &[(&str, SettingValue)],
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let mut flags = Vec::new();
    for s in SETTINGS {
        let changed = defaults.iter().find(|d| d.0 == s.name).map(|d| d.1);
        let Some(default) = changed.or(EmbeddingConfig::DEFAULT.get(s.name)) else {
            continue;
        };
        let d = PyDict::new(py);
        d.set_item("names", flag_names(s.name))?;
        d.set_item("dest", s.name)?;
        let (kind, choices) = match s.kind {
            SettingKind::Int { .. } => ("int", None),
            SettingKind::Float => ("float", None),
            SettingKind::Choice(names) => ("str", Some(names.to_vec())),
        };
        d.set_item("type", kind)?;
        d.set_item("default", to_py(py, default)?)?;
        d.set_item("choices", choices)?;
        d.set_item("metavar", metavar(s.name))?;
        let shown = match default {
            SettingValue::Float(x) => general(x),
            v => v.to_string(),
        };
        d.set_item("help", format!("{} (default: {shown})", s.help))?;
        flags.push(d);
    }
    Ok(flags)
}

/// One flag per reading option of `stage` (every option that some format takes for `Build`,
/// the ones of the parse stage for `Parse`).
fn reading_flags(py: Python<'_>, stage: Stage) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let options = READ_SETTINGS
        .iter()
        .filter(|s| !s.formats().is_empty() && (stage == Stage::Build || s.stage == Stage::Parse));
    let mut flags = Vec::new();
    for s in options {
        let default = shown_default(s);
        let mut help = s.help.to_string();
        if !default.is_empty() {
            help += &format!(" (default: {default})");
        }
        let d = PyDict::new(py);
        d.set_item("names", flag_names(s.name))?;
        d.set_item("dest", s.name)?;
        d.set_item("help", help.replace('%', "%%"))?;
        if s.kind == ReadKind::Flag {
            d.set_item("negative", crate::cli::flag(s.name, false))?;
        } else {
            let kind = if s.kind == ReadKind::Column {
                "column"
            } else {
                "str"
            };
            d.set_item("type", kind)?;
            d.set_item("default", (!default.is_empty()).then_some(default))?;
            d.set_item("choices", choices(s))?;
            d.set_item("metavar", (!s.metavar.is_empty()).then_some(s.metavar))?;
        }
        flags.push(d);
    }
    Ok(flags)
}
