//! LORETA-1-PSD in *Gram form*: the iterates of Algorithm 5 ([`super::Loreta1Psd`], the same
//! `Y_t` to rounding) with `Y^+` left implicit, at `O((nnz g1 + nnz g2) k + k^2)` per step
//! instead of `O(nk)`: the PSD counterpart of [`super::gram`], whose factor representation
//! it reuses.
//!
//! # The step in Gram form
//!
//! `Y = U M` (`U` `n x k`, `M` `k x k`) with `G = Y^T Y` and `H = G^{-1}`, so `Y^+ = H Y^T`:
//! `h1 = H (Y^T g1)`, `h2 = H (Y^T g2)` from two gathers. Algorithm 5's two vectors are a
//! change of basis plus sparse terms,
//!
//! ```text
//! l1 = Y alpha1 + e1,  alpha1 = ca h1 + cc n1 h2,  e1 = cb g1 - n1/8 g2
//! l2 = Y alpha2 + e2,  alpha2 = ca h2 + cc n2 h1,  e2 = cb g2 - n2/8 g1
//! ```
//!
//! and its two Algorithm 7 updates `Y1 = Y + l1 h2^T`, `Z = Y1 + l2 h1^T` are two *half-steps*
//! of one kind, `F <- F + l d^T` with `l = F alpha + e` and `e` a combination of `g1`, `g2`:
//!
//! * `G' = G + d y^T + y d^T + |l|^2 d d^T` with `y = F^T l = G alpha + F^T e` and `H'` by the
//!   Woodbury update of [`super::gram`] (`Factor::update_gram`);
//! * Algorithm 7's quantities for the branch count and the rank-loss skip come from the same
//!   `k`-vectors: `F^+ l = alpha + H F^T e`, `beta = 1 + d . F^+ l`, `|w|^2 = |e|^2 - (F^T e) .
//!   H (F^T e)` (the part of `l` outside `col F`), `|nv|^2 = d . H d`, `|c|^2 = |l|^2`; `w`
//!   counts as zero below the cancellation level, as in [`super::gram`].
//!
//! The second half-step acts on `Y1`, so for its quantities `l2` is rewritten over `Y1`:
//! from `Y = Y1 - l1 h2^T` and `l1 = (Y1 alpha1 + e1) / (1 + delta)` (`delta = h2 . alpha1`),
//! `l2 = Y1 alpha2' + e2'` with `alpha2' = alpha2 - gamma alpha1 / (1 + delta)`, `e2' = e2 -
//! gamma e1 / (1 + delta)`, `gamma = h2 . alpha2`; and `Y1^T g = Y^T g + h2 (l1 . g)`. The
//! `g`-inner products (`|g1|^2`, `g1 . g2`, `|g2|^2`) give `|e|^2` and `l . g` without
//! touching anything of length `n`.
//!
//! # `U` and `M` move once per step
//!
//! `G` and `H` follow the two half-steps (the second half's branch needs `Y1`'s), but the
//! factor itself is moved once, by the whole step `Z = Y T + e1 h2^T + e2 h1^T` with `T = I +
//! alpha1 h2^T + alpha2 h1^T`: `M' = M T`, `M'^{-1} = T^{-1} M^{-1}` (Woodbury with the `2 x 2`
//! `K = I + [h2 h1]^T [alpha1 alpha2]`), `U' = U + e1 (M'^{-T} h2)^T + e2 (M'^{-T} h1)^T`: one
//! pass over the rows of `supp g1 u supp g2` per step instead of two. `M'` is always
//! invertible:
//!
//! ```text
//! det T = f+ f-,  f+- = 1 + delta -+ x kappa,  kappa = -1/4 + 3s/16,  x = sqrt(n1 n2) >= |s|
//! f- = 1 + (x - s)/4 + 3 (x - s)^2 / 32 >= 1,  f+ = 1 - u/4 + 3 u^2 / 32 >= 5/6  (u = x + s)
//! ```
//!
//! so `det T >= 5/6`; and since `f+ + f- = 2 (1 + delta)`, each half's Sherman–Morrison
//! denominator (`1 + delta`, and `det T / (1 + delta)` for the second) is at least 5/6 too.
//!
//! # Rank loss, refresh, conditioning
//!
//! * **Rank loss** (`beta = 0` and `w = 0`) in the first half skips the step, as the carried
//!   form does; in the second half `G`, `H` (already moved by the first half) are rebuilt
//!   from the unchanged `U M` (`O(nk^2)`, a measure-zero event) and the step is skipped: the
//!   factor is left exactly as it was, where the carried form subtracts the first half again.
//! * **Refresh**: as [`super::gram`] (every [`super::gram::DEFAULT_REFRESH_EVERY`] applied
//!   steps `U <- U M`, `G`, `H` rebuilt; the drift check of safeguard 1 measures `|H G_exact -
//!   I|_max`).
//! * **Conditioning.** Writing `Z = U' M'` rounds through `M'^{-1}`: measured on a step with
//!   `Y = [I; 0]`, the error grows like `eps cond(T)^2` (2.8e-9 relative at `cond(T) = 4.5e3`,
//!   1e-2 at 4e6), where Algorithm 5 carrying `Y^+` stays at `eps`. So a step whose
//!   conditioning estimate (`Loreta1PsdGram::step_condition`, an upper bound from norms and
//!   `K`) exceeds [`COND_MAX`] = 100 is taken by Algorithm 5 itself on the materialised `Y`
//!   (`Y^+` computed afresh, `O(nk^2)`), and `G`, `H` are rebuilt from the result; counted by
//!   [`Loreta1PsdGram::carried_steps`]. Learning runs stay far below it: on LORETA F5's
//!   quick profile (η up to 10) the estimate stayed under 50 and no step was handed over.
//!
//! Tested against [`super::Loreta1Psd`] step for step (the factor `Y` itself, the skips, the
//! branches, the scores), including steps with large `|h|`.

use super::gram::{DEFAULT_REFRESH_EVERY, Factor, mat_t_vec, mat_vec, rank_one};
use super::loreta1::ScaledSparse;
use super::model::{LoretaStats, LowRankModel};
use super::pinv::{PinvBranch, PinvTolerances};
use super::psd::PsdStep;
use dyad_kernels::linalg::{axpy, dot};
use dyad_kernels::{AlgoError, Checked};
use ndarray::Array2;

/// Largest condition estimate of a step's `T` (`Loreta1PsdGram::step_condition`) taken in
/// Gram form; beyond it the step is Algorithm 5's own (module docs).
pub const COND_MAX: f64 = 100.0;

fn numerical(what: &str, e: impl std::fmt::Display) -> AlgoError {
    AlgoError::Numerical(format!("LORETA-PSD (Gram form): {what}: {e}"))
}

/// `sum_i a_i b_i` of two sparse vectors with increasing indices (scales included).
fn sparse_dot(a: ScaledSparse<'_>, b: ScaledSparse<'_>) -> f64 {
    let (mut i, mut j, mut acc) = (0, 0, 0.0);
    while i < a.indices.len() && j < b.indices.len() {
        match a.indices[i].cmp(&b.indices[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                acc += a.values[i] * b.values[j];
                i += 1;
                j += 1;
            }
        }
    }
    acc * a.scale * b.scale
}

/// One half-step `F <- F + l d^T`, `l = F alpha + x[0] g1 + x[1] g2`, as planned.
#[derive(Debug, Clone, Copy)]
struct Half {
    branch: PinvBranch,
    /// `|l|^2`, `d . H d`, Algorithm 7's `beta`.
    c2: f64,
    nv2: f64,
    beta: f64,
}

/// The LORETA-1-PSD state in Gram form: `W = Y Y^T`, `Y = U M` (module docs).
#[derive(Debug, Clone)]
pub struct Loreta1PsdGram {
    f: Factor,
    tol: PinvTolerances,
    stats: LoretaStats,
    refresh_every: u64,
    since_refresh: u64,
    cond_max: f64,
    carried_steps: u64,
    model: Option<LowRankModel>,
    /// `Y^T g1`, `Y^T g2` of the current factor.
    c: [Vec<f64>; 2],
    /// `h1`, `h2`; `alpha1`, `alpha2` of the step; `alpha2'` (over `Y1`).
    h: [Vec<f64>; 2],
    alpha: [Vec<f64>; 2],
    alpha2y1: Vec<f64>,
    /// `|g1|^2`, `g1 . g2`, `|g2|^2`.
    gg: [f64; 3],
    /// Scratch: `F^T e`, `H F^T e`, `G alpha`, `M alpha`, `M^{-T} h`, `U^T q`, two
    /// projections.
    fte: Vec<f64>,
    hfte: Vec<f64>,
    galpha: Vec<f64>,
    malpha: Vec<f64>,
    mh: [Vec<f64>; 2],
    t: Vec<f64>,
    pq: Vec<f64>,
    pp: Vec<f64>,
}

impl Loreta1PsdGram {
    /// Start from `W = Y Y^T` (`Y` of full column rank `k`). `refresh_every`: applied steps
    /// between exact rebuilds (at least 1; [`DEFAULT_REFRESH_EVERY`]).
    pub fn new(y: Array2<f64>, tol: PinvTolerances, refresh_every: u64) -> Result<Self, AlgoError> {
        let k = y.ncols();
        if k == 0 {
            return Err(AlgoError::data("LORETA-PSD: Y has no columns (rank 0)"));
        }
        dyad_kernels::params::at_least_one("refresh_every", refresh_every)?;
        tol.check()?;
        let zeros = || vec![0.0; k];
        Ok(Self {
            f: Factor::new(y)?,
            tol,
            stats: LoretaStats::default(),
            refresh_every,
            since_refresh: 0,
            cond_max: COND_MAX,
            carried_steps: 0,
            model: None,
            c: [zeros(), zeros()],
            h: [zeros(), zeros()],
            alpha: [zeros(), zeros()],
            alpha2y1: zeros(),
            gg: [0.0; 3],
            fte: zeros(),
            hfte: zeros(),
            galpha: zeros(),
            malpha: zeros(),
            mh: [zeros(), zeros()],
            t: zeros(),
            pq: zeros(),
            pp: zeros(),
        })
    }

    /// [`Self::new`] with the default refresh cadence, [`DEFAULT_REFRESH_EVERY`].
    pub fn with_defaults(y: Array2<f64>, tol: PinvTolerances) -> Result<Self, AlgoError> {
        Self::new(y, tol, DEFAULT_REFRESH_EVERY)
    }

    pub fn rows(&self) -> usize {
        self.f.u.nrows()
    }

    pub fn rank(&self) -> usize {
        self.f.k()
    }

    pub fn stats(&self) -> &LoretaStats {
        &self.stats
    }

    /// Floats held by the state: `nk + 4k^2`; scratch excluded.
    pub fn memory_floats(&self) -> usize {
        let k = self.rank();
        self.rows() * k + 4 * k * k
    }

    /// The model `W = Y Y^T` with every step applied (materialised once per change).
    pub fn model(&mut self) -> &LowRankModel {
        if self.model.is_none() {
            let mut model = LowRankModel::symmetric(self.f.materialise());
            model.stats = self.stats;
            self.model = Some(model);
        }
        self.model.as_ref().expect("just built")
    }

    /// `Y^T x` for a sparse `x` into `out` (`t` scratch).
    fn project(f: &Factor, x: (&[usize], &[f64]), t: &mut [f64], out: &mut [f64]) {
        let k = f.k();
        let u = f.u.as_slice().expect("standard layout");
        t.fill(0.0);
        for (&i, &v) in x.0.iter().zip(x.1) {
            axpy(t, v, &u[i * k..(i + 1) * k]);
        }
        mat_t_vec(&f.m, t, out);
    }

    /// `q^T W p = (Y^T q) . (Y^T p)`, `O((nnz q + nnz p) k + k^2)`.
    pub fn bilinear(&mut self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
        Self::project(&self.f, q, &mut self.t, &mut self.pq);
        Self::project(&self.f, p, &mut self.t, &mut self.pp);
        dot(&self.pq, &self.pp)
    }

    /// `F^T e` into `fte` and `|e|^2` for `e = x[0] g1 + x[1] g2`.
    fn combine(&mut self, x: [f64; 2]) -> f64 {
        for ((o, &a), &b) in self.fte.iter_mut().zip(&self.c[0]).zip(&self.c[1]) {
            *o = x[0] * a + x[1] * b;
        }
        let [g11, g12, g22] = self.gg;
        (x[0] * x[0] * g11 + 2.0 * x[0] * x[1] * g12 + x[1] * x[1] * g22).max(0.0)
    }

    /// Algorithm 7's quantities of the half-step `alpha`, `x`, `d`; leaves `y = F^T l` in
    /// `f.t` and `H d` in `f.hd` for [`Factor::update_gram`].
    fn plan(&mut self, first: bool, x: [f64; 2], d: &[f64]) -> Half {
        let ee = self.combine(x);
        let alpha = if first {
            &self.alpha[0]
        } else {
            &self.alpha2y1
        };
        mat_vec(&self.f.g, alpha, &mut self.galpha);
        mat_vec(&self.f.h, &self.fte, &mut self.hfte);
        mat_vec(&self.f.h, d, &mut self.f.hd);
        for ((y, &ga), &e) in self.f.t.iter_mut().zip(&self.galpha).zip(&self.fte) {
            *y = ga + e;
        }
        let c2 = (dot(alpha, &self.galpha) + 2.0 * dot(alpha, &self.fte) + ee).max(0.0);
        let beta = 1.0 + dot(d, alpha) + dot(d, &self.hfte);
        let w2 = (ee - dot(&self.fte, &self.hfte)).max(0.0);
        let w_rule = self.tol.w * c2.sqrt().max(1.0);
        let w2_zero = (w_rule * w_rule).max(8.0 * f64::EPSILON * ee);
        let w = if w2 <= w2_zero { 0.0 } else { w2.sqrt() };
        Half {
            branch: PinvBranch::decide(beta, w, c2.sqrt(), self.tol),
            c2,
            nv2: dot(d, &self.f.hd),
            beta,
        }
    }

    /// Move the factor by the whole step (module docs): `M' = M T`, `M'^{-1} = T^{-1}
    /// M^{-1}`, `U' = U + e1 (M'^{-T} h2)^T + e2 (M'^{-T} h1)^T` with `e1 = x1 . (g1, g2)`,
    /// `e2 = x2 . (g1, g2)`.
    fn move_factor(&mut self, x1: [f64; 2], x2: [f64; 2], g: [ScaledSparse<'_>; 2]) {
        let k = self.f.k();
        let ([h1, h2], [a1, a2]) = (&self.h, &self.alpha);
        // K = I + [h2 h1]^T [alpha1 alpha2], det K = det T >= 5/6.
        let (k00, k01, k10, k11) = (
            1.0 + dot(h2, a1),
            dot(h2, a2),
            dot(h1, a1),
            1.0 + dot(h1, a2),
        );
        let det = k00 * k11 - k01 * k10;
        let (i00, i01, i10, i11) = (k11 / det, -k01 / det, -k10 / det, k00 / det);
        // M^{-T} h2, M^{-T} h1 (rows of [h2 h1]^T M^{-1}).
        mat_t_vec(&self.f.m_inv, h2, &mut self.mh[0]);
        mat_t_vec(&self.f.m_inv, h1, &mut self.mh[1]);
        // M T = M + (M alpha1) h2^T + (M alpha2) h1^T, both products of the old M.
        mat_vec(&self.f.m, a1, &mut self.malpha);
        mat_vec(&self.f.m, a2, &mut self.galpha);
        rank_one(&mut self.f.m, 1.0, &self.malpha, h2);
        rank_one(&mut self.f.m, 1.0, &self.galpha, h1);
        // M'^{-1} = M^{-1} - alpha1 (i00 r1 + i01 r2)^T - alpha2 (i10 r1 + i11 r2)^T.
        let [r1, r2] = &self.mh;
        for (a, (c1, c2)) in [(a1, (i00, i01)), (a2, (i10, i11))] {
            for (&ai, row) in a.iter().zip(self.f.m_inv.chunks_exact_mut(k)) {
                for ((v, &x), &y) in row.iter_mut().zip(r1).zip(r2) {
                    *v -= ai * (c1 * x + c2 * y);
                }
            }
        }
        // z2 = M'^{-T} h2, z1 = M'^{-T} h1 (into `mh`, `fte` as scratch).
        mat_t_vec(&self.f.m_inv, h2, &mut self.fte);
        mat_t_vec(&self.f.m_inv, h1, &mut self.hfte);
        let (z2, z1) = (&self.fte, &self.hfte);
        let u = self.f.u.as_slice_mut().expect("standard layout");
        for (j, gj) in g.iter().enumerate() {
            // Row i of e1 z2^T + e2 z1^T for i in supp(g_j): g_ji (x1[j] z2 + x2[j] z1).
            for (w, (&a, &b)) in self.t.iter_mut().zip(z2.iter().zip(z1)) {
                *w = x1[j] * a + x2[j] * b;
            }
            for (&i, &v) in gj.indices.iter().zip(gj.values) {
                axpy(&mut u[i * k..(i + 1) * k], gj.scale * v, &self.t);
            }
        }
    }

    /// One step along `g1 g2^T`, as [`super::Loreta1Psd::step`] (the same skips and
    /// statistics).
    pub fn step(
        &mut self,
        g1: ScaledSparse<'_>,
        g2: ScaledSparse<'_>,
    ) -> Result<PsdStep, AlgoError> {
        let n = self.rows();
        if !g1.fits(n) || !g2.fits(n) {
            return Err(AlgoError::data(format!(
                "LORETA-PSD: gradient factors exceed the model's dimension {n}"
            )));
        }
        let skip = |s: f64, first: PinvBranch, second: PinvBranch| PsdStep {
            s,
            first,
            second,
            applied: false,
        };
        if g1.is_zero() || g2.is_zero() {
            return Ok(skip(0.0, PinvBranch::Generic, PinvBranch::Generic));
        }
        let g = [g1, g2];
        for (j, gj) in g.iter().enumerate() {
            Self::project(
                &self.f,
                (gj.indices, gj.values),
                &mut self.t,
                &mut self.c[j],
            );
            for v in &mut self.c[j] {
                *v *= gj.scale;
            }
            mat_vec(&self.f.h, &self.c[j], &mut self.h[j]);
        }
        self.gg = [sparse_dot(g1, g1), sparse_dot(g1, g2), sparse_dot(g2, g2)];
        let [h1, h2] = &self.h;
        let (n1, n2, s) = (dot(h1, h1), dot(h2, h2), dot(h1, h2));
        if !(n1.is_finite() && n2.is_finite() && s.is_finite()) {
            return Err(numerical("non-finite h1, h2", s));
        }
        let (ca, cb, cc) = (-0.25 + 3.0 / 32.0 * s, 0.5 - 0.125 * s, 3.0 / 32.0);
        for (which, (own, other, nn)) in [(h1, h2, n1), (h2, h1, n2)].into_iter().enumerate() {
            for ((a, &o), &t) in self.alpha[which].iter_mut().zip(own).zip(other) {
                *a = ca * o + cc * nn * t;
            }
        }
        if self.step_condition() > self.cond_max {
            return self.carried_step(g1, g2);
        }
        let x1 = [cb, -0.125 * n1];
        let x2 = [-0.125 * n2, cb];
        let (h1, h2) = (self.h[0].clone(), self.h[1].clone());
        // First half-step: Y1 = Y + l1 h2^T.
        let first = self.plan(true, x1, &h2);
        if !half_finite(&first) {
            return Err(numerical("non-finite Algorithm 7 quantities", first.beta));
        }
        if first.branch == PinvBranch::RankLoss {
            self.stats.rank_loss_skips += 1;
            return Ok(skip(s, first.branch, PinvBranch::RankLoss));
        }
        // What the second half needs of the first, read before G moves: l1 . g_j, delta =
        // h2 . alpha1 and gamma = h2 . alpha2.
        let [g11, g12, g22] = self.gg;
        let lg = [
            dot(&self.alpha[0], &self.c[0]) + x1[0] * g11 + x1[1] * g12,
            dot(&self.alpha[0], &self.c[1]) + x1[0] * g12 + x1[1] * g22,
        ];
        let (delta, gamma) = (dot(&h2, &self.alpha[0]), dot(&h2, &self.alpha[1]));
        self.f.update_gram(&h2, first.c2, first.nv2)?;
        for (c, l) in self.c.iter_mut().zip(lg) {
            axpy(c, l, &h2);
        }
        // Second half-step on Y1: l2 = Y1 alpha2' + e2'.
        let r = gamma / (1.0 + delta);
        self.alpha2y1.copy_from_slice(&self.alpha[1]);
        axpy(&mut self.alpha2y1, -r, &self.alpha[0]);
        let x2y1 = [x2[0] - r * x1[0], x2[1] - r * x1[1]];
        let second = self.plan(false, x2y1, &h1);
        if !half_finite(&second) || second.branch == PinvBranch::RankLoss {
            // The factor has not moved: G, H back from it exactly.
            self.f.refresh()?;
            self.since_refresh = 0;
            if !half_finite(&second) {
                return Err(numerical("non-finite Algorithm 7 quantities", second.beta));
            }
            self.stats.rank_loss_skips += 1;
            return Ok(skip(s, first.branch, second.branch));
        }
        self.f.update_gram(&h1, second.c2, second.nv2)?;
        self.move_factor(x1, x2, g);
        self.model = None;
        self.stats.record_update(s, [first.branch, second.branch]);
        self.since_refresh += 1;
        if self.since_refresh >= self.refresh_every {
            self.f.refresh()?;
            self.since_refresh = 0;
        }
        Ok(PsdStep {
            s,
            first: first.branch,
            second: second.branch,
            applied: true,
        })
    }

    /// An upper bound of `cond_F(T) / k` for the step's `T = I + alpha1 h2^T + alpha2 h1^T`
    /// (1 for `T = I`), from norms and the `2 x 2` `K` of [`Self::move_factor`] (`|T^{-1}|_F
    /// <= sqrt k + |P|_F |K^{-1}|_F |Q|_F`, `|K^{-1}|_F = |K|_F / det K` for `2 x 2`).
    fn step_condition(&self) -> f64 {
        let ([h1, h2], [a1, a2]) = (&self.h, &self.alpha);
        let norm = |v: &[f64]| dot(v, v).sqrt();
        let (na1, na2, nh1, nh2) = (norm(a1), norm(a2), norm(h1), norm(h2));
        let kk = [
            1.0 + dot(h2, a1),
            dot(h2, a2),
            dot(h1, a1),
            1.0 + dot(h1, a2),
        ];
        let det = kk[0] * kk[3] - kk[1] * kk[2];
        let k_inv = kk.iter().map(|v| v * v).sum::<f64>().sqrt() / det.abs();
        let rk = (self.rank() as f64).sqrt();
        let cond = (rk + na1 * nh2 + na2 * nh1) * (rk + (na1 + na2) * k_inv * (nh1 + nh2));
        let cond = cond / (rk * rk);
        if cond.is_finite() {
            cond
        } else {
            f64::INFINITY
        }
    }

    /// The step by Algorithm 5 itself ([`super::Loreta1Psd`], `Y^+` computed afresh:
    /// `O(nk^2)`), for a step whose `T` is too ill-conditioned for the Gram form's rounding
    /// (module docs); `G`, `H` rebuilt exactly from the result.
    fn carried_step(
        &mut self,
        g1: ScaledSparse<'_>,
        g2: ScaledSparse<'_>,
    ) -> Result<PsdStep, AlgoError> {
        let mut carried = super::psd::Loreta1Psd::new(self.f.materialise(), self.tol)?;
        let out = carried.step(g1, g2)?;
        self.carried_steps += 1;
        if out.applied {
            self.f = Factor::new(carried.model().a().clone())?;
            self.stats.record_update(out.s, [out.first, out.second]);
            self.since_refresh = 0;
            self.model = None;
        } else {
            self.stats.rank_loss_skips += 1;
        }
        Ok(out)
    }

    /// Steps taken by Algorithm 5 itself because their `T` was ill-conditioned
    /// ([`COND_MAX`]).
    pub fn carried_steps(&self) -> u64 {
        self.carried_steps
    }

    /// `|Y^+ Y - I|_max` with `Y^+ = G^{-1} Y^T` as carried (`O(nk^2)`).
    pub fn pinv_drift(&self) -> f64 {
        self.f.drift()
    }

    /// Safeguard 1 of spec §2.7: rebuild when the drift exceeds `tolerance`.
    pub fn check_pinvs(&mut self, tolerance: f64) -> Result<bool, AlgoError> {
        let drift = self.pinv_drift();
        if !drift.is_finite() {
            return Err(numerical("non-finite pseudo-inverse drift", drift));
        }
        if drift > tolerance {
            self.f.refresh()?;
            self.since_refresh = 0;
            self.stats.pinv_recomputes += 1;
            self.model = None;
            return Ok(true);
        }
        Ok(false)
    }
}

fn half_finite(h: &Half) -> bool {
    h.beta.is_finite() && h.c2.is_finite() && h.nv2.is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Loreta1Psd;
    use crate::testing::{max_abs, random, replay, sparse};
    use dyad_core::{SparseVec, seeded};

    fn dense(idx: &[usize], val: &[f64], n: usize) -> ndarray::Array1<f64> {
        let mut out = ndarray::Array1::zeros(n);
        for (&i, &v) in idx.iter().zip(val) {
            out[i] = v;
        }
        out
    }

    /// The same gradient stream through the carried form and the Gram form (with `den_min`
    /// given), regressing `W` onto a random PSD rank-`k` target: the factor `Y` agrees to
    /// rounding after every checked step, and so do `s`, the branches, the skips and the
    /// scores. Returns the Gram state.
    fn agree(refresh_every: u64, eta_scale: f64, steps: usize, seed: u64) -> Loreta1PsdGram {
        let (n, k) = (40, 5);
        let mut rng = seeded(seed);
        let y = random(n, k, &mut rng);
        let target = LowRankModel::symmetric(random(n, k, &mut rng));
        let tol = PinvTolerances::default();
        let mut carried = Loreta1Psd::new(y.clone(), tol).unwrap();
        let mut gram = Loreta1PsdGram::new(y, tol, refresh_every).unwrap();
        for t in 0..steps {
            let (g1, g2) = (sparse(n, 0.2, &mut rng), sparse(n, 0.2, &mut rng));
            let (q, p) = (
                (&g1.indices[..], &g1.values[..]),
                (&g2.indices[..], &g2.values[..]),
            );
            let sc = carried.model().bilinear(q, p);
            let sg = gram.bilinear(q, p);
            assert!(
                (sc - sg).abs() <= 1e-9 * (1.0 + sc.abs()),
                "step {t}: {sc} vs {sg}"
            );
            let eta = -0.02 * eta_scale * (sc - target.bilinear(q, p));
            fn step(g: &SparseVec, e: f64) -> ScaledSparse<'_> {
                ScaledSparse::new(&g.indices, &g.values, e)
            }
            let x = carried.step(step(&g1, eta), step(&g2, 1.0)).unwrap();
            let z = gram.step(step(&g1, eta), step(&g2, 1.0)).unwrap();
            assert_eq!(
                (x.applied, x.first, x.second),
                (z.applied, z.first, z.second)
            );
            assert!((x.s - z.s).abs() <= 1e-10 * (1.0 + x.s.abs()), "step {t}");
            if t % 97 == 0 || t + 1 == steps {
                let yc = carried.model().a().clone();
                let yg = gram.model().a().clone();
                let rel = max_abs(&(&yc - &yg)) / max_abs(&yc);
                assert!(
                    rel < 1e-10,
                    "step {t}: |Y_carried - Y_gram| / |Y| = {rel:e}"
                );
            }
        }
        assert!(gram.pinv_drift() < 1e-11, "drift {:e}", gram.pinv_drift());
        let (a, b) = (gram.stats(), carried.stats());
        assert_eq!(
            (a.updates, a.rank_loss_skips, a.branch_generic, a.large_s),
            (b.updates, b.rank_loss_skips, b.branch_generic, b.large_s)
        );
        gram
    }

    #[test]
    fn gram_form_follows_algorithm_5_step_for_step() {
        let st = agree(DEFAULT_REFRESH_EVERY, 1.0, 20_000, 1);
        assert!(st.stats().updates > 19_000);
    }

    #[test]
    fn frequent_refreshes_change_nothing_but_rounding() {
        agree(5, 1.0, 500, 2);
    }

    #[test]
    fn large_steps_keep_det_t_above_five_sixths_and_ill_conditioned_ones_go_to_algorithm_5() {
        // Y = [I; 0] and gradients whose first two coordinates are h1, h2 (nearly opposite,
        // so that f+ of the module docs is near its minimum). Each case runs the default state
        // and one forced to stay in Gram form (cond_max = inf), against Algorithm 5 in dense
        // arithmetic.
        let (n, k) = (12, 2);
        let mut y = Array2::<f64>::zeros((n, k));
        y[[0, 0]] = 1.0;
        y[[1, 1]] = 1.0;
        let tol = PinvTolerances::default();
        for scale in [1.0, 3.0, 10.0, 100.0] {
            let (i1, v1) = ([0usize, 1, 5], [scale, 0.3 * scale, 1.0]);
            let (i2, v2) = ([0usize, 1, 7], [-scale, -0.25 * scale, 0.5]);
            let (a, b) = (
                ScaledSparse::new(&i1, &v1, 1.0),
                ScaledSparse::new(&i2, &v2, 1.0),
            );
            let (h1, h2) = ([v1[0], v1[1]], [v2[0], v2[1]]);
            let d = |u: [f64; 2], v: [f64; 2]| u[0] * v[0] + u[1] * v[1];
            let (n1, n2, s) = (d(h1, h1), d(h2, h2), d(h1, h2));
            let (ca, cb, cc) = (-0.25 + 3.0 / 32.0 * s, 0.5 - 0.125 * s, 3.0 / 32.0);
            let (delta, kappa) = (ca * s + cc * n1 * n2, -0.25 + 3.0 / 16.0 * s);
            let x_ = (n1 * n2).sqrt();
            let (fp, fm) = (1.0 + delta + x_ * kappa, 1.0 + delta - x_ * kappa);
            let tiny = 1e-12 * (1.0 + delta);
            assert!(fp >= 5.0 / 6.0 - tiny && fm >= 1.0 - tiny, "{fp} {fm}");
            assert!(1.0 + delta >= 5.0 / 6.0 && fp * fm / (1.0 + delta) >= 5.0 / 6.0 - tiny);
            // T (2 x 2 here) and cond_F(T) = |T|_F^2 / det T.
            let (a1, a2) = (
                [ca * h1[0] + cc * n1 * h2[0], ca * h1[1] + cc * n1 * h2[1]],
                [ca * h2[0] + cc * n2 * h1[0], ca * h2[1] + cc * n2 * h1[1]],
            );
            let t =
                |i: usize, j: usize| f64::from(u8::from(i == j)) + a1[i] * h2[j] + a2[i] * h1[j];
            let det = t(0, 0) * t(1, 1) - t(0, 1) * t(1, 0);
            let tf2 = t(0, 0).powi(2) + t(0, 1).powi(2) + t(1, 0).powi(2) + t(1, 1).powi(2);
            let cond = tf2 / det;
            assert!(
                (det - fp * fm).abs() <= 1e-9 * det,
                "det T {det} vs f+ f- {}",
                fp * fm
            );
            // Algorithm 5 in dense arithmetic (Y^+ = [I 0] exactly): Z = Y + l1 h2^T + l2 h1^T.
            let (g1d, g2d) = (dense(&i1, &v1, n), dense(&i2, &v2, n));
            let (hat1, hat2) = (y.dot(&ndarray::arr1(&h1)), y.dot(&ndarray::arr1(&h2)));
            let l1 = &hat1 * ca + &g1d * cb + &hat2 * (cc * n1) - &g2d * (n1 / 8.0);
            let l2 = &hat2 * ca + &g2d * cb + &hat1 * (cc * n2) - &g1d * (n2 / 8.0);
            let mut zr = y.clone();
            for i in 0..n {
                for j in 0..k {
                    zr[[i, j]] += l1[i] * h2[j] + l2[i] * h1[j];
                }
            }
            let err = |st: &mut Loreta1PsdGram| max_abs(&(st.model().a() - &zr)) / max_abs(&zr);
            let mut st = Loreta1PsdGram::with_defaults(y.clone(), tol).unwrap();
            let mut forced = st.clone();
            forced.cond_max = f64::INFINITY;
            assert!(st.step(a, b).unwrap().applied && forced.step(a, b).unwrap().applied);
            let (e, ef) = (err(&mut st), err(&mut forced));
            // The bound is conservative: the default takes Algorithm 5 whenever T is
            // ill-conditioned.
            let bound = st.step_condition();
            eprintln!(
                "scale {scale}: cond(T) {cond:.1e} (bound {bound:.1e}), err {e:.1e}, forced \
                 Gram {ef:.1e}"
            );
            assert!(bound >= cond / k as f64 * 0.999);
            assert_eq!(st.carried_steps(), u64::from(bound > COND_MAX));
            assert!(e < 1e-14 * cond.min(COND_MAX), "scale {scale}: {e:e}");
            if st.carried_steps() == 0 {
                assert!(
                    st.pinv_drift() < 1e-12,
                    "scale {scale}: {:e}",
                    st.pinv_drift()
                );
            }
            // Forced into Gram form the rounding grows like eps cond(T)^2: why COND_MAX.
            assert!(
                ef < 4.0 * f64::EPSILON * cond * cond,
                "scale {scale}: {ef:e}"
            );
        }
        // A long run with steps 30x the regression's: some steps go to Algorithm 5.
        let st = agree(DEFAULT_REFRESH_EVERY, 30.0, 2_000, 6);
        eprintln!(
            "eta x 30: {} of {} steps by Algorithm 5",
            st.carried_steps(),
            st.stats().updates
        );
    }

    #[test]
    fn model_reads_do_not_change_the_trajectory_and_the_drift_check_fires() {
        let (n, k) = (20, 4);
        let mut rng = seeded(4);
        let y = random(n, k, &mut rng);
        let grads: Vec<(SparseVec, SparseVec)> = (0..50)
            .map(|_| (sparse(n, 0.3, &mut rng), sparse(n, 0.3, &mut rng)))
            .collect();
        let tol = PinvTolerances::default();
        let run = |read: bool| {
            let mut st = Loreta1PsdGram::new(y.clone(), tol, 16).unwrap();
            replay(&grads, |g1, g2| {
                st.step(g1, g2).unwrap();
                if read {
                    st.model();
                }
            });
            st
        };
        assert_eq!(run(true).model().clone(), run(false).model().clone());
        let mut st = run(false);
        assert!(!st.check_pinvs(1e-8).unwrap());
        st.f.h[0] += 1e-3;
        assert!(st.check_pinvs(1e-8).unwrap());
        assert!(st.pinv_drift() < 1e-10);
        assert_eq!(st.stats().pinv_recomputes, 1);
        assert!(
            st.step(
                ScaledSparse::new(&[n], &[1.0], 1.0),
                ScaledSparse::new(&[0], &[1.0], 1.0)
            )
            .is_err()
        );
        assert!(Loreta1PsdGram::new(y.clone(), tol, 0).is_err());
        assert!(Loreta1PsdGram::new(Array2::zeros((3, 2)), tol, 8).is_err());
    }

    #[test]
    fn sparse_dot_against_dense() {
        let mut rng = seeded(5);
        for _ in 0..50 {
            let (a, b) = (sparse(30, 0.4, &mut rng), sparse(30, 0.4, &mut rng));
            let (da, db) = (a.to_dense(30), b.to_dense(30));
            let want: f64 = da.iter().zip(&db).map(|(x, y)| x * y).sum::<f64>() * 0.5 * 3.0;
            let got = sparse_dot(
                ScaledSparse::new(&a.indices, &a.values, 0.5),
                ScaledSparse::new(&b.indices, &b.values, 3.0),
            );
            assert!((want - got).abs() < 1e-12 * (1.0 + want.abs()));
        }
    }
}
