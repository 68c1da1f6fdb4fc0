//! Dense kernels for the learners, on `ndarray` matrices: products, decompositions and
//! projections, computed by faer (pure Rust, zero-copy views through faer-ext), sequentially
//! (deterministic, and polite on shared cores). The one module that touches the backend's
//! types: learners import their dense kernels from here.

use faer::linalg::matmul::triangular::{BlockStructure, matmul as tri_matmul};
use faer::{Accum, Par, Side};
use faer_ext::{IntoFaer, IntoNdarray};
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2};

/// Errors of a decomposition (non-convergence or non-finite input).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct LinalgError(pub String);

fn check_finite(a: ArrayView2<'_, f64>, what: &str) -> Result<(), LinalgError> {
    if a.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(LinalgError(format!(
            "{what}: matrix has non-finite entries"
        )))
    }
}

/// `(W + W^T) / 2`.
pub fn symmetrize(w: ArrayView2<'_, f64>) -> Array2<f64> {
    let mut s = &w + &w.t();
    s.mapv_inplace(|v| 0.5 * v);
    s
}

/// Eigendecomposition of a symmetric matrix (only the lower triangle is read): eigenvalues in
/// non-decreasing order and the orthonormal eigenvectors as columns.
pub fn sym_eigen(a: ArrayView2<'_, f64>) -> Result<(Array1<f64>, Array2<f64>), LinalgError> {
    assert_eq!(a.nrows(), a.ncols(), "sym_eigen needs a square matrix");
    check_finite(a, "sym_eigen")?;
    let a = a.as_standard_layout();
    let evd = a
        .view()
        .into_faer()
        .self_adjoint_eigen(Side::Lower)
        .map_err(|e| LinalgError(format!("symmetric eigendecomposition failed: {e:?}")))?;
    let s = evd.S().column_vector();
    let values = Array1::from_iter((0..s.nrows()).map(|i| s[i]));
    let vectors = evd.U().into_ndarray().to_owned();
    Ok((values, vectors))
}

/// The Frobenius-nearest positive semi-definite matrix to `sym(W)` (OASIS spec §4.2: a
/// non-symmetric `W` is symmetrised first): [`psd_projection_sym`] of `(W + W^T)/2`.
pub fn psd_projection(w: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    psd_projection_sym(symmetrize(w).view())
}

/// The Frobenius-nearest positive semi-definite matrix to the symmetric `m` (only its lower
/// triangle is read): with `m = V D V^T`, `Q Q^T` for `Q = V_+ D_+^{1/2}` (the eigenvectors
/// of positive eigenvalues, scaled), formed by a triangular product and mirrored, so the
/// result is exactly symmetric and PSD up to rounding.
pub fn psd_projection_sym(m: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    let (vals, vecs) = sym_eigen(m)?;
    let r = m.nrows();
    let keep: Vec<usize> = (0..r).filter(|&i| vals[i] > 0.0).collect();
    let mut q = Array2::<f64>::zeros((r, keep.len()));
    for (c, &i) in keep.iter().enumerate() {
        let s = vals[i].sqrt();
        q.column_mut(c)
            .zip_mut_with(&vecs.column(i), |o, &v| *o = s * v);
    }
    let mut out = Array2::<f64>::zeros((r, r));
    gemm_sym(out.view_mut(), false, q.view(), q.t());
    Ok(out)
}

/// `a b` (a new matrix).
pub fn matmul(a: ArrayView2<'_, f64>, b: ArrayView2<'_, f64>) -> Array2<f64> {
    assert_eq!(a.ncols(), b.nrows(), "inner dimensions differ");
    let mut out = Array2::<f64>::zeros((a.nrows(), b.ncols()));
    gemm(out.view_mut(), false, a, b);
    out
}

/// `dst = a b`, or `dst += a b` when `add`.
pub fn gemm(
    dst: ArrayViewMut2<'_, f64>,
    add: bool,
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
) {
    faer::linalg::matmul::matmul(
        dst.into_faer(),
        if add { Accum::Add } else { Accum::Replace },
        a.into_faer(),
        b.into_faer(),
        1.0,
        Par::Seq,
    );
}

/// `dst (+)= a b` for a product known to be symmetric: the lower triangle is computed and
/// mirrored, so `dst` is exactly symmetric.
pub fn gemm_sym(
    mut dst: ArrayViewMut2<'_, f64>,
    add: bool,
    a: ArrayView2<'_, f64>,
    b: ArrayView2<'_, f64>,
) {
    tri_matmul(
        dst.view_mut().into_faer(),
        BlockStructure::TriangularLower,
        if add { Accum::Add } else { Accum::Replace },
        a.into_faer(),
        BlockStructure::Rectangular,
        b.into_faer(),
        BlockStructure::Rectangular,
        1.0,
        Par::Seq,
    );
    mirror_lower(dst);
}

/// Copy the strict lower triangle onto the upper one (tiled, for the cache).
fn mirror_lower(mut m: ArrayViewMut2<'_, f64>) {
    const T: usize = 64;
    let n = m.nrows();
    for bi in (0..n).step_by(T) {
        for bj in (0..=bi).step_by(T) {
            for i in bi..(bi + T).min(n) {
                for j in bj..(bj + T).min(i) {
                    m[[j, i]] = m[[i, j]];
                }
            }
        }
    }
}

/// The dot product of two dense slices of equal length (four accumulators, so the
/// reduction vectorises).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut s = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for q in 0..4 {
            s[q] += x[q] * y[q];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (s[0] + s[1]) + (s[2] + s[3]) + tail
}

/// [`dot`] of `a` with four vectors at once, each with exactly its
/// arithmetic (four lanes, the same tail and the same final sum), so the results are the same
/// to the bit; `a` is read once for the four (evaluation's inner loop: a candidate's
/// projection against four queries).
pub fn dot_four<U: AsRef<[f64]>>(a: &[f64], us: &[U; 4]) -> [f64; 4] {
    let mut s = [[0.0f64; 4]; 4];
    let chunks = a.len() / 4;
    for c in 0..chunks {
        let x = &a[4 * c..4 * c + 4];
        for (sb, u) in s.iter_mut().zip(us) {
            let y = &u.as_ref()[4 * c..4 * c + 4];
            for q in 0..4 {
                sb[q] += x[q] * y[q];
            }
        }
    }
    let mut out = [0.0; 4];
    for ((o, sb), u) in out.iter_mut().zip(&s).zip(us) {
        let tail: f64 = a[4 * chunks..]
            .iter()
            .zip(&u.as_ref()[4 * chunks..])
            .map(|(x, y)| x * y)
            .sum();
        *o = (sb[0] + sb[1]) + (sb[2] + sb[3]) + tail;
    }
    out
}

/// `(U, s, V)` of a singular value decomposition `A = U diag(s) V^T`.
pub type Svd = (Array2<f64>, Array1<f64>, Array2<f64>);

/// Thin singular value decomposition `A = U diag(s) V^T` (singular values non-increasing).
pub fn thin_svd(a: ArrayView2<'_, f64>) -> Result<Svd, LinalgError> {
    check_finite(a, "thin_svd")?;
    let a = a.as_standard_layout();
    let svd = a
        .view()
        .into_faer()
        .thin_svd()
        .map_err(|e| LinalgError(format!("SVD failed: {e:?}")))?;
    let s = svd.S().column_vector();
    let s = Array1::from_iter((0..s.nrows()).map(|i| s[i]));
    Ok((
        svd.U().into_ndarray().to_owned(),
        s,
        svd.V().into_ndarray().to_owned(),
    ))
}

// ---- aroma kernels ----

/// A `Vec` of `len` zeros, or an error instead of an abort when the allocation fails (the
/// matrix learners allocate `d x d` state from data-dependent sizes).
pub fn try_zeroed(len: usize, what: &str) -> Result<Vec<f64>, LinalgError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        LinalgError(format!(
            "{what}: cannot allocate {len} f64 ({} MB)",
            len.saturating_mul(8) >> 20
        ))
    })?;
    v.resize(len, 0.0);
    Ok(v)
}

/// A symmetric `n x n` matrix stored as its packed lower triangle, row by row: entry
/// `(i, j)`, `j <= i`, at `i (i + 1) / 2 + j`. Half the memory and half the traffic of a full
/// matrix, and exactly symmetric by construction (the upper triangle is never stored). The
/// covariance factors of f-AROMA and the metric of ITML live here.
///
/// The kernels stream the rows in order: `A x` for a sparse `x` costs `O(n nnz(x))` flops
/// (a gather from each row plus one axpy per non-zero of `x`), a rank-one update
/// `A += alpha s s^T` touches each stored entry once.
#[derive(Debug, Clone, PartialEq)]
pub struct SymPacked {
    n: usize,
    data: Vec<f64>,
}

impl SymPacked {
    /// Number of stored entries, `n (n + 1) / 2`, or an error when it overflows.
    fn packed_len(n: usize) -> Result<usize, LinalgError> {
        n.checked_add(1)
            .and_then(|m| m.checked_mul(n))
            .map(|v| v / 2)
            .ok_or_else(|| LinalgError(format!("packed symmetric matrix of order {n} overflows")))
    }

    /// `c I` of order `n` (fallible allocation).
    pub fn scaled_identity(n: usize, c: f64) -> Result<Self, LinalgError> {
        let mut data = try_zeroed(Self::packed_len(n)?, "packed symmetric matrix")?;
        for i in 0..n {
            data[i * (i + 1) / 2 + i] = c;
        }
        Ok(Self { n, data })
    }

    /// The identity of order `n` (fallible allocation).
    pub fn identity(n: usize) -> Result<Self, LinalgError> {
        Self::scaled_identity(n, 1.0)
    }

    /// From the lower triangle of a square matrix (the upper one is not read).
    pub fn from_lower(a: ArrayView2<'_, f64>) -> Self {
        assert_eq!(a.nrows(), a.ncols(), "SymPacked needs a square matrix");
        let n = a.nrows();
        let mut data = Vec::with_capacity(n * (n + 1) / 2);
        for i in 0..n {
            data.extend((0..=i).map(|j| a[[i, j]]));
        }
        Self { n, data }
    }

    /// The full symmetric matrix.
    pub fn to_dense(&self) -> Array2<f64> {
        let mut a = Array2::<f64>::zeros((self.n, self.n));
        for i in 0..self.n {
            for (j, &v) in self.row(i).iter().enumerate() {
                a[[i, j]] = v;
                a[[j, i]] = v;
            }
        }
        a
    }

    pub fn dim(&self) -> usize {
        self.n
    }

    /// The stored part of row `i`: entries `(i, 0..=i)`.
    pub fn row(&self, i: usize) -> &[f64] {
        let off = i * (i + 1) / 2;
        &self.data[off..off + i + 1]
    }

    /// Entry `(i, j)` (either triangle).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        let (i, j) = if j <= i { (i, j) } else { (j, i) };
        self.data[i * (i + 1) / 2 + j]
    }

    pub fn trace(&self) -> f64 {
        (0..self.n).map(|i| self.data[i * (i + 1) / 2 + i]).sum()
    }

    /// Smallest diagonal entry (`+inf` for order 0).
    pub fn min_diagonal(&self) -> f64 {
        (0..self.n)
            .map(|i| self.data[i * (i + 1) / 2 + i])
            .fold(f64::INFINITY, f64::min)
    }

    /// Whether every stored entry is finite.
    pub fn is_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }

    /// `out = A x` for a sparse `x` (strictly increasing `idx`): `O(n nnz(x))`.
    pub fn mul_sparse(&self, idx: &[usize], val: &[f64], out: &mut [f64]) {
        self.pass(idx, val, out);
    }

    /// `A += alpha s s^T` for a dense `s` of length `n`.
    pub fn rank_one(&mut self, alpha: f64, s: &[f64]) {
        assert_eq!(s.len(), self.n, "rank-one vector length");
        let mut off = 0;
        for i in 0..self.n {
            let c = alpha * s[i];
            let row = &mut self.data[off..off + i + 1];
            for (a, &sj) in row.iter_mut().zip(&s[..=i]) {
                *a += c * sj;
            }
            off += i + 1;
        }
    }

    /// The product pass: rows in order, each contributing through [`SymPacked::product_row`].
    fn pass(&self, idx: &[usize], val: &[f64], out: &mut [f64]) {
        assert_eq!(out.len(), self.n, "output length");
        debug_assert!(idx.windows(2).all(|w| w[0] < w[1]) && idx.len() == val.len());
        out.fill(0.0);
        let (mut k, mut off) = (0usize, 0usize);
        for i in 0..self.n {
            let row = &self.data[off..off + i + 1];
            off += i + 1;
            k = Self::product_row(row, i, k, idx, val, out);
        }
    }

    /// Row `i`'s share of `A x`: the stored entries `(i, l)`, `l <= i`, give
    /// `out[i] += A_il x_l` (a gather over the non-zeros up to `i`), and when `x_i != 0` their
    /// mirror images `(l, i)`, `l < i`, give `out[l] += A_il x_i` (an axpy). `k` counts the
    /// non-zeros with index `< i` on entry; the updated count is returned.
    #[inline]
    fn product_row(
        row: &[f64],
        i: usize,
        mut k: usize,
        idx: &[usize],
        val: &[f64],
        out: &mut [f64],
    ) -> usize {
        let on_diagonal = k < idx.len() && idx[k] == i;
        if on_diagonal {
            k += 1;
        }
        let mut acc = 0.0;
        for (&l, &xl) in idx[..k].iter().zip(&val[..k]) {
            acc += row[l] * xl;
        }
        if on_diagonal {
            let xi = val[k - 1];
            for (o, &a) in out[..i].iter_mut().zip(&row[..i]) {
                *o += xi * a;
            }
        }
        out[i] += acc;
        k
    }
}

// ---- loreta kernels ----

/// `y += alpha x` (slices of equal length). Elementwise, so any vector width gives the same
/// bits; `inline(always)` so that it is compiled with the caller's target features.
#[inline(always)]
pub fn axpy(y: &mut [f64], alpha: f64, x: &[f64]) {
    debug_assert_eq!(y.len(), x.len());
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// `y += a1 x1 + a2 x2` (slices of equal length): a rank-two row update in one pass.
#[inline(always)]
pub fn axpy2(y: &mut [f64], a1: f64, x1: &[f64], a2: f64, x2: &[f64]) {
    debug_assert!(y.len() == x1.len() && y.len() == x2.len());
    for ((yi, &u), &v) in y.iter_mut().zip(x1).zip(x2) {
        *yi += a1 * u + a2 * v;
    }
}

/// The Moore–Penrose pseudo-inverse `A^+` (`m x n` for an `n x m` `A`) from a thin SVD:
/// `V diag(1/s) U^T` over the singular values above `max(n, m) eps s_max` (the usual rank
/// tolerance). The dense reference the LORETA pseudo-inverse updates are tested against.
pub fn pinv(a: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    let (n, m) = a.dim();
    if n == 0 || m == 0 {
        return Ok(Array2::zeros((m, n)));
    }
    let (u, s, v) = thin_svd(a)?;
    let tol = (n.max(m) as f64) * f64::EPSILON * s[0];
    let mut vs = v.clone();
    for (j, &sj) in s.iter().enumerate() {
        let inv = if sj > tol { 1.0 / sj } else { 0.0 };
        vs.column_mut(j).mapv_inplace(|x| x * inv);
    }
    Ok(matmul(vs.view(), u.t()))
}

/// An orthonormal basis (as columns) of the orthogonal complement of the column space of
/// `a` (`n x (n - rank)`), from a full SVD: the left singular vectors beyond the numerical
/// rank (tolerance as in [`pinv`]).
pub fn orthonormal_complement(a: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    check_finite(a, "orthonormal_complement")?;
    let (n, m) = a.dim();
    if m == 0 {
        return Ok(Array2::eye(n));
    }
    let a = a.as_standard_layout();
    let svd = a
        .view()
        .into_faer()
        .svd()
        .map_err(|e| LinalgError(format!("SVD failed: {e:?}")))?;
    let s = svd.S().column_vector();
    let tol = (n.max(m) as f64) * f64::EPSILON * if s.nrows() > 0 { s[0] } else { 0.0 };
    let rank = (0..s.nrows()).filter(|&i| s[i] > tol).count();
    let u = svd.U().into_ndarray();
    Ok(u.slice(ndarray::s![.., rank..]).to_owned())
}

/// `A^{+T} = A (A^T A)^{-1}` (`n x k`) of a tall `n x k` matrix of full column rank, via its
/// thin SVD `A = U S V^T`: `U S^{-1} V^T`. Errors when `A` is not of full column rank (its
/// smallest singular value is below `max(n, k) eps s_max`) or not finite.
pub fn pinv_transposed_full_rank(a: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    let (n, k) = a.dim();
    if k == 0 {
        return Ok(Array2::zeros((n, 0)));
    }
    let (u, s, v) = thin_svd(a)?;
    let tol = (n.max(k) as f64) * f64::EPSILON * s[0];
    if s.len() < k || s[k - 1].is_nan() || s[k - 1] <= tol {
        return Err(LinalgError(format!(
            "matrix is not of full column rank {k} (singular values {} .. {})",
            s[0],
            s[s.len() - 1]
        )));
    }
    let mut us = u;
    for (j, &sj) in s.iter().enumerate() {
        us.column_mut(j).mapv_inplace(|x| x / sj);
    }
    Ok(matmul(us.view(), v.t()))
}

// ---- tensor_rank kernels ----

/// The Cholesky factorisation of a symmetric positive-definite `A` (lower triangle read).
fn cholesky(
    a: ArrayView2<'_, f64>,
    what: &str,
) -> Result<faer::linalg::solvers::Llt<f64>, LinalgError> {
    check_finite(a, what)?;
    a.as_standard_layout()
        .view()
        .into_faer()
        .llt(Side::Lower)
        .map_err(|e| LinalgError(format!("Cholesky factorisation failed: {e:?}")))
}

/// Solve `A x = b` for a symmetric positive-definite `A` (only its lower triangle is read) by
/// Cholesky factorisation; an error when `A` is not numerically positive definite.
pub fn spd_solve(a: ArrayView2<'_, f64>, b: &[f64]) -> Result<Vec<f64>, LinalgError> {
    use faer::linalg::solvers::Solve;
    assert_eq!(a.nrows(), a.ncols(), "spd_solve needs a square matrix");
    assert_eq!(
        a.nrows(),
        b.len(),
        "spd_solve: right-hand side of the wrong length"
    );
    let llt = cholesky(a, "spd_solve")?;
    let mut x = faer::Mat::<f64>::from_fn(b.len(), 1, |i, _| b[i]);
    llt.solve_in_place(x.as_mut());
    Ok((0..b.len()).map(|i| x[(i, 0)]).collect())
}

/// The inverse of a symmetric positive-definite `A` (only its lower triangle is read) by
/// Cholesky factorisation, symmetrised (exactly symmetric); an error when `A` is not
/// numerically positive definite.
pub fn spd_inverse(a: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    use faer::linalg::solvers::Solve;
    assert_eq!(a.nrows(), a.ncols(), "spd_inverse needs a square matrix");
    let n = a.nrows();
    let llt = cholesky(a, "spd_inverse")?;
    let mut x = faer::Mat::<f64>::identity(n, n);
    llt.solve_in_place(x.as_mut());
    Ok(Array2::from_shape_fn((n, n), |(i, j)| {
        if i == j {
            x[(i, i)]
        } else {
            0.5 * (x[(i, j)] + x[(j, i)])
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;

    #[test]
    fn four_dot_products_at_once_are_each_that_of_dot_to_the_bit() {
        let mut rng = seeded(5);
        // Four dot products at once: each that of `dot`, to the bit, for every tail length.
        for len in 0..13 {
            let v = |rng: &mut dyad_core::Rng| -> Vec<f64> {
                (0..len)
                    .map(|_| rng.random_range(-1.0..1.0) * 10f64.powi(rng.random_range(-8..8)))
                    .collect()
            };
            let a = v(&mut rng);
            let us = [v(&mut rng), v(&mut rng), v(&mut rng), v(&mut rng)];
            let four = dot_four(&a, &us);
            for (d, u) in four.iter().zip(&us) {
                assert_eq!(d.to_bits(), dot(&a, u).to_bits(), "{len}");
            }
        }
    }

    fn random(n: usize, m: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        Array2::from_shape_fn((n, m), |_| rng.random_range(-1.0..1.0))
    }

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn eigen_reconstructs_and_is_orthonormal() {
        let s = symmetrize(random(30, 30, 1).view());
        let (d, v) = sym_eigen(s.view()).unwrap();
        assert!(d.windows(2).into_iter().all(|w| w[0] <= w[1]));
        let vtv = v.t().dot(&v);
        assert!(max_abs(&(&vtv - &Array2::<f64>::eye(30))) < 1e-12);
        let rec = v.dot(&Array2::from_diag(&d)).dot(&v.t());
        assert!(max_abs(&(&rec - &s)) < 1e-12);
    }

    #[test]
    fn psd_projection_is_psd_symmetric_nearest_and_idempotent() {
        let w = random(25, 25, 2);
        let p = psd_projection(w.view()).unwrap();
        assert!(max_abs(&(&p - &p.t())) < 1e-12);
        let (d, _) = sym_eigen(p.view()).unwrap();
        assert!(d[0] > -1e-10, "smallest eigenvalue {}", d[0]);
        // Projecting a PSD matrix changes nothing.
        assert!(max_abs(&(&psd_projection(p.view()).unwrap() - &p)) < 1e-10);
        // Nearest: the residual sym(W) - P is negative semi-definite and orthogonal to P.
        let r = &symmetrize(w.view()) - &p;
        let (dr, _) = sym_eigen(r.view()).unwrap();
        assert!(dr[dr.len() - 1] < 1e-10);
        assert!((&r * &p).sum().abs() < 1e-9);
    }

    #[test]
    fn psd_projection_matches_the_eigenvalue_clipping_formula() {
        // Reference: V max(D, 0) V^T by ndarray's plain products.
        let w = symmetrize(random(30, 30, 14).view());
        let (d, v) = sym_eigen(w.view()).unwrap();
        assert!(d[0] < -0.5, "test matrix should be indefinite");
        let clipped = Array2::from_diag(&d.mapv(|x| x.max(0.0)));
        let reference = v.dot(&clipped).dot(&v.t());
        let p = psd_projection_sym(w.view()).unwrap();
        assert!(max_abs(&(&p - &reference)) < 1e-12);
        assert_eq!(max_abs(&(&p - &p.t())), 0.0, "exactly symmetric");
        assert!(sym_eigen(p.view()).unwrap().0[0] >= -1e-12);
    }

    #[test]
    fn products_match_ndarray() {
        let (a, b) = (random(7, 5, 4), random(5, 9, 5));
        assert!(max_abs(&(&matmul(a.view(), b.view()) - &a.dot(&b))) < 1e-13);
        let mut acc = a.dot(&b);
        gemm(acc.view_mut(), true, a.view(), b.view());
        assert!(max_abs(&(&acc - &(2.0 * &a.dot(&b)))) < 1e-13);
        let mut s = Array2::<f64>::zeros((7, 7));
        gemm_sym(s.view_mut(), false, a.view(), a.t());
        assert!(max_abs(&(&s - &a.dot(&a.t()))) < 1e-13);
        assert_eq!(max_abs(&(&s - &s.t())), 0.0);
        let (x, y): (Vec<f64>, Vec<f64>) = (0..11).map(|i| (i as f64, 1.0 - i as f64)).unzip();
        let want: f64 = x.iter().zip(&y).map(|(p, q)| p * q).sum();
        assert!((dot(&x, &y) - want).abs() < 1e-12);
    }

    #[test]
    fn svd_reconstructs() {
        let a = random(12, 7, 3);
        let (u, s, v) = thin_svd(a.view()).unwrap();
        assert_eq!((u.dim(), s.len(), v.dim()), ((12, 7), 7, (7, 7)));
        let rec = u.dot(&Array2::from_diag(&s)).dot(&v.t());
        assert!(max_abs(&(&rec - &a)) < 1e-12);
        assert!(s.windows(2).into_iter().all(|w| w[0] >= w[1]));
    }

    #[test]
    fn non_finite_input_is_an_error() {
        let mut a = Array2::<f64>::eye(3);
        a[[1, 1]] = f64::NAN;
        assert!(sym_eigen(a.view()).is_err());
    }

    // ---- aroma kernel tests ----

    fn random_sparse_vec(n: usize, nnz: usize, seed: u64) -> (Vec<usize>, Vec<f64>) {
        let mut rng = seeded(seed);
        let mut idx: Vec<usize> = rand::seq::index::sample(&mut rng, n, nnz).into_vec();
        idx.sort_unstable();
        let val = idx.iter().map(|_| rng.random_range(-1.0..1.0)).collect();
        (idx, val)
    }

    #[test]
    fn packed_products_and_updates_match_dense_references() {
        for (n, nnz) in [(1, 1), (2, 1), (7, 3), (40, 9), (40, 40), (33, 0)] {
            let a = symmetrize(random(n, n, n as u64).view());
            let p = SymPacked::from_lower(a.view());
            assert_eq!(p.to_dense(), a);
            assert_eq!(p.get(0, n - 1), a[[0, n - 1]]);
            assert!((p.trace() - a.diag().sum()).abs() < 1e-12);
            let (idx, val) = random_sparse_vec(n, nnz, 7 + n as u64);
            let mut x = Array1::<f64>::zeros(n);
            for (&i, &v) in idx.iter().zip(&val) {
                x[i] = v;
            }
            let mut out = vec![f64::NAN; n];
            p.mul_sparse(&idx, &val, &mut out);
            let want = a.dot(&x);
            assert!(want.iter().zip(&out).all(|(w, o)| (w - o).abs() < 1e-12));
            // Rank-one update, then the product with the updated matrix.
            let s: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let sv = Array1::from(s.clone());
            let outer = sv
                .view()
                .insert_axis(ndarray::Axis(1))
                .dot(&sv.view().insert_axis(ndarray::Axis(0)));
            let updated = &a - &(0.3 * &outer);
            let mut q = p.clone();
            q.rank_one(-0.3, &s);
            assert!(max_abs(&(&q.to_dense() - &updated)) < 1e-14);
            q.mul_sparse(&idx, &val, &mut out);
            let want = updated.dot(&x);
            assert!(want.iter().zip(&out).all(|(w, o)| (w - o).abs() < 1e-12));
        }
        let id = SymPacked::scaled_identity(4, 2.5).unwrap();
        assert_eq!(id.to_dense(), Array2::<f64>::eye(4) * 2.5);
        assert_eq!(id.min_diagonal(), 2.5);
        assert!(SymPacked::identity(usize::MAX).is_err());
        assert!(try_zeroed(usize::MAX, "huge").is_err());
    }

    #[test]
    fn loreta_kernels_match_plain_loops() {
        let (x, a, b): (Vec<f64>, Vec<f64>, Vec<f64>) = (0..11)
            .map(|i| (i as f64 * 0.5 - 2.0, 1.0 - i as f64, (i * i) as f64 * 0.1))
            .fold(
                (vec![], vec![], vec![]),
                |(mut p, mut q, mut r), (u, v, w)| {
                    p.push(u);
                    q.push(v);
                    r.push(w);
                    (p, q, r)
                },
            );
        let mut y = x.clone();
        axpy(&mut y, 2.0, &a);
        axpy2(&mut y, -1.0, &b, 0.5, &x);
        for i in 0..11 {
            assert!((y[i] - (x[i] + 2.0 * a[i] - b[i] + 0.5 * x[i])).abs() < 1e-12);
        }
    }

    #[test]
    fn pinv_satisfies_the_penrose_conditions() {
        // Full rank (tall and wide) and rank deficient (rank 3 of a 9 x 6 product).
        let deficient = random(9, 3, 8).dot(&random(3, 6, 9));
        for a in [random(10, 4, 6), random(4, 10, 7), deficient] {
            let p = pinv(a.view()).unwrap();
            assert_eq!(p.dim(), (a.ncols(), a.nrows()));
            let apa = a.dot(&p).dot(&a);
            let pap = p.dot(&a).dot(&p);
            let (ap, pa) = (a.dot(&p), p.dot(&a));
            assert!(max_abs(&(&apa - &a)) < 1e-12);
            assert!(max_abs(&(&pap - &p)) < 1e-11 * (1.0 + max_abs(&p)));
            assert!(max_abs(&(&ap - &ap.t())) < 1e-12);
            assert!(max_abs(&(&pa - &pa.t())) < 1e-12);
        }
        let a = random(10, 4, 6);
        let pt = pinv_transposed_full_rank(a.view()).unwrap();
        assert!(max_abs(&(&pt.t() - &pinv(a.view()).unwrap())) < 1e-13);
        let gram_inv = a.t().dot(&pt); // A^T A (A^T A)^{-1} = I
        assert!(max_abs(&(&gram_inv - &Array2::<f64>::eye(4))) < 1e-12);
        let deficient = random(9, 3, 8).dot(&random(3, 4, 9));
        assert!(pinv_transposed_full_rank(deficient.view()).is_err());
    }

    #[test]
    fn orthonormal_complement_spans_the_rest() {
        let a = random(9, 3, 10);
        let c = orthonormal_complement(a.view()).unwrap();
        assert_eq!(c.dim(), (9, 6));
        assert!(max_abs(&(&c.t().dot(&c) - &Array2::<f64>::eye(6))) < 1e-12);
        assert!(max_abs(&c.t().dot(&a)) < 1e-12);
    }

    // ---- tensor_rank kernel tests ----

    #[test]
    fn spd_solve_solves_and_rejects_indefinite() {
        let a = random(9, 9, 21);
        let mut spd = a.t().dot(&a);
        for i in 0..9 {
            spd[[i, i]] += 0.5;
        }
        let b: Vec<f64> = (0..9).map(|i| i as f64 - 4.0).collect();
        let x = spd_solve(spd.view(), &b).unwrap();
        let r = spd.dot(&Array1::from(x)) - Array1::from(b.clone());
        assert!(r.iter().all(|v| v.abs() < 1e-10));
        let neg = -&spd;
        assert!(spd_solve(neg.view(), &b).is_err());
    }
}
