//! Low-rank KR's two step rules side by side (`low_rank.rs`, [`StepRule`]): for each λ of the
//! paper profile's grid, one fit from `B = ones` with the protocol's Armijo rule and one with
//! Barzilai–Borwein steps to a stationarity residual, on the benches' Swiss roll of 10
//! classes (here with noise 0.3 per coordinate, so that the classes touch); prints the
//! objective each reaches, its stationarity residual `‖∇E(B)‖/‖∇E(ones)‖` (computed here for
//! both), the iterations and Kendall τ against the class order.
//!
//! `cargo run --release -p dyad-tensor-rank --example step_rules [n] [l] [max_iter]`
//! (defaults 5,000, 3 labels per class pair and class, 1,000 iterations).

use dyad_core::kendall::kendall_tau;
use dyad_core::{Schedule, seeded};
use dyad_kernels::fixtures::Models;
use dyad_tensor_rank::graph::{Connect, GraphSpec, Laplacian, Sigma, knn};
use dyad_tensor_rank::low_rank::StepRule;
use dyad_tensor_rank::synthetic::class_pairs;
use dyad_tensor_rank::{
    LowRankKrConfig, LowRankProblem, PairInput, PairKernel, PairModel, PairRanker,
};
use ndarray::Array2;

#[path = "../benches/roll/mod.rs"]
mod roll;

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map_or(default, |a| a.parse().expect("a whole number"))
}

fn main() {
    let (n, l, max_iter) = (arg(1, 5000) as usize, arg(2, 3) as usize, arg(3, 1000));
    let roll::Roll { x, class, rank } = roll::swiss_roll(n, 1, 0.3);
    let pairs = class_pairs(&class, &rank, l, &Default::default(), &mut seeded(2)).expect("pairs");
    let k = 8;
    let spec = GraphSpec {
        k,
        connect: Connect::Or,
        sigma: Sigma::Adaptive,
        threads: 1,
    };
    let lap = Laplacian::from_knn(&knn(x.view(), k, 1).expect("kNN"), &spec).expect("L");
    let input = PairInput::new(x, pairs.clone());
    println!("n = {n}, l = {l}, k = {k}, p = 50, at most {max_iter} iterations");
    println!("lambda  rule    iterations  objective     residual  tau     seconds");
    for lambda in [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0] {
        let problem = LowRankProblem::new(lap.clone(), lambda, &pairs, 50);
        let mut ws = problem.workspace();
        let mut grad = Array2::zeros((n, 50));
        problem.objective_and_gradient(Array2::ones((n, 50)).view(), &mut ws, grad.view_mut());
        let start = grad.iter().map(|g| g * g).sum::<f64>().sqrt();
        for (name, step) in [("armijo", StepRule::Armijo), ("bb", StepRule::Bb)] {
            let cfg = LowRankKrConfig {
                lambda,
                k,
                max_iter,
                step,
                ..Default::default()
            };
            let clock = std::time::Instant::now();
            let mut seen = Models::<PairModel>::default();
            cfg.fit(
                &input,
                &Schedule::last_only(max_iter),
                &mut seeded(3),
                &mut seen,
            )
            .expect("fit");
            let secs = clock.elapsed().as_secs_f64();
            let model = seen.seen.pop().expect("a model").1;
            let Some(PairKernel::LowRank(b)) = &model.kernel else {
                panic!("low-rank KR reports B");
            };
            let e = problem.objective_and_gradient(b.view(), &mut ws, grad.view_mut());
            let residual = grad.iter().map(|g| g * g).sum::<f64>().sqrt() / start;
            println!(
                "{lambda:<7.0e} {name:<7} {:>10}  {e:<12.6e}  {residual:<8.1e}  {:.4}  {secs:.1}",
                model.iterations,
                kendall_tau(model.scores.as_slice().expect("scores"), &rank)
            );
        }
    }
}
