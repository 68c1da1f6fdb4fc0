//! Cells computed elsewhere: a **manifest** of the missing cells of a reproduction, one
//! process per cell (`dyad cell <manifest> <index>`), a Slurm job array that runs them over
//! the shared cache, and the status of a manifest's cells.
//!
//! The manifest names the workspace (absolute paths of the specs, results and data), the
//! profile and, per cell, its spec and content key. A task plans its spec again and computes
//! exactly that cell through the same path as a local run ([`crate::engine::run::execute_only`]):
//! the cell is claimed in the cache (so concurrent tasks, local runs or a resubmission never
//! compute it twice), stored atomically, released. A task whose cell fails leaves
//! `failed/<index>.txt` beside the manifest (removed when a later attempt succeeds); one
//! killed mid-way leaves a claim that goes stale ([`crate::engine::cache::STALE_AFTER`]) and is taken
//! over by the next attempt. Resubmitting a manifest computes only what is still missing.
//! Cells to compute again (`--recompute stale|all`) are moved aside before the manifest is
//! written ([`crate::engine::run::set_aside`]), so it lists them as missing; the task that computes
//! one compares it with the old cell, as a local recomputation does.
//!
//! What the cache assumes of a shared file system (NFS v3+, Lustre, GPFS): atomic `rename`
//! within a directory, atomic exclusive create (`O_CREAT | O_EXCL`), modification times that
//! advance, and clocks of the nodes within [`crate::engine::cache::STALE_AFTER`] of each other.

use crate::Workspace;
use crate::engine::cache::Cache;
use crate::engine::plan::Plan;
use crate::engine::run::{RunOptions, RunSummary};
use crate::spec::profile::Profile;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Version of the manifest format.
pub const MANIFEST_FORMAT: u32 = 1;

/// The missing cells of a reproduction, for tasks that may run anywhere the paths resolve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// Seconds since the Unix epoch.
    pub created: u64,
    pub profile: String,
    pub experiments: PathBuf,
    pub results: PathBuf,
    pub data_dir: PathBuf,
    /// The targets the reproduction was asked for (the report job plans them again).
    pub targets: Vec<String>,
    pub cells: Vec<ManifestCell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestCell {
    /// Spec id (`oasis/fig5`).
    pub spec: String,
    pub key: String,
    /// `spec data-set solver r<repeat> [key]`.
    pub what: String,
}

/// Where a manifest's cell stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellStatus {
    Done,
    /// A live run holds its claim (`host:pid`).
    Running(String),
    /// The last attempt failed (its message).
    Failed(String),
    /// Waiting in Slurm's queue (its state and reason: `PENDING (JobArrayTaskLimit)`).
    Queued(String),
    /// Not computed and not queued: a resubmission computes it.
    Missing,
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Manifest {
    /// The missing cells of `plans` (distinct keys, first occurrence, plan order).
    pub fn missing(ws: &Workspace, targets: &[String], profile: Profile, plans: &[Plan]) -> Self {
        let cache = ws.cache();
        let mut seen = BTreeSet::new();
        let mut cells = Vec::new();
        for p in plans {
            for (ci, c) in p.cells.iter().enumerate() {
                if seen.insert(c.key.clone()) && !cache.contains(&c.key) {
                    cells.push(ManifestCell {
                        spec: p.spec.id.clone(),
                        key: c.key.clone(),
                        what: crate::engine::run::describe(p, ci),
                    });
                }
            }
        }
        Manifest {
            format: MANIFEST_FORMAT,
            created: now(),
            profile: profile.as_str().to_string(),
            experiments: absolute(&ws.experiments),
            results: absolute(&ws.results),
            data_dir: absolute(&ws.data_dir),
            targets: targets.to_vec(),
            cells,
        }
    }

    pub fn write(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        crate::engine::cache::write_atomic(path, text.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a dyad manifest: {e}", path.display()))?;
        if m.format != MANIFEST_FORMAT {
            return Err(format!(
                "{}: manifest format {} (this dyad reads {MANIFEST_FORMAT})",
                path.display(),
                m.format
            ));
        }
        Ok(m)
    }

    pub fn workspace(&self) -> Workspace {
        Workspace {
            experiments: self.experiments.clone(),
            results: self.results.clone(),
            data_dir: self.data_dir.clone(),
        }
    }

    pub fn profile(&self) -> Result<Profile, String> {
        self.profile
            .parse()
            .map_err(|_| format!("manifest profile `{}`", self.profile))
    }
}

/// The failure marker of cell `index` beside the manifest.
pub fn failure_path(manifest: &Path, index: usize) -> PathBuf {
    manifest
        .parent()
        .unwrap_or(Path::new("."))
        .join("failed")
        .join(format!("{index}.txt"))
}

/// Compute cell `index` of the manifest at `path` (one cluster task). `Ok` when the cell is
/// cached afterwards (computed here, or already by another run).
pub fn run_cell(path: &Path, index: usize, threads: Option<usize>) -> Result<RunSummary, String> {
    let m = Manifest::read(path)?;
    let cell = m.cells.get(index).ok_or_else(|| {
        format!(
            "{}: no cell {index} (the manifest has {})",
            path.display(),
            m.cells.len()
        )
    })?;
    let ws = m.workspace();
    let profile = m.profile()?;
    let marker = failure_path(path, index);
    let outcome = (|| {
        let ctx = ws.data_context();
        let specs = ws
            .select_specs(std::slice::from_ref(&cell.spec))
            .map_err(|e| e.to_string())?;
        let plans = ws.plan(&specs, profile, &ctx).map_err(|e| e.to_string())?;
        if !plans
            .iter()
            .any(|p| p.cells.iter().any(|c| c.key == cell.key))
        {
            return Err(format!(
                "cell {index} ({}) is no longer in the plan of `{}`: the spec or the code \
                 changed since the manifest was written; write a new one",
                cell.what, cell.spec
            ));
        }
        let opts = RunOptions {
            results: ws.results.clone(),
            keep_going: false,
            threads,
            progress: crate::engine::run::Progress::Plain,
            recompute: Default::default(),
        };
        let keys = BTreeSet::from([cell.key.clone()]);
        let summary = crate::engine::run::execute_only(&plans, &opts, &keys);
        match summary.failed.first() {
            Some(f) => Err(f.error.clone()),
            None if ws.cache().contains(&cell.key) => Ok(summary),
            None => Err(format!("cell {index} ({}) was not stored", cell.what)),
        }
    })();
    match &outcome {
        Ok(_) => {
            let _ = std::fs::remove_file(&marker);
        }
        Err(e) => {
            let _ = crate::engine::cache::write_atomic(
                &marker,
                format!("{}\n{e}\n", cell.what).as_bytes(),
            );
        }
    }
    outcome
}

/// Compute every cell of a manifest here (the local executor on a manifest), in parallel
/// through the same claims as cluster tasks.
pub fn run_all(path: &Path, threads: Option<usize>) -> Result<RunSummary, String> {
    let m = Manifest::read(path)?;
    let ws = m.workspace();
    let profile = m.profile()?;
    let ctx = ws.data_context();
    let specs: Vec<String> = m
        .cells
        .iter()
        .map(|c| c.spec.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let plans = ws
        .plan(
            &ws.select_specs(&specs).map_err(|e| e.to_string())?,
            profile,
            &ctx,
        )
        .map_err(|e| e.to_string())?;
    let keys: BTreeSet<String> = m.cells.iter().map(|c| c.key.clone()).collect();
    let opts = RunOptions {
        results: ws.results.clone(),
        keep_going: true,
        threads,
        progress: crate::engine::run::Progress::Auto,
        recompute: Default::default(),
    };
    let summary = crate::engine::run::execute_only(&plans, &opts, &keys);
    let cache = ws.cache();
    for (i, c) in m.cells.iter().enumerate() {
        let marker = failure_path(path, i);
        if cache.contains(&c.key) {
            let _ = std::fs::remove_file(&marker);
        } else if let Some(f) = summary.failed.iter().find(|f| f.cell == c.what) {
            let _ = crate::engine::cache::write_atomic(
                &marker,
                format!("{}\n{}\n", c.what, f.error).as_bytes(),
            );
        }
    }
    Ok(summary)
}

/// The status of every cell of a manifest, from the shared cache (done), the claims
/// (running), the failure markers (failed) and, when given, what Slurm says of the array's
/// tasks (`queue`: a cell still waiting in the queue is [`CellStatus::Queued`]).
pub fn status(path: &Path, queue: Option<&Queue>) -> Result<(Manifest, Vec<CellStatus>), String> {
    let m = Manifest::read(path)?;
    let cache = Cache::new(&m.results);
    let st = m
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let task = queue.and_then(|q| q.tasks.get(&i)).map(String::as_str);
            if cache.contains(&c.key) {
                CellStatus::Done
            } else if let Some(h) = cache.holder(&c.key) {
                CellStatus::Running(format!("{}:{}", h.host, h.pid))
            } else if let Ok(t) = std::fs::read_to_string(failure_path(path, i)) {
                CellStatus::Failed(t.lines().skip(1).collect::<Vec<_>>().join(" "))
            } else if let Some(state) = task {
                CellStatus::Queued(state.to_string())
            } else {
                CellStatus::Missing
            }
        })
        .collect();
    Ok((m, st))
}

/// What Slurm's queue says of one submission: the state of each array task still queued
/// (by manifest index) and of the submission's other jobs (the report job). Jobs that have
/// ended are absent (`squeue` forgets them; no accounting database is assumed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Queue {
    pub tasks: BTreeMap<usize, String>,
    /// Job id -> `STATE (reason)`.
    pub jobs: BTreeMap<String, String>,
}

impl Queue {
    /// Parse `squeue -h -r -o "%i %T %r"` for the array job `array` (one line per task,
    /// `<array>_<index> <STATE> <reason>`; other jobs `<id> <STATE> <reason>`).
    pub fn parse(array: &str, text: &str) -> Self {
        let mut q = Queue::default();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(id), Some(state)) = (it.next(), it.next()) else {
                continue;
            };
            let reason = it.next().filter(|r| *r != "None");
            let state = match reason {
                Some(r) => format!("{state} ({r})"),
                None => state.to_string(),
            };
            match id.split_once('_') {
                Some((job, index)) if job == array => {
                    if let Ok(i) = index.parse() {
                        q.tasks.insert(i, state);
                    }
                }
                _ => {
                    q.jobs.insert(id.to_string(), state);
                }
            }
        }
        q
    }

    /// Ask `squeue` about the jobs of a submission (`jobs`: the array job first), `Err`
    /// when Slurm cannot be asked.
    pub fn ask(jobs: &[String]) -> Result<Self, String> {
        let array = jobs.first().ok_or("no jobs")?;
        let out = std::process::Command::new("squeue")
            .args(["-h", "-r", "-o", "%i %T %r", "-j", &jobs.join(",")])
            .output()
            .map_err(|e| format!("squeue: {e}"))?;
        // squeue exits non-zero for job ids it has forgotten: they have ended.
        if !out.status.success() && !out.stderr.is_empty() {
            let err = String::from_utf8_lossy(&out.stderr);
            if !err.contains("Invalid job id") {
                return Err(format!("squeue: {}", err.trim()));
            }
        }
        Ok(Self::parse(array, &String::from_utf8_lossy(&out.stdout)))
    }
}

/// The job ids of the submission of `manifest` (the `jobs` file beside it: array, report).
pub fn submission_jobs(manifest: &Path) -> Vec<String> {
    std::fs::read_to_string(manifest.with_file_name("jobs"))
        .map(|t| t.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// An estimate of a plan's missing work from the cached timings of similar cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    pub missing: usize,
    /// Wall seconds of the missing cells that have a similar cached cell.
    pub seconds: f64,
    /// Missing cells with no similar cached cell.
    pub unknown: usize,
}

/// For each missing cell of `plans`, the mean wall time of the cached cells of `learn` (the
/// same plans, or the complete ones when `plans` were narrowed to some cells) of the same
/// experiment, data set and solver (other repeats); else of the same cell cached with another
/// tuning grid (e.g. before the grid was extended) or by another version of its task, solver
/// or data (before a bump), its model-selection time scaled by the ratio of the grids' sizes
/// ([`regridded`]); else of the same solver and data set in any experiment of the profile.
pub fn estimate(ws: &Workspace, learn: &[Plan], plans: &[Plan]) -> Vec<(String, Estimate)> {
    let cache = ws.cache();
    // (spec, data set, solver label) -> wall seconds; (data set name, solver name) -> same.
    let mut near: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    let mut far: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for p in learn {
        for c in &p.cells {
            if let Some(r) = cache.get(&c.key) {
                let (d, s) = (&p.datasets[c.dataset], &p.solvers[c.solver]);
                near.entry((p.spec.id.clone(), d.id.clone(), s.label.clone()))
                    .or_default()
                    .push(r.wall_seconds);
                far.entry((d.resolved.name.to_string(), s.name.to_string()))
                    .or_default()
                    .push(r.wall_seconds);
            }
        }
    }
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    // Read only when some missing cell has no cell of its own to go by.
    let mut other_grids: Option<BTreeMap<String, Vec<Regridded>>> = None;
    let mut seen = BTreeSet::new();
    plans
        .iter()
        .map(|p| {
            let mut e = Estimate::default();
            for c in &p.cells {
                if !seen.insert(c.key.clone()) || cache.contains(&c.key) {
                    continue;
                }
                e.missing += 1;
                let (d, s) = (&p.datasets[c.dataset], &p.solvers[c.solver]);
                if let Some(v) = near.get(&(p.spec.id.clone(), d.id.clone(), s.label.clone())) {
                    e.seconds += mean(v);
                    continue;
                }
                if let Some((shape, grid)) = untuned_shape(&c.canonical) {
                    let index = other_grids.get_or_insert_with(|| regridded(&cache));
                    if let Some(v) = index.get(&shape) {
                        let scaled: Vec<f64> = v.iter().map(|r| r.seconds_at(grid)).collect();
                        e.seconds += mean(&scaled);
                        continue;
                    }
                }
                match far.get(&(d.resolved.name.to_string(), s.name.to_string())) {
                    Some(v) => e.seconds += mean(v),
                    None => e.unknown += 1,
                }
            }
            (p.spec.id.clone(), e)
        })
        .collect()
}

/// A cached cell's time split into what a tuning grid's size scales (model selection: one
/// run per candidate) and the rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Regridded {
    pub wall: f64,
    pub selection: f64,
    /// The candidates of its grid.
    pub candidates: usize,
}

impl Regridded {
    /// The cell's time with `candidates` candidates instead of its own.
    pub fn seconds_at(&self, candidates: usize) -> f64 {
        let rest = (self.wall - self.selection).max(0.0);
        rest + self.selection * candidates as f64 / self.candidates.max(1) as f64
    }
}

/// A cell's identity without its tuning grid, its repeat and the versions of its task, solver
/// and data (cells equal in it differ only in the candidates tried, the split, or a version
/// bump that changed their records), and its grid's size (1 when untuned). None when the
/// canonical form is not a cell's.
pub fn untuned_shape(canonical: &serde_json::Value) -> Option<(String, usize)> {
    let mut shape = canonical.clone();
    let params = shape.pointer_mut("/solver/params")?.as_object_mut()?;
    let candidates = match params.remove("tune") {
        Some(t) => t.as_array()?.len(),
        None => 1,
    };
    let top = shape.as_object_mut()?;
    top.remove("repeat");
    for part in ["task", "solver", "data"] {
        if let Some(p) = top.get_mut(part).and_then(|v| v.as_object_mut()) {
            p.remove("version");
        }
    }
    Some((shape.to_string(), candidates))
}

/// Every cell of `cache` by [`untuned_shape`], with its timing.
fn regridded(cache: &Cache) -> BTreeMap<String, Vec<Regridded>> {
    let mut index: BTreeMap<String, Vec<Regridded>> = BTreeMap::new();
    for key in cache.keys() {
        let Some(r) = cache.get(&key) else { continue };
        if let Some((shape, candidates)) = untuned_shape(&r.canonical) {
            index.entry(shape).or_default().push(Regridded {
                wall: r.wall_seconds,
                selection: r.selection_seconds,
                candidates,
            });
        }
    }
    index
}

/// The batch scripts of a Slurm submission: the array (one task per manifest cell) and the
/// report job.
pub fn slurm_scripts(dyad: &Path, manifest: &Path, m: &Manifest) -> (String, String) {
    let q = |p: &Path| shell_quote(&p.display().to_string());
    let dir = manifest.parent().unwrap_or(Path::new("."));
    let common = format!(
        "cd {}\nexport DYAD_DATA_DIR={}\n",
        q(&std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))),
        q(&m.data_dir)
    );
    let array = format!(
        "#!/bin/bash\n# One dyad cell per array task (written by `dyad reproduce --executor slurm`).\n\
         #SBATCH --job-name=dyad-cells\n#SBATCH --output={}/logs/cell-%a.out\n{common}\
         exec {} cell {} \"$SLURM_ARRAY_TASK_ID\" --threads \"${{SLURM_CPUS_PER_TASK:-1}}\"\n",
        dir.display(),
        q(dyad),
        q(manifest)
    );
    let report = format!(
        "#!/bin/bash\n# Tables, figures and the report once the array has ended (afterany).\n\
         #SBATCH --job-name=dyad-report\n#SBATCH --output={}/logs/report.out\n{common}\
         {} status {} || true\nexec {} --experiments {} --results {} report --profile {}\n",
        dir.display(),
        q(dyad),
        q(manifest),
        q(dyad),
        q(&m.experiments),
        q(&m.results),
        m.profile,
    );
    (array, report)
}

/// `s` quoted for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reads_markers_and_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let cell = |k: &str| ManifestCell {
            spec: "oasis/fig5".into(),
            key: k.into(),
            what: format!("cell {k}"),
        };
        let m = Manifest {
            format: MANIFEST_FORMAT,
            created: 0,
            profile: "quick".into(),
            experiments: dir.path().join("experiments"),
            results: dir.path().join("results"),
            data_dir: dir.path().join("data"),
            targets: vec![],
            cells: vec![cell("a0"), cell("b1"), cell("c2")],
        };
        let path = dir.path().join("sub/manifest.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        m.write(&path).unwrap();
        crate::engine::cache::write_atomic(&failure_path(&path, 0), b"cell a0\nout of memory\n")
            .unwrap();
        let q = Queue::parse("7", "7_1 PENDING JobArrayTaskLimit\n7_0 PENDING None\n");
        let (_, st) = status(&path, Some(&q)).unwrap();
        assert_eq!(
            st,
            [
                CellStatus::Failed("out of memory".into()),
                CellStatus::Queued("PENDING (JobArrayTaskLimit)".into()),
                CellStatus::Missing,
            ]
        );
        let (_, st) = status(&path, None).unwrap();
        assert_eq!(st[1], CellStatus::Missing);
        assert_eq!(Manifest::read(&path).unwrap(), m);
    }

    #[test]
    fn squeue_lines_become_task_and_job_states() {
        // As squeue 22.05 prints `-h -r -o "%i %T %r"` for array 259 and its report job.
        let text = "259_55 PENDING JobArrayTaskLimit\n259_7 RUNNING None\n\
                    260 PENDING Dependency\n2590_1 RUNNING None\nbad\n";
        let q = Queue::parse("259", text);
        assert_eq!(
            q.tasks,
            BTreeMap::from([
                (7, "RUNNING".to_string()),
                (55, "PENDING (JobArrayTaskLimit)".to_string())
            ])
        );
        assert_eq!(
            q.jobs,
            BTreeMap::from([
                ("260".to_string(), "PENDING (Dependency)".to_string()),
                ("2590_1".to_string(), "RUNNING".to_string())
            ])
        );
    }

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(shell_quote("/a/b-c_d.json"), "/a/b-c_d.json");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote("x 'y' $z")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "x 'y' $z");
    }
}
