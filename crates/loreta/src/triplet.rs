//! LORETA-1 and LORETA-1-PSD on the triplet ranking hinge (spec §3.1, the 20 Newsgroups
//! experiments): the bilinear similarity `S(q, p) = q^T W p`, `W = A B^T` (`d x d`, rank `k`)
//! or `W = Y Y^T`, learned from triplets `(q, p+, p-)` with the loss
//! `[1 - q^T W p+ + q^T W p-]_+`, whose descent direction is `eta q (p+ - p-)^T`: LORETA-1
//! gets `g1 = eta q`, `g2 = p+ - p-` (both sparse). One step of the [`Schedule`] is one
//! sampled triplet; its loss costs `O((nnz q + nnz(p+ - p-)) k)` and, when positive, the
//! update `O(dk)`.

use super::gram::{DEFAULT_REFRESH_EVERY, Loreta1Gram};
use super::loreta1::{Loreta1, ScaledSparse};
use super::losses::triplet_hinge;
use super::psd::Loreta1Psd;
use super::psd_gram::Loreta1PsdGram;
use super::{Init, InitSpec, Safeguards, budget_rank, check_memory, check_rank, step_size};
use dyad_core::sampling::TripletSampler;
use dyad_core::{
    Control, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, Stepper, drive,
};
use dyad_kernels::params::{at_least_one, if_given, positive};
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use serde::{Deserialize, Serialize};

pub(crate) fn default_rank() -> usize {
    10
}
pub(crate) fn default_eta() -> f64 {
    0.1
}
pub(crate) fn default_std() -> f64 {
    1.0
}

/// Parameters of LORETA-1 on triplets (spec §2.3, §3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoretaConfig {
    /// Rank `k` of `W` (10; the spec's grid is 10, 20, 30, 40, 50, 75, 100).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Fixed memory budget, features × rank (LORETA spec §5.1: 500,000): when set, the rank
    /// is `memory / d` on `d` features, rounded down, and `rank` is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<usize>,
    /// Step size `eta` (0.1; chosen by the harness on a hold-out, spec §2.9).
    #[serde(default = "default_eta")]
    pub eta: f64,
    /// Optional decay `eta_t = eta / (1 + (t-1)/eta_t0)` (none: constant).
    #[serde(default)]
    pub eta_t0: Option<f64>,
    /// Initialisation (`identity` = the truncated identity, spec §2.8, the 20NG choice).
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1, the papers' `N(0, 1)`).
    #[serde(default = "default_std")]
    pub init_std: f64,
    /// Subgradients summed by the zero initialisation (none: `2k`).
    #[serde(default)]
    pub zero_init_updates: Option<usize>,
    #[serde(default)]
    pub safeguards: Safeguards,
    /// How the pseudo-inverses are kept: `carried` (Algorithm 4 with Algorithm 7, `O((n+m)k)`
    /// per step, the default) or `gram` (the same iterates with `A^+ = (A^T A)^{-1} A^T`
    /// implicit, `O((nnz g1 + nnz g2) k + k^2)` per step: [`super::gram`]).
    #[serde(default, skip_serializing_if = "is_carried")]
    pub form: Form,
}

/// The two implementations of one LORETA-1 step (see [`LoretaConfig::form`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    #[default]
    Carried,
    Gram,
}

fn is_carried(form: &Form) -> bool {
    *form == Form::Carried
}

impl Default for LoretaConfig {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            memory: None,
            eta: default_eta(),
            eta_t0: None,
            init: Init::Identity,
            init_std: default_std(),
            zero_init_updates: None,
            safeguards: Safeguards::default(),
            form: Form::Carried,
        }
    }
}

/// The checks LORETA's configurations share: `rank`, `eta`, `eta_t0` and the
/// initialisation's.
pub(crate) fn check_common(
    rank: usize,
    eta: f64,
    eta_t0: Option<f64>,
    init: &InitSpec,
) -> Result<(), ParamError> {
    at_least_one("rank", rank as u64)?;
    positive("eta", eta)?;
    if_given(eta_t0, |t0| positive("eta_t0", t0))?;
    init.check(rank)
}

impl LoretaConfig {
    fn init_spec(&self) -> InitSpec {
        InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: self.zero_init_updates,
        }
    }
}

impl Checked for LoretaConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_memory(self.memory)?;
        check_common(self.rank, self.eta, self.eta_t0, &self.init_spec())?;
        self.safeguards.check().map_err(|e| e.under("safeguards"))
    }
}

/// What the two states share for the triplet loop.
trait TripletState {
    /// `q^T W p` of the current model.
    fn score(&mut self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64;
    fn update(&mut self, g1: ScaledSparse<'_>, g2: ScaledSparse<'_>) -> Result<(), AlgoError>;
    fn safeguard(&mut self, s: &Safeguards, step: u64) -> Result<(), AlgoError>;
    /// The model with every step applied.
    fn scorer(&mut self) -> &(dyn Scorer + 'static);
}

/// Both forms of LORETA-1 share the loop's four operations under the same names.
macro_rules! loreta1_triplet_state {
    ($($state:ty),*) => {$(
        impl TripletState for $state {
            fn score(&mut self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
                self.bilinear(q, p)
            }
            fn update(
                &mut self,
                g1: ScaledSparse<'_>,
                g2: ScaledSparse<'_>,
            ) -> Result<(), AlgoError> {
                self.step(g1, g2).map(|_| ())
            }
            fn safeguard(&mut self, s: &Safeguards, step: u64) -> Result<(), AlgoError> {
                if s.check_due(step) {
                    self.check_pinvs(s.drift_tolerance)?;
                }
                if s.rebalance_due(step) {
                    self.rebalance()?;
                }
                Ok(())
            }
            fn scorer(&mut self) -> &(dyn Scorer + 'static) {
                self.model()
            }
        }
    )*};
}

loreta1_triplet_state!(Loreta1, Loreta1Gram);

/// Both forms of LORETA-1-PSD likewise; a symmetric model is balanced by construction, so
/// only the drift check applies.
macro_rules! psd_triplet_state {
    ($($state:ty),*) => {$(
        impl TripletState for $state {
            fn score(&mut self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
                self.bilinear(q, p)
            }
            fn update(
                &mut self,
                g1: ScaledSparse<'_>,
                g2: ScaledSparse<'_>,
            ) -> Result<(), AlgoError> {
                self.step(g1, g2).map(|_| ())
            }
            fn safeguard(&mut self, s: &Safeguards, step: u64) -> Result<(), AlgoError> {
                if s.check_due(step) {
                    self.check_pinvs(s.drift_tolerance)?;
                }
                Ok(())
            }
            fn scorer(&mut self) -> &(dyn Scorer + 'static) {
                self.model()
            }
        }
    )*};
}

psd_triplet_state!(Loreta1Psd, Loreta1PsdGram);

/// The training state of both triplet learners.
struct Run<'a, 'r, S> {
    train: &'a LabeledSet,
    sampler: TripletSampler,
    eta: f64,
    eta_t0: Option<f64>,
    safeguards: &'a Safeguards,
    state: S,
    diff: SparseVec,
    rng: &'r mut Rng,
}

impl<S: TripletState> Stepper for Run<'_, '_, S> {
    type Model = dyn Scorer;
    type Error = AlgoError;

    fn step(&mut self, t: u64) -> Result<Flow, AlgoError> {
        let row = |i: usize| self.train.x.outer_view(i).expect("sampled row in range");
        let tr = self.sampler.sample(self.rng);
        let q = row(tr.query);
        self.diff.set_difference(row(tr.positive), row(tr.negative));
        let margin = self.state.score(
            (q.indices(), q.data()),
            (&self.diff.indices, &self.diff.values),
        );
        let loss = triplet_hinge(margin);
        if !loss.is_finite() {
            return Err(AlgoError::Numerical(format!(
                "LORETA: non-finite loss {loss} at step {t}"
            )));
        }
        if loss > 0.0 {
            self.state.update(
                ScaledSparse::new(q.indices(), q.data(), step_size(self.eta, self.eta_t0, t)),
                ScaledSparse::new(&self.diff.indices, &self.diff.values, 1.0),
            )?;
        }
        self.state.safeguard(self.safeguards, t)?;
        Ok(Flow::Continue)
    }

    /// The model with every step applied (LORETA-1 flushes its deferred write: on the clock).
    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        Ok(show(self.state.scorer()))
    }
}

/// The triplet loop shared by LORETA-1 and LORETA-1-PSD.
#[allow(clippy::too_many_arguments)]
fn fit_triplets<S: TripletState>(
    train: &LabeledSet,
    schedule: &Schedule,
    rng: &mut Rng,
    obs: &mut dyn Observer,
    eta: f64,
    eta_t0: Option<f64>,
    safeguards: &Safeguards,
    build: impl FnOnce(&TripletSampler, &mut Rng) -> Result<S, AlgoError>,
) -> Result<(), AlgoError> {
    let sampler = TripletSampler::new(train)?;
    drive(schedule, obs, || {
        let state = build(&sampler, rng)?;
        Ok(Run {
            train,
            sampler,
            eta,
            eta_t0,
            safeguards,
            state,
            diff: SparseVec::default(),
            rng,
        })
    })?;
    Ok(())
}

impl Ranker for LoretaConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let rank = budget_rank("LORETA", self.rank, self.memory, train.dim())?;
        check_rank("LORETA", self.memory, rank, train.dim(), train.dim())?;
        let tol = self.safeguards.tolerances();
        let init = self.init_spec();
        let (eta, t0, guards) = (self.eta, self.eta_t0, &self.safeguards);
        match self.form {
            Form::Carried => fit_triplets(train, schedule, rng, obs, eta, t0, guards, |sa, rng| {
                let (a, b) = init.triplet_factors(train, sa, rank, rng)?;
                Loreta1::new(a, b, tol)
            }),
            Form::Gram => fit_triplets(train, schedule, rng, obs, eta, t0, guards, |sa, rng| {
                let (a, b) = init.triplet_factors(train, sa, rank, rng)?;
                Loreta1Gram::new(a, b, tol, DEFAULT_REFRESH_EVERY)
            }),
        }
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The factors `A`, `B` (`d x k` each) and the LORETA-1 step's pseudo-inverses, as much again.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        crate::factor_memory(self.rank, self.memory, dim, 4)
    }

    fn statistics(&self) -> &'static [&'static str] {
        crate::model::LowRankModel::STATISTICS
    }
}

/// Parameters of LORETA-1-PSD on triplets (spec §2.5, \[JMLR\] only): `W = Y Y^T`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoretaPsdConfig {
    /// Rank `k` (10).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Fixed memory budget, features × rank (LORETA spec §5.1: 500,000): when set, the rank
    /// is `memory / d` on `d` features, rounded down, and `rank` is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<usize>,
    /// Step size `eta` (0.1).
    #[serde(default = "default_eta")]
    pub eta: f64,
    /// Optional decay `eta_t = eta / (1 + (t-1)/eta_t0)`.
    #[serde(default)]
    pub eta_t0: Option<f64>,
    /// `identity` (`Y = [I_k; 0]`, the paper's) or `gaussian`; the zero-matrix scheme is
    /// not defined for the PSD model and is rejected.
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1).
    #[serde(default = "default_std")]
    pub init_std: f64,
    /// Only `check_every`, `drift_tolerance` and the tolerances apply (`rebalance_every` is
    /// meaningless for `Y Y^T` and must stay 0).
    #[serde(default)]
    pub safeguards: Safeguards,
    /// `carried` (Algorithm 5 carrying `Y^+`, `O(nk)` per step, the default) or `gram` (the
    /// same iterates with `Y^+ = (Y^T Y)^{-1} Y^T` implicit, `O((nnz g1 + nnz g2) k + k^2)`:
    /// [`super::psd_gram`]).
    #[serde(default, skip_serializing_if = "is_carried")]
    pub form: Form,
}

impl Default for LoretaPsdConfig {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            memory: None,
            eta: default_eta(),
            eta_t0: None,
            init: Init::Identity,
            init_std: default_std(),
            safeguards: Safeguards::default(),
            form: Form::Carried,
        }
    }
}

impl LoretaPsdConfig {
    fn init_spec(&self) -> InitSpec {
        InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: None,
        }
    }
}

impl Checked for LoretaPsdConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_memory(self.memory)?;
        check_common(self.rank, self.eta, self.eta_t0, &self.init_spec())?;
        if self.init == Init::Zero {
            return Err(ParamError::new(
                "init",
                "\"zero\" is not defined for the PSD model",
            ));
        }
        if self.safeguards.rebalance_every != 0 {
            return Err(ParamError::new(
                "safeguards.rebalance_every",
                "does not apply to W = Y Y^T (must stay 0)",
            ));
        }
        self.safeguards.check().map_err(|e| e.under("safeguards"))
    }
}

impl Ranker for LoretaPsdConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let rank = budget_rank("LORETA-PSD", self.rank, self.memory, train.dim())?;
        check_rank("LORETA-PSD", self.memory, rank, train.dim(), train.dim())?;
        let tol = self.safeguards.tolerances();
        let init = self.init_spec();
        let (eta, t0, guards) = (self.eta, self.eta_t0, &self.safeguards);
        match self.form {
            Form::Carried => fit_triplets(train, schedule, rng, obs, eta, t0, guards, |sa, rng| {
                let (y, _) = init.triplet_factors(train, sa, rank, rng)?;
                Loreta1Psd::new(y, tol)
            }),
            Form::Gram => fit_triplets(train, schedule, rng, obs, eta, t0, guards, |sa, rng| {
                let (y, _) = init.triplet_factors(train, sa, rank, rng)?;
                Loreta1PsdGram::with_defaults(y, tol)
            }),
        }
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The factor `Y` (`d x k`) and its pseudo-inverse.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        crate::factor_memory(self.rank, self.memory, dim, 2)
    }

    fn statistics(&self) -> &'static [&'static str] {
        crate::model::LowRankModel::STATISTICS
    }
}

/// The `loreta` entry of the solver list.
pub const SOLVER_LORETA: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "loreta",
    label: "LORETA",
    description: "LORETA-1: Riemannian SGD on rank-k matrices, W = A B^T, triplet ranking hinge (spec §2.3, §3.1); `memory` fixes features x rank",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<LoretaConfig>,
};

/// The `loreta-psd` entry of the solver list.
pub const SOLVER_LORETA_PSD: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "loreta-psd",
    label: "LORETA-PSD",
    description: "LORETA-1-PSD: W = Y Y^T of rank k (spec §2.5, [JMLR] Algorithm 5)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<LoretaPsdConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::observe::NullObserver;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores, nuisance_data};

    #[test]
    fn loreta_learns_to_drop_the_nuisance_and_reports_every_checkpoint() {
        // Rank 4 from [I_4; 0] covers the class and the nuisance dimensions: the start ranks
        // like the identity; learning must suppress dimensions 2 and 3.
        let (train, test) = (nuisance_data(60, 10, 1), nuisance_data(40, 10, 2));
        let schedule = Schedule::new(vec![0, 100, 1000, 3000]);
        for (name, learner) in [
            (
                "loreta",
                Box::new(LoretaConfig {
                    rank: 4,
                    ..Default::default()
                }) as Box<dyn Ranker>,
            ),
            (
                "loreta-psd",
                Box::new(LoretaPsdConfig {
                    rank: 4,
                    ..Default::default()
                }),
            ),
        ] {
            let mut obs = Record::new(test.clone());
            learner
                .fit(&train, &schedule, &mut seeded(3), &mut obs)
                .unwrap();
            let steps: Vec<u64> = obs.seen.iter().map(|(c, _)| c.step).collect();
            assert_eq!(steps, vec![0, 100, 1000, 3000]);
            assert!(obs.seen[3].0.last && !obs.seen[2].0.last);
            let (first, last) = (obs.seen[0].1, obs.seen[3].1);
            assert!(first < 0.85 && last > 0.97, "{name}: mAP {first} -> {last}");
        }
    }

    #[test]
    fn a_memory_budget_sets_the_rank_from_the_feature_count() {
        // d = 14 features: a budget of 60 gives rank 60 / 14 = 4 (rounded down) for every
        // learner of the family, whatever `rank` says; a budget below d is refused.
        struct Rank(Vec<f64>);
        impl Observer for Rank {
            fn checkpoint(&mut self, _: dyad_core::Checkpoint, m: &dyn Scorer) -> Control {
                let stats = m.statistics();
                let rank = stats.iter().find(|(n, _)| *n == "rank").expect("rank");
                self.0.push(rank.1);
                Control::Continue
            }
        }
        use crate::baselines::{
            iterative_pa::IterativePaConfig, naive_psd_gd::NaivePsdGdConfig, pa_v2::PaV2Config,
        };
        let train = nuisance_data(30, 10, 8);
        assert_eq!(train.dim(), 14);
        let learners: Vec<(&str, Box<dyn Ranker>)> = vec![
            (
                "loreta",
                Box::new(LoretaConfig {
                    rank: 2,
                    memory: Some(60),
                    ..Default::default()
                }),
            ),
            (
                "loreta-psd",
                Box::new(LoretaPsdConfig {
                    memory: Some(60),
                    ..Default::default()
                }),
            ),
            (
                "iterative-pa",
                Box::new(IterativePaConfig {
                    memory: Some(60),
                    ..Default::default()
                }),
            ),
            (
                "pa-v2",
                Box::new(PaV2Config {
                    memory: Some(60),
                    ..Default::default()
                }),
            ),
            (
                "naive-psd-gd",
                Box::new(NaivePsdGdConfig {
                    memory: Some(60),
                    ..Default::default()
                }),
            ),
        ];
        for (name, l) in learners {
            let mut obs = Rank(Vec::new());
            l.fit(
                &train,
                &Schedule::new(vec![0, 50]),
                &mut seeded(1),
                &mut obs,
            )
            .unwrap();
            assert_eq!(obs.0, vec![4.0, 4.0], "{name}");
        }
        let small = LoretaConfig {
            memory: Some(13),
            ..Default::default()
        };
        let e = small
            .fit(
                &train,
                &Schedule::last_only(5),
                &mut seeded(1),
                &mut NullObserver,
            )
            .unwrap_err();
        assert!(
            matches!(&e, AlgoError::InvalidParam(p) if p.param == "memory"),
            "{e}"
        );
        assert!(e.to_string().contains("got 13"), "{e}");
        let zero = LoretaConfig {
            memory: Some(0),
            ..Default::default()
        };
        assert_eq!(zero.check().unwrap_err().param, "memory");
    }

    #[test]
    fn every_initialisation_learns() {
        let (train, test) = (nuisance_data(60, 10, 4), nuisance_data(40, 10, 5));
        for init in [Init::Identity, Init::Zero, Init::Gaussian] {
            let mut obs = Record::new(test.clone());
            LoretaConfig {
                rank: 3,
                init,
                init_std: 0.3,
                ..Default::default()
            }
            .fit(
                &train,
                &Schedule::new(vec![0, 4000]),
                &mut seeded(6),
                &mut obs,
            )
            .unwrap();
            let last = obs.seen[1].1;
            assert!(last > 0.95, "{init:?}: mAP {} -> {last}", obs.seen[0].1);
        }
    }

    #[test]
    fn same_seed_same_model_other_seed_other_model() {
        let train = nuisance_data(30, 6, 7);
        for init in [Init::Identity, Init::Gaussian] {
            let run = |seed| {
                let mut obs = Scores(train.clone(), Vec::new());
                LoretaConfig {
                    rank: 3,
                    init,
                    ..Default::default()
                }
                .fit(
                    &train,
                    &Schedule::last_only(300),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
                obs.1
            };
            assert_eq!(run(9), run(9));
            assert_ne!(run(9), run(10));
        }
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let train = nuisance_data(10, 2, 1);
        let base = LoretaConfig::default();
        let bad = [
            (
                LoretaConfig {
                    rank: 0,
                    ..base.clone()
                },
                "rank",
            ),
            // Valid on its own, too high for the data (d = 2): named at fit time.
            (
                LoretaConfig {
                    rank: 7,
                    ..base.clone()
                },
                "rank",
            ),
            (
                LoretaConfig {
                    eta: 0.0,
                    ..base.clone()
                },
                "eta",
            ),
            (
                LoretaConfig {
                    eta: f64::NAN,
                    ..base.clone()
                },
                "eta",
            ),
            (
                LoretaConfig {
                    eta_t0: Some(-1.0),
                    ..base.clone()
                },
                "eta_t0",
            ),
            (
                LoretaConfig {
                    init_std: 0.0,
                    ..base.clone()
                },
                "init_std",
            ),
            (
                LoretaConfig {
                    zero_init_updates: Some(1),
                    rank: 2,
                    ..base.clone()
                },
                "zero_init_updates",
            ),
            (
                LoretaConfig {
                    safeguards: Safeguards {
                        drift_tolerance: 0.0,
                        ..Default::default()
                    },
                    ..base.clone()
                },
                "safeguards.drift_tolerance",
            ),
            (
                LoretaConfig {
                    safeguards: Safeguards {
                        beta_tolerance: f64::NAN,
                        ..Default::default()
                    },
                    ..base.clone()
                },
                "safeguards.beta_tolerance",
            ),
            (
                LoretaConfig {
                    safeguards: Safeguards {
                        w_tolerance: -1.0,
                        ..Default::default()
                    },
                    ..base.clone()
                },
                "safeguards.w_tolerance",
            ),
        ];
        for (cfg, param) in bad {
            if cfg.rank <= train.dim() {
                assert_eq!(cfg.check().unwrap_err().param, param, "{cfg:?}");
            }
            let err = cfg.fit(
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
        for (cfg, param) in [
            (
                LoretaPsdConfig {
                    init: Init::Zero,
                    ..Default::default()
                },
                "init",
            ),
            (
                LoretaPsdConfig {
                    safeguards: Safeguards {
                        rebalance_every: 5,
                        ..Default::default()
                    },
                    ..Default::default()
                },
                "safeguards.rebalance_every",
            ),
            (
                LoretaPsdConfig {
                    eta: -1.0,
                    ..Default::default()
                },
                "eta",
            ),
        ] {
            assert_eq!(cfg.check().unwrap_err().param, param);
        }
    }

    /// Records the statistics and every score of the reported models.
    struct Stats(LabeledSet, Vec<Vec<(&'static str, f64)>>, Vec<f64>);

    impl Observer for Stats {
        fn checkpoint(&mut self, _: dyad_core::Checkpoint, m: &dyn Scorer) -> dyad_core::Control {
            self.1.push(m.statistics());
            let mut out = vec![0.0; self.0.n()];
            for q in 0..self.0.n() {
                m.score(self.0.x.outer_view(q).unwrap(), &self.0.x, &mut out);
                self.2.extend_from_slice(&out);
            }
            dyad_core::Control::Continue
        }
    }

    #[test]
    fn safeguards_fire_on_schedule_and_leave_the_scores() {
        // The drift check runs every 50 steps but never fires (the carried pseudo-inverses
        // stay exact); rebalancing fires every 100 steps and changes the factors, not W.
        let train = nuisance_data(40, 6, 3);
        let stat = |s: &[(&'static str, f64)], name: &str| {
            s.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).unwrap()
        };
        let run = |safeguards: Safeguards| {
            let mut obs = Stats(train.clone(), Vec::new(), Vec::new());
            LoretaConfig {
                rank: 3,
                init: Init::Gaussian,
                safeguards,
                ..Default::default()
            }
            .fit(&train, &Schedule::last_only(1000), &mut seeded(2), &mut obs)
            .unwrap();
            obs
        };
        let plain = run(Safeguards::default());
        let guarded = run(Safeguards {
            check_every: 50,
            rebalance_every: 100,
            ..Default::default()
        });
        let (p, g) = (&plain.1[0], &guarded.1[0]);
        assert_eq!(stat(p, "rebalances"), 0.0);
        assert_eq!(stat(g, "rebalances"), 10.0);
        assert_eq!(stat(g, "pinv_recomputes"), 0.0);
        assert!(stat(p, "updates") > 100.0);
        assert_eq!(stat(p, "rank_loss_skips"), 0.0);
        assert_eq!(stat(p, "rank"), 3.0);
        let worst = plain
            .2
            .iter()
            .zip(&guarded.2)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-9, "rebalancing changed the scores by {worst}");
        // A drift tolerance below rounding makes the check fire at every check.
        let strict = run(Safeguards {
            check_every: 50,
            drift_tolerance: 1e-300,
            ..Default::default()
        });
        assert_eq!(stat(&strict.1[0], "pinv_recomputes"), 20.0);
    }
}
