//! The interface between learned models and evaluation.

use sprs::{CsMat, CsVecView};

/// A similarity function over sparse feature vectors: higher scores mean "more similar".
/// The query is always on the left, `S(query, candidate)`, matching the bilinear convention
/// `S_W(p_i, p_j) = p_i^T W p_j` of the OASIS papers.
pub trait Scorer: Sync {
    /// Fill `out[j]` with `S(query, candidates[j])` for every row `j` of the CSR matrix.
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]);
}

/// Scores a query against all candidates by first forming the dense vector `u` with
/// `S(q, c) = u . c`: the shared kernel of every bilinear model. `fill_u` writes `u`
/// (zeroed beforehand) for the query.
pub fn score_via_dense_left(
    dim: usize,
    query: CsVecView<'_, f64>,
    candidates: &CsMat<f64>,
    out: &mut [f64],
    fill_u: impl FnOnce(CsVecView<'_, f64>, &mut [f64]),
) {
    let mut u = vec![0.0; dim];
    fill_u(query, &mut u);
    for (j, row) in candidates.outer_iterator().enumerate() {
        out[j] = crate::sparse::dot_dense(&u, row.indices(), row.data());
    }
}
