//! The dense bilinear model `W` and the sparse PA-I step.
//!
//! `W` is stored row-major as `f64` or, by choice ([`Precision::F32`]), as `f32`: the
//! margin is then accumulated in `f64` from widened entries and every update computed in
//! `f64` and rounded once when stored. Either way the model holds `d^2` floats and nothing
//! else; [`BilinearModel::matrix`] and [`BilinearModel::from_matrix`] speak `f64`. The row
//! kernels are in [`super::kernel`].

use super::kernel::{self, StepScratch};
use dyad_core::Scorer;
use dyad_core::model::score_via_dense_left;
use dyad_kernels::simd::{Elem, Isa};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};
use std::borrow::Cow;

/// The element type `W` is stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// `f64` storage and arithmetic.
    #[default]
    F64,
    /// `f32` storage, `f64` arithmetic (margin accumulated in `f64`, each updated entry
    /// rounded to `f32` once): half the memory traffic per step.
    F32,
}

impl Precision {
    /// The default: left out of a configuration's canonical form, so that cache keys of
    /// configurations written before the option existed stay as they were.
    pub fn is_f64(&self) -> bool {
        *self == Precision::F64
    }

    /// The bytes of a `d x d` matrix stored at this precision.
    pub fn matrix_bytes(self, d: usize) -> u64 {
        let elem = match self {
            Precision::F64 => 8,
            Precision::F32 => 4,
        };
        dyad_kernels::dense_bytes(d, d) / 8 * elem
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Weights {
    F64(Array2<f64>),
    F32(Vec<f32>),
}

/// `S_W(p, q) = p^T W q` with `W` dense, row-major, `d x d`.
#[derive(Debug, Clone, PartialEq)]
pub struct BilinearModel {
    d: usize,
    w: Weights,
}

/// What one PA-I step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepOutcome {
    /// Hinge loss of the triplet before the step.
    pub loss: f64,
    /// Step size taken (0 when the loss was zero or the step degenerate).
    pub tau: f64,
}

/// Runs `$body` with `$w` bound to the entries of `$model` as a slice of its element type.
macro_rules! with_entries {
    ($model:expr, $w:ident => $body:expr) => {
        match &$model.w {
            Weights::F64(m) => {
                let $w: &[f64] = m.as_slice().expect("standard layout");
                $body
            }
            Weights::F32(v) => {
                let $w: &[f32] = v;
                $body
            }
        }
    };
    (mut $model:expr, $w:ident => $body:expr) => {
        match &mut $model.w {
            Weights::F64(m) => {
                let $w: &mut [f64] = m.as_slice_mut().expect("standard layout");
                $body
            }
            Weights::F32(v) => {
                let $w: &mut [f32] = v;
                $body
            }
        }
    };
}

impl BilinearModel {
    /// The names of its statistics.
    pub const STATISTICS: &'static [&'static str] = &[
        "symmetry_index",
        "symmetry_index_spectral",
        "symmetry_index_minus_identity",
        "model_bytes",
    ];

    /// `W = I`: the Euclidean / dot-product starting point of OASIS.
    pub fn identity(d: usize) -> Self {
        Self::identity_with(d, Precision::F64)
    }

    /// `W = I` stored in `precision`.
    pub fn identity_with(d: usize, precision: Precision) -> Self {
        let w = match precision {
            Precision::F64 => Weights::F64(Array2::eye(d)),
            Precision::F32 => {
                let mut v = vec![0.0f32; d * d];
                for i in 0..d {
                    v[i * d + i] = 1.0;
                }
                Weights::F32(v)
            }
        };
        Self { d, w }
    }

    /// `W` stored as `f64` (a `-0` entry stored as `+0`: the row kernels rely on it, see
    /// [`dyad_kernels::simd`]'s `Elem::narrow`).
    pub fn from_matrix(w: Array2<f64>) -> Self {
        assert_eq!(w.nrows(), w.ncols(), "W must be square");
        let mut w = w.as_standard_layout().into_owned();
        w.mapv_inplace(|v| v + 0.0);
        Self {
            d: w.nrows(),
            w: Weights::F64(w),
        }
    }

    /// `W` stored in `precision` (rounded to `f32` for [`Precision::F32`]).
    pub fn from_matrix_with(w: Array2<f64>, precision: Precision) -> Self {
        let m = Self::from_matrix(w);
        match precision {
            Precision::F64 => m,
            Precision::F32 => {
                let v = m.matrix().iter().map(|&x| f32::narrow(x)).collect();
                Self {
                    d: m.d,
                    w: Weights::F32(v),
                }
            }
        }
    }

    /// `W` as `f64` (borrowed when stored as `f64`, widened exactly otherwise).
    pub fn matrix(&self) -> Cow<'_, Array2<f64>> {
        match &self.w {
            Weights::F64(m) => Cow::Borrowed(m),
            Weights::F32(v) => Cow::Owned(
                Array2::from_shape_vec((self.d, self.d), v.iter().map(|&x| f64::from(x)).collect())
                    .expect("d x d"),
            ),
        }
    }

    /// The element type `W` is stored in.
    pub fn precision(&self) -> Precision {
        match self.w {
            Weights::F64(_) => Precision::F64,
            Weights::F32(_) => Precision::F32,
        }
    }

    pub fn dim(&self) -> usize {
        self.d
    }

    /// Bytes held by `W`: `d^2` floats of the storage precision (8 or 4 bytes each), the
    /// model's whole size (nothing else grows with `d`).
    pub fn memory_bytes(&self) -> usize {
        let elem = match self.w {
            Weights::F64(_) => std::mem::size_of::<f64>(),
            Weights::F32(_) => std::mem::size_of::<f32>(),
        };
        self.d * self.d * elem
    }

    /// The same precision as `self`, holding `w`.
    fn with_matrix(&self, w: Array2<f64>) -> BilinearModel {
        BilinearModel::from_matrix_with(w, self.precision())
    }

    /// `p^T W q` for sparse `p` and `q`: O(nnz(p) nnz(q)), summed in the order of the step's
    /// margin ([`dyad_kernels::simd`]).
    pub fn bilinear(&self, p: (&[usize], &[f64]), q: (&[usize], &[f64])) -> f64 {
        let support = kernel::Support {
            indices: q.0,
            values: q.1,
            dense: None,
        };
        with_entries!(self, w => kernel::margin(Isa::detect(), w, self.d, p, support))
    }

    /// One PA-I step on the triplet `(p, p+, p-)` with aggressiveness `c` (spec §2.2):
    ///
    /// ```text
    /// q = p+ - p-,  l = max(0, 1 - p^T W q),  tau = min(c, l / (||p||^2 ||q||^2)),
    /// W <- W + tau p q^T
    /// ```
    ///
    /// touching only the rows of `W` that `p` selects, over the columns `q` covers (see
    /// [`super::kernel`] for the two row kernels). A degenerate step (`||p|| ||q|| = 0`:
    /// empty `p`, or `p+ = p-`) gets `tau = 0`, as the spec recommends.
    pub fn pa1_step(
        &mut self,
        p: CsVecView<'_, f64>,
        pos: CsVecView<'_, f64>,
        neg: CsVecView<'_, f64>,
        c: f64,
        scratch: &mut StepScratch,
    ) -> StepOutcome {
        let d = self.d;
        with_entries!(mut self, w => pa1_step_in(w, d, p, pos, neg, c, scratch, false))
    }

    /// The Online-Proj-Oasis step (spec §4.1): `tau` as in [`BilinearModel::pa1_step`] from
    /// the unprojected `V = p q^T`, then `W <- W + tau sym(V)`, which equals projecting
    /// `W + tau V` onto the symmetric matrices when `W` is symmetric. The update gathers
    /// (`2 nnz(p) nnz(q)` entries).
    pub fn pa1_step_symmetric(
        &mut self,
        p: CsVecView<'_, f64>,
        pos: CsVecView<'_, f64>,
        neg: CsVecView<'_, f64>,
        c: f64,
        scratch: &mut StepScratch,
    ) -> StepOutcome {
        let d = self.d;
        with_entries!(mut self, w => pa1_step_in(w, d, p, pos, neg, c, scratch, true))
    }

    /// `sym(W) = (W + W^T)/2` as a new model (Proj-Oasis), in the same precision.
    pub fn symmetrized(&self) -> BilinearModel {
        self.with_matrix(dyad_kernels::linalg::symmetrize(self.matrix().view()))
    }

    /// The PSD projection of `sym(W)` as a new model (spec §4.2), in the same precision.
    pub fn psd_projected(&self) -> Result<BilinearModel, dyad_kernels::linalg::LinalgError> {
        Ok(self.with_matrix(dyad_kernels::linalg::psd_projection(self.matrix().view())?))
    }

    /// Replace `W` by its PSD projection (training continues from it).
    pub fn project_psd(&mut self) -> Result<(), dyad_kernels::linalg::LinalgError> {
        *self = self.psd_projected()?;
        Ok(())
    }

    /// The symmetry index `rho(W) = ||sym(W)|| / ||W||` in the Frobenius norm (spec §4.1).
    pub fn symmetry_index(&self) -> f64 {
        let w = self.matrix();
        let s = dyad_kernels::linalg::symmetrize(w.view());
        let f = |m: &Array2<f64>| m.iter().map(|v| v * v).sum::<f64>().sqrt();
        f(&s) / f(&w)
    }

    /// The uniform average of several models of the same dimension and precision (parallel
    /// rankers): summed in `f64` in the order given, divided by their number, stored in
    /// their precision.
    pub fn average(models: &[BilinearModel]) -> BilinearModel {
        let first = &models[0];
        assert!(
            models
                .iter()
                .all(|m| m.d == first.d && m.precision() == first.precision()),
            "averaged models must agree in dimension and precision"
        );
        let mut sum = first.matrix().into_owned();
        for m in &models[1..] {
            sum += &*m.matrix();
        }
        sum.mapv_inplace(|v| v / models.len() as f64);
        first.with_matrix(sum)
    }
}

/// The PA-I step on the entries `w` of a `d x d` model (see [`BilinearModel::pa1_step`]).
#[allow(clippy::too_many_arguments)]
fn pa1_step_in<T: Elem>(
    w: &mut [T],
    d: usize,
    p: CsVecView<'_, f64>,
    pos: CsVecView<'_, f64>,
    neg: CsVecView<'_, f64>,
    c: f64,
    scratch: &mut StepScratch,
    symmetric: bool,
) -> StepOutcome {
    scratch.prepare(d, pos, neg);
    let isa = scratch.isa;
    let q = scratch.support();
    let pv = (p.indices(), p.data());
    let margin = kernel::margin(isa, &*w, d, pv, q);
    let loss = (1.0 - margin).max(0.0);
    let v_norm_sq = dyad_core::sparse::norm_sq(p.data()) * scratch.diff.norm_sq();
    let tau = if loss == 0.0 || v_norm_sq == 0.0 {
        0.0
    } else {
        c.min(loss / v_norm_sq)
    };
    if tau > 0.0 {
        if symmetric {
            for (&a, &pa) in pv.0.iter().zip(pv.1) {
                let s = 0.5 * tau * pa;
                for (&b, &qb) in q.indices.iter().zip(q.values) {
                    w[a * d + b] = T::narrow(w[a * d + b].widen() + s * qb);
                    w[b * d + a] = T::narrow(w[b * d + a].widen() + s * qb);
                }
            }
        } else {
            kernel::update(isa, w, d, pv, tau, q);
        }
    }
    scratch.finish();
    StepOutcome { loss, tau }
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
        let w = self.matrix();
        let sym = dyad_kernels::linalg::symmetrize(w.view());
        let fro = |m: &Array2<f64>| m.iter().map(|v| v * v).sum::<f64>().sqrt();
        let shifted = &*w - &Array2::<f64>::eye(self.dim());
        let shifted_sym = dyad_kernels::linalg::symmetrize(shifted.view());
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 1.0 };
        vec![
            ("symmetry_index", ratio(fro(&sym), fro(&w))),
            (
                "symmetry_index_spectral",
                ratio(spectral_norm(&sym), spectral_norm(&w)),
            ),
            (
                "symmetry_index_minus_identity",
                ratio(fro(&shifted_sym), fro(&shifted)),
            ),
            // d² floats and nothing else (issue 12: "memory of a model stays d² floats").
            ("model_bytes", self.memory_bytes() as f64),
        ]
    }

    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let (d, isa) = (self.dim(), Isa::detect());
        score_via_dense_left(d, query, candidates, out, |q, u| {
            // u = W^T q = sum_a q_a W[a, :]
            let q = (q.indices(), q.data());
            with_entries!(self, w => kernel::left_product(isa, w, d, q, u))
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
            let mut scratch = StepScratch::default();
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
                let err = (&*model.matrix() - &w_ref)
                    .iter()
                    .fold(0.0f64, |m, x| m.max(x.abs()));
                assert!(err < 1e-12, "max |W - W_ref| = {err}");
                reference = w_ref;
            }
        }
    }

    #[test]
    fn f32_step_is_the_f64_closed_form_rounded_once() {
        // From the widened f32 W, the loss and tau are the f64 closed form's (the margin is
        // accumulated in f64), and every updated entry is that form's value rounded to f32.
        let mut rng = seeded(12);
        let d = 40;
        let w0 = Array2::from_shape_fn((d, d), |_| rng.random_range(-0.2..0.2));
        let mut model = BilinearModel::from_matrix_with(w0, Precision::F32);
        let mut scratch = StepScratch::default();
        for _ in 0..25 {
            let (p, a, b) = (
                random_sparse(d, 7, &mut rng),
                random_sparse(d, 5, &mut rng),
                random_sparse(d, 6, &mut rng),
            );
            let before = model.matrix().into_owned();
            let out = model.pa1_step(p.view(), a.view(), b.view(), 0.1, &mut scratch);
            let (w_ref, loss, tau) =
                dense_reference(&before, &dense(&p), &dense(&a), &dense(&b), 0.1);
            assert!((out.loss - loss).abs() < 1e-12, "{} vs {}", out.loss, loss);
            assert!((out.tau - tau).abs() < 1e-12 * tau.max(1.0));
            for (got, want) in model.matrix().iter().zip(&w_ref) {
                assert_eq!(f64::from(*got as f32), *got, "stored as f32");
                // One rounding to f32 (half an ulp) plus the f64 reference's own rounding.
                let ulp = f64::from(f32::EPSILON) * want.abs().max(1e-30);
                assert!((got - want).abs() <= 0.5 * ulp + 1e-15, "{got} vs {want}");
            }
        }
    }

    #[test]
    fn f32_and_f64_trajectories_agree_to_single_precision() {
        let set = dyad_kernels::fixtures::mnist_like(60, 4, &mut seeded(3));
        let d = set.dim();
        let mut m64 = BilinearModel::identity(d);
        let mut m32 = BilinearModel::identity_with(d, Precision::F32);
        let (mut s64, mut s32) = (StepScratch::default(), StepScratch::default());
        let mut rng = seeded(4);
        let mut worst_tau = 0.0f64;
        for _ in 0..1500 {
            let mut row = || set.x.outer_view(rng.random_range(0..set.n())).unwrap();
            let (p, a, b) = (row(), row(), row());
            let o64 = m64.pa1_step(p, a, b, 0.1, &mut s64);
            let o32 = m32.pa1_step(p, a, b, 0.1, &mut s32);
            assert!((o64.loss - o32.loss).abs() < 1e-4, "{o64:?} vs {o32:?}");
            worst_tau = worst_tau.max((o64.tau - o32.tau).abs() / o64.tau.max(1e-3));
        }
        assert!(worst_tau < 1e-3, "relative tau difference {worst_tau}");
        let diff = (&*m64.matrix() - &*m32.matrix())
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let scale = m64.matrix().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(
            diff < 1e-5 * scale,
            "max |W64 - W32| = {diff} (max |W| {scale})"
        );
        // The two trajectories did differ: f32 storage rounds.
        assert!(diff > 0.0);
    }

    #[test]
    fn model_memory_is_d_squared_floats() {
        for (precision, bytes) in [(Precision::F64, 8), (Precision::F32, 4)] {
            let m = BilinearModel::identity_with(37, precision);
            assert_eq!(m.memory_bytes(), 37 * 37 * bytes);
            let held = match &m.w {
                Weights::F64(a) => a.len() * std::mem::size_of::<f64>(),
                Weights::F32(v) => v.len() * std::mem::size_of::<f32>(),
            };
            assert_eq!(m.memory_bytes(), held);
            assert_eq!(m.precision(), precision);
            // Averages and projections keep the precision (and so the size).
            assert_eq!(
                BilinearModel::average(&[m.clone(), m.clone()]).precision(),
                precision
            );
            assert_eq!(m.symmetrized().memory_bytes(), m.memory_bytes());
        }
    }

    #[test]
    fn unclipped_step_lands_exactly_on_the_margin() {
        // When tau = l/||V||^2 < C, the updated model satisfies S(p,p+) - S(p,p-) = 1.
        let mut rng = seeded(5);
        let d = 30;
        let mut model = BilinearModel::identity(d);
        let mut scratch = StepScratch::default();
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
        let s0 = dyad_kernels::linalg::symmetrize(
            Array2::from_shape_fn((d, d), |_| rng.random_range(-0.2..0.2)).view(),
        );
        let mut sym = BilinearModel::from_matrix(s0.clone());
        let mut scratch = StepScratch::default();
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
            let projected = dyad_kernels::linalg::symmetrize(plain.matrix().view());
            let err = (&*sym.matrix() - &projected)
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            assert!(err < 1e-12, "{err}");
            let asym = (&*sym.matrix() - &sym.matrix().t())
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
        let (_, s, _) = dyad_kernels::linalg::thin_svd(a.view()).unwrap();
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
            &mut StepScratch::default(),
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
