//! **Simulated** human evaluation of the OASIS web experiment (spec §7.3, §8.3, §12.3; items
//! 7–9: J-F3B, J-F3C, J-F3D / N-F1a). The paper's twenty volunteers cannot be reproduced;
//! this is a pipeline stand-in on synthetic data, and its numbers are not the paper's.
//!
//! [`evaluate`] runs the whole protocol for a ranking supplied by the harness (e.g. through
//! [`scorer_top`] for a learned model) on a [`Corpus`] (for the web stand-in:
//! [`Corpus::web_test`] over the test rows); its steps are public functions:
//!
//! 1. [`select_queries`]: the 25 most relevant test images (overall relevance = sum of
//!    `R_QI(q, p)` over the image's queries, §7.3).
//! 2. [`candidates`]: the ranker's 10 nearest neighbours of each query plus 10 random
//!    negatives with `R_II = 0` (no shared text query; θ = 0), randomly mixed.
//! 3. [`judge`] / [`judge_query`]: each simulated rater marks a candidate relevant iff the
//!    Jaccard overlap of the latent concept sets of query and candidate reaches the rater's
//!    threshold (a broad rater — "any vehicle" — has a low threshold, a strict one — "any big
//!    red truck" — a high one), then flips the decision with the rater's noise probability,
//!    and with probability `cant_say` abstains ("can't say"; counted as *not relevant*, the
//!    instructions' default). Thresholds and noise levels are drawn per rater from the panel
//!    seed; the flips of a (query, candidate) pair from a seed derived from the panel seed and
//!    the two image ids, so judgements do not depend on the order of the calls.
//! 4. The §8.3 metrics, on relevance marks in rank order (`[query][rater][rank]`):
//!    [`precision_at_k`] (J-F3B), [`average_precision`] / [`ap_table`] / [`ap_spread`] (mean SD
//!    of AP over queries and over raters; the paper's 0.33 / 0.25), [`selected_queries`] and
//!    [`query_precision`] (J-F3C: queries at mAP ranks 1, 6, 11, 16, 21 with s.e.m. error
//!    bars across raters) and [`agreement`] (J-F3D: per-query human precision against the
//!    other raters next to the ranker's precision@10). [`summarize`] runs them all.
//!
//! Choices (the spec marks §8.3 ambiguous): AP of a (query, rater) = mean of precision@k
//! over the ranks k (of the ranker's 10) the rater marked relevant, 0 when none; standard
//! deviations are sample SDs (`n − 1`, Matlab's `std`, the authors' environment), NaN with
//! fewer than 2 values; mAP ranks count from the best query (rank 1 = highest mAP), ties by
//! query order; precision@k beyond a ranking shorter than k counts missing ranks as not
//! relevant.

use dyad_core::data::sorted_intersect;
use dyad_core::{LabeledSet, Rng, Scorer, derive_seed, seeded};
use dyad_datasets::DataError;
use dyad_datasets::web::WebData;
use rand::Rng as _;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// The mAP ranks of the five queries of J-F3C (1-based).
pub const J_F3C_RANKS: [usize; 5] = [1, 6, 11, 16, 21];

/// Configuration of the simulated rater panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaterPanel {
    /// Number of raters: 20 (\[J\]); \[N\] says 30.
    #[serde(default = "d_raters")]
    pub raters: usize,
    /// Rater thresholds on the Jaccard concept overlap are uniform in
    /// `[min_threshold, max_threshold]`.
    #[serde(default = "d_min_threshold")]
    pub min_threshold: f64,
    #[serde(default = "d_max_threshold")]
    pub max_threshold: f64,
    /// Rater flip probabilities are uniform in `[0, max_flip]`.
    #[serde(default = "d_max_flip")]
    pub max_flip: f64,
    /// Probability of a "can't say" answer (0 = never).
    #[serde(default)]
    pub cant_say: f64,
    /// Panel seed.
    #[serde(default)]
    pub seed: u64,
}

fn d_raters() -> usize {
    20
}
fn d_min_threshold() -> f64 {
    0.15
}
fn d_max_threshold() -> f64 {
    0.75
}
fn d_max_flip() -> f64 {
    0.1
}

impl Default for RaterPanel {
    fn default() -> Self {
        Self::new(0)
    }
}

/// One simulated rater.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rater {
    /// Minimum Jaccard overlap of concept sets judged relevant (in `(0, 1]`).
    pub threshold: f64,
    /// Probability of flipping the decision.
    pub flip: f64,
    /// Probability of answering "can't say".
    pub cant_say: f64,
}

/// A drawn panel: its raters and the seed of its judgement noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub raters: Vec<Rater>,
    seed: u64,
}

impl RaterPanel {
    /// The default panel of 20 raters (\[J\]) with seed `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            raters: d_raters(),
            min_threshold: d_min_threshold(),
            max_threshold: d_max_threshold(),
            max_flip: d_max_flip(),
            cant_say: 0.0,
            seed,
        }
    }

    /// Draw the raters. Deterministic in the configuration.
    pub fn draw(&self) -> Result<Panel, DataError> {
        let bad = |m: String| Err(DataError::Param(format!("rater panel: {m}")));
        if !(2..=10_000).contains(&self.raters) {
            return bad(format!("raters must be in 2..=10000, got {}", self.raters));
        }
        let (lo, hi) = (self.min_threshold, self.max_threshold);
        if !(lo > 0.0 && lo <= hi && hi <= 1.0) {
            return bad(format!(
                "thresholds need 0 < min <= max <= 1, got {lo} and {hi}"
            ));
        }
        if !(0.0..=0.5).contains(&self.max_flip) || !(0.0..=1.0).contains(&self.cant_say) {
            return bad(format!(
                "max_flip must be in [0, 0.5] and cant_say in [0, 1], got {} and {}",
                self.max_flip, self.cant_say
            ));
        }
        let mut rng = seeded(derive_seed(self.seed, "raters/panel"));
        let raters = (0..self.raters)
            .map(|_| Rater {
                threshold: lo + (hi - lo) * rng.random::<f64>(),
                flip: self.max_flip * rng.random::<f64>(),
                cant_say: self.cant_say,
            })
            .collect();
        Ok(Panel {
            raters,
            seed: derive_seed(self.seed, "raters/judgements"),
        })
    }
}

impl Panel {
    /// A panel with the given raters (tests, hand-made panels).
    pub fn with_raters(raters: Vec<Rater>, seed: u64) -> Self {
        Self { raters, seed }
    }

    pub fn len(&self) -> usize {
        self.raters.len()
    }

    pub fn is_empty(&self) -> bool {
        self.raters.is_empty()
    }
}

/// A rater's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Judgement {
    Relevant,
    NotRelevant,
    CantSay,
}

impl Judgement {
    /// Whether the answer counts as relevant ("can't say" does not).
    pub fn is_relevant(self) -> bool {
        self == Judgement::Relevant
    }
}

/// Jaccard overlap `|A ∩ B| / |A ∪ B|` of two concept lists (duplicates ignored; 0 when both
/// are empty).
pub fn concept_overlap(a: &[u32], b: &[u32]) -> f64 {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_unstable();
    a.dedup();
    b.sort_unstable();
    b.dedup();
    let inter = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Every rater's judgement of `candidate` for `query` (image ids, which seed the noise) from
/// their latent concepts.
pub fn judge(
    panel: &Panel,
    query: usize,
    candidate: usize,
    query_concepts: &[u32],
    candidate_concepts: &[u32],
) -> Vec<Judgement> {
    let overlap = concept_overlap(query_concepts, candidate_concepts);
    let mut rng = seeded(derive_seed(
        panel.seed,
        &format!("judge/{query}/{candidate}"),
    ));
    panel
        .raters
        .iter()
        .map(|r| {
            let (u_flip, u_cant): (f64, f64) = (rng.random(), rng.random());
            if u_cant < r.cant_say {
                return Judgement::CantSay;
            }
            let relevant = (overlap >= r.threshold) != (u_flip < r.flip);
            if relevant {
                Judgement::Relevant
            } else {
                Judgement::NotRelevant
            }
        })
        .collect()
}

/// The test images with the largest overall relevance (sum of click counts over their
/// queries), most relevant first, ties by ascending index; at most `n` (25 in the paper).
pub fn select_queries(clicks: &[Vec<(u32, u32)>], rows: &[usize], n: usize) -> Vec<usize> {
    let total = |i: usize| clicks[i].iter().map(|&(_, c)| u64::from(c)).sum::<u64>();
    let mut r: Vec<(u64, usize)> = rows.iter().map(|&i| (total(i), i)).collect();
    r.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    r.into_iter().take(n).map(|p| p.1).collect()
}

/// A candidate shown to the raters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub image: usize,
    /// Rank in the ranker's list (0-based), `None` for a random negative.
    pub rank: Option<usize>,
}

/// The ranker's top images (in rank order) mixed with `negatives` images drawn uniformly
/// without replacement from `pool` among those sharing no query with `query` (`R_II = 0`,
/// θ = 0; `relevance` = sorted query lists), other than the query and the ranked images;
/// the result is shuffled.
pub fn candidates(
    query: usize,
    ranking_top: &[usize],
    pool: &[usize],
    relevance: &[Vec<u32>],
    negatives: usize,
    rng: &mut Rng,
) -> Result<Vec<Candidate>, DataError> {
    let mut eligible: Vec<usize> = pool
        .iter()
        .copied()
        .filter(|&p| {
            p != query
                && !ranking_top.contains(&p)
                && !sorted_intersect(&relevance[query], &relevance[p])
        })
        .collect();
    eligible.sort_unstable();
    eligible.dedup();
    if eligible.len() < negatives {
        return Err(DataError::Param(format!(
            "only {} images of the pool qualify as negatives for query {query}, {negatives} \
             needed",
            eligible.len()
        )));
    }
    let mut out: Vec<Candidate> = ranking_top
        .iter()
        .enumerate()
        .map(|(r, &image)| Candidate {
            image,
            rank: Some(r),
        })
        .collect();
    out.extend(
        rand::seq::index::sample(rng, eligible.len(), negatives)
            .into_iter()
            .map(|j| Candidate {
                image: eligible[j],
                rank: None,
            }),
    );
    out.shuffle(rng);
    Ok(out)
}

/// All raters' answers for one query image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryJudgements {
    pub query: usize,
    pub candidates: Vec<Candidate>,
    /// `marks[rater][candidate]`.
    pub marks: Vec<Vec<Judgement>>,
}

/// Have the panel judge every candidate of `query`; `concepts[i]` = latent concepts of image
/// `i`.
pub fn judge_query(
    panel: &Panel,
    query: usize,
    candidates: Vec<Candidate>,
    concepts: &[Vec<u32>],
) -> QueryJudgements {
    let per_candidate: Vec<Vec<Judgement>> = candidates
        .iter()
        .map(|c| judge(panel, query, c.image, &concepts[query], &concepts[c.image]))
        .collect();
    let marks = (0..panel.len())
        .map(|e| per_candidate.iter().map(|j| j[e]).collect())
        .collect();
    QueryJudgements {
        query,
        candidates,
        marks,
    }
}

impl QueryJudgements {
    /// Candidate positions of the ranker's images, in rank order.
    pub fn ranker_positions(&self) -> Vec<usize> {
        let mut p: Vec<(usize, usize)> = self
            .candidates
            .iter()
            .enumerate()
            .filter_map(|(j, c)| c.rank.map(|r| (r, j)))
            .collect();
        p.sort_unstable();
        p.into_iter().map(|x| x.1).collect()
    }

    /// `[rater][candidate]` relevance marks.
    pub fn relevant(&self) -> Vec<Vec<bool>> {
        self.marks
            .iter()
            .map(|m| m.iter().map(|j| j.is_relevant()).collect())
            .collect()
    }

    /// `[rater][rank]` relevance marks of the ranker's images.
    pub fn ranked(&self) -> Vec<Vec<bool>> {
        let pos = self.ranker_positions();
        self.marks
            .iter()
            .map(|m| pos.iter().map(|&j| m[j].is_relevant()).collect())
            .collect()
    }
}

fn precision_curve(ranked: &[bool], k_max: usize) -> Vec<f64> {
    let mut hits = 0;
    (1..=k_max)
        .map(|k| {
            if ranked.get(k - 1).copied().unwrap_or(false) {
                hits += 1;
            }
            hits as f64 / k as f64
        })
        .collect()
}

/// J-F3B: precision@k, k = 1..=k_max, for every (query, rater), averaged over all of them.
/// `ranked[query][rater][rank]`.
pub fn precision_at_k(ranked: &[Vec<Vec<bool>>], k_max: usize) -> Vec<f64> {
    let mut sum = vec![0.0; k_max];
    let mut n = 0usize;
    for q in ranked {
        for e in q {
            n += 1;
            for (s, p) in sum.iter_mut().zip(precision_curve(e, k_max)) {
                *s += p;
            }
        }
    }
    sum.iter().map(|s| s / n.max(1) as f64).collect()
}

/// Mean and standard error of the mean (across raters) of one query's precision@k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryPrecision {
    pub mean: Vec<f64>,
    pub sem: Vec<f64>,
}

/// J-F3C: one query's precision@k across raters (`ranked[rater][rank]`), with s.e.m. error
/// bars (sample SD / √raters).
pub fn query_precision(ranked: &[Vec<bool>], k_max: usize) -> QueryPrecision {
    let curves: Vec<Vec<f64>> = ranked.iter().map(|e| precision_curve(e, k_max)).collect();
    let (mut mean, mut sem) = (Vec::with_capacity(k_max), Vec::with_capacity(k_max));
    for k in 0..k_max {
        let v: Vec<f64> = curves.iter().map(|c| c[k]).collect();
        mean.push(v.iter().sum::<f64>() / v.len().max(1) as f64);
        sem.push(sample_sd(&v) / (v.len() as f64).sqrt());
    }
    QueryPrecision { mean, sem }
}

/// AP of one rater's marks over the ranker's list: the mean of precision@k over the ranks k
/// marked relevant; 0 when none is.
pub fn average_precision(ranked: &[bool]) -> f64 {
    let (mut hits, mut sum) = (0usize, 0.0);
    for (r, &rel) in ranked.iter().enumerate() {
        if rel {
            hits += 1;
            sum += hits as f64 / (r + 1) as f64;
        }
    }
    if hits == 0 { 0.0 } else { sum / hits as f64 }
}

/// `ap[query][rater]`.
pub fn ap_table(ranked: &[Vec<Vec<bool>>]) -> Vec<Vec<f64>> {
    ranked
        .iter()
        .map(|q| q.iter().map(|e| average_precision(e)).collect())
        .collect()
}

/// Sample standard deviation (`n − 1`); NaN with fewer than two values.
pub fn sample_sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return f64::NAN;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// mAP and the spread of AP (§8.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApSpread {
    /// Mean AP over all (query, rater) pairs.
    pub map: f64,
    /// Per rater, the SD of AP across queries; averaged over raters (paper: 0.33).
    pub sd_over_queries: f64,
    /// Per query, the SD of AP across raters; averaged over queries (paper: 0.25).
    pub sd_over_raters: f64,
}

/// [`ApSpread`] of an `ap[query][rater]` table (every query judged by the same raters).
pub fn ap_spread(ap: &[Vec<f64>]) -> ApSpread {
    if ap.is_empty() {
        return ApSpread {
            map: f64::NAN,
            sd_over_queries: f64::NAN,
            sd_over_raters: f64::NAN,
        };
    }
    let ne = ap[0].len();
    assert!(
        ap.iter().all(|q| q.len() == ne),
        "every query must be judged by the same raters"
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let all: Vec<f64> = ap.iter().flatten().copied().collect();
    let over_queries: Vec<f64> = (0..ne)
        .map(|e| sample_sd(&ap.iter().map(|q| q[e]).collect::<Vec<_>>()))
        .collect();
    let over_raters: Vec<f64> = ap.iter().map(|q| sample_sd(q)).collect();
    ApSpread {
        map: mean(&all),
        sd_over_queries: mean(&over_queries),
        sd_over_raters: mean(&over_raters),
    }
}

/// Per-query mAP (mean AP over raters) of an `ap[query][rater]` table.
pub fn query_map(ap: &[Vec<f64>]) -> Vec<f64> {
    ap.iter()
        .map(|q| q.iter().sum::<f64>() / q.len().max(1) as f64)
        .collect()
}

/// The queries (indices into `ap`) at the given 1-based ranks of per-query mAP, best first
/// (ties by query index); ranks beyond the number of queries are skipped. J-F3C uses
/// [`J_F3C_RANKS`].
pub fn selected_queries(ap: &[Vec<f64>], ranks: &[usize]) -> Vec<usize> {
    let m = query_map(ap);
    let mut order: Vec<usize> = (0..m.len()).collect();
    order.sort_by(|&a, &b| m[b].total_cmp(&m[a]).then(a.cmp(&b)));
    ranks
        .iter()
        .filter(|&&r| r >= 1 && r <= order.len())
        .map(|&r| order[r - 1])
        .collect()
}

/// J-F3D for one query: human precision against the other raters, and the ranker's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Per rater: the mean, over the candidates the rater marked relevant, of the fraction of
    /// the *other* raters marking them relevant; `None` when the rater marked nothing.
    pub per_rater: Vec<Option<f64>>,
    /// Mean of `per_rater` over the raters that marked something.
    pub human: Option<f64>,
    /// The ranker's precision against the same kind of ground truth: the mean, over its
    /// ranked images, of the fraction of all raters marking them relevant (= precision@10
    /// averaged over raters for a top-10 list).
    pub ranker: f64,
}

/// [`Agreement`] from `marks[rater][candidate]` and the candidate positions of the ranker's
/// images.
pub fn agreement(marks: &[Vec<bool>], ranker_positions: &[usize]) -> Agreement {
    let ne = marks.len();
    let nc = marks.first().map_or(0, Vec::len);
    let count: Vec<usize> = (0..nc)
        .map(|j| marks.iter().filter(|m| m[j]).count())
        .collect();
    let per_rater: Vec<Option<f64>> = marks
        .iter()
        .map(|m| {
            let mine: Vec<usize> = (0..nc).filter(|&j| m[j]).collect();
            (!mine.is_empty() && ne > 1).then(|| {
                mine.iter()
                    .map(|&j| (count[j] - 1) as f64 / (ne - 1) as f64)
                    .sum::<f64>()
                    / mine.len() as f64
            })
        })
        .collect();
    let marked: Vec<f64> = per_rater.iter().flatten().copied().collect();
    let human = (!marked.is_empty()).then(|| marked.iter().sum::<f64>() / marked.len() as f64);
    let ranker = if ranker_positions.is_empty() || ne == 0 {
        0.0
    } else {
        ranker_positions
            .iter()
            .map(|&j| count[j] as f64 / ne as f64)
            .sum::<f64>()
            / ranker_positions.len() as f64
    };
    Agreement {
        per_rater,
        human,
        ranker,
    }
}

/// Every §8.3 metric of a judged query set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanReport {
    /// J-F3B: precision@k averaged over queries and raters.
    pub precision: Vec<f64>,
    pub spread: ApSpread,
    /// Per-query mAP, in query order.
    pub query_map: Vec<f64>,
    /// J-F3C: indices (into the judged queries) at mAP ranks 1, 6, 11, 16, 21.
    pub selected: Vec<usize>,
    /// J-F3C: their precision curves with s.e.m.
    pub selected_precision: Vec<QueryPrecision>,
    /// J-F3D: per query, in query order.
    pub agreement: Vec<Agreement>,
    /// Fraction of (rater, negative) judgements marked relevant (a sanity check: should be
    /// near the raters' flip noise).
    pub negative_marked: f64,
}

/// Compute the [`HumanReport`] of judged queries.
pub fn summarize(judged: &[QueryJudgements], k_max: usize) -> HumanReport {
    let ranked: Vec<Vec<Vec<bool>>> = judged.iter().map(QueryJudgements::ranked).collect();
    let ap = ap_table(&ranked);
    let selected = selected_queries(&ap, &J_F3C_RANKS);
    let (mut neg, mut neg_marked) = (0usize, 0usize);
    for q in judged {
        for m in &q.marks {
            for (c, j) in q.candidates.iter().zip(m) {
                if c.rank.is_none() {
                    neg += 1;
                    neg_marked += usize::from(j.is_relevant());
                }
            }
        }
    }
    HumanReport {
        precision: precision_at_k(&ranked, k_max),
        spread: ap_spread(&ap),
        query_map: query_map(&ap),
        selected_precision: selected
            .iter()
            .map(|&q| query_precision(&ranked[q], k_max))
            .collect(),
        selected,
        agreement: judged
            .iter()
            .map(|q| agreement(&q.relevant(), &q.ranker_positions()))
            .collect(),
        negative_marked: neg_marked as f64 / neg.max(1) as f64,
    }
}

/// The images the panel sees and the facts it judges them by: candidate pool, `R_QI`, the
/// relevance lists (θ = 0: relevant iff a shared query) and the latent concepts, indexed by
/// image id.
#[derive(Debug, Clone, Copy)]
pub struct Corpus<'a> {
    /// Image ids eligible as queries and random negatives (the test part), ascending.
    pub rows: &'a [usize],
    pub clicks: &'a [Vec<(u32, u32)>],
    /// Sorted query lists.
    pub relevance: &'a [Vec<u32>],
    pub concepts: &'a [Vec<u32>],
}

impl<'a> Corpus<'a> {
    /// The test part of the web stand-in (`rows` from [`WebData::test_rows`]).
    pub fn web_test(data: &'a WebData, rows: &'a [usize]) -> Self {
        Self {
            rows,
            clicks: &data.clicks,
            relevance: data
                .set
                .relevance
                .as_deref()
                .expect("web data has relevance lists"),
            concepts: &data.concepts,
        }
    }
}

/// Sizes of the §7.3 protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protocol {
    /// Query images: the most relevant images of the pool (25).
    #[serde(default = "d_queries")]
    pub queries: usize,
    /// The ranker's nearest neighbours shown per query (10).
    #[serde(default = "d_top")]
    pub top: usize,
    /// Random negatives (`R_II = 0`) mixed in per query (10).
    #[serde(default = "d_top")]
    pub negatives: usize,
    /// Seed of the negatives and the shuffling.
    #[serde(default)]
    pub seed: u64,
}

fn d_queries() -> usize {
    25
}
fn d_top() -> usize {
    10
}

impl Default for Protocol {
    fn default() -> Self {
        Self {
            queries: d_queries(),
            top: d_top(),
            negatives: d_top(),
            seed: 0,
        }
    }
}

/// The outcome of [`evaluate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanEvaluation {
    /// Query image ids, most relevant first.
    pub queries: Vec<usize>,
    /// The panel's answers, in query order.
    pub judged: Vec<QueryJudgements>,
    /// The §8.3 metrics (precision@1..=`top`).
    pub report: HumanReport,
}

/// Run the simulated §7.3 evaluation: select the `protocol.queries` most relevant images of
/// `corpus.rows`, ask `rank(query)` for the ranker's list (best first; its first
/// `protocol.top` entries are used: distinct image ids other than the query), mix in
/// `protocol.negatives` random negatives from the pool (seeded per query from
/// `protocol.seed`, so the result does not depend on the call order), have the panel judge
/// them and compute the [`HumanReport`].
pub fn evaluate(
    panel: &Panel,
    protocol: &Protocol,
    corpus: &Corpus<'_>,
    mut rank: impl FnMut(usize) -> Vec<usize>,
) -> Result<HumanEvaluation, DataError> {
    if protocol.queries == 0 || protocol.top == 0 {
        return Err(DataError::Param(
            "human evaluation: queries and top must be >= 1".into(),
        ));
    }
    if panel.is_empty() {
        return Err(DataError::Param("human evaluation: empty panel".into()));
    }
    let queries = select_queries(corpus.clicks, corpus.rows, protocol.queries);
    let mut judged = Vec::with_capacity(queries.len());
    for &q in &queries {
        let mut top = rank(q);
        top.truncate(protocol.top);
        let mut distinct = top.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if top.len() < protocol.top || distinct.len() < top.len() || top.contains(&q) {
            return Err(DataError::Param(format!(
                "human evaluation: the ranking of query {q} must hold {} distinct images other \
                 than the query, got {top:?}",
                protocol.top
            )));
        }
        let mut rng = seeded(derive_seed(
            protocol.seed,
            &format!("raters/candidates/{q}"),
        ));
        let c = candidates(
            q,
            &top,
            corpus.rows,
            corpus.relevance,
            protocol.negatives,
            &mut rng,
        )?;
        judged.push(judge_query(panel, q, c, corpus.concepts));
    }
    let report = summarize(&judged, protocol.top);
    Ok(HumanEvaluation {
        queries,
        judged,
        report,
    })
}

/// A ranking function for [`evaluate`] from a learned model: the `k` images of `rows`
/// (image ids of `set`, ascending) with the largest `S(query, ·)`, best first, the query
/// itself excluded; ties by position in `rows` (ascending image id) and NaN scores last, as
/// in `dyad_core::metrics`.
pub fn scorer_top<'a>(
    model: &'a dyn Scorer,
    set: &'a LabeledSet,
    rows: &'a [usize],
    k: usize,
) -> impl FnMut(usize) -> Vec<usize> + 'a {
    let database = set.select(rows);
    let terms = model.candidate_terms(&database.x);
    let mut scores = vec![0.0; rows.len()];
    move |query| {
        let row = set.x.outer_view(query).expect("query row");
        model.score_with_terms(row, &database.x, &terms, &mut scores);
        let key = |j: usize| {
            let s = scores[j];
            if s.is_nan() { f64::NEG_INFINITY } else { s }
        };
        let by = |a: &usize, b: &usize| key(*b).total_cmp(&key(*a)).then(a.cmp(b));
        let mut order: Vec<usize> = (0..rows.len()).filter(|&j| rows[j] != query).collect();
        if order.len() > k && k > 0 {
            order.select_nth_unstable_by(k - 1, by);
        }
        order.truncate(k);
        order.sort_unstable_by(by);
        order.into_iter().map(|j| rows[j]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_datasets::web::WebStandin;
    use sprs::{CsMat, CsVecView};

    const EPS: f64 = 1e-12;

    fn rater(threshold: f64, flip: f64, cant_say: f64) -> Rater {
        Rater {
            threshold,
            flip,
            cant_say,
        }
    }

    /// Plain dot products (the identity `W`).
    struct Dot;

    impl Scorer for Dot {
        fn score(&self, q: CsVecView<'_, f64>, c: &CsMat<f64>, out: &mut [f64]) {
            for (j, r) in c.outer_iterator().enumerate() {
                out[j] = dyad_core::sparse::dot(q.indices(), q.data(), r.indices(), r.data());
            }
        }
    }

    #[test]
    fn panel_is_deterministic_within_bounds_and_validated() {
        let cfg = RaterPanel {
            cant_say: 0.05,
            ..RaterPanel::new(3)
        };
        let p = cfg.draw().unwrap();
        assert_eq!(p, cfg.draw().unwrap());
        assert_eq!(p.len(), 20);
        for r in &p.raters {
            assert!((0.15..=0.75).contains(&r.threshold));
            assert!((0.0..=0.1).contains(&r.flip));
            assert_eq!(r.cant_say, 0.05);
        }
        // Thresholds spread over the range (20 uniform draws: min < 0.3, max > 0.6 unless
        // the generator is broken).
        let t: Vec<f64> = p.raters.iter().map(|r| r.threshold).collect();
        assert!(t.iter().copied().fold(1.0, f64::min) < 0.3);
        assert!(t.iter().copied().fold(0.0, f64::max) > 0.6);
        assert_ne!(p.raters, RaterPanel::new(4).draw().unwrap().raters);
        let bad = [
            RaterPanel {
                raters: 1,
                ..RaterPanel::new(0)
            },
            RaterPanel {
                min_threshold: 0.0,
                ..RaterPanel::new(0)
            },
            RaterPanel {
                min_threshold: 0.8,
                ..RaterPanel::new(0)
            },
            RaterPanel {
                max_flip: 0.6,
                ..RaterPanel::new(0)
            },
            RaterPanel {
                cant_say: 1.5,
                ..RaterPanel::new(0)
            },
        ];
        for (k, b) in bad.iter().enumerate() {
            assert!(matches!(b.draw(), Err(DataError::Param(_))), "case {k}");
        }
        let parsed: RaterPanel = serde_json::from_str(r#"{"raters": 30, "seed": 2}"#).unwrap();
        assert_eq!(
            parsed,
            RaterPanel {
                raters: 30,
                ..RaterPanel::new(2)
            }
        );
        assert!(serde_json::from_str::<RaterPanel>(r#"{"threshold": 0.5}"#).is_err());
    }

    #[test]
    fn concept_overlap_is_jaccard() {
        assert!((concept_overlap(&[1, 2], &[2, 3]) - 1.0 / 3.0).abs() < EPS);
        assert!((concept_overlap(&[2, 1], &[1, 2]) - 1.0).abs() < EPS);
        assert!((concept_overlap(&[1, 1, 2], &[2]) - 0.5).abs() < EPS);
        assert!((concept_overlap(&[7], &[1, 2, 3]) - 0.0).abs() < EPS);
        assert!((concept_overlap(&[1, 2, 3], &[3, 4]) - 0.25).abs() < EPS);
        assert_eq!(concept_overlap(&[], &[]), 0.0);
    }

    #[test]
    fn judgements_follow_thresholds_noise_and_abstentions() {
        use Judgement::*;
        // Noise-free raters: relevant iff overlap >= threshold.
        let p = Panel::with_raters(
            vec![
                rater(0.2, 0.0, 0.0),
                rater(0.5, 0.0, 0.0),
                rater(1.0, 0.0, 0.0),
            ],
            9,
        );
        assert_eq!(
            judge(&p, 0, 1, &[1, 2], &[2, 3]),
            vec![Relevant, NotRelevant, NotRelevant]
        );
        assert_eq!(
            judge(&p, 0, 1, &[1, 2], &[2]),
            vec![Relevant, Relevant, NotRelevant]
        );
        assert_eq!(
            judge(&p, 0, 1, &[4], &[4]),
            vec![Relevant, Relevant, Relevant]
        );
        assert_eq!(judge(&p, 0, 1, &[4], &[5]), vec![NotRelevant; 3]);
        // A rater who always flips, one who always abstains ("can't say" is not relevant).
        let p = Panel::with_raters(vec![rater(0.5, 1.0, 0.0), rater(0.5, 0.0, 1.0)], 9);
        assert_eq!(judge(&p, 0, 1, &[4], &[4]), vec![NotRelevant, CantSay]);
        assert_eq!(judge(&p, 0, 1, &[4], &[5]), vec![Relevant, CantSay]);
        assert!(!CantSay.is_relevant() && !NotRelevant.is_relevant() && Relevant.is_relevant());
        // Flip and abstention rates, over many (query, candidate) pairs.
        let p = Panel::with_raters(vec![rater(0.5, 0.3, 0.0), rater(0.5, 0.0, 0.2)], 5);
        let n = 4000;
        let (mut flipped, mut abstained) = (0, 0);
        for c in 0..n {
            let j = judge(&p, 17, c, &[1], &[2]);
            flipped += usize::from(j[0] == Relevant);
            abstained += usize::from(j[1] == CantSay);
        }
        let (f, a) = (flipped as f64 / n as f64, abstained as f64 / n as f64);
        assert!((f - 0.3).abs() < 0.03, "flip rate {f}");
        assert!((a - 0.2).abs() < 0.03, "can't-say rate {a}");
        // Judgements depend on the pair, not on the call order; other seeds differ.
        let first = judge(&p, 17, 5, &[1], &[2]);
        let _ = judge(&p, 3, 4, &[1], &[2]);
        assert_eq!(judge(&p, 17, 5, &[1], &[2]), first);
        let all: Vec<Vec<Judgement>> = (0..200).map(|c| judge(&p, 1, c, &[1], &[2])).collect();
        let q = Panel::with_raters(p.raters.clone(), 6);
        let other: Vec<Vec<Judgement>> = (0..200).map(|c| judge(&q, 1, c, &[1], &[2])).collect();
        assert_ne!(all, other);
    }

    #[test]
    fn queries_are_the_most_clicked_images() {
        let clicks = vec![
            vec![(0, 5)],
            vec![(1, 2), (2, 4)],
            vec![(3, 1)],
            vec![(4, 6)],
            vec![(0, 9)],
        ];
        // Totals 5, 6, 1, 6, 9; image 4 is not in the pool; 1 and 3 tie (index order).
        assert_eq!(select_queries(&clicks, &[0, 1, 2, 3], 3), vec![1, 3, 0]);
        assert_eq!(
            select_queries(&clicks, &[0, 1, 2, 3, 4], 10),
            vec![4, 1, 3, 0, 2]
        );
    }

    #[test]
    fn candidates_mix_the_ranking_with_true_negatives() {
        // Query 0 has queries {1, 2}; images sharing one of them: 1, 2; image 3 is ranked.
        let relevance: Vec<Vec<u32>> = vec![
            vec![1, 2],
            vec![2],
            vec![1, 5],
            vec![7],
            vec![8],
            vec![9],
            vec![3],
            vec![4, 6],
        ];
        let pool: Vec<usize> = (0..8).collect();
        let mut rng = seeded(1);
        let c = candidates(0, &[3, 1], &pool, &relevance, 3, &mut rng).unwrap();
        assert_eq!(c.len(), 5);
        let ranked: Vec<(usize, Option<usize>)> = c
            .iter()
            .filter(|c| c.rank.is_some())
            .map(|c| (c.image, c.rank))
            .collect();
        assert!(ranked.contains(&(3, Some(0))) && ranked.contains(&(1, Some(1))));
        let mut neg: Vec<usize> = c
            .iter()
            .filter(|c| c.rank.is_none())
            .map(|c| c.image)
            .collect();
        neg.sort_unstable();
        neg.dedup();
        assert_eq!(neg.len(), 3);
        // Eligible negatives: 4, 5, 6, 7 (not the query, not ranked, no shared query).
        assert!(neg.iter().all(|i| [4, 5, 6, 7].contains(i)), "{neg:?}");
        // Every eligible negative is drawn sometimes; the mix is shuffled.
        let mut seen = [false; 8];
        let mut ranked_first = 0;
        for s in 0..200 {
            let c = candidates(0, &[3, 1], &pool, &relevance, 3, &mut seeded(s)).unwrap();
            for x in c.iter().filter(|c| c.rank.is_none()) {
                seen[x.image] = true;
            }
            ranked_first += usize::from(c[0].rank.is_some());
        }
        assert_eq!(seen, [false, false, false, false, true, true, true, true]);
        assert!((40..120).contains(&ranked_first), "{ranked_first} of 200");
        assert!(candidates(0, &[3, 1], &pool, &relevance, 5, &mut rng).is_err());
        // The ranker's positions recover rank order.
        let judged = judge_query(
            &Panel::with_raters(vec![rater(0.5, 0.0, 0.0)], 0),
            0,
            c,
            &vec![vec![0]; 8],
        );
        let pos = judged.ranker_positions();
        assert_eq!(judged.candidates[pos[0]].image, 3);
        assert_eq!(judged.candidates[pos[1]].image, 1);
        assert_eq!(judged.ranked(), vec![vec![true, true]]);
    }

    #[test]
    fn precision_and_average_precision_by_hand() {
        let (t, f) = (true, false);
        // Rater A: hits at ranks 1 and 3; rater B: hit at rank 2 only.
        let ranked = vec![vec![vec![t, f, t, f], vec![f, t, f, f]]];
        let p = precision_at_k(&ranked, 5);
        // A: 1, 1/2, 2/3, 2/4, 2/5 (rank 5 missing = not relevant); B: 0, 1/2, 1/3, 1/4, 1/5.
        let want = [0.5, 0.5, 0.5, 0.375, 0.3];
        for (x, y) in p.iter().zip(want) {
            assert!((x - y).abs() < EPS, "{p:?}");
        }
        assert!((average_precision(&[t, f, t, f]) - (1.0 + 2.0 / 3.0) / 2.0).abs() < EPS);
        assert!((average_precision(&[f, t, f, f]) - 0.5).abs() < EPS);
        assert!((average_precision(&[t, t, t]) - 1.0).abs() < EPS);
        assert_eq!(average_precision(&[f, f]), 0.0);
        assert_eq!(
            ap_table(&ranked),
            vec![vec![average_precision(&[t, f, t, f]), 0.5]]
        );
        // One query's curve across raters with s.e.m. = sample SD / sqrt(2).
        let qp = query_precision(&ranked[0], 2);
        assert!((qp.mean[0] - 0.5).abs() < EPS && (qp.mean[1] - 0.5).abs() < EPS);
        // precision@1 values 1 and 0: SD = sqrt(0.5), s.e.m. = 0.5; precision@2: 0.5, 0.5.
        assert!((qp.sem[0] - 0.5).abs() < EPS && qp.sem[1].abs() < EPS);
        assert!((sample_sd(&[1.0, 2.0, 3.0, 4.0]) - (5.0f64 / 3.0).sqrt()).abs() < EPS);
        assert!(sample_sd(&[1.0]).is_nan());
    }

    #[test]
    fn ap_spread_and_query_selection_by_hand() {
        // ap[query][rater]: 3 queries x 2 raters.
        let ap = vec![vec![1.0, 0.5], vec![0.0, 0.5], vec![0.5, 0.5]];
        let s = ap_spread(&ap);
        assert!((s.map - 0.5).abs() < EPS);
        // Over queries: rater 0 SD of (1, 0, 0.5) = 0.5; rater 1 SD of (0.5, 0.5, 0.5) = 0.
        assert!((s.sd_over_queries - 0.25).abs() < EPS);
        // Over raters: SDs of (1, .5), (0, .5), (.5, .5) = sqrt(.125), sqrt(.125), 0.
        assert!((s.sd_over_raters - 2.0 * 0.125f64.sqrt() / 3.0).abs() < EPS);
        assert!(ap_spread(&[]).map.is_nan());
        // Per-query mAP 0.75, 0.25, 0.5: ranks 1, 2, 3 are queries 0, 2, 1.
        assert_eq!(query_map(&ap), vec![0.75, 0.25, 0.5]);
        assert_eq!(selected_queries(&ap, &[1, 2, 3, 4]), vec![0, 2, 1]);
        // Ties keep query order; J-F3C ranks beyond the number of queries are skipped.
        let tied: Vec<Vec<f64>> = (0..25)
            .map(|q| vec![if q % 2 == 0 { 0.5 } else { 0.2 }])
            .collect();
        assert_eq!(
            selected_queries(&tied, &J_F3C_RANKS),
            vec![0, 10, 20, 5, 15]
        );
        assert_eq!(selected_queries(&ap, &J_F3C_RANKS), vec![0]);
    }

    #[test]
    fn agreement_by_hand() {
        let (t, f) = (true, false);
        // marks[rater][candidate], 3 raters x 3 candidates; the ranker's images are 0 and 2.
        let marks = vec![vec![t, t, f], vec![t, f, f], vec![f, f, f]];
        let a = agreement(&marks, &[0, 2]);
        // Rater 0 marked 0 (1 other of 2 agrees: 1/2) and 1 (0 of 2: 0) -> 1/4; rater 1 marked
        // 0 (1 of 2) -> 1/2; rater 2 marked nothing.
        assert_eq!(a.per_rater.len(), 3);
        assert!((a.per_rater[0].unwrap() - 0.25).abs() < EPS);
        assert!((a.per_rater[1].unwrap() - 0.5).abs() < EPS);
        assert_eq!(a.per_rater[2], None);
        assert!((a.human.unwrap() - 0.375).abs() < EPS);
        // Ranker: candidate 0 marked by 2 of 3, candidate 2 by none -> (2/3 + 0) / 2.
        assert!((a.ranker - 1.0 / 3.0).abs() < EPS);
        assert_eq!(agreement(&[vec![f, f]], &[0]).human, None);
    }

    #[test]
    fn pipeline_on_the_web_standin() {
        let data = WebStandin {
            idf_reference: 0,
            ..WebStandin::new(4000, 1)
        }
        .generate()
        .unwrap();
        let rows = data.test_rows();
        let corpus = Corpus::web_test(&data, &rows);
        let panel = RaterPanel::new(2).draw().unwrap();
        let protocol = Protocol::default();
        // Oracle ranker: the candidates sharing the most latent concepts (Jaccard), by id.
        let oracle = |q: usize| {
            let mut r: Vec<(f64, usize)> = rows
                .iter()
                .filter(|&&j| j != q)
                .map(|&j| (concept_overlap(&data.concepts[q], &data.concepts[j]), j))
                .collect();
            r.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            r.into_iter().take(10).map(|p| p.1).collect()
        };
        let good = evaluate(&panel, &protocol, &corpus, oracle).unwrap();
        assert_eq!(good, evaluate(&panel, &protocol, &corpus, oracle).unwrap());
        assert_eq!(good.queries, select_queries(&data.clicks, &rows, 25));
        assert_eq!(good.judged.len(), 25);
        for (q, j) in good.queries.iter().zip(&good.judged) {
            assert_eq!(j.query, *q);
            assert_eq!(j.candidates.len(), 20);
            assert_eq!(j.marks.len(), 20);
            assert!(j.marks.iter().all(|m| m.len() == 20));
            for c in j.candidates.iter().filter(|c| c.rank.is_none()) {
                assert!(rows.binary_search(&c.image).is_ok());
                assert!(!data.set.relevant(*q, &data.set, c.image));
            }
        }
        let r = &good.report;
        assert_eq!(r.precision.len(), 10);
        assert_eq!(r.selected.len(), 5);
        assert_eq!(r.selected_precision.len(), 5);
        assert_eq!(r.agreement.len(), 25);
        // The oracle's neighbours share concepts: raters mostly accept them, and precision
        // falls with k as the overlap drops; negatives are accepted only by noise and the
        // rare shared concept.
        assert!(r.precision[0] > 0.8, "{:?}", r.precision);
        assert!(r.precision[0] >= r.precision[9]);
        assert!(
            r.negative_marked < 0.15,
            "negatives marked {}",
            r.negative_marked
        );
        // A random ranker: its images are judged like the random negatives (the raters do
        // not know which candidates are ranked), far below the oracle.
        let random = |q: usize| {
            let others: Vec<usize> = rows.iter().copied().filter(|&j| j != q).collect();
            rand::seq::index::sample(&mut seeded(q as u64), others.len(), 10)
                .into_iter()
                .map(|j| others[j])
                .collect()
        };
        let rand_eval = evaluate(&panel, &protocol, &corpus, random).unwrap();
        let p10 = |e: &HumanEvaluation| e.report.precision[9];
        assert!(
            (p10(&rand_eval) - rand_eval.report.negative_marked).abs() < 0.06,
            "random ranker {} vs negatives {}",
            p10(&rand_eval),
            rand_eval.report.negative_marked
        );
        assert!(p10(&good) > p10(&rand_eval) + 0.5);
        // A model through `scorer_top` (plain dot products): the spread of AP is positive
        // both ways.
        let dot = evaluate(
            &panel,
            &protocol,
            &corpus,
            scorer_top(&Dot, &data.set, &rows, 10),
        )
        .unwrap();
        assert!(dot.report.spread.sd_over_queries > 0.0);
        assert!(dot.report.spread.sd_over_raters > 0.0);
        assert!((0.0..=1.0).contains(&dot.report.spread.map));
        // A ranking that is too short or repeats images is rejected.
        let short = evaluate(&panel, &protocol, &corpus, |_| vec![rows[0]]);
        assert!(matches!(short, Err(DataError::Param(_))));
        let repeated = evaluate(&panel, &protocol, &corpus, |q| {
            let o = rows.iter().copied().find(|&j| j != q).unwrap();
            vec![o; 10]
        });
        assert!(matches!(repeated, Err(DataError::Param(_))));
    }

    #[test]
    fn scorer_top_matches_a_full_sort() {
        let data = WebStandin {
            idf_reference: 0,
            ..WebStandin::new(1500, 4)
        }
        .generate()
        .unwrap();
        let rows = data.test_rows();
        let mut top = scorer_top(&Dot, &data.set, &rows, 7);
        for &q in rows.iter().step_by(17) {
            let qr = data.set.x.outer_view(q).unwrap();
            let mut all: Vec<(f64, usize)> = rows
                .iter()
                .filter(|&&j| j != q)
                .map(|&j| {
                    let r = data.set.x.outer_view(j).unwrap();
                    let s = dyad_core::sparse::dot(qr.indices(), qr.data(), r.indices(), r.data());
                    (s, j)
                })
                .collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let want: Vec<usize> = all.iter().take(7).map(|p| p.1).collect();
            assert_eq!(top(q), want);
        }
    }
}
