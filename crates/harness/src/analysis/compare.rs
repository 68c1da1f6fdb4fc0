//! `dyad compare A B`: two runs side by side (issue 44 §4) — a branch's quick run against
//! main's, or CI's fresh quick run against the committed reference `results/references/quick/`.
//!
//! A and B are results directories (`DIR/cache/cells/`) or cell archives (`DIR/cells/`, what
//! `dyad archive export` writes). The cells compared are those of the selected specs at one
//! profile, as the current specs and code plan them. A cell's key hashes its code versions, so
//! a version bump gives the new cell another key than the old one; cells are therefore paired
//! by their **identity without versions**: the cell's canonical description (task name and
//! protocol, data provider and parameters, solver and parameters, seed, repeat) without the
//! result-format, task, solver and provider versions and without the data's content identity.
//! On each side the cell with the plan's own key is taken, else the one of that identity on
//! the same data with the highest versions.
//!
//! For every pair, the cells' values are compared record by record, timings aside (the
//! cells' clocks, the records' solver seconds and the records of timing metrics: what
//! [`CellResult::compare`] leaves out for `--recompute`). A pair whose values differ is
//! explained by what changed between the two cells:
//!
//! - a **version** (result format, task, solver or data provider): explained, the intended way
//!   to change results (CONTRIBUTING.md, "When results change, bump a version");
//! - the **data's content identity** (other files under the same provider and parameters):
//!   explained, the input changed;
//! - only the **code fingerprint** of the task, solver or provider (its source files changed,
//!   its version did not): **unexplained** — a change of results without a version bump;
//! - **nothing**: **unexplained** — the same code on the same data gave other values
//!   (nondeterminism, or another machine's arithmetic);
//! - but a difference of at most the solver's declared `machine_tolerance`
//!   ([`crate::registry::SolverEntry`]), every record, step and choice otherwise the same, is
//!   **explained as the machine's arithmetic** whatever changed: a solver whose kernels
//!   dispatch on the CPU (DR's candle products) reproduces to the bit on one machine only.
//!   Solvers declaring 0 (all others) are compared to the bit.
//!
//! An unexplained difference makes `dyad compare` exit 1 and is named cell by cell.
//!
//! Beside the cells: per experiment, data set, solver and headline metric of the task (the
//! summary table's columns: its primary set, last step) the mean difference B − A with its
//! paired spread over repeats (the 95 % t interval of the paired differences; "not
//! distinguishable" when it contains 0, see [`stats::paired`]), and per claim the verdict on
//! each side ([`claims::judge`] on each side's cells) and its transitions. Claims that read a
//! timing may change with the machine's load: they are marked so.
//!
//! `--bless` makes A (a cell archive) hold B's cells of the selected specs: the reference is
//! refreshed after an intended change (a version bump).
//!
//! `--ignore PATH` (repeatable) compares two settings of the same experiment: `PATH` is a
//! dotted path into the canonical description (`task.protocol.warm_start`,
//! `solver.params.max_iter`) that the pairing leaves out as well, so a cell is paired with its
//! counterpart under the other value (an absent key counts as `null`: a default that is not
//! serialised). A difference between the pair is then explained by the **setting** (the
//! change lists both values); the metrics and claims show what the setting did.

use crate::HarnessError;
use crate::analysis::claims;
use crate::analysis::results::{ExperimentResults, Stat};
use crate::analysis::stats::{self, Paired};
use crate::engine::cache::{Cache, CellResult, Comparison, changed_parts};
use crate::engine::plan::{Plan, cell_key};
use crate::spec::{At, Selector};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The canonical description of a cell without its versions, its data identity and the
/// `ignore`d paths (`--ignore`, module docs), hashed: what pairs a cell with its counterpart
/// computed by other versions of the code (or under another value of an ignored setting).
pub fn identity(canonical: &serde_json::Value, ignore: &[String]) -> String {
    let mut c = canonical.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("format");
    }
    for path in ignore {
        let mut parts: Vec<&str> = path.split('.').collect();
        let last = parts.pop().unwrap_or_default();
        if let Some(o) = parts
            .iter()
            .try_fold(&mut c, |v, k| v.get_mut(*k))
            .and_then(|v| v.as_object_mut())
        {
            o.remove(last);
        }
    }
    for part in ["task", "solver", "data"] {
        if let Some(o) = c.get_mut(part).and_then(|v| v.as_object_mut()) {
            o.remove("version");
            o.remove("identity");
        }
    }
    cell_key(&c)
}

/// The value at a dotted `path` of a canonical description (`null` when absent).
pub fn setting(canonical: &serde_json::Value, path: &str) -> serde_json::Value {
    path.split('.')
        .try_fold(canonical, |v, k| v.get(k))
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

/// `(format, task, solver, data)` versions of a canonical cell description.
fn versions(canonical: &serde_json::Value) -> [u64; 4] {
    let v = |p: &[&str]| {
        p.iter()
            .try_fold(canonical, |v, k| v.get(k))
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    [
        v(&["format"]),
        v(&["task", "version"]),
        v(&["solver", "version"]),
        v(&["data", "version"]),
    ]
}

fn data_identity(canonical: &serde_json::Value) -> &str {
    canonical["data"]["identity"].as_str().unwrap_or("")
}

/// One side of a comparison: a results directory or a cell archive.
pub struct Side {
    pub dir: PathBuf,
    /// A cell archive (`DIR/cells/`), as opposed to a results directory (`DIR/cache/cells/`).
    pub archive: bool,
    pub cache: Cache,
    /// identity → keys of the valid cells of that identity (built on first need).
    index: Option<HashMap<String, Vec<String>>>,
    /// Paths of the canonical description left out of the pairing (`--ignore`).
    ignore: Vec<String>,
}

impl Side {
    /// `dir` as a cell archive when it has `cells/`, else as a results directory when it has
    /// `cache/cells/`.
    pub fn open(dir: &Path) -> Result<Side, HarnessError> {
        let (archive, cache) = if dir.join("cells").is_dir() {
            (true, Cache::at(dir))
        } else if dir.join("cache").join("cells").is_dir() {
            (false, Cache::new(dir))
        } else {
            return Err(HarnessError::Other(format!(
                "{} is neither a results directory (with cache/cells/) nor a cell archive \
                 (with cells/)",
                dir.display()
            )));
        };
        Ok(Side {
            dir: dir.to_path_buf(),
            archive,
            cache,
            index: None,
            ignore: Vec::new(),
        })
    }

    /// This side, pairing cells without the canonical paths `ignore` (`--ignore`).
    pub fn ignoring(mut self, ignore: &[String]) -> Side {
        self.ignore = ignore.to_vec();
        self.index = None;
        self
    }

    /// An empty cell archive at `dir` (created), for `--bless` into a new reference.
    pub fn new_archive(dir: &Path) -> std::io::Result<Side> {
        std::fs::create_dir_all(dir.join("cells"))?;
        Ok(Side {
            dir: dir.to_path_buf(),
            archive: true,
            cache: Cache::at(dir),
            index: None,
            ignore: Vec::new(),
        })
    }

    fn index(&mut self) -> &HashMap<String, Vec<String>> {
        let (cache, ignore) = (&self.cache, &self.ignore);
        self.index.get_or_insert_with(|| {
            let mut index: HashMap<String, Vec<String>> = HashMap::new();
            for key in cache.keys() {
                if let Ok(Some(c)) = cache.check(&key) {
                    index
                        .entry(identity(&c.canonical, ignore))
                        .or_default()
                        .push(key);
                }
            }
            index
        })
    }

    /// The cell standing for plan cell `cell` on this side: the one of its key, else among
    /// the cells of its identity the one on the same data with the highest versions.
    fn find(&mut self, cell: &crate::engine::plan::Cell) -> Option<CellResult> {
        if let Some(c) = self.cache.get(&cell.key) {
            return Some(c);
        }
        let id = identity(&cell.canonical, &self.ignore);
        let keys = self.index().get(&id)?.clone();
        let want = data_identity(&cell.canonical);
        keys.iter()
            .filter_map(|k| self.cache.get(k))
            .max_by(|a, b| {
                let rank = |c: &CellResult| {
                    (
                        data_identity(&c.canonical) == want,
                        versions(&c.canonical),
                        std::cmp::Reverse(c.key.clone()),
                    )
                };
                rank(a).cmp(&rank(b))
            })
    }

    /// Every valid cell's key and identity, sorted.
    fn all(&mut self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .index()
            .iter()
            .flat_map(|(id, keys)| keys.iter().map(move |k| (k.clone(), id.clone())))
            .collect();
        v.sort();
        v
    }
}

/// What changed between the cell of A and the cell of B of a pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// The version of `part` (`format`, `task`, `solver`, `data`).
    Version { part: String, a: u64, b: u64 },
    /// The data's content identity.
    DataIdentity { a: String, b: String },
    /// The source fingerprint of `part` (`task`, `solver`, `data`) without a version bump.
    Code { part: String },
    /// An ignored setting (`--ignore`): its path and the two values.
    Setting {
        path: String,
        a: serde_json::Value,
        b: serde_json::Value,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Version { part, a, b } => write!(f, "{part} version {a} → {b}"),
            Change::DataIdentity { a, b } => write!(
                f,
                "data identity {} → {}",
                &a[..a.len().min(12)],
                &b[..b.len().min(12)]
            ),
            Change::Code { part } => write!(f, "{part} code changed, version not bumped"),
            Change::Setting { path, a, b } => write!(f, "{path} {a} → {b}"),
        }
    }
}

/// What explains a pair's difference (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Explanation {
    /// A version bump: the intended way results change.
    Version,
    /// Other data under the same provider and parameters.
    Data,
    /// Another value of a setting the comparison is about (`--ignore`).
    Setting,
    /// Values within the solver's declared `machine_tolerance`, nothing else different: the
    /// arithmetic of another machine (explained).
    Machine,
    /// Code changed without a version bump: unexplained.
    CodeWithoutVersion,
    /// Nothing changed: unexplained.
    Nothing,
}

impl Explanation {
    pub fn explained(self) -> bool {
        matches!(
            self,
            Explanation::Version | Explanation::Data | Explanation::Setting | Explanation::Machine
        )
    }

    /// What explains a pair that differs: its changes ([`Self::of`]), unless the values differ
    /// by at most the solver's `machine_tolerance` (positive) and in nothing else.
    fn of_pair(changes: &[Change], cmp: &Comparison, machine_tolerance: f64) -> Self {
        let explanation = Self::of(changes);
        let within = machine_tolerance > 0.0
            && cmp.max_abs <= machine_tolerance
            && cmp.removed == 0
            && cmp.other.is_empty();
        if !explanation.explained() && within {
            Explanation::Machine
        } else {
            explanation
        }
    }

    fn of(changes: &[Change]) -> Self {
        if changes.iter().any(|c| matches!(c, Change::Version { .. })) {
            Explanation::Version
        } else if changes
            .iter()
            .any(|c| matches!(c, Change::DataIdentity { .. }))
        {
            Explanation::Data
        } else if changes.iter().any(|c| matches!(c, Change::Setting { .. })) {
            Explanation::Setting
        } else if changes.is_empty() {
            Explanation::Nothing
        } else {
            Explanation::CodeWithoutVersion
        }
    }
}

/// The changes between two cells of one identity: versions, data identity, fingerprints (the
/// parts both cells recorded), and the `ignore`d settings whose values differ.
pub fn changes(a: &CellResult, b: &CellResult, ignore: &[String]) -> Vec<Change> {
    let (va, vb) = (versions(&a.canonical), versions(&b.canonical));
    let mut out: Vec<Change> = ["format", "task", "solver", "data"]
        .iter()
        .zip(va.iter().zip(&vb))
        .filter(|(_, (x, y))| x != y)
        .map(|(part, (&a, &b))| Change::Version {
            part: part.to_string(),
            a,
            b,
        })
        .collect();
    let (ia, ib) = (data_identity(&a.canonical), data_identity(&b.canonical));
    if ia != ib {
        out.push(Change::DataIdentity {
            a: ia.into(),
            b: ib.into(),
        });
    }
    out.extend(changed_parts(&b.code, &a.code).map(|p| Change::Code { part: p.into() }));
    for path in ignore {
        let (sa, sb) = (setting(&a.canonical, path), setting(&b.canonical, path));
        if sa != sb {
            out.push(Change::Setting {
                path: path.clone(),
                a: sa,
                b: sb,
            });
        }
    }
    out
}

/// How a cell of the selected specs compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Identical,
    Differs,
    OnlyA,
    OnlyB,
    /// On neither side.
    Neither,
}

/// One cell of the selected specs (each distinct key once).
#[derive(Debug, Clone, Serialize)]
pub struct CellLine {
    /// `<experiment> <data set> <solver label> r<repeat>` (the first spec that has it).
    pub cell: String,
    pub experiment: String,
    pub dataset: String,
    pub solver: String,
    pub repeat: u32,
    pub key_a: Option<String>,
    pub key_b: Option<String>,
    pub status: Status,
    /// How the values compare, timings aside (`identical (n values)`, `k of n shared
    /// values differ, by at most x`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<String>,
    pub shared: usize,
    pub differ: usize,
    pub max_abs: f64,
    /// What changed between the two cells (versions, data identity, code).
    pub changes: Vec<Change>,
    /// Why the values differ (pairs that differ only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

impl CellLine {
    pub fn unexplained(&self) -> bool {
        self.explanation.is_some_and(|e| !e.explained())
    }
}

/// A cell of an archive that pairs with no cell of the selected specs.
#[derive(Debug, Clone, Serialize)]
pub struct Unpaired {
    pub key: String,
    /// `task / data / solver r<repeat>` with the solver's parameters.
    pub what: String,
    /// `task / data / solver`: what the text report groups them by.
    #[serde(skip)]
    pub kind: String,
}

/// The mean difference of a headline metric between the two sides, paired by repeat.
#[derive(Debug, Clone, Serialize)]
pub struct MetricLine {
    pub experiment: String,
    pub dataset: String,
    pub solver: String,
    /// Its label (`mAP`, `prec@10`) and set.
    pub metric: String,
    pub set: String,
    pub a: f64,
    pub b: f64,
    /// Mean of the paired differences B − A, and the half-width of its 95 % t interval
    /// (infinite with one repeat: no spread to judge by).
    pub diff: f64,
    pub half: f64,
    pub n: usize,
    /// `B higher`, `B lower` or `not distinguishable` (within the spread over repeats).
    pub verdict: String,
}

/// A claim's verdict on each side.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimLine {
    pub experiment: String,
    pub claim: String,
    pub a: String,
    pub b: String,
    pub changed: bool,
    /// It reads a timing: its verdict may change with the machine's load.
    pub timing: bool,
    pub detail_a: String,
    pub detail_b: String,
}

/// Everything `dyad compare` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub a: String,
    pub b: String,
    pub profile: String,
    pub experiments: usize,
    pub cells: Vec<CellLine>,
    /// Cells of archive A (B) of the selected specs' tasks, data and solvers that pair with no
    /// cell of the selected specs (another protocol or parameters, a spec removed).
    pub only_a: Vec<Unpaired>,
    pub only_b: Vec<Unpaired>,
    /// Metrics whose values differ (those identical on both sides are counted in
    /// `metrics_identical`).
    pub metrics: Vec<MetricLine>,
    pub metrics_identical: usize,
    pub claims: Vec<ClaimLine>,
}

impl Report {
    pub fn count(&self, s: Status) -> usize {
        self.cells.iter().filter(|c| c.status == s).count()
    }

    pub fn unexplained(&self) -> Vec<&CellLine> {
        self.cells.iter().filter(|c| c.unexplained()).collect()
    }

    /// Whether every difference is explained by a version bump (or other data).
    pub fn ok(&self) -> bool {
        self.unexplained().is_empty()
    }
}

/// The `task / data / solver r<repeat>` of a cell, from its own description.
fn what(c: &CellResult) -> String {
    format!(
        "{} / {} / {} {} r{}",
        c.canonical["task"]["name"].as_str().unwrap_or("?"),
        c.canonical["data"]["name"].as_str().unwrap_or(&c.dataset),
        c.solver,
        c.params,
        c.repeat
    )
}

/// `(task, data, solver)` names of a canonical description: which archive cells are in scope.
fn kind(canonical: &serde_json::Value) -> (String, String, String) {
    let s = |p: &str| canonical[p]["name"].as_str().unwrap_or("").to_string();
    (s("task"), s("data"), s("solver"))
}

/// Compare the cells of `plans` on sides `a` and `b` (see the module docs). `all_specs`: the
/// plans are every spec (an archive cell pairing with none of them is listed whatever its
/// kind; else only those of the tasks, data and solvers the plans have, and not those that
/// pair with a cell of `others`, the specs not selected: they are theirs, not leftovers).
pub fn compare(
    plans: &[Plan],
    others: &[Plan],
    a: &mut Side,
    b: &mut Side,
    all_specs: bool,
) -> Report {
    assert_eq!(a.ignore, b.ignore, "both sides pair cells alike");
    let theirs: BTreeSet<_> = others
        .iter()
        .flat_map(|p| &p.cells)
        .map(|c| identity(&c.canonical, &a.ignore))
        .collect();
    let mut cells = Vec::new();
    let mut by_key: HashMap<String, (Option<CellResult>, Option<CellResult>)> = HashMap::new();
    let mut identities = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for plan in plans {
        for (ci, cell) in plan.cells.iter().enumerate() {
            if by_key.contains_key(&cell.key) {
                continue;
            }
            identities.insert(identity(&cell.canonical, &a.ignore));
            kinds.insert(kind(&cell.canonical));
            let (ca, cb) = (a.find(cell), b.find(cell));
            cells.push(cell_line(plan, ci, ca.as_ref(), cb.as_ref(), &a.ignore));
            by_key.insert(cell.key.clone(), (ca, cb));
        }
    }
    let unpaired = |side: &mut Side, paired: &dyn Fn(&str) -> bool| -> Vec<Unpaired> {
        if !side.archive {
            return Vec::new();
        }
        side.all()
            .into_iter()
            .filter(|(key, id)| {
                !identities.contains(id) && !theirs.contains(id) && !paired(key.as_str())
            })
            .filter_map(|(key, _)| side.cache.get(&key))
            .filter(|c| all_specs || kinds.contains(&kind(&c.canonical)))
            .map(|c| {
                let (task, data, solver) = kind(&c.canonical);
                Unpaired {
                    what: what(&c),
                    kind: format!("{task} / {data} / {solver}"),
                    key: c.key,
                }
            })
            .collect()
    };
    let (paired_a, paired_b): (BTreeSet<&str>, BTreeSet<&str>) = (
        cells.iter().filter_map(|c| c.key_a.as_deref()).collect(),
        cells.iter().filter_map(|c| c.key_b.as_deref()).collect(),
    );
    let only_a = unpaired(a, &|k| paired_a.contains(k));
    let only_b = unpaired(b, &|k| paired_b.contains(k));

    let (mut metrics, mut metrics_identical, mut claims) = (Vec::new(), 0, Vec::new());
    let mut seen = BTreeSet::new();
    for plan in plans {
        if !seen.insert(plan.spec.id.clone()) {
            continue;
        }
        let side = |of_b: bool| ExperimentResults {
            plan,
            cells: (plan.cells.iter())
                .map(|c| {
                    let (a, b) = &by_key[&c.key];
                    if of_b { b.clone() } else { a.clone() }
                })
                .collect(),
        };
        let (ra, rb) = (side(false), side(true));
        let (m, same) = metric_lines(&ra, &rb);
        metrics.extend(m);
        metrics_identical += same;
        claims.extend(claim_lines(&ra, &rb));
    }
    Report {
        a: a.dir.display().to_string(),
        b: b.dir.display().to_string(),
        profile: plans
            .first()
            .map_or(String::new(), |p| p.profile.to_string()),
        experiments: seen.len(),
        cells,
        only_a,
        only_b,
        metrics,
        metrics_identical,
        claims,
    }
}

fn cell_line(
    plan: &Plan,
    ci: usize,
    a: Option<&CellResult>,
    b: Option<&CellResult>,
    ignore: &[String],
) -> CellLine {
    let cell = &plan.cells[ci];
    let mut line = CellLine {
        cell: crate::engine::run::describe(plan, ci),
        experiment: plan.spec.id.clone(),
        dataset: plan.datasets[cell.dataset].id.clone(),
        solver: plan.solvers[cell.solver].label.clone(),
        repeat: cell.repeat,
        key_a: a.map(|c| c.key.clone()),
        key_b: b.map(|c| c.key.clone()),
        status: Status::Neither,
        values: None,
        shared: 0,
        differ: 0,
        max_abs: 0.0,
        changes: Vec::new(),
        explanation: None,
    };
    match (a, b) {
        (Some(a), Some(b)) => {
            let cmp = b.compare(a, |m| plan.metric(m).is_timing(m));
            line.changes = changes(a, b, ignore);
            line.status = if cmp.identical() {
                Status::Identical
            } else {
                let tolerance = (b.canonical["solver"]["name"].as_str())
                    .and_then(crate::registry::solver)
                    .map_or(0.0, |e| e.machine_tolerance);
                line.explanation = Some(Explanation::of_pair(&line.changes, &cmp, tolerance));
                Status::Differs
            };
            line.values = Some(cmp.to_string());
            (line.shared, line.differ, line.max_abs) = (cmp.shared, cmp.differ, cmp.max_abs);
        }
        (Some(_), None) => line.status = Status::OnlyA,
        (None, Some(_)) => line.status = Status::OnlyB,
        (None, None) => {}
    }
    line
}

/// The task's headline metrics (not timings) on its primary set at the last step, per data set
/// and solver with cells on both sides: the lines that differ, and how many are identical.
fn metric_lines(a: &ExperimentResults<'_>, b: &ExperimentResults<'_>) -> (Vec<MetricLine>, usize) {
    let plan = a.plan;
    let set = plan.primary_set();
    let (mut lines, mut same) = (Vec::new(), 0);
    for d in &plan.datasets {
        for sv in &plan.solvers {
            for h in plan.task.headline() {
                if plan.metric(h.metric).is_timing(h.metric) {
                    continue;
                }
                let sel = Selector {
                    dataset: Some(d.id.clone()),
                    solver: Some(sv.label.clone()),
                    metric: h.metric.into(),
                    set: set.clone(),
                    k: h.k,
                    coord: None,
                    at: At::Last,
                };
                let (Ok(va), Ok(vb)) = (a.select_repeats(&sel), b.select_repeats(&sel)) else {
                    continue;
                };
                let pairs: Vec<(f64, f64)> = va
                    .iter()
                    .filter_map(|(r, x)| vb.get(r).map(|y| (*x, *y)))
                    .collect();
                if pairs.is_empty() {
                    continue;
                }
                if pairs.iter().all(|(x, y)| x.to_bits() == y.to_bits()) {
                    same += 1;
                    continue;
                }
                let d_r: Vec<f64> = pairs.iter().map(|(x, y)| y - x).collect();
                let s = Stat::of(&d_r).expect("pairs");
                let half = stats::t_critical(s.n - 1) * s.sem;
                let verdict = match stats::paired(&vb, &va, 1.0, 0.0).0 {
                    Paired::Better => "B higher",
                    Paired::Worse => "B lower",
                    Paired::Tie => "not distinguishable",
                };
                let mean = |i: usize| {
                    pairs.iter().map(|p| [p.0, p.1][i]).sum::<f64>() / pairs.len() as f64
                };
                lines.push(MetricLine {
                    experiment: plan.spec.id.clone(),
                    dataset: d.id.clone(),
                    solver: sv.label.clone(),
                    metric: plan.metric_label(h.metric, h.k),
                    set: set.clone(),
                    a: mean(0),
                    b: mean(1),
                    diff: s.mean,
                    half: if s.n > 1 { half } else { f64::INFINITY },
                    n: s.n,
                    verdict: verdict.into(),
                });
            }
        }
    }
    (lines, same)
}

fn claim_lines(a: &ExperimentResults<'_>, b: &ExperimentResults<'_>) -> Vec<ClaimLine> {
    let plan = a.plan;
    plan.spec
        .spec
        .claims
        .iter()
        .map(|c| {
            let (oa, ob) = (claims::judge(a, c), claims::judge(b, c));
            let timing = plan.metric(&c.metric).is_timing(&c.metric);
            ClaimLine {
                experiment: plan.spec.id.clone(),
                claim: c.id.clone(),
                a: oa.verdict.to_string(),
                b: ob.verdict.to_string(),
                changed: oa.verdict != ob.verdict,
                timing,
                detail_a: oa.detail,
                detail_b: ob.detail,
            }
        })
        .collect()
}

/// What [`bless`] did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Blessed {
    /// Cells of B written into A (new keys, or values that differ).
    pub written: usize,
    /// Cells of A left as they were (same key, values identical timings aside).
    pub kept: usize,
    /// Cells of A deleted (replaced by B's cell of another key, or pairing with no cell).
    pub removed: usize,
}

/// Make the cell archive `a` hold B's cells of the compared specs: B's cell is written where
/// A has none of its key or A's differs in value; A's paired cells of other keys and its
/// unpaired cells of the report (`only_a`: of the compared specs' kinds, pairing with no cell
/// of any spec; with `all_specs`, every cell pairing with none) are deleted. A's cells identical to B's stay byte for byte (no churn of timings or commits).
/// Refuses when A is not an archive or B lacks cells of the selected specs.
pub fn bless(
    report: &Report,
    a: &mut Side,
    b: &Side,
    all_specs: bool,
) -> Result<Blessed, HarnessError> {
    if !a.archive {
        return Err(HarnessError::Other(format!(
            "--bless writes into a cell archive; {} is a results directory",
            a.dir.display()
        )));
    }
    let missing: Vec<&str> = report
        .cells
        .iter()
        .filter(|c| c.key_b.is_none())
        .map(|c| c.cell.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(HarnessError::Other(format!(
            "not blessing: {} lacks {} cells of the selected specs (run them first), e.g. {}",
            b.dir.display(),
            missing.len(),
            missing[0]
        )));
    }
    let io = |e: std::io::Error| HarnessError::Other(format!("{}: {e}", a.dir.display()));
    let mut done = Blessed::default();
    let mut keep = BTreeSet::new();
    for line in &report.cells {
        let kb = line.key_b.as_deref().expect("checked");
        if line.status == Status::Identical && line.key_a.as_deref() == Some(kb) {
            done.kept += 1;
        } else {
            let cell = b
                .cache
                .get(kb)
                .ok_or_else(|| HarnessError::Other(format!("cell {kb} vanished from B")))?;
            a.cache.put(&cell).map_err(io)?;
            done.written += 1;
        }
        keep.insert(kb.to_string());
    }
    // A subset's unpaired cells (`only_a`) exclude the cells other specs plan (`compare`'s
    // `others`), so they pair with no spec's cell: leftovers.
    let stale: Vec<String> = if all_specs {
        a.cache.keys()
    } else {
        let paired = report.cells.iter().filter_map(|c| c.key_a.clone());
        paired
            .chain(report.only_a.iter().map(|u| u.key.clone()))
            .collect()
    };
    for key in stale.into_iter().filter(|k| !keep.contains(k)) {
        if a.cache.path(&key).is_file() {
            a.cache.remove(&key).map_err(io)?;
            done.removed += 1;
        }
    }
    a.index = None;
    Ok(done)
}

fn num(x: f64) -> String {
    if x == 0.0 || (1e-3..1e4).contains(&x.abs()) {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

/// The report as text: counts, then every unexplained and explained difference, the cells on
/// one side only, the metrics that differ and the claims whose verdict changed.
pub fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let unexplained = r.unexplained();
    let differ = r.count(Status::Differs);
    let _ = writeln!(
        s,
        "A = {}\nB = {}\nprofile {}: {} experiments, {} cells",
        r.a,
        r.b,
        r.profile,
        r.experiments,
        r.cells.len()
    );
    let _ = writeln!(
        s,
        "cells: {} identical (timings aside), {differ} differ ({} explained, {} UNEXPLAINED), \
         {} only in A, {} only in B, {} in neither",
        r.count(Status::Identical),
        differ - unexplained.len(),
        unexplained.len(),
        r.count(Status::OnlyA) + r.only_a.len(),
        r.count(Status::OnlyB) + r.only_b.len(),
        r.count(Status::Neither)
    );
    let bumped_same = r
        .cells
        .iter()
        .filter(|c| c.status == Status::Identical && !c.changes.is_empty())
        .count();
    if bumped_same > 0 {
        let _ = writeln!(
            s,
            "  of the identical cells, {bumped_same} were computed by other versions or code \
             on each side"
        );
    }
    let list = |s: &mut String, title: &str, lines: &[&CellLine]| {
        if lines.is_empty() {
            return;
        }
        let _ = writeln!(s, "\n{title}:");
        for c in lines {
            let mut why = if c.changes.is_empty() {
                "nothing changed: same versions, same code, same data".to_string()
            } else {
                c.changes
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if c.explanation == Some(Explanation::Machine) {
                why.push_str(
                    "; within the solver's declared machine tolerance (its kernels dispatch on \
                     the CPU): another machine's arithmetic",
                );
            }
            let _ = writeln!(
                s,
                "  {}: {} — {why}",
                c.cell,
                c.values.as_deref().unwrap_or("")
            );
        }
    };
    list(
        &mut s,
        "UNEXPLAINED differences (values changed without a version bump; a changed code \
         fingerprint alone does not explain a change)",
        &unexplained,
    );
    let explained: Vec<&CellLine> = r
        .cells
        .iter()
        .filter(|c| c.explanation.is_some_and(Explanation::explained))
        .collect();
    list(&mut s, "Explained differences", &explained);
    let one_side = |s: &mut String, side: &str, st: Status, extra: &[Unpaired]| {
        let lines: Vec<&CellLine> = r.cells.iter().filter(|c| c.status == st).collect();
        if lines.is_empty() && extra.is_empty() {
            return;
        }
        let _ = writeln!(s, "\nOnly in {side}:");
        for c in lines {
            let _ = writeln!(s, "  {}", c.cell);
        }
        // Cells no selected spec pairs with, by kind (`--json` lists each with its parameters).
        let mut kinds: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for u in extra {
            kinds.entry(&u.kind).or_default().push(&u.key[..10]);
        }
        for (kind, keys) in kinds {
            let _ = writeln!(
                s,
                "  {kind}: {} cells no cell of the selected specs pairs with (e.g. [{}])",
                keys.len(),
                keys[..keys.len().min(3)].join("], [")
            );
        }
    };
    one_side(&mut s, "A", Status::OnlyA, &r.only_a);
    one_side(&mut s, "B", Status::OnlyB, &r.only_b);
    if !r.metrics.is_empty() {
        let _ = writeln!(
            s,
            "\nHeadline metrics that differ (last step; B − A paired over repeats, ± the 95 % t \
             interval; {} identical):",
            r.metrics_identical
        );
        let _ = writeln!(
            s,
            "  {:<28} {:<14} {:<28} {:<16} {:>10} {:>10} {:>22} {:>3}  verdict",
            "experiment", "data", "solver", "metric", "A", "B", "B − A", "n"
        );
        for m in &r.metrics {
            let half = if m.half.is_finite() {
                num(m.half)
            } else {
                "? (1 repeat)".into()
            };
            let _ = writeln!(
                s,
                "  {:<28} {:<14} {:<28} {:<16} {:>10} {:>10} {:>22} {:>3}  {}",
                m.experiment,
                m.dataset,
                m.solver,
                format!("{} ({})", m.metric, m.set),
                num(m.a),
                num(m.b),
                format!("{} ± {half}", num(m.diff)),
                m.n,
                m.verdict
            );
        }
    } else {
        let _ = writeln!(
            s,
            "\nHeadline metrics: {} identical on both sides, none differs",
            r.metrics_identical
        );
    }
    let changed: Vec<&ClaimLine> = r.claims.iter().filter(|c| c.changed).collect();
    let _ = writeln!(
        s,
        "\nClaims: {} judged, {} verdicts the same on both sides, {} changed{}",
        r.claims.len(),
        r.claims.len() - changed.len(),
        changed.len(),
        if changed.is_empty() { "" } else { ":" }
    );
    for c in changed {
        let _ = writeln!(
            s,
            "  {} [{}]: {} → {}{}\n    A: {}\n    B: {}",
            c.experiment,
            c.claim,
            c.a,
            c.b,
            if c.timing {
                " (reads a timing: may follow the machine's load)"
            } else {
                ""
            },
            c.detail_a,
            c.detail_b
        );
    }
    let _ = writeln!(
        s,
        "\n{}",
        if unexplained.is_empty() {
            format!(
                "OK: no unexplained difference ({differ} explained by a version bump, other data, a compared setting or a machine tolerance)"
            )
        } else {
            // Named again here, briefly: a CI log may keep only the output's tail.
            let names: Vec<String> = unexplained
                .iter()
                .map(|c| format!("  {} (max |B − A| {})", c.cell, num(c.max_abs)))
                .collect();
            format!(
                "FAIL: {} cells changed value without a version bump (details above):\n{}",
                unexplained.len(),
                names.join("\n")
            )
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical() -> serde_json::Value {
        json!({
            "format": 3,
            "task": { "name": "label-ranking", "version": 2, "protocol": { "k_max": 10 } },
            "data": { "name": "mnist", "version": 1, "params": {}, "identity": "abc" },
            "solver": { "name": "oasis", "version": 4, "params": { "c": 0.1 } },
            "seed": 3,
            "repeat": 0,
        })
    }

    #[test]
    fn identity_leaves_out_versions_and_data_identity_only() {
        let base = identity(&canonical(), &[]);
        for (path, value) in [
            (&["format"][..], json!(4)),
            (&["task", "version"][..], json!(3)),
            (&["solver", "version"][..], json!(5)),
            (&["data", "version"][..], json!(2)),
            (&["data", "identity"][..], json!("def")),
        ] {
            let mut c = canonical();
            *path.iter().fold(&mut c, |v, k| &mut v[*k]) = value;
            assert_eq!(identity(&c, &[]), base, "{path:?}");
            assert_ne!(cell_key(&c), cell_key(&canonical()));
        }
        for (path, value) in [
            (&["solver", "params", "c"][..], json!(0.2)),
            (&["task", "protocol", "k_max"][..], json!(20)),
            (&["data", "name"][..], json!("mnist-standin")),
            (&["seed"][..], json!(4)),
            (&["repeat"][..], json!(1)),
        ] {
            let mut c = canonical();
            *path.iter().fold(&mut c, |v, k| &mut v[*k]) = value;
            assert_ne!(identity(&c, &[]), base, "{path:?}");
        }
    }

    /// `--ignore` pairs a cell with its counterpart under another value of the named setting
    /// (present, absent, nested) and nothing else; the pair's change names the setting.
    #[test]
    fn an_ignored_setting_pairs_cells_that_differ_in_it_alone() {
        let ignore = vec!["task.protocol.warm_start".to_string()];
        let base = identity(&canonical(), &ignore);
        assert_eq!(base, identity(&canonical(), &[]), "absent: nothing removed");
        let mut warm = canonical();
        warm["task"]["protocol"]["warm_start"] = json!(true);
        assert_ne!(identity(&warm, &[]), identity(&canonical(), &[]));
        assert_eq!(identity(&warm, &ignore), base);
        // another setting still tells cells apart, and an unknown path ignores nothing
        warm["task"]["protocol"]["k_max"] = json!(20);
        assert_ne!(identity(&warm, &ignore), base);
        let nowhere = vec!["task.nothing.here".to_string()];
        assert_eq!(identity(&canonical(), &nowhere), base);
        let cell = |canonical: serde_json::Value| CellResult {
            canonical,
            ..crate::engine::cache::test_cell("k")
        };
        let (mut a, b) = (cell(canonical()), cell(canonical()));
        assert!(changes(&a, &b, &ignore).is_empty());
        a.canonical["task"]["protocol"]["warm_start"] = json!(false);
        let c = changes(&a, &b, &ignore);
        assert_eq!(
            c,
            vec![Change::Setting {
                path: ignore[0].clone(),
                a: json!(false),
                b: serde_json::Value::Null,
            }]
        );
        assert_eq!(c[0].to_string(), "task.protocol.warm_start false → null");
        assert_eq!(Explanation::of(&c), Explanation::Setting);
        assert!(Explanation::of(&c).explained());
    }

    #[test]
    fn only_a_version_bump_or_other_data_explains_a_difference() {
        let version = Change::Version {
            part: "solver".into(),
            a: 1,
            b: 2,
        };
        let data = Change::DataIdentity {
            a: "x".into(),
            b: "y".into(),
        };
        let code = Change::Code {
            part: "solver".into(),
        };
        let of = |c: &[Change]| Explanation::of(c);
        assert_eq!(of(&[code.clone(), version.clone()]), Explanation::Version);
        assert_eq!(of(&[code.clone(), data.clone()]), Explanation::Data);
        assert_eq!(
            of(std::slice::from_ref(&code)),
            Explanation::CodeWithoutVersion
        );
        assert_eq!(of(&[]), Explanation::Nothing);
        assert!(of(&[version]).explained() && of(&[data]).explained());
        let code = std::slice::from_ref(&code);
        assert!(!of(code).explained() && !of(&[]).explained());

        // A solver's declared machine tolerance explains values that differ by at most it,
        // and nothing else: not a larger difference, a removed record, another chosen step,
        // nor any difference of a solver declaring 0.
        let small = Comparison {
            shared: 28,
            differ: 3,
            max_abs: 1.1e-6,
            ..Comparison::default()
        };
        let pair = |c: &[Change], cmp: &Comparison, tol| Explanation::of_pair(c, cmp, tol);
        assert_eq!(pair(code, &small, 1e-4), Explanation::Machine);
        assert_eq!(pair(&[], &small, 1e-4), Explanation::Machine);
        assert!(pair(&[], &small, 1e-4).explained());
        assert_eq!(pair(code, &small, 0.0), Explanation::CodeWithoutVersion);
        assert_eq!(pair(&[], &small, 1e-7), Explanation::Nothing);
        let removed = Comparison {
            removed: 1,
            ..small.clone()
        };
        assert_eq!(pair(&[], &removed, 1e-4), Explanation::Nothing);
        let step = Comparison {
            other: vec!["selected step 10 → 20".into()],
            ..small.clone()
        };
        assert_eq!(pair(&[], &step, 1e-4), Explanation::Nothing);
    }
}
