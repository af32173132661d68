//! instant-embedding: local node embeddings (InstantEmbedding, Postăvaru et al. 2020) from a
//! memory-mapped CSR graph file.
//!
//! The kernel (every module but `python`: see CONTRIBUTING.md for what each does) knows nothing
//! about Python; `python` (behind the `python` cargo feature) is the PyO3 binding layer.

pub mod cli;
pub mod embed;
pub mod error;
pub mod graph;
pub mod hashing;
pub mod human;
pub mod io;
pub mod live;
pub mod output;
pub mod parallel;
pub mod progress;

#[cfg(feature = "python")]
mod python;

pub use embed::config::EmbeddingConfig;
pub use error::{Error, Result};
pub use graph::csr::Graph;
