//! dyad-algorithms: the learners of the dyad papers and their baselines.
//!
//! One module per paper family, each with its variants; `baselines/` beside them. Learners
//! know nothing of files, specs or plots: they train on their family's input, draw
//! randomness from the [`dyad_core::Rng`] they are given, and report their model at the
//! checkpoints of a [`dyad_core::Schedule`] to a [`dyad_core::Observer`], with the solver
//! clock paused while it evaluates. Iterative learners run through [`dyad_core::drive`], the
//! one checkpoint loop.
//!
//! # Learner families
//!
//! Each family declares its own trait: what it trains on and what model it reports.
//!
//! * [`Ranker`]: a similarity `S(p, q)` learned from labelled examples ([`oasis`], LORETA,
//!   [`aroma`]: d-AROMA and f-AROMA, AROW lifted to bilinear similarities, with vector AROW as
//!   their reference; and the metric-learning baselines); its model is a
//!   [`dyad_core::Scorer`].
//! * [`LabelRanker`]: scores of every label for an example, learned from examples with label
//!   sets (LORETA's ImageNet model, the class-centroid baseline); its model is a
//!   [`dyad_core::LabelScorer`].
//! * [`givens::SparsePca`] and [`givens::TensorDecomposer`]: Givens coordinate descent on
//!   orthogonal matrices (sparse PCA of a dense data matrix, orthogonal decomposition of a
//!   symmetric 3-tensor) and its baselines (GPower, the tensor power method); models
//!   [`givens::SparsePcaModel`] and [`givens::Decomposition`], with FLOP counts.
//! * [`tensor_rank::PairRanker`]: scores of examples learned from labelled inequality and
//!   equality pairs (RankSVM, semi-supervised and transductive ranking, full and low-rank
//!   kernel-based ranking with the tensor regulariser `tr(KᵀLK)`, the deep-ranking baseline
//!   on candle); model [`tensor_rank::PairModel`].
//!
//! * [`funcish`]: per-category classifiers of bag-of-words images and the gene similarities
//!   built on their out-of-fold probabilities (flat-sim, GO-sim).
//!
//! Later families (pairwise rankers, classifiers) declare their traits in their own modules,
//! beside their learners; each is registered in the harness with a family name.

pub mod aroma;
pub mod baselines;
pub mod fixtures;
pub mod funcish;
pub mod givens;
pub mod linalg;
pub mod loreta;
pub mod metric;
pub mod oasis;
pub mod params;
pub mod queued;
pub(crate) mod simd;
pub mod tensor_rank;

pub use params::{Checked, ParamError};

// The families' configurations, checked by their own `validate()`.
checked_by_validate!(
    aroma::DiagonalAromaConfig,
    aroma::FactoredAromaConfig,
    baselines::itml::ItmlConfig,
    baselines::hier::HierConfig,
    baselines::factored_gd::FactoredGdConfig,
    baselines::naive_psd_gd::NaivePsdGdConfig,
    baselines::pa_v2::PaV2Config,
    baselines::iterative_pa::IterativePaConfig,
    baselines::infogain::InfogainSelectedConfig,
    baselines::matrix_perceptron::MatrixPerceptronConfig,
    baselines::group_perceptron::GroupPerceptronConfig,
    baselines::gpower::GPowerConfig,
    baselines::tensor_power::TensorPowerConfig,
    loreta::LoretaConfig,
    loreta::LoretaPsdConfig,
    loreta::LoretaLabelsConfig,
    givens::GivensSpcaConfig,
    givens::StreamingGivensSpcaConfig,
    givens::GivensTensorConfig,
);

use dyad_core::{CoreError, LabelScorer, LabeledSet, Observer, Rng, Schedule};

/// Errors a learner can raise.
#[derive(Debug, thiserror::Error)]
pub enum AlgoError {
    #[error(transparent)]
    Data(#[from] CoreError),
    #[error("invalid parameter: {0}")]
    Param(String),
    #[error("invalid parameter {0}")]
    InvalidParam(#[from] ParamError),
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A learner run outside dyad (a Python peer the harness runs) failed; the message names
    /// it and says why.
    #[error("{0}")]
    External(String),
}

/// The ranker family: a learner of a similarity function from labelled data. Its
/// configuration is [`Checked`] before any data is read.
pub trait Ranker: Send + Sync {
    /// Train on `train`, reporting the model at every step of `schedule` up to its budget
    /// (learners without a notion of steps report once, at step 0).
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError>;

    /// Whether training proceeds in steps (so early stopping over a checkpoint grid applies).
    fn is_iterative(&self) -> bool;

    /// The model it reports at step 0, when that is a fixed model the harness checks against
    /// a baseline (`dyad check`'s sanity checks): default [`Start::Unstated`].
    fn start(&self) -> Start {
        Start::Unstated
    }
}

/// A ranker's model before training, as far as it ranks like a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Nothing declared.
    Unstated,
    /// The bilinear form `W = I`, `S(p, q) = pᵀq`: it ranks exactly as the Euclidean baseline
    /// on rows of unit norm (and rows without features, which both rank last).
    IdentityBilinear,
    /// The Mahalanobis distance with `M = I`: it ranks exactly as the Euclidean baseline.
    IdentityDistance,
    /// `W = 0`: every candidate scores alike, so every precision@k is at chance.
    Zero,
}

/// The label-ranker family: learns to score labels for examples. Each training row's labels
/// are its `relevance` list when the set has one (multi-label data), else its class.
pub trait LabelRanker: Send + Sync {
    /// Train on `train`, reporting the label scorer at every step of `schedule` (learners
    /// without steps report once, at step 0).
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<dyn LabelScorer>,
    ) -> Result<(), AlgoError>;

    fn is_iterative(&self) -> bool;
}

/// The labels of row `i` of `set`: its relevance list, else its class.
pub fn row_labels(set: &LabeledSet, i: usize) -> &[u32] {
    match &set.relevance {
        Some(r) => &r[i],
        None => std::slice::from_ref(&set.labels[i]),
    }
}

/// The number of labels of `set`: one past the largest label id its rows carry (at least
/// its class count).
pub fn n_labels(set: &LabeledSet) -> usize {
    let from_lists = set
        .relevance
        .as_ref()
        .map(|r| {
            r.iter()
                .flatten()
                .map(|&l| l as usize + 1)
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0);
    from_lists.max(set.n_classes())
}
