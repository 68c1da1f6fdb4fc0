//! `20news_w1000.mat`: a MATLAB (Level 5, compressed) packaging of 20 Newsgroups as word
//! counts over a 1000-word vocabulary, with the train/test split of the "bydate" release.
//!
//! The shared copy (`$DYAD_DATA_DIR/20newsgroups/20news_w1000.mat`, header "MATLAB 5.0
//! MAT-file, Platform: GLNX86, Created on: Fri Jun 25 13:27:59 2010") holds seven variables,
//! each in its own miCOMPRESSED element:
//!
//! | variable      | class  | dims        | content                                              |
//! |---------------|--------|-------------|------------------------------------------------------|
//! | `num_class`   | double | 1 x 1       | 20 (stored as miUINT8)                               |
//! | `vocab`       | cell   | 1 x 1000    | each cell a 1 x k cell of char: the surface forms    |
//! |               |        |             | merged into that word (e.g. `{'windows','window',..}`)|
//! | `trainW`      | sparse | 11256 x 1000| word counts, documents x words, 329,602 non-zeros    |
//! | `trainC`      | sparse | 11256 x 20  | one-hot class indicator (exactly one 1 per row)      |
//! | `testW`       | sparse | 7489 x 1000 | word counts, 216,777 non-zeros                       |
//! | `testC`       | sparse | 7489 x 20   | one-hot class indicator                              |
//! | `class_names` | cell   | 20 x 1      | `alt.atheism` ... `talk.religion.misc` (char rows)   |
//!
//! 18,745 documents in all (the bydate release has 11,314 + 7,532; the difference are
//! presumably documents with no vocabulary word, since no row here is empty). The `*C`
//! matrices store `nzmax` (11,269 / 7,505) row indices but only `nnz` values, which the MAT
//! reader handles.
//!
//! The loader accepts this layout and two harmless generalisations: the `*W` matrices may be
//! dense, and the labels may be a one-hot matrix (sparse or dense) or a vector of 1-based class
//! indices. `class_names`, `vocab` and `num_class` are optional; when present they must agree
//! with the data. Counts must be finite and non-negative.

use crate::formats::mat::{MatFile, MatValue, read_mat};
use crate::{ContentHasher, ContentId, DataError};
use dyad_core::{LabeledSet, Partition};
use sprs::CsMat;
use std::path::{Path, PathBuf};

/// The file name of the packaging.
pub const FILE_NAME: &str = "20news_w1000.mat";

/// Locate `20news_w1000.mat` in `dir` (the `20newsgroups` data directory).
pub fn locate(dir: &Path) -> Result<PathBuf, DataError> {
    let p = dir.join(FILE_NAME);
    if p.is_file() {
        Ok(p)
    } else {
        Err(DataError::Missing {
            name: "20news_w1000".into(),
            dir: dir.to_path_buf(),
            tried: FILE_NAME.into(),
            hint: "Place the MATLAB packaging of 20 Newsgroups (1000-word vocabulary) there."
                .into(),
        })
    }
}

/// The decoded content of `20news_w1000.mat`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewsgroupsW1000 {
    /// Training documents x words, raw counts (CSR).
    pub train_counts: CsMat<f64>,
    /// Class of each training document, `0..class_names.len()`.
    pub train_labels: Vec<u32>,
    /// Test documents x words, raw counts (CSR).
    pub test_counts: CsMat<f64>,
    pub test_labels: Vec<u32>,
    /// Class names from the file (`class{c}` when the file has none).
    pub class_names: Vec<String>,
    /// For each word column, the surface forms merged into it (empty when the file has no
    /// vocabulary).
    pub vocab: Vec<Vec<String>>,
}

fn inconsistent(path: &Path, message: String) -> DataError {
    DataError::Inconsistent {
        path: path.to_path_buf(),
        message,
    }
}

fn required<'a>(path: &Path, m: &'a MatFile, name: &str) -> Result<&'a MatValue, DataError> {
    m.get(name).ok_or_else(|| {
        inconsistent(
            path,
            format!(
                "no variable `{name}` (the file holds: {})",
                m.names().join(", ")
            ),
        )
    })
}

/// Documents x words counts from a sparse or dense 2-D numeric variable.
fn counts(path: &Path, name: &str, v: &MatValue) -> Result<CsMat<f64>, DataError> {
    let x = match v {
        MatValue::Sparse { im: None, .. } => v.sparse_to_csr(),
        MatValue::Numeric {
            dims, re, im: None, ..
        } if dims.len() == 2 => {
            let (r, c) = (dims[0], dims[1]);
            let mut indptr = vec![0];
            let (mut ind, mut dat) = (Vec::new(), Vec::new());
            for i in 0..r {
                for j in 0..c {
                    let x = re[i + j * r];
                    if x != 0.0 {
                        ind.push(j);
                        dat.push(x);
                    }
                }
                indptr.push(ind.len());
            }
            Some(CsMat::new((r, c), indptr, ind, dat))
        }
        _ => None,
    };
    let x = x.ok_or_else(|| {
        inconsistent(
            path,
            format!(
                "`{name}` should be a real 2-D documents x words matrix, found {}",
                v.describe()
            ),
        )
    })?;
    if let Some(bad) = x.data().iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
        return Err(inconsistent(
            path,
            format!("`{name}` holds {bad}, not a word count"),
        ));
    }
    Ok(x)
}

/// Class indices from a one-hot matrix (documents x classes) or a vector of 1-based classes.
fn labels(path: &Path, name: &str, v: &MatValue, n_docs: usize) -> Result<Vec<u32>, DataError> {
    let dims = v.dims();
    let bad = |msg: String| inconsistent(path, format!("`{name}`: {msg}"));
    if dims.len() != 2 {
        return Err(bad(format!("expected a 2-D array, found {}", v.describe())));
    }
    let is_vector = (dims[1] == 1 && dims[0] == n_docs) || (dims[0] == 1 && dims[1] == n_docs);
    if let (MatValue::Numeric { re, im: None, .. }, true) = (v, is_vector && n_docs > 1) {
        return re
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if c.fract() == 0.0 && c >= 1.0 && c <= f64::from(u32::MAX) {
                    Ok(c as u32 - 1)
                } else {
                    Err(bad(format!(
                        "document {} has class {c}, not a 1-based index",
                        i + 1
                    )))
                }
            })
            .collect();
    }
    if dims[0] != n_docs {
        return Err(bad(format!("{} rows for {n_docs} documents", dims[0])));
    }
    let csr = match v {
        MatValue::Sparse { .. } => v.sparse_to_csr(),
        MatValue::Numeric { .. } => counts(path, name, v).ok(),
        _ => None,
    };
    let Some(csr) = csr else {
        return Err(bad(format!(
            "expected a one-hot matrix, found {}",
            v.describe()
        )));
    };
    let mut out = Vec::with_capacity(n_docs);
    for (i, row) in csr.outer_iterator().enumerate() {
        let ones: Vec<usize> = row
            .iter()
            .filter(|(_, x)| **x != 0.0)
            .map(|(j, _)| j)
            .collect();
        match (
            &ones[..],
            row.iter().find(|(_, x)| **x != 0.0 && **x != 1.0),
        ) {
            ([c], None) => out.push(*c as u32),
            _ => {
                return Err(bad(format!(
                    "document {} should have exactly one class marked 1, found {:?}",
                    i + 1,
                    row.iter().map(|(j, x)| (j, *x)).collect::<Vec<_>>()
                )));
            }
        }
    }
    Ok(out)
}

/// Strings of a cell array of char (or, for `vocab`, of cells of char).
fn strings(path: &Path, name: &str, v: &MatValue) -> Result<Vec<Vec<String>>, DataError> {
    let items = v.cell_items().ok_or_else(|| {
        inconsistent(
            path,
            format!("`{name}` should be a cell array, found {}", v.describe()),
        )
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            MatValue::Char { .. } => Ok(vec![item.as_str().unwrap_or_default().to_string()]),
            MatValue::Cell { items, .. } => items
                .iter()
                .map(|s| {
                    s.as_str().map(str::to_string).ok_or_else(|| {
                        inconsistent(
                            path,
                            format!("`{name}`{{{}}} holds {}, not char", i + 1, s.describe()),
                        )
                    })
                })
                .collect(),
            other => Err(inconsistent(
                path,
                format!("`{name}`{{{}}} holds {}, not char", i + 1, other.describe()),
            )),
        })
        .collect()
}

impl NewsgroupsW1000 {
    /// Read and decode the file.
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let m = read_mat(path)?;
        Self::from_mat(path, &m)
    }

    /// Decode an already parsed file; `path` names it in errors.
    pub fn from_mat(path: &Path, m: &MatFile) -> Result<Self, DataError> {
        let train_counts = counts(path, "trainW", required(path, m, "trainW")?)?;
        let test_counts = counts(path, "testW", required(path, m, "testW")?)?;
        if train_counts.cols() != test_counts.cols() {
            return Err(inconsistent(
                path,
                format!(
                    "trainW has {} words but testW {}",
                    train_counts.cols(),
                    test_counts.cols()
                ),
            ));
        }
        let train_labels = labels(
            path,
            "trainC",
            required(path, m, "trainC")?,
            train_counts.rows(),
        )?;
        let test_labels = labels(
            path,
            "testC",
            required(path, m, "testC")?,
            test_counts.rows(),
        )?;
        let one_hot_width = |name: &str| -> Option<usize> {
            let v = m.get(name)?;
            let d = v.dims();
            (d.len() == 2 && d[1] > 1).then_some(d[1])
        };
        let max_label = train_labels
            .iter()
            .chain(&test_labels)
            .map(|&l| l as usize + 1)
            .max()
            .unwrap_or(0);
        let class_names: Vec<String> = match m.get("class_names") {
            Some(v) => strings(path, "class_names", v)?
                .into_iter()
                .map(|forms| forms.join(" "))
                .collect(),
            None => {
                let n = one_hot_width("trainC").unwrap_or(max_label).max(max_label);
                (0..n).map(|c| format!("class{c}")).collect()
            }
        };
        let n_classes = class_names.len();
        for name in ["trainC", "testC"] {
            if let Some(w) = one_hot_width(name)
                && w != n_classes
                && m.get(name).is_some_and(|v| v.dims()[0] != 1)
            {
                return Err(inconsistent(
                    path,
                    format!("`{name}` has {w} class columns but there are {n_classes} classes"),
                ));
            }
        }
        if max_label > n_classes {
            return Err(inconsistent(
                path,
                format!("class {max_label} used but only {n_classes} class names"),
            ));
        }
        if let Some(v) = m.get("num_class")
            && v.scalar() != Some(n_classes as f64)
        {
            return Err(inconsistent(
                path,
                format!(
                    "num_class is {} but there are {n_classes} classes",
                    v.describe()
                ),
            ));
        }
        let vocab = match m.get("vocab") {
            Some(v) => {
                let words = strings(path, "vocab", v)?;
                if words.len() != train_counts.cols() {
                    return Err(inconsistent(
                        path,
                        format!(
                            "vocab has {} words but the count matrices {} columns",
                            words.len(),
                            train_counts.cols()
                        ),
                    ));
                }
                words
            }
            None => Vec::new(),
        };
        Ok(Self {
            train_counts,
            train_labels,
            test_counts,
            test_labels,
            class_names,
            vocab,
        })
    }

    /// Number of word columns.
    pub fn n_words(&self) -> usize {
        self.train_counts.cols()
    }

    /// Content identity of the decoded content (counts, labels, class names, vocabulary):
    /// independent of compression, byte order and the header's time stamp.
    pub fn content_id(&self) -> ContentId {
        let mut h = ContentHasher::new("20news-w1000/v1");
        for (x, labels) in [
            (&self.train_counts, &self.train_labels),
            (&self.test_counts, &self.test_labels),
        ] {
            h.u64(x.rows() as u64).u64(x.cols() as u64);
            for row in x.outer_iterator() {
                h.u64(row.nnz() as u64);
                for (&j, &v) in row.indices().iter().zip(row.data()) {
                    h.u64(j as u64).f64(v);
                }
            }
            for &l in labels {
                h.u64(u64::from(l));
            }
        }
        h.u64(self.class_names.len() as u64);
        for c in &self.class_names {
            h.str(c);
        }
        h.u64(self.vocab.len() as u64);
        for forms in &self.vocab {
            h.u64(forms.len() as u64);
            for f in forms {
                h.str(f);
            }
        }
        h.finish()
    }

    /// All documents as one labelled set: training rows first, then test rows (partition
    /// recorded), raw counts as features, each row scaled to unit L2 norm when
    /// `l2_normalize`.
    pub fn to_labeled_set(&self, l2_normalize: bool) -> LabeledSet {
        let d = self.n_words();
        let n_tr = self.train_counts.rows();
        let mut indptr = vec![0];
        let (mut indices, mut data) = (Vec::new(), Vec::new());
        for row in self
            .train_counts
            .outer_iterator()
            .chain(self.test_counts.outer_iterator())
        {
            indices.extend_from_slice(row.indices());
            data.extend_from_slice(row.data());
            indptr.push(indices.len());
        }
        let n = indptr.len() - 1;
        let x = CsMat::new((n, d), indptr, indices, data);
        let labels = self
            .train_labels
            .iter()
            .chain(&self.test_labels)
            .copied()
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
        let mut set = LabeledSet::new(x, labels, self.class_names.clone(), Some(partition))
            .expect("labels validated against class names");
        if l2_normalize {
            set.l2_normalize_rows();
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::mat::{WriteOptions, parse_mat, write_mat};

    /// 3 training and 2 test documents over 4 words, 2 classes, in the real file's layout.
    fn toy_vars() -> Vec<(String, MatValue)> {
        let sparse = |rows: usize, cols: usize, trip: &[(usize, usize, f64)]| {
            let mut t = sprs::TriMat::new((rows, cols));
            for &(i, j, v) in trip {
                t.add_triplet(i, j, v);
            }
            let csc: CsMat<f64> = t.to_csc();
            MatValue::Sparse {
                rows,
                cols,
                ir: csc.indices().to_vec(),
                jc: csc.indptr().raw_storage().to_vec(),
                re: csc.data().to_vec(),
                im: None,
                logical: false,
            }
        };
        let cell = |dims: Vec<usize>, items: Vec<MatValue>| MatValue::Cell { dims, items };
        vec![
            ("num_class".into(), MatValue::double(vec![1, 1], vec![2.0])),
            (
                "vocab".into(),
                cell(
                    vec![1, 4],
                    ["god|gods", "car", "game|games|gaming", "x"]
                        .iter()
                        .map(|w| {
                            let forms: Vec<MatValue> = w.split('|').map(MatValue::string).collect();
                            cell(vec![1, forms.len()], forms)
                        })
                        .collect(),
                ),
            ),
            (
                "trainW".into(),
                sparse(
                    3,
                    4,
                    &[
                        (0, 0, 2.0),
                        (0, 3, 1.0),
                        (1, 1, 5.0),
                        (2, 2, 1.0),
                        (2, 1, 1.0),
                    ],
                ),
            ),
            (
                "trainC".into(),
                sparse(3, 2, &[(0, 0, 1.0), (1, 1, 1.0), (2, 1, 1.0)]),
            ),
            ("testW".into(), sparse(2, 4, &[(0, 0, 1.0), (1, 3, 3.0)])),
            ("testC".into(), sparse(2, 2, &[(0, 0, 1.0), (1, 1, 1.0)])),
            (
                "class_names".into(),
                cell(
                    vec![2, 1],
                    vec![
                        MatValue::string("alt.atheism"),
                        MatValue::string("rec.autos"),
                    ],
                ),
            ),
        ]
    }

    fn decode(vars: &[(String, MatValue)]) -> Result<NewsgroupsW1000, DataError> {
        let opts = WriteOptions {
            compress: true,
            small_elements: true,
            narrow_storage: true,
            ..Default::default()
        };
        let b = write_mat("toy", vars, opts).unwrap();
        NewsgroupsW1000::from_mat(Path::new("toy.mat"), &parse_mat(Path::new("toy.mat"), &b)?)
    }

    #[test]
    fn toy_file_decodes_to_the_expected_set() {
        let n = decode(&toy_vars()).unwrap();
        assert_eq!(n.train_labels, vec![0, 1, 1]);
        assert_eq!(n.test_labels, vec![0, 1]);
        assert_eq!(n.class_names, vec!["alt.atheism", "rec.autos"]);
        assert_eq!(n.vocab[2], vec!["game", "games", "gaming"]);
        let row2 = n.train_counts.outer_view(2).unwrap();
        assert_eq!(
            (row2.indices(), row2.data()),
            (&[1usize, 2][..], &[1.0, 1.0][..])
        );
        let set = n.to_labeled_set(true);
        assert_eq!((set.n(), set.dim(), set.n_classes()), (5, 4, 2));
        assert_eq!(set.partition.as_ref().unwrap()[3], Partition::Test);
        let r0 = set.x.outer_view(0).unwrap();
        let s5 = 5f64.sqrt();
        assert_eq!(r0.data(), &[2.0 / s5, 1.0 / s5]);
        // Identity: independent of packaging, sensitive to content.
        let plain = write_mat(
            "other header",
            &toy_vars(),
            WriteOptions {
                big_endian: true,
                ..Default::default()
            },
        )
        .unwrap();
        let m = parse_mat(Path::new("p"), &plain).unwrap();
        assert_eq!(
            NewsgroupsW1000::from_mat(Path::new("p"), &m)
                .unwrap()
                .content_id(),
            n.content_id()
        );
        let mut v = toy_vars();
        v[5].1 = MatValue::Sparse {
            rows: 2,
            cols: 2,
            ir: vec![0, 1],
            jc: vec![0, 0, 2],
            re: vec![1.0, 1.0],
            im: None,
            logical: false,
        };
        assert_ne!(decode(&v).unwrap().content_id(), n.content_id());
        // Labels as a vector of 1-based classes decode the same.
        let mut v = toy_vars();
        v[3].1 = MatValue::double(vec![3, 1], vec![1.0, 2.0, 2.0]);
        assert_eq!(decode(&v).unwrap(), n);
    }

    #[test]
    fn inconsistent_files_are_typed_errors() {
        let cases: Vec<(usize, MatValue, &str)> = vec![
            // Two classes for the first training document.
            (
                3,
                MatValue::Sparse {
                    rows: 3,
                    cols: 2,
                    ir: vec![0, 0, 1, 2],
                    jc: vec![0, 1, 4],
                    re: vec![1.0; 4],
                    im: None,
                    logical: false,
                },
                "exactly one class",
            ),
            (0, MatValue::double(vec![1, 1], vec![3.0]), "num_class"),
            (
                6,
                MatValue::Cell {
                    dims: vec![1, 1],
                    items: vec![MatValue::string("a")],
                },
                "classes",
            ),
            (4, MatValue::double(vec![2, 3], vec![0.0; 6]), "words"),
            (2, MatValue::string("nope"), "trainW"),
            (
                1,
                MatValue::Cell {
                    dims: vec![1, 1],
                    items: vec![MatValue::string("a")],
                },
                "vocab",
            ),
            (
                4,
                MatValue::double(vec![2, 4], vec![0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
                "word count",
            ),
        ];
        for (i, value, needle) in cases {
            let mut v = toy_vars();
            v[i].1 = value;
            match decode(&v) {
                Err(e @ DataError::Inconsistent { .. }) => {
                    assert!(e.to_string().contains(needle), "{needle}: {e}")
                }
                other => panic!("{needle}: {other:?}"),
            }
        }
        let mut v = toy_vars();
        v.remove(4);
        let e = decode(&v).unwrap_err().to_string();
        assert!(
            e.contains("no variable `testW`") && e.contains("trainW"),
            "{e}"
        );
    }
}
