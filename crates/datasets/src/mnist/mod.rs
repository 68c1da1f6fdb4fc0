//! MNIST (LeCun, Cortes, Burges): the four IDX files, plain or gzip, under either of the two
//! file-name spellings in circulation (`train-images-idx3-ubyte` and `train-images.idx3-ubyte`).

pub mod provider;
pub mod standin;

use crate::formats::idx::{IdxArray, IdxType, read_idx};
use crate::provider::{Presence, locate_parts};
use crate::{ContentHasher, ContentId, DataError};
use dyad_core::{LabeledSet, Partition};
use sprs::CsMat;
use std::path::{Path, PathBuf};

/// The four parts of MNIST, by their canonical stem.
pub const PARTS: [(&str, &str); 4] = [
    ("train-images", "idx3-ubyte"),
    ("train-labels", "idx1-ubyte"),
    ("t10k-images", "idx3-ubyte"),
    ("t10k-labels", "idx1-ubyte"),
];

/// The file-name candidates for one part, in preference order.
pub fn candidates(stem: &str, ext: &str) -> [String; 4] {
    [
        format!("{stem}-{ext}.gz"),
        format!("{stem}-{ext}"),
        format!("{stem}.{ext}.gz"),
        format!("{stem}.{ext}"),
    ]
}

/// How to obtain MNIST, for error messages.
pub const HINT: &str = "Download the four files from https://yann.lecun.com/exdb/mnist/ (or a \
                        mirror; `dyad data fetch mnist`) into this directory.";

/// Where MNIST stands in `dir`: all four files (in [`PARTS`] order), none, or an
/// [`DataError::Incomplete`] error naming what is missing.
pub fn locate(dir: &Path) -> Result<Presence, DataError> {
    let parts: Vec<Vec<String>> = PARTS
        .iter()
        .map(|(stem, ext)| candidates(stem, ext).to_vec())
        .collect();
    locate_parts("mnist", dir, &parts, HINT)
}

/// The four files, or `Missing` / `Incomplete`.
fn files(dir: &Path) -> Result<[PathBuf; 4], DataError> {
    match locate(dir)? {
        Presence::Complete(f) => Ok(f.try_into().expect("four parts")),
        Presence::Absent => Err(DataError::Missing {
            name: "mnist".into(),
            dir: dir.to_path_buf(),
            tried: PARTS
                .iter()
                .map(|(s, e)| candidates(s, e).join(", "))
                .collect::<Vec<_>>()
                .join("; "),
            hint: HINT.into(),
        }),
    }
}

/// Raw MNIST: images as bytes (row-major `rows x cols` per image), labels 0..=9.
#[derive(Debug, Clone, PartialEq)]
pub struct Mnist {
    pub rows: usize,
    pub cols: usize,
    pub train_images: Vec<u8>,
    pub train_labels: Vec<u8>,
    pub test_images: Vec<u8>,
    pub test_labels: Vec<u8>,
}

fn images(path: &Path, a: IdxArray) -> Result<(usize, usize, usize, Vec<u8>), DataError> {
    if a.kind != IdxType::U8 || a.dims.len() != 3 {
        return Err(DataError::format(
            path,
            2,
            "an unsigned-byte IDX array with 3 dimensions (images x rows x cols)",
            format!("{:?} with dimensions {:?}", a.kind, a.dims),
        ));
    }
    Ok((a.dims[0], a.dims[1], a.dims[2], a.data))
}

fn labels(path: &Path, a: IdxArray) -> Result<Vec<u8>, DataError> {
    if a.kind != IdxType::U8 || a.dims.len() != 1 {
        return Err(DataError::format(
            path,
            2,
            "an unsigned-byte IDX array with 1 dimension (labels)",
            format!("{:?} with dimensions {:?}", a.kind, a.dims),
        ));
    }
    if let Some(i) = a.data.iter().position(|&l| l > 9) {
        return Err(DataError::format(
            path,
            (a.header_len + i) as u64,
            "a digit label 0..=9",
            a.data[i].to_string(),
        ));
    }
    Ok(a.data)
}

impl Mnist {
    /// Load the four files from `dir` and check that they agree with each other.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let [tri, trl, tei, tel] = files(dir)?;
        let (n_tr, rows, cols, train_images) = images(&tri, read_idx(&tri)?)?;
        let train_labels = labels(&trl, read_idx(&trl)?)?;
        let (n_te, rows2, cols2, test_images) = images(&tei, read_idx(&tei)?)?;
        let test_labels = labels(&tel, read_idx(&tel)?)?;
        let mismatch = |path: &Path, message: String| DataError::Inconsistent {
            path: path.to_path_buf(),
            message,
        };
        if train_labels.len() != n_tr {
            return Err(mismatch(
                &trl,
                format!("{} labels for {n_tr} training images", train_labels.len()),
            ));
        }
        if test_labels.len() != n_te {
            return Err(mismatch(
                &tel,
                format!("{} labels for {n_te} test images", test_labels.len()),
            ));
        }
        if (rows2, cols2) != (rows, cols) {
            return Err(mismatch(
                &tei,
                format!("{rows2}x{cols2} test images but {rows}x{cols} training images"),
            ));
        }
        Ok(Mnist {
            rows,
            cols,
            train_images,
            train_labels,
            test_images,
            test_labels,
        })
    }

    /// Content identity of the decoded arrays: independent of compression and file names.
    pub fn content_id(&self) -> ContentId {
        let mut h = ContentHasher::new("mnist/v1");
        h.u64(self.rows as u64).u64(self.cols as u64);
        h.bytes(&self.train_images).bytes(&self.train_labels);
        h.bytes(&self.test_images).bytes(&self.test_labels);
        h.finish()
    }

    /// All 70,000 images as one labelled set (training images first, partition recorded):
    /// pixels scaled to [0, 1], zero pixels not stored, and (when `l2_normalize`) every image
    /// scaled to unit Euclidean norm, so that the dot product ranks as Euclidean distance.
    pub fn to_labeled_set(&self, l2_normalize: bool) -> LabeledSet {
        let pixels = self.rows * self.cols;
        let n_tr = self.train_labels.len();
        let n = n_tr + self.test_labels.len();
        let mut indptr = Vec::with_capacity(n + 1);
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        indptr.push(0);
        for img in self
            .train_images
            .chunks_exact(pixels)
            .chain(self.test_images.chunks_exact(pixels))
        {
            for (j, &v) in img.iter().enumerate() {
                if v != 0 {
                    indices.push(j);
                    data.push(f64::from(v) / 255.0);
                }
            }
            indptr.push(indices.len());
        }
        let x = CsMat::new((n, pixels), indptr, indices, data);
        let labels = self
            .train_labels
            .iter()
            .chain(&self.test_labels)
            .map(|&l| u32::from(l))
            .collect();
        let partition = (0..n)
            .map(|i| {
                if i < n_tr {
                    Partition::Train
                } else {
                    Partition::Test
                }
            })
            .collect();
        let names = (0..10).map(|d| d.to_string()).collect();
        let mut set = LabeledSet::new(x, labels, names, Some(partition)).expect("consistent");
        if l2_normalize {
            set.l2_normalize_rows();
        }
        set
    }
}
