//! Observers of the label-ranking tests (LORETA's ImageNet task and its baselines), beside the
//! shared problems of `dyad_kernels::fixtures`.

use dyad_core::{Checkpoint, Control, LabeledSet, Observer};

/// Records every checkpoint of a label ranker with the label-ranking mAP of the reported
/// model on `test` ([`crate::label_ranking_map`]).
pub struct LabelRecord {
    pub test: LabeledSet,
    pub seen: Vec<(Checkpoint, f64)>,
}

impl LabelRecord {
    pub fn new(test: LabeledSet) -> Self {
        Self {
            test,
            seen: Vec::new(),
        }
    }

    /// The mAP at each checkpoint.
    pub fn maps(&self) -> Vec<f64> {
        self.seen.iter().map(|(_, m)| *m).collect()
    }
}

impl Observer<dyn crate::LabelScorer> for LabelRecord {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn crate::LabelScorer) -> Control {
        let r = crate::label_ranking_map(model, &self.test, 5);
        self.seen.push((at, r.map));
        Control::Continue
    }
}

/// Captures every label score of the reported label scorers on a set, bit for bit.
pub struct LabelScores(pub LabeledSet, pub Vec<u64>);

impl Observer<dyn crate::LabelScorer> for LabelScores {
    fn checkpoint(&mut self, _: Checkpoint, model: &dyn crate::LabelScorer) -> Control {
        let mut out = vec![0.0; model.n_labels()];
        for i in 0..self.0.n() {
            model.score_labels(self.0.x.outer_view(i).expect("row"), &mut out);
            self.1.extend(out.iter().map(|v| v.to_bits()));
        }
        Control::Continue
    }
}
