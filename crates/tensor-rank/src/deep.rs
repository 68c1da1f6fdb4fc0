//! DR: the deep-network ranking baseline (spec §3.10; the paper's "[38]", also called "DN").
//!
//! What the paper fixes: **6 hidden layers**; the layer width and the number of epochs are
//! hyper-parameters; every run trains **5 random initialisations** and keeps the one with the
//! smallest validation error; trained "based on stochastic gradient descent". Everything else
//! is \[OURS\] (spec §3.10):
//!
//! * a scalar-output MLP `f(x)`, `hidden_layers` (6) ReLU layers of `width` units, on inputs
//!   standardised per feature with the mean of all `n` examples and their standard deviation
//!   `s_a`, floored: feature `a` is divided by `max(s_a, sd_floor · s̄)`, where
//!   `s̄ = (Σ_a s_a² / m)^{1/2}` is the root-mean-square SD of the features and `sd_floor` 0.5
//!   (a constant feature keeps scale 1; `sd_floor` 0 is plain standardisation). Plain
//!   standardisation magnifies a nearly constant feature without bound: on MNIST, ink on a
//!   nearly blank border pixel became up to 245 SDs (138 pixels above 50), and SGD on such
//!   inputs diverged (every restart's loss non-finite: a failed cell) or killed the ReLUs (the
//!   untrained model won the validation in 3 of 40 fits). With the floor MNIST's largest
//!   standardised value is 7.7; features of comparable spread, as in the stand-ins, are
//!   hardly touched (tested: a fit whose labelled points carry features 141 SDs out fails
//!   or collapses without the floor and learns the planted order with it). The transform is
//!   part of the model, so new examples are scored the same way;
//! * the pair losses of Eq. (14) on `f(x_i) − f(x_j)`, averaged over minibatches of
//!   `batch_pairs` (64) pairs drawn without replacement from a fresh shuffle each epoch;
//! * SGD with momentum (`momentum` 0.9, heavy ball `v ← μv + g`, `w ← w − η v`), learning
//!   rate `learning_rate` (1e-2) decayed geometrically per epoch (`η_e = η·lr_decay^e`,
//!   `lr_decay` 0.97). The decay does not depend on the number of epochs, so the model after
//!   `e` epochs is the same whatever `epochs` is: one run's checkpoints serve the whole epoch
//!   grid of spec §3.10 ({10, 20, 50, 100});
//! * He-normal initial weights (`N(0, 2/fan_in)`, output layer `N(0, 1/fan_in)`), zero biases,
//!   drawn from the run's [`dyad_core::Rng`] (one derived stream per restart), never from
//!   candle's own generator;
//! * validation error = the fraction of validation inequality pairs not ordered strictly
//!   correctly (`f_i ≤ f_j`); without validation inequality pairs, restarts are compared by
//!   their training loss. A restart whose loss becomes non-finite is dropped; if all are, the
//!   run fails.
//!
//! **Steps**: one step of the schedule is one epoch of every restart (they train in lockstep);
//! the reported model is the restart with the smallest validation error at that epoch (ties:
//! the lower restart index), exported to plain `ndarray` weights ([`Mlp`]) that score all `n`
//! examples and new ones. The run finishes after `epochs` epochs.
//!
//! **Autodiff and determinism**: the networks are candle (`candle-core`, `candle-nn`) tensors
//! on the CPU in f32, the precision deep-learning libraries train in by default (one epoch at
//! the DTD panel's size is 1.6–1.7× faster than in f64: `benches/tensor_rank.rs`, `dr_epoch`,
//! 128 → 80 ms at width 32 and 656 → 381 ms at width 128, one run each); losses, scores and
//! the exported weights are read back as f64. candle's backward pass computes the gradients, and the update is a
//! [`candle_nn::Optimizer`] ([`MomentumSgd`]; candle's own SGD has no momentum). candle's
//! matrix products (the `gemm` crate) split the output, never the inner sum, and its
//! element-wise kernels work per element, so every output element is reduced in a fixed order
//! whatever the thread count, and a run is bit-for-bit reproducible for a seed (tested). The
//! `dyad` binary makes candle sequential ([`sequential_candle_products`]): the harness runs
//! one cell per core already. DR does not install a pool of its own: a harness worker that
//! waits on another pool runs other cells of its own pool meanwhile, and their time landed on
//! DR's solver clock (measured: four DR cells of one data set started nested and reported
//! 9.4–13.2 s each, where one alone takes 0.5 s).
//!
//! **Cost** per pair and epoch: about `6·(m w + (L − 1) w² + w)` flops (forward and backward
//! on two points), e.g. 6.4·10⁶ at `m = 784`, `w = 256`.

use super::model::ScoreFunction;
use super::{PairInput, PairModel, PairRanker};
use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{Linear, Module, Optimizer};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive, seeded};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::gemm;
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::sampling::normal;
use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::Rng as _;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// Makes candle's CPU matrix products sequential for the rest of the process, keeping the
/// global rayon pool at the size the user asked for.
///
/// candle (0.11) decides the parallelism of every CPU matrix product afresh: it reads
/// `RAYON_NUM_THREADS` and, when that is unset, counts the physical cores by parsing
/// `/proc/cpuinfo` (a file read per product), then splits the product into that many rayon
/// tasks. The harness already runs one cell per core, so the split only adds work. Measured
/// on `tensor-ranking/fig2-attributes --profile quick --threads 1` (one run each, this
/// machine, DR still in its own pool then): DR cells 2.6–3.1 s with the variable unset,
/// 1.4–1.9 s with it at 2, 0.6–1.1 s with it at 1; every tau, objective and chosen
/// hyper-parameter identical in the three runs, and in both Fig. 2 specs with it unset and at
/// 1 (gemm splits the output, never the inner sum).
///
/// It sets `RAYON_NUM_THREADS=1` and builds the global rayon pool explicitly with the size the
/// variable had (or one thread per core), so the variable now speaks only to candle. The
/// user's value is kept in `DYAD_USER_RAYON_NUM_THREADS` (empty when unset), which a `dyad`
/// started by this one (a Slurm array task, `dyad cell`) reads instead, so a child's global
/// pool has the size the user asked for, not 1. Call it first thing in `main`.
///
/// # Safety
/// Setting an environment variable races with any other thread reading the environment: call
/// this before the process starts a thread.
pub unsafe fn sequential_candle_products() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (user, global) = user_pool(
        std::env::var(USER_RAYON).ok(),
        std::env::var("RAYON_NUM_THREADS").ok(),
        cores,
    );
    // SAFETY: the caller guarantees that no other thread exists yet.
    unsafe {
        std::env::set_var(USER_RAYON, &user);
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    // An error means a global pool exists already: it keeps its size.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(global)
        .build_global();
}

/// Where [`sequential_candle_products`] keeps the user's `RAYON_NUM_THREADS`.
const USER_RAYON: &str = "DYAD_USER_RAYON_NUM_THREADS";

/// The user's `RAYON_NUM_THREADS` (empty when unset) and the global pool size it asks for:
/// a value kept by a parent `dyad` wins over the variable itself, which the parent set to 1.
fn user_pool(kept: Option<String>, rayon: Option<String>, cores: usize) -> (String, usize) {
    let user = kept.or(rayon).unwrap_or_default();
    let size = user
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(cores);
    (user, size)
}

/// Parameters of DR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeepRankConfig {
    /// Units per hidden layer (64; the spec's grid is {32, 64, 128, 256}).
    #[serde(default = "default_width")]
    pub width: usize,
    /// Training epochs (20; grid {10, 20, 50, 100}); the schedule's budget also bounds them.
    #[serde(default = "default_epochs")]
    pub epochs: u64,
    /// Hidden layers (6 in the paper).
    #[serde(default = "default_hidden_layers")]
    pub hidden_layers: usize,
    /// Random initialisations per run (5 in the paper).
    #[serde(default = "default_restarts")]
    pub restarts: usize,
    /// Pairs per minibatch (64).
    #[serde(default = "default_batch_pairs")]
    pub batch_pairs: usize,
    /// Initial SGD learning rate (1e-2).
    #[serde(default = "default_learning_rate")]
    pub learning_rate: f64,
    /// Momentum coefficient, in [0, 1) (0.9).
    #[serde(default = "default_momentum")]
    pub momentum: f64,
    /// Learning-rate factor per epoch, in (0, 1] (0.97).
    #[serde(default = "default_lr_decay")]
    pub lr_decay: f64,
    /// Floor on the SD that standardises a feature, as a fraction of the features'
    /// root-mean-square SD (0.5; 0: plain standardisation). See the module documentation.
    #[serde(default = "default_sd_floor")]
    pub sd_floor: f64,
}

fn default_width() -> usize {
    64
}
fn default_epochs() -> u64 {
    20
}
fn default_hidden_layers() -> usize {
    6
}
fn default_restarts() -> usize {
    5
}
fn default_batch_pairs() -> usize {
    64
}
fn default_learning_rate() -> f64 {
    1e-2
}
fn default_momentum() -> f64 {
    0.9
}
fn default_lr_decay() -> f64 {
    0.97
}
fn default_sd_floor() -> f64 {
    0.5
}

impl Default for DeepRankConfig {
    fn default() -> Self {
        Self {
            width: default_width(),
            epochs: default_epochs(),
            hidden_layers: default_hidden_layers(),
            restarts: default_restarts(),
            batch_pairs: default_batch_pairs(),
            learning_rate: default_learning_rate(),
            momentum: default_momentum(),
            lr_decay: default_lr_decay(),
            sd_floor: default_sd_floor(),
        }
    }
}

impl Checked for DeepRankConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::at_least_one("width", self.width as u64)?;
        params::at_least_one("epochs", self.epochs)?;
        params::at_least_one("hidden_layers", self.hidden_layers as u64)?;
        params::at_least_one("restarts", self.restarts as u64)?;
        params::at_least_one("batch_pairs", self.batch_pairs as u64)?;
        params::positive("learning_rate", self.learning_rate)?;
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(ParamError::new(
                "momentum",
                format!("must lie in [0, 1), got {}", self.momentum),
            ));
        }
        if !(self.sd_floor >= 0.0 && self.sd_floor.is_finite()) {
            return Err(ParamError::new(
                "sd_floor",
                format!("must be finite and at least 0, got {}", self.sd_floor),
            ));
        }
        if !(self.lr_decay > 0.0 && self.lr_decay <= 1.0) {
            return Err(ParamError::new(
                "lr_decay",
                format!("must lie in (0, 1], got {}", self.lr_decay),
            ));
        }
        Ok(())
    }
}

/// A trained network in plain `ndarray` weights: standardisation, then `hidden` ReLU layers
/// and a linear output.
#[derive(Debug, Clone, PartialEq)]
pub struct Mlp {
    /// Feature means subtracted first.
    pub mean: Array1<f64>,
    /// Reciprocal standard deviations multiplied next.
    pub inv_std: Array1<f64>,
    /// `(W, b)` per layer, `W` as `in × out`; the last layer has one output.
    pub layers: Vec<(Array2<f64>, Array1<f64>)>,
}

impl Mlp {
    /// Scores of the rows of `x`.
    pub fn score(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>, AlgoError> {
        if x.ncols() != self.mean.len() {
            return Err(AlgoError::data(format!(
                "network of input dimension {} given {} features",
                self.mean.len(),
                x.ncols()
            )));
        }
        let mut h = (&x - &self.mean.view().insert_axis(Axis(0)))
            * self.inv_std.view().insert_axis(Axis(0));
        let last = self.layers.len() - 1;
        for (t, (w, b)) in self.layers.iter().enumerate() {
            let mut out = Array2::<f64>::zeros((h.nrows(), w.ncols()));
            gemm(out.view_mut(), false, h.view(), w.view());
            out += &b.view().insert_axis(Axis(0));
            if t < last {
                out.mapv_inplace(|v| v.max(0.0));
            }
            h = out;
        }
        Ok(h.column(0).to_owned())
    }
}

fn candle_err(e: candle_core::Error) -> AlgoError {
    AlgoError::Numerical(format!("candle: {e}"))
}

/// SGD with heavy-ball momentum as a candle optimizer: `v ← μ v + g`, `w ← w − η v`.
pub struct MomentumSgd {
    vars: Vec<Var>,
    velocity: Vec<Option<Tensor>>,
    learning_rate: f64,
    momentum: f64,
}

impl Optimizer for MomentumSgd {
    /// `(learning_rate, momentum)`.
    type Config = (f64, f64);

    fn new(vars: Vec<Var>, (learning_rate, momentum): (f64, f64)) -> candle_core::Result<Self> {
        let velocity = vec![None; vars.len()];
        Ok(Self {
            vars,
            velocity,
            learning_rate,
            momentum,
        })
    }

    fn step(&mut self, grads: &GradStore) -> candle_core::Result<()> {
        for (var, vel) in self.vars.iter().zip(self.velocity.iter_mut()) {
            if let Some(g) = grads.get(var) {
                let v = match vel.take() {
                    Some(old) => ((old * self.momentum)? + g)?,
                    None => g.clone(),
                };
                let next = var.as_tensor().detach().sub(&(&v * self.learning_rate)?)?;
                var.set(&next)?;
                *vel = Some(v);
            }
        }
        Ok(())
    }

    fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    fn set_learning_rate(&mut self, lr: f64) {
        self.learning_rate = lr;
    }
}

/// One restart: its variables, layers, optimiser and random stream.
struct Net {
    vars: Vec<Var>,
    layers: Vec<Linear>,
    opt: MomentumSgd,
    rng: Rng,
    alive: bool,
}

impl Net {
    fn new(m: usize, cfg: &DeepRankConfig, rng: &mut Rng) -> Result<Net, AlgoError> {
        let dev = Device::Cpu;
        let mut vars = Vec::new();
        let mut layers = Vec::new();
        let mut fan_in = m;
        for t in 0..=cfg.hidden_layers {
            let out = if t == cfg.hidden_layers { 1 } else { cfg.width };
            let sd = if t == cfg.hidden_layers {
                (1.0 / fan_in as f64).sqrt()
            } else {
                (2.0 / fan_in as f64).sqrt()
            };
            let w: Vec<f32> = (0..out * fan_in)
                .map(|_| (sd * normal(rng)) as f32)
                .collect();
            let w =
                Var::from_tensor(&Tensor::from_vec(w, (out, fan_in), &dev).map_err(candle_err)?)
                    .map_err(candle_err)?;
            let b = Var::zeros(out, DType::F32, &dev).map_err(candle_err)?;
            layers.push(Linear::new(
                w.as_tensor().clone(),
                Some(b.as_tensor().clone()),
            ));
            vars.push(w);
            vars.push(b);
            fan_in = out;
        }
        let opt = MomentumSgd::new(vars.clone(), (cfg.learning_rate, cfg.momentum))
            .map_err(candle_err)?;
        Ok(Net {
            vars,
            layers,
            opt,
            rng: seeded(rng.random()),
            alive: true,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let mut h = x.clone();
        let last = self.layers.len() - 1;
        for (t, layer) in self.layers.iter().enumerate() {
            h = layer.forward(&h)?;
            if t < last {
                h = h.relu()?;
            }
        }
        h.squeeze(1)
    }

    /// Mean pair loss of `pairs` (local indices into `x`) with `mask[k] = 1` for inequality
    /// pairs, `0` for equality pairs.
    fn pair_loss(&self, x: &Tensor, pairs: &[(u32, u32, f64)]) -> candle_core::Result<Tensor> {
        let b = pairs.len();
        let mut idx: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        idx.extend(pairs.iter().map(|p| p.1));
        let idx = Tensor::from_vec(idx, 2 * b, x.device())?;
        let f = self.forward(&x.index_select(&idx, 0)?)?;
        let diff = (f.narrow(0, 0, b)? - f.narrow(0, b, b)?)?;
        let above: Vec<f32> = pairs.iter().map(|p| p.2 as f32).collect();
        let above = Tensor::from_vec(above, b, x.device())?;
        let equal = above.affine(-1.0, 1.0)?;
        let hinge = diff.affine(-1.0, 1.0)?.relu()?.sqr()?;
        let per = ((hinge * &above)? + (diff.sqr()? * equal)?)?;
        per.mean_all()
    }

    fn train_epoch(
        &mut self,
        x: &Tensor,
        pairs: &[(u32, u32, f64)],
        batch: usize,
        order: &mut [usize],
        buf: &mut Vec<(u32, u32, f64)>,
    ) -> Result<(), AlgoError> {
        order.shuffle(&mut self.rng);
        for chunk in order.chunks(batch) {
            buf.clear();
            buf.extend(chunk.iter().map(|&k| pairs[k]));
            let loss = self.pair_loss(x, buf).map_err(candle_err)?;
            let v = loss.to_scalar::<f32>().map_err(candle_err)? as f64;
            if !v.is_finite() {
                self.alive = false;
                return Ok(());
            }
            self.opt.backward_step(&loss).map_err(candle_err)?;
        }
        Ok(())
    }

    /// Scores of the local points `x`.
    fn scores(&self, x: &Tensor) -> Result<Vec<f64>, AlgoError> {
        self.forward(x)
            .and_then(|f| f.to_dtype(DType::F64)?.to_vec1::<f64>())
            .map_err(candle_err)
    }

    fn export(&self, mean: &Array1<f64>, inv_std: &Array1<f64>) -> Result<Mlp, AlgoError> {
        let mut layers = Vec::new();
        for pair in self.vars.chunks(2) {
            let w = pair[0]
                .as_tensor()
                .to_dtype(DType::F64)
                .and_then(|t| t.to_vec2::<f64>())
                .map_err(candle_err)?;
            let (out, inp) = (w.len(), w[0].len());
            let wt = Array2::from_shape_fn((inp, out), |(a, b)| w[b][a]);
            let b = pair[1]
                .as_tensor()
                .to_dtype(DType::F64)
                .and_then(|t| t.to_vec1::<f64>())
                .map_err(candle_err)?;
            layers.push((wt, Array1::from(b)));
        }
        Ok(Mlp {
            mean: mean.clone(),
            inv_std: inv_std.clone(),
            layers,
        })
    }
}

/// DR's training state: the restarts in lockstep.
struct DeepRun<'a> {
    x: ArrayView2<'a, f64>,
    /// Standardised rows of the labelled and validation points.
    local: Tensor,
    /// Training pairs in local indices, with the inequality mask.
    train: Vec<(u32, u32, f64)>,
    /// Validation inequality pairs in local indices.
    validation: Vec<(usize, usize)>,
    mean: Array1<f64>,
    inv_std: Array1<f64>,
    nets: Vec<Net>,
    order: Vec<usize>,
    buf: Vec<(u32, u32, f64)>,
    cfg: DeepRankConfig,
    epochs: u64,
    batches: u64,
    model: PairModel,
}

impl<'a> DeepRun<'a> {
    fn new(input: &'a PairInput, cfg: &DeepRankConfig, rng: &mut Rng) -> Result<Self, AlgoError> {
        let x = input.x.view();
        let (n, m) = x.dim();
        let mean = x.mean_axis(Axis(0)).expect("n > 0");
        let var = x.var_axis(Axis(0), 0.0);
        let floor = cfg.sd_floor * (var.sum() / m.max(1) as f64).sqrt();
        let inv_std = var.mapv(|v| {
            if v > 0.0 {
                1.0 / v.sqrt().max(floor)
            } else {
                1.0
            }
        });
        // Local rows: every point of a training or validation pair.
        let mut local = vec![u32::MAX; n];
        let mut rows = Vec::new();
        let mut map = |i: usize| {
            if local[i] == u32::MAX {
                local[i] = rows.len() as u32;
                rows.push(i);
            }
            local[i]
        };
        let mut train: Vec<(u32, u32, f64)> = Vec::with_capacity(input.train.len());
        for &(i, j) in &input.train.above {
            train.push((map(i), map(j), 1.0));
        }
        for &(i, j) in &input.train.equal {
            train.push((map(i), map(j), 0.0));
        }
        let mut validation: Vec<(usize, usize)> = Vec::new();
        if let Some(v) = &input.validation {
            for &(i, j) in &v.above {
                validation.push((map(i) as usize, map(j) as usize));
            }
        }
        let mut data = Vec::with_capacity(rows.len() * m);
        for &i in &rows {
            data.extend(
                x.row(i)
                    .iter()
                    .zip(mean.iter().zip(&inv_std))
                    .map(|(v, (mu, s))| ((v - mu) * s) as f32),
            );
        }
        let local_t = Tensor::from_vec(data, (rows.len(), m), &Device::Cpu).map_err(candle_err)?;
        let nets = (0..cfg.restarts)
            .map(|_| Net::new(m, cfg, rng))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            x,
            local: local_t,
            order: (0..train.len()).collect(),
            buf: Vec::with_capacity(cfg.batch_pairs),
            train,
            validation,
            mean,
            inv_std,
            nets,
            cfg: cfg.clone(),
            epochs: 0,
            batches: 0,
            model: PairModel::from_scores(Array1::zeros(n)),
        })
    }

    /// `(validation error or training loss, training loss)` of every live restart.
    fn assess(&self) -> Result<Vec<Option<(f64, f64)>>, AlgoError> {
        let (local, train, val) = (&self.local, &self.train, &self.validation);
        let nets = &self.nets;
        nets.iter()
            .map(|net| {
                if !net.alive {
                    return Ok(None);
                }
                let loss = if train.is_empty() {
                    0.0
                } else {
                    net.pair_loss(local, train)
                        .and_then(|l| l.to_scalar::<f32>())
                        .map(f64::from)
                        .map_err(candle_err)?
                };
                if !loss.is_finite() {
                    return Ok(None);
                }
                let key = if val.is_empty() {
                    loss
                } else {
                    let f = net.scores(local)?;
                    let wrong = val
                        .iter()
                        .filter(|&&(i, j)| {
                            f[i].partial_cmp(&f[j]) != Some(std::cmp::Ordering::Greater)
                        })
                        .count();
                    wrong as f64 / val.len() as f64
                };
                Ok(Some((key, loss)))
            })
            .collect()
    }
}

impl Stepper for DeepRun<'_> {
    type Model = PairModel;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        let lr = self.cfg.learning_rate * self.cfg.lr_decay.powi(self.epochs as i32);
        let (local, train, batch) = (&self.local, &self.train, self.cfg.batch_pairs);
        let (nets, order, buf) = (&mut self.nets, &mut self.order, &mut self.buf);
        for net in nets.iter_mut().filter(|n| n.alive) {
            net.opt.set_learning_rate(lr);
            net.train_epoch(local, train, batch, order, buf)?;
        }
        self.epochs += 1;
        self.batches += self.train.len().div_ceil(batch) as u64 * self.nets.len() as u64;
        if self.nets.iter().all(|n| !n.alive) {
            return Err(AlgoError::Numerical(
                "DR: the training loss of every restart became non-finite".into(),
            ));
        }
        Ok(if self.epochs >= self.cfg.epochs {
            Flow::Finished
        } else {
            Flow::Continue
        })
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&PairModel) -> Control,
    ) -> Result<Control, AlgoError> {
        let assessed = self.assess()?;
        let mut best: Option<(usize, f64, f64)> = None;
        for (r, a) in assessed.iter().enumerate() {
            if let Some((key, loss)) = *a
                && best.is_none_or(|b| key < b.1)
            {
                best = Some((r, key, loss));
            }
        }
        let Some((r, _, loss)) = best else {
            return Err(AlgoError::Numerical(
                "DR: no restart has a finite training loss".into(),
            ));
        };
        let mlp = self.nets[r].export(&self.mean, &self.inv_std)?;
        self.model.scores = mlp.score(self.x)?;
        self.model.function = Some(ScoreFunction::Network(mlp));
        self.model.objective = loss;
        self.model.iterations = self.epochs;
        self.model.inner_iterations = self.batches;
        Ok(show(&self.model))
    }
}

impl PairRanker for DeepRankConfig {
    fn fit(
        &self,
        input: &PairInput,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<PairModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        input.check()?;
        drive(schedule, obs, || DeepRun::new(input, self, rng))?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `dr` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "dr",
    label: "DR",
    description: "deep ranking baseline: 6 hidden ReLU layers (candle), pair losses of Eq. 14, SGD with momentum, best of 5 restarts on validation pairs (§3.10)",
    family: crate::PAIR_RANKER,
    // 2: the network trains in f32 (was f64): every DR cell is computed again.
    version: 2,
    // candle's products (the `gemm` crate) choose their kernels and blocking from the CPU
    // (AVX-512 or AVX2, cache sizes), so the f32 sums round differently on another machine
    // and SGD carries the difference on: the quick profile's DR cells differed by 1.1e-6 in
    // tau between an AVX-512 machine and the reference's. A run is bit-for-bit reproducible
    // on one machine (tested).
    machine_tolerance: 1e-4,
    build: crate::pair_ranker_solver::<DeepRankConfig>,
};

#[cfg(test)]
mod tests {
    use super::super::testkit::planted_classes;
    use super::*;
    use dyad_core::kendall::{kendall_tau, tau_on_pairs};
    use dyad_kernels::fixtures::Models;

    fn small() -> DeepRankConfig {
        DeepRankConfig {
            width: 32,
            epochs: 30,
            restarts: 2,
            batch_pairs: 8,
            ..Default::default()
        }
    }

    /// Validation labels drawn like the training ones (2 per class pair and class), disjoint
    /// from them.
    fn validation_pairs(data: &super::super::testkit::Planted, seed: u64) -> super::super::Pairs {
        let used = data
            .input
            .train
            .iter()
            .map(|(i, j)| (i.min(j), i.max(j)))
            .collect();
        super::super::synthetic::class_pairs(&data.class, &data.rank, 2, &used, &mut seeded(seed))
            .unwrap()
    }

    #[test]
    fn dr_learns_a_planted_order_and_its_function_reproduces_its_scores() {
        let mut data = planted_classes(150, 5, 5, 4);
        let val = validation_pairs(&data, 9);
        data.input.validation = Some(val.clone());
        let mut obs = Models::<PairModel>::default();
        let schedule = Schedule::new(vec![0, 30]);
        small()
            .fit(&data.input, &schedule, &mut seeded(3), &mut obs)
            .unwrap();
        let (first, last) = (&obs.seen[0].1, &obs.seen[1].1);
        assert!(obs.seen[1].0.last && last.iterations == 30);
        assert!(
            last.objective < 0.5 * first.objective,
            "{} -> {}",
            first.objective,
            last.objective
        );
        let tau = kendall_tau(last.scores.as_slice().unwrap(), &data.rank);
        let tau0 = kendall_tau(first.scores.as_slice().unwrap(), &data.rank);
        // 30 training pairs: the network fits them and generalises well, if not perfectly.
        assert!(tau > 0.85 && tau > tau0 + 0.5, "tau {tau0} -> {tau}");
        assert!(tau_on_pairs(last.scores.as_slice().unwrap(), &val.above) > 0.85);
        let Some(ScoreFunction::Network(net)) = &last.function else {
            panic!("DR reports its network");
        };
        assert_eq!(net.layers.len(), 7, "6 hidden layers and the output");
        let again = net.score(data.input.x.view()).unwrap();
        assert_eq!(again, last.scores);
    }

    /// MNIST's failure (previous sessions): standardising each pixel by its SD over all 60,000
    /// images maps ink on a nearly blank pixel to up to 245 SDs, and SGD on such inputs diverged
    /// (non-finite loss in every restart) or killed the ReLUs (the untrained model won the
    /// validation). Here every labelled point carries two features of the noise features' size
    /// (0.5) that are zero on the other 19,990 points: about 141 SDs under plain
    /// standardisation (which then gives tau 0 in f32, fails in f64), 2.6 with the floor.
    #[test]
    fn dr_learns_when_labelled_points_carry_rare_huge_features() {
        let n = 20_000;
        let mut data = planted_classes(n, 4, 5, 7);
        let val = validation_pairs(&data, 8);
        let mut labelled: Vec<usize> = data
            .input
            .train
            .iter()
            .chain(val.iter())
            .flat_map(|(i, j)| [i, j])
            .collect();
        labelled.sort_unstable();
        labelled.dedup();
        let m = data.input.x.ncols();
        let mut x = Array2::zeros((n, m + 2 * labelled.len()));
        x.slice_mut(ndarray::s![.., ..m]).assign(&data.input.x);
        for (k, &i) in labelled.iter().enumerate() {
            x[[i, m + 2 * k]] = 0.5;
            x[[i, m + 2 * k + 1]] = 0.5;
        }
        data.input.x = x;
        data.input.validation = Some(val);
        let fit = |sd_floor| {
            let mut obs = Models::<PairModel>::default();
            let cfg = DeepRankConfig {
                sd_floor,
                ..small()
            };
            cfg.fit(
                &data.input,
                &Schedule::new(vec![0, 30]),
                &mut seeded(3),
                &mut obs,
            )
            .map(|()| obs.seen.pop().expect("a report").1)
        };
        let tau = |m: &PairModel| kendall_tau(m.scores.as_slice().unwrap(), &data.rank);
        // The scenario is MNIST's: plain standardisation (`sd_floor` 0) diverges (a non-finite
        // loss in every restart) or kills the ReLUs (a constant network, tau 0).
        if let Ok(m) = fit(0.0) {
            assert!(
                tau(&m) < 0.5,
                "plain standardisation trained: tau {}",
                tau(&m)
            );
        }
        let floored = fit(default_sd_floor()).unwrap();
        assert!(floored.objective.is_finite());
        assert!(tau(&floored) > 0.8, "tau {}", tau(&floored));
    }

    #[test]
    fn the_global_pool_keeps_the_users_size_in_children_too() {
        let s = |v: &str| Some(v.to_string());
        // First `dyad`: the user's variable, or one thread per core.
        assert_eq!(user_pool(None, None, 4), (String::new(), 4));
        assert_eq!(user_pool(None, s("3"), 4), ("3".into(), 3));
        assert_eq!(user_pool(None, s("0"), 4), ("0".into(), 4));
        assert_eq!(user_pool(None, s("many"), 4), ("many".into(), 4));
        // A child: its RAYON_NUM_THREADS is the parent's 1, the kept value decides.
        assert_eq!(user_pool(s(""), s("1"), 4), (String::new(), 4));
        assert_eq!(user_pool(s("2"), s("1"), 4), ("2".into(), 2));
    }

    #[test]
    fn dr_is_deterministic_for_a_seed() {
        let data = planted_classes(60, 4, 3, 2);
        let cfg = DeepRankConfig {
            epochs: 3,
            ..small()
        };
        let run = |seed| {
            let mut obs = Models::<PairModel>::default();
            cfg.fit(
                &data.input,
                &Schedule::new(vec![0, 1, 3]),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            obs.seen
                .into_iter()
                .flat_map(|(_, m)| m.scores.to_vec())
                .map(f64::to_bits)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
