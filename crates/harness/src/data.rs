//! Data-set providers: turn a spec's `[[datasets]]` entry into a content identity (without
//! loading the data whenever it can) and a loader. Real data is read from the data directory
//! (`$DYAD_DATA_DIR`, default `datasets/`); when it is absent the provider falls back to its
//! seeded synthetic stand-in and says so.

use crate::cache::write_atomic;
use crate::registry::fingerprint;
use dyad_core::{LabeledSet, derive_seed};
use dyad_datasets::mnist::{self, Mnist};
use dyad_datasets::registry::DatasetInfo;
use dyad_datasets::synthetic::caltech::CaltechStandin;
use dyad_datasets::synthetic::mnist::MnistStandin;
use dyad_datasets::{ContentHasher, DataError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where data lives and what is known about it.
pub struct DataContext {
    pub data_dir: PathBuf,
    memo_path: PathBuf,
    memo: Mutex<BTreeMap<String, String>>,
}

impl DataContext {
    /// `memo_path` remembers content identities of real files by (path, size, mtime), so that
    /// a fully cached experiment never has to read its data again.
    pub fn new(data_dir: PathBuf, memo_path: PathBuf) -> Self {
        let memo = std::fs::read(&memo_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Self {
            data_dir,
            memo_path,
            memo: Mutex::new(memo),
        }
    }

    /// The data directory named by `$DYAD_DATA_DIR`, else `datasets/`.
    pub fn default_data_dir() -> PathBuf {
        std::env::var_os("DYAD_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("datasets"))
    }

    fn memo_get(&self, key: &str) -> Option<String> {
        self.memo.lock().unwrap().get(key).cloned()
    }

    fn memo_put(&self, key: String, id: String) {
        let mut m = self.memo.lock().unwrap();
        m.insert(key, id);
        if let Ok(bytes) = serde_json::to_vec_pretty(&*m) {
            // Losing the memo only costs a re-read; never fail a run over it.
            let _ = write_atomic(&self.memo_path, &bytes);
        }
    }
}

/// Loads the data of a resolved data set.
pub type Loader = Arc<dyn Fn() -> Result<Arc<LabeledSet>, DataError> + Send + Sync>;

/// A data set instance ready to be hashed into cell keys and loaded on demand.
#[derive(Clone)]
pub struct Resolved {
    /// The provider actually used (a stand-in when the requested data is absent).
    pub name: &'static str,
    /// Canonical parameters of that provider.
    pub params: serde_json::Value,
    /// Content identity of the data.
    pub identity: String,
    /// Fingerprint of the code that reads or generates it.
    pub code: String,
    pub synthetic: bool,
    /// One line for tables and the report: what was used and why.
    pub note: String,
    pub loader: Loader,
}

/// A data set name the specs can use.
pub struct Provider {
    pub name: &'static str,
    pub description: &'static str,
    /// Whether this provider itself generates synthetic data.
    pub synthetic: bool,
    /// The stand-in used when the real data is absent.
    pub standin: Option<&'static str>,
    pub sources: &'static [&'static str],
    pub resolve: fn(&DataContext, &toml::Table) -> Result<Resolved, DataError>,
}

pub static PROVIDERS: &[Provider] = &[
    Provider {
        name: "caltech256",
        description: "Caltech-256 class subsets c10/c20/c50/c249 (Griffin et al. 2007), OASIS features",
        synthetic: false,
        standin: Some("caltech256-standin"),
        sources: &["datasets/src/synthetic/caltech.rs"],
        resolve: resolve_caltech,
    },
    Provider {
        name: "caltech256-standin",
        description: "seeded synthetic bag-of-visual-words stand-in for Caltech-256 (OASIS spec §12.1)",
        synthetic: true,
        standin: None,
        sources: &["datasets/src/synthetic/caltech.rs"],
        resolve: resolve_caltech_standin,
    },
    Provider {
        name: "mnist",
        description: "MNIST handwritten digits, IDX files (LeCun et al. 1998), classes as labels",
        synthetic: false,
        standin: Some("mnist-standin"),
        sources: &["datasets/src/mnist.rs", "datasets/src/formats/"],
        resolve: resolve_mnist,
    },
    Provider {
        name: "mnist-standin",
        description: "seeded synthetic stroke-glyph stand-in with MNIST's shape",
        synthetic: true,
        standin: None,
        sources: &["datasets/src/synthetic/mnist.rs", "datasets/src/mnist.rs"],
        resolve: resolve_mnist_standin,
    },
];

pub fn provider(name: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.name == name)
}

fn param_err(name: &str, e: impl std::fmt::Display) -> DataError {
    DataError::Param(format!("{name}: {}", e.to_string().trim()))
}

/// Identity of generated data: what generated it, with which parameters, by which code.
fn synthetic_identity(name: &str, params: &serde_json::Value, code: &str) -> String {
    let mut h = ContentHasher::new("synthetic/v1");
    h.str(name).str(&params.to_string()).str(code);
    h.finish().0
}

fn synthetic<T: Serialize>(
    name: &'static str,
    config: &T,
    note: String,
    generate: impl Fn() -> Result<LabeledSet, DataError> + Send + Sync + 'static,
) -> Result<Resolved, DataError> {
    let p = provider(name).expect("registered");
    let params = serde_json::to_value(config).map_err(|e| param_err(name, e))?;
    let code = fingerprint(p.sources);
    Ok(Resolved {
        name,
        identity: synthetic_identity(name, &params, &code),
        params,
        code,
        synthetic: true,
        note,
        loader: Arc::new(move || generate().map(Arc::new)),
    })
}

/// The class count of a Caltech-256 subset name.
fn subset_classes(subset: &str) -> Option<usize> {
    match subset {
        "c10" => Some(10),
        "c20" => Some(20),
        "c50" => Some(50),
        "c249" => Some(249),
        _ => None,
    }
}

fn resolve_caltech(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let subset = params
        .get("subset")
        .and_then(toml::Value::as_str)
        .ok_or_else(|| {
            param_err(
                "caltech256",
                "needs `subset` = \"c10\" | \"c20\" | \"c50\" | \"c249\"",
            )
        })?;
    if let Some(k) = params.keys().find(|k| *k != "subset") {
        return Err(param_err("caltech256", format!("unknown parameter `{k}`")));
    }
    let images = ["caltech256/256_ObjectCategories", "256_ObjectCategories"]
        .iter()
        .map(|p| ctx.data_dir.join(p))
        .find(|p| p.is_dir());
    let why = match images {
        Some(dir) => format!(
            "real images found at {} but the Caltech-256 feature pipeline is not implemented yet",
            dir.display()
        ),
        None => format!(
            "256_ObjectCategories not found in {}",
            ctx.data_dir.display()
        ),
    };
    let mut r = resolve_caltech_standin(ctx, params)?;
    r.note = format!("SYNTHETIC stand-in for Caltech-256 {subset} ({why})");
    Ok(r)
}

fn resolve_caltech_standin(_: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let mut t = params.clone();
    if let Some(s) = t.remove("subset") {
        let s = s
            .as_str()
            .ok_or_else(|| param_err("caltech256-standin", "`subset` must be a string"))?
            .to_string();
        let classes = subset_classes(&s)
            .ok_or_else(|| param_err("caltech256-standin", format!("unknown subset `{s}`")))?;
        t.entry("classes")
            .or_insert(toml::Value::Integer(classes as i64));
        let seed = derive_seed(0, &format!("caltech256-standin/{s}")) >> 1;
        t.entry("seed").or_insert(toml::Value::Integer(seed as i64));
    }
    let config = CaltechStandin::deserialize(toml::Value::Table(t))
        .map_err(|e| param_err("caltech256-standin", e))?;
    let note = format!(
        "SYNTHETIC Caltech-256 stand-in: {} classes x {} images, d = {}",
        config.classes, config.per_class, config.dim
    );
    let c = config.clone();
    synthetic("caltech256-standin", &config, note, move || c.generate())
}

use serde::Deserialize as _;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MnistParams {
    /// Scale every image to unit Euclidean norm (so the dot product ranks as distance).
    #[serde(default = "yes")]
    l2_normalize: bool,
}

fn yes() -> bool {
    true
}

fn file_stamp(paths: &[PathBuf]) -> Result<String, DataError> {
    let mut s = String::from("mnist");
    for p in paths {
        let m = std::fs::metadata(p).map_err(|e| DataError::Io {
            path: p.clone(),
            source: e,
        })?;
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        s.push_str(&format!("|{}:{}:{}", abs.display(), m.len(), mtime));
    }
    Ok(s)
}

/// Where MNIST lives: `<data dir>/mnist/`.
pub fn mnist_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mnist")
}

fn resolve_mnist(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let config = MnistParams::deserialize(toml::Value::Table(params.clone()))
        .map_err(|e| param_err("mnist", e))?;
    let dir = mnist_dir(&ctx.data_dir);
    let files = match mnist::locate(&dir) {
        Ok(f) => f,
        Err(DataError::Missing { .. }) => {
            let mut r = resolve_mnist_standin(ctx, &toml::Table::new())?;
            r.note = format!(
                "SYNTHETIC stand-in for MNIST (IDX files not found in {})",
                dir.display()
            );
            return Ok(r);
        }
        Err(e) => return Err(e),
    };
    let stamp = file_stamp(&files)?;
    let (identity, preloaded) = match ctx.memo_get(&stamp) {
        Some(id) => (id, None),
        None => {
            let m = Mnist::load(&dir)?;
            let id = m.content_id().0;
            ctx.memo_put(stamp, id.clone());
            (id, Some(Arc::new(m.to_labeled_set(config.l2_normalize))))
        }
    };
    let params_json = serde_json::to_value(&config).map_err(|e| param_err("mnist", e))?;
    let expected = identity.clone();
    let normalize = config.l2_normalize;
    Ok(Resolved {
        name: "mnist",
        params: params_json,
        note: format!("real MNIST from {}", dir.display()),
        identity,
        code: fingerprint(provider("mnist").expect("registered").sources),
        synthetic: false,
        loader: Arc::new(move || {
            if let Some(s) = &preloaded {
                return Ok(s.clone());
            }
            let m = Mnist::load(&dir)?;
            if m.content_id().0 != expected {
                return Err(DataError::Inconsistent {
                    path: dir.clone(),
                    message: "MNIST content changed since its identity was recorded; rerun".into(),
                });
            }
            Ok(Arc::new(m.to_labeled_set(normalize)))
        }),
    })
}

fn resolve_mnist_standin(_: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let mut t = params.clone();
    let normalize = match t.remove("l2_normalize") {
        Some(v) => v
            .as_bool()
            .ok_or_else(|| param_err("mnist-standin", "`l2_normalize` must be a boolean"))?,
        None => true,
    };
    let config = MnistStandin::deserialize(toml::Value::Table(t))
        .map_err(|e| param_err("mnist-standin", e))?;
    let note = format!(
        "SYNTHETIC MNIST stand-in: {} train + {} test stroke glyphs",
        config.train, config.test
    );
    #[derive(serde::Serialize)]
    struct Canon<'a> {
        generator: &'a MnistStandin,
        l2_normalize: bool,
    }
    let canon = Canon {
        generator: &config,
        l2_normalize: normalize,
    };
    let c = config.clone();
    synthetic("mnist-standin", &canon, note, move || {
        Ok(c.generate()?.to_labeled_set(normalize))
    })
}

/// Which files of a real data set are present in the data directory.
pub fn presence(info: &DatasetInfo, data_dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dir = data_dir.join(info.dir);
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for s in info.sources {
        let file = dir.join(s.file);
        // Some releases are read in another packing too (plain or gzip; an unpacked tree).
        let alternatives = match info.name {
            "mnist" => mnist::locate(&dir).is_ok(),
            "caltech256" => dir.join("256_ObjectCategories").is_dir(),
            _ => false,
        };
        if file.is_file() || alternatives {
            present.push(file);
        } else {
            missing.push(file);
        }
    }
    (present, missing)
}

/// One line for `dyad data list`.
pub fn presence_line(info: &DatasetInfo, data_dir: &Path) -> String {
    let (present, missing) = presence(info, data_dir);
    match (present.len(), missing.len()) {
        (_, 0) if !present.is_empty() => {
            format!("present in {}", data_dir.join(info.dir).display())
        }
        (0, _) => format!("absent: using {}", info.standin),
        (p, m) => format!(
            "incomplete ({p} of {} files): using {}",
            p + m,
            info.standin
        ),
    }
}

/// Check a real data set: published checksums of its files, then (where dyad has a loader)
/// the content identity of the decoded data.
pub fn verify(info: &DatasetInfo, data_dir: &Path) -> Result<Vec<String>, DataError> {
    let dir = data_dir.join(info.dir);
    let mut lines = Vec::new();
    let (_, missing) = presence(info, data_dir);
    if !missing.is_empty() {
        return Err(DataError::Missing {
            name: info.name.into(),
            dir,
            tried: missing
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            hint: info.manual.into(),
        });
    }
    for s in info.sources {
        let file = dir.join(s.file);
        match (s.sha256, file.is_file()) {
            (Some(want), true) => {
                let got = dyad_datasets::fetch::sha256_file(&file)?;
                if got != want {
                    return Err(DataError::Inconsistent {
                        path: file,
                        message: format!("sha256 {got} differs from the published {want}"),
                    });
                }
                lines.push(format!("{}: sha256 OK", s.file));
            }
            (None, true) => lines.push(format!("{}: present (no published checksum)", s.file)),
            (_, false) => lines.push(format!("{}: read in another packing", s.file)),
        }
    }
    let identity = match info.name {
        "mnist" => {
            let m = Mnist::load(&dir)?;
            lines.push(format!(
                "decoded: {} training and {} test images of {}x{}",
                m.train_labels.len(),
                m.test_labels.len(),
                m.rows,
                m.cols
            ));
            Some(m.content_id().0)
        }
        "20newsgroups-w1000" => {
            let path = dyad_datasets::newsgroups_mat::locate(&dir)?;
            let n = dyad_datasets::newsgroups_mat::NewsgroupsW1000::load(&path)?;
            lines.push(format!(
                "decoded: {} training and {} test documents over {} words, {} classes",
                n.train_labels.len(),
                n.test_labels.len(),
                n.n_words(),
                n.class_names.len()
            ));
            Some(n.content_id().0)
        }
        "prostate" => {
            let p = dyad_datasets::prostate::Prostate::load(&dir)?;
            lines.push(format!(
                "decoded: {} training and {} test samples of {} genes",
                p.train.n_samples(),
                p.test.n_samples(),
                p.train.n_genes()
            ));
            Some(p.content_id().0)
        }
        _ => None,
    };
    match (identity, info.identity) {
        (Some(got), Some(want)) if got != want => {
            return Err(DataError::Inconsistent {
                path: dir,
                message: format!("content identity {got} differs from the release's {want}"),
            });
        }
        (Some(got), _) => lines.push(format!("content identity {got} OK")),
        (None, _) => lines.push("content identity: no loader for this data set yet".into()),
    }
    Ok(lines)
}
