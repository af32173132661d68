//! instant-embedding: local node embeddings (InstantEmbedding, Postăvaru et al. 2020) from a
//! memory-mapped CSR graph file.
//!
//! The kernel (every module but `python`: see CONTRIBUTING.md for what each does) knows nothing
//! about Python; `python` (behind the `python` cargo feature) is the PyO3 binding layer.

pub mod embed;
pub mod error;
pub mod graph;
pub mod hashing;
pub mod io;
pub mod live;
pub mod parallel;

// The flat paths of each module, kept as aliases while code moves into the wings above.
pub use embed::{compress, config, ppr, smooth};
pub use graph::{build, csr, external, format, reorder, strength_code};
pub use io::{adjlist, graphml, json, mtx, pajek, sniff, source, text, webgraph};
pub use live::log as livelog;

#[cfg(feature = "python")]
mod python;

pub use config::EmbeddingConfig;
pub use csr::Graph;
pub use error::{Error, Result};
