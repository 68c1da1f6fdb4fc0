//! Givens-rotation coordinate descent on orthogonal matrices (Shalit & Chechik, ICML 2014;
//! Shalit's thesis ch. 2.4; spec `givens.md`).
//!
//! A coordinate of the orthogonal group `O_d` is a basis direction `H_ij = e_i e_jᵀ − e_j e_iᵀ`
//! of its skew-symmetric tangent space, and a step along that geodesic is right-multiplication
//! by a Givens rotation `G(i, j, θ)`, which touches two columns (`6d` FLOPs) and keeps the
//! iterate exactly orthogonal. Algorithm 1 draws pairs and minimises exactly over `θ`.
//!
//! # Modules, one per algorithm
//!
//! * [`rotation`]: the rotation kernels applied in place, **the one sign convention**
//!   (`G_ii = G_jj = cos θ`, `G_ij = −sin θ`, `G_ji = sin θ`, spec §1.2), column-major storage,
//!   the coordinate-selection rules (uniform with replacement, shuffled sweeps, cyclic);
//! * [`coordinate`]: Algorithm 1, the driver over any [`coordinate::CoordinateProblem`]
//!   (convergence rule, FLOP budget) and [`coordinate::FnObjective`] for a closure `f(U)`;
//! * [`angle`]: Brent / grid 1-D searches and the closed-form tensor angle (cubic in `tan θ`);
//! * [`sparse_pca`]: Algorithm 2 (sparse PCA, `m = n`), `h`, solveForZ, pattern filling;
//! * [`streaming_spca`]: Algorithm 5 (streaming sparse PCA, `m < n`);
//! * [`tensor`]: symmetric tensors, moment-tensor inputs, Algorithm 3;
//! * [`lazy_tensor`]: Algorithm 6 (lazy tensor evaluation on samples);
//! * [`flops`]: the FLOP accounting of spec §6.3, shared with the baselines;
//! * [`metrics`]: sparsity, tensor reconstruction error, component recovery (Hungarian);
//! * [`sampling`]: seeded Gaussian / gamma / orthogonal draws.
//!
//! Baselines beside them in `crate::baselines`: `gpower` (generalised power method, ℓ1/ℓ0,
//! single-unit with deflation and block), `tensor_power` (robust tensor power method) and
//! `spherical_gmm` (synthetic mixtures, the method of moments feeding both decompositions,
//! reconstruction and clustering). NMI and explained variance are in `dyad_core`.
//!
//! # Family traits
//!
//! * [`SparsePca`]: trains on a dense data matrix `A` (`d × n`, rows = variables, columns =
//!   samples, as the spec and `dyad-datasets`' expression sets) and reports a
//!   [`SparsePcaModel`]: sparse loadings `Z` (`d × m`), the orthogonal `U` when the method has and
//!   tracks one, the objective, and the FLOPs spent.
//! * [`TensorDecomposer`]: decomposes a symmetric third-order [`tensor::MomentTensor`] (dense, or
//!   given by samples) and reports a [`Decomposition`] (weights `λ_k`, components `v_k`, FLOPs).
//!
//! **FLOPs** are counted inside the solvers as they work (spec §6.3) and reported with every
//! checkpoint in the model's `flops` field, beside the solver seconds of the
//! [`dyad_core::Checkpoint`], so curves can be drawn against either. The work of forming the
//! reported model from the solver state (solveForZ, pattern filling) is reported separately as
//! `extract_flops`: the spec does not count monitoring work.
//!
//! # Steps
//!
//! One step of a [`dyad_core::Schedule`] is one coordinate step (one pair drawn) for
//! Algorithms 1, 2, 3 and 6; one outer iteration (one new sample) for Algorithm 5; one power
//! iteration for GPower; one extracted component for the tensor power method. Runs report
//! through [`dyad_core::drive`] with the solver clock paused while observers evaluate, and are
//! deterministic for a given `Rng` seed.

pub mod angle;
pub mod baselines;
pub mod coordinate;
pub mod fixtures;
pub mod flops;
pub mod lazy_tensor;
pub mod metrics;
pub mod rotation;
pub mod sparse_pca;
pub mod streaming_spca;
pub mod tensor;

pub use coordinate::{FnObjective, OrthogonalModel};
pub use rotation::{ColMatrix, Givens, Selection};
pub use sparse_pca::{AngleSearch, GammaScale, GivensSpcaConfig};
pub use streaming_spca::StreamingGivensSpcaConfig;
pub use tensor::{EmpiricalMoments, GivensTensorConfig, MomentTensor, Tensor3};

use dyad_core::{Observer, Rng, Schedule};
use dyad_kernels::AlgoError;
use ndarray::{Array2, ArrayView2};

/// The solvers of this crate, as the harness's registry composes them: one line per solver
/// (each file declares its own entry: name, label, version, parameters).
pub static SOLVERS: dyad_kernels::Solvers = dyad_kernels::Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[
        sparse_pca::SOLVER,
        streaming_spca::SOLVER,
        baselines::gpower::SOLVER,
        tensor::SOLVER,
        baselines::tensor_power::SOLVER,
    ],
};

/// The family of [`SparsePca`] learners (Givens spec §3, §5.1).
pub const SPARSE_PCA: &str = "sparse-pca";

/// Build a [`SparsePca`] learner from spec parameters ([`dyad_kernels::solver::family`]).
pub fn sparse_pca_solver<C>(
    v: toml::Value,
) -> Result<dyad_kernels::BuiltSolver, dyad_kernels::ParamError>
where
    C: SparsePca + dyad_kernels::Checked + serde::de::DeserializeOwned + serde::Serialize + 'static,
{
    dyad_kernels::solver::family::<C, dyn SparsePca>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`TensorDecomposer`]s (Givens spec §4, §5.2).
pub const TENSOR_DECOMPOSITION: &str = "tensor-decomposer";

/// Build a [`TensorDecomposer`] from spec parameters (as [`sparse_pca_solver`]).
pub fn tensor_decomposer_solver<C>(
    v: toml::Value,
) -> Result<dyad_kernels::BuiltSolver, dyad_kernels::ParamError>
where
    C: TensorDecomposer
        + dyad_kernels::Checked
        + serde::de::DeserializeOwned
        + serde::Serialize
        + 'static,
{
    dyad_kernels::solver::family::<C, dyn TensorDecomposer>(
        v,
        |c| c.is_iterative(),
        |c| Box::new(c),
    )
}

/// A sparse-PCA model at one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct SparsePcaModel {
    /// The sparse loadings `Z`, `d × m`: unit-norm columns (or zero columns when every entry
    /// fell below the threshold).
    pub loadings: Array2<f64>,
    /// The orthogonal factor `U` (`n × m`) when the method has one and reports it (Algorithm 2
    /// with `track_u`; block GPower's `X`); `None` otherwise.
    pub rotation: Option<Array2<f64>>,
    /// The method's own objective at this point (Eq. 6 `Σ [|AU| − γ]_+²` for the Givens
    /// methods — over the current window for Algorithm 5 — and for ℓ1 GPower; the ℓ0 objective
    /// for ℓ0 GPower).
    pub objective: f64,
    /// The absolute threshold `γ` used (the first component's for greedy GPower).
    pub gamma: f64,
    /// Solver FLOPs so far (spec §6.3), counted over all rows of the data ([`flops`] module
    /// docs: "two counts, one rule").
    pub flops: u64,
    /// The same work counted over the rows that can pass the threshold only (`‖a_k‖ > γ`;
    /// [`flops`] module docs).
    pub flops_active_rows: u64,
    /// FLOPs of forming `loadings` from the solver state at this checkpoint (not in `flops`).
    pub extract_flops: u64,
    /// Samples (columns of the data) read so far.
    pub samples_seen: usize,
}

impl SparsePcaModel {
    /// Non-zeros of `Z`.
    pub fn nnz(&self) -> usize {
        metrics::nnz(self.loadings.view())
    }

    /// `nnz(Z) / (d·m)`.
    pub fn density(&self) -> f64 {
        metrics::density(self.loadings.view())
    }
}

/// The sparse-PCA family: learns sparse loadings from a dense data matrix.
pub trait SparsePca: Send + Sync {
    /// Train on `data` (`d × n`: rows = variables, columns = samples), reporting the model at
    /// every step of `schedule` up to its budget or until the method finishes.
    fn fit(
        &self,
        data: ArrayView2<'_, f64>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<SparsePcaModel>,
    ) -> Result<(), AlgoError>;

    /// Whether training proceeds in steps.
    fn is_iterative(&self) -> bool;
}

/// A (partial) decomposition `T ≈ Σ_k λ_k v_k^{⊗3}` at one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    /// `λ_k`, one per component.
    pub weights: Vec<f64>,
    /// `K × r`: column `k` is `v_k` (unit norm).
    pub components: Array2<f64>,
    /// `Σ_k T(v_k, v_k, v_k)` (Eq. 8 for the Givens methods; the sum of the extracted `λ_k`
    /// for the tensor power method).
    pub objective: f64,
    /// Solver FLOPs so far (spec §6.3).
    pub flops: u64,
    /// FLOPs of forming this report (not in `flops`).
    pub extract_flops: u64,
}

/// The tensor-decomposition family: orthogonal decomposition of a symmetric 3-tensor.
pub trait TensorDecomposer: Send + Sync {
    /// Decompose `input`, reporting at every step of `schedule` up to its budget or until the
    /// method finishes.
    fn fit(
        &self,
        input: &MomentTensor,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<Decomposition>,
    ) -> Result<(), AlgoError>;

    /// Whether training proceeds in steps.
    fn is_iterative(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_traits_are_object_safe_and_thread_safe() {
        fn send_sync<T: Send + Sync + ?Sized>() {}
        send_sync::<dyn SparsePca>();
        send_sync::<dyn TensorDecomposer>();
        let methods: Vec<Box<dyn SparsePca>> = vec![
            Box::new(GivensSpcaConfig::default()),
            Box::new(StreamingGivensSpcaConfig::new(3)),
            Box::new(crate::baselines::gpower::GPowerConfig::default()),
        ];
        assert!(methods.iter().all(|m| m.is_iterative()));
        let decomposers: Vec<Box<dyn TensorDecomposer>> = vec![
            Box::new(GivensTensorConfig::default()),
            Box::new(crate::baselines::tensor_power::TensorPowerConfig::default()),
        ];
        assert!(decomposers.iter().all(|m| m.is_iterative()));
    }
}
