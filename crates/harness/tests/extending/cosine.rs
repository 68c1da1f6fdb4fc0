//! The cosine baseline: rank by the cosine of the angle between query and candidate, with no
//! learning. On L2-normalised rows it ranks as the Euclidean baseline does; on raw counts it
//! ignores document length.

use dyad_core::{LabeledSet, Observer, Rng, Schedule, Scorer, SolverClock, sparse};
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};

/// The spec's `params` table: `params = { epsilon = 1e-12 }` (unknown keys are errors).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CosineConfig {
    /// Added to every norm, so that an empty row scores 0 instead of NaN.
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
}

fn default_epsilon() -> f64 {
    1e-12
}

impl Default for CosineConfig {
    fn default() -> Self {
        Self {
            epsilon: default_epsilon(),
        }
    }
}

/// Checked before any data is read: a bad value names its parameter (and the harness the
/// spec's line that set it).
impl Checked for CosineConfig {
    fn check(&self) -> Result<(), ParamError> {
        if self.epsilon >= 0.0 && self.epsilon.is_finite() {
            Ok(())
        } else {
            Err(ParamError::new(
                "epsilon",
                format!("must be finite and at least 0, got {}", self.epsilon),
            ))
        }
    }
}

/// The model: scores `<x, y> / ((|x| + eps) (|y| + eps))`.
#[derive(Debug, Clone, Copy)]
pub struct Cosine {
    epsilon: f64,
}

impl Scorer for Cosine {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let terms = self.candidate_terms(candidates);
        self.score_with_terms(query, candidates, &terms, out);
    }

    /// The candidates' norms, computed once for all queries.
    fn candidate_terms(&self, candidates: &CsMat<f64>) -> Vec<f64> {
        candidates
            .outer_iterator()
            .map(|r| sparse::norm_sq(r.data()).sqrt() + self.epsilon)
            .collect()
    }

    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        norms: &[f64],
        out: &mut [f64],
    ) {
        let qn = sparse::norm_sq(query.data()).sqrt() + self.epsilon;
        for (j, row) in candidates.outer_iterator().enumerate() {
            let dot = sparse::dot(query.indices(), query.data(), row.indices(), row.data());
            out[j] = dot / (qn * norms[j]);
        }
    }
}

/// Not iterative: the model is reported once, at step 0, and the harness evaluates it.
impl Ranker for CosineConfig {
    fn fit(
        &self,
        _train: &LabeledSet,
        _schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        let model = Cosine {
            epsilon: self.epsilon,
        };
        SolverClock::start().report(0, true, &model as &dyn Scorer, obs);
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        false
    }
}

/// Its entry in the crate's solver list (`SOLVERS` in `lib.rs` names it: `cosine::SOLVER,`).
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "cosine",
    label: "Cosine",
    description: "cosine similarity in feature space (no learning)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<CosineConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the definition, on rows of different lengths.
    #[test]
    fn scores_are_cosines() {
        let set = LabeledSet::from_dense_rows(
            &[
                vec![1.0, 0.0, 2.0],
                vec![0.0, 3.0, 0.0],
                vec![2.0, 0.0, 4.0],
            ],
            vec![0, 1, 0],
            2,
        );
        let model = Cosine { epsilon: 0.0 };
        let mut out = vec![0.0; 3];
        model.score(set.x.outer_view(0).unwrap(), &set.x, &mut out);
        assert!((out[0] - 1.0).abs() < 1e-15 && out[1] == 0.0 && (out[2] - 1.0).abs() < 1e-15);
        assert!(CosineConfig { epsilon: -1.0 }.check().is_err());
    }
}
