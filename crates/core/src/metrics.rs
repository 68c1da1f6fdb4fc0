//! Ranking metrics exactly as OASIS spec §8: for each query, rank the other items by
//! decreasing score; precision@k = relevant items among the top k, divided by k; average
//! precision = mean of precision@r over the ranks r that hold a relevant item (non-
//! interpolated, every relevant item present in the ranking); mAP = mean AP over queries.
//!
//! Ties are broken deterministically by ascending candidate index (the spec leaves
//! tie-breaking open); NaN scores rank last.

use crate::{LabeledSet, Scorer};
use rayon::prelude::*;

/// Metrics of one query's ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRanking {
    /// Average precision; `None` when the query has no relevant candidate.
    pub ap: Option<f64>,
    /// `precision[k-1]` = precision@k for k = 1..=k_max. When fewer than k candidates exist,
    /// the missing positions count as non-relevant (the denominator stays k).
    pub precision: Vec<f64>,
    /// Number of relevant candidates.
    pub n_relevant: usize,
    /// Number of candidates ranked (the query itself excluded).
    pub n_candidates: usize,
}

/// Rank candidates `0..scores.len()` (skipping `exclude`) and compute AP and precision@1..k_max.
pub fn rank_query(
    scores: &[f64],
    relevant: &[bool],
    exclude: Option<usize>,
    k_max: usize,
) -> QueryRanking {
    assert_eq!(scores.len(), relevant.len());
    // One packed key per candidate, (descending score, ascending index), sorted as plain
    // integers: the unique order a stable sort by decreasing score gives (the index breaks
    // ties), with the keys contiguous instead of looked up through the scores at every
    // comparison (LORETA F4's quick evaluation: 17 s -> 7 s; the same ranking, tested against
    // the stable sort).
    let mut keys: Vec<u128> = (0..scores.len())
        .filter(|&i| Some(i) != exclude)
        .map(|i| (u128::from(descending_key(scores[i])) << 64) | i as u128)
        .collect();
    keys.sort_unstable();
    ranking_metrics(keys.iter().map(|&k| k as u64 as usize), relevant, k_max)
}

/// AP and precision@1..k_max of a ranking (candidate indices, best first).
fn ranking_metrics(
    order: impl ExactSizeIterator<Item = usize> + Clone,
    relevant: &[bool],
    k_max: usize,
) -> QueryRanking {
    let n_candidates = order.len();
    let n_relevant = order.clone().filter(|&i| relevant[i]).count();
    let mut precision = Vec::with_capacity(k_max);
    let (mut hits, mut ap_sum) = (0usize, 0.0);
    for (r, i) in order.enumerate() {
        if relevant[i] {
            hits += 1;
            ap_sum += hits as f64 / (r + 1) as f64;
        }
        if r < k_max {
            precision.push(hits as f64 / (r + 1) as f64);
        }
    }
    // Positions past the end of the ranking: hits stay constant, denominator grows.
    for k in precision.len() + 1..=k_max {
        precision.push(hits as f64 / k as f64);
    }
    QueryRanking {
        ap: (n_relevant > 0).then(|| ap_sum / n_relevant as f64),
        precision,
        n_relevant,
        n_candidates,
    }
}

/// An integer whose ascending order is the descending `f64::total_cmp` order of `s`, NaN
/// ranked as `-inf` (last).
fn descending_key(s: f64) -> u64 {
    let s = if s.is_nan() { f64::NEG_INFINITY } else { s };
    let b = s.to_bits();
    let ascending = if b >> 63 == 1 { !b } else { b | (1 << 63) };
    !ascending
}

/// Query-averaged retrieval metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    /// Mean AP over queries that have at least one relevant candidate.
    pub map: f64,
    /// Mean precision@k, k = 1..=k_max, over the same queries.
    pub precision: Vec<f64>,
    /// Expected precision of a uniformly random ranking, averaged over the same queries
    /// (the figures' "Random" line): relevant / candidates.
    pub chance: f64,
    /// Queries that entered the averages.
    pub queries: usize,
}

/// Rank `database` for every row of `queries` under `model`, with relevance = same label (or
/// intersecting label lists for multi-label sets, see [`LabeledSet::relevant`]).
/// When `same_set` is true the two are the same set and each query is excluded from its own
/// ranking (the papers' protocol: "rank all other test images"). Queries are scored in
/// parallel; the averages are summed in query order, so the result does not depend on the
/// thread count.
pub fn evaluate_retrieval(
    model: &dyn Scorer,
    queries: &LabeledSet,
    database: &LabeledSet,
    same_set: bool,
    k_max: usize,
) -> Retrieval {
    let terms = model.candidate_terms(&database.x);
    let per_query: Vec<QueryRanking> = (0..queries.n())
        .into_par_iter()
        .map_init(
            || (vec![0.0; database.n()], vec![false; database.n()]),
            |(scores, relevant), q| {
                let row = queries.x.outer_view(q).expect("query row");
                model.score_with_terms(row, &database.x, &terms, scores);
                for (j, r) in relevant.iter_mut().enumerate() {
                    *r = queries.relevant(q, database, j);
                }
                rank_query(scores, relevant, same_set.then_some(q), k_max)
            },
        )
        .collect();
    summarize(&per_query, k_max)
}

/// Average per-query rankings (queries without relevant candidates are skipped).
pub fn summarize(per_query: &[QueryRanking], k_max: usize) -> Retrieval {
    let mut precision = vec![0.0; k_max];
    let (mut map, mut chance, mut n) = (0.0, 0.0, 0usize);
    for q in per_query {
        let Some(ap) = q.ap else { continue };
        n += 1;
        map += ap;
        chance += q.n_relevant as f64 / q.n_candidates as f64;
        for (acc, p) in precision.iter_mut().zip(&q.precision) {
            *acc += p;
        }
    }
    let div = n.max(1) as f64;
    precision.iter_mut().for_each(|p| *p /= div);
    Retrieval {
        map: map / div,
        precision,
        chance: chance / div,
        queries: n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn hand_computed_ranking() {
        // Scores rank candidates as 3, 0, 4, 1, 2; relevant = {0, 2}.
        let scores = [0.8, 0.3, 0.1, 0.9, 0.5];
        let relevant = [true, false, true, false, false];
        let r = rank_query(&scores, &relevant, None, 6);
        // Relevant at ranks 2 and 5: AP = (1/2 + 2/5) / 2 = 0.45.
        assert!(close(r.ap.unwrap(), 0.45));
        let expect = [0.0, 0.5, 1.0 / 3.0, 0.25, 0.4, 2.0 / 6.0];
        for (p, e) in r.precision.iter().zip(expect) {
            assert!(close(*p, e), "{:?}", r.precision);
        }
    }

    #[test]
    fn self_exclusion_and_ties() {
        // Query 0 scores itself highest; it must not count. Candidates 1 and 2 tie: index
        // order puts 1 (non-relevant) first.
        let scores = [5.0, 1.0, 1.0, 0.0];
        let relevant = [true, false, true, true];
        let r = rank_query(&scores, &relevant, Some(0), 3);
        assert_eq!(r.n_candidates, 3);
        // Ranking 1, 2, 3: relevant at 2 and 3 -> AP = (1/2 + 2/3)/2.
        assert!(close(r.ap.unwrap(), (0.5 + 2.0 / 3.0) / 2.0));
        assert!(close(r.precision[0], 0.0));
        assert!(close(r.precision[2], 2.0 / 3.0));
    }

    #[test]
    fn perfect_ranking_and_no_relevant() {
        let r = rank_query(&[3.0, 2.0, 1.0], &[true, true, false], None, 2);
        assert_eq!(r.ap, Some(1.0));
        let none = rank_query(&[3.0, 2.0], &[false, false], None, 1);
        assert_eq!(none.ap, None);
        let s = summarize(&[r, none], 2);
        assert_eq!(s.queries, 1);
        assert!(close(s.chance, 2.0 / 3.0));
    }

    /// The former ordering: a stable sort of the indices by decreasing score.
    fn reference(
        scores: &[f64],
        relevant: &[bool],
        exclude: Option<usize>,
        k_max: usize,
    ) -> QueryRanking {
        let key = |i: usize| {
            let s = scores[i];
            if s.is_nan() { f64::NEG_INFINITY } else { s }
        };
        let mut order: Vec<usize> = (0..scores.len()).filter(|&i| Some(i) != exclude).collect();
        order.sort_by(|&a, &b| key(b).total_cmp(&key(a)));
        ranking_metrics(order.into_iter(), relevant, k_max)
    }

    #[test]
    fn packed_keys_rank_exactly_as_a_stable_sort_by_score() {
        use rand::Rng as _;
        let mut rng = crate::seeded(5);
        let specials = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1.0,
            -1.0,
        ];
        for trial in 0..300 {
            let n = rng.random_range(1..400);
            // Few distinct values (many ties), special values, and continuous ones.
            let scores: Vec<f64> = (0..n)
                .map(|_| match rng.random_range(0..3) {
                    0 => specials[rng.random_range(0..specials.len())],
                    1 => f64::from(rng.random_range(-3i32..3)) * 0.5,
                    _ => rng.random_range(-1e3..1e3),
                })
                .collect();
            let relevant: Vec<bool> = (0..n).map(|_| rng.random_bool(0.2)).collect();
            let exclude = (trial % 2 == 0).then(|| rng.random_range(0..n));
            let (a, b) = (
                rank_query(&scores, &relevant, exclude, 10),
                reference(&scores, &relevant, exclude, 10),
            );
            assert_eq!(
                a.ap.map(f64::to_bits),
                b.ap.map(f64::to_bits),
                "trial {trial}"
            );
            assert_eq!(a, b, "trial {trial}");
        }
    }

    #[test]
    fn nan_scores_rank_last() {
        let r = rank_query(&[f64::NAN, 0.0], &[true, false], None, 1);
        assert!(close(r.ap.unwrap(), 0.5));
    }
}
