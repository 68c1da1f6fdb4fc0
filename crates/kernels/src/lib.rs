//! dyad-kernels: what every learner crate of dyad shares. The numerical kernels (SIMD sweeps
//! in [`simd`], small dense linear algebra over faer in [`linalg`], the queued low-rank
//! updates of [`queued`], samplers in [`sampling`]), the learner plumbing (the errors a learner
//! raises, the [`Ranker`] and [`LabelRanker`] families most papers share, [`Checked`]
//! parameters) and the [`SolverEntry`] through which each family crate exports its list of
//! solvers to the harness ([`solver`]). The seeded toy problems of [`fixtures`] serve the tests
//! and benchmarks of every family.
//!
//! # The crates of the learners
//!
//! One crate per paper family, each with its own baselines, tests, benchmarks and solver list:
//! `dyad-oasis`, `dyad-loreta`, `dyad-aroma`, `dyad-givens`, `dyad-funcish`,
//! `dyad-tensor-rank`; the metric-learning baselines several papers share (Euclidean, LMNN,
//! MCML, LEGO, ITML) are `dyad-metric-baselines`. Learners know nothing of files, specs or
//! plots: they train on their family's input, draw randomness from the [`dyad_core::Rng`]
//! they are given, and report their model at the checkpoints of a [`dyad_core::Schedule`] to
//! a [`dyad_core::Observer`], with the solver clock paused while it evaluates. Iterative
//! learners run through [`dyad_core::drive`], the one checkpoint loop.
//!
//! # Learner families
//!
//! Each family declares its own trait: what it trains on and what model it reports.
//!
//! * [`Ranker`]: a similarity `S(p, q)` learned from labelled examples (OASIS, LORETA,
//!   d-AROMA and f-AROMA, and the metric-learning baselines); its model is a
//!   [`dyad_core::Scorer`].
//! * [`LabelRanker`]: scores of every label for an example, learned from examples with label
//!   sets (LORETA's ImageNet model, the class-centroid baseline); its model is a
//!   [`dyad_core::LabelScorer`].
//! * `dyad_givens::SparsePca` and `dyad_givens::TensorDecomposer`: Givens coordinate descent
//!   on orthogonal matrices and its baselines (GPower, the tensor power method).
//! * `dyad_tensor_rank::PairRanker`: scores of examples learned from labelled inequality and
//!   equality pairs (the deep-ranking baseline on candle compiles into that crate only).
//! * `dyad_funcish`: per-category classifiers of bag-of-words images and the gene
//!   similarities built on their out-of-fold probabilities.
//!
//! A family with its own trait declares it in its crate, with the family name the harness's
//! tasks match.

pub mod fixtures;
pub mod linalg;
pub mod params;
pub mod queued;
pub mod sampling;
pub mod simd;
pub mod solver;

pub use params::{Checked, ParamError};
pub use solver::{BuiltSolver, SolverEntry, Solvers};

use dyad_core::{CoreError, LabelScorer, LabeledSet, Observer, Rng, Schedule};

/// Errors a learner can raise.
///
/// What was handed to a learner and is wrong is one of two kinds, kept apart:
///
/// * a hyper-parameter outside its domain is [`AlgoError::InvalidParam`], whose
///   [`ParamError`] names the parameter as a spec writes it (so the harness points at the
///   spec's line). Every configuration's [`Checked::check`] finds these without data, and
///   `fit` re-checks (a learner fit with a bad configuration returns this error, it does not
///   panic). A parameter valid on its own but not for the data at hand (a rank above the
///   data's dimension, more components than variables, more folds than examples) is an
///   `InvalidParam` naming it too, raised once the data are known;
/// * data, or another input given to a learner or a model (a graph, index pairs, factors, a
///   warm start), that do not fit it (shapes, indices out of range, non-finite values, sizes
///   that overflow) are [`AlgoError::Data`]: there is no parameter to name
///   ([`AlgoError::data`] builds one from a message).
#[derive(Debug, thiserror::Error)]
pub enum AlgoError {
    /// The data or another input do not fit the learner.
    #[error(transparent)]
    Data(#[from] CoreError),
    /// A hyper-parameter outside its domain, named.
    #[error("invalid parameter {0}")]
    InvalidParam(#[from] ParamError),
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// A learner run outside dyad (a Python peer the harness runs) failed; the message names
    /// it and says why.
    #[error("{0}")]
    External(String),
}

impl AlgoError {
    /// Data (or another input) that do not fit: [`AlgoError::Data`] with `message`.
    pub fn data(message: impl Into<String>) -> Self {
        AlgoError::Data(CoreError::Invalid(message.into()))
    }

    /// Parameter `param` outside its domain: [`AlgoError::InvalidParam`].
    pub fn param(param: impl Into<String>, message: impl Into<String>) -> Self {
        AlgoError::InvalidParam(ParamError::new(param, message))
    }
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

    /// A lower bound on the bytes the learner holds at once while it trains on `rows`
    /// examples of `dim` features, beyond the data itself: its model and the working arrays
    /// that grow faster than the data (a dense `d x d` matrix, an `n x n` kernel). `None`:
    /// nothing of that kind. Planning refuses a cell whose estimate exceeds the machine's
    /// memory ([`f64_bytes`] counts floats).
    fn memory(&self, _rows: usize, _dim: usize) -> Option<u64> {
        None
    }

    /// Every name the statistics of its models ([`dyad_core::Scorer::statistics`]) may
    /// carry: a spec's table, plot or claim naming one is checked against these at plan
    /// time.
    fn statistics(&self) -> &'static [&'static str] {
        &[]
    }
}

/// The bytes of `count` `f64`s, saturating (`count` as a product of sizes in `u128`).
pub fn f64_bytes(count: u128) -> u64 {
    u64::try_from(count.saturating_mul(8)).unwrap_or(u64::MAX)
}

/// The bytes of a dense `rows x cols` matrix of `f64`.
pub fn dense_bytes(rows: usize, cols: usize) -> u64 {
    f64_bytes(rows as u128 * cols as u128)
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
