//! Mahalanobis similarity `S_M(p, q) = -(p - q)^T M (p - q)`: the model every metric
//! learner (LMNN, MCML, LEGO, Dissim-Oasis) produces. Scoring a query against `n` sparse
//! candidates costs one dense product `M p` plus the candidates' `q^T M q`, computed once per
//! candidate set.

use dyad_core::model::score_via_dense_left;
use dyad_core::{Scorer, sparse};
use ndarray::{Array1, Array2, ArrayView1};
use sprs::{CsMat, CsVecView};

/// `S_M(p, q) = -(p - q)^T M (p - q)` with `M` dense and symmetric.
#[derive(Debug, Clone, PartialEq)]
pub struct Mahalanobis {
    m: Array2<f64>,
}

impl Mahalanobis {
    /// `M = I`: the (negative squared) Euclidean distance.
    pub fn identity(d: usize) -> Self {
        Self { m: Array2::eye(d) }
    }

    /// From a symmetric matrix (only symmetry up to rounding is assumed: the scorer uses
    /// `p^T M q = q^T M p`).
    pub fn new(m: Array2<f64>) -> Self {
        assert_eq!(m.nrows(), m.ncols(), "M must be square");
        Self {
            m: m.as_standard_layout().into_owned(),
        }
    }

    pub fn matrix(&self) -> &Array2<f64> {
        &self.m
    }

    pub fn matrix_mut(&mut self) -> &mut Array2<f64> {
        &mut self.m
    }

    pub fn dim(&self) -> usize {
        self.m.nrows()
    }

    /// `(x - y)^T M (x - y)` for dense vectors.
    pub fn distance(&self, x: ArrayView1<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
        let z: Array1<f64> = &x - &y;
        z.dot(&self.m.dot(&z))
    }

    /// `M <- M + scale u v^T` for sparse `u`, `v`: O(nnz(u) nnz(v)).
    pub fn rank_one_update(
        &mut self,
        u: &dyad_core::SparseVec,
        v: &dyad_core::SparseVec,
        scale: f64,
    ) {
        let d = self.dim();
        let m = self.m.as_slice_mut().expect("standard layout");
        for (&a, &ua) in u.indices.iter().zip(&u.values) {
            let s = scale * ua;
            let row = &mut m[a * d..(a + 1) * d];
            for (&b, &vb) in v.indices.iter().zip(&v.values) {
                row[b] += s * vb;
            }
        }
    }

    /// `p^T M q` for sparse `p`, `q`: O(nnz(p) nnz(q)).
    pub fn bilinear(&self, p: (&[usize], &[f64]), q: (&[usize], &[f64])) -> f64 {
        let (m, d) = (self.m.as_slice().expect("standard layout"), self.dim());
        p.0.iter()
            .zip(p.1)
            .map(|(&a, &pa)| pa * sparse::dot_dense(&m[a * d..(a + 1) * d], q.0, q.1))
            .sum()
    }
}

impl Scorer for Mahalanobis {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let terms = self.candidate_terms(candidates);
        self.score_with_terms(query, candidates, &terms, out);
    }

    /// `q^T M q` for every candidate.
    fn candidate_terms(&self, candidates: &CsMat<f64>) -> Vec<f64> {
        candidates
            .outer_iterator()
            .map(|q| self.bilinear((q.indices(), q.data()), (q.indices(), q.data())))
            .collect()
    }

    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        qmq: &[f64],
        out: &mut [f64],
    ) {
        let pmp = self.bilinear(
            (query.indices(), query.data()),
            (query.indices(), query.data()),
        );
        let (m, d) = (self.m.as_slice().expect("standard layout"), self.dim());
        score_via_dense_left(d, query, candidates, out, |q, u| {
            for (&a, &qa) in q.indices().iter().zip(q.data()) {
                for (ub, mab) in u.iter_mut().zip(&m[a * d..(a + 1) * d]) {
                    *ub += qa * mab;
                }
            }
        });
        // -(p-q)^T M (p-q) = -(pMp - 2 pMq + qMq) for symmetric M.
        for (o, &t) in out.iter_mut().zip(qmq) {
            *o = -(pmp - 2.0 * *o + t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::{LabeledSet, seeded};
    use rand::Rng as _;

    #[test]
    fn scores_are_negative_mahalanobis_distances() {
        let mut rng = seeded(3);
        let d = 6;
        let a = Array2::from_shape_fn((d, d), |_| rng.random_range(-1.0..1.0));
        let m = Mahalanobis::new(a.t().dot(&a));
        let rows: Vec<Vec<f64>> = (0..5)
            .map(|_| {
                (0..d)
                    .map(|j| {
                        if (j + rng.random_range(0..3)) % 2 == 0 {
                            rng.random_range(-1.0..1.0)
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 1, 0, 1, 0], 2);
        let mut out = vec![0.0; 5];
        m.score(set.x.outer_view(2).unwrap(), &set.x, &mut out);
        for (j, r) in rows.iter().enumerate() {
            let dist = m.distance(
                Array1::from(rows[2].clone()).view(),
                Array1::from(r.clone()).view(),
            );
            assert!((out[j] + dist).abs() < 1e-12);
        }
        assert!(out[2].abs() < 1e-12);
    }
}
