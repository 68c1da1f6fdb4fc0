//! Loading all of MNIST from `$DYAD_DATA_DIR/mnist` (the four gzip IDX files): decompress,
//! parse, check, and build the 70,000 x 784 CSR matrix the experiments use.

use criterion::{Criterion, criterion_group, criterion_main};
use dyad_datasets::mnist::Mnist;
use std::hint::black_box;
use std::path::PathBuf;

fn bench(c: &mut Criterion) {
    let Some(root) = std::env::var_os("DYAD_DATA_DIR") else {
        eprintln!("DYAD_DATA_DIR is not set: MNIST benchmarks skipped");
        return;
    };
    let dir = PathBuf::from(root).join("mnist");
    let mut g = c.benchmark_group("mnist");
    g.sample_size(10);
    g.bench_function("load", |b| b.iter(|| black_box(Mnist::load(&dir).unwrap())));
    let m = Mnist::load(&dir).unwrap();
    g.bench_function("content_id", |b| b.iter(|| black_box(m.content_id())));
    g.bench_function("to_labeled_set", |b| {
        b.iter(|| black_box(m.to_labeled_set(true)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
