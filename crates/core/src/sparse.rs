//! Sorted sparse vectors and the kernels the sparse online learners are built from.

use sprs::CsVecView;

/// A sparse vector with strictly increasing indices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseVec {
    pub indices: Vec<usize>,
    pub values: Vec<f64>,
}

impl SparseVec {
    /// Build from parallel index/value slices that are already strictly increasing.
    pub fn from_sorted(indices: &[usize], values: &[f64]) -> Self {
        debug_assert!(indices.windows(2).all(|w| w[0] < w[1]));
        Self {
            indices: indices.to_vec(),
            values: values.to_vec(),
        }
    }

    /// Copy a row view of a CSR matrix.
    pub fn from_view(v: CsVecView<'_, f64>) -> Self {
        Self::from_sorted(v.indices(), v.data())
    }

    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    pub fn norm_sq(&self) -> f64 {
        norm_sq(&self.values)
    }

    /// Dense copy of length `dim` (tests and references only).
    pub fn to_dense(&self, dim: usize) -> Vec<f64> {
        let mut out = vec![0.0; dim];
        for (&i, &v) in self.indices.iter().zip(&self.values) {
            out[i] = v;
        }
        out
    }

    /// `a - b` by a sorted merge, written into `self` (reusing its buffers).
    /// Entries that cancel exactly are kept as explicit zeros: they cost nothing to carry and
    /// keep the support equal to the union of the two supports.
    pub fn set_difference(&mut self, a: CsVecView<'_, f64>, b: CsVecView<'_, f64>) {
        self.indices.clear();
        self.values.clear();
        let (ai, av, bi, bv) = (a.indices(), a.data(), b.indices(), b.data());
        let (mut x, mut y) = (0, 0);
        while x < ai.len() && y < bi.len() {
            match ai[x].cmp(&bi[y]) {
                std::cmp::Ordering::Less => {
                    self.indices.push(ai[x]);
                    self.values.push(av[x]);
                    x += 1;
                }
                std::cmp::Ordering::Greater => {
                    self.indices.push(bi[y]);
                    self.values.push(-bv[y]);
                    y += 1;
                }
                std::cmp::Ordering::Equal => {
                    self.indices.push(ai[x]);
                    self.values.push(av[x] - bv[y]);
                    x += 1;
                    y += 1;
                }
            }
        }
        for k in x..ai.len() {
            self.indices.push(ai[k]);
            self.values.push(av[k]);
        }
        for k in y..bi.len() {
            self.indices.push(bi[k]);
            self.values.push(-bv[k]);
        }
    }
}

/// Sum of squares.
pub fn norm_sq(values: &[f64]) -> f64 {
    values.iter().map(|v| v * v).sum()
}

/// Dot product of two sorted sparse vectors.
pub fn dot(ai: &[usize], av: &[f64], bi: &[usize], bv: &[f64]) -> f64 {
    let (mut x, mut y, mut s) = (0, 0, 0.0);
    while x < ai.len() && y < bi.len() {
        match ai[x].cmp(&bi[y]) {
            std::cmp::Ordering::Less => x += 1,
            std::cmp::Ordering::Greater => y += 1,
            std::cmp::Ordering::Equal => {
                s += av[x] * bv[y];
                x += 1;
                y += 1;
            }
        }
    }
    s
}

/// Dot product of a dense vector with a sparse one.
pub fn dot_dense(dense: &[f64], indices: &[usize], values: &[f64]) -> f64 {
    indices
        .iter()
        .zip(values)
        .map(|(&i, &v)| dense[i] * v)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprs::CsVec;

    #[test]
    fn difference_matches_dense() {
        let a = CsVec::new(8, vec![0, 3, 5], vec![1.0, 2.0, 3.0]);
        let b = CsVec::new(8, vec![1, 3, 7], vec![4.0, 2.0, 5.0]);
        let mut d = SparseVec::default();
        d.set_difference(a.view(), b.view());
        assert_eq!(d.indices, vec![0, 1, 3, 5, 7]);
        let dense = d.to_dense(8);
        assert_eq!(dense, vec![1.0, -4.0, 0.0, 0.0, 0.0, 3.0, 0.0, -5.0]);
        assert!(d.indices.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn sparse_dot_matches_dense() {
        let (ai, av) = (vec![1, 4, 6], vec![0.5, -1.0, 2.0]);
        let (bi, bv) = (vec![0, 4, 6, 9], vec![3.0, 2.0, 0.25, 1.0]);
        assert_eq!(dot(&ai, &av, &bi, &bv), -2.0 + 0.5);
        let mut dense = vec![0.0; 10];
        for (&i, &v) in bi.iter().zip(&bv) {
            dense[i] = v;
        }
        assert_eq!(dot_dense(&dense, &ai, &av), dot(&ai, &av, &bi, &bv));
    }
}
