//! The dense bilinear model `W` and the sparse PA-I step.

use dyad_core::model::score_via_dense_left;
use dyad_core::{Scorer, SparseVec, sparse};
use ndarray::Array2;
use sprs::{CsMat, CsVecView};

/// `S_W(p, q) = p^T W q` with `W` dense, row-major, `d x d`.
#[derive(Debug, Clone, PartialEq)]
pub struct BilinearModel {
    w: Array2<f64>,
}

/// What one PA-I step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOutcome {
    /// Hinge loss of the triplet before the step.
    pub loss: f64,
    /// Step size taken (0 when the loss was zero or the step degenerate).
    pub tau: f64,
}

impl BilinearModel {
    /// `W = I`: the Euclidean / dot-product starting point of OASIS.
    pub fn identity(d: usize) -> Self {
        Self { w: Array2::eye(d) }
    }

    pub fn from_matrix(w: Array2<f64>) -> Self {
        assert_eq!(w.nrows(), w.ncols(), "W must be square");
        Self {
            w: w.as_standard_layout().into_owned(),
        }
    }

    pub fn matrix(&self) -> &Array2<f64> {
        &self.w
    }

    pub fn dim(&self) -> usize {
        self.w.nrows()
    }

    fn slice(&self) -> &[f64] {
        self.w.as_slice().expect("standard layout")
    }

    /// `p^T W q` for sparse `p` and `q`: O(nnz(p) nnz(q)).
    pub fn bilinear(&self, p: (&[usize], &[f64]), q: (&[usize], &[f64])) -> f64 {
        let (w, d) = (self.slice(), self.dim());
        p.0.iter()
            .zip(p.1)
            .map(|(&a, &pa)| pa * sparse::dot_dense(&w[a * d..(a + 1) * d], q.0, q.1))
            .sum()
    }

    /// The PA-I step size for the triplet `(p, p+, p-)` (spec §2.2): writes `p+ - p-` into
    /// `diff` and returns the hinge loss and `tau = min(c, l / ||V||_F^2)` with
    /// `||V||_F^2 = ||p||^2 ||p+ - p-||^2`. A degenerate step (`||V|| = 0`: empty `p`, or
    /// `p+ = p-`) gets `tau = 0`, as the spec recommends.
    fn pa1_tau(
        &self,
        p: CsVecView<'_, f64>,
        pos: CsVecView<'_, f64>,
        neg: CsVecView<'_, f64>,
        c: f64,
        diff: &mut SparseVec,
    ) -> StepOutcome {
        diff.set_difference(pos, neg);
        let margin = self.bilinear((p.indices(), p.data()), (&diff.indices, &diff.values));
        let loss = (1.0 - margin).max(0.0);
        let v_norm_sq = sparse::norm_sq(p.data()) * diff.norm_sq();
        let tau = if loss == 0.0 || v_norm_sq == 0.0 {
            0.0
        } else {
            c.min(loss / v_norm_sq)
        };
        StepOutcome { loss, tau }
    }

    /// One PA-I step on the triplet `(p, p+, p-)` with aggressiveness `c`: `W <- W + tau V`
    /// with `V = p (p+ - p-)^T`, touching only the `nnz(p) x nnz(p+ - p-)` entries `V`
    /// covers. `diff` is scratch space for `p+ - p-`.
    pub fn pa1_step(
        &mut self,
        p: CsVecView<'_, f64>,
        pos: CsVecView<'_, f64>,
        neg: CsVecView<'_, f64>,
        c: f64,
        diff: &mut SparseVec,
    ) -> StepOutcome {
        let out = self.pa1_tau(p, pos, neg, c, diff);
        if out.tau > 0.0 {
            let d = self.dim();
            let w = self.w.as_slice_mut().expect("standard layout");
            for (&a, &pa) in p.indices().iter().zip(p.data()) {
                let row = &mut w[a * d..(a + 1) * d];
                let s = out.tau * pa;
                for (&b, &qb) in diff.indices.iter().zip(&diff.values) {
                    row[b] += s * qb;
                }
            }
        }
        out
    }

    /// The Online-Proj-Oasis step (spec §4.1): `tau` as in [`BilinearModel::pa1_step`] from
    /// the unprojected `V`, then `W <- W + tau sym(V)`, which equals projecting
    /// `W + tau V` onto the symmetric matrices when `W` is symmetric. Costs
    /// `2 nnz(p) nnz(p+ - p-)`.
    pub fn pa1_step_symmetric(
        &mut self,
        p: CsVecView<'_, f64>,
        pos: CsVecView<'_, f64>,
        neg: CsVecView<'_, f64>,
        c: f64,
        diff: &mut SparseVec,
    ) -> StepOutcome {
        let out = self.pa1_tau(p, pos, neg, c, diff);
        if out.tau > 0.0 {
            let d = self.dim();
            let w = self.w.as_slice_mut().expect("standard layout");
            for (&a, &pa) in p.indices().iter().zip(p.data()) {
                let s = 0.5 * out.tau * pa;
                for (&b, &qb) in diff.indices.iter().zip(&diff.values) {
                    w[a * d + b] += s * qb;
                    w[b * d + a] += s * qb;
                }
            }
        }
        out
    }

    /// `W <- W + scale u v^T` for sparse `u`, `v`: O(nnz(u) nnz(v)).
    pub fn rank_one_update(&mut self, u: &SparseVec, v: &SparseVec, scale: f64) {
        let d = self.dim();
        let w = self.w.as_slice_mut().expect("standard layout");
        for (&a, &ua) in u.indices.iter().zip(&u.values) {
            let s = scale * ua;
            let row = &mut w[a * d..(a + 1) * d];
            for (&b, &vb) in v.indices.iter().zip(&v.values) {
                row[b] += s * vb;
            }
        }
    }

    /// `sym(W) = (W + W^T)/2` as a new model (Proj-Oasis).
    pub fn symmetrized(&self) -> BilinearModel {
        BilinearModel::from_matrix(crate::linalg::symmetrize(self.w.view()))
    }

    /// The PSD projection of `sym(W)` as a new model (spec §4.2).
    pub fn psd_projected(&self) -> Result<BilinearModel, crate::linalg::LinalgError> {
        Ok(BilinearModel::from_matrix(crate::linalg::psd_projection(
            self.w.view(),
        )?))
    }

    /// Replace `W` by its PSD projection (training continues from it).
    pub fn project_psd(&mut self) -> Result<(), crate::linalg::LinalgError> {
        self.w = crate::linalg::psd_projection(self.w.view())?;
        Ok(())
    }

    /// The symmetry index `rho(W) = ||sym(W)|| / ||W||` in the Frobenius norm (spec §4.1).
    pub fn symmetry_index(&self) -> f64 {
        let s = crate::linalg::symmetrize(self.w.view());
        let f = |m: &Array2<f64>| m.iter().map(|v| v * v).sum::<f64>().sqrt();
        f(&s) / f(&self.w)
    }

    /// The uniform average of several models of the same dimension (parallel rankers).
    pub fn average(models: &[BilinearModel]) -> BilinearModel {
        let mut w = models[0].w.clone();
        for m in &models[1..] {
            w += &m.w;
        }
        w.mapv_inplace(|v| v / models.len() as f64);
        BilinearModel { w }
    }
}

/// The spectral norm (largest singular value) of a square matrix, by power iteration on
/// `A^T A` from a fixed start (deterministic).
pub fn spectral_norm(a: &Array2<f64>) -> f64 {
    let n = a.ncols();
    if n == 0 {
        return 0.0;
    }
    let mut v = ndarray::Array1::from_elem(n, 1.0 / (n as f64).sqrt());
    let mut sigma = 0.0;
    for _ in 0..300 {
        let av = a.dot(&v);
        let mut w = a.t().dot(&av);
        let norm = w.dot(&w).sqrt();
        if norm == 0.0 {
            return 0.0;
        }
        w /= norm;
        let next = norm.sqrt();
        v = w;
        // sqrt(||A^T A v||) converges to sigma_max faster than v converges to its vector.
        if (next - sigma).abs() <= 1e-10 * next {
            return next;
        }
        sigma = next;
    }
    sigma
}

impl Scorer for BilinearModel {
    /// Symmetry indices of spec §4.1: `rho(W) = ||sym(W)|| / ||W||` in the Frobenius and the
    /// spectral norm, and `rho(W - I)` (Frobenius), because the identity start alone gives
    /// `rho = 1`.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        let sym = crate::linalg::symmetrize(self.w.view());
        let fro = |m: &Array2<f64>| m.iter().map(|v| v * v).sum::<f64>().sqrt();
        let shifted = &self.w - &Array2::<f64>::eye(self.dim());
        let shifted_sym = crate::linalg::symmetrize(shifted.view());
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 1.0 };
        vec![
            ("symmetry_index", ratio(fro(&sym), fro(&self.w))),
            (
                "symmetry_index_spectral",
                ratio(spectral_norm(&sym), spectral_norm(&self.w)),
            ),
            (
                "symmetry_index_minus_identity",
                ratio(fro(&shifted_sym), fro(&shifted)),
            ),
        ]
    }

    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let (w, d) = (self.slice(), self.dim());
        score_via_dense_left(d, query, candidates, out, |q, u| {
            // u = W^T q = sum_a q_a W[a, :]
            for (&a, &qa) in q.indices().iter().zip(q.data()) {
                for (ub, wab) in u.iter_mut().zip(&w[a * d..(a + 1) * d]) {
                    *ub += qa * wab;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::{LabeledSet, Rng, seeded};
    use ndarray::{Array1, Array2};
    use rand::Rng as _;
    use sprs::CsVec;

    fn random_sparse(d: usize, nnz: usize, rng: &mut Rng) -> CsVec<f64> {
        let mut idx: Vec<usize> = (0..d).collect();
        for i in 0..nnz {
            let j = rng.random_range(i..d);
            idx.swap(i, j);
        }
        let mut idx = idx[..nnz].to_vec();
        idx.sort_unstable();
        let vals = (0..nnz).map(|_| rng.random_range(-1.0..1.0)).collect();
        CsVec::new(d, idx, vals)
    }

    fn dense(v: &CsVec<f64>) -> Array1<f64> {
        Array1::from(v.to_dense().to_vec())
    }

    /// The closed form of spec §2.2 with dense matrices, from scratch.
    fn dense_reference(
        w: &Array2<f64>,
        p: &Array1<f64>,
        pos: &Array1<f64>,
        neg: &Array1<f64>,
        c: f64,
    ) -> (Array2<f64>, f64, f64) {
        let q = pos - neg;
        let loss = (1.0 - p.dot(&w.dot(&q))).max(0.0);
        let v = p
            .view()
            .insert_axis(ndarray::Axis(1))
            .dot(&q.view().insert_axis(ndarray::Axis(0)));
        let vnorm = v.iter().map(|x| x * x).sum::<f64>();
        let tau = if loss == 0.0 {
            0.0
        } else {
            c.min(loss / vnorm)
        };
        (w + &(tau * &v), loss, tau)
    }

    #[test]
    fn pa1_step_matches_dense_closed_form() {
        let mut rng = seeded(11);
        let d = 40;
        for c in [0.01, 0.1, 10.0] {
            // Start from a random non-symmetric W so every term of the update matters.
            let w0 = Array2::from_shape_fn((d, d), |_| rng.random_range(-0.2..0.2));
            let mut model = BilinearModel::from_matrix(w0.clone());
            let mut reference = w0;
            let mut scratch = SparseVec::default();
            for _ in 0..25 {
                let (p, a, b) = (
                    random_sparse(d, 7, &mut rng),
                    random_sparse(d, 5, &mut rng),
                    random_sparse(d, 6, &mut rng),
                );
                let out = model.pa1_step(p.view(), a.view(), b.view(), c, &mut scratch);
                let (w_ref, loss, tau) =
                    dense_reference(&reference, &dense(&p), &dense(&a), &dense(&b), c);
                assert!((out.loss - loss).abs() < 1e-10, "{} vs {}", out.loss, loss);
                assert!((out.tau - tau).abs() < 1e-12);
                let err = (model.matrix() - &w_ref)
                    .iter()
                    .fold(0.0f64, |m, x| m.max(x.abs()));
                assert!(err < 1e-12, "max |W - W_ref| = {err}");
                reference = w_ref;
            }
        }
    }

    #[test]
    fn unclipped_step_lands_exactly_on_the_margin() {
        // When tau = l/||V||^2 < C, the updated model satisfies S(p,p+) - S(p,p-) = 1.
        let mut rng = seeded(5);
        let d = 30;
        let mut model = BilinearModel::identity(d);
        let mut scratch = SparseVec::default();
        let (p, a, b) = (
            random_sparse(d, 6, &mut rng),
            random_sparse(d, 6, &mut rng),
            random_sparse(d, 6, &mut rng),
        );
        let out = model.pa1_step(p.view(), a.view(), b.view(), 1e9, &mut scratch);
        assert!(out.loss > 0.0 && out.tau > 0.0);
        let q = &dense(&a) - &dense(&b);
        let margin = dense(&p).dot(&model.matrix().dot(&q));
        assert!((margin - 1.0).abs() < 1e-10, "margin {margin}");
        // A second step on the same triplet is passive.
        let again = model.pa1_step(p.view(), a.view(), b.view(), 1e9, &mut scratch);
        assert!(again.tau == 0.0 && again.loss < 1e-9);
    }

    #[test]
    fn symmetric_step_equals_projecting_the_plain_step() {
        let mut rng = seeded(21);
        let d = 20;
        let s0 = crate::linalg::symmetrize(
            Array2::from_shape_fn((d, d), |_| rng.random_range(-0.2..0.2)).view(),
        );
        let mut sym = BilinearModel::from_matrix(s0.clone());
        let mut scratch = SparseVec::default();
        for _ in 0..20 {
            let (p, a, b) = (
                random_sparse(d, 5, &mut rng),
                random_sparse(d, 4, &mut rng),
                random_sparse(d, 4, &mut rng),
            );
            let mut plain = sym.clone();
            let o1 = plain.pa1_step(p.view(), a.view(), b.view(), 0.05, &mut scratch);
            let o2 = sym.pa1_step_symmetric(p.view(), a.view(), b.view(), 0.05, &mut scratch);
            assert_eq!(o1, o2);
            let projected = crate::linalg::symmetrize(plain.matrix().view());
            let err = (sym.matrix() - &projected)
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(err < 1e-12, "{err}");
            let asym = (sym.matrix() - &sym.matrix().t())
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(asym < 1e-12);
        }
        assert!((sym.symmetry_index() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn spectral_norm_matches_svd() {
        let mut rng = seeded(6);
        let a = Array2::from_shape_fn((15, 15), |_| rng.random_range(-1.0..1.0));
        let (_, s, _) = crate::linalg::thin_svd(a.view()).unwrap();
        assert!((spectral_norm(&a) - s[0]).abs() < 1e-8 * s[0]);
    }

    #[test]
    fn symmetry_index_and_average() {
        let w = Array2::from_shape_vec((2, 2), vec![1.0, 2.0, 0.0, 1.0]).unwrap();
        let m = BilinearModel::from_matrix(w);
        // sym = [[1,1],[1,1]]: ||sym||_F = 2, ||W||_F = sqrt(6).
        assert!((m.symmetry_index() - 2.0 / 6f64.sqrt()).abs() < 1e-12);
        let avg = BilinearModel::average(&[m.clone(), BilinearModel::identity(2)]);
        assert_eq!(avg.matrix()[[0, 1]], 1.0);
        assert_eq!(avg.matrix()[[0, 0]], 1.0);
    }

    #[test]
    fn degenerate_step_is_skipped() {
        let mut model = BilinearModel::identity(4);
        let p = CsVec::new(4, vec![0], vec![1.0]);
        let same = CsVec::new(4, vec![1], vec![1.0]);
        let out = model.pa1_step(
            p.view(),
            same.view(),
            same.view(),
            0.1,
            &mut SparseVec::default(),
        );
        assert_eq!(out.tau, 0.0);
        assert_eq!(model, BilinearModel::identity(4));
    }

    #[test]
    fn scorer_matches_dense_bilinear_form() {
        let mut rng = seeded(2);
        let d = 12;
        let w = Array2::from_shape_fn((d, d), |_| rng.random_range(-1.0..1.0));
        let model = BilinearModel::from_matrix(w.clone());
        let rows: Vec<Vec<f64>> = (0..5)
            .map(|_| dense(&random_sparse(d, 4, &mut rng)).to_vec())
            .collect();
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 1, 0, 1, 0], 2);
        let mut out = vec![0.0; 5];
        model.score(set.x.outer_view(1).unwrap(), &set.x, &mut out);
        for (j, r) in rows.iter().enumerate() {
            let expect = Array1::from(rows[1].clone()).dot(&w.dot(&Array1::from(r.clone())));
            assert!((out[j] - expect).abs() < 1e-12);
        }
    }
}
