//! Information-gain feature selection (LORETA spec §5.1) and the "full model trained over
//! pre-selected features" baseline (spec §4 B10): OASIS or LEGO on the top-`n` infogain
//! features, the fixed-memory competitors of LORETA in 20NG Figs. 2b/3c ("rank 1000/2000").
//!
//! # Infogain (Yang & Pedersen 1997, \[EXT\] formula of spec §5.1)
//!
//! "The number of bits gained for category prediction by knowing the presence or absence of
//! a term in a document": with `t` = "feature `j` is non-zero in the row" and the classes of
//! the rows' `labels`,
//!
//! ```text
//! IG(t) = -sum_c P(c) log2 P(c) + P(t) sum_c P(c|t) log2 P(c|t) + P(!t) sum_c P(c|!t) log2 P(c|!t)
//! ```
//!
//! (`0 log 0 = 0`), computed on the training rows only, `O(nnz + d C)`. [`infogain_ranking`]
//! orders the features by decreasing IG, ties by index; the order matters for LORETA's
//! truncated-identity start. [`select_features`] keeps the chosen columns *in the given
//! order* (new column `i` is old column `features[i]`): it is the preprocessing the harness
//! applies to train and test alike before any learner (LORETA included: `n = 500,000/k`
//! features), and the learner below applies it itself.
//!
//! # The learner
//!
//! [`InfogainSelectedConfig`] ranks the training features, keeps the top `n_features`,
//! trains OASIS (`W0 = I`, B5; its own step and variants, `dyad_oasis`) or LEGO (B6; the
//! step and thresholds of `dyad_metric_baselines::lego`, the same pair sampling) on the selected
//! columns, and reports a [`SelectedModel`] that scores rows in the *original* feature space
//! by dropping the other columns (so it is evaluated like every other ranker). The selection
//! runs before the solver clock starts (it is preprocessing, like tf-idf); the reported
//! model re-selects the candidates' columns on every call (`O(nnz)`, the order of the
//! scoring itself). (Wrapping the inner learners' reports instead is not possible: an
//! observer receives `&(dyn Scorer + 'static)`, so a wrapper cannot borrow the reported
//! model.)

use dyad_core::sampling::TripletSampler;
use dyad_core::{
    Control, CoreError, Flow, LabeledSet, Observer, Rng, Schedule, Scorer, SparseVec, Stepper,
    drive, steps,
};
use dyad_kernels::{AlgoError, Checked, ParamError, Ranker};
use dyad_metric_baselines::lego::{
    LegoConfig, Relation, Thresholds, distance_thresholds, lego_step,
};
use dyad_metric_baselines::metric::Mahalanobis;
use dyad_oasis::{BilinearModel, OasisConfig, StepScratch};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use sprs::{CsMat, CsVec, CsVecView};

/// The infogain (bits) of every feature of `set` for predicting its `labels`.
pub fn infogain(set: &LabeledSet) -> Vec<f64> {
    let (n, d, c) = (set.n(), set.dim(), set.n_classes());
    if n == 0 {
        return vec![0.0; d];
    }
    // df[j * c + class]: rows of `class` in which feature j is non-zero.
    let mut df = vec![0u32; d * c];
    let mut class_size = vec![0usize; c];
    for (i, row) in set.x.outer_iterator().enumerate() {
        let y = set.labels[i] as usize;
        class_size[y] += 1;
        for (&j, &v) in row.indices().iter().zip(row.data()) {
            if v != 0.0 {
                df[j * c + y] += 1;
            }
        }
    }
    let nf = n as f64;
    let plogp = |p: f64| if p > 0.0 { p * p.log2() } else { 0.0 };
    let prior: f64 = -class_size
        .iter()
        .map(|&s| plogp(s as f64 / nf))
        .sum::<f64>();
    (0..d)
        .map(|j| {
            let counts = &df[j * c..(j + 1) * c];
            let with: usize = counts.iter().map(|&v| v as usize).sum();
            let without = n - with;
            let mut ig = prior;
            if with > 0 {
                let w = with as f64;
                ig += (w / nf) * counts.iter().map(|&v| plogp(v as f64 / w)).sum::<f64>();
            }
            if without > 0 {
                let w = without as f64;
                ig += (w / nf)
                    * counts
                        .iter()
                        .zip(&class_size)
                        .map(|(&v, &s)| plogp((s - v as usize) as f64 / w))
                        .sum::<f64>();
            }
            ig
        })
        .collect()
}

/// Feature indices by decreasing infogain, ties by ascending index.
pub fn infogain_ranking(set: &LabeledSet) -> Vec<usize> {
    let ig = infogain(set);
    let mut order: Vec<usize> = (0..ig.len()).collect();
    order.sort_by(|&a, &b| ig[b].total_cmp(&ig[a]).then(a.cmp(&b)));
    order
}

/// The map from original columns to selected ones (`u32::MAX`: dropped).
fn column_map(dim: usize, features: &[usize]) -> Result<Vec<u32>, AlgoError> {
    let mut map = vec![u32::MAX; dim];
    for (new, &old) in features.iter().enumerate() {
        if old >= dim || map[old] != u32::MAX {
            return Err(AlgoError::data(format!(
                "feature selection: column {old} out of range or repeated (dimension {dim})"
            )));
        }
        map[old] = new as u32;
    }
    Ok(map)
}

/// One row restricted to the mapped columns, re-sorted by new index.
fn map_row(row: CsVecView<'_, f64>, map: &[u32], out: &mut Vec<(usize, f64)>) {
    out.clear();
    for (&j, &v) in row.indices().iter().zip(row.data()) {
        if let Some(&m) = map.get(j)
            && m != u32::MAX
        {
            out.push((m as usize, v));
        }
    }
    out.sort_unstable_by_key(|&(i, _)| i);
}

fn map_matrix(x: &CsMat<f64>, map: &[u32], width: usize) -> CsMat<f64> {
    let mut indptr = Vec::with_capacity(x.rows() + 1);
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    let mut buf = Vec::new();
    indptr.push(0);
    for row in x.outer_iterator() {
        map_row(row, map, &mut buf);
        for &(i, v) in &buf {
            indices.push(i);
            data.push(v);
        }
        indptr.push(indices.len());
    }
    CsMat::new((x.rows(), width), indptr, indices, data)
}

/// `set` restricted to the columns `features`, in that order (new column `i` is old column
/// `features[i]`); labels, names, partition and relevance are kept.
pub fn select_features(set: &LabeledSet, features: &[usize]) -> Result<LabeledSet, AlgoError> {
    let map = column_map(set.dim(), features)?;
    let mut out = set.clone();
    out.x = map_matrix(&set.x, &map, features.len());
    Ok(out)
}

/// The full-rank model trained on the selected features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FullModel {
    Oasis(OasisConfig),
    Lego(LegoConfig),
}

impl Default for FullModel {
    fn default() -> Self {
        FullModel::Oasis(OasisConfig::default())
    }
}

fn default_n_features() -> usize {
    1000
}

/// Parameters of the feature-selection baseline (B10).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InfogainSelectedConfig {
    /// Features kept (1000: the memory of LORETA at `nk = 500,000`; the spec also runs 2000).
    /// More than the data has keeps them all.
    #[serde(default = "default_n_features")]
    pub n_features: usize,
    /// The learner on the selected features (default OASIS with its defaults).
    #[serde(default)]
    pub model: FullModel,
}

impl Default for InfogainSelectedConfig {
    fn default() -> Self {
        Self {
            n_features: default_n_features(),
            model: FullModel::default(),
        }
    }
}

/// The full model's parameters are named under `model.oasis` or `model.lego`.
impl Checked for InfogainSelectedConfig {
    fn check(&self) -> Result<(), ParamError> {
        dyad_kernels::params::at_least_one("n_features", self.n_features as u64)?;
        match &self.model {
            FullModel::Oasis(c) => c.check().map_err(|e| e.under("model.oasis")),
            FullModel::Lego(c) => c.check().map_err(|e| e.under("model.lego")),
        }
    }
}

/// A model trained on selected columns, scoring rows of the original space (the other
/// columns are dropped from every query and candidate).
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedModel<M> {
    /// The model over the selected columns.
    pub inner: M,
    map: Vec<u32>,
    width: usize,
}

impl<M> SelectedModel<M> {
    /// `inner` over the columns `features` (in that order) of a `dim`-dimensional space.
    pub fn new(inner: M, dim: usize, features: &[usize]) -> Result<Self, AlgoError> {
        Ok(Self {
            inner,
            map: column_map(dim, features)?,
            width: features.len(),
        })
    }

    fn query(&self, q: CsVecView<'_, f64>) -> CsVec<f64> {
        let mut buf = Vec::new();
        map_row(q, &self.map, &mut buf);
        let (i, v): (Vec<usize>, Vec<f64>) = buf.into_iter().unzip();
        CsVec::new(self.width, i, v)
    }

    fn with<N>(&self, inner: N) -> SelectedModel<N> {
        SelectedModel {
            inner,
            map: self.map.clone(),
            width: self.width,
        }
    }
}

impl<M: Scorer> Scorer for SelectedModel<M> {
    fn score(&self, query: CsVecView<'_, f64>, candidates: &CsMat<f64>, out: &mut [f64]) {
        let c = map_matrix(candidates, &self.map, self.width);
        self.inner.score(self.query(query).view(), &c, out);
    }

    fn candidate_terms(&self, candidates: &CsMat<f64>) -> Vec<f64> {
        self.inner
            .candidate_terms(&map_matrix(candidates, &self.map, self.width))
    }

    fn score_with_terms(
        &self,
        query: CsVecView<'_, f64>,
        candidates: &CsMat<f64>,
        terms: &[f64],
        out: &mut [f64],
    ) {
        let c = map_matrix(candidates, &self.map, self.width);
        self.inner
            .score_with_terms(self.query(query).view(), &c, terms, out);
    }

    fn statistics(&self) -> Vec<(&'static str, f64)> {
        let mut s = self.inner.statistics();
        s.push(("selected_features", self.width as f64));
        s
    }
}

/// OASIS on the selected columns: its own step and reported model (`dyad_oasis`).
struct OasisRun<'a> {
    config: &'a OasisConfig,
    train: &'a LabeledSet,
    sampler: TripletSampler,
    rng: &'a mut Rng,
    model: SelectedModel<BilinearModel>,
    scratch: StepScratch,
}

impl Stepper for OasisRun<'_> {
    type Model = dyn Scorer;
    type Error = AlgoError;

    fn step(&mut self, step: u64) -> Result<Flow, AlgoError> {
        let Self {
            config,
            train,
            sampler,
            rng,
            model,
            scratch,
        } = self;
        config.step(&mut model.inner, train, sampler, rng, scratch, step)?;
        Ok(Flow::Continue)
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, AlgoError> {
        Ok(match self.config.reported(&self.model.inner)? {
            Some(r) => show(&self.model.with(r)),
            None => show(&self.model),
        })
    }
}

impl Ranker for InfogainSelectedConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer,
    ) -> Result<(), AlgoError> {
        self.check()?;
        if train.n() == 0 || train.dim() == 0 {
            return Err(AlgoError::Data(CoreError::Invalid(
                "infogain selection: empty training set".into(),
            )));
        }
        // Preprocessing, before the solver clock starts.
        let mut features = infogain_ranking(train);
        features.truncate(self.n_features);
        let selected = select_features(train, &features)?;
        let (dim, width) = (train.dim(), features.len());
        let sampler = TripletSampler::new(&selected)?;
        match &self.model {
            FullModel::Oasis(config) => {
                if config.psd == dyad_oasis::Psd::Every(0) {
                    return Err(AlgoError::param(
                        "model.oasis.psd.every",
                        "must be at least 1, got 0",
                    ));
                }
                drive(schedule, obs, || {
                    Ok(OasisRun {
                        config,
                        train: &selected,
                        sampler,
                        rng,
                        model: SelectedModel::new(
                            BilinearModel::identity_with(width, config.precision),
                            dim,
                            &features,
                        )?,
                        scratch: StepScratch::default(),
                    })
                })?;
            }
            FullModel::Lego(config) => {
                // The loop of `dyad_metric_baselines::lego` (pair = query with its positive or its
                // negative by a fair coin; hinged LEGO step), on the selected columns.
                struct State<'r> {
                    model: SelectedModel<Mahalanobis>,
                    z: SparseVec,
                    scratch: Vec<f64>,
                    thresholds: Thresholds,
                    rng: &'r mut Rng,
                }
                let row = |i: usize| selected.x.outer_view(i).expect("sampled row in range");
                let step = |s: &mut State<'_>, _: u64| {
                    let t = sampler.sample(s.rng);
                    let (other, relation) = if s.rng.random::<bool>() {
                        (t.positive, Relation::Similar)
                    } else {
                        (t.negative, Relation::Dissimilar)
                    };
                    s.z.set_difference(row(t.query), row(other));
                    lego_step(
                        &mut s.model.inner,
                        &s.z,
                        relation,
                        s.thresholds,
                        config.eta,
                        &mut s.scratch,
                    )?;
                    Ok::<_, AlgoError>(Flow::Continue)
                };
                drive(schedule, obs, || {
                    let thresholds = distance_thresholds(
                        &selected,
                        config.lower_percentile,
                        config.upper_percentile,
                        config.threshold_pairs,
                        rng,
                    )?;
                    let state = State {
                        model: SelectedModel::new(Mahalanobis::identity(width), dim, &features)?,
                        z: SparseVec::default(),
                        scratch: Vec::new(),
                        thresholds,
                        rng,
                    };
                    Ok(steps(state, step, |s: &State<'_>| -> &dyn Scorer {
                        &s.model
                    }))
                })?;
            }
        }
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }

    /// The full model's on the selected features.
    fn memory(&self, rows: usize, dim: usize) -> Option<u64> {
        let width = self.n_features.min(dim);
        match &self.model {
            FullModel::Oasis(c) => c.memory(rows, width),
            FullModel::Lego(c) => c.memory(rows, width),
        }
    }

    fn statistics(&self) -> &'static [&'static str] {
        match &self.model {
            FullModel::Oasis(_) => SELECTED_OASIS_STATISTICS,
            FullModel::Lego(_) => &["selected_features"],
        }
    }
}

/// OASIS's statistics ([`BilinearModel::STATISTICS`]) and the selected width.
const SELECTED_OASIS_STATISTICS: &[&str] = &[
    "symmetry_index",
    "symmetry_index_spectral",
    "symmetry_index_minus_identity",
    "model_bytes",
    "selected_features",
];

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::{Record, nuisance_data};

    #[test]
    fn infogain_by_hand() {
        // 4 rows, 2 balanced classes. Feature 0: present exactly in class 0 (1 bit).
        // Feature 1: present everywhere (0 bits). Feature 2: present in one row of each class
        // (0 bits). Feature 3: present in rows 0, 1, 2 (classes 0, 0, 1).
        let rows = vec![
            vec![1.0, 1.0, 1.0, 1.0],
            vec![1.0, 1.0, 0.0, 1.0],
            vec![0.0, 1.0, 1.0, 1.0],
            vec![0.0, 1.0, 0.0, 0.0],
        ];
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 0, 1, 1], 2);
        let ig = infogain(&set);
        assert!((ig[0] - 1.0).abs() < 1e-12);
        assert!(ig[1].abs() < 1e-12 && ig[2].abs() < 1e-12);
        // IG = 1 + 3/4 (2/3 log 2/3 + 1/3 log 1/3) + 1/4 (0 + 1 log 1).
        let h3 = (2.0f64 / 3.0) * (2.0f64 / 3.0).log2() + (1.0 / 3.0) * (1.0f64 / 3.0).log2();
        assert!((ig[3] - (1.0 + 0.75 * h3)).abs() < 1e-12);
        assert_eq!(infogain_ranking(&set), vec![0, 3, 1, 2]);
        let sel = select_features(&set, &[3, 0]).unwrap();
        assert_eq!(sel.dim(), 2);
        let dense: Vec<Vec<f64>> = (0..4)
            .map(|i| sel.x.outer_view(i).unwrap().to_dense().to_vec())
            .collect();
        assert_eq!(
            dense,
            vec![
                vec![1.0, 1.0],
                vec![1.0, 1.0],
                vec![1.0, 0.0],
                vec![0.0, 0.0]
            ]
        );
        assert!(select_features(&set, &[0, 0]).is_err());
        assert!(select_features(&set, &[9]).is_err());
    }

    #[test]
    fn selecting_the_informative_features_makes_oasis_and_lego_rank_well() {
        // The nuisance problem: dimensions 0/1 carry the class, 2/3 a strong nuisance, the
        // rest weak noise. Infogain puts 0 and 1 first; two features suffice.
        let (train, test) = (nuisance_data(60, 20, 1), nuisance_data(40, 20, 2));
        let ranking = infogain_ranking(&train);
        let mut top: Vec<usize> = ranking[..2].to_vec();
        top.sort_unstable();
        assert_eq!(top, vec![0, 1]);
        for model in [
            FullModel::Oasis(OasisConfig::default()),
            FullModel::Lego(LegoConfig::default()),
        ] {
            let mut obs = Record::new(test.clone());
            InfogainSelectedConfig {
                n_features: 2,
                model: model.clone(),
            }
            .fit(
                &train,
                &Schedule::new(vec![0, 200]),
                &mut seeded(3),
                &mut obs,
            )
            .unwrap();
            // Already at step 0 (W = I on the two class features) the ranking is perfect.
            assert!(
                obs.seen.iter().all(|(_, m)| *m > 0.99),
                "{model:?}: {:?}",
                obs.seen
            );
        }
        let e = InfogainSelectedConfig {
            n_features: 0,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "n_features");
        let e = InfogainSelectedConfig {
            model: FullModel::Oasis(OasisConfig {
                c: -1.0,
                ..Default::default()
            }),
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "model.oasis.c");
    }
}
