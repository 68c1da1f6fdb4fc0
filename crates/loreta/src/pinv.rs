//! The rank-one pseudo-inverse update of spec §2.4 (\[JMLR\] Algorithm 7, Meyer 1973), in the
//! corrected form of the spec: given `A` (`n x k`, full column rank) and `A^+`, the
//! correction `G` with `(A + c d^T)^+ = A^+ + G`, in `O(nk)`.
//!
//! Storage: `A` and `A^{+T}` are both `n x k` row-major slices (row `i` of `A^{+T}` is column
//! `i` of `A^+`), so every product below is a pass over contiguous rows. With
//!
//! ```text
//! v = A^+ c,  beta = 1 + d^T v,  nv = A^{+T} d,  nh = A^+ nv,  w = c - A v
//! ```
//!
//! the four branches, transposed (`G^T` is added to `A^{+T}` row by row), are
//!
//! ```text
//! beta != 0, w != 0:  G^T = w (nh/beta - sigma |nv|^2/beta t)^T - sigma nv t^T,
//!                     sigma = beta / (|w|^2 |nv|^2 + beta^2),  t = (|w|^2/beta) nh + v
//! beta  = 0, w != 0:  G^T = -nv nh^T / |nv|^2 - w v^T / |w|^2
//! beta != 0, w  = 0:  G^T = -nv v^T / beta
//! beta  = 0, w  = 0:  G^T = (v.nh)/(|v|^2 |nv|^2) nv v^T - (A^{+T} v) v^T / |v|^2
//!                           - nv nh^T / |nv|^2           (A + c d^T loses rank)
//! ```
//!
//! "Zero" is decided with the tolerances of [`PinvTolerances`] (spec §2.4 \[CHOICE\]:
//! `|beta| <= 1e-12` and `|w| <= 1e-12 max(1, |c|)`). Cost: two reading passes (over `A^{+T}`
//! for `v`, `nv`, `nh`; over `A` for `w`) and one writing pass over both, `O(nk)` time and
//! `O(n + k)` scratch. LORETA-1 ([`super::Loreta1`]) fuses these passes with its own and uses
//! the closed forms of spec §2.3; this literal version serves LORETA-1-PSD and the tests.

use dyad_kernels::linalg::{axpy, axpy2, dot};
use serde::{Deserialize, Serialize};

/// When `beta` and `w` count as zero in Algorithm 7 (spec §2.4 \[CHOICE\]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinvTolerances {
    /// `beta` is zero when `|beta| <= beta` (1e-12).
    #[serde(default = "default_tol")]
    pub beta: f64,
    /// `w` is zero when `|w| <= w max(1, |c|)` (1e-12).
    #[serde(default = "default_tol")]
    pub w: f64,
}

fn default_tol() -> f64 {
    1e-12
}

impl Default for PinvTolerances {
    fn default() -> Self {
        Self {
            beta: default_tol(),
            w: default_tol(),
        }
    }
}

impl dyad_kernels::Checked for PinvTolerances {
    fn check(&self) -> Result<(), dyad_kernels::ParamError> {
        use dyad_kernels::params::non_negative;
        non_negative("beta", self.beta)?;
        non_negative("w", self.w)
    }
}

/// Which case of Algorithm 7 applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinvBranch {
    /// `beta != 0`, `w != 0`.
    Generic,
    /// `beta = 0`, `w != 0`.
    BetaZero,
    /// `beta != 0`, `w = 0`: `c` lies in the column space of `A`.
    WZero,
    /// `beta = 0`, `w = 0`: `A + c d^T` has rank below `k` (the model leaves the manifold).
    RankLoss,
}

impl PinvBranch {
    /// Decide the branch from `beta`, `|w|` and `|c|`.
    pub fn decide(beta: f64, w_norm: f64, c_norm: f64, tol: PinvTolerances) -> Self {
        let beta_zero = beta.abs() <= tol.beta;
        let w_zero = w_norm <= tol.w * c_norm.max(1.0);
        match (beta_zero, w_zero) {
            (false, false) => Self::Generic,
            (true, false) => Self::BetaZero,
            (false, true) => Self::WZero,
            (true, true) => Self::RankLoss,
        }
    }
}

/// The row update `G^T_i = x_i r1 + y_i r2` shared by all branches, with `x`, `y` chosen among
/// `w` and `nv`, plus (rank-loss branch only) `(A^{+T}_i . v) r3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coef {
    Zero,
    W,
    Nv,
}

/// The `k`-vectors of the correction `G^T = x r1^T + y r2^T (+ (A^{+T} v) r3^T)` for a
/// branch, from the scalars and `k`-vectors of the update (`r1`, `r2`, `r3` are overwritten).
#[allow(clippy::too_many_arguments)]
pub(crate) fn correction(
    branch: PinvBranch,
    beta: f64,
    w2: f64,
    nv2: f64,
    v: &[f64],
    nh: &[f64],
    r1: &mut [f64],
    r2: &mut [f64],
    r3: &mut [f64],
) -> (Coef, Coef, bool) {
    r3.fill(0.0);
    match branch {
        PinvBranch::Generic => {
            let sigma = beta / (w2 * nv2 + beta * beta);
            // t = (|w|^2/beta) nh + v; r1 = nh/beta - sigma |nv|^2/beta t; r2 = -sigma t.
            for j in 0..v.len() {
                let t = w2 / beta * nh[j] + v[j];
                r1[j] = nh[j] / beta - sigma * nv2 / beta * t;
                r2[j] = -sigma * t;
            }
            (Coef::W, Coef::Nv, false)
        }
        PinvBranch::BetaZero => {
            for j in 0..v.len() {
                r1[j] = -nh[j] / nv2;
                r2[j] = -v[j] / w2;
            }
            (Coef::Nv, Coef::W, false)
        }
        PinvBranch::WZero => {
            for j in 0..v.len() {
                r1[j] = -v[j] / beta;
                r2[j] = 0.0;
            }
            (Coef::Nv, Coef::Zero, false)
        }
        PinvBranch::RankLoss => {
            let v2 = dot(v, v);
            let coef = dot(v, nh) / (v2 * nv2);
            for j in 0..v.len() {
                r1[j] = coef * v[j] - nh[j] / nv2;
                r2[j] = 0.0;
                r3[j] = -v[j] / v2;
            }
            (Coef::Nv, Coef::Zero, true)
        }
    }
}

/// Scratch space of [`rank_one_update`] (`O(n + k)`), reused across calls.
#[derive(Debug, Clone, Default)]
pub struct PinvScratch {
    nv: Vec<f64>,
    w: Vec<f64>,
    v: Vec<f64>,
    nh: Vec<f64>,
    r: [Vec<f64>; 3],
}

/// What an update found, before it is applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PinvPlan {
    pub branch: PinvBranch,
    pub beta: f64,
    /// `|w|^2`, `|nv|^2`, `|c|^2`.
    pub w2: f64,
    pub nv2: f64,
    pub c2: f64,
}

/// Compute `v`, `beta`, `nv`, `nh`, `w` for `A + c d^T` (no mutation): the first two passes.
/// `f` is `A`, `fp` is `A^{+T}`, both `n x k` row-major.
pub fn plan_rank_one(
    f: &[f64],
    fp: &[f64],
    k: usize,
    c: &[f64],
    d: &[f64],
    tol: PinvTolerances,
    s: &mut PinvScratch,
) -> PinvPlan {
    let n = c.len();
    debug_assert!(f.len() == n * k && fp.len() == n * k && d.len() == k);
    s.v.clear();
    s.v.resize(k, 0.0);
    s.nh.clear();
    s.nh.resize(k, 0.0);
    s.nv.clear();
    s.nv.resize(n, 0.0);
    s.w.clear();
    s.w.resize(n, 0.0);
    for r in &mut s.r {
        r.clear();
        r.resize(k, 0.0);
    }
    // Pass 1 over A^{+T}: v = A^+ c, nv = A^{+T} d, nh = A^+ nv.
    let mut nv2 = 0.0;
    for (i, row) in fp.chunks_exact(k.max(1)).take(n).enumerate() {
        let nvi = dot(row, d);
        s.nv[i] = nvi;
        nv2 += nvi * nvi;
        axpy(&mut s.v, c[i], row);
        axpy(&mut s.nh, nvi, row);
    }
    let beta = 1.0 + dot(d, &s.v);
    // Pass 2 over A: w = c - A v.
    let (mut w2, mut c2) = (0.0, 0.0);
    for (i, row) in f.chunks_exact(k.max(1)).take(n).enumerate() {
        let wi = c[i] - dot(row, &s.v);
        s.w[i] = wi;
        w2 += wi * wi;
        c2 += c[i] * c[i];
    }
    PinvPlan {
        branch: PinvBranch::decide(beta, w2.sqrt(), c2.sqrt(), tol),
        beta,
        w2,
        nv2,
        c2,
    }
}

/// Apply a planned update: `A <- A + c d^T`, `A^{+T} <- A^{+T} + G^T` (one pass over both).
pub fn apply_rank_one(
    f: &mut [f64],
    fp: &mut [f64],
    k: usize,
    c: &[f64],
    d: &[f64],
    plan: &PinvPlan,
    s: &mut PinvScratch,
) {
    let [r1, r2, r3] = &mut s.r;
    let (x, y, third) = correction(
        plan.branch,
        plan.beta,
        plan.w2,
        plan.nv2,
        &s.v,
        &s.nh,
        r1,
        r2,
        r3,
    );
    let pick = |which: Coef, i: usize| match which {
        Coef::Zero => 0.0,
        Coef::W => s.w[i],
        Coef::Nv => s.nv[i],
    };
    let kk = k.max(1);
    for (i, (frow, prow)) in f
        .chunks_exact_mut(kk)
        .zip(fp.chunks_exact_mut(kk))
        .enumerate()
    {
        if third {
            let pv = dot(prow, &s.v);
            axpy(prow, pv, r3);
        }
        axpy2(prow, pick(x, i), r1, pick(y, i), r2);
        axpy(frow, c[i], d);
    }
}

/// [`plan_rank_one`] then [`apply_rank_one`]: `A <- A + c d^T` and `A^{+T}` updated to match,
/// whatever the branch (in the rank-loss branch the result is the pseudo-inverse of the
/// rank-deficient matrix). Returns the plan.
pub fn rank_one_update(
    f: &mut [f64],
    fp: &mut [f64],
    k: usize,
    c: &[f64],
    d: &[f64],
    tol: PinvTolerances,
    s: &mut PinvScratch,
) -> PinvPlan {
    let plan = plan_rank_one(f, fp, k, c, d, tol, s);
    apply_rank_one(f, fp, k, c, d, &plan, s);
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::max_abs;
    use dyad_core::seeded;
    use dyad_kernels::linalg::pinv;
    use ndarray::{Array1, Array2};
    use rand::Rng as _;

    fn random(n: usize, m: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        Array2::from_shape_fn((n, m), |_| rng.random_range(-1.0..1.0))
    }

    /// Run the update on `(a, pinv(a))` and compare with the SVD pseudo-inverse of `a + c d^T`.
    fn check(a: &Array2<f64>, c: &Array1<f64>, d: &Array1<f64>, want: PinvBranch) {
        let (n, k) = a.dim();
        let mut f = a.clone();
        let mut fp = pinv(a.view()).unwrap().t().as_standard_layout().to_owned();
        let plan = rank_one_update(
            f.as_slice_mut().unwrap(),
            fp.as_slice_mut().unwrap(),
            k,
            c.as_slice().unwrap(),
            d.as_slice().unwrap(),
            PinvTolerances::default(),
            &mut PinvScratch::default(),
        );
        assert_eq!(plan.branch, want, "beta {} |w|^2 {}", plan.beta, plan.w2);
        let updated = a + &c
            .view()
            .insert_axis(ndarray::Axis(1))
            .dot(&d.view().insert_axis(ndarray::Axis(0)));
        assert!(max_abs(&(&f - &updated)) < 1e-14);
        let reference = pinv(updated.view()).unwrap();
        let err = max_abs(&(&fp.t() - &reference));
        assert!(
            err < 1e-12 * (1.0 + max_abs(&reference)),
            "{want:?}: |G - G_svd| = {err} (n = {n})"
        );
    }

    #[test]
    fn all_four_branches_match_the_svd_pseudo_inverse() {
        let (n, k) = (12, 3);
        // A = [Q; 0] with orthonormal Q (k x k) keeps the special cases exact in floating point.
        let a = {
            let mut a = Array2::<f64>::zeros((n, k));
            let (q, _, _) = dyad_kernels::linalg::thin_svd(random(k, k, 1).view()).unwrap();
            a.slice_mut(ndarray::s![..k, ..]).assign(&q);
            a
        };
        let ap = pinv(a.view()).unwrap();
        let mut rng = seeded(2);
        // Generic: random c (outside col A), random d.
        let c = Array1::from_shape_fn(n, |_| rng.random_range(-1.0..1.0));
        let d = Array1::from_shape_fn(k, |_| rng.random_range(-1.0..1.0));
        check(&a, &c, &d, PinvBranch::Generic);
        // Generic on a general dense A as well.
        check(&random(n, k, 3), &c, &d, PinvBranch::Generic);
        // w = 0: c = A x lies in col(A); beta = 1 + d^T x != 0.
        let x = Array1::from(vec![0.5, -0.25, 1.0]);
        let c_in = a.dot(&x);
        check(&a, &c_in, &d, PinvBranch::WZero);
        // beta = 0: d^T A^+ c = -1. Take c = A x + e_n (w = e_n != 0), d = -x / |x|^2.
        let mut c_out = c_in.clone();
        c_out[n - 1] = 1.0;
        let x2 = x.dot(&x);
        let d_neg = x.mapv(|v| -v / x2);
        assert!((1.0 + d_neg.dot(&ap.dot(&c_out))).abs() < 1e-15);
        check(&a, &c_out, &d_neg, PinvBranch::BetaZero);
        // beta = 0 and w = 0: A + c d^T loses rank; still the pseudo-inverse of the result.
        check(&a, &c_in, &d_neg, PinvBranch::RankLoss);
    }

    #[test]
    fn tolerances_are_validated() {
        use dyad_kernels::Checked;
        assert!(PinvTolerances::default().check().is_ok());
        let bad = PinvTolerances {
            beta: f64::NAN,
            w: 1e-12,
        };
        assert_eq!(bad.check().unwrap_err().param, "beta");
        let neg = PinvTolerances { beta: 0.0, w: -1.0 };
        assert_eq!(neg.check().unwrap_err().param, "w");
    }
}
