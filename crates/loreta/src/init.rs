//! Initialisations of spec §2.8: the truncated (zero-padded) identity, independent Gaussian
//! factors, and the zero matrix reached by summing the first `2k` rank-one subgradients and
//! keeping the best rank-`k` approximation.
//!
//! # The zero-matrix scheme (\[AMBIG\] in the spec; our \[CHOICE\]s)
//!
//! `0` is not on the manifold, so the papers add up the first `2k` rank-one subgradients and
//! take the best rank-`k` approximation of the sum. We read this as a running-sum perceptron
//! with unit step: each example's subgradient is evaluated at the running sum (not at
//! `W = 0`, where every example would see the same all-tied scores), and only examples with a
//! positive loss contribute (a zero subgradient adds nothing to the rank; at most `100 r`
//! examples are drawn to collect `r = 2k` of them). In the multilabel hinge, ties in the
//! highest-scoring negative label are broken uniformly at random during this phase (spec
//! §2.8). The sum is kept factored, `U V^T` with `r` columns (`O((n+m)k)` memory, never
//! `n x m`), and split as `A = U_k S_k^{1/2}`, `B = V_k S_k^{1/2}` from the SVD of `U V^T`,
//! computed as thin SVDs of `U`, `V` and of the `r x r` core: `O((n+m)k^2)`. The examples
//! drawn here come from the same `rng` as training and are not counted as training steps.

use super::losses::{multilabel_hinge, relevant_labels, triplet_hinge};
use dyad_core::sampling::TripletSampler;
use dyad_core::{LabeledSet, Rng, SparseVec};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::{axpy, dot, matmul, thin_svd};
use ndarray::{Array2, s};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// How the factors start (spec §2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Init {
    /// `A = B = [I_k; 0]`: `W0` is the identity truncated to its first `k` diagonal ones
    /// (20NG: with features ordered by decreasing infogain, the `k` most informative terms;
    /// ImageNet: the zero-padded `k x k` identity). Also accepted as `truncated_identity` and
    /// `zero_padded_identity`.
    #[default]
    #[serde(alias = "truncated_identity", alias = "zero_padded_identity")]
    Identity,
    /// The zero matrix via the first `2k` subgradients (module docs).
    Zero,
    /// `A`, `B` with i.i.d. `N(0, init_std^2)` entries ("rand. init." of \[NIPS\]).
    Gaussian,
}

/// `[I_k; 0]` (`n x k`).
pub fn truncated_identity(n: usize, k: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, k), |(i, j)| f64::from(u8::from(i == j)))
}

/// One standard normal draw (Box–Muller, one of the pair).
pub fn standard_normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>(); // in (0, 1]
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// An `n x k` matrix of i.i.d. `N(0, std^2)` entries, row by row from `rng`.
pub fn gaussian(n: usize, k: usize, std: f64, rng: &mut Rng) -> Array2<f64> {
    Array2::from_shape_fn((n, k), |_| std * standard_normal(rng))
}

/// A running sum `U V^T` of rank-one terms, kept factored (`U`: `n x r`, `V`: `m x r`).
#[derive(Debug, Clone)]
pub struct FactoredSum {
    u: Array2<f64>,
    v: Array2<f64>,
    len: usize,
}

impl FactoredSum {
    pub fn new(n: usize, m: usize, capacity: usize) -> Self {
        Self {
            u: Array2::zeros((n, capacity)),
            v: Array2::zeros((m, capacity)),
            len: 0,
        }
    }

    /// Terms added so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.u.ncols()
    }

    /// Add `g1 g2^T` (sparse). Panics when full.
    pub fn push(&mut self, g1: (&[usize], &[f64]), g2: (&[usize], &[f64])) {
        let j = self.len;
        for (&i, &x) in g1.0.iter().zip(g1.1) {
            self.u[[i, j]] = x;
        }
        for (&i, &x) in g2.0.iter().zip(g2.1) {
            self.v[[i, j]] = x;
        }
        self.len += 1;
    }

    /// `F^T x` over the used columns, for a sparse `x` over the rows of `F`.
    fn project(f: &Array2<f64>, x: (&[usize], &[f64]), out: &mut [f64]) {
        let r = f.ncols();
        let s = f.as_slice().expect("standard layout");
        out.fill(0.0);
        for (&i, &v) in x.0.iter().zip(x.1) {
            axpy(out, v, &s[i * r..(i + 1) * r]);
        }
    }

    /// `q^T (U V^T) p`.
    pub fn bilinear(&self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
        let r = self.u.ncols();
        let (mut a, mut b) = (vec![0.0; r], vec![0.0; r]);
        Self::project(&self.u, q, &mut a);
        Self::project(&self.v, p, &mut b);
        dot(&a, &b)
    }

    /// `(U V^T) p` (length `n`).
    pub fn apply(&self, p: (&[usize], &[f64]), out: &mut [f64]) {
        let r = self.u.ncols();
        let mut c = vec![0.0; r];
        Self::project(&self.v, p, &mut c);
        let s = self.u.as_slice().expect("standard layout");
        for (o, row) in out.iter_mut().zip(s.chunks_exact(r.max(1))) {
            *o = dot(row, &c);
        }
    }

    /// The best rank-`k` approximation of the sum as balanced factors `(U_k S^{1/2},
    /// V_k S^{1/2})`. Errors when the sum has rank below `k`.
    pub fn best_rank(&self, k: usize) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
        let fail = |what: String| AlgoError::Numerical(format!("zero initialisation: {what}"));
        let (u, v) = (
            self.u.slice(s![.., ..self.len]),
            self.v.slice(s![.., ..self.len]),
        );
        let (q1, s1, w1) = thin_svd(u).map_err(|e| fail(e.to_string()))?;
        let (q2, s2, w2) = thin_svd(v).map_err(|e| fail(e.to_string()))?;
        // U V^T = Q1 (S1 W1^T W2 S2) Q2^T.
        let scale_rows = |w: &Array2<f64>, s: &ndarray::Array1<f64>| {
            let mut t = w.t().to_owned();
            for (mut row, &x) in t.rows_mut().into_iter().zip(s) {
                row *= x;
            }
            t
        };
        let core = matmul(scale_rows(&w1, &s1).view(), scale_rows(&w2, &s2).t());
        let (x, s, y) = thin_svd(core.view()).map_err(|e| fail(e.to_string()))?;
        let tol = 1e-12 * s.first().copied().unwrap_or(0.0);
        if s.len() < k || s[k - 1].is_nan() || s[k - 1] <= tol {
            return Err(fail(format!(
                "the sum of {} subgradients has rank below {k}",
                self.len
            )));
        }
        let half = |basis: &Array2<f64>, rot: &Array2<f64>| {
            let mut r = rot.slice(s![.., ..k]).to_owned();
            for (mut col, &sj) in r.columns_mut().into_iter().zip(&s) {
                col *= sj.sqrt();
            }
            matmul(basis.view(), r.view())
        };
        Ok((half(&q1, &x), half(&q2, &y)))
    }
}

/// Most examples drawn per subgradient collected by the zero initialisation.
const DRAWS_PER_UPDATE: usize = 100;

/// The zero-matrix initialisation for the triplet hinge (`W` is `d x d`): the running sum of
/// the subgradients `q (p+ - p-)^T` of the first `updates` triplets with a loss.
pub fn zero_init_triplets(
    train: &LabeledSet,
    sampler: &TripletSampler,
    k: usize,
    updates: usize,
    rng: &mut Rng,
) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
    let d = train.dim();
    let mut sum = FactoredSum::new(d, d, updates);
    let mut diff = SparseVec::default();
    let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
    for _ in 0..updates * DRAWS_PER_UPDATE {
        if sum.is_full() {
            break;
        }
        let t = sampler.sample(rng);
        let q = row(t.query);
        diff.set_difference(row(t.positive), row(t.negative));
        let loss =
            triplet_hinge(sum.bilinear((q.indices(), q.data()), (&diff.indices, &diff.values)));
        if loss > 0.0 && diff.norm_sq() > 0.0 && q.nnz() > 0 {
            sum.push((q.indices(), q.data()), (&diff.indices, &diff.values));
        }
    }
    sum.best_rank(k)
}

/// The zero-matrix initialisation for the multilabel hinge (`W` is `n_labels x d`): the
/// running sum of the subgradients `u p^T` of the first `updates` images with a loss, ties
/// in the highest-scoring negative label broken at random.
pub fn zero_init_labels(
    train: &LabeledSet,
    rows: &[usize],
    n_labels: usize,
    k: usize,
    updates: usize,
    rng: &mut Rng,
) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
    let mut sum = FactoredSum::new(n_labels, train.dim(), updates);
    let mut scores = vec![0.0; n_labels];
    let mut u = SparseVec::default();
    for _ in 0..updates * DRAWS_PER_UPDATE {
        if sum.is_full() || rows.is_empty() {
            break;
        }
        let i = rows[rng.random_range(0..rows.len())];
        let p = train.x.outer_view(i).expect("row in range");
        sum.apply((p.indices(), p.data()), &mut scores);
        let Some(h) = multilabel_hinge(&scores, relevant_labels(train, i), Some(rng), &mut u)
        else {
            continue;
        };
        if h.loss > 0.0 && p.nnz() > 0 {
            sum.push((&u.indices, &u.values), (p.indices(), p.data()));
        }
    }
    sum.best_rank(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;

    #[test]
    fn best_rank_matches_the_truncated_svd_of_the_dense_sum() {
        let mut rng = seeded(1);
        let (n, m, r, k) = (10, 8, 6, 3);
        let mut sum = FactoredSum::new(n, m, r);
        let mut dense = Array2::<f64>::zeros((n, m));
        for _ in 0..r {
            let g1: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let g2: Vec<f64> = (0..m).map(|_| rng.random_range(-1.0..1.0)).collect();
            let (i1, i2): (Vec<usize>, Vec<usize>) = ((0..n).collect(), (0..m).collect());
            sum.push((&i1, &g1), (&i2, &g2));
            for a in 0..n {
                for b in 0..m {
                    dense[[a, b]] += g1[a] * g2[b];
                }
            }
        }
        let (a, b) = sum.best_rank(k).unwrap();
        let (u, s, v) = thin_svd(dense.view()).unwrap();
        let mut want = Array2::<f64>::zeros((n, m));
        for j in 0..k {
            for x in 0..n {
                for y in 0..m {
                    want[[x, y]] += s[j] * u[[x, j]] * v[[y, j]];
                }
            }
        }
        let err = (&a.dot(&b.t()) - &want)
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(err < 1e-12, "{err}");
        // Balanced: A^T A = B^T B = S_k.
        let (ga, gb) = (a.t().dot(&a), b.t().dot(&b));
        assert!((&ga - &gb).iter().all(|v| v.abs() < 1e-12));
        // Rank below k is an error.
        assert!(sum.best_rank(r + 1).is_err());
    }

    #[test]
    fn gaussian_draws_have_unit_variance() {
        let g = gaussian(200, 50, 2.0, &mut seeded(3));
        let mean = g.mean().unwrap();
        let var = g.mapv(|v| (v - mean) * (v - mean)).mean().unwrap();
        assert!(
            mean.abs() < 0.05 && (var - 4.0).abs() < 0.15,
            "{mean} {var}"
        );
        assert_eq!(truncated_identity(4, 2).sum(), 2.0);
    }
}
