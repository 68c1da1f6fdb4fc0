//! Triplet sampling for single-label relevance (OASIS spec §3): the query uniformly over
//! examples that have at least one same-class partner, the positive uniformly over the
//! query's class without the query itself, the negative uniformly over all other classes.

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
    members: Vec<Vec<usize>>,
    /// Rows whose class has at least two members (usable as queries).
    queries: Vec<usize>,
}

impl TripletSampler {
    pub fn new(set: &LabeledSet) -> Result<Self, CoreError> {
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
        })
    }

    /// One triplet. The negative is drawn by rejection from all rows, which is exactly
    /// uniform over the rows of other classes.
    pub fn sample(&self, rng: &mut Rng) -> Triplet {
        let query = self.queries[rng.random_range(0..self.queries.len())];
        let class = self.labels[query];
        let same = &self.members[class as usize];
        // Uniform over the class without the query: draw from len-1 slots and skip the query.
        let mut j = rng.random_range(0..same.len() - 1);
        if j >= same.partition_point(|&r| r < query) {
            j += 1; // skip the query's own slot (`same` is ascending)
        }
        let positive = same[j];
        let negative = loop {
            let r = rng.random_range(0..self.labels.len());
            if self.labels[r] != class {
                break r;
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
    fn degenerate_sets_are_rejected() {
        let one_class = LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 0], 1);
        assert!(TripletSampler::new(&one_class).is_err());
        let singletons = LabeledSet::from_dense_rows(&[vec![1.0], vec![2.0]], vec![0, 1], 2);
        assert!(TripletSampler::new(&singletons).is_err());
    }
}
