//! TR: transductive ranking (spec §3.4). No model of `f`: the scores `f ∈ Rⁿ` of all examples
//! are the variable,
//!
//! ```text
//! E_TR(f) = Σ_P max(0, 1 − (f_i − f_j))² + Σ_O (f_i − f_j)² + λ fᵀ L f
//! ```
//!
//! Convex. Solved from `f = 0` (or from [`PairInput::start`]'s scores: a warm start along a
//! `λ` path, the same optimum) by the finite Newton method of [`super::solver`] with a
//! conjugate-gradient direction on the generalised Hessian `2λL + 2 Σ_active e_ij e_ijᵀ`
//! (`e_ij = e_i − e_j`), Jacobi-preconditioned (`2λ D_ii + 2·#active pairs at i`). One CG
//! iteration costs `O(nnz(L) + |pairs|)`: the paper's "O(n)" per gradient. The Hessian is
//! singular (constants on each connected component of the graph plus the active pairs). The
//! gradient lies in its range, but the Jacobi-preconditioned residuals do not: every CG
//! iterate and every step has its mean on each group (the graph's components joined by the
//! training pairs, a part of the null space for every active set) removed, else that part
//! grows unseen (measured before: `|f|` up to 3.5e7 at an objective of 1.4e-4, and steps
//! whose objective was lost to rounding). So `f` has mean 0 on each group, and points on
//! components without any label keep `f = 0`.
//! A step of the schedule is one Newton iteration.
//!
//! Spec §3.5 \[DERIVED\]: KR restricted to kernels `K = f1ᵀ − 1fᵀ` is TR with `λ_TR = n λ_KR`;
//! `low_rank`'s tests check it.

use super::graph::{Connect, Laplacian, Sigma, laplacian_for};
use super::solver::{Newton, NewtonSettings, PairProblem, Pairs};
use super::{
    PairInput, PairModel, PairRanker, check_graph, default_cg_max_iter, default_k,
    default_knn_threads, default_max_newton, default_newton_tol, graph_spec,
};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::AlgoError;
use dyad_kernels::params::{self, Checked, ParamError};
use ndarray::Array1;
use serde::{Deserialize, Serialize};

/// Parameters of TR.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransductiveConfig {
    /// Weight `λ` of `fᵀLf` (1; chosen on validation pairs).
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
    1.0
}

impl Default for TransductiveConfig {
    fn default() -> Self {
        Self {
            lambda: default_lambda(),
            k: default_k(),
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            knn_threads: default_knn_threads(),
            max_iter: default_max_newton(),
            tolerance: default_newton_tol(),
            cg_max_iter: default_cg_max_iter(),
        }
    }
}

impl Checked for TransductiveConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::positive("lambda", self.lambda)?;
        check_graph(self.k, self.sigma, self.knn_threads)?;
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("tolerance", self.tolerance)?;
        params::at_least_one("cg_max_iter", self.cg_max_iter)
    }
}

/// The TR problem over `f ∈ Rⁿ`.
pub(crate) struct TrProblem {
    pub l: Laplacian,
    pub lambda: f64,
    pub pairs: Vec<(usize, usize)>,
    pub n_above: usize,
    /// The group of each point: the graph's connected components joined by the training
    /// pairs. `E` is constant along any vector constant on each group.
    group: Vec<usize>,
    /// Points per group.
    group_size: Vec<f64>,
}

impl TrProblem {
    pub fn new(l: Laplacian, lambda: f64, train: &Pairs) -> Self {
        let pairs: Vec<(usize, usize)> = train.iter().collect();
        let (group, group_size) = groups(&l, &pairs);
        Self {
            l,
            lambda,
            pairs,
            n_above: train.above.len(),
            group,
            group_size,
        }
    }
}

impl TrProblem {
    /// `‖∇E(0)‖`, the gradient's norm at the cold start `f = 0` (whatever λ: every margin is
    /// 0, so it is the adjoint of `l'(0)`, −2 on inequality pairs and 0 on equality pairs).
    fn zero_gradient_norm(&self) -> f64 {
        let c: Vec<f64> = (0..self.pairs.len())
            .map(|k| if k < self.n_above { -2.0 } else { 0.0 })
            .collect();
        let mut g = vec![0.0; self.l.n()];
        self.adjoint(&c, &mut g);
        g.iter().map(|v| v * v).sum::<f64>().sqrt()
    }
}

/// Connected components of the graph's edges and the pairs (union–find): each point's
/// component, numbered from 0, and the components' sizes.
fn groups(l: &Laplacian, pairs: &[(usize, usize)]) -> (Vec<usize>, Vec<f64>) {
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let n = l.n();
    let mut parent: Vec<usize> = (0..n).collect();
    let edges = (0..n)
        .flat_map(|i| l.row(i).0.iter().map(move |&j| (i, j as usize)))
        .chain(pairs.iter().copied());
    for (i, j) in edges {
        let (a, b) = (root(&mut parent, i), root(&mut parent, j));
        if a != b {
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut id = vec![usize::MAX; n];
    let mut group = vec![0; n];
    let mut size = Vec::new();
    for (i, g) in group.iter_mut().enumerate() {
        let r = root(&mut parent, i);
        if id[r] == usize::MAX {
            id[r] = size.len();
            size.push(0.0);
        }
        *g = id[r];
        size[id[r]] += 1.0;
    }
    (group, size)
}

impl PairProblem for TrProblem {
    fn dim(&self) -> usize {
        self.l.n()
    }
    fn n_above(&self) -> usize {
        self.n_above
    }
    fn n_pairs(&self) -> usize {
        self.pairs.len()
    }
    fn margins(&self, f: &[f64], out: &mut [f64]) {
        for (o, &(i, j)) in out.iter_mut().zip(&self.pairs) {
            *o = f[i] - f[j];
        }
    }
    fn adjoint(&self, c: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        for (&ck, &(i, j)) in c.iter().zip(&self.pairs) {
            out[i] += ck;
            out[j] -= ck;
        }
    }
    fn reg(&self, f: &[f64], out: &mut [f64]) {
        self.l.apply(f, out);
        for o in out.iter_mut() {
            *o *= self.lambda;
        }
    }
    fn project(&self, v: &mut [f64]) {
        // Subtract each group's mean: E does not see it (margins are differences within
        // pairs, and L annihilates constants on its components).
        let mut mean = vec![0.0; self.group_size.len()];
        for (&g, &x) in self.group.iter().zip(v.iter()) {
            mean[g] += x;
        }
        for (m, &c) in mean.iter_mut().zip(&self.group_size) {
            *m /= c;
        }
        for (x, &g) in v.iter_mut().zip(&self.group) {
            *x -= mean[g];
        }
    }
    fn precondition(&self, w: &[f64], r: &[f64], z: &mut [f64]) {
        // diag(H) = 2λ D_ii + 2 Σ_{active pairs at i} 1; points with a zero diagonal (isolated,
        // unlabelled) have a zero residual and keep z = r = 0.
        let deg = self.l.degree();
        for i in 0..r.len() {
            z[i] = 2.0 * self.lambda * deg[i];
        }
        for (&wk, &(i, j)) in w.iter().zip(&self.pairs) {
            z[i] += 2.0 * wk;
            z[j] += 2.0 * wk;
        }
        for (zi, &ri) in z.iter_mut().zip(r) {
            *zi = if *zi > 0.0 { ri / *zi } else { ri };
        }
    }
}

/// A Newton run of TR.
pub(crate) struct TrRun {
    problem: TrProblem,
    newton: Newton,
    max_iter: u64,
    model: PairModel,
}

impl Stepper for TrRun {
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
        self.model.scores = Array1::from(self.newton.v.clone());
        self.model.objective = self.newton.objective;
        self.model.iterations = self.newton.iterations;
        self.model.inner_iterations = self.newton.inner_iterations;
        Ok(show(&self.model))
    }
}

impl PairRanker for TransductiveConfig {
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
            cg_max_iter: self.cg_max_iter as usize,
        };
        drive(schedule, obs, || {
            let l = laplacian_for(input.x.view(), &spec, input.neighbours.as_deref())?;
            let n = l.n();
            let problem = TrProblem::new(l, self.lambda, &input.train);
            let start = match input.start.as_deref() {
                Some(m) if m.scores.len() == n => {
                    let mut f = m.scores.to_vec();
                    problem.project(&mut f);
                    Some(f)
                }
                _ => None,
            };
            let warm = start.is_some();
            let mut newton = Newton::new(&problem, start.unwrap_or_else(|| vec![0.0; n]), settings);
            if warm {
                newton.set_gradient_scale(problem.zero_gradient_norm());
            }
            Ok(TrRun {
                problem,
                newton,
                max_iter: self.max_iter,
                model: PairModel::from_scores(Array1::zeros(n)),
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The start f = 0 scores every point alike.
    fn starts_constant(&self) -> bool {
        true
    }

    /// From [`PairInput::start`]'s scores (each group's mean removed, as every iterate's).
    fn warm_starts(&self) -> bool {
        true
    }
}

/// The `tr` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "tr",
    label: "TR",
    description: "transductive ranking: scores f in R^n with lambda f^T L f (§3.4), finite Newton with PCG",
    family: crate::PAIR_RANKER,
    // 2: steps that raise E beyond rounding are undone, iterates kept off each group's
    // constants (solver.rs, transductive.rs; tests/kr_consistency.rs).
    version: 2,
    machine_tolerance: 0.0,
    build: crate::pair_ranker_solver::<TransductiveConfig>,
};

#[cfg(test)]
mod tests {
    use super::super::graph::{GraphSpec, knn};
    use super::super::solver::pair_loss;
    use super::super::testkit::{final_model, planted_classes};
    use super::*;
    use dyad_core::kendall::kendall_tau;
    use dyad_core::seeded;
    use rand::Rng as _;

    fn setup() -> (
        super::super::testkit::Planted,
        Laplacian,
        TransductiveConfig,
    ) {
        // k = 35 over classes of 30 points: the graph links the classes, so the optimum
        // trades the hinges against the regulariser (its energy is not zero).
        let data = planted_classes(90, 4, 3, 8);
        let cfg = TransductiveConfig {
            lambda: 0.5,
            k: 35,
            ..Default::default()
        };
        let spec = GraphSpec {
            k: 35,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            threads: 1,
        };
        let l = Laplacian::from_knn(&knn(data.input.x.view(), 35, 1).unwrap(), &spec).unwrap();
        (data, l, cfg)
    }

    fn energy(f: &[f64], pairs: &Pairs, l: &Laplacian, lambda: f64) -> f64 {
        let a: Vec<f64> = pairs.iter().map(|(i, j)| f[i] - f[j]).collect();
        pair_loss(&a, pairs.above.len()) + lambda * l.quad(f)
    }

    #[test]
    fn tr_gradient_matches_finite_differences() {
        let (data, l, cfg) = setup();
        let pairs = &data.input.train;
        let p = TrProblem::new(l.clone(), cfg.lambda, pairs);
        let mut rng = seeded(4);
        let f0: Vec<f64> = (0..p.dim()).map(|_| rng.random_range(-1.0..1.0)).collect();
        let settings = NewtonSettings {
            tolerance: 0.0,
            cg_max_iter: 10,
        };
        let mut nt = Newton::new(&p, f0.clone(), settings);
        let e = |f: &[f64]| energy(f, pairs, &l, cfg.lambda);
        assert!((nt.objective - e(&f0)).abs() < 1e-10 * e(&f0));
        let mut g = vec![0.0; p.dim()];
        nt.gradient(&p, &mut g);
        for a in (0..p.dim()).step_by(7) {
            let h = 1e-6;
            let (mut fp, mut fm) = (f0.clone(), f0.clone());
            fp[a] += h;
            fm[a] -= h;
            let fd = (e(&fp) - e(&fm)) / (2.0 * h);
            assert!(
                (fd - g[a]).abs() < 1e-6 * (1.0 + fd.abs()),
                "{a}: {fd} vs {}",
                g[a]
            );
        }
    }

    #[test]
    fn tr_converges_to_a_stationary_point_and_orders_the_classes() {
        let (data, l, cfg) = setup();
        let model = final_model(&cfg, &data.input, 1);
        let f = model.scores.to_vec();
        let e = |f: &[f64]| energy(f, &data.input.train, &l, cfg.lambda);
        assert!(e(&f) > 1e-3, "energy {}", e(&f));
        assert!((model.objective - e(&f)).abs() < 1e-9 * e(&f));
        // No coordinate direction lowers the (convex) energy.
        for a in 0..f.len() {
            let h = 1e-5;
            let (mut fp, mut fm) = (f.clone(), f.clone());
            fp[a] += h;
            fm[a] -= h;
            let fd = (e(&fp) - e(&fm)) / (2.0 * h);
            assert!(fd.abs() < 1e-6, "coordinate {a}: derivative {fd}");
        }
        assert!(
            model.iterations < 30,
            "{} Newton iterations",
            model.iterations
        );
        assert!(kendall_tau(&f, &data.rank) > 0.95);
    }

    /// Along a λ path, each fit started from the previous λ's solution reaches the cold fit's
    /// optimum in fewer Newton iterations (the harness's `warm_start`).
    #[test]
    fn a_warm_start_along_the_lambda_path_reaches_the_same_optimum_sooner() {
        let (data, _, cfg) = setup();
        let make = |lambda: f64| -> Box<dyn PairRanker> {
            Box::new(TransductiveConfig {
                lambda,
                ..cfg.clone()
            })
        };
        super::super::testkit::check_warm_path(
            &make,
            &data.input,
            &data.rank,
            &[10.0, 1.0, 0.1, 0.01, 1e-3],
            1e-8,
        );
    }

    /// Groups are the graph's components joined by the pairs; `project` removes each group's
    /// mean, which `E` does not see; the Newton iterates keep mean 0 on every group and 0 on
    /// an unlabelled component.
    #[test]
    fn groups_join_components_through_pairs_and_the_fit_has_mean_zero_on_each() {
        // Paths 0-1-2, 3-4 and 5-6; the pair (2, 3) joins the first two; 5-6 has no label.
        let l = Laplacian::from_edges(7, &[(0, 1, 1.0), (1, 2, 0.5), (3, 4, 2.0), (5, 6, 1.0)]);
        let pairs = Pairs::new(vec![(0, 2), (2, 3)], vec![(3, 4)]);
        let p = TrProblem::new(l.clone(), 0.1, &pairs);
        assert_eq!(p.group, [0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(p.group_size, [5.0, 2.0]);
        let mut v = vec![1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 9.0];
        let e = |f: &[f64]| energy(f, &pairs, &l, 0.1);
        let before = e(&v);
        p.project(&mut v);
        assert_eq!(v, [-2.0, -1.0, 0.0, 1.0, 2.0, -1.0, 1.0]);
        assert!((e(&v) - before).abs() < 1e-12 * before);

        let mut nt = Newton::new(
            &p,
            vec![0.0; 7],
            NewtonSettings {
                tolerance: 1e-12,
                cg_max_iter: 50,
            },
        );
        while !nt.step(&p).unwrap() {}
        assert!(nt.v[..5].iter().sum::<f64>().abs() < 1e-12, "{:?}", nt.v);
        assert_eq!(&nt.v[5..], [0.0, 0.0]);
        assert!(nt.v[0] > nt.v[2] && nt.v[2] > nt.v[3], "{:?}", nt.v);
    }
}
