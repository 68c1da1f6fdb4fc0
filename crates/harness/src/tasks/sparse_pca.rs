//! The sparse-PCA task, table `[protocol.sparse_pca]` (Givens spec §3, §6, §8 E1/E2): a
//! [`SparsePca`] learner fits sparse loadings `Z` (`d × m`) on the training part of an
//! expression matrix `A` (`d` genes × `n` samples), and at every checkpoint the cell records,
//! for each evaluated set (`train`, and `test` when the split has one):
//!
//! * `explained_variance`: the **adjusted** explained variance of Zou, Hastie & Tibshirani
//!   (2006) (spec §6.1): `Y = A_setᵀZ`, thin QR `Y = QR` (columns by decreasing `‖y_j‖`),
//!   `Σ_j R_jj² / ‖A_set‖_F²` ([`dyad_core::explained_variance::Variance::adjusted`]).
//!   Adjusted, not plain, because sparse components are not orthogonal and with `m = n = 102`
//!   (Fig. 1) the plain sum double-counts and can exceed the total (spec §6.1 \[A\]).
//! * `cardinality`: `nnz(Z)` (spec §6.2; Fig. 1b's y axis) and `density = nnz(Z)/(d·m)` (the
//!   sparsity level of Fig. 2's caps).
//! * `flops_all_rows` and `flops_active_rows`: the solver's cumulative FLOPs (spec §6.3,
//!   counted inside the learners; forming `Z` at a checkpoint is monitoring work and not
//!   counted), by **one rule for every method** — every arithmetic operation on a row in scope
//!   is charged, whether or not an operand is zero — over two scopes
//!   ([`dyad_givens::flops`] module docs): all `d` rows of the data (all 12,600
//!   genes of the prostate matrix), and only the rows that can pass the threshold
//!   (`‖a_k‖ > γ`: an entry of `AU` or `AX` with orthonormal `U`, `X` is at most `‖a_k‖`, so
//!   the other rows never enter the sparse pattern). Plots draw curves "against FLOPs" with
//!   `x = "flops_all_rows"` (records are paired by step). Until task version 2 the single
//!   `flops` metric charged block GPower's gradient over its sparse pattern only (issue 42).
//! * `steps`: the learner's steps so far (coordinate steps, GPower iterations, streamed
//!   samples); at the last record, below the step budget when the learner stopped by its own
//!   convergence rule.
//! * `objective`: the method's own objective (Eq. 6 for the Givens methods and ℓ1 GPower).
//!
//! The training quantities (`cardinality`, `density`, the FLOPs, `steps`, `objective`) are
//! repeated in
//! every evaluated set so that any plotted metric finds its x value in its own set. Every
//! record carries the solver seconds of its checkpoint (the clock is paused while the cell
//! evaluates).
//!
//! # Sparsity caps (the records' second coordinate)
//!
//! Fig. 2 shows, per panel, only runs whose sparsity `nnz/(d·m)` is at most 5 %, 10 % or 20 %
//! (spec §6.2 \[A\]). With `caps = [0.05, 0.1, 0.2]` the cell also records, for each cap `c`,
//! the metrics of its **last checkpoint with `density ≤ c`** (if any) with the coordinate
//! `max_density = c`: claims select them with `coord = c`, and a plot with
//! `x = "max_density"` draws each solver's explained variance against the cap. A run that never
//! meets a cap has no record there (a claim at that cap is then "not comparable", not a
//! silent zero).
//!
//! # Splits and centring
//!
//! * `split = "none"` (default): every sample is a training sample; only `train` is evaluated.
//! * `split = "official"`: the data's own parts, from the sample groups named `train` and
//!   `test` (the prostate provider with `part = "both"`: 102 training / 34 test samples); data
//!   without them (the prostate stand-in) draws `test_samples` per repeat when given, else is
//!   an error.
//! * `split = "random"` with `test_samples = t`: `t` samples drawn uniformly per repeat as the
//!   test part (E2: 2,962 / 740 of 3,702 \[T\]; repeats are the paper's 5 random partitions,
//!   drawn independently \[A\], spec §8 E2).
//!
//! Genes are centred with the training means (`center = true`, spec §8 E1 \[A\]); the test
//! part is centred with the training means too (`test_center = "train"`, spec §6.1 \[A\]) or
//! with its own (`"own"`: for a test file from another batch or scale, such as the Kent Ridge
//! prostate test set). Centring is a property of the data, not of the learner: the learner
//! sees the centred training matrix.
//!
//! # Steps
//!
//! One step is whatever the learner calls one (a Givens coordinate step, one streamed sample,
//! one GPower iteration); a solver's own `checkpoints` in the spec set its grid. Learners stop
//! early when they converge: the last record is then their final model.

use super::retrieval::EvalSet;
use super::{CellOutput, CellProtocol, CellRun, Headline, Metric, Task, TaskInput};
use crate::cache::{Coord, Record};
use crate::plan::{DatasetInstance, SolverInstance};
use crate::profile::PerProfile;
use crate::registry::SPARSE_PCA;
use crate::spec::SpecError;
use dyad_core::explained_variance::Variance;
use dyad_core::{Checkpoint, Control, Observer, Schedule, derive_seed, seeded};
use dyad_datasets::expression::ExpressionSet;
use dyad_datasets::provider::kinds;
use dyad_givens::{SparsePca, SparsePcaModel};
use ndarray::{Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The task.
pub struct SparsePcaTask;

/// Name of the records' second coordinate: the sparsity cap a record satisfies.
pub const MAX_DENSITY: &str = "max_density";

static METRICS: &[Metric] = &[
    Metric {
        name: "explained_variance",
        label: "adj. expl. var.",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "adjusted explained variance (Zou et al. 2006) of the loadings on the set, as a fraction of its total variance",
    },
    Metric {
        name: "cardinality",
        label: "nnz(Z)",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "non-zero entries of the loadings Z (d x m)",
    },
    Metric {
        name: "density",
        label: "nnz/(d m)",
        unit: "",
        higher_is_better: false,
        percent: true,
        description: "fraction of non-zero entries of the loadings Z",
    },
    Metric {
        name: "flops_all_rows",
        label: "FLOPs (all rows)",
        unit: "flop",
        higher_is_better: false,
        percent: false,
        description: "solver floating-point operations so far over all rows of the data (Givens spec §6.3; one rule for every method: every operation on a row in scope is charged, zeros included; monitoring excluded)",
    },
    Metric {
        name: "flops_active_rows",
        label: "FLOPs (rows that can pass)",
        unit: "flop",
        higher_is_better: false,
        percent: false,
        description: "the same count over the rows that can pass the threshold only (row norm above gamma; the other rows are zero in every iterate and can be dropped beforehand), plus the row norms that find them",
    },
    Metric {
        name: "steps",
        label: "steps",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "learner steps so far (coordinate steps, GPower iterations, streamed samples); at the last record, below the budget when the learner stopped by its own rule",
    },
    Metric {
        name: "objective",
        label: "objective",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "the method's own training objective (Eq. 6 sum of squared shrunk entries for Givens and l1 GPower)",
    },
    Metric {
        name: "capped_explained_variance",
        label: "adj. expl. var. at cap",
        unit: "",
        higher_is_better: true,
        percent: true,
        description: "explained_variance of the last checkpoint whose density is at most the cap (coordinate max_density)",
    },
    Metric {
        name: "capped_flops_all_rows",
        label: "FLOPs (all rows) at cap",
        unit: "flop",
        higher_is_better: false,
        percent: false,
        description: "flops_all_rows of the last checkpoint whose density is at most the cap (coordinate max_density)",
    },
    Metric {
        name: "capped_flops_active_rows",
        label: "FLOPs (rows that can pass) at cap",
        unit: "flop",
        higher_is_better: false,
        percent: false,
        description: "flops_active_rows of the last checkpoint whose density is at most the cap (coordinate max_density)",
    },
    Metric {
        name: "capped_density",
        label: "density at cap",
        unit: "",
        higher_is_better: false,
        percent: true,
        description: "density of the last checkpoint whose density is at most the cap (coordinate max_density)",
    },
];

static HEADLINE: &[Headline] = &[
    Headline {
        metric: "explained_variance",
        k: None,
    },
    Headline {
        metric: "cardinality",
        k: None,
    },
    Headline {
        metric: "flops_all_rows",
        k: None,
    },
    Headline {
        metric: "flops_active_rows",
        k: None,
    },
];

impl Task for SparsePcaTask {
    fn table(&self) -> &'static str {
        "sparse_pca"
    }
    fn name(&self) -> &'static str {
        "sparse-pca"
    }
    fn version(&self) -> u32 {
        // 2: FLOPs recorded as two counts by one rule (`flops_all_rows`, `flops_active_rows`,
        // replacing `flops`) and the `steps` metric (issue 42 §4).
        2
    }
    fn description(&self) -> &'static str {
        "sparse loadings of a genes x samples matrix: adjusted explained variance, cardinality and FLOPs"
    }
    fn family(&self) -> &'static str {
        SPARSE_PCA
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::EXPRESSION]
    }
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        HEADLINE
    }
    fn coordinates(&self) -> &'static [&'static str] {
        &[MAX_DENSITY]
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/sparse_pca.rs",
            "core/src/explained_variance.rs",
            "datasets/src/expression/mod.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: SparsePcaProtocol = input.table("sparse_pca")?;
        let test_samples = p.test_samples.as_ref().map(|v| *v.at(input.profile));
        let split = match (p.split, test_samples) {
            (SplitKind::None, None) => SplitCell::None,
            (SplitKind::Official, t) if t != Some(0) => SplitCell::Official { fallback: t },
            (SplitKind::Random, Some(t)) if t >= 1 => SplitCell::Random { test_samples: t },
            _ => {
                return Err(input.error(
                    &["sparse_pca", "split"],
                    "key `protocol.sparse_pca`: `test_samples` (at least 1) goes with \
                     `split = \"random\"` (required) or `\"official\"` (the draw for data \
                     without official parts)"
                        .into(),
                ));
            }
        };
        let evaluate = match p.evaluate {
            Some(e) => e,
            None if split == SplitCell::None => vec![EvalSet::Train],
            None => vec![EvalSet::Train, EvalSet::Test],
        };
        if evaluate.is_empty() {
            return Err(input.error(
                &["sparse_pca", "evaluate"],
                "key `protocol.sparse_pca.evaluate`: name at least one set".into(),
            ));
        }
        if split == SplitCell::None && evaluate.contains(&EvalSet::Test) {
            return Err(input.error(
                &["sparse_pca", "evaluate"],
                "key `protocol.sparse_pca.evaluate`: `test` needs a split with a test part \
                 (`split = \"official\"` or `\"random\"`)"
                    .into(),
            ));
        }
        if let Some(c) = p.caps.iter().find(|c| !(**c > 0.0 && **c <= 1.0)) {
            return Err(input.error(
                &["sparse_pca", "caps"],
                format!("key `protocol.sparse_pca.caps`: caps are densities in (0, 1], got {c}"),
            ));
        }
        input.refuse_tune(
            "the sparse-PCA task has no hold-out: sweep parameters with `grid`, not `tune`",
        )?;
        Ok(Box::new(SparsePcaCell {
            split,
            center: p.center,
            test_center: p.test_center,
            evaluate,
            caps: p.caps,
            checkpoints: input.checkpoints.clone(),
        }))
    }
}

/// `[protocol.sparse_pca]` as written in a spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparsePcaProtocol {
    #[serde(default)]
    pub split: SplitKind,
    /// Test samples drawn per repeat (`split = "random"`).
    #[serde(default)]
    pub test_samples: Option<PerProfile<usize>>,
    /// Centre every gene with the training means (true).
    #[serde(default = "yes")]
    pub center: bool,
    #[serde(default)]
    pub test_center: TestCenter,
    /// Sets evaluated (default: train, and test when the split has one).
    #[serde(default)]
    pub evaluate: Option<Vec<EvalSet>>,
    /// Sparsity caps (densities) at which the last satisfying checkpoint is recorded again.
    #[serde(default)]
    pub caps: Vec<f64>,
}

fn yes() -> bool {
    true
}

/// How the samples are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitKind {
    #[default]
    None,
    Official,
    Random,
}

/// Which means centre the test part (when `center` is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestCenter {
    #[default]
    Train,
    Own,
}

/// The split of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SplitCell {
    None,
    /// The data's `train` / `test` sample groups; data without them (a stand-in) draws
    /// `fallback` test samples per repeat, as `Random`.
    Official {
        fallback: Option<usize>,
    },
    Random {
        test_samples: usize,
    },
}

/// The protocol of one cell (hashed into its key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SparsePcaCell {
    pub split: SplitCell,
    pub center: bool,
    pub test_center: TestCenter,
    pub evaluate: Vec<EvalSet>,
    pub caps: Vec<f64>,
    pub checkpoints: Vec<u64>,
}

impl SparsePcaCell {
    fn for_solver(&self, solver: &SolverInstance) -> SparsePcaCell {
        let mut c = self.clone();
        if let Some(own) = &solver.checkpoints {
            c.checkpoints = own.clone();
        }
        if !solver.iterative {
            c.checkpoints.clear();
        }
        c
    }

    /// Training and test sample indices of repeat `repeat`.
    fn split(
        &self,
        set: &ExpressionSet,
        seed: u64,
        repeat: u32,
    ) -> Result<(Vec<usize>, Vec<usize>), String> {
        let n = set.n_samples();
        match self.split {
            SplitCell::None => Ok(((0..n).collect(), Vec::new())),
            SplitCell::Official { fallback } => {
                let official = set.groups().is_some_and(|g| {
                    g.count_of("train").unwrap_or(0) > 0 && g.count_of("test").unwrap_or(0) > 0
                });
                if let (false, Some(t)) = (official, fallback) {
                    return random_split(n, t, seed, repeat);
                }
                let groups = set.groups().ok_or(
                    "split = \"official\" needs sample groups `train` and `test` (prostate: \
                     part = \"both\"), or `test_samples` for data without them",
                )?;
                let part = |name: &str| {
                    groups
                        .code_of(name)
                        .map(|c| groups.members(c))
                        .filter(|m| !m.is_empty())
                        .ok_or(format!(
                            "split = \"official\": the data has no `{name}` samples (groups: {})",
                            groups.names().join(", ")
                        ))
                };
                Ok((part("train")?, part("test")?))
            }
            SplitCell::Random { test_samples } => random_split(n, test_samples, seed, repeat),
        }
    }
}

/// `test_samples` of `n` samples drawn uniformly for repeat `repeat`: (train, test), each in
/// increasing order.
fn random_split(
    n: usize,
    test_samples: usize,
    seed: u64,
    repeat: u32,
) -> Result<(Vec<usize>, Vec<usize>), String> {
    if test_samples >= n {
        return Err(format!(
            "test_samples = {test_samples} leaves no training sample of {n}"
        ));
    }
    use rand::seq::SliceRandom;
    let mut rng = seeded(derive_seed(seed, &format!("split/{repeat}")));
    let mut idx: Vec<usize> = (0..n).collect();
    idx.shuffle(&mut rng);
    let (mut test, mut train) = (idx[..test_samples].to_vec(), idx[test_samples..].to_vec());
    test.sort_unstable();
    train.sort_unstable();
    Ok((train, test))
}

/// Columns `idx` of `a`, each row centred with `means` (or its own means when `None`) if
/// `center`; returns the matrix and the means used.
fn part(
    a: ArrayView2<'_, f64>,
    idx: &[usize],
    center: bool,
    means: Option<&[f64]>,
) -> (Array2<f64>, Vec<f64>) {
    let mut m = a.select(Axis(1), idx);
    if !center || idx.is_empty() {
        return (m, vec![0.0; a.nrows()]);
    }
    let own: Vec<f64> = m
        .rows()
        .into_iter()
        .map(|r| r.sum() / idx.len() as f64)
        .collect();
    let means = means.map_or(own, <[f64]>::to_vec);
    for (mut r, mu) in m.rows_mut().into_iter().zip(&means) {
        r.mapv_inplace(|v| v - mu);
    }
    (m, means)
}

impl CellProtocol for SparsePcaCell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self.for_solver(solver)).expect("serializable")
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        let drawn = match self.split {
            SplitCell::Random { test_samples } => Some(test_samples),
            SplitCell::Official { fallback } if d.resolved.synthetic => fallback,
            _ => None,
        };
        if let (Some(test_samples), Some(shape)) = (drawn, &d.resolved.shape)
            && test_samples >= shape.rows
        {
            return Err(format!(
                "`{}` has {} samples: test_samples = {test_samples} leaves none for training",
                d.id, shape.rows
            ));
        }
        Ok(())
    }

    fn sets(&self) -> Vec<String> {
        self.evaluate
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()
    }

    fn steps(&self, solver: &SolverInstance) -> u64 {
        self.for_solver(solver)
            .checkpoints
            .last()
            .copied()
            .unwrap_or(0)
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let set = cell.data.get::<ExpressionSet>().ok_or_else(|| {
            format!(
                "data set `{}` is not an expression matrix ({})",
                cell.dataset,
                cell.data.kind()
            )
        })?;
        let learner = cell
            .candidates
            .first()
            .and_then(|b| b.family::<dyn SparsePca>())
            .ok_or_else(|| format!("solver `{}` is not a sparse-PCA learner", cell.solver.name))?;
        let c = self.for_solver(cell.solver);
        let (train_idx, test_idx) = c.split(set, cell.seed, cell.repeat)?;
        let a = set.values().view();
        let (train, means) = part(a, &train_idx, c.center, None);
        let test = (!test_idx.is_empty()).then(|| {
            let own = c.test_center == TestCenter::Own;
            part(a, &test_idx, c.center, (!own).then_some(&means[..])).0
        });
        let sets: Vec<(&'static str, Variance<'_>)> = c
            .evaluate
            .iter()
            .map(|s| match s {
                EvalSet::Train => Ok(("train", Variance::new(train.view()))),
                EvalSet::Test => test
                    .as_ref()
                    .map(|t| ("test", Variance::new(t.view())))
                    .ok_or_else(|| "the split has no test part".to_string()),
            })
            .collect::<Result<_, _>>()?;
        let schedule = if learner.is_iterative() {
            Schedule::new(c.checkpoints.clone())
        } else {
            Schedule::new(vec![0])
        };
        let mut ev = Evaluate {
            sets,
            records: Vec::new(),
            checkpoints: Vec::new(),
            eval_seconds: 0.0,
            last_seconds: 0.0,
        };
        let solver_seed = derive_seed(cell.seed, &format!("solver/{}", cell.repeat));
        learner
            .fit(train.view(), &schedule, &mut seeded(solver_seed), &mut ev)
            .map_err(|e| e.to_string())?;
        let mut records = ev.records;
        records.extend(capped(&ev.checkpoints, &c.caps));
        Ok(CellOutput {
            records,
            train_seconds: ev.last_seconds,
            eval_seconds: ev.eval_seconds,
            ..CellOutput::default()
        })
    }
}

/// What one checkpoint measured: its density and its records.
struct Measured {
    density: f64,
    records: Vec<Record>,
}

/// The metrics recorded again at each sparsity cap, and their names there.
const CAPPED: [(&str, &str); 4] = [
    ("explained_variance", "capped_explained_variance"),
    ("flops_all_rows", "capped_flops_all_rows"),
    ("flops_active_rows", "capped_flops_active_rows"),
    ("density", "capped_density"),
];

/// For each cap, the records of the last checkpoint with `density ≤ cap`, renamed
/// `capped_<metric>` (so that curves against steps or FLOPs never see them twice) and with the
/// cap as their coordinate.
fn capped(checkpoints: &[Measured], caps: &[f64]) -> Vec<Record> {
    let mut out = Vec::new();
    for &cap in caps {
        if let Some(m) = checkpoints.iter().rev().find(|m| m.density <= cap) {
            out.extend(
                m.records
                    .iter()
                    .filter(|r| CAPPED.iter().any(|(of, _)| *of == r.metric))
                    .map(|r| Record {
                        metric: CAPPED
                            .iter()
                            .find(|(of, _)| *of == r.metric)
                            .map(|(_, name)| name.to_string())
                            .unwrap_or_default(),
                        coord: Some(Coord {
                            name: MAX_DENSITY.to_string(),
                            value: cap,
                        }),
                        ..r.clone()
                    }),
            );
        }
    }
    out
}

/// Measures every set at each checkpoint, off the solver clock.
struct Evaluate<'a> {
    /// Each set with its total variance, computed once.
    sets: Vec<(&'static str, Variance<'a>)>,
    records: Vec<Record>,
    checkpoints: Vec<Measured>,
    eval_seconds: f64,
    last_seconds: f64,
}

impl Observer<SparsePcaModel> for Evaluate<'_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &SparsePcaModel) -> Control {
        let t = Instant::now();
        let z = model.loadings.view();
        let (nnz, density) = (model.nnz(), model.density());
        let mut records = Vec::new();
        for &(name, a) in &self.sets {
            let rec = |metric: &str, value: f64| Record {
                set: name.to_string(),
                metric: metric.to_string(),
                step: at.step,
                seconds: at.solver_seconds,
                k: None,
                coord: None,
                value,
            };
            records.push(rec("explained_variance", a.adjusted(z)));
            records.push(rec("cardinality", nnz as f64));
            records.push(rec("density", density));
            records.push(rec("flops_all_rows", model.flops as f64));
            records.push(rec("flops_active_rows", model.flops_active_rows as f64));
            records.push(rec("steps", at.step as f64));
            records.push(rec("objective", model.objective));
        }
        self.records.extend(records.iter().cloned());
        self.checkpoints.push(Measured { density, records });
        self.last_seconds = at.solver_seconds;
        self.eval_seconds += t.elapsed().as_secs_f64();
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn parts_are_centred_with_the_chosen_means() {
        let a = array![[1.0, 3.0, 10.0], [2.0, 2.0, 5.0]];
        let (tr, means) = part(a.view(), &[0, 1], true, None);
        assert_eq!(tr, array![[-1.0, 1.0], [0.0, 0.0]]);
        assert_eq!(means, vec![2.0, 2.0]);
        let (te, _) = part(a.view(), &[2], true, Some(&means));
        assert_eq!(te, array![[8.0], [3.0]]);
        let (own, _) = part(a.view(), &[2], true, None);
        assert_eq!(own, array![[0.0], [0.0]]);
        let (raw, _) = part(a.view(), &[2], false, Some(&means));
        assert_eq!(raw, array![[10.0], [5.0]]);
    }

    #[test]
    fn caps_take_the_last_checkpoint_that_meets_them() {
        let m = |step: u64, density: f64| Measured {
            density,
            records: vec![Record {
                set: "train".into(),
                metric: "explained_variance".into(),
                step,
                seconds: 0.0,
                k: None,
                coord: None,
                value: step as f64,
            }],
        };
        // Density falls then rises: the last checkpoint under each cap is taken.
        let cps = [m(0, 0.5), m(10, 0.04), m(20, 0.08), m(30, 0.3)];
        let out = capped(&cps, &[0.05, 0.1, 0.01]);
        assert_eq!(out.len(), 2, "no checkpoint meets the 1 % cap");
        assert_eq!((out[0].step, out[1].step), (10, 20));
        assert_eq!((out[0].value, out[1].value), (10.0, 20.0));
        assert_eq!(out[0].metric, "capped_explained_variance");
        assert_eq!(out[0].coord.as_ref().unwrap().value, 0.05);
        assert_eq!(out[1].coord.as_ref().unwrap().name, MAX_DENSITY);
    }
}
