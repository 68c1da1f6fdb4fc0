//! What each peer is (its script, the model it reports) and the parameters it takes, as a
//! spec writes them: typed, defaults filled in, checked at plan time.

use dyad_kernels::params::{self, Checked, ParamError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What a script's model matrix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerModel {
    /// `W` of the bilinear similarity `p^T W q` ([`dyad_oasis::BilinearModel`]).
    Bilinear,
    /// `M` of the Mahalanobis similarity `-(p-q)^T M (p-q)` ([`dyad_metric_baselines::metric::Mahalanobis`]).
    Mahalanobis,
    /// The factors `A`, `B` (`d x k` each) of the bilinear `W = A B^T` ([`dyad_loreta::LowRankModel`]).
    LowRank,
    /// Sparse loadings `Z` (`d x m`) of a data matrix ([`dyad_givens::SparsePcaModel`]), with the script's
    /// own objective.
    Loadings,
    /// A symmetric decomposition `Σ_k λ_k v_k^{⊗3}` of a `K x K x K` tensor: the components
    /// (`K x r`) and the weights ([`dyad_givens::Decomposition`]).
    Decomposition,
}

impl PeerModel {
    pub(super) fn kind(self) -> &'static str {
        match self {
            PeerModel::Bilinear => "bilinear",
            PeerModel::Mahalanobis => "mahalanobis",
            PeerModel::LowRank => "lowrank",
            PeerModel::Loadings => "loadings",
            PeerModel::Decomposition => "decomposition",
        }
    }
}

/// A peer script and what it does.
#[derive(Debug)]
pub struct PeerScript {
    /// Registry name (`py:<...>`).
    pub name: &'static str,
    /// File name under `peers/`.
    pub script: &'static str,
    pub model: PeerModel,
    /// Whether it trains on dyad's triplets (`triplets.npy`, one per step).
    pub triplets: bool,
    /// Whether it reports models at the schedule's steps (else once, at step 0).
    pub iterative: bool,
}

/// `py:oasis-numpy`: plain NumPy/SciPy OASIS on dyad's triplets.
pub static OASIS_NUMPY: PeerScript = PeerScript {
    name: "py:oasis-numpy",
    script: "oasis_numpy.py",
    model: PeerModel::Bilinear,
    triplets: true,
    iterative: true,
};

/// `py:lmnn-metric-learn`: metric-learn's LMNN.
pub static LMNN_METRIC_LEARN: PeerScript = PeerScript {
    name: "py:lmnn-metric-learn",
    script: "lmnn_metric_learn.py",
    model: PeerModel::Mahalanobis,
    triplets: false,
    iterative: false,
};

/// `py:itml-metric-learn`: metric-learn's ITML (supervised: pairs drawn from the labels).
pub static ITML_METRIC_LEARN: PeerScript = PeerScript {
    name: "py:itml-metric-learn",
    script: "itml_metric_learn.py",
    model: PeerModel::Mahalanobis,
    triplets: false,
    iterative: false,
};

/// `py:loreta-numpy`: plain NumPy LORETA-1 (Algorithms 4 and 7) on dyad's triplets.
pub static LORETA_NUMPY: PeerScript = PeerScript {
    name: "py:loreta-numpy",
    script: "loreta_numpy.py",
    model: PeerModel::LowRank,
    triplets: true,
    iterative: true,
};

/// `py:loreta-pymanopt`: online Riemannian SGD on Pymanopt's fixed-rank manifold (its
/// projection and retraction) on dyad's triplets.
pub static LORETA_PYMANOPT: PeerScript = PeerScript {
    name: "py:loreta-pymanopt",
    script: "loreta_pymanopt.py",
    model: PeerModel::LowRank,
    triplets: true,
    iterative: true,
};

/// The parameters of one peer, as a spec writes them (typed, defaults filled in, checked).
pub trait PeerParams: Checked + Serialize + DeserializeOwned + 'static {
    const SCRIPT: &'static PeerScript;
}

/// `py:oasis-numpy`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OasisNumpyParams {
    /// Aggressiveness `C` of the PA-I step (as dyad's `oasis`).
    #[serde(default = "default_c")]
    pub c: f64,
}

fn default_c() -> f64 {
    0.1
}

impl Checked for OasisNumpyParams {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("c", self.c)
    }
}

impl PeerParams for OasisNumpyParams {
    const SCRIPT: &'static PeerScript = &OASIS_NUMPY;
}

/// The parameters of the LORETA peers (`py:loreta-numpy`, `py:loreta-pymanopt`): the rank
/// and the constant step size, with the defaults of dyad's `loreta`; both start from the
/// truncated identity `[I_k; 0]` (dyad's `init = "identity"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoretaPeerParams {
    /// Rank `k` of `W` (10, as dyad's `loreta`); must be below the number of features (the
    /// script checks it against the data).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Step size `eta` (0.1, as dyad's `loreta`).
    #[serde(default = "default_eta")]
    pub eta: f64,
}

fn default_rank() -> usize {
    10
}
fn default_eta() -> f64 {
    0.1
}

impl Checked for LoretaPeerParams {
    fn check(&self) -> Result<(), ParamError> {
        if self.rank == 0 {
            return Err(ParamError::new("rank", "must be at least 1, got 0"));
        }
        params::positive("eta", self.eta)
    }
}

/// `py:loreta-numpy`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LoretaNumpyParams(pub LoretaPeerParams);

impl Checked for LoretaNumpyParams {
    fn check(&self) -> Result<(), ParamError> {
        self.0.check()
    }
}

impl PeerParams for LoretaNumpyParams {
    const SCRIPT: &'static PeerScript = &LORETA_NUMPY;
}

/// `py:loreta-pymanopt`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LoretaPymanoptParams(pub LoretaPeerParams);

impl Checked for LoretaPymanoptParams {
    fn check(&self) -> Result<(), ParamError> {
        self.0.check()
    }
}

impl PeerParams for LoretaPymanoptParams {
    const SCRIPT: &'static PeerScript = &LORETA_PYMANOPT;
}

/// `py:lmnn-metric-learn`'s parameters: metric-learn's `LMNN` names and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LmnnMetricLearnParams {
    #[serde(default = "default_init")]
    pub init: String,
    #[serde(default = "default_neighbors")]
    pub n_neighbors: u32,
    #[serde(default = "default_min_iter")]
    pub min_iter: u32,
    #[serde(default = "default_max_iter")]
    pub max_iter: u32,
    #[serde(default = "default_learn_rate")]
    pub learn_rate: f64,
    #[serde(default = "default_regularization")]
    pub regularization: f64,
    #[serde(default = "default_tol")]
    pub convergence_tol: f64,
}

fn default_init() -> String {
    "auto".into()
}
fn default_neighbors() -> u32 {
    3
}
fn default_min_iter() -> u32 {
    50
}
fn default_max_iter() -> u32 {
    1000
}
fn default_learn_rate() -> f64 {
    1e-7
}
fn default_regularization() -> f64 {
    0.5
}
fn default_tol() -> f64 {
    1e-3
}

impl Checked for LmnnMetricLearnParams {
    fn check(&self) -> Result<(), ParamError> {
        const INITS: [&str; 5] = ["auto", "pca", "identity", "random", "lda"];
        if !INITS.contains(&self.init.as_str()) {
            return Err(ParamError::new(
                "init",
                format!("must be one of {}, got {:?}", INITS.join(", "), self.init),
            ));
        }
        if self.n_neighbors == 0 {
            return Err(ParamError::new("n_neighbors", "must be at least 1, got 0"));
        }
        if self.max_iter < self.min_iter {
            return Err(ParamError::new(
                "max_iter",
                format!(
                    "must be at least min_iter ({}), got {}",
                    self.min_iter, self.max_iter
                ),
            ));
        }
        params::positive("learn_rate", self.learn_rate)?;
        params::open_interval("regularization", self.regularization, 0.0, 1.0)?;
        params::positive("convergence_tol", self.convergence_tol)
    }
}

impl PeerParams for LmnnMetricLearnParams {
    const SCRIPT: &'static PeerScript = &LMNN_METRIC_LEARN;
}

/// `py:itml-metric-learn`'s parameters: metric-learn's `ITML_Supervised` names and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItmlMetricLearnParams {
    #[serde(default = "default_gamma")]
    pub gamma: f64,
    #[serde(default = "default_max_iter")]
    pub max_iter: u32,
    #[serde(default = "default_tol")]
    pub tol: f64,
    /// Similar and dissimilar pairs drawn (none: metric-learn's `20 x classes^2`).
    #[serde(default)]
    pub n_constraints: Option<u32>,
    #[serde(default = "default_prior")]
    pub prior: String,
    /// `true`: the distance bounds are the 5th / 95th percentiles of *squared* distances of
    /// 1,000 random pairs of training rows, dyad's ITML definition (the authors' code),
    /// handed to metric-learn as `bounds`; `false` (default): metric-learn's own, percentiles
    /// of unsquared distances of all pairs.
    #[serde(default)]
    pub squared_bounds: bool,
}

fn default_gamma() -> f64 {
    1.0
}
fn default_prior() -> String {
    "identity".into()
}

impl Checked for ItmlMetricLearnParams {
    fn check(&self) -> Result<(), ParamError> {
        const PRIORS: [&str; 3] = ["identity", "covariance", "random"];
        params::positive("gamma", self.gamma)?;
        if self.max_iter == 0 {
            return Err(ParamError::new("max_iter", "must be at least 1, got 0"));
        }
        params::positive("tol", self.tol)?;
        if self.n_constraints == Some(0) {
            return Err(ParamError::new(
                "n_constraints",
                "must be at least 1, got 0",
            ));
        }
        if !PRIORS.contains(&self.prior.as_str()) {
            return Err(ParamError::new(
                "prior",
                format!("must be one of {}, got {:?}", PRIORS.join(", "), self.prior),
            ));
        }
        Ok(())
    }
}

impl PeerParams for ItmlMetricLearnParams {
    const SCRIPT: &'static PeerScript = &ITML_METRIC_LEARN;
}

/// `py:tensor-power-tensorly`: TensorLy's robust symmetric tensor power iteration
/// (`symmetric_parafac_power_iteration`; Givens issue 15's peer).
pub static TENSOR_POWER_TENSORLY: PeerScript = PeerScript {
    name: "py:tensor-power-tensorly",
    script: "tensor_power_tensorly.py",
    model: PeerModel::Decomposition,
    triplets: false,
    iterative: false,
};

/// `py:tensor-power-tensorly`'s parameters: TensorLy's names; defaults as dyad's
/// `tensor-power` (50 restarts, 50 iterations; TensorLy's own are 10 and 10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorPowerTensorlyParams {
    /// Components (default: the tensor's dimension).
    #[serde(default)]
    pub rank: Option<usize>,
    #[serde(default = "default_repeat")]
    pub n_repeat: u32,
    #[serde(default = "default_repeat")]
    pub n_iteration: u32,
}

fn default_repeat() -> u32 {
    50
}

impl Checked for TensorPowerTensorlyParams {
    fn check(&self) -> Result<(), ParamError> {
        if self.rank == Some(0) {
            return Err(ParamError::new("rank", "must be at least 1, got 0"));
        }
        if self.n_repeat == 0 {
            return Err(ParamError::new("n_repeat", "must be at least 1, got 0"));
        }
        if self.n_iteration == 0 {
            return Err(ParamError::new("n_iteration", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

impl PeerParams for TensorPowerTensorlyParams {
    const SCRIPT: &'static PeerScript = &TENSOR_POWER_TENSORLY;
}

/// `py:sparsepca-sklearn`: scikit-learn's `SparsePCA` (Givens issue 15's peer).
pub static SPARSEPCA_SKLEARN: PeerScript = PeerScript {
    name: "py:sparsepca-sklearn",
    script: "sparsepca_sklearn.py",
    model: PeerModel::Loadings,
    triplets: false,
    iterative: false,
};

/// `py:sparsepca-sklearn`'s parameters: scikit-learn's `SparsePCA` names and defaults
/// (`n_components` required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparsePcaSklearnParams {
    pub n_components: usize,
    /// The l1 penalty on the components (1).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// The ridge on the codes (0.01).
    #[serde(default = "default_ridge")]
    pub ridge_alpha: f64,
    #[serde(default = "default_sk_max_iter")]
    pub max_iter: u32,
    #[serde(default = "default_sk_tol")]
    pub tol: f64,
    /// `"lars"` or `"cd"` (`"lars"`).
    #[serde(default = "default_method")]
    pub method: String,
}

fn default_alpha() -> f64 {
    1.0
}
fn default_ridge() -> f64 {
    0.01
}
fn default_sk_max_iter() -> u32 {
    1000
}
fn default_sk_tol() -> f64 {
    1e-8
}
fn default_method() -> String {
    "lars".into()
}

impl Checked for SparsePcaSklearnParams {
    fn check(&self) -> Result<(), ParamError> {
        if self.n_components == 0 {
            return Err(ParamError::new("n_components", "must be at least 1, got 0"));
        }
        params::positive("alpha", self.alpha)?;
        params::non_negative("ridge_alpha", self.ridge_alpha)?;
        if self.max_iter == 0 {
            return Err(ParamError::new("max_iter", "must be at least 1, got 0"));
        }
        params::positive("tol", self.tol)?;
        if !["lars", "cd"].contains(&self.method.as_str()) {
            return Err(ParamError::new(
                "method",
                format!("must be \"lars\" or \"cd\", got {:?}", self.method),
            ));
        }
        Ok(())
    }
}

impl PeerParams for SparsePcaSklearnParams {
    const SCRIPT: &'static PeerScript = &SPARSEPCA_SKLEARN;
}
