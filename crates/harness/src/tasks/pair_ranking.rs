//! The pair-ranking task of the tensor-ranking paper, table `[protocol.pair_ranking]` (spec
//! `manifold-tensor.md` §3.11, §4.1, §5; Fig. 2): a [`PairRanker`] learns scores of every
//! point from labelled pairs, and each cell records Kendall's τ of the scores against the
//! ground-truth order.
//!
//! # What a cell does
//!
//! A cell is one (data set, solver, repeat). Its points are the data set's (for labelled rows
//! such as MNIST: the official training part, "MNIST (training set)", with class `c` ranked
//! `C − 1 − c`, "digit 1 has a higher rank than 2"), optionally a uniform subsample of
//! `max_points` drawn per repeat. The kNN graph of the points is computed at the largest `k`
//! of the solver's candidates, off the solver clock (recorded as `knn_seconds`), **once per
//! data set, points and `k`** (shared through [`Data::derived`] by every cell on the same
//! points: at the paper profile SSR, TR and KR of all ten repeats of MNIST share one search
//! of the 60,000 points instead of thirty), and handed to every fit
//! (`PairInput::neighbours`); each method builds its
//! Laplacian (Eq. 16) from it inside its own clock. Then, for every value of the panel's x
//! axis (Fig. 2):
//!
//! * **class-order data** (`labels_per_class = [l, ...]`, x = `labels_per_class`): the §4.1
//!   protocol draws `l` pairs per unordered class pair (oriented by the class order) and `l`
//!   within-class equality pairs per class as training labels, and a **validation label set of
//!   the same size**, drawn the same way and disjoint from them (§3.11 \[OURS\]);
//! * **attribute data** (x = `attribute`, 1-based): per repeat, `train_per_category` points per
//!   category (5, §4.1 \[OURS for the stand-in\]) and as many other points per category for
//!   validation; per attribute, all pairwise relations among the training points are the
//!   training labels (inequality where the category strengths differ, equality where they are
//!   equal, within a category included), and likewise among the validation points.
//!
//! Every candidate of the solver (its `tune` grid: λ, k, DR's width) is trained on the
//! training labels, transductively on all points; the one whose scores order the validation
//! inequality pairs best (τ on the validation pairs, §3.11 \[OURS\]; the first on ties) is
//! kept. For a solver with its own checkpoint grid whose step count is chosen (the spec's
//! default `early_stopping = true`, used for DR's epochs ∈ {10, 20, 50, 100}: one run's
//! checkpoints are the epoch grid, spec §3.10), the choice is over (candidate, checkpoint);
//! with `early_stopping = false` (RS, SSR, TR, KR: convex solvers run to convergence, and
//! low-rank KR to its stopping rule) over candidates at their final model. Validation labels
//! are never training labels; nothing is retrained, since the candidates already trained on
//! all the training labels.
//!
//! With `warm_start = true` (default false), a solver whose candidates can start from another
//! candidate's model ([`PairRanker::warm_starts`]: TR) fits each group of candidates that
//! differ only in `lambda` along its `λ` path, from the largest `λ` down, each from the
//! previous one's solution: the problem is convex, so each candidate reaches the same optimum
//! (to the Newton tolerance) in fewer iterations; the choice is still over the candidates in
//! the grid's order. The untrained reading (below) is then the cold start of the path's first
//! candidate. The flag enters the cell's key only for such a solver.
//!
//! # Records
//!
//! Per x value (coordinate `labels_per_class` or `attribute`):
//!
//! * `tau` on set `all` (every point, the primary reading, §5 \[OURS\]) and on set
//!   `unlabelled` (points in no training **and** no validation pair);
//! * `validation_tau` (set `validation`): the chosen model's τ on the validation pairs;
//! * `chosen_<param>` (set `validation`) for every tuned numeric parameter (`chosen_lambda`,
//!   `chosen_k`, `chosen_width`, ...), and `chosen_step` when steps are chosen (DR's epochs,
//!   among the checkpoints after set-up: the untrained network is no candidate): the
//!   hyper-parameters §3.11 selects, per x value (the cell's `tuned` column shows the
//!   candidate chosen most often);
//! * `tau_sign` (set `all`, KR methods only): τ with each pair ordered by the sign of the
//!   learned `K_ij` instead of the read-out `f*` (spec §3.8's secondary reading: the paper
//!   reads `f*` "for fair comparison", which "slightly reduced the performance"), over a
//!   uniform subset of at most 1,000 points drawn per cell (`O(s²p)` pairs, not `O(n²p)`);
//! * `stationarity` (set `all`, full KR only): `‖∇E(K)‖_F / ‖∇E(0)‖_F` of the chosen run,
//!   the evidence that the convex full-KR fit reached its optimum (issue 42 §4; the report's
//!   tuning-and-convergence line gives its largest value over the fits);
//! * `solver_seconds`, `iterations` and, between the run's first report (after its set-up:
//!   Laplacian, ordering) and its last, `seconds_per_iteration` and `trials_per_iteration`
//!   (low-rank KR: Armijo trials; Newton solvers: CG iterations; DR: minibatches) of the
//!   chosen run (set `all`). For low-rank KR an iteration is one gradient plus its trial
//!   objectives: the speed spec's time per gradient.
//!
//! When the chosen model is not the run's first report, `tau` is also recorded at that first
//! report (step 0: the untrained model after set-up; RS's `w = 0`, KR's `B = ones` give
//! `τ = 0`), and so is `tau_mean`: what a CI band must exclude to catch a learner that does
//! not learn.
//!
//! Per cell (no coordinate): `tau_mean` (sets `all` and `unlabelled`), the mean of `tau` over
//! the panel's x values, for claims, tables and CI bands; `knn_seconds` (set `all`).
//!
//! τ on a set without an inequality pair is **undefined**, not 0: when every point is labelled
//! (DTD's stand-in at l = 30, and at l = 10 in most repeats) no `unlabelled` record is written
//! for that x value, `tau_mean` averages the x values where τ is defined, and
//! `tau_undefined` (set `unlabelled`, per cell, only when non-zero) says how many were not.
//! Tables then show the number of repeats behind each mean (`n = …`).
//!
//! # What the harness cannot draw (reported, not worked around)
//!
//! Fig. 2's y axis is the **improvement over RS** (`mean τ_method − mean τ_RS`, error bars
//! ±1 SD of the method or of the paired difference, spec §5 \[AMBIGUOUS\]). The harness plots
//! a metric per solver; a difference to a reference solver, paired by repeat, is a generic
//! plot feature it lacks (plots.rs). The specs therefore plot τ itself (RS as one of the
//! lines), and the paired differences are what the claims judge (`greater` is paired by
//! repeat).

use super::{CellOutput, CellProtocol, CellRun, Headline, Memory, Metric, Task, TaskInput};
use crate::cache::{Coord, Record};
use crate::plan::{DatasetInstance, SolverInstance};
use crate::profile::PerProfile;
use crate::registry::PAIR_RANKER;
use crate::spec::SpecError;
use dyad_core::kendall::{kendall_counts, kendall_tau, tau_on_pairs};
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Schedule, derive_seed, seeded};
use dyad_datasets::pair_ranking::{ORDERED, Order, OrderedSet};
use dyad_datasets::provider::{Data, kinds};
use dyad_kernels::AlgoError;
use dyad_tensor_rank::low_rank::q_right;
use dyad_tensor_rank::synthetic::{attribute_pairs, class_pairs};
use dyad_tensor_rank::{PairInput, PairKernel, PairModel, PairRanker, Pairs, knn};
use ndarray::Array2;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// The task.
pub struct PairRankingTask;

/// The records' coordinate on class-order data: labels per class `l`.
pub const LABELS_PER_CLASS: &str = "labels_per_class";
/// The records' coordinate on attribute data: the attribute's index (1-based).
pub const ATTRIBUTE: &str = "attribute";

static METRICS: &[Metric] = &[
    Metric {
        name: "tau",
        label: "Kendall tau",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "Kendall's rank correlation on all inequality pairs of the set's points: (correct - incorrect) / pairs (spec §5), at one x value",
    },
    Metric {
        name: "tau_sign",
        label: "tau from sign(K)",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "KR methods: tau with each pair ordered by the sign of the learned K_ij instead of the read-out f* (spec §3.8, secondary), over a uniform subset of at most 1,000 points",
    },
    Metric {
        name: "tau_mean",
        label: "mean tau",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "tau averaged over the panel's x values (labels per class, or attributes) where it is defined",
    },
    Metric {
        name: "tau_undefined",
        label: "x values without tau",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "x values where the set holds no inequality pair (every point labelled): tau is undefined there, left out of tau_mean; recorded only when non-zero",
    },
    Metric {
        name: "validation_tau",
        label: "validation tau",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "tau of the chosen model on the validation inequality pairs (the selection criterion, §3.11)",
    },
    Metric {
        name: "chosen_lambda",
        label: "chosen lambda",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "the regularisation weight chosen on the validation pairs",
    },
    Metric {
        name: "chosen_k",
        label: "chosen k",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "the number of graph neighbours chosen on the validation pairs",
    },
    Metric {
        name: "chosen_width",
        label: "chosen width",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "DR's layer width chosen on the validation pairs",
    },
    Metric {
        name: "chosen_step",
        label: "chosen step",
        unit: "steps",
        higher_is_better: true,
        percent: false,
        description: "the checkpoint chosen on the validation pairs (DR: epochs)",
    },
    Metric {
        name: "solver_seconds",
        label: "solver s",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "solver seconds of the chosen run (graph search excluded)",
    },
    Metric {
        name: "iterations",
        label: "iterations",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "solver iterations of the chosen run (Newton iterations, gradient steps, epochs)",
    },
    Metric {
        name: "stationarity",
        label: "‖∇E‖/‖∇E(0)‖",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "full KR: the stationarity residual of the chosen run, its gradient norm relative to the start K = 0",
    },
    Metric {
        name: "seconds_per_iteration",
        label: "s/iteration",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "solver seconds per iteration after set-up (low-rank KR: one gradient and its Armijo trials)",
    },
    Metric {
        name: "trials_per_iteration",
        label: "inner/iteration",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "inner work per iteration (low-rank KR: Armijo trials; Newton: CG iterations; DR: minibatches)",
    },
    Metric {
        name: "knn_seconds",
        label: "kNN s",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "seconds of the exact kNN search of the cell's points (off the solver clock; computed once per data set, points and k and shared by the cells on the same points)",
    },
];

static HEADLINE: &[Headline] = &[Headline {
    metric: "tau_mean",
    k: None,
}];

impl Task for PairRankingTask {
    fn table(&self) -> &'static str {
        "pair_ranking"
    }
    fn name(&self) -> &'static str {
        "pair-ranking"
    }
    fn version(&self) -> u32 {
        // 2: with steps chosen (DR's epochs), the untrained model (step 0) is no candidate.
        // 3: τ on an unlabelled set without a pair is undefined (no record), not 0.
        3
    }
    fn carries(&self) -> &'static [super::Carry] {
        &[super::Carry {
            from_version: 2,
            unchanged: v2_has_no_empty_set,
            why: "version 2 wrote tau = 0 exactly for an unlabelled set without a pair; a cell whose chosen unlabelled taus are all non-zero had none, and version 3 records the same",
        }]
    }
    fn description(&self) -> &'static str {
        "scores of all points from labelled pairs (tensor-ranking §4.1); Kendall tau against the true order, hyper-parameters chosen on validation pairs"
    }
    fn family(&self) -> &'static str {
        PAIR_RANKER
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[ORDERED, kinds::LABELLED]
    }
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        HEADLINE
    }
    fn coordinates(&self) -> &'static [&'static str] {
        &[LABELS_PER_CLASS, ATTRIBUTE]
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/pair_ranking.rs",
            "core/src/kendall.rs",
            "tensor-rank/src/synthetic.rs",
            "tensor-rank/src/graph.rs",
            "datasets/src/pair_ranking/mod.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: PairRankingProtocol = input.table("pair_ranking")?;
        let err = |key: &str, msg: String| input.error(&["pair_ranking", key], msg);
        let labels = p.labels_per_class.at(input.profile).clone();
        if labels.is_empty() || labels.contains(&0) {
            return Err(err(
                "labels_per_class",
                "key `protocol.pair_ranking.labels_per_class`: give at least one value, each at least 1".into(),
            ));
        }
        if p.train_per_category == 0 {
            return Err(err(
                "train_per_category",
                "key `protocol.pair_ranking.train_per_category`: must be at least 1".into(),
            ));
        }
        let attributes = p.attributes.at(input.profile).clone();
        if attributes.contains(&0) {
            return Err(err(
                "attributes",
                "key `protocol.pair_ranking.attributes`: attributes are numbered from 1".into(),
            ));
        }
        let max_points = p.max_points.as_ref().map(|v| *v.at(input.profile));
        if max_points.is_some_and(|m| m < 2) {
            return Err(err(
                "max_points",
                "key `protocol.pair_ranking.max_points`: must be at least 2".into(),
            ));
        }
        if p.evaluate.is_empty() {
            return Err(err(
                "evaluate",
                "key `protocol.pair_ranking.evaluate`: name at least one set (\"all\", \"unlabelled\")".into(),
            ));
        }
        if !(1..=64).contains(&p.knn_threads) {
            return Err(err(
                "knn_threads",
                format!(
                    "key `protocol.pair_ranking.knn_threads`: must lie in 1..=64, got {}",
                    p.knn_threads
                ),
            ));
        }
        Ok(Box::new(PairRankingCell {
            labels_per_class: labels,
            train_per_category: p.train_per_category,
            attributes,
            max_points,
            evaluate: p.evaluate,
            knn_threads: p.knn_threads,
            checkpoints: input.checkpoints.clone(),
            select_steps: false,
            warm_start: p.warm_start,
        }))
    }
}

/// `[protocol.pair_ranking]` as written in a spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairRankingProtocol {
    /// Class-order data: the x axis, labels per class `l` (per-profile list).
    #[serde(default = "default_labels")]
    pub labels_per_class: PerProfile<Vec<usize>>,
    /// Attribute data: training (and validation) points per category (5).
    #[serde(default = "five")]
    pub train_per_category: usize,
    /// Attribute data: the attributes (1-based) to rank; empty = all (per-profile).
    #[serde(default = "all_attributes")]
    pub attributes: PerProfile<Vec<usize>>,
    /// A uniform subsample of this many points per repeat (default: all points).
    #[serde(default)]
    pub max_points: Option<PerProfile<usize>>,
    /// Sets recorded: `"all"` and/or `"unlabelled"`.
    #[serde(default = "both")]
    pub evaluate: Vec<PairSet>,
    /// Threads of the cell's kNN search (1; the result does not depend on it).
    #[serde(default = "one")]
    pub knn_threads: usize,
    /// Fit a solver's candidates that differ only in `λ` along the `λ` path, from the largest
    /// down, each from the previous one's solution, when the solver can (`warm_starts`: TR,
    /// convex, so the same optimum to its tolerance); the others fit every candidate
    /// from its cold start (false).
    #[serde(default)]
    pub warm_start: bool,
}

fn default_labels() -> PerProfile<Vec<usize>> {
    PerProfile::Same(vec![10])
}
fn all_attributes() -> PerProfile<Vec<usize>> {
    PerProfile::Same(Vec::new())
}
fn five() -> usize {
    5
}
fn one() -> usize {
    1
}
fn both() -> Vec<PairSet> {
    vec![PairSet::All, PairSet::Unlabelled]
}

/// The points τ is evaluated on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PairSet {
    All,
    Unlabelled,
}

impl PairSet {
    fn as_str(self) -> &'static str {
        match self {
            PairSet::All => "all",
            PairSet::Unlabelled => "unlabelled",
        }
    }
}

/// The protocol of one cell (hashed into its key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairRankingCell {
    pub labels_per_class: Vec<usize>,
    pub train_per_category: usize,
    pub attributes: Vec<usize>,
    pub max_points: Option<usize>,
    pub evaluate: Vec<PairSet>,
    pub knn_threads: usize,
    pub checkpoints: Vec<u64>,
    /// Whether the validation pairs also choose the step (the solver's checkpoints).
    pub select_steps: bool,
    /// Candidates fitted along the `λ` path (the protocol's `warm_start`, for a solver whose
    /// every candidate `warm_starts`); absent from the key when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warm_start: bool,
}

impl PairRankingCell {
    fn for_solver(&self, solver: &SolverInstance) -> PairRankingCell {
        let mut c = self.clone();
        if let Some(own) = &solver.checkpoints {
            c.checkpoints = own.clone();
        }
        c.select_steps = solver.iterative && solver.select_steps;
        if !solver.iterative {
            c.checkpoints.clear();
        }
        let candidates = solver.candidates();
        c.warm_start = self.warm_start
            && candidates.len() > 1
            && candidates.iter().all(|b| {
                b.family::<dyn PairRanker>()
                    .is_some_and(|r| r.warm_starts())
            });
        c
    }
}

/// The order a cell fits its candidates in, each with the candidate it starts from: the
/// grid's order from cold starts, or (`warm`) each group of candidates that differ only in
/// `lambda` (in the order of their first member) from its largest `λ` down, every candidate
/// but the group's first starting from the previous one's solution.
fn fit_order(canonical: &[&serde_json::Value], warm: bool) -> Vec<(usize, Option<usize>)> {
    if !warm {
        return (0..canonical.len()).map(|i| (i, None)).collect();
    }
    let lambda = |i: usize| canonical[i].get("lambda").and_then(|v| v.as_f64());
    let rest = |i: usize| {
        let mut v = canonical[i].clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("lambda");
        }
        v
    };
    let mut groups: Vec<(serde_json::Value, Vec<usize>)> = Vec::new();
    for i in 0..canonical.len() {
        let key = rest(i);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    let mut order = Vec::with_capacity(canonical.len());
    for (_, mut members) in groups {
        // Largest λ first; a candidate without a λ (none in a λ grid) last; the grid's order
        // on ties.
        members.sort_by(|&a, &b| {
            let (la, lb) = (lambda(a), lambda(b));
            lb.partial_cmp(&la)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        let mut previous = None;
        for i in members {
            order.push((i, previous));
            previous = Some(i);
        }
    }
    order
}

/// The points of one cell, with their groups and orders.
struct Points {
    x: Array2<f64>,
    /// What the points are, for sharing values computed from them across cells: `all` (the
    /// data set's points as they are) or the subsample's seed, repeat and size.
    identity: String,
    group: Vec<u32>,
    /// Per order (one for class data, one per attribute), every point's true value.
    truths: Vec<Vec<f64>>,
    /// Class-order data (else attributes).
    classes: bool,
}

/// The data's points: ordered sets as they are, labelled rows (MNIST) as dense rows of
/// their official training part with class `c` ranked `C − 1 − c`.
fn points(data: &Data) -> Result<(Cow<'_, OrderedSet>, bool), String> {
    if let Some(s) = data.get::<OrderedSet>() {
        return Ok((Cow::Borrowed(s), matches!(s.order, Order::Classes { .. })));
    }
    if let Some(set) = data.get::<LabeledSet>() {
        let rows: Vec<usize> = match &set.partition {
            Some(p) => (0..set.n())
                .filter(|&i| p[i] == dyad_core::Partition::Train)
                .collect(),
            None => (0..set.n()).collect(),
        };
        let mut x = Array2::zeros((rows.len(), set.dim()));
        for (r, &i) in rows.iter().enumerate() {
            let row = set.x.outer_view(i).expect("row in range");
            for (j, v) in row.iter() {
                x[[r, j]] = *v;
            }
        }
        let c = set.n_classes();
        let s = OrderedSet {
            x,
            group: rows.iter().map(|&i| set.labels[i]).collect(),
            group_names: (0..c).map(|k| format!("class{k}")).collect(),
            order: Order::Classes {
                rank: (0..c).map(|k| (c - 1 - k) as f64).collect(),
            },
        };
        return Ok((Cow::Owned(s), true));
    }
    Err(format!(
        "the pair-ranking task needs ordered or labelled examples, not {}",
        data.kind()
    ))
}

impl PairRankingCell {
    /// The cell's points: all, or a uniform subsample per repeat.
    fn points(&self, data: &Data, seed: u64, repeat: u32) -> Result<Points, String> {
        let (set, classes) = points(data)?;
        set.check()?;
        let n = set.n();
        let rows: Option<Vec<usize>> = match self.max_points {
            Some(m) if m < n => {
                let mut idx: Vec<usize> = (0..n).collect();
                idx.shuffle(&mut seeded(derive_seed(seed, &format!("points/{repeat}"))));
                let mut keep = idx[..m].to_vec();
                keep.sort_unstable();
                Some(keep)
            }
            _ => None,
        };
        let truths_all: Vec<Vec<f64>> = (0..set.n_orders()).map(|a| set.truth(a)).collect();
        Ok(match rows {
            None => Points {
                x: set.x.clone(),
                identity: "all".into(),
                group: set.group.clone(),
                truths: truths_all,
                classes,
            },
            Some(rows) => Points {
                identity: format!("sample|seed={seed}|repeat={repeat}|n={}", rows.len()),
                x: set.x.select(ndarray::Axis(0), &rows),
                group: rows.iter().map(|&i| set.group[i]).collect(),
                truths: truths_all
                    .iter()
                    .map(|t| rows.iter().map(|&i| t[i]).collect())
                    .collect(),
                classes,
            },
        })
    }
}

/// One x value of a panel: its coordinate, training and validation labels, and truth.
struct Task1 {
    coord: Coord,
    train: Pairs,
    validation: Pairs,
    truth: usize,
}

/// `per` distinct points of every group for training, then `per` others for validation
/// (each sorted).
fn category_points(
    group: &[u32],
    per: usize,
    rng: &mut dyad_core::Rng,
) -> Result<(Vec<usize>, Vec<usize>), String> {
    let c = group.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for (i, &g) in group.iter().enumerate() {
        members[g as usize].push(i);
    }
    let (mut train, mut val) = (Vec::new(), Vec::new());
    for (g, m) in members.iter_mut().enumerate() {
        if m.is_empty() {
            continue;
        }
        if m.len() < 2 * per {
            return Err(format!(
                "category {g} has {} points: {per} training and {per} validation points need {}",
                m.len(),
                2 * per
            ));
        }
        m.shuffle(rng);
        train.extend_from_slice(&m[..per]);
        val.extend_from_slice(&m[per..2 * per]);
    }
    train.sort_unstable();
    val.sort_unstable();
    Ok((train, val))
}

impl PairRankingCell {
    /// The panel's x values with their labels, for repeat `repeat`.
    fn tasks(&self, p: &Points, seed: u64, repeat: u32) -> Result<Vec<Task1>, String> {
        if p.classes {
            let truth = &p.truths[0];
            return self
                .labels_per_class
                .iter()
                .map(|&l| {
                    let mut rng = seeded(derive_seed(seed, &format!("labels/{repeat}/{l}")));
                    let train = class_pairs(&p.group, truth, l, &HashSet::new(), &mut rng)
                        .map_err(|e| format!("l = {l}: training labels: {e}"))?;
                    let used: HashSet<(usize, usize)> =
                        train.iter().map(|(i, j)| (i.min(j), i.max(j))).collect();
                    let validation = class_pairs(&p.group, truth, l, &used, &mut rng)
                        .map_err(|e| format!("l = {l}: validation labels: {e}"))?;
                    Ok(Task1 {
                        coord: Coord {
                            name: LABELS_PER_CLASS.into(),
                            value: l as f64,
                        },
                        train,
                        validation,
                        truth: 0,
                    })
                })
                .collect();
        }
        let mut rng = seeded(derive_seed(seed, &format!("points-per-category/{repeat}")));
        let (train_pts, val_pts) = category_points(&p.group, self.train_per_category, &mut rng)?;
        let count = p.truths.len();
        let attrs: Vec<usize> = if self.attributes.is_empty() {
            (1..=count).collect()
        } else {
            self.attributes.clone()
        };
        attrs
            .iter()
            .map(|&a| {
                let truth = p
                    .truths
                    .get(a - 1)
                    .ok_or_else(|| format!("attribute {a} requested, but the data has {count}"))?;
                Ok(Task1 {
                    coord: Coord {
                        name: ATTRIBUTE.into(),
                        value: a as f64,
                    },
                    train: attribute_pairs(&train_pts, truth),
                    validation: attribute_pairs(&val_pts, truth),
                    truth: a - 1,
                })
            })
            .collect()
    }
}

/// Version 2 wrote `τ = 0` for an unlabelled set without an inequality pair, where version 3
/// writes nothing. A version-2 cell whose chosen model's unlabelled `τ` (the record with the
/// largest step at each x value) is non-zero everywhere had no such set, so version 3 would
/// record exactly the same (the untrained model's `τ = 0` at step 0 is then a defined value).
fn v2_has_no_empty_set(records: &[Record]) -> bool {
    let mut last: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
    for r in records
        .iter()
        .filter(|r| r.set == "unlabelled" && r.metric == "tau")
    {
        let at = r
            .coord
            .as_ref()
            .map(|c| format!("{}={}", c.name, c.value))
            .unwrap_or_default();
        let e = last.entry(at).or_insert((r.step, r.value));
        if r.step >= e.0 {
            *e = (r.step, r.value);
        }
    }
    last.values().all(|&(_, v)| v != 0.0)
}

/// One checkpoint of one candidate's run.
#[derive(Debug, Clone, Copy)]
struct Point {
    step: u64,
    seconds: f64,
    validation: f64,
    tau_all: f64,
    /// `None` when the unlabelled set holds no inequality pair (e.g. every point labelled):
    /// τ is undefined there, not 0.
    tau_unlabelled: Option<f64>,
    iterations: u64,
    inner: u64,
    /// KR methods: τ from `sign(K_ij)` on the subset.
    tau_sign: Option<f64>,
    /// Full KR: `‖∇E‖ / ‖∇E(0)‖` at this point.
    stationarity: Option<f64>,
}

/// Points on which `tau_sign` is evaluated (spec §3.8: `O(s² p)` for a subset of `s`).
const SIGN_SUBSET: usize = 1000;

/// τ over the pairs of `subset` whose truths differ, each ordered by the sign of `K_ij`
/// (`K_ij > 0`: `i` above `j`; 0 counts as neither), spec §3.8's secondary reading.
fn sign_tau(kernel: &PairKernel, subset: &[usize], truth: &[f64]) -> f64 {
    let c: Option<Array2<f64>> = match kernel {
        PairKernel::LowRank(b) => {
            let p = b.ncols();
            let mut c = Array2::zeros((subset.len(), p));
            for (r, &i) in subset.iter().enumerate() {
                let row = b.row(i).to_vec();
                q_right(&row, c.row_mut(r).as_slice_mut().expect("standard layout"));
            }
            Some(c)
        }
        PairKernel::Dense(_) => None,
    };
    let (mut score, mut pairs) = (0i64, 0u64);
    for (a, &i) in subset.iter().enumerate() {
        for &j in &subset[a + 1..] {
            let t = truth[i] - truth[j];
            if t == 0.0 {
                continue;
            }
            pairs += 1;
            let k = match (kernel, &c) {
                (PairKernel::LowRank(b), Some(c)) => {
                    c.row(a).iter().zip(b.row(j)).map(|(x, y)| x * y).sum()
                }
                (PairKernel::Dense(k), _) => k[[i, j]],
                _ => 0.0,
            };
            if k != 0.0 {
                score += if (k > 0.0) == (t > 0.0) { 1 } else { -1 };
            }
        }
    }
    if pairs == 0 {
        0.0
    } else {
        score as f64 / pairs as f64
    }
}

/// Measures τ at every report, off the solver clock.
struct Measure<'a> {
    truth: &'a [f64],
    validation: &'a [(usize, usize)],
    unlabelled: &'a [usize],
    unlabelled_truth: &'a [f64],
    sign_subset: &'a [usize],
    points: Vec<Point>,
    eval_seconds: f64,
    last_seconds: f64,
    /// Keep the last reported model (a warm start for the next candidate).
    keep_last: bool,
    last: Option<PairModel>,
}

impl Observer<PairModel> for Measure<'_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &PairModel) -> Control {
        let t = Instant::now();
        let f = model.scores.as_slice().expect("contiguous scores");
        let fu: Vec<f64> = self.unlabelled.iter().map(|&i| f[i]).collect();
        self.points.push(Point {
            step: at.step,
            seconds: at.solver_seconds,
            validation: tau_on_pairs(f, self.validation),
            tau_all: kendall_tau(f, self.truth),
            tau_unlabelled: {
                let c = kendall_counts(&fu, self.unlabelled_truth);
                (c.pairs > 0).then(|| c.tau())
            },
            iterations: model.iterations,
            inner: model.inner_iterations,
            tau_sign: model
                .kernel
                .as_ref()
                .map(|k| sign_tau(k, self.sign_subset, self.truth)),
            stationarity: model.stationarity,
        });
        self.last_seconds = at.solver_seconds;
        if self.keep_last {
            self.last = Some(model.clone());
        }
        self.eval_seconds += t.elapsed().as_secs_f64();
        Control::Continue
    }
}

/// The tuned numeric parameters of a candidate, by name (from its canonical parameters).
fn tuned_values(solver: &SolverInstance, candidate: &serde_json::Value) -> Vec<(String, f64)> {
    let mut names: Vec<String> = solver
        .tune
        .first()
        .and_then(|t| t.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    // Only the parameters that vary over the candidates.
    names.retain(|n| {
        let first = solver.tune.first().and_then(|t| t.get(n));
        solver.tune.iter().any(|t| t.get(n) != first)
    });
    names
        .into_iter()
        .filter_map(|n| candidate.get(&n).and_then(|v| v.as_f64()).map(|v| (n, v)))
        .collect()
}

impl CellProtocol for PairRankingCell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self.for_solver(solver)).expect("serializable")
    }

    /// The ranker's ([`PairRanker::memory`]) on the examples it sees: every row of the data
    /// set, or `max_points` of them (the methods are transductive).
    fn memory(&self, solver: &SolverInstance, d: &DatasetInstance) -> Option<Memory> {
        let shape = d.resolved.shape.as_ref()?;
        let n = self.max_points.map_or(shape.rows, |m| m.min(shape.rows));
        let bytes = solver.largest::<dyn PairRanker>(|r| r.memory(n, shape.dim))?;
        Some(Memory {
            parts: vec![(
                format!("the ranker on {n} examples of {} features", shape.dim),
                bytes,
            )],
        })
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        let Some(sizes) = d
            .resolved
            .shape
            .as_ref()
            .and_then(|s| s.class_sizes.clone())
        else {
            return Ok(());
        };
        if d.resolved.kind == ORDERED || self.max_points.is_some() {
            // Attribute data needs 2 × train_per_category per category, class data pairs;
            // both are checked when drawn (a subsample changes the sizes).
            return Ok(());
        }
        let l = self.labels_per_class.iter().copied().max().unwrap_or(0);
        match sizes
            .iter()
            .enumerate()
            .find(|(_, s)| **s * s.saturating_sub(1) / 2 < 2 * l)
        {
            Some((c, s)) => Err(format!(
                "class {c} of `{}` has {s} rows: too few for {l} training and {l} validation \
                 equality pairs",
                d.id
            )),
            None => Ok(()),
        }
    }

    fn sets(&self) -> Vec<String> {
        self.evaluate
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()
    }

    fn steps(&self, solver: &SolverInstance) -> u64 {
        let c = self.for_solver(solver);
        let budget = c.checkpoints.last().copied().unwrap_or(0).max(1);
        let xs = self
            .labels_per_class
            .len()
            .max(self.attributes.len())
            .max(1) as u64;
        budget
            .saturating_mul(solver.tune.len().max(1) as u64)
            .saturating_mul(xs)
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let learners = cell
            .candidates
            .iter()
            .map(|b| {
                b.family::<dyn PairRanker>().ok_or_else(|| {
                    format!("solver `{}` is not a pairwise ranker", cell.solver.name)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let c = self.for_solver(cell.solver);
        let p = c.points(cell.data, cell.seed, cell.repeat)?;
        let tasks = c.tasks(&p, cell.seed, cell.repeat)?;
        let mut out = CellOutput::default();

        // The kNN graph at the largest k of the candidates, once per data set, points and k:
        // every cell on the same points (other solvers, other repeats when the points are all
        // of the data set's) shares it. The search is exact and deterministic, so sharing
        // changes nothing but time; `knn_seconds` is the search's own time.
        let kmax = cell
            .candidates
            .iter()
            .filter_map(|b| b.canonical.get("k").and_then(|v| v.as_u64()))
            .max();
        let (graph, knn_seconds) = match kmax {
            Some(k) if (k as usize) < p.x.nrows() => {
                let key = format!("pair-ranking/knn/v1|k={k}|points={}", p.identity);
                let shared = cell.data.derived(&key, || {
                    let t = Instant::now();
                    let g =
                        knn(p.x.view(), k as usize, c.knn_threads).map_err(|e| e.to_string())?;
                    Ok((Arc::new(g), t.elapsed().as_secs_f64()))
                })?;
                (Some(shared.0.clone()), shared.1)
            }
            _ => (None, 0.0),
        };

        let rec =
            |set: &str, metric: &str, step: u64, seconds: f64, coord: Option<Coord>, value| {
                Record {
                    set: set.into(),
                    metric: metric.into(),
                    step,
                    seconds,
                    k: None,
                    coord,
                    value,
                }
            };
        let schedule = match (learners[0].is_iterative(), c.select_steps) {
            (false, _) => Schedule::new(vec![0]),
            (true, true) => Schedule::new(c.checkpoints.clone()),
            // The untrained model (after set-up) and the final one.
            (true, false) => Schedule::new(vec![0, c.checkpoints.last().copied().unwrap_or(0)]),
        };
        let solver_seed = derive_seed(cell.seed, &format!("solver/{}", cell.repeat));
        let mut input = PairInput::new(p.x, Pairs::default());
        input.neighbours = graph;
        let sign_subset: Vec<usize> = {
            let n = input.n();
            let mut idx: Vec<usize> = (0..n).collect();
            if n > SIGN_SUBSET {
                idx.shuffle(&mut seeded(derive_seed(
                    cell.seed,
                    &format!("sign-subset/{}", cell.repeat),
                )));
                idx.truncate(SIGN_SUBSET);
                idx.sort_unstable();
            }
            idx
        };
        let canonical: Vec<&serde_json::Value> =
            cell.candidates.iter().map(|b| &b.canonical).collect();
        let order = fit_order(&canonical, c.warm_start);
        let mut chosen_count = vec![0usize; learners.len()];
        let (mut sum_all, mut sum_unl) = (0.0, 0.0);
        // x values whose unlabelled τ is defined (the chosen model's; the untrained one's).
        let (mut defined_unl, mut defined0_unl) = (0usize, 0usize);
        // τ of the chosen runs' first reports (the untrained model after set-up): what a CI
        // band must exclude.
        let (mut sum0_all, mut sum0_unl, mut untrained, mut step0) = (0.0, 0.0, 0usize, 0);
        for task in &tasks {
            let truth = &p.truths[task.truth];
            let mut labelled = vec![false; truth.len()];
            for (i, j) in task.train.iter().chain(task.validation.iter()) {
                labelled[i] = true;
                labelled[j] = true;
            }
            let unlabelled: Vec<usize> = (0..truth.len()).filter(|&i| !labelled[i]).collect();
            let unlabelled_truth: Vec<f64> = unlabelled.iter().map(|&i| truth[i]).collect();
            input.train = task.train.clone();
            input.validation = Some(task.validation.clone());
            // Every candidate's run (empty when it diverged), fitted in `order`.
            let mut runs: Vec<Vec<Point>> = vec![Vec::new(); learners.len()];
            let mut finals: Vec<Option<Arc<PairModel>>> = vec![None; learners.len()];
            // The candidate each run started from (none: cold, also when that one diverged).
            let mut started: Vec<Option<usize>> = vec![None; learners.len()];
            for &(ci, from) in &order {
                started[ci] = from.filter(|&f| finals[f].is_some());
                input.start = started[ci].and_then(|f| finals[f].clone());
                let mut m = Measure {
                    truth,
                    validation: &task.validation.above,
                    unlabelled: &unlabelled,
                    unlabelled_truth: &unlabelled_truth,
                    sign_subset: &sign_subset,
                    points: Vec::new(),
                    eval_seconds: 0.0,
                    last_seconds: 0.0,
                    keep_last: c.warm_start,
                    last: None,
                };
                match learners[ci].fit(&input, &schedule, &mut seeded(solver_seed), &mut m) {
                    Ok(()) => {}
                    // A candidate that diverges is not chosen; the others still compete.
                    Err(AlgoError::Numerical(_)) if learners.len() > 1 => {
                        out.selection_seconds += m.last_seconds;
                        out.eval_seconds += m.eval_seconds;
                        continue;
                    }
                    Err(e) => {
                        return Err(format!("{} = {}: {e}", task.coord.name, task.coord.value));
                    }
                }
                out.eval_seconds += m.eval_seconds;
                out.selection_seconds += m.last_seconds;
                finals[ci] = m.last.take().map(Arc::new);
                runs[ci] = m.points;
            }
            input.start = None;
            // (validation τ, candidate, point index): the best, first candidate and earliest
            // step winning ties, over the candidates in the grid's order.
            let mut best: Option<(f64, usize, usize)> = None;
            for (ci, points) in runs.iter().enumerate() {
                let candidates: Vec<usize> = if c.select_steps {
                    // The checkpoints after set-up: the untrained model (step 0) is not in
                    // the tuned grid (§3.10's epochs), unless it is the only report.
                    let trained = points.iter().position(|p| p.step > 0);
                    (trained.unwrap_or(0)..points.len()).collect()
                } else {
                    points.len().checked_sub(1).into_iter().collect()
                };
                for pi in candidates {
                    let v = points[pi].validation;
                    if best.is_none_or(|(b, _, _)| v > b) {
                        best = Some((v, ci, pi));
                    }
                }
            }
            let (_, ci, pi) = best.ok_or_else(|| {
                format!(
                    "{} = {}: every candidate failed",
                    task.coord.name, task.coord.value
                )
            })?;
            chosen_count[ci] += 1;
            let run = &runs[ci];
            let chosen = run[pi];
            // The chosen run's seconds are training, not selection.
            out.selection_seconds -= run.last().map_or(0.0, |p| p.seconds);
            out.train_seconds += run.last().map_or(0.0, |p| p.seconds);
            let coord = Some(task.coord.clone());
            let (step, secs) = (chosen.step, chosen.seconds);
            for s in &c.evaluate {
                let v = match s {
                    PairSet::All => Some(chosen.tau_all),
                    PairSet::Unlabelled => chosen.tau_unlabelled,
                };
                if let Some(v) = v {
                    out.records
                        .push(rec(s.as_str(), "tau", step, secs, coord.clone(), v));
                }
            }
            sum_all += chosen.tau_all;
            if let Some(v) = chosen.tau_unlabelled {
                sum_unl += v;
                defined_unl += 1;
            }
            // The untrained model: the chosen run's first report, or for a warm-started run
            // (whose first report is its start) that of the cold run its path began with.
            let mut root = ci;
            while let Some(from) = started[root] {
                root = from;
            }
            if let Some(first) = runs[root].first().filter(|f| f.step < chosen.step) {
                untrained += 1;
                step0 = first.step;
                sum0_all += first.tau_all;
                if let Some(v) = first.tau_unlabelled {
                    sum0_unl += v;
                    defined0_unl += 1;
                }
                for s in &c.evaluate {
                    let v = match s {
                        PairSet::All => Some(first.tau_all),
                        PairSet::Unlabelled => first.tau_unlabelled,
                    };
                    if let Some(v) = v {
                        out.records.push(rec(
                            s.as_str(),
                            "tau",
                            first.step,
                            first.seconds,
                            coord.clone(),
                            v,
                        ));
                    }
                }
            }
            out.records.push(rec(
                "validation",
                "validation_tau",
                step,
                secs,
                coord.clone(),
                chosen.validation,
            ));
            for (name, v) in tuned_values(cell.solver, &cell.candidates[ci].canonical) {
                out.records.push(rec(
                    "validation",
                    &format!("chosen_{name}"),
                    step,
                    secs,
                    coord.clone(),
                    v,
                ));
            }
            if c.select_steps {
                out.records.push(rec(
                    "validation",
                    "chosen_step",
                    step,
                    secs,
                    coord.clone(),
                    step as f64,
                ));
            }
            if let Some(ts) = chosen.tau_sign {
                out.records
                    .push(rec("all", "tau_sign", step, secs, coord.clone(), ts));
            }
            if let Some(r) = chosen.stationarity {
                out.records
                    .push(rec("all", "stationarity", step, secs, coord.clone(), r));
            }
            out.records.push(rec(
                "all",
                "solver_seconds",
                step,
                secs,
                coord.clone(),
                secs,
            ));
            out.records.push(rec(
                "all",
                "iterations",
                step,
                secs,
                coord.clone(),
                chosen.iterations as f64,
            ));
            // Per iteration after set-up: from the run's first report to the chosen one.
            if let Some(first) = run.first()
                && chosen.iterations > first.iterations
            {
                let its = (chosen.iterations - first.iterations) as f64;
                out.records.push(rec(
                    "all",
                    "seconds_per_iteration",
                    step,
                    secs,
                    coord.clone(),
                    (chosen.seconds - first.seconds) / its,
                ));
                out.records.push(rec(
                    "all",
                    "trials_per_iteration",
                    step,
                    secs,
                    coord.clone(),
                    chosen.inner.saturating_sub(first.inner) as f64 / its,
                ));
            }
        }
        let xs = tasks.len().max(1) as f64;
        let last_step = out.records.iter().map(|r| r.step).max().unwrap_or(0);
        // Means over the x values where τ is defined; how many were not is recorded.
        let mean = |sum: f64, n: usize| (n > 0).then(|| sum / n as f64);
        for s in &c.evaluate {
            let v = match s {
                PairSet::All => Some(sum_all / xs),
                PairSet::Unlabelled => mean(sum_unl, defined_unl),
            };
            if let Some(v) = v {
                out.records.push(rec(
                    s.as_str(),
                    "tau_mean",
                    last_step,
                    out.train_seconds,
                    None,
                    v,
                ));
            }
            if *s == PairSet::Unlabelled && defined_unl < tasks.len() {
                out.records.push(rec(
                    s.as_str(),
                    "tau_undefined",
                    last_step,
                    out.train_seconds,
                    None,
                    (tasks.len() - defined_unl) as f64,
                ));
            }
        }
        if untrained == tasks.len() {
            for s in &c.evaluate {
                let v = match s {
                    PairSet::All => Some(sum0_all / xs),
                    PairSet::Unlabelled => mean(sum0_unl, defined0_unl),
                };
                if let Some(v) = v {
                    out.records
                        .push(rec(s.as_str(), "tau_mean", step0, 0.0, None, v));
                }
            }
        }
        out.records.push(rec(
            "all",
            "knn_seconds",
            last_step,
            out.train_seconds,
            None,
            knn_seconds,
        ));
        out.selection_seconds = out.selection_seconds.max(0.0);
        if learners.len() > 1 {
            // The candidate chosen most often (the first on ties): the `tuned` column.
            let top = chosen_count.iter().copied().max().unwrap_or(0);
            out.selected_candidate = chosen_count.iter().position(|&n| n == top);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_starts_follow_each_groups_lambda_path_from_the_largest() {
        use serde_json::json;
        // A λ × k grid as the spec expands it (λ outer), and a candidate without a λ.
        let grid = [
            json!({"lambda": 0.01, "k": 4}),
            json!({"lambda": 0.01, "k": 8}),
            json!({"lambda": 1.0, "k": 4}),
            json!({"lambda": 1.0, "k": 8}),
            json!({"lambda": 100.0, "k": 4}),
            json!({"k": 16}),
        ];
        let refs: Vec<&serde_json::Value> = grid.iter().collect();
        assert_eq!(
            fit_order(&refs, false),
            (0..6).map(|i| (i, None)).collect::<Vec<_>>()
        );
        assert_eq!(
            fit_order(&refs, true),
            [
                (4, None),
                (2, Some(4)),
                (0, Some(2)),
                (3, None),
                (1, Some(3)),
                (5, None)
            ]
        );
    }

    #[test]
    fn category_points_are_disjoint_and_balanced() {
        let group: Vec<u32> = (0..60).map(|i| (i % 3) as u32).collect();
        let (tr, va) = category_points(&group, 5, &mut seeded(1)).unwrap();
        assert_eq!((tr.len(), va.len()), (15, 15));
        assert!(tr.iter().all(|i| !va.contains(i)));
        for g in 0..3 {
            assert_eq!(tr.iter().filter(|&&i| group[i] == g).count(), 5);
            assert_eq!(va.iter().filter(|&&i| group[i] == g).count(), 5);
        }
        let e = category_points(&group, 11, &mut seeded(1)).unwrap_err();
        assert!(e.contains("need 22"), "{e}");
    }

    #[test]
    fn sign_tau_reads_the_order_off_the_kernel() {
        // K = f1ᵀ − 1fᵀ orders i above j when f_i > f_j: as a dense kernel, and as B Q Bᵀ
        // with B = [f, 1] (p = 2), which is ±(f1ᵀ − 1fᵀ) (Q's sign convention).
        let f = [3.0, 1.0, 2.0, 0.0];
        let truth = [3.0, 1.0, 2.0, 2.0];
        let dense = Array2::from_shape_fn((4, 4), |(i, j)| f[i] - f[j]);
        let all = [0, 1, 2, 3];
        // Pairs with different truths: 5 of 6 ((2, 3) is tied in the truth). f orders
        // (0,1) (0,2) (0,3) (2,1) right and (1,3) wrong: (4 − 1) / 5.
        let d = PairKernel::Dense(dense.clone());
        assert!((sign_tau(&d, &all, &truth) - 0.6).abs() < 1e-12);
        let flipped = PairKernel::Dense(-dense.clone());
        assert!((sign_tau(&flipped, &all, &truth) + 0.6).abs() < 1e-12);
        let b = Array2::from_shape_fn((4, 2), |(i, a)| if a == 0 { f[i] } else { 1.0 });
        let lr = PairKernel::LowRank(b);
        let sign = if lr.value(0, 1) > 0.0 { 1.0 } else { -1.0 };
        for i in 0..4 {
            for j in 0..4 {
                assert!((lr.value(i, j) - sign * dense[[i, j]]).abs() < 1e-12);
            }
        }
        assert!((sign_tau(&lr, &all, &truth) - sign * 0.6).abs() < 1e-12);
        // A subset scores only its own pairs; no pair scores 0.
        assert_eq!(sign_tau(&lr, &[2, 3], &truth), 0.0);
    }

    #[test]
    fn labelled_rows_become_classes_ranked_by_label() {
        let rows = vec![vec![1.0, 0.0], vec![0.0, 2.0], vec![3.0, 0.0]];
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 1, 2], 3);
        let data = Data::new(kinds::LABELLED, set);
        let (s, classes) = points(&data).unwrap();
        assert!(classes);
        assert_eq!(s.x.row(1).to_vec(), vec![0.0, 2.0]);
        assert_eq!(s.truth(0), vec![2.0, 1.0, 0.0], "class 0 ranks highest");
    }
}
