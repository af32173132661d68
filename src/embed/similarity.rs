//! Cosine similarity between embedding rows, as the `demo` command shows it: the rows nearest
//! a row, and the two groups that cosine 2-means finds from two seed rows.

use crate::error::{Error, Result};

/// Rows of `dim` values, scaled to unit length in f64 (a zero row stays zero).
struct UnitRows {
    rows: Vec<Vec<f64>>,
}

impl UnitRows {
    /// `rows` (row-major, `dim` per row) with `wanted` among their indices.
    fn new(rows: &[f32], dim: usize, wanted: &[usize]) -> Result<UnitRows> {
        if dim == 0 || rows.len() % dim != 0 {
            return Err(Error::param(format!(
                "{} values do not make rows of {dim}",
                rows.len()
            )));
        }
        let n = rows.len() / dim;
        if let Some(&v) = wanted.iter().find(|&&v| v >= n) {
            return Err(Error::param(format!("row {v} of {n} rows")));
        }
        let rows = rows
            .chunks_exact(dim)
            .map(|r| unit_length(r.iter().map(|&x| f64::from(x)).collect()))
            .collect();
        Ok(UnitRows { rows })
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn unit_length(mut v: Vec<f64>) -> Vec<f64> {
    let norm = dot(&v, &v).sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The `k` rows most cosine-similar to row `v` (`v` itself left out), most similar first
/// (ties: the lower index first), with their similarity.
pub fn nearest(rows: &[f32], dim: usize, v: usize, k: usize) -> Result<Vec<(usize, f64)>> {
    let unit = UnitRows::new(rows, dim, &[v])?.rows;
    let mut sims: Vec<(usize, f64)> = (0..unit.len())
        .filter(|&u| u != v)
        .map(|u| (u, dot(&unit[u], &unit[v])))
        .collect();
    sims.sort_by(|a, b| b.1.total_cmp(&a.1)); // stable: ties stay in index order
    sims.truncate(k);
    Ok(sims)
}

/// Cosine 2-means started at the rows `seeds`: each row's group (0 or 1: the more similar
/// centroid, 0 on a tie) once no row changes group, or after `rounds` rounds. A centroid is
/// its group's mean scaled to unit length; a group that empties keeps its centroid.
pub fn two_means(rows: &[f32], dim: usize, seeds: [usize; 2], rounds: usize) -> Result<Vec<u8>> {
    let unit = UnitRows::new(rows, dim, &seeds)?.rows;
    let mut centroids = seeds.map(|s| unit[s].clone());
    let mut groups: Vec<u8> = Vec::new();
    for _ in 0..rounds {
        let new: Vec<u8> = unit
            .iter()
            .map(|r| u8::from(dot(r, &centroids[1]) > dot(r, &centroids[0])))
            .collect();
        if new == groups {
            break;
        }
        for (c, centroid) in centroids.iter_mut().enumerate() {
            let members: Vec<&Vec<f64>> = unit
                .iter()
                .zip(&new)
                .filter(|&(_, &g)| usize::from(g) == c)
                .map(|(r, _)| r)
                .collect();
            if members.is_empty() {
                continue;
            }
            let mut mean = vec![0.0; dim];
            for r in &members {
                mean.iter_mut().zip(r.iter()).for_each(|(m, x)| *m += x);
            }
            *centroid = unit_length(mean.into_iter().map(|m| m / members.len() as f64).collect());
        }
        groups = new;
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Two bundles of directions in the plane (near 0 and near 90 degrees) and a zero row.
    fn rows() -> Vec<f32> {
        let angles = [0.0f32, 10.0, 20.0, 80.0, 90.0, 100.0];
        let mut v: Vec<f32> = angles
            .iter()
            .flat_map(|a| [a.to_radians().cos() * 3.0, a.to_radians().sin() * 3.0])
            .collect();
        v.extend([0.0, 0.0]);
        v
    }

    #[test]
    fn nearest_rows_by_angle() {
        let got = nearest(&rows(), 2, 1, 3).unwrap();
        let ids: Vec<usize> = got.iter().map(|p| p.0).collect();
        assert_eq!(ids[2], 3); // 10 degrees away twice, then 70
        assert!((got[0].1 - 10f64.to_radians().cos()).abs() < 1e-6);
        assert!((got[2].1 - 70f64.to_radians().cos()).abs() < 1e-6);
        // An exact tie (45 degrees each way): the lower index first.
        let square = [1.0, 0.0, 1.0, 1.0, 0.0, 2.0, -1.0, 0.5];
        let got = nearest(&square, 2, 1, 5).unwrap();
        assert_eq!(got.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 2, 3]);
        assert!((got[0].1 - 0.5f64.sqrt()).abs() < 1e-12 && got[0].1 == got[1].1);
        assert_eq!(nearest(&rows(), 2, 6, 10).unwrap().len(), 6); // the zero row: all, at 0
        assert!(nearest(&rows(), 2, 7, 3).is_err());
        assert!(nearest(&rows(), 3, 0, 3).is_err());
    }

    #[test]
    fn two_means_splits_the_bundles() {
        // Seeded at two rows of the first bundle (first round: 0 and the zero row against
        // the rest), the means move to the two bundles.
        let g = two_means(&rows(), 2, [0, 1], 20).unwrap();
        assert_eq!(g, [0, 0, 0, 1, 1, 1, 0]);
        assert_eq!(
            two_means(&rows(), 2, [0, 1], 1).unwrap(),
            [0, 1, 1, 1, 1, 1, 0]
        );
        let g = two_means(&rows(), 2, [0, 4], 20).unwrap();
        assert_eq!(g, [0, 0, 0, 1, 1, 1, 0]); // the zero row ties: group 0
        assert_eq!(two_means(&rows(), 2, [0, 4], 0).unwrap(), Vec::<u8>::new());
        assert!(two_means(&rows(), 2, [0, 9], 5).is_err());
    }
}
