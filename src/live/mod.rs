//! Live graphs: the change log beside a graph file, its readers, the writer and compaction
//! (docs/LIVE.md).

pub mod log;
pub mod store;

pub use store::*;
