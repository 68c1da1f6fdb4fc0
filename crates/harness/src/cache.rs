//! The content-addressed cell cache under `results/cache/`, written atomically: a finished
//! cell is either entirely on disk or not at all, whatever happens to the process.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Version of the cell result format; part of every cell key.
pub const RESULT_FORMAT_VERSION: u32 = 2;

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
    pub value: f64,
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
    pub records: Vec<Record>,
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

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root
            .join("cells")
            .join(&key[..2])
            .join(format!("{key}.json"))
    }

    pub fn contains(&self, key: &str) -> bool {
        self.path(key).is_file()
    }

    /// The cached result, if present and readable. An unreadable entry (hand-edited, or from
    /// an incompatible version) is treated as missing and will be recomputed.
    pub fn get(&self, key: &str) -> Option<CellResult> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let r: CellResult = serde_json::from_slice(&bytes).ok()?;
        (r.key == key && r.format == RESULT_FORMAT_VERSION).then_some(r)
    }

    pub fn put(&self, r: &CellResult) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(r).map_err(std::io::Error::other)?;
        write_atomic(&self.path(&r.key), &bytes)
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

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename,
/// fsync of the directory. Readers see the old content or the new, never a mixture.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(key: &str) -> CellResult {
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
            records: vec![Record {
                set: "test".into(),
                metric: "precision".into(),
                step: 3,
                seconds: 0.25,
                k: Some(2),
                value: 0.1 + 0.2,
            }],
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
    fn unreadable_entries_count_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let key = "cd".repeat(32);
        write_atomic(&cache.path(&key), b"{ not json").unwrap();
        assert!(cache.get(&key).is_none());
    }
}
