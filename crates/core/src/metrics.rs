//! Ranking metrics exactly as OASIS spec §8: for each query, rank the other items by
//! decreasing score; precision@k = relevant items among the top k, divided by k; average
//! precision = mean of precision@r over the ranks r that hold a relevant item (non-
//! interpolated, every relevant item present in the ranking); mAP = mean AP over queries.
//!
//! # Ties
//!
//! Candidates with equal scores form a tied group, and a metric is its **expected value over
//! the uniformly random orderings of every tied group** (McSherry & Najork, "Computing
//! information retrieval performance measures efficiently in the presence of tied scores",
//! ECIR 2008). The spec leaves tie-breaking open; an order fixed by candidate index would make
//! a model that scores many candidates alike (a zero start, duplicate rows, empty rows) look
//! better or worse according to how the data set happens to be sorted (20 Newsgroups is
//! sorted by newsgroup). With this rule a constant scorer sits exactly at chance for every
//! precision@k, and a ranking without ties is scored exactly as before (the same arithmetic,
//! bit for bit). NaN scores count as `-inf`: last, tied with each other and with `-inf`.
//!
//! In a tied group of `g` candidates holding `r` relevant ones, after `h` relevant ones in the
//! `s` positions before it: the expected hits within the first `j` positions of the group are
//! `r j / g`, so precision at position `s + j` is `(h + r j / g) / (s + j)`; a position of the
//! group holds a relevant candidate with probability `r / g`, and then `(r − 1)(j − 1)/(g − 1)`
//! relevant ones are expected before it within the group, which gives the expected AP terms.
//!
//! # Rows without features
//!
//! [`evaluate_retrieval`] ranks a database row with no non-zero feature (a document that kept
//! no selected term, an all-zero vector) **last**, below every row with features, whatever the
//! model: it carries no evidence of relevance, and a distance scorer would otherwise place it
//! at `-||q||²`, above every real candidate farther than that (the bug that put 20 Newsgroups'
//! empty documents at the top of Euclidean, ITML and LEGO rankings). A query with no feature
//! has no ranking to judge and is left out of the averages; [`Retrieval::empty_queries`]
//! counts it. The data sets' own policies (drop such rows, see `dyad data info`) keep both
//! cases out of the papers' experiments; this rule is the scorers' common floor.

use crate::{Candidates, LabeledSet, Scorer};
use rayon::prelude::*;

/// Queries scored together by [`Scorer::score_block`] in [`evaluate_retrieval`]: each
/// evaluating thread holds `QUERY_BLOCK x n` scores for `n` candidates.
pub const QUERY_BLOCK: usize = 16;

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

/// Rank candidates `0..scores.len()` (skipping `exclude`) and compute AP and precision@1..k_max,
/// each the expectation over the orderings of tied candidates (module docs).
///
/// Only the relevant candidates are sorted: each other candidate is counted into the gap
/// between the relevant scores it falls in (a binary search), which is all the metrics need of
/// it. `O(n log R + R log R)` for `R` relevant among `n` candidates instead of a full sort
/// (LORETA F4's paper-size evaluation: 7,532 queries of 7,532 candidates at each of 41
/// checkpoints), with the arithmetic of the sorted ranking, bit for bit (tested against it).
pub fn rank_query(
    scores: &[f64],
    relevant: &[bool],
    exclude: Option<usize>,
    k_max: usize,
) -> QueryRanking {
    assert_eq!(scores.len(), relevant.len());
    let candidates = (0..scores.len()).filter(|&i| Some(i) != exclude);
    // The relevant candidates' score keys, ascending (= descending score), grouped by value.
    let mut keys: Vec<u64> = candidates
        .clone()
        .filter(|&i| relevant[i])
        .map(|i| descending_key(scores[i]))
        .collect();
    keys.sort_unstable();
    let n_relevant = keys.len();
    let mut groups: Vec<(u64, usize)> = Vec::new();
    for &k in &keys {
        match groups.last_mut() {
            Some((g, r)) if *g == k => *r += 1,
            _ => groups.push((k, 1)),
        }
    }
    // Other candidates ranked strictly before group g (and after g - 1): `before[g]`, the
    // last entry after every group; tied with group g: `tied[g]`.
    let mut before = vec![0usize; groups.len() + 1];
    let mut tied = vec![0usize; groups.len()];
    let mut n_candidates = 0;
    for i in candidates {
        n_candidates += 1;
        if relevant[i] {
            continue;
        }
        let k = descending_key(scores[i]);
        let g = groups.partition_point(|&(x, _)| x < k);
        if groups.get(g).map(|&(x, _)| x) == Some(k) {
            tied[g] += 1;
        } else {
            before[g] += 1;
        }
    }
    let mut precision = Vec::with_capacity(k_max.min(n_candidates));
    let (mut hits, mut ap_sum, mut s) = (0usize, 0.0, 0usize);
    // A run of non-relevant candidates: hits stay, positions advance. A tied group of them
    // has the same precision terms, `(h + 0 j / g) / (s + j) = h / (s + j)`, bit for bit.
    let run = |len: usize, s: usize, hits: usize, precision: &mut Vec<f64>| {
        for p in s..(s + len).min(k_max) {
            precision.push(hits as f64 / (p + 1) as f64);
        }
    };
    for (g, &(_, r)) in groups.iter().enumerate() {
        run(before[g], s, hits, &mut precision);
        s += before[g];
        let e = s + r + tied[g];
        if e - s == 1 {
            // No tie: the plain ranking.
            hits += 1;
            ap_sum += hits as f64 / (s + 1) as f64;
            if s < k_max {
                precision.push(hits as f64 / (s + 1) as f64);
            }
        } else {
            let g = (e - s) as f64;
            let (rf, h) = (r as f64, hits as f64);
            let within = (rf - 1.0) / (g - 1.0);
            let sum: f64 = (0..e - s)
                .map(|j| (h + 1.0 + j as f64 * within) / (s + j + 1) as f64)
                .sum();
            ap_sum += rf / g * sum;
            for j in 0..(e - s).min(k_max.saturating_sub(s)) {
                precision.push((h + rf * (j + 1) as f64 / g) / (s + j + 1) as f64);
            }
            hits += r;
        }
        s = e;
    }
    run(before[groups.len()], s, hits, &mut precision);
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
/// ranked as `-inf` (last) and `-0.0` as `0.0` (equal scores tie, whatever their sign bit).
fn descending_key(s: f64) -> u64 {
    let s = if s.is_nan() {
        f64::NEG_INFINITY
    } else if s == 0.0 {
        0.0
    } else {
        s
    };
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
    /// Queries left out because their row has no non-zero feature (module docs).
    pub empty_queries: usize,
}

/// Rank `database` for every row of `queries` under `model`, with relevance = same label (or
/// intersecting label lists for multi-label sets, see [`LabeledSet::relevant`]).
/// When `same_set` is true the two are the same set and each query is excluded from its own
/// ranking (the papers' protocol: "rank all other test images"). Rows without a non-zero
/// feature are ranked last, and such queries left out (module docs). Queries are scored in
/// parallel; the averages are summed in query order, so the result does not depend on the
/// thread count.
pub fn evaluate_retrieval(
    model: &dyn Scorer,
    queries: &LabeledSet,
    database: &LabeledSet,
    same_set: bool,
    k_max: usize,
) -> Retrieval {
    let candidates = Candidates::new(model, &database.x);
    let empty: Vec<usize> = empty_rows(database);
    let n = database.n();
    let n_queries = queries.n();
    let per_query: Vec<Option<QueryRanking>> = (0..n_queries.div_ceil(QUERY_BLOCK))
        .into_par_iter()
        .map_init(
            || (vec![0.0; QUERY_BLOCK * n], vec![false; n]),
            |(scores, relevant), b| {
                let block = b * QUERY_BLOCK..((b + 1) * QUERY_BLOCK).min(n_queries);
                // Queries without a feature are left out (module docs).
                let (live, rows): (Vec<usize>, Vec<_>) = block
                    .clone()
                    .map(|q| (q, queries.x.outer_view(q).expect("query row")))
                    .filter(|(_, row)| row.data().iter().any(|&v| v != 0.0))
                    .unzip();
                model.score_block(&rows, &candidates, &mut scores[..live.len() * n]);
                block
                    .map(|q| {
                        let at = live.iter().position(|&l| l == q)?;
                        let scores = &mut scores[at * n..(at + 1) * n];
                        for &j in &empty {
                            scores[j] = f64::NEG_INFINITY;
                        }
                        for (j, r) in relevant.iter_mut().enumerate() {
                            *r = queries.relevant(q, database, j);
                        }
                        Some(rank_query(scores, relevant, same_set.then_some(q), k_max))
                    })
                    .collect::<Vec<_>>()
            },
        )
        .flatten()
        .collect();
    let ranked: Vec<QueryRanking> = per_query.iter().flatten().cloned().collect();
    let mut r = summarize(&ranked, k_max);
    r.empty_queries = per_query.len() - ranked.len();
    r
}

/// Sanity probes of the metrics on a set's own relevance structure (each row a query against
/// the others, as [`evaluate_retrieval`] with `same_set`): what `dyad check` requires of
/// every label-ranking cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// mAP of the perfect ranking (relevant candidates first, rows without features too) over
    /// the first `oracle_queries` queries: 1 by definition.
    pub oracle_map: f64,
    /// mAP of a constant scorer (every candidate tied): the expected AP of a random ranking.
    pub constant_map: f64,
    /// Largest `|mean precision@k − chance|` of the constant scorer over the `k` within every
    /// ranking: 0 up to rounding, since a tie is scored as its expectation.
    pub constant_gap: f64,
}

/// Run the [`Probe`]s on `set` (rows without features left out as queries and ranked last,
/// as in [`evaluate_retrieval`]). The oracle is scored over the first `oracle_queries` queries
/// with a relevant candidate; the constant scorer over all of them.
pub fn probe(set: &LabeledSet, k_max: usize, oracle_queries: usize) -> Probe {
    let empty = empty_rows(set);
    let is_empty = {
        let mut v = vec![false; set.n()];
        empty.iter().for_each(|&i| v[i] = true);
        v
    };
    let per_query: Vec<Option<(QueryRanking, Option<QueryRanking>)>> = (0..set.n())
        .into_par_iter()
        .map(|q| {
            if is_empty[q] {
                return None;
            }
            let relevant: Vec<bool> = (0..set.n()).map(|j| set.relevant(q, set, j)).collect();
            let mut scores = vec![0.0; set.n()];
            for &j in &empty {
                scores[j] = f64::NEG_INFINITY;
            }
            let constant = rank_query(&scores, &relevant, Some(q), k_max);
            // The perfect ranking: relevant candidates first, empty rows included (the metric
            // of a perfect ranking, not the best ranking the empty-row rule allows).
            let oracle = (q < oracle_queries.saturating_mul(4)).then(|| {
                let perfect: Vec<f64> = relevant.iter().map(|&r| f64::from(u8::from(r))).collect();
                rank_query(&perfect, &relevant, Some(q), k_max)
            });
            Some((constant, oracle))
        })
        .collect();
    let constant: Vec<QueryRanking> = per_query.iter().flatten().map(|(c, _)| c.clone()).collect();
    let oracle: Vec<QueryRanking> = per_query
        .iter()
        .flatten()
        .filter_map(|(_, o)| o.clone())
        .filter(|o| o.ap.is_some())
        .take(oracle_queries)
        .collect();
    let c = summarize(&constant, k_max);
    let within = constant
        .iter()
        .filter(|q| q.ap.is_some())
        .map(|q| q.n_candidates)
        .min()
        .unwrap_or(0)
        .min(k_max);
    let constant_gap = c.precision[..within]
        .iter()
        .map(|p| (p - c.chance).abs())
        .fold(0.0, f64::max);
    Probe {
        oracle_map: summarize(&oracle, k_max).map,
        constant_map: c.map,
        constant_gap,
    }
}

/// The rows of `set` without a non-zero feature (no stored entry, or only stored zeros).
pub fn empty_rows(set: &LabeledSet) -> Vec<usize> {
    set.x
        .outer_iterator()
        .enumerate()
        .filter(|(_, r)| r.data().iter().all(|&v| v == 0.0))
        .map(|(i, _)| i)
        .collect()
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
        empty_queries: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference ranking: every candidate sorted by (descending score, index), tied groups
    /// walked in order (the implementation before the relevant-only sort).
    fn rank_query_sorted(
        scores: &[f64],
        relevant: &[bool],
        exclude: Option<usize>,
        k_max: usize,
    ) -> QueryRanking {
        let mut keys: Vec<u128> = (0..scores.len())
            .filter(|&i| Some(i) != exclude)
            .map(|i| (u128::from(descending_key(scores[i])) << 64) | i as u128)
            .collect();
        keys.sort_unstable();
        let n_candidates = keys.len();
        let index = |k: u128| k as u64 as usize;
        let n_relevant = keys.iter().filter(|&&k| relevant[index(k)]).count();
        let mut precision = Vec::new();
        let (mut hits, mut ap_sum) = (0usize, 0.0);
        let mut s = 0;
        while s < n_candidates {
            let score = keys[s] >> 64;
            let e = s + keys[s..].iter().take_while(|&&k| k >> 64 == score).count();
            if e - s == 1 {
                if relevant[index(keys[s])] {
                    hits += 1;
                    ap_sum += hits as f64 / (s + 1) as f64;
                }
                if s < k_max {
                    precision.push(hits as f64 / (s + 1) as f64);
                }
            } else {
                let g = (e - s) as f64;
                let r = keys[s..e].iter().filter(|&&k| relevant[index(k)]).count();
                let (rf, h) = (r as f64, hits as f64);
                if r > 0 {
                    let within = (rf - 1.0) / (g - 1.0);
                    let sum: f64 = (0..e - s)
                        .map(|j| (h + 1.0 + j as f64 * within) / (s + j + 1) as f64)
                        .sum();
                    ap_sum += rf / g * sum;
                }
                for j in 0..(e - s).min(k_max.saturating_sub(s)) {
                    precision.push((h + rf * (j + 1) as f64 / g) / (s + j + 1) as f64);
                }
                hits += r;
            }
            s = e;
        }
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

    #[test]
    fn counting_the_others_into_gaps_ranks_as_the_full_sort_to_the_bit() {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let bits = |q: &QueryRanking| {
            (
                q.ap.map(f64::to_bits),
                q.precision.iter().map(|p| p.to_bits()).collect::<Vec<_>>(),
                q.n_relevant,
                q.n_candidates,
            )
        };
        let special = [
            0.0,
            -0.0,
            f64::NAN,
            f64::NEG_INFINITY,
            f64::INFINITY,
            1.0,
            -1.0,
        ];
        let (mut tied_cases, mut cases) = (0, 0);
        for case in 0..4000 {
            let n = rng.random_range(0..60);
            // Few distinct values (many ties), the special values, or continuous scores.
            let levels = [2, 5, 1000][case % 3];
            let scores: Vec<f64> = (0..n)
                .map(|_| match rng.random_range(0..10) {
                    0 => special[rng.random_range(0..special.len())],
                    _ if levels == 1000 => rng.random::<f64>() - 0.5,
                    _ => f64::from(rng.random_range(0..levels)) * 0.25,
                })
                .collect();
            let p_rel = [0.0, 0.1, 0.5, 1.0][rng.random_range(0..4)];
            let relevant: Vec<bool> = (0..n).map(|_| rng.random_bool(p_rel)).collect();
            let exclude = (n > 0 && rng.random_bool(0.5)).then(|| rng.random_range(0..n));
            let k_max = rng.random_range(0..12);
            let fast = rank_query(&scores, &relevant, exclude, k_max);
            let sorted = rank_query_sorted(&scores, &relevant, exclude, k_max);
            assert_eq!(
                bits(&fast),
                bits(&sorted),
                "{scores:?} {relevant:?} {exclude:?}"
            );
            cases += 1;
            let mut keys: Vec<u64> = scores.iter().map(|&s| descending_key(s)).collect();
            keys.sort_unstable();
            tied_cases += usize::from(keys.windows(2).any(|w| w[0] == w[1]));
        }
        // The cases exercised ties (mixed and non-relevant-only) as well as untied rankings.
        assert!(
            tied_cases > cases / 2 && tied_cases < cases,
            "{tied_cases} of {cases}"
        );
    }

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
        // Query 0 scores itself highest; it must not count. Candidates 1 (non-relevant) and 2
        // (relevant) tie: the two orders 1, 2, 3 and 2, 1, 3 are equally likely.
        let scores = [5.0, 1.0, 1.0, 0.0];
        let relevant = [true, false, true, true];
        let r = rank_query(&scores, &relevant, Some(0), 3);
        assert_eq!(r.n_candidates, 3);
        // Order 1, 2, 3: AP (1/2 + 2/3)/2; order 2, 1, 3: AP (1 + 2/3)/2.
        let ap = ((0.5 + 2.0 / 3.0) / 2.0 + (1.0 + 2.0 / 3.0) / 2.0) / 2.0;
        assert!(close(r.ap.unwrap(), ap), "{:?}", r.ap);
        assert!(close(r.precision[0], 0.5));
        assert!(close(r.precision[1], 0.5));
        assert!(close(r.precision[2], 2.0 / 3.0));
    }

    #[test]
    fn a_constant_scorer_sits_at_chance() {
        // Every candidate tied: precision@k is exactly the fraction of relevant candidates,
        // for every k, whatever their positions in the index order.
        let relevant = [
            true, true, false, false, false, false, true, false, false, false,
        ];
        for rel in [relevant, {
            let mut r = relevant;
            r.reverse();
            r
        }] {
            let r = rank_query(&[0.0; 10], &rel, None, 12);
            for (k, p) in r.precision.iter().enumerate().take(10) {
                assert!(close(*p, 0.3), "k = {}: {p}", k + 1);
            }
            // Past the end the denominator grows: 3 hits / k.
            assert!(close(r.precision[11], 3.0 / 12.0));
            // Expected AP of a random order of 10 with 3 relevant, by the closed form
            // E[AP] = (1/R) sum_j (R/N) (1 + (j-1)(R-1)/(N-1)) / j.
            let e: f64 = (1..=10)
                .map(|j| 0.3 * (1.0 + (j - 1) as f64 * 2.0 / 9.0) / j as f64)
                .sum::<f64>()
                / 3.0;
            assert!(close(r.ap.unwrap(), e));
        }
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

    /// Plain metrics of one fixed order (no tie handling).
    fn metrics_of(order: &[usize], relevant: &[bool], k_max: usize) -> (f64, Vec<f64>) {
        let n_rel = order.iter().filter(|&&i| relevant[i]).count();
        let (mut hits, mut ap, mut prec) = (0usize, 0.0, Vec::new());
        for (r, &i) in order.iter().enumerate() {
            if relevant[i] {
                hits += 1;
                ap += hits as f64 / (r + 1) as f64;
            }
            if r < k_max {
                prec.push(hits as f64 / (r + 1) as f64);
            }
        }
        for k in prec.len() + 1..=k_max {
            prec.push(hits as f64 / k as f64);
        }
        (if n_rel > 0 { ap / n_rel as f64 } else { 0.0 }, prec)
    }

    fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
        if items.len() <= 1 {
            return vec![items.to_vec()];
        }
        let mut out = Vec::new();
        for i in 0..items.len() {
            let mut rest = items.to_vec();
            let x = rest.remove(i);
            for mut p in permutations(&rest) {
                p.insert(0, x);
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn ties_give_the_mean_over_every_order_of_the_tied_candidates() {
        use rand::Rng as _;
        let mut rng = crate::seeded(5);
        for trial in 0..200 {
            let n = rng.random_range(1..8);
            // Few distinct values, NaN and -inf (which tie with each other).
            let values = [1.0, 0.5, -2.0, f64::NAN, f64::NEG_INFINITY];
            let scores: Vec<f64> = (0..n)
                .map(|_| values[rng.random_range(0..values.len())])
                .collect();
            let relevant: Vec<bool> = (0..n).map(|_| rng.random_bool(0.4)).collect();
            let exclude = (trial % 3 == 0).then(|| rng.random_range(0..n));
            let k_max = 9;
            let got = rank_query(&scores, &relevant, exclude, k_max);
            // Every order of the candidates that sorts the scores non-increasingly.
            let key = |i: usize| {
                let s = scores[i];
                if s.is_nan() { f64::NEG_INFINITY } else { s }
            };
            let cands: Vec<usize> = (0..n).filter(|&i| Some(i) != exclude).collect();
            let orders: Vec<Vec<usize>> = permutations(&cands)
                .into_iter()
                .filter(|o| o.windows(2).all(|w| key(w[0]) >= key(w[1])))
                .collect();
            let (mut ap, mut prec) = (0.0, vec![0.0; k_max]);
            for o in &orders {
                let (a, p) = metrics_of(o, &relevant, k_max);
                ap += a;
                prec.iter_mut().zip(&p).for_each(|(x, y)| *x += y);
            }
            let m = orders.len() as f64;
            if got.n_relevant > 0 {
                assert!(close(got.ap.unwrap(), ap / m), "trial {trial}");
            } else {
                assert_eq!(got.ap, None);
            }
            for (a, b) in got.precision.iter().zip(&prec) {
                assert!(
                    close(*a, b / m),
                    "trial {trial}: {:?} vs {prec:?}",
                    got.precision
                );
            }
        }
    }

    #[test]
    fn untied_rankings_score_exactly_as_the_plain_sort() {
        use rand::Rng as _;
        let mut rng = crate::seeded(6);
        for trial in 0..100 {
            let n = rng.random_range(1..400);
            let scores: Vec<f64> = (0..n).map(|_| rng.random_range(-1e3..1e3)).collect();
            let relevant: Vec<bool> = (0..n).map(|_| rng.random_bool(0.2)).collect();
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
            let (ap, prec) = metrics_of(&order, &relevant, 10);
            let got = rank_query(&scores, &relevant, None, 10);
            if got.n_relevant > 0 {
                assert_eq!(got.ap.unwrap().to_bits(), ap.to_bits(), "trial {trial}");
            }
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.precision), bits(&prec), "trial {trial}");
        }
    }

    #[test]
    fn empty_rows_rank_last_and_empty_queries_are_left_out() {
        // A distance scorer puts the empty row (index 3) at -|q|^2 = -1, above the far
        // relevant row 2; the rule ranks it last. Query row 3 itself is left out.
        struct NegDist;
        impl crate::Scorer for NegDist {
            fn score(&self, q: sprs::CsVecView<'_, f64>, c: &sprs::CsMat<f64>, out: &mut [f64]) {
                let qn = crate::sparse::norm_sq(q.data());
                for (j, r) in c.outer_iterator().enumerate() {
                    let d = crate::sparse::dot(q.indices(), q.data(), r.indices(), r.data());
                    out[j] = -(qn - 2.0 * d + crate::sparse::norm_sq(r.data()));
                }
            }
        }
        let set = LabeledSet::from_dense_rows(
            &[
                vec![1.0, 0.0],
                vec![0.0, 1.0],
                vec![-1.0, 0.0],
                vec![0.0, 0.0],
            ],
            vec![0, 1, 0, 0],
            2,
        );
        let r = evaluate_retrieval(&NegDist, &set, &set, true, 1);
        assert_eq!(r.empty_queries, 1);
        assert_eq!(r.queries, 2);
        // Query 0: candidates 1 (-2, not relevant), 2 (-4, relevant), 3 (empty: last,
        // relevant): AP = (1/2 + 2/3) / 2. Query 2 alike. Query 1 has no relevant candidate.
        assert!(close(r.map, (0.5 + 2.0 / 3.0) / 2.0), "{}", r.map);
        assert_eq!(empty_rows(&set), vec![3]);
    }

    #[test]
    fn probes_find_a_perfect_oracle_and_a_constant_at_chance() {
        let rows: Vec<Vec<f64>> = (0..12)
            .map(|i| {
                if i == 5 {
                    vec![0.0, 0.0]
                } else {
                    vec![1.0 + i as f64, (i % 3) as f64]
                }
            })
            .collect();
        let labels: Vec<u32> = (0..12).map(|i| (i % 3) as u32).collect();
        let set = LabeledSet::from_dense_rows(&rows, labels, 3);
        let p = probe(&set, 5, 100);
        assert_eq!(p.oracle_map, 1.0);
        assert!(p.constant_gap < 1e-12, "{}", p.constant_gap);
        assert!(
            p.constant_map > 0.2 && p.constant_map < 1.0,
            "{}",
            p.constant_map
        );
    }

    #[test]
    fn nan_scores_rank_last() {
        let r = rank_query(&[f64::NAN, 0.0], &[true, false], None, 1);
        assert!(close(r.ap.unwrap(), 0.5));
    }
}
