//! The analysis layer: what the computed cells say. It reads the [`crate::engine`]'s cells
//! and plans and the [`crate::spec`], and draws nothing.
//!
//! - [`results`]: one experiment's cells, aggregated over repeats, and its tidy table;
//! - [`tidy`]: that table as Parquet and CSV files;
//! - [`stats`]: the statistics figures and verdicts share (envelopes, power fits, paired
//!   t-tests);
//! - [`claims`]: a verdict per claim of the paper (or of ours);
//! - [`check`]: expectation bands and sanity checks for CI;
//! - [`cost`]: where a profile's cell time goes, by paper, spec, solver and phase;
//! - [`edges`]: where a solver hit an edge of its parameter grid;
//! - [`names`]: the metrics a spec's plots, tables and claims name, against what its cells
//!   record.

pub mod check;
pub mod claims;
pub mod compare;
pub mod cost;
pub mod edges;
pub mod names;
pub mod results;
pub mod sanity_pairs;
pub mod sanity_tasks;
pub mod stats;
pub mod tidy;

/// The plan of a committed spec (`experiments/<spec>`) at its quick profile, with a scratch
/// data and cache directory (the tests' fixture of the sanity checks).
#[cfg(test)]
pub(crate) fn quick_plan(spec: &str) -> (crate::engine::plan::Plan, tempfile::TempDir) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let spec = crate::spec::LoadedSpec::load(&root.join(spec)).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let ctx = dyad_datasets::provider::DataContext::new(
        dir.path().join("data"),
        dir.path().join("cache"),
    );
    let plan = crate::engine::plan::plan(&spec, crate::spec::profile::Profile::Quick, &ctx)
        .unwrap_or_else(|e| panic!("{e}"));
    (plan, dir)
}
