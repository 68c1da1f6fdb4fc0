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
