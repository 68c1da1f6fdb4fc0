//! Naive gradient descent on the factors (LORETA spec §4, B1; "similar to Bai et al. 2009 /
//! SSI"): `W = A B^T` and, on a triplet with loss `l = [1 - q^T A B^T (p+ - p-)]_+ > 0`,
//!
//! ```text
//! A <- A + eta q (B^T (p+ - p-))^T,    B <- B + eta (p+ - p-) (A^T q)^T
//! ```
//!
//! simultaneously (both from the old `A`, `B`; \[NIPS\] prints `B_new = A + ...`, a typo, spec
//! §9.5). The papers report it "very unstable, often causing the models to diverge" and do not
//! plot it; it is here for completeness and as the direction rule of PA v2
//! ([`crate::baselines::pa_v2`]). A step that produces non-finite factors is an
//! [`AlgoError::Numerical`] (the divergence the papers describe), not a panic.
//! Cost per step: `O((nnz q + nnz(p+ - p-)) k)`.

use crate::losses::triplet_hinge;
use crate::model::LowRankModel;
use crate::{Init, InitSpec, budget_rank, check_memory, check_rank};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, drive, steps};
use dyad_kernels::params::{at_least_one, positive};
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

/// Parameters of naive factored gradient descent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactoredGdConfig {
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
    /// Initialisation, as LORETA's (`identity`; `zero` is rejected: `A = B = 0` is a fixed
    /// point of the update).
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1).
    #[serde(default = "default_std")]
    pub init_std: f64,
}

impl Default for FactoredGdConfig {
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

/// The checks shared by the factored baselines with a `rank`, an `init` and an `init_std`.
pub(crate) fn check_factored(rank: usize, init: Init, init_std: f64) -> Result<(), ParamError> {
    at_least_one("rank", rank as u64)?;
    if init == Init::Zero {
        return Err(ParamError::new(
            "init",
            "\"zero\" is not supported here (use identity or gaussian)",
        ));
    }
    positive("init_std", init_std)
}

impl Checked for FactoredGdConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_factored(self.rank, self.init, self.init_std)?;
        check_memory(self.memory)?;
        positive("eta", self.eta)
    }
}

/// Scratch space of [`naive_factored_step`].
#[derive(Debug, Default)]
pub struct FactoredScratch {
    ua: Vec<f64>,
    ub: Vec<f64>,
}

/// The loss of a triplet `(q, g2 = p+ - p-)` and the simultaneous step
/// `A += tau q (B^T g2)^T`, `B += tau g2 (A^T q)^T` with `tau = step(loss, |q|^2 |g2|^2)`
/// (no step when the loss is zero). Returns the loss before the step.
pub fn naive_factored_step(
    model: &mut LowRankModel,
    q: (&[usize], &[f64]),
    g2: (&[usize], &[f64]),
    s: &mut FactoredScratch,
    step: impl Fn(f64, f64) -> f64,
) -> Result<f64, AlgoError> {
    let k = model.rank();
    s.ua.resize(k, 0.0);
    s.ub.resize(k, 0.0);
    LowRankModel::project(model.a().view(), q.0, q.1, &mut s.ua);
    LowRankModel::project(model.b().view(), g2.0, g2.1, &mut s.ub);
    let loss = triplet_hinge(dyad_kernels::linalg::dot(&s.ua, &s.ub));
    if !loss.is_finite() {
        return Err(AlgoError::Numerical(format!(
            "naive factored step: the model diverged (loss {loss})"
        )));
    }
    if loss > 0.0 {
        let tau = step(
            loss,
            dyad_core::sparse::norm_sq(q.1) * dyad_core::sparse::norm_sq(g2.1),
        );
        if tau > 0.0 {
            let (a, b) = model.factors_mut();
            LowRankModel::add_outer_rows(a, q.0, q.1, tau, &s.ub);
            LowRankModel::add_outer_rows(b, g2.0, g2.1, tau, &s.ua);
        }
    }
    Ok(loss)
}

/// The triplet loop of the naive factored learners (GD and PA v2).
pub(crate) fn fit_naive_factored(
    train: &LabeledSet,
    schedule: &Schedule,
    rng: &mut Rng,
    obs: &mut dyn Observer,
    init: InitSpec,
    (rank, memory): (usize, Option<usize>),
    step_rule: impl Fn(f64, f64) -> f64 + Copy,
) -> Result<(), AlgoError> {
    check_rank(
        "the naive factored learner",
        memory,
        rank,
        train.dim(),
        train.dim(),
    )?;
    let sampler = TripletSampler::new(train)?;
    let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
    struct State<'r> {
        model: LowRankModel,
        diff: SparseVec,
        scratch: FactoredScratch,
        rng: &'r mut Rng,
    }
    let step = |s: &mut State<'_>, _: u64| {
        let tr = sampler.sample(s.rng);
        let q = row(tr.query);
        s.diff.set_difference(row(tr.positive), row(tr.negative));
        naive_factored_step(
            &mut s.model,
            (q.indices(), q.data()),
            (&s.diff.indices, &s.diff.values),
            &mut s.scratch,
            step_rule,
        )?;
        Ok::<_, AlgoError>(Flow::Continue)
    };
    drive(schedule, obs, || {
        let (a, b) = init.triplet_factors(train, &sampler, rank, rng)?;
        let state = State {
            model: LowRankModel::new(a, b),
            diff: SparseVec::default(),
            scratch: FactoredScratch::default(),
            rng,
        };
        Ok(steps(state, step, |s: &State<'_>| -> &dyn Scorer {
            &s.model
        }))
    })?;
    Ok(())
}

impl Ranker for FactoredGdConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let eta = self.eta;
        let init = InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: None,
        };
        let rank = budget_rank("factored GD", self.rank, self.memory, train.dim())?;
        fit_naive_factored(
            train,
            schedule,
            rng,
            obs,
            init,
            (rank, self.memory),
            move |_, _| eta,
        )
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The factors `A`, `B`, `d x k` each.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        crate::factor_memory(self.rank, self.memory, dim, 2)
    }

    fn statistics(&self) -> &'static [&'static str] {
        crate::model::LowRankModel::STATISTICS
    }
}

/// The `factored-gd` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "factored-gd",
    label: "naive factored GD",
    description: "simultaneous gradient steps on A and B of W = A B^T (spec §4 B1; the papers found it unstable and did not plot it)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<FactoredGdConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, nuisance_data};
    use ndarray::{Array1, Array2, Axis};

    #[test]
    fn step_matches_the_dense_closed_form() {
        let d = 7;
        let a = Array2::from_shape_fn((d, 2), |(i, j)| ((i + 2 * j) as f64 * 0.37).sin() * 0.3);
        let b = Array2::from_shape_fn((d, 2), |(i, j)| ((3 * i + j) as f64 * 0.21).cos() * 0.3);
        let q = SparseVec::from_sorted(&[1, 4], &[0.7, -0.4]);
        let g = SparseVec::from_sorted(&[0, 4, 6], &[0.3, 0.5, -0.8]);
        let mut model = LowRankModel::new(a.clone(), b.clone());
        let eta = 0.25;
        let loss = naive_factored_step(
            &mut model,
            (&q.indices, &q.values),
            (&g.indices, &g.values),
            &mut FactoredScratch::default(),
            |_, _| eta,
        )
        .unwrap();
        let (qd, gd) = (Array1::from(q.to_dense(d)), Array1::from(g.to_dense(d)));
        assert!((loss - (1.0 - qd.dot(&a.dot(&b.t()).dot(&gd)))).abs() < 1e-12);
        let outer = |x: &Array1<f64>, y: Array1<f64>| {
            x.view()
                .insert_axis(Axis(1))
                .dot(&y.view().insert_axis(Axis(0)))
        };
        let a1 = &a + &(outer(&qd, b.t().dot(&gd)) * eta);
        let b1 = &b + &(outer(&gd, a.t().dot(&qd)) * eta);
        assert!((model.a() - &a1).iter().all(|v| v.abs() < 1e-12));
        assert!((model.b() - &b1).iter().all(|v| v.abs() < 1e-12));
    }

    #[test]
    fn learns_with_a_small_step_and_reports_divergence_as_an_error() {
        let (train, test) = (nuisance_data(60, 10, 1), nuisance_data(40, 10, 2));
        let mut obs = Record::new(test);
        FactoredGdConfig {
            rank: 4,
            eta: 0.05,
            ..Default::default()
        }
        .fit(
            &train,
            &Schedule::new(vec![0, 3000]),
            &mut seeded(3),
            &mut obs,
        )
        .unwrap();
        assert!(
            obs.seen[1].1 > 0.9,
            "mAP {} -> {}",
            obs.seen[0].1,
            obs.seen[1].1
        );
        // A model that has blown up (infinite factors, the papers' divergence) is an error,
        // not a panic or NaN scores.
        let mut blown = LowRankModel::new(
            Array2::from_elem((4, 2), f64::INFINITY),
            Array2::from_elem((4, 2), 1.0),
        );
        let err = naive_factored_step(
            &mut blown,
            (&[0], &[1.0]),
            (&[1, 2], &[1.0, -1.0]),
            &mut FactoredScratch::default(),
            |_, _| 1.0,
        );
        assert!(matches!(err, Err(AlgoError::Numerical(_))), "{err:?}");
        for (bad, param) in [
            (
                FactoredGdConfig {
                    eta: 0.0,
                    ..Default::default()
                },
                "eta",
            ),
            (
                FactoredGdConfig {
                    init: Init::Zero,
                    ..Default::default()
                },
                "init",
            ),
            (
                FactoredGdConfig {
                    rank: 0,
                    ..Default::default()
                },
                "rank",
            ),
            (
                FactoredGdConfig {
                    memory: Some(0),
                    ..Default::default()
                },
                "memory",
            ),
            (
                FactoredGdConfig {
                    init_std: f64::NAN,
                    ..Default::default()
                },
                "init_std",
            ),
        ] {
            assert_eq!(bad.check().unwrap_err().param, param);
            // Fit re-checks: the same error, not a panic.
            let err = bad.fit(
                &nuisance_data(10, 4, 1),
                &Schedule::last_only(5),
                &mut dyad_core::seeded(1),
                &mut dyad_kernels::fixtures::Scores(nuisance_data(10, 4, 1), Vec::new()),
            );
            assert!(
                matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == param),
                "{err:?}"
            );
        }
    }
}
