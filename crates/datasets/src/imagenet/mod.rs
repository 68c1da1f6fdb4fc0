//! ImageNet LSVRC-2010: the SBOW (bag of SIFT visual words) features of the training images,
//! the development kit's synset hierarchy (`meta.mat`), and the label expansion of LORETA spec
//! §5.2. (The LORETA experiments split the training images per class; the validation images
//! and their ground truth are not used, so dyad does not read them.)
//!
//! # Files
//!
//! * **SBOW features** (one MAT-file per synset, `<WNID>.sbow.mat`, e.g. `n01440764.sbow.mat`):
//!   a struct array
//!   `image_sbow` with one element per image and the fields
//!   - `ID`: char, the image id (`n01440764_10026`, `ILSVRC2010_val_00000001`);
//!   - `sbow`: a 1 x 1 struct with `word` (the 0-based visual-word index of every SIFT
//!     descriptor, vocabulary of 1000 words), `x`, `y`, `scale`, `norm` (per-descriptor
//!     geometry; when present they must have one entry per word, and are otherwise unused).
//!
//!   An image's feature vector is the histogram of its words (bin `w` counts descriptors
//!   quantised to word `w`), as in the official demo code (`histc(word, 0:999)`).
//! * **`meta.mat`** of the development kit: a struct array `synsets` with fields
//!   `ILSVRC2010_ID` (1-based, the synset's position), `WNID`, `words`, `gloss`,
//!   `num_children`, `children` (ILSVRC2010_IDs of the children), `wordnet_height`,
//!   `num_train_images`. The 1000 challenge classes are the synsets without children (IDs
//!   1..=1000 in the real file); the others are their WordNet ancestors. `words`, `gloss`,
//!   `wordnet_height` and `num_train_images` are optional here; the rest is required.
//!
//! # Label expansion (§5.2)
//!
//! Every image is labelled with its leaf and **all** its ancestors: WordNet is a DAG and the
//! paper speaks of "the path" to the root, so we take the union of all hypernym paths ([CHOICE]
//! of the spec). Ancestors that cover more than `max_fraction` (10 %) of the images are then
//! dropped (strictly more; leaves are never dropped). Labels are numbered with the leaves first
//! (label `l` < number of leaves is leaf `l`, so [`MultiLabelSet::leaf`] holds label ids),
//! then the kept ancestors that cover at least one image, in hierarchy order. Every leaf keeps
//! its label even when no image of it was loaded, so label ids do not depend on which synset
//! files are present.
//!
//! # Features
//!
//! tf-idf then L2 ([`crate::pipelines::tfidf`]): `f · −ln(df / n)` with `df` the number of
//! images holding the word. Words present in every image get weight 0 and are not stored. [`idf`] and [`tfidf_l2`] are separate so that the idf can be computed on training
//! rows only and applied to all rows.
//!
//! Problems in the files' *content* (a word index out of range, a child id that is not a
//! synset, a cycle) are [`DataError::Inconsistent`] naming the file and the MATLAB path of the
//! offending value (`image_sbow(17).sbow.word(3)`); problems in their *encoding* are the MAT
//! reader's [`DataError::Format`]/[`DataError::Corrupt`].

pub mod provider;
pub mod standin;

use crate::formats::mat::{MatFile, MatValue, read_mat};
use crate::{ContentHasher, ContentId, DataError};
use sprs::CsMat;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The SBOW vocabulary size.
pub const VOCAB: usize = 1000;

/// §5.2: ancestors covering more than this fraction of the images are dropped.
pub const MAX_LABEL_FRACTION: f64 = 0.1;

fn inconsistent(path: &Path, message: String) -> DataError {
    DataError::Inconsistent {
        path: path.to_path_buf(),
        message,
    }
}

// ---------------------------------------------------------------------------------------------
// SBOW features
// ---------------------------------------------------------------------------------------------

/// One image of an SBOW file.
#[derive(Debug, Clone, PartialEq)]
pub struct SbowImage {
    pub id: String,
    /// Bag-of-words counts, `(word, count)` with words ascending and counts > 0.
    pub counts: Vec<(u32, u32)>,
}

/// Read the images of one SBOW MAT-file; word indices must be in `0..vocab`.
pub fn read_sbow_file(path: &Path, vocab: usize) -> Result<Vec<SbowImage>, DataError> {
    sbow_from_mat(path, &read_mat(path)?, vocab)
}

/// Decode the `image_sbow` variable of a parsed SBOW file; `path` names it in errors.
pub fn sbow_from_mat(path: &Path, m: &MatFile, vocab: usize) -> Result<Vec<SbowImage>, DataError> {
    let v = m.get("image_sbow").ok_or_else(|| {
        inconsistent(
            path,
            format!(
                "no variable `image_sbow` (the file holds: {})",
                m.names().join(", ")
            ),
        )
    })?;
    let MatValue::Struct { items, .. } = v else {
        return Err(inconsistent(
            path,
            format!(
                "`image_sbow` should be a struct array, found {}",
                v.describe()
            ),
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        let at = |what: &str| format!("image_sbow({}){what}", i + 1);
        let field = |name: &str| {
            v.field(i, name).ok_or_else(|| {
                inconsistent(path, format!("{} is missing", at(&format!(".{name}"))))
            })
        };
        let id = field("ID")?
            .as_str()
            .ok_or_else(|| inconsistent(path, format!("{} is not char", at(".ID"))))?
            .to_string();
        let sbow = field("sbow")?;
        if !matches!(sbow, MatValue::Struct { .. }) || sbow.len() != 1 {
            return Err(inconsistent(
                path,
                format!(
                    "{} should be a 1x1 struct, found {}",
                    at(".sbow"),
                    sbow.describe()
                ),
            ));
        }
        let word = sbow
            .field(0, "word")
            .ok_or_else(|| inconsistent(path, format!("{} is missing", at(".sbow.word"))))?;
        let words: &[f64] = match word {
            MatValue::Numeric { re, im: None, .. } => re,
            other => {
                return Err(inconsistent(
                    path,
                    format!(
                        "{} should be numeric, found {}",
                        at(".sbow.word"),
                        other.describe()
                    ),
                ));
            }
        };
        for geo in ["x", "y", "scale", "norm"] {
            if let Some(g) = sbow.field(0, geo)
                && g.len() != words.len()
            {
                return Err(inconsistent(
                    path,
                    format!(
                        "{} has {} entries for {} words",
                        at(&format!(".sbow.{geo}")),
                        g.len(),
                        words.len()
                    ),
                ));
            }
        }
        let mut hist = vec![0u32; vocab];
        for (k, &w) in words.iter().enumerate() {
            if w.fract() != 0.0 || !(0.0..vocab as f64).contains(&w) {
                return Err(inconsistent(
                    path,
                    format!(
                        "{}({}) = {w} is not a visual word in 0..{vocab}",
                        at(".sbow.word"),
                        k + 1
                    ),
                ));
            }
            hist[w as usize] += 1;
        }
        let counts = hist
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(w, &c)| (w as u32, c))
            .collect();
        out.push(SbowImage { id, counts });
    }
    Ok(out)
}

/// Bag-of-words counts of images as a CSR matrix (images x `vocab`).
pub fn counts_csr(images: &[SbowImage], vocab: usize) -> CsMat<f64> {
    let mut indptr = Vec::with_capacity(images.len() + 1);
    indptr.push(0);
    let (mut ind, mut dat) = (Vec::new(), Vec::new());
    for img in images {
        for &(w, c) in &img.counts {
            ind.push(w as usize);
            dat.push(f64::from(c));
        }
        indptr.push(ind.len());
    }
    CsMat::new((images.len(), vocab), indptr, ind, dat)
}

/// Images with their counts and leaf labels, before label expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct SbowData {
    /// Images x words raw counts.
    pub counts: CsMat<f64>,
    /// Leaf index of each image (position in [`Hierarchy::leaves`]).
    pub leaf: Vec<u32>,
    pub image_ids: Vec<String>,
}

/// Load every `<WNID>.sbow.mat` of `dir` (other files are ignored). Each WNID must be a leaf
/// of `h`; files are read in leaf order, so the row order does not depend on the directory
/// listing.
pub fn load_sbow_dir(dir: &Path, h: &Hierarchy, vocab: usize) -> Result<SbowData, DataError> {
    let entries = std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    let mut files: Vec<(u32, PathBuf)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DataError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(wnid) = name.strip_suffix(".sbow.mat") else {
            continue;
        };
        if wnid.starts_with("val") || wnid.starts_with("test") {
            continue;
        }
        let path = entry.path();
        let leaf = h.leaf_of_wnid(wnid).ok_or_else(|| {
            inconsistent(
                &path,
                format!(
                    "`{wnid}` is not one of the hierarchy's {} leaf synsets",
                    h.leaves.len()
                ),
            )
        })?;
        files.push((leaf, path));
    }
    if files.is_empty() {
        return Err(DataError::Missing {
            name: "imagenet-sbow".into(),
            dir: dir.to_path_buf(),
            tried: "<WNID>.sbow.mat".into(),
            hint: "Unpack the LSVRC-2010 SBOW training features (one MAT-file per synset) here."
                .into(),
        });
    }
    files.sort();
    let mut images = Vec::new();
    let mut leaf = Vec::new();
    for (l, path) in &files {
        let imgs = read_sbow_file(path, vocab)?;
        leaf.extend(std::iter::repeat_n(*l, imgs.len()));
        images.extend(imgs);
    }
    Ok(SbowData {
        counts: counts_csr(&images, vocab),
        leaf,
        image_ids: images.into_iter().map(|i| i.id).collect(),
    })
}

// ---------------------------------------------------------------------------------------------
// Hierarchy
// ---------------------------------------------------------------------------------------------

/// One synset of the hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct Synset {
    /// ILSVRC2010_ID: 1-based position in [`Hierarchy::synsets`].
    pub id: u32,
    pub wnid: String,
    pub words: String,
    pub gloss: String,
    /// Children, as indices into [`Hierarchy::synsets`].
    pub children: Vec<usize>,
    /// Parents (filled in by [`Hierarchy::new`]), ascending.
    pub parents: Vec<usize>,
    pub wordnet_height: u32,
    pub num_train_images: u64,
}

/// A synset DAG (WordNet's hypernym structure restricted to the challenge's synsets).
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy {
    synsets: Vec<Synset>,
    leaves: Vec<usize>,
    wnid_index: HashMap<String, usize>,
    leaf_pos: Vec<Option<u32>>,
}

impl Hierarchy {
    /// Validate and complete a hierarchy: ids must be `1..=n` in order, WNIDs distinct,
    /// children valid, distinct and acyclic. Parents and the leaf list are computed.
    pub fn new(mut synsets: Vec<Synset>) -> Result<Self, String> {
        let n = synsets.len();
        let mut wnid_index = HashMap::with_capacity(n);
        for (i, s) in synsets.iter().enumerate() {
            if s.id as usize != i + 1 {
                return Err(format!(
                    "synset {} has id {}, expected {}",
                    s.wnid,
                    s.id,
                    i + 1
                ));
            }
            if wnid_index.insert(s.wnid.clone(), i).is_some() {
                return Err(format!("WNID `{}` occurs twice", s.wnid));
            }
        }
        let mut parents = vec![Vec::new(); n];
        for (i, s) in synsets.iter().enumerate() {
            let mut seen = s.children.clone();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!("synset {} lists a child twice", s.id));
            }
            for &c in &s.children {
                if c >= n {
                    return Err(format!("synset {} has child index {c} of {n}", s.id));
                }
                parents[c].push(i);
            }
        }
        for (s, p) in synsets.iter_mut().zip(parents) {
            s.parents = p;
        }
        // Kahn's algorithm: every node must be reachable by removing roots.
        let mut indeg: Vec<usize> = synsets.iter().map(|s| s.parents.len()).collect();
        let mut stack: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut seen = 0;
        while let Some(i) = stack.pop() {
            seen += 1;
            for &c in &synsets[i].children {
                indeg[c] -= 1;
                if indeg[c] == 0 {
                    stack.push(c);
                }
            }
        }
        if seen != n {
            let on_cycle = (0..n).find(|&i| indeg[i] > 0).unwrap_or(0);
            return Err(format!(
                "the children relation has a cycle (through synset {})",
                synsets[on_cycle].id
            ));
        }
        let leaves: Vec<usize> = (0..n).filter(|&i| synsets[i].children.is_empty()).collect();
        let mut leaf_pos = vec![None; n];
        for (k, &i) in leaves.iter().enumerate() {
            leaf_pos[i] = Some(k as u32);
        }
        Ok(Self {
            synsets,
            leaves,
            wnid_index,
            leaf_pos,
        })
    }

    /// The synsets, by index (ILSVRC2010_ID - 1).
    pub fn synsets(&self) -> &[Synset] {
        &self.synsets
    }

    /// The synsets without children (the classes), ascending by id; an image's leaf label is
    /// a position in this list.
    pub fn leaves(&self) -> &[usize] {
        &self.leaves
    }

    /// Index of the synset with this WNID.
    pub fn index_of_wnid(&self, wnid: &str) -> Option<usize> {
        self.wnid_index.get(wnid).copied()
    }

    /// Leaf position of the synset with this WNID, when it is a leaf.
    pub fn leaf_of_wnid(&self, wnid: &str) -> Option<u32> {
        self.leaf_pos[self.index_of_wnid(wnid)?]
    }

    /// Leaf position of the synset with this ILSVRC2010_ID, when it is a leaf.
    pub fn leaf_of_id(&self, id: u32) -> Option<u32> {
        let i = (id as usize).checked_sub(1)?;
        *self.leaf_pos.get(i)?
    }

    /// All strict ancestors of synset `i` (union over every path to a root), ascending.
    pub fn ancestors(&self, i: usize) -> Vec<usize> {
        let mut seen = vec![false; self.synsets.len()];
        let mut stack = self.synsets[i].parents.clone();
        let mut out = Vec::new();
        while let Some(p) = stack.pop() {
            if !std::mem::replace(&mut seen[p], true) {
                out.push(p);
                stack.extend_from_slice(&self.synsets[p].parents);
            }
        }
        out.sort_unstable();
        out
    }
}

/// Read the development kit's `meta.mat`.
pub fn read_meta(path: &Path) -> Result<Hierarchy, DataError> {
    meta_from_mat(path, &read_mat(path)?)
}

/// Decode the `synsets` variable of a parsed `meta.mat`; `path` names it in errors.
pub fn meta_from_mat(path: &Path, m: &MatFile) -> Result<Hierarchy, DataError> {
    let v = m.get("synsets").ok_or_else(|| {
        inconsistent(
            path,
            format!(
                "no variable `synsets` (the file holds: {})",
                m.names().join(", ")
            ),
        )
    })?;
    let MatValue::Struct { items, .. } = v else {
        return Err(inconsistent(
            path,
            format!("`synsets` should be a struct array, found {}", v.describe()),
        ));
    };
    let n = items.len();
    let mut by_id: Vec<Option<Synset>> = vec![None; n];
    for i in 0..n {
        let at = |f: &str| format!("synsets({}).{f}", i + 1);
        let get = |f: &str| v.field(i, f);
        let required =
            |f: &str| get(f).ok_or_else(|| inconsistent(path, format!("{} is missing", at(f))));
        let text = |f: &str, need: bool| -> Result<String, DataError> {
            match get(f) {
                None if !need => Ok(String::new()),
                None => Err(inconsistent(path, format!("{} is missing", at(f)))),
                Some(x) => x.as_str().map(str::to_string).ok_or_else(|| {
                    inconsistent(
                        path,
                        format!("{} should be char, found {}", at(f), x.describe()),
                    )
                }),
            }
        };
        let count = |f: &str, need: bool, max: f64| -> Result<f64, DataError> {
            match get(f) {
                None if !need => Ok(0.0),
                None => Err(inconsistent(path, format!("{} is missing", at(f)))),
                Some(x) => match x.scalar() {
                    Some(s) if s.fract() == 0.0 && (0.0..=max).contains(&s) => Ok(s),
                    _ => Err(inconsistent(
                        path,
                        format!(
                            "{} should be an integer in 0..={max}, found {}",
                            at(f),
                            x.describe()
                        ),
                    )),
                },
            }
        };
        let id = count("ILSVRC2010_ID", true, n as f64)? as u32;
        if id == 0 {
            return Err(inconsistent(
                path,
                format!("{} is 0; ids are 1-based", at("ILSVRC2010_ID")),
            ));
        }
        let num_children = count("num_children", true, n as f64)? as usize;
        let children_v = required("children")?;
        let children_ids: &[f64] = match children_v {
            MatValue::Numeric { re, im: None, .. } => re,
            other => {
                return Err(inconsistent(
                    path,
                    format!(
                        "{} should be numeric, found {}",
                        at("children"),
                        other.describe()
                    ),
                ));
            }
        };
        if children_ids.len() != num_children {
            return Err(inconsistent(
                path,
                format!(
                    "{} lists {} children but num_children is {num_children}",
                    at("children"),
                    children_ids.len()
                ),
            ));
        }
        let mut children = Vec::with_capacity(num_children);
        for (k, &c) in children_ids.iter().enumerate() {
            if c.fract() != 0.0 || !(1.0..=n as f64).contains(&c) {
                return Err(inconsistent(
                    path,
                    format!(
                        "{}({}) = {c} is not an ILSVRC2010_ID in 1..={n}",
                        at("children"),
                        k + 1
                    ),
                ));
            }
            children.push(c as usize - 1);
        }
        let s = Synset {
            id,
            wnid: text("WNID", true)?,
            words: text("words", false)?,
            gloss: text("gloss", false)?,
            children,
            parents: Vec::new(),
            wordnet_height: count("wordnet_height", false, f64::from(u32::MAX))? as u32,
            num_train_images: count("num_train_images", false, 9.0e15)? as u64,
        };
        if by_id[id as usize - 1].replace(s).is_some() {
            return Err(inconsistent(
                path,
                format!("{} = {id} occurs twice", at("ILSVRC2010_ID")),
            ));
        }
    }
    // n elements with distinct ids in 1..=n: every slot is filled.
    let synsets: Vec<Synset> = by_id.into_iter().flatten().collect();
    Hierarchy::new(synsets).map_err(|m| inconsistent(path, m))
}

// ---------------------------------------------------------------------------------------------
// Label expansion and the multi-label set
// ---------------------------------------------------------------------------------------------

/// The result of [`expand_labels`].
#[derive(Debug, Clone, PartialEq)]
pub struct LabelExpansion {
    /// Sorted label ids of each image.
    pub labels: Vec<Vec<u32>>,
    /// Name (WNID) of each label.
    pub label_names: Vec<String>,
    /// Synset index of each label.
    pub label_nodes: Vec<usize>,
    /// Ancestors covering at least one image, before dropping.
    pub ancestors_seen: usize,
    /// Synset indices of the dropped ancestors (coverage > `max_fraction`), ascending.
    pub dropped: Vec<usize>,
}

/// §5.2: label every image with its leaf and all ancestors, then drop ancestors covering more
/// than `max_fraction` of the images. `leaf` holds leaf positions (see [`Hierarchy::leaves`]).
pub fn expand_labels(
    h: &Hierarchy,
    leaf: &[u32],
    max_fraction: f64,
) -> Result<LabelExpansion, DataError> {
    if !(max_fraction > 0.0 && max_fraction <= 1.0) {
        return Err(DataError::Param(format!(
            "max_fraction must be in (0, 1], got {max_fraction}"
        )));
    }
    let n_leaves = h.leaves.len();
    if let Some(&bad) = leaf.iter().find(|&&l| l as usize >= n_leaves) {
        return Err(DataError::Param(format!(
            "leaf label {bad} out of range for {n_leaves} leaves"
        )));
    }
    let anc: Vec<Vec<usize>> = h.leaves.iter().map(|&i| h.ancestors(i)).collect();
    let mut coverage = vec![0usize; h.synsets.len()];
    let mut per_leaf = vec![0usize; n_leaves];
    leaf.iter().for_each(|&l| per_leaf[l as usize] += 1);
    for (l, &count) in per_leaf.iter().enumerate() {
        for &a in &anc[l] {
            coverage[a] += count;
        }
    }
    let limit = max_fraction * leaf.len() as f64;
    let mut label_of = vec![u32::MAX; h.synsets.len()];
    let mut label_nodes = h.leaves.clone();
    for (k, &i) in h.leaves.iter().enumerate() {
        label_of[i] = k as u32;
    }
    let mut dropped = Vec::new();
    let mut ancestors_seen = 0;
    for i in 0..h.synsets.len() {
        if h.synsets[i].children.is_empty() || coverage[i] == 0 {
            continue;
        }
        ancestors_seen += 1;
        if coverage[i] as f64 > limit {
            dropped.push(i);
        } else {
            label_of[i] = label_nodes.len() as u32;
            label_nodes.push(i);
        }
    }
    let leaf_labels: Vec<Vec<u32>> = (0..n_leaves)
        .map(|l| {
            let mut v: Vec<u32> = std::iter::once(l as u32)
                .chain(
                    anc[l]
                        .iter()
                        .map(|&a| label_of[a])
                        .filter(|&x| x != u32::MAX),
                )
                .collect();
            v.sort_unstable();
            v
        })
        .collect();
    Ok(LabelExpansion {
        labels: leaf
            .iter()
            .map(|&l| leaf_labels[l as usize].clone())
            .collect(),
        label_names: label_nodes
            .iter()
            .map(|&i| h.synsets[i].wnid.clone())
            .collect(),
        label_nodes,
        ancestors_seen,
        dropped,
    })
}

pub use crate::pipelines::tfidf::{idf, tfidf_l2};

/// Multi-label data: feature rows with a set of labels each (ImageNet's leaf + ancestors).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiLabelSet {
    /// `n x d` CSR features.
    pub x: CsMat<f64>,
    /// Sorted label ids of each row, in `0..label_names.len()`.
    pub labels: Vec<Vec<u32>>,
    pub label_names: Vec<String>,
    /// Leaf label of each row; the leaves are labels `0..n_leaves`.
    pub leaf: Vec<u32>,
    /// Number of leaf labels.
    pub n_leaves: usize,
}

/// Summary statistics of a [`MultiLabelSet`].
#[derive(Debug, Clone, PartialEq)]
pub struct LabelStats {
    pub n_images: usize,
    pub n_labels: usize,
    pub n_leaves: usize,
    pub mean_labels_per_image: f64,
    /// Largest fraction of images carrying one non-leaf label (0 when there is none).
    pub max_ancestor_fraction: f64,
}

impl MultiLabelSet {
    /// Validate and build.
    pub fn new(
        x: CsMat<f64>,
        labels: Vec<Vec<u32>>,
        label_names: Vec<String>,
        leaf: Vec<u32>,
        n_leaves: usize,
    ) -> Result<Self, DataError> {
        let bad = |m: String| Err(DataError::Param(m));
        if !x.is_csr() {
            return bad("the feature matrix must be CSR".into());
        }
        if x.rows() != labels.len() || x.rows() != leaf.len() {
            return bad(format!(
                "{} rows, {} label sets, {} leaf labels",
                x.rows(),
                labels.len(),
                leaf.len()
            ));
        }
        if n_leaves > label_names.len() {
            return bad(format!(
                "{n_leaves} leaves but {} labels",
                label_names.len()
            ));
        }
        for (i, (ls, &l)) in labels.iter().zip(&leaf).enumerate() {
            let sorted = ls.windows(2).all(|w| w[0] < w[1]);
            let in_range = ls.last().is_none_or(|&m| (m as usize) < label_names.len());
            if !sorted || !in_range || (l as usize) >= n_leaves || ls.binary_search(&l).is_err() {
                return bad(format!(
                    "row {i}: labels {ls:?} must be sorted, below {}, and contain its leaf {l} (< {n_leaves})",
                    label_names.len()
                ));
            }
        }
        Ok(Self {
            x,
            labels,
            label_names,
            leaf,
            n_leaves,
        })
    }

    /// Expand leaf labels (§5.2) and weight the counts by tf-idf + L2 (idf over these rows).
    /// Returns the set and the expansion (which records the dropped ancestors).
    pub fn from_counts(
        h: &Hierarchy,
        counts: &CsMat<f64>,
        leaf: Vec<u32>,
        max_fraction: f64,
    ) -> Result<(Self, LabelExpansion), DataError> {
        let e = expand_labels(h, &leaf, max_fraction)?;
        let x = tfidf_l2(counts, &idf(counts));
        let set = Self::new(
            x,
            e.labels.clone(),
            e.label_names.clone(),
            leaf,
            h.leaves.len(),
        )?;
        Ok((set, e))
    }

    pub fn n(&self) -> usize {
        self.labels.len()
    }

    pub fn dim(&self) -> usize {
        self.x.cols()
    }

    pub fn n_labels(&self) -> usize {
        self.label_names.len()
    }

    /// Label statistics (the numbers §5.2 reports: label count, mean labels per image).
    pub fn stats(&self) -> LabelStats {
        let n = self.n();
        let total: usize = self.labels.iter().map(Vec::len).sum();
        let mut cover = vec![0usize; self.n_labels()];
        for ls in &self.labels {
            for &l in ls {
                cover[l as usize] += 1;
            }
        }
        let max_anc = cover[self.n_leaves..].iter().copied().max().unwrap_or(0);
        LabelStats {
            n_images: n,
            n_labels: self.n_labels(),
            n_leaves: self.n_leaves,
            mean_labels_per_image: if n == 0 { 0.0 } else { total as f64 / n as f64 },
            max_ancestor_fraction: if n == 0 {
                0.0
            } else {
                max_anc as f64 / n as f64
            },
        }
    }

    /// The rows `idx` (in that order) as a new set; labels are kept.
    pub fn select(&self, idx: &[usize]) -> MultiLabelSet {
        let mut indptr = Vec::with_capacity(idx.len() + 1);
        indptr.push(0);
        let (mut ind, mut dat) = (Vec::new(), Vec::new());
        for &i in idx {
            let row = self.x.outer_view(i).expect("row in range");
            ind.extend_from_slice(row.indices());
            dat.extend_from_slice(row.data());
            indptr.push(ind.len());
        }
        MultiLabelSet {
            x: CsMat::new((idx.len(), self.dim()), indptr, ind, dat),
            labels: idx.iter().map(|&i| self.labels[i].clone()).collect(),
            label_names: self.label_names.clone(),
            leaf: idx.iter().map(|&i| self.leaf[i]).collect(),
            n_leaves: self.n_leaves,
        }
    }

    /// Content identity: features, label sets, label names and leaves.
    pub fn content_id(&self) -> ContentId {
        let mut h = ContentHasher::new("multilabel-set/v1");
        h.u64(self.n() as u64).u64(self.dim() as u64);
        for row in self.x.outer_iterator() {
            h.u64(row.nnz() as u64);
            for (&j, &v) in row.indices().iter().zip(row.data()) {
                h.u64(j as u64).f64(v);
            }
        }
        for (ls, &l) in self.labels.iter().zip(&self.leaf) {
            h.u64(u64::from(l)).u64(ls.len() as u64);
            for &x in ls {
                h.u64(u64::from(x));
            }
        }
        h.u64(self.n_leaves as u64);
        for name in &self.label_names {
            h.str(name);
        }
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::mat::{NumClass, WriteOptions, write_mat};

    fn opts() -> WriteOptions {
        WriteOptions {
            compress: true,
            small_elements: true,
            narrow_storage: true,
            ..Default::default()
        }
    }

    fn row(values: &[f64]) -> MatValue {
        MatValue::double(vec![1, values.len()], values.to_vec())
    }

    /// A tiny devkit hierarchy: 4 leaves (ids 1-4), 3 ancestors.
    ///
    /// ```text
    ///        entity(7)
    ///        /      \
    ///   animal(5)  device(6)
    ///    /  \   \    /   \
    ///  fish dog  cat-+  wheel    (cat has two parents: animal and device)
    ///   1    2    3       4
    /// ```
    fn meta_vars() -> Vec<(String, MatValue)> {
        let syn = [
            (1, "n01440764", "tench", vec![]),
            (2, "n02084071", "dog", vec![]),
            (3, "n02121808", "cat", vec![]),
            (4, "n04574999", "wheel", vec![]),
            (5, "n00015388", "animal", vec![1.0, 2.0, 3.0]),
            (6, "n03183080", "device", vec![3.0, 4.0]),
            (7, "n00001740", "entity", vec![5.0, 6.0]),
        ];
        let fields = [
            "ILSVRC2010_ID",
            "WNID",
            "words",
            "gloss",
            "num_children",
            "children",
            "wordnet_height",
            "num_train_images",
        ];
        let items = syn
            .iter()
            .map(|(id, wnid, words, ch)| {
                let children = if ch.is_empty() {
                    MatValue::double(vec![0, 0], vec![])
                } else {
                    row(ch)
                };
                vec![
                    row(&[f64::from(*id)]),
                    MatValue::string(wnid),
                    MatValue::string(words),
                    MatValue::string(&format!("gloss of {words}")),
                    row(&[ch.len() as f64]),
                    children,
                    row(&[if ch.is_empty() { 0.0 } else { 1.0 }]),
                    row(&[if ch.is_empty() { 10.0 } else { 0.0 }]),
                ]
            })
            .collect();
        vec![(
            "synsets".into(),
            MatValue::Struct {
                dims: vec![syn.len(), 1],
                fields: fields.iter().map(|s| s.to_string()).collect(),
                items,
            },
        )]
    }

    fn meta_file(dir: &Path, vars: &[(String, MatValue)]) -> PathBuf {
        let p = dir.join("meta.mat");
        std::fs::write(&p, write_mat("meta", vars, opts()).unwrap()).unwrap();
        p
    }

    /// An SBOW file in the distributed layout; `images` are (id, words).
    fn sbow_vars(images: &[(&str, Vec<f64>)]) -> Vec<(String, MatValue)> {
        let items = images
            .iter()
            .map(|(id, words)| {
                let k = words.len();
                let geo = |s: f64| MatValue::Numeric {
                    class: NumClass::Single,
                    dims: vec![1, k],
                    re: (0..k).map(|i| s * i as f64).collect(),
                    im: None,
                    exact: None,
                };
                vec![
                    MatValue::string(id),
                    MatValue::Struct {
                        dims: vec![1, 1],
                        fields: ["word", "x", "y", "scale", "norm"]
                            .map(String::from)
                            .to_vec(),
                        items: vec![vec![
                            MatValue::Numeric {
                                class: NumClass::Int16,
                                dims: vec![1, k],
                                re: words.clone(),
                                im: None,
                                exact: None,
                            },
                            geo(1.0),
                            geo(2.0),
                            geo(0.5),
                            geo(0.25),
                        ]],
                    },
                ]
            })
            .collect();
        vec![(
            "image_sbow".into(),
            MatValue::Struct {
                dims: vec![1, images.len()],
                fields: vec!["ID".into(), "sbow".into()],
                items,
            },
        )]
    }

    fn hierarchy(dir: &Path) -> Hierarchy {
        read_meta(&meta_file(dir, &meta_vars())).unwrap()
    }

    #[test]
    fn meta_decodes_to_the_dag() {
        let dir = tempfile::tempdir().unwrap();
        let h = hierarchy(dir.path());
        assert_eq!(h.synsets.len(), 7);
        assert_eq!(h.leaves, vec![0, 1, 2, 3]);
        assert_eq!(h.synsets[2].parents, vec![4, 5]);
        assert_eq!(h.synsets[6].children, vec![4, 5]);
        assert_eq!(h.synsets[3].words, "wheel");
        assert_eq!(h.synsets[0].num_train_images, 10);
        assert_eq!(h.synsets[4].wordnet_height, 1);
        assert_eq!(h.ancestors(2), vec![4, 5, 6]);
        assert_eq!(h.ancestors(3), vec![5, 6]);
        assert_eq!(h.ancestors(6), Vec::<usize>::new());
        assert_eq!(h.leaf_of_wnid("n02121808"), Some(2));
        assert_eq!(h.leaf_of_wnid("n00015388"), None);
        assert_eq!(h.leaf_of_id(4), Some(3));
        assert_eq!(h.leaf_of_id(5), None);
        assert_eq!(h.leaf_of_id(0), None);
        // Element order in the file does not matter: ids do.
        let mut v = meta_vars();
        if let MatValue::Struct { items, .. } = &mut v[0].1 {
            items.reverse();
        }
        assert_eq!(read_meta(&meta_file(dir.path(), &v)).unwrap(), h);
    }

    #[test]
    fn malformed_meta_is_inconsistent_with_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let edit = |edits: Vec<(usize, usize, MatValue)>| {
            let mut v = meta_vars();
            if let MatValue::Struct { items, .. } = &mut v[0].1 {
                for (elem, field, value) in edits {
                    items[elem][field] = value;
                }
            }
            v
        };
        let cases = [
            (
                vec![(4, 5, row(&[1.0, 2.0, 9.0]))],
                "synsets(5).children(3) = 9",
            ),
            (
                vec![(4, 4, row(&[2.0]))],
                "lists 3 children but num_children is 2",
            ),
            (vec![(0, 0, row(&[2.0]))], "ILSVRC2010_ID = 2 occurs twice"),
            (
                vec![(0, 1, MatValue::string("n02084071"))],
                "WNID `n02084071` occurs twice",
            ),
            // Fish (1) becomes the parent of entity (7): fish -> entity -> animal -> fish.
            (vec![(0, 4, row(&[1.0])), (0, 5, row(&[7.0]))], "cycle"),
            (vec![(1, 1, row(&[1.0]))], "synsets(2).WNID should be char"),
            (vec![(2, 0, row(&[0.0]))], "1-based"),
            (
                vec![(2, 0, row(&[1.5]))],
                "ILSVRC2010_ID should be an integer",
            ),
            (
                vec![(3, 5, MatValue::string("x"))],
                "synsets(4).children should be numeric",
            ),
        ];
        for (edits, needle) in cases {
            match read_meta(&meta_file(dir.path(), &edit(edits))) {
                Err(e @ DataError::Inconsistent { .. }) => {
                    assert!(e.to_string().contains(needle), "{needle}: {e}")
                }
                other => panic!("{needle}: {other:?}"),
            }
        }
        let p = dir.path().join("empty.mat");
        std::fs::write(
            &p,
            write_mat("", &[("x".into(), row(&[1.0]))], opts()).unwrap(),
        )
        .unwrap();
        assert!(
            read_meta(&p)
                .unwrap_err()
                .to_string()
                .contains("no variable `synsets`")
        );
    }

    #[test]
    fn sbow_files_become_counts_in_leaf_order() {
        let dir = tempfile::tempdir().unwrap();
        let h = hierarchy(dir.path());
        let write = |name: &str, images: &[(&str, Vec<f64>)]| {
            std::fs::write(
                dir.path().join(name),
                write_mat("sbow", &sbow_vars(images), opts()).unwrap(),
            )
            .unwrap();
        };
        // Cat (leaf 2) written first, fish (leaf 0) second: rows come in leaf order.
        write(
            "n02121808.sbow.mat",
            &[("n02121808_7", vec![3.0, 3.0, 0.0, 999.0])],
        );
        write(
            "n01440764.sbow.mat",
            &[
                ("n01440764_1", vec![5.0, 1.0, 5.0]),
                ("n01440764_2", vec![]),
            ],
        );
        std::fs::write(dir.path().join("README"), "not a feature file").unwrap();
        let d = load_sbow_dir(dir.path(), &h, VOCAB).unwrap();
        assert_eq!(d.leaf, vec![0, 0, 2]);
        assert_eq!(
            d.image_ids,
            vec!["n01440764_1", "n01440764_2", "n02121808_7"]
        );
        assert_eq!(d.counts.shape(), (3, 1000));
        let r = |i| {
            let v = d.counts.outer_view(i).unwrap();
            (v.indices().to_vec(), v.data().to_vec())
        };
        assert_eq!(r(0), (vec![1, 5], vec![1.0, 2.0]));
        assert_eq!(r(1), (vec![], vec![]));
        assert_eq!(r(2), (vec![0, 3, 999], vec![1.0, 2.0, 1.0]));

        // A word outside the vocabulary, and a non-leaf WNID, are named.
        write("n04574999.sbow.mat", &[("n04574999_1", vec![1.0, 1000.0])]);
        let e = load_sbow_dir(dir.path(), &h, VOCAB)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("image_sbow(1).sbow.word(2) = 1000") && e.contains("n04574999.sbow.mat"),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("n04574999.sbow.mat")).unwrap();
        write("n00015388.sbow.mat", &[("x", vec![1.0])]);
        let e = load_sbow_dir(dir.path(), &h, VOCAB)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`n00015388` is not one of the hierarchy's 4 leaf"),
            "{e}"
        );
        std::fs::remove_file(dir.path().join("n00015388.sbow.mat")).unwrap();
        // Geometry arrays of the wrong length, and a truncated file.
        let mut v = sbow_vars(&[("n04574999_1", vec![1.0, 2.0])]);
        if let MatValue::Struct { items, .. } = &mut v[0].1
            && let MatValue::Struct { items: inner, .. } = &mut items[0][1]
        {
            inner[0][2] = row(&[1.0]);
        }
        let p = dir.path().join("n04574999.sbow.mat");
        std::fs::write(&p, write_mat("", &v, opts()).unwrap()).unwrap();
        let e = load_sbow_dir(dir.path(), &h, VOCAB)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("image_sbow(1).sbow.y has 1 entries for 2 words"),
            "{e}"
        );
        let good = write_mat("", &sbow_vars(&[("n04574999_1", vec![1.0, 2.0])]), opts()).unwrap();
        std::fs::write(&p, &good[..good.len() - 3]).unwrap();
        assert!(matches!(
            load_sbow_dir(dir.path(), &h, VOCAB),
            Err(DataError::Format { .. })
        ));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load_sbow_dir(empty.path(), &h, VOCAB),
            Err(DataError::Missing { .. })
        ));
    }

    #[test]
    fn label_expansion_matches_hand_computation() {
        let dir = tempfile::tempdir().unwrap();
        let h = hierarchy(dir.path());
        // 10 images: fish x4, dog x3, cat x2, wheel x1.
        let leaf: Vec<u32> = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3].to_vec();
        // Coverage: animal = 9, device = 3 (cat x2 + wheel), entity = 10.
        let e = expand_labels(&h, &leaf, 0.5).unwrap();
        assert_eq!(e.ancestors_seen, 3);
        assert_eq!(e.dropped, vec![4, 6]); // animal (90%) and entity (100%)
        assert_eq!(
            e.label_names,
            vec![
                "n01440764",
                "n02084071",
                "n02121808",
                "n04574999",
                "n03183080"
            ]
        );
        assert_eq!(e.labels[0], vec![0]);
        assert_eq!(e.labels[7], vec![2, 4]);
        assert_eq!(e.labels[9], vec![3, 4]);
        // With no dropping every image carries its whole union of paths.
        let e = expand_labels(&h, &leaf, 1.0).unwrap();
        assert!(e.dropped.is_empty());
        assert_eq!(e.label_nodes, vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(e.labels[7], vec![2, 4, 5, 6]);
        // Exactly at the limit is kept: device covers 3 of 10 = 30%.
        assert_eq!(
            expand_labels(&h, &leaf, 0.3).unwrap().label_nodes,
            vec![0, 1, 2, 3, 5]
        );
        assert_eq!(
            expand_labels(&h, &leaf, 0.29).unwrap().label_nodes,
            vec![0, 1, 2, 3]
        );
        // Ancestors of absent leaves are not labels; leaves always are.
        let e = expand_labels(&h, &[0, 0], 1.0).unwrap();
        assert_eq!(e.label_nodes, vec![0, 1, 2, 3, 4, 6]);
        assert!(matches!(
            expand_labels(&h, &[4], 0.1),
            Err(DataError::Param(_))
        ));
        assert!(matches!(
            expand_labels(&h, &[0], 0.0),
            Err(DataError::Param(_))
        ));
    }

    #[test]
    fn tfidf_and_the_multilabel_set() {
        let dir = tempfile::tempdir().unwrap();
        let h = hierarchy(dir.path());
        // Word 0 in every image (idf 0); word 1 in one of 3 (idf ln 3); word 2 in 2 of 3.
        let counts = CsMat::new(
            (3, 4),
            vec![0, 2, 4, 6],
            vec![0, 1, 0, 2, 0, 2],
            vec![1.0, 2.0, 5.0, 1.0, 3.0, 4.0],
        );
        let w = idf(&counts);
        assert_eq!(w[0], 0.0);
        assert!((w[1] - 3f64.ln()).abs() < 1e-15);
        assert!((w[2] - 1.5f64.ln()).abs() < 1e-15);
        assert_eq!(w[3], 0.0);
        let (set, e) = MultiLabelSet::from_counts(&h, &counts, vec![0, 2, 3], 0.7).unwrap();
        // Only one word with idf > 0 per row survives, normalised to 1.
        assert_eq!(set.x.outer_view(0).unwrap().indices(), &[1]);
        assert_eq!(set.x.outer_view(0).unwrap().data(), &[1.0]);
        assert_eq!(set.x.outer_view(1).unwrap().indices(), &[2]);
        assert_eq!(set.x.outer_view(2).unwrap().data(), &[1.0]);
        // Two surviving words: weights 2 ln 3 and 1 ln 1.5, normalised.
        let two = CsMat::new((1, 4), vec![0, 2], vec![1, 2], vec![2.0, 1.0]);
        let t = tfidf_l2(&two, &w);
        let (a, b) = (2.0 * 3f64.ln(), 1.5f64.ln());
        let norm = (a * a + b * b).sqrt();
        let got = t.outer_view(0).unwrap().data().to_vec();
        assert!((got[0] - a / norm).abs() < 1e-15 && (got[1] - b / norm).abs() < 1e-15);
        // An image holding only idf-0 words becomes an empty row.
        let only0 = CsMat::new((1, 4), vec![0, 1], vec![0], vec![3.0]);
        assert_eq!(tfidf_l2(&only0, &w).nnz(), 0);
        // Coverage: animal 2/3 kept (<= 0.7), device 2/3 kept, entity 3/3 dropped.
        assert_eq!(e.dropped, vec![6]);
        assert_eq!(set.labels, vec![vec![0, 4], vec![2, 4, 5], vec![3, 5]]);
        let s = set.stats();
        assert_eq!((s.n_images, s.n_labels, s.n_leaves), (3, 6, 4));
        assert!((s.mean_labels_per_image - 7.0 / 3.0).abs() < 1e-15);
        assert!((s.max_ancestor_fraction - 2.0 / 3.0).abs() < 1e-15);
        let sub = set.select(&[2, 0]);
        assert_eq!(sub.leaf, vec![3, 0]);
        assert_ne!(sub.content_id(), set.content_id());
        assert_eq!(set.select(&[0, 1, 2]).content_id(), set.content_id());
        // Invalid sets are refused.
        let bad = MultiLabelSet::new(
            set.x.clone(),
            vec![vec![4], vec![2], vec![3]],
            set.label_names.clone(),
            vec![0, 2, 3],
            4,
        );
        assert!(matches!(bad, Err(DataError::Param(_))));
    }
}
