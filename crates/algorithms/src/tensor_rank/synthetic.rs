//! Seeded stand-ins for the paper's data (spec §9) and its label protocol (§4.1), as pure
//! functions of their parameters and a seed: the lead wraps them as data-set providers.
//!
//! * [`s_class`] (§9.1, S-CLASS): ordered classes on a Swiss roll lifted to `R^m`; stand-in for
//!   the class-order panels (ETH-80, MNIST, SVHN, CIFAR-10, DTD).
//! * [`s_attr`] (§9.2, S-ATTR): categories on a 2-D manifold in `R^m` with per-attribute random
//!   weak orders of the categories; stand-in for the attribute panels (OSR, PubFig, Shoes),
//!   with a no-manifold variant (isotropic Gaussian clusters, the "PubFig effect").
//! * [`class_pairs`] (§4.1, datasets 4–8): `l` random pairs per unordered class pair, oriented
//!   by the class order, and `l` within-class equality pairs per class; `exclude` keeps
//!   validation draws disjoint from training ones.
//! * [`training_points`] and [`attribute_pairs`] (§4.1, datasets 1–3): a few points per
//!   category and all pairwise relations among them for one attribute.
//!
//! Choices (all \[OURS\]; the spec fixes only the broad shape):
//!
//! * S-CLASS: intrinsic `t` of class `c` is `N((c + ½)/C, (width/C)²)` clipped to `[0, 1]`
//!   (`width` 0.25: neighbouring class centres are 4 standard deviations apart), `s ~ U[0, 1]`;
//!   the roll is `(θ cos θ, H s, θ sin θ)`, `θ = 1.5π(1 + 2t)`, `H = 21` (successive turns are
//!   `2π` apart in radius), lifted by the first three columns of a random orthogonal `m × m`
//!   matrix, plus isotropic Gaussian noise (`noise` 0.05 per coordinate: about 0.7 in norm at
//!   `m = 100`, far below the gap between turns, so kNN graphs are not short-circuited). Class
//!   of point `i` is `i mod C`. Truth: class `c` has rank `C − 1 − c` (smooth order, smaller
//!   label ranks higher as for MNIST), or `C − 1 − π(c)` for a random permutation `π`
//!   (arbitrary order).
//! * S-ATTR (manifold): latent `z ∈ R²`, category centres `U[0, 1]²`, `z ~ N(centre, spread²)`
//!   (`spread` 0.08), embedded by random Fourier features
//!   `x_a = √(2/m) cos(ω_aᵀ z + β_a)`, `ω_a ~ N(0, (2π·frequency)² I)` (`frequency` 1),
//!   `β_a ~ U[0, 2π)`: a smooth 2-D sheet in `R^m` with `‖x‖ ≈ 1`; plus noise (0.005 per
//!   coordinate). No manifold: `x = μ_c + N(0, 1/m I)`, `μ_c ~ N(0, 4/m I)`. Category of point
//!   `i` is `i mod C`. Strengths: per attribute, each category draws a level in `1..=levels`
//!   (5) uniformly, redrawn until at least two levels differ; a point's value is its
//!   category's level.

use super::solver::Pairs;
use crate::AlgoError;
use crate::givens::sampling::{normal, random_orthogonal};
use dyad_core::{Rng, seeded};
use ndarray::Array2;
use rand::Rng as _;
use rand::seq::SliceRandom;
use std::collections::HashSet;

/// How S-CLASS ranks its classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassOrder {
    /// Along the manifold coordinate `t`.
    Smooth,
    /// A random permutation of the classes.
    Arbitrary,
}

/// Parameters of S-CLASS.
#[derive(Debug, Clone, PartialEq)]
pub struct SClassSpec {
    pub n: usize,
    pub classes: usize,
    pub m: usize,
    pub noise: f64,
    pub width: f64,
    pub height: f64,
    pub order: ClassOrder,
}

impl Default for SClassSpec {
    /// The experiments' size (n = 5,000; CI uses 1,000), 10 classes, `m = 100`.
    fn default() -> Self {
        Self {
            n: 5000,
            classes: 10,
            m: 100,
            noise: 0.05,
            width: 0.25,
            height: 21.0,
            order: ClassOrder::Smooth,
        }
    }
}

/// An S-CLASS draw.
#[derive(Debug, Clone, PartialEq)]
pub struct SClass {
    /// `n × m` features.
    pub x: Array2<f64>,
    /// Class of each point.
    pub class: Vec<u32>,
    /// Rank of each class (higher ranks higher).
    pub class_rank: Vec<f64>,
    /// Ground-truth rank of each point (its class's).
    pub rank: Vec<f64>,
    /// Intrinsic coordinates `(t, s)` of each point.
    pub t: Vec<f64>,
    pub s: Vec<f64>,
}

/// Draw S-CLASS (module docs).
pub fn s_class(spec: &SClassSpec, seed: u64) -> Result<SClass, AlgoError> {
    let (n, c, m) = (spec.n, spec.classes, spec.m);
    if c < 2 || n < c || m < 3 {
        return Err(AlgoError::Param(format!(
            "S-CLASS needs classes >= 2, n >= classes and m >= 3 (got n = {n}, classes = {c}, \
             m = {m})"
        )));
    }
    let mut rng = seeded(seed);
    let lift = random_orthogonal(m, &mut rng);
    let class: Vec<u32> = (0..n).map(|i| (i % c) as u32).collect();
    let mut t = Vec::with_capacity(n);
    let mut s = Vec::with_capacity(n);
    let mut x = Array2::<f64>::zeros((n, m));
    for (i, &ci) in class.iter().enumerate() {
        let centre = (ci as f64 + 0.5) / c as f64;
        let ti = (centre + spec.width / c as f64 * normal(&mut rng)).clamp(0.0, 1.0);
        let si: f64 = rng.random();
        let theta = 1.5 * std::f64::consts::PI * (1.0 + 2.0 * ti);
        let p3 = [theta * theta.cos(), spec.height * si, theta * theta.sin()];
        for (a, v) in x.row_mut(i).iter_mut().enumerate() {
            *v = (0..3).map(|d| lift[[a, d]] * p3[d]).sum::<f64>() + spec.noise * normal(&mut rng);
        }
        t.push(ti);
        s.push(si);
    }
    let mut perm: Vec<usize> = (0..c).collect();
    if spec.order == ClassOrder::Arbitrary {
        perm.shuffle(&mut rng);
    }
    let class_rank: Vec<f64> = perm.iter().map(|&q| (c - 1 - q) as f64).collect();
    let rank = class.iter().map(|&k| class_rank[k as usize]).collect();
    Ok(SClass {
        x,
        class,
        class_rank,
        rank,
        t,
        s,
    })
}

/// Parameters of S-ATTR.
#[derive(Debug, Clone, PartialEq)]
pub struct SAttrSpec {
    pub n: usize,
    pub categories: usize,
    pub attributes: usize,
    pub m: usize,
    pub levels: u32,
    /// Points on a 2-D manifold (true) or isotropic Gaussian clusters (false).
    pub manifold: bool,
    pub spread: f64,
    pub frequency: f64,
    pub noise: f64,
}

impl SAttrSpec {
    /// OSR-like: 8 categories, 6 attributes, n = 2,688, m = 512.
    pub fn osr() -> Self {
        Self {
            n: 2688,
            categories: 8,
            attributes: 6,
            m: 512,
            levels: 5,
            manifold: true,
            spread: 0.08,
            frequency: 1.0,
            noise: 0.005,
        }
    }

    /// PubFig-like: 8 categories, 11 attributes, n = 772.
    pub fn pubfig() -> Self {
        Self {
            n: 772,
            attributes: 11,
            ..Self::osr()
        }
    }

    /// Shoes-like: 10 categories, 10 attributes, n reduced to 5,000.
    pub fn shoes() -> Self {
        Self {
            n: 5000,
            categories: 10,
            attributes: 10,
            ..Self::osr()
        }
    }
}

/// An S-ATTR draw.
#[derive(Debug, Clone, PartialEq)]
pub struct SAttr {
    /// `n × m` features.
    pub x: Array2<f64>,
    /// Category of each point.
    pub category: Vec<u32>,
    /// `C × A`: the level of each category for each attribute (1..=levels; ties allowed).
    pub strengths: Array2<f64>,
    /// `n × A`: each point's attribute values (its category's levels).
    pub values: Array2<f64>,
}

/// Draw S-ATTR (module docs).
pub fn s_attr(spec: &SAttrSpec, seed: u64) -> Result<SAttr, AlgoError> {
    let (n, c, a, m) = (spec.n, spec.categories, spec.attributes, spec.m);
    if c < 2 || n < c || a == 0 || m == 0 || spec.levels < 2 {
        return Err(AlgoError::Param(format!(
            "S-ATTR needs categories >= 2, n >= categories, attributes >= 1, m >= 1 and levels \
             >= 2 (got n = {n}, categories = {c}, attributes = {a}, m = {m}, levels = {})",
            spec.levels
        )));
    }
    let mut rng = seeded(seed);
    let category: Vec<u32> = (0..n).map(|i| (i % c) as u32).collect();
    let mut x = Array2::<f64>::zeros((n, m));
    if spec.manifold {
        let centres: Vec<[f64; 2]> = (0..c).map(|_| [rng.random(), rng.random()]).collect();
        let w = 2.0 * std::f64::consts::PI * spec.frequency;
        let omega: Vec<[f64; 2]> = (0..m)
            .map(|_| [w * normal(&mut rng), w * normal(&mut rng)])
            .collect();
        let beta: Vec<f64> = (0..m)
            .map(|_| rng.random_range(0.0..2.0 * std::f64::consts::PI))
            .collect();
        let scale = (2.0 / m as f64).sqrt();
        for i in 0..n {
            let ctr = centres[category[i] as usize];
            let z = [
                ctr[0] + spec.spread * normal(&mut rng),
                ctr[1] + spec.spread * normal(&mut rng),
            ];
            for q in 0..m {
                let arg = omega[q][0] * z[0] + omega[q][1] * z[1] + beta[q];
                x[[i, q]] = scale * arg.cos() + spec.noise * normal(&mut rng);
            }
        }
    } else {
        let sd_mu = (4.0 / m as f64).sqrt();
        let sd = (1.0 / m as f64).sqrt();
        let mus: Vec<Vec<f64>> = (0..c)
            .map(|_| (0..m).map(|_| sd_mu * normal(&mut rng)).collect())
            .collect();
        for i in 0..n {
            let mu = &mus[category[i] as usize];
            for q in 0..m {
                x[[i, q]] = mu[q] + sd * normal(&mut rng);
            }
        }
    }
    let mut strengths = Array2::<f64>::zeros((c, a));
    for att in 0..a {
        loop {
            for cat in 0..c {
                strengths[[cat, att]] = rng.random_range(1..=spec.levels) as f64;
            }
            let col = strengths.column(att);
            if col.iter().any(|&v| v != col[0]) {
                break;
            }
        }
    }
    let values = Array2::from_shape_fn((n, a), |(i, att)| strengths[[category[i] as usize, att]]);
    Ok(SAttr {
        x,
        category,
        strengths,
        values,
    })
}

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
            return Err(AlgoError::Param(format!(
                "{what}: {l} pairs requested but only {available} exist"
            )));
        }
        let mut out = Vec::with_capacity(l);
        let mut attempts = 0usize;
        while out.len() < l {
            attempts += 1;
            if attempts > 1000 + 100 * l {
                return Err(AlgoError::Param(format!(
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
            return Err(AlgoError::Param(format!(
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
    use super::super::graph::knn;
    use super::*;

    #[test]
    fn class_pairs_follow_the_protocol() {
        let spec = SClassSpec {
            n: 400,
            m: 10,
            ..Default::default()
        };
        let d = s_class(&spec, 3).unwrap();
        let mut rng = seeded(1);
        let l = 3;
        let train = class_pairs(&d.class, &d.rank, l, &HashSet::new(), &mut rng).unwrap();
        assert_eq!(train.above.len(), l * 10 * 9 / 2);
        assert_eq!(train.equal.len(), l * 10);
        for &(i, j) in &train.above {
            assert!(d.rank[i] > d.rank[j], "oriented by the truth");
        }
        for &(i, j) in &train.equal {
            assert!(i != j && d.class[i] == d.class[j]);
        }
        // Validation draws avoid the training pairs.
        let used: HashSet<(usize, usize)> =
            train.iter().map(|(i, j)| (i.min(j), i.max(j))).collect();
        let val = class_pairs(&d.class, &d.rank, l, &used, &mut rng).unwrap();
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
    fn s_class_is_seeded_and_its_knn_graph_is_not_short_circuited() {
        let spec = SClassSpec {
            n: 1000,
            ..Default::default()
        };
        let a = s_class(&spec, 7).unwrap();
        assert_eq!(a, s_class(&spec, 7).unwrap());
        assert_ne!(a.x, s_class(&spec, 8).unwrap().x);
        assert_eq!(a.x.dim(), (1000, 100));
        // Class 0 ranks highest in the smooth order; an arbitrary order permutes the ranks.
        assert_eq!(a.class_rank[0], 9.0);
        let arb = s_class(
            &SClassSpec {
                order: ClassOrder::Arbitrary,
                ..spec.clone()
            },
            7,
        )
        .unwrap();
        let mut r = arb.class_rank.clone();
        r.sort_by(f64::total_cmp);
        assert_eq!(r, (0..10).map(|v| v as f64).collect::<Vec<_>>());
        // Neighbours lie on the same turn of the roll: |Δθ| well below a full turn.
        let g = knn(a.x.view(), 8, 2).unwrap();
        let theta = |t: f64| 1.5 * std::f64::consts::PI * (1.0 + 2.0 * t);
        for i in 0..1000 {
            for &j in g.neighbours(i) {
                let dt = (theta(a.t[i]) - theta(a.t[j as usize])).abs();
                assert!(dt < std::f64::consts::PI, "point {i} links across turns");
            }
        }
    }

    #[test]
    fn s_attr_shapes_levels_and_training_pairs() {
        let spec = SAttrSpec {
            n: 400,
            m: 64,
            ..SAttrSpec::osr()
        };
        for manifold in [true, false] {
            let d = s_attr(
                &SAttrSpec {
                    manifold,
                    ..spec.clone()
                },
                5,
            )
            .unwrap();
            assert_eq!(d.x.dim(), (400, 64));
            assert_eq!(d.strengths.dim(), (8, 6));
            assert!(d.strengths.iter().all(|&v| (1.0..=5.0).contains(&v)));
            for att in 0..6 {
                let col = d.strengths.column(att);
                assert!(col.iter().any(|&v| v != col[0]));
            }
            assert_eq!(d.values[[13, 2]], d.strengths[[d.category[13] as usize, 2]]);
            let mut rng = seeded(2);
            let pts = training_points(&d.category, 5, &mut rng).unwrap();
            assert_eq!(pts.len(), 40);
            let vals = d.values.column(0).to_vec();
            let p = attribute_pairs(&pts, &vals);
            assert_eq!(p.len(), 40 * 39 / 2);
            assert!(p.above.iter().all(|&(i, j)| vals[i] > vals[j]));
            assert!(p.equal.iter().all(|&(i, j)| vals[i] == vals[j]));
            assert!(p.equal.len() >= 8 * 10, "within-category pairs are equal");
        }
        assert_eq!(s_attr(&spec, 1).unwrap(), s_attr(&spec, 1).unwrap());
    }
}
