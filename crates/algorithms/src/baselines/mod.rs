//! Baselines the papers compare against.

pub mod centroid;
pub mod euclidean;
pub mod gpower;
pub mod hier;
pub mod itml;
pub mod lego;
pub mod lmnn;
pub mod mcml;
pub mod spherical_gmm;
pub mod tensor_power;
