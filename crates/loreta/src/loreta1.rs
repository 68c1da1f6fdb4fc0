//! LORETA-1 (spec §2.3, \[JMLR\] Algorithm 4 with Algorithm 7): one retraction step for a
//! rank-one descent `g1 g2^T` in `O((n+m)k)` time, carrying the pseudo-inverses.
//!
//! # Storage
//!
//! `A` (`n x k`), `B` (`m x k`) and the *transposed* pseudo-inverses `A^{+T}`, `B^{+T}` (same
//! shapes), all row-major: **4nk floats** for `m = n` (16 MB at `n = m = 10^4`, `k = 50`),
//! plus `2(n + m) + O(k)` floats of scratch. Row `i` of `A^{+T}` is column `i` of `A^+`, so
//! `A^+ g1` for a sparse `g1` gathers `nnz(g1)` rows.
//!
//! # One step, fused
//!
//! The gradient factors `g1`, `g2` are sparse (a query document; a difference of two
//! documents; the label indicator `u` of the multilabel hinge). The algorithm box is
//! evaluated with the \[DERIVED\] closed forms of spec §2.3, which hold because `A^+ A = I`:
//!
//! ```text
//! a1 = A^+ g1, b1 = B^+ g2, s = b1 . a1                 (gathers, O((nnz g1 + nnz g2) k))
//! a2 = A a1 = P_A g1 = A^{+T} (A^T g1)                 (A^T g1: a gather)
//! a3 = a2 (-1/2 + 3s/8) + g1 (1 - s/2),     Z1 = A + a3 b1^T
//! b2 = P_B g2 = B^{+T} (B^T g2),
//! b3 = b2 (-1/2 + 3s/8) + g2 (1 - s/2),     Z2 = B + b3 a1^T
//! Algorithm 7 on (A, A^+, c = a3, d = b1):  v = A^+ a3 = (1/2 - s/8) a1,
//!     beta = 1 + s/2 - s^2/8,  w = a3 - A v = (1 - s/2)(g1 - a2),
//!     nv = A^{+T} b1,  nh = A^+ nv                     (and symmetrically for B with a1)
//! ```
//!
//! so a step needs, per factor, a reading pass over `A^{+T}` (two dot products and one axpy
//! per row: `a2`, `nv`, `nh`, and the norms `|w|`, `|nv|`, `|a3|` that choose the Algorithm 7
//! branch) and then a writing pass (`A_i += a3_i b1`, `A^{+T}_i += x_i r1 + y_i r2`, the
//! branch's rank-two correction, see [`super::pinv`]): the writing pass needs `nh` and the
//! norms, sums over all rows. `P_A g1` is read off `A^{+T} A^T g1` instead of `A A^+ g1`
//! (equal for the exact pseudo-inverse) so that `A` itself is only written.
//!
//! **Deferred writes.** The writing pass of step `t` is deferred and fused with the reading
//! pass of step `t + 1`: each step makes *one* pass over `A`, `A^{+T}` (and over `B`,
//! `B^{+T}`), which applies the last step's rank-one/rank-two row updates and then reads the
//! updated row for this step (row by row, so this step still sees the complete old factors).
//! The deferred write is `O(n + k)` of state (`proj`, `nv`, `g`, `d`, `r1`, `r2`). Everything
//! that reads the model goes through it: the gathers of the next step and
//! [`Loreta1::bilinear`] (the triplet losses) rebuild the few rows they need with the same
//! floating-point operations as the pass, and [`Loreta1::model`], [`Loreta1::flush`] and the
//! safeguards apply it. [`Loreta1::score_labels`] (the label losses), which reads every row
//! of `A`, applies the `A` half of the write in place, and the next pass then skips `A`
//! (bench `loreta_step/loreta1_labels`, 1,660 labels x 1,000 words, scoring and step: 2.56
//! -> 1.33-1.65 ms at rank 400, 264 -> 170-200 us at rank 50, one run each on a noisy
//! machine; a rank-400 F8 cell's model selection 165 -> 113-123 s, the same bits). The
//! trajectory is therefore the same bits whenever (and whether) the model is flushed or the
//! labels are scored (tested), e.g. at checkpoints. About
//! `12 (n + m) k` flops per step; the literal Algorithm 7 ([`super::pinv::rank_one_update`])
//! would add a pass over each factor. The closed forms are checked against the literal
//! algorithm (and both against SVD pseudo-inverses) in the tests.
//!
//! **Speed.** The pass is compiled for AVX-512, AVX2 and the baseline (`dyad_kernels::simd`), the
//! widest one chosen at run time, with bit-identical results. Measured
//! (`benches/loreta_step.rs`, AVX-512, AMD EPYC Zen 4 at about 3.6 GHz, one core of a
//! 2-core VM whose other core runs a memory-heavy job): 0.77 ms per step at `n = m = 10^4`,
//! `k = 50` in a quiet moment (0.31 ms at `k = 10`, 1.8 ms at `k = 100`, 0.11 ms at `n = m =
//! 10^3`, 8.9 ms at `n = m = 10^5`), 1.2-1.4 ms when the other core loads the shared cache
//! and memory. The issue's target is 0.5 ms. The floor, per step at `n = m = 10^4`, `k =
//! 50`: (a) memory: every entry of `A`, `A^{+T}`, `B`, `B^{+T}` changes at every step, so a
//! step reads and writes all 16 MB; the bench's bare read-modify-write `sweep` over the same
//! 16 MB takes 0.30 ms quiet (0.44-0.46 ms loaded); (b) arithmetic: 12 flops per element
//! (`A_i += a3_i d`: 2; `A^{+T}_i += x r1 + y r2`: 4; two dot products: 4; `nh`: 2), with
//! no fused multiply-add (the bits are fixed by the unfused order; on Zen 4 fusing would
//! not help much anyway, with about one 512-bit multiply or FMA and one 512-bit add per
//! cycle), i.e. about `12 (n+m) k / 16` cycles = 0.21 ms. The measured 0.77 ms is above even
//! the sum of the two plus the gathers of the 300 rows of `g1`, `g2` (about 0.03 ms): the
//! memory stalls and the arithmetic do not overlap, and the per-row scalar work (sparse
//! walks, reduction trees, the `k mod 8` tail) adds the rest. Tried and measured slower or
//! no better (experiments, not kept): two rows at a time sharing the loads of the
//! `k`-vectors (the interleaved rows defeat the hardware prefetcher: 2x slower at `k =
//! 100`), one row at a time with the eight rows' dot-product trees reduced lane-parallel
//! and `nh` updated once per eight rows (within noise at `k = 50`, 15% slower at `k =
//! 100`), software prefetch (10% slower). What would lower the floor is less memory
//! traffic, not fewer instructions: e.g. deferring the writes of `A`, `B` (which the step
//! only writes, and reads only at the gathered rows) over several steps, which removed
//! about 20% of the step in an experiment that skipped them.
//!
//! **The Gram form** ([`super::gram::Loreta1Gram`]) removes the pass itself: `A^+ = (A^T
//! A)^{-1} A^T` is kept implicit through the `k x k` Gram matrix and `A = U M`, so a step
//! touches only the rows in the gradients' supports, `O((nnz g1 + nnz g2) k + k^2)`; the same
//! iterates to rounding (tested against this state over 30,000 steps). Measured in one
//! criterion run on a shared core at `n = m = 10^4`, `k = 50`: 67 µs against 1.57 ms per
//! step (23x); under callgrind 0.42 M instructions against 10.5 M (gates
//! `loreta1_gram_step_10k`, `loreta1_step_10k`). This state stays the default: it is the
//! paper's algorithm, linear in `n` and `k` as the paper states.
//!
//! All updates read the *old* `A`, `A^+`, `B`, `B^+` (spec §2.3 in-place order \[CHOICE\]):
//! the reading passes of both factors run before either is written.
//!
//! # Events and safeguards (spec §2.7)
//!
//! * A non-finite `s`, `beta`, `|w|` or `|nv|` is an [`AlgoError::Numerical`] (safeguard 2),
//!   raised before the step changes the model (the previous step's deferred write may have
//!   been applied: the state stays consistent).
//! * The Algorithm 7 branch of each factor is counted ([`LoretaStats`], safeguard 3). A step
//!   whose factor would lose rank (`beta = 0` and `w = 0`, spec §2.3: `s = 2 +- 2 sqrt 3`
//!   with `g1` in `col(A)`) is skipped and counted (spec §2.4 \[CHOICE\]: skip).
//! * [`Loreta1::pinv_drift`] / [`Loreta1::recompute_pinvs`]: the drift check of safeguard 1
//!   (the learners run it every `check_every` steps).
//! * [`Loreta1::rebalance`]: an extra safeguard, not in the papers: refactor `W = A B^T`
//!   into balanced factors `A = U_A U S^{1/2}`, `B = U_B V S^{1/2}` (thin SVDs of both
//!   factors and of the `k x k` core) with exact pseudo-inverses, `O((n+m)k^2)`. The
//!   retraction depends on `W` and `xi` only (Theorem 3), not on the factorisation, so this
//!   leaves the trajectory of `W` unchanged up to rounding (tested); it bounds the
//!   imbalance `|A| / |B|` that the invariance `W = (A M)(B M^{-T})^T` lets drift.

use super::model::{LoretaStats, LowRankModel};
use super::pinv::{Coef, PinvBranch, PinvTolerances, correction};
use dyad_kernels::linalg::{axpy, axpy2, dot, matmul, pinv_transposed_full_rank, thin_svd};
use dyad_kernels::simd::{Isa, dot2, multiversion, update_dot2};
use dyad_kernels::{AlgoError, Checked};
use ndarray::Array2;

/// A sparse vector `scale * (indices, values)`, indices strictly increasing.
#[derive(Debug, Clone, Copy)]
pub struct ScaledSparse<'a> {
    pub indices: &'a [usize],
    pub values: &'a [f64],
    pub scale: f64,
}

impl<'a> ScaledSparse<'a> {
    pub fn new(indices: &'a [usize], values: &'a [f64], scale: f64) -> Self {
        debug_assert_eq!(indices.len(), values.len());
        Self {
            indices,
            values,
            scale,
        }
    }

    /// Whether every index is below `dim` (indices are increasing: the last one decides).
    pub fn fits(&self, dim: usize) -> bool {
        self.indices.last().is_none_or(|&i| i < dim)
    }

    /// Whether the vector is zero (empty, zero scale or all-zero values).
    pub fn is_zero(&self) -> bool {
        self.scale == 0.0 || self.values.iter().all(|&v| v == 0.0)
    }
}

/// Per-factor scratch, and the deferred write of the last step (module docs): `F += a3 d^T`,
/// `F^{+T} += x r1^T + y r2^T`, with `a3_i = p proj_i + q g_i`, `w_i = r (g_i - proj_i)`.
#[derive(Debug, Clone)]
struct Side {
    /// `(P_F g)_i` and `nv_i` of the last step (length `n`).
    proj: Vec<f64>,
    nv: Vec<f64>,
    nh: Vec<f64>,
    v: Vec<f64>,
    r1: Vec<f64>,
    r2: Vec<f64>,
    r3: Vec<f64>,
    /// `F^+ g` and `F^T g` of the current step.
    own: Vec<f64>,
    cross: Vec<f64>,
    /// The deferred write: its `d`, its `g` (scaled), its coefficients and row factors.
    d: Vec<f64>,
    g_idx: Vec<usize>,
    g_val: Vec<f64>,
    coefs: Coefs,
    x: Coef,
    y: Coef,
    /// Two rows of scratch for rows read with the deferred write applied.
    row_f: Vec<f64>,
    row_p: Vec<f64>,
    /// Whether the deferred write's `F += a3 d^T` part is already applied (by
    /// [`Loreta1::score_labels`], which reads every row of `A` anyway), leaving only `F^{+T}`'s.
    f_done: bool,
}

impl Side {
    fn new(n: usize, k: usize) -> Self {
        Self {
            proj: vec![0.0; n],
            nv: vec![0.0; n],
            nh: vec![0.0; k],
            v: vec![0.0; k],
            r1: vec![0.0; k],
            r2: vec![0.0; k],
            r3: vec![0.0; k],
            own: vec![0.0; k],
            cross: vec![0.0; k],
            d: vec![0.0; k],
            g_idx: Vec::new(),
            g_val: Vec::new(),
            coefs: Coefs::new(0.0),
            x: Coef::Zero,
            y: Coef::Zero,
            row_f: vec![0.0; k],
            row_p: vec![0.0; k],
            f_done: false,
        }
    }

    /// `(a3_i, x_i, y_i)` of the deferred write at row `i`, given the deferred `g_i`.
    #[inline(always)]
    fn deferred(&self, i: usize, gi: f64) -> (f64, f64, f64) {
        let (c, pi, ni) = (self.coefs, self.proj[i], self.nv[i]);
        let wi = c.r * (gi - pi);
        let pick = |which: Coef| match which {
            Coef::Zero => 0.0,
            Coef::W => wi,
            Coef::Nv => ni,
        };
        (c.p * pi + c.q * gi, pick(self.x), pick(self.y))
    }

    /// The deferred `g_i` (binary search; `O(log nnz)`).
    fn deferred_g(&self, i: usize) -> f64 {
        self.g_idx
            .binary_search(&i)
            .map_or(0.0, |at| self.g_val[at])
    }
}

/// Rows `i` of `F` and `F^{+T}` as they are once the deferred write is applied (the same
/// operations as the writing pass, so the same bits: `y + a x` written out instead of a copy
/// and an `axpy`), into `side.row_f` and, with `with_p`, `side.row_p`.
fn updated_rows(
    f: &[f64],
    fp: &[f64],
    k: usize,
    i: usize,
    pending: bool,
    with_p: bool,
    side: &mut Side,
) {
    let (fr, pr) = (&f[i * k..(i + 1) * k], &fp[i * k..(i + 1) * k]);
    if !pending {
        side.row_f.copy_from_slice(fr);
        if with_p {
            side.row_p.copy_from_slice(pr);
        }
        return;
    }
    let (a3, x, y) = side.deferred(i, side.deferred_g(i));
    let Side {
        row_f,
        row_p,
        d,
        r1,
        r2,
        f_done,
        ..
    } = side;
    if *f_done {
        row_f.copy_from_slice(fr);
    } else {
        for ((o, &v), &dj) in row_f.iter_mut().zip(fr).zip(d.iter()) {
            *o = v + a3 * dj;
        }
    }
    if with_p {
        for (((o, &v), &u), &w) in row_p.iter_mut().zip(pr).zip(r1.iter()).zip(r2.iter()) {
            *o = v + (x * u + y * w);
        }
    }
}

/// `own = F^+ g` and `cross = F^T g` with the deferred write applied: `O(nnz(g) k)`.
fn gather(f: &[f64], fp: &[f64], k: usize, g: ScaledSparse<'_>, pending: bool, side: &mut Side) {
    side.own.fill(0.0);
    side.cross.fill(0.0);
    for (&i, &v) in g.indices.iter().zip(g.values) {
        updated_rows(f, fp, k, i, pending, true, side);
        let Side {
            own,
            cross,
            row_f,
            row_p,
            ..
        } = side;
        axpy(own, g.scale * v, row_p);
        axpy(cross, g.scale * v, row_f);
    }
}

/// The scalars of a factor's reading pass.
#[derive(Debug, Clone, Copy)]
struct Norms {
    nv2: f64,
    w2: f64,
    c2: f64,
}

/// Coefficients of `a3 = proj * p + g * q` and `w = (g - proj) * r` for a given `s`.
#[derive(Debug, Clone, Copy)]
struct Coefs {
    p: f64,
    q: f64,
    r: f64,
}

impl Coefs {
    fn new(s: f64) -> Self {
        Self {
            p: -0.5 + 0.375 * s,
            q: 1.0 - 0.5 * s,
            r: 1.0 - 0.5 * s,
        }
    }
}

/// The next entry of a sparse vector walked in row order.
#[inline(always)]
fn next_value(idx: &[usize], val: &[f64], scale: f64, at: &mut usize, i: usize) -> f64 {
    if idx.get(*at) == Some(&i) {
        *at += 1;
        scale * val[*at - 1]
    } else {
        0.0
    }
}

/// The one pass of a step over a factor: apply the deferred write of the last step to row
/// `i` (when `pending`), then read the updated `F^{+T}_i` for this step: `proj_i =
/// F^{+T}_i . cross` (`= (P_F g)_i`), `nv_i = F^{+T}_i . d`, `nh += nv_i F^{+T}_i`, and the
/// norms of `nv`, `w`, `c = a3`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fused_pass_body<const W: u8>(
    f: &mut [f64],
    fp: &mut [f64],
    k: usize,
    pending: bool,
    g: ScaledSparse<'_>,
    d: &[f64],
    c: Coefs,
    side: &mut Side,
) -> Norms {
    let Side {
        proj,
        nv,
        nh,
        cross,
        r1,
        r2,
        d: dd,
        g_idx,
        g_val,
        coefs: pc,
        x: px,
        y: py,
        f_done,
        ..
    } = side;
    let write_f = !*f_done;
    nh.fill(0.0);
    let (mut nv2, mut w2, mut c2) = (0.0, 0.0, 0.0);
    let (mut next, mut pnext) = (0, 0);
    for (i, (frow, prow)) in f
        .chunks_exact_mut(k)
        .zip(fp.chunks_exact_mut(k))
        .enumerate()
    {
        let (pi, ni) = if pending {
            let gp = next_value(g_idx, g_val, 1.0, &mut pnext, i);
            let (pp, np) = (proj[i], nv[i]);
            let wp = pc.r * (gp - pp);
            let pick = |which: Coef| match which {
                Coef::Zero => 0.0,
                Coef::W => wp,
                Coef::Nv => np,
            };
            if write_f {
                axpy(frow, pc.p * pp + pc.q * gp, dd);
            }
            update_dot2::<W>(prow, pick(*px), r1, pick(*py), r2, cross, d)
        } else {
            dot2::<W>(prow, cross, d)
        };
        proj[i] = pi;
        nv[i] = ni;
        axpy(nh, ni, prow);
        let gi = next_value(g.indices, g.values, g.scale, &mut next, i);
        let wi = c.r * (gi - pi);
        let ci = c.p * pi + c.q * gi;
        nv2 += ni * ni;
        w2 += wi * wi;
        c2 += ci * ci;
    }
    Norms { nv2, w2, c2 }
}

/// Apply the deferred write alone (a flush): the same row operations as the fused pass.
#[inline(always)]
fn write_pass_body<const W: u8>(f: &mut [f64], fp: &mut [f64], k: usize, side: &Side) {
    let mut pnext = 0;
    for (i, (frow, prow)) in f
        .chunks_exact_mut(k)
        .zip(fp.chunks_exact_mut(k))
        .enumerate()
    {
        let gp = next_value(&side.g_idx, &side.g_val, 1.0, &mut pnext, i);
        let (a3, x, y) = side.deferred(i, gp);
        if !side.f_done {
            axpy(frow, a3, &side.d);
        }
        axpy2(prow, x, &side.r1, y, &side.r2);
    }
}

multiversion!(fused_pass, fused_pass_body, (f: &mut [f64], fp: &mut [f64], k: usize, pending: bool, g: ScaledSparse<'_>, d: &[f64], c: Coefs, side: &mut Side) -> Norms);
multiversion!(write_pass, write_pass_body, (f: &mut [f64], fp: &mut [f64], k: usize, side: &Side) -> ());

/// What one LORETA-1 step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loreta1Step {
    /// `s = tr M = b1 . a1`.
    pub s: f64,
    /// `beta = 1 + s/2 - s^2/8`, the `beta` of both pseudo-inverse updates.
    pub beta: f64,
    /// Algorithm 7 branches of the `A` and `B` updates.
    pub branch_a: PinvBranch,
    pub branch_b: PinvBranch,
    /// `false` when the step was skipped (rank loss, or a zero gradient).
    pub applied: bool,
}

impl Loreta1Step {
    /// What every form of the step does before any arithmetic: gradient factors outside the
    /// `n x m` model are an error, a zero descent is a skipped step (`Some`); else `None`.
    pub(crate) fn screen(
        g1: ScaledSparse<'_>,
        g2: ScaledSparse<'_>,
        n: usize,
        m: usize,
    ) -> Result<Option<Self>, AlgoError> {
        if !g1.fits(n) || !g2.fits(m) {
            return Err(AlgoError::data(format!(
                "LORETA: gradient factors exceed the model's {n} x {m} shape"
            )));
        }
        Ok((g1.is_zero() || g2.is_zero()).then_some(Self {
            s: 0.0,
            beta: 1.0,
            branch_a: PinvBranch::Generic,
            branch_b: PinvBranch::Generic,
            applied: false,
        }))
    }
}

/// The LORETA-1 state: the model `W = A B^T` and the transposed pseudo-inverses, with the
/// last step's write deferred (module docs).
#[derive(Debug, Clone)]
pub struct Loreta1 {
    model: LowRankModel,
    ap: Array2<f64>,
    bp: Array2<f64>,
    tol: PinvTolerances,
    side_a: Side,
    side_b: Side,
    /// Whether the last step's write is still to be applied.
    pending: bool,
    isa: Isa,
}

fn numerical(what: &str, e: impl std::fmt::Display) -> AlgoError {
    AlgoError::Numerical(format!("LORETA: {what}: {e}"))
}

impl Loreta1 {
    /// Start from `W = A B^T` (both of full column rank `k`); the pseudo-inverses are computed
    /// once, `O((n+m)k^2)` (spec §2.8).
    pub fn new(a: Array2<f64>, b: Array2<f64>, tol: PinvTolerances) -> Result<Self, AlgoError> {
        let k = a.ncols();
        if k == 0 || b.ncols() != k {
            return Err(AlgoError::data(format!(
                "LORETA: factors must have the same positive number of columns, got {} and {}",
                k,
                b.ncols()
            )));
        }
        tol.check()?;
        let ap = pinv_transposed_full_rank(a.view()).map_err(|e| numerical("A", e))?;
        let bp = pinv_transposed_full_rank(b.view()).map_err(|e| numerical("B", e))?;
        let (n, m) = (a.nrows(), b.nrows());
        Ok(Self {
            model: LowRankModel::new(a, b),
            ap: ap.as_standard_layout().into_owned(),
            bp: bp.as_standard_layout().into_owned(),
            tol,
            side_a: Side::new(n, k),
            side_b: Side::new(m, k),
            pending: false,
            isa: Isa::detect(),
        })
    }

    /// Apply the deferred write of the last step (one pass over both factors; a no-op when
    /// there is none).
    pub fn flush(&mut self) {
        if !self.pending {
            return;
        }
        let k = self.model.rank();
        let (fa, fb) = self.model.factors_mut();
        write_pass(
            self.isa,
            fa.as_slice_mut().expect("standard layout"),
            self.ap.as_slice_mut().expect("standard layout"),
            k,
            &self.side_a,
        );
        write_pass(
            self.isa,
            fb.as_slice_mut().expect("standard layout"),
            self.bp.as_slice_mut().expect("standard layout"),
            k,
            &self.side_b,
        );
        self.pending = false;
        self.side_a.f_done = false;
        self.side_b.f_done = false;
    }

    /// The model, with every step applied.
    pub fn model(&mut self) -> &LowRankModel {
        self.flush();
        &self.model
    }

    pub fn stats(&self) -> &LoretaStats {
        &self.model.stats
    }

    /// `A^{+T}` (`n x k`), with every step applied.
    pub fn a_pinv_t(&mut self) -> &Array2<f64> {
        self.flush();
        &self.ap
    }

    /// `B^{+T}` (`m x k`), with every step applied.
    pub fn b_pinv_t(&mut self) -> &Array2<f64> {
        self.flush();
        &self.bp
    }

    /// Floats held by the state (factors and pseudo-inverses; scratch excluded): `2(n+m)k`.
    pub fn memory_floats(&self) -> usize {
        2 * (self.model.rows() + self.model.cols()) * self.model.rank()
    }

    /// `F^T x` (`F = A` for `left`, else `B`) of the current model without flushing, the same
    /// bits as after [`Loreta1::flush`].
    fn project_current(&mut self, left: bool, idx: &[usize], val: &[f64], out: &mut [f64]) {
        let k = self.model.rank();
        let pending = self.pending;
        let (f, fp, side) = if left {
            (self.model.a(), &self.ap, &mut self.side_a)
        } else {
            (self.model.b(), &self.bp, &mut self.side_b)
        };
        let (f, fp) = (
            f.as_slice().expect("standard layout"),
            fp.as_slice().expect("standard layout"),
        );
        out.fill(0.0);
        for (&i, &v) in idx.iter().zip(val) {
            updated_rows(f, fp, k, i, pending, false, side);
            axpy(out, v, &side.row_f);
        }
    }

    /// `q^T W p` of the current model (`O((nnz q + nnz p) k)`, no flush; the same bits as
    /// [`LowRankModel::bilinear`] after a flush).
    pub fn bilinear(&mut self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
        let k = self.model.rank();
        let (mut u, mut v) = (vec![0.0; k], vec![0.0; k]);
        self.project_current(true, q.0, q.1, &mut u);
        self.project_current(false, p.0, p.1, &mut v);
        dot(&u, &v)
    }

    /// The scores `W x` of every row label of the current model (`O(nnz(x) k + n k)`; the
    /// same bits as [`LabelScorer::score_labels`](super::LabelScorer) after a flush). It reads
    /// every row of `A`, so it applies the deferred write's `A` part on the way (the same
    /// row operation as the writing pass), and the next step's pass then leaves `A` alone:
    /// one pass over `A` a step instead of two, and none over `A^{+T}` here.
    pub fn score_labels(&mut self, x: (&[usize], &[f64]), out: &mut [f64]) {
        let k = self.model.rank();
        let mut c = vec![0.0; k];
        self.project_current(false, x.0, x.1, &mut c);
        let write = self.pending && !self.side_a.f_done;
        let side = &mut self.side_a;
        let (a, _) = self.model.factors_mut();
        let a = a.as_slice_mut().expect("standard layout");
        let mut at = 0;
        for (i, (o, row)) in out.iter_mut().zip(a.chunks_exact_mut(k)).enumerate() {
            if write {
                let gi = next_value(&side.g_idx, &side.g_val, 1.0, &mut at, i);
                let (a3, _, _) = side.deferred(i, gi);
                axpy(row, a3, &side.d);
            }
            *o = dot(row, &c);
        }
        if write {
            side.f_done = true;
        }
    }

    /// One LORETA-1 step along the descent `g1 g2^T` (`g1` over the `n` rows of `W`, `g2` over
    /// its `m` columns; the step size is folded into their scales). Skipped (and reported so)
    /// when the descent is zero or a factor would lose rank. The step's own write is deferred
    /// to the next step (or [`Loreta1::flush`]).
    pub fn step(
        &mut self,
        g1: ScaledSparse<'_>,
        g2: ScaledSparse<'_>,
    ) -> Result<Loreta1Step, AlgoError> {
        let (n, m, k) = (self.model.rows(), self.model.cols(), self.model.rank());
        if let Some(nothing) = Loreta1Step::screen(g1, g2, n, m)? {
            return Ok(nothing);
        }
        let pending = self.pending;
        let isa = self.isa;
        // a1 = A^+ g1, A^T g1; b1 = B^+ g2, B^T g2 (of the current model).
        {
            let (a, b) = (
                self.model.a().as_slice().expect("standard layout"),
                self.model.b().as_slice().expect("standard layout"),
            );
            let (ap, bp) = (
                self.ap.as_slice().expect("standard layout"),
                self.bp.as_slice().expect("standard layout"),
            );
            gather(a, ap, k, g1, pending, &mut self.side_a);
            gather(b, bp, k, g2, pending, &mut self.side_b);
        }
        let (sa, sb) = (&mut self.side_a, &mut self.side_b);
        let s = dot(&sa.own, &sb.own);
        let beta = 1.0 + 0.5 * s - 0.125 * s * s;
        if !s.is_finite() {
            return Err(numerical("non-finite s = tr M", s));
        }
        let coefs = Coefs::new(s);
        // One pass per factor: the last step's write, then this step's reading (the old A^+,
        // B^+ of this step: both factors are read before this step writes anything).
        let (fa, fb) = self.model.factors_mut();
        let na = fused_pass(
            isa,
            fa.as_slice_mut().expect("standard layout"),
            self.ap.as_slice_mut().expect("standard layout"),
            k,
            pending,
            g1,
            &sb.own,
            coefs,
            sa,
        );
        let nb = fused_pass(
            isa,
            fb.as_slice_mut().expect("standard layout"),
            self.bp.as_slice_mut().expect("standard layout"),
            k,
            pending,
            g2,
            &sa.own,
            coefs,
            sb,
        );
        self.pending = false;
        for (what, v) in [
            ("|w_A|", na.w2),
            ("|nv_A|", na.nv2),
            ("|a3|", na.c2),
            ("|w_B|", nb.w2),
            ("|nv_B|", nb.nv2),
            ("|b3|", nb.c2),
        ] {
            if !v.is_finite() {
                return Err(numerical(&format!("non-finite {what}"), v));
            }
        }
        let branch_a = PinvBranch::decide(beta, na.w2.sqrt(), na.c2.sqrt(), self.tol);
        let branch_b = PinvBranch::decide(beta, nb.w2.sqrt(), nb.c2.sqrt(), self.tol);
        let stats = &mut self.model.stats;
        if branch_a == PinvBranch::RankLoss || branch_b == PinvBranch::RankLoss {
            stats.rank_loss_skips += 1;
            return Ok(Loreta1Step {
                s,
                beta,
                branch_a,
                branch_b,
                applied: false,
            });
        }
        stats.record_update(s, [branch_a, branch_b]);
        // v = A^+ a3 = (1/2 - s/8) a1, the branch's correction vectors, and the deferred
        // write (d = the other factor's projection, g, coefficients).
        let vs = 0.5 - 0.125 * s;
        let defer =
            |side: &mut Side, other_own: &[f64], g: ScaledSparse<'_>, branch, norms: Norms| {
                for (v, &o) in side.v.iter_mut().zip(&side.own) {
                    *v = vs * o;
                }
                let Side {
                    v, nh, r1, r2, r3, ..
                } = side;
                let (x, y, _) = correction(branch, beta, norms.w2, norms.nv2, v, nh, r1, r2, r3);
                side.x = x;
                side.y = y;
                side.coefs = coefs;
                side.d.copy_from_slice(other_own);
                side.g_idx.clear();
                side.g_idx.extend_from_slice(g.indices);
                side.g_val.clear();
                side.g_val.extend(g.values.iter().map(|&v| g.scale * v));
                side.f_done = false;
            };
        defer(sa, &sb.own, g1, branch_a, na);
        defer(sb, &sa.own, g2, branch_b, nb);
        self.pending = true;
        Ok(Loreta1Step {
            s,
            beta,
            branch_a,
            branch_b,
            applied: true,
        })
    }

    /// `max(|A^+ A - I|_max, |B^+ B - I|_max)`: how far the carried pseudo-inverses have
    /// drifted (`O((n+m)k^2)`; flushes first).
    pub fn pinv_drift(&mut self) -> f64 {
        self.flush();
        let k = self.model.rank();
        let eye = Array2::<f64>::eye(k);
        let dev = |f: &Array2<f64>, fp: &Array2<f64>| {
            (&matmul(fp.t(), f.view()) - &eye)
                .iter()
                .fold(0.0f64, |m, v| m.max(v.abs()))
        };
        dev(self.model.a(), &self.ap).max(dev(self.model.b(), &self.bp))
    }

    /// Recompute both pseudo-inverses from scratch (`O((n+m)k^2)`).
    pub fn recompute_pinvs(&mut self) -> Result<(), AlgoError> {
        self.flush();
        self.ap =
            pinv_transposed_full_rank(self.model.a().view()).map_err(|e| numerical("A", e))?;
        self.bp =
            pinv_transposed_full_rank(self.model.b().view()).map_err(|e| numerical("B", e))?;
        self.model.stats.pinv_recomputes += 1;
        Ok(())
    }

    /// Safeguard 1 of spec §2.7: recompute the pseudo-inverses when their drift exceeds
    /// `tolerance`. Returns whether it fired.
    pub fn check_pinvs(&mut self, tolerance: f64) -> Result<bool, AlgoError> {
        let drift = self.pinv_drift();
        if !drift.is_finite() {
            return Err(numerical("non-finite pseudo-inverse drift", drift));
        }
        if drift > tolerance {
            self.recompute_pinvs()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Refactor `W = A B^T` into balanced factors with exact pseudo-inverses (module docs).
    pub fn rebalance(&mut self) -> Result<(), AlgoError> {
        self.flush();
        let (na, nb, ap, bp) = balanced_factors(self.model.a(), self.model.b())?;
        self.ap = ap;
        self.bp = bp;
        let stats = self.model.stats;
        self.model = LowRankModel::new(na, nb);
        self.model.stats = stats;
        self.model.stats.rebalances += 1;
        Ok(())
    }

    /// Force the instruction set of the passes (tests: every version gives the same bits).
    #[cfg(test)]
    pub(crate) fn set_isa(&mut self, isa: Isa) {
        self.isa = isa;
    }

    /// Corrupt `A^{+T}` by `delta` at one entry (tests of the drift safeguard).
    #[cfg(test)]
    pub(crate) fn perturb_pinv(&mut self, delta: f64) {
        self.flush();
        self.ap[[0, 0]] += delta;
    }
}

/// `(A', B', A'^{+T}, B'^{+T})`.
pub(crate) type Balanced = (Array2<f64>, Array2<f64>, Array2<f64>, Array2<f64>);

/// Balanced factors of `W = A B^T` (module docs, [`Loreta1::rebalance`]): `A' = U_A U
/// S^{1/2}`, `B' = U_B V S^{1/2}` from the thin SVDs of both factors and of the `k x k` core,
/// with their transposed pseudo-inverses `U_A U S^{-1/2}`, `U_B V S^{-1/2}`.
pub(crate) fn balanced_factors(a: &Array2<f64>, b: &Array2<f64>) -> Result<Balanced, AlgoError> {
    let (ua, sa, va) = thin_svd(a.view()).map_err(|e| numerical("SVD of A", e))?;
    let (ub, sb, vb) = thin_svd(b.view()).map_err(|e| numerical("SVD of B", e))?;
    // core = S_A V_A^T V_B S_B (k x k).
    let mut left = va.t().to_owned();
    for (mut row, &s) in left.rows_mut().into_iter().zip(&sa) {
        row *= s;
    }
    let mut right = vb.t().to_owned();
    for (mut row, &s) in right.rows_mut().into_iter().zip(&sb) {
        row *= s;
    }
    let core = matmul(left.view(), right.t());
    let (u, s, v) = thin_svd(core.view()).map_err(|e| numerical("SVD of the core", e))?;
    let k = s.len();
    if s[k - 1].is_nan() || s[k - 1] <= 0.0 {
        return Err(numerical("rebalance", "W has lost rank"));
    }
    let scaled = |basis: &Array2<f64>, rot: &Array2<f64>, pow: f64| {
        let mut r = rot.clone();
        for (mut col, &sj) in r.columns_mut().into_iter().zip(&s) {
            col *= sj.powf(pow);
        }
        matmul(basis.view(), r.view())
    };
    let (na, nb) = (scaled(&ua, &u, 0.5), scaled(&ub, &v, 0.5));
    let (ap, bp) = (scaled(&ua, &u, -0.5), scaled(&ub, &v, -0.5));
    Ok((na, nb, ap, bp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifold::{loreta_r, naive_step};
    use crate::pinv::{PinvScratch, rank_one_update};
    use crate::testing::{max_abs, random, sparse};
    use dyad_core::{SparseVec, seeded};
    use dyad_kernels::linalg::pinv;
    use ndarray::{Array1, Axis};
    use rand::Rng as _;

    fn dense(v: &SparseVec, d: usize, scale: f64) -> Array1<f64> {
        Array1::from(v.to_dense(d)) * scale
    }

    fn outer(x: &Array1<f64>, y: &Array1<f64>) -> Array2<f64> {
        x.view()
            .insert_axis(Axis(1))
            .dot(&y.view().insert_axis(Axis(0)))
    }

    const N: usize = 12;
    const M: usize = 9;
    const K: usize = 3;

    #[test]
    fn one_step_agrees_with_algorithms_2_and_3_and_carries_exact_pseudo_inverses() {
        let mut rng = seeded(1);
        for trial in 0..20 {
            let (a, b) = (random(N, K, &mut rng), random(M, K, &mut rng));
            let mut st = Loreta1::new(a.clone(), b.clone(), PinvTolerances::default()).unwrap();
            let (g1, g2) = (sparse(N, 0.5, &mut rng), sparse(M, 0.5, &mut rng));
            let eta = 0.3;
            let out = st
                .step(
                    ScaledSparse::new(&g1.indices, &g1.values, eta),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            assert!(out.applied);
            let (d1, d2) = (dense(&g1, N, eta), dense(&g2, M, 1.0));
            let (z1, z2) = naive_step(a.view(), b.view(), outer(&d1, &d2).view()).unwrap();
            let e1 = max_abs(&(st.model().a() - &z1));
            let e2 = max_abs(&(st.model().b() - &z2));
            assert!(e1 < 1e-12 && e2 < 1e-12, "trial {trial}: {e1:e} {e2:e}");
            let (r1, r2) = loreta_r(
                a.view(),
                b.view(),
                d1.view().insert_axis(Axis(1)),
                d2.view().insert_axis(Axis(1)),
            )
            .unwrap();
            assert!(max_abs(&(st.model().a() - &r1)) < 1e-12);
            assert!(max_abs(&(st.model().b() - &r2)) < 1e-12);
            // The carried pseudo-inverses are those of Z1 and Z2.
            let pa = pinv(z1.view()).unwrap();
            let pb = pinv(z2.view()).unwrap();
            assert!(max_abs(&(&st.a_pinv_t().t() - &pa)) < 1e-11 * (1.0 + max_abs(&pa)));
            assert!(max_abs(&(&st.b_pinv_t().t() - &pb)) < 1e-11 * (1.0 + max_abs(&pb)));
            // beta = 1 + s/2 - s^2/8, and s = tr M with M = A^+ G B^{+T}.
            let mm = pinv(a.view())
                .unwrap()
                .dot(&outer(&d1, &d2))
                .dot(&pinv(b.view()).unwrap().t());
            assert!((out.s - mm.diag().sum()).abs() < 1e-12);
            assert_eq!(out.beta, 1.0 + out.s / 2.0 - out.s * out.s / 8.0);
        }
    }

    /// The literal Algorithm 4 + Algorithm 7 (pseudo-inverse updates by
    /// [`rank_one_update`], old factors for both), on dense factors.
    struct Literal {
        a: Array2<f64>,
        b: Array2<f64>,
        ap: Array2<f64>,
        bp: Array2<f64>,
    }

    impl Literal {
        /// One step; returns the `beta` of the two pseudo-inverse updates.
        fn step(&mut self, g1: &Array1<f64>, g2: &Array1<f64>) -> (f64, f64) {
            let k = self.a.ncols();
            let a1 = self.ap.t().dot(g1);
            let b1 = self.bp.t().dot(g2);
            let a2 = self.a.dot(&a1);
            let s = b1.dot(&a1);
            let a3 = &a2 * (-0.5 + 0.375 * s) + g1 * (1.0 - 0.5 * s);
            let b2 = self.bp.dot(&self.b.t().dot(g2));
            let b3 = &b2 * (-0.5 + 0.375 * s) + g2 * (1.0 - 0.5 * s);
            let tol = PinvTolerances::default();
            let mut scratch = PinvScratch::default();
            let pa = rank_one_update(
                self.a.as_slice_mut().unwrap(),
                self.ap.as_slice_mut().unwrap(),
                k,
                a3.as_slice().unwrap(),
                b1.as_slice().unwrap(),
                tol,
                &mut scratch,
            );
            let pb = rank_one_update(
                self.b.as_slice_mut().unwrap(),
                self.bp.as_slice_mut().unwrap(),
                k,
                b3.as_slice().unwrap(),
                a1.as_slice().unwrap(),
                tol,
                &mut scratch,
            );
            (pa.beta, pb.beta)
        }
    }

    #[test]
    fn fused_step_tracks_the_literal_algorithms_4_and_7_over_many_steps() {
        let mut rng = seeded(2);
        let (a, b) = (random(N, K, &mut rng), random(M, K, &mut rng));
        let mut st = Loreta1::new(a.clone(), b.clone(), PinvTolerances::default()).unwrap();
        let mut lit = Literal {
            ap: st.a_pinv_t().clone(),
            bp: st.b_pinv_t().clone(),
            a,
            b,
        };
        for _ in 0..200 {
            let (g1, g2) = (sparse(N, 0.3, &mut rng), sparse(M, 0.3, &mut rng));
            let eta = 0.1;
            let out = st
                .step(
                    ScaledSparse::new(&g1.indices, &g1.values, eta),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            let (beta_a, beta_b) = lit.step(&dense(&g1, N, eta), &dense(&g2, M, 1.0));
            // Both pseudo-inverse updates have beta = 1 + s/2 - s^2/8 (spec §2.10 item 7).
            let closed = 1.0 + out.s / 2.0 - out.s * out.s / 8.0;
            assert!((beta_a - closed).abs() < 1e-12 && (beta_b - closed).abs() < 1e-12);
        }
        let scale = 1.0 + max_abs(&lit.a) + max_abs(&lit.ap);
        assert!(max_abs(&(st.model().a() - &lit.a)) < 1e-10 * scale);
        assert!(max_abs(&(st.model().b() - &lit.b)) < 1e-10 * scale);
        assert!(max_abs(&(st.a_pinv_t() - &lit.ap)) < 1e-10 * scale);
        assert!(max_abs(&(st.b_pinv_t() - &lit.bp)) < 1e-10 * scale);
        assert!(st.pinv_drift() < 1e-12);
    }

    /// `[I_k; 0]` (`n x k`).
    fn truncated_identity(n: usize, k: usize) -> Array2<f64> {
        Array2::from_shape_fn((n, k), |(i, j)| f64::from(u8::from(i == j)))
    }

    #[test]
    fn special_branches_fire_where_the_closed_forms_say() {
        let (n, k) = (10, 3);
        let tol = PinvTolerances::default();
        let id = || Loreta1::new(truncated_identity(n, k), truncated_identity(n, k), tol).unwrap();
        // w = 0: with A = B = [I_k; 0], gradient factors supported on the first k coordinates
        // lie in col(A) and col(B) exactly (spec §2.3 practical note).
        let mut st = id();
        let out = st
            .step(
                ScaledSparse::new(&[0, 2], &[0.3, -0.2], 1.0),
                ScaledSparse::new(&[1], &[0.5], 1.0),
            )
            .unwrap();
        assert_eq!(
            (out.branch_a, out.branch_b),
            (PinvBranch::WZero, PinvBranch::WZero)
        );
        assert_eq!(st.stats().branch_w_zero, 2);
        let check_pinv = |st: &mut Loreta1| {
            st.flush();
            for (f, fp) in [(st.model.a(), &st.ap), (st.model.b(), &st.bp)] {
                let p = pinv(f.view()).unwrap();
                assert!(max_abs(&(&fp.t() - &p)) < 1e-12 * (1.0 + max_abs(&p)));
            }
        };
        check_pinv(&mut st);
        // beta = 0 (s = 2 - 2 sqrt 3) with w != 0 on both sides: g1 = e_0 + e_k,
        // g2 = s e_0 + e_k, so a1 = e_0, b1 = s e_0.
        let s0 = 2.0 - 2.0 * 3f64.sqrt();
        let mut st = id();
        let out = st
            .step(
                ScaledSparse::new(&[0, k], &[1.0, 1.0], 1.0),
                ScaledSparse::new(&[0, k], &[s0, 1.0], 1.0),
            )
            .unwrap();
        assert!(out.beta.abs() < 1e-15, "beta {}", out.beta);
        assert_eq!(
            (out.branch_a, out.branch_b),
            (PinvBranch::BetaZero, PinvBranch::BetaZero)
        );
        assert!(out.applied);
        check_pinv(&mut st);
        // beta = 0 and w = 0: Z1 would lose rank; the step is skipped and counted.
        let mut st = id();
        let before = st.model().clone();
        let out = st
            .step(
                ScaledSparse::new(&[0], &[1.0], 1.0),
                ScaledSparse::new(&[0, k], &[s0, 1.0], 1.0),
            )
            .unwrap();
        assert_eq!(out.branch_a, PinvBranch::RankLoss);
        assert!(!out.applied);
        assert_eq!(st.model().a(), before.a());
        assert_eq!(st.model().b(), before.b());
        assert_eq!(st.stats().rank_loss_skips, 1);
        // A zero gradient is no step at all.
        let out = st
            .step(
                ScaledSparse::new(&[], &[], 1.0),
                ScaledSparse::new(&[1], &[1.0], 1.0),
            )
            .unwrap();
        assert!(!out.applied);
    }

    #[test]
    fn non_finite_gradients_are_errors_and_leave_the_model_untouched() {
        let mut rng = seeded(3);
        let mut st = Loreta1::new(
            random(N, K, &mut rng),
            random(M, K, &mut rng),
            PinvTolerances::default(),
        )
        .unwrap();
        let before = st.model().clone();
        for bad in [f64::NAN, f64::INFINITY, 1e300] {
            let err = st.step(
                ScaledSparse::new(&[0, 3], &[1.0, bad], 1.0),
                ScaledSparse::new(&[1], &[1e300], 1.0),
            );
            assert!(
                matches!(err, Err(AlgoError::Numerical(_))),
                "{bad}: {err:?}"
            );
        }
        assert_eq!(st.model().a(), before.a());
        assert_eq!(st.model().b(), before.b());
        // Out-of-range indices are an input error.
        let err = st.step(
            ScaledSparse::new(&[N], &[1.0], 1.0),
            ScaledSparse::new(&[0], &[1.0], 1.0),
        );
        assert!(matches!(err, Err(AlgoError::Data(_))));
    }

    #[test]
    fn drift_check_fires_only_on_drift_and_repairs_it() {
        let mut rng = seeded(4);
        let mut st = Loreta1::new(
            random(N, K, &mut rng),
            random(M, K, &mut rng),
            PinvTolerances::default(),
        )
        .unwrap();
        for _ in 0..100 {
            let (g1, g2) = (sparse(N, 0.3, &mut rng), sparse(M, 0.3, &mut rng));
            st.step(
                ScaledSparse::new(&g1.indices, &g1.values, 0.1),
                ScaledSparse::new(&g2.indices, &g2.values, 1.0),
            )
            .unwrap();
        }
        assert!(!st.check_pinvs(1e-8).unwrap(), "drift {}", st.pinv_drift());
        st.perturb_pinv(1e-6);
        assert!(st.pinv_drift() > 1e-8);
        assert!(st.check_pinvs(1e-8).unwrap());
        assert!(st.pinv_drift() < 1e-13);
        assert_eq!(st.stats().pinv_recomputes, 1);
    }

    #[test]
    fn rebalancing_keeps_w_and_the_trajectory() {
        let mut rng = seeded(5);
        // Badly balanced start: A large, B small.
        let (a, b) = (
            random(N, K, &mut rng) * 100.0,
            random(M, K, &mut rng) * 0.01,
        );
        let mut plain = Loreta1::new(a.clone(), b.clone(), PinvTolerances::default()).unwrap();
        let mut balanced = plain.clone();
        balanced.rebalance().unwrap();
        let w0 = plain.model().to_dense();
        assert!(max_abs(&(&balanced.model().to_dense() - &w0)) < 1e-12 * max_abs(&w0));
        let (na, nb) = (max_abs(balanced.model().a()), max_abs(balanced.model().b()));
        assert!(na / nb < 10.0 && nb / na < 10.0, "{na} {nb}");
        assert!(balanced.pinv_drift() < 1e-12);
        for t in 0..100 {
            let (g1, g2) = (sparse(N, 0.3, &mut rng), sparse(M, 0.3, &mut rng));
            for st in [&mut plain, &mut balanced] {
                st.step(
                    ScaledSparse::new(&g1.indices, &g1.values, 0.1),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            }
            if t % 10 == 9 {
                balanced.rebalance().unwrap();
            }
        }
        let (wp, wb) = (plain.model().to_dense(), balanced.model().to_dense());
        assert!(
            max_abs(&(&wp - &wb)) < 1e-9 * max_abs(&wp),
            "{}",
            max_abs(&(&wp - &wb))
        );
        assert_eq!(balanced.stats().rebalances, 11);
    }

    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        let mut rng = seeded(6);
        let (n, k) = (40, 13); // k not a multiple of 8: remainders exercised
        let (a, b) = (random(n, k, &mut rng), random(n, k, &mut rng));
        let grads: Vec<(SparseVec, SparseVec)> = (0..30)
            .map(|_| (sparse(n, 0.3, &mut rng), sparse(n, 0.3, &mut rng)))
            .collect();
        let run = |isa: Isa| {
            let mut st = Loreta1::new(a.clone(), b.clone(), PinvTolerances::default()).unwrap();
            st.set_isa(isa);
            for (g1, g2) in &grads {
                st.step(
                    ScaledSparse::new(&g1.indices, &g1.values, 0.2),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            }
            st
        };
        let mut base = run(Isa::Baseline);
        for isa in Isa::available() {
            let mut other = run(isa);
            assert_eq!(other.model().a(), base.model().a(), "{isa:?}");
            assert_eq!(other.model().b(), base.model().b(), "{isa:?}");
            assert_eq!(other.a_pinv_t(), base.a_pinv_t(), "{isa:?}");
            assert_eq!(other.b_pinv_t(), base.b_pinv_t(), "{isa:?}");
        }
    }

    /// Spec §2.10 / the issue: a million LORETA-1 steps on random rank-one gradients keep
    /// `W` of rank exactly `k`, the factors well conditioned and the carried pseudo-inverses
    /// exact, with no safeguard. The gradients are those of a stochastic matrix-sensing loss
    /// `(x^T (W - W*) y + e)^2 / 2` for random `x`, `y`, noise `e` and a fixed rank-`k`
    /// target `W*`, so the trajectory stays bounded (a pure random walk would wander off in
    /// norm and rank) while every step stays non-trivial.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "a million steps: release mode only")]
    fn a_million_random_rank_one_steps_stay_on_the_manifold() {
        let (n, m, k) = (30, 20, 4);
        let mut rng = seeded(11);
        // W* = U diag(1..2) V^T.
        let (u, _, _) = dyad_kernels::linalg::thin_svd(random(n, k, &mut rng).view()).unwrap();
        let (v, _, _) = dyad_kernels::linalg::thin_svd(random(m, k, &mut rng).view()).unwrap();
        let sv: Vec<f64> = (0..k).map(|j| 1.0 + j as f64 / (k - 1) as f64).collect();
        let target = {
            let mut us = u.clone();
            for (mut col, &s) in us.columns_mut().into_iter().zip(&sv) {
                col *= s;
            }
            us.dot(&v.t()).as_standard_layout().into_owned()
        };
        let mut st = Loreta1::new(
            crate::init::truncated_identity(n, k),
            crate::init::truncated_identity(m, k),
            PinvTolerances::default(),
        )
        .unwrap();
        let (idx_n, idx_m): (Vec<usize>, Vec<usize>) = ((0..n).collect(), (0..m).collect());
        let (mut x, mut y) = (vec![0.0; n], vec![0.0; m]);
        let (mut wx, mut ty) = (vec![0.0; k], vec![0.0; k]);
        // Step 0.1 along the rank-one direction x y^T (|x||y| about 1): stable, and about
        // 80 time constants n m / 0.1 in a million steps.
        let eta = 0.1;
        let steps = 1_000_000;
        for _ in 0..steps {
            // Uniform entries of variance 1/n (cheaper than Gaussian draws).
            for v in x.iter_mut() {
                *v = rng.random_range(-1.0..1.0) * (3.0 / n as f64).sqrt();
            }
            for v in y.iter_mut() {
                *v = rng.random_range(-1.0..1.0) * (3.0 / m as f64).sqrt();
            }
            // residual r = x^T (W - W*) y, W = A B^T.
            LowRankModel::project(st.model().a().view(), &idx_n, &x, &mut wx);
            LowRankModel::project(st.model().b().view(), &idx_m, &y, &mut ty);
            // Observation noise keeps every step non-trivial at the stationary point.
            let noise = 0.05 * rng.random_range(-1.0..1.0);
            let r = noise + dot(&wx, &ty)
                - x.iter()
                    .zip(target.rows())
                    .map(|(xi, row)| xi * dot(row.as_slice().unwrap(), &y))
                    .sum::<f64>();
            st.step(
                ScaledSparse::new(&idx_n, &x, -eta * r),
                ScaledSparse::new(&idx_m, &y, 1.0),
            )
            .unwrap();
        }
        let w = st.model().to_dense();
        let (_, s, _) = dyad_kernels::linalg::thin_svd(w.view()).unwrap();
        assert!(s[k - 1] > 0.5 && s[k] < 1e-12 * s[0], "singular values {s}");
        let rel = max_abs(&(&w - &target)) / max_abs(&target);
        assert!(rel < 0.2, "W far from W*: {rel}");
        let cond = |f: &Array2<f64>| {
            let (_, s, _) = dyad_kernels::linalg::thin_svd(f.view()).unwrap();
            s[0] / s[k - 1]
        };
        let (ca, cb) = (cond(st.model().a()), cond(st.model().b()));
        assert!(ca < 100.0 && cb < 100.0, "cond(A) = {ca}, cond(B) = {cb}");
        let drift = st.pinv_drift();
        assert!(drift < 1e-10, "pseudo-inverse drift {drift:e}");
        let stats = *st.stats();
        assert_eq!(stats.rank_loss_skips, 0);
        assert!(stats.updates > steps / 2);
        eprintln!(
            "after {steps} steps: sigma {s:.3}, |W - W*|/|W*| = {rel:.2e}, cond A {ca:.2}, \
             cond B {cb:.2}, drift {drift:.2e}, max |s| {:.3}",
            stats.max_abs_s
        );
    }

    #[test]
    fn deferred_writes_give_the_same_bits_whenever_they_are_flushed() {
        // The same gradient stream, with the model read (flushed) after every step, every
        // seventh step, or only at the end, and the labels scored (which applies the
        // deferred write's A part) before every step, every third one or never: identical
        // factors, pseudo-inverses and scores.
        let mut rng = seeded(8);
        let (a, b) = (random(N, K, &mut rng), random(M, K, &mut rng));
        let grads: Vec<(SparseVec, SparseVec)> = (0..60)
            .map(|_| (sparse(N, 0.3, &mut rng), sparse(M, 0.3, &mut rng)))
            .collect();
        let run = |every: usize, score_every: usize| {
            let mut st = Loreta1::new(a.clone(), b.clone(), PinvTolerances::default()).unwrap();
            let (mut seen, mut labels_seen) = (Vec::new(), Vec::new());
            let mut labels = vec![0.0; N];
            for (t, (g1, g2)) in grads.iter().enumerate() {
                // The scores the learners compute before a step, from the current model.
                let (q, p) = (
                    (&g1.indices[..], &g1.values[..]),
                    (&g2.indices[..], &g2.values[..]),
                );
                seen.push(st.bilinear(q, p));
                if t % score_every == 0 {
                    st.score_labels(p, &mut labels);
                    labels_seen.extend_from_slice(&labels);
                    // Read again once the A part is applied: the same bits.
                    seen.push(st.bilinear(q, p));
                    st.score_labels(p, &mut labels);
                    labels_seen.extend_from_slice(&labels);
                } else {
                    // Scored on a copy, so this run's state keeps the whole deferred write.
                    seen.push(st.bilinear(q, p));
                    st.clone().score_labels(p, &mut labels);
                    labels_seen.extend_from_slice(&labels);
                    labels_seen.extend_from_slice(&labels);
                }
                st.step(
                    ScaledSparse::new(&g1.indices, &g1.values, 0.2),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
                if t % every == 0 {
                    st.flush();
                }
            }
            let model = st.model().clone();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            (
                model,
                st.a_pinv_t().clone(),
                st.b_pinv_t().clone(),
                bits(&seen),
                bits(&labels_seen),
            )
        };
        let always = run(1, 1);
        for (every, score_every) in [
            (7, 1),
            (usize::MAX, 1),
            (1, 3),
            (7, 3),
            (usize::MAX, usize::MAX),
        ] {
            let other = run(every, score_every);
            assert_eq!(other.0.a(), always.0.a());
            assert_eq!(other.0.b(), always.0.b());
            assert_eq!(other.1, always.1);
            assert_eq!(other.2, always.2);
            assert_eq!(other.3, always.3);
            assert_eq!(other.4, always.4);
        }
        // And the scores of the current model are those of the flushed model.
        let mut st = Loreta1::new(a.clone(), b.clone(), PinvTolerances::default()).unwrap();
        let (g1, g2) = &grads[0];
        st.step(
            ScaledSparse::new(&g1.indices, &g1.values, 0.2),
            ScaledSparse::new(&g2.indices, &g2.values, 1.0),
        )
        .unwrap();
        let lazy = st.bilinear((&g1.indices, &g1.values), (&g2.indices, &g2.values));
        let flushed = st
            .model()
            .bilinear((&g1.indices, &g1.values), (&g2.indices, &g2.values));
        assert_eq!(lazy.to_bits(), flushed.to_bits());
    }
}
