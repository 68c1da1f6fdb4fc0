//! Experiment specs: one TOML file per paper figure or table, `experiments/<paper>/<name>.toml`.
//! See `experiments/README.md` for a complete annotated example. Parsing is strict: an
//! unknown key or a wrong type is an error naming the file, line and key.

use crate::profile::{PerProfile, Profile};
use serde::{Deserialize, Deserializer};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A whole spec file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Human title (the figure's caption in short).
    pub title: String,
    /// Paper short name; must equal the spec's directory under `experiments/`.
    pub paper: String,
    /// The paper's identifier(s) of the figure or table, e.g. `"J-F6 = N-F2"`.
    pub figure: String,
    #[serde(default)]
    pub description: String,
    /// Where the paper is ambiguous: what we chose and why.
    #[serde(default)]
    pub choices: Vec<Choice>,
    pub datasets: Vec<DatasetSpec>,
    pub protocol: Protocol,
    pub solvers: Vec<SolverSpec>,
    #[serde(default)]
    pub plots: Vec<PlotSpec>,
    #[serde(default)]
    pub tables: Vec<TableSpec>,
    #[serde(default)]
    pub references: Vec<Reference>,
    #[serde(default)]
    pub claims: Vec<Claim>,
    #[serde(default)]
    pub expect: Vec<Expectation>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    pub topic: String,
    pub choice: String,
    pub reason: String,
}

/// One data set instance: a cell dimension.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// Short id used in tables, plots and selectors (e.g. `"c10"`).
    pub id: String,
    /// Registry name (see `dyad data list`).
    pub name: Spanned<String>,
    /// Parameters for the data set's provider; values may be per-profile.
    #[serde(default)]
    pub params: Option<Spanned<toml::Table>>,
}

/// How cells are run: repeats, seeds, checkpoints and the task.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// Independent repeats (splits); repeat `r` derives all its seeds from `seed` and `r`.
    pub repeats: PerProfile<u32>,
    pub seed: u64,
    /// Training steps at which learners report their model.
    pub checkpoints: PerProfile<Checkpoints>,
    /// Label-based retrieval (OASIS §7–8): per-class splits, rank the held-out set.
    #[serde(default)]
    pub ranking: Option<RankingProtocol>,
    /// After the ranking task, a SIMULATED rater panel judges the final model's neighbours
    /// (OASIS §7.3, §12.3; web stand-in data sets only).
    #[serde(default)]
    pub human_evaluation: Option<crate::tasks::human::HumanCell>,
}

/// A checkpoint grid: `0` and `max` always, plus either every `every` steps or `log_points`
/// log-spaced steps, plus any `extra` steps.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoints {
    pub max: u64,
    #[serde(default)]
    pub every: Option<u64>,
    #[serde(default)]
    pub log_points: Option<usize>,
    #[serde(default)]
    pub extra: Vec<u64>,
}

impl Checkpoints {
    pub fn steps(&self) -> Result<Vec<u64>, String> {
        let mut s = vec![0, self.max];
        match (self.every, self.log_points) {
            (Some(_), Some(_)) => return Err("give `every` or `log_points`, not both".into()),
            (Some(0), _) => return Err("`every` must be positive".into()),
            (Some(e), None) => s.extend((1..).map(|i| i * e).take_while(|&x| x < self.max)),
            (None, Some(n)) if n >= 2 && self.max >= 1 => {
                let top = (self.max as f64).ln();
                s.extend((0..n).map(|i| (top * i as f64 / (n - 1) as f64).exp().round() as u64));
            }
            (None, Some(_)) => {
                return Err("`log_points` needs at least 2 points and max >= 1".into());
            }
            (None, None) => {}
        }
        s.extend(self.extra.iter().filter(|&&x| x <= self.max));
        s.sort_unstable();
        s.dedup();
        Ok(s)
    }
}

/// The label-ranking task (OASIS spec §7.1, §8).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankingProtocol {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct EarlyStopping {
    /// Fraction of each class's training examples held out for validation (0.2 = 8 of 40).
    pub validation_fraction: f64,
}

/// A solver and its parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolverSpec {
    /// Registry name (see `dyad list --solvers`).
    pub name: Spanned<String>,
    /// Legend label (default: the registry's label).
    #[serde(default)]
    pub label: Option<String>,
    /// Fixed parameters; values may be per-profile.
    #[serde(default)]
    pub params: Option<Spanned<toml::Table>>,
    /// Parameter grid: every value is an array; one cell per combination.
    #[serde(default)]
    pub grid: Option<Spanned<toml::Table>>,
    /// Data set ids this solver runs on (default: all).
    #[serde(default)]
    pub datasets: Vec<String>,
    /// This solver's own checkpoint grid (its steps may be gradient iterations rather than
    /// triplets); default: the protocol's.
    #[serde(default)]
    pub checkpoints: Option<PerProfile<Checkpoints>>,
    /// `false`: run this iterative solver to its own end (convergence or the last checkpoint)
    /// instead of choosing its step count on the hold-out of `protocol.ranking.early_stopping`
    /// (the papers ran MCML and LMNN to convergence; only OASIS and LEGO were early-stopped).
    /// Tuned parameters are then compared at the final step. Default `true`.
    #[serde(default = "yes")]
    pub early_stopping: bool,
    /// Hyper-parameters chosen inside each cell: every value is an array; the combination
    /// with the best validation mAP on the hold-out of `early_stopping` is retrained on the
    /// whole training set (the papers' per-split cross-validation of ω, η).
    #[serde(default)]
    pub tune: Option<Spanned<toml::Table>>,
}

/// An optional spanned table: its content (empty when absent) and its byte offset (or
/// `fallback` when absent).
pub fn table_of(t: &Option<Spanned<toml::Table>>, fallback: usize) -> (toml::Table, usize) {
    match t {
        Some(s) => (s.get_ref().clone(), s.span().start),
        None => (toml::Table::new(), fallback),
    }
}

/// The x axis of a plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum XAxis {
    Step,
    Seconds,
    K,
    /// A numeric parameter of the data sets (`x_param`): one point per data set.
    Param,
}

/// A figure: one panel per data set, one series per solver (and per set when several).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// File-name stem of the figure.
    pub id: String,
    pub title: String,
    pub x: XAxis,
    /// Metric on the y axis: `"map"` or `"precision"` (with `x = "k"`).
    pub metric: String,
    /// Sets to draw (default: all evaluated).
    #[serde(default)]
    pub sets: Vec<String>,
    /// Solvers to draw, by label or registry name (default: all).
    #[serde(default)]
    pub solvers: Vec<String>,
    pub x_label: String,
    pub y_label: String,
    #[serde(default)]
    pub log_x: bool,
    #[serde(default)]
    pub log_y: bool,
    /// With `x = "param"`: the data-set parameter on the x axis (e.g. `"train_images"`), or
    /// a list of names of which each data set uses the first it has (data sets of different
    /// providers in one panel: `["images", "train_images"]`).
    #[serde(default, deserialize_with = "one_or_many")]
    pub x_param: Option<Vec<String>>,
    /// With `x = "param"`: fit `y = a x^b` to every series (least squares in log space) and
    /// show the exponent in the legend.
    #[serde(default)]
    pub fit_power: bool,
    /// Draw chance performance as a black dashed line labelled "Random".
    #[serde(default)]
    pub chance: bool,
    #[serde(default)]
    pub y_range: Option<[f64; 2]>,
    /// Extra series given as numbers (e.g. literature runtimes), drawn dashed.
    #[serde(default)]
    pub overlays: Vec<Overlay>,
}

/// A series of given points (not computed by dyad), e.g. published runtimes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    pub label: String,
    /// `[x, y]` pairs.
    pub points: Vec<[f64; 2]>,
    /// Fit `y = a x^exponent` with this fixed exponent through the points and draw it up to
    /// `extrapolate_to` (e.g. the papers' "projected extrapolation (2nd poly)").
    #[serde(default)]
    pub exponent: Option<f64>,
    #[serde(default)]
    pub extrapolate_to: Option<f64>,
    /// Where the numbers come from.
    pub source: String,
}

/// A table of our numbers beside the paper's: one row per metric, one column per solver,
/// one table per data set.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    pub id: String,
    pub title: String,
    pub rows: Vec<TableRow>,
    /// Column solvers (labels or registry names; default: all).
    #[serde(default)]
    pub solvers: Vec<String>,
    #[serde(default = "default_set")]
    pub set: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRow {
    pub metric: String,
    #[serde(default)]
    pub k: Option<u32>,
    /// Multiply ours and the paper's numbers by this for display (e.g. 1/60 for minutes).
    #[serde(default)]
    pub scale: Option<f64>,
    /// Unit shown in the row name (e.g. "min").
    #[serde(default)]
    pub unit: Option<String>,
}

/// Which step of a cell's records a selector takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum At {
    /// The last reported step (after early stopping: the selected one).
    #[default]
    Last,
    /// The step with the highest value.
    Best,
    Step(u64),
}

impl<'de> Deserialize<'de> for At {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            S(String),
            N(u64),
        }
        match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected \"last\", \"best\" or a step number"))?
        {
            Raw::N(n) => Ok(At::Step(n)),
            Raw::S(s) if s == "last" => Ok(At::Last),
            Raw::S(s) if s == "best" => Ok(At::Best),
            Raw::S(s) => Err(serde::de::Error::custom(format!(
                "expected \"last\", \"best\" or a step number, found \"{s}\""
            ))),
        }
    }
}

/// What a reference, claim or expectation refers to in the results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selector {
    pub dataset: Option<String>,
    pub solver: Option<String>,
    pub metric: String,
    pub set: String,
    pub k: Option<u32>,
    pub at: At,
}

fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        One(String),
        Many(Vec<String>),
    }
    Ok(Some(
        match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected a parameter name or a list of names"))?
        {
            Raw::One(s) => vec![s],
            Raw::Many(v) => v,
        },
    ))
}

fn yes() -> bool {
    true
}

fn default_set() -> String {
    "test".into()
}

/// A number the paper reports, shown beside ours in the report.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub dataset: String,
    pub solver: String,
    pub metric: String,
    #[serde(default = "default_set")]
    pub set: String,
    #[serde(default)]
    pub k: Option<u32>,
    #[serde(default)]
    pub at: At,
    /// The paper's number (fractions for rates; seconds for times).
    #[serde(default)]
    pub value: Option<f64>,
    /// The paper's spread (its ± value), when it gives one.
    #[serde(default)]
    pub sd: Option<f64>,
    /// What the paper prints instead of a number (e.g. `"*"`: took more than 5 days).
    #[serde(default)]
    pub text: Option<String>,
    /// Where the number comes from, e.g. `"J-T4"`.
    pub source: String,
}

impl Reference {
    pub fn selector(&self) -> Selector {
        Selector {
            dataset: Some(self.dataset.clone()),
            solver: Some(self.solver.clone()),
            metric: self.metric.clone(),
            set: self.set.clone(),
            k: self.k,
            at: self.at,
        }
    }
}

/// How a claim is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClaimKind {
    /// `solver` beats `versus` on every selected data set (and every k when no k is given
    /// for `precision`); with `tolerance`, "at least as good up to that margin".
    Greater,
    /// `solver` and `versus` are within `tolerance` of each other everywhere `greater` looks.
    Close,
    /// Our value is within `tolerance` of every matching reference number.
    Near,
    /// The step where the mean metric peaks lies in `range`.
    PeakWithin,
    /// The exponent `b` of a least-squares fit `metric = a x^b` over the data sets, with x
    /// the data-set parameter `x_param`, lies in `range` (e.g. linear runtime scaling).
    SlopeWithin,
}

/// A claim of the paper, with a verdict computed from our results.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    /// The claim as the paper makes it.
    pub text: String,
    pub kind: ClaimKind,
    pub metric: String,
    #[serde(default = "default_set")]
    pub set: String,
    /// A single k, or every k from 1 to `k_max` when absent for `precision`.
    #[serde(default)]
    pub k: Option<u32>,
    #[serde(default)]
    pub at: At,
    /// The solver the claim is about.
    pub solver: String,
    /// The solver compared against (`greater`).
    #[serde(default)]
    pub versus: Option<String>,
    /// Data sets the claim covers (default: all).
    #[serde(default)]
    pub datasets: Vec<String>,
    /// `near`: largest absolute difference that still counts as agreement.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// `greater`: `solver` must exceed `factor` times `versus` (e.g. 100 for "two orders of
    /// magnitude slower"); default 1.
    #[serde(default)]
    pub factor: Option<f64>,
    /// `peak-within`: the step range; `slope-within`: the exponent range.
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    /// `slope-within`: the data-set parameter(s) on the x axis (as a plot's `x_param`).
    #[serde(default, deserialize_with = "one_or_many")]
    pub x_param: Option<Vec<String>>,
    /// The claim is about absolute numbers of the paper's data: on a synthetic stand-in the
    /// verdict is "not comparable".
    #[serde(default)]
    pub needs_real_data: bool,
}

/// An expectation band checked by `dyad check`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    pub dataset: String,
    pub solver: String,
    pub metric: String,
    #[serde(default = "default_set")]
    pub set: String,
    #[serde(default)]
    pub k: Option<u32>,
    #[serde(default)]
    pub at: At,
    #[serde(default = "neg_inf")]
    pub min: PerProfile<f64>,
    #[serde(default = "pos_inf")]
    pub max: PerProfile<f64>,
    /// Which data the band was set for: `"real"`, `"synthetic"` or `"any"` (default). A band
    /// for real data is skipped, and says so, when the data set fell back to its stand-in.
    #[serde(default)]
    pub data: DataKind,
    #[serde(default)]
    pub note: String,
}

/// Real data, a synthetic stand-in, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataKind {
    Real,
    Synthetic,
    #[default]
    Any,
}

fn neg_inf() -> PerProfile<f64> {
    PerProfile::Same(f64::NEG_INFINITY)
}
fn pos_inf() -> PerProfile<f64> {
    PerProfile::Same(f64::INFINITY)
}

impl Expectation {
    pub fn selector(&self) -> Selector {
        Selector {
            dataset: Some(self.dataset.clone()),
            solver: Some(self.solver.clone()),
            metric: self.metric.clone(),
            set: self.set.clone(),
            k: self.k,
            at: self.at,
        }
    }
}

/// A parsed spec with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    /// `<paper>/<file stem>`, e.g. `oasis/fig5`.
    pub id: String,
    pub path: PathBuf,
    pub source: String,
    pub spec: Spec,
}

/// A spec that could not be read: file, line (when known) and what was wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct SpecError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl LoadedSpec {
    /// Read and parse a spec file. Its id is `<directory name>/<file stem>`.
    pub fn load(path: &Path) -> Result<Self, SpecError> {
        let source = std::fs::read_to_string(path).map_err(|e| SpecError {
            path: path.to_path_buf(),
            line: None,
            message: e.to_string(),
        })?;
        Self::parse(path, source)
    }

    pub fn parse(path: &Path, source: String) -> Result<Self, SpecError> {
        let spec: Spec = toml::from_str(&source).map_err(|e| SpecError {
            path: path.to_path_buf(),
            line: e.span().map(|s| line_of(&source, s.start)),
            message: e.message().to_string(),
        })?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("spec");
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let loaded = LoadedSpec {
            id: format!("{}/{stem}", spec.paper),
            path: path.to_path_buf(),
            source,
            spec,
        };
        if !dir.is_empty() && dir != "experiments" && dir != loaded.spec.paper {
            return Err(loaded.error_at(
                0,
                format!(
                    "key `paper`: \"{}\" differs from the spec's directory `{dir}`",
                    loaded.spec.paper
                ),
            ));
        }
        loaded.validate_structure()?;
        Ok(loaded)
    }

    /// An error at a byte offset of the source.
    pub fn error_at(&self, offset: usize, message: String) -> SpecError {
        SpecError {
            path: self.path.clone(),
            line: Some(line_of(&self.source, offset)),
            message,
        }
    }

    /// An error without a known position.
    pub fn error(&self, message: String) -> SpecError {
        SpecError {
            path: self.path.clone(),
            line: None,
            message,
        }
    }

    /// Checks that need no registry: unique ids, one task, well-formed grids and checkpoints.
    fn validate_structure(&self) -> Result<(), SpecError> {
        let s = &self.spec;
        if s.datasets.is_empty() || s.solvers.is_empty() {
            return Err(
                self.error("a spec needs at least one `[[datasets]]` and one `[[solvers]]`".into())
            );
        }
        let mut ids = std::collections::BTreeSet::new();
        for d in &s.datasets {
            if !ids.insert(d.id.as_str()) {
                return Err(self.error_at(
                    d.name.span().start,
                    format!("key `datasets.id`: duplicate id \"{}\"", d.id),
                ));
            }
        }
        if s.protocol.ranking.is_none() {
            return Err(
                self.error("key `protocol`: no task table; add `[protocol.ranking]`".into())
            );
        }
        for p in Profile::ALL {
            if let Err(e) = s.protocol.checkpoints.at(p).steps() {
                return Err(self.error(format!("key `protocol.checkpoints` ({p}): {e}")));
            }
            for sv in &s.solvers {
                if let Some(Err(e)) = sv.checkpoints.as_ref().map(|c| c.at(p).steps()) {
                    return Err(self.error_at(
                        sv.name.span().start,
                        format!("key `solvers.checkpoints` ({p}): {e}"),
                    ));
                }
            }
        }
        if let Some(r) = &s.protocol.ranking {
            if let Some(es) = &r.early_stopping
                && !(es.validation_fraction > 0.0 && es.validation_fraction < 1.0)
            {
                return Err(self.error(
                    "key `protocol.ranking.early_stopping.validation_fraction`: must be in (0, 1)"
                        .into(),
                ));
            }
            let per_class = r.train_per_class.is_some() && r.test_per_class.is_some();
            match r.split {
                SplitKind::PerClass if !per_class => {
                    return Err(self.error(
                        "key `protocol.ranking`: split = \"per-class\" needs `train_per_class` and `test_per_class`".into(),
                    ));
                }
                SplitKind::Official
                    if r.train_per_class.is_some() || r.test_per_class.is_some() =>
                {
                    return Err(self.error(
                        "key `protocol.ranking`: split = \"official\" takes `max_train`/`max_test`, not per-class counts".into(),
                    ));
                }
                _ => {}
            }
            if r.early_stopping.is_none() && s.solvers.iter().any(|sv| sv.tune.is_some()) {
                return Err(self.error(
                    "key `solvers.tune`: tuning needs `protocol.ranking.early_stopping` (its hold-out)".into(),
                ));
            }
        }
        for sv in &s.solvers {
            let (tune, at) = table_of(&sv.tune, sv.name.span().start);
            for (k, v) in &tune {
                if !v.is_array() || v.as_array().is_some_and(|a| a.is_empty()) {
                    return Err(self.error_at(
                        at,
                        format!("key `solvers.tune.{k}`: values must be non-empty arrays"),
                    ));
                }
            }
            let (grid, at) = table_of(&sv.grid, sv.name.span().start);
            let (params, _) = table_of(&sv.params, 0);
            for (k, v) in &grid {
                if !v.is_array() || v.as_array().is_some_and(|a| a.is_empty()) {
                    return Err(self.error_at(
                        at,
                        format!("key `solvers.grid.{k}`: grid values must be non-empty arrays"),
                    ));
                }
                if params.contains_key(k) {
                    return Err(self.error_at(
                        at,
                        format!("key `solvers.grid.{k}`: also given in `params`"),
                    ));
                }
            }
        }
        for sv in &s.solvers {
            if let Some(bad) = sv
                .datasets
                .iter()
                .find(|d| !s.datasets.iter().any(|x| &x.id == *d))
            {
                return Err(self.error_at(
                    sv.name.span().start,
                    format!("key `solvers.datasets`: no data set with id \"{bad}\""),
                ));
            }
        }
        for p in &s.plots {
            if (p.x == XAxis::Param) != p.x_param.is_some() {
                return Err(self.error(format!(
                    "plot `{}`: `x = \"param\"` goes with `x_param`",
                    p.id
                )));
            }
        }
        for c in &s.claims {
            let ok = match c.kind {
                ClaimKind::Greater => c.versus.is_some(),
                ClaimKind::Close => c.versus.is_some() && c.tolerance.is_some(),
                ClaimKind::Near => c.tolerance.is_some(),
                ClaimKind::PeakWithin => c.range.is_some(),
                ClaimKind::SlopeWithin => c.range.is_some() && c.x_param.is_some(),
            };
            if !ok {
                return Err(self.error(format!(
                    "claim `{}`: kind {:?} needs `{}`",
                    c.id,
                    c.kind,
                    match c.kind {
                        ClaimKind::Greater => "versus",
                        ClaimKind::Close => "versus` and `tolerance",
                        ClaimKind::Near => "tolerance",
                        ClaimKind::PeakWithin => "range",
                        ClaimKind::SlopeWithin => "range` and `x_param",
                    }
                )));
            }
        }
        Ok(())
    }
}

/// 1-based line number of a byte offset.
pub fn line_of(source: &str, offset: usize) -> usize {
    source[..offset.min(source.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Every spec file under `dir` (`<dir>/<paper>/<name>.toml`), sorted by path.
pub fn discover(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            for f in std::fs::read_dir(&p)? {
                let f = f?.path();
                if f.extension().is_some_and(|x| x == "toml") {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const MINIMAL: &str = r#"
title = "t"
paper = "demo"
figure = "F1"

[[datasets]]
id = "d"
name = "caltech256-standin"
params = { classes = 3 }

[protocol]
repeats = { quick = 1, paper = 2 }
seed = 1
checkpoints = { max = 100, every = 50 }

[protocol.ranking]
train_per_class = 4
test_per_class = 3

[[solvers]]
name = "oasis"
"#;

    fn parse(src: &str) -> Result<LoadedSpec, SpecError> {
        LoadedSpec::parse(Path::new("experiments/demo/f.toml"), src.to_string())
    }

    #[test]
    fn minimal_spec_parses() {
        let s = parse(MINIMAL).unwrap();
        assert_eq!(s.id, "demo/f");
        assert_eq!(*s.spec.protocol.repeats.at(Profile::Paper), 2);
        assert_eq!(
            s.spec
                .protocol
                .checkpoints
                .at(Profile::Quick)
                .steps()
                .unwrap(),
            vec![0, 50, 100]
        );
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let src = MINIMAL.replace("seed = 1", "seed = 1\nrepeets = 3");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(14));
        let msg = e.to_string();
        assert!(msg.starts_with("experiments/demo/f.toml:14:"), "{msg}");
        assert!(msg.contains("repeets"), "{msg}");
    }

    #[test]
    fn wrong_type_names_line() {
        let src = MINIMAL.replace("seed = 1", "seed = \"one\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(13), "{e}");
        assert!(e.to_string().contains("invalid type"), "{e}");
    }

    #[test]
    fn directory_must_match_paper_and_grids_must_be_arrays() {
        let e =
            LoadedSpec::parse(Path::new("experiments/other/f.toml"), MINIMAL.into()).unwrap_err();
        assert!(
            e.to_string().contains("differs from the spec's directory"),
            "{e}"
        );
        let src = format!("{MINIMAL}grid = {{ c = 0.1 }}\n");
        assert!(
            parse(&src)
                .unwrap_err()
                .to_string()
                .contains("non-empty arrays")
        );
    }

    #[test]
    fn checkpoint_grids() {
        let c = Checkpoints {
            max: 1000,
            every: None,
            log_points: Some(4),
            extra: vec![5],
        };
        assert_eq!(c.steps().unwrap(), vec![0, 1, 5, 10, 100, 1000]);
        let bad = Checkpoints {
            max: 10,
            every: Some(2),
            log_points: Some(2),
            extra: vec![],
        };
        assert!(bad.steps().is_err());
    }
}
