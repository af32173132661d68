//! Live graphs: edges added and removed after conversion, visible to queries at once, without
//! a rebuild (semantics in docs/LIVE.md, file format in docs/FORMAT.md, "Change log").
//!
//! A graph file `GRAPH` may have a change log `GRAPH.live` next to it (see `crate::graph::log_format`). Every
//! commit appends the operations and, for each node whose row changed, a record: a delta on
//! its older row (the arcs set and removed) or, once the deltas would outweigh it, its whole
//! new row (sorted like a rebuilt file's, with its strength); then a level of the index from
//! node to record (sorted runs, merged by tiers of size). A reader maps the log and,
//! for a node with a record, reads that row, merging a delta chain with the row beneath it;
//! every other node's row comes from the base file. Nothing is replayed when a graph is opened
//! or queried: opening reads the 256-byte log head, one commit record and its level
//! directory, and a query searches the levels for each row it reads. Graphs without a log (or
//! with a log that changes nothing) read the base file exactly as before, through the same
//! code.
//!
//! New nodes get the next internal indices. A rebuilt file would number nodes in id order, so
//! a live graph is like a renumbered ("permuted", see `reorder.rs`) file: rows are kept in the
//! order of their neighbours' external ids, the push performs the same operations on the same
//! nodes, and embeddings and PPR vectors are bit-identical to those of a rebuild.

pub mod copy;
mod edges;
pub mod open;
pub mod stage;
pub mod validate;
pub mod writer;

/// The change log's file format (defined with the graph's: the graph wing reads logs).
pub use crate::graph::log_format as log;
pub use crate::graph::overlay::{lock_path, log_path, LogInfo, LogState, Overlay};
pub use crate::graph::replace::BaseReplace;
pub use open::{refreshed, with_log_bytes};
pub use stage::Ids;
pub use validate::{read_commits, save};
pub use writer::LiveWriter;
