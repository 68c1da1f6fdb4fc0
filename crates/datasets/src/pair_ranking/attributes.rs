//! Readers of the real releases behind the tensor-ranking paper's panels (spec §4), for users
//! who have them (none can be downloaded here; the providers fall back to S-ATTR / S-CLASS).
//!
//! # Relative attributes: OSR, PubFig (Parikh & Grauman 2011), Shoes (Kovashka et al. 2012)
//!
//! The releases ship one MATLAB file, `data.mat`, per data set. [`read_relative_attributes`]
//! reads the variables the release documents \[EXTERNAL; checked against its README text, not
//! against a copy of the files, which are not reachable from here\]:
//!
//! * `feat`: `n × m` features (OSR: 512-d GIST; PubFig: GIST + colour; Shoes: GIST + colour);
//! * `class_labels`: `n` category numbers, 1-based;
//! * `relative_ordering`: `A × C`, the strength of category `c` for attribute `a` (integers,
//!   equal values are ties; a larger value means more of the attribute);
//! * optional `attribute_names` and `class_names` (cell arrays of strings, or char matrices).
//!
//! The category-level order is all the paper uses (§4.1: "training labels are provided at
//! the category level"); the release's `used_for_training` split is not read: the task draws
//! 5 training points per category per repeat, as for the stand-in.
//!
//! # ETH-80 HOG (Ebert et al.)
//!
//! The HOG features Ebert et al. provide for ETH-80 are, as far as the paper says, one
//! features matrix and one class label per image. [`read_features_labels`] reads a MAT file
//! with a features matrix (`features`, `feat` or `X`, `n × m`) and labels (`labels`,
//! `class_labels` or `y`, `n` values, any integer coding: the distinct values in increasing
//! order become classes `0..C`), and orders the classes by label, the first ranking highest
//! (the paper's convention for MNIST, §4.1; the ETH-80 class order is semantically arbitrary).
//! The variable names are \[OURS\]: the release's own layout is not known here.
//!
//! A features matrix stored `m × n` (one column per point) is recognised when the labels'
//! length matches its column count and not its row count.

use super::{Order, OrderedSet};
use crate::DataError;
use crate::formats::mat::{MatFile, MatValue, read_mat};
use ndarray::Array2;
use std::path::Path;

/// The first of `names` that `mat` holds.
fn first<'a>(mat: &'a MatFile, names: &[&'static str]) -> Option<(&'static str, &'a MatValue)> {
    names.iter().find_map(|n| mat.get(n).map(|v| (*n, v)))
}

fn inconsistent(path: &Path, message: String) -> DataError {
    DataError::Inconsistent {
        path: path.to_path_buf(),
        message,
    }
}

/// A numeric matrix: (rows, cols, column-major values).
fn matrix<'a>(
    path: &Path,
    name: &str,
    v: &'a MatValue,
) -> Result<(usize, usize, &'a [f64]), DataError> {
    let dims = v.dims();
    match (v.numbers(), &dims[..]) {
        (Some(re), [r, c]) => Ok((*r, *c, re)),
        _ => Err(inconsistent(
            path,
            format!(
                "`{name}` must be a 2-D numeric array, found {}",
                v.describe()
            ),
        )),
    }
}

/// The labels as a vector (a row or a column), integral.
fn vector(path: &Path, name: &str, v: &MatValue) -> Result<Vec<i64>, DataError> {
    let (r, c, re) = matrix(path, name, v)?;
    if r != 1 && c != 1 {
        return Err(inconsistent(
            path,
            format!("`{name}` must be a vector, found {r}x{c}"),
        ));
    }
    re.iter()
        .map(|&x| {
            if x.fract() == 0.0 && x.is_finite() {
                Ok(x as i64)
            } else {
                Err(inconsistent(
                    path,
                    format!("`{name}` holds the non-integer {x}"),
                ))
            }
        })
        .collect()
}

/// The features as `n × m` row-major, for `n` labels.
fn features(path: &Path, name: &str, v: &MatValue, n: usize) -> Result<Array2<f64>, DataError> {
    let (r, c, re) = matrix(path, name, v)?;
    let x = if r == n {
        // Column-major r × c: element (i, j) at j * r + i.
        Array2::from_shape_fn((r, c), |(i, j)| re[j * r + i])
    } else if c == n {
        Array2::from_shape_fn((c, r), |(i, j)| re[i * r + j])
    } else {
        return Err(inconsistent(
            path,
            format!("`{name}` is {r}x{c} but there are {n} labels"),
        ));
    };
    if let Some(bad) = x.iter().find(|v| !v.is_finite()) {
        return Err(inconsistent(path, format!("`{name}` holds {bad}")));
    }
    Ok(x)
}

/// Names from a cell array of strings or a char matrix; `None` when absent.
fn names(v: Option<&MatValue>) -> Option<Vec<String>> {
    let v = v?;
    if let Some(items) = v.cell_items() {
        return items
            .iter()
            .map(|i| i.as_str().map(|s| s.trim().to_string()))
            .collect();
    }
    v.char_rows()
        .map(|rows| rows.into_iter().map(|s| s.trim().to_string()).collect())
}

/// Map labels to `0..C` by their distinct values in increasing order.
fn codes(labels: &[i64]) -> (Vec<u32>, Vec<i64>) {
    let mut distinct = labels.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let group = labels
        .iter()
        .map(|l| distinct.binary_search(l).expect("present") as u32)
        .collect();
    (group, distinct)
}

/// Read a relative-attributes `data.mat` (module docs).
pub fn read_relative_attributes(path: &Path) -> Result<OrderedSet, DataError> {
    relative_attributes_from_mat(path, &read_mat(path)?)
}

/// Decode an already parsed relative-attributes `data.mat`; `path` names it in errors.
pub fn relative_attributes_from_mat(path: &Path, mat: &MatFile) -> Result<OrderedSet, DataError> {
    let need = |n: &str| {
        mat.get(n).ok_or_else(|| {
            inconsistent(
                path,
                format!("no variable `{n}` (found: {})", mat.names().join(", ")),
            )
        })
    };
    let labels = vector(path, "class_labels", need("class_labels")?)?;
    let n = labels.len();
    let x = features(path, "feat", need("feat")?, n)?;
    let (attrs, cats, ord) = matrix(path, "relative_ordering", need("relative_ordering")?)?;
    if let Some(bad) = labels.iter().find(|&&l| l < 1 || l as usize > cats) {
        return Err(inconsistent(
            path,
            format!("class label {bad} outside 1..={cats} (the columns of relative_ordering)"),
        ));
    }
    let group: Vec<u32> = labels.iter().map(|&l| (l - 1) as u32).collect();
    let strengths = Array2::from_shape_fn((cats, attrs), |(c, a)| ord[c * attrs + a]);
    let attribute_names = names(mat.get("attribute_names"))
        .filter(|v| v.len() == attrs)
        .unwrap_or_else(|| (1..=attrs).map(|a| format!("attribute{a}")).collect());
    let group_names = names(mat.get("class_names"))
        .filter(|v| v.len() == cats)
        .unwrap_or_else(|| (1..=cats).map(|c| format!("category{c}")).collect());
    let set = OrderedSet {
        x,
        group,
        group_names,
        order: Order::Attributes {
            strengths,
            names: attribute_names,
        },
    };
    set.check().map_err(|m| inconsistent(path, m))?;
    Ok(set)
}

/// Read a features + labels MAT file as class-ordered data (module docs, ETH-80 HOG).
pub fn read_features_labels(path: &Path) -> Result<OrderedSet, DataError> {
    features_labels_from_mat(path, &read_mat(path)?)
}

/// Decode an already parsed features + labels MAT file; `path` names it in errors.
pub fn features_labels_from_mat(path: &Path, mat: &MatFile) -> Result<OrderedSet, DataError> {
    let missing = |what: &str, tried: &[&str]| {
        inconsistent(
            path,
            format!(
                "no {what} variable (tried {}; found: {})",
                tried.join(", "),
                mat.names().join(", ")
            ),
        )
    };
    const LABELS: [&str; 3] = ["labels", "class_labels", "y"];
    const FEATURES: [&str; 3] = ["features", "feat", "X"];
    let (ln, lv) = first(mat, &LABELS).ok_or_else(|| missing("labels", &LABELS))?;
    let labels = vector(path, ln, lv)?;
    let (fname, fv) = first(mat, &FEATURES).ok_or_else(|| missing("features", &FEATURES))?;
    let x = features(path, fname, fv, labels.len())?;
    let (group, distinct) = codes(&labels);
    let c = distinct.len();
    if c < 2 {
        return Err(inconsistent(path, "fewer than two classes".into()));
    }
    let set = OrderedSet {
        x,
        group,
        group_names: distinct.iter().map(|l| format!("class{l}")).collect(),
        order: Order::Classes {
            rank: (0..c).map(|k| (c - 1 - k) as f64).collect(),
        },
    };
    set.check().map_err(|m| inconsistent(path, m))?;
    Ok(set)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::formats::mat::{WriteOptions, write_mat};

    fn col_major(rows: &[Vec<f64>]) -> (Vec<usize>, Vec<f64>) {
        let (r, c) = (rows.len(), rows[0].len());
        let mut v = Vec::with_capacity(r * c);
        for j in 0..c {
            for row in rows {
                v.push(row[j]);
            }
        }
        (vec![r, c], v)
    }

    /// A small relative-attributes `data.mat`: 6 points of 3 categories, 2 attributes.
    pub(crate) fn write_relative(path: &Path, compress: bool) {
        let feat: Vec<Vec<f64>> = (0..6)
            .map(|i| vec![i as f64, (i * i) as f64, 1.0 - i as f64, 0.5])
            .collect();
        let (fd, fv) = col_major(&feat);
        // Attribute 1: categories 3 > 2 > 1; attribute 2: 1 = 3 > 2.
        let (od, ov) = col_major(&[vec![1.0, 2.0, 3.0], vec![2.0, 1.0, 2.0]]);
        let vars = vec![
            ("feat".to_string(), MatValue::double(fd, fv)),
            (
                "class_labels".to_string(),
                MatValue::double(vec![6, 1], vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]),
            ),
            ("relative_ordering".to_string(), MatValue::double(od, ov)),
            (
                "attribute_names".to_string(),
                MatValue::Cell {
                    dims: vec![1, 2],
                    items: vec![MatValue::string("natural"), MatValue::string("open")],
                },
            ),
        ];
        let bytes = write_mat(
            "MATLAB 5.0 MAT-file",
            &vars,
            WriteOptions {
                compress,
                narrow_storage: true,
                ..Default::default()
            },
        )
        .unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    #[test]
    fn relative_attributes_are_read_with_their_category_orders() {
        let dir = tempfile::tempdir().unwrap();
        for compress in [false, true] {
            let p = dir.path().join("data.mat");
            write_relative(&p, compress);
            let s = read_relative_attributes(&p).unwrap();
            assert_eq!(s.x.dim(), (6, 4));
            assert_eq!(s.x.row(3).to_vec(), vec![3.0, 9.0, -2.0, 0.5]);
            assert_eq!(s.group, vec![0, 1, 2, 0, 1, 2]);
            assert_eq!(s.n_orders(), 2);
            assert_eq!(s.truth(0), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
            assert_eq!(s.truth(1), vec![2.0, 1.0, 2.0, 2.0, 1.0, 2.0]);
            let Order::Attributes { names, .. } = &s.order else {
                panic!("attributes")
            };
            assert_eq!(names, &["natural", "open"]);
            assert_eq!(s.group_names[2], "category3");
        }
        // A label beyond the ordered categories is an error naming it.
        let bad = dir.path().join("bad.mat");
        let vars = vec![
            (
                "feat".to_string(),
                MatValue::double(vec![2, 1], vec![0.0, 1.0]),
            ),
            (
                "class_labels".to_string(),
                MatValue::double(vec![2, 1], vec![1.0, 4.0]),
            ),
            (
                "relative_ordering".to_string(),
                MatValue::double(vec![1, 2], vec![1.0, 2.0]),
            ),
        ];
        std::fs::write(
            &bad,
            write_mat("x", &vars, WriteOptions::default()).unwrap(),
        )
        .unwrap();
        let e = read_relative_attributes(&bad).unwrap_err().to_string();
        assert!(e.contains("class label 4"), "{e}");
    }

    #[test]
    fn features_and_labels_become_ordered_classes_in_either_orientation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("eth80_hog.mat");
        // 3 features x 4 points (one column per point), labels 10, 20, 10, 30.
        let (fd, fv) = col_major(&[
            vec![1.0, 2.0, 3.0, 4.0],
            vec![5.0, 6.0, 7.0, 8.0],
            vec![9.0, 10.0, 11.0, 12.0],
        ]);
        let vars = vec![
            ("X".to_string(), MatValue::double(fd, fv)),
            (
                "y".to_string(),
                MatValue::double(vec![1, 4], vec![10.0, 20.0, 10.0, 30.0]),
            ),
        ];
        std::fs::write(&p, write_mat("x", &vars, WriteOptions::default()).unwrap()).unwrap();
        let s = read_features_labels(&p).unwrap();
        assert_eq!(s.x.dim(), (4, 3));
        assert_eq!(s.x.row(1).to_vec(), vec![2.0, 6.0, 10.0]);
        assert_eq!(s.group, vec![0, 1, 0, 2]);
        assert_eq!(
            s.truth(0),
            vec![2.0, 1.0, 2.0, 0.0],
            "the first class ranks highest"
        );
        // No labels: an error listing what the file holds.
        let vars = vec![("X".to_string(), MatValue::double(vec![1, 1], vec![1.0]))];
        std::fs::write(&p, write_mat("x", &vars, WriteOptions::default()).unwrap()).unwrap();
        let e = read_features_labels(&p).unwrap_err().to_string();
        assert!(
            e.contains("no labels variable") && e.contains("found: X"),
            "{e}"
        );
    }
}
