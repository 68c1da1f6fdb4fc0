//! Per-category logistic regression with nested cross-validation (FuncISH §2.5, §2.6, §4;
//! `../shared/papers/funcish.md`): the semantic phase that turns bag-of-words images into
//! their functional representation (Fig. 2F).
//!
//! # What is computed
//!
//! For every category `c` (a GO term: the images of genes annotated to it are positive) and
//! every outer fold `o`:
//!
//! ```text
//! train = images \ outer[o],  test = outer[o]
//! for v in inner folds of train, for C in c_grid (ascending, warm-started):
//!     score[o][v][C] = metric(fit(train \ inner[v], C), inner[v])
//! C*[o] = argmax_C mean_v score[o][v][C]          (folds without a score skipped; ties → smaller C)
//! model[o] = fit(train, C*[o]);  P[test, c] = σ(model[o] · x̃[test]);  auc[o] = AUC(test)
//! ```
//!
//! and then `AUC_c = mean_o auc[o]` over the folds where it is defined, its permutation
//! p-value, the average weight vector, and the per-fold mean AUC over categories (Fig. S3's
//! error bars). The logistic regression is LIBLINEAR's `-s 0` problem with a regularised bias
//! (`-B 1`), solved by LIBLINEAR's trust-region Newton method ([`logreg`], where the choice
//! of solver is argued).
//!
//! # Choices where the spec is loose (\[A\], all configurable)
//!
//! * **Partitions** (§2.6 "five non-overlapping equal sets, without controlling for the number
//!   of positives"): the images are shuffled by a generator seeded with
//!   `derive_seed(seed, "funcish/outer")` and cut into `outer_folds` contiguous blocks of
//!   sizes differing by at most one (not stratified). Each outer training set gets one inner
//!   partition the same way (`"funcish/inner/<o>"`). Both are shared by all categories, so the
//!   training matrices are built once per split and read by every category.
//! * **`group_by_gene`** (default off, the paper splits images): with gene ids, the *genes*
//!   are shuffled and cut into near-equal blocks, and every image goes to its gene's fold, so
//!   no gene is in a training and a test fold at once (the sensitivity check of §2.6's leakage
//!   note). Folds are then near-equal in genes, not images.
//! * **Selection metric**: AUC on the validation fold (default), or minus the mean log-loss.
//!   An inner fold whose validation set lacks positives or negatives has no AUC and is skipped
//!   in the mean (counted in [`CategoryResult::inner_skipped`]). When no inner fold has a score
//!   (all C tie as undefined) the smallest C is chosen, as for any tie.
//! * **Scaling** (§2.4 leaves it open): `raw` counts (default), `l1_per_level` (each level's
//!   `K` word counts and its zero-descriptor count divided by their sum: the fractions of that
//!   level's descriptors; layout of §2.4, `levels` = 4), `log1p`, or `standardise` (per-feature
//!   mean and population standard deviation, fitted on the rows of each training set only —
//!   the inner training set for inner fits, the outer training set for the outer model — and
//!   applied to its validation/test rows; a constant feature is only centred). The reported
//!   weights live in the scaled feature space.
//! * **Warm starts**: along the C grid within an inner fold (ascending C, each fit starting at
//!   the previous solution: the regularisation path is continuous in C). The outer fit starts
//!   from zero. Warm starts change the solution only within the solver's tolerance.
//! * **Weights for §2.11**: the average of the outer-fold models (weights and bias); per-fold
//!   models are kept only on request (`keep_fold_models`, 2081 × 5 × 2005 f64 = 420 MB at the
//!   paper's size).
//! * **AUC edge cases**: an outer test fold without positives or negatives has no AUC
//!   (`None`); it is skipped in the category's mean and counted in
//!   [`CategoryResult::folds_skipped`]; a category with no AUC at all has `mean_auc = None`.
//! * **Permutation test** (§4): labels permuted *within* each outer test fold, the mean
//!   fold AUC recomputed, `p = (1 + #{≥ obs}) / (1 + permutations)`; see
//!   [`dyad_core::auc::grouped_auc_permutation`] for why within folds. The predictions are not
//!   retrained (the spec's "permute the labels of the held-out predictions"). The generator of
//!   category `c` is seeded by `derive_seed(seed, "funcish/perm/<c>")`, independent of
//!   threads. `permutations = 0` gives no p-value.
//!
//! # Determinism and parallelism
//!
//! Within a split, chunks of four categories run in parallel (rayon) over one shared,
//! read-only training matrix; each chunk's computation is sequential and each category's
//! results land in its own slot, so the output is identical for any number of threads (tested
//! at 1 and 2) and to fitting every category alone (tested, to the bit).
//!
//! # Cost
//!
//! Per outer fold and category: `|c_grid| × inner_folds` warm-started fits on ~64% of the
//! images and one fit on 80%; each fit is a few Newton iterations of a few CG steps, each a
//! pass over `n × (D+1)` doubles (`benches/funcish.rs`). When a training set has fewer
//! images than weights and enough categories share it, the fits run on its row-space
//! coordinates (`rowspace.rs`: one SVD per training set, then passes over `n × n` numbers;
//! the same problem and stopping rule, solutions equal within the solver's tolerance): 3×
//! faster fits at the paper profile's 960-image inner sets of 2,005 weights.
//!
//! The categories of a training set are fitted four at a time ([`fit_logreg_batch`], one pass
//! over the rows serving all four; `logreg.rs`, "Batches"). In the inner loop a chunk's four
//! categories walk the C grid together, each from its own previous solution. The outer fits of
//! a chunk run together, each at its own chosen C. Every result is the same to the bit as
//! fitting each category alone. Measured once on a loaded 2-core machine (64 categories × the
//! 6-value C path on a 1,000 × 1,000 row-space design, one thread), batching took 1.50 s
//! against 1.78 s for the categories one at a time (0.84×). With the blocked pass of
//! `logreg.rs`, the `nested_cv` bench (600 images, 4 categories, one thread) went from 2.49 s
//! to 1.65 s.

pub mod logreg;
mod rowspace;

pub use logreg::{
    BatchFit, FitReport, LogRegConfig, Workspace, fit_logreg, fit_logreg_batch, gradient,
    predict_proba,
};

use dyad_core::auc::{auc, grouped_auc_permutation};
use dyad_core::{Observer, Rng, Schedule, SolverClock, derive_seed, seeded};
use dyad_kernels::params;
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::{Array1, Array2, ArrayView2};
use rand::Rng as _;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use rowspace::FitSpace;
use serde::{Deserialize, Serialize};

/// Feature scaling before the regression (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scaling {
    Raw,
    L1PerLevel,
    Log1p,
    Standardise,
}

/// The inner-CV score that selects C.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMetric {
    /// Validation AUC (undefined folds skipped).
    Auc,
    /// Minus the mean validation log-loss.
    LogLoss,
}

/// Parameters of the nested cross-validation (§2.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NestedCvConfig {
    /// Outer folds (5).
    #[serde(default = "default_folds")]
    pub outer_folds: usize,
    /// Inner folds per outer training set (5).
    #[serde(default = "default_folds")]
    pub inner_folds: usize,
    /// LIBLINEAR's `C` values, strictly increasing ({0.001, …, 100}).
    #[serde(default = "default_c_grid")]
    pub c_grid: Vec<f64>,
    /// `auc` (default) or `log_loss`.
    #[serde(default = "default_selection")]
    pub selection: SelectionMetric,
    /// Label permutations of the significance test (1000; 0: none).
    #[serde(default = "default_permutations")]
    pub permutations: usize,
    /// `raw` (default) | `l1_per_level` | `log1p` | `standardise`.
    #[serde(default = "default_scaling")]
    pub scaling: Scaling,
    /// Resolution levels of the bag-of-words layout (used by `l1_per_level`; 4).
    #[serde(default = "default_levels")]
    pub levels: usize,
    /// Split by gene instead of by image (needs gene ids; false).
    #[serde(default)]
    pub group_by_gene: bool,
    /// Keep every outer fold's model (false: only their average).
    #[serde(default)]
    pub keep_fold_models: bool,
    /// The logistic-regression solver.
    #[serde(default)]
    pub solver: LogRegConfig,
}

fn default_folds() -> usize {
    5
}
fn default_c_grid() -> Vec<f64> {
    vec![0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
}
fn default_selection() -> SelectionMetric {
    SelectionMetric::Auc
}
fn default_permutations() -> usize {
    1000
}
fn default_scaling() -> Scaling {
    Scaling::Raw
}
fn default_levels() -> usize {
    4
}

impl Default for NestedCvConfig {
    fn default() -> Self {
        Self {
            outer_folds: default_folds(),
            inner_folds: default_folds(),
            c_grid: default_c_grid(),
            selection: default_selection(),
            permutations: default_permutations(),
            scaling: default_scaling(),
            levels: default_levels(),
            group_by_gene: false,
            keep_fold_models: false,
            solver: LogRegConfig::default(),
        }
    }
}

/// Every parameter without data: folds ≥ 2, a non-empty, positive, finite, strictly
/// increasing C grid, levels ≥ 1, and the solver's settings (under `solver`).
impl Checked for NestedCvConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::count_at_least("outer_folds", self.outer_folds as u64, 2)?;
        params::count_at_least("inner_folds", self.inner_folds as u64, 2)?;
        if self.c_grid.is_empty() {
            return Err(ParamError::new("c_grid", "must not be empty"));
        }
        for &c in &self.c_grid {
            params::positive("c_grid", c)?;
        }
        if self.c_grid.windows(2).any(|w| w[1] <= w[0]) {
            return Err(ParamError::new(
                "c_grid",
                format!("must be strictly increasing, got {:?}", self.c_grid),
            ));
        }
        params::at_least_one("levels", self.levels as u64)?;
        self.solver.check().map_err(|e| e.under("solver"))
    }
}

/// The input of the semantic phase.
#[derive(Debug, Clone, Copy)]
pub struct CategoryData<'a> {
    /// Bag-of-words rows, `n_images × D` (non-negative counts for `l1_per_level` / `log1p`).
    pub features: ArrayView2<'a, f64>,
    /// Per category, the indices of its positive images (any order; duplicates ignored).
    pub positives: &'a [Vec<usize>],
    /// Gene id of every image (needed for `group_by_gene`).
    pub genes: Option<&'a [u64]>,
}

/// Positive image indices per category from a boolean `n_images × n_categories` matrix.
pub fn positives_from_matrix(labels: ArrayView2<'_, bool>) -> Vec<Vec<usize>> {
    (0..labels.ncols())
        .map(|c| {
            labels
                .column(c)
                .iter()
                .enumerate()
                .filter(|(_, l)| **l)
                .map(|(i, _)| i)
                .collect()
        })
        .collect()
}

/// One category's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryResult {
    /// Number of positive images.
    pub n_positive: usize,
    /// Test AUC per outer fold (`None`: the fold lacks positives or negatives).
    pub fold_auc: Vec<Option<f64>>,
    /// Outer folds without an AUC.
    pub folds_skipped: usize,
    /// Mean of the defined fold AUCs.
    pub mean_auc: Option<f64>,
    /// The C chosen in each outer fold.
    pub chosen_c: Vec<f64>,
    /// `inner_scores[o][v][k]`: the selection score of `c_grid[k]` on inner fold `v` of outer
    /// fold `o` (`None`: undefined).
    pub inner_scores: Vec<Vec<Vec<Option<f64>>>>,
    /// Inner folds without a score, summed over outer folds (AUC selection only).
    pub inner_skipped: usize,
    /// Permutation p-value of `mean_auc` (`None` without permutations or without an AUC).
    pub p_value: Option<f64>,
}

/// The output of [`nested_cv`].
#[derive(Debug, Clone, PartialEq)]
pub struct NestedCvResult {
    /// `n_images × n_categories` out-of-fold probabilities: the functional representation.
    pub probabilities: Array2<f64>,
    /// Image indices of each outer fold (sorted).
    pub outer_folds: Vec<Vec<usize>>,
    /// `inner_folds[o][v]`: image indices of inner fold `v` of outer fold `o` (sorted).
    pub inner_folds: Vec<Vec<Vec<usize>>>,
    pub categories: Vec<CategoryResult>,
    /// Per outer fold, the mean test AUC over the categories that have one (Fig. S3).
    pub fold_mean_auc: Vec<Option<f64>>,
    /// `n_categories × D`: average of the outer models' feature weights (scaled space).
    pub weights: Array2<f64>,
    /// Average of the outer models' bias weights (zeros without bias).
    pub bias: Array1<f64>,
    /// `fold_models[o]`: `n_categories × n_weights` (bias last), when `keep_fold_models`.
    pub fold_models: Option<Vec<Array2<f64>>>,
}

/// The classifier family of FuncISH's semantic phase: from bag-of-words images and category
/// memberships to out-of-fold probabilities and per-category statistics.
pub trait CategoryClassifier: Send + Sync {
    /// Train and evaluate on `input`; reports one result, at step 0, marked last.
    fn fit(
        &self,
        input: &CategoryData<'_>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<NestedCvResult>,
    ) -> Result<(), AlgoError>;

    fn is_iterative(&self) -> bool;

    /// The nested cross-validation this classifier is, when its `fit` reports exactly
    /// [`nested_cv`]`(input, cfg, seed)` with `seed` the first `u64` drawn from its `rng`: a
    /// task may then fit it once without the permutation test and share it between cells on
    /// the same features and seed, adding the p-values ([`permutation_p_values`]) where
    /// `cfg.permutations` asks for them. `None` (the default): call `fit`.
    fn cross_validation(&self) -> Option<&NestedCvConfig> {
        None
    }
}

impl CategoryClassifier for NestedCvConfig {
    /// The seed of [`nested_cv`] is the first `u64` drawn from `rng`.
    fn fit(
        &self,
        input: &CategoryData<'_>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<NestedCvResult>,
    ) -> Result<(), AlgoError> {
        if schedule.steps().is_empty() {
            return Ok(());
        }
        let seed: u64 = rng.random();
        let mut clock = SolverClock::start();
        let result = nested_cv(input, self, seed)?;
        clock.report(0, true, &result, obs);
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        false
    }

    fn cross_validation(&self) -> Option<&NestedCvConfig> {
        Some(self)
    }
}

/// Shuffle `units` with `rng` and cut into `k` contiguous blocks of near-equal size.
fn partition_units(mut units: Vec<usize>, k: usize, rng: &mut Rng) -> Vec<Vec<usize>> {
    units.shuffle(rng);
    let n = units.len();
    (0..k)
        .map(|f| units[f * n / k..(f + 1) * n / k].to_vec())
        .collect()
}

/// Partition `images` (sorted) into `k` folds, by image or by gene; each fold sorted.
fn partition(images: &[usize], k: usize, genes: Option<&[u64]>, rng: &mut Rng) -> Vec<Vec<usize>> {
    let mut folds = match genes {
        None => partition_units(images.to_vec(), k, rng),
        Some(genes) => {
            let mut ids: Vec<u64> = images.iter().map(|&i| genes[i]).collect();
            ids.sort_unstable();
            ids.dedup();
            let blocks = partition_units((0..ids.len()).collect(), k, rng);
            let mut fold_of_gene = vec![0; ids.len()];
            for (f, b) in blocks.iter().enumerate() {
                for &g in b {
                    fold_of_gene[g] = f;
                }
            }
            let mut folds = vec![Vec::new(); k];
            for &i in images {
                let g = ids.binary_search(&genes[i]).expect("gene listed");
                folds[fold_of_gene[g]].push(i);
            }
            folds
        }
    };
    for f in &mut folds {
        f.sort_unstable();
    }
    folds
}

/// The sorted complement of `fold` in `all` (both sorted).
fn complement(all: &[usize], fold: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(all.len() - fold.len());
    let mut j = 0;
    for &i in all {
        while j < fold.len() && fold[j] < i {
            j += 1;
        }
        if j < fold.len() && fold[j] == i {
            continue;
        }
        out.push(i);
    }
    out
}

/// Row-wise scaling of the whole matrix (everything but `standardise`, which is fitted per
/// training set).
fn row_scaled(
    x: ArrayView2<'_, f64>,
    scaling: Scaling,
    levels: usize,
) -> Result<Array2<f64>, AlgoError> {
    let mut xs = x.as_standard_layout().into_owned();
    match scaling {
        Scaling::Raw | Scaling::Standardise => {}
        Scaling::Log1p => {
            if xs.iter().any(|&v| v <= -1.0) {
                return Err(AlgoError::param(
                    "scaling",
                    "= \"log1p\" needs features > -1",
                ));
            }
            xs.mapv_inplace(f64::ln_1p);
        }
        Scaling::L1PerLevel => {
            let d = xs.ncols();
            if !d.is_multiple_of(levels) || d < 2 * levels {
                return Err(AlgoError::param(
                    "levels",
                    format!(
                        "= {levels} does not fit scaling = \"l1_per_level\": {d} features are not {levels} levels of K words plus {levels} zero counts"
                    ),
                ));
            }
            if xs.iter().any(|&v| v < 0.0) {
                return Err(AlgoError::param(
                    "scaling",
                    "= \"l1_per_level\" needs non-negative counts",
                ));
            }
            let k = d / levels - 1;
            for mut row in xs.rows_mut() {
                for l in 0..levels {
                    let sum: f64 =
                        row.iter().skip(l * k).take(k).sum::<f64>() + row[levels * k + l];
                    if sum > 0.0 {
                        for j in l * k..(l + 1) * k {
                            row[j] /= sum;
                        }
                        row[levels * k + l] /= sum;
                    }
                }
            }
        }
    }
    Ok(xs)
}

/// Standardisation fitted on `rows` of `xs` (identity for other scalings).
struct Transform {
    mean: Vec<f64>,
    inv_sd: Vec<f64>,
}

impl Transform {
    fn fit(xs: &Array2<f64>, rows: &[usize], scaling: Scaling) -> Option<Self> {
        if scaling != Scaling::Standardise {
            return None;
        }
        let d = xs.ncols();
        let n = rows.len().max(1) as f64;
        let mut mean = vec![0.0; d];
        for &i in rows {
            for (m, v) in mean.iter_mut().zip(xs.row(i)) {
                *m += v;
            }
        }
        mean.iter_mut().for_each(|m| *m /= n);
        let mut var = vec![0.0; d];
        for &i in rows {
            for ((s, v), m) in var.iter_mut().zip(xs.row(i)).zip(&mean) {
                *s += (v - m) * (v - m);
            }
        }
        let inv_sd = var
            .iter()
            .map(|s| {
                let sd = (s / n).sqrt();
                if sd > 0.0 { 1.0 / sd } else { 1.0 }
            })
            .collect();
        Some(Self { mean, inv_sd })
    }
}

/// The rows `rows` of `xs`, transformed, as a contiguous matrix.
fn gather(xs: &Array2<f64>, rows: &[usize], t: Option<&Transform>) -> Array2<f64> {
    let d = xs.ncols();
    let mut out = Array2::zeros((rows.len(), d));
    for (mut o, &i) in out.rows_mut().into_iter().zip(rows) {
        match t {
            None => o.assign(&xs.row(i)),
            Some(t) => {
                for (j, (ov, v)) in o.iter_mut().zip(xs.row(i)).enumerate() {
                    *ov = (v - t.mean[j]) * t.inv_sd[j];
                }
            }
        }
    }
    out
}

fn signs(labels: &[bool], rows: &[usize]) -> Vec<f64> {
    rows.iter()
        .map(|&i| if labels[i] { 1.0 } else { -1.0 })
        .collect()
}

fn log_loss(p: &[f64], labels: &[bool], rows: &[usize]) -> f64 {
    let mut s = 0.0;
    for (pi, &i) in p.iter().zip(rows) {
        let q = if labels[i] { *pi } else { 1.0 - pi };
        s -= q.max(1e-300).ln();
    }
    s / rows.len().max(1) as f64
}

/// Run the nested cross-validation of §2.6 (module docs) on `input` with `cfg`; all
/// randomness derives from `seed`.
pub fn nested_cv(
    input: &CategoryData<'_>,
    cfg: &NestedCvConfig,
    seed: u64,
) -> Result<NestedCvResult, AlgoError> {
    nested_cv_in(input, cfg, seed, true, BATCH)
}

/// The categories whose fits run in lockstep, one pass over a training set's rows serving
/// all of them ([`fit_logreg_batch`]; module docs, "Cost").
const BATCH: usize = 4;

/// [`nested_cv`], fitting in each training set's row space when that saves work
/// (`row_space`; `rowspace.rs`) or always on the rows themselves, `batch` categories at a
/// time (1: each alone; the results are the same to the bit for any `batch`).
fn nested_cv_in(
    input: &CategoryData<'_>,
    cfg: &NestedCvConfig,
    seed: u64,
    row_space: bool,
    batch: usize,
) -> Result<NestedCvResult, AlgoError> {
    cfg.check()?;
    let batch = batch.max(1);
    let x = input.features;
    let (n, d) = x.dim();
    let n_cat = input.positives.len();
    if x.iter().any(|v| !v.is_finite()) {
        return Err(AlgoError::data("features must be finite"));
    }
    if n < cfg.outer_folds * cfg.inner_folds {
        return Err(AlgoError::param(
            "outer_folds",
            format!(
                "× inner_folds ({} × {}) exceeds the {n} images",
                cfg.outer_folds, cfg.inner_folds
            ),
        ));
    }
    let genes = if cfg.group_by_gene {
        let g = input
            .genes
            .ok_or_else(|| AlgoError::param("group_by_gene", "= true needs gene ids per image"))?;
        if g.len() != n {
            return Err(AlgoError::data(format!(
                "{} gene ids for {n} images",
                g.len()
            )));
        }
        Some(g)
    } else {
        None
    };
    let mut labels = vec![vec![false; n]; n_cat];
    for (c, pos) in input.positives.iter().enumerate() {
        for &i in pos {
            if i >= n {
                return Err(AlgoError::data(format!(
                    "category {c}: positive image {i} out of range (n = {n})"
                )));
            }
            labels[c][i] = true;
        }
    }
    let xs = row_scaled(x, cfg.scaling, cfg.levels)?;
    let p = cfg.solver.n_weights(d);
    let n_c = cfg.c_grid.len();
    let k_out = cfg.outer_folds;
    let k_in = cfg.inner_folds;

    let all: Vec<usize> = (0..n).collect();
    let outer = partition(
        &all,
        k_out,
        genes,
        &mut seeded(derive_seed(seed, "funcish/outer")),
    );
    if outer.iter().any(|f| f.is_empty()) {
        return Err(AlgoError::param(
            "outer_folds",
            format!("= {k_out} leaves an outer fold empty (too few genes?)"),
        ));
    }

    let mut probabilities = Array2::zeros((n, n_cat));
    let mut fold_auc = vec![vec![None; k_out]; n_cat];
    let mut chosen_c = vec![vec![0.0; k_out]; n_cat];
    let mut inner_scores = vec![vec![vec![vec![None; n_c]; k_in]; k_out]; n_cat];
    let mut weight_sum = Array2::<f64>::zeros((n_cat, p));
    let mut fold_models = cfg.keep_fold_models.then(Vec::new);
    let mut inner_folds_all = Vec::with_capacity(k_out);

    for (o, test) in outer.iter().enumerate() {
        let train = complement(&all, test);
        let inner = partition(
            &train,
            k_in,
            genes,
            &mut seeded(derive_seed(seed, &format!("funcish/inner/{o}"))),
        );
        if inner.iter().any(|f| f.is_empty()) {
            return Err(AlgoError::param(
                "inner_folds",
                format!("= {k_in} leaves an inner fold of outer fold {o} empty (too few genes?)"),
            ));
        }
        // --- inner loop: selection scores ---
        for (v, val) in inner.iter().enumerate() {
            let itrain = complement(&train, val);
            let t = Transform::fit(&xs, &itrain, cfg.scaling);
            let xtr = gather(&xs, &itrain, t.as_ref());
            let xval = gather(&xs, val, t.as_ref());
            let space = FitSpace::new(xtr.view(), &cfg.solver, if row_space { n_cat } else { 0 })?;
            let xval = space.project(xval.view());
            // per chunk of `batch` categories, their C paths in lockstep (each warm-started
            // from its own previous solution)
            let scores: Vec<Vec<Result<Vec<Option<f64>>, AlgoError>>> = (0..n_cat.div_ceil(batch))
                .into_par_iter()
                .map(|k| {
                    let cats = k * batch..((k + 1) * batch).min(n_cat);
                    let ys: Vec<Vec<f64>> =
                        cats.clone().map(|c| signs(&labels[c], &itrain)).collect();
                    let val_labels: Vec<Vec<bool>> = cats
                        .clone()
                        .map(|c| val.iter().map(|&i| labels[c][i]).collect())
                        .collect();
                    let mut a = vec![vec![0.0; space.dim()]; cats.len()];
                    let mut wss = vec![Workspace::default(); cats.len()];
                    let mut pred = vec![0.0; val.len()];
                    let mut out: Vec<Result<Vec<Option<f64>>, AlgoError>> =
                        cats.clone().map(|_| Ok(Vec::with_capacity(n_c))).collect();
                    for &cv in &cfg.c_grid {
                        // a category stops at its first error (as `?` stopped it alone)
                        let live: Vec<usize> =
                            (0..cats.len()).filter(|&j| out[j].is_ok()).collect();
                        let mut fits: Vec<BatchFit<'_>> = a
                            .iter_mut()
                            .zip(&mut wss)
                            .zip(&ys)
                            .zip(&out)
                            .filter(|(_, o)| o.is_ok())
                            .map(|(((w, ws), y), _)| BatchFit { y, c: cv, w, ws })
                            .collect();
                        let reps = space.fit_batch(&mut fits);
                        drop(fits);
                        for (j, rep) in live.into_iter().zip(reps) {
                            let c = cats.start + j;
                            if let Err(e) = rep {
                                out[j] = Err(e);
                                continue;
                            }
                            predict_proba(xval.view(), &a[j], space.bias(), &mut pred);
                            let score = match cfg.selection {
                                SelectionMetric::Auc => auc(&pred, &val_labels[j]),
                                SelectionMetric::LogLoss => Some(-log_loss(&pred, &labels[c], val)),
                            };
                            if let Ok(o) = &mut out[j] {
                                o.push(score);
                            }
                        }
                    }
                    out
                })
                .collect();
            for (c, s) in scores.into_iter().flatten().enumerate() {
                inner_scores[c][o][v] = s?;
            }
        }
        // --- choose C per category ---
        for (scores, chosen) in inner_scores.iter().zip(chosen_c.iter_mut()) {
            let mut best = (0usize, f64::NEG_INFINITY);
            for k in 0..n_c {
                let (sum, cnt) = scores[o]
                    .iter()
                    .filter_map(|per_c| per_c[k])
                    .fold((0.0, 0usize), |(s, m), x| (s + x, m + 1));
                if cnt > 0 && sum / cnt as f64 > best.1 {
                    best = (k, sum / cnt as f64);
                }
            }
            chosen[o] = cfg.c_grid[best.0];
        }
        // --- outer model ---
        let t = Transform::fit(&xs, &train, cfg.scaling);
        let xtr = gather(&xs, &train, t.as_ref());
        let xte = gather(&xs, test, t.as_ref());
        let space = FitSpace::new(xtr.view(), &cfg.solver, if row_space { n_cat } else { 0 })?;
        // per category: (weights, test predictions)
        type Fit = Result<(Vec<f64>, Vec<f64>), AlgoError>;
        let fits: Vec<Vec<Fit>> = (0..n_cat.div_ceil(batch))
            .into_par_iter()
            .map(|k| {
                let cats = k * batch..((k + 1) * batch).min(n_cat);
                let ys: Vec<Vec<f64>> = cats.clone().map(|c| signs(&labels[c], &train)).collect();
                let mut a = vec![vec![0.0; space.dim()]; cats.len()];
                let mut wss = vec![Workspace::default(); cats.len()];
                // each category at its own C, from zero
                let mut fits: Vec<BatchFit<'_>> = a
                    .iter_mut()
                    .zip(&mut wss)
                    .zip(&ys)
                    .zip(cats.clone())
                    .map(|(((w, ws), y), c)| BatchFit {
                        y,
                        c: chosen_c[c][o],
                        w,
                        ws,
                    })
                    .collect();
                let reps = space.fit_batch(&mut fits);
                drop(fits);
                reps.into_iter()
                    .zip(&a)
                    .map(|(rep, a)| {
                        rep?;
                        let w = space.weights(a).into_owned();
                        let mut pred = vec![0.0; test.len()];
                        predict_proba(xte.view(), &w, cfg.solver.bias, &mut pred);
                        Ok((w, pred))
                    })
                    .collect()
            })
            .collect();
        let mut models = fold_models.as_ref().map(|_| Array2::zeros((n_cat, p)));
        for (c, r) in fits.into_iter().flatten().enumerate() {
            let (w, pred) = r?;
            for (&i, &pi) in test.iter().zip(&pred) {
                probabilities[[i, c]] = pi;
            }
            let test_labels: Vec<bool> = test.iter().map(|&i| labels[c][i]).collect();
            fold_auc[c][o] = auc(&pred, &test_labels);
            for (s, wi) in weight_sum.row_mut(c).iter_mut().zip(&w) {
                *s += wi;
            }
            if let Some(m) = models.as_mut() {
                m.row_mut(c).assign(&Array1::from(w));
            }
        }
        if let (Some(all_models), Some(m)) = (fold_models.as_mut(), models) {
            all_models.push(m);
        }
        inner_folds_all.push(inner);
    }

    // --- per-category summaries (the permutation tests below) ---
    let mut categories: Vec<CategoryResult> = (0..n_cat)
        .into_par_iter()
        .map(|c| {
            let defined: Vec<f64> = fold_auc[c].iter().flatten().copied().collect();
            let mean_auc =
                (!defined.is_empty()).then(|| defined.iter().sum::<f64>() / defined.len() as f64);
            let inner_skipped = inner_scores[c]
                .iter()
                .flatten()
                .filter(|s| s.iter().all(Option::is_none))
                .count();
            CategoryResult {
                n_positive: labels[c].iter().filter(|&&l| l).count(),
                folds_skipped: fold_auc[c].iter().filter(|a| a.is_none()).count(),
                fold_auc: fold_auc[c].clone(),
                mean_auc,
                chosen_c: chosen_c[c].clone(),
                inner_scores: inner_scores[c].clone(),
                inner_skipped,
                p_value: None,
            }
        })
        .collect();
    permutation_test_of(
        &mut categories,
        &outer,
        &labels,
        &probabilities,
        cfg.permutations,
        seed,
    );
    let fold_mean_auc = (0..k_out)
        .map(|o| {
            let v: Vec<f64> = fold_auc.iter().filter_map(|a| a[o]).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    weight_sum.mapv_inplace(|v| v / k_out as f64);
    let weights = weight_sum.slice(ndarray::s![.., ..d]).to_owned();
    let bias = if cfg.solver.bias {
        weight_sum.column(d).to_owned()
    } else {
        Array1::zeros(n_cat)
    };
    Ok(NestedCvResult {
        probabilities,
        outer_folds: outer,
        inner_folds: inner_folds_all,
        categories,
        fold_mean_auc,
        weights,
        bias,
        fold_models,
    })
}

/// The permutation p-values of `result`'s categories (module docs, "Permutation test"), as
/// [`nested_cv`] with `permutations` would have computed them from the same `seed`: for a
/// result computed without them (`permutations = 0`) and kept, e.g. shared by several
/// analyses of the same fits. `positives` are the categories' positive images, as given to
/// [`nested_cv`]. Categories without an AUC keep `p_value = None`; `permutations = 0` clears
/// every p-value.
pub fn permutation_p_values(
    result: &mut NestedCvResult,
    positives: &[Vec<usize>],
    permutations: usize,
    seed: u64,
) -> Result<(), AlgoError> {
    let n = result.probabilities.nrows();
    if positives.len() != result.categories.len() {
        return Err(AlgoError::data(format!(
            "{} categories of positives for a result of {}",
            positives.len(),
            result.categories.len()
        )));
    }
    let mut labels = vec![vec![false; n]; positives.len()];
    for (c, pos) in positives.iter().enumerate() {
        for &i in pos {
            if i >= n {
                return Err(AlgoError::data(format!(
                    "category {c}: positive image {i} out of range (n = {n})"
                )));
            }
            labels[c][i] = true;
        }
    }
    let NestedCvResult {
        categories,
        outer_folds,
        probabilities,
        ..
    } = result;
    permutation_test_of(
        categories,
        outer_folds,
        &labels,
        probabilities,
        permutations,
        seed,
    );
    Ok(())
}

/// Sets every category's `p_value` from its out-of-fold `probabilities` (`None` without
/// permutations or without an AUC).
fn permutation_test_of(
    categories: &mut [CategoryResult],
    outer: &[Vec<usize>],
    labels: &[Vec<bool>],
    probabilities: &Array2<f64>,
    permutations: usize,
    seed: u64,
) {
    categories.par_iter_mut().enumerate().for_each(|(c, r)| {
        r.p_value = if permutations > 0 && r.mean_auc.is_some() {
            let preds: Vec<Vec<f64>> = outer
                .iter()
                .map(|f| f.iter().map(|&i| probabilities[[i, c]]).collect())
                .collect();
            let labs: Vec<Vec<bool>> = outer
                .iter()
                .map(|f| f.iter().map(|&i| labels[c][i]).collect())
                .collect();
            let groups: Vec<(&[f64], &[bool])> = preds
                .iter()
                .zip(&labs)
                .map(|(p, l)| (p.as_slice(), l.as_slice()))
                .collect();
            let mut rng = seeded(derive_seed(seed, &format!("funcish/perm/{c}")));
            grouped_auc_permutation(&groups, permutations, &mut rng).map(|t| t.p_value)
        } else {
            None
        };
    });
}

#[cfg(test)]
mod tests;
