//! Dense decompositions for the learners, on `ndarray` matrices, computed by faer (pure Rust,
//! zero-copy views through faer-ext). One small module so the rest of dyad never touches the
//! backend's types.

use faer::Side;
use faer_ext::{IntoFaer, IntoNdarray};
use ndarray::{Array1, Array2, ArrayView2, Axis};

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

/// The Frobenius-nearest positive semi-definite matrix to `sym(W)`: `V max(D, 0) V^T` with
/// `V D V^T = (W + W^T)/2` (OASIS spec §4.2: a non-symmetric `W` is symmetrised first).
pub fn psd_projection(w: ArrayView2<'_, f64>) -> Result<Array2<f64>, LinalgError> {
    let (d, v) = sym_eigen(symmetrize(w).view())?;
    // V diag(max(d, 0)) V^T, scaling columns then one product.
    let mut vd = v.clone();
    for (mut col, &lambda) in vd.axis_iter_mut(Axis(1)).zip(d.iter()) {
        col.mapv_inplace(|x| x * lambda.max(0.0));
    }
    Ok(vd.dot(&v.t()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;

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
}
