//! Low-rank KR, the method the paper evaluates (spec §3.7, §3.9; Eqs. 21–24, Algorithm 1).
//!
//! # Model and objective
//!
//! `K = B Q Bᵀ` with `B ∈ R^{n×p}` and `Q = Rᵀ − R` for `R` the lower-triangular matrix of
//! ones, so `Q_ab = sign(b − a)`: `Q` is antisymmetric, hence so is `K`, of rank `≤ p`
//! (Eq. 21). With `G = BᵀB` and `M = BᵀLB` (both `p × p`),
//!
//! ```text
//! E(B) = Σ_P max(0, 1 − K_ij)² + Σ_O K_ij² + λ R(B),     R(B) = tr(Kᵀ L K) = tr(Qᵀ M Q G)
//! ∂R/∂B = 2 (LB) Q G Qᵀ + 2 B Qᵀ M Q                                          (Eq. 23)
//! ∂/∂B_i += −l'(K_ij) C_j,   ∂/∂B_j += l'(K_ij) C_i,   C = BQ  (per labelled pair; Eq. 24)
//! ```
//!
//! Eq. (23) as printed, `2 B Q̄ Bᵀ L B Q − 2 L B Q Bᵀ B Q`, is the same matrix when
//! `Q̄ = −Q = Qᵀ` (the OCR's "Q = −Q"; spec §3.7, tested); Eq. (24)'s garbled "0 −" is the
//! derivative of `l_O(a) = a²` (tested against finite differences).
//!
//! # Cost of one gradient: `O(n p² + k n p)`
//!
//! `LB` (one `p`-long axpy per stored edge: `≈ 2 k n p` flops for the `∨` graph), `G` and `M`
//! (symmetric products, slab by slab over their lower block triangle, `gram_pair`: about
//! `n p²` flops each), the `p × p` matrices
//! `QGQᵀ` and `QᵀMQ` (`O(p³)`), and the `n × p` output `LB·(QGQᵀ) + B·(QᵀMQ)` (two products,
//! `4 n p²` flops). Products with `Q` itself never touch `n × p` data; rows of `C = BQ` are
//! formed on the fly for labelled pairs in `O(p)` by prefix sums
//! (`(xQ)_b = Σ_{a<b} x_a − Σ_{a>b} x_a`). In all about `6 n p² + 2 k n p` flops: at
//! `n = 60,000`, `p = 50`, `k = 8` that is `9·10⁸`, so one core of this machine (about
//! 50 Gflop/s peak in f64, AVX-512 FMA) cannot go below roughly 20 ms: the paper's "~0.004 s" (Matlab,
//! presumably a multi-threaded BLAS on a 3.6 GHz desktop; spec §3.7) is out of reach on one
//! core. All products are sequential faer calls (deterministic). The run renumbers the points
//! in reverse Cuthill–McKee order of the graph (`reorder`, default true) so that `LB` reads
//! neighbouring rows of `B` from cache; the report maps scores and `B` back to input order.
//!
//! `benches/tensor_rank.rs` measures one gradient (objective included) on an S-CLASS 8-NN
//! graph, measured once on the shared 2-core machine under a load average of 6–7 (other
//! builds running, so these are upper bounds): 6.2 ms at n = 5,000, 29 ms at 20,000, 87–91 ms
//! at 60,000 (data order and RCM order alike on this graph): linear in n up to cache effects
//! (×14 time for ×12 points). On a random expander graph (no locality possible) `LB` alone
//! took 250–350 ms at n = 60,000 under the same load: memory latency, not flops.
//!
//! # Solver (Algorithm 1)
//!
//! * `B₀ = ones(n, p)` (the paper's initialisation): `K = 0` exactly, every inequality hinge is
//!   at 1, and the gradient is not zero (its rows are multiples of `1ᵀQ`, entries
//!   `2b − p − 1`, `‖1ᵀQ‖² = 41,650` at `p = 50`).
//! * **Gradient descent with Armijo backtracking** (spec §3.7 \[OURS\]: the paper says only
//!   "gradient descent"): trial `B − η ∇E`, accepted when
//!   `E(B − η∇E) ≤ E(B) − c η ‖∇E‖²` (`c = armijo`, 1e-4); otherwise `η ← shrink·η` (0.5) and
//!   retry, at most `max_trials` (60) times; after an accepted step `η ← grow·η` (1.2). The
//!   first `η` is 1 (`step_size`). The objective is non-increasing.
//! * A step of the schedule is one gradient iteration (one gradient plus its backtracking
//!   trials; each trial costs `LB`, `G`, `M`, which the accepted trial hands to the next
//!   gradient, so an iteration with one trial costs about one gradient). The run finishes when
//!   the relative decrease falls below `tolerance` (1e-6), when no trial decreases `E`, or
//!   after `max_iter` (1000) iterations; the model reports the iterations taken.
//! * That stopping rule ends a run wherever a slow step leaves it: on a 5,000-point Swiss roll
//!   of 10 classes (`examples/step_rules.rs`; l = 3, k = 8) at λ = 10⁻² it stopped after 286
//!   iterations at `E` = 94.6 with `‖∇E‖` at 31 % of its start, and at λ = 100 after 4
//!   iterations next to `B₀` (τ 0.31). The second
//!   rule, [`StepRule::Bb`] (`step = "bb"`), takes Barzilai–Borwein steps under a non-monotone
//!   Armijo test (the largest of the last `memory` objectives) and stops at a stationarity
//!   residual `‖∇E(B)‖/‖∇E(B₀)‖ ≤ residual` (1e-3), which the model carries: on that roll it
//!   reached `E` = 45.3 at λ = 10⁻² in 559 iterations (τ 0.998 at every λ ≥ 10⁻³). The paper profile runs the first rule;
//!   `tensor-ranking/kr-step-rule` measures what the second changes.
//! * `E(B)` is non-convex: a stationary point, not necessarily the optimum of full KR. With
//!   `p ≥ n` (and `p` even, so that `Q` is invertible) every antisymmetric `K` is some `BQBᵀ`,
//!   and on small problems the run reaches full KR's optimal energy (tested).
//!
//! Scores are the read-out `f* = B(Q(Bᵀ1))/(n + ε)` of Eq. (25); the model carries `B`.

use super::graph::{Connect, Laplacian, Sigma, laplacian_for};
use super::readout::read_out;
use super::solver::Pairs;
use super::{
    PairInput, PairKernel, PairModel, PairRanker, check_graph, default_epsilon, default_k,
    default_knn_threads, graph_spec,
};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::{dot, gemm, gemm_sym};
use dyad_kernels::params::{self, Checked, ParamError};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, ArrayView2, ArrayViewMut2, Zip, s};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `out = xᵀ-row times Q`: `out_b = Σ_{a<b} x_a − Σ_{a>b} x_a`, in `O(p)`.
pub fn q_right(x: &[f64], out: &mut [f64]) {
    let total: f64 = x.iter().sum();
    let mut before = 0.0;
    for (o, &v) in out.iter_mut().zip(x) {
        *o = before - (total - before - v);
        before += v;
    }
}

/// The dense `p × p` matrix `Q = Rᵀ − R`, `Q_ab = sign(b − a)`.
pub fn q_matrix(p: usize) -> Array2<f64> {
    Array2::from_shape_fn((p, p), |(a, b)| match a.cmp(&b) {
        std::cmp::Ordering::Less => 1.0,
        std::cmp::Ordering::Greater => -1.0,
        std::cmp::Ordering::Equal => 0.0,
    })
}

/// Parameters of low-rank KR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LowRankKrConfig {
    /// Weight `λ` of `tr(KᵀLK)` (0.01; chosen on validation pairs).
    #[serde(default = "default_lambda")]
    pub lambda: f64,
    /// The rank `p` of the factorisation (50 throughout the paper).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Neighbours per point of the graph (8).
    #[serde(default = "default_k")]
    pub k: usize,
    #[serde(default)]
    pub connect: Connect,
    #[serde(default)]
    pub sigma: Sigma,
    /// Threads of the kNN search (1).
    #[serde(default = "default_knn_threads")]
    pub knn_threads: usize,
    /// `ε` of the read-out, Eq. (25) (1e-8).
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
    /// Most gradient iterations (1000).
    #[serde(default = "default_max_iter")]
    pub max_iter: u64,
    /// Converged when an iteration lowers `E` by less than this fraction (1e-6).
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// First trial step `η` (1).
    #[serde(default = "default_step_size")]
    pub step_size: f64,
    /// Step factor after a rejected trial, in (0, 1) (0.5).
    #[serde(default = "default_shrink")]
    pub shrink: f64,
    /// Step factor after an accepted step, ≥ 1 (1.2).
    #[serde(default = "default_grow")]
    pub grow: f64,
    /// Sufficient-decrease constant `c` of the Armijo test, in (0, 1) (1e-4).
    #[serde(default = "default_armijo")]
    pub armijo: f64,
    /// Most trials per iteration (60).
    #[serde(default = "default_max_trials")]
    pub max_trials: u64,
    /// Renumber the points internally in a locality-preserving (reverse Cuthill–McKee) order
    /// so that `LB` reads `B` mostly from cache (true). Changes nothing but rounding.
    #[serde(default = "default_reorder")]
    pub reorder: bool,
    /// How an iteration picks its step and when the run stops (`armijo`, the first rule; see
    /// [`StepRule`]). Left out of the parameters' serialisation at its default, so the cells
    /// of the first rule keep their keys.
    #[serde(default, skip_serializing_if = "StepRule::is_armijo")]
    pub step: StepRule,
    /// `bb` only: how many of the last objectives the non-monotone test compares against (10).
    #[serde(default = "default_memory", skip_serializing_if = "is_default_memory")]
    pub memory: u64,
    /// `bb` only: converged when `‖∇E(B)‖_F ≤ residual · ‖∇E(B₀)‖_F` (1e-3).
    #[serde(
        default = "default_residual",
        skip_serializing_if = "is_default_residual"
    )]
    pub residual: f64,
}

/// The step rule of low-rank KR's gradient descent (the paper says only "gradient descent").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepRule {
    /// Armijo backtracking from the last accepted step times `grow`; the run stops when an
    /// iteration lowers `E` by less than `tolerance` of it. Slow steps end such a run far from
    /// a stationary point (`‖∇E‖` at 30–50 % of its start on an S-CLASS roll at λ ≥ 10⁻²).
    #[default]
    Armijo,
    /// Barzilai–Borwein steps `η = ‖s‖²/⟨s, y⟩` (`s`, `y` the last changes of `B` and of
    /// `∇E`), accepted by a non-monotone Armijo test against the largest of the last `memory`
    /// objectives (Grippo, Lampariello and Lucidi 1986; Raydan 1997), halved by `shrink`
    /// until accepted; the run stops at the stationarity residual `residual`, and the model
    /// carries that residual.
    Bb,
}

impl StepRule {
    fn is_armijo(&self) -> bool {
        *self == StepRule::Armijo
    }
}

fn default_memory() -> u64 {
    10
}
fn is_default_memory(m: &u64) -> bool {
    *m == default_memory()
}
fn default_residual() -> f64 {
    1e-3
}
fn is_default_residual(r: &f64) -> bool {
    *r == default_residual()
}

fn default_reorder() -> bool {
    true
}

fn default_lambda() -> f64 {
    0.01
}
fn default_rank() -> usize {
    50
}
fn default_max_iter() -> u64 {
    1000
}
fn default_tolerance() -> f64 {
    1e-6
}
fn default_step_size() -> f64 {
    1.0
}
fn default_shrink() -> f64 {
    0.5
}
fn default_grow() -> f64 {
    1.2
}
fn default_armijo() -> f64 {
    1e-4
}
fn default_max_trials() -> u64 {
    60
}

impl Default for LowRankKrConfig {
    fn default() -> Self {
        Self {
            lambda: default_lambda(),
            rank: default_rank(),
            k: default_k(),
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            knn_threads: default_knn_threads(),
            epsilon: default_epsilon(),
            max_iter: default_max_iter(),
            tolerance: default_tolerance(),
            step_size: default_step_size(),
            shrink: default_shrink(),
            grow: default_grow(),
            armijo: default_armijo(),
            max_trials: default_max_trials(),
            reorder: default_reorder(),
            step: StepRule::Armijo,
            memory: default_memory(),
            residual: default_residual(),
        }
    }
}

impl Checked for LowRankKrConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("lambda", self.lambda)?;
        params::at_least_one("rank", self.rank as u64)?;
        check_graph(self.k, self.sigma, self.knn_threads)?;
        params::non_negative("epsilon", self.epsilon)?;
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("tolerance", self.tolerance)?;
        params::positive("step_size", self.step_size)?;
        params::open_interval("shrink", self.shrink, 0.0, 1.0)?;
        params::at_least("grow", self.grow, 1.0)?;
        params::open_interval("armijo", self.armijo, 0.0, 1.0)?;
        params::at_least_one("max_trials", self.max_trials)?;
        params::at_least_one("memory", self.memory)?;
        params::non_negative("residual", self.residual)
    }
}

/// The low-rank KR objective on a fixed graph and pair set.
pub struct LowRankProblem {
    l: Laplacian,
    lambda: f64,
    p: usize,
    /// The pairs as `(i, j, slot of i, slot of j)`: a slot is a row of `C = B Q` kept for
    /// each point of the pairs (`C_i` once per point, not once per pair).
    pairs: Vec<(usize, usize, usize, usize)>,
    /// The distinct points of the pairs, by slot.
    labelled: Vec<usize>,
    n_above: usize,
    q: Array2<f64>,
}

/// Buffers of [`LowRankProblem`]: `LB`, `G`, `M` at the last point evaluated.
pub struct LowRankWorkspace {
    lb: Array2<f64>,
    g: Array2<f64>,
    m: Array2<f64>,
    t: Array2<f64>,
    a1: Array2<f64>,
    a2: Array2<f64>,
    /// `C_i = B_i Q` of the labelled points, slot by slot.
    c: Vec<f64>,
}

impl LowRankProblem {
    pub fn new(l: Laplacian, lambda: f64, train: &Pairs, p: usize) -> Self {
        let mut slot = vec![usize::MAX; l.n()];
        let mut labelled = Vec::new();
        let mut at = |i: usize| {
            if slot[i] == usize::MAX {
                slot[i] = labelled.len();
                labelled.push(i);
            }
            slot[i]
        };
        let pairs = train.iter().map(|(i, j)| (i, j, at(i), at(j))).collect();
        Self {
            l,
            lambda,
            p,
            pairs,
            labelled,
            n_above: train.above.len(),
            q: q_matrix(p),
        }
    }

    pub fn n(&self) -> usize {
        self.l.n()
    }

    pub fn rank(&self) -> usize {
        self.p
    }

    /// Buffers for this problem.
    pub fn workspace(&self) -> LowRankWorkspace {
        let (n, p) = (self.n(), self.p);
        LowRankWorkspace {
            lb: Array2::zeros((n, p)),
            g: Array2::zeros((p, p)),
            m: Array2::zeros((p, p)),
            t: Array2::zeros((p, p)),
            a1: Array2::zeros((p, p)),
            a2: Array2::zeros((p, p)),
            c: vec![0.0; self.labelled.len() * p],
        }
    }

    /// `E(B)`, leaving `LB`, `G`, `M` and the labelled points' `C_i = B_i Q` in `ws` for
    /// [`Self::gradient_cached`]. `b` must be in standard layout.
    pub fn objective(&self, b: ArrayView2<'_, f64>, ws: &mut LowRankWorkspace) -> f64 {
        self.l.apply_rows(b, ws.lb.view_mut());
        gram_pair(b, ws.lb.view(), ws.g.view_mut(), ws.m.view_mut());
        // QᵀMQ into a2; R = ⟨QᵀMQ, G⟩.
        general_mat_mul(1.0, &ws.m, &self.q, 0.0, &mut ws.t);
        general_mat_mul(1.0, &self.q.t(), &ws.t, 0.0, &mut ws.a2);
        let reg: f64 = Zip::from(&ws.a2).and(&ws.g).fold(0.0, |s, a, g| s + a * g);
        let p = self.p;
        for (c, &i) in ws.c.chunks_exact_mut(p).zip(&self.labelled) {
            q_right(row(&b, i), c);
        }
        let mut loss = 0.0;
        for (k, &(_, j, si, _)) in self.pairs.iter().enumerate() {
            // K_ij = C_i · B_j.
            let v = dot(&ws.c[si * p..(si + 1) * p], row(&b, j));
            loss += if k < self.n_above {
                (1.0 - v).max(0.0).powi(2)
            } else {
                v * v
            };
        }
        loss + self.lambda * reg
    }

    /// `∇E(B)` into `grad`, using the `LB`, `G`, `M` and `C` that [`Self::objective`] left
    /// in `ws` for this same `b`.
    pub fn gradient_cached(
        &self,
        b: ArrayView2<'_, f64>,
        ws: &mut LowRankWorkspace,
        mut grad: ArrayViewMut2<'_, f64>,
    ) {
        let two_l = 2.0 * self.lambda;
        // a1 = 2λ Q G Qᵀ, a2 = 2λ Qᵀ M Q.
        general_mat_mul(1.0, &ws.g, &self.q.t(), 0.0, &mut ws.t);
        general_mat_mul(two_l, &self.q, &ws.t, 0.0, &mut ws.a1);
        general_mat_mul(1.0, &ws.m, &self.q, 0.0, &mut ws.t);
        general_mat_mul(two_l, &self.q.t(), &ws.t, 0.0, &mut ws.a2);
        gemm(grad.view_mut(), false, ws.lb.view(), ws.a1.view());
        gemm(grad.view_mut(), true, b, ws.a2.view());
        let gs = grad.as_slice_mut().expect("standard layout gradient");
        let p = self.p;
        for (k, &(i, j, si, sj)) in self.pairs.iter().enumerate() {
            let (ci, cj) = (&ws.c[si * p..(si + 1) * p], &ws.c[sj * p..(sj + 1) * p]);
            let v = dot(ci, row(&b, j));
            let g = if k < self.n_above {
                -2.0 * (1.0 - v).max(0.0)
            } else {
                2.0 * v
            };
            if g == 0.0 {
                continue;
            }
            for (o, c) in gs[i * p..(i + 1) * p].iter_mut().zip(cj) {
                *o -= g * c;
            }
            for (o, c) in gs[j * p..(j + 1) * p].iter_mut().zip(ci) {
                *o += g * c;
            }
        }
    }

    /// `E(B)` and `∇E(B)` from scratch: one gradient evaluation (`O(np² + knp)`).
    pub fn objective_and_gradient(
        &self,
        b: ArrayView2<'_, f64>,
        ws: &mut LowRankWorkspace,
        grad: ArrayViewMut2<'_, f64>,
    ) -> f64 {
        let e = self.objective(b, ws);
        self.gradient_cached(b, ws, grad);
        e
    }
}

/// Rows of `B` per slab of [`gram_pair`]: the depth block of faer's products (512,
/// `private-gemm-x86`'s `kc`, a constant), so each entry is summed exactly as one faer
/// product over all `n` rows sums it.
const GRAM_SLAB: usize = 512;
/// Columns per block of [`gram_pair`]'s lower block triangle (at least; 5 blocks at `p = 50`).
const GRAM_BLOCK: usize = 10;

/// `G = BᵀB` and `M = Bᵀ(LB)`, each exactly symmetric (the lower triangle mirrored): the same
/// bits as `gemm_sym` (faer's triangular product, which costs a full product) in about 60 %
/// of its time. Both are formed slab by slab of rows while the slab of `B` and `LB` is in
/// cache, over the lower block triangle of column blocks only. faer sums a product's depth in
/// blocks of 512, each block's terms in registers in depth order, then added to the output;
/// slabs of 512 rows (the last one taking the remainder, 512 to 1,023 rows), the first
/// replacing the output and the others adding to it, repeat exactly those operations for each
/// entry. Products of at most 16³ multiply-adds take faer's other kernel (nano-gemm), which
/// sums differently, so shapes that would send a block there (`n < 512`, or blocks narrower
/// than 3 columns) take `gemm_sym` itself. Tested against `gemm_sym` to the bit over sizes
/// around the slab's multiples. At `n = 60,000`, `p = 50`: 10 ms against 18 ms for both, one
/// run (docs/speed.md).
fn gram_pair(
    b: ArrayView2<'_, f64>,
    lb: ArrayView2<'_, f64>,
    mut g: ArrayViewMut2<'_, f64>,
    mut m: ArrayViewMut2<'_, f64>,
) {
    let (n, p) = b.dim();
    let blocks = (p / GRAM_BLOCK).max(1);
    if n < GRAM_SLAB || p / blocks < 3 {
        gemm_sym(g, false, b.t(), b);
        gemm_sym(m, false, b.t(), lb);
        return;
    }
    let bounds: Vec<usize> = (0..=blocks).map(|i| i * p / blocks).collect();
    let slabs = n / GRAM_SLAB;
    for slab in 0..slabs {
        let r0 = slab * GRAM_SLAB;
        let r1 = if slab + 1 == slabs { n } else { r0 + GRAM_SLAB };
        let (bs, ls) = (b.slice(s![r0..r1, ..]), lb.slice(s![r0..r1, ..]));
        for w in bounds.windows(2) {
            let (c0, c1) = (w[0], w[1]);
            let lhs = bs.slice(s![.., c0..c1]);
            gemm(
                g.slice_mut(s![c0..c1, ..c1]),
                slab > 0,
                lhs.t(),
                bs.slice(s![.., ..c1]),
            );
            gemm(
                m.slice_mut(s![c0..c1, ..c1]),
                slab > 0,
                lhs.t(),
                ls.slice(s![.., ..c1]),
            );
        }
    }
    mirror_lower(&mut g);
    mirror_lower(&mut m);
}

/// The strict lower triangle of a square matrix copied onto the upper one (`dyad-kernels` has
/// a tiled one, private; exporting it would change that crate's source and so the fingerprint
/// of every learner's cells, for a `p × p` copy).
fn mirror_lower(x: &mut ArrayViewMut2<'_, f64>) {
    for i in 0..x.nrows() {
        for j in i + 1..x.ncols() {
            x[[i, j]] = x[[j, i]];
        }
    }
}

#[inline]
fn row<'a>(b: &'a ArrayView2<'_, f64>, i: usize) -> &'a [f64] {
    let p = b.ncols();
    &b.as_slice().expect("standard layout")[i * p..(i + 1) * p]
}

/// The gradient-descent run of Algorithm 1.
pub(crate) struct LowRankRun {
    problem: LowRankProblem,
    b: Array2<f64>,
    trial: Array2<f64>,
    grad: Array2<f64>,
    ws: LowRankWorkspace,
    ws_trial: LowRankWorkspace,
    objective: f64,
    eta: f64,
    iterations: u64,
    trials: u64,
    cfg: LowRankKrConfig,
    /// `order[internal] = input index`, when the points were renumbered.
    order: Option<Vec<usize>>,
    model: PairModel,
    /// `bb`: `B` and `∇E` at the previous iterate, for the next step's `s` and `y`.
    previous: Option<(Array2<f64>, Array2<f64>)>,
    /// `bb`: the objectives of the last `memory` iterates, the current one last.
    recent: VecDeque<f64>,
    /// `‖∇E(B₀)‖_F`, the scale of the stationarity residual (NaN until the first gradient).
    start_gradient: f64,
}

impl LowRankRun {
    pub fn new(problem: LowRankProblem, b0: Array2<f64>, cfg: &LowRankKrConfig) -> Self {
        let mut ws = problem.workspace();
        let objective = problem.objective(b0.view(), &mut ws);
        let n = problem.n();
        Self {
            trial: b0.clone(),
            grad: Array2::zeros(b0.dim()),
            ws_trial: problem.workspace(),
            ws,
            b: b0,
            problem,
            objective,
            eta: cfg.step_size,
            iterations: 0,
            trials: 0,
            cfg: cfg.clone(),
            order: None,
            model: PairModel::from_scores(Array1::zeros(n)),
            previous: None,
            recent: VecDeque::from([objective]),
            start_gradient: f64::NAN,
        }
    }
}

impl LowRankRun {
    /// The Barzilai–Borwein step `‖s‖²/⟨s, y⟩` from the previous iterate (kept when
    /// `⟨s, y⟩ ≤ 0`, where the objective is not locally convex along `s`), then the current
    /// `B` and `∇E` become the previous ones. `self.grad` holds `∇E(self.b)`.
    fn bb_step(&mut self) {
        match &mut self.previous {
            None => self.previous = Some((self.b.clone(), self.grad.clone())),
            Some((b_prev, g_prev)) => {
                let (mut ss, mut sy) = (0.0, 0.0);
                Zip::from(&self.b)
                    .and(&*b_prev)
                    .and(&self.grad)
                    .and(&*g_prev)
                    .for_each(|&b, &bp, &g, &gp| {
                        let s = b - bp;
                        ss += s * s;
                        sy += s * (g - gp);
                    });
                let eta = ss / sy;
                if sy > 0.0 && eta.is_finite() {
                    self.eta = eta;
                }
                b_prev.assign(&self.b);
                g_prev.assign(&self.grad);
            }
        }
    }
}

impl Stepper for LowRankRun {
    type Model = PairModel;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        self.problem
            .gradient_cached(self.b.view(), &mut self.ws, self.grad.view_mut());
        let gn2: f64 = self.grad.iter().map(|v| v * v).sum();
        if !gn2.is_finite() {
            return Err(AlgoError::Numerical(
                "low-rank KR: non-finite gradient".into(),
            ));
        }
        if self.start_gradient.is_nan() {
            self.start_gradient = gn2.sqrt();
        }
        let bb = self.cfg.step == StepRule::Bb;
        if bb && gn2.sqrt() <= self.cfg.residual * self.start_gradient {
            return Ok(Flow::Finished);
        }
        self.iterations += 1;
        if gn2 == 0.0 {
            return Ok(Flow::Finished);
        }
        let old = self.objective;
        let mut reference = old;
        if bb {
            self.bb_step();
            reference = self.recent.iter().copied().fold(old, f64::max);
        }
        let mut accepted = false;
        for _ in 0..self.cfg.max_trials {
            self.trials += 1;
            let eta = self.eta;
            Zip::from(&mut self.trial)
                .and(&self.b)
                .and(&self.grad)
                .for_each(|t, &b, &g| *t = b - eta * g);
            let e = self
                .problem
                .objective(self.trial.view(), &mut self.ws_trial);
            if e.is_finite() && e <= reference - self.cfg.armijo * eta * gn2 {
                std::mem::swap(&mut self.b, &mut self.trial);
                std::mem::swap(&mut self.ws, &mut self.ws_trial);
                self.objective = e;
                if bb {
                    self.recent.push_back(e);
                    if self.recent.len() as u64 > self.cfg.memory {
                        self.recent.pop_front();
                    }
                } else {
                    self.eta *= self.cfg.grow;
                }
                accepted = true;
                break;
            }
            self.eta *= self.cfg.shrink;
        }
        let finished = !accepted
            || (!bb && old - self.objective <= self.cfg.tolerance * old)
            || self.iterations >= self.cfg.max_iter;
        Ok(if finished {
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
        let b = match &self.order {
            None => self.b.clone(),
            Some(order) => {
                let mut b = Array2::zeros(self.b.dim());
                for (new, &old) in order.iter().enumerate() {
                    b.row_mut(old).assign(&self.b.row(new));
                }
                b
            }
        };
        let kernel = PairKernel::LowRank(b);
        self.model.scores = Array1::from(read_out(&kernel.row_sums(), self.cfg.epsilon));
        self.model.kernel = Some(kernel);
        self.model.objective = self.objective;
        self.model.iterations = self.iterations;
        self.model.inner_iterations = self.trials;
        if self.cfg.step == StepRule::Bb {
            self.problem
                .gradient_cached(self.b.view(), &mut self.ws, self.grad.view_mut());
            let norm = self.grad.iter().map(|v| v * v).sum::<f64>().sqrt();
            self.model.stationarity = Some(if self.start_gradient > 0.0 {
                norm / self.start_gradient
            } else {
                norm
            });
        }
        Ok(show(&self.model))
    }
}

impl PairRanker for LowRankKrConfig {
    fn fit(
        &self,
        input: &PairInput,
        schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer<PairModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        input.check()?;
        let spec = graph_spec(self.k, self.connect, self.sigma, self.knn_threads);
        drive(schedule, obs, || {
            let l = laplacian_for(input.x.view(), &spec, input.neighbours.as_deref())?;
            let b0 = Array2::ones((input.n(), self.rank));
            if !self.reorder {
                let problem = LowRankProblem::new(l, self.lambda, &input.train, self.rank);
                return Ok(LowRankRun::new(problem, b0, self));
            }
            let order = l.locality_order();
            let mut inv = vec![0; order.len()];
            for (new, &old) in order.iter().enumerate() {
                inv[old] = new;
            }
            let map = |v: &[(usize, usize)]| v.iter().map(|&(i, j)| (inv[i], inv[j])).collect();
            let pairs = Pairs::new(map(&input.train.above), map(&input.train.equal));
            let problem = LowRankProblem::new(l.permuted(&order), self.lambda, &pairs, self.rank);
            let mut run = LowRankRun::new(problem, b0, self);
            run.order = Some(order);
            Ok(run)
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The start B = ones, so K = B Q Bᵀ = 0 scores every point alike.
    fn starts_constant(&self) -> bool {
        true
    }
}

/// The `lowrank-kr` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "lowrank-kr",
    label: "KR",
    description: "low-rank KR, the paper's method: K = B Q B^T, p = 50, B0 = ones, gradient descent with Armijo steps (Eqs. 21-25, Algorithm 1)",
    family: crate::PAIR_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::pair_ranker_solver::<LowRankKrConfig>,
};

#[cfg(test)]
mod tests {
    use super::super::graph::{GraphSpec, knn};
    use super::super::kernel_full::{KernelRankConfig, kr_energy};
    use super::super::solver::pair_loss;
    use super::super::testkit::{final_model, planted_classes};
    use super::*;
    use dyad_core::kendall::kendall_tau;
    use dyad_core::seeded;
    use ndarray::Array1;
    use rand::Rng as _;

    fn small_graph(x: &Array2<f64>, k: usize) -> Laplacian {
        let spec = GraphSpec {
            k,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            threads: 1,
        };
        Laplacian::from_knn(&knn(x.view(), k, 1).unwrap(), &spec).unwrap()
    }

    fn random(n: usize, p: usize, seed: u64, scale: f64) -> Array2<f64> {
        let mut rng = seeded(seed);
        Array2::from_shape_fn((n, p), |_| rng.random_range(-scale..scale))
    }

    /// The objective's `G` and `M` by slabs and blocks are `gemm_sym`'s to the bit (so cells
    /// computed before the change stand), exactly symmetric, at sizes on both sides of the
    /// slab's multiples and at ranks that split unevenly into blocks.
    #[test]
    fn gram_pair_is_gemm_sym_to_the_bit() {
        for (n, p) in [
            (0, 50),
            (1, 50),
            (7, 3),
            (511, 50),
            (512, 50),
            (513, 50),
            (1023, 1),
            (1025, 37),
            (1500, 50),
            (2688, 50),
            (5640, 64),
            (1024 + 40, 50),
            (2048 + 511, 50),
            (3000, 2),
            (3000, 3),
            (3000, 9),
            (3000, 29),
            (12_345, 50),
        ] {
            let b = random(n, p, n as u64 + 1, 1.0);
            // Magnitudes far apart, so that any other summation order shows in the bits.
            let lb = random(n, p, n as u64 + 2, 1.0).mapv(|v| v * 10f64.powf(6.0 * v));
            let (mut g, mut m) = (Array2::from_elem((p, p), f64::NAN), Array2::zeros((p, p)));
            gram_pair(b.view(), lb.view(), g.view_mut(), m.view_mut());
            let (mut g0, mut m0) = (Array2::zeros((p, p)), Array2::zeros((p, p)));
            gemm_sym(g0.view_mut(), false, b.t(), b.view());
            gemm_sym(m0.view_mut(), false, b.t(), lb.view());
            for (x, x0, what) in [(&g, &g0, "G"), (&m, &m0, "M")] {
                for ((i, j), v) in x.indexed_iter() {
                    assert_eq!(
                        v.to_bits(),
                        x0[[i, j]].to_bits(),
                        "{what}[{i},{j}] n={n} p={p}"
                    );
                    assert_eq!(v.to_bits(), x[[j, i]].to_bits(), "{what} symmetric");
                }
            }
        }
    }

    #[test]
    fn q_is_antisymmetric_with_signs_and_q_right_matches_it() {
        let q = q_matrix(6);
        assert_eq!(q, -&q.t());
        assert_eq!(q[[1, 4]], 1.0);
        assert_eq!(q[[4, 1]], -1.0);
        assert_eq!(q[[3, 3]], 0.0);
        let x = [0.5, -1.0, 2.0, 3.5, 0.25, -0.75];
        let mut out = [0.0; 6];
        q_right(&x, &mut out);
        let want = ndarray::arr1(&x).dot(&q);
        for (a, b) in out.iter().zip(&want) {
            assert!((a - b).abs() < 1e-14);
        }
        let b = random(7, 6, 1, 1.0);
        let k = b.dot(&q).dot(&b.t());
        assert!((&k + &k.t()).iter().all(|v| v.abs() < 1e-13));
        // Row sums through Q(Bᵀ1) agree with the dense kernel.
        let sums = PairKernel::LowRank(b.clone()).row_sums();
        for (s, r) in sums.iter().zip(k.rows()) {
            assert!((s - r.sum()).abs() < 1e-12);
        }
        assert!((PairKernel::LowRank(b).value(2, 5) - k[[2, 5]]).abs() < 1e-13);
    }

    #[test]
    fn objective_and_gradient_match_the_dense_kernel_and_finite_differences() {
        let data = planted_classes(24, 3, 4, 4);
        let x = &data.input.x;
        let l = small_graph(x, 4);
        let pairs = &data.input.train;
        let (lambda, p) = (0.3, 5);
        let prob = LowRankProblem::new(l.clone(), lambda, pairs, p);
        let mut ws = prob.workspace();
        // Scale so that some hinges are active and some are not.
        let b = random(24, p, 2, 1.0);
        let mut grad = Array2::zeros((24, p));
        let e = prob.objective_and_gradient(b.view(), &mut ws, grad.view_mut());
        let q = q_matrix(p);
        let dense = |b: &Array2<f64>| kr_energy(b.dot(&q).dot(&b.t()).view(), &l, lambda, pairs);
        assert!((e - dense(&b)).abs() < 1e-10 * e);
        let margins: Vec<f64> = pairs
            .iter()
            .map(|(i, j)| b.row(i).dot(&q).dot(&b.row(j)))
            .collect();
        let active = margins[..pairs.above.len()]
            .iter()
            .filter(|&&m| m < 1.0)
            .count();
        assert!(
            active > 0 && active < pairs.above.len(),
            "{active} active hinges"
        );
        let h = 1e-6;
        for i in 0..24 {
            for a in 0..p {
                let (mut bp, mut bm) = (b.clone(), b.clone());
                bp[[i, a]] += h;
                bm[[i, a]] -= h;
                let fd = (dense(&bp) - dense(&bm)) / (2.0 * h);
                let g = grad[[i, a]];
                assert!(
                    (fd - g).abs() < 1e-6 * (1.0 + fd.abs()),
                    "({i},{a}): {fd} vs {g}"
                );
            }
        }
    }

    #[test]
    fn eq23_as_printed_equals_the_efficient_form() {
        let x = random(25, 3, 6, 1.0);
        let l = small_graph(&x, 5);
        let ld = l.to_dense();
        let p = 6;
        let b = random(25, p, 7, 1.0);
        let q = q_matrix(p);
        let qbar = -&q;
        let printed = 2.0 * b.dot(&qbar).dot(&b.t()).dot(&ld).dot(&b).dot(&q)
            - 2.0 * ld.dot(&b).dot(&q).dot(&b.t()).dot(&b).dot(&q);
        // The efficient form through the problem (no pairs, λ = 1).
        let prob = LowRankProblem::new(l, 1.0, &Pairs::default(), p);
        let mut ws = prob.workspace();
        let mut grad = Array2::zeros((25, p));
        let r = prob.objective_and_gradient(b.view(), &mut ws, grad.view_mut());
        assert!(
            (&grad - &printed)
                .iter()
                .all(|v| v.abs() < 1e-9 * (1.0 + r))
        );
        // R(B) = tr(KᵀLK).
        let k = b.dot(&q).dot(&b.t());
        assert!((r - k.t().dot(&ld).dot(&k).diag().sum()).abs() < 1e-9 * r);
    }

    #[test]
    fn all_ones_start_has_zero_kernel_and_a_nonzero_gradient() {
        let p = 50;
        let ones = vec![1.0; p];
        let mut s = vec![0.0; p];
        q_right(&ones, &mut s);
        for (b, v) in s.iter().enumerate() {
            assert_eq!(*v, (2 * (b + 1)) as f64 - p as f64 - 1.0);
        }
        assert_eq!(s.iter().map(|v| v * v).sum::<f64>(), 41_650.0);
        let data = planted_classes(40, 3, 4, 1);
        let l = small_graph(&data.input.x, 5);
        let prob = LowRankProblem::new(l, 0.1, &data.input.train, p);
        let b = Array2::ones((40, p));
        let mut ws = prob.workspace();
        let mut grad = Array2::zeros((40, p));
        let e = prob.objective_and_gradient(b.view(), &mut ws, grad.view_mut());
        // K = 0: every inequality hinge is 1, every equality term 0, the regulariser 0.
        assert_eq!(e, data.input.train.above.len() as f64);
        assert!(grad.iter().any(|v| v.abs() > 1.0));
        assert!(PairKernel::LowRank(b).row_sums().iter().all(|v| *v == 0.0));
    }

    #[test]
    fn rank_two_factor_reduces_kr_to_tr_with_lambda_times_n() {
        // B = [f, 1]: BQBᵀ = f1ᵀ − 1fᵀ and E_KR(B) = E_TR(f) with λ_TR = n λ_KR.
        let data = planted_classes(30, 3, 3, 9);
        let l = small_graph(&data.input.x, 5);
        let n = 30;
        let mut rng = seeded(3);
        let f: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mut b = Array2::ones((n, 2));
        for i in 0..n {
            b[[i, 0]] = f[i];
        }
        let lambda = 0.07;
        let pairs = &data.input.train;
        let prob = LowRankProblem::new(l.clone(), lambda, pairs, 2);
        let mut ws = prob.workspace();
        let e_kr = prob.objective(b.view(), &mut ws);
        let a: Vec<f64> = pairs.iter().map(|(i, j)| f[i] - f[j]).collect();
        let e_tr = pair_loss(&a, pairs.above.len()) + n as f64 * lambda * l.quad(&f);
        assert!((e_kr - e_tr).abs() < 1e-10 * e_tr, "{e_kr} vs {e_tr}");
        assert!((PairKernel::LowRank(b).value(3, 8) - (f[3] - f[8])).abs() < 1e-14);
    }

    /// `(σ, u, v)` with `A u = σ v`, `A v = −σ u`, orthonormal, `σ > 0`: the 2 × 2 blocks of
    /// the real Schur form of an antisymmetric `A`, from the eigenvectors of `AᵀA = −A²`.
    fn schur_pairs(a: &Array2<f64>) -> Vec<(f64, Array1<f64>, Array1<f64>)> {
        let (vals, vecs) = dyad_kernels::linalg::sym_eigen(a.t().dot(a).view()).unwrap();
        let top = vals[vals.len() - 1];
        let mut used: Vec<Array1<f64>> = Vec::new();
        let mut out = Vec::new();
        for c in (0..vals.len()).rev() {
            if vals[c] <= 1e-12 * top {
                break;
            }
            let mut u = vecs.column(c).to_owned();
            for w in &used {
                let d = u.dot(w);
                u.scaled_add(-d, w);
            }
            let nu = u.dot(&u).sqrt();
            if nu < 0.5 {
                continue;
            }
            u /= nu;
            let au = a.dot(&u);
            let sigma = au.dot(&au).sqrt();
            let v = au / sigma;
            used.push(u.clone());
            used.push(v.clone());
            out.push((sigma, u, v));
        }
        out
    }

    /// A `B` with `B Q Bᵀ = K` for antisymmetric `K` of rank ≤ `p` (`p` even): pair the Schur
    /// blocks of `K` with those of `Q` and map one onto the other.
    fn factor_through_q(k: &Array2<f64>, p: usize) -> Array2<f64> {
        let (kp, qp) = (schur_pairs(k), schur_pairs(&q_matrix(p)));
        assert!(kp.len() <= qp.len());
        let mut b = Array2::<f64>::zeros((k.nrows(), p));
        for ((s, u, v), (t, x, y)) in kp.iter().zip(&qp) {
            let c = (s / t).sqrt();
            for i in 0..k.nrows() {
                for a in 0..p {
                    b[[i, a]] += c * (v[i] * y[a] + u[i] * x[a]);
                }
            }
        }
        b
    }

    #[test]
    fn full_rank_factorisation_attains_full_kr_and_is_stationary_there() {
        // Full KR's optimum K* written as B*QB*ᵀ with p = n: the low-rank energy equals full
        // KR's there and its gradient vanishes.
        let n = 16;
        let data = planted_classes(n, 3, 4, 12);
        let (lambda, k) = (0.5, 6);
        let full = KernelRankConfig {
            lambda,
            k,
            tolerance: 0.0,
            ..Default::default()
        };
        let m = final_model(&full, &data.input, 1);
        let Some(PairKernel::Dense(kstar)) = &m.kernel else {
            panic!("full KR reports K");
        };
        let b = factor_through_q(kstar, n);
        let q = q_matrix(n);
        let rec = b.dot(&q).dot(&b.t());
        assert!((&rec - kstar).iter().all(|v| v.abs() < 1e-9), "B Q Bᵀ = K*");
        let prob = LowRankProblem::new(small_graph(&data.input.x, k), lambda, &data.input.train, n);
        let mut ws = prob.workspace();
        let mut grad = Array2::zeros((n, n));
        let e = prob.objective_and_gradient(b.view(), &mut ws, grad.view_mut());
        assert!(
            (e - m.objective).abs() < 1e-9 * m.objective,
            "{e} vs {}",
            m.objective
        );
        let gmax = grad.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(gmax < 1e-7, "gradient {gmax} at the full optimum");
        // Off the optimum the gradient is not small.
        let mut ws2 = prob.workspace();
        let mut g2 = Array2::zeros((n, n));
        prob.objective_and_gradient((&b * 0.9).view(), &mut ws2, g2.view_mut());
        assert!(g2.iter().any(|v| v.abs() > 1e-3));
    }

    #[test]
    fn full_rank_descent_from_a_random_start_approaches_full_kr() {
        // Gradient descent itself, p = n: from a random start it gets within 1e-3 of the
        // convex optimum (from B₀ = ones it stalls on plateaus on this toy; see the report).
        let n = 16;
        let data = planted_classes(n, 3, 4, 12);
        let (lambda, k) = (2.0, 8);
        let full = KernelRankConfig {
            lambda,
            k,
            ..Default::default()
        };
        let best = final_model(&full, &data.input, 1).objective;
        let cfg = LowRankKrConfig {
            lambda,
            k,
            rank: n,
            max_iter: 20_000,
            tolerance: 0.0,
            ..Default::default()
        };
        let prob = LowRankProblem::new(small_graph(&data.input.x, k), lambda, &data.input.train, n);
        let b0 = random(n, n, 0, 0.5);
        let mut obs = dyad_kernels::fixtures::Models::<PairModel>::default();
        drive(&Schedule::last_only(20_000), &mut obs, || {
            Ok::<_, AlgoError>(LowRankRun::new(prob, b0, &cfg))
        })
        .unwrap();
        let e = obs.seen.last().unwrap().1.objective;
        assert!(e >= best * (1.0 - 1e-9), "cannot beat the convex optimum");
        assert!(e - best <= 1e-3 * best, "full {best} vs low-rank {e}");
    }

    /// Full KR's optimum and a BB run of low-rank KR with `p = n` from a random start on the
    /// toy of `full_rank_descent_from_a_random_start_approaches_full_kr`, at `residual`.
    fn bb_against_full_kr(residual: f64, max_iter: u64) -> (f64, PairModel) {
        let n = 16;
        let data = planted_classes(n, 3, 4, 12);
        let (lambda, k) = (2.0, 8);
        let full = KernelRankConfig {
            lambda,
            k,
            tolerance: 0.0,
            ..Default::default()
        };
        let best = final_model(&full, &data.input, 1).objective;
        let cfg = LowRankKrConfig {
            lambda,
            k,
            rank: n,
            max_iter,
            step: StepRule::Bb,
            residual,
            ..Default::default()
        };
        let prob = LowRankProblem::new(small_graph(&data.input.x, k), lambda, &data.input.train, n);
        let b0 = random(n, n, 0, 0.5);
        let mut obs = dyad_kernels::fixtures::Models::<PairModel>::default();
        drive(&Schedule::last_only(max_iter), &mut obs, || {
            Ok::<_, AlgoError>(LowRankRun::new(prob, b0, &cfg))
        })
        .unwrap();
        (best, obs.seen.pop().unwrap().1)
    }

    #[test]
    fn bb_steps_reach_full_kr_and_stop_at_their_stationarity_residual() {
        let (best, m) = bb_against_full_kr(1e-8, 20_000);
        assert!(
            m.objective >= best * (1.0 - 1e-9),
            "cannot beat the convex optimum"
        );
        // A stationary point of the factored problem, within 1e-5 of the convex optimum
        // (the first rule, in the test above, gets within 1e-3 in 20,000 iterations).
        assert!(
            m.objective - best <= 1e-5 * best,
            "full {best} vs low-rank {} after {} iterations",
            m.objective,
            m.iterations
        );
        let r = m.stationarity.expect("a BB run reports its residual");
        assert!(r <= 1e-8, "stopped at residual {r}");
        assert!(m.iterations < 20_000, "converged before the cap");
        // A looser residual stops earlier, higher, and says where it stopped.
        let (_, loose) = bb_against_full_kr(1e-2, 20_000);
        assert!(loose.iterations < m.iterations);
        assert!(loose.objective > m.objective);
        let r = loose.stationarity.unwrap();
        assert!(r <= 1e-2 && r > 1e-8, "{r}");
        // A run cut by its cap reports a residual above the tolerance.
        let (_, capped) = bb_against_full_kr(1e-8, 5);
        assert_eq!(capped.iterations, 5);
        assert!(capped.stationarity.unwrap() > 1e-8);
        // The first rule reports none (its cells predate the record).
        let data = planted_classes(40, 3, 4, 1);
        let armijo = LowRankKrConfig {
            k: 5,
            max_iter: 20,
            ..Default::default()
        };
        assert_eq!(final_model(&armijo, &data.input, 1).stationarity, None);
    }

    #[test]
    fn bb_objective_stays_below_the_largest_of_its_last_memory_values() {
        let data = planted_classes(120, 4, 4, 6);
        let memory = 4;
        let cfg = LowRankKrConfig {
            k: 6,
            lambda: 0.05,
            max_iter: 300,
            step: StepRule::Bb,
            memory,
            residual: 0.0,
            ..Default::default()
        };
        let mut obs = dyad_kernels::fixtures::Models::<PairModel>::default();
        let mut rng = seeded(1);
        cfg.fit(
            &data.input,
            &Schedule::new((0..=300).collect()),
            &mut rng,
            &mut obs,
        )
        .unwrap();
        let e: Vec<f64> = obs.seen.iter().map(|(_, m)| m.objective).collect();
        assert!(e.len() > 50, "{} checkpoints", e.len());
        let mut rises = 0;
        for t in 1..e.len() {
            let window = &e[t.saturating_sub(memory as usize)..t];
            let top = window.iter().copied().fold(f64::MIN, f64::max);
            assert!(e[t] <= top, "step {t}: {} above the window's {top}", e[t]);
            rises += usize::from(e[t] > e[t - 1]);
        }
        // Non-monotone: some BB steps raise E (else the rule would be plain descent).
        assert!(rises > 0);
        assert!(e[e.len() - 1] < 0.5 * e[0]);
    }

    #[test]
    fn the_first_step_rule_keeps_its_parameters_and_so_its_cells_keys() {
        let first = serde_json::to_value(LowRankKrConfig::default()).unwrap();
        for key in ["step", "memory", "residual"] {
            assert!(first.get(key).is_none(), "{key} serialised at its default");
        }
        let bb = LowRankKrConfig {
            step: StepRule::Bb,
            residual: 1e-4,
            ..Default::default()
        };
        let v = serde_json::to_value(&bb).unwrap();
        assert_eq!(v["step"], "bb");
        assert_eq!(v["residual"], 1e-4);
        assert!(v.get("memory").is_none());
        let back: LowRankKrConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, bb);
        let bad = LowRankKrConfig {
            memory: 0,
            ..Default::default()
        };
        assert!(bad.check().is_err());
    }

    #[test]
    fn renumbering_the_points_changes_only_rounding() {
        let data = planted_classes(120, 4, 4, 6);
        let run = |reorder| {
            let cfg = LowRankKrConfig {
                k: 6,
                max_iter: 40,
                reorder,
                ..Default::default()
            };
            final_model(&cfg, &data.input, 1)
        };
        let (a, b) = (run(true), run(false));
        assert_eq!(a.iterations, b.iterations);
        assert!((a.objective - b.objective).abs() < 1e-8 * a.objective);
        let scale = b.scores.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(
            (&a.scores - &b.scores)
                .iter()
                .all(|v| v.abs() < 1e-8 * scale)
        );
        let (Some(PairKernel::LowRank(ba)), Some(PairKernel::LowRank(bb))) = (&a.kernel, &b.kernel)
        else {
            panic!("low-rank kernels");
        };
        assert!((ba - bb).iter().all(|v| v.abs() < 1e-6 * (1.0 + v.abs())));
    }

    #[test]
    fn low_rank_kr_recovers_a_planted_order_with_monotone_energy() {
        let data = planted_classes(200, 6, 5, 11);
        let cfg = LowRankKrConfig {
            lambda: 1e-2,
            k: 6,
            max_iter: 300,
            ..Default::default()
        };
        let mut obs = dyad_kernels::fixtures::Models::<PairModel>::default();
        let steps: Vec<u64> = (0..=300).collect();
        cfg.fit(&data.input, &Schedule::new(steps), &mut seeded(1), &mut obs)
            .unwrap();
        let energies: Vec<f64> = obs.seen.iter().map(|(_, m)| m.objective).collect();
        assert!(energies.windows(2).all(|w| w[1] <= w[0]), "non-increasing");
        assert_eq!(energies[0], data.input.train.above.len() as f64);
        let last = &obs.seen.last().unwrap().1;
        assert_eq!(
            kendall_tau(last.scores.as_slice().unwrap(), &data.rank),
            1.0
        );
    }
}
