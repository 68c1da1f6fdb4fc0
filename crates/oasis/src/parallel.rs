//! Parallel OASIS rankers (spec §4.3, J-F7): `rankers` models trained independently on their
//! own random triplet streams, combined by the uniform average of their matrices (ranking is
//! invariant to positive scaling, so the average equals the sum). The schedule counts steps
//! per ranker; the rankers advance in lockstep between checkpoints so that the average can be
//! reported at every checkpoint. Solver time is the total over rankers (CPU time; the papers
//! note that parallel training need not save total CPU time).

use super::{BilinearModel, OasisConfig, Precision, StepScratch};
use dyad_core::sampling::TripletSampler;
use dyad_core::{
    Control, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, Stepper, drive, seeded,
};
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::{AlgoError, Ranker};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Parameters of the averaged parallel rankers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OasisParallelConfig {
    /// Aggressiveness `C` of each ranker's PA-I step.
    #[serde(default = "super::default_c")]
    pub c: f64,
    /// Number of independently trained rankers averaged.
    pub rankers: usize,
    /// Storage precision of each ranker's `W` (and of their average), as for OASIS.
    #[serde(default, skip_serializing_if = "Precision::is_f64")]
    pub precision: Precision,
}

impl Checked for OasisParallelConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("c", self.c)?;
        params::at_least_one("rankers", self.rankers as u64)
    }
}

impl Ranker for OasisParallelConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let single = OasisConfig {
            c: self.c,
            precision: self.precision,
            ..Default::default()
        };
        let sampler = TripletSampler::new(train)?;
        drive(schedule, obs, || {
            Ok(ParallelRun {
                single,
                train,
                sampler,
                rngs: (0..self.rankers).map(|_| seeded(rng.random())).collect(),
                models: (0..self.rankers)
                    .map(|_| BilinearModel::identity_with(train.dim(), self.precision))
                    .collect(),
                scratch: StepScratch::default(),
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    fn start(&self) -> dyad_kernels::Start {
        dyad_kernels::Start::IdentityBilinear
    }

    /// One `W` per ranker and their average.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        let each = self.precision.matrix_bytes(dim);
        Some(
            each.saturating_mul(self.rankers as u64)
                .saturating_add(dyad_kernels::dense_bytes(dim, dim)),
        )
    }

    fn statistics(&self) -> &'static [&'static str] {
        BilinearModel::STATISTICS
    }
}

/// The rankers advance in lockstep, one step each per step of the schedule; each draws from
/// its own generator, so this equals running them one after another. The reported model is
/// their average, formed on the clock.
struct ParallelRun<'a> {
    single: OasisConfig,
    train: &'a LabeledSet,
    sampler: TripletSampler,
    rngs: Vec<Rng>,
    models: Vec<BilinearModel>,
    scratch: StepScratch,
}

impl Stepper for ParallelRun<'_> {
    type Model = dyn Scorer;
    type Error = AlgoError;

    fn step(&mut self, step: u64) -> Result<Flow, AlgoError> {
        for (model, r) in self.models.iter_mut().zip(&mut self.rngs) {
            self.single
                .step(model, self.train, &self.sampler, r, &mut self.scratch, step)?;
        }
        Ok(Flow::Continue)
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        Ok(show(&BilinearModel::average(&self.models)))
    }
}

/// The `oasis-parallel` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "oasis-parallel",
    label: "OASIS (averaged rankers)",
    description: "uniform average of independently trained OASIS rankers (spec §4.3)",
    family: dyad_kernels::solver::RANKER,
    // 2: the density-chosen row kernels (oasis/kernel.rs) sum in another order.
    version: 2,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<OasisParallelConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::{Checkpoint, Scorer};

    #[test]
    fn bad_parameters_are_named() {
        let ok = OasisParallelConfig {
            c: 0.1,
            rankers: 2,
            precision: Precision::default(),
        };
        assert!(ok.check().is_ok());
        for (cfg, param) in [
            (
                OasisParallelConfig {
                    c: -1.0,
                    ..ok.clone()
                },
                "c",
            ),
            (
                OasisParallelConfig {
                    rankers: 0,
                    ..ok.clone()
                },
                "rankers",
            ),
        ] {
            assert_eq!(cfg.check().unwrap_err().param, param);
        }
    }

    struct Capture(LabeledSet, Vec<f64>);

    impl Observer for Capture {
        fn checkpoint(&mut self, _: Checkpoint, model: &dyn Scorer) -> Control {
            let mut out = vec![0.0; self.0.n()];
            model.score(self.0.x.outer_view(0).unwrap(), &self.0.x, &mut out);
            self.1 = out;
            Control::Continue
        }
    }

    #[test]
    fn one_ranker_is_plain_oasis_and_k_rankers_average() {
        let rows: Vec<Vec<f64>> = (0..12)
            .map(|i| vec![(i % 3) as f64 + 0.5, ((i * 7) % 5) as f64 + 0.1, 1.0])
            .collect();
        let mut set =
            LabeledSet::from_dense_rows(&rows, (0..12).map(|i| (i % 2) as u32).collect(), 2);
        set.l2_normalize_rows();
        let schedule = Schedule::last_only(50);
        // One ranker seeded from the first draw of the stream equals OASIS run with that seed.
        let mut r = seeded(4);
        let first: u64 = r.random();
        let mut a = Capture(set.clone(), vec![]);
        OasisParallelConfig {
            c: 0.1,
            rankers: 1,
            precision: Precision::F64,
        }
        .fit(&set, &schedule, &mut seeded(4), &mut a)
        .unwrap();
        let mut b = Capture(set.clone(), vec![]);
        OasisConfig::default()
            .fit(&set, &schedule, &mut seeded(first), &mut b)
            .unwrap();
        assert_eq!(a.1, b.1);
        // Three rankers: the reported scores are the mean of the three rankers' scores.
        let mut r = seeded(5);
        let seeds: Vec<u64> = (0..3).map(|_| r.random()).collect();
        let mut three = Capture(set.clone(), vec![]);
        OasisParallelConfig {
            c: 0.1,
            rankers: 3,
            precision: Precision::F64,
        }
        .fit(&set, &schedule, &mut seeded(5), &mut three)
        .unwrap();
        let mut mean = vec![0.0; set.n()];
        for s in seeds {
            let mut one = Capture(set.clone(), vec![]);
            OasisConfig::default()
                .fit(&set, &schedule, &mut seeded(s), &mut one)
                .unwrap();
            for (m, v) in mean.iter_mut().zip(one.1) {
                *m += v / 3.0;
            }
        }
        for (x, y) in three.1.iter().zip(&mean) {
            assert!((x - y).abs() < 1e-12);
        }
    }
}
