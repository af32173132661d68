//! Edge sources: the input formats read into the out-of-core builder.

pub mod json;
pub mod text;
pub mod webgraph;
