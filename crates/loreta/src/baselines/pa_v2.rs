//! "PA v2" / naive Passive-Aggressive on the factors (LORETA spec §4, B4; \[NIPS\] Fig. 2b
//! only): `W = A B^T`, one step size "computed as with unfactored matrices",
//!
//! ```text
//! tau = min(C, l / (|q|^2 |p+ - p-|^2))
//! A <- A + tau q (B^T (p+ - p-))^T,    B <- B + tau (p+ - p-) (A^T q)^T   (simultaneous)
//! ```
//!
//! \[AMBIG\] resolved (spec §4 B4 \[CHOICE\]): the update directions are unstated; we use the
//! gradient directions of the naive factored GD (B1, [`crate::baselines::factored_gd`]) with
//! this step size, both factors from the old values. `C` defaults to 0.1 (chosen by CV);
//! initialisation as LORETA's (`identity` or `gaussian`). Cost per step:
//! `O((nnz q + nnz(p+ - p-)) k)`.

use super::factored_gd::{check_factored, fit_naive_factored};
use crate::{Init, InitSpec, budget_rank, check_memory};
use dyad_core::{LabeledSet, Observer, Rng, Schedule};
use dyad_kernels::params::positive;
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

/// Parameters of PA v2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaV2Config {
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
    /// Initialisation (`identity` or `gaussian`).
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1).
    #[serde(default = "default_std")]
    pub init_std: f64,
}

impl Default for PaV2Config {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            memory: None,
            c: default_c(),
            init: Init::Identity,
            init_std: default_std(),
        }
    }
}

impl Checked for PaV2Config {
    fn check(&self) -> Result<(), ParamError> {
        check_factored(self.rank, self.init, self.init_std)?;
        check_memory(self.memory)?;
        positive("c", self.c)
    }
}

impl Ranker for PaV2Config {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let c = self.c;
        let init = InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: None,
        };
        let rank = budget_rank("PA v2", self.rank, self.memory, train.dim())?;
        fit_naive_factored(
            train,
            schedule,
            rng,
            obs,
            init,
            (rank, self.memory),
            move |l, v| super::iterative_pa::pa_tau(c, l, v),
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

/// The `pa-v2` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "pa-v2",
    label: "PA v2",
    description: "naive PA on the factors: the GD directions with the unfactored PA-I step (spec §4 B4, [NIPS] only)",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<PaV2Config>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores, nuisance_data};

    #[test]
    fn learns_and_is_deterministic() {
        let (train, test) = (nuisance_data(60, 10, 1), nuisance_data(40, 10, 2));
        let cfg = PaV2Config {
            rank: 4,
            ..Default::default()
        };
        let mut obs = Record::new(test);
        cfg.fit(
            &train,
            &Schedule::new(vec![0, 3000]),
            &mut seeded(3),
            &mut obs,
        )
        .unwrap();
        let (first, last) = (obs.seen[0].1, obs.seen[1].1);
        assert!(first < 0.85 && last > 0.9, "mAP {first} -> {last}");
        let run = |seed| {
            let mut obs = Scores(train.clone(), Vec::new());
            cfg.fit(
                &train,
                &Schedule::last_only(200),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            obs.1
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        let e = PaV2Config {
            c: f64::NAN,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "c");
        let e = PaV2Config {
            init: Init::Zero,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "init");
    }
}
