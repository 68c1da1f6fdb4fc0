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

mod model;

pub use model::{BilinearModel, StepOutcome};

use crate::{AlgoError, Learner};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Control, LabeledSet, Observer, Rng, Schedule, SolverClock, SparseVec};
use serde::{Deserialize, Serialize};

/// Parameters of OASIS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OasisConfig {
    /// Aggressiveness `C` of the PA-I step: the largest step size `tau` allowed. The papers
    /// report only `C = 0.1` (J-F5 caption), the default.
    #[serde(default = "default_c")]
    pub c: f64,
}

fn default_c() -> f64 {
    0.1
}

impl Default for OasisConfig {
    fn default() -> Self {
        Self { c: default_c() }
    }
}

impl OasisConfig {
    fn validate(&self) -> Result<(), AlgoError> {
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err(AlgoError::Param(format!(
                "OASIS aggressiveness c must be positive and finite, got {}",
                self.c
            )));
        }
        Ok(())
    }
}

impl Learner for OasisConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.validate()?;
        let sampler = TripletSampler::new(train)?;
        let mut clock = SolverClock::start();
        let mut model = BilinearModel::identity(train.dim());
        let mut diff = SparseVec::default();
        let checkpoints = schedule.steps();
        let mut next = 0;
        let mut step = 0u64;
        loop {
            if next < checkpoints.len() && checkpoints[next] == step {
                next += 1;
                let last = next == checkpoints.len();
                if clock.report(step, last, &model, obs) == Control::Stop {
                    break;
                }
            }
            if next == checkpoints.len() {
                break;
            }
            let t = sampler.sample(rng);
            let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
            model.pa1_step(
                row(t.query),
                row(t.positive),
                row(t.negative),
                self.c,
                &mut diff,
            );
            step += 1;
        }
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::metrics::evaluate_retrieval;
    use dyad_core::{Checkpoint, Scorer, seeded};
    use rand::Rng as _;

    /// Two classes told apart by dimensions 0/1, buried under a strong nuisance in dimension
    /// 2 or 3 (chosen per image, independent of the class): the identity ranks mostly by the
    /// nuisance, a learned W that ignores dimensions 2 and 3 ranks by class.
    fn nuisance_data(n: usize, seed: u64) -> LabeledSet {
        let mut rng = seeded(seed);
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let class = i % 2;
                let mut r = vec![0.0; 4];
                r[class] = 0.3 + 0.1 * rng.random::<f64>();
                r[2 + rng.random_range(0..2)] = 1.0 + rng.random::<f64>();
                r
            })
            .collect();
        let mut s = LabeledSet::from_dense_rows(&rows, (0..n).map(|i| (i % 2) as u32).collect(), 2);
        s.l2_normalize_rows();
        s
    }

    struct Record {
        test: LabeledSet,
        seen: Vec<(Checkpoint, f64)>,
    }

    impl Observer for Record {
        fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
            let r = evaluate_retrieval(model, &self.test, &self.test, true, 5);
            self.seen.push((at, r.map));
            Control::Continue
        }
    }

    #[test]
    fn training_improves_ranking_and_reports_every_checkpoint() {
        let (train, test) = (nuisance_data(60, 1), nuisance_data(40, 2));
        let mut obs = Record {
            test,
            seen: Vec::new(),
        };
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

    /// Captures the model's scores so two runs can be compared exactly.
    struct Scores(LabeledSet, Vec<f64>);

    impl Observer for Scores {
        fn checkpoint(&mut self, _: Checkpoint, model: &dyn Scorer) -> Control {
            let mut out = vec![0.0; self.0.n()];
            for q in 0..self.0.n() {
                model.score(self.0.x.outer_view(q).unwrap(), &self.0.x, &mut out);
                self.1.extend_from_slice(&out);
            }
            Control::Continue
        }
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
            obs.1.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn invalid_aggressiveness_is_rejected() {
        let train = nuisance_data(10, 1);
        let bad = OasisConfig { c: 0.0 };
        let err = bad.fit(
            &train,
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut dyad_core::observe::NullObserver,
        );
        assert!(matches!(err, Err(AlgoError::Param(_))));
    }
}
