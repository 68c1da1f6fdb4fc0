//! The registry joining specs to code: solver names to learners, data-set names to
//! providers, task names to their implementations, each with the source files whose
//! fingerprint enters the cache key. Adding a baseline is one file in `dyad-algorithms` plus
//! one line in [`SOLVERS`].

use dyad_algorithms::Ranker;
use dyad_algorithms::baselines::euclidean::EuclideanConfig;
use dyad_algorithms::baselines::lego::LegoConfig;
use dyad_algorithms::baselines::lmnn::LmnnConfig;
use dyad_algorithms::baselines::mcml::McmlConfig;
use dyad_algorithms::oasis::{DissimOasisConfig, OasisConfig, OasisParallelConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

mod generated {
    include!(concat!(env!("OUT_DIR"), "/fingerprints.rs"));
}
pub use generated::SOURCE_FINGERPRINTS;

/// A learner built from spec parameters, with its canonical parameters (defaults filled in).
pub struct BuiltSolver {
    pub learner: Box<dyn Ranker>,
    pub canonical: serde_json::Value,
}

/// A solver the specs can name.
pub struct SolverEntry {
    pub name: &'static str,
    /// Default legend label.
    pub label: &'static str,
    pub description: &'static str,
    /// Source files (paths under `crates/`; a trailing `/` takes a whole directory) whose code
    /// determines this solver's results.
    pub sources: &'static [&'static str],
    pub build: fn(toml::Value) -> Result<BuiltSolver, String>,
}

/// Deserialize a solver's typed configuration (unknown parameters are errors) and keep its
/// canonical form for hashing.
fn build<C: Ranker + DeserializeOwned + Serialize + 'static>(
    v: toml::Value,
) -> Result<BuiltSolver, String> {
    let config = C::deserialize(v).map_err(|e| e.to_string().trim().to_string())?;
    let canonical = serde_json::to_value(&config).map_err(|e| e.to_string())?;
    Ok(BuiltSolver {
        learner: Box::new(config),
        canonical,
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
        sources: &[
            "algorithms/src/oasis/mod.rs",
            "algorithms/src/oasis/model.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<OasisConfig>,
    },
    SolverEntry {
        name: "dissim-oasis",
        label: "DISSIM-OASIS",
        description: "OASIS on the symmetric score -(p-q)^T W (p-q) (spec §4.1)",
        sources: &[
            "algorithms/src/oasis/dissim.rs",
            "algorithms/src/oasis/mod.rs",
            "algorithms/src/oasis/model.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<DissimOasisConfig>,
    },
    SolverEntry {
        name: "oasis-parallel",
        label: "OASIS (averaged rankers)",
        description: "uniform average of independently trained OASIS rankers (spec §4.3)",
        sources: &[
            "algorithms/src/oasis/parallel.rs",
            "algorithms/src/oasis/mod.rs",
            "algorithms/src/oasis/model.rs",
            "algorithms/src/linalg.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<OasisParallelConfig>,
    },
    SolverEntry {
        name: "mcml",
        label: "MCML",
        description: "Metric learning by collapsing classes (Globerson & Roweis 2006), projected gradient",
        sources: &[
            "algorithms/src/baselines/mcml.rs",
            "algorithms/src/metric.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<McmlConfig>,
    },
    SolverEntry {
        name: "lego",
        label: "LEGO",
        description: "LogDet exact gradient online metric learning (Jain et al. 2008), relative-distance targets",
        sources: &[
            "algorithms/src/baselines/lego.rs",
            "algorithms/src/metric.rs",
            "core/src/sampling.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<LegoConfig>,
    },
    SolverEntry {
        name: "lmnn",
        label: "LMNN",
        description: "Large-margin nearest neighbour metric (Weinberger & Saul), projected subgradient; `active_set = true` is fast-LMNN",
        sources: &[
            "algorithms/src/baselines/lmnn.rs",
            "algorithms/src/metric.rs",
            "algorithms/src/linalg.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<LmnnConfig>,
    },
    SolverEntry {
        name: "euclidean",
        label: "Euclidean",
        description: "Euclidean distance in feature space (no learning)",
        sources: &[
            "algorithms/src/baselines/euclidean.rs",
            LOOP[0],
            LOOP[1],
            LOOP[2],
        ],
        build: build::<EuclideanConfig>,
    },
];

pub fn solver(name: &str) -> Option<&'static SolverEntry> {
    SOLVERS.iter().find(|s| s.name == name)
}

/// A task: how a cell turns data and a learner into records.
pub struct TaskEntry {
    pub name: &'static str,
    pub sources: &'static [&'static str],
}

pub static RANKING_TASK: TaskEntry = TaskEntry {
    name: "label-ranking",
    sources: &[
        "harness/src/tasks/ranking.rs",
        "core/src/metrics.rs",
        "core/src/data.rs",
        "core/src/rng.rs",
    ],
};

/// The simulated human evaluation: the ranking task, then a rater panel on its final model.
pub static HUMAN_TASK: TaskEntry = TaskEntry {
    name: "human-evaluation",
    sources: &[
        "harness/src/tasks/human.rs",
        "harness/src/tasks/ranking.rs",
        "datasets/src/synthetic/raters.rs",
        "core/src/metrics.rs",
        "core/src/data.rs",
        "core/src/rng.rs",
    ],
};

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
            assert!(
                seen.insert(fingerprint(s.sources)),
                "{} shares a fingerprint",
                s.name
            );
        }
        fingerprint(RANKING_TASK.sources);
        fingerprint(HUMAN_TASK.sources);
        for d in crate::data::PROVIDERS {
            fingerprint(d.sources);
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
        assert!(e.contains("unknown field `C`"), "{e}");
    }
}
