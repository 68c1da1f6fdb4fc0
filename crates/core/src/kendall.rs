//! Kendall's rank correlation on all inequality pairs, the measure of the tensor-ranking paper
//! (manifold-tensor.md §5): over the pairs `(i, j)` whose ground-truth ranks differ,
//!
//! ```text
//! τ = (N_correct − N_incorrect) / N_pairs
//! ```
//!
//! A pair is *correct* when the scores order it as the truth does (`f_i > f_j` and
//! `t_i > t_j`, or both `<`), *incorrect* when they order it the other way; a pair with
//! `f_i = f_j` counts as neither but stays in `N_pairs` (spec §5 \[OURS\]). Pairs tied in the
//! truth are not pairs. This is Kendall's τ-a restricted to the truth's inequality pairs, as
//! the paper defines it ("the difference between the number of correctly ordered pairs and the
//! number of incorrectly ordered pairs normalised by the number of total pairs").
//!
//! # Algorithm
//!
//! Sort the points by score, then sweep the tie-groups of equal score in ascending order. For
//! each point of a group, the points already swept have strictly smaller scores: those with
//! a lower truth are correct pairs, those with a higher truth incorrect. The group is queried
//! whole before it is inserted, so score ties count as neither. The swept points are counted
//! per truth level in a Fenwick tree over the distinct truth values, so each query is
//! `O(log c)`: `O(n log n)` for the sort and `O(n log c)` for the sweep (within the
//! `O(n log n + n·c)` of spec §5 with per-level counters, and never worse). `N_pairs` is
//! `(n² − Σ_level n_level²) / 2`. Counts are `u64` (MNIST's 1.6·10⁹ pairs fit easily).
//!
//! Scores are ordered by `f64::total_cmp`, so NaN sorts above every number (and `-0.0` below
//! `0.0`); the caller should not pass NaN. To score a subset (e.g. the unlabelled points), pass
//! the gathered scores and truths.
//!
//! [`tau_on_pairs`] scores a list of labelled inequality pairs instead (validation pairs):
//! the same `(correct − incorrect) / pairs`, over the listed pairs.

/// The counts behind a Kendall τ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KendallCounts {
    /// Pairs ordered as the truth orders them.
    pub correct: u64,
    /// Pairs ordered against the truth.
    pub incorrect: u64,
    /// All pairs whose truths differ (score ties included).
    pub pairs: u64,
}

impl KendallCounts {
    /// `(correct − incorrect) / pairs`; 0 when there is no pair.
    pub fn tau(&self) -> f64 {
        if self.pairs == 0 {
            0.0
        } else {
            (self.correct as f64 - self.incorrect as f64) / self.pairs as f64
        }
    }

    /// Pairs with equal scores (neither correct nor incorrect).
    pub fn score_ties(&self) -> u64 {
        self.pairs - self.correct - self.incorrect
    }
}

/// Kendall's τ of `scores` against `truth` over all inequality pairs of the truth (module
/// docs). Panics when the lengths differ.
pub fn kendall_tau(scores: &[f64], truth: &[f64]) -> f64 {
    kendall_counts(scores, truth).tau()
}

/// The counts of [`kendall_tau`].
pub fn kendall_counts(scores: &[f64], truth: &[f64]) -> KendallCounts {
    assert_eq!(
        scores.len(),
        truth.len(),
        "kendall: scores and truth differ in length"
    );
    let n = scores.len();
    if n < 2 {
        return KendallCounts::default();
    }
    // Truth levels: the rank of each truth among the distinct truths.
    let mut levels: Vec<f64> = truth.to_vec();
    levels.sort_unstable_by(f64::total_cmp);
    levels.dedup_by(|a, b| a.total_cmp(b).is_eq());
    let level = |t: f64| levels.partition_point(|v| v.total_cmp(&t).is_lt());
    let lv: Vec<usize> = truth.iter().map(|&t| level(t)).collect();
    let c = levels.len();

    let mut per_level = vec![0u64; c];
    for &l in &lv {
        per_level[l] += 1;
    }
    let nn = n as u64;
    let same: u64 = per_level.iter().map(|&k| k * k).sum();
    let pairs = (nn * nn - same) / 2;

    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| scores[a].total_cmp(&scores[b]));

    let mut tree = Fenwick::new(c);
    let (mut correct, mut incorrect) = (0u64, 0u64);
    let mut seen = 0u64;
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && scores[order[end]].total_cmp(&scores[order[start]]).is_eq() {
            end += 1;
        }
        for &i in &order[start..end] {
            let below = tree.prefix(lv[i]); // seen with a strictly lower level
            let at_or_below = tree.prefix(lv[i] + 1);
            correct += below;
            incorrect += seen - at_or_below;
        }
        for &i in &order[start..end] {
            tree.add(lv[i]);
        }
        seen += (end - start) as u64;
        start = end;
    }
    KendallCounts {
        correct,
        incorrect,
        pairs,
    }
}

/// τ over listed inequality pairs `(i, j)`, each meaning "`i` ranks above `j`":
/// `(#{f_i > f_j} − #{f_i < f_j}) / #pairs` (0 for no pair). Panics on an index out of range.
pub fn tau_on_pairs(scores: &[f64], above: &[(usize, usize)]) -> f64 {
    if above.is_empty() {
        return 0.0;
    }
    let mut s = 0i64;
    for &(i, j) in above {
        s += match scores[i].partial_cmp(&scores[j]) {
            Some(std::cmp::Ordering::Greater) => 1,
            Some(std::cmp::Ordering::Less) => -1,
            _ => 0,
        };
    }
    s as f64 / above.len() as f64
}

/// Counts per level with prefix sums in `O(log c)`.
struct Fenwick {
    t: Vec<u64>,
}

impl Fenwick {
    fn new(c: usize) -> Self {
        Self { t: vec![0; c + 1] }
    }

    fn add(&mut self, level: usize) {
        let mut i = level + 1;
        while i < self.t.len() {
            self.t[i] += 1;
            i += i & i.wrapping_neg();
        }
    }

    /// How many inserted levels are `< end`.
    fn prefix(&self, end: usize) -> u64 {
        let mut s = 0;
        let mut i = end;
        while i > 0 {
            s += self.t[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded;
    use rand::Rng as _;

    fn brute(scores: &[f64], truth: &[f64]) -> KendallCounts {
        let mut k = KendallCounts::default();
        for i in 0..scores.len() {
            for j in 0..i {
                if truth[i] == truth[j] {
                    continue;
                }
                k.pairs += 1;
                let s = (scores[i] - scores[j]) * (truth[i] - truth[j]);
                if s > 0.0 {
                    k.correct += 1;
                } else if s < 0.0 {
                    k.incorrect += 1;
                }
            }
        }
        k
    }

    #[test]
    fn hand_cases() {
        // Perfect order, reversed order, all scores tied.
        let t = [0.0, 1.0, 2.0, 3.0];
        assert_eq!(kendall_tau(&[10.0, 20.0, 30.0, 40.0], &t), 1.0);
        assert_eq!(kendall_tau(&[4.0, 3.0, 2.0, 1.0], &t), -1.0);
        let tied = kendall_counts(&[5.0; 4], &t);
        assert_eq!((tied.correct, tied.incorrect, tied.pairs), (0, 0, 6));
        assert_eq!(tied.tau(), 0.0);
        // Two classes (truth 1 above 0) of two points: 4 pairs. Scores put one class-0 point
        // above one class-1 point and tie another pair.
        // points: a(t=1, f=3), b(t=1, f=1), c(t=0, f=2), d(t=0, f=1)
        // pairs: a>c ok, a>d ok, b<c wrong, b=d tie -> (2 - 1) / 4.
        let k = kendall_counts(&[3.0, 1.0, 2.0, 1.0], &[1.0, 1.0, 0.0, 0.0]);
        assert_eq!(
            (k.correct, k.incorrect, k.pairs, k.score_ties()),
            (2, 1, 4, 1)
        );
        assert_eq!(k.tau(), 0.25);
        // Pairs tied in the truth do not count, whatever the scores.
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[7.0, 7.0, 7.0]), 0.0);
        assert_eq!(kendall_counts(&[1.0, 2.0, 3.0], &[7.0; 3]).pairs, 0);
        assert_eq!(kendall_counts(&[], &[]).pairs, 0);
        // Listed pairs: (0 above 1) right, (2 above 0) wrong, (1 above 3) tie.
        let f = [2.0, 1.0, 0.0, 1.0];
        assert_eq!(tau_on_pairs(&f, &[(0, 1), (2, 0), (1, 3)]), 0.0);
        assert_eq!(tau_on_pairs(&f, &[(0, 1), (0, 2)]), 1.0);
    }

    #[test]
    fn matches_brute_force_with_ties_in_both() {
        let mut rng = seeded(11);
        for case in 0..200 {
            let n = rng.random_range(0..60);
            let levels = rng.random_range(1..8);
            let score_levels = if case % 3 == 0 { 5 } else { 1_000_000 };
            let truth: Vec<f64> = (0..n)
                .map(|_| rng.random_range(0..levels) as f64 * 0.5 - 1.0)
                .collect();
            let scores: Vec<f64> = (0..n)
                .map(|_| rng.random_range(0..score_levels) as f64 / 7.0)
                .collect();
            assert_eq!(
                kendall_counts(&scores, &truth),
                brute(&scores, &truth),
                "case {case}"
            );
        }
    }

    #[test]
    fn large_class_order_counts_pairs_without_overflow() {
        // 60,000 points in 10 classes, scored by their class: every pair correct.
        let truth: Vec<f64> = (0..60_000).map(|i| (i % 10) as f64).collect();
        let k = kendall_counts(&truth, &truth);
        assert_eq!(k.pairs, (60_000u64 * 60_000 - 10 * 6_000 * 6_000) / 2);
        assert_eq!(k.correct, k.pairs);
        assert_eq!(k.tau(), 1.0);
    }
}
