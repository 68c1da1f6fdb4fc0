//! f-AROMA: AROMA with the factored covariance `Ω ⊗ Λ` (Algorithm 2, Eqs. 12–14; spec §2.5).
//!
//! `W` is `m x n`, `Λ` (`m x m`, query side) and `Ω` (`n x n`, object side) are symmetric
//! positive definite. A round with query `q` and `p = p+ - p-`:
//!
//! ```text
//! s = q^T W p;   if the rule fires on s (default 1 > s):
//!     u = Λ q,  a = q^T u;    w = Ω p,  b = p^T w          (all from Λ_{i-1}, Ω_{i-1})
//!     W ← W + [max(0, 1 - s) / (r + a b)] u w^T              (12)
//!     Ω ← Ω - [a / (m r + a b)] w w^T                        (13)
//!     Λ ← Λ - [b / (n r + a b)] u u^T                        (14)
//! ```
//!
//! # Storage and cost: rank-one terms queued, matrices swept once per [`QUEUE`] updates
//!
//! `W` (`m x n`), `Λ` (`m x m`) and `Ω` (`n x n`) are dense row-major, the factors stored in
//! full (both triangles, exactly equal: see below), memory `mn + m^2 + n^2` values plus the
//! queue. The three updates of a round are rank-one terms in the same two vectors `u` and
//! `w`, so they are not applied at once: a round appends `(u, w, α, -c_Ω, -c_Λ)` to a queue,
//! and the matrices are
//!
//! ```text
//! W = W_0 + Σ_t α_t u_t w_t^T,   Λ = Λ_0 - Σ_t c_Λt u_t u_t^T,   Ω = Ω_0 - Σ_t c_Ωt w_t w_t^T
//! ```
//!
//! over the queued terms `t`. What a round needs is formed through the queue, exactly in
//! exact arithmetic: `q^T W p = q^T W_0 p + Σ_t α_t (u_t·q)(w_t·p)`,
//! `Λ q = Λ_0 q - Σ_t c_Λt (u_t·q) u_t` (the rows of `Λ_0` at `supp(q)`, contiguous because
//! both triangles are stored, plus one axpy per queued term), `Ω p` likewise. When the queue
//! holds [`QUEUE`] terms they are applied in one sweep of each matrix (a rank-`QUEUE`
//! update, four rows at a time so that each element of a term vector is loaded once for
//! four rows, the rows kept in L1 while every term is added). An updating round thus costs
//! `O(nnz(q) m + nnz(p) n + QUEUE (m + n))` plus `1/QUEUE` of a sweep of `W`, `Λ` and `Ω`
//! (`2 (mn + m^2/2 + n^2/2)` flops per round, amortised, and `1/QUEUE` of their memory
//! traffic), instead of streaming all three matrices every round as the eager form must
//! (the `f_aroma_bound` bench measures that floor). Measured at d = 1,000 (`just bench`,
//! one core, the other running a LORETA experiment): 187 µs per updating round against
//! 172 µs for one read-modify-write sweep of the packed Λ and Ω and 2.1–2.2 ms for the
//! eager round; one row at a time (each term vector re-read per row) took 286–302 µs.
//! A passive round costs
//! `O(nnz(q) nnz(p) + QUEUE (nnz(q) + nnz(p)))`.
//!
//! Exact symmetry: a flush computes the lower triangle of `Λ_0` and `Ω_0` (entry `(i, j)`,
//! `j <= i`, gains `Σ_t (-c_t u_t[i]) u_t[j]`) and copies it onto the upper one, so the
//! stored factors are symmetric bit for bit. The queued form changes rounding only
//! (different association of the same sums); the tests check it against the eager
//! formulas across several flushes. A model is read ([`FactoredAroma::weights`],
//! [`FactoredAroma::lambda`], scoring) with the queue applied, through the same flush.
//!
//! # Numerical guard
//!
//! In exact arithmetic (13)–(14) keep `Λ`, `Ω` positive definite (Woodbury). A computed
//! `a < 0` or `b < 0` (or a non-finite value) means rounding has broken that, and the round
//! fails with [`AlgoError::Numerical`] instead of continuing from an indefinite covariance.
//! The tests run 10^6 rounds without it happening.

use super::arow::ArowStep;
use super::{RoundCounts, SparseRef, Update, check_features, check_r, default_r};
use dyad_core::sampling::TripletSampler;
use dyad_core::sparse::dot_dense;
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, drive, steps};
use dyad_kernels::linalg::try_zeroed;
use dyad_kernels::queued::{
    QUEUE, add_terms, flush_symmetric, queue_dots, rank_update, rows_times,
};
use dyad_kernels::simd::{Isa, multiversion};
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};

/// Parameters of f-AROMA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactoredAromaConfig {
    /// The regulariser `r > 0` of Eq. (12)–(14); default 0.01 (see
    /// [`super::DiagonalAromaConfig::r`]).
    #[serde(default = "default_r")]
    pub r: f64,
    /// When a round updates: `"margin"` (default, `1 > q^T W p`) or `"mistake"`.
    #[serde(default)]
    pub update: Update,
}

impl Default for FactoredAromaConfig {
    fn default() -> Self {
        Self {
            r: default_r(),
            update: Update::default(),
        }
    }
}

impl Checked for FactoredAromaConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_r(self.r)
    }
}

/// The f-AROMA learner: the mean `W` (`m x n`), the factors `Λ` (`m x m`) and `Ω`
/// (`n x n`) as swept matrices plus a queue of rank-one terms, and the round counters. As a
/// [`Scorer`] it is `S(q, p) = q^T W p`.
#[derive(Debug, Clone, PartialEq)]
pub struct FactoredAroma {
    m: usize,
    n: usize,
    /// `W_0`, `Λ_0`, `Ω_0`: row-major, the factors with both triangles.
    w: Vec<f64>,
    lambda: Vec<f64>,
    omega: Vec<f64>,
    /// The queue: `u_t` (rows of `m`), `w_t` (rows of `n`), and per term `α_t`, `-c_Λt`,
    /// `-c_Ωt`; `queued` terms are live.
    qu: Vec<f64>,
    qw: Vec<f64>,
    alpha: Vec<f64>,
    g_lambda: Vec<f64>,
    g_omega: Vec<f64>,
    queued: usize,
    r: f64,
    rule: Update,
    counts: RoundCounts,
    /// The vector width of the flush ([`Isa::detect`]).
    isa: Isa,
    /// Scratch: `u_t·q` and `w_t·p` of the current round, then the axpy coefficients.
    dq: Vec<f64>,
    dp: Vec<f64>,
    /// Scratch of a flush: the coefficients of four rows.
    coefs: Vec<f64>,
}

fn numerical(e: dyad_kernels::linalg::LinalgError) -> AlgoError {
    AlgoError::Numerical(format!("f-AROMA: {}", e.0))
}

/// The swept matrices of a flush.
struct Sweep<'a> {
    w: &'a mut [f64],
    lambda: &'a mut [f64],
    omega: &'a mut [f64],
    m: usize,
    n: usize,
}

/// The queued terms of a flush (`alpha.len()` of them).
struct Terms<'a> {
    qu: &'a [f64],
    qw: &'a [f64],
    alpha: &'a [f64],
    g_lambda: &'a [f64],
    g_omega: &'a [f64],
}

/// One flush: `W_0 += Σ_t α_t u_t w_t^T` ([`rank_update`]), then both factors
/// ([`flush_symmetric`]); `coefs` is scratch of `4 QUEUE`. Compiled per vector width
/// ([`multiversion!`]): element-wise, so every width gives the same bits.
#[inline(always)]
fn flush_body<const W: u8>(s: Sweep<'_>, t: Terms<'_>, coefs: &mut [f64]) {
    rank_update(s.w, s.n, t.alpha, t.qu, s.m, t.qw, false, coefs);
    flush_symmetric(s.lambda, s.m, t.g_lambda, t.qu, coefs);
    flush_symmetric(s.omega, s.n, t.g_omega, t.qw, coefs);
}

multiversion!(flush_all, flush_body, (s: Sweep<'_>, t: Terms<'_>, coefs: &mut [f64]) -> ());

impl FactoredAroma {
    /// `W = 0`, `Λ = I`, `Ω = I`.
    pub fn new(m: usize, n: usize, r: f64, rule: Update) -> Result<Self, AlgoError> {
        check_r(r)?;
        let eye = |k: usize, what: &str| -> Result<Vec<f64>, AlgoError> {
            let len = k
                .checked_mul(k)
                .ok_or_else(|| AlgoError::data(format!("f-AROMA: {k} x {k} overflows")))?;
            let mut a = try_zeroed(len, what).map_err(numerical)?;
            for i in 0..k {
                a[i * k + i] = 1.0;
            }
            Ok(a)
        };
        let len = m
            .checked_mul(n)
            .ok_or_else(|| AlgoError::data(format!("f-AROMA: {m} x {n} overflows")))?;
        let w = try_zeroed(len, "f-AROMA mean").map_err(numerical)?;
        let (lambda, omega) = (eye(m, "f-AROMA Λ")?, eye(n, "f-AROMA Ω")?);
        Ok(Self::assemble(m, n, w, lambda, omega, r, rule))
    }

    /// From a mean and symmetric positive-definite factors (the lower triangles are read).
    pub fn from_parts(
        w: ArrayView2<'_, f64>,
        lambda: ArrayView2<'_, f64>,
        omega: ArrayView2<'_, f64>,
        r: f64,
        rule: Update,
    ) -> Result<Self, AlgoError> {
        check_r(r)?;
        let (m, n) = w.dim();
        if lambda.dim() != (m, m) || omega.dim() != (n, n) {
            return Err(AlgoError::data(format!(
                "f-AROMA: mean {:?} needs Λ {m} x {m} and Ω {n} x {n}, got {:?} and {:?}",
                w.dim(),
                lambda.dim(),
                omega.dim()
            )));
        }
        let lower = |a: ArrayView2<'_, f64>| -> Vec<f64> {
            let k = a.nrows();
            (0..k * k)
                .map(|e| {
                    let (i, j) = (e / k, e % k);
                    a[[i.max(j), i.min(j)]]
                })
                .collect()
        };
        Ok(Self::assemble(
            m,
            n,
            w.iter().copied().collect(),
            lower(lambda),
            lower(omega),
            r,
            rule,
        ))
    }

    fn assemble(
        m: usize,
        n: usize,
        w: Vec<f64>,
        lambda: Vec<f64>,
        omega: Vec<f64>,
        r: f64,
        rule: Update,
    ) -> Self {
        Self {
            m,
            n,
            w,
            lambda,
            omega,
            qu: vec![0.0; QUEUE * m],
            qw: vec![0.0; QUEUE * n],
            alpha: Vec::with_capacity(QUEUE),
            g_lambda: Vec::with_capacity(QUEUE),
            g_omega: Vec::with_capacity(QUEUE),
            queued: 0,
            r,
            rule,
            counts: RoundCounts::default(),
            isa: Isa::detect(),
            dq: vec![0.0; QUEUE],
            dp: vec![0.0; QUEUE],
            coefs: vec![0.0; 4 * QUEUE],
        }
    }

    /// `(m, n)`.
    pub fn dims(&self) -> (usize, usize) {
        (self.m, self.n)
    }

    /// Apply the queued terms to `W`, `Λ` and `Ω` (one sweep of each).
    pub fn flush(&mut self) {
        let k = self.queued;
        if k == 0 {
            return;
        }
        flush_all(
            self.isa,
            Sweep {
                w: &mut self.w,
                lambda: &mut self.lambda,
                omega: &mut self.omega,
                m: self.m,
                n: self.n,
            },
            Terms {
                qu: &self.qu,
                qw: &self.qw,
                alpha: &self.alpha,
                g_lambda: &self.g_lambda,
                g_omega: &self.g_omega,
            },
            &mut self.coefs,
        );
        self.alpha.clear();
        self.g_lambda.clear();
        self.g_omega.clear();
        self.queued = 0;
    }

    /// This learner with its queue applied (what every read of the model sees).
    fn flushed(&self) -> std::borrow::Cow<'_, Self> {
        if self.queued == 0 {
            std::borrow::Cow::Borrowed(self)
        } else {
            let mut f = self.clone();
            f.flush();
            std::borrow::Cow::Owned(f)
        }
    }

    /// The mean `W`.
    pub fn weights(&self) -> Array2<f64> {
        let f = self.flushed();
        Array2::from_shape_vec((self.m, self.n), f.w.clone()).expect("m x n")
    }

    /// The query-side factor `Λ`.
    pub fn lambda(&self) -> Array2<f64> {
        let f = self.flushed();
        Array2::from_shape_vec((self.m, self.m), f.lambda.clone()).expect("m x m")
    }

    /// The object-side factor `Ω`.
    pub fn omega(&self) -> Array2<f64> {
        let f = self.flushed();
        Array2::from_shape_vec((self.n, self.n), f.omega.clone()).expect("n x n")
    }

    /// The full covariance `Ω ⊗ Λ` of `vec W` (column-major `vec`): `mn x mn`, for tests.
    pub fn kronecker_covariance(&self) -> Array2<f64> {
        let (l, o) = (self.lambda(), self.omega());
        let (m, n) = (self.m, self.n);
        Array2::from_shape_fn((m * n, m * n), |(i, j)| {
            // vec index k + l m  <->  W[k, l].
            o[[i / m, j / m]] * l[[i % m, j % m]]
        })
    }

    /// The rounds seen so far.
    pub fn counts(&self) -> RoundCounts {
        self.counts
    }

    /// `q^T W_0 p`, the swept part of the score.
    fn swept_similarity(&self, q: SparseRef<'_>, p: SparseRef<'_>) -> f64 {
        let n = self.n;
        let mut s = 0.0;
        for (&k, &qk) in q.0.iter().zip(q.1) {
            s += qk * dot_dense(&self.w[k * n..(k + 1) * n], p.0, p.1);
        }
        s
    }

    /// `q^T W p` for sparse `q` (indices `< m`) and `p` (indices `< n`).
    pub fn similarity(&self, q: SparseRef<'_>, p: SparseRef<'_>) -> f64 {
        let (m, n) = (self.m, self.n);
        let queued: f64 = (0..self.queued)
            .map(|t| {
                self.alpha[t]
                    * dot_dense(&self.qu[t * m..(t + 1) * m], q.0, q.1)
                    * dot_dense(&self.qw[t * n..(t + 1) * n], p.0, p.1)
            })
            .sum();
        self.swept_similarity(q, p) + queued
    }

    /// One round on query `q` and object difference `p` (sparse, strictly increasing indices
    /// `< m` and `< n`): Eq. (12)–(14) when the rule fires.
    pub fn step(&mut self, q: SparseRef<'_>, p: SparseRef<'_>) -> Result<ArowStep, AlgoError> {
        let (m, n, k) = (self.m, self.n, self.queued);
        queue_dots(&self.qu, m, q.0, q.1, &mut self.dq[..k]);
        queue_dots(&self.qw, n, p.0, p.1, &mut self.dp[..k]);
        let queued: f64 = (0..k)
            .map(|t| self.alpha[t] * self.dq[t] * self.dp[t])
            .sum();
        let s = self.swept_similarity(q, p) + queued;
        let fired = self.rule.fires(s);
        self.counts.record(s, fired);
        if !fired {
            return Ok(ArowStep::passive(s));
        }
        // u = Λ q and w = Ω p through the queue, written into the queue's next slot.
        for (d, &g) in self.dq[..k].iter_mut().zip(&self.g_lambda) {
            *d *= g;
        }
        for (d, &g) in self.dp[..k].iter_mut().zip(&self.g_omega) {
            *d *= g;
        }
        let (done, slot) = self.qu.split_at_mut(k * m);
        let u = &mut slot[..m];
        rows_times(&self.lambda, m, q.0, q.1, u);
        add_terms(u, &self.dq[..k], done, m);
        let (done, slot) = self.qw.split_at_mut(k * n);
        let wv = &mut slot[..n];
        rows_times(&self.omega, n, p.0, p.1, wv);
        add_terms(wv, &self.dp[..k], done, n);
        let a = dot_dense(u, q.0, q.1);
        let b = dot_dense(wv, p.0, p.1);
        if !(a >= 0.0 && b >= 0.0 && a.is_finite() && b.is_finite()) {
            return Err(AlgoError::Numerical(format!(
                "f-AROMA: q^T Λ q = {a}, p^T Ω p = {b} (a factor lost positive definiteness)"
            )));
        }
        let (mf, nf, r) = (m as f64, n as f64, self.r);
        let ab = a * b;
        let loss = (1.0 - s).max(0.0);
        let alpha = loss / (r + ab);
        let step = ArowStep {
            margin: s,
            loss,
            confidence: ab,
            alpha,
            updated: true,
        };
        if a == 0.0 || b == 0.0 {
            // q = 0 or p = 0: u = 0 or w = 0, and every update is zero.
            return Ok(step);
        }
        // (12)–(14) as queued terms.
        self.alpha.push(alpha);
        self.g_omega.push(-a / (mf * r + ab));
        self.g_lambda.push(-b / (nf * r + ab));
        self.queued += 1;
        if self.queued == QUEUE {
            self.flush();
        }
        Ok(step)
    }
}

impl Scorer for FactoredAroma {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let (m, n, k) = (self.m, self.n, self.queued);
        dyad_core::model::score_via_dense_left(n, query, candidates, out, |q, u| {
            // u = W^T q = W_0^T q + Σ_t α_t (u_t·q) w_t.
            for (&i, &qi) in q.indices().iter().zip(q.data()) {
                for (ub, &w) in u.iter_mut().zip(&self.w[i * n..(i + 1) * n]) {
                    *ub += qi * w;
                }
            }
            let mut coefs = vec![0.0; k];
            queue_dots(&self.qu, m, q.indices(), q.data(), &mut coefs);
            for (c, &a) in coefs.iter_mut().zip(&self.alpha) {
                *c *= a;
            }
            add_terms(u, &coefs, &self.qw, n);
        });
    }

    /// The confidence of the model and the online rounds behind it: the mean eigenvalue of
    /// each factor (`tr Λ / m`, `tr Ω / n`), the counts of rounds, updates and mistakes,
    /// and the bytes of `W`, the factors and the queue.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        let f = self.flushed();
        let trace = |a: &[f64], k: usize| (0..k).map(|i| a[i * k + i]).sum::<f64>();
        let mut out = vec![
            (
                "lambda_trace_mean",
                trace(&f.lambda, self.m) / self.m.max(1) as f64,
            ),
            (
                "omega_trace_mean",
                trace(&f.omega, self.n) / self.n.max(1) as f64,
            ),
        ];
        out.extend(self.counts.statistics());
        // W (m n), the factors (m^2 + n^2) and the queue (QUEUE (m + n + 3)).
        let floats =
            self.m * self.n + self.m * self.m + self.n * self.n + QUEUE * (self.m + self.n + 3);
        out.push(("model_bytes", (floats * std::mem::size_of::<f64>()) as f64));
        out
    }
}

impl Ranker for FactoredAromaConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        check_features(train)?;
        let sampler = TripletSampler::new(train)?;
        let row = |i: usize| train.x.outer_view(i).expect("sampled row in range");
        struct State<'r> {
            learner: FactoredAroma,
            diff: SparseVec,
            rng: &'r mut Rng,
        }
        let step = |s: &mut State<'_>, _: u64| {
            let t = sampler.sample(s.rng);
            s.diff.set_difference(row(t.positive), row(t.negative));
            let q = row(t.query);
            s.learner
                .step((q.indices(), q.data()), (&s.diff.indices, &s.diff.values))?;
            Ok::<_, AlgoError>(Flow::Continue)
        };
        let d = train.dim();
        drive(schedule, obs, || {
            let state = State {
                learner: FactoredAroma::new(d, d, self.r, self.update)?,
                diff: SparseVec::default(),
                rng,
            };
            Ok(steps(state, step, |s: &State<'_>| -> &dyn Scorer {
                &s.learner
            }))
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    fn start(&self) -> dyad_kernels::Start {
        dyad_kernels::Start::Zero
    }

    /// `W`, `Λ` and `Ω`, `d x d` each, and the queue of rank-one terms.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        let queue = dyad_kernels::dense_bytes(QUEUE, 2 * dim + 3);
        Some(
            dyad_kernels::dense_bytes(dim, dim)
                .saturating_mul(3)
                .saturating_add(queue),
        )
    }

    fn statistics(&self) -> &'static [&'static str] {
        &[
            "lambda_trace_mean",
            "omega_trace_mean",
            "online_rounds",
            "online_updates",
            "online_mistakes",
            "model_bytes",
        ]
    }
}

/// The `f-aroma` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "f-aroma",
    label: "f-AROMA",
    description: "factored AROMA (Algorithm 2): covariance Omega (x) Lambda, W0 = 0, Omega0 = Lambda0 = I",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<FactoredAromaConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arow;
    use crate::testkit::{
        aroma_objective, minimise, random_sparse, random_spd, separable_rounds, spd_from_cholesky,
        spd_to_cholesky, vec_of, vec_outer,
    };
    use dyad_core::observe::NullObserver;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores, nuisance_data};
    use dyad_kernels::linalg::sym_eigen;
    use ndarray::Array1;
    use rand::Rng as _;

    fn max_abs(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        (a - b).iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    fn all(k: usize) -> Vec<usize> {
        (0..k).collect()
    }

    /// A learner from random parts and a dense round `(q, p)` with positive loss.
    fn random_case(
        m: usize,
        n: usize,
        r: f64,
        seed: u64,
    ) -> (FactoredAroma, Array1<f64>, Array1<f64>) {
        let mut rng = seeded(seed);
        let w0 = Array2::from_shape_fn((m, n), |_| rng.random_range(-0.2..0.2));
        let (l0, o0) = (random_spd(m, 0.3, &mut rng), random_spd(n, 0.3, &mut rng));
        let learner =
            FactoredAroma::from_parts(w0.view(), l0.view(), o0.view(), r, Update::Margin).unwrap();
        let q = Array1::from_shape_fn(m, |_| rng.random_range(-1.0..1.0));
        let p = Array1::from_shape_fn(n, |_| rng.random_range(-1.0..1.0));
        (learner, q, p)
    }

    fn round(learner: &mut FactoredAroma, q: &Array1<f64>, p: &Array1<f64>) -> ArowStep {
        let (m, n) = learner.dims();
        learner
            .step(
                (&all(m), q.as_slice().unwrap()),
                (&all(n), p.as_slice().unwrap()),
            )
            .unwrap()
    }

    #[test]
    fn mean_step_equals_full_arow_with_the_kronecker_covariance() {
        // Spec §11.2, for several shapes and r.
        for (m, n, r, seed) in [(3, 2, 0.1, 1), (2, 5, 1.0, 2), (4, 4, 0.01, 3)] {
            let (mut f, q, p) = random_case(m, n, r, seed);
            let sigma = f.kronecker_covariance();
            // Independent check of the Kronecker layout: (Ω ⊗ Λ) vec(q p^T) = vec(Λ q p^T Ω).
            let x = vec_outer(&q, &p);
            let (l, o) = (f.lambda(), f.omega());
            let lq = l.dot(&q).insert_axis(ndarray::Axis(1));
            let po = o.dot(&p).insert_axis(ndarray::Axis(0));
            let want = vec_of(&lq.dot(&po));
            assert!(
                sigma
                    .dot(&x)
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| (a - b).abs() < 1e-12)
            );
            let mut arow = Arow::from_parts(vec_of(&f.weights().to_owned()), sigma, r).unwrap();
            let a = round(&mut f, &q, &p);
            let b = arow.update(x.view(), 1.0, Update::Margin);
            assert!(a.updated && (a.alpha - b.alpha).abs() < 1e-12);
            assert!((a.confidence - b.confidence).abs() < 1e-12);
            let got = vec_of(&f.weights().to_owned());
            assert!(
                got.iter()
                    .zip(arow.mean())
                    .all(|(x, y)| (x - y).abs() < 1e-12)
            );
        }
    }

    #[test]
    fn queued_rounds_equal_the_eager_updates_across_flushes() {
        // Eq. (12)–(14) applied at once on dense matrices, against the queued learner over
        // 3.5 queue lengths of sparse rounds: scores, W, Λ, Ω agree to rounding, and the
        // factors are symmetric bit for bit after each flush.
        let (m, n, r) = (7, 5, 0.05);
        let mut rng = seeded(31);
        let mut f = FactoredAroma::new(m, n, r, Update::Margin).unwrap();
        let (mut w, mut l, mut o) = (Array2::<f64>::zeros((m, n)), Array2::eye(m), Array2::eye(n));
        let dense = |k: usize, x: &(Vec<usize>, Vec<f64>)| {
            let mut v = Array1::zeros(k);
            for (&i, &xi) in x.0.iter().zip(&x.1) {
                v[i] = xi;
            }
            v
        };
        let mut updates = 0;
        for round in 0..(7 * QUEUE / 2) {
            let q = random_sparse(m, 3, 1.0, &mut rng);
            let p = random_sparse(n, 2, 1.0, &mut rng);
            let (qd, pd) = (dense(m, &q), dense(n, &p));
            let s = qd.dot(&w.dot(&pd));
            let st = f.step((&q.0, &q.1), (&p.0, &p.1)).unwrap();
            assert!(
                (st.margin - s).abs() < 1e-12,
                "round {round}: {} vs {s}",
                st.margin
            );
            if st.updated {
                updates += 1;
                let (u, wv) = (l.dot(&qd), o.dot(&pd));
                let (a, b) = (qd.dot(&u), pd.dot(&wv));
                let alpha = (1.0 - s).max(0.0) / (r + a * b);
                let outer = |x: &Array1<f64>, y: &Array1<f64>| {
                    x.view()
                        .insert_axis(ndarray::Axis(1))
                        .dot(&y.view().insert_axis(ndarray::Axis(0)))
                };
                w = w + alpha * outer(&u, &wv);
                o = o - a / (m as f64 * r + a * b) * outer(&wv, &wv);
                l = l - b / (n as f64 * r + a * b) * outer(&u, &u);
            }
            if f.queued == 0 {
                assert_eq!(f.lambda, f.lambda().t().iter().copied().collect::<Vec<_>>());
                assert_eq!(f.omega, f.omega().t().iter().copied().collect::<Vec<_>>());
            }
        }
        assert!(
            updates > 2 * QUEUE && f.queued > 0,
            "{updates} updates, {} queued",
            f.queued
        );
        assert!(max_abs(&f.weights(), &w) < 1e-12);
        assert!(max_abs(&f.lambda(), &l) < 1e-12);
        assert!(max_abs(&f.omega(), &o) < 1e-12);
        // Reading the model does not change it; a flush changes only rounding.
        let before = f.clone();
        let _ = (f.weights(), f.lambda(), f.statistics());
        assert_eq!(f, before);
        f.flush();
        assert!(max_abs(&f.weights(), &before.weights()) == 0.0);
        assert!(f.queued == 0 && max_abs(&f.lambda(), &l) < 1e-12);
    }

    #[test]
    fn a_flush_is_the_same_bits_at_every_vector_width() {
        let mut rng = seeded(41);
        let mut f = FactoredAroma::new(37, 29, 0.01, Update::Margin).unwrap();
        while f.queued < 13 {
            let q = random_sparse(37, 4, 1.0, &mut rng);
            let p = random_sparse(29, 5, 1.0, &mut rng);
            f.step((&q.0, &q.1), (&p.0, &p.1)).unwrap();
        }
        let outs: Vec<FactoredAroma> = Isa::available()
            .into_iter()
            .map(|isa| {
                let mut g = f.clone();
                g.isa = isa;
                g.flush();
                g.isa = f.isa;
                g
            })
            .collect();
        assert!(outs.iter().all(|g| *g == outs[0] && g.queued == 0));
        assert!(outs[0].w != f.w && outs[0].lambda != f.lambda);
    }

    #[test]
    fn each_update_is_a_stationary_point_of_objective_11() {
        // Spec §11.3 by direct minimisation: (12) minimises (11) in W; (13) minimises it in Ω
        // with Λ held at Λ_{i-1}; (14) in Λ with Ω held at Ω_{i-1}.
        let (m, n, r) = (2, 3, 0.2);
        let (mut f, q, p) = random_case(m, n, r, 11);
        let (w0, l0, o0) = (f.weights().to_owned(), f.lambda(), f.omega());
        assert!(round(&mut f, &q, &p).loss > 0.0);
        let (w1, l1, o1) = (f.weights().to_owned(), f.lambda(), f.omega());
        let obj = |w: &Array2<f64>, l: &Array2<f64>, o: &Array2<f64>| {
            aroma_objective(w, l, o, &w0, &l0, &o0, &q, &p, r)
        };
        let as_w = |x: &[f64]| Array2::from_shape_vec((m, n), x.to_vec()).unwrap();
        let w_star = as_w(&minimise(
            &|x| obj(&as_w(x), &l0, &o0),
            w0.iter().copied().collect(),
            1e-11,
        ));
        assert!(max_abs(&w_star, &w1) < 1e-6, "W:\n{w_star}\nvs\n{w1}");
        let o_star = spd_from_cholesky(
            &minimise(
                &|x| obj(&w1, &l0, &spd_from_cholesky(x, n)),
                spd_to_cholesky(&o0),
                1e-11,
            ),
            n,
        );
        assert!(max_abs(&o_star, &o1) < 1e-6, "Ω:\n{o_star}\nvs\n{o1}");
        let l_star = spd_from_cholesky(
            &minimise(
                &|x| obj(&w1, &spd_from_cholesky(x, m), &o0),
                spd_to_cholesky(&l0),
                1e-11,
            ),
            m,
        );
        assert!(max_abs(&l_star, &l1) < 1e-6, "Λ:\n{l_star}\nvs\n{l1}");
        // Not a joint minimiser (spec §2.5): with Λ at its new value, the best Ω differs.
        let o_joint = spd_from_cholesky(
            &minimise(
                &|x| obj(&w1, &l1, &spd_from_cholesky(x, n)),
                spd_to_cholesky(&o0),
                1e-11,
            ),
            n,
        );
        assert!(max_abs(&o_joint, &o1) > 1e-4);
    }

    #[test]
    fn with_identity_omega_each_factor_takes_an_arow_covariance_step() {
        // At Ω_{i-1} = I: Λ takes AROW's covariance step on x = q with r_eff = n r / |p|^2 and
        // Ω takes AROW's step on x = p with r_eff = m r / (q^T Λ q) (the paper's "effective
        // r"); the mean takes AROW's step with Σ = I ⊗ Λ.
        let (m, n, r) = (3, 4, 0.05);
        let mut rng = seeded(21);
        let l0 = random_spd(m, 0.3, &mut rng);
        let w0 = Array2::from_shape_fn((m, n), |_| rng.random_range(-0.2..0.2));
        let mut f = FactoredAroma::from_parts(
            w0.view(),
            l0.view(),
            Array2::<f64>::eye(n).view(),
            r,
            Update::Margin,
        )
        .unwrap();
        let q = Array1::from(vec![0.5, -1.0, 0.25]);
        let p = Array1::from(vec![0.0, 1.5, -0.5, 1.0]);
        let mut mean = Arow::from_parts(vec_of(&w0), f.kronecker_covariance(), r).unwrap();
        assert!(round(&mut f, &q, &p).updated);
        mean.update(vec_outer(&q, &p).view(), 1.0, Update::Margin);
        let got = vec_of(&f.weights().to_owned());
        assert!(
            got.iter()
                .zip(mean.mean())
                .all(|(a, b)| (a - b).abs() < 1e-12)
        );
        let mut lam =
            Arow::from_parts(Array1::zeros(m), l0.clone(), n as f64 * r / p.dot(&p)).unwrap();
        lam.update(q.view(), 1.0, Update::Margin);
        assert!(max_abs(lam.covariance(), &f.lambda()) < 1e-12);
        let a = q.dot(&l0.dot(&q));
        let mut om = Arow::from_parts(Array1::zeros(n), Array2::eye(n), m as f64 * r / a).unwrap();
        om.update(p.view(), 1.0, Update::Margin);
        assert!(max_abs(om.covariance(), &f.omega()) < 1e-12);
    }

    #[test]
    fn scalar_case_shrinks_the_product_twice_as_fast_as_arow() {
        // Spec §11.6: m = n = 1: the mean step is AROW's, but Ω' = Ω r/(r+ab), Λ' = Λ r/(r+ab),
        // so ΩΛ shrinks by (r/(r+ab))^2 against AROW's r/(r+ab).
        let (r, lam, om, q, p) = (0.3, 0.7, 0.4, 1.5, -0.8);
        let one = |v: f64| Array2::from_elem((1, 1), v);
        let mut f = FactoredAroma::from_parts(
            one(0.1).view(),
            one(lam).view(),
            one(om).view(),
            r,
            Update::Margin,
        )
        .unwrap();
        let mut arow = Arow::from_parts(Array1::from(vec![0.1]), one(lam * om), r).unwrap();
        f.step((&[0], &[q]), (&[0], &[p])).unwrap();
        arow.update(Array1::from(vec![q * p]).view(), 1.0, Update::Margin);
        assert!((f.weights()[[0, 0]] - arow.mean()[0]).abs() < 1e-14);
        let ab = lam * q * q * om * p * p;
        let shrink = r / (r + ab);
        assert!((f.lambda()[[0, 0]] - lam * shrink).abs() < 1e-14);
        assert!((f.omega()[[0, 0]] - om * shrink).abs() < 1e-14);
        assert!((arow.covariance()[[0, 0]] - lam * om * shrink).abs() < 1e-14);
    }

    #[test]
    fn post_update_score_and_passive_rounds() {
        // Spec §11.4: the new score is s + (1 - s) ab / (r + ab); §11.5: s >= 1 is passive.
        let (m, n) = (5, 6);
        let mut rng = seeded(5);
        let mut f = FactoredAroma::new(m, n, 0.2, Update::Margin).unwrap();
        let mut passive = 0;
        for _ in 0..300 {
            let q = random_sparse(m, 2, 1.0, &mut rng);
            let p = random_sparse(n, 3, 1.0, &mut rng);
            let before = f.clone();
            let st = f.step((&q.0, &q.1), (&p.0, &p.1)).unwrap();
            let after = f.similarity((&q.0, &q.1), (&p.0, &p.1));
            if st.updated {
                let want = st.margin + (1.0 - st.margin) * st.confidence / (0.2 + st.confidence);
                assert!((after - want).abs() < 1e-12, "{after} vs {want}");
            } else {
                passive += 1;
                assert!(st.margin >= 1.0);
                assert_eq!(f.weights(), before.weights());
                assert_eq!((f.lambda(), f.omega()), (before.lambda(), before.omega()));
            }
        }
        assert!(passive > 0);
    }

    /// Smallest and largest eigenvalue of a factor.
    fn spectrum(a: &Array2<f64>) -> (f64, f64) {
        let (vals, _) = sym_eigen(a.view()).unwrap();
        (vals[0], vals[vals.len() - 1])
    }

    #[test]
    fn factors_stay_symmetric_positive_definite_over_a_million_rounds() {
        // Spec §11.5 over 10^6 non-separable rounds (updates never stop), input scales over
        // four decades: Λ and Ω stay positive definite, eigenvalues in (0, 1], and
        // Loewner-non-increasing between checkpoints. Symmetry is exact by storage.
        let (m, n) = (5, 4);
        let mut rng = seeded(6);
        let mut f = FactoredAroma::new(m, n, 0.01, Update::Margin).unwrap();
        let (mut prev_l, mut prev_o) = (f.lambda(), f.omega());
        for chunk in 0..10 {
            for _ in 0..100_000 {
                let scale = 10f64.powi(rng.random_range(-2..=2));
                let q = random_sparse(m, rng.random_range(1..=3), scale, &mut rng);
                let p = random_sparse(n, rng.random_range(1..=3), 1.0, &mut rng);
                f.step((&q.0, &q.1), (&p.0, &p.1)).unwrap();
            }
            for (now, prev) in [(f.lambda(), &mut prev_l), (f.omega(), &mut prev_o)] {
                let (lo, hi) = spectrum(&now);
                assert!(
                    lo > 0.0 && hi <= 1.0 + 1e-12,
                    "chunk {chunk}: spectrum [{lo}, {hi}]"
                );
                assert_eq!(now, now.t(), "chunk {chunk}: exactly symmetric");
                let dense = now;
                let (dec, _) = sym_eigen((&*prev - &dense).view()).unwrap();
                assert!(
                    dec[0] > -1e-12,
                    "chunk {chunk}: not Loewner-decreasing ({})",
                    dec[0]
                );
                *prev = dense;
            }
            assert!(f.weights().iter().all(|v| v.is_finite()));
        }
        assert!(f.counts().updates > 100_000, "{:?}", f.counts());
        let (lo, _) = spectrum(&f.lambda());
        assert!(lo < 0.1, "the factors did shrink: {lo}");
    }

    #[test]
    fn lemma_3_holds_on_random_rounds() {
        // Σ_i (q^T Λ_i q)(p^T Ω_i p) over updating rounds, with the *new* factors, is at most
        // m r log det Ω_N^{-1} and at most n r log det Λ_N^{-1} (Ω_0 = Λ_0 = I).
        let (m, n, r) = (4, 3, 0.1);
        let mut rng = seeded(7);
        let mut f = FactoredAroma::new(m, n, r, Update::Margin).unwrap();
        let (mut sum, mut ul, mut uo) = (0.0, Array1::zeros(m), Array1::zeros(n));
        let dense = |k: usize, x: &(Vec<usize>, Vec<f64>)| {
            let mut v = Array1::zeros(k);
            for (&i, &xi) in x.0.iter().zip(&x.1) {
                v[i] = xi;
            }
            v
        };
        for _ in 0..20_000 {
            let q = random_sparse(m, 2, 1.0, &mut rng);
            let p = random_sparse(n, 2, 1.0, &mut rng);
            if f.step((&q.0, &q.1), (&p.0, &p.1)).unwrap().updated {
                ul.assign(&f.lambda().dot(&dense(m, &q)));
                uo.assign(&f.omega().dot(&dense(n, &p)));
                sum += dyad_core::sparse::dot_dense(ul.as_slice().unwrap(), &q.0, &q.1)
                    * dyad_core::sparse::dot_dense(uo.as_slice().unwrap(), &p.0, &p.1);
            }
        }
        let logdet_inv = |a: &Array2<f64>| -> f64 {
            -sym_eigen(a.view())
                .unwrap()
                .0
                .iter()
                .map(|v| v.ln())
                .sum::<f64>()
        };
        let (bo, bl) = (
            m as f64 * r * logdet_inv(&f.omega()),
            n as f64 * r * logdet_inv(&f.lambda()),
        );
        assert!(
            sum <= bo * (1.0 + 1e-9) && sum <= bl * (1.0 + 1e-9),
            "{sum} vs {bo}, {bl}"
        );
        assert!(
            sum > 0.05 * bo.min(bl),
            "{sum} vs {bo}, {bl}: the check is not vacuous"
        );
    }

    #[test]
    fn mistake_driven_run_stays_under_theorem_2() {
        // The mistake-driven variant on a separable stream: |M| <= Σ_M hinge_V (zero here)
        // + 2 sqrt(Tr(V Ω_N^{-1} V^T Λ_N^{-1})) sqrt(r min(m log det Ω_N^{-1}, n log det Λ_N^{-1})).
        let (m, n) = (4, 5);
        let mut rng = seeded(8);
        for (r, seed) in [(0.1, 1), (1.0, 2)] {
            let v = Array2::from_shape_fn((m, n), |_| 3.0 * rng.random_range(-1.0..1.0));
            let stream = separable_rounds(&v, 400, &mut seeded(seed));
            let mut f = FactoredAroma::new(m, n, r, Update::Mistake).unwrap();
            let mut mistakes = 0usize;
            for _pass in 0..5 {
                for (q, p) in &stream {
                    let st = f.step((&q.0, &q.1), (&p.0, &p.1)).unwrap();
                    mistakes += usize::from(st.updated);
                    assert_eq!(st.updated, st.mistake());
                }
            }
            let inv = |a: Array2<f64>| crate::testkit::logdet_inverse(&a).unwrap();
            let ((ldl, il), (ldo, io)) = (inv(f.lambda()), inv(f.omega()));
            let tr = (v.dot(&io).dot(&v.t()) * &il).diag().sum();
            let bound = 2.0 * tr.sqrt() * (r * (-(m as f64) * ldo).min(-(n as f64) * ldl)).sqrt();
            assert!(
                (mistakes as f64) <= bound,
                "r = {r}: {mistakes} mistakes, bound {bound}"
            );
            assert!(
                mistakes > 0 && bound < 2000.0,
                "r = {r}: {mistakes}, bound {bound}"
            );
        }
    }

    #[test]
    fn ranker_runs_the_algorithm_on_sampled_triplets() {
        // fit equals a plain loop over the same sampled stream.
        let train = nuisance_data(30, 3, 4);
        let cfg = FactoredAromaConfig {
            r: 0.1,
            update: Update::Margin,
        };
        let mut obs = Scores(train.clone(), Vec::new());
        cfg.fit(&train, &Schedule::last_only(400), &mut seeded(5), &mut obs)
            .unwrap();
        let sampler = TripletSampler::new(&train).unwrap();
        let mut rng = seeded(5);
        let d = train.dim();
        let mut f = FactoredAroma::new(d, d, 0.1, Update::Margin).unwrap();
        let mut diff = SparseVec::default();
        for _ in 0..400 {
            let t = sampler.sample(&mut rng);
            diff.set_difference(
                train.x.outer_view(t.positive).unwrap(),
                train.x.outer_view(t.negative).unwrap(),
            );
            let q = train.x.outer_view(t.query).unwrap();
            f.step((q.indices(), q.data()), (&diff.indices, &diff.values))
                .unwrap();
        }
        let mut manual = Scores(train.clone(), Vec::new());
        use dyad_core::Observer as _;
        manual.checkpoint(
            dyad_core::Checkpoint {
                step: 400,
                solver_seconds: 0.0,
                last: true,
            },
            &f as &dyn Scorer,
        );
        assert_eq!(obs.1, manual.1);
        assert!(f.counts().updates > 0);
    }

    #[test]
    fn learns_to_rank_and_reports_every_checkpoint() {
        let (train, test) = (nuisance_data(60, 2, 1), nuisance_data(40, 2, 2));
        let mut obs = Record::new(test);
        let schedule = Schedule::new(vec![0, 100, 1000, 3000]);
        FactoredAromaConfig::default()
            .fit(&train, &schedule, &mut seeded(3), &mut obs)
            .unwrap();
        let steps: Vec<u64> = obs.seen.iter().map(|(c, _)| c.step).collect();
        assert_eq!(steps, vec![0, 100, 1000, 3000]);
        assert!(obs.seen[3].0.last && !obs.seen[2].0.last);
        let (first, last) = (obs.seen[0].1, obs.seen[3].1);
        assert!(first < 0.8 && last > 0.97, "mAP {first} -> {last}");
    }

    #[test]
    fn same_seed_same_model_other_seed_other_model() {
        let train = nuisance_data(30, 2, 4);
        let run = |seed| {
            let mut obs = Scores(train.clone(), Vec::new());
            FactoredAromaConfig::default()
                .fit(
                    &train,
                    &Schedule::last_only(500),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
            obs.1
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    #[test]
    fn invalid_parameters_and_states_are_rejected() {
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let cfg = FactoredAromaConfig {
                r,
                ..Default::default()
            };
            assert_eq!(cfg.check().unwrap_err().param, "r", "r = {r}");
        }
        assert!(
            FactoredAroma::from_parts(
                Array2::<f64>::zeros((2, 3)).view(),
                Array2::<f64>::eye(3).view(),
                Array2::<f64>::eye(3).view(),
                1.0,
                Update::Margin
            )
            .is_err()
        );
        // An indefinite factor is caught instead of silently used.
        let mut bad = FactoredAroma::from_parts(
            Array2::<f64>::zeros((1, 1)).view(),
            Array2::from_elem((1, 1), -1.0).view(),
            Array2::<f64>::eye(1).view(),
            1.0,
            Update::Margin,
        )
        .unwrap();
        assert!(matches!(
            bad.step((&[0], &[1.0]), (&[0], &[1.0])),
            Err(AlgoError::Numerical(_))
        ));
        let err = FactoredAromaConfig::default().fit(
            &LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 0], 1),
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut NullObserver,
        );
        assert!(matches!(err, Err(AlgoError::Data(_))));
    }
}
