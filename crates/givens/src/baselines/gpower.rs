//! GPower: the generalised power method for sparse PCA (Journée, Nesterov, Richtárik &
//! Sepulchre, JMLR 2010), the sparse-PCA baseline of the Givens paper (spec §5.1), with the ℓ1 and
//! ℓ0 penalties, single-unit with deflation ("greedy") and block.
//!
//! Structure and constants follow the authors' public MATLAB reference `GPower.m` \[X\]; the
//! data orientation is the thesis's: `A ∈ R^{d×n}`, rows `a_k` = variables (genes), columns =
//! samples (the reference code takes the transpose).
//!
//! # Greedy (single-unit + deflation; Fig. 2 uses ℓ1 with μ = 1 \[T\])
//!
//! For each component, on the deflated matrix `R` (initially `A`):
//!
//! ```text
//! γ = ρ · max_k ‖r_k‖ (ℓ1)  or  ρ · max_k ‖r_k‖² (ℓ0);   x = r_{k*}/‖r_{k*}‖  (k* the longest row)
//! repeat:  v = R x
//!          ℓ1: t = sign(v)∘[|v| − γ]_+, f = Σ t²,        x ← normalise(Rᵀ t)
//!          ℓ0: t = [v² − γ]_+,          f = Σ t,         x ← normalise(Rᵀ(1[t > 0]∘v))
//!          stop if f = 0, or (iteration > 2 and (f − f_prev)/f_prev < tol), or iteration > max_iter
//! v = R x;  ℓ1: z = normalise(sign(v)∘[|v| − γ]_+), then pattern filling on P = {|v| > γ};
//!           deflation R ← R − z (Rᵀz)ᵀ
//!           ℓ0: z = v masked to P = {v² > γ}, y = x ‖z‖, z ← z/‖z‖;  deflation R ← R − z yᵀ
//! ```
//!
//! Pattern filling (single unit, ℓ1): power iterations `u ← R_P R_Pᵀ u / ‖·‖` on the rows of the
//! support, from `z_P`, until the relative change of `−2‖R_P R_Pᵀ u‖` is below `1e-6` (1000
//! iterations at most); a one-variable support gets the value 1. The reference code applies it
//! to every greedy ℓ1 component, so `pattern_filling` defaults to true for greedy ℓ1.
//!
//! # Block (ℓ1 / ℓ0, all μ_j = 1: optimises exactly the Givens methods' Eq. 6 for ℓ1)
//!
//! ```text
//! X = Q-factor of [a_{k*}/‖a_{k*}‖, randn(n, m−1)]   (n × m, random columns from the rng)
//! γ = ρ · max_k ‖a_k‖ (ℓ1)  or  ρ · max_k ‖a_k‖² (ℓ0)
//! repeat: V = A X; ℓ1: T = [|V| − γ]_+, f = Σ T², G = Aᵀ(sign(V)∘T);  ℓ0: T = [V² − γ]_+,
//!         f = Σ T, G = Aᵀ(1[T > 0]∘V);   X ← polar(G);   same stopping rule
//! Z = columns of sign(V)∘[|V| − γ]_+ (ℓ1) or V masked (ℓ0), normalised (V = A X at the end)
//! ```
//!
//! The reference code scales the block ρ by the *R factor of the initial QR*
//! (`[x, rho_max] = qr(...)` overwrites the row-norm maximum); we follow the spec's
//! `γ = ρ·max_k‖a_k‖`, the scale of the single-unit case and of the Givens methods. Block
//! pattern filling (`pattern_filling`, default false for block, spec §3.4) is the routine shared
//! with the Givens methods ([`crate::sparse_pca::pattern_fill_block`]).
//!
//! # Early stop (Fig. 2 \[T\]: "stopped after 14% of the iterations required for convergence")
//!
//! With `early_stop = Some(f)`, each greedy component (or the block run) is first run to
//! convergence from the same start to count its iterations `I_conv` (this calibration is not
//! counted in `flops` but does run on the solver clock), and the real run is then capped at
//! `max(1, ⌈f·I_conv⌉)` iterations.
//!
//! # Steps, FLOPs, model
//!
//! One step of the [`Schedule`] is one power iteration (greedy: of the current component; the
//! finishing work of a component — final `v`, pattern filling, deflation, the next component's
//! row norms — is charged to the step that converged it). The run finishes after the last
//! component. FLOPs by spec §6.3: setup `2dn` (row norms); greedy iteration
//! [`flops::gpower_single_iteration`]; pattern filling [`flops::gpower_pattern_fill_single`] per
//! iteration; deflation `4dn` (ℓ0: `2dn + n`); block iteration `2dnm` (`V`), `4dm`/`3dm`
//! (threshold), `2dnm` for the gradient `Aᵀ T` and the polar factor `14nm² + 8m³`
//! ([`flops::gpower_block_iteration`]); the initial QR `2nm²` \[A\]. The gradient is computed
//! over the non-zeros of `T` (as the reference code does) but charged densely over the rows in
//! scope, the one rule of the [`flops`] module docs (until issue 42 it was charged `2n` per
//! non-zero of `T` while the Givens methods were charged over every row). Both counts are kept:
//! `flops` over all `d` rows, `flops_active_rows` over the `d_a` rows that can pass the
//! threshold (`‖a_k‖ > γ`, ℓ0 `‖a_k‖² > γ`; greedy: the rows of the deflated `R` for the
//! current component), where every per-row term above has `d_a` for `d`. The model's
//! `loadings` hold the finished components and the current one (formed from the current `x`,
//! post-processed like a finished one, costs in `extract_flops`); `rotation` is block GPower's
//! `X`.

use crate::sparse_pca::{check_data, pattern_fill_block};
use crate::{SparsePca, SparsePcaModel, flops};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::linalg::{dot, gemm, thin_svd};
use dyad_kernels::sampling::normal;
use dyad_kernels::{AlgoError, Checked, ParamError, params};
use ndarray::{Array1, Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// The sparsity-inducing penalty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Penalty {
    #[default]
    L1,
    L0,
}

/// Single-unit with deflation, or all components at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GPowerMode {
    #[default]
    Greedy,
    Block,
}

/// Parameters of GPower.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GPowerConfig {
    /// Number of components `m ≥ 1` (1).
    #[serde(default = "default_components")]
    pub components: usize,
    /// Relative sparsity `ρ ∈ [0, 1)` (module docs; 0.1). The paper sweeps 0.01–0.2.
    #[serde(default = "default_rho")]
    pub rho: f64,
    #[serde(default)]
    pub penalty: Penalty,
    #[serde(default)]
    pub mode: GPowerMode,
    /// Relative-increase stopping tolerance (1e-4, the reference code's and the paper's).
    #[serde(default = "default_tol")]
    pub tolerance: f64,
    /// Iteration cap per component / block run (1000, the reference code's).
    #[serde(default = "default_max_iter")]
    pub max_iter: u32,
    /// Cap each run at this fraction of the iterations it needs to converge (module docs;
    /// the paper's early stop is 0.14). None: run to convergence.
    #[serde(default)]
    pub early_stop: Option<f64>,
    /// Pattern filling of the loadings; None = the reference code's choice (greedy ℓ1: yes;
    /// otherwise no).
    #[serde(default)]
    pub pattern_filling: Option<bool>,
}

fn default_components() -> usize {
    1
}
fn default_rho() -> f64 {
    0.1
}
fn default_tol() -> f64 {
    1e-4
}
fn default_max_iter() -> u32 {
    1000
}

impl Default for GPowerConfig {
    fn default() -> Self {
        Self {
            components: default_components(),
            rho: default_rho(),
            penalty: Penalty::L1,
            mode: GPowerMode::Greedy,
            tolerance: default_tol(),
            max_iter: default_max_iter(),
            early_stop: None,
            pattern_filling: None,
        }
    }
}

impl Checked for GPowerConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::at_least_one("components", self.components as u64)?;
        if !(self.rho.is_finite() && (0.0..1.0).contains(&self.rho)) {
            return Err(ParamError::new(
                "rho",
                format!("must lie in [0, 1), got {}", self.rho),
            ));
        }
        params::non_negative("tolerance", self.tolerance)?;
        params::at_least_one("max_iter", self.max_iter.into())?;
        params::if_given(self.early_stop, |f| {
            params::half_open_interval("early_stop", f, 0.0, 1.0)
        })
    }
}

impl GPowerConfig {
    fn fills(&self) -> bool {
        self.pattern_filling
            .unwrap_or(self.mode == GPowerMode::Greedy && self.penalty == Penalty::L1)
    }
}

/// Row `k` of a standard-layout matrix as a slice.
fn row(a: &Array2<f64>, k: usize) -> &[f64] {
    let n = a.ncols();
    &a.as_slice().expect("standard layout")[k * n..(k + 1) * n]
}

/// `out = R x` (`R` standard layout).
fn mat_vec(r: &Array2<f64>, x: &[f64], out: &mut [f64]) {
    for (k, o) in out.iter_mut().enumerate() {
        *o = dot(row(r, k), x);
    }
}

/// `out = Rᵀ t`.
fn mat_t_vec(r: &Array2<f64>, t: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    for (k, &w) in t.iter().enumerate() {
        if w != 0.0 {
            for (o, &v) in out.iter_mut().zip(row(r, k)) {
                *o += w * v;
            }
        }
    }
}

fn normalize(v: &mut [f64]) -> f64 {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    n
}

/// The threshold of one vector `v` at `γ`: the weights `t` fed to the gradient and `f`.
fn threshold(v: &[f64], gamma: f64, penalty: Penalty, t: &mut [f64]) -> f64 {
    let mut f = 0.0;
    for (o, &x) in t.iter_mut().zip(v) {
        match penalty {
            Penalty::L1 => {
                let s = x.abs() - gamma;
                if s > 0.0 {
                    *o = s.copysign(x);
                    f += s * s;
                } else {
                    *o = 0.0;
                }
            }
            Penalty::L0 => {
                let s = x * x - gamma;
                if s > 0.0 {
                    *o = x; // the gradient weight 1[t > 0]·v
                    f += s;
                } else {
                    *o = 0.0;
                }
            }
        }
    }
    f
}

/// Rows that can pass the threshold `γ`, from their squared norms: `‖r_k‖ > γ` (ℓ1, as
/// `|r_k x| ≤ ‖r_k‖` for a unit `x`) or `‖r_k‖² > γ` (ℓ0, which thresholds `v²`).
fn active_rows(norms2: &[f64], gamma: f64, penalty: Penalty) -> usize {
    let bound = match penalty {
        Penalty::L1 => gamma * gamma,
        Penalty::L0 => gamma,
    };
    norms2.iter().filter(|&&r| r > bound).count()
}

/// Single-unit pattern filling (module docs) of `z` on the rows `support` of `r`; FLOPs.
fn pattern_fill_single(r: &Array2<f64>, support: &[usize], z: &mut [f64]) -> u64 {
    let n = r.ncols();
    let s = support.len();
    if s == 0 {
        z.fill(0.0);
        return 0;
    }
    if s == 1 {
        z.fill(0.0);
        z[support[0]] = 1.0;
        return 0;
    }
    let mut u: Vec<f64> = support.iter().map(|&k| z[k]).collect();
    let mut w = vec![0.0; n];
    let mut tmp = vec![0.0; s];
    let mut fl = 0;
    let mut f_prev = f64::NAN;
    let mut iter = 1u32;
    loop {
        w.fill(0.0);
        for (&k, &uk) in support.iter().zip(&u) {
            for (o, &v) in w.iter_mut().zip(row(r, k)) {
                *o += uk * v;
            }
        }
        for (t, &k) in tmp.iter_mut().zip(support) {
            *t = dot(row(r, k), &w);
        }
        let norm = dot(&tmp, &tmp).sqrt();
        fl += flops::gpower_pattern_fill_single(n, s);
        if norm == 0.0 {
            break;
        }
        for (ui, &t) in u.iter_mut().zip(&tmp) {
            *ui = t / norm;
        }
        let f = -2.0 * norm;
        if (iter > 2 && (f - f_prev).abs() / f_prev.abs() < 1e-6) || iter > 1000 {
            break;
        }
        f_prev = f;
        iter += 1;
    }
    z.fill(0.0);
    for (&k, &uk) in support.iter().zip(&u) {
        z[k] = uk;
    }
    fl
}

/// The greedy (deflation) run.
struct Greedy<'c> {
    cfg: &'c GPowerConfig,
    r: Array2<f64>,
    z: Array2<f64>,
    done: usize,
    finished_objectives: f64,
    // Current component.
    x: Vec<f64>,
    gamma: f64,
    first_gamma: f64,
    f_prev: f64,
    f_last: f64,
    iter: u32,
    cap: Option<u32>,
    v: Vec<f64>,
    t: Vec<f64>,
    g: Vec<f64>,
    flops: u64,
    /// Rows of `R` that can pass the current component's threshold (`‖r_k‖ > γ`; ℓ0:
    /// `‖r_k‖² > γ`), and the FLOPs counted over them ([`flops`] module docs).
    active: usize,
    flops_active: u64,
    samples: usize,
}

/// One power iteration of a single unit; returns `(f, converged)`.
#[allow(clippy::too_many_arguments)]
fn single_iteration(
    r: &Array2<f64>,
    x: &mut [f64],
    gamma: f64,
    penalty: Penalty,
    v: &mut [f64],
    t: &mut [f64],
    g: &mut [f64],
    fl: &mut u64,
) -> f64 {
    let (d, n) = r.dim();
    mat_vec(r, x, v);
    let f = threshold(v, gamma, penalty, t);
    *fl += flops::gpower_single_iteration(d, n, penalty == Penalty::L0);
    if f > 0.0 {
        mat_t_vec(r, t, g);
        x.copy_from_slice(g);
        normalize(x);
    }
    f
}

impl Greedy<'_> {
    /// Start component `self.done`: γ from the longest row of `R`, `x` along it, the cap.
    fn start_component(&mut self) {
        let (d, n) = self.r.dim();
        self.flops += flops::norms(d, n);
        self.flops_active += flops::norms(d, n);
        let (mut best, mut k_best) = (-1.0, 0);
        let mut norms2 = vec![0.0; d];
        for (k, nk2) in norms2.iter_mut().enumerate() {
            let nk = dot(row(&self.r, k), row(&self.r, k));
            *nk2 = nk;
            if nk > best {
                best = nk;
                k_best = k;
            }
        }
        let norm = best.max(0.0).sqrt();
        self.gamma = match self.cfg.penalty {
            Penalty::L1 => self.cfg.rho * norm,
            Penalty::L0 => self.cfg.rho * norm * norm,
        };
        self.active = active_rows(&norms2, self.gamma, self.cfg.penalty);
        if self.done == 0 {
            self.first_gamma = self.gamma;
        }
        self.x.copy_from_slice(row(&self.r, k_best));
        normalize(&mut self.x);
        self.iter = 1;
        self.f_prev = f64::NAN;
        self.f_last = 0.0;
        self.cap = self.cfg.early_stop.map(|frac| {
            // Calibration: run to convergence from the same start (not counted).
            let (mut x, mut v, mut t, mut g) = (
                self.x.clone(),
                self.v.clone(),
                self.t.clone(),
                self.g.clone(),
            );
            let (mut f_prev, mut iter, mut scratch) = (f64::NAN, 1u32, 0u64);
            loop {
                let f = single_iteration(
                    &self.r,
                    &mut x,
                    self.gamma,
                    self.cfg.penalty,
                    &mut v,
                    &mut t,
                    &mut g,
                    &mut scratch,
                );
                if f == 0.0 || self.stop(iter, f, f_prev) {
                    break;
                }
                f_prev = f;
                iter += 1;
            }
            ((frac * iter as f64).ceil() as u32).max(1)
        });
    }

    fn stop(&self, iter: u32, f: f64, f_prev: f64) -> bool {
        (iter > 2 && (f - f_prev) / f_prev < self.cfg.tolerance) || iter > self.cfg.max_iter
    }

    /// The loading of the current `x` on the current `R`: `(z, y for deflation, FLOPs over
    /// all rows, FLOPs over the rows that can pass)`.
    fn loading(&self) -> (Vec<f64>, Vec<f64>, u64, u64) {
        let (d, n) = self.r.dim();
        let da = self.active;
        let mut v = vec![0.0; d];
        mat_vec(&self.r, &self.x, &mut v);
        let mut fl = flops::matvec(d, n);
        let mut fa = flops::matvec(da, n);
        let mut z = vec![0.0; d];
        let support: Vec<usize> = match self.cfg.penalty {
            Penalty::L1 => {
                threshold(&v, self.gamma, Penalty::L1, &mut z);
                fl += d as u64;
                fa += da as u64;
                (0..d).filter(|&k| z[k] != 0.0).collect()
            }
            Penalty::L0 => {
                threshold(&v, self.gamma, Penalty::L0, &mut z);
                fl += 2 * d as u64;
                fa += 2 * da as u64;
                (0..d).filter(|&k| z[k] != 0.0).collect()
            }
        };
        let norm_z = normalize(&mut z);
        fl += 3 * support.len() as u64 + 1;
        fa += 3 * support.len() as u64 + 1;
        if self.cfg.fills() {
            let fill = pattern_fill_single(&self.r, &support, &mut z);
            fl += fill;
            fa += fill;
        }
        let y = match self.cfg.penalty {
            Penalty::L1 => {
                let mut y = vec![0.0; n];
                mat_t_vec(&self.r, &z, &mut y);
                y
            }
            Penalty::L0 => self.x.iter().map(|v| v * norm_z).collect(),
        };
        (z, y, fl, fa)
    }

    /// Finish the current component: loading, deflation, next component.
    fn finish_component(&mut self) -> Flow {
        let (d, n) = self.r.dim();
        let (z, y, fl, fa) = self.loading();
        self.flops += fl;
        self.flops_active += fa;
        // Deflation touches only the rows of the support (z_k = 0 elsewhere), all among the
        // rows that can pass: charged densely over all rows / the rows that can pass.
        let deflation = |rows: usize| match self.cfg.penalty {
            Penalty::L1 => flops::gpower_deflation(rows, n),
            Penalty::L0 => 2 * (rows * n) as u64 + n as u64,
        };
        self.flops += deflation(d);
        self.flops_active += deflation(self.active);
        for (k, &zk) in z.iter().enumerate() {
            if zk != 0.0 {
                let rk = self.r.row_mut(k).into_slice().expect("standard layout");
                for (o, &yl) in rk.iter_mut().zip(&y) {
                    *o -= zk * yl;
                }
            }
        }
        self.z.column_mut(self.done).assign(&Array1::from(z));
        self.finished_objectives += self.f_last;
        self.done += 1;
        if self.done == self.cfg.components {
            return Flow::Finished;
        }
        self.start_component();
        Flow::Continue
    }
}

impl Stepper for Greedy<'_> {
    type Model = SparsePcaModel;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        let f = single_iteration(
            &self.r,
            &mut self.x,
            self.gamma,
            self.cfg.penalty,
            &mut self.v,
            &mut self.t,
            &mut self.g,
            &mut self.flops,
        );
        self.flops_active += flops::gpower_single_iteration(
            self.active,
            self.r.ncols(),
            self.cfg.penalty == Penalty::L0,
        );
        self.f_last = f;
        let converged =
            f == 0.0 || self.stop(self.iter, f, self.f_prev) || self.cap == Some(self.iter);
        if converged {
            return Ok(self.finish_component());
        }
        self.f_prev = f;
        self.iter += 1;
        Ok(Flow::Continue)
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&SparsePcaModel) -> Control,
    ) -> Result<Control, AlgoError> {
        let mut z = self.z.clone();
        let mut extract = 0;
        if self.done < self.cfg.components {
            let (zc, _, fl, _) = self.loading();
            z.column_mut(self.done).assign(&Array1::from(zc));
            extract = fl;
        }
        Ok(show(&SparsePcaModel {
            loadings: z,
            rotation: None,
            objective: self.finished_objectives
                + if self.done < self.cfg.components {
                    self.f_last
                } else {
                    0.0
                },
            gamma: self.first_gamma,
            flops: self.flops,
            flops_active_rows: self.flops_active,
            extract_flops: extract,
            samples_seen: self.samples,
        }))
    }

    fn finished_at_start(&self) -> bool {
        false
    }
}

/// The block run.
struct Block<'a, 'c> {
    cfg: &'c GPowerConfig,
    a: Array2<f64>,
    data: ArrayView2<'a, f64>,
    x: Array2<f64>,
    gamma: f64,
    f_prev: f64,
    f_last: f64,
    iter: u32,
    cap: Option<u32>,
    flops: u64,
    /// Rows of `A` that can pass the threshold, and the FLOPs counted over them ([`flops`]
    /// module docs).
    active: usize,
    flops_active: u64,
}

impl Block<'_, '_> {
    /// `V = A X`, the thresholded weights, `f`, and the non-zeros of the weights.
    fn evaluate(&self, x: &Array2<f64>) -> (Array2<f64>, Array2<f64>, f64, usize) {
        let (d, m) = (self.a.nrows(), x.ncols());
        let mut v = Array2::<f64>::zeros((d, m));
        gemm(v.view_mut(), false, self.a.view(), x.view());
        let mut t = Array2::<f64>::zeros((d, m));
        let mut f = 0.0;
        let mut nnz = 0;
        for (o, &val) in t.iter_mut().zip(v.iter()) {
            match self.cfg.penalty {
                Penalty::L1 => {
                    let s = val.abs() - self.gamma;
                    if s > 0.0 {
                        *o = s.copysign(val);
                        f += s * s;
                        nnz += 1;
                    }
                }
                Penalty::L0 => {
                    let s = val * val - self.gamma;
                    if s > 0.0 {
                        *o = val;
                        f += s;
                        nnz += 1;
                    }
                }
            }
        }
        (v, t, f, nnz)
    }

    /// One block iteration on `x`; returns `f`. Adds its FLOPs over all rows to `fl` and over
    /// the rows that can pass to `fa` ([`flops::gpower_block_iteration`]).
    fn iterate(&self, x: &mut Array2<f64>, fl: &mut u64, fa: &mut u64) -> Result<f64, AlgoError> {
        let (d, n) = self.a.dim();
        let m = x.ncols();
        let (_, t, f, _) = self.evaluate(x);
        let l0 = self.cfg.penalty == Penalty::L0;
        *fl += flops::gpower_block_iteration(d, n, m, l0, f > 0.0);
        *fa += flops::gpower_block_iteration(self.active, n, m, l0, f > 0.0);
        if f > 0.0 {
            // G = Aᵀ T over the pattern.
            let mut g = Array2::<f64>::zeros((n, m));
            for k in 0..d {
                let ak = row(&self.a, k);
                for j in 0..m {
                    let w = t[[k, j]];
                    if w != 0.0 {
                        let mut gj = g.column_mut(j);
                        for (o, &v) in gj.iter_mut().zip(ak) {
                            *o += w * v;
                        }
                    }
                }
            }
            let (u, _, vt) = thin_svd(g.view())
                .map_err(|e| AlgoError::Numerical(format!("GPower polar: {e}")))?;
            *x = u.dot(&vt.t());
        }
        Ok(f)
    }

    fn stop(&self, iter: u32, f: f64, f_prev: f64) -> bool {
        (iter > 2 && (f - f_prev) / f_prev < self.cfg.tolerance) || iter > self.cfg.max_iter
    }
}

impl Stepper for Block<'_, '_> {
    type Model = SparsePcaModel;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        let mut x = std::mem::take(&mut self.x);
        let (mut fl, mut fa) = (self.flops, self.flops_active);
        let f = self.iterate(&mut x, &mut fl, &mut fa);
        self.x = x;
        self.flops = fl;
        self.flops_active = fa;
        let f = f?;
        self.f_last = f;
        if f == 0.0 || self.stop(self.iter, f, self.f_prev) || self.cap == Some(self.iter) {
            return Ok(Flow::Finished);
        }
        self.f_prev = f;
        self.iter += 1;
        Ok(Flow::Continue)
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&SparsePcaModel) -> Control,
    ) -> Result<Control, AlgoError> {
        let (d, n) = self.a.dim();
        let m = self.x.ncols();
        let (v, t, f, nnz) = self.evaluate(&self.x);
        let mut extract = 2 * (d * n * m) as u64 + (d * m) as u64;
        let mut z = match self.cfg.penalty {
            Penalty::L1 => t,
            Penalty::L0 => {
                let mut z = v;
                z.zip_mut_with(&t, |zv, &tv| {
                    if tv == 0.0 {
                        *zv = 0.0
                    }
                });
                z
            }
        };
        for mut c in z.columns_mut() {
            let nrm = c.dot(&c).sqrt();
            if nrm > 0.0 {
                c.mapv_inplace(|x| x / nrm);
            }
        }
        extract += 3 * nnz as u64 + m as u64;
        if self.cfg.fills() {
            extract += pattern_fill_block(self.data, &mut z, 1000, 1e-6)?;
        }
        Ok(show(&SparsePcaModel {
            loadings: z,
            rotation: Some(self.x.clone()),
            objective: f,
            gamma: self.gamma,
            flops: self.flops,
            flops_active_rows: self.flops_active,
            extract_flops: extract,
            samples_seen: n,
        }))
    }
}

impl SparsePca for GPowerConfig {
    /// `data`: `A`, `d × n` (variables × samples).
    fn fit(
        &self,
        data: ArrayView2<'_, f64>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<SparsePcaModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        check_data(data, "GPower")?;
        let (d, n) = data.dim();
        let m = self.components;
        match self.mode {
            GPowerMode::Greedy => {
                if m > d {
                    return Err(AlgoError::param(
                        "components",
                        format!("= {m} exceeds the data's {d} variables"),
                    ));
                }
                drive(schedule, obs, || {
                    let mut g = Greedy {
                        cfg: self,
                        r: data.as_standard_layout().into_owned(),
                        z: Array2::zeros((d, m)),
                        done: 0,
                        finished_objectives: 0.0,
                        x: vec![0.0; n],
                        gamma: 0.0,
                        first_gamma: 0.0,
                        f_prev: f64::NAN,
                        f_last: 0.0,
                        iter: 1,
                        cap: None,
                        v: vec![0.0; d],
                        t: vec![0.0; d],
                        g: vec![0.0; n],
                        flops: 0,
                        active: d,
                        flops_active: 0,
                        samples: n,
                    };
                    g.start_component();
                    Ok::<_, AlgoError>(g)
                })?;
            }
            GPowerMode::Block => {
                if m > n {
                    return Err(AlgoError::param(
                        "components",
                        format!("= {m} needs at least {m} samples (block mode), got {n}"),
                    ));
                }
                drive(schedule, obs, || {
                    let a = data.as_standard_layout().into_owned();
                    let mut fl = flops::norms(d, n);
                    let (mut best, mut k_best) = (-1.0, 0);
                    let mut norms2 = vec![0.0; d];
                    for (k, nk2) in norms2.iter_mut().enumerate() {
                        let nk = dot(row(&a, k), row(&a, k));
                        *nk2 = nk;
                        if nk > best {
                            best = nk;
                            k_best = k;
                        }
                    }
                    let norm = best.max(0.0).sqrt();
                    // Initial X: Q factor of [a_k*/‖a_k*‖, randn(n, m − 1)] (Gram–Schmidt twice).
                    let mut x = Array2::<f64>::zeros((n, m));
                    for (o, &v) in x.column_mut(0).iter_mut().zip(row(&a, k_best)) {
                        *o = v;
                    }
                    for j in 1..m {
                        for o in x.column_mut(j).iter_mut() {
                            *o = normal(rng);
                        }
                    }
                    for j in 0..m {
                        for _ in 0..2 {
                            for i in 0..j {
                                let p = x.column(i).dot(&x.column(j));
                                let xi = x.column(i).to_owned();
                                x.column_mut(j).scaled_add(-p, &xi);
                            }
                        }
                        let nrm = x.column(j).dot(&x.column(j)).sqrt();
                        if nrm == 0.0 {
                            return Err(AlgoError::Numerical("GPower: degenerate start".into()));
                        }
                        x.column_mut(j).mapv_inplace(|v| v / nrm);
                    }
                    fl += 2 * (n * m * m) as u64;
                    let gamma = match self.penalty {
                        Penalty::L1 => self.rho * norm,
                        Penalty::L0 => self.rho * norm * norm,
                    };
                    let mut b = Block {
                        cfg: self,
                        a,
                        data,
                        x,
                        gamma,
                        f_prev: f64::NAN,
                        f_last: 0.0,
                        iter: 1,
                        cap: None,
                        flops: fl,
                        active: active_rows(&norms2, gamma, self.penalty),
                        // The row norms and the initial QR: the same in both counts.
                        flops_active: fl,
                    };
                    if let Some(frac) = self.early_stop {
                        let mut x = b.x.clone();
                        let (mut f_prev, mut iter) = (f64::NAN, 1u32);
                        let (mut scratch, mut scratch_a) = (0u64, 0u64);
                        loop {
                            let f = b.iterate(&mut x, &mut scratch, &mut scratch_a)?;
                            if f == 0.0 || b.stop(iter, f, f_prev) {
                                break;
                            }
                            f_prev = f;
                            iter += 1;
                        }
                        b.cap = Some(((frac * iter as f64).ceil() as u32).max(1));
                    }
                    Ok(b)
                })?;
            }
        }
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `gpower` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "gpower",
    label: "GPower",
    description: "generalised power method (Journee et al. 2010): `penalty` l1 / l0, `mode` greedy (single-unit + deflation) / block, `early_stop` fraction (spec §5.1)",
    family: crate::SPARSE_PCA,
    // 2: block GPower's gradient A^T T is charged over every row (2dnm), not over the
    // non-zeros of T, the one FLOP rule of every method; and a second count over the rows
    // that can pass the threshold (`flops_active_rows`) (issue 42 §4).
    version: 2,
    machine_tolerance: 0.0,
    build: crate::sparse_pca_solver::<GPowerConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rotation::orthogonality_defect;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Models, planted_sparse_pca};

    fn best_cos(z: &Array2<f64>, w: &Array1<f64>) -> f64 {
        (0..z.ncols())
            .map(|j| z.column(j).dot(w).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn every_variant_recovers_planted_sparse_components() {
        let planted = planted_sparse_pca(200, 40, 2, 10, 0.05, 11);
        for mode in [GPowerMode::Greedy, GPowerMode::Block] {
            // Block needs a smaller ρ: its random start columns see the weaker component only
            // through a 1/√n projection, and a column whose entries all fall below γ gets a zero
            // gradient (the polar factor then keeps an arbitrary direction there).
            let rhos = match mode {
                GPowerMode::Greedy => [(Penalty::L1, 0.2), (Penalty::L0, 0.05)],
                GPowerMode::Block => [(Penalty::L1, 0.05), (Penalty::L0, 0.005)],
            };
            for (penalty, rho) in rhos {
                let cfg = GPowerConfig {
                    components: 2,
                    rho,
                    penalty,
                    mode,
                    ..Default::default()
                };
                let mut obs = Models::default();
                cfg.fit(
                    planted.data.view(),
                    &Schedule::last_only(5000),
                    &mut seeded(1),
                    &mut obs,
                )
                .unwrap();
                let (at, m) = obs.seen.last().unwrap();
                assert!(at.last && at.step < 5000, "{mode:?} {penalty:?} converged");
                for (r, w) in planted.loadings.iter().enumerate() {
                    let c = best_cos(&m.loadings, w);
                    assert!(c > 0.98, "{mode:?} {penalty:?}: loading {r} |cos| {c}");
                }
                let nnz = m.nnz();
                assert!(nnz <= 2 * 10 + 12, "{mode:?} {penalty:?}: nnz {nnz}");
                if let Some(x) = &m.rotation {
                    assert!(orthogonality_defect(x.view()) < 1e-10);
                }
            }
        }
    }

    #[test]
    fn greedy_l1_matches_a_direct_transcription_of_the_reference_loop() {
        // One component, no pattern filling: the loop of GPower.m written out densely.
        let planted = planted_sparse_pca(30, 12, 1, 5, 0.2, 3);
        let a = planted.data.clone();
        let rho = 0.3;
        let gamma = rho
            * a.rows()
                .into_iter()
                .map(|r| r.dot(&r).sqrt())
                .fold(0.0, f64::max);
        let k = a
            .rows()
            .into_iter()
            .map(|r| r.dot(&r))
            .enumerate()
            .fold((0, -1.0), |b, (k, v)| if v > b.1 { (k, v) } else { b })
            .0;
        let mut x = a.row(k).to_owned();
        x /= x.dot(&x).sqrt();
        let mut f = Vec::new();
        let mut iter = 1;
        loop {
            let v = a.dot(&x);
            let t = v.mapv(|u| (u.abs() - gamma).max(0.0).copysign(u));
            f.push(t.dot(&t));
            let g = a.t().dot(&t);
            x = &g / g.dot(&g).sqrt();
            if iter > 2 && (f[iter - 1] - f[iter - 2]) / f[iter - 2] < 1e-4 {
                break;
            }
            iter += 1;
        }
        let v = a.dot(&x);
        let mut z = v.mapv(|u| (u.abs() - gamma).max(0.0).copysign(u));
        z /= z.dot(&z).sqrt();
        let cfg = GPowerConfig {
            rho,
            pattern_filling: Some(false),
            ..Default::default()
        };
        let mut obs = Models::default();
        cfg.fit(
            a.view(),
            &Schedule::last_only(1000),
            &mut seeded(1),
            &mut obs,
        )
        .unwrap();
        let (at, m) = obs.seen.last().unwrap();
        assert_eq!(at.step, iter as u64);
        let diff = (&m.loadings.column(0) - &z)
            .iter()
            .fold(0.0f64, |s, v| s.max(v.abs()));
        assert!(diff < 1e-12, "{diff}");
    }

    #[test]
    fn flops_match_hand_counts_on_a_tiny_case() {
        // d = 3, n = 2, greedy ℓ1 without filling: setup 2·3·2 = 12, one iteration
        // 4·3·2 + 4·3 + 3·2 + 1 = 43.
        let a = ndarray::array![[1.0, 0.5], [0.2, -0.3], [0.0, 0.1]];
        let cfg = GPowerConfig {
            rho: 0.1,
            pattern_filling: Some(false),
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
        assert_eq!(obs.seen[0].1.flops, 12);
        assert_eq!(obs.seen[1].1.flops - obs.seen[0].1.flops, 43);
        assert_eq!(flops::gpower_single_iteration(3, 2, false), 43);
        // Rows that can pass γ = 0.1·‖a_0‖ ≈ 0.112: rows 0 and 1 (norms 1.118, 0.361), not
        // row 2 (0.1). The row norms 12 in both counts; the iteration over 2 rows:
        // 4·2·2 + 4·2 + 3·2 + 1 = 31.
        assert_eq!(obs.seen[0].1.flops_active_rows, 12);
        assert_eq!(
            obs.seen[1].1.flops_active_rows - obs.seen[0].1.flops_active_rows,
            31
        );
    }

    #[test]
    fn block_flops_match_hand_counts_in_both_scopes() {
        // d = 4, n = 2, m = 2, ρ = 0.5: γ = 0.5·√10 ≈ 1.58; rows 0 and 1 (norms √10, √5) can
        // pass, rows 2 and 3 (≈ 0.22, 0.32) cannot: d_a = 2.
        let a = ndarray::array![[3.0, 1.0], [1.0, 2.0], [0.2, 0.1], [-0.1, 0.3]];
        let cfg = GPowerConfig {
            components: 2,
            rho: 0.5,
            mode: GPowerMode::Block,
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
        // Setup, the same in both counts: row norms 2·4·2 = 16, initial QR 2·2·2² = 16.
        assert_eq!(m0.flops, 32);
        assert_eq!(m0.flops_active_rows, 32);
        // One iteration with f > 0. All rows: V = A X 2·4·2·2 = 32, threshold 4·4·2 = 32,
        // the gradient Aᵀ T charged over every row 2·4·2·2 = 32 (not over T's non-zeros),
        // polar 14·2·2² + 8·2³ = 176: 272. Rows that can pass: 16 + 16 + 16 + 176 = 224.
        assert!(m1.objective > 0.0);
        assert_eq!(m1.flops - m0.flops, 32 + 32 + 32 + 176);
        assert_eq!(
            m1.flops_active_rows - m0.flops_active_rows,
            16 + 16 + 16 + 176
        );
        assert_eq!(flops::gpower_block_iteration(4, 2, 2, false, true), 272);
        assert_eq!(flops::gpower_block_iteration(2, 2, 2, false, true), 224);
    }

    #[test]
    fn early_stop_caps_iterations_at_the_fraction() {
        let planted = planted_sparse_pca(100, 30, 1, 8, 0.3, 5);
        let run = |early_stop| {
            let cfg = GPowerConfig {
                rho: 0.05,
                early_stop,
                tolerance: 1e-8,
                ..Default::default()
            };
            let mut obs = Models::default();
            cfg.fit(
                planted.data.view(),
                &Schedule::last_only(10_000),
                &mut seeded(1),
                &mut obs,
            )
            .unwrap();
            obs.seen.last().unwrap().0.step
        };
        let full = run(None);
        let early = run(Some(0.14));
        assert!(full >= 5, "needs several iterations ({full})");
        assert_eq!(early, ((0.14 * full as f64).ceil() as u64).max(1));
    }

    #[test]
    fn block_start_is_drawn_from_the_rng_deterministically() {
        let planted = planted_sparse_pca(60, 20, 2, 5, 0.05, 2);
        let cfg = GPowerConfig {
            components: 3,
            mode: GPowerMode::Block,
            rho: 0.05,
            ..Default::default()
        };
        let run = |seed| {
            let mut obs = Models::default();
            cfg.fit(
                planted.data.view(),
                &Schedule::new(vec![0, 2]),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            obs.seen.into_iter().map(|(_, m)| m).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1)[0].rotation, run(2)[0].rotation);
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        for (cfg, param) in [
            GPowerConfig {
                components: 0,
                ..Default::default()
            },
            GPowerConfig {
                rho: 1.0,
                ..Default::default()
            },
            GPowerConfig {
                rho: -0.1,
                ..Default::default()
            },
            GPowerConfig {
                max_iter: 0,
                ..Default::default()
            },
            GPowerConfig {
                early_stop: Some(0.0),
                ..Default::default()
            },
            GPowerConfig {
                tolerance: f64::NAN,
                ..Default::default()
            },
        ]
        .into_iter()
        .zip([
            "components",
            "rho",
            "rho",
            "max_iter",
            "early_stop",
            "tolerance",
        ]) {
            assert_eq!(cfg.check().unwrap_err().param, param, "{cfg:?}");
        }
        let cfg = GPowerConfig {
            components: 5,
            mode: GPowerMode::Block,
            ..Default::default()
        };
        let a = Array2::<f64>::ones((10, 3));
        let err = cfg.fit(
            a.view(),
            &Schedule::last_only(5),
            &mut seeded(1),
            &mut Models::default(),
        );
        assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "components"));
    }
}
