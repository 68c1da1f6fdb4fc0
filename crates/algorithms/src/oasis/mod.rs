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
            model.pa1_step(row(t.query), row(t.positive), row(t.negative), self.c, &mut diff);
            step += 1;
        }
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}
