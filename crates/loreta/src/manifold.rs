//! The geometry of the manifold of rank-`k` matrices on dense `ndarray` factors (spec §1–2.2):
//! the tangent-space projection, the LORETA retraction in its two forms (Theorem 3 and the
//! factored Lemma 4), the naive Riemannian SGD step with explicit orthonormal complements
//! (Algorithm 2, `O(nm)` memory: a reference for tests) and LORETA-r for a rank-`r` gradient
//! (Algorithm 3, `O((n+m)(k+r)^2)`).
//!
//! Every function takes `W = A B^T` by its factors (`A`: `n x k`, `B`: `m x k`, both of full
//! column rank) and, following the spec's sign convention, the *already scaled descent
//! direction* `G = -eta grad L(W)`; each step returns the factors `Z1`, `Z2` of
//! `R_W(P_W(G)) = Z1 Z2^T`.

use dyad_kernels::AlgoError;
use dyad_kernels::linalg::{matmul, orthonormal_complement, pinv, pinv_transposed_full_rank};
use ndarray::{Array2, ArrayView2};

fn numerical(e: dyad_kernels::linalg::LinalgError) -> AlgoError {
    AlgoError::Numerical(format!("LORETA: {e}"))
}

/// `A^+` (`k x n`) of a factor of full column rank.
fn factor_pinv(a: ArrayView2<'_, f64>) -> Result<Array2<f64>, AlgoError> {
    Ok(pinv_transposed_full_rank(a)
        .map_err(numerical)?
        .reversed_axes()
        .as_standard_layout()
        .into_owned())
}

/// `I_k + x M + y M^2` for a square `M`.
fn poly(m: &Array2<f64>, x: f64, y: f64) -> Array2<f64> {
    let k = m.nrows();
    let m2 = matmul(m.view(), m.view());
    Array2::eye(k) + &(m * x) + &(&m2 * y)
}

/// The components of the projection of an ambient `Z` (`n x m`) onto `T_W M` (spec §1.3),
/// with the explicit orthonormal complements they are expressed in.
#[derive(Debug, Clone)]
pub struct TangentParts {
    /// `M = A^+ Z B^{+T}` (`k x k`).
    pub m: Array2<f64>,
    /// `N1 = B_perp^T Z^T A^{+T}` (`(m-k) x k`).
    pub n1: Array2<f64>,
    /// `N2 = A_perp^T Z B^{+T}` (`(n-k) x k`).
    pub n2: Array2<f64>,
    /// Orthonormal complements `A_perp` (`n x (n-k)`) and `B_perp` (`m x (m-k)`).
    pub a_perp: Array2<f64>,
    pub b_perp: Array2<f64>,
}

/// `M`, `N1`, `N2` of spec §1.3 (Algorithm 2, steps 1–5), complements from a full SVD.
pub fn tangent_parts(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    z: ArrayView2<'_, f64>,
) -> Result<TangentParts, AlgoError> {
    let (ap, bp) = (factor_pinv(a)?, factor_pinv(b)?);
    let a_perp = orthonormal_complement(a).map_err(numerical)?;
    let b_perp = orthonormal_complement(b).map_err(numerical)?;
    let zb = matmul(z, bp.t()); // Z B^{+T}, n x k
    let m = matmul(ap.view(), zb.view());
    let n2 = matmul(a_perp.t(), zb.view());
    let za = matmul(z.t(), ap.t()); // Z^T A^{+T}, m x k
    let n1 = matmul(b_perp.t(), za.view());
    Ok(TangentParts {
        m,
        n1,
        n2,
        a_perp,
        b_perp,
    })
}

/// `xi = A M B^T + A N1^T B_perp^T + A_perp N2 B^T` (spec §1.2): the tangent vector of the
/// parts.
pub fn tangent_from_parts(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    p: &TangentParts,
) -> Array2<f64> {
    let am = matmul(a, p.m.view());
    let mut xi = matmul(am.view(), b.t());
    let an1 = matmul(a, p.n1.t());
    xi += &matmul(an1.view(), p.b_perp.t());
    let pn2 = matmul(p.a_perp.view(), p.n2.view());
    xi += &matmul(pn2.view(), b.t());
    xi
}

/// The projectors `P_A = A A^+` (`n x n`) and `P_B` (`m x m`).
fn projectors(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
    let (ap, bp) = (factor_pinv(a)?, factor_pinv(b)?);
    Ok((matmul(a, ap.view()), matmul(b, bp.view())))
}

/// `P_W(Z) = P_A Z + Z P_B - P_A Z P_B` (the compact form of spec §1.3).
pub fn tangent_projection(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    z: ArrayView2<'_, f64>,
) -> Result<Array2<f64>, AlgoError> {
    let (pa, pb) = projectors(a, b)?;
    let paz = matmul(pa.view(), z);
    let pazpb = matmul(paz.view(), pb.view());
    Ok(&paz + &matmul(z, pb.view()) - &pazpb)
}

/// The retraction of Theorem 3, `R_W(xi) = V1 W^+ V2`, for `xi = P_W(Z)` (dense, `O(nm)`).
pub fn retraction_theorem3(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    z: ArrayView2<'_, f64>,
) -> Result<Array2<f64>, AlgoError> {
    let (pa, pb) = projectors(a, b)?;
    let (n, m) = (a.nrows(), b.nrows());
    let w = matmul(a, b.t());
    let w_pinv = pinv(w.view()).map_err(numerical)?;
    let qa = Array2::<f64>::eye(n) - &pa;
    let qb = Array2::<f64>::eye(m) - &pb;
    let x_ab = matmul(matmul(pa.view(), z).view(), pb.view());
    let x_aperp_b = matmul(matmul(qa.view(), z).view(), pb.view());
    let x_a_bperp = matmul(matmul(pa.view(), z).view(), qb.view());
    let sandwich =
        |l: &Array2<f64>, r: &Array2<f64>| matmul(matmul(l.view(), w_pinv.view()).view(), r.view());
    let common = &w + &(&x_ab * 0.5) - &(sandwich(&x_ab, &x_ab) * 0.125);
    let v1 = &common + &x_aperp_b - &(sandwich(&x_aperp_b, &x_ab) * 0.5);
    let v2 = &common + &x_a_bperp - &(sandwich(&x_ab, &x_a_bperp) * 0.5);
    Ok(sandwich(&v1, &v2))
}

/// Naive Riemannian SGD (Algorithm 2, = \[NIPS\] Algorithm 1): one step from `W = A B^T` along
/// the ambient descent matrix `G` (`n x m`), through explicit complements and the factored
/// retraction of Lemma 4:
///
/// ```text
/// Z1 = A (I + M/2 - M^2/8) + A_perp N2 (I - M/2)
/// Z2 = B (I + M^T/2 - (M^T)^2/8) + B_perp N1 (I - M^T/2)
/// ```
///
/// `O(n^2 + m^2)` memory and `O(n^3 + m^3)` time (the complements): a reference only.
pub fn naive_step(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    g: ArrayView2<'_, f64>,
) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
    let p = tangent_parts(a, b, g)?;
    let mt = p.m.t().to_owned();
    let mut z1 = matmul(a, poly(&p.m, 0.5, -0.125).view());
    let pn2 = matmul(p.a_perp.view(), p.n2.view());
    z1 += &matmul(pn2.view(), poly(&p.m, -0.5, 0.0).view());
    let mut z2 = matmul(b, poly(&mt, 0.5, -0.125).view());
    let pn1 = matmul(p.b_perp.view(), p.n1.view());
    z2 += &matmul(pn1.view(), poly(&mt, -0.5, 0.0).view());
    Ok((z1, z2))
}

/// LORETA-r (Algorithm 3, = \[NIPS\] Algorithm 2): one step from `W = A B^T` along the
/// descent `G1 G2^T` (`G1`: `n x r`, `G2`: `m x r`), never forming `A_perp`, `B_perp` or any
/// `n x m` matrix. The pseudo-inverses are computed from scratch (step 1, `O((n+m)k^2)`);
/// the rest is `O((n+m)(k+r)^2)`.
///
/// ```text
/// a1 = A^+ G1, b1 = B^+ G2, a2 = A a1, Q = b1^T a1
/// a3 = -a2/2 + 3/8 a2 Q + G1 - G1 Q/2,        Z1 = A + a3 b1^T
/// b2 = (G2^T B) B^+, b3 = -b2/2 + 3/8 Q b2 + G2^T - Q G2^T/2,   Z2^T = B^T + a1 b3
/// ```
pub fn loreta_r(
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
    g1: ArrayView2<'_, f64>,
    g2: ArrayView2<'_, f64>,
) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
    if g1.ncols() != g2.ncols() || g1.nrows() != a.nrows() || g2.nrows() != b.nrows() {
        return Err(AlgoError::data(format!(
            "LORETA-r: gradient factors {:?} and {:?} do not fit W = A B^T with A {:?}, B {:?}",
            g1.dim(),
            g2.dim(),
            a.dim(),
            b.dim()
        )));
    }
    let (ap, bp) = (factor_pinv(a)?, factor_pinv(b)?);
    let a1 = matmul(ap.view(), g1); // k x r
    let b1 = matmul(bp.view(), g2); // k x r
    let a2 = matmul(a, a1.view()); // n x r
    let q = matmul(b1.t(), a1.view()); // r x r
    let a3 =
        &a2 * -0.5 + &(matmul(a2.view(), q.view()) * 0.375) + g1 - &(matmul(g1, q.view()) * 0.5);
    let z1 = &a + &matmul(a3.view(), b1.t());
    let g2b = matmul(g2.t(), b); // r x k
    let b2 = matmul(g2b.view(), bp.view()); // r x m
    let b3 = &b2 * -0.5 + &(matmul(q.view(), b2.view()) * 0.375) + g2.t()
        - &(matmul(q.view(), g2.t()) * 0.5);
    let z2 = &b + &matmul(b3.t(), a1.t());
    Ok((z1, z2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::max_abs;
    use dyad_core::seeded;
    use rand::Rng as _;

    pub(crate) fn random(n: usize, m: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        Array2::from_shape_fn((n, m), |_| rng.random_range(-1.0..1.0))
    }

    fn fro(a: &Array2<f64>) -> f64 {
        a.iter().map(|v| v * v).sum::<f64>().sqrt()
    }

    const N: usize = 12;
    const M: usize = 9;
    const K: usize = 3;

    #[test]
    fn projection_from_the_parts_equals_the_compact_form_and_is_idempotent() {
        let (a, b, z) = (random(N, K, 1), random(M, K, 2), random(N, M, 3));
        let parts = tangent_parts(a.view(), b.view(), z.view()).unwrap();
        assert_eq!(parts.n1.dim(), (M - K, K));
        assert_eq!(parts.n2.dim(), (N - K, K));
        let from_parts = tangent_from_parts(a.view(), b.view(), &parts);
        let compact = tangent_projection(a.view(), b.view(), z.view()).unwrap();
        assert!(max_abs(&(&from_parts - &compact)) < 1e-12);
        // A projection: idempotent, and the residual is orthogonal to the tangent space.
        let again = tangent_projection(a.view(), b.view(), compact.view()).unwrap();
        assert!(max_abs(&(&again - &compact)) < 1e-12);
        let residual = &z - &compact;
        assert!((&residual * &compact).sum().abs() < 1e-12);
        // The equivalent form A X^T + Y B^T of \[JMLR\] Eq. (5): the residual is (I-P_A) Z (I-P_B).
        let (pa, pb) = projectors(a.view(), b.view()).unwrap();
        let want = (Array2::<f64>::eye(N) - &pa)
            .dot(&z)
            .dot(&(Array2::<f64>::eye(M) - &pb));
        assert!(max_abs(&(&residual - &want)) < 1e-12);
    }

    #[test]
    fn theorem3_equals_the_factored_lemma4() {
        let (a, b) = (random(N, K, 4), random(M, K, 5));
        // A moderate step: M small enough for the retraction's neighbourhood.
        let z = random(N, M, 6) * 0.3;
        let (z1, z2) = naive_step(a.view(), b.view(), z.view()).unwrap();
        let factored = z1.dot(&z2.t());
        let theorem3 = retraction_theorem3(a.view(), b.view(), z.view()).unwrap();
        assert!(
            max_abs(&(&factored - &theorem3)) < 1e-12,
            "{}",
            max_abs(&(&factored - &theorem3))
        );
        // R_W(0) = W (centering).
        let (z1, z2) = naive_step(a.view(), b.view(), Array2::zeros((N, M)).view()).unwrap();
        assert!(max_abs(&(&z1.dot(&z2.t()) - &a.dot(&b.t()))) < 1e-14);
    }

    #[test]
    fn loreta_r_agrees_with_the_naive_step_for_r_1_and_2() {
        let (a, b) = (random(N, K, 7), random(M, K, 8));
        for r in [1, 2] {
            let (g1, g2) = (random(N, r, 9 + r as u64), random(M, r, 20 + r as u64));
            let (g1, g2) = (g1 * 0.4, g2 * 0.4);
            let (z1, z2) = loreta_r(a.view(), b.view(), g1.view(), g2.view()).unwrap();
            let (n1, n2) = naive_step(a.view(), b.view(), g1.dot(&g2.t()).view()).unwrap();
            assert!(max_abs(&(&z1 - &n1)) < 1e-12, "r = {r}");
            assert!(max_abs(&(&z2 - &n2)) < 1e-12, "r = {r}");
        }
        let bad = loreta_r(
            a.view(),
            b.view(),
            random(N, 2, 1).view(),
            random(M, 1, 1).view(),
        );
        assert!(matches!(bad, Err(AlgoError::Data(_))));
    }

    #[test]
    fn the_retraction_is_second_order() {
        // xi = P_W(g1 g2^T): |R(t xi) - W - t xi| = O(t^2), its tangent part O(t^3).
        let (a, b) = (random(N, K, 30), random(M, K, 31));
        let g = random(N, 1, 32).dot(&random(M, 1, 33).t());
        let xi = tangent_projection(a.view(), b.view(), g.view()).unwrap();
        let w = a.dot(&b.t());
        let mut prev: Option<(f64, f64)> = None;
        for t in [1e-1, 1e-2, 1e-3] {
            let step = &xi * t;
            let (z1, z2) = naive_step(a.view(), b.view(), step.view()).unwrap();
            let rem = &z1.dot(&z2.t()) - &w - &step;
            let tangent = tangent_projection(a.view(), b.view(), rem.view()).unwrap();
            let (full, tan) = (fro(&rem), fro(&tangent));
            if let Some((pf, pt)) = prev {
                // One decade in t: two decades in the remainder, three in its tangent part.
                let (of, ot) = ((pf / full).log10(), (pt / tan).log10());
                assert!((of - 2.0).abs() < 0.1, "order {of}");
                assert!((ot - 3.0).abs() < 0.1, "order {ot} (tangent {tan:e})");
            }
            prev = Some((full, tan));
        }
        // The second-order term is A_perp N2 N1^T B_perp^T = (I-P_A) Z W^+ Z (I-P_B) [DERIVED].
        let t = 1e-3;
        let step = &xi * t;
        let (z1, z2) = naive_step(a.view(), b.view(), step.view()).unwrap();
        let rem = &z1.dot(&z2.t()) - &w - &step;
        let (pa, pb) = projectors(a.view(), b.view()).unwrap();
        let wp = pinv(w.view()).unwrap();
        let zt = &g * t;
        let second = (Array2::<f64>::eye(N) - &pa)
            .dot(&zt)
            .dot(&wp)
            .dot(&zt)
            .dot(&(Array2::<f64>::eye(M) - &pb));
        assert!(fro(&(&rem - &second)) < 1e-3 * fro(&second));
    }
}
