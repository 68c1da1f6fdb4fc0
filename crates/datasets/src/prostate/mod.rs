//! Singh et al. (2002) prostate cancer expression data (Affymetrix HG-U95Av2, 12,600 probe sets)
//! in the Kent Ridge Bio-medical Data Set Repository rendering: two CSV files,
//! `prostate_TumorVSNormal_train.data` (102 samples: 52 `Tumor` + 50 `Normal`, the data of the
//! Givens paper's experiment E1) and `prostate_TumorVSNormal_test.data` (34 samples of an
//! independent set: 25 `Tumor` + 9 `Normal`), each plain or gzipped.
//!
//! Samples are the columns of the [`ExpressionSet`]s (genes x samples, gene ids `col1` ..
//! `col12600`), with ids `train-1` .. `train-102` and `test-1` .. `test-34`, and class labels
//! coded in the order of [`CLASSES`].

pub mod kentridge;
pub mod provider;

use crate::expression::Categorical;
use crate::expression::ExpressionSet;
use crate::formats::gct::{ClsNumbering, read_with_cls};
use crate::prostate::kentridge::{KentRidgeOptions, read_kentridge};
use crate::provider::{Presence, locate_parts};
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

/// How to obtain the data, for error messages.
pub const HINT: &str = "The Singh et al. (2002) prostate data (Kent Ridge Bio-medical Data Set \
                        Repository, 'Prostate Cancer' TumorVSNormal) is two CSV files; put both \
                        in this directory.";

/// Where the Kent Ridge files stand in `dir`: both (plain preferred over `.gz`), neither, or
/// an [`DataError::Incomplete`] error.
pub fn locate(dir: &Path) -> Result<Presence, DataError> {
    let parts: Vec<Vec<String>> = FILES
        .iter()
        .map(|n| vec![n.to_string(), format!("{n}.gz")])
        .collect();
    locate_parts("prostate", dir, &parts, HINT)
}

/// The Broad Institute release of the 102 training samples (RES or GCT expression file and a
/// CLS class file), found under the first present name of each.
pub const BROAD_EXPRESSION: [&str; 3] = [
    "Prostate_TN_final0701_allmeanScale.res",
    "Prostate_TN_final0701_allmeanScale.gct",
    "prostate.gct",
];
/// The class file of the Broad release.
pub const BROAD_CLASSES: [&str; 2] = ["Prostate_TN_final0701_allmeanScale.cls", "prostate.cls"];

/// Where the Broad release stands in `dir`.
pub fn locate_broad(dir: &Path) -> Result<Presence, DataError> {
    let parts = vec![
        BROAD_EXPRESSION.iter().map(|s| s.to_string()).collect(),
        BROAD_CLASSES.iter().map(|s| s.to_string()).collect(),
    ];
    locate_parts("prostate (Broad release)", dir, &parts, HINT)
}

/// Read the Broad release (expression + classes) as the training part: 102 samples whose
/// labels must be the two classes of [`CLASSES`].
pub fn read_broad(expression: &Path, classes: &Path) -> Result<ExpressionSet, DataError> {
    let set = read_with_cls(expression, classes, ClsNumbering::ByIndex)?;
    let labels = set.labels().ok_or_else(|| DataError::Inconsistent {
        path: classes.to_path_buf(),
        message: "no class labels".into(),
    })?;
    let mut names: Vec<&str> = labels.names().iter().map(String::as_str).collect();
    names.sort_unstable();
    let mut want = CLASSES.to_vec();
    want.sort_unstable();
    if names != want {
        return Err(DataError::Inconsistent {
            path: classes.to_path_buf(),
            message: format!("classes {names:?}, expected {CLASSES:?}"),
        });
    }
    Ok(set)
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
        let [train, test]: [PathBuf; 2] = match locate(dir)? {
            Presence::Complete(f) => f.try_into().expect("two parts"),
            Presence::Absent => {
                return Err(DataError::Missing {
                    name: "prostate".into(),
                    dir: dir.to_path_buf(),
                    tried: FILES.join(", "),
                    hint: HINT.into(),
                });
            }
        };
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
