//! OASIS: Online Algorithm for Scalable Image Similarity (Chechik, Sharma, Shalit, Bengio).
//!
//! Bilinear similarity `S_W(p, q) = p^T W q`, `W` unconstrained, learned from triplets with the
//! Passive–Aggressive PA-I step of spec §2.2 on sparse inputs (§2.3):
//!
//! ```text
//! l   = max(0, 1 - p^T W (p+ - p-))
//! V   = p (p+ - p-)^T                  (rank one; ||V||_F^2 = ||p||^2 ||p+ - p-||^2)
//! tau = min(C, l / ||V||_F^2)
//! W  <- W + tau V
//! ```
//!
//! starting from `W0 = I`. Triplets are drawn i.i.d. as in spec §3 ([`TripletSampler`]).

mod dissim;
mod model;
mod parallel;

pub use dissim::{DissimModel, DissimOasisConfig};
pub use model::{BilinearModel, StepOutcome};
pub use parallel::OasisParallelConfig;

use crate::params::{self, Checked, ParamError};
use crate::{AlgoError, Ranker};
use dyad_core::sampling::TripletSampler;
use dyad_core::{
    Control, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, Stepper, drive,
};
use serde::{Deserialize, Serialize};

/// Symmetric variants of OASIS (spec §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Symmetric {
    /// Plain, asymmetric OASIS.
    #[default]
    None,
    /// Online-Proj-Oasis: project onto the symmetric matrices after every step.
    Online,
    /// Proj-Oasis: train plain OASIS, report `sym(W)`.
    After,
}

/// Positive semi-definite variants of OASIS (spec §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Psd {
    /// No projection.
    #[default]
    None,
    /// Project `W` onto the PSD cone every this many steps and continue from the projection.
    Every(u64),
    /// Train without projection; report the PSD projection of `W` ("proj. after complete").
    After,
}

/// Parameters of OASIS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OasisConfig {
    /// Aggressiveness `C` of the PA-I step: the largest step size `tau` allowed. The papers
    /// report only `C = 0.1` (J-F5 caption), the default.
    #[serde(default = "default_c")]
    pub c: f64,
    #[serde(default)]
    pub symmetric: Symmetric,
    #[serde(default)]
    pub psd: Psd,
}

pub(crate) fn default_c() -> f64 {
    0.1
}

impl Default for OasisConfig {
    fn default() -> Self {
        Self {
            c: default_c(),
            symmetric: Symmetric::None,
            psd: Psd::None,
        }
    }
}

impl Checked for OasisConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("c", self.c)?;
        if self.psd == Psd::Every(0) {
            return Err(ParamError::new("psd.every", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

impl OasisConfig {
    /// One training step of this variant.
    pub(crate) fn step(
        &self,
        model: &mut BilinearModel,
        train: &LabeledSet,
        sampler: &TripletSampler,
        rng: &mut Rng,
        diff: &mut SparseVec,
        step: u64,
    ) -> Result<(), AlgoError> {
        let t = sampler.sample(rng);
        let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
        let (p, a, b) = (row(t.query), row(t.positive), row(t.negative));
        if self.symmetric == Symmetric::Online {
            model.pa1_step_symmetric(p, a, b, self.c, diff);
        } else {
            model.pa1_step(p, a, b, self.c, diff);
        }
        if let Psd::Every(n) = self.psd
            && step.is_multiple_of(n)
        {
            model
                .project_psd()
                .map_err(|e| AlgoError::Numerical(e.to_string()))?;
        }
        Ok(())
    }

    /// The model this variant reports: `W`, `sym(W)` or the PSD projection of `W`.
    pub(crate) fn reported(
        &self,
        model: &BilinearModel,
    ) -> Result<Option<BilinearModel>, AlgoError> {
        Ok(match (self.symmetric, self.psd) {
            (_, Psd::After) => Some(
                model
                    .psd_projected()
                    .map_err(|e| AlgoError::Numerical(e.to_string()))?,
            ),
            (Symmetric::After, _) => Some(model.symmetrized()),
            _ => None,
        })
    }
}

/// OASIS's training state for [`dyad_core::drive`].
struct OasisRun<'a> {
    config: &'a OasisConfig,
    train: &'a LabeledSet,
    sampler: TripletSampler,
    rng: &'a mut Rng,
    model: BilinearModel,
    diff: SparseVec,
}

impl Stepper for OasisRun<'_> {
    type Model = dyn Scorer;
    type Error = AlgoError;

    fn step(&mut self, step: u64) -> Result<Flow, AlgoError> {
        let Self {
            config,
            train,
            sampler,
            rng,
            model,
            diff,
        } = self;
        config.step(model, train, sampler, rng, diff, step)?;
        Ok(Flow::Continue)
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        let reported = self.config.reported(&self.model)?;
        Ok(show(reported.as_ref().unwrap_or(&self.model)))
    }
}

impl Ranker for OasisConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let sampler = TripletSampler::new(train)?;
        drive(schedule, obs, || {
            Ok(OasisRun {
                config: self,
                train,
                sampler,
                rng,
                model: BilinearModel::identity(train.dim()),
                diff: SparseVec::default(),
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{Record, Scores};
    use dyad_core::seeded;

    fn nuisance_data(n: usize, seed: u64) -> LabeledSet {
        crate::fixtures::nuisance_data(n, 0, seed)
    }

    #[test]
    fn training_improves_ranking_and_reports_every_checkpoint() {
        let (train, test) = (nuisance_data(60, 1), nuisance_data(40, 2));
        let mut obs = Record::new(test);
        let schedule = Schedule::new(vec![0, 100, 1000, 3000]);
        OasisConfig::default()
            .fit(&train, &schedule, &mut seeded(3), &mut obs)
            .unwrap();
        let steps: Vec<u64> = obs.seen.iter().map(|(c, _)| c.step).collect();
        assert_eq!(steps, vec![0, 100, 1000, 3000]);
        assert_eq!(
            obs.seen.iter().map(|(c, _)| c.last).collect::<Vec<_>>(),
            vec![false, false, false, true]
        );
        assert!(
            obs.seen
                .windows(2)
                .all(|w| w[0].0.solver_seconds <= w[1].0.solver_seconds)
        );
        let (first, last) = (obs.seen[0].1, obs.seen[3].1);
        assert!(first < 0.85 && last > 0.99, "mAP {first} -> {last}");
    }

    #[test]
    fn same_seed_same_model_other_seed_other_model() {
        let train = nuisance_data(30, 4);
        let run = |seed| {
            let mut obs = Scores(train.clone(), Vec::new());
            OasisConfig::default()
                .fit(
                    &train,
                    &Schedule::last_only(500),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
            obs.1
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn invalid_aggressiveness_is_rejected() {
        let train = nuisance_data(10, 1);
        let bad = OasisConfig {
            c: 0.0,
            ..Default::default()
        };
        let err = bad.fit(
            &train,
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut dyad_core::observe::NullObserver,
        );
        assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "c"));
    }
}
