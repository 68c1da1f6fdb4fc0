//! LORETA-1 on the multilabel ranking hinge (spec §3.2, the ImageNet experiments), and the
//! evaluation of a label ranking.
//!
//! `W = A B^T` is `L x d` (one linear scorer per label; `B^T` projects an image to `k`
//! dimensions, `A` holds the `L` label models there). Each step draws an image `p` uniformly
//! among the training rows that have a relevant and a non-relevant label, scores every
//! label (`A (B^T p)`, `O(nnz(p) k + L k)`), and, when the hinge
//! `sum_i [(Wp)_ybar - (Wp)_{y_i} + 1]_+` is positive, takes the LORETA-1 step with
//! `g1 = eta u` (over labels, `u = sum_j e_{i_j} - d e_ybar`) and `g2 = p`: `O((L + d)k)`.
//! Ties in `ybar` go to the lowest label index (spec §3.2 \[CHOICE\]); they are broken at
//! random only by the zero-matrix initialisation.

use super::loreta1::{Loreta1, ScaledSparse};
use super::losses::{label_count, multilabel_hinge, relevant_labels, usable_rows};
use super::triplet::{check_common, default_eta, default_rank, default_std};
use super::{Init, InitSpec, LabelRanker, LabelScorer, Safeguards, check_rank, step_size};
use dyad_core::metrics::{QueryRanking, Retrieval, rank_query, summarize};
use dyad_core::{
    Control, CoreError, Flow, LabeledSet, Observer, Rng, Schedule, SparseVec, Stepper, drive,
};
use dyad_kernels::{AlgoError, Checked, ParamError};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Parameters of LORETA-1 on the multilabel hinge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoretaLabelsConfig {
    /// Rank `k` (10; the spec's grid is 10, 50, 150, 250, 400).
    #[serde(default = "default_rank")]
    pub rank: usize,
    /// Step size `eta` (0.1; chosen by the harness, spec §2.9).
    #[serde(default = "default_eta")]
    pub eta: f64,
    /// Optional decay `eta_t = eta / (1 + (t-1)/eta_t0)`.
    #[serde(default)]
    pub eta_t0: Option<f64>,
    /// `identity` (the zero-padded identity), `zero` or `gaussian` (spec §2.8: all three are
    /// compared on ImageNet).
    #[serde(default)]
    pub init: Init,
    /// Standard deviation of the Gaussian initialisation (1).
    #[serde(default = "default_std")]
    pub init_std: f64,
    /// Subgradients summed by the zero initialisation (none: `2k`).
    #[serde(default)]
    pub zero_init_updates: Option<usize>,
    #[serde(default)]
    pub safeguards: Safeguards,
}

impl Default for LoretaLabelsConfig {
    fn default() -> Self {
        Self {
            rank: default_rank(),
            eta: default_eta(),
            eta_t0: None,
            init: Init::Identity,
            init_std: default_std(),
            zero_init_updates: None,
            safeguards: Safeguards::default(),
        }
    }
}

impl LoretaLabelsConfig {
    fn init_spec(&self) -> InitSpec {
        InitSpec {
            init: self.init,
            std: self.init_std,
            zero_updates: self.zero_init_updates,
        }
    }
}

impl Checked for LoretaLabelsConfig {
    fn check(&self) -> Result<(), ParamError> {
        check_common(self.rank, self.eta, self.eta_t0, &self.init_spec())?;
        self.safeguards.check().map_err(|e| e.under("safeguards"))
    }
}

/// The rows a label learner trains on, and `L`; errors when there are none.
pub(crate) fn label_problem(train: &LabeledSet) -> Result<(usize, Vec<usize>), AlgoError> {
    let n_labels = label_count(train);
    let rows = usable_rows(train, n_labels);
    if rows.is_empty() {
        return Err(AlgoError::Data(CoreError::Invalid(
            "no training row has both a relevant and a non-relevant label".into(),
        )));
    }
    Ok((n_labels, rows))
}

/// One image drawn for a label learner: its row and the hinge of its scores, with `u` and
/// `scores` filled. `None` when the loss is zero. `random_ties`: break ties in `ybar` at
/// random (for a model that is still exactly zero, spec §3.2 \[CHOICE\]).
pub(crate) fn draw_and_hinge<'t>(
    train: &'t LabeledSet,
    rows: &[usize],
    mut score: impl FnMut(sprs::CsVecView<'_, f64>, &mut [f64]),
    scores: &mut [f64],
    u: &mut SparseVec,
    rng: &mut Rng,
    random_ties: bool,
) -> Result<Option<(usize, sprs::CsVecView<'t, f64>, f64)>, AlgoError> {
    let i = rows[rng.random_range(0..rows.len())];
    let p = train.x.outer_view(i).expect("row in range");
    score(p, scores);
    let ties = if random_ties { Some(&mut *rng) } else { None };
    let Some(h) = multilabel_hinge(scores, relevant_labels(train, i), ties, u) else {
        return Ok(None);
    };
    if !h.loss.is_finite() {
        return Err(AlgoError::Numerical(format!(
            "non-finite multilabel hinge {}",
            h.loss
        )));
    }
    Ok((h.loss > 0.0).then_some((i, p, h.loss)))
}

impl LabelRanker for LoretaLabelsConfig {
    fn fit(
        &self,
        train: &LabeledSet,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<dyn LabelScorer>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        let (n_labels, rows) = label_problem(train)?;
        check_rank("LORETA (labels)", None, self.rank, n_labels, train.dim())?;
        struct Run<'a, 'r> {
            config: &'a LoretaLabelsConfig,
            train: &'a LabeledSet,
            rows: &'a [usize],
            state: Loreta1,
            scores: Vec<f64>,
            u: SparseVec,
            rng: &'r mut Rng,
        }
        impl Stepper for Run<'_, '_> {
            type Model = dyn LabelScorer;
            type Error = AlgoError;

            fn step(&mut self, t: u64) -> Result<Flow, AlgoError> {
                let Self {
                    config,
                    train,
                    rows,
                    state,
                    scores,
                    u,
                    rng,
                } = self;
                let drawn = draw_and_hinge(
                    train,
                    rows,
                    |x, out| state.score_labels((x.indices(), x.data()), out),
                    scores,
                    u,
                    rng,
                    false,
                )?;
                if let Some((_, p, _)) = drawn {
                    state.step(
                        ScaledSparse::new(
                            &u.indices,
                            &u.values,
                            step_size(config.eta, config.eta_t0, t),
                        ),
                        ScaledSparse::new(p.indices(), p.data(), 1.0),
                    )?;
                }
                let s = &config.safeguards;
                if s.check_due(t) {
                    state.check_pinvs(s.drift_tolerance)?;
                }
                if s.rebalance_due(t) {
                    state.rebalance()?;
                }
                Ok(Flow::Continue)
            }

            fn report(
                &mut self,
                _step: u64,
                show: &mut dyn FnMut(&Self::Model) -> Control,
            ) -> Result<Control, AlgoError> {
                Ok(show(self.state.model()))
            }
        }
        drive(schedule, obs, || {
            let (a, b) = self
                .init_spec()
                .label_factors(train, &rows, n_labels, self.rank, rng)?;
            let state = Loreta1::new(a, b, self.safeguards.tolerances())?;
            Ok(Run {
                config: self,
                train,
                rows: &rows,
                state,
                scores: vec![0.0; n_labels],
                u: SparseVec::default(),
                rng,
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The label-ranking quality of `model` on `test` (spec §6, ImageNet): for every test row,
/// rank all labels by score; the relevant labels are the row's relevance list (or its
/// class); AP per row (ties by ascending label index), mAP over rows with a relevant label
/// below `model.n_labels()`. `precision[k-1]` is the mean precision at `k`.
pub fn label_ranking_map(model: &dyn LabelScorer, test: &LabeledSet, k_max: usize) -> Retrieval {
    let n_labels = model.n_labels();
    let mut scores = vec![0.0; n_labels];
    let mut relevant = vec![false; n_labels];
    let per_row: Vec<QueryRanking> = (0..test.n())
        .map(|i| {
            model.score_labels(test.x.outer_view(i).expect("row"), &mut scores);
            relevant.fill(false);
            for &y in relevant_labels(test, i) {
                if let Some(r) = relevant.get_mut(y as usize) {
                    *r = true;
                }
            }
            rank_query(&scores, &relevant, None, k_max)
        })
        .collect();
    summarize(&per_row, k_max)
}

/// An alias kept for the harness: the label-ranking metrics are [`Retrieval`]'s.
pub type LabelRetrieval = Retrieval;

/// The `loreta-labels` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "loreta-labels",
    label: "LORETA",
    description: "LORETA-1 on the multilabel ranking hinge: W (labels x features) of rank k scores every label of an example (spec §3.2, ImageNet)",
    family: dyad_kernels::solver::LABEL_RANKER,
    version: 1,
    machine_tolerance: 0.0,
    build: dyad_kernels::solver::label_ranker::<LoretaLabelsConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{LabelRecord, LabelScores};
    use dyad_core::observe::NullObserver;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::multilabel_data;

    #[test]
    fn label_map_by_hand() {
        // One row, labels {0, 2} relevant among 4; scores rank 2, 1, 0, 3.
        struct Fixed;
        impl LabelScorer for Fixed {
            fn n_labels(&self) -> usize {
                4
            }
            fn dim(&self) -> usize {
                1
            }
            fn score_labels(&self, _: sprs::CsVecView<'_, f64>, out: &mut [f64]) {
                out.copy_from_slice(&[0.5, 0.7, 0.9, 0.1]);
            }
        }
        let set = LabeledSet::from_dense_rows(&[vec![1.0]], vec![0], 4)
            .with_relevance(vec![vec![0, 2]])
            .unwrap();
        let r = label_ranking_map(&Fixed, &set, 2);
        // Relevant at ranks 1 and 3: AP = (1 + 2/3) / 2.
        assert!((r.map - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!(r.precision, vec![1.0, 0.5]);
    }

    #[test]
    fn loreta_learns_to_rank_labels_from_every_initialisation() {
        let (train, test) = (multilabel_data(240, 40, 1), multilabel_data(120, 40, 2));
        for init in [Init::Identity, Init::Zero, Init::Gaussian] {
            let mut obs = LabelRecord::new(test.clone());
            LoretaLabelsConfig {
                rank: 4,
                init,
                init_std: 0.1,
                ..Default::default()
            }
            .fit(
                &train,
                &Schedule::new(vec![0, 500, 5000]),
                &mut seeded(3),
                &mut obs,
            )
            .unwrap();
            let (first, last) = (obs.seen[0].1, obs.seen[2].1);
            assert!(obs.seen[2].0.last);
            assert!(
                last > 0.9 && last > first + 0.2,
                "{init:?}: mAP {first} -> {last}"
            );
        }
    }

    #[test]
    fn same_seed_same_model_and_bad_input() {
        let train = multilabel_data(60, 30, 4);
        let run = |seed| {
            let mut obs = LabelScores(train.clone(), Vec::new());
            LoretaLabelsConfig {
                rank: 3,
                init: Init::Zero,
                ..Default::default()
            }
            .fit(
                &train,
                &Schedule::last_only(200),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            obs.1
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        let bad = LoretaLabelsConfig {
            rank: 100,
            ..Default::default()
        };
        let err = bad.fit(
            &train,
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut NullObserver,
        );
        assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "rank"));
        for (bad, param) in [
            (
                LoretaLabelsConfig {
                    eta_t0: Some(0.0),
                    ..Default::default()
                },
                "eta_t0",
            ),
            (
                LoretaLabelsConfig {
                    safeguards: Safeguards {
                        drift_tolerance: -1.0,
                        ..Default::default()
                    },
                    ..Default::default()
                },
                "safeguards.drift_tolerance",
            ),
        ] {
            assert_eq!(bad.check().unwrap_err().param, param);
        }
        // Every row relevant to every label: nothing to learn from.
        let all = LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 0], 1);
        let err = LoretaLabelsConfig {
            rank: 1,
            ..Default::default()
        }
        .fit(
            &all,
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut NullObserver,
        );
        assert!(matches!(err, Err(AlgoError::Data(_))));
    }
}
