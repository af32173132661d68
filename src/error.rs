//! The one error type of the kernel. `src/python/errors.rs` maps it to Python exceptions.

use std::fmt;
use std::path::PathBuf;

/// Everything the kernel can report to a caller. Never a panic for user-caused conditions.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The graph file is malformed, truncated or corrupted (bad magic, offsets, checksums...).
    Format(String),
    /// A parameter is out of its documented domain (alpha, eps, dim, threads, ...).
    InvalidParameter(String),
    /// A node given by its internal index is out of range.
    NodeIndexOutOfRange { index: u64, num_nodes: u64 },
    /// A node given by its external id does not exist in the graph (the message names it).
    UnknownNode(String),
    /// The input edges/ids are inconsistent (e.g. duplicate external ids, id overflow).
    InvalidInput(String),
    /// A local computation would exceed the configured work/memory budget.
    BudgetExceeded(String),
    /// The operation was cancelled (e.g. KeyboardInterrupt observed by a progress callback).
    Cancelled,
    /// An I/O error, with the path it concerns when known.
    Io {
        path: Option<PathBuf>,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn format(msg: impl Into<String>) -> Self {
        Error::Format(msg.into())
    }
    pub fn param(msg: impl Into<String>) -> Self {
        Error::InvalidParameter(msg.into())
    }
    pub fn input(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: Some(path.into()),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format(m) => write!(f, "{m}"),
            Error::InvalidParameter(m) => write!(f, "{m}"),
            Error::NodeIndexOutOfRange { index, num_nodes } => write!(
                f,
                "node index {index} is out of range for a graph with {num_nodes} nodes"
            ),
            Error::UnknownNode(msg) => write!(f, "{msg}"),
            Error::InvalidInput(m) => write!(f, "{m}"),
            Error::BudgetExceeded(m) => write!(f, "{m}"),
            Error::Cancelled => write!(f, "operation cancelled"),
            Error::Io {
                path: Some(p),
                source,
            } => write!(f, "{}: {source}", p.display()),
            Error::Io { path: None, source } => write!(f, "{source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Error::Io { path: None, source }
    }
}
