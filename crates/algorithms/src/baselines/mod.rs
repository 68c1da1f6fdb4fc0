//! Baselines the papers compare against.

pub mod euclidean;
pub mod lmnn;
