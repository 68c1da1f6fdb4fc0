//! Evaluation measures of the family that are not general enough for `dyad-core` (spec §6):
//! sparsity of loadings, tensor reconstruction error, and recovery of planted components up to
//! permutation and sign (optimal matching by the Hungarian method). Explained variance and
//! NMI live in `dyad_core::explained_variance` and `dyad_core::nmi`.

use super::Decomposition;
use super::tensor::Tensor3;
use ndarray::{ArrayView2, Axis};

/// Number of non-zero entries.
pub fn nnz(z: ArrayView2<'_, f64>) -> usize {
    z.iter().filter(|v| **v != 0.0).count()
}

/// `nnz(Z) / (d·m)` (spec §6.2); 0 for an empty matrix.
pub fn density(z: ArrayView2<'_, f64>) -> f64 {
    if z.is_empty() {
        0.0
    } else {
        nnz(z) as f64 / z.len() as f64
    }
}

/// `‖T − Σ_k λ_k v_k^{⊗3}‖_F / ‖T‖_F` (absolute error when `T = 0`).
pub fn tensor_reconstruction_error(t: &Tensor3, dec: &Decomposition) -> f64 {
    let rec = Tensor3::rank_one_sum(&dec.weights, dec.components.view());
    let diff: f64 = t
        .as_slice()
        .iter()
        .zip(rec.as_slice())
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let norm = t.norm();
    if norm > 0.0 { diff / norm } else { diff }
}

/// How well a decomposition recovers planted components (matched one to one).
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery {
    /// `assignment[r]`: the estimated component matched to planted component `r` (`None` when
    /// there are fewer estimates than planted components).
    pub assignment: Vec<Option<usize>>,
    /// Largest angle (radians, sign-invariant: `acos |cos|`) over the matched pairs; π/2 for an
    /// unmatched planted component.
    pub max_angle: f64,
    /// Largest relative weight error `|λ̂ s − λ| / |λ|` over matched pairs, `s` the sign of the
    /// cosine (`(λ, v)` and `(−λ, −v)` are the same term); infinite when a planted component is
    /// unmatched.
    pub max_weight_error: f64,
}

/// Match the estimated components (columns of `dec.components`) to the planted ones (columns of
/// `truth`, weights `weights`) maximising `Σ |cos|` (Hungarian method), and measure the errors.
pub fn component_recovery(
    weights: &[f64],
    truth: ArrayView2<'_, f64>,
    dec: &Decomposition,
) -> Recovery {
    let est = dec.components.view();
    assert_eq!(
        truth.nrows(),
        est.nrows(),
        "components of different dimensions"
    );
    let unit = |m: ArrayView2<'_, f64>| {
        let mut m = m.to_owned();
        for mut c in m.axis_iter_mut(Axis(1)) {
            let n = c.dot(&c).sqrt();
            if n > 0.0 {
                c.mapv_inplace(|v| v / n);
            }
        }
        m
    };
    let (t, e) = (unit(truth), unit(est));
    let cos = t.t().dot(&e); // R × R̂
    let cost: Vec<Vec<f64>> = cos
        .rows()
        .into_iter()
        .map(|r| r.iter().map(|c| 1.0 - c.abs()).collect())
        .collect();
    let assignment = hungarian(&cost);
    let mut max_angle = 0.0f64;
    let mut max_weight_error = 0.0f64;
    for (r, a) in assignment.iter().enumerate() {
        match *a {
            Some(k) => {
                let c = cos[[r, k]];
                max_angle = max_angle.max(c.abs().min(1.0).acos());
                let aligned = dec.weights[k] * c.signum();
                let err = (aligned - weights[r]).abs() / weights[r].abs().max(f64::MIN_POSITIVE);
                max_weight_error = max_weight_error.max(err);
            }
            None => {
                max_angle = std::f64::consts::FRAC_PI_2;
                max_weight_error = f64::INFINITY;
            }
        }
    }
    Recovery {
        assignment,
        max_angle,
        max_weight_error,
    }
}

/// Minimum-cost assignment of rows to columns of a rectangular cost matrix (Hungarian method
/// with potentials, `O(n² m)`): `out[row] = Some(column)`, or `None` for rows left over when
/// there are more rows than columns.
pub fn hungarian(cost: &[Vec<f64>]) -> Vec<Option<usize>> {
    let n = cost.len();
    if n == 0 {
        return Vec::new();
    }
    let m = cost[0].len();
    if n > m {
        // Assign columns to rows on the transpose.
        let t: Vec<Vec<f64>> = (0..m)
            .map(|j| (0..n).map(|i| cost[i][j]).collect())
            .collect();
        let cols = hungarian(&t);
        let mut out = vec![None; n];
        for (j, i) in cols.into_iter().enumerate() {
            if let Some(i) = i {
                out[i] = Some(j);
            }
        }
        return out;
    }
    // e-maxx formulation, 1-based with a virtual row/column 0.
    let inf = f64::INFINITY;
    let mut u = vec![0.0; n + 1];
    let mut v = vec![0.0; m + 1];
    let mut p = vec![0usize; m + 1];
    let mut way = vec![0usize; m + 1];
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![inf; m + 1];
        let mut used = vec![false; m + 1];
        loop {
            used[j0] = true;
            let i0 = p[j0];
            let mut delta = inf;
            let mut j1 = 0;
            for j in 1..=m {
                if !used[j] {
                    let cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=m {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut out = vec![None; n];
    for j in 1..=m {
        if p[j] != 0 {
            out[p[j] - 1] = Some(j - 1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn hungarian_finds_the_optimal_assignment() {
        // Greedy would take (0,0) = 1 then (1,1) = 10; optimal is (0,1) + (1,0) = 2 + 3.
        let cost = vec![vec![1.0, 2.0], vec![3.0, 10.0]];
        assert_eq!(hungarian(&cost), vec![Some(1), Some(0)]);
        // Brute force on random 5 × 5 and rectangular cases.
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..50 {
            let cost: Vec<Vec<f64>> = (0..5).map(|_| (0..5).map(|_| next()).collect()).collect();
            let a = hungarian(&cost);
            let total: f64 = a.iter().enumerate().map(|(i, j)| cost[i][j.unwrap()]).sum();
            let mut best = f64::INFINITY;
            let mut perm: Vec<usize> = (0..5).collect();
            permutations(&mut perm, 0, &mut |p| {
                best = best.min(p.iter().enumerate().map(|(i, &j)| cost[i][j]).sum());
            });
            assert!((total - best).abs() < 1e-12);
        }
        let wide = vec![vec![5.0, 1.0, 9.0]];
        assert_eq!(hungarian(&wide), vec![Some(1)]);
        let tall = vec![vec![5.0], vec![1.0], vec![9.0]];
        assert_eq!(hungarian(&tall), vec![None, Some(0), None]);
    }

    fn permutations(p: &mut Vec<usize>, k: usize, f: &mut dyn FnMut(&[usize])) {
        if k == p.len() {
            f(p);
            return;
        }
        for i in k..p.len() {
            p.swap(k, i);
            permutations(p, k + 1, f);
            p.swap(k, i);
        }
    }

    #[test]
    fn recovery_is_invariant_to_permutation_and_sign() {
        let truth = array![[1.0, 0.0], [0.0, 1.0]];
        let dec = Decomposition {
            weights: vec![-2.0, 1.0],
            components: array![[0.0, -1.0], [1.0, 0.0]],
            objective: 0.0,
            flops: 0,
            extract_flops: 0,
        };
        // Planted (λ=1, e0), (λ=2, e1). Estimates: (−2, e1) is the term −2 e1^{⊗3} (wrong
        // sign: weight error 2), (1, −e0) is −e0^{⊗3} (also wrong).
        let rec = component_recovery(&[1.0, 2.0], truth.view(), &dec);
        assert_eq!(rec.assignment, vec![Some(1), Some(0)]);
        assert!(rec.max_angle < 1e-15);
        assert!((rec.max_weight_error - 2.0).abs() < 1e-15);
        let good = Decomposition {
            // (2, e1) and (−1, −e0) = (1, e0): exact.
            weights: vec![2.0, -1.0],
            ..dec.clone()
        };
        let rec = component_recovery(&[1.0, 2.0], truth.view(), &good);
        assert!(rec.max_weight_error < 1e-15);
        assert_eq!(nnz(truth.view()), 2);
        assert_eq!(density(truth.view()), 0.5);
        let t = Tensor3::rank_one_sum(&[1.0, 2.0], truth.view());
        assert!(tensor_reconstruction_error(&t, &good) < 1e-15);
        assert!(tensor_reconstruction_error(&t, &dec) > 0.5);
    }
}
