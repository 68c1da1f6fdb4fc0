//! Test references for the AROMA family: the per-round objectives (3) and (11) written out
//! densely, a derivative-free-of-assumptions Newton minimiser (finite-difference gradient and
//! Hessian) to minimise them directly, Cholesky parametrisations of SPD matrices, and random
//! sparse rounds.

use dyad_core::Rng;
use dyad_kernels::linalg::sym_eigen;
use ndarray::{Array1, Array2};
use rand::Rng as _;
use rand::seq::index::sample;

/// `(log det A, A^{-1})` of a symmetric matrix, or `None` unless it is positive definite.
pub fn logdet_inverse(a: &Array2<f64>) -> Option<(f64, Array2<f64>)> {
    let (vals, vecs) = sym_eigen(a.view()).ok()?;
    if vals.iter().any(|&v| v.is_nan() || v <= 0.0) {
        return None;
    }
    let logdet = vals.iter().map(|v| v.ln()).sum();
    let scaled = Array2::from_shape_fn(vecs.dim(), |(i, j)| vecs[[i, j]] / vals[j]);
    Some((logdet, scaled.dot(&vecs.t())))
}

/// AROW's per-round objective (3), with `KL(N(w, Σ) || N(w0, Σ0))` in full (constants
/// included); `+inf` when `Σ` is not positive definite.
pub fn arow_objective(
    w: &Array1<f64>,
    sigma: &Array2<f64>,
    w0: &Array1<f64>,
    sigma0: &Array2<f64>,
    x: &Array1<f64>,
    y: f64,
    r: f64,
) -> f64 {
    let Some((ld, _)) = logdet_inverse(sigma) else {
        return f64::INFINITY;
    };
    let (ld0, inv0) = logdet_inverse(sigma0).expect("prior covariance is PD");
    let dw = w - w0;
    let d = w.len() as f64;
    let kl = 0.5 * (ld0 - ld + (&inv0 * sigma).sum() + dw.dot(&inv0.dot(&dw)) - d);
    let hinge = (1.0 - y * w.dot(x)).max(0.0);
    kl + hinge * hinge / (2.0 * r) + x.dot(&sigma.dot(x)) / (2.0 * r)
}

/// The f-AROMA per-round objective (11) in `(W, Λ, Ω)` around `(W0, Λ0, Ω0)`; `+inf` when a
/// factor is not positive definite.
#[allow(clippy::too_many_arguments)]
pub fn aroma_objective(
    w: &Array2<f64>,
    lambda: &Array2<f64>,
    omega: &Array2<f64>,
    w0: &Array2<f64>,
    lambda0: &Array2<f64>,
    omega0: &Array2<f64>,
    q: &Array1<f64>,
    p: &Array1<f64>,
    r: f64,
) -> f64 {
    let (m, n) = w.dim();
    let (Some((ldl, _)), Some((ldo, _))) = (logdet_inverse(lambda), logdet_inverse(omega)) else {
        return f64::INFINITY;
    };
    let (ldl0, il0) = logdet_inverse(lambda0).expect("PD");
    let (ldo0, io0) = logdet_inverse(omega0).expect("PD");
    let dw = w - w0;
    let trace_w = (il0.dot(&dw).dot(&io0) * &dw).sum();
    let hinge = (1.0 - q.dot(&w.dot(p))).max(0.0);
    0.5 * n as f64 * (ldl0 - ldl)
        + 0.5 * m as f64 * (ldo0 - ldo)
        + 0.5 * trace_w
        + hinge * hinge / (2.0 * r)
        + 0.5 * (&il0 * lambda).sum() * (&io0 * omega).sum()
        + p.dot(&omega.dot(p)) * q.dot(&lambda.dot(q)) / (2.0 * r)
}

/// The SPD matrix `L L^T` from the row-packed lower triangle `l` of `L` (`d (d+1) / 2`).
pub fn spd_from_cholesky(l: &[f64], d: usize) -> Array2<f64> {
    let mut lm = Array2::<f64>::zeros((d, d));
    let mut k = 0;
    for i in 0..d {
        for j in 0..=i {
            lm[[i, j]] = l[k];
            k += 1;
        }
    }
    lm.dot(&lm.t())
}

/// The row-packed lower Cholesky factor of an SPD matrix (plain Cholesky–Banachiewicz).
pub fn spd_to_cholesky(a: &Array2<f64>) -> Vec<f64> {
    let d = a.nrows();
    let mut l = Array2::<f64>::zeros((d, d));
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[[i, k]] * l[[j, k]]).sum();
            l[[i, j]] = if i == j {
                (a[[i, i]] - s).sqrt()
            } else {
                (a[[i, j]] - s) / l[[j, j]]
            };
        }
    }
    (0..d)
        .flat_map(|i| (0..=i).map(move |j| (i, j)))
        .map(|ij| l[ij])
        .collect()
}

/// Minimise a smooth function by damped Newton steps with central finite-difference
/// gradient and Hessian, eigenvalue-floored, with Armijo backtracking; stops when the
/// gradient's largest entry is below `tol` (or progress stalls).
pub fn minimise(f: &dyn Fn(&[f64]) -> f64, x0: Vec<f64>, tol: f64) -> Vec<f64> {
    let n = x0.len();
    let mut x = x0;
    let mut fx = f(&x);
    assert!(fx.is_finite(), "start must be feasible");
    let at = |x: &[f64], moves: &[(usize, f64)]| {
        let mut y = x.to_vec();
        for &(i, h) in moves {
            y[i] += h;
        }
        f(&y)
    };
    for _ in 0..100 {
        let hg = 1e-5;
        let g: Vec<f64> = (0..n)
            .map(|i| (at(&x, &[(i, hg)]) - at(&x, &[(i, -hg)])) / (2.0 * hg))
            .collect();
        if g.iter().all(|v| v.abs() < tol) {
            break;
        }
        let hh = 1e-4;
        let mut hess = Array2::<f64>::zeros((n, n));
        for i in 0..n {
            for j in 0..=i {
                let v = if i == j {
                    (at(&x, &[(i, hh)]) - 2.0 * fx + at(&x, &[(i, -hh)])) / (hh * hh)
                } else {
                    (at(&x, &[(i, hh), (j, hh)])
                        - at(&x, &[(i, hh), (j, -hh)])
                        - at(&x, &[(i, -hh), (j, hh)])
                        + at(&x, &[(i, -hh), (j, -hh)]))
                        / (4.0 * hh * hh)
                };
                hess[[i, j]] = v;
                hess[[j, i]] = v;
            }
        }
        let (vals, vecs) = sym_eigen(hess.view()).expect("finite Hessian");
        let floor = 1e-8 * vals.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let gv = Array1::from(g.clone());
        let coef = vecs.t().dot(&gv);
        let dir: Array1<f64> = -vecs.dot(&Array1::from_shape_fn(n, |k| {
            coef[k] / vals[k].abs().max(floor)
        }));
        let slope = gv.dot(&dir);
        let mut t = 1.0;
        let mut moved = false;
        for _ in 0..60 {
            let y: Vec<f64> = x.iter().zip(&dir).map(|(a, d)| a + t * d).collect();
            let fy = f(&y);
            if fy <= fx + 1e-4 * t * slope {
                x = y;
                fx = fy;
                moved = true;
                break;
            }
            t *= 0.5;
        }
        if !moved {
            break;
        }
    }
    x
}

/// A random sparse vector of length `d` with `nnz` non-zeros in `[-1, 1]` scaled by `scale`,
/// as (indices, values).
pub fn random_sparse(d: usize, nnz: usize, scale: f64, rng: &mut Rng) -> (Vec<usize>, Vec<f64>) {
    let mut idx = sample(rng, d, nnz.min(d)).into_vec();
    idx.sort_unstable();
    let val = idx
        .iter()
        .map(|_| scale * rng.random_range(-1.0..1.0))
        .collect();
    (idx, val)
}

/// The dense vector of a sparse one.
pub fn dense(v: &(Vec<usize>, Vec<f64>), d: usize) -> Array1<f64> {
    let mut x = Array1::zeros(d);
    for (&i, &a) in v.0.iter().zip(&v.1) {
        x[i] = a;
    }
    x
}

/// `vec(q p^T)` (column-major: entry `k + l m` is `q_k p_l`).
pub fn vec_outer(q: &Array1<f64>, p: &Array1<f64>) -> Array1<f64> {
    let m = q.len();
    Array1::from_shape_fn(m * p.len(), |i| q[i % m] * p[i / m])
}

/// `vec(W)` (column-major) of an `m x n` matrix.
pub fn vec_of(w: &Array2<f64>) -> Array1<f64> {
    let m = w.nrows();
    Array1::from_shape_fn(w.len(), |i| w[[i % m, i / m]])
}

/// A random symmetric positive-definite matrix with eigenvalues at least `floor`.
pub fn random_spd(d: usize, floor: f64, rng: &mut Rng) -> Array2<f64> {
    let b = Array2::from_shape_fn((d, d), |_| rng.random_range(-0.5..0.5));
    let s = b.t().dot(&b) + Array2::<f64>::eye(d) * floor;
    dyad_kernels::linalg::symmetrize(s.view())
}

/// A stream of rounds `(q, p)` (sparse, non-negative `q`; `p = p+ - p-`) that the `m x n`
/// matrix `v` separates with margin `q^T V p >= 1`; the sign of `p` is chosen so, and rounds
/// with `|q^T V p| < 1` are skipped.
pub type Round = ((Vec<usize>, Vec<f64>), (Vec<usize>, Vec<f64>));

pub fn separable_rounds(v: &Array2<f64>, count: usize, rng: &mut Rng) -> Vec<Round> {
    let (m, n) = v.dim();
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let (qi, qv) = random_sparse(m, 2.min(m), 1.0, rng);
        let qv: Vec<f64> = qv.iter().map(|x| x.abs()).collect();
        let (pi, mut pv) = random_sparse(n, 3.min(n), 1.0, rng);
        let q = dense(&(qi.clone(), qv.clone()), m);
        let p = dense(&(pi.clone(), pv.clone()), n);
        let s = q.dot(&v.dot(&p));
        if s.abs() < 1.0 {
            continue;
        }
        if s < 0.0 {
            pv.iter_mut().for_each(|x| *x = -*x);
        }
        out.push(((qi, qv), (pi, pv)));
    }
    out
}
