//! The label-ranking-per-example task, table `[protocol.label_ranking]`: a [`LabelRanker`]
//! learns, from training rows with their label sets, to score every label for an example; at
//! each checkpoint every test row ranks all labels and its own labels are the relevant ones
//! (LORETA §3.2: ImageNet images ranking their leaf and its WordNet ancestors; on single-label
//! data, a row's class). Records per evaluated set: `map` (mean over rows of the AP of the
//! label ranking), `precision` at k = 1..=`k_max` (at the last checkpoint, or every one) and
//! `chance` (relevant labels / labels, the AP expected of a random ranking).
//!
//! The split is the retrieval task's (per class, or the official parts), drawn with the same
//! seeds. Learners run their whole schedule (no early stopping). A solver's `tune` grid
//! needs `tuning = { validation_fraction = f }`: a uniformly drawn fraction `f` of the
//! training rows is held out (rows carry several labels, so the draw is not per class), every
//! candidate trains on the rest to the last checkpoint, and the one with the best validation
//! label mAP (the first on ties) is retrained on all training rows, as the papers'
//! cross-validated step sizes (LORETA spec §2.9). A candidate that diverges on the hold-out is
//! not chosen. It is the second task of the harness and one of the larger examples that
//! `docs/extending.md` ("A new task") points to.

use super::retrieval::{EvalSet, SplitCell, check_split};
use super::{CellOutput, CellProtocol, CellRun, Headline, Metric, Task, TaskInput};
use crate::cache::Record;
use crate::plan::{DatasetInstance, SolverInstance};
use crate::profile::PerProfile;
use crate::registry::LABEL_RANKER;
use crate::spec::SpecError;
use dyad_core::metrics::{QueryRanking, rank_query, summarize};
use dyad_core::{
    Checkpoint, Control, LabelScorer, LabeledSet, Observer, Schedule, derive_seed, seeded,
};
use dyad_datasets::provider::kinds;
use dyad_kernels::{LabelRanker, n_labels, row_labels};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The task.
pub struct LabelRankingTask;

static METRICS: &[Metric] = &[
    Metric {
        name: "map",
        label: "label mAP",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "mean over examples of the average precision of their label ranking",
    },
    Metric {
        name: "precision",
        label: "label prec",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "fraction of an example's top-k labels that are its own, averaged",
    },
    Metric {
        name: "chance",
        label: "chance",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "an example's labels over all labels: a random ranking's expected AP",
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
        k: Some(5),
    },
];

impl Task for LabelRankingTask {
    fn table(&self) -> &'static str {
        "label_ranking"
    }
    fn name(&self) -> &'static str {
        "label-ranking"
    }
    fn key_name(&self) -> &'static str {
        // Its name until the task names were made to say what they are: every cell key
        // computed since hashes it.
        "labels-per-example"
    }
    fn version(&self) -> u32 {
        // 2: ties scored as the expectation over the orders of tied labels (a zero start
        // scores every label alike: it now sits at chance, dyad_core::metrics).
        2
    }
    fn description(&self) -> &'static str {
        "rank every label for each held-out example; relevant = the example's own labels"
    }
    fn family(&self) -> &'static str {
        LABEL_RANKER
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::LABELLED, kinds::MULTI_LABEL]
    }
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        HEADLINE
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/label_ranking.rs",
            "harness/src/tasks/retrieval.rs",
            "core/src/metrics.rs",
            "core/src/data.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: LabelRankingProtocol = input.table("label_ranking")?;
        let at = |v: &Option<PerProfile<usize>>| v.as_ref().map(|v| *v.at(input.profile));
        if p.k_max == 0 {
            return Err(input.error(
                &["label_ranking", "k_max"],
                "key `protocol.label_ranking.k_max`: must be at least 1".into(),
            ));
        }
        let split = match (at(&p.train_per_class), at(&p.test_per_class)) {
            (Some(train), Some(test)) if train >= 1 && test >= 1 => {
                SplitCell::PerClass { train, test }
            }
            (None, None) => SplitCell::Official {
                max_train: at(&p.max_train),
                max_test: at(&p.max_test),
            },
            _ => {
                return Err(input.error(
                    &["label_ranking", "train_per_class"],
                    "key `protocol.label_ranking`: give both `train_per_class` and \
                     `test_per_class` (at least 1 each), or neither for the official parts"
                        .into(),
                ));
            }
        };
        if let Some(t) = &p.tuning
            && !(t.validation_fraction > 0.0 && t.validation_fraction < 1.0)
        {
            return Err(input.error(
                &["label_ranking", "tuning"],
                format!(
                    "key `protocol.label_ranking.tuning.validation_fraction`: must lie in (0, 1), got {}",
                    t.validation_fraction
                ),
            ));
        }
        if p.tuning.is_none() {
            input.refuse_tune(
                "key `solvers.tune`: tuning needs `protocol.label_ranking.tuning` (its hold-out)",
            )?;
        }
        Ok(Box::new(LabelRankingCell {
            tuning: p.tuning,
            split,
            evaluate: p.evaluate,
            k_max: p.k_max,
            precision_at_every_checkpoint: p.precision_at_every_checkpoint,
            checkpoints: input.checkpoints.clone(),
        }))
    }
}

/// `[protocol.label_ranking]` as written in a spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelRankingProtocol {
    /// Training rows per class (with `test_per_class`); absent: the official parts.
    #[serde(default)]
    pub train_per_class: Option<PerProfile<usize>>,
    #[serde(default)]
    pub test_per_class: Option<PerProfile<usize>>,
    /// Official parts: at most this many training rows.
    #[serde(default)]
    pub max_train: Option<PerProfile<usize>>,
    #[serde(default)]
    pub max_test: Option<PerProfile<usize>>,
    #[serde(default = "test_only")]
    pub evaluate: Vec<EvalSet>,
    #[serde(default = "five")]
    pub k_max: usize,
    #[serde(default)]
    pub precision_at_every_checkpoint: bool,
    /// The hold-out on which a solver's `tune` grid is decided.
    #[serde(default)]
    pub tuning: Option<Tuning>,
}

/// `tuning = { validation_fraction = 0.2 }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tuning {
    /// Fraction of the training rows held out for validation.
    pub validation_fraction: f64,
}

fn test_only() -> Vec<EvalSet> {
    vec![EvalSet::Test]
}
fn five() -> usize {
    5
}

/// The protocol of one cell (hashed into its key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelRankingCell {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tuning: Option<Tuning>,
    pub split: SplitCell,
    pub evaluate: Vec<EvalSet>,
    pub k_max: usize,
    pub precision_at_every_checkpoint: bool,
    /// Empty for learners without steps.
    pub checkpoints: Vec<u64>,
}

impl LabelRankingCell {
    fn for_solver(&self, solver: &SolverInstance) -> LabelRankingCell {
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

impl CellProtocol for LabelRankingCell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self.for_solver(solver)).expect("serializable")
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        check_split(&self.split, d)
    }

    fn sets(&self) -> Vec<String> {
        self.evaluate
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()
    }

    fn steps(&self, solver: &SolverInstance) -> u64 {
        let budget = self
            .for_solver(solver)
            .checkpoints
            .last()
            .copied()
            .unwrap_or(0);
        // Each tuned candidate on the hold-out, then the final run.
        let runs = match (self.tuning, solver.tune.len()) {
            (Some(_), n) if n > 1 => n as u64 + 1,
            _ => 1,
        };
        budget.saturating_mul(runs)
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let data = super::retrieval::labelled(cell.data)?;
        let learners = cell
            .candidates
            .iter()
            .map(|b| {
                b.family::<dyn LabelRanker>()
                    .ok_or_else(|| format!("solver `{}` is not a label ranker", cell.solver.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let c = self.for_solver(cell.solver);
        let mut rng = seeded(derive_seed(cell.seed, &format!("split/{}", cell.repeat)));
        let (train_idx, test_idx) = match c.split {
            SplitCell::PerClass { train, test } => data.per_class_split(train, test, &mut rng),
            SplitCell::Official {
                max_train,
                max_test,
            } => data.official_split(max_train, max_test, &mut rng),
        }
        .map_err(|e| e.to_string())?;
        let (train, test) = (data.select(&train_idx), data.select(&test_idx));
        let labels = n_labels(&data);
        let solver_seed = derive_seed(cell.seed, &format!("solver/{}", cell.repeat));
        let (chosen, selection_seconds) = match (c.tuning, learners.len()) {
            (Some(t), n) if n > 1 => {
                let mut rng = seeded(derive_seed(cell.seed, &format!("holdout/{}", cell.repeat)));
                let (fit, val) = holdout(&train, t.validation_fraction, &mut rng);
                let (fit, val) = (train.select(&fit), train.select(&val));
                let budget = if learners[0].is_iterative() {
                    Schedule::last_only(c.checkpoints.last().copied().unwrap_or(0))
                } else {
                    Schedule::new(vec![0])
                };
                let (mut best, mut seconds) = (None::<(f64, usize)>, 0.0);
                for (ci, l) in learners.iter().enumerate() {
                    let mut ev = Evaluate {
                        sets: vec![("validation", &val)],
                        labels,
                        k_max: c.k_max,
                        every_precision: false,
                        records: Vec::new(),
                        eval_seconds: 0.0,
                        last_seconds: 0.0,
                    };
                    match l.fit(&fit, &budget, &mut seeded(solver_seed), &mut ev) {
                        Ok(()) => {}
                        Err(dyad_kernels::AlgoError::Numerical(_)) => {
                            seconds += ev.last_seconds;
                            continue;
                        }
                        Err(e) => return Err(e.to_string()),
                    }
                    seconds += ev.last_seconds;
                    let map = ev
                        .records
                        .iter()
                        .rfind(|r| r.metric == "map")
                        .map_or(f64::NEG_INFINITY, |r| r.value);
                    if best.is_none_or(|(v, _)| map > v) {
                        best = Some((map, ci));
                    }
                }
                (Some(best.map_or(0, |(_, ci)| ci)), seconds)
            }
            _ => (None, 0.0),
        };
        let learner = learners[chosen.unwrap_or(0)];
        let schedule = if learner.is_iterative() {
            Schedule::new(c.checkpoints.clone())
        } else {
            Schedule::new(vec![0])
        };
        let sets: Vec<(&'static str, &LabeledSet)> = c
            .evaluate
            .iter()
            .map(|s| {
                (
                    s.as_str(),
                    match s {
                        EvalSet::Train => &train,
                        EvalSet::Test => &test,
                    },
                )
            })
            .collect();
        let mut ev = Evaluate {
            sets,
            labels,
            k_max: c.k_max,
            every_precision: c.precision_at_every_checkpoint,
            records: Vec::new(),
            eval_seconds: 0.0,
            last_seconds: 0.0,
        };
        learner
            .fit(&train, &schedule, &mut seeded(solver_seed), &mut ev)
            .map_err(|e| e.to_string())?;
        Ok(CellOutput {
            records: ev.records,
            train_seconds: ev.last_seconds,
            selection_seconds,
            eval_seconds: ev.eval_seconds,
            selected_candidate: chosen,
            ..CellOutput::default()
        })
    }
}

/// A uniform draw of `fraction` of `set`'s rows (at least one, and at least one left) as the
/// validation part: (fit rows, validation rows), each in row order.
fn holdout(set: &LabeledSet, fraction: f64, rng: &mut dyad_core::Rng) -> (Vec<usize>, Vec<usize>) {
    use rand::seq::SliceRandom;
    let n = set.n();
    let mut rows: Vec<usize> = (0..n).collect();
    rows.shuffle(rng);
    let v = ((n as f64 * fraction).round() as usize).clamp(1.min(n), n.saturating_sub(1));
    let (mut val, mut fit) = (rows[..v].to_vec(), rows[v..].to_vec());
    val.sort_unstable();
    fit.sort_unstable();
    (fit, val)
}

/// Ranks every label for every row of each set, off the solver clock.
struct Evaluate<'a> {
    sets: Vec<(&'static str, &'a LabeledSet)>,
    labels: usize,
    k_max: usize,
    every_precision: bool,
    records: Vec<Record>,
    eval_seconds: f64,
    last_seconds: f64,
}

/// The label rankings of every row of `set` (rows scored in parallel; the result does not
/// depend on the thread count).
pub fn rank_labels(
    model: &dyn LabelScorer,
    set: &LabeledSet,
    labels: usize,
    k_max: usize,
) -> Vec<QueryRanking> {
    (0..set.n())
        .into_par_iter()
        .map_init(
            || (vec![0.0; labels], vec![false; labels]),
            |(scores, relevant), i| {
                let row = set.x.outer_view(i).expect("row in range");
                scores.iter_mut().for_each(|s| *s = f64::NEG_INFINITY);
                let n = model.n_labels().min(labels);
                model.score_labels(row, &mut scores[..n]);
                relevant.iter_mut().for_each(|r| *r = false);
                for &l in row_labels(set, i) {
                    relevant[l as usize] = true;
                }
                rank_query(scores, relevant, None, k_max)
            },
        )
        .collect()
}

impl Observer<dyn LabelScorer> for Evaluate<'_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn LabelScorer) -> Control {
        let t = Instant::now();
        let with_precision = self.every_precision || at.last;
        for &(name, set) in &self.sets {
            let r = summarize(
                &rank_labels(model, set, self.labels, self.k_max),
                self.k_max,
            );
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
            if at.step == 0 || with_precision {
                self.records.push(rec("chance", None, r.chance));
            }
            if with_precision {
                for (k, p) in r.precision.iter().enumerate() {
                    self.records.push(rec("precision", Some(k as u32 + 1), *p));
                }
            }
        }
        self.last_seconds = at.solver_seconds;
        self.eval_seconds += t.elapsed().as_secs_f64();
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_loreta::baselines::centroid::Centroids;

    #[test]
    fn label_rankings_are_scored_against_each_rows_labels() {
        // Two well-separated labels: the centroid ranker puts each row's own label first.
        let rows = vec![
            vec![1.0, 0.0],
            vec![0.9, 0.1],
            vec![0.0, 1.0],
            vec![0.1, 0.9],
        ];
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 0, 1, 1], 2);
        let m = Centroids::fit(&set);
        let r = summarize(&rank_labels(&m, &set, 2, 2), 2);
        assert_eq!((r.map, r.precision[0], r.chance), (1.0, 1.0, 0.5));
        // Rows whose labels are both labels: every ranking is perfect, chance 1.
        let both = set.clone().with_relevance(vec![vec![0, 1]; 4]).unwrap();
        let r = summarize(&rank_labels(&m, &both, 2, 2), 2);
        assert_eq!((r.map, r.chance), (1.0, 1.0));
        // A scorer that ranks the wrong label first: AP 1/2 per row.
        struct Wrong;
        impl LabelScorer for Wrong {
            fn n_labels(&self) -> usize {
                2
            }
            fn dim(&self) -> usize {
                2
            }
            fn score_labels(&self, q: sprs::CsVecView<'_, f64>, out: &mut [f64]) {
                let first = q.get(0).copied().unwrap_or(0.0) > 0.5;
                out.copy_from_slice(if first { &[0.0, 1.0] } else { &[1.0, 0.0] });
            }
        }
        let r = summarize(&rank_labels(&Wrong, &set, 2, 1), 1);
        assert_eq!((r.map, r.precision[0]), (0.5, 0.0));
    }
}
