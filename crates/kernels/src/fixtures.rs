//! Small seeded problems and observers shared by the tests and benchmarks of every learner:
//! one place for toy data, so that a new learner is tested on the problems the others are.

use dyad_core::metrics::evaluate_retrieval;
use dyad_core::{Checkpoint, Control, LabeledSet, Observer, Rng, Scorer, seeded};
use rand::Rng as _;
use rand::seq::index::sample;
use sprs::{CsVec, TriMat};

/// The nuisance problem of the OASIS tests: two classes told apart by dimensions 0/1, buried
/// under a strong class-independent nuisance in dimension 2 or 3; `extra` further dimensions
/// carry weak noise (so `d` can exceed `n`). Rows are L2-normalised. The identity ranks mostly
/// by the nuisance; a learned similarity that ignores dimensions 2 and 3 ranks by class.
pub fn nuisance_data(n: usize, extra: usize, seed: u64) -> LabeledSet {
    let mut rng = seeded(seed);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let class = i % 2;
            let mut r = vec![0.0; 4 + extra];
            r[class] = 0.3 + 0.1 * rng.random::<f64>();
            r[2 + rng.random_range(0..2)] = 1.0 + rng.random::<f64>();
            for v in &mut r[4..] {
                *v = 0.02 * rng.random::<f64>();
            }
            r
        })
        .collect();
    let mut s = LabeledSet::from_dense_rows(&rows, (0..n).map(|i| (i % 2) as u32).collect(), 2);
    s.l2_normalize_rows();
    s
}

/// Random dense rows in `[-1, 1]` with `classes` balanced labels (`i % classes`).
pub fn random_data(n: usize, d: usize, classes: usize, seed: u64) -> LabeledSet {
    let mut rng = seeded(seed);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..d).map(|_| rng.random_range(-1.0..1.0)).collect())
        .collect();
    let labels = (0..n).map(|i| (i % classes) as u32).collect();
    LabeledSet::from_dense_rows(&rows, labels, classes)
}

/// A Caltech-like bag of visual words: `n` rows in `classes` classes (`i % classes`), each
/// mixing half of its class prototype's `nnz` words with `nnz / 2` random ones, `nnz`
/// non-zeros at most, L2-normalised.
pub fn sparse_classes(n: usize, d: usize, classes: usize, nnz: usize, rng: &mut Rng) -> LabeledSet {
    let protos: Vec<Vec<usize>> = (0..classes)
        .map(|_| sample(rng, d, nnz).into_vec())
        .collect();
    let mut t = TriMat::new((n, d));
    let labels: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    for (i, &c) in labels.iter().enumerate() {
        let mut row = vec![0.0; d];
        for &j in &protos[c as usize][..nnz / 2] {
            row[j] += rng.random_range(0.5..1.0);
        }
        for j in sample(rng, d, nnz - nnz / 2) {
            row[j] += rng.random_range(0.0..1.0);
        }
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        for (j, v) in row.into_iter().enumerate() {
            if v != 0.0 {
                t.add_triplet(i, j, v / norm);
            }
        }
    }
    let names = (0..classes).map(|c| format!("c{c}")).collect();
    LabeledSet::new(t.to_csr(), labels, names, None).expect("consistent")
}

/// MNIST-shaped rows: 28 x 28 "images" (`d = 784`) whose non-zeros lie in the central
/// 20 x 20 window, as MNIST's digits do. `n` rows in `classes` classes (`i % classes`); each
/// class has a prototype of 150 window pixels, and each row takes 100 of its prototype's
/// pixels (intensity in `[0.3, 1)`) and 50 window pixels at random (in `[0, 1)`): about 140
/// non-zeros over an index span of about 550, L2-normalised.
pub fn mnist_like(n: usize, classes: usize, rng: &mut Rng) -> LabeledSet {
    mnist_like_with(n, classes, 100, 50, rng)
}

/// [`mnist_like`] with `from_proto` pixels of the class prototype and `random` window
/// pixels per row (a harder problem when `from_proto` is small: the untrained dot product
/// ranks less well).
pub fn mnist_like_with(
    n: usize,
    classes: usize,
    from_proto: usize,
    random: usize,
    rng: &mut Rng,
) -> LabeledSet {
    const SIDE: usize = 28;
    let window: Vec<usize> = (4..24)
        .flat_map(|r| (4..24).map(move |c| r * SIDE + c))
        .collect();
    let protos: Vec<Vec<usize>> = (0..classes)
        .map(|_| sample(rng, window.len(), 150).into_vec())
        .collect();
    let mut t = TriMat::new((n, SIDE * SIDE));
    let labels: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    for (i, &c) in labels.iter().enumerate() {
        let mut row = vec![0.0; SIDE * SIDE];
        let proto = &protos[c as usize];
        for k in sample(rng, proto.len(), from_proto) {
            row[window[proto[k]]] = rng.random_range(0.3..1.0);
        }
        for k in sample(rng, window.len(), random) {
            row[window[k]] = rng.random_range(0.0..1.0);
        }
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        for (j, v) in row.into_iter().enumerate() {
            if v != 0.0 {
                t.add_triplet(i, j, v / norm);
            }
        }
    }
    let names = (0..classes).map(|c| format!("c{c}")).collect();
    LabeledSet::new(t.to_csr(), labels, names, None).expect("consistent")
}

/// A random unit-norm sparse vector with `nnz` non-zeros in `[0, 1)` before scaling.
pub fn random_sparse(d: usize, nnz: usize, rng: &mut Rng) -> CsVec<f64> {
    let mut idx = sample(rng, d, nnz).into_vec();
    idx.sort_unstable();
    let vals: Vec<f64> = (0..nnz).map(|_| rng.random_range(0.0..1.0)).collect();
    let norm = vals.iter().map(|v| v * v).sum::<f64>().sqrt();
    CsVec::new(d, idx, vals.into_iter().map(|v| v / norm).collect())
}

/// Records every checkpoint with the mAP of the reported model on `test` (ranked against
/// itself, each query excluded).
pub struct Record {
    pub test: LabeledSet,
    pub seen: Vec<(Checkpoint, f64)>,
}

impl Record {
    pub fn new(test: LabeledSet) -> Self {
        Self {
            test,
            seen: Vec::new(),
        }
    }
}

impl Observer for Record {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control {
        let r = evaluate_retrieval(model, &self.test, &self.test, true, 5);
        self.seen.push((at, r.map));
        Control::Continue
    }
}

/// Captures every score of the reported models, bit for bit (for exact comparisons).
pub struct Scores(pub LabeledSet, pub Vec<u64>);

impl Observer for Scores {
    fn checkpoint(&mut self, _: Checkpoint, model: &dyn Scorer) -> Control {
        let mut out = vec![0.0; self.0.n()];
        for q in 0..self.0.n() {
            model.score(self.0.x.outer_view(q).unwrap(), &self.0.x, &mut out);
            self.1.extend(out.iter().map(|v| v.to_bits()));
        }
        Control::Continue
    }
}

// ---- givens family fixtures ----

/// Records every checkpoint with a copy of the reported model (any family's model type).
pub struct Models<M> {
    pub seen: Vec<(Checkpoint, M)>,
}

impl<M> Default for Models<M> {
    fn default() -> Self {
        Self { seen: Vec::new() }
    }
}

impl<M: Clone> Observer<M> for Models<M> {
    fn checkpoint(&mut self, at: Checkpoint, model: &M) -> Control {
        self.seen.push((at, model.clone()));
        Control::Continue
    }
}

/// Data with planted sparse principal components (see [`planted_sparse_pca`]).
pub struct PlantedSpca {
    /// `d × n`: rows = variables, columns = samples.
    pub data: ndarray::Array2<f64>,
    /// The planted unit-norm loadings `w_r` (disjoint supports), strongest first.
    pub loadings: Vec<ndarray::Array1<f64>>,
}

/// `A = Σ_r s_r w_r v_rᵀ + noise·E`, `d × n`: `r` loadings `w_r` on disjoint random supports of
/// `support` variables with entries `±1/√support`, unit-norm Gaussian sample scores `v_r`,
/// strengths `s_r = 10/(r+1)`, Gaussian noise `E`.
pub fn planted_sparse_pca(
    d: usize,
    n: usize,
    r: usize,
    support: usize,
    noise: f64,
    seed: u64,
) -> PlantedSpca {
    use crate::sampling::normal;
    assert!(r * support <= d);
    let mut rng = seeded(seed);
    let vars = sample(&mut rng, d, r * support).into_vec();
    let mut data = ndarray::Array2::from_shape_fn((d, n), |_| 0.0);
    let mut loadings = Vec::new();
    for c in 0..r {
        let mut w = ndarray::Array1::zeros(d);
        for &k in &vars[c * support..(c + 1) * support] {
            w[k] = if rng.random::<bool>() { 1.0 } else { -1.0 } / (support as f64).sqrt();
        }
        let mut v: Vec<f64> = (0..n).map(|_| normal(&mut rng)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        let s = 10.0 / (c + 1) as f64;
        for k in 0..d {
            if w[k] != 0.0 {
                for (l, &vl) in v.iter().enumerate() {
                    data[[k, l]] += s * w[k] * vl;
                }
            }
        }
        loadings.push(w);
    }
    data.mapv_inplace(|x| x + noise * normal(&mut rng));
    PlantedSpca { data, loadings }
}

// ---- loreta family fixtures ----

/// A small label-ranking problem in the shape of the ImageNet task (LORETA spec §3.2): six
/// leaf labels (`0..6`) in two groups whose ancestors are labels 6 and 7. Row `i` has leaf
/// `i % 6` as its class and relevance `[leaf, 6 + leaf / 3]`. Each leaf owns four of the `d`
/// features (`d >= 30`) and each group two, at the same positions for every seed; a row
/// mixes its leaf's and group's features with three random noise features, L2-normalised.
/// Class names cover all eight labels.
pub fn multilabel_data(n: usize, d: usize, seed: u64) -> LabeledSet {
    assert!(d >= 30, "multilabel_data needs d >= 30");
    let mut rng = seeded(seed);
    let mut t = TriMat::new((n, d));
    let mut relevance = Vec::with_capacity(n);
    let labels: Vec<u32> = (0..n).map(|i| (i % 6) as u32).collect();
    for (i, &leaf) in labels.iter().enumerate() {
        let group = leaf as usize / 3;
        let mut row = vec![0.0; d];
        // Leaf features 4 leaf .. 4 leaf + 4 placed from the end, group features 24 + 2 g.
        for j in 0..4 {
            row[d - 1 - (4 * leaf as usize + j)] += rng.random_range(0.5..1.0);
        }
        for j in 0..2 {
            row[d - 25 - (2 * group + j)] += rng.random_range(0.3..0.6);
        }
        for j in sample(&mut rng, d, 3) {
            row[j] += rng.random_range(0.0..0.5);
        }
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        for (j, v) in row.into_iter().enumerate() {
            if v != 0.0 {
                t.add_triplet(i, j, v / norm);
            }
        }
        relevance.push(vec![leaf, 6 + group as u32]);
    }
    let names = (0..8).map(|c| format!("label{c}")).collect();
    LabeledSet::new(t.to_csr(), labels, names, None)
        .expect("consistent")
        .with_relevance(relevance)
        .expect("one list per row")
}

// ---- funcish classify fixtures ----

/// A bag-of-words stand-in for the FuncISH classifiers: `n` images with `levels` levels of
/// `k` word counts plus one zero-descriptor count per level (`D = levels·(k+1)`, the layout of
/// spec §2.4), and `n_cat` categories of `15..=max(15, n/5)` positive images each. Counts are
/// a random base rate per word times a uniform draw, rounded; category `c` adds `strength`
/// times a uniform draw to 3 words of its own on its positives (0 = no signal, a null
/// problem). Returns the `n × D` counts and the positives of every category.
pub fn bow_categories(
    n: usize,
    levels: usize,
    k: usize,
    n_cat: usize,
    strength: f64,
    seed: u64,
) -> (ndarray::Array2<f64>, Vec<Vec<usize>>) {
    let mut rng = seeded(seed);
    let d = levels * (k + 1);
    let rate: Vec<f64> = (0..d).map(|_| 1.0 + 9.0 * rng.random::<f64>()).collect();
    let mut x =
        ndarray::Array2::from_shape_fn((n, d), |(_, j)| (rate[j] * rng.random::<f64>()).round());
    let hi = (n / 5).max(15).min(n);
    let mut positives = Vec::with_capacity(n_cat);
    for _ in 0..n_cat {
        let size = rng.random_range(15.min(n)..=hi);
        let mut pos = sample(&mut rng, n, size).into_vec();
        pos.sort_unstable();
        let words = sample(&mut rng, levels * k, 3).into_vec();
        for &i in &pos {
            for &j in &words {
                x[[i, j]] += (strength * rng.random::<f64>()).round();
            }
        }
        positives.push(pos);
    }
    (x, positives)
}
