//! The seeded synthetic stand-in for the OASIS web-scale data (spec §6.3, §12.2; items 3–6
//! and 10). Google's query logs, clicks and images are proprietary; this generator produces a
//! data set with the same *shape*: ~10,000-word tf-idf bags of visual words with about 70
//! non-zeros per image, text queries with heavy-tailed click counts `R_QI(q, p)`, partial
//! labelling, an official train/test partition, and nested subsets for the runtime ladder.
//!
//! # Generative model
//!
//! **Latent concepts.** The images generated so far determine how many concepts exist:
//! image `i` (0-based) draws its concepts from the first `C(i + 1)` concepts, with
//! `C(n) = max(min_concepts, ceil(n / images_per_concept))` — one concept per ~500 images,
//! so the number of concepts grows linearly with the number of images, as the spec says real
//! data does (§6.4). The first concepts are therefore shared by more images than the last
//! ones (concept `k` of a set of `N` images holds about `images_per_concept · ln(N / (k ·
//! images_per_concept))` images): a heavy-tailed concept popularity. An image holds 1, 2 or 3
//! distinct concepts (probabilities `concepts_per_image`), with mixing weights drawn from a
//! flat Dirichlet and sorted decreasingly; its **primary label** is its heaviest concept.
//!
//! **Visual words.** Every concept owns `concept_words` distinct words of the vocabulary
//! (uniformly chosen) with Zipf weights (exponent `word_zipf`); `styles` nuisance "styles"
//! (colour/texture statistics shared across concepts, the source of the paper's failure cases
//! J-T3) own `style_words` words each in the same way; a shared background is a Zipf law
//! (exponent `background_zipf`) over a random permutation of the whole vocabulary. An image
//! has `max(10, Poisson(mean_blocks))` blocks; each block's visual word comes from one of the
//! image's concepts (probability `concept_share`, concept chosen by its mixing weight), from
//! the image's style (probability `style_share`, one style per image) or from the background.
//! Counts are weighted by tf-idf and L2-normalised (see *idf* below).
//!
//! **Queries and clicks.** Consecutive concepts form query **topics** of `concepts_per_topic`
//! concepts (a topic is a broad theme such as "dog"; its concepts are breeds, scenes, ...).
//! Every topic owns `head_queries` popular and `tail_queries` rare text queries: query id
//! `q = t · (head_queries + tail_queries) + r` for topic `t`, with `r < head_queries` for the
//! head queries. Every concept ranks its topic's head queries in its own random order, with
//! Zipf popularity (exponent `query_zipf`) along that order, so concepts of one topic share
//! head queries with different emphasis. An image makes `1 + Poisson(links_per_image − 1)`
//! links; each link picks one of the image's concepts by mixing weight, then with probability
//! `tail_share` a uniformly random tail query of the concept's topic (long-tail queries: they
//! make most of the single-image queries), otherwise a head query by the concept's Zipf law.
//! This is the **partial labelling**: an image is linked to ~1.4 of the ~40 queries its
//! concepts would justify, so two images of the same concept usually share no query, while
//! images of different concepts of a topic sometimes do. With Zipf exponent 1 over 40 head
//! queries, two links of one concept hit the same head query with probability ~0.09 and links
//! of two concepts of a topic (independent orders) with probability 1/40 = 0.025: the
//! concepts, which the visual words reveal, predict the queries, so a ranker can learn.
//! Each link carries a heavy-tailed click count `floor(U^(−1/click_tail))`, `U ~ U(0, 1]`
//! (`P(count ≥ c) = c^−click_tail`, capped at 10^6); repeated links to one query add up.
//! `R_QI(q, p)` = the click count; the image's **relevance list** (the `LabeledSet`'s
//! `relevance`) = its queries. Query ids are the *potential* ids above, not compacted: only
//! queries with a click exist in the data ([`WebStats::queries`]); compacting them would make
//! the ids depend on `N` and break nesting.
//!
//! **Relevance.** Two images are relevant iff they share a query: the spec's evaluation
//! relevance with θ = 0 (§6.3), used both for training triplets (`dyad_core`'s multi-label
//! sampler) and evaluation. The \[J\] thresholded `R_II` for training (normalised co-query
//! probability `Pr(p1, p2) = Σ_q R(q,p1) R(q,p2) / (R_q Z)` with a θ keeping the top ~1 % of
//! related pairs, §6.3 / §12.2) is available as an option through [`CoQuery`], computed on the
//! fly per image as the spec asks; it is not the default.
//!
//! **Partition.** Image `i` is a test image iff `⌊(i+1)·f⌋ > ⌊i·f⌋` for `f = test_fraction`:
//! exactly `⌊N·f⌋` test images, spread evenly over the index range, independent of `N` for a
//! given image. The default `f = 402164 / 2694423` reproduces the J-T1 image counts exactly at
//! `images = 2694423` (2,292,259 train / 402,164 test).
//!
//! **idf.** `idf_j = ln((n + 1) / (df_j + 1))` where `df_j` counts the *training* images
//! containing word `j` (\[J\]: "fraction of training images") among the first `idf_reference`
//! images of the stream (`n` = their number of training images); these reference images are
//! generated for the purpose when `images < idf_reference` (their features are discarded).
//! The smoothing keeps words unseen in the reference finite; a word present in every
//! reference image gets weight 0 and is not stored. `idf_reference = 0` uses the training
//! part of the generated set itself (the rows then change slightly with `N`).
//!
//! **Nesting and determinism.** Concepts, styles and the background are drawn from seeds
//! derived from `seed` and the concept/style index ([`dyad_core::derive_seed`]), image `i`
//! from `derive_seed(seed, "web/image/i")`, and the partition and concept availability
//! depend on `i` only. Generating `images = N` and `images = M > N` with the same parameters
//! otherwise therefore gives the same first `N` images: the same concepts, clicks, relevance
//! lists, primary labels and partition, and — with a fixed `idf_reference ≥ 1` (the
//! default) — bit-identical feature rows. Images are generated on all available cores; the
//! result does not depend on the thread count.
//!
//! # Calibration (defaults)
//!
//! * `dim = 10000`; `mean_blocks` gives about 70 non-zeros per image ("on average around 70
//!   non-zero values (out of 10000)").
//! * Queries: a topic (10 concepts, ~5,000 images) owns 40 head and 5,000 tail queries;
//!   `tail_share` and `links_per_image` were tuned so the realised train/test query counts
//!   follow J-T1's proportions (139,944 train and 41,877 test queries for 2,292,259 / 402,164
//!   images: 6.1 % and 10.4 % of the images; the stand-in gives 6.3 % and 10.8 % at 100K
//!   images, and 141,583 train / 42,484 test / 161,600 distinct queries at the J-T1 size)
//!   and about one clicked query per 16–18 images (paper: ~150K queries for 2.7M images) — the paper's low test/train query ratio (0.30) under a random image split
//!   implies that most queries hold a single image, which the tail queries provide.
//! * The spec's "about 100" queries per image (§11 item 19) is not copied: with ~1 query per
//!   18 images it would mean ~1800 images per query; the stand-in makes ~1.4 distinct query
//!   links per image.
//! * Partial labelling (few head queries per image) and the style nuisance keep plain
//!   dot-product precision@1 on the test part low (2.2 % at 100K images, 1.4 % at the J-T1
//!   size, against chance 0.5 % and 0.02 %; the paper reports 1.5 % for the *learned* OASIS
//!   ranker, J-F3A), while the latent-concept oracle
//!   ([`RetrievalDiagnostics::oracle_precision_at_1`], 13 %) shows the head-room a learned
//!   ranker has. An earlier calibration (topics of 20 concepts, 80 head queries, Zipf 0.7)
//!   made the queries of a topic's concepts nearly interchangeable: the oracle was only ~2×
//!   chance, OASIS's validation mAP never rose and early stopping (J-F4) chose ~0 steps.
//!   `examples/web_calibrate.rs` prints these diagnostics for any parameters.
//!
//! Memory: the feature matrix dominates (`nnz × 16` bytes, about 3 GB at 2.7M images with 70
//! non-zeros); the compact per-chunk counts (8 bytes per non-zero) coexist with it while the
//! CSR matrix is assembled. Measured on 2 cores (release): 100K images in 0.8 s (peak RSS
//! 0.14 GB), 1M in 8 s (1.4 GB), the J-T1 size 2,694,423 in 27 s (3.7 GB).

pub mod provider;

use crate::DataError;
use dyad_core::{LabeledSet, Partition, derive_seed, seeded};
use rand::Rng as _;
use rand::distr::Distribution;
use rand_distr::Poisson;
use serde::{Deserialize, Serialize};
use sprs::CsMat;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Total images of the paper's web data (J-T1: 2,292,259 train + 402,164 test).
pub const PAPER_IMAGES: usize = 2_694_423;
/// Test images of the paper's web data (J-T1).
pub const PAPER_TEST_IMAGES: usize = 402_164;
/// Training queries of the paper's web data (J-T1).
pub const PAPER_TRAIN_QUERIES: usize = 139_944;
/// Test queries of the paper's web data (J-T1).
pub const PAPER_TEST_QUERIES: usize = 41_877;

/// Largest click count a single link can carry.
const MAX_CLICKS: u32 = 1_000_000;
/// Images per generation work unit.
const CHUNK: usize = 8192;

/// Parameters of the web stand-in generator (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebStandin {
    /// Total number of images `N` (train + test). Runtime ladder: 600, 10,000, 100,000 and the
    /// paper's 2,694,423.
    #[serde(default = "d_images")]
    pub images: usize,
    /// Fraction of test images (paper: 402,164 / 2,694,423 ≈ 0.149).
    #[serde(default = "d_test_fraction")]
    pub test_fraction: f64,
    /// Vocabulary size (paper: 10,000 visual words).
    #[serde(default = "d_dim")]
    pub dim: usize,
    /// One latent concept per this many images.
    #[serde(default = "d_images_per_concept")]
    pub images_per_concept: usize,
    /// Minimum number of latent concepts (small sets).
    #[serde(default = "d_min_concepts")]
    pub min_concepts: usize,
    /// Probabilities that an image holds 1, 2 or 3 concepts.
    #[serde(default = "d_concepts_per_image")]
    pub concepts_per_image: [f64; 3],
    /// Distinct visual words owned by each concept.
    #[serde(default = "d_concept_words")]
    pub concept_words: usize,
    /// Zipf exponent of the word weights of concepts and styles.
    #[serde(default = "d_word_zipf")]
    pub word_zipf: f64,
    /// Number of nuisance styles shared across concepts (0 = none).
    #[serde(default = "d_styles")]
    pub styles: usize,
    /// Distinct visual words owned by each style.
    #[serde(default = "d_style_words")]
    pub style_words: usize,
    /// Zipf exponent of the shared background over the vocabulary.
    #[serde(default = "d_background_zipf")]
    pub background_zipf: f64,
    /// Mean number of blocks (visual-word draws) per image.
    #[serde(default = "d_mean_blocks")]
    pub mean_blocks: f64,
    /// Probability that a block's word comes from the image's concepts.
    #[serde(default = "d_concept_share")]
    pub concept_share: f64,
    /// Probability that a block's word comes from the image's style.
    #[serde(default = "d_style_share")]
    pub style_share: f64,
    /// Latent concepts per query topic (consecutive concept ids form a topic).
    #[serde(default = "d_concepts_per_topic")]
    pub concepts_per_topic: usize,
    /// Head (popular) text queries per topic.
    #[serde(default = "d_head_queries")]
    pub head_queries: usize,
    /// Zipf exponent of head-query popularity; each concept ranks its topic's head queries in
    /// its own random order.
    #[serde(default = "d_query_zipf")]
    pub query_zipf: f64,
    /// Tail (rare) text queries per topic, chosen uniformly by tail links.
    #[serde(default = "d_tail_queries")]
    pub tail_queries: usize,
    /// Probability that a link goes to a tail query rather than a head query.
    #[serde(default = "d_tail_share")]
    pub tail_share: f64,
    /// Mean number of query links per image (`1 + Poisson(links_per_image - 1)`).
    #[serde(default = "d_links_per_image")]
    pub links_per_image: f64,
    /// Tail index of the click counts: `P(count ≥ c) = c^-click_tail`.
    #[serde(default = "d_click_tail")]
    pub click_tail: f64,
    /// Document frequencies come from the training images among the first `idf_reference`
    /// images of the stream (0 = from the generated set's own training part).
    #[serde(default = "d_idf_reference")]
    pub idf_reference: usize,
    /// Generation seed.
    #[serde(default)]
    pub seed: u64,
}

fn d_images() -> usize {
    10_000
}
fn d_test_fraction() -> f64 {
    PAPER_TEST_IMAGES as f64 / PAPER_IMAGES as f64
}
fn d_dim() -> usize {
    10_000
}
fn d_images_per_concept() -> usize {
    500
}
fn d_min_concepts() -> usize {
    20
}
fn d_concepts_per_image() -> [f64; 3] {
    [0.6, 0.3, 0.1]
}
fn d_concept_words() -> usize {
    300
}
fn d_word_zipf() -> f64 {
    1.0
}
fn d_styles() -> usize {
    50
}
fn d_style_words() -> usize {
    300
}
fn d_background_zipf() -> f64 {
    1.0
}
fn d_mean_blocks() -> f64 {
    92.0
}
fn d_concept_share() -> f64 {
    0.15
}
fn d_style_share() -> f64 {
    0.4
}
fn d_concepts_per_topic() -> usize {
    10
}
fn d_head_queries() -> usize {
    40
}
fn d_query_zipf() -> f64 {
    1.0
}
fn d_tail_queries() -> usize {
    5_000
}
fn d_tail_share() -> f64 {
    0.039
}
fn d_links_per_image() -> f64 {
    1.4
}
fn d_click_tail() -> f64 {
    1.5
}
fn d_idf_reference() -> usize {
    100_000
}

impl Default for WebStandin {
    fn default() -> Self {
        Self::new(d_images(), 0)
    }
}

/// The generated web stand-in.
#[derive(Debug, Clone, PartialEq)]
pub struct WebData {
    /// Rows = images (tf-idf, L2-normalised, `dim` columns); primary label = the image's
    /// heaviest concept; `relevance` = its query ids; `partition` = official train/test.
    pub set: LabeledSet,
    /// Latent concepts of each image, heaviest first.
    pub concepts: Vec<Vec<u32>>,
    /// Mixing weights of those concepts (sum 1, decreasing): the share of the image's concept
    /// blocks and query links each concept draws.
    pub concept_weights: Vec<Vec<f64>>,
    /// Queries available to each concept (`0..stats.concepts`): the queries of its topic that
    /// hold at least one click (from any image of the topic), ascending.
    pub queries_of_concept: Vec<Vec<u32>>,
    /// `R_QI`: per image, `(query, click count)` pairs sorted by query; counts are ≥ 1.
    pub clicks: Vec<Vec<(u32, u32)>>,
    /// Realised statistics.
    pub stats: WebStats,
}

/// Realised statistics of a generated set (J-T1-like counts per part, and more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebStats {
    pub images: usize,
    pub train_images: usize,
    pub test_images: usize,
    /// Concepts available to the set (`C(N)`).
    pub concepts: usize,
    /// Concepts held by at least one image.
    pub active_concepts: usize,
    /// Query topics (`ceil(concepts / concepts_per_topic)`).
    pub topics: usize,
    /// Potential query ids (`topics × (head_queries + tail_queries)`).
    pub potential_queries: usize,
    /// Queries with at least one click.
    pub queries: usize,
    /// Queries with a click on a training image (J-T1 "Training / Number of Queries").
    pub train_queries: usize,
    /// Queries with a click on a test image (J-T1 "Test / Number of Queries").
    pub test_queries: usize,
    /// Queries with a click on exactly one image.
    pub single_image_queries: usize,
    /// Mean number of (distinct) queries per image.
    pub mean_queries_per_image: f64,
    /// Mean number of images per query (over queries with a click).
    pub mean_images_per_query: f64,
    pub max_images_per_query: usize,
    pub mean_concepts_per_image: f64,
    /// Mean stored non-zeros per row.
    pub mean_nnz: f64,
    /// Mean `R_QI(q, p)` over the (query, image) links.
    pub mean_clicks: f64,
    pub max_clicks: u32,
    /// Fraction of unordered pairs of distinct test images that share a query (θ = 0): the
    /// chance level of test-part precision.
    pub test_relevant_pair_fraction: f64,
}

/// Word weights of a concept, a style or the background: sampled by inverse CDF.
#[derive(Debug, Clone)]
struct Table {
    words: Vec<u32>,
    /// Cumulative weights, normalised to end at 1.
    cum: Vec<f64>,
}

impl Table {
    fn zipf(words: Vec<u32>, exponent: f64) -> Self {
        let cum = zipf_cdf(words.len(), exponent);
        Self { words, cum }
    }

    fn sample(&self, u: f64) -> u32 {
        let i = self
            .cum
            .partition_point(|&c| c <= u)
            .min(self.words.len() - 1);
        self.words[i]
    }
}

/// Cumulative Zipf weights `(r + 1)^-s`, normalised to end at 1.
fn zipf_cdf(n: usize, s: f64) -> Vec<f64> {
    let mut total = 0.0;
    let mut cum: Vec<f64> = (0..n)
        .map(|r| {
            total += ((r + 1) as f64).powf(-s);
            total
        })
        .collect();
    cum.iter_mut().for_each(|c| *c /= total);
    cum
}

/// The `N`-independent parts of the model, for the concepts an image stream needs.
struct Model {
    concepts: Vec<Table>,
    head_order: Vec<Vec<u32>>,
    styles: Vec<Table>,
    background: Table,
    query_cum: Vec<f64>,
    kind_cum: [f64; 3],
    blocks: Poisson<f64>,
    /// Links beyond the first (none when `links_per_image` is 1).
    extra_links: Option<Poisson<f64>>,
}

/// One generated image before tf-idf.
struct Draw {
    concepts: Vec<u32>,
    weights: Vec<f64>,
    /// Sorted distinct words with their counts.
    words: Vec<(u32, u32)>,
    clicks: Vec<(u32, u32)>,
}

/// Generated images of one chunk, in compact form.
#[derive(Default)]
struct Chunk {
    /// Row boundaries into `words` (length rows + 1).
    ptr: Vec<usize>,
    words: Vec<(u32, u32)>,
    concepts: Vec<Vec<u32>>,
    weights: Vec<Vec<f64>>,
    clicks: Vec<Vec<(u32, u32)>>,
}

impl WebStandin {
    /// The default generator with `images` images and seed `seed`.
    pub fn new(images: usize, seed: u64) -> Self {
        Self {
            images,
            test_fraction: d_test_fraction(),
            dim: d_dim(),
            images_per_concept: d_images_per_concept(),
            min_concepts: d_min_concepts(),
            concepts_per_image: d_concepts_per_image(),
            concept_words: d_concept_words(),
            word_zipf: d_word_zipf(),
            styles: d_styles(),
            style_words: d_style_words(),
            background_zipf: d_background_zipf(),
            mean_blocks: d_mean_blocks(),
            concept_share: d_concept_share(),
            style_share: d_style_share(),
            concepts_per_topic: d_concepts_per_topic(),
            head_queries: d_head_queries(),
            query_zipf: d_query_zipf(),
            tail_queries: d_tail_queries(),
            tail_share: d_tail_share(),
            links_per_image: d_links_per_image(),
            click_tail: d_click_tail(),
            idf_reference: d_idf_reference(),
            seed,
        }
    }

    fn validate(&self) -> Result<(), DataError> {
        let bad = |m: String| Err(DataError::Param(format!("web stand-in: {m}")));
        let unit = |x: f64| (0.0..=1.0).contains(&x);
        if !(2..=20_000_000).contains(&self.images) {
            return bad(format!("images must be in 2..=2e7, got {}", self.images));
        }
        if !(0.0..1.0).contains(&self.test_fraction) {
            return bad(format!(
                "test_fraction must be in [0, 1), got {}",
                self.test_fraction
            ));
        }
        if !(2..=u32::MAX as usize).contains(&self.dim) {
            return bad(format!("dim must be >= 2, got {}", self.dim));
        }
        if self.images_per_concept == 0 || self.min_concepts == 0 {
            return bad("images_per_concept and min_concepts must be >= 1".into());
        }
        let p = self.concepts_per_image;
        if p.iter().any(|&x| !unit(x)) || (p.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
            return bad(format!(
                "concepts_per_image must be probabilities summing to 1, got {p:?}"
            ));
        }
        if self.concept_words == 0 || self.concept_words > self.dim {
            return bad(format!(
                "concept_words must be in 1..=dim, got {}",
                self.concept_words
            ));
        }
        if self.styles > 0 && (self.style_words == 0 || self.style_words > self.dim) {
            return bad(format!(
                "style_words must be in 1..=dim, got {}",
                self.style_words
            ));
        }
        for (name, s) in [
            ("word_zipf", self.word_zipf),
            ("background_zipf", self.background_zipf),
            ("query_zipf", self.query_zipf),
        ] {
            if !(0.0..=5.0).contains(&s) {
                return bad(format!("{name} must be in [0, 5], got {s}"));
            }
        }
        if !(self.mean_blocks >= 10.0 && self.mean_blocks <= 1e5) {
            return bad(format!(
                "mean_blocks must be in [10, 1e5], got {}",
                self.mean_blocks
            ));
        }
        let (c, s) = (self.concept_share, self.style_share);
        if !unit(c) || !unit(s) || c + s > 1.0 + 1e-12 || (self.styles == 0 && s > 0.0) {
            return bad(format!(
                "concept_share and style_share must be in [0, 1] with sum <= 1 (style_share 0 \
                 without styles), got {c} and {s}"
            ));
        }
        if self.concepts_per_topic == 0 || self.head_queries == 0 {
            return bad("concepts_per_topic and head_queries must be >= 1".into());
        }
        let max_topics = self
            .concepts_for(self.images.max(self.idf_reference))
            .div_ceil(self.concepts_per_topic);
        if max_topics as u128 * self.queries_per_topic() as u128 > u32::MAX as u128 {
            return bad("topics x (head_queries + tail_queries) must fit in u32".into());
        }
        if !unit(self.tail_share) || (self.tail_queries == 0 && self.tail_share > 0.0) {
            return bad(format!(
                "tail_share must be in [0, 1] (0 without tail queries), got {}",
                self.tail_share
            ));
        }
        if !(self.links_per_image >= 1.0 && self.links_per_image <= 1000.0) {
            return bad(format!(
                "links_per_image must be in [1, 1000], got {}",
                self.links_per_image
            ));
        }
        if !(self.click_tail > 0.0 && self.click_tail <= 100.0) {
            return bad(format!(
                "click_tail must be in (0, 100], got {}",
                self.click_tail
            ));
        }
        if self.idf_reference > 20_000_000 {
            return bad(format!(
                "idf_reference must be at most 2e7, got {}",
                self.idf_reference
            ));
        }
        Ok(())
    }

    /// `C(n)`: the number of concepts available to the first `n` images.
    pub fn concepts_for(&self, n: usize) -> usize {
        self.min_concepts.max(n.div_ceil(self.images_per_concept))
    }

    /// Number of test images among the first `n` images.
    pub fn test_count(&self, n: usize) -> usize {
        (n as f64 * self.test_fraction + 1e-9).floor() as usize
    }

    /// Official part of image `i` (independent of `images`).
    pub fn partition_of(&self, i: usize) -> Partition {
        if self.test_count(i + 1) > self.test_count(i) {
            Partition::Test
        } else {
            Partition::Train
        }
    }

    fn queries_per_topic(&self) -> usize {
        self.head_queries + self.tail_queries
    }

    /// Query topic of a concept.
    pub fn topic_of_concept(&self, k: u32) -> u32 {
        (k as usize / self.concepts_per_topic) as u32
    }

    /// Query topic of a query id.
    pub fn topic_of_query(&self, q: u32) -> u32 {
        (q as usize / self.queries_per_topic()) as u32
    }

    /// Whether query `q` is a head (popular) query of its topic.
    pub fn is_head_query(&self, q: u32) -> bool {
        (q as usize % self.queries_per_topic()) < self.head_queries
    }

    fn model(&self, n_concepts: usize) -> Model {
        let d = self.dim;
        let words = |tag: String, k: usize| -> Vec<u32> {
            let mut rng = seeded(derive_seed(self.seed, &tag));
            rand::seq::index::sample(&mut rng, d, k)
                .into_iter()
                .map(|w| w as u32)
                .collect()
        };
        let concepts = (0..n_concepts)
            .map(|k| {
                Table::zipf(
                    words(format!("web/concept/{k}"), self.concept_words),
                    self.word_zipf,
                )
            })
            .collect();
        // Each concept's own popularity order of its topic's head queries.
        let head_order = (0..n_concepts)
            .map(|k| {
                let mut rng = seeded(derive_seed(self.seed, &format!("web/concept-queries/{k}")));
                rand::seq::index::sample(&mut rng, self.head_queries, self.head_queries)
                    .into_iter()
                    .map(|r| r as u32)
                    .collect()
            })
            .collect();
        let styles = (0..self.styles)
            .map(|s| {
                Table::zipf(
                    words(format!("web/style/{s}"), self.style_words),
                    self.word_zipf,
                )
            })
            .collect();
        let background = Table::zipf(words("web/background".into(), d), self.background_zipf);
        let p = self.concepts_per_image;
        Model {
            concepts,
            head_order,
            styles,
            background,
            query_cum: zipf_cdf(self.head_queries, self.query_zipf),
            kind_cum: [p[0], p[0] + p[1], 1.0],
            blocks: Poisson::new(self.mean_blocks).expect("validated mean"),
            extra_links: (self.links_per_image > 1.0)
                .then(|| Poisson::new(self.links_per_image - 1.0).expect("validated mean")),
        }
    }

    /// Image `i` of the stream.
    fn draw(&self, model: &Model, i: usize) -> Draw {
        let mut rng = seeded(derive_seed(self.seed, &format!("web/image/{i}")));
        let available = self.concepts_for(i + 1);
        // Concepts and their mixing weights (flat Dirichlet), heaviest first.
        let u: f64 = rng.random();
        let k = model.kind_cum.iter().position(|&c| u < c).unwrap_or(2) + 1;
        let k = k.min(available);
        let picked = rand::seq::index::sample(&mut rng, available, k);
        let mut mix: Vec<(f64, u32)> = picked
            .into_iter()
            .map(|c| (-(1.0 - rng.random::<f64>()).ln(), c as u32))
            .collect();
        mix.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let total: f64 = mix.iter().map(|m| m.0).sum();
        let mut acc = 0.0;
        let mix_cum: Vec<f64> = mix
            .iter()
            .map(|m| {
                acc += m.0 / total;
                acc
            })
            .collect();
        let pick_concept = |u: f64| mix_cum.partition_point(|&c| c <= u).min(k - 1);
        let style = (!model.styles.is_empty())
            .then(|| &model.styles[rng.random_range(0..model.styles.len())]);

        // Visual words.
        let blocks = (model.blocks.sample(&mut rng) as usize).max(10);
        let (cs, ss) = (self.concept_share, self.concept_share + self.style_share);
        let mut raw: Vec<u32> = Vec::with_capacity(blocks);
        for _ in 0..blocks {
            let u: f64 = rng.random();
            let table = if u < cs {
                &model.concepts[mix[pick_concept(rng.random())].1 as usize]
            } else if u < ss {
                style.expect("style_share > 0 implies styles")
            } else {
                &model.background
            };
            raw.push(table.sample(rng.random()));
        }
        raw.sort_unstable();
        let mut words: Vec<(u32, u32)> = Vec::with_capacity(raw.len());
        for w in raw {
            match words.last_mut() {
                Some((lw, c)) if *lw == w => *c += 1,
                _ => words.push((w, 1)),
            }
        }

        // Query links.
        let qpt = self.queries_per_topic();
        let extra = model.extra_links.map_or(0, |p| p.sample(&mut rng) as usize);
        let mut clicks: Vec<(u32, u32)> = Vec::with_capacity(1 + extra);
        for _ in 0..1 + extra {
            let concept = mix[pick_concept(rng.random())].1 as usize;
            let base = concept / self.concepts_per_topic * qpt;
            let q = if rng.random::<f64>() < self.tail_share {
                base + self.head_queries + rng.random_range(0..self.tail_queries)
            } else {
                let u: f64 = rng.random();
                let r = model
                    .query_cum
                    .partition_point(|&c| c <= u)
                    .min(self.head_queries - 1);
                base + model.head_order[concept][r] as usize
            };
            let u = 1.0 - rng.random::<f64>(); // (0, 1]
            let count = u
                .powf(-1.0 / self.click_tail)
                .floor()
                .min(MAX_CLICKS as f64) as u32;
            clicks.push((q as u32, count.max(1)));
        }
        clicks.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(clicks.len());
        for (q, c) in clicks {
            match merged.last_mut() {
                Some((lq, lc)) if *lq == q => *lc = lc.saturating_add(c),
                _ => merged.push((q, c)),
            }
        }
        Draw {
            concepts: mix.iter().map(|m| m.1).collect(),
            weights: mix.iter().map(|m| m.0 / total).collect(),
            words,
            clicks: merged,
        }
    }

    /// Generate the data set. Deterministic in the parameters (not in the thread count).
    pub fn generate(&self) -> Result<WebData, DataError> {
        self.validate()?;
        let n = self.images;
        let reference = self.idf_reference;
        let model = self.model(self.concepts_for(n.max(reference)));

        // The images, in chunks, on all cores.
        let chunks: Vec<Chunk> = par_chunks(n, |range| {
            let mut c = Chunk {
                ptr: vec![0],
                ..Chunk::default()
            };
            for i in range {
                let d = self.draw(&model, i);
                c.words.extend_from_slice(&d.words);
                c.ptr.push(c.words.len());
                c.concepts.push(d.concepts);
                c.weights.push(d.weights);
                c.clicks.push(d.clicks);
            }
            c
        });

        // Document frequencies over the training images of the reference (or of the set).
        let (mut df, mut n_ref) = (vec![0u64; self.dim], 0u64);
        let own = if reference == 0 { n } else { reference.min(n) };
        let mut base = 0;
        for c in &chunks {
            for r in 0..c.concepts.len() {
                let i = base + r;
                if i < own && self.partition_of(i) == Partition::Train {
                    n_ref += 1;
                    for &(w, _) in &c.words[c.ptr[r]..c.ptr[r + 1]] {
                        df[w as usize] += 1;
                    }
                }
            }
            base += c.concepts.len();
        }
        if reference > n {
            let extra: Vec<(Vec<u64>, u64)> = par_chunks(reference - n, |range| {
                let mut df = vec![0u64; self.dim];
                let mut m = 0;
                for i in range.map(|j| j + n) {
                    if self.partition_of(i) == Partition::Train {
                        m += 1;
                        for (w, _) in self.draw(&model, i).words {
                            df[w as usize] += 1;
                        }
                    }
                }
                (df, m)
            });
            for (e, m) in extra {
                n_ref += m;
                df.iter_mut().zip(e).for_each(|(a, b)| *a += b);
            }
        }
        let idf: Vec<f64> = df
            .iter()
            .map(|&f| ((n_ref as f64 + 1.0) / (f as f64 + 1.0)).ln())
            .collect();

        // Assemble the tf-idf rows, dropping each chunk's counts once copied.
        let total: usize = chunks.iter().map(|c| c.words.len()).sum();
        let mut indptr = Vec::with_capacity(n + 1);
        indptr.push(0);
        let mut indices: Vec<usize> = Vec::with_capacity(total);
        let mut data: Vec<f64> = Vec::with_capacity(total);
        let mut concepts = Vec::with_capacity(n);
        let mut concept_weights = Vec::with_capacity(n);
        let mut clicks = Vec::with_capacity(n);
        for c in chunks {
            for r in 0..c.concepts.len() {
                let start = data.len();
                for &(w, f) in &c.words[c.ptr[r]..c.ptr[r + 1]] {
                    let v = f as f64 * idf[w as usize];
                    if v > 0.0 {
                        indices.push(w as usize);
                        data.push(v);
                    }
                }
                let norm = data[start..].iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm > 0.0 {
                    data[start..].iter_mut().for_each(|v| *v /= norm);
                }
                indptr.push(indices.len());
            }
            concepts.extend(c.concepts);
            concept_weights.extend(c.weights);
            clicks.extend(c.clicks);
        }
        let x = CsMat::new((n, self.dim), indptr, indices, data);

        let n_concepts = self.concepts_for(n);
        let labels: Vec<u32> = concepts.iter().map(|c: &Vec<u32>| c[0]).collect();
        let names = (0..n_concepts).map(|k| format!("concept-{k:05}")).collect();
        let partition: Vec<Partition> = (0..n).map(|i| self.partition_of(i)).collect();
        let relevance: Vec<Vec<u32>> = clicks
            .iter()
            .map(|c: &Vec<(u32, u32)>| c.iter().map(|&(q, _)| q).collect())
            .collect();
        let set = LabeledSet::new(x, labels, names, Some(partition))
            .and_then(|s| s.with_relevance(relevance))
            .map_err(|e| DataError::Param(format!("web stand-in: {e}")))?;

        let n_topics = n_concepts.div_ceil(self.concepts_per_topic);
        let potential = n_topics * self.queries_per_topic();
        let mut queries_of_topic = vec![Vec::new(); n_topics];
        let mut members = vec![0usize; potential];
        for c in &clicks {
            for &(q, _) in c {
                members[q as usize] += 1;
            }
        }
        for (q, &m) in members.iter().enumerate() {
            if m > 0 {
                queries_of_topic[self.topic_of_query(q as u32) as usize].push(q as u32);
            }
        }
        let queries_of_concept = (0..n_concepts as u32)
            .map(|k| queries_of_topic[self.topic_of_concept(k) as usize].clone())
            .collect();
        let stats = stats(
            &set,
            &concepts,
            &clicks,
            n_concepts,
            potential,
            self.queries_per_topic(),
            &members,
        );
        Ok(WebData {
            set,
            concepts,
            concept_weights,
            queries_of_concept,
            clicks,
            stats,
        })
    }
}

/// Run `f` over consecutive chunks of `0..n` on all available cores; results in chunk order.
fn par_chunks<T: Send>(n: usize, f: impl Fn(std::ops::Range<usize>) -> T + Sync) -> Vec<T> {
    let n_chunks = n.div_ceil(CHUNK);
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .clamp(1, 16)
        .min(n_chunks.max(1));
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..n_chunks).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= n_chunks {
                        break;
                    }
                    let r = f(c * CHUNK..((c + 1) * CHUNK).min(n));
                    out.lock().expect("no panics while locked")[c] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .expect("no panics while locked")
        .into_iter()
        .map(|r| r.expect("every chunk ran"))
        .collect()
}

fn stats(
    set: &LabeledSet,
    concepts: &[Vec<u32>],
    clicks: &[Vec<(u32, u32)>],
    n_concepts: usize,
    potential: usize,
    queries_per_topic: usize,
    members: &[usize],
) -> WebStats {
    let n = set.n();
    let part = set.partition.as_ref().expect("set has a partition");
    let test_images = part.iter().filter(|&&p| p == Partition::Test).count();
    let (mut in_train, mut in_test) = (vec![false; potential], vec![false; potential]);
    let (mut links, mut click_sum, mut max_clicks) = (0usize, 0u64, 0u32);
    let mut active = vec![false; n_concepts];
    for i in 0..n {
        for &c in &concepts[i] {
            active[c as usize] = true;
        }
        for &(q, c) in &clicks[i] {
            match part[i] {
                Partition::Train => in_train[q as usize] = true,
                Partition::Test => in_test[q as usize] = true,
            }
            links += 1;
            click_sum += u64::from(c);
            max_clicks = max_clicks.max(c);
        }
    }
    let queries = members.iter().filter(|&&m| m > 0).count();
    // Test pairs sharing a query: per test image, the distinct other test images reached
    // through its queries.
    let test_rows: Vec<usize> = (0..n).filter(|&i| part[i] == Partition::Test).collect();
    let mut test_members: Vec<Vec<u32>> = vec![Vec::new(); potential];
    for (t, &i) in test_rows.iter().enumerate() {
        for &(q, _) in &clicks[i] {
            test_members[q as usize].push(t as u32);
        }
    }
    let mut stamp = vec![usize::MAX; test_rows.len()];
    let mut related = 0u64;
    for (t, &i) in test_rows.iter().enumerate() {
        for &(q, _) in &clicks[i] {
            for &o in &test_members[q as usize] {
                let o = o as usize;
                if o != t && stamp[o] != t {
                    stamp[o] = t;
                    related += 1;
                }
            }
        }
    }
    let nt = test_rows.len() as f64;
    let pairs = nt * (nt - 1.0);
    WebStats {
        images: n,
        train_images: n - test_images,
        test_images,
        concepts: n_concepts,
        topics: potential / queries_per_topic,
        active_concepts: active.iter().filter(|&&a| a).count(),
        potential_queries: potential,
        queries,
        train_queries: in_train.iter().filter(|&&a| a).count(),
        test_queries: in_test.iter().filter(|&&a| a).count(),
        single_image_queries: members.iter().filter(|&&m| m == 1).count(),
        mean_queries_per_image: links as f64 / n as f64,
        mean_images_per_query: links as f64 / queries.max(1) as f64,
        max_images_per_query: members.iter().copied().max().unwrap_or(0),
        mean_concepts_per_image: concepts.iter().map(Vec::len).sum::<usize>() as f64 / n as f64,
        mean_nnz: set.x.nnz() as f64 / n as f64,
        mean_clicks: click_sum as f64 / links.max(1) as f64,
        max_clicks,
        test_relevant_pair_fraction: if pairs > 0.0 {
            related as f64 / pairs
        } else {
            0.0
        },
    }
}

impl WebData {
    /// Rows of the official training part, ascending.
    pub fn train_rows(&self) -> Vec<usize> {
        self.rows(Partition::Train)
    }

    /// Rows of the official test part, ascending.
    pub fn test_rows(&self) -> Vec<usize> {
        self.rows(Partition::Test)
    }

    fn rows(&self, part: Partition) -> Vec<usize> {
        let p = self
            .set
            .partition
            .as_ref()
            .expect("web data has a partition");
        (0..p.len()).filter(|&i| p[i] == part).collect()
    }

    /// Overall relevance of image `i`: the sum of `R_QI(q, i)` over its queries (§7.3).
    pub fn overall_relevance(&self, i: usize) -> u64 {
        self.clicks[i].iter().map(|&(_, c)| u64::from(c)).sum()
    }

    /// The §6.3 normalised co-query probability restricted to `rows` (e.g. the training part):
    /// `R_QI` is read only on those rows, so `Pr` is the \[J\] formula on that sub-collection.
    pub fn co_query(&self, rows: &[usize]) -> CoQuery {
        let potential = self.stats.potential_queries;
        let mut members: Vec<Vec<(u32, f64)>> = vec![Vec::new(); potential];
        let mut query_total = vec![0.0; potential];
        let mut total = 0.0;
        let mut in_rows = vec![false; self.set.n()];
        for &i in rows {
            in_rows[i] = true;
            for &(q, c) in &self.clicks[i] {
                members[q as usize].push((i as u32, f64::from(c)));
                query_total[q as usize] += f64::from(c);
                total += f64::from(c);
            }
        }
        CoQuery {
            members,
            query_total,
            total,
            in_rows,
        }
    }
}

/// The \[J\] §5.2.1 image–image relevance, computed on the fly per image (the spec: never build
/// `R_II` densely): `Pr(p1, p2) = Σ_q Pr(p1|q) Pr(p2|q) Pr(q) = Σ_q R(q,p1) R(q,p2) / (R_q Z)`
/// with `R_q = Σ_p R(q, p)` and `Z = Σ_{q,p} R(q, p)`; `R_II = [Pr]_θ` keeps values above θ.
#[derive(Debug, Clone)]
pub struct CoQuery {
    members: Vec<Vec<(u32, f64)>>,
    query_total: Vec<f64>,
    total: f64,
    in_rows: Vec<bool>,
}

impl CoQuery {
    /// `Pr(p_i, p_j) > 0` for every other image `j` of the rows, sorted by `j`. Empty when `i`
    /// is not one of the rows.
    pub fn probabilities(&self, data: &WebData, i: usize) -> Vec<(u32, f64)> {
        if !self.in_rows[i] {
            return Vec::new();
        }
        let mut out: Vec<(u32, f64)> = Vec::new();
        for &(q, c) in &data.clicks[i] {
            let q = q as usize;
            let scale = c as f64 / (self.query_total[q] * self.total);
            for &(j, cj) in &self.members[q] {
                if j as usize != i {
                    out.push((j, scale * cj));
                }
            }
        }
        out.sort_unstable_by_key(|p| p.0);
        let mut merged: Vec<(u32, f64)> = Vec::with_capacity(out.len());
        for (j, p) in out {
            match merged.last_mut() {
                Some((lj, lp)) if *lj == j => *lp += p,
                _ => merged.push((j, p)),
            }
        }
        merged
    }

    /// The θ keeping the top `fraction` of the related pairs (`Pr > 0`) of the rows `sample`
    /// (ordered pairs `(i, j)`, `i` in `sample`): the value of the `⌈fraction · pairs⌉ + 1`-th
    /// largest probability, so that `Pr > θ` keeps about `fraction` of them (exactly, without
    /// ties). 0 when nothing would be cut.
    pub fn theta_for_top_fraction(&self, data: &WebData, sample: &[usize], fraction: f64) -> f64 {
        let mut all: Vec<f64> = sample
            .iter()
            .flat_map(|&i| self.probabilities(data, i).into_iter().map(|p| p.1))
            .collect();
        let keep = (fraction.clamp(0.0, 1.0) * all.len() as f64).ceil() as usize;
        if keep >= all.len() {
            return 0.0;
        }
        all.sort_unstable_by(|a, b| b.total_cmp(a));
        all[keep]
    }

    /// Images `j` with `R_II(p_i, p_j) = [Pr(p_i, p_j)]_θ > 0`, ascending.
    pub fn relevant_above(&self, data: &WebData, i: usize, theta: f64) -> Vec<u32> {
        self.probabilities(data, i)
            .into_iter()
            .filter(|p| p.1 > theta)
            .map(|p| p.0)
            .collect()
    }
}

/// Retrieval diagnostics on the test part (θ = 0 relevance, the query excluded, every other
/// test image a candidate, ties by ascending index like `dyad_core::metrics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalDiagnostics {
    /// Test images used as queries (those with a relevant test image; subsampled evenly).
    pub queries: usize,
    /// Precision@k, k = 1..=k_max, of plain dot-product ranking (the identity `W`, OASIS's
    /// starting point and the "Euclidean" baseline on unit-norm rows).
    pub dot_precision: Vec<f64>,
    /// Expected precision@1 of an oracle that knows the latent concepts: the candidate
    /// sharing the most concepts with the query (uniformly among ties) — an upper bound for a
    /// ranker that recovers the concepts from the pixels but, like any ranker, not the queries.
    pub oracle_precision_at_1: f64,
    /// Mean fraction of relevant candidates (random ranking).
    pub chance: f64,
}

/// Compute [`RetrievalDiagnostics`] with at most `max_queries` queries.
pub fn retrieval_diagnostics(
    data: &WebData,
    k_max: usize,
    max_queries: usize,
) -> RetrievalDiagnostics {
    let rows = data.test_rows();
    let nt = rows.len();
    let set = &data.set;
    // Inverted indices over the test part: words, queries, concepts (local row ids).
    let mut postings: Vec<Vec<(u32, f64)>> = vec![Vec::new(); set.dim()];
    let mut query_members: Vec<Vec<u32>> = vec![Vec::new(); data.stats.potential_queries];
    let mut concept_members: Vec<Vec<(u32, f64)>> = vec![Vec::new(); data.stats.concepts];
    for (t, &i) in rows.iter().enumerate() {
        let row = set.x.outer_view(i).expect("row");
        for (&w, &v) in row.indices().iter().zip(row.data()) {
            postings[w].push((t as u32, v));
        }
        for &(q, _) in &data.clicks[i] {
            query_members[q as usize].push(t as u32);
        }
        for (&c, &w) in data.concepts[i].iter().zip(&data.concept_weights[i]) {
            concept_members[c as usize].push((t as u32, w));
        }
    }
    let mut relevant = vec![usize::MAX; nt];
    let mut n_rel = vec![0usize; nt];
    for (t, &i) in rows.iter().enumerate() {
        for &(q, _) in &data.clicks[i] {
            for &o in &query_members[q as usize] {
                if o as usize != t && relevant[o as usize] != t {
                    relevant[o as usize] = t;
                    n_rel[t] += 1;
                }
            }
        }
    }
    let usable: Vec<usize> = (0..nt).filter(|&t| n_rel[t] > 0).collect();
    let take = usable.len().min(max_queries.max(1));
    let queries: Vec<usize> = (0..take).map(|j| usable[j * usable.len() / take]).collect();

    let mut precision = vec![0.0; k_max];
    let (mut oracle, mut chance) = (0.0, 0.0);
    let mut score = vec![0.0f64; nt];
    let mut overlap = vec![0.0f64; nt];
    let mut touched: Vec<usize> = Vec::new();
    let mut is_rel = vec![usize::MAX; nt];
    for &t in &queries {
        let i = rows[t];
        for &(q, _) in &data.clicks[i] {
            for &o in &query_members[q as usize] {
                is_rel[o as usize] = t;
            }
        }
        let rel = |o: usize| o != t && is_rel[o] == t;
        chance += n_rel[t] as f64 / (nt - 1) as f64;

        // Dot-product ranking: touched candidates by score, then zero scores by index.
        let row = set.x.outer_view(i).expect("row");
        for (&w, &v) in row.indices().iter().zip(row.data()) {
            for &(o, vo) in &postings[w] {
                let o = o as usize;
                if score[o] == 0.0 {
                    touched.push(o);
                }
                score[o] += v * vo;
            }
        }
        let mut cand: Vec<usize> = touched.iter().copied().filter(|&o| o != t).collect();
        let by = |a: &usize, b: &usize| score[*b].total_cmp(&score[*a]).then(a.cmp(b));
        if cand.len() > k_max && k_max > 0 {
            cand.select_nth_unstable_by(k_max - 1, by);
            cand.truncate(k_max);
        }
        cand.sort_unstable_by(by);
        let mut fill = 0;
        while cand.len() < k_max && fill < nt {
            if fill != t && score[fill] == 0.0 {
                cand.push(fill);
            }
            fill += 1;
        }
        let mut hits = 0;
        for (k, p) in precision.iter_mut().enumerate() {
            if cand.get(k).is_some_and(|&o| rel(o)) {
                hits += 1;
            }
            *p += hits as f64 / (k + 1) as f64;
        }
        for &o in &touched {
            score[o] = 0.0;
        }
        touched.clear();

        // Concept oracle: the candidates with the largest weighted concept overlap.
        for (&c, &w) in data.concepts[i].iter().zip(&data.concept_weights[i]) {
            for &(o, wo) in &concept_members[c as usize] {
                let o = o as usize;
                if overlap[o] == 0.0 {
                    touched.push(o);
                }
                overlap[o] += w * wo;
            }
        }
        let best = touched
            .iter()
            .filter(|&&o| o != t)
            .map(|&o| overlap[o])
            .fold(0.0, f64::max);
        oracle += if best > 0.0 {
            let top: Vec<usize> = touched
                .iter()
                .copied()
                .filter(|&o| o != t && overlap[o] >= best * (1.0 - 1e-12))
                .collect();
            top.iter().filter(|&&o| rel(o)).count() as f64 / top.len() as f64
        } else {
            n_rel[t] as f64 / (nt - 1) as f64
        };
        for &o in &touched {
            overlap[o] = 0.0;
        }
        touched.clear();
    }
    let div = queries.len().max(1) as f64;
    precision.iter_mut().for_each(|p| *p /= div);
    RetrievalDiagnostics {
        queries: queries.len(),
        dot_precision: precision,
        oracle_precision_at_1: oracle / div,
        chance: chance / div,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(images: usize, idf_reference: usize, seed: u64) -> WebStandin {
        WebStandin {
            idf_reference,
            ..WebStandin::new(images, seed)
        }
    }

    fn row(set: &LabeledSet, i: usize) -> (Vec<usize>, Vec<f64>) {
        let r = set.x.outer_view(i).unwrap();
        (r.indices().to_vec(), r.data().to_vec())
    }

    #[test]
    fn generation_is_deterministic_and_shaped_as_specified() {
        let g = small(3000, 5000, 7);
        let a = g.generate().unwrap();
        assert_eq!(a, g.generate().unwrap());
        let set = &a.set;
        assert_eq!((set.n(), set.dim()), (3000, 10_000));
        let n_concepts = g.concepts_for(3000);
        assert_eq!(
            (a.stats.concepts, set.n_classes()),
            (n_concepts, n_concepts)
        );
        // About 70 non-zeros out of 10,000 per image.
        assert!(
            (60.0..80.0).contains(&a.stats.mean_nnz),
            "nnz {}",
            a.stats.mean_nnz
        );
        let part = set.partition.as_ref().unwrap();
        let n_test = part.iter().filter(|&&p| p == Partition::Test).count();
        assert_eq!(n_test, (3000.0 * g.test_fraction) as usize);
        let rel = set.relevance.as_ref().unwrap();
        let qpt = g.head_queries + g.tail_queries;
        for (i, rel_i) in rel.iter().enumerate() {
            let r = set.x.outer_view(i).unwrap();
            assert!(r.indices().windows(2).all(|w| w[0] < w[1]));
            assert!(r.data().iter().all(|&v| v > 0.0));
            assert!((r.data().iter().map(|v| v * v).sum::<f64>() - 1.0).abs() < 1e-12);
            let (c, w) = (&a.concepts[i], &a.concept_weights[i]);
            assert!((1..=3).contains(&c.len()) && c.len() == w.len());
            assert!(c.iter().all(|&k| (k as usize) < n_concepts));
            let mut distinct = c.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), c.len());
            assert!(w.windows(2).all(|p| p[0] >= p[1]));
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert_eq!(set.labels[i], c[0]);
            // Clicks: sorted distinct queries, counts >= 1, each query in the topic of one of
            // the image's concepts; the relevance list is the query list.
            let q: Vec<u32> = a.clicks[i].iter().map(|p| p.0).collect();
            assert!(!q.is_empty() && q.windows(2).all(|p| p[0] < p[1]));
            assert!(a.clicks[i].iter().all(|p| p.1 >= 1));
            assert_eq!(rel_i, &q);
            for &qq in &q {
                let topic = qq as usize / qpt;
                assert!(c.iter().any(|&k| g.topic_of_concept(k) as usize == topic));
                assert!(a.queries_of_concept[c[0] as usize].len() <= qpt);
            }
        }
        // queries_of_concept lists exactly the clicked queries of each concept's topic.
        for (k, qs) in a.queries_of_concept.iter().enumerate() {
            let t = g.topic_of_concept(k as u32);
            let mut want: Vec<u32> = a.clicks.iter().flatten().map(|p| p.0).collect();
            want.retain(|&q| g.topic_of_query(q) == t);
            want.sort_unstable();
            want.dedup();
            assert_eq!(qs, &want);
        }
        let other = small(3000, 5000, 8).generate().unwrap();
        assert_ne!(a.set.x, other.set.x);
        assert_ne!(a.clicks, other.clicks);
    }

    #[test]
    fn smaller_sets_are_prefixes_of_larger_ones() {
        // Fixed reference idf: the first N images are identical, feature rows included.
        // Cases: reference beyond both sizes; reference between the sizes; reference below
        // both, with the larger set needing more concepts and query topics (40 vs 20
        // concepts) and 9000 / 20000 images spanning several generation chunks.
        for (sizes, reference) in [
            ([600, 3000], 4000),
            ([600, 5000], 2000),
            ([9000, 20_000], 5000),
        ] {
            let a = small(sizes[0], reference, 3).generate().unwrap();
            let b = small(sizes[1], reference, 3).generate().unwrap();
            let n = sizes[0];
            let head: Vec<usize> = (0..n).collect();
            let (sa, sb) = (&a.set, &b.set.select(&head));
            assert_eq!(sb.x, sa.x, "{sizes:?}");
            assert_eq!(sb.labels, sa.labels);
            assert_eq!(sb.partition, sa.partition);
            assert_eq!(sb.relevance, sa.relevance);
            assert_eq!(&b.set.class_names[..sa.n_classes()], &sa.class_names[..]);
            assert_eq!(&b.concepts[..n], &a.concepts[..]);
            assert_eq!(&b.concept_weights[..n], &a.concept_weights[..]);
            assert_eq!(&b.clicks[..n], &a.clicks[..]);
            // Query ids are stable: a query clicked in the smaller set keeps its topic.
            for (k, qs) in a.queries_of_concept.iter().enumerate() {
                assert!(
                    qs.iter()
                        .all(|q| b.queries_of_concept[k].binary_search(q).is_ok())
                );
            }
        }
        let g = WebStandin::default();
        assert_eq!((g.concepts_for(9000), g.concepts_for(20_000)), (20, 40));
        // idf from the set's own training part: the same images, different weights.
        let a = small(600, 0, 3).generate().unwrap();
        let b = small(3000, 0, 3).generate().unwrap();
        assert_eq!(&b.clicks[..600], &a.clicks[..]);
        assert_eq!(&b.concepts[..600], &a.concepts[..]);
        for i in 0..600 {
            assert_eq!(row(&a.set, i).0, row(&b.set, i).0, "same words in row {i}");
        }
        assert!((0..600).any(|i| row(&a.set, i).1 != row(&b.set, i).1));
    }

    #[test]
    fn relevance_and_clicks_have_the_specified_structure() {
        // Topics of 5 concepts so that 3000 images span 4 topics.
        let g = WebStandin {
            concepts_per_topic: 5,
            ..small(3000, 0, 21)
        };
        let a = g.generate().unwrap();
        assert_eq!(a.stats.topics, 4);
        // Heavy-tailed click counts: P(count >= c) = c^-1.5 per link (repeated links to one
        // query add up, which barely moves these).
        let counts: Vec<u32> = a.clicks.iter().flatten().map(|p| p.1).collect();
        let tail = |c: u32| counts.iter().filter(|&&x| x >= c).count() as f64 / counts.len() as f64;
        let (t2, t10) = (tail(2), tail(10));
        assert!((t2 - 2f64.powf(-1.5)).abs() < 0.04, "P(count >= 2) = {t2}");
        assert!(
            (t10 - 10f64.powf(-1.5)).abs() < 0.012,
            "P(count >= 10) = {t10}"
        );
        // Relevant (query-sharing) pairs: always within a topic; far more likely for images
        // of one concept than for images of the same topic without a shared concept; but
        // even images of one concept usually share no query (partial labelling).
        let n = a.set.n();
        let topics = |i: usize| -> Vec<u32> {
            a.concepts[i]
                .iter()
                .map(|&k| g.topic_of_concept(k))
                .collect()
        };
        let (mut same_rel, mut same) = (0usize, 0usize);
        let (mut topic_rel, mut topic) = (0usize, 0usize);
        for i in 0..n {
            for j in i + 1..n {
                let rel = a.set.relevant(i, &a.set, j);
                let (ci, cj) = (&a.concepts[i], &a.concepts[j]);
                if ci.len() == 1 && cj.len() == 1 && ci[0] == cj[0] {
                    same += 1;
                    same_rel += usize::from(rel);
                } else if ci.iter().any(|c| cj.contains(c)) {
                    continue;
                } else if topics(i).iter().any(|t| topics(j).contains(t)) {
                    topic += 1;
                    topic_rel += usize::from(rel);
                } else {
                    assert!(!rel, "images {i} and {j} share a query across topics");
                }
            }
        }
        let (p_same, p_topic) = (
            same_rel as f64 / same as f64,
            topic_rel as f64 / topic as f64,
        );
        assert!(p_same > 2.0 * p_topic, "{p_same} vs {p_topic}");
        assert!(p_topic > 0.0);
        assert!(p_same < 0.2, "{p_same}");
    }

    #[test]
    fn partition_reproduces_the_paper_counts() {
        let g = WebStandin::new(PAPER_IMAGES, 0);
        assert_eq!(g.test_count(PAPER_IMAGES), PAPER_TEST_IMAGES);
        let test = (0..PAPER_IMAGES)
            .filter(|&i| g.partition_of(i) == Partition::Test)
            .count();
        assert_eq!(test, PAPER_TEST_IMAGES);
        // Evenly spread: every window of 1000 images holds 149 +- 1 test images.
        for start in (0..PAPER_IMAGES - 1000).step_by(250_000) {
            let t = (start..start + 1000)
                .filter(|&i| g.partition_of(i) == Partition::Test)
                .count();
            assert!((148..=150).contains(&t), "{t} test images at {start}");
        }
    }

    #[test]
    fn statistics_match_brute_force_counts() {
        let g = small(2500, 3000, 11);
        let a = g.generate().unwrap();
        let part = a.set.partition.as_ref().unwrap();
        let mut images_of: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, c) in a.clicks.iter().enumerate() {
            for &(q, _) in c {
                images_of.entry(q).or_default().push(i);
            }
        }
        let in_part = |imgs: &Vec<usize>, p: Partition| imgs.iter().any(|&i| part[i] == p);
        let s = &a.stats;
        assert_eq!(s.queries, images_of.len());
        assert_eq!(
            s.train_queries,
            images_of
                .values()
                .filter(|v| in_part(v, Partition::Train))
                .count()
        );
        assert_eq!(
            s.test_queries,
            images_of
                .values()
                .filter(|v| in_part(v, Partition::Test))
                .count()
        );
        assert_eq!(
            s.single_image_queries,
            images_of.values().filter(|v| v.len() == 1).count()
        );
        let links: usize = a.clicks.iter().map(Vec::len).sum();
        assert!((s.mean_queries_per_image - links as f64 / 2500.0).abs() < 1e-12);
        assert!((s.mean_images_per_query - links as f64 / images_of.len() as f64).abs() < 1e-12);
        assert_eq!(
            s.max_images_per_query,
            images_of.values().map(Vec::len).max().unwrap()
        );
        assert_eq!(s.train_images + s.test_images, 2500);
        let test: Vec<usize> = a.test_rows();
        assert_eq!(test.len(), s.test_images);
        let mut related = 0;
        for (x, &i) in test.iter().enumerate() {
            for &j in &test[x + 1..] {
                related += usize::from(a.set.relevant(i, &a.set, j));
            }
        }
        let pairs = test.len() * (test.len() - 1) / 2;
        assert!((s.test_relevant_pair_fraction - related as f64 / pairs as f64).abs() < 1e-12);
        assert!(related > 0);
        assert!((s.mean_nnz - a.set.x.nnz() as f64 / 2500.0).abs() < 1e-12);
        let active: std::collections::BTreeSet<u32> =
            a.concepts.iter().flatten().copied().collect();
        assert_eq!(s.active_concepts, active.len());
    }

    #[test]
    fn idf_is_the_smoothed_training_document_frequency() {
        // With idf from the set's own training part, every row is the L2-normalised
        // count x ln((n+1)/(df+1)) of its words: check the ratio of two weights of a row
        // against document frequencies counted here (counts are not exposed, so compare
        // rows of one word: weight ratios between rows equal count ratios, which are
        // integers).
        let g = small(1500, 0, 5);
        let a = g.generate().unwrap();
        let part = a.set.partition.as_ref().unwrap();
        let n_train = part.iter().filter(|&&p| p == Partition::Train).count() as f64;
        let mut df = vec![0.0; g.dim];
        for i in a.train_rows() {
            for &w in a.set.x.outer_view(i).unwrap().indices() {
                df[w] += 1.0;
            }
        }
        // Un-normalise each row by its smallest count-1 guess: v_w / idf_w must be
        // proportional to an integer count vector.
        let mut checked = 0;
        for i in 0..200 {
            let r = a.set.x.outer_view(i).unwrap();
            let tf: Vec<f64> = r
                .indices()
                .iter()
                .zip(r.data())
                .map(|(&w, &v)| v / ((n_train + 1.0) / (df[w] + 1.0)).ln())
                .collect();
            let unit = tf.iter().copied().fold(f64::INFINITY, f64::min);
            for t in &tf {
                let c = t / unit;
                assert!((c - c.round()).abs() < 1e-6, "row {i}: count ratio {c}");
                checked += 1;
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn co_query_probability_matches_hand_computation() {
        let mut a = small(4, 10, 0).generate().unwrap();
        // R_QI: query 0 -> images 0 (2 clicks), 1 (1); query 1 -> images 0 (1), 2 (3);
        // query 2 -> image 3 (1). R_0 = 3, R_1 = 4, R_2 = 1, Z = 8.
        a.clicks = vec![
            vec![(0, 2), (1, 1)],
            vec![(0, 1)],
            vec![(1, 3)],
            vec![(2, 1)],
        ];
        let all = a.co_query(&[0, 1, 2, 3]);
        let p01 = 2.0 * 1.0 / (3.0 * 8.0);
        let p02 = 1.0 * 3.0 / (4.0 * 8.0);
        let close = |x: &[(u32, f64)], y: &[(u32, f64)]| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() < 1e-15)
        };
        assert!(close(&all.probabilities(&a, 0), &[(1, p01), (2, p02)]));
        assert!(close(&all.probabilities(&a, 1), &[(0, p01)]));
        assert!(close(&all.probabilities(&a, 2), &[(0, p02)]));
        assert!(all.probabilities(&a, 3).is_empty());
        // Top half of the 4 ordered related pairs of rows 0..3: the two p02 ones.
        let theta = all.theta_for_top_fraction(&a, &[0, 1, 2], 0.5);
        assert!((theta - p01).abs() < 1e-15);
        assert_eq!(all.relevant_above(&a, 0, theta), vec![2]);
        assert_eq!(all.relevant_above(&a, 0, 0.0), vec![1, 2]);
        assert_eq!(all.theta_for_top_fraction(&a, &[0, 1, 2], 1.0), 0.0);
        // Restricted to rows {0, 1}: R_0 = 3, R_1 = 1, Z = 4; image 2 is not a row.
        let part = a.co_query(&[0, 1]);
        assert!(close(&part.probabilities(&a, 0), &[(1, 2.0 / 12.0)]));
        assert!(part.probabilities(&a, 2).is_empty());
    }

    #[test]
    fn diagnostics_match_brute_force_ranking() {
        let a = small(2500, 3000, 2).generate().unwrap();
        let test = a.test_rows();
        let k = 5;
        let d = retrieval_diagnostics(&a, k, usize::MAX);
        let (mut prec, mut chance, mut oracle, mut n) = (vec![0.0; k], 0.0, 0.0, 0);
        for (t, &i) in test.iter().enumerate() {
            let (qi, qv) = row(&a.set, i);
            let scores: Vec<f64> = test
                .iter()
                .map(|&j| {
                    let (ji, jv) = row(&a.set, j);
                    dyad_core::sparse::dot(&qi, &qv, &ji, &jv)
                })
                .collect();
            let rel: Vec<bool> = test.iter().map(|&j| a.set.relevant(i, &a.set, j)).collect();
            let r = dyad_core::metrics::rank_query(&scores, &rel, Some(t), k);
            if r.ap.is_none() {
                continue;
            }
            n += 1;
            prec.iter_mut().zip(&r.precision).for_each(|(p, x)| *p += x);
            chance += r.n_relevant as f64 / r.n_candidates as f64;
            let overlap: Vec<f64> = test
                .iter()
                .map(|&j| {
                    let mut s = 0.0;
                    for (c, w) in a.concepts[i].iter().zip(&a.concept_weights[i]) {
                        for (cj, wj) in a.concepts[j].iter().zip(&a.concept_weights[j]) {
                            if c == cj {
                                s += w * wj;
                            }
                        }
                    }
                    s
                })
                .collect();
            let best = (0..test.len())
                .filter(|&u| u != t)
                .map(|u| overlap[u])
                .fold(0.0, f64::max);
            assert!(best > 0.0);
            let top: Vec<usize> = (0..test.len())
                .filter(|&u| u != t && overlap[u] >= best * (1.0 - 1e-12))
                .collect();
            oracle += top.iter().filter(|&&u| rel[u]).count() as f64 / top.len() as f64;
        }
        assert_eq!(d.queries, n);
        for (x, y) in d.dot_precision.iter().zip(&prec) {
            assert!((x - y / n as f64).abs() < 1e-12, "{x} vs {}", y / n as f64);
        }
        assert!((d.chance - chance / n as f64).abs() < 1e-12);
        assert!((d.oracle_precision_at_1 - oracle / n as f64).abs() < 1e-12);
        // Subsampling the queries keeps them evenly spread and counts them.
        assert_eq!(retrieval_diagnostics(&a, k, 50).queries, 50);
    }

    #[test]
    fn default_matches_the_paper_proportions_at_100k() {
        let a = WebStandin::new(100_000, 1).generate().unwrap();
        let s = &a.stats;
        let paper_train = PAPER_TRAIN_QUERIES as f64 / (PAPER_IMAGES - PAPER_TEST_IMAGES) as f64;
        let paper_test = PAPER_TEST_QUERIES as f64 / PAPER_TEST_IMAGES as f64;
        let train = s.train_queries as f64 / s.train_images as f64;
        let test = s.test_queries as f64 / s.test_images as f64;
        assert!(
            (train / paper_train - 1.0).abs() < 0.1,
            "train queries/image {train}"
        );
        assert!(
            (test / paper_test - 1.0).abs() < 0.1,
            "test queries/image {test}"
        );
        let per_query = s.images as f64 / s.queries as f64;
        assert!(
            (14.0..22.0).contains(&per_query),
            "{per_query} images per query"
        );
        assert!((60.0..80.0).contains(&s.mean_nnz), "nnz {}", s.mean_nnz);
        assert!((1.2..1.6).contains(&s.mean_queries_per_image));
        assert!((1.4..1.6).contains(&s.mean_concepts_per_image));
        assert_eq!(s.concepts, 200);
        // Low precision from partial labels, with head-room over plain dot products.
        let d = retrieval_diagnostics(&a, 10, 3000);
        let p1 = d.dot_precision[0];
        assert!(p1 < 0.03, "dot-product precision@1 {p1}");
        assert!(
            p1 > 1.5 * d.chance,
            "features carry signal: {p1} vs chance {}",
            d.chance
        );
        // Learnable: knowing the concepts (what a learned ranker can recover from the
        // words) gives several times the identity's precision, but far from all of it.
        assert!(
            d.oracle_precision_at_1 > 4.0 * p1,
            "oracle {}",
            d.oracle_precision_at_1
        );
        assert!(
            d.oracle_precision_at_1 < 0.25,
            "oracle {}",
            d.oracle_precision_at_1
        );
    }

    #[test]
    fn invalid_parameters_are_errors() {
        type Patch = Box<dyn Fn(&mut WebStandin)>;
        let bad: Vec<Patch> = vec![
            Box::new(|g| g.images = 1),
            Box::new(|g| g.test_fraction = 1.0),
            Box::new(|g| g.test_fraction = -0.1),
            Box::new(|g| g.dim = 1),
            Box::new(|g| g.concept_words = 10_001),
            Box::new(|g| g.concepts_per_image = [0.5, 0.4, 0.2]),
            Box::new(|g| g.concept_share = 0.7),
            Box::new(|g| {
                g.styles = 0;
            }),
            Box::new(|g| g.mean_blocks = 5.0),
            Box::new(|g| g.mean_blocks = f64::NAN),
            Box::new(|g| g.head_queries = 0),
            Box::new(|g| g.tail_share = 1.5),
            Box::new(|g| g.links_per_image = 0.5),
            Box::new(|g| g.click_tail = 0.0),
            Box::new(|g| g.images_per_concept = 0),
        ];
        for (k, f) in bad.iter().enumerate() {
            let mut g = small(100, 0, 0);
            f(&mut g);
            assert!(matches!(g.generate(), Err(DataError::Param(_))), "case {k}");
        }
        let mut g = small(100, 0, 0);
        g.styles = 0;
        g.style_share = 0.0;
        assert!(g.generate().is_ok());
    }

    #[test]
    fn config_defaults_and_unknown_fields() {
        let g: WebStandin = serde_json::from_str(r#"{"images": 600, "seed": 4}"#).unwrap();
        assert_eq!(g, WebStandin::new(600, 4));
        assert!(serde_json::from_str::<WebStandin>(r#"{"images": 600, "facets": 3}"#).is_err());
        let back: WebStandin = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }
}
