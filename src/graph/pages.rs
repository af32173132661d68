//! Read-ahead bookkeeping: the pages of a mapping already hinted during one query.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// Pages of a mapping hinted during one query (see `Graph::prefetch_row`): page numbers,
/// hashed by one multiplication (SipHash cost more than the hints it saved).
pub type PageSet = HashSet<usize, BuildHasherDefault<PageHasher>>;

/// The hasher of [`PageSet`].
#[derive(Default)]
pub struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
