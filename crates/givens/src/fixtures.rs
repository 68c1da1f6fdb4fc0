//! Planted problems of the Givens family, beside the shared ones of `dyad_kernels::fixtures`.

use dyad_core::seeded;
use rand::Rng as _;

/// An orthogonally decomposable tensor (see [`planted_orthogonal_tensor`]).
pub struct PlantedTensor {
    /// `Σ λ_k v_k^{⊗3} + noise·E` (E symmetrised Gaussian).
    pub tensor: crate::Tensor3,
    /// `λ_k ∈ [1, 2]`.
    pub weights: Vec<f64>,
    /// `K × K` orthogonal, column `k` = `v_k`.
    pub components: ndarray::Array2<f64>,
}

/// `T = Σ_k λ_k v_k^{⊗3} (+ noise)` with a random orthogonal `V` and `λ_k ∈ [1, 2]` (spec §10).
pub fn planted_orthogonal_tensor(k: usize, noise: f64, seed: u64) -> PlantedTensor {
    use crate::Tensor3;
    use dyad_kernels::sampling::{normal, random_orthogonal};
    let mut rng = seeded(seed);
    let components = random_orthogonal(k, &mut rng);
    let weights: Vec<f64> = (0..k).map(|_| rng.random_range(1.0..2.0)).collect();
    let mut tensor = Tensor3::rank_one_sum(&weights, components.view());
    if noise > 0.0 {
        let e = Tensor3::from_fn(k, |_, _, _| normal(&mut rng)).symmetrized();
        tensor = Tensor3::from_fn(k, |a, b, c| tensor.get(a, b, c) + noise * e.get(a, b, c));
    }
    PlantedTensor {
        tensor,
        weights,
        components,
    }
}
