//! LMNN: Large Margin Nearest Neighbour metric learning (Weinberger, Blitzer & Saul 2006;
//! Weinberger & Saul, JMLR 2009), the "LMNN (naive)" and "fast-LMNN" baselines of OASIS spec
//! §5 (rows 4 and 5).
//!
//! # Objective
//!
//! Over positive semi-definite `M`, with `d_M(a, b) = (x_a - x_b)^T M (x_a - x_b)`:
//!
//! ```text
//! err(M) = ω Σ_{i, j⇝i} d_M(x_i, x_j)
//!        + (1 - ω) Σ_{i, j⇝i, l: y_l ≠ y_i} [1 + d_M(x_i, x_j) - d_M(x_i, x_l)]_+
//! ```
//!
//! **ω reading** (spec §5 marks it \[AMBIGUOUS\]): ω weights the *pull* term and `1 - ω` the
//! hinge (*push*) term, as in the online form of spec §4.1
//! (`err = -ω S'(p, p+) + (1 - ω) l'(p, p+, p-)`, Dissim-Oasis at ω = 0). In Weinberger &
//! Saul's notation `ε(M) = (1-μ) pull + μ push` this is `ω = 1 - μ`; the default ω = 0.5 is
//! their default μ = 0.5, and the spec's grid ω ∈ {0.125, 0.25, 0.5} weights the push term
//! as much as or more than the pull term.
//!
//! **Target neighbours** `j ⇝ i`: the `k` nearest points of `i`'s class in the input
//! (Euclidean) space, ties broken by the lower index; fixed for the whole run. The papers do not
//! give `k` (\[AMBIGUOUS\]); the default `k = 3` is the LMNN papers' and reference code's
//! default. A class with fewer than `k + 1` training points gives each of its points all of its
//! other members; a singleton class has no target neighbours (its point still serves as an
//! impostor of other classes).
//!
//! # Solver
//!
//! Projected subgradient descent on `M`, starting from `M = I` (the Euclidean metric). The
//! subgradient is
//!
//! ```text
//! G = ω Σ C_ij + (1 - ω) Σ_{active (i,j,l)} (C_ij - C_il),   C_ab = (x_a - x_b)(x_a - x_b)^T,
//! ```
//!
//! (a triplet is active when its hinge is strictly positive). It is never formed from outer
//! products: every pair `(a, b)` gets one weight (`ω + (1-ω)·#active impostors` for a target
//! pair, `-(1-ω)·#active targets` for an impostor pair), and `G = X^T L X` with `L` the graph
//! Laplacian of those weights: `O(n² r + n r²)` per gradient instead of `O(#triplets · r²)`.
//! Distances come from the kernel `K = X M X^T` (`d_M(a, b) = K_aa + K_bb - 2 K_ab`), one
//! `O(n r² + n² r)` product instead of one `O(r²)` quadratic form per pair.
//!
//! **Step rule** (the reference implementation's): the trial point is
//! `Π_psd(M - α G)` (eigendecomposition, negative eigenvalues clipped). If it lowers the
//! objective it is accepted and `α ← step_grow · α` (×1.01); otherwise `α ← step_shrink · α`
//! (×0.5) and the trial is retried from the same `M`. The objective is therefore
//! non-increasing over accepted steps. The first trial moves `M` by `step_size` in Frobenius
//! norm (`α₀ = step_size / ‖G₀‖_F`); afterwards `α` is an absolute step size.
//!
//! **A step** of the [`Schedule`] is one gradient iteration: one gradient and the
//! backtracking search that follows it (however many trials it takes). An iteration whose
//! search cannot lower the objective any more (the step has become negligible:
//! `α ‖G‖_F ≤ 1e-12 (1 + ‖M‖_F)`, or 60 trials) leaves `M` unchanged and ends the run.
//!
//! **Convergence**: an accepted step whose relative decrease `(f_old - f_new) / f_old` is
//! below `tolerance`, or an exhausted search. The run also ends after `max_iter` iterations or
//! at the schedule's budget, whichever comes first. The final model is reported with
//! `last = true` at the iteration where the run ended.
//!
//! # Active set (fast-LMNN)
//!
//! With `active_set = true` the solver keeps a *working set* of impostor triplets (stored per
//! impostor pair `(i, l)` with a bit mask over `i`'s target neighbours). At the start and
//! every `refresh_every` iterations (default 10) it computes all pairwise distances and
//! replaces the working set by the triplets active at that point (unless it undoes the period,
//! see *anchor* below). Between refreshes only the working set is evaluated —
//! `O(|pairs in the set| · r)` distances from `Z = X M`, or the full kernel when the set covers
//! more than 1/50 of all pairs — and the gradient is updated incrementally from the `p` pairs
//! whose weights changed (`ΔG = X_S^T ΔL X_S` over the `m ≤ min(n, 2p)` points they touch,
//! `O(p r + m r²)`); every refresh recomputes it from scratch (no drift). Between refreshes the
//! solver minimises the working-set objective: a lower bound of the full objective (triplets outside
//! the set count as inactive), equal to it right after each refresh, and non-increasing
//! between refreshes. The full objective may rise meanwhile, when triplets outside the set
//! become active, and without a safeguard it does: the step size keeps growing (every step
//! lowers the working-set objective), and on small random problems runs refreshed every 1–10
//! iterations climbed to up to 3.5× the optimum or never converged. Hence the **anchor**: each
//! refresh compares the full objective with the one at the previous refresh. If it is not
//! higher, the working set becomes the triplets active now and this point the new anchor. If
//! it is higher, the period is undone: `M` and the step size go back to the anchor's, the step
//! size is multiplied by `step_shrink`, and the working set becomes the union of the old set and
//! the triplets active now. (A period can raise the full objective only by activating a triplet
//! outside the set, so each undo grows the set: there are finitely many undos in a row.) The full
//! objective at refresh points is therefore non-increasing. When the convergence test fires, the
//! working set is refreshed at once, and the run ends only if that refresh kept the step and
//! found no active triplet outside the set, so the final objective is the full objective at the
//! final `M`.
//!
//! (A working set that keeps every triplet ever found active — a union, which never
//! shrinks — gains nothing on the papers' unit-norm features: at `M = I` the margin 1 exceeds
//! most squared distances (≤ 2), so nearly every triplet is active at the first refresh. The
//! union is taken only when a period is undone.)
//!
//! # PCA (spec §5: "project onto PCA basis without dimensionality reduction")
//!
//! With `pca = true` the training rows are centred and rotated onto their principal axes
//! (thin SVD), keeping *every* component with a non-zero singular value (rank tolerance
//! `s_max · max(n, d) · ε`): no variance is discarded. An orthogonal rotation changes nothing
//! in this solver — Euclidean target neighbours, the Frobenius-geometry gradient step and the
//! eigenvalue clipping are all rotation-equivariant — but it exposes that all training
//! differences `x_i - x_j` live in the `r ≤ min(n - 1, d)`-dimensional span of the centred data.
//! Every gradient lies in that span, so from `M = I` every iterate has the form
//! `M = B A B^T + (I - B B^T)` (`B`: the `d × r` basis, `A`: `r × r` PSD) and the solver works
//! on `A` only: `O(r³)` instead of `O(d³)` per eigendecomposition when `n ≤ d` (Caltech: 400
//! points in d = 1,000). The reported `M` is the full `d × d` matrix above: directions
//! outside the training span keep the Euclidean metric. With `pca = false` the solver runs
//! on `M` in the raw `d` coordinates and produces the same model up to rounding (tested).
//!
//! # Cost
//!
//! Per trial point: one `r × r` eigendecomposition (the floor of both variants), `Z = X M`
//! (`n r²`) and, naive, `K = Z X^T` (`n² r / 2`) plus the Laplacian product (`n² r`, or one axpy
//! per non-zero when few pairs are active). All products go through faer, sequentially (one
//! core, deterministic). `benches/lmnn.rs` times both variants on a Caltech-like stand-in;
//! on it the active set pays off only once the working set has shrunk (at `M = I` nearly
//! every triplet is active), and at n = 400 both variants sit on the eigendecomposition floor.

use crate::metric::Mahalanobis;
use dyad_core::{
    Control, CoreError, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, Stepper, drive,
};
use dyad_kernels::linalg::{dot, gemm, gemm_sym, psd_projection_sym as project_psd, thin_svd};
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::{AlgoError, Ranker};
use ndarray::{Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

/// Parameters of LMNN.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LmnnConfig {
    /// Weight ω of the pull term; the hinge (push) term gets `1 - ω` (module docs). In
    /// `[0, 1)`; the spec selects it from {0.125, 0.25, 0.5} by cross-validation.
    #[serde(default = "default_omega")]
    pub omega: f64,
    /// Number of target neighbours per point, `1..=64` (the papers do not give it; 3 is the
    /// LMNN papers' choice).
    #[serde(default = "default_k")]
    pub k: usize,
    /// `false`: "LMNN (naive)", every triplet every iteration. `true`: "fast-LMNN", a working
    /// set of impostor triplets refreshed every `refresh_every` iterations.
    #[serde(default)]
    pub active_set: bool,
    /// Iterations between two refreshes of the working set (active-set variant only; 10).
    #[serde(default = "default_refresh_every")]
    pub refresh_every: u64,
    /// Rotate onto the PCA basis of the training data, keeping every component (module docs).
    #[serde(default = "default_pca")]
    pub pca: bool,
    /// Largest number of gradient iterations (the schedule's budget also bounds them; 1000).
    #[serde(default = "default_max_iter")]
    pub max_iter: u64,
    /// Converged when an accepted step lowers the objective by less than this fraction
    /// (1e-7).
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Frobenius norm of the first trial step `α₀ G₀` (10: `M = I` has unit eigenvalues, and
    /// on unit-norm features a first step of 1 left the step rule ×1.01 hundreds of
    /// iterations of growth to reach useful step sizes; too large a step is halved at once).
    #[serde(default = "default_step_size")]
    pub step_size: f64,
    /// Step-size factor after an accepted step (≥ 1; 1.01).
    #[serde(default = "default_step_grow")]
    pub step_grow: f64,
    /// Step-size factor after a rejected trial, in `(0, 1)` (0.5).
    #[serde(default = "default_step_shrink")]
    pub step_shrink: f64,
}

fn default_omega() -> f64 {
    0.5
}
fn default_k() -> usize {
    3
}
fn default_refresh_every() -> u64 {
    10
}
fn default_pca() -> bool {
    true
}
fn default_max_iter() -> u64 {
    1000
}
fn default_tolerance() -> f64 {
    1e-7
}
fn default_step_size() -> f64 {
    10.0
}
fn default_step_grow() -> f64 {
    1.01
}
fn default_step_shrink() -> f64 {
    0.5
}

impl Default for LmnnConfig {
    fn default() -> Self {
        Self {
            omega: default_omega(),
            k: default_k(),
            active_set: false,
            refresh_every: default_refresh_every(),
            pca: default_pca(),
            max_iter: default_max_iter(),
            tolerance: default_tolerance(),
            step_size: default_step_size(),
            step_grow: default_step_grow(),
            step_shrink: default_step_shrink(),
        }
    }
}

/// Most trials of one backtracking search.
const MAX_TRIALS: u32 = 60;

/// Largest `k`: target neighbours are bits of a `u64` mask in the working set.
const MAX_K: usize = 64;

impl Checked for LmnnConfig {
    fn check(&self) -> Result<(), ParamError> {
        if !(self.omega.is_finite() && (0.0..1.0).contains(&self.omega)) {
            return Err(ParamError::new(
                "omega",
                format!("must lie in [0, 1), got {}", self.omega),
            ));
        }
        if !(1..=MAX_K).contains(&self.k) {
            return Err(ParamError::new(
                "k",
                format!("must lie in 1..={MAX_K}, got {}", self.k),
            ));
        }
        params::at_least_one("refresh_every", self.refresh_every)?;
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("tolerance", self.tolerance)?;
        params::positive("step_size", self.step_size)?;
        params::at_least("step_grow", self.step_grow, 1.0)?;
        params::open_interval("step_shrink", self.step_shrink, 0.0, 1.0)
    }
}

fn frobenius(m: &Array2<f64>) -> f64 {
    m.iter().map(|v| v * v).sum::<f64>().sqrt()
}

// ---------------------------------------------------------------------------------------
// Objective machinery.

/// `K = X A X^T` (all pairs) or `Z = X A` (pairs on demand): squared distances
/// `d_A(a, b) = K_aa + K_bb - 2 K_ab`.
enum Kernel {
    Dense(Array2<f64>),
    Lazy { z: Array2<f64>, diag: Vec<f64> },
}

impl Kernel {
    fn new(x: &Array2<f64>, a: &Array2<f64>, dense: bool) -> Self {
        let n = x.nrows();
        let mut z = Array2::<f64>::zeros((n, a.ncols()));
        gemm(z.view_mut(), false, x.view(), a.view());
        if dense {
            let mut k = Array2::<f64>::zeros((n, n));
            gemm_sym(k.view_mut(), false, z.view(), x.t());
            Kernel::Dense(k)
        } else {
            let diag = (0..n)
                .map(|i| dot(z.row(i).as_slice().unwrap(), x.row(i).as_slice().unwrap()))
                .collect();
            Kernel::Lazy { z, diag }
        }
    }

    #[inline]
    fn dist(&self, x: &Array2<f64>, a: usize, b: usize) -> f64 {
        match self {
            Kernel::Dense(k) => k[[a, a]] + k[[b, b]] - 2.0 * k[[a, b]],
            Kernel::Lazy { z, diag } => {
                let cross = dot(z.row(a).as_slice().unwrap(), x.row(b).as_slice().unwrap());
                diag[a] + diag[b] - 2.0 * cross
            }
        }
    }
}

/// Impostor triplets grouped by pair: entry `e` of row `i` holds an impostor `imp[e]` of `i`
/// and a mask whose bit `t` stands for the triplet `(i, targets[i][t], imp[e])`. Rows are
/// sorted by impostor.
#[derive(Debug, Clone, Default)]
struct WorkingSet {
    start: Vec<usize>,
    imp: Vec<u32>,
    mask: Vec<u64>,
}

impl WorkingSet {
    fn entries(&self, i: usize) -> std::ops::Range<usize> {
        self.start[i]..self.start[i + 1]
    }

    fn triplets(&self) -> u64 {
        self.mask.iter().map(|m| u64::from(m.count_ones())).sum()
    }

    /// The number of triplets of `other` that are not in `self`.
    fn missing(&self, other: &WorkingSet) -> u64 {
        let n = self.start.len() - 1;
        let mut missing = 0u64;
        for i in 0..n {
            let mine = &self.imp[self.entries(i)];
            for q in other.entries(i) {
                let have = match mine.binary_search(&other.imp[q]) {
                    Ok(p) => self.mask[self.start[i] + p],
                    Err(_) => 0,
                };
                missing += u64::from((other.mask[q] & !have).count_ones());
            }
        }
        missing
    }

    /// Every triplet of `self` or `other`.
    fn union(&self, other: &WorkingSet) -> WorkingSet {
        let n = self.start.len() - 1;
        let mut out = WorkingSet {
            start: Vec::with_capacity(n + 1),
            imp: Vec::with_capacity(self.imp.len().max(other.imp.len())),
            mask: Vec::with_capacity(self.imp.len().max(other.imp.len())),
        };
        out.start.push(0);
        for i in 0..n {
            let (mut p, pe) = (self.start[i], self.start[i + 1]);
            let (mut q, qe) = (other.start[i], other.start[i + 1]);
            while p < pe || q < qe {
                let (a, b) = (
                    self.imp.get(p).filter(|_| p < pe),
                    other.imp.get(q).filter(|_| q < qe),
                );
                let (imp, mask) = match (a, b) {
                    (Some(&a), Some(&b)) if a == b => {
                        p += 1;
                        q += 1;
                        (a, self.mask[p - 1] | other.mask[q - 1])
                    }
                    (Some(&a), Some(&b)) if a < b => {
                        p += 1;
                        (a, self.mask[p - 1])
                    }
                    (Some(&a), None) => {
                        p += 1;
                        (a, self.mask[p - 1])
                    }
                    (_, Some(&b)) => {
                        q += 1;
                        (b, other.mask[q - 1])
                    }
                    (None, None) => unreachable!(),
                };
                out.imp.push(imp);
                out.mask.push(mask);
            }
            out.start.push(out.imp.len());
        }
        out
    }
}

/// Target neighbours with the offsets of their pull counters.
#[derive(Debug, Clone)]
struct Targets {
    of: Vec<Vec<usize>>,
    offset: Vec<usize>,
}

impl Targets {
    fn new(of: Vec<Vec<usize>>) -> Self {
        let mut offset = Vec::with_capacity(of.len() + 1);
        offset.push(0);
        for t in &of {
            offset.push(offset.last().unwrap() + t.len());
        }
        Self { of, offset }
    }

    fn pairs(&self) -> usize {
        *self.offset.last().unwrap()
    }
}

/// The objective at one metric and the activity behind it.
#[derive(Debug, Clone)]
struct Eval {
    f: f64,
    /// Active impostors of each target pair (indexed by `Targets::offset`).
    pull: Vec<u32>,
    /// Active targets of each working-set entry.
    push: Vec<u32>,
}

/// The data of one LMNN problem: centred coordinates `x` (`n × r`), labels, target neighbours.
struct Problem {
    x: Array2<f64>,
    labels: Vec<u32>,
    targets: Targets,
    omega: f64,
}

impl Problem {
    fn n(&self) -> usize {
        self.x.nrows()
    }

    /// Distances to the targets of `i` into `dt`; returns their sum.
    fn target_distances(&self, kern: &Kernel, i: usize, dt: &mut Vec<f64>) -> f64 {
        dt.clear();
        dt.extend(self.targets.of[i].iter().map(|&j| kern.dist(&self.x, i, j)));
        dt.iter().sum()
    }

    /// Every active triplet (all pairs scanned): the set of active triplets and the objective.
    fn scan(&self, kern: &Kernel) -> (WorkingSet, Eval) {
        let n = self.n();
        let mut ws = WorkingSet {
            start: Vec::with_capacity(n + 1),
            ..Default::default()
        };
        ws.start.push(0);
        let mut pull = vec![0u32; self.targets.pairs()];
        let mut push = Vec::new();
        let (mut pull_sum, mut hinge_sum) = (0.0, 0.0);
        let mut dt = Vec::new();
        for i in 0..n {
            pull_sum += self.target_distances(kern, i, &mut dt);
            if !dt.is_empty() {
                // No hinge is active beyond this distance.
                let reach = 1.0 + dt.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                let off = self.targets.offset[i];
                let yi = self.labels[i];
                for l in 0..n {
                    if self.labels[l] == yi {
                        continue;
                    }
                    let dil = kern.dist(&self.x, i, l);
                    if dil >= reach {
                        continue;
                    }
                    let (mut mask, mut cnt) = (0u64, 0u32);
                    for (t, &dij) in dt.iter().enumerate() {
                        let h = 1.0 + dij - dil;
                        if h > 0.0 {
                            mask |= 1 << t;
                            cnt += 1;
                            hinge_sum += h;
                            pull[off + t] += 1;
                        }
                    }
                    if mask != 0 {
                        ws.imp.push(l as u32);
                        ws.mask.push(mask);
                        push.push(cnt);
                    }
                }
            }
            ws.start.push(ws.imp.len());
        }
        let f = self.omega * pull_sum + (1.0 - self.omega) * hinge_sum;
        (ws, Eval { f, pull, push })
    }

    /// The objective restricted to the triplets of `ws`.
    fn evaluate(&self, kern: &Kernel, ws: &WorkingSet) -> Eval {
        let mut pull = vec![0u32; self.targets.pairs()];
        let mut push = vec![0u32; ws.imp.len()];
        let (mut pull_sum, mut hinge_sum) = (0.0, 0.0);
        let mut dt = Vec::new();
        for i in 0..self.n() {
            pull_sum += self.target_distances(kern, i, &mut dt);
            let off = self.targets.offset[i];
            for e in ws.entries(i) {
                let dil = kern.dist(&self.x, i, ws.imp[e] as usize);
                let mut bits = ws.mask[e];
                let mut cnt = 0u32;
                while bits != 0 {
                    let t = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let h = 1.0 + dt[t] - dil;
                    if h > 0.0 {
                        cnt += 1;
                        hinge_sum += h;
                        pull[off + t] += 1;
                    }
                }
                push[e] = cnt;
            }
        }
        let f = self.omega * pull_sum + (1.0 - self.omega) * hinge_sum;
        Eval { f, pull, push }
    }

    /// Weight of a target pair with `active` active impostors.
    fn pull_weight(&self, active: u32) -> f64 {
        self.omega + (1.0 - self.omega) * f64::from(active)
    }

    /// Weight of an impostor pair with `active` active targets.
    fn push_weight(&self, active: u32) -> f64 {
        -(1.0 - self.omega) * f64::from(active)
    }

    /// `G = Σ_pairs w_ab C_ab = X^T L X` with `L` the Laplacian of the pair weights.
    fn gradient(&self, ws: &WorkingSet, ev: &Eval) -> Array2<f64> {
        let n = self.n();
        let mut lap = Array2::<f64>::zeros((n, n));
        let mut pairs = 0usize;
        let mut add = |a: usize, b: usize, w: f64| {
            lap[[a, a]] += w;
            lap[[b, b]] += w;
            lap[[a, b]] -= w;
            lap[[b, a]] -= w;
            pairs += 1;
        };
        for i in 0..n {
            let off = self.targets.offset[i];
            for (t, &j) in self.targets.of[i].iter().enumerate() {
                let w = self.pull_weight(ev.pull[off + t]);
                if w != 0.0 {
                    add(i, j, w);
                }
            }
            for e in ws.entries(i) {
                if ev.push[e] > 0 {
                    add(i, ws.imp[e] as usize, self.push_weight(ev.push[e]));
                }
            }
        }
        let r = self.x.ncols();
        let mut lx = Array2::<f64>::zeros((n, r));
        if 8 * (2 * pairs + n) > n * n {
            gemm(lx.view_mut(), false, lap.view(), self.x.view());
        } else {
            // Sparse Laplacian: one axpy per non-zero.
            for (lrow, mut out) in lap.outer_iter().zip(lx.outer_iter_mut()) {
                let out = out.as_slice_mut().unwrap();
                for (c, &w) in lrow.iter().enumerate() {
                    if w != 0.0 {
                        for (o, &v) in out.iter_mut().zip(self.x.row(c).as_slice().unwrap()) {
                            *o += w * v;
                        }
                    }
                }
            }
        }
        let mut g = Array2::<f64>::zeros((r, r));
        gemm_sym(g.view_mut(), false, self.x.t(), lx.view());
        g
    }

    /// `g += Σ Δw_ab C_ab` over the `p` pairs whose weights differ between `old` and `new`
    /// (same working set), as `X_S^T (ΔL X)_S` over the `m ≤ min(n, 2p)` points `S` those pairs
    /// touch (`ΔL`: the Laplacian of the weight changes): `O(p r + m r²)`, never more than the
    /// full product.
    fn update_gradient(&self, g: &mut Array2<f64>, ws: &WorkingSet, old: &Eval, new: &Eval) {
        let (n, r) = (self.n(), self.x.ncols());
        let mut changed: Vec<(usize, usize, f64)> = Vec::new();
        for i in 0..n {
            let off = self.targets.offset[i];
            for (t, &j) in self.targets.of[i].iter().enumerate() {
                let (a, b) = (old.pull[off + t], new.pull[off + t]);
                if a != b {
                    changed.push((i, j, self.pull_weight(b) - self.pull_weight(a)));
                }
            }
            for e in ws.entries(i) {
                let (a, b) = (old.push[e], new.push[e]);
                if a != b {
                    changed.push((
                        i,
                        ws.imp[e] as usize,
                        self.push_weight(b) - self.push_weight(a),
                    ));
                }
            }
        }
        if changed.is_empty() {
            return;
        }
        let mut local = vec![usize::MAX; n];
        let mut points = Vec::new();
        for &(a, b, _) in &changed {
            for v in [a, b] {
                if local[v] == usize::MAX {
                    local[v] = points.len();
                    points.push(v);
                }
            }
        }
        let m = points.len();
        let x = self.x.as_slice().expect("row-major coordinates");
        let mut xs = Array2::<f64>::zeros((m, r));
        for (q, &v) in points.iter().enumerate() {
            xs.row_mut(q)
                .as_slice_mut()
                .unwrap()
                .copy_from_slice(&x[v * r..(v + 1) * r]);
        }
        // (ΔL X)_S: each changed pair adds Δw (x_a - x_b) to row a and subtracts it from row b.
        let mut ly = Array2::<f64>::zeros((m, r));
        let lys = ly.as_slice_mut().unwrap();
        for &(a, b, w) in &changed {
            let (la, lb) = (local[a] * r, local[b] * r);
            let (xa, xb) = (&x[a * r..(a + 1) * r], &x[b * r..(b + 1) * r]);
            for c in 0..r {
                let v = w * (xa[c] - xb[c]);
                lys[la + c] += v;
                lys[lb + c] -= v;
            }
        }
        gemm_sym(g.view_mut(), true, xs.t(), ly.view());
    }
}

/// The `k` nearest points of the same class of every row of `x` (Euclidean distance; ties
/// broken by the lower index), nearest first. A class with fewer than `k + 1` members gives
/// each point all other members.
pub fn target_neighbours(x: ArrayView2<'_, f64>, labels: &[u32], k: usize) -> Vec<Vec<usize>> {
    let n = x.nrows();
    assert_eq!(labels.len(), n, "one label per row");
    let x = x.as_standard_layout().into_owned();
    let mut gram = Array2::<f64>::zeros((n, n));
    gemm_sym(gram.view_mut(), false, x.view(), x.t());
    let mut members: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, &y) in labels.iter().enumerate() {
        members.entry(y).or_default().push(i);
    }
    (0..n)
        .map(|i| {
            let mut cand: Vec<(f64, usize)> = members[&labels[i]]
                .iter()
                .filter(|&&j| j != i)
                .map(|&j| (gram[[i, i]] + gram[[j, j]] - 2.0 * gram[[i, j]], j))
                .collect();
            cand.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            cand.into_iter().take(k).map(|(_, j)| j).collect()
        })
        .collect()
}

/// The LMNN objective and its subgradient at a symmetric `m` (`r × r`) for the rows of `x`
/// (`n × r`) with the given labels and target neighbours (module docs; a triplet whose hinge
/// is exactly zero counts as inactive). `m` need not be PSD.
pub fn objective_and_gradient(
    x: ArrayView2<'_, f64>,
    labels: &[u32],
    targets: &[Vec<usize>],
    m: ArrayView2<'_, f64>,
    omega: f64,
) -> (f64, Array2<f64>) {
    assert_eq!(x.ncols(), m.nrows(), "x and m disagree in dimension");
    assert_eq!(labels.len(), x.nrows(), "one label per row");
    assert_eq!(targets.len(), x.nrows(), "one target list per row");
    let p = Problem {
        x: x.as_standard_layout().into_owned(),
        labels: labels.to_vec(),
        targets: Targets::new(targets.to_vec()),
        omega,
    };
    let kern = Kernel::new(&p.x, &m.as_standard_layout().into_owned(), true);
    let (ws, ev) = p.scan(&kern);
    (ev.f, p.gradient(&ws, &ev))
}

// ---------------------------------------------------------------------------------------
// The solver.

/// What one [`LmnnSolver::step`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// The objective after the step (the working-set objective for the active-set variant).
    pub objective: f64,
    /// Trial points evaluated by the backtracking search.
    pub trials: u32,
    /// Whether a trial lowered the objective (otherwise `M` is unchanged).
    pub accepted: bool,
    /// Whether the working set was refreshed after the step (active-set variant).
    pub refreshed: bool,
    /// Whether that refresh found the full objective above the one at the previous refresh
    /// and restored the previous refresh's metric (active-set variant; module docs).
    pub reverted: bool,
    /// Whether the run has converged (further steps do nothing).
    pub converged: bool,
}

/// LMNN's iteration state, one [`step`](Self::step) per gradient iteration. [`LmnnConfig`]'s
/// [`Ranker::fit`] drives it (and stops it at `max_iter`); tests and benchmarks drive it
/// directly. Cloning is cheap in the data (shared) and copies the `r × r` state.
#[derive(Clone)]
pub struct LmnnSolver {
    cfg: LmnnConfig,
    problem: std::sync::Arc<Problem>,
    /// `d × r` orthonormal PCA basis (`None`: the raw coordinates, `r = d`).
    basis: Option<std::sync::Arc<Array2<f64>>>,
    dim: usize,
    /// The metric in the solver's coordinates (`r × r`, symmetric PSD).
    a: Array2<f64>,
    grad: Array2<f64>,
    /// Active triplets at `a` (naive) or the working set (active-set variant).
    ws: WorkingSet,
    eval: Eval,
    alpha: f64,
    iter: u64,
    since_refresh: u64,
    /// Active set: the metric, full objective and step size at the last refresh (module docs).
    anchor: Option<Anchor>,
    converged: bool,
}

/// The state an active-set period started from, restored if the period raised the full
/// objective.
#[derive(Clone)]
struct Anchor {
    a: Array2<f64>,
    f: f64,
    alpha: f64,
}

impl LmnnSolver {
    /// Prepare the problem (dense rows, PCA rotation, target neighbours) and evaluate the
    /// objective and gradient at `M = I`.
    pub fn new(cfg: &LmnnConfig, train: &LabeledSet) -> Result<Self, AlgoError> {
        cfg.check()?;
        let (n, d) = (train.n(), train.dim());
        let invalid = |m: &str| AlgoError::Data(CoreError::Invalid(format!("LMNN: {m}")));
        let mut distinct = train.labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() < 2 {
            return Err(invalid("needs training points of at least two classes"));
        }
        let mut x = Array2::<f64>::zeros((n, d));
        for (i, row) in train.x.outer_iterator().enumerate() {
            for (c, &v) in row.iter() {
                x[[i, c]] = v;
            }
        }
        if !x.iter().all(|v| v.is_finite()) {
            return Err(invalid("features must be finite"));
        }
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        x -= &mean;
        let targets = target_neighbours(x.view(), &train.labels, cfg.k);
        if targets.iter().all(Vec::is_empty) {
            return Err(invalid("needs a class with at least two training points"));
        }
        let (x, basis) = if cfg.pca {
            let (u, s, v) = thin_svd(x.view()).map_err(|e| AlgoError::Numerical(e.to_string()))?;
            let tol = s.first().copied().unwrap_or(0.0) * (n.max(d) as f64) * f64::EPSILON;
            let r = s.iter().take_while(|&&v| v > tol).count();
            if r == 0 {
                return Err(invalid("all training points coincide"));
            }
            // PCA scores U_r S_r (= X_c V_r).
            let mut scores = u.slice(ndarray::s![.., ..r]).to_owned();
            for (mut col, &sv) in scores.axis_iter_mut(Axis(1)).zip(s.iter()) {
                col.mapv_inplace(|v| v * sv);
            }
            let b = v.slice(ndarray::s![.., ..r]).to_owned();
            (scores, Some(std::sync::Arc::new(b)))
        } else {
            (x, None)
        };
        let r = x.ncols();
        let problem = Problem {
            // Row-major: the kernels read rows as slices.
            x: x.as_standard_layout().into_owned(),
            labels: train.labels.clone(),
            targets: Targets::new(targets),
            omega: cfg.omega,
        };
        let a = Array2::<f64>::eye(r);
        let kern = Kernel::new(&problem.x, &a, true);
        let (ws, eval) = problem.scan(&kern);
        let grad = problem.gradient(&ws, &eval);
        let gnorm = frobenius(&grad);
        let alpha = if gnorm > 0.0 {
            cfg.step_size / gnorm
        } else {
            0.0
        };
        let anchor = cfg.active_set.then(|| Anchor {
            a: a.clone(),
            f: eval.f,
            alpha,
        });
        let mut solver = Self {
            cfg: cfg.clone(),
            problem: std::sync::Arc::new(problem),
            basis,
            dim: d,
            a,
            grad,
            ws,
            eval,
            alpha,
            iter: 0,
            since_refresh: 0,
            anchor,
            converged: false,
        };
        // A zero gradient at M = I with a zero objective: nothing to learn.
        if gnorm == 0.0 {
            solver.converged = true;
        }
        Ok(solver)
    }

    /// One gradient iteration: backtracking search along the projected-gradient path, the
    /// gradient at the new point, the convergence test, and (active set) the refresh.
    pub fn step(&mut self) -> Result<StepReport, AlgoError> {
        if self.converged {
            return Ok(StepReport {
                objective: self.eval.f,
                trials: 0,
                accepted: false,
                refreshed: false,
                reverted: false,
                converged: true,
            });
        }
        let p = std::sync::Arc::clone(&self.problem);
        let n = p.n();
        let gnorm = frobenius(&self.grad);
        let anorm = frobenius(&self.a);
        let alpha0 = self.alpha;
        let mut trials = 0u32;
        let mut accepted = None;
        loop {
            trials += 1;
            let mut trial = self.a.clone();
            trial.scaled_add(-self.alpha, &self.grad);
            let trial =
                project_psd(trial.view()).map_err(|e| AlgoError::Numerical(e.to_string()))?;
            let (kern, ws, ev) = if self.cfg.active_set {
                // Evaluate only the working set, pair by pair (memory-bound: ~1 µs per pair at
                // r = 1000), or through the all-pairs kernel (one GEMM, ~25× faster per pair)
                // once the set holds more than 1/50 of all pairs.
                let dense = 50 * self.ws.imp.len() > n * n;
                let kern = Kernel::new(&p.x, &trial, dense);
                let ev = p.evaluate(&kern, &self.ws);
                (kern, None, ev)
            } else {
                let kern = Kernel::new(&p.x, &trial, true);
                let (ws, ev) = p.scan(&kern);
                (kern, Some(ws), ev)
            };
            if !ev.f.is_finite() {
                return Err(AlgoError::Numerical(format!(
                    "LMNN objective became {} at iteration {}",
                    ev.f,
                    self.iter + 1
                )));
            }
            if ev.f < self.eval.f {
                accepted = Some((trial, kern, ws, ev));
                break;
            }
            self.alpha *= self.cfg.step_shrink;
            if trials >= MAX_TRIALS || self.alpha * gnorm <= 1e-12 * (1.0 + anorm) {
                break;
            }
        }
        self.iter += 1;
        self.since_refresh += 1;
        let moved = accepted.is_some();
        let mut kernel = None;
        let converging = match accepted {
            Some((trial, kern, ws, ev)) => {
                let converging = (self.eval.f - ev.f) / self.eval.f < self.cfg.tolerance;
                let refresh_next = self.cfg.active_set
                    && (converging || self.since_refresh >= self.cfg.refresh_every);
                self.a = trial;
                match ws {
                    // Naive: the gradient from the new active set.
                    Some(ws) => {
                        self.grad = p.gradient(&ws, &ev);
                        self.ws = ws;
                    }
                    // Active set about to be refreshed: the refresh recomputes the gradient.
                    None if refresh_next => {}
                    // Active set: incremental update of the gradient.
                    None => p.update_gradient(&mut self.grad, &self.ws, &self.eval, &ev),
                }
                self.eval = ev;
                self.alpha *= self.cfg.step_grow;
                kernel = Some(kern);
                converging
            }
            None => {
                // Exhausted search: restore the step size (a refresh may open new descent).
                self.alpha = alpha0;
                true
            }
        };
        let (mut refreshed, mut reverted) = (false, false);
        if self.cfg.active_set {
            if converging || self.since_refresh >= self.cfg.refresh_every {
                let missing;
                (missing, reverted) = self.refresh(kernel);
                refreshed = true;
                self.converged = converging && missing == 0 && !reverted;
            }
        } else {
            self.converged = converging;
        }
        Ok(StepReport {
            objective: self.eval.f,
            trials,
            accepted: moved,
            refreshed,
            reverted,
            converged: self.converged,
        })
    }

    /// Refresh the working set at the end of a period (all pairs scanned), with the objective
    /// and gradient recomputed from scratch. If the full objective is lower than at the
    /// previous refresh (or equal), the working set becomes the triplets active now and this
    /// point the new anchor. Otherwise the period is undone: back to the anchor's metric, with
    /// the anchor's step size times `step_shrink` and the union of the working set and the
    /// triplets active now (such a period must have activated a triplet outside the set, so the
    /// union grows). Returns the number of active triplets the old working set lacked and
    /// whether the period was undone. `kernel`: the all-pairs kernel of the current metric,
    /// when the step already computed it.
    fn refresh(&mut self, kernel: Option<Kernel>) -> (u64, bool) {
        let p = std::sync::Arc::clone(&self.problem);
        let kern = match kernel {
            Some(k @ Kernel::Dense(_)) => k,
            _ => Kernel::new(&p.x, &self.a, true),
        };
        let (active, eval) = p.scan(&kern);
        let missing = self.ws.missing(&active);
        self.since_refresh = 0;
        let anchor = self.anchor.as_mut().expect("active-set variant");
        if eval.f > anchor.f {
            let ws = self.ws.union(&active);
            let eval = p.evaluate(&Kernel::new(&p.x, &anchor.a, true), &ws);
            anchor.alpha *= self.cfg.step_shrink;
            self.a = anchor.a.clone();
            self.alpha = anchor.alpha;
            self.grad = p.gradient(&ws, &eval);
            self.ws = ws;
            self.eval = eval;
            return (missing, true);
        }
        *anchor = Anchor {
            a: self.a.clone(),
            f: eval.f,
            alpha: self.alpha,
        };
        self.grad = p.gradient(&active, &eval);
        self.ws = active;
        self.eval = eval;
        (missing, false)
    }

    /// Current objective: the full objective (naive) or the working-set objective (active
    /// set; equal to the full one right after a refresh).
    pub fn objective(&self) -> f64 {
        self.eval.f
    }

    /// Gradient iterations taken.
    pub fn iterations(&self) -> u64 {
        self.iter
    }

    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Current step size `α`.
    pub fn step_size(&self) -> f64 {
        self.alpha
    }

    /// Triplets in the working set (active set) or currently active (naive).
    pub fn working_set_triplets(&self) -> u64 {
        self.ws.triplets()
    }

    /// The centred training rows in the solver's coordinates (`n × r`: PCA scores or raw).
    pub fn coordinates(&self) -> ArrayView2<'_, f64> {
        self.problem.x.view()
    }

    pub fn labels(&self) -> &[u32] {
        &self.problem.labels
    }

    /// The target neighbours of every training point.
    pub fn targets(&self) -> &[Vec<usize>] {
        &self.problem.targets.of
    }

    /// The metric in the solver's coordinates (`r × r`).
    pub fn metric(&self) -> ArrayView2<'_, f64> {
        self.a.view()
    }

    /// The learned model in feature space: `M = B A B^T + (I - B B^T)` (PCA) or `A`.
    pub fn model(&self) -> Mahalanobis {
        match &self.basis {
            None => Mahalanobis::new(self.a.clone()),
            Some(b) => {
                let r = self.a.nrows();
                let mut a_minus_i = self.a.clone();
                for c in 0..r {
                    a_minus_i[[c, c]] -= 1.0;
                }
                let mut t = Array2::<f64>::zeros((self.dim, r));
                gemm(t.view_mut(), false, b.view(), a_minus_i.view());
                let mut m = Array2::<f64>::zeros((self.dim, self.dim));
                gemm_sym(m.view_mut(), false, t.view(), b.t());
                for c in 0..self.dim {
                    m[[c, c]] += 1.0;
                }
                Mahalanobis::new(m)
            }
        }
    }
}

impl Ranker for LmnnConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        // Setting up the solver (PCA basis, target neighbours) is part of training: on the
        // clock.
        drive(schedule, obs, || {
            Ok(LmnnRun {
                solver: LmnnSolver::new(self, train)?,
                max_iter: self.max_iter,
            })
        })?;
        Ok(())
    }

    /// Iterative: the schedule's steps count gradient iterations.
    fn is_iterative(&self) -> bool {
        true
    }

    /// The metric (`d x d`) and an `n x n` array over the training rows (the Gram matrix of
    /// the target-neighbour search, then the Laplacian of the gradient's pair weights).
    fn memory(&self, rows: usize, dim: usize) -> Option<u64> {
        Some(
            dyad_kernels::dense_bytes(dim, dim)
                .saturating_add(dyad_kernels::dense_bytes(rows, rows)),
        )
    }
}

/// LMNN's run: gradient iterations until convergence or `max_iter`.
struct LmnnRun {
    solver: LmnnSolver,
    max_iter: u64,
}

impl Stepper for LmnnRun {
    type Model = dyn Scorer;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        self.solver.step()?;
        Ok(
            if self.solver.converged() || self.solver.iterations() >= self.max_iter {
                Flow::Finished
            } else {
                Flow::Continue
            },
        )
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        // Forming the d × d model is part of the method: on the clock.
        Ok(show(&self.solver.model()))
    }

    fn finished_at_start(&self) -> bool {
        self.solver.converged()
    }
}

/// The `lmnn` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "lmnn",
    label: "LMNN",
    description: "Large-margin nearest neighbour metric (Weinberger & Saul), projected subgradient; `active_set = true` is fast-LMNN",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<LmnnConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::euclidean::Euclidean;
    use dyad_core::metrics::evaluate_retrieval;
    use dyad_core::observe::NullObserver;
    use dyad_core::{Checkpoint, Scorer, seeded};
    use dyad_kernels::linalg::{sym_eigen, symmetrize};
    use rand::Rng as _;
    use serde::de::value::{Error as ValueError, MapDeserializer};

    /// `n` rows in `[-1, 1]^d`, labels `i % classes`, with a class offset along the first axes
    /// so that the classes overlap partly.
    fn random_rows(n: usize, d: usize, classes: usize, seed: u64) -> (Array2<f64>, Vec<u32>) {
        let mut rng = seeded(seed);
        let labels: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
        let x = Array2::from_shape_fn((n, d), |(i, c)| {
            let shift = if c == labels[i] as usize % d {
                0.8
            } else {
                0.0
            };
            rng.random_range(-1.0..1.0) + shift
        });
        (x, labels)
    }

    fn to_set(x: &Array2<f64>, labels: &[u32], classes: usize) -> LabeledSet {
        let rows: Vec<Vec<f64>> = x.outer_iter().map(|r| r.to_vec()).collect();
        LabeledSet::from_dense_rows(&rows, labels.to_vec(), classes)
    }

    fn random_psd(d: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        let b = Array2::from_shape_fn((d, d), |_| rng.random_range(-1.0..1.0));
        let mut m = b.t().dot(&b) / d as f64;
        for c in 0..d {
            m[[c, c]] += 0.3;
        }
        m
    }

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    fn min_eigenvalue(a: ArrayView2<'_, f64>) -> f64 {
        sym_eigen(a).unwrap().0[0]
    }

    /// Objective, gradient and the numbers of active/inactive triplets, by direct summation
    /// over triplets with explicit outer products.
    fn reference(
        x: &Array2<f64>,
        labels: &[u32],
        targets: &[Vec<usize>],
        m: &Array2<f64>,
        omega: f64,
    ) -> (f64, Array2<f64>, usize, usize) {
        let d = x.ncols();
        let diff = |a: usize, b: usize| &x.row(a) - &x.row(b);
        let dist = |a: usize, b: usize| {
            let z = diff(a, b);
            z.dot(&m.dot(&z))
        };
        let outer = |a: usize, b: usize| {
            let z = diff(a, b);
            let col = z.view().insert_axis(Axis(1));
            col.dot(&col.t())
        };
        let (mut f, mut g) = (0.0, Array2::<f64>::zeros((d, d)));
        let (mut active, mut inactive) = (0, 0);
        for i in 0..x.nrows() {
            for &j in &targets[i] {
                let dij = dist(i, j);
                f += omega * dij;
                g.scaled_add(omega, &outer(i, j));
                for l in 0..x.nrows() {
                    if labels[l] == labels[i] {
                        continue;
                    }
                    let h = 1.0 + dij - dist(i, l);
                    if h > 0.0 {
                        active += 1;
                        f += (1.0 - omega) * h;
                        g.scaled_add(1.0 - omega, &(&outer(i, j) - &outer(i, l)));
                    } else {
                        inactive += 1;
                    }
                }
            }
        }
        (f, g, active, inactive)
    }

    #[test]
    fn objective_and_gradient_match_direct_summation() {
        for (seed, omega) in [(1u64, 0.5), (2, 0.125), (3, 0.0)] {
            let (x, labels) = random_rows(14, 5, 3, seed);
            let targets = target_neighbours(x.view(), &labels, 3);
            let m = random_psd(5, seed + 10);
            let (f, g) = objective_and_gradient(x.view(), &labels, &targets, m.view(), omega);
            let (fr, gr, active, inactive) = reference(&x, &labels, &targets, &m, omega);
            assert!(
                active > 20 && inactive > 20,
                "{active} active / {inactive} inactive"
            );
            assert!((f - fr).abs() <= 1e-12 * fr.abs(), "{f} vs {fr}");
            assert!(
                max_abs(&(&g - &gr)) <= 1e-12 * max_abs(&gr),
                "gradient differs by {}",
                max_abs(&(&g - &gr))
            );
            assert_eq!(max_abs(&(&g - &g.t())), 0.0, "gradient not symmetric");
        }
    }

    #[test]
    fn gradient_with_few_active_pairs_matches_direct_summation() {
        // Two well-separated classes and k = 1: few pairs carry weight, so the gradient takes
        // the sparse-Laplacian path (one axpy per non-zero) instead of the dense product.
        let n = 80;
        let mut rng = seeded(21);
        let labels: Vec<u32> = (0..n).map(|i| (i % 2) as u32).collect();
        let x = Array2::from_shape_fn((n, 3), |(i, c)| {
            let shift = if c == 0 { 2.5 * labels[i] as f64 } else { 0.0 };
            rng.random_range(-1.0..1.0) + shift
        });
        let targets = target_neighbours(x.view(), &labels, 1);
        let m = Array2::<f64>::eye(3);
        for omega in [0.5, 0.0] {
            let (f, g) = objective_and_gradient(x.view(), &labels, &targets, m.view(), omega);
            let (fr, gr, active, _) = reference(&x, &labels, &targets, &m, omega);
            // Weighted pairs: at most n·k target pairs plus one impostor pair per active
            // triplet; below this bound `gradient` takes the sparse path.
            let pairs = n + active;
            assert!(
                active > 5 && 8 * (2 * pairs + n) <= n * n,
                "{active} active triplets: not the sparse path"
            );
            assert!((f - fr).abs() <= 1e-12 * fr.abs(), "{f} vs {fr}");
            assert!(
                max_abs(&(&g - &gr)) <= 1e-12 * max_abs(&gr),
                "gradient differs by {}",
                max_abs(&(&g - &gr))
            );
            assert_eq!(max_abs(&(&g - &g.t())), 0.0, "gradient not symmetric");
        }
    }

    /// The triplets `(i, j, l)` of a working set.
    fn triplet_set(ws: &WorkingSet, targets: &Targets) -> std::collections::BTreeSet<[usize; 3]> {
        let mut out = std::collections::BTreeSet::new();
        for i in 0..ws.start.len() - 1 {
            for e in ws.entries(i) {
                for (t, &j) in targets.of[i].iter().enumerate() {
                    if ws.mask[e] >> t & 1 == 1 {
                        out.insert([i, j, ws.imp[e] as usize]);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn working_set_counts_the_triplets_it_lacks() {
        let (x, labels) = random_rows(30, 4, 3, 22);
        let p = Problem {
            x: x.clone(),
            labels: labels.clone(),
            targets: Targets::new(target_neighbours(x.view(), &labels, 3)),
            omega: 0.5,
        };
        let sets: Vec<WorkingSet> = [random_psd(4, 23), 0.5 * &random_psd(4, 24)]
            .iter()
            .map(|m| p.scan(&Kernel::new(&x, m, true)).0)
            .collect();
        let (a, b) = (&sets[0], &sets[1]);
        let (ta, tb) = (triplet_set(a, &p.targets), triplet_set(b, &p.targets));
        assert_eq!(a.triplets(), ta.len() as u64);
        assert_eq!(a.missing(b), tb.difference(&ta).count() as u64);
        assert_eq!(b.missing(a), ta.difference(&tb).count() as u64);
        assert!(a.missing(b) > 0 && b.missing(a) > 0, "sets too alike");
        assert_eq!(a.missing(a), 0);
        let u = a.union(b);
        assert_eq!(
            triplet_set(&u, &p.targets),
            ta.union(&tb).copied().collect()
        );
        // Rows stay sorted by impostor, one entry per impostor.
        for i in 0..30 {
            assert!(u.imp[u.entries(i)].windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(u.missing(a) + u.missing(b), 0);
    }

    #[test]
    fn active_set_converges_only_when_the_refresh_finds_nothing_new() {
        let (x, labels) = random_rows(30, 4, 3, 25);
        // Tolerance 1: every accepted step passes the convergence test and triggers a refresh;
        // the run may end only if the working set already held every active triplet. (Without
        // the anchor, such runs climb far above the starting objective and never converge.)
        let cfg = LmnnConfig {
            active_set: true,
            tolerance: 1.0,
            refresh_every: 1000,
            ..Default::default()
        };
        let mut s = solver(&x, &labels, 3, &cfg);
        let (mut with_missing, mut reverts) = (0, 0);
        let mut at_refresh = s.objective();
        for _ in 0..300 {
            let before = s.clone();
            let rep = s.step().unwrap();
            assert!(rep.refreshed);
            let p = &s.problem;
            let (now, full) = p.scan(&Kernel::new(&p.x, &s.a, true));
            // The full objective at refresh points never rises.
            assert!((rep.objective - full.f).abs() <= 1e-9 * full.f);
            assert!(
                rep.objective <= at_refresh,
                "{at_refresh} -> {}",
                rep.objective
            );
            at_refresh = rep.objective;
            let missing = before.ws.missing(&now);
            if rep.reverted {
                // Back to the previous refresh point, with a smaller step and a working set
                // that grew by the triplets that spoiled the period.
                reverts += 1;
                assert_eq!(s.a, before.anchor.as_ref().unwrap().a);
                assert!(s.alpha < before.anchor.as_ref().unwrap().alpha);
                assert!(s.ws.triplets() > before.ws.triplets());
                assert!(!rep.converged);
            } else {
                assert_eq!(rep.converged, missing == 0, "{missing} new active triplets");
                // The working set is exactly the active set.
                assert_eq!(
                    triplet_set(&s.ws, &p.targets),
                    triplet_set(&now, &p.targets)
                );
                if missing > 0 {
                    with_missing += 1;
                }
            }
            // Either way it holds every active triplet.
            assert_eq!(s.ws.missing(&now), 0);
            if rep.converged {
                break;
            }
        }
        assert!(s.converged(), "no convergence in 300 iterations");
        assert!(with_missing > 0, "no refresh ever found a new triplet");
        assert!(reverts > 0, "no period was ever undone");
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (x, labels) = random_rows(16, 4, 2, 5);
        let targets = target_neighbours(x.view(), &labels, 2);
        let m = random_psd(4, 6);
        let omega = 0.25;
        let f = |m: &Array2<f64>| {
            objective_and_gradient(x.view(), &labels, &targets, m.view(), omega).0
        };
        let (_, g) = objective_and_gradient(x.view(), &labels, &targets, m.view(), omega);
        let mut rng = seeded(7);
        let h = 1e-6;
        // Random symmetric directions and the coordinate directions E_ab + E_ba.
        let mut dirs: Vec<Array2<f64>> = (0..5)
            .map(|_| {
                symmetrize(Array2::from_shape_fn((4, 4), |_| rng.random_range(-1.0..1.0)).view())
            })
            .collect();
        for a in 0..4 {
            for b in 0..=a {
                let mut e = Array2::<f64>::zeros((4, 4));
                e[[a, b]] = 1.0;
                e[[b, a]] = 1.0;
                dirs.push(e);
            }
        }
        for e in &dirs {
            let fd = (f(&(&m + &(h * e))) - f(&(&m - &(h * e)))) / (2.0 * h);
            let an = (&g * e).sum();
            assert!(
                (fd - an).abs() <= 1e-6 * (1.0 + an.abs()),
                "finite difference {fd} vs gradient {an}"
            );
        }
    }

    #[test]
    fn target_neighbours_are_the_nearest_of_the_class() {
        let (x, mut labels) = random_rows(20, 3, 2, 8);
        // A class of three (fewer than k + 1 = 5 members) and a singleton.
        labels[0] = 2;
        labels[1] = 2;
        labels[2] = 2;
        labels[3] = 3;
        let t = target_neighbours(x.view(), &labels, 4);
        for i in 0..20 {
            let mut same: Vec<(f64, usize)> = (0..20)
                .filter(|&j| j != i && labels[j] == labels[i])
                .map(|j| ((&x.row(i) - &x.row(j)).mapv(|v| v * v).sum(), j))
                .collect();
            same.sort_by(|a, b| a.0.total_cmp(&b.0));
            let want: Vec<usize> = same.iter().take(4).map(|p| p.1).collect();
            assert_eq!(t[i], want, "point {i}");
        }
        assert_eq!(t[0].len(), 2);
        assert!(t[3].is_empty());
    }

    #[test]
    fn target_neighbours_break_ties_by_the_lower_index() {
        // Point 0 at the origin; points 1..=4 all at distance 1, point 5 at distance 0.5.
        let x = ndarray::array![
            [0.0, 0.0],
            [0.0, 1.0],
            [1.0, 0.0],
            [0.0, -1.0],
            [-1.0, 0.0],
            [0.0, 0.5],
            [5.0, 5.0]
        ];
        let labels = [0, 0, 0, 0, 0, 0, 1];
        let t = target_neighbours(x.view(), &labels, 3);
        assert_eq!(t[0], vec![5, 1, 2]);
        // Point 2: squared distances 1 (point 0), 1.25 (5), then 2 for both 1 and 3.
        assert_eq!(t[2], vec![0, 5, 1]);
        assert!(t[6].is_empty());
    }

    #[test]
    fn lazy_and_dense_kernels_give_the_same_distances_and_objective() {
        let (x, labels) = random_rows(25, 7, 3, 15);
        let m = random_psd(7, 16);
        let p = Problem {
            x: x.clone(),
            labels: labels.clone(),
            targets: Targets::new(target_neighbours(x.view(), &labels, 3)),
            omega: 0.25,
        };
        let (dense, lazy) = (Kernel::new(&x, &m, true), Kernel::new(&x, &m, false));
        for a in 0..25 {
            for b in 0..25 {
                let z = &x.row(a) - &x.row(b);
                let want = z.dot(&m.dot(&z));
                for k in [&dense, &lazy] {
                    assert!((k.dist(&x, a, b) - want).abs() <= 1e-12 * (1.0 + want));
                }
            }
        }
        let (ws, ev) = p.scan(&dense);
        assert!(ws.triplets() > 0);
        let (ed, el) = (p.evaluate(&dense, &ws), p.evaluate(&lazy, &ws));
        assert_eq!((&ed.pull, &ed.push), (&ev.pull, &ev.push));
        assert_eq!((&el.pull, &el.push), (&ev.pull, &ev.push));
        assert!((el.f - ev.f).abs() <= 1e-12 * ev.f && ed.f == ev.f);
    }

    fn solver(x: &Array2<f64>, labels: &[u32], classes: usize, cfg: &LmnnConfig) -> LmnnSolver {
        LmnnSolver::new(cfg, &to_set(x, labels, classes)).unwrap()
    }

    fn true_objective(s: &LmnnSolver, omega: f64) -> f64 {
        objective_and_gradient(s.coordinates(), s.labels(), s.targets(), s.metric(), omega).0
    }

    #[test]
    fn iterates_stay_psd_and_the_objective_never_increases() {
        let (x, labels) = random_rows(30, 8, 3, 9);
        for pca in [true, false] {
            let cfg = LmnnConfig {
                pca,
                // A large first step so that the backtracking search is exercised.
                step_size: 200.0,
                ..Default::default()
            };
            let mut s = solver(&x, &labels, 3, &cfg);
            let mut prev = s.objective();
            let mut retried = 0;
            for _ in 0..60 {
                let rep = s.step().unwrap();
                if rep.trials > 1 {
                    retried += 1;
                }
                let a = s.metric().to_owned();
                assert_eq!(max_abs(&(&a - &a.t())), 0.0, "A not symmetric");
                let lo = min_eigenvalue(a.view());
                assert!(lo >= -1e-10, "smallest eigenvalue {lo}");
                assert!(
                    rep.objective <= prev,
                    "objective rose {prev} -> {}",
                    rep.objective
                );
                let f = true_objective(&s, cfg.omega);
                assert!(
                    (f - rep.objective).abs() <= 1e-9 * f,
                    "{f} vs {}",
                    rep.objective
                );
                prev = rep.objective;
                if rep.converged {
                    break;
                }
            }
            assert!(retried > 0, "no step was ever retried");
            let m = s.model();
            let m = m.matrix();
            assert_eq!(max_abs(&(m - &m.t())), 0.0);
            assert!(min_eigenvalue(m.view()) >= -1e-10);
        }
    }

    #[test]
    fn active_set_tracks_its_working_set_objective_and_gradient() {
        let (x, labels) = random_rows(40, 6, 3, 11);
        let cfg = LmnnConfig {
            active_set: true,
            refresh_every: 7,
            step_size: 50.0,
            ..Default::default()
        };
        let mut s = solver(&x, &labels, 3, &cfg);
        let (mut prev, mut refreshes, mut below) = (s.objective(), 0, 0);
        let mut at_refresh = s.objective();
        for it in 1..=80u64 {
            let rep = s.step().unwrap();
            let truth = true_objective(&s, cfg.omega);
            // The working-set objective is a lower bound, exact right after a refresh.
            assert!(rep.objective <= truth * (1.0 + 1e-12));
            if rep.refreshed {
                refreshes += 1;
                assert!((rep.objective - truth).abs() <= 1e-9 * truth);
                // The full objective at refresh points never rises.
                assert!(
                    rep.objective <= at_refresh,
                    "{at_refresh} -> {}",
                    rep.objective
                );
                at_refresh = rep.objective;
            } else {
                assert!(rep.objective <= prev, "working-set objective rose");
                if rep.objective < truth * (1.0 - 1e-9) {
                    below += 1;
                }
            }
            assert_eq!(rep.refreshed, it % 7 == 0 || rep.converged);
            // The incrementally updated gradient is the working-set gradient.
            let p = &s.problem;
            let ev = p.evaluate(&Kernel::new(&p.x, &s.a, true), &s.ws);
            let g = p.gradient(&s.ws, &ev);
            assert!(max_abs(&(&g - &s.grad)) <= 1e-9 * max_abs(&g));
            assert!(min_eigenvalue(s.metric()) >= -1e-10);
            prev = rep.objective;
            if rep.converged {
                break;
            }
        }
        assert!(refreshes >= 3, "{refreshes} refreshes");
        // Between refreshes some triplet outside the working set became active.
        assert!(below > 0, "the working set never missed a triplet");
    }

    fn run_to_convergence(s: &mut LmnnSolver, max: u64) {
        while !s.converged() && s.iterations() < max {
            s.step().unwrap();
        }
    }

    #[test]
    fn active_set_reaches_the_objective_of_the_full_variant() {
        let (x, labels) = random_rows(36, 5, 3, 12);
        let base = LmnnConfig {
            tolerance: 1e-10,
            step_size: 20.0,
            ..Default::default()
        };
        let mut full = solver(&x, &labels, 3, &base);
        let mut fast = solver(
            &x,
            &labels,
            3,
            &LmnnConfig {
                active_set: true,
                ..base.clone()
            },
        );
        let f0 = full.objective();
        run_to_convergence(&mut full, 5000);
        run_to_convergence(&mut fast, 5000);
        assert!(full.converged() && fast.converged());
        let (ff, fa) = (true_objective(&full, 0.5), true_objective(&fast, 0.5));
        assert!(ff < 0.9 * f0, "no progress: {f0} -> {ff}");
        assert!((ff - fa).abs() <= 1e-3 * ff, "full {ff} vs active set {fa}");
        // The active-set run ended on a refresh: its objective is the full one.
        assert!((fast.objective() - fa).abs() <= 1e-9 * fa);
    }

    #[test]
    fn pca_rotation_gives_the_same_model() {
        // n < d: the PCA solver works in r = n - 1 = 14 dimensions instead of 25.
        let (x, labels) = random_rows(15, 25, 3, 13);
        let run = |pca| {
            let mut s = solver(
                &x,
                &labels,
                3,
                &LmnnConfig {
                    pca,
                    ..Default::default()
                },
            );
            for _ in 0..25 {
                s.step().unwrap();
            }
            (
                s.metric().nrows(),
                s.objective(),
                s.model().matrix().clone(),
            )
        };
        let (r1, f1, m1) = run(true);
        let (r0, f0, m0) = run(false);
        assert_eq!((r1, r0), (14, 25));
        assert!((f1 - f0).abs() <= 1e-9 * f0, "{f1} vs {f0}");
        assert!(max_abs(&(&m1 - &m0)) <= 1e-9 * max_abs(&m0));
        assert!(
            max_abs(&(&m0 - &Array2::<f64>::eye(25))) > 0.1,
            "nothing learned"
        );
    }

    /// Two classes told apart by dimension 0 (a gap of 0.2), under two class-independent
    /// nuisance dimensions uniform in [-1, 1]: Euclidean neighbours are mostly nuisance
    /// neighbours. (On the OASIS toy, where the nuisance sits in one of two dimensions,
    /// Euclidean 1-NN is already perfect and LMNN, content with local margins, barely moves
    /// mAP: 0.81 -> 0.85.)
    fn nuisance_data(n: usize, seed: u64) -> LabeledSet {
        let mut rng = seeded(seed);
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                vec![
                    0.2 * (i % 2) as f64 + rng.random_range(-0.02..0.02),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                ]
            })
            .collect();
        LabeledSet::from_dense_rows(&rows, (0..n).map(|i| (i % 2) as u32).collect(), 2)
    }

    struct Record {
        test: LabeledSet,
        seen: Vec<(Checkpoint, f64, f64)>,
    }

    impl Observer for Record {
        fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
            let r = evaluate_retrieval(model, &self.test, &self.test, true, 5);
            self.seen.push((at, r.map, r.precision[0]));
            Control::Continue
        }
    }

    #[test]
    fn lmnn_beats_euclidean_where_a_nuisance_dimension_fools_it() {
        let (train, test) = (nuisance_data(60, 1), nuisance_data(60, 2));
        let euclid = evaluate_retrieval(&Euclidean, &test, &test, true, 5);
        assert!(euclid.map < 0.7 && euclid.precision[0] < 0.9, "{euclid:?}");
        for active_set in [false, true] {
            let mut obs = Record {
                test: test.clone(),
                seen: Vec::new(),
            };
            let schedule = Schedule::new(vec![0, 5, 50, 300]);
            LmnnConfig {
                active_set,
                ..Default::default()
            }
            .fit(&train, &schedule, &mut seeded(3), &mut obs)
            .unwrap();
            let seen: Vec<(u64, bool)> = obs.seen.iter().map(|(c, ..)| (c.step, c.last)).collect();
            assert_eq!(seen, vec![(0, false), (5, false), (50, false), (300, true)]);
            assert!(
                obs.seen
                    .windows(2)
                    .all(|w| w[0].0.solver_seconds <= w[1].0.solver_seconds)
            );
            let (first, last) = (&obs.seen[0], &obs.seen[3]);
            // Step 0 is the Euclidean metric.
            assert!((first.1 - euclid.map).abs() < 1e-9);
            assert!(last.1 > 0.97, "mAP {} -> {}", first.1, last.1);
            // Nearest-neighbour (precision@1) accuracy is the criterion LMNN optimises.
            assert!(last.2 > 0.98, "1-NN {} -> {}", first.2, last.2);
        }
    }

    #[test]
    fn converged_runs_stop_early_and_max_iter_bounds_the_run() {
        let train = nuisance_data(30, 4);
        let run = |cfg: LmnnConfig, steps: Vec<u64>| {
            let mut obs = Record {
                test: train.clone(),
                seen: Vec::new(),
            };
            cfg.fit(&train, &Schedule::new(steps), &mut seeded(1), &mut obs)
                .unwrap();
            obs.seen
                .iter()
                .map(|(c, ..)| (c.step, c.last))
                .collect::<Vec<_>>()
        };
        let loose = LmnnConfig {
            tolerance: 1e-3,
            max_iter: 1_000_000,
            ..Default::default()
        };
        let seen = run(loose.clone(), vec![0, 3, 1_000_000]);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(&seen[..2], &[(0, false), (3, false)]);
        let (t, last) = seen[2];
        assert!(last && t > 3 && t < 1_000_000, "{seen:?}");
        // The same run stepped by hand converges at that iteration.
        let mut s = LmnnSolver::new(&loose, &train).unwrap();
        run_to_convergence(&mut s, 1_000_000);
        assert_eq!(s.iterations(), t);
        let capped = LmnnConfig {
            max_iter: 7,
            ..Default::default()
        };
        assert_eq!(
            run(capped, vec![0, 5, 100]),
            vec![(0, false), (5, false), (7, true)]
        );
        assert!(run(LmnnConfig::default(), vec![]).is_empty());
    }

    /// Captures the model's scores so two runs can be compared exactly.
    struct Scores(LabeledSet, Vec<u64>);

    impl Observer for Scores {
        fn checkpoint(&mut self, _: Checkpoint, model: &dyn Scorer) -> Control {
            let mut out = vec![0.0; self.0.n()];
            for q in 0..self.0.n() {
                model.score(self.0.x.outer_view(q).unwrap(), &self.0.x, &mut out);
                self.1.extend(out.iter().map(|v| v.to_bits()));
            }
            Control::Continue
        }
    }

    #[test]
    fn runs_are_deterministic_and_draw_no_randomness() {
        let train = nuisance_data(40, 5);
        for active_set in [false, true] {
            let cfg = LmnnConfig {
                active_set,
                ..Default::default()
            };
            let run = |seed| {
                let mut obs = Scores(train.clone(), Vec::new());
                cfg.fit(
                    &train,
                    &Schedule::new(vec![10, 40]),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
                obs.1
            };
            let a = run(9);
            assert_eq!(a, run(9));
            // LMNN is deterministic: the seed does not matter.
            assert_eq!(a, run(10));
            // And the model did move between the two checkpoints.
            let half = a.len() / 2;
            assert_ne!(a[..half], a[half..]);
        }
    }

    #[test]
    fn invalid_parameters_are_rejected() {
        let train = nuisance_data(10, 1);
        let bad = [
            LmnnConfig {
                omega: 1.0,
                ..Default::default()
            },
            LmnnConfig {
                omega: -0.1,
                ..Default::default()
            },
            LmnnConfig {
                omega: f64::NAN,
                ..Default::default()
            },
            LmnnConfig {
                k: 0,
                ..Default::default()
            },
            LmnnConfig {
                k: 65,
                ..Default::default()
            },
            LmnnConfig {
                refresh_every: 0,
                ..Default::default()
            },
            LmnnConfig {
                tolerance: -1.0,
                ..Default::default()
            },
            LmnnConfig {
                tolerance: f64::INFINITY,
                ..Default::default()
            },
            LmnnConfig {
                step_size: 0.0,
                ..Default::default()
            },
            LmnnConfig {
                step_size: f64::INFINITY,
                ..Default::default()
            },
            LmnnConfig {
                step_grow: 0.9,
                ..Default::default()
            },
            LmnnConfig {
                step_shrink: 1.0,
                ..Default::default()
            },
            LmnnConfig {
                step_shrink: 0.0,
                ..Default::default()
            },
        ];
        for cfg in bad {
            let err = cfg.fit(
                &train,
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut NullObserver,
            );
            assert!(
                matches!(err, Err(AlgoError::InvalidParam(_))),
                "{cfg:?} accepted"
            );
        }
        assert!(LmnnConfig::default().check().is_ok());
        for (cfg, param) in [
            (
                LmnnConfig {
                    step_grow: 0.9,
                    ..Default::default()
                },
                "step_grow",
            ),
            (
                LmnnConfig {
                    step_shrink: 1.0,
                    ..Default::default()
                },
                "step_shrink",
            ),
        ] {
            assert_eq!(cfg.check().unwrap_err().param, param);
        }
        // One class only; every class a singleton.
        let one = LabeledSet::from_dense_rows(&[vec![1.0, 0.0], vec![0.0, 1.0]], vec![0, 0], 1);
        let singles = LabeledSet::from_dense_rows(&[vec![1.0, 0.0], vec![0.0, 1.0]], vec![0, 1], 2);
        for set in [one, singles] {
            let err = LmnnConfig::default().fit(
                &set,
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut NullObserver,
            );
            assert!(matches!(err, Err(AlgoError::Data(_))));
        }
    }

    #[test]
    fn config_deserialises_with_defaults_and_rejects_unknown_fields() {
        let empty: Vec<(&str, f64)> = Vec::new();
        let cfg = LmnnConfig::deserialize(MapDeserializer::<_, ValueError>::new(empty.into_iter()))
            .unwrap();
        assert_eq!(cfg, LmnnConfig::default());
        let omega = LmnnConfig::deserialize(MapDeserializer::<_, ValueError>::new(
            [("omega", 0.25)].into_iter(),
        ))
        .unwrap();
        assert_eq!(omega.omega, 0.25);
        let unknown = LmnnConfig::deserialize(MapDeserializer::<_, ValueError>::new(
            [("mu", 0.25)].into_iter(),
        ));
        assert!(unknown.is_err());
    }
}

/// Wall-clock comparison of the two variants on a Caltech-like stand-in (run by hand:
/// `cargo test --release --workspace lmnn_timing -- --ignored --nocapture`).
#[cfg(test)]
mod timing {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;
    use std::time::Instant;

    /// Sparse bag-of-words rows as in `benches/lmnn.rs`.
    fn caltech_like(classes: usize, per_class: usize, d: usize, seed: u64) -> LabeledSet {
        let mut rng = seeded(seed);
        let vocab: Vec<Vec<usize>> = (0..classes)
            .map(|_| (0..30).map(|_| rng.random_range(0..d)).collect())
            .collect();
        let (mut rows, mut labels) = (Vec::new(), Vec::new());
        for (c, words) in vocab.iter().enumerate() {
            for _ in 0..per_class {
                let mut r = vec![0.0; d];
                for _ in 0..40 {
                    let w = if rng.random::<f64>() < 0.3 {
                        words[rng.random_range(0..words.len())]
                    } else {
                        let u: f64 = rng.random();
                        ((u * u * u) * d as f64) as usize % d
                    };
                    r[w] += 1.0;
                }
                rows.push(r);
                labels.push(c as u32);
            }
        }
        let mut s = LabeledSet::from_dense_rows(&rows, labels, classes);
        s.l2_normalize_rows();
        s
    }

    #[test]
    #[ignore = "timing, run by hand"]
    fn lmnn_timing_full_vs_active_set() {
        for (classes, iters) in [(10usize, 300u64), (50, 100)] {
            let data = caltech_like(classes, 40, 1000, 1);
            for active_set in [false, true] {
                let cfg = LmnnConfig {
                    active_set,
                    tolerance: 0.0,
                    ..Default::default()
                };
                let t = Instant::now();
                let mut s = LmnnSolver::new(&cfg, &data).unwrap();
                let setup = t.elapsed().as_secs_f64();
                let t = Instant::now();
                while s.iterations() < iters && !s.converged() {
                    s.step().unwrap();
                }
                let secs = t.elapsed().as_secs_f64();
                let f = objective_and_gradient(
                    s.coordinates(),
                    s.labels(),
                    s.targets(),
                    s.metric(),
                    cfg.omega,
                )
                .0;
                eprintln!(
                    "n={} r={} active_set={active_set}: setup {setup:.2} s, {} iterations in \
                     {secs:.2} s ({:.4} s/iteration), objective {f:.4}, working set {}",
                    data.n(),
                    s.metric().nrows(),
                    s.iterations(),
                    secs / s.iterations() as f64,
                    s.working_set_triplets()
                );
            }
        }
    }
}
