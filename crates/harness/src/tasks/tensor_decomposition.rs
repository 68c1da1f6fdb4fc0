//! The tensor-decomposition task, table `[protocol.tensor_decomposition]` (Givens spec §4,
//! §5.2–5.3, §6.4–6.5, §8 E3–E5): learning a spherical Gaussian mixture by the method of
//! moments, with the whitened third-moment tensor decomposed by a [`TensorDecomposer`]
//! (Givens Algorithm 3 / 6, or the robust tensor power method).
//!
//! One cell, for a data set of kind [`kinds::GMM`] (a mixture's description, provider `gmm`):
//!
//! 1. **Draw** the mixture and its `N` samples from the repeat's seed (`gmm/<repeat>`): each
//!    repeat is a fresh mixture (spec §7 \[A\]: independent mixtures per `(d, N)`), and every
//!    solver of a repeat sees the same samples, so comparisons are paired.
//! 2. **Moments** ([`estimate_moments`]): whiten to `K` (`components`, default the mixture's)
//!    and form `T̂ = M̂3(W, W, W)`. The spherical variance is estimated as `λ_min(Σ̂)` when
//!    `K ≤ d`; for `d < K` (Fig. 3's `d = 10` point, spec §8 E3) the moment method cannot
//!    estimate it and `variance = "auto"` (default) passes the known `σ²` and keeps `min(K, d)`
//!    directions — the spec's option (ii), so at most `d` components are recovered there.
//!    `"estimate"` and `"known"` force one reading. The estimation is not solver time (it is
//!    the same input for every decomposer) and is recorded as `moment_seconds`.
//! 3. **Decompose** with the cell's solver; at every checkpoint the cell records the
//!    objective `Σ_k T̂(v_k, v_k, v_k)` (Eq. 8), the solver's FLOPs (spec §6.3) and the
//!    relative tensor residual `‖T̂ − Σ λ_k v_k^{⊗3}‖_F / ‖T̂‖_F`.
//! 4. **Recover** from the final decomposition ([`reconstruct`]: `ŵ_k = 1/λ_k²`,
//!    `μ̂_k = λ_k B v_k`), cluster the samples by the reconstructed model ([`assign`]) and
//!    record at the last step: `nmi` against the planted labels (spec §6.4),
//!    `optimal_nmi` (the same rule with the true parameters: the papers' black "optimal"
//!    line; identical for every solver of a repeat) and `centre_error`, the mean relative
//!    error `‖μ̂ − μ_k‖/‖μ_k‖` of the planted centres, matched one to one to the estimates by
//!    the Hungarian method on the whitened directions (an unmatched centre counts 1, as if
//!    estimated at 0).
//! 5. **Convergence** (thesis Fig. 3.1, spec §6.5 \[A\]): `objective_gap = f* − f(U_t)` at
//!    every checkpoint before the last, `f*` the final objective; on a log axis against the
//!    step a linear rate is a straight line. The cell also records the fitted rate
//!    `convergence_rate` (the factor by which the gap shrinks per sweep of `K(K−1)/2` steps,
//!    least squares on `log gap` over the checkpoints whose gap exceeds `1e-12 · |f*|`) and
//!    `convergence_r2`, the R² of that straight line. They are recorded for every solver
//!    (cheap, from the objectives already recorded); only for a coordinate method is a
//!    "sweep" meaningful (one step of the tensor power method is one whole component).
//!
//! The set is `samples` (the same samples feed the moments and the clustering, as in the
//! paper: there is no held-out part).

use super::{CellOutput, CellProtocol, CellRun, Headline, Metric, Task, TaskInput};
use crate::cache::Record;
use crate::plan::{DatasetInstance, SolverInstance};
use crate::registry::TENSOR_DECOMPOSITION;
use crate::spec::SpecError;
use dyad_core::nmi::nmi;
use dyad_core::{Checkpoint, Control, Observer, Schedule, derive_seed, seeded};
use dyad_datasets::provider::kinds;
use dyad_givens::baselines::spherical_gmm::{
    GmmSample, GmmSpec, MomentConfig, assign, estimate_moments, optimal_assignment, reconstruct,
    sample_gmm,
};
use dyad_givens::metrics::{component_recovery, tensor_reconstruction_error};
use dyad_givens::{Decomposition, Tensor3, TensorDecomposer};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The task.
pub struct TensorDecompositionTask;

/// The one evaluated set.
pub const SAMPLES: &str = "samples";

static METRICS: &[Metric] = &[
    Metric {
        name: "nmi",
        label: "NMI",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "normalised mutual information of the clustering by the reconstructed mixture and the planted labels (last step)",
    },
    Metric {
        name: "optimal_nmi",
        label: "optimal NMI",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "NMI of the clustering by the true mixture parameters (the papers' 'optimal'; the same for every solver of a repeat)",
    },
    Metric {
        name: "centre_error",
        label: "centre err.",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "mean relative error of the planted centres, matched one to one to the estimates (unmatched: 1)",
    },
    Metric {
        name: "residual",
        label: "tensor residual",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "relative Frobenius residual of the whitened moment tensor after the decomposition so far",
    },
    Metric {
        name: "objective",
        label: "objective",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "sum of T(v_k, v_k, v_k) over the components found (Eq. 8)",
    },
    Metric {
        name: "flops",
        label: "FLOPs",
        unit: "flop",
        higher_is_better: false,
        percent: false,
        description: "solver floating-point operations so far (spec §6.3; the moment estimation excluded)",
    },
    Metric {
        name: "moment_seconds",
        label: "moments s",
        unit: "s",
        higher_is_better: false,
        percent: false,
        description: "seconds to estimate the whitened moment tensor from the samples (not solver time)",
    },
    Metric {
        name: "objective_gap",
        label: "f* - f",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "final objective minus the objective at the step (every checkpoint before the last)",
    },
    Metric {
        name: "convergence_rate",
        label: "rate / sweep",
        unit: "",
        higher_is_better: false,
        percent: false,
        description: "fitted factor by which the objective gap shrinks per sweep of K(K-1)/2 steps",
    },
    Metric {
        name: "convergence_r2",
        label: "R² (log gap)",
        unit: "",
        higher_is_better: true,
        percent: false,
        description: "R² of the straight line fitted to log(objective gap) against the step",
    },
];

static HEADLINE: &[Headline] = &[
    Headline {
        metric: "nmi",
        k: None,
    },
    Headline {
        metric: "optimal_nmi",
        k: None,
    },
    Headline {
        metric: "centre_error",
        k: None,
    },
];

impl Task for TensorDecompositionTask {
    fn table(&self) -> &'static str {
        "tensor_decomposition"
    }
    fn name(&self) -> &'static str {
        "tensor-decomposition"
    }
    fn version(&self) -> u32 {
        1
    }
    fn description(&self) -> &'static str {
        "spherical Gaussian mixtures by the method of moments: NMI of the recovered clustering, centre error, tensor residual and FLOPs"
    }
    fn family(&self) -> &'static str {
        TENSOR_DECOMPOSITION
    }
    fn data_kinds(&self) -> &'static [&'static str] {
        &[kinds::GMM]
    }
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }
    fn headline(&self) -> &'static [Headline] {
        HEADLINE
    }
    fn sources(&self) -> &'static [&'static str] {
        &[
            "harness/src/tasks/tensor_decomposition.rs",
            "givens/src/baselines/spherical_gmm.rs",
            "givens/src/metrics.rs",
            "core/src/nmi.rs",
            "core/src/gmm.rs",
        ]
    }
    fn plan(&self, input: &TaskInput<'_>) -> Result<Box<dyn CellProtocol>, SpecError> {
        let p: TensorProtocol = input.table("tensor_decomposition")?;
        if p.components == Some(0) {
            return Err(input.error(
                &["tensor_decomposition", "components"],
                "key `protocol.tensor_decomposition.components`: at least 1".into(),
            ));
        }
        input.refuse_tune(
            "the tensor-decomposition task has no hold-out: sweep parameters with `grid`",
        )?;
        Ok(Box::new(TensorCell {
            variance: p.variance,
            components: p.components,
            checkpoints: input.checkpoints.clone(),
        }))
    }
}

/// `[protocol.tensor_decomposition]` as written in a spec.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorProtocol {
    #[serde(default)]
    pub variance: VarianceKind,
    /// Components to whiten to (default: the mixture's).
    #[serde(default)]
    pub components: Option<usize>,
}

/// Where the spherical variance of the moment method comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VarianceKind {
    /// Estimated when `K ≤ d`, else the known one (spec §8 E3 option (ii)).
    #[default]
    Auto,
    Estimate,
    Known,
}

/// The protocol of one cell (hashed into its key).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorCell {
    pub variance: VarianceKind,
    pub components: Option<usize>,
    pub checkpoints: Vec<u64>,
}

impl TensorCell {
    fn for_solver(&self, solver: &SolverInstance) -> TensorCell {
        let mut c = self.clone();
        if let Some(own) = &solver.checkpoints {
            c.checkpoints = own.clone();
        }
        c
    }

    /// The method-of-moments configuration for a mixture.
    fn moments(&self, spec: &GmmSpec) -> MomentConfig {
        let k = self.components.unwrap_or(spec.components);
        let known = match self.variance {
            VarianceKind::Auto => k > spec.dim,
            VarianceKind::Estimate => false,
            VarianceKind::Known => true,
        };
        MomentConfig {
            variance: known.then_some(spec.variance),
            ..MomentConfig::new(k)
        }
    }
}

impl CellProtocol for TensorCell {
    fn canonical(&self, solver: &SolverInstance) -> serde_json::Value {
        serde_json::to_value(self.for_solver(solver)).expect("serializable")
    }

    fn check_data(&self, d: &DatasetInstance) -> Result<(), String> {
        let spec: GmmSpec = serde_json::from_value(d.resolved.params.clone())
            .map_err(|e| format!("not a mixture description: {e}"))?;
        let k = self.components.unwrap_or(spec.components);
        if self.variance == VarianceKind::Estimate && k > spec.dim {
            return Err(format!(
                "variance = \"estimate\" needs K <= d (λ_min of the covariance is σ² only \
                 then), got K = {k}, d = {}; use \"auto\" or \"known\"",
                spec.dim
            ));
        }
        if spec.samples < 2 {
            return Err("the moments need at least 2 samples".into());
        }
        Ok(())
    }

    fn sets(&self) -> Vec<String> {
        vec![SAMPLES.to_string()]
    }

    fn steps(&self, solver: &SolverInstance) -> u64 {
        self.for_solver(solver)
            .checkpoints
            .last()
            .copied()
            .unwrap_or(0)
    }

    fn run(&self, cell: &CellRun<'_>) -> Result<CellOutput, String> {
        let spec = cell.data.get::<GmmSpec>().ok_or_else(|| {
            format!(
                "data set `{}` is not a mixture description ({})",
                cell.dataset,
                cell.data.kind()
            )
        })?;
        let learner = cell
            .candidates
            .first()
            .and_then(|b| b.family::<dyn TensorDecomposer>())
            .ok_or_else(|| format!("solver `{}` is not a tensor decomposer", cell.solver.name))?;
        let c = self.for_solver(cell.solver);
        let sample = sample_gmm(
            spec,
            derive_seed(cell.seed, &format!("gmm/{}", cell.repeat)),
        )
        .map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let moments =
            estimate_moments(sample.x.view(), &c.moments(spec)).map_err(|e| e.to_string())?;
        let (dense, _) = moments.tensor.dense();
        let moment_seconds = t0.elapsed().as_secs_f64();
        let schedule = if learner.is_iterative() {
            Schedule::new(c.checkpoints.clone())
        } else {
            Schedule::new(vec![0])
        };
        let mut ev = Evaluate {
            tensor: &dense,
            records: Vec::new(),
            objectives: Vec::new(),
            last: None,
            eval_seconds: 0.0,
        };
        let solver_seed = derive_seed(cell.seed, &format!("solver/{}", cell.repeat));
        learner
            .fit(
                &moments.tensor,
                &schedule,
                &mut seeded(solver_seed),
                &mut ev,
            )
            .map_err(|e| e.to_string())?;
        let (step, seconds, dec) = ev
            .last
            .take()
            .ok_or("the decomposer reported no checkpoint")?;
        let t1 = Instant::now();
        let rec = |metric: &str, step: u64, seconds: f64, value: f64| Record {
            set: SAMPLES.to_string(),
            metric: metric.to_string(),
            step,
            seconds,
            k: None,
            coord: None,
            value,
        };
        let mut records = ev.records;
        let est = reconstruct(&moments, &dec);
        let labels = assign(
            sample.x.view(),
            &est.weights,
            est.means.view(),
            est.variance,
        );
        records.push(rec("nmi", step, seconds, nmi(&labels, &sample.labels)));
        let optimal = nmi(&optimal_assignment(&sample), &sample.labels);
        records.push(rec("optimal_nmi", step, seconds, optimal));
        let err = centre_error(&sample, &moments.whitening, &est.means, &dec);
        records.push(rec("centre_error", step, seconds, err));
        records.push(rec("moment_seconds", step, seconds, moment_seconds));
        let sweep = {
            let k = dense.dim() as f64;
            (k * (k - 1.0) / 2.0).max(1.0)
        };
        let (gaps, fit) = convergence(&ev.objectives, sweep);
        records.extend(
            gaps.into_iter()
                .map(|(s, secs, g)| rec("objective_gap", s, secs, g)),
        );
        if let Some((rate, r2)) = fit {
            records.push(rec("convergence_rate", step, seconds, rate));
            records.push(rec("convergence_r2", step, seconds, r2));
        }
        Ok(CellOutput {
            records,
            train_seconds: seconds,
            eval_seconds: ev.eval_seconds + t1.elapsed().as_secs_f64(),
            ..CellOutput::default()
        })
    }
}

/// Mean relative error of the planted centres (module docs, item 4).
fn centre_error(
    sample: &GmmSample,
    whitening: &Array2<f64>,
    means: &Array2<f64>,
    dec: &Decomposition,
) -> f64 {
    let k = sample.means.nrows();
    if dec.weights.is_empty() || k == 0 {
        return 1.0;
    }
    // Planted directions in the whitened space: Wᵀ μ_k (unit norm when the whitening is exact,
    // λ_k = 1/√w_k); matched by |cos| like the decompositions' own tests.
    let truth = whitening.t().dot(&sample.means.t());
    let weights: Vec<f64> = sample.weights.iter().map(|w| 1.0 / w.sqrt()).collect();
    let matched = component_recovery(&weights, truth.view(), dec);
    let total: f64 = matched
        .assignment
        .iter()
        .enumerate()
        .map(|(r, a)| {
            let mu = sample.means.row(r);
            let norm = mu.dot(&mu).sqrt().max(f64::MIN_POSITIVE);
            match a {
                Some(e) => {
                    let d = &means.row(*e) - &mu;
                    d.dot(&d).sqrt() / norm
                }
                None => 1.0,
            }
        })
        .sum();
    total / k as f64
}

/// The objective gaps `f* − f_t` before the last checkpoint (positive ones), and the fitted
/// `(rate per sweep, R²)` of `log gap` against the step when at least 3 gaps exceed the floor.
#[allow(clippy::type_complexity)]
fn convergence(
    objectives: &[(u64, f64, f64)],
    sweep: f64,
) -> (Vec<(u64, f64, f64)>, Option<(f64, f64)>) {
    let Some(&(_, _, f_star)) = objectives.last() else {
        return (Vec::new(), None);
    };
    let floor = 1e-12 * f_star.abs().max(1.0);
    let gaps: Vec<(u64, f64, f64)> = objectives[..objectives.len() - 1]
        .iter()
        .map(|&(s, secs, f)| (s, secs, f_star - f))
        .filter(|&(_, _, g)| g > floor)
        .collect();
    let pts: Vec<(f64, f64)> = gaps.iter().map(|&(s, _, g)| (s as f64, g.ln())).collect();
    if pts.len() < 3 {
        return (gaps, None);
    }
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 {
        return (gaps, None);
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        1.0
    };
    (gaps, Some(((slope * sweep).exp(), r2)))
}

/// Records the cheap per-checkpoint measures, off the solver clock, and keeps the last model.
struct Evaluate<'a> {
    tensor: &'a Tensor3,
    records: Vec<Record>,
    /// `(step, seconds, objective)` per checkpoint.
    objectives: Vec<(u64, f64, f64)>,
    last: Option<(u64, f64, Decomposition)>,
    eval_seconds: f64,
}

impl Observer<Decomposition> for Evaluate<'_> {
    fn checkpoint(&mut self, at: Checkpoint, model: &Decomposition) -> Control {
        let t = Instant::now();
        let rec = |metric: &str, value: f64| Record {
            set: SAMPLES.to_string(),
            metric: metric.to_string(),
            step: at.step,
            seconds: at.solver_seconds,
            k: None,
            coord: None,
            value,
        };
        self.records.push(rec("objective", model.objective));
        self.records.push(rec("flops", model.flops as f64));
        self.records.push(rec(
            "residual",
            tensor_reconstruction_error(self.tensor, model),
        ));
        self.objectives
            .push((at.step, at.solver_seconds, model.objective));
        self.last = Some((at.step, at.solver_seconds, model.clone()));
        self.eval_seconds += t.elapsed().as_secs_f64();
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_geometric_gap_gives_its_rate_per_sweep_and_r2_one() {
        // f_t = 10 − 0.5^(t/10): the gap halves every 10 steps; a sweep of 20 steps
        // shrinks it by 4.
        let mut obj: Vec<(u64, f64, f64)> = (0..20)
            .map(|i| {
                let s = 10 * i as u64;
                (s, s as f64, 10.0 - 0.5f64.powf(s as f64 / 10.0))
            })
            .collect();
        obj.push((200, 200.0, 10.0)); // converged
        let (gaps, fit) = convergence(&obj, 20.0);
        assert_eq!(gaps.len(), 20, "every checkpoint but the last");
        assert_eq!(gaps[0].0, 0);
        let f_star = obj[20].2;
        assert!((gaps[3].2 - (f_star - obj[3].2)).abs() < 1e-15);
        let (rate, r2) = fit.unwrap();
        assert!((rate - 0.25).abs() < 1e-6, "{rate}");
        assert!(r2 > 0.999_999, "{r2}");
        // A run that is flat from the start has no gap to fit.
        let flat = vec![(0, 0.0, 1.0), (1, 0.1, 1.0), (2, 0.2, 1.0)];
        let (g, f) = convergence(&flat, 1.0);
        assert!(g.is_empty() && f.is_none());
    }

    #[test]
    fn the_variance_is_estimated_only_where_the_moment_method_can() {
        let cell = |variance| TensorCell {
            variance,
            components: None,
            checkpoints: vec![0],
        };
        let wide = GmmSpec::paper(50, 100);
        let narrow = GmmSpec::paper(10, 100);
        assert_eq!(cell(VarianceKind::Auto).moments(&wide).variance, None);
        assert_eq!(
            cell(VarianceKind::Auto).moments(&narrow).variance,
            Some(2.0)
        );
        assert_eq!(cell(VarianceKind::Known).moments(&wide).variance, Some(2.0));
        assert_eq!(cell(VarianceKind::Estimate).moments(&narrow).variance, None);
        assert_eq!(cell(VarianceKind::Auto).moments(&wide).components, 20);
    }

    #[test]
    fn the_planted_mixture_is_recovered_and_its_centres_matched() {
        use dyad_givens::baselines::tensor_power::TensorPowerConfig;
        let spec = GmmSpec {
            components: 4,
            variance: 0.5,
            ..GmmSpec::paper(12, 20_000)
        };
        let sample = sample_gmm(&spec, 3).unwrap();
        let moments = estimate_moments(sample.x.view(), &MomentConfig::new(4)).unwrap();
        let (dense, _) = moments.tensor.dense();
        let mut ev = Evaluate {
            tensor: &dense,
            records: Vec::new(),
            objectives: Vec::new(),
            last: None,
            eval_seconds: 0.0,
        };
        TensorPowerConfig::default()
            .fit(
                &moments.tensor,
                &Schedule::new(vec![0, 1, 2, 3, 4]),
                &mut seeded(1),
                &mut ev,
            )
            .unwrap();
        let (_, _, dec) = ev.last.take().unwrap();
        let residual: Vec<f64> = ev
            .records
            .iter()
            .filter(|r| r.metric == "residual")
            .map(|r| r.value)
            .collect();
        assert_eq!(residual.len(), 5);
        assert!(residual[0] > 0.99 && residual[4] < 0.2, "{residual:?}");
        let est = reconstruct(&moments, &dec);
        let err = centre_error(&sample, &moments.whitening, &est.means, &dec);
        assert!(err < 0.15, "centre error {err}");
        // No components: every centre unmatched.
        let none = Decomposition {
            weights: vec![],
            components: Array2::zeros((4, 0)),
            objective: 0.0,
            flops: 0,
            extract_flops: 0,
        };
        assert_eq!(
            centre_error(&sample, &moments.whitening, &est.means, &none),
            1.0
        );
        // Clustering by the recovered model nearly matches the optimal rule.
        let labels = assign(
            sample.x.view(),
            &est.weights,
            est.means.view(),
            est.variance,
        );
        let (got, best) = (
            nmi(&labels, &sample.labels),
            nmi(&optimal_assignment(&sample), &sample.labels),
        );
        assert!(got > best - 0.05 && best > 0.5, "{got} vs optimal {best}");
    }
}
