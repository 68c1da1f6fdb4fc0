//! The visual phase of FuncISH's tasks (funcish.md §2.2–2.4, §2.12), shared by every cell on
//! one data set and configuration: dense multi-scale SIFT, per-level k-means dictionaries,
//! bags of words (flat or a spatial pyramid) and the NeuroBlast stand-in's coarse grid.
//! Extracting them takes 12 to 20 minutes at the paper's size on one core, so they are kept
//! on disk by content key (the data, the settings and the fingerprint of [`SOURCES`]) and read
//! back by later runs.

use crate::plan::SolverInstance;
use dyad_datasets::ish::{IshSet, coarse_grid};
use dyad_datasets::pipelines::bow::{
    Dictionaries, DictionaryConfig, DictionarySampler, PyramidConfig,
};
use dyad_datasets::pipelines::dsift::{DsiftConfig, multiscale_dsift};
use dyad_datasets::provider::{Data, Stored};
use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// The visual phase's settings (funcish.md §2.2–2.4, §2.12).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisualConfig {
    #[serde(default)]
    pub dsift: DsiftConfig,
    #[serde(default)]
    pub dictionary: DictionaryConfig,
    /// The spatial-pyramid variant (Fig. S7); absent: the flat bag of words.
    #[serde(default)]
    pub pyramid: Option<PyramidConfig>,
    /// The NeuroBlast stand-in's coarse grid (rows, columns): 16 × 32 (§8 item 4).
    #[serde(default = "grid")]
    pub grid: [usize; 2],
    /// Seed of the dictionaries (shared by every repeat).
    #[serde(default)]
    pub feature_seed: u64,
}

fn grid() -> [usize; 2] {
    [16, 32]
}

impl VisualConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        self.dsift.validate().map_err(|e| e.to_string())?;
        self.dictionary.validate().map_err(|e| e.to_string())?;
        if let Some(p) = &self.pyramid {
            p.validate().map_err(|e| e.to_string())?;
        }
        if self.grid.contains(&0) {
            return Err("`grid` needs positive rows and columns".into());
        }
        Ok(())
    }

    /// What the features of this configuration depend on besides the data: the settings and
    /// the code that extracts them ([`SOURCES`]), so that an edit of that code makes stored
    /// features unreachable instead of stale.
    pub(super) fn key(&self) -> String {
        format!(
            "funcish-features/v1|{}|{}",
            serde_json::to_string(self).expect("serializable"),
            crate::registry::fingerprint(SOURCES)
        )
    }
}

/// The visual features of every image.
pub struct Features {
    /// `images × D` bag-of-words counts.
    pub bow: Array2<f64>,
    /// `images × cells` coarse expression grid.
    pub coarse: Array2<f64>,
    pub dictionaries: Dictionaries,
    pub seconds: f64,
}

pub(super) fn ish<'a>(data: &'a Data, dataset: &str) -> Result<&'a IshSet, String> {
    data.get::<IshSet>().ok_or_else(|| {
        format!(
            "data set `{dataset}` is not a set of ISH images ({})",
            data.kind()
        )
    })
}

/// Images per batch when describing them in parallel (bounded memory: a batch's descriptors).
const BATCH: usize = 32;

fn extract(set: &IshSet, cfg: &VisualConfig) -> Result<Features, String> {
    let t0 = Instant::now();
    let n = set.n_images();
    let describe = |i: usize| -> Result<_, String> {
        let img = set.image(i).map_err(|e| e.to_string())?;
        multiscale_dsift(img.view(), &cfg.dsift).map_err(|e| e.to_string())
    };
    // Pass 1: the dictionaries' samples, offered in image order (deterministic).
    let mut sampler = DictionarySampler::new(&cfg.dsift, &cfg.dictionary, cfg.feature_seed)
        .map_err(|e| e.to_string())?;
    for start in (0..n).step_by(BATCH) {
        let batch: Vec<_> = (start..(start + BATCH).min(n))
            .into_par_iter()
            .map(describe)
            .collect::<Result<_, String>>()?;
        for levels in &batch {
            sampler.add(levels).map_err(|e| e.to_string())?;
        }
    }
    let dictionaries = sampler.fit().map_err(|e| e.to_string())?;
    // Pass 2: the bags and the coarse grids.
    let [gr, gc] = cfg.grid;
    let rows: Vec<(Vec<f64>, Vec<f64>)> = (0..n)
        .into_par_iter()
        .map(|i| {
            let img = set.image(i).map_err(|e| e.to_string())?;
            let levels = multiscale_dsift(img.view(), &cfg.dsift).map_err(|e| e.to_string())?;
            let bag = match &cfg.pyramid {
                None => dictionaries.bag(&levels),
                Some(p) => dictionaries.pyramid_bag(&levels, p),
            }
            .map_err(|e| e.to_string())?;
            Ok((bag, coarse_grid(&img, gr, gc)))
        })
        .collect::<Result<_, String>>()?;
    let d = rows.first().map_or(0, |r| r.0.len());
    let mut bow = Array2::zeros((n, d));
    let mut coarse = Array2::zeros((n, gr * gc));
    for (i, (b, c)) in rows.into_iter().enumerate() {
        bow.row_mut(i).assign(&ndarray::ArrayView1::from(&b));
        coarse.row_mut(i).assign(&ndarray::ArrayView1::from(&c));
    }
    Ok(Features {
        bow,
        coarse,
        dictionaries,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The features of `cfg` on this data: extracted once per loaded data set, and kept on disk
/// between runs (`results/cache/derived/`, see [`Data::derived_stored`]): a later process
/// reads them back, the same to the bit, instead of extracting them again. Their `seconds`
/// stay the extraction's own.
pub fn features(data: &Data, dataset: &str, cfg: &VisualConfig) -> Result<Arc<Features>, String> {
    let set = ish(data, dataset)?;
    data.derived_stored(&cfg.key(), || extract(set, cfg))
}

/// The code the features are computed by: their stored copies are keyed by its fingerprint.
pub const SOURCES: &[&str] = &[
    "harness/src/tasks/funcish/features.rs",
    "datasets/src/pipelines/dsift.rs",
    "datasets/src/pipelines/bow.rs",
    "datasets/src/pipelines/kmeans.rs",
    "datasets/src/ish/",
];

/// The dictionaries' description without their centroids, which are stored as raw `f32`s.
#[derive(Serialize, Deserialize)]
struct StoredHeader {
    bow: [usize; 2],
    coarse: [usize; 2],
    seconds: f64,
    /// Centroid count (`K × 128`) of each level.
    centroids: Vec<usize>,
    dictionaries: Dictionaries,
}

/// Layout: the header's length (u64, little-endian), the header (JSON), then `bow` and
/// `coarse` row by row and every level's centroids, all little-endian.
impl Stored for Features {
    fn encode(&self) -> Vec<u8> {
        let mut dictionaries = self.dictionaries.clone();
        let centroids = dictionaries
            .levels
            .iter_mut()
            .map(|l| std::mem::take(&mut l.centroids))
            .collect::<Vec<_>>();
        let header = serde_json::to_vec(&StoredHeader {
            bow: self.bow.dim().into(),
            coarse: self.coarse.dim().into(),
            seconds: self.seconds,
            centroids: centroids.iter().map(Vec::len).collect(),
            dictionaries,
        })
        .expect("serializable");
        let mut out = Vec::with_capacity(
            8 + header.len()
                + 8 * (self.bow.len() + self.coarse.len())
                + 4 * centroids.iter().map(Vec::len).sum::<usize>(),
        );
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&header);
        for v in self.bow.iter().chain(self.coarse.iter()) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in centroids.iter().flatten() {
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
        let mut h: StoredHeader =
            serde_json::from_slice(take(len, "header")?).map_err(|e| format!("header: {e}"))?;
        let mut matrix = |[r, c]: [usize; 2], what: &str| -> Result<Array2<f64>, String> {
            let n = r
                .checked_mul(c)
                .ok_or_else(|| format!("{what}: {r} x {c}"))?;
            let raw = take(
                n.checked_mul(8)
                    .ok_or_else(|| format!("{what}: {r} x {c}"))?,
                what,
            )?;
            let v = raw
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect();
            Array2::from_shape_vec((r, c), v).map_err(|e| format!("{what}: {e}"))
        };
        let bow = matrix(h.bow, "bow")?;
        let coarse = matrix(h.coarse, "coarse")?;
        if h.centroids.len() != h.dictionaries.levels.len() {
            return Err(format!(
                "{} centroid counts for {} levels",
                h.centroids.len(),
                h.dictionaries.levels.len()
            ));
        }
        for (level, &n) in h.dictionaries.levels.iter_mut().zip(&h.centroids) {
            let raw = take(
                n.checked_mul(4).ok_or_else(|| format!("centroids: {n}"))?,
                "centroids",
            )?;
            level.centroids = raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect();
        }
        if at != bytes.len() {
            return Err(format!("{} bytes after the centroids", bytes.len() - at));
        }
        Ok(Features {
            bow,
            coarse,
            dictionaries: h.dictionaries,
            seconds: h.seconds,
        })
    }
}

impl VisualConfig {
    /// This configuration with a solver's variant (`words`, `pyramid`) applied.
    pub(super) fn with_variant(&self, solver: &SolverInstance) -> VisualConfig {
        let mut v = self.clone();
        if let Some(k) = solver.canonical.get("words").and_then(|w| w.as_u64()) {
            v.dictionary.k = k as usize;
        }
        if let Some(p) = solver
            .canonical
            .get("pyramid")
            .and_then(|p| serde_json::from_value::<PyramidConfig>(p.clone()).ok())
        {
            v.pyramid = Some(p);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_datasets::pipelines::bow::LevelDictionary;

    fn sample() -> Features {
        // Two levels of 2 and 3 words (the struct as stored, not a valid extraction).
        let level = |words: usize, v: f32| LevelDictionary {
            centroids: vec![v; words * 128],
            energy: Some(1.0 / 3.0),
            restart_energies: vec![0.1, 0.2],
            iterations: 4,
            samples: 9,
            seen: u64::MAX,
        };
        let dictionaries = Dictionaries {
            dsift: DsiftConfig::default(),
            config: DictionaryConfig::default(),
            seed: 7,
            levels: vec![level(2, 0.25), level(3, -1.5e-40)],
        };
        Features {
            bow: Array2::from_shape_fn((3, 4), |(i, j)| {
                [0.0, -0.0, 1.0 / 7.0, 5e-324, 1e300, f64::MIN_POSITIVE][(i + j) % 6]
            }),
            coarse: Array2::from_shape_fn((3, 2), |(i, j)| (i * 2 + j) as f64 * 0.1),
            dictionaries,
            seconds: 12.345678901234567,
        }
    }

    #[test]
    fn stored_features_decode_to_the_bit_and_damage_is_an_error() {
        let f = sample();
        let bytes = f.encode();
        let g = Features::decode(&bytes).unwrap();
        let bits = |a: &Array2<f64>| a.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&f.bow), bits(&g.bow));
        assert_eq!(f.bow.dim(), g.bow.dim());
        assert_eq!(bits(&f.coarse), bits(&g.coarse));
        assert_eq!(f.seconds.to_bits(), g.seconds.to_bits());
        assert_eq!(f.dictionaries, g.dictionaries);
        for (a, b) in f.dictionaries.levels.iter().zip(&g.dictionaries.levels) {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.centroids), bits(&b.centroids));
        }
        // Cut short, or with bytes to spare: errors that say where, never a panic.
        for cut in [0, 7, 8, 20, bytes.len() - 1] {
            let e = Features::decode(&bytes[..cut]).err().expect("an error");
            assert!(e.contains("byte") || e.contains("header"), "{cut}: {e}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let e = Features::decode(&longer).err().expect("an error");
        assert!(e.contains("1 bytes after"), "{e}");
    }

    #[test]
    fn the_key_names_the_settings_and_the_extraction_code() {
        let mut a = VisualConfig {
            dsift: DsiftConfig::default(),
            dictionary: DictionaryConfig::default(),
            pyramid: None,
            grid: grid(),
            feature_seed: 0,
        };
        let k = a.key();
        assert!(k.ends_with(&crate::registry::fingerprint(SOURCES)), "{k}");
        a.dictionary.k += 1;
        assert_ne!(a.key(), k);
    }
}
