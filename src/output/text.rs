//! word2vec text: `id v1 ... vd` per row, values as C's `%.9g` writes them (9 significant
//! digits: every float32 reads back exactly).

use std::io::Write;

use super::Ids;
use crate::error::{Error, Result};

/// `x` as `printf("%.9g", x)` formats it.
pub fn format_g9(x: f64) -> String {
    let mut out = String::new();
    push_g9(&mut out, x, &mut String::new());
    out
}

/// Appends `x` as `printf("%.9g", x)` formats it; `scratch` is reused between calls.
fn push_g9(out: &mut String, x: f64, scratch: &mut String) {
    use std::fmt::Write as _;
    const P: i32 = 9;
    if !x.is_finite() || x == 0.0 {
        out.push_str(match x {
            x if x.is_nan() => "nan",
            x if x == f64::INFINITY => "inf",
            x if x == f64::NEG_INFINITY => "-inf",
            x if x.is_sign_negative() => "-0",
            _ => "0",
        });
        return;
    }
    // The P significant digits, correctly rounded, and the decimal exponent X: C's %g takes
    // both from the e-style conversion and prints them in fixed style when -4 <= X < P.
    scratch.clear();
    write!(scratch, "{:.*e}", (P - 1) as usize, x.abs()).expect("formatting into a String");
    let (mantissa, exp) = scratch.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("integer exponent");
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let last = digits.iter().rposition(|&d| d != b'0').unwrap_or(0); // trailing zeros go
    let digits = &digits[..=last];
    if x < 0.0 {
        out.push('-');
    }
    let push = |out: &mut String, d: &[u8]| out.extend(d.iter().map(|&b| b as char));
    if (-4..P).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            push(out, digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                push(out, digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
            } else {
                push(out, &digits[..int_len]);
                out.push('.');
                push(out, &digits[int_len..]);
            }
        }
    } else {
        push(out, &digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            push(out, &digits[1..]);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        write!(out, "e{sign}{:02}", exp.abs()).expect("formatting into a String");
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
    let mut scratch = String::new();
    for i in 0..ids.len() {
        line.clear();
        match ids {
            Ids::Int(v) => line.push_str(&v[i].to_string()),
            Ids::Str(v) => line.push_str(&v[i]),
        }
        for &x in &rows[i * dim..(i + 1) * dim] {
            line.push(' ');
            push_g9(&mut line, f64::from(x), &mut scratch);
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Reads a word2vec text file (gzip-compressed when its name ends in `.gz`): a first line
/// `n d`, then `id v1 ... vd` per row. Returns the ids (as text) and the rows (row-major,
/// float32); a malformed line is an `Error::Format` naming its line number.
pub fn read(path: &std::path::Path) -> Result<(Vec<String>, Vec<f32>, usize)> {
    use std::io::{BufRead, BufReader, Read};
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let gz = path.to_string_lossy().to_lowercase().ends_with(".gz");
    let raw: Box<dyn Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let bad =
        |line: usize, what: String| Error::format(format!("{}:{line}: {what}", path.display()));
    let mut lines = BufReader::new(raw).lines();
    let mut next = |no: usize| -> Result<String> {
        match lines.next() {
            Some(l) => l.map_err(|e| Error::io(path, e)),
            None => Err(bad(
                no,
                "the file ends before the rows the header counts".into(),
            )),
        }
    };
    let header = next(1)?;
    let counts: Vec<usize> = header
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let &[n, dim] = counts.as_slice() else {
        return Err(bad(
            1,
            format!("expected the header 'rows dim', got {header:?}"),
        ));
    };
    let (mut ids, mut rows) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n.saturating_mul(dim)),
    );
    for i in 0..n {
        let line = next(i + 2)?;
        let mut fields = line.trim_end_matches(['\n', '\r']).split(' ');
        ids.push(fields.next().unwrap_or_default().to_string());
        let before = rows.len();
        for x in fields {
            rows.push(
                x.parse::<f32>()
                    .map_err(|_| bad(i + 2, format!("{x:?} is not a number")))?,
            );
        }
        if rows.len() - before != dim {
            let got = rows.len() - before + 1;
            return Err(bad(
                i + 2,
                format!("expected {} fields, got {got}", dim + 1),
            ));
        }
    }
    Ok((ids, rows, dim))
}
