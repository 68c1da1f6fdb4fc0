//! L2-regularised logistic regression, LIBLINEAR's `-s 0` primal problem, solved by
//! LIBLINEAR's own trust-region Newton method (TRON with preconditioned conjugate gradients;
//! Lin, Weng & Keerthi, JMLR 2008; Hsia, Chiang & Lin, ACML 2018), written for dense rows.
//!
//! ```text
//! min_w f(w) = ½‖w‖² + C Σ_i log(1 + exp(−y_i wᵀx̃_i)),   x̃_i = [x_i, 1] (bias on: `-B 1`)
//! ∇f(w)    = w + C Σ_i (σ(y_i wᵀx̃_i) − 1) y_i x̃_i
//! ∇²f(w) v = v + C Σ_i D_i (x̃_iᵀv) x̃_i,   D_i = σ_i (1 − σ_i)
//! ```
//!
//! The bias is the weight of an appended constant feature 1 and is regularised like every
//! other weight (LIBLINEAR `-B 1`; scikit-learn's `liblinear` with `intercept_scaling=1`).
//!
//! # Algorithm (LIBLINEAR 2.30 `tron.cpp`)
//!
//! Each outer iteration approximately solves the trust-region subproblem
//! `min_s gᵀs + ½ sᵀHs, ‖s‖_M ≤ Δ` by conjugate gradients preconditioned with
//! `M = (1 − α) I + α diag(H)` (`α = 0.01`), stopped when `‖r‖_{M⁻¹} ≤ 0.1 ‖g‖_{M⁻¹}` or at the
//! boundary; accepts the step when the actual reduction exceeds `η₀ = 1e-4` of the predicted
//! one, and updates `Δ` with LIBLINEAR's constants (`η₁ = 0.25`, `η₂ = 0.75`, `σ₁ = 0.25`,
//! `σ₂ = 0.5`, `σ₃ = 4`; the first step caps `Δ` at its length). **Stopping rule**
//! (LIBLINEAR's for `-s 0`): `‖∇f(w)‖ ≤ ε · max(min(n₊, n₋), 1)/n · ‖∇f(0)‖`, with `ε =`
//! [`LogRegConfig::tol`] (LIBLINEAR's default 0.01; scikit-learn passes its `tol`, 1e-4), or
//! `max_iter` Newton iterations, or a vanishing predicted/actual reduction (relative 1e-12:
//! the optimum to machine precision). Since `f` is 1-strongly convex,
//! `‖w − w*‖ ≤ ‖∇f(w)‖`: the stopping rule bounds the distance to the optimum, which is what
//! the scikit-learn comparison uses.
//!
//! # Cost
//!
//! The passes over the rows are bound by memory bandwidth (a 13K × 2005 training set is
//! 210 MB), so they are fused: one pass evaluates `f` at a trial point together with its
//! gradient, `D` and the preconditioner (used if the point is accepted, wasted arithmetic but
//! no extra traffic if not; the first pass also accumulates `Σ y_i x̃_i` for `‖∇f(0)‖`), and
//! each CG step is one pass (`Σ_i D_i (x̃_iᵀv) x̃_i`, each row loaded once for its dot product
//! and its axpy). A fit costs `1 + #Newton trials + #CG steps` passes. All buffers live in a
//! [`Workspace`] reused across fits: no allocation per iteration. Warm starts: `w` is read as
//! the starting point (the caller passes the solution at the previous C of the grid).
//!
//! # Why this solver (and not a crate)
//!
//! * `liblinear` 1.0.0 (bindings to LIBLINEAR 2.30 C++, the paper's solver) builds here, but
//!   pulls the deprecated `failure` crate (and syn 1), and copies every problem into
//!   LIBLINEAR's `feature_node` lists: 16 bytes per non-zero, ~420 MB for one 13K × 2005
//!   dense outer training set, per fit, ~300K fits in the paper profile, with no way to share
//!   one problem across the 2,081 categories; its C++ build and global state are a poor fit for
//!   rayon over categories.
//! * `argmin` (L-BFGS) and `linfa-logistic` (built on argmin) support ndarray ≤ 0.16: a second
//!   ndarray in the build, and L-BFGS needs many more passes over the data than Newton-CG on
//!   this smooth, well-conditioned (λ_min ≥ 1) problem.
//!
//! TRON is ~200 lines, is the exact method of the paper's tool, shares one read-only training
//! matrix across all categories (rayon over categories), and is checked against scikit-learn's
//! LIBLINEAR (`tests/logreg_sklearn.rs`), a closed form (1-D, bisection) and the optimality
//! condition.

use dyad_kernels::linalg::{axpy, dot};
use dyad_kernels::params;
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

/// Solver settings of [`fit_logreg`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogRegConfig {
    /// LIBLINEAR's `ε` (`-e`) of the stopping rule (module docs); 0.01 is LIBLINEAR's
    /// default for `-s 0`.
    #[serde(default = "default_tol")]
    pub tol: f64,
    /// Largest number of Newton (trust-region) iterations (LIBLINEAR: 1000).
    #[serde(default = "default_max_iter")]
    pub max_iter: usize,
    /// Append the constant feature 1 (LIBLINEAR `-B 1`); its weight is regularised.
    #[serde(default = "default_bias")]
    pub bias: bool,
}

fn default_tol() -> f64 {
    0.01
}
fn default_max_iter() -> usize {
    1000
}
fn default_bias() -> bool {
    true
}

impl Default for LogRegConfig {
    fn default() -> Self {
        Self {
            tol: default_tol(),
            max_iter: default_max_iter(),
            bias: default_bias(),
        }
    }
}

/// Rejects a non-positive or non-finite `tol` and `max_iter = 0` (named by their own names:
/// [`super::NestedCvConfig`] names them under `solver`).
impl Checked for LogRegConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("tol", self.tol)?;
        params::at_least_one("max_iter", self.max_iter as u64)
    }
}

impl LogRegConfig {
    /// The number of weights for `d` features (`d + 1` with the bias).
    pub fn n_weights(&self, d: usize) -> usize {
        d + usize::from(self.bias)
    }
}

/// What one fit did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitReport {
    /// Accepted Newton iterations.
    pub iterations: usize,
    /// Conjugate-gradient steps (Hessian-vector products) in all.
    pub cg_steps: usize,
    /// `f(w)` at the returned `w`.
    pub objective: f64,
    /// `‖∇f(w)‖` at the returned `w`.
    pub grad_norm: f64,
    /// `‖∇f(0)‖`.
    pub grad_norm0: f64,
    /// The stopping rule was met (not the iteration cap).
    pub converged: bool,
}

/// Buffers of [`fit_logreg`], reusable across fits of any size (grown on demand).
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    z: Vec<f64>,
    dd: Vec<f64>,
    g: Vec<f64>,
    m: Vec<f64>,
    z2: Vec<f64>,
    dd2: Vec<f64>,
    g2: Vec<f64>,
    m2: Vec<f64>,
    s: Vec<f64>,
    r: Vec<f64>,
    d: Vec<f64>,
    hd: Vec<f64>,
    zc: Vec<f64>,
    w_new: Vec<f64>,
}

impl Workspace {
    fn prepare(&mut self, n: usize, p: usize) {
        for v in [&mut self.z, &mut self.dd, &mut self.z2, &mut self.dd2] {
            v.resize(n, 0.0);
        }
        for v in [
            &mut self.g,
            &mut self.m,
            &mut self.g2,
            &mut self.m2,
            &mut self.s,
            &mut self.r,
            &mut self.d,
            &mut self.hd,
            &mut self.zc,
            &mut self.w_new,
        ] {
            v.resize(p, 0.0);
        }
    }
}

/// The problem: contiguous rows, labels ±1, `C`, bias on or off.
struct Problem<'a> {
    x: ArrayView2<'a, f64>,
    y: &'a [f64],
    c: f64,
    bias: bool,
}

#[inline]
fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

impl Problem<'_> {
    fn d(&self) -> usize {
        self.x.ncols()
    }

    #[inline]
    fn row(&self, i: usize) -> &[f64] {
        self.x.row(i).to_slice().expect("rows are contiguous")
    }

    #[inline]
    fn margin(&self, i: usize, w: &[f64]) -> f64 {
        let d = self.d();
        let mut t = dot(self.row(i), &w[..d]);
        if self.bias {
            t += w[d];
        }
        t
    }

    /// `f(w)` in one pass over the rows, which also yields everything the next Newton
    /// iteration needs should `w` be accepted: `z_i = y_i wᵀx̃_i`, `D_i`, `∇f(w)` (into `g`)
    /// and the Hessian's diagonal (into `m`); with `ysum`, also `Σ_i y_i x̃_i` (for `‖∇f(0)‖`).
    /// Each row is loaded once for its dot product and its two updates: the pass is bound by
    /// memory, so fusing the function value and the gradient saves one pass per Newton
    /// iteration (the gradient of a rejected trial point is wasted arithmetic, not traffic).
    #[allow(clippy::too_many_arguments)]
    fn eval(
        &self,
        w: &[f64],
        z: &mut [f64],
        dd: &mut [f64],
        g: &mut [f64],
        m: &mut [f64],
        mut ysum: Option<&mut [f64]>,
    ) -> f64 {
        let d = self.d();
        g.copy_from_slice(w);
        m.iter_mut().for_each(|v| *v = 1.0);
        if let Some(ys) = ysum.as_deref_mut() {
            ys.iter_mut().for_each(|v| *v = 0.0);
        }
        let mut loss = 0.0;
        for i in 0..z.len() {
            let row = self.row(i);
            let yi = self.y[i];
            let mut t = dot(row, &w[..d]);
            if self.bias {
                t += w[d];
            }
            let zi = yi * t;
            z[i] = zi;
            // e = exp(−|z|): log(1 + exp(−z)) and σ(z) from one exponential
            let e = (-zi.abs()).exp();
            let (l, s) = if zi >= 0.0 {
                (e.ln_1p(), 1.0 / (1.0 + e))
            } else {
                (-zi + e.ln_1p(), e / (1.0 + e))
            };
            loss += l;
            dd[i] = s * (1.0 - s);
            let a = self.c * (s - 1.0) * yi;
            let cd = self.c * dd[i];
            for ((gj, mj), &xj) in g[..d].iter_mut().zip(&mut m[..d]).zip(row) {
                *gj += a * xj;
                *mj += cd * xj * xj;
            }
            if self.bias {
                g[d] += a;
                m[d] += cd;
            }
            if let Some(ys) = ysum.as_deref_mut() {
                axpy(&mut ys[..d], yi, row);
                if self.bias {
                    ys[d] += yi;
                }
            }
        }
        0.5 * dot(w, w) + self.c * loss
    }

    /// `out = ∇²f(w) v` with the stored `D`: one fused pass over the rows.
    fn hv(&self, dd: &[f64], v: &[f64], out: &mut [f64]) {
        let d = self.d();
        out.copy_from_slice(v);
        for (i, &di) in dd.iter().enumerate() {
            let t = self.margin(i, v) * self.c * di;
            axpy(&mut out[..d], t, self.row(i));
            if self.bias {
                out[d] += t;
            }
        }
    }
}

/// `uᵀ diag(m) v`.
fn utmv(u: &[f64], m: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(m).zip(v).map(|((a, b), c)| a * b * c).sum()
}

fn check_inputs(
    x: &ArrayView2<'_, f64>,
    y: &[f64],
    c: f64,
    w: &[f64],
    p: usize,
) -> Result<(), AlgoError> {
    if y.len() != x.nrows() {
        return Err(AlgoError::data(format!(
            "logistic regression: {} labels for {} rows",
            y.len(),
            x.nrows()
        )));
    }
    if w.len() != p {
        return Err(AlgoError::data(format!(
            "logistic regression: weight vector of length {} for {p} weights",
            w.len()
        )));
    }
    params::positive("c", c).map_err(AlgoError::InvalidParam)?;
    if y.iter().any(|&v| v != 1.0 && v != -1.0) {
        return Err(AlgoError::data("logistic regression: labels must be ±1"));
    }
    Ok(())
}

/// Fit L2-regularised logistic regression (module docs) on the rows of `x` (contiguous rows:
/// standard layout, or a row-slice of one) with labels `y ∈ {−1, +1}` and cost `c`. `w`
/// (length [`LogRegConfig::n_weights`], the bias last) is the starting point on entry (zeros,
/// or a warm start) and the solution on return.
pub fn fit_logreg(
    x: ArrayView2<'_, f64>,
    y: &[f64],
    c: f64,
    cfg: &LogRegConfig,
    w: &mut [f64],
    ws: &mut Workspace,
) -> Result<FitReport, AlgoError> {
    let p = cfg.n_weights(x.ncols());
    check_inputs(&x, y, c, w, p)?;
    if x.nrows() > 0 && x.row(0).to_slice().is_none() {
        return Err(AlgoError::data(
            "logistic regression: rows must be contiguous (standard layout)",
        ));
    }
    let prob = Problem {
        x,
        y,
        c,
        bias: cfg.bias,
    };
    let n = x.nrows();
    ws.prepare(n, p);
    let Workspace {
        z,
        dd,
        g,
        m,
        z2,
        dd2,
        g2,
        m2,
        s,
        r,
        d,
        hd,
        zc,
        w_new,
    } = ws;

    // f, ∇f, D, diag(H) at the start, and Σ y_i x̃_i (into hd, free until the first CG step):
    // ∇f(0) = −(C/2) Σ y_i x̃_i.
    let mut f = prob.eval(w, z, dd, g, m, Some(hd));
    let gnorm0 = 0.5 * c * dot(hd, hd).sqrt();
    let n_pos = y.iter().filter(|&&v| v > 0.0).count();
    let scale = (n_pos.min(n - n_pos).max(1)) as f64 / n.max(1) as f64;
    let eps = cfg.tol * scale;
    let mut gnorm = dot(g, g).sqrt();
    let mut report = FitReport {
        iterations: 0,
        cg_steps: 0,
        objective: f,
        grad_norm: gnorm,
        grad_norm0: gnorm0,
        converged: gnorm <= eps * gnorm0,
    };
    if !f.is_finite() {
        return Err(AlgoError::Numerical(
            "logistic regression: non-finite objective at the starting point".into(),
        ));
    }
    if report.converged {
        return Ok(report);
    }
    const ALPHA_PCG: f64 = 0.01;
    const ETA0: f64 = 1e-4;
    const ETA1: f64 = 0.25;
    const ETA2: f64 = 0.75;
    const SIGMA1: f64 = 0.25;
    const SIGMA2: f64 = 0.5;
    const SIGMA3: f64 = 4.0;
    const CG_EPS: f64 = 0.1;
    m.iter_mut()
        .for_each(|v| *v = (1.0 - ALPHA_PCG) + ALPHA_PCG * *v);
    let mut delta = utmv(g, m, g).sqrt();
    let mut delta_adjusted = false;
    let mut iter = 1;
    while iter <= cfg.max_iter {
        // --- trust-region preconditioned CG (trpcg) ---
        let mut reach_boundary = false;
        for i in 0..p {
            s[i] = 0.0;
            r[i] = -g[i];
            zc[i] = r[i] / m[i];
            d[i] = zc[i];
        }
        let mut ztr = dot(zc, r);
        let cgtol = CG_EPS * ztr.sqrt();
        let max_cg = p.max(5);
        let mut cg = 0;
        while cg < max_cg {
            if ztr.sqrt() <= cgtol {
                break;
            }
            cg += 1;
            prob.hv(dd, d, hd);
            let dhd = dot(d, hd);
            let mut alpha = ztr / dhd;
            axpy(s, alpha, d);
            let smnorm = utmv(s, m, s).sqrt();
            if smnorm > delta {
                reach_boundary = true;
                axpy(s, -alpha, d);
                let stmd = utmv(s, m, d);
                let stms = utmv(s, m, s);
                let dtmd = utmv(d, m, d);
                let dsq = delta * delta;
                let rad = (stmd * stmd + dtmd * (dsq - stms)).sqrt();
                alpha = if stmd >= 0.0 {
                    (dsq - stms) / (stmd + rad)
                } else {
                    (rad - stmd) / dtmd
                };
                axpy(s, alpha, d);
                axpy(r, -alpha, hd);
                break;
            }
            axpy(r, -alpha, hd);
            for i in 0..p {
                zc[i] = r[i] / m[i];
            }
            let znew = dot(zc, r);
            let beta = znew / ztr;
            for i in 0..p {
                d[i] = zc[i] + beta * d[i];
            }
            ztr = znew;
        }
        report.cg_steps += cg;

        // --- trust-region update ---
        for i in 0..p {
            w_new[i] = w[i] + s[i];
        }
        let gs = dot(g, s);
        let prered = -0.5 * (gs - dot(s, r));
        // the trial point's f, with its gradient, D and diag(H) in the spare buffers
        let fnew = prob.eval(w_new, z2, dd2, g2, m2, None);
        let actred = f - fnew;
        let smnorm = utmv(s, m, s).sqrt();
        if iter == 1 && !delta_adjusted {
            delta = delta.min(smnorm);
            delta_adjusted = true;
        }
        let alpha = if fnew - f - gs <= 0.0 {
            SIGMA3
        } else {
            SIGMA1.max(-0.5 * (gs / (fnew - f - gs)))
        };
        if actred < ETA0 * prered {
            delta = (alpha * smnorm).min(SIGMA2 * delta);
        } else if actred < ETA1 * prered {
            delta = (SIGMA1 * delta).max((alpha * smnorm).min(SIGMA2 * delta));
        } else if actred < ETA2 * prered {
            delta = (SIGMA1 * delta).max((alpha * smnorm).min(SIGMA3 * delta));
        } else if reach_boundary {
            delta *= SIGMA3;
        } else {
            delta = delta.max((alpha * smnorm).min(SIGMA3 * delta));
        }
        if actred > ETA0 * prered {
            iter += 1;
            w.copy_from_slice(w_new);
            f = fnew;
            std::mem::swap(z, z2);
            std::mem::swap(dd, dd2);
            std::mem::swap(g, g2);
            std::mem::swap(m, m2);
            m.iter_mut()
                .for_each(|v| *v = (1.0 - ALPHA_PCG) + ALPHA_PCG * *v);
            gnorm = dot(g, g).sqrt();
            report.iterations += 1;
            if gnorm <= eps * gnorm0 {
                report.converged = true;
                break;
            }
        }
        if !fnew.is_finite() && !f.is_finite() {
            return Err(AlgoError::Numerical(
                "logistic regression: non-finite objective".into(),
            ));
        }
        if prered <= 0.0 {
            report.converged = true;
            break;
        }
        if actred.abs() <= 1e-12 * f.abs() && prered.abs() <= 1e-12 * f.abs() {
            report.converged = true;
            break;
        }
    }
    report.objective = f;
    report.grad_norm = gnorm;
    Ok(report)
}

/// `σ(wᵀx̃_i)` for every row of `x` (any layout), into `out`.
pub fn predict_proba(x: ArrayView2<'_, f64>, w: &[f64], bias: bool, out: &mut [f64]) {
    let d = x.ncols();
    for (i, o) in out.iter_mut().enumerate().take(x.nrows()) {
        let row = x.row(i);
        let mut t = match row.to_slice() {
            Some(r) => dot(r, &w[..d]),
            None => row.iter().zip(&w[..d]).map(|(a, b)| a * b).sum(),
        };
        if bias {
            t += w[d];
        }
        *o = sigmoid(t);
    }
}

/// The objective's gradient `w + C Σ (σ(y_i wᵀx̃_i) − 1) y_i x̃_i`, computed directly (the
/// optimality check of tests and callers).
pub fn gradient(x: ArrayView2<'_, f64>, y: &[f64], c: f64, bias: bool, w: &[f64]) -> Vec<f64> {
    let d = x.ncols();
    let mut g = w.to_vec();
    for (row, &yi) in x.rows().into_iter().zip(y) {
        let mut t: f64 = row.iter().zip(&w[..d]).map(|(a, b)| a * b).sum();
        if bias {
            t += w[d];
        }
        let a = c * (sigmoid(yi * t) - 1.0) * yi;
        for (gj, xj) in g[..d].iter_mut().zip(row) {
            *gj += a * xj;
        }
        if bias {
            g[d] += a;
        }
    }
    g
}
