//! Baselines the papers compare against.

pub mod centroid;
pub mod euclidean;
pub mod factored_gd;
pub mod gpower;
pub mod group_perceptron;
pub mod hier;
pub mod infogain;
pub mod iterative_pa;
pub mod itml;
pub mod lego;
pub mod lmnn;
pub mod matrix_perceptron;
pub mod mcml;
pub mod naive_psd_gd;
pub mod pa_v2;
pub mod spherical_gmm;
pub mod tensor_power;
