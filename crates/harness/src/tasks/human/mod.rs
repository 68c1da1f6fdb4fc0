//! The **simulated** human-evaluation task (OASIS spec §7.3, §8.3, §12.3; J-F3B, J-F3C,
//! J-F3D / N-F1a). The paper's volunteers cannot be reproduced: a seeded panel of simulated
//! raters judges, by latent-concept overlap, the neighbours a trained ranker returns on the
//! web stand-in ([`raters`]). Every number this task records is a pipeline check on synthetic
//! data, never a reproduction of the paper's 42 % / 35 %.
//!
//! A cell runs the retrieval task unchanged (same split, early stopping and records, so
//! its automatic metrics equal a `retrieval` cell's); the retrieval run hands its final
//! model to the panel: the 25 most relevant test images are the queries, each shown with its
//! 10 nearest test neighbours and 10 random `R_II = 0` negatives.
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

pub mod raters;

use super::retrieval::{self, RetrievalCell};
use super::{CellOutput, CellProtocol, CellRun, Headline, Metric, Task, TaskInput};
use crate::cache::Record;
use crate::plan::{DatasetInstance, SolverInstance};
use crate::registry::RANKER;
use crate::spec::SpecError;
use dyad_core::{Scorer, derive_seed};
use dyad_datasets::provider::kinds;
use dyad_datasets::web::WebData;
use raters::{Corpus, HumanEvaluation, J_F3C_RANKS, Protocol, RaterPanel};
use serde::{Deserialize, Serialize};

/// The task: `[protocol.human_evaluation]` beside `[protocol.retrieval]`.
pub struct HumanEvaluationTask;

static METRICS: &[Metric] = &[
    Metric {
        name: "map",
        label: "mAP",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "mean average precision (automatic: shared query; set `human`: simulated raters)",
    },
    Metric {
        name: "precision",
        label: "prec",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "precision at the top k (automatic, or judged by the simulated raters)",
    },
    Metric {
        name: "chance",
        label: "chance",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "mAP of a random ranking",
    },
    Metric {
        name: "ap_sd_over_queries",
        label: "SD of AP over queries",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "mean over raters of the SD of AP across queries (§8.3; the paper's 0.33)",
    },
    Metric {
        name: "ap_sd_over_raters",
        label: "SD of AP over raters",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "mean over queries of the SD of AP across raters (§8.3; the paper's 0.25)",
    },
    Metric {
        name: "negatives_marked",
        label: "negatives marked",
        unit: "",
        higher_is_better: false,
        percent: true,
        description: "fraction of the random negatives the raters marked relevant (their noise)",
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
];

impl Task for HumanEvaluationTask {
    fn table(&self) -> &'static str {
        "human_evaluation"
    }
    fn name(&self) -> &'static str {
        "human-evaluation"
    }
    fn version(&self) -> u32 {
        // 2: the retrieval task's tie and empty-row rules (dyad_core::metrics).
        2
    }
    fn description(&self) -> &'static str {
        "the retrieval task, then a SIMULATED rater panel judging the final model's neighbours"
    }
    fn base(&self) -> Option<&'static str> {
        Some("retrieval")
    }
    fn family(&self) -> &'static str {
        RANKER
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::WEB]
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
        &["harness/src/tasks/human/", "harness/src/tasks/retrieval.rs"]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let retrieval = retrieval::plan_cell(input)?;
        let human: HumanCell = input.table("human_evaluation")?;
        Ok(Box::new(HumanPlan { retrieval, human }))
    }
}

/// A plan of the human task: the retrieval protocol and the panel's.
struct HumanPlan {
    retrieval: RetrievalCell,
    human: HumanCell,
}

impl CellProtocol for HumanPlan {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::json!({
            // "ranking": the retrieval task's table when these keys were first made (kept so
            // that cells keep their keys; see `Task::key_name`).
            "ranking": self.retrieval.canonical(solver),
            "human": self.human,
        })
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        self.retrieval.check_data(d)
    }

    fn sets(&self) -> Vec<String> {
        let mut s = self.retrieval.sets();
        s.push("human".into());
        s
    }

    fn steps(&self, solver: &SolverInstance) -> u64 {
        self.retrieval.steps(solver)
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let web = cell.data.get::<WebData>().ok_or_else(|| {
            format!(
                "the human evaluation needs the web stand-in, but `{}` is {}",
                cell.dataset,
                cell.data.kind()
            )
        })?;
        run(
            web,
            &retrieval::rankers(cell)?,
            &self.retrieval.for_solver(cell.solver),
            &self.human,
            cell.seed,
            cell.repeat,
        )
    }
}

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

/// Run one cell: the retrieval task, whose final model the simulated panel then judges
/// (handed over by the retrieval run itself: no retraining).
pub fn run(
    web: &WebData,
    candidates: &[&dyn dyad_kernels::Ranker],
    cell: &RetrievalCell,
    human: &HumanCell,
    seed: u64,
    repeat: u32,
) -> Result<CellOutput, String> {
    // The retrieval task's rows: the panel judges neighbours among the test images.
    let (_, mut test_rows) = cell
        .split_rows(&web.set, seed, repeat)
        .map_err(|e| e.to_string())?;
    test_rows.sort_unstable();
    let panel = RaterPanel {
        seed: derive_seed(seed ^ human.panel.seed, &format!("human/panel/{repeat}")),
        ..human.panel.clone()
    };
    let sizes = Protocol {
        seed: derive_seed(seed ^ human.sizes.seed, &format!("human/sizes/{repeat}")),
        ..human.sizes.clone()
    };
    let panel = panel.draw().map_err(|e| e.to_string())?;
    let mut judged: Option<Result<HumanEvaluation, String>> = None;
    let mut on_last = |model: &dyn Scorer| {
        let corpus = Corpus::web_test(web, &test_rows);
        let rank = raters::scorer_top(model, &web.set, &test_rows, sizes.top);
        judged = Some(raters::evaluate(&panel, &sizes, &corpus, rank).map_err(|e| e.to_string()));
    };
    let mut out = retrieval::run(&web.set, candidates, cell, seed, repeat, Some(&mut on_last))
        .map_err(|e| e.to_string())?;
    let eval = judged.ok_or("the learner reported no final model for the human evaluation")??;
    let final_step = out.records.iter().map(|r| r.step).max().unwrap_or(0);
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
        coord: None,
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
