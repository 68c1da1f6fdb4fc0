//! The file protocol between dyad and a script (documented once, in `peers/dyadpeer.py`): the
//! inputs written to a temporary directory, the script run in the peers' environment, and the
//! models it reported at each checkpoint read back and handed to the observer.

use super::npy::{self, Array};
use super::params::{PeerModel, PeerScript};
use super::venv::{PeerEnv, tail};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Rng, Schedule, Scorer};
use dyad_givens::{Decomposition, MomentTensor, SparsePca, SparsePcaModel, TensorDecomposer};
use dyad_kernels::params::ParamError;
use dyad_kernels::{AlgoError, Ranker};
use dyad_loreta::LowRankModel;
use dyad_metric_baselines::metric::Mahalanobis;
use dyad_oasis::BilinearModel;
use ndarray::Array2;
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// The CPU kernels the peers' numerics run on, pinned so that a peer cell is the same to the
/// bit on every x86-64 machine with AVX2 and FMA (CI's machines differ: AVX-512 Xeons, AMD
/// EPYCs). Unpinned, OpenBLAS picks its GEMM kernels by CPU (SkylakeX, Zen, Haswell) and
/// NumPy its ufunc loops (AVX-512 or AVX2), and their roundings differ: quick peer cells moved
/// by 1e-16 to 5e-7 between two machines, and TensorLy's power iteration, whose restarts keep
/// the best of near-ties, by up to 0.6 in a metric. OpenBLAS's Haswell kernels and NumPy's
/// loops without AVX-512 run on every such machine. A variable the user has set is kept; on a
/// machine without AVX2 and FMA nothing is pinned (the kernels would not run there).
pub fn pinned_kernels() -> Vec<(&'static str, &'static str)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        return vec![
            ("OPENBLAS_CORETYPE", "Haswell"),
            // NumPy 1.26's dispatchable AVX-512 targets (naming one it does not know warns).
            (
                "NPY_DISABLE_CPU_FEATURES",
                "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL \
                 AVX512_ICL",
            ),
        ];
    }
    Vec::new()
}

/// The environment's Python as every peer runs it: one thread, a fixed hash seed, no bytecode
/// files, and the [`pinned_kernels`] (unless the user has set those variables).
pub fn peer_command(python: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0");
    for v in ONE_THREAD {
        cmd.env(v, "1");
    }
    for (var, value) in pinned_kernels() {
        if std::env::var_os(var).is_none() {
            cmd.env(var, value);
        }
    }
    cmd
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
        let mut cmd = peer_command(&python);
        cmd.arg(&script)
            .arg(dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(file(&out_path)?)
            .stderr(file(&err_path)?);
        let status = crate::engine::interrupt::run_child(&mut cmd, dir.path()).map_err(|e| {
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
