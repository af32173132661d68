//! Node ids and weights given as columns (numpy arrays, Arrow columns, DataFrame columns,
//! lists): checked and typed once, with one error contract. Every refusal is an
//! `Error::Format` that names the input, the row and the column.

use crate::error::{Error, Result};
use crate::graph::csr::{Graph, NodeId};
use crate::graph::format::IdKind;
use crate::graph::log_format::LogId;

/// Node ids as a caller passes them, or as a graph names its nodes: int64 values or strings.
#[derive(Clone, Debug)]
pub enum Ids {
    Int(Vec<i64>),
    Str(Vec<String>),
}

impl Ids {
    pub fn len(&self) -> usize {
        match self {
            Ids::Int(v) => v.len(),
            Ids::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th id, as the change log records it.
    pub(crate) fn get(&self, i: usize) -> LogId {
        match self {
            Ids::Int(v) => LogId::Int(v[i]),
            Ids::Str(v) => LogId::Str(v[i].clone()),
        }
    }

    /// The external ids of internal nodes of `graph`.
    pub fn of_nodes(graph: &Graph, nodes: &[u32]) -> Result<Ids> {
        if graph.id_kind() == IdKind::Utf8 {
            let mut out = Vec::with_capacity(nodes.len());
            for &v in nodes {
                out.push(match graph.node_id(v)? {
                    NodeId::Str(s) => s.to_owned(),
                    NodeId::Int(i) => i.to_string(),
                });
            }
            return Ok(Ids::Str(out));
        }
        let mut out = Vec::with_capacity(nodes.len());
        for &v in nodes {
            out.push(match graph.node_id(v)? {
                NodeId::Int(i) => i,
                NodeId::Str(s) => {
                    return Err(Error::format(format!(
                        "string id {s:?} in an integer-id graph"
                    )))
                }
            });
        }
        Ok(Ids::Int(out))
    }
}

/// Where a column's values come from, for messages: the input, the column's name and the row
/// number of its first value.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    pub input: &'a str,
    pub column: &'a str,
    pub row0: u64,
}

impl Place<'_> {
    /// `input: row N` for the value at `i`.
    pub fn row(&self, i: usize) -> String {
        format!("{}: row {}", self.input, self.row0 + i as u64)
    }

    /// The column's name as Python writes a str.
    pub fn name(&self) -> String {
        repr_str(self.column)
    }
}

/// A str as Python's `repr` writes it (single quotes unless the text holds one).
pub fn repr_str(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// A float as Python's `repr` writes it (`1.0`, `0.5`, `nan`, `inf`, `1e+20`).
pub fn repr_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let t = format!("{x:?}");
    match t.split_once('e') {
        Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
        _ => t,
    }
}

/// A column of node ids, typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdColumn {
    Int(Vec<i64>),
    Str(Vec<String>),
}

impl IdColumn {
    pub fn len(&self) -> usize {
        match self {
            IdColumn::Int(v) => v.len(),
            IdColumn::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Unsigned ids, refused where they overflow int64.
pub fn from_u64(v: &[u64], at: &Place<'_>) -> Result<Vec<i64>> {
    v.iter()
        .enumerate()
        .map(|(i, &x)| {
            i64::try_from(x).map_err(|_| {
                Error::format(format!(
                    "{}: id {x} in column {} overflows int64",
                    at.row(i),
                    at.name()
                ))
            })
        })
        .collect()
}

/// Float ids (as NumPy holds an integer column with missing values): each must be an integer;
/// NaN is a missing value.
pub fn from_f64(v: &[f64], at: &Place<'_>) -> Result<Vec<i64>> {
    v.iter()
        .enumerate()
        .map(|(i, &x)| {
            if x.is_finite() && x == x.round() && x.abs() <= 9.223_372_036_854_775e18 {
                return Ok(x as i64);
            }
            let what = if x.is_nan() {
                "is missing".to_string()
            } else {
                format!("{} is not an integer id", repr_float(x))
            };
            Err(Error::format(format!(
                "{}: column {}: value {what}",
                at.row(i),
                at.name()
            )))
        })
        .collect()
}

/// Ids typed as `want` asks: `"auto"` keeps them, `"str"` writes integers as text, `"int"`
/// parses text as decimal integers.
pub fn coerce(ids: IdColumn, want: &str, at: &Place<'_>) -> Result<IdColumn> {
    match (ids, want) {
        (IdColumn::Int(v), "str") => Ok(IdColumn::Str(v.iter().map(i64::to_string).collect())),
        (IdColumn::Str(v), "int") => v
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let t = x.trim();
                match t.parse::<i128>() {
                    Ok(n) => i64::try_from(n).map_err(|_| {
                        Error::format(format!(
                            "{}: id {x} in column {} overflows int64",
                            at.row(i),
                            at.name()
                        ))
                    }),
                    Err(_) => Err(Error::format(format!(
                        "{}: column {}: {} is not an integer id",
                        at.row(i),
                        at.name(),
                        repr_str(x)
                    ))),
                }
            })
            .collect::<Result<Vec<i64>>>()
            .map(IdColumn::Int),
        (ids, "auto" | "int" | "str") => Ok(ids),
        (_, other) => Err(Error::param(format!(
            "id_kind must be one of 'auto', 'int', 'str', got {other:?}"
        ))),
    }
}

/// The internal indices of `ids` in `graph`: `Error::UnknownNode` names the first id that is
/// not a node (an id of the other kind than the graph's is not a node either).
pub fn indices(graph: &Graph, ids: &IdColumn) -> Result<Vec<u32>> {
    let missing = |id: String| {
        let why = match (graph.id_kind(), ids) {
            (IdKind::Utf8, IdColumn::Int(_)) => " (this graph has string node ids)".into(),
            (IdKind::Implicit | IdKind::Int64, IdColumn::Str(_)) => {
                " (this graph has integer node ids)".into()
            }
            (IdKind::Implicit, _) if graph.num_nodes() > 0 => {
                format!(" (ids are 0..{})", graph.num_nodes() - 1)
            }
            _ => String::new(),
        };
        Error::UnknownNode(format!("node {id} not found{why}"))
    };
    match ids {
        IdColumn::Int(v) => v
            .iter()
            .map(|&id| {
                let found = match graph.id_kind() {
                    IdKind::Utf8 => None,
                    _ => graph.lookup_int(id)?,
                };
                found.ok_or_else(|| missing(id.to_string()))
            })
            .collect(),
        IdColumn::Str(v) => v
            .iter()
            .map(|id| {
                let found = match graph.id_kind() {
                    IdKind::Utf8 => graph.lookup_str(id)?,
                    _ => None,
                };
                found.ok_or_else(|| missing(repr_str(id)))
            })
            .collect(),
    }
}

/// The order that sorts internal nodes `nodes` by their external ids (ints numerically,
/// strings by code point, as Python sorts them); stable.
pub fn id_order(graph: &Graph, nodes: &[u32]) -> Result<Vec<u32>> {
    use crate::graph::format::NodeId;
    let ids = nodes
        .iter()
        .map(|&v| graph.node_id(v))
        .collect::<Result<Vec<_>>>()?;
    let mut order: Vec<u32> = (0..nodes.len() as u32).collect();
    order.sort_by(|&a, &b| match (&ids[a as usize], &ids[b as usize]) {
        (NodeId::Int(x), NodeId::Int(y)) => x.cmp(y),
        (NodeId::Str(x), NodeId::Str(y)) => x.cmp(y),
        (NodeId::Int(_), NodeId::Str(_)) => std::cmp::Ordering::Less,
        (NodeId::Str(_), NodeId::Int(_)) => std::cmp::Ordering::Greater,
    });
    Ok(order)
}

/// Weights checked finite and > 0; `unit` is what a value is (`row`, `edge`), `column` its
/// column when it has one.
pub fn check_weights(
    v: &[f64],
    input: &str,
    row0: u64,
    column: Option<&str>,
    unit: &str,
) -> Result<()> {
    let Some(i) = v.iter().position(|&x| !(x.is_finite() && x > 0.0)) else {
        return Ok(());
    };
    let x = v[i];
    let what = if x.is_nan() {
        "missing or NaN"
    } else if x.is_infinite() {
        "infinite"
    } else {
        "<= 0"
    };
    let incol = column.map_or(String::new(), |c| format!(" in column {}", repr_str(c)));
    Err(Error::format(format!(
        "{input}: {unit} {}: weight {}{incol} is {what}; weights must be finite and > 0",
        row0 + i as u64,
        repr_float(x)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Place<'static> = Place {
        input: "e.parquet",
        column: "src",
        row0: 10,
    };

    #[test]
    fn floats_must_be_integers_and_unsigned_must_fit() {
        assert_eq!(from_f64(&[1.0, -2.0], &AT).unwrap(), [1, -2]);
        let e = from_f64(&[1.0, 1.5], &AT).unwrap_err().to_string();
        assert!(
            e.contains("e.parquet: row 11: column 'src': value 1.5 is not an integer id"),
            "{e}"
        );
        let e = from_f64(&[f64::NAN], &AT).unwrap_err().to_string();
        assert!(e.contains("row 10: column 'src': value is missing"), "{e}");
        assert!(from_f64(&[1e19], &AT).is_err());
        let e = from_u64(&[1, u64::MAX], &AT).unwrap_err().to_string();
        assert!(
            e.contains("row 11: id 18446744073709551615 in column 'src' overflows"),
            "{e}"
        );
    }

    #[test]
    fn ids_are_typed_as_asked() {
        let s = coerce(IdColumn::Int(vec![7, -1]), "str", &AT).unwrap();
        assert_eq!(s, IdColumn::Str(vec!["7".into(), "-1".into()]));
        let i = coerce(IdColumn::Str(vec!["007".into()]), "int", &AT).unwrap();
        assert_eq!(i, IdColumn::Int(vec![7]));
        let e = coerce(IdColumn::Str(vec!["a".into()]), "int", &AT).unwrap_err();
        assert!(e.to_string().contains("'a' is not an integer id"), "{e}");
        assert_eq!(repr_float(1e20), "1e+20");
        assert_eq!(repr_float(2.0), "2.0");
    }

    fn graph(ids: crate::graph::build::EdgeIds) -> Graph {
        use crate::graph::build::{build_in_memory, csr_from_edges, index_edge_ids, Merge};
        let e = index_edge_ids(ids, None).unwrap();
        let parts =
            csr_from_edges(e.num_nodes, &e.src, &e.dst, None, false, Merge::Sum, e.ids).unwrap();
        build_in_memory(&parts).unwrap()
    }

    #[test]
    fn indices_find_every_id_kind_and_name_the_first_missing_id() {
        use crate::graph::build::EdgeIds;
        let implicit = graph(EdgeIds::Int {
            src: vec![0, 1],
            dst: vec![1, 2],
            nodes: vec![],
        });
        assert_eq!(
            indices(&implicit, &IdColumn::Int(vec![2, 0])).unwrap(),
            [2, 0]
        );
        let e = indices(&implicit, &IdColumn::Int(vec![1, 3])).unwrap_err();
        assert!(
            matches!(&e, Error::UnknownNode(m) if m == "node 3 not found (ids are 0..2)"),
            "{e}"
        );
        let e = indices(&implicit, &IdColumn::Str(vec!["a".into()])).unwrap_err();
        assert!(
            e.to_string()
                .contains("'a' not found (this graph has integer node ids)"),
            "{e}"
        );
        let table = graph(EdgeIds::Int {
            src: vec![-5, 1 << 40],
            dst: vec![1 << 40, 7],
            nodes: vec![],
        });
        // Sorted ids: -5, 7, 2**40 are the nodes 0, 1, 2.
        assert_eq!(
            indices(&table, &IdColumn::Int(vec![1 << 40, -5])).unwrap(),
            [2, 0]
        );
        assert!(
            matches!(indices(&table, &IdColumn::Int(vec![0])), Err(Error::UnknownNode(m)) if m == "node 0 not found")
        );
        let strs = graph(EdgeIds::Str {
            src: vec!["b".into()],
            dst: vec!["a".into()],
            nodes: vec![],
        });
        assert_eq!(
            indices(&strs, &IdColumn::Str(vec!["b".into()])).unwrap(),
            [1]
        );
        assert!(indices(&strs, &IdColumn::Str(vec!["c".into()])).is_err());
        let e = indices(&strs, &IdColumn::Int(vec![0])).unwrap_err();
        assert!(
            e.to_string()
                .contains("0 not found (this graph has string node ids)"),
            "{e}"
        );
        assert!(indices(&strs, &IdColumn::Int(vec![])).unwrap().is_empty());
        // External id order, whatever the internal order: "a" < "b", -5 < 7 < 2**40.
        assert_eq!(id_order(&strs, &[1, 0]).unwrap(), [1, 0]);
        assert_eq!(id_order(&table, &[2, 0, 1]).unwrap(), [1, 2, 0]);
    }

    #[test]
    fn weights_name_the_first_bad_value() {
        assert!(check_weights(&[1.0, 2.5], "x", 0, None, "row").is_ok());
        let e = check_weights(&[1.0, -1.0], "x", 5, Some("w"), "row").unwrap_err();
        assert!(
            e.to_string()
                .contains("x: row 6: weight -1.0 in column 'w' is <= 0"),
            "{e}"
        );
    }
}
