//! The graph file: its format, the memory-mapped reader (with the change log's committed rows
//! beneath it), and everything that writes one (the in-memory builder, the out-of-core
//! builder, renumbering, replacing a file whose path has a change log).

pub mod build;
pub mod chunk_writer;
pub mod csr;
pub mod external;
pub mod format;
pub mod index_file;
pub mod log_format;
pub mod overlay;
pub mod pages;
pub mod reorder;
pub mod replace;
pub mod stats;
pub mod strength_code;
