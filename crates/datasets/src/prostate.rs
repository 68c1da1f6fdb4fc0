//! Singh et al. (2002) prostate cancer expression data (Affymetrix HG-U95Av2, 12,600 probe sets)
//! in the Kent Ridge Bio-medical Data Set Repository rendering: two CSV files,
//! `prostate_TumorVSNormal_train.data` (102 samples: 52 `Tumor` + 50 `Normal`, the data of the
//! Givens paper's experiment E1) and `prostate_TumorVSNormal_test.data` (34 samples of an
//! independent set: 25 `Tumor` + 9 `Normal`), each plain or gzipped.
//!
//! Samples are the columns of the [`ExpressionSet`]s (genes x samples, gene ids `col1` ..
//! `col12600`), with ids `train-1` .. `train-102` and `test-1` .. `test-34`, and class labels
//! coded in the order of [`CLASSES`].

use crate::expression::Categorical;
use crate::expression::ExpressionSet;
use crate::formats::kentridge::{KentRidgeOptions, read_kentridge};
use crate::{ContentHasher, ContentId, DataError};
use std::path::{Path, PathBuf};

/// The training and test file names (each also accepted with `.gz`).
pub const FILES: [&str; 2] = [
    "prostate_TumorVSNormal_train.data",
    "prostate_TumorVSNormal_test.data",
];

/// The class labels as written in the files, in code order.
pub const CLASSES: [&str; 2] = ["Tumor", "Normal"];

/// Number of genes (probe sets) per sample.
pub const N_GENES: usize = 12_600;

/// Locate the two files in `dir` (plain preferred over `.gz`).
pub fn locate(dir: &Path) -> Result<[PathBuf; 2], DataError> {
    let find = |name: &str| {
        let tried = [name.to_string(), format!("{name}.gz")];
        tried
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
            .ok_or_else(|| DataError::Missing {
                name: "prostate".into(),
                dir: dir.to_path_buf(),
                tried: tried.join(", "),
                hint: "The Singh et al. (2002) prostate data (Kent Ridge Bio-medical Data Set \
                       Repository, 'Prostate Cancer' TumorVSNormal) is two CSV files; put both \
                       in this directory."
                    .into(),
            })
    };
    Ok([find(FILES[0])?, find(FILES[1])?])
}

/// The two parts of the prostate data.
#[derive(Debug, Clone, PartialEq)]
pub struct Prostate {
    /// 12,600 x 102 (52 tumour + 50 normal).
    pub train: ExpressionSet,
    /// 12,600 x 34.
    pub test: ExpressionSet,
}

/// Read one Kent Ridge prostate file, checking the 12,600 values and the two labels.
pub fn read_part(path: &Path, sample_prefix: &str) -> Result<ExpressionSet, DataError> {
    read_kentridge(
        path,
        &KentRidgeOptions {
            classes: Some(CLASSES.iter().map(|c| c.to_string()).collect()),
            n_values: Some(N_GENES),
            sample_prefix: sample_prefix.to_string(),
        },
    )
}

impl Prostate {
    /// Load both files from `dir`.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let [train, test] = locate(dir)?;
        Ok(Self {
            train: read_part(&train, "train-")?,
            test: read_part(&test, "test-")?,
        })
    }

    /// Identity of both parts' decoded content (independent of compression).
    pub fn content_id(&self) -> ContentId {
        let mut h = ContentHasher::new("prostate/v1");
        h.str(&self.train.content_id().0);
        h.str(&self.test.content_id().0);
        h.finish()
    }

    /// All 136 samples (training first), with the part (`train` / `test`) as the sample group.
    pub fn combined(&self) -> ExpressionSet {
        let group = |set: &ExpressionSet, name: &str| {
            set.clone()
                .with_groups(Categorical::from_values(&vec![name; set.n_samples()]))
                .expect("one group per sample")
        };
        let (a, b) = (group(&self.train, "train"), group(&self.test, "test"));
        ExpressionSet::concat_samples(&[&a, &b]).expect("same genes, labels and groups on both")
    }
}
