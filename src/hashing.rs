//! Portable signed feature hashing (frozen public contract, see docs/SPEC.md).
//!
//! Every function here is a pure function of fixed-width integers, so embeddings are identical
//! across machines, versions and thread counts. Golden values are pinned in the tests below and
//! in `tests/kernel/test_core_hashing.py`.

/// SplitMix64 finaliser (Steele, Lea, Flood 2014), all arithmetic mod 2^64.
#[inline]
pub const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a 64-bit hash of bytes; the hash key of a string node id (its UTF-8 bytes).
#[inline]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Hash key of an integer node id: its two's-complement bits.
#[inline]
pub const fn int_key(id: i64) -> u64 {
    id as u64
}

/// The (dimension, sign) pair one node's PPR mass is projected to.
///
/// Built once per (seed, dim) so the per-entry cost is one `splitmix64`.
#[derive(Clone, Copy, Debug)]
pub struct SignedHasher {
    seed_mix: u64,
    dim: u64,
}

impl SignedHasher {
    pub fn new(seed: u64, dim: usize) -> Self {
        SignedHasher {
            seed_mix: splitmix64(seed),
            dim: dim as u64,
        }
    }

    #[inline]
    pub fn hash(&self, key: u64) -> u64 {
        splitmix64(key ^ self.seed_mix)
    }

    /// `(dim(j), sign(j))` for the node whose hash key is `key`.
    #[inline]
    pub fn bucket(&self, key: u64) -> (usize, f64) {
        let (dim, negative) = self.bucket_bits(key);
        (dim, if negative { -1.0 } else { 1.0 })
    }

    /// `(dim(j), sign(j) < 0)`: the same bucket, its sign as a flag (branch-free callers).
    #[inline]
    pub fn bucket_bits(&self, key: u64) -> (usize, bool) {
        let h = self.hash(key);
        // Lemire's multiply-shift range reduction of the high 32 bits: unbiased enough and
        // division-free.
        let dim = (((h >> 32) * self.dim) >> 32) as usize;
        (dim, h & 1 == 1)
    }
}

/// A hasher for keys the library computes itself (node indices, page numbers), not for
/// user-chosen keys: one multiply-rotate per word, where SipHash costs several times more.
#[derive(Default)]
pub struct IndexHasher(u64);

impl IndexHasher {
    #[inline]
    fn mix(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(26) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl std::hash::Hasher for IndexHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.mix(u64::from(b));
        }
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.mix(u64::from(n));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(key: u64, seed: u64, d: usize) -> (usize, i32) {
        let (dim, s) = SignedHasher::new(seed, d).bucket(key);
        (dim, s as i32)
    }

    #[test]
    fn golden_values() {
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(ds(0, 0, 512), (334, -1));
        assert_eq!(ds(1, 0, 512), (17, 1));
        assert_eq!(ds(2, 0, 512), (431, -1));
        assert_eq!(ds(12345, 0, 512), (244, -1));
        assert_eq!(ds(0, 1, 512), (188, 1));
        assert_eq!(ds(7, 42, 128), (11, 1));
        assert_eq!(ds(int_key(-1), 0, 512), (91, 1));
        assert_eq!(ds((1u64 << 40) + 3, 7, 2048), (1641, 1));
        assert_eq!(fnv1a64(b"alice"), 0x508b_2abb_65a0_3907);
        assert_eq!(ds(fnv1a64(b"alice"), 0, 512), (26, -1));
    }

    #[test]
    fn bucket_in_range() {
        for d in [1usize, 2, 3, 7, 128, 1000] {
            let h = SignedHasher::new(9, d);
            for k in 0..10_000u64 {
                assert!(h.bucket(k).0 < d);
            }
        }
    }
}
