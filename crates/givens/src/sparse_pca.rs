//! Algorithm 2: Givens coordinate maximisation for sparse PCA with `m = n` (spec §3.1–3.2), and
//! the pieces Algorithm 5 shares: the coordinate function `h`, the `AU` window, solveForZ and
//! pattern filling (spec §3.4).
//!
//! # Objective
//!
//! Data `A ∈ R^{d×n}` (rows = variables/genes, columns = samples). Journée et al.'s §2.5.1 form
//! (Eq. 6), maximised over `U ∈ O_n`:
//!
//! ```text
//! F(U) = Σ_j Σ_k [ |(AU)_kj| − γ ]_+²
//! h(θ) = Σ_k [ |c·x_k + s·y_k| − γ ]_+² + [ |−s·x_k + c·y_k| − γ ]_+²     (x, y = columns i, j of AU)
//! ```
//!
//! `U` itself is never needed: the state is `AU` (`d × n`, stored column by column so a rotation
//! and an evaluation of `h` stream two contiguous columns). `U_0 = I` \[A\], so `AU = A` at the
//! start. `h(θ + π/2) = h(θ)` (the columns swap up to sign), so the search runs on
//! `[−π/4, π/4]`; with `γ = 0`, `h` is constant and the method never moves (tested).
//!
//! # The 1-D maximiser \[A\]
//!
//! The text gives only "5–10 evaluations of h". Default: Brent's method on `[−π/4, π/4]`, x-tolerance
//! `1e-3` rad, at most 10 evaluations (spec §3.2); `angle = { method = "grid", points = N }`
//! is the validation mode. Per-column objectives `Σ_k [|AU_kj| − γ]_+²` are cached, so
//! `h(0)` is known without an evaluation; a step is **accepted only if it raises `h` above
//! `h(0)`** (Brent finds a local maximum of a non-concave function and may return a worse
//! point), by more than `1e-12·h(0)` (rounding: with `γ = 0`, `h` is constant and a rounding
//! "gain" would rotate by an arbitrary angle): the objective is monotone non-decreasing over the
//! run (tested against a fresh evaluation of `F` after every step).
//!
//! # γ scale \[A\] (spec §5.1)
//!
//! `gamma_scale = "relative"` (default): `γ = gamma · max_k ‖a_k‖₂` over the rows `a_k` of `A`,
//! as GPower's reference code scales its `ρ`, so one `gamma` means the same for both methods
//! (for `gamma ≥ 1` every loading is zero). `"absolute"`: `γ = gamma`.
//!
//! # solveForZ (spec §3.4, Journée et al. 2010 \[X\])
//!
//! `Z[:, j] = normalise(sign(AU[:, j]) ∘ max(|AU[:, j]| − γ, 0))`, a zero column when nothing
//! exceeds `γ`. With `pattern_filling = true` (default false, spec §3.4 \[A\]) the pattern
//! `P = {Z ≠ 0}` is kept and the values re-fitted by GPower's block pattern filling:
//! alternate `X = polar(AᵀZ)` and `Z = (A X) masked to P`, columns normalised, until the relative
//! change of `Σ_j X_jᵀ(AᵀZ)_j` is below `1e-6` (at most 1000 iterations).
//!
//! # A step, FLOPs, the model
//!
//! One step of the [`Schedule`] is one coordinate step (Algorithm 1 driver, [`super::coordinate`]);
//! a sweep is `n(n−1)/2` steps. FLOPs (spec §6.3): setup `2dn` (row norms, relative γ only) +
//! `3dn` (column objectives); per step `E·(12d + 2)` for `E` evaluations of `h`, plus `6d` when
//! the rotation is applied. The model's `flops` is that cumulative count over all `d` rows;
//! `flops_active_rows` counts the same work over the `d_a` rows with `‖a_k‖ > γ`, the only rows
//! whose entries of `AU` can pass the threshold (`|(AU)_kj| ≤ ‖a_k‖` for orthogonal `U`; the
//! implementation still works on all rows): setup `2dn + 3·d_a·n`, per step
//! `E·(12d_a + 2)` plus `6d_a` when it rotates ([`flops`] module docs). `extract_flops` is the
//! cost of forming `Z` at that checkpoint (solveForZ, pattern filling), reported separately
//! because spec §6.3 does not count monitoring work — add it for the final model if the
//! extraction is to be charged. `track_u = true` also rotates and reports `U` (`n × n`,
//! `6n` FLOPs more per accepted step, counted).

use super::angle::{Search, brent_max, grid_max};
use super::coordinate::{CoordinateProblem, Descent, run};
use super::rotation::{ColMatrix, Givens, Selection};
use super::{SparsePca, SparsePcaModel, flops};
use dyad_core::{Control, Observer, Rng, Schedule};
use dyad_kernels::linalg::{dot, thin_svd};
use dyad_kernels::{AlgoError, Checked, ParamError, params};
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};
use std::f64::consts::FRAC_PI_4;

/// How `gamma` is turned into the threshold `γ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GammaScale {
    /// `γ = gamma · max_k ‖a_k‖₂` (rows of the data; Algorithm 5: rows of the first window).
    #[default]
    Relative,
    /// `γ = gamma`.
    Absolute,
}

/// The 1-D search for the angle of a sparse-PCA coordinate step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "lowercase", deny_unknown_fields)]
pub enum AngleSearch {
    /// Brent's method to `xtol` radians, at most `max_evals` evaluations of `h`.
    Brent { xtol: f64, max_evals: u32 },
    /// The best of `points` equally spaced angles in `[−π/4, π/4)` (validation mode).
    Grid { points: u32 },
}

impl Default for AngleSearch {
    fn default() -> Self {
        AngleSearch::Brent {
            xtol: 1e-3,
            max_evals: 10,
        }
    }
}

/// Its fields by their own names (`xtol`, `max_evals`, `points`): a configuration names
/// them under `angle`.
impl Checked for AngleSearch {
    fn check(&self) -> Result<(), ParamError> {
        match *self {
            AngleSearch::Brent { xtol, max_evals } => {
                params::positive("xtol", xtol)?;
                params::at_least_one("max_evals", max_evals.into())
            }
            AngleSearch::Grid { points } => params::count_at_least("points", points.into(), 2),
        }
    }
}

impl AngleSearch {
    fn maximize(&self, f: impl FnMut(f64) -> f64) -> Search {
        match *self {
            AngleSearch::Brent { xtol, max_evals } => {
                brent_max(f, -FRAC_PI_4, FRAC_PI_4, xtol, max_evals)
            }
            AngleSearch::Grid { points } => grid_max(f, -FRAC_PI_4, FRAC_PI_4, points),
        }
    }
}

/// Smallest relative gain a sparse-PCA step must make to be accepted.
const ACCEPT_REL: f64 = 1e-12;

/// `[|x| − γ]_+`.
#[inline(always)]
fn shrink(x: f64, gamma: f64) -> f64 {
    let t = x.abs() - gamma;
    if t > 0.0 { t } else { 0.0 }
}

/// The two halves of `h(θ)` for columns `x, y`: `(Σ_k [|c x_k + s y_k| − γ]_+², Σ_k [|−s x_k
/// + c y_k| − γ]_+²)`. `12d + 2` FLOPs with the `sin`/`cos` of the caller.
pub fn h_eval(x: &[f64], y: &[f64], c: f64, s: f64, gamma: f64) -> (f64, f64) {
    assert_eq!(x.len(), y.len());
    const L: usize = 8;
    let (mut ai, mut aj) = ([0.0f64; L], [0.0f64; L]);
    let (cx, cy) = (x.chunks_exact(L), y.chunks_exact(L));
    let (rx, ry) = (cx.remainder(), cy.remainder());
    for (xs, ys) in cx.zip(cy) {
        for q in 0..L {
            let u = shrink(c * xs[q] + s * ys[q], gamma);
            let v = shrink(c * ys[q] - s * xs[q], gamma);
            ai[q] += u * u;
            aj[q] += v * v;
        }
    }
    let (mut ti, mut tj) = (0.0, 0.0);
    for (&xv, &yv) in rx.iter().zip(ry) {
        let u = shrink(c * xv + s * yv, gamma);
        let v = shrink(c * yv - s * xv, gamma);
        ti += u * u;
        tj += v * v;
    }
    (ai.iter().sum::<f64>() + ti, aj.iter().sum::<f64>() + tj)
}

/// `Σ_k [|x_k| − γ]_+²`.
pub fn column_objective(x: &[f64], gamma: f64) -> f64 {
    x.iter()
        .map(|&v| {
            let t = shrink(v, gamma);
            t * t
        })
        .sum()
}

/// `F = Σ_j Σ_k [|M_kj| − γ]_+²` for any matrix (a reference for tests and checkpoints).
pub fn spca_objective(m: ArrayView2<'_, f64>, gamma: f64) -> f64 {
    m.iter()
        .map(|&v| {
            let t = shrink(v, gamma);
            t * t
        })
        .sum()
}

/// Which rows of the window the rows-that-can-pass FLOP count rotates ([`flops`] module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowScope {
    /// The data never change (Algorithm 2): a row that cannot pass now never can, and its
    /// rotations are not needed.
    Fixed,
    /// Columns are replaced (Algorithm 5): a row that cannot pass now may after the next
    /// sample, so every row is still rotated.
    Streaming,
}

/// The working matrix `AU` of Algorithms 2 and 5 with its cached column objectives, the
/// squared norms of its rows (invariant under rotations) and the FLOPs counted over the rows
/// that can pass the threshold (`‖row‖ > γ`; [`flops`] module docs). The all-rows count is the
/// caller's counter passed to each method.
#[derive(Debug, Clone)]
pub struct SpcaWindow {
    au: ColMatrix,
    col_obj: Vec<f64>,
    gamma: f64,
    search: AngleSearch,
    u: Option<ColMatrix>,
    row_norm2: Vec<f64>,
    active: usize,
    scope: RowScope,
    flops_active: u64,
}

/// Rows whose squared norm exceeds `γ²`: the rows that can pass the threshold.
fn count_active(row_norm2: &[f64], gamma: f64) -> usize {
    let g2 = gamma * gamma;
    row_norm2.iter().filter(|&&r| r > g2).count()
}

impl SpcaWindow {
    /// A window over `au` (`d × m`): `3dm` FLOPs for the column objectives (rows that can
    /// pass: `2dm` for the row norms that find them, then `3·d_a·m`). With `track_u` the
    /// `m × m` rotation `U` (from `I`) is kept too.
    pub fn new(
        au: ColMatrix,
        gamma: f64,
        search: AngleSearch,
        track_u: bool,
        scope: RowScope,
        flops: &mut u64,
    ) -> Self {
        let (d, m) = (au.rows(), au.cols());
        let col_obj = (0..m).map(|j| column_objective(au.col(j), gamma)).collect();
        *flops += flops::spca_objective(d * m);
        let mut row_norm2 = vec![0.0; d];
        for j in 0..m {
            for (r, &v) in row_norm2.iter_mut().zip(au.col(j)) {
                *r += v * v;
            }
        }
        let active = count_active(&row_norm2, gamma);
        let u = track_u.then(|| ColMatrix::identity(m));
        Self {
            au,
            col_obj,
            gamma,
            search,
            u,
            row_norm2,
            active,
            scope,
            flops_active: flops::norms(d, m) + flops::spca_objective(active * m),
        }
    }

    /// Rows that can pass the threshold in the current window (`‖row‖ > γ`).
    pub fn active_rows(&self) -> usize {
        self.active
    }

    /// FLOPs so far counted over the rows that can pass the threshold.
    pub fn flops_active(&self) -> u64 {
        self.flops_active
    }

    pub fn au(&self) -> &ColMatrix {
        &self.au
    }

    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    pub fn u(&self) -> Option<&ColMatrix> {
        self.u.as_ref()
    }

    /// `F` from the cached column objectives.
    pub fn value(&self) -> f64 {
        self.col_obj.iter().sum()
    }

    /// The coordinate step on columns `(i, j)`: search, accept if `h` rises above `h(0)`,
    /// rotate. Returns the gain `h(θ*) − h(0)` (0 when rejected).
    pub fn coordinate_step(&mut self, i: usize, j: usize, flops: &mut u64) -> f64 {
        let d = self.au.rows();
        let h0 = self.col_obj[i] + self.col_obj[j];
        let gamma = self.gamma;
        let (x, y) = (self.au.col(i), self.au.col(j));
        let mut best = (h0, 0.0, 0.0, 0.0); // (h, h_i, h_j, θ)
        let search = self.search.maximize(|theta| {
            let (s, c) = theta.sin_cos();
            let (hi, hj) = h_eval(x, y, c, s, gamma);
            if hi + hj > best.0 {
                best = (hi + hj, hi, hj, theta);
            }
            hi + hj
        });
        // Accept only a gain above rounding (with γ = 0, h is constant up to rounding and a
        // "gain" of 1e-16 would rotate by an arbitrary angle).
        let rotated = best.0 > h0 + ACCEPT_REL * h0;
        *flops += flops::spca_step(d, search.evals, rotated);
        let rotated_rows = match self.scope {
            RowScope::Fixed => self.active,
            RowScope::Streaming => d,
        };
        self.flops_active += search.evals as u64 * flops::spca_h_eval(self.active)
            + if rotated {
                flops::rotation(rotated_rows)
            } else {
                0
            };
        if !rotated {
            return 0.0;
        }
        let g = Givens::new(i, j, best.3);
        self.au.rotate(g);
        self.col_obj[i] = best.1;
        self.col_obj[j] = best.2;
        if let Some(u) = self.u.as_mut() {
            u.rotate(g);
            *flops += flops::rotation(u.rows());
            self.flops_active += flops::rotation(u.rows());
        }
        best.0 - h0
    }

    /// Index of the column of least Euclidean norm (`2dm` FLOPs in both counts; ties: lowest
    /// index).
    pub fn weakest_column(&mut self, flops: &mut u64) -> usize {
        *flops += flops::norms(self.au.rows(), self.au.cols());
        self.flops_active += flops::norms(self.au.rows(), self.au.cols());
        let mut best = (f64::INFINITY, 0);
        for j in 0..self.au.cols() {
            let n = dot(self.au.col(j), self.au.col(j));
            if n < best.0 {
                best = (n, j);
            }
        }
        best.1
    }

    /// Overwrite column `j` with `sample`: `3d` FLOPs for its objective (rows that can pass:
    /// `4d` to update the row norms, then `3·d_a` over the rows that can pass after it).
    pub fn replace_column(&mut self, j: usize, sample: impl Iterator<Item = f64>, flops: &mut u64) {
        let col = self.au.col_mut(j);
        for ((o, v), r) in col.iter_mut().zip(sample).zip(self.row_norm2.iter_mut()) {
            *r += v * v - *o * *o;
            *o = v;
        }
        self.active = count_active(&self.row_norm2, self.gamma);
        self.col_obj[j] = column_objective(self.au.col(j), self.gamma);
        let d = self.au.rows();
        *flops += flops::spca_objective(d);
        self.flops_active += flops::row_norms_update(d) + flops::spca_objective(self.active);
    }
}

/// solveForZ (module docs): soft-threshold each column of `au` at `γ` and normalise. Returns
/// `Z` (`d × m`) and its FLOPs.
pub fn solve_for_z(au: &ColMatrix, gamma: f64) -> (Array2<f64>, u64) {
    let (d, m) = (au.rows(), au.cols());
    let mut z = Array2::<f64>::zeros((d, m));
    let mut nnz = 0;
    for j in 0..m {
        let col = au.col(j);
        let mut norm2 = 0.0;
        for (k, &v) in col.iter().enumerate() {
            let t = shrink(v, gamma);
            if t > 0.0 {
                let zv = t.copysign(v);
                z[[k, j]] = zv;
                norm2 += zv * zv;
                nnz += 1;
            }
        }
        if norm2 > 0.0 {
            let inv = 1.0 / norm2.sqrt();
            z.column_mut(j).mapv_inplace(|v| v * inv);
        }
    }
    (z, flops::solve_for_z(d, m, nnz))
}

/// GPower's block pattern filling with all `μ_j = 1` (module docs): re-fit the non-zero values
/// of `z` (`d × m`, pattern = its non-zeros) to the data `a` (`d × n`, rows contiguous).
/// Returns the FLOPs: per iteration `4n·nnz` (`AᵀZ` and the masked `A X`), the polar factor
/// `14nm² + 8m³`, `2nm` for the objective and `3·nnz + m` for the normalisation.
pub fn pattern_fill_block(
    a: ArrayView2<'_, f64>,
    z: &mut Array2<f64>,
    max_iter: u32,
    tol: f64,
) -> Result<u64, AlgoError> {
    let (d, n) = a.dim();
    let m = z.ncols();
    assert_eq!(
        z.nrows(),
        d,
        "pattern_fill_block: Z has the wrong number of rows"
    );
    let a = a.as_standard_layout();
    let pattern: Vec<Vec<usize>> = (0..m)
        .map(|j| (0..d).filter(|&k| z[[k, j]] != 0.0).collect())
        .collect();
    let nnz: usize = pattern.iter().map(Vec::len).sum();
    if nnz == 0 {
        return Ok(0);
    }
    let mut fl = 0u64;
    let mut f_prev = f64::NAN;
    let mut iter = 1u32;
    let mut azt = Array2::<f64>::zeros((m, n)); // (AᵀZ)ᵀ: column j of AᵀZ as a row
    loop {
        azt.fill(0.0);
        for (j, rows) in pattern.iter().enumerate() {
            let mut out = azt.row_mut(j);
            let out = out.as_slice_mut().expect("standard layout");
            for &k in rows {
                let w = z[[k, j]];
                let ak = a.row(k);
                for (o, &v) in out.iter_mut().zip(ak.as_slice().expect("standard layout")) {
                    *o += w * v;
                }
            }
        }
        let (u, _, v) =
            thin_svd(azt.t()).map_err(|e| AlgoError::Numerical(format!("pattern filling: {e}")))?;
        let xt = v.dot(&u.t()); // (U Vᵀ)ᵀ, m × n: column j of X as a row
        let xt = xt.as_standard_layout();
        let ff: f64 = (0..m)
            .map(|j| {
                dot(
                    xt.row(j).as_slice().unwrap(),
                    azt.row(j).as_slice().unwrap(),
                )
            })
            .sum();
        for (j, rows) in pattern.iter().enumerate() {
            let xj = xt.row(j);
            let xj = xj.as_slice().expect("standard layout");
            let mut norm2 = 0.0;
            for &k in rows {
                let v = dot(a.row(k).as_slice().unwrap(), xj);
                z[[k, j]] = v;
                norm2 += v * v;
            }
            if norm2 > 0.0 {
                let inv = 1.0 / norm2.sqrt();
                for &k in rows {
                    z[[k, j]] *= inv;
                }
            }
        }
        fl += 4 * (n * nnz) as u64 + flops::polar(n, m) + 2 * (n * m) as u64 + (3 * nnz + m) as u64;
        let done = iter > 2 && ((ff - f_prev).abs() / f_prev.abs() < tol) || iter > max_iter;
        if done {
            break;
        }
        f_prev = ff;
        iter += 1;
    }
    Ok(fl)
}

/// Check the data matrix: non-empty, finite.
pub(crate) fn check_data(a: ArrayView2<'_, f64>, who: &str) -> Result<(), AlgoError> {
    let (d, n) = a.dim();
    if d == 0 || n == 0 {
        return Err(AlgoError::data(format!(
            "{who}: data must be d x n with d >= 1 and n >= 1, got {d} x {n}"
        )));
    }
    if !a.iter().all(|v| v.is_finite()) {
        return Err(AlgoError::data(format!(
            "{who}: data has non-finite entries"
        )));
    }
    Ok(())
}

/// `max_k ‖a_k‖₂` over the rows of `a`; `2dn` FLOPs.
pub(crate) fn max_row_norm(a: ArrayView2<'_, f64>, flops: &mut u64) -> f64 {
    *flops += flops::norms(a.nrows(), a.ncols());
    a.rows()
        .into_iter()
        .map(|r| r.iter().map(|v| v * v).sum::<f64>())
        .fold(0.0f64, f64::max)
        .sqrt()
}

/// The sparsity `gamma`: finite and non-negative.
pub(crate) fn check_gamma(gamma: f64) -> Result<(), ParamError> {
    params::non_negative("gamma", gamma)
}

/// Parameters of Algorithm 2 (Givens sparse PCA with `m = n`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GivensSpcaConfig {
    /// Sparsity `gamma ≥ 0`, scaled by `gamma_scale` (module docs; 0.1).
    #[serde(default = "default_gamma")]
    pub gamma: f64,
    #[serde(default)]
    pub gamma_scale: GammaScale,
    /// The 1-D angle search (Brent, xtol 1e-3, 10 evaluations).
    #[serde(default)]
    pub angle: AngleSearch,
    /// Coordinate selection (uniform with replacement, as Algorithm 1).
    #[serde(default)]
    pub selection: Selection,
    /// Sweep-window convergence tolerance, 0 = run to the budget (1e-10).
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Stop once this many FLOPs are spent (none).
    #[serde(default)]
    pub max_flops: Option<u64>,
    /// Rotate and report `U` as well (false).
    #[serde(default)]
    pub track_u: bool,
    /// Re-fit the loadings on their pattern with GPower's pattern filling (false).
    #[serde(default)]
    pub pattern_filling: bool,
}

pub(crate) fn default_gamma() -> f64 {
    0.1
}
pub(crate) fn default_tolerance() -> f64 {
    1e-10
}

impl Default for GivensSpcaConfig {
    fn default() -> Self {
        Self {
            gamma: default_gamma(),
            gamma_scale: GammaScale::Relative,
            angle: AngleSearch::default(),
            selection: Selection::Uniform,
            tolerance: default_tolerance(),
            max_flops: None,
            track_u: false,
            pattern_filling: false,
        }
    }
}

impl Checked for GivensSpcaConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_gamma(self.gamma)?;
        self.angle.check().map_err(|e| e.under("angle"))?;
        self.descent().check()
    }
}

impl GivensSpcaConfig {
    fn descent(&self) -> Descent {
        Descent {
            selection: self.selection,
            tolerance: self.tolerance,
            max_flops: self.max_flops,
        }
    }
}

/// Algorithm 2's problem for the coordinate driver.
struct SpcaProblem<'a> {
    window: SpcaWindow,
    data: ArrayView2<'a, f64>,
    pattern_filling: bool,
}

impl CoordinateProblem for SpcaProblem<'_> {
    type Model = SparsePcaModel;

    fn dim(&self) -> usize {
        self.window.au().cols()
    }

    fn value(&self) -> f64 {
        self.window.value()
    }

    fn coordinate_step(&mut self, i: usize, j: usize, flops: &mut u64) -> Result<f64, AlgoError> {
        Ok(self.window.coordinate_step(i, j, flops))
    }

    fn report(
        &mut self,
        flops: u64,
        show: &mut dyn FnMut(&SparsePcaModel) -> Control,
    ) -> Result<Control, AlgoError> {
        let w = &self.window;
        let (mut z, mut extract) = solve_for_z(w.au(), w.gamma());
        if self.pattern_filling {
            extract += pattern_fill_block(self.data, &mut z, 1000, 1e-6)?;
        }
        let model = SparsePcaModel {
            loadings: z,
            rotation: w.u().map(ColMatrix::to_array),
            objective: spca_objective(w.au().view(), w.gamma()),
            gamma: w.gamma(),
            flops,
            flops_active_rows: w.flops_active(),
            extract_flops: extract,
            samples_seen: self.data.ncols(),
        };
        Ok(show(&model))
    }
}

impl SparsePca for GivensSpcaConfig {
    /// `data`: `A`, `d × n` (variables × samples); the model has `m = n` components.
    fn fit(
        &self,
        data: ArrayView2<'_, f64>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<SparsePcaModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        check_data(data, "Givens sparse PCA")?;
        run(self.descent(), schedule, rng, obs, |fl| {
            let gamma = match self.gamma_scale {
                GammaScale::Relative => self.gamma * max_row_norm(data, fl),
                GammaScale::Absolute => self.gamma,
            };
            let window = SpcaWindow::new(
                ColMatrix::from_array(data),
                gamma,
                self.angle,
                self.track_u,
                RowScope::Fixed,
                fl,
            );
            Ok(SpcaProblem {
                window,
                data,
                pattern_filling: self.pattern_filling,
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `givens-spca` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "givens-spca",
    label: "Givens",
    description: "Algorithm 2: Givens coordinate maximisation of Eq. 6 over U in O_n (m = n), Brent angle search, solveForZ (spec §3.2)",
    family: crate::SPARSE_PCA,
    // 2: also counts its FLOPs over the rows that can pass the threshold
    // (`flops_active_rows`, issue 42 §4); the all-rows count is unchanged.
    version: 2,
    machine_tolerance: 0.0,
    build: crate::sparse_pca_solver::<GivensSpcaConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rotation::orthogonality_defect;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Models, planted_sparse_pca};
    use rand::Rng as _;

    fn random(d: usize, n: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        Array2::from_shape_fn((d, n), |_| rng.random_range(-1.0..1.0))
    }

    #[test]
    fn h_matches_the_direct_objective_and_has_period_pi_over_2() {
        let a = random(37, 4, 1);
        let gamma = 0.3;
        for &theta in &[-0.7, -0.2, 0.0, 0.4, 1.3] {
            let (s, c) = f64::sin_cos(theta);
            let cm = ColMatrix::from_array(a.view());
            let (hi, hj) = h_eval(cm.col(1), cm.col(3), c, s, gamma);
            let mut rotated = a.clone();
            crate::rotation::rotate_cols(rotated.view_mut(), Givens::new(1, 3, theta));
            let want_i = column_objective(rotated.column(1).to_vec().as_slice(), gamma);
            let want_j = column_objective(rotated.column(3).to_vec().as_slice(), gamma);
            assert!((hi - want_i).abs() < 1e-12 && (hj - want_j).abs() < 1e-12);
            let (s2, c2) = f64::sin_cos(theta + std::f64::consts::FRAC_PI_2);
            let (hi2, hj2) = h_eval(cm.col(1), cm.col(3), c2, s2, gamma);
            assert!(((hi + hj) - (hi2 + hj2)).abs() < 1e-12);
            // γ = 0: h is the constant Σ x² + y².
            let (h0i, h0j) = h_eval(cm.col(1), cm.col(3), c, s, 0.0);
            let energy: f64 = cm.col(1).iter().chain(cm.col(3)).map(|v| v * v).sum();
            assert!((h0i + h0j - energy).abs() < 1e-12);
        }
    }

    #[test]
    fn objective_never_decreases_and_rotation_preserves_the_frobenius_norm() {
        let a = random(60, 12, 2);
        let gamma = 0.2
            * a.rows()
                .into_iter()
                .map(|r| r.dot(&r))
                .fold(0.0, f64::max)
                .sqrt();
        let mut fl = 0;
        let mut w = SpcaWindow::new(
            ColMatrix::from_array(a.view()),
            gamma,
            AngleSearch::default(),
            true,
            RowScope::Fixed,
            &mut fl,
        );
        let mut rng = seeded(3);
        let mut sel = crate::rotation::PairSelector::new(12, Selection::Uniform);
        let fro = a.iter().map(|v| v * v).sum::<f64>();
        let mut prev = spca_objective(w.au().view(), gamma);
        let mut accepted = 0;
        for _ in 0..2000 {
            let (i, j) = sel.next(&mut rng);
            let gain = w.coordinate_step(i, j, &mut fl);
            let now = spca_objective(w.au().view(), gamma);
            assert!(now >= prev - 1e-12 * prev.max(1.0), "{now} < {prev}");
            assert!((now - prev - gain).abs() < 1e-9 * now.max(1.0));
            if gain > 0.0 {
                accepted += 1;
            }
            prev = now;
        }
        assert!(accepted > 50, "only {accepted} accepted steps");
        // AU = A U exactly (up to rounding), U orthogonal, ‖AU‖_F = ‖A‖_F.
        let u = w.u().unwrap().to_array();
        assert!(orthogonality_defect(u.view()) < 1e-12);
        let diff = &a.dot(&u) - &w.au().to_array();
        assert!(diff.iter().all(|v| v.abs() < 1e-11));
        let fro_after = w.au().as_slice().iter().map(|v| v * v).sum::<f64>();
        assert!((fro - fro_after).abs() < 1e-9 * fro);
        assert!((w.value() - prev).abs() < 1e-9 * prev);
    }

    #[test]
    fn gamma_zero_never_moves() {
        let a = random(20, 6, 4);
        let cfg = GivensSpcaConfig {
            gamma: 0.0,
            ..Default::default()
        };
        let mut obs = Models::default();
        cfg.fit(
            a.view(),
            &Schedule::new(vec![0, 300]),
            &mut seeded(1),
            &mut obs,
        )
        .unwrap();
        let (first, last) = (&obs.seen[0].1, &obs.seen.last().unwrap().1);
        // Rounding may move it by tiny angles; the loadings stay those of A.
        let d: f64 = (&first.loadings - &last.loadings)
            .iter()
            .map(|v| v.abs())
            .fold(0.0, f64::max);
        assert!(d < 1e-6, "moved by {d}");
    }

    #[test]
    fn solve_for_z_thresholds_and_normalises() {
        let a = ndarray::array![[3.0, 0.1], [-2.0, 0.2], [0.5, -0.05]];
        let (z, fl) = solve_for_z(&ColMatrix::from_array(a.view()), 1.0);
        // Column 0: (2, −1, 0)/√5; column 1: all below γ → zero.
        let r = 5f64.sqrt();
        assert!((z[[0, 0]] - 2.0 / r).abs() < 1e-15 && (z[[1, 0]] + 1.0 / r).abs() < 1e-15);
        assert_eq!(z[[2, 0]], 0.0);
        assert!(z.column(1).iter().all(|&v| v == 0.0));
        assert_eq!(fl, flops::solve_for_z(3, 2, 2));
        assert_eq!(fl, 6 + 6 + 2);
    }

    #[test]
    fn pattern_filling_keeps_the_pattern_and_fits_the_leading_direction() {
        // One column, pattern = all rows: pattern filling is the power method on A Aᵀ, so Z
        // converges to the top left singular vector.
        let a = random(8, 5, 5);
        let mut z = Array2::from_elem((8, 1), 1.0 / 8f64.sqrt());
        let fl = pattern_fill_block(a.view(), &mut z, 1000, 1e-12).unwrap();
        assert!(fl > 0);
        let (u, _, _) = thin_svd(a.view()).unwrap();
        let cos = z.column(0).dot(&u.column(0)).abs();
        assert!(cos > 1.0 - 1e-8, "cos {cos}");
        // A zero in the pattern stays zero.
        let mut z = Array2::from_elem((8, 2), 0.5);
        z[[3, 1]] = 0.0;
        pattern_fill_block(a.view(), &mut z, 100, 1e-6).unwrap();
        assert_eq!(z[[3, 1]], 0.0);
        assert!((z.column(1).dot(&z.column(1)) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn algorithm_2_finds_sparse_loadings_on_planted_data() {
        let planted = planted_sparse_pca(200, 10, 2, 10, 0.05, 6);
        let cfg = GivensSpcaConfig {
            gamma: 0.25,
            ..Default::default()
        };
        let mut obs = Models::default();
        cfg.fit(
            planted.data.view(),
            &Schedule::new(vec![0, 45 * 10, 45 * 40]),
            &mut seeded(7),
            &mut obs,
        )
        .unwrap();
        let first = &obs.seen[0].1;
        let last = &obs.seen.last().unwrap().1;
        assert!(last.objective > first.objective);
        assert!(last.flops > first.flops);
        // The two strongest loadings point along the planted supports.
        let z = &last.loadings;
        for truth in &planted.loadings {
            let best = (0..z.ncols())
                .map(|j| z.column(j).dot(truth).abs())
                .fold(0.0f64, f64::max);
            assert!(best > 0.95, "planted loading recovered with |cos| {best}");
        }
        // And the solution is sparse.
        let nnz = z.iter().filter(|v| **v != 0.0).count();
        assert!(nnz < z.len() / 4, "nnz {nnz} of {}", z.len());
    }

    #[test]
    fn flop_counts_match_hand_counts_on_a_tiny_case() {
        // d = 3, n = 2, relative γ: setup 2·3·2 (row norms) + 3·3·2 (objectives) = 30.
        // A grid search of 4 points costs 4·(12·3 + 2) = 152, plus 6·3 = 18 if it rotates.
        let a = ndarray::array![[1.0, 0.2], [0.1, 0.9], [0.5, -0.4]];
        let cfg = GivensSpcaConfig {
            gamma: 0.1,
            angle: AngleSearch::Grid { points: 4 },
            tolerance: 0.0,
            ..Default::default()
        };
        let mut obs = Models::default();
        cfg.fit(
            a.view(),
            &Schedule::new(vec![0, 1]),
            &mut seeded(1),
            &mut obs,
        )
        .unwrap();
        assert_eq!(obs.seen[0].1.flops, 30);
        let step = obs.seen[1].1.flops - 30;
        let moved = obs.seen[0].1.objective != obs.seen[1].1.objective;
        assert_eq!(step, if moved { 152 + 18 } else { 152 });
        assert_eq!(
            obs.seen[0].1.extract_flops,
            flops::solve_for_z(3, 2, obs.seen[0].1.nnz())
        );
    }

    #[test]
    fn both_flop_counts_match_hand_counts_on_a_tiny_case() {
        // d = 4, n = 2, relative γ = 0.5·max‖a_k‖ = 0.5·√10 ≈ 1.58: rows 0 and 1 (norms √10,
        // √5) can pass, rows 2 and 3 (norms ≈ 0.22, 0.32) cannot, so d_a = 2.
        let a = ndarray::array![[3.0, 1.0], [1.0, 2.0], [0.2, 0.1], [-0.1, 0.3]];
        let cfg = GivensSpcaConfig {
            gamma: 0.5,
            angle: AngleSearch::Grid { points: 4 },
            tolerance: 0.0,
            ..Default::default()
        };
        let mut obs = Models::default();
        cfg.fit(
            a.view(),
            &Schedule::new(vec![0, 1]),
            &mut seeded(1),
            &mut obs,
        )
        .unwrap();
        let (m0, m1) = (&obs.seen[0].1, &obs.seen[1].1);
        // All rows: row norms 2·4·2 = 16 (relative γ), objectives 3·4·2 = 24.
        assert_eq!(m0.flops, 16 + 24);
        // Rows that can pass: the same row norms 16, objectives 3·2·2 = 12.
        assert_eq!(m0.flops_active_rows, 16 + 12);
        // The one pair (0, 1): 4 evaluations of h, 4·(12·4 + 2) = 200 over all rows and
        // 4·(12·2 + 2) = 104 over the two rows that can pass; the rotation 6·4 = 24 / 6·2 = 12.
        assert!(m1.objective > m0.objective, "the step rotates");
        assert_eq!(m1.flops - m0.flops, 200 + 24);
        assert_eq!(m1.flops_active_rows - m0.flops_active_rows, 104 + 12);
        // Absolute γ: the all-rows count has no row norms, the other count still pays them.
        let cfg = GivensSpcaConfig {
            gamma: 1.58,
            gamma_scale: GammaScale::Absolute,
            ..cfg
        };
        let mut obs = Models::default();
        cfg.fit(a.view(), &Schedule::new(vec![0]), &mut seeded(1), &mut obs)
            .unwrap();
        assert_eq!(obs.seen[0].1.flops, 24);
        assert_eq!(obs.seen[0].1.flops_active_rows, 16 + 12);
    }

    #[test]
    fn the_window_counts_rows_that_can_pass_as_it_streams() {
        // d = 3, m = 2, absolute γ = 1: row norms² 4.25, 0.5, 1.09 → rows 0 and 2 can pass.
        let au = ndarray::array![[2.0, 0.5], [0.5, 0.5], [0.3, 1.0]];
        let mut fl = 0;
        let mut w = SpcaWindow::new(
            ColMatrix::from_array(au.view()),
            1.0,
            AngleSearch::Grid { points: 3 },
            false,
            RowScope::Streaming,
            &mut fl,
        );
        assert_eq!(w.active_rows(), 2);
        assert_eq!(fl, 3 * 3 * 2);
        assert_eq!(w.flops_active(), 2 * 3 * 2 + 3 * 2 * 2);
        // A step: 3 evaluations of h over 3 / 2 rows; a streaming window rotates all 3 rows
        // in both counts.
        let (f0, a0) = (fl, w.flops_active());
        let gain = w.coordinate_step(0, 1, &mut fl);
        let rot = if gain > 0.0 { 6 * 3 } else { 0 };
        assert_eq!(fl - f0, 3 * (12 * 3 + 2) + rot);
        assert_eq!(w.flops_active() - a0, 3 * (12 * 2 + 2) + rot);
        // Replace column 1 by a sample that lifts row 1 over γ: rows 0, 1, 2 may pass now
        // unless the rotation moved weight (recount by hand from the window itself).
        let (f1, a1) = (fl, w.flops_active());
        let k = w.weakest_column(&mut fl);
        assert_eq!(fl - f1, 2 * 3 * 2);
        assert_eq!(w.flops_active() - a1, 2 * 3 * 2);
        let (f2, a2) = (fl, w.flops_active());
        w.replace_column(k, [0.0, 3.0, 0.0].into_iter(), &mut fl);
        let by_hand = (0..3)
            .filter(|&r| {
                let n2: f64 = (0..2).map(|j| w.au().col(j)[r].powi(2)).sum();
                n2 > 1.0
            })
            .count();
        assert_eq!(w.active_rows(), by_hand);
        assert!(by_hand >= 2, "row 1 passes after the new sample");
        assert_eq!(fl - f2, 3 * 3);
        assert_eq!(w.flops_active() - a2, 4 * 3 + 3 * by_hand as u64);
        // A fixed-data window charges its rotations over the rows that can pass only.
        let mut fl = 0;
        let mut w = SpcaWindow::new(
            ColMatrix::from_array(au.view()),
            1.0,
            AngleSearch::Grid { points: 3 },
            false,
            RowScope::Fixed,
            &mut fl,
        );
        let (f0, a0) = (fl, w.flops_active());
        let gain = w.coordinate_step(0, 1, &mut fl);
        let (rot_all, rot_active) = if gain > 0.0 { (6 * 3, 6 * 2) } else { (0, 0) };
        assert_eq!(fl - f0, 3 * (12 * 3 + 2) + rot_all);
        assert_eq!(w.flops_active() - a0, 3 * (12 * 2 + 2) + rot_active);
    }

    #[test]
    fn same_seed_same_run() {
        let a = random(30, 8, 9);
        let run = |seed| {
            let mut obs = Models::default();
            GivensSpcaConfig::default()
                .fit(
                    a.view(),
                    &Schedule::new(vec![0, 50, 200]),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
            obs.seen
                .into_iter()
                .map(|(_, m)| m.loadings)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn bad_parameters_and_data_are_rejected() {
        for (cfg, param) in [
            GivensSpcaConfig {
                gamma: -1.0,
                ..Default::default()
            },
            GivensSpcaConfig {
                gamma: f64::NAN,
                ..Default::default()
            },
            GivensSpcaConfig {
                tolerance: -1.0,
                ..Default::default()
            },
            GivensSpcaConfig {
                angle: AngleSearch::Grid { points: 1 },
                ..Default::default()
            },
            GivensSpcaConfig {
                angle: AngleSearch::Brent {
                    xtol: 0.0,
                    max_evals: 5,
                },
                ..Default::default()
            },
            GivensSpcaConfig {
                max_flops: Some(0),
                ..Default::default()
            },
        ]
        .into_iter()
        .zip([
            "gamma",
            "gamma",
            "tolerance",
            "angle.points",
            "angle.xtol",
            "max_flops",
        ]) {
            assert_eq!(cfg.check().unwrap_err().param, param, "{cfg:?}");
            let err = cfg.fit(
                random(4, 3, 1).view(),
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut Models::default(),
            );
            assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == param));
        }
        let mut bad = random(4, 3, 1);
        bad[[0, 0]] = f64::INFINITY;
        let err = GivensSpcaConfig::default().fit(
            bad.view(),
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut Models::default(),
        );
        assert!(matches!(err, Err(AlgoError::Data(_))));
        // Serde: defaults fill in, unknown fields are refused.
        assert_eq!(from_pairs(&[]).unwrap(), GivensSpcaConfig::default());
        assert!(from_pairs(&[("gamma_scal", "absolute")]).is_err());
        assert_eq!(
            from_pairs(&[("gamma_scale", "absolute")])
                .unwrap()
                .gamma_scale,
            GammaScale::Absolute
        );
    }

    /// Deserialise a config from string pairs through serde's value model (no JSON here).
    fn from_pairs(pairs: &[(&str, &str)]) -> Result<GivensSpcaConfig, serde::de::value::Error> {
        use serde::de::value::{Error, MapDeserializer};
        let de: MapDeserializer<'_, _, Error> = MapDeserializer::new(pairs.iter().copied());
        GivensSpcaConfig::deserialize(de)
    }
}
