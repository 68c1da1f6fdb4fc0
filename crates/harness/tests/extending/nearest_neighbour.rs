//! The nearest-neighbour task, table `[protocol.nearest_neighbour]`: a ranker learns a
//! similarity from training rows, and every test row takes the class of the training row it
//! scores highest. Records per checkpoint: `accuracy` on the test rows, and `chance` (the
//! largest class's share of the test rows, what always guessing it would get).
//!
//! ```toml
//! [protocol.nearest_neighbour]
//! train_per_class = { quick = 10, paper = 40 }
//! test_per_class = 25
//! ```

use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Schedule, Scorer, derive_seed, seeded};
use dyad_datasets::provider::kinds;
use dyad_harness::engine::cache::Record;
use dyad_harness::engine::plan::{DatasetInstance, SolverInstance};
use dyad_harness::registry::RANKER;
use dyad_harness::spec::SpecError;
use dyad_harness::spec::profile::PerProfile;
use dyad_harness::tasks::retrieval::{SplitCell, check_split, labelled, rankers};
use dyad_harness::tasks::{CellOutput, CellProtocol, CellRun, Headline, Metric, Task, TaskInput};
use serde::{Deserialize, Serialize};

/// The task (one line in `TASKS`).
pub struct NearestNeighbourTask;

static METRICS: &[Metric] = &[
    Metric {
        name: "accuracy",
        label: "1-NN accuracy",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "test rows whose highest-scoring training row has their class",
    },
    Metric {
        name: "chance",
        label: "chance",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "the largest class's share of the test rows",
    },
];

static HEADLINE: &[Headline] = &[Headline {
    metric: "accuracy",
    k: None,
}];

impl Task for NearestNeighbourTask {
    fn table(&self) -> &'static str {
        "nearest_neighbour"
    }
    fn name(&self) -> &'static str {
        "nearest-neighbour"
    }
    /// In every cell key: bump when the records change for the same inputs.
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "classify each test row by its highest-scoring training row"
    }
    fn family(&self) -> &'static str {
        RANKER
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::LABELLED]
    }
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        HEADLINE
    }
    fn sources(&self) -> &'static [&'static str] {
        &["harness/src/tasks/nearest_neighbour.rs"]
    }
    /// Read and check the table before any data is read; errors name the spec's line.
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: Protocol = input.table("nearest_neighbour")?;
        let (train, test) = (
            *p.train_per_class.at(input.profile),
            *p.test_per_class.at(input.profile),
        );
        if train == 0 || test == 0 {
            return Err(input.error(
                &["nearest_neighbour", "train_per_class"],
                "key `protocol.nearest_neighbour`: at least 1 training and 1 test row per class"
                    .into(),
            ));
        }
        input.refuse_tune("key `solvers.tune`: the nearest-neighbour task has no hold-out")?;
        Ok(Box::new(Cell {
            split: SplitCell::PerClass { train, test },
            checkpoints: input.checkpoints.clone(),
        }))
    }
}

/// `[protocol.nearest_neighbour]` as written in a spec (unknown keys are errors).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Protocol {
    train_per_class: PerProfile<usize>,
    test_per_class: PerProfile<usize>,
}

/// The protocol of one cell, resolved for a profile: what its key hashes.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Cell {
    split: SplitCell,
    /// The spec's checkpoint grid (empty for learners without steps).
    checkpoints: Vec<u64>,
}

impl Cell {
    fn for_solver(&self, solver: &SolverInstance) -> Cell {
        let mut c = self.clone();
        if let Some(own) = &solver.checkpoints {
            c.checkpoints = own.clone();
        }
        if !solver.iterative {
            c.checkpoints.clear();
        }
        c
    }
}

impl CellProtocol for Cell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self.for_solver(solver)).expect("serializable")
    }
    /// Class sizes against the split, from the data set's known shape.
    fn check_data(&self, data: &DatasetInstance) -> Result<(), String> {
        check_split(&self.split, data)
    }
    fn sets(&self) -> Vec<String> {
        vec!["test".into()]
    }
    fn steps(&self, solver: &SolverInstance) -> u64 {
        self.for_solver(solver)
            .checkpoints
            .last()
            .copied()
            .unwrap_or(0)
    }
    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let data = labelled(cell.data)?;
        let SplitCell::PerClass { train, test } = self.split else {
            unreachable!("planned per class")
        };
        let mut rng = seeded(derive_seed(cell.seed, &format!("split/{}", cell.repeat)));
        let (tr, te) = data
            .per_class_split(train, test, &mut rng)
            .map_err(|e| e.to_string())?;
        let train = data.select(&tr);
        let mut eval = Evaluation::new(&train, data.select(&te));
        let steps = self.for_solver(cell.solver).checkpoints;
        let schedule = Schedule::new(if steps.is_empty() { vec![0] } else { steps });
        let learner = rankers(cell)?[0];
        let mut fit_rng = seeded(derive_seed(cell.seed, &format!("fit/{}", cell.repeat)));
        learner
            .fit(&train, &schedule, &mut fit_rng, &mut eval)
            .map_err(|e| e.to_string())?;
        Ok(CellOutput {
            train_seconds: eval.seconds,
            records: eval.records,
            ..CellOutput::default()
        })
    }
}

/// Evaluates the model at each checkpoint, off the solver's clock.
struct Evaluation<'a> {
    train: &'a LabeledSet,
    test: LabeledSet,
    records: Vec<Record>,
    /// Solver seconds at the last checkpoint.
    seconds: f64,
}

impl<'a> Evaluation<'a> {
    fn new(train: &'a LabeledSet, test: LabeledSet) -> Self {
        Self {
            train,
            test,
            records: Vec::new(),
            seconds: 0.0,
        }
    }
}

impl Observer for Evaluation<'_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
        let mut scores = vec![0.0; self.train.n()];
        let mut correct = 0;
        for (i, query) in self.test.x.outer_iterator().enumerate() {
            model.score(query, &self.train.x, &mut scores);
            // The first of the highest scores (a deterministic tie-break).
            let best = (0..scores.len()).fold(0, |b, j| if scores[j] > scores[b] { j } else { b });
            correct += usize::from(self.train.labels[best] == self.test.labels[i]);
        }
        let mut per_class = vec![0usize; self.test.n_classes()];
        for &c in &self.test.labels {
            per_class[c as usize] += 1;
        }
        let n = self.test.n() as f64;
        let record = |metric: &str, value: f64| Record {
            set: "test".into(),
            metric: metric.into(),
            step: at.step,
            seconds: at.solver_seconds,
            k: None,
            coord: None,
            value,
        };
        self.records.push(record("accuracy", correct as f64 / n));
        self.records.push(record(
            "chance",
            per_class.iter().copied().max().unwrap_or(0) as f64 / n,
        ));
        self.seconds = at.solver_seconds;
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprs::{CsMat, CsVecView};

    /// Scores by the dot product.
    struct Dot;

    impl Scorer for Dot {
        fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
            for (j, row) in candidates.outer_iterator().enumerate() {
                out[j] = query.dot(&row);
            }
        }
    }

    /// Two well-separated classes: the dot product classifies every test row right.
    #[test]
    fn separated_classes_are_classified_exactly() {
        let rows = [[1.0, 0.1], [0.9, 0.0], [0.0, 1.0], [0.1, 0.9]];
        let set = |rows: &[[f64; 2]]| {
            LabeledSet::from_dense_rows(
                &rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>(),
                vec![0, 0, 1, 1],
                2,
            )
        };
        let train = set(&rows);
        let mut eval = Evaluation::new(&train, set(&rows));
        let at = Checkpoint {
            step: 0,
            solver_seconds: 0.0,
            last: true,
        };
        eval.checkpoint(at, &Dot);
        let value = |m: &str| eval.records.iter().find(|r| r.metric == m).unwrap().value;
        assert_eq!((value("accuracy"), value("chance")), (1.0, 0.5));
    }
}
