//! Hostile parameters on valid graphs: any `alpha` in [0.05, 1), any positive `eps` down to
//! the smallest normal float, both variants, any seed node and a small `max_touched`. The push
//! must terminate, touch each node at most once, keep `p` non-negative with mass at most 1,
//! and give the same answer from a fresh and from a reused workspace.
//!
//! (`alpha` is kept >= 0.05: below that the push is correct but its running time grows like
//! 1/alpha, see docs/RELIABILITY.md, and the fuzzer would only report slow inputs.)
#![no_main]

use arbitrary::Arbitrary;
use ie_fuzz::{base_graphs, from_bytes};
use instant_embedding::embed::{embed_one, EmbedConfig, Value};
use instant_embedding::ppr::{push, PprConfig, Variant, Workspace};
use instant_embedding::Error;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    base: u8,
    alpha: u32,
    /// Raw bits of eps (made positive and finite below).
    eps_bits: u64,
    lazy: bool,
    seeds: Vec<u16>,
    max_touched: u16,
    dim: u16,
    value_p: bool,
}

fuzz_target!(|inp: Input| {
    let bases = base_graphs();
    let g = from_bytes(&bases[inp.base as usize % bases.len()]).expect("valid base");
    let n = g.num_nodes();
    if n == 0 {
        return;
    }
    let alpha = 0.05 + 0.95 * (f64::from(inp.alpha) / (f64::from(u32::MAX) + 1.0));
    // Any positive normal eps (subnormal ones are refused by validate(): they made the push
    // loop forever, found by this target).
    let mut eps = f64::from_bits(inp.eps_bits & !(1 << 63));
    if !eps.is_normal() {
        eps = f64::MIN_POSITIVE;
    }
    let cfg = PprConfig {
        alpha,
        eps,
        variant: if inp.lazy {
            Variant::Lazy
        } else {
            Variant::Standard
        },
        max_touched: 1 + inp.max_touched as usize % (2 * n),
    };
    cfg.validate().expect("in-domain config");
    let mut reused = Workspace::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &s in inp.seeds.iter().take(4) {
        let seed = u32::from(s) % n as u32;
        let r = push(&g, seed, &cfg, &mut reused);
        let mut fresh = Workspace::new();
        let r2 = push(&g, seed, &cfg, &mut fresh);
        match (&r, &r2) {
            (Ok(()), Ok(())) => {}
            (Err(Error::BudgetExceeded(_)), Err(Error::BudgetExceeded(_))) => {
                assert!(cfg.max_touched < n, "budget error with max_touched >= n");
                continue;
            }
            _ => panic!("push failed on a valid graph: {r:?} / {r2:?}"),
        }
        assert!(reused.touched() <= n && reused.touched() <= cfg.max_touched + n);
        reused.support(&mut a);
        fresh.support(&mut b);
        assert_eq!(a, b, "reused and fresh workspaces disagree");
        assert!(a.windows(2).all(|w| w[0].0 < w[1].0), "node listed twice");
        assert!(
            a.iter().all(|e| e.1 > 0.0 && e.1.is_finite()),
            "bad p {a:?}"
        );
        assert!(
            a.iter().map(|e| e.1).sum::<f64>() <= 1.0 + 1e-9,
            "mass above 1"
        );
        let ecfg = EmbedConfig {
            dim: 1 + inp.dim as usize % 64,
            seed: inp.eps_bits,
            ppr: cfg,
            value: if inp.value_p { Value::P } else { Value::PPlusR },
        };
        let mut out = vec![0f32; ecfg.dim];
        embed_one(&g, seed, &ecfg, &mut out).expect("embed on a valid graph");
        assert!(out.iter().all(|x| x.is_finite()));
    }
});
