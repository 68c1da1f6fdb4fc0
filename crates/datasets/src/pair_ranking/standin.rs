//! Seeded stand-ins for the tensor-ranking paper's data (spec §9), pure functions of their
//! parameters and a seed (moved from `dyad-tensor-rank`'s `synthetic`, which keeps
//! the §4.1 label protocol):
//!
//! * [`SClassSpec`] (§9.1, S-CLASS): ordered classes on a Swiss roll lifted to `R^m`; stand-in
//!   for the class-order panels (ETH-80, SVHN, CIFAR-10, DTD; MNIST without the real files).
//! * [`SAttrSpec`] (§9.2, S-ATTR): categories on a 2-D manifold in `R^m` with per-attribute
//!   random weak orders of the categories; stand-in for the attribute panels (OSR, PubFig,
//!   Shoes), with a no-manifold variant (isotropic Gaussian clusters, the "PubFig effect").
//!
//! Choices (all \[OURS\]; the spec fixes only the broad shape):
//!
//! * S-CLASS: intrinsic `t` of class `c` is `N((c + ½)/C, (width/C)²)` clipped to `[0, 1]`
//!   (`width` 0.25: neighbouring class centres are 4 standard deviations apart), `s ~ U[0, 1]`;
//!   the roll is `(θ cos θ, H s, θ sin θ)`, `θ = 1.5π(1 + 2t)`, `H = 21` (successive turns are
//!   `2π` apart in radius), lifted by a random orthonormal `m × 3` frame (Gram–Schmidt of
//!   three Gaussian vectors), plus isotropic Gaussian noise (`noise` 0.05 per coordinate:
//!   about 0.5 in norm at `m = 100`, far below the gap between turns, so kNN graphs are not
//!   short-circuited; tested). Class of point `i` is `i mod C`. Truth: class `c` has rank
//!   `C − 1 − c` (smooth order, smaller label ranks higher as for MNIST), or `C − 1 − π(c)`
//!   for a random permutation `π` (arbitrary order, as CIFAR / ETH-80 / DTD's class orders are
//!   semantically arbitrary).
//! * S-ATTR (manifold): latent `z ∈ R²`, category centres `U[0, 1]²`, `z ~ N(centre, spread²)`
//!   (`spread` 0.08), embedded by random Fourier features
//!   `x_a = √(2/m) cos(ω_aᵀ z + β_a)`, `ω_a ~ N(0, (2π·frequency)² I)` (`frequency` 1),
//!   `β_a ~ U[0, 2π)`: a smooth 2-D sheet in `R^m` with `‖x‖ ≈ 1`; plus noise (0.005 per
//!   coordinate). No manifold: `x = μ_c + N(0, 1/m I)`, `μ_c ~ N(0, 4/m I)`. Category of point
//!   `i` is `i mod C`. Strengths: per attribute, each category draws a level in `1..=levels`
//!   (5) uniformly, redrawn until at least two levels differ; a point's value is its
//!   category's level.

use super::{Order, OrderedSet};
use crate::DataError;
use dyad_core::{Rng, seeded};
use ndarray::Array2;
use rand::Rng as _;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

fn normal(rng: &mut Rng) -> f64 {
    StandardNormal.sample(rng)
}

/// How S-CLASS ranks its classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClassOrder {
    /// Along the manifold coordinate `t`.
    #[default]
    Smooth,
    /// A random permutation of the classes.
    Arbitrary,
}

/// Parameters of S-CLASS (the provider `s-class`'s parameters, with `seed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SClassSpec {
    #[serde(default = "sc_n")]
    pub n: usize,
    #[serde(default = "sc_classes")]
    pub classes: usize,
    #[serde(default = "sc_m")]
    pub m: usize,
    #[serde(default = "sc_noise")]
    pub noise: f64,
    #[serde(default = "sc_width")]
    pub width: f64,
    #[serde(default = "sc_height")]
    pub height: f64,
    #[serde(default)]
    pub order: ClassOrder,
    #[serde(default = "sc_seed")]
    pub seed: u64,
}

fn sc_n() -> usize {
    5000
}
fn sc_classes() -> usize {
    10
}
fn sc_m() -> usize {
    100
}
fn sc_noise() -> f64 {
    0.05
}
fn sc_width() -> f64 {
    0.25
}
fn sc_height() -> f64 {
    21.0
}
fn sc_seed() -> u64 {
    1
}

impl Default for SClassSpec {
    /// The experiments' size (n = 5,000; CI uses 1,000), 10 classes, `m = 100`.
    fn default() -> Self {
        Self {
            n: sc_n(),
            classes: sc_classes(),
            m: sc_m(),
            noise: sc_noise(),
            width: sc_width(),
            height: sc_height(),
            order: ClassOrder::Smooth,
            seed: sc_seed(),
        }
    }
}

/// An S-CLASS draw: the ordered set and the intrinsic coordinates `(t, s)` of each point.
#[derive(Debug, Clone, PartialEq)]
pub struct SClass {
    pub set: OrderedSet,
    pub t: Vec<f64>,
    pub s: Vec<f64>,
}

impl SClassSpec {
    /// Checked sizes.
    pub fn check(&self) -> Result<(), DataError> {
        let (n, c, m) = (self.n, self.classes, self.m);
        if c < 2 || n < c || m < 3 {
            return Err(DataError::Param(format!(
                "s-class: needs classes >= 2, n >= classes and m >= 3 (got n = {n}, classes = \
                 {c}, m = {m})"
            )));
        }
        let ok = self.noise >= 0.0
            && self.width > 0.0
            && self.height > 0.0
            && (self.noise + self.width + self.height).is_finite();
        if !ok {
            return Err(DataError::Param(
                "s-class: noise >= 0, width > 0 and height > 0 (finite)".into(),
            ));
        }
        Ok(())
    }

    /// Draw S-CLASS (module docs).
    pub fn generate(&self) -> Result<SClass, DataError> {
        self.check()?;
        let (n, c, m) = (self.n, self.classes, self.m);
        let mut rng = seeded(self.seed);
        let frame = orthonormal_frame(m, 3, &mut rng);
        let class: Vec<u32> = (0..n).map(|i| (i % c) as u32).collect();
        let mut t = Vec::with_capacity(n);
        let mut s = Vec::with_capacity(n);
        let mut x = Array2::<f64>::zeros((n, m));
        for (i, &ci) in class.iter().enumerate() {
            let centre = (ci as f64 + 0.5) / c as f64;
            let ti = (centre + self.width / c as f64 * normal(&mut rng)).clamp(0.0, 1.0);
            let si: f64 = rng.random();
            let theta = 1.5 * std::f64::consts::PI * (1.0 + 2.0 * ti);
            let p3 = [theta * theta.cos(), self.height * si, theta * theta.sin()];
            for (a, v) in x.row_mut(i).iter_mut().enumerate() {
                *v = (0..3).map(|d| frame[[a, d]] * p3[d]).sum::<f64>()
                    + self.noise * normal(&mut rng);
            }
            t.push(ti);
            s.push(si);
        }
        let mut perm: Vec<usize> = (0..c).collect();
        if self.order == ClassOrder::Arbitrary {
            perm.shuffle(&mut rng);
        }
        let rank: Vec<f64> = perm.iter().map(|&q| (c - 1 - q) as f64).collect();
        Ok(SClass {
            set: OrderedSet {
                x,
                group: class,
                group_names: (0..c).map(|k| format!("class{k}")).collect(),
                order: Order::Classes { rank },
            },
            t,
            s,
        })
    }
}

/// `k` orthonormal columns in `R^m` (Gram–Schmidt, twice, of Gaussian vectors).
fn orthonormal_frame(m: usize, k: usize, rng: &mut Rng) -> Array2<f64> {
    let mut q = Array2::<f64>::zeros((m, k));
    for j in 0..k {
        let mut v: Vec<f64> = (0..m).map(|_| normal(rng)).collect();
        for _ in 0..2 {
            for p in 0..j {
                let d: f64 = (0..m).map(|a| q[[a, p]] * v[a]).sum();
                for (a, x) in v.iter_mut().enumerate() {
                    *x -= d * q[[a, p]];
                }
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (a, x) in v.iter().enumerate() {
            q[[a, j]] = x / norm;
        }
    }
    q
}

/// Parameters of S-ATTR (the provider `s-attr`'s parameters, with `seed`). Defaults are the
/// OSR-like size; [`SAttrSpec::pubfig`] and [`SAttrSpec::shoes`] the other panels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SAttrSpec {
    #[serde(default = "sa_n")]
    pub n: usize,
    #[serde(default = "sa_categories")]
    pub categories: usize,
    #[serde(default = "sa_attributes")]
    pub attributes: usize,
    #[serde(default = "sa_m")]
    pub m: usize,
    #[serde(default = "sa_levels")]
    pub levels: u32,
    /// Points on a 2-D manifold (true) or isotropic Gaussian clusters (false).
    #[serde(default = "sa_manifold")]
    pub manifold: bool,
    #[serde(default = "sa_spread")]
    pub spread: f64,
    #[serde(default = "sa_frequency")]
    pub frequency: f64,
    #[serde(default = "sa_noise")]
    pub noise: f64,
    #[serde(default = "sc_seed")]
    pub seed: u64,
}

fn sa_n() -> usize {
    2688
}
fn sa_categories() -> usize {
    8
}
fn sa_attributes() -> usize {
    6
}
fn sa_m() -> usize {
    512
}
fn sa_levels() -> u32 {
    5
}
fn sa_manifold() -> bool {
    true
}
fn sa_spread() -> f64 {
    0.08
}
fn sa_frequency() -> f64 {
    1.0
}
fn sa_noise() -> f64 {
    0.005
}

impl Default for SAttrSpec {
    fn default() -> Self {
        Self::osr()
    }
}

impl SAttrSpec {
    /// OSR-like: 8 categories, 6 attributes, n = 2,688, m = 512.
    pub fn osr() -> Self {
        Self {
            n: sa_n(),
            categories: sa_categories(),
            attributes: sa_attributes(),
            m: sa_m(),
            levels: sa_levels(),
            manifold: true,
            spread: sa_spread(),
            frequency: sa_frequency(),
            noise: sa_noise(),
            seed: sc_seed(),
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

    pub fn check(&self) -> Result<(), DataError> {
        let (n, c, a, m) = (self.n, self.categories, self.attributes, self.m);
        if c < 2 || n < c || a == 0 || m == 0 || self.levels < 2 {
            return Err(DataError::Param(format!(
                "s-attr: needs categories >= 2, n >= categories, attributes >= 1, m >= 1 and \
                 levels >= 2 (got n = {n}, categories = {c}, attributes = {a}, m = {m}, levels \
                 = {})",
                self.levels
            )));
        }
        let ok = self.spread >= 0.0
            && self.frequency > 0.0
            && self.noise >= 0.0
            && (self.spread + self.frequency + self.noise).is_finite();
        if !ok {
            return Err(DataError::Param(
                "s-attr: spread >= 0, frequency > 0 and noise >= 0 (finite)".into(),
            ));
        }
        Ok(())
    }

    /// Draw S-ATTR (module docs).
    pub fn generate(&self) -> Result<OrderedSet, DataError> {
        self.check()?;
        let (n, c, a, m) = (self.n, self.categories, self.attributes, self.m);
        let mut rng = seeded(self.seed);
        let category: Vec<u32> = (0..n).map(|i| (i % c) as u32).collect();
        let mut x = Array2::<f64>::zeros((n, m));
        if self.manifold {
            let centres: Vec<[f64; 2]> = (0..c).map(|_| [rng.random(), rng.random()]).collect();
            let w = 2.0 * std::f64::consts::PI * self.frequency;
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
                    ctr[0] + self.spread * normal(&mut rng),
                    ctr[1] + self.spread * normal(&mut rng),
                ];
                for q in 0..m {
                    let arg = omega[q][0] * z[0] + omega[q][1] * z[1] + beta[q];
                    x[[i, q]] = scale * arg.cos() + self.noise * normal(&mut rng);
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
                    strengths[[cat, att]] = rng.random_range(1..=self.levels) as f64;
                }
                let col = strengths.column(att);
                if col.iter().any(|&v| v != col[0]) {
                    break;
                }
            }
        }
        Ok(OrderedSet {
            x,
            group: category,
            group_names: (0..c).map(|k| format!("category{k}")).collect(),
            order: Order::Attributes {
                strengths,
                names: (0..a).map(|k| format!("attribute{}", k + 1)).collect(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_class_is_seeded_ordered_and_its_neighbours_stay_on_their_turn() {
        let spec = SClassSpec {
            n: 1000,
            seed: 7,
            ..Default::default()
        };
        let a = spec.generate().unwrap();
        assert_eq!(a, spec.generate().unwrap());
        let other = SClassSpec {
            seed: 8,
            ..spec.clone()
        }
        .generate()
        .unwrap();
        assert_ne!(a.set.x, other.set.x);
        assert_eq!(a.set.x.dim(), (1000, 100));
        a.set.check().unwrap();
        // Class 0 ranks highest in the smooth order; an arbitrary order permutes the ranks.
        let Order::Classes { rank } = &a.set.order else {
            panic!("class order")
        };
        assert_eq!(rank[0], 9.0);
        let arb = SClassSpec {
            order: ClassOrder::Arbitrary,
            ..spec.clone()
        }
        .generate()
        .unwrap();
        let Order::Classes { rank } = &arb.set.order else {
            panic!("class order")
        };
        let mut r = rank.clone();
        r.sort_by(f64::total_cmp);
        assert_eq!(r, (0..10).map(|v| v as f64).collect::<Vec<_>>());
        // The 8 nearest neighbours (brute force) lie on the same turn of the roll.
        let x = &a.set.x;
        let theta = |t: f64| 1.5 * std::f64::consts::PI * (1.0 + 2.0 * t);
        for i in (0..1000).step_by(7) {
            let mut d: Vec<(f64, usize)> = (0..1000)
                .filter(|&j| j != i)
                .map(|j| {
                    let dd: f64 = x
                        .row(i)
                        .iter()
                        .zip(x.row(j))
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum();
                    (dd, j)
                })
                .collect();
            d.sort_by(|a, b| a.0.total_cmp(&b.0));
            for &(_, j) in &d[..8] {
                let dt = (theta(a.t[i]) - theta(a.t[j])).abs();
                assert!(dt < std::f64::consts::PI, "point {i} links across turns");
            }
        }
        assert!(SClassSpec { classes: 1, ..spec }.generate().is_err());
    }

    #[test]
    fn the_lift_is_orthonormal() {
        let q = orthonormal_frame(20, 3, &mut seeded(3));
        let g = q.t().dot(&q);
        for a in 0..3 {
            for b in 0..3 {
                let want = if a == b { 1.0 } else { 0.0 };
                assert!((g[[a, b]] - want).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn s_attr_shapes_and_levels() {
        let spec = SAttrSpec {
            n: 400,
            m: 64,
            seed: 5,
            ..SAttrSpec::osr()
        };
        for manifold in [true, false] {
            let d = SAttrSpec {
                manifold,
                ..spec.clone()
            }
            .generate()
            .unwrap();
            d.check().unwrap();
            assert_eq!(d.x.dim(), (400, 64));
            assert_eq!(d.n_orders(), 6);
            let Order::Attributes { strengths, .. } = &d.order else {
                panic!("attributes")
            };
            assert_eq!(strengths.dim(), (8, 6));
            assert!(strengths.iter().all(|&v| (1.0..=5.0).contains(&v)));
            for att in 0..6 {
                let col = strengths.column(att);
                assert!(col.iter().any(|&v| v != col[0]));
            }
            assert_eq!(d.truth(2)[13], strengths[[d.group[13] as usize, 2]]);
        }
        assert_eq!(spec.generate().unwrap(), spec.generate().unwrap());
        assert_eq!(SAttrSpec::pubfig().n, 772);
        assert_eq!(SAttrSpec::shoes().categories, 10);
    }
}
