//! The family's input ([`PairInput`]) and model ([`PairModel`]).

use super::deep::Mlp;
use super::graph::KnnGraph;
use super::low_rank::q_right;
use super::solver::Pairs;
use dyad_kernels::AlgoError;
use ndarray::{Array1, Array2, ArrayView2};
use std::sync::Arc;

/// What a pairwise ranker trains on: every example's features (labelled or not; TR, KR and SSR
/// are transductive and use all of them) and the labelled pairs.
#[derive(Debug, Clone)]
pub struct PairInput {
    /// `n × m` dense features, one row per example.
    pub x: Array2<f64>,
    /// The training labels.
    pub train: Pairs,
    /// Validation labels, drawn like the training ones and disjoint from them. Only DR reads
    /// them inside `fit` (to keep the best of its restarts); the other methods ignore them (the
    /// harness selects their hyper-parameters on them from the outside).
    pub validation: Option<Pairs>,
    /// A precomputed kNN graph of the rows of `x` (e.g. at the largest `k` of a grid). Used
    /// when it has at least the method's `k` neighbours per point; otherwise the method
    /// computes its own.
    pub neighbours: Option<Arc<KnnGraph>>,
    /// A model of the same method, on the same input and graph, at another `λ`: a method whose
    /// [`PairRanker::warm_starts`](super::PairRanker::warm_starts) is true starts from it
    /// instead of its cold start (a warm start along a `λ` path: TR is convex, so the optimum
    /// is the same to the solver's tolerance); the others ignore it.
    pub start: Option<Arc<PairModel>>,
}

impl PairInput {
    /// Features and training pairs, nothing else.
    pub fn new(x: Array2<f64>, train: Pairs) -> Self {
        Self {
            x,
            train,
            validation: None,
            neighbours: None,
            start: None,
        }
    }

    pub fn n(&self) -> usize {
        self.x.nrows()
    }

    /// Shapes and indices consistent, features finite.
    pub fn check(&self) -> Result<(), AlgoError> {
        let n = self.n();
        if n == 0 || self.x.ncols() == 0 {
            return Err(AlgoError::data(format!(
                "the feature matrix is empty ({} x {})",
                n,
                self.x.ncols()
            )));
        }
        if !self.x.iter().all(|v| v.is_finite()) {
            return Err(AlgoError::Numerical(
                "the feature matrix has non-finite entries".into(),
            ));
        }
        self.train.check(n, "training")?;
        if let Some(v) = &self.validation {
            v.check(n, "validation")?;
        }
        if let Some(g) = &self.neighbours
            && g.n() != n
        {
            return Err(AlgoError::data(format!(
                "the given kNN graph has {} points but the data {n}",
                g.n()
            )));
        }
        Ok(())
    }
}

/// A function scoring new examples (the inductive methods).
#[derive(Debug, Clone, PartialEq)]
pub enum ScoreFunction {
    /// `f(x) = wᵀx` (RS, SSR; Eq. 12, no bias).
    Linear(Array1<f64>),
    /// The DR network.
    Network(Mlp),
}

impl ScoreFunction {
    /// Scores of the rows of `x`.
    pub fn score(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>, AlgoError> {
        match self {
            ScoreFunction::Linear(w) => {
                if x.ncols() != w.len() {
                    return Err(AlgoError::data(format!(
                        "linear scorer of dimension {} given {} features",
                        w.len(),
                        x.ncols()
                    )));
                }
                Ok(x.dot(w))
            }
            ScoreFunction::Network(net) => net.score(x),
        }
    }
}

/// The pairwise kernel `K` a KR method learned (antisymmetric).
#[derive(Debug, Clone, PartialEq)]
pub enum PairKernel {
    /// The full `n × n` matrix.
    Dense(Array2<f64>),
    /// The factor `B` (`n × p`) of `K = B Q Bᵀ`, `Q = Rᵀ − R` (Eq. 21).
    LowRank(Array2<f64>),
}

impl PairKernel {
    /// `K_ij`: "how far `i` ranks above `j`" (its sign is the predicted order).
    pub fn value(&self, i: usize, j: usize) -> f64 {
        match self {
            PairKernel::Dense(k) => k[[i, j]],
            PairKernel::LowRank(b) => {
                let p = b.ncols();
                let mut c = vec![0.0; p];
                q_right(b.row(i).as_slice().expect("standard layout"), &mut c);
                c.iter().zip(b.row(j)).map(|(x, y)| x * y).sum()
            }
        }
    }

    /// `K 1` (`O(n²)` dense, `O(np)` low-rank: `B (Q (Bᵀ 1))`).
    pub fn row_sums(&self) -> Vec<f64> {
        match self {
            PairKernel::Dense(k) => k.rows().into_iter().map(|r| r.sum()).collect(),
            PairKernel::LowRank(b) => {
                let p = b.ncols();
                let col: Vec<f64> = (0..p).map(|a| b.column(a).sum()).collect();
                let mut qc = vec![0.0; p];
                // Q (Bᵀ1) = −(Bᵀ1)ᵀ Q as a column, since Qᵀ = −Q.
                q_right(&col, &mut qc);
                b.dot(&Array1::from_iter(qc.iter().map(|v| -v))).to_vec()
            }
        }
    }
}

/// A pairwise ranker's model at one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct PairModel {
    /// Scores `f` of all `n` input examples (higher ranks higher): `Xw` for RS/SSR, the
    /// transductive `f` for TR, the read-out `f*` of Eq. (25) for KR, the network's outputs for
    /// DR.
    pub scores: Array1<f64>,
    /// The scoring function for new examples, when the method has one (RS, SSR, DR).
    pub function: Option<ScoreFunction>,
    /// The learned kernel (KR methods): for `τ` computed from `sign(K_ij)` (spec §3.8).
    pub kernel: Option<PairKernel>,
    /// The method's own objective at this point (DR: the mean pair loss of the reported
    /// network on the training pairs).
    pub objective: f64,
    /// Solver iterations so far (Newton iterations, gradient steps, epochs).
    pub iterations: u64,
    /// Inner work so far (CG iterations, line-search trials, minibatches).
    pub inner_iterations: u64,
    /// Full KR only: the stationarity residual `‖∇E(K)‖_F / ‖∇E(0)‖_F`, the gradient's norm at
    /// this point relative to its norm at the start `K = 0` (0 at the optimum of the convex
    /// problem; issue 42 §4 asks it of every full-KR fit). `None` for the other methods.
    pub stationarity: Option<f64>,
}

impl PairModel {
    /// A model of scores only.
    pub fn from_scores(scores: Array1<f64>) -> Self {
        Self {
            scores,
            function: None,
            kernel: None,
            objective: f64::NAN,
            iterations: 0,
            inner_iterations: 0,
            stationarity: None,
        }
    }
}
