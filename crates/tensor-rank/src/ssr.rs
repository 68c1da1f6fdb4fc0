//! SSR: semi-supervised RankSVM (spec §3.3, Eq. 15): RS with the ambient regulariser replaced
//! by the manifold regulariser on all `n` examples,
//!
//! ```text
//! E_SSR(w) = Σ_P max(0, 1 − (f_i − f_j))² + Σ_O (f_i − f_j)² + λ fᵀ L f + ridge ‖w‖²,   f = Xw
//! ```
//!
//! `fᵀLf = wᵀ(XᵀLX)w`. `XᵀLX` is singular (on the null space of `X` and wherever `Xw` is
//! constant), so a ridge `1e-8‖w‖²` (spec \[OURS\], configurable) keeps the Newton system
//! positive definite. `XᵀLX` is formed once (`LX`: `O(k n m)`; `Xᵀ(LX)`: `O(n m²)`, e.g.
//! 4·10¹⁰ flops at MNIST size); each Newton iteration then costs what RS's does. Solver,
//! steps and model as RS ([`super::rank_svm`]).

use super::graph::{Connect, Sigma, laplacian_for};
use super::linear::{LinearProblem, LinearReg, LinearRun};
use super::solver::NewtonSettings;
use super::{
    PairInput, PairModel, PairRanker, check_graph, default_k, default_knn_threads,
    default_max_newton, default_newton_tol, graph_spec,
};
use dyad_core::{Observer, Rng, Schedule, drive};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::gemm_sym;
use dyad_kernels::params::{self, Checked, ParamError};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// Parameters of SSR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsrConfig {
    /// Weight `λ` of `fᵀLf` (1; chosen on validation pairs).
    #[serde(default = "default_lambda")]
    pub lambda: f64,
    /// Neighbours per point of the graph (8; chosen from {4, 8, 16} on validation pairs).
    #[serde(default = "default_k")]
    pub k: usize,
    /// Edge rule of Eq. (16) (`"or"`, default; `"and"`: mutual kNN).
    #[serde(default)]
    pub connect: Connect,
    /// Per-point kernel scale (`"adaptive"`, default; `"adaptive_literal"`; `{ fixed = σ }`).
    #[serde(default)]
    pub sigma: Sigma,
    /// Ridge `‖w‖²` weight keeping the Newton system definite (1e-8).
    #[serde(default = "default_ridge")]
    pub ridge: f64,
    /// Threads of the kNN search (1; the graph does not depend on it).
    #[serde(default = "default_knn_threads")]
    pub knn_threads: usize,
    /// Most Newton iterations (100).
    #[serde(default = "default_max_newton")]
    pub max_iter: u64,
    /// Converged when an iteration lowers the objective by less than this fraction (1e-10).
    #[serde(default = "default_newton_tol")]
    pub tolerance: f64,
}

fn default_lambda() -> f64 {
    1.0
}
fn default_ridge() -> f64 {
    1e-8
}

impl Default for SsrConfig {
    fn default() -> Self {
        Self {
            lambda: default_lambda(),
            k: default_k(),
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            ridge: default_ridge(),
            knn_threads: default_knn_threads(),
            max_iter: default_max_newton(),
            tolerance: default_newton_tol(),
        }
    }
}

impl Checked for SsrConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("lambda", self.lambda)?;
        check_graph(self.k, self.sigma, self.knn_threads)?;
        params::positive("ridge", self.ridge)?;
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("tolerance", self.tolerance)
    }
}

impl PairRanker for SsrConfig {
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
        let settings = NewtonSettings {
            tolerance: self.tolerance,
            cg_max_iter: 0,
        };
        drive(schedule, obs, || {
            let x = input.x.view();
            let l = laplacian_for(x, &spec, input.neighbours.as_deref())?;
            let (n, m) = x.dim();
            let mut lx = Array2::<f64>::zeros((n, m));
            l.apply_rows(x, lx.view_mut());
            let mut r = Array2::<f64>::zeros((m, m));
            gemm_sym(r.view_mut(), false, x.t(), lx.view());
            r.mapv_inplace(|v| self.lambda * v);
            for a in 0..m {
                r[[a, a]] += self.ridge;
            }
            let problem = LinearProblem::new(x, &input.train, LinearReg::Dense(r));
            Ok(LinearRun::new(x, problem, settings, self.max_iter))
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The start w = 0 scores every point alike.
    fn starts_constant(&self) -> bool {
        true
    }
}

/// The `ssr` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "ssr",
    label: "SSR",
    description: "semi-supervised RankSVM: lambda f^T L f on the kNN graph replaces ||w||^2 (Eq. 15), finite Newton",
    family: crate::PAIR_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::pair_ranker_solver::<SsrConfig>,
};

#[cfg(test)]
mod tests {
    use super::super::graph::{GraphSpec, Laplacian, knn};
    use super::super::solver::{Newton, NewtonSettings, PairProblem, pair_loss};
    use super::super::testkit::{final_model, planted_classes};
    use super::*;
    use dyad_core::kendall::kendall_tau;
    use dyad_core::seeded;
    use ndarray::Array1;
    use rand::Rng as _;

    #[test]
    fn ssr_gradient_matches_finite_differences_and_its_optimum_is_stationary() {
        let data = planted_classes(80, 4, 4, 5);
        let x = &data.input.x;
        let cfg = SsrConfig {
            lambda: 0.05,
            k: 5,
            ..Default::default()
        };
        let spec = GraphSpec {
            k: 5,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            threads: 1,
        };
        let l = Laplacian::from_knn(&knn(x.view(), 5, 1).unwrap(), &spec).unwrap();
        let pairs = &data.input.train;
        let e = |w: &[f64]| {
            let f = x.dot(&Array1::from(w.to_vec()));
            let a: Vec<f64> = pairs.iter().map(|(i, j)| f[i] - f[j]).collect();
            pair_loss(&a, pairs.above.len())
                + cfg.lambda * l.quad(f.as_slice().unwrap())
                + cfg.ridge * w.iter().map(|v| v * v).sum::<f64>()
        };
        let ld = l.to_dense();
        let mut r = x.t().dot(&ld).dot(x) * cfg.lambda;
        for a in 0..x.ncols() {
            r[[a, a]] += cfg.ridge;
        }
        let p = LinearProblem::new(x.view(), pairs, LinearReg::Dense(r));
        let mut rng = seeded(3);
        let w0: Vec<f64> = (0..x.ncols())
            .map(|_| rng.random_range(-0.3..0.3))
            .collect();
        let settings = NewtonSettings {
            tolerance: 0.0,
            cg_max_iter: 0,
        };
        let mut nt = Newton::new(&p, w0.clone(), settings);
        assert!((nt.objective - e(&w0)).abs() < 1e-10 * (1.0 + e(&w0)));
        let mut g = vec![0.0; p.dim()];
        nt.gradient(&p, &mut g);
        for a in 0..p.dim() {
            let h = 1e-6;
            let (mut wp, mut wm) = (w0.clone(), w0.clone());
            wp[a] += h;
            wm[a] -= h;
            let fd = (e(&wp) - e(&wm)) / (2.0 * h);
            assert!(
                (fd - g[a]).abs() < 1e-6 * (1.0 + fd.abs()),
                "{a}: {fd} vs {}",
                g[a]
            );
        }
        // The fitted model is stationary for the objective written here.
        let model = final_model(&cfg, &data.input, 1);
        let Some(crate::ScoreFunction::Linear(w)) = &model.function else {
            panic!("SSR reports a linear function");
        };
        let w = w.to_vec();
        assert!((model.objective - e(&w)).abs() < 1e-9 * (1.0 + e(&w)));
        for a in 0..w.len() {
            let h = 1e-6;
            let (mut wp, mut wm) = (w.clone(), w.clone());
            wp[a] += h;
            wm[a] -= h;
            let fd = (e(&wp) - e(&wm)) / (2.0 * h);
            assert!(fd.abs() < 1e-5, "coordinate {a}: derivative {fd}");
        }
        assert!(kendall_tau(model.scores.as_slice().unwrap(), &data.rank) > 0.9);
    }
}
