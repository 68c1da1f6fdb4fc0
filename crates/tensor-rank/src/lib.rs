//! Tensor-regularised ranking: pairwise rankers from inequality and equality labels, after
//! Kim, Park & Tompkin, "High-order tensor regularization with application to attribute
//! ranking" (spec `manifold-tensor.md`; the source text is a garbled extraction, §0).
//!
//! # The family
//!
//! A [`PairRanker`] learns scores `f` of `n` examples (rows of a dense `n × m` matrix, labelled
//! and unlabelled: TR, SSR and KR are transductive) from labelled pairs ([`Pairs`]): `(i, j) ∈
//! P` means `i` ranks above `j`, `{i, j} ∈ O` means equal rank. Every method minimises the same
//! losses (Eq. 14), `Σ_P max(0, 1 − a_ij)² + Σ_O a_ij²`, on its pair quantity `a_ij`, plus its
//! own regulariser; "the differences between these algorithms lie only in the respective
//! regularizers". Input: [`PairInput`] (features, training pairs, optional validation pairs,
//! optional precomputed kNN graph). Model: [`PairModel`] (scores of all `n` examples, the
//! scoring function for new examples when the method has one, the learned kernel for KR, the
//! objective and iteration counts), reported through `Observer<PairModel>`.
//!
//! # Modules, one per method
//!
//! | method | module | variable | regulariser | solver | one step |
//! |---|---|---|---|---|---|
//! | RS (Eqs. 12–13) | [`rank_svm`] | `w ∈ Rᵐ`, `f = Xw` | `λ‖w‖²` | finite Newton, Cholesky | Newton iteration |
//! | SSR (Eq. 15) | [`ssr`] | `w` | `λ fᵀLf + 1e-8‖w‖²` | finite Newton, Cholesky | Newton iteration |
//! | TR (§3.4) | [`transductive`] | `f ∈ Rⁿ` | `λ fᵀLf` | finite Newton, PCG | Newton iteration |
//! | full KR (Eqs. 17–18) | [`kernel_full`] | antisymmetric `K ∈ R^{n×n}` | `λ tr(KᵀLK)` | finite Newton, PCG | Newton iteration |
//! | low-rank KR (Eqs. 21–24, Alg. 1) | [`low_rank`] | `B ∈ R^{n×p}`, `K = BQBᵀ` | `λ tr(KᵀLK)` | gradient descent, Armijo | gradient iteration |
//! | DR (§3.10) | [`deep`] | 6-hidden-layer MLP (candle) | none | SGD + momentum, 5 restarts | epoch |
//!
//! and beside them: [`graph`] (exact blocked kNN search and the Laplacian of Eq. 16),
//! [`solver`] (pair losses, the exact line search, the Newton solver), [`readout`] (Eq. 25,
//! the linear order from a kernel), [`synthetic`] (the label protocol of §4.1; the
//! S-CLASS and S-ATTR stand-ins of §9 are data-set providers, `dyad_datasets::pair_ranking`).
//! Kendall's τ on all inequality pairs (§5) is
//! [`dyad_core::kendall`].
//!
//! # Choices where the spec is open (§10)
//!
//! * **Graph (Eq. 16, §10.3)**: symmetrised kNN (`∨`) by default, mutual kNN (`∧`, the literal
//!   reading) behind `connect = "and"`: mutual kNN can leave isolated points whose `f` (TR) or
//!   row of `K` (KR) is then set by the labels alone. Weights `exp(−d²/σ_i²)` on squared
//!   Euclidean distances (the exponent is unreadable), `σ_i² = ½·mean of the squared distances
//!   to the k neighbours` (so the kernel is scale-free; the literal "half of the mean distance"
//!   is `sigma = "adaptive_literal"`), computed per row and symmetrised `(W + Wᵀ)/2`.
//! * **Solvers (§3.2–3.5)**: the paper names none but "gradient descent" for low-rank KR. RS,
//!   SSR, TR and full KR are convex and C¹: the finite Newton method with an exact line search
//!   solves them to optimality in a few iterations, so a result never depends on a step size
//!   or an iteration cap. Low-rank KR follows the paper (gradient descent) with Armijo
//!   backtracking (η₀ = 1, ×0.5 on rejection, ×1.2 on acceptance; stop at a relative decrease
//!   below 1e-6 or 1000 iterations), the spec's defaults.
//! * **SSR's ridge (§3.3)**: `XᵀLX` is singular, so `1e-8‖w‖²` is added (configurable).
//! * **Full KR's antisymmetry (§10.10)**: enforced (the variable is an antisymmetric `K`),
//!   as `K = A − Aᵀ` would; low-rank KR is antisymmetric by construction.
//! * **Eq. (23)/(24) (§10.4)**: `Q̄ = −Q`, and the "0 −" of Eq. (24) is the derivative of
//!   `l_O`; both re-derived and tested (finite differences, the printed product form).
//! * **Eq. (25) (§10.5)**: implemented as printed; for antisymmetric `K` it is `K1/(n + ε)`.
//!   KR reports `f*` as its scores and keeps its kernel, so `τ` from `sign(K_ij)` (the paper's
//!   secondary variant) can be computed from [`PairKernel::value`].
//! * **DR (§10.7)**: see [`deep`]: ReLU MLP on standardised inputs, the pair losses of Eq. 14,
//!   minibatches of 64 pairs, SGD with momentum 0.9, learning rate 1e-2 decayed ×0.97 per
//!   epoch, restarts kept by validation error (fraction of validation inequality pairs
//!   mis-ordered).
//! * **Hyper-parameters (§3.11, §10.9)**: `lambda`, `k` (and DR's `width`, `epochs`) are config
//!   fields for the harness to select on validation pairs; their defaults are only starting
//!   points (`lambda` 1 for RS/SSR/TR, 0.01 for KR, since `tr(KᵀLK) = n fᵀLf` on rank-2
//!   kernels; `k` = 8, the value of the paper's timing).
//! * **Memory order (low-rank KR)**: the points are renumbered internally in reverse
//!   Cuthill–McKee order of the graph (`reorder = true`), so that `LB` reads neighbouring rows
//!   of `B` from cache; scores and `B` are reported in the input's order. Only rounding
//!   changes (tested).
//! * **Steps**: every learner is iterative; a schedule step is one solver iteration (table),
//!   checkpoints report the model after that many, the run ends early (reported as last) when
//!   its solver converges. Results are deterministic for a seed (only DR draws random numbers).
//!
//! # Cost
//!
//! kNN graph: `2n²m` flops (exact, blocked; [`graph`]). RS/SSR: `O(|pairs| m + s m² + m³)` per
//! Newton iteration (`s` labelled points) plus, for SSR, `XᵀLX` once (`O(n m²)`). TR: `O(nnz(L)
//! + |pairs|)` per CG iteration. Full KR: `O(k n²)` per CG iteration, `n ≤ max_n` (2,000).
//! Low-rank KR: `O(n p² + k n p)` per gradient (≈ `6np² + 2knp` flops; [`low_rank`]).
//! DR: see [`deep`].

pub mod deep;
pub mod graph;
pub mod kernel_full;
pub(crate) mod linear;
pub mod low_rank;
pub mod model;
pub mod rank_svm;
pub mod readout;
pub mod solver;
pub mod ssr;
pub mod synthetic;
#[cfg(test)]
pub(crate) mod testkit;
pub mod transductive;

pub use deep::{DeepRankConfig, Mlp};
pub use graph::{Connect, GraphSpec, KnnGraph, Laplacian, Sigma, knn};
pub use kernel_full::KernelRankConfig;
pub use low_rank::{LowRankKrConfig, LowRankProblem, LowRankWorkspace};
pub use model::{PairInput, PairKernel, PairModel, ScoreFunction};
pub use rank_svm::RankSvmConfig;
pub use readout::read_out;
pub use solver::Pairs;
pub use ssr::SsrConfig;
pub use transductive::TransductiveConfig;

use dyad_core::{Observer, Rng, Schedule};
use dyad_kernels::AlgoError;
use dyad_kernels::params::{self, ParamError};

/// The solvers of this crate, as the harness's registry composes them: one line per solver
/// (each file declares its own entry: name, label, version, parameters).
pub static SOLVERS: dyad_kernels::Solvers = dyad_kernels::Solvers {
    package: env!("CARGO_PKG_NAME"),
    entries: &[
        rank_svm::SOLVER,
        ssr::SOLVER,
        transductive::SOLVER,
        kernel_full::SOLVER,
        low_rank::SOLVER,
        deep::SOLVER,
    ],
};

/// The family of [`PairRanker`]s (tensor-ranking spec §3: scores of points from labelled
/// pairs).
pub const PAIR_RANKER: &str = "pair-ranker";

/// Build a [`PairRanker`] from spec parameters ([`dyad_kernels::solver::family`]).
pub fn pair_ranker_solver<C>(v: toml::Value) -> Result<dyad_kernels::BuiltSolver, ParamError>
where
    C: PairRanker
        + dyad_kernels::Checked
        + serde::de::DeserializeOwned
        + serde::Serialize
        + 'static,
{
    dyad_kernels::solver::family::<C, dyn PairRanker>(v, |c| c.is_iterative(), |c| Box::new(c))
}

/// The pairwise-ranker family: learns scores of examples from labelled pairs. Its
/// configuration is [`dyad_kernels::Checked`] before any data is read.
pub trait PairRanker: Send + Sync {
    /// Train on `input`, reporting the model at every step of `schedule` up to its budget or
    /// until the method finishes (the model it finished with is then reported as the last).
    fn fit(
        &self,
        input: &PairInput,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<PairModel>,
    ) -> Result<(), AlgoError>;

    /// Whether training proceeds in steps (so early stopping over a checkpoint grid applies).
    fn is_iterative(&self) -> bool;

    /// Whether the model reported at step 0 scores every point alike, so that its Kendall τ
    /// is exactly 0 (ties count as neither concordant nor discordant): `dyad check`'s sanity
    /// check of the pair-ranking task (issue 42 §2). Default: no.
    fn starts_constant(&self) -> bool {
        false
    }

    /// Whether the method's objective is convex, so that a fit which reports a stationarity
    /// residual ([`PairModel::stationarity`]) must end at its optimum: `dyad check`'s sanity
    /// check holds such fits to a residual bound. A non-convex method (low-rank KR) reports
    /// its residual as a convergence diagnostic only. Default: no.
    fn is_convex(&self) -> bool {
        false
    }

    /// Whether `fit` starts from [`PairInput::start`] when one is given (a model of the same
    /// method at another `λ`): a convex solver whose optimum does not depend on the start and
    /// which reaches it sooner from a neighbouring `λ`'s (TR; full KR's finite Newton takes
    /// as many iterations from either start, measured by the `warm_path` bench, so it does
    /// not). A warm-started run's first report is its start, not the constant model of
    /// [`Self::starts_constant`]. Default: no (the start is ignored).
    fn warm_starts(&self) -> bool {
        false
    }

    /// A lower bound on the bytes it holds while it trains on `n` examples of `dim` features,
    /// beyond the features themselves (an `n x n` kernel): planning refuses a cell whose
    /// estimate exceeds the machine's memory. `None`: nothing that grows faster than the data.
    fn memory(&self, _n: usize, _dim: usize) -> Option<u64> {
        None
    }
}

pub(crate) fn default_k() -> usize {
    8
}
pub(crate) fn default_knn_threads() -> usize {
    1
}
pub(crate) fn default_max_newton() -> u64 {
    100
}
pub(crate) fn default_newton_tol() -> f64 {
    1e-10
}
pub(crate) fn default_cg_max_iter() -> u64 {
    1000
}
pub(crate) fn default_epsilon() -> f64 {
    1e-8
}

/// Largest number of kNN threads accepted.
const MAX_KNN_THREADS: usize = 256;

/// The graph parameters shared by SSR, TR and KR.
pub(crate) fn check_graph(k: usize, sigma: Sigma, threads: usize) -> Result<(), ParamError> {
    params::at_least_one("k", k as u64)?;
    if let Sigma::Fixed(s) = sigma {
        params::positive("sigma.fixed", s)?;
    }
    if !(1..=MAX_KNN_THREADS).contains(&threads) {
        return Err(ParamError::new(
            "knn_threads",
            format!("must lie in 1..={MAX_KNN_THREADS}, got {threads}"),
        ));
    }
    Ok(())
}

pub(crate) fn graph_spec(k: usize, connect: Connect, sigma: Sigma, threads: usize) -> GraphSpec {
    GraphSpec {
        k,
        connect,
        sigma,
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::planted_classes;
    use super::*;
    use dyad_core::seeded;
    use dyad_kernels::Checked;
    use dyad_kernels::fixtures::Models;

    fn all() -> Vec<Box<dyn PairRanker>> {
        vec![
            Box::new(RankSvmConfig::default()),
            Box::new(SsrConfig {
                k: 5,
                ..Default::default()
            }),
            Box::new(TransductiveConfig {
                k: 5,
                ..Default::default()
            }),
            Box::new(KernelRankConfig {
                k: 5,
                ..Default::default()
            }),
            Box::new(LowRankKrConfig {
                k: 5,
                max_iter: 50,
                ..Default::default()
            }),
            Box::new(DeepRankConfig {
                width: 8,
                epochs: 2,
                restarts: 2,
                ..Default::default()
            }),
        ]
    }

    #[test]
    fn a_learner_that_starts_constant_reports_constant_scores_at_step_0() {
        let data = planted_classes(50, 3, 3, 1);
        let mut claims = 0;
        for m in all() {
            let mut obs = Models::<PairModel>::default();
            m.fit(
                &data.input,
                &Schedule::new(vec![0, 5]),
                &mut seeded(4),
                &mut obs,
            )
            .unwrap();
            let (at, first) = &obs.seen[0];
            assert_eq!(at.step, 0);
            let s = first.scores.as_slice().unwrap();
            let constant = s.iter().all(|&v| v == s[0]);
            if m.starts_constant() {
                claims += 1;
                assert!(constant, "claims a constant start: {s:?}");
            } else {
                assert!(!constant, "a constant start it does not claim");
            }
        }
        // RankSVM, SSR, TR, full KR and low-rank KR; DR starts from a random network.
        assert_eq!(claims, all().len() - 1);
    }

    #[test]
    fn family_trait_is_object_safe_thread_safe_and_runs_deterministically() {
        fn send_sync<T: Send + Sync + ?Sized>() {}
        send_sync::<dyn PairRanker>();
        let data = planted_classes(50, 3, 3, 1);
        for m in all() {
            assert!(m.is_iterative());
            let run = || {
                let mut obs = Models::<PairModel>::default();
                m.fit(
                    &data.input,
                    &Schedule::new(vec![0, 1, 5]),
                    &mut seeded(4),
                    &mut obs,
                )
                .unwrap();
                assert!(!obs.seen.is_empty() && obs.seen.last().unwrap().0.last);
                obs.seen
                    .into_iter()
                    .flat_map(|(_, m)| m.scores.to_vec())
                    .map(f64::to_bits)
                    .collect::<Vec<_>>()
            };
            assert_eq!(run(), run());
        }
    }

    #[test]
    fn bad_parameters_and_bad_input_are_errors_not_panics() {
        let e = RankSvmConfig {
            lambda: 0.0,
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(e.param, "lambda");
        assert_eq!(
            LowRankKrConfig {
                rank: 0,
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "rank"
        );
        assert_eq!(
            TransductiveConfig {
                k: 0,
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "k"
        );
        assert_eq!(
            SsrConfig {
                sigma: Sigma::Fixed(-1.0),
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "sigma.fixed"
        );
        assert_eq!(
            DeepRankConfig {
                momentum: 1.0,
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "momentum"
        );
        assert_eq!(
            KernelRankConfig {
                max_n: 0,
                ..Default::default()
            }
            .check()
            .unwrap_err()
            .param,
            "max_n"
        );
        // A pair beyond the data is bad input (no parameter to name).
        let mut data = planted_classes(20, 3, 2, 1);
        data.input.train.above.push((3, 99));
        for m in all() {
            let r = m.fit(
                &data.input,
                &Schedule::last_only(3),
                &mut seeded(1),
                &mut dyad_core::observe::NullObserver,
            );
            assert!(matches!(r, Err(AlgoError::Data(_))), "{r:?}");
        }
        // k not below n is an error, not a panic.
        let tiny = planted_classes(6, 2, 2, 1);
        let r = TransductiveConfig {
            k: 8,
            ..Default::default()
        }
        .fit(
            &tiny.input,
            &Schedule::last_only(3),
            &mut seeded(1),
            &mut dyad_core::observe::NullObserver,
        );
        assert!(r.is_err());
    }

    #[test]
    fn configs_deserialise_with_defaults_and_reject_unknown_fields() {
        let c: LowRankKrConfig = serde_json::from_str(r#"{"lambda": 0.5, "k": 16}"#).unwrap();
        assert_eq!((c.lambda, c.k, c.rank, c.epsilon), (0.5, 16, 50, 1e-8));
        let c: TransductiveConfig =
            serde_json::from_str(r#"{"connect": "and", "sigma": {"fixed": 2.0}}"#).unwrap();
        assert_eq!((c.connect, c.sigma), (Connect::And, Sigma::Fixed(2.0)));
        let c: SsrConfig = serde_json::from_str(r#"{"sigma": "adaptive_literal"}"#).unwrap();
        assert_eq!(c.sigma, Sigma::AdaptiveLiteral);
        assert!(serde_json::from_str::<RankSvmConfig>(r#"{"lamda": 1}"#).is_err());
        let d: DeepRankConfig = serde_json::from_str("{}").unwrap();
        assert_eq!((d.hidden_layers, d.restarts, d.batch_pairs), (6, 5, 64));
    }
}
