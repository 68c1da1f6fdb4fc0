//! Dense gene-expression data: a **genes x samples** matrix with gene and sample annotations.
//!
//! Orientation follows the Givens-rotation paper's sparse-PCA setting (givens.md §3.1): the data
//! matrix `A` is `d x n` with one **row per gene** (or microarray probe) and one **column per
//! sample**, so `values()[[g, s]]` is the expression of gene `g` in sample `s`. Readers of
//! sample-per-line files (Kent Ridge CSV) transpose on the way in. Matrices returned by this
//! crate are in standard (row-major) layout, but the layout is not part of the contract: use
//! `values().t()` for a samples x genes view.
//!
//! Samples may carry class labels (e.g. tumour / normal) and groups (e.g. the Allen donor a
//! sample came from), both as [`Categorical`] annotations. Every value is finite: readers reject
//! missing or non-finite entries, and [`ExpressionSet::new`] checks it.
//!
//! The content identity ([`ExpressionSet::content_id`]) hashes the decoded content (the `f64` bit
//! patterns of the values, with `-0.0` folded into `+0.0`, the gene ids and names, the sample ids,
//! labels and groups), so a gzipped and a plain copy of a file, or a GCT and a RES rendering of the
//! same numbers and annotations, have the same identity.

pub mod planted;

use crate::{ContentHasher, ContentId, DataError};
use ndarray::{Array2, ArrayView1, Axis};
use std::collections::HashMap;

/// A categorical annotation of samples (class labels or groups): category names and one code
/// (an index into the names) per sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Categorical {
    names: Vec<String>,
    codes: Vec<u32>,
}

impl Categorical {
    /// Build from category names and codes; every code must index a name and names must be
    /// distinct.
    pub fn new(names: Vec<String>, codes: Vec<u32>) -> Result<Self, DataError> {
        let mut seen = HashMap::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            if let Some(j) = seen.insert(n.as_str(), i) {
                return Err(DataError::Param(format!(
                    "category names must be distinct: {n:?} is both name {j} and name {i}"
                )));
            }
        }
        if let Some((s, &c)) = codes
            .iter()
            .enumerate()
            .find(|&(_, &c)| c as usize >= names.len())
        {
            return Err(DataError::Param(format!(
                "sample {s} has category code {c} but there are only {} categories",
                names.len()
            )));
        }
        Ok(Self { names, codes })
    }

    /// One category per distinct value, in order of first appearance.
    pub fn from_values<S: AsRef<str>>(values: &[S]) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut index: HashMap<String, u32> = HashMap::new();
        let codes = values
            .iter()
            .map(|v| {
                let v = v.as_ref();
                if let Some(&c) = index.get(v) {
                    return c;
                }
                let c = names.len() as u32;
                names.push(v.to_string());
                index.insert(v.to_string(), c);
                c
            })
            .collect();
        Self { names, codes }
    }

    /// The category names, in code order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// One code per sample.
    pub fn codes(&self) -> &[u32] {
        &self.codes
    }

    /// Number of samples annotated.
    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The category name of sample `s`.
    pub fn name_of(&self, s: usize) -> &str {
        &self.names[self.codes[s] as usize]
    }

    /// The code of a category name.
    pub fn code_of(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|n| n == name).map(|c| c as u32)
    }

    /// Number of samples in each category, in code order.
    pub fn counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.names.len()];
        self.codes.iter().for_each(|&c| counts[c as usize] += 1);
        counts
    }

    /// Number of samples in the named category (`None` if there is no such category).
    pub fn count_of(&self, name: &str) -> Option<usize> {
        self.code_of(name)
            .map(|c| self.codes.iter().filter(|&&x| x == c).count())
    }

    /// The samples of category `code`, in increasing order.
    pub fn members(&self, code: u32) -> Vec<usize> {
        (0..self.codes.len())
            .filter(|&s| self.codes[s] == code)
            .collect()
    }

    /// The annotation restricted to the samples `idx` (all names are kept).
    fn select(&self, idx: &[usize]) -> Self {
        Self {
            names: self.names.clone(),
            codes: idx.iter().map(|&i| self.codes[i]).collect(),
        }
    }

    /// Concatenate annotations; names are merged in order of first appearance.
    fn concat(parts: &[&Categorical]) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut codes = Vec::new();
        for p in parts {
            let remap: Vec<u32> = p
                .names
                .iter()
                .map(|n| match names.iter().position(|m| m == n) {
                    Some(c) => c as u32,
                    None => {
                        names.push(n.clone());
                        (names.len() - 1) as u32
                    }
                })
                .collect();
            codes.extend(p.codes.iter().map(|&c| remap[c as usize]));
        }
        Self { names, codes }
    }

    fn hash_into(&self, h: &mut ContentHasher) {
        h.u64(self.names.len() as u64);
        for n in &self.names {
            h.str(n);
        }
        h.u64(self.codes.len() as u64);
        for &c in &self.codes {
            h.u64(u64::from(c));
        }
    }
}

/// A dense expression matrix, genes (rows) x samples (columns), with annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpressionSet {
    values: Array2<f64>,
    gene_ids: Vec<String>,
    gene_names: Option<Vec<String>>,
    sample_ids: Vec<String>,
    labels: Option<Categorical>,
    groups: Option<Categorical>,
}

impl ExpressionSet {
    /// A set from a `genes x samples` matrix, one id per gene (row) and one per sample
    /// (column). Every value must be finite.
    pub fn new(
        values: Array2<f64>,
        gene_ids: Vec<String>,
        sample_ids: Vec<String>,
    ) -> Result<Self, DataError> {
        let (d, n) = values.dim();
        if gene_ids.len() != d || sample_ids.len() != n {
            return Err(DataError::Param(format!(
                "a {d} x {n} (genes x samples) matrix needs {d} gene ids and {n} sample ids, got \
                 {} and {}",
                gene_ids.len(),
                sample_ids.len()
            )));
        }
        if let Some(((g, s), v)) = values.indexed_iter().find(|(_, v)| !v.is_finite()) {
            return Err(DataError::Param(format!(
                "expression values must be finite: gene {g}, sample {s} is {v}"
            )));
        }
        Ok(Self {
            values,
            gene_ids,
            gene_names: None,
            sample_ids,
            labels: None,
            groups: None,
        })
    }

    /// Attach gene names (descriptions or symbols), one per gene.
    pub fn with_gene_names(mut self, names: Vec<String>) -> Result<Self, DataError> {
        if names.len() != self.n_genes() {
            return Err(DataError::Param(format!(
                "{} gene names for {} genes",
                names.len(),
                self.n_genes()
            )));
        }
        self.gene_names = Some(names);
        Ok(self)
    }

    /// Attach class labels, one per sample.
    pub fn with_labels(mut self, labels: Categorical) -> Result<Self, DataError> {
        if labels.len() != self.n_samples() {
            return Err(DataError::Param(format!(
                "{} class labels for {} samples",
                labels.len(),
                self.n_samples()
            )));
        }
        self.labels = Some(labels);
        Ok(self)
    }

    /// Attach sample groups (e.g. donors), one per sample.
    pub fn with_groups(mut self, groups: Categorical) -> Result<Self, DataError> {
        if groups.len() != self.n_samples() {
            return Err(DataError::Param(format!(
                "{} sample groups for {} samples",
                groups.len(),
                self.n_samples()
            )));
        }
        self.groups = Some(groups);
        Ok(self)
    }

    /// Number of genes (rows, `d`).
    pub fn n_genes(&self) -> usize {
        self.values.nrows()
    }

    /// Number of samples (columns, `n`).
    pub fn n_samples(&self) -> usize {
        self.values.ncols()
    }

    /// The `genes x samples` matrix.
    pub fn values(&self) -> &Array2<f64> {
        &self.values
    }

    /// The matrix, consuming the set.
    pub fn into_values(self) -> Array2<f64> {
        self.values
    }

    /// Sample `s` (a column: one value per gene).
    pub fn sample(&self, s: usize) -> ArrayView1<'_, f64> {
        self.values.column(s)
    }

    /// Gene `g` (a row: one value per sample).
    pub fn gene(&self, g: usize) -> ArrayView1<'_, f64> {
        self.values.row(g)
    }

    pub fn gene_ids(&self) -> &[String] {
        &self.gene_ids
    }

    pub fn gene_names(&self) -> Option<&[String]> {
        self.gene_names.as_deref()
    }

    pub fn sample_ids(&self) -> &[String] {
        &self.sample_ids
    }

    pub fn labels(&self) -> Option<&Categorical> {
        self.labels.as_ref()
    }

    pub fn groups(&self) -> Option<&Categorical> {
        self.groups.as_ref()
    }

    /// The row of the first gene with this id.
    pub fn gene_index(&self, id: &str) -> Option<usize> {
        self.gene_ids.iter().position(|g| g == id)
    }

    /// The smallest and largest value (`None` for an empty matrix).
    pub fn value_range(&self) -> Option<(f64, f64)> {
        self.values.iter().fold(None, |acc, &v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
    }

    /// Centre every gene across the samples (subtract each row's mean, as givens.md E1 does
    /// before sparse PCA); returns the means that were removed.
    pub fn center_genes(&mut self) -> Vec<f64> {
        let n = self.n_samples();
        if n == 0 {
            return vec![0.0; self.n_genes()];
        }
        let mut means = Vec::with_capacity(self.n_genes());
        for mut row in self.values.axis_iter_mut(Axis(0)) {
            let mean = row.sum() / n as f64;
            row.mapv_inplace(|v| v - mean);
            means.push(mean);
        }
        means
    }

    /// The samples `idx` (in that order; repeats allowed), with their annotations.
    pub fn select_samples(&self, idx: &[usize]) -> Result<Self, DataError> {
        if let Some(&bad) = idx.iter().find(|&&i| i >= self.n_samples()) {
            return Err(DataError::Param(format!(
                "sample index {bad} out of range for {} samples",
                self.n_samples()
            )));
        }
        Ok(Self {
            values: self.values.select(Axis(1), idx),
            gene_ids: self.gene_ids.clone(),
            gene_names: self.gene_names.clone(),
            sample_ids: idx.iter().map(|&i| self.sample_ids[i].clone()).collect(),
            labels: self.labels.as_ref().map(|l| l.select(idx)),
            groups: self.groups.as_ref().map(|g| g.select(idx)),
        })
    }

    /// The genes `idx` (in that order; repeats allowed).
    pub fn select_genes(&self, idx: &[usize]) -> Result<Self, DataError> {
        if let Some(&bad) = idx.iter().find(|&&i| i >= self.n_genes()) {
            return Err(DataError::Param(format!(
                "gene index {bad} out of range for {} genes",
                self.n_genes()
            )));
        }
        Ok(Self {
            values: self.values.select(Axis(0), idx),
            gene_ids: idx.iter().map(|&i| self.gene_ids[i].clone()).collect(),
            gene_names: self
                .gene_names
                .as_ref()
                .map(|names| idx.iter().map(|&i| names[i].clone()).collect()),
            sample_ids: self.sample_ids.clone(),
            labels: self.labels.clone(),
            groups: self.groups.clone(),
        })
    }

    /// Put sets over the same genes side by side (samples of `parts[0]` first). Gene ids and
    /// names must agree exactly; labels (and groups) must be present on all parts or on none,
    /// and their category names are merged in order of first appearance.
    pub fn concat_samples(parts: &[&ExpressionSet]) -> Result<Self, DataError> {
        let Some(first) = parts.first() else {
            return Err(DataError::Param(
                "concatenating needs at least one set".into(),
            ));
        };
        for (k, p) in parts.iter().enumerate().skip(1) {
            if p.gene_ids != first.gene_ids || p.gene_names != first.gene_names {
                let at = (0..p.n_genes().max(first.n_genes()))
                    .find(|&g| p.gene_ids.get(g) != first.gene_ids.get(g))
                    .map_or("gene names differ".to_string(), |g| {
                        format!("first difference at gene {g}")
                    });
                return Err(DataError::Param(format!(
                    "set {k} has other genes than set 0 ({} vs {} genes; {at})",
                    p.n_genes(),
                    first.n_genes()
                )));
            }
        }
        let merge = |what: &str,
                     get: fn(&ExpressionSet) -> Option<&Categorical>|
         -> Result<Option<Categorical>, DataError> {
            let present: Vec<&Categorical> = parts.iter().filter_map(|p| get(p)).collect();
            match present.len() {
                0 => Ok(None),
                k if k == parts.len() => Ok(Some(Categorical::concat(&present))),
                k => Err(DataError::Param(format!(
                    "{k} of {} sets have {what}; all or none must",
                    parts.len()
                ))),
            }
        };
        let labels = merge("class labels", |p| p.labels.as_ref())?;
        let groups = merge("sample groups", |p| p.groups.as_ref())?;
        let views: Vec<_> = parts.iter().map(|p| p.values.view()).collect();
        let values = ndarray::concatenate(Axis(1), &views)
            .map_err(|e| DataError::Param(format!("cannot concatenate: {e}")))?;
        Ok(Self {
            values: values.as_standard_layout().into_owned(),
            gene_ids: first.gene_ids.clone(),
            gene_names: first.gene_names.clone(),
            sample_ids: parts
                .iter()
                .flat_map(|p| p.sample_ids.iter().cloned())
                .collect(),
            labels,
            groups,
        })
    }

    /// Content identity of the decoded content: dimensions, values (bit patterns in gene-major
    /// order, `-0.0` folded into `+0.0`), gene ids and names, sample ids, labels and groups.
    pub fn content_id(&self) -> ContentId {
        let mut h = ContentHasher::new("expression/v1");
        h.u64(self.n_genes() as u64).u64(self.n_samples() as u64);
        let mut buf = Vec::with_capacity(8 * self.n_samples());
        for row in self.values.axis_iter(Axis(0)) {
            buf.clear();
            for &v in row {
                buf.extend_from_slice(&(v + 0.0).to_bits().to_le_bytes());
            }
            h.bytes(&buf);
        }
        for g in &self.gene_ids {
            h.str(g);
        }
        h.u64(u64::from(self.gene_names.is_some()));
        for n in self.gene_names.iter().flatten() {
            h.str(n);
        }
        for s in &self.sample_ids {
            h.str(s);
        }
        for cat in [&self.labels, &self.groups] {
            match cat {
                None => {
                    h.u64(0);
                }
                Some(c) => {
                    h.u64(1);
                    c.hash_into(&mut h);
                }
            }
        }
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn ids(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    fn small() -> ExpressionSet {
        ExpressionSet::new(
            array![[1.0, 2.0, 3.0], [4.0, 4.0, 7.0]],
            ids("g", 2),
            ids("s", 3),
        )
        .unwrap()
        .with_labels(Categorical::from_values(&["b", "a", "b"]))
        .unwrap()
    }

    #[test]
    fn categorical_counts_members_and_validation() {
        let c = Categorical::from_values(&["x", "y", "x", "z", "x"]);
        assert_eq!(c.names(), &["x", "y", "z"]);
        assert_eq!(c.codes(), &[0, 1, 0, 2, 0]);
        assert_eq!(c.counts(), vec![3, 1, 1]);
        assert_eq!(c.members(0), vec![0, 2, 4]);
        assert_eq!(c.count_of("z"), Some(1));
        assert_eq!(c.count_of("w"), None);
        assert_eq!(c.name_of(3), "z");
        assert!(Categorical::new(vec!["a".into()], vec![0, 1]).is_err());
        assert!(Categorical::new(vec!["a".into(), "a".into()], vec![0]).is_err());
    }

    #[test]
    fn construction_checks_shapes_and_finiteness() {
        assert!(ExpressionSet::new(Array2::zeros((2, 3)), ids("g", 3), ids("s", 3)).is_err());
        let mut v = Array2::zeros((2, 2));
        v[[1, 0]] = f64::NAN;
        let e = ExpressionSet::new(v, ids("g", 2), ids("s", 2)).unwrap_err();
        assert!(e.to_string().contains("gene 1, sample 0"), "{e}");
        let s = small();
        assert!(s.clone().with_gene_names(ids("n", 3)).is_err());
        assert!(
            s.clone()
                .with_groups(Categorical::from_values(&["a"]))
                .is_err()
        );
        assert_eq!(s.value_range(), Some((1.0, 7.0)));
        assert_eq!(s.sample(2).to_vec(), vec![3.0, 7.0]);
        assert_eq!(s.gene(1).to_vec(), vec![4.0, 4.0, 7.0]);
    }

    #[test]
    fn centring_removes_hand_computed_means() {
        let mut s = small();
        let means = s.center_genes();
        assert_eq!(means, vec![2.0, 5.0]);
        assert_eq!(s.values(), &array![[-1.0, 0.0, 1.0], [-1.0, -1.0, 2.0]]);
    }

    #[test]
    fn selection_and_concatenation_keep_annotations() {
        let s = small();
        let t = s.select_samples(&[2, 0]).unwrap();
        assert_eq!(t.values(), &array![[3.0, 1.0], [7.0, 4.0]]);
        assert_eq!(t.sample_ids(), &["s2", "s0"]);
        assert_eq!(t.labels().unwrap().codes(), &[0, 0]);
        assert!(s.select_samples(&[3]).is_err());
        let g = s.select_genes(&[1]).unwrap();
        assert_eq!(g.gene_ids(), &["g1"]);
        assert_eq!(g.values(), &array![[4.0, 4.0, 7.0]]);

        let other = ExpressionSet::new(array![[9.0], [8.0]], ids("g", 2), vec!["t0".into()])
            .unwrap()
            .with_labels(Categorical::from_values(&["c"]))
            .unwrap();
        let both = ExpressionSet::concat_samples(&[&s, &other]).unwrap();
        assert_eq!(
            both.values(),
            &array![[1.0, 2.0, 3.0, 9.0], [4.0, 4.0, 7.0, 8.0]]
        );
        assert_eq!(both.labels().unwrap().names(), &["b", "a", "c"]);
        assert_eq!(both.labels().unwrap().codes(), &[0, 1, 0, 2]);
        assert_eq!(both.sample_ids(), &["s0", "s1", "s2", "t0"]);
        // Different genes, or labels on only one part: errors.
        let renamed =
            ExpressionSet::new(array![[9.0], [8.0]], ids("h", 2), vec!["t".into()]).unwrap();
        assert!(ExpressionSet::concat_samples(&[&s, &renamed]).is_err());
        let unlabelled =
            ExpressionSet::new(array![[9.0], [8.0]], ids("g", 2), vec!["t".into()]).unwrap();
        assert!(ExpressionSet::concat_samples(&[&s, &unlabelled]).is_err());
        assert!(ExpressionSet::concat_samples(&[]).is_err());
    }

    #[test]
    fn identity_depends_on_every_part_of_the_content() {
        let s = small();
        let id = s.content_id();
        assert_eq!(id, s.clone().content_id());
        // Layout does not matter, values do; -0.0 is +0.0.
        let fortran = ExpressionSet {
            values: s.values.t().to_owned().reversed_axes(),
            ..s.clone()
        };
        assert_eq!(fortran.content_id(), id);
        let mut z = small();
        z.values[[0, 0]] = 0.0;
        let mut nz = small();
        nz.values[[0, 0]] = -0.0;
        assert_eq!(z.content_id(), nz.content_id());
        assert_ne!(z.content_id(), id);
        let variants = [
            s.clone().with_gene_names(ids("n", 2)).unwrap(),
            s.clone()
                .with_groups(Categorical::from_values(&["d", "d", "d"]))
                .unwrap(),
            s.clone()
                .with_labels(Categorical::from_values(&["a", "b", "a"]))
                .unwrap(),
            ExpressionSet {
                sample_ids: ids("u", 3),
                ..s.clone()
            },
            ExpressionSet {
                gene_ids: ids("h", 2),
                ..s.clone()
            },
            ExpressionSet {
                labels: None,
                ..s.clone()
            },
        ];
        for (k, v) in variants.iter().enumerate() {
            assert_ne!(v.content_id(), id, "variant {k}");
        }
        // Labels vs groups with the same content are different content.
        let as_groups = ExpressionSet {
            labels: None,
            groups: s.labels.clone(),
            ..s.clone()
        };
        assert_ne!(as_groups.content_id(), id);
    }
}
