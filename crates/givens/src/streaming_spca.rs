//! Algorithm 5: streaming Givens sparse PCA with `m < n` components (supplement §C, spec §3.3).
//!
//! ```text
//! AU ← [a_1 … a_m]                         (the first m samples of the stream; U_0 = I [A])
//! loop:
//!     L_in coordinate steps on AU           (as Algorithm 2, pairs among the m columns)
//!     i_min ← argmin_i ‖AU[:, i]‖₂          (the weakest column)
//!     AU[:, i_min] ← a_new                  (the next raw sample replaces it)
//! Z ← solveForZ(AU, γ)
//! ```
//!
//! Only the `d × m` window is held. The replacement is the text's heuristic: after it, `AU` is no
//! longer `A_window·U` for an orthogonal `U`, so no `U` is reported.
//!
//! # Choices \[A\]
//!
//! * **A step** of the [`Schedule`] is one outer iteration. Step 1 runs `L_in` coordinate steps
//!   on the first window ("starts by running the coordinate procedure on the first m samples");
//!   every later step first brings in the next sample (replacing the weakest column) and then
//!   runs `L_in` coordinate steps, so every reported window has been optimised after its last
//!   replacement (the printed loop, rotated by half an iteration). After step `t` the method
//!   has read `m + t − 1` samples (the model's `samples_seen`).
//! * `inner_steps = L_in`: default `m` ("order m steps after each new sample", \[T\]).
//! * Stopping: the run finishes when `sample_fraction` of the stream has been read: 1.0 (one
//!   pass, default) or 0.14 for the paper's "early stop" \[T\]; at least the first window is
//!   always used.
//! * Stream order: a random permutation of the data's columns drawn from the `rng`
//!   (`shuffle = true`, default), or the columns in order.
//! * γ with `gamma_scale = "relative"`: `gamma · max_k ‖row k of the first window‖₂` — the
//!   full data's row norms are not available to a streaming method, and a window of `m`
//!   samples has rows `√(n/m)` times shorter than the full data's, so GPower's scale would zero
//!   out almost everything. Fig. 2 compares methods at equal sparsity, not equal `gamma`.
//!
//! FLOPs per step: `L_in` coordinate steps as Algorithm 2, plus `2dm` (column norms) and `3d`
//! (the new column's objective) per replacement; setup `3dm` (+ `2dm` for a relative γ). The
//! count over the rows that can pass the threshold (`flops_active_rows`, [`super::flops`]
//! module docs) charges `h` over the `d_a` rows of the current window with norm above `γ`
//! (the others contribute nothing to `h` for any angle: rotations keep a row's norm) but every
//! rotation over all `d` rows (a replaced column can make a row pass later, and its rotated
//! values are then needed); per replacement `2dm + 4d + 3d_a` (column norms, the row-norm
//! update, the new column's objective); setup `2dm + 3·d_a·m`.

use super::rotation::{ColMatrix, PairSelector, Selection};
use super::sparse_pca::{
    AngleSearch, GammaScale, RowScope, SpcaWindow, check_data, check_gamma, default_gamma,
    max_row_norm, solve_for_z, spca_objective,
};
use super::{SparsePca, SparsePcaModel};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::{AlgoError, Checked, ParamError, params};
use ndarray::{ArrayView2, s};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// Parameters of Algorithm 5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamingGivensSpcaConfig {
    /// Number of components `m ≥ 2` (the window width).
    pub components: usize,
    /// Sparsity (0.1), scaled by `gamma_scale` (module docs).
    #[serde(default = "default_gamma")]
    pub gamma: f64,
    #[serde(default)]
    pub gamma_scale: GammaScale,
    #[serde(default)]
    pub angle: AngleSearch,
    /// Coordinate selection inside the window (uniform).
    #[serde(default)]
    pub selection: Selection,
    /// Coordinate steps per new sample, `L_in` (default: `m`).
    #[serde(default)]
    pub inner_steps: Option<u64>,
    /// Fraction of the stream to read before stopping, in (0, 1] (1: one pass; 0.14: the
    /// paper's early stop).
    #[serde(default = "default_fraction")]
    pub sample_fraction: f64,
    /// Stream the samples in a random order drawn from the rng (true).
    #[serde(default = "default_shuffle")]
    pub shuffle: bool,
}

fn default_fraction() -> f64 {
    1.0
}
fn default_shuffle() -> bool {
    true
}

impl Checked for StreamingGivensSpcaConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::count_at_least("components", self.components as u64, 2)?;
        check_gamma(self.gamma)?;
        self.angle.check().map_err(|e| e.under("angle"))?;
        params::if_given(self.inner_steps, |l| params::at_least_one("inner_steps", l))?;
        params::half_open_interval("sample_fraction", self.sample_fraction, 0.0, 1.0)
    }
}

impl StreamingGivensSpcaConfig {
    /// Defaults with `m` components.
    pub fn new(components: usize) -> Self {
        Self {
            components,
            gamma: default_gamma(),
            gamma_scale: GammaScale::Relative,
            angle: AngleSearch::default(),
            selection: Selection::Uniform,
            inner_steps: None,
            sample_fraction: default_fraction(),
            shuffle: default_shuffle(),
        }
    }

    /// Samples read before stopping, for `n` samples in the stream.
    pub fn samples_to_read(&self, n: usize) -> usize {
        ((self.sample_fraction * n as f64).ceil() as usize).clamp(self.components, n)
    }
}

struct StreamRun<'a, 'r> {
    data: ArrayView2<'a, f64>,
    order: Vec<usize>,
    window: SpcaWindow,
    selector: PairSelector,
    inner: u64,
    read: usize,
    stop_at: usize,
    rng: &'r mut Rng,
    flops: u64,
}

impl Stepper for StreamRun<'_, '_> {
    type Model = SparsePcaModel;
    type Error = AlgoError;

    fn step(&mut self, step: u64) -> Result<Flow, AlgoError> {
        if step > 1 {
            let k = self.window.weakest_column(&mut self.flops);
            let col = self.data.column(self.order[self.read]);
            self.window
                .replace_column(k, col.iter().copied(), &mut self.flops);
            self.read += 1;
        }
        for _ in 0..self.inner {
            let (i, j) = self.selector.next(self.rng);
            self.window.coordinate_step(i, j, &mut self.flops);
        }
        Ok(if self.read >= self.stop_at {
            Flow::Finished
        } else {
            Flow::Continue
        })
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&SparsePcaModel) -> Control,
    ) -> Result<Control, AlgoError> {
        let w = &self.window;
        let (z, extract) = solve_for_z(w.au(), w.gamma());
        Ok(show(&SparsePcaModel {
            loadings: z,
            rotation: None,
            objective: spca_objective(w.au().view(), w.gamma()),
            gamma: w.gamma(),
            flops: self.flops,
            flops_active_rows: w.flops_active(),
            extract_flops: extract,
            samples_seen: self.read,
        }))
    }
}

impl SparsePca for StreamingGivensSpcaConfig {
    /// `data`: the training samples as columns of a `d × n` matrix, streamed one at a time.
    fn fit(
        &self,
        data: ArrayView2<'_, f64>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<SparsePcaModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let m = self.components;
        check_data(data, "streaming Givens sparse PCA")?;
        if data.ncols() < m {
            return Err(AlgoError::param(
                "components",
                format!("= {m} needs at least {m} samples, got {}", data.ncols()),
            ));
        }
        drive(schedule, obs, || {
            let n = data.ncols();
            let mut order: Vec<usize> = (0..n).collect();
            if self.shuffle {
                order.shuffle(rng);
            }
            let mut flops = 0u64;
            let mut first = ColMatrix::zeros(data.nrows(), m);
            for (j, &c) in order[..m].iter().enumerate() {
                for (o, &v) in first.col_mut(j).iter_mut().zip(data.column(c)) {
                    *o = v;
                }
            }
            let gamma = match self.gamma_scale {
                GammaScale::Relative => {
                    let w = data.select(ndarray::Axis(1), &order[..m]);
                    self.gamma * max_row_norm(w.slice(s![.., ..]), &mut flops)
                }
                GammaScale::Absolute => self.gamma,
            };
            let window = SpcaWindow::new(
                first,
                gamma,
                self.angle,
                false,
                RowScope::Streaming,
                &mut flops,
            );
            Ok(StreamRun {
                data,
                order,
                window,
                selector: PairSelector::new(m, self.selection),
                inner: self.inner_steps.unwrap_or(m as u64),
                read: m,
                stop_at: self.samples_to_read(n),
                rng,
                flops,
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `streaming-givens-spca` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "streaming-givens-spca",
    label: "streaming Givens",
    description: "Algorithm 5: streaming Givens sparse PCA with m < n components, a d x m window, the weakest column replaced by each new sample (spec §3.3)",
    family: crate::SPARSE_PCA,
    // 2: also counts its FLOPs over the rows that can pass the threshold
    // (`flops_active_rows`, issue 42 §4); the all-rows count is unchanged.
    version: 2,
    machine_tolerance: 0.0,
    build: crate::sparse_pca_solver::<StreamingGivensSpcaConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flops;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Models, planted_sparse_pca};

    #[test]
    fn streams_the_samples_and_stops_at_the_fraction() {
        let planted = planted_sparse_pca(120, 60, 2, 8, 0.05, 1);
        let mut cfg = StreamingGivensSpcaConfig::new(3);
        cfg.sample_fraction = 0.5;
        let mut obs = Models::default();
        cfg.fit(
            planted.data.view(),
            &Schedule::last_only(10_000),
            &mut seeded(2),
            &mut obs,
        )
        .unwrap();
        let (at, last) = obs.seen.last().unwrap();
        assert!(at.last);
        assert_eq!(last.samples_seen, 30);
        // Steps: 1 on the first window, then one per new sample.
        assert_eq!(at.step, 30 - 3 + 1);
        assert_eq!(last.loadings.dim(), (120, 3));
        assert!(last.rotation.is_none());
    }

    #[test]
    fn recovers_the_planted_components_from_one_pass() {
        let planted = planted_sparse_pca(150, 80, 2, 10, 0.05, 3);
        let mut cfg = StreamingGivensSpcaConfig::new(3);
        cfg.gamma = 0.3;
        let mut obs = Models::default();
        cfg.fit(
            planted.data.view(),
            &Schedule::last_only(1000),
            &mut seeded(4),
            &mut obs,
        )
        .unwrap();
        let z = &obs.seen.last().unwrap().1.loadings;
        let best = (0..z.ncols())
            .map(|j| z.column(j).dot(&planted.loadings[0]).abs())
            .fold(0.0f64, f64::max);
        assert!(
            best > 0.9,
            "strongest planted loading found with |cos| {best}"
        );
        let nnz = z.iter().filter(|v| **v != 0.0).count();
        assert!(nnz < 60, "nnz {nnz}");
    }

    #[test]
    fn flops_of_one_outer_step_match_the_hand_count() {
        // d = 4, m = 2, n = 3, absolute γ, grid of 3 points, L_in = 1, no shuffle.
        // Setup: 3·4·2 = 24. Step 1: one coordinate step, 3·(12·4 + 2) = 150 (+24 if rotated).
        // Step 2: norms 2·4·2 = 16, new column 3·4 = 12, one coordinate step again.
        let a = ndarray::array![
            [1.0, 0.3, -0.2],
            [0.2, 1.1, 0.4],
            [-0.5, 0.1, 0.9],
            [0.0, 0.7, 0.3]
        ];
        let cfg = StreamingGivensSpcaConfig {
            gamma: 0.2,
            gamma_scale: GammaScale::Absolute,
            angle: AngleSearch::Grid { points: 3 },
            inner_steps: Some(1),
            shuffle: false,
            ..StreamingGivensSpcaConfig::new(2)
        };
        let mut obs = Models::default();
        cfg.fit(
            a.view(),
            &Schedule::new(vec![0, 1, 2]),
            &mut seeded(1),
            &mut obs,
        )
        .unwrap();
        let f: Vec<u64> = obs.seen.iter().map(|(_, m)| m.flops).collect();
        assert_eq!(f[0], 24);
        // Rows that can pass: the first window (columns 0, 1) has row norms² 1.09, 1.25,
        // 0.26, 0.49, all above γ² = 0.04, so d_a = d = 4: row norms 2·4·2 = 16 beside the
        // objectives 24; each later difference from the all-rows count is the row-norm update
        // 4·4 = 16 of the replacement.
        let fa: Vec<u64> = obs.seen.iter().map(|(_, m)| m.flops_active_rows).collect();
        assert_eq!(fa[0], 16 + 24);
        assert_eq!(fa[1] - fa[0], f[1] - f[0]);
        assert_eq!(fa[2] - fa[1], f[2] - f[1] + 16);
        let step = flops::spca_step(4, 3, false);
        assert_eq!(step, 150);
        let s1 = f[1] - f[0];
        assert!(s1 == 150 || s1 == 150 + 24, "{s1}");
        let s2 = f[2] - f[1];
        assert!(s2 == 16 + 12 + 150 || s2 == 16 + 12 + 150 + 24, "{s2}");
    }

    #[test]
    fn same_seed_same_run() {
        let planted = planted_sparse_pca(50, 30, 2, 5, 0.1, 8);
        let run = |seed| {
            let mut obs = Models::default();
            StreamingGivensSpcaConfig::new(3)
                .fit(
                    planted.data.view(),
                    &Schedule::new(vec![0, 5, 28]),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
            obs.seen.into_iter().map(|(_, m)| m).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        for (cfg, param) in [
            StreamingGivensSpcaConfig::new(1),
            StreamingGivensSpcaConfig {
                sample_fraction: 0.0,
                ..StreamingGivensSpcaConfig::new(3)
            },
            StreamingGivensSpcaConfig {
                sample_fraction: 1.5,
                ..StreamingGivensSpcaConfig::new(3)
            },
            StreamingGivensSpcaConfig {
                inner_steps: Some(0),
                ..StreamingGivensSpcaConfig::new(3)
            },
            StreamingGivensSpcaConfig {
                gamma: -0.1,
                ..StreamingGivensSpcaConfig::new(3)
            },
            StreamingGivensSpcaConfig {
                angle: AngleSearch::Grid { points: 0 },
                ..StreamingGivensSpcaConfig::new(3)
            },
        ]
        .into_iter()
        .zip([
            "components",
            "sample_fraction",
            "sample_fraction",
            "inner_steps",
            "gamma",
            "angle.points",
        ]) {
            assert_eq!(cfg.check().unwrap_err().param, param, "{cfg:?}");
        }
        // Fewer samples than components.
        let a = ndarray::Array2::<f64>::ones((5, 2));
        let err = StreamingGivensSpcaConfig::new(3).fit(
            a.view(),
            &Schedule::last_only(3),
            &mut seeded(1),
            &mut Models::default(),
        );
        assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "components"));
    }
}
