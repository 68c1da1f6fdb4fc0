//! The interface between learned models and evaluation.

use sprs::{CsMat, CsVecView};

/// A similarity function over sparse feature vectors: higher scores mean "more similar".
/// The query is always on the left, `S(query, candidate)`, matching the bilinear convention
/// `S_W(p_i, p_j) = p_i^T W p_j` of the OASIS papers.
pub trait Scorer: Sync {
    /// Fill `out[j]` with `S(query, candidates[j])` for every row `j` of the CSR matrix.
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]);

    /// Per-candidate terms worth computing once when many queries are ranked against the
    /// same candidates (e.g. squared norms). Empty by default.
    fn candidate_terms(&self, _candidates: &CsMat<f64>) -> Vec<f64> {
        Vec::new()
    }

    /// Named statistics of the model itself (e.g. its symmetry index), recorded with the
    /// final evaluation. None by default.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }

    /// [`Scorer::score`] given the output of [`Scorer::candidate_terms`] for `candidates`.
    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        _terms: &[f64],
        out: &mut [f64],
    ) {
        self.score(query, candidates, out)
    }
}

/// A model that scores every label for an example: higher means "more likely one of its
/// labels" (the label-ranking family: ImageNet's "rank the labels of an image", LORETA §3.2).
pub trait LabelScorer: Sync {
    /// Number of labels scored.
    fn n_labels(&self) -> usize;
    /// Feature dimension the model expects.
    fn dim(&self) -> usize;
    /// Fill `out[l]` with the score of label `l` for `query` (`out.len() == n_labels()`).
    fn score_labels(&self, query: CsVecView<'_, f64>, out: &mut [f64]);
    /// Named statistics of the model, recorded with the final evaluation. None by default.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
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
