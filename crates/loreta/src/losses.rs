//! The two losses of spec §3 and what they need from the data: the triplet ranking hinge of
//! a bilinear similarity (§3.1) and the multilabel ranking hinge of a label scorer (§3.2),
//! both with rank-one (sub)gradients.

use dyad_core::{LabeledSet, Rng, SparseVec};
use rand::Rng as _;

/// The triplet hinge `[1 - S(q, p+) + S(q, p-)]_+` from the margin `S(q, p+) - S(q, p-)`.
/// Its descent direction is `g1 g2^T` with `g1 = q`, `g2 = p+ - p-` (spec §3.1). A NaN
/// margin (a model that has blown up) gives a NaN loss, never a silent 0.
#[inline]
pub fn triplet_hinge(margin: f64) -> f64 {
    if margin.is_nan() {
        f64::NAN
    } else {
        (1.0 - margin).max(0.0)
    }
}

/// The labels of row `i`: its relevance list when the set has one, else its class.
pub fn relevant_labels(set: &LabeledSet, i: usize) -> &[u32] {
    dyad_kernels::row_labels(set, i)
}

/// The number of labels `L` of a label-ranking problem on `set`: its class count, or one more
/// than the largest label of its relevance lists if that is larger. (A data set whose
/// relevance lists name labels beyond its classes, e.g. ImageNet leaves plus ancestors,
/// should name all of them in `class_names` so that train and test agree on `L`.)
pub fn label_count(set: &LabeledSet) -> usize {
    dyad_kernels::n_labels(set)
}

/// Rows usable by the multilabel hinge: at least one relevant label below `n_labels` and
/// at least one label that is not relevant.
pub fn usable_rows(set: &LabeledSet, n_labels: usize) -> Vec<usize> {
    (0..set.n())
        .filter(|&i| {
            let l = relevant_labels(set, i);
            let inside = l.iter().filter(|&&y| (y as usize) < n_labels).count();
            inside > 0 && inside < n_labels
        })
        .collect()
}

/// The multilabel hinge of one example (spec §3.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultilabelHinge {
    /// `sum_i [(Wp)_ybar - (Wp)_{y_i} + 1]_+`.
    pub loss: f64,
    /// The highest-scoring non-relevant label.
    pub ybar: usize,
    /// Relevant labels with a positive hinge (`d`).
    pub violated: usize,
}

/// The multilabel ranking hinge of scores `scores` (one per label) with relevant labels
/// `positives` (sorted, deduplicated). Writes the descent factor `u = sum_j e_{i_j} - d
/// e_ybar` over the `d` violated labels into `u` (sorted indices; empty when the loss is 0),
/// so that the descent direction is `u p^T`.
///
/// `ybar = argmax_{s not relevant} scores_s`, ties broken by the lowest index, or uniformly
/// at random when `ties` is given (spec §3.2 \[CHOICE\]: random at `W = 0`, where every
/// score ties). Returns `None` when every label is relevant (no negative label).
pub fn multilabel_hinge(
    scores: &[f64],
    positives: &[u32],
    mut ties: Option<&mut Rng>,
    u: &mut SparseVec,
) -> Option<MultilabelHinge> {
    u.indices.clear();
    u.values.clear();
    let mut best: Option<(usize, f64)> = None;
    let mut n_ties = 0u64;
    let mut next = 0;
    for (l, &s) in scores.iter().enumerate() {
        while next < positives.len() && (positives[next] as usize) < l {
            next += 1;
        }
        if next < positives.len() && positives[next] as usize == l {
            continue;
        }
        match best {
            Some((_, b)) if s < b || s.is_nan() => {}
            Some((_, b)) if s == b => {
                if let Some(rng) = ties.as_deref_mut() {
                    n_ties += 1;
                    if rng.random_range(0..n_ties) == 0 {
                        best = Some((l, s));
                    }
                }
            }
            _ => {
                best = Some((l, s));
                n_ties = 1;
            }
        }
    }
    let (ybar, top) = best?;
    let (mut loss, mut d) = (0.0, 0usize);
    let mut placed = false;
    for &y in positives {
        let y = y as usize;
        if y >= scores.len() {
            continue;
        }
        let h = top - scores[y] + 1.0;
        if h > 0.0 || h.is_nan() {
            loss += h;
            d += 1;
            if !placed && ybar < y {
                u.indices.push(ybar);
                u.values.push(0.0);
                placed = true;
            }
            u.indices.push(y);
            u.values.push(1.0);
        }
    }
    if d > 0 {
        if !placed {
            u.indices.push(ybar);
            u.values.push(0.0);
        }
        let at = u.indices.iter().position(|&i| i == ybar).expect("placed");
        u.values[at] = -(d as f64);
    }
    Some(MultilabelHinge {
        loss,
        ybar,
        violated: d,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;

    #[test]
    fn multilabel_hinge_by_hand() {
        // Labels 0..5; relevant {1, 3}; best negative is 4 (0.9).
        let scores = [0.2, 1.5, 0.1, 0.5, 0.9];
        let mut u = SparseVec::default();
        let h = multilabel_hinge(&scores, &[1, 3], None, &mut u).unwrap();
        // Hinges: label 1: 0.9 - 1.5 + 1 = 0.4; label 3: 0.9 - 0.5 + 1 = 1.4.
        assert_eq!(h.ybar, 4);
        assert_eq!(h.violated, 2);
        assert!((h.loss - 1.8).abs() < 1e-12);
        assert_eq!(u.indices, vec![1, 3, 4]);
        assert_eq!(u.values, vec![1.0, 1.0, -2.0]);
        // |u|^2 = d + d^2 (spec §4 B3).
        assert_eq!(u.norm_sq(), 6.0);
        // A well-separated example has no loss and an empty u.
        let h = multilabel_hinge(&[5.0, 0.0, 0.0], &[0], None, &mut u).unwrap();
        assert_eq!((h.loss, h.violated), (0.0, 0));
        assert!(u.indices.is_empty());
        // ybar below the violated label is placed first.
        let h = multilabel_hinge(&[0.3, 0.0, 0.1], &[1], None, &mut u).unwrap();
        assert_eq!(h.ybar, 0);
        assert_eq!(
            (u.indices.clone(), u.values.clone()),
            (vec![0, 1], vec![-1.0, 1.0])
        );
        // Every label relevant: no negative.
        assert!(multilabel_hinge(&[0.0, 1.0], &[0, 1], None, &mut u).is_none());
    }

    #[test]
    fn triplet_hinge_values() {
        assert_eq!(triplet_hinge(0.25), 0.75);
        assert_eq!(triplet_hinge(3.0), 0.0);
        assert!(triplet_hinge(f64::NAN).is_nan());
        assert_eq!(triplet_hinge(f64::NEG_INFINITY), f64::INFINITY);
    }

    #[test]
    fn ties_lowest_index_or_uniform() {
        let scores = [0.0; 6];
        let mut u = SparseVec::default();
        let h = multilabel_hinge(&scores, &[2], None, &mut u).unwrap();
        assert_eq!(h.ybar, 0);
        let mut rng = seeded(1);
        let mut counts = [0usize; 6];
        for _ in 0..10_000 {
            counts[multilabel_hinge(&scores, &[2], Some(&mut rng), &mut u)
                .unwrap()
                .ybar] += 1;
        }
        assert_eq!(counts[2], 0);
        for (l, &c) in counts.iter().enumerate() {
            if l != 2 {
                assert!((1_800..2_200).contains(&c), "{counts:?}");
            }
        }
    }

    #[test]
    fn label_helpers() {
        let rows: Vec<Vec<f64>> = (0..3).map(|i| vec![i as f64 + 1.0]).collect();
        let single = LabeledSet::from_dense_rows(&rows, vec![0, 1, 1], 2);
        assert_eq!(label_count(&single), 2);
        assert_eq!(relevant_labels(&single, 2), &[1]);
        assert_eq!(usable_rows(&single, 2), vec![0, 1, 2]);
        let multi = single
            .with_relevance(vec![vec![0, 4], vec![1], vec![0, 1, 2, 3, 4]])
            .unwrap();
        assert_eq!(label_count(&multi), 5);
        assert_eq!(relevant_labels(&multi, 0), &[0, 4]);
        assert_eq!(usable_rows(&multi, 5), vec![0, 1]);
    }
}
