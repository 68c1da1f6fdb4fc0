//! One LORETA-1 step (spec §2.3, Algorithm 4 with the pseudo-inverse updates of Algorithm 7)
//! on sparse rank-one gradients shaped like the 20NG triplet loss: `g1 = eta q` with 100
//! non-zeros, `g2 = p+ - p-` with about 200. The target of the issue is at most 0.5 ms per
//! step at `n = m = 10^4`, `k = 50` on one core. Also a few other `n` and `k`, and one
//! LORETA-1-PSD step (Algorithm 5, literal pseudo-inverse updates) for comparison. The state
//! holds `A`, `B`, `A^{+T}`, `B^{+T}`: `4nk` floats for `m = n` (printed once per size). The
//! `sweep` entries are the memory bound of a step: one read-modify-write pass (one add per
//! element) over four arrays of the same size, which every LORETA-1 step must at least do
//! (every entry of the four matrices changes at every step). `loreta1_gram` is the same step
//! in Gram form (`crate::loreta::gram`: the pseudo-inverses implicit, `O((nnz g1 + nnz g2)
//! k + k^2)` per step, its periodic `O((n+m)k^2)` refresh included in the average), which
//! that bound does not apply to: it touches only the rows in the gradients' supports.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_core::{SparseVec, seeded};
use dyad_kernels::fixtures::random_sparse;
use dyad_loreta::gram::DEFAULT_REFRESH_EVERY;
use dyad_loreta::init::gaussian;
use dyad_loreta::{Loreta1, Loreta1Gram, Loreta1Psd, PinvTolerances, ScaledSparse};
use sprs::CsVec;
use std::hint::black_box;
use std::time::Duration;

/// 256 pre-drawn gradient pairs `(q, p+ - p-)`.
fn pool(n: usize) -> Vec<(CsVec<f64>, SparseVec)> {
    let mut rng = seeded(7);
    (0..256)
        .map(|_| {
            let q = random_sparse(n, 100, &mut rng);
            let (a, b) = (
                random_sparse(n, 100, &mut rng),
                random_sparse(n, 100, &mut rng),
            );
            let mut d = SparseVec::default();
            d.set_difference(a.view(), b.view());
            (q, d)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("loreta_step");
    group
        .throughput(Throughput::Elements(1))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let eta = 0.01;
    const SIZES: [(usize, usize); 5] = [
        (1_000, 50),
        (10_000, 10),
        (10_000, 50),
        (10_000, 100),
        (100_000, 50),
    ];
    // Both forms at every size, on the same Gaussian factors and gradient pool.
    type Step = Box<dyn FnMut(ScaledSparse<'_>, ScaledSparse<'_>)>;
    let carried = |a, b| -> Step {
        let mut state = Loreta1::new(a, b, PinvTolerances::default()).expect("full rank");
        eprintln!(
            "loreta1: state {} floats ({:.1} MB)",
            state.memory_floats(),
            state.memory_floats() as f64 * 8e-6
        );
        Box::new(move |g1, g2| {
            black_box(state.step(g1, g2).expect("finite step"));
        })
    };
    let gram = |a, b| -> Step {
        let mut state = Loreta1Gram::new(a, b, PinvTolerances::default(), DEFAULT_REFRESH_EVERY)
            .expect("full rank");
        Box::new(move |g1, g2| {
            black_box(state.step(g1, g2).expect("finite step"));
        })
    };
    for (name, build) in [
        ("loreta1", &carried as &dyn Fn(_, _) -> Step),
        ("loreta1_gram", &gram),
    ] {
        for (n, k) in SIZES {
            let mut rng = seeded(1);
            let (a, b) = (gaussian(n, k, 1.0, &mut rng), gaussian(n, k, 1.0, &mut rng));
            let mut step = build(a, b);
            let grads = pool(n);
            let mut i = 0usize;
            group.bench_with_input(
                BenchmarkId::new(name, format!("n={n},k={k}")),
                &n,
                |bch, _| {
                    bch.iter(|| {
                        let (q, d) = &grads[i % grads.len()];
                        i += 1;
                        step(
                            ScaledSparse::new(q.indices(), q.data(), eta),
                            ScaledSparse::new(&d.indices, &d.values, 1.0),
                        );
                    })
                },
            );
        }
    }
    // The memory bound: a bare read-modify-write sweep over the same 4nk floats (four
    // separate n x k arrays, like A, A^{+T}, B, B^{+T}), one add per element.
    for (n, k) in [(10_000usize, 50usize), (100_000, 50)] {
        let mut arrays: Vec<Vec<f64>> = (0..4).map(|_| vec![1.0; n * k]).collect();
        group.bench_with_input(
            BenchmarkId::new("sweep", format!("n={n},k={k}")),
            &n,
            |bch, _| {
                bch.iter(|| {
                    for a in arrays.iter_mut() {
                        for x in a.iter_mut() {
                            *x += 1e-3;
                        }
                    }
                    black_box(&arrays);
                })
            },
        );
    }
    // The label-ranking step of the ImageNet figures (F8, F10): score every label of an image
    // (`A (B^T p)`, which applies the last step's deferred write to `A`), then step along
    // `u p^T` (`u`: five relevant labels and the violator; `p`: 300 of 1,000 visual words, as
    // the stand-in's images). 1,660 labels, as the 1,000-leaf stand-in.
    let (labels, words) = (1_660, 1_000);
    for k in [50, 400] {
        let mut rng = seeded(3);
        let (a, b) = (
            gaussian(labels, k, 1.0, &mut rng),
            gaussian(words, k, 1.0, &mut rng),
        );
        let mut state = Loreta1::new(a, b, PinvTolerances::default()).expect("full rank");
        let draws: Vec<(CsVec<f64>, Vec<usize>)> = (0..256)
            .map(|_| {
                let p = random_sparse(words, 300, &mut rng);
                let mut u: Vec<usize> = random_sparse(labels, 6, &mut rng).indices().to_vec();
                u.sort_unstable();
                (p, u)
            })
            .collect();
        let mut scores = vec![0.0; labels];
        let mut i = 0usize;
        group.bench_with_input(
            BenchmarkId::new(
                "loreta1_labels",
                format!("labels={labels},words={words},k={k}"),
            ),
            &k,
            |bch, _| {
                bch.iter(|| {
                    let (p, u) = &draws[i % draws.len()];
                    i += 1;
                    state.score_labels((p.indices(), p.data()), &mut scores);
                    let values: Vec<f64> = (0..u.len())
                        .map(|j| if j == 0 { -5.0 } else { 1.0 })
                        .collect();
                    black_box(
                        state
                            .step(
                                ScaledSparse::new(u, &values, eta),
                                ScaledSparse::new(p.indices(), p.data(), 1.0),
                            )
                            .expect("finite step"),
                    );
                })
            },
        );
    }
    let (n, k) = (10_000, 50);
    let mut rng = seeded(2);
    let mut psd = Loreta1Psd::new(gaussian(n, k, 1.0, &mut rng), PinvTolerances::default())
        .expect("full rank");
    let grads = pool(n);
    let mut i = 0usize;
    group.bench_with_input(
        BenchmarkId::new("loreta1_psd", format!("n={n},k={k}")),
        &n,
        |bch, _| {
            bch.iter(|| {
                let (q, d) = &grads[i % grads.len()];
                i += 1;
                black_box(
                    psd.step(
                        ScaledSparse::new(q.indices(), q.data(), eta),
                        ScaledSparse::new(&d.indices, &d.values, 1.0),
                    )
                    .expect("finite step"),
                )
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
