//! The label-ranking task (OASIS spec §7.1 and §8): draw a per-class train/test split, train
//! the learner on the training images, and at each checkpoint rank every evaluated set
//! against itself (each query excluded from its own ranking), recording mAP, precision@k and
//! the chance level. With early stopping, the number of steps is chosen on a per-class
//! hold-out of the training set and the learner is retrained on the whole training set for
//! that many steps.

use crate::cache::Record;
use crate::spec::{EarlyStopping, EvalSet};
use dyad_algorithms::{AlgoError, Ranker};
use dyad_core::data::holdout_per_class;
use dyad_core::metrics::evaluate_retrieval;
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Schedule, Scorer, derive_seed, seeded};
use serde::Serialize;
use std::time::Instant;

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
pub struct RankingCell {
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

/// What a cell produced.
#[derive(Debug, Clone, Default)]
pub struct RankingOutput {
    pub records: Vec<Record>,
    pub train_seconds: f64,
    pub selection_seconds: f64,
    pub eval_seconds: f64,
    pub selected_step: Option<u64>,
    /// The tuned parameters chosen on the hold-out (index into the candidates).
    pub selected_candidate: Option<usize>,
}

/// Evaluates each reported model on a list of named sets, off the solver clock.
struct Evaluator<'a> {
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
}

impl Observer for Evaluator<'_> {
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
                value,
            };
            self.records.push(rec("map", None, r.map));
            if !self.chance_done && !self.map_only {
                self.records.push(rec("chance", None, r.chance));
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
                    value,
                });
            }
        }
        self.chance_done = true;
        self.last_seconds = at.solver_seconds;
        self.eval_seconds += t.elapsed().as_secs_f64();
        Control::Continue
    }
}

/// Run one cell of the label-ranking task. `candidates` are the learners to choose from on
/// the hold-out (one when nothing is tuned); with early stopping the choice also covers the
/// number of steps of iterative learners.
pub fn run(
    data: &LabeledSet,
    candidates: &[&dyn Ranker],
    cell: &RankingCell,
    seed: u64,
    repeat: u32,
) -> Result<RankingOutput, AlgoError> {
    let mut split_rng = seeded(derive_seed(seed, &format!("split/{repeat}")));
    let (train_idx, test_idx) = match cell.split {
        SplitCell::PerClass { train, test } => data.per_class_split(train, test, &mut split_rng)?,
        SplitCell::Official {
            max_train,
            max_test,
        } => data.official_split(max_train, max_test, &mut split_rng)?,
    };
    let train = data.select(&train_idx);
    let test = data.select(&test_idx);
    let solver_seed = derive_seed(seed, &format!("solver/{repeat}"));
    let mut out = RankingOutput::default();
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
                };
                let schedule = if select_steps || !iterative {
                    checkpoints.clone()
                } else {
                    Schedule::last_only(checkpoints.budget())
                };
                learner.fit(&fit, &schedule, &mut seeded(solver_seed), &mut ev)?;
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
                    Schedule::last_only(step)
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
    };
    candidates[chosen].fit(&train, &final_schedule, &mut seeded(solver_seed), &mut ev)?;
    out.train_seconds = ev.last_seconds;
    out.eval_seconds += ev.eval_seconds;
    out.records.append(&mut ev.records);
    Ok(out)
}
