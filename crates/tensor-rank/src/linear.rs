//! The linear pair problem shared by RS (Eq. 13) and SSR (Eq. 15): `f(x) = wᵀx`, margins
//! `a_k = wᵀ(x_i − x_j)`, regulariser `wᵀ R w` with `R = λI` (RS) or `R = λXᵀLX + ridge·I`
//! (SSR), solved by the finite Newton method of [`super::solver`] with a dense Cholesky
//! direction.
//!
//! Only labelled examples enter the loss, so the problem keeps their `s` rows `X_S` (`s ≤ 2|P ∪
//! O|`). Margins cost `O(s m)`; the generalised Hessian `2R + 2 X_Sᵀ P_w X_S`, with `P_w` the
//! Laplacian of the active pairs, costs `O(|pairs| m + s m² + m³)` per Newton iteration
//! (never `O(|pairs| m²)`).

use super::model::{PairModel, ScoreFunction};
use super::solver::{Newton, NewtonSettings, PairProblem, Pairs};
use dyad_core::{Control, Flow, Stepper};
use dyad_kernels::AlgoError;
use dyad_kernels::linalg::{dot, gemm_sym, spd_solve};
use ndarray::{Array1, Array2, ArrayView2};

/// The regulariser matrix `R`.
pub(crate) enum LinearReg {
    /// `R = λ I`.
    Ridge(f64),
    /// A dense symmetric `m × m` matrix.
    Dense(Array2<f64>),
}

pub(crate) struct LinearProblem {
    /// Labelled rows (`s × m`).
    xs: Array2<f64>,
    /// Pairs in local indices, inequality pairs first.
    pairs: Vec<(usize, usize)>,
    n_above: usize,
    reg: LinearReg,
}

impl LinearProblem {
    pub fn new(x: ArrayView2<'_, f64>, train: &Pairs, reg: LinearReg) -> Self {
        let n = x.nrows();
        let mut local = vec![usize::MAX; n];
        let mut rows = Vec::new();
        let mut map = |i: usize| {
            if local[i] == usize::MAX {
                local[i] = rows.len();
                rows.push(i);
            }
            local[i]
        };
        let pairs: Vec<(usize, usize)> = train.iter().map(|(i, j)| (map(i), map(j))).collect();
        let m = x.ncols();
        let mut xs = Array2::<f64>::zeros((rows.len(), m));
        for (r, &i) in rows.iter().enumerate() {
            xs.row_mut(r).assign(&x.row(i));
        }
        Self {
            xs,
            pairs,
            n_above: train.above.len(),
            reg,
        }
    }

    fn scores(&self, w: &[f64]) -> Vec<f64> {
        self.xs
            .rows()
            .into_iter()
            .map(|r| dot(r.as_slice().expect("standard layout"), w))
            .collect()
    }
}

impl PairProblem for LinearProblem {
    fn dim(&self) -> usize {
        self.xs.ncols()
    }
    fn n_above(&self) -> usize {
        self.n_above
    }
    fn n_pairs(&self) -> usize {
        self.pairs.len()
    }
    fn margins(&self, w: &[f64], out: &mut [f64]) {
        let f = self.scores(w);
        for (o, &(i, j)) in out.iter_mut().zip(&self.pairs) {
            *o = f[i] - f[j];
        }
    }
    fn adjoint(&self, c: &[f64], out: &mut [f64]) {
        let mut u = vec![0.0; self.xs.nrows()];
        for (&ck, &(i, j)) in c.iter().zip(&self.pairs) {
            u[i] += ck;
            u[j] -= ck;
        }
        out.fill(0.0);
        for (r, &ur) in self.xs.rows().into_iter().zip(&u) {
            if ur != 0.0 {
                for (o, &x) in out.iter_mut().zip(r) {
                    *o += ur * x;
                }
            }
        }
    }
    fn reg(&self, w: &[f64], out: &mut [f64]) {
        match &self.reg {
            LinearReg::Ridge(l) => {
                for (o, &v) in out.iter_mut().zip(w) {
                    *o = l * v;
                }
            }
            LinearReg::Dense(r) => {
                for (o, row) in out.iter_mut().zip(r.rows()) {
                    *o = dot(row.as_slice().expect("standard layout"), w);
                }
            }
        }
    }
    fn direction(
        &self,
        wt: &[f64],
        g: &[f64],
        _rel_tol: f64,
        _max_iter: usize,
        out: &mut [f64],
    ) -> Result<u64, AlgoError> {
        let (s, m) = self.xs.dim();
        // Y = P_w X_S.
        let mut y = Array2::<f64>::zeros((s, m));
        for (&w, &(i, j)) in wt.iter().zip(&self.pairs) {
            if w == 0.0 {
                continue;
            }
            let d = &self.xs.row(i) - &self.xs.row(j);
            y.row_mut(i).scaled_add(w, &d);
            y.row_mut(j).scaled_add(-w, &d);
        }
        let mut h = Array2::<f64>::zeros((m, m));
        gemm_sym(h.view_mut(), false, self.xs.t(), y.view());
        h.mapv_inplace(|v| 2.0 * v);
        match &self.reg {
            LinearReg::Ridge(l) => {
                for a in 0..m {
                    h[[a, a]] += 2.0 * l;
                }
            }
            LinearReg::Dense(r) => h.scaled_add(2.0, r),
        }
        let neg: Vec<f64> = g.iter().map(|v| -v).collect();
        let sol = spd_solve(h.view(), &neg)
            .map_err(|e| AlgoError::Numerical(format!("Newton system: {e}")))?;
        out.copy_from_slice(&sol);
        Ok(1)
    }
}

/// A Newton run of RS or SSR, reporting `f = X w` on all examples.
pub(crate) struct LinearRun<'a> {
    pub x: ArrayView2<'a, f64>,
    pub problem: LinearProblem,
    pub newton: Newton,
    pub max_iter: u64,
    pub model: PairModel,
}

impl<'a> LinearRun<'a> {
    pub fn new(
        x: ArrayView2<'a, f64>,
        problem: LinearProblem,
        settings: NewtonSettings,
        max_iter: u64,
    ) -> Self {
        let m = x.ncols();
        let newton = Newton::new(&problem, vec![0.0; m], settings);
        Self {
            x,
            problem,
            newton,
            max_iter,
            model: PairModel::from_scores(Array1::zeros(x.nrows())),
        }
    }
}

impl Stepper for LinearRun<'_> {
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
        let w = Array1::from(self.newton.v.clone());
        self.model.scores = self.x.dot(&w);
        self.model.function = Some(ScoreFunction::Linear(w));
        self.model.objective = self.newton.objective;
        self.model.iterations = self.newton.iterations;
        self.model.inner_iterations = self.newton.inner_iterations;
        Ok(show(&self.model))
    }
}
