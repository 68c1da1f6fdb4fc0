//! dyad-metric-baselines: the metric-learning baselines several papers share (OASIS, LORETA
//! and AROMA compare against them): the Euclidean distance, LMNN, MCML, LEGO and ITML, with
//! the Mahalanobis model they report ([`metric`]). Each is a [`dyad_kernels::Ranker`]; each
//! file declares its [`dyad_kernels::SolverEntry`], listed in [`SOLVERS`].

pub mod euclidean;
pub mod itml;
pub mod lego;
pub mod lmnn;
pub mod mcml;
pub mod metric;

/// The solvers of this crate, as the harness's registry composes them: one line per solver
/// (each file declares its own entry: name, label, version, parameters).
pub static SOLVERS: dyad_kernels::Solvers = dyad_kernels::Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[
        mcml::SOLVER,
        lego::SOLVER,
        lmnn::SOLVER,
        euclidean::SOLVER,
        itml::SOLVER,
    ],
};
