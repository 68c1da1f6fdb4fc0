//! The factored model `W = A B^T` (or `W = Y Y^T`) every learner of this family reports, and
//! its two uses: a bilinear similarity `S(q, p) = q^T W p` ([`Scorer`]) and a label scorer
//! `W x` ([`LabelScorer`]). `W` is never formed: a score goes through the `k`-dimensional
//! projections `A^T q` and `B^T p`.

use super::LabelScorer;
use dyad_core::model::score_each;
use dyad_core::{Candidates, Scorer, sparse};
use ndarray::{Array2, ArrayView2};
use sprs::{CsMat, CsVecView};

/// Counters of the numerical events of a LORETA run (spec §2.7: the safeguards log them).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoretaStats {
    /// Steps taken with a non-zero gradient.
    pub updates: u64,
    /// Algorithm 7 branches taken (summed over the pseudo-inverse updates of both factors):
    /// `beta != 0, w != 0`.
    pub branch_generic: u64,
    /// `beta = 0, w != 0`.
    pub branch_beta_zero: u64,
    /// `beta != 0, w = 0` (the gradient factor lies in the factor's column space).
    pub branch_w_zero: u64,
    /// Steps skipped because the retracted factor would lose rank (`beta = 0` and `w = 0`).
    pub rank_loss_skips: u64,
    /// Steps with `|s| > 1` (`s = tr M`, spec §2.3: the retraction is only valid near 0).
    pub large_s: u64,
    /// Largest `|s|` seen.
    pub max_abs_s: f64,
    /// Pseudo-inverses recomputed from scratch by the drift check (safeguard 1).
    pub pinv_recomputes: u64,
    /// Balanced refactorisations (safeguard 4).
    pub rebalances: u64,
}

impl LoretaStats {
    /// Count an applied step: its `s = tr M` and the Algorithm 7 branches of its two
    /// pseudo-inverse updates (never `RankLoss`: such steps are skipped, not applied).
    pub(crate) fn record_update(&mut self, s: f64, branches: [super::PinvBranch; 2]) {
        use super::PinvBranch;
        self.updates += 1;
        if s.abs() > 1.0 {
            self.large_s += 1;
        }
        self.max_abs_s = self.max_abs_s.max(s.abs());
        for br in branches {
            match br {
                PinvBranch::Generic => self.branch_generic += 1,
                PinvBranch::BetaZero => self.branch_beta_zero += 1,
                PinvBranch::WZero => self.branch_w_zero += 1,
                PinvBranch::RankLoss => unreachable!("rank-loss steps are skipped"),
            }
        }
    }
}

/// `W = A B^T` with `A` (`n x k`) and `B` (`m x k`) row-major; `B = A` for the PSD model
/// `W = Y Y^T`. As a [`Scorer`], `S(q, p) = q^T W p = (A^T q) . (B^T p)` (query on the `A`
/// side); as a [`LabelScorer`], the scores of the `n` labels (rows of `W`) for a feature
/// vector `x` of dimension `m` are `W x = A (B^T x)`.
#[derive(Debug, Clone, PartialEq)]
pub struct LowRankModel {
    a: Array2<f64>,
    /// `None`: symmetric model, `B = A`.
    b: Option<Array2<f64>>,
    pub(crate) stats: LoretaStats,
    /// `false`: factors learned outside dyad (a Python peer's), whose step counters are
    /// unknown and left out of the statistics rather than reported as zeros.
    counted: bool,
}

impl LowRankModel {
    /// `W = A B^T`. Panics if the factors have different numbers of columns.
    pub fn new(a: Array2<f64>, b: Array2<f64>) -> Self {
        assert_eq!(a.ncols(), b.ncols(), "factors of different rank");
        Self {
            a: a.as_standard_layout().into_owned(),
            b: Some(b.as_standard_layout().into_owned()),
            stats: LoretaStats::default(),
            counted: true,
        }
    }

    /// `W = A B^T` from factors learned elsewhere (a Python peer's): its statistics are the
    /// model's own (rank, conditioning, memory), without step counters it does not have.
    pub fn from_factors(a: Array2<f64>, b: Array2<f64>) -> Self {
        Self {
            counted: false,
            ..Self::new(a, b)
        }
    }

    /// The PSD model `W = Y Y^T`.
    pub fn symmetric(y: Array2<f64>) -> Self {
        Self {
            a: y.as_standard_layout().into_owned(),
            b: None,
            stats: LoretaStats::default(),
            counted: true,
        }
    }

    pub fn a(&self) -> &Array2<f64> {
        &self.a
    }

    /// `B` (`A` itself for a symmetric model).
    pub fn b(&self) -> &Array2<f64> {
        self.b.as_ref().unwrap_or(&self.a)
    }

    pub fn is_symmetric(&self) -> bool {
        self.b.is_none()
    }

    pub(crate) fn a_mut(&mut self) -> &mut Array2<f64> {
        &mut self.a
    }

    /// Both factors, mutable. Panics on a symmetric model.
    pub(crate) fn factors_mut(&mut self) -> (&mut Array2<f64>, &mut Array2<f64>) {
        (
            &mut self.a,
            self.b.as_mut().expect("B of a non-symmetric model"),
        )
    }

    /// The rank `k` (columns of the factors).
    pub fn rank(&self) -> usize {
        self.a.ncols()
    }

    /// Rows of `W` (`n`).
    pub fn rows(&self) -> usize {
        self.a.nrows()
    }

    /// Columns of `W` (`m`).
    pub fn cols(&self) -> usize {
        self.b().nrows()
    }

    pub fn stats(&self) -> &LoretaStats {
        &self.stats
    }

    /// The dense `n x m` matrix `W` (tests and small examples only: `O(nm)` memory).
    pub fn to_dense(&self) -> Array2<f64> {
        dyad_kernels::linalg::matmul(self.a.view(), self.b().t())
    }

    /// `F^T x` for a sparse `x` over the rows of `F`: `O(nnz(x) k)`, written into `out`.
    pub fn project(f: ArrayView2<'_, f64>, idx: &[usize], val: &[f64], out: &mut [f64]) {
        let k = f.ncols();
        let s = f.as_slice().expect("standard layout");
        out.fill(0.0);
        for (&i, &v) in idx.iter().zip(val) {
            dyad_kernels::linalg::axpy(out, v, &s[i * k..(i + 1) * k]);
        }
    }

    /// `F[i, :] += scale x_i v` for the rows `i` in the support of the sparse `x`:
    /// `O(nnz(x) k)`, the sparse rank-one update of the factored baselines.
    pub fn add_outer_rows(f: &mut Array2<f64>, idx: &[usize], val: &[f64], scale: f64, v: &[f64]) {
        let k = f.ncols();
        let s = f.as_slice_mut().expect("standard layout");
        for (&i, &x) in idx.iter().zip(val) {
            dyad_kernels::linalg::axpy(&mut s[i * k..(i + 1) * k], scale * x, v);
        }
    }

    /// `A^T x`.
    pub fn project_a(&self, x: CsVecView<'_, f64>) -> Vec<f64> {
        let mut out = vec![0.0; self.rank()];
        Self::project(self.a.view(), x.indices(), x.data(), &mut out);
        out
    }

    /// `B^T x`.
    pub fn project_b(&self, x: CsVecView<'_, f64>) -> Vec<f64> {
        let mut out = vec![0.0; self.rank()];
        Self::project(self.b().view(), x.indices(), x.data(), &mut out);
        out
    }

    /// `q^T W p` for sparse `q`, `p`: `O((nnz(q) + nnz(p)) k)`.
    pub fn bilinear(&self, q: (&[usize], &[f64]), p: (&[usize], &[f64])) -> f64 {
        let k = self.rank();
        let (mut u, mut v) = (vec![0.0; k], vec![0.0; k]);
        Self::project(self.a.view(), q.0, q.1, &mut u);
        Self::project(self.b().view(), p.0, p.1, &mut v);
        dyad_kernels::linalg::dot(&u, &v)
    }

    /// Condition number `s_max / s_min` of a factor (infinite when rank deficient).
    fn condition(f: &Array2<f64>) -> f64 {
        match dyad_kernels::linalg::thin_svd(f.view()) {
            Ok((_, s, _)) if !s.is_empty() => {
                let min = s[s.len() - 1];
                if min > 0.0 { s[0] / min } else { f64::INFINITY }
            }
            _ => f64::NAN,
        }
    }

    /// The names its statistics may carry (`cond_b` with a second factor; the counters when
    /// the learner counts its events).
    pub const STATISTICS: &'static [&'static str] = &[
        "rank",
        "cond_a",
        "cond_b",
        "model_bytes",
        "updates",
        "branch_generic",
        "branch_beta_zero",
        "branch_w_zero",
        "rank_loss_skips",
        "large_s_steps",
        "max_abs_s",
        "pinv_recomputes",
        "rebalances",
    ];

    fn stats_list(&self) -> Vec<(&'static str, f64)> {
        let s = &self.stats;
        let mut out = vec![
            ("rank", self.rank() as f64),
            ("cond_a", Self::condition(&self.a)),
        ];
        if let Some(b) = &self.b {
            out.push(("cond_b", Self::condition(b)));
        }
        // The factors only, (n + m) k floats (A and B; A alone for Y Y^T): never n m. The
        // LORETA-1 step state adds their pseudo-inverses, as much again.
        let floats = self.a.len() + self.b.as_ref().map_or(0, |b| b.len());
        out.push(("model_bytes", (floats * std::mem::size_of::<f64>()) as f64));
        if !self.counted {
            return out;
        }
        out.extend([
            ("updates", s.updates as f64),
            ("branch_generic", s.branch_generic as f64),
            ("branch_beta_zero", s.branch_beta_zero as f64),
            ("branch_w_zero", s.branch_w_zero as f64),
            ("rank_loss_skips", s.rank_loss_skips as f64),
            ("large_s_steps", s.large_s as f64),
            ("max_abs_s", s.max_abs_s),
            ("pinv_recomputes", s.pinv_recomputes as f64),
            ("rebalances", s.rebalances as f64),
        ]);
        out
    }
}

impl Scorer for LowRankModel {
    /// `u = A^T q`, `z = B u` (length `m`), then `z . p` per candidate: `O(mk + nnz)`.
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let u = self.project_a(query);
        let (b, k) = (self.b().as_slice().expect("standard layout"), self.rank());
        let z: Vec<f64> = b
            .chunks_exact(k.max(1))
            .map(|row| dyad_kernels::linalg::dot(row, &u))
            .collect();
        for (j, row) in candidates.outer_iterator().enumerate() {
            out[j] = sparse::dot_dense(&z, row.indices(), row.data());
        }
    }

    /// The projections `B^T p` of every candidate, flattened (`N x k`): computed once, each
    /// query then costs `O(nnz(q) k + N k)`.
    fn candidate_terms(&self, candidates: &CsMat<f64>) -> Vec<f64> {
        let k = self.rank();
        let mut out = vec![0.0; candidates.rows() * k];
        for (j, row) in candidates.outer_iterator().enumerate() {
            Self::project(
                self.b().view(),
                row.indices(),
                row.data(),
                &mut out[j * k..(j + 1) * k],
            );
        }
        out
    }

    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        terms: &[f64],
        out: &mut [f64],
    ) {
        let k = self.rank();
        if k == 0 || terms.len() != candidates.rows() * k {
            return self.score(query, candidates, out);
        }
        let u = self.project_a(query);
        for (o, proj) in out.iter_mut().zip(terms.chunks_exact(k)) {
            *o = dyad_kernels::linalg::dot(proj, &u);
        }
    }

    /// Each candidate's projection read once for the whole block (evaluation streams
    /// `N x k` terms per block instead of per query), the same dot product per pair.
    fn score_block(
        &self,
        queries: &[CsVecView<'_, f64>],
        candidates: &Candidates<'_>,
        out: &mut [f64],
    ) {
        let (k, n) = (self.rank(), candidates.x.rows());
        if k == 0 || candidates.terms.len() != n * k {
            return score_each(self, queries, candidates, out);
        }
        let us: Vec<Vec<f64>> = queries.iter().map(|&q| self.project_a(q)).collect();
        let (fours, rest) = us.as_chunks::<4>();
        for (j, proj) in candidates.terms.chunks_exact(k).enumerate() {
            for (f, four) in fours.iter().enumerate() {
                let dots = dyad_kernels::linalg::dot_four(proj, four);
                for (b, d) in dots.into_iter().enumerate() {
                    out[(4 * f + b) * n + j] = d;
                }
            }
            for (b, u) in rest.iter().enumerate() {
                out[(4 * fours.len() + b) * n + j] = dyad_kernels::linalg::dot(proj, u);
            }
        }
    }

    /// The rank, the factors' condition numbers and the numerical event counters.
    fn statistics(&self) -> Vec<(&'static str, f64)> {
        self.stats_list()
    }
}

impl LabelScorer for LowRankModel {
    fn n_labels(&self) -> usize {
        self.rows()
    }

    fn dim(&self) -> usize {
        self.cols()
    }

    /// `W x = A (B^T x)`: `O(nnz(x) k + n k)`.
    fn score_labels(&self, x: CsVecView<'_, f64>, out: &mut [f64]) {
        let c = self.project_b(x);
        let (a, k) = (self.a.as_slice().expect("standard layout"), self.rank());
        if k == 0 {
            out.fill(0.0);
            return;
        }
        for (o, row) in out.iter_mut().zip(a.chunks_exact(k)) {
            *o = dyad_kernels::linalg::dot(row, &c);
        }
    }

    fn statistics(&self) -> Vec<(&'static str, f64)> {
        self.stats_list()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::{LabeledSet, seeded};
    use rand::Rng as _;

    #[test]
    fn factors_from_elsewhere_report_no_step_counters() {
        // A peer's factors: rank, conditioning and memory, but no "updates = 0" and no zero
        // branch counts; the same factors from a dyad learner report its counters.
        let a = Array2::from_shape_fn((6, 2), |(i, j)| (i + 2 * j) as f64 + 1.0);
        let b = Array2::from_shape_fn((5, 2), |(i, j)| (2 * i + j) as f64 - 1.5);
        let names = |m: &LowRankModel| -> Vec<&'static str> {
            m.stats_list().into_iter().map(|(n, _)| n).collect()
        };
        let peer = names(&LowRankModel::from_factors(a.clone(), b.clone()));
        assert_eq!(peer, vec!["rank", "cond_a", "cond_b", "model_bytes"]);
        let ours = names(&LowRankModel::new(a, b));
        assert!(ours.contains(&"updates") && ours.contains(&"branch_generic"));
        assert!(ours.starts_with(&peer));
    }

    #[test]
    fn scores_match_the_dense_bilinear_form_and_label_scores() {
        let mut rng = seeded(4);
        let (n, k) = (9, 3);
        let a = Array2::from_shape_fn((n, k), |_| rng.random_range(-1.0..1.0));
        let b = Array2::from_shape_fn((n, k), |_| rng.random_range(-1.0..1.0));
        let model = LowRankModel::new(a.clone(), b.clone());
        let w = a.dot(&b.t());
        let rows: Vec<Vec<f64>> = (0..6)
            .map(|_| {
                (0..n)
                    .map(|_| {
                        if rng.random::<f64>() < 0.5 {
                            rng.random_range(-1.0..1.0)
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let set = LabeledSet::from_dense_rows(&rows, vec![0; 6], 1);
        let terms = model.candidate_terms(&set.x);
        let (mut s1, mut s2, mut lab) = (vec![0.0; 6], vec![0.0; 6], vec![0.0; n]);
        for q in 0..6 {
            let qv = set.x.outer_view(q).unwrap();
            model.score(qv, &set.x, &mut s1);
            model.score_with_terms(qv, &set.x, &terms, &mut s2);
            model.score_labels(qv, &mut lab);
            let qd = ndarray::Array1::from(rows[q].clone());
            for j in 0..6 {
                let want = qd.dot(&w.dot(&ndarray::Array1::from(rows[j].clone())));
                assert!((s1[j] - want).abs() < 1e-12 && (s2[j] - want).abs() < 1e-12);
            }
            let wx = w.dot(&qd);
            for l in 0..n {
                assert!((lab[l] - wx[l]).abs() < 1e-12);
            }
        }
        // A block of queries scores each pair with the same arithmetic, to the bit.
        let queries: Vec<_> = (0..6).map(|q| set.x.outer_view(q).unwrap()).collect();
        let mut block = vec![0.0; 36];
        model.score_block(&queries, &Candidates::new(&model, &set.x), &mut block);
        for (q, row) in block.chunks(6).enumerate() {
            model.score_with_terms(queries[q], &set.x, &terms, &mut s2);
            assert_eq!(
                row.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                s2.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
        let sym = LowRankModel::symmetric(a.clone());
        assert!(
            (&sym.to_dense() - &a.dot(&a.t()))
                .iter()
                .all(|v| v.abs() < 1e-12)
        );
        assert!(
            Scorer::statistics(&sym)
                .iter()
                .any(|(n, v)| *n == "cond_a" && *v >= 1.0)
        );
    }
}
