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

/// Fits `make(λ)` along `lambdas` twice: every candidate from its cold start, and each from
/// the previous one's final model (`PairInput::start`). Checks, per λ: a warm fit's first
/// report is its start (not the cold start), both reach the same optimum (objectives within
/// `rel` of each other, the same τ against `rank` to 1e-9), and the warm path takes fewer
/// Newton iterations in all. Returns (cold, warm) iterations.
pub fn check_warm_path(
    make: &dyn Fn(f64) -> Box<dyn PairRanker>,
    input: &PairInput,
    rank: &[f64],
    lambdas: &[f64],
    rel: f64,
) -> (u64, u64) {
    use dyad_core::kendall::kendall_tau;
    use std::sync::Arc;
    let mut input = input.clone();
    let (mut cold_its, mut warm_its) = (0, 0);
    let mut previous: Option<PairModel> = None;
    for &lambda in lambdas {
        let r = make(lambda);
        assert!(r.warm_starts());
        input.start = None;
        let cold = final_model(r.as_ref(), &input, 1);
        input.start = previous.clone().map(Arc::new);
        let mut obs = Models::<PairModel>::default();
        r.fit(
            &input,
            &Schedule::new(vec![0, 1_000_000]),
            &mut seeded(1),
            &mut obs,
        )
        .expect("fit");
        let first = &obs.seen[0].1;
        let warm = &obs.seen.last().expect("a report").1;
        match &previous {
            Some(p) => {
                let off = (first.scores.iter().zip(&p.scores))
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                let scale = p.scores.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
                assert!(
                    scale > 0.0 && off <= 1e-9 * scale,
                    "the start: {off} of {scale}"
                );
            }
            None => assert!(first.scores.iter().all(|&v| v == 0.0), "the cold start"),
        }
        let gap = (cold.objective - warm.objective).abs() / cold.objective;
        assert!(
            gap <= rel,
            "lambda {lambda}: cold E {} vs warm E {} ({gap:.1e})",
            cold.objective,
            warm.objective
        );
        let (tc, tw) = (
            kendall_tau(cold.scores.as_slice().unwrap(), rank),
            kendall_tau(warm.scores.as_slice().unwrap(), rank),
        );
        assert!((tc - tw).abs() < 1e-9, "lambda {lambda}: tau {tc} vs {tw}");
        cold_its += cold.iterations;
        warm_its += warm.iterations;
        previous = Some(warm.clone());
    }
    assert!(warm_its < cold_its, "warm {warm_its} vs cold {cold_its}");
    (cold_its, warm_its)
}
