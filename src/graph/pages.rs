//! Read-ahead bookkeeping: the pages of a mapping already hinted during one query.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use crate::hashing::IndexHasher;

/// Pages of a mapping hinted during one query (see `Graph::prefetch_row`): page numbers,
/// hashed by one multiplication (SipHash cost more than the hints it saved).
pub type PageSet = HashSet<usize, BuildHasherDefault<IndexHasher>>;
