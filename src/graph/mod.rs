//! The graph file: its format, the memory-mapped reader, and everything that writes one (the
//! in-memory builder, the out-of-core builder, renumbering).

pub mod build;
pub mod csr;
pub mod external;
pub mod format;
pub mod reorder;
pub mod strength_code;
