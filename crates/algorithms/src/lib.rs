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
//! * [`Ranker`]: a similarity `S(p, q)` learned from labelled examples (OASIS, LORETA,
//!   AROMA and the metric-learning baselines); its model is a [`dyad_core::Scorer`].
//! * [`loreta::LabelRanker`]: a scorer of every label for a feature vector, learned from rows
//!   with relevant labels (LORETA's ImageNet task and its baselines); its model is a
//!   [`loreta::LabelScorer`].
//!
//! Later families (factorisers of a data matrix, tensor decomposers, pairwise rankers,
//! classifiers) declare their traits in their own modules, beside their learners.

pub mod baselines;
pub mod fixtures;
pub mod linalg;
pub mod loreta;
pub mod metric;
pub mod oasis;

use dyad_core::{CoreError, LabeledSet, Observer, Rng, Schedule};

/// Errors a learner can raise.
#[derive(Debug, thiserror::Error)]
pub enum AlgoError {
    #[error(transparent)]
    Data(#[from] CoreError),
    #[error("invalid parameter: {0}")]
    Param(String),
    #[error("numerical failure: {0}")]
    Numerical(String),
}

/// The ranker family: a learner of a similarity function from labelled data.
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
}
