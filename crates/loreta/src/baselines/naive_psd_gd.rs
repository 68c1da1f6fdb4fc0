//! Naive PSD gradient descent (LORETA spec §4, B2; \[JMLR\] Fig. 3c): `W = A A^T` (`d x k`) and,
//! on a triplet with loss `l = [1 - q^T A A^T (p+ - p-)]_+ > 0`, the plain gradient step on
//! `A` (the gradient of `q^T A A^T g` in `A` is `(q g^T + g q^T) A`):
//!
//! ```text
//! A <- A + eta (q (A^T (p+ - p-))^T + (p+ - p-) (A^T q)^T)
//! ```
//!
//! (equivalently Riemannian SGD under the "flat metric" of Meyer et al. 2011), both terms from
//! the old `A`. The papers find it stable, unlike the non-symmetric factored GD: its
//! invariance group is the orthogonal matrices. `eta` (0.1) is chosen by CV; initialisation
//! `identity` (`A = [I_k; 0]`, the 20NG choice) or `gaussian`. Cost per step:
//! `O((nnz q + nnz(p+ - p-)) k)`. The reported model is the symmetric
//! [`LowRankModel`].

use super::factored_gd::check_factored;
use crate::losses::triplet_hinge;
use crate::model::LowRankModel;
use crate::{Init, InitSpec, budget_rank, check_memory, check_rank};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, drive, steps};
use dyad_kernels::params::positive;
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use serde::{Deserialize, Serialize};

fn default_rank() -> usize {
    10
}
fn default_eta() -> f64 {
    0.1
}
fn default_std() -> f64 {
    1.0
}

/// Parameters of naive PSD gradient descent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NaivePsdGdConfig {
    /// Rank `k` (10).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Fixed memory budget, features × rank (LORETA spec §5.1: 500,000): when set, the rank
    /// is `memory / d` on `d` features, rounded down, and `rank` is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<usize>,
    /// Step size `eta` (0.1; chosen by CV).
    #[serde(default = "default_eta")]
    pub eta: f64,
    /// Initialisation (`identity` or `gaussian`).
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1).
    #[serde(default = "default_std")]
    pub init_std: f64,
}

impl Default for NaivePsdGdConfig {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            memory: None,
            eta: default_eta(),
            init: Init::Identity,
            init_std: default_std(),
        }
    }
}

impl Checked for NaivePsdGdConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_factored(self.rank, self.init, self.init_std)?;
        check_memory(self.memory)?;
        positive("eta", self.eta)
    }
}

/// One step on the triplet `(q, g = p+ - p-)`; returns the loss before it.
pub fn naive_psd_step(
    model: &mut LowRankModel,
    q: (&[usize], &[f64]),
    g: (&[usize], &[f64]),
    eta: f64,
    uq: &mut Vec<f64>,
    ug: &mut Vec<f64>,
) -> Result<f64, AlgoError> {
    let k = model.rank();
    uq.resize(k, 0.0);
    ug.resize(k, 0.0);
    LowRankModel::project(model.a().view(), q.0, q.1, uq);
    LowRankModel::project(model.a().view(), g.0, g.1, ug);
    let loss = triplet_hinge(dyad_kernels::linalg::dot(uq, ug));
    if !loss.is_finite() {
        return Err(AlgoError::Numerical(format!(
            "naive PSD GD: the model diverged (loss {loss})"
        )));
    }
    if loss > 0.0 {
        let a = model.a_mut();
        LowRankModel::add_outer_rows(a, q.0, q.1, eta, ug);
        LowRankModel::add_outer_rows(a, g.0, g.1, eta, uq);
    }
    Ok(loss)
}

impl Ranker for NaivePsdGdConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let rank = budget_rank("naive PSD GD", self.rank, self.memory, train.dim())?;
        check_rank("naive PSD GD", self.memory, rank, train.dim(), train.dim())?;
        let sampler = TripletSampler::new(train)?;
        let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
        struct State<'r> {
            model: LowRankModel,
            diff: SparseVec,
            uq: Vec<f64>,
            ug: Vec<f64>,
            rng: &'r mut Rng,
        }
        let step = |s: &mut State<'_>, _: u64| {
            let tr = sampler.sample(s.rng);
            let q = row(tr.query);
            s.diff.set_difference(row(tr.positive), row(tr.negative));
            naive_psd_step(
                &mut s.model,
                (q.indices(), q.data()),
                (&s.diff.indices, &s.diff.values),
                self.eta,
                &mut s.uq,
                &mut s.ug,
            )?;
            Ok::<_, AlgoError>(Flow::Continue)
        };
        let init = InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: None,
        };
        drive(schedule, obs, || {
            let (y, _) = init.triplet_factors(train, &sampler, rank, rng)?;
            let state = State {
                model: LowRankModel::symmetric(y),
                diff: SparseVec::default(),
                uq: Vec::new(),
                ug: Vec::new(),
                rng,
            };
            Ok(steps(state, step, |s: &State<'_>| -> &dyn Scorer {
                &s.model
            }))
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The factor `Y`, `d x k`.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        crate::factor_memory(self.rank, self.memory, dim, 1)
    }

    fn statistics(&self) -> &'static [&'static str] {
        crate::model::LowRankModel::STATISTICS
    }
}

/// The `naive-psd-gd` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "naive-psd-gd",
    label: "naive PSD GD",
    description: "gradient descent on the factor of W = A A^T (spec §4 B2, [JMLR] only)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<NaivePsdGdConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, nuisance_data};
    use ndarray::{Array1, Array2, Axis};

    #[test]
    fn step_is_the_gradient_step_of_the_symmetric_model() {
        let d = 6;
        let a = Array2::from_shape_fn((d, 2), |(i, j)| ((i * 3 + j) as f64 * 0.41).sin() * 0.4);
        let q = SparseVec::from_sorted(&[0, 2], &[0.6, 0.8]);
        let g = SparseVec::from_sorted(&[2, 5], &[-0.5, 0.7]);
        let mut model = LowRankModel::symmetric(a.clone());
        let eta = 0.3;
        naive_psd_step(
            &mut model,
            (&q.indices, &q.values),
            (&g.indices, &g.values),
            eta,
            &mut Vec::new(),
            &mut Vec::new(),
        )
        .unwrap();
        let (qd, gd) = (Array1::from(q.to_dense(d)), Array1::from(g.to_dense(d)));
        let outer = |x: &Array1<f64>, y: &Array1<f64>| {
            x.view()
                .insert_axis(Axis(1))
                .dot(&y.view().insert_axis(Axis(0)))
        };
        let grad = (&outer(&qd, &gd) + &outer(&gd, &qd)).dot(&a);
        let want = &a + &(grad * eta);
        assert!((model.a() - &want).iter().all(|v| v.abs() < 1e-12));
        assert!(model.is_symmetric());
    }

    #[test]
    fn learns_the_nuisance_problem() {
        let (train, test) = (nuisance_data(60, 10, 1), nuisance_data(40, 10, 2));
        let mut obs = Record::new(test);
        NaivePsdGdConfig {
            rank: 4,
            ..Default::default()
        }
        .fit(
            &train,
            &Schedule::new(vec![0, 3000]),
            &mut seeded(3),
            &mut obs,
        )
        .unwrap();
        let (first, last) = (obs.seen[0].1, obs.seen[1].1);
        assert!(first < 0.85 && last > 0.95, "mAP {first} -> {last}");
        for (bad, param) in [
            (
                NaivePsdGdConfig {
                    init: Init::Zero,
                    ..Default::default()
                },
                "init",
            ),
            (
                NaivePsdGdConfig {
                    eta: -1.0,
                    ..Default::default()
                },
                "eta",
            ),
        ] {
            assert_eq!(bad.check().unwrap_err().param, param);
        }
    }
}
