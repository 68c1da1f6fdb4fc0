//! FuncISH's semantic phase on the bag-of-words stand-in ([`bow_categories`]: 4 levels of
//! K = 500 words plus 4 zero counts, D = 2,004, the paper's layout; integer counts).
//!
//! * `logreg_fit`: one L2-regularised LR fit (TRON, LIBLINEAR's ε = 0.01, bias on) from zero
//!   at C = 1 on n = 4,000 images (64 MB of rows: out of cache, as the paper's 13K-row
//!   training sets are), and the warm-started 6-value C path of one inner fold.
//! * `nested_cv`: the whole nested 5 × 5 CV (6 C values, 1,000 permutations) on n = 600
//!   images and 4 categories, raw counts: the unit the paper profile repeats (2,081
//!   categories on 16K images).
//!
//! Run on whatever threads rayon has (nested_cv) / one thread (fits).
//!
//! Measured once (2 shared cores, load ~4, so noisy): cold fit at C = 1 ~200 ms (8 Newton
//! iterations, 15 CG steps: 24 passes of 64 MB, ~9 ms each, memory-bound; 376 ms before the
//! function and gradient passes were fused); warm 6-C path ~260–360 ms; nested CV ~3.2 s for
//! the 4 categories (620 fits).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_funcish::classify::{
    CategoryData, LogRegConfig, NestedCvConfig, Workspace, fit_logreg, nested_cv,
};
use dyad_kernels::fixtures::bow_categories;
use std::hint::black_box;

fn fits(c: &mut Criterion) {
    let n = 4000;
    let (x, positives) = bow_categories(n, 4, 500, 1, 30.0, 1);
    let y: Vec<f64> = {
        let mut y = vec![-1.0; n];
        for &i in &positives[0] {
            y[i] = 1.0;
        }
        y
    };
    let cfg = LogRegConfig::default();
    let d = x.ncols();
    let mut group = c.benchmark_group("logreg_fit");
    group.sample_size(10);
    group.throughput(Throughput::Elements(1));
    let mut ws = Workspace::default();
    let mut w = vec![0.0; d + 1];
    let rep = fit_logreg(x.view(), &y, 1.0, &cfg, &mut w, &mut ws).unwrap();
    eprintln!("cold C = 1: {rep:?}");
    for &cv in &NestedCvConfig::default().c_grid {
        let mut w = vec![0.0; d + 1];
        let rep = fit_logreg(x.view(), &y, cv, &cfg, &mut w, &mut ws).unwrap();
        eprintln!(
            "cold C = {cv}: {} Newton, {} CG",
            rep.iterations, rep.cg_steps
        );
    }
    group.bench_function(BenchmarkId::new("cold_c1", "n=4000,d=2004"), |b| {
        b.iter(|| {
            let mut w = vec![0.0; d + 1];
            black_box(fit_logreg(x.view(), &y, 1.0, &cfg, &mut w, &mut ws).unwrap())
        })
    });
    let grid = NestedCvConfig::default().c_grid;
    group.throughput(Throughput::Elements(grid.len() as u64));
    group.bench_function(BenchmarkId::new("warm_c_path", "n=4000,d=2004"), |b| {
        b.iter(|| {
            let mut w = vec![0.0; d + 1];
            for &cv in &grid {
                black_box(fit_logreg(x.view(), &y, cv, &cfg, &mut w, &mut ws).unwrap());
            }
        })
    });
    group.finish();
}

fn nested(c: &mut Criterion) {
    let (x, positives) = bow_categories(600, 4, 500, 4, 30.0, 2);
    let cfg = NestedCvConfig::default();
    let data = CategoryData {
        features: x.view(),
        positives: &positives,
        genes: None,
    };
    let mut group = c.benchmark_group("nested_cv");
    group.sample_size(10);
    group.throughput(Throughput::Elements(positives.len() as u64));
    group.bench_function(BenchmarkId::new("5x5x6", "n=600,d=2004,cats=4"), |b| {
        b.iter(|| black_box(nested_cv(&data, &cfg, 3).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, fits, nested);
criterion_main!(benches);
