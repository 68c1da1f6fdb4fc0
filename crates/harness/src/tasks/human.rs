//! The **simulated** human-evaluation task (OASIS spec §7.3, §8.3, §12.3; J-F3B, J-F3C,
//! J-F3D / N-F1a). The paper's volunteers cannot be reproduced: a seeded panel of simulated
//! raters judges, by latent-concept overlap, the neighbours a trained ranker returns on the
//! web stand-in (`dyad_datasets::synthetic::raters`). Every number this task records is a
//! pipeline check on synthetic data, never a reproduction of the paper's 42 % / 35 %.
//!
//! A cell runs the label-ranking task unchanged (same split, early stopping and records, so
//! its automatic metrics equal a `label-ranking` cell's), then retrains the chosen learner
//! for the chosen number of steps — training is deterministic in the seeds, so this is the
//! same model — and hands the final model to the panel: the 25 most relevant test images are
//! the queries, each shown with its 10 nearest test neighbours and 10 random `R_II = 0`
//! negatives. The retraining doubles the final run's cost; it keeps the ranking task (and
//! so every other cell's key) untouched.
//!
//! Records (all at the final step):
//! * set `human`, `precision` at k = 1..=top: precision over queries and raters (J-F3B);
//!   `map`, `ap_sd_over_queries` and `ap_sd_over_raters` (§8.3: the paper's 0.33 / 0.25) and
//!   `negatives_marked` (the fraction of negatives judged relevant: the raters' noise).
//! * set `human: query at mAP rank r` for r = 1, 6, 11, 16, 21: `precision` at k, one record
//!   **per rater** (J-F3C; the harness's curves pool them, so error bars are the s.e.m. over
//!   raters as in the paper's figure).
//! * sets `per query: raters` and `per query: ranker`: `precision` with k = the query's
//!   position when sorted by human precision, best first (J-F3D): the raters' mean precision
//!   against the other raters, and the ranker's precision against all raters (queries where
//!   no rater marked anything have no human precision and are left out).

use crate::cache::Record;
use crate::tasks::ranking::{self, RankingCell, RankingOutput, SplitCell};
use dyad_algorithms::{AlgoError, Ranker};
use dyad_core::{Checkpoint, Control, Observer, Schedule, Scorer, derive_seed, seeded};
use dyad_datasets::synthetic::raters::{
    self, Corpus, HumanEvaluation, J_F3C_RANKS, Protocol, RaterPanel,
};
use dyad_datasets::synthetic::web::WebData;
use serde::{Deserialize, Serialize};

/// The human-evaluation protocol of a cell (hashed into its key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanCell {
    /// The simulated panel: 20 raters (\[J\]) by default. Its `seed` is combined with the
    /// spec's seed and the repeat index.
    #[serde(default)]
    pub panel: RaterPanel,
    /// Queries, ranked neighbours shown and random negatives per query (§7.3: 25, 10, 10).
    /// Its `seed` is combined like the panel's.
    #[serde(default)]
    pub sizes: Protocol,
}

/// The set name of the J-F3C query at 1-based mAP rank `rank`.
pub fn selected_query_set(rank: usize) -> String {
    format!("human: query at mAP rank {rank}")
}

/// Set names of J-F3D.
pub const HUMAN_PER_QUERY: &str = "per query: raters";
pub const RANKER_PER_QUERY: &str = "per query: ranker";

/// Runs the panel on the final model.
struct Panel<'a> {
    web: &'a WebData,
    test_rows: Vec<usize>,
    panel: raters::Panel,
    sizes: Protocol,
    result: Option<Result<HumanEvaluation, String>>,
}

impl Observer for Panel<'_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
        if at.last {
            let corpus = Corpus::web_test(self.web, &self.test_rows);
            let rank = raters::scorer_top(model, &self.web.set, &self.test_rows, self.sizes.top);
            self.result = Some(
                raters::evaluate(&self.panel, &self.sizes, &corpus, rank)
                    .map_err(|e| e.to_string()),
            );
        }
        Control::Continue
    }
}

/// Run one cell: the label-ranking task, then the simulated panel on its final model.
pub fn run(
    web: &WebData,
    candidates: &[&dyn Ranker],
    cell: &RankingCell,
    human: &HumanCell,
    seed: u64,
    repeat: u32,
) -> Result<RankingOutput, String> {
    let err = |e: AlgoError| e.to_string();
    let data = &web.set;
    let mut out = ranking::run(data, candidates, cell, seed, repeat).map_err(err)?;

    // The same rows and learner seed as the ranking task (see `ranking::run`). Written again
    // here rather than shared: moving it into `ranking.rs` would change that file's
    // fingerprint and so every cached cell's key; share it when the cache is rebuilt anyway.
    let mut split_rng = seeded(derive_seed(seed, &format!("split/{repeat}")));
    let (train_idx, mut test_idx) = match cell.split {
        SplitCell::PerClass { train, test } => data.per_class_split(train, test, &mut split_rng),
        SplitCell::Official {
            max_train,
            max_test,
        } => data.official_split(max_train, max_test, &mut split_rng),
    }
    .map_err(|e| e.to_string())?;
    test_idx.sort_unstable();
    let train = data.select(&train_idx);
    let solver_seed = derive_seed(seed, &format!("solver/{repeat}"));
    let learner = candidates[out.selected_candidate.unwrap_or(0)];
    let steps = match out.selected_step {
        Some(s) => s,
        None if learner.is_iterative() => cell.checkpoints.iter().copied().max().unwrap_or(0),
        None => 0,
    };
    let panel = RaterPanel {
        seed: derive_seed(seed ^ human.panel.seed, &format!("human/panel/{repeat}")),
        ..human.panel.clone()
    };
    let sizes = Protocol {
        seed: derive_seed(seed ^ human.sizes.seed, &format!("human/sizes/{repeat}")),
        ..human.sizes.clone()
    };
    let mut obs = Panel {
        web,
        test_rows: test_idx,
        panel: panel.draw().map_err(|e| e.to_string())?,
        sizes,
        result: None,
    };
    learner
        .fit(
            &train,
            &Schedule::last_only(steps),
            &mut seeded(solver_seed),
            &mut obs,
        )
        .map_err(err)?;
    let eval = obs
        .result
        .ok_or("the learner reported no final model for the human evaluation")??;
    let final_step = out.records.iter().map(|r| r.step).max().unwrap_or(steps);
    out.records.extend(records(&eval, final_step));
    Ok(out)
}

/// The records of a finished evaluation (see the module documentation).
pub fn records(eval: &HumanEvaluation, step: u64) -> Vec<Record> {
    let rep = &eval.report;
    let rec = |set: &str, metric: &str, k: Option<u32>, value: f64| Record {
        set: set.to_string(),
        metric: metric.to_string(),
        step,
        seconds: 0.0,
        k,
        value,
    };
    let mut out = Vec::new();
    for (k, p) in rep.precision.iter().enumerate() {
        out.push(rec("human", "precision", Some(k as u32 + 1), *p));
    }
    out.push(rec("human", "map", None, rep.spread.map));
    out.push(rec(
        "human",
        "ap_sd_over_queries",
        None,
        rep.spread.sd_over_queries,
    ));
    out.push(rec(
        "human",
        "ap_sd_over_raters",
        None,
        rep.spread.sd_over_raters,
    ));
    out.push(rec("human", "negatives_marked", None, rep.negative_marked));
    for (&q, &rank) in rep.selected.iter().zip(J_F3C_RANKS.iter()) {
        let set = selected_query_set(rank);
        for marks in eval.judged[q].ranked() {
            let mut hits = 0usize;
            for (k, &m) in marks.iter().enumerate() {
                hits += usize::from(m);
                out.push(rec(
                    &set,
                    "precision",
                    Some(k as u32 + 1),
                    hits as f64 / (k + 1) as f64,
                ));
            }
        }
    }
    let mut per_query: Vec<(f64, f64)> = rep
        .agreement
        .iter()
        .filter_map(|a| a.human.map(|h| (h, a.ranker)))
        .collect();
    per_query.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (i, (h, r)) in per_query.into_iter().enumerate() {
        let k = Some(i as u32 + 1);
        out.push(rec(HUMAN_PER_QUERY, "precision", k, h));
        out.push(rec(RANKER_PER_QUERY, "precision", k, r));
    }
    out
}
