//! One low-rank KR gradient (Eqs. 23–24, `O(np² + knp)`) at n ∈ {5,000, 20,000, 60,000},
//! p = 50, k = 8, on one core; the paper quotes ~4 ms at n = 60,000 (Matlab, 3.6 GHz).
//! The graph is a synthetic kNN-like graph (each point linked to 8 pseudo-random others,
//! symmetrised), since only its sparsity matters here; labels: 45·10 inequality and 10·10
//! equality pairs (MNIST-like, l = 10).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dyad_algorithms::tensor_rank::{Laplacian, LowRankProblem, Pairs};
use dyad_core::seeded;
use ndarray::Array2;
use rand::Rng as _;
use std::hint::black_box;

fn problem(n: usize, p: usize, k: usize) -> (LowRankProblem, Array2<f64>) {
    let mut rng = seeded(1);
    let mut edges = Vec::with_capacity(n * k);
    for i in 0..n {
        for _ in 0..k {
            let j = rng.random_range(0..n);
            if j != i {
                edges.push((i.min(j) as u32, i.max(j) as u32, rng.random_range(0.1..1.0)));
            }
        }
    }
    edges.sort_by_key(|e| (e.0, e.1));
    edges.dedup_by_key(|e| (e.0, e.1));
    let l = Laplacian::from_edges(n, &edges);
    let mut pairs = Pairs::default();
    for _ in 0..450 {
        pairs
            .above
            .push((rng.random_range(0..n), rng.random_range(0..n)));
    }
    for _ in 0..100 {
        pairs
            .equal
            .push((rng.random_range(0..n), rng.random_range(0..n)));
    }
    pairs.above.retain(|(i, j)| i != j);
    pairs.equal.retain(|(i, j)| i != j);
    let b = Array2::from_shape_fn((n, p), |_| rng.random_range(-1.0..1.0));
    (LowRankProblem::new(l, 0.01, &pairs, p), b)
}

fn gradient(c: &mut Criterion) {
    let mut g = c.benchmark_group("low_rank_kr_gradient");
    g.sample_size(10);
    for n in [5_000usize, 20_000, 60_000] {
        let (prob, b) = problem(n, 50, 8);
        let mut ws = prob.workspace();
        let mut grad = Array2::zeros(b.dim());
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bench, _| {
            bench
                .iter(|| black_box(prob.objective_and_gradient(b.view(), &mut ws, grad.view_mut())))
        });
    }
    g.finish();
}

criterion_group!(benches, gradient);
criterion_main!(benches);
