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

/// When and what to write of the status line on a stream: redrawn in place (`\r`) at most
/// every [`REDRAW_SECONDS`](Self::REDRAW_SECONDS) on a terminal, written as a new line every
/// [`LINE_SECONDS`](Self::LINE_SECONDS) on any other stream (log files stay short), and once
/// more when the work ends unless a log already shows that line. Times are seconds on any
/// clock that only moves forward.
#[derive(Clone, Debug)]
pub struct StatusLine {
    desc: String,
    unit: String,
    in_place: bool,
    start: f64,
    last: f64,
    /// Characters of the line a terminal shows (a shorter one blanks the rest).
    width: usize,
    written: String,
}

impl StatusLine {
    pub const REDRAW_SECONDS: f64 = 0.2;
    pub const LINE_SECONDS: f64 = 10.0;

    pub fn new(desc: &str, unit: &str, in_place: bool, now: f64) -> StatusLine {
        StatusLine {
            desc: desc.into(),
            unit: unit.into(),
            in_place,
            start: now,
            last: now,
            width: 0,
            written: String::new(),
        }
    }

    /// The text to write after `done` of `total` units (`total` 0: unknown) at `now`, or
    /// None while the last write is more recent than the interval.
    pub fn update(&mut self, done: u64, total: u64, now: f64) -> Option<String> {
        let interval = if self.in_place {
            Self::REDRAW_SECONDS
        } else {
            Self::LINE_SECONDS
        };
        if now - self.last < interval {
            return None;
        }
        self.last = now;
        Some(self.render(done, total, now, false))
    }

    /// The text to write when the work ends, or None where the stream already shows it.
    pub fn finish(&mut self, done: u64, total: u64, now: f64) -> Option<String> {
        let line = status_line(&self.desc, &self.unit, done, total, now - self.start, true);
        if !self.in_place && line == self.written {
            return None;
        }
        Some(self.render(done, total, now, true))
    }

    fn render(&mut self, done: u64, total: u64, now: f64, last: bool) -> String {
        let line = status_line(&self.desc, &self.unit, done, total, now - self.start, last);
        let text = if self.in_place {
            let width = line.chars().count();
            let pad = " ".repeat(self.width.saturating_sub(width));
            self.width = width;
            format!("\r{line}{pad}{}", if last { "\n" } else { "" })
        } else {
            format!("{line}\n")
        };
        self.written = line;
        text
    }
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

    #[test]
    fn a_terminal_is_redrawn_in_place_and_a_log_gets_lines() {
        let mut t = StatusLine::new("embedding", "node", true, 100.0);
        let first = t.update(100, 1000, 101.0).unwrap();
        assert_eq!(
            first,
            "\rembedding:  10% 100/1,000 node, 100 node/s, ETA 0:09"
        );
        assert_eq!(t.update(200, 1000, 101.1), None); // under the redraw interval
        let last = t.finish(1000, 0, 104.0).unwrap();
        // unknown total: shorter than the line before, whose rest is blanked
        let line = "embedding: 1,000 node, 250 node/s, done in 0:04";
        assert_eq!(
            last,
            format!("\r{line}{}\n", " ".repeat(first.len() - 1 - line.len()))
        );
        let mut log = StatusLine::new("rows", "row", false, 0.0);
        assert_eq!(log.update(5, 0, 9.9), None);
        assert_eq!(log.update(10, 0, 10.0).unwrap(), "rows: 10 row, 1 row/s\n");
        assert_eq!(
            log.finish(10, 0, 10.0).unwrap(),
            "rows: 10 row, 1 row/s, done in 0:10\n"
        );
        assert_eq!(log.finish(10, 0, 10.0), None); // the log shows it already
    }
}
