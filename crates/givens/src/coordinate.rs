//! Algorithm 1: Riemannian coordinate minimisation on `O_d` by Givens rotations (spec §2),
//! as a driver over any [`CoordinateProblem`], plus [`FnObjective`], the algorithm for an
//! arbitrary objective `f: O_d → R` given as a closure.
//!
//! ```text
//! while not converged:
//!     (i, j) ← next pair (rule: uniform with replacement [T], shuffled sweeps, cyclic)
//!     θ      ← argmin_θ f(U·G(i, j, θ))       (the problem's own exact/searched 1-D step)
//!     U      ← U·G(i, j, θ)                   (only when it improves f)
//! ```
//!
//! One **step** of the [`Schedule`] is one coordinate step (one pair drawn), whether or not it
//! moves `U`. The problems that maximise (sparse PCA, tensors) apply this to `−f`; every
//! problem reports the *gain* of a step (the improvement of its objective, ≥ 0).
//!
//! **Convergence** \[A\] (spec §2): steps are grouped in windows of `S = d(d−1)/2`
//! consecutive steps (one sweep's worth, not overlapping), and the run ends after a window that
//! visited **every pair once** and gained less than `tolerance · max(1, |f|)` in total. With
//! shuffled or cyclic selection every window is such a pass. With uniform selection a window
//! of `S` draws misses a given pair with probability ≈ 1/e, so a small window gain proves
//! nothing (measured: runs stopped with a gap 800 times the tolerance); when a uniform window
//! gains less than the tolerance, the next window is a *verification pass* drawing the pairs
//! without replacement (a fresh random order — Algorithm 4's sampling, supplement §A), and the
//! run ends if that pass also gains less, else uniform sampling resumes. `tolerance = 0` never
//! ends a run. A run also ends when the FLOP counter reaches `max_flops` (a FLOP budget), and
//! at the schedule's budget.
//!
//! [`FnObjective`] minimises a closure `f(U)` with an angle search over the whole circle
//! (`f(U·G(i,j,θ))` is 2π-periodic): a grid of `grid` angles, then Brent's method on the grid
//! cell around the best point. Its FLOP counter counts the rotation arithmetic only (the cost
//! of `f` is the caller's business).

use super::angle::{brent_max, grid_max};
use super::flops;
use super::rotation::{ColMatrix, Givens, PairSelector, Selection};
use dyad_core::{Control, Driven, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::{AlgoError, Checked, ParamError, params};
use ndarray::{Array2, ArrayView2};
use std::f64::consts::PI;

/// A problem Algorithm 1 can run on: a state over `O_d` with an exact coordinate step.
pub trait CoordinateProblem {
    /// What the problem reports at checkpoints.
    type Model: ?Sized;
    /// `d`: the pairs are drawn from `0..d`.
    fn dim(&self) -> usize;
    /// The current objective value (in the problem's own sense; used to scale the
    /// convergence test).
    fn value(&self) -> f64;
    /// Take the coordinate step on `(i, j)`, `i < j`: find the best angle, rotate if that
    /// improves the objective, add the work to `flops`, return the gain (≥ 0).
    fn coordinate_step(&mut self, i: usize, j: usize, flops: &mut u64) -> Result<f64, AlgoError>;
    /// Form the model after `flops` solver FLOPs and show it.
    fn report(
        &mut self,
        flops: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError>;
}

/// The outer loop of Algorithm 1: how pairs are chosen and when to stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Descent {
    pub selection: Selection,
    /// Sweep-window convergence tolerance (module docs); 0 disables it.
    pub tolerance: f64,
    /// End the run once this many FLOPs have been spent.
    pub max_flops: Option<u64>,
}

/// `tolerance` and `max_flops`, named as the configurations holding them name them.
impl Checked for Descent {
    fn check(&self) -> Result<(), ParamError> {
        params::non_negative("tolerance", self.tolerance)?;
        params::if_given(self.max_flops, |f| params::at_least_one("max_flops", f))
    }
}

/// Algorithm 1's state for [`drive`].
pub struct CoordinateRun<'r, P> {
    pub problem: P,
    selector: Option<PairSelector>,
    /// The pass without replacement that confirms convergence under uniform selection.
    verify: Option<PairSelector>,
    rng: &'r mut Rng,
    rule: Descent,
    /// FLOPs spent so far (setup included).
    pub flops: u64,
    window_gain: f64,
    window_len: u64,
}

impl<'r, P: CoordinateProblem> CoordinateRun<'r, P> {
    /// A run over `problem`, whose setup cost `setup_flops`.
    pub fn new(problem: P, rule: Descent, rng: &'r mut Rng, setup_flops: u64) -> Self {
        let d = problem.dim();
        Self {
            selector: (d >= 2).then(|| PairSelector::new(d, rule.selection)),
            verify: None,
            problem,
            rng,
            rule,
            flops: setup_flops,
            window_gain: 0.0,
            window_len: 0,
        }
    }
}

impl<P: CoordinateProblem> Stepper for CoordinateRun<'_, P> {
    type Model = P::Model;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        let Some(selector) = self.selector.as_mut() else {
            return Ok(Flow::Finished);
        };
        let (i, j) = match self.verify.as_mut() {
            Some(pass) => pass.next(self.rng),
            None => selector.next(self.rng),
        };
        let gain = self.problem.coordinate_step(i, j, &mut self.flops)?;
        self.window_gain += gain;
        self.window_len += 1;
        if self.rule.max_flops.is_some_and(|cap| self.flops >= cap) {
            return Ok(Flow::Finished);
        }
        if self.window_len == selector.sweep() {
            let scale = self.problem.value().abs().max(1.0);
            let small = self.window_gain < self.rule.tolerance * scale;
            self.window_gain = 0.0;
            self.window_len = 0;
            let full_pass = self.verify.is_some() || self.rule.selection != Selection::Uniform;
            if small && full_pass {
                return Ok(Flow::Finished);
            }
            self.verify = (small && !full_pass)
                .then(|| PairSelector::new(self.problem.dim(), Selection::Shuffled));
        }
        Ok(Flow::Continue)
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&P::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        self.problem.report(self.flops, show)
    }

    fn finished_at_start(&self) -> bool {
        self.selector.is_none()
    }
}

/// Run Algorithm 1 on the problem `init` builds (on the solver clock; `init` adds its setup
/// FLOPs to the counter it is given), reporting at the checkpoints of `schedule`.
pub fn run<P: CoordinateProblem>(
    rule: Descent,
    schedule: &Schedule,
    rng: &mut Rng,
    obs: &mut dyn Observer<P::Model>,
    init: impl FnOnce(&mut u64) -> Result<P, AlgoError>,
) -> Result<Driven, AlgoError> {
    drive(schedule, obs, || {
        let mut setup = 0u64;
        let problem = init(&mut setup)?;
        Ok(CoordinateRun::new(problem, rule, rng, setup))
    })
}

/// The orthogonal matrix of a generic run and its objective value.
#[derive(Debug, Clone, PartialEq)]
pub struct OrthogonalModel {
    /// `U ∈ O_d`.
    pub u: Array2<f64>,
    /// `f(U)`.
    pub value: f64,
    /// Rotation FLOPs so far (the cost of evaluating `f` is not counted).
    pub flops: u64,
}

/// Algorithm 1 for a closure `f(U)` to be minimised over `O_d` (module docs).
pub struct FnObjective<F> {
    f: F,
    u: ColMatrix,
    scratch: ColMatrix,
    value: f64,
    grid: u32,
    xtol: f64,
}

impl<F: FnMut(ArrayView2<'_, f64>) -> f64> FnObjective<F> {
    /// Start from `u0` (orthogonal, `d × d`), with an angle grid of `grid ≥ 3` points refined by
    /// Brent to `xtol` radians.
    pub fn new(mut f: F, u0: ArrayView2<'_, f64>, grid: u32, xtol: f64) -> Result<Self, AlgoError> {
        if u0.nrows() != u0.ncols() {
            return Err(AlgoError::data(format!(
                "FnObjective: need a square U0, got {:?}",
                u0.dim()
            )));
        }
        params::count_at_least("grid", grid.into(), 3)?;
        if xtol.is_nan() || xtol <= 0.0 {
            return Err(AlgoError::param(
                "xtol",
                format!("must be positive, got {xtol}"),
            ));
        }
        let u = ColMatrix::from_array(u0);
        let value = f(u.view());
        Ok(Self {
            f,
            scratch: u.clone(),
            u,
            value,
            grid,
            xtol,
        })
    }

    pub fn u(&self) -> &ColMatrix {
        &self.u
    }

    fn eval_at(&mut self, i: usize, j: usize, theta: f64) -> f64 {
        self.scratch.col_mut(i).copy_from_slice(self.u.col(i));
        self.scratch.col_mut(j).copy_from_slice(self.u.col(j));
        self.scratch.rotate(Givens::new(i, j, theta));
        (self.f)(self.scratch.view())
    }
}

impl<F: FnMut(ArrayView2<'_, f64>) -> f64> CoordinateProblem for FnObjective<F> {
    type Model = OrthogonalModel;

    fn dim(&self) -> usize {
        self.u.cols()
    }

    fn value(&self) -> f64 {
        self.value
    }

    fn coordinate_step(&mut self, i: usize, j: usize, flops: &mut u64) -> Result<f64, AlgoError> {
        let d = self.u.rows();
        let (grid, xtol) = (self.grid, self.xtol);
        let coarse = grid_max(|t| -self.eval_at(i, j, t), -PI, PI, grid);
        let cell = 2.0 * PI / grid as f64;
        let fine = brent_max(
            |t| -self.eval_at(i, j, t),
            coarse.theta - cell,
            coarse.theta + cell,
            xtol,
            100,
        );
        *flops += (coarse.evals + fine.evals) as u64 * flops::rotation(d);
        let best = if fine.value >= coarse.value {
            fine
        } else {
            coarse
        };
        let new_value = -best.value;
        if !new_value.is_finite() {
            return Err(AlgoError::Numerical(format!(
                "objective is not finite at θ = {}",
                best.theta
            )));
        }
        if new_value < self.value {
            self.u.rotate(Givens::new(i, j, best.theta));
            // Keep the scratch copy equal to U in the two columns touched.
            self.scratch.col_mut(i).copy_from_slice(self.u.col(i));
            self.scratch.col_mut(j).copy_from_slice(self.u.col(j));
            *flops += flops::rotation(d);
            let gain = self.value - new_value;
            self.value = new_value;
            Ok(gain)
        } else {
            Ok(0.0)
        }
    }

    fn report(
        &mut self,
        flops: u64,
        show: &mut dyn FnMut(&OrthogonalModel) -> Control,
    ) -> Result<Control, AlgoError> {
        Ok(show(&OrthogonalModel {
            u: self.u.to_array(),
            value: self.value,
            flops,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rotation::orthogonality_defect;
    use dyad_core::{Checkpoint, seeded};
    use rand::Rng as _;

    struct Last(Vec<(Checkpoint, OrthogonalModel)>);
    impl Observer<OrthogonalModel> for Last {
        fn checkpoint(&mut self, at: Checkpoint, m: &OrthogonalModel) -> Control {
            self.0.push((at, m.clone()));
            Control::Continue
        }
    }

    fn sym(d: usize, seed: u64) -> Array2<f64> {
        let mut rng = seeded(seed);
        let a = Array2::from_shape_fn((d, d), |_| rng.random_range(-1.0..1.0));
        &a + &a.t()
    }

    /// Brockett's cost `f(U) = −Tr(Uᵀ B U N)`, `N = diag(1..d)`: every local minimum is global,
    /// with value `−Σ λ_(k) k` (eigenvalues of B sorted ascending, paired with 1..d).
    #[test]
    fn algorithm_1_minimises_the_brockett_cost() {
        let d = 5;
        let b = sym(d, 1);
        let n = Array2::from_diag(&ndarray::Array1::from_iter((1..=d).map(|k| k as f64)));
        let f = |u: ArrayView2<'_, f64>| -(u.t().dot(&b).dot(&u).dot(&n)).diag().sum();
        let (mut lam, _) = dyad_kernels::linalg::sym_eigen(b.view()).unwrap();
        lam.as_slice_mut().unwrap().sort_by(f64::total_cmp);
        let fmin: f64 = -lam
            .iter()
            .enumerate()
            .map(|(k, l)| l * (k + 1) as f64)
            .sum::<f64>();
        for selection in [Selection::Uniform, Selection::Shuffled, Selection::Cyclic] {
            let rule = Descent {
                selection,
                tolerance: 1e-13,
                max_flops: None,
            };
            let mut obs = Last(Vec::new());
            let eye = Array2::<f64>::eye(d);
            let out = run(
                rule,
                &Schedule::new(vec![0, 20_000]),
                &mut seeded(2),
                &mut obs,
                |_| FnObjective::new(f, eye.view(), 24, 1e-10),
            )
            .unwrap();
            let (first, last) = (&obs.0[0].1, &obs.0.last().unwrap().1);
            assert!(first.value > fmin + 0.1);
            assert!(
                (last.value - fmin).abs() < 1e-8,
                "{selection:?}: f = {} vs min {fmin}",
                last.value
            );
            assert!(
                out.finished_early,
                "{selection:?} converged before the budget"
            );
            assert!(orthogonality_defect(last.u.view()) < 1e-12);
            // Values along the run never increase.
            assert!(obs.0.windows(2).all(|w| w[1].1.value <= w[0].1.value));
        }
    }

    #[test]
    fn invalid_rules_are_rejected_and_flop_budget_ends_a_run() {
        let bad = Descent {
            selection: Selection::Uniform,
            tolerance: -1.0,
            max_flops: None,
        };
        assert_eq!(bad.check().unwrap_err().param, "tolerance");
        let no_flops = Descent {
            max_flops: Some(0),
            tolerance: 0.0,
            ..bad
        };
        assert_eq!(no_flops.check().unwrap_err().param, "max_flops");
        let rule = Descent {
            selection: Selection::Uniform,
            tolerance: 0.0,
            max_flops: Some(1),
        };
        let b = sym(3, 4);
        let eye = Array2::<f64>::eye(3);
        let mut obs = Last(Vec::new());
        let out = run(
            rule,
            &Schedule::last_only(100),
            &mut seeded(1),
            &mut obs,
            |_| {
                FnObjective::new(
                    |u: ArrayView2<'_, f64>| u.t().dot(&b).dot(&u)[[0, 0]],
                    eye.view(),
                    8,
                    1e-6,
                )
            },
        )
        .unwrap();
        assert_eq!(out.steps, 1);
        assert!(obs.0[0].0.last);
    }
}
