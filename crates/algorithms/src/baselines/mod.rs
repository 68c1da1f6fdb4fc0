//! Baselines the papers compare against.

pub mod euclidean;
pub mod itml;
pub mod lego;
pub mod lmnn;
pub mod mcml;
