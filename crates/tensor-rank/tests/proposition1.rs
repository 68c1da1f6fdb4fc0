//! Proposition 1 of the tensor-ranking paper (spec §3.6, optional test §11.10): the sample
//! regulariser `tr(KᵀLK)` of KR, scaled by `1/(n³ σ(n)^{d+2})`, tends to a constant times the
//! surrogate tensor harmonic energy `Ẽ_H(K)` of Eq. (11) when `σ²(n) = n^{−1/(d+2+α)}`.
//! A sanity check of the scaling through dyad's own code (the Laplacian of weighted edges and
//! KR's regulariser [`kr_energy`]), not a result of the paper.
//!
//! **Set-up.** The unit circle (`d = 1`), `n` equally spaced points `θ_i = 2πi/n` (the
//! equal-weight quadrature of the uniform distribution the proposition samples from: no
//! sampling noise, so what changes with `n` is the bias alone), `α = 1`, the heat-kernel graph
//! on all pairs `W_ab = exp(−‖x_a − x_b‖²/σ²)` (Belkin–Niyogi's, the proposition's; the
//! experiments use kNN graphs instead), and `K(θ₁, θ₂) = sin(θ₁ − θ₂)`, antisymmetric.
//!
//! **Limit, by hand.** A column `f = K(·, θ_j)` has `fᵀLf = ½ Σ_ab W_ab (f_a − f_b)²
//! ≈ ½ (n/2π)² ∫dθ ∫dδ e^{−δ²/σ²} f′(θ)² δ² = ½ (n/2π)² (√π σ³/2) ∫f′² dθ`, and
//! `∫ cos²(θ − θ_j) dθ = π`; summing the `n` columns gives `tr(KᵀLK) ≈ n³σ³/(16√π)`. So the
//! normalised energy tends to `1/(16√π) ≈ 0.035262`, with a bias of order `σ²` (the chord
//! against the arc and the third derivative of `f`, both `O(δ⁴)` against the leading `δ²`).
//!
//! **Independent reference at each `n`.** For equally spaced `θ_j` (`n ≥ 3`),
//! `Σ_j (sin(θ_a − θ_j) − sin(θ_b − θ_j))² = n c_ab²/2` with `c_ab` the chord, so
//! `tr(KᵀLK) = (n²/4) Σ_{m=1}^{n−1} e^{−c_m²/σ²} c_m²`, `c_m = 2 sin(πm/n)`: a one-line sum
//! that shares nothing with the sparse Laplacian or the regulariser.

use dyad_tensor_rank::Laplacian;
use dyad_tensor_rank::kernel_full::kr_energy;
use dyad_tensor_rank::solver::Pairs;
use ndarray::Array2;
use std::f64::consts::PI;

/// Intrinsic dimension of the circle and the proposition's `α`.
const D: f64 = 1.0;
const ALPHA: f64 = 1.0;

fn sigma2(n: usize) -> f64 {
    (n as f64).powf(-1.0 / (D + 2.0 + ALPHA))
}

fn normaliser(n: usize) -> f64 {
    (n as f64).powi(3) * sigma2(n).powf((D + 2.0) / 2.0)
}

/// `tr(KᵀLK)/(n³σ³)` through dyad: the heat-kernel Laplacian built from its edges and KR's
/// energy with no labelled pairs and `λ = 1`.
fn normalised_energy(n: usize) -> f64 {
    let theta: Vec<f64> = (0..n).map(|i| 2.0 * PI * i as f64 / n as f64).collect();
    let s2 = sigma2(n);
    let mut edges = Vec::with_capacity(n * (n - 1) / 2);
    for a in 0..n {
        for b in a + 1..n {
            let (dx, dy) = (
                theta[a].cos() - theta[b].cos(),
                theta[a].sin() - theta[b].sin(),
            );
            edges.push((a as u32, b as u32, (-(dx * dx + dy * dy) / s2).exp()));
        }
    }
    let l = Laplacian::from_edges(n, &edges);
    let k = Array2::from_shape_fn((n, n), |(a, b)| (theta[a] - theta[b]).sin());
    kr_energy(k.view(), &l, 1.0, &Pairs::default()) / normaliser(n)
}

/// The same by the closed form of the column sum (module documentation).
fn reference(n: usize) -> f64 {
    let s2 = sigma2(n);
    let sum: f64 = (1..n)
        .map(|m| {
            let c2 = (2.0 * (PI * m as f64 / n as f64).sin()).powi(2);
            (-c2 / s2).exp() * c2
        })
        .sum();
    (n * n) as f64 / 4.0 * sum / normaliser(n)
}

#[test]
fn the_scaled_regulariser_tends_to_the_harmonic_energy_with_a_bias_of_order_sigma_squared() {
    let limit = 1.0 / (16.0 * PI.sqrt());
    let ns = [100, 200, 400, 800];
    let energies: Vec<f64> = ns.iter().map(|&n| normalised_energy(n)).collect();
    for (&n, &e) in ns.iter().zip(&energies) {
        let r = reference(n);
        assert!(
            (e - r).abs() <= 1e-10 * r,
            "n = {n}: dyad's tr(KᵀLK)/(n³σ³) = {e}, the closed-form sum {r}"
        );
    }
    // The gap to the limit shrinks with n, in proportion to σ²: gap/σ² stays within 10 % of
    // its value at the largest n (0.225, 0.217, 0.211, 0.207 here).
    let gaps: Vec<f64> = energies.iter().map(|e| e / limit - 1.0).collect();
    assert!(
        gaps.windows(2).all(|w| 0.0 < w[1] && w[1] < w[0]),
        "relative gaps to 1/(16√π) do not shrink: {gaps:?}"
    );
    let per_sigma2: Vec<f64> = ns.iter().zip(&gaps).map(|(&n, g)| g / sigma2(n)).collect();
    let last = per_sigma2[ns.len() - 1];
    assert!(
        per_sigma2.iter().all(|r| (r / last - 1.0).abs() < 0.1),
        "gap / σ² is not about constant: {per_sigma2:?}"
    );
    // Richardson extrapolation in σ² from the two largest n lands on the limit.
    let (s_a, s_b) = (sigma2(ns[2]), sigma2(ns[3]));
    let extrapolated = (energies[3] * s_a - energies[2] * s_b) / (s_a - s_b);
    assert!(
        (extrapolated / limit - 1.0).abs() < 0.01,
        "extrapolated limit {extrapolated}, by hand {limit}"
    );
}
