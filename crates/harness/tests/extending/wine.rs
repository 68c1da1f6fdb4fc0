//! The `wine` and `wine-standin` providers: the UCI Wine data (178 wines of 3 cultivars, 13
//! chemical measurements) from `$DYAD_DATA_DIR/wine/wine.data` as labelled rows, each
//! feature standardised and every row L2-normalised; absent, a seeded stand-in of the same
//! shape.

use dyad_core::LabeledSet;
use dyad_datasets::provider::{
    Data, DataContext, Presence, Provider, Resolved, Shape, absent, kinds, locate_parts, real,
    split_standin, synthetic, typed,
};
use dyad_datasets::registry::{DatasetInfo, Source, Unpack};
use dyad_datasets::{ContentHasher, DataError};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The release, for `dyad data list | info | verify | fetch` (listed in `DATASETS`).
pub const WINE: DatasetInfo = DatasetInfo {
    name: "wine",
    title: "UCI Wine recognition data",
    dir: "wine",
    sources: &[Source {
        file: "wine.data",
        url: Some("https://archive.ics.uci.edu/ml/machine-learning-databases/wine/wine.data"),
        sha256: None,
        size: None,
        unpack: Unpack::No,
    }],
    license: "CC BY 4.0",
    citation: "Aeberhard & Forina, Wine, UCI Machine Learning Repository (1991)",
    identity: None,
    standin: "wine-standin",
    manual: "Download wine.data from the UCI repository into <data dir>/wine/.",
};

const FEATURES: usize = 13;
const CLASSES: usize = 3;

/// The rows and labels as read, before any processing.
struct Wine {
    rows: Vec<Vec<f64>>,
    labels: Vec<u32>,
}

impl Wine {
    /// `class,f1,...,f13` per line, classes 1..=3.
    fn load(path: &Path) -> Result<Wine, DataError> {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        let (mut rows, mut labels) = (Vec::new(), Vec::new());
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad = |found: &str| DataError::Line {
                path: path.to_path_buf(),
                line: i as u64 + 1,
                column: None,
                expected: format!("a class in 1..=3 and {FEATURES} numbers"),
                found: found.to_string(),
            };
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let class: u32 = fields[0].parse().map_err(|_| bad(fields[0]))?;
            let row: Vec<f64> = fields[1..].iter().filter_map(|f| f.parse().ok()).collect();
            if !(1..=CLASSES as u32).contains(&class) || row.len() != FEATURES {
                return Err(bad(line));
            }
            if row.iter().any(|v| !v.is_finite()) {
                return Err(bad("a value that is not finite"));
            }
            labels.push(class - 1);
            rows.push(row);
        }
        Ok(Wine { rows, labels })
    }

    /// A hash of the decoded content: the same data in another file layout has the same one.
    fn content_id(&self) -> String {
        let mut h = ContentHasher::new("wine/v1");
        for (row, &label) in self.rows.iter().zip(&self.labels) {
            h.u64(label as u64);
            for &v in row {
                h.f64(v);
            }
        }
        h.finish().0
    }

    /// Standardised features, rows scaled to unit norm.
    fn to_labeled_set(&self) -> LabeledSet {
        let n = self.rows.len() as f64;
        let mut rows = self.rows.clone();
        for j in 0..FEATURES {
            let mean = rows.iter().map(|r| r[j]).sum::<f64>() / n;
            let sd = (rows.iter().map(|r| (r[j] - mean).powi(2)).sum::<f64>() / n).sqrt();
            for r in &mut rows {
                r[j] = (r[j] - mean) / sd.max(f64::MIN_POSITIVE);
            }
        }
        let mut set = LabeledSet::from_dense_rows(&rows, self.labels.clone(), CLASSES);
        set.l2_normalize_rows();
        set
    }
}

/// Where the data lives: `<data dir>/wine/`.
fn wine_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(WINE.dir)
}

/// The real data set.
pub struct WineProvider;

impl Provider for WineProvider {
    fn name(&self) -> &'static str {
        "wine"
    }
    /// Bump when the rows it delivers change for the same file: exactly the cells on it
    /// recompute.
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "UCI Wine: 178 wines, 13 standardised measurements, 3 cultivars as labels"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn info(&self) -> Option<&'static DatasetInfo> {
        Some(&WINE)
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/wine/"]
    }
    fn resolve(
        &self,
        ctx: &DataContext,
        params: &serde_json::Value,
    ) -> Result<Resolved, DataError> {
        // This data set takes no parameters of its own; a `standin` table goes to the stand-in.
        let (own, standin) = split_standin(self.name(), params)?;
        let _: NoParams = typed(self.name(), &own)?;
        let dir = wine_dir(&ctx.data_dir);
        let parts = [vec!["wine.data".to_string()]];
        let files = match locate_parts(self.name(), &dir, &parts, WINE.manual)? {
            Presence::Complete(files) => files,
            Presence::Absent => return absent(self, ctx, &dir, &standin),
        };
        let (identify, load) = (files[0].clone(), files[0].clone());
        real(
            self,
            ctx,
            &files,
            &NoParams {},
            format!("real UCI Wine from {}", ctx.show(&dir)),
            move || {
                let w = Wine::load(&identify)?;
                Ok((
                    w.content_id(),
                    Some(Shape::of_labelled(&w.to_labeled_set())),
                ))
            },
            move || {
                let w = Wine::load(&load)?;
                Ok((
                    w.content_id(),
                    Data::new(kinds::LABELLED, w.to_labeled_set()),
                ))
            },
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

/// The stand-in's parameters (`params = { standin = { per_class = 50 } }` in a spec).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WineStandin {
    #[serde(default = "default_per_class")]
    pub per_class: usize,
    /// Distance between class centres, in units of the within-class spread.
    #[serde(default = "default_separation")]
    pub separation: f64,
    #[serde(default)]
    pub seed: u64,
}

fn default_per_class() -> usize {
    59
}
fn default_separation() -> f64 {
    2.0
}

impl WineStandin {
    /// Classes spread uniformly around seeded centres; the centres are the planted truth.
    fn generate(&self) -> Result<(LabeledSet, Vec<Vec<f64>>), DataError> {
        let mut rng = dyad_core::seeded(dyad_core::derive_seed(self.seed, "wine-standin"));
        let centres: Vec<Vec<f64>> = (0..CLASSES)
            .map(|_| {
                (0..FEATURES)
                    .map(|_| self.separation * rng.random_range(-1.0..1.0))
                    .collect()
            })
            .collect();
        let (mut rows, mut labels) = (Vec::new(), Vec::new());
        for (c, centre) in centres.iter().enumerate() {
            for _ in 0..self.per_class {
                rows.push(
                    centre
                        .iter()
                        .map(|m| m + rng.random_range(-1.0..1.0))
                        .collect(),
                );
                labels.push(c as u32);
            }
        }
        let w = Wine { rows, labels };
        Ok((w.to_labeled_set(), centres))
    }
}

/// The seeded stand-in.
pub struct WineStandinProvider;

impl Provider for WineStandinProvider {
    fn name(&self) -> &'static str {
        "wine-standin"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "seeded Gaussian classes with the UCI Wine data's shape (3 classes, 13 features)"
    }
    fn kind(&self) -> &'static str {
        kinds::LABELLED
    }
    fn sources(&self) -> &'static [&'static str] {
        &["datasets/src/wine/"]
    }
    fn resolve(&self, _: &DataContext, params: &serde_json::Value) -> Result<Resolved, DataError> {
        let config: WineStandin = typed(self.name(), params)?;
        // Small enough to draw once for its shape (plans check sizes against it).
        let shape = Shape::of_labelled(&config.generate()?.0);
        let note = format!(
            "SYNTHETIC Wine stand-in: {CLASSES} classes x {} rows, d = {FEATURES}",
            config.per_class
        );
        let c = config.clone();
        synthetic(self, &config, Some(shape), note, move || {
            let (set, centres) = c.generate()?;
            Ok(Data::new(kinds::LABELLED, set).with_truth(centres))
        })
    }
}
