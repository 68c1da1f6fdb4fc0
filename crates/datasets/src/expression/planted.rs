//! Seeded stand-ins for the gene-expression data of the Givens sparse-PCA experiments
//! (givens.md §10): data with the real sets' shape and the property that makes sparse PCA
//! meaningful, sparse heterogeneous gene programs plus noise.
//!
//! Both generators produce a genes x samples matrix
//!
//! ```text
//! A = Σ_{r=1..R} s_r w_r v_rᵀ + O + E,      s_r = s_1 / r
//! ```
//!
//! * `w_r` (gene loadings): sparse, support a uniformly random set of
//!   `m_r ~ Uniform{⌈support_min·d⌉ .. ⌊support_max·d⌋}` genes (at least one), standard-normal
//!   values on the support, unit Euclidean norm;
//! * `v_r` (sample scores): standard normal, `v_r ~ N(0, I_n)`;
//! * `E` (noise): `E_kl ~ N(0, τ_k²)` with a per-gene log-normal scale
//!   `τ_k = noise_median · exp(noise_log_sd · z_k)` (microarray-like heterogeneity);
//! * `O` (batch effect, brain-like only): per-donor per-gene offsets
//!   `O_kl = donor_offset_sd · τ_k · u_{donor(l),k}`, `u ~ N(0, 1)`;
//! * rows (genes) are centred across samples when `center` is set (default), as E1 does.
//!
//! **Prostate-like** (E1): d = 12,600, n = 102 = 52 "Tumor" + 50 "Normal" (labels as in the real
//! files, tumour samples first), R = 10, supports 1–5 % of the genes; the scores of one factor
//! (`shifted_factor`, 0-based) are shifted by `+shift` for tumour and `−shift` for normal samples.
//! **Brain-like** (E2): d = 20,000 (configurable; 2,000 in CI, [`BrainStandin::ci`]), six donors of
//! 946, 893, 363, 529, 470, 501 samples (the sample groups), R = 30 programs with supports
//! 0.5–5 %. The scales `s_1 = 30`, `noise_median = 1`, `noise_log_sd = 0.5`,
//! `donor_offset_sd = 0.25` and `shift = 1` are \[A\] choices (the paper gives none): the leading
//! programs stand well above the noise and the weakest ones sink into it.
//!
//! Independent random streams (seeded by `derive_seed(seed, tag)`) are used for the noise scales,
//! loadings, scores, noise and offsets, so e.g. the loadings do not change with the sample count.
//! Memory is `8·d·n` bytes (about 590 MB for the default brain-like set).

use crate::DataError;
use crate::expression::{Categorical, ExpressionSet};
use dyad_core::{SparseVec, derive_seed, seeded};
use ndarray::{Array2, Axis};
use rand::Rng as _;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// A generated data set with the planted structure it was built from.
#[derive(Debug, Clone, PartialEq)]
pub struct PlantedExpression {
    /// Genes x samples.
    pub data: ExpressionSet,
    /// What the data was built from (kept beside the data for tasks that check recovery).
    pub truth: Planted,
}

/// The planted structure of a generated expression matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Planted {
    /// `s_r`, one per factor.
    pub strengths: Vec<f64>,
    /// `w_r`: unit-norm sparse gene loadings (sorted indices), one per factor.
    pub loadings: Vec<SparseVec>,
    /// `v_r` as rows: factors x samples (including any group shift).
    pub scores: Array2<f64>,
    /// `τ_k`, one per gene.
    pub noise_sd: Vec<f64>,
    /// Brain-like: the offsets `donor_offset_sd · τ_k · u`, donors x genes.
    pub donor_offsets: Option<Array2<f64>>,
    /// The gene means removed by centring (zeros when not centred).
    pub removed_means: Vec<f64>,
}

/// Parameters of the prostate-like stand-in (E1). Missing fields take the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProstateStandin {
    /// Genes `d` (12,600).
    pub genes: usize,
    /// Tumour samples (52), the first columns.
    pub tumor: usize,
    /// Normal samples (50).
    pub normal: usize,
    /// Sparse factors `R` (10).
    pub factors: usize,
    /// Smallest support, as a fraction of the genes (0.01).
    pub support_min: f64,
    /// Largest support, as a fraction of the genes (0.05).
    pub support_max: f64,
    /// `s_1`, the strength of the first factor; `s_r = s_1 / r` (30).
    pub strength: f64,
    /// The factor (0-based) whose scores differ between the groups (1).
    pub shifted_factor: usize,
    /// `δ`: tumour scores `+δ`, normal scores `−δ` (1.0).
    pub shift: f64,
    /// Median per-gene noise standard deviation (1.0).
    pub noise_median: f64,
    /// Standard deviation of `ln τ_k` (0.5).
    pub noise_log_sd: f64,
    /// Centre every gene across the samples (true).
    pub center: bool,
    pub seed: u64,
}

impl Default for ProstateStandin {
    fn default() -> Self {
        Self {
            genes: 12_600,
            tumor: 52,
            normal: 50,
            factors: 10,
            support_min: 0.01,
            support_max: 0.05,
            strength: 30.0,
            shifted_factor: 1,
            shift: 1.0,
            noise_median: 1.0,
            noise_log_sd: 0.5,
            center: true,
            seed: 0,
        }
    }
}

/// Parameters of the brain-like stand-in (E2). Missing fields take the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrainStandin {
    /// Genes `d` (20,000; 2,000 in CI).
    pub genes: usize,
    /// Samples per donor (946, 893, 363, 529, 470, 501: 3,702 in all).
    pub donor_sizes: Vec<usize>,
    /// Sparse programs `R` (30).
    pub programs: usize,
    /// Smallest support, as a fraction of the genes (0.005).
    pub support_min: f64,
    /// Largest support, as a fraction of the genes (0.05).
    pub support_max: f64,
    /// `s_1`; `s_r = s_1 / r` (30).
    pub strength: f64,
    /// Per-donor per-gene offsets, in units of the gene's noise scale (0.25).
    pub donor_offset_sd: f64,
    /// Median per-gene noise standard deviation (1.0).
    pub noise_median: f64,
    /// Standard deviation of `ln τ_k` (0.5).
    pub noise_log_sd: f64,
    /// Centre every gene across all samples (true).
    pub center: bool,
    pub seed: u64,
}

impl Default for BrainStandin {
    fn default() -> Self {
        Self {
            genes: 20_000,
            donor_sizes: crate::allen::PAPER_DONOR_SAMPLES.to_vec(),
            programs: 30,
            support_min: 0.005,
            support_max: 0.05,
            strength: 30.0,
            donor_offset_sd: 0.25,
            noise_median: 1.0,
            noise_log_sd: 0.5,
            center: true,
            seed: 0,
        }
    }
}

impl BrainStandin {
    /// The CI configuration of givens.md §10: d = 2,000, everything else default.
    pub fn ci() -> Self {
        Self {
            genes: 2_000,
            ..Self::default()
        }
    }
}

/// What the two generators share.
struct Spec<'a> {
    genes: usize,
    samples: usize,
    factors: usize,
    support: (f64, f64),
    strength: f64,
    noise_median: f64,
    noise_log_sd: f64,
    seed: u64,
    /// `(donor of each sample, number of donors, offset sd)`.
    donors: Option<(&'a [usize], usize, f64)>,
    /// `(factor, per-sample shift)`.
    shift: Option<(usize, Vec<f64>)>,
    center: bool,
}

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), DataError> {
    if ok {
        Ok(())
    } else {
        Err(DataError::Param(message()))
    }
}

impl Spec<'_> {
    fn validate(&self, what: &str) -> Result<(), DataError> {
        check(self.genes >= 2 && self.samples >= 2, || {
            format!("the {what} stand-in needs at least 2 genes and 2 samples")
        })?;
        check(
            self.genes
                .checked_mul(self.samples)
                .is_some_and(|c| c <= 1 << 30),
            || {
                format!(
                    "{what} stand-in: {} x {} values is too large",
                    self.genes, self.samples
                )
            },
        )?;
        check(self.factors >= 1 && self.factors <= self.genes, || {
            format!(
                "{what} stand-in: need 1 ..= genes factors, got {}",
                self.factors
            )
        })?;
        let (lo, hi) = self.support;
        check(lo > 0.0 && lo <= hi && hi <= 1.0, || {
            format!("{what} stand-in: need 0 < support_min <= support_max <= 1, got {lo}, {hi}")
        })?;
        check(self.strength.is_finite() && self.strength >= 0.0, || {
            format!(
                "{what} stand-in: strength must be finite and >= 0, got {}",
                self.strength
            )
        })?;
        check(
            self.noise_median.is_finite()
                && self.noise_median > 0.0
                && (0.0..=5.0).contains(&self.noise_log_sd),
            || {
                format!(
                    "{what} stand-in: need noise_median > 0 and noise_log_sd in [0, 5], got {} \
                     and {}",
                    self.noise_median, self.noise_log_sd
                )
            },
        )?;
        Ok(())
    }

    /// Generate (after validation).
    fn generate(&self) -> (Array2<f64>, PlantedParts) {
        let (d, n, big_r) = (self.genes, self.samples, self.factors);
        let normal = |rng: &mut dyad_core::Rng| -> f64 { rng.sample(StandardNormal) };

        let mut rng = seeded(derive_seed(self.seed, "noise-sd"));
        let noise_sd: Vec<f64> = (0..d)
            .map(|_| self.noise_median * (self.noise_log_sd * normal(&mut rng)).exp())
            .collect();

        let mut rng = seeded(derive_seed(self.seed, "loadings"));
        let lo = ((self.support.0 * d as f64).ceil() as usize).clamp(1, d);
        let hi = ((self.support.1 * d as f64).floor() as usize).clamp(lo, d);
        let loadings: Vec<SparseVec> = (0..big_r)
            .map(|_| {
                let m = rng.random_range(lo..=hi);
                let mut idx = rand::seq::index::sample(&mut rng, d, m).into_vec();
                idx.sort_unstable();
                let mut vals: Vec<f64> = (0..m).map(|_| normal(&mut rng)).collect();
                let norm = vals.iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm > 0.0 {
                    vals.iter_mut().for_each(|v| *v /= norm);
                } else {
                    vals[0] = 1.0;
                }
                SparseVec {
                    indices: idx,
                    values: vals,
                }
            })
            .collect();
        let strengths: Vec<f64> = (1..=big_r).map(|r| self.strength / r as f64).collect();

        let mut rng = seeded(derive_seed(self.seed, "scores"));
        let mut scores = Array2::from_shape_simple_fn((big_r, n), || normal(&mut rng));
        if let Some((r, shift)) = &self.shift {
            scores
                .row_mut(*r)
                .iter_mut()
                .zip(shift)
                .for_each(|(v, s)| *v += s);
        }

        let donor_offsets = self.donors.map(|(_, n_donors, sd)| {
            let mut rng = seeded(derive_seed(self.seed, "donor-offsets"));
            let mut o = Array2::from_shape_simple_fn((n_donors, d), || normal(&mut rng));
            for mut row in o.axis_iter_mut(Axis(0)) {
                row.iter_mut()
                    .zip(&noise_sd)
                    .for_each(|(v, &tau)| *v *= sd * tau);
            }
            o
        });

        let mut rng = seeded(derive_seed(self.seed, "noise"));
        let mut a = Array2::<f64>::zeros((d, n));
        for (k, mut row) in a.axis_iter_mut(Axis(0)).enumerate() {
            let tau = noise_sd[k];
            row.iter_mut().for_each(|v| *v = tau * normal(&mut rng));
            if let (Some((donor_of, _, _)), Some(o)) = (self.donors, &donor_offsets) {
                row.iter_mut()
                    .zip(donor_of)
                    .for_each(|(v, &g)| *v += o[[g, k]]);
            }
        }
        for (r, w) in loadings.iter().enumerate() {
            let v = scores.row(r);
            for (&k, &wk) in w.indices.iter().zip(&w.values) {
                a.row_mut(k).scaled_add(strengths[r] * wk, &v);
            }
        }
        let removed_means = if self.center {
            a.axis_iter_mut(Axis(0))
                .map(|mut row| {
                    let mean = row.sum() / n as f64;
                    row.mapv_inplace(|x| x - mean);
                    mean
                })
                .collect()
        } else {
            vec![0.0; d]
        };
        (
            a,
            PlantedParts {
                strengths,
                loadings,
                scores,
                noise_sd,
                donor_offsets,
                removed_means,
            },
        )
    }
}

type PlantedParts = Planted;

impl Planted {
    fn into_planted(self, data: ExpressionSet) -> PlantedExpression {
        PlantedExpression { data, truth: self }
    }
}

fn gene_ids(d: usize) -> Vec<String> {
    (1..=d).map(|k| format!("g{k}")).collect()
}

impl ProstateStandin {
    /// Generate the data set; deterministic in the parameters.
    pub fn generate(&self) -> Result<PlantedExpression, DataError> {
        check(self.tumor >= 1 && self.normal >= 1, || {
            "the prostate-like stand-in needs at least one tumour and one normal sample".into()
        })?;
        check(self.shifted_factor < self.factors, || {
            format!(
                "shifted_factor {} must be below the number of factors {}",
                self.shifted_factor, self.factors
            )
        })?;
        check(self.shift.is_finite(), || {
            format!("shift must be finite, got {}", self.shift)
        })?;
        let n = self.tumor.saturating_add(self.normal);
        let shift = (0..n)
            .map(|l| {
                if l < self.tumor {
                    self.shift
                } else {
                    -self.shift
                }
            })
            .collect();
        let spec = Spec {
            genes: self.genes,
            samples: n,
            factors: self.factors,
            support: (self.support_min, self.support_max),
            strength: self.strength,
            noise_median: self.noise_median,
            noise_log_sd: self.noise_log_sd,
            seed: self.seed,
            donors: None,
            shift: Some((self.shifted_factor, shift)),
            center: self.center,
        };
        spec.validate("prostate-like")?;
        let (a, parts) = spec.generate();
        let sample_ids = (1..=self.tumor)
            .map(|k| format!("tumor-{k}"))
            .chain((1..=self.normal).map(|k| format!("normal-{k}")))
            .collect();
        let codes = (0..n).map(|l| u32::from(l >= self.tumor)).collect();
        let labels = Categorical::new(vec!["Tumor".into(), "Normal".into()], codes)?;
        let data = ExpressionSet::new(a, gene_ids(self.genes), sample_ids)?.with_labels(labels)?;
        Ok(parts.into_planted(data))
    }
}

impl BrainStandin {
    /// Generate the data set; deterministic in the parameters.
    pub fn generate(&self) -> Result<PlantedExpression, DataError> {
        check(
            !self.donor_sizes.is_empty() && self.donor_sizes.iter().all(|&s| s >= 1),
            || {
                format!(
                    "donor_sizes must be non-empty and positive, got {:?}",
                    self.donor_sizes
                )
            },
        )?;
        check(
            self.donor_offset_sd.is_finite() && self.donor_offset_sd >= 0.0,
            || {
                format!(
                    "donor_offset_sd must be finite and >= 0, got {}",
                    self.donor_offset_sd
                )
            },
        )?;
        let n = self
            .donor_sizes
            .iter()
            .try_fold(0usize, |a, &s| a.checked_add(s))
            .ok_or_else(|| DataError::Param("donor_sizes overflow".into()))?;
        let donor_of: Vec<usize> = self
            .donor_sizes
            .iter()
            .enumerate()
            .flat_map(|(g, &s)| std::iter::repeat_n(g, s))
            .collect();
        let spec = Spec {
            genes: self.genes,
            samples: n,
            factors: self.programs,
            support: (self.support_min, self.support_max),
            strength: self.strength,
            noise_median: self.noise_median,
            noise_log_sd: self.noise_log_sd,
            seed: self.seed,
            donors: Some((&donor_of, self.donor_sizes.len(), self.donor_offset_sd)),
            shift: None,
            center: self.center,
        };
        spec.validate("brain-like")?;
        let (a, parts) = spec.generate();
        let names: Vec<String> = (1..=self.donor_sizes.len())
            .map(|g| format!("donor{g}"))
            .collect();
        let mut sample_ids = Vec::with_capacity(n);
        for (g, &s) in self.donor_sizes.iter().enumerate() {
            sample_ids.extend((1..=s).map(|k| format!("{}/{k}", names[g])));
        }
        let groups = Categorical::new(names, donor_of.iter().map(|&g| g as u32).collect())?;
        let data = ExpressionSet::new(a, gene_ids(self.genes), sample_ids)?.with_groups(groups)?;
        Ok(parts.into_planted(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array1;
    use serde::de::value::{Error as ValueError, MapDeserializer};

    /// The leading left singular vector of `a` (genes x samples) by power iteration.
    fn leading_direction(a: &Array2<f64>, seed: u64) -> Array1<f64> {
        let mut rng = seeded(seed);
        let mut u =
            Array1::from_shape_simple_fn(a.nrows(), || rng.sample::<f64, _>(StandardNormal));
        for _ in 0..60 {
            let t = a.t().dot(&u);
            u = a.dot(&t);
            let norm = u.dot(&u).sqrt();
            u /= norm;
        }
        u
    }

    fn mass_on(u: &Array1<f64>, support: &[usize]) -> f64 {
        support.iter().map(|&k| u[k] * u[k]).sum::<f64>() / u.dot(u)
    }

    #[test]
    fn prostate_like_has_the_specified_shape_and_is_deterministic() {
        let g = ProstateStandin::default();
        let p = g.generate().unwrap();
        assert_eq!((p.data.n_genes(), p.data.n_samples()), (12_600, 102));
        let labels = p.data.labels().unwrap();
        assert_eq!(labels.names(), &["Tumor", "Normal"]);
        assert_eq!(labels.counts(), vec![52, 50]);
        assert_eq!(labels.members(1).first(), Some(&52));
        assert_eq!(p.data.content_id(), g.generate().unwrap().data.content_id());
        let other = ProstateStandin {
            seed: 1,
            ..g.clone()
        }
        .generate()
        .unwrap();
        assert_ne!(other.data.content_id(), p.data.content_id());

        assert_eq!(p.truth.loadings.len(), 10);
        assert_eq!(p.truth.strengths[0], 30.0);
        assert_eq!(p.truth.strengths[9], 3.0);
        for w in &p.truth.loadings {
            assert!((126..=630).contains(&w.nnz()), "support {}", w.nnz());
            assert!(w.indices.windows(2).all(|x| x[0] < x[1]));
            assert!((w.norm_sq() - 1.0).abs() < 1e-12);
        }
        // Rows are centred.
        let worst = p
            .data
            .values()
            .rows()
            .into_iter()
            .map(|r| r.mean().unwrap().abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-12, "largest row mean {worst}");
        // Noise scales are log-normal around the median: about half above, half below.
        let above = p.truth.noise_sd.iter().filter(|&&t| t > 1.0).count() as f64 / 12_600.0;
        assert!((0.45..0.55).contains(&above), "{above}");
        // Not centring keeps the raw means, which the centred version removed.
        let raw = ProstateStandin { center: false, ..g }.generate().unwrap();
        let back = raw.data.values() - p.data.values();
        for (k, &m) in p.truth.removed_means.iter().enumerate().step_by(997) {
            assert!(back.row(k).iter().all(|&x| (x - m).abs() < 1e-9));
        }
    }

    #[test]
    fn prostate_like_factors_are_recoverable() {
        for seed in [0, 1, 2] {
            let p = ProstateStandin {
                seed,
                ..ProstateStandin::default()
            }
            .generate()
            .unwrap();
            let a = p.data.values();
            let d = a.nrows() as f64;
            // The leading principal direction concentrates on the strongest factor's support:
            // a random direction puts |S|/d (at most 5 %) of its mass there.
            let u = leading_direction(a, seed);
            let s0 = &p.truth.loadings[0].indices;
            let mass = mass_on(&u, s0);
            let mut rng = seeded(seed + 100);
            let r =
                Array1::from_shape_simple_fn(a.nrows(), || rng.sample::<f64, _>(StandardNormal));
            let random = mass_on(&r, s0);
            assert!(
                mass > 0.6 && mass > 10.0 * random && mass > 10.0 * s0.len() as f64 / d,
                "seed {seed}: mass {mass}, random direction {random}"
            );
            // The tumour-minus-normal mean difference points along the shifted factor's loading.
            let labels = p.data.labels().unwrap();
            let mean_of =
                |members: Vec<usize>| a.select(Axis(1), &members).mean_axis(Axis(1)).unwrap();
            let diff = mean_of(labels.members(0)) - mean_of(labels.members(1));
            let w = Array1::from(p.truth.loadings[1].to_dense(a.nrows()));
            let cos = diff.dot(&w) / diff.dot(&diff).sqrt();
            assert!(cos > 0.5, "seed {seed}: cosine {cos}");
            // ... and not along an unshifted factor of similar strength.
            let w2 = Array1::from(p.truth.loadings[2].to_dense(a.nrows()));
            let cos2 = (diff.dot(&w2) / diff.dot(&diff).sqrt()).abs();
            assert!(cos2 < 0.3, "seed {seed}: cosine with factor 2 {cos2}");
        }
    }

    #[test]
    fn brain_like_has_donor_groups_offsets_and_programs() {
        let g = BrainStandin::ci();
        let b = g.generate().unwrap();
        assert_eq!((b.data.n_genes(), b.data.n_samples()), (2_000, 3_702));
        let groups = b.data.groups().unwrap();
        assert_eq!(groups.counts(), vec![946, 893, 363, 529, 470, 501]);
        assert_eq!(b.data.sample_ids()[946], "donor2/1");
        assert_eq!(b.truth.loadings.len(), 30);
        for w in &b.truth.loadings {
            assert!((10..=100).contains(&w.nnz()), "support {}", w.nnz());
        }
        assert_eq!(b.data.content_id(), g.generate().unwrap().data.content_id());
        let a = b.data.values();
        // Each donor's mean profile recovers its planted offsets (up to the common mean).
        let o = b.truth.donor_offsets.as_ref().unwrap();
        let weights: Vec<f64> = groups.counts().iter().map(|&c| c as f64 / 3702.0).collect();
        let common = o.t().dot(&Array1::from(weights));
        for donor in 0..6u32 {
            let m = a
                .select(Axis(1), &groups.members(donor))
                .mean_axis(Axis(1))
                .unwrap();
            let planted = &o.row(donor as usize) - &common;
            let corr = m.dot(&planted) / (m.dot(&m) * planted.dot(&planted)).sqrt();
            assert!(corr > 0.9, "donor {donor}: correlation {corr}");
        }
        // The leading principal direction concentrates on the strongest program's support.
        let u = leading_direction(a, 5);
        let s0 = &b.truth.loadings[0].indices;
        let mass = mass_on(&u, s0);
        assert!(mass > 0.6, "mass {mass} on {} genes", s0.len());
        // Loadings do not depend on the sample count (separate random streams).
        let small = BrainStandin {
            donor_sizes: vec![5, 7],
            ..g.clone()
        }
        .generate()
        .unwrap();
        assert_eq!(small.truth.loadings, b.truth.loadings);
        assert_eq!(small.data.groups().unwrap().counts(), vec![5, 7]);
    }

    #[test]
    fn invalid_parameters_are_param_errors() {
        let p = ProstateStandin::default();
        let bad = [
            ProstateStandin {
                genes: 1,
                ..p.clone()
            },
            ProstateStandin {
                tumor: 0,
                ..p.clone()
            },
            ProstateStandin {
                factors: 0,
                ..p.clone()
            },
            ProstateStandin {
                shifted_factor: 10,
                ..p.clone()
            },
            ProstateStandin {
                support_min: 0.0,
                ..p.clone()
            },
            ProstateStandin {
                support_min: 0.2,
                support_max: 0.1,
                ..p.clone()
            },
            ProstateStandin {
                support_max: 1.5,
                ..p.clone()
            },
            ProstateStandin {
                strength: f64::NAN,
                ..p.clone()
            },
            ProstateStandin {
                shift: f64::INFINITY,
                ..p.clone()
            },
            ProstateStandin {
                noise_median: 0.0,
                ..p.clone()
            },
            ProstateStandin {
                noise_log_sd: -1.0,
                ..p.clone()
            },
            ProstateStandin {
                genes: 1 << 40,
                ..p.clone()
            },
        ];
        for (i, g) in bad.iter().enumerate() {
            assert!(matches!(g.generate(), Err(DataError::Param(_))), "case {i}");
        }
        let b = BrainStandin::ci();
        let bad = [
            BrainStandin {
                donor_sizes: vec![],
                ..b.clone()
            },
            BrainStandin {
                donor_sizes: vec![3, 0],
                ..b.clone()
            },
            BrainStandin {
                donor_offset_sd: -0.1,
                ..b.clone()
            },
            BrainStandin {
                programs: 2001,
                ..b.clone()
            },
            BrainStandin {
                donor_sizes: vec![usize::MAX, 2],
                ..b.clone()
            },
        ];
        for (i, g) in bad.iter().enumerate() {
            assert!(
                matches!(g.generate(), Err(DataError::Param(_))),
                "brain case {i}"
            );
        }
    }

    #[test]
    fn configs_deserialize_with_defaults_and_reject_unknown_fields() {
        let empty = std::iter::empty::<(&str, u64)>();
        let p = ProstateStandin::deserialize(MapDeserializer::<_, ValueError>::new(empty)).unwrap();
        assert_eq!(p, ProstateStandin::default());
        let some = [("genes", 500u64), ("seed", 9)];
        let p =
            ProstateStandin::deserialize(MapDeserializer::<_, ValueError>::new(some.into_iter()))
                .unwrap();
        assert_eq!((p.genes, p.seed, p.tumor), (500, 9, 52));
        let unknown = [("genez", 500u64)];
        let e = ProstateStandin::deserialize(MapDeserializer::<_, ValueError>::new(
            unknown.into_iter(),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("genez"), "{e}");
        let e = BrainStandin::deserialize(MapDeserializer::<_, ValueError>::new(
            [("donors", 6u64)].into_iter(),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("donors"), "{e}");
        let b = BrainStandin::deserialize(MapDeserializer::<_, ValueError>::new(
            [("genes", 2000u64)].into_iter(),
        ))
        .unwrap();
        assert_eq!(b, BrainStandin::ci());
    }
}
