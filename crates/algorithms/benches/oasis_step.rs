//! One OASIS PA-I step on sparse inputs: d = 1,000 and 10,000 with 35, 70 (the papers'
//! web-scale sparsity) and 140 non-zeros per vector. Throughput is reported in steps per
//! second. `W` is written in full before timing, so page faults of a freshly allocated
//! (lazily zeroed) matrix are not counted as step time.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dyad_algorithms::fixtures::random_sparse;
use dyad_algorithms::oasis::BilinearModel;
use dyad_core::{SparseVec, seeded};
use ndarray::Array2;
use sprs::CsVec;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("oasis_pa1_step");
    group.throughput(Throughput::Elements(1));
    for d in [1_000usize, 10_000] {
        let mut model = BilinearModel::from_matrix(Array2::from_shape_fn((d, d), |(a, b)| {
            f64::from(u8::from(a == b))
        }));
        for nnz in [35usize, 70, 140] {
            let mut rng = seeded(1);
            let pool: Vec<CsVec<f64>> =
                (0..1024).map(|_| random_sparse(d, nnz, &mut rng)).collect();
            let mut scratch = SparseVec::default();
            let mut i = 0usize;
            group.bench_with_input(
                BenchmarkId::new(format!("d={d}"), format!("nnz={nnz}")),
                &d,
                |b, _| {
                    b.iter(|| {
                        let (p, a, n) = (
                            &pool[i % 1024],
                            &pool[(i * 7 + 1) % 1024],
                            &pool[(i * 13 + 2) % 1024],
                        );
                        i += 1;
                        black_box(model.pa1_step(p.view(), a.view(), n.view(), 0.1, &mut scratch))
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
