//! Explained variance of (possibly sparse, non-orthogonal) loadings, the sparse-PCA score of
//! the Givens paper (givens.md §6.1). Data `A` is `d × n`: rows = variables, columns = samples,
//! centred by the caller (e.g. per row with training means); loadings `Z` are `d × m`, one
//! component per column.
//!
//! * [`explained_variance`] (plain): `Σ_j ‖Aᵀ z_j‖² / ‖A‖_F²`. For non-orthogonal `z_j` it
//!   double-counts shared variance and can exceed 1.
//! * [`adjusted_explained_variance`] (Zou, Hastie & Tibshirani 2006, §3.4): `Y = AᵀZ`
//!   (`n × m`), thin QR `Y = QR`, adjusted variance `Σ_j R_jj²`, reported as the fraction
//!   `Σ_j R_jj² / ‖A‖_F²`. `R_jj` is the norm of the part of `y_j` not explained by
//!   `y_1..y_{j−1}`, so the result depends on the column order: columns are ordered by
//!   decreasing `‖y_j‖` first (givens.md §6.1 \[A\]; ties keep the given order). It never exceeds
//!   the variance captured by the span of the `y_j`, hence never exceeds 1.
//!
//! `AᵀZ` is formed from the non-zeros of `Z` only (`O(n·nnz(Z))`), and `R_jj` by modified
//! Gram–Schmidt with one re-orthogonalisation (accurate to rounding for the small `m` of sparse
//! PCA). Zero data gives 0.

use ndarray::{Array2, ArrayView2};

/// `Y = AᵀZ` (`n × m`) from the non-zeros of `Z`, each row of `A` read once for every
/// component that loads on it. Each entry of `Y` sums its terms in ascending row order.
fn project(a: ArrayView2<'_, f64>, z: ArrayView2<'_, f64>) -> Array2<f64> {
    assert_eq!(
        a.nrows(),
        z.nrows(),
        "explained variance: A has {} rows but Z has {}",
        a.nrows(),
        z.nrows()
    );
    let (n, m) = (a.ncols(), z.ncols());
    let mut y = Array2::<f64>::zeros((m, n)); // transposed: column j of Y as row j
    for (row, loads) in a.rows().into_iter().zip(z.rows()) {
        for (j, &w) in loads.iter().enumerate() {
            if w != 0.0 {
                y.row_mut(j).scaled_add(w, &row);
            }
        }
    }
    y.reversed_axes()
}

/// Data `A` (`d × n`, centred by the caller) with its total variance `‖A‖_F²` computed once,
/// for scoring many loadings against it (each checkpoint of a sparse-PCA run).
#[derive(Debug, Clone, Copy)]
pub struct Variance<'a> {
    a: ArrayView2<'a, f64>,
    total: f64,
}

impl<'a> Variance<'a> {
    pub fn new(a: ArrayView2<'a, f64>) -> Self {
        Self {
            a,
            total: a.iter().map(|v| v * v).sum(),
        }
    }

    /// Plain explained variance `Σ_j ‖Aᵀz_j‖² / ‖A‖_F²`.
    pub fn plain(&self, z: ArrayView2<'_, f64>) -> f64 {
        if self.total == 0.0 {
            return 0.0;
        }
        let y = project(self.a, z);
        y.iter().map(|v| v * v).sum::<f64>() / self.total
    }

    /// Adjusted explained variance `Σ_j R_jj² / ‖A‖_F²` (module docs).
    pub fn adjusted(&self, z: ArrayView2<'_, f64>) -> f64 {
        if self.total == 0.0 {
            return 0.0;
        }
        let y = project(self.a, z);
        let m = y.ncols();
        let mut cols: Vec<Vec<f64>> = (0..m).map(|j| y.column(j).to_vec()).collect();
        let norm2 = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&p, &q| norm2(&cols[q]).total_cmp(&norm2(&cols[p])));
        let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(x, y)| x * y).sum::<f64>();
        let mut basis: Vec<Vec<f64>> = Vec::with_capacity(m);
        let mut adjusted = 0.0;
        for &j in &order {
            let mut v = std::mem::take(&mut cols[j]);
            for _ in 0..2 {
                for q in &basis {
                    let p = dot(q, &v);
                    v.iter_mut().zip(q).for_each(|(x, &b)| *x -= p * b);
                }
            }
            let r2 = norm2(&v);
            adjusted += r2;
            let r = r2.sqrt();
            // A column in the span of the previous ones adds nothing and no direction.
            if r > 1e-12 * (1.0 + adjusted.sqrt()) {
                basis.push(v.into_iter().map(|x| x / r).collect());
            }
        }
        adjusted / self.total
    }
}

/// Plain explained variance `Σ_j ‖Aᵀz_j‖² / ‖A‖_F²`.
pub fn explained_variance(a: ArrayView2<'_, f64>, z: ArrayView2<'_, f64>) -> f64 {
    Variance::new(a).plain(z)
}

/// Adjusted explained variance `Σ_j R_jj² / ‖A‖_F²` (module docs).
pub fn adjusted_explained_variance(a: ArrayView2<'_, f64>, z: ArrayView2<'_, f64>) -> f64 {
    Variance::new(a).adjusted(z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn uncorrelated_scores_agree_and_correlated_ones_are_discounted() {
        // Orthogonal rows: the scores of Z = I are uncorrelated, both measures agree.
        let a = array![[1.0, -1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]];
        let eye = Array2::<f64>::eye(3);
        assert!((explained_variance(a.view(), eye.view()) - 1.0).abs() < 1e-15);
        assert!((adjusted_explained_variance(a.view(), eye.view()) - 1.0).abs() < 1e-15);
        let e0 = array![[1.0], [0.0], [0.0]];
        assert!((explained_variance(a.view(), e0.view()) - 0.25).abs() < 1e-15);
        assert!((adjusted_explained_variance(a.view(), e0.view()) - 0.25).abs() < 1e-15);
        // Correlated rows: Z = I explains everything plainly, but the adjusted variance
        // discounts the shared part. Hand QR: y0 = (1, −1, 2), y1 = (0.5, 0.5, −1),
        // y2 = (0, 1, 1), ordered by norm² 6, 2 (y2), 1.5 (y1): R_00² = 6, y2 after y0:
        // 2 − (y0·y2)²/6 = 11/6, and the last from the determinant below.
        let b = array![[1.0, -1.0, 2.0], [0.5, 0.5, -1.0], [0.0, 1.0, 1.0]];
        let plain = explained_variance(b.view(), eye.view());
        let adjusted = adjusted_explained_variance(b.view(), eye.view());
        assert!((plain - 1.0).abs() < 1e-15);
        // R_00² R_11² R_22² = det(YᵀY) = det(B)², and R_00² = 6, R_11² = 11/6.
        let det = 1.0 * (0.5 * 1.0 + 1.0) + 1.0 * (0.5 * 1.0 - 0.0) + 2.0 * (0.5 * 1.0 - 0.0);
        let r22 = det * det / (6.0 * 11.0 / 6.0);
        let want = (6.0 + 11.0 / 6.0 + r22) / 9.5;
        assert!((adjusted - want).abs() < 1e-14, "{adjusted} vs {want}");
        assert!(adjusted < plain);
    }

    #[test]
    fn duplicated_components_are_counted_once_by_the_adjusted_variance() {
        let a = array![[1.0, -1.0, 2.0], [0.5, 0.5, -1.0], [0.0, 1.0, 1.0]];
        let z = array![[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]];
        assert!((explained_variance(a.view(), z.view()) - 12.0 / 9.5).abs() < 1e-15);
        assert!((adjusted_explained_variance(a.view(), z.view()) - 6.0 / 9.5).abs() < 1e-15);
        // Non-orthogonal pair: z1 = e0, z2 = (e0 + e1)/√2. Hand QR: y1 = (1, −1, 2),
        // y2 = (1.5, −0.5, 1)/√2; order by norm: ‖y1‖² = 6 > ‖y2‖² = 1.75.
        // R22² = ‖y2‖² − (y1·y2)²/‖y1‖² = 1.75 − (4/√2)²/6 = 1.75 − 8/6.
        let s = 0.5f64.sqrt();
        let z = array![[1.0, s], [0.0, s], [0.0, 0.0]];
        let want = (6.0 + 1.75 - 8.0 / 6.0) / 9.5;
        assert!((adjusted_explained_variance(a.view(), z.view()) - want).abs() < 1e-14);
        // The column order does not matter (sorted by norm first).
        let zr = array![[s, 1.0], [s, 0.0], [0.0, 0.0]];
        assert!((adjusted_explained_variance(a.view(), zr.view()) - want).abs() < 1e-14);
        assert_eq!(
            explained_variance(Array2::<f64>::zeros((3, 2)).view(), z.view()),
            0.0
        );
    }
}
