//! Labelled sparse data sets and the per-class splits of the papers' protocols.

use crate::{CoreError, Rng};
use rand::seq::SliceRandom;
use sprs::{CsMat, TriMat};

/// Which official part of a data set a row comes from (e.g. MNIST's train/test files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Partition {
    Train,
    Test,
}

/// Feature rows (CSR, one row per example) with one class label each.
#[derive(Debug, Clone, PartialEq)]
pub struct LabeledSet {
    /// `n x d` CSR matrix; every row's indices are strictly increasing.
    pub x: CsMat<f64>,
    /// Class index of each row, in `0..class_names.len()`.
    pub labels: Vec<u32>,
    pub class_names: Vec<String>,
    /// Official partition of each row, when the data set defines one.
    pub partition: Option<Vec<Partition>>,
    /// Multi-label relevance (e.g. the text queries an image is relevant to, or a label and
    /// its ancestors): when present, two rows are relevant to each other iff their sorted
    /// label lists intersect, instead of iff their `labels` are equal.
    pub relevance: Option<Vec<Vec<u32>>>,
}

impl LabeledSet {
    /// Validate and build.
    pub fn new(
        x: CsMat<f64>,
        labels: Vec<u32>,
        class_names: Vec<String>,
        partition: Option<Vec<Partition>>,
    ) -> Result<Self, CoreError> {
        if !x.is_csr() {
            return Err(CoreError::Invalid("feature matrix must be CSR".into()));
        }
        if x.rows() != labels.len() {
            return Err(CoreError::LabelCount {
                rows: x.rows(),
                labels: labels.len(),
            });
        }
        if let Some(&bad) = labels.iter().find(|&&l| l as usize >= class_names.len()) {
            return Err(CoreError::Invalid(format!(
                "label {bad} out of range for {} classes",
                class_names.len()
            )));
        }
        if let Some(p) = &partition
            && p.len() != labels.len()
        {
            return Err(CoreError::Invalid(
                "partition length differs from rows".into(),
            ));
        }
        Ok(Self {
            x,
            labels,
            class_names,
            partition,
            relevance: None,
        })
    }

    /// Attach multi-label relevance lists (one per row; sorted and deduplicated here).
    pub fn with_relevance(mut self, mut lists: Vec<Vec<u32>>) -> Result<Self, CoreError> {
        if lists.len() != self.n() {
            return Err(CoreError::Invalid(format!(
                "{} relevance lists for {} rows",
                lists.len(),
                self.n()
            )));
        }
        for l in &mut lists {
            l.sort_unstable();
            l.dedup();
        }
        self.relevance = Some(lists);
        Ok(self)
    }

    /// Whether row `i` of `self` and row `j` of `other` are relevant to each other.
    pub fn relevant(&self, i: usize, other: &LabeledSet, j: usize) -> bool {
        match (&self.relevance, &other.relevance) {
            (Some(a), Some(b)) => sorted_intersect(&a[i], &b[j]),
            _ => self.labels[i] == other.labels[j],
        }
    }

    /// Build from dense rows (tests and small examples); zeros are not stored.
    pub fn from_dense_rows(rows: &[Vec<f64>], labels: Vec<u32>, n_classes: usize) -> Self {
        let d = rows.first().map_or(0, Vec::len);
        let mut t = TriMat::new((rows.len(), d));
        for (i, r) in rows.iter().enumerate() {
            for (j, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    t.add_triplet(i, j, v);
                }
            }
        }
        let names = (0..n_classes).map(|c| format!("class{c}")).collect();
        Self::new(t.to_csr(), labels, names, None).expect("consistent dense rows")
    }

    pub fn n(&self) -> usize {
        self.labels.len()
    }

    pub fn dim(&self) -> usize {
        self.x.cols()
    }

    pub fn n_classes(&self) -> usize {
        self.class_names.len()
    }

    /// Row indices of each class, ascending.
    pub fn class_members(&self) -> Vec<Vec<usize>> {
        let mut m = vec![Vec::new(); self.n_classes()];
        for (i, &l) in self.labels.iter().enumerate() {
            m[l as usize].push(i);
        }
        m
    }

    /// The rows `idx` (in that order) as a new set; class names are kept.
    pub fn select(&self, idx: &[usize]) -> LabeledSet {
        let d = self.dim();
        let mut indptr = Vec::with_capacity(idx.len() + 1);
        let mut indices = Vec::new();
        let mut data = Vec::new();
        indptr.push(0);
        for &i in idx {
            let row = self.x.outer_view(i).expect("row in range");
            indices.extend_from_slice(row.indices());
            data.extend_from_slice(row.data());
            indptr.push(indices.len());
        }
        let x = CsMat::new((idx.len(), d), indptr, indices, data);
        LabeledSet {
            x,
            labels: idx.iter().map(|&i| self.labels[i]).collect(),
            class_names: self.class_names.clone(),
            partition: self
                .partition
                .as_ref()
                .map(|p| idx.iter().map(|&i| p[i]).collect()),
            relevance: self
                .relevance
                .as_ref()
                .map(|r| idx.iter().map(|&i| r[i].clone()).collect()),
        }
    }

    /// Keep only the classes in `classes` (by index), relabelled `0..classes.len()` in that
    /// order.
    pub fn restrict_classes(&self, classes: &[usize]) -> LabeledSet {
        let mut map = vec![u32::MAX; self.n_classes()];
        for (new, &old) in classes.iter().enumerate() {
            map[old] = new as u32;
        }
        let rows: Vec<usize> = (0..self.n())
            .filter(|&i| map[self.labels[i] as usize] != u32::MAX)
            .collect();
        let mut out = self.select(&rows);
        for l in &mut out.labels {
            *l = map[*l as usize];
        }
        out.class_names = classes
            .iter()
            .map(|&c| self.class_names[c].clone())
            .collect();
        out
    }

    /// Scale every non-empty row to unit Euclidean norm.
    pub fn l2_normalize_rows(&mut self) {
        let mut x = std::mem::replace(&mut self.x, CsMat::zero((0, 0)));
        for mut row in x.outer_iterator_mut() {
            let n = crate::sparse::norm_sq(row.data()).sqrt();
            if n > 0.0 {
                row.map_inplace(|v| v / n);
            }
        }
        self.x = x;
    }

    /// The per-class train/test split of the papers' protocols: for every class draw
    /// `n_train` training and `n_test` test rows without replacement. When the set has an
    /// official partition, training rows come from its train part and test rows from its test
    /// part. Returned index lists are ascending.
    pub fn per_class_split(
        &self,
        n_train: usize,
        n_test: usize,
        rng: &mut Rng,
    ) -> Result<(Vec<usize>, Vec<usize>), CoreError> {
        let (mut train, mut test) = (Vec::new(), Vec::new());
        for (c, members) in self.class_members().into_iter().enumerate() {
            match &self.partition {
                None => {
                    let mut m = members;
                    self.check_size(c, m.len(), n_train + n_test, "train+test")?;
                    m.shuffle(rng);
                    train.extend_from_slice(&m[..n_train]);
                    test.extend_from_slice(&m[n_train..n_train + n_test]);
                }
                Some(p) => {
                    let (mut tr, mut te): (Vec<usize>, Vec<usize>) =
                        members.iter().partition(|&&i| p[i] == Partition::Train);
                    self.check_size(c, tr.len(), n_train, "official train part")?;
                    self.check_size(c, te.len(), n_test, "official test part")?;
                    tr.shuffle(rng);
                    te.shuffle(rng);
                    train.extend_from_slice(&tr[..n_train]);
                    test.extend_from_slice(&te[..n_test]);
                }
            }
        }
        train.sort_unstable();
        test.sort_unstable();
        Ok((train, test))
    }

    fn check_size(
        &self,
        class: usize,
        have: usize,
        need: usize,
        what: &'static str,
    ) -> Result<(), CoreError> {
        if have < need {
            return Err(CoreError::ClassTooSmall {
                class: self.class_names[class].clone(),
                have,
                need,
                what,
            });
        }
        Ok(())
    }
}

/// Whether two sorted lists share an element.
pub fn sorted_intersect(a: &[u32], b: &[u32]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

impl LabeledSet {
    /// The official train/test split, each part optionally subsampled (uniformly, without
    /// replacement) to at most `max_train` / `max_test` rows. Ascending index lists.
    pub fn official_split(
        &self,
        max_train: Option<usize>,
        max_test: Option<usize>,
        rng: &mut Rng,
    ) -> Result<(Vec<usize>, Vec<usize>), CoreError> {
        let Some(p) = &self.partition else {
            return Err(CoreError::Invalid(
                "split = \"official\" needs a data set with an official train/test partition"
                    .into(),
            ));
        };
        let pick = |part: Partition, max: Option<usize>, rng: &mut Rng| {
            let mut rows: Vec<usize> = (0..p.len()).filter(|&i| p[i] == part).collect();
            if let Some(m) = max.filter(|&m| m < rows.len()) {
                rows.shuffle(rng);
                rows.truncate(m);
                rows.sort_unstable();
            }
            rows
        };
        let train = pick(Partition::Train, max_train, rng);
        let test = pick(Partition::Test, max_test, rng);
        if train.is_empty() || test.is_empty() {
            return Err(CoreError::Invalid(
                "the official split has an empty part".into(),
            ));
        }
        Ok((train, test))
    }
}

/// Split `rows` (indices into `set`) per class into a fitting part and a validation part
/// holding `round(fraction * class size)` rows of each class (the papers' 80/20 split of the
/// training set: 32 + 8 of 40). Returned lists are ascending.
pub fn holdout_per_class(
    set: &LabeledSet,
    rows: &[usize],
    fraction: f64,
    rng: &mut Rng,
) -> (Vec<usize>, Vec<usize>) {
    let mut by_class = vec![Vec::new(); set.n_classes()];
    for &i in rows {
        by_class[set.labels[i] as usize].push(i);
    }
    let (mut fit, mut val) = (Vec::new(), Vec::new());
    for mut m in by_class {
        m.shuffle(rng);
        let n_val = ((m.len() as f64) * fraction).round() as usize;
        val.extend_from_slice(&m[..n_val]);
        fit.extend_from_slice(&m[n_val..]);
    }
    fit.sort_unstable();
    val.sort_unstable();
    (fit, val)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded;

    fn toy(n_per_class: usize, classes: usize) -> LabeledSet {
        let rows: Vec<Vec<f64>> = (0..n_per_class * classes)
            .map(|i| vec![i as f64 + 1.0, 0.0, 1.0])
            .collect();
        let labels = (0..n_per_class * classes)
            .map(|i| (i % classes) as u32)
            .collect();
        LabeledSet::from_dense_rows(&rows, labels, classes)
    }

    #[test]
    fn per_class_split_counts_and_disjointness() {
        let s = toy(10, 3);
        let (tr, te) = s.per_class_split(4, 5, &mut seeded(1)).unwrap();
        assert_eq!((tr.len(), te.len()), (12, 15));
        assert!(tr.iter().all(|i| !te.contains(i)));
        for c in 0..3u32 {
            assert_eq!(tr.iter().filter(|&&i| s.labels[i] == c).count(), 4);
            assert_eq!(te.iter().filter(|&&i| s.labels[i] == c).count(), 5);
        }
        assert_eq!(
            s.per_class_split(4, 5, &mut seeded(1)).unwrap(),
            (tr.clone(), te)
        );
        let err = s.per_class_split(6, 5, &mut seeded(1)).unwrap_err();
        assert!(matches!(
            err,
            CoreError::ClassTooSmall {
                have: 10,
                need: 11,
                ..
            }
        ));
        let (fit, val) = holdout_per_class(&s, &tr, 0.25, &mut seeded(2));
        assert_eq!((fit.len(), val.len()), (9, 3));
    }

    #[test]
    fn multi_label_relevance_and_official_split() {
        let rows: Vec<Vec<f64>> = (0..4).map(|i| vec![i as f64 + 1.0]).collect();
        let mut s = LabeledSet::from_dense_rows(&rows, vec![0, 0, 1, 1], 2)
            .with_relevance(vec![vec![3, 1], vec![2], vec![1, 5], vec![]])
            .unwrap();
        assert!(s.relevant(0, &s, 2) && !s.relevant(0, &s, 1) && !s.relevant(3, &s, 3));
        let sub = s.select(&[2, 0]);
        assert_eq!(sub.relevance.as_ref().unwrap()[0], vec![1, 5]);
        assert!(s.official_split(None, None, &mut seeded(1)).is_err());
        s.partition = Some(vec![
            Partition::Train,
            Partition::Test,
            Partition::Train,
            Partition::Test,
        ]);
        assert_eq!(
            s.official_split(None, None, &mut seeded(1)).unwrap(),
            (vec![0, 2], vec![1, 3])
        );
        let (tr, te) = s.official_split(Some(1), Some(1), &mut seeded(1)).unwrap();
        assert_eq!((tr.len(), te.len()), (1, 1));
        assert!(
            LabeledSet::from_dense_rows(&rows, vec![0; 4], 1)
                .with_relevance(vec![])
                .is_err()
        );
    }

    #[test]
    fn select_restrict_and_normalise() {
        let mut s = toy(2, 3);
        let r = s.restrict_classes(&[2, 0]);
        assert_eq!(r.labels, vec![1, 0, 1, 0]);
        assert_eq!(r.class_names, vec!["class2", "class0"]);
        assert_eq!(r.x.outer_view(0).unwrap().data()[0], 1.0);
        s.l2_normalize_rows();
        for row in s.x.outer_iterator() {
            assert!((crate::sparse::norm_sq(row.data()) - 1.0).abs() < 1e-12);
        }
    }
}

/// Rows of a data set that a ranking or a distance cannot treat like the others: counted by
/// [`LabeledSet::row_audit`], shown by `dyad data info` and on the report's data line, and
/// handled by each data set's stated policy (its description; e.g. 20 Newsgroups drops the
/// documents that keep no selected term, as the 1,000-word packaging of the same corpus did).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RowAudit {
    pub rows: usize,
    /// Rows without a non-zero feature.
    pub empty: usize,
    /// Rows holding a NaN or an infinite value.
    pub non_finite: usize,
    /// Rows whose features equal an earlier row's exactly.
    pub duplicates: usize,
    /// Of those, rows whose label differs from the earlier twin's (a tie no model can break).
    pub duplicates_other_label: usize,
    /// Non-empty rows whose Euclidean norm differs from 1 by more than 1e-9 (0: the data is
    /// L2-normalised, so Euclidean distance and the identity bilinear form rank alike).
    pub not_unit_norm: usize,
}

impl RowAudit {
    /// Whether every row is usable as it is (no empty, non-finite or duplicate row).
    pub fn is_clean(&self) -> bool {
        self.empty == 0 && self.non_finite == 0 && self.duplicates == 0
    }

    /// One line for `dyad data info` and the report's data line.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("{} rows", self.rows)];
        parts.push(format!("{} empty", self.empty));
        parts.push(format!("{} non-finite", self.non_finite));
        parts.push(if self.duplicates_other_label > 0 {
            format!(
                "{} duplicates ({} with another label)",
                self.duplicates, self.duplicates_other_label
            )
        } else {
            format!("{} duplicates", self.duplicates)
        });
        parts.push(if self.not_unit_norm == 0 {
            "unit norm".to_string()
        } else {
            format!("{} not of unit norm", self.not_unit_norm)
        });
        parts.join(", ")
    }
}

impl LabeledSet {
    /// Count the degenerate rows (see [`RowAudit`]): `O(nnz)` with one hash per row.
    pub fn row_audit(&self) -> RowAudit {
        use std::collections::HashMap;
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut a = RowAudit {
            rows: self.n(),
            ..RowAudit::default()
        };
        // Rows by the hash of their non-zero entries, then compared exactly.
        let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
        let nonzero = |i: usize| {
            let r = self.x.outer_view(i).expect("row in range");
            r.indices()
                .iter()
                .zip(r.data())
                .filter(|(_, v)| **v != 0.0)
                .map(|(&j, &v)| (j, v.to_bits()))
                .collect::<Vec<(usize, u64)>>()
        };
        for i in 0..self.n() {
            let row = self.x.outer_view(i).expect("row in range");
            if row.data().iter().any(|v| !v.is_finite()) {
                a.non_finite += 1;
                continue;
            }
            let entries = nonzero(i);
            if entries.is_empty() {
                a.empty += 1;
                continue;
            }
            let norm = row.data().iter().map(|v| v * v).sum::<f64>().sqrt();
            if (norm - 1.0).abs() > 1e-9 {
                a.not_unit_norm += 1;
            }
            let mut h = DefaultHasher::new();
            entries.hash(&mut h);
            let bucket = seen.entry(h.finish()).or_default();
            if let Some(&twin) = bucket.iter().find(|&&t| nonzero(t) == entries) {
                a.duplicates += 1;
                if self.labels[twin] != self.labels[i] {
                    a.duplicates_other_label += 1;
                }
            } else {
                bucket.push(i);
            }
        }
        a
    }
}

#[cfg(test)]
mod audit_tests {
    use super::*;

    #[test]
    fn counts_empty_duplicate_and_non_unit_rows() {
        let s = 0.6;
        let set = LabeledSet::from_dense_rows(
            &[
                vec![s, 0.8, 0.0],
                vec![0.0, 0.0, 0.0],
                vec![s, 0.8, 0.0],
                vec![s, 0.8, 0.0],
                vec![0.0, 2.0, 0.0],
                vec![0.0, 0.0, 1.0],
            ],
            vec![0, 0, 0, 1, 1, 1],
            2,
        );
        let a = set.row_audit();
        assert_eq!(
            a,
            RowAudit {
                rows: 6,
                empty: 1,
                non_finite: 0,
                duplicates: 2,
                duplicates_other_label: 1,
                not_unit_norm: 1,
            }
        );
        assert!(!a.is_clean());
        assert_eq!(
            a.summary(),
            "6 rows, 1 empty, 0 non-finite, 2 duplicates (1 with another label), 1 not of unit norm"
        );
        let mut bad = set.clone();
        bad.x.data_mut()[0] = f64::NAN;
        assert_eq!(bad.row_audit().non_finite, 1);
    }
}
