//! Running cells: in parallel (plain threads taking cells in order — longest first where
//! cached timings tell — each cell in a rayon pool of its own), each stored atomically as soon
//! as it finishes, failures reported and never cached, fail-fast or `--keep-going`. Rerunning resumes: cached cells are skipped, and a data
//! set is loaded only if one of its cells must run. `--recompute stale|all` moves each cached
//! cell aside (`cache/superseded/`) as a worker takes it up and computes it again, then says
//! whether each came out identical (timings aside) or how it differs; an old cell the new one
//! fully reproduces is then deleted. A recomputation stopped early leaves the cells it had not
//! reached in the cache as they were (and the few in progress aside, for the next run).

use crate::data::Data;
use crate::engine::cache::{
    Cache, CellResult, Claim, Claims, Comparison, RESULT_FORMAT_VERSION, changed_parts,
};
use crate::engine::plan::Plan;
use crate::engine::provenance::{DYAD_VERSION, git_commit};
use crate::tasks::CellRun;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A bar on a terminal, plain lines otherwise (and whenever `CI` is set).
    Auto,
    Plain,
    Quiet,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub results: PathBuf,
    pub keep_going: bool,
    /// Cells computed at once (default: the global rayon pool's size, one per core). Each cell's
    /// parallel sections run on a pool of its own with its share of the global pool's threads.
    pub threads: Option<usize>,
    pub progress: Progress,
    /// Which cached cells are computed again.
    pub recompute: Recompute,
}

/// Which cached cells a run computes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Recompute {
    /// None: a run resumes, computing only the missing cells.
    #[default]
    Missing,
    /// The cells whose task, solver or data-provider code changed since they ran (the report's
    /// "computed by code that has changed since").
    Stale,
    /// Every selected cell (e.g. for timings taken on a quiet machine).
    All,
}

impl std::str::FromStr for Recompute {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "missing" => Ok(Recompute::Missing),
            "stale" => Ok(Recompute::Stale),
            "all" => Ok(Recompute::All),
            _ => Err(format!(
                "unknown `{s}` (expected `missing`, `stale` or `all`)"
            )),
        }
    }
}

/// A cell computed again, and how it compares with the cell it replaced.
#[derive(Debug, Clone)]
pub struct Recomputed {
    pub cell: String,
    /// `None` when the new cell was not computed (failed or not started) or the old file is
    /// unreadable: the old one stays in `superseded`.
    pub comparison: Option<Comparison>,
    /// Where the old cell is kept (`None` once a replacement reproducing it deleted it).
    pub kept: Option<PathBuf>,
    /// Another run computed the new cell and compared it: the old file is gone, which that
    /// run does only when the new cell reproduces it (a run meeting a moved-aside cell
    /// computes it and compares).
    pub compared_elsewhere: bool,
}

/// A cell that failed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub experiment: String,
    pub cell: String,
    pub error: String,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Distinct cells over all plans.
    pub total: usize,
    pub cached: usize,
    pub computed: usize,
    /// Cells another run computed while this one waited for them.
    pub by_others: usize,
    pub failed: Vec<Failure>,
    /// Cells not started because an earlier failure stopped the run.
    pub skipped: usize,
    /// Data sets loaded (0 when everything was cached).
    pub datasets_loaded: usize,
    /// Cells computed again (see [`Recompute`]) or computed where a superseded version waited.
    pub recomputed: Vec<Recomputed>,
    /// Cached cells of an earlier task version carried to the current key (counted in
    /// `cached`; see [`crate::tasks::Carry`]).
    pub carried: usize,
}

impl RunSummary {
    pub fn ok(&self) -> bool {
        self.failed.is_empty() && self.skipped == 0
    }
}

type Loaded = OnceLock<Result<Arc<Data>, String>>;

/// The cell an earlier version of the plan's task computed, when the task proves that the
/// current version would record the same ([`crate::tasks::Carry`]): stored under the current
/// key, with the current code fingerprints (the proof covers the change) and the key it came
/// from. `None` when there is no such cell, the proof fails, or it cannot be stored.
pub fn carry(cache: &Cache, plan: &Plan, ci: usize) -> Option<CellResult> {
    let cell = &plan.cells[ci];
    for c in plan.task.carries() {
        let mut canonical = cell.canonical.clone();
        canonical["task"]["version"] = serde_json::json!(c.from_version);
        let old_key = crate::engine::plan::cell_key(&canonical);
        let Some(old) = cache.get(&old_key) else {
            continue;
        };
        if !(c.unchanged)(&old.records) {
            continue;
        }
        let mut new = old;
        new.key = cell.key.clone();
        new.canonical = cell.canonical.clone();
        new.code = cell.code.clone();
        new.carried_from = Some(format!(
            "{old_key} (task {} version {}: {})",
            plan.task.name(),
            c.from_version,
            c.why
        ));
        if cache.put(&new).is_ok() {
            return Some(new);
        }
    }
    None
}

/// `spec data-set solver r<repeat> [key]`, as progress lines name a cell.
pub fn describe(plan: &Plan, ci: usize) -> String {
    let c = &plan.cells[ci];
    format!(
        "{} {} {} r{} [{}]",
        plan.spec.id,
        plan.datasets[c.dataset].id,
        plan.solvers[c.solver].label,
        c.repeat,
        &c.key[..10]
    )
}

/// Run every missing cell of `plans`.
pub fn execute(plans: &[Plan], opts: &RunOptions) -> RunSummary {
    execute_filtered(plans, opts, None)
}

/// Run the missing cells of `plans` whose keys are in `keys` (a cluster task's cell).
pub fn execute_only(
    plans: &[Plan],
    opts: &RunOptions,
    keys: &std::collections::BTreeSet<String>,
) -> RunSummary {
    execute_filtered(plans, opts, Some(keys))
}

fn execute_filtered(
    plans: &[Plan],
    opts: &RunOptions,
    keys: Option<&std::collections::BTreeSet<String>>,
) -> RunSummary {
    let cache = Cache::new(&opts.results);
    // Distinct cells (specs may share cells), first occurrence wins.
    let mut seen = BTreeMap::new();
    for (pi, p) in plans.iter().enumerate() {
        for (ci, c) in p.cells.iter().enumerate() {
            if keys.is_none_or(|k| k.contains(&c.key)) {
                seen.entry(c.key.clone()).or_insert((pi, ci));
            }
        }
    }
    let mut summary = RunSummary {
        total: seen.len(),
        ..Default::default()
    };
    let mut pending: Vec<(usize, usize)> = Vec::new();
    // Cells moved aside to be computed again by an earlier run (this run's own are added as
    // it moves them).
    let mut again: Vec<(usize, usize)> = Vec::new();
    // Cells to compute again: moved aside only once their data has loaded.
    let mut wanted: Vec<((usize, usize), f64)> = Vec::new();
    let mut timings = Timings::default();
    for &(pi, ci) in seen.values() {
        let cell = &plans[pi].cells[ci];
        // A damaged cell file (truncated, edited, of another key) is computed again, and
        // said so: a user who finds a cell recomputing learns which file and why.
        let old = match cache.check(&cell.key) {
            Ok(old) => old,
            Err(why) => {
                if opts.progress != Progress::Quiet {
                    eprintln!(
                        "warning: cell {} [{}]: {} is not a valid cell ({why}); computing it again",
                        describe(&plans[pi], ci),
                        &cell.key[..10],
                        cache.path(&cell.key).display()
                    );
                }
                None
            }
        };
        if let Some(old) = &old {
            timings.add(group(plans, (pi, ci)), old.wall_seconds);
        }
        match old {
            Some(old) if again_wanted(opts.recompute, &cell.code, &old.code) => {
                wanted.push(((pi, ci), old.wall_seconds));
            }
            Some(_) => {
                summary.cached += 1;
                // Computed by an interrupted recomputation, not yet compared.
                if cache.superseded_path(&cell.key).exists() {
                    again.push((pi, ci));
                }
            }
            None => {
                // A version moved aside by an earlier, interrupted recomputation.
                if cache.superseded_path(&cell.key).exists() {
                    again.push((pi, ci));
                } else if let Some(old) = carry(&cache, &plans[pi], ci) {
                    timings.add(group(plans, (pi, ci)), old.wall_seconds);
                    summary.cached += 1;
                    summary.carried += 1;
                    continue;
                }
                pending.push((pi, ci));
            }
        }
    }
    let data: HashMap<String, Loaded> = pending
        .iter()
        .chain(wanted.iter().map(|(c, _)| c))
        .map(|&(pi, ci)| (data_key(&plans[pi], ci), OnceLock::new()))
        .collect();
    let loaded = AtomicUsize::new(0);
    let load = |pi: usize, ci: usize| -> Result<Arc<Data>, String> {
        let plan = &plans[pi];
        data[&data_key(plan, ci)]
            .get_or_init(|| {
                loaded.fetch_add(1, Ordering::SeqCst);
                let d = &plan.datasets[plan.cells[ci].dataset];
                // Off the clock, with every thread: the cells that need it wait for it.
                let data = dyad_datasets::provider::outside_pools(|| (d.resolved.loader)())
                    .map_err(|e| format!("loading `{}`: {e}", d.id))?;
                // What tasks derive from it (FuncISH's features) is kept beside the cells.
                data.keep_derived_in(dyad_datasets::provider::DerivedStore {
                    dir: cache.derived_dir(),
                    data: format!("{}|{}", data_key(plan, ci), d.code),
                });
                Ok(data)
            })
            .clone()
    };
    // A cell to compute again is moved aside only when a worker takes it up (`aside`), once the
    // data it needs has loaded: data that fails (changed in place, moved, damaged) leaves the
    // cached cell where it was, and a run stopped early leaves the cells it had not reached in
    // the cache as they were.
    let mut aside = HashSet::new();
    for ((pi, ci), wall) in wanted {
        match load(pi, ci).map_err(|e| format!("{e}; the cached cell is kept")) {
            Ok(_) => {
                timings.own.insert((pi, ci), wall);
                aside.insert((pi, ci));
                pending.push((pi, ci));
            }
            Err(error) => {
                summary.cached += 1;
                summary.failed.push(Failure {
                    experiment: plans[pi].spec.id.clone(),
                    cell: describe(&plans[pi], ci),
                    error,
                });
            }
        }
    }
    let compare = |again: Vec<(usize, usize)>| -> Vec<Recomputed> {
        again
            .into_iter()
            .map(|(pi, ci)| compare_again(&cache, &plans[pi], ci))
            .collect()
    };
    if pending.is_empty() {
        summary.recomputed = compare(again);
        summary.datasets_loaded = loaded.into_inner();
        return summary;
    }
    timings.longest_first(&mut pending, |c| group(plans, c));

    let threads = opts
        .threads
        .unwrap_or_else(rayon::current_num_threads)
        .max(1);
    let estimates: HashMap<(usize, usize), (Group, Option<f64>)> = pending
        .iter()
        .map(|&c| {
            let g = group(plans, c);
            (c, (g, timings.estimate(c, g)))
        })
        .collect();
    let reporter = Reporter::new(
        opts.progress,
        summary.cached,
        estimates.values().copied(),
        threads,
    );
    let abort = AtomicBool::new(false);
    let computed = Arc::new(AtomicUsize::new(0));
    let by_others = AtomicUsize::new(0);
    let skipped = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let claims = Claims::default();
    let stop = Arc::new(AtomicBool::new(false));
    let heartbeat = claims.heartbeat(stop.clone());
    // SIGINT/SIGTERM: release the claims of the cells in progress, say what finished.
    let _watch = match super::interrupt::watch(&claims, computed.clone(), pending.len()) {
        Ok(w) => Some(w),
        Err(e) => {
            reporter.note(&format!(
                "{e}: an interrupted run leaves its claims to go stale"
            ));
            None
        }
    };
    cache.clean();
    let aside = Mutex::new(aside);
    // Cells this run moved aside, to compare with what replaces them.
    let moved = Mutex::new(Vec::new());

    // One cell: claim it, compute and store it, release the claim. `false` when another run
    // holds it (it is retried later).
    let attempt = |pi: usize, ci: usize| -> bool {
        if abort.load(Ordering::SeqCst) {
            skipped.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        let plan = &plans[pi];
        let what = describe(plan, ci);
        if aside.lock().unwrap().remove(&(pi, ci)) {
            if let Err(e) = cache.supersede(&plan.cells[ci].key) {
                let error = format!("moving the cached cell aside to recompute it: {e}");
                reporter.failed(&what, &error, estimates[&(pi, ci)]);
                failures.lock().unwrap().push(Failure {
                    experiment: plan.spec.id.clone(),
                    cell: what,
                    error,
                });
                abort.store(!opts.keep_going, Ordering::SeqCst);
                return true;
            }
            moved.lock().unwrap().push((pi, ci));
        }
        let _guard = match cache.claim(&plan.cells[ci].key, &claims) {
            Ok(Claim::Mine(g)) => g,
            Ok(Claim::Cached) => {
                by_others.fetch_add(1, Ordering::SeqCst);
                reporter.done(
                    &format!("{what} (computed by another run)"),
                    0.0,
                    estimates[&(pi, ci)],
                    false,
                );
                return true;
            }
            Ok(Claim::Busy(_)) => return false,
            Err(e) => {
                reporter.failed(&what, &e.to_string(), estimates[&(pi, ci)]);
                failures.lock().unwrap().push(Failure {
                    experiment: plan.spec.id.clone(),
                    cell: what,
                    error: format!("claiming the cell in {}: {e}", cache.root().display()),
                });
                abort.store(!opts.keep_going, Ordering::SeqCst);
                return true;
            }
        };
        let start = Instant::now();
        let result = load(pi, ci)
            .and_then(|set| run_cell(plan, ci, &set, start))
            .and_then(|r| {
                cache
                    .put(&r)
                    .map_err(|e| format!("storing in {}: {e}", cache.root().display()))
            });
        match result {
            Ok(()) => {
                computed.fetch_add(1, Ordering::SeqCst);
                reporter.done(
                    &what,
                    start.elapsed().as_secs_f64(),
                    estimates[&(pi, ci)],
                    true,
                );
            }
            Err(e) => {
                reporter.failed(&what, &e, estimates[&(pi, ci)]);
                failures.lock().unwrap().push(Failure {
                    experiment: plan.spec.id.clone(),
                    cell: what,
                    error: e,
                });
                if !opts.keep_going {
                    abort.store(true, Ordering::SeqCst);
                }
            }
        }
        true
    };
    // Cells run on plain threads, each entering a rayon pool of its own for the cell's parallel
    // sections (FuncISH's per-category fits, label ranking's evaluation). On a shared pool, a
    // worker that waits inside one cell's parallel section steals queued work, and when that
    // work was another whole cell its time landed on the waiting cell's solver clock; and cells
    // sharing one pool slow each other's clocks. Each cell's pool has its share of the global
    // pool's threads (`RAYON_NUM_THREADS`, else one per core): one thread when there is a
    // worker per core (the default), all of them with `--threads 1`.
    let per_cell = (rayon::current_num_threads() / threads).max(1);
    // First pass: every cell no other run holds; then wait for (or take over) the rest.
    let mut waiting = on_threads(&pending, threads, per_cell, &attempt);
    if !waiting.is_empty() {
        reporter.note(&format!(
            "{} cells are being computed by another run: waiting for them",
            waiting.len()
        ));
    }
    while !waiting.is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(500));
        waiting = on_threads(&waiting, threads, per_cell, &attempt);
    }
    stop.store(true, Ordering::SeqCst);
    let _ = heartbeat.join();
    reporter.finish();
    summary.computed = computed.load(Ordering::SeqCst);
    summary.by_others = by_others.into_inner();
    summary.skipped = skipped.into_inner();
    summary.datasets_loaded = loaded.into_inner();
    summary.failed.extend(failures.into_inner().unwrap());
    again.extend(moved.into_inner().unwrap());
    summary.recomputed = compare(again);
    summary
}

/// Wall times of cached cells, to start the longest cells first. Cells are `(plan, cell)`
/// pairs; a group is `(plan, data set, solver instance)`: the repeats of one cell.
#[derive(Default)]
struct Timings {
    /// A cell's own time when it ran before (a cell computed again).
    own: HashMap<(usize, usize), f64>,
    /// Times of the cached cells of each group.
    group: HashMap<(usize, usize, usize), Vec<f64>>,
}

type Group = (usize, usize, usize);

fn group(plans: &[Plan], (pi, ci): (usize, usize)) -> Group {
    let c = &plans[pi].cells[ci];
    (pi, c.dataset, c.solver)
}

impl Timings {
    fn add(&mut self, group: Group, seconds: f64) {
        self.group.entry(group).or_default().push(seconds);
    }

    /// The cell's last wall time, else the mean of its group's, if any ran.
    fn estimate(&self, cell: (usize, usize), group: Group) -> Option<f64> {
        self.own.get(&cell).copied().or_else(|| {
            let v = self.group.get(&group)?;
            Some(v.iter().sum::<f64>() / v.len() as f64)
        })
    }

    /// Orders the cells to compute: those without an estimate first, in the order of the
    /// specs, then the others longest first (the order of the specs among equals). Workers take
    /// cells in this order, so a run does not end waiting for one long cell started last
    /// (longest-processing-time-first: within 4/3 of the best makespan). Results do not
    /// depend on the order; without cached timings (a first run) it is the order of the specs.
    fn longest_first(
        &self,
        pending: &mut [(usize, usize)],
        group: impl Fn((usize, usize)) -> Group,
    ) {
        // Wall seconds are non-negative, and non-negative floats order as their bits do.
        pending.sort_by_cached_key(|&c| match self.estimate(c, group(c)) {
            None => (false, 0, c),
            Some(s) => (true, u64::MAX - s.max(0.0).to_bits(), c),
        });
    }
}

/// Moves aside (to `cache/superseded/`) the cached cells of `plans` that `recompute` asks for,
/// so that they are missing: what a cluster manifest is written from (`dyad plan --manifest
/// --recompute`, `dyad reproduce --executor slurm --recompute`). The run that computes a cell
/// again (`dyad cell`, or any later run) compares it with the old one, as a local
/// `--recompute` does. Returns the number moved and, per cell that could not be moved, why.
pub fn set_aside(plans: &[Plan], cache: &Cache, recompute: Recompute) -> (usize, Vec<Failure>) {
    let mut seen = std::collections::BTreeSet::new();
    let (mut moved, mut failed) = (0, Vec::new());
    for p in plans {
        for (ci, c) in p.cells.iter().enumerate() {
            if !seen.insert(&c.key) {
                continue;
            }
            let Some(old) = cache.get(&c.key) else {
                continue;
            };
            if !again_wanted(recompute, &c.code, &old.code) {
                continue;
            }
            match cache.supersede(&c.key) {
                Ok(_) => moved += 1,
                Err(e) => failed.push(Failure {
                    experiment: p.spec.id.clone(),
                    cell: describe(p, ci),
                    error: format!("moving the cached cell aside to recompute it: {e}"),
                }),
            }
        }
    }
    (moved, failed)
}

fn again_wanted(
    recompute: Recompute,
    now: &BTreeMap<String, String>,
    then: &BTreeMap<String, String>,
) -> bool {
    match recompute {
        Recompute::Missing => false,
        Recompute::Stale => changed_parts(now, then).next().is_some(),
        Recompute::All => true,
    }
}

/// How a cell computed again compares with its superseded version; the old file is deleted
/// when the new cell reproduces all of it.
fn compare_again(cache: &Cache, plan: &Plan, ci: usize) -> Recomputed {
    let key = &plan.cells[ci].key;
    let kept = cache.superseded_path(key);
    let comparison = match (cache.get(key), cache.superseded(key)) {
        (Some(new), Some(old)) => {
            let c = new.compare(&old, |m| plan.metric(m).is_timing(m));
            if c.reproduces_old() {
                // Best effort: a witness only saves recomputing elsewhere (`dyad archive
                // restamp`); failing to write one loses nothing.
                let _ = cache.witness_equivalent(&old.code, &new.code);
            }
            Some(c)
        }
        _ => None,
    };
    let compared_elsewhere = comparison.is_none() && !kept.exists() && cache.get(key).is_some();
    let kept = match comparison {
        Some(ref c) if c.reproduces_old() && cache.forget_superseded(key).is_ok() => None,
        _ if !kept.exists() => None,
        _ => Some(kept),
    };
    Recomputed {
        cell: describe(plan, ci),
        comparison,
        kept,
        compared_elsewhere,
    }
}

/// Calls `f` on every item from `threads` plain threads, which take the items in order, each
/// inside a rayon pool of its own with `per_cell` threads; returns the items for which `f`
/// returned `false`, in order.
fn on_threads(
    items: &[(usize, usize)],
    threads: usize,
    per_cell: usize,
    f: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Vec<(usize, usize)> {
    let next = AtomicUsize::new(0);
    let left = Mutex::new(Vec::new());
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(&(pi, ci)) = items.get(i) else { break };
            if !f(pi, ci) {
                left.lock().unwrap().push((i, (pi, ci)));
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 0..threads.min(items.len()) {
            s.spawn(|| {
                match rayon::ThreadPoolBuilder::new()
                    .num_threads(per_cell)
                    .build()
                {
                    Ok(pool) => pool.install(work),
                    Err(_) => work(),
                }
            });
        }
    });
    let mut left = left.into_inner().unwrap();
    left.sort_unstable();
    left.into_iter().map(|(_, item)| item).collect()
}

/// Identifies loaded data across plans: the same resolved data set loads once.
fn data_key(plan: &Plan, ci: usize) -> String {
    let d = &plan.datasets[plan.cells[ci].dataset].resolved;
    format!("{}|{}|{}", d.name, d.params, d.identity)
}

fn run_cell(plan: &Plan, ci: usize, loaded: &Data, start: Instant) -> Result<CellResult, String> {
    let cell = &plan.cells[ci];
    let sv = &plan.solvers[cell.solver];
    let d = &plan.datasets[cell.dataset];
    let out = plan.protocol.run(&CellRun {
        data: loaded,
        dataset: &d.id,
        solver: sv,
        candidates: sv.candidates(),
        seed: plan.seed,
        repeat: cell.repeat,
    })?;
    Ok(CellResult {
        format: RESULT_FORMAT_VERSION,
        key: cell.key.clone(),
        canonical: cell.canonical.clone(),
        dataset: d.resolved.name.to_string(),
        dataset_identity: d.resolved.identity.clone(),
        synthetic: d.resolved.synthetic,
        solver: sv.name.to_string(),
        params: sv.canonical.clone(),
        repeat: cell.repeat,
        seed: plan.seed,
        train_seconds: out.train_seconds,
        selection_seconds: out.selection_seconds,
        eval_seconds: out.eval_seconds,
        wall_seconds: start.elapsed().as_secs_f64(),
        selected_step: out.selected_step,
        tuned: out
            .selected_candidate
            .map(|i| sv.candidates()[i].canonical.clone()),
        git_commit: git_commit().to_string(),
        dyad_version: DYAD_VERSION.to_string(),
        code: cell.code.clone(),
        records: out.records,
        artifacts: out.artifacts,
        carried_from: None,
        machine: Some(crate::engine::cache::machine()),
    })
}

/// Progress output: an indicatif bar on a terminal, one plain line per cell otherwise, with
/// the time left as the cached timings (and this run's) estimate it.
struct Reporter {
    bar: Option<indicatif::ProgressBar>,
    plain: bool,
    total: usize,
    done: AtomicUsize,
    left: Mutex<Remaining>,
    workers: usize,
}

/// Cell time still to go: the cached estimates of the cells not yet done, and for cells
/// without one the mean time this run has measured for their group (the other repeats of the
/// same solver on the same data set), once it has measured one.
#[derive(Debug, Default)]
struct Remaining {
    /// Per group: summed estimates of its cells left, its cells left without an estimate, and
    /// this run's `(seconds, cells)` measured for it.
    groups: HashMap<Group, (f64, usize, (f64, usize))>,
}

impl Remaining {
    fn new(cells: impl IntoIterator<Item = (Group, Option<f64>)>) -> Self {
        let mut groups: HashMap<Group, (f64, usize, (f64, usize))> = HashMap::new();
        for (g, est) in cells {
            let e = groups.entry(g).or_default();
            match est {
                Some(s) => e.0 += s,
                None => e.1 += 1,
            }
        }
        Self { groups }
    }

    /// A cell is done (`measured`: its wall time, when this run computed it).
    fn finish(&mut self, (g, est): (Group, Option<f64>), measured: Option<f64>) {
        let e = self.groups.entry(g).or_default();
        match est {
            Some(s) => e.0 = (e.0 - s).max(0.0),
            None => e.1 = e.1.saturating_sub(1),
        }
        if let Some(m) = measured {
            e.2.0 += m;
            e.2.1 += 1;
        }
    }

    /// `(estimated cell seconds left, cells left with no estimate at all)`.
    fn left(&self) -> (f64, usize) {
        let (mut secs, mut unknown) = (0.0, 0);
        for &(known, n, (sum, runs)) in self.groups.values() {
            secs += known;
            if runs > 0 {
                secs += n as f64 * sum / runs as f64;
            } else {
                unknown += n;
            }
        }
        (secs, unknown)
    }
}

/// Seconds as `40 s`, `14.5 min` or `3.2 h` (at least `1 s`).
pub fn human_seconds(s: f64) -> String {
    if s < 120.0 {
        format!("{:.0} s", s.max(1.0))
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

impl Reporter {
    /// `cells`: the group and cached estimate of each cell to compute; `workers` run them.
    fn new(
        mode: Progress,
        cached: usize,
        cells: impl ExactSizeIterator<Item = (Group, Option<f64>)>,
        workers: usize,
    ) -> Self {
        let total = cells.len();
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
        let tty = std::io::stderr().is_terminal();
        let bar = (mode == Progress::Auto && tty && !ci).then(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} cells (eta {eta}) {msg}",
                )
                .expect("valid template"),
            );
            b
        });
        let plain = mode == Progress::Plain || (mode == Progress::Auto && bar.is_none());
        if plain || bar.is_some() {
            eprintln!("running {total} cells ({cached} cached)");
        }
        Self {
            bar,
            plain,
            total,
            done: AtomicUsize::new(0),
            left: Mutex::new(Remaining::new(cells)),
            workers: workers.max(1),
        }
    }

    /// `; about 1.2 h left on 2 workers, plus 3 cells without a timing`, `; 3 cells left
    /// without a timing`, or nothing when nothing is left.
    fn eta(&self, cell: (Group, Option<f64>), measured: Option<f64>) -> String {
        let mut left = self.left.lock().unwrap();
        left.finish(cell, measured);
        let (secs, unknown) = left.left();
        let cells = |n: usize| {
            if n == 1 {
                "1 cell".to_string()
            } else {
                format!("{n} cells")
            }
        };
        let on = if self.workers > 1 {
            format!(" on {} workers", self.workers)
        } else {
            String::new()
        };
        match (secs > 0.0, unknown) {
            (false, 0) => String::new(),
            (false, n) => format!("; {} left without a timing", cells(n)),
            (true, 0) => format!(
                "; about {} left{on}",
                human_seconds(secs / self.workers as f64)
            ),
            (true, n) => format!(
                "; about {} left{on}, plus {} without a timing",
                human_seconds(secs / self.workers as f64),
                cells(n)
            ),
        }
    }

    fn done(&self, what: &str, secs: f64, cell: (Group, Option<f64>), measured: bool) {
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let eta = self.eta(cell, measured.then_some(secs));
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
            b.inc(1);
        } else if self.plain {
            eprintln!("[{n}/{}] {what} ({secs:.2} s){eta}", self.total);
        }
    }

    /// A line that is not a cell.
    fn note(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.plain => eprintln!("{line}"),
            None => {}
        }
    }

    fn failed(&self, what: &str, error: &str, cell: (Group, Option<f64>)) {
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        self.left.lock().unwrap().finish(cell, None);
        let line = format!("[{n}/{}] FAILED {what}: {error}", self.total);
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.inc(1);
            }
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Remaining, Timings, compare_again, human_seconds, on_threads};
    use rayon::prelude::*;
    use std::cell::Cell;
    use std::sync::Mutex;

    thread_local! {
        /// Cells running on this OS thread right now.
        static CELLS: Cell<usize> = const { Cell::new(0) };
    }

    /// The three ends of a recomputed cell when runs share a cache: compared here (old and
    /// new both present), compared by another run (the old file gone because that run found
    /// the new cell reproduces it), or not computed (the old file stays for inspection).
    #[test]
    fn a_recomputed_cell_is_compared_here_or_elsewhere_or_kept() {
        use crate::engine::cache::{Cache, test_cell};
        let (plan, dir) = crate::analysis::quick_plan("oasis/fig6.toml");
        let cache = Cache::new(dir.path());
        let key = plan.cells[0].key.clone();
        let mut cell = test_cell(&key);
        cell.records = vec![crate::engine::cache::Record {
            set: "test".into(),
            metric: "map".into(),
            step: 0,
            seconds: 0.0,
            k: None,
            coord: None,
            value: 0.5,
        }];
        // Here: the old cell moved aside, the new one computed identical.
        cache.put(&cell).unwrap();
        cache.supersede(&key).unwrap();
        cache.put(&cell).unwrap();
        let r = compare_again(&cache, &plan, 0);
        assert!(r.comparison.as_ref().is_some_and(|c| c.identical()));
        assert!(r.kept.is_none() && !r.compared_elsewhere);
        assert!(
            !cache.superseded_path(&key).exists(),
            "an identical old cell is deleted"
        );
        // Elsewhere: another run computed the cell and deleted the old file; this run finds
        // the new cell and no old one to compare with.
        let r = compare_again(&cache, &plan, 0);
        assert!(r.comparison.is_none() && r.kept.is_none() && r.compared_elsewhere);
        // Not computed (a failure): the old cell stays where it was moved, and is named.
        cache.supersede(&key).unwrap();
        let r = compare_again(&cache, &plan, 0);
        assert!(r.comparison.is_none() && !r.compared_elsewhere);
        assert_eq!(
            r.kept.as_deref(),
            Some(cache.superseded_path(&key).as_path())
        );
    }

    #[test]
    fn the_time_left_counts_cached_estimates_and_this_runs_measurements() {
        let (a, b) = ((0, 0, 0), (0, 0, 1));
        // Group a: two cells estimated at 10 s and 30 s; group b: three cells never timed.
        let mut r = Remaining::new([
            (a, Some(10.0)),
            (a, Some(30.0)),
            (b, None),
            (b, None),
            (b, None),
        ]);
        assert_eq!(r.left(), (40.0, 3));
        // A cell of a done (in 12 s; its own estimate leaves the sum).
        r.finish((a, Some(10.0)), Some(12.0));
        assert_eq!(r.left(), (30.0, 3));
        // A cell of b done in 20 s: b's two others are now estimated at 20 s each.
        r.finish((b, None), Some(20.0));
        assert_eq!(r.left(), (70.0, 0));
        // Computed by another run (no time measured) or failed: only leaves the count.
        r.finish((b, None), None);
        assert_eq!(r.left(), (50.0, 0));
        r.finish((b, None), Some(40.0));
        r.finish((a, Some(30.0)), Some(1.0));
        assert_eq!(r.left(), (0.0, 0));
        assert_eq!(
            (
                human_seconds(0.2),
                human_seconds(40.0),
                human_seconds(600.0),
                human_seconds(9000.0)
            ),
            (
                "1 s".to_string(),
                "40 s".to_string(),
                "10.0 min".to_string(),
                "2.5 h".to_string()
            )
        );
    }

    #[test]
    fn cells_start_unknown_first_then_longest_first_with_spec_order_among_equals() {
        // Cells (0, i) in groups by i / 2 (two repeats each); cell (0, 5) ran before in 9 s.
        let mut t = Timings::default();
        t.add((0, 0, 0), 1.0);
        t.add((0, 0, 0), 3.0); // group 0: mean 2 s
        t.add((0, 1, 0), 5.0); // group 1: 5 s
        t.add((0, 3, 0), 2.0); // group 3: 2 s
        t.own.insert((0, 5), 9.0);
        let mut pending: Vec<(usize, usize)> = (0..8).map(|i| (0, i)).collect();
        t.longest_first(&mut pending, |(p, c)| (p, c / 2, 0));
        let order: Vec<usize> = pending.iter().map(|c| c.1).collect();
        // Unknown (group 2 = cells 4 and 5 without an own time: 4) first; then 5 (9 s), group 1
        // (5 s: 2, 3), and the 2-s cells 0, 1, 6, 7 in spec order.
        assert_eq!(order, [4, 5, 2, 3, 0, 1, 6, 7]);
        // Without timings, the order of the specs.
        let mut pending: Vec<(usize, usize)> = (0..8).rev().map(|i| (0, i)).collect();
        Timings::default().longest_first(&mut pending, |(p, c)| (p, c, 0));
        assert_eq!(pending, (0..8).map(|i| (0, i)).collect::<Vec<_>>());
    }

    #[test]
    fn a_cell_waiting_in_its_parallel_section_never_runs_another_cell() {
        let items: Vec<(usize, usize)> = (0..12).map(|i| (0, i)).collect();
        let pools = Mutex::new(Vec::new());
        let nested = Mutex::new(0usize);
        let left = on_threads(&items, 2, 1, &|_, ci| {
            if CELLS.with(Cell::get) != 0 {
                *nested.lock().unwrap() += 1;
            }
            CELLS.with(|c| c.set(c.get() + 1));
            pools.lock().unwrap().push(rayon::current_num_threads());
            let s: u64 = (0..64u64).into_par_iter().sum();
            assert_eq!(s, 2016);
            // What a worker does while it waits for a piece of its parallel section that
            // another worker holds: run queued work. On a pool shared by the cells that can be
            // a whole other cell, whose time then lands on this cell's solver clock.
            for _ in 0..4 {
                rayon::yield_now();
            }
            CELLS.with(|c| c.set(c.get() - 1));
            ci % 5 != 2
        });
        assert_eq!(*nested.lock().unwrap(), 0, "a cell ran inside another cell");
        assert!(pools.lock().unwrap().iter().all(|&n| n == 1));
        // The refused items come back in order, whichever thread saw them.
        assert_eq!(left, vec![(0, 2), (0, 7)]);
    }
}
