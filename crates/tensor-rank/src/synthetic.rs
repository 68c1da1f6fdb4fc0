//! The label protocol of the tensor-ranking paper (spec §4.1), as pure functions of the data's
//! groups and a random stream. The seeded stand-ins S-CLASS and S-ATTR (§9) that used to live
//! here are data-set providers now (`dyad_datasets::pair_ranking::standin`), where the harness
//! generates them; the harness's `pair-ranking` task draws the labels with these functions.
//!
//! * [`class_pairs`] (§4.1, datasets 4–8): `l` random pairs per unordered class pair, oriented
//!   by the class order, and `l` within-class equality pairs per class; `exclude` keeps
//!   validation draws disjoint from training ones.
//! * [`training_points`] and [`attribute_pairs`] (§4.1, datasets 1–3): a few points per
//!   category and all pairwise relations among them for one attribute.

use super::solver::Pairs;
use dyad_core::Rng;
use dyad_kernels::AlgoError;
use rand::Rng as _;
use rand::seq::SliceRandom;
use std::collections::HashSet;

/// The label protocol of the class datasets (§4.1): for every unordered class pair `(a, b)`,
/// `l` distinct random pairs `(x ∈ a, y ∈ b)` oriented by `rank` into `above` (into `equal`
/// when the two classes share a rank); for every class, `l` distinct random pairs of distinct
/// members into `equal`. Pairs in `exclude` (unordered, stored as `(min, max)`) are never drawn
/// (validation draws pass the training pairs here). Errors when a class has too few members
/// or pairs to draw from.
pub fn class_pairs(
    class: &[u32],
    rank: &[f64],
    l: usize,
    exclude: &HashSet<(usize, usize)>,
    rng: &mut Rng,
) -> Result<Pairs, AlgoError> {
    let c = class.iter().map(|&k| k as usize + 1).max().unwrap_or(0);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for (i, &k) in class.iter().enumerate() {
        members[k as usize].push(i);
    }
    let mut taken: HashSet<(usize, usize)> = HashSet::new();
    let key = |i: usize, j: usize| (i.min(j), i.max(j));
    let mut draw = |from: &[usize], to: &[usize], what: String, rng: &mut Rng| {
        let available = if std::ptr::eq(from, to) {
            from.len() * from.len().saturating_sub(1) / 2
        } else {
            from.len() * to.len()
        };
        if available < l {
            return Err(AlgoError::data(format!(
                "{what}: {l} pairs requested but only {available} exist"
            )));
        }
        let mut out = Vec::with_capacity(l);
        let mut attempts = 0usize;
        while out.len() < l {
            attempts += 1;
            if attempts > 1000 + 100 * l {
                return Err(AlgoError::data(format!(
                    "{what}: could not draw {l} distinct pairs outside the excluded ones"
                )));
            }
            let i = from[rng.random_range(0..from.len())];
            let j = to[rng.random_range(0..to.len())];
            if i == j || exclude.contains(&key(i, j)) || !taken.insert(key(i, j)) {
                continue;
            }
            out.push((i, j));
        }
        Ok(out)
    };
    let mut pairs = Pairs::default();
    for a in 0..c {
        for b in a + 1..c {
            if members[a].is_empty() || members[b].is_empty() {
                continue;
            }
            for (i, j) in draw(
                &members[a],
                &members[b],
                format!("classes {a} and {b}"),
                rng,
            )? {
                match rank[i].partial_cmp(&rank[j]) {
                    Some(std::cmp::Ordering::Greater) => pairs.above.push((i, j)),
                    Some(std::cmp::Ordering::Less) => pairs.above.push((j, i)),
                    _ => pairs.equal.push((i, j)),
                }
            }
        }
    }
    for (a, mem) in members.iter().enumerate() {
        if mem.is_empty() {
            continue;
        }
        pairs
            .equal
            .extend(draw(mem, mem, format!("class {a}"), rng)?);
    }
    Ok(pairs)
}

/// `per_category` distinct random points of every category (sorted), e.g. the 5 training
/// points per category of S-ATTR. Errors when a category has fewer points.
pub fn training_points(
    category: &[u32],
    per_category: usize,
    rng: &mut Rng,
) -> Result<Vec<usize>, AlgoError> {
    let c = category.iter().map(|&k| k as usize + 1).max().unwrap_or(0);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for (i, &k) in category.iter().enumerate() {
        members[k as usize].push(i);
    }
    let mut out = Vec::with_capacity(c * per_category);
    for (k, mem) in members.iter_mut().enumerate() {
        if mem.len() < per_category {
            return Err(AlgoError::data(format!(
                "category {k} has {} points, fewer than {per_category}",
                mem.len()
            )));
        }
        mem.shuffle(rng);
        out.extend_from_slice(&mem[..per_category]);
    }
    out.sort_unstable();
    Ok(out)
}

/// All pairwise relations among `points` for one attribute's `values` (§4.1, datasets 1–3):
/// `(i, j)` into `above` when `values[i] > values[j]`, into `equal` when equal.
pub fn attribute_pairs(points: &[usize], values: &[f64]) -> Pairs {
    let mut pairs = Pairs::default();
    for (u, &i) in points.iter().enumerate() {
        for &j in &points[u + 1..] {
            match values[i].partial_cmp(&values[j]) {
                Some(std::cmp::Ordering::Greater) => pairs.above.push((i, j)),
                Some(std::cmp::Ordering::Less) => pairs.above.push((j, i)),
                _ => pairs.equal.push((i, j)),
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;

    /// 400 points of 10 classes (`i mod 10`), class `c` ranked `9 − c`.
    fn classes() -> (Vec<u32>, Vec<f64>) {
        let class: Vec<u32> = (0..400).map(|i| (i % 10) as u32).collect();
        let rank = class.iter().map(|&c| 9.0 - c as f64).collect();
        (class, rank)
    }

    #[test]
    fn class_pairs_follow_the_protocol() {
        let (class, rank) = classes();
        let mut rng = seeded(1);
        let l = 3;
        let train = class_pairs(&class, &rank, l, &HashSet::new(), &mut rng).unwrap();
        assert_eq!(train.above.len(), l * 10 * 9 / 2);
        assert_eq!(train.equal.len(), l * 10);
        for &(i, j) in &train.above {
            assert!(rank[i] > rank[j], "oriented by the truth");
        }
        for &(i, j) in &train.equal {
            assert!(i != j && class[i] == class[j]);
        }
        // Validation draws avoid the training pairs.
        let used: HashSet<(usize, usize)> =
            train.iter().map(|(i, j)| (i.min(j), i.max(j))).collect();
        let val = class_pairs(&class, &rank, l, &used, &mut rng).unwrap();
        assert!(
            val.iter()
                .all(|(i, j)| !used.contains(&(i.min(j), i.max(j))))
        );
        let all: HashSet<(usize, usize)> = val.iter().map(|(i, j)| (i.min(j), i.max(j))).collect();
        assert_eq!(all.len(), val.len(), "distinct");
        // Too few members is an error, not a hang.
        assert!(class_pairs(&[0, 0, 1], &[1.0, 1.0, 0.0], 2, &HashSet::new(), &mut rng).is_err());
    }

    #[test]
    fn training_points_and_attribute_pairs() {
        // 8 categories (`i mod 8`) of 50 points; values: category c has level c mod 3.
        let category: Vec<u32> = (0..400).map(|i| (i % 8) as u32).collect();
        let vals: Vec<f64> = category.iter().map(|&c| (c % 3) as f64).collect();
        let mut rng = seeded(2);
        let pts = training_points(&category, 5, &mut rng).unwrap();
        assert_eq!(pts.len(), 40);
        for c in 0..8 {
            assert_eq!(pts.iter().filter(|&&i| category[i] == c).count(), 5);
        }
        let p = attribute_pairs(&pts, &vals);
        assert_eq!(p.len(), 40 * 39 / 2);
        assert!(p.above.iter().all(|&(i, j)| vals[i] > vals[j]));
        assert!(p.equal.iter().all(|&(i, j)| vals[i] == vals[j]));
        assert!(p.equal.len() >= 8 * 10, "within-category pairs are equal");
        assert!(training_points(&category, 51, &mut rng).is_err());
    }
}
