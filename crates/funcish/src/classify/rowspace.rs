//! The logistic regressions of one training set in the coordinates of its row space: the
//! same problem, solved on an `n × r` matrix instead of `n × (D+1)` when there are fewer
//! training images than weights (`r = min(n, D+1)`).
//!
//! # The maths
//!
//! Let `X̃ = [X, 1]` be the `n × p` training rows with the bias column (`p = D + 1`; `X` alone
//! without bias) and `X̃ = U Σ Vᵀ` its thin SVD (`V` is `p × r` with orthonormal columns).
//! For every `w = V a`:
//!
//! ```text
//! ‖w‖ = ‖a‖,   X̃ w = U Σ a = Z a   (Z = U Σ, n × r),
//! f(w) = ½‖w‖² + C Σ_i log(1 + exp(−y_i x̃_iᵀw)) = ½‖a‖² + C Σ_i log(1 + exp(−y_i z_iᵀa)) = g(a),
//! ∇f(w) = w + C X̃ᵀ ξ = V (a + C Zᵀ ξ) = V ∇g(a)          (ξ_i = (σ(y_i z_iᵀa) − 1) y_i),
//! ```
//!
//! and the minimiser of `f` lies in `span(V)` (the loss sees `w` only through `X̃ w`, and any
//! component orthogonal to the row space only adds to `½‖w‖²`). So `w* = V a*`, with `a*`
//! the minimiser of `g`: LIBLINEAR's `-s 0` problem on the rows of `Z` without a bias column
//! (the bias already sits in `X̃`, regularised, as `-B 1` has it). The stopping rule of
//! [`super::logreg`] reads `‖∇f(w)‖ = ‖∇g(a)‖` and `‖∇f(0)‖ = ‖∇g(0)‖`: it is met at the same
//! precision. Warm starts along the C grid carry `a`. Zero singular values need no care:
//! their columns of `Z` are zero, so the matching `a_j` stay at 0.
//!
//! What differs is the path to the optimum: TRON's preconditioner `diag(∇²)` is taken in the
//! rotated coordinates (where the columns of `Z` are orthogonal with norms `σ_j`, so it
//! captures much of the Hessian's spread). Solutions differ from the direct fit's within the
//! solver's tolerance (`‖w − w*‖ ≤ ‖∇f(w)‖`, `f` being 1-strongly convex), which the tests
//! check.
//!
//! # When
//!
//! One SVD per training set (`O(n p r)`, sequential, shared by every category and C) buys
//! passes over `n × r` numbers instead of `n × p`. Measured once at the paper profile's inner
//! size (960 images, D + 1 = 2,005 weights, `bow_categories`, 8 categories × the 6-value C
//! path, one thread, the other core busy): the SVD took 0.74 s; the fits 533 ms directly and
//! 180 ms in the row space (3.0×: fewer numbers per pass, a 7 MB matrix that stays in cache,
//! and 171 instead of 195 CG steps), so it pays from about 17 categories. The row space is
//! used when `categories · (p − r) > 0.02 · p · r` (twice that break-even, scaled by the
//! flops: saving `∝ n (p − r)` per category, SVD `∝ n p r`): the paper profile's ~1,000
//! categories on 960-image sets, not the quick profile's sets (more images than weights) nor
//! a handful of categories.

use super::logreg::{BatchFit, FitReport, LogRegConfig, fit_logreg_batch};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::thin_svd;
use ndarray::{Array2, ArrayView2, Axis, CowArray, Ix2, concatenate, s};
use std::borrow::Cow;

/// The row space pays when `categories · (p − r) > ROW_SPACE_BREAK_EVEN · p · r`: twice the
/// break-even measured at the paper's inner size (module docs).
const ROW_SPACE_BREAK_EVEN: f64 = 0.02;

/// The design a training set's fits run on: its rows, or their row-space coordinates.
pub(super) enum FitSpace<'a> {
    Direct {
        x: ArrayView2<'a, f64>,
        cfg: &'a LogRegConfig,
    },
    RowSpace {
        /// `Z = U Σ`, `n × r`.
        z: Array2<f64>,
        /// `V`, `p × r`.
        v: Array2<f64>,
        /// The solver's settings with the bias off (it is a column of `X̃`).
        cfg: LogRegConfig,
    },
}

impl<'a> FitSpace<'a> {
    /// The row space when the `categories` fits sharing this design save more than its SVD
    /// costs (module docs, "When"), else the rows themselves (always with `categories = 0`).
    pub(super) fn new(
        x: ArrayView2<'a, f64>,
        cfg: &'a LogRegConfig,
        categories: usize,
    ) -> Result<Self, AlgoError> {
        let (n, d) = x.dim();
        let p = cfg.n_weights(d);
        let r = n.min(p);
        if (categories * (p - r)) as f64 <= ROW_SPACE_BREAK_EVEN * (p * r) as f64 {
            return Ok(Self::Direct { x, cfg });
        }
        let xt = if cfg.bias {
            concatenate(Axis(1), &[x, Array2::ones((n, 1)).view()]).expect("same number of rows")
        } else {
            x.to_owned()
        };
        let (u, s, v) = thin_svd(xt.view()).map_err(|e| AlgoError::Numerical(e.to_string()))?;
        // rows contiguous, as the solver reads them
        let mut z = u.as_standard_layout().into_owned();
        for mut row in z.rows_mut() {
            row.zip_mut_with(&s, |u, &sj| *u *= sj);
        }
        Ok(Self::RowSpace {
            z,
            v,
            cfg: LogRegConfig {
                bias: false,
                ..cfg.clone()
            },
        })
    }

    /// The length of the coefficient vector the fits carry.
    pub(super) fn dim(&self) -> usize {
        match self {
            Self::Direct { x, cfg } => cfg.n_weights(x.ncols()),
            Self::RowSpace { z, .. } => z.ncols(),
        }
    }

    /// [`super::fit_logreg`] on this design (the tests' single fit): `a` (length
    /// [`Self::dim`]) is the warm start on entry and the solution on return.
    #[cfg(test)]
    pub(super) fn fit(
        &self,
        y: &[f64],
        c: f64,
        a: &mut [f64],
        ws: &mut super::Workspace,
    ) -> Result<FitReport, AlgoError> {
        match self {
            Self::Direct { x, cfg } => super::fit_logreg(*x, y, c, cfg, a, ws),
            Self::RowSpace { z, cfg, .. } => super::fit_logreg(z.view(), y, c, cfg, a, ws),
        }
    }

    /// [`fit_logreg_batch`] on this design: each fit's `w` is its `a` (length [`Self::dim`]).
    pub(super) fn fit_batch(&self, fits: &mut [BatchFit<'_>]) -> Vec<Result<FitReport, AlgoError>> {
        match self {
            Self::Direct { x, cfg } => fit_logreg_batch(*x, cfg, fits),
            Self::RowSpace { z, cfg, .. } => fit_logreg_batch(z.view(), cfg, fits),
        }
    }

    /// Other rows (validation, test) in this design's coordinates, to score coefficients
    /// `a` without lifting them: `X̃_o V` (`n_o × r`, bias folded in) once per set instead of
    /// `V a` (`p × r`) per fit. Score them with [`super::logreg::predict_proba`] and [`Self::bias`].
    pub(super) fn project<'b>(&self, rows: ArrayView2<'b, f64>) -> CowArray<'b, f64, Ix2> {
        match self {
            Self::Direct { .. } => rows.into(),
            Self::RowSpace { v, .. } => {
                let d = rows.ncols();
                let mut out = rows.dot(&v.slice(s![..d, ..]));
                if v.nrows() > d {
                    // the bias column of X̃: every row gains V's last row
                    out += &v.row(d);
                }
                out.into()
            }
        }
    }

    /// Whether coefficients carry a bias of their own (only on the rows themselves).
    pub(super) fn bias(&self) -> bool {
        match self {
            Self::Direct { cfg, .. } => cfg.bias,
            Self::RowSpace { .. } => false,
        }
    }

    /// The weights `w` (features, then the bias) of coefficients `a`: `a` itself, or `V a`.
    pub(super) fn weights<'b>(&self, a: &'b [f64]) -> Cow<'b, [f64]> {
        match self {
            Self::Direct { .. } => Cow::Borrowed(a),
            Self::RowSpace { v, .. } => Cow::Owned(v.dot(&ndarray::ArrayView1::from(a)).to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{Workspace, gradient, predict_proba};
    use dyad_core::seeded;
    use rand::Rng;

    /// Integer counts, many zeros: the bag-of-words shape, fewer rows than weights.
    fn counts(n: usize, d: usize, seed: u64) -> (Array2<f64>, Vec<f64>) {
        let mut rng = seeded(seed);
        let x = Array2::from_shape_fn((n, d), |_| {
            if rng.random::<f64>() < 0.6 {
                0.0
            } else {
                f64::from(rng.random_range(1..20u32))
            }
        });
        let y = (0..n)
            .map(|i| {
                if x[[i, 0]] + x[[i, 1]] > 12.0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        (x, y)
    }

    #[test]
    fn the_row_space_fit_is_the_direct_fit_within_the_stopping_rule() {
        for (bias, seed) in [(true, 1), (false, 2)] {
            let (x, y) = counts(40, 90, seed);
            let cfg = LogRegConfig {
                tol: 1e-6,
                bias,
                ..LogRegConfig::default()
            };
            let direct = FitSpace::new(x.view(), &cfg, 0).unwrap();
            let rows = FitSpace::new(x.view(), &cfg, 1000).unwrap();
            assert!(matches!(direct, FitSpace::Direct { .. }));
            let FitSpace::RowSpace { z, v, .. } = &rows else {
                panic!("40 rows, {} weights: the row space", cfg.n_weights(90));
            };
            assert_eq!(z.dim(), (40, 40));
            // V has orthonormal columns and Z Vᵀ = X̃
            let vtv = v.t().dot(v);
            for ((i, j), &e) in vtv.indexed_iter() {
                assert!((e - f64::from(u8::from(i == j))).abs() < 1e-12);
            }
            let xt = z.dot(&v.t());
            for i in 0..40 {
                for j in 0..90 {
                    assert!((xt[[i, j]] - x[[i, j]]).abs() < 1e-10);
                }
                if bias {
                    assert!((xt[[i, 90]] - 1.0).abs() < 1e-10);
                }
            }
            let (mut a1, mut a2) = (vec![0.0; direct.dim()], vec![0.0; rows.dim()]);
            let mut ws = Workspace::default();
            for c in [0.01, 1.0, 100.0] {
                let r1 = direct.fit(&y, c, &mut a1, &mut ws).unwrap();
                let r2 = rows.fit(&y, c, &mut a2, &mut ws).unwrap();
                assert!(r1.converged && r2.converged);
                // the same ‖∇f(0)‖, the same objective to the tolerance
                assert!((r1.grad_norm0 - r2.grad_norm0).abs() <= 1e-9 * r1.grad_norm0);
                let w = rows.weights(&a2);
                assert_eq!(w.len(), cfg.n_weights(90));
                // the lifted solution meets the stopping rule in the original space
                let g = gradient(x.view(), &y, c, bias, &w);
                let gnorm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
                assert!(gnorm <= 1e-6 * r2.grad_norm0 * 1.0001, "C = {c}: {gnorm}");
                // and both are within their gradient norms of the optimum
                let dist: f64 = a1
                    .iter()
                    .zip(w.iter())
                    .map(|(p, q)| (p - q) * (p - q))
                    .sum::<f64>()
                    .sqrt();
                assert!(
                    dist <= r1.grad_norm + gnorm + 1e-9,
                    "C = {c}: ‖w_direct − w_rows‖ = {dist}"
                );
                // other rows scored in the row space equal the lifted weights' scores
                let (other, _) = counts(7, 90, seed + 10);
                let (mut p_rows, mut p_lifted) = (vec![0.0; 7], vec![0.0; 7]);
                predict_proba(
                    rows.project(other.view()).view(),
                    &a2,
                    rows.bias(),
                    &mut p_rows,
                );
                predict_proba(other.view(), &w, bias, &mut p_lifted);
                for (u, v) in p_rows.iter().zip(&p_lifted) {
                    assert!((u - v).abs() < 1e-12, "C = {c}: {u} vs {v}");
                }
                assert!(p_rows.iter().any(|&q| (q - 0.5).abs() > 0.01));
            }
        }
    }

    #[test]
    fn more_rows_than_weights_fit_directly() {
        let (x, _) = counts(60, 40, 3);
        let cfg = LogRegConfig::default();
        assert!(matches!(
            FitSpace::new(x.view(), &cfg, 1000).unwrap(),
            FitSpace::Direct { .. }
        ));
        // 40 rows of 91 weights: the row space for several categories, not for one
        let (x, _) = counts(40, 90, 4);
        assert!(matches!(
            FitSpace::new(x.view(), &cfg, 1).unwrap(),
            FitSpace::Direct { .. }
        ));
        assert!(matches!(
            FitSpace::new(x.view(), &cfg, 5).unwrap(),
            FitSpace::RowSpace { .. }
        ));
    }
}
