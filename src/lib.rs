//! instant-embedding: local node embeddings (InstantEmbedding, Postăvaru et al. 2020) from a
//! memory-mapped CSR graph file.
//!
//! Every module but `python` is the kernel and knows nothing about Python:
//! - the graph file: `format` (the on-disk layout, docs/FORMAT.md) and `csr` (read access);
//! - writing graph files: `build` (from in-memory edges), `external` (out-of-core, bounded
//!   memory), `text` (text edge lists, through `external`) and `reorder` (renumbering);
//! - computing: `ppr` (local push), `hashing` (signed feature hashing), `embed` (both together,
//!   in parallel over nodes) and `smooth` (neighbour smoothing of whole-graph embeddings);
//! - `error`, the one error type.
//!
//! `python` (behind the `python` cargo feature) is the PyO3 binding layer.

pub mod build;
pub mod csr;
pub mod embed;
pub mod error;
pub mod external;
pub mod format;
pub mod hashing;
pub mod ppr;
pub mod reorder;
pub mod smooth;
pub mod text;

#[cfg(feature = "python")]
mod python;

pub use csr::Graph;
pub use error::{Error, Result};
