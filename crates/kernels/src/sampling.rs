//! Seeded random draws the family needs (Gaussian, gamma, random unit vectors and orthogonal
//! matrices), from the [`Rng`] passed in: no other source of randomness.
//!
//! Gaussians by Marsaglia's polar method (one value per accepted pair, stateless), gamma
//! variates by Marsaglia & Tsang (2000), with the `U^{1/α}` boost for shape `α < 1`.

use dyad_core::Rng;
use ndarray::Array2;
use rand::Rng as _;

/// A standard normal variate.
pub fn normal(rng: &mut Rng) -> f64 {
    loop {
        let u: f64 = rng.random_range(-1.0..1.0);
        let v: f64 = rng.random_range(-1.0..1.0);
        let s = u * u + v * v;
        if s > 0.0 && s < 1.0 {
            return u * (-2.0 * s.ln() / s).sqrt();
        }
    }
}

/// A Gamma(`shape`, 1) variate, `shape > 0`.
pub fn gamma(shape: f64, rng: &mut Rng) -> f64 {
    assert!(
        shape > 0.0 && shape.is_finite(),
        "gamma shape must be positive"
    );
    if shape < 1.0 {
        let u: f64 = rng.random();
        return gamma(shape + 1.0, rng) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u: f64 = rng.random();
        if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A uniformly distributed unit vector of length `k` (normalised Gaussian).
pub fn unit_vector(k: usize, rng: &mut Rng) -> Vec<f64> {
    loop {
        let v: Vec<f64> = (0..k).map(|_| normal(rng)).collect();
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if n > 1e-12 {
            return v.into_iter().map(|x| x / n).collect();
        }
    }
}

/// A random `d × d` orthogonal matrix: Gram–Schmidt (twice, for accuracy) on Gaussian columns
/// with the QR sign convention, so Haar-distributed.
pub fn random_orthogonal(d: usize, rng: &mut Rng) -> Array2<f64> {
    let mut q = Array2::from_shape_fn((d, d), |_| normal(rng));
    for j in 0..d {
        for _ in 0..2 {
            for i in 0..j {
                let proj = q.column(i).dot(&q.column(j));
                let qi = q.column(i).to_owned();
                q.column_mut(j).scaled_add(-proj, &qi);
            }
        }
        let n = q.column(j).dot(&q.column(j)).sqrt();
        q.column_mut(j).mapv_inplace(|v| v / n);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `max |UᵀU − I|` (as `dyad_givens::rotation::orthogonality_defect`).
    fn orthogonality_defect(u: ndarray::ArrayView2<'_, f64>) -> f64 {
        let g = u.t().dot(&u);
        let mut worst = 0.0f64;
        for ((a, b), v) in g.indexed_iter() {
            let want = if a == b { 1.0 } else { 0.0 };
            worst = worst.max((v - want).abs());
        }
        worst
    }
    use dyad_core::seeded;

    #[test]
    fn moments_of_the_draws() {
        let mut rng = seeded(1);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| normal(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.01,
            "{mean} {var}"
        );
        for shape in [0.5, 1.0, 3.5] {
            let gs: Vec<f64> = (0..n).map(|_| gamma(shape, &mut rng)).collect();
            let m = gs.iter().sum::<f64>() / n as f64;
            let v = gs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
            assert!(
                (m - shape).abs() < 0.02 * shape.max(1.0),
                "shape {shape}: mean {m}"
            );
            assert!(
                (v - shape).abs() < 0.05 * shape.max(1.0),
                "shape {shape}: var {v}"
            );
        }
        let q = random_orthogonal(7, &mut rng);
        assert!(orthogonality_defect(q.view()) < 1e-14);
        let u = unit_vector(5, &mut rng);
        assert!((u.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-14);
    }
}
