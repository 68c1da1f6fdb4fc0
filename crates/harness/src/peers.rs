//! Python peers: learners that live in Python, run as solvers of the harness and judged by
//! dyad's own evaluation code.
//!
//! A peer is a [`Ranker`] whose `fit` writes the training rows and everything the learner
//! needs to a temporary directory, runs `python peers/<script>.py DIR` in the peers' virtual
//! environment, and reads back the model the script wrote at each checkpoint, which it hands
//! to the observer as a dyad model ([`BilinearModel`] for `W`, [`Mahalanobis`] for `M`,
//! [`LowRankModel`] for the factors `A`, `B` of `W = A B^T`, which travel as two `d x k`
//! arrays, never as `d x d`) with the script's own training clock. The protocol (files, formats, the report) is documented
//! once, in `peers/dyadpeer.py`, the helper every script uses.
//!
//! Triplet learners receive the exact triplets dyad's OASIS would draw from the same
//! generator ([`TripletSampler`], one per step), so a peer and dyad's OASIS can be compared
//! step for step. A peer's canonical parameters (hashed into its cells' keys) hold the sha256
//! of its script, of the protocol helper and of the pinned requirements file: editing any of
//! them recomputes exactly the peer's cells.
//!
//! The virtual environment lives in `.venv-peers/` at the workspace root (or
//! `$DYAD_PEERS_VENV`); it is created from `peers/requirements.txt` on first use (or by
//! `just peers`, i.e. `dyad peers`) and rebuilt when the requirements change. Specs without
//! peers never touch Python.

pub mod npy;

use crate::registry::{BuiltSolver, typed};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Rng, Schedule, Scorer};
use dyad_givens::{Decomposition, MomentTensor, SparsePca, SparsePcaModel, TensorDecomposer};
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::{AlgoError, Ranker};
use dyad_loreta::LowRankModel;
use dyad_metric_baselines::metric::Mahalanobis;
use dyad_oasis::BilinearModel;
use ndarray::Array2;
use npy::Array;
use rand::Rng as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The version of the file protocol between dyad and a script (`dyadpeer.PROTOCOL`).
pub const PROTOCOL: u32 = 1;

/// The protocol helper every script imports.
pub const HELPER: &str = "dyadpeer.py";

/// The pinned requirements of the peers' environment.
pub const REQUIREMENTS: &str = "requirements.txt";

/// Environment variables that pin BLAS / OpenMP to one thread (the helper sets them too).
const ONE_THREAD: [&str; 5] = [
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
];

/// What a script's model matrix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerModel {
    /// `W` of the bilinear similarity `p^T W q` ([`BilinearModel`]).
    Bilinear,
    /// `M` of the Mahalanobis similarity `-(p-q)^T M (p-q)` ([`Mahalanobis`]).
    Mahalanobis,
    /// The factors `A`, `B` (`d x k` each) of the bilinear `W = A B^T` ([`LowRankModel`]).
    LowRank,
    /// Sparse loadings `Z` (`d x m`) of a data matrix ([`SparsePcaModel`]), with the script's
    /// own objective.
    Loadings,
    /// A symmetric decomposition `Σ_k λ_k v_k^{⊗3}` of a `K x K x K` tensor: the components
    /// (`K x r`) and the weights ([`Decomposition`]).
    Decomposition,
}

impl PeerModel {
    fn kind(self) -> &'static str {
        match self {
            PeerModel::Bilinear => "bilinear",
            PeerModel::Mahalanobis => "mahalanobis",
            PeerModel::LowRank => "lowrank",
            PeerModel::Loadings => "loadings",
            PeerModel::Decomposition => "decomposition",
        }
    }
}

/// A peer script and what it does.
#[derive(Debug)]
pub struct PeerScript {
    /// Registry name (`py:<...>`).
    pub name: &'static str,
    /// File name under `peers/`.
    pub script: &'static str,
    pub model: PeerModel,
    /// Whether it trains on dyad's triplets (`triplets.npy`, one per step).
    pub triplets: bool,
    /// Whether it reports models at the schedule's steps (else once, at step 0).
    pub iterative: bool,
}

/// `py:oasis-numpy`: plain NumPy/SciPy OASIS on dyad's triplets.
pub static OASIS_NUMPY: PeerScript = PeerScript {
    name: "py:oasis-numpy",
    script: "oasis_numpy.py",
    model: PeerModel::Bilinear,
    triplets: true,
    iterative: true,
};

/// `py:lmnn-metric-learn`: metric-learn's LMNN.
pub static LMNN_METRIC_LEARN: PeerScript = PeerScript {
    name: "py:lmnn-metric-learn",
    script: "lmnn_metric_learn.py",
    model: PeerModel::Mahalanobis,
    triplets: false,
    iterative: false,
};

/// `py:itml-metric-learn`: metric-learn's ITML (supervised: pairs drawn from the labels).
pub static ITML_METRIC_LEARN: PeerScript = PeerScript {
    name: "py:itml-metric-learn",
    script: "itml_metric_learn.py",
    model: PeerModel::Mahalanobis,
    triplets: false,
    iterative: false,
};

/// `py:loreta-numpy`: plain NumPy LORETA-1 (Algorithms 4 and 7) on dyad's triplets.
pub static LORETA_NUMPY: PeerScript = PeerScript {
    name: "py:loreta-numpy",
    script: "loreta_numpy.py",
    model: PeerModel::LowRank,
    triplets: true,
    iterative: true,
};

/// `py:loreta-pymanopt`: online Riemannian SGD on Pymanopt's fixed-rank manifold (its
/// projection and retraction) on dyad's triplets.
pub static LORETA_PYMANOPT: PeerScript = PeerScript {
    name: "py:loreta-pymanopt",
    script: "loreta_pymanopt.py",
    model: PeerModel::LowRank,
    triplets: true,
    iterative: true,
};

/// The parameters of one peer, as a spec writes them (typed, defaults filled in, checked).
pub trait PeerParams: Checked + Serialize + DeserializeOwned + 'static {
    const SCRIPT: &'static PeerScript;
}

/// `py:oasis-numpy`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OasisNumpyParams {
    /// Aggressiveness `C` of the PA-I step (as dyad's `oasis`).
    #[serde(default = "default_c")]
    pub c: f64,
}

fn default_c() -> f64 {
    0.1
}

impl Checked for OasisNumpyParams {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("c", self.c)
    }
}

impl PeerParams for OasisNumpyParams {
    const SCRIPT: &'static PeerScript = &OASIS_NUMPY;
}

/// The parameters of the LORETA peers (`py:loreta-numpy`, `py:loreta-pymanopt`): the rank
/// and the constant step size, with the defaults of dyad's `loreta`; both start from the
/// truncated identity `[I_k; 0]` (dyad's `init = "identity"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoretaPeerParams {
    /// Rank `k` of `W` (10, as dyad's `loreta`); must be below the number of features (the
    /// script checks it against the data).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Step size `eta` (0.1, as dyad's `loreta`).
    #[serde(default = "default_eta")]
    pub eta: f64,
}

fn default_rank() -> usize {
    10
}
fn default_eta() -> f64 {
    0.1
}

impl Checked for LoretaPeerParams {
    fn check(&self) -> Result<(), ParamError> {
        if self.rank == 0 {
            return Err(ParamError::new("rank", "must be at least 1, got 0"));
        }
        params::positive("eta", self.eta)
    }
}

/// `py:loreta-numpy`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LoretaNumpyParams(pub LoretaPeerParams);

impl Checked for LoretaNumpyParams {
    fn check(&self) -> Result<(), ParamError> {
        self.0.check()
    }
}

impl PeerParams for LoretaNumpyParams {
    const SCRIPT: &'static PeerScript = &LORETA_NUMPY;
}

/// `py:loreta-pymanopt`'s parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LoretaPymanoptParams(pub LoretaPeerParams);

impl Checked for LoretaPymanoptParams {
    fn check(&self) -> Result<(), ParamError> {
        self.0.check()
    }
}

impl PeerParams for LoretaPymanoptParams {
    const SCRIPT: &'static PeerScript = &LORETA_PYMANOPT;
}

/// `py:lmnn-metric-learn`'s parameters: metric-learn's `LMNN` names and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LmnnMetricLearnParams {
    #[serde(default = "default_init")]
    pub init: String,
    #[serde(default = "default_neighbors")]
    pub n_neighbors: u32,
    #[serde(default = "default_min_iter")]
    pub min_iter: u32,
    #[serde(default = "default_max_iter")]
    pub max_iter: u32,
    #[serde(default = "default_learn_rate")]
    pub learn_rate: f64,
    #[serde(default = "default_regularization")]
    pub regularization: f64,
    #[serde(default = "default_tol")]
    pub convergence_tol: f64,
}

fn default_init() -> String {
    "auto".into()
}
fn default_neighbors() -> u32 {
    3
}
fn default_min_iter() -> u32 {
    50
}
fn default_max_iter() -> u32 {
    1000
}
fn default_learn_rate() -> f64 {
    1e-7
}
fn default_regularization() -> f64 {
    0.5
}
fn default_tol() -> f64 {
    1e-3
}

impl Checked for LmnnMetricLearnParams {
    fn check(&self) -> Result<(), ParamError> {
        const INITS: [&str; 5] = ["auto", "pca", "identity", "random", "lda"];
        if !INITS.contains(&self.init.as_str()) {
            return Err(ParamError::new(
                "init",
                format!("must be one of {}, got {:?}", INITS.join(", "), self.init),
            ));
        }
        if self.n_neighbors == 0 {
            return Err(ParamError::new("n_neighbors", "must be at least 1, got 0"));
        }
        if self.max_iter < self.min_iter {
            return Err(ParamError::new(
                "max_iter",
                format!(
                    "must be at least min_iter ({}), got {}",
                    self.min_iter, self.max_iter
                ),
            ));
        }
        params::positive("learn_rate", self.learn_rate)?;
        params::open_interval("regularization", self.regularization, 0.0, 1.0)?;
        params::positive("convergence_tol", self.convergence_tol)
    }
}

impl PeerParams for LmnnMetricLearnParams {
    const SCRIPT: &'static PeerScript = &LMNN_METRIC_LEARN;
}

/// `py:itml-metric-learn`'s parameters: metric-learn's `ITML_Supervised` names and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItmlMetricLearnParams {
    #[serde(default = "default_gamma")]
    pub gamma: f64,
    #[serde(default = "default_max_iter")]
    pub max_iter: u32,
    #[serde(default = "default_tol")]
    pub tol: f64,
    /// Similar and dissimilar pairs drawn (none: metric-learn's `20 x classes^2`).
    #[serde(default)]
    pub n_constraints: Option<u32>,
    #[serde(default = "default_prior")]
    pub prior: String,
    /// `true`: the distance bounds are the 5th / 95th percentiles of *squared* distances of
    /// 1,000 random pairs of training rows, dyad's ITML definition (the authors' code),
    /// handed to metric-learn as `bounds`; `false` (default): metric-learn's own, percentiles
    /// of unsquared distances of all pairs.
    #[serde(default)]
    pub squared_bounds: bool,
}

fn default_gamma() -> f64 {
    1.0
}
fn default_prior() -> String {
    "identity".into()
}

impl Checked for ItmlMetricLearnParams {
    fn check(&self) -> Result<(), ParamError> {
        const PRIORS: [&str; 3] = ["identity", "covariance", "random"];
        params::positive("gamma", self.gamma)?;
        if self.max_iter == 0 {
            return Err(ParamError::new("max_iter", "must be at least 1, got 0"));
        }
        params::positive("tol", self.tol)?;
        if self.n_constraints == Some(0) {
            return Err(ParamError::new(
                "n_constraints",
                "must be at least 1, got 0",
            ));
        }
        if !PRIORS.contains(&self.prior.as_str()) {
            return Err(ParamError::new(
                "prior",
                format!("must be one of {}, got {:?}", PRIORS.join(", "), self.prior),
            ));
        }
        Ok(())
    }
}

impl PeerParams for ItmlMetricLearnParams {
    const SCRIPT: &'static PeerScript = &ITML_METRIC_LEARN;
}

/// Where the peers' scripts and their virtual environment are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerEnv {
    /// The directory of the scripts, the helper and `requirements.txt`.
    pub root: PathBuf,
    /// The virtual environment.
    pub venv: PathBuf,
}

/// One environment build at a time in this process (cells run in parallel).
static ENSURE: Mutex<()> = Mutex::new(());

/// The stamp the environment keeps of the requirements it was built from.
const STAMP: &str = "dyad-requirements.sha256";

impl PeerEnv {
    /// The scripts in `$DYAD_PEERS_DIR`, else `peers/` of the current directory (the
    /// workspace root), else `peers/` of the checkout this binary was built from; the
    /// environment in `$DYAD_PEERS_VENV`, else `.venv-peers/` beside the scripts' directory.
    pub fn locate() -> Self {
        let cwd = std::env::current_dir().unwrap_or_default();
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(|v| cwd.join(v))
        };
        let root = var("DYAD_PEERS_DIR").unwrap_or_else(|| {
            let here = cwd.join("peers");
            if here.join(HELPER).is_file() {
                here
            } else {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers")
            }
        });
        let root = root.canonicalize().unwrap_or(root);
        let venv = var("DYAD_PEERS_VENV").unwrap_or_else(|| {
            root.parent()
                .map_or_else(|| PathBuf::from(".venv-peers"), |p| p.join(".venv-peers"))
        });
        Self { root, venv }
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        if cfg!(windows) {
            self.venv.join("Scripts").join("python.exe")
        } else {
            self.venv.join("bin").join("python")
        }
    }

    pub fn requirements(&self) -> PathBuf {
        self.root.join(REQUIREMENTS)
    }

    /// Hex sha256 of a file under the scripts' directory.
    pub fn sha256(&self, file: &str) -> Result<String, String> {
        let path = self.root.join(file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(dyad_datasets::identity::hex(&Sha256::digest(&bytes)))
    }

    /// Whether the environment exists and was built from the current requirements.
    pub fn is_ready(&self) -> bool {
        let Ok(want) = self.sha256(REQUIREMENTS) else {
            return false;
        };
        self.python().is_file()
            && std::fs::read_to_string(self.venv.join(STAMP)).is_ok_and(|s| s.trim() == want)
    }

    /// Create (or rebuild, when the requirements changed) the environment; returns its
    /// interpreter. Needs `python3` (or `$DYAD_PEERS_PYTHON`) with the `venv` module, and
    /// PyPI.
    pub fn ensure(&self) -> Result<PathBuf, String> {
        let _one = ENSURE.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_ready() {
            return Ok(self.python());
        }
        let want = self.sha256(REQUIREMENTS)?;
        let base = std::env::var("DYAD_PEERS_PYTHON").unwrap_or_else(|_| "python3".into());
        let fix = "install CPython 3.11 with its venv module (Debian: apt-get install python3 \
                   python3-venv), then run `just peers`";
        eprintln!(
            "creating the Python peers' environment {} from {} (once)",
            self.venv.display(),
            self.requirements().display()
        );
        let venv = run_quiet(
            Command::new(&base)
                .args(["-m", "venv", "--clear"])
                .arg(&self.venv),
        )
        .map_err(|e| match e {
            RunError::Spawn(e) => {
                format!("Python peers need `{base}`, which cannot be run ({e}): {fix}")
            }
            RunError::Failed(tail) => format!(
                "`{base} -m venv {}` failed (is the venv module installed?): {fix}\n{tail}",
                self.venv.display()
            ),
        });
        venv?;
        run_quiet(
            Command::new(self.python())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--only-binary=:all:",
                    "-r",
                ])
                .arg(self.requirements()),
        )
        .map_err(|e| {
            let why = match e {
                RunError::Spawn(e) => e.to_string(),
                RunError::Failed(tail) => tail,
            };
            format!(
                "installing {} into {} failed (PyPI must be reachable; then run `just peers`):\n{why}",
                self.requirements().display(),
                self.venv.display()
            )
        })?;
        std::fs::write(self.venv.join(STAMP), format!("{want}\n"))
            .map_err(|e| format!("{}: {e}", self.venv.join(STAMP).display()))?;
        Ok(self.python())
    }
}

enum RunError {
    Spawn(std::io::Error),
    /// The tail of the output of a command that exited non-zero.
    Failed(String),
}

/// Run a command with its output captured; a failure carries the output's tail.
fn run_quiet(cmd: &mut Command) -> Result<(), RunError> {
    let out = cmd.stdin(Stdio::null()).output().map_err(RunError::Spawn)?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(RunError::Failed(format!(
        "({}) {}",
        out.status,
        tail(&text)
    )))
}

/// The last lines of a script's output (at most 20 lines, 4,000 characters).
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let t = lines[lines.len().saturating_sub(20)..].join("\n");
    match t.char_indices().rev().nth(3999) {
        Some((at, _)) => format!("...{}", &t[at..]),
        None => t,
    }
}

/// Build a peer from spec parameters with the peers located by [`PeerEnv::locate`] (the
/// registry's builder).
pub fn peer<P: PeerParams>(v: toml::Value) -> Result<BuiltSolver, ParamError> {
    peer_in::<P>(v, &PeerEnv::locate())
}

/// Build a peer whose scripts and environment are `env`.
pub fn peer_in<P: PeerParams>(v: toml::Value, env: &PeerEnv) -> Result<BuiltSolver, ParamError> {
    build::<P, dyn Ranker>(v, env, |p| Box::new(p))
}

/// Build a sparse-PCA peer from spec parameters (the registry's builder).
pub fn sparse_pca_peer<P: PeerParams>(v: toml::Value) -> Result<BuiltSolver, ParamError> {
    build::<P, dyn SparsePca>(v, &PeerEnv::locate(), |p| Box::new(PeerSparsePca(p)))
}

/// Build a tensor-decomposition peer from spec parameters (the registry's builder).
pub fn tensor_peer<P: PeerParams>(v: toml::Value) -> Result<BuiltSolver, ParamError> {
    build::<P, dyn TensorDecomposer>(v, &PeerEnv::locate(), |p| Box::new(PeerTensor(p)))
}

/// Typed, checked parameters, the peer keyed by its files, boxed as a member of family `F`.
fn build<P: PeerParams, F: ?Sized + Send + Sync + 'static>(
    v: toml::Value,
    env: &PeerEnv,
    wrap: impl FnOnce(PeerRanker) -> Box<F>,
) -> Result<BuiltSolver, ParamError> {
    let params: P = typed(v)?;
    params.check()?;
    let peer = PeerRanker::new(P::SCRIPT, env.clone(), &params)?;
    let canonical = peer.canonical();
    Ok(BuiltSolver::new(wrap(peer), canonical, P::SCRIPT.iterative))
}

fn external(msg: String) -> AlgoError {
    AlgoError::External(msg)
}

fn input_error(what: &str, e: std::io::Error) -> AlgoError {
    external(format!("writing peer input {what}: {e}"))
}

/// A model a script reported: a `d x d` matrix (`W` or `M`), or the factors `A`, `B`
/// (`d x k` each) of `W = A B^T`.
#[derive(Debug, Clone, PartialEq)]
pub enum PeerMatrix {
    Square(Array2<f64>),
    Factors(Array2<f64>, Array2<f64>),
    /// Loadings `Z` (`d x m`) and the script's objective.
    Columns(Array2<f64>, f64),
    /// Components (`K x r`) and their weights.
    Components(Array2<f64>, Vec<f64>),
}

impl PeerMatrix {
    /// The `d x d` matrix (`A B^T` for factors: `O(d^2)` memory, for tests and small `d`).
    pub fn dense(&self) -> Array2<f64> {
        match self {
            PeerMatrix::Square(m) => m.clone(),
            PeerMatrix::Factors(a, b) => a.dot(&b.t()),
            PeerMatrix::Columns(z, _) | PeerMatrix::Components(z, _) => z.clone(),
        }
    }
}

/// Hashes of the files a peer's results depend on besides its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct PeerFiles {
    script: &'static str,
    script_sha256: String,
    helper_sha256: String,
    requirements_sha256: String,
    protocol: u32,
}

/// A Python peer as a [`Ranker`].
#[derive(Debug, Clone)]
pub struct PeerRanker {
    script: &'static PeerScript,
    env: PeerEnv,
    /// Canonical parameters (defaults filled in), as the script receives them.
    params: serde_json::Value,
    files: PeerFiles,
}

impl PeerRanker {
    /// A peer running `script` with `params`; reads (hashes) the script, the helper and the
    /// requirements now, so a missing file is an error at plan time.
    pub fn new<P: Serialize>(
        script: &'static PeerScript,
        env: PeerEnv,
        params: &P,
    ) -> Result<Self, ParamError> {
        let files = Self::hash(script, &env).map_err(|e| ParamError::new("", e))?;
        let params =
            serde_json::to_value(params).map_err(|e| ParamError::new("", e.to_string()))?;
        Ok(Self {
            script,
            env,
            params,
            files,
        })
    }

    fn hash(script: &'static PeerScript, env: &PeerEnv) -> Result<PeerFiles, String> {
        Ok(PeerFiles {
            script: script.script,
            script_sha256: env.sha256(script.script)?,
            helper_sha256: env.sha256(HELPER)?,
            requirements_sha256: env.sha256(REQUIREMENTS)?,
            protocol: PROTOCOL,
        })
    }

    /// The parameters hashed into cell keys: the script's parameters and, under `peer`, the
    /// script's name, the sha256 of the script, the helper and the requirements, and the
    /// protocol version.
    pub fn canonical(&self) -> serde_json::Value {
        let mut v = self.params.clone();
        if let Some(map) = v.as_object_mut() {
            map.insert(
                "peer".into(),
                serde_json::to_value(&self.files).expect("serializable"),
            );
        }
        v
    }

    pub fn script_path(&self) -> PathBuf {
        self.env.root.join(self.script.script)
    }

    /// Run the script on `train` for `schedule` (drawing triplets and the seed from `rng`)
    /// and return what it reported as dense matrices: `(step, seconds, matrix)` per
    /// checkpoint, in order (a low-rank model as `A B^T`: tests and small `d` only).
    pub fn run_script(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
    ) -> Result<Vec<(u64, f64, Array2<f64>)>, AlgoError> {
        Ok(self
            .run_models(train, schedule, rng)?
            .into_iter()
            .map(|(step, seconds, m)| (step, seconds, m.dense()))
            .collect())
    }

    /// Run the script on `train` for `schedule` (drawing triplets and the seed from `rng`)
    /// and return what it reported: `(step, seconds, model)` per checkpoint, in order.
    pub fn run_models(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
    ) -> Result<Vec<(u64, f64, PeerMatrix)>, AlgoError> {
        let (n, d) = (train.n(), train.dim());
        let triplets = self.script.triplets;
        self.execute(schedule, rng, d, &mut |dir, steps, rng| {
            // Inputs: triplets first, then the seed, both from `rng` (the triplets are exactly
            // the ones dyad's OASIS draws from the same generator).
            let budget = *steps.last().expect("non-empty");
            if triplets {
                let sampler = TripletSampler::new(train)?;
                let n = usize::try_from(budget)
                    .ok()
                    .and_then(|b| b.checked_mul(3))
                    .ok_or_else(|| external(format!("{budget} triplets do not fit in memory")))?;
                let mut t = Vec::with_capacity(n);
                for _ in 0..budget {
                    let x = sampler.sample(rng);
                    t.extend_from_slice(&[x.query, x.positive, x.negative]);
                }
                npy::write_npy(
                    &dir.join("triplets.npy"),
                    &Array::indices(&[budget as usize, 3], &t),
                )
                .map_err(|e| input_error("triplets.npy", e))?;
            }
            let x = &train.x;
            let (mut data, mut indices, mut indptr) = (Vec::new(), Vec::new(), vec![0usize]);
            for row in x.outer_iterator() {
                data.extend_from_slice(row.data());
                indices.extend_from_slice(row.indices());
                indptr.push(indices.len());
            }
            npy::write_npz(
                &dir.join("x.npz"),
                &[
                    ("data", Array::f64(&[data.len()], &data)),
                    ("indices", Array::indices(&[indices.len()], &indices)),
                    ("indptr", Array::indices(&[indptr.len()], &indptr)),
                    ("shape", Array::i64(&[2], &[n as i64, d as i64])),
                    ("format", Array::bytes_scalar("csr")),
                ],
            )
            .map_err(|e| input_error("x.npz", e))?;
            let labels: Vec<i64> = train.labels.iter().map(|&l| i64::from(l)).collect();
            npy::write_npy(&dir.join("labels.npy"), &Array::i64(&[n], &labels))
                .map_err(|e| input_error("labels.npy", e))?;
            Ok(serde_json::json!({ "n": n, "dim": d }))
        })
    }

    /// Run the script on a dense data matrix `a` (`d x n`, written as `a.npy`; rows = the
    /// models' rows), for the families that learn from one (sparse PCA).
    pub fn run_on_matrix(
        &self,
        a: ndarray::ArrayView2<'_, f64>,
        schedule: &Schedule,
        rng: &mut Rng,
    ) -> Result<Vec<(u64, f64, PeerMatrix)>, AlgoError> {
        let (d, n) = a.dim();
        let values: Vec<f64> = a.iter().copied().collect();
        self.run_on_array(&[d, n], &values, schedule, rng)
    }

    /// Run the script on a dense array (row-major `values` of `shape`, written as `a.npy`;
    /// the models have `shape[0]` rows): a data matrix (`d x n`) or a tensor (`K x K x K`).
    pub fn run_on_array(
        &self,
        shape: &[usize],
        values: &[f64],
        schedule: &Schedule,
        rng: &mut Rng,
    ) -> Result<Vec<(u64, f64, PeerMatrix)>, AlgoError> {
        let rows = shape.first().copied().unwrap_or(0);
        self.execute(schedule, rng, rows, &mut |dir, _, _| {
            npy::write_npy(&dir.join("a.npy"), &Array::f64(shape, values))
                .map_err(|e| input_error("a.npy", e))?;
            Ok(serde_json::json!({ "dim": rows, "array": "a.npy", "shape": shape }))
        })
    }

    /// The common part of a run: check the files, write the inputs (`write` gets the
    /// directory, the steps and `rng`, and returns the data's entries of meta.json), then the
    /// checkpoints and meta.json (with a seed drawn from `rng` after the inputs), run the
    /// script and read its report (models of `rows` rows).
    #[allow(clippy::type_complexity)]
    fn execute(
        &self,
        schedule: &Schedule,
        rng: &mut Rng,
        rows: usize,
        write: &mut dyn FnMut(&Path, &[u64], &mut Rng) -> Result<serde_json::Value, AlgoError>,
    ) -> Result<Vec<(u64, f64, PeerMatrix)>, AlgoError> {
        let fail = external;
        let steps: Vec<u64> = if self.script.iterative {
            schedule.steps().to_vec()
        } else {
            vec![0]
        };
        if steps.is_empty() {
            return Ok(Vec::new());
        }
        let script = self.script_path();
        // The files the key hashed must be the files that run.
        let now = Self::hash(self.script, &self.env).map_err(fail)?;
        if now != self.files {
            return Err(fail(format!(
                "peer script {}: its files changed since the plan was made (rerun to rekey)",
                script.display()
            )));
        }
        let python = self.env.ensure().map_err(fail)?;
        let dir = tempfile::Builder::new()
            .prefix("dyad-peer-")
            .tempdir()
            .map_err(|e| fail(format!("temporary directory: {e}")))?;
        let data = write(dir.path(), &steps, rng)?;
        let seed: u64 = rng.random();
        let cps: Vec<i64> = steps.iter().map(|&s| s as i64).collect();
        npy::write_npy(
            &dir.path().join("checkpoints.npy"),
            &Array::i64(&[cps.len()], &cps),
        )
        .map_err(|e| input_error("checkpoints.npy", e))?;
        let mut meta = serde_json::json!({
            "protocol": PROTOCOL,
            "solver": self.script.name,
            "params": self.params,
            "seed": seed,
        });
        if let (Some(m), serde_json::Value::Object(extra)) = (meta.as_object_mut(), data) {
            m.extend(extra);
        }
        std::fs::write(dir.path().join("meta.json"), meta.to_string())
            .map_err(|e| input_error("meta.json", e))?;

        // Run, output captured in files (no pipe to fill).
        let (out_path, err_path) = (dir.path().join("stdout.txt"), dir.path().join("stderr.txt"));
        let file = |p: &Path| std::fs::File::create(p).map_err(|e| input_error("output file", e));
        let mut cmd = Command::new(&python);
        cmd.arg(&script)
            .arg(dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(file(&out_path)?)
            .stderr(file(&err_path)?)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONHASHSEED", "0");
        for v in ONE_THREAD {
            cmd.env(v, "1");
        }
        let status = cmd.status().map_err(|e| {
            fail(format!(
                "peer script {}: cannot run {}: {e}",
                script.display(),
                python.display()
            ))
        })?;
        if !status.success() {
            let err = std::fs::read_to_string(&err_path).unwrap_or_default();
            let text = if err.trim().is_empty() {
                std::fs::read_to_string(&out_path).unwrap_or_default()
            } else {
                err
            };
            return Err(fail(format!(
                "peer script {} failed ({status}):\n{}",
                script.display(),
                tail(&text)
            )));
        }
        self.read_report(dir.path(), &steps, rows)
            .map_err(|e| fail(format!("peer script {}: {e}", script.display())))
    }

    fn read_report(
        &self,
        dir: &Path,
        steps: &[u64],
        d: usize,
    ) -> Result<Vec<(u64, f64, PeerMatrix)>, String> {
        #[derive(Deserialize)]
        struct Report {
            protocol: u32,
            kind: String,
            checkpoints: Vec<Reported>,
        }
        #[derive(Deserialize)]
        struct Reported {
            step: u64,
            seconds: f64,
            file: String,
            /// `B` of a low-rank model (`file` is `A`).
            #[serde(default)]
            file_b: Option<String>,
            /// The script's own objective (loadings).
            #[serde(default)]
            objective: Option<f64>,
            /// The weights of a decomposition's components.
            #[serde(default)]
            weights: Option<Vec<f64>>,
        }
        let out = dir.join("out");
        let text = std::fs::read_to_string(out.join("report.json"))
            .map_err(|e| format!("exited 0 but wrote no out/report.json ({e})"))?;
        let report: Report =
            serde_json::from_str(&text).map_err(|e| format!("out/report.json: {e}"))?;
        if report.protocol != PROTOCOL {
            return Err(format!(
                "speaks protocol {}, dyad {PROTOCOL}",
                report.protocol
            ));
        }
        if report.kind != self.script.model.kind() {
            return Err(format!(
                "reported a {} model, expected {}",
                report.kind,
                self.script.model.kind()
            ));
        }
        let got: Vec<u64> = report.checkpoints.iter().map(|c| c.step).collect();
        if got != steps {
            return Err(format!(
                "reported steps {got:?}, the schedule asked for {steps:?}"
            ));
        }
        let mut models = Vec::with_capacity(steps.len());
        let mut last_seconds = 0.0;
        for c in report.checkpoints {
            if !(c.seconds.is_finite() && c.seconds >= last_seconds) {
                return Err(format!(
                    "step {}: clock {} s (must be finite and non-decreasing)",
                    c.step, c.seconds
                ));
            }
            last_seconds = c.seconds;
            // One matrix: `d` rows and `cols` columns (any positive number when `None`).
            let read = |file: &str, cols: Option<usize>| -> Result<Array2<f64>, String> {
                if file.contains(['/', '\\']) || file.starts_with('.') {
                    return Err(format!("step {}: model file {file:?} outside out/", c.step));
                }
                let path = out.join(file);
                let a = npy::read_f64(&path)?;
                let ok = match (a.shape.as_slice(), cols) {
                    ([r, c], Some(want)) => *r == d && *c == want,
                    ([r, c], None) => *r == d && *c > 0,
                    _ => false,
                };
                if !ok {
                    let want = cols.map_or("k".into(), |c| c.to_string());
                    return Err(format!(
                        "step {}: model {file} of shape {:?}, expected [{d}, {want}]",
                        c.step, a.shape
                    ));
                }
                if a.values.iter().any(|v| !v.is_finite()) {
                    return Err(format!(
                        "step {}: model {file} has non-finite entries",
                        c.step
                    ));
                }
                // Models are read one at a time and removed: the directory never holds
                // them all.
                let _ = std::fs::remove_file(&path);
                let cols = a.shape[1];
                Ok(Array2::from_shape_vec((d, cols), a.values).expect("shape checked"))
            };
            let m = match self.script.model {
                PeerModel::Bilinear | PeerModel::Mahalanobis => {
                    PeerMatrix::Square(read(&c.file, Some(d))?)
                }
                PeerModel::LowRank => {
                    let Some(file_b) = &c.file_b else {
                        return Err(format!(
                            "step {}: a low-rank model needs `file_b` (the factor B)",
                            c.step
                        ));
                    };
                    let a = read(&c.file, None)?;
                    let b = read(file_b, Some(a.ncols()))?;
                    PeerMatrix::Factors(a, b)
                }
                PeerModel::Loadings => {
                    let objective = c.objective.filter(|o| o.is_finite()).ok_or(format!(
                        "step {}: loadings need a finite `objective`",
                        c.step
                    ))?;
                    PeerMatrix::Columns(read(&c.file, None)?, objective)
                }
                PeerModel::Decomposition => {
                    let v = read(&c.file, None)?;
                    let w = c.weights.clone().unwrap_or_default();
                    if w.len() != v.ncols() || w.iter().any(|x| !x.is_finite()) {
                        return Err(format!(
                            "step {}: {} finite `weights` expected for {} components",
                            c.step,
                            v.ncols(),
                            v.ncols()
                        ));
                    }
                    PeerMatrix::Components(v, w)
                }
            };
            models.push((c.step, c.seconds, m));
        }
        Ok(models)
    }

    /// The dyad model of a script's matrix.
    fn model(&self, m: PeerMatrix) -> Result<Box<dyn Scorer>, String> {
        let m = match m {
            PeerMatrix::Factors(a, b) => return Ok(Box::new(LowRankModel::from_factors(a, b))),
            PeerMatrix::Square(m) => m,
            PeerMatrix::Columns(..) | PeerMatrix::Components(..) => {
                return Err("loadings and decompositions are not similarities".into());
            }
        };
        Ok(match self.script.model {
            PeerModel::LowRank => return Err("a low-rank peer reported a d x d matrix".into()),
            PeerModel::Loadings | PeerModel::Decomposition => {
                return Err("a loadings or decomposition peer is not a ranker".into());
            }
            PeerModel::Bilinear => Box::new(BilinearModel::from_matrix(m)),
            PeerModel::Mahalanobis => {
                let scale = m.iter().fold(0.0f64, |a, v| a.max(v.abs())).max(1.0);
                let asym = m
                    .indexed_iter()
                    .fold(0.0f64, |a, ((i, j), v)| a.max((v - m[[j, i]]).abs()));
                if asym > 1e-8 * scale {
                    return Err(format!("M is not symmetric (|M - M^T| up to {asym:.3e})"));
                }
                // Exactly symmetric (the scorer assumes p^T M q = q^T M p).
                let sym = (&m + &m.t()) * 0.5;
                Box::new(Mahalanobis::new(sym))
            }
        })
    }
}

/// A sparse-PCA peer: the script learns loadings from the data matrix (`a.npy`).
#[derive(Debug, Clone)]
pub struct PeerSparsePca(pub PeerRanker);

impl SparsePca for PeerSparsePca {
    fn fit(
        &self,
        data: ndarray::ArrayView2<'_, f64>,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<SparsePcaModel>,
    ) -> Result<(), AlgoError> {
        let models = self.0.run_on_matrix(data, schedule, rng)?;
        let convert = |m| match m {
            PeerMatrix::Columns(loadings, objective) => Ok(SparsePcaModel {
                loadings,
                rotation: None,
                objective,
                gamma: 0.0,
                // A peer's FLOPs are not counted (its clock is).
                flops: 0,
                flops_active_rows: 0,
                extract_flops: 0,
                samples_seen: data.ncols(),
            }),
            _ => Err("reported no loadings".to_string()),
        };
        replay(&self.0, models, convert, obs)
    }

    fn is_iterative(&self) -> bool {
        self.0.script.iterative
    }
}

/// A tensor-decomposition peer: the script decomposes the dense symmetric tensor (`a.npy`,
/// `K x K x K`); the objective `Σ_k T(v_k, v_k, v_k)` is evaluated here, on that tensor.
#[derive(Debug, Clone)]
pub struct PeerTensor(pub PeerRanker);

impl TensorDecomposer for PeerTensor {
    fn fit(
        &self,
        input: &MomentTensor,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<Decomposition>,
    ) -> Result<(), AlgoError> {
        input.validate()?;
        let (t, _) = input.dense();
        let k = t.dim();
        let models = self
            .0
            .run_on_array(&[k, k, k], t.as_slice(), schedule, rng)?;
        let convert = |m| match m {
            PeerMatrix::Components(components, weights) => {
                let objective = components
                    .columns()
                    .into_iter()
                    .map(|v| {
                        let v = v.to_vec();
                        t.eval(&v, &v, &v)
                    })
                    .sum();
                Ok(Decomposition {
                    weights,
                    components,
                    objective,
                    // A peer's FLOPs are not counted (its clock is).
                    flops: 0,
                    extract_flops: 0,
                })
            }
            _ => Err("reported no decomposition".to_string()),
        };
        replay(&self.0, models, convert, obs)
    }

    fn is_iterative(&self) -> bool {
        self.0.script.iterative
    }
}

/// `py:tensor-power-tensorly`: TensorLy's robust symmetric tensor power iteration
/// (`symmetric_parafac_power_iteration`; Givens issue 15's peer).
pub static TENSOR_POWER_TENSORLY: PeerScript = PeerScript {
    name: "py:tensor-power-tensorly",
    script: "tensor_power_tensorly.py",
    model: PeerModel::Decomposition,
    triplets: false,
    iterative: false,
};

/// `py:tensor-power-tensorly`'s parameters: TensorLy's names; defaults as dyad's
/// `tensor-power` (50 restarts, 50 iterations; TensorLy's own are 10 and 10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorPowerTensorlyParams {
    /// Components (default: the tensor's dimension).
    #[serde(default)]
    pub rank: Option<usize>,
    #[serde(default = "default_repeat")]
    pub n_repeat: u32,
    #[serde(default = "default_repeat")]
    pub n_iteration: u32,
}

fn default_repeat() -> u32 {
    50
}

impl Checked for TensorPowerTensorlyParams {
    fn check(&self) -> Result<(), ParamError> {
        if self.rank == Some(0) {
            return Err(ParamError::new("rank", "must be at least 1, got 0"));
        }
        if self.n_repeat == 0 {
            return Err(ParamError::new("n_repeat", "must be at least 1, got 0"));
        }
        if self.n_iteration == 0 {
            return Err(ParamError::new("n_iteration", "must be at least 1, got 0"));
        }
        Ok(())
    }
}

impl PeerParams for TensorPowerTensorlyParams {
    const SCRIPT: &'static PeerScript = &TENSOR_POWER_TENSORLY;
}

/// `py:sparsepca-sklearn`: scikit-learn's `SparsePCA` (Givens issue 15's peer).
pub static SPARSEPCA_SKLEARN: PeerScript = PeerScript {
    name: "py:sparsepca-sklearn",
    script: "sparsepca_sklearn.py",
    model: PeerModel::Loadings,
    triplets: false,
    iterative: false,
};

/// `py:sparsepca-sklearn`'s parameters: scikit-learn's `SparsePCA` names and defaults
/// (`n_components` required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparsePcaSklearnParams {
    pub n_components: usize,
    /// The l1 penalty on the components (1).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// The ridge on the codes (0.01).
    #[serde(default = "default_ridge")]
    pub ridge_alpha: f64,
    #[serde(default = "default_sk_max_iter")]
    pub max_iter: u32,
    #[serde(default = "default_sk_tol")]
    pub tol: f64,
    /// `"lars"` or `"cd"` (`"lars"`).
    #[serde(default = "default_method")]
    pub method: String,
}

fn default_alpha() -> f64 {
    1.0
}
fn default_ridge() -> f64 {
    0.01
}
fn default_sk_max_iter() -> u32 {
    1000
}
fn default_sk_tol() -> f64 {
    1e-8
}
fn default_method() -> String {
    "lars".into()
}

impl Checked for SparsePcaSklearnParams {
    fn check(&self) -> Result<(), ParamError> {
        if self.n_components == 0 {
            return Err(ParamError::new("n_components", "must be at least 1, got 0"));
        }
        params::positive("alpha", self.alpha)?;
        params::non_negative("ridge_alpha", self.ridge_alpha)?;
        if self.max_iter == 0 {
            return Err(ParamError::new("max_iter", "must be at least 1, got 0"));
        }
        params::positive("tol", self.tol)?;
        if !["lars", "cd"].contains(&self.method.as_str()) {
            return Err(ParamError::new(
                "method",
                format!("must be \"lars\" or \"cd\", got {:?}", self.method),
            ));
        }
        Ok(())
    }
}

impl PeerParams for SparsePcaSklearnParams {
    const SCRIPT: &'static PeerScript = &SPARSEPCA_SKLEARN;
}

/// Hand a script's reported models to an observer in order, each turned into the family's
/// model by `convert` (an error names the script), until the observer stops.
fn replay<M: ?Sized, B: std::borrow::Borrow<M>>(
    peer: &PeerRanker,
    models: Vec<(u64, f64, PeerMatrix)>,
    mut convert: impl FnMut(PeerMatrix) -> Result<B, String>,
    obs: &mut dyn Observer<M>,
) -> Result<(), AlgoError> {
    let count = models.len();
    for (i, (step, seconds, m)) in models.into_iter().enumerate() {
        let model = convert(m)
            .map_err(|e| external(format!("peer script {}: {e}", peer.script_path().display())))?;
        let at = Checkpoint {
            step,
            solver_seconds: seconds,
            last: i + 1 == count,
        };
        if obs.checkpoint(at, model.borrow()) == Control::Stop {
            break;
        }
    }
    Ok(())
}

impl Ranker for PeerRanker {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        let models = self.run_models(train, schedule, rng)?;
        replay(self, models, |m| self.model(m), obs)
    }

    fn is_iterative(&self) -> bool {
        self.script.iterative
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        let text: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text);
        assert!(t.starts_with("line 10") && t.ends_with("line 29"), "{t}");
        assert_eq!(tail("a\nb\n"), "a\nb");
    }

    #[test]
    fn the_repository_holds_every_peer_and_the_canonical_parameters_hash_them() {
        let env = PeerEnv::locate();
        let v: toml::Value = toml::from_str("c = 0.5").unwrap();
        let b = peer_in::<OasisNumpyParams>(v, &env).unwrap();
        assert_eq!(b.canonical["c"], serde_json::json!(0.5));
        let peer = &b.canonical["peer"];
        assert_eq!(peer["script"], "oasis_numpy.py");
        assert_eq!(
            peer["script_sha256"],
            serde_json::json!(env.sha256("oasis_numpy.py").unwrap())
        );
        assert_eq!(peer["requirements_sha256"].as_str().unwrap().len(), 64);
        assert!(b.iterative);
        let empty = toml::Value::Table(Default::default());
        let l = peer_in::<LmnnMetricLearnParams>(empty.clone(), &env).unwrap();
        assert_eq!(l.canonical["n_neighbors"], serde_json::json!(3));
        assert!(!l.iterative);
        let i = peer_in::<ItmlMetricLearnParams>(empty, &env).unwrap();
        assert_eq!(i.canonical["n_constraints"], serde_json::Value::Null);
        // Unknown and out-of-domain parameters name themselves.
        let bad = |s: &str| {
            peer_in::<OasisNumpyParams>(toml::from_str(s).unwrap(), &env)
                .err()
                .unwrap()
                .param
        };
        assert_eq!(bad("C = 1.0"), "C");
        assert_eq!(bad("c = 0.0"), "c");
        assert_eq!(bad("peer = 1"), "peer");
        let e = peer_in::<ItmlMetricLearnParams>(toml::from_str("prior = \"x\"").unwrap(), &env)
            .err()
            .unwrap();
        assert_eq!(e.param, "prior");
        // A missing script is an error at build (plan) time, naming the file.
        let elsewhere = PeerEnv {
            root: env.root.join("no-such-dir"),
            venv: env.venv.clone(),
        };
        let e = peer_in::<OasisNumpyParams>(toml::Value::Table(Default::default()), &elsewhere)
            .err()
            .unwrap();
        assert!(e.message.contains("oasis_numpy.py"), "{e}");
    }

    #[test]
    fn the_loreta_peers_take_dyads_rank_and_step_size_and_report_factors() {
        let env = PeerEnv::locate();
        let empty = toml::Value::Table(Default::default());
        let n = peer_in::<LoretaNumpyParams>(empty.clone(), &env).unwrap();
        assert_eq!(n.canonical["rank"], serde_json::json!(10));
        assert_eq!(n.canonical["eta"], serde_json::json!(0.1));
        assert_eq!(n.canonical["peer"]["script"], "loreta_numpy.py");
        assert!(n.iterative);
        let v: toml::Value = toml::from_str("rank = 50\neta = 0.3").unwrap();
        let p = peer_in::<LoretaPymanoptParams>(v, &env).unwrap();
        assert_eq!(p.canonical["rank"], serde_json::json!(50));
        assert_eq!(p.canonical["peer"]["script"], "loreta_pymanopt.py");
        // The two scripts differ, so do their keys.
        assert_ne!(
            n.canonical["peer"]["script_sha256"],
            p.canonical["peer"]["script_sha256"]
        );
        let bad = |s: &str| {
            peer_in::<LoretaNumpyParams>(toml::from_str(s).unwrap(), &env)
                .err()
                .unwrap()
                .param
        };
        assert_eq!(bad("rank = 0"), "rank");
        assert_eq!(bad("eta = 0.0"), "eta");
        assert_eq!(bad("eta = nan"), "eta");
        assert_eq!(bad("c = 0.1"), "c");
        assert_eq!(LORETA_NUMPY.model.kind(), "lowrank");
        // Factors come back as W = A B^T without forming W until asked.
        let (a, b) = (
            Array2::from_shape_fn((4, 2), |(i, j)| (i + 2 * j) as f64),
            Array2::from_shape_fn((4, 2), |(i, j)| (i * j) as f64 - 1.0),
        );
        let w = PeerMatrix::Factors(a.clone(), b.clone()).dense();
        assert_eq!(w, a.dot(&b.t()));
    }
}
