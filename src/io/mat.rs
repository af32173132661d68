//! MATLAB `.mat` files: which variable holds the graph. The facade lists a file's variables
//! (scipy or h5py reads them); the choice and its refusals are made here.

use crate::error::{Error, Result};
use crate::io::ids::repr_str;

/// One variable of a `.mat` file: its name, MATLAB class (`sparse`, `double`, ...) and shape.
pub type MatVariable = (String, String, Vec<u64>);

/// The variable that holds the adjacency matrix: `var` if given (it must exist), else the
/// only square sparse matrix, or `network` among several (BlogCatalog's convention).
pub fn pick_variable(path: &str, vars: &[MatVariable], var: Option<&str>) -> Result<String> {
    let listing = vars
        .iter()
        .map(|(n, c, s)| {
            let dims: Vec<String> = s.iter().map(u64::to_string).collect();
            format!("{n} ({c} {})", dims.join("x"))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let listing = if listing.is_empty() {
        "none".into()
    } else {
        listing
    };
    if let Some(v) = var {
        if !vars.iter().any(|(n, _, _)| n == v) {
            return Err(Error::format(format!(
                "{path}: no variable {}; variables: {listing}",
                repr_str(v)
            )));
        }
        return Ok(v.to_string());
    }
    let sparse: Vec<&str> = vars
        .iter()
        .filter(|(_, c, s)| c == "sparse" && s.len() == 2 && s[0] == s[1])
        .map(|(n, _, _)| n.as_str())
        .collect();
    match sparse.as_slice() {
        [one] => Ok(one.to_string()),
        _ if sparse.contains(&"network") => Ok("network".into()),
        [] => Err(Error::format(format!(
            "{path}: no square sparse matrix found; pass var=NAME (--var NAME). Variables: \
             {listing}"
        ))),
        _ => Err(Error::format(format!(
            "{path}: several sparse matrices ({}); choose one with var=NAME (--var NAME)",
            sparse.join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: &str, c: &str, s: &[u64]) -> MatVariable {
        (n.into(), c.into(), s.to_vec())
    }

    #[test]
    fn the_variable_is_chosen_or_refused_as_documented() {
        let one = [v("A", "sparse", &[3, 3]), v("labels", "double", &[3, 1])];
        assert_eq!(pick_variable("f", &one, None).unwrap(), "A");
        assert_eq!(pick_variable("f", &one, Some("labels")).unwrap(), "labels");
        let e = pick_variable("f", &one, Some("B")).unwrap_err().to_string();
        assert!(e.contains("f: no variable 'B'; variables: A (sparse 3x3), labels (double 3x1)"));
        let two = [
            v("network", "sparse", &[2, 2]),
            v("group", "sparse", &[2, 2]),
        ];
        assert_eq!(pick_variable("f", &two, None).unwrap(), "network");
        let two = [v("a", "sparse", &[2, 2]), v("b", "sparse", &[2, 2])];
        let e = pick_variable("f", &two, None).unwrap_err().to_string();
        assert!(e.contains("several sparse matrices (a, b)"));
        let none = [v("x", "sparse", &[2, 3])];
        let e = pick_variable("f", &none, None).unwrap_err().to_string();
        assert!(e.contains("no square sparse matrix found") && e.contains("x (sparse 2x3)"));
        assert!(pick_variable("f", &[], None)
            .unwrap_err()
            .to_string()
            .ends_with("none"));
    }
}
