//! Hot steps of the Givens family, at the sizes of the paper's experiments (givens.md §8):
//!
//! * `givens_rotation`: one rotation `U ← U·G(i, j, θ)` applied in place to a `d × d`
//!   column-major matrix, d = 100 … 1000 (`6d` FLOPs);
//! * `spca_step`: one sparse-PCA coordinate step (Brent search on `h`, ≤ 10 evaluations, and the
//!   rotation when accepted) on a prostate-sized `AU` (d = 12,600, n = m = 102, Algorithm 2) and
//!   a brain-sized window (d = 20,000, m = 10, Algorithm 5), planted sparse data with noise;
//! * `tensor_step`: 1,000 coordinate steps of Algorithm 3 on the whitened K = 20 tensor, and of
//!   Algorithm 6 on K = 20 rows of N = 10,000 and 200,000 samples (throughput in steps).
//!
//! Each step draws a uniform random pair; the state keeps evolving across iterations (a step's
//! cost does not depend on the state beyond acceptance).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_core::observe::NullObserver;
use dyad_core::{Schedule, seeded};
use dyad_givens::fixtures::planted_orthogonal_tensor;
use dyad_givens::rotation::{PairSelector, Selection};
use dyad_givens::sparse_pca::{AngleSearch, RowScope, SpcaWindow};
use dyad_givens::{
    ColMatrix, EmpiricalMoments, Givens, GivensTensorConfig, MomentTensor, TensorDecomposer,
};
use dyad_kernels::fixtures::planted_sparse_pca;
use dyad_kernels::sampling::normal;
use ndarray::Array2;
use std::hint::black_box;
use std::time::Duration;

fn rotation(c: &mut Criterion) {
    let mut group = c.benchmark_group("givens_rotation");
    for d in [100usize, 200, 500, 1000] {
        let mut u = ColMatrix::identity(d);
        let mut sel = PairSelector::new(d, Selection::Uniform);
        let mut rng = seeded(1);
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::from_parameter(format!("d={d}")), |b| {
            b.iter(|| {
                let (i, j) = sel.next(&mut rng);
                u.rotate(black_box(Givens::new(i, j, 0.3)));
            })
        });
    }
    group.finish();
}

fn spca(c: &mut Criterion) {
    let mut group = c.benchmark_group("spca_step");
    for (label, d, n, r) in [
        ("alg2,d=12600,m=102", 12_600, 102, 10),
        ("alg5,d=20000,m=10", 20_000, 10, 3),
    ] {
        let planted = planted_sparse_pca(d, n, r, d / 100, 1.0, 2);
        let norm = planted
            .data
            .rows()
            .into_iter()
            .map(|r| r.dot(&r))
            .fold(0.0, f64::max)
            .sqrt();
        let mut fl = 0;
        let mut w = SpcaWindow::new(
            ColMatrix::from_array(planted.data.view()),
            0.1 * norm,
            AngleSearch::default(),
            false,
            RowScope::Fixed,
            &mut fl,
        );
        let mut sel = PairSelector::new(n, Selection::Uniform);
        let mut rng = seeded(3);
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                let (i, j) = sel.next(&mut rng);
                black_box(w.coordinate_step(i, j, &mut fl));
            })
        });
    }
    group.finish();
}

fn tensor(c: &mut Criterion) {
    const STEPS: u64 = 1000;
    let mut group = c.benchmark_group("tensor_step");
    group.throughput(Throughput::Elements(STEPS));
    let cfg = GivensTensorConfig {
        tolerance: 0.0,
        ..Default::default()
    };
    let dense = MomentTensor::Dense(planted_orthogonal_tensor(20, 0.1, 4).tensor);
    group.bench_function(BenchmarkId::new("alg3", "K=20"), |b| {
        b.iter(|| {
            cfg.fit(
                &dense,
                &Schedule::last_only(STEPS),
                &mut seeded(5),
                &mut NullObserver,
            )
            .unwrap()
        })
    });
    let lazy_cfg = GivensTensorConfig {
        lazy: true,
        ..cfg.clone()
    };
    for n in [10_000usize, 200_000] {
        let mut rng = seeded(6);
        let y = Array2::from_shape_fn((20, n), |_| normal(&mut rng));
        let input = MomentTensor::Empirical(EmpiricalMoments {
            y,
            scale: 1.0 / n as f64,
            correction: None,
        });
        group.bench_function(BenchmarkId::new("alg6", format!("K=20,N={n}")), |b| {
            b.iter(|| {
                lazy_cfg
                    .fit(
                        &input,
                        &Schedule::last_only(STEPS),
                        &mut seeded(5),
                        &mut NullObserver,
                    )
                    .unwrap()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = rotation, spca, tensor
}
criterion_main!(benches);
