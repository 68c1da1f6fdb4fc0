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
//! and its axpy). A fit costs `1 + #Newton trials + #CG steps` passes. All vectors live in a
//! [`Workspace`] reused across fits (a pass allocates only its few-element job list). Warm
//! starts: `w` is read as the starting point (the caller passes the solution at the previous C
//! of the grid).
//!
//! A pass goes through the rows in blocks of 8: first each row of the block is dotted with the
//! vector of every fit it serves ([`dot`]), then the block is added into the outputs (`∇f`,
//! `diag(H)`, `Hv`) column tile by column tile, an output entry's running value kept in a
//! register across the block's rows, so each entry is loaded and stored once per block
//! instead of once per row. Each entry still receives its rows' terms one by one in row
//! order: the same roundings as one axpy per row. The pass is compiled per vector width
//! (`dyad_kernels::simd::multiversion!`: AVX-512, AVX2, SSE2 by run-time detection); the
//! updates are element-wise and the dots are [`dot`] / [`dot_four`] at every width, so every
//! width gives the same bits (tested, with the blocked pass against the row-by-row
//! arithmetic).
//!
//! # Batches
//!
//! FuncISH fits hundreds of categories on each training set. [`fit_logreg_batch`] runs
//! several fits on the same rows in lockstep, each with its own labels, C, warm start and
//! workspace. Each fit is a resumable state machine, the TRON loop cut at its passes: it waits
//! for the starting point's `f`, a CG step's Hessian-vector product or a trial point's `f`.
//! Each round, one pass over the rows serves every fit still running, whatever it waits for
//! (its dots four at a time with [`dot_four`]); finished fits drop out. A fit's arithmetic is
//! its own, in its own order, so its weights and [`FitReport`] are bit for bit those of
//! [`fit_logreg`], which is a batch of one. Measured once on a loaded 2-core machine
//! (`benches/funcish.rs`, `logreg_batch`: 64 categories × the warm-started 6-value C path on
//! a 1,000 × 1,000 row-space design, one thread), the batched fits took 1.50 s against
//! 1.78 s one at a time (0.84×; CPU time 0.73–0.78 s against 0.86–0.92 s, and 1.10–1.16 s
//! for the solver before the blocked, width-specific pass). Batching gains little at this
//! size because the 8 MB design stays in the L3 cache, so the passes are bound by arithmetic
//! rather than memory traffic. Batching shares the row loads and part of the dot products
//! (`dot_four` costs about three `dot`s here, so one or two vectors take `dot` each), but not
//! the per-fit updates.
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

use dyad_kernels::linalg::{axpy, dot, dot_four};
use dyad_kernels::params;
use dyad_kernels::simd::{AVX2, AVX512, Isa, multiversion};
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};
use std::ops::Range;

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

#[inline]
fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// `uᵀ diag(m) v`.
fn utmv(u: &[f64], m: &[f64], v: &[f64]) -> f64 {
    u.iter().zip(m).zip(v).map(|((a, b), c)| a * b * c).sum()
}

/// A fused function-value pass of one instance (module docs, "Cost"): `f(w)` (into `f`),
/// which also yields everything the next Newton iteration needs should `w` be accepted:
/// `z_i = y_i wᵀx̃_i`, `D_i`, `∇f(w)` (into `g`) and the Hessian's diagonal (into `m`); with
/// `ysum`, also `Σ_i y_i x̃_i` (for `‖∇f(0)‖`).
struct EvalJob<'s> {
    c: f64,
    y: &'s [f64],
    w: &'s [f64],
    z: &'s mut [f64],
    dd: &'s mut [f64],
    g: &'s mut [f64],
    m: &'s mut [f64],
    ysum: Option<&'s mut [f64]>,
    loss: f64,
    f: &'s mut f64,
}

/// What one instance needs from the next pass over the rows.
enum Job<'s> {
    /// `out = ∇²f(w) v = v + C Σ_i D_i (x̃_iᵀv) x̃_i` with the stored `D` (`dd`).
    Hv {
        c: f64,
        dd: &'s [f64],
        v: &'s [f64],
        out: &'s mut [f64],
    },
    Eval(EvalJob<'s>),
}

impl Job<'_> {
    /// The vector each row is dotted with (its first `d` entries: the bias is added apart).
    #[inline]
    fn vector(&self) -> &[f64] {
        match self {
            Job::Hv { v, .. } => v,
            Job::Eval(e) => e.w,
        }
    }

    fn begin(&mut self) {
        match self {
            Job::Hv { v, out, .. } => out.copy_from_slice(v),
            Job::Eval(e) => {
                e.g.copy_from_slice(e.w);
                e.m.iter_mut().for_each(|v| *v = 1.0);
                if let Some(ys) = e.ysum.as_deref_mut() {
                    ys.iter_mut().for_each(|v| *v = 0.0);
                }
                e.loss = 0.0;
            }
        }
    }

    /// Row `i`'s scalars, given `dot_i = x_iᵀ vector[..d]`: its coefficients in the row
    /// updates (Hv: `t = C D_i x̃_iᵀv`; Eval: `a = C (σ_i − 1) y_i` and `C D_i`, after
    /// storing `z_i`, `D_i` and adding the loss term).
    #[inline(always)]
    fn scalars(&mut self, i: usize, dot_i: f64, d: usize, bias: bool) -> [f64; 2] {
        match self {
            Job::Hv { c, dd, v, .. } => {
                let mut t = dot_i;
                if bias {
                    t += v[d];
                }
                [t * *c * dd[i], 0.0]
            }
            Job::Eval(e) => {
                let yi = e.y[i];
                let mut t = dot_i;
                if bias {
                    t += e.w[d];
                }
                let zi = yi * t;
                e.z[i] = zi;
                // ex = exp(−|z|): log(1 + exp(−z)) and σ(z) from one exponential
                let ex = (-zi.abs()).exp();
                let (l, s) = if zi >= 0.0 {
                    (ex.ln_1p(), 1.0 / (1.0 + ex))
                } else {
                    (-zi + ex.ln_1p(), ex / (1.0 + ex))
                };
                e.loss += l;
                e.dd[i] = s * (1.0 - s);
                [e.c * (s - 1.0) * yi, e.c * e.dd[i]]
            }
        }
    }

    /// A block's row updates of columns `cols` (`rows`: the block's rows cut to `cols`;
    /// `a`, `b`: their coefficients; `b0`: the block's first row).
    #[inline(always)]
    fn update<const C: usize>(
        &mut self,
        rows: &[&[f64]],
        a: &[f64],
        b: &[f64],
        b0: usize,
        cols: Range<usize>,
    ) {
        match self {
            Job::Hv { out, .. } => add_rows::<C>(&mut out[cols], rows, a),
            Job::Eval(e) => {
                add_rows::<C>(&mut e.g[cols.clone()], rows, a);
                add_rows_sq::<C>(&mut e.m[cols.clone()], rows, b);
                if let Some(ys) = e.ysum.as_deref_mut() {
                    add_rows::<C>(&mut ys[cols], rows, &e.y[b0..b0 + rows.len()]);
                }
            }
        }
    }

    /// A block's updates of the bias entry `d` (the constant feature 1), row by row.
    fn update_bias(&mut self, a: &[f64], b: &[f64], b0: usize, d: usize) {
        match self {
            Job::Hv { out, .. } => a.iter().for_each(|t| out[d] += t),
            Job::Eval(e) => {
                for (k, (ak, bk)) in a.iter().zip(b).enumerate() {
                    e.g[d] += ak;
                    e.m[d] += bk;
                    if let Some(ys) = e.ysum.as_deref_mut() {
                        ys[d] += e.y[b0 + k];
                    }
                }
            }
        }
    }

    fn end(self) {
        if let Job::Eval(e) = self {
            *e.f = 0.5 * dot(e.w, e.w) + e.c * e.loss;
        }
    }
}

/// `out[j] += t[k] · rows[k][j]` for every `k` in order and every `j`: the roundings of one
/// axpy per row, one after the other, with a column's running value kept in a register
/// across the rows (one load and store per block instead of per row).
#[inline(always)]
fn add_rows<const C: usize>(out: &mut [f64], rows: &[&[f64]], t: &[f64]) {
    add_terms::<C>(out, rows, t, |tk, x| tk * x);
}

/// `out[j] += t[k] · rows[k][j] · rows[k][j]` likewise (the Hessian's diagonal).
#[inline(always)]
fn add_rows_sq<const C: usize>(out: &mut [f64], rows: &[&[f64]], t: &[f64]) {
    add_terms::<C>(out, rows, t, |tk, x| tk * x * x);
}

/// `out[j] += term(t[k], rows[k][j])` for every `k` in order and every `j`, `C` columns at
/// a time in registers (the loop of [`add_rows`] and [`add_rows_sq`]).
#[inline(always)]
fn add_terms<const C: usize>(
    out: &mut [f64],
    rows: &[&[f64]],
    t: &[f64],
    term: impl Fn(f64, f64) -> f64,
) {
    let mut chunks = out.chunks_exact_mut(C);
    let mut j = 0;
    for o in &mut chunks {
        let mut acc = [0.0; C];
        acc.copy_from_slice(o);
        for (r, &tk) in rows.iter().zip(t) {
            let x = &r[j..j + C];
            for q in 0..C {
                acc[q] += term(tk, x[q]);
            }
        }
        o.copy_from_slice(&acc);
        j += C;
    }
    for (q, o) in chunks.into_remainder().iter_mut().enumerate() {
        for (r, &tk) in rows.iter().zip(t) {
            *o += term(tk, r[j + q]);
        }
    }
}

/// Rows per block of a pass.
const BLOCK: usize = 8;
/// Columns per tile of a block's updates (8 rows × 128 doubles: 8 KB, in L1 while every
/// job adds it in).
const TILE: usize = 128;

/// One pass over the rows of `x` serving every job, a block of [`BLOCK`] rows at a time:
/// first each row of the block is dotted with the jobs' vectors, four at a time
/// ([`dot_four`]: per vector, the bits of [`dot`]; a group of three repeats its last vector,
/// one or two take [`dot`] each), and each job takes its scalars from its dot; then the jobs
/// add the block's rows into their outputs, tile by tile of [`TILE`] columns, while the block
/// is in cache. Every output entry receives the same terms in the same (row) order as in a
/// row-by-row pass of its own, so each job's result is the same to the bit, whatever the
/// other jobs. Compiled per vector width ([`multiversion!`]): the updates are element-wise
/// and the dots are [`dot`] / [`dot_four`] whatever the width, so every width gives the same
/// bits.
#[inline(always)]
fn pass_body<const W: u8>(x: ArrayView2<'_, f64>, bias: bool, jobs: &mut [Job<'_>]) {
    jobs.iter_mut().for_each(Job::begin);
    let (n, d) = x.dim();
    let nj = jobs.len();
    let mut dots = vec![0.0; nj];
    // per job, per row of the block: its two coefficients
    let mut coef_a = vec![0.0; nj * BLOCK];
    let mut coef_b = vec![0.0; nj * BLOCK];
    let mut rows: [&[f64]; BLOCK] = [&[]; BLOCK];
    let mut tile: [&[f64]; BLOCK] = [&[]; BLOCK];
    for b0 in (0..n).step_by(BLOCK) {
        let nb = BLOCK.min(n - b0);
        for (k, row) in rows[..nb].iter_mut().enumerate() {
            let i = b0 + k;
            *row = x.row(i).to_slice().expect("rows are contiguous");
            for (js, ds) in jobs.chunks(4).zip(dots.chunks_mut(4)) {
                if js.len() < 3 {
                    // a padded `dot_four` costs about three `dot`s (measured): one or two
                    // vectors go alone
                    for (j, o) in js.iter().zip(ds.iter_mut()) {
                        *o = dot(row, &j.vector()[..d]);
                    }
                } else {
                    let u = |q: usize| &js[q.min(js.len() - 1)].vector()[..d];
                    let four = dot_four(row, &[u(0), u(1), u(2), u(3)]);
                    ds.copy_from_slice(&four[..js.len()]);
                }
            }
            for (q, (j, &t)) in jobs.iter_mut().zip(&dots).enumerate() {
                let [a, b] = j.scalars(i, t, d, bias);
                coef_a[q * BLOCK + k] = a;
                coef_b[q * BLOCK + k] = b;
            }
        }
        for t0 in (0..d).step_by(TILE) {
            let cols = t0..(t0 + TILE).min(d);
            for (t, row) in tile[..nb].iter_mut().zip(&rows[..nb]) {
                *t = &row[cols.clone()];
            }
            for (q, j) in jobs.iter_mut().enumerate() {
                let a = &coef_a[q * BLOCK..q * BLOCK + nb];
                let b = &coef_b[q * BLOCK..q * BLOCK + nb];
                let tile = &tile[..nb];
                match W {
                    AVX512 => j.update::<32>(tile, a, b, b0, cols.clone()),
                    AVX2 => j.update::<16>(tile, a, b, b0, cols.clone()),
                    _ => j.update::<8>(tile, a, b, b0, cols.clone()),
                }
            }
        }
        if bias {
            for (q, j) in jobs.iter_mut().enumerate() {
                let a = &coef_a[q * BLOCK..q * BLOCK + nb];
                let b = &coef_b[q * BLOCK..q * BLOCK + nb];
                j.update_bias(a, b, b0, d);
            }
        }
    }
}

multiversion!(pass, pass_body, (x: ArrayView2<'_, f64>, bias: bool, jobs: &mut [Job<'_>]) -> ());

const ALPHA_PCG: f64 = 0.01;
const ETA0: f64 = 1e-4;
const ETA1: f64 = 0.25;
const ETA2: f64 = 0.75;
const SIGMA1: f64 = 0.25;
const SIGMA2: f64 = 0.5;
const SIGMA3: f64 = 4.0;
const CG_EPS: f64 = 0.1;

/// Where an instance of TRON stands: the pass it waits for, or done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waits for `f`, `∇f`, `D`, `diag(H)` and `Σ y_i x̃_i` at the starting point.
    Start,
    /// In conjugate gradients, waits for `∇²f(w) d`.
    Cg,
    /// Waits for `f` (and the rest) at the trial point `w + s`.
    Trial,
    Done,
}

/// One fit as a resumable state machine: LIBLINEAR's TRON loop cut at its passes over the
/// rows. [`Tron::job`] names the pass it waits for, [`Tron::resume`] runs the loop on to the
/// next one (or to the end).
struct Tron<'a> {
    y: &'a [f64],
    c: f64,
    w: &'a mut [f64],
    ws: &'a mut Workspace,
    phase: Phase,
    /// `f` from the last function-value pass.
    f_pass: f64,
    f: f64,
    gnorm: f64,
    gnorm0: f64,
    eps: f64,
    delta: f64,
    delta_adjusted: bool,
    iter: usize,
    report: FitReport,
    reach_boundary: bool,
    ztr: f64,
    cgtol: f64,
    cg: usize,
    gs: f64,
    prered: f64,
    result: Option<Result<FitReport, AlgoError>>,
}

impl<'a> Tron<'a> {
    fn new(fit: &'a mut BatchFit<'_>, n: usize, p: usize, valid: Result<(), AlgoError>) -> Self {
        let phase = if valid.is_ok() {
            fit.ws.prepare(n, p);
            Phase::Start
        } else {
            Phase::Done
        };
        Self {
            y: fit.y,
            c: fit.c,
            w: &mut *fit.w,
            ws: &mut *fit.ws,
            phase,
            f_pass: 0.0,
            f: 0.0,
            gnorm: 0.0,
            gnorm0: 0.0,
            eps: 0.0,
            delta: 0.0,
            delta_adjusted: false,
            iter: 0,
            report: FitReport {
                iterations: 0,
                cg_steps: 0,
                objective: 0.0,
                grad_norm: 0.0,
                grad_norm0: 0.0,
                converged: false,
            },
            reach_boundary: false,
            ztr: 0.0,
            cgtol: 0.0,
            cg: 0,
            gs: 0.0,
            prered: 0.0,
            result: valid.err().map(Err),
        }
    }

    /// The pass this instance waits for (`None` once done).
    fn job(&mut self) -> Option<Job<'_>> {
        let ws = &mut *self.ws;
        match self.phase {
            // f, ∇f, D, diag(H) at the start, and Σ y_i x̃_i (into hd, free until the first
            // CG step): ∇f(0) = −(C/2) Σ y_i x̃_i.
            Phase::Start => Some(Job::Eval(EvalJob {
                c: self.c,
                y: self.y,
                w: &*self.w,
                z: &mut ws.z,
                dd: &mut ws.dd,
                g: &mut ws.g,
                m: &mut ws.m,
                ysum: Some(&mut ws.hd),
                loss: 0.0,
                f: &mut self.f_pass,
            })),
            Phase::Cg => Some(Job::Hv {
                c: self.c,
                dd: &ws.dd,
                v: &ws.d,
                out: &mut ws.hd,
            }),
            // the trial point's f, with its gradient, D and diag(H) in the spare buffers
            Phase::Trial => Some(Job::Eval(EvalJob {
                c: self.c,
                y: self.y,
                w: &ws.w_new,
                z: &mut ws.z2,
                dd: &mut ws.dd2,
                g: &mut ws.g2,
                m: &mut ws.m2,
                ysum: None,
                loss: 0.0,
                f: &mut self.f_pass,
            })),
            Phase::Done => None,
        }
    }

    /// Continue after the pass of [`Self::job`] up to the next pass or the end.
    fn resume(&mut self, cfg: &LogRegConfig) {
        match self.phase {
            Phase::Start => self.started(cfg),
            Phase::Cg => self.cg_step(),
            Phase::Trial => self.trial(cfg),
            Phase::Done => {}
        }
    }

    fn finish(&mut self, result: Result<FitReport, AlgoError>) {
        self.result = Some(result);
        self.phase = Phase::Done;
    }

    fn stop(&mut self) {
        self.report.objective = self.f;
        self.report.grad_norm = self.gnorm;
        self.finish(Ok(self.report));
    }

    fn started(&mut self, cfg: &LogRegConfig) {
        let Workspace { g, m, hd, .. } = &mut *self.ws;
        let f = self.f_pass;
        self.f = f;
        self.gnorm0 = 0.5 * self.c * dot(hd, hd).sqrt();
        let n = self.y.len();
        let n_pos = self.y.iter().filter(|&&v| v > 0.0).count();
        let scale = (n_pos.min(n - n_pos).max(1)) as f64 / n.max(1) as f64;
        self.eps = cfg.tol * scale;
        self.gnorm = dot(g, g).sqrt();
        self.report = FitReport {
            iterations: 0,
            cg_steps: 0,
            objective: f,
            grad_norm: self.gnorm,
            grad_norm0: self.gnorm0,
            converged: self.gnorm <= self.eps * self.gnorm0,
        };
        if !f.is_finite() {
            return self.finish(Err(AlgoError::Numerical(
                "logistic regression: non-finite objective at the starting point".into(),
            )));
        }
        if self.report.converged {
            return self.finish(Ok(self.report));
        }
        m.iter_mut()
            .for_each(|v| *v = (1.0 - ALPHA_PCG) + ALPHA_PCG * *v);
        self.delta = utmv(g, m, g).sqrt();
        self.delta_adjusted = false;
        self.iter = 1;
        self.iteration(cfg);
    }

    /// The head of a Newton iteration: start the trust-region preconditioned CG (trpcg).
    fn iteration(&mut self, cfg: &LogRegConfig) {
        if self.iter > cfg.max_iter {
            return self.stop();
        }
        let Workspace {
            g, m, s, r, zc, d, ..
        } = &mut *self.ws;
        self.reach_boundary = false;
        for i in 0..s.len() {
            s[i] = 0.0;
            r[i] = -g[i];
            zc[i] = r[i] / m[i];
            d[i] = zc[i];
        }
        self.ztr = dot(zc, r);
        self.cgtol = CG_EPS * self.ztr.sqrt();
        self.cg = 0;
        self.cg_head();
    }

    /// The head of the CG loop: another step (a Hessian-vector pass), or the trial point.
    fn cg_head(&mut self) {
        let max_cg = self.w.len().max(5);
        if self.cg >= max_cg || self.ztr.sqrt() <= self.cgtol {
            return self.cg_done();
        }
        self.cg += 1;
        self.phase = Phase::Cg;
    }

    /// The rest of a CG step, with `hd = ∇²f(w) d`.
    fn cg_step(&mut self) {
        let Workspace {
            m, s, r, zc, d, hd, ..
        } = &mut *self.ws;
        let dhd = dot(d, hd);
        let mut alpha = self.ztr / dhd;
        axpy(s, alpha, d);
        let smnorm = utmv(s, m, s).sqrt();
        if smnorm > self.delta {
            self.reach_boundary = true;
            axpy(s, -alpha, d);
            let stmd = utmv(s, m, d);
            let stms = utmv(s, m, s);
            let dtmd = utmv(d, m, d);
            let dsq = self.delta * self.delta;
            let rad = (stmd * stmd + dtmd * (dsq - stms)).sqrt();
            alpha = if stmd >= 0.0 {
                (dsq - stms) / (stmd + rad)
            } else {
                (rad - stmd) / dtmd
            };
            axpy(s, alpha, d);
            axpy(r, -alpha, hd);
            return self.cg_done();
        }
        axpy(r, -alpha, hd);
        for i in 0..s.len() {
            zc[i] = r[i] / m[i];
        }
        let znew = dot(zc, r);
        let beta = znew / self.ztr;
        for i in 0..s.len() {
            d[i] = zc[i] + beta * d[i];
        }
        self.ztr = znew;
        self.cg_head();
    }

    /// CG is over: the trial point `w + s` and the predicted reduction.
    fn cg_done(&mut self) {
        self.report.cg_steps += self.cg;
        let Workspace { g, s, r, w_new, .. } = &mut *self.ws;
        for i in 0..s.len() {
            w_new[i] = self.w[i] + s[i];
        }
        self.gs = dot(g, s);
        self.prered = -0.5 * (self.gs - dot(s, r));
        self.phase = Phase::Trial;
    }

    /// The trust-region update, with the trial point's `f` (and its gradient, `D`, `diag(H)`).
    fn trial(&mut self, cfg: &LogRegConfig) {
        let fnew = self.f_pass;
        let (f, gs, prered) = (self.f, self.gs, self.prered);
        let actred = f - fnew;
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
            w_new,
            ..
        } = &mut *self.ws;
        let smnorm = utmv(s, m, s).sqrt();
        let mut delta = self.delta;
        if self.iter == 1 && !self.delta_adjusted {
            delta = delta.min(smnorm);
            self.delta_adjusted = true;
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
        } else if self.reach_boundary {
            delta *= SIGMA3;
        } else {
            delta = delta.max((alpha * smnorm).min(SIGMA3 * delta));
        }
        self.delta = delta;
        if actred > ETA0 * prered {
            self.iter += 1;
            self.w.copy_from_slice(w_new);
            self.f = fnew;
            std::mem::swap(z, z2);
            std::mem::swap(dd, dd2);
            std::mem::swap(g, g2);
            std::mem::swap(m, m2);
            m.iter_mut()
                .for_each(|v| *v = (1.0 - ALPHA_PCG) + ALPHA_PCG * *v);
            self.gnorm = dot(g, g).sqrt();
            self.report.iterations += 1;
            if self.gnorm <= self.eps * self.gnorm0 {
                self.report.converged = true;
                return self.stop();
            }
        }
        if !fnew.is_finite() && !self.f.is_finite() {
            return self.finish(Err(AlgoError::Numerical(
                "logistic regression: non-finite objective".into(),
            )));
        }
        let f = self.f;
        if prered <= 0.0 || (actred.abs() <= 1e-12 * f.abs() && prered.abs() <= 1e-12 * f.abs()) {
            self.report.converged = true;
            return self.stop();
        }
        self.iteration(cfg);
    }
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
    if x.nrows() > 0 && x.row(0).to_slice().is_none() {
        return Err(AlgoError::data(
            "logistic regression: rows must be contiguous (standard layout)",
        ));
    }
    Ok(())
}

/// One fit of [`fit_logreg_batch`]: labels `y ∈ {−1, +1}`, cost `c`, the weights `w` (length
/// [`LogRegConfig::n_weights`], the bias last; the starting point on entry, the solution on
/// return) and a workspace of its own.
#[derive(Debug)]
pub struct BatchFit<'a> {
    pub y: &'a [f64],
    pub c: f64,
    pub w: &'a mut [f64],
    pub ws: &'a mut Workspace,
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
    let mut fits = [BatchFit { y, c, w, ws }];
    let [r] = <[_; 1]>::try_from(fit_logreg_batch(x, cfg, &mut fits)).expect("one result");
    r
}

/// Several fits on the same rows `x` at once (module docs, "Batches"): each fit's result
/// (its weights and [`FitReport`]) is bit for bit what [`fit_logreg`] gives it alone; each
/// pass over the rows serves every fit still running. Results in the order of `fits`; an
/// invalid fit gets its error and does not disturb the others.
pub fn fit_logreg_batch(
    x: ArrayView2<'_, f64>,
    cfg: &LogRegConfig,
    fits: &mut [BatchFit<'_>],
) -> Vec<Result<FitReport, AlgoError>> {
    fit_batch_on(Isa::detect(), x, cfg, fits)
}

/// [`fit_logreg_batch`] with its passes compiled for `isa` (every one gives the same bits).
pub(super) fn fit_batch_on(
    isa: Isa,
    x: ArrayView2<'_, f64>,
    cfg: &LogRegConfig,
    fits: &mut [BatchFit<'_>],
) -> Vec<Result<FitReport, AlgoError>> {
    let (n, p) = (x.nrows(), cfg.n_weights(x.ncols()));
    let mut trons: Vec<Tron<'_>> = fits
        .iter_mut()
        .map(|fit| {
            let valid = check_inputs(&x, fit.y, fit.c, fit.w, p);
            Tron::new(fit, n, p, valid)
        })
        .collect();
    loop {
        let mut jobs: Vec<Job<'_>> = trons.iter_mut().filter_map(Tron::job).collect();
        if jobs.is_empty() {
            break;
        }
        pass(isa, x, cfg.bias, &mut jobs);
        jobs.into_iter().for_each(Job::end);
        trons.iter_mut().for_each(|t| t.resume(cfg));
    }
    trons
        .into_iter()
        .map(|t| t.result.expect("every fit runs to its end"))
        .collect()
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
