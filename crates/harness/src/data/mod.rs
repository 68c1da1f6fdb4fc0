//! Data-set providers: turn a spec's `[[datasets]]` entry into a content identity (without
//! loading the data whenever it can) and a loader. Real data is read from the data directory
//! (`$DYAD_DATA_DIR`, default `datasets/`); when it is absent the provider falls back to its
//! seeded synthetic stand-in and says so.

mod expression;
mod images;
mod text;

use crate::cache::write_atomic;
use crate::registry::fingerprint;
use dyad_core::LabeledSet;
use dyad_datasets::expression::ExpressionSet;
use dyad_datasets::imagenet::MultiLabelSet;
use dyad_datasets::mnist::{self, Mnist};
use dyad_datasets::registry::DatasetInfo;
use dyad_datasets::synthetic::mnist::MnistStandin;
use dyad_datasets::synthetic::web::{WebData, WebStandin};
use dyad_datasets::{ContentHasher, DataError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Where data lives and what is known about it.
pub struct DataContext {
    pub data_dir: PathBuf,
    /// Where derived data (e.g. extracted image features) is cached: `results/cache/`.
    pub cache_dir: PathBuf,
    memo_path: PathBuf,
    memo: Mutex<BTreeMap<String, String>>,
}

impl DataContext {
    /// `cache_dir/data-identity.json` remembers content identities of real files by (path,
    /// size, mtime), so that a fully cached experiment never has to read its data again.
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

/// Data as a provider delivers it.
#[derive(Debug, Clone)]
pub enum Data {
    /// Single-label examples (retrieval by class).
    Labeled(LabeledSet),
    /// Multi-label examples (ImageNet with its WordNet ancestors).
    MultiLabel(MultiLabelSet),
    /// A dense genes x samples expression matrix.
    Expression(ExpressionSet),
    /// The web-scale stand-in: labelled images (`set`) plus what only a generator knows —
    /// clicks and latent concepts — for the simulated human evaluation.
    Web(Box<WebData>),
}

impl Data {
    pub fn kind(&self) -> &'static str {
        match self {
            Data::Labeled(_) => "labelled examples",
            Data::MultiLabel(_) => "multi-label examples",
            Data::Expression(_) => "an expression matrix",
            Data::Web(_) => "web stand-in images",
        }
    }
}

/// Multi-label data as a ranking set: the primary label of each row is its leaf (per-class
/// splits draw per leaf), and two rows are relevant iff their label lists intersect.
pub fn multi_label_for_ranking(m: &MultiLabelSet) -> Result<LabeledSet, dyad_core::CoreError> {
    let names = (0..m.n_leaves).map(|l| format!("leaf{l}")).collect();
    LabeledSet::new(m.x.clone(), m.leaf.clone(), names, None)?.with_relevance(m.labels.clone())
}

/// Loads the data of a resolved data set.
pub type Loader = Arc<dyn Fn() -> Result<Arc<Data>, DataError> + Send + Sync>;

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
        description: "Caltech-256 class subsets c10/c20/c50/c249 (Griffin et al. 2007), OASIS image features",
        synthetic: false,
        standin: Some("caltech256-standin"),
        sources: &[
            "datasets/src/caltech.rs",
            "datasets/src/pipelines/images.rs",
            "datasets/src/pipelines/kmeans.rs",
            "datasets/src/formats/svmlight.rs",
        ],
        resolve: images::caltech,
    },
    Provider {
        name: "caltech256-standin",
        description: "seeded synthetic bag-of-visual-words stand-in for Caltech-256 (OASIS spec §12.1)",
        synthetic: true,
        standin: None,
        sources: &["datasets/src/synthetic/caltech.rs"],
        resolve: images::caltech_standin,
    },
    Provider {
        name: "web-standin",
        description: "seeded synthetic stand-in for the OASIS web-scale images (spec §12.2): d = 10,000, ~70 non-zeros, shared-query relevance, official partition, nested sizes",
        synthetic: true,
        standin: None,
        sources: &["datasets/src/synthetic/web.rs"],
        resolve: resolve_web_standin,
    },
    Provider {
        name: "mnist",
        description: "MNIST handwritten digits, IDX files (LeCun et al. 1998), classes as labels",
        synthetic: false,
        standin: Some("mnist-standin"),
        sources: &[
            "datasets/src/mnist.rs",
            "datasets/src/formats/idx.rs",
            "datasets/src/formats/mod.rs",
        ],
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
    Provider {
        name: "20newsgroups",
        description: "20 Newsgroups by-date (raw text) through the LORETA §5.1 text pipeline",
        synthetic: false,
        standin: Some("20newsgroups-standin"),
        sources: &[
            "datasets/src/formats/newsgroups.rs",
            "datasets/src/pipelines/text.rs",
        ],
        resolve: text::newsgroups,
    },
    Provider {
        name: "20newsgroups-w1000",
        description: "20 Newsgroups, 1000 stemmed-word counts (MAT v5), L2-normalised",
        synthetic: false,
        standin: Some("20newsgroups-standin"),
        sources: &[
            "datasets/src/newsgroups_mat.rs",
            "datasets/src/formats/mat.rs",
        ],
        resolve: text::newsgroups_w1000,
    },
    Provider {
        name: "20newsgroups-standin",
        description: "seeded SYN-20NG documents (LORETA spec §10.1) through the same text pipeline",
        synthetic: true,
        standin: None,
        sources: &[
            "datasets/src/synthetic/newsgroups.rs",
            "datasets/src/pipelines/text.rs",
        ],
        resolve: text::newsgroups_standin,
    },
    Provider {
        name: "imagenet-sbow",
        description: "ImageNet LSVRC-2010 SBOW features with WordNet ancestor labels (LORETA spec §5.2)",
        synthetic: false,
        standin: Some("imagenet-standin"),
        sources: &["datasets/src/imagenet.rs", "datasets/src/formats/mat.rs"],
        resolve: images::imagenet,
    },
    Provider {
        name: "imagenet-standin",
        description: "seeded SYN-ImageNet: 1000-leaf tree, hierarchical visual words (LORETA spec §10.2)",
        synthetic: true,
        standin: None,
        sources: &[
            "datasets/src/synthetic/imagenet.rs",
            "datasets/src/imagenet.rs",
        ],
        resolve: images::imagenet_standin,
    },
    Provider {
        name: "prostate",
        description: "prostate tumour vs normal expression, Singh et al. 2002 (Kent Ridge CSV), genes x samples",
        synthetic: false,
        standin: Some("prostate-standin"),
        sources: &[
            "datasets/src/prostate.rs",
            "datasets/src/formats/kentridge.rs",
            "datasets/src/expression.rs",
        ],
        resolve: expression::prostate,
    },
    Provider {
        name: "prostate-standin",
        description: "seeded prostate-like expression: sparse planted factors, 52/50 groups (Givens spec §10)",
        synthetic: true,
        standin: None,
        sources: &[
            "datasets/src/synthetic/expression.rs",
            "datasets/src/expression.rs",
        ],
        resolve: expression::prostate_standin,
    },
    Provider {
        name: "allen-brain",
        description: "Allen Human Brain Atlas microarray, six donors (per-donor CSVs), genes x samples",
        synthetic: false,
        standin: Some("allen-brain-standin"),
        sources: &[
            "datasets/src/formats/allen.rs",
            "datasets/src/expression.rs",
        ],
        resolve: expression::allen,
    },
    Provider {
        name: "allen-brain-standin",
        description: "seeded brain-like expression: six donors, sparse regional programs (Givens spec §10)",
        synthetic: true,
        standin: None,
        sources: &[
            "datasets/src/synthetic/expression.rs",
            "datasets/src/expression.rs",
        ],
        resolve: expression::allen_standin,
    },
];

pub fn provider(name: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.name == name)
}

fn param_err(name: &str, e: impl std::fmt::Display) -> DataError {
    DataError::Param(format!("{name}: {}", e.to_string().trim()))
}

/// Deserialize a provider's typed parameters (unknown keys are errors).
fn typed<T: DeserializeOwned>(name: &str, t: toml::Table) -> Result<T, DataError> {
    T::deserialize(toml::Value::Table(t)).map_err(|e| param_err(name, e))
}

/// Split a parameter table into the keys a real provider reads and its `standin` table.
fn split_standin(
    name: &str,
    params: &toml::Table,
) -> Result<(toml::Table, toml::Table), DataError> {
    let mut own = params.clone();
    let standin = match own.remove("standin") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(_) => {
            return Err(param_err(
                name,
                "`standin` must be a table of stand-in parameters",
            ));
        }
    };
    Ok((own, standin))
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
    generate: impl Fn() -> Result<Data, DataError> + Send + Sync + 'static,
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

/// A real data set whose content identity is remembered by the stamp (paths, sizes, mtimes)
/// of `files`: on a miss `identify` reads the data once to compute it. The loader checks the
/// identity again, so data changed behind the memo's back is an error, not a silent mix.
#[allow(clippy::too_many_arguments)]
fn real<P: Serialize>(
    ctx: &DataContext,
    name: &'static str,
    files: &[PathBuf],
    params: &P,
    note: String,
    identify: impl Fn() -> Result<String, DataError> + Send + Sync + 'static,
    load: impl Fn() -> Result<(String, Data), DataError> + Send + Sync + 'static,
) -> Result<Resolved, DataError> {
    let stamp = format!("{name}{}", file_stamp(files)?);
    let identity = match ctx.memo_get(&stamp) {
        Some(id) => id,
        None => {
            let id = identify()?;
            ctx.memo_put(stamp, id.clone());
            id
        }
    };
    let expected = identity.clone();
    let at = files.first().cloned().unwrap_or_default();
    Ok(Resolved {
        name,
        params: serde_json::to_value(params).map_err(|e| param_err(name, e))?,
        identity,
        code: fingerprint(provider(name).expect("registered").sources),
        synthetic: false,
        note,
        loader: Arc::new(move || {
            let (id, data) = load()?;
            if id != expected {
                return Err(DataError::Inconsistent {
                    path: at.clone(),
                    message: format!("{name} changed since its identity was recorded; run again"),
                });
            }
            Ok(Arc::new(data))
        }),
    })
}

/// Content identity of a directory tree (or file): SHA-256 over every file's path relative to
/// `root` and its bytes, in sorted order. Independent of where the tree lives.
fn tree_content_id(root: &Path) -> Result<String, DataError> {
    use std::io::Read;
    fn walk(p: &Path, out: &mut Vec<PathBuf>) -> Result<(), DataError> {
        if p.is_dir() {
            for e in std::fs::read_dir(p)
                .map_err(|e| DataError::io(p, e))?
                .flatten()
            {
                walk(&e.path(), out)?;
            }
        } else {
            out.push(p.to_path_buf());
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    let mut h = ContentHasher::new("tree/v1");
    let mut buf = vec![0u8; 1 << 16];
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = {
            let mut file = std::fs::File::open(&f).map_err(|e| DataError::io(&f, e))?;
            let mut all = Vec::new();
            loop {
                let n = file.read(&mut buf).map_err(|e| DataError::io(&f, e))?;
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&buf[..n]);
            }
            all
        };
        h.str(&rel).bytes(&bytes);
    }
    Ok(h.finish().0)
}

/// `|path:size:mtime` of every file (directories walked recursively, in sorted order).
fn file_stamp(paths: &[PathBuf]) -> Result<String, DataError> {
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

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MnistParams {
    /// Scale every image to unit Euclidean norm (so the dot product ranks as distance).
    #[serde(default = "yes")]
    l2_normalize: bool,
    /// Keep only this many training images: the first of a fixed random order, so smaller
    /// subsets are nested in larger ones (runtime scaling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    train_images: Option<usize>,
    /// Keep only this many test images (nested likewise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    test_images: Option<usize>,
}

/// The first `train` / `test` rows of each official part in a fixed random order (nested
/// for growing sizes), in ascending row order.
fn nested_parts(set: LabeledSet, train: Option<usize>, test: Option<usize>) -> LabeledSet {
    use dyad_core::Partition;
    use rand::seq::SliceRandom;
    if train.is_none() && test.is_none() {
        return set;
    }
    let part = set.partition.clone().unwrap_or_default();
    let mut keep = Vec::new();
    for (which, max) in [(Partition::Train, train), (Partition::Test, test)] {
        let mut rows: Vec<usize> = (0..set.n())
            .filter(|&i| part.get(i) == Some(&which))
            .collect();
        rows.shuffle(&mut dyad_core::seeded(dyad_core::derive_seed(
            0,
            "nested-subset",
        )));
        rows.truncate(max.unwrap_or(usize::MAX));
        keep.extend(rows);
    }
    keep.sort_unstable();
    set.select(&keep)
}

fn yes() -> bool {
    true
}

/// Where MNIST lives: `<data dir>/mnist/`.
pub fn mnist_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("mnist")
}

fn resolve_mnist(ctx: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let (own, standin) = split_standin("mnist", params)?;
    let config: MnistParams = typed("mnist", own)?;
    let dir = mnist_dir(&ctx.data_dir);
    let files = match mnist::locate(&dir) {
        Ok(f) => f,
        Err(DataError::Missing { .. }) => {
            let mut t = standin;
            t.insert(
                "l2_normalize".into(),
                toml::Value::Boolean(config.l2_normalize),
            );
            for (k, v) in [("train", config.train_images), ("test", config.test_images)] {
                if let Some(v) = v {
                    t.entry(k).or_insert(toml::Value::Integer(v as i64));
                }
            }
            let mut r = resolve_mnist_standin(ctx, &t)?;
            r.note = format!(
                "SYNTHETIC stand-in for MNIST (IDX files not found in {})",
                dir.display()
            );
            return Ok(r);
        }
        Err(e) => return Err(e),
    };
    let (normalize, train_n, test_n) =
        (config.l2_normalize, config.train_images, config.test_images);
    let (d1, d2) = (dir.clone(), dir.clone());
    real(
        ctx,
        "mnist",
        &files,
        &config,
        format!("real MNIST from {}", dir.display()),
        move || Ok(Mnist::load(&d1)?.content_id().0),
        move || {
            let m = Mnist::load(&d2)?;
            let set = nested_parts(m.to_labeled_set(normalize), train_n, test_n);
            Ok((m.content_id().0, Data::Labeled(set)))
        },
    )
}

/// The web-scale stand-in: its images as labelled examples (label = main concept), relevance
/// = sharing a query (θ = 0), with the generator's official train/test partition. Smaller
/// `images` give a prefix of a larger set (the runtime ladder of J-F4).
fn resolve_web_standin(_: &DataContext, params: &toml::Table) -> Result<Resolved, DataError> {
    let config: WebStandin = typed("web-standin", params.clone())?;
    let note = format!(
        "SYNTHETIC web-scale stand-in: {} images (d = {}), relevance = a shared query",
        config.images, config.dim
    );
    let c = config.clone();
    synthetic("web-standin", &config, note, move || {
        Ok(Data::Web(Box::new(c.generate()?)))
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
    let config: MnistStandin = typed("mnist-standin", t)?;
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
        Ok(Data::Labeled(c.generate()?.to_labeled_set(normalize)))
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
            "20newsgroups" => !text::newsgroups_files_in(&dir).is_empty(),
            "prostate" => dyad_datasets::prostate::locate(&dir).is_ok(),
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
        "20newsgroups" => {
            let c = dyad_datasets::formats::newsgroups::NewsCorpus::load(&dir)?;
            let (train, test) = c.split_sizes();
            lines.push(format!(
                "decoded: {train} training and {test} test messages in {} newsgroups",
                c.class_names.len()
            ));
            Some(c.content_id().0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_data_set_and_stand_in_has_a_provider() {
        for d in dyad_datasets::registry::DATASETS {
            let p = provider(d.name).unwrap_or_else(|| panic!("no provider for {}", d.name));
            assert!(!p.synthetic);
            let s =
                provider(d.standin).unwrap_or_else(|| panic!("no stand-in provider {}", d.standin));
            assert!(s.synthetic, "{} must be synthetic", s.name);
        }
    }

    #[test]
    fn absent_data_falls_back_to_marked_stand_ins_of_the_right_kind() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = DataContext::new(dir.path().join("none"), dir.path().join("cache"));
        let small: [(&str, &str); 7] = [
            ("web-standin", "images = 300\nidf_reference = 0"),
            (
                "caltech256",
                "subset = \"c10\"\nstandin = { per_class = 4, dim = 50 }",
            ),
            ("mnist", "standin = { train = 20, test = 10 }"),
            (
                "20newsgroups",
                "pipeline = { features = 50 }\nstandin = { docs_per_class = 6 }",
            ),
            (
                "imagenet-sbow",
                "standin = { leaves = 12, per_leaf = 3, dim = 40 }",
            ),
            (
                "prostate",
                "standin = { genes = 60, tumor = 5, normal = 4 }",
            ),
            (
                "allen-brain",
                "standin = { genes = 80, donor_sizes = [3, 4] }",
            ),
        ];
        for (name, params) in small {
            let t: toml::Table = toml::from_str(params).unwrap();
            let r = (provider(name).unwrap().resolve)(&ctx, &t)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                r.synthetic && r.note.starts_with("SYNTHETIC"),
                "{name}: {}",
                r.note
            );
            let data = (r.loader)().unwrap_or_else(|e| panic!("{name}: {e}"));
            let kind_ok = match (name, &*data) {
                ("imagenet-sbow", Data::MultiLabel(_)) => true,
                ("prostate" | "allen-brain", Data::Expression(_)) => true,
                ("web-standin", Data::Web(w)) => w.set.n() > 0,
                (_, Data::Labeled(s)) => s.n() > 0,
                _ => false,
            };
            assert!(kind_ok, "{name} gave {}", data.kind());
            // The identity is stable and does not need the data.
            let again = (provider(name).unwrap().resolve)(&ctx, &t).unwrap();
            assert_eq!(again.identity, r.identity);
        }
    }

    #[test]
    fn precomputed_caltech_features_are_read_from_svmlight() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data/caltech256")).unwrap();
        std::fs::write(
            dir.path().join("data/caltech256/c10.svm"),
            "1 1:0.5 3:1\n2 2:1\n1 1:1\n",
        )
        .unwrap();
        let ctx = DataContext::new(dir.path().join("data"), dir.path().join("cache"));
        let t: toml::Table =
            toml::from_str("subset = \"c10\"\nsvmlight = \"caltech256/c10.svm\"").unwrap();
        let r = (provider("caltech256").unwrap().resolve)(&ctx, &t).unwrap();
        assert!(!r.synthetic, "{}", r.note);
        let Data::Labeled(s) = &*(r.loader)().unwrap() else {
            panic!()
        };
        assert_eq!((s.n(), s.n_classes()), (3, 2));
        let t: toml::Table =
            toml::from_str("subset = \"c10\"\nsvmlight = \"missing.svm\"").unwrap();
        assert!(matches!(
            (provider("caltech256").unwrap().resolve)(&ctx, &t),
            Err(DataError::Missing { .. })
        ));
    }
}
