//! The class-centroid label ranker: the score of label `l` for an example `x` is the cosine
//! of `x` and the mean of the training rows carrying `l`,
//!
//! ```text
//! s_l(x) = <x, c_l> / (||x|| ||c_l||),   c_l = (1 / |R_l|) Σ_{i ∈ R_l} x_i,
//! ```
//!
//! the nearest-class-mean rule of information retrieval (Rocchio) applied to every label of a
//! multi-label set. It has no parameters and no steps: the simplest learned baseline of the
//! label-ranking task (it uses the training labels, unlike chance), against which LORETA's
//! ImageNet models are compared. A label no training row carries has a zero centroid and
//! scores 0 for every example; an all-zero example scores 0 for every label.
//!
//! Cost: one pass over the training non-zeros to form the `labels x d` centroids (dense), and
//! `O(labels · nnz(x))` per scored example.

use dyad_core::{LabelScorer, LabeledSet, Observer, Rng, Schedule, SolverClock};
use dyad_kernels::{AlgoError, Checked, LabelRanker, ParamError, n_labels, row_labels};
use serde::{Deserialize, Serialize};
use sprs::CsVecView;

/// The class-centroid ranker has no parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CentroidConfig {}

impl Checked for CentroidConfig {
    fn check(&self) -> Result<(), ParamError> {
        Ok(())
    }
}

/// Unit-norm label centroids, `labels x d`, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Centroids {
    dim: usize,
    unit: Vec<f64>,
    labels: usize,
}

impl Centroids {
    /// The centroids of `train`'s labels.
    pub fn fit(train: &LabeledSet) -> Self {
        let (labels, dim) = (n_labels(train), train.dim());
        let mut sum = vec![0.0; labels * dim];
        let mut count = vec![0usize; labels];
        for (i, row) in train.x.outer_iterator().enumerate() {
            for &l in row_labels(train, i) {
                let l = l as usize;
                count[l] += 1;
                let c = &mut sum[l * dim..(l + 1) * dim];
                for (&j, &v) in row.indices().iter().zip(row.data()) {
                    c[j] += v;
                }
            }
        }
        for l in 0..labels {
            let c = &mut sum[l * dim..(l + 1) * dim];
            // The mean's direction is the sum's: normalise the sum directly.
            let norm = c.iter().map(|v| v * v).sum::<f64>().sqrt();
            if count[l] > 0 && norm > 0.0 {
                c.iter_mut().for_each(|v| *v /= norm);
            }
        }
        Self {
            dim,
            unit: sum,
            labels,
        }
    }
}

impl LabelScorer for Centroids {
    fn n_labels(&self) -> usize {
        self.labels
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn score_labels(&self, query: CsVecView<'_, f64>, out: &mut [f64]) {
        let norm = query.data().iter().map(|v| v * v).sum::<f64>().sqrt();
        for (l, o) in out.iter_mut().enumerate().take(self.labels) {
            let c = &self.unit[l * self.dim..(l + 1) * self.dim];
            let dot: f64 = query
                .indices()
                .iter()
                .zip(query.data())
                .map(|(&j, &v)| c[j] * v)
                .sum();
            *o = if norm > 0.0 { dot / norm } else { 0.0 };
        }
    }
}

impl LabelRanker for CentroidConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        _schedule: &Schedule,
        _rng: &mut Rng,
        obs: &mut dyn Observer<dyn LabelScorer>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let mut clock = SolverClock::start();
        let model = Centroids::fit(train);
        clock.report(0, true, &model as &dyn LabelScorer, obs);
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        false
    }
}

/// The `centroid` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "centroid",
    label: "class centroid",
    description: "scores each label by the cosine of the example and the label's training centroid (nearest class mean)",
    family: dyad_kernels::solver::LABEL_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::label_ranker::<CentroidConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::{Checkpoint, Control};

    #[test]
    fn scores_are_cosines_with_hand_computed_centroids() {
        // Rows (label lists): [1,0,0] {0}, [1,1,0] {0,1}, [0,0,2] {1}.
        let rows = vec![
            vec![1.0, 0.0, 0.0],
            vec![1.0, 1.0, 0.0],
            vec![0.0, 0.0, 2.0],
        ];
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 0, 1], 2)
            .with_relevance(vec![vec![0], vec![0, 1], vec![1]])
            .unwrap();
        let m = Centroids::fit(&set);
        assert_eq!(m.n_labels(), 2);
        // c_0 ∝ [2, 1, 0], c_1 ∝ [1, 1, 2].
        let q = sprs::CsVec::new(3, vec![0], vec![3.0]);
        let mut out = vec![0.0; 2];
        m.score_labels(q.view(), &mut out);
        assert!((out[0] - 2.0 / 5f64.sqrt()).abs() < 1e-12, "{out:?}");
        assert!((out[1] - 1.0 / 6f64.sqrt()).abs() < 1e-12, "{out:?}");
        // An empty query scores 0 everywhere.
        let empty = sprs::CsVec::<f64>::new(3, vec![], vec![]);
        m.score_labels(empty.view(), &mut out);
        assert_eq!(out, vec![0.0, 0.0]);
    }

    struct Best(usize);
    impl Observer<dyn LabelScorer> for Best {
        fn checkpoint(&mut self, at: Checkpoint, m: &dyn LabelScorer) -> Control {
            assert!(at.last && at.step == 0);
            let q = sprs::CsVec::new(2, vec![1], vec![1.0]);
            let mut out = vec![0.0; m.n_labels()];
            m.score_labels(q.view(), &mut out);
            self.0 = (0..out.len())
                .max_by(|&a, &b| out[a].total_cmp(&out[b]))
                .unwrap();
            Control::Continue
        }
    }

    #[test]
    fn single_label_data_ranks_the_nearest_class_first() {
        let rows = vec![
            vec![1.0, 0.1],
            vec![0.9, 0.0],
            vec![0.1, 1.0],
            vec![0.0, 0.8],
        ];
        let set = LabeledSet::from_dense_rows(&rows, vec![0, 0, 1, 1], 2);
        let mut obs = Best(usize::MAX);
        CentroidConfig {}
            .fit(
                &set,
                &Schedule::new(vec![0]),
                &mut dyad_core::seeded(1),
                &mut obs,
            )
            .unwrap();
        assert_eq!(obs.0, 1);
    }
}
