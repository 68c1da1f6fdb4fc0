//! LORETA-1-PSD (spec §2.5, \[JMLR\] Algorithm 5): `W = Y Y^T` on the manifold of `n x n` PSD
//! matrices of rank `k`, one step along a rank-one descent `g1 g2^T` in `O(nk)`, carrying
//! `Y^+`.
//!
//! Implemented literally (spec §2.5: "Implement Algorithm 5 literally"; the printed
//! Theorem 6 is not symmetric): with `h1 = Y^+ g1`, `h2 = Y^+ g2`, `n1 = |h1|^2`,
//! `n2 = |h2|^2`, `hat1 = Y h1`, `hat2 = Y h2`, `s = h1 . h2`,
//!
//! ```text
//! l1 = (-1/4 + 3s/32) hat1 + (1/2 - s/8) g1 + 3/32 n1 hat2 - n1/8 g2
//! l2 = (-1/4 + 3s/32) hat2 + (1/2 - s/8) g2 + 3/32 n2 hat1 - n2/8 g1
//! Z  = Y + l1 h2^T + l2 h1^T
//! ```
//!
//! and `Z^+` by two successive Algorithm 7 updates (`(Y, Y^+, l1, h2)` then
//! `(Y + l1 h2^T, ., l2, h1)`), by the literal [`super::pinv`] routine. `Z Z^T` is the
//! retraction of the *symmetrised* gradient `(G + G^T)/2` with the one-sided `V'` of spec
//! §2.5 (tested). Storage: `Y` and `Y^{+T}` (`2nk` floats) and `O(n)` scratch.
//!
//! A step whose first half would lose rank is skipped; if only the second half would, the
//! first half is undone (`Y <- Y - l1 h2^T`, `Y^+` recomputed from scratch, `O(nk^2)`: a
//! measure-zero event) and the step skipped. Both are counted as rank-loss skips.

use super::loreta1::ScaledSparse;
use super::model::{LoretaStats, LowRankModel};
use super::pinv::{
    PinvBranch, PinvPlan, PinvScratch, PinvTolerances, apply_rank_one, plan_rank_one,
};
use dyad_kernels::linalg::{axpy, dot, pinv_transposed_full_rank};
use dyad_kernels::simd::{BASE, dot2};
use dyad_kernels::{AlgoError, Checked};
use ndarray::Array2;

/// What one LORETA-1-PSD step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PsdStep {
    /// `s = h1 . h2`.
    pub s: f64,
    /// The two Algorithm 7 updates.
    pub first: PinvBranch,
    pub second: PinvBranch,
    pub applied: bool,
}

/// The LORETA-1-PSD state: `W = Y Y^T` and `Y^{+T}`.
#[derive(Debug, Clone)]
pub struct Loreta1Psd {
    model: LowRankModel,
    yp: Array2<f64>,
    tol: PinvTolerances,
    scratch: PinvScratch,
    h1: Vec<f64>,
    h2: Vec<f64>,
    l1: Vec<f64>,
    l2: Vec<f64>,
}

fn numerical(what: &str, e: impl std::fmt::Display) -> AlgoError {
    AlgoError::Numerical(format!("LORETA-PSD: {what}: {e}"))
}

/// `g` as a dense vector added into `out` with factor `f` (sparse scatter).
fn scatter(out: &mut [f64], g: ScaledSparse<'_>, f: f64) {
    for (&i, &v) in g.indices.iter().zip(g.values) {
        out[i] += f * g.scale * v;
    }
}

fn gather(f: &[f64], k: usize, g: ScaledSparse<'_>, out: &mut [f64]) {
    out.fill(0.0);
    for (&i, &v) in g.indices.iter().zip(g.values) {
        axpy(out, g.scale * v, &f[i * k..(i + 1) * k]);
    }
}

impl Loreta1Psd {
    /// Start from `W = Y Y^T` (`Y` of full column rank `k`).
    pub fn new(y: Array2<f64>, tol: PinvTolerances) -> Result<Self, AlgoError> {
        let (n, k) = y.dim();
        if k == 0 {
            return Err(AlgoError::data("LORETA-PSD: Y has no columns (rank 0)"));
        }
        tol.check()?;
        let yp = pinv_transposed_full_rank(y.view()).map_err(|e| numerical("Y", e))?;
        Ok(Self {
            model: LowRankModel::symmetric(y),
            yp: yp.as_standard_layout().into_owned(),
            tol,
            scratch: PinvScratch::default(),
            h1: vec![0.0; k],
            h2: vec![0.0; k],
            l1: vec![0.0; n],
            l2: vec![0.0; n],
        })
    }

    pub fn model(&self) -> &LowRankModel {
        &self.model
    }

    pub fn stats(&self) -> &LoretaStats {
        &self.model.stats
    }

    /// `q^T W p = (Y^T q) . (Y^T p)` of the current model.
    pub fn bilinear(&self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
        self.model.bilinear(q, p)
    }

    /// `Y^{+T}` (`n x k`).
    pub fn pinv_t(&self) -> &Array2<f64> {
        &self.yp
    }

    /// Floats held by the state: `2nk`.
    pub fn memory_floats(&self) -> usize {
        2 * self.model.rows() * self.model.rank()
    }

    /// One step along `g1 g2^T` (both over the `n` coordinates).
    pub fn step(
        &mut self,
        g1: ScaledSparse<'_>,
        g2: ScaledSparse<'_>,
    ) -> Result<PsdStep, AlgoError> {
        let (n, k) = (self.model.rows(), self.model.rank());
        if !g1.fits(n) || !g2.fits(n) {
            return Err(AlgoError::data(format!(
                "LORETA-PSD: gradient factors exceed the model's dimension {n}"
            )));
        }
        if g1.is_zero() || g2.is_zero() {
            return Ok(PsdStep {
                s: 0.0,
                first: PinvBranch::Generic,
                second: PinvBranch::Generic,
                applied: false,
            });
        }
        let y = self.model.a().as_slice().expect("standard layout");
        let yp = self.yp.as_slice().expect("standard layout");
        // Steps 1-7: h1, h2, n1, n2, s; hat1 = Y h1 and hat2 = Y h2 enter l1, l2 row by row.
        gather(yp, k, g1, &mut self.h1);
        gather(yp, k, g2, &mut self.h2);
        let (n1, n2, s) = (
            dot(&self.h1, &self.h1),
            dot(&self.h2, &self.h2),
            dot(&self.h1, &self.h2),
        );
        if !(n1.is_finite() && n2.is_finite() && s.is_finite()) {
            return Err(numerical("non-finite h1, h2", s));
        }
        let (ca, cb, cc) = (-0.25 + 3.0 / 32.0 * s, 0.5 - 0.125 * s, 3.0 / 32.0);
        // Steps 8-9, the Y-parts: l1 = ca hat1 + cc n1 hat2, l2 = ca hat2 + cc n2 hat1.
        for (i, row) in y.chunks_exact(k).enumerate() {
            let (p1, p2) = dot2::<BASE>(row, &self.h1, &self.h2);
            self.l1[i] = ca * p1 + cc * n1 * p2;
            self.l2[i] = ca * p2 + cc * n2 * p1;
        }
        // ... and the g-parts: + cb g1 - n1/8 g2, + cb g2 - n2/8 g1.
        scatter(&mut self.l1, g1, cb);
        scatter(&mut self.l1, g2, -0.125 * n1);
        scatter(&mut self.l2, g2, cb);
        scatter(&mut self.l2, g1, -0.125 * n2);
        if !self.l1.iter().chain(&self.l2).all(|v| v.is_finite()) {
            return Err(numerical("non-finite l1, l2", s));
        }
        let tol = self.tol;
        let first = plan_rank_one(y, yp, k, &self.l1, &self.h2, tol, &mut self.scratch);
        let skip = |first: PinvBranch, second: PinvBranch| PsdStep {
            s,
            first,
            second,
            applied: false,
        };
        if !plan_finite(&first) {
            return Err(numerical("non-finite Algorithm 7 quantities", first.beta));
        }
        if first.branch == PinvBranch::RankLoss {
            self.model.stats.rank_loss_skips += 1;
            return Ok(skip(first.branch, PinvBranch::RankLoss));
        }
        // Step 13: Y <- Y + l1 h2^T, Y^+ by Algorithm 7.
        {
            let y = self.model.a_mut().as_slice_mut().expect("standard layout");
            let yp = self.yp.as_slice_mut().expect("standard layout");
            apply_rank_one(y, yp, k, &self.l1, &self.h2, &first, &mut self.scratch);
        }
        // Step 14: + l2 h1^T on the intermediate factor and its pseudo-inverse.
        let second = {
            let y = self.model.a().as_slice().expect("standard layout");
            let yp = self.yp.as_slice().expect("standard layout");
            plan_rank_one(y, yp, k, &self.l2, &self.h1, tol, &mut self.scratch)
        };
        if !plan_finite(&second) || second.branch == PinvBranch::RankLoss {
            // Undo the first half (module docs).
            let y = self.model.a_mut();
            for (mut row, &l) in y.rows_mut().into_iter().zip(&self.l1) {
                for (x, &h) in row.iter_mut().zip(&self.h2) {
                    *x -= l * h;
                }
            }
            self.yp = pinv_transposed_full_rank(self.model.a().view())
                .map_err(|e| numerical("Y after undoing a rank-losing step", e))?;
            if !plan_finite(&second) {
                return Err(numerical("non-finite Algorithm 7 quantities", second.beta));
            }
            self.model.stats.rank_loss_skips += 1;
            return Ok(skip(first.branch, second.branch));
        }
        {
            let y = self.model.a_mut().as_slice_mut().expect("standard layout");
            let yp = self.yp.as_slice_mut().expect("standard layout");
            apply_rank_one(y, yp, k, &self.l2, &self.h1, &second, &mut self.scratch);
        }
        self.model
            .stats
            .record_update(s, [first.branch, second.branch]);
        Ok(PsdStep {
            s,
            first: first.branch,
            second: second.branch,
            applied: true,
        })
    }

    /// `|Y^+ Y - I|_max` (`O(nk^2)`).
    pub fn pinv_drift(&self) -> f64 {
        let k = self.model.rank();
        (&dyad_kernels::linalg::matmul(self.yp.t(), self.model.a().view()) - &Array2::<f64>::eye(k))
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// Safeguard 1 of spec §2.7 (see [`super::Loreta1::check_pinvs`]).
    pub fn check_pinvs(&mut self, tolerance: f64) -> Result<bool, AlgoError> {
        let drift = self.pinv_drift();
        if !drift.is_finite() {
            return Err(numerical("non-finite pseudo-inverse drift", drift));
        }
        if drift > tolerance {
            self.yp =
                pinv_transposed_full_rank(self.model.a().view()).map_err(|e| numerical("Y", e))?;
            self.model.stats.pinv_recomputes += 1;
            return Ok(true);
        }
        Ok(false)
    }
}

fn plan_finite(p: &PinvPlan) -> bool {
    p.beta.is_finite() && p.w2.is_finite() && p.nv2.is_finite() && p.c2.is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{max_abs, random};
    use dyad_core::{Rng, SparseVec, seeded};
    use dyad_kernels::linalg::{matmul, pinv};
    use ndarray::{Array1, Axis};
    use rand::Rng as _;

    fn fro(a: &Array2<f64>) -> f64 {
        a.iter().map(|v| v * v).sum::<f64>().sqrt()
    }

    fn sparse(d: usize, fill: f64, rng: &mut Rng) -> SparseVec {
        let mut v = SparseVec::default();
        for i in 0..d {
            if i == 0 || rng.random::<f64>() < fill {
                v.indices.push(i);
                v.values.push(rng.random_range(-1.0..1.0));
            }
        }
        v
    }

    /// The one-sided `V' W^+ V'^T` of spec §2.5 for the symmetrised `G`.
    fn one_sided_reference(y: &Array2<f64>, g: &Array2<f64>) -> Array2<f64> {
        let n = y.nrows();
        let w = y.dot(&y.t());
        let wp = pinv(w.view()).unwrap();
        let py = y.dot(&pinv(y.view()).unwrap());
        let qy = Array2::<f64>::eye(n) - &py;
        let zs = (g + &g.t()) * 0.5;
        let xs = py.dot(&zs).dot(&py);
        let xp = qy.dot(&zs).dot(&py);
        let v = &w + &(&xs * 0.5) + &xp
            - &(xs.dot(&wp).dot(&xs) * 0.125)
            - &(xp.dot(&wp).dot(&xs) * 0.5);
        matmul(matmul(v.view(), wp.view()).view(), v.t())
    }

    fn outer(x: &Array1<f64>, y: &Array1<f64>) -> Array2<f64> {
        x.view()
            .insert_axis(Axis(1))
            .dot(&y.view().insert_axis(Axis(0)))
    }

    #[test]
    fn step_equals_the_one_sided_retraction_and_carries_the_pseudo_inverse() {
        let (n, k) = (12, 3);
        let mut rng = seeded(1);
        for _ in 0..20 {
            let y = random(n, k, &mut rng);
            let mut st = Loreta1Psd::new(y.clone(), PinvTolerances::default()).unwrap();
            let (g1, g2) = (sparse(n, 0.5, &mut rng), sparse(n, 0.5, &mut rng));
            let eta = 0.2;
            let out = st
                .step(
                    ScaledSparse::new(&g1.indices, &g1.values, eta),
                    ScaledSparse::new(&g2.indices, &g2.values, 1.0),
                )
                .unwrap();
            assert!(out.applied);
            let g = outer(
                &(Array1::from(g1.to_dense(n)) * eta),
                &Array1::from(g2.to_dense(n)),
            );
            let z = st.model().a();
            let reference = one_sided_reference(&y, &g);
            assert!(max_abs(&(&z.dot(&z.t()) - &reference)) < 1e-12);
            let p = pinv(z.view()).unwrap();
            assert!(max_abs(&(&st.pinv_t().t() - &p)) < 1e-11 * (1.0 + max_abs(&p)));
        }
    }

    #[test]
    fn second_order_for_the_symmetrised_gradient() {
        // Z Z^T = W + P_W(sym G) + O(|G|^2), and the tangent part of the remainder is O(|G|^3),
        // with P_W(X) = P_Y X + X P_Y - P_Y X P_Y for symmetric X.
        let (n, k) = (10, 3);
        let mut rng = seeded(2);
        let y = random(n, k, &mut rng);
        let (g1, g2) = (sparse(n, 0.6, &mut rng), sparse(n, 0.6, &mut rng));
        let w = y.dot(&y.t());
        let py = y.dot(&pinv(y.view()).unwrap());
        let proj = |x: &Array2<f64>| &py.dot(x) + &x.dot(&py) - &py.dot(x).dot(&py);
        let g = outer(&Array1::from(g1.to_dense(n)), &Array1::from(g2.to_dense(n)));
        let sym = (&g + &g.t()) * 0.5;
        let mut prev: Option<(f64, f64)> = None;
        for t in [1e-1, 1e-2, 1e-3] {
            let mut st = Loreta1Psd::new(y.clone(), PinvTolerances::default()).unwrap();
            st.step(
                ScaledSparse::new(&g1.indices, &g1.values, t),
                ScaledSparse::new(&g2.indices, &g2.values, 1.0),
            )
            .unwrap();
            let z = st.model().a();
            let rem = &z.dot(&z.t()) - &w - &(proj(&sym) * t);
            let (full, tan) = (fro(&rem), fro(&proj(&rem)));
            if let Some((pf, pt)) = prev {
                let (of, ot) = ((pf / full).log10(), (pt / tan).log10());
                assert!((of - 2.0).abs() < 0.15, "order {of}");
                assert!((ot - 3.0).abs() < 0.15, "order {ot}");
            }
            prev = Some((full, tan));
        }
    }

    #[test]
    fn drift_check_and_non_finite_input() {
        let (n, k) = (8, 2);
        let mut rng = seeded(3);
        let mut st = Loreta1Psd::new(random(n, k, &mut rng), PinvTolerances::default()).unwrap();
        for _ in 0..50 {
            let (g1, g2) = (sparse(n, 0.4, &mut rng), sparse(n, 0.4, &mut rng));
            st.step(
                ScaledSparse::new(&g1.indices, &g1.values, 0.05),
                ScaledSparse::new(&g2.indices, &g2.values, 1.0),
            )
            .unwrap();
        }
        assert!(!st.check_pinvs(1e-8).unwrap());
        st.yp[[1, 1]] += 1e-5;
        assert!(st.check_pinvs(1e-8).unwrap());
        assert!(st.pinv_drift() < 1e-12);
        let err = st.step(
            ScaledSparse::new(&[0], &[f64::NAN], 1.0),
            ScaledSparse::new(&[1], &[1.0], 1.0),
        );
        assert!(matches!(err, Err(AlgoError::Numerical(_))));
    }
}
