//! Data-set providers: the one interface through which the harness finds, identifies and
//! loads a data set, real or stand-in.
//!
//! A provider turns the parameters of a spec's `[[datasets]]` entry into a [`Resolved`] data
//! set: its content identity (known without loading the data whenever it can be), its
//! [`Shape`] (what plans check sizes against before any data is read), a note saying what
//! was used, and a loader. A real data set that is **absent** resolves to its seeded
//! stand-in and says so; one that is present only in part, or corrupt, is an error naming
//! what is wrong ([`real_or_standin`]): a stand-in never hides a broken download.
//!
//! Loaded data is a [`Data`]: a value of the provider's kind (labelled rows, multi-label rows,
//! an expression matrix, the web stand-in with its latent truth, ...), which a task reads by
//! type. Adding a data set is one folder with a `Provider` implementation and one line in
//! the harness's provider list; nothing else changes.

use crate::registry::DatasetInfo;
use crate::{ContentHasher, DataError};
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Kinds of data, as providers declare them and tasks accept them.
pub mod kinds {
    /// [`dyad_core::LabeledSet`]: rows with one class each (optionally multi-label relevance).
    pub const LABELLED: &str = "labelled examples";
    /// [`crate::imagenet::MultiLabelSet`]: rows with a leaf and its ancestor labels.
    pub const MULTI_LABEL: &str = "multi-label examples";
    /// [`crate::expression::ExpressionSet`]: a dense genes x samples matrix.
    pub const EXPRESSION: &str = "an expression matrix";
    /// [`crate::web::WebData`]: the web stand-in with its clicks and concepts.
    pub const WEB: &str = "web stand-in images";
    /// [`dyad_core::gmm::GmmSpec`]: a Gaussian mixture's description, drawn by the task.
    pub const GMM: &str = "a Gaussian-mixture description";
    /// [`crate::go::GoData`]: an ontology with gene annotations.
    pub const GO: &str = "an ontology with gene annotations";
    /// [`crate::ish::IshSet`]: ISH images of genes with their GO categories.
    pub const ISH: &str = "ISH images with GO categories";
}

/// Runs `f` on a new thread that belongs to no rayon pool, so the parallel sections in it run
/// on the global pool whatever pool the caller is in; a panic in `f` is resumed here.
pub fn outside_pools<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// Loaded data: a value of the provider's kind, and for a stand-in the ground truth it was
/// planted with (kept for tasks that measure recovery).
pub struct Data {
    kind: &'static str,
    value: Box<dyn Any + Send + Sync>,
    truth: Option<Box<dyn Any + Send + Sync>>,
    derived: Mutex<BTreeMap<String, Arc<Derived>>>,
    store: std::sync::OnceLock<DerivedStore>,
}

/// Where the values [`Data::derived_stored`] derives from one data set are kept between
/// processes: files in `dir` named by the SHA-256 of `data` (what identifies the loaded data:
/// its content and the code that made it) and the value's own key.
#[derive(Debug, Clone)]
pub struct DerivedStore {
    pub dir: PathBuf,
    pub data: String,
}

/// How a stored derived value is written and read back (exactly: a value read back must be
/// the value computed, bit for bit).
pub trait Stored: Sized {
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

/// The tag that opens every stored derived value, before its encoding and its SHA-256.
const STORED_MAGIC: &[u8] = b"dyad-derived/1\n";

impl DerivedStore {
    /// The file of the value `key`.
    pub fn path(&self, key: &str) -> PathBuf {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(self.data.as_bytes());
        h.update([0]);
        h.update(key.as_bytes());
        self.dir
            .join(format!("{}.bin", crate::identity::hex(&h.finalize())))
    }

    /// The value stored under `key`: `Ok(None)` when there is none, an error naming the file
    /// when it is damaged (truncated, edited: its SHA-256 does not match) or does not decode.
    pub fn read<T: Stored>(&self, key: &str) -> Result<Option<T>, String> {
        use sha2::{Digest, Sha256};
        let path = self.path(key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let bad = |why: &str| format!("{}: {why}", path.display());
        if bytes.len() < STORED_MAGIC.len() + 32 || !bytes.starts_with(STORED_MAGIC) {
            return Err(bad(
                "not a stored derived value (no `dyad-derived/1` header)",
            ));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body).as_slice() != sum {
            return Err(bad(
                "its SHA-256 does not match its content (damaged or truncated)",
            ));
        }
        T::decode(&body[STORED_MAGIC.len()..])
            .map(Some)
            .map_err(|e| bad(&e))
    }

    /// Stores `value` under `key` (atomically: a crash leaves the old file or none).
    pub fn write<T: Stored>(&self, key: &str, value: &T) -> std::io::Result<()> {
        use sha2::{Digest, Sha256};
        let mut bytes = STORED_MAGIC.to_vec();
        bytes.extend_from_slice(&value.encode());
        let sum = Sha256::digest(&bytes);
        bytes.extend_from_slice(&sum);
        crate::fsutil::write_atomic(&self.path(key), &bytes)
    }
}

/// A value derived from a data set, computed once (see [`Data::derived`]).
type Derived = std::sync::OnceLock<Result<Arc<dyn Any + Send + Sync>, String>>;

impl Data {
    pub fn new<T: Any + Send + Sync>(kind: &'static str, value: T) -> Self {
        Self {
            kind,
            value: Box::new(value),
            truth: None,
            derived: Mutex::new(BTreeMap::new()),
            store: std::sync::OnceLock::new(),
        }
    }

    /// Keeps the values [`Data::derived_stored`] derives from this data in `store` (the
    /// first store given wins).
    pub fn keep_derived_in(&self, store: DerivedStore) {
        let _ = self.store.set(store);
    }

    /// [`Data::derived`], kept between processes when the data has a store
    /// ([`Data::keep_derived_in`]): a value stored earlier is read back instead of computed,
    /// and a computed one is stored. `key` must name everything the value depends on besides
    /// the data, including the code that computes it. A damaged file is reported on stderr
    /// and computed again; a value that cannot be stored is reported and still returned.
    pub fn derived_stored<T: Any + Send + Sync + Stored>(
        &self,
        key: &str,
        compute: impl FnOnce() -> Result<T, String> + Send,
    ) -> Result<Arc<T>, String> {
        let store = self.store.get().cloned();
        self.derived(key, move || {
            let Some(store) = store else {
                return compute();
            };
            match store.read::<T>(key) {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => {}
                Err(e) => eprintln!("warning: {e}; computing it again"),
            }
            let v = compute()?;
            if let Err(e) = store.write(key, &v) {
                eprintln!(
                    "warning: storing a derived value in {}: {e} (it is computed again next time)",
                    store.dir.display()
                );
            }
            Ok(v)
        })
    }

    /// A value derived from this data (features extracted from images, a representation
    /// learned once and read by several cells), computed by the first caller for `key` and
    /// shared with every later one, also across threads: concurrent callers of the same key
    /// wait for the first instead of computing it again. `key` must name everything the
    /// value depends on besides the data. An error is remembered as well.
    ///
    /// `compute` runs on a thread of its own, outside any rayon pool the caller is in, so its
    /// parallel sections use rayon's global pool: the callers waiting for it are blocked, and a
    /// harness worker whose cell has a one-thread pool does not extract features on one core.
    pub fn derived<T: Any + Send + Sync>(
        &self,
        key: &str,
        compute: impl FnOnce() -> Result<T, String> + Send,
    ) -> Result<Arc<T>, String> {
        let slot = self
            .derived
            .lock()
            .unwrap()
            .entry(key.to_string())
            .or_default()
            .clone();
        let value = slot
            .get_or_init(|| {
                outside_pools(compute).map(|v| Arc::new(v) as Arc<dyn Any + Send + Sync>)
            })
            .clone()?;
        value
            .downcast::<T>()
            .map_err(|_| format!("derived value `{key}` was stored with another type"))
    }

    /// The same data, with the structure a generator planted in it.
    pub fn with_truth<T: Any + Send + Sync>(mut self, truth: T) -> Self {
        self.truth = Some(Box::new(truth));
        self
    }

    /// The planted truth, if there is one and it is a `T`.
    pub fn truth<T: Any>(&self) -> Option<&T> {
        self.truth.as_ref()?.downcast_ref::<T>()
    }

    /// The kind the provider declared (one of [`kinds`] or a data set's own).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The value, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.value.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Data({})", self.kind)
    }
}

/// What is known of a data set without loading it: enough for a plan to refuse sizes the
/// data cannot satisfy.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Shape {
    /// Rows (examples, samples).
    pub rows: usize,
    /// Columns (features, genes).
    pub dim: usize,
    /// Rows per class, by class index (labelled data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_sizes: Option<Vec<usize>>,
    /// Rows per class in the official training part, when the data has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_class_sizes: Option<Vec<usize>>,
    /// Rows per class in the official test part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_class_sizes: Option<Vec<usize>>,
    /// Degenerate rows of the data as delivered (after the data set's own policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<dyad_core::data::RowAudit>,
    /// Rows the data set's policy removed, by reason (e.g. "empty after feature selection
    /// (training part)").
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub dropped: std::collections::BTreeMap<String, usize>,
}

impl Shape {
    /// The shape of a labelled set (class sizes overall and per official part).
    pub fn of_labelled(set: &dyad_core::LabeledSet) -> Shape {
        let classes = set.n_classes();
        let mut all = vec![0; classes];
        let mut parts = set
            .partition
            .as_ref()
            .map(|_| (vec![0; classes], vec![0; classes]));
        for (i, &c) in set.labels.iter().enumerate() {
            all[c as usize] += 1;
            if let (Some(p), Some((tr, te))) = (&set.partition, &mut parts) {
                match p[i] {
                    dyad_core::Partition::Train => tr[c as usize] += 1,
                    dyad_core::Partition::Test => te[c as usize] += 1,
                }
            }
        }
        let (train_class_sizes, test_class_sizes) = match parts {
            Some((tr, te)) => (Some(tr), Some(te)),
            None => (None, None),
        };
        Shape {
            rows: set.n(),
            dim: set.dim(),
            class_sizes: Some(all),
            train_class_sizes,
            test_class_sizes,
            audit: Some(set.row_audit()),
            dropped: Default::default(),
        }
    }

    /// Record rows removed by the data set's policy.
    pub fn with_dropped(mut self, reason: &str, rows: usize) -> Shape {
        if rows > 0 {
            *self.dropped.entry(reason.to_string()).or_default() += rows;
        }
        self
    }

    /// One line on degenerate rows: what was dropped and what remains (the audit).
    pub fn rows_line(&self) -> Option<String> {
        let audit = self.audit.as_ref()?;
        let mut s = audit.summary();
        if !self.dropped.is_empty() {
            let d: Vec<String> = self
                .dropped
                .iter()
                .map(|(why, n)| format!("{n} {why}"))
                .collect();
            s.push_str(&format!(
                "; dropped by the data set's policy: {}",
                d.join(", ")
            ));
        }
        Some(s)
    }
}

/// Loads the data of a resolved data set.
pub type Loader = Arc<dyn Fn() -> Result<Arc<Data>, DataError> + Send + Sync>;

/// A data set instance ready to be hashed into cell keys and loaded on demand.
#[derive(Clone)]
pub struct Resolved {
    /// The provider actually used (a stand-in when the requested data is absent).
    pub name: &'static str,
    /// That provider's version: part of every cell key.
    pub version: u32,
    /// The kind of the data the loader returns.
    pub kind: &'static str,
    /// Canonical parameters of that provider.
    pub params: serde_json::Value,
    /// Content identity of the data.
    pub identity: String,
    pub synthetic: bool,
    /// Real data whose content identity is not the published release's (another data set of
    /// the same format and shape, a re-encoded or edited copy): why, in a few words. Every
    /// line that shows the data says so, and bands calibrated on the release skip it.
    pub unpublished: Option<String>,
    /// One line for tables and the report: what was used and why. Paths are relative to the
    /// data directory (`$DYAD_DATA_DIR/...`), never the machine's absolute paths.
    pub note: String,
    /// Sizes, when known without loading (always for stand-ins; for real data once its
    /// identity has been computed).
    pub shape: Option<Shape>,
    pub loader: Loader,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("name", &self.name)
            .field("identity", &self.identity)
            .field("synthetic", &self.synthetic)
            .finish()
    }
}

/// What a real data set resolved to where its data was: enough to key and describe the
/// cells computed on it where the data is not (`dyad report` on a clone without the data,
/// from an archive's `real-data.jsonl`). No loader: [`Recorded::resolved`] gives one that
/// refuses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    pub name: String,
    pub version: u32,
    pub params: serde_json::Value,
    pub identity: String,
    pub synthetic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unpublished: Option<String>,
    pub note: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
}

/// One line of a `real-data.jsonl`: provider `requested` with the spec's `params` (profile
/// applied) resolved to `resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedEntry {
    pub requested: String,
    pub params: serde_json::Value,
    pub resolved: Recorded,
}

fn recorded_key(requested: &str, params: &serde_json::Value) -> String {
    format!("{requested}|{params}")
}

impl Recorded {
    pub fn of(r: &Resolved) -> Self {
        Self {
            name: r.name.to_string(),
            version: r.version,
            params: r.params.clone(),
            identity: r.identity.clone(),
            synthetic: r.synthetic,
            unpublished: r.unpublished.clone(),
            note: r.note.clone(),
            shape: r.shape.clone(),
        }
    }

    /// The resolution, its loader refusing with what to do; `None` when no provider of the
    /// recorded name and version is registered (its cells would have other keys anyway).
    pub fn resolved(&self) -> Option<Resolved> {
        let p = crate::registry::provider(&self.name)?;
        if p.version() != self.version {
            return None;
        }
        let name = p.name();
        Some(Resolved {
            name,
            version: self.version,
            kind: p.kind(),
            params: self.params.clone(),
            identity: self.identity.clone(),
            synthetic: self.synthetic,
            unpublished: self.unpublished.clone(),
            note: self.note.clone(),
            shape: self.shape.clone(),
            loader: Arc::new(move || {
                Err(DataError::Inconsistent {
                    path: PathBuf::from(name),
                    message: "this data set is not here: its cells were computed where it was \
                              (as an archive recorded it), so they can be reported but not \
                              computed again; put the data in $DYAD_DATA_DIR (`dyad data \
                              list` says where) to compute"
                        .into(),
                })
            }),
        })
    }
}

/// A data set the specs can name.
pub trait Provider: Sync {
    /// Registry name (`dyad data list`, specs' `datasets.name`).
    fn name(&self) -> &'static str;
    /// Bump when the data this provider delivers changes for the same parameters and
    /// files: exactly the cells on it recompute.
    fn version(&self) -> u32;
    fn description(&self) -> &'static str;
    /// The kind of [`Data`] it delivers (one of [`kinds`], or a data set's own).
    fn kind(&self) -> &'static str;
    /// The release it reads, for a real data set (files, checksums, where to get it).
    fn info(&self) -> Option<&'static DatasetInfo> {
        None
    }
    /// Whether this provider generates synthetic data.
    fn synthetic(&self) -> bool {
        self.info().is_none()
    }
    /// The stand-in used when the real data is absent.
    fn standin(&self) -> Option<&'static str> {
        self.info().map(|i| i.standin)
    }
    /// Source files (paths under `crates/`) whose fingerprint is kept as provenance.
    fn sources(&self) -> &'static [&'static str];
    /// Resolve the spec's parameters (a JSON object; unknown keys are errors).
    fn resolve(&self, ctx: &DataContext, params: &serde_json::Value)
    -> Result<Resolved, DataError>;
}

/// A memo entry: the identity and shape of a real data set, keyed by its files' stamp.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Known {
    identity: String,
    #[serde(default)]
    shape: Option<Shape>,
}

/// Where data lives and what is known about it.
pub struct DataContext {
    pub data_dir: PathBuf,
    /// Where derived data (e.g. extracted image features) is cached.
    pub cache_dir: PathBuf,
    memo_path: PathBuf,
    memo: Mutex<BTreeMap<String, Known>>,
    /// Whether identities computed are written to the memo file (not for commands that only
    /// read: `dyad data list`, `info`, `verify`).
    persist: bool,
    /// Real data sets as other machines resolved them, by `requested|params` (see
    /// [`Recorded`]): empty unless [`DataContext::recalling`] set them.
    recorded: BTreeMap<String, Recorded>,
    /// The `requested|params` keys [`DataContext::recall`] answered.
    recalled: Mutex<Vec<String>>,
}

impl DataContext {
    /// `cache_dir/data-identity.json` remembers the identities and shapes of real files by
    /// (path, size, mtime), so that a fully cached experiment never reads its data again.
    pub fn new(data_dir: PathBuf, cache_dir: PathBuf) -> Self {
        let memo_path = cache_dir.join("data-identity.json");
        let memo = std::fs::read(&memo_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Self {
            data_dir,
            cache_dir,
            memo_path,
            memo: Mutex::new(memo),
            persist: true,
            recorded: BTreeMap::new(),
            recalled: Mutex::new(Vec::new()),
        }
    }

    /// This context, answering [`DataContext::recall`] from `entries` (requested provider,
    /// its parameters as the spec gave them, what they resolved to where the data was).
    pub fn recalling(mut self, entries: impl IntoIterator<Item = RecordedEntry>) -> Self {
        for e in entries {
            self.recorded
                .insert(recorded_key(&e.requested, &e.params), e.resolved);
        }
        self
    }

    /// What real data set `requested` with the spec's `params` resolved to on the machine
    /// that computed its cells, when this context was given such a record
    /// ([`DataContext::recalling`]) and its provider is registered at the recorded version.
    /// Its loader refuses (the data is not here); its name, parameters, content identity,
    /// note and shape are the record's, so its cells have the keys they were computed under.
    pub fn recall(&self, requested: &str, params: &serde_json::Value) -> Option<Resolved> {
        let key = recorded_key(requested, params);
        let r = self.recorded.get(&key)?.resolved()?;
        self.recalled.lock().unwrap().push(key);
        Some(r)
    }

    /// How many resolutions [`DataContext::recall`] answered, and for which data sets
    /// (provider names, sorted, without repeats).
    pub fn recalled(&self) -> (usize, Vec<String>) {
        let keys = self.recalled.lock().unwrap();
        let mut names: Vec<String> = keys
            .iter()
            .map(|k| k.split('|').next().unwrap_or_default().to_string())
            .collect();
        names.sort();
        names.dedup();
        (keys.len(), names)
    }

    /// This context, remembering the identities it computes in memory only: for commands
    /// that read the data and must not write under the results directory.
    pub fn read_only(mut self) -> Self {
        self.persist = false;
        self
    }

    /// The data directory named by `$DYAD_DATA_DIR`, else `datasets/`.
    pub fn default_data_dir() -> PathBuf {
        std::env::var_os("DYAD_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("datasets"))
    }

    /// Where the memo lives.
    pub fn memo_path(&self) -> &Path {
        &self.memo_path
    }

    /// `path` as the report shows it: relative to the data directory, as
    /// `$DYAD_DATA_DIR/...`.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.data_dir) {
            Ok(rel) if rel.as_os_str().is_empty() => "$DYAD_DATA_DIR".into(),
            Ok(rel) => format!("$DYAD_DATA_DIR/{}", rel.display()),
            Err(_) => path.display().to_string(),
        }
    }

    /// Data directories other than this context's in which real data set `name` (kept in
    /// folder `dir` of a data directory) was read before, as the memo's stamps record its
    /// files, and whose files are still there. A user whose `DYAD_DATA_DIR` is unset or
    /// points elsewhere sees the stand-in's cells, though the results directory holds cells
    /// computed on the real data: this is where to point it.
    pub fn seen_elsewhere(&self, name: &str, dir: &str) -> Vec<PathBuf> {
        let here = std::fs::canonicalize(&self.data_dir).unwrap_or_else(|_| self.data_dir.clone());
        let memo = self.memo.lock().unwrap();
        let mut found: Vec<PathBuf> = Vec::new();
        for key in memo.keys() {
            let mut parts = key.split('|');
            if parts.next() != Some(name) {
                continue;
            }
            // `name|params|path:size:mtime|...`: the stamps are the parts ending in two numbers.
            for part in parts.skip(1) {
                let mut f = part.rsplitn(3, ':');
                let (Some(mtime), Some(size), Some(path)) = (f.next(), f.next(), f.next()) else {
                    continue;
                };
                if size.parse::<u64>().is_err() || mtime.parse::<u128>().is_err() {
                    continue;
                }
                let path = Path::new(path);
                let root = path
                    .ancestors()
                    .find(|a| a.file_name().is_some_and(|f| f == dir))
                    .and_then(Path::parent);
                if let Some(root) = root
                    && path.exists()
                    && root != here
                    && !found.iter().any(|f| f == root)
                {
                    found.push(root.to_path_buf());
                }
            }
        }
        found
    }

    fn memo_get(&self, key: &str) -> Option<Known> {
        self.memo.lock().unwrap().get(key).cloned()
    }

    fn memo_put(&self, key: String, known: Known) {
        let mut m = self.memo.lock().unwrap();
        m.insert(key, known);
        if !self.persist {
            return;
        }
        if let Ok(bytes) = serde_json::to_vec_pretty(&*m) {
            // Losing the memo only costs a re-read; never fail a run over it.
            let _ = crate::fsutil::write_atomic(&self.memo_path, &bytes);
        }
    }
}

/// Deserialize a provider's typed parameters (unknown keys are errors).
pub fn typed<T: serde::de::DeserializeOwned>(
    name: &str,
    params: &serde_json::Value,
) -> Result<T, DataError> {
    let v = if params.is_null() {
        serde_json::Value::Object(Default::default())
    } else {
        params.clone()
    };
    T::deserialize(v).map_err(|e| param_err(name, e))
}

/// A parameter error of provider `name`.
pub fn param_err(name: &str, e: impl std::fmt::Display) -> DataError {
    DataError::Param(format!("{name}: {}", e.to_string().trim()))
}

/// Split a real provider's parameters into its own and its `standin` table.
pub fn split_standin(
    name: &str,
    params: &serde_json::Value,
) -> Result<(serde_json::Value, serde_json::Value), DataError> {
    let mut own = match params {
        serde_json::Value::Null => serde_json::Map::new(),
        serde_json::Value::Object(m) => m.clone(),
        other => return Err(param_err(name, format!("expected a table, found {other}"))),
    };
    let standin = match own.remove("standin") {
        None => serde_json::Value::Object(Default::default()),
        Some(t @ serde_json::Value::Object(_)) => t,
        Some(_) => {
            return Err(param_err(
                name,
                "`standin` must be a table of stand-in parameters",
            ));
        }
    };
    Ok((serde_json::Value::Object(own), standin))
}

/// The identity of generated data: which generator, its version and canonical parameters.
pub fn synthetic_identity(name: &str, version: u32, params: &serde_json::Value) -> String {
    let mut h = ContentHasher::new("synthetic/v2");
    h.str(name)
        .str(&version.to_string())
        .str(&params.to_string());
    h.finish().0
}

/// A stand-in (or any generated data set): identity from its canonical parameters, shape
/// as the generator promises it, loader = the generator.
pub fn synthetic<P: Provider + ?Sized, T: Serialize>(
    provider: &P,
    config: &T,
    shape: Option<Shape>,
    note: String,
    generate: impl Fn() -> Result<Data, DataError> + Send + Sync + 'static,
) -> Result<Resolved, DataError> {
    let params = serde_json::to_value(config).map_err(|e| param_err(provider.name(), e))?;
    Ok(Resolved {
        name: provider.name(),
        version: provider.version(),
        kind: provider.kind(),
        identity: synthetic_identity(provider.name(), provider.version(), &params),
        params,
        synthetic: true,
        unpublished: None,
        note,
        shape,
        loader: Arc::new(move || generate().map(Arc::new)),
    })
}

/// Where a real data set stands in the data directory.
#[derive(Debug, Clone, PartialEq)]
pub enum Presence {
    /// Every part is there: the files found, one per part.
    Complete(Vec<PathBuf>),
    /// Nothing of it is there: its stand-in is used.
    Absent,
}

/// The presence of a release made of parts, each found under the first of its candidate
/// names in `dir`: all parts found, none found, or (an error) some but not all.
pub fn locate_parts(
    name: &str,
    dir: &Path,
    parts: &[Vec<String>],
    hint: &str,
) -> Result<Presence, DataError> {
    let found: Vec<Option<PathBuf>> = parts
        .iter()
        .map(|names| names.iter().map(|n| dir.join(n)).find(|p| p.is_file()))
        .collect();
    if found.iter().all(Option::is_some) {
        return Ok(Presence::Complete(found.into_iter().flatten().collect()));
    }
    if found.iter().all(Option::is_none) {
        return Ok(Presence::Absent);
    }
    let (mut have, mut missing) = (Vec::new(), Vec::new());
    for (f, names) in found.iter().zip(parts) {
        match f {
            Some(p) => have.push(
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ),
            None => missing.push(names.join(" or ")),
        }
    }
    Err(DataError::Incomplete {
        name: name.into(),
        dir: dir.to_path_buf(),
        found: have.join(", "),
        missing: missing.join(", "),
        hint: hint.into(),
    })
}

/// The stand-in of `real` for data absent from `where_`, resolved with `params` and marked
/// as standing in.
pub fn absent(
    real: &dyn Provider,
    ctx: &DataContext,
    where_: &Path,
    params: &serde_json::Value,
) -> Result<Resolved, DataError> {
    let sname = real
        .standin()
        .ok_or_else(|| param_err(real.name(), "the data is absent and has no stand-in"))?;
    let sp = crate::registry::provider(sname)
        .ok_or_else(|| param_err(real.name(), format!("stand-in `{sname}` is not registered")))?;
    let mut r = sp.resolve(ctx, params)?;
    r.note = format!(
        "SYNTHETIC stand-in for {} ({} not found): {}",
        real.name(),
        ctx.show(where_),
        r.note.trim_start_matches("SYNTHETIC ")
    );
    Ok(r)
}

/// A real data set whose identity (and shape) is remembered by the stamp (paths, sizes,
/// mtimes) of `files`: on a memo miss `identify` reads the data once to compute them. The
/// loader checks the identity again, so data changed behind the memo's back is an error,
/// not a silent mix.
#[allow(clippy::too_many_arguments)]
pub fn real<P: Serialize>(
    provider: &dyn Provider,
    ctx: &DataContext,
    files: &[PathBuf],
    params: &P,
    note: String,
    identify: impl FnOnce() -> Result<(String, Option<Shape>), DataError>,
    load: impl Fn() -> Result<(String, Data), DataError> + Send + Sync + 'static,
) -> Result<Resolved, DataError> {
    let name = provider.name();
    let canonical = serde_json::to_value(params).map_err(|e| param_err(name, e))?;
    // Parameters take part: the shape (and for some sets the identity) depends on them.
    // `shape2`: shapes with the row audit; entries written before it are identified anew.
    let stamp = format!("{name}|shape2|{canonical}{}", file_stamp(files)?);
    let known = match ctx.memo_get(&stamp) {
        Some(k) => k,
        None => {
            let (identity, shape) = identify()?;
            let k = Known { identity, shape };
            ctx.memo_put(stamp.clone(), k.clone());
            k
        }
    };
    let expected = known.identity.clone();
    let at = files.first().cloned().unwrap_or_default();
    let unpublished = provider
        .info()
        .and_then(|i| i.identity)
        .filter(|&published| published != known.identity)
        .map(|published| {
            format!(
                "content identity {} is not the published release's {}",
                &known.identity[..12.min(known.identity.len())],
                &published[..12]
            )
        });
    let note = match &unpublished {
        Some(why) => format!("UNPUBLISHED CONTENT ({why}): {note}"),
        None => note,
    };
    let memo_path = ctx.memo_path.clone();
    Ok(Resolved {
        name,
        version: provider.version(),
        kind: provider.kind(),
        params: canonical,
        identity: known.identity,
        synthetic: false,
        unpublished,
        note,
        shape: known.shape,
        loader: Arc::new(move || {
            let (id, data) = load()?;
            if id != expected {
                // Same paths, sizes and times, other content: the record is wrong, and
                // keeping it would fail every later run the same way. Drop it, so that the
                // next plan identifies the data as it is now (and keys its cells by that).
                let dropped = forget(&memo_path, &stamp);
                return Err(DataError::Inconsistent {
                    path: at.clone(),
                    message: format!(
                        "{name} changed since its identity was recorded (same sizes and \
                         modification times, other content: now {}, recorded {}); {}",
                        &id[..12.min(id.len())],
                        &expected[..12.min(expected.len())],
                        if dropped {
                            "the record is dropped: run again to identify the data anew and \
                             compute its cells (the cells of the old content are kept)"
                                .to_string()
                        } else {
                            format!(
                                "delete {} and run again to identify the data anew",
                                memo_path.display()
                            )
                        }
                    ),
                });
            }
            Ok(Arc::new(data))
        }),
    })
}

/// Remove the memo entry `stamp` from the memo file at `path`; `true` when the file no longer
/// holds it.
fn forget(path: &Path, stamp: &str) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return true;
    };
    let Ok(mut memo) = serde_json::from_slice::<BTreeMap<String, Known>>(&bytes) else {
        return false;
    };
    if memo.remove(stamp).is_none() {
        return true;
    }
    serde_json::to_vec_pretty(&memo)
        .ok()
        .is_some_and(|b| crate::fsutil::write_atomic(path, &b).is_ok())
}

/// `|path:size:mtime` of every file (directories walked recursively, in sorted order).
pub fn file_stamp(paths: &[PathBuf]) -> Result<String, DataError> {
    let mut files = Vec::new();
    for p in paths {
        walk(p, &mut files)?;
    }
    let mut s = String::new();
    for p in files {
        let m = std::fs::metadata(&p).map_err(|e| DataError::io(&p, e))?;
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let abs = std::fs::canonicalize(&p).unwrap_or(p);
        s.push_str(&format!("|{}:{}:{}", abs.display(), m.len(), mtime));
    }
    Ok(s)
}

/// Every file under `p` (or `p` itself), sorted.
fn walk(p: &Path, out: &mut Vec<PathBuf>) -> Result<(), DataError> {
    if p.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| DataError::io(p, e))?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            walk(&e, out)?;
        }
    } else {
        out.push(p.to_path_buf());
    }
    Ok(())
}

/// Content identity of a directory tree (or file): SHA-256 over every file's path relative to
/// `root` and its bytes, in sorted order. Independent of where the tree lives.
pub fn tree_content_id(root: &Path) -> Result<String, DataError> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    let mut h = ContentHasher::new("tree/v1");
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = std::fs::read(&f).map_err(|e| DataError::io(&f, e))?;
        h.str(&rel).bytes(&bytes);
    }
    Ok(h.finish().0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorded resolution comes back as it was (loader aside), keyed by the requested
    /// provider and the spec's parameters; it refuses to load, names what to do, and is
    /// forgotten when its provider's version moved on.
    #[test]
    fn a_recorded_resolution_is_recalled_by_request_and_refuses_to_load() {
        let rec = Recorded {
            name: "mnist".into(),
            version: crate::registry::provider("mnist").unwrap().version(),
            params: serde_json::json!({"l2_normalize": true}),
            identity: "ab".repeat(32),
            synthetic: false,
            unpublished: None,
            note: "real MNIST from $DYAD_DATA_DIR/mnist".into(),
            shape: Some(Shape {
                rows: 70_000,
                dim: 784,
                ..Shape::default()
            }),
        };
        let entry = |params: serde_json::Value, resolved: Recorded| RecordedEntry {
            requested: "mnist".into(),
            params,
            resolved,
        };
        let mut old = rec.clone();
        old.version += 1;
        let dir = tempfile::tempdir().unwrap();
        let ctx = DataContext::new(dir.path().join("none"), dir.path().join("cache")).recalling([
            entry(serde_json::json!({}), rec.clone()),
            entry(serde_json::json!({"train_images": 5}), old),
        ]);
        assert!(
            ctx.recall("mnist", &serde_json::json!({"test_images": 5}))
                .is_none()
        );
        assert!(
            ctx.recall("mnist-standin", &serde_json::json!({}))
                .is_none()
        );
        assert!(
            ctx.recall("mnist", &serde_json::json!({"train_images": 5}))
                .is_none(),
            "a record of another provider version"
        );
        let r = ctx.recall("mnist", &serde_json::json!({})).unwrap();
        assert_eq!(Recorded::of(&r), rec);
        assert_eq!((r.name, r.kind), ("mnist", kinds::LABELLED));
        let err = (r.loader)().err().unwrap().to_string();
        assert!(
            err.contains("not here") && err.contains("$DYAD_DATA_DIR"),
            "{err}"
        );
        assert_eq!(ctx.recalled(), (1, vec!["mnist".to_string()]));
        // Without records nothing is recalled.
        let plain = DataContext::new(dir.path().join("none"), dir.path().join("cache"));
        assert!(plain.recall("mnist", &serde_json::json!({})).is_none());
    }

    /// A stored value: its bytes, and how often it was computed.
    #[derive(Debug, PartialEq)]
    struct Bytes(Vec<u8>);
    impl Stored for Bytes {
        fn encode(&self) -> Vec<u8> {
            self.0.clone()
        }
        fn decode(bytes: &[u8]) -> Result<Self, String> {
            if bytes.first() == Some(&0xff) {
                return Err("starts with 0xff".into());
            }
            Ok(Bytes(bytes.to_vec()))
        }
    }

    #[test]
    fn derived_values_are_stored_read_back_and_recomputed_when_damaged() {
        let tmp = tempfile::tempdir().unwrap();
        let store = DerivedStore {
            dir: tmp.path().join("derived"),
            data: "demo|{}|abc".into(),
        };
        let computed = std::sync::atomic::AtomicUsize::new(0);
        let get = |store: Option<&DerivedStore>, key: &str, v: &[u8]| {
            let data = Data::new("demo", ());
            if let Some(s) = store {
                data.keep_derived_in(s.clone());
            }
            let r = data
                .derived_stored(key, || {
                    computed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(Bytes(v.to_vec()))
                })
                .unwrap();
            r.0.clone()
        };
        let count = || computed.load(std::sync::atomic::Ordering::SeqCst);
        // Without a store: computed in every process (here: every new Data).
        assert_eq!(get(None, "k", b"one"), b"one");
        assert_eq!(get(None, "k", b"one"), b"one");
        assert_eq!(count(), 2);
        // With one: computed once, then read back by another Data (another process).
        assert_eq!(get(Some(&store), "k", b"one"), b"one");
        assert_eq!(get(Some(&store), "k", b"two"), b"one");
        assert_eq!(count(), 3);
        // Another key, or the same key of other data, is computed.
        assert_eq!(get(Some(&store), "k2", b"two"), b"two");
        let other = DerivedStore {
            data: "demo|{}|abd".into(),
            ..store.clone()
        };
        assert_eq!(get(Some(&other), "k", b"three"), b"three");
        assert_eq!(count(), 5);
        // Damaged (a byte changed, cut short, not ours, not decodable): an error naming the
        // file; the value is computed again and stored whole.
        let path = store.path("k");
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        flipped[STORED_MAGIC.len()] ^= 1;
        let mut undecodable = STORED_MAGIC.to_vec();
        undecodable.push(0xff);
        use sha2::Digest;
        let sum = sha2::Sha256::digest(&undecodable);
        undecodable.extend_from_slice(&sum);
        for (bad, why) in [
            (flipped, "SHA-256 does not match"),
            (good[..good.len() - 1].to_vec(), "SHA-256 does not match"),
            (b"hello".to_vec(), "not a stored derived value"),
            (undecodable, "starts with 0xff"),
        ] {
            std::fs::write(&path, &bad).unwrap();
            let e = store.read::<Bytes>("k").unwrap_err();
            assert!(
                e.contains(why) && e.contains(&path.display().to_string()),
                "{e}"
            );
            let before = count();
            assert_eq!(get(Some(&store), "k", b"four"), b"four");
            assert_eq!(count(), before + 1);
            assert_eq!(
                store.read::<Bytes>("k").unwrap(),
                Some(Bytes(b"four".to_vec()))
            );
            std::fs::write(&path, &good).unwrap();
        }
        assert_eq!(store.read::<Bytes>("absent").unwrap(), None);
    }

    #[test]
    fn the_memo_tells_where_real_data_was_read_before() {
        let tmp = tempfile::tempdir().unwrap();
        let (mirror, gone, cache) = (
            tmp.path().join("mirror"),
            tmp.path().join("gone"),
            tmp.path().join("cache"),
        );
        std::fs::create_dir_all(mirror.join("mnist")).unwrap();
        std::fs::create_dir_all(&cache).unwrap();
        let file = mirror.join("mnist/train.gz");
        std::fs::write(&file, b"x").unwrap();
        let stamp = file_stamp(std::slice::from_ref(&file)).unwrap();
        let root = std::fs::canonicalize(&mirror).unwrap();
        let known = serde_json::json!({ "identity": "abc" });
        let memo = serde_json::json!({
            format!("mnist|{{\"a\":1}}{stamp}"): known,
            format!("mnist|{{\"a\":2}}{stamp}"): known,
            format!("mnist|{{}}|{}/mnist/train.gz:1:2", gone.display()): known,
            format!("prostate|{{}}{stamp}"): known,
        });
        std::fs::write(cache.join("data-identity.json"), memo.to_string()).unwrap();
        // From the default directory: the mirror, once (two parameter sets, one place); not the
        // directory whose files are gone, not for another data set.
        let ctx = DataContext::new(tmp.path().join("datasets"), cache.clone());
        assert_eq!(ctx.seen_elsewhere("mnist", "mnist"), vec![root.clone()]);
        assert!(ctx.seen_elsewhere("prostate", "prostate").is_empty());
        assert!(ctx.seen_elsewhere("svhn", "svhn").is_empty());
        // From the mirror itself: nothing elsewhere.
        let ctx = DataContext::new(mirror, cache);
        assert!(ctx.seen_elsewhere("mnist", "mnist").is_empty());
    }

    #[test]
    fn data_is_read_by_type() {
        let d = Data::new(kinds::LABELLED, 7u32);
        assert_eq!(d.kind(), kinds::LABELLED);
        assert_eq!(d.get::<u32>(), Some(&7));
        assert!(d.get::<String>().is_none());
        assert!(d.truth::<u8>().is_none());
        let d = d.with_truth(3u8);
        assert_eq!(d.truth::<u8>(), Some(&3));
    }

    #[test]
    fn derived_values_are_computed_outside_the_callers_pool() {
        let d = Data::new(kinds::LABELLED, 7u32);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (caller, computer) = pool.install(|| {
            let computer = d
                .derived("where", || Ok(rayon::current_thread_index()))
                .unwrap();
            (rayon::current_thread_index(), *computer)
        });
        assert_eq!(caller, Some(0));
        assert_eq!(computer, None, "computed on a worker of the caller's pool");
        let panicked = std::panic::catch_unwind(|| outside_pools(|| panic!("inner")));
        assert!(panicked.is_err());
    }

    #[test]
    fn derived_values_are_computed_once_even_by_concurrent_callers() {
        let d = Data::new(kinds::LABELLED, 7u32);
        let calls = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let v = d
                        .derived("double", || {
                            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(2 * d.get::<u32>().unwrap())
                        })
                        .unwrap();
                    assert_eq!(*v, 14);
                });
            }
        });
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Another key is another value; a failure is remembered; a wrong type is an error.
        assert!(d.derived::<u32>("bad", || Err("no".into())).is_err());
        assert_eq!(
            d.derived::<u32>("bad", || Ok(1)).unwrap_err(),
            "no",
            "the error is remembered"
        );
        assert!(d.derived::<String>("double", || Ok(String::new())).is_err());
    }

    #[test]
    fn paths_are_shown_relative_to_the_data_directory() {
        let ctx = DataContext::new(PathBuf::from("/data/x"), PathBuf::from("/tmp/c"));
        assert_eq!(ctx.show(Path::new("/data/x/mnist")), "$DYAD_DATA_DIR/mnist");
        assert_eq!(ctx.show(Path::new("/data/x")), "$DYAD_DATA_DIR");
        assert_eq!(ctx.show(Path::new("/elsewhere/f")), "/elsewhere/f");
        assert_eq!(ctx.memo_path(), Path::new("/tmp/c/data-identity.json"));
    }

    #[test]
    fn standin_tables_split_from_real_parameters() {
        let p = serde_json::json!({"subset": "c10", "standin": {"dim": 50}});
        let (own, s) = split_standin("x", &p).unwrap();
        assert_eq!(own, serde_json::json!({"subset": "c10"}));
        assert_eq!(s, serde_json::json!({"dim": 50}));
        let bad = serde_json::json!({"standin": 3});
        assert!(split_standin("x", &bad).is_err());
        let (own, s) = split_standin("x", &serde_json::Value::Null).unwrap();
        assert_eq!((own, s), (serde_json::json!({}), serde_json::json!({})));
    }

    #[test]
    fn parts_are_complete_absent_or_an_error_naming_the_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let parts = vec![
            vec!["a.gz".to_string(), "a".to_string()],
            vec!["b".to_string()],
        ];
        assert_eq!(
            locate_parts("x", dir.path(), &parts, "").unwrap(),
            Presence::Absent
        );
        std::fs::write(dir.path().join("a"), b"1").unwrap();
        let e = locate_parts("x", dir.path(), &parts, "get it").unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, DataError::Incomplete { .. }), "{msg}");
        assert!(
            msg.contains("found a") && msg.contains("missing b"),
            "{msg}"
        );
        std::fs::write(dir.path().join("b"), b"2").unwrap();
        assert_eq!(
            locate_parts("x", dir.path(), &parts, "").unwrap(),
            Presence::Complete(vec![dir.path().join("a"), dir.path().join("b")])
        );
    }

    #[test]
    fn shape_counts_classes_per_official_part() {
        use dyad_core::{LabeledSet, Partition};
        let rows = vec![vec![1.0]; 5];
        let mut s = LabeledSet::from_dense_rows(&rows, vec![0, 0, 1, 1, 1], 2);
        s.partition = Some(vec![
            Partition::Train,
            Partition::Test,
            Partition::Train,
            Partition::Train,
            Partition::Test,
        ]);
        let sh = Shape::of_labelled(&s);
        assert_eq!(sh.rows, 5);
        assert_eq!(sh.class_sizes, Some(vec![2, 3]));
        assert_eq!(sh.train_class_sizes, Some(vec![1, 2]));
        assert_eq!(sh.test_class_sizes, Some(vec![1, 1]));
    }
}
