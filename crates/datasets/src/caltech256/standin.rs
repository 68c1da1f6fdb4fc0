//! The seeded synthetic Caltech-256 stand-in of OASIS spec §12.1 item 8.
//!
//! Each image is a bag of visual words over a vocabulary of `dim` words, built block by block
//! (`~Poisson(mean_blocks)` blocks, at least 10, like the multi-scale 64x64 blocks of §6.1).
//! Every block's word is drawn from the image's own distribution over the vocabulary,
//!
//! ```text
//! p_i(w)  ∝  zipf(w) · exp(class_tilt · z_class(i),w + nuisance_tilt · z_topic(i),w + image_tilt · z_i,w)
//! ```
//!
//! a shared Zipf background (exponent `zipf_exponent`, over a random permutation of the
//! words) tilted log-normally by three independent standard-normal fields: one per class
//! (what a learned similarity should pick up), one per **nuisance topic** shared across
//! classes and drawn per image (scene or texture statistics that make images of different
//! classes look alike), and one per image (within-class variation). Class information is thus
//! spread thinly over many words, as with real visual words, rather than carried by a few
//! class-exclusive ones. Each class's tilt is scaled by a factor evenly spaced over [0.6, 1.4]
//! (in random class order) so classes span a range of difficulty, as the papers' subsets do.
//!
//! Counts are weighted by tf-idf, `f_j * -log(r_j)` with `r_j` the fraction of images holding
//! word `j` (the spec's [J] form; computed over the whole generated set, which for an
//! exchangeable generator equals the training-set idf in expectation), and L2-normalised.
//! The default tilts were calibrated so that the Euclidean baseline on 10 classes lands near
//! the paper's Table 4 Euclidean row (`experiments/oasis/standin-calibration.toml`).

use crate::DataError;
use crate::pipelines::tfidf::{idf_of_bags, tfidf_l2_bags};
use dyad_core::{LabeledSet, seeded};
use rand::Rng as _;
use rand::distr::Distribution;
use rand_distr::{Poisson, StandardNormal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameters of the stand-in generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaltechStandin {
    /// Number of classes.
    pub classes: usize,
    /// Images per class (the papers' protocol needs 40 + 25 = 65).
    #[serde(default = "d_per_class")]
    pub per_class: usize,
    /// Vocabulary size (the papers' Caltech runs use 1000).
    #[serde(default = "d_dim")]
    pub dim: usize,
    /// Mean number of blocks (visual-word draws) per image.
    #[serde(default = "d_blocks")]
    pub mean_blocks: f64,
    /// Exponent of the Zipf background.
    #[serde(default = "d_zipf")]
    pub zipf_exponent: f64,
    /// Standard deviation of the per-class log-tilt of word probabilities.
    #[serde(default = "d_class_tilt")]
    pub class_tilt: f64,
    /// Number of nuisance topics shared across classes.
    #[serde(default = "d_topics")]
    pub nuisance_topics: usize,
    /// Standard deviation of the per-topic log-tilt.
    #[serde(default = "d_nuisance_tilt")]
    pub nuisance_tilt: f64,
    /// Standard deviation of the per-image log-tilt.
    #[serde(default = "d_image_tilt")]
    pub image_tilt: f64,
    /// Generation seed (different class subsets use different seeds).
    #[serde(default)]
    pub seed: u64,
}

fn d_per_class() -> usize {
    65
}
fn d_dim() -> usize {
    1000
}
fn d_blocks() -> f64 {
    80.0
}
fn d_zipf() -> f64 {
    1.0
}
fn d_class_tilt() -> f64 {
    0.57
}
fn d_topics() -> usize {
    20
}
fn d_nuisance_tilt() -> f64 {
    0.5
}
fn d_image_tilt() -> f64 {
    1.0
}

impl CaltechStandin {
    /// The default generator for `classes` classes and generation seed `seed`.
    pub fn new(classes: usize, seed: u64) -> Self {
        Self {
            classes,
            per_class: d_per_class(),
            dim: d_dim(),
            mean_blocks: d_blocks(),
            zipf_exponent: d_zipf(),
            class_tilt: d_class_tilt(),
            nuisance_topics: d_topics(),
            nuisance_tilt: d_nuisance_tilt(),
            image_tilt: d_image_tilt(),
            seed,
        }
    }

    fn validate(&self) -> Result<(), DataError> {
        let bad = |m: String| Err(DataError::Param(m));
        if self.classes < 2 || self.per_class < 2 || self.dim < 2 {
            return bad(
                "the Caltech stand-in needs at least 2 classes of 2 images and dim >= 2".into(),
            );
        }
        let tilts = [self.class_tilt, self.nuisance_tilt, self.image_tilt];
        if tilts.iter().any(|t| !(0.0..=10.0).contains(t)) {
            return bad(format!("tilts must be in [0, 10], got {tilts:?}"));
        }
        if !(self.mean_blocks >= 10.0 && self.mean_blocks <= 1e6) {
            return bad(format!(
                "mean_blocks must be in [10, 1e6], got {}",
                self.mean_blocks
            ));
        }
        if !(0.0..=5.0).contains(&self.zipf_exponent) {
            return bad(format!(
                "zipf_exponent must be in [0, 5], got {}",
                self.zipf_exponent
            ));
        }
        Ok(())
    }

    /// Generate the data set. Deterministic in the parameters.
    pub fn generate(&self) -> Result<LabeledSet, DataError> {
        self.validate()?;
        let mut rng = seeded(self.seed);
        let d = self.dim;
        let mut log_bg = vec![0.0; d];
        for (rank, word) in permutation(d, &mut rng).into_iter().enumerate() {
            log_bg[word] = -self.zipf_exponent * ((rank + 1) as f64).ln();
        }
        let field = |scale: f64, rng: &mut dyad_core::Rng| -> Vec<f64> {
            (0..d)
                .map(|_| scale * rng.sample::<f64, _>(StandardNormal))
                .collect()
        };
        // Difficulty factors evenly spaced over [0.6, 1.4], in random class order: the mean
        // difficulty of a subset does not depend on the seed.
        let order = permutation(self.classes, &mut rng);
        let class_fields: Vec<Vec<f64>> = order
            .iter()
            .map(|&r| {
                let difficulty = 0.6 + 0.8 * (r as f64 + 0.5) / self.classes as f64;
                field(self.class_tilt * difficulty, &mut rng)
            })
            .collect();
        let topic_fields: Vec<Vec<f64>> = (0..self.nuisance_topics)
            .map(|_| field(self.nuisance_tilt, &mut rng))
            .collect();
        let blocks = Poisson::new(self.mean_blocks).expect("valid mean");

        let n = self.classes * self.per_class;
        let mut counts: Vec<BTreeMap<usize, f64>> = Vec::with_capacity(n);
        let mut labels = Vec::with_capacity(n);
        let mut cumulative = vec![0.0; d];
        for (c, class_field) in class_fields.iter().enumerate() {
            for _ in 0..self.per_class {
                let topic = (!topic_fields.is_empty())
                    .then(|| &topic_fields[rng.random_range(0..topic_fields.len())]);
                let image_field = field(self.image_tilt, &mut rng);
                let mut total = 0.0;
                for w in 0..d {
                    let t = topic.map_or(0.0, |f| f[w]);
                    total += (log_bg[w] + class_field[w] + t + image_field[w]).exp();
                    cumulative[w] = total;
                }
                let nb = (blocks.sample(&mut rng) as usize).max(10);
                let mut bag = BTreeMap::new();
                for _ in 0..nb {
                    let u = rng.random::<f64>() * total;
                    let w = cumulative.partition_point(|&x| x <= u).min(d - 1);
                    *bag.entry(w).or_insert(0.0) += 1.0;
                }
                counts.push(bag);
                labels.push(c as u32);
            }
        }
        let x = tfidf_l2_bags(&counts, &idf_of_bags(&counts, d));
        let names = (0..self.classes)
            .map(|c| format!("standin-{c:03}"))
            .collect();
        Ok(LabeledSet::new(x, labels, names, None).expect("consistent"))
    }
}

/// A uniformly random permutation of `0..n`.
fn permutation(n: usize, rng: &mut dyad_core::Rng) -> Vec<usize> {
    use rand::seq::SliceRandom;
    let mut p: Vec<usize> = (0..n).collect();
    p.shuffle(rng);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::labeled_set_content_id;

    #[test]
    fn generation_is_deterministic_and_shaped_as_specified() {
        let g = CaltechStandin::new(10, 7);
        let a = g.generate().unwrap();
        assert_eq!(
            labeled_set_content_id(&a),
            labeled_set_content_id(&g.generate().unwrap())
        );
        assert_eq!((a.n(), a.dim(), a.n_classes()), (650, 1000, 10));
        for members in a.class_members() {
            assert_eq!(members.len(), 65);
        }
        let mean_nnz = a.x.nnz() as f64 / a.n() as f64;
        assert!((20.0..80.0).contains(&mean_nnz), "mean nnz {mean_nnz}");
        for row in a.x.outer_iterator() {
            let n: f64 = row.data().iter().map(|v| v * v).sum();
            assert!((n - 1.0).abs() < 1e-12);
            assert!(row.data().iter().all(|&v| v > 0.0));
        }
        let other = CaltechStandin::new(10, 8).generate().unwrap();
        assert_ne!(labeled_set_content_id(&a), labeled_set_content_id(&other));
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let mut g = CaltechStandin::new(10, 0);
        g.class_tilt = -1.0;
        assert!(matches!(g.generate(), Err(DataError::Param(_))));
        assert!(CaltechStandin::new(1, 0).generate().is_err());
    }
}
