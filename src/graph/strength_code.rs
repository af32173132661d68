//! One-byte codes of a node's `max(strength, 1)` (its push threshold divided by eps), stored per
//! arc in the `nbr_codes` section (docs/FORMAT.md), so that a deposit can decide the threshold
//! test from the pushing row without reading the neighbour's `indptr` entries or strength:
//! the page a cold query would otherwise fault in for every touched neighbour.
//!
//! A code names a closed interval `[lo, hi]` of exact f64 values holding `max(strength, 1)`.
//! Rounding is monotone, so `eps * lo <= eps * max(strength, 1) <= eps * hi` holds in floating
//! point too: a residual at or below `eps * lo` is below the threshold, one above `eps * hi`
//! above it, whatever the exact strength. Only a residual between the two needs the exact
//! value (see `ppr.rs`), which keeps the push's decisions, and its results, bit-identical.
//!
//! Unweighted graphs (`max(degree, 1)`, an integer): degrees below 128 have their own code (the
//! degree itself, exact), larger ones 4 codes per power of two (a 2-bit mantissa; intervals at
//! most 25 % wide), up to `2^39`. Weighted graphs: 8 codes per power of two of
//! `max(strength, 1)` (the exponent and the top 3 bits of the f64 mantissa; intervals 12.5 %
//! wide at most) up to `2^32`; the last code is unbounded above.

/// Unweighted: degrees below `2^EXACT_BITS` are coded exactly.
const EXACT_BITS: u32 = 7;
/// Unweighted: mantissa bits of the codes above the exact ones.
const MANT_BITS: u32 = 2;
/// Weighted: mantissa bits (the code is `exponent * 2^W_MANT_BITS + top mantissa bits`).
const W_MANT_BITS: u32 = 3;

/// The code of an unweighted node of degree `deg`.
#[inline]
pub fn code_of_degree(deg: u64) -> u8 {
    let exact = 1u64 << EXACT_BITS;
    if deg < exact {
        return deg as u8;
    }
    let e = 63 - deg.leading_zeros(); // >= EXACT_BITS
    let top = (deg >> (e - MANT_BITS)) & ((1 << MANT_BITS) - 1);
    let c = exact + u64::from(e - EXACT_BITS) * (1 << MANT_BITS) + top;
    c.min(255) as u8
}

/// The code of a weighted node of strength `strength` (finite, `>= 0`).
#[inline]
pub fn code_of_strength(strength: f64) -> u8 {
    let x = strength.max(1.0);
    if !x.is_finite() {
        return 255;
    }
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) - 1023; // x >= 1
    let top = (bits >> (52 - W_MANT_BITS)) & ((1 << W_MANT_BITS) - 1);
    (e * (1 << W_MANT_BITS) + top).min(255) as u8
}

/// The code of a node whose strength (the degree on unweighted graphs) is `strength`.
#[inline]
pub fn code_of(weighted: bool, strength: f64) -> u8 {
    if weighted {
        code_of_strength(strength)
    } else {
        code_of_degree(strength as u64)
    }
}

/// `[lo, hi]` of every code: bounds on `max(strength, 1)`.
pub struct CodeBounds(pub [(f64, f64); 256]);

fn unweighted_bounds() -> CodeBounds {
    let mut t = [(0.0, 0.0); 256];
    let exact = 1u64 << EXACT_BITS;
    for (c, slot) in t.iter_mut().enumerate() {
        let c = c as u64;
        *slot = if c < exact {
            let x = c.max(1) as f64;
            (x, x)
        } else {
            let j = c - exact;
            let e = EXACT_BITS as u64 + (j >> MANT_BITS);
            let top = j & ((1 << MANT_BITS) - 1);
            let step = 1u64 << (e - MANT_BITS as u64);
            let lo = ((1 << MANT_BITS) + top) * step;
            // Exact in f64: below 2^40.
            (lo as f64, (lo + step - 1) as f64)
        };
    }
    t[255].1 = f64::INFINITY;
    CodeBounds(t)
}

fn weighted_bounds() -> CodeBounds {
    let mut t = [(0.0, 0.0); 256];
    let lo_of = |c: u64| f64::from_bits(((c >> W_MANT_BITS) + 1023) << 52 | (c & 7) << 49);
    for (c, slot) in t.iter_mut().enumerate() {
        let c = c as u64;
        // The next code's lower end bounds this one from above (it is not in this code, but a
        // bound need not be tight).
        *slot = (lo_of(c), lo_of(c + 1));
    }
    t[255].1 = f64::INFINITY;
    CodeBounds(t)
}

/// The bounds table of a graph's codes.
pub fn bounds(weighted: bool) -> &'static CodeBounds {
    static UNWEIGHTED: std::sync::OnceLock<CodeBounds> = std::sync::OnceLock::new();
    static WEIGHTED: std::sync::OnceLock<CodeBounds> = std::sync::OnceLock::new();
    if weighted {
        WEIGHTED.get_or_init(weighted_bounds)
    } else {
        UNWEIGHTED.get_or_init(unweighted_bounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(weighted: bool, strength: f64) {
        let (lo, hi) = bounds(weighted).0[code_of(weighted, strength) as usize];
        let x = strength.max(1.0);
        assert!(lo <= x && x <= hi, "{strength}: [{lo}, {hi}]");
        assert!(lo >= 1.0);
    }

    #[test]
    fn every_code_bounds_its_values() {
        for d in 0..5000u64 {
            holds(false, d as f64);
        }
        let mut d = 1u64;
        while d < (1 << 40) {
            for k in [d - 1, d, d + 1, d + d / 3, 2 * d - 1] {
                holds(false, k as f64);
            }
            d *= 2;
        }
        holds(false, u32::MAX as f64);
        for &s in &[
            0.0, 0.3, 1.0, 1.0000001, 1.124, 1.125, 1.126, 2.0, 7.9, 1e3, 4.1e9, 1e300,
        ] {
            holds(true, s);
        }
        let mut x = 1.0f64;
        while x < 1e12 {
            for k in [x, x.next_up(), x.next_down().max(0.0), x * 1.0625] {
                holds(true, k);
            }
            x *= 1.37;
        }
        // Small degrees are exact: the push never needs the degree of such a node.
        for d in 0..128u64 {
            let (lo, hi) = bounds(false).0[code_of_degree(d) as usize];
            assert_eq!((lo, hi), ((d.max(1)) as f64, (d.max(1)) as f64));
        }
    }

    #[test]
    fn codes_are_monotone() {
        let mut prev = 0u8;
        for d in 0..100_000u64 {
            let c = code_of_degree(d);
            assert!(c >= prev);
            prev = c;
        }
        let t = &bounds(false).0;
        for c in 1..256 {
            assert!(t[c].0 >= t[c - 1].0);
            assert!(t[c].0 > t[c - 1].1 || c < 2);
        }
    }
}
