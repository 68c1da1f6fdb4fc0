//! dyad-core: the vocabulary every other dyad crate speaks.
//!
//! * [`data`]: labelled sparse data sets (CSR rows via `sprs`) and per-class splits;
//! * [`sparse`]: sorted sparse vectors and the merge/dot kernels the online learners use;
//! * [`rng`]: explicitly seeded, portable randomness and seed derivation;
//! * [`sampling`]: triplet samplers for label-based relevance;
//! * [`metrics`]: precision@k, average precision, mean average precision;
//! * [`nmi`]: normalised mutual information between clusterings;
//! * [`explained_variance`]: plain and adjusted explained variance of sparse loadings;
//! * [`kendall`]: Kendall's τ on all inequality pairs of a ground truth, in `O(n log n)`;
//! * [`observe`]: checkpoint schedules, the solver clock, and the observer a learner reports to;
//! * [`model`]: the [`model::Scorer`] trait every learned similarity implements.

pub mod auc;
pub mod data;
pub mod explained_variance;
pub mod gmm;
pub mod kendall;
pub mod metrics;
pub mod model;
pub mod nmi;
pub mod observe;
pub mod rng;
pub mod sampling;
pub mod sparse;

pub use data::{LabeledSet, Partition};
pub use model::{Candidates, LabelScorer, Scorer};
pub use observe::{
    Checkpoint, Control, Driven, Flow, Observer, Schedule, SolverClock, Stepper, drive, steps,
};
pub use rng::{Rng, derive_seed, seeded};
pub use sparse::SparseVec;

/// Errors raised by the core containers.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CoreError {
    #[error("labels ({labels}) and feature rows ({rows}) differ in number")]
    LabelCount { rows: usize, labels: usize },
    #[error("class {class} has {have} examples but {need} were requested ({what})")]
    ClassTooSmall {
        class: String,
        have: usize,
        need: usize,
        what: &'static str,
    },
    #[error("{0}")]
    Invalid(String),
}
