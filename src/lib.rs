//! instant-embedding: local node embeddings (InstantEmbedding, Postăvaru et al. 2020) from a
//! memory-mapped CSR graph file.
//!
//! The kernel (every module but `python`: see CONTRIBUTING.md for what each does) knows nothing
//! about Python; `python` (behind the `python` cargo feature) is the PyO3 binding layer.

pub mod build;
pub mod compress;
pub mod config;
pub mod csr;
pub mod embed;
pub mod error;
pub mod external;
pub mod format;
pub mod hashing;
pub mod json;
pub mod live;
pub mod livelog;
pub mod ppr;
pub mod reorder;
pub mod smooth;
pub mod text;
pub mod webgraph;

#[cfg(feature = "python")]
mod python;

pub use config::EmbeddingConfig;
pub use csr::Graph;
pub use error::{Error, Result};
