//! The registry joining specs to code: solver names to learners, each with its family and a
//! version (part of every cell key: bump it when results change). Each learner crate exports
//! its own list of solvers (`dyad_oasis::SOLVERS`, ...; one line per solver, each file declaring
//! its [`SolverEntry`]); [`SOLVER_LISTS`] composes them, with the harness's own (the Python
//! peers, FuncISH's classifier). Adding a baseline is one file in its family's crate plus one
//! line in that crate's list. Data sets are listed in `dyad_datasets::registry::PROVIDERS`,
//! tasks in [`crate::tasks::TASKS`].
//!
//! The code fingerprint kept beside each cell as provenance is derived from the code: for a
//! solver, from the source of its list's crate and of every path dependency of that crate
//! ([`package_fingerprint`]; `build.rs` reads the dependencies from the manifests); for the
//! harness's own solvers, from their files ([`harness_solver_sources`]) and the harness's
//! dependencies. Nothing else is listed by hand.

use crate::peers::{ItmlMetricLearnParams, LmnnMetricLearnParams, OasisNumpyParams, peer};
pub use dyad_funcish::{GENE_SIMILARITY, ISH_CLASSIFIER};
pub use dyad_givens::{SPARSE_PCA, TENSOR_DECOMPOSITION};
pub use dyad_kernels::solver::{
    BuiltSolver, LABEL_RANKER, RANKER, SolverEntry, Solvers, family, label_ranker, ranker, typed,
};
pub use dyad_kernels::{Checked, LabelRanker, ParamError, Ranker};
pub use dyad_tensor_rank::PAIR_RANKER;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/fingerprints.rs"));
}
pub use generated::{PACKAGE_SOURCES, SOURCE_FINGERPRINTS};

/// The solver lists of the learner crates and the harness's own, in the order `dyad solvers`
/// lists them. A new family crate adds its list here.
pub static SOLVER_LISTS: &[&Solvers] = &[
    &dyad_oasis::SOLVERS,
    &dyad_metric_baselines::SOLVERS,
    &dyad_loreta::SOLVERS,
    &dyad_aroma::SOLVERS,
    &dyad_givens::SOLVERS,
    &dyad_tensor_rank::SOLVERS,
    &dyad_funcish::SOLVERS,
    &HARNESS_SOLVERS,
];

/// Every solver the specs can name (the lists of [`SOLVER_LISTS`], in order).
pub static SOLVERS: LazyLock<Vec<&'static SolverEntry>> =
    LazyLock::new(|| SOLVER_LISTS.iter().flat_map(|l| l.entries.iter()).collect());

/// The solvers whose code lives in the harness: the Python peers (`docs/peers.md`: their
/// scripts' sha256 is in their canonical parameters, so editing a script recomputes its cells
/// without a version bump) and FuncISH's per-category classifier.
pub static HARNESS_SOLVERS: Solvers = Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[
        SolverEntry {
            name: "py:oasis-numpy",
            label: "OASIS (NumPy peer)",
            description: "Python peer: plain NumPy/SciPy OASIS replaying dyad's triplets (peers/oasis_numpy.py)",
            family: RANKER,
            version: 1,
            machine_tolerance: 0.0,
            build: peer::<OasisNumpyParams>,
        },
        SolverEntry {
            name: "py:lmnn-metric-learn",
            label: "LMNN (metric-learn)",
            description: "Python peer: metric-learn's LMNN (peers/lmnn_metric_learn.py)",
            family: RANKER,
            version: 1,
            machine_tolerance: 0.0,
            build: peer::<LmnnMetricLearnParams>,
        },
        SolverEntry {
            name: "py:itml-metric-learn",
            label: "ITML (metric-learn)",
            description: "Python peer: metric-learn's ITML, pairs drawn from the labels (peers/itml_metric_learn.py)",
            family: RANKER,
            version: 1,
            machine_tolerance: 0.0,
            build: peer::<ItmlMetricLearnParams>,
        },
        SolverEntry {
            name: "py:loreta-numpy",
            label: "LORETA-1 (NumPy peer)",
            description: "Python peer: plain NumPy LORETA-1 (Algorithms 4 and 7) replaying dyad's triplets, factors back (peers/loreta_numpy.py)",
            family: RANKER,
            version: 1,
            machine_tolerance: 0.0,
            build: peer::<crate::peers::LoretaNumpyParams>,
        },
        SolverEntry {
            name: "py:loreta-pymanopt",
            label: "Riemannian SGD (Pymanopt peer)",
            description: "Python peer: online Riemannian SGD on Pymanopt's FixedRankEmbedded (its projection and retraction) replaying dyad's triplets (peers/loreta_pymanopt.py)",
            family: RANKER,
            version: 1,
            machine_tolerance: 0.0,
            build: peer::<crate::peers::LoretaPymanoptParams>,
        },
        SolverEntry {
            name: "py:sparsepca-sklearn",
            label: "SparsePCA (scikit-learn)",
            description: "Python peer: scikit-learn's SparsePCA (dictionary learning, l1 on the components) on the samples x genes matrix; its components are the loadings (peers/sparsepca_sklearn.py)",
            family: SPARSE_PCA,
            version: 1,
            machine_tolerance: 0.0,
            build: crate::peers::sparse_pca_peer::<crate::peers::SparsePcaSklearnParams>,
        },
        SolverEntry {
            name: "py:tensor-power-tensorly",
            label: "TPM (TensorLy)",
            description: "Python peer: TensorLy's robust symmetric tensor power iteration with deflation (symmetric_parafac_power_iteration) on the same whitened moment tensor (peers/tensor_power_tensorly.py)",
            family: TENSOR_DECOMPOSITION,
            version: 1,
            machine_tolerance: 0.0,
            build: crate::peers::tensor_peer::<crate::peers::TensorPowerTensorlyParams>,
        },
        SolverEntry {
            name: "funcish-lr",
            label: "FuncISH (L2 LR)",
            description: "one L2-regularised logistic regression per GO category (LIBLINEAR -s 0 objective, trust-region Newton), C chosen by nested 5 x 5 cross-validation over images; out-of-fold probabilities, held-out AUC, permutation p (spec §2.6); `words` and `pyramid` select the supplement's visual variants (§2.12)",
            family: ISH_CLASSIFIER,
            version: 1,
            machine_tolerance: 0.0,
            build: dyad_funcish::ish_classifier_solver::<crate::funcish_lr::FuncIshLr>,
        },
    ],
};

pub fn solver(name: &str) -> Option<&'static SolverEntry> {
    SOLVERS.iter().copied().find(|s| s.name == name)
}

/// The package (crate) whose list holds solver `name`.
pub fn package_of(name: &str) -> Option<&'static str> {
    SOLVER_LISTS
        .iter()
        .find(|l| l.entries.iter().any(|s| s.name == name))
        .map(|l| l.package)
}

/// The source directories of a package: its own `src/` and those of every workspace crate it
/// depends on, transitively (read from the manifests by `build.rs`). Panics for a package
/// outside the workspace.
pub fn package_sources(package: &str) -> &'static [&'static str] {
    PACKAGE_SOURCES
        .iter()
        .find(|(p, _)| *p == package)
        .map(|(_, dirs)| *dirs)
        .unwrap_or_else(|| panic!("package `{package}` is not in the workspace"))
}

/// The code fingerprint of a package: sha256 over the token hashes of every source file of
/// the package and of its path dependencies ([`package_sources`]).
pub fn package_fingerprint(package: &str) -> String {
    fingerprint(package_sources(package))
}

/// The harness's own solvers run the code under these paths — and the crates the harness
/// depends on — never the rest of the harness (spec, engine, analysis, presentation: they
/// never call it): the Python peers (`py:` names) the peer protocol, FuncISH's classifier its
/// own file. Their fingerprint is that code, so an edit to the report or the planner does not
/// mark their cells stale, nor an edit to the peers FuncISH's cells (and the reverse). A new
/// harness solver must be listed here (the registry test fingerprints every solver).
pub fn harness_solver_sources(name: &str) -> &'static [&'static str] {
    match name {
        n if n.starts_with("py:") => &["harness/src/peers/", "harness/src/registry.rs"],
        "funcish-lr" => &["harness/src/funcish_lr.rs", "harness/src/registry.rs"],
        _ => panic!("harness solver `{name}`: list the files it runs in harness_solver_sources"),
    }
}

/// The source directories and files solver `name` runs: those of its list's crate and the
/// crate's path dependencies ([`package_sources`]); for the harness's own solvers, the
/// harness's dependencies and [`harness_solver_sources`].
pub fn solver_sources(name: &str) -> Vec<&'static str> {
    let package = package_of(name).unwrap_or_else(|| panic!("unknown solver `{name}`"));
    let mut dirs = if package == env!("CARGO_PKG_NAME") && name.starts_with("py:") {
        let mut d: Vec<&str> = PEER_CRATES
            .iter()
            .flat_map(|c| package_sources(c).iter().copied())
            .collect();
        d.sort_unstable();
        d.dedup();
        d
    } else {
        package_sources(package).to_vec()
    };
    if package == env!("CARGO_PKG_NAME") {
        dirs.retain(|d| *d != "harness/src/");
        dirs.extend_from_slice(harness_solver_sources(name));
    }
    dirs
}

/// The workspace crates the peer protocol (`harness/src/peers/`) calls: a Python peer's cells
/// run that protocol, these crates (with their own dependencies) and the peer's script (whose
/// SHA-256 is in the cells' keys), not the rest of the harness's dependencies, so an edit of
/// FuncISH's or the tensor ranking's code leaves the peers' cells current. The test
/// `the_peer_crates_are_the_ones_the_peer_protocol_names` keeps the list complete.
pub const PEER_CRATES: &[&str] = &[
    "dyad-core",
    "dyad-datasets",
    "dyad-givens",
    "dyad-kernels",
    "dyad-loreta",
    "dyad-metric-baselines",
    "dyad-oasis",
];

/// The code fingerprint of solver `name`'s cells: that of the code it runs
/// ([`solver_sources`]).
pub fn solver_fingerprint(name: &str) -> String {
    fingerprint(&solver_sources(name))
}

/// Fingerprint of a set of source prefixes (tasks and data providers still name the files they
/// run): sha256 over the matching files' paths and token hashes. Panics if a prefix matches no
/// file (a typo must not silently drop code from the fingerprint); the registry test checks
/// every task and provider.
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
        assert!(matched, "source `{p}` matches no file under crates/");
    }
    dyad_datasets::identity::hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_solver_has_a_fingerprint_and_names_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for s in SOLVERS.iter() {
            assert!(names.insert(s.name), "two solvers named {}", s.name);
            assert_eq!(solver_fingerprint(s.name).len(), 64);
        }
        // A crate's fingerprint covers its path dependencies: the family crates differ from
        // one another and from the kernels they share.
        let fps: std::collections::BTreeSet<_> = SOLVER_LISTS
            .iter()
            .map(|l| package_fingerprint(l.package))
            .collect();
        assert_eq!(fps.len(), SOLVER_LISTS.len());
        for d in crate::data::PROVIDERS {
            fingerprint(d.sources());
        }
    }

    #[test]
    fn the_harness_solvers_are_fingerprinted_by_their_own_code_and_dependencies() {
        let edit = |file: &str| -> Vec<(&str, &str)> {
            SOURCE_FINGERPRINTS
                .iter()
                .map(|&(p, h)| {
                    if p.starts_with(file) {
                        (p, "edited")
                    } else {
                        (p, h)
                    }
                })
                .collect()
        };
        let moves = |solver: &str, file: &str| {
            let own = solver_sources(solver);
            fingerprint_in(&edit(file), &own) != fingerprint_in(SOURCE_FINGERPRINTS, &own)
        };
        for solver in [
            "py:tensor-power-tensorly",
            "py:itml-metric-learn",
            "funcish-lr",
        ] {
            let own = solver_sources(solver);
            assert!(!own.contains(&"harness/src/"), "{own:?}");
            for p in harness_solver_sources(solver) {
                assert!(own.contains(p), "{own:?}");
            }
            // The crates the harness's solvers call (OASIS, LORETA, ...) are in.
            for dep in ["core/src/", "oasis/src/", "loreta/src/"] {
                assert!(own.contains(&dep), "{dep}: {own:?}");
            }
            // The report's code is not: editing it leaves their fingerprints alone.
            assert!(!moves(solver, "harness/src/presentation/"), "{solver}");
            assert!(moves(solver, "harness/src/registry.rs"), "{solver}");
        }
        // A peer's fingerprint follows the peer protocol, FuncISH's classifier its own file,
        // and neither the other's.
        assert!(moves(
            "py:tensor-power-tensorly",
            "harness/src/peers/protocol.rs"
        ));
        assert!(!moves(
            "py:tensor-power-tensorly",
            "harness/src/funcish_lr.rs"
        ));
        assert!(moves("funcish-lr", "harness/src/funcish_lr.rs"));
        assert!(!moves("funcish-lr", "harness/src/peers/protocol.rs"));
        // FuncISH's classifier runs dyad-funcish; the peers do not.
        assert!(moves("funcish-lr", "funcish/src/classify/"));
        assert!(!moves("py:itml-metric-learn", "funcish/src/classify/"));
        assert!(!moves("py:itml-metric-learn", "tensor-rank/src/"));
    }

    /// Every workspace crate the peer protocol's code names is in [`PEER_CRATES`] (with its
    /// dependencies, the peers' fingerprint covers all the Rust code their cells run).
    #[test]
    fn the_peer_crates_are_the_ones_the_peer_protocol_names() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/peers");
        let mut named = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let mut rest = text.as_str();
            while let Some(i) = rest.find("dyad_") {
                let tail = &rest[i..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                named.insert(tail[..end].replace('_', "-"));
                rest = &tail[end..];
            }
        }
        assert!(named.contains("dyad-oasis"), "{named:?}");
        let covered: std::collections::BTreeSet<&str> = PEER_CRATES
            .iter()
            .flat_map(|c| package_sources(c).iter().copied())
            .collect();
        for c in &named {
            let src = format!("{}/src/", c.trim_start_matches("dyad-"));
            assert!(
                covered.contains(src.as_str()),
                "the peer protocol names `{c}`: add it to PEER_CRATES"
            );
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
