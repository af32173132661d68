//! word2vec text: `id v1 ... vd` per row, values as C's `%.9g` writes them (9 significant
//! digits: every float32 reads back exactly).

use std::io::Write;

use super::Ids;
use crate::error::{Error, Result};

/// `x` as `printf("%.9g", x)` formats it.
pub fn format_g9(x: f64) -> String {
    const P: i32 = 9;
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("integer exponent");
    if (-4..P).contains(&exp) {
        let fixed = format!("{:.*}", (P - 1 - exp) as usize, x);
        strip_zeros(&fixed).to_owned()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mantissa), exp.abs())
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Python's `str.isspace`: Unicode white space plus the separators U+001C..U+001F.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Refuses ids that word2vec text cannot hold (empty, or with white space).
pub fn check_word(ids: &[String]) -> Result<()> {
    match ids.iter().find(|s| s.is_empty() || s.chars().any(is_space)) {
        Some(s) => Err(Error::input(format!(
            "node id {} contains whitespace (or is empty), which the word2vec text format \
             cannot represent; write .npy/.npz/.parquet instead",
            py_repr(s)
        ))),
        None => Ok(()),
    }
}

/// Refuses ids that a one-id-a-line file cannot hold.
pub fn check_lines(ids: &[String]) -> Result<()> {
    match ids.iter().find(|s| s.contains(['\n', '\r'])) {
        Some(s) => Err(Error::input(format!(
            "node id {} contains a line break, which the ids file cannot represent; write \
             .parquet instead",
            py_repr(s)
        ))),
        None => Ok(()),
    }
}

/// How Python's `repr` shows a string, for messages (quotes and the common escapes).
fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The word2vec lines of `rows` (row-major, `dim` wide) for `ids`.
pub fn write_rows(w: &mut dyn Write, ids: &Ids, rows: &[f32], dim: usize) -> std::io::Result<()> {
    let mut line = String::new();
    for i in 0..ids.len() {
        line.clear();
        match ids {
            Ids::Int(v) => line.push_str(&v[i].to_string()),
            Ids::Str(v) => line.push_str(&v[i]),
        }
        for &x in &rows[i * dim..(i + 1) * dim] {
            line.push(' ');
            line.push_str(&format_g9(f64::from(x)));
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}
