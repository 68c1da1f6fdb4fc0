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

/// The full KR problem over antisymmetric `K` (row-major `n²` vector).
/// Columns of `V` per block of the product `LV` (256 bytes of each row: a block of `V` and
/// of `LV` together stay within a 1 MB L2 up to `n = 2,000`).
const COL_BLOCK: usize = 32;
/// Side of the square tiles of the antisymmetrisation.
const TILE: usize = 16;

/// `out = h (LV − (LV)ᵀ)` through `lv = LV`, for `n × n` row-major `v`. `LV` is formed in
/// column blocks of [`COL_BLOCK`] (a block of `V`, `n × COL_BLOCK`, stays in cache while every
/// row gathers its neighbours' rows from it), the antisymmetric part over pairs of square
/// tiles of [`TILE`] (the transposed reads stay in cache). Every entry is computed by the same
/// operations in the same order as `Laplacian::apply_rows` followed by a plain transpose would
/// (tested bit for bit), and the pass is compiled per vector width ([`multiversion!`]):
/// element-wise, so every width gives the same bits.
#[inline(always)]
fn reg_body<const W: u8>(v: &[f64], lv: &mut [f64], out: &mut [f64], l: &Laplacian, h: f64) {
    let n = l.n();
    let deg = l.degree();
    for c0 in (0..n).step_by(COL_BLOCK) {
        let c1 = (c0 + COL_BLOCK).min(n);
        for i in 0..n {
            let o = &mut lv[i * n + c0..i * n + c1];
            let d = deg[i];
            for (ov, &bv) in o.iter_mut().zip(&v[i * n + c0..i * n + c1]) {
                *ov = d * bv;
            }
            let (cols, w) = l.row(i);
            for (&j, &wij) in cols.iter().zip(w) {
                let j = j as usize;
                for (ov, &bv) in o.iter_mut().zip(&v[j * n + c0..j * n + c1]) {
                    *ov -= wij * bv;
                }
            }
        }
    }
    // Pairs of tiles (I, J), I ≤ J: `out[I, J] = h (A − Bᵀ)` and `out[J, I] = h (B − Aᵀ)` for
    // `A = lv[I, J]`, `B = lv[J, I]`; the two transposes go through small buffers, so every
    // read and write of `lv` and `out` runs along a row.
    let mut ta = [0.0; TILE * TILE];
    let mut tb = [0.0; TILE * TILE];
    for i0 in (0..n).step_by(TILE) {
        let i1 = (i0 + TILE).min(n);
        for j0 in (i0..n).step_by(TILE) {
            let j1 = (j0 + TILE).min(n);
            let (hi, hj) = (i1 - i0, j1 - j0);
            // ta[j][i] = A[i][j], tb[i][j] = B[j][i].
            for i in 0..hi {
                let row = &lv[(i0 + i) * n + j0..(i0 + i) * n + j1];
                for (j, &a) in row.iter().enumerate() {
                    ta[j * TILE + i] = a;
                }
            }
            for j in 0..hj {
                let row = &lv[(j0 + j) * n + i0..(j0 + j) * n + i1];
                for (i, &b) in row.iter().enumerate() {
                    tb[i * TILE + j] = b;
                }
            }
            for i in 0..hi {
                let row = (i0 + i) * n;
                let (o, a) = (&mut out[row + j0..row + j1], &lv[row + j0..row + j1]);
                for ((o, &a), &b) in o.iter_mut().zip(a).zip(&tb[i * TILE..i * TILE + hj]) {
                    *o = h * (a - b);
                }
            }
            for j in 0..hj {
                let row = (j0 + j) * n;
                let (o, b) = (&mut out[row + i0..row + i1], &lv[row + i0..row + i1]);
                for ((o, &b), &a) in o.iter_mut().zip(b).zip(&ta[j * TILE..j * TILE + hi]) {
                    *o = h * (b - a);
                }
            }
        }
    }
}

multiversion!(reg_pass, reg_body, (v: &[f64], lv: &mut [f64], out: &mut [f64], l: &Laplacian, h: f64) -> ());

/// `out = h (LV − (LV)ᵀ)` for `n × n` row-major `v` (`lv` is scratch of the same size): the
/// regulariser's operator of full KR, one per CG iteration (benches/tensor_rank.rs).
pub fn antisymmetric_regulariser(
    l: &Laplacian,
    h: f64,
    v: &[f64],
    lv: &mut [f64],
    out: &mut [f64],
) {
    let n2 = l.n() * l.n();
    assert!(
        v.len() == n2 && lv.len() == n2 && out.len() == n2,
        "n x n buffers"
    );
    reg_pass(Isa::detect(), v, lv, out, l, h);
}

pub(crate) struct KrProblem {
    l: Laplacian,
    lambda: f64,
    n: usize,
    /// Flat indices `i n + j` of the pairs, inequality pairs first.
    pairs: Vec<(usize, usize)>,
    n_above: usize,
    lv: RefCell<Array2<f64>>,
    isa: Isa,
}

impl KrProblem {
    pub fn new(l: Laplacian, lambda: f64, train: &Pairs) -> Self {
        let n = l.n();
        Self {
            l,
            lambda,
            n,
            pairs: train.iter().collect(),
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
        reg_pass(self.isa, v, lvs, out, &self.l, 0.5 * self.lambda);
    }
    fn precondition(&self, w: &[f64], r: &[f64], z: &mut [f64]) {
        let n = self.n;
        let deg = self.l.degree();
        for i in 0..n {
            for j in 0..n {
                z[i * n + j] = self.lambda * (deg[i] + deg[j]);
            }
        }
        for (&wk, &(i, j)) in w.iter().zip(&self.pairs) {
            z[i * n + j] += wk;
            z[j * n + i] += wk;
        }
        for (zi, &ri) in z.iter_mut().zip(r) {
            *zi = if *zi > 0.0 { ri / *zi } else { ri };
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
    use super::super::testkit::{final_model, planted_classes};
    use super::*;
    use dyad_core::kendall::kendall_tau;
    use dyad_core::seeded;
    use rand::Rng as _;

    #[test]
    fn blocked_regulariser_equals_the_plain_product_and_transpose_bit_for_bit() {
        // n = 150 is neither a multiple of the column block (128) nor of the tile (32).
        let data = planted_classes(150, 3, 3, 7);
        let spec = GraphSpec {
            k: 6,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            threads: 1,
        };
        let l = Laplacian::from_knn(&knn(data.input.x.view(), 6, 1).unwrap(), &spec).unwrap();
        let lambda = 0.3;
        let p = KrProblem::new(l.clone(), lambda, &data.input.train);
        let n = 150;
        let mut rng = seeded(9);
        let a = Array2::from_shape_fn((n, n), |_| rng.random_range(-1.0..1.0));
        let v = &a - &a.t();
        let mut lv = Array2::zeros((n, n));
        l.apply_rows(v.view(), lv.view_mut());
        let want = (&lv - &lv.t()) * (0.5 * lambda);
        for isa in Isa::available() {
            let mut got = vec![0.0; n * n];
            let mut lv = vec![0.0; n * n];
            reg_pass(
                isa,
                v.as_slice().unwrap(),
                &mut lv,
                &mut got,
                &l,
                0.5 * lambda,
            );
            for (g, w) in got.iter().zip(want.iter()) {
                assert_eq!(g.to_bits(), w.to_bits(), "{isa:?}");
            }
        }
        let mut got = vec![0.0; n * n];
        p.reg(v.as_slice().unwrap(), &mut got);
        assert_eq!(got, want.as_slice().unwrap());
    }

    #[test]
    fn kr_gradient_matches_finite_differences_in_the_antisymmetric_subspace() {
        let data = planted_classes(24, 3, 3, 2);
        let spec = GraphSpec {
            k: 4,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            threads: 1,
        };
        let l = Laplacian::from_knn(&knn(data.input.x.view(), 4, 1).unwrap(), &spec).unwrap();
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
