//! FuncISH's semantic phase on the bag-of-words stand-in ([`bow_categories`]: 4 levels of
//! K = 500 words plus 4 zero counts, D = 2,004, the paper's layout; integer counts).
//!
//! * `logreg_fit`: one L2-regularised LR fit (TRON, LIBLINEAR's ε = 0.01, bias on) from zero
//!   at C = 1 on n = 4,000 images (64 MB of rows: out of cache, as the paper's 13K-row
//!   training sets are), and the warm-started 6-value C path of one inner fold.
//! * `logreg_batch`: one paper-like training set's fits, 64 categories × the warm-started
//!   6-value C path, in the row space (n = 1,000 images of D + 1 = 2,005 weights: `Z = UΣ`,
//!   1,000 × 1,000, 8 MB, the design `nested_cv` fits on at the paper's size), each category
//!   alone (`fit_logreg`) or 4 at a time in lockstep (`fit_logreg_batch`, one pass over the
//!   rows serving the 4; the nested CV's grouping). The two give the same bits (checked
//!   before timing).
//! * `nested_cv`: the whole nested 5 × 5 CV (6 C values, 1,000 permutations) on n = 600
//!   images and 4 categories, raw counts: the unit the paper profile repeats (2,081
//!   categories on 16K images).
//!
//! Run on whatever threads rayon has (nested_cv) / one thread (fits).
//!
//! Measured once (2 shared cores, load ~4, so noisy): cold fit at C = 1 ~200 ms (8 Newton
//! iterations, 15 CG steps: 24 passes of 64 MB, ~9 ms each, memory-bound; 376 ms before the
//! function and gradient passes were fused); warm 6-C path ~260–360 ms; nested CV ~3.2 s for
//! the 4 categories (620 fits). After the blocked, width-specific pass (`logreg.rs`, measured
//! once against the previous solver, alternating, load ~3.5): cold fit 184–192 ms (was
//! 228–243), warm path 261 ms (was 314–318), nested CV 1.65 s (was 2.49). `logreg_batch`:
//! 1.78 s alone, 1.50 s four at a time (0.84×; 1,228 CG steps either way).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_funcish::classify::{
    BatchFit, CategoryData, FitReport, LogRegConfig, NestedCvConfig, Workspace, fit_logreg,
    fit_logreg_batch, nested_cv,
};
use dyad_kernels::fixtures::bow_categories;
use dyad_kernels::linalg::thin_svd;
use ndarray::{Array2, Axis, concatenate};
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

/// The 64 categories' C paths, each alone: (final coefficients, total CG steps).
fn paths_alone(z: &Array2<f64>, ys: &[Vec<f64>], cfg: &LogRegConfig) -> (Vec<Vec<f64>>, usize) {
    let grid = NestedCvConfig::default().c_grid;
    let mut cg = 0;
    let ws: Vec<Vec<f64>> = ys
        .iter()
        .map(|y| {
            let mut a = vec![0.0; z.ncols()];
            let mut ws = Workspace::default();
            for &c in &grid {
                let r: FitReport = fit_logreg(z.view(), y, c, cfg, &mut a, &mut ws).unwrap();
                cg += r.cg_steps;
            }
            a
        })
        .collect();
    (ws, cg)
}

/// The same, 4 categories at a time in lockstep.
fn paths_batched(z: &Array2<f64>, ys: &[Vec<f64>], cfg: &LogRegConfig) -> (Vec<Vec<f64>>, usize) {
    let grid = NestedCvConfig::default().c_grid;
    let mut cg = 0;
    let mut out = Vec::with_capacity(ys.len());
    for chunk in ys.chunks(4) {
        let mut a = vec![vec![0.0; z.ncols()]; chunk.len()];
        let mut wss = vec![Workspace::default(); chunk.len()];
        for &c in &grid {
            let mut fits: Vec<BatchFit<'_>> = a
                .iter_mut()
                .zip(&mut wss)
                .zip(chunk)
                .map(|((w, ws), y)| BatchFit { y, c, w, ws })
                .collect();
            for r in fit_logreg_batch(z.view(), cfg, &mut fits) {
                cg += r.unwrap().cg_steps;
            }
        }
        out.extend(a);
    }
    (out, cg)
}

fn batched(c: &mut Criterion) {
    let (n, n_cat) = (1000, 64);
    let (x, positives) = bow_categories(n, 4, 500, n_cat, 30.0, 5);
    // the row space of [X, 1], as `nested_cv` builds it
    let xt = concatenate(Axis(1), &[x.view(), Array2::ones((n, 1)).view()]).unwrap();
    let (u, s, _) = thin_svd(xt.view()).unwrap();
    let mut z = u.as_standard_layout().into_owned();
    for mut row in z.rows_mut() {
        row.zip_mut_with(&s, |u, &sj| *u *= sj);
    }
    let cfg = LogRegConfig {
        bias: false,
        ..Default::default()
    };
    let ys: Vec<Vec<f64>> = positives
        .iter()
        .map(|p| {
            let mut y = vec![-1.0; n];
            for &i in p {
                y[i] = 1.0;
            }
            y
        })
        .collect();
    let (a1, cg1) = paths_alone(&z, &ys, &cfg);
    let (a2, cg2) = paths_batched(&z, &ys, &cfg);
    assert_eq!(cg1, cg2);
    for (u, v) in a1.iter().zip(&a2) {
        assert!(u.iter().zip(v).all(|(p, q)| p.to_bits() == q.to_bits()));
    }
    eprintln!(
        "logreg_batch: Z {:?}, {n_cat} categories × 6 C: {cg1} CG steps in all",
        z.dim()
    );
    let mut group = c.benchmark_group("logreg_batch");
    group.sample_size(10);
    group.throughput(Throughput::Elements((n_cat * 6) as u64));
    let id = "n=1000,r=1000,cats=64";
    group.bench_function(BenchmarkId::new("alone", id), |b| {
        b.iter(|| black_box(paths_alone(&z, &ys, &cfg)))
    });
    group.bench_function(BenchmarkId::new("batch_of_4", id), |b| {
        b.iter(|| black_box(paths_batched(&z, &ys, &cfg)))
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

criterion_group!(benches, fits, batched, nested);
criterion_main!(benches);
