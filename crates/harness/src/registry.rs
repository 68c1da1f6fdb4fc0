//! The registry joining specs to code: solver names to learners, each with its family, a
//! version (part of every cell key: bump it when results change) and the source files whose
//! fingerprint is kept as provenance. Adding a baseline is one file in `dyad-algorithms` plus
//! one line in [`SOLVERS`]. Data sets are listed in `dyad_datasets::registry::PROVIDERS`,
//! tasks in [`crate::tasks::TASKS`].

use crate::peers::{ItmlMetricLearnParams, LmnnMetricLearnParams, OasisNumpyParams, peer};
use dyad_algorithms::aroma::{DiagonalAromaConfig, FactoredAromaConfig};
use dyad_algorithms::baselines::centroid::CentroidConfig;
use dyad_algorithms::baselines::euclidean::EuclideanConfig;
use dyad_algorithms::baselines::factored_gd::FactoredGdConfig;
use dyad_algorithms::baselines::gpower::GPowerConfig;
use dyad_algorithms::baselines::group_perceptron::GroupPerceptronConfig;
use dyad_algorithms::baselines::hier::HierConfig;
use dyad_algorithms::baselines::iterative_pa::IterativePaConfig;
use dyad_algorithms::baselines::itml::ItmlConfig;
use dyad_algorithms::baselines::lego::LegoConfig;
use dyad_algorithms::baselines::lmnn::LmnnConfig;
use dyad_algorithms::baselines::matrix_perceptron::MatrixPerceptronConfig;
use dyad_algorithms::baselines::mcml::McmlConfig;
use dyad_algorithms::baselines::naive_psd_gd::NaivePsdGdConfig;
use dyad_algorithms::baselines::pa_v2::PaV2Config;
use dyad_algorithms::baselines::tensor_power::TensorPowerConfig;
use dyad_algorithms::funcish::classify::CategoryClassifier;
use dyad_algorithms::funcish::similarity::{
    BowCosineConfig, CoarseCorrelationConfig, FlatSimConfig, GeneSimilarity, GoSimConfig,
};
use dyad_algorithms::givens::{
    GivensSpcaConfig, GivensTensorConfig, SparsePca, StreamingGivensSpcaConfig, TensorDecomposer,
};
use dyad_algorithms::loreta::{LoretaConfig, LoretaLabelsConfig, LoretaPsdConfig};
use dyad_algorithms::oasis::{DissimOasisConfig, OasisConfig, OasisParallelConfig};
use dyad_algorithms::tensor_rank::{
    DeepRankConfig, KernelRankConfig, LowRankKrConfig, PairRanker, RankSvmConfig, SsrConfig,
    TransductiveConfig,
};
use dyad_algorithms::{Checked, LabelRanker, ParamError, Ranker};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::any::Any;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/fingerprints.rs"));
}
pub use generated::SOURCE_FINGERPRINTS;

/// A solver built from spec parameters: its family's trait object, its canonical parameters
/// (defaults filled in) and whether it trains in steps.
pub struct BuiltSolver {
    pub canonical: serde_json::Value,
    pub iterative: bool,
    solver: Box<dyn Any + Send + Sync>,
}

impl BuiltSolver {
    /// Wrap a family's trait object (e.g. `Box<dyn Ranker>`).
    pub fn new<F: ?Sized + Send + Sync + 'static>(
        solver: Box<F>,
        canonical: serde_json::Value,
        iterative: bool,
    ) -> Self {
        Self {
            canonical,
            iterative,
            solver: Box::new(solver),
        }
    }

    /// The solver as a member of family `F` (e.g. `dyn Ranker`), if it is one.
    pub fn family<F: ?Sized + 'static>(&self) -> Option<&F> {
        self.solver.downcast_ref::<Box<F>>().map(|b| &**b)
    }
}

/// A solver the specs can name.
pub struct SolverEntry {
    pub name: &'static str,
    /// Default legend label.
    pub label: &'static str,
    pub description: &'static str,
    /// The learner family (what it trains on, what it reports); a task runs one family.
    pub family: &'static str,
    /// Bump when the solver's results change for the same parameters: exactly its cells
    /// recompute.
    pub version: u32,
    /// Source files (paths under `crates/`; a trailing `/` takes a whole directory) kept as
    /// provenance: the report warns when they changed since a cell ran.
    pub sources: &'static [&'static str],
    pub build: fn(toml::Value) -> Result<BuiltSolver, ParamError>,
}

/// A family member from spec parameters: typed (unknown parameters are errors, naming
/// them), checked ([`Checked`]), kept in canonical form for hashing, and boxed as the
/// family's trait object `F`.
fn family<C, F>(
    v: toml::Value,
    iterative: impl Fn(&C) -> bool,
    boxed: impl FnOnce(C) -> Box<F>,
) -> Result<BuiltSolver, ParamError>
where
    C: Checked + DeserializeOwned + Serialize,
    F: ?Sized + Send + Sync + 'static,
{
    let config: C = typed(v)?;
    config.check()?;
    let canonical =
        serde_json::to_value(&config).map_err(|e| ParamError::new("", e.to_string()))?;
    let iterative = iterative(&config);
    Ok(BuiltSolver::new(boxed(config), canonical, iterative))
}

/// The family of [`Ranker`]s.
pub const RANKER: &str = "ranker";

/// Build a [`Ranker`] from spec parameters ([`family`]).
pub fn ranker<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: Ranker + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn Ranker>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`LabelRanker`]s.
pub const LABEL_RANKER: &str = "label-ranker";

/// Build a [`LabelRanker`] from spec parameters (as [`ranker`]).
pub fn label_ranker<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: LabelRanker + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn LabelRanker>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`SparsePca`] learners (Givens spec §3, §5.1).
pub const SPARSE_PCA: &str = "sparse-pca";

/// Build a [`SparsePca`] learner from spec parameters (as [`ranker`]).
pub fn sparse_pca<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: SparsePca + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn SparsePca>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`TensorDecomposer`]s (Givens spec §4, §5.2).
pub const TENSOR_DECOMPOSITION: &str = "tensor-decomposer";

/// Build a [`TensorDecomposer`] from spec parameters (as [`ranker`]).
pub fn tensor_decomposer<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: TensorDecomposer + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn TensorDecomposer>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`PairRanker`]s (tensor-ranking spec §3: scores of points from labelled
/// pairs).
pub const PAIR_RANKER: &str = "pair-ranker";

/// Build a [`PairRanker`] from spec parameters (as [`ranker`]).
pub fn pair_ranker<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: PairRanker + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn PairRanker>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`CategoryClassifier`]s (FuncISH §2.6: one classifier per GO category).
pub const ISH_CLASSIFIER: &str = "ish-classifier";

/// Build a [`CategoryClassifier`] from spec parameters (as [`ranker`]).
pub fn ish_classifier<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: CategoryClassifier + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn CategoryClassifier>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The family of [`GeneSimilarity`] measures (FuncISH §2.7–2.9, Fig. 4).
pub const GENE_SIMILARITY: &str = "gene-similarity";

/// Build a [`GeneSimilarity`] from spec parameters (never iterative).
pub fn gene_similarity<C>(v: toml::Value) -> Result<BuiltSolver, ParamError>
where
    C: GeneSimilarity + Checked + DeserializeOwned + Serialize + 'static,
{
    family::<C, dyn GeneSimilarity>(v, |_| false, |c| Box::new(c))
}

/// Deserialize a configuration; a bad key or value is a [`ParamError`] naming its path.
pub fn typed<C: DeserializeOwned>(v: toml::Value) -> Result<C, ParamError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let inner = inner.trim().to_string();
        // The path ends at the offending key (an unknown one included); at the root, an
        // unknown field is named by serde's message.
        let param = match (path.as_str(), inner.strip_prefix("unknown field `")) {
            (".", Some(rest)) => rest.split('`').next().unwrap_or_default().to_string(),
            (".", None) => String::new(),
            _ => path,
        };
        ParamError::new(param, inner)
    })
}

/// Core files every solver's training loop runs through.
const LOOP: [&str; 3] = [
    "core/src/observe.rs",
    "core/src/model.rs",
    "core/src/sparse.rs",
];

pub static SOLVERS: &[SolverEntry] = &[
    SolverEntry {
        name: "oasis",
        label: "OASIS",
        description: "OASIS, PA-I on sparse triplets, W0 = I, with its symmetric and PSD variants (Chechik et al. 2010)",
        family: RANKER,
        // 2: the density-chosen row kernels (oasis/kernel.rs) sum in another order.
        version: 2,
        sources: &[
            "algorithms/src/oasis/mod.rs",
            "algorithms/src/oasis/model.rs",
            "algorithms/src/oasis/kernel.rs",
            "algorithms/src/simd.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<OasisConfig>,
    },
    SolverEntry {
        name: "dissim-oasis",
        label: "DISSIM-OASIS",
        description: "OASIS on the symmetric score -(p-q)^T W (p-q) (spec §4.1)",
        family: RANKER,
        // 2: the density-chosen row kernels (oasis/kernel.rs) sum in another order.
        version: 2,
        sources: &[
            "algorithms/src/oasis/dissim.rs",
            "algorithms/src/oasis/mod.rs",
            "algorithms/src/oasis/model.rs",
            "algorithms/src/oasis/kernel.rs",
            "algorithms/src/simd.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<DissimOasisConfig>,
    },
    SolverEntry {
        name: "oasis-parallel",
        label: "OASIS (averaged rankers)",
        description: "uniform average of independently trained OASIS rankers (spec §4.3)",
        family: RANKER,
        // 2: the density-chosen row kernels (oasis/kernel.rs) sum in another order.
        version: 2,
        sources: &[
            "algorithms/src/oasis/parallel.rs",
            "algorithms/src/oasis/mod.rs",
            "algorithms/src/oasis/model.rs",
            "algorithms/src/oasis/kernel.rs",
            "algorithms/src/simd.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<OasisParallelConfig>,
    },
    SolverEntry {
        name: "mcml",
        label: "MCML",
        description: "Metric learning by collapsing classes (Globerson & Roweis 2006), projected gradient",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/mcml.rs",
            "algorithms/src/metric.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<McmlConfig>,
    },
    SolverEntry {
        name: "lego",
        label: "LEGO",
        description: "LogDet exact gradient online metric learning (Jain et al. 2008), relative-distance targets",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/lego.rs",
            "algorithms/src/metric.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<LegoConfig>,
    },
    SolverEntry {
        name: "lmnn",
        label: "LMNN",
        description: "Large-margin nearest neighbour metric (Weinberger & Saul), projected subgradient; `active_set = true` is fast-LMNN",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/lmnn.rs",
            "algorithms/src/metric.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<LmnnConfig>,
    },
    SolverEntry {
        name: "euclidean",
        label: "Euclidean",
        description: "Euclidean distance in feature space (no learning)",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/euclidean.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<EuclideanConfig>,
    },
    // ---- LORETA (Shalit, Weinshall & Chechik 2010/2012) and its baselines (spec §4) ----
    SolverEntry {
        name: "loreta",
        label: "LORETA",
        description: "LORETA-1: Riemannian SGD on rank-k matrices, W = A B^T, triplet ranking hinge (spec §2.3, §3.1); `memory` fixes features x rank",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/loreta/triplet.rs",
            "algorithms/src/loreta/loreta1.rs",
            "algorithms/src/loreta/pinv.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/losses.rs",
            "algorithms/src/loreta/model.rs",
            "algorithms/src/loreta/mod.rs",
            "algorithms/src/simd.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<LoretaConfig>,
    },
    SolverEntry {
        name: "loreta-psd",
        label: "LORETA-PSD",
        description: "LORETA-1-PSD: W = Y Y^T of rank k (spec §2.5, [JMLR] Algorithm 5)",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/loreta/triplet.rs",
            "algorithms/src/loreta/psd.rs",
            "algorithms/src/loreta/pinv.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/losses.rs",
            "algorithms/src/loreta/model.rs",
            "algorithms/src/loreta/mod.rs",
            "algorithms/src/simd.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<LoretaPsdConfig>,
    },
    SolverEntry {
        name: "iterative-pa",
        label: "iterative PA",
        description: "PA-I alternating over the factors A and B (spec §4 B3, sequential)",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/iterative_pa.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/losses.rs",
            "algorithms/src/loreta/model.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<IterativePaConfig>,
    },
    SolverEntry {
        name: "pa-v2",
        label: "PA v2",
        description: "naive PA on the factors: the GD directions with the unfactored PA-I step (spec §4 B4, [NIPS] only)",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/pa_v2.rs",
            "algorithms/src/baselines/factored_gd.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/model.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<PaV2Config>,
    },
    SolverEntry {
        name: "naive-psd-gd",
        label: "naive PSD GD",
        description: "gradient descent on the factor of W = A A^T (spec §4 B2, [JMLR] only)",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/naive_psd_gd.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/model.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<NaivePsdGdConfig>,
    },
    SolverEntry {
        name: "factored-gd",
        label: "naive factored GD",
        description: "simultaneous gradient steps on A and B of W = A B^T (spec §4 B1; the papers found it unstable and did not plot it)",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/factored_gd.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/losses.rs",
            "algorithms/src/loreta/model.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<FactoredGdConfig>,
    },
    SolverEntry {
        name: "loreta-labels",
        label: "LORETA",
        description: "LORETA-1 on the multilabel ranking hinge: W (labels x features) of rank k scores every label of an example (spec §3.2, ImageNet)",
        family: LABEL_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/loreta/labels.rs",
            "algorithms/src/loreta/loreta1.rs",
            "algorithms/src/loreta/pinv.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/losses.rs",
            "algorithms/src/loreta/model.rs",
            "algorithms/src/loreta/mod.rs",
            "algorithms/src/simd.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
            LOOP[1],
        ],
        build: label_ranker::<LoretaLabelsConfig>,
    },
    SolverEntry {
        name: "iterative-pa-labels",
        label: "iterative PA",
        description: "iterative PA on the multilabel ranking hinge (spec §4 B3, ImageNet)",
        family: LABEL_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/iterative_pa.rs",
            "algorithms/src/loreta/labels.rs",
            "algorithms/src/loreta/init.rs",
            "algorithms/src/loreta/losses.rs",
            "algorithms/src/loreta/model.rs",
            LOOP[0],
            LOOP[1],
        ],
        build: label_ranker::<IterativePaConfig>,
    },
    SolverEntry {
        name: "matrix-perceptron",
        label: "Matrix Perceptron",
        description: "full-rank conservative subgradient descent on W (labels x features), W0 = 0 (spec §4 B8)",
        family: LABEL_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/matrix_perceptron.rs",
            "algorithms/src/loreta/labels.rs",
            "algorithms/src/loreta/losses.rs",
            LOOP[0],
            LOOP[1],
        ],
        build: label_ranker::<MatrixPerceptronConfig>,
    },
    SolverEntry {
        name: "group-perceptron",
        label: "Group MC Perceptron",
        description: "(2,1)-norm online mirror descent, groups = feature columns (spec §4 B9, [EXT] reconstruction)",
        family: LABEL_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/group_perceptron.rs",
            "algorithms/src/loreta/labels.rs",
            "algorithms/src/loreta/losses.rs",
            LOOP[0],
            LOOP[1],
        ],
        build: label_ranker::<GroupPerceptronConfig>,
    },
    // ---- AROMA (Crammer & Chechik 2012) and its baselines (spec §3) ----
    SolverEntry {
        name: "d-aroma",
        label: "d-AROMA",
        description: "diagonal AROMA (Algorithm 1): AROW on vec(q p^T) with one variance per entry of W, W0 = 0",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/aroma/",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<DiagonalAromaConfig>,
    },
    SolverEntry {
        name: "f-aroma",
        label: "f-AROMA",
        description: "factored AROMA (Algorithm 2): covariance Omega (x) Lambda, W0 = 0, Omega0 = Lambda0 = I",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/aroma/",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<FactoredAromaConfig>,
    },
    SolverEntry {
        name: "itml",
        label: "ITML",
        description: "information-theoretic metric learning (Davis et al. 2007), Bregman projections cycling over label pairs; metric-learn's defaults",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/itml.rs",
            "algorithms/src/metric.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<ItmlConfig>,
    },
    SolverEntry {
        name: "hier",
        label: "HIER",
        description: "hierarchical semantic indexing (Deng et al. 2011): one-vs-all logistic class probabilities compared through a class-tree similarity",
        family: RANKER,
        version: 1,
        sources: &[
            "algorithms/src/baselines/hier.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: ranker::<HierConfig>,
    },
    // ---- Givens coordinate descent (Shalit & Chechik 2014) and GPower (spec §3, §5.1) ----
    SolverEntry {
        name: "givens-spca",
        label: "Givens",
        description: "Algorithm 2: Givens coordinate maximisation of Eq. 6 over U in O_n (m = n), Brent angle search, solveForZ (spec §3.2)",
        family: SPARSE_PCA,
        // 2: also counts its FLOPs over the rows that can pass the threshold
        // (`flops_active_rows`, issue 42 §4); the all-rows count is unchanged.
        version: 2,
        sources: &[
            "algorithms/src/givens/sparse_pca.rs",
            "algorithms/src/givens/coordinate.rs",
            "algorithms/src/givens/rotation.rs",
            "algorithms/src/givens/angle.rs",
            "algorithms/src/givens/flops.rs",
            "algorithms/src/givens/metrics.rs",
            "algorithms/src/givens/mod.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
        ],
        build: sparse_pca::<GivensSpcaConfig>,
    },
    SolverEntry {
        name: "streaming-givens-spca",
        label: "streaming Givens",
        description: "Algorithm 5: streaming Givens sparse PCA with m < n components, a d x m window, the weakest column replaced by each new sample (spec §3.3)",
        family: SPARSE_PCA,
        // 2: also counts its FLOPs over the rows that can pass the threshold
        // (`flops_active_rows`, issue 42 §4); the all-rows count is unchanged.
        version: 2,
        sources: &[
            "algorithms/src/givens/streaming_spca.rs",
            "algorithms/src/givens/sparse_pca.rs",
            "algorithms/src/givens/rotation.rs",
            "algorithms/src/givens/angle.rs",
            "algorithms/src/givens/flops.rs",
            "algorithms/src/givens/metrics.rs",
            "algorithms/src/givens/mod.rs",
            LOOP[0],
        ],
        build: sparse_pca::<StreamingGivensSpcaConfig>,
    },
    SolverEntry {
        name: "gpower",
        label: "GPower",
        description: "generalised power method (Journee et al. 2010): `penalty` l1 / l0, `mode` greedy (single-unit + deflation) / block, `early_stop` fraction (spec §5.1)",
        family: SPARSE_PCA,
        // 2: block GPower's gradient A^T T is charged over every row (2dnm), not over the
        // non-zeros of T, the one FLOP rule of every method; and a second count over the rows
        // that can pass the threshold (`flops_active_rows`) (issue 42 §4).
        version: 2,
        sources: &[
            "algorithms/src/baselines/gpower.rs",
            "algorithms/src/givens/sparse_pca.rs",
            "algorithms/src/givens/sampling.rs",
            "algorithms/src/givens/flops.rs",
            "algorithms/src/givens/metrics.rs",
            "algorithms/src/givens/mod.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
        ],
        build: sparse_pca::<GPowerConfig>,
    },
    // ---- Orthogonal tensor decomposition (Givens spec §4, §5.2) ----
    SolverEntry {
        name: "givens-tensor",
        label: "Givens",
        description: "Algorithm 3: Givens coordinate maximisation of sum_k T(u_k, u_k, u_k) over O_K with the closed-form angle; `lazy = true` is Algorithm 6 (entries from the samples) (spec §4.2-4.4)",
        family: TENSOR_DECOMPOSITION,
        version: 1,
        sources: &[
            "algorithms/src/givens/tensor.rs",
            "algorithms/src/givens/lazy_tensor.rs",
            "algorithms/src/givens/coordinate.rs",
            "algorithms/src/givens/rotation.rs",
            "algorithms/src/givens/angle.rs",
            "algorithms/src/givens/flops.rs",
            "algorithms/src/givens/mod.rs",
            LOOP[0],
        ],
        build: tensor_decomposer::<GivensTensorConfig>,
    },
    SolverEntry {
        name: "tensor-power",
        label: "TPM",
        description: "robust tensor power method (Anandkumar et al. 2012, Algorithm 1): `restarts` L, `iterations` N per restart and polish, deflation; one step = one component (spec §5.2)",
        family: TENSOR_DECOMPOSITION,
        version: 1,
        sources: &[
            "algorithms/src/baselines/tensor_power.rs",
            "algorithms/src/givens/tensor.rs",
            "algorithms/src/givens/flops.rs",
            "algorithms/src/givens/mod.rs",
            LOOP[0],
        ],
        build: tensor_decomposer::<TensorPowerConfig>,
    },
    // ---- Tensor-regularised ranking (Kim, Park & Tompkin; spec manifold-tensor.md §3) ----
    SolverEntry {
        name: "rank-svm",
        label: "RS",
        description: "RankSVM on inequality and equality pairs, f(x) = w^T x, squared hinge + lambda ||w||^2 (Eqs. 12-14), finite Newton",
        family: PAIR_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/tensor_rank/rank_svm.rs",
            "algorithms/src/tensor_rank/linear.rs",
            "algorithms/src/tensor_rank/solver.rs",
            "algorithms/src/tensor_rank/model.rs",
            "algorithms/src/tensor_rank/mod.rs",
            LOOP[0],
        ],
        build: pair_ranker::<RankSvmConfig>,
    },
    SolverEntry {
        name: "ssr",
        label: "SSR",
        description: "semi-supervised RankSVM: lambda f^T L f on the kNN graph replaces ||w||^2 (Eq. 15), finite Newton",
        family: PAIR_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/tensor_rank/ssr.rs",
            "algorithms/src/tensor_rank/linear.rs",
            "algorithms/src/tensor_rank/graph.rs",
            "algorithms/src/tensor_rank/solver.rs",
            "algorithms/src/tensor_rank/model.rs",
            "algorithms/src/tensor_rank/mod.rs",
            LOOP[0],
        ],
        build: pair_ranker::<SsrConfig>,
    },
    SolverEntry {
        name: "tr",
        label: "TR",
        description: "transductive ranking: scores f in R^n with lambda f^T L f (§3.4), finite Newton with PCG",
        family: PAIR_RANKER,
        // 2: steps that raise E beyond rounding are undone, iterates kept off each group's
        // constants (tensor_rank/solver.rs, transductive.rs; tests/kr_consistency.rs).
        version: 2,
        sources: &[
            "algorithms/src/tensor_rank/transductive.rs",
            "algorithms/src/tensor_rank/graph.rs",
            "algorithms/src/tensor_rank/solver.rs",
            "algorithms/src/tensor_rank/model.rs",
            "algorithms/src/tensor_rank/mod.rs",
            LOOP[0],
        ],
        build: pair_ranker::<TransductiveConfig>,
    },
    SolverEntry {
        name: "kr",
        label: "KR (full)",
        description: "full kernel ranking: antisymmetric n x n K with lambda tr(K^T L K) (Eqs. 17-18), read-out Eq. 25; small n only (max_n)",
        family: PAIR_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/tensor_rank/kernel_full.rs",
            "algorithms/src/tensor_rank/readout.rs",
            "algorithms/src/tensor_rank/graph.rs",
            "algorithms/src/tensor_rank/solver.rs",
            "algorithms/src/tensor_rank/model.rs",
            "algorithms/src/tensor_rank/mod.rs",
            LOOP[0],
        ],
        build: pair_ranker::<KernelRankConfig>,
    },
    SolverEntry {
        name: "lowrank-kr",
        label: "KR",
        description: "low-rank KR, the paper's method: K = B Q B^T, p = 50, B0 = ones, gradient descent with Armijo steps (Eqs. 21-25, Algorithm 1)",
        family: PAIR_RANKER,
        version: 1,
        sources: &[
            "algorithms/src/tensor_rank/low_rank.rs",
            "algorithms/src/tensor_rank/readout.rs",
            "algorithms/src/tensor_rank/graph.rs",
            "algorithms/src/tensor_rank/model.rs",
            "algorithms/src/tensor_rank/mod.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
        ],
        build: pair_ranker::<LowRankKrConfig>,
    },
    SolverEntry {
        name: "dr",
        label: "DR",
        description: "deep ranking baseline: 6 hidden ReLU layers (candle), pair losses of Eq. 14, SGD with momentum, best of 5 restarts on validation pairs (§3.10)",
        family: PAIR_RANKER,
        // 2: the network trains in f32 (was f64): every DR cell is computed again.
        version: 2,
        sources: &[
            "algorithms/src/tensor_rank/deep.rs",
            "algorithms/src/tensor_rank/model.rs",
            "algorithms/src/tensor_rank/mod.rs",
            LOOP[0],
        ],
        build: pair_ranker::<DeepRankConfig>,
    },
    // Python peers (README "Python peers"): their scripts' sha256 is in their canonical
    // parameters, so editing a script recomputes its cells without a version bump.
    SolverEntry {
        name: "py:oasis-numpy",
        label: "OASIS (NumPy peer)",
        description: "Python peer: plain NumPy/SciPy OASIS replaying dyad's triplets (peers/oasis_numpy.py)",
        family: RANKER,
        version: 1,
        sources: &[
            "harness/src/peers.rs",
            "harness/src/peers/",
            "algorithms/src/oasis/model.rs",
            "core/src/sampling.rs",
        ],
        build: peer::<OasisNumpyParams>,
    },
    SolverEntry {
        name: "py:lmnn-metric-learn",
        label: "LMNN (metric-learn)",
        description: "Python peer: metric-learn's LMNN (peers/lmnn_metric_learn.py)",
        family: RANKER,
        version: 1,
        sources: &[
            "harness/src/peers.rs",
            "harness/src/peers/",
            "algorithms/src/metric.rs",
        ],
        build: peer::<LmnnMetricLearnParams>,
    },
    SolverEntry {
        name: "py:itml-metric-learn",
        label: "ITML (metric-learn)",
        description: "Python peer: metric-learn's ITML, pairs drawn from the labels (peers/itml_metric_learn.py)",
        family: RANKER,
        version: 1,
        sources: &[
            "harness/src/peers.rs",
            "harness/src/peers/",
            "algorithms/src/metric.rs",
        ],
        build: peer::<ItmlMetricLearnParams>,
    },
    SolverEntry {
        name: "py:loreta-numpy",
        label: "LORETA-1 (NumPy peer)",
        description: "Python peer: plain NumPy LORETA-1 (Algorithms 4 and 7) replaying dyad's triplets, factors back (peers/loreta_numpy.py)",
        family: RANKER,
        version: 1,
        sources: &[
            "harness/src/peers.rs",
            "harness/src/peers/",
            "algorithms/src/loreta/model.rs",
            "core/src/sampling.rs",
        ],
        build: peer::<crate::peers::LoretaNumpyParams>,
    },
    SolverEntry {
        name: "py:loreta-pymanopt",
        label: "Riemannian SGD (Pymanopt peer)",
        description: "Python peer: online Riemannian SGD on Pymanopt's FixedRankEmbedded (its projection and retraction) replaying dyad's triplets (peers/loreta_pymanopt.py)",
        family: RANKER,
        version: 1,
        sources: &[
            "harness/src/peers.rs",
            "harness/src/peers/",
            "algorithms/src/loreta/model.rs",
            "core/src/sampling.rs",
        ],
        build: peer::<crate::peers::LoretaPymanoptParams>,
    },
    SolverEntry {
        name: "py:sparsepca-sklearn",
        label: "SparsePCA (scikit-learn)",
        description: "Python peer: scikit-learn's SparsePCA (dictionary learning, l1 on the components) on the samples x genes matrix; its components are the loadings (peers/sparsepca_sklearn.py)",
        family: SPARSE_PCA,
        version: 1,
        sources: &["harness/src/peers.rs", "harness/src/peers/"],
        build: crate::peers::sparse_pca_peer::<crate::peers::SparsePcaSklearnParams>,
    },
    SolverEntry {
        name: "py:tensor-power-tensorly",
        label: "TPM (TensorLy)",
        description: "Python peer: TensorLy's robust symmetric tensor power iteration with deflation (symmetric_parafac_power_iteration) on the same whitened moment tensor (peers/tensor_power_tensorly.py)",
        family: TENSOR_DECOMPOSITION,
        version: 1,
        sources: &["harness/src/peers.rs", "harness/src/peers/"],
        build: crate::peers::tensor_peer::<crate::peers::TensorPowerTensorlyParams>,
    },
    // ---- FuncISH (Liscovitch, Shalit & Chechik 2013; funcish.md) ----
    SolverEntry {
        name: "funcish-lr",
        label: "FuncISH (L2 LR)",
        description: "one L2-regularised logistic regression per GO category (LIBLINEAR -s 0 objective, trust-region Newton), C chosen by nested 5 x 5 cross-validation over images; out-of-fold probabilities, held-out AUC, permutation p (spec §2.6); `words` and `pyramid` select the supplement's visual variants (§2.12)",
        family: ISH_CLASSIFIER,
        version: 1,
        sources: &["algorithms/src/funcish/classify/", "core/src/auc.rs"],
        build: ish_classifier::<crate::tasks::funcish::FuncIshLr>,
    },
    SolverEntry {
        name: "go-sim",
        label: "FuncISH GO-sim",
        description: "Schlicker's functional similarity on binarised activations (P >= 0.5) over the nervous-system categories, with simRel from the ontology's information content (spec §2.8)",
        family: GENE_SIMILARITY,
        version: 1,
        sources: &[
            "algorithms/src/funcish/similarity.rs",
            "algorithms/src/funcish/classify/",
            "datasets/src/go/",
        ],
        build: gene_similarity::<GoSimConfig>,
    },
    SolverEntry {
        name: "flat-sim",
        label: "FuncISH flat-sim",
        description: "cosine of the L2-normalised activation vectors over every category (spec §2.7)",
        family: GENE_SIMILARITY,
        version: 1,
        sources: &[
            "algorithms/src/funcish/similarity.rs",
            "algorithms/src/funcish/classify/",
        ],
        build: gene_similarity::<FlatSimConfig>,
    },
    SolverEntry {
        name: "bow-cosine",
        label: "SIFT BoW cosine",
        description: "cosine of the raw bag-of-visual-words counts (spec §2.9 baseline 1)",
        family: GENE_SIMILARITY,
        version: 1,
        sources: &[
            "algorithms/src/funcish/similarity.rs",
            "datasets/src/pipelines/bow.rs",
        ],
        build: gene_similarity::<BowCosineConfig>,
    },
    SolverEntry {
        name: "coarse-correlation",
        label: "NeuroBlast stand-in",
        description: "Pearson correlation of the images averaged on a coarse co-registered grid: a location-dependent global correlation standing in for ABA's NeuroBlast (spec §2.9 baseline 2, §8 item 4)",
        family: GENE_SIMILARITY,
        version: 1,
        sources: &[
            "algorithms/src/funcish/similarity.rs",
            "datasets/src/ish/mod.rs",
        ],
        build: gene_similarity::<CoarseCorrelationConfig>,
    },
    SolverEntry {
        name: "centroid",
        label: "class centroid",
        description: "scores each label by the cosine of the example and the label's training centroid (nearest class mean)",
        family: LABEL_RANKER,
        version: 1,
        sources: &["algorithms/src/baselines/centroid.rs"],
        build: label_ranker::<CentroidConfig>,
    },
];

pub fn solver(name: &str) -> Option<&'static SolverEntry> {
    SOLVERS.iter().find(|s| s.name == name)
}

/// Fingerprint of a set of source prefixes: sha256 over the matching files' paths and token
/// hashes. Panics if a prefix matches no file (a registry typo must not silently drop code
/// from the key); the registry test checks every entry.
pub fn fingerprint(prefixes: &[&str]) -> String {
    fingerprint_in(SOURCE_FINGERPRINTS, prefixes)
}

pub fn fingerprint_in(table: &[(&str, &str)], prefixes: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in prefixes {
        let mut matched = false;
        for (path, hash) in table {
            let hit = if p.ends_with('/') {
                path.starts_with(p)
            } else {
                path == p
            };
            if hit {
                matched = true;
                h.update(path.as_bytes());
                h.update([0]);
                h.update(hash.as_bytes());
                h.update([0]);
            }
        }
        assert!(
            matched,
            "registry source `{p}` matches no file under crates/"
        );
    }
    dyad_datasets::identity::hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_source_exists_and_fingerprints_differ() {
        let mut seen = std::collections::BTreeSet::new();
        for s in SOLVERS {
            // The peers share their Rust code; their scripts' hashes are in their keys.
            if s.name.starts_with("py:") && s.name != "py:oasis-numpy" {
                fingerprint(s.sources);
                continue;
            }
            assert!(
                seen.insert(fingerprint(s.sources)),
                "{} shares a fingerprint",
                s.name
            );
        }
        for d in crate::data::PROVIDERS {
            fingerprint(d.sources());
        }
    }

    #[test]
    fn a_file_edit_changes_only_the_solvers_that_use_it() {
        let table = [("a/x.rs", "1"), ("a/y.rs", "2"), ("b/z.rs", "3")];
        let edited = [("a/x.rs", "1"), ("a/y.rs", "9"), ("b/z.rs", "3")];
        assert_ne!(
            fingerprint_in(&table, &["a/"]),
            fingerprint_in(&edited, &["a/"])
        );
        assert_eq!(
            fingerprint_in(&table, &["b/z.rs"]),
            fingerprint_in(&edited, &["b/z.rs"])
        );
    }

    #[test]
    fn unknown_parameters_are_rejected_and_defaults_are_canonical() {
        let v: toml::Value = toml::from_str("c = 0.5").unwrap();
        let b = (solver("oasis").unwrap().build)(v).unwrap();
        assert_eq!(
            b.canonical,
            serde_json::json!({"c": 0.5, "symmetric": "none", "psd": "none"})
        );
        assert!(b.iterative && b.family::<dyn Ranker>().is_some());
        let empty =
            (solver("oasis").unwrap().build)(toml::Value::Table(Default::default())).unwrap();
        assert_eq!(
            empty.canonical,
            serde_json::json!({"c": 0.1, "symmetric": "none", "psd": "none"})
        );
        let v: toml::Value =
            toml::from_str("psd = { every = 5000 }\nsymmetric = \"online\"").unwrap();
        let b = (solver("oasis").unwrap().build)(v).unwrap();
        assert_eq!(b.canonical["psd"], serde_json::json!({"every": 5000}));
        let v: toml::Value = toml::from_str("C = 0.5").unwrap();
        let e = (solver("oasis").unwrap().build)(v).err().unwrap();
        assert_eq!(e.param, "C");
        assert!(e.message.contains("unknown field `C`"), "{e}");
        // Wrong types and values out of their domain name the parameter.
        let v: toml::Value = toml::from_str("c = \"big\"").unwrap();
        assert_eq!(
            (solver("oasis").unwrap().build)(v).err().unwrap().param,
            "c"
        );
        let v: toml::Value = toml::from_str("psd = { every = \"x\" }").unwrap();
        let e = (solver("oasis").unwrap().build)(v).err().unwrap();
        assert!(e.param.starts_with("psd"), "{e:?}");
        for bad in ["c = 0.0", "c = -0.1", "c = nan"] {
            let v: toml::Value = toml::from_str(bad).unwrap();
            let e = (solver("oasis").unwrap().build)(v).err().unwrap();
            assert_eq!(e.param, "c", "{bad}: {e}");
        }
    }
}
