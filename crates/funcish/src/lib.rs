//! FuncISH (Liscovitch, Shalit & Chechik 2013; `../shared/papers/funcish.md`): gene function
//! from brain in-situ hybridisation images.
//!
//! The visual phase (dense multi-scale SIFT, per-level k-means dictionaries, bags of visual
//! words) is a feature pipeline and lives in `dyad_datasets::pipelines`; this module holds the
//! semantic phase and its evaluation:
//!
//! * [`classify`]: one L2-regularised logistic regression per GO category, nested 5 × 5
//!   cross-validation over images (§2.6), out-of-fold probabilities as the functional
//!   representation (Fig. 2F), per-category test AUC and permutation significance;
//! * [`similarity`]: flat-sim (§2.7) and GO-sim (§2.8, Schlicker's simRel over the ontology's
//!   information content, most informative common ancestors as explanations), and the
//!   similarity baselines of §2.9.

pub mod classify;
pub mod similarity;

/// The solvers of this crate, as the harness's registry composes them: one line per solver
/// (each file declares its own entry: name, label, version, parameters).
pub static SOLVERS: dyad_kernels::Solvers = dyad_kernels::Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[
        similarity::SOLVER_GO_SIM,
        similarity::SOLVER_FLAT_SIM,
        similarity::SOLVER_BOW_COSINE,
        similarity::SOLVER_COARSE_CORRELATION,
    ],
};

/// The family of [`classify::CategoryClassifier`]s (FuncISH §2.6: one classifier per GO
/// category).
pub const ISH_CLASSIFIER: &str = "ish-classifier";

/// Build a [`classify::CategoryClassifier`] from spec parameters
/// ([`dyad_kernels::solver::family`]).
pub fn ish_classifier_solver<C>(
    v: toml::Value,
) -> Result<dyad_kernels::BuiltSolver, dyad_kernels::ParamError>
where
    C: classify::CategoryClassifier
        + dyad_kernels::Checked
        + serde::de::DeserializeOwned
        + serde::Serialize
        + 'static,
{
    dyad_kernels::solver::family::<C, dyn classify::CategoryClassifier>(
        v,
        |c| c.is_iterative(),
        |c| Box::new(c),
    )
}

/// The family of [`similarity::GeneSimilarity`] measures (FuncISH §2.7–2.9, Fig. 4).
pub const GENE_SIMILARITY: &str = "gene-similarity";

/// Build a [`similarity::GeneSimilarity`] from spec parameters (never iterative).
pub fn gene_similarity_solver<C>(
    v: toml::Value,
) -> Result<dyad_kernels::BuiltSolver, dyad_kernels::ParamError>
where
    C: similarity::GeneSimilarity
        + dyad_kernels::Checked
        + serde::de::DeserializeOwned
        + serde::Serialize
        + 'static,
{
    dyad_kernels::solver::family::<C, dyn similarity::GeneSimilarity>(v, |_| false, |c| Box::new(c))
}
