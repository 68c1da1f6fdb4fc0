//! The content-addressed cell cache under `results/cache/`, written atomically: a finished
//! cell is either entirely on disk or not at all, whatever happens to the process. Each cell
//! file carries the SHA-256 of its content: a truncated or altered file is not a cached cell
//! (it is recomputed), whatever its name says.
//!
//! Runs sharing a cache (two processes on one machine, or machines sharing the directory)
//! split the work through **claims**: before computing a cell a run creates
//! `<key>.lock` with `O_CREAT | O_EXCL` (atomic on local file systems and on NFS v3+),
//! holding its host, process id and start time, and touches it every
//! [`HEARTBEAT`] while it computes. Another run finding the claim waits for the cell instead
//! of computing it again. A claim is stale — and taken over — when its process is gone (same
//! host) or its heartbeat is older than [`STALE_AFTER`] (any host: a crashed machine). The
//! cache assumes of its file system: atomic `rename` within a directory, atomic exclusive
//! create, and modification times that advance (clocks of the machines within
//! `STALE_AFTER` of each other).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use dyad_datasets::fsutil::write_atomic;
use dyad_datasets::provider::RecordedEntry;

/// Version of the cell result format; part of every cell key.
pub const RESULT_FORMAT_VERSION: u32 = 3;

/// The second numeric coordinate of a record besides its step (a cardinality, a rank, a
/// noise level, ...), named by the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coord {
    pub name: String,
    pub value: f64,
}

/// One measurement of a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `"train"`, `"test"` or `"validation"`.
    pub set: String,
    /// `"map"`, `"precision"` (with `k`) or `"chance"`.
    pub metric: String,
    /// Training step of the model measured.
    pub step: u64,
    /// Solver seconds at that step (evaluation excluded).
    pub seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
    /// The record's second coordinate, if the task has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coord: Option<Coord>,
    pub value: f64,
}

/// A non-numeric output of a cell, shown in its experiment's report section: a table of
/// names (FuncISH's best categories, the GO terms explaining a similarity) or a picture
/// (descriptors drawn over an image). Tasks emit them; the report shows every cell's, titled
/// with the cell's data set, solver and repeat (and SYNTHETIC on a stand-in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// Stem of the picture's file name; unique within a cell.
    pub id: String,
    pub title: String,
    #[serde(flatten)]
    pub body: ArtifactBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArtifactBody {
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// A PNG file, base64-encoded in the cell file.
    Picture { png_base64: String },
}

impl Artifact {
    pub fn table(id: &str, title: String, head: &[&str], rows: Vec<Vec<String>>) -> Self {
        Artifact {
            id: id.into(),
            title,
            body: ArtifactBody::Table {
                head: head.iter().map(|h| h.to_string()).collect(),
                rows,
            },
        }
    }

    /// A picture from its PNG bytes.
    pub fn picture(id: &str, title: String, png: &[u8]) -> Self {
        use base64::Engine as _;
        Artifact {
            id: id.into(),
            title,
            body: ArtifactBody::Picture {
                png_base64: base64::engine::general_purpose::STANDARD.encode(png),
            },
        }
    }

    /// The PNG bytes of a picture (`None` for a table or a damaged encoding).
    pub fn png(&self) -> Option<Vec<u8>> {
        use base64::Engine as _;
        match &self.body {
            ArtifactBody::Picture { png_base64 } => base64::engine::general_purpose::STANDARD
                .decode(png_base64)
                .ok(),
            ArtifactBody::Table { .. } => None,
        }
    }
}

/// Everything a finished cell produced, with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub format: u32,
    pub key: String,
    /// The canonical description that was hashed into `key`.
    pub canonical: serde_json::Value,
    pub dataset: String,
    pub dataset_identity: String,
    pub synthetic: bool,
    pub solver: String,
    pub params: serde_json::Value,
    pub repeat: u32,
    pub seed: u64,
    /// Solver seconds of the final training run (to its last reported step).
    pub train_seconds: f64,
    /// Solver seconds spent choosing the number of steps (early stopping), if any.
    pub selection_seconds: f64,
    /// Seconds spent evaluating (never counted as solver time).
    pub eval_seconds: f64,
    pub wall_seconds: f64,
    /// Steps chosen by early stopping.
    pub selected_step: Option<u64>,
    /// Parameters chosen on the hold-out among the solver's `tune` candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuned: Option<serde_json::Value>,
    pub git_commit: String,
    pub dyad_version: String,
    /// Fingerprints of the source files of the task, solver and data provider that computed
    /// the cell (provenance, not part of the key: the report warns when they changed since).
    #[serde(default)]
    pub code: BTreeMap<String, String>,
    pub records: Vec<Record>,
    /// Tables of names and pictures (see [`Artifact`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The key (and task version) of the cell this one was carried from, when an earlier task
    /// version computed it and the task proved its records unchanged
    /// ([`crate::tasks::Carry`]); its values and timings are that cell's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried_from: Option<String>,
    /// The processor that computed (and timed) the cell ([`machine`]); `None` for cells from
    /// before it was recorded. Provenance, not part of the key: a ratio of two cells' times
    /// taken on different machines mixes two clocks, and the report says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// The parts (`solver`, `task`, `data`) whose source fingerprints differ between the current
/// code (`now`) and the code that computed a cell (`then`). A part the cell did not record is
/// not compared (cells from before provenance was kept are not called stale).
/// The file of code-equivalence witnesses under the cache root ([`Cache::witness_equivalent`]).
pub const EQUIVALENT_CODE: &str = "equivalent-code.jsonl";
/// The file of real data sets' resolutions under the cache root ([`Cache::record_data`]).
pub const REAL_DATA: &str = "real-data.jsonl";

pub fn changed_parts<'a>(
    now: &'a BTreeMap<String, String>,
    then: &'a BTreeMap<String, String>,
) -> impl Iterator<Item = &'a str> + 'a {
    now.iter()
        .filter(move |(part, fp)| then.get(*part).is_some_and(|old| old != *fp))
        .map(|(part, _)| part.as_str())
}

/// How a recomputed cell compares with the cell it replaced, timings aside (the cell's clocks
/// and the records of timing metrics). Records are matched by what they measure (set, metric,
/// step, `k`, coordinate), so a metric added to a task since shows as `added` and leaves the
/// comparison of the others intact.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    /// Records in both cells (timing records aside).
    pub shared: usize,
    /// Shared records whose values differ (compared exactly: the same code on the same seed
    /// reproduces them to the bit), and the largest absolute difference.
    pub differ: usize,
    pub max_abs: f64,
    /// Records only the new cell has, and only the old one had.
    pub added: usize,
    pub removed: usize,
    /// Other differences: the chosen step, the tuned parameters, the artifacts.
    pub other: Vec<String>,
}

impl Comparison {
    pub fn identical(&self) -> bool {
        self.added == 0 && self.reproduces_old()
    }

    /// Every value, choice and artifact of the old cell is in the new one (which may have
    /// more records).
    pub fn reproduces_old(&self) -> bool {
        self.differ == 0 && self.removed == 0 && self.other.is_empty()
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.identical() {
            return write!(f, "identical ({} values)", self.shared);
        }
        let mut parts = vec![if self.differ == 0 {
            format!("{} shared values identical", self.shared)
        } else {
            format!(
                "{} of {} shared values differ, by at most {:.3e}",
                self.differ, self.shared, self.max_abs
            )
        }];
        if self.added > 0 {
            parts.push(format!("{} records new", self.added));
        }
        if self.removed > 0 {
            parts.push(format!("{} records gone", self.removed));
        }
        parts.extend(self.other.iter().cloned());
        write!(f, "{}", parts.join("; "))
    }
}

impl CellResult {
    /// Compares this (recomputed) cell's results with `old`'s (see [`Comparison`]); records
    /// of the metrics `timing` names (a wall time stored as a value, e.g. FuncISH's
    /// `feature_seconds`) are left out: they differ between runs of the same code.
    pub fn compare(&self, old: &CellResult, timing: impl Fn(&str) -> bool) -> Comparison {
        type Id = (String, String, u64, Option<u32>, Option<(String, u64)>);
        let id = |r: &Record| -> Id {
            (
                r.set.clone(),
                r.metric.clone(),
                r.step,
                r.k,
                r.coord
                    .as_ref()
                    .map(|c| (c.name.clone(), c.value.to_bits())),
            )
        };
        let mut before: BTreeMap<Id, std::collections::VecDeque<f64>> = BTreeMap::new();
        for r in old.records.iter().filter(|r| !timing(&r.metric)) {
            before.entry(id(r)).or_default().push_back(r.value);
        }
        let mut c = Comparison::default();
        for r in self.records.iter().filter(|r| !timing(&r.metric)) {
            match before.get_mut(&id(r)).and_then(|q| q.pop_front()) {
                Some(v) => {
                    c.shared += 1;
                    if v.to_bits() != r.value.to_bits() {
                        c.differ += 1;
                        c.max_abs = c.max_abs.max((v - r.value).abs());
                    }
                }
                None => c.added += 1,
            }
        }
        c.removed = before.values().map(|q| q.len()).sum();
        if self.selected_step != old.selected_step {
            c.other.push(format!(
                "selected step {:?}, {:?} before",
                self.selected_step, old.selected_step
            ));
        }
        if self.tuned != old.tuned {
            c.other.push("other tuned parameters".into());
        }
        if self.artifacts != old.artifacts {
            c.other.push("other artifacts".into());
        }
        c
    }
}

/// The cell stored in `path` under `key`, `Ok(None)` when there is no file, or why the file is
/// not that cell.
fn read_cell(path: &Path, key: &str) -> Result<Option<CellResult>, Invalid> {
    Ok(read_digested(path, key)?.map(|(r, _)| r))
}

/// [`read_cell`] with the SHA-256 of the cell's canonical JSON (checked against the file's).
fn read_digested(path: &Path, key: &str) -> Result<Option<(CellResult, String)>, Invalid> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(None);
    };
    let stored: Stored =
        serde_json::from_slice(&bytes).map_err(|e| Invalid::Unreadable(e.to_string()))?;
    if digest(&stored.cell) != stored.sha256 {
        return Err(Invalid::Checksum);
    }
    let r: CellResult =
        serde_json::from_value(stored.cell).map_err(|e| Invalid::Unreadable(e.to_string()))?;
    if r.key != key || r.format != RESULT_FORMAT_VERSION {
        return Err(Invalid::Mismatch);
    }
    Ok(Some((r, stored.sha256)))
}

/// What a cell file holds: the cell and the SHA-256 of its canonical JSON.
#[derive(Serialize, Deserialize)]
struct Stored {
    sha256: String,
    cell: serde_json::Value,
}

fn digest(v: &serde_json::Value) -> String {
    dyad_datasets::identity::hex(&Sha256::digest(v.to_string().as_bytes()))
}

/// How often a held claim is touched.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(10);

/// A claim whose heartbeat is older than this is stale.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(90);

/// Who holds a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub host: String,
    pub pid: u32,
    /// Seconds since the Unix epoch when the claim was made.
    pub since: u64,
}

impl Holder {
    fn me() -> Self {
        Holder {
            host: hostname(),
            pid: std::process::id(),
            since: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

/// The processor this process runs on, as its timings' provenance: the first `model name`
/// of `/proc/cpuinfo` (else the architecture) and the CPUs the process may use, e.g.
/// `"AMD EPYC (2 CPUs)"`. Not the host name: two VMs of one kind time alike.
pub fn machine() -> String {
    static MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MACHINE.get_or_init(read_machine).clone()
}

fn read_machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "))
        })
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({cpus} CPU{})", if cpus == 1 { "" } else { "s" })
}

/// This machine's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else `localhost`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether process `pid` runs on this machine (Linux: `/proc/<pid>`; elsewhere assumed alive).
fn alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    Path::new(&format!("/proc/{pid}")).exists()
}

/// What a claim attempt found.
#[derive(Debug)]
pub enum Claim {
    /// The cell is cached (by this run earlier, or by another).
    Cached,
    /// Another live run holds the cell.
    Busy(Holder),
    /// This run holds the cell until the guard is dropped.
    Mine(ClaimGuard),
}

/// A held claim: its lock file is removed when dropped.
#[derive(Debug)]
pub struct ClaimGuard {
    path: PathBuf,
    held: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<PathBuf>>>,
}

impl Drop for ClaimGuard {
    fn drop(&mut self) {
        self.held.lock().unwrap().remove(&self.path);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The claims a run holds, touched by a heartbeat thread while the run lasts.
#[derive(Debug, Clone, Default)]
pub struct Claims {
    held: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<PathBuf>>>,
    /// Set by [`Claims::release_all`]: no claim is made after it (under `held`'s lock, so
    /// none slips in between the release and the process's exit).
    released: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Claims {
    /// Remove the lock file of every claim held (an interrupted run abandoning its cells);
    /// returns how many there were.
    pub fn release_all(&self) -> usize {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.released
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for p in held.iter() {
            let _ = std::fs::remove_file(p);
        }
        std::mem::take(&mut *held).len()
    }

    /// Touch every held claim every [`HEARTBEAT`] until `stop` is set.
    pub fn heartbeat(
        &self,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> std::thread::JoinHandle<()> {
        let held = self.held.clone();
        std::thread::spawn(move || {
            let tick = std::time::Duration::from_millis(200);
            let mut since = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(tick);
                if since.elapsed() < HEARTBEAT {
                    continue;
                }
                since = std::time::Instant::now();
                let paths: Vec<PathBuf> = held.lock().unwrap().iter().cloned().collect();
                for p in paths {
                    if let Ok(f) = std::fs::File::options().write(true).open(&p) {
                        let _ = f.set_modified(std::time::SystemTime::now());
                    }
                }
            }
        })
    }
}

/// Why a cell file is not a cached cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// The file does not parse as a cell (truncated, overwritten, another format).
    Unreadable(String),
    /// The content does not match its checksum.
    Checksum,
    /// A cell of another key or format version.
    Mismatch,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::Unreadable(e) => write!(f, "not a cell file: {e}"),
            Invalid::Checksum => write!(f, "its content does not match its SHA-256"),
            Invalid::Mismatch => write!(f, "a cell of another key or result format"),
        }
    }
}

/// The cell cache rooted at `<results>/cache`.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    pub fn new(results_dir: &Path) -> Self {
        Self {
            root: results_dir.join("cache"),
        }
    }

    /// A cache rooted at `root` itself (cells under `root/cells/`): a cell archive, which
    /// `dyad archive` writes and reads (see [`crate::Workspace::export_cells`]).
    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file that holds cell `key`.
    pub fn path(&self, key: &str) -> PathBuf {
        self.root
            .join("cells")
            .join(&key[..2])
            .join(format!("{key}.json"))
    }

    /// Whether a valid cell (readable, checksum right, same key and format) is cached.
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The cached result, if present and valid. An invalid entry (truncated, hand-edited, or
    /// from an incompatible version) is treated as missing and will be recomputed.
    pub fn get(&self, key: &str) -> Option<CellResult> {
        self.check(key).ok().flatten()
    }

    /// [`Cache::get`] with the SHA-256 of the cell's content: two reads give the same digest
    /// exactly when they give the same cell (what an output derived from cells is stamped by).
    pub fn get_digested(&self, key: &str) -> Option<(CellResult, String)> {
        read_digested(&self.path(key), key).ok().flatten()
    }

    /// The cached cell, `Ok(None)` when there is no file, or why the file is not a cell.
    pub fn check(&self, key: &str) -> Result<Option<CellResult>, Invalid> {
        read_cell(&self.path(key), key)
    }

    fn lock_path(&self, key: &str) -> PathBuf {
        self.root
            .join("cells")
            .join(&key[..2])
            .join(format!("{key}.lock"))
    }

    /// The holder of `key`'s claim, if it is held by a live run.
    pub fn holder(&self, key: &str) -> Option<Holder> {
        let path = self.lock_path(key);
        let text = std::fs::read_to_string(&path).ok()?;
        let holder: Option<Holder> = serde_json::from_str(&text).ok();
        let fresh = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age < STALE_AFTER);
        match holder {
            Some(h) if h.host == hostname() && !alive(h.pid) => None,
            Some(h) if fresh => Some(h),
            // Unreadable (being written this instant) and fresh: treat as held.
            None if fresh => Some(Holder {
                host: "?".into(),
                pid: 0,
                since: 0,
            }),
            _ => None,
        }
    }

    /// Claim `key` for this run: `Cached` when a valid cell is there, `Busy` when a live run
    /// holds it, else a guard (a stale claim is taken over).
    pub fn claim(&self, key: &str, claims: &Claims) -> std::io::Result<Claim> {
        let path = self.lock_path(key);
        std::fs::create_dir_all(path.parent().expect("a shard directory"))?;
        for _ in 0..3 {
            if self.contains(key) {
                return Ok(Claim::Cached);
            }
            // The lock file is created and recorded under `held`'s lock, never after the run's
            // claims were released (an interrupt).
            let mut held = claims
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if claims.released.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::Error::other(
                    "the run was interrupted: no new cell is claimed",
                ));
            }
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write as _;
                    let written = f
                        .write_all(
                            &serde_json::to_vec(&Holder::me()).map_err(std::io::Error::other)?,
                        )
                        .and_then(|()| f.sync_all());
                    if let Err(e) = written {
                        let _ = std::fs::remove_file(&path);
                        return Err(e);
                    }
                    held.insert(path.clone());
                    drop(held);
                    let guard = ClaimGuard {
                        path,
                        held: claims.held.clone(),
                    };
                    // The cell may have been stored between the check and the claim.
                    if self.contains(key) {
                        return Ok(Claim::Cached);
                    }
                    return Ok(Claim::Mine(guard));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    drop(held);
                    match self.holder(key) {
                        Some(h) => return Ok(Claim::Busy(h)),
                        // Stale: take it over (a race with another taker is settled by
                        // create_new on the next round).
                        None => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(self
            .holder(key)
            .map(Claim::Busy)
            .unwrap_or(Claim::Busy(Holder::me())))
    }

    /// Remove leftovers of crashed writers: temporary files of processes no longer running on
    /// this machine (or older than a day), and stale claims. Returns how many were removed.
    pub fn clean(&self) -> usize {
        let Ok(shards) = std::fs::read_dir(self.root.join("cells")) else {
            return 0;
        };
        let me = hostname();
        let mut removed = 0;
        for shard in shards.flatten() {
            let Ok(files) = std::fs::read_dir(shard.path()) else {
                continue;
            };
            for f in files.flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                let path = f.path();
                let old = day_old(&f);
                let gone = if name.ends_with(dyad_datasets::fsutil::TMP_SUFFIX) {
                    dead_temp(&name, old)
                } else if let Some(key) = name.strip_suffix(".lock") {
                    self.holder(key).is_none()
                        && std::fs::read_to_string(&path)
                            .ok()
                            .and_then(|t| serde_json::from_str::<Holder>(&t).ok())
                            .is_none_or(|h| h.host == me || old)
                } else {
                    false
                };
                if gone && std::fs::remove_file(&path).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Where values derived from loaded data (FuncISH's features) are kept between runs:
    /// files named by content key, beside the cells, never archived (computed again from the
    /// data when absent).
    pub fn derived_dir(&self) -> PathBuf {
        self.root.join("derived")
    }

    /// Where [`Cache::supersede`] moves a cell.
    pub fn superseded_path(&self, key: &str) -> PathBuf {
        self.root.join("superseded").join(format!("{key}.json"))
    }

    /// Moves a cached cell aside to `superseded/<key>.json` so that it is computed again (a
    /// run stopped before then leaves it missing, and the old file in place for comparison).
    pub fn supersede(&self, key: &str) -> std::io::Result<PathBuf> {
        let to = self.superseded_path(key);
        std::fs::create_dir_all(to.parent().expect("has a parent"))?;
        std::fs::rename(self.path(key), &to)?;
        Ok(to)
    }

    /// The cell a [`Cache::supersede`] moved aside, if it is there and valid.
    pub fn superseded(&self, key: &str) -> Option<CellResult> {
        read_cell(&self.superseded_path(key), key).ok().flatten()
    }

    /// Deletes a superseded cell (once its replacement is known to be identical).
    pub fn forget_superseded(&self, key: &str) -> std::io::Result<()> {
        std::fs::remove_file(self.superseded_path(key))
    }

    /// The witnesses of code equivalence ([`Self::witness_equivalent`]): per code part
    /// (`task`, `solver`, `data`), the pairs (old fingerprint, new fingerprint) of cells that
    /// were recomputed with the new code and reproduced the old cell exactly, followed along
    /// chains: witnesses A → B and B → C give A → C (code A reproduced by B, B by C), so a cell
    /// of code A is re-stamped as C without recomputing one of A's cells again.
    pub fn equivalences(&self) -> std::collections::BTreeSet<(String, String, String)> {
        let text = std::fs::read_to_string(self.root.join(EQUIVALENT_CODE)).unwrap_or_default();
        let direct: std::collections::BTreeSet<(String, String, String)> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<(String, String, String)>(l).ok())
            .collect();
        let mut next: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
        for (part, from, to) in &direct {
            next.entry((part, from)).or_default().push(to);
        }
        let mut out = std::collections::BTreeSet::new();
        for (part, from, _) in &direct {
            let mut stack = vec![from.as_str()];
            let mut seen = std::collections::BTreeSet::new();
            while let Some(fp) = stack.pop() {
                for &to in next.get(&(part.as_str(), fp)).into_iter().flatten() {
                    if seen.insert(to) {
                        out.insert((part.clone(), from.clone(), to.to_string()));
                        stack.push(to);
                    }
                }
            }
        }
        out
    }

    /// Records that the code of fingerprints `now` reproduced, exactly, a cell computed by the
    /// code of fingerprints `then`: one line per changed part in `EQUIVALENT_CODE` beside the
    /// cells. `dyad archive restamp` re-stamps other cells of the old code with the new
    /// fingerprints on this evidence, instead of recomputing them.
    pub fn witness_equivalent(
        &self,
        then: &BTreeMap<String, String>,
        now: &BTreeMap<String, String>,
    ) -> std::io::Result<()> {
        use std::io::Write as _;
        let known = std::fs::read_to_string(self.root.join(EQUIVALENT_CODE)).unwrap_or_default();
        let lines: String = changed_parts(now, then)
            .map(|part| {
                let row = (part, &then[part], &now[part]);
                serde_json::to_string(&row).expect("strings") + "\n"
            })
            .filter(|line| !known.lines().any(|k| k == line.trim_end()))
            .collect();
        if lines.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.root)?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join(EQUIVALENT_CODE))?
            .write_all(lines.as_bytes())
    }

    /// Adds the witnesses of `other` this cache lacks (an archive carries its cells'
    /// witnesses, so a re-stamp on another clone has the same evidence). Returns how many.
    pub fn merge_witnesses(&self, other: &Cache) -> std::io::Result<usize> {
        use std::io::Write as _;
        let theirs = std::fs::read_to_string(other.root.join(EQUIVALENT_CODE)).unwrap_or_default();
        let ours = std::fs::read_to_string(self.root.join(EQUIVALENT_CODE)).unwrap_or_default();
        let known: std::collections::BTreeSet<&str> = ours.lines().collect();
        let mut seen = std::collections::BTreeSet::new();
        let new: Vec<&str> = theirs
            .lines()
            .filter(|l| serde_json::from_str::<(String, String, String)>(l).is_ok())
            .filter(|l| !known.contains(l) && seen.insert(*l))
            .collect();
        if new.is_empty() {
            return Ok(0);
        }
        std::fs::create_dir_all(&self.root)?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join(EQUIVALENT_CODE))?;
        let text: String = new.iter().map(|l| format!("{l}\n")).collect();
        f.write_all(text.as_bytes())?;
        Ok(new.len())
    }

    /// The real data sets' resolutions kept here ([`Cache::record_data`]); lines that do not
    /// parse are skipped ([`Cache::recorded_data_checked`] names them).
    pub fn recorded_data(&self) -> Vec<RecordedEntry> {
        self.recorded_data_checked().0
    }

    /// The resolutions kept here, and every line of the file that is no resolution: (1-based
    /// line, what is wrong with it).
    pub fn recorded_data_checked(&self) -> (Vec<RecordedEntry>, Vec<(usize, String)>) {
        let text = std::fs::read_to_string(self.root.join(REAL_DATA)).unwrap_or_default();
        let (mut good, mut bad) = (Vec::new(), Vec::new());
        for (i, line) in text.lines().enumerate() {
            match serde_json::from_str(line) {
                Ok(e) => good.push(e),
                Err(e) => bad.push((i + 1, e.to_string())),
            }
        }
        (good, bad)
    }

    /// The path of the file of real data sets' resolutions.
    pub fn recorded_data_path(&self) -> PathBuf {
        self.root.join(REAL_DATA)
    }

    /// Keeps `entries` beside the cells: what each real data set of a plan resolved to where
    /// its data was, so that a clone without the data can still key and report the cells
    /// computed on it (`dyad report`). One line per requested provider and parameters, the
    /// newest winning, sorted: an archive's file changes only when a resolution does.
    pub fn record_data(&self, entries: &[RecordedEntry]) -> std::io::Result<()> {
        let mut all: BTreeMap<(String, String), RecordedEntry> = BTreeMap::new();
        for e in self
            .recorded_data()
            .into_iter()
            .chain(entries.iter().cloned())
        {
            all.insert((e.requested.clone(), e.params.to_string()), e);
        }
        let text: String = all
            .values()
            .map(|e| serde_json::to_string(e).map(|l| l + "\n"))
            .collect::<Result<_, _>>()
            .map_err(std::io::Error::other)?;
        let path = self.root.join(REAL_DATA);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
            return Ok(());
        }
        std::fs::create_dir_all(&self.root)?;
        write_atomic(&path, text.as_bytes())
    }

    pub fn put(&self, r: &CellResult) -> std::io::Result<()> {
        let cell = serde_json::to_value(r).map_err(std::io::Error::other)?;
        let stored = Stored {
            sha256: digest(&cell),
            cell,
        };
        let bytes = serde_json::to_vec(&stored).map_err(std::io::Error::other)?;
        write_atomic(&self.path(&r.key), &bytes)
    }

    /// The keys of the cell files in the cache (valid or not), sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = std::fs::read_dir(self.root.join("cells"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|d| std::fs::read_dir(d.path()).ok())
            .flat_map(|f| f.flatten())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json")
                    .filter(|k| !k.starts_with('.'))
                    .map(String::from)
            })
            .collect();
        keys.sort();
        keys
    }

    /// Deletes a cached cell; returns the bytes freed.
    pub fn remove(&self, key: &str) -> std::io::Result<u64> {
        let path = self.path(key);
        let bytes = std::fs::metadata(&path)?.len();
        std::fs::remove_file(&path)?;
        Ok(bytes)
    }

    /// The size of a cached cell's file.
    pub fn bytes(&self, key: &str) -> u64 {
        std::fs::metadata(self.path(key)).map_or(0, |m| m.len())
    }

    /// Number of cached cells.
    pub fn len(&self) -> usize {
        let Ok(dirs) = std::fs::read_dir(self.root.join("cells")) else {
            return 0;
        };
        dirs.flatten()
            .filter_map(|d| std::fs::read_dir(d.path()).ok())
            .map(|f| {
                f.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .count()
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A cell result with one record, for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn test_cell(key: &str) -> CellResult {
    tests::cell(key)
}

/// Whether `name` is the temporary file of a writer that can no longer finish it
/// (`.<name>.<pid>.<n>.tmp` of a process not running on this machine), or `old` (a day).
fn dead_temp(name: &str, old: bool) -> bool {
    let Some(stem) = name.strip_suffix(dyad_datasets::fsutil::TMP_SUFFIX) else {
        return false;
    };
    let pid = stem.rsplit('.').nth(1).and_then(|p| p.parse::<u32>().ok());
    name.starts_with('.') && (old || pid.is_some_and(|p| !alive(p)))
}

/// Whether a directory entry was last modified more than a day ago.
fn day_old(f: &std::fs::DirEntry) -> bool {
    f.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|a| a > std::time::Duration::from_secs(86_400))
}

/// Remove the temporary files crashed writers left in `dir` (a table or figure directory:
/// a run killed while writing a table leaves `.<table>.parquet.<pid>.<n>.tmp`). Returns how
/// many were removed.
pub fn remove_dead_temps(dir: &Path) -> usize {
    let Ok(files) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for f in files.flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        let old = day_old(&f);
        if dead_temp(&name, old) && std::fs::remove_file(f.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_temporary_files_are_removed_from_any_directory_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir
            .path()
            .join(format!(".t.parquet.{}.0.tmp", u32::MAX - 7));
        let live = dir
            .path()
            .join(format!(".t.parquet.{}.0.tmp", std::process::id()));
        let table = dir.path().join("t.parquet");
        for p in [&dead, &live, &table] {
            std::fs::write(p, b"x").unwrap();
        }
        assert_eq!(remove_dead_temps(dir.path()), 1);
        assert!(!dead.exists() && live.exists() && table.exists());
    }

    pub(super) fn cell(key: &str) -> CellResult {
        CellResult {
            format: RESULT_FORMAT_VERSION,
            key: key.into(),
            canonical: serde_json::json!({}),
            dataset: "d".into(),
            dataset_identity: "i".into(),
            synthetic: true,
            solver: "s".into(),
            params: serde_json::json!({}),
            repeat: 0,
            seed: 1,
            train_seconds: 0.5,
            selection_seconds: 0.0,
            eval_seconds: 0.1,
            wall_seconds: 0.7,
            selected_step: None,
            tuned: None,
            git_commit: "c".into(),
            dyad_version: "0".into(),
            code: BTreeMap::from([("solver".into(), "f".into())]),
            carried_from: None,
            machine: None,
            records: vec![Record {
                set: "test".into(),
                metric: "precision".into(),
                step: 3,
                seconds: 0.25,
                k: Some(2),
                coord: Some(Coord {
                    name: "rank".into(),
                    value: 10.0,
                }),
                value: 0.1 + 0.2,
            }],
            artifacts: vec![
                Artifact::table(
                    "top",
                    "Best categories".into(),
                    &["GO ID", "name"],
                    vec![vec![
                        "GO:0007399".into(),
                        "nervous system development".into(),
                    ]],
                ),
                Artifact::picture("img", "A picture".into(), &[0x89, b'P', b'N', b'G', 0, 255]),
            ],
        }
    }

    #[test]
    fn round_trip_is_exact_and_leaves_no_temporaries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = "ab".repeat(32);
        assert!(cache.get(&key).is_none());
        cache.put(&cell(&key)).unwrap();
        assert_eq!(cache.get(&key), Some(cell(&key)));
        assert_eq!(
            cache.get(&key).unwrap().artifacts[1].png(),
            Some(vec![0x89, b'P', b'N', b'G', 0, 255])
        );
        assert_eq!(cache.len(), 1);
        let shard = cache.root().join("cells").join("ab");
        let names: Vec<_> = std::fs::read_dir(shard)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn comparison_matches_records_and_leaves_timings_aside() {
        let key = "ab".repeat(32);
        let timing = |m: &str| m.ends_with("_seconds");
        let old = cell(&key);
        let mut new = old.clone();
        new.train_seconds = 9.0;
        new.wall_seconds = 9.0;
        new.records[0].seconds = 9.0;
        assert!(new.compare(&old, timing).identical());
        assert_eq!(new.compare(&old, timing).shared, 1);
        // A timing stored as a value differs between runs and is not compared ...
        let mut t = old.records[0].clone();
        t.metric = "feature_seconds".into();
        t.value = 722.0;
        let mut old_t = old.clone();
        old_t.records.push(t.clone());
        t.value = 1903.0;
        new.records.push(t);
        assert!(new.compare(&old_t, timing).identical());
        // ... unless the caller says it is not a timing.
        let c = new.compare(&old_t, |_| false);
        assert_eq!((c.shared, c.differ, c.max_abs), (2, 1, 1181.0));
        assert!(!c.reproduces_old());
        // One value changed by one ulp is a difference; a record added is new.
        new.records[0].value = f64::from_bits(new.records[0].value.to_bits() + 1);
        let mut extra = old.records[0].clone();
        extra.step = 4;
        new.records.push(extra);
        let c = new.compare(&old_t, timing);
        assert_eq!((c.shared, c.differ, c.added, c.removed), (1, 1, 1, 0));
        assert!(c.max_abs > 0.0 && c.max_abs < 1e-15);
        // Old records the new cell lacks are gone; choices and artifacts are compared too.
        let mut fewer = old.clone();
        fewer.records.clear();
        fewer.selected_step = Some(3);
        fewer.artifacts.pop();
        let c = fewer.compare(&old, timing);
        assert_eq!((c.shared, c.removed, c.other.len()), (0, 1, 2));
        assert!(!c.reproduces_old());
    }

    #[test]
    fn claims_are_exclusive_released_on_drop_and_stale_ones_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let claims = Claims::default();
        let key = "ab".repeat(32);
        let Claim::Mine(guard) = cache.claim(&key, &claims).unwrap() else {
            panic!("first claim")
        };
        // A second claimant (another run) finds it busy, held by this process.
        match cache.claim(&key, &Claims::default()).unwrap() {
            Claim::Busy(h) => assert_eq!(h.pid, std::process::id()),
            other => panic!("{other:?}"),
        }
        drop(guard);
        assert!(!cache.lock_path(&key).exists());
        // A cached cell is never claimed.
        cache.put(&cell(&key)).unwrap();
        assert!(matches!(cache.claim(&key, &claims).unwrap(), Claim::Cached));
        // A claim of a dead process on this host is stale: taken over.
        let other = "cd".repeat(32);
        let dead = Holder {
            host: hostname(),
            pid: u32::MAX - 7,
            since: 0,
        };
        std::fs::create_dir_all(cache.lock_path(&other).parent().unwrap()).unwrap();
        std::fs::write(cache.lock_path(&other), serde_json::to_vec(&dead).unwrap()).unwrap();
        assert!(cache.holder(&other).is_none());
        assert!(matches!(
            cache.claim(&other, &claims).unwrap(),
            Claim::Mine(_)
        ));
        // Another host's claim is live while its heartbeat is fresh, stale after STALE_AFTER.
        let remote = "ef".repeat(32);
        let there = Holder {
            host: "elsewhere".into(),
            pid: 1,
            since: 0,
        };
        std::fs::create_dir_all(cache.lock_path(&remote).parent().unwrap()).unwrap();
        std::fs::write(
            cache.lock_path(&remote),
            serde_json::to_vec(&there).unwrap(),
        )
        .unwrap();
        assert!(matches!(
            cache.claim(&remote, &claims).unwrap(),
            Claim::Busy(_)
        ));
        let f = std::fs::File::options()
            .write(true)
            .open(cache.lock_path(&remote))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() - STALE_AFTER * 2)
            .unwrap();
        assert!(cache.holder(&remote).is_none());
    }

    #[test]
    fn witnesses_merge_into_another_cache_once_and_garbage_is_left_behind() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ca, cb) = (Cache::at(a.path()), Cache::at(b.path()));
        let code = |fp: &str| BTreeMap::from([("solver".to_string(), fp.to_string())]);
        ca.witness_equivalent(&code("a"), &code("b")).unwrap();
        ca.witness_equivalent(&code("b"), &code("c")).unwrap();
        cb.witness_equivalent(&code("b"), &code("c")).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(a.path().join(EQUIVALENT_CODE))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"not json\n"))
            .unwrap();
        assert_eq!(cb.merge_witnesses(&ca).unwrap(), 1);
        assert_eq!(cb.merge_witnesses(&ca).unwrap(), 0);
        assert_eq!(cb.equivalences(), ca.equivalences());
        let text = std::fs::read_to_string(b.path().join(EQUIVALENT_CODE)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn equivalence_witnesses_are_kept_once_and_followed_along_chains() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let code = |fp: &str| BTreeMap::from([("solver".to_string(), fp.to_string())]);
        cache.witness_equivalent(&code("a"), &code("b")).unwrap();
        cache.witness_equivalent(&code("a"), &code("b")).unwrap();
        cache.witness_equivalent(&code("b"), &code("c")).unwrap();
        let text = std::fs::read_to_string(cache.root().join(EQUIVALENT_CODE)).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        let eq = cache.equivalences();
        let has = |a: &str, b: &str| eq.contains(&("solver".into(), a.into(), b.into()));
        assert!(has("a", "b") && has("b", "c") && has("a", "c"));
        assert!(!has("c", "a") && !has("b", "a"), "a witness is one way");
        assert_eq!(eq.len(), 3);
    }

    #[test]
    fn leftover_temporaries_of_dead_writers_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = "ab".repeat(32);
        cache.put(&cell(&key)).unwrap();
        let shard = cache.root().join("cells").join("ab");
        let dead = shard.join(format!(".{key}.json.{}.0.tmp", u32::MAX - 7));
        let live = shard.join(format!(".{key}.json.{}.0.tmp", std::process::id()));
        std::fs::write(&dead, b"partial").unwrap();
        std::fs::write(&live, b"being written").unwrap();
        assert_eq!(cache.clean(), 1);
        assert!(!dead.exists() && live.exists());
        assert!(cache.contains(&key));
    }

    #[test]
    fn unreadable_truncated_or_altered_entries_count_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = "cd".repeat(32);
        write_atomic(&cache.path(&key), b"{ not json").unwrap();
        assert!(cache.get(&key).is_none() && !cache.contains(&key));
        assert!(matches!(cache.check(&key), Err(Invalid::Unreadable(_))));
        cache.put(&cell(&key)).unwrap();
        assert!(cache.contains(&key));
        let good = std::fs::read(cache.path(&key)).unwrap();
        // Truncated anywhere: never a cell.
        for cut in [1, good.len() / 2, good.len() - 1] {
            std::fs::write(cache.path(&key), &good[..cut]).unwrap();
            assert!(!cache.contains(&key), "cut at {cut}");
        }
        // A value changed but still valid JSON: the checksum catches it.
        let text = String::from_utf8(good.clone()).unwrap();
        let altered = text.replace("\"train_seconds\":0.5", "\"train_seconds\":0.6");
        assert_ne!(altered, text);
        std::fs::write(cache.path(&key), altered).unwrap();
        assert_eq!(cache.check(&key), Err(Invalid::Checksum));
        // A valid cell under another key's name.
        let other = "ef".repeat(32);
        cache.put(&cell(&other)).unwrap();
        std::fs::copy(cache.path(&other), cache.path(&key)).unwrap();
        assert_eq!(cache.check(&key), Err(Invalid::Mismatch));
        std::fs::write(cache.path(&key), good).unwrap();
        assert!(cache.contains(&key));
    }
}
