//! The baselines of the Givens paper: GPower (generalised power method, sparse PCA), the
//! tensor power method and the spherical-GMM moment estimator of the tensor task.

pub mod gpower;
pub mod spherical_gmm;
pub mod tensor_power;
