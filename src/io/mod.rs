//! Edge sources: the input formats, recognised by content (`sniff`) and read into an
//! [`source::EdgeSink`] (the out-of-core builder, or the buffer `update` applies).

pub mod adjlist;
pub mod graphml;
pub mod input;
pub mod json;
pub mod mtx;
pub mod options;
pub mod pajek;
pub mod sniff;
pub mod source;
pub mod text;
pub mod webgraph;
