//! LMNN iterations on a Caltech-256-like stand-in: sparse non-negative bag-of-words rows
//! (d = 1,000, 40 words per image drawn from a class-specific vocabulary of 30 words with
//! probability 0.3, otherwise from a skewed background), L2-normalised, 40 images per class:
//! n = 400 (10 classes, r = 399 PCA dimensions) and n = 2,000 (50 classes, r = 1,000).
//!
//! Each variant ("full" = LMNN (naive), "active" = fast-LMNN, refresh every 10 iterations) is
//! first warmed up for 30 iterations from `M = I` (at `M = I` nearly every triplet is active on
//! unit-norm features, so the two variants do identical work there); one sample then runs one
//! refresh period, 10 iterations, from a clone of that warm state. Throughput is reported in
//! iterations per second.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_algorithms::baselines::lmnn::{LmnnConfig, LmnnSolver};
use dyad_core::{LabeledSet, seeded};
use rand::Rng as _;
use std::hint::black_box;

const WARMUP: u64 = 30;
const PERIOD: u64 = 10;

fn caltech_like(classes: usize, per_class: usize, d: usize, seed: u64) -> LabeledSet {
    let mut rng = seeded(seed);
    let vocab: Vec<Vec<usize>> = (0..classes)
        .map(|_| (0..30).map(|_| rng.random_range(0..d)).collect())
        .collect();
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    for (c, words) in vocab.iter().enumerate() {
        for _ in 0..per_class {
            let mut r = vec![0.0; d];
            for _ in 0..40 {
                let w = if rng.random::<f64>() < 0.3 {
                    words[rng.random_range(0..words.len())]
                } else {
                    let u: f64 = rng.random();
                    ((u * u * u) * d as f64) as usize % d
                };
                r[w] += 1.0;
            }
            rows.push(r);
            labels.push(c as u32);
        }
    }
    let mut s = LabeledSet::from_dense_rows(&rows, labels, classes);
    s.l2_normalize_rows();
    s
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("lmnn_iteration");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PERIOD));
    for (classes, label) in [(10usize, "n=400,d=1000"), (50, "n=2000,d=1000")] {
        let data = caltech_like(classes, 40, 1000, 1);
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
