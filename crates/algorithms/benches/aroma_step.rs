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
//! The state is written in full before timing (no page faults of fresh allocations).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_algorithms::aroma::{DiagonalAroma, FactoredAroma, Update};
use dyad_algorithms::fixtures::sparse_classes;
use dyad_core::sampling::TripletSampler;
use dyad_core::{LabeledSet, Rng, SparseVec, seeded};
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

criterion_group!(benches, d_aroma, f_aroma);
criterion_main!(benches);
