//! The interface between learned models and evaluation.

use sprs::{CsMat, CsVecView};
use std::sync::OnceLock;

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

    /// Scores of a block of queries against every candidate: `out` holds one row of
    /// `candidates.x.rows()` scores per query, in order. By default each query on its own
    /// ([`Scorer::score_with_terms`]); a model overrides it where a block shares work (each
    /// candidate's terms read once for the whole block), with the same arithmetic per pair.
    fn score_block(
        &self,
        queries: &[CsVecView<'_, f64>],
        candidates: &Candidates<'_>,
        out: &mut [f64],
    ) {
        score_each(self, queries, candidates, out)
    }
}

/// [`Scorer::score_block`] one query at a time (the default, and a fallback for overrides).
pub fn score_each<S: Scorer + ?Sized>(
    model: &S,
    queries: &[CsVecView<'_, f64>],
    candidates: &Candidates<'_>,
    out: &mut [f64],
) {
    let n = candidates.x.rows();
    if n == 0 {
        return;
    }
    for (query, row) in queries.iter().zip(out.chunks_exact_mut(n)) {
        model.score_with_terms(*query, candidates.x, &candidates.terms, row);
    }
}

/// The candidates of many rankings (a CSR matrix, one candidate per row) with what a scorer
/// computes once about them: its [`Scorer::candidate_terms`] and, on first use, the
/// candidates by feature.
pub struct Candidates<'a> {
    pub x: &'a CsMat<f64>,
    pub terms: Vec<f64>,
    by_feature: OnceLock<CsMat<f64>>,
}

impl<'a> Candidates<'a> {
    pub fn new<S: Scorer + ?Sized>(model: &S, x: &'a CsMat<f64>) -> Self {
        Self {
            x,
            terms: model.candidate_terms(x),
            by_feature: OnceLock::new(),
        }
    }

    /// The candidates as a CSC matrix: for each feature, the candidates holding it, in
    /// ascending order (an inverted index). Built once, on the first call.
    pub fn by_feature(&self) -> &CsMat<f64> {
        self.by_feature.get_or_init(|| self.x.to_csc())
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
