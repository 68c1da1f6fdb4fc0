//! LMNN iterations on a Caltech-256-like stand-in ([`sparse_classes`]: sparse non-negative
//! bag-of-words rows, d = 1,000, 40 non-zeros, half from a class prototype), 40 images per class:
//! n = 400 (10 classes, r = 399 PCA dimensions) and n = 2,000 (50 classes, r = 1,000).
//!
//! Each variant ("full" = LMNN (naive), "active" = fast-LMNN, refresh every 10 iterations) is
//! first warmed up for 30 iterations from `M = I` (at `M = I` nearly every triplet is active on
//! unit-norm features, so the two variants do identical work there); one sample then runs one
//! refresh period, 10 iterations, from a clone of that warm state. Throughput is reported in
//! iterations per second.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_core::seeded;
use dyad_kernels::fixtures::sparse_classes;
use dyad_metric_baselines::lmnn::{LmnnConfig, LmnnSolver};
use std::hint::black_box;

const WARMUP: u64 = 30;
const PERIOD: u64 = 10;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("lmnn_iteration");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PERIOD));
    for (classes, label) in [(10usize, "n=400,d=1000"), (50, "n=2000,d=1000")] {
        let data = sparse_classes(classes * 40, 1000, classes, 40, &mut seeded(1));
        for active_set in [false, true] {
            let cfg = LmnnConfig {
                active_set,
                refresh_every: PERIOD,
                tolerance: 0.0,
                ..Default::default()
            };
            let mut warm = LmnnSolver::new(&cfg, &data).expect("valid problem");
            while warm.iterations() < WARMUP {
                warm.step().expect("step");
            }
            let name = if active_set { "active" } else { "full" };
            group.bench_with_input(BenchmarkId::new(name, label), &warm, |b, warm| {
                b.iter_batched(
                    || warm.clone(),
                    |mut s| {
                        for _ in 0..PERIOD {
                            black_box(s.step().expect("step"));
                        }
                        s
                    },
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
