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
//!
//! **Speed.** The step touches only the rows of `W` that `p` selects, with one of two row
//! kernels chosen per step by density (`kernel.rs`: gather for text-like rows, a vectorised
//! dense sweep for image-like rows), both summing in one fixed order so that the choice, the
//! instruction set and the thread count never change a bit (tested). Measured numbers, and
//! the machine bound beside them, are in [`Kernel`]'s module (`oasis/kernel.rs`): about
//! 39,000 steps/s in f64 on the MNIST J-F5 shape.
//!
//! **Precision.** `W` is stored as `f64` by default; `precision = "f32"` ([`Precision`])
//! stores it as `f32` (half the memory, [`BilinearModel::memory_bytes`]) with every
//! operation still in `f64` (margin accumulated in `f64`, each updated entry rounded once).
//! The default stays `f64`, although on an MNIST-shaped fixture (5 splits, 2,000 steps) the
//! f32 fit gives the same mAP as the f64 fit to every printed digit (the test requires less
//! than a quarter of the spread over splits): (a) f32 changes other reported numbers beyond
//! any spread: `W` itself differs by about 1e-7 relative, so the peer check that NumPy
//! OASIS reproduces dyad's `W` to 1e-9 would fail, and the PSD variants' projected `W` is
//! PSD only up to f32 rounding; (b) the gain is small: 25.4 -> 20.7 µs per step on the MNIST
//! shape (the step is bound by arithmetic, not memory, on the measured machine), nothing on
//! the 20NG shape. `f32` is for memory-bound problems (large `d`), where halving `d^2` is
//! what lets `W` fit.

mod dissim;
mod kernel;
mod model;
mod parallel;

pub use dissim::{DissimModel, DissimOasisConfig};
pub use kernel::{DENSE_SPAN_PER_NNZ, Kernel, StepScratch};
pub use model::{BilinearModel, Precision, StepOutcome};
pub use parallel::OasisParallelConfig;

use dyad_core::sampling::TripletSampler;
use dyad_core::{Control, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, Stepper, drive};
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::{AlgoError, Ranker};
use serde::{Deserialize, Serialize};

/// The solvers of this crate, as the harness's registry composes them: one line per solver
/// (each file declares its own entry: name, label, version, parameters).
pub static SOLVERS: dyad_kernels::Solvers = dyad_kernels::Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[SOLVER, dissim::SOLVER, parallel::SOLVER],
};

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
    /// Storage precision of `W`: `"f64"` or `"f32"` (`f64` arithmetic either way).
    #[serde(default, skip_serializing_if = "Precision::is_f64")]
    pub precision: Precision,
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
            precision: Precision::default(),
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
    pub fn step(
        &self,
        model: &mut BilinearModel,
        train: &LabeledSet,
        sampler: &TripletSampler,
        rng: &mut Rng,
        scratch: &mut StepScratch,
        step: u64,
    ) -> Result<(), AlgoError> {
        let t = sampler.sample(rng);
        let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
        let (p, a, b) = (row(t.query), row(t.positive), row(t.negative));
        if self.symmetric == Symmetric::Online {
            model.pa1_step_symmetric(p, a, b, self.c, scratch);
        } else {
            model.pa1_step(p, a, b, self.c, scratch);
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
    pub fn reported(&self, model: &BilinearModel) -> Result<Option<BilinearModel>, AlgoError> {
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
    scratch: StepScratch,
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
            scratch,
        } = self;
        config.step(model, train, sampler, rng, scratch, step)?;
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
                model: BilinearModel::identity_with(train.dim(), self.precision),
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

    /// `W`, `d x d`.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        Some(self.precision.matrix_bytes(dim))
    }

    fn statistics(&self) -> &'static [&'static str] {
        BilinearModel::STATISTICS
    }
}

/// The `oasis` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "oasis",
    label: "OASIS",
    description: "OASIS, PA-I on sparse triplets, W0 = I, with its symmetric and PSD variants (Chechik et al. 2010)",
    family: dyad_kernels::solver::RANKER,
    // 2: the density-chosen row kernels (oasis/kernel.rs) sum in another order.
    version: 2,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<OasisConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores};

    fn nuisance_data(n: usize, seed: u64) -> LabeledSet {
        dyad_kernels::fixtures::nuisance_data(n, 0, seed)
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

    /// Reads every reported model back as a dense `W` (scoring unit basis vectors:
    /// `S(e_i, e_j) = W_ij`) with its step.
    struct Dense(LabeledSet, Vec<(u64, ndarray::Array2<f64>)>);

    impl Dense {
        fn new(d: usize) -> Self {
            let rows: Vec<Vec<f64>> = (0..d)
                .map(|i| (0..d).map(|j| f64::from(u8::from(i == j))).collect())
                .collect();
            Dense(
                LabeledSet::from_dense_rows(&rows, vec![0; d], 1),
                Vec::new(),
            )
        }
    }

    impl Observer for Dense {
        fn checkpoint(&mut self, at: dyad_core::Checkpoint, model: &dyn Scorer) -> Control {
            let d = self.0.n();
            let mut w = ndarray::Array2::zeros((d, d));
            let mut out = vec![0.0; d];
            for i in 0..d {
                model.score(self.0.x.outer_view(i).unwrap(), &self.0.x, &mut out);
                w.row_mut(i).assign(&ndarray::ArrayView1::from(&out));
            }
            self.1.push((at.step, w));
            Control::Continue
        }
    }

    fn asymmetry(w: &ndarray::Array2<f64>) -> f64 {
        (w - &w.t()).iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    fn min_eigenvalue(w: &ndarray::Array2<f64>) -> f64 {
        let (vals, _) =
            dyad_kernels::linalg::sym_eigen(dyad_kernels::linalg::symmetrize(w.view()).view())
                .unwrap();
        vals[0]
    }

    fn fit_dense(config: OasisConfig, steps: Vec<u64>) -> Vec<(u64, ndarray::Array2<f64>)> {
        let train = nuisance_data(40, 7);
        let mut obs = Dense::new(train.dim());
        config
            .fit(&train, &Schedule::new(steps), &mut seeded(5), &mut obs)
            .unwrap();
        obs.1
    }

    #[test]
    fn psd_every_n_steps_projects_exactly_at_multiples_of_n() {
        let n = 50;
        let psd = OasisConfig {
            c: 0.5,
            psd: Psd::Every(n),
            ..Default::default()
        };
        let seen = fit_dense(psd, vec![0, 1, n - 1, n, n + 1, 2 * n, 3 * n - 7]);
        let plain = fit_dense(
            OasisConfig {
                c: 0.5,
                ..Default::default()
            },
            vec![n - 1, n],
        );
        for (step, w) in &seen {
            let projected = *step > 0 && step % n == 0;
            if projected {
                // Just projected: symmetric and positive semi-definite.
                assert!(asymmetry(w) < 1e-12, "step {step}");
                assert!(
                    min_eigenvalue(w) > -1e-10,
                    "step {step}: {}",
                    min_eigenvalue(w)
                );
            }
        }
        // Between projections the PA steps leave the cone and symmetry: the schedule runs.
        let (_, before) = seen.iter().find(|(s, _)| *s == n - 1).unwrap();
        assert!(asymmetry(before) > 1e-6);
        let (_, late) = seen.iter().find(|(s, _)| *s == 3 * n - 7).unwrap();
        assert!(asymmetry(late) > 1e-6);
        // Before the first projection PSD-every-n is plain OASIS, bit for bit; at step n it
        // is the projection of plain OASIS's W.
        assert_eq!(before, &plain[0].1);
        let (_, at_n) = seen.iter().find(|(s, _)| *s == n).unwrap();
        let expected = dyad_kernels::linalg::psd_projection(plain[1].1.view()).unwrap();
        assert!((at_n - &expected).iter().all(|v| v.abs() < 1e-12));
        // The run learned an indefinite W without projection: the projection did something.
        assert!(min_eigenvalue(&plain[1].1) < -1e-6 || asymmetry(&plain[1].1) > 1e-6);
    }

    #[test]
    fn psd_after_and_symmetric_variants_report_their_transform_of_plain_oasis() {
        let steps = vec![0, 30, 300];
        let plain = fit_dense(OasisConfig::default(), steps.clone());
        let after = fit_dense(
            OasisConfig {
                psd: Psd::After,
                ..Default::default()
            },
            steps.clone(),
        );
        let proj = fit_dense(
            OasisConfig {
                symmetric: Symmetric::After,
                ..Default::default()
            },
            steps.clone(),
        );
        let online = fit_dense(
            OasisConfig {
                symmetric: Symmetric::Online,
                ..Default::default()
            },
            steps.clone(),
        );
        for i in 0..steps.len() {
            let w = &plain[i].1;
            // "After learning": the same training, the reported model transformed.
            let psd = dyad_kernels::linalg::psd_projection(w.view()).unwrap();
            assert!((&after[i].1 - &psd).iter().all(|v| v.abs() < 1e-12));
            assert!(min_eigenvalue(&after[i].1) > -1e-10);
            let sym = dyad_kernels::linalg::symmetrize(w.view());
            assert!((&proj[i].1 - &sym).iter().all(|v| v.abs() < 1e-12));
            // Online projection keeps W symmetric at every step.
            assert!(asymmetry(&online[i].1) < 1e-12, "step {}", steps[i]);
        }
        assert!(
            asymmetry(&plain[2].1) > 1e-6,
            "plain OASIS learns an asymmetric W"
        );
        // Online symmetrisation changes the trajectory, not only the report.
        assert!(
            (&online[2].1 - &dyad_kernels::linalg::symmetrize(plain[2].1.view()))
                .iter()
                .any(|v| v.abs() > 1e-9)
        );
    }

    /// Final mAP on a held-out MNIST-shaped set (4 classes) of a 2,000-step fit, in each
    /// precision, for `splits` seeds; and the untrained model's.
    fn mnist_like_maps(splits: u64) -> Vec<(f64, f64, f64)> {
        (0..splits)
            .map(|s| {
                // One draw (the classes' prototypes are drawn with it), split in two.
                let all =
                    dyad_kernels::fixtures::mnist_like_with(480, 4, 40, 110, &mut seeded(100 + s));
                let (train, test) = (
                    all.select(&(0..400).collect::<Vec<_>>()),
                    all.select(&(400..480).collect::<Vec<_>>()),
                );
                let fit = |precision| {
                    let mut obs = Record::new(test.clone());
                    OasisConfig {
                        precision,
                        ..Default::default()
                    }
                    .fit(
                        &train,
                        &Schedule::new(vec![0, 2000]),
                        &mut seeded(s),
                        &mut obs,
                    )
                    .unwrap();
                    (obs.seen[0].1, obs.seen[1].1)
                };
                let ((untrained, f64_map), (_, f32_map)) =
                    (fit(Precision::F64), fit(Precision::F32));
                (untrained, f64_map, f32_map)
            })
            .collect()
    }

    #[test]
    fn f32_fit_reaches_the_f64_map_within_the_spread_over_splits() {
        let maps = mnist_like_maps(5);
        let f64_maps: Vec<f64> = maps.iter().map(|m| m.1).collect();
        let mean = f64_maps.iter().sum::<f64>() / 5.0;
        let sd = (f64_maps.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
        eprintln!("maps (untrained, f64, f32): {maps:?}, sd {sd}");
        for &(untrained, f64_map, f32_map) in &maps {
            // The fits learn (well above the untrained model), and f32 storage changes the
            // mAP by far less than the spread over splits.
            assert!(f64_map > untrained + 0.05, "{untrained} -> {f64_map}");
            assert!(
                (f32_map - f64_map).abs() < 0.25 * sd,
                "{f32_map} vs {f64_map}, sd {sd}"
            );
        }
        assert!(sd > 0.0);
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let (train, test) = (nuisance_data(40, 11), nuisance_data(30, 12));
        let run = |threads: usize, precision| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let config = OasisConfig {
                    precision,
                    ..Default::default()
                };
                let schedule = Schedule::new(vec![0, 50, 400]);
                let mut scores = Scores(test.clone(), Vec::new());
                config
                    .fit(&train, &schedule, &mut seeded(8), &mut scores)
                    .unwrap();
                let mut record = Record::new(test.clone());
                config
                    .fit(&train, &schedule, &mut seeded(8), &mut record)
                    .unwrap();
                let maps: Vec<u64> = record.seen.iter().map(|(_, m)| m.to_bits()).collect();
                (scores.1, maps)
            })
        };
        for precision in [Precision::F64, Precision::F32] {
            let one = run(1, precision);
            assert!(!one.0.is_empty() && one.1.len() == 3);
            for threads in [2, 3] {
                assert!(
                    run(threads, precision) == one,
                    "{threads} threads, {precision:?}"
                );
            }
        }
    }

    #[test]
    fn precision_is_a_config_option_defaulting_to_f64() {
        let c: OasisConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c.precision, Precision::F64);
        let c: OasisConfig = serde_json::from_str(r#"{"precision": "f32"}"#).unwrap();
        assert_eq!(c.precision, Precision::F32);
        assert!(c.check().is_ok());
        let err = serde_json::from_str::<OasisConfig>(r#"{"precision": "f16"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("f16"), "{err}");
        let p: OasisParallelConfig =
            serde_json::from_str(r#"{"c": 0.1, "rankers": 2, "precision": "f32"}"#).unwrap();
        assert_eq!(p.precision, Precision::F32);
        let p: OasisParallelConfig = serde_json::from_str(r#"{"c": 0.1, "rankers": 2}"#).unwrap();
        assert_eq!(p.precision, Precision::F64);
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
