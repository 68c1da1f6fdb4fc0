//! Full KR against low-rank KR in full KR's own objective (issue 42 §4): an audit found that
//! low-rank KR (`K = BQBᵀ`, `p = 50`, gradient descent from `B = ones`, at most 1,000 steps)
//! lands next to TR on every panel while full KR (the `n × n` kernel, Newton–CG) lands far
//! below both, and that a fit stopped at its iteration cap is not a converged fit. Both
//! solvers minimise the same function, so one of the two readings must hold: either full KR
//! is not at the optimum of Eq. (18), or low-rank KR stops somewhere else. This test tells
//! which, outside both solvers.
//!
//! **What is checked.** On small S-CLASS problems (the `s-class` provider's Swiss roll,
//! 10 classes in arbitrary order, `R^100`; `n` = 100–300, `l` = 1, 3, 10 labels per class
//! pair and per class, the §4.1 protocol; the kr-full specs' data and sizes) both solvers are
//! fitted on the same 8-NN graph (one kNN search handed to both, as the harness does), the
//! same pairs and each `λ` of the KR grid `{1e-6, …, 1e2}`, with the experiments' settings
//! (full KR's defaults, low-rank `p = 50`, `max_iter` 1,000). Then, by hand (dense `L`, plain
//! `ndarray`, nothing shared with either solver):
//!
//! 1. `J(K) = Σ_P max(0, 1 − K_ij)² + Σ_O K_ij² + λ tr(KᵀLK)` (full KR's objective,
//!    `kernel_full.rs`) at full KR's `K*`, at `K_lr = BQBᵀ` of the low-rank fit, at TR's
//!    kernel `f1ᵀ − 1fᵀ` (TR at `λ_TR = nλ`, the value at which KR restricted to such
//!    kernels *is* TR, spec §3.5) and at the common start `K = 0` (`J(0) = |P|`; `B = ones`
//!    gives `K = 0`). Asserted: `J(K*) ≤ J(K_lr)`, `J(K*) ≤ J(K_TR)` (relative rounding
//!    `1e-9`), `J(K*) ≤ J(K_lr) ≤ J(0)`; each solver's reported objective equals `J` at its
//!    kernel (full KR `1e-9`; low-rank `1e-6` of `J(0)`: its `tr(QᵀMQG)` cancels heavily near
//!    `B = ones`, measured up to 1.1e-7), so the two really minimise the same function.
//! 2. Full KR's stationarity residual `‖P(G) + λ(LK + KL)‖ / ‖P(G)‖` (as `kr_optimality`)
//!    below `1e-9` for every fit, and no fit at its Newton cap.
//! 3. For every low-rank fit: whether it stopped at its cap, the relative decrease of `E`
//!    over its last 100 steps, `‖∇_B E‖` at the end against the start, `J(K_lr)/J(K_TR) − 1`
//!    and the share of `‖K_lr‖²` off the TR family `{f1ᵀ − 1fᵀ}` (asserted below `1e-8`).
//!    A second test runs the same descent from a random `B`.
//!
//! The table (`cargo nextest run … --no-capture` prints it) has Kendall's τ on all points of
//! the three fits.
//!
//! **Measured** (2 of the 45 rows: `n = 200`, `l = 3`):
//!
//! ```text
//!  λ     J(K*)    J(K_lr)  J(K_TR)  J_lr/J*−1  J_lr/J_TR−1 steps       dec100  τ*    τ_lr  τ_TR
//!  1e-6  2.955e-4 9.300e-2 8.347e-3 3.1e2      1.0e1       1000 (cap)  5.3e-2  0.784 0.620 0.878
//!  1e-2  2.886e0  3.226e1  3.226e1  1.0e1      6.3e-6      93          -       0.783 0.897 0.897
//! ```
//!
//! (full table: see the commit message of this test and `--no-capture`).
//!
//! **Findings.**
//!
//! * Full KR is at the optimum of Eq. (18): residual ≤ 5e-9 in every fit (most ≤ 1e-11), 3–5 Newton
//!   iterations of 100, and `J(K*)` is 0.3–500 times *below* both `J(K_lr)` and `J(K_TR)`.
//!   Its low τ (0.57 at `n = 300` against TR's 0.86) is the optimum of its objective, not a
//!   solver failure. `K*` is far from TR-shaped (4–46 % of `‖K*‖²` off the TR family); the
//!   read-out `K1/n` sees only its TR part.
//! * Low-rank KR from `B = ones` never leaves the TR family: `K_lr = f1ᵀ − 1fᵀ` to a share
//!   ≤ 5e-11 of `‖K_lr‖²` off it, in every fit. Where it converges it lands on TR's optimum
//!   at `λ_TR = nλ` (`J(K_lr)/J(K_TR) − 1` between −2.4e-7 and 5e-3, τ within 0.01 of TR's):
//!   "lands next to TR" is TR, through the factorisation's starting point, not a property of
//!   the KR objective. (Why: near `B = ones` the TR part of `BQBᵀ` is first order in the
//!   deviation from `ones`, weighted by `1ᵀQ` with `‖1ᵀQ‖² = 41,650`; the rest is second
//!   order, and its gradient vanishes with it.) From a random `B` the same descent leaves the
//!   family and goes below TR's energy (second test).
//! * At its cap low-rank KR is not converged: the fits at the cap (all at `λ ≤ 1e-4`) still
//!   lose 0.8–10 % of `E` per 100 steps and sit up to 10× above TR's energy (on the TR
//!   family, short of its optimum), with τ 0.25–0.33 below TR's. `‖∇E‖` at the cap is
//!   4e-4–6e-4 of the start's, which says little: the start's gradient is huge.
//! * Stopping before the cap is not convergence either: the relative-decrease rule (one
//!   step below 1e-6) ended fits at `λ = 1e-6` after 365–566 steps while they were still
//!   losing up to 9 % per 100 steps at 1.4–14× TR's energy (an Armijo step after heavy
//!   backtracking decreases little). Changing the rule changes results, so it is reported
//!   here, not changed.

//! * **TR's Newton-CG was not safe** (found by this test, fixed since): TR (`transductive.rs`)
//!   accepted a Newton step whose objective went up. Where the CG solve stopped at its cap on
//!   the nearly singular system (the Jacobi-preconditioned residuals leave the Hessian's
//!   range along the graph's constants), the step was huge: at `n = 300, l = 3, λ_TR = 30`
//!   the objective sat at 84.16 for two iterations, then one step sent it to 4.9e7
//!   (`J(0)` = 135) with `f ≈ 3.4e10 + O(70)`. In `tr_newton_never_ends_above_its_start`,
//!   25 of 189 small fits ended so (objective above the start, negative, or `|f| > 1e3`), τ
//!   falling by up to 0.6. Now the solver undoes a step that raises `E` beyond rounding
//!   (then tries the steepest descent direction once) and TR keeps every CG iterate off the
//!   constants of each group of its graph (`TrProblem::project`): 0 of 189 fits are broken,
//!   and the case above ends at τ_TR 0.700 (0.097 before). Full KR's fits (the same Newton
//!   code) came out identical.

use dyad_core::kendall::kendall_tau;
use dyad_core::{Schedule, seeded};
use dyad_datasets::pair_ranking::Order;
use dyad_datasets::pair_ranking::standin::{ClassOrder, SClassSpec};
use dyad_kernels::fixtures::Models;
use dyad_tensor_rank::synthetic::class_pairs;
use dyad_tensor_rank::{
    Connect, GraphSpec, KernelRankConfig, KnnGraph, Laplacian, LowRankKrConfig, LowRankProblem,
    PairInput, PairKernel, PairModel, PairRanker, Pairs, Sigma, TransductiveConfig, knn,
};
use ndarray::{Array1, Array2, Axis};
use rand::Rng as _;
use std::collections::HashSet;
use std::sync::Arc;

/// Graph neighbours (the experiments' k).
const K_NN: usize = 8;
/// Low-rank KR's rank (the paper's p).
const RANK: usize = 50;
/// Low-rank KR's iteration cap in the paper profile.
const CAP: u64 = 1000;
/// The KR λ grid of kr-full and Fig. 2.
const LAMBDAS: [f64; 9] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0];
/// `(n, labels per class, seed)` of the S-CLASS draws.
const PROBLEMS: [(usize, usize, u64); 5] = [
    (100, 3, 41),
    (200, 1, 44),
    (200, 3, 42),
    (300, 3, 43),
    (300, 10, 45),
];
/// Allowed `|E_reported − J(BQBᵀ)| / J(0)` of low-rank KR.
const LOW_RANK_DRIFT: f64 = 1e-6;
/// Relative rounding allowed in `J(K*) ≤ J(other)`.
const ROUNDING: f64 = 1e-9;
/// Bound on full KR's relative stationarity residual (measured: see the module docs).
const RESIDUAL_BOUND: f64 = 1e-6;
/// Bound on the share of `‖K_lr‖²` off the TR family (measured ≤ 5e-11).
const OFF_TR_BOUND: f64 = 1e-8;

struct Problem {
    input: PairInput,
    truth: Vec<f64>,
    /// The graph both solvers build, as a dense matrix.
    l: Array2<f64>,
    /// The same graph, sparse (for [`LowRankProblem`]).
    laplacian: Laplacian,
}

fn graph_spec() -> GraphSpec {
    GraphSpec {
        k: K_NN,
        connect: Connect::Or,
        sigma: Sigma::Adaptive,
        threads: 1,
    }
}

/// An S-CLASS draw of `n` points with `labels` labelled pairs per class pair and per class (the
/// §4.1 protocol), its kNN graph of `k` neighbours handed to the solvers, and the true order.
fn s_class(n: usize, labels: usize, seed: u64, k: usize) -> (PairInput, Arc<KnnGraph>, Vec<f64>) {
    let data = SClassSpec {
        n,
        order: ClassOrder::Arbitrary,
        seed,
        ..Default::default()
    }
    .generate()
    .expect("s-class");
    let Order::Classes { rank } = &data.set.order else {
        panic!("s-class orders classes");
    };
    let truth: Vec<f64> = data.set.group.iter().map(|&c| rank[c as usize]).collect();
    let train = class_pairs(
        &data.set.group,
        &truth,
        labels,
        &HashSet::new(),
        &mut seeded(seed + 1000),
    )
    .expect("labels");
    let graph = Arc::new(knn(data.set.x.view(), k, 1).expect("knn"));
    let mut input = PairInput::new(data.set.x, train);
    input.neighbours = Some(Arc::clone(&graph));
    (input, graph, truth)
}

fn problem(n: usize, labels: usize, seed: u64) -> Problem {
    let (input, graph, truth) = s_class(n, labels, seed, K_NN);
    let laplacian = Laplacian::from_knn(&graph, &graph_spec()).expect("laplacian");
    let l = laplacian.to_dense();
    Problem {
        input,
        truth,
        l,
        laplacian,
    }
}

/// Every model the ranker reports on `schedule`, the last one last.
fn fit(r: &dyn PairRanker, input: &PairInput, schedule: Schedule) -> Vec<PairModel> {
    let mut obs = Models::<PairModel>::default();
    r.fit(input, &schedule, &mut seeded(1), &mut obs)
        .expect("fit");
    assert!(obs.seen.last().expect("a report").0.last);
    obs.seen.into_iter().map(|(_, m)| m).collect()
}

/// Full KR at `λ` with the experiments' settings, on the graph `input` carries.
fn full_kr(input: &PairInput, lambda: f64) -> Vec<PairModel> {
    fit(
        &KernelRankConfig {
            lambda,
            k: K_NN,
            ..Default::default()
        },
        input,
        Schedule::last_only(CAP),
    )
}

/// TR at `λ_TR` on the graph `input` carries.
fn tr_at(input: &PairInput, lambda_tr: f64) -> Vec<PairModel> {
    fit(
        &TransductiveConfig {
            lambda: lambda_tr,
            k: K_NN,
            ..Default::default()
        },
        input,
        Schedule::last_only(CAP),
    )
}

/// Full KR's objective, Eq. (18), at any `n × n` matrix `k`.
fn energy(k: &Array2<f64>, l: &Array2<f64>, lambda: f64, pairs: &Pairs) -> f64 {
    let mut loss = 0.0;
    for &(i, j) in &pairs.above {
        loss += (1.0 - k[[i, j]]).max(0.0).powi(2);
    }
    for &(i, j) in &pairs.equal {
        loss += k[[i, j]].powi(2);
    }
    loss + lambda * (k * &l.dot(k)).sum()
}

/// The entry-wise gradient of the data terms at `k` (not projected).
fn data_gradient(k: &Array2<f64>, pairs: &Pairs) -> Array2<f64> {
    let mut g = Array2::<f64>::zeros(k.dim());
    for &(i, j) in &pairs.above {
        g[[i, j]] -= 2.0 * (1.0 - k[[i, j]]).max(0.0);
    }
    for &(i, j) in &pairs.equal {
        g[[i, j]] += 2.0 * k[[i, j]];
    }
    g
}

fn frobenius(a: &Array2<f64>) -> f64 {
    a.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// `‖P(G) + λ(LK + KL)‖ / ‖P(G)‖`: zero exactly at the minimiser over antisymmetric `K`
/// (`kr_optimality`).
fn residual(k: &Array2<f64>, l: &Array2<f64>, lambda: f64, pairs: &Pairs) -> f64 {
    let g = data_gradient(k, pairs);
    let pg = (&g - &g.t()) * 0.5;
    let r = &pg + &((&l.dot(k) + &k.dot(l)) * lambda);
    frobenius(&r) / frobenius(&pg)
}

/// `Q_ab = sign(b − a)` (Eq. 21).
fn q_dense(p: usize) -> Array2<f64> {
    Array2::from_shape_fn((p, p), |(a, b)| match a.cmp(&b) {
        std::cmp::Ordering::Less => 1.0,
        std::cmp::Ordering::Greater => -1.0,
        std::cmp::Ordering::Equal => 0.0,
    })
}

/// `∇_B J(BQBᵀ) = G B Qᵀ + Gᵀ B Q` with `G` the entry-wise gradient of `J` at `K = BQBᵀ`.
fn low_rank_gradient(b: &Array2<f64>, l: &Array2<f64>, lambda: f64, pairs: &Pairs) -> Array2<f64> {
    let q = q_dense(b.ncols());
    let k = b.dot(&q).dot(&b.t());
    let g = data_gradient(&k, pairs) + l.dot(&k) * (2.0 * lambda);
    g.dot(b).dot(&q.t()) + g.t().dot(b).dot(&q)
}

/// `f1ᵀ − 1fᵀ`.
fn tr_kernel(f: &Array1<f64>) -> Array2<f64> {
    let n = f.len();
    Array2::from_shape_fn((n, n), |(i, j)| f[i] - f[j])
}

/// The share of `‖K‖²` off the TR family `{f1ᵀ − 1fᵀ}`: for antisymmetric `K` the nearest
/// member has `f = K1/n` (up to a constant), so this is `‖K − T(K1/n)‖² / ‖K‖²`.
fn off_tr_share(k: &Array2<f64>) -> f64 {
    let f = k.sum_axis(Axis(1)) / k.nrows() as f64;
    (frobenius(&(k - &tr_kernel(&f))) / frobenius(k)).powi(2)
}

/// The audit's comparison: `J` at full KR's optimum is not above `J` at another kernel
/// (relative rounding [`ROUNDING`]).
fn not_above(j_opt: f64, j_other: f64, what: &str) -> Result<(), String> {
    if j_opt <= j_other + ROUNDING * j_other.abs() {
        Ok(())
    } else {
        Err(format!(
            "J(K*) = {j_opt:.6e} above J({what}) = {j_other:.6e}: full KR is not at its optimum"
        ))
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
}

/// One row of the table.
struct Row {
    n: usize,
    labels: usize,
    lambda: f64,
    j0: f64,
    j_star: f64,
    j_lr: f64,
    j_tr: f64,
    steps: u64,
    at_cap: bool,
    /// Relative decrease of `E` over the last 100 steps (runs of at least 200 steps).
    dec100: Option<f64>,
    grad_ratio: f64,
    off_tr_star: f64,
    off_tr_lr: f64,
    newton: u64,
    residual: f64,
    tau_star: f64,
    tau_lr: f64,
    tau_tr: f64,
}

fn print_table(rows: &[Row]) {
    eprintln!(
        "{:>4} {:>3} {:>6} | {:>9} {:>9} {:>9} {:>9} | {:>9} {:>10} | {:>5} {:>3} {:>8} {:>8} | \
         {:>8} {:>8} | {:>2} {:>7} | {:>6} {:>6} {:>6}",
        "n",
        "l",
        "lambda",
        "J(0)",
        "J(K*)",
        "J(K_lr)",
        "J(K_TR)",
        "Jlr/J*-1",
        "Jlr/Jtr-1",
        "steps",
        "cap",
        "dec100",
        "|g|/|g0|",
        "offTR*",
        "offTRlr",
        "Nt",
        "resid*",
        "tau*",
        "tau_lr",
        "tau_TR"
    );
    for r in rows {
        let dec = r
            .dec100
            .map_or_else(|| "-".to_string(), |d| format!("{d:.1e}"));
        eprintln!(
            "{:>4} {:>3} {:>6.0e} | {:>9.3e} {:>9.3e} {:>9.3e} {:>9.3e} | {:>9.2e} {:>10.2e} | \
             {:>5} {:>3} {:>8} {:>8.1e} | {:>8.1e} {:>8.1e} | {:>2} {:>7.0e} | {:>6.3} {:>6.3} \
             {:>6.3}",
            r.n,
            r.labels,
            r.lambda,
            r.j0,
            r.j_star,
            r.j_lr,
            r.j_tr,
            r.j_lr / r.j_star - 1.0,
            r.j_lr / r.j_tr - 1.0,
            r.steps,
            if r.at_cap { "cap" } else { "-" },
            dec,
            r.grad_ratio,
            r.off_tr_star,
            r.off_tr_lr,
            r.newton,
            r.residual,
            r.tau_star,
            r.tau_lr,
            r.tau_tr
        );
    }
}

#[test]
fn full_kr_optimum_is_below_low_rank_kr_and_tr_in_full_kr_objective_and_stationary() {
    let full_cap = KernelRankConfig::default().max_iter;
    let every_step = Schedule::new((0..=CAP).collect());
    let mut rows = Vec::new();
    let mut checked_failure = false;
    let mut tr_broken_cases = Vec::new();
    for (n, labels, seed) in PROBLEMS {
        let pb = problem(n, labels, seed);
        let pairs = &pb.input.train;
        let tau = |s: &Array1<f64>| kendall_tau(s.as_slice().expect("contiguous"), &pb.truth);
        // J(0) = |P| whatever λ.
        let j0 = energy(&Array2::zeros((n, n)), &pb.l, 1.0, pairs);
        assert_eq!(j0, pairs.above.len() as f64, "J(0) = |P|");
        let g0 = |lambda| {
            frobenius(&low_rank_gradient(
                &Array2::ones((n, RANK)),
                &pb.l,
                lambda,
                pairs,
            ))
        };
        for lambda in LAMBDAS {
            let case = format!("n {n}, l {labels}, lambda {lambda:e}");

            // Full KR.
            let full = full_kr(&pb.input, lambda);
            let fm = full.last().expect("a model");
            let Some(PairKernel::Dense(k_star)) = &fm.kernel else {
                panic!("{case}: full KR reports its kernel");
            };
            let j_star = energy(k_star, &pb.l, lambda, pairs);
            assert!(
                rel(fm.objective, j_star) <= 1e-9,
                "{case}: full KR reports {:.6e}, J(K*) = {j_star:.6e}",
                fm.objective
            );
            let res = residual(k_star, &pb.l, lambda, pairs);
            assert!(
                res < RESIDUAL_BOUND,
                "{case}: full KR's stationarity residual {res:e}"
            );
            assert!(
                fm.iterations < full_cap,
                "{case}: full KR stopped at its Newton cap"
            );

            // Low-rank KR, every step reported.
            let lr = fit(
                &LowRankKrConfig {
                    lambda,
                    k: K_NN,
                    rank: RANK,
                    max_iter: CAP,
                    ..Default::default()
                },
                &pb.input,
                every_step.clone(),
            );
            let lm = lr.last().expect("a model");
            let Some(PairKernel::LowRank(b)) = &lm.kernel else {
                panic!("{case}: low-rank KR reports B");
            };
            assert_eq!(b.ncols(), RANK);
            let k_lr = b.dot(&q_dense(RANK)).dot(&b.t());
            let j_lr = energy(&k_lr, &pb.l, lambda, pairs);
            // Relative to J(0) = |P|: near B = ones low-rank KR's tr(QᵀMQG) cancels (module
            // docs); measured up to 1.1e-7 (n = 300, λ = 100), 4 to 5e-8 elsewhere.
            let drift = (lm.objective - j_lr).abs() / j0;
            assert!(
                drift <= LOW_RANK_DRIFT,
                "{case}: low-rank KR reports {:.9e}, J(BQBᵀ) = {j_lr:.9e} ({drift:.2e} of J(0))",
                lm.objective
            );
            assert_eq!(lr[0].objective, j0, "{case}: B = ones is K = 0");
            assert!(
                lr.windows(2).all(|w| w[1].objective <= w[0].objective),
                "{case}: low-rank KR's energy is non-increasing"
            );
            let steps = lm.iterations;
            let dec100 = (steps >= 200).then(|| {
                let before = lr
                    .iter()
                    .find(|m| m.iterations == steps - 100)
                    .expect("every step reported");
                (before.objective - lm.objective) / lm.objective
            });

            // TR at λ_TR = nλ: the optimum of J over the TR family.
            let tr = tr_at(&pb.input, lambda * n as f64);
            let f_tr = &tr.last().expect("a model").scores;
            let j_tr = energy(&tr_kernel(f_tr), &pb.l, lambda, pairs);

            // TR's former Newton defect (module docs): a fit that ends above J(0) is not
            // TR's optimum, so it could not stand for the TR family.
            let tr_broken = j_tr > j0;
            if tr_broken {
                tr_broken_cases.push(case.clone());
            }

            // The audit's checks.
            not_above(j_star, j_lr, "K_lr").unwrap_or_else(|e| panic!("{case}: {e}"));
            not_above(j_star, j_tr, "K_TR").unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(j_star <= j0 && j_lr <= j0, "{case}: below the start");
            let off_tr_lr = off_tr_share(&k_lr);
            assert!(
                off_tr_lr < OFF_TR_BOUND,
                "{case}: low-rank KR left the TR family ({off_tr_lr:e} of ‖K‖² off it): the \
                 finding of the module docs no longer holds"
            );
            if !tr_broken {
                assert!(
                    j_lr >= j_tr * (1.0 - 1e-5),
                    "{case}: low-rank KR below TR's optimum ({j_lr:e} < {j_tr:e}) on the TR family"
                );
            }

            // The checks can fail: a kernel beyond K_lr, away from K*, is worse than K_lr
            // (convexity), and off the optimum the residual is not small.
            if !checked_failure {
                let worse = &k_lr + &((&k_lr - k_star) * 0.5);
                let j_worse = energy(&worse, &pb.l, lambda, pairs);
                assert!(not_above(j_worse, j_lr, "K_lr").is_err());
                assert!(residual(&worse, &pb.l, lambda, pairs) > 1e-3);
                checked_failure = true;
            }

            rows.push(Row {
                n,
                labels,
                lambda,
                j0,
                j_star,
                j_lr,
                j_tr,
                steps,
                at_cap: steps >= CAP,
                dec100,
                grad_ratio: frobenius(&low_rank_gradient(b, &pb.l, lambda, pairs)) / g0(lambda),
                off_tr_star: off_tr_share(k_star),
                off_tr_lr,
                newton: fm.iterations,
                residual: res,
                tau_star: tau(&fm.scores),
                tau_lr: tau(&lm.scores),
                tau_tr: tau(f_tr),
            });
        }
    }
    print_table(&rows);
    let capped: Vec<&Row> = rows.iter().filter(|r| r.at_cap).collect();
    let worst = rows.iter().map(|r| r.residual).fold(0.0, f64::max);
    eprintln!(
        "fits at their cap: low-rank KR {} of {} (max_iter {CAP}), full KR 0 of {} (Newton \
         cap {full_cap}); largest full-KR residual {worst:.1e}",
        capped.len(),
        rows.len(),
        rows.len()
    );
    for r in &capped {
        eprintln!(
            "  at the cap: n {} l {} lambda {:e}: E still falls {:.1e} per 100 steps, J_lr/J_TR \
             = {:.2}, tau_lr {:.3} vs TR {:.3}",
            r.n,
            r.labels,
            r.lambda,
            r.dec100.unwrap_or(f64::NAN),
            r.j_lr / r.j_tr,
            r.tau_lr,
            r.tau_tr
        );
    }
    assert!(
        !capped.is_empty(),
        "the grid exercises low-rank KR at its cap"
    );
    assert!(
        tr_broken_cases.is_empty(),
        "TR fits that end above J(0) (TR's Newton defect, module docs): {tr_broken_cases:?}"
    );
}

/// The same Armijo descent as low-rank KR (η₀ = 1, ×0.5 / ×1.2, c = 1e-4, 60 trials) from
/// `b`, `steps` steps, through the public [`LowRankProblem`].
fn descend(prob: &LowRankProblem, mut b: Array2<f64>, steps: u64) -> Array2<f64> {
    let mut ws = prob.workspace();
    let mut trial_ws = prob.workspace();
    let mut g = Array2::zeros(b.dim());
    let mut e = prob.objective_and_gradient(b.view(), &mut ws, g.view_mut());
    let mut eta = 1.0;
    for _ in 0..steps {
        let gn2: f64 = g.iter().map(|v| v * v).sum();
        let mut accepted = false;
        for _ in 0..60 {
            let trial = &b - &(&g * eta);
            if prob.objective(trial.view(), &mut trial_ws) <= e - 1e-4 * eta * gn2 {
                b = trial;
                eta *= 1.2;
                accepted = true;
                break;
            }
            eta *= 0.5;
        }
        if !accepted {
            break;
        }
        e = prob.objective_and_gradient(b.view(), &mut ws, g.view_mut());
    }
    b
}

/// What pins low-rank KR to TR is its start, not the rank: the same descent on the same
/// `E(B)` (`p = 50`) from a small random `B` leaves the TR family and goes below TR's energy
/// (measured at n = 200, l = 3, λ = 1e-2 after 2,000 steps: J = 5.03 against J(K_TR) = 32.3
/// and J(K*) = 2.89, 13 % of ‖K‖² off the TR family; after 20,000 steps J = 3.86, τ 0.765
/// against full KR's 0.783 and TR's 0.897).
#[test]
fn low_rank_kr_from_a_random_start_leaves_the_tr_family_toward_full_kr() {
    let (n, labels, seed, lambda) = (200, 3, 42, 1e-2);
    let pb = problem(n, labels, seed);
    let pairs = &pb.input.train;
    let full = full_kr(&pb.input, lambda);
    let Some(PairKernel::Dense(k_star)) = &full.last().expect("a model").kernel else {
        panic!("full KR reports its kernel");
    };
    let j_star = energy(k_star, &pb.l, lambda, pairs);
    let tr = tr_at(&pb.input, lambda * n as f64);
    let j_tr = energy(
        &tr_kernel(&tr.last().expect("a model").scores),
        &pb.l,
        lambda,
        pairs,
    );
    let prob = LowRankProblem::new(pb.laplacian.clone(), lambda, pairs, RANK);
    let mut rng = seeded(7);
    let b0 = Array2::from_shape_fn((n, RANK), |_| rng.random_range(-0.1..0.1));
    let b = descend(&prob, b0, 2000);
    let k = b.dot(&q_dense(RANK)).dot(&b.t());
    let j = energy(&k, &pb.l, lambda, pairs);
    let off = off_tr_share(&k);
    let f = k.sum_axis(Axis(1));
    let tau = kendall_tau(f.as_slice().expect("contiguous"), &pb.truth);
    eprintln!(
        "random start, 2000 steps: J {j:.4e} (J(K*) {j_star:.4e}, J(K_TR) {j_tr:.4e}), off the \
         TR family {off:.3}, tau {tau:.3}"
    );
    not_above(j_star, j, "K_lr from a random start").unwrap();
    assert!(j < 0.5 * j_tr, "below TR's energy: {j:e} vs {j_tr:e}");
    assert!(off > 0.01, "off the TR family: {off:e}");
}

/// No transductive ranking fit, on S-CLASS problems of `n` points with `l` labels per class,
/// kNN graphs of `k` = 4, 8, 16 and `λ` from 1e-4 to 100, ends *above* its start `f = 0`,
/// below 0 or with `|f| > 1e3` (TR's former Newton-CG defect, module docs: 25 of these 189
/// fits did).
#[test]
fn tr_newton_never_ends_above_its_start() {
    let mut broken = Vec::new();
    let mut total = 0;
    for (n, seed) in [(300usize, 43u64), (1000, 7), (2000, 8)] {
        for labels in [1usize, 3, 10] {
            let (input, _, _) = s_class(n, labels, seed, 16);
            for k in [4usize, 8, 16] {
                for lambda in [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0] {
                    let tr = fit(
                        &TransductiveConfig {
                            lambda,
                            k,
                            ..Default::default()
                        },
                        &input,
                        Schedule::last_only(CAP),
                    );
                    let m = tr.last().expect("a model");
                    let fmax = m.scores.iter().fold(0.0f64, |a, v| a.max(v.abs()));
                    total += 1;
                    if fmax > 1e3
                        || m.objective > input.train.above.len() as f64
                        || m.objective < 0.0
                    {
                        eprintln!(
                            "TR broken: n {n} l {labels} k {k} lambda {lambda:e}: objective \
                             {:.3e}, |f| {fmax:.2e}, {} Newton / {} CG iterations",
                            m.objective, m.iterations, m.inner_iterations
                        );
                        broken.push(format!("n {n}, l {labels}, k {k}, lambda {lambda:e}"));
                    }
                }
            }
        }
    }
    assert_eq!(total, 189);
    assert!(
        broken.is_empty(),
        "TR fits above their start or below 0 ({} of {total}): {broken:?}",
        broken.len()
    );
}
