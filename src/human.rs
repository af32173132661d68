//! Numbers as the command line and the progress line show them: `1,234,567`, `24.1 KiB`,
//! `35 µs`, `1e-07`.

/// `x` with `decimals` digits after the point and its integer part grouped by thousands:
/// `1,234.50` (Python's `{x:,.2f}`).
pub fn grouped(x: f64, decimals: usize) -> String {
    let text = format!("{x:.decimals$}");
    let (sign, text) = text.split_at(usize::from(text.starts_with('-')));
    let (int, frac) = text.split_at(text.find('.').unwrap_or(text.len()));
    let mut out = String::from(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out + frac
}

/// A byte count in binary units: `512 B`, `24.1 KiB`, `3.8 MiB`.
pub fn bytes(mut n: f64) -> String {
    for unit in ["B", "KiB", "MiB", "GiB", "TiB"] {
        if n.abs() < 1024.0 || unit == "TiB" {
            return if unit == "B" {
                format!("{n:.0} B")
            } else {
                format!("{n:.1} {unit}")
            };
        }
        n /= 1024.0;
    }
    unreachable!("the last unit returns")
}

/// A duration in the unit that reads best: `35 µs`, `9.2 ms`, `1.5 s`, `3.0 min`, `2.5 h`.
pub fn seconds(s: f64) -> String {
    let units = [(1e-3, 1e6, "µs"), (1.0, 1e3, "ms"), (120.0, 1.0, "s")];
    for (limit, scale, unit) in units {
        if s < limit {
            let x = s * scale;
            return if unit == "µs" {
                format!("{x:.0} {unit}")
            } else {
                format!("{x:.1} {unit}")
            };
        }
    }
    if s < 7200.0 {
        format!("{:.1} min", s * (1.0 / 60.0))
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// `x` with 6 significant digits and no trailing zeros, in exponent form below 1e-4 or from
/// 1e6 on: `0.15`, `1e-07`, `1e+06` (C's and Python's `%g`).
pub fn general(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let sci = format!("{x:.5e}"); // rounded to 6 digits first: its exponent decides the form
    let (mantissa, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (5 - exp) as usize;
        trim(&format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected texts are Python's formatting of the same values (`f"{x:,.2f}"`, `f"{x:g}"`).
    #[test]
    fn grouped_matches_python() {
        assert_eq!(grouped(1234567.0, 0), "1,234,567");
        assert_eq!(grouped(999.0, 0), "999");
        assert_eq!(grouped(1000.0, 0), "1,000");
        assert_eq!(grouped(4.588235294117647, 2), "4.59");
        assert_eq!(grouped(12345.25, 1), "12,345.2");
        assert_eq!(grouped(-1234.5, 2), "-1,234.50");
        assert_eq!(grouped(30.5, 0), "30");
    }

    #[test]
    fn bytes_and_seconds_pick_the_unit() {
        assert_eq!(bytes(517.0), "517 B");
        assert_eq!(bytes(1023.0), "1023 B");
        assert_eq!(bytes(24704.0), "24.1 KiB");
        assert_eq!(bytes(4e6), "3.8 MiB");
        assert_eq!(bytes(3.0 * (1u64 << 30) as f64), "3.0 GiB");
        assert_eq!(bytes(2048.0 * (1u64 << 40) as f64), "2048.0 TiB");
        assert_eq!(seconds(2.153e-06), "2 µs");
        assert_eq!(seconds(0.0092), "9.2 ms");
        assert_eq!(seconds(0.3531), "353.1 ms");
        assert_eq!(seconds(1.5), "1.5 s");
        assert_eq!(seconds(180.0), "3.0 min");
        assert_eq!(seconds(9000.0), "2.5 h");
    }

    #[test]
    fn general_matches_percent_g() {
        let cases = [
            (0.15, "0.15"),
            (1e-4, "0.0001"),
            (1e-7, "1e-07"),
            (0.25, "0.25"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1e6, "1e+06"),
            (0.000123456789, "0.000123457"),
            (99999.95, "99999.9"), // rounds half to even on the exact binary value
            (999999.5, "1e+06"),
            (2.0, "2"),
            (-0.5, "-0.5"),
            (0.0, "0"),
        ];
        for (x, want) in cases {
            assert_eq!(general(x), want, "{x}");
        }
    }
}
