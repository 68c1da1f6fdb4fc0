//! LORETA: online learning in the embedded manifold of low-rank matrices (Shalit, Weinshall
//! & Chechik, NIPS 2010 and JMLR 2012). Spec: `loreta.md`.
//!
//! # The method
//!
//! A model `W` (`n x m`) of rank exactly `k` is kept factored, `W = A B^T` with `A` (`n x k`)
//! and `B` (`m x k`) of full column rank, and trained by Riemannian SGD on the manifold
//! `M_k` of rank-`k` matrices (spec §1): the ambient (Euclidean) gradient is projected onto
//! the tangent space (`P_W(Z) = P_A Z + Z P_B - P_A Z P_B`, §1.3) and the step is mapped back
//! to the manifold by the second-order *LORETA retraction* (§1.5, Theorem 3 and its factored
//! form Lemma 4):
//!
//! ```text
//! R_W(xi) = Z1 Z2^T,  M = A^+ G B^{+T},  N1, N2 the components of xi outside col(A), col(B)
//! Z1 = A (I + M/2 - M^2/8) + A_perp N2 (I - M/2)
//! Z2 = B (I + M^T/2 - (M^T)^2/8) + B_perp N1 (I - M^T/2)
//! ```
//!
//! Every loss of the papers has rank-one gradients (§3), so the descent `G = -eta grad L =
//! g1 g2^T` is handled by LORETA-1 (§2.3, [`Loreta1`]): `O((n+m)k)` time and memory per step,
//! the pseudo-inverses `A^+`, `B^+` carried between steps and updated by the rank-one
//! formula of Algorithm 7 (§2.4, [`pinv`]). See the module docs of [`loreta1`] for the fused
//! evaluation (two passes over each factor, about `12(n+m)k` flops) and [`psd`] for the PSD
//! variant `W = Y Y^T` (Algorithm 5).
//!
//! # Files
//!
//! * [`manifold`]: the tangent projection, both forms of the retraction, naive Riemannian
//!   SGD with explicit complements (Algorithms 1/2, dense, for tests) and LORETA-r for
//!   rank-`r` gradients (Algorithm 3);
//! * [`pinv`]: the corrected rank-one pseudo-inverse update (Algorithm 7), all four branches;
//! * [`loreta1`]: the LORETA-1 state (Algorithm 4), safeguards of §2.7;
//! * [`gram`]: LORETA-1 in Gram form (the same iterates with the pseudo-inverses implicit,
//!   `A^+ = (A^T A)^{-1} A^T`: `O((nnz g1 + nnz g2) k + k^2)` per step, independent of `n`);
//! * [`psd`]: LORETA-1-PSD (Algorithm 5); [`psd_gram`]: the same in Gram form;
//! * [`init`]: the initialisations of §2.8;
//! * [`losses`]: the triplet and multilabel ranking hinges of §3;
//! * [`model`]: [`LowRankModel`], the reported model (a [`dyad_core::Scorer`] and a
//!   [`LabelScorer`], scoring through `k`-dimensional projections, never forming `W`);
//! * [`triplet`]: the [`dyad_kernels::Ranker`]s [`LoretaConfig`] and [`LoretaPsdConfig`] (20NG, §3.1);
//! * [`labels`]: the [`LabelRanker`] family and [`LoretaLabelsConfig`] (ImageNet, §3.2).
//!
//! The baselines of spec §4 live in `crate::baselines`: `iterative_pa` (B3), `pa_v2` (B4),
//! `factored_gd` (B1), `naive_psd_gd` (B2), `matrix_perceptron` (B8, and PA on the full
//! matrix), `group_perceptron` (B9), `infogain` (the feature selection of §5.1 and B10:
//! OASIS or LEGO on the selected features); OASIS (B5) and LEGO (B6) themselves are
//! `dyad_oasis` and `dyad_metric_baselines::lego`.
//!
//! # Choices where the spec is loose (each a config option)
//!
//! * **Step size** (§2.9: no schedule given, chosen by CV): `eta` constant by default, with the
//!   optional decay `eta_t = eta / (1 + (t-1)/eta_t0)` (`t` the 1-based step). Default `eta =
//!   0.1`: the spec gives only the CV grid `10^-4 .. 10^2`; on unit-norm rows a step of 0.1
//!   moves a score by at most about 0.1 of the margin.
//! * **Steps with no loss** do nothing (`R_W(0) = W`) but count as steps of the schedule.
//! * **Sampling** (§3.4): triplets i.i.d. from [`dyad_core::sampling::TripletSampler`]; for
//!   label ranking an image uniformly among the rows with a relevant and a non-relevant label.
//! * **Tolerances** of Algorithm 7 (`|beta| <= 1e-12`, `|w| <= 1e-12 max(1, |c|)`) and the
//!   rank-loss branch (skip the step): [`Safeguards`].
//! * **Safeguards** (§2.7), all off by default (faithful runs): the drift check
//!   `check_every` / `drift_tolerance` (recompute `A^+`, `B^+` when `|A^+ A - I|_max > 1e-8`),
//!   and `rebalance_every` (ours, not in the papers: refactor into balanced factors, which
//!   leaves the trajectory of `W` unchanged). Non-finite quantities are always errors; branch
//!   counts are always kept and reported as model statistics.

pub mod baselines;
pub mod fixtures;
pub mod gram;
pub mod init;
pub mod labels;
pub mod loreta1;
pub mod losses;
pub mod manifold;
pub mod model;
pub mod pinv;
pub mod psd;
pub mod psd_gram;
pub mod triplet;

/// Helpers shared by the module's tests.
#[cfg(test)]
pub(crate) mod testing {
    use dyad_core::{Rng, SparseVec};
    use ndarray::Array2;
    use rand::Rng as _;

    /// An `n x m` matrix of independent U(-1, 1) entries.
    pub fn random(n: usize, m: usize, rng: &mut Rng) -> Array2<f64> {
        Array2::from_shape_fn((n, m), |_| rng.random_range(-1.0..1.0))
    }

    pub fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// Feed a stream of gradients `(0.1 g1) g2^T` to `step`.
    pub fn replay(
        grads: &[(SparseVec, SparseVec)],
        mut step: impl FnMut(super::ScaledSparse<'_>, super::ScaledSparse<'_>),
    ) {
        for (g1, g2) in grads {
            step(
                super::ScaledSparse::new(&g1.indices, &g1.values, 0.1),
                super::ScaledSparse::new(&g2.indices, &g2.values, 1.0),
            );
        }
    }

    /// A random sparse vector of dimension `d` with about `fill` of its entries non-zero
    /// (U(-1, 1) values; `e_0` when none was drawn).
    pub fn sparse(d: usize, fill: f64, rng: &mut Rng) -> SparseVec {
        let mut v = SparseVec::default();
        for i in 0..d {
            if rng.random::<f64>() < fill {
                v.indices.push(i);
                v.values.push(rng.random_range(-1.0..1.0));
            }
        }
        if v.indices.is_empty() {
            v.indices.push(0);
            v.values.push(1.0);
        }
        v
    }
}

pub use gram::Loreta1Gram;
pub use init::Init;
pub use labels::{LabelRetrieval, LoretaLabelsConfig, label_ranking_map};
pub use loreta1::{Loreta1, Loreta1Step, ScaledSparse};
pub use model::{LoretaStats, LowRankModel};
pub use pinv::{PinvBranch, PinvTolerances};
pub use psd::{Loreta1Psd, PsdStep};
pub use psd_gram::Loreta1PsdGram;
pub use triplet::{Form, LoretaConfig, LoretaPsdConfig};

use dyad_core::sampling::TripletSampler;
use dyad_core::{LabeledSet, Rng};
use dyad_kernels::params::{non_negative, positive};
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// The solvers of this crate, as the harness's registry composes them: one line per solver
/// (each file declares its own entry: name, label, version, parameters).
pub static SOLVERS: dyad_kernels::Solvers = dyad_kernels::Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[
        triplet::SOLVER_LORETA,
        triplet::SOLVER_LORETA_PSD,
        baselines::iterative_pa::SOLVER_ITERATIVE_PA,
        baselines::pa_v2::SOLVER,
        baselines::naive_psd_gd::SOLVER,
        baselines::factored_gd::SOLVER,
        labels::SOLVER,
        baselines::iterative_pa::SOLVER_ITERATIVE_PA_LABELS,
        baselines::matrix_perceptron::SOLVER,
        baselines::group_perceptron::SOLVER,
        baselines::centroid::SOLVER,
    ],
};

// The label-ranker family is the crate's ([`dyad_kernels::LabelRanker`], scoring through
// [`dyad_core::LabelScorer`]); LORETA's ImageNet model is one of its members.
pub use dyad_core::LabelScorer;
pub use dyad_kernels::LabelRanker;

/// Numerical safeguards of spec §2.7 and the tolerances of Algorithm 7 (spec §2.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Safeguards {
    /// Check the pseudo-inverse drift `|A^+ A - I|_max` every this many steps and recompute
    /// `A^+`, `B^+` when it exceeds `drift_tolerance` (0: never, the default; the spec
    /// suggests `10^4` for long runs). Costs `O((n+m)k^2)` per check.
    #[serde(default)]
    pub check_every: u64,
    /// Drift above which the pseudo-inverses are recomputed (1e-8).
    #[serde(default = "default_drift")]
    pub drift_tolerance: f64,
    /// Refactor `W = A B^T` into balanced factors every this many steps (0: never, the
    /// default). Not in the papers; leaves `W` unchanged. Costs `O((n+m)k^2)`.
    #[serde(default)]
    pub rebalance_every: u64,
    /// `beta` counts as zero in Algorithm 7 when `|beta| <=` this (1e-12).
    #[serde(default = "default_tol")]
    pub beta_tolerance: f64,
    /// `w` counts as zero when `|w| <=` this `max(1, |c|)` (1e-12).
    #[serde(default = "default_tol")]
    pub w_tolerance: f64,
}

fn default_drift() -> f64 {
    1e-8
}
fn default_tol() -> f64 {
    1e-12
}

impl Default for Safeguards {
    fn default() -> Self {
        Self {
            check_every: 0,
            drift_tolerance: default_drift(),
            rebalance_every: 0,
            beta_tolerance: default_tol(),
            w_tolerance: default_tol(),
        }
    }
}

/// Its fields by their own names: a configuration holding them names them under
/// `safeguards` ([`ParamError::under`]).
impl Checked for Safeguards {
    fn check(&self) -> Result<(), ParamError> {
        positive("drift_tolerance", self.drift_tolerance)?;
        non_negative("beta_tolerance", self.beta_tolerance)?;
        non_negative("w_tolerance", self.w_tolerance)
    }
}

impl Safeguards {
    pub fn tolerances(&self) -> PinvTolerances {
        PinvTolerances {
            beta: self.beta_tolerance,
            w: self.w_tolerance,
        }
    }

    /// Whether the drift check runs after step `step`.
    pub fn check_due(&self, step: u64) -> bool {
        self.check_every > 0 && step.is_multiple_of(self.check_every)
    }

    /// Whether the factors are rebalanced after step `step`.
    pub fn rebalance_due(&self, step: u64) -> bool {
        self.rebalance_every > 0 && step.is_multiple_of(self.rebalance_every)
    }
}

/// `eta_t = eta / (1 + (t-1)/t0)` for 1-based step `t`, or `eta` without `t0`.
pub fn step_size(eta: f64, t0: Option<f64>, step: u64) -> f64 {
    match t0 {
        Some(t0) => eta / (1.0 + (step.saturating_sub(1)) as f64 / t0),
        None => eta,
    }
}

/// The initialisation parameters shared by the factored learners.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct InitSpec {
    pub init: Init,
    pub std: f64,
    /// Subgradients summed by the zero initialisation (`None`: `2k`).
    pub zero_updates: Option<usize>,
}

impl InitSpec {
    /// `init_std` positive; `zero_init_updates`, when given, at least the rank.
    pub fn check(&self, rank: usize) -> Result<(), ParamError> {
        positive("init_std", self.std)?;
        if let Some(u) = self.zero_updates
            && u < rank
        {
            return Err(ParamError::new(
                "zero_init_updates",
                format!("must be at least the rank {rank}, got {u}"),
            ));
        }
        Ok(())
    }

    fn updates(&self, k: usize) -> usize {
        self.zero_updates.unwrap_or(2 * k)
    }

    /// Factors of a `d x d` similarity for triplets.
    pub fn triplet_factors(
        &self,
        train: &LabeledSet,
        sampler: &TripletSampler,
        k: usize,
        rng: &mut Rng,
    ) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
        let d = train.dim();
        Ok(match self.init {
            Init::Identity => (
                init::truncated_identity(d, k),
                init::truncated_identity(d, k),
            ),
            Init::Gaussian => {
                let a = init::gaussian(d, k, self.std, rng);
                (a, init::gaussian(d, k, self.std, rng))
            }
            Init::Zero => init::zero_init_triplets(train, sampler, k, self.updates(k), rng)?,
        })
    }

    /// Factors `A` (`n_labels x k`), `B` (`d x k`) of a label scorer.
    pub fn label_factors(
        &self,
        train: &LabeledSet,
        rows: &[usize],
        n_labels: usize,
        k: usize,
        rng: &mut Rng,
    ) -> Result<(Array2<f64>, Array2<f64>), AlgoError> {
        let d = train.dim();
        Ok(match self.init {
            Init::Identity => (
                init::truncated_identity(n_labels, k),
                init::truncated_identity(d, k),
            ),
            Init::Gaussian => {
                let a = init::gaussian(n_labels, k, self.std, rng);
                (a, init::gaussian(d, k, self.std, rng))
            }
            Init::Zero => init::zero_init_labels(train, rows, n_labels, k, self.updates(k), rng)?,
        })
    }
}

/// Reject a rank the data cannot hold (`1 <= k <= min(n, m)`).
/// The rank a fit uses on `d` features: `rank`, or under a memory budget (`memory`, the
/// papers' "number of features × rank is constant", spec §5.1) `memory / d` rounded down, so
/// that 500,000 gives rank 30 on 16,660 features and rank 75 on 6,666. A budget below `d`
/// (rank 0) is an error naming both.
pub fn budget_rank(
    who: &str,
    rank: usize,
    memory: Option<usize>,
    d: usize,
) -> Result<usize, AlgoError> {
    match memory {
        None => Ok(rank),
        Some(m) if d > 0 && m / d > 0 => Ok(m / d),
        Some(m) => Err(AlgoError::param(
            "memory",
            format!("must be at least the {d} features to leave {who} a rank, got {m}"),
        )),
    }
}

/// [`Ranker::memory`](dyad_kernels::Ranker::memory) of a learner of `factors` factors of
/// `dim x k` floats (two for `A B^T`, one for `Y Y^T`, four with LORETA-1's
/// pseudo-inverses), `k` the rank or what a `memory` budget leaves on `dim` features.
pub(crate) fn factor_memory(
    rank: usize,
    memory: Option<usize>,
    dim: usize,
    factors: u64,
) -> Option<u64> {
    let k = budget_rank("", rank, memory, dim).ok()?.min(dim);
    Some(dyad_kernels::dense_bytes(dim, k).saturating_mul(factors))
}

/// A memory budget, when given, is positive (checked without data).
pub(crate) fn check_memory(memory: Option<usize>) -> Result<(), ParamError> {
    if memory == Some(0) {
        return Err(ParamError::new("memory", "must be positive, got 0"));
    }
    Ok(())
}

/// Reject a rank the data cannot hold (`1 <= k <= min(n, m)`): a parameter valid on its own
/// but not for these data, named `memory` when the rank came from a memory budget.
pub(crate) fn check_rank(
    who: &str,
    memory: Option<usize>,
    k: usize,
    n: usize,
    m: usize,
) -> Result<(), AlgoError> {
    if k == 0 || k > n.min(m) {
        let param = if memory.is_some() { "memory" } else { "rank" };
        return Err(AlgoError::param(
            param,
            format!(
                "gives {who} rank {k}; it must lie in 1..={} for a {n} x {m} model",
                n.min(m)
            ),
        ));
    }
    Ok(())
}
