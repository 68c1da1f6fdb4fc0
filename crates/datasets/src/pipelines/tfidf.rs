//! tf-idf weighting and L2 normalisation of bags of words, shared by every pipeline that
//! needs it (the image features of OASIS, the Caltech and ImageNet stand-ins, the ImageNet
//! SBOW features): `w = f · idf`, `idf = −ln(df / n)` over the documents the weights are fitted
//! on (0 for a word in none of them), each row scaled to unit L2 norm, zero weights not stored
//! (a word in every document has idf 0 and disappears; a document holding only such words
//! becomes an empty row). The text pipeline of LORETA §5.1 has its own options (tf variants,
//! idf off) and lives in [`super::text`].

use sprs::CsMat;
use std::collections::BTreeMap;

/// idf weights `−ln(df / n)` of `bags` over `dim` words (0 for words in no bag; words at or
/// beyond `dim` are ignored).
pub fn idf_of_bags(bags: &[BTreeMap<usize, f64>], dim: usize) -> Vec<f64> {
    let mut df = vec![0usize; dim];
    for bag in bags {
        for &w in bag.keys() {
            if w < dim {
                df[w] += 1;
            }
        }
    }
    idf_from_df(&df, bags.len())
}

/// idf weights of the rows of a count matrix (a word counts in a row when its count is
/// non-zero).
pub fn idf(counts: &CsMat<f64>) -> Vec<f64> {
    let mut df = vec![0usize; counts.cols()];
    let counts = counts.to_csr();
    for row in counts.outer_iterator() {
        for (&j, &v) in row.indices().iter().zip(row.data()) {
            if v != 0.0 {
                df[j] += 1;
            }
        }
    }
    idf_from_df(&df, counts.rows())
}

fn idf_from_df(df: &[usize], n: usize) -> Vec<f64> {
    let n = n as f64;
    df.iter()
        .map(|&f| if f == 0 { 0.0 } else { -(f as f64 / n).ln() })
        .collect()
}

/// tf-idf with the given weights, rows L2-normalised, zero weights not stored; one column per
/// weight.
pub fn tfidf_l2_bags(bags: &[BTreeMap<usize, f64>], idf: &[f64]) -> CsMat<f64> {
    rows_tfidf_l2(
        bags.len(),
        idf,
        bags.iter().map(|b| b.iter().map(|(&w, &f)| (w, f))),
    )
}

/// tf-idf of a count matrix with the given weights (one per column), rows L2-normalised.
///
/// # Panics
/// If `idf` does not have one weight per column of `counts` (a programming error).
pub fn tfidf_l2(counts: &CsMat<f64>, idf: &[f64]) -> CsMat<f64> {
    assert_eq!(idf.len(), counts.cols(), "one idf weight per column");
    let counts = counts.to_csr();
    rows_tfidf_l2(
        counts.rows(),
        idf,
        counts.outer_iterator().map(|r| {
            r.indices()
                .iter()
                .copied()
                .zip(r.data().iter().copied())
                .collect::<Vec<_>>()
        }),
    )
}

fn rows_tfidf_l2<R: IntoIterator<Item = (usize, f64)>>(
    n: usize,
    idf: &[f64],
    rows: impl Iterator<Item = R>,
) -> CsMat<f64> {
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0);
    let (mut indices, mut data) = (Vec::new(), Vec::new());
    for row in rows {
        let start = indices.len();
        for (w, f) in row {
            let v = f * idf.get(w).copied().unwrap_or(0.0);
            if v > 0.0 {
                indices.push(w);
                data.push(v);
            }
        }
        let norm = data[start..].iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            data[start..].iter_mut().for_each(|v| *v /= norm);
        }
        indptr.push(indices.len());
    }
    CsMat::new((n, idf.len()), indptr, indices, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bags_match_hand_computation() {
        // Word 0 in 1 of 4 bags -> ln 4; word 1 in 3 of 4 -> ln 4/3; word 2 in none -> 0.
        let small = vec![
            BTreeMap::from([(0, 2.0), (1, 1.0)]),
            BTreeMap::from([(1, 1.0)]),
            BTreeMap::from([(1, 3.0)]),
            BTreeMap::new(),
        ];
        let w = idf_of_bags(&small, 3);
        assert!((w[0] - 4f64.ln()).abs() < 1e-15);
        assert!((w[1] - (4.0f64 / 3.0).ln()).abs() < 1e-15);
        assert_eq!(w[2], 0.0);
        let x = tfidf_l2_bags(&small, &w);
        assert_eq!(x.shape(), (4, 3));
        let (a, b) = (2.0 * w[0], w[1]);
        let n = (a * a + b * b).sqrt();
        assert_eq!(x.outer_view(0).unwrap().data(), &[a / n, b / n]);
        assert_eq!(x.outer_view(3).unwrap().nnz(), 0);
        // A word in every bag has idf 0 and is not stored.
        let every = vec![
            BTreeMap::from([(0, 2.0), (1, 1.0)]),
            BTreeMap::from([(1, 3.0)]),
        ];
        let x = tfidf_l2_bags(&every, &idf_of_bags(&every, 2));
        assert_eq!(x.outer_view(0).unwrap().indices(), &[0]);
        assert_eq!(x.outer_view(0).unwrap().data(), &[1.0]);
        assert_eq!(x.outer_view(1).unwrap().nnz(), 0);
    }

    #[test]
    fn matrices_and_bags_agree() {
        let counts = CsMat::new(
            (3, 4),
            vec![0, 2, 4, 6],
            vec![0, 1, 0, 2, 0, 2],
            vec![1.0, 2.0, 5.0, 1.0, 3.0, 4.0],
        );
        let bags: Vec<BTreeMap<usize, f64>> = counts
            .outer_iterator()
            .map(|r| r.iter().map(|(j, &v)| (j, v)).collect())
            .collect();
        let w = idf(&counts);
        assert_eq!(w, idf_of_bags(&bags, 4));
        assert!((w[1] - 3f64.ln()).abs() < 1e-15 && w[0] == 0.0 && w[3] == 0.0);
        assert_eq!(tfidf_l2(&counts, &w), tfidf_l2_bags(&bags, &w));
    }
}
