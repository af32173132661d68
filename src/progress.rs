//! The text of the progress status line shown where no progress-bar library is installed:
//! `embedding:  42% 4,200/10,000 node, 1,350 node/s, ETA 0:04`.

/// The status line after `done` of `total` units (`total` 0: unknown) in `elapsed` seconds;
/// `last` marks the line written when the work ends.
pub fn status_line(
    desc: &str,
    unit: &str,
    done: u64,
    total: u64,
    elapsed: f64,
    last: bool,
) -> String {
    let elapsed = elapsed.max(1e-9);
    let rate = done as f64 / elapsed;
    let mut line = format!("{desc}: ");
    if total > 0 {
        let pct = 100.0 * done as f64 / total as f64;
        line += &format!(
            "{pct:3.0}% {}/{}",
            amount(done as f64, unit, true),
            amount(total as f64, unit, false)
        );
    } else {
        line += &amount(done as f64, unit, false);
    }
    line += &format!(", {}/s", amount(rate, unit, false));
    if (total > 0 && done >= total) || (last && total == 0) {
        line += &format!(", done in {}", clock_time(elapsed));
    } else if total > 0 && done > 0 {
        line += &format!(", ETA {}", clock_time((total - done) as f64 / rate));
    }
    line
}

/// `4,200 node` (`4,200` when `bare`); bytes in binary units: `1.5 GiB`.
fn amount(x: f64, unit: &str, bare: bool) -> String {
    if unit == "B" && x >= 1024.0 {
        crate::human::bytes(x)
    } else if bare {
        crate::human::grouped(x, 0)
    } else {
        format!("{} {unit}", crate::human::grouped(x, 0))
    }
}

/// `0:04`, `12:09`, `3:02:15`.
fn clock_time(seconds: f64) -> String {
    let s = (seconds + 0.5) as u64;
    let (h, m, s) = (s / 3600, s % 3600 / 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_show_percentage_rate_and_time_left() {
        assert_eq!(
            status_line("embedding", "node", 500, 1000, 2.0, false),
            "embedding:  50% 500/1,000 node, 250 node/s, ETA 0:02"
        );
        assert_eq!(
            status_line("embedding", "node", 7200, 7200, 4.0, true),
            "embedding: 100% 7,200/7,200 node, 1,800 node/s, done in 0:04"
        );
        assert_eq!(
            status_line("converting", "B", 1 << 30, 3 << 30, 2.0, false),
            "converting:  33% 1.0 GiB/3.0 GiB, 512.0 MiB/s, ETA 0:04"
        );
        assert_eq!(
            status_line("rows", "row", 5000, 0, 2.0, true),
            "rows: 5,000 row, 2,500 row/s, done in 0:02"
        );
        assert_eq!(clock_time(7190.0), "1:59:50");
        assert_eq!(
            (clock_time(3.6), clock_time(0.4)),
            ("0:04".into(), "0:00".into())
        );
        assert_eq!(amount(1234567.0, "node", false), "1,234,567 node");
    }
}
