//! Iterative Passive-Aggressive on the factors (LORETA spec §4, B3): the main low-rank
//! competitor of LORETA in every figure (20NG Figs. 2b/3c, ImageNet Figs. 2c/4/5).
//!
//! # The update
//!
//! `W = A B^T` with the same factors, ranks and initialisations as LORETA; "iteratively
//! optimize over A given a fixed B and vice versa" (\[JMLR\] 7.1.4), each half a PA-I step on
//! the loss linearised in that factor. For a descent direction `g1 g2^T` of a loss `l > 0`:
//!
//! ```text
//! tau_A = min(C, l / (|g1|^2 |B^T g2|^2)),   A <- A + tau_A g1 (B^T g2)^T
//! (recompute l at the new A; stop if l = 0)
//! tau_B = min(C, l / (|g2|^2 |A^T g1|^2)),   B <- B + tau_B g2 (A^T g1)^T
//! ```
//!
//! (the \[JMLR\] step sizes; \[NIPS\] prints `max` for `min`, a typo, spec §9.4). A half-step
//! whose denominator is zero is skipped.
//!
//! * **Triplets** (20NG, [`dyad_kernels::Ranker`]): `g1 = q`, `g2 = p+ - p-`, `l = [1 - q^T W (p+ -
//!   p-)]_+`. The loss after the A-step is `1 - (A^T q + tau_A |q|^2 B^T g2) . B^T g2`, exact
//!   and `O(k)`.
//! * **Labels** (ImageNet, [`LabelRanker`]): `g1 = u` (the indicator of §3.2, `|u|^2 = d +
//!   d^2`), `g2 = p`, `l` the multilabel hinge. After the A-step the scores, `ybar`, `u` and
//!   `l` are recomputed at the new `A` (`O(Lk)`), and the B-step uses them.
//!
//! \[AMBIG\] resolved: **sequential** half-steps (spec §4 B3 \[CHOICE\]; simultaneous steps are
//! [`crate::baselines::pa_v2`]'s); `C` defaults to 0.1 (the OASIS papers' `C`; chosen by CV
//! in the spec); initialisation as LORETA's (spec §2.8 \[CHOICE\]: the papers do not say),
//! with the same `Init` options. Cost per step: `O((nnz g1 + nnz g2) k)` for triplets, plus
//! the `O(Lk)` scoring for labels: the factors are touched only at the gradient's support.

use crate::labels::{draw_and_hinge, label_problem};
use crate::losses::{multilabel_hinge, relevant_labels, triplet_hinge};
use crate::model::LowRankModel;
use crate::{Init, InitSpec, LabelRanker, LabelScorer, budget_rank, check_memory, check_rank};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, drive, steps};
use dyad_kernels::params::{at_least_one, positive};
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use serde::{Deserialize, Serialize};

fn default_rank() -> usize {
    10
}
fn default_c() -> f64 {
    0.1
}
fn default_std() -> f64 {
    1.0
}

/// Parameters of iterative PA on the factors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IterativePaConfig {
    /// Rank `k` (10).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Fixed memory budget, features × rank (LORETA spec §5.1: 500,000): when set, the rank
    /// is `memory / d` on `d` features, rounded down, and `rank` is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<usize>,
    /// PA-I aggressiveness `C` (0.1; chosen by CV).
    #[serde(default = "default_c")]
    pub c: f64,
    /// Initialisation, as LORETA's (`identity`).
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1).
    #[serde(default = "default_std")]
    pub init_std: f64,
    /// Subgradients summed by the zero initialisation (none: `2k`).
    #[serde(default)]
    pub zero_init_updates: Option<usize>,
}

impl Default for IterativePaConfig {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            memory: None,
            c: default_c(),
            init: Init::Identity,
            init_std: default_std(),
            zero_init_updates: None,
        }
    }
}

impl IterativePaConfig {
    fn init_spec(&self) -> InitSpec {
        InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: self.zero_init_updates,
        }
    }
}

impl Checked for IterativePaConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_memory(self.memory)?;
        at_least_one("rank", self.rank as u64)?;
        positive("c", self.c)?;
        self.init_spec().check(self.rank)
    }
}

/// `min(C, l / denom)`, or 0 for a zero denominator.
pub(crate) fn pa_tau(c: f64, loss: f64, denom: f64) -> f64 {
    if denom > 0.0 {
        c.min(loss / denom)
    } else {
        0.0
    }
}

/// One sequential PA step on a triplet: `(q, g2 = p+ - p-)`, `model` updated in place.
/// Returns the loss before the step.
pub fn iterative_pa_triplet_step(
    model: &mut LowRankModel,
    q: (&[usize], &[f64]),
    g2: (&[usize], &[f64]),
    c: f64,
    ua: &mut Vec<f64>,
    ub: &mut Vec<f64>,
) -> f64 {
    let k = model.rank();
    ua.resize(k, 0.0);
    ub.resize(k, 0.0);
    LowRankModel::project(model.a().view(), q.0, q.1, ua);
    LowRankModel::project(model.b().view(), g2.0, g2.1, ub);
    let loss = triplet_hinge(dyad_kernels::linalg::dot(ua, ub));
    if loss.is_nan() || loss <= 0.0 {
        return loss;
    }
    let (qq, gg) = (
        dyad_core::sparse::norm_sq(q.1),
        dyad_core::sparse::norm_sq(g2.1),
    );
    let (a, b) = model.factors_mut();
    let tau_a = pa_tau(c, loss, qq * dyad_kernels::linalg::dot(ub, ub));
    if tau_a > 0.0 {
        LowRankModel::add_outer_rows(a, q.0, q.1, tau_a, ub);
        dyad_kernels::linalg::axpy(ua, tau_a * qq, ub);
    }
    let after = triplet_hinge(dyad_kernels::linalg::dot(ua, ub));
    let tau_b = pa_tau(c, after, gg * dyad_kernels::linalg::dot(ua, ua));
    if after > 0.0 && tau_b > 0.0 {
        LowRankModel::add_outer_rows(b, g2.0, g2.1, tau_b, ua);
    }
    loss
}

impl Ranker for IterativePaConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let rank = budget_rank("iterative PA", self.rank, self.memory, train.dim())?;
        check_rank("iterative PA", self.memory, rank, train.dim(), train.dim())?;
        let sampler = TripletSampler::new(train)?;
        let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
        struct State<'r> {
            model: LowRankModel,
            diff: SparseVec,
            ua: Vec<f64>,
            ub: Vec<f64>,
            rng: &'r mut Rng,
        }
        let step = |s: &mut State<'_>, t: u64| {
            let tr = sampler.sample(s.rng);
            let q = row(tr.query);
            s.diff.set_difference(row(tr.positive), row(tr.negative));
            let loss = iterative_pa_triplet_step(
                &mut s.model,
                (q.indices(), q.data()),
                (&s.diff.indices, &s.diff.values),
                self.c,
                &mut s.ua,
                &mut s.ub,
            );
            if !loss.is_finite() {
                return Err(AlgoError::Numerical(format!(
                    "iterative PA: non-finite loss at step {t}"
                )));
            }
            Ok(Flow::Continue)
        };
        drive(schedule, obs, || {
            let (a, b) = self
                .init_spec()
                .triplet_factors(train, &sampler, rank, rng)?;
            let state = State {
                model: LowRankModel::new(a, b),
                diff: SparseVec::default(),
                ua: Vec::new(),
                ub: Vec::new(),
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

    /// The factors `A`, `B`, `d x k` each.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        crate::factor_memory(self.rank, self.memory, dim, 2)
    }

    fn statistics(&self) -> &'static [&'static str] {
        crate::model::LowRankModel::STATISTICS
    }
}

impl LabelRanker for IterativePaConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<dyn LabelScorer>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let (n_labels, rows) = label_problem(train)?;
        let rank = budget_rank("iterative PA", self.rank, self.memory, train.dim())?;
        check_rank("iterative PA", self.memory, rank, n_labels, train.dim())?;
        struct State<'r> {
            model: LowRankModel,
            scores: Vec<f64>,
            u: SparseVec,
            cb: Vec<f64>,
            ca: Vec<f64>,
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
                false,
            )?;
            let Some((i, p, loss)) = drawn else {
                return Ok(Flow::Continue);
            };
            let k = s.model.rank();
            s.cb.resize(k, 0.0);
            s.ca.resize(k, 0.0);
            // A-step: A += tau_A u (B^T p)^T.
            LowRankModel::project(s.model.b().view(), p.indices(), p.data(), &mut s.cb);
            let tau_a = pa_tau(
                self.c,
                loss,
                s.u.norm_sq() * dyad_kernels::linalg::dot(&s.cb, &s.cb),
            );
            if tau_a > 0.0 {
                let (a, _) = s.model.factors_mut();
                LowRankModel::add_outer_rows(a, &s.u.indices, &s.u.values, tau_a, &s.cb);
            }
            // B-step at the new A: recompute the scores, ybar, u and the loss.
            let a = s.model.a().as_slice().expect("standard layout");
            for (o, arow) in s.scores.iter_mut().zip(a.chunks_exact(k)) {
                *o = dyad_kernels::linalg::dot(arow, &s.cb);
            }
            let Some(h) = multilabel_hinge(&s.scores, relevant_labels(train, i), None, &mut s.u)
            else {
                return Ok(Flow::Continue);
            };
            if h.loss > 0.0 {
                LowRankModel::project(s.model.a().view(), &s.u.indices, &s.u.values, &mut s.ca);
                let pp = dyad_core::sparse::norm_sq(p.data());
                let tau_b = pa_tau(self.c, h.loss, pp * dyad_kernels::linalg::dot(&s.ca, &s.ca));
                if tau_b > 0.0 {
                    let (_, b) = s.model.factors_mut();
                    LowRankModel::add_outer_rows(b, p.indices(), p.data(), tau_b, &s.ca);
                }
            }
            Ok::<_, AlgoError>(Flow::Continue)
        };
        drive(schedule, obs, || {
            let (a, b) = self
                .init_spec()
                .label_factors(train, &rows, n_labels, rank, rng)?;
            let state = State {
                model: LowRankModel::new(a, b),
                scores: vec![0.0; n_labels],
                u: SparseVec::default(),
                cb: Vec::new(),
                ca: Vec::new(),
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

/// The `iterative-pa` entry of the solver list.
pub const SOLVER_ITERATIVE_PA: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "iterative-pa",
    label: "iterative PA",
    description: "PA-I alternating over the factors A and B (spec §4 B3, sequential)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<IterativePaConfig>,
};

/// The `iterative-pa-labels` entry of the solver list.
pub const SOLVER_ITERATIVE_PA_LABELS: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "iterative-pa-labels",
    label: "iterative PA",
    description: "iterative PA on the multilabel ranking hinge (spec §4 B3, ImageNet)",
    family: dyad_kernels::solver::LABEL_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::label_ranker::<IterativePaConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::LabelRecord;
    use dyad_core::observe::NullObserver;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores, multilabel_data, nuisance_data};
    use ndarray::{Array1, Array2, Axis};
    use rand::Rng as _;

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn triplet_step_matches_the_dense_closed_form() {
        let mut rng = seeded(1);
        let (d, k, c) = (8, 3, 0.5);
        for _ in 0..20 {
            let a = Array2::from_shape_fn((d, k), |_| rng.random_range(-0.3..0.3));
            let b = Array2::from_shape_fn((d, k), |_| rng.random_range(-0.3..0.3));
            let q = SparseVec::from_sorted(&[0, 3, 5], &[0.5, -0.2, 0.8]);
            let g = SparseVec::from_sorted(&[1, 3, 7], &[0.4, 0.6, -0.9]);
            let mut model = LowRankModel::new(a.clone(), b.clone());
            let loss = iterative_pa_triplet_step(
                &mut model,
                (&q.indices, &q.values),
                (&g.indices, &g.values),
                c,
                &mut Vec::new(),
                &mut Vec::new(),
            );
            // Dense reference of the two sequential half-steps.
            let (qd, gd) = (Array1::from(q.to_dense(d)), Array1::from(g.to_dense(d)));
            let l0 = (1.0 - qd.dot(&a.dot(&b.t()).dot(&gd))).max(0.0);
            assert!((loss - l0).abs() < 1e-12);
            let btg = b.t().dot(&gd);
            let ta = c.min(l0 / (qd.dot(&qd) * btg.dot(&btg)));
            let a1 = &a
                + &(qd
                    .view()
                    .insert_axis(Axis(1))
                    .dot(&btg.view().insert_axis(Axis(0)))
                    * ta);
            let l1 = (1.0 - qd.dot(&a1.dot(&b.t()).dot(&gd))).max(0.0);
            let atq = a1.t().dot(&qd);
            let tb = if l1 > 0.0 {
                c.min(l1 / (gd.dot(&gd) * atq.dot(&atq)))
            } else {
                0.0
            };
            let b1 = &b
                + &(gd
                    .view()
                    .insert_axis(Axis(1))
                    .dot(&atq.view().insert_axis(Axis(0)))
                    * tb);
            assert!(max_abs(&(model.a() - &a1)) < 1e-12);
            assert!(max_abs(&(model.b() - &b1)) < 1e-12);
        }
    }

    #[test]
    fn learns_triplets_and_labels_deterministically() {
        let (train, test) = (nuisance_data(60, 10, 1), nuisance_data(40, 10, 2));
        let mut obs = Record::new(test);
        let cfg = IterativePaConfig {
            rank: 4,
            ..Default::default()
        };
        Ranker::fit(
            &cfg,
            &train,
            &Schedule::new(vec![0, 3000]),
            &mut seeded(3),
            &mut obs,
        )
        .unwrap();
        let (first, last) = (obs.seen[0].1, obs.seen[1].1);
        assert!(first < 0.85 && last > 0.95, "mAP {first} -> {last}");
        let run = |seed| {
            let mut obs = Scores(train.clone(), Vec::new());
            Ranker::fit(
                &cfg,
                &train,
                &Schedule::last_only(300),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            obs.1
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));

        let (ltrain, ltest) = (multilabel_data(240, 40, 1), multilabel_data(120, 40, 2));
        let mut obs = LabelRecord::new(ltest);
        LabelRanker::fit(
            &cfg,
            &ltrain,
            &Schedule::new(vec![0, 5000]),
            &mut seeded(4),
            &mut obs,
        )
        .unwrap();
        let m = obs.maps();
        assert!(m[1] > 0.9 && m[1] > m[0] + 0.2, "{m:?}");
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let train = nuisance_data(10, 2, 1);
        for (cfg, param) in [
            (
                IterativePaConfig {
                    c: 0.0,
                    ..Default::default()
                },
                "c",
            ),
            (
                IterativePaConfig {
                    rank: 0,
                    ..Default::default()
                },
                "rank",
            ),
            (
                IterativePaConfig {
                    zero_init_updates: Some(1),
                    rank: 2,
                    ..Default::default()
                },
                "zero_init_updates",
            ),
            // Valid on its own, too high for 2 features: named at fit time.
            (
                IterativePaConfig {
                    rank: 7,
                    ..Default::default()
                },
                "rank",
            ),
            (
                IterativePaConfig {
                    memory: Some(1),
                    ..Default::default()
                },
                "memory",
            ),
        ] {
            let err = Ranker::fit(
                &cfg,
                &train,
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut NullObserver,
            );
            assert!(
                matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == param),
                "{cfg:?}: {err:?}"
            );
        }
        assert_eq!(
            IterativePaConfig {
                c: 0.0,
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "c"
        );
    }
}
