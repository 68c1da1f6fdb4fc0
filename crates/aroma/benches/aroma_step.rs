//! One AROMA round at the spec's sizes: d = 1,000 with Caltech-like rows (median 27
//! non-zeros, 50 classes) and 20NG-like rows (about 30 non-zeros, 20 classes), L2-normalised
//! and non-negative ([`sparse_classes`], 2,000 rows). Triplets come from the OASIS sampler;
//! `p = p+ - p-` has about twice the non-zeros of a row.
//!
//! * `.../updating`: a round that updates. Rounds alternate `(q, p)` and `(q, -p)` over a
//!   pool of sampled triplets, so no model satisfies both and every round has a positive
//!   loss.
//! * `.../sampled`: a round as the ranker runs it (sample a triplet, form `p`, step), after
//!   20,000 (d-AROMA) or 2,000 (f-AROMA) warm-up rounds; the fraction of rounds that update
//!   there is printed.
//!
//! * `f_aroma_bound/...`: the memory traffic of an updating f-AROMA round applied eagerly at
//!   d = 1,000, as a floor to judge the round against: one read-modify-write sweep over the
//!   packed factors Λ and Ω (`omega+lambda`, the "time to stream Ω and Λ once"), and
//!   over W as well (`w+omega+lambda`: the round also adds a dense rank-one term to W). The
//!   learner queues its terms and sweeps once per 32 updates (`aroma/factored.rs`), so its
//!   floor is compute (the amortised multiply-adds of the sweeps), not this traffic.
//!
//! The state is written in full before timing (no page faults of fresh allocations).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_aroma::{DiagonalAroma, FactoredAroma, Update};
use dyad_core::sampling::TripletSampler;
use dyad_core::{LabeledSet, Rng, SparseVec, seeded};
use dyad_kernels::fixtures::sparse_classes;
use std::hint::black_box;

const CASES: [(&str, usize, usize); 2] = [("caltech", 27, 50), ("20ng", 30, 20)];

struct Stream {
    set: LabeledSet,
    sampler: TripletSampler,
    rng: Rng,
}

impl Stream {
    fn new(nnz: usize, classes: usize) -> Self {
        let set = sparse_classes(2000, 1000, classes, nnz, &mut seeded(1));
        let sampler = TripletSampler::new(&set).expect("sampler");
        Self {
            set,
            sampler,
            rng: seeded(2),
        }
    }

    /// The next sampled round, written into `q` and `p`.
    fn next(&mut self, q: &mut SparseVec, p: &mut SparseVec) {
        let t = self.sampler.sample(&mut self.rng);
        let row = |i| self.set.x.outer_view(i).expect("row");
        p.set_difference(row(t.positive), row(t.negative));
        let r = row(t.query);
        q.indices.clear();
        q.indices.extend_from_slice(r.indices());
        q.values.clear();
        q.values.extend_from_slice(r.data());
    }

    /// A pool of rounds, each followed by its negation.
    fn alternating_pool(&mut self, pairs: usize) -> Vec<(SparseVec, SparseVec)> {
        let mut out = Vec::with_capacity(2 * pairs);
        for _ in 0..pairs {
            let (mut q, mut p) = (SparseVec::default(), SparseVec::default());
            self.next(&mut q, &mut p);
            let neg = SparseVec {
                indices: p.indices.clone(),
                values: p.values.iter().map(|v| -v).collect(),
            };
            out.push((q.clone(), p));
            out.push((q, neg));
        }
        out
    }
}

fn report(name: &str, algo: &str, updates: u64, rounds: u64) {
    eprintln!(
        "{algo} {name}: {:.1}% of {rounds} rounds updated",
        100.0 * updates as f64 / rounds as f64
    );
}

fn d_aroma(c: &mut Criterion) {
    let mut group = c.benchmark_group("d_aroma_round");
    group.throughput(Throughput::Elements(1));
    for (name, nnz, classes) in CASES {
        let mut stream = Stream::new(nnz, classes);
        let pool = stream.alternating_pool(2048);
        let mut learner = DiagonalAroma::new(1000, 1000, 0.01, Update::Margin).expect("state");
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new(name, "d=1000,updating"), |b| {
            b.iter(|| {
                let (q, p) = &pool[i % pool.len()];
                i += 1;
                black_box(learner.step((&q.indices, &q.values), (&p.indices, &p.values)))
            })
        });
        let c = learner.counts();
        assert_eq!(c.updates, c.rounds, "every alternating round updates");

        let mut learner = DiagonalAroma::new(1000, 1000, 0.01, Update::Margin).expect("state");
        let (mut q, mut p) = (SparseVec::default(), SparseVec::default());
        for _ in 0..20_000 {
            stream.next(&mut q, &mut p);
            learner.step((&q.indices, &q.values), (&p.indices, &p.values));
        }
        let warm = learner.counts();
        group.bench_function(BenchmarkId::new(name, "d=1000,sampled"), |b| {
            b.iter(|| {
                stream.next(&mut q, &mut p);
                black_box(learner.step((&q.indices, &q.values), (&p.indices, &p.values)))
            })
        });
        let c = learner.counts();
        report(
            name,
            "d-AROMA sampled",
            c.updates - warm.updates,
            c.rounds - warm.rounds,
        );
    }
    group.finish();
}

fn f_aroma(c: &mut Criterion) {
    let mut group = c.benchmark_group("f_aroma_round");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    for (name, nnz, classes) in CASES {
        let mut stream = Stream::new(nnz, classes);
        let pool = stream.alternating_pool(2048);
        let mut learner = FactoredAroma::new(1000, 1000, 0.01, Update::Margin).expect("state");
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new(name, "d=1000,updating"), |b| {
            b.iter(|| {
                let (q, p) = &pool[i % pool.len()];
                i += 1;
                black_box(
                    learner
                        .step((&q.indices, &q.values), (&p.indices, &p.values))
                        .expect("round"),
                )
            })
        });
        let c = learner.counts();
        assert_eq!(c.updates, c.rounds, "every alternating round updates");

        let mut learner = FactoredAroma::new(1000, 1000, 0.01, Update::Margin).expect("state");
        let (mut q, mut p) = (SparseVec::default(), SparseVec::default());
        for _ in 0..2_000 {
            stream.next(&mut q, &mut p);
            learner
                .step((&q.indices, &q.values), (&p.indices, &p.values))
                .expect("round");
        }
        let warm = learner.counts();
        group.bench_function(BenchmarkId::new(name, "d=1000,sampled"), |b| {
            b.iter(|| {
                stream.next(&mut q, &mut p);
                black_box(
                    learner
                        .step((&q.indices, &q.values), (&p.indices, &p.values))
                        .expect("round"),
                )
            })
        });
        let c = learner.counts();
        report(
            name,
            "f-AROMA sampled",
            c.updates - warm.updates,
            c.rounds - warm.rounds,
        );
    }
    group.finish();
}

/// One read-modify-write sweep over each buffer (a scaled rank-one-like update of its
/// entries), the floor of an updating round's memory traffic.
fn f_aroma_bound(c: &mut Criterion) {
    let d = 1000usize;
    let packed = d * (d + 1) / 2;
    let mut w = vec![0.5f64; d * d];
    let mut lambda = vec![0.25f64; packed];
    let mut omega = vec![0.25f64; packed];
    let u: Vec<f64> = (0..d).map(|i| 1.0 / (1.0 + i as f64)).collect();
    let mut group = c.benchmark_group("f_aroma_bound");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    fn sweep(buf: &mut [f64], u: &[f64], a: f64) {
        for (row, chunk) in buf.chunks_mut(u.len()).enumerate() {
            let s = a * u[row % u.len()];
            for (x, &v) in chunk.iter_mut().zip(u) {
                *x -= s * v;
            }
        }
    }
    let mut a = 1e-9;
    group.bench_function(BenchmarkId::new("d=1000", "omega+lambda"), |b| {
        b.iter(|| {
            a = -a;
            sweep(&mut lambda, &u, a);
            sweep(&mut omega, &u, a);
            black_box((lambda[0], omega[0]))
        })
    });
    group.bench_function(BenchmarkId::new("d=1000", "w+omega+lambda"), |b| {
        b.iter(|| {
            a = -a;
            sweep(&mut w, &u, a);
            sweep(&mut lambda, &u, a);
            sweep(&mut omega, &u, a);
            black_box((w[0], lambda[0], omega[0]))
        })
    });
    group.finish();
}

criterion_group!(benches, d_aroma, f_aroma, f_aroma_bound);
criterion_main!(benches);
