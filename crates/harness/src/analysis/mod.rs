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
