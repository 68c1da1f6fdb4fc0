//! Full KR: kernel-based transductive ranking on the whole `n × n` kernel matrix (spec §3.5,
//! Eqs. 17–18):
//!
//! ```text
//! E_KR(K) = Σ_P max(0, 1 − K_ij)² + Σ_O K_ij² + λ tr(Kᵀ L K),   K antisymmetric
//! ```
//!
//! The paper's "preliminary experiments" method; infeasible at scale, kept as the small-`n`
//! reference of low-rank KR. The text does not say whether antisymmetry is enforced
//! (spec §10.10); here it is (\[OURS\], as the spec suggests, `K = A − Aᵀ`): the variable is
//! an antisymmetric `K`, optimised in the antisymmetric subspace with the Frobenius inner
//! product. There the regulariser is `⟨K, P(LK)⟩` with `P(X) = (X − Xᵀ)/2` (so `R V =
//! λ (LV + VL)/2` for antisymmetric `V`) and a pair's margin `K_ij` has gradient
//! `(E_ij − E_ji)/2`. The problem is convex; it is solved from `K = 0` by the finite Newton
//! method of [`super::solver`] with Jacobi-preconditioned CG (diagonal `λ(D_ii + D_jj) + [pair
//! active]`). One CG iteration costs `O(k n²)` (the product `LV`), memory is about twelve
//! `n × n` matrices: `max_n` (2,000 by default, ≈ 400 MB) refuses larger inputs with an error
//! pointing to low-rank KR.
//!
//! Scores are the read-out `f* = K1/(n + ε)` of Eq. (25) ([`super::readout`]); the model
//! carries `K`.

use super::graph::{Connect, Laplacian, Sigma, laplacian_for};
use super::readout::read_out;
use super::solver::{Newton, NewtonSettings, PairProblem, Pairs};
use super::{
    PairInput, PairKernel, PairModel, PairRanker, check_graph, default_cg_max_iter,
    default_epsilon, default_k, default_knn_threads, default_max_newton, default_newton_tol,
    graph_spec,
};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::dot;
use dyad_kernels::params::{self, Checked, ParamError};
use dyad_kernels::simd::{Isa, multiversion};
use ndarray::{Array1, Array2, ArrayView2};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;

/// Parameters of full KR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRankConfig {
    /// Weight `λ` of `tr(KᵀLK)` (0.01; chosen on validation pairs).
    #[serde(default = "default_lambda")]
    pub lambda: f64,
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
    /// Largest number of examples accepted (2,000): memory and time grow as `n²`.
    #[serde(default = "default_max_n")]
    pub max_n: usize,
    /// `ε` of the read-out, Eq. (25) (1e-8, fixed in the paper).
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
    /// Most Newton iterations (100).
    #[serde(default = "default_max_newton")]
    pub max_iter: u64,
    /// Converged when an iteration lowers the objective by less than this fraction (1e-10).
    #[serde(default = "default_newton_tol")]
    pub tolerance: f64,
    /// Most CG iterations per Newton direction (1000).
    #[serde(default = "default_cg_max_iter")]
    pub cg_max_iter: u64,
}

fn default_lambda() -> f64 {
    0.01
}
fn default_max_n() -> usize {
    2000
}

impl Default for KernelRankConfig {
    fn default() -> Self {
        Self {
            lambda: default_lambda(),
            k: default_k(),
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            knn_threads: default_knn_threads(),
            max_n: default_max_n(),
            epsilon: default_epsilon(),
            max_iter: default_max_newton(),
            tolerance: default_newton_tol(),
            cg_max_iter: default_cg_max_iter(),
        }
    }
}

impl Checked for KernelRankConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("lambda", self.lambda)?;
        check_graph(self.k, self.sigma, self.knn_threads)?;
        params::at_least_one("max_n", self.max_n as u64)?;
        params::non_negative("epsilon", self.epsilon)?;
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("tolerance", self.tolerance)?;
        params::at_least_one("cg_max_iter", self.cg_max_iter)
    }
}

/// Columns of a row of `LV` formed at once, in registers (32: eight AVX2 vectors).
const CHUNK: usize = 32;

/// `out = h (LV − (LV)ᵀ)` through `lv = LV`, for `n × n` row-major `v`. `LV` is formed row
/// by row in the order `rows` (a locality order of the graph, so the neighbours' rows of `V`
/// that a row gathers were read for the rows before it and are still in cache), each row in
/// chunks of [`CHUNK`] columns summed in registers over the neighbours (their rows stream
/// through the chunks in address order); the antisymmetric part over pairs of 4 × 4 blocks
/// transposed in registers. Every entry is computed by the same
/// operations in the same order as `Laplacian::apply_rows` followed by a plain transpose would
/// (tested bit for bit; the order of the rows changes only when each is computed), and the
/// pass is compiled per vector width ([`multiversion!`]): element-wise, so every width gives
/// the same bits.
#[inline(always)]
fn reg_body<const W: u8>(
    v: &[f64],
    lv: &mut [f64],
    out: &mut [f64],
    l: &Laplacian,
    rows: &[usize],
    h: f64,
    hess: bool,
) {
    let n = l.n();
    let deg = l.degree();
    // `hess`: the Hessian's regulariser term `2 R V` as `hess_apply` of the solver forms it,
    // `2 (h (a − b)) + t` where `t = +0` off the pairs (the pairs' terms are added after).
    let finish = |x: f64| if hess { 2.0 * (h * x) + 0.0 } else { h * x };
    for &i in rows {
        let d = deg[i];
        let (cols, w) = l.row(i);
        let row = i * n;
        let mut c0 = 0;
        while c0 + CHUNK <= n {
            let own: &[f64; CHUNK] = v[row + c0..row + c0 + CHUNK].try_into().expect("chunk");
            let mut acc = own.map(|x| d * x);
            for (&j, &wij) in cols.iter().zip(w) {
                let at = j as usize * n + c0;
                let src: &[f64; CHUNK] = v[at..at + CHUNK].try_into().expect("chunk");
                for (a, &x) in acc.iter_mut().zip(src) {
                    *a -= wij * x;
                }
            }
            lv[row + c0..row + c0 + CHUNK].copy_from_slice(&acc);
            c0 += CHUNK;
        }
        let o = &mut lv[row + c0..row + n];
        for (ov, &x) in o.iter_mut().zip(&v[row + c0..row + n]) {
            *ov = d * x;
        }
        for (&j, &wij) in cols.iter().zip(w) {
            let at = j as usize * n;
            for (ov, &x) in o.iter_mut().zip(&v[at + c0..at + n]) {
                *ov -= wij * x;
            }
        }
    }
    // The antisymmetric part by pairs of 4 × 4 blocks (I, J), I ≤ J: `out[I, J] = f(A − Bᵀ)`
    // and `out[J, I] = f(B − Aᵀ)` for `A = lv[I, J]`, `B = lv[J, I]`, both transposes in
    // registers; then the last `n % 4` rows and columns entry by entry.
    let whole = n / 4 * 4;
    let block = |lv: &[f64], r0: usize, c0: usize| -> [[f64; 4]; 4] {
        std::array::from_fn(|r| {
            let at = (r0 + r) * n + c0;
            lv[at..at + 4].try_into().expect("four")
        })
    };
    for i0 in (0..whole).step_by(4) {
        for j0 in (i0..whole).step_by(4) {
            let (a, b) = (block(lv, i0, j0), block(lv, j0, i0));
            for r in 0..4 {
                let oa: [f64; 4] = std::array::from_fn(|c| finish(a[r][c] - b[c][r]));
                let ob: [f64; 4] = std::array::from_fn(|c| finish(b[r][c] - a[c][r]));
                let (at, bt) = ((i0 + r) * n + j0, (j0 + r) * n + i0);
                out[at..at + 4].copy_from_slice(&oa);
                out[bt..bt + 4].copy_from_slice(&ob);
            }
        }
    }
    for i in 0..n {
        for j in whole..n {
            out[i * n + j] = finish(lv[i * n + j] - lv[j * n + i]);
            out[j * n + i] = finish(lv[j * n + i] - lv[i * n + j]);
        }
    }
}

multiversion!(reg_pass, reg_body, (v: &[f64], lv: &mut [f64], out: &mut [f64], l: &Laplacian, rows: &[usize], h: f64, hess: bool) -> ());

/// `out = h (LV − (LV)ᵀ)` for `n × n` row-major `v` (`lv` is scratch of the same size): the
/// regulariser's operator of full KR, one per CG iteration (benches/tensor_rank.rs). `rows`
/// is the order in which the rows of `LV` are formed, a permutation of `0..n` (full KR uses
/// [`Laplacian::locality_order`]); any order gives the same bits.
pub fn antisymmetric_regulariser(
    l: &Laplacian,
    h: f64,
    v: &[f64],
    rows: &[usize],
    lv: &mut [f64],
    out: &mut [f64],
) {
    let n = l.n();
    let n2 = n * n;
    assert!(
        v.len() == n2 && lv.len() == n2 && out.len() == n2,
        "n x n buffers"
    );
    let mut seen = vec![false; n];
    for &i in rows {
        assert!(i < n && !seen[i], "rows: a permutation of 0..{n}");
        seen[i] = true;
    }
    assert_eq!(rows.len(), n, "rows: a permutation of 0..{n}");
    reg_pass(Isa::detect(), v, lv, out, l, rows, h, false);
}

/// The full KR problem over antisymmetric `K` (row-major `n²` vector).
pub(crate) struct KrProblem {
    l: Laplacian,
    lambda: f64,
    n: usize,
    /// The pairs `(i, j)`, inequality pairs first.
    pairs: Vec<(usize, usize)>,
    /// Per pair, the slots of its two entries `i n + j` and `j n + i` among `touched`.
    slots: Vec<(usize, usize)>,
    /// The distinct flat indices that the pairs touch, by slot.
    touched: Vec<usize>,
    n_above: usize,
    lv: RefCell<Array2<f64>>,
    /// The order in which [`reg_pass`] visits the rows of `LV` (graph neighbours close
    /// together: the rows of `V` they gather stay in cache).
    rows: Vec<usize>,
    isa: Isa,
}

impl KrProblem {
    pub fn new(l: Laplacian, lambda: f64, train: &Pairs) -> Self {
        let n = l.n();
        let pairs: Vec<(usize, usize)> = train.iter().collect();
        let mut slot_of = std::collections::HashMap::new();
        let mut touched = Vec::new();
        let mut slot = |flat: usize| {
            *slot_of.entry(flat).or_insert_with(|| {
                touched.push(flat);
                touched.len() - 1
            })
        };
        let slots = pairs
            .iter()
            .map(|&(i, j)| (slot(i * n + j), slot(j * n + i)))
            .collect();
        Self {
            rows: l.locality_order(),
            l,
            lambda,
            n,
            pairs,
            slots,
            touched,
            n_above: train.above.len(),
            lv: RefCell::new(Array2::zeros((n, n))),
            isa: Isa::detect(),
        }
    }
}

impl PairProblem for KrProblem {
    fn dim(&self) -> usize {
        self.n * self.n
    }
    fn n_above(&self) -> usize {
        self.n_above
    }
    fn n_pairs(&self) -> usize {
        self.pairs.len()
    }
    fn margins(&self, v: &[f64], out: &mut [f64]) {
        for (o, &(i, j)) in out.iter_mut().zip(&self.pairs) {
            *o = v[i * self.n + j];
        }
    }
    fn adjoint(&self, c: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        for (&ck, &(i, j)) in c.iter().zip(&self.pairs) {
            out[i * self.n + j] += 0.5 * ck;
            out[j * self.n + i] -= 0.5 * ck;
        }
    }
    /// `λ (LV − (LV)ᵀ)/2`, the regulariser's operator on the antisymmetric subspace
    /// ([`reg_pass`]).
    fn reg(&self, v: &[f64], out: &mut [f64]) {
        let mut lv = self.lv.borrow_mut();
        let lvs = lv.as_slice_mut().expect("standard layout");
        reg_pass(
            self.isa,
            v,
            lvs,
            out,
            &self.l,
            &self.rows,
            0.5 * self.lambda,
            false,
        );
    }
    fn precondition(&self, w: &[f64], r: &[f64], z: &mut [f64]) {
        self.jacobi(w, z);
        for (zi, &ri) in z.iter_mut().zip(r) {
            *zi = jacobi_step(ri, *zi);
        }
    }
    /// [`conjugate_gradients`](super::solver)'s arithmetic to the bit (tested), in fewer
    /// passes over the `n²` vectors: the Jacobi diagonal once per solve (not once per
    /// iteration), the Hessian's two terms in one pass ([`Self::hess`]), and the updates of
    /// `s` and `r`, the preconditioned residual and both dot products in one loop (each dot
    /// product summed lane by lane as [`dot`] sums it).
    fn direction(
        &self,
        w: &[f64],
        g: &[f64],
        rel_tol: f64,
        max_iter: usize,
        s: &mut [f64],
    ) -> Result<u64, AlgoError> {
        let d = self.dim();
        let mut diag = vec![0.0; d];
        self.jacobi(w, &mut diag);
        let mut m = vec![0.0; self.pairs.len()];
        let mut t = vec![0.0; self.touched.len()];
        let mut r: Vec<f64> = g.iter().map(|v| -v).collect();
        let mut z: Vec<f64> = r
            .iter()
            .zip(&diag)
            .map(|(&r, &q)| jacobi_step(r, q))
            .collect();
        let mut q = vec![0.0; d];
        s.fill(0.0);
        let target = rel_tol * dot(g, g).sqrt();
        let mut dir = z.clone();
        let mut rz = dot(&r, &z);
        let mut rr = dot(&r, &r);
        let mut it = 0;
        while it < max_iter {
            if rr.sqrt() <= target || rz <= 0.0 {
                break;
            }
            self.hess(w, &dir, &mut m, &mut t, &mut q);
            let dq = dot(&dir, &q);
            if dq <= 0.0 {
                break;
            }
            let alpha = rz / dq;
            let (rz_new, rr_new) = cg_update(self.isa, alpha, &dir, &q, &diag, s, &mut r, &mut z);
            let beta = rz_new / rz;
            (rz, rr) = (rz_new, rr_new);
            cg_direction(self.isa, beta, &z, &mut dir);
            it += 1;
        }
        Ok(it as u64)
    }
}

/// One element of the Jacobi preconditioner: `r / diag`, or `r` where the diagonal is not
/// positive.
#[inline(always)]
fn jacobi_step(r: f64, diag: f64) -> f64 {
    // Both sides computed, then chosen: a select, which vectorises.
    let scaled = r / diag;
    if diag > 0.0 { scaled } else { r }
}

/// `s += α dir`, `r −= α q`, `z = M⁻¹ r` (Jacobi), returning `(r·z, r·r)`, each summed as
/// [`dot`] sums it: element `k` into lane `k % 4` over the whole chunks of four, the rest in
/// order, then `(l0 + l1) + (l2 + l3) + rest`. Element-wise apart from those fixed sums, so
/// every vector width ([`multiversion!`]) gives the same bits.
#[inline(always)]
fn cg_update_body<const W: u8>(
    alpha: f64,
    dir: &[f64],
    q: &[f64],
    diag: &[f64],
    s: &mut [f64],
    r: &mut [f64],
    z: &mut [f64],
) -> (f64, f64) {
    let (mut rz, mut rr) = ([0.0f64; 4], [0.0f64; 4]);
    let whole = dir.len() / 4 * 4;
    let chunks = s[..whole]
        .chunks_exact_mut(4)
        .zip(r[..whole].chunks_exact_mut(4))
        .zip(z[..whole].chunks_exact_mut(4))
        .zip(dir.chunks_exact(4).zip(q.chunks_exact(4)))
        .zip(diag.chunks_exact(4));
    for ((((sc, rc), zc), (dc, qc)), gc) in chunks {
        for lane in 0..4 {
            sc[lane] += alpha * dc[lane];
            rc[lane] -= alpha * qc[lane];
            zc[lane] = jacobi_step(rc[lane], gc[lane]);
            rz[lane] += rc[lane] * zc[lane];
            rr[lane] += rc[lane] * rc[lane];
        }
    }
    for k in whole..dir.len() {
        s[k] += alpha * dir[k];
        r[k] -= alpha * q[k];
        z[k] = jacobi_step(r[k], diag[k]);
    }
    let rz_rest: f64 = r[whole..].iter().zip(&z[whole..]).map(|(x, y)| x * y).sum();
    let rr_rest: f64 = r[whole..].iter().zip(&r[whole..]).map(|(x, y)| x * y).sum();
    (
        (rz[0] + rz[1]) + (rz[2] + rz[3]) + rz_rest,
        (rr[0] + rr[1]) + (rr[2] + rr[3]) + rr_rest,
    )
}

multiversion!(cg_update, cg_update_body, (alpha: f64, dir: &[f64], q: &[f64], diag: &[f64], s: &mut [f64], r: &mut [f64], z: &mut [f64]) -> (f64, f64));

/// `dir = z + β dir`, element-wise ([`multiversion!`]).
#[inline(always)]
fn cg_direction_body<const W: u8>(beta: f64, z: &[f64], dir: &mut [f64]) {
    for (dk, &zk) in dir.iter_mut().zip(z) {
        *dk = zk + beta * *dk;
    }
}

multiversion!(cg_direction, cg_direction_body, (beta: f64, z: &[f64], dir: &mut [f64]) -> ());

impl KrProblem {
    /// The diagonal of the Hessian for active weights `w` (as the Jacobi preconditioner
    /// reads it): `λ (D_ii + D_jj)`, plus `w_k` at both entries of pair `k`.
    fn jacobi(&self, w: &[f64], diag: &mut [f64]) {
        let n = self.n;
        let deg = self.l.degree();
        for i in 0..n {
            for j in 0..n {
                diag[i * n + j] = self.lambda * (deg[i] + deg[j]);
            }
        }
        for (&wk, &(i, j)) in w.iter().zip(&self.pairs) {
            diag[i * n + j] += wk;
            diag[j * n + i] += wk;
        }
    }

    /// `out = H v = 2 R v + 2 Σ_k w_k a_k(v) ∇a_k`, with `hess_apply`'s arithmetic to the
    /// bit: the regulariser's pass writes `2 (R v) + 0` everywhere (what `2 R v + t` is where
    /// the pairs' term `t` is `+0`), then the pairs' entries get their term, summed per
    /// entry in pair order as [`PairProblem::adjoint`] sums it (`t` is never `−0`, so adding
    /// it to `2 (R v) + 0` or to `2 (R v)` gives the same bits). `m` (per pair) and `t` (per
    /// touched entry) are scratch.
    fn hess(&self, w: &[f64], v: &[f64], m: &mut [f64], t: &mut [f64], out: &mut [f64]) {
        for ((mk, &wk), &(i, j)) in m.iter_mut().zip(w).zip(&self.pairs) {
            *mk = v[i * self.n + j];
            *mk *= 2.0 * wk;
        }
        t.fill(0.0);
        for (&mk, &(a, b)) in m.iter().zip(&self.slots) {
            t[a] += 0.5 * mk;
            t[b] -= 0.5 * mk;
        }
        {
            let mut lv = self.lv.borrow_mut();
            let lvs = lv.as_slice_mut().expect("standard layout");
            let h = 0.5 * self.lambda;
            reg_pass(self.isa, v, lvs, out, &self.l, &self.rows, h, true);
        }
        for (&flat, &tk) in self.touched.iter().zip(t.iter()) {
            out[flat] += tk;
        }
    }
}

struct KrRun {
    problem: KrProblem,
    newton: Newton,
    max_iter: u64,
    epsilon: f64,
    model: PairModel,
    /// `‖∇E(0)‖_F`, the scale of the stationarity residual.
    start_gradient: f64,
    /// Scratch for the gradient (`n²`).
    gradient: Vec<f64>,
}

impl KrRun {
    /// `‖∇E‖_F` at the current point.
    fn gradient_norm(&mut self) -> f64 {
        self.newton.gradient(&self.problem, &mut self.gradient);
        self.gradient.iter().map(|g| g * g).sum::<f64>().sqrt()
    }
}

impl Stepper for KrRun {
    type Model = PairModel;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        let done = self.newton.step(&self.problem)?;
        Ok(if done || self.newton.iterations >= self.max_iter {
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
        let n = self.problem.n;
        let k = Array2::from_shape_vec((n, n), self.newton.v.clone()).expect("n x n");
        let sums: Vec<f64> = k.rows().into_iter().map(|r| r.sum()).collect();
        self.model.scores = Array1::from(read_out(&sums, self.epsilon));
        self.model.kernel = Some(PairKernel::Dense(k));
        self.model.objective = self.newton.objective;
        self.model.iterations = self.newton.iterations;
        self.model.inner_iterations = self.newton.inner_iterations;
        let g = self.gradient_norm();
        self.model.stationarity = Some(if self.start_gradient > 0.0 {
            g / self.start_gradient
        } else {
            g
        });
        Ok(show(&self.model))
    }
}

impl PairRanker for KernelRankConfig {
    fn fit(
        &self,
        input: &PairInput,
        schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer<PairModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        input.check()?;
        let n = input.n();
        if n > self.max_n {
            return Err(ParamError::new(
                "max_n",
                format!(
                    "is {} but the input has n = {n} examples: full KR keeps about twelve n x n \
                     matrices ({:.1} GB here); use low-rank KR for large n",
                    self.max_n,
                    12.0 * 8.0 * (n as f64).powi(2) / 1e9
                ),
            )
            .into());
        }
        let spec = graph_spec(self.k, self.connect, self.sigma, self.knn_threads);
        let settings = NewtonSettings {
            tolerance: self.tolerance,
            cg_max_iter: self.cg_max_iter as usize,
        };
        drive(schedule, obs, || {
            let l = laplacian_for(input.x.view(), &spec, input.neighbours.as_deref())?;
            let problem = KrProblem::new(l, self.lambda, &input.train);
            let newton = Newton::new(&problem, vec![0.0; n * n], settings);
            let mut run = KrRun {
                problem,
                newton,
                max_iter: self.max_iter,
                epsilon: self.epsilon,
                model: PairModel::from_scores(Array1::zeros(n)),
                start_gradient: 0.0,
                gradient: vec![0.0; n * n],
            };
            run.start_gradient = run.gradient_norm();
            Ok(run)
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The start K = 0 scores every point alike.
    fn starts_constant(&self) -> bool {
        true
    }

    /// Eq. (18) is convex in `K` (spec §3.5).
    fn is_convex(&self) -> bool {
        true
    }

    /// `K` and `LK`, `n x n` each (the Newton solver's vectors come on top: about twelve such
    /// matrices in all).
    fn memory(&self, n: usize, _dim: usize) -> Option<u64> {
        Some(dyad_kernels::dense_bytes(n, n).saturating_mul(2))
    }
}

/// `E_KR(K)` of Eq. (18) for a dense `K` (any matrix; tests and references).
pub fn kr_energy(k: ArrayView2<'_, f64>, l: &Laplacian, lambda: f64, pairs: &Pairs) -> f64 {
    let a: Vec<f64> = pairs.iter().map(|(i, j)| k[[i, j]]).collect();
    let mut lk = Array2::<f64>::zeros(k.dim());
    l.apply_rows(k, lk.view_mut());
    super::solver::pair_loss(&a, pairs.above.len()) + lambda * (&k * &lk).sum()
}

/// The `kr` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "kr",
    label: "KR (full)",
    description: "full kernel ranking: antisymmetric n x n K with lambda tr(K^T L K) (Eqs. 17-18), read-out Eq. 25; small n only (max_n)",
    family: crate::PAIR_RANKER,
    // 2: the model carries its stationarity residual (recorded as `stationarity`).
    version: 2,
    machine_tolerance: 0.0,
    build: crate::pair_ranker_solver::<KernelRankConfig>,
};

#[cfg(test)]
mod tests {
    use super::super::graph::{GraphSpec, knn};
    use super::super::testkit::{Planted, final_model, planted_classes};
    use super::*;
    use dyad_core::kendall::kendall_tau;
    use dyad_core::seeded;
    use rand::Rng as _;

    /// Three planted classes of `n` points and their symmetrised `k`-NN graph's Laplacian.
    fn planted_graph(n: usize, seed: u64, k: usize) -> (Planted, Laplacian) {
        let data = planted_classes(n, 3, 3, seed);
        let spec = GraphSpec {
            k,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            threads: 1,
        };
        let l = Laplacian::from_knn(&knn(data.input.x.view(), k, 1).unwrap(), &spec).unwrap();
        (data, l)
    }

    #[test]
    fn blocked_regulariser_equals_the_plain_product_and_transpose_bit_for_bit() {
        // n = 150 is neither a multiple of the chunk (32) nor of the blocks (4).
        let (data, l) = planted_graph(150, 7, 6);
        let lambda = 0.3;
        let p = KrProblem::new(l.clone(), lambda, &data.input.train);
        let n = 150;
        let mut rng = seeded(9);
        let a = Array2::from_shape_fn((n, n), |_| rng.random_range(-1.0..1.0));
        let v = &a - &a.t();
        let mut lv = Array2::zeros((n, n));
        l.apply_rows(v.view(), lv.view_mut());
        let want = (&lv - &lv.t()) * (0.5 * lambda);
        let data_order: Vec<usize> = (0..n).collect();
        let reversed: Vec<usize> = (0..n).rev().collect();
        for rows in [&data_order, &reversed, &l.locality_order()] {
            for isa in Isa::available() {
                let mut got = vec![0.0; n * n];
                let mut lv = vec![0.0; n * n];
                reg_pass(
                    isa,
                    v.as_slice().unwrap(),
                    &mut lv,
                    &mut got,
                    &l,
                    rows,
                    0.5 * lambda,
                    false,
                );
                for (g, w) in got.iter().zip(want.iter()) {
                    assert_eq!(g.to_bits(), w.to_bits(), "{isa:?}");
                }
            }
        }
        let mut got = vec![0.0; n * n];
        p.reg(v.as_slice().unwrap(), &mut got);
        assert_eq!(got, want.as_slice().unwrap());
    }

    #[test]
    fn fused_hessian_and_cg_solve_are_the_generic_ones_to_the_bit() {
        // n = 149: the blocks of four and the dot products' lanes both leave a remainder.
        for (n, lambda) in [(149, 0.3), (150, 1e-4)] {
            let (data, l) = planted_graph(n, 11, 6);
            let mut p = KrProblem::new(l, lambda, &data.input.train);
            let mut rng = seeded(n as u64);
            // Active weights as the Newton step makes them (0 or 1), and a few others.
            let w: Vec<f64> = (0..p.n_pairs())
                .map(|k| [0.0, 1.0, 1.0, 0.5][k % 4])
                .collect();
            let antisymmetric = |rng: &mut dyad_core::Rng| {
                let a = Array2::from_shape_fn((n, n), |_| rng.random_range(-1.0..1.0));
                (&a - &a.t()).into_raw_vec_and_offset().0
            };
            let (v, g) = (antisymmetric(&mut rng), antisymmetric(&mut rng));
            for isa in Isa::available() {
                p.isa = isa;
                let (mut m, mut t) = (vec![0.0; p.n_pairs()], vec![0.0; n * n]);
                let mut want = vec![0.0; n * n];
                crate::solver::hess_apply(&p, &w, &v, &mut m, &mut t, &mut want);
                let mut tt = vec![0.0; p.touched.len()];
                let mut got = vec![0.0; n * n];
                p.hess(&w, &v, &mut m, &mut tt, &mut got);
                for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(a.to_bits(), b.to_bits(), "H v at {k}, {isa:?}, n = {n}");
                }
                for (rel, cap) in [(1e-6, 400), (1e-2, 400), (1e-12, 7)] {
                    let mut want = vec![0.0; n * n];
                    let want_it =
                        crate::solver::conjugate_gradients(&p, &w, &g, rel, cap, &mut want);
                    let mut got = vec![0.0; n * n];
                    let got_it = p.direction(&w, &g, rel, cap, &mut got).unwrap();
                    assert_eq!(got_it, want_it, "CG iterations, {isa:?}, n = {n}");
                    assert!(want_it > 1, "the solve iterates");
                    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(a.to_bits(), b.to_bits(), "s at {k}, {isa:?}, n = {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn kr_gradient_matches_finite_differences_in_the_antisymmetric_subspace() {
        let (data, l) = planted_graph(24, 2, 4);
        let pairs = &data.input.train;
        let lambda = 0.2;
        let p = KrProblem::new(l.clone(), lambda, pairs);
        let n = 24;
        let mut rng = seeded(5);
        let a = Array2::from_shape_fn((n, n), |_| rng.random_range(-1.0..1.0));
        let k0 = &a - &a.t();
        let settings = NewtonSettings {
            tolerance: 0.0,
            cg_max_iter: 10,
        };
        let mut nt = Newton::new(&p, k0.as_slice().unwrap().to_vec(), settings);
        let e = |k: &Array2<f64>| kr_energy(k.view(), &l, lambda, pairs);
        assert!((nt.objective - e(&k0)).abs() < 1e-10 * e(&k0));
        let mut g = vec![0.0; n * n];
        nt.gradient(&p, &mut g);
        // Directional derivatives along antisymmetric directions E_ij − E_ji equal ⟨g, dir⟩.
        for (i, j) in [(0, 1), (3, 7), (10, 2), (23, 5)] {
            let mut d = Array2::<f64>::zeros((n, n));
            d[[i, j]] = 1.0;
            d[[j, i]] = -1.0;
            let h = 1e-6;
            let fd = (e(&(&k0 + &(h * &d))) - e(&(&k0 - &(h * &d)))) / (2.0 * h);
            let an = g[i * n + j] - g[j * n + i];
            assert!(
                (fd - an).abs() < 1e-6 * (1.0 + fd.abs()),
                "({i},{j}): {fd} vs {an}"
            );
        }
        // The gradient is antisymmetric.
        for i in 0..n {
            for j in 0..n {
                assert!((g[i * n + j] + g[j * n + i]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn the_stationarity_residual_is_the_relative_gradient_norm_and_vanishes_at_the_optimum() {
        let data = planted_classes(30, 3, 3, 4);
        let cfg = KernelRankConfig {
            lambda: 0.05,
            k: 4,
            ..Default::default()
        };
        let mut obs = dyad_kernels::fixtures::Models::<PairModel>::default();
        cfg.fit(
            &data.input,
            &dyad_core::Schedule::new(vec![0, 1, 1_000_000]),
            &mut seeded(0),
            &mut obs,
        )
        .unwrap();
        let seen: Vec<&PairModel> = obs.seen.iter().map(|(_, m)| m).collect();
        assert_eq!(seen.len(), 3);
        // Dense reference: ‖∇E‖_F from central differences of E along every antisymmetric
        // direction E_ij − E_ji (whose derivative is 2 g_ij), so ‖g‖² = Σ_{i<j} d_ij² / 2.
        let spec = graph_spec(cfg.k, cfg.connect, cfg.sigma, 1);
        let l = laplacian_for(data.input.x.view(), &spec, None).unwrap();
        let n = 30;
        let grad_norm = |k: &Array2<f64>| {
            let e = |k: &Array2<f64>| kr_energy(k.view(), &l, cfg.lambda, &data.input.train);
            let h = 1e-5;
            let mut sq = 0.0;
            for i in 0..n {
                for j in i + 1..n {
                    let mut d = Array2::<f64>::zeros((n, n));
                    d[[i, j]] = h;
                    d[[j, i]] = -h;
                    let fd = (e(&(k + &d)) - e(&(k - &d))) / (2.0 * h);
                    sq += fd * fd / 2.0;
                }
            }
            sq.sqrt()
        };
        let g0 = grad_norm(&Array2::zeros((n, n)));
        assert_eq!(seen[0].stationarity, Some(1.0), "K = 0 is the start");
        let Some(PairKernel::Dense(k1)) = &seen[1].kernel else {
            panic!("full KR reports its kernel");
        };
        let (got, want) = (seen[1].stationarity.unwrap(), grad_norm(k1) / g0);
        assert!(
            want > 1e-3,
            "one Newton step is not the optimum here: {want}"
        );
        assert!((got - want).abs() < 1e-6 * want.max(1.0), "{got} vs {want}");
        let last = seen[2].stationarity.unwrap();
        assert!(last < 1e-6, "the converged fit is stationary: {last}");
    }

    #[test]
    fn full_kr_recovers_a_planted_order_and_refuses_large_n() {
        let data = planted_classes(60, 4, 4, 3);
        let cfg = KernelRankConfig {
            lambda: 1e-3,
            k: 5,
            ..Default::default()
        };
        let model = final_model(&cfg, &data.input, 1);
        assert_eq!(
            kendall_tau(model.scores.as_slice().unwrap(), &data.rank),
            1.0
        );
        let Some(PairKernel::Dense(k)) = &model.kernel else {
            panic!("full KR reports its kernel");
        };
        assert!(
            (k + &k.t()).iter().all(|v| v.abs() < 1e-12),
            "antisymmetric"
        );
        let small = KernelRankConfig { max_n: 50, ..cfg };
        let mut rng = seeded(0);
        let err = small
            .fit(
                &data.input,
                &dyad_core::Schedule::last_only(5),
                &mut rng,
                &mut dyad_core::observe::NullObserver,
            )
            .unwrap_err();
        assert!(err.to_string().contains("max_n"), "{err}");
    }
}
