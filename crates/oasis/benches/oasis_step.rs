//! One OASIS PA-I step, against the machine's bound.
//!
//! * `oasis_step/<rows>/<precision>/<kernel>`: one step on triplets drawn from a pool of
//!   rows. `mnist` rows: d = 784, about 140 non-zeros in the central 20 x 20 window
//!   ([`fixtures::mnist_like`]); `20ng` rows: d = 1,000, 30 non-zeros anywhere
//!   ([`fixtures::random_sparse`]). Kernels: `legacy` (the step as it was before the
//!   row kernels, a copy kept here: sequential sparse-by-sparse sums, `f64` only), `gather`,
//!   `dense` and `auto` (the choice by density that training uses).
//! * `oasis_bound/<precision>`: the floor a step is compared with: one read and one write of
//!   the rows a step touches (the rows selected by the same pool's queries, about 140 whole
//!   rows of 784 floats), with the simplest loop, `w += 1`.
//! * `oasis_fit/<precision>`: 5,000 steps of [`OasisConfig::fit`] on 400 MNIST-like rows
//!   (40 per class, C = 0.1): the protocol, sampling and the difference included.
//! * `oasis_hot/<precision>`: the dense step with the same query every time (its rows stay in
//!   cache) and C = 1e-9 (W barely moves): the step's arithmetic without memory traffic;
//!   `bound_f32` is `oasis_bound/f32` on those cached rows.
//! * `oasis_kernel_choice/<kernel>/nnz=<k>`: d = 1,000, rows of `k` non-zeros anywhere
//!   (`nnz(p+ - p-)` about `2k`, span about 1,000): where gather and dense break even
//!   ([`dyad_oasis::DENSE_SPAN_PER_NNZ`]).
//!
//! Time is the thread's time on the CPU (`/proc/thread-self/schedstat`), not wall time: the
//! machine is shared, and time spent descheduled is not step time (caches are still shared).
//! `W` is written in full before timing, so page faults of a freshly allocated (lazily
//! zeroed) matrix are not counted as step time. Throughput is in steps per second.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_core::observe::NullObserver;
use dyad_core::{Rng, Schedule, SparseVec, seeded, sparse};
use dyad_kernels::Ranker;
use dyad_kernels::fixtures::{mnist_like, random_sparse};
use dyad_oasis::{BilinearModel, Kernel, OasisConfig, Precision, StepScratch};
use ndarray::Array2;
use rand::Rng as _;
use sprs::{CsVec, CsVecView};
use std::hint::black_box;
use std::time::Duration;

const POOL: usize = 1024;

/// The step before the row kernels (commit 855b1bf), on an `f64` matrix.
fn legacy_step(
    w: &mut Array2<f64>,
    p: CsVecView<'_, f64>,
    pos: CsVecView<'_, f64>,
    neg: CsVecView<'_, f64>,
    c: f64,
    diff: &mut SparseVec,
) -> f64 {
    let d = w.nrows();
    let w = w.as_slice_mut().unwrap();
    diff.set_difference(pos, neg);
    let margin: f64 = p
        .indices()
        .iter()
        .zip(p.data())
        .map(|(&a, &pa)| {
            pa * sparse::dot_dense(&w[a * d..(a + 1) * d], &diff.indices, &diff.values)
        })
        .sum();
    let loss = (1.0 - margin).max(0.0);
    let v = sparse::norm_sq(p.data()) * diff.norm_sq();
    let tau = if loss == 0.0 || v == 0.0 {
        0.0
    } else {
        c.min(loss / v)
    };
    if tau > 0.0 {
        for (&a, &pa) in p.indices().iter().zip(p.data()) {
            let row = &mut w[a * d..(a + 1) * d];
            let s = tau * pa;
            for (&b, &qb) in diff.indices.iter().zip(&diff.values) {
                row[b] += s * qb;
            }
        }
    }
    tau
}

fn filled(d: usize) -> Array2<f64> {
    Array2::from_shape_fn((d, d), |(a, b)| f64::from(u8::from(a == b)))
}

fn mnist_pool() -> Vec<CsVec<f64>> {
    let set = mnist_like(POOL, 10, &mut seeded(1));
    (0..POOL)
        .map(|i| set.x.outer_view(i).unwrap().to_owned())
        .collect()
}

fn text_pool(d: usize, nnz: usize) -> Vec<CsVec<f64>> {
    let mut rng = seeded(1);
    (0..POOL).map(|_| random_sparse(d, nnz, &mut rng)).collect()
}

/// A triplet of random pool rows (random, not cycling: `W` would learn a repeating stream
/// and turn the steps passive).
fn triplet<'a>(
    pool: &'a [CsVec<f64>],
    rng: &mut Rng,
) -> (CsVecView<'a, f64>, CsVecView<'a, f64>, CsVecView<'a, f64>) {
    let mut pick = || pool[rng.random_range(0..POOL)].view();
    (pick(), pick(), pick())
}

/// Counts the steps that updated `W` (reported with the bench, for honesty: a passive step
/// costs only its margin).
#[derive(Default)]
struct Active(u64, u64);

impl Active {
    fn count(&mut self, tau: f64) {
        self.0 += u64::from(tau > 0.0);
        self.1 += 1;
    }

    fn report(&self, what: &str) {
        eprintln!(
            "{what}: {:.1}% of {} steps active",
            100.0 * self.0 as f64 / self.1.max(1) as f64,
            self.1
        );
    }
}

/// Nanoseconds this thread has spent on a CPU (Linux), as a criterion measurement.
struct OnCpu;

fn on_cpu_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    s.split_whitespace().next().unwrap().parse().unwrap()
}

static WALL: WallTime = WallTime;

impl Measurement for OnCpu {
    type Intermediate = u64;
    type Value = Duration;
    fn start(&self) -> u64 {
        on_cpu_ns()
    }
    fn end(&self, start: u64) -> Duration {
        Duration::from_nanos(on_cpu_ns() - start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}

type Crit = Criterion<OnCpu>;

fn short<'a>(c: &'a mut Crit, name: &str) -> criterion::BenchmarkGroup<'a, OnCpu> {
    let mut g = c.benchmark_group(name);
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    g
}

fn step(c: &mut Crit) {
    let mut g = short(c, "oasis_step");
    g.throughput(Throughput::Elements(1));
    for (rows, d, pool) in [
        ("mnist", 784, mnist_pool()),
        ("20ng", 1000, text_pool(1000, 30)),
    ] {
        let mut w = filled(d);
        let mut diff = SparseVec::default();
        let (mut rng, mut active) = (seeded(3), Active::default());
        g.bench_function(BenchmarkId::new(rows, "f64/legacy"), |b| {
            b.iter(|| {
                let (p, a, n) = triplet(&pool, &mut rng);
                active.count(black_box(legacy_step(&mut w, p, a, n, 0.1, &mut diff)))
            })
        });
        active.report(&format!("{rows}/f64/legacy"));
        for precision in [Precision::F64, Precision::F32] {
            let mut model = BilinearModel::from_matrix_with(filled(d), precision);
            for kernel in [Kernel::Gather, Kernel::Dense, Kernel::Auto] {
                let mut scratch = StepScratch::with_kernel(kernel);
                let id = format!("{precision:?}/{kernel:?}").to_lowercase();
                let mut active = Active::default();
                g.bench_function(BenchmarkId::new(rows, &id), |b| {
                    b.iter(|| {
                        let (p, a, n) = triplet(&pool, &mut rng);
                        let out = model.pa1_step(p, a, n, 0.1, &mut scratch);
                        active.count(black_box(out).tau)
                    })
                });
                active.report(&format!("{rows}/{id}"));
            }
        }
    }
    g.finish();
}

/// `w += 1` over every row the pool's query `i` selects: one read and one write of each.
fn touch<T: Copy + std::ops::AddAssign + From<u8>>(w: &mut [T], d: usize, p: CsVecView<'_, f64>) {
    for &a in p.indices() {
        for v in &mut w[a * d..(a + 1) * d] {
            *v += T::from(1);
        }
    }
}

fn bound(c: &mut Crit) {
    let mut g = short(c, "oasis_bound");
    g.throughput(Throughput::Elements(1));
    let (d, pool) = (784, mnist_pool());
    let mut w64 = vec![0.0f64; d * d];
    let mut w32 = vec![0.0f32; d * d];
    let mut rng = seeded(3);
    g.bench_function("f64", |b| {
        b.iter(|| touch(&mut w64, d, triplet(&pool, &mut rng).0))
    });
    g.bench_function("f32", |b| {
        b.iter(|| touch(&mut w32, d, triplet(&pool, &mut rng).0))
    });
    black_box((&w64, &w32));
    g.finish();
}

fn fit(c: &mut Crit) {
    let mut g = c.benchmark_group("oasis_fit");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10);
    const STEPS: u64 = 5_000;
    g.throughput(Throughput::Elements(STEPS));
    let train = mnist_like(400, 10, &mut seeded(2));
    for precision in [Precision::F64, Precision::F32] {
        let config = OasisConfig {
            precision,
            ..Default::default()
        };
        let mut seed = 0;
        g.bench_function(format!("{precision:?}").to_lowercase(), |b| {
            b.iter(|| {
                seed += 1;
                config
                    .fit(
                        &train,
                        &Schedule::last_only(STEPS),
                        &mut seeded(seed),
                        &mut NullObserver,
                    )
                    .unwrap()
            })
        });
    }
    g.finish();
}

fn kernel_choice(c: &mut Crit) {
    let mut g = short(c, "oasis_kernel_choice");
    g.throughput(Throughput::Elements(1));
    let d = 1000;
    for nnz in [16usize, 32, 64, 128] {
        let pool = text_pool(d, nnz);
        for precision in [Precision::F64, Precision::F32] {
            let mut model = BilinearModel::from_matrix_with(filled(d), precision);
            for kernel in [Kernel::Gather, Kernel::Dense] {
                let mut scratch = StepScratch::with_kernel(kernel);
                let mut rng = seeded(3);
                let id = format!("{precision:?}/{kernel:?}").to_lowercase();
                g.bench_function(BenchmarkId::new(id, format!("nnz={nnz}")), |b| {
                    b.iter(|| {
                        let (p, a, n) = triplet(&pool, &mut rng);
                        black_box(model.pa1_step(p, a, n, 0.1, &mut scratch))
                    })
                });
            }
        }
    }
    g.finish();
}

fn hot(c: &mut Crit) {
    let mut g = short(c, "oasis_hot");
    g.throughput(Throughput::Elements(1));
    let pool: Vec<CsVec<f64>> = mnist_pool().into_iter().take(3).collect();
    for precision in [Precision::F64, Precision::F32] {
        let mut model = BilinearModel::from_matrix_with(filled(784), precision);
        let mut scratch = StepScratch::with_kernel(Kernel::Dense);
        let mut flip = false;
        g.bench_function(format!("{precision:?}"), |b| {
            b.iter(|| {
                flip = !flip;
                let (a, n) = if flip { (1, 2) } else { (2, 1) };
                black_box(model.pa1_step(
                    pool[0].view(),
                    pool[a].view(),
                    pool[n].view(),
                    1e-9,
                    &mut scratch,
                ))
            })
        });
    }
    let mut w32 = vec![0.0f32; 784 * 784];
    g.bench_function("bound_f32", |b| {
        b.iter(|| touch(&mut w32, 784, pool[0].view()))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(OnCpu);
    targets = step, bound, fit, kernel_choice, hot
}
criterion_main!(benches);
