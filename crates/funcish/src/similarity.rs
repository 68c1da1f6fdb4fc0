//! Gene similarities on the functional representation (funcish.md §2.7–§2.10) and their
//! explanations.
//!
//! # flat-sim (§2.7)
//!
//! For activation vectors `a, b ∈ [0,1]^m` (out-of-fold classifier probabilities),
//! `flat_sim(a, b) = Σ_i â_i b̂_i` with `â = a/‖a‖₂`: the dot product of the L2-normalised
//! vectors, as the formula is printed. The prose calls it "linear correlation", so
//! [`FlatKind::Pearson`] (mean-centred) is offered; the formula is the default. The
//! contribution of category `i` is `â_i b̂_i` (they sum to flat-sim; [`flat_explain`] sorts
//! them). A zero vector has similarity 0 with everything.
//!
//! # GO-sim (§2.8, Schlicker et al. 2006)
//!
//! Activations are binarised at `P ≥ 0.5` (the text says 0.5; `≥` is our choice). Over the
//! `m` categories in use (the paper: the 164 nervous-system ones):
//!
//! ```text
//! sim_rel(i, j) = max_{k ∈ anc(i) ∩ anc(j)} 2·IC(k) / (IC(i) + IC(j)) · (1 − 10^(−IC(k)))
//! S_ij          = sim_rel(i, j) · a_i · b_j
//! sim_{a→b}     = (1/|a|) Σ_i max_j S_ij        (|a| = active categories of a; `1/m` optional)
//! GO_sim(a, b)  = max(sim_{a→b}, sim_{b→a})
//! ```
//!
//! `anc` is ancestors-or-self in the ontology (any term, not only categories), `IC(k) =
//! −log10(#genes(k)/#genes)` with propagated counts, so the root (IC 0) contributes 0. When
//! `IC(i) + IC(j) = 0` (two root-like categories) `sim_rel = 0`. The normaliser: the printed
//! formula divides by `m`, the prose "averages across all of a's annotations", which is
//! Schlicker's definition: we divide by `|a|` by default ([`GoSimNorm::Active`]) and offer
//! `1/m`. A gene with no active category has GO-sim 0. The explanation of a pair is the
//! category pairs `(i, j)` of largest `S_ij` with their most informative common ancestor
//! ([`SimRel::mica`]).
//!
//! [`SimRel`] precomputes the `m × m` matrix once (`O(m² · |anc|)` with sorted ancestor
//! lists); a pair then costs `O(|a|·|b|)` over active categories only.
//!
//! # Retrieval (§2.10)
//!
//! [`top_k`] ranks a query's similarity row (the query excluded, ties broken by the smaller
//! index), [`precision_curve`] averages `|top_K ∩ R(q)| / K` for `K = 1..=k_max` over the
//! queries that have at least one related gene.

use std::cmp::Ordering;

/// flat-sim's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlatKind {
    /// The printed formula: cosine of the raw activation vectors.
    #[default]
    Cosine,
    /// The prose's "linear correlation": cosine of the mean-centred vectors.
    Pearson,
}

/// Cosine similarity; 0 when either vector is zero.
pub fn cosine(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        ab / (aa.sqrt() * bb.sqrt())
    }
}

/// Pearson correlation (the cosine of the mean-centred vectors); 0 when either vector is
/// constant.
pub fn pearson(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() {
        return 0.0;
    }
    let centred = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| x - m).collect::<Vec<f64>>()
    };
    cosine(&centred(a), &centred(b))
}

/// flat-sim of two activation vectors.
pub fn flat_sim(a: &[f64], b: &[f64], kind: FlatKind) -> f64 {
    match kind {
        FlatKind::Cosine => cosine(a, b),
        FlatKind::Pearson => pearson(a, b),
    }
}

/// The per-category contributions `â_i b̂_i` (cosine form), summing to flat-sim.
pub fn flat_contributions(a: &[f64], b: &[f64]) -> Vec<f64> {
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        return vec![0.0; a.len()];
    }
    a.iter().zip(b).map(|(x, y)| x / na * (y / nb)).collect()
}

/// The `k` categories contributing most to flat-sim, largest first (ties: smaller index).
pub fn flat_explain(a: &[f64], b: &[f64], k: usize) -> Vec<(usize, f64)> {
    let c = flat_contributions(a, b);
    let mut idx: Vec<usize> = (0..c.len()).collect();
    idx.sort_by(|&i, &j| c[j].total_cmp(&c[i]).then(i.cmp(&j)));
    idx.into_iter().take(k).map(|i| (i, c[i])).collect()
}

/// The normaliser of `sim_{a→b}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoSimNorm {
    /// Average over `a`'s active categories (Schlicker; the prose).
    #[default]
    Active,
    /// Divide by the number of categories `m` (the printed formula).
    AllCategories,
}

/// Schlicker's `sim_rel` between the categories in use, with each pair's most informative
/// common ancestor.
#[derive(Debug, Clone)]
pub struct SimRel {
    m: usize,
    rel: Vec<f64>,
    mica: Vec<u32>,
}

/// No common ancestor with positive information content.
pub const NO_MICA: u32 = u32::MAX;

impl SimRel {
    /// `categories[i]` is the ontology term of category `i`; `ancestors[t]` the sorted
    /// ancestors-or-self of term `t`; `ic[t]` its information content (≥ 0; a term no gene
    /// carries cannot be an ancestor of a category, any value will do).
    pub fn new(categories: &[u32], ancestors: &[Vec<u32>], ic: &[f64]) -> Self {
        let m = categories.len();
        let mut rel = vec![0.0; m * m];
        let mut mica = vec![NO_MICA; m * m];
        for i in 0..m {
            for j in i..m {
                let (ti, tj) = (categories[i] as usize, categories[j] as usize);
                let denom = ic[ti] + ic[tj];
                let (mut best, mut arg) = (0.0, NO_MICA);
                if denom > 0.0 {
                    for k in sorted_intersection(&ancestors[ti], &ancestors[tj]) {
                        let ick = ic[k as usize];
                        let v = 2.0 * ick / denom * (1.0 - 10f64.powf(-ick));
                        // Ties: the more specific (larger IC), then the smaller term index.
                        if v > best {
                            best = v;
                            arg = k;
                        }
                    }
                }
                rel[i * m + j] = best;
                rel[j * m + i] = best;
                mica[i * m + j] = arg;
                mica[j * m + i] = arg;
            }
        }
        Self { m, rel, mica }
    }

    pub fn m(&self) -> usize {
        self.m
    }

    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.rel[i * self.m + j]
    }

    /// The most informative common ancestor of categories `i` and `j` ([`NO_MICA`] when
    /// they share only zero-IC ancestors).
    pub fn mica(&self, i: usize, j: usize) -> u32 {
        self.mica[i * self.m + j]
    }

    /// `sim_{a→b}` over active category lists.
    pub fn directed(&self, a: &[u32], b: &[u32], norm: GoSimNorm) -> f64 {
        if a.is_empty() || b.is_empty() {
            return 0.0;
        }
        let sum: f64 = a
            .iter()
            .map(|&i| {
                let row = &self.rel[i as usize * self.m..(i as usize + 1) * self.m];
                b.iter().map(|&j| row[j as usize]).fold(0.0, f64::max)
            })
            .sum();
        sum / match norm {
            GoSimNorm::Active => a.len() as f64,
            GoSimNorm::AllCategories => self.m as f64,
        }
    }

    /// GO-sim of two genes given their active categories.
    pub fn go_sim(&self, a: &[u32], b: &[u32], norm: GoSimNorm) -> f64 {
        self.directed(a, b, norm).max(self.directed(b, a, norm))
    }

    /// The `k` category pairs `(i, j, S_ij, MICA)` of largest `S_ij`, `i` active in `a` and
    /// `j` in `b` (ties: smaller `i`, then `j`).
    pub fn explain(&self, a: &[u32], b: &[u32], k: usize) -> Vec<(u32, u32, f64, u32)> {
        let mut pairs: Vec<(u32, u32, f64, u32)> = a
            .iter()
            .flat_map(|&i| {
                b.iter().map(move |&j| {
                    (
                        i,
                        j,
                        self.get(i as usize, j as usize),
                        self.mica(i as usize, j as usize),
                    )
                })
            })
            .filter(|p| p.2 > 0.0)
            .collect();
        pairs.sort_by(|x, y| y.2.total_cmp(&x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
        pairs.truncate(k);
        pairs
    }
}

/// The active categories of an activation vector: `P ≥ threshold`.
pub fn binarize(activations: &[f64], threshold: f64) -> Vec<u32> {
    activations
        .iter()
        .enumerate()
        .filter(|(_, p)| **p >= threshold)
        .map(|(i, _)| i as u32)
        .collect()
}

fn sorted_intersection<'a>(a: &'a [u32], b: &'a [u32]) -> impl Iterator<Item = u32> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                Ordering::Less => i += 1,
                Ordering::Greater => j += 1,
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                    return Some(a[i - 1]);
                }
            }
        }
        None
    })
}

/// The `k` most similar items of a query's similarity row, the query itself excluded,
/// largest first; ties broken by the smaller index. NaN similarities rank last.
pub fn top_k(row: &[f64], query: usize, k: usize) -> Vec<u32> {
    let key = |i: usize| {
        if row[i].is_nan() {
            f64::NEG_INFINITY
        } else {
            row[i]
        }
    };
    let mut idx: Vec<u32> = (0..row.len() as u32)
        .filter(|&i| i as usize != query)
        .collect();
    let cmp = |x: &u32, y: &u32| key(*y as usize).total_cmp(&key(*x as usize)).then(x.cmp(y));
    if k < idx.len() {
        idx.select_nth_unstable_by(k, cmp);
        idx.truncate(k);
    }
    idx.sort_by(cmp);
    idx
}

/// Mean precision at `K = 1..=k_max` of ranked lists against related sets, over the queries
/// with at least one related item; `(curve, queries used)`. `related[q]` must be sorted.
pub fn precision_curve(
    lists: &[Vec<u32>],
    related: &[Vec<u32>],
    k_max: usize,
) -> (Vec<f64>, usize) {
    let mut curve = vec![0.0; k_max];
    let mut used = 0;
    for (list, rel) in lists.iter().zip(related) {
        if rel.is_empty() {
            continue;
        }
        used += 1;
        let mut hits = 0usize;
        for (k, c) in curve.iter_mut().enumerate() {
            if let Some(&g) = list.get(k)
                && rel.binary_search(&g).is_ok()
            {
                hits += 1;
            }
            *c += hits as f64 / (k + 1) as f64;
        }
    }
    if used > 0 {
        for c in &mut curve {
            *c /= used as f64;
        }
    }
    (curve, used)
}

/// The `go-sim` entry of the solver list.
pub const SOLVER_GO_SIM: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "go-sim",
    label: "FuncISH GO-sim",
    description: "Schlicker's functional similarity on binarised activations (P >= 0.5) over the nervous-system categories, with simRel from the ontology's information content (spec §2.8)",
    family: crate::GENE_SIMILARITY,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::gene_similarity_solver::<GoSimConfig>,
};

/// The `flat-sim` entry of the solver list.
pub const SOLVER_FLAT_SIM: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "flat-sim",
    label: "FuncISH flat-sim",
    description: "cosine of the L2-normalised activation vectors over every category (spec §2.7)",
    family: crate::GENE_SIMILARITY,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::gene_similarity_solver::<FlatSimConfig>,
};

/// The `bow-cosine` entry of the solver list.
pub const SOLVER_BOW_COSINE: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "bow-cosine",
    label: "SIFT BoW cosine",
    description: "cosine of the raw bag-of-visual-words counts (spec §2.9 baseline 1)",
    family: crate::GENE_SIMILARITY,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::gene_similarity_solver::<BowCosineConfig>,
};

/// The `coarse-correlation` entry of the solver list.
pub const SOLVER_COARSE_CORRELATION: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "coarse-correlation",
    label: "NeuroBlast stand-in",
    description: "Pearson correlation of the images averaged on a coarse co-registered grid: a location-dependent global correlation standing in for ABA's NeuroBlast (spec §2.9 baseline 2, §8 item 4)",
    family: crate::GENE_SIMILARITY,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::gene_similarity_solver::<CoarseCorrelationConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Terms: 0 root, 1 = a (child of root), 2 = b (child of root), 3 = c (child of a and
    /// b), 4 = e (child of c). Genes per term (propagated): root 10, a 6, b 5, c 2, e 1.
    fn graph() -> (Vec<Vec<u32>>, Vec<f64>) {
        let anc = vec![
            vec![0],
            vec![0, 1],
            vec![0, 2],
            vec![0, 1, 2, 3],
            vec![0, 1, 2, 3, 4],
        ];
        let counts = [10.0, 6.0, 5.0, 2.0, 1.0];
        let ic = counts.iter().map(|c: &f64| -(c / 10.0).log10()).collect();
        (anc, ic)
    }

    fn rel_ref(i: usize, j: usize, anc: &[Vec<u32>], ic: &[f64]) -> (f64, u32) {
        let mut best = (0.0, NO_MICA);
        for &k in &anc[i] {
            if anc[j].contains(&k) && ic[i] + ic[j] > 0.0 {
                let v =
                    2.0 * ic[k as usize] / (ic[i] + ic[j]) * (1.0 - 10f64.powf(-ic[k as usize]));
                if v > best.0 {
                    best = (v, k);
                }
            }
        }
        best
    }

    #[test]
    fn sim_rel_identities_symmetry_range_and_root() {
        let (anc, ic) = graph();
        let cats = [1u32, 2, 3, 4, 0];
        let s = SimRel::new(&cats, &anc, &ic);
        for (i, &ti) in cats.iter().enumerate() {
            let t = ti as usize;
            // sim_rel(i, i) = 1 − 10^(−IC(i)).
            assert!((s.get(i, i) - (1.0 - 10f64.powf(-ic[t]))).abs() < 1e-15);
            for (j, &tj) in cats.iter().enumerate() {
                assert_eq!(s.get(i, j), s.get(j, i));
                assert!((0.0..=1.0).contains(&s.get(i, j)));
                let (v, k) = rel_ref(t, tj as usize, &anc, &ic);
                assert!((s.get(i, j) - v).abs() < 1e-15, "({i},{j})");
                assert_eq!(s.mica(i, j), k);
            }
        }
        // a and b share only the root (IC 0): nothing.
        assert_eq!(s.get(0, 1), 0.0);
        assert_eq!(s.mica(0, 1), NO_MICA);
        // c and e: MICA c; by hand 2·IC(c)/(IC(c)+IC(e))·(1 − 10^−IC(c)), IC(c) = log10 5.
        let (icc, ice) = (5f64.log10(), 10f64.log10());
        let want = 2.0 * icc / (icc + ice) * (1.0 - 0.2);
        assert!((s.get(2, 3) - want).abs() < 1e-15);
        assert_eq!(s.mica(2, 3), 3);
        // The root category is similar to nothing (IC 0).
        assert!((0..5).all(|j| s.get(4, j) == 0.0));
    }

    #[test]
    fn go_sim_by_hand_symmetric_and_normalisers() {
        let (anc, ic) = graph();
        let s = SimRel::new(&[1, 2, 3, 4], &anc, &ic);
        let a = [0u32, 2]; // a, c
        let b = [3u32]; // e
        // sim_{a→b} = (rel(a,e) + rel(c,e)) / 2; sim_{b→a} = max(rel(e,a), rel(e,c)).
        let ab = (s.get(0, 3) + s.get(2, 3)) / 2.0;
        let ba = s.get(3, 0).max(s.get(3, 2));
        assert!((s.directed(&a, &b, GoSimNorm::Active) - ab).abs() < 1e-15);
        assert!((s.directed(&b, &a, GoSimNorm::Active) - ba).abs() < 1e-15);
        assert_eq!(s.go_sim(&a, &b, GoSimNorm::Active), ab.max(ba));
        assert_eq!(
            s.go_sim(&a, &b, GoSimNorm::Active),
            s.go_sim(&b, &a, GoSimNorm::Active)
        );
        let all = s.go_sim(&a, &b, GoSimNorm::AllCategories);
        assert!((all - ((s.get(0, 3) + s.get(2, 3)) / 4.0).max(ba / 4.0)).abs() < 1e-15);
        assert_eq!(s.go_sim(&[], &b, GoSimNorm::Active), 0.0);
        // Explanations: the largest S_ij first, with their MICA.
        let ex = s.explain(&a, &b, 5);
        assert_eq!(ex[0].0, 2);
        assert_eq!(ex[0].3, 3, "c and e meet at c");
        assert!(ex.windows(2).all(|w| w[0].2 >= w[1].2));
    }

    #[test]
    fn binarize_at_the_threshold() {
        assert_eq!(binarize(&[0.2, 0.5, 0.49, 0.9], 0.5), vec![1, 3]);
    }

    #[test]
    fn flat_sim_contributions_sum_to_it() {
        let a = [0.1, 0.8, 0.3, 0.0, 0.6];
        let b = [0.5, 0.7, 0.2, 0.9, 0.3];
        let c = flat_contributions(&a, &b);
        let f = flat_sim(&a, &b, FlatKind::Cosine);
        assert!((c.iter().sum::<f64>() - f).abs() < 1e-15);
        let dot: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((f - dot / (na * nb)).abs() < 1e-15);
        let ex = flat_explain(&a, &b, 2);
        assert_eq!(ex[0].0, 1);
        assert_eq!(ex[1].0, 4);
        assert_eq!(flat_sim(&a, &[0.0; 5], FlatKind::Cosine), 0.0);
        // Pearson: invariant to shifts, unlike the cosine.
        let shifted: Vec<f64> = b.iter().map(|x| x + 3.0).collect();
        assert!((pearson(&a, &b) - pearson(&a, &shifted)).abs() < 1e-12);
        assert!((cosine(&a, &b) - cosine(&a, &shifted)).abs() > 1e-3);
        assert!((pearson(&a, &a) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn top_k_excludes_the_query_and_breaks_ties_by_index() {
        let row = [0.9, 0.5, f64::NAN, 0.5, 0.7, 1.0];
        assert_eq!(top_k(&row, 5, 3), vec![0, 4, 1]);
        assert_eq!(top_k(&row, 0, 10), vec![5, 4, 1, 3, 2]);
    }

    #[test]
    fn precision_curve_by_hand() {
        let lists = vec![vec![1, 2, 3], vec![0, 2, 3], vec![0, 1, 3]];
        let related = vec![vec![2], vec![0, 3], vec![]];
        let (c, used) = precision_curve(&lists, &related, 3);
        assert_eq!(used, 2);
        // q0: hits at K=2: [0, 1/2, 1/3]; q1: [1, 1/2, 2/3].
        let want = [0.5, 0.5, 0.5];
        for (x, w) in c.iter().zip(want) {
            assert!((x - w).abs() < 1e-15, "{c:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// The similarity family (Fig. 4's four curves)
// ---------------------------------------------------------------------------------------

use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::{Array2, ArrayView2};

/// What a gene similarity may read, per image: the functional representation (out-of-fold
/// category probabilities), the bag of words, the coarse expression grid (NeuroBlast's
/// stand-in), and the ontology facts GO-sim needs.
#[derive(Debug, Clone, Copy)]
pub struct SimilarityInput<'a> {
    /// `images × categories`.
    pub probabilities: ArrayView2<'a, f64>,
    /// `images × D`.
    pub bow: ArrayView2<'a, f64>,
    /// `images × cells`.
    pub coarse: ArrayView2<'a, f64>,
    /// Ontology term of each category.
    pub category_terms: &'a [u32],
    /// Ancestors-or-self of every ontology term, sorted.
    pub ancestors: &'a [Vec<u32>],
    /// Information content of every ontology term.
    pub ic: &'a [f64],
    /// Whether each category is a nervous-system one.
    pub neural: &'a [bool],
}

/// Image-to-image similarities, one query row at a time.
pub trait SimilarityRows: Send + Sync {
    /// `out[j] = sim(i, j)` for every image `j`.
    fn row(&self, i: usize, out: &mut [f64]);
}

/// A gene similarity (the family of Fig. 4's curves).
pub trait GeneSimilarity: Send + Sync {
    fn prepare<'a>(
        &self,
        input: &SimilarityInput<'a>,
    ) -> Result<Box<dyn SimilarityRows + 'a>, AlgoError>;
}

/// Which categories a functional similarity uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CategorySet {
    /// Every category.
    #[default]
    All,
    /// The nervous-system categories (the paper's GO-sim: 164 of 2081).
    Neural,
}

impl CategorySet {
    fn pick(self, neural: &[bool]) -> Vec<usize> {
        (0..neural.len())
            .filter(|&c| self == CategorySet::All || neural[c])
            .collect()
    }
}

/// GO-sim (§2.8).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoSimConfig {
    /// Binarisation threshold (`P ≥ threshold` is active; 0.5).
    #[serde(default = "half")]
    pub threshold: f64,
    #[serde(default)]
    pub norm: GoSimNorm,
    /// The paper: the nervous-system categories (default `neural`).
    #[serde(default = "neural_set")]
    pub categories: CategorySet,
}

fn half() -> f64 {
    0.5
}
fn neural_set() -> CategorySet {
    CategorySet::Neural
}

impl Default for GoSimConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            norm: GoSimNorm::Active,
            categories: CategorySet::Neural,
        }
    }
}

impl Checked for GoSimConfig {
    fn check(&self) -> Result<(), ParamError> {
        dyad_kernels::params::open_interval("threshold", self.threshold, 0.0, 1.0)
    }
}

struct GoSimRows {
    rel: SimRel,
    active: Vec<Vec<u32>>,
    norm: GoSimNorm,
}

impl SimilarityRows for GoSimRows {
    fn row(&self, i: usize, out: &mut [f64]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = self.rel.go_sim(&self.active[i], &self.active[j], self.norm);
        }
    }
}

impl GeneSimilarity for GoSimConfig {
    fn prepare<'a>(
        &self,
        input: &SimilarityInput<'a>,
    ) -> Result<Box<dyn SimilarityRows + 'a>, AlgoError> {
        self.check()?;
        let cats = self.categories.pick(input.neural);
        if cats.is_empty() {
            return Err(AlgoError::param(
                "categories",
                "leave GO-sim no category to work on (no nervous-system category?)",
            ));
        }
        let terms: Vec<u32> = cats.iter().map(|&c| input.category_terms[c]).collect();
        let rel = SimRel::new(&terms, input.ancestors, input.ic);
        let p = input.probabilities;
        let active = (0..p.nrows())
            .map(|i| {
                cats.iter()
                    .enumerate()
                    .filter(|(_, c)| p[[i, **c]] >= self.threshold)
                    .map(|(k, _)| k as u32)
                    .collect()
            })
            .collect();
        Ok(Box::new(GoSimRows {
            rel,
            active,
            norm: self.norm,
        }))
    }
}

/// Rows of unit vectors: similarity = dot product.
struct UnitRows(Array2<f64>);

impl UnitRows {
    /// Rows of `x` (restricted to `cols`), centred first when `centre`, scaled to unit norm
    /// (a zero row stays zero: similarity 0).
    fn new(x: ArrayView2<'_, f64>, cols: Option<&[usize]>, centre: bool) -> Self {
        let d = cols.map_or(x.ncols(), <[usize]>::len);
        let mut m = Array2::<f64>::zeros((x.nrows(), d));
        for (i, mut row) in m.rows_mut().into_iter().enumerate() {
            match cols {
                Some(cs) => {
                    for (k, &c) in cs.iter().enumerate() {
                        row[k] = x[[i, c]];
                    }
                }
                None => row.assign(&x.row(i)),
            }
            if centre && d > 0 {
                let mean = row.sum() / d as f64;
                row -= mean;
            }
            let norm = row.dot(&row).sqrt();
            if norm > 0.0 {
                row /= norm;
            }
        }
        Self(m)
    }
}

impl SimilarityRows for UnitRows {
    fn row(&self, i: usize, out: &mut [f64]) {
        let q = self.0.row(i);
        for (o, r) in out.iter_mut().zip(self.0.rows()) {
            *o = q.dot(&r);
        }
    }
}

/// flat-sim (§2.7).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatSimConfig {
    #[serde(default)]
    pub kind: FlatKind,
    /// The paper: every category (default `all`).
    #[serde(default)]
    pub categories: CategorySet,
}

/// Parameter-free similarities have nothing to check.
macro_rules! always_valid {
    ($($t:ty),*) => {
        $(impl Checked for $t {
            fn check(&self) -> Result<(), ParamError> {
                Ok(())
            }
        })*
    };
}
always_valid!(FlatSimConfig, BowCosineConfig, CoarseCorrelationConfig);

impl GeneSimilarity for FlatSimConfig {
    fn prepare<'a>(
        &self,
        input: &SimilarityInput<'a>,
    ) -> Result<Box<dyn SimilarityRows + 'a>, AlgoError> {
        let cats = self.categories.pick(input.neural);
        Ok(Box::new(UnitRows::new(
            input.probabilities,
            Some(&cats),
            self.kind == FlatKind::Pearson,
        )))
    }
}

/// Cosine of the bags of words (§2.9 baseline 1; raw counts).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BowCosineConfig {}

impl GeneSimilarity for BowCosineConfig {
    fn prepare<'a>(
        &self,
        input: &SimilarityInput<'a>,
    ) -> Result<Box<dyn SimilarityRows + 'a>, AlgoError> {
        Ok(Box::new(UnitRows::new(input.bow, None, false)))
    }
}

/// The NeuroBlast stand-in (§2.9 baseline 2, §8 item 4): Pearson correlation of the
/// co-registered coarse expression grids over the cells inside the brain, a
/// location-dependent global correlation.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoarseCorrelationConfig {}

impl GeneSimilarity for CoarseCorrelationConfig {
    fn prepare<'a>(
        &self,
        input: &SimilarityInput<'a>,
    ) -> Result<Box<dyn SimilarityRows + 'a>, AlgoError> {
        let cols = brain_cells(input.coarse);
        if cols.is_empty() {
            return Err(AlgoError::data(
                "no grid cell shows expression in half of the images",
            ));
        }
        Ok(Box::new(UnitRows::new(input.coarse, Some(&cols), true)))
    }
}

/// The grid cells inside the brain: those with expression (a non-zero value) in at least half
/// of the images. NeuroBlast correlates voxels of the registered brain; cells of the
/// expression-masked background (zero in nearly every image) would make every pair of images
/// correlate through the shared brain outline alone.
fn brain_cells(coarse: ArrayView2<'_, f64>) -> Vec<usize> {
    let n = coarse.nrows();
    (0..coarse.ncols())
        .filter(|&c| 2 * coarse.column(c).iter().filter(|v| **v != 0.0).count() >= n)
        .collect()
}

/// Gene-to-gene similarity row from image rows: gene `g`'s similarity to gene `h` is the
/// largest over their image pairs (§2.10 \[A\]); the query gene itself gets NaN.
pub fn gene_row(
    rows: &dyn SimilarityRows,
    query_images: &[usize],
    image_gene: &[u32],
    n_genes: usize,
    query: usize,
    scratch: &mut Vec<f64>,
) -> Vec<f64> {
    let mut out = vec![f64::NEG_INFINITY; n_genes];
    scratch.resize(image_gene.len(), 0.0);
    for &i in query_images {
        rows.row(i, scratch);
        for (j, &s) in scratch.iter().enumerate() {
            let g = image_gene[j] as usize;
            if s > out[g] {
                out[g] = s;
            }
        }
    }
    out[query] = f64::NAN;
    out
}

#[cfg(test)]
mod family_tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn go_sim_threshold_is_checked() {
        for bad in [0.0, 1.0, f64::NAN] {
            let e = GoSimConfig {
                threshold: bad,
                ..Default::default()
            }
            .check()
            .unwrap_err();
            assert_eq!(e.param, "threshold", "{bad}");
        }
        assert!(GoSimConfig::default().check().is_ok());
        assert!(BowCosineConfig::default().check().is_ok());
    }

    #[test]
    fn rows_match_the_pairwise_definitions() {
        let p = array![[0.9, 0.1, 0.6], [0.2, 0.7, 0.55], [0.0, 0.0, 0.0]];
        let bow = array![[3.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 2.0, 0.0]];
        let coarse = array![
            [0.0, 1.0, 2.0, 3.0],
            [3.0, 2.0, 1.0, 0.0],
            [1.0, 1.0, 2.0, 2.0]
        ];
        let ancestors = vec![vec![0], vec![0, 1], vec![0, 2], vec![0, 1, 2, 3]];
        let ic = vec![0.0, 0.3, 0.4, 1.0];
        let input = SimilarityInput {
            probabilities: p.view(),
            bow: bow.view(),
            coarse: coarse.view(),
            category_terms: &[1, 2, 3],
            ancestors: &ancestors,
            ic: &ic,
            neural: &[true, false, true],
        };
        let mut out = vec![0.0; 3];
        let flat = FlatSimConfig::default().prepare(&input).unwrap();
        flat.row(0, &mut out);
        for (j, got) in out.iter().enumerate() {
            let want = flat_sim(
                p.row(0).as_slice().unwrap(),
                p.row(j).as_slice().unwrap(),
                FlatKind::Cosine,
            );
            assert!((got - want).abs() < 1e-12);
        }
        let bc = BowCosineConfig {}.prepare(&input).unwrap();
        bc.row(1, &mut out);
        assert!((out[0] - cosine(&[3.0, 0.0, 1.0], &[1.0, 1.0, 1.0])).abs() < 1e-12);
        let nb = CoarseCorrelationConfig {}.prepare(&input).unwrap();
        nb.row(0, &mut out);
        assert!((out[1] + 1.0).abs() < 1e-12, "reversed grids correlate -1");
        assert!((out[0] - 1.0).abs() < 1e-12);
        // GO-sim over the neural categories 0 and 2 (terms 1 and 3).
        let gs = GoSimConfig::default().prepare(&input).unwrap();
        gs.row(0, &mut out);
        let rel = SimRel::new(&[1, 3], &ancestors, &ic);
        // Image 0 active: categories 0 and 2 (p ≥ 0.5); image 1: category 2 only.
        let want = rel.go_sim(&[0, 1], &[1], GoSimNorm::Active);
        assert!((out[1] - want).abs() < 1e-12);
        assert_eq!(out[2], 0.0, "no active category: 0");
        // Gene level: the best image pair; the query is NaN.
        let g = gene_row(&*flat, &[0, 1], &[0, 0, 1], 2, 0, &mut Vec::new());
        assert!(g[0].is_nan());
        assert_eq!(g[1], 0.0, "image 2 is all-zero: cosine 0");
    }
}
