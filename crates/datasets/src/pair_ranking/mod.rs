//! Data for the tensor-ranking paper (spec `manifold-tensor.md` §4, §9): points with a
//! ground-truth **order**, either of their classes (the class-order panels: ETH-80, MNIST, SVHN,
//! CIFAR-10, DTD; "digit 1 has a higher rank than 2") or of their categories per attribute (the
//! relative-attribute panels: OSR, PubFig, Shoes, where each attribute orders the categories
//! weakly, ties allowed).
//!
//! * [`OrderedSet`], kind [`ORDERED`]: dense `n × m` features, each point's group (class or
//!   category) and the [`Order`] of the groups.
//! * [`standin`]: the seeded stand-ins S-CLASS (§9.1) and S-ATTR (§9.2), moved here from
//!   `dyad-tensor-rank` so that data-set providers can generate them.
//! * [`attributes`]: readers of the real releases (Parikh & Grauman's `data.mat` for OSR and
//!   PubFig, Kovashka et al.'s for Shoes; a features + labels MAT file for the ETH-80 HOG
//!   features of Ebert et al.).
//! * [`provider`]: the providers `s-class`, `s-attr`, `relative-attributes` (real, S-ATTR
//!   when absent) and `eth80-hog` (real, S-CLASS when absent).
//!
//! Real MNIST for the class-order MNIST panel needs no provider here: the `mnist` provider's
//! labelled rows are read by the pair-ranking task with class `c` ranked `9 − c`.

pub mod attributes;
pub mod provider;
pub mod standin;

use ndarray::Array2;

/// Kind of [`OrderedSet`] data.
pub const ORDERED: &str = "ordered examples";

/// How the groups are ordered.
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    /// One order of the classes: `rank[c]` (higher ranks higher; ties allowed).
    Classes { rank: Vec<f64> },
    /// Per attribute, a weak order of the categories: `strengths[[c, a]]` (higher ranks
    /// higher), with the attributes' names.
    Attributes {
        strengths: Array2<f64>,
        names: Vec<String>,
    },
}

/// Points with an ordered grouping.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderedSet {
    /// `n × m` dense features.
    pub x: Array2<f64>,
    /// Group (class or category) of each point, `0..groups`.
    pub group: Vec<u32>,
    /// Name of each group.
    pub group_names: Vec<String>,
    pub order: Order,
}

impl OrderedSet {
    pub fn n(&self) -> usize {
        self.x.nrows()
    }

    pub fn groups(&self) -> usize {
        self.group_names.len()
    }

    /// Number of orders: 1 for class data, the attribute count otherwise.
    pub fn n_orders(&self) -> usize {
        match &self.order {
            Order::Classes { .. } => 1,
            Order::Attributes { strengths, .. } => strengths.ncols(),
        }
    }

    /// Ground-truth value of every point under order `a` (`0..n_orders()`).
    pub fn truth(&self, a: usize) -> Vec<f64> {
        match &self.order {
            Order::Classes { rank } => self.group.iter().map(|&g| rank[g as usize]).collect(),
            Order::Attributes { strengths, .. } => self
                .group
                .iter()
                .map(|&g| strengths[[g as usize, a]])
                .collect(),
        }
    }

    /// Consistent shapes, groups in range, finite features.
    pub fn check(&self) -> Result<(), String> {
        let g = self.groups();
        if self.group.len() != self.n() {
            return Err(format!(
                "{} groups for {} points",
                self.group.len(),
                self.n()
            ));
        }
        if let Some(bad) = self.group.iter().find(|&&c| c as usize >= g) {
            return Err(format!("group {bad} beyond the {g} named groups"));
        }
        let ok = match &self.order {
            Order::Classes { rank } => rank.len() == g,
            Order::Attributes { strengths, names } => {
                strengths.nrows() == g && strengths.ncols() == names.len()
            }
        };
        if !ok {
            return Err("the order does not match the groups".into());
        }
        if !self.x.iter().all(|v| v.is_finite()) {
            return Err("non-finite features".into());
        }
        Ok(())
    }
}
