//! Baselines the papers compare against.

pub mod euclidean;
pub mod lego;
pub mod mcml;
