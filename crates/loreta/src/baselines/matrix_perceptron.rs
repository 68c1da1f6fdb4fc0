//! The Matrix Perceptron (LORETA spec §4, B8; ImageNet Figs. 2c/4/5): the full-rank
//! "conservative" stochastic subgradient descent on the multilabel hinge of spec §3.2.
//! `W` (`L x d`) starts at 0; on an image `p` with loss `l > 0` and descent factor `u`,
//!
//! ```text
//! W <- W + tau u p^T,    tau = eta                               (rule = "perceptron")
//!                        tau = min(C, l / (|u|^2 |p|^2))           (rule = "pa")
//! ```
//!
//! The `pa` rule is **PA on the full matrix** for the label task (the PA-I step of OASIS,
//! spec §4 B5, applied to the multilabel hinge); for the triplet task PA on the full matrix
//! is OASIS itself (`dyad_oasis`). "After a sufficient number of rounds the model is
//! typically full rank and dense": it is stored dense, `d x L` (feature-major, so a step
//! touches `nnz(p)` contiguous rows), `O(dL)` memory; a step costs `O(nnz(p) L)` for the
//! scores and `O(nnz(p) nnz(u))` for the update. While `W` is still exactly zero every label
//! ties; the highest-scoring negative label is then drawn uniformly (spec §3.2 \[CHOICE\]),
//! afterwards ties go to the lowest index. `eta` (1) and `C` (0.1) are chosen by CV.

use crate::labels::{draw_and_hinge, label_problem};
use crate::{LabelRanker, LabelScorer};
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, SparseVec, drive, steps};
use dyad_kernels::params::positive;
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use sprs::CsVecView;

/// The step-size rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PerceptronRule {
    /// Fixed step `eta` (the Matrix Perceptron).
    #[default]
    Perceptron,
    /// PA-I step `min(C, l / |u p^T|^2)` (PA on the full matrix).
    Pa,
}

fn default_eta() -> f64 {
    1.0
}
fn default_c() -> f64 {
    0.1
}

/// Parameters of the Matrix Perceptron (and of full-matrix PA with `rule = "pa"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixPerceptronConfig {
    #[serde(default)]
    pub rule: PerceptronRule,
    /// Step size of the perceptron rule (1).
    #[serde(default = "default_eta")]
    pub eta: f64,
    /// Aggressiveness of the PA rule (0.1).
    #[serde(default = "default_c")]
    pub c: f64,
}

impl Default for MatrixPerceptronConfig {
    fn default() -> Self {
        Self {
            rule: PerceptronRule::Perceptron,
            eta: default_eta(),
            c: default_c(),
        }
    }
}

impl Checked for MatrixPerceptronConfig {
    fn check(&self) -> Result<(), ParamError> {
        positive("eta", self.eta)?;
        positive("c", self.c)
    }
}

/// A dense label scorer `W` (`L x d`), stored transposed (`d x L`).
#[derive(Debug, Clone, PartialEq)]
pub struct DenseLabelModel {
    wt: Array2<f64>,
}

impl DenseLabelModel {
    pub fn zeros(dim: usize, n_labels: usize) -> Self {
        Self {
            wt: Array2::zeros((dim, n_labels)),
        }
    }

    /// `W^T` (`d x L`).
    pub fn transposed(&self) -> &Array2<f64> {
        &self.wt
    }

    /// `W += tau u p^T` for sparse `u` (over labels) and `p` (over features).
    pub fn add_outer(&mut self, u: &SparseVec, p: CsVecView<'_, f64>, tau: f64) {
        for (&j, &pj) in p.indices().iter().zip(p.data()) {
            let mut row = self.wt.row_mut(j);
            for (&l, &ul) in u.indices.iter().zip(&u.values) {
                row[l] += tau * pj * ul;
            }
        }
    }
}

impl LabelScorer for DenseLabelModel {
    fn n_labels(&self) -> usize {
        self.wt.ncols()
    }

    fn dim(&self) -> usize {
        self.wt.nrows()
    }

    /// `W x = sum_j x_j W^T[j, :]`: `O(nnz(x) L)`.
    fn score_labels(&self, x: CsVecView<'_, f64>, out: &mut [f64]) {
        out.fill(0.0);
        let l = self.wt.ncols();
        let w = self.wt.as_slice().expect("standard layout");
        for (&j, &xj) in x.indices().iter().zip(x.data()) {
            dyad_kernels::linalg::axpy(out, xj, &w[j * l..(j + 1) * l]);
        }
    }

    /// The Frobenius norm of `W`.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        vec![(
            "frobenius_norm",
            self.wt.iter().map(|v| v * v).sum::<f64>().sqrt(),
        )]
    }
}

impl LabelRanker for MatrixPerceptronConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<dyn LabelScorer>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let (n_labels, rows) = label_problem(train)?;
        struct State<'r> {
            model: DenseLabelModel,
            zero: bool,
            scores: Vec<f64>,
            u: SparseVec,
            rng: &'r mut Rng,
        }
        let step = |s: &mut State<'_>, _: u64| {
            let drawn = draw_and_hinge(
                train,
                &rows,
                |x, out| s.model.score_labels(x, out),
                &mut s.scores,
                &mut s.u,
                s.rng,
                s.zero,
            )?;
            if let Some((_, p, loss)) = drawn {
                let tau = match self.rule {
                    PerceptronRule::Perceptron => self.eta,
                    PerceptronRule::Pa => {
                        let v = s.u.norm_sq() * dyad_core::sparse::norm_sq(p.data());
                        super::iterative_pa::pa_tau(self.c, loss, v)
                    }
                };
                if tau > 0.0 && p.nnz() > 0 {
                    s.model.add_outer(&s.u, p, tau);
                    s.zero = false;
                }
            }
            Ok::<_, AlgoError>(Flow::Continue)
        };
        drive(schedule, obs, || {
            let state = State {
                model: DenseLabelModel::zeros(train.dim(), n_labels),
                zero: true,
                scores: vec![0.0; n_labels],
                u: SparseVec::default(),
                rng,
            };
            Ok(steps(state, step, |s: &State<'_>| -> &dyn LabelScorer {
                &s.model
            }))
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `matrix-perceptron` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "matrix-perceptron",
    label: "Matrix Perceptron",
    description: "full-rank conservative subgradient descent on W (labels x features), W0 = 0 (spec §4 B8)",
    family: dyad_kernels::solver::LABEL_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::label_ranker::<MatrixPerceptronConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::LabelRecord;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::multilabel_data;

    #[test]
    fn both_rules_learn_the_label_problem() {
        let (train, test) = (multilabel_data(240, 40, 1), multilabel_data(120, 40, 2));
        for rule in [PerceptronRule::Perceptron, PerceptronRule::Pa] {
            let mut obs = LabelRecord::new(test.clone());
            MatrixPerceptronConfig {
                rule,
                ..Default::default()
            }
            .fit(
                &train,
                &Schedule::new(vec![0, 3000]),
                &mut seeded(3),
                &mut obs,
            )
            .unwrap();
            let m = obs.maps();
            assert!(m[1] > 0.95 && m[1] > m[0] + 0.3, "{rule:?}: {m:?}");
        }
    }

    #[test]
    fn pa_step_lands_on_the_margin_and_scores_are_dense_products() {
        let mut m = DenseLabelModel::zeros(3, 4);
        let u = SparseVec::from_sorted(&[1, 2], &[1.0, -1.0]);
        let set = LabeledSet::from_dense_rows(&[vec![0.5, 0.0, 2.0]], vec![0], 1);
        let p = set.x.outer_view(0).unwrap();
        // At W = 0 the hinge of label 1 against ybar = 2 is 1; PA with a large C closes it.
        let tau = super::super::iterative_pa::pa_tau(1e9, 1.0, u.norm_sq() * 4.25);
        m.add_outer(&u, p, tau);
        let mut out = vec![0.0; 4];
        m.score_labels(p, &mut out);
        assert!((out[1] - out[2] - 1.0).abs() < 1e-12);
        assert_eq!((out[0], out[3]), (0.0, 0.0));
        for (bad, param) in [
            (
                MatrixPerceptronConfig {
                    eta: -1.0,
                    ..Default::default()
                },
                "eta",
            ),
            (
                MatrixPerceptronConfig {
                    c: 0.0,
                    ..Default::default()
                },
                "c",
            ),
        ] {
            assert_eq!(bad.check().unwrap_err().param, param);
        }
    }
}
