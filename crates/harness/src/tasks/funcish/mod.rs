//! FuncISH's two tasks (funcish.md §2, §4): gene function from ISH images.
//!
//! * `gene-function`, table `[protocol.gene_function]`: the visual phase (dense multi-scale
//!   SIFT, per-level k-means dictionaries, bags of words) then a classifier of the
//!   `ish-classifier` family (the paper: L2-regularised logistic regression per GO category
//!   with nested 5 × 5 cross-validation) and the statistics of §3.1: per-category held-out
//!   AUC, permutation significance, nervous-system vs other categories (Wilcoxon rank-sum),
//!   AUC against category size, per-fold means (Fig. S3 error bars), and the classifier
//!   weights per scale (Fig. 5E).
//! * `gene-retrieval`, table `[protocol.gene_retrieval]`: the functional representation
//!   (out-of-fold probabilities of the classifier the table names) and a similarity of the
//!   `gene-similarity` family (GO-sim, flat-sim, BoW cosine, the NeuroBlast stand-in); for
//!   every gene with a related gene in a relation set, the top `k_max` most similar genes
//!   and the mean precision at every `K ≤ k_max` (Fig. 4).
//!
//! Both read the data set's visual features ([`features`]) through
//! [`dyad_datasets::provider::Data::derived_stored`]: the features of one data set and visual
//! configuration are extracted once, shared by every cell on them and kept on disk for later
//! runs. FuncISH's nested cross-validation is shared the same way ([`cv`]): the cells that fit
//! the same one (the same features, configuration and seed; the permutation count aside) read
//! the first one's, and the retrieval cells' functional representation is the gene-function
//! cells' (the same folds). The dictionaries are unsupervised and fitted on every image, test folds
//! included, as the paper describes (§2.3); their seed is the protocol's `feature_seed`, so
//! every repeat of a cell shares them and repeats differ in their cross-validation splits.
//!
//! # Records
//!
//! Set `test` (held-out statistics), step 0:
//! `mean_auc`, `neural_mean_auc`, `other_mean_auc`, `significant_fraction` (permutation
//! `p < 0.05`) overall / `neural_` / `other_`, `neural_vs_other_log10_p` (two-sided Wilcoxon
//! rank-sum of the neural categories' AUCs against the others'), `neural_vs_other_auc` (the
//! rank-sum's AUC: the probability that a neural category beats another), `categories`,
//! `neural_categories`, `images`, `discarded_images`, `dimension`; `auc_size_r` and
//! `auc_size_log10_p` (Pearson of AUC against log10 category size, Fig. S5); per category
//! `category_auc` and `category_size` (coordinate `category`); `auc_by_size` (mean AUC of the
//! categories in each log-spaced size bin, coordinate `category_size` = the bin's geometric
//! centre); `fit_seconds` (the shared cross-validation's own seconds when it was fitted, the
//! permutation test aside: what the fit costs, whichever cell fitted it); `fold_mean_auc`
//! (coordinate `fold`); `scale_weight` and `zero_weight` (mean
//! absolute weight of the words, and of the zero-descriptor count, of each scale; coordinate
//! `scale` = the downsampling factor; Fig. 5E) and `zero_features_in_top` (how many of the
//! `levels` zero-count features are among the `levels` features of largest mean absolute
//! weight: the paper's "the four most important features are the zero counts").
//! Sets `neural` and `other`: `auc_density`, the fraction of the group's categories in each
//! AUC bin (coordinate `auc` = bin centre; Fig. 3's two distributions). On the stand-in, sets
//! `planted` and `weighted`: `scale_share`, the fraction of the programme-carrying categories
//! planted at each scale, and whose largest standardised weight lies there (coordinate
//! `scale`; the §8.6 check `planted_scale_match` in detail), and `finest_weight_share` (set
//! `planted`): the finest scale's share of the standardised weight of the categories planted
//! at each scale; `finest_share_gap` (set `test`) its value at the finest planted scale minus
//! at the coarsest (the spec's "small-cell terms weight the finest scale").
//!
//! `gene-retrieval`: sets `cell-type`, `pathway`, `ppi`; `precision` with `k = K` for
//! `K = 1..=k_max`, and `queries` (genes with a related gene).

mod cv;
mod exhibits;
mod features;
mod raster;

use features::ish;
pub use features::{Features, VisualConfig, features};

use super::{CellOutput, CellProtocol, CellRun, Headline, Metric, Task, TaskInput};
use crate::cache::Record;
use crate::plan::{DatasetInstance, SolverInstance};
use crate::registry::{GENE_SIMILARITY, ISH_CLASSIFIER};
use crate::spec::SpecError;
use dyad_core::{Checkpoint, Control, Observer, Schedule, derive_seed, seeded};
use dyad_datasets::ish::IshSet;
use dyad_datasets::provider::kinds;
use dyad_funcish::classify::{CategoryClassifier, CategoryData, NestedCvConfig, NestedCvResult};
use dyad_funcish::similarity::{GeneSimilarity, SimilarityInput, gene_row, precision_curve, top_k};
use dyad_kernels::Checked;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

fn positives(set: &IshSet) -> Vec<Vec<usize>> {
    set.positive_images()
        .into_iter()
        .map(|v| v.into_iter().map(|i| i as usize).collect())
        .collect()
}

// ---------------------------------------------------------------------------------------
// gene-function
// ---------------------------------------------------------------------------------------

/// The classification task.
pub struct GeneFunctionTask;

const TEST: &str = "test";
const NEURAL: &str = "neural";
const OTHER: &str = "other";

macro_rules! metric {
    ($name:expr, $label:expr, $higher:expr, $pct:expr, $desc:expr) => {
        Metric {
            name: $name,
            label: $label,
            unit: "",
            higher_is_better: $higher,
            percent: $pct,
            description: $desc,
        }
    };
}

static FUNCTION_METRICS: &[Metric] = &[
    metric!(
        "mean_auc",
        "mean AUC",
        true,
        false,
        "held-out AUC averaged over the outer folds, then over the categories"
    ),
    metric!(
        "neural_mean_auc",
        "mean AUC (neural)",
        true,
        false,
        "mean_auc over the nervous-system categories"
    ),
    metric!(
        "other_mean_auc",
        "mean AUC (other)",
        true,
        false,
        "mean_auc over the other categories"
    ),
    metric!(
        "significant_fraction",
        "significant",
        true,
        true,
        "fraction of the categories whose AUC is significant (permutation p < 0.05)"
    ),
    metric!(
        "neural_significant_fraction",
        "significant (neural)",
        true,
        true,
        "significant_fraction over the nervous-system categories"
    ),
    metric!(
        "other_significant_fraction",
        "significant (other)",
        true,
        true,
        "significant_fraction over the other categories"
    ),
    metric!(
        "neural_vs_other_log10_p",
        "log10 p (neural vs other)",
        false,
        false,
        "log10 of the two-sided Wilcoxon rank-sum p of the neural categories' AUCs against the others'"
    ),
    metric!(
        "neural_vs_other_auc",
        "P(neural > other)",
        true,
        false,
        "the rank-sum's AUC: probability that a neural category's AUC exceeds another's"
    ),
    metric!(
        "categories",
        "categories",
        true,
        false,
        "categories with a held-out AUC"
    ),
    metric!(
        "neural_categories",
        "neural categories",
        true,
        false,
        "nervous-system categories with a held-out AUC"
    ),
    metric!(
        "images",
        "images",
        true,
        false,
        "images used (after the no-expression filter)"
    ),
    metric!(
        "discarded_images",
        "discarded",
        false,
        false,
        "images dropped for showing no expression"
    ),
    metric!(
        "dimension",
        "D",
        true,
        false,
        "dimension of the bag-of-words vectors"
    ),
    metric!(
        "auc_size_r",
        "r(AUC, log size)",
        true,
        false,
        "Pearson correlation of the category AUCs with log10 category size (Fig. S5)"
    ),
    metric!(
        "auc_size_log10_p",
        "log10 p (size)",
        false,
        false,
        "log10 of the two-sided p of auc_size_r"
    ),
    metric!(
        "category_auc",
        "AUC",
        true,
        false,
        "a category's mean held-out AUC (coordinate category)"
    ),
    metric!(
        "category_size",
        "genes",
        true,
        false,
        "a category's positive images (coordinate category)"
    ),
    metric!(
        "auc_by_size",
        "mean AUC",
        true,
        false,
        "mean AUC of the categories in a log-spaced size bin (coordinate category_size)"
    ),
    metric!(
        "fold_mean_auc",
        "mean AUC (fold)",
        true,
        false,
        "mean held-out AUC over the categories of one outer fold (coordinate fold)"
    ),
    metric!(
        "scale_weight",
        "mean |w| (words)",
        true,
        false,
        "mean absolute classifier weight of a scale's visual words (coordinate scale = downsampling factor; Fig. 5E)"
    ),
    metric!(
        "zero_weight",
        "mean |w| (zero count)",
        true,
        false,
        "mean absolute classifier weight of a scale's zero-descriptor count (coordinate scale)"
    ),
    metric!(
        "zero_features_in_top",
        "zero counts in top",
        true,
        false,
        "how many of the zero-descriptor counts are among the same number of features of largest mean absolute weight"
    ),
    metric!(
        "auc_density",
        "fraction of categories",
        true,
        true,
        "fraction of the group's categories whose AUC falls in the bin (coordinate auc = bin centre; Fig. 3)"
    ),
    metric!(
        "same_gene_pairs",
        "same-gene pairs",
        true,
        false,
        "pairs of images of one gene (its image series; Fig. S2)"
    ),
    metric!(
        "same_gene_median_similarity",
        "median cosine (same gene)",
        true,
        false,
        "median BoW cosine of the image pairs of one gene (Fig. S2)"
    ),
    metric!(
        "different_gene_median_similarity",
        "median cosine (different genes)",
        false,
        false,
        "median BoW cosine of random image pairs of different genes (Fig. S2)"
    ),
    metric!(
        "same_vs_different_log10_p",
        "log10 p (same vs different gene)",
        false,
        false,
        "log10 of the two-sided rank-sum p of same-gene against different-gene similarities (Fig. S2)"
    ),
    metric!(
        "same_vs_different_auc",
        "P(same > different)",
        true,
        false,
        "probability that a same-gene pair is more similar than a different-gene pair"
    ),
    metric!(
        "similarity_density",
        "fraction of pairs",
        true,
        true,
        "fraction of the pairs whose BoW cosine falls in the bin (sets same-gene, different-gene; coordinate similarity; Fig. S2)"
    ),
    metric!(
        "overlay_size_t",
        "t (footprints)",
        true,
        false,
        "Welch's t of the footprints of Fig. 6's two categories' top-word occurrences in one image (larger-footprint category first)"
    ),
    metric!(
        "overlay_size_log10_p",
        "log10 p (footprints)",
        false,
        false,
        "log10 of Welch's two-sided p for overlay_size_t (the paper: P < 1e-17 for Add2)"
    ),
    metric!(
        "planted_scale_match",
        "planted scale found",
        true,
        true,
        "stand-in only: fraction of programme-carrying categories whose largest standardised weight lies at the planted scale (chance 1/4)"
    ),
    metric!(
        "scale_share",
        "share of programmes",
        true,
        true,
        "stand-in only: per scale (coordinate scale = downsampling factor), the fraction of the programme-carrying categories planted there (set planted) and whose largest standardised weight lies there (set weighted)"
    ),
    metric!(
        "finest_weight_share",
        "finest scale's weight share",
        true,
        true,
        "stand-in only: mean over the programme-carrying categories planted at a scale (coordinate scale) of the finest scale's share of their standardised weight"
    ),
    metric!(
        "finest_share_gap",
        "finest-scale share gap",
        true,
        true,
        "stand-in only: the finest scale's share of the standardised weight, mean over the programmes planted at the finest scale minus over those at the coarsest planted scale (§8.6: small-cell terms weight the finest scale)"
    ),
    metric!(
        "programme_mean_auc",
        "mean AUC (programme)",
        true,
        false,
        "stand-in only: mean AUC of the categories that own a planted texture programme"
    ),
    metric!(
        "no_programme_mean_auc",
        "mean AUC (no programme)",
        true,
        false,
        "stand-in only: mean AUC of the categories without a programme of their own"
    ),
    metric!(
        "planted_scale_categories",
        "programme categories",
        true,
        false,
        "stand-in only: categories the planted-scale check counts"
    ),
    metric!(
        "feature_seconds",
        "feature s",
        false,
        false,
        "seconds of the visual phase (shared by the cells of a data set)"
    ),
    metric!(
        "fit_seconds",
        "fit s",
        false,
        false,
        "seconds of the nested cross-validation when it was fitted, without the permutation test (shared by the cells that fit the same one)"
    ),
];

static FUNCTION_HEADLINE: &[Headline] = &[
    Headline {
        metric: "mean_auc",
        k: None,
    },
    Headline {
        metric: "neural_mean_auc",
        k: None,
    },
    Headline {
        metric: "significant_fraction",
        k: None,
    },
];

/// `[protocol.gene_function]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FunctionProtocol {
    #[serde(default)]
    features: Option<VisualConfig>,
    /// Bins of the AUC histograms over `[0, 1]` (Fig. 3; 20).
    #[serde(default = "bins")]
    auc_bins: usize,
    /// Log-spaced category-size bins (Fig. S5; 8).
    #[serde(default = "size_bins")]
    size_bins: usize,
    /// Significance level of the permutation test (0.05).
    #[serde(default = "alpha")]
    alpha: f64,
    /// Random different-gene pairs of Fig. S2 (100,000, §2.13 [A]).
    #[serde(default = "s2_pairs")]
    s2_pairs: usize,
    /// Tables 1 and 2 and the pictures of Figs. 5 and 6 in the first repeat's cells (true).
    #[serde(default = "yes")]
    exhibits: bool,
}

fn s2_pairs() -> usize {
    100_000
}
fn yes() -> bool {
    true
}

fn bins() -> usize {
    20
}
fn size_bins() -> usize {
    8
}
fn alpha() -> f64 {
    0.05
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct FunctionCell {
    features: VisualConfig,
    auc_bins: usize,
    size_bins: usize,
    alpha: f64,
    s2_pairs: usize,
    exhibits: bool,
}

impl Task for GeneFunctionTask {
    fn table(&self) -> &'static str {
        "gene_function"
    }
    fn name(&self) -> &'static str {
        "gene-function"
    }
    fn version(&self) -> u32 {
        3
    }
    fn description(&self) -> &'static str {
        "FuncISH: GO categories predicted from bags of visual words of ISH images; held-out AUC per category, significance, neural vs other"
    }
    fn family(&self) -> &'static str {
        ISH_CLASSIFIER
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::ISH]
    }
    fn metrics(&self) -> &'static [Metric] {
        FUNCTION_METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        FUNCTION_HEADLINE
    }
    fn coordinates(&self) -> &'static [&'static str] {
        &[
            "category",
            "category_size",
            "fold",
            "scale",
            "auc",
            "similarity",
        ]
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/funcish/",
            "datasets/src/pipelines/dsift.rs",
            "datasets/src/pipelines/bow.rs",
            "datasets/src/pipelines/kmeans.rs",
            "core/src/auc.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: FunctionProtocol = profiled(input, "gene_function")?;
        let features = p.features.unwrap_or_else(default_visual);
        features
            .validate()
            .map_err(|e| input.error(&["gene_function", "features"], e))?;
        if p.auc_bins < 2 || p.size_bins < 1 {
            return Err(input.error(
                &["gene_function"],
                "`auc_bins` must be at least 2 and `size_bins` at least 1".into(),
            ));
        }
        if !(p.alpha > 0.0 && p.alpha < 1.0) {
            return Err(input.error(&["gene_function", "alpha"], "must be in (0, 1)".into()));
        }
        input.refuse_tune("gene-function selects its regulariser by nested cross-validation inside each cell: sweep other parameters with `grid`")?;
        Ok(Box::new(FunctionCell {
            features,
            auc_bins: p.auc_bins,
            size_bins: p.size_bins,
            alpha: p.alpha,
            s2_pairs: p.s2_pairs,
            exhibits: p.exhibits,
        }))
    }
}

/// A task table whose values may be per profile anywhere inside (`{ quick = …, paper = … }`,
/// as in solver and data-set parameters), resolved for the plan's profile.
fn profiled<T: serde::de::DeserializeOwned>(
    input: &TaskInput<'_>,
    table: &str,
) -> Result<T, SpecError> {
    let raw: toml::Value = input.table(table)?;
    let v = crate::profile::resolve_value(&raw, input.profile);
    T::deserialize(v).map_err(|e| {
        input.error(
            &[table],
            format!("key `protocol.{table}`: {}", e.to_string().trim()),
        )
    })
}

fn default_visual() -> VisualConfig {
    serde_json::from_value(serde_json::json!({})).expect("defaults")
}

/// Keeps the classifier's one report.
struct Keep(Option<NestedCvResult>);

impl Observer<NestedCvResult> for Keep {
    fn checkpoint(&mut self, _: Checkpoint, m: &NestedCvResult) -> Control {
        self.0 = Some(m.clone());
        Control::Continue
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

impl CellProtocol for FunctionCell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        let mut c = self.clone();
        c.features = self.features.with_variant(solver);
        serde_json::to_value(c).expect("serializable")
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        if d.resolved.kind != kinds::ISH {
            return Err(format!("gene-function needs {}", kinds::ISH));
        }
        Ok(())
    }

    fn sets(&self) -> Vec<String> {
        vec![
            TEST.into(),
            NEURAL.into(),
            OTHER.into(),
            "same-gene".into(),
            "different-gene".into(),
            "planted".into(),
            "weighted".into(),
        ]
    }

    fn steps(&self, _: &SolverInstance) -> u64 {
        0
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let set = ish(cell.data, cell.dataset)?;
        let classifier = cell
            .candidates
            .first()
            .and_then(|b| b.family::<dyn CategoryClassifier>())
            .ok_or_else(|| format!("solver `{}` is not an ISH classifier", cell.solver.name))?;
        let visual = self.features.with_variant(cell.solver);
        let feats = features(cell.data, cell.dataset, &visual)?;
        let pos = positives(set);
        let genes: Vec<u64> = set.image_gene.iter().map(|&g| g as u64).collect();
        let input = CategoryData {
            features: feats.bow.view(),
            positives: &pos,
            genes: Some(&genes),
        };
        let t0 = Instant::now();
        let seed = derive_seed(cell.seed, &format!("funcish/cv/{}", cell.repeat));
        // FuncISH's nested cross-validation is shared with the cells that fit the same one
        // (`cv`); another classifier is fitted here.
        let (r, fit_seconds) = match classifier.cross_validation() {
            Some(cfg) => cv::fitted(
                cell.data,
                set,
                &feats,
                &visual,
                cfg,
                &pos,
                cv::seed_of(seed),
            )?,
            None => {
                let mut keep = Keep(None);
                classifier
                    .fit(
                        &input,
                        &Schedule::new(vec![0]),
                        &mut seeded(seed),
                        &mut keep,
                    )
                    .map_err(|e| e.to_string())?;
                let r = keep.0.ok_or("the classifier reported nothing")?;
                (r, t0.elapsed().as_secs_f64())
            }
        };
        let train_seconds = t0.elapsed().as_secs_f64();
        let mut out = CellOutput {
            train_seconds,
            ..Default::default()
        };
        self.records(set, &feats, &visual, &r, train_seconds, &mut out.records);
        out.records.push(exhibits::record(
            TEST,
            "fit_seconds",
            None,
            fit_seconds,
            train_seconds,
        ));
        let ex = exhibits::Exhibits {
            set,
            truth: cell.data.truth::<dyad_datasets::ish::standin::IshTruth>(),
            feats: &feats,
            visual: &visual,
            r: &r,
            seconds: train_seconds,
        };
        ex.same_gene(
            self.s2_pairs,
            derive_seed(cell.seed, &format!("funcish/s2/{}", cell.repeat)),
            &mut out.records,
        );
        ex.planted_scale(&mut out.records);
        if self.exhibits && cell.repeat == 0 {
            out.artifacts.push(ex.top_categories(15));
            out.artifacts.extend(ex.explanations());
            out.artifacts.extend(ex.word_glyphs());
            out.artifacts.extend(ex.overlay(&mut out.records)?);
        }
        Ok(out)
    }
}

impl FunctionCell {
    fn records(
        &self,
        set: &IshSet,
        feats: &Features,
        visual: &VisualConfig,
        r: &NestedCvResult,
        seconds: f64,
        out: &mut Vec<Record>,
    ) {
        let rec = |set_name: &str, metric: &str, coord: Option<(&str, f64)>, value: f64| {
            exhibits::record(set_name, metric, coord, value, seconds)
        };
        // Per category.
        let mut neural_auc = Vec::new();
        let mut other_auc = Vec::new();
        let (mut sig, mut sig_n, mut sig_o) = (0usize, 0usize, 0usize);
        let mut sizes = Vec::new();
        let mut aucs = Vec::new();
        for (c, res) in r.categories.iter().enumerate() {
            let Some(a) = res.mean_auc else { continue };
            let neural = set.categories[c].neural;
            let significant = res.p_value.is_some_and(|p| p < self.alpha);
            sig += significant as usize;
            if neural {
                neural_auc.push(a);
                sig_n += significant as usize;
            } else {
                other_auc.push(a);
                sig_o += significant as usize;
            }
            aucs.push(a);
            sizes.push(res.n_positive as f64);
            out.push(rec(TEST, "category_auc", Some(("category", c as f64)), a));
            out.push(rec(
                TEST,
                "category_size",
                Some(("category", c as f64)),
                res.n_positive as f64,
            ));
        }
        let all: Vec<f64> = aucs.clone();
        let frac = |k: usize, n: usize| {
            if n == 0 {
                f64::NAN
            } else {
                k as f64 / n as f64
            }
        };
        // Without permutations there is no significance to count.
        let tested = r.categories.iter().any(|c| c.p_value.is_some());
        if tested {
            for (m, v) in [
                ("significant_fraction", frac(sig, all.len())),
                ("neural_significant_fraction", frac(sig_n, neural_auc.len())),
                ("other_significant_fraction", frac(sig_o, other_auc.len())),
            ] {
                out.push(rec(TEST, m, None, v));
            }
        }
        for (m, v) in [
            ("mean_auc", mean(&all)),
            ("neural_mean_auc", mean(&neural_auc)),
            ("other_mean_auc", mean(&other_auc)),
            ("categories", all.len() as f64),
            ("neural_categories", neural_auc.len() as f64),
            ("images", set.n_images() as f64),
            ("discarded_images", set.discarded_no_expression as f64),
            ("dimension", feats.bow.ncols() as f64),
            ("feature_seconds", feats.seconds),
        ] {
            out.push(rec(TEST, m, None, v));
        }
        if let Some(t) = dyad_core::auc::mann_whitney(&neural_auc, &other_auc) {
            out.push(rec(TEST, "neural_vs_other_log10_p", None, t.log10_p));
            out.push(rec(TEST, "neural_vs_other_auc", None, t.auc));
        }
        let log_sizes: Vec<f64> = sizes.iter().map(|s| s.log10()).collect();
        if let Some(c) = dyad_core::auc::pearson(&aucs, &log_sizes) {
            out.push(rec(TEST, "auc_size_r", None, c.r));
            out.push(rec(TEST, "auc_size_log10_p", None, c.log10_p));
        }
        // Fig. S5: mean AUC per log-spaced size bin.
        if let (Some(lo), Some(hi)) = (
            log_sizes.iter().copied().reduce(f64::min),
            log_sizes.iter().copied().reduce(f64::max),
        ) {
            let nb = self.size_bins;
            let width = ((hi - lo) / nb as f64).max(1e-9);
            let mut bins = vec![Vec::new(); nb];
            for (&ls, &a) in log_sizes.iter().zip(&aucs) {
                bins[(((ls - lo) / width) as usize).min(nb - 1)].push(a);
            }
            for (b, v) in bins.iter().enumerate() {
                if !v.is_empty() {
                    let centre = 10f64.powf(lo + (b as f64 + 0.5) * width);
                    out.push(rec(
                        TEST,
                        "auc_by_size",
                        Some(("category_size", centre)),
                        mean(v),
                    ));
                }
            }
        }
        // Fig. 3: AUC distributions of the two groups.
        for (group, v) in [(NEURAL, &neural_auc), (OTHER, &other_auc)] {
            if v.is_empty() {
                continue;
            }
            let nb = self.auc_bins;
            let mut counts = vec![0usize; nb];
            for &a in v.iter() {
                counts[((a * nb as f64) as usize).min(nb - 1)] += 1;
            }
            for (b, &k) in counts.iter().enumerate() {
                let centre = (b as f64 + 0.5) / nb as f64;
                out.push(rec(
                    group,
                    "auc_density",
                    Some(("auc", centre)),
                    k as f64 / v.len() as f64,
                ));
            }
        }
        // Fig. S3: per-fold means.
        for (o, m) in r.fold_mean_auc.iter().enumerate() {
            if let Some(m) = m {
                out.push(rec(TEST, "fold_mean_auc", Some(("fold", o as f64)), *m));
            }
        }
        // Fig. 5E: weights per scale (flat bags only: the pyramid's layout differs).
        if visual.pyramid.is_none() {
            let levels = feats.dictionaries.num_levels();
            let k = feats.dictionaries.k();
            let w = &r.weights;
            if w.ncols() == levels * k + levels && w.nrows() > 0 {
                let mean_abs: Vec<f64> = (0..w.ncols())
                    .map(|j| w.column(j).iter().map(|x| x.abs()).sum::<f64>() / w.nrows() as f64)
                    .collect();
                for l in 0..levels {
                    let scale = (1usize << l) as f64;
                    let words = mean(&mean_abs[l * k..(l + 1) * k]);
                    out.push(rec(TEST, "scale_weight", Some(("scale", scale)), words));
                    out.push(rec(
                        TEST,
                        "zero_weight",
                        Some(("scale", scale)),
                        mean_abs[levels * k + l],
                    ));
                }
                let mut order: Vec<usize> = (0..mean_abs.len()).collect();
                order.sort_by(|&a, &b| mean_abs[b].total_cmp(&mean_abs[a]));
                let top = order[..levels].iter().filter(|&&j| j >= levels * k).count();
                out.push(rec(TEST, "zero_features_in_top", None, top as f64));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// gene-retrieval
// ---------------------------------------------------------------------------------------

/// The retrieval task (Fig. 4).
pub struct GeneRetrievalTask;

static RETRIEVAL_METRICS: &[Metric] = &[
    metric!(
        "precision",
        "precision",
        true,
        false,
        "mean fraction of related genes among the K most similar genes (k = K), over the genes with a related gene"
    ),
    metric!(
        "queries",
        "queries",
        true,
        false,
        "genes with at least one related gene (the queries averaged over)"
    ),
];

static RETRIEVAL_HEADLINE: &[Headline] = &[
    Headline {
        metric: "precision",
        k: Some(10),
    },
    Headline {
        metric: "precision",
        k: Some(100),
    },
];

/// `[protocol.gene_retrieval]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetrievalProtocol {
    #[serde(default)]
    features: Option<VisualConfig>,
    /// The classifier whose out-of-fold probabilities are the functional representation.
    #[serde(default)]
    classifier: Option<NestedCvConfig>,
    /// Length of the ranked lists (100, §2.10).
    #[serde(default = "k_max")]
    k_max: usize,
}

fn k_max() -> usize {
    100
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct RetrievalCell {
    features: VisualConfig,
    classifier: NestedCvConfig,
    k_max: usize,
}

const RELATIONS: [&str; 3] = ["cell-type", "pathway", "ppi"];

impl Task for GeneRetrievalTask {
    fn table(&self) -> &'static str {
        "gene_retrieval"
    }
    fn name(&self) -> &'static str {
        "gene-retrieval"
    }
    /// 2: the functional representation is the gene-function cells' cross-validation (the
    /// same folds; version 1 seeded its own).
    fn version(&self) -> u32 {
        2
    }
    fn description(&self) -> &'static str {
        "FuncISH Fig. 4: precision at top K of gene similarities against known gene relations (cell-type markers, pathways, PPIs)"
    }
    fn family(&self) -> &'static str {
        GENE_SIMILARITY
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::ISH]
    }
    fn metrics(&self) -> &'static [Metric] {
        RETRIEVAL_METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        RETRIEVAL_HEADLINE
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/funcish/",
            "funcish/src/",
            "datasets/src/pipelines/dsift.rs",
            "datasets/src/pipelines/bow.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: RetrievalProtocol = profiled(input, "gene_retrieval")?;
        let features = p.features.unwrap_or_else(default_visual);
        features
            .validate()
            .map_err(|e| input.error(&["gene_retrieval", "features"], e))?;
        let classifier = p.classifier.unwrap_or_default();
        classifier.check().map_err(|e| {
            // The line of the parameter it names (or of its nearest written ancestor).
            let mut path = vec!["gene_retrieval", "classifier"];
            path.extend(e.param.split('.'));
            input.error(&path, e.to_string())
        })?;
        if p.k_max == 0 {
            return Err(input.error(&["gene_retrieval", "k_max"], "must be at least 1".into()));
        }
        input.refuse_tune("gene-retrieval has no hold-out to tune on")?;
        Ok(Box::new(RetrievalCell {
            features,
            classifier,
            k_max: p.k_max,
        }))
    }
}

impl CellProtocol for RetrievalCell {
    fn canonical(&self, _: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self).expect("serializable")
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        if d.resolved.kind != kinds::ISH {
            return Err(format!("gene-retrieval needs {}", kinds::ISH));
        }
        Ok(())
    }

    fn sets(&self) -> Vec<String> {
        RELATIONS.iter().map(|s| s.to_string()).collect()
    }

    fn steps(&self, _: &SolverInstance) -> u64 {
        0
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let set = ish(cell.data, cell.dataset)?;
        let similarity = cell
            .candidates
            .first()
            .and_then(|b| b.family::<dyn GeneSimilarity>())
            .ok_or_else(|| format!("solver `{}` is not a gene similarity", cell.solver.name))?;
        let feats = features(cell.data, cell.dataset, &self.features)?;
        // The functional representation of this repeat: the out-of-fold probabilities of the
        // gene-function task's cross-validation on the same features with the same seed
        // (the same folds), shared with its cells and with the other similarities.
        let seed = derive_seed(cell.seed, &format!("funcish/cv/{}", cell.repeat));
        let pos = positives(set);
        let functional = cv::shared(
            cell.data,
            set,
            &feats,
            &self.features,
            &self.classifier,
            &pos,
            cv::seed_of(seed),
        )?;
        let functional = &functional.result;
        let terms: Vec<u32> = set.categories.iter().map(|c| c.term).collect();
        let neural: Vec<bool> = set.categories.iter().map(|c| c.neural).collect();
        let input = SimilarityInput {
            probabilities: functional.probabilities.view(),
            bow: feats.bow.view(),
            coarse: feats.coarse.view(),
            category_terms: &terms,
            ancestors: &set.ancestors,
            ic: &set.ic,
            neural: &neural,
        };
        let t0 = Instant::now();
        let rows = similarity.prepare(&input).map_err(|e| e.to_string())?;
        let n_genes = set.genes.len();
        let mut images_of: Vec<Vec<usize>> = vec![Vec::new(); n_genes];
        for (i, &g) in set.image_gene.iter().enumerate() {
            images_of[g as usize].push(i);
        }
        // Ranked lists of the genes that are queries of some relation set.
        let is_query: Vec<bool> = (0..n_genes)
            .map(|g| {
                !set.relations.cell_type[g].is_empty()
                    || !set.relations.pathway[g].is_empty()
                    || !set.relations.ppi[g].is_empty()
            })
            .collect();
        let k = self.k_max;
        let lists: Vec<Vec<u32>> = (0..n_genes)
            .into_par_iter()
            .map_init(Vec::new, |scratch, g| {
                if !is_query[g] || images_of[g].is_empty() {
                    return Vec::new();
                }
                let row = gene_row(&*rows, &images_of[g], &set.image_gene, n_genes, g, scratch);
                top_k(&row, g, k)
            })
            .collect();
        let seconds = t0.elapsed().as_secs_f64();
        let mut out = CellOutput {
            train_seconds: seconds,
            ..Default::default()
        };
        for (name, related) in RELATIONS.iter().zip([
            &set.relations.cell_type,
            &set.relations.pathway,
            &set.relations.ppi,
        ]) {
            let (curve, used) = precision_curve(&lists, related, k);
            let rec = |metric: &str, kk: Option<u32>, value: f64| Record {
                set: name.to_string(),
                metric: metric.to_string(),
                step: 0,
                seconds,
                k: kk,
                coord: None,
                value,
            };
            out.records.push(rec("queries", None, used as f64));
            if used > 0 {
                for (i, v) in curve.iter().enumerate() {
                    out.records.push(rec("precision", Some(i as u32 + 1), *v));
                }
            }
        }
        Ok(out)
    }
}
