//! Read-ahead: asking the memory for a cache line, and the pages of a mapping that hints have
//! already asked the kernel for.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Bytes per page of the read-ahead bookkeeping (the kernel's base page).
pub(crate) const HINT_PAGE: usize = 4096;

/// The 4 KiB pages of one mapping that read-ahead hints (`madvise(MADV_WILLNEED)`) asked for
/// since the pages were last forgotten: a hint on such a page is skipped. A reader opened with
/// `prefetch` on a file already in the page cache thus makes almost no system calls, where one
/// per hinted page and query cost its warm queries about twice their time. A push that took a
/// major page fault (the page cache no longer holds something it read) forgets every page
/// (`forget`), so a reader under memory pressure hints as if each query were its first.
/// One byte per page, allocated at the first hint: the round that hinted it.
pub(crate) struct HintedPages {
    pages: usize,
    marks: OnceLock<Box<[AtomicU8]>>,
    /// The current round (never 0, the mark of a page never hinted).
    round: AtomicU8,
}

impl HintedPages {
    /// For a mapping of `len` bytes.
    pub(crate) fn new(len: usize) -> HintedPages {
        HintedPages {
            pages: len.div_ceil(HINT_PAGE),
            marks: OnceLock::new(),
            round: AtomicU8::new(1),
        }
    }

    /// Marks the pages of the bytes `[off, off + len)` (`len > 0`) as hinted in this round;
    /// whether any of them was not (the range then needs its hint). Pages past the mapping
    /// count as not hinted.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn mark(&self, off: usize, len: usize) -> bool {
        let (first, last) = (off / HINT_PAGE, (off + len - 1) / HINT_PAGE);
        let marks = self.marks.get_or_init(|| {
            // Zeroed memory from the allocator: the pages of marks never written stay
            // unmapped (a cold query on a large file marks a few of them).
            let zeros = vec![0u8; self.pages].into_boxed_slice();
            // SAFETY: AtomicU8 has the size, alignment and bit validity of u8.
            unsafe { Box::from_raw(Box::into_raw(zeros) as *mut [AtomicU8]) }
        });
        let round = self.round.load(Ordering::Relaxed);
        let mut fresh = false;
        for page in first..=last {
            match marks.get(page) {
                // A relaxed check, then a store: two threads may both hint a page (harmless).
                Some(m) if m.load(Ordering::Relaxed) == round => {}
                Some(m) => {
                    m.store(round, Ordering::Relaxed);
                    fresh = true;
                }
                None => fresh = true,
            }
        }
        fresh
    }

    /// Forgets every page: the next hint on each is sent again. (After 255 rounds a page's
    /// old mark matches again: the page is then not hinted, and if it is no longer cached the
    /// fault that reads it starts a new round.)
    pub(crate) fn forget(&self) {
        if self.marks.get().is_some() {
            let next = self.round.load(Ordering::Relaxed).wrapping_add(1).max(1);
            self.round.store(next, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
impl HintedPages {
    /// How many pages are marked in the current round.
    pub(crate) fn marked(&self) -> usize {
        let round = self.round.load(Ordering::Relaxed);
        self.marks.get().map_or(0, |m| {
            m.iter()
                .filter(|x| x.load(Ordering::Relaxed) == round)
                .count()
        })
    }
}

/// Page faults of the calling thread (of the process outside Linux) that read from disk so
/// far: a push compares the count before and after (see [`HintedPages`]).
#[cfg(unix)]
pub(crate) fn major_faults() -> u64 {
    #[cfg(target_os = "linux")]
    let who = libc::RUSAGE_THREAD;
    #[cfg(not(target_os = "linux"))]
    let who = libc::RUSAGE_SELF;
    // SAFETY: getrusage writes the struct it is given, nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_majflt as u64
}

/// Asks the CPU to bring the cache line at `p` into its caches: a hint, which never faults
/// whatever `p` points to; no effect on other architectures.
#[inline]
pub(crate) fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_hinted_once_per_round() {
        let p = HINT_PAGE;
        let h = HintedPages::new(10 * p + 1); // 11 pages
        assert_eq!(h.marked(), 0);
        assert!(h.mark(2 * p, 3 * p)); // pages 2..=4
        assert!(!h.mark(3 * p + 5, 1) && !h.mark(2 * p + 7, 2 * p));
        // One new page in the range is enough to hint it.
        assert!(h.mark(4 * p, p + 1)); // pages 4 and 5
        assert_eq!(h.marked(), 4);
        // Pages past the mapping are never marked and always hinted.
        assert!(h.mark(10 * p, 3 * p) && h.mark(11 * p, 1));
        assert_eq!(h.marked(), 5);
        h.forget();
        assert_eq!(h.marked(), 0);
        assert!(h.mark(3 * p, p) && !h.mark(3 * p, p));
        // Rounds wrap around without ever reaching 0, the mark of a page never hinted.
        for _ in 0..600 {
            h.forget();
            assert!(h.mark(7 * p, 1), "a forgotten page is hinted again");
        }
    }
}
