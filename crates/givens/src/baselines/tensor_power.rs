//! The robust tensor power method (Anandkumar, Ge, Hsu, Kakade & Telgarsky 2012, Algorithm 1),
//! the tensor-decomposition baseline of the Givens paper (spec §5.2).
//!
//! ```text
//! for each of the r components:
//!     for τ = 1..L (restarts): θ ~ uniform on the sphere; N power updates θ ← T(I,θ,θ)/‖T(I,θ,θ)‖
//!     θ̂ = the restart with the largest T(θ,θ,θ); N more power updates from θ̂
//!     λ̂ = T(θ̂,θ̂,θ̂);  T ← T − λ̂ θ̂^{⊗3}      (deflation)
//! ```
//!
//! The theory asks for `L = poly(K) log(1/η)` and `N = Ω(log K + log log(λ_max/ε))`; the
//! thesis gives no values. Defaults \[A\] (spec §5.2): `restarts = 50`, `iterations = 50`,
//! `r = K` components. Restart vectors are drawn from the `rng` (normalised Gaussians).
//!
//! One step of the [`Schedule`] is one extracted component (all its restarts, the polishing
//! and the deflation); the run finishes after `r` components. The reported
//! [`Decomposition`] holds the components found so far. FLOPs (spec §6.3): per power update
//! `2K³ + 2K² + 3K + 1`, per evaluation `T(θ,θ,θ)` `2K³ + 2K² + 2K`, per deflation `3K³ + K²`,
//! plus forming the dense tensor when given samples ([`crate::flops::tensor_from_samples`]).

use crate::tensor::Tensor3;
use crate::{Decomposition, MomentTensor, TensorDecomposer, flops};
use dyad_core::{Control, Flow, Observer, Rng, Schedule, Stepper, drive};
use dyad_kernels::sampling::unit_vector;
use dyad_kernels::{AlgoError, Checked, ParamError, params};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// Parameters of the robust tensor power method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorPowerConfig {
    /// Random restarts per component, `L ≥ 1` (50).
    #[serde(default = "default_restarts")]
    pub restarts: usize,
    /// Power updates per restart and for the final polish, `N ≥ 1` (50).
    #[serde(default = "default_iterations")]
    pub iterations: usize,
    /// Components to extract (default: the tensor's dimension K).
    #[serde(default)]
    pub components: Option<usize>,
}

fn default_restarts() -> usize {
    50
}
fn default_iterations() -> usize {
    50
}

impl Default for TensorPowerConfig {
    fn default() -> Self {
        Self {
            restarts: default_restarts(),
            iterations: default_iterations(),
            components: None,
        }
    }
}

impl Checked for TensorPowerConfig {
    fn check(&self) -> Result<(), ParamError> {
        params::at_least_one("restarts", self.restarts as u64)?;
        params::at_least_one("iterations", self.iterations as u64)?;
        params::if_given(self.components, |c| {
            params::at_least_one("components", c as u64)
        })
    }
}

struct Tpm<'c, 'r> {
    cfg: &'c TensorPowerConfig,
    t: Tensor3,
    rng: &'r mut Rng,
    target: usize,
    weights: Vec<f64>,
    vectors: Vec<Vec<f64>>,
    scratch: Vec<f64>,
    flops: u64,
}

impl Tpm<'_, '_> {
    /// `n` power updates of `theta` in place.
    fn power(&mut self, theta: &mut [f64], n: usize) {
        let k = self.t.dim();
        for _ in 0..n {
            self.t.contract_two(theta, &mut self.scratch);
            let norm = self.scratch.iter().map(|v| v * v).sum::<f64>().sqrt();
            self.flops += flops::tpm_power_update(k);
            if norm == 0.0 {
                return;
            }
            for (o, &v) in theta.iter_mut().zip(&self.scratch) {
                *o = v / norm;
            }
        }
    }

    fn value(&mut self, theta: &[f64]) -> f64 {
        self.flops += flops::tpm_evaluation(self.t.dim());
        self.t.eval(theta, theta, theta)
    }
}

impl Stepper for Tpm<'_, '_> {
    type Model = Decomposition;
    type Error = AlgoError;

    fn step(&mut self, _step: u64) -> Result<Flow, AlgoError> {
        let k = self.t.dim();
        let mut best: Option<(f64, Vec<f64>)> = None;
        for _ in 0..self.cfg.restarts {
            let mut theta = unit_vector(k, self.rng);
            self.power(&mut theta, self.cfg.iterations);
            let v = self.value(&theta);
            if best.as_ref().is_none_or(|(b, _)| v > *b) {
                best = Some((v, theta));
            }
        }
        let (_, mut theta) = best.expect("at least one restart");
        self.power(&mut theta, self.cfg.iterations);
        let lambda = self.value(&theta);
        if !lambda.is_finite() {
            return Err(AlgoError::Numerical(
                "tensor power method: non-finite eigenvalue".into(),
            ));
        }
        self.t.deflate(lambda, &theta);
        self.flops += flops::tpm_deflation(k);
        self.weights.push(lambda);
        self.vectors.push(theta);
        Ok(if self.weights.len() >= self.target {
            Flow::Finished
        } else {
            Flow::Continue
        })
    }

    fn report(
        &mut self,
        _step: u64,
        show: &mut dyn FnMut(&Decomposition) -> Control,
    ) -> Result<Control, AlgoError> {
        let k = self.t.dim();
        let r = self.vectors.len();
        let components = Array2::from_shape_fn((k, r), |(a, c)| self.vectors[c][a]);
        Ok(show(&Decomposition {
            objective: self.weights.iter().sum(),
            weights: self.weights.clone(),
            components,
            flops: self.flops,
            extract_flops: 0,
        }))
    }
}

impl TensorDecomposer for TensorPowerConfig {
    fn fit(
        &self,
        input: &MomentTensor,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<Decomposition>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        input.validate()?;
        let k = input.dim();
        let target = self.components.unwrap_or(k);
        if target > k {
            return Err(AlgoError::param(
                "components",
                format!("= {target} exceeds the tensor's dimension {k}"),
            ));
        }
        drive(schedule, obs, || {
            let (t, fl) = input.dense();
            Ok::<_, AlgoError>(Tpm {
                cfg: self,
                t: t.into_owned(),
                rng,
                target,
                weights: Vec::new(),
                vectors: Vec::new(),
                scratch: vec![0.0; k],
                flops: fl,
            })
        })?;
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `tensor-power` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "tensor-power",
    label: "TPM",
    description: "robust tensor power method (Anandkumar et al. 2012, Algorithm 1): `restarts` L, `iterations` N per restart and polish, deflation; one step = one component (spec §5.2)",
    family: crate::TENSOR_DECOMPOSITION,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::tensor_decomposer_solver::<TensorPowerConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::planted_orthogonal_tensor;
    use crate::metrics::{component_recovery, tensor_reconstruction_error};
    use dyad_core::seeded;
    use dyad_kernels::fixtures::Models;

    #[test]
    fn recovers_a_planted_orthogonal_tensor() {
        for seed in 0..3 {
            let planted = planted_orthogonal_tensor(6, 0.0, seed);
            let mut obs = Models::default();
            TensorPowerConfig {
                restarts: 10,
                iterations: 30,
                components: None,
            }
            .fit(
                &MomentTensor::Dense(planted.tensor.clone()),
                &Schedule::new(vec![0, 3, 100]),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            let steps: Vec<u64> = obs.seen.iter().map(|(c, _)| c.step).collect();
            assert_eq!(steps, vec![0, 3, 6]);
            assert_eq!(obs.seen[1].1.weights.len(), 3);
            let dec = &obs.seen.last().unwrap().1;
            let rec = component_recovery(&planted.weights, planted.components.view(), dec);
            assert!(rec.max_angle < 1e-6, "seed {seed}: angle {}", rec.max_angle);
            assert!(rec.max_weight_error < 1e-8);
            assert!(tensor_reconstruction_error(&planted.tensor, dec) < 1e-8);
        }
    }

    #[test]
    fn flops_and_determinism() {
        let planted = planted_orthogonal_tensor(3, 0.0, 1);
        let cfg = TensorPowerConfig {
            restarts: 2,
            iterations: 4,
            components: Some(1),
        };
        let run = |seed| {
            let mut obs = Models::default();
            cfg.fit(
                &MomentTensor::Dense(planted.tensor.clone()),
                &Schedule::last_only(5),
                &mut seeded(seed),
                &mut obs,
            )
            .unwrap();
            obs.seen.pop().unwrap().1
        };
        let dec = run(4);
        // 2 restarts × (4 updates + 1 evaluation) + 4 updates + 1 evaluation + 1 deflation.
        let want = 12 * flops::tpm_power_update(3)
            + 3 * flops::tpm_evaluation(3)
            + flops::tpm_deflation(3);
        assert_eq!(dec.flops, want);
        assert_eq!(flops::tpm_power_update(3), 54 + 18 + 9 + 1);
        assert_eq!(dec, run(4));
        for (cfg, param) in [
            (
                TensorPowerConfig {
                    restarts: 0,
                    ..Default::default()
                },
                "restarts",
            ),
            (
                TensorPowerConfig {
                    iterations: 0,
                    ..Default::default()
                },
                "iterations",
            ),
            (
                TensorPowerConfig {
                    components: Some(0),
                    ..Default::default()
                },
                "components",
            ),
        ] {
            assert_eq!(cfg.check().unwrap_err().param, param);
        }
        let err = TensorPowerConfig {
            components: Some(4),
            ..Default::default()
        }
        .fit(
            &MomentTensor::Dense(Tensor3::zeros(3)),
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut Models::default(),
        );
        assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "components"));
    }
}
