//! The content-addressed cell cache under `results/cache/`, written atomically: a finished
//! cell is either entirely on disk or not at all, whatever happens to the process. Each cell
//! file carries the SHA-256 of its content: a truncated or altered file is not a cached cell
//! (it is recomputed), whatever its name says.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use dyad_datasets::fsutil::write_atomic;

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

    /// Whether a valid cell (readable, checksum right, same key and format) is cached.
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The cached result, if present and valid. An invalid entry (truncated, hand-edited, or
    /// from an incompatible version) is treated as missing and will be recomputed.
    pub fn get(&self, key: &str) -> Option<CellResult> {
        self.check(key).ok().flatten()
    }

    /// The cached cell, `Ok(None)` when there is no file, or why the file is not a cell.
    pub fn check(&self, key: &str) -> Result<Option<CellResult>, Invalid> {
        let Ok(bytes) = std::fs::read(self.path(key)) else {
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
        Ok(Some(r))
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
            code: BTreeMap::from([("solver".into(), "f".into())]),
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
