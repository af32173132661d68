//! The embedding's settings, defined once: their defaults, their choices and their validation.
//!
//! `EmbeddingConfig` is the one object every layer passes whole: the kernel (`embed_nodes`,
//! `push`), the Python binding (a frozen `EmbeddingConfig` class built from [`SETTINGS`]), the
//! Python model that wraps it, the distributed adapters (which pickle it to their workers) and
//! the command line (whose flags, choices and defaults come from [`SETTINGS`]).
//!
//! Adding a setting: a field (here or in `PprConfig`), its default in
//! [`EmbeddingConfig::DEFAULT`], its check in [`EmbeddingConfig::validate`], one [`SETTINGS`]
//! entry with its `get`/`set` arms; then the kernel code that uses it, a test, and the docs.
//! Nothing else names the settings one by one.

use crate::error::{Error, Result};

/// Everything that determines a node's embedding (docs/SPEC.md §3), besides the graph.
///
/// Threads are not part of it: they never change a result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmbeddingConfig {
    /// Embedding dimension.
    pub dim: usize,
    /// Seed of the signed hash.
    pub seed: u64,
    /// Which per-node mass is projected.
    pub value: Value,
    /// How the projected row is scaled (docs/SPEC.md §2).
    pub normalize: Normalize,
    /// Neighbour smoothing steps applied to the rows (docs/SPEC.md §2b).
    pub smooth: usize,
    /// The push's settings (alpha, eps, variant, max_touched).
    pub ppr: PprConfig,
    /// Compressed output (docs/SPEC.md §2c): rows are hashed into `wide_dim` dimensions, then
    /// mapped to `dim` by a fitted linear map; 0 hashes into `dim` directly.
    pub wide_dim: usize,
    /// Nodes in the sample the linear map is fitted on (at most; all nodes of a smaller graph).
    pub fit_nodes: usize,
}

impl EmbeddingConfig {
    /// The defaults: the only place they are written.
    pub const DEFAULT: EmbeddingConfig = EmbeddingConfig {
        dim: 512,
        seed: 0,
        value: Value::PPlusR,
        normalize: Normalize::LnN,
        smooth: 0,
        ppr: PprConfig {
            alpha: 0.15,
            eps: 1e-4,
            variant: Variant::Standard,
            max_touched: 50_000_000,
        },
        wide_dim: 0,
        fit_nodes: 2000,
    };

    /// Checks every setting against its documented domain (`Error::InvalidParameter`).
    pub fn validate(&self) -> Result<()> {
        if self.dim == 0 || self.dim > MAX_DIM {
            return Err(Error::param(format!(
                "dim must satisfy 1 <= dim <= {MAX_DIM}, got {}",
                self.dim
            )));
        }
        if self.smooth > MAX_SMOOTH {
            return Err(Error::param(format!(
                "smooth must satisfy 0 <= smooth <= {MAX_SMOOTH}, got {}",
                self.smooth
            )));
        }
        if self.wide_dim != 0 && (self.wide_dim <= self.dim || self.wide_dim > MAX_DIM) {
            return Err(Error::param(format!(
                "wide_dim must be 0 (no compression) or satisfy dim < wide_dim <= {MAX_DIM}, \
                 got wide_dim={} with dim={}",
                self.wide_dim, self.dim
            )));
        }
        if self.fit_nodes == 0 || self.fit_nodes > MAX_FIT_NODES {
            return Err(Error::param(format!(
                "fit_nodes must satisfy 1 <= fit_nodes <= {MAX_FIT_NODES}, got {}",
                self.fit_nodes
            )));
        }
        self.ppr.validate()
    }

    /// The same settings without smoothing: the rows that smoothing starts from.
    pub fn unsmoothed(&self) -> EmbeddingConfig {
        EmbeddingConfig { smooth: 0, ..*self }
    }

    /// The value of the setting `name`, or None if there is no such setting.
    pub fn get(&self, name: &str) -> Option<SettingValue> {
        use SettingValue::{Choice, Float, Int};
        Some(match name {
            "dim" => Int(self.dim as u64),
            "alpha" => Float(self.ppr.alpha),
            "eps" => Float(self.ppr.eps),
            "seed" => Int(self.seed),
            "variant" => Choice(self.ppr.variant.name()),
            "value" => Choice(self.value.name()),
            "normalize" => Choice(self.normalize.name()),
            "smooth" => Int(self.smooth as u64),
            "max_touched" => Int(self.ppr.max_touched as u64),
            "wide_dim" => Int(self.wide_dim as u64),
            "fit_nodes" => Int(self.fit_nodes as u64),
            _ => return None,
        })
    }

    /// Sets the setting `name` (whose kind `value` must match, see [`SETTINGS`]). The config
    /// is checked as a whole by [`validate`](Self::validate), not here.
    pub fn set(&mut self, name: &str, value: SettingValue) -> Result<()> {
        use SettingValue::{Choice, Float, Int};
        let to_usize = |v: u64| {
            usize::try_from(v).map_err(|_| Error::param(format!("{name} is too large: {v}")))
        };
        match (name, value) {
            ("dim", Int(v)) => self.dim = to_usize(v)?,
            ("alpha", Float(v)) => self.ppr.alpha = v,
            ("eps", Float(v)) => self.ppr.eps = v,
            ("seed", Int(v)) => self.seed = v,
            ("variant", Choice(v)) => self.ppr.variant = Variant::parse(v)?,
            ("value", Choice(v)) => self.value = Value::parse(v)?,
            ("normalize", Choice(v)) => self.normalize = Normalize::parse(v)?,
            ("smooth", Int(v)) => self.smooth = to_usize(v)?,
            ("max_touched", Int(v)) => self.ppr.max_touched = to_usize(v)?,
            ("wide_dim", Int(v)) => self.wide_dim = to_usize(v)?,
            ("fit_nodes", Int(v)) => self.fit_nodes = to_usize(v)?,
            _ => return Err(Error::param(format!("no setting {name:?} of this kind"))),
        }
        Ok(())
    }
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        EmbeddingConfig::DEFAULT
    }
}

/// One setting's value, as it crosses to other languages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SettingValue {
    Int(u64),
    Float(f64),
    Choice(&'static str),
}

impl SettingValue {
    /// The value of setting `s` written as [`Display`](std::fmt::Display) writes it (floats
    /// in Rust's shortest round-trip form), or None.
    pub fn parse(s: &Setting, text: &str) -> Option<SettingValue> {
        match s.kind {
            SettingKind::Int { .. } => text.parse().ok().map(SettingValue::Int),
            SettingKind::Float => text.parse().ok().map(SettingValue::Float),
            SettingKind::Choice(names) => names
                .iter()
                .find(|&&n| n == text)
                .map(|&n| SettingValue::Choice(n)),
        }
    }
}

impl std::fmt::Display for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Int(v) => write!(f, "{v}"),
            SettingValue::Float(v) => write!(f, "{v}"),
            SettingValue::Choice(c) => write!(f, "{c}"),
        }
    }
}

/// What values a setting takes (the binding converts and range-checks by this).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SettingKind {
    /// An integer in `min..=max` (the representable range; `validate` checks the domain).
    Int { min: u64, max: u64 },
    /// A float (`validate` checks the domain).
    Float,
    /// One of these names.
    Choice(&'static [&'static str]),
}

/// A setting's name, kind, one-line help (the command line's `--help`) and full user
/// documentation (the `Parameters` of the Python model's docstring).
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub name: &'static str,
    pub kind: SettingKind,
    pub help: &'static str,
    /// Sentences; `code` in backticks (Python writes it as ``code``).
    pub doc: &'static str,
}

const USIZE_MAX: u64 = if usize::BITS >= 64 {
    u64::MAX
} else {
    usize::MAX as u64
};

/// Every setting, in the order users see them (constructor, `repr`, command line).
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "dim",
        kind: SettingKind::Int {
            min: 1,
            max: USIZE_MAX,
        },
        help: "embedding dimension",
        doc: "Embedding dimension `d`.",
    },
    Setting {
        name: "alpha",
        kind: SettingKind::Float,
        help: "PPR teleport probability, 1e-6 <= alpha < 1",
        doc: "Teleport (restart) probability of the PPR, `1e-6 <= alpha < 1`.",
    },
    Setting {
        name: "eps",
        kind: SettingKind::Float,
        help: "PPR precision (push threshold per unit of degree); smaller is slower and more \
               accurate",
        doc: "PPR precision: the push threshold per unit of degree, a normal float \
              (`>= 2.2e-308`). Smaller is more accurate and slower (on BlogCatalog, `1e-5` gives \
              +1 Micro-F1 for about 5x the time per node, `3e-4` 2.4 points less for 2.3x less \
              time). On undirected graphs the PPR estimate satisfies `|pi_j - p_j| <= eps * \
              deg(j)` for every node `j`.",
    },
    Setting {
        name: "seed",
        kind: SettingKind::Int {
            min: 0,
            max: u64::MAX,
        },
        help: "hash seed; different seeds give independent projections",
        doc: "Hash seed, `0 <= seed < 2**64`; different seeds give independent projections.",
    },
    Setting {
        name: "variant",
        kind: SettingKind::Choice(Variant::NAMES),
        help: "PPR push variant: the paper's transition matrix, or the lazy walk of its \
               appendix",
        doc: "PPR push variant: `\"standard\"` uses the paper's transition matrix (eq. 1); \
              `\"lazy\"` the appendix's Algorithm 3, which keeps half of the spread residual at \
              the pushed node.",
    },
    Setting {
        name: "value",
        kind: SettingKind::Choice(Value::NAMES),
        help: "projected PPR value: estimate plus leftover residual, the estimate alone (the \
               paper's Algorithm 2 literally), or ln(1 + (p + r/2) n) over every touched node \
               (better on dense social graphs, see docs/QUALITY.md)",
        doc: "The per-node mass projected. `\"p\"` is the paper's Algorithm 2 taken literally; \
              `\"p+r\"` adds the residual the push left behind, at no extra cost, which reproduces \
              the paper's published quality from `eps = 1e-4` (`\"p\"` needs `eps = 1e-6`, about \
              200x the work, on BlogCatalog). `\"log1p\"` projects `ln(1 + (p + r/2) n)` over \
              every touched node instead of `max(ln((p + r) n), 0)`: +0.7 / +0.9 Micro-F1 on \
              BlogCatalog / PPI and +0.2 on PubMed, -0.4 on Cora, with about 3x more projected \
              terms (slower projection). See `docs/QUALITY.md`.",
    },
    Setting {
        name: "normalize",
        kind: SettingKind::Choice(Normalize::NAMES),
        help: "scale of the output: ln_n divides every coordinate by ln(n) (n = node count; \
               each term becomes log_n(x n)), so coordinates keep one scale on any graph, as \
               a classifier on raw features with default regularisation needs; none keeps \
               the plain sums; l2 scales every row to unit length (cosine-ready; recommended \
               with wide_dim, see docs/GUIDE.md)",
        doc: "`\"ln_n\"` divides every coordinate by `ln(max(n, 3))` (`n`: the graph's node \
              count), so each term `ln(x_j n)` becomes `log_n(x_j n)` and coordinates no longer \
              grow with the graph: a classifier on raw coordinates keeps its default \
              regularisation (`LogisticRegression(C=1)` on BlogCatalog: 31.2 Micro-F1 instead of \
              27.1). A standardising model (`StandardScaler`), cosine similarity and nearest \
              neighbours see no difference. `\"none\"` keeps the plain sums. Smoothing averages \
              the divided rows. `\"l2\"` keeps the plain sums, then scales every output row \
              (after the map and smoothing) to unit Euclidean length, a zero row staying zero: \
              vectors ready for cosine similarity and vector stores, and with `wide_dim` the \
              best node classification at `dim` 64-128 (docs/BENCHMARKS.md).",
    },
    Setting {
        name: "smooth",
        kind: SettingKind::Int {
            min: 0,
            max: USIZE_MAX,
        },
        help: "neighbour smoothing steps: each replaces every row by the mean of its \
               neighbours' rows (2 with value log1p is the best for node classification in \
               docs/QUALITY.md); embeds the K-hop neighbourhood of the nodes",
        doc: "Neighbour smoothing steps, `0 <= smooth <= 8`: each step replaces every row by the \
              (arc-weighted) mean of its out-neighbours' rows, `E <- D^-1 A E` (a node without \
              arcs keeps its row). `smooth=2` with `value=\"log1p\"` gives the best node \
              classification on BlogCatalog and PPI, above ProNE and FastRP (`docs/QUALITY.md`; \
              use a weaker regularisation, e.g. `C=0.01`). A smoothed row of `v` needs the \
              embeddings of every node within `smooth` hops of `v`: cheap for all nodes (one \
              sparse product per step), but embedding a few nodes embeds their whole \
              `smooth`-hop neighbourhood first and holds its rows in memory (4 x dim bytes per \
              node of it). Rows stay bit-identical for any thread count or batch split.",
    },
    Setting {
        name: "max_touched",
        kind: SettingKind::Int {
            min: 1,
            max: (1 << 63) - 1,
        },
        help: "per-node cap on touched nodes (a larger push is refused)",
        doc: "Per-query cap on touched nodes: a push that touches more raises \
              `BudgetExceededError` (bounds memory on huge graphs).",
    },
    Setting {
        name: "wide_dim",
        kind: SettingKind::Int {
            min: 0,
            max: USIZE_MAX,
        },
        help: "compressed output: hash into wide_dim dimensions, then apply a linear map to \
               dim fitted on a sample of the graph's nodes (0: hash into dim directly; 4096 \
               is recommended for dim <= 128, see docs/GUIDE.md)",
        doc: "Compressed output: `0` hashes straight into `dim`; `wide_dim > dim` hashes into \
              `wide_dim` dimensions, then applies one linear map to `dim` fitted on the graph by \
              `fit` (the top `dim` principal directions, uncentred, of a sample of `fit_nodes` \
              nodes' wide rows with each coordinate weighed by the inverse square root of its \
              typical size; no labels). Recommended for `dim <= 64` on any graph and up to \
              `dim=128` on dense ones: `InstantEmbedding(128, wide_dim=4096)` scores well above \
              the direct hash of the same size on BlogCatalog and PubMed, above FastRP \
              (docs/BENCHMARKS.md), for 0.8-1.4x the default's time per node at `dim=128` (up \
              to 1.8x with `value=\"log1p\"`). With `value=\"log1p\", normalize=\"l2\"` \
              it is within 1 point of ProNE on BlogCatalog at `dim=128`. The \
              map is part of the fitted model: it saves, pickles and travels to Spark, Dask and \
              Ray workers with it, and stays fixed when the graph changes. See docs/GUIDE.md.",
    },
    Setting {
        name: "fit_nodes",
        kind: SettingKind::Int {
            min: 1,
            max: USIZE_MAX,
        },
        help: "nodes in the sample the compressed output's linear map is fitted on",
        doc: "Nodes in the sample the linear map is fitted on (all nodes of a smaller graph), \
              `1 <= fit_nodes <= 65536`; the fit's cost does not grow with the graph.",
    },
];

/// The [`SETTINGS`] entry named `name`.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_documented_once_in_the_table() {
        for s in SETTINGS {
            assert!(!s.help.is_empty() && s.doc.ends_with('.'), "{}", s.name);
            // Backticks pair up: the Python docstring turns each pair into a literal.
            assert_eq!(s.doc.matches('`').count() % 2, 0, "{}", s.name);
        }
    }

    #[test]
    fn every_setting_round_trips_through_get_and_set() {
        let mut changed = EmbeddingConfig::DEFAULT;
        for s in SETTINGS {
            let v = EmbeddingConfig::DEFAULT.get(s.name).expect(s.name);
            // The kind in the table matches the value get() gives.
            match (s.kind, v) {
                (SettingKind::Int { min, max }, SettingValue::Int(x)) => {
                    assert!(min <= x && x <= max, "{}", s.name)
                }
                (SettingKind::Float, SettingValue::Float(_)) => {}
                (SettingKind::Choice(names), SettingValue::Choice(c)) => {
                    assert!(names.contains(&c), "{}", s.name)
                }
                other => panic!("{}: kind and value disagree: {other:?}", s.name),
            }
            let other = match v {
                SettingValue::Int(x) => SettingValue::Int(x + 1),
                SettingValue::Float(x) => SettingValue::Float(x * 0.5),
                SettingValue::Choice(c) => {
                    let SettingKind::Choice(names) = s.kind else {
                        unreachable!()
                    };
                    SettingValue::Choice(names.iter().find(|&&n| n != c).unwrap())
                }
            };
            changed.set(s.name, other).unwrap();
            assert_eq!(changed.get(s.name), Some(other), "{}", s.name);
        }
        // Every field was reached through the table: nothing is left at its default.
        let d = EmbeddingConfig::DEFAULT;
        assert!(changed.dim != d.dim && changed.seed != d.seed && changed.smooth != d.smooth);
        assert!(changed.value != d.value && changed.ppr.variant != d.ppr.variant);
        assert!(changed.normalize != d.normalize);
        assert!(changed.ppr.alpha != d.ppr.alpha && changed.ppr.eps != d.ppr.eps);
        assert!(changed.ppr.max_touched != d.ppr.max_touched);
        assert!(changed.wide_dim != d.wide_dim && changed.fit_nodes != d.fit_nodes);
        assert!(EmbeddingConfig::DEFAULT.get("threads").is_none());
        assert!(changed.set("dim", SettingValue::Float(1.0)).is_err());
    }

    #[test]
    fn defaults_are_valid_and_each_domain_is_checked() {
        EmbeddingConfig::default().validate().unwrap();
        let bad = [
            EmbeddingConfig {
                dim: 0,
                ..Default::default()
            },
            EmbeddingConfig {
                dim: MAX_DIM + 1,
                ..Default::default()
            },
            EmbeddingConfig {
                smooth: MAX_SMOOTH + 1,
                ..Default::default()
            },
            EmbeddingConfig {
                wide_dim: 512,
                ..Default::default()
            },
            EmbeddingConfig {
                fit_nodes: 0,
                ..Default::default()
            },
            EmbeddingConfig {
                ppr: PprConfig {
                    eps: 1e-310,
                    ..PprConfig::default()
                },
                ..Default::default()
            },
        ];
        for cfg in bad {
            assert!(
                matches!(cfg.validate(), Err(Error::InvalidParameter(_))),
                "{cfg:?}"
            );
        }
    }
}

// ---------------------------------------------------------------- the settings' types

/// Largest accepted embedding dimension (keeps `dim` * rows allocations sane).
pub const MAX_DIM: usize = 1 << 20;

/// Which per-node mass is projected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    /// `p + r`: the estimate plus the residual the push left behind (default; see docs/SPEC.md
    /// and docs/QUALITY.md for why).
    PPlusR,
    /// `p`: the approximate PPR estimate alone (the paper's Algorithm 2 as written).
    P,
    /// `p + r/2` over every touched node, transformed by `ln(1 + x n)` instead of
    /// `max(ln(x n), 0)`: better on BlogCatalog, PPI and PubMed, slightly worse on Cora, and
    /// more projected terms (docs/QUALITY.md).
    Log1p,
}

impl Value {
    /// Every value's name, as `parse` takes it.
    pub const NAMES: &'static [&'static str] = &["p+r", "p", "log1p"];

    pub fn name(self) -> &'static str {
        match self {
            Value::PPlusR => "p+r",
            Value::P => "p",
            Value::Log1p => "log1p",
        }
    }

    pub fn parse(s: &str) -> Result<Value> {
        match s {
            "p+r" => Ok(Value::PPlusR),
            "p" => Ok(Value::P),
            "log1p" => Ok(Value::Log1p),
            _ => Err(Error::param(format!(
                "value must be 'p+r', 'p' or 'log1p', got {s:?}"
            ))),
        }
    }
}

/// How the projected row is scaled before its rounding to f32 (docs/SPEC.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalize {
    /// Divide every coordinate by `ln(max(n, 3))` (default): each term `ln(x n)` becomes
    /// `log_n(x n)`, so coordinates no longer grow with the graph's size (an untuned
    /// classifier on raw coordinates then regularises as intended, docs/BENCHMARKS.md).
    LnN,
    /// No scaling: the sum of the terms itself.
    None,
    /// The plain sums (as `None`), then every output row scaled to unit Euclidean length
    /// (after the map and smoothing; a zero row stays zero): cosine-ready vectors.
    L2,
}

impl Normalize {
    /// Every choice's name, as `parse` takes it.
    pub const NAMES: &'static [&'static str] = &["ln_n", "none", "l2"];

    pub fn name(self) -> &'static str {
        match self {
            Normalize::LnN => "ln_n",
            Normalize::None => "none",
            Normalize::L2 => "l2",
        }
    }

    pub fn parse(s: &str) -> Result<Normalize> {
        match s {
            "ln_n" => Ok(Normalize::LnN),
            "none" => Ok(Normalize::None),
            "l2" => Ok(Normalize::L2),
            _ => Err(Error::param(format!(
                "normalize must be 'ln_n', 'none' or 'l2', got {s:?}"
            ))),
        }
    }

    /// What every sum is divided by on a graph of `num_nodes` nodes: `ln(max(n, 3))` (libm
    /// `log`, so `> 1`), or nothing.
    pub fn divisor(self, num_nodes: usize) -> Option<f64> {
        match self {
            Normalize::LnN => Some((num_nodes.max(3) as f64).ln()),
            Normalize::None | Normalize::L2 => None,
        }
    }
}

/// Largest fit sample of a compressed output: keeps the fit bounded on any graph.
pub const MAX_FIT_NODES: usize = 1 << 16;

/// Most smoothing steps accepted (each step widens a row's neighbourhood by one hop).
pub const MAX_SMOOTH: usize = 8;

/// Smallest accepted teleport probability. A push costs O(1 / (alpha * eps)); below this (and
/// certainly once `1 - alpha` rounds to 1.0) one query would run for hours or forever.
pub const MIN_ALPHA: f64 = 1e-6;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Standard transition matrix (paper eq. 1): all of `(1-alpha) r` leaves `w`.
    Standard,
    /// Lazy walk (paper appendix, Algorithm 3): half of `(1-alpha) r` stays at `w`.
    Lazy,
}

impl Variant {
    /// Every variant's name, as `parse` takes it.
    pub const NAMES: &'static [&'static str] = &["standard", "lazy"];

    pub fn parse(s: &str) -> Result<Variant> {
        match s {
            "standard" => Ok(Variant::Standard),
            "lazy" => Ok(Variant::Lazy),
            _ => Err(Error::param(format!(
                "variant must be 'standard' or 'lazy', got {s:?}"
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Variant::Standard => "standard",
            Variant::Lazy => "lazy",
        }
    }
}

/// The push's settings: the part of [`EmbeddingConfig`] that `push` reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PprConfig {
    pub alpha: f64,
    pub eps: f64,
    pub variant: Variant,
    /// Refuse (with `Error::BudgetExceeded`) a query that touches more nodes than this.
    pub max_touched: usize,
}

impl Default for PprConfig {
    fn default() -> Self {
        EmbeddingConfig::DEFAULT.ppr
    }
}

impl PprConfig {
    pub fn validate(&self) -> Result<()> {
        if !(self.alpha.is_finite() && self.alpha >= MIN_ALPHA && self.alpha < 1.0) {
            return Err(Error::param(format!(
                "alpha must satisfy {MIN_ALPHA:e} <= alpha < 1, got {}",
                self.alpha
            )));
        }
        // Normal, not just positive: with a subnormal eps the residuals are subnormal too, where
        // (1 - alpha) * r can round back up to r, and the push would never end.
        if !(self.eps.is_normal() && self.eps > 0.0) {
            return Err(Error::param(format!(
                "eps must be finite and >= {:e} (the smallest normal float), got {}",
                f64::MIN_POSITIVE,
                self.eps
            )));
        }
        if self.max_touched == 0 {
            return Err(Error::param("max_touched must be >= 1"));
        }
        Ok(())
    }
}
