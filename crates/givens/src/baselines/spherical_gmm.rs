//! Spherical Gaussian mixtures: the synthetic mixtures of the Givens paper's tensor experiments
//! (spec §7), the method of moments that turns samples into a whitened, orthogonally
//! decomposable third-moment tensor (Hsu & Kakade 2013; Anandkumar et al. 2012a, Thm 3.2 and
//! §4.3; spec §5.3), the reconstruction of the mixture from a decomposition, and clustering.
//! The pipeline feeds both decomposers (Algorithm 3/6 and the tensor power method) the same
//! [`MomentTensor`].
//!
//! # Synthetic mixtures ([`sample_gmm`], a pure function of its spec and seed)
//!
//! ```text
//! Σ0 ~ InverseWishart(ν, Ψ = ψ·I_d)       [A] ν = d + 2 (E Σ0 = ψ I), ψ = 1; one Σ0 per mixture
//! μ_k ~ N(0, Σ0), k = 1..K                [A] centre mean 0
//! w = uniform (or Dirichlet(α))           [A]
//! h_n ~ Cat(w);  x_n = μ_{h_n} + σ ε,  ε ~ N(0, I_d),  σ² = 2   [T "spherical variance of 2"]
//! ```
//!
//! `Σ0` is drawn by the Bartlett decomposition: `W = A Aᵀ/ψ ~ Wishart(ν, I/ψ)` with `A` lower
//! triangular, `A_ii = √χ²(ν − i)`, `A_ij ~ N(0, 1)` (`i > j`), `Σ0 = W⁻¹`, and a centre is
//! `μ = √ψ A⁻ᵀ z` (covariance `ψ (A Aᵀ)⁻¹ = Σ0`) without forming a Cholesky factor. The mixture
//! (`Σ0`, centres, weights) comes from the stream `derive_seed(seed, "gmm/model")` and the
//! samples from `derive_seed(seed, "gmm/samples")`, so the mixture does not change with `N`.
//! Samples are the rows of an `N × d` matrix.
//!
//! # Method of moments ([`estimate_moments`])
//!
//! ```text
//! x̄ = mean(x);  S = (1/N) Σ x xᵀ;  Σ̂ = S − x̄ x̄ᵀ
//! σ̂² = λ_min(Σ̂), v its unit eigenvector;  m̂1 = (1/N) Σ x_n (vᵀ(x_n − x̄))²    (≈ σ² E[x])
//! M̂2 = S − σ̂² I = Σ_k w_k μ_k μ_kᵀ;   top-K eigenpairs U_K D_K;  W = U_K D_K^{-1/2}
//! T̂ = M̂3(W, W, W):  y_n = Wᵀ x_n,  m̃ = Wᵀ m̂1,  M = WᵀW,
//!      T̂_abc = (1/N) Σ_n y_na y_nb y_nc − (m̃_a M_bc + m̃_b M_ac + m̃_c M_ab)
//! ```
//!
//! `λ_min(Σ̂)` estimates `σ²` only when the centred means span fewer than `d` dimensions, i.e.
//! `K ≤ d`. For `d < K` (the paper's `d = 10, K = 20` cell, spec §8 E3) the caller must pass the
//! known variance (`variance = Some(σ²)`, option (ii) of the spec): then `m̂1 = σ² x̄` and the
//! whitening keeps `min(K, d)` directions, so at most `d` components are recovered. Eigenvalues
//! of `M̂2` below `eigen_floor` (1e-12) are clamped to it \[A\]. The tensor is returned lazily
//! (an [`EmpiricalMoments`], `O(NK)` memory): Algorithm 6 uses it as is, Algorithm 3 and the
//! tensor power method form the dense `K × K × K` tensor (their FLOPs count it).
//!
//! # Reconstruction and clustering
//!
//! From `(λ_k, v_k)`: `ŵ_k = 1/λ_k²`, `μ̂_k = λ_k B v_k` with `B = U_K D_K^{1/2} = (Wᵀ)⁺`. Both are
//! invariant to `(λ, v) → (−λ, −v)`, so negative `λ_k` (a Givens run may end with some) need no
//! special case; components with `|λ_k| < 1e-12` get weight 0. Samples are assigned to
//! `argmax_k [log ŵ_k − ‖x − μ̂_k‖²/(2σ̂²)]` \[A\] (ties: lowest k); the "optimal" clustering uses
//! the same rule with the true parameters. NMI: `dyad_core::nmi`.

use crate::{Decomposition, EmpiricalMoments, MomentTensor};
pub use dyad_core::gmm::{GmmSpec, MixingWeights};
use dyad_core::{Rng, derive_seed, seeded};
use dyad_kernels::linalg::{gemm, gemm_sym, sym_eigen};
use dyad_kernels::sampling::{gamma, normal};
use dyad_kernels::{AlgoError, Checked, ParamError, params};
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// A drawn mixture and its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct GmmSample {
    /// `N × d`, one sample per row.
    pub x: Array2<f64>,
    /// The component of each sample.
    pub labels: Vec<usize>,
    /// `K × d`, one centre per row.
    pub means: Array2<f64>,
    pub weights: Vec<f64>,
    pub variance: f64,
    /// The drawn `Σ0`.
    pub prior_covariance: Array2<f64>,
}

/// The Bartlett factor: lower-triangular `A` with `A Aᵀ ~ Wishart(ν, I)`.
fn bartlett(d: usize, nu: f64, rng: &mut Rng) -> Array2<f64> {
    let mut a = Array2::<f64>::zeros((d, d));
    for i in 0..d {
        a[[i, i]] = (2.0 * gamma(0.5 * (nu - i as f64), rng)).sqrt();
        for j in 0..i {
            a[[i, j]] = normal(rng);
        }
    }
    a
}

/// `A⁻¹` of a lower-triangular `A` (forward substitution).
fn lower_inverse(a: &Array2<f64>) -> Array2<f64> {
    let d = a.nrows();
    let mut inv = Array2::<f64>::zeros((d, d));
    for c in 0..d {
        for i in c..d {
            let mut s = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                s -= a[[i, k]] * inv[[k, c]];
            }
            inv[[i, c]] = s / a[[i, i]];
        }
    }
    inv
}

/// Draw a mixture and its samples (module docs). Deterministic in `(spec, seed)`.
pub fn sample_gmm(spec: &GmmSpec, seed: u64) -> Result<GmmSample, AlgoError> {
    spec.validate()?;
    let (d, k, n) = (spec.dim, spec.components, spec.samples);
    let mut rng = seeded(derive_seed(seed, "gmm/model"));
    let a = bartlett(d, spec.dof(), &mut rng);
    let ainv = lower_inverse(&a);
    let psi = spec.prior_scale;
    let prior_covariance = ainv.t().dot(&ainv) * psi;
    // μ = √ψ A⁻ᵀ z.
    let mut means = Array2::<f64>::zeros((k, d));
    for mut mu in means.rows_mut() {
        let z = Array1::from_shape_fn(d, |_| normal(&mut rng));
        mu.assign(&(ainv.t().dot(&z) * psi.sqrt()));
    }
    let weights: Vec<f64> = match spec.weights {
        MixingWeights::Uniform => vec![1.0 / k as f64; k],
        MixingWeights::Dirichlet { alpha } => {
            let g: Vec<f64> = (0..k).map(|_| gamma(alpha, &mut rng)).collect();
            let s: f64 = g.iter().sum();
            g.into_iter().map(|v| v / s).collect()
        }
    };
    let mut cumulative = Vec::with_capacity(k);
    let mut acc = 0.0;
    for w in &weights {
        acc += w;
        cumulative.push(acc);
    }
    let mut rng = seeded(derive_seed(seed, "gmm/samples"));
    let sd = spec.variance.sqrt();
    let mut x = Array2::<f64>::zeros((n, d));
    let mut labels = Vec::with_capacity(n);
    for mut row in x.rows_mut() {
        let u: f64 = rng.random::<f64>() * acc;
        let h = cumulative.partition_point(|&c| c <= u).min(k - 1);
        labels.push(h);
        for (o, &m) in row.iter_mut().zip(means.row(h)) {
            *o = m + sd * normal(&mut rng);
        }
    }
    Ok(GmmSample {
        x,
        labels,
        means,
        weights,
        variance: spec.variance,
        prior_covariance,
    })
}

/// Parameters of the method of moments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MomentConfig {
    /// Number of components `K` to whiten to (at most `d` are kept).
    pub components: usize,
    /// The known spherical variance; `None`: estimate it as `λ_min(Σ̂)` (needs `K ≤ d`).
    #[serde(default)]
    pub variance: Option<f64>,
    /// Floor for the eigenvalues of `M̂2` in the whitening (1e-12).
    #[serde(default = "default_floor")]
    pub eigen_floor: f64,
}

fn default_floor() -> f64 {
    1e-12
}

impl MomentConfig {
    pub fn new(components: usize) -> Self {
        Self {
            components,
            variance: None,
            eigen_floor: default_floor(),
        }
    }
}

impl Checked for MomentConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::at_least_one("components", self.components as u64)?;
        params::if_given(self.variance, |v| params::positive("variance", v))?;
        params::positive("eigen_floor", self.eigen_floor)
    }
}

/// The whitened moments of a sample.
#[derive(Debug, Clone, PartialEq)]
pub struct GmmMoments {
    /// `T̂ = M̂3(W, W, W)`, lazily (samples and correction).
    pub tensor: MomentTensor,
    /// `W = U_K D_K^{-1/2}`, `d × K'`.
    pub whitening: Array2<f64>,
    /// `B = U_K D_K^{1/2}`, `d × K'`.
    pub unwhitening: Array2<f64>,
    /// `σ̂²` (or the known `σ²`).
    pub variance: f64,
    /// FLOPs of the estimation (moments, eigendecompositions counted as `9d³` \[A\], whitening).
    pub flops: u64,
}

/// The method of moments (module docs). `x`: `N × d`, one sample per row.
pub fn estimate_moments(
    x: ArrayView2<'_, f64>,
    cfg: &MomentConfig,
) -> Result<GmmMoments, AlgoError> {
    cfg.check()?;
    let (n, d) = x.dim();
    if n < 2 || d == 0 || !x.iter().all(|v| v.is_finite()) {
        return Err(AlgoError::data(format!(
            "moments: need at least 2 finite samples of dimension >= 1, got {n} x {d}"
        )));
    }
    if cfg.variance.is_none() && cfg.components > d {
        return Err(AlgoError::param(
            "variance",
            format!(
                "must be given when components ({}) exceed the dimension {d} \
                 (sigma^2 = lambda_min(cov) needs K <= d)",
                cfg.components
            ),
        ));
    }
    let nf = n as f64;
    let k = cfg.components.min(d);
    let mut fl = 0u64;
    let mean = x.sum_axis(Axis(0)) / nf;
    fl += (n * d + d) as u64;
    let mut s = Array2::<f64>::zeros((d, d));
    gemm_sym(s.view_mut(), false, x.t(), x);
    s /= nf;
    fl += (n * d * (d + 1)) as u64 + (d * d) as u64;
    let eig =
        |m: &Array2<f64>| sym_eigen(m.view()).map_err(|e| AlgoError::Numerical(e.to_string()));
    let (variance, m1) = match cfg.variance {
        Some(v) => (v, &mean * v),
        None => {
            let mut cov = s.clone();
            for a in 0..d {
                for b in 0..d {
                    cov[[a, b]] -= mean[a] * mean[b];
                }
            }
            let (vals, vecs) = eig(&cov)?;
            fl += 9 * (d * d * d) as u64 + 2 * (d * d) as u64;
            let v = vecs.column(0).to_owned();
            let shift = v.dot(&mean);
            let proj = x.dot(&v);
            let w = proj.mapv(|p| (p - shift) * (p - shift));
            let m1 = x.t().dot(&w) / nf;
            fl += (2 * n * d + 2 * n + 2 * n * d + d) as u64;
            (vals[0].max(0.0), m1)
        }
    };
    let mut m2 = s;
    for a in 0..d {
        m2[[a, a]] -= variance;
    }
    let (vals, vecs) = eig(&m2)?;
    fl += 9 * (d * d * d) as u64;
    let mut whitening = Array2::<f64>::zeros((d, k));
    let mut unwhitening = Array2::<f64>::zeros((d, k));
    for c in 0..k {
        let idx = d - 1 - c; // descending
        let lam = vals[idx].max(cfg.eigen_floor);
        let col = vecs.column(idx);
        whitening.column_mut(c).assign(&(&col / lam.sqrt()));
        unwhitening.column_mut(c).assign(&(&col * lam.sqrt()));
    }
    // Y = (X W)ᵀ, K' × N.
    let mut xw = Array2::<f64>::zeros((n, k));
    gemm(xw.view_mut(), false, x, whitening.view());
    let y = xw.t().as_standard_layout().into_owned();
    let mt = whitening.t().dot(&m1);
    let mm = whitening.t().dot(&whitening);
    fl += 2 * (n * d * k) as u64 + 2 * (d * k) as u64 + 2 * (d * k * k) as u64;
    Ok(GmmMoments {
        tensor: MomentTensor::Empirical(EmpiricalMoments {
            y,
            scale: 1.0 / nf,
            correction: Some((mt, mm)),
        }),
        whitening,
        unwhitening,
        variance,
        flops: fl,
    })
}

/// A mixture estimated from a decomposition.
#[derive(Debug, Clone, PartialEq)]
pub struct GmmEstimate {
    /// `ŵ_k` (not normalised).
    pub weights: Vec<f64>,
    /// `r × d`, one centre per row.
    pub means: Array2<f64>,
    pub variance: f64,
}

/// `ŵ_k = 1/λ_k²`, `μ̂_k = λ_k B v_k` (module docs).
pub fn reconstruct(moments: &GmmMoments, dec: &Decomposition) -> GmmEstimate {
    let b = &moments.unwhitening;
    let r = dec.weights.len();
    let mut means = Array2::<f64>::zeros((r, b.nrows()));
    let mut weights = Vec::with_capacity(r);
    for (c, &lam) in dec.weights.iter().enumerate() {
        if lam.abs() < 1e-12 || !lam.is_finite() {
            weights.push(0.0);
            continue;
        }
        weights.push(1.0 / (lam * lam));
        let mu = b.dot(&dec.components.column(c)) * lam;
        means.row_mut(c).assign(&mu);
    }
    GmmEstimate {
        weights,
        means,
        variance: moments.variance,
    }
}

/// Assign each row of `x` to `argmax_k [log w_k − ‖x − μ_k‖²/(2σ²)]` (ties: lowest k).
pub fn assign(
    x: ArrayView2<'_, f64>,
    weights: &[f64],
    means: ArrayView2<'_, f64>,
    variance: f64,
) -> Vec<usize> {
    let r = means.nrows();
    assert_eq!(weights.len(), r);
    let mut xm = Array2::<f64>::zeros((x.nrows(), r));
    gemm(xm.view_mut(), false, x, means.t());
    let bias: Vec<f64> = (0..r)
        .map(|k| {
            let mu = means.row(k);
            if weights[k] > 0.0 {
                weights[k].ln() - mu.dot(&mu) / (2.0 * variance)
            } else {
                f64::NEG_INFINITY
            }
        })
        .collect();
    xm.rows()
        .into_iter()
        .map(|row| {
            let mut best = (f64::NEG_INFINITY, 0);
            for (k, &p) in row.iter().enumerate() {
                let s = bias[k] + p / variance;
                if s > best.0 {
                    best = (s, k);
                }
            }
            best.1
        })
        .collect()
}

/// The clustering with the true parameters (the "optimal" line of Figs. 3–4).
pub fn optimal_assignment(sample: &GmmSample) -> Vec<usize> {
    assign(
        sample.x.view(),
        &sample.weights,
        sample.means.view(),
        sample.variance,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baselines::tensor_power::TensorPowerConfig;
    use crate::{GivensTensorConfig, Tensor3, TensorDecomposer};
    use dyad_core::Schedule;
    use dyad_core::nmi::nmi;
    use dyad_kernels::fixtures::Models;

    fn small_spec() -> GmmSpec {
        GmmSpec {
            dim: 8,
            components: 3,
            samples: 40_000,
            variance: 0.5,
            prior_dof: None,
            prior_scale: 4.0,
            weights: MixingWeights::Uniform,
        }
    }

    #[test]
    fn sampling_is_a_pure_function_of_spec_and_seed() {
        let spec = GmmSpec {
            samples: 500,
            ..small_spec()
        };
        let a = sample_gmm(&spec, 3).unwrap();
        assert_eq!(a, sample_gmm(&spec, 3).unwrap());
        assert_ne!(a.x, sample_gmm(&spec, 4).unwrap().x);
        // The mixture does not depend on the sample count.
        let b = sample_gmm(
            &GmmSpec {
                samples: 50,
                ..spec.clone()
            },
            3,
        )
        .unwrap();
        assert_eq!(a.means, b.means);
        assert_eq!(a.x.dim(), (500, 8));
        assert!(a.labels.iter().all(|&h| h < 3));
        let dir = GmmSpec {
            weights: MixingWeights::Dirichlet { alpha: 1.0 },
            ..spec
        };
        let c = sample_gmm(&dir, 1).unwrap();
        assert!((c.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(
            GmmSpec {
                prior_dof: Some(3.0),
                ..GmmSpec::paper(10, 10)
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn bartlett_factor_has_the_wishart_mean() {
        let mut rng = seeded(5);
        let (d, nu) = (4, 7.0);
        let reps = 20_000;
        let mut acc = Array2::<f64>::zeros((d, d));
        for _ in 0..reps {
            let a = bartlett(d, nu, &mut rng);
            acc += &a.dot(&a.t());
        }
        acc /= reps as f64;
        for i in 0..d {
            for j in 0..d {
                let want = if i == j { nu } else { 0.0 };
                assert!(
                    (acc[[i, j]] - want).abs() < 0.15,
                    "E[W]_{i}{j} = {}",
                    acc[[i, j]]
                );
            }
        }
        let a = bartlett(d, nu, &mut rng);
        let inv = lower_inverse(&a);
        assert!(
            (&a.dot(&inv) - &Array2::<f64>::eye(d))
                .iter()
                .all(|v| v.abs() < 1e-12)
        );
    }

    /// Whitened population moments are orthogonally decomposable with `λ_k = 1/√w_k`: the
    /// sample estimate must be close to that.
    #[test]
    fn whitened_tensor_is_nearly_orthogonally_decomposable() {
        let sample = sample_gmm(&small_spec(), 1).unwrap();
        let mom = estimate_moments(sample.x.view(), &MomentConfig::new(3)).unwrap();
        assert!((mom.variance - 0.5).abs() < 0.02, "σ̂² = {}", mom.variance);
        let (t, _) = mom.tensor.dense();
        // Population: Σ_k w_k (Wᵀμ_k)^{⊗3}.
        let wt_mu = mom.whitening.t().dot(&sample.means.t()); // K × K
        let want = Tensor3::rank_one_sum(&sample.weights, wt_mu.view());
        let err = t
            .as_slice()
            .iter()
            .zip(want.as_slice())
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(
            err / want.norm() < 0.05,
            "relative error {}",
            err / want.norm()
        );
        // And the whitened centres √w_k Wᵀμ_k are nearly orthonormal.
        let v = &wt_mu * &Array1::from(sample.weights.iter().map(|w| w.sqrt()).collect::<Vec<_>>());
        let g = v.t().dot(&v);
        assert!(
            (&g - &Array2::<f64>::eye(3)).iter().all(|x| x.abs() < 0.05),
            "{g}"
        );
    }

    #[test]
    fn both_decomposers_recover_the_mixture_and_cluster_near_optimally() {
        let sample = sample_gmm(&small_spec(), 2).unwrap();
        let mom = estimate_moments(sample.x.view(), &MomentConfig::new(3)).unwrap();
        let optimal = nmi(&optimal_assignment(&sample), &sample.labels);
        let methods: Vec<(&str, Box<dyn TensorDecomposer>)> = vec![
            ("givens", Box::new(GivensTensorConfig::default())),
            (
                "givens-lazy",
                Box::new(GivensTensorConfig {
                    lazy: true,
                    ..Default::default()
                }),
            ),
            ("tpm", Box::new(TensorPowerConfig::default())),
        ];
        for (name, m) in methods {
            let mut obs = Models::default();
            m.fit(
                &mom.tensor,
                &Schedule::last_only(10_000),
                &mut seeded(3),
                &mut obs,
            )
            .unwrap();
            let dec = &obs.seen.last().unwrap().1;
            let est = reconstruct(&mom, dec);
            let labels = assign(
                sample.x.view(),
                &est.weights,
                est.means.view(),
                est.variance,
            );
            let score = nmi(&labels, &sample.labels);
            assert!(
                score > optimal - 0.03,
                "{name}: NMI {score} vs optimal {optimal}"
            );
            // Centres within a small distance of the true ones (matched by nearest).
            for mu in sample.means.rows() {
                let dist = est
                    .means
                    .rows()
                    .into_iter()
                    .map(|m| (&m - &mu).mapv(|v| v * v).sum().sqrt())
                    .fold(f64::INFINITY, f64::min);
                assert!(
                    dist < 0.3 * mu.dot(&mu).sqrt().max(1.0),
                    "{name}: centre off by {dist}"
                );
            }
        }
    }

    #[test]
    fn too_few_dimensions_need_the_known_variance() {
        let spec = GmmSpec {
            dim: 3,
            components: 5,
            samples: 2000,
            ..small_spec()
        };
        let sample = sample_gmm(&spec, 1).unwrap();
        assert!(matches!(
            estimate_moments(sample.x.view(), &MomentConfig::new(5)),
            Err(AlgoError::InvalidParam(ref e)) if e.param == "variance"
        ));
        for (cfg, param) in [
            (MomentConfig::new(0), "components"),
            (
                MomentConfig {
                    variance: Some(-1.0),
                    ..MomentConfig::new(2)
                },
                "variance",
            ),
            (
                MomentConfig {
                    eigen_floor: 0.0,
                    ..MomentConfig::new(2)
                },
                "eigen_floor",
            ),
        ] {
            assert_eq!(cfg.check().unwrap_err().param, param);
        }
        let cfg = MomentConfig {
            variance: Some(0.5),
            ..MomentConfig::new(5)
        };
        let mom = estimate_moments(sample.x.view(), &cfg).unwrap();
        assert_eq!(mom.tensor.dim(), 3);
        assert_eq!(mom.variance, 0.5);
    }
}
