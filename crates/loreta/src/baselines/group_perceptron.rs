//! The Group Multi-Class Perceptron (LORETA spec §4, B9; ImageNet Figs. 2c/4/5): online
//! mirror descent with the mixed (2,1)-norm regulariser of Kakade, Shalev-Shwartz & Tewari
//! (2010), "an alternative regulariser to low rank" that encourages group sparsity. This is
//! also the "(2,1)-norm" model of the figures' text ("the mAP of the full rank 1000 gradient
//! descent and (2,1) norm algorithms"): one learner, not two.
//!
//! # The update (\[EXT\] reconstruction of spec §4 B9)
//!
//! A dual matrix `theta` (`L x d`) starts at 0 and takes the perceptron step on the
//! multilabel hinge, `theta <- theta + eta u p^T` on a loss; the primal scorer is the mirror
//! map `W = grad F*(theta)` of `F*(theta) = |theta|_{2,p}^2 / 2` (the dual of
//! `|W|_{2,q}^2 / 2`, `q = p/(p-1)`, which approaches the (2,1) norm), column by column:
//!
//! ```text
//! W_{:,j} = |theta|_{2,p}^{2-p} |theta_{:,j}|_2^{p-2} theta_{:,j},
//! |theta|_{2,p} = (sum_j |theta_{:,j}|_2^p)^{1/p}
//! ```
//!
//! **Choices** (the documents give neither, spec §9.16): the groups are the **feature
//! columns** (one group per visual word across all labels); `p = max(2, ln d)` (Kakade et al.'s
//! choice for the group (2,1) norm, `q = ln d / (ln d - 1)`; at least 2 so that `F*` is
//! smooth), overridable by `p`. With `p = 2` the map is the identity and the learner is the
//! Matrix Perceptron exactly (tested). The coefficients are evaluated scale-free as
//! `(sum_j (n_j/n_max)^p)^{(2-p)/p} (n_j/n_max)^{p-2}` with `n_j = |theta_{:,j}|`, so no
//! power overflows. Ties at `theta = 0` as in the Matrix Perceptron. Storage `d x L` dense;
//! a step costs `O(nnz(p) L)` (scores, the touched groups' norms) plus `O(d)` for the
//! coefficients.

use crate::labels::{draw_and_hinge, label_problem};
use crate::{LabelRanker, LabelScorer};
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, SparseVec, drive, steps};
use dyad_kernels::params::{at_least, if_given, positive};
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use sprs::CsVecView;

fn default_eta() -> f64 {
    1.0
}

/// Parameters of the Group Multi-Class Perceptron.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupPerceptronConfig {
    /// Step size of the dual update (1; chosen by CV).
    #[serde(default = "default_eta")]
    pub eta: f64,
    /// Dual exponent `p >= 2` (none: `max(2, ln d)`).
    #[serde(default)]
    pub p: Option<f64>,
}

impl Default for GroupPerceptronConfig {
    fn default() -> Self {
        Self {
            eta: default_eta(),
            p: None,
        }
    }
}

impl Checked for GroupPerceptronConfig {
    fn check(&self) -> Result<(), ParamError> {
        positive("eta", self.eta)?;
        if_given(self.p, |p| at_least("p", p, 2.0))
    }
}

impl GroupPerceptronConfig {
    /// The exponent used for dimension `d`.
    pub fn exponent(&self, d: usize) -> f64 {
        self.p.unwrap_or_else(|| (d as f64).ln().max(2.0))
    }
}

/// The mirror-descent model: the dual `theta` (stored `d x L`), its group norms and the
/// coefficients `c_j` with `W_{:,j} = c_j theta_{:,j}`.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupModel {
    theta_t: Array2<f64>,
    norms: Vec<f64>,
    coef: Vec<f64>,
    p: f64,
}

impl GroupModel {
    pub fn zeros(dim: usize, n_labels: usize, p: f64) -> Self {
        Self {
            theta_t: Array2::zeros((dim, n_labels)),
            norms: vec![0.0; dim],
            coef: vec![0.0; dim],
            p,
        }
    }

    /// The primal `W` (`L x d`), dense (tests).
    pub fn primal(&self) -> Array2<f64> {
        let mut w = self.theta_t.t().to_owned();
        for (mut col, &c) in w.columns_mut().into_iter().zip(&self.coef) {
            col *= c;
        }
        w
    }

    /// `theta += tau u p^T`, then the touched group norms and every coefficient.
    pub fn add_outer(&mut self, u: &SparseVec, x: CsVecView<'_, f64>, tau: f64) {
        for (&j, &xj) in x.indices().iter().zip(x.data()) {
            let mut row = self.theta_t.row_mut(j);
            for (&l, &ul) in u.indices.iter().zip(&u.values) {
                row[l] += tau * xj * ul;
            }
            self.norms[j] = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        }
        self.refresh();
    }

    /// `c_j = (sum_i (n_i/n_max)^p)^{(2-p)/p} (n_j/n_max)^{p-2}` (scale-free form).
    fn refresh(&mut self) {
        let p = self.p;
        let max = self.norms.iter().fold(0.0f64, |m, &v| m.max(v));
        if max == 0.0 {
            self.coef.fill(0.0);
            return;
        }
        let sum: f64 = self.norms.iter().map(|&v| (v / max).powf(p)).sum();
        let global = sum.powf((2.0 - p) / p);
        for (c, &v) in self.coef.iter_mut().zip(&self.norms) {
            *c = if v > 0.0 {
                global * (v / max).powf(p - 2.0)
            } else {
                0.0
            };
        }
    }
}

impl LabelScorer for GroupModel {
    fn n_labels(&self) -> usize {
        self.theta_t.ncols()
    }

    fn dim(&self) -> usize {
        self.theta_t.nrows()
    }

    /// `W x = sum_j x_j c_j theta_{:,j}`: `O(nnz(x) L)`.
    fn score_labels(&self, x: CsVecView<'_, f64>, out: &mut [f64]) {
        out.fill(0.0);
        let l = self.theta_t.ncols();
        let t = self.theta_t.as_slice().expect("standard layout");
        for (&j, &xj) in x.indices().iter().zip(x.data()) {
            if self.coef[j] != 0.0 {
                dyad_kernels::linalg::axpy(out, xj * self.coef[j], &t[j * l..(j + 1) * l]);
            }
        }
    }

    /// Groups (feature columns) with a non-zero weight, and the exponent `p`.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        vec![
            (
                "active_groups",
                self.norms.iter().filter(|&&v| v > 0.0).count() as f64,
            ),
            ("p", self.p),
        ]
    }
}

impl LabelRanker for GroupPerceptronConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<dyn LabelScorer>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let (n_labels, rows) = label_problem(train)?;
        let p = self.exponent(train.dim());
        struct State<'r> {
            model: GroupModel,
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
            if let Some((_, x, _)) = drawn
                && x.nnz() > 0
            {
                s.model.add_outer(&s.u, x, self.eta);
                s.zero = false;
            }
            Ok::<_, AlgoError>(Flow::Continue)
        };
        drive(schedule, obs, || {
            let state = State {
                model: GroupModel::zeros(train.dim(), n_labels, p),
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

/// The `group-perceptron` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "group-perceptron",
    label: "Group MC Perceptron",
    description: "(2,1)-norm online mirror descent, groups = feature columns (spec §4 B9, [EXT] reconstruction)",
    family: dyad_kernels::solver::LABEL_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::label_ranker::<GroupPerceptronConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baselines::matrix_perceptron::MatrixPerceptronConfig;
    use crate::fixtures::{LabelRecord, LabelScores};
    use dyad_core::seeded;
    use dyad_kernels::fixtures::multilabel_data;

    #[test]
    fn mirror_map_is_the_gradient_of_the_half_squared_group_norm() {
        // Finite differences of F*(theta) = |theta|_{2,p}^2 / 2 against W.
        let mut m = GroupModel::zeros(4, 3, 3.5);
        let u = SparseVec::from_sorted(&[0, 2], &[1.0, -2.0]);
        let rows = vec![vec![0.3, 0.0, 1.0, 0.2], vec![0.0, 0.7, 0.1, 0.0]];
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 0], 1);
        m.add_outer(&u, set.x.outer_view(0).unwrap(), 0.7);
        m.add_outer(
            &SparseVec::from_sorted(&[1], &[1.0]),
            set.x.outer_view(1).unwrap(),
            0.4,
        );
        let w = m.primal();
        let f = |t: &Array2<f64>| {
            let s: f64 = t
                .columns()
                .into_iter()
                .map(|c| c.dot(&c).sqrt().powf(3.5))
                .sum();
            0.5 * s.powf(2.0 / 3.5)
        };
        let theta = m.theta_t.t().to_owned();
        let h = 1e-6;
        for l in 0..3 {
            for j in 0..4 {
                let (mut up, mut dn) = (theta.clone(), theta.clone());
                up[[l, j]] += h;
                dn[[l, j]] -= h;
                let fd = (f(&up) - f(&dn)) / (2.0 * h);
                assert!(
                    (fd - w[[l, j]]).abs() < 1e-7,
                    "({l},{j}): {fd} vs {}",
                    w[[l, j]]
                );
            }
        }
    }

    #[test]
    fn p_two_is_the_matrix_perceptron_and_the_default_learns() {
        let (train, test) = (multilabel_data(240, 40, 1), multilabel_data(120, 40, 2));
        let schedule = Schedule::new(vec![0, 2000]);
        let mut group = LabelScores(test.clone(), Vec::new());
        GroupPerceptronConfig {
            eta: 1.0,
            p: Some(2.0),
        }
        .fit(&train, &schedule, &mut seeded(5), &mut group)
        .unwrap();
        let mut plain = LabelScores(test.clone(), Vec::new());
        MatrixPerceptronConfig::default()
            .fit(&train, &schedule, &mut seeded(5), &mut plain)
            .unwrap();
        assert_eq!(
            group.1, plain.1,
            "p = 2 must reproduce the matrix perceptron"
        );
        let mut obs = LabelRecord::new(test);
        GroupPerceptronConfig::default()
            .fit(
                &train,
                &Schedule::new(vec![0, 3000]),
                &mut seeded(3),
                &mut obs,
            )
            .unwrap();
        let m = obs.maps();
        assert!(m[1] > 0.9 && m[1] > m[0] + 0.3, "{m:?}");
        let e = GroupPerceptronConfig {
            p: Some(1.5),
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "p");
        let e = GroupPerceptronConfig {
            eta: f64::INFINITY,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "eta");
    }
}
