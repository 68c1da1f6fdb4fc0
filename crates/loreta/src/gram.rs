//! LORETA-1 in *Gram form*: the iterates of Algorithm 4 (the same `W_t = A_t B_t^T`, to
//! rounding) with the pseudo-inverses left implicit, at `O((nnz g1 + nnz g2) k + k^2)` per
//! step, independent of `n` and `m`, instead of the `O((n+m)k)` of [`super::Loreta1`].
//!
//! # Why the pseudo-inverses need not be carried
//!
//! A factor of full column rank has `A^+ = G^{-1} A^T` with the `k x k` Gram matrix `G = A^T
//! A`, so everything Algorithm 4 reads from `A^+` comes from `G^{-1}` and gathers of rows of
//! `A`: `a1 = A^+ g1 = G^{-1} (A^T g1)`. And the step writes `A` in a form that needs no pass
//! over it: with `a2 = A a1`,
//!
//! ```text
//! Z1 = A + a3 b1^T,  a3 = p a2 + q g1  (p = -1/2 + 3s/8, q = 1 - s/2)
//!    = A (I + p a1 b1^T) + q g1 b1^T
//! ```
//!
//! a `k x k` change of basis plus a rank-one term on the rows of `supp(g1)`. So `A` is kept as
//! `U M` (`U` `n x k`, `M` `k x k`): `M' = M (I + p a1 b1^T)` and `U' = U + q g1 z^T` with
//! `z = M'^{-T} b1 = M^{-T} b1 / (1 + p s)` (Sherman–Morrison; `1 + p s = 1 - s/2 + 3s^2/8 >
//! 0` for every `s`, so `M'` is always invertible): only the rows of `U` in `supp(g1)` move.
//! The Gram matrix follows exactly, `G' = G + b1 y^T + y b1^T + |a3|^2 b1 b1^T` with `y = A^T
//! a3 = p G a1 + q A^T g1` and `|a3|^2 = p^2 a1.G a1 + 2pq (A^T g1).a1 + q^2 |g1|^2`; its
//! inverse `H = G^{-1}` by the Woodbury identity for that symmetric rank-two change (a `2 x 2`
//! solve; its determinant is `det G' / det G`, positive while the factor keeps its rank). `B = V N` and its
//! Gram matrix likewise, with `g2` and `a1`. Per step: two gathers of `nnz(g) k`, the rows of
//! `U`, `V` in the supports, and about 15 `k x k` matrix–vector products or rank-one updates
//! per factor. Nothing of length `n` or `m` is touched.
//!
//! This is not a different algorithm: every quantity is the one Algorithm 4 computes, through
//! `A^+ = G^{-1} A^T` instead of the carried `A^+` (equal in exact arithmetic, since Algorithm
//! 7 carries the exact pseudo-inverse). Tested against [`super::Loreta1`] over thousands of
//! steps, including the Algorithm 7 corner cases (`beta = 0`, `w = 0`, rank loss).
//!
//! # Numerics and the choices here
//!
//! * **Conditioning.** `G` squares the condition number of `A` (`cond(G) = cond(A)^2`):
//!   `a1` is computed to about `cond(A)^2 eps` instead of `cond(A) eps`. The factors of the
//!   papers' runs stay well conditioned (the 10^6-step test of [`super::Loreta1`] ends with
//!   `cond(A) < 100`); [`Loreta1Gram::rebalance`] (safeguard 4) bounds it when needed.
//! * **Refresh.** `M`, `M^{-1}`, `G`, `H` accumulate rounding over the steps. Every
//!   `refresh_every` applied steps (default 16,384, at a fixed cadence so that a trajectory
//!   does not depend on when the model is read) the state is rebuilt exactly: `U <- U M`, `M
//!   = I`, `G = U^T U`, `H` by Cholesky, `O((n+m)k^2)`: about `3(n+m)k^2 / 16384` flops per
//!   step amortised, 46 flops per row at `k = 50` (at `n = m = 10^5` the refresh is most of
//!   a step). Over 30,000 steps without a refresh the drift grows to about 1e-14 (tested). The drift check of
//!   safeguard 1 measures the same `|A^+ A - I|_max = |H G_exact - I|_max` as the carried
//!   form and refreshes when it is exceeded.
//! * **Branch counts.** The update needs no Algorithm 7 branch (the Gram update is one
//!   formula), but the step still classifies it for the statistics and must skip a step that
//!   would lose rank (`beta = 0` and `w = 0`). `|w|^2 = r^2 (|g|^2 - 2 (A^T g).a1 + a1.G a1)`
//!   is a difference of nearly equal numbers when `g` lies in `col(A)`: it is known to about
//!   `8 eps |g|^2` only, so `w` counts as zero when `|w|^2 <= max((w_tol max(1, |c|))^2, 8
//!   eps r^2 |g|^2)`, the first term being the carried form's rule. A `w` between those
//!   bounds (below `3e-8 |g|`) is counted `w = 0` here and not by the carried form: only the
//!   counts and the rank-loss skip (which also needs `beta = 0`) can differ, not the update.
//! * **Model reads** ([`Loreta1Gram::model`]) materialise `A = U M`, `B = V N` into a cached
//!   [`LowRankModel`] without changing the state, so reading at checkpoints leaves the
//!   trajectory bit for bit as it is; scores of the current model ([`Loreta1Gram::bilinear`])
//!   go through the `k`-dimensional projections `M^T U^T q`, `N^T V^T p`.

use super::loreta1::{Loreta1Step, ScaledSparse, balanced_factors};
use super::model::{LoretaStats, LowRankModel};
use super::pinv::{PinvBranch, PinvTolerances};
use dyad_kernels::linalg::{axpy, dot, gemm_sym, matmul, spd_inverse};
use dyad_kernels::{AlgoError, Checked};
use ndarray::Array2;

/// Applied steps between exact rebuilds of `U M`, `G`, `G^{-1}` (module docs).
pub const DEFAULT_REFRESH_EVERY: u64 = 16384;

fn numerical(what: &str, e: impl std::fmt::Display) -> AlgoError {
    AlgoError::Numerical(format!("LORETA (Gram form): {what}: {e}"))
}

/// `out = M x` for a row-major `k x k` `M`.
pub(super) fn mat_vec(m: &[f64], x: &[f64], out: &mut [f64]) {
    let k = x.len();
    for (o, row) in out.iter_mut().zip(m.chunks_exact(k)) {
        *o = dot(row, x);
    }
}

/// `out = M^T x` for a row-major `k x k` `M` (rows accumulated: contiguous).
pub(super) fn mat_t_vec(m: &[f64], x: &[f64], out: &mut [f64]) {
    let k = x.len();
    out.fill(0.0);
    for (&xi, row) in x.iter().zip(m.chunks_exact(k)) {
        axpy(out, xi, row);
    }
}

/// `M += alpha x y^T` (row-major `k x k`).
pub(super) fn rank_one(m: &mut [f64], alpha: f64, x: &[f64], y: &[f64]) {
    let k = y.len();
    for (&xi, row) in x.iter().zip(m.chunks_exact_mut(k)) {
        axpy(row, alpha * xi, y);
    }
}

/// `S += a x x^T + b (x y^T + y x^T) + c y y^T` for a symmetric row-major `k x k` `S`, entry
/// by entry with an expression symmetric in `(i, j)`, so `S` stays exactly symmetric.
pub(super) fn sym_rank_two(s: &mut [f64], a: f64, b: f64, c: f64, x: &[f64], y: &[f64]) {
    let k = x.len();
    for (i, row) in s.chunks_exact_mut(k).enumerate() {
        let (xi, yi) = (x[i], y[i]);
        for (j, v) in row.iter_mut().enumerate() {
            let (xj, yj) = (x[j], y[j]);
            *v += a * (xi * xj) + b * (xi * yj + yi * xj) + c * (yi * yj);
        }
    }
}

/// One factor `F = U M` with `G = F^T F` and `H = G^{-1}`, and the scratch of a step.
#[derive(Debug, Clone)]
pub(super) struct Factor {
    pub(super) u: Array2<f64>,
    /// `M`, `M^{-1}`, `G`, `H`: row-major `k x k`.
    pub(super) m: Vec<f64>,
    pub(super) m_inv: Vec<f64>,
    pub(super) g: Vec<f64>,
    pub(super) h: Vec<f64>,
    /// `U^T g`, `A^T g = M^T U^T g`, `A^+ g = H A^T g` of the current step; `t` also
    /// holds `y = A^T a3` for [`Factor::update_gram`].
    pub(super) t: Vec<f64>,
    cross: Vec<f64>,
    own: Vec<f64>,
    /// `G a1`, `H d`, `H y` (`y = A^T a3`), `M a1`, `M^{-T} d`.
    g_own: Vec<f64>,
    pub(super) hd: Vec<f64>,
    hy: Vec<f64>,
    m_own: Vec<f64>,
    pub(super) md: Vec<f64>,
    /// `|g|^2` of the current step.
    gsq: f64,
}

/// The scalars of a factor's part of a step.
#[derive(Debug, Clone, Copy)]
struct Parts {
    /// `|a3|^2`, `|w|^2` (clamped at 0), `d . H d`.
    c2: f64,
    w2: f64,
    nv2: f64,
    /// `|w|^2` below which `w` counts as zero (module docs).
    w2_zero: f64,
}

impl Factor {
    pub(super) fn new(f: Array2<f64>) -> Result<Self, AlgoError> {
        let k = f.ncols();
        let eye = Array2::<f64>::eye(k).into_raw_vec_and_offset().0;
        let mut out = Self {
            u: f.as_standard_layout().into_owned(),
            m: eye.clone(),
            m_inv: eye,
            g: vec![0.0; k * k],
            h: vec![0.0; k * k],
            t: vec![0.0; k],
            cross: vec![0.0; k],
            own: vec![0.0; k],
            g_own: vec![0.0; k],
            hd: vec![0.0; k],
            hy: vec![0.0; k],
            m_own: vec![0.0; k],
            md: vec![0.0; k],
            gsq: 0.0,
        };
        out.rebuild_gram()?;
        Ok(out)
    }

    pub(super) fn k(&self) -> usize {
        self.u.ncols()
    }

    /// `F = U M`.
    pub(super) fn materialise(&self) -> Array2<f64> {
        let k = self.k();
        let m = Array2::from_shape_vec((k, k), self.m.clone()).expect("k x k");
        matmul(self.u.view(), m.view())
    }

    /// `U <- U M`, `M = M^{-1} = I`, then `G`, `H` exactly.
    pub(super) fn refresh(&mut self) -> Result<(), AlgoError> {
        let k = self.k();
        self.u = self.materialise();
        let eye = Array2::<f64>::eye(k).into_raw_vec_and_offset().0;
        self.m.copy_from_slice(&eye);
        self.m_inv.copy_from_slice(&eye);
        self.rebuild_gram()
    }

    /// `G = (U M)^T (U M)` (`M = I` whenever this is called) and `H = G^{-1}` by Cholesky.
    fn rebuild_gram(&mut self) -> Result<(), AlgoError> {
        let k = self.k();
        let mut g = Array2::<f64>::zeros((k, k));
        gemm_sym(g.view_mut(), false, self.u.t(), self.u.view());
        let h = spd_inverse(g.view()).map_err(|e| numerical("the factor lost rank", e))?;
        self.g = g.into_raw_vec_and_offset().0;
        self.h = h.into_raw_vec_and_offset().0;
        Ok(())
    }

    /// `|H G_exact - I|_max`: the drift of the implicit pseudo-inverse (`O(n k^2)`).
    pub(super) fn drift(&self) -> f64 {
        let k = self.k();
        let f = self.materialise();
        let mut g = Array2::<f64>::zeros((k, k));
        gemm_sym(g.view_mut(), false, f.t(), f.view());
        let h = Array2::from_shape_vec((k, k), self.h.clone()).expect("k x k");
        let prod = matmul(h.view(), g.view());
        let mut dev = 0.0f64;
        for ((i, j), v) in prod.indexed_iter() {
            dev = dev.max((v - if i == j { 1.0 } else { 0.0 }).abs());
        }
        dev
    }

    /// `t = U^T g`, `cross = A^T g`, `own = A^+ g`, `|g|^2`.
    fn gather(&mut self, g: ScaledSparse<'_>) {
        let k = self.k();
        let u = self.u.as_slice().expect("standard layout");
        self.t.fill(0.0);
        let mut gsq = 0.0;
        for (&i, &v) in g.indices.iter().zip(g.values) {
            let gi = g.scale * v;
            axpy(&mut self.t, gi, &u[i * k..(i + 1) * k]);
            gsq += gi * gi;
        }
        self.gsq = gsq;
        mat_t_vec(&self.m, &self.t, &mut self.cross);
        mat_vec(&self.h, &self.cross, &mut self.own);
    }

    /// `|a3|^2`, `|w|^2`, `d . H d` for the other factor's `d` (its `own`).
    fn parts(&mut self, d: &[f64], p: f64, q: f64, tol: PinvTolerances) -> Parts {
        mat_vec(&self.g, &self.own, &mut self.g_own);
        mat_vec(&self.h, d, &mut self.hd);
        let ac = dot(&self.cross, &self.own);
        let aga = dot(&self.own, &self.g_own);
        let c2 = (p * p * aga + 2.0 * p * q * ac + q * q * self.gsq).max(0.0);
        let r2 = q * q;
        let w2 = (r2 * (self.gsq - 2.0 * ac + aga)).max(0.0);
        let nv2 = dot(d, &self.hd);
        let w_rule = tol.w * c2.sqrt().max(1.0);
        let w2_zero = (w_rule * w_rule).max(8.0 * f64::EPSILON * r2 * self.gsq);
        Parts {
            c2,
            w2,
            nv2,
            w2_zero,
        }
    }

    /// Apply `F <- F + a3 d^T` (module docs) to `U`, `M`, `M^{-1}`, `G`, `H`.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        g: ScaledSparse<'_>,
        d: &[f64],
        s: f64,
        p: f64,
        q: f64,
        parts: Parts,
    ) -> Result<(), AlgoError> {
        let k = self.k();
        // M' = M + p (M a1) d^T; M'^{-1} = M^{-1} - p a1 (M^{-T} d)^T / (1 + p s).
        mat_vec(&self.m, &self.own, &mut self.m_own);
        mat_t_vec(&self.m_inv, d, &mut self.md);
        let den = 1.0 + p * s;
        rank_one(&mut self.m, p, &self.m_own, d);
        rank_one(&mut self.m_inv, -p / den, &self.own, &self.md);
        // U' = U + q g z^T on the rows of supp(g), z = M'^{-T} d = M^{-T} d / (1 + p s).
        let u = self.u.as_slice_mut().expect("standard layout");
        for (&i, &v) in g.indices.iter().zip(g.values) {
            axpy(&mut u[i * k..(i + 1) * k], q * g.scale * v / den, &self.md);
        }
        // G' = G + d (A^T a3)^T + (A^T a3) d^T + |a3|^2 d d^T, A^T a3 = p G a1 + q A^T g;
        // written as the symmetric form in (d, y) with y = A^T a3 (reusing `t` for y).
        for ((y, &ga), &c) in self.t.iter_mut().zip(&self.g_own).zip(&self.cross) {
            *y = p * ga + q * c;
        }
        self.update_gram(d, parts.c2, parts.nv2)
    }

    /// `G' = G + d y^T + y d^T + c2 d d^T` (the Gram matrix after `F <- F + l d^T` with `y =
    /// F^T l` in `t`, `c2 = |l|^2`) and `H' = G'^{-1}` by Woodbury, given `hd = H d` and
    /// `nv2 = d . H d`. An error when `det G' / det G <= 0` (the factor loses rank).
    pub(super) fn update_gram(&mut self, d: &[f64], c2: f64, nv2: f64) -> Result<(), AlgoError> {
        sym_rank_two(&mut self.g, c2, 1.0, 0.0, d, &self.t);
        // H' by Woodbury: G' = G + Y S Y^T with Y = [d, y], S = [[c2, 1], [1, 0]],
        // C = Y^T H Y = [[d.Hd, d.Hy], [d.Hy, y.Hy]], K = I + S C (det K = det G' / det G),
        // H' = H - Z T Z^T with Z = [Hd, Hy], T = K^{-1} S (symmetric; symmetrised).
        mat_vec(&self.h, &self.t, &mut self.hy);
        let (c00, c01, c11) = (nv2, dot(&self.hd, &self.t), dot(&self.t, &self.hy));
        let (k00, k01, k10, k11) = (1.0 + c2 * c00 + c01, c2 * c01 + c11, c00, 1.0 + c01);
        let det = k00 * k11 - k01 * k10;
        if !(det.is_finite() && det > 0.0) {
            return Err(numerical(
                "the Gram update is singular (the factor loses rank)",
                format!("det(G')/det(G) = {det}"),
            ));
        }
        let t00 = (k11 * c2 - k01) / det;
        let t_off = 0.5 * (k11 + (k00 - k10 * c2)) / det;
        let t11 = -k10 / det;
        sym_rank_two(&mut self.h, -t00, -t_off, -t11, &self.hd, &self.hy);
        Ok(())
    }
}

/// The LORETA-1 state in Gram form: `W = (U_A M_A)(U_B M_B)^T` with the Gram matrices of both
/// factors and their inverses (module docs).
#[derive(Debug, Clone)]
pub struct Loreta1Gram {
    a: Factor,
    b: Factor,
    tol: PinvTolerances,
    stats: LoretaStats,
    refresh_every: u64,
    since_refresh: u64,
    /// The model as last materialised (`None` once a step changed it).
    model: Option<LowRankModel>,
    /// Scratch of [`Loreta1Gram::bilinear`].
    score_t: Vec<f64>,
    score_q: Vec<f64>,
    score_p: Vec<f64>,
}

impl Loreta1Gram {
    /// Start from `W = A B^T` (both of full column rank `k`): `O((n+m)k^2)` for the Gram
    /// matrices and their inverses. `refresh_every`: applied steps between exact rebuilds
    /// (at least 1; [`DEFAULT_REFRESH_EVERY`]).
    pub fn new(
        a: Array2<f64>,
        b: Array2<f64>,
        tol: PinvTolerances,
        refresh_every: u64,
    ) -> Result<Self, AlgoError> {
        let k = a.ncols();
        if k == 0 || b.ncols() != k {
            return Err(AlgoError::data(format!(
                "LORETA: factors must have the same positive number of columns, got {} and {}",
                k,
                b.ncols()
            )));
        }
        dyad_kernels::params::at_least_one("refresh_every", refresh_every)?;
        tol.check()?;
        Ok(Self {
            a: Factor::new(a)?,
            b: Factor::new(b)?,
            tol,
            stats: LoretaStats::default(),
            refresh_every,
            since_refresh: 0,
            model: None,
            score_t: vec![0.0; k],
            score_q: vec![0.0; k],
            score_p: vec![0.0; k],
        })
    }

    pub fn rows(&self) -> usize {
        self.a.u.nrows()
    }

    pub fn cols(&self) -> usize {
        self.b.u.nrows()
    }

    pub fn rank(&self) -> usize {
        self.a.k()
    }

    pub fn stats(&self) -> &LoretaStats {
        &self.stats
    }

    /// Floats held by the state: `(n+m)k + 8k^2` (the factors `U`, `V` and four `k x k`
    /// matrices per factor); scratch excluded.
    pub fn memory_floats(&self) -> usize {
        let k = self.rank();
        (self.rows() + self.cols()) * k + 8 * k * k
    }

    /// The model `W = A B^T` with every step applied (materialised once per change, `O((n+m)
    /// k^2)`; the state itself is not changed).
    pub fn model(&mut self) -> &LowRankModel {
        if self.model.is_none() {
            let mut model = LowRankModel::new(self.a.materialise(), self.b.materialise());
            model.stats = self.stats;
            self.model = Some(model);
        }
        self.model.as_ref().expect("just built")
    }

    /// `q^T W p` of the current model: `(M_A^T U_A^T q) . (M_B^T U_B^T p)`,
    /// `O((nnz q + nnz p) k + k^2)`.
    pub fn bilinear(&mut self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
        let k = self.rank();
        let project = |f: &Factor, idx: &[usize], val: &[f64], t: &mut [f64], out: &mut [f64]| {
            let u = f.u.as_slice().expect("standard layout");
            t.fill(0.0);
            for (&i, &v) in idx.iter().zip(val) {
                axpy(t, v, &u[i * k..(i + 1) * k]);
            }
            mat_t_vec(&f.m, t, out);
        };
        project(&self.a, q.0, q.1, &mut self.score_t, &mut self.score_q);
        project(&self.b, p.0, p.1, &mut self.score_t, &mut self.score_p);
        dot(&self.score_q, &self.score_p)
    }

    /// One LORETA-1 step along the descent `g1 g2^T`, as [`super::Loreta1::step`] (the same
    /// skips and statistics; branches classified as the module docs say).
    pub fn step(
        &mut self,
        g1: ScaledSparse<'_>,
        g2: ScaledSparse<'_>,
    ) -> Result<Loreta1Step, AlgoError> {
        if let Some(nothing) = Loreta1Step::screen(g1, g2, self.rows(), self.cols())? {
            return Ok(nothing);
        }
        self.a.gather(g1);
        self.b.gather(g2);
        let s = dot(&self.a.own, &self.b.own);
        if !s.is_finite() {
            return Err(numerical("non-finite s = tr M", s));
        }
        let beta = 1.0 + 0.5 * s - 0.125 * s * s;
        let (p, q) = (-0.5 + 0.375 * s, 1.0 - 0.5 * s);
        let pa = self.a.parts(&self.b.own, p, q, self.tol);
        let pb = self.b.parts(&self.a.own, p, q, self.tol);
        for (what, v) in [
            ("|w_A|", pa.w2),
            ("|nv_A|", pa.nv2),
            ("|a3|", pa.c2),
            ("|w_B|", pb.w2),
            ("|nv_B|", pb.nv2),
            ("|b3|", pb.c2),
        ] {
            if !v.is_finite() {
                return Err(numerical(&format!("non-finite {what}"), v));
            }
        }
        let branch = |parts: Parts| {
            let w = if parts.w2 <= parts.w2_zero {
                0.0
            } else {
                parts.w2.sqrt()
            };
            PinvBranch::decide(beta, w, parts.c2.sqrt(), self.tol)
        };
        let (branch_a, branch_b) = (branch(pa), branch(pb));
        if branch_a == PinvBranch::RankLoss || branch_b == PinvBranch::RankLoss {
            self.stats.rank_loss_skips += 1;
            self.model = None;
            return Ok(Loreta1Step {
                s,
                beta,
                branch_a,
                branch_b,
                applied: false,
            });
        }
        self.stats.record_update(s, [branch_a, branch_b]);
        // Both factors read the old state: `own` of each was computed above and is not
        // changed by `apply`.
        let (a, b) = (&mut self.a, &mut self.b);
        a.apply(g1, &b.own, s, p, q, pa)?;
        b.apply(g2, &a.own, s, p, q, pb)?;
        self.model = None;
        self.since_refresh += 1;
        if self.since_refresh >= self.refresh_every {
            self.refresh()?;
        }
        Ok(Loreta1Step {
            s,
            beta,
            branch_a,
            branch_b,
            applied: true,
        })
    }

    /// Rebuild `U M`, `G`, `G^{-1}` of both factors exactly (`O((n+m)k^2)`; the fixed-cadence
    /// refresh of the module docs, also the drift check's remedy).
    pub fn refresh(&mut self) -> Result<(), AlgoError> {
        self.a.refresh()?;
        self.b.refresh()?;
        self.since_refresh = 0;
        Ok(())
    }

    /// `max(|A^+ A - I|_max, |B^+ B - I|_max)` with `A^+ = G^{-1} A^T` as carried (`O((n+m)
    /// k^2)`): the quantity of [`super::Loreta1::pinv_drift`].
    pub fn pinv_drift(&self) -> f64 {
        self.a.drift().max(self.b.drift())
    }

    /// Safeguard 1 of spec §2.7: rebuild when the drift exceeds `tolerance` (counted as a
    /// pseudo-inverse recomputation). Returns whether it fired.
    pub fn check_pinvs(&mut self, tolerance: f64) -> Result<bool, AlgoError> {
        let drift = self.pinv_drift();
        if !drift.is_finite() {
            return Err(numerical("non-finite pseudo-inverse drift", drift));
        }
        if drift > tolerance {
            self.refresh()?;
            self.stats.pinv_recomputes += 1;
            self.model = None;
            return Ok(true);
        }
        Ok(false)
    }

    /// Safeguard 4: refactor into balanced factors (as [`super::Loreta1::rebalance`]).
    pub fn rebalance(&mut self) -> Result<(), AlgoError> {
        let (na, nb, _, _) = balanced_factors(&self.a.materialise(), &self.b.materialise())?;
        self.a = Factor::new(na)?;
        self.b = Factor::new(nb)?;
        self.since_refresh = 0;
        self.stats.rebalances += 1;
        self.model = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Loreta1;
    use crate::testing::{max_abs, random, replay, sparse};
    use dyad_core::{SparseVec, seeded};

    /// The same gradient stream through the carried and the Gram form, regressing `W` onto a
    /// random rank-`k` target (so that `W` stays well conditioned, as in a learning run): `W`
    /// agrees to rounding after every checked step, and so do `s`, the skips and the scores.
    fn agree(refresh_every: u64, steps: usize, seed: u64) {
        let (n, m, k) = (40, 30, 5);
        let mut rng = seeded(seed);
        let (a, b) = (random(n, k, &mut rng), random(m, k, &mut rng));
        let target = LowRankModel::new(random(n, k, &mut rng), random(m, k, &mut rng));
        let tol = PinvTolerances::default();
        let mut carried = Loreta1::new(a.clone(), b.clone(), tol).unwrap();
        let mut gram = Loreta1Gram::new(a, b, tol, refresh_every).unwrap();
        let mut worst = 0.0f64;
        for t in 0..steps {
            let (g1, g2) = (sparse(n, 0.2, &mut rng), sparse(m, 0.2, &mut rng));
            let (q, p) = (
                (&g1.indices[..], &g1.values[..]),
                (&g2.indices[..], &g2.values[..]),
            );
            let (sc, sg) = (carried.bilinear(q, p), gram.bilinear(q, p));
            assert!(
                (sc - sg).abs() <= 1e-9 * (1.0 + sc.abs()),
                "step {t}: {sc} vs {sg}"
            );
            let eta = -0.02 * (sc - target.bilinear(q, p));
            let x = carried
                .step(
                    ScaledSparse::new(&g1.indices, &g1.values, eta),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            let y = gram
                .step(
                    ScaledSparse::new(&g1.indices, &g1.values, eta),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            assert_eq!(x.applied, y.applied, "step {t}");
            assert!((x.s - y.s).abs() <= 1e-10 * (1.0 + x.s.abs()), "step {t}");
            if t % 97 == 0 || t + 1 == steps {
                let wc = carried.model().to_dense();
                let wg = gram.model().to_dense();
                let rel = max_abs(&(&wc - &wg)) / max_abs(&wc);
                worst = worst.max(rel);
                assert!(
                    rel < 1e-10,
                    "step {t}: |W_carried - W_gram| / |W| = {rel:e}"
                );
            }
        }
        let drift = gram.pinv_drift();
        assert!(drift < 1e-11, "drift {drift:e}");
        assert_eq!(gram.stats().updates, carried.stats().updates);
        let fit =
            max_abs(&(gram.model().to_dense() - target.to_dense())) / max_abs(&target.to_dense());
        eprintln!(
            "refresh every {refresh_every}: worst relative |dW| {worst:e}, drift {drift:e}, \
             |W - W*| / |W*| {fit:.2e}"
        );
    }

    #[test]
    fn gram_form_follows_the_carried_pseudo_inverses_step_for_step() {
        agree(DEFAULT_REFRESH_EVERY, 30_000, 1);
    }

    #[test]
    fn frequent_refreshes_change_nothing_but_rounding() {
        agree(7, 500, 2);
    }

    #[test]
    fn corner_cases_of_algorithm_7_are_classified_as_the_carried_form_does() {
        // The truncated identity: g in col(A) gives w = 0 exactly in the carried form and to
        // the cancellation level here; beta = 0 at s = 2 - 2 sqrt 3; both together: a skip.
        let (n, m, k) = (8, 7, 3);
        let eye = |r: usize| {
            let mut a = Array2::<f64>::zeros((r, k));
            for j in 0..k {
                a[[j, j]] = 1.0;
            }
            a
        };
        let tol = PinvTolerances::default();
        let id = || Loreta1Gram::new(eye(n), eye(m), tol, DEFAULT_REFRESH_EVERY).unwrap();
        let cid = || Loreta1::new(eye(n), eye(m), tol).unwrap();
        let s0 = 2.0 - 2.0 * 3f64.sqrt();
        type Case<'a> = (&'a [usize], &'a [f64], &'a [usize], &'a [f64]);
        let cases: [Case<'_>; 4] = [
            (&[0, 1], &[0.3, -0.2], &[1, 2], &[0.5, 0.1]), // w = 0 on both sides
            (&[0, k], &[0.3, 1.0], &[2, k + 1], &[0.2, 1.0]), // generic
            (&[0, k], &[1.0, 1.0], &[0, k], &[s0, 1.0]),   // beta = 0
            (&[0], &[1.0], &[0, k], &[s0, 1.0]),           // beta = 0 and w_A = 0: skipped
        ];
        for (i1, v1, i2, v2) in cases {
            let (mut g, mut c) = (id(), cid());
            let before = g.model().clone();
            let y = g
                .step(
                    ScaledSparse::new(i1, v1, 1.0),
                    ScaledSparse::new(i2, v2, 1.0),
                )
                .unwrap();
            let x = c
                .step(
                    ScaledSparse::new(i1, v1, 1.0),
                    ScaledSparse::new(i2, v2, 1.0),
                )
                .unwrap();
            assert_eq!((x.branch_a, x.branch_b), (y.branch_a, y.branch_b));
            assert_eq!(x.applied, y.applied);
            if y.applied {
                let rel = max_abs(&(c.model().to_dense() - g.model().to_dense()));
                assert!(rel < 1e-12, "{rel:e}");
                assert!(g.pinv_drift() < 1e-12);
            } else {
                assert_eq!(g.model().a(), before.a());
                assert_eq!(g.model().b(), before.b());
                assert_eq!(g.stats().rank_loss_skips, 1);
            }
        }
    }

    #[test]
    fn model_reads_do_not_change_the_trajectory_and_rebalance_keeps_w() {
        let (n, m, k) = (20, 15, 4);
        let mut rng = seeded(3);
        let (a, b) = (random(n, k, &mut rng), random(m, k, &mut rng));
        let grads: Vec<(SparseVec, SparseVec)> = (0..50)
            .map(|_| (sparse(n, 0.3, &mut rng), sparse(m, 0.3, &mut rng)))
            .collect();
        let tol = PinvTolerances::default();
        let run = |read: bool| {
            let mut st = Loreta1Gram::new(a.clone(), b.clone(), tol, 16).unwrap();
            replay(&grads, |g1, g2| {
                st.step(g1, g2).unwrap();
                if read {
                    st.model();
                }
            });
            st.model().clone()
        };
        assert_eq!(run(true), run(false));
        let mut st = Loreta1Gram::new(a, b, tol, 16).unwrap();
        for (g1, g2) in &grads {
            st.step(
                ScaledSparse::new(&g1.indices, &g1.values, 0.1),
                ScaledSparse::new(&g2.indices, &g2.values, 1.0),
            )
            .unwrap();
        }
        let w = st.model().to_dense();
        st.rebalance().unwrap();
        let after = st.model().to_dense();
        assert!(max_abs(&(&after - &w)) < 1e-10 * max_abs(&w));
        assert!(st.pinv_drift() < 1e-10);
        assert_eq!(st.stats().rebalances, 1);
        // The drift check does nothing on an exact state, and fires on a corrupted one.
        assert!(!st.check_pinvs(1e-8).unwrap());
        st.a.h[0] += 1e-3;
        assert!(st.check_pinvs(1e-8).unwrap());
        assert!(st.pinv_drift() < 1e-10);
        assert_eq!(st.stats().pinv_recomputes, 1);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let tol = PinvTolerances::default();
        let a = Array2::<f64>::eye(3);
        assert!(Loreta1Gram::new(a.clone(), Array2::zeros((3, 2)), tol, 8).is_err());
        assert!(Loreta1Gram::new(a.clone(), a.clone(), tol, 0).is_err());
        // A factor without full column rank has no Gram inverse.
        assert!(Loreta1Gram::new(Array2::zeros((3, 3)), a.clone(), tol, 8).is_err());
        let mut st = Loreta1Gram::new(a.clone(), a, tol, 8).unwrap();
        assert!(
            st.step(
                ScaledSparse::new(&[3], &[1.0], 1.0),
                ScaledSparse::new(&[0], &[1.0], 1.0)
            )
            .is_err()
        );
    }
}
