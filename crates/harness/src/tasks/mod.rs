//! Tasks: what a cell does with a data set and a solver, and what it records.
//!
//! A task is a plug-in. It owns a protocol table of the spec (`[protocol.<table>]`), turns it
//! into a [`CellProtocol`] when a plan is built (checked there, before any data is read), runs
//! cells, and describes the metrics it records (name, unit, direction, percentage or not) so
//! that hold-out selection, tables, plots, claims and checks read them instead of assuming
//! mAP. Adding a task is one file here and one line in [`TASKS`]; `spec.rs`, `plan.rs`,
//! `run.rs` and `report.rs` do not change.
//!
//! A task may build on another (`base`): the human evaluation is the retrieval task plus a rater
//! panel, and a spec selecting it carries both tables.

pub mod funcish;
pub mod human;
pub mod label_ranking;
pub mod pair_ranking;
pub mod retrieval;
pub mod sparse_pca;
pub mod tensor_decomposition;

use crate::engine::cache::Record;
use crate::engine::plan::{DatasetInstance, SolverInstance};
use crate::registry::BuiltSolver;
use crate::spec::profile::Profile;
use crate::spec::{LoadedSpec, SpecError};
use dyad_datasets::provider::Data;
use serde::de::DeserializeOwned;

/// How a metric is read and shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    /// Name in records, specs and tables (e.g. `"map"`).
    pub name: &'static str,
    /// Short label for tables and axes (e.g. `"mAP"`).
    pub label: &'static str,
    /// Unit shown after values (`""` for none, `"s"` for seconds, ...).
    pub unit: &'static str,
    /// Whether larger values are better (hold-out selection, "best", `better` claims).
    pub higher_is_better: bool,
    /// A fraction shown as a percentage.
    pub percent: bool,
    pub description: &'static str,
}

impl Metric {
    /// A value as the report prints it (percentages with one decimal, times with three
    /// significant digits, other numbers with three decimals).
    pub fn format(&self, v: f64) -> String {
        if self.percent {
            format!("{:.1}", 100.0 * v)
        } else if v != 0.0 && v.abs() < 0.01 {
            format!("{v:.3e}")
        } else {
            format!("{v:.3}")
        }
    }

    /// Whether records of the metric `name` (described by `self`) are a wall time, which
    /// differs between runs of the same code: a metric in seconds (`unit = "s"`), or one
    /// named `..._seconds` (the convention for times a task records as values, e.g. FuncISH's
    /// `feature_seconds`, whatever its declared unit).
    pub fn is_timing(&self, name: &str) -> bool {
        self.unit == "s" || name.ends_with("_seconds")
    }

    /// Whether `a` is better than `b`.
    pub fn better(&self, a: f64, b: f64) -> bool {
        if self.higher_is_better { a > b } else { a < b }
    }

    /// The description used for names no task declares: higher is better, a plain number.
    pub const fn undeclared(name: &'static str) -> Metric {
        Metric {
            name,
            label: name,
            unit: "",
            higher_is_better: true,
            percent: false,
            description: "",
        }
    }
}

/// A column of the report's summary table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headline {
    pub metric: &'static str,
    pub k: Option<u32>,
}

/// A task: its table, version, solver family, accepted data kinds and metrics.
pub trait Task: Sync {
    /// The protocol table that selects it: `[protocol.<table>]`.
    fn table(&self) -> &'static str;
    /// Its name in tables, logs and the report.
    fn name(&self) -> &'static str;
    /// The name its cells' keys hash. A task renamed after cells were computed keeps its old
    /// name here, so that renaming recomputes nothing (the retrieval task was
    /// `label-ranking`, and the label-ranking task `labels-per-example`). Default: its name.
    fn key_name(&self) -> &'static str {
        self.name()
    }
    /// Tables that selected it before a rename: a spec still using one is told the new name.
    fn former_tables(&self) -> &'static [&'static str] {
        &[]
    }
    /// Bump when the task's records change for the same inputs: exactly its cells recompute.
    fn version(&self) -> u32;
    fn description(&self) -> &'static str;
    /// The table of a task this one builds on (the spec must carry both).
    fn base(&self) -> Option<&'static str> {
        None
    }
    /// The solver family it runs (see [`crate::registry::SolverEntry::family`]).
    fn family(&self) -> &'static str;
    /// Data kinds it accepts (see [`dyad_datasets::provider::Provider::kind`]).
    fn data_kinds(&self) -> &'static [&'static str];
    /// The metrics it records.
    fn metrics(&self) -> &'static [Metric];
    /// The summary table's columns.
    fn headline(&self) -> &'static [Headline];
    /// Names of the second numeric coordinate its records may carry (besides the step).
    fn coordinates(&self) -> &'static [&'static str] {
        &[]
    }
    /// The set and metric its hold-out selection maximises (or minimises), if it has one:
    /// the saturation pseudo-metrics read it.
    fn selection(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// Source files (paths under `crates/`) whose fingerprint is kept as provenance.
    fn sources(&self) -> &'static [&'static str];
    /// Earlier versions whose cells this version would reproduce record for record whenever
    /// the test returns true on their records: `dyad run` then carries such a cell to the
    /// current key instead of computing it again (see [`Carry`]). Default: none.
    fn carries(&self) -> &'static [Carry] {
        &[]
    }
    /// Build the cell protocol from the spec, resolved for a profile. Errors name the spec's
    /// line and field.
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError>;
}

/// A proof obligation for an earlier task version: `unchanged(records)` must hold only when
/// the current version computes exactly those records for the same cell (e.g. the bump
/// changed what an empty set records, and the records show no set was empty). A carried cell
/// keeps its values and timings; its provenance names the key it was carried from.
#[derive(Debug, Clone, Copy)]
pub struct Carry {
    pub from_version: u32,
    pub unchanged: fn(&[crate::engine::cache::Record]) -> bool,
    /// Why the test suffices, for the run's message.
    pub why: &'static str,
}

/// A lower bound on a cell's memory, as named parts (bytes each).
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub parts: Vec<(String, u64)>,
}

impl Memory {
    /// The parts' sum (saturating).
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |a, (_, b)| a.saturating_add(*b))
    }
}

/// What a task sees of a spec when its plan is built.
pub struct TaskInput<'a> {
    pub spec: &'a LoadedSpec,
    pub profile: Profile,
    /// The spec's checkpoint grid for this profile.
    pub checkpoints: Vec<u64>,
}

impl TaskInput<'_> {
    /// The task table `[protocol.<table>]` as `T`; a wrong or unknown key is an error naming
    /// its line.
    pub fn table<T: DeserializeOwned>(&self, table: &str) -> Result<T, SpecError> {
        self.spec.typed(&["protocol", table])
    }

    /// `Err` at the first solver with a `tune` table, saying `why` (for tasks, or protocols,
    /// without a hold-out to tune on).
    pub fn refuse_tune(&self, why: &str) -> Result<(), SpecError> {
        match self.spec.spec.solvers.iter().position(|s| s.tune.is_some()) {
            Some(i) => Err(self
                .spec
                .error_at_key(&["solvers", &i.to_string(), "tune"], why.to_string())),
            None => Ok(()),
        }
    }

    /// An error about a key of a task table, at its line when it can be found.
    pub fn error(&self, path: &[&str], message: String) -> SpecError {
        let mut full = vec!["protocol"];
        full.extend_from_slice(path);
        self.spec.error_at_key(&full, message)
    }
}

/// A task's protocol for one plan: what its cells do.
pub trait CellProtocol: Send + Sync {
    /// The protocol as it applies to `solver`, in canonical form: hashed into cell keys, so
    /// it holds exactly what changes results.
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value;
    /// Check the protocol against a data set before any data is read (sizes the data set is
    /// known to have, kinds of labels).
    fn check_data(&self, _data: &DatasetInstance) -> Result<(), String> {
        Ok(())
    }
    /// A lower bound on the memory one cell of `solver` on `data` takes, in parts, where the
    /// data set's shape tells (planning refuses a cell that would exceed the machine's
    /// memory); a tuned solver's is its largest candidate's ([`SolverInstance::largest`]).
    /// Default: unknown.
    fn memory(&self, _solver: &SolverInstance, _data: &DatasetInstance) -> Option<Memory> {
        None
    }
    /// Metric names its cells of `solver` record besides the task's [`Task::metrics`] (a
    /// model's own statistics, when the protocol records them): the names a spec may read,
    /// checked at plan time. Default: none.
    fn declared_metrics(&self, _solver: &SolverInstance) -> Vec<&'static str> {
        Vec::new()
    }
    /// The sets it records, the primary (reported) set first.
    fn sets(&self) -> Vec<String>;
    /// Solver steps one cell of `solver` takes at most (for cost estimates at plan time).
    fn steps(&self, solver: &SolverInstance) -> u64;
    /// Run one cell.
    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String>;
}

/// Everything one cell needs.
pub struct CellRun<'a> {
    pub data: &'a Data,
    /// The data set's id in the spec (for messages).
    pub dataset: &'a str,
    pub solver: &'a SolverInstance,
    /// The solver built from its parameters; several when the hold-out tunes some.
    pub candidates: &'a [BuiltSolver],
    pub seed: u64,
    pub repeat: u32,
}

/// What a cell produced.
#[derive(Debug, Clone, Default)]
pub struct CellOutput {
    pub records: Vec<Record>,
    /// Solver seconds of the final training run (to its last reported step).
    pub train_seconds: f64,
    /// Solver seconds spent on the hold-out (early stopping and tuning).
    pub selection_seconds: f64,
    /// Seconds spent evaluating (never solver time).
    pub eval_seconds: f64,
    pub selected_step: Option<u64>,
    /// The tuned candidate chosen on the hold-out (index into the candidates).
    pub selected_candidate: Option<usize>,
    /// Tables of names and pictures for the report.
    pub artifacts: Vec<crate::engine::cache::Artifact>,
}

/// Every task the specs can select, by table name.
pub static TASKS: &[&dyn Task] = &[
    &retrieval::RetrievalTask,
    &human::HumanEvaluationTask,
    &label_ranking::LabelRankingTask,
    &sparse_pca::SparsePcaTask,
    &tensor_decomposition::TensorDecompositionTask,
    &pair_ranking::PairRankingTask,
    &funcish::GeneFunctionTask,
    &funcish::GeneRetrievalTask,
];

/// The task selecting table `table`.
pub fn task(table: &str) -> Option<&'static dyn Task> {
    TASKS.iter().copied().find(|t| t.table() == table)
}

/// The pseudo-metric selecting each cell's solver seconds (the final training run, to its
/// last reported step, evaluation excluded): what speed gates check.
pub const TRAIN_SECONDS: &str = "train_seconds";

/// The pseudo-metric selecting each cell's solver seconds spent on the hold-out (early
/// stopping and tuning runs, evaluation excluded).
pub const SELECTION_SECONDS: &str = "selection_seconds";

/// The pseudo-metric selecting each cell's final-run solver seconds divided by its number of
/// steps (the selected step, else the last recorded one; cells without steps are skipped).
pub const SECONDS_PER_STEP: &str = "seconds_per_step";

/// The pseudo-metric selecting the hold-out run's solver seconds until its validation mAP
/// saturated: the first checkpoint whose validation mAP is within [`crate::analysis::results::SATURATION_TOLERANCE`]
/// (relative) of the best one. The paper stops web training "when mAP saturated" (spec
/// §7.2); where the curve creeps up by less than that to the end of the grid, the arg-max
/// early stopping (`selected_step`) picks the grid's end while this picks the plateau's start.
/// Cells without a validation curve (learners run to convergence) give their
/// `train_seconds`: their training ends when they stop improving.
pub const SATURATION_SECONDS: &str = "saturation_seconds";

/// The step of [`SATURATION_SECONDS`]'s checkpoint.
pub const SATURATION_STEP: &str = "saturation_step";

/// Pseudo-metrics every cell has, whatever its task: solver time and what follows from the
/// hold-out.
pub static CELL_METRICS: &[Metric] = &[
    Metric {
        name: TRAIN_SECONDS,
        label: "solver s",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "solver seconds of the final training run, evaluation excluded",
    },
    Metric {
        name: SELECTION_SECONDS,
        label: "selection s",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "solver seconds spent on the hold-out (early stopping, tuning)",
    },
    Metric {
        name: SECONDS_PER_STEP,
        label: "s/step",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "final-run solver seconds per step",
    },
    Metric {
        name: SATURATION_SECONDS,
        label: "s to saturation",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "hold-out solver seconds until the selection metric is within 1 % of its best",
    },
    Metric {
        name: SATURATION_STEP,
        label: "steps to saturation",
        unit: "steps",
        higher_is_better: false,
        percent: false,
        description: "hold-out steps until the selection metric is within 1 % of its best",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_names_are_unique_and_bases_exist() {
        let mut tables = std::collections::BTreeSet::new();
        let mut names = std::collections::BTreeSet::new();
        let mut key_names = std::collections::BTreeSet::new();
        for t in TASKS {
            assert!(tables.insert(t.table()), "table {} twice", t.table());
            assert!(names.insert(t.name()), "name {} twice", t.name());
            assert!(
                key_names.insert(t.key_name()),
                "key name {} twice",
                t.key_name()
            );
            if let Some(b) = t.base() {
                assert!(task(b).is_some(), "{} builds on unknown {b}", t.name());
            }
            for h in t.headline() {
                assert!(
                    t.metrics().iter().any(|m| m.name == h.metric),
                    "{}: headline {} undeclared",
                    t.name(),
                    h.metric
                );
            }
            crate::registry::fingerprint(t.sources());
        }
        for t in TASKS {
            for old in t.former_tables() {
                assert!(task(old).is_none(), "former table {old} is a current one");
                assert!(tables.insert(old), "former table {old} twice");
            }
        }
    }

    #[test]
    fn metric_direction_and_format() {
        let m = Metric {
            name: "map",
            label: "mAP",
            unit: "",
            higher_is_better: true,
            percent: true,
            description: "",
        };
        assert_eq!(m.format(0.4321), "43.2");
        assert!(m.better(0.5, 0.4));
        let s = CELL_METRICS[0];
        assert!(s.better(1.0, 2.0) && !s.better(2.0, 1.0));
        assert_eq!(s.format(0.00123), "1.230e-3");
        assert_eq!(s.format(12.0), "12.000");
    }
}
