//! Reading a linear order off a pairwise kernel `K`, Eq. (25) (spec §3.8):
//!
//! ```text
//! f* = H K 1 − h (hᵀ K 1) / (1 + 1ᵀ h),    H = I / (n + ε),   h = H 1,   ε = 1e-8
//! ```
//!
//! implemented as printed. For antisymmetric `K`, `1ᵀK1 = 0`, so the correction term vanishes
//! and `f* = K1 / (n + ε)`: a Borda count, ranking by the row sums of `K` (spec \[DERIVED\];
//! the sign of the printed correction, `+11ᵀ` where least squares gives `−11ᵀ`, is therefore
//! irrelevant). For `K = f1ᵀ − 1fᵀ`, `f* = (n f − (1ᵀf) 1)/(n + ε)`: `f` centred and scaled by
//! `n/(n+ε)`, the same order. For low-rank `K = BQBᵀ` the row sums are
//! `B (Q (Bᵀ 1))`, `O(np)` ([`super::PairKernel::row_sums`]).

/// `f*` of Eq. (25) from the row sums `K1` (module docs).
pub fn read_out(k1: &[f64], epsilon: f64) -> Vec<f64> {
    let n = k1.len() as f64;
    let hd = 1.0 / (n + epsilon);
    let h_k1 = hd * k1.iter().sum::<f64>(); // hᵀ K 1
    let one_h = n * hd; // 1ᵀ h
    let corr = hd * h_k1 / (1.0 + one_h);
    k1.iter().map(|&s| hd * s - corr).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use ndarray::Array2;
    use rand::Rng as _;

    #[test]
    fn read_out_of_antisymmetric_kernels() {
        let mut rng = seeded(1);
        let n = 9;
        let a = Array2::from_shape_fn((n, n), |_| rng.random_range(-1.0..1.0));
        let k = &a - &a.t();
        let sums: Vec<f64> = k.rows().into_iter().map(|r| r.sum()).collect();
        // hᵀK1 = 0: the correction vanishes, f* = K1/(n + ε).
        assert!(sums.iter().sum::<f64>().abs() < 1e-12);
        let f = read_out(&sums, 1e-8);
        for (fi, si) in f.iter().zip(&sums) {
            assert!((fi - si / (n as f64 + 1e-8)).abs() < 1e-15);
        }
        // K = f1ᵀ − 1fᵀ gives back (n f − (1ᵀf)1)/(n + ε).
        let g: Vec<f64> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
        let kf = Array2::from_shape_fn((n, n), |(i, j)| g[i] - g[j]);
        let sums: Vec<f64> = kf.rows().into_iter().map(|r| r.sum()).collect();
        let f = read_out(&sums, 1e-8);
        let total: f64 = g.iter().sum();
        for (fi, gi) in f.iter().zip(&g) {
            let want = (n as f64 * gi - total) / (n as f64 + 1e-8);
            assert!((fi - want).abs() < 1e-12);
        }
        // A non-antisymmetric K keeps the printed correction: f* = HK1 − h hᵀK1/(1 + 1ᵀh).
        let sums = [1.0, 2.0, 3.0];
        let f = read_out(&sums, 0.0);
        let corr = (1.0 / 3.0) * (6.0 / 3.0) / 2.0;
        assert!((f[0] - (1.0 / 3.0 - corr)).abs() < 1e-15);
    }
}
