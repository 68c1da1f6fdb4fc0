//! The retrieval task (OASIS spec §7.1 and §8), table `[protocol.retrieval]`: draw a
//! per-class (or the official) train/test split, train a ranker on the training rows, and at
//! each checkpoint rank every evaluated set against itself (each query excluded from its own
//! ranking), recording mAP, precision@k and the chance level. With early stopping, the number
//! of steps (and any tuned hyper-parameters) is chosen on a per-class hold-out of the training
//! set and the ranker is retrained on the whole training set for that many steps.

use super::{CellOutput, CellProtocol, CellRun, Headline, Memory, Metric, Task, TaskInput};
use crate::cache::Record;
use crate::plan::{DatasetInstance, SolverInstance};
use crate::profile::PerProfile;
use crate::registry::RANKER;
use crate::spec::SpecError;
use dyad_core::data::holdout_per_class;
use dyad_core::metrics::{QUERY_BLOCK, evaluate_retrieval};
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Schedule, Scorer, derive_seed, seeded};
use dyad_datasets::imagenet::MultiLabelSet;
use dyad_datasets::provider::{Data, Shape, kinds};
use dyad_datasets::web::WebData;
use dyad_kernels::{AlgoError, Ranker};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::Instant;

/// The task.
pub struct RetrievalTask;

/// The prefix of the records' sets of the sanity probes (`sanity-test` for the probes on set
/// `test`), recorded once per final run and evaluated set:
/// `sanity_oracle_map` (the perfect ranking's mAP: must be 1), `sanity_constant_map` and
/// `sanity_constant_gap` (a constant scorer: every precision@k at chance, so the gap must be
/// 0 up to rounding; its mAP is what a `W = 0` start must reach), and at the final model
/// `sanity_repeat_delta` (the model evaluated twice: must be 0). `dyad check` fails on any
/// that does not hold (see `crate::check::sanity`).
pub const SANITY: &str = "sanity";
/// Queries the oracle probe ranks (the metric machinery on real relevance lists; all queries
/// would double the cost of a cheap cell for no more evidence).
pub const SANITY_ORACLE_QUERIES: usize = 200;

static METRICS: &[Metric] = &[
    Metric {
        name: "map",
        label: "mAP",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "mean average precision over queries (each ranks the rest of its set)",
    },
    Metric {
        name: "precision",
        label: "prec",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "precision at the top k, averaged over queries",
    },
    Metric {
        name: "chance",
        label: "chance",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "mAP of a random ranking (the fraction of relevant candidates)",
    },
];

static HEADLINE: &[Headline] = &[
    Headline {
        metric: "map",
        k: None,
    },
    Headline {
        metric: "precision",
        k: Some(1),
    },
    Headline {
        metric: "precision",
        k: Some(10),
    },
    Headline {
        metric: "precision",
        k: Some(50),
    },
];

impl Task for RetrievalTask {
    fn table(&self) -> &'static str {
        "retrieval"
    }
    fn name(&self) -> &'static str {
        "retrieval"
    }
    fn key_name(&self) -> &'static str {
        // Its name until the task names were made to say what they are: every cell key
        // computed since hashes it.
        "label-ranking"
    }
    fn former_tables(&self) -> &'static [&'static str] {
        &["ranking"]
    }
    fn version(&self) -> u32 {
        // 2: ties scored as the expectation over the orders of tied candidates; rows without
        // a feature ranked last, such queries left out (dyad_core::metrics).
        2
    }
    fn description(&self) -> &'static str {
        "rank held-out examples by a learned similarity; relevant = same class (or a shared label)"
    }
    fn family(&self) -> &'static str {
        RANKER
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::LABELLED, kinds::MULTI_LABEL, kinds::WEB]
    }
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        HEADLINE
    }
    fn selection(&self) -> Option<(&'static str, &'static str)> {
        Some(("validation", "map"))
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/retrieval.rs",
            "core/src/metrics.rs",
            "core/src/data.rs",
            "core/src/rng.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        Ok(Box::new(plan_cell(input)?))
    }
}

/// `[protocol.retrieval]` as written in a spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalProtocol {
    /// How training and test rows are drawn (default `"per-class"`).
    #[serde(default)]
    pub split: SplitKind,
    /// `split = "per-class"`: training rows per class.
    #[serde(default)]
    pub train_per_class: Option<PerProfile<usize>>,
    /// `split = "per-class"`: test rows per class.
    #[serde(default)]
    pub test_per_class: Option<PerProfile<usize>>,
    /// `split = "official"`: at most this many training rows (uniformly subsampled).
    #[serde(default)]
    pub max_train: Option<PerProfile<usize>>,
    /// `split = "official"`: at most this many test rows (uniformly subsampled).
    #[serde(default)]
    pub max_test: Option<PerProfile<usize>>,
    /// Sets evaluated at every checkpoint: `"train"` and/or `"test"`.
    #[serde(default = "default_evaluate")]
    pub evaluate: Vec<EvalSet>,
    /// Largest k of precision@k.
    #[serde(default = "default_k_max")]
    pub k_max: usize,
    /// Record precision@1..k_max at every checkpoint (default: at the last one only).
    #[serde(default)]
    pub precision_at_every_checkpoint: bool,
    /// Record the model's own statistics (e.g. OASIS's symmetry indices) at the final step,
    /// as set "model". Off by default: at d = 10,000 they cost minutes per cell.
    #[serde(default)]
    pub model_statistics: bool,
    /// Choose the number of steps on a per-class hold-out of the training set, then retrain
    /// on the whole training set for that many steps (§7.1).
    #[serde(default)]
    pub early_stopping: Option<EarlyStopping>,
}

/// How a repeat draws its training and test rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitKind {
    /// `train_per_class` and `test_per_class` rows of every class, drawn per repeat (from the
    /// official parts when the data set has them).
    #[default]
    PerClass,
    /// The data set's official training and test parts (optionally subsampled).
    Official,
}

fn default_evaluate() -> Vec<EvalSet> {
    vec![EvalSet::Test]
}
fn default_k_max() -> usize {
    50
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EvalSet {
    Train,
    Test,
}

impl EvalSet {
    pub fn as_str(self) -> &'static str {
        match self {
            EvalSet::Train => "train",
            EvalSet::Test => "test",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EarlyStopping {
    /// Fraction of each class's training examples held out for validation (0.2 = 8 of 40).
    pub validation_fraction: f64,
}

/// How a repeat draws its rows, resolved for a profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitCell {
    PerClass {
        train: usize,
        test: usize,
    },
    Official {
        max_train: Option<usize>,
        max_test: Option<usize>,
    },
}

/// The protocol of one cell, resolved for a profile (hashed into the cell key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrievalCell {
    pub split: SplitCell,
    pub evaluate: Vec<EvalSet>,
    pub k_max: usize,
    pub precision_at_every_checkpoint: bool,
    /// Record the model's statistics at the final step (set "model").
    #[serde(skip_serializing_if = "is_false")]
    pub model_statistics: bool,
    /// Empty for learners without steps.
    pub checkpoints: Vec<u64>,
    pub early_stopping: Option<EarlyStopping>,
    /// `false`: the hold-out compares tuned candidates at their final step and the learner
    /// runs its whole schedule (no early stopping).
    #[serde(skip_serializing_if = "is_true")]
    pub select_steps: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl RetrievalCell {
    /// The cell's protocol for `solver`: learners without steps ignore checkpoints and early
    /// stopping, so those stay out of their keys (their cells are shared across grids).
    pub fn for_solver(&self, solver: &SolverInstance) -> RetrievalCell {
        let mut r = self.clone();
        if let Some(c) = &solver.checkpoints {
            r.checkpoints = c.clone();
        }
        if !solver.iterative {
            r.checkpoints.clear();
        }
        let selects_steps = solver.iterative && solver.select_steps;
        if !selects_steps && solver.tune.is_empty() {
            // Nothing to choose on the hold-out.
            r.early_stopping = None;
        }
        // `false` only where a hold-out runs without choosing steps.
        r.select_steps = selects_steps || !solver.iterative || r.early_stopping.is_none();
        r
    }

    /// The evaluated set the report leads with: `test` when evaluated, else the first.
    pub fn primary_set(&self) -> &'static str {
        self.evaluate
            .iter()
            .find(|s| **s == EvalSet::Test)
            .or(self.evaluate.first())
            .map_or("test", |s| s.as_str())
    }

    /// The rows of repeat `repeat`: a per-class or official split, seeded by `seed` and the
    /// repeat (shared by every task built on this one).
    pub fn split_rows(
        &self,
        data: &LabeledSet,
        seed: u64,
        repeat: u32,
    ) -> Result<(Vec<usize>, Vec<usize>), dyad_core::CoreError> {
        let mut rng = seeded(derive_seed(seed, &format!("split/{repeat}")));
        match self.split {
            SplitCell::PerClass { train, test } => data.per_class_split(train, test, &mut rng),
            SplitCell::Official {
                max_train,
                max_test,
            } => data.official_split(max_train, max_test, &mut rng),
        }
    }
}

/// Read, check and resolve `[protocol.retrieval]`.
pub fn plan_cell(input: &TaskInput<'_>) -> Result<RetrievalCell, SpecError> {
    let r: RetrievalProtocol = input.table("retrieval")?;
    let err = |key: &str, msg: String| input.error(&["retrieval", key], msg);
    if let Some(es) = &r.early_stopping
        && !(es.validation_fraction > 0.0 && es.validation_fraction < 1.0)
    {
        return Err(err(
            "early_stopping",
            format!(
                "key `protocol.retrieval.early_stopping.validation_fraction`: must lie in (0, 1), got {}",
                es.validation_fraction
            ),
        ));
    }
    if r.k_max == 0 {
        return Err(err(
            "k_max",
            "key `protocol.retrieval.k_max`: must be at least 1".into(),
        ));
    }
    if r.evaluate.is_empty() {
        return Err(err(
            "evaluate",
            "key `protocol.retrieval.evaluate`: name at least one set (\"train\", \"test\")".into(),
        ));
    }
    let at = |v: &Option<PerProfile<usize>>| v.as_ref().map(|v| *v.at(input.profile));
    let split = match r.split {
        SplitKind::PerClass => match (at(&r.train_per_class), at(&r.test_per_class)) {
            (Some(train), Some(test)) if train >= 1 && test >= 1 => {
                SplitCell::PerClass { train, test }
            }
            (Some(_), Some(_)) => {
                return Err(err(
                    "train_per_class",
                    "key `protocol.retrieval`: `train_per_class` and `test_per_class` must be at least 1".into(),
                ));
            }
            _ => {
                return Err(err(
                    "split",
                    "key `protocol.retrieval`: split = \"per-class\" needs `train_per_class` and `test_per_class`".into(),
                ));
            }
        },
        SplitKind::Official => {
            if r.train_per_class.is_some() || r.test_per_class.is_some() {
                return Err(err(
                    "split",
                    "key `protocol.retrieval`: split = \"official\" takes `max_train`/`max_test`, not per-class counts".into(),
                ));
            }
            SplitCell::Official {
                max_train: at(&r.max_train),
                max_test: at(&r.max_test),
            }
        }
    };
    if r.early_stopping.is_none() {
        input.refuse_tune(
            "key `solvers.tune`: tuning needs `protocol.retrieval.early_stopping` (its hold-out)",
        )?;
    }
    Ok(RetrievalCell {
        split,
        evaluate: r.evaluate,
        k_max: r.k_max,
        precision_at_every_checkpoint: r.precision_at_every_checkpoint,
        model_statistics: r.model_statistics,
        checkpoints: input.checkpoints.clone(),
        early_stopping: r.early_stopping,
        select_steps: true,
    })
}

/// Data of any kind the task accepts, as labelled rows: multi-label rows rank by their leaf
/// (per-class splits draw per leaf) with relevance = a shared label; the web stand-in's images.
pub fn labelled(data: &Data) -> Result<Cow<'_, LabeledSet>, String> {
    if let Some(s) = data.get::<LabeledSet>() {
        return Ok(Cow::Borrowed(s));
    }
    if let Some(w) = data.get::<WebData>() {
        return Ok(Cow::Borrowed(&w.set));
    }
    if let Some(m) = data.get::<MultiLabelSet>() {
        let names = (0..m.n_leaves).map(|l| format!("leaf{l}")).collect();
        let set = LabeledSet::new(m.x.clone(), m.leaf.clone(), names, None)
            .and_then(|s| s.with_relevance(m.labels.clone()))
            .map_err(|e| e.to_string())?;
        return Ok(Cow::Owned(set));
    }
    Err(format!(
        "the retrieval task needs labelled examples, not {}",
        data.kind()
    ))
}

impl CellProtocol for RetrievalCell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self.for_solver(solver)).expect("serializable")
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        check_split(&self.split, d)?;
        check_k_max(self, d)
    }

    fn memory(&self, solver: &SolverInstance, d: &DatasetInstance) -> Option<Memory> {
        memory(&self.for_solver(solver), solver, d)
    }

    /// The ranker's statistics ([`Ranker::statistics`]), when the cells record them.
    fn declared_metrics(&self, solver: &SolverInstance) -> Vec<&'static str> {
        if !self.model_statistics {
            return Vec::new();
        }
        solver
            .built()
            .and_then(|b| b.family::<dyn Ranker>().map(|r| r.statistics().to_vec()))
            .unwrap_or_default()
    }

    fn sets(&self) -> Vec<String> {
        let primary = self.primary_set();
        let mut v = vec![primary.to_string()];
        v.extend(
            self.evaluate
                .iter()
                .map(|s| s.as_str().to_string())
                .filter(|s| s != primary),
        );
        v
    }

    fn steps(&self, solver: &SolverInstance) -> u64 {
        let c = self.for_solver(solver);
        let budget = c.checkpoints.last().copied().unwrap_or(0);
        // The hold-out run (each tuned candidate) and the final run.
        let runs = if c.early_stopping.is_some() {
            solver.tune.len().max(1) as u64 + 1
        } else {
            1
        };
        budget.saturating_mul(runs)
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let data = labelled(cell.data)?;
        let learners = rankers(cell)?;
        run(
            &data,
            &learners,
            &self.for_solver(cell.solver),
            cell.seed,
            cell.repeat,
            None,
        )
        .map_err(|e| e.to_string())
    }
}

/// The candidates of a cell as rankers.
pub fn rankers<'a>(cell: &CellRun<'a>) -> Result<Vec<&'a dyn Ranker>, String> {
    cell.candidates
        .iter()
        .map(|b| {
            b.family::<dyn Ranker>()
                .ok_or_else(|| format!("solver `{}` is not a ranker", cell.solver.name))
        })
        .collect()
}

/// The rows of `set` in a cell of `cell` on data of `shape`, where the class sizes say.
fn set_rows(cell: &RetrievalCell, set: EvalSet, shape: &Shape) -> Option<usize> {
    let classes = shape
        .class_sizes
        .as_ref()
        .or(shape.test_class_sizes.as_ref())
        .map(Vec::len);
    let part = |sizes: &Option<Vec<usize>>, max: Option<usize>| {
        sizes.as_ref().map(|s| {
            let n: usize = s.iter().sum();
            max.map_or(n, |m| m.min(n))
        })
    };
    match (&cell.split, set) {
        (SplitCell::PerClass { train, .. }, EvalSet::Train) => classes.map(|c| c * *train),
        (SplitCell::PerClass { test, .. }, EvalSet::Test) => classes.map(|c| c * *test),
        (SplitCell::Official { max_train, .. }, EvalSet::Train) => {
            part(&shape.train_class_sizes, *max_train)
        }
        (SplitCell::Official { max_test, .. }, EvalSet::Test) => {
            part(&shape.test_class_sizes, *max_test)
        }
    }
}

/// Whether each query of every evaluated set has at least `k_max` candidates (the other rows
/// of its set), where the data set's class sizes are known: precision@k past the candidates
/// would only count absent ones as misses (checked at plan time).
fn check_k_max(cell: &RetrievalCell, d: &DatasetInstance) -> Result<(), String> {
    let Some(shape) = &d.resolved.shape else {
        return Ok(());
    };
    for &set in &cell.evaluate {
        if let Some(rows) = set_rows(cell, set, shape)
            && cell.k_max >= rows
        {
            return Err(format!(
                "key `protocol.retrieval.k_max`: {} exceeds the {} candidates each query of the \
                 {} set of `{}` ranks (its {rows} rows less the query); precision@k past them \
                 would only count absent candidates as misses",
                cell.k_max,
                rows.saturating_sub(1),
                set.as_str(),
                d.id
            ));
        }
    }
    Ok(())
}

/// A lower bound on one cell's memory: the learner's ([`Ranker::memory`], for the training
/// rows where the class sizes give them, else for none) and the evaluation's, per set
/// (a block of [`QUERY_BLOCK`] queries' scores and precision@1..k_max of every query).
fn memory(cell: &RetrievalCell, solver: &SolverInstance, d: &DatasetInstance) -> Option<Memory> {
    let shape = d.resolved.shape.as_ref()?;
    // Only a ranker has a memory estimate here: any other solver returns `None` (no estimate).
    solver.built()?.family::<dyn Ranker>()?;
    let train = set_rows(cell, EvalSet::Train, shape);
    let learner = solver
        .largest::<dyn Ranker>(|r| r.memory(train.unwrap_or(0), shape.dim))
        .unwrap_or(0);
    let evaluation = cell
        .evaluate
        .iter()
        .filter_map(|&set| set_rows(cell, set, shape))
        .map(|n| dyad_kernels::dense_bytes(n, QUERY_BLOCK + cell.k_max))
        .max()
        .unwrap_or(0);
    Some(Memory {
        parts: vec![
            (
                match train {
                    Some(n) => {
                        format!("the learner on {n} training rows of {} features", shape.dim)
                    }
                    None => format!("the learner on {} features", shape.dim),
                },
                learner,
            ),
            ("the evaluation".to_string(), evaluation),
        ],
    })
}

/// Whether a data set's known class sizes allow the split (checked at plan time).
pub fn check_split(split: &SplitCell, d: &DatasetInstance) -> Result<(), String> {
    let SplitCell::PerClass { train, test } = *split else {
        return Ok(());
    };
    let Some(shape) = &d.resolved.shape else {
        return Ok(());
    };
    let too_small = |sizes: &[usize], need: usize, what: &str| -> Result<(), String> {
        match sizes.iter().enumerate().find(|(_, n)| **n < need) {
            Some((c, n)) => Err(format!(
                "class {c} of `{}` has {n} rows in its {what}, but the split needs {need} \
                 (its smallest class has {})",
                d.id,
                sizes.iter().min().copied().unwrap_or(0)
            )),
            None => Ok(()),
        }
    };
    match (&shape.train_class_sizes, &shape.test_class_sizes) {
        (Some(tr), Some(te)) => {
            too_small(tr, train, "official training part (train_per_class)")?;
            too_small(te, test, "official test part (test_per_class)")
        }
        _ => match &shape.class_sizes {
            Some(all) => too_small(all, train + test, "data (train_per_class + test_per_class)"),
            None => Ok(()),
        },
    }
}

/// A hook that receives the final model of a retrieval run.
pub type FinalModel<'f> = &'f mut dyn FnMut(&dyn Scorer);

/// Evaluates each reported model on a list of named sets, off the solver clock.
struct Evaluator<'a, 'f> {
    sets: Vec<(&'static str, &'a LabeledSet)>,
    k_max: usize,
    every_precision: bool,
    /// Record only mAP (validation runs).
    map_only: bool,
    /// Record the model's statistics with the final precision@k.
    statistics: bool,
    /// Steps after which precision@k is recorded even when not every checkpoint gets it.
    final_step: Option<u64>,
    records: Vec<Record>,
    eval_seconds: f64,
    last_seconds: f64,
    chance_done: bool,
    /// Record the sanity probes (set `sanity`, see [`SANITY`]) on the final run.
    sanity: bool,
    /// Called with the final model (a task built on this one judges it further).
    on_last: Option<FinalModel<'f>>,
}

impl Observer for Evaluator<'_, '_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
        let t = Instant::now();
        let with_precision =
            !self.map_only && (self.every_precision || at.last || self.final_step == Some(at.step));
        for &(name, set) in &self.sets {
            let r = evaluate_retrieval(model, set, set, true, self.k_max);
            let rec = |metric: &str, k: Option<u32>, value: f64| Record {
                set: name.to_string(),
                metric: metric.to_string(),
                step: at.step,
                seconds: at.solver_seconds,
                k,
                coord: None,
                value,
            };
            self.records.push(rec("map", None, r.map));
            if !self.chance_done && !self.map_only {
                self.records.push(rec("chance", None, r.chance));
            }
            if self.sanity && !self.chance_done {
                let p = dyad_core::metrics::probe(set, self.k_max, SANITY_ORACLE_QUERIES);
                for (metric, value) in [
                    ("sanity_oracle_map", p.oracle_map),
                    ("sanity_constant_map", p.constant_map),
                    ("sanity_constant_gap", p.constant_gap),
                ] {
                    self.records.push(Record {
                        set: format!("{SANITY}-{name}"),
                        ..rec(metric, None, value)
                    });
                }
            }
            if self.sanity && at.last {
                // The same model evaluated a second time: determinism, to the bit.
                let again = evaluate_retrieval(model, set, set, true, self.k_max);
                let delta = std::iter::once((r.map, again.map))
                    .chain(
                        r.precision
                            .iter()
                            .copied()
                            .zip(again.precision.iter().copied()),
                    )
                    .map(|(a, b)| {
                        if a.to_bits() == b.to_bits() {
                            0.0
                        } else if (a - b).abs() > 0.0 {
                            (a - b).abs()
                        } else {
                            // -0 against 0, or NaN: still a difference.
                            1.0
                        }
                    })
                    .fold(0.0, f64::max);
                self.records.push(Record {
                    set: format!("{SANITY}-{name}"),
                    ..rec("sanity_repeat_delta", None, delta)
                });
            }
            if with_precision {
                for (k, p) in r.precision.iter().enumerate() {
                    self.records.push(rec("precision", Some(k as u32 + 1), *p));
                }
            }
        }
        if with_precision && self.statistics {
            for (name, value) in model.statistics() {
                self.records.push(Record {
                    set: "model".into(),
                    metric: name.into(),
                    step: at.step,
                    seconds: at.solver_seconds,
                    k: None,
                    coord: None,
                    value,
                });
            }
        }
        if at.last
            && let Some(f) = self.on_last.as_mut()
        {
            f(model);
        }
        self.chance_done = true;
        self.last_seconds = at.solver_seconds;
        self.eval_seconds += t.elapsed().as_secs_f64();
        Control::Continue
    }
}

/// Run one cell of the retrieval task. `candidates` are the learners to choose from on
/// the hold-out (one when nothing is tuned); with early stopping the choice also covers the
/// number of steps of iterative learners. `on_last` receives the final model.
pub fn run(
    data: &LabeledSet,
    candidates: &[&dyn Ranker],
    cell: &RetrievalCell,
    seed: u64,
    repeat: u32,
    on_last: Option<FinalModel<'_>>,
) -> Result<CellOutput, AlgoError> {
    let (train_idx, test_idx) = cell.split_rows(data, seed, repeat)?;
    let train = data.select(&train_idx);
    let test = data.select(&test_idx);
    let solver_seed = derive_seed(seed, &format!("solver/{repeat}"));
    let mut out = CellOutput::default();
    let iterative = candidates[0].is_iterative();
    let checkpoints = if iterative {
        Schedule::new(cell.checkpoints.clone())
    } else {
        Schedule::new(vec![0])
    };

    let select_steps = iterative && cell.select_steps;
    let select = cell
        .early_stopping
        .as_ref()
        .filter(|_| select_steps || candidates.len() > 1);
    let (chosen, final_schedule) = match select {
        Some(es) => {
            let mut rng = seeded(derive_seed(seed, &format!("holdout/{repeat}")));
            let all: Vec<usize> = (0..train.n()).collect();
            let (fit, val) = holdout_per_class(&train, &all, es.validation_fraction, &mut rng);
            let (fit, val) = (train.select(&fit), train.select(&val));
            // (validation mAP, candidate, step): the best, first candidate and earliest step
            // winning ties.
            let mut best: Option<(f64, usize, u64)> = None;
            for (ci, learner) in candidates.iter().enumerate() {
                let mut ev = Evaluator {
                    sets: vec![("validation", &val)],
                    k_max: cell.k_max,
                    every_precision: false,
                    map_only: true,
                    statistics: false,
                    final_step: None,
                    records: Vec::new(),
                    eval_seconds: 0.0,
                    last_seconds: 0.0,
                    chance_done: true,
                    sanity: false,
                    on_last: None,
                };
                let schedule = if select_steps || !iterative {
                    checkpoints.clone()
                } else {
                    Schedule::last_only(checkpoints.budget())
                };
                match learner.fit(&fit, &schedule, &mut seeded(solver_seed), &mut ev) {
                    Ok(()) => {}
                    // A candidate that diverges on the hold-out (too large a step: the
                    // papers' naive factored GD) is not chosen; the others still compete.
                    Err(AlgoError::Numerical(_)) if candidates.len() > 1 => {
                        out.selection_seconds += ev.last_seconds;
                        out.eval_seconds += ev.eval_seconds;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                out.selection_seconds += ev.last_seconds;
                out.eval_seconds += ev.eval_seconds;
                for r in &ev.records {
                    if best.is_none_or(|(v, _, _)| r.value > v) {
                        best = Some((r.value, ci, r.step));
                    }
                }
                if candidates.len() == 1 || best.is_some_and(|(_, c, _)| c == ci) {
                    // Keep the validation curve of the (so far) chosen candidate only.
                    out.records.retain(|r| r.set != "validation");
                    out.records.extend(ev.records);
                }
            }
            let (_, ci, step) = best.unwrap_or((0.0, 0, 0));
            if select_steps {
                out.selected_step = Some(step);
            }
            if candidates.len() > 1 {
                out.selected_candidate = Some(ci);
            }
            (
                ci,
                if select_steps {
                    // The untrained model too: every evaluated set has its starting point
                    // (what a band must exclude to catch a learner that does not learn).
                    Schedule::new(vec![0, step])
                } else {
                    checkpoints
                },
            )
        }
        None => (0, checkpoints),
    };

    let mut sets: Vec<(&'static str, &LabeledSet)> = Vec::new();
    for s in &cell.evaluate {
        sets.push((
            s.as_str(),
            match s {
                EvalSet::Train => &train,
                EvalSet::Test => &test,
            },
        ));
    }
    let mut ev = Evaluator {
        sets,
        k_max: cell.k_max,
        every_precision: cell.precision_at_every_checkpoint,
        map_only: false,
        statistics: cell.model_statistics,
        final_step: Some(final_schedule.budget()),
        records: Vec::new(),
        eval_seconds: 0.0,
        last_seconds: 0.0,
        chance_done: false,
        sanity: true,
        on_last,
    };
    candidates[chosen].fit(&train, &final_schedule, &mut seeded(solver_seed), &mut ev)?;
    out.train_seconds = ev.last_seconds;
    out.eval_seconds += ev.eval_seconds;
    out.records.append(&mut ev.records);
    Ok(out)
}
