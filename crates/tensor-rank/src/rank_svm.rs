//! RS: RankSVM on inequality and equality pairs (Parikh & Grauman's relative attributes;
//! spec §3.2, Eqs. 12–14):
//!
//! ```text
//! f(x) = wᵀx,   E_RS(w) = Σ_P max(0, 1 − (f_i − f_j))² + Σ_O (f_i − f_j)² + λ‖w‖²
//! ```
//!
//! Strictly convex for `λ > 0`, solved to optimality by the finite Newton method of
//! [`super::solver`] (dense Cholesky direction on the `m × m` generalised Hessian, exact line
//! search); a step of the schedule is one Newton iteration, typically fewer than 20 in all.
//! Inductive: the model carries `w` and scores all `n` examples.

use super::linear::{LinearProblem, LinearReg, LinearRun};
use super::solver::NewtonSettings;
use super::{PairInput, PairModel, PairRanker, default_max_newton, default_newton_tol};
use dyad_core::{Observer, Rng, Schedule, drive};
use dyad_kernels::AlgoError;
use dyad_kernels::params::{self, Checked, ParamError};
use serde::{Deserialize, Serialize};

/// Parameters of RS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankSvmConfig {
    /// Weight `λ` of `‖w‖²` (1; chosen on validation pairs from 1e-4..1e2, spec §3.11).
    #[serde(default = "default_lambda")]
    pub lambda: f64,
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

impl Default for RankSvmConfig {
    fn default() -> Self {
        Self {
            lambda: default_lambda(),
            max_iter: default_max_newton(),
            tolerance: default_newton_tol(),
        }
    }
}

impl Checked for RankSvmConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("lambda", self.lambda)?;
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("tolerance", self.tolerance)
    }
}

impl PairRanker for RankSvmConfig {
    fn fit(
        &self,
        input: &PairInput,
        schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer<PairModel>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        input.check()?;
        let settings = NewtonSettings {
            tolerance: self.tolerance,
            cg_max_iter: 0,
        };
        drive(schedule, obs, || {
            let problem =
                LinearProblem::new(input.x.view(), &input.train, LinearReg::Ridge(self.lambda));
            Ok(LinearRun::new(
                input.x.view(),
                problem,
                settings,
                self.max_iter,
            ))
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

/// The `rank-svm` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "rank-svm",
    label: "RS",
    description: "RankSVM on inequality and equality pairs, f(x) = w^T x, squared hinge + lambda ||w||^2 (Eqs. 12-14), finite Newton",
    family: crate::PAIR_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::pair_ranker_solver::<RankSvmConfig>,
};

#[cfg(test)]
mod tests {
    use super::super::solver::{Pairs, pair_loss};
    use super::super::testkit::{final_model, planted_classes};
    use super::*;
    use dyad_core::kendall::kendall_tau;
    use dyad_core::seeded;
    use dyad_kernels::linalg::spd_solve;
    use ndarray::{Array1, Array2};
    use rand::Rng as _;

    fn objective(x: &Array2<f64>, pairs: &Pairs, lambda: f64, w: &Array1<f64>) -> f64 {
        let f = x.dot(w);
        let a: Vec<f64> = pairs.iter().map(|(i, j)| f[i] - f[j]).collect();
        pair_loss(&a, pairs.above.len()) + lambda * w.dot(w)
    }

    fn random_problem(seed: u64) -> (Array2<f64>, Pairs) {
        let mut rng = seeded(seed);
        let (n, m) = (30, 5);
        let x = Array2::from_shape_fn((n, m), |_| rng.random_range(-1.0..1.0));
        let truth: Vec<f64> = (0..n).map(|i| x[[i, 0]] - 0.5 * x[[i, 1]]).collect();
        let mut above = Vec::new();
        let mut equal = Vec::new();
        for _ in 0..60 {
            let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
            if i == j {
                continue;
            }
            // Noisy labels: some violated pairs keep hinges active at the optimum.
            let flip = rng.random::<f64>() < 0.15;
            if (truth[i] > truth[j]) != flip {
                above.push((i, j));
            } else {
                above.push((j, i));
            }
        }
        for _ in 0..8 {
            equal.push((rng.random_range(0..15), 15 + rng.random_range(0..15)));
        }
        (x, Pairs::new(above, equal))
    }

    #[test]
    fn rs_meets_the_kkt_conditions_and_the_direct_solve_of_its_active_set() {
        let (x, pairs) = random_problem(3);
        let lambda = 0.3;
        let cfg = RankSvmConfig {
            lambda,
            ..Default::default()
        };
        let model = final_model(&cfg, &PairInput::new(x.clone(), pairs.clone()), 7);
        let Some(crate::ScoreFunction::Linear(w)) = &model.function else {
            panic!("RS reports a linear function");
        };
        // KKT: the gradient vanishes (computed here from the definition).
        let f = x.dot(w);
        let mut g = 2.0 * lambda * w;
        let mut active = Vec::new();
        for (k, (i, j)) in pairs.iter().enumerate() {
            let a = f[i] - f[j];
            let d = &x.row(i) - &x.row(j);
            let c = if k < pairs.above.len() {
                if a < 1.0 {
                    active.push(k);
                }
                -2.0 * (1.0 - a).max(0.0)
            } else {
                active.push(k);
                2.0 * a
            };
            g.scaled_add(c, &d);
        }
        assert!(g.iter().all(|v| v.abs() < 1e-9), "gradient {g}");
        let n_active_hinges = active.iter().filter(|&&k| k < pairs.above.len()).count();
        assert!(n_active_hinges > 5 && n_active_hinges < pairs.above.len());
        // On the optimal active set the objective is quadratic: its minimiser solves
        // (λI + Σ_A d dᵀ) w = Σ_{A ∩ P} d, independently of the solver.
        let m = x.ncols();
        let mut h = Array2::<f64>::eye(m) * lambda;
        let mut rhs = Array1::<f64>::zeros(m);
        for &k in &active {
            let (i, j) = pairs.iter().nth(k).unwrap();
            let d = &x.row(i) - &x.row(j);
            for a in 0..m {
                for b in 0..m {
                    h[[a, b]] += d[a] * d[b];
                }
            }
            if k < pairs.above.len() {
                rhs += &d;
            }
        }
        let direct = spd_solve(h.view(), rhs.as_slice().unwrap()).unwrap();
        for (a, b) in w.iter().zip(&direct) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        // And no perturbation lowers the objective.
        let e0 = objective(&x, &pairs, lambda, w);
        assert!((model.objective - e0).abs() < 1e-9 * e0);
        let mut rng = seeded(9);
        for _ in 0..50 {
            let dw = Array1::from_shape_fn(m, |_| rng.random_range(-1e-3..1e-3));
            assert!(objective(&x, &pairs, lambda, &(w + &dw)) >= e0 - 1e-12);
        }
    }

    #[test]
    fn rs_gradient_used_by_the_solver_matches_finite_differences() {
        use super::super::solver::{Newton, NewtonSettings, PairProblem};
        let (x, pairs) = random_problem(4);
        let lambda = 0.7;
        let p = LinearProblem::new(x.view(), &pairs, LinearReg::Ridge(lambda));
        let mut rng = seeded(2);
        let w0: Vec<f64> = (0..x.ncols())
            .map(|_| rng.random_range(-1.0..1.0))
            .collect();
        let settings = NewtonSettings {
            tolerance: 0.0,
            cg_max_iter: 0,
        };
        let mut nt = Newton::new(&p, w0.clone(), settings);
        let mut g = vec![0.0; p.dim()];
        nt.gradient(&p, &mut g);
        let e = |w: &[f64]| objective(&x, &pairs, lambda, &Array1::from(w.to_vec()));
        assert!((nt.objective - e(&w0)).abs() < 1e-12);
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
    }

    #[test]
    fn rs_recovers_a_planted_linear_class_order() {
        let data = planted_classes(200, 6, 5, 11);
        let cfg = RankSvmConfig {
            lambda: 1e-3,
            ..Default::default()
        };
        let model = final_model(&cfg, &data.input, 1);
        assert_eq!(
            kendall_tau(model.scores.as_slice().unwrap(), &data.rank),
            1.0
        );
    }
}
