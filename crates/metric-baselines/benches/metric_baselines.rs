//! The metric-learning baselines' unit of work on Caltech-like data (d = 1,000, L2-normalised
//! non-negative sparse rows with class structure):
//!
//! * one MCML projected-gradient iteration (line search included) at n = 400 (the solver
//!   works in the `n - 1 = 399`-dimensional span of the data) and n = 2,000 (full `d`), each
//!   from the state after a few warm-up iterations;
//! * the full-dimensional MCML objective and gradient `X^T L X` at n = 400, d = 1,000;
//! * one LEGO update (`A z`, then the `O(d^2)` rank-one step) at d = 1,000 with pair
//!   differences of rows with 35, 100 and 300 non-zeros. The matrix is written in full before
//!   timing.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_core::{SparseVec, seeded};
use dyad_kernels::fixtures::sparse_classes;
use dyad_metric_baselines::lego::lego_update;
use dyad_metric_baselines::mcml::{McmlConfig, McmlSolver, objective_gradient};
use dyad_metric_baselines::metric::Mahalanobis;
use ndarray::Array2;
use std::hint::black_box;

fn mcml(c: &mut Criterion) {
    let mut group = c.benchmark_group("mcml");
    group.sample_size(10);
    for n in [400usize, 2000] {
        let set = sparse_classes(n, 1000, 20, 100, &mut seeded(1));
        let mut solver = McmlSolver::new(&set, &McmlConfig::default()).expect("solver");
        for _ in 0..3 {
            solver.iterate().expect("iteration");
        }
        group.bench_function(
            BenchmarkId::new("iteration", format!("n={n},d=1000")),
            |b| {
                b.iter_batched(
                    || solver.clone(),
                    |mut s| black_box(s.iterate().expect("iteration")),
                    BatchSize::LargeInput,
                )
            },
        );
    }
    let set = sparse_classes(400, 1000, 20, 100, &mut seeded(2));
    let mut x = Array2::<f64>::zeros((set.n(), set.dim()));
    for (i, row) in set.x.outer_iterator().enumerate() {
        for (j, &v) in row.iter() {
            x[[i, j]] = v;
        }
    }
    let a = Array2::<f64>::eye(1000);
    group.bench_function("objective_gradient/n=400,d=1000", |b| {
        b.iter(|| black_box(objective_gradient(x.view(), &set.labels, a.view()).expect("ok")))
    });
    group.finish();
}

fn lego(c: &mut Criterion) {
    let d = 1000;
    let mut group = c.benchmark_group("lego_update");
    group.throughput(Throughput::Elements(1));
    for nnz in [35usize, 100, 300] {
        let set = sparse_classes(1024, d, 20, nnz, &mut seeded(3));
        let mut model = Mahalanobis::identity(d);
        model.matrix_mut().fill(0.0);
        model.matrix_mut().diag_mut().fill(1.0);
        let mut z = SparseVec::default();
        let mut scratch = Vec::new();
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new("d=1000", format!("row_nnz={nnz}")), |b| {
            b.iter(|| {
                let (p, q) = (i % 1024, (i * 7 + 1) % 1024);
                i += 1;
                z.set_difference(set.x.outer_view(p).unwrap(), set.x.outer_view(q).unwrap());
                let y = if set.labels[p] == set.labels[q] {
                    0.2
                } else {
                    1.5
                };
                black_box(lego_update(&mut model, &z, y, 0.08, &mut scratch).expect("PD"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, mcml, lego);
criterion_main!(benches);
