//! Grid expansion: a spec and a profile become cells, each with its cache key — after every
//! check that needs no data: the task table, the data sets' providers, parameters and known
//! sizes, the solvers' families and parameters, the names claims and figures use, and bounds
//! on what the plan would cost. Errors name the spec's file, line and field.
//!
//! A cell key is the sha256 of a canonical JSON document (keys sorted) holding exactly what
//! determines the cell's result: the result-format version; the task's name, version and
//! resolved protocol; the data provider's name, version, canonical parameters and the data's
//! content identity; the solver's name, version and canonical parameters (defaults filled
//! in); the seed and the repeat index. Source fingerprints are not in it: they are kept beside
//! each cell as provenance, and the report warns when the code of a cached cell has changed
//! since it ran (bump the version of what changed results). Titles, plots, claims, comments
//! and the spec's own name are not in it either, so cosmetic edits rerun nothing and two
//! specs that describe the same run share its cells.

use crate::data::{DataContext, Resolved, provider};
use crate::engine::cache::RESULT_FORMAT_VERSION;
use crate::registry::{self, fingerprint};
use crate::spec::profile::{Profile, resolve_value};
use crate::spec::{LoadedSpec, SpecError, bytes, table_of};
use crate::tasks::{self, CELL_METRICS, CellProtocol, Metric, Task, TaskInput};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One data set of a plan.
pub struct DatasetInstance {
    /// The spec's id for it (`"c10"`).
    pub id: String,
    /// The registry name the spec asked for.
    pub requested: String,
    /// The parameters as written in the spec (resolved for the profile).
    pub spec_params: toml::Table,
    /// The spec's `vars` of this data set (plot and claim coordinates).
    pub vars: std::collections::BTreeMap<String, f64>,
    pub resolved: Resolved,
    /// Fingerprint of the provider's sources (provenance).
    pub code: String,
}

impl DatasetInstance {
    /// What follows the data set's id wherever a table row or heading names it: its kind
    /// when it is not the published release (a stand-in, or real data of other content).
    pub fn tag(&self) -> &'static str {
        if self.resolved.synthetic {
            " (SYNTHETIC)"
        } else if self.resolved.unpublished.is_some() {
            " (UNPUBLISHED CONTENT)"
        } else {
            ""
        }
    }
}

/// One solver configuration of a plan (a grid point).
pub struct SolverInstance {
    pub name: &'static str,
    pub family: &'static str,
    pub version: u32,
    /// Legend label; grid points append their parameters.
    pub label: String,
    /// The spec solver's label without the grid point: the series a plot with a grid
    /// parameter on its x axis draws this instance in.
    pub series: String,
    /// This instance's grid point (empty without a grid).
    pub grid_point: toml::Table,
    /// Resolved parameters as written.
    pub params: toml::Value,
    /// Canonical parameters, defaults filled in.
    pub canonical: serde_json::Value,
    /// Fingerprint of the solver's sources (provenance).
    pub fingerprint: String,
    pub iterative: bool,
    /// Candidate parameters tuned inside each cell (empty: nothing to tune). Each is the full
    /// parameter table (fixed parameters and grid point included).
    pub tune: Vec<toml::Value>,
    /// The learner built from `params` once, at plan time, and those of the tuned
    /// candidates (in `tune`'s order; empty without tuning): what its cells run.
    pub learner: std::sync::Arc<Learners>,
    /// Data set ids this solver runs on (empty: all).
    pub datasets: Vec<String>,
    /// The solver's own checkpoint grid, if the spec gives one.
    pub checkpoints: Option<Vec<u64>>,
    /// Whether the hold-out chooses this solver's step count (spec `early_stopping`).
    pub select_steps: bool,
}

/// One unit of work.
#[derive(Debug, Clone)]
pub struct Cell {
    pub key: String,
    pub dataset: usize,
    pub solver: usize,
    pub repeat: u32,
    pub canonical: serde_json::Value,
    /// Source fingerprints of the task, solver and data provider (provenance).
    pub code: BTreeMap<String, String>,
}

/// A spec expanded for one profile.
pub struct Plan {
    pub spec: LoadedSpec,
    pub profile: Profile,
    pub task: &'static dyn Task,
    /// The task's version (as hashed into the keys).
    pub task_version: u32,
    pub protocol: Box<dyn CellProtocol>,
    pub datasets: Vec<DatasetInstance>,
    pub solvers: Vec<SolverInstance>,
    pub seed: u64,
    pub repeats: u32,
    pub cells: Vec<Cell>,
}

/// A solver instance's learners, built once when it is planned.
pub struct Learners {
    /// From the instance's parameters.
    pub main: registry::BuiltSolver,
    /// From each tuned candidate's (empty without tuning).
    pub tuned: Vec<registry::BuiltSolver>,
}

impl std::fmt::Debug for Learners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Learners(1 + {} tuned)", self.tuned.len())
    }
}

impl SolverInstance {
    /// Whether a spec's reference to a solver (in a claim, a band, a choice's `edges`) names
    /// this instance: its legend label, its series (a grid's label without the point) or its
    /// registry name.
    pub fn answers_to(&self, n: &str) -> bool {
        self.label == n || self.series == n || self.name == n
    }

    /// The learner built from its resolved parameters (at plan time): what planning and the
    /// sanity checks ask for its stated properties (its start, its memory, its statistics).
    pub fn built(&self) -> Option<&registry::BuiltSolver> {
        Some(&self.learner.main)
    }

    /// The largest of `of` over the learners a cell may train ([`Self::candidates`]) that
    /// belong to family `F`; `None` when none does or none gives a value (a memory estimate:
    /// a tuned size makes the cell as large as its largest candidate).
    pub fn largest<F: ?Sized + 'static>(&self, of: impl Fn(&F) -> Option<u64>) -> Option<u64> {
        (self.candidates().iter())
            .filter_map(|b| b.family::<F>())
            .filter_map(of)
            .max()
    }

    /// What a cell runs: the tuned candidates, or the one learner without tuning.
    pub fn candidates(&self) -> &[registry::BuiltSolver] {
        if self.learner.tuned.is_empty() {
            std::slice::from_ref(&self.learner.main)
        } else {
            &self.learner.tuned
        }
    }
}

impl Plan {
    /// Whether any data set of the plan is a synthetic stand-in.
    pub fn any_synthetic(&self) -> bool {
        self.datasets.iter().any(|d| d.resolved.synthetic)
    }

    /// How `name` is read: the task's description, a cell pseudo-metric's, or a neutral one
    /// (higher is better, a plain number) for anything else a model records.
    pub fn metric(&self, name: &str) -> Metric {
        self.task
            .metrics()
            .iter()
            .chain(CELL_METRICS)
            .find(|m| m.name == name)
            .copied()
            .unwrap_or(Metric::undeclared(""))
    }

    /// The label of a metric at `k` for tables (`mAP`, `prec@10`).
    pub fn metric_label(&self, name: &str, k: Option<u32>) -> String {
        let m = self.metric(name);
        let label = if m.name.is_empty() { name } else { m.label };
        match k {
            Some(k) => format!("{label}@{k}"),
            None => label.to_string(),
        }
    }

    /// The sets the task records, the primary one first.
    pub fn sets(&self) -> Vec<String> {
        self.protocol.sets()
    }

    /// The set the report leads with.
    pub fn primary_set(&self) -> String {
        self.sets()
            .into_iter()
            .next()
            .unwrap_or_else(|| "test".into())
    }
}

/// The cells a command is limited to: those of the named solvers (registry name, legend
/// label, or a spec solver's label without its grid point: every point of its grid) on the
/// named data sets (spec ids); an empty list does not limit. Keys do not depend
/// on which cells are run together, so running a subset computes exactly the cells a full run
/// would: e.g. a new baseline alone, or the real-data panel first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellFilter {
    pub solvers: Vec<String>,
    pub datasets: Vec<String>,
}

impl CellFilter {
    pub fn is_empty(&self) -> bool {
        self.solvers.is_empty() && self.datasets.is_empty()
    }

    fn admits(&self, plan: &Plan, cell: &Cell) -> bool {
        let sv = &plan.solvers[cell.solver];
        let d = &plan.datasets[cell.dataset];
        (self.solvers.is_empty() || self.solvers.iter().any(|s| names(s, sv)))
            && (self.datasets.is_empty() || self.datasets.contains(&d.id))
    }

    /// The keys of the admitted cells (`None`: no limit). A name that matches nothing in
    /// `plans` is an error listing what there is.
    pub fn keys(
        &self,
        plans: &[Plan],
    ) -> Result<Option<std::collections::BTreeSet<String>>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        for s in &self.solvers {
            if !plans.iter().flat_map(|p| &p.solvers).any(|sv| names(s, sv)) {
                // Registry names and the spec solvers' labels (a grid's points are named by
                // their spec solver: 60 grid points would bury the answer).
                // Registry names first (they select the most), then labels.
                let listed = |f: &dyn Fn(&SolverInstance) -> String| {
                    let mut v: Vec<String> = plans.iter().flat_map(|p| &p.solvers).map(f).collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                };
                let mut have = listed(&|sv| format!("`{}`", sv.name));
                have.extend(listed(&|sv| format!("\"{}\"", sv.series)));
                let shown = have.len().min(12);
                let more = match have.len() - shown {
                    0 => String::new(),
                    more => format!(", and {more} more"),
                };
                return Err(format!(
                    "--solver {s}: no such solver in the selected specs (solver names and labels \
                     there: {}{more})",
                    have[..shown].join(", ")
                ));
            }
        }
        for d in &self.datasets {
            if !plans.iter().flat_map(|p| &p.datasets).any(|x| x.id == *d) {
                let mut have: Vec<&str> = plans
                    .iter()
                    .flat_map(|p| &p.datasets)
                    .map(|x| x.id.as_str())
                    .collect();
                have.sort_unstable();
                have.dedup();
                return Err(format!(
                    "--dataset {d}: no such data set in the selected specs (they have: {})",
                    have.join(", ")
                ));
            }
        }
        Ok(Some(
            plans
                .iter()
                .flat_map(|p| p.cells.iter().filter(|c| self.admits(p, c)))
                .map(|c| c.key.clone())
                .collect(),
        ))
    }

    /// Drop the cells it does not admit from `plans` (for commands that only list or submit
    /// cells: the plans no longer describe complete experiments).
    pub fn narrow(&self, plans: &mut [Plan]) -> Result<(), String> {
        self.keys(plans)?;
        for p in plans.iter_mut() {
            let keep: Vec<bool> = p.cells.iter().map(|c| self.admits(p, c)).collect();
            let mut i = 0;
            p.cells.retain(|_| {
                i += 1;
                keep[i - 1]
            });
        }
        Ok(())
    }
}

/// Hex sha256 of a canonical JSON value (serde_json maps are sorted by key).
pub fn cell_key(canonical: &serde_json::Value) -> String {
    dyad_datasets::identity::hex(&Sha256::digest(canonical.to_string().as_bytes()))
}

fn resolve_table(t: toml::Table, profile: Profile) -> toml::Table {
    match resolve_value(&toml::Value::Table(t), profile) {
        toml::Value::Table(t) => t,
        _ => unreachable!("a table resolves to a table"),
    }
}

/// How many points a grid table's Cartesian product holds (saturating: a product past
/// `u64::MAX` is `u64::MAX`), counted before any point is built.
fn grid_size(grid: &toml::Table) -> u64 {
    grid.values()
        .map(|v| v.as_array().map_or(1, |a| a.len() as u64))
        .fold(1u64, u64::saturating_mul)
}

/// `Err` naming the solver's `key` table when its grid would hold more than `limit` points.
fn check_grid_size(
    spec: &LoadedSpec,
    si: usize,
    key: &str,
    grid: &toml::Table,
    limit: u64,
    what: &str,
) -> Result<(), SpecError> {
    let n = grid_size(grid);
    if n <= limit {
        return Ok(());
    }
    let sizes: Vec<String> = grid
        .iter()
        .map(|(k, v)| format!("{k}: {}", v.as_array().map_or(1, Vec::len)))
        .collect();
    Err(spec.error_at_key(
        &["solvers", &si.to_string(), key],
        format!(
            "key `solvers.{key}`: {} {what} ({}) exceed the limit of {limit}",
            if n == u64::MAX {
                "more than 2^64".to_string()
            } else {
                n.to_string()
            },
            sizes.join(" x ")
        ),
    ))
}

/// The quoted labels of `solvers` (`k` of them), the first eight and how many more.
fn some_labels<'a>(solvers: impl Iterator<Item = &'a SolverInstance>, k: usize) -> String {
    let shown: Vec<String> = solvers
        .take(8)
        .map(|sv| format!("\"{}\"", sv.label))
        .collect();
    match k.saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// Whether `--solver s` names `sv`: its registry name, its legend label, or its spec solver's
/// label without the grid point.
fn names(s: &str, sv: &SolverInstance) -> bool {
    s == sv.name || s == sv.label || s == sv.series
}

/// Cartesian product of a grid table, in key order.
fn grid_points(grid: &toml::Table) -> Vec<toml::Table> {
    let mut points = vec![toml::Table::new()];
    for (k, v) in grid {
        let values = v.as_array().cloned().unwrap_or_default();
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |x| {
                    let mut q = p.clone();
                    q.insert(k.clone(), x.clone());
                    q
                })
            })
            .collect();
    }
    points
}

/// Most repeats a plan may ask for.
pub const MAX_REPEATS: u32 = 1000;
/// Most steps one cell may take (all its runs together).
pub const MAX_STEPS_PER_CELL: u64 = 10_000_000_000;
/// Most checkpoints one grid may hold.
pub const MAX_CHECKPOINTS: usize = 100_000;
/// Most cells one plan may hold.
pub const MAX_CELLS: usize = 100_000;
/// Most candidates one solver's `tune` grid may hold (each is trained in every cell).
pub const MAX_TUNE_CANDIDATES: u64 = 10_000;

/// A rough lower bound of the time of `steps` training steps, for messages: at least one
/// microsecond a step.
fn cost(steps: u128) -> String {
    let secs = steps as f64 * 1e-6;
    if secs >= 86_400.0 {
        format!("{:.0} days", secs / 86_400.0)
    } else if secs >= 3600.0 {
        format!("{:.1} hours", secs / 3600.0)
    } else {
        format!("{secs:.0} s")
    }
}

/// The task a spec selects: the one of its task tables, or of two the one built on the other.
fn select_task(spec: &LoadedSpec) -> Result<&'static dyn Task, SpecError> {
    let tables: Vec<&str> = spec
        .spec
        .protocol
        .tasks
        .keys()
        .map(String::as_str)
        .collect();
    let known = || {
        tasks::TASKS
            .iter()
            .map(|t| format!("`{}`", t.table()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for t in &tables {
        if tasks::task(t).is_none() {
            if let Some(now) = tasks::TASKS.iter().find(|k| k.former_tables().contains(t)) {
                return Err(spec.error_at_key(
                    &["protocol", t],
                    format!(
                        "key `protocol.{t}`: this table is now `[protocol.{}]` (task `{}`); rename it",
                        now.table(),
                        now.name()
                    ),
                ));
            }
            return Err(spec.error_at_key(
                &["protocol", t],
                format!(
                    "key `protocol.{t}`: no task has this table (known: {}; generic keys: repeats, seed, checkpoints)",
                    known()
                ),
            ));
        }
    }
    let chosen: Vec<&'static dyn Task> = tables
        .iter()
        .filter_map(|t| tasks::task(t))
        .filter(|t| {
            !tables
                .iter()
                .any(|o| tasks::task(o).and_then(|x| x.base()) == Some(t.table()))
        })
        .collect();
    match chosen.as_slice() {
        [t] => {
            if let Some(b) = t.base()
                && !tables.contains(&b)
            {
                return Err(spec.error_at_key(
                    &["protocol", t.table()],
                    format!(
                        "key `protocol.{}`: task `{}` builds on `[protocol.{b}]`, which is missing",
                        t.table(),
                        t.name()
                    ),
                ));
            }
            let expected = 1 + usize::from(t.base().is_some());
            if tables.len() != expected {
                return Err(spec.error_at_key(
                    &["protocol"],
                    format!(
                        "key `protocol`: one task per spec; found tables {}",
                        tables.join(", ")
                    ),
                ));
            }
            Ok(*t)
        }
        [] => Err(spec.error_at_key(
            &["protocol"],
            format!("key `protocol`: no task table; add one of {}", known()),
        )),
        _ => Err(spec.error_at_key(
            &["protocol"],
            format!(
                "key `protocol`: one task per spec; found tables {}",
                tables.join(", ")
            ),
        )),
    }
}

/// The spec line of the solver parameter a [`dyad_kernels::ParamError`] names (every
/// configuration's check names its parameter, dotted for a nested one, e.g. `psd.every` or
/// `safeguards.drift_tolerance`): that key in `params`, `grid` or `tune` (or, for a nested
/// parameter, the nearest enclosing key written there), else, for a value the spec leaves
/// at its default (or an error of the table as a whole, which names no parameter), the
/// solver's entry.
fn param_error(spec: &LoadedSpec, si: usize, param: &str, message: String) -> SpecError {
    let i = si.to_string();
    let segs: Vec<&str> = param.split('.').filter(|s| !s.is_empty()).collect();
    for table in ["params", "grid", "tune"] {
        for n in (1..=segs.len()).rev() {
            let mut path = vec!["solvers", i.as_str(), table];
            path.extend_from_slice(&segs[..n]);
            if spec.has_key(&path) {
                return spec.error_at_key(&path, message);
            }
        }
    }
    spec.error_at_key(&["solvers", &i, "name"], message)
}

/// A solver's `components` (the components of a sparse PCA, a mixture, a decomposition)
/// against the data's known shape: more than both its rows and its columns no solver can
/// fit, whatever it is (each checks its own, tighter bound when it runs). Refused at the
/// parameter's line before any data is read.
fn check_components(
    spec: &LoadedSpec,
    datasets: &[DatasetInstance],
    solvers: &[SolverInstance],
    entry_of: &[usize],
) -> Result<(), SpecError> {
    for (sv, &si) in solvers.iter().zip(entry_of) {
        let Some(m) = sv
            .params
            .get("components")
            .and_then(toml::Value::as_integer)
        else {
            continue;
        };
        let on = datasets
            .iter()
            .filter(|d| sv.datasets.is_empty() || sv.datasets.contains(&d.id));
        for d in on {
            let Some(shape) = &d.resolved.shape else {
                continue;
            };
            if m > shape.rows.max(shape.dim) as i64 {
                return Err(param_error(
                    spec,
                    si,
                    "components",
                    format!(
                        "key `solvers.params.components`: solver `{}` asks for {m} components, \
                         but `{}` has {} rows x {} columns",
                        sv.label, d.id, shape.rows, shape.dim
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The memory cells may use: `DYAD_MEMORY` (bytes, or with a unit: `64G`, `512M`, `2T`) when
/// set, for planning on another machine (a cluster's nodes); else this machine's total
/// memory (`/proc/meminfo`); `None` where neither is known.
pub fn memory_limit() -> Result<Option<u64>, String> {
    if let Ok(v) = std::env::var("DYAD_MEMORY") {
        return parse_bytes(&v)
            .map(Some)
            .ok_or_else(|| format!("DYAD_MEMORY = \"{v}\": expected bytes, e.g. 64G, 512M or 2T"));
    }
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return Ok(None);
    };
    Ok(info.lines().find_map(|l| {
        let kb = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
        kb.trim().parse::<u64>().ok()?.checked_mul(1024)
    }))
}

/// `64G`, `512M`, `2T`, `1.5G`, `100000` (binary units: K = 1024).
fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let t = v.trim_end_matches(['B', 'b']).trim_end_matches(['i']);
    let (num, unit) = match t.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&t[..i], c.to_ascii_uppercase()),
        _ => (t, ' '),
    };
    let scale = match unit {
        ' ' => 1u64,
        'K' => 1 << 10,
        'M' => 1 << 20,
        'G' => 1 << 30,
        'T' => 1 << 40,
        _ => return None,
    };
    let x: f64 = num.trim().parse().ok()?;
    (x.is_finite() && x > 0.0 && x * (scale as f64) < u64::MAX as f64)
        .then_some((x * scale as f64) as u64)
}

/// Every (data set, solver) cell's memory estimate ([`CellProtocol::memory`], a lower
/// bound) against the memory cells may use ([`memory_limit`]): a cell that would exhaust it
/// is refused at its solver's line before anything is allocated.
fn check_memory(
    spec: &LoadedSpec,
    protocol: &dyn CellProtocol,
    datasets: &[DatasetInstance],
    solvers: &[SolverInstance],
    entry_of: &[usize],
) -> Result<(), SpecError> {
    let limit = memory_limit().map_err(|e| spec.error(e))?;
    let Some(limit) = limit else {
        return Ok(());
    };
    for (sv, &si) in solvers.iter().zip(entry_of) {
        let on = datasets
            .iter()
            .filter(|d| sv.datasets.is_empty() || sv.datasets.contains(&d.id));
        for d in on {
            let Some(m) = protocol.memory(sv, d) else {
                continue;
            };
            let total = m.total();
            if total > limit {
                let parts: Vec<String> = m
                    .parts
                    .iter()
                    .filter(|(_, b)| *b > 0)
                    .map(|(what, b)| format!("{what}: {}", bytes(*b as f64)))
                    .collect();
                return Err(spec.error_at_key(
                    &["solvers", &si.to_string(), "name"],
                    format!(
                        "solver `{}` on `{}`: one cell needs at least {} ({}), more than the {} \
                         cells may use (this machine's memory; set DYAD_MEMORY to plan for \
                         another)",
                        sv.label,
                        d.id,
                        bytes(total as f64),
                        parts.join("; "),
                        bytes(limit as f64)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Expand `spec` for `profile`. Resolving data sets reads no data when their content
/// identity is already known.
pub fn plan(spec: &LoadedSpec, profile: Profile, ctx: &DataContext) -> Result<Plan, SpecError> {
    let s = &spec.spec;
    let task = select_task(spec)?;
    let checkpoints = s.protocol.checkpoints.at(profile).steps().map_err(|e| {
        spec.error_at_key(
            &["protocol", "checkpoints"],
            format!("key `protocol.checkpoints`: {e}"),
        )
    })?;
    let protocol = task.plan(&TaskInput {
        spec,
        profile,
        checkpoints,
    })?;

    let repeats = *s.protocol.repeats.at(profile);
    if repeats == 0 || repeats > MAX_REPEATS {
        return Err(spec.error_at_key(
            &["protocol", "repeats"],
            format!("key `protocol.repeats` ({profile}): {repeats}; must lie in 1..={MAX_REPEATS}"),
        ));
    }

    let mut datasets = Vec::new();
    for (di, d) in s.datasets.iter().enumerate() {
        let at = d.name.span().start;
        let p = provider(d.name.get_ref()).ok_or_else(|| {
            spec.error_at(
                at,
                format!(
                    "key `datasets.name`: unknown data set \"{}\" (known: {})",
                    d.name.get_ref(),
                    crate::data::PROVIDERS
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        if !task.data_kinds().contains(&p.kind()) {
            return Err(spec.error_at(
                at,
                format!(
                    "data set `{}` ({}) is {}; task `{}` takes {}",
                    d.id,
                    p.name(),
                    p.kind(),
                    task.name(),
                    task.data_kinds().join(" or ")
                ),
            ));
        }
        let (params, params_at) = table_of(&d.params, at);
        let params = resolve_table(params, profile);
        let json =
            serde_json::to_value(&params).map_err(|e| spec.error_at(params_at, e.to_string()))?;
        let resolved = p
            .resolve(ctx, &json)
            .map_err(|e| spec.error_at(params_at, format!("data set `{}`: {e}", d.id)))?;
        // Real data absent here: what it resolved to where its cells were computed, when the
        // context recalls it (`dyad report` from an archive), else the stand-in.
        let resolved = if resolved.synthetic && p.info().is_some() {
            ctx.recall(p.name(), &json).unwrap_or(resolved)
        } else {
            resolved
        };
        let code = fingerprint(
            crate::data::provider(resolved.name)
                .map(|q| q.sources())
                .unwrap_or(p.sources()),
        );
        let inst = DatasetInstance {
            id: d.id.clone(),
            requested: p.name().to_string(),
            spec_params: params,
            vars: d.vars.clone(),
            resolved,
            code,
        };
        protocol.check_data(&inst).map_err(|e| {
            spec.error_at_key(
                &["datasets", &di.to_string(), "name"],
                format!("data set `{}`: {e}", d.id),
            )
        })?;
        datasets.push(inst);
    }

    let mut solvers = Vec::new();
    // The spec entry of each instance (a grid gives one entry several).
    let mut entry_of = Vec::new();
    for (si, sv) in s.solvers.iter().enumerate() {
        let at = sv.name.span().start;
        let entry = registry::solver(sv.name.get_ref()).ok_or_else(|| {
            spec.error_at(
                at,
                format!(
                    "key `solvers.name`: unknown solver \"{}\" (known: {})",
                    sv.name.get_ref(),
                    registry::SOLVERS
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        if entry.family != task.family() {
            return Err(spec.error_at(
                at,
                format!(
                    "solver `{}` is a {}; task `{}` runs {}s",
                    entry.name,
                    entry.family,
                    task.name(),
                    task.family()
                ),
            ));
        }
        let base = resolve_table(table_of(&sv.params, at).0, profile);
        let grid = resolve_table(table_of(&sv.grid, at).0, profile);
        check_grid_size(spec, si, "grid", &grid, MAX_CELLS as u64, "grid points")?;
        let tune_grid = resolve_table(table_of(&sv.tune, at).0, profile);
        check_grid_size(
            spec,
            si,
            "tune",
            &tune_grid,
            MAX_TUNE_CANDIDATES,
            "tuning candidates",
        )?;
        let fp = registry::solver_fingerprint(entry.name);
        let own_checkpoints = match &sv.checkpoints {
            Some(c) => Some(
                c.at(profile)
                    .steps()
                    .map_err(|e| spec.error_at(at, format!("key `solvers.checkpoints`: {e}")))?,
            ),
            None => None,
        };
        for point in grid_points(&grid) {
            let mut params = base.clone();
            let mut suffix = Vec::new();
            for (k, v) in &point {
                params.insert(k.clone(), v.clone());
                suffix.push(format!("{k}={v}"));
            }
            let params = toml::Value::Table(params);
            let built = (entry.build)(params.clone()).map_err(|e| {
                param_error(spec, si, &e.param, format!("solver `{}`: {e}", entry.name))
            })?;
            let mut tune = Vec::new();
            let mut tune_canonical = Vec::new();
            let mut tuned = Vec::new();
            for candidate in grid_points(&tune_grid) {
                if candidate.is_empty() {
                    continue;
                }
                let mut full = params.as_table().cloned().unwrap_or_default();
                full.extend(candidate);
                let full = toml::Value::Table(full);
                let b = (entry.build)(full.clone()).map_err(|e| {
                    param_error(
                        spec,
                        si,
                        &e.param,
                        format!("solver `{}` (tuned candidate): {e}", entry.name),
                    )
                })?;
                tune_canonical.push(b.canonical.clone());
                tune.push(full);
                tuned.push(b);
            }
            let canonical = if tune.is_empty() {
                built.canonical.clone()
            } else {
                json!({ "params": built.canonical, "tune": tune_canonical })
            };
            let base_label = sv.label.clone().unwrap_or_else(|| entry.label.to_string());
            let label = if suffix.is_empty() {
                base_label.clone()
            } else {
                format!("{base_label} ({})", suffix.join(", "))
            };
            entry_of.push(si);
            solvers.push(SolverInstance {
                name: entry.name,
                family: entry.family,
                version: entry.version,
                label,
                series: base_label,
                grid_point: point.clone(),
                params,
                canonical,
                fingerprint: fp.clone(),
                iterative: built.iterative,
                tune,
                learner: std::sync::Arc::new(Learners { main: built, tuned }),
                datasets: sv.datasets.clone(),
                checkpoints: own_checkpoints.clone(),
                select_steps: sv.early_stopping,
            });
        }
    }
    {
        let mut labels = std::collections::BTreeSet::new();
        for (sv, &si) in solvers.iter().zip(&entry_of) {
            if !labels.insert(sv.label.as_str()) {
                let i = si.to_string();
                let key = if spec.has_key(&["solvers", &i, "label"]) {
                    "label"
                } else {
                    "name"
                };
                return Err(spec.error_at_key(
                    &["solvers", &i, key],
                    format!(
                        "key `solvers.{key}`: two solvers share the label \"{}\"; give one a \
                         `label`",
                        sv.label
                    ),
                ));
            }
        }
    }
    // Counted before any cell is built: repeats x data sets x grid points can reach 10^11.
    let n_cells: u64 = datasets
        .iter()
        .map(|d| {
            let on = |sv: &&SolverInstance| sv.datasets.is_empty() || sv.datasets.contains(&d.id);
            solvers.iter().filter(on).count() as u64
        })
        .sum::<u64>()
        .saturating_mul(u64::from(repeats));
    if n_cells > MAX_CELLS as u64 {
        return Err(spec.error(format!(
            "{n_cells} cells exceed the limit of {MAX_CELLS} for one spec (repeats x data sets x solver grid points)"
        )));
    }
    check_components(spec, &datasets, &solvers, &entry_of)?;
    check_memory(spec, protocol.as_ref(), &datasets, &solvers, &entry_of)?;
    check_names(spec, profile, &datasets, &solvers)?;
    crate::analysis::names::check_planned(spec, profile, task, protocol.as_ref(), &solvers)?;

    let task_fp = fingerprint(task.sources());
    let mut plan = Plan {
        spec: spec.clone(),
        profile,
        task,
        task_version: task.version(),
        protocol,
        datasets,
        solvers,
        seed: s.protocol.seed,
        repeats,
        cells: Vec::new(),
    };
    let mut cells = Vec::new();
    for (di, d) in plan.datasets.iter().enumerate() {
        for (si, sv) in plan.solvers.iter().enumerate() {
            if !sv.datasets.is_empty() && !sv.datasets.contains(&d.id) {
                continue;
            }
            let steps = plan.protocol.steps(sv);
            let grid = sv.checkpoints.as_ref().map_or(0, Vec::len);
            if steps > MAX_STEPS_PER_CELL || grid > MAX_CHECKPOINTS {
                let si_s = si.to_string();
                let at = if sv.checkpoints.is_some() {
                    vec!["solvers", si_s.as_str(), "checkpoints"]
                } else {
                    vec!["protocol", "checkpoints"]
                };
                return Err(spec.error_at_key(
                    &at,
                    format!(
                        "solver `{}` on `{}`: {steps} steps per cell ({grid} checkpoints) exceed \
                         the limit of {MAX_STEPS_PER_CELL} steps and {MAX_CHECKPOINTS} checkpoints; \
                         x {repeats} repeats that is at least {} of training",
                        sv.label,
                        d.id,
                        cost(u128::from(steps) * u128::from(repeats))
                    ),
                ));
            }
            let code = BTreeMap::from([
                ("task".to_string(), task_fp.clone()),
                ("solver".to_string(), sv.fingerprint.clone()),
                ("data".to_string(), d.code.clone()),
            ]);
            for repeat in 0..repeats {
                let canonical = canonical_cell(&plan, di, si, repeat);
                cells.push(Cell {
                    key: cell_key(&canonical),
                    dataset: di,
                    solver: si,
                    repeat,
                    canonical,
                    code: code.clone(),
                });
            }
        }
    }
    plan.cells = cells;
    Ok(plan)
}

/// The canonical description of a cell (see the module documentation): what its key hashes.
fn canonical_cell(plan: &Plan, di: usize, si: usize, repeat: u32) -> serde_json::Value {
    let (d, sv) = (&plan.datasets[di], &plan.solvers[si]);
    json!({
        "format": RESULT_FORMAT_VERSION,
        "task": {
            "name": plan.task.key_name(),
            "version": plan.task_version,
            "protocol": plan.protocol.canonical(sv),
        },
        "data": {
            "name": d.resolved.name,
            "version": d.resolved.version,
            "params": d.resolved.params,
            "identity": d.resolved.identity,
        },
        "solver": { "name": sv.name, "version": sv.version, "params": sv.canonical },
        "seed": plan.seed,
        "repeat": repeat,
    })
}

/// Recompute every cell's key from the plan's current versions, parameters and identities
/// (after a test or a tool changed one of them).
pub fn rekey(plan: &mut Plan) {
    let keys: Vec<serde_json::Value> = plan
        .cells
        .iter()
        .map(|c| canonical_cell(plan, c.dataset, c.solver, c.repeat))
        .collect();
    for (c, canonical) in plan.cells.iter_mut().zip(keys) {
        c.key = cell_key(&canonical);
        c.canonical = canonical;
    }
}

/// Every solver and data set a plot, table, reference, claim or expectation names must be in
/// the spec; a plot's x axis must be one the task has.
fn check_names(
    spec: &LoadedSpec,
    profile: Profile,
    datasets: &[DatasetInstance],
    solvers: &[SolverInstance],
) -> Result<(), SpecError> {
    let s = &spec.spec;
    let solver_ok = |n: &str| solvers.iter().any(|sv| sv.answers_to(n));
    let dataset_ok = |n: &str| datasets.iter().any(|d| d.id == n);
    let known_solvers = || {
        solvers
            .iter()
            .map(|sv| format!("\"{}\"", sv.label))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let bad_solver = |path: &[&str], n: &str| {
        spec.error_at_key(
            path,
            format!(
                "key `{}`: no solver \"{n}\" in this spec (labels: {})",
                path.join("."),
                known_solvers()
            ),
        )
    };
    let bad_dataset = |path: &[&str], n: &str| {
        spec.error_at_key(
            path,
            format!("key `{}`: no data set with id \"{n}\"", path.join(".")),
        )
    };
    // Claims and bands select one instance: a label, or a registry name only one instance
    // has (two OASIS runs with different budgets must be told apart by label).
    let matches = |n: &str| {
        let by_label = solvers.iter().filter(|sv| sv.label == n).count();
        if by_label > 0 {
            by_label
        } else {
            solvers.iter().filter(|sv| sv.name == n).count()
        }
    };
    let one_solver = |path: &[&str], n: &str| -> Result<(), SpecError> {
        match matches(n) {
            0 => Err(bad_solver(path, n)),
            1 => Ok(()),
            k => Err(spec.error_at_key(
                path,
                format!(
                    "key `{}`: \"{n}\" names {k} solvers of this spec; name one by its label ({})",
                    path.join("."),
                    some_labels(solvers.iter().filter(|sv| sv.name == n), k)
                ),
            )),
        }
    };
    // A slope over a solver grid parameter names the grid's instances together.
    let grid_over = |n: &str, x: &Option<Vec<String>>| {
        let names = x.as_deref().unwrap_or_default();
        let by_series: Vec<&SolverInstance> = solvers.iter().filter(|sv| sv.series == n).collect();
        let of_name: Vec<&SolverInstance> = if by_series.len() > 1 {
            by_series
        } else {
            solvers.iter().filter(|sv| sv.name == n).collect()
        };
        of_name.len() > 1
            && of_name
                .iter()
                .all(|sv| names.iter().any(|p| sv.grid_point.contains_key(p)))
    };
    for (i, c) in s.claims.iter().enumerate() {
        let i = i.to_string();
        if c.profile.is_some_and(|p| p != profile) {
            continue;
        }
        // (`x_param` is read by `slope-within` only.)
        if !(c.x_param.is_some() && grid_over(&c.solver, &c.x_param)) {
            one_solver(&["claims", &i, "solver"], &c.solver)?;
        }
        if let Some(v) = &c.versus {
            one_solver(&["claims", &i, "versus"], v)?;
        }
        if let Some(d) = c.datasets.iter().find(|d| !dataset_ok(d)) {
            return Err(bad_dataset(&["claims", &i, "datasets"], d));
        }
    }
    for (i, r) in s.references.iter().enumerate() {
        let i = i.to_string();
        if !solver_ok(&r.solver) {
            return Err(bad_solver(&["references", &i, "solver"], &r.solver));
        }
        if !dataset_ok(&r.dataset) {
            return Err(bad_dataset(&["references", &i, "dataset"], &r.dataset));
        }
    }
    for (i, e) in s.expect.iter().enumerate() {
        let i = i.to_string();
        one_solver(&["expect", &i, "solver"], &e.solver)?;
        if !dataset_ok(&e.dataset) {
            return Err(bad_dataset(&["expect", &i, "dataset"], &e.dataset));
        }
    }
    for (i, p) in s.plots.iter().enumerate() {
        let i = i.to_string();
        if let Some(n) = p.solvers.iter().find(|n| !solver_ok(n)) {
            return Err(bad_solver(&["plots", &i, "solvers"], n));
        }
        if let Some(v) = &p.versus {
            one_solver(&["plots", &i, "versus"], v)?;
        }
    }
    for (i, t) in s.tables.iter().enumerate() {
        if let Some(n) = t.solvers.iter().find(|n| !solver_ok(n)) {
            return Err(bad_solver(&["tables", &i.to_string(), "solvers"], n));
        }
    }
    // A decision on a grid edge names a parameter some named instance tunes.
    for (i, c) in s.choices.iter().enumerate() {
        for e in &c.edges {
            let path = ["choices", &i.to_string(), "edges"];
            if !solver_ok(&e.solver) {
                return Err(bad_solver(&path, &e.solver));
            }
            let tunes = solvers.iter().any(|sv| {
                sv.answers_to(&e.solver) && sv.tune.iter().any(|t| t.get(&e.param).is_some())
            });
            if !tunes {
                return Err(spec.error_at_key(
                    &path,
                    format!(
                        "choice \"{}\": solver \"{}\" tunes no parameter \"{}\" in this spec",
                        c.topic, e.solver, e.param
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_parse_with_binary_units_and_refuse_nonsense() {
        assert_eq!(parse_bytes("100000"), Some(100_000));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("64G"), Some(64 << 30));
        assert_eq!(parse_bytes("64GiB"), Some(64 << 30));
        assert_eq!(parse_bytes("1.5g"), Some(3 << 29));
        assert_eq!(parse_bytes("2T"), Some(2 << 40));
        for bad in ["", "G", "64Q", "-1G", "0", "nanG", "1e30T"] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn grid_points_are_the_cartesian_product() {
        let g: toml::Table = toml::from_str("a = [1, 2]\nb = [\"x\", \"y\", \"z\"]").unwrap();
        let pts = grid_points(&g);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[0]["a"].as_integer(), Some(1));
        assert_eq!(pts[5]["b"].as_str(), Some("z"));
        assert_eq!(grid_points(&toml::Table::new()).len(), 1);
    }

    #[test]
    fn costs_read_in_human_units() {
        assert_eq!(cost(10_000_000_000_000), "116 days");
        assert_eq!(cost(7_200_000_000), "2.0 hours");
        assert_eq!(cost(5_000_000), "5 s");
    }
}
