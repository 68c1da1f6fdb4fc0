//! A spherical Gaussian mixture as a data-set description: the synthetic mixtures of the
//! Givens paper's tensor experiments (spec §7). The sampler and the method of moments are in
//! `dyad_givens::baselines::spherical_gmm`; the description lives here so that the data
//! set provider (`dyad data list`, specs' `[[datasets]]`) and the algorithms share one type
//! and one check.

use crate::CoreError;
use serde::{Deserialize, Serialize};

/// Mixing weights of a synthetic mixture.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum MixingWeights {
    #[default]
    Uniform,
    Dirichlet {
        alpha: f64,
    },
}

/// A synthetic spherical mixture, drawn as `dyad_givens::baselines::spherical_gmm` describes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GmmSpec {
    /// Dimension `d`.
    pub dim: usize,
    /// Number of components `K` (the paper: 20).
    #[serde(default = "default_components")]
    pub components: usize,
    /// Number of samples `N`.
    pub samples: usize,
    /// Spherical variance `σ²` (2).
    #[serde(default = "default_variance")]
    pub variance: f64,
    /// Inverse-Wishart degrees of freedom `ν > d − 1` (default `d + 2`).
    #[serde(default)]
    pub prior_dof: Option<f64>,
    /// Inverse-Wishart scale `ψ` (`Ψ = ψ I`; 1).
    #[serde(default = "default_scale")]
    pub prior_scale: f64,
    #[serde(default)]
    pub weights: MixingWeights,
}

fn default_components() -> usize {
    20
}
fn default_variance() -> f64 {
    2.0
}
fn default_scale() -> f64 {
    1.0
}

impl GmmSpec {
    /// The paper's mixture: `K = 20`, `σ² = 2`, other parameters at their defaults.
    pub fn paper(dim: usize, samples: usize) -> Self {
        Self {
            dim,
            components: default_components(),
            samples,
            variance: default_variance(),
            prior_dof: None,
            prior_scale: default_scale(),
            weights: MixingWeights::Uniform,
        }
    }

    pub fn dof(&self) -> f64 {
        self.prior_dof.unwrap_or(self.dim as f64 + 2.0)
    }

    /// Check every parameter.
    pub fn validate(&self) -> Result<(), CoreError> {
        let bad = |m: String| Err(CoreError::Invalid(format!("GMM: {m}")));
        if self.dim == 0 || self.components == 0 || self.samples == 0 {
            return bad(format!(
                "dim, components and samples must be positive, got {}, {}, {}",
                self.dim, self.components, self.samples
            ));
        }
        if !(self.variance.is_finite() && self.variance > 0.0) {
            return bad(format!("variance must be positive, got {}", self.variance));
        }
        let nu = self.dof();
        if !(nu.is_finite() && nu > self.dim as f64 - 1.0) {
            return bad(format!(
                "prior_dof must exceed dim − 1 = {}, got {nu}",
                self.dim - 1
            ));
        }
        if !(self.prior_scale.is_finite() && self.prior_scale > 0.0) {
            return bad(format!(
                "prior_scale must be positive, got {}",
                self.prior_scale
            ));
        }
        if let MixingWeights::Dirichlet { alpha } = self.weights
            && !(alpha.is_finite() && alpha > 0.0)
        {
            return bad(format!("Dirichlet alpha must be positive, got {alpha}"));
        }
        Ok(())
    }
}
