//! The semantic phase shared by FuncISH's cells: the nested cross-validation of one
//! classifier configuration on one set of features with one seed, fitted once and read by
//! every cell that needs it (funcish.md §2.5, §2.6).
//!
//! Fig. 3's classifier (with its permutation test), Fig. 4's functional representation (its
//! out-of-fold probabilities), Fig. S3's 500-word point and Fig. S7's flat bag (Fig. S3's
//! 100-word point) fit the same cross-validations: the same features, folds, C grid and seed.
//! At the paper's size one takes 10 to 30 minutes, so it is kept like the features: on disk by
//! content key (the data, the features' key, the configuration without its permutation count,
//! the seed and the fingerprint of [`SOURCES`]), and read back the same to the bit by later
//! cells and runs. The permutation test, the one part that differs between those cells, is
//! added to the shared fit by [`fitted`] ([`permutation_p_values`]: the same p-values as a fit
//! with them). The fit's own seconds travel with it, so a cell that reads it reports what the
//! fit cost, not how long it waited.

use super::features::{Features, VisualConfig};
use dyad_datasets::ish::IshSet;
use dyad_datasets::provider::{Data, Stored};
use dyad_funcish::classify::{
    CategoryData, CategoryResult, NestedCvConfig, NestedCvResult, nested_cv, permutation_p_values,
};
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// The code a shared cross-validation is computed by: its stored copies are keyed by its
/// fingerprint (besides the features', which their key carries).
pub const SOURCES: &[&str] = &[
    "harness/src/tasks/funcish/cv.rs",
    "funcish/src/classify/",
    "core/src/auc.rs",
    "core/src/rng.rs",
];

/// The seed `nested_cv` gets from a classifier whose `fit` is given a generator seeded with
/// `seed` (the first `u64` it draws, `CategoryClassifier::cross_validation`): the gene-function
/// task's cells and the retrieval task's functional representation fit the same folds.
pub fn seed_of(seed: u64) -> u64 {
    use rand::Rng as _;
    dyad_core::seeded(seed).random()
}

/// A nested cross-validation without its permutation test, and the seconds it took.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedCv {
    pub result: NestedCvResult,
    pub seconds: f64,
}

/// The cross-validation `cfg` (its permutation count aside) on `feats` with `seed`: fitted by
/// the first cell that asks, then shared in memory and on disk ([`Data::derived_stored`]).
pub fn shared(
    data: &Data,
    set: &IshSet,
    feats: &Features,
    visual: &VisualConfig,
    cfg: &NestedCvConfig,
    positives: &[Vec<usize>],
    seed: u64,
) -> Result<Arc<SharedCv>, String> {
    let bare = NestedCvConfig {
        permutations: 0,
        ..cfg.clone()
    };
    let key = format!(
        "funcish-cv/v1|{}|{}|{seed}|{}",
        visual.key(),
        serde_json::to_string(&bare).expect("serializable"),
        crate::registry::fingerprint(SOURCES)
    );
    data.derived_stored(&key, || {
        let genes: Vec<u64> = set.image_gene.iter().map(|&g| g as u64).collect();
        let t0 = Instant::now();
        let result = nested_cv(
            &CategoryData {
                features: feats.bow.view(),
                positives,
                genes: Some(&genes),
            },
            &bare,
            seed,
        )
        .map_err(|e| e.to_string())?;
        Ok(SharedCv {
            result,
            seconds: t0.elapsed().as_secs_f64(),
        })
    })
}

/// [`shared`] with `cfg`'s permutation test added: what `nested_cv` with `cfg` and `seed`
/// returns, to the bit, and the seconds the shared fit took.
pub fn fitted(
    data: &Data,
    set: &IshSet,
    feats: &Features,
    visual: &VisualConfig,
    cfg: &NestedCvConfig,
    positives: &[Vec<usize>],
    seed: u64,
) -> Result<(NestedCvResult, f64), String> {
    let s = shared(data, set, feats, visual, cfg, positives, seed)?;
    let mut r = s.result.clone();
    if cfg.permutations > 0 {
        permutation_p_values(&mut r, positives, cfg.permutations, seed)
            .map_err(|e| e.to_string())?;
    }
    Ok((r, s.seconds))
}

/// A category's results with every `f64` as its bits (exact for any value, NaN included).
#[derive(Serialize, Deserialize)]
struct CategoryBits {
    n_positive: usize,
    fold_auc: Vec<Option<u64>>,
    folds_skipped: usize,
    mean_auc: Option<u64>,
    chosen_c: Vec<u64>,
    inner_scores: Vec<Vec<Vec<Option<u64>>>>,
    inner_skipped: usize,
    p_value: Option<u64>,
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}
fn opt_bits(v: &[Option<f64>]) -> Vec<Option<u64>> {
    v.iter().map(|x| x.map(f64::to_bits)).collect()
}
fn from_bits(v: &[u64]) -> Vec<f64> {
    v.iter().map(|&x| f64::from_bits(x)).collect()
}
fn from_opt_bits(v: &[Option<u64>]) -> Vec<Option<f64>> {
    v.iter().map(|x| x.map(f64::from_bits)).collect()
}

impl From<&CategoryResult> for CategoryBits {
    fn from(c: &CategoryResult) -> Self {
        CategoryBits {
            n_positive: c.n_positive,
            fold_auc: opt_bits(&c.fold_auc),
            folds_skipped: c.folds_skipped,
            mean_auc: c.mean_auc.map(f64::to_bits),
            chosen_c: bits(&c.chosen_c),
            inner_scores: c
                .inner_scores
                .iter()
                .map(|o| o.iter().map(|v| opt_bits(v)).collect())
                .collect(),
            inner_skipped: c.inner_skipped,
            p_value: c.p_value.map(f64::to_bits),
        }
    }
}

impl From<CategoryBits> for CategoryResult {
    fn from(c: CategoryBits) -> Self {
        CategoryResult {
            n_positive: c.n_positive,
            fold_auc: from_opt_bits(&c.fold_auc),
            folds_skipped: c.folds_skipped,
            mean_auc: c.mean_auc.map(f64::from_bits),
            chosen_c: from_bits(&c.chosen_c),
            inner_scores: c
                .inner_scores
                .iter()
                .map(|o| o.iter().map(|v| from_opt_bits(v)).collect())
                .collect(),
            inner_skipped: c.inner_skipped,
            p_value: c.p_value.map(f64::from_bits),
        }
    }
}

/// Everything but the matrices, which follow it as raw little-endian `f64`s.
#[derive(Serialize, Deserialize)]
struct Header {
    seconds: u64,
    probabilities: [usize; 2],
    weights: [usize; 2],
    bias: usize,
    /// The shape of each fold model (none: not kept).
    fold_models: Option<Vec<[usize; 2]>>,
    outer_folds: Vec<Vec<usize>>,
    inner_folds: Vec<Vec<Vec<usize>>>,
    categories: Vec<CategoryBits>,
    fold_mean_auc: Vec<Option<u64>>,
}

/// Layout: the header's length (u64, little-endian), the header (JSON), then the
/// probabilities, the weights (row by row), the bias and each kept fold model.
impl Stored for SharedCv {
    fn encode(&self) -> Vec<u8> {
        let r = &self.result;
        let header = serde_json::to_vec(&Header {
            seconds: self.seconds.to_bits(),
            probabilities: r.probabilities.dim().into(),
            weights: r.weights.dim().into(),
            bias: r.bias.len(),
            fold_models: r
                .fold_models
                .as_ref()
                .map(|m| m.iter().map(|a| a.dim().into()).collect()),
            outer_folds: r.outer_folds.clone(),
            inner_folds: r.inner_folds.clone(),
            categories: r.categories.iter().map(CategoryBits::from).collect(),
            fold_mean_auc: opt_bits(&r.fold_mean_auc),
        })
        .expect("serializable");
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&header);
        let models = r.fold_models.iter().flatten().flat_map(|m| m.iter());
        for v in r
            .probabilities
            .iter()
            .chain(r.weights.iter())
            .chain(r.bias.iter())
            .chain(models)
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut at = 0usize;
        let mut take = |n: usize, what: &str| -> Result<&[u8], String> {
            let end = at
                .checked_add(n)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| {
                    format!(
                        "{what} at byte {at}: {n} bytes past the end ({})",
                        bytes.len()
                    )
                })?;
            let s = &bytes[at..end];
            at = end;
            Ok(s)
        };
        let len = u64::from_le_bytes(take(8, "header length")?.try_into().expect("8 bytes"));
        let len = usize::try_from(len).map_err(|_| format!("header length {len}"))?;
        let h: Header =
            serde_json::from_slice(take(len, "header")?).map_err(|e| format!("header: {e}"))?;
        let mut floats = |n: usize, what: &str| -> Result<Vec<f64>, String> {
            let raw = take(
                n.checked_mul(8)
                    .ok_or_else(|| format!("{what}: {n} values"))?,
                what,
            )?;
            Ok(raw
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect())
        };
        let mut matrix = |[r, c]: [usize; 2], what: &str| -> Result<Array2<f64>, String> {
            let n = r
                .checked_mul(c)
                .ok_or_else(|| format!("{what}: {r} x {c}"))?;
            Array2::from_shape_vec((r, c), floats(n, what)?).map_err(|e| format!("{what}: {e}"))
        };
        let probabilities = matrix(h.probabilities, "probabilities")?;
        let weights = matrix(h.weights, "weights")?;
        let bias = Array1::from(matrix([1, h.bias], "bias")?.into_raw_vec_and_offset().0);
        let fold_models = h
            .fold_models
            .map(|shapes| {
                shapes
                    .into_iter()
                    .map(|s| matrix(s, "fold model"))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        if at != bytes.len() {
            return Err(format!("{} bytes after the matrices", bytes.len() - at));
        }
        Ok(SharedCv {
            result: NestedCvResult {
                probabilities,
                outer_folds: h.outer_folds,
                inner_folds: h.inner_folds,
                categories: h.categories.into_iter().map(CategoryResult::from).collect(),
                fold_mean_auc: from_opt_bits(&h.fold_mean_auc),
                weights,
                bias,
                fold_models,
            },
            seconds: f64::from_bits(h.seconds),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_kernels::fixtures::bow_categories;

    fn fit(keep_fold_models: bool) -> SharedCv {
        let (x, positives) = bow_categories(120, 2, 5, 3, 4.0, 9);
        let cfg = NestedCvConfig {
            permutations: 20,
            keep_fold_models,
            ..Default::default()
        };
        let data = CategoryData {
            features: x.view(),
            positives: &positives,
            genes: None,
        };
        SharedCv {
            result: nested_cv(&data, &cfg, 3).unwrap(),
            seconds: 1.25,
        }
    }

    /// Every number comes back to the bit, undefined AUCs, NaN and infinities included, with
    /// and without fold models; damage is an error naming where.
    #[test]
    fn a_stored_cross_validation_reads_back_to_the_bit() {
        for keep in [false, true] {
            let mut v = fit(keep);
            // values JSON could not carry
            v.result.categories[0].inner_scores[0][0][0] = Some(f64::NEG_INFINITY);
            v.result.categories[1].fold_auc[0] = None;
            v.result.probabilities[[0, 0]] = f64::NAN;
            let bytes = v.encode();
            let back = SharedCv::decode(&bytes).unwrap();
            assert_eq!(
                back.result.probabilities[[0, 0]].to_bits(),
                f64::NAN.to_bits()
            );
            v.result.probabilities[[0, 0]] = 0.5;
            let mut back = back;
            back.result.probabilities[[0, 0]] = 0.5;
            assert_eq!(back, v);
            assert_eq!(back.result.fold_models.is_some(), keep);
            let err = SharedCv::decode(&bytes[..bytes.len() - 3]).unwrap_err();
            assert!(err.contains("past the end"), "{err}");
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(SharedCv::decode(&longer).unwrap_err().contains("after"));
        }
    }
}
