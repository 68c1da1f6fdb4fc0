//! Triplet sampling (OASIS spec §3).
//!
//! Single-label data: the query uniformly over examples that have at least one same-class
//! partner, the positive uniformly over the query's class without the query itself, the
//! negative uniformly over all other classes.
//!
//! Multi-label data (rows relevant iff their label lists intersect, e.g. images sharing a text
//! query): the query uniformly over rows with a usable label, the positive by drawing one of
//! the query's labels uniformly and then a member of that label other than the query — so a
//! partner sharing more labels is proportionally more likely, which is the [J] "sampling
//! based on the relevance of each image" reading (spec §3 leaves uniform-over-relevant vs
//! relevance-weighted open; this is the relevance-weighted one) — and the negative uniformly
//! over rows sharing no label with the query (by rejection).

use crate::{CoreError, LabeledSet, Rng};
use rand::Rng as _;

/// A triplet of row indices `(query, positive, negative)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Triplet {
    pub query: usize,
    pub positive: usize,
    pub negative: usize,
}

/// Draws i.i.d. triplets (with replacement across draws) from labelled data.
#[derive(Debug, Clone)]
pub struct TripletSampler {
    labels: Vec<u32>,
    /// Rows of each class (single-label) or of each label (multi-label), ascending.
    members: Vec<Vec<usize>>,
    /// Rows usable as queries (a class or label shared with another row).
    queries: Vec<usize>,
    /// Multi-label relevance lists, when the data has them.
    multi: Option<Vec<Vec<u32>>>,
}

impl TripletSampler {
    pub fn new(set: &LabeledSet) -> Result<Self, CoreError> {
        if let Some(lists) = &set.relevance {
            return Self::multi_label(set, lists);
        }
        let members = set.class_members();
        let queries: Vec<usize> = (0..set.n())
            .filter(|&i| members[set.labels[i] as usize].len() >= 2)
            .collect();
        if queries.is_empty() {
            return Err(CoreError::Invalid(
                "no class has two examples: no triplet can be formed".into(),
            ));
        }
        let largest = members.iter().map(Vec::len).max().unwrap_or(0);
        if largest == set.n() {
            return Err(CoreError::Invalid(
                "all examples share one class: no negative can be drawn".into(),
            ));
        }
        Ok(Self {
            labels: set.labels.clone(),
            members,
            queries,
            multi: None,
        })
    }

    fn multi_label(set: &LabeledSet, lists: &[Vec<u32>]) -> Result<Self, CoreError> {
        let n_labels = lists.iter().flatten().max().map_or(0, |&m| m as usize + 1);
        let mut members = vec![Vec::new(); n_labels];
        for (i, l) in lists.iter().enumerate() {
            for &c in l {
                members[c as usize].push(i);
            }
        }
        let queries: Vec<usize> = (0..set.n())
            .filter(|&i| lists[i].iter().any(|&c| members[c as usize].len() >= 2))
            .collect();
        if queries.is_empty() {
            return Err(CoreError::Invalid(
                "no label is shared by two examples: no triplet can be formed".into(),
            ));
        }
        Ok(Self {
            labels: set.labels.clone(),
            members,
            queries,
            multi: Some(lists.to_vec()),
        })
    }

    /// One triplet. The negative is drawn by rejection from all rows, which is exactly
    /// uniform over the non-relevant rows.
    pub fn sample(&self, rng: &mut Rng) -> Triplet {
        let query = self.queries[rng.random_range(0..self.queries.len())];
        let same = match &self.multi {
            None => &self.members[self.labels[query] as usize],
            Some(lists) => {
                let usable = lists[query]
                    .iter()
                    .filter(|&&c| self.members[c as usize].len() >= 2)
                    .count();
                let pick = rng.random_range(0..usable);
                let &c = lists[query]
                    .iter()
                    .filter(|&&c| self.members[c as usize].len() >= 2)
                    .nth(pick)
                    .expect("counted above");
                &self.members[c as usize]
            }
        };
        // Uniform over `same` without the query: draw from len-1 slots and skip its slot.
        let mut j = rng.random_range(0..same.len() - 1);
        if j >= same.partition_point(|&r| r < query) {
            j += 1;
        }
        let positive = same[j];
        let n = self.labels.len();
        let negative = match &self.multi {
            None => {
                let class = self.labels[query];
                loop {
                    let r = rng.random_range(0..n);
                    if self.labels[r] != class {
                        break r;
                    }
                }
            }
            Some(lists) => {
                // Bounded rejection: on degenerate data (a query relevant to nearly every row)
                // fall back to the last draw rather than loop forever.
                let mut r = rng.random_range(0..n);
                for _ in 0..(1 << 20) {
                    if r != query && !crate::data::sorted_intersect(&lists[query], &lists[r]) {
                        break;
                    }
                    r = rng.random_range(0..n);
                }
                r
            }
        };
        Triplet {
            query,
            positive,
            negative,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded;

    #[test]
    fn triplets_respect_labels_and_cover_uniformly() {
        let labels = vec![0, 0, 0, 1, 1, 2];
        let rows: Vec<Vec<f64>> = (0..6).map(|i| vec![i as f64 + 1.0]).collect();
        let set = LabeledSet::from_dense_rows(&rows, labels.clone(), 3);
        let s = TripletSampler::new(&set).unwrap();
        let mut rng = seeded(3);
        let mut pos_counts = [[0usize; 6]; 6];
        let mut query_counts = [0usize; 6];
        for _ in 0..60_000 {
            let t = s.sample(&mut rng);
            assert_ne!(t.query, t.positive);
            assert_eq!(labels[t.query], labels[t.positive]);
            assert_ne!(labels[t.query], labels[t.negative]);
            pos_counts[t.query][t.positive] += 1;
            query_counts[t.query] += 1;
        }
        // Row 5 is alone in its class: never a query.
        assert_eq!(query_counts[5], 0);
        // Queries uniform over the 5 eligible rows (12,000 each in expectation).
        for &c in &query_counts[..5] {
            assert!((11_000..13_000).contains(&c), "{query_counts:?}");
        }
        // Query 1's positives split evenly between rows 0 and 2.
        let (a, b) = (pos_counts[1][0] as f64, pos_counts[1][2] as f64);
        assert!((a / (a + b) - 0.5).abs() < 0.03);
    }

    #[test]
    fn multi_label_triplets_share_a_label_and_negatives_share_none() {
        let lists = vec![vec![0, 1], vec![1], vec![2], vec![0, 2], vec![3], vec![4]];
        let rows: Vec<Vec<f64>> = (0..6).map(|i| vec![i as f64 + 1.0]).collect();
        let set = LabeledSet::from_dense_rows(&rows, vec![0; 6], 1)
            .with_relevance(lists.clone())
            .unwrap();
        let s = TripletSampler::new(&set).unwrap();
        let mut rng = seeded(9);
        let mut queries = [0usize; 6];
        for _ in 0..20_000 {
            let t = s.sample(&mut rng);
            let share = |a: usize, b: usize| lists[a].iter().any(|c| lists[b].contains(c));
            assert!(t.query != t.positive && share(t.query, t.positive));
            assert!(
                t.query != t.negative && !share(t.query, t.negative),
                "{t:?}"
            );
            queries[t.query] += 1;
        }
        // Rows 4 and 5 have no shared label: never queries; rows 0..4 about a quarter each.
        assert_eq!(queries[4] + queries[5], 0);
        for &q in &queries[..4] {
            assert!((4_500..5_500).contains(&q), "{queries:?}");
        }
    }

    #[test]
    fn degenerate_sets_are_rejected() {
        let one_class = LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 0], 1);
        assert!(TripletSampler::new(&one_class).is_err());
        let singletons = LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 1], 2);
        assert!(TripletSampler::new(&singletons).is_err());
    }
}
