//! Read-ahead: asking the memory for a cache line, and the pages of a mapping already hinted
//! during one query.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use crate::hashing::IndexHasher;

/// Pages of a mapping hinted during one query (see `Graph::prefetch_row`): page numbers,
/// hashed by one multiplication (SipHash cost more than the hints it saved).
pub type PageSet = HashSet<usize, BuildHasherDefault<IndexHasher>>;

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
