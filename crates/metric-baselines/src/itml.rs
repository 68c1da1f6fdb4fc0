//! ITML: Information-Theoretic Metric Learning (Davis, Kulis, Jain, Sra & Dhillon, ICML 2007),
//! the batch Mahalanobis baseline of the AROMA paper's 20 Newsgroups comparison ("ITML
//! (default parameters)", AROMA spec §3 item 2).
//!
//! # Problem
//!
//! Over positive-definite `A`, with `d_A(x, y) = (x - y)^T A (x - y)`:
//!
//! ```text
//! min  D_ld(A, A_0) + γ D_ld(diag(ξ), diag(ξ_0))
//! s.t. d_A(x_a, x_b) <= ξ_c   for similar pairs c = (a, b)   (ξ_0 = l, the lower bound)
//!      d_A(x_a, x_b) >= ξ_c   for dissimilar pairs           (ξ_0 = u, the upper bound)
//! ```
//!
//! with `D_ld(A, A_0) = tr(A A_0^{-1}) - log det(A A_0^{-1}) - d` and `A_0 = I`.
//!
//! # Algorithm (metric-learn's `_BaseITML._fit`, which is the authors' MATLAB code)
//!
//! Cyclic Bregman projections, one constraint at a time, with dual variables `λ_c >= 0`
//! (start 0) and slack targets `ξ_c` (start at the bound). For constraint `c` with
//! `z = x_a - x_b`, `p = z^T A z` and `γ' = γ / (γ + 1)` (`γ' = 1` for `γ = ∞`):
//!
//! ```text
//! similar:     α = min(λ_c, γ' (1/p - 1/ξ_c)),  β =  α / (1 - α p),  ξ_c ← 1 / (1/ξ_c + α/γ)
//! dissimilar:  α = min(λ_c, γ' (1/ξ_c - 1/p)),  β = -α / (1 + α p),  ξ_c ← 1 / (1/ξ_c - α/γ)
//! λ_c ← λ_c - α;   A ← A + β (A z)(A z)^T
//! ```
//!
//! After the projection `z^T A z = ξ_c` exactly (the constraint is tight against its moved
//! slack target; tested). The paper's Algorithm 1 prints `α = min(λ, (δ/2)(1/p - γ/ξ))`; the
//! reference code (and metric-learn) use the form above, which is the one that makes the
//! projection exact, so that is what we implement. A **step** of the [`Schedule`] is one
//! cycle: every similar constraint, then every dissimilar one (metric-learn's order). After
//! a cycle the run has converged when
//! `Σ |λ - λ_prev| / (‖λ‖₂ + ‖λ_prev‖₂) < convergence_threshold` (λ_prev: after the previous
//! cycle, 0 before the first), or when every `λ` is still 0 (nothing violated); it also ends
//! after `max_iter` cycles. `A` stays positive definite: `1 - α p > 0` and `1 + α p > 0` hold
//! for every `α` the rule can produce, so each update is a Sherman–Morrison step of a PD
//! inverse.
//!
//! # Choices where the sources are loose
//!
//! * **Bounds.** `l`, `u` are the 5th and 95th percentiles of *squared* Euclidean distances
//!   between random pairs of training rows ([`distance_thresholds`], shared with LEGO;
//!   `threshold_pairs` = 1,000 pairs, exact linearly interpolated quantiles). This is what the
//!   authors' MATLAB code does (`ComputeDistanceExtremes`: squared distances of 100 random
//!   pairs, read off a histogram). metric-learn instead takes percentiles of the *unsquared*
//!   distances of all pairs while constraining squared distances; we keep the quantity
//!   bounded and the quantity constrained the same. Zero bounds become 1e-9 (metric-learn).
//! * **Constraints** (metric-learn's `ITML_Supervised` default): `num_constraints = 20 C^2`
//!   similar pairs and as many dissimilar pairs (`C` = number of classes present). A similar
//!   pair draws `a` uniformly over all rows and `b` uniformly over the rows relevant to `a`
//!   other than `a`; a dissimilar pair draws `b` uniformly over the rows not relevant to `a`
//!   (relevance: same label, or intersecting label lists for multi-label data). Ordered pairs
//!   are deduplicated; draws repeat (at most 10 rounds) until enough distinct pairs exist,
//!   kept in draw order (metric-learn keeps a Python set, in hash order). A pair of identical
//!   rows (`z = 0`) is dropped: no metric can change its distance, and for a dissimilar pair
//!   the update would divide by zero.
//! * **Randomness**: the bounds' pairs, then the constraints, drawn from the `rng` given, in
//!   that order.
//!
//! # Cost
//!
//! `A` is kept with its rank-one updates queued ([`QueuedSym`]): per constraint `A z` costs
//! `O(d nnz(z) + 32 d)` through the queue and, when `α != 0`, the rank-one update is queued
//! and applied with 31 others in one sweep (`d^2 / 2` multiply-adds amortised, four rows at
//! a time, instead of a pass over the packed matrix per update); a projection with `α = 0`
//! (satisfied constraint, `λ_c = 0`) costs only `A z`. One cycle is up to `2 · 20 C^2`
//! rank-one updates: 16,000 at `C = 20` (20NG), 100,000 at `C = 50` (Caltech, Fig. 3). The
//! reported model is the dense `A` ([`Mahalanobis`]), formed at each checkpoint on the
//! solver clock.

use crate::lego::{Thresholds, distance_thresholds};
use crate::metric::Mahalanobis;
use dyad_core::{
    Control, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, Stepper, drive, sparse,
};
use dyad_kernels::queued::QueuedSym;
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker, params};
use ndarray::Array2;
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Parameters of ITML (defaults: metric-learn's `ITML_Supervised`, module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItmlConfig {
    /// Slack trade-off `γ > 0` (`inf`: hard constraints). Default 1.
    #[serde(default = "default_gamma")]
    pub gamma: f64,
    /// Largest number of cycles over the constraints (1000).
    #[serde(default = "default_max_iter")]
    pub max_iter: u64,
    /// Converged when the relative change of the dual variables over a cycle is below this
    /// (1e-3).
    #[serde(default = "default_convergence")]
    pub convergence_threshold: f64,
    /// Similar pairs drawn (and as many dissimilar ones); `None`: `20 C^2` for `C` classes.
    #[serde(default)]
    pub num_constraints: Option<usize>,
    /// Percentile (0–100) of squared distances giving the similar-pair bound `l` (5).
    #[serde(default = "default_lower")]
    pub lower_percentile: f64,
    /// Percentile (0–100) of squared distances giving the dissimilar-pair bound `u` (95).
    #[serde(default = "default_upper")]
    pub upper_percentile: f64,
    /// Random pairs whose distances give the percentiles, `>= 1` (1000).
    #[serde(default = "default_threshold_pairs")]
    pub threshold_pairs: usize,
}

fn default_gamma() -> f64 {
    1.0
}
fn default_max_iter() -> u64 {
    1000
}
fn default_convergence() -> f64 {
    1e-3
}
fn default_lower() -> f64 {
    5.0
}
fn default_upper() -> f64 {
    95.0
}
fn default_threshold_pairs() -> usize {
    1000
}

impl Default for ItmlConfig {
    fn default() -> Self {
        Self {
            gamma: default_gamma(),
            max_iter: default_max_iter(),
            convergence_threshold: default_convergence(),
            num_constraints: None,
            lower_percentile: default_lower(),
            upper_percentile: default_upper(),
            threshold_pairs: default_threshold_pairs(),
        }
    }
}

impl Checked for ItmlConfig {
    fn check(&self) -> Result<(), ParamError> {
        // `gamma = inf` is allowed (hard constraints).
        if self.gamma.is_nan() || self.gamma <= 0.0 {
            return Err(ParamError::new(
                "gamma",
                format!("must be positive, got {}", self.gamma),
            ));
        }
        params::at_least_one("max_iter", self.max_iter)?;
        params::non_negative("convergence_threshold", self.convergence_threshold)?;
        params::if_given(self.num_constraints, |n| {
            params::at_least_one("num_constraints", n as u64)
        })?;
        let (lo, hi) = (self.lower_percentile, self.upper_percentile);
        for (param, v) in [("lower_percentile", lo), ("upper_percentile", hi)] {
            if !(0.0..=100.0).contains(&v) {
                return Err(ParamError::new(
                    param,
                    format!("must lie in [0, 100], got {v}"),
                ));
            }
        }
        if lo >= hi {
            return Err(ParamError::new(
                "upper_percentile",
                format!("must exceed lower_percentile ({lo}), got {hi}"),
            ));
        }
        params::at_least_one("threshold_pairs", self.threshold_pairs as u64)
    }
}

/// One pair constraint with its dual variable and slack target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constraint {
    /// Row indices of the pair.
    pub a: usize,
    pub b: usize,
    /// Similar (`d_A <= ξ`) or dissimilar (`d_A >= ξ`).
    pub similar: bool,
    /// Dual variable `λ >= 0`.
    pub lambda: f64,
    /// Slack target `ξ` (starts at the bound).
    pub slack: f64,
}

/// `20 C^2` for the `C` classes present (metric-learn's default).
fn default_count(train: &LabeledSet) -> usize {
    let mut seen = vec![false; train.n_classes()];
    for &l in &train.labels {
        seen[l as usize] = true;
    }
    let c = seen.iter().filter(|&&s| s).count();
    20 * c * c
}

/// Draw `count` distinct ordered pairs `(a, b)`, `a != b`, with `b` relevant to `a`
/// (`similar`) or not, as metric-learn's `Constraints._pairs` (module docs).
fn draw_pairs(
    train: &LabeledSet,
    count: usize,
    similar: bool,
    rng: &mut Rng,
) -> Vec<(usize, usize)> {
    let n = train.n();
    let members = train.class_members();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut partners = Vec::new();
    for _ in 0..10 {
        if out.len() >= count {
            break;
        }
        for _ in 0..count - out.len() {
            let a = rng.random_range(0..n);
            let b = if train.relevance.is_none() {
                let own = &members[train.labels[a] as usize];
                if similar {
                    if own.len() < 2 {
                        continue;
                    }
                    // Uniform over the class without `a`.
                    let mut j = rng.random_range(0..own.len() - 1);
                    if j >= own.partition_point(|&r| r < a) {
                        j += 1;
                    }
                    own[j]
                } else {
                    if own.len() == n {
                        continue;
                    }
                    // Uniform over the other classes.
                    let mut j = rng.random_range(0..n - own.len());
                    for &r in own {
                        if r <= j {
                            j += 1;
                        }
                    }
                    j
                }
            } else {
                partners.clear();
                partners
                    .extend((0..n).filter(|&b| b != a && train.relevant(a, train, b) == similar));
                if partners.is_empty() {
                    continue;
                }
                partners[rng.random_range(0..partners.len())]
            };
            if seen.insert((a, b)) {
                out.push((a, b));
            }
        }
    }
    out.truncate(count);
    out
}

/// The ITML solver: the metric `A`, the constraints with their duals and slacks.
#[derive(Debug, Clone)]
pub struct ItmlSolver<'a> {
    train: &'a LabeledSet,
    gamma: f64,
    thresholds: Thresholds,
    constraints: Vec<Constraint>,
    previous: Vec<f64>,
    a: QueuedSym,
    z: SparseVec,
    az: Vec<f64>,
}

impl<'a> ItmlSolver<'a> {
    /// Bounds, then constraints, from `rng`; `A = I`.
    pub fn new(
        train: &'a LabeledSet,
        config: &ItmlConfig,
        rng: &mut Rng,
    ) -> Result<Self, AlgoError> {
        config.check()?;
        if train.x.data().iter().any(|v| !v.is_finite()) {
            return Err(AlgoError::Data(dyad_core::CoreError::Invalid(
                "features contain NaN or infinite values".into(),
            )));
        }
        let mut thresholds = distance_thresholds(
            train,
            config.lower_percentile,
            config.upper_percentile,
            config.threshold_pairs,
            rng,
        )?;
        thresholds.lower = thresholds.lower.max(1e-9);
        thresholds.upper = thresholds.upper.max(1e-9);
        let count = config
            .num_constraints
            .unwrap_or_else(|| default_count(train));
        let mut z = SparseVec::default();
        let mut constraints = Vec::new();
        for similar in [true, false] {
            for (a, b) in draw_pairs(train, count, similar, rng) {
                z.set_difference(row(train, a), row(train, b));
                if z.values.iter().all(|&v| v == 0.0) {
                    continue;
                }
                constraints.push(Constraint {
                    a,
                    b,
                    similar,
                    lambda: 0.0,
                    slack: if similar {
                        thresholds.lower
                    } else {
                        thresholds.upper
                    },
                });
            }
        }
        let d = train.dim();
        let a = QueuedSym::scaled_identity(d, 1.0).map_err(|e| AlgoError::Numerical(e.0))?;
        Ok(Self {
            train,
            gamma: config.gamma,
            thresholds,
            previous: vec![0.0; constraints.len()],
            constraints,
            a,
            z,
            az: vec![0.0; d],
        })
    }

    /// The bounds `l` (similar) and `u` (dissimilar).
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// The constraints with their current duals and slack targets.
    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }

    /// The current metric (its queued updates applied).
    pub fn matrix(&self) -> Array2<f64> {
        self.a.to_dense()
    }

    /// The current metric as a scorer.
    pub fn metric(&self) -> Mahalanobis {
        Mahalanobis::new(self.matrix())
    }

    /// `d_A(x_a, x_b)` under the current metric.
    pub fn distance(&mut self, a: usize, b: usize) -> f64 {
        self.z
            .set_difference(row(self.train, a), row(self.train, b));
        self.a
            .mul_sparse(&self.z.indices, &self.z.values, &mut self.az);
        sparse::dot_dense(&self.az, &self.z.indices, &self.z.values)
    }

    /// The Bregman projection onto constraint `c`.
    pub fn project(&mut self, c: usize) -> Result<(), AlgoError> {
        let Constraint { a, b, similar, .. } = self.constraints[c];
        let p = self.distance(a, b);
        if !(p > 0.0 && p.is_finite()) {
            return Err(AlgoError::Numerical(format!(
                "ITML: z^T A z = {p} for a non-zero z (A lost positive definiteness)"
            )));
        }
        let gamma = self.gamma;
        let gamma_proj = if gamma.is_infinite() {
            1.0
        } else {
            gamma / (gamma + 1.0)
        };
        let con = &mut self.constraints[c];
        let beta = if similar {
            let alpha = con.lambda.min(gamma_proj * (1.0 / p - 1.0 / con.slack));
            con.lambda -= alpha;
            con.slack = 1.0 / (1.0 / con.slack + alpha / gamma);
            alpha / (1.0 - alpha * p)
        } else {
            let alpha = con.lambda.min(gamma_proj * (1.0 / con.slack - 1.0 / p));
            con.lambda -= alpha;
            con.slack = 1.0 / (1.0 / con.slack - alpha / gamma);
            -alpha / (1.0 + alpha * p)
        };
        if beta != 0.0 {
            self.a.rank_one(beta, &self.az);
        }
        Ok(())
    }

    /// One cycle over all constraints (similar ones first); returns the convergence measure
    /// `Σ |λ - λ_prev| / (‖λ‖ + ‖λ_prev‖)` (`0` when every `λ` is still 0).
    pub fn cycle(&mut self) -> Result<f64, AlgoError> {
        for c in 0..self.constraints.len() {
            self.project(c)?;
        }
        let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
        let now = norm(&mut self.constraints.iter().map(|c| c.lambda));
        let before = norm(&mut self.previous.iter().copied());
        let change: f64 = self
            .constraints
            .iter()
            .zip(&self.previous)
            .map(|(c, &l)| (c.lambda - l).abs())
            .sum();
        for (prev, c) in self.previous.iter_mut().zip(&self.constraints) {
            *prev = c.lambda;
        }
        Ok(if now + before == 0.0 {
            0.0
        } else {
            change / (now + before)
        })
    }
}

fn row(train: &LabeledSet, i: usize) -> sprs::CsVecView<'_, f64> {
    train.x.outer_view(i).expect("row in range")
}

/// ITML's training state for [`drive`]: the reported model is `A` made dense.
struct ItmlRun<'a> {
    solver: ItmlSolver<'a>,
    config: &'a ItmlConfig,
}

impl Stepper for ItmlRun<'_> {
    type Model = dyn Scorer;
    type Error = AlgoError;

    fn step(&mut self, step: u64) -> Result<Flow, AlgoError> {
        let conv = self.solver.cycle()?;
        Ok(
            if conv < self.config.convergence_threshold || step >= self.config.max_iter {
                Flow::Finished
            } else {
                Flow::Continue
            },
        )
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        Ok(show(&self.solver.metric()))
    }

    fn finished_at_start(&self) -> bool {
        self.solver.constraints.is_empty()
    }
}

impl Ranker for ItmlConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        // Bounds and constraints are part of training: on the clock.
        drive(schedule, obs, || {
            Ok(ItmlRun {
                solver: ItmlSolver::new(train, self, rng)?,
                config: self,
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    fn start(&self) -> dyad_kernels::Start {
        dyad_kernels::Start::IdentityDistance
    }

    /// The metric `M`, `d x d`.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        Some(dyad_kernels::dense_bytes(dim, dim))
    }
}

/// The `itml` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "itml",
    label: "ITML",
    description: "information-theoretic metric learning (Davis et al. 2007), Bregman projections cycling over label pairs; metric-learn's defaults",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<ItmlConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::observe::NullObserver;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores, nuisance_data, random_data};
    use dyad_kernels::linalg::sym_eigen;
    use ndarray::{Array1, Array2, Axis};

    fn dense_row(set: &LabeledSet, i: usize) -> Array1<f64> {
        Array1::from(set.x.outer_view(i).unwrap().to_dense().to_vec())
    }

    fn max_abs(a: &Array2<f64>) -> f64 {
        a.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    #[test]
    fn a_projection_is_the_dense_update_and_lands_on_the_moved_slack() {
        let set = random_data(12, 5, 3, 1);
        for gamma in [0.5, 1.0, f64::INFINITY] {
            let cfg = ItmlConfig {
                gamma,
                num_constraints: Some(15),
                ..Default::default()
            };
            let mut s = ItmlSolver::new(&set, &cfg, &mut seeded(2)).unwrap();
            // Warm up so that A is not the identity and some duals are positive.
            s.cycle().unwrap();
            for c in 0..s.constraints().len() {
                let before = s.matrix();
                let con = s.constraints()[c];
                let z = &dense_row(&set, con.a) - &dense_row(&set, con.b);
                let az = before.dot(&z);
                let p = z.dot(&az);
                s.project(c).unwrap();
                let after = s.constraints()[c];
                let alpha = con.lambda - after.lambda;
                let beta = if con.similar {
                    alpha / (1.0 - alpha * p)
                } else {
                    -alpha / (1.0 + alpha * p)
                };
                let outer = az
                    .view()
                    .insert_axis(Axis(1))
                    .dot(&az.view().insert_axis(Axis(0)));
                let want = &before + &(outer * beta);
                let err = max_abs(&(&s.matrix() - &want));
                assert!(
                    err < 1e-12 * max_abs(&want).max(1.0),
                    "{err} at scale {}",
                    max_abs(&want)
                );
                assert!(after.lambda >= 0.0);
                let now = z.dot(&s.matrix().dot(&z));
                if alpha != 0.0 && after.lambda > 0.0 {
                    // Unless the dual was clipped at 0, the constraint is tight against its
                    // moved slack target.
                    assert!(
                        (now - after.slack).abs() < 1e-10 * after.slack,
                        "{now} vs {}",
                        after.slack
                    );
                } else {
                    assert_eq!(after.slack, con.slack);
                }
                if gamma.is_infinite() {
                    assert_eq!(after.slack, con.slack, "hard constraints keep their bound");
                }
            }
        }
    }

    #[test]
    fn converged_metric_meets_its_constraints_up_to_slack_and_stays_pd() {
        let set = nuisance_data(40, 3, 5);
        for gamma in [0.2, 1.0] {
            let cfg = ItmlConfig {
                gamma,
                num_constraints: Some(60),
                convergence_threshold: 1e-8,
                ..Default::default()
            };
            let mut s = ItmlSolver::new(&set, &cfg, &mut seeded(3)).unwrap();
            let th = s.thresholds();
            let mut cycles = 0;
            while s.cycle().unwrap() >= 1e-8 {
                cycles += 1;
                assert!(cycles < 10_000, "no convergence");
            }
            let cons = s.constraints().to_vec();
            assert!(cons.len() > 100);
            for c in &cons {
                let d = s.distance(c.a, c.b);
                let bound = if c.similar { th.lower } else { th.upper };
                assert!(c.lambda >= 0.0);
                // Slack moves only as far as the dual allows: 1/ξ = 1/bound ∓ λ/γ.
                let sign = if c.similar { -1.0 } else { 1.0 };
                let want = 1.0 / (1.0 / bound + sign * c.lambda / gamma);
                assert!(
                    (c.slack - want).abs() < 1e-9 * want,
                    "{} vs {want}",
                    c.slack
                );
                // Feasible against the slack target, tight where the dual is active.
                if c.similar {
                    assert!(d <= c.slack * (1.0 + 1e-6) && c.slack >= bound * (1.0 - 1e-12));
                } else {
                    assert!(d >= c.slack * (1.0 - 1e-6) && c.slack <= bound * (1.0 + 1e-12));
                }
                if c.lambda > 1e-9 {
                    assert!((d - c.slack).abs() < 1e-5 * c.slack, "active but not tight");
                }
            }
            assert!(
                cons.iter().any(|c| c.lambda > 0.0),
                "some constraint was active"
            );
            let a = s.matrix();
            assert_eq!(a, a.t().to_owned());
            let (ev, _) = sym_eigen(a.view()).unwrap();
            assert!(ev[0] > 0.0, "smallest eigenvalue {}", ev[0]);
        }
    }

    #[test]
    fn constraints_are_distinct_labelled_pairs_and_default_to_20_c_squared() {
        let set = nuisance_data(40, 0, 1);
        let s = ItmlSolver::new(&set, &ItmlConfig::default(), &mut seeded(1)).unwrap();
        let cons = s.constraints();
        let (sim, dis): (Vec<&Constraint>, Vec<&Constraint>) = cons.iter().partition(|c| c.similar);
        // 2 classes: 80 of each kind; 40 rows give 20*19*2 = 760 ordered similar pairs.
        assert_eq!((sim.len(), dis.len()), (80, 80));
        let mut seen = HashSet::new();
        for c in cons {
            assert_ne!(c.a, c.b);
            assert_eq!(set.labels[c.a] == set.labels[c.b], c.similar);
            assert!(seen.insert((c.a, c.b, c.similar)));
        }
        let th = s.thresholds();
        assert!(th.lower > 0.0 && th.lower < th.upper);
    }

    #[test]
    fn learns_to_ignore_the_nuisance() {
        let (train, test) = (nuisance_data(60, 0, 1), nuisance_data(40, 0, 2));
        let mut obs = Record::new(test);
        let schedule = Schedule::new(vec![0, 1, 5, 50]);
        ItmlConfig::default()
            .fit(&train, &schedule, &mut seeded(3), &mut obs)
            .unwrap();
        assert_eq!(obs.seen[0].0.step, 0);
        assert!(obs.seen.last().unwrap().0.last);
        let (first, last) = (obs.seen[0].1, obs.seen.last().unwrap().1);
        assert!(first < 0.85 && last > 0.99, "mAP {first} -> {last}");
    }

    #[test]
    fn same_seed_same_model_other_seed_other_model() {
        let train = nuisance_data(30, 2, 4);
        let run = |seed| {
            let mut obs = Scores(train.clone(), Vec::new());
            ItmlConfig::default()
                .fit(&train, &Schedule::last_only(3), &mut seeded(seed), &mut obs)
                .unwrap();
            obs.1
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn invalid_parameters_and_data_are_rejected() {
        let bad = [
            ItmlConfig {
                gamma: 0.0,
                ..Default::default()
            },
            ItmlConfig {
                gamma: f64::NAN,
                ..Default::default()
            },
            ItmlConfig {
                max_iter: 0,
                ..Default::default()
            },
            ItmlConfig {
                convergence_threshold: -1.0,
                ..Default::default()
            },
            ItmlConfig {
                num_constraints: Some(0),
                ..Default::default()
            },
            ItmlConfig {
                lower_percentile: 95.0,
                upper_percentile: 5.0,
                ..Default::default()
            },
            ItmlConfig {
                threshold_pairs: 0,
                ..Default::default()
            },
        ];
        let names = [
            "gamma",
            "gamma",
            "max_iter",
            "convergence_threshold",
            "num_constraints",
            "upper_percentile",
            "threshold_pairs",
        ];
        assert_eq!(bad.len(), names.len());
        for (cfg, param) in bad.into_iter().zip(names) {
            assert_eq!(cfg.check().unwrap_err().param, param, "{cfg:?}");
            let err = cfg.fit(
                &nuisance_data(10, 0, 1),
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut NullObserver,
            );
            assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == param));
        }
        assert_eq!(
            ItmlConfig {
                lower_percentile: -1.0,
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "lower_percentile"
        );
        assert!(
            ItmlConfig {
                gamma: f64::INFINITY,
                ..Default::default()
            }
            .check()
            .is_ok()
        );
        let nan =
            LabeledSet::from_dense_rows(&[vec![f64::NAN], vec![1.0], vec![2.0]], vec![0, 0, 1], 2);
        assert!(
            ItmlConfig::default()
                .fit(
                    &nan,
                    &Schedule::last_only(1),
                    &mut seeded(1),
                    &mut NullObserver
                )
                .is_err()
        );
    }
}
