//! d-AROMA: AROMA with a diagonal covariance (Algorithm 1, Eqs. 5–6; spec §2.3).
//!
//! `W` and `Σ` are `m x n`; a round with query `q`, objects `p+`, `p-` and `p = p+ - p-`
//! identifies `X = q p^T`, `y = 1`, and applies diagonal AROW to `vec(X)`:
//!
//! ```text
//! s = q^T W p;   if the rule fires on s (default 1 > s):
//!     v = Σ_{k,l} q_k^2 p_l^2 Σ_kl,   α = max(0, 1 - s) / (v + r)
//!     W_kl ← W_kl + α Σ_kl q_k p_l                       (5)
//!     Σ_kl ← Σ_kl (1 - Σ_kl q_k^2 p_l^2 / (v + r))       (6)
//! ```
//!
//! (6) is written in the factored form of spec §2.3: the factor is at least `r / (v + r) > 0`,
//! so variances stay in `(0, 1]` and never increase. Both updates read the old `Σ`.
//!
//! Only `supp(q) x supp(p)` is touched: a round costs `O(nnz(q) nnz(p))` (two passes over
//! those entries: one for `s` and `v`, one for the update), however large `m n` is. `W` and
//! `Σ` are interleaved in one row-major array of `(W_kl, Σ_kl)` cells, so the two passes fetch
//! one cache line per entry instead of two. Memory: `2 m n` values.

use super::arow::ArowStep;
use super::{RoundCounts, SparseRef, Update, check_features, check_r, default_r, score_rows};
use dyad_core::sampling::TripletSampler;
use dyad_core::{Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, drive, steps};
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVecView};

/// Parameters of d-AROMA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagonalAromaConfig {
    /// The regulariser `r > 0` of Eq. (5)–(6): small `r` means aggressive steps. The paper uses
    /// `r = 0.01` (Caltech, 20NG traces) and `r = 1` (20NG precision@k); default 0.01.
    #[serde(default = "default_r")]
    pub r: f64,
    /// When a round updates: `"margin"` (the algorithm: `1 > q^T W p`, default) or
    /// `"mistake"` (the mistake-driven variant of the analysis, `0 >= q^T W p`).
    #[serde(default)]
    pub update: Update,
}

impl Default for DiagonalAromaConfig {
    fn default() -> Self {
        Self {
            r: default_r(),
            update: Update::default(),
        }
    }
}

impl Checked for DiagonalAromaConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_r(self.r)
    }
}

/// One entry of `W` with its variance.
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(C)]
struct Cell {
    w: f64,
    sigma: f64,
}

/// The d-AROMA learner: the mean `W` (`m x n`), its variances `Σ` and the round counters.
/// As a [`Scorer`] it is `S(q, p) = q^T W p` (query on the left).
#[derive(Debug, Clone, PartialEq)]
pub struct DiagonalAroma {
    m: usize,
    n: usize,
    cells: Vec<Cell>,
    r: f64,
    rule: Update,
    counts: RoundCounts,
}

impl DiagonalAroma {
    /// `W = 0`, `Σ = 1` (all ones: identity covariance on `vec W`).
    pub fn new(m: usize, n: usize, r: f64, rule: Update) -> Result<Self, AlgoError> {
        check_r(r)?;
        let len = m
            .checked_mul(n)
            .ok_or_else(|| AlgoError::data(format!("d-AROMA: {m} x {n} overflows")))?;
        // One checked allocation of interleaved (w, sigma) pairs.
        let mut cells = Vec::new();
        cells
            .try_reserve_exact(len)
            .map_err(|_| AlgoError::Numerical(format!("d-AROMA: cannot allocate {m} x {n}")))?;
        cells.resize(len, Cell { w: 0.0, sigma: 1.0 });
        Ok(Self {
            m,
            n,
            cells,
            r,
            rule,
            counts: RoundCounts::default(),
        })
    }

    /// From a mean and positive variances of the same shape.
    pub fn from_parts(
        w: ArrayView2<'_, f64>,
        sigma: ArrayView2<'_, f64>,
        r: f64,
        rule: Update,
    ) -> Result<Self, AlgoError> {
        check_r(r)?;
        if w.dim() != sigma.dim() {
            return Err(AlgoError::data(format!(
                "d-AROMA: mean {:?} and variances {:?} differ in shape",
                w.dim(),
                sigma.dim()
            )));
        }
        let (m, n) = w.dim();
        let cells = w
            .iter()
            .zip(sigma.iter())
            .map(|(&w, &sigma)| Cell { w, sigma })
            .collect();
        Ok(Self {
            m,
            n,
            cells,
            r,
            rule,
            counts: RoundCounts::default(),
        })
    }

    /// `(m, n)`.
    pub fn dims(&self) -> (usize, usize) {
        (self.m, self.n)
    }

    /// A copy of the mean `W`.
    pub fn weights(&self) -> Array2<f64> {
        Array2::from_shape_fn((self.m, self.n), |(k, l)| self.cells[k * self.n + l].w)
    }

    /// A copy of the variances `Σ`.
    pub fn variances(&self) -> Array2<f64> {
        Array2::from_shape_fn((self.m, self.n), |(k, l)| self.cells[k * self.n + l].sigma)
    }

    /// The rounds seen so far.
    pub fn counts(&self) -> RoundCounts {
        self.counts
    }

    /// `q^T W p` for sparse `q` (indices `< m`) and `p` (indices `< n`).
    pub fn similarity(&self, q: SparseRef<'_>, p: SparseRef<'_>) -> f64 {
        let mut s = 0.0;
        for (&k, &qk) in q.0.iter().zip(q.1) {
            let row = &self.cells[k * self.n..(k + 1) * self.n];
            let mut acc = 0.0;
            for (&l, &pl) in p.0.iter().zip(p.1) {
                acc += row[l].w * pl;
            }
            s += qk * acc;
        }
        s
    }

    /// One round on query `q` and object difference `p = p+ - p-` (sparse, strictly
    /// increasing indices `< m` and `< n`): Eq. (5)–(6) when the rule fires.
    pub fn step(&mut self, q: SparseRef<'_>, p: SparseRef<'_>) -> ArowStep {
        let n = self.n;
        // Pass 1: s = q^T W p and v = sum q_k^2 p_l^2 Σ_kl over the same entries.
        let (mut s, mut v) = (0.0, 0.0);
        for (&k, &qk) in q.0.iter().zip(q.1) {
            let row = &self.cells[k * n..(k + 1) * n];
            let (mut sw, mut sv) = (0.0, 0.0);
            for (&l, &pl) in p.0.iter().zip(p.1) {
                let c = row[l];
                sw += c.w * pl;
                sv += c.sigma * (pl * pl);
            }
            s += qk * sw;
            v += (qk * qk) * sv;
        }
        let fired = self.rule.fires(s);
        self.counts.record(s, fired);
        if !fired {
            return ArowStep::passive(s);
        }
        let denom = v + self.r;
        let loss = (1.0 - s).max(0.0);
        let alpha = loss / denom;
        // Pass 2: both updates from the old Σ (one division per round, not per entry).
        let inv = 1.0 / denom;
        for (&k, &qk) in q.0.iter().zip(q.1) {
            let row = &mut self.cells[k * n..(k + 1) * n];
            for (&l, &pl) in p.0.iter().zip(p.1) {
                let x = qk * pl;
                let c = &mut row[l];
                let sig = c.sigma;
                c.w += alpha * (sig * x);
                c.sigma = sig * (1.0 - sig * (x * x) * inv);
            }
        }
        ArowStep {
            margin: s,
            loss,
            confidence: v,
            alpha,
            updated: true,
        }
    }
}

impl Scorer for DiagonalAroma {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let n = self.n;
        score_rows(n, query, candidates, out, |k| {
            self.cells[k * n..(k + 1) * n].iter().map(|c| c.w)
        });
    }

    /// The confidence of the model and the online rounds behind it: mean and smallest
    /// variance, the counts of rounds, updates and mistakes, and the bytes of `W` and `Σ`.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        let len = self.cells.len().max(1) as f64;
        let mean = self.cells.iter().map(|c| c.sigma).sum::<f64>() / len;
        let min = self
            .cells
            .iter()
            .map(|c| c.sigma)
            .fold(f64::INFINITY, f64::min);
        let mut out = vec![("sigma_mean", mean), ("sigma_min", min)];
        out.extend(self.counts.statistics());
        // W and Σ: two floats per entry.
        out.push((
            "model_bytes",
            std::mem::size_of_val(self.cells.as_slice()) as f64,
        ));
        out
    }
}

impl Ranker for DiagonalAromaConfig {
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
            learner: DiagonalAroma,
            diff: SparseVec,
            rng: &'r mut Rng,
        }
        let step = |s: &mut State<'_>, _: u64| {
            let t = sampler.sample(s.rng);
            s.diff.set_difference(row(t.positive), row(t.negative));
            let q = row(t.query);
            s.learner
                .step((q.indices(), q.data()), (&s.diff.indices, &s.diff.values));
            Ok::<_, AlgoError>(Flow::Continue)
        };
        let d = train.dim();
        drive(schedule, obs, || {
            let state = State {
                learner: DiagonalAroma::new(d, d, self.r, self.update)?,
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

    /// `W` and `Σ`: two floats per entry of the `d x d` model.
    fn memory(&self, _rows: usize, dim: usize) -> Option<u64> {
        Some(dyad_kernels::dense_bytes(dim, dim).saturating_mul(2))
    }

    fn statistics(&self) -> &'static [&'static str] {
        &[
            "sigma_mean",
            "sigma_min",
            "online_rounds",
            "online_updates",
            "online_mistakes",
            "model_bytes",
        ]
    }
}

/// The `d-aroma` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "d-aroma",
    label: "d-AROMA",
    description: "diagonal AROMA (Algorithm 1): AROW on vec(q p^T) with one variance per entry of W, W0 = 0",
    family: dyad_kernels::solver::RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::ranker::<DiagonalAromaConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DiagonalArow;
    use crate::testkit::{
        arow_objective, dense, minimise, random_sparse, separable_rounds, spd_from_cholesky,
        spd_to_cholesky, vec_of, vec_outer,
    };
    use dyad_core::observe::NullObserver;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, Scores, nuisance_data};
    use ndarray::Array1;
    use rand::Rng as _;

    fn max_abs(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
        (a - b).iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// `vec(Σ)` of a diagonal AROW on `mn` inputs, back as an `m x n` matrix.
    fn unvec(x: &[f64], m: usize, n: usize) -> Array2<f64> {
        Array2::from_shape_fn((m, n), |(k, l)| x[k + l * m])
    }

    #[test]
    fn equals_diagonal_arow_on_vec_q_p_transposed() {
        // Spec §11.1: identical W and Σ after random sequences (tolerance 1e-12).
        let (m, n) = (4, 5);
        let mut rng = seeded(1);
        for r in [0.01, 1.0] {
            let mut aroma = DiagonalAroma::new(m, n, r, Update::Margin).unwrap();
            let mut arow = DiagonalArow::new(m * n, r).unwrap();
            for _ in 0..300 {
                let q = random_sparse(m, rng.random_range(1..=m), 1.0, &mut rng);
                let p = random_sparse(n, rng.random_range(1..=n), 2.0, &mut rng);
                let x = vec_outer(&dense(&q, m), &dense(&p, n));
                let a = aroma.step((&q.0, &q.1), (&p.0, &p.1));
                let b = arow.update(x.as_slice().unwrap(), 1.0, Update::Margin);
                assert_eq!(a.updated, b.updated);
                assert!((a.margin - b.margin).abs() < 1e-12);
                assert!((a.alpha - b.alpha).abs() < 1e-12);
            }
            assert!(max_abs(&aroma.weights(), &unvec(arow.mean(), m, n)) < 1e-12);
            assert!(max_abs(&aroma.variances(), &unvec(arow.variances(), m, n)) < 1e-12);
            assert!(aroma.counts().updates > 50 && aroma.counts().updates < 300);
        }
    }

    #[test]
    fn one_query_feature_is_diagonal_arow_on_the_object_difference() {
        // m = 1: X = q p^T is the vector q_0 p, and d-AROMA is diagonal AROW on it.
        let n = 6;
        let mut rng = seeded(2);
        let mut aroma = DiagonalAroma::new(1, n, 0.1, Update::Margin).unwrap();
        let mut arow = DiagonalArow::new(n, 0.1).unwrap();
        for _ in 0..200 {
            let c: f64 = rng.random_range(0.2..2.0);
            let p = random_sparse(n, 3, 1.0, &mut rng);
            let x: Vec<f64> = p.1.iter().map(|v| c * v).collect();
            let a = aroma.step((&[0], &[c]), (&p.0, &p.1));
            let b = arow.update_sparse(&p.0, &x, 1.0, Update::Margin);
            assert!((a.margin - b.margin).abs() < 1e-12 && a.updated == b.updated);
        }
        let w = aroma.weights();
        let s = aroma.variances();
        for l in 0..n {
            assert!((w[[0, l]] - arow.mean()[l]).abs() < 1e-12);
            assert!((s[[0, l]] - arow.variances()[l]).abs() < 1e-12);
        }
    }

    #[test]
    fn update_satisfies_the_arow_optimality_conditions() {
        // Mean: the exact minimiser of (3) in vec(W) at the old (diagonal) Σ. Variances: the
        // diagonal of the minimiser of (3) over *full* covariances (spec §2.2: the diagonal of
        // the full update), found by direct numerical minimisation.
        let (m, n) = (2, 2);
        let d = m * n;
        let mut rng = seeded(3);
        for r in [0.05, 1.0] {
            let w0 = Array2::from_shape_fn((m, n), |_| rng.random_range(-0.3..0.3));
            let s0 = Array2::from_shape_fn((m, n), |_| rng.random_range(0.3..1.0));
            let mut aroma =
                DiagonalAroma::from_parts(w0.view(), s0.view(), r, Update::Margin).unwrap();
            let q = Array1::from(vec![0.8, -0.5]);
            let p = Array1::from(vec![0.3, 1.1]);
            let step = aroma.step(
                (&[0, 1], q.as_slice().unwrap()),
                (&[0, 1], p.as_slice().unwrap()),
            );
            assert!(step.updated && step.loss > 0.0);
            let x = vec_outer(&q, &p);
            let (vw0, sig0) = (vec_of(&w0), Array2::from_diag(&vec_of(&s0)));
            let f_w = |w: &[f64]| {
                arow_objective(&Array1::from(w.to_vec()), &sig0, &vw0, &sig0, &x, 1.0, r)
            };
            let w_star = minimise(&f_w, vw0.to_vec(), 1e-10);
            let got = vec_of(&aroma.weights());
            for (a, b) in w_star.iter().zip(&got) {
                assert!((a - b).abs() < 1e-6, "{w_star:?} vs {got}");
            }
            let f_s =
                |l: &[f64]| arow_objective(&vw0, &spd_from_cholesky(l, d), &vw0, &sig0, &x, 1.0, r);
            let s_star = spd_from_cholesky(&minimise(&f_s, spd_to_cholesky(&sig0), 1e-10), d);
            let got = vec_of(&aroma.variances());
            for (i, g) in got.iter().enumerate() {
                assert!(
                    (s_star[[i, i]] - g).abs() < 1e-6,
                    "{} vs {g}",
                    s_star[[i, i]]
                );
            }
            // The full minimiser is not diagonal: d-AROMA drops its off-diagonal part.
            assert!(s_star[[0, 1]].abs() > 1e-3);
        }
    }

    #[test]
    fn post_update_score_and_passive_rounds() {
        // Spec §11.4: the new score is s + (1 - s) v / (v + r); §11.5: a round with s >= 1
        // changes nothing.
        let (m, n) = (5, 7);
        let mut rng = seeded(4);
        let mut aroma = DiagonalAroma::new(m, n, 0.3, Update::Margin).unwrap();
        for _ in 0..100 {
            let q = random_sparse(m, 3, 1.0, &mut rng);
            let p = random_sparse(n, 4, 1.0, &mut rng);
            let before = aroma.clone();
            let st = aroma.step((&q.0, &q.1), (&p.0, &p.1));
            let after = aroma.similarity((&q.0, &q.1), (&p.0, &p.1));
            if st.updated {
                let v = st.confidence;
                let want = st.margin + (1.0 - st.margin) * v / (v + 0.3);
                assert!((after - want).abs() < 1e-12, "{after} vs {want}");
            } else {
                assert!(st.margin >= 1.0);
                assert_eq!(aroma.weights(), before.weights());
                assert_eq!(aroma.variances(), before.variances());
            }
        }
    }

    #[test]
    fn sparse_rounds_equal_dense_rounds_and_scores_are_bilinear() {
        // Spec §11.10: a round given as all entries (zeros included) equals the sparse round.
        let (m, n) = (6, 4);
        let mut rng = seeded(5);
        let mut sparse = DiagonalAroma::new(m, n, 0.05, Update::Margin).unwrap();
        let mut full = sparse.clone();
        let (all_m, all_n): (Vec<usize>, Vec<usize>) = ((0..m).collect(), (0..n).collect());
        for _ in 0..200 {
            let q = random_sparse(m, 2, 1.0, &mut rng);
            let p = random_sparse(n, 2, 1.0, &mut rng);
            let (qd, pd) = (dense(&q, m), dense(&p, n));
            let a = sparse.step((&q.0, &q.1), (&p.0, &p.1));
            let b = full.step(
                (&all_m, qd.as_slice().unwrap()),
                (&all_n, pd.as_slice().unwrap()),
            );
            assert!((a.margin - b.margin).abs() < 1e-12 && a.updated == b.updated);
        }
        assert!(max_abs(&sparse.weights(), &full.weights()) < 1e-12);
        assert!(max_abs(&sparse.variances(), &full.variances()) < 1e-12);
        // The scorer is q^T W c (here m = n would be needed for one data set: use m x n
        // queries and candidates of their own dimensions).
        let w = sparse.weights();
        let queries = dyad_kernels::fixtures::random_data(3, m, 1, 1);
        let cands = dyad_kernels::fixtures::random_data(5, n, 1, 2);
        let mut out = vec![0.0; 5];
        for qi in 0..3 {
            sparse.score(queries.x.outer_view(qi).unwrap(), &cands.x, &mut out);
            let qd = Array1::from(queries.x.outer_view(qi).unwrap().to_dense().to_vec());
            for (j, o) in out.iter().enumerate() {
                let c = Array1::from(cands.x.outer_view(j).unwrap().to_dense().to_vec());
                assert!((o - qd.dot(&w.dot(&c))).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn variances_stay_in_the_unit_interval_over_a_million_rounds() {
        // Non-separable random rounds (so updates never stop), input scales over six decades.
        let (m, n) = (6, 6);
        let mut rng = seeded(6);
        let mut aroma = DiagonalAroma::new(m, n, 0.01, Update::Margin).unwrap();
        let mut previous = aroma.variances();
        for chunk in 0..10 {
            for _ in 0..100_000 {
                let scale = 10f64.powi(rng.random_range(-3..=3));
                let q = random_sparse(m, rng.random_range(1..=3), scale, &mut rng);
                let p = random_sparse(n, rng.random_range(1..=4), 1.0, &mut rng);
                aroma.step((&q.0, &q.1), (&p.0, &p.1));
            }
            let now = aroma.variances();
            for (a, b) in now.iter().zip(previous.iter()) {
                assert!(*a > 0.0 && *a <= *b, "chunk {chunk}: {a} after {b}");
            }
            assert!(aroma.weights().iter().all(|v| v.is_finite()));
            previous = now;
        }
        let c = aroma.counts();
        assert_eq!(c.rounds, 1_000_000);
        assert!(c.updates > 100_000, "{c:?}");
        // The confidence did grow (variances shrank) over the run.
        assert!(previous.iter().all(|&s| s < 1e-2), "{previous}");
    }

    /// Theorem 1's right-hand side (spec §2.8, as reconstructed) for a reference `v` over the
    /// rounds `rounds` (the updating ones), `u` of which updated without a mistake.
    fn theorem_1_bound(
        v: &Array2<f64>,
        rounds: &[(Array1<f64>, Array1<f64>)],
        u: usize,
        r: f64,
    ) -> f64 {
        let (m, n) = v.dim();
        let mut moment = Array2::<f64>::zeros((m, n));
        let mut hinge = 0.0;
        for (q, p) in rounds {
            hinge += (1.0 - q.dot(&v.dot(p))).max(0.0);
            for k in 0..m {
                for l in 0..n {
                    moment[[k, l]] += q[k] * q[k] * p[l] * p[l];
                }
            }
        }
        let fro = v.iter().map(|x| x * x).sum::<f64>();
        let weighted = (v * v * &moment).sum();
        let logs: f64 = moment.iter().map(|&c| (c / r + 1.0).ln()).sum();
        hinge - u as f64 + (r * fro + weighted).sqrt() * (logs + 2.0 * u as f64).sqrt()
    }

    #[test]
    fn mistakes_on_a_separable_stream_stay_under_theorem_1() {
        let (m, n) = (4, 5);
        let mut rng = seeded(7);
        for (r, seed) in [(0.1, 1), (1.0, 2)] {
            let v = Array2::from_shape_fn((m, n), |_| 3.0 * rng.random_range(-1.0..1.0));
            let stream = separable_rounds(&v, 400, &mut seeded(seed));
            let mut aroma = DiagonalAroma::new(m, n, r, Update::Margin).unwrap();
            let mut updating = Vec::new();
            let (mut mistakes, mut silent) = (0usize, 0usize);
            for _pass in 0..5 {
                for (q, p) in &stream {
                    let st = aroma.step((&q.0, &q.1), (&p.0, &p.1));
                    if st.updated {
                        updating.push((dense(q, m), dense(p, n)));
                        if st.mistake() {
                            mistakes += 1;
                        } else {
                            silent += 1;
                        }
                    }
                }
            }
            let bound = theorem_1_bound(&v, &updating, silent, r);
            assert!(
                (mistakes as f64) <= bound,
                "r = {r}: {mistakes} mistakes, bound {bound}"
            );
            // The bound is not vacuous: well below the number of rounds seen (2,000).
            assert!(bound < 1000.0, "r = {r}: bound {bound}");
            assert!(mistakes > 0);
        }
    }

    #[test]
    fn learns_to_rank_and_reports_every_checkpoint() {
        let (train, test) = (nuisance_data(60, 2, 1), nuisance_data(40, 2, 2));
        let mut obs = Record::new(test);
        let schedule = Schedule::new(vec![0, 100, 1000, 3000]);
        DiagonalAromaConfig::default()
            .fit(&train, &schedule, &mut seeded(3), &mut obs)
            .unwrap();
        let steps: Vec<u64> = obs.seen.iter().map(|(c, _)| c.step).collect();
        assert_eq!(steps, vec![0, 100, 1000, 3000]);
        assert_eq!(
            obs.seen.iter().map(|(c, _)| c.last).collect::<Vec<_>>(),
            vec![false, false, false, true]
        );
        let (first, last) = (obs.seen[0].1, obs.seen[3].1);
        assert!(first < 0.8 && last > 0.97, "mAP {first} -> {last}");
    }

    #[test]
    fn same_seed_same_model_other_seed_other_model() {
        let train = nuisance_data(30, 2, 4);
        let run = |seed| {
            let mut obs = Scores(train.clone(), Vec::new());
            DiagonalAromaConfig::default()
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
    fn invalid_parameters_and_data_are_rejected() {
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let cfg = DiagonalAromaConfig {
                r,
                ..Default::default()
            };
            assert_eq!(cfg.check().unwrap_err().param, "r", "r = {r}");
            let err = cfg.fit(
                &nuisance_data(10, 0, 1),
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut NullObserver,
            );
            assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "r"));
        }
        let bad = LabeledSet::from_dense_rows(
            &[vec![1.0, f64::NAN], vec![1.0, 0.0], vec![0.0, 1.0]],
            vec![0, 0, 1],
            2,
        );
        let err = DiagonalAromaConfig::default().fit(
            &bad,
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut NullObserver,
        );
        assert!(matches!(err, Err(AlgoError::Data(_))));
        let one_class = LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 0], 1);
        assert!(
            DiagonalAromaConfig::default()
                .fit(
                    &one_class,
                    &Schedule::last_only(1),
                    &mut seeded(1),
                    &mut NullObserver
                )
                .is_err()
        );
    }
}
