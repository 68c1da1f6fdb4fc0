//! The Swiss roll of 10 classes the tensor-ranking benches and the `step_rules` example share
//! (`benches/tensor_rank.rs` declares it as a module, the example by `#[path]`).

use dyad_core::seeded;
use ndarray::Array2;
use rand::Rng as _;

/// `n` points of 10 classes (`i mod 10`) on a Swiss roll in `R^10`: class `c` at roll
/// coordinate `t ~ N((c + ½)/10, 0.025²)`, height `21 s` with `s ~ U[0, 1]`, then
/// `(θ cos θ, 21 s, θ sin θ, 0, …)` with `θ = 1.5π(1 + 2t)` plus Gaussian noise of SD `noise`
/// per coordinate (0.05 in the benches) (S-CLASS's geometry without its random rotation). Class `c` ranks `9 − c`.
pub struct Roll {
    pub x: Array2<f64>,
    pub class: Vec<u32>,
    pub rank: Vec<f64>,
}

pub fn swiss_roll(n: usize, seed: u64, noise: f64) -> Roll {
    // Box–Muller.
    fn normal(rng: &mut dyad_core::Rng) -> f64 {
        let u: f64 = rng.random_range(f64::EPSILON..1.0);
        let v: f64 = rng.random();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    let mut rng = seeded(seed);
    let class: Vec<u32> = (0..n).map(|i| (i % 10) as u32).collect();
    let mut x = Array2::zeros((n, 10));
    for (i, &c) in class.iter().enumerate() {
        let t = ((c as f64 + 0.5) / 10.0 + 0.025 * normal(&mut rng)).clamp(0.0, 1.0);
        let s: f64 = rng.random();
        let theta = 1.5 * std::f64::consts::PI * (1.0 + 2.0 * t);
        let p3 = [theta * theta.cos(), 21.0 * s, theta * theta.sin()];
        for a in 0..10 {
            x[[i, a]] = p3.get(a).copied().unwrap_or(0.0) + noise * normal(&mut rng);
        }
    }
    let rank = class.iter().map(|&c| 9.0 - c as f64).collect();
    Roll { x, class, rank }
}
