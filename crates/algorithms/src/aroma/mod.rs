//! AROMA: Adaptive Regularization Of MAtrix models (Crammer & Chechik, "Adaptive
//! Regularization for Weight Matrices"; spec `arow-matrix.md`).
//!
//! DOCS-PLACEHOLDER

pub mod arow;
pub mod diagonal;
pub mod factored;
#[cfg(test)]
pub(crate) mod testkit;

pub use arow::{Arow, ArowStep, DiagonalArow};
pub use diagonal::{DiagonalAroma, DiagonalAromaConfig};
pub use factored::{FactoredAroma, FactoredAromaConfig};

use crate::AlgoError;
use dyad_core::model::score_via_dense_left;
use dyad_core::{CoreError, LabeledSet};
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};

/// A sparse vector as (strictly increasing indices, values).
pub type SparseRef<'a> = (&'a [usize], &'a [f64]);

/// Which rounds update the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Update {
    /// Whenever the hinge loss is positive, `1 > margin` (Algorithms 1 and 2, and AROW).
    #[default]
    Margin,
    /// Only on prediction mistakes, `0 >= margin` (the variant Theorem 2 analyses, §2.6).
    Mistake,
}

impl Update {
    /// Whether a round with this margin updates. A NaN margin never does.
    pub fn fires(self, margin: f64) -> bool {
        match self {
            Update::Margin => margin < 1.0,
            Update::Mistake => margin <= 0.0,
        }
    }
}

pub(crate) fn default_r() -> f64 {
    0.01
}

pub(crate) fn validate_r(r: f64) -> Result<(), AlgoError> {
    if !(r > 0.0 && r.is_finite()) {
        return Err(AlgoError::Param(format!(
            "AROMA/AROW: r must be positive and finite, got {r}"
        )));
    }
    Ok(())
}

/// Counters of the online rounds (the quantities of the mistake bounds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundCounts {
    /// Rounds seen.
    pub rounds: u64,
    /// Rounds where the update rule fired.
    pub updates: u64,
    /// Rounds with a prediction mistake, `margin <= 0`.
    pub mistakes: u64,
}

impl RoundCounts {
    fn record(&mut self, margin: f64, fired: bool) {
        self.rounds += 1;
        self.updates += u64::from(fired);
        self.mistakes += u64::from(!(margin > 0.0));
    }

    fn statistics(&self) -> [(&'static str, f64); 3] {
        [
            ("online_rounds", self.rounds as f64),
            ("online_updates", self.updates as f64),
            ("online_mistakes", self.mistakes as f64),
        ]
    }
}

/// Reject non-finite feature values (they would silently poison `W`).
pub(crate) fn check_features(train: &LabeledSet) -> Result<(), AlgoError> {
    if train.x.data().iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(AlgoError::Data(CoreError::Invalid(
            "features contain NaN or infinite values".into(),
        )))
    }
}

/// `out[j] = q^T W c_j` for the candidates `c_j`, with `row(k)` the `n` entries of row `k` of
/// `W`: `u = W^T q` (one axpy per non-zero of `q`), then one sparse dot per candidate.
pub(crate) fn score_rows<I: Iterator<Item = f64>>(
    n: usize,
    query: CsVecView<'_, f64>,
    candidates: &CsMat<f64>,
    out: &mut [f64],
    row: impl Fn(usize) -> I,
) {
    score_via_dense_left(n, query, candidates, out, |q, u| {
        for (&k, &qk) in q.indices().iter().zip(q.data()) {
            for (ub, w) in u.iter_mut().zip(row(k)) {
                *ub += qk * w;
            }
        }
    });
}
