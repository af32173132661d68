//! The embedding: its settings, the local push, the projection and neighbour smoothing
//! (docs/SPEC.md).

pub mod compress;
pub mod config;
pub mod cost;
pub mod job;
pub mod ppr;
pub mod project;
pub mod report;
pub mod similarity;
pub mod smooth;

pub use project::*;
