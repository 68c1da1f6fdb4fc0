//! Experiment specs: one TOML file per paper figure or table, `experiments/<paper>/<name>.toml`.
//! See `experiments/README.md` for a complete annotated example. Parsing is strict: an
//! unknown key or a wrong type is an error naming the file, line and key.
//!
//! The spec knows no task: `[protocol]` holds the generic keys (repeats, seed, checkpoints)
//! and one table per task (`[protocol.retrieval]`, ...), which the task reads itself, with
//! errors at their lines ([`LoadedSpec::typed`]). A spec may `extends` another of its paper:
//! it then runs that spec's cells (it inherits `datasets`, `protocol`, `solvers` and
//! `choices`; it may add data sets, solvers and choices, but not redefine the protocol) and
//! presents them its own way.

pub mod profile;
pub mod quotes;

use profile::{PerProfile, Profile};
use serde::{Deserialize, Deserializer};
use std::path::{Path, PathBuf};
use toml::Spanned;
use toml::de::{DeTable, DeValue};

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
    /// `"paper"` (default): a figure or table of the paper; `"ours"`: a check of the
    /// reproduction (a sensitivity, a peer, a speed or a stand-in diagnostic) that the paper
    /// did not run. Its claims are ours too, and its cost is counted apart (`dyad plan
    /// --cost`, the report's header), so what the paper's own figures take stays visible.
    #[serde(default)]
    pub origin: Origin,
    /// Another spec of the same paper (its file stem) whose data sets, protocol, solvers and
    /// choices this one inherits: the two share every cell.
    #[serde(default)]
    pub extends: Option<Spanned<String>>,
    /// Where the paper is ambiguous: what we chose and why.
    #[serde(default)]
    pub choices: Vec<Choice>,
    pub datasets: Vec<DatasetSpec>,
    pub protocol: Protocol,
    pub solvers: Vec<SolverSpec>,
    #[serde(default)]
    pub plots: Vec<PlotSpec>,
    /// Figures whose panels are the panels of several plots, of this spec or of other specs
    /// of the same paper (the tensor-ranking paper's Fig. 2: five class-order panels and
    /// three attribute panels, from two specs, as one 2 × 4 grid).
    #[serde(default)]
    pub figures: Vec<FigureSpec>,
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
    /// Tuned parameters this choice keeps on a grid edge on purpose (issue 42 §4): the
    /// report's tuning line and every verdict resting on such an edge name this choice as the
    /// decision (`edges = [{ solver = "LMNN", param = "omega" }]`).
    #[serde(default)]
    pub edges: Vec<EdgeRef>,
}

/// A tuned parameter of the spec's solvers: `solver` is a label, a series or a registry name,
/// as in claims; it may name several instances (every rank of a grid).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EdgeRef {
    pub solver: String,
    pub param: String,
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
    /// Numbers that describe this data set in the experiment without being provider
    /// parameters (e.g. `{ rank = 30 }` for LORETA's 16,660-feature set at fixed memory):
    /// plots and claims with `x = "param"` read them as they read parameters.
    #[serde(default)]
    pub vars: std::collections::BTreeMap<String, f64>,
}

/// How cells are run: repeats, seeds, checkpoints, and the task's own table.
#[derive(Debug, Clone, Deserialize)]
pub struct Protocol {
    /// Independent repeats (splits); repeat `r` derives all its seeds from `seed` and `r`.
    pub repeats: PerProfile<u32>,
    pub seed: u64,
    /// Training steps at which learners report their model.
    pub checkpoints: PerProfile<Checkpoints>,
    /// Every other key: a task table (`[protocol.<task>]`), read by its task when the plan is
    /// built; a key no task claims is an error there, at its line.
    #[serde(flatten)]
    pub tasks: std::collections::BTreeMap<String, toml::Value>,
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

/// Most steps a checkpoint grid may reach (10^10: at a microsecond a step, about 3 hours).
pub const MAX_GRID_STEPS: u64 = 10_000_000_000;
/// Most checkpoints a grid may hold.
pub const MAX_GRID_POINTS: u64 = 100_000;
/// Largest `k_max` a ranking protocol may ask for: precision@1..k_max is kept per query
/// (80 KB each at the limit; the papers' curves stop at k = 50).
pub const MAX_K: i64 = 10_000;

/// `b` bytes in the largest unit that keeps a number of at least 1.
pub(crate) fn bytes(b: f64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB", "PB"];
    let i = ((b.max(1.0).log10() / 3.0).floor() as usize).min(units.len() - 1);
    format!("{:.0} {}", b / 1000f64.powi(i as i32), units[i])
}

impl Checkpoints {
    /// The grid's steps, sorted and distinct; grids beyond [`MAX_GRID_STEPS`] steps or
    /// [`MAX_GRID_POINTS`] checkpoints are refused before anything is allocated.
    pub fn steps(&self) -> Result<Vec<u64>, String> {
        if self.max > MAX_GRID_STEPS {
            return Err(format!(
                "max = {} steps exceeds the limit of {MAX_GRID_STEPS} (at a microsecond a \
                 step, at least {:.0} days per cell)",
                self.max,
                self.max as f64 * 1e-6 / 86_400.0
            ));
        }
        let points = match (self.every, self.log_points) {
            (Some(e), None) if e > 0 => self.max / e,
            (None, Some(n)) => n as u64,
            _ => 0,
        } + self.extra.len() as u64;
        if points > MAX_GRID_POINTS {
            return Err(format!(
                "{points} checkpoints exceed the limit of {MAX_GRID_POINTS} (every checkpoint \
                 evaluates the model)"
            ));
        }
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
    /// instead of choosing its step count on the task's hold-out (e.g. the retrieval task's
    /// `early_stopping`; the papers ran MCML and LMNN to convergence, only OASIS and LEGO were
    /// early-stopped). Tuned parameters are then compared at the final step. Default `true`.
    #[serde(default = "yes")]
    pub early_stopping: bool,
    /// Hyper-parameters chosen inside each cell: every value is an array; the combination
    /// with the best value of the task's selection metric on its hold-out is retrained on the
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XAxis {
    Step,
    /// Solver seconds at the step.
    Seconds,
    K,
    /// A numeric parameter of the data sets (`x_param`): one point per data set.
    Param,
    /// The task's second coordinate of that name (e.g. `cardinality`), or any metric the
    /// task records (e.g. `flops`), paired with the plotted metric by step, set and k.
    Named(String),
}

impl<'de> Deserialize<'de> for XAxis {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match String::deserialize(d)?.as_str() {
            "step" => XAxis::Step,
            "seconds" => XAxis::Seconds,
            "k" => XAxis::K,
            "param" => XAxis::Param,
            "" => return Err(serde::de::Error::custom("an empty x axis")),
            other => XAxis::Named(other.to_string()),
        })
    }
}

/// A figure: by default one panel per data set, one series per solver (and per set when
/// several); its `kind` says how the results become panels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// File-name stem of the figure.
    pub id: String,
    pub title: String,
    /// The name of a registered plot kind (`curves`, `scatter`, `param`; see
    /// `crate::presentation::plots::kinds`), which also says which of the keys below marked
    /// with a kind it reads. Default: `"param"` with `x = "param"`, else `"curves"`.
    #[serde(default)]
    pub kind: Option<String>,
    pub x: XAxis,
    /// Metric on the y axis (one the task records, e.g. `"map"`, or a cell pseudo-metric).
    pub metric: String,
    /// For a metric recorded per k (precision@k): the k drawn when x is not `k` (e.g.
    /// precision at 10 against steps; needs `precision_at_every_checkpoint` for a trace).
    #[serde(default)]
    pub k: Option<u32>,
    /// Sets to draw (default: all evaluated).
    #[serde(default)]
    pub sets: Vec<String>,
    /// Data sets to draw, by id (default: all).
    #[serde(default)]
    pub datasets: Vec<String>,
    /// Solvers to draw, by label, registry name or a grid's series label (the spec solver's
    /// label without the grid point) (default: all).
    #[serde(default)]
    pub solvers: Vec<String>,
    pub x_label: String,
    pub y_label: String,
    #[serde(default)]
    pub log_x: bool,
    #[serde(default)]
    pub log_y: bool,
    /// Kind `param`: the data-set parameter on the x axis (e.g. `"train_images"`), or
    /// a list of names of which each data set uses the first it has (data sets of different
    /// providers in one panel: `["images", "train_images"]`).
    #[serde(default, deserialize_with = "one_or_many")]
    pub x_param: Option<Vec<String>>,
    /// Kind `param`: fit `y = a x^b` to every series (least squares in log space) and
    /// show the exponent in the legend.
    #[serde(default)]
    pub fit_power: bool,
    /// Kind `curves`, with `x = "step"` or `"seconds"`: the instances of a solver grid (LORETA at ranks 10
    /// ... 400) are drawn as ONE series, the best of them at every x: each instance's value
    /// at its last point at or before x, the instance with the best mean chosen, its spread
    /// shown ("the best performing model at each time point", LORETA's F11). Instances that
    /// have no point yet at x do not take part.
    #[serde(default)]
    pub envelope: bool,
    /// Kind `curves`: draw every solver's difference to this solver (label or registry name), paired by
    /// repeat at each x, error bars over the paired differences; the solver itself is the
    /// dashed zero line ("improvement over RankSVM"). Not with `x = "seconds"` or `"param"`.
    #[serde(default)]
    pub relative_to: Option<String>,
    /// Kind `scatter`, with `x` a coordinate (e.g. `"category"`): every drawn solver's mean
    /// at each coordinate value (y) against this solver's (x), with the line y = x (FuncISH
    /// Fig. S4: per-category AUCs of two dictionary sizes).
    #[serde(default)]
    pub versus: Option<String>,
    /// A metric the cells record beside the solver's result (e.g. `optimal_nmi`, clustering
    /// by the true parameters), drawn once in black with its label.
    #[serde(default)]
    pub reference: Option<ReferenceSeries>,
    /// Draw chance performance as a black dashed line labelled "Random".
    #[serde(default)]
    pub chance: bool,
    #[serde(default)]
    pub y_range: Option<[f64; 2]>,
    /// What the error bars show: `"sem"` (default), `"sd"`, or with `relative_to`
    /// `"sd-method"` (the drawn solver's own standard deviation beside the difference).
    #[serde(default)]
    pub error_bars: ErrorBars,
    /// Kinds `param` and `curves`: extra series given as numbers (e.g. literature runtimes,
    /// the paper's points), each in a colour of its own.
    #[serde(default)]
    pub overlays: Vec<Overlay>,
}

impl PlotSpec {
    /// The plot's kind: its `kind`, else `"param"` with `x = "param"`, else `"curves"`.
    pub fn kind_name(&self) -> &str {
        match (&self.kind, &self.x) {
            (Some(k), _) => k,
            (None, XAxis::Param) => "param",
            (None, _) => "curves",
        }
    }
}

/// What a plot's error bars show (over the repeats at each point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorBars {
    /// ± the standard error of the mean (the default).
    #[default]
    Sem,
    /// ± one standard deviation (with `relative_to`: of the paired differences).
    Sd,
    /// With `relative_to` only: ± one standard deviation of the drawn solver's own values,
    /// the other reading of "error bars of length twice the standard deviation" beside a
    /// plotted difference of means.
    SdMethod,
}

impl<'de> Deserialize<'de> for ErrorBars {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match String::deserialize(d)?.as_str() {
            "sem" => ErrorBars::Sem,
            "sd" => ErrorBars::Sd,
            "sd-method" => ErrorBars::SdMethod,
            other => {
                return Err(serde::de::Error::custom(format!(
                    "unknown error bars \"{other}\", expected \"sem\", \"sd\" or \"sd-method\""
                )));
            }
        })
    }
}

/// A figure made of the panels of several plots, in order, each panel keeping its own
/// plot's axes, labels and error bars; one legend for all.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// File-name stem of the figure (distinct from the spec's plot ids).
    pub id: String,
    pub title: String,
    /// The plots whose panels the figure shows: `"<plot id>"` of this spec, or
    /// `"<spec stem>/<plot id>"` of another spec of the same paper. The figure is drawn when
    /// every experiment it reads is complete.
    pub panels: Vec<String>,
    /// Panels per row (default 3).
    #[serde(default)]
    pub columns: Option<usize>,
}

impl FigureSpec {
    /// `(spec stem, plot id)` of each panel source; `None` for this spec.
    pub fn sources(&self) -> impl Iterator<Item = (Option<&str>, &str)> {
        self.panels.iter().map(|r| match r.split_once('/') {
            Some((stem, plot)) => (Some(stem), plot),
            None => (None, r.as_str()),
        })
    }
}

/// A reference series of a plot: `metric` as the first solver that records it has it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceSeries {
    pub metric: String,
    pub label: String,
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
    /// Data sets to tabulate, by id (default: all, one table each).
    #[serde(default)]
    pub datasets: Vec<String>,
    #[serde(default = "default_set")]
    pub set: String,
    /// A correlation table instead of a pivot: the first row's metric is recorded per value
    /// of this coordinate (e.g. `category_auc` per `category`); each cell is the Pearson
    /// correlation between two solvers' per-coordinate means over repeats (FuncISH Table
    /// S1: per-category AUCs across dictionary sizes).
    #[serde(default)]
    pub correlate: Option<String>,
    /// With `correlate`: the paper's matrix, in the order of `solvers`, shown beside ours.
    #[serde(default)]
    pub paper_matrix: Option<Vec<Vec<f64>>>,
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
    /// The records at this value of the task's second coordinate (e.g. a cardinality).
    pub coord: Option<f64>,
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
    pub coord: Option<f64>,
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
            coord: self.coord,
            at: self.at,
        }
    }
}

/// Whose claim it is: the paper's (it quotes the paper's words) or ours (a diagnostic or
/// sanity check of the reproduction, counted apart from the paper's claims).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    #[default]
    Paper,
    Ours,
}

/// A claim, with a verdict computed from our results: the paper's (with its words, `quote`,
/// and where they are, `section`) or ours (`origin = "ours"`, no quote).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    /// What is judged, in our words (a paraphrase of the quote; for a claim of ours, also
    /// why it is ours).
    pub text: String,
    /// `"paper"` (default): the paper's claim, which needs `quote` and `section`; `"ours"`:
    /// our diagnostic, which quotes nothing.
    #[serde(default)]
    pub origin: Origin,
    /// The paper's words, verbatim from its text (whitespace, line-end hyphenation and glyph
    /// garbage aside; checked against the paper by `tests/claim_quotes.rs`). Elisions are
    /// written `...`: each fragment must occur, in order, close to the previous one.
    #[serde(default)]
    pub quote: Option<String>,
    /// Where the quote is: version, section, figure or table (e.g. "JMLR §7.1.5, Fig. 3c",
    /// "NIPS §5.1", "thesis ch. 2.3 §3.4"). A leading `NIPS` or `JMLR` names the version
    /// of the paper the quote is checked against.
    #[serde(default)]
    pub section: Option<String>,
    /// How it is judged: the name of a registered claim kind (`greater`, `factor`,
    /// `slope-within`, ...; see `crate::analysis::claims::kinds`), which also says what else
    /// the claim needs.
    pub kind: String,
    pub metric: String,
    #[serde(default = "default_set")]
    pub set: String,
    /// A single k, or every k the records hold when absent (for metrics recorded per k).
    #[serde(default)]
    pub k: Option<u32>,
    #[serde(default)]
    pub coord: Option<f64>,
    #[serde(default)]
    pub at: At,
    /// The solver the claim is about.
    pub solver: String,
    /// The solver compared against (`greater`, `better`, `close`; default: `solver` itself
    /// when `versus_dataset` is given).
    #[serde(default)]
    pub versus: Option<String>,
    /// Compare against `versus` on this data set instead of on each covered data set, paired
    /// by split (e.g. LORETA at rank 30 on 16,660 features against rank 100 on 5,000).
    #[serde(default)]
    pub versus_dataset: Option<String>,
    /// Data sets the claim covers (default: all).
    #[serde(default)]
    pub datasets: Vec<String>,
    /// `near`: largest absolute difference that still counts as agreement; `factor` and
    /// `difference`: the half-width of the band around `paper_value` (in decades for a
    /// `log` factor).
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// `factor` / `difference`: the paper's number (1.33 for "33 % better", 100 for "two
    /// orders of magnitude").
    #[serde(default)]
    pub paper_value: Option<f64>,
    /// `factor`: judge on a log scale (geometric mean of the per-split ratios, tolerance in
    /// decades), for factors stated as orders of magnitude.
    #[serde(default)]
    pub log: bool,
    /// `greater`: `solver` must exceed `factor` times `versus` (e.g. 100 for "two orders of
    /// magnitude slower"); default 1.
    #[serde(default)]
    pub factor: Option<f64>,
    /// `peak-within`: the step range; `slope-within`: the exponent range; `value-within`:
    /// the metric's range (`[-inf, x]` and `[x, inf]` are written with `-1e300` / `1e300`).
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    /// `slope-within`: the data-set parameter(s) on the x axis (as a plot's `x_param`).
    #[serde(default, deserialize_with = "one_or_many")]
    pub x_param: Option<Vec<String>>,
    /// The claim is about absolute numbers of the paper's data: on a synthetic stand-in the
    /// verdict is "not comparable".
    #[serde(default)]
    pub needs_real_data: bool,
    /// `correlated`: the coordinate that pairs the two solvers' values (`category`).
    #[serde(default)]
    pub over: Option<String>,
    /// Judged at this profile only (it names solvers only that profile has, e.g. a grid value
    /// of the paper's); elsewhere "not comparable", and its names are not checked.
    #[serde(default)]
    pub profile: Option<crate::spec::profile::Profile>,
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
    pub coord: Option<f64>,
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
            coord: self.coord,
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
    /// The spec it `extends`: its path and source.
    pub parent: Option<(PathBuf, String)>,
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

/// The keys a spec inherits from the one it `extends` (it may add entries to the arrays).
pub const INHERITED: [&str; 4] = ["datasets", "protocol", "solvers", "choices"];

/// Offsets of the inherited parts are shifted past the spec's own source (by its length plus
/// one), so that one number locates a byte in either file.
fn shift(v: &mut Spanned<DeValue<'_>>, by: usize) {
    let span = v.span();
    let mut inner = std::mem::replace(v.get_mut(), DeValue::Boolean(false));
    match &mut inner {
        DeValue::Array(items) => {
            for item in items.iter_mut() {
                shift(item, by);
            }
        }
        DeValue::Table(t) => shift_table(t, by),
        _ => {}
    }
    *v = Spanned::new(span.start + by..span.end + by, inner);
}

fn shift_table(t: &mut DeTable<'_>, by: usize) {
    let old = std::mem::take(t);
    for (k, mut v) in old {
        shift(&mut v, by);
        let ks = k.span();
        t.insert(Spanned::new(ks.start + by..ks.end + by, k.into_inner()), v);
    }
}

impl LoadedSpec {
    /// Read and parse a spec file (and the spec it extends). Its id is `<paper>/<file stem>`.
    pub fn load(path: &Path) -> Result<Self, SpecError> {
        let source = read_text(path).map_err(|(line, message)| SpecError {
            path: path.to_path_buf(),
            line,
            message,
        })?;
        Self::parse(path, source)
    }

    pub fn parse(path: &Path, source: String) -> Result<Self, SpecError> {
        let whole = |message: String, line: Option<usize>| SpecError {
            path: path.to_path_buf(),
            line,
            message,
        };
        let root = DeTable::parse(&source).map_err(|e| {
            whole(
                e.message().to_string(),
                e.span().map(|s| line_of(&source, s.start)),
            )
        })?;
        let parent = match root.get_ref().get("extends") {
            None => None,
            Some(v) => {
                let at = line_of(&source, v.span().start);
                let Some(name) = v.get_ref().as_str() else {
                    return Err(whole(
                        "key `extends`: expected the file stem of a spec of the same paper".into(),
                        Some(at),
                    ));
                };
                // A file stem: no directory part, so that a spec reads only its own paper's.
                if name.is_empty() || name.contains(['/', '\\']) || name == "." || name == ".." {
                    return Err(whole(
                        format!(
                            "key `extends`: \"{name}\" is not a file stem; name a spec of the \
                             same paper by its stem (\"fig4\" for fig4.toml beside this one)"
                        ),
                        Some(at),
                    ));
                }
                let file = path.with_file_name(format!("{name}.toml"));
                if file == path {
                    return Err(whole(
                        "key `extends`: a spec cannot extend itself".into(),
                        Some(at),
                    ));
                }
                let text = read_text(&file).map_err(|(line, e)| {
                    let place = line.map_or(String::new(), |l| format!(":{l}"));
                    whole(
                        format!("key `extends`: {}{place}: {e}", file.display()),
                        Some(at),
                    )
                })?;
                if let Some((k, _)) = root.get_ref().get_key_value("protocol") {
                    return Err(whole(
                        format!(
                            "key `protocol`: this spec extends `{name}` and inherits its protocol; remove it here"
                        ),
                        Some(line_of(&source, k.span().start)),
                    ));
                }
                Some((file, text))
            }
        };
        let mut loaded = LoadedSpec {
            id: String::new(),
            path: path.to_path_buf(),
            source,
            parent,
            // Replaced below; a spec is only returned once parsed.
            spec: Spec {
                title: String::new(),
                paper: String::new(),
                figure: String::new(),
                description: String::new(),
                origin: Origin::Paper,
                extends: None,
                choices: Vec::new(),
                datasets: Vec::new(),
                protocol: Protocol {
                    repeats: PerProfile::Same(1),
                    seed: 0,
                    checkpoints: PerProfile::Same(Checkpoints {
                        max: 0,
                        every: None,
                        log_points: None,
                        extra: Vec::new(),
                    }),
                    tasks: Default::default(),
                },
                solvers: Vec::new(),
                plots: Vec::new(),
                figures: Vec::new(),
                tables: Vec::new(),
                references: Vec::new(),
                claims: Vec::new(),
                expect: Vec::new(),
            },
        };
        let spec: Spec = {
            let merged = loaded.merged()?;
            Spec::deserialize(toml::de::Deserializer::from(merged)).map_err(|e| {
                loaded.error_at_or_none(e.span().map(|s| s.start), e.message().to_string())
            })?
        };
        loaded.spec = spec;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("spec");
        let dir = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
        loaded.id = format!("{}/{stem}", loaded.spec.paper);
        if !dir.is_empty() && dir != "experiments" && dir != loaded.spec.paper {
            return Err(loaded.error_at_key(
                &["paper"],
                format!(
                    "key `paper`: \"{}\" differs from the spec's directory `{dir}`",
                    loaded.spec.paper
                ),
            ));
        }
        loaded.validate_structure()?;
        Ok(loaded)
    }

    /// The spec as one spanned table: its own keys, plus the inherited ones of the spec it
    /// extends with their offsets shifted past this spec's source.
    fn merged(&self) -> Result<Spanned<DeTable<'_>>, SpecError> {
        let root = DeTable::parse(&self.source).map_err(|e| {
            self.error_at_or_none(e.span().map(|s| s.start), e.message().to_string())
        })?;
        let Some((ppath, psource)) = &self.parent else {
            return Ok(root);
        };
        let parent = DeTable::parse(psource).map_err(|e| SpecError {
            path: ppath.clone(),
            line: e.span().map(|s| line_of(psource, s.start)),
            message: e.message().to_string(),
        })?;
        let span = root.span();
        let mut table = root.into_inner();
        let mut parent = parent.into_inner();
        shift_table(&mut parent, self.source.len() + 1);
        for key in INHERITED {
            let Some((k, mut v)) = parent.remove_entry(key) else {
                continue;
            };
            // Arrays (data sets, solvers, choices): the parent's entries, then this spec's.
            if let (DeValue::Array(inherited), Some(own)) = (v.get_mut(), table.get(key))
                && let DeValue::Array(added) = own.get_ref()
            {
                for item in added.iter() {
                    inherited.push(item.clone());
                }
            }
            table.insert(k, v);
        }
        Ok(Spanned::new(span, table))
    }

    /// The file and 1-based line of a byte offset (into this spec's source, or past it into
    /// the extended spec's).
    pub fn position(&self, offset: usize) -> (PathBuf, usize) {
        let base = self.source.len() + 1;
        match &self.parent {
            Some((p, src)) if offset >= base => (p.clone(), line_of(src, offset - base)),
            _ => (self.path.clone(), line_of(&self.source, offset)),
        }
    }

    /// The value at `path` (table keys, or array indices written as numbers) as `T`: a wrong
    /// type or an unknown key is an error at its line. `Ok(None)` when the key is absent.
    pub fn typed_opt<T: serde::de::DeserializeOwned>(
        &self,
        path: &[&str],
    ) -> Result<Option<T>, SpecError> {
        let merged = self.merged()?;
        let Some(v) = walk(merged.get_ref(), path) else {
            return Ok(None);
        };
        let key = path.join(".");
        T::deserialize(serde::de::IntoDeserializer::into_deserializer(v.clone()))
            .map(Some)
            .map_err(|e: toml::de::Error| {
                self.error_at_or_none(
                    e.span().or(Some(v.span())).map(|s| s.start),
                    format!("key `{key}`: {}", e.message()),
                )
            })
    }

    /// [`typed_opt`](Self::typed_opt) of a key that must be there.
    pub fn typed<T: serde::de::DeserializeOwned>(&self, path: &[&str]) -> Result<T, SpecError> {
        self.typed_opt(path)?.ok_or_else(|| {
            self.error_at_key(
                &path[..path.len().saturating_sub(1)],
                format!("key `{}` is missing", path.join(".")),
            )
        })
    }

    /// Whether the key `path` is written in the spec (or the one it extends).
    pub fn has_key(&self, path: &[&str]) -> bool {
        self.merged()
            .ok()
            .is_some_and(|m| walk(m.get_ref(), path).is_some())
    }

    /// An error at the line of the key `path` (or of its nearest present ancestor).
    pub fn error_at_key(&self, path: &[&str], message: String) -> SpecError {
        let offset = self.merged().ok().and_then(|m| {
            (0..=path.len())
                .rev()
                .find_map(|n| key_offset(m.get_ref(), &path[..n]))
        });
        self.error_at_or_none(offset, message)
    }

    fn error_at_or_none(&self, offset: Option<usize>, message: String) -> SpecError {
        match offset {
            Some(o) => self.error_at(o, message),
            None => self.error(message),
        }
    }

    /// An error at a byte offset (see [`position`](Self::position)).
    pub fn error_at(&self, offset: usize, message: String) -> SpecError {
        let (path, line) = self.position(offset);
        SpecError {
            path,
            line: Some(line),
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

    /// Checks that need no registry: unique ids, well-formed grids and checkpoints, solvers'
    /// data sets, plot axes, claim fields.
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
        for p in Profile::ALL {
            if let Err(e) = s.protocol.checkpoints.at(p).steps() {
                return Err(self.error_at_key(
                    &["protocol", "checkpoints"],
                    format!("key `protocol.checkpoints` ({p}): {e}"),
                ));
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
        for (table, v) in &s.protocol.tasks {
            let k = v.get("k_max").and_then(toml::Value::as_integer);
            if let Some(k) = k.filter(|&k| k > MAX_K) {
                return Err(self.error_at_key(
                    &["protocol", table, "k_max"],
                    format!(
                        "key `protocol.{table}.k_max`: {k} exceeds the limit of {MAX_K} \
                         (precision@1..k_max is kept for every query: {} per 1,000 queries)",
                        bytes(k as f64 * 8.0 * 1000.0)
                    ),
                ));
            }
        }
        for sv in &s.solvers {
            let (tune, at) = table_of(&sv.tune, sv.name.span().start);
            for (k, v) in &tune {
                if !list_or_per_profile_lists(v) {
                    return Err(self.error_at(
                        at,
                        format!("key `solvers.tune.{k}`: values must be non-empty arrays"),
                    ));
                }
            }
            let (grid, at) = table_of(&sv.grid, sv.name.span().start);
            let (params, _) = table_of(&sv.params, 0);
            for (k, v) in &grid {
                if !list_or_per_profile_lists(v) {
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
        // Ids name files (a plot's figure, a table's parquet) and report anchors: a duplicate
        // would overwrite the first or show one twice.
        for (section, ids) in [
            (
                "plots",
                s.plots.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ),
            ("tables", s.tables.iter().map(|t| t.id.as_str()).collect()),
            ("claims", s.claims.iter().map(|c| c.id.as_str()).collect()),
        ] {
            let mut seen = std::collections::BTreeSet::new();
            for (i, id) in ids.iter().enumerate() {
                if !seen.insert(*id) {
                    return Err(self.error_at_key(
                        &[section, &i.to_string(), "id"],
                        format!("key `{section}.id`: duplicate id \"{id}\""),
                    ));
                }
            }
        }
        for (i, p) in s.plots.iter().enumerate() {
            if let Some([lo, hi]) = p.y_range
                && (lo >= hi || lo.is_nan() || hi.is_nan())
            {
                return Err(self.error_at_key(
                    &["plots", &i.to_string(), "y_range"],
                    format!(
                        "plot `{}`: `y_range = [{lo}, {hi}]` must be [low, high] with low < high",
                        p.id
                    ),
                ));
            }
        }
        for (i, p) in s.plots.iter().enumerate() {
            if let Some(bad) = p
                .datasets
                .iter()
                .find(|d| !s.datasets.iter().any(|x| &x.id == *d))
            {
                return Err(self.error_at_key(
                    &["plots", &i.to_string(), "datasets"],
                    format!("plot `{}`: no data set with id \"{bad}\"", p.id),
                ));
            }
        }
        for (i, f) in s.figures.iter().enumerate() {
            let at = |key: &str, msg: String| {
                self.error_at_key(
                    &["figures", &i.to_string(), key],
                    format!("figure `{}`: {msg}", f.id),
                )
            };
            if s.plots.iter().any(|p| p.id == f.id) {
                return Err(at("id", "a plot of the spec has the same id".into()));
            }
            if f.panels.is_empty() {
                return Err(at("panels", "name at least one plot".into()));
            }
            if f.columns == Some(0) {
                return Err(at("columns", "at least one panel per row".into()));
            }
            for (stem, plot) in f.sources() {
                match stem {
                    None if !s.plots.iter().any(|p| p.id == plot) => {
                        return Err(at(
                            "panels",
                            format!(
                                "no plot with id \"{plot}\" in this spec (another spec's: \"<spec stem>/<plot id>\")"
                            ),
                        ));
                    }
                    Some(stem) if stem.is_empty() || plot.is_empty() || plot.contains('/') => {
                        return Err(at(
                            "panels",
                            format!("\"{stem}/{plot}\" is not \"<spec stem>/<plot id>\""),
                        ));
                    }
                    _ => {}
                }
            }
        }
        for (i, t) in s.tables.iter().enumerate() {
            if let Some(bad) = t
                .datasets
                .iter()
                .find(|d| !s.datasets.iter().any(|x| &x.id == *d))
            {
                return Err(self.error_at_key(
                    &["tables", &i.to_string(), "datasets"],
                    format!("table `{}`: no data set with id \"{bad}\"", t.id),
                ));
            }
        }
        for (i, c) in s.claims.iter().enumerate() {
            if let Some(vd) = &c.versus_dataset
                && !s.datasets.iter().any(|d| &d.id == vd)
            {
                return Err(self.error_at_key(
                    &["claims", &i.to_string(), "versus_dataset"],
                    format!(
                        "claim `{}`: `versus_dataset` names no data set with id \"{vd}\"",
                        c.id
                    ),
                ));
            }
            self.validate_origin(i, c)?;
        }
        Ok(())
    }
}

impl LoadedSpec {
    /// A claim of the paper carries its words and where they are; a claim of ours carries
    /// neither (its `text` says why it is ours). What the claim's kind needs is the kind's to
    /// check (`crate::analysis::claims::validate`).
    fn validate_origin(&self, i: usize, c: &Claim) -> Result<(), SpecError> {
        let at = |key: &str, msg: String| {
            self.error_at_key(
                &["claims", &i.to_string(), key],
                format!("claim `{}`: {msg}", c.id),
            )
        };
        if self.spec.origin == Origin::Ours && c.origin == Origin::Paper {
            return Err(at(
                "origin",
                "this spec is ours (`origin = \"ours\"`: a check the paper did not run), so its \
                 claims are ours too: add `origin = \"ours\"` to the claim, or judge the \
                 paper's words in a spec of the paper's figure"
                    .into(),
            ));
        }
        let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
        match c.origin {
            Origin::Paper => {
                if blank(&c.quote) {
                    return Err(at(
                        "quote",
                        "a claim of the paper needs `quote`, the paper's words it tests \
                         (verbatim), or `origin = \"ours\"` when it is our diagnostic"
                            .into(),
                    ));
                }
                if blank(&c.section) {
                    return Err(at(
                        "section",
                        "a claim of the paper needs `section`, where its quote is (e.g. \
                         \"JMLR §7.1.5, Fig. 3c\")"
                            .into(),
                    ));
                }
            }
            Origin::Ours => {
                for (key, v) in [("quote", &c.quote), ("section", &c.section)] {
                    if v.is_some() {
                        return Err(at(
                            key,
                            format!(
                                "`{key}` belongs to a claim of the paper; a claim with \
                                 `origin = \"ours\"` quotes nothing (say in `text` why it is ours)"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A non-empty array, or `{ quick = [...], paper = [...] }` with both non-empty (grid and
/// tune values may differ by profile).
fn list_or_per_profile_lists(v: &toml::Value) -> bool {
    let list =
        |v: Option<&toml::Value>| v.and_then(|v| v.as_array()).is_some_and(|a| !a.is_empty());
    match v.as_table() {
        Some(t) => t.len() == 2 && list(t.get("quick")) && list(t.get("paper")),
        None => list(Some(v)),
    }
}

/// The value at `path` under `t` (numbers index arrays).
fn walk<'a, 'i>(t: &'a DeTable<'i>, path: &[&str]) -> Option<&'a Spanned<DeValue<'i>>> {
    let (first, rest) = path.split_first()?;
    let mut v = t.get(*first)?;
    for seg in rest {
        v = match v.get_ref() {
            DeValue::Table(t) => t.get(*seg)?,
            DeValue::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// The offset of the key `path` (its last segment's key, or the array element's start).
fn key_offset(t: &DeTable<'_>, path: &[&str]) -> Option<usize> {
    let (last, init) = path.split_last()?;
    if init.is_empty() {
        return t.get_key_value(*last).map(|(k, _)| k.span().start);
    }
    match walk(t, init)?.get_ref() {
        DeValue::Table(inner) => inner.get_key_value(*last).map(|(k, _)| k.span().start),
        DeValue::Array(a) => a.get(last.parse::<usize>().ok()?).map(|v| v.span().start),
        _ => None,
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

/// A spec file's text: a regular file (a FIFO or a device named like a spec would block or
/// never end), UTF-8 (a binary file is named with the line and byte offset of its first
/// invalid byte). The error: the line, if any, and what is wrong.
fn read_text(path: &Path) -> Result<String, (Option<usize>, String)> {
    let meta = std::fs::metadata(path).map_err(|e| (None, e.to_string()))?;
    if !meta.is_file() {
        return Err((
            None,
            "not a regular file (a spec is a TOML text file)".to_string(),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| (None, e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        (
            Some(line),
            format!(
                "not UTF-8 text: invalid byte 0x{:02x} at byte offset {at}",
                bytes[at]
            ),
        )
    })
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
pub(crate) mod tests {
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

[protocol.retrieval]
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
    fn duplicate_plot_table_and_claim_ids_and_an_inverted_y_range_are_refused_at_their_line() {
        let plot = |id: &str, extra: &str| {
            format!(
                "\n[[plots]]\nid = \"{id}\"\ntitle = \"p\"\nx = \"step\"\nmetric = \"map\"\n\
                 x_label = \"x\"\ny_label = \"y\"\n{extra}"
            )
        };
        let table = |id: &str| {
            format!(
                "\n[[tables]]\nid = \"{id}\"\ntitle = \"t\"\nset = \"test\"\n\
                 rows = [{{ metric = \"map\" }}]\n"
            )
        };
        let claim = |id: &str| {
            format!(
                "\n[[claims]]\nid = \"{id}\"\norigin = \"ours\"\ntext = \"x\"\n\
                 kind = \"value-within\"\nmetric = \"map\"\nsolver = \"oasis\"\n\
                 range = [0.0, 1.0]\n"
            )
        };
        let ok = format!(
            "{MINIMAL}{}{}{}{}{}{}",
            plot("a", "y_range = [0.0, 1.0]\n"),
            plot("b", ""),
            table("a"),
            table("b"),
            claim("a"),
            claim("b")
        );
        parse(&ok).unwrap_or_else(|e| panic!("{e}"));
        // The second of two equal ids is named, at its own line.
        for (src, key) in [
            (
                format!("{MINIMAL}{}{}", plot("a", ""), plot("a", "")),
                "plots.id",
            ),
            (
                format!("{MINIMAL}{}{}", table("a"), table("a")),
                "tables.id",
            ),
            (
                format!("{MINIMAL}{}{}", claim("a"), claim("a")),
                "claims.id",
            ),
        ] {
            let e = parse(&src).unwrap_err();
            let second = src.match_indices("id = \"a\"").nth(1).unwrap().0;
            assert_eq!(e.line, Some(line_of(&src, second)), "{e}");
            assert!(
                e.to_string()
                    .contains(&format!("key `{key}`: duplicate id \"a\"")),
                "{e}"
            );
        }
        for range in ["[1.0, 0.0]", "[0.5, 0.5]", "[nan, 1.0]"] {
            let src = format!("{MINIMAL}{}", plot("a", &format!("y_range = {range}\n")));
            let e = parse(&src).unwrap_err();
            let at = src.lines().position(|l| l.starts_with("y_range")).unwrap() + 1;
            assert_eq!(e.line, Some(at), "{range}: {e}");
            assert!(e.to_string().contains("with low < high"), "{range}: {e}");
        }
    }

    #[test]
    fn a_binary_file_or_a_fifo_named_like_a_spec_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin.toml");
        std::fs::write(&bin, b"title = \"t\"\npaper = \"p\x00\xff\"\n").unwrap();
        let e = LoadedSpec::load(&bin).unwrap_err();
        assert_eq!(e.line, Some(2), "{e}");
        assert!(
            e.to_string()
                .contains("invalid byte 0xff at byte offset 23"),
            "{e}"
        );
        let fifo = dir.path().join("fifo.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Reading it would block for ever: refused from its metadata.
            let e = LoadedSpec::load(&fifo).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let src = MINIMAL.replace("figure = \"F1\"", "figure = \"F1\"\nfigur = 3");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(5));
        let msg = e.to_string();
        assert!(msg.starts_with("experiments/demo/f.toml:5:"), "{msg}");
        assert!(msg.contains("figur"), "{msg}");
        // Unknown keys under [protocol] are task tables, checked when the plan is built.
        let src = MINIMAL.replace("seed = 1", "seed = 1\nrepeets = 3");
        let s = parse(&src).unwrap();
        assert!(s.spec.protocol.tasks.contains_key("repeets"));
        assert!(s.error_at_key(&["protocol", "repeets"], "x".into()).line == Some(14));
    }

    #[test]
    fn task_tables_are_read_typed_at_their_lines() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            train_per_class: usize,
            test_per_class: usize,
        }
        let s = parse(MINIMAL).unwrap();
        let t: T = s.typed(&["protocol", "retrieval"]).unwrap();
        assert_eq!(t.train_per_class, 4);
        let bad = parse(&MINIMAL.replace("test_per_class = 3", "test_per_class = \"x\"")).unwrap();
        let e = bad.typed::<T>(&["protocol", "retrieval"]).unwrap_err();
        assert_eq!(e.line, Some(18), "{e}");
        assert!(e.to_string().contains("protocol.retrieval"), "{e}");
        let extra =
            parse(&MINIMAL.replace("test_per_class = 3", "test_per_class = 3\ntrian = 1")).unwrap();
        let e = extra.typed::<T>(&["protocol", "retrieval"]).unwrap_err();
        assert_eq!(e.line, Some(19), "{e}");
        assert!(e.to_string().contains("trian"), "{e}");
        assert!(
            s.typed_opt::<T>(&["protocol", "nothing"])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_spec_extending_another_runs_its_cells_and_errors_point_into_the_right_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("demo");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("base.toml"), MINIMAL).unwrap();
        let child = "title = \"table\"\npaper = \"demo\"\nfigure = \"T1\"\nextends = \"base\"\n";
        std::fs::write(d.join("t.toml"), child).unwrap();
        let s = LoadedSpec::load(&d.join("t.toml")).unwrap();
        assert_eq!((s.id.as_str(), s.spec.title.as_str()), ("demo/t", "table"));
        assert_eq!(s.spec.solvers[0].name.get_ref(), "oasis");
        // An inherited key's error names the parent's file and line.
        let (path, line) = s.position(s.spec.solvers[0].name.span().start);
        assert_eq!((path, line), (d.join("base.toml"), 21));
        let e = s.typed::<toml::Value>(&["protocol", "retrieval"]).unwrap();
        assert_eq!(e["train_per_class"].as_integer(), Some(4));
        // Solvers may be added: the parent's first, then the child's, each at its own line.
        std::fs::write(
            d.join("t.toml"),
            format!("{child}[[solvers]]\nname = \"euclidean\"\n"),
        )
        .unwrap();
        let s = LoadedSpec::load(&d.join("t.toml")).unwrap();
        let names: Vec<&str> = s
            .spec
            .solvers
            .iter()
            .map(|v| v.name.get_ref().as_str())
            .collect();
        assert_eq!(names, ["oasis", "euclidean"]);
        let (path, line) = s.position(s.spec.solvers[1].name.span().start);
        assert_eq!((path, line), (d.join("t.toml"), 6));
        // Redefining the protocol is refused at its line.
        std::fs::write(d.join("t.toml"), format!("{child}[protocol]\nseed = 2\n")).unwrap();
        let e = LoadedSpec::load(&d.join("t.toml")).unwrap_err();
        assert_eq!(e.line, Some(5), "{e}");
        assert!(e.to_string().contains("inherits"), "{e}");
        std::fs::write(d.join("t.toml"), child.replace("base", "nothing")).unwrap();
        assert!(LoadedSpec::load(&d.join("t.toml")).is_err());
        // Only a file stem of the same paper: no path out of its directory.
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("base.toml"), MINIMAL).unwrap();
        for stem in ["../other/base", "..", "sub/base", ""] {
            std::fs::write(
                d.join("t.toml"),
                child.replace("\"base\"", &format!("\"{stem}\"")),
            )
            .unwrap();
            let e = LoadedSpec::load(&d.join("t.toml")).unwrap_err();
            assert_eq!(e.line, Some(4), "{stem}: {e}");
            assert!(e.to_string().contains("is not a file stem"), "{stem}: {e}");
        }
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

    /// A claim after MINIMAL, with `extra` keys.
    pub(crate) fn with_claim(extra: &str) -> String {
        format!(
            "{MINIMAL}\n[[claims]]\nid = \"c\"\ntext = \"t\"\nkind = \"greater\"\n\
             metric = \"map\"\nsolver = \"oasis\"\nversus = \"oasis\"\n{extra}"
        )
    }

    pub(crate) fn line_of_key(src: &str, key: &str) -> usize {
        src.lines().position(|l| l.starts_with(key)).unwrap() + 1
    }

    #[test]
    fn a_spec_of_ours_holds_only_claims_of_ours() {
        assert_eq!(parse(MINIMAL).unwrap().spec.origin, Origin::Paper);
        let ours = |claim: &str| with_claim(claim).replacen("title", "origin = \"ours\"\ntitle", 1);
        let s = parse(&ours("origin = \"ours\"\n")).unwrap();
        assert_eq!(s.spec.origin, Origin::Ours);
        // The paper's words in a check of ours: an error at the claim that says what to do.
        let src = ours("quote = \"the paper's words\"\nsection = \"JMLR §5\"\n");
        let e = parse(&src).unwrap_err();
        let claim = line_of_key(&src, "[[claims]]");
        assert!(e.line.unwrap() >= claim, "{e}\n{src}");
        assert!(
            e.to_string().contains("claim `c`: this spec is ours"),
            "{e}"
        );
    }

    #[test]
    fn a_claim_of_the_paper_carries_its_words_and_one_of_ours_none() {
        let words = "quote = \"the paper's words\"\nsection = \"JMLR §5\"\n";
        let s = parse(&with_claim(words)).unwrap();
        let c = &s.spec.claims[0];
        assert_eq!(
            (c.origin, c.quote.as_deref()),
            (Origin::Paper, Some("the paper's words"))
        );
        let s = parse(&with_claim("origin = \"ours\"\n")).unwrap();
        assert_eq!(s.spec.claims[0].origin, Origin::Ours);
        // A claim of the paper without its words: an error at the claim, naming the key.
        for (src, key) in [
            (with_claim(""), "quote"),
            (with_claim("section = \"JMLR §5\"\n"), "quote"),
            (
                with_claim("quote = \"  \"\nsection = \"JMLR §5\"\n"),
                "quote",
            ),
            (with_claim("quote = \"words\"\n"), "section"),
        ] {
            let e = parse(&src).unwrap_err();
            let at = e.line.unwrap();
            let claim = line_of_key(&src, "[[claims]]");
            assert!(at >= claim && at <= claim + 9, "{e}\n{src}");
            let msg = e.to_string();
            assert!(
                msg.starts_with("experiments/demo/f.toml:")
                    && msg.contains("claim `c`")
                    && msg.contains(&format!("`{key}`")),
                "{msg}"
            );
        }
        // Written but blank is at its own line.
        let src = with_claim("quote = \"  \"\nsection = \"JMLR §5\"\n");
        assert_eq!(
            parse(&src).unwrap_err().line,
            Some(line_of_key(&src, "quote"))
        );
        // One of ours quotes nothing: a quote or section there is an error at its line.
        for key in ["quote", "section"] {
            let src = with_claim(&format!("origin = \"ours\"\n{key} = \"x\"\n"));
            let e = parse(&src).unwrap_err();
            assert_eq!(e.line, Some(line_of_key(&src, key)), "{e}");
            assert!(e.to_string().contains("origin = \"ours\""), "{e}");
        }
        // An unknown origin is a type error at its line.
        let src = with_claim("origin = \"theirs\"\n");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of_key(&src, "origin")), "{e}");
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
