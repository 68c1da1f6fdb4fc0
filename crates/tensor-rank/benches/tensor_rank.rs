//! DR's epoch (see [`dr_epoch`]) and one low-rank KR gradient (Eqs. 23–24, `O(np² + knp)`: `LB`, `BᵀB`, `BᵀLB` and the two
//! `n × p` products) at n ∈ {5,000, 20,000, 60,000}, p = 50, k = 8, on one core. The paper
//! quotes ~0.004 s at n = 60,000 (Matlab, 3.6 GHz).
//!
//! Data: an S-CLASS-like Swiss roll ([`swiss_roll`]: 10 classes along the roll, embedded in
//! m = 10 dimensions so the exact kNN search of the setup stays short; only the graph's
//! sparsity matters to the gradient; the S-CLASS generator itself is a data-set provider in
//! `dyad-datasets`, which this crate does not depend on), the
//! symmetrised 8-NN graph with adaptive σ, labels by the §4.1 protocol with l = 10 (450
//! inequality, 100 equality pairs), B uniform in [-1, 1]. Two orders of the points: the data
//! order (classes interleaved, so graph neighbours are far apart in memory, as in MNIST's own
//! order) and the reverse Cuthill–McKee order low-rank KR uses internally (`reorder = true`).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dyad_core::seeded;
use dyad_tensor_rank::graph::{Connect, GraphSpec, Laplacian, Sigma, knn};
use dyad_tensor_rank::synthetic::class_pairs;
use dyad_tensor_rank::{LowRankProblem, Pairs};
use ndarray::Array2;
use rand::Rng as _;
use std::hint::black_box;

mod roll;
use roll::Roll;

/// The benches' roll: noise 0.05 per coordinate.
fn swiss_roll(n: usize, seed: u64) -> Roll {
    roll::swiss_roll(n, seed, 0.05)
}

fn problems(n: usize, p: usize, k: usize) -> [(&'static str, LowRankProblem, Array2<f64>); 2] {
    let data = swiss_roll(n, 1);
    let graph = GraphSpec {
        k,
        connect: Connect::Or,
        sigma: Sigma::Adaptive,
        threads: 2,
    };
    let l = Laplacian::from_knn(&knn(data.x.view(), k, 2).expect("kNN"), &graph).expect("L");
    let mut rng = seeded(2);
    let pairs =
        class_pairs(&data.class, &data.rank, 10, &Default::default(), &mut rng).expect("pairs");
    let b = Array2::from_shape_fn((n, p), |_| rng.random_range(-1.0..1.0));
    let order = l.locality_order();
    let mut inv = vec![0; n];
    for (new, &old) in order.iter().enumerate() {
        inv[old] = new;
    }
    let map = |v: &[(usize, usize)]| v.iter().map(|&(i, j)| (inv[i], inv[j])).collect();
    let pairs_r = Pairs::new(map(&pairs.above), map(&pairs.equal));
    let b_r = b.select(ndarray::Axis(0), &order);
    let lr = l.permuted(&order);
    [
        ("data_order", LowRankProblem::new(l, 0.01, &pairs, p), b),
        ("rcm_order", LowRankProblem::new(lr, 0.01, &pairs_r, p), b_r),
    ]
}

fn gradient(c: &mut Criterion) {
    let mut g = c.benchmark_group("low_rank_kr_gradient");
    g.sample_size(10);
    for n in [5_000usize, 20_000, 60_000] {
        for (name, prob, b) in problems(n, 50, 8) {
            let mut ws = prob.workspace();
            let mut grad = Array2::zeros(b.dim());
            g.bench_with_input(BenchmarkId::new(name, n), &n, |bench, _| {
                bench.iter(|| {
                    black_box(prob.objective_and_gradient(b.view(), &mut ws, grad.view_mut()))
                })
            });
        }
    }
    g.finish();
}

/// The bound the gradient is measured against (issue 44 §2): this core's throughput on the
/// gradient's own product shape, `C = B M` with `B` n × p and `M` p × p (`2 n p²` flops), by
/// the sequential faer product the gradient uses, at n = 60,000, p = 50. The gradient's
/// `≈ 6 n p² + 2 k n p` flops (module docs of `low_rank.rs`) divided by this rate is the time a
/// gradient made only of such products would take.
fn product_throughput(c: &mut Criterion) {
    let (n, p) = (60_000usize, 50usize);
    let mut rng = seeded(3);
    let b = Array2::from_shape_fn((n, p), |_| rng.random_range(-1.0..1.0));
    let m = Array2::from_shape_fn((p, p), |_| rng.random_range(-1.0..1.0));
    let mut out = Array2::zeros((n, p));
    let mut g = c.benchmark_group("product_throughput");
    g.sample_size(20);
    g.throughput(criterion::Throughput::Elements((2 * n * p * p) as u64));
    g.bench_function("n_by_p_times_p_by_p", |bench| {
        bench.iter(|| dyad_kernels::linalg::gemm(out.view_mut(), false, b.view(), m.view()))
    });
    g.finish();
}

/// Full KR's regulariser operator `λ (LV − (LV)ᵀ)/2` at n = 1,500 (the `kr-full` spec's
/// size; one per CG iteration): the blocked, vectorised pass with its rows formed in the
/// graph's locality order (as full KR runs it), the same pass in the data order, and the
/// plain product and transpose it replaced (the same bits, tested in `kernel_full`).
fn full_kr_regulariser(c: &mut Criterion) {
    use dyad_tensor_rank::kernel_full::antisymmetric_regulariser;
    let mut g = c.benchmark_group("full_kr_regulariser");
    g.sample_size(20);
    let n = 1_500;
    let data = swiss_roll(n, 3);
    let graph = GraphSpec {
        k: 16,
        connect: Connect::Or,
        sigma: Sigma::Adaptive,
        threads: 2,
    };
    let l = Laplacian::from_knn(&knn(data.x.view(), 16, 2).expect("kNN"), &graph).expect("L");
    let mut rng = seeded(4);
    let a = Array2::from_shape_fn((n, n), |_| rng.random_range(-1.0..1.0));
    let v = &a - &a.t();
    let vs = v.as_slice().unwrap();
    let mut lv = Array2::zeros((n, n));
    let mut out = vec![0.0; n * n];
    let locality = l.locality_order();
    let data_order: Vec<usize> = (0..n).collect();
    for (name, rows) in [("blocked", &locality), ("blocked_data_order", &data_order)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                antisymmetric_regulariser(&l, 0.5, vs, rows, lv.as_slice_mut().unwrap(), &mut out);
                black_box(out[1])
            })
        });
    }
    g.bench_function("plain", |b| {
        b.iter(|| {
            l.apply_rows(v.view(), lv.view_mut());
            let lvs = lv.as_slice().unwrap();
            for i in 0..n {
                for j in 0..n {
                    out[i * n + j] = 0.5 * (lvs[i * n + j] - lvs[j * n + i]);
                }
            }
            black_box(out[1])
        })
    });
    g.finish();
}

/// Points shaped like the DTD panel's (47 classes × 120, m = 100 features around seeded class
/// centres, class `c` ranked `c`) with `l` labels per class pair by the §4.1 protocol.
fn dtd_like(seed: u64, l: usize) -> dyad_tensor_rank::PairInput {
    let (classes, per, m) = (47usize, 120usize, 100usize);
    let n = classes * per;
    let mut rng = seeded(seed);
    let class: Vec<u32> = (0..n).map(|i| (i % classes) as u32).collect();
    let centre = Array2::from_shape_fn((classes, m), |_| rng.random_range(-1.0..1.0));
    let x = Array2::from_shape_fn((n, m), |(i, a)| {
        centre[[i % classes, a]] + 0.3 * rng.random_range(-1.0..1.0)
    });
    let rank: Vec<f64> = class.iter().map(|&c| c as f64).collect();
    let pairs = class_pairs(&class, &rank, l, &Default::default(), &mut rng).expect("pairs");
    dyad_tensor_rank::PairInput::new(x, pairs)
}

/// One DR epoch (spec §3.10: 6 hidden ReLU layers, one restart) at the size of the DTD
/// panel's l = 10 labels: 47 classes, m = 100 features, 11,280 training pairs (10,810
/// inequality, 470 equality), minibatches of 64 pairs, at the width grid's 32 and 128. The
/// paper profile trains 5 restarts for 50 epochs per width and l, so this is DR's unit of
/// cost (the spec's compute choice quotes 0.6 s at width 128). candle's products run
/// sequentially, as the `dyad` binary makes them (`RAYON_NUM_THREADS=1` for candle).
fn dr_epoch(c: &mut Criterion) {
    use dyad_core::Schedule;
    use dyad_core::observe::NullObserver;
    use dyad_tensor_rank::{DeepRankConfig, PairRanker};
    // SAFETY: no other thread exists yet when the benchmark group starts.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
    let input = dtd_like(5, 10);
    assert_eq!(input.train.above.len() + input.train.equal.len(), 11_280);
    let mut g = c.benchmark_group("dr_epoch");
    g.sample_size(10);
    for width in [32usize, 128] {
        let cfg = DeepRankConfig {
            width,
            epochs: 1,
            restarts: 1,
            ..Default::default()
        };
        g.bench_with_input(BenchmarkId::new("width", width), &width, |b, _| {
            b.iter(|| {
                cfg.fit(
                    &input,
                    &Schedule::new(vec![1]),
                    &mut seeded(6),
                    &mut NullObserver,
                )
                .expect("fit")
            })
        });
    }
    g.finish();
}

/// The Newton and inner (CG) iterations of a fit's last report.
struct Counts(u64, u64);

impl dyad_core::observe::Observer<dyad_tensor_rank::PairModel> for Counts {
    fn checkpoint(
        &mut self,
        _at: dyad_core::observe::Checkpoint,
        m: &dyad_tensor_rank::PairModel,
    ) -> dyad_core::observe::Control {
        (self.0, self.1) = (m.iterations, m.inner_iterations);
        dyad_core::observe::Control::Continue
    }
}

/// One TR fit (spec §3.4: finite Newton, Jacobi-preconditioned CG) per λ of the paper
/// profile's grid at the size of the DTD panel: 47 classes × 120 points, m = 100 features
/// around class centres, l = 1 (1,081 inequality and 47 equality labels), the symmetrised
/// 8-NN graph shared across fits (as the harness shares it), one thread. The paper profile
/// fits 30 candidates (10 λ × 3 k) per l and repeat and keeps one, so this says where a TR
/// cell's model selection goes: its Newton and CG counts per λ are printed before timing.
fn tr_fit(c: &mut Criterion) {
    use dyad_core::Schedule;
    use dyad_core::observe::NullObserver;
    use dyad_tensor_rank::{PairRanker, TransductiveConfig};
    use std::sync::Arc;
    let mut input = dtd_like(7, 1);
    input.neighbours = Some(Arc::new(knn(input.x.view(), 8, 1).expect("kNN")));
    let schedule = Schedule::new(vec![0, 1_000]);
    let mut g = c.benchmark_group("tr_fit");
    g.sample_size(10);
    for lambda in [1.0, 1e-2, 1e-4, 1e-7] {
        let cfg = TransductiveConfig {
            lambda,
            ..Default::default()
        };
        let mut counts = Counts(0, 0);
        cfg.fit(&input, &schedule, &mut seeded(8), &mut counts)
            .expect("fit");
        eprintln!(
            "tr_fit lambda = {lambda:e}: {} Newton iterations, {} CG iterations",
            counts.0, counts.1
        );
        g.bench_with_input(BenchmarkId::new("lambda", lambda), &lambda, |b, _| {
            b.iter(|| {
                cfg.fit(&input, &schedule, &mut seeded(8), &mut NullObserver)
                    .expect("fit")
            })
        });
    }
    g.finish();
}

/// TR's model selection at one x value as the paper profile runs it: the λ grid of
/// `fig2-classes` (10⁻⁷ … 100, k = 8) on DTD's shape (l = 1), each candidate from f = 0
/// (cold) or, from the largest λ down, from the previous λ's solution (warm: `warm_start` of
/// `[protocol.pair_ranking]`). Prints both paths' Newton and CG counts (exact) and the
/// largest relative difference of their optima's objectives; benches the warm path (the cold
/// one is the sum of `tr_fit`'s candidates). Full KR is not warm-started: a prototype took 32
/// Newton / 465 CG iterations along its grid (10⁻⁶ … 100, 564 of these points) against 35 /
/// 574 cold, its finite Newton needing few iterations from any start.
fn warm_path(c: &mut Criterion) {
    use dyad_core::Schedule;
    use dyad_core::observe::{Checkpoint, Control, Observer};
    use dyad_tensor_rank::{PairInput, PairModel, PairRanker, TransductiveConfig};
    use std::sync::Arc;
    struct Last(Option<PairModel>);
    impl Observer<PairModel> for Last {
        fn checkpoint(&mut self, _at: Checkpoint, m: &PairModel) -> Control {
            self.0 = Some(m.clone());
            Control::Continue
        }
    }
    let schedule = Schedule::new(vec![0, 1_000]);
    let path = |input: &mut PairInput,
                grid: &[f64],
                make: &dyn Fn(f64) -> Box<dyn PairRanker>,
                warm: bool| {
        input.start = None;
        let mut out = Vec::new();
        for &lambda in grid {
            let mut last = Last(None);
            make(lambda)
                .fit(input, &schedule, &mut seeded(8), &mut last)
                .expect("fit");
            let m = last.0.expect("a report");
            if warm {
                input.start = Some(Arc::new(m.clone()));
            }
            out.push(m);
        }
        input.start = None;
        out
    };
    let compare = |name: &str,
                   input: &mut PairInput,
                   grid: &[f64],
                   make: &dyn Fn(f64) -> Box<dyn PairRanker>| {
        let t = std::time::Instant::now();
        let cold = path(input, grid, make, false);
        let cold_s = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let warm = path(input, grid, make, true);
        let warm_s = t.elapsed().as_secs_f64();
        let count = |p: &[PairModel]| -> (u64, u64) {
            p.iter().fold((0, 0), |(a, b), m| {
                (a + m.iterations, b + m.inner_iterations)
            })
        };
        let worst = cold
            .iter()
            .zip(&warm)
            .map(|(c, w)| (c.objective - w.objective).abs() / c.objective)
            .fold(0.0, f64::max);
        let ((cn, cc), (wn, wc)) = (count(&cold), count(&warm));
        eprintln!(
            "{name} path: cold {cn} Newton / {cc} CG iterations ({cold_s:.1} s), warm {wn} / {wc} \
             ({warm_s:.1} s); largest relative objective difference {worst:.1e}"
        );
    };
    // DTD's shape with classes that overlap (noise 1.7 on top of the 0.3 around the
    // centres): the 8-NN graph then links the classes, as on real features, so the optimum
    // trades hinges against the regulariser (with separate classes E = 0 is reached by any f
    // constant on each class that orders them, and the path says nothing).
    let mut input = dtd_like(7, 1);
    let mut rng = seeded(9);
    input
        .x
        .mapv_inplace(|v| v + 1.7 * rng.random_range(-1.0..1.0));
    input.neighbours = Some(Arc::new(knn(input.x.view(), 8, 1).expect("kNN")));
    let tr_grid = [100.0, 10.0, 1.0, 0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7];
    let tr = |lambda: f64| -> Box<dyn PairRanker> {
        Box::new(TransductiveConfig {
            lambda,
            ..Default::default()
        })
    };
    compare("TR", &mut input, &tr_grid, &tr);
    let mut g = c.benchmark_group("warm_path");
    g.sample_size(10);
    g.bench_function("tr", |b| b.iter(|| path(&mut input, &tr_grid, &tr, true)));
    g.finish();
}

/// Whether the benchmark filter given on the command line (`cargo bench -- FILTER`; none:
/// every group) can select `group`: setup work printed outside criterion's timing (the fits
/// of [`kr_fit`]) is skipped when another group is asked for.
fn selected(group: &str) -> bool {
    // Criterion's options that take a value as the next argument (`--save-baseline main`):
    // that value is no filter.
    const WITH_VALUE: [&str; 14] = [
        "--save-baseline",
        "--baseline",
        "--load-baseline",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--plotting-backend",
        "--output-format",
        "--color",
        "--profile-time",
    ];
    let mut filters = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if WITH_VALUE.contains(&a.as_str()) {
            args.next();
        } else if !a.starts_with('-') {
            filters.push(a);
        }
    }
    filters.is_empty()
        || filters
            .iter()
            .any(|f| group.contains(f.as_str()) || f.contains(group))
}

/// Full KR at `kr-full`'s shape (S-CLASS-like roll, 10 classes, l = 3, 8-NN graph): one fit
/// per λ of its grid's decades at the paper's n = 1,500, printing the Newton and CG counts
/// (exact) and the fit's time (one run); benches the λ most often chosen (10⁻⁶) at the quick
/// profile's n = 400. Full KR is the second-largest solver cost of the recorded paper profile
/// (docs/speed.md): this says where a fit's time goes.
fn kr_fit(c: &mut Criterion) {
    use dyad_core::Schedule;
    use dyad_core::observe::NullObserver;
    use dyad_tensor_rank::{KernelRankConfig, PairInput, PairRanker};
    use std::sync::Arc;
    let input = |n: usize| {
        let data = swiss_roll(n, 3);
        let pairs = class_pairs(
            &data.class,
            &data.rank,
            3,
            &Default::default(),
            &mut seeded(4),
        )
        .expect("pairs");
        let mut input = PairInput::new(data.x, pairs);
        input.neighbours = Some(Arc::new(knn(input.x.view(), 8, 1).expect("kNN")));
        input
    };
    let schedule = Schedule::new(vec![0, 1_000]);
    let cfg = |lambda: f64| KernelRankConfig {
        lambda,
        ..Default::default()
    };
    let paper = input(1_500);
    // The five fits take minutes: only when this group runs (no filter, or one naming it).
    let lambdas: &[f64] = if selected("kr_fit") {
        &[1e-6, 1e-4, 1e-2, 1.0, 100.0]
    } else {
        &[]
    };
    for &lambda in lambdas {
        let mut counts = Counts(0, 0);
        let t = std::time::Instant::now();
        cfg(lambda)
            .fit(&paper, &schedule, &mut seeded(8), &mut counts)
            .expect("fit");
        eprintln!(
            "kr_fit n = 1500, lambda = {lambda:e}: {} Newton iterations, {} CG iterations, {:.1} s",
            counts.0,
            counts.1,
            t.elapsed().as_secs_f64()
        );
    }
    let quick = input(400);
    let mut g = c.benchmark_group("kr_fit");
    g.sample_size(10);
    g.bench_function("n400_lambda1e-6", |b| {
        b.iter(|| {
            cfg(1e-6)
                .fit(&quick, &schedule, &mut seeded(8), &mut NullObserver)
                .expect("fit")
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    gradient,
    product_throughput,
    full_kr_regulariser,
    dr_epoch,
    tr_fit,
    warm_path,
    kr_fit
);
criterion_main!(benches);
