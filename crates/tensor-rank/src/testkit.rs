//! Toy problems of the family's tests.

use super::synthetic::class_pairs;
use super::{PairInput, PairModel, PairRanker};
use dyad_core::{Schedule, seeded};
use dyad_kernels::fixtures::Models;
use ndarray::Array2;
use rand::Rng as _;

/// A planted class order: `classes` clusters along the first coordinate (class `c` at `3c`,
/// spread ±0.3), Gaussian-free uniform noise of half-width 0.5 in the other `m − 1`
/// coordinates; class `c` ranks above class `c − 1`. Labels: 2 pairs per class pair and per
/// class (spec §4.1).
pub struct Planted {
    pub input: PairInput,
    pub rank: Vec<f64>,
    pub class: Vec<u32>,
}

pub fn planted_classes(n: usize, m: usize, classes: usize, seed: u64) -> Planted {
    let mut rng = seeded(seed);
    let class: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let x = Array2::from_shape_fn((n, m), |(i, a)| {
        if a == 0 {
            3.0 * class[i] as f64 + rng.random_range(-0.3..0.3)
        } else {
            rng.random_range(-0.5..0.5)
        }
    });
    let rank: Vec<f64> = class.iter().map(|&c| c as f64).collect();
    let pairs = class_pairs(&class, &rank, 2, &Default::default(), &mut rng)
        .expect("every class has two points");
    Planted {
        input: PairInput::new(x, pairs),
        rank,
        class,
    }
}

/// The last model a ranker reports when run to convergence.
pub fn final_model(r: &dyn PairRanker, input: &PairInput, seed: u64) -> PairModel {
    let mut obs = Models::<PairModel>::default();
    r.fit(
        input,
        &Schedule::last_only(1_000_000),
        &mut seeded(seed),
        &mut obs,
    )
    .expect("fit");
    let (at, m) = obs.seen.pop().expect("a report");
    assert!(at.last);
    m
}
