//! The Euclidean baseline: rank by (negative squared) Euclidean distance in feature space.
//! For the L2-normalised features of the papers this ranks exactly as the identity bilinear
//! form `W = I`, OASIS's starting point (spec §5, row 2); here the distance itself is used,
//! so the baseline stays honest on features that are not normalised.

use dyad_core::{LabeledSet, Observer, Rng, Schedule, Scorer, SolverClock, sparse};
use dyad_kernels::{AlgoError, Ranker};
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};

/// The Euclidean baseline has no parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EuclideanConfig {}

/// Scores `-||x - y||^2`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Euclidean;

impl Scorer for Euclidean {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let terms = self.candidate_terms(candidates);
        self.score_with_terms(query, candidates, &terms, out);
    }

    /// Squared norms of the candidates.
    fn candidate_terms(&self, candidates: &CsMat<f64>) -> Vec<f64> {
        candidates
            .outer_iterator()
            .map(|r| sparse::norm_sq(r.data()))
            .collect()
    }

    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        norms: &[f64],
        out: &mut [f64],
    ) {
        let qn = sparse::norm_sq(query.data());
        for (j, row) in candidates.outer_iterator().enumerate() {
            let dot = sparse::dot(query.indices(), query.data(), row.indices(), row.data());
            out[j] = -(qn - 2.0 * dot + norms[j]);
        }
    }
}

impl dyad_kernels::Checked for EuclideanConfig {
    fn check(&self) -> Result<(), dyad_kernels::ParamError> {
        Ok(())
    }
}

impl Ranker for EuclideanConfig {
    fn fit(
        &self,
        _train: &LabeledSet,
        _schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        SolverClock::start().report(0, true, &Euclidean as &dyn Scorer, obs);
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        false
    }
}

/// The `euclidean` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "euclidean",
    label: "Euclidean",
    description: "Euclidean distance in feature space (no learning)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    build: dyad_kernels::solver::ranker::<EuclideanConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_negative_squared_distances() {
        let set = LabeledSet::from_dense_rows(
            &[
                vec![1.0, 0.0, 2.0],
                vec![0.0, 3.0, 0.0],
                vec![1.0, 1.0, 1.0],
            ],
            vec![0, 1, 0],
            2,
        );
        let mut out = vec![0.0; 3];
        Euclidean.score(set.x.outer_view(0).unwrap(), &set.x, &mut out);
        assert_eq!(out, vec![0.0, -(1.0 + 9.0 + 4.0), -(0.0 + 1.0 + 1.0)]);
    }
}
