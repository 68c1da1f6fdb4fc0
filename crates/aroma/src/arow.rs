//! AROW for vectors (Crammer, Kulesza & Dredze 2009), AROMA spec §2.1, and its diagonal form
//! (§2.2): the reference the matrix forms reduce to.
//!
//! A Gaussian `N(w, Σ)` over weight vectors; on a round with input `x` and label `y = ±1`
//! the objective (3)
//!
//! ```text
//! L(w, Σ) = KL(N(w, Σ) || N(w_prev, Σ_prev)) + (1/2r) max(0, 1 - y w^T x)^2 + (1/2r) x^T Σ x
//! ```
//!
//! is minimised in closed form by (4):
//!
//! ```text
//! v = x^T Σ x,   β = 1 / (v + r),   α = max(0, 1 - y x^T w) β,
//! w ← w + α y Σ x,   Σ ← Σ - β (Σ x)(Σ x)^T.
//! ```
//!
//! [`Arow`] keeps the full `d x d` covariance (a test oracle for tiny `d`: "AROW-vector" on
//! `vec(q p^T)` needs `(mn)^2` entries). [`DiagonalArow`] keeps only its diagonal `σ` and
//! applies the diagonal of (4) (§2.2): `σ ← σ - (σ ⊙ x ⊙ x ⊙ σ) / (v + r)` with
//! `v = Σ_k σ_k x_k^2`, on sparse inputs in `O(nnz(x))`.
//!
//! Both update only on rounds selected by the [`Update`] rule (AROW's own algorithm updates
//! when `y w^T x < 1`), start from `w = 0`, `Σ = I` (standard AROW; spec §2.1) and keep the
//! hinge and confidence of every round in an [`ArowStep`].

use super::{Update, check_r};
use dyad_kernels::AlgoError;
use ndarray::{Array1, Array2, ArrayView1};

/// What one round of AROW (or AROMA) saw and did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArowStep {
    /// The signed margin `y w^T x` before the round (AROMA: `q^T W p`).
    pub margin: f64,
    /// The hinge loss `max(0, 1 - margin)`.
    pub loss: f64,
    /// The confidence `v = x^T Σ x` before the round (f-AROMA: `a b`); 0 when not updated.
    pub confidence: f64,
    /// The step size `α` of the mean update (0 when not updated).
    pub alpha: f64,
    /// Whether the rule fired and the state changed (a zero input fires but changes nothing).
    pub updated: bool,
}

impl ArowStep {
    /// A prediction mistake: `margin <= 0` (a tie counts as a mistake, spec §1).
    pub fn mistake(&self) -> bool {
        self.margin.is_nan() || self.margin <= 0.0
    }

    pub(crate) fn passive(margin: f64) -> Self {
        Self {
            margin,
            loss: (1.0 - margin).max(0.0),
            confidence: 0.0,
            alpha: 0.0,
            updated: false,
        }
    }
}

/// AROW with a full covariance (dense; for small `d`).
#[derive(Debug, Clone, PartialEq)]
pub struct Arow {
    w: Array1<f64>,
    sigma: Array2<f64>,
    r: f64,
}

impl Arow {
    /// `w = 0`, `Σ = I`.
    pub fn new(d: usize, r: f64) -> Result<Self, AlgoError> {
        Self::from_parts(Array1::zeros(d), Array2::eye(d), r)
    }

    /// From a mean and a symmetric positive-definite covariance (not checked beyond shape).
    pub fn from_parts(w: Array1<f64>, sigma: Array2<f64>, r: f64) -> Result<Self, AlgoError> {
        check_r(r)?;
        if sigma.dim() != (w.len(), w.len()) {
            return Err(AlgoError::data(format!(
                "AROW: covariance {:?} does not match mean length {}",
                sigma.dim(),
                w.len()
            )));
        }
        Ok(Self { w, sigma, r })
    }

    pub fn mean(&self) -> &Array1<f64> {
        &self.w
    }

    pub fn covariance(&self) -> &Array2<f64> {
        &self.sigma
    }

    pub fn r(&self) -> f64 {
        self.r
    }

    /// One round on `(x, y)`: the update (4) when `rule` fires on the margin `y w^T x`.
    pub fn update(&mut self, x: ArrayView1<'_, f64>, y: f64, rule: Update) -> ArowStep {
        assert_eq!(x.len(), self.w.len(), "input length");
        let margin = y * self.w.dot(&x);
        if !rule.fires(margin) {
            return ArowStep::passive(margin);
        }
        let sx = self.sigma.dot(&x);
        let v = x.dot(&sx);
        let beta = 1.0 / (v + self.r);
        let loss = (1.0 - margin).max(0.0);
        let alpha = loss * beta;
        self.w.scaled_add(alpha * y, &sx);
        let d = sx.len();
        for i in 0..d {
            for j in 0..d {
                // beta * (g_i g_j): the product commutes, so Σ stays exactly symmetric.
                self.sigma[[i, j]] -= beta * (sx[i] * sx[j]);
            }
        }
        ArowStep {
            margin,
            loss,
            confidence: v,
            alpha,
            updated: true,
        }
    }
}

/// AROW with a diagonal covariance `σ` (spec §2.2), on sparse or dense inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagonalArow {
    w: Vec<f64>,
    sigma: Vec<f64>,
    r: f64,
}

impl DiagonalArow {
    /// `w = 0`, `σ = 1`.
    pub fn new(d: usize, r: f64) -> Result<Self, AlgoError> {
        Self::from_parts(vec![0.0; d], vec![1.0; d], r)
    }

    /// From a mean and positive variances (not checked beyond length).
    pub fn from_parts(w: Vec<f64>, sigma: Vec<f64>, r: f64) -> Result<Self, AlgoError> {
        check_r(r)?;
        if sigma.len() != w.len() {
            return Err(AlgoError::data(format!(
                "diagonal AROW: {} variances for {} weights",
                sigma.len(),
                w.len()
            )));
        }
        Ok(Self { w, sigma, r })
    }

    pub fn mean(&self) -> &[f64] {
        &self.w
    }

    pub fn variances(&self) -> &[f64] {
        &self.sigma
    }

    /// One round on a sparse `x` (strictly increasing `idx`): `O(nnz(x))`.
    pub fn update_sparse(&mut self, idx: &[usize], val: &[f64], y: f64, rule: Update) -> ArowStep {
        let margin = y * idx
            .iter()
            .zip(val)
            .map(|(&k, &xk)| self.w[k] * xk)
            .sum::<f64>();
        if !rule.fires(margin) {
            return ArowStep::passive(margin);
        }
        let v: f64 = idx
            .iter()
            .zip(val)
            .map(|(&k, &xk)| self.sigma[k] * xk * xk)
            .sum();
        let denom = v + self.r;
        let loss = (1.0 - margin).max(0.0);
        let alpha = loss / denom;
        for (&k, &xk) in idx.iter().zip(val) {
            let s = self.sigma[k];
            self.w[k] += alpha * y * s * xk;
            self.sigma[k] = s - s * xk * xk * s / denom;
        }
        ArowStep {
            margin,
            loss,
            confidence: v,
            alpha,
            updated: true,
        }
    }

    /// One round on a dense `x`.
    pub fn update(&mut self, x: &[f64], y: f64, rule: Update) -> ArowStep {
        assert_eq!(x.len(), self.w.len(), "input length");
        let idx: Vec<usize> = (0..x.len()).collect();
        self.update_sparse(&idx, x, y, rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{arow_objective, minimise, spd_from_cholesky, spd_to_cholesky};
    use dyad_core::seeded;
    use rand::Rng as _;

    fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
    }

    #[test]
    fn closed_form_minimises_the_arow_objective() {
        // A random prior N(w0, Σ0) and a round with positive loss: the update (4) must equal a
        // direct numerical minimisation of (3), separately in w and in Σ (the objective
        // separates: the KL's mean term uses Σ0).
        let mut rng = seeded(4);
        let d = 3;
        for trial in 0..4 {
            let b = Array2::from_shape_fn((d, d), |_| rng.random_range(-0.6..0.6));
            let s0 = b.t().dot(&b) + Array2::<f64>::eye(d) * 0.3;
            let w0 = Array1::from_shape_fn(d, |_| rng.random_range(-0.3..0.3));
            let x = Array1::from_shape_fn(d, |_| rng.random_range(-1.0..1.0));
            let y = if trial % 2 == 0 { 1.0 } else { -1.0 };
            let r = [0.05, 0.5, 2.0, 10.0][trial];
            let mut arow = Arow::from_parts(w0.clone(), s0.clone(), r).unwrap();
            let step = arow.update(x.view(), y, Update::Margin);
            assert!(step.updated && step.loss > 0.0);

            let f_w =
                |w: &[f64]| arow_objective(&Array1::from(w.to_vec()), &s0, &w0, &s0, &x, y, r);
            let w_star = minimise(&f_w, w0.to_vec(), 1e-10);
            assert!(
                max_abs_diff(&w_star, arow.mean().as_slice().unwrap()) < 1e-6,
                "mean {w_star:?} vs {}",
                arow.mean()
            );

            let f_s = |l: &[f64]| arow_objective(&w0, &spd_from_cholesky(l, d), &w0, &s0, &x, y, r);
            let l_star = minimise(&f_s, spd_to_cholesky(&s0), 1e-10);
            let s_star = spd_from_cholesky(&l_star, d);
            let err = (&s_star - arow.covariance())
                .iter()
                .fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(err < 1e-6, "covariance off by {err}");
        }
    }

    #[test]
    fn diagonal_arow_is_the_diagonal_of_full_arow_from_a_diagonal_covariance() {
        let mut rng = seeded(8);
        let d = 5;
        let sig: Vec<f64> = (0..d).map(|_| rng.random_range(0.2..1.0)).collect();
        let w0: Vec<f64> = (0..d).map(|_| rng.random_range(-0.5..0.5)).collect();
        for r in [0.01, 1.0] {
            let mut full = Arow::from_parts(
                Array1::from(w0.clone()),
                Array2::from_diag(&Array1::from(sig.clone())),
                r,
            )
            .unwrap();
            let mut diag = DiagonalArow::from_parts(w0.clone(), sig.clone(), r).unwrap();
            let x: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
            let a = full.update(Array1::from(x.clone()).view(), -1.0, Update::Margin);
            let b = diag.update(&x, -1.0, Update::Margin);
            assert!(
                (a.alpha - b.alpha).abs() < 1e-15 && (a.confidence - b.confidence).abs() < 1e-15
            );
            assert!(max_abs_diff(full.mean().as_slice().unwrap(), diag.mean()) < 1e-15);
            let full_diag: Vec<f64> = full.covariance().diag().to_vec();
            assert!(max_abs_diff(&full_diag, diag.variances()) < 1e-15);
        }
    }

    #[test]
    fn rounds_outside_the_rule_are_passive_and_margins_rise() {
        let mut a = DiagonalArow::new(3, 0.1).unwrap();
        let x = [1.0, 0.0, 2.0];
        let s = a.update(&x, 1.0, Update::Margin);
        assert!(s.updated && s.mistake() && s.margin == 0.0);
        // After one round the margin is v / (v + r) (AROW's post-update margin, from 0).
        let v = 5.0;
        let m = a.update(&x, 1.0, Update::Mistake);
        assert!(!m.updated && (m.margin - v / (v + 0.1)).abs() < 1e-14);
        assert_eq!(m.loss, 1.0 - m.margin);
        let before = a.clone();
        let again = a.update(&x, -1.0, Update::Mistake);
        assert!(again.updated && again.mistake());
        assert_ne!(a, before);
        assert!(a.variances().iter().all(|&s| s > 0.0 && s <= 1.0));
        assert!(Arow::new(2, 0.0).is_err() && DiagonalArow::new(2, f64::NAN).is_err());
        assert!(DiagonalArow::from_parts(vec![0.0], vec![], 1.0).is_err());
    }
}
