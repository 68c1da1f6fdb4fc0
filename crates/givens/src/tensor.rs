//! Symmetric 3-tensors, moment tensors given by samples, and Algorithm 3: Givens coordinate
//! maximisation for orthogonal tensor decomposition (spec §4.1–4.3).
//!
//! # Objective (Theorem 3)
//!
//! ```text
//! max_{U ∈ O_K} f(U) = Σ_k T(u_k, u_k, u_k) = Σ_k T̃_kkk,     T̃ = T(U, U, U)
//! ```
//!
//! For an orthogonally decomposable `T = Σ λ_k v_k^{⊗3}` (`λ_k > 0`), the stable maxima are the
//! `U` whose columns are the `v_k` up to permutation, with `f = Σ λ_k`.
//!
//! # Algorithm 3
//!
//! `T̃ ← T`, `U ← I`; each step draws a pair `(i, j)` (Algorithm 1's rules), reads
//! `a = T̃_iii, b = T̃_jjj, p = T̃_ijj, q = T̃_iij`, takes the closed-form maximiser of the
//! coordinate function ([`TensorCoordinate`], spec §4.2) and, if it gains, applies
//! `T̃ ← T̃(G, G, G)` — mode by mode, rotating the pairs of slices `i` and `j` — and `U ← U G`.
//! Per accepted step `18K²` FLOPs for the tensor (3 modes × `K²` entry pairs × 6), `6K` for `U`,
//! and 150 for the angle \[A\]; a step that cannot gain costs the angle only. One step of the
//! [`Schedule`] is one pair drawn. Convergence: Algorithm 1's sweep rule, default tolerance
//! `1e-10` \[A\].
//!
//! The decomposition reported: `v_k = U[:, k]`, `λ_k = T̃_kkk` (computed fresh from the
//! tensor at each checkpoint: `K` reads, no FLOPs), in the order of `U`'s columns. `U` may
//! end in a sign pattern with some `λ_k < 0` (rotations keep `det U = 1`, and flipping one
//! column is not a rotation): `(λ, v)` and `(−λ, −v)` describe the same rank-one term, and the
//! GMM reconstruction is invariant to it (see `baselines::spherical_gmm`).
//!
//! # Input
//!
//! A [`MomentTensor`]: a dense symmetric tensor, or an empirical moment tensor given by samples
//! (`T_abc = w Σ_n y_an y_bn y_cn − (m_a M_bc + m_b M_ac + m_c M_ab)`, the whitened GMM tensor of
//! spec §5.3). Algorithm 3 forms the dense tensor from samples first (FLOPs counted, see
//! [`flops::tensor_from_samples`]); Algorithm 6 (`lazy = true`, [`super::lazy_tensor`]) works
//! on the samples directly.

use super::angle::TensorCoordinate;
use super::coordinate::{CoordinateProblem, Descent, run};
use super::lazy_tensor::LazyProblem;
use super::rotation::{ColMatrix, Givens, Selection, rotate_pair};
use super::{Decomposition, TensorDecomposer, flops};
use dyad_core::{Control, Observer, Rng, Schedule};
use dyad_kernels::linalg::dot;
use dyad_kernels::{AlgoError, Checked, ParamError};
use ndarray::{Array1, Array2, ArrayView2};
use serde::{Deserialize, Serialize};

/// A dense `K × K × K` tensor, entry `(a, b, c)` at `(a K + b) K + c`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor3 {
    k: usize,
    data: Vec<f64>,
}

impl Tensor3 {
    pub fn zeros(k: usize) -> Self {
        Self {
            k,
            data: vec![0.0; k * k * k],
        }
    }

    pub fn from_fn(k: usize, mut f: impl FnMut(usize, usize, usize) -> f64) -> Self {
        let mut t = Self::zeros(k);
        for a in 0..k {
            for b in 0..k {
                for c in 0..k {
                    t.data[(a * k + b) * k + c] = f(a, b, c);
                }
            }
        }
        t
    }

    /// `Σ_r λ_r v_r^{⊗3}` for the columns `v_r` of `v` (`K × R`).
    pub fn rank_one_sum(weights: &[f64], v: ArrayView2<'_, f64>) -> Self {
        assert_eq!(weights.len(), v.ncols());
        let k = v.nrows();
        let mut t = Self::zeros(k);
        for (r, &l) in weights.iter().enumerate() {
            let col = v.column(r);
            for a in 0..k {
                for b in 0..k {
                    let ab = l * col[a] * col[b];
                    for c in 0..k {
                        t.data[(a * k + b) * k + c] += ab * col[c];
                    }
                }
            }
        }
        t
    }

    pub fn dim(&self) -> usize {
        self.k
    }

    #[inline]
    pub fn get(&self, a: usize, b: usize, c: usize) -> f64 {
        self.data[(a * self.k + b) * self.k + c]
    }

    #[inline]
    pub fn set(&mut self, a: usize, b: usize, c: usize, v: f64) {
        self.data[(a * self.k + b) * self.k + c] = v;
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// Frobenius norm.
    pub fn norm(&self) -> f64 {
        dot(&self.data, &self.data).sqrt()
    }

    /// Largest `|T_abc − T_σ(abc)|` over the index permutations.
    pub fn asymmetry(&self) -> f64 {
        let k = self.k;
        let mut worst = 0.0f64;
        for a in 0..k {
            for b in 0..k {
                for c in 0..k {
                    let v = self.get(a, b, c);
                    for w in [
                        self.get(a, c, b),
                        self.get(b, a, c),
                        self.get(b, c, a),
                        self.get(c, a, b),
                        self.get(c, b, a),
                    ] {
                        worst = worst.max((v - w).abs());
                    }
                }
            }
        }
        worst
    }

    /// The average over the six index permutations.
    pub fn symmetrized(&self) -> Self {
        Self::from_fn(self.k, |a, b, c| {
            (self.get(a, b, c)
                + self.get(a, c, b)
                + self.get(b, a, c)
                + self.get(b, c, a)
                + self.get(c, a, b)
                + self.get(c, b, a))
                / 6.0
        })
    }

    /// `T(u, v, w) = Σ T_abc u_a v_b w_c`.
    pub fn eval(&self, u: &[f64], v: &[f64], w: &[f64]) -> f64 {
        let k = self.k;
        let mut total = 0.0;
        for (a, &ua) in u.iter().enumerate().take(k) {
            for (b, &vb) in v.iter().enumerate().take(k) {
                let row = &self.data[(a * k + b) * k..(a * k + b + 1) * k];
                total += ua * vb * dot(row, w);
            }
        }
        total
    }

    /// `T(I, θ, θ)_a = Σ_bc T_abc θ_b θ_c` into `out`.
    pub fn contract_two(&self, theta: &[f64], out: &mut [f64]) {
        let k = self.k;
        for (a, o) in out.iter_mut().enumerate() {
            let mut acc = 0.0;
            for b in 0..k {
                let row = &self.data[(a * k + b) * k..(a * k + b + 1) * k];
                acc += theta[b] * dot(row, theta);
            }
            *o = acc;
        }
    }

    /// `T ← T − λ θ^{⊗3}`.
    pub fn deflate(&mut self, lambda: f64, theta: &[f64]) {
        let k = self.k;
        for a in 0..k {
            for b in 0..k {
                let ab = lambda * theta[a] * theta[b];
                let row = &mut self.data[(a * k + b) * k..(a * k + b + 1) * k];
                for (r, &t) in row.iter_mut().zip(theta) {
                    *r -= ab * t;
                }
            }
        }
    }

    /// `T ← T(G, G, G)` for `G = G(i, j, θ)`: the three modes in turn, each rotating the pairs
    /// of entries at indices `i` and `j` (18K² FLOPs).
    pub fn rotate(&mut self, g: Givens) {
        let k = self.k;
        let (i, j) = (g.i, g.j);
        // Mode 0: slices T[i, :, :] and T[j, :, :] (contiguous, K² each).
        {
            let (lo, hi) = (i.min(j), i.max(j));
            let (head, tail) = self.data.split_at_mut(hi * k * k);
            let a = &mut head[lo * k * k..(lo + 1) * k * k];
            let b = &mut tail[..k * k];
            if i < j {
                rotate_pair(a, b, g.c, g.s);
            } else {
                rotate_pair(b, a, g.c, g.s);
            }
        }
        // Mode 1: rows T[a, i, :] and T[a, j, :] for every a.
        for a in 0..k {
            let base = a * k * k;
            let (lo, hi) = (i.min(j), i.max(j));
            let (head, tail) = self.data[base..base + k * k].split_at_mut(hi * k);
            let x = &mut head[lo * k..(lo + 1) * k];
            let y = &mut tail[..k];
            if i < j {
                rotate_pair(x, y, g.c, g.s);
            } else {
                rotate_pair(y, x, g.c, g.s);
            }
        }
        // Mode 2: entries T[a, b, i] and T[a, b, j].
        for row in self.data.chunks_exact_mut(k) {
            let (x, y) = (row[i], row[j]);
            row[i] = g.c * x + g.s * y;
            row[j] = g.c * y - g.s * x;
        }
    }

    /// `T(V, V, V)_abc = Σ T_a'b'c' V_a'a V_b'b V_c'c` (a reference for tests; `O(K⁴)`).
    pub fn multilinear(&self, v: ArrayView2<'_, f64>) -> Self {
        let k = self.k;
        assert_eq!(v.dim(), (k, k));
        let mut t1 = Self::zeros(k);
        for a in 0..k {
            for b in 0..k {
                for c in 0..k {
                    t1.data[(a * k + b) * k + c] =
                        (0..k).map(|x| self.get(x, b, c) * v[[x, a]]).sum();
                }
            }
        }
        let mut t2 = Self::zeros(k);
        for a in 0..k {
            for b in 0..k {
                for c in 0..k {
                    t2.data[(a * k + b) * k + c] =
                        (0..k).map(|x| t1.get(a, x, c) * v[[x, b]]).sum();
                }
            }
        }
        let mut t3 = Self::zeros(k);
        for a in 0..k {
            for b in 0..k {
                for c in 0..k {
                    t3.data[(a * k + b) * k + c] =
                        (0..k).map(|x| t2.get(a, b, x) * v[[x, c]]).sum();
                }
            }
        }
        t3
    }
}

/// A third-moment tensor given by samples: `T_abc = w Σ_n y_an y_bn y_cn − (m_a M_bc + m_b
/// M_ac + m_c M_ab)`, the correction optional.
#[derive(Debug, Clone, PartialEq)]
pub struct EmpiricalMoments {
    /// `K × N`: one row per coordinate, one column per sample.
    pub y: Array2<f64>,
    /// `w` (e.g. `1/N`).
    pub scale: f64,
    /// `(m, M)`: the vector and symmetric matrix of the correction term.
    pub correction: Option<(Array1<f64>, Array2<f64>)>,
}

impl EmpiricalMoments {
    pub fn dim(&self) -> usize {
        self.y.nrows()
    }

    pub fn samples(&self) -> usize {
        self.y.ncols()
    }

    /// Check shapes and finiteness.
    pub fn validate(&self) -> Result<(), AlgoError> {
        let k = self.dim();
        let bad = |m: String| Err(AlgoError::data(format!("empirical moments: {m}")));
        if k == 0 || self.samples() == 0 {
            return bad(format!("need K >= 1 and N >= 1, got {:?}", self.y.dim()));
        }
        if !(self.scale.is_finite()) || !self.y.iter().all(|v| v.is_finite()) {
            return bad("non-finite samples or scale".into());
        }
        if let Some((m, mm)) = &self.correction {
            if m.len() != k || mm.dim() != (k, k) {
                return bad("correction has the wrong shape".into());
            }
            if !m.iter().chain(mm.iter()).all(|v| v.is_finite()) {
                return bad("non-finite correction".into());
            }
        }
        Ok(())
    }

    /// The dense tensor (unique entries `a ≤ b ≤ c` computed, then mirrored), with its FLOPs.
    pub fn to_dense(&self) -> (Tensor3, u64) {
        let k = self.dim();
        let y = self.y.as_standard_layout();
        let mut t = Tensor3::zeros(k);
        let mut prod = vec![0.0; self.samples()];
        for a in 0..k {
            let ya = y.row(a);
            let ya = ya.as_slice().expect("standard layout");
            for b in a..k {
                let yb = y.row(b);
                let yb = yb.as_slice().expect("standard layout");
                for ((p, &u), &v) in prod.iter_mut().zip(ya).zip(yb) {
                    *p = u * v;
                }
                for c in b..k {
                    let mut v = self.scale * dot(&prod, y.row(c).as_slice().unwrap());
                    if let Some((m, mm)) = &self.correction {
                        v -= m[a] * mm[[b, c]] + m[b] * mm[[a, c]] + m[c] * mm[[a, b]];
                    }
                    for (x, y2, z) in [
                        (a, b, c),
                        (a, c, b),
                        (b, a, c),
                        (b, c, a),
                        (c, a, b),
                        (c, b, a),
                    ] {
                        t.set(x, y2, z, v);
                    }
                }
            }
        }
        (
            t,
            flops::tensor_from_samples(k, self.samples(), self.correction.is_some()),
        )
    }
}

/// The input of a tensor decomposer.
#[derive(Debug, Clone, PartialEq)]
pub enum MomentTensor {
    Dense(Tensor3),
    Empirical(EmpiricalMoments),
}

impl MomentTensor {
    pub fn dim(&self) -> usize {
        match self {
            MomentTensor::Dense(t) => t.dim(),
            MomentTensor::Empirical(e) => e.dim(),
        }
    }

    pub fn validate(&self) -> Result<(), AlgoError> {
        match self {
            MomentTensor::Dense(t) => {
                if t.dim() == 0 || !t.as_slice().iter().all(|v| v.is_finite()) {
                    return Err(AlgoError::data(
                        "tensor must be non-empty with finite entries",
                    ));
                }
                Ok(())
            }
            MomentTensor::Empirical(e) => e.validate(),
        }
    }

    /// The dense tensor and the FLOPs spent forming it (0 when already dense).
    pub fn dense(&self) -> (std::borrow::Cow<'_, Tensor3>, u64) {
        match self {
            MomentTensor::Dense(t) => (std::borrow::Cow::Borrowed(t), 0),
            MomentTensor::Empirical(e) => {
                let (t, f) = e.to_dense();
                (std::borrow::Cow::Owned(t), f)
            }
        }
    }
}

/// Parameters of Givens tensor decomposition (Algorithm 3, or Algorithm 6 with `lazy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GivensTensorConfig {
    /// Algorithm 6: evaluate the four entries from the samples at each step, rotate the
    /// samples (needs an [`MomentTensor::Empirical`] input). Default false (Algorithm 3).
    #[serde(default)]
    pub lazy: bool,
    #[serde(default)]
    pub selection: Selection,
    /// Sweep-window convergence tolerance (1e-10; 0 = run to the budget).
    #[serde(default = "default_tensor_tolerance")]
    pub tolerance: f64,
    #[serde(default)]
    pub max_flops: Option<u64>,
}

fn default_tensor_tolerance() -> f64 {
    1e-10
}

impl Default for GivensTensorConfig {
    fn default() -> Self {
        Self {
            lazy: false,
            selection: Selection::Uniform,
            tolerance: default_tensor_tolerance(),
            max_flops: None,
        }
    }
}

impl Checked for GivensTensorConfig {
    fn check(&self) -> Result<(), ParamError> {
        self.descent().check()
    }
}

impl GivensTensorConfig {
    fn descent(&self) -> Descent {
        Descent {
            selection: self.selection,
            tolerance: self.tolerance,
            max_flops: self.max_flops,
        }
    }
}

/// Algorithm 3's state.
pub(crate) struct DenseProblem {
    t: Tensor3,
    u: ColMatrix,
    value: f64,
}

impl DenseProblem {
    pub(crate) fn new(t: Tensor3) -> Self {
        let k = t.dim();
        let value = (0..k).map(|a| t.get(a, a, a)).sum();
        Self {
            u: ColMatrix::identity(k),
            t,
            value,
        }
    }
}

impl CoordinateProblem for DenseProblem {
    type Model = Decomposition;

    fn dim(&self) -> usize {
        self.t.dim()
    }

    fn value(&self) -> f64 {
        self.value
    }

    fn coordinate_step(&mut self, i: usize, j: usize, fl: &mut u64) -> Result<f64, AlgoError> {
        let t = &self.t;
        let g = TensorCoordinate::new(
            t.get(i, i, i),
            t.get(j, j, j),
            t.get(i, j, j),
            t.get(i, i, j),
        );
        let (theta, gain) = g.maximize();
        let rotated = gain > 0.0;
        *fl += flops::tensor_dense_step(self.t.dim(), rotated);
        if rotated {
            let giv = Givens::new(i, j, theta);
            self.t.rotate(giv);
            self.u.rotate(giv);
            self.value += gain;
        }
        Ok(gain)
    }

    fn report(
        &mut self,
        flops: u64,
        show: &mut dyn FnMut(&Decomposition) -> Control,
    ) -> Result<Control, AlgoError> {
        let k = self.t.dim();
        let weights: Vec<f64> = (0..k).map(|a| self.t.get(a, a, a)).collect();
        self.value = weights.iter().sum();
        Ok(show(&Decomposition {
            objective: self.value,
            weights,
            components: self.u.to_array(),
            flops,
            extract_flops: 0,
        }))
    }
}

impl TensorDecomposer for GivensTensorConfig {
    fn fit(
        &self,
        input: &MomentTensor,
        schedule: &Schedule,
        rng: &mut Rng,
        obs: &mut dyn Observer<Decomposition>,
    ) -> Result<(), AlgoError> {
        self.check()?;
        input.validate()?;
        if self.lazy {
            let MomentTensor::Empirical(e) = input else {
                return Err(AlgoError::param(
                    "lazy",
                    "= true needs an empirical (sample) input, got a dense tensor",
                ));
            };
            run(self.descent(), schedule, rng, obs, |fl| {
                Ok(LazyProblem::new(e, fl))
            })?;
        } else {
            run(self.descent(), schedule, rng, obs, |fl| {
                let (t, f) = input.dense();
                *fl += f;
                Ok(DenseProblem::new(t.into_owned()))
            })?;
        }
        Ok(())
    }

    fn is_iterative(&self) -> bool {
        true
    }
}

/// The `givens-tensor` entry of the solver list.
pub const SOLVER: dyad_kernels::SolverEntry = dyad_kernels::SolverEntry {
    name: "givens-tensor",
    label: "Givens",
    description: "Algorithm 3: Givens coordinate maximisation of sum_k T(u_k, u_k, u_k) over O_K with the closed-form angle; `lazy = true` is Algorithm 6 (entries from the samples) (spec §4.2-4.4)",
    family: crate::TENSOR_DECOMPOSITION,
    version: 1,
    machine_tolerance: 0.0,
    build: crate::tensor_decomposer_solver::<GivensTensorConfig>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::planted_orthogonal_tensor;
    use crate::metrics::{component_recovery, tensor_reconstruction_error};
    use crate::rotation::orthogonality_defect;
    use dyad_core::seeded;
    use dyad_kernels::fixtures::Models;
    use rand::Rng as _;

    fn max_abs_diff(a: &Tensor3, b: &Tensor3) -> f64 {
        a.as_slice()
            .iter()
            .zip(b.as_slice())
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
    }

    #[test]
    fn in_place_rotation_is_the_multilinear_product_and_the_closed_form_is_exact() {
        let mut rng = seeded(1);
        let k = 5;
        let t = Tensor3::from_fn(k, |_, _, _| rng.random_range(-1.0..1.0)).symmetrized();
        for &(i, j, theta) in &[(0, 3, 0.4), (2, 4, -1.9), (1, 2, 3.0)] {
            let g = Givens::new(i, j, theta);
            let mut r = t.clone();
            r.rotate(g);
            let want = t.multilinear(g.to_dense(k).view());
            assert!(max_abs_diff(&r, &want) < 1e-14);
            assert!(r.asymmetry() < 1e-14);
            // g(θ) from the four entries = Σ_k T̃_kkk after the rotation (spec §1.2 unit test).
            let c = TensorCoordinate::new(
                t.get(i, i, i),
                t.get(j, j, j),
                t.get(i, j, j),
                t.get(i, i, j),
            );
            let rest: f64 = (0..k)
                .filter(|&a| a != i && a != j)
                .map(|a| t.get(a, a, a))
                .sum();
            let direct: f64 = (0..k).map(|a| r.get(a, a, a)).sum();
            assert!((rest + c.value(theta) - direct).abs() < 1e-13);
        }
    }

    #[test]
    fn algorithm_3_recovers_a_planted_orthogonal_tensor() {
        for seed in 0..3 {
            let k = 8;
            let planted = planted_orthogonal_tensor(k, 0.0, seed);
            let mut obs = Models::default();
            GivensTensorConfig {
                tolerance: 1e-12,
                ..Default::default()
            }
            .fit(
                &MomentTensor::Dense(planted.tensor.clone()),
                &Schedule::new(vec![0, 200_000]),
                &mut seeded(seed + 10),
                &mut obs,
            )
            .unwrap();
            let (at, dec) = obs.seen.last().unwrap();
            assert!(at.last && at.step < 200_000, "converged before the budget");
            let total: f64 = planted.weights.iter().sum();
            assert!(
                (dec.objective - total).abs() < 1e-9,
                "seed {seed}: f = {} vs Σλ = {total}",
                dec.objective
            );
            assert!(orthogonality_defect(dec.components.view()) < 1e-12);
            let rec = component_recovery(&planted.weights, planted.components.view(), dec);
            assert!(
                rec.max_angle < 1e-5,
                "seed {seed}: worst angle {}",
                rec.max_angle
            );
            assert!(rec.max_weight_error < 1e-8);
            let err = tensor_reconstruction_error(&planted.tensor, dec);
            assert!(err < 1e-7, "relative reconstruction error {err}");
            // Objective values along the checkpoints never decrease.
            assert!(
                obs.seen
                    .windows(2)
                    .all(|w| w[1].1.objective >= w[0].1.objective - 1e-12)
            );
        }
    }

    #[test]
    fn empirical_moments_form_the_right_dense_tensor() {
        let mut rng = seeded(4);
        let (k, n) = (4, 30);
        let y = Array2::from_shape_fn((k, n), |_| rng.random_range(-1.0..1.0));
        let m = Array1::from_shape_fn(k, |_| rng.random_range(-1.0..1.0));
        let b = Array2::from_shape_fn((k, k), |_| rng.random_range(-1.0..1.0));
        let mm = &b + &b.t();
        let e = EmpiricalMoments {
            y: y.clone(),
            scale: 1.0 / n as f64,
            correction: Some((m.clone(), mm.clone())),
        };
        let (t, fl) = e.to_dense();
        let want = Tensor3::from_fn(k, |a, bb, c| {
            (0..n)
                .map(|s| y[[a, s]] * y[[bb, s]] * y[[c, s]])
                .sum::<f64>()
                / n as f64
                - (m[a] * mm[[bb, c]] + m[bb] * mm[[a, c]] + m[c] * mm[[a, bb]])
        });
        assert!(max_abs_diff(&t, &want) < 1e-13);
        // FLOPs: N·(10 pairs + 2·20 triples) + 7·20.
        assert_eq!(fl, 30 * (10 + 40) + 140);
    }

    #[test]
    fn same_seed_same_decomposition() {
        let planted = planted_orthogonal_tensor(6, 0.05, 3);
        let input = MomentTensor::Dense(planted.tensor);
        let run = |seed| {
            let mut obs = Models::default();
            GivensTensorConfig::default()
                .fit(
                    &input,
                    &Schedule::new(vec![0, 20, 60]),
                    &mut seeded(seed),
                    &mut obs,
                )
                .unwrap();
            obs.seen
                .into_iter()
                .map(|(_, d)| d)
                .collect::<Vec<Decomposition>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn flops_of_a_dense_step_match_the_hand_count() {
        let planted = planted_orthogonal_tensor(3, 0.0, 2);
        let mut obs = Models::default();
        let cfg = GivensTensorConfig {
            tolerance: 0.0,
            ..Default::default()
        };
        cfg.fit(
            &MomentTensor::Dense(planted.tensor),
            &Schedule::new(vec![0, 1]),
            &mut seeded(1),
            &mut obs,
        )
        .unwrap();
        let step = obs.seen[1].1.flops - obs.seen[0].1.flops;
        // 18·9 + 6·3 + 150 = 330 when it rotates (from U = I it does: V is random).
        assert_eq!(step, 330);
        // The lazy variant refuses a dense input.
        let lazy = GivensTensorConfig {
            lazy: true,
            ..Default::default()
        };
        let err = lazy.fit(
            &MomentTensor::Dense(Tensor3::zeros(2)),
            &Schedule::last_only(1),
            &mut seeded(1),
            &mut Models::default(),
        );
        assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == "lazy"));
        for (cfg, param) in [
            (
                GivensTensorConfig {
                    tolerance: f64::NAN,
                    ..Default::default()
                },
                "tolerance",
            ),
            (
                GivensTensorConfig {
                    max_flops: Some(0),
                    ..Default::default()
                },
                "max_flops",
            ),
        ] {
            assert_eq!(cfg.check().unwrap_err().param, param);
            let err = cfg.fit(
                &MomentTensor::Dense(Tensor3::zeros(2)),
                &Schedule::last_only(1),
                &mut seeded(1),
                &mut Models::default(),
            );
            assert!(matches!(err, Err(AlgoError::InvalidParam(ref e)) if e.param == param));
        }
    }
}
