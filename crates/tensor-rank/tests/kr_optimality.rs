//! Full KR at its optimum: the first-order condition of Eq. (18) checked by hand, outside the
//! solver (spec §3.5). An independent check that the finite Newton method of
//! `tensor_rank::solver` stops at the minimiser, and of the identity that explains full KR's
//! read-out.
//!
//! **The condition.** `E(K) = Σ_P max(0, 1 − K_ij)² + Σ_O K_ij² + λ tr(KᵀLK)` over
//! antisymmetric `K`. Write `G` for the Frobenius gradient of the data terms taken entry-wise
//! (`G_ij −= 2 max(0, 1 − K_ij)` for `(i, j) ∈ P`, `G_ij += 2 K_ij` for `{i, j} ∈ O`) and
//! `P(X) = (X − Xᵀ)/2` for the projection onto antisymmetric matrices. The regulariser's
//! gradient is `2λLK`, projected `λ(LK − KᵀL) = λ(LK + KL)`. `E` is convex on the subspace,
//! so `K` is the minimiser iff
//!
//! ```text
//! P(G) + λ (LK + KL) = 0.
//! ```
//!
//! **The read-out.** Multiplying by `1` on the right and using `L1 = 0`:
//! `λ L(K1) = −P(G)1`. The scores of Eq. (25), `f = K1/(n + ε)`, are therefore a Laplacian
//! potential of the per-point net pair forces `−P(G)1/λ`, the same form as TR's scores (whose
//! forces are the hinge slopes of the labelled pairs) but with forces fixed by the whole
//! matrix problem. This is why full KR's τ in the kr-full experiment sits well below TR's
//! although the model is at its optimum (the description of
//! `experiments/tensor-ranking/kr-full.toml`).
//!
//! The finite Newton method terminates exactly on this piecewise-quadratic problem: the
//! residual measured here is about 1e-14 of the data gradient (1e-9 is asserted).
//!
//! Everything here is dense and plain (`L` as a matrix from its action on unit vectors,
//! `ndarray` products), sharing nothing with the blocked regulariser pass the solver uses.

use dyad_core::{Schedule, seeded};
use dyad_kernels::fixtures::Models;
use dyad_tensor_rank::{
    Connect, GraphSpec, KernelRankConfig, Laplacian, PairInput, PairKernel, PairModel, PairRanker,
    Pairs, Sigma, knn,
};
use ndarray::{Array1, Array2};
use rand::Rng as _;

const N: usize = 60;
const K_NN: usize = 5;

/// Points in the unit cube of R³ scored by the first coordinate plus noise; labelled pairs
/// drawn at random, some of them against the score (noisy labels keep hinges active at the
/// optimum), and a few equality pairs.
fn problem(seed: u64) -> PairInput {
    let mut rng = seeded(seed);
    let x = Array2::from_shape_fn((N, 3), |_| rng.random_range(0.0..1.0));
    let score: Vec<f64> = (0..N)
        .map(|i| x[[i, 0]] + 0.2 * rng.random_range(-1.0..1.0))
        .collect();
    let mut above = Vec::new();
    let mut equal = Vec::new();
    while above.len() < 80 {
        let (i, j) = (rng.random_range(0..N), rng.random_range(0..N));
        if i == j {
            continue;
        }
        let flip = rng.random_range(0.0..1.0) < 0.1;
        if (score[i] > score[j]) != flip {
            above.push((i, j));
        } else {
            above.push((j, i));
        }
    }
    while equal.len() < 15 {
        let (i, j) = (rng.random_range(0..N), rng.random_range(0..N));
        if i != j {
            equal.push((i.min(j), i.max(j)));
        }
    }
    PairInput::new(x, Pairs::new(above, equal))
}

fn fit(cfg: &KernelRankConfig, input: &PairInput) -> Array2<f64> {
    let mut obs = Models::<PairModel>::default();
    cfg.fit(
        input,
        &Schedule::last_only(1_000_000),
        &mut seeded(1),
        &mut obs,
    )
    .expect("fit");
    let (at, model) = obs.seen.pop().expect("a report");
    assert!(at.last);
    let Some(PairKernel::Dense(k)) = model.kernel else {
        panic!("full KR reports its kernel");
    };
    // The reported scores are the read-out of Eq. (25), K1/(n + ε): its rank-one correction
    // is a multiple of 1ᵀK1, zero for antisymmetric K.
    let want = k.sum_axis(ndarray::Axis(1)) / (N as f64 + cfg.epsilon);
    for (s, w) in model.scores.iter().zip(&want) {
        assert!((s - w).abs() <= 1e-12 * (1.0 + w.abs()), "{s} vs {w}");
    }
    k
}

/// The same graph as the config builds, as a dense matrix.
fn dense_laplacian(cfg: &KernelRankConfig, input: &PairInput) -> Array2<f64> {
    let spec = GraphSpec {
        k: cfg.k,
        connect: cfg.connect,
        sigma: cfg.sigma,
        threads: 1,
    };
    let g = knn(input.x.view(), cfg.k, 1).unwrap();
    let l = Laplacian::from_knn(&g, &spec).unwrap();
    let mut dense = Array2::zeros((N, N));
    let mut e = vec![0.0; N];
    let mut col = vec![0.0; N];
    for j in 0..N {
        e.fill(0.0);
        e[j] = 1.0;
        l.apply(&e, &mut col);
        dense.column_mut(j).assign(&Array1::from(col.clone()));
    }
    dense
}

/// `P(G)`, the projected gradient of the data terms at `k`.
fn data_gradient(k: &Array2<f64>, pairs: &Pairs) -> Array2<f64> {
    let mut g = Array2::<f64>::zeros((N, N));
    for &(i, j) in &pairs.above {
        g[[i, j]] -= 2.0 * (1.0 - k[[i, j]]).max(0.0);
    }
    for &(i, j) in &pairs.equal {
        g[[i, j]] += 2.0 * k[[i, j]];
    }
    (&g - &g.t()) * 0.5
}

fn frobenius(a: &Array2<f64>) -> f64 {
    a.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[test]
fn full_kr_stops_where_the_projected_gradient_vanishes_and_its_scores_solve_the_laplacian_identity()
{
    let input = problem(11);
    for lambda in [1e-3, 1e-1] {
        let cfg = KernelRankConfig {
            lambda,
            k: K_NN,
            connect: Connect::Or,
            sigma: Sigma::Adaptive,
            ..Default::default()
        };
        let k = fit(&cfg, &input);
        let l = dense_laplacian(&cfg, &input);
        assert!(l.sum_axis(ndarray::Axis(1)).iter().all(|v| v.abs() < 1e-12));

        let pg = data_gradient(&k, &input.train);
        let lk = l.dot(&k);
        let residual = &pg + &((&lk + &k.dot(&l)) * lambda);
        let scale = frobenius(&pg);
        // Not a vacuous optimum: the pairs pull (some hinges active), the graph pulls back.
        assert!(scale > 1e-3, "lambda {lambda}: data gradient {scale}");
        let rel = frobenius(&residual) / scale;
        assert!(rel < 1e-9, "lambda {lambda}: stationarity residual {rel:e}");

        // λ L(K1) = −P(G)1: the scores' Laplacian identity.
        let ones = Array1::<f64>::ones(N);
        let lhs = l.dot(&k.dot(&ones)) * lambda;
        let rhs = -pg.dot(&ones);
        let err = (&lhs - &rhs).iter().map(|v| v * v).sum::<f64>().sqrt();
        let norm = rhs.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(norm > 1e-3, "lambda {lambda}: net forces {norm}");
        assert!(err < 1e-9 * norm, "lambda {lambda}: {err:e} vs {norm:e}");

        // And a point off the optimum fails the same check (the check can fail).
        let mut off = k.clone();
        off[[0, 1]] += 0.1;
        off[[1, 0]] -= 0.1;
        let pg_off = data_gradient(&off, &input.train);
        let r_off = &pg_off + &((&l.dot(&off) + &off.dot(&l)) * lambda);
        assert!(frobenius(&r_off) / frobenius(&pg_off) > 1e-3);
    }
}
