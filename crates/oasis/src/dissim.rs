//! Dissim-Oasis (spec §4.1): the symmetric score `S'_W(p, q) = -(p - q)^T W (p - q)` learned
//! with the same PA-I step. With `a = p - p+` and `b = p - p-` the loss is
//! `l' = max(0, 1 + a^T W a - b^T W b)`, whose gradient in `W` is `a a^T - b b^T`; the
//! loss-decreasing step is therefore
//!
//! ```text
//! W <- W + tau (b b^T - a a^T),   tau = min(C, l' / ||a a^T - b b^T||_F^2),
//! ||a a^T - b b^T||_F^2 = ||a||^4 + ||b||^4 - 2 (a.b)^2
//! ```
//!
//! The papers print the update as `W + tau V'` with `V' = a a^T - b b^T`, which would
//! *increase* the loss; we use the descent direction and say so (spec §11 item 11). Starting
//! from `W0 = I`, every iterate stays symmetric.

use dyad_core::sampling::TripletSampler;
use dyad_core::{
    Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, drive, sparse, steps,
};
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::{AlgoError, Ranker};
use dyad_metric_baselines::metric::Mahalanobis;
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};

/// Parameters of Dissim-Oasis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DissimOasisConfig {
    /// Aggressiveness `C` of the PA-I step.
    #[serde(default = "super::default_c")]
    pub c: f64,
}

impl Default for DissimOasisConfig {
    fn default() -> Self {
        Self {
            c: super::default_c(),
        }
    }
}

/// `S'(p, q) = -(p - q)^T W (p - q)` with `W` dense, symmetric: a Mahalanobis similarity
/// whose matrix need not be PSD.
#[derive(Debug, Clone, PartialEq)]
pub struct DissimModel {
    w: Mahalanobis,
}

impl DissimModel {
    pub fn identity(d: usize) -> Self {
        Self {
            w: Mahalanobis::identity(d),
        }
    }

    pub fn from_matrix(w: Array2<f64>) -> Self {
        Self {
            w: Mahalanobis::new(w),
        }
    }

    pub fn matrix(&self) -> &Array2<f64> {
        self.w.matrix()
    }

    fn quad(&self, v: &SparseVec) -> f64 {
        self.w
            .bilinear((&v.indices, &v.values), (&v.indices, &v.values))
    }

    /// One PA-I step on `(p, p+, p-)`; `a`, `b` are scratch space.
    pub fn pa1_step(
        &mut self,
        p: CsVecView<'_, f64>,
        pos: CsVecView<'_, f64>,
        neg: CsVecView<'_, f64>,
        c: f64,
        a: &mut SparseVec,
        b: &mut SparseVec,
    ) -> super::StepOutcome {
        a.set_difference(p, pos);
        b.set_difference(p, neg);
        let loss = (1.0 + self.quad(a) - self.quad(b)).max(0.0);
        let (na, nb) = (a.norm_sq(), b.norm_sq());
        let ab = sparse::dot(&a.indices, &a.values, &b.indices, &b.values);
        let v_norm_sq = na * na + nb * nb - 2.0 * ab * ab;
        if loss == 0.0 || v_norm_sq <= 0.0 {
            return super::StepOutcome { loss, tau: 0.0 };
        }
        let tau = c.min(loss / v_norm_sq);
        self.w.rank_one_update(b, b, tau);
        self.w.rank_one_update(a, a, -tau);
        super::StepOutcome { loss, tau }
    }
}

impl Scorer for DissimModel {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        self.w.score(query, candidates, out)
    }

    fn candidate_terms(&self, candidates: &CsMat<f64>) -> Vec<f64> {
        self.w.candidate_terms(candidates)
    }

    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        qwq: &[f64],
        out: &mut [f64],
    ) {
        self.w.score_with_terms(query, candidates, qwq, out)
    }
}

impl Checked for DissimOasisConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("c", self.c)
    }
}

impl Ranker for DissimOasisConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let sampler = TripletSampler::new(train)?;
        let state = (
            DissimModel::identity(train.dim()),
            SparseVec::default(),
            SparseVec::default(),
        );
        let step = |(model, a, b): &mut (DissimModel, SparseVec, SparseVec), _: u64| {
            let t = sampler.sample(rng);
            let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
            model.pa1_step(row(t.query), row(t.positive), row(t.negative), self.c, a, b);
            Ok::<_, AlgoError>(Flow::Continue)
        };
        drive(schedule, obs, || {
            Ok(steps(
                state,
                step,
                |s: &(DissimModel, SparseVec, SparseVec)| -> &dyn Scorer { &s.0 },
            ))
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    fn start(&self) -> dyad_kernels::Start {
        dyad_kernels::Start::IdentityDistance
    }

    /// The Mahalanobis matrix, `d x d`.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        Some(dyad_kernels::dense_bytes(dim, dim))
    }
}

/// The `dissim-oasis` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "dissim-oasis",
    label: "DISSIM-OASIS",
    description: "OASIS on the symmetric score -(p-q)^T W (p-q) (spec §4.1)",
    family: dyad_kernels::solver::RANKER,
    // 2: the density-chosen row kernels (oasis/kernel.rs) sum in another order.
    version: 2,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<DissimOasisConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use ndarray::Array1;
    use rand::Rng as _;
    use sprs::CsVec;

    #[test]
    fn bad_parameters_are_named() {
        assert!(DissimOasisConfig::default().check().is_ok());
        let bad = DissimOasisConfig { c: f64::NAN };
        assert_eq!(bad.check().unwrap_err().param, "c");
    }

    fn random_sparse(d: usize, nnz: usize, rng: &mut Rng) -> CsVec<f64> {
        let mut idx: Vec<usize> = rand::seq::index::sample(rng, d, nnz).into_vec();
        idx.sort_unstable();
        CsVec::new(
            d,
            idx,
            (0..nnz).map(|_| rng.random_range(-1.0..1.0)).collect(),
        )
    }

    fn dense(v: &CsVec<f64>) -> Array1<f64> {
        Array1::from(v.to_dense().to_vec())
    }

    #[test]
    fn step_matches_dense_closed_form_and_decreases_the_loss() {
        let mut rng = seeded(8);
        let d = 15;
        let mut model = DissimModel::identity(d);
        let (mut a, mut b) = (SparseVec::default(), SparseVec::default());
        for _ in 0..30 {
            let (p, pp, pn) = (
                random_sparse(d, 4, &mut rng),
                random_sparse(d, 4, &mut rng),
                random_sparse(d, 4, &mut rng),
            );
            let w0 = model.matrix().clone();
            let (av, bv) = (dense(&p) - dense(&pp), dense(&p) - dense(&pn));
            let loss = (1.0 + av.dot(&w0.dot(&av)) - bv.dot(&w0.dot(&bv))).max(0.0);
            let outer = |x: &Array1<f64>| {
                x.view()
                    .insert_axis(ndarray::Axis(1))
                    .dot(&x.view().insert_axis(ndarray::Axis(0)))
            };
            let v = outer(&bv) - outer(&av);
            let vn: f64 = v.iter().map(|x| x * x).sum();
            let tau = if loss == 0.0 {
                0.0
            } else {
                0.1f64.min(loss / vn)
            };
            let out = model.pa1_step(p.view(), pp.view(), pn.view(), 0.1, &mut a, &mut b);
            assert!((out.loss - loss).abs() < 1e-10 && (out.tau - tau).abs() < 1e-12);
            let expect = &w0 + &(tau * &v);
            let err = (model.matrix() - &expect)
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(err < 1e-12, "{err}");
            let after = (1.0 + av.dot(&model.matrix().dot(&av)) - bv.dot(&model.matrix().dot(&bv)))
                .max(0.0);
            assert!(after <= loss + 1e-12, "the step must not increase the loss");
            let asym = (model.matrix() - &model.matrix().t())
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(asym < 1e-12);
        }
    }

    #[test]
    fn scores_are_negative_w_distances() {
        let mut rng = seeded(3);
        let d = 6;
        let s = dyad_kernels::linalg::symmetrize(
            Array2::from_shape_fn((d, d), |_| rng.random_range(-1.0..1.0)).view(),
        );
        let m = DissimModel::from_matrix(s.clone());
        let rows: Vec<Vec<f64>> = (0..4)
            .map(|_| dense(&random_sparse(d, 3, &mut rng)).to_vec())
            .collect();
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 1, 0, 1], 2);
        let mut out = vec![0.0; 4];
        m.score(set.x.outer_view(2).unwrap(), &set.x, &mut out);
        for (j, r) in rows.iter().enumerate() {
            let diff = Array1::from(rows[2].clone()) - Array1::from(r.clone());
            assert!((out[j] + diff.dot(&s.dot(&diff))).abs() < 1e-12);
        }
    }
}
