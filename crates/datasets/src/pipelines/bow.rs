//! Per-level visual dictionaries and bags of visual words with zero-descriptor counts
//! (FuncISH §2.3, §2.4; the spatial-pyramid variant of §2.12 / Fig. S7).
//!
//! # Dictionaries (§2.3)
//!
//! One dictionary of `K` words per resolution level, fitted on the **non-zero** descriptors
//! of that level pooled over all fitting images ([`DictionarySampler`]):
//!
//! * **Sample** [A]: the pooled descriptors of a level are far too many (~1.6·10¹⁰ in the
//!   paper), so each level keeps a uniform random sample of at most
//!   `max_samples_per_level` descriptors (default 2·10⁶), by reservoir sampling
//!   (Vitter's algorithm R: the `i`-th descriptor offered, 0-based, is kept while the
//!   reservoir is not full, else it replaces slot `j` when a uniform `j ∈ 0..=i` is below
//!   the capacity). Memory is bounded by the capacity (`128 · 4` bytes per descriptor and
//!   level), the sample is uniform over everything offered, and it depends only on the seed
//!   and on the order the images are offered in (each level has its own generator,
//!   `derive_seed(seed, "funcish-bow/sample/level<l>")`).
//! * **k-means** (§2.3): Lloyd iterations with squared Euclidean distance from `K` distinct
//!   sample descriptors chosen uniformly at random, until no assignment changes or
//!   `max_iter` assignment steps (the existing [`super::kmeans::lloyd`] with tolerance 0,
//!   which also stops when a step does not lower the energy); an empty cluster is re-seeded
//!   at the point farthest from its centre (that module's rule; the spec's "random point" is
//!   an [A] it leaves open). `restarts` runs (default 3), keeping the lowest energy (sum of
//!   squared distances of the sample to its nearest centre), via
//!   [`super::kmeans::lloyd_restarts`], with the generator
//!   `derive_seed(seed, "funcish-bow/kmeans/level<l>")`.
//! * A level with fewer sampled descriptors than `K` is an error naming the level (choose a
//!   smaller `K`, fewer levels or a smaller `bin` for small images): no silent shrinking.
//! * Words are assigned by the nearest centroid (squared Euclidean, ties to the lower word
//!   index) — [`Dictionaries::assign`].
//!
//! # Bag of words (§2.4)
//!
//! [`Dictionaries::bag`] gives `L·K + L` raw counts laid out
//! `[level 0 words (K) | level 1 words | … | level L−1 words | zero count of level 0 | … |
//! zero count of level L−1]` (§2.4's layout; scaling is left to the learner).
//!
//! # Spatial pyramid (§2.12, Fig. S7) [A]
//!
//! [`Dictionaries::pyramid_bag`]: the original image is cut into `g × g` equal rectangles
//! for every `g` of [`PyramidConfig::grids`] (default 1, 2, 4: 1 + 4 + 16 = 21 regions,
//! Lazebnik et al. 2006); a descriptor belongs to the rectangle holding its keypoint centre
//! in original pixels (`region = min(⌊x·g/W⌋, g − 1)` per axis, so a centre on a boundary
//! goes to the right/lower rectangle). Regions are numbered grid by grid, row-major inside
//! a grid (region 0 is the whole image). The vector is
//! `[level 0: region 0 words (K) | region 1 words | … | level 1: … ]` (`L·R·K` word counts)
//! followed by the zero-descriptor counts: **per region** by default
//! (`zero_counts = "per_region"`: `L·R` counts, level-major, so the pyramid keeps the
//! location of the dark background, the most informative feature of the flat model) or
//! `"per_level"` (`L` counts, as in the flat bag). With per-region counts, region 0's
//! words and zero count equal the flat bag's. The paper does not say how it treated zero
//! counts in the pyramid; its K = 100 gives 8,400 word features, + 84 with per-region
//! counts.
//!
//! # Identity
//!
//! [`identity_text`] (also [`Dictionaries::identity_text`]) is the canonical text of
//! everything that defines a set of dictionaries apart from the fitting images: the
//! version tags, the dense-SIFT configuration, the dictionary configuration and the seed.
//! The caller adds the identity of the fitting images (and their order: the reservoir
//! depends on it).

use super::dsift::{DESCRIPTOR_DIM, DSIFT_VERSION, DsiftConfig, LevelDescriptors};
use super::kmeans::{self, nearest, sq_norms};
use crate::DataError;
use dyad_core::{Rng, derive_seed, seeded};
use ndarray::ArrayView2;
use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Version tag of the dictionary and bag definitions (part of every identity).
pub const BOW_VERSION: &str = "dyad-funcish-bow/v1";

fn default_k() -> usize {
    500
}
fn default_restarts() -> usize {
    3
}
fn default_max_iter() -> usize {
    100
}
fn default_max_samples() -> usize {
    2_000_000
}

/// Dictionary parameters (FuncISH §2.3). Unknown fields are errors; absent fields take the
/// defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DictionaryConfig {
    /// Words per level (500; the paper also tried 100, 200, 1000).
    #[serde(default = "default_k")]
    pub k: usize,
    /// k-means runs per level; the lowest energy is kept (3).
    #[serde(default = "default_restarts")]
    pub restarts: usize,
    /// Lloyd assignment steps per run at most (100).
    #[serde(default = "default_max_iter")]
    pub max_iter: usize,
    /// Reservoir capacity per level (2,000,000).
    #[serde(default = "default_max_samples")]
    pub max_samples_per_level: usize,
}

impl Default for DictionaryConfig {
    fn default() -> Self {
        DictionaryConfig {
            k: default_k(),
            restarts: default_restarts(),
            max_iter: default_max_iter(),
            max_samples_per_level: default_max_samples(),
        }
    }
}

impl DictionaryConfig {
    /// Check every field's range (cheap, no data).
    pub fn validate(&self) -> Result<(), DataError> {
        let bad = |m: String| Err(DataError::Param(format!("visual dictionary: {m}")));
        if !(1..=1 << 20).contains(&self.k) {
            return bad(format!("k must be in 1..=2^20, got {}", self.k));
        }
        if !(1..=1000).contains(&self.restarts) {
            return bad(format!(
                "restarts must be in 1..=1000, got {}",
                self.restarts
            ));
        }
        if self.max_iter == 0 {
            return bad("max_iter must be >= 1, got 0".into());
        }
        if self.max_samples_per_level < self.k || self.max_samples_per_level > 1 << 32 {
            return bad(format!(
                "max_samples_per_level must be in k..=2^32 (k = {}), got {}",
                self.k, self.max_samples_per_level
            ));
        }
        Ok(())
    }

    /// The canonical text form (TOML `key = value` lines in a fixed order).
    pub fn canonical(&self) -> String {
        format!(
            "k = {}\nrestarts = {}\nmax_iter = {}\nmax_samples_per_level = {}\n",
            self.k, self.restarts, self.max_iter, self.max_samples_per_level
        )
    }
}

/// Where the spatial pyramid keeps the zero-descriptor counts (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PyramidZeros {
    /// One count per level and region (`L·R`).
    PerRegion,
    /// One count per level (`L`), as in the flat bag.
    PerLevel,
}

fn default_grids() -> Vec<usize> {
    vec![1, 2, 4]
}
fn default_pyramid_zeros() -> PyramidZeros {
    PyramidZeros::PerRegion
}

/// Spatial-pyramid parameters (§2.12, Fig. S7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PyramidConfig {
    /// Grid sides; `g` cuts the image into `g × g` rectangles ([1, 2, 4]: 21 regions).
    #[serde(default = "default_grids")]
    pub grids: Vec<usize>,
    /// Zero counts per region (default) or per level.
    #[serde(default = "default_pyramid_zeros")]
    pub zero_counts: PyramidZeros,
}

impl Default for PyramidConfig {
    fn default() -> Self {
        PyramidConfig {
            grids: default_grids(),
            zero_counts: default_pyramid_zeros(),
        }
    }
}

impl PyramidConfig {
    pub fn validate(&self) -> Result<(), DataError> {
        if self.grids.is_empty() || self.grids.iter().any(|&g| !(1..=64).contains(&g)) {
            return Err(DataError::Param(format!(
                "spatial pyramid: grids must be a non-empty list of sides in 1..=64, got {:?}",
                self.grids
            )));
        }
        Ok(())
    }

    /// Number of regions `R = Σ g²`.
    pub fn regions(&self) -> usize {
        self.grids.iter().map(|g| g * g).sum()
    }
}

/// The canonical identity text of dictionaries fitted with these settings (module docs).
pub fn identity_text(dsift: &DsiftConfig, dict: &DictionaryConfig, seed: u64) -> String {
    format!(
        "version = \"{BOW_VERSION}\"\ndsift_version = \"{DSIFT_VERSION}\"\nseed = {seed}\n\
         [dsift]\n{}[dictionary]\n{}",
        dsift.canonical(),
        dict.canonical()
    )
}

/// One level's reservoir.
struct Reservoir {
    data: Vec<f32>,
    seen: u64,
    rng: Rng,
}

/// Bounded-memory uniform sample of every level's non-zero descriptors over many images,
/// then the dictionaries (module docs).
pub struct DictionarySampler {
    dsift: DsiftConfig,
    config: DictionaryConfig,
    seed: u64,
    levels: Vec<Reservoir>,
}

impl DictionarySampler {
    /// An empty sampler for images described with `dsift` (its `levels` levels).
    pub fn new(
        dsift: &DsiftConfig,
        config: &DictionaryConfig,
        seed: u64,
    ) -> Result<Self, DataError> {
        dsift.validate()?;
        config.validate()?;
        Ok(DictionarySampler {
            dsift: dsift.clone(),
            config: config.clone(),
            seed,
            levels: (0..dsift.levels)
                .map(|l| Reservoir {
                    data: Vec::new(),
                    seen: 0,
                    rng: seeded(derive_seed(seed, &format!("funcish-bow/sample/level{l}"))),
                })
                .collect(),
        })
    }

    /// Offer one image's descriptors (all its levels, in level order).
    pub fn add(&mut self, image: &[LevelDescriptors]) -> Result<(), DataError> {
        check_levels(&self.dsift, image)?;
        let cap = self.config.max_samples_per_level;
        for (res, lv) in self.levels.iter_mut().zip(image) {
            for d in lv.descriptors.rows() {
                let d = d.as_slice().expect("descriptor rows are contiguous");
                let len = res.data.len() / DESCRIPTOR_DIM;
                if len < cap {
                    res.data.extend_from_slice(d);
                } else {
                    let j = res.rng.random_range(0..=res.seen);
                    if (j as usize) < cap {
                        let j = j as usize;
                        res.data[j * DESCRIPTOR_DIM..(j + 1) * DESCRIPTOR_DIM].copy_from_slice(d);
                    }
                }
                res.seen += 1;
            }
        }
        Ok(())
    }

    /// Descriptors offered at `level` so far.
    pub fn seen(&self, level: usize) -> u64 {
        self.levels.get(level).map_or(0, |r| r.seen)
    }

    /// The current sample of `level` (`n × 128`).
    pub fn sample(&self, level: usize) -> Option<ArrayView2<'_, f32>> {
        let r = self.levels.get(level)?;
        ArrayView2::from_shape((r.data.len() / DESCRIPTOR_DIM, DESCRIPTOR_DIM), &r.data).ok()
    }

    /// Fit every level's dictionary on its sample.
    pub fn fit(&self) -> Result<Dictionaries, DataError> {
        let c = &self.config;
        let mut levels = Vec::with_capacity(self.levels.len());
        for (l, res) in self.levels.iter().enumerate() {
            let n = res.data.len() / DESCRIPTOR_DIM;
            if n < c.k {
                return Err(DataError::Param(format!(
                    "visual dictionary: level {l} has {n} non-zero descriptors in its sample \
                     (of {} offered), fewer than k = {}: use a smaller k, fewer levels or a \
                     smaller bin for these images",
                    res.seen, c.k
                )));
            }
            let mut rng = seeded(derive_seed(
                self.seed,
                &format!("funcish-bow/kmeans/level{l}"),
            ));
            let r = kmeans::lloyd_restarts(
                &res.data,
                DESCRIPTOR_DIM,
                c.k,
                c.restarts,
                c.max_iter,
                0.0,
                &mut rng,
            )?;
            levels.push(LevelDictionary {
                energy: Some(r.energies[r.best_run]),
                restart_energies: r.energies,
                iterations: r.best.iterations,
                samples: n,
                seen: res.seen,
                centroids: r.best.centroids,
            });
        }
        Ok(Dictionaries {
            dsift: self.dsift.clone(),
            config: self.config.clone(),
            seed: self.seed,
            levels,
        })
    }
}

fn check_levels(dsift: &DsiftConfig, image: &[LevelDescriptors]) -> Result<(), DataError> {
    if image.len() != dsift.levels {
        return Err(DataError::Param(format!(
            "visual words: expected {} levels of descriptors, got {}",
            dsift.levels,
            image.len()
        )));
    }
    for (l, lv) in image.iter().enumerate() {
        if lv.level != l || lv.bin != dsift.bin || lv.step != dsift.step {
            return Err(DataError::Param(format!(
                "visual words: entry {l} holds level {} with bin {} and step {}; expected level \
                 {l} with bin {} and step {}",
                lv.level, lv.bin, lv.step, dsift.bin, dsift.step
            )));
        }
    }
    Ok(())
}

/// One level's dictionary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelDictionary {
    /// `K × 128` row-major word centroids.
    pub centroids: Vec<f32>,
    /// Energy of the kept run on the sample (None for given centroids).
    pub energy: Option<f64>,
    /// Energy of every run, in run order.
    pub restart_energies: Vec<f64>,
    /// Assignment steps of the kept run.
    pub iterations: usize,
    /// Sampled descriptors the dictionary was fitted on.
    pub samples: usize,
    /// Descriptors offered (non-zero descriptors of all fitting images).
    pub seen: u64,
}

/// The per-level dictionaries (serialisable: cache them with [`Dictionaries::identity_text`]
/// plus the fitting images' identity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dictionaries {
    pub dsift: DsiftConfig,
    pub config: DictionaryConfig,
    pub seed: u64,
    pub levels: Vec<LevelDictionary>,
}

impl Dictionaries {
    /// Dictionaries from given centroids (`levels` lists of `K × 128` values), e.g. to
    /// re-use words fitted elsewhere. No energies, counts 0.
    pub fn from_centroids(
        dsift: &DsiftConfig,
        config: &DictionaryConfig,
        seed: u64,
        centroids: Vec<Vec<f32>>,
    ) -> Result<Self, DataError> {
        dsift.validate()?;
        config.validate()?;
        if centroids.len() != dsift.levels
            || centroids
                .iter()
                .any(|c| c.len() != config.k * DESCRIPTOR_DIM)
            || centroids.iter().flatten().any(|v| !v.is_finite())
        {
            return Err(DataError::Param(format!(
                "visual dictionary: need {} levels of {} finite centroids of dimension {DESCRIPTOR_DIM}",
                dsift.levels, config.k
            )));
        }
        Ok(Dictionaries {
            dsift: dsift.clone(),
            config: config.clone(),
            seed,
            levels: centroids
                .into_iter()
                .map(|centroids| LevelDictionary {
                    centroids,
                    energy: None,
                    restart_energies: Vec::new(),
                    iterations: 0,
                    samples: 0,
                    seen: 0,
                })
                .collect(),
        })
    }

    /// Words per level.
    pub fn k(&self) -> usize {
        self.config.k
    }

    /// Number of levels `L`.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Length of [`Dictionaries::bag`]: `L·K + L`.
    pub fn bag_len(&self) -> usize {
        self.num_levels() * (self.k() + 1)
    }

    /// Length of [`Dictionaries::pyramid_bag`].
    pub fn pyramid_len(&self, p: &PyramidConfig) -> usize {
        let (l, r) = (self.num_levels(), p.regions());
        l * r * self.k()
            + match p.zero_counts {
                PyramidZeros::PerRegion => l * r,
                PyramidZeros::PerLevel => l,
            }
    }

    /// The `K × 128` centroids of `level`.
    pub fn centroids(&self, level: usize) -> Option<ArrayView2<'_, f32>> {
        let d = self.levels.get(level)?;
        ArrayView2::from_shape((self.k(), DESCRIPTOR_DIM), &d.centroids).ok()
    }

    /// The centroid of `word` at `level` (a 128-value descriptor, see
    /// [`super::dsift::as_cells`] for its 4 × 4 × 8 view): a Fig. 5 glyph.
    pub fn centroid(&self, level: usize, word: usize) -> Option<&[f32]> {
        let d = self.levels.get(level)?;
        d.centroids
            .get(word * DESCRIPTOR_DIM..(word + 1) * DESCRIPTOR_DIM)
    }

    /// Content identity text (module docs).
    pub fn identity_text(&self) -> String {
        identity_text(&self.dsift, &self.config, self.seed)
    }

    /// The word of each stored descriptor of `level` (same order as its rows).
    pub fn assign(&self, level: &LevelDescriptors) -> Result<Vec<u32>, DataError> {
        let d = self.levels.get(level.level).ok_or_else(|| {
            DataError::Param(format!(
                "visual words: no dictionary for level {} (have {})",
                level.level,
                self.num_levels()
            ))
        })?;
        if level.bin != self.dsift.bin || level.step != self.dsift.step {
            return Err(DataError::Param(format!(
                "visual words: descriptors with bin {} and step {} against dictionaries of bin \
                 {} and step {}",
                level.bin, level.step, self.dsift.bin, self.dsift.step
            )));
        }
        let norms = sq_norms(&d.centroids, DESCRIPTOR_DIM);
        Ok(level
            .descriptors
            .rows()
            .into_iter()
            .map(|x| {
                let x = x.as_slice().expect("descriptor rows are contiguous");
                nearest(&d.centroids, &norms, DESCRIPTOR_DIM, x).0 as u32
            })
            .collect())
    }

    /// The bag of words of one image: `L·K + L` raw counts (module docs).
    pub fn bag(&self, image: &[LevelDescriptors]) -> Result<Vec<f64>, DataError> {
        check_levels(&self.dsift, image)?;
        let (k, nl) = (self.k(), self.num_levels());
        let mut out = vec![0f64; self.bag_len()];
        for (l, lv) in image.iter().enumerate() {
            for w in self.assign(lv)? {
                out[l * k + w as usize] += 1.0;
            }
            out[nl * k + l] = lv.zero_count as f64;
        }
        Ok(out)
    }

    /// The spatial-pyramid bag of one image (module docs).
    pub fn pyramid_bag(
        &self,
        image: &[LevelDescriptors],
        p: &PyramidConfig,
    ) -> Result<Vec<f64>, DataError> {
        p.validate()?;
        check_levels(&self.dsift, image)?;
        let (k, nl, nr) = (self.k(), self.num_levels(), p.regions());
        let mut out = vec![0f64; self.pyramid_len(p)];
        let zeros_at = nl * nr * k;
        let mut regions = Vec::with_capacity(nr);
        for (l, lv) in image.iter().enumerate() {
            let words = self.assign(lv)?;
            for (&g, &w) in lv.grid_index.iter().zip(&words) {
                regions_of(lv, g as usize, &p.grids, &mut regions);
                for &r in &regions {
                    out[(l * nr + r) * k + w as usize] += 1.0;
                }
            }
            match p.zero_counts {
                PyramidZeros::PerLevel => out[zeros_at + l] = lv.zero_count as f64,
                PyramidZeros::PerRegion => {
                    for g in lv.zero_grid_index() {
                        regions_of(lv, g as usize, &p.grids, &mut regions);
                        for &r in &regions {
                            out[zeros_at + l * nr + r] += 1.0;
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The pyramid regions (one per grid) holding grid keypoint `g` of `lv`.
fn regions_of(lv: &LevelDescriptors, g: usize, grids: &[usize], out: &mut Vec<usize>) {
    out.clear();
    let (x, y) = lv.original_position(g);
    let (h, w) = lv.original_shape;
    let mut offset = 0;
    for &n in grids {
        let cell = |p: f32, side: usize| {
            (((p as f64) * n as f64 / side as f64).floor().max(0.0) as usize).min(n - 1)
        };
        out.push(offset + cell(y, h) * n + cell(x, w));
        offset += n * n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipelines::dsift::{Window, multiscale_dsift};
    use ndarray::Array2;

    fn dsift_cfg(levels: usize) -> DsiftConfig {
        DsiftConfig {
            bin: 3,
            step: 3,
            levels,
            window: Window::Flat,
            zero_tol: 1e-12,
        }
    }

    fn dict_cfg(k: usize) -> DictionaryConfig {
        DictionaryConfig {
            k,
            restarts: 3,
            max_iter: 50,
            max_samples_per_level: 5000,
        }
    }

    /// A textured image with black top and bottom bands and a black left half.
    fn image(h: usize, w: usize, seed: u64) -> Array2<f32> {
        let mut rng = seeded(seed);
        let f = rng.random_range(0.2..0.6f32);
        Array2::from_shape_fn((h, w), |(y, x)| {
            if x < w / 2 || y < 6 || y + 6 >= h {
                0.0
            } else {
                let v = 50.0 + 30.0 * (f * x as f32).sin() + 20.0 * (0.3 * y as f32 + f).cos();
                v + rng.random_range(0.0..25.0f32)
            }
        })
    }

    /// Hand-made level: the given descriptors, stored at grid indices 0.., then `zeros`
    /// zero descriptors, on a `1 × (n + zeros)` grid.
    fn fake_level(level: usize, descs: &[Vec<f32>], zeros: usize) -> LevelDescriptors {
        let c = dsift_cfg(1);
        let n = descs.len();
        LevelDescriptors {
            level,
            bin: c.bin,
            step: c.step,
            level_shape: (14, 100),
            original_shape: (14 << level, 100 << level),
            grid: (1, n + zeros),
            descriptors: Array2::from_shape_vec((n, 128), descs.concat()).unwrap(),
            grid_index: (0..n as u32).collect(),
            zero_count: zeros,
        }
    }

    #[test]
    fn configs_defaults_canonical_forms_and_validation() {
        let d = DictionaryConfig::default();
        assert_eq!(
            (d.k, d.restarts, d.max_iter, d.max_samples_per_level),
            (500, 3, 100, 2_000_000)
        );
        assert_eq!(toml::from_str::<DictionaryConfig>("").unwrap(), d);
        assert_eq!(
            toml::from_str::<DictionaryConfig>(&d.canonical()).unwrap(),
            d
        );
        assert!(toml::from_str::<DictionaryConfig>("words = 3").is_err());
        d.validate().unwrap();
        for bad in [
            DictionaryConfig { k: 0, ..d.clone() },
            DictionaryConfig {
                restarts: 0,
                ..d.clone()
            },
            DictionaryConfig {
                max_iter: 0,
                ..d.clone()
            },
            DictionaryConfig {
                max_samples_per_level: 499,
                ..d.clone()
            },
        ] {
            assert!(
                bad.validate()
                    .unwrap_err()
                    .to_string()
                    .contains("visual dictionary")
            );
        }
        let p = PyramidConfig::default();
        assert_eq!(p.regions(), 21);
        assert_eq!(toml::from_str::<PyramidConfig>("").unwrap(), p);
        assert_eq!(
            toml::from_str::<PyramidConfig>("zero_counts = \"per_level\"")
                .unwrap()
                .zero_counts,
            PyramidZeros::PerLevel
        );
        assert!(
            PyramidConfig {
                grids: vec![],
                ..p.clone()
            }
            .validate()
            .is_err()
        );
        assert!(
            PyramidConfig {
                grids: vec![0],
                ..p
            }
            .validate()
            .is_err()
        );
        let s = DsiftConfig::default();
        let t = identity_text(&s, &d, 1);
        assert!(t.contains(BOW_VERSION) && t.contains(DSIFT_VERSION) && t.contains("k = 500"));
        assert_ne!(t, identity_text(&s, &d, 2));
        assert_ne!(
            t,
            identity_text(
                &s,
                &DictionaryConfig {
                    k: 100,
                    ..d.clone()
                },
                1
            )
        );
        assert_ne!(t, identity_text(&DsiftConfig { bin: 8, ..s }, &d, 1));
    }

    #[test]
    fn reservoir_is_bounded_uniform_and_deterministic() {
        // 1000 descriptors offered over 10 images; descriptor i carries i in entry 0.
        let offer = |seed: u64| {
            let c = DictionaryConfig {
                k: 1,
                max_samples_per_level: 100,
                ..dict_cfg(1)
            };
            let mut s = DictionarySampler::new(&dsift_cfg(1), &c, seed).unwrap();
            for img in 0..10 {
                let descs: Vec<Vec<f32>> = (0..100)
                    .map(|i| {
                        let mut d = vec![0f32; 128];
                        d[0] = (img * 100 + i) as f32;
                        d
                    })
                    .collect();
                s.add(&[fake_level(0, &descs, 3)]).unwrap();
            }
            assert_eq!(s.seen(0), 1000);
            let ids: Vec<usize> = s
                .sample(0)
                .unwrap()
                .column(0)
                .iter()
                .map(|&v| v as usize)
                .collect();
            ids
        };
        let a = offer(5);
        assert_eq!(a.len(), 100);
        let mut u = a.clone();
        u.sort_unstable();
        u.dedup();
        assert_eq!(u.len(), 100);
        assert_eq!(a, offer(5));
        assert_ne!(a, offer(6));
        // Uniform: over 200 seeds each descriptor is kept with probability 0.1; the ten
        // images' (100 descriptors each) inclusion counts average 2000 with sd ≈ 42.
        let mut per_image = [0usize; 10];
        for seed in 0..200 {
            for id in offer(seed) {
                per_image[id / 100] += 1;
            }
        }
        for (i, &c) in per_image.iter().enumerate() {
            assert!((1800..2200).contains(&c), "image {i}: {c} ({per_image:?})");
        }
    }

    #[test]
    fn fitting_keeps_the_lowest_energy_is_deterministic_and_checks_sizes() {
        let c = dsift_cfg(2);
        let images: Vec<Vec<LevelDescriptors>> = (0..3)
            .map(|s| multiscale_dsift(image(40, 60, s).view(), &c).unwrap())
            .collect();
        let fit = |seed: u64, dc: &DictionaryConfig| {
            let mut s = DictionarySampler::new(&c, dc, seed).unwrap();
            for im in &images {
                s.add(im).unwrap();
            }
            s.fit()
        };
        let dc = dict_cfg(6);
        let d = fit(1, &dc).unwrap();
        assert_eq!(d.num_levels(), 2);
        assert_eq!(d, fit(1, &dc).unwrap());
        assert_ne!(d, fit(2, &dc).unwrap());
        for (l, lv) in d.levels.iter().enumerate() {
            let offered: usize = images.iter().map(|im| im[l].len()).sum();
            assert_eq!(lv.seen as usize, offered);
            assert_eq!(lv.samples, offered.min(dc.max_samples_per_level));
            assert_eq!(lv.restart_energies.len(), 3);
            let min = lv
                .restart_energies
                .iter()
                .cloned()
                .fold(f64::INFINITY, f64::min);
            assert_eq!(lv.energy, Some(min));
            // The stored energy is the energy of the stored centroids on the sample.
            let s = {
                let mut s = DictionarySampler::new(&c, &dc, 1).unwrap();
                images.iter().for_each(|im| s.add(im).unwrap());
                s.sample(l).unwrap().to_owned()
            };
            let e = kmeans::energy(s.as_slice().unwrap(), 128, &lv.centroids);
            assert!((e - min).abs() < 1e-9 * e);
        }
        assert_eq!(d.centroid(1, 5).unwrap().len(), 128);
        assert!(d.centroid(1, 6).is_none() && d.centroid(2, 0).is_none());
        assert_eq!(d.centroids(0).unwrap().dim(), (6, 128));
        // Serde round trip (JSON), and the identity text.
        let back: Dictionaries = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(back, d);
        assert_eq!(d.identity_text(), identity_text(&c, &dc, 1));
        // Too few descriptors for k at the coarse level: an error naming the level.
        let n1: usize = images.iter().map(|im| im[1].len()).sum();
        let e = fit(1, &dict_cfg(n1 + 1)).unwrap_err().to_string();
        assert!(e.contains("level 1"), "{e}");
        // Mismatched levels are refused.
        let mut s = DictionarySampler::new(&c, &dc, 1).unwrap();
        assert!(s.add(&images[0][..1]).is_err());
        let other = multiscale_dsift(
            image(40, 60, 0).view(),
            &DsiftConfig {
                bin: 2,
                ..c.clone()
            },
        )
        .unwrap();
        assert!(s.add(&other).is_err());
    }

    #[test]
    fn bags_count_every_descriptor_and_assign_to_the_nearest_word() {
        let c = dsift_cfg(2);
        let dc = dict_cfg(5);
        let mut s = DictionarySampler::new(&c, &dc, 3).unwrap();
        let images: Vec<Vec<LevelDescriptors>> = (0..4)
            .map(|s| multiscale_dsift(image(48, 64, 10 + s).view(), &c).unwrap())
            .collect();
        images.iter().for_each(|im| s.add(im).unwrap());
        let d = s.fit().unwrap();
        for im in &images {
            let bag = d.bag(im).unwrap();
            assert_eq!(bag.len(), 2 * 5 + 2);
            assert_eq!(d.bag_len(), bag.len());
            let total: f64 = bag.iter().sum();
            let expect: usize = im.iter().map(|l| l.len() + l.zero_count).sum();
            assert_eq!(total, expect as f64);
            for (l, lv) in im.iter().enumerate() {
                assert!(lv.zero_count > 0 && !lv.is_empty());
                assert_eq!(bag[l * 5..(l + 1) * 5].iter().sum::<f64>(), lv.len() as f64);
                assert_eq!(bag[10 + l], lv.zero_count as f64);
                // Brute-force nearest word in f64.
                let words = d.assign(lv).unwrap();
                for (x, &w) in lv.descriptors.rows().into_iter().zip(&words) {
                    let dist = |j: usize| -> f64 {
                        d.centroid(l, j)
                            .unwrap()
                            .iter()
                            .zip(x)
                            .map(|(a, b)| f64::from(a - b).powi(2))
                            .sum()
                    };
                    let best = (0..5).map(dist).fold(f64::INFINITY, f64::min);
                    assert!(dist(w as usize) <= best + 1e-5);
                }
            }
        }
        // By hand: two words per level; descriptors near each.
        let unit = |i: usize| {
            let mut v = vec![0f32; 128];
            v[i] = 1.0;
            v
        };
        let hand = Dictionaries::from_centroids(
            &DsiftConfig {
                levels: 2,
                ..dsift_cfg(1)
            },
            &DictionaryConfig {
                k: 2,
                ..dict_cfg(2)
            },
            0,
            vec![[unit(0), unit(1)].concat(), [unit(2), unit(3)].concat()],
        )
        .unwrap();
        let lv0 = fake_level(0, &[unit(1), unit(0), unit(1), unit(5)], 2);
        let lv1 = fake_level(1, &[unit(3)], 7);
        assert_eq!(hand.assign(&lv0).unwrap(), vec![1, 0, 1, 0]);
        assert_eq!(
            hand.bag(&[lv0.clone(), lv1.clone()]).unwrap(),
            vec![2.0, 2.0, 0.0, 1.0, 2.0, 7.0]
        );
        assert!(hand.bag(std::slice::from_ref(&lv0)).is_err());
        assert!(hand.bag(&[lv1.clone(), lv0.clone()]).is_err());
        assert!(
            Dictionaries::from_centroids(&dsift_cfg(1), &dict_cfg(2), 0, vec![unit(0)]).is_err()
        );
        let back: Dictionaries =
            serde_json::from_str(&serde_json::to_string(&hand).unwrap()).unwrap();
        assert_eq!(back, hand);
    }

    #[test]
    fn spatial_pyramid_counts_by_region() {
        let c = dsift_cfg(2);
        let dc = dict_cfg(4);
        let img = image(60, 80, 31);
        let levels = multiscale_dsift(img.view(), &c).unwrap();
        let mut s = DictionarySampler::new(&c, &dc, 4).unwrap();
        s.add(&levels).unwrap();
        let d = s.fit().unwrap();
        let flat = d.bag(&levels).unwrap();
        let p = PyramidConfig::default();
        let pyr = d.pyramid_bag(&levels, &p).unwrap();
        let (k, r) = (4, 21);
        assert_eq!(pyr.len(), 2 * r * k + 2 * r);
        assert_eq!(d.pyramid_len(&p), pyr.len());
        let zeros = 2 * r * k;
        for l in 0..2 {
            // Region 0 is the whole image: the flat bag.
            assert_eq!(
                &pyr[(l * r) * k..(l * r + 1) * k],
                &flat[l * k..(l + 1) * k]
            );
            assert_eq!(pyr[zeros + l * r], flat[2 * k + l]);
            // Every grid partitions the descriptors: per word, its regions sum to the total.
            for (start, n) in [(1, 4), (5, 16)] {
                for w in 0..k {
                    let sum: f64 = (start..start + n).map(|q| pyr[(l * r + q) * k + w]).sum();
                    assert_eq!(sum, flat[l * k + w]);
                }
                let z: f64 = (start..start + n).map(|q| pyr[zeros + l * r + q]).sum();
                assert_eq!(z, flat[2 * k + l]);
            }
        }
        // The left half is black: at level 0 the leftmost 4x4 column of regions has only
        // zero descriptors, and the 2x2 regions on the left hold most zero counts.
        for row in 0..4 {
            let q = 5 + row * 4;
            assert_eq!(
                pyr[q * k..(q + 1) * k].iter().sum::<f64>(),
                0.0,
                "region {q}"
            );
            assert!(pyr[zeros + q] > 0.0);
        }
        // Per-level zero counts: the words are the same, the zeros are the flat bag's.
        let pl = PyramidConfig {
            zero_counts: PyramidZeros::PerLevel,
            ..p
        };
        let pyr2 = d.pyramid_bag(&levels, &pl).unwrap();
        assert_eq!(pyr2.len(), 2 * r * k + 2);
        assert_eq!(&pyr2[..zeros], &pyr[..zeros]);
        assert_eq!(&pyr2[zeros..], &flat[2 * k..]);
        // Region of a keypoint by hand: original centre (x, y) = (70.5, 10.5) of an 80 x 60
        // image: grid 2 -> (row 0, col 1) = region 1 + 1; grid 4 -> (0, 3) = region 5 + 3.
        let mut lv = levels[0].clone();
        lv.original_shape = (60, 80);
        let g = (0..lv.grid_len())
            .find(|&g| lv.original_position(g) == (72.5, 9.5))
            .unwrap_or_else(|| {
                panic!(
                    "{:?}",
                    (0..lv.grid_len())
                        .map(|g| lv.original_position(g))
                        .collect::<Vec<_>>()
                )
            });
        let mut out = Vec::new();
        regions_of(&lv, g, &[1, 2, 4], &mut out);
        assert_eq!(out, vec![0, 2, 8]);
    }
    #[test]
    fn bags_separate_texture_families() {
        // Two families of stripes (vertical vs horizontal, random period and phase) on a
        // black background: bags of the same family are more alike than across families.
        let c = DsiftConfig {
            levels: 2,
            ..dsift_cfg(2)
        };
        let mut rng = seeded(8);
        let mut make = |vertical: bool| {
            let (period, phase) = (rng.random_range(5.0..9.0f32), rng.random_range(0.0..6.3f32));
            let img = Array2::from_shape_fn((64, 64), |(y, x)| {
                if x < 8 || y < 8 {
                    return 0.0;
                }
                let u = if vertical { x } else { y } as f32;
                100.0 + 50.0 * (std::f32::consts::TAU * u / period + phase).sin()
            });
            multiscale_dsift(img.view(), &c).unwrap()
        };
        let images: Vec<(bool, Vec<LevelDescriptors>)> =
            (0..8).map(|i| (i % 2 == 0, make(i % 2 == 0))).collect();
        let mut s = DictionarySampler::new(&c, &dict_cfg(6), 2).unwrap();
        images.iter().for_each(|(_, im)| s.add(im).unwrap());
        let d = s.fit().unwrap();
        let bags: Vec<Vec<f64>> = images.iter().map(|(_, im)| d.bag(im).unwrap()).collect();
        let cos = |a: &[f64], b: &[f64]| {
            let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            dot / (a.iter().map(|x| x * x).sum::<f64>() * b.iter().map(|x| x * x).sum::<f64>())
                .sqrt()
        };
        // Words only (the zero counts are the same for every image).
        let words = 2 * 6;
        let (mut within, mut across) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in 0..8 {
            for j in i + 1..8 {
                let s = cos(&bags[i][..words], &bags[j][..words]);
                if images[i].0 == images[j].0 {
                    within = within.min(s);
                } else {
                    across = across.max(s);
                }
            }
        }
        assert!(within > across + 0.3, "within {within}, across {across}");
    }
}
