//! Givens rotations applied in place, column-major storage for matrices whose columns are
//! rotated, and the coordinate-selection rules of Algorithm 1.
//!
//! **Sign convention** (givens.md §1.2, fixed once for the whole family): `G(i, j, θ)` is the
//! identity except `G_ii = G_jj = c`, `G_ij = −s`, `G_ji = s` (`c = cos θ`, `s = sin θ`).
//! Right-multiplication `M ← M·G(i, j, θ)` touches two columns only:
//!
//! ```text
//! M[:, i] ← c·M[:, i] + s·M[:, j]          M[:, j] ← −s·M[:, i] + c·M[:, j]
//! ```
//!
//! 4 multiplications and 2 additions per row: 6 flops per row, "6d" for a d-row matrix (spec
//! §1.2 \[T\]). The transposed product `M ← G(i, j, θ)ᵀ·M` (Algorithm 6 rotates the rows of its
//! data matrix) is the same kernel on rows `i` and `j`.

use rand::Rng as _;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use dyad_core::Rng;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, s};

/// A Givens rotation `G(i, j, θ)` as its pair and `(cos θ, sin θ)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Givens {
    pub i: usize,
    pub j: usize,
    pub c: f64,
    pub s: f64,
}

impl Givens {
    pub fn new(i: usize, j: usize, theta: f64) -> Self {
        let (s, c) = theta.sin_cos();
        Self { i, j, c, s }
    }

    /// The dense `d × d` matrix (tests and references only).
    pub fn to_dense(&self, d: usize) -> Array2<f64> {
        let mut g = Array2::eye(d);
        g[[self.i, self.i]] = self.c;
        g[[self.j, self.j]] = self.c;
        g[[self.i, self.j]] = -self.s;
        g[[self.j, self.i]] = self.s;
        g
    }
}

/// `(x, y) ← (c x + s y, −s x + c y)` elementwise: the two columns (or rows) a Givens rotation
/// touches. 6 flops per element pair. Written as a plain zip so it vectorises.
#[inline]
pub fn rotate_pair(x: &mut [f64], y: &mut [f64], c: f64, s: f64) {
    assert_eq!(x.len(), y.len(), "rotate_pair: lengths differ");
    for (a, b) in x.iter_mut().zip(y.iter_mut()) {
        let (u, v) = (*a, *b);
        *a = c * u + s * v;
        *b = c * v - s * u;
    }
}

/// `M ← M·G(i, j, θ)` for any ndarray layout (strided columns: prefer [`ColMatrix`] in hot
/// loops). `i != j` required.
pub fn rotate_cols(mut m: ArrayViewMut2<'_, f64>, g: Givens) {
    assert!(g.i != g.j && g.i < m.ncols() && g.j < m.ncols());
    let (mut a, mut b) = m.multi_slice_mut((s![.., g.i], s![.., g.j]));
    ndarray::Zip::from(&mut a).and(&mut b).for_each(|x, y| {
        let (u, v) = (*x, *y);
        *x = g.c * u + g.s * v;
        *y = g.c * v - g.s * u;
    });
}

/// `M ← G(i, j, θ)ᵀ·M` for any ndarray layout: rows `i` and `j` rotated like columns in
/// [`rotate_cols`].
pub fn rotate_rows(m: ArrayViewMut2<'_, f64>, g: Givens) {
    rotate_cols(m.reversed_axes(), g);
}

/// A dense matrix stored column by column (each column one contiguous slice), for the
/// matrices whose columns Givens rotations update: `AU` (sparse PCA) and `U`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColMatrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl ColMatrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    pub fn identity(d: usize) -> Self {
        let mut m = Self::zeros(d, d);
        for k in 0..d {
            m.data[k * d + k] = 1.0;
        }
        m
    }

    /// Copy of an ndarray matrix (any layout).
    pub fn from_array(a: ArrayView2<'_, f64>) -> Self {
        let (rows, cols) = a.dim();
        let mut data = Vec::with_capacity(rows * cols);
        for col in a.columns() {
            data.extend(col.iter().copied());
        }
        Self { rows, cols, data }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn col(&self, j: usize) -> &[f64] {
        &self.data[j * self.rows..(j + 1) * self.rows]
    }

    pub fn col_mut(&mut self, j: usize) -> &mut [f64] {
        &mut self.data[j * self.rows..(j + 1) * self.rows]
    }

    /// Columns `i` and `j` (`i != j`), both mutable.
    pub fn pair_mut(&mut self, i: usize, j: usize) -> (&mut [f64], &mut [f64]) {
        assert!(i != j && i < self.cols && j < self.cols);
        let r = self.rows;
        let (lo, hi) = (i.min(j), i.max(j));
        let (head, tail) = self.data.split_at_mut(hi * r);
        let a = &mut head[lo * r..(lo + 1) * r];
        let b = &mut tail[..r];
        if i < j { (a, b) } else { (b, a) }
    }

    /// `M ← M·G(i, j, θ)`: 6·rows flops.
    #[inline]
    pub fn rotate(&mut self, g: Givens) {
        let (x, y) = self.pair_mut(g.i, g.j);
        rotate_pair(x, y, g.c, g.s);
    }

    /// The matrix as a standard-layout ndarray (`rows × cols`).
    pub fn to_array(&self) -> Array2<f64> {
        Array2::from_shape_fn((self.rows, self.cols), |(r, c)| {
            self.data[c * self.rows + r]
        })
    }

    /// A `rows × cols` view (column-major strides, no copy).
    pub fn view(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.cols, self.rows), &self.data)
            .expect("consistent shape")
            .reversed_axes()
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }
}

/// `max_ab |(UᵀU − I)_ab|`: the orthogonality defect of the columns of `u`.
pub fn orthogonality_defect(u: ArrayView2<'_, f64>) -> f64 {
    let g = u.t().dot(&u);
    let mut worst = 0.0f64;
    for ((a, b), v) in g.indexed_iter() {
        let want = if a == b { 1.0 } else { 0.0 };
        worst = worst.max((v - want).abs());
    }
    worst
}

/// How Algorithm 1 chooses the next coordinate pair `(i, j)`, `i < j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// Uniformly at random among the `d(d−1)/2` pairs, with replacement across steps
    /// (Algorithm 1 line 1 \[T\]).
    #[default]
    Uniform,
    /// Each sweep visits every pair once, in a fresh random order: sampling without
    /// replacement, as Algorithm 4 of the supplement does (its "until the objective can
    /// improve" needs no special case here: a pair that cannot improve leaves `U` unchanged).
    Shuffled,
    /// Each sweep visits the pairs in the fixed order (0,1), (0,2), …, (d−2, d−1) — the
    /// cyclic Jacobi order; deterministic.
    Cyclic,
}

/// Draws coordinate pairs by a [`Selection`] rule.
#[derive(Debug, Clone)]
pub struct PairSelector {
    d: usize,
    rule: Selection,
    order: Vec<(u32, u32)>,
    next: usize,
}

impl PairSelector {
    /// A selector over the pairs of `0..d` (`d ≥ 2`).
    pub fn new(d: usize, rule: Selection) -> Self {
        assert!(d >= 2, "a pair needs two coordinates");
        let order = match rule {
            Selection::Uniform => Vec::new(),
            Selection::Shuffled | Selection::Cyclic => (0..d as u32)
                .flat_map(|i| (i + 1..d as u32).map(move |j| (i, j)))
                .collect(),
        };
        let next = order.len();
        Self {
            d,
            rule,
            order,
            next,
        }
    }

    /// Number of pairs `d(d−1)/2`: one sweep.
    pub fn sweep(&self) -> u64 {
        (self.d as u64) * (self.d as u64 - 1) / 2
    }

    /// The next pair `(i, j)`, `i < j`.
    pub fn next(&mut self, rng: &mut Rng) -> (usize, usize) {
        match self.rule {
            Selection::Uniform => {
                // Ordered pair of distinct indices, then sorted: uniform over unordered pairs.
                let a = rng.random_range(0..self.d);
                let mut b = rng.random_range(0..self.d - 1);
                if b >= a {
                    b += 1;
                }
                (a.min(b), a.max(b))
            }
            Selection::Shuffled | Selection::Cyclic => {
                if self.next == self.order.len() {
                    if self.rule == Selection::Shuffled {
                        self.order.shuffle(rng);
                    }
                    self.next = 0;
                }
                let (i, j) = self.order[self.next];
                self.next += 1;
                (i as usize, j as usize)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use std::collections::HashMap;

    fn random(n: usize, m: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        Array2::from_shape_fn((n, m), |_| rng.random_range(-1.0..1.0))
    }

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn in_place_rotations_match_the_dense_product_and_convention() {
        let a = random(7, 5, 1);
        let g = Givens::new(1, 3, 0.7);
        let want = a.dot(&g.to_dense(5));
        // The fixed convention: G_ij = −s, G_ji = s.
        let dense = g.to_dense(5);
        assert_eq!(dense[[1, 3]], -0.7f64.sin());
        assert_eq!(dense[[3, 1]], 0.7f64.sin());
        let mut b = a.clone();
        rotate_cols(b.view_mut(), g);
        assert!(max_abs(&(&b - &want)) < 1e-15);
        let mut m = ColMatrix::from_array(a.view());
        m.rotate(g);
        assert!(max_abs(&(&m.to_array() - &want)) < 1e-15);
        assert_eq!(m.view().to_owned(), m.to_array());
        // Rows: Gᵀ A.
        let at = a.t().to_owned();
        let mut r = at.clone();
        rotate_rows(r.view_mut(), g);
        assert!(max_abs(&(&r - &g.to_dense(5).t().dot(&at))) < 1e-15);
        // The pair accessor returns (i, j) in the order asked.
        let (x, y) = m.pair_mut(4, 2);
        x[0] = 11.0;
        y[0] = 22.0;
        assert_eq!((m.col(4)[0], m.col(2)[0]), (11.0, 22.0));
    }

    #[test]
    fn a_million_rotations_keep_u_orthogonal_to_1e_10() {
        let d = 12;
        let mut u = ColMatrix::identity(d);
        let mut sel = PairSelector::new(d, Selection::Uniform);
        let mut rng = seeded(5);
        for _ in 0..1_000_000 {
            let (i, j) = sel.next(&mut rng);
            let theta = rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
            u.rotate(Givens::new(i, j, theta));
        }
        let defect = orthogonality_defect(u.view());
        assert!(defect < 1e-10, "||UᵀU − I||_max = {defect:e}");
        // And it did move far from the identity.
        assert!(max_abs(&(&u.to_array() - &Array2::<f64>::eye(d))) > 0.5);
    }

    #[test]
    fn selection_rules_cover_the_pairs_as_documented() {
        let d = 6;
        let mut rng = seeded(2);
        // Uniform: every pair, i < j, roughly equally often.
        let mut sel = PairSelector::new(d, Selection::Uniform);
        assert_eq!(sel.sweep(), 15);
        let mut counts: HashMap<(usize, usize), u32> = HashMap::new();
        for _ in 0..150_000 {
            let (i, j) = sel.next(&mut rng);
            assert!(i < j && j < d);
            *counts.entry((i, j)).or_default() += 1;
        }
        assert_eq!(counts.len(), 15);
        for &c in counts.values() {
            assert!((c as f64 - 10_000.0).abs() < 500.0, "count {c}");
        }
        // Shuffled: each sweep is a permutation of the pairs; sweeps differ.
        let mut sel = PairSelector::new(d, Selection::Shuffled);
        let a: Vec<_> = (0..15).map(|_| sel.next(&mut rng)).collect();
        let b: Vec<_> = (0..15).map(|_| sel.next(&mut rng)).collect();
        let (mut sa, mut sb) = (a.clone(), b.clone());
        sa.sort_unstable();
        sb.sort_unstable();
        assert_eq!(sa, sb);
        assert_eq!(sa.len(), 15);
        sa.dedup();
        assert_eq!(sa.len(), 15);
        assert_ne!(a, b);
        // Cyclic: the fixed order.
        let mut sel = PairSelector::new(3, Selection::Cyclic);
        let c: Vec<_> = (0..4).map(|_| sel.next(&mut rng)).collect();
        assert_eq!(c, vec![(0, 1), (0, 2), (1, 2), (0, 1)]);
    }
}
