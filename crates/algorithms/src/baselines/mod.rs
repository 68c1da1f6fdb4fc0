//! Baselines the papers compare against.

pub mod centroid;
pub mod euclidean;
pub mod hier;
pub mod itml;
pub mod lego;
pub mod lmnn;
pub mod mcml;
