//! The pair losses of Eq. (14) and the semismooth Newton solver shared by RS, SSR, TR and full
//! KR.
//!
//! All four minimise, over a vector `v` (the weights `w`, the scores `f`, or the kernel
//! matrix `K`),
//!
//! ```text
//! E(v) = Σ_{k ∈ P} max(0, 1 − a_k(v))² + Σ_{k ∈ O} a_k(v)² + vᵀ R v
//! ```
//!
//! where each pair's margin `a_k(v)` is linear in `v` (`wᵀ(x_i − x_j)`, `f_i − f_j`, `K_ij`)
//! and `R` is positive semi-definite (`λI`, `λXᵀLX + ridge·I`, `λL`, `λ P_anti L`). `E` is
//! convex and C¹ with a piecewise-linear gradient. The solver (`Newton`) is the finite
//! Newton method of Keerthi & DeCoste (JMLR 2005) for squared-hinge losses:
//!
//! 1. gradient `g = 2 R v + Σ_k l'(a_k) ∇a_k`, with `l_P'(a) = −2 max(0, 1 − a)`,
//!    `l_O'(a) = 2a`;
//! 2. direction `s` solving `H s = −g` for the generalised Hessian
//!    `H = 2R + 2 Σ_{k active} ∇a_k ∇a_kᵀ` (active: equality pairs, and inequality pairs with
//!    `a_k < 1`), by a dense Cholesky solve (RS, SSR) or by preconditioned conjugate
//!    gradients (TR, KR), stopped at a relative residual `min(0.1, ‖g‖/‖g₀‖)`;
//! 3. the **exact** line search [`exact_line_search`]: along `v + t s` every margin moves
//!    linearly, so `E` is a convex piecewise quadratic in `t` whose derivative is piecewise
//!    linear with breakpoints where a hinge switches. The breakpoints are sorted and swept
//!    (`O(|P| log |P|)`) until the derivative changes sign.
//!
//! A step of the schedule is one Newton iteration. The run finishes when the relative decrease
//! of `E` falls below the configured tolerance, when the gradient vanishes
//! (`‖g‖ ≤ 1e-12 (1 + E)`), or at `max_iter`. If an inexact CG direction is not a descent
//! direction (it always is in exact arithmetic), the step falls back to `−g`.

use dyad_kernels::AlgoError;

/// Labelled pairs of example indices into the feature matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairs {
    /// Inequality labels `(i, j)`: `i` ranks above `j` (the set `P`).
    pub above: Vec<(usize, usize)>,
    /// Equality labels `{i, j}`, each stored once (the set `O`).
    pub equal: Vec<(usize, usize)>,
}

impl Pairs {
    pub fn new(above: Vec<(usize, usize)>, equal: Vec<(usize, usize)>) -> Self {
        Self { above, equal }
    }

    /// Number of pairs, inequality and equality.
    pub fn len(&self) -> usize {
        self.above.len() + self.equal.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All pairs, inequality pairs first (the order of margin vectors).
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.above.iter().chain(&self.equal).copied()
    }

    /// Every index below `n` and no pair of a point with itself.
    pub fn check(&self, n: usize, what: &str) -> Result<(), AlgoError> {
        for (i, j) in self.iter() {
            if i >= n || j >= n {
                return Err(AlgoError::data(format!(
                    "{what} pair ({i}, {j}) indexes beyond the {n} examples"
                )));
            }
            if i == j {
                return Err(AlgoError::data(format!(
                    "{what} pair ({i}, {i}) compares an example with itself"
                )));
            }
        }
        Ok(())
    }
}

/// `Σ_P max(0, 1 − a)² + Σ_O a²` for margins `a` (inequality pairs first, `n_above` of them).
pub fn pair_loss(a: &[f64], n_above: usize) -> f64 {
    let (p, o) = a.split_at(n_above);
    p.iter().map(|&v| (1.0 - v).max(0.0).powi(2)).sum::<f64>()
        + o.iter().map(|v| v * v).sum::<f64>()
}

/// The derivatives `l'(a_k)` into `c` and the generalised second-derivative weights (1 for
/// active terms, 0 for inactive hinges) into `w`.
pub fn pair_derivatives(a: &[f64], n_above: usize, c: &mut [f64], w: &mut [f64]) {
    for (k, &v) in a.iter().enumerate() {
        if k < n_above {
            let h = (1.0 - v).max(0.0);
            c[k] = -2.0 * h;
            w[k] = if h > 0.0 { 1.0 } else { 0.0 };
        } else {
            c[k] = 2.0 * v;
            w[k] = 1.0;
        }
    }
}

/// The minimiser `t ≥ 0` of
/// `φ(t) = Σ_{k<n_above} max(0, 1 − a_k − t b_k)² + Σ_{k≥n_above} (a_k + t b_k)² + 2 c1 t + c2 t²`
/// (module docs). `φ'(0) ≥ 0` gives 0.
pub fn exact_line_search(a: &[f64], b: &[f64], n_above: usize, c1: f64, c2: f64) -> f64 {
    // φ'(t) = alpha + beta t on each interval between breakpoints.
    let (mut alpha, mut beta) = (2.0 * c1, 2.0 * c2);
    let mut events: Vec<(f64, usize)> = Vec::new();
    for k in 0..a.len() {
        let (ak, bk) = (a[k], b[k]);
        if k >= n_above {
            alpha += 2.0 * ak * bk;
            beta += 2.0 * bk * bk;
            continue;
        }
        let u = 1.0 - ak;
        if bk == 0.0 {
            // Constant hinge: no contribution to φ'.
            continue;
        }
        let tk = u / bk;
        let active_at_start = if bk > 0.0 { tk > 0.0 } else { tk <= 0.0 };
        if active_at_start {
            alpha += -2.0 * bk * u;
            beta += 2.0 * bk * bk;
        }
        if tk > 0.0 {
            events.push((tk, k));
        }
    }
    events.sort_unstable_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
    let mut lo = 0.0;
    for &(te, k) in &events {
        if alpha + beta * te >= 0.0 {
            return root(alpha, beta, lo);
        }
        let (u, bk) = (1.0 - a[k], b[k]);
        if bk > 0.0 {
            // Leaves the active set.
            alpha -= -2.0 * bk * u;
            beta -= 2.0 * bk * bk;
        } else {
            alpha += -2.0 * bk * u;
            beta += 2.0 * bk * bk;
        }
        lo = te;
    }
    root(alpha, beta, lo)
}

fn root(alpha: f64, beta: f64, lo: f64) -> f64 {
    if alpha + beta * lo >= 0.0 {
        lo
    } else if beta > 0.0 {
        (-alpha / beta).max(lo)
    } else {
        // φ decreasing without bound cannot happen for E ≥ 0; stay at the last breakpoint.
        lo
    }
}

/// A problem of the form of the module docs.
pub(crate) trait PairProblem {
    /// Dimension of `v`.
    fn dim(&self) -> usize;
    /// Number of inequality pairs (they come first among the margins).
    fn n_above(&self) -> usize;
    /// Number of pairs.
    fn n_pairs(&self) -> usize;
    /// The margins `a_k(v)`.
    fn margins(&self, v: &[f64], out: &mut [f64]);
    /// `out = Σ_k c_k ∇a_k`.
    fn adjoint(&self, c: &[f64], out: &mut [f64]);
    /// `out = R v`.
    fn reg(&self, v: &[f64], out: &mut [f64]);
    /// The Newton direction `out ≈ −H⁻¹ g` for active weights `w`; returns the inner
    /// iterations spent. Default: conjugate gradients with [`Self::precondition`].
    fn direction(
        &self,
        w: &[f64],
        g: &[f64],
        rel_tol: f64,
        max_iter: usize,
        out: &mut [f64],
    ) -> Result<u64, AlgoError> {
        Ok(conjugate_gradients(self, w, g, rel_tol, max_iter, out))
    }
    /// `z = M⁻¹ r` for a preconditioner `M ≈ H` (default: none).
    fn precondition(&self, _w: &[f64], r: &[f64], z: &mut [f64]) {
        z.copy_from_slice(r);
    }
    /// Remove from `v` its part in a subspace along which `E` is constant for every active
    /// set (default: none). The preconditioned CG iterates and the steps are kept off it:
    /// `H` never sees that part, so rounding (and a preconditioner that does not map `H`'s
    /// range to itself) would let it grow without bound.
    fn project(&self, _v: &mut [f64]) {}
}

/// `out = H s = 2 R s + 2 Σ_k w_k a_k(s) ∇a_k`, with scratch `m` (margins) and `t`.
pub(crate) fn hess_apply<P: PairProblem + ?Sized>(
    p: &P,
    w: &[f64],
    s: &[f64],
    m: &mut [f64],
    t: &mut [f64],
    out: &mut [f64],
) {
    p.margins(s, m);
    for (mk, wk) in m.iter_mut().zip(w) {
        *mk *= 2.0 * wk;
    }
    p.adjoint(m, t);
    p.reg(s, out);
    for (o, tv) in out.iter_mut().zip(t.iter()) {
        *o = 2.0 * *o + tv;
    }
}

fn dotv(a: &[f64], b: &[f64]) -> f64 {
    dyad_kernels::linalg::dot(a, b)
}

/// Preconditioned CG for `H s = −g`, from `s = 0`, until `‖r‖ ≤ rel_tol ‖g‖` or `max_iter`.
pub(crate) fn conjugate_gradients<P: PairProblem + ?Sized>(
    p: &P,
    w: &[f64],
    g: &[f64],
    rel_tol: f64,
    max_iter: usize,
    s: &mut [f64],
) -> u64 {
    let d = p.dim();
    let mut m = vec![0.0; p.n_pairs()];
    let mut t = vec![0.0; d];
    let mut r: Vec<f64> = g.iter().map(|v| -v).collect();
    let mut z = vec![0.0; d];
    let mut q = vec![0.0; d];
    s.fill(0.0);
    let target = rel_tol * dotv(g, g).sqrt();
    p.precondition(w, &r, &mut z);
    p.project(&mut z);
    let mut dir = z.clone();
    let mut rz = dotv(&r, &z);
    let mut it = 0;
    while it < max_iter {
        if dotv(&r, &r).sqrt() <= target || rz <= 0.0 {
            break;
        }
        hess_apply(p, w, &dir, &mut m, &mut t, &mut q);
        let dq = dotv(&dir, &q);
        if dq <= 0.0 {
            break;
        }
        let alpha = rz / dq;
        for k in 0..d {
            s[k] += alpha * dir[k];
            r[k] -= alpha * q[k];
        }
        p.precondition(w, &r, &mut z);
        p.project(&mut z);
        let rz_new = dotv(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for k in 0..d {
            dir[k] = z[k] + beta * dir[k];
        }
        it += 1;
    }
    it as u64
}

/// A rise of `E` over one Newton step up to this share of `E` is rounding at the optimum.
const ROUNDING: f64 = 1e-12;

/// Settings of the Newton solver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NewtonSettings {
    pub tolerance: f64,
    pub cg_max_iter: usize,
}

/// The state of a Newton run on a [`PairProblem`] (module docs).
pub(crate) struct Newton {
    pub v: Vec<f64>,
    a: Vec<f64>,
    rv: Vec<f64>,
    g: Vec<f64>,
    s: Vec<f64>,
    c: Vec<f64>,
    w: Vec<f64>,
    b: Vec<f64>,
    rs: Vec<f64>,
    g0: f64,
    pub objective: f64,
    pub iterations: u64,
    pub inner_iterations: u64,
    settings: NewtonSettings,
}

impl Newton {
    /// Start from `v0`.
    pub fn new<P: PairProblem + ?Sized>(p: &P, v0: Vec<f64>, settings: NewtonSettings) -> Self {
        let (d, np) = (p.dim(), p.n_pairs());
        let mut st = Newton {
            v: v0,
            a: vec![0.0; np],
            rv: vec![0.0; d],
            g: vec![0.0; d],
            s: vec![0.0; d],
            c: vec![0.0; np],
            w: vec![0.0; np],
            b: vec![0.0; np],
            rs: vec![0.0; d],
            g0: 0.0,
            objective: 0.0,
            iterations: 0,
            inner_iterations: 0,
            settings,
        };
        st.refresh(p);
        st
    }

    /// Measure the CG tolerance `min(0.1, ‖g‖/g₀)` against `g0` instead of the first
    /// iteration's gradient norm: a run warm-started near its optimum gives it the norm at
    /// the cold start, so its directions are solved as tightly as a cold run's near the same
    /// point (else they stay at 0.1 and the run stops early on a small decrease).
    pub fn set_gradient_scale(&mut self, g0: f64) {
        self.g0 = g0;
    }

    /// Recompute margins, `R v` and `E` from `v`.
    fn refresh<P: PairProblem + ?Sized>(&mut self, p: &P) {
        p.margins(&self.v, &mut self.a);
        p.reg(&self.v, &mut self.rv);
        self.objective = pair_loss(&self.a, p.n_above()) + dotv(&self.v, &self.rv);
    }

    /// The gradient at the current point into `out`.
    pub fn gradient<P: PairProblem + ?Sized>(&mut self, p: &P, out: &mut [f64]) {
        pair_derivatives(&self.a, p.n_above(), &mut self.c, &mut self.w);
        p.adjoint(&self.c, out);
        for (o, r) in out.iter_mut().zip(&self.rv) {
            *o += 2.0 * r;
        }
    }

    /// `s = -g`.
    fn steepest_direction(&mut self, g: &[f64]) {
        for (sv, gv) in self.s.iter_mut().zip(g) {
            *sv = -gv;
        }
    }

    /// Move `v` to the exact minimiser of `E` along `s` and refresh.
    fn line_step<P: PairProblem + ?Sized>(&mut self, p: &P) {
        p.margins(&self.s, &mut self.b);
        p.reg(&self.s, &mut self.rs);
        let c1 = dotv(&self.s, &self.rv);
        let c2 = dotv(&self.s, &self.rs);
        let t = exact_line_search(&self.a, &self.b, p.n_above(), c1, c2);
        for (v, s) in self.v.iter_mut().zip(&self.s) {
            *v += t * s;
        }
        self.refresh(p);
    }

    /// One Newton iteration; `Ok(true)` when the run has converged.
    pub fn step<P: PairProblem + ?Sized>(&mut self, p: &P) -> Result<bool, AlgoError> {
        let mut g = std::mem::take(&mut self.g);
        self.gradient(p, &mut g);
        let gn = dotv(&g, &g).sqrt();
        if !gn.is_finite() {
            self.g = g;
            return Err(AlgoError::Numerical("non-finite gradient".into()));
        }
        self.iterations += 1;
        if self.g0 == 0.0 {
            self.g0 = gn;
        }
        if gn <= 1e-12 * (1.0 + self.objective) {
            self.g = g;
            return Ok(true);
        }
        let rel = (gn / self.g0).min(0.1);
        self.inner_iterations +=
            p.direction(&self.w, &g, rel, self.settings.cg_max_iter, &mut self.s)?;
        let descent = dotv(&self.s, &g).partial_cmp(&0.0) == Some(std::cmp::Ordering::Less);
        let mut steepest = !descent || self.s.iter().any(|v| !v.is_finite());
        if steepest {
            self.steepest_direction(&g);
        }
        p.project(&mut self.s);
        let old = self.objective;
        let before = self.v.clone();
        loop {
            self.line_step(p);
            if self.objective >= 0.0 && self.objective <= old {
                break;
            }
            if self.objective >= 0.0 && self.objective <= old * (1.0 + ROUNDING) {
                // Rounding at the optimum: the exact line search cannot increase E.
                self.g = g;
                return Ok(true);
            }
            // More than rounding: a direction from a CG solve stopped at its cap on a nearly
            // singular system can be huge, and E along it is lost to rounding (measured on
            // TR before `project`: 84.16 -> 4.9e7 in one step, and 0.908 -> -1.5e7, though
            // E >= 0; tests/kr_consistency.rs). Go back; try the steepest descent direction
            // once, then stop at the better point.
            self.v.copy_from_slice(&before);
            self.refresh(p);
            if steepest {
                self.g = g;
                return Ok(true);
            }
            steepest = true;
            self.steepest_direction(&g);
            p.project(&mut self.s);
        }
        self.g = g;
        Ok(old - self.objective <= self.settings.tolerance * old.max(f64::MIN_POSITIVE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;

    fn phi(a: &[f64], b: &[f64], na: usize, c1: f64, c2: f64, t: f64) -> f64 {
        let m: Vec<f64> = a.iter().zip(b).map(|(x, y)| x + t * y).collect();
        pair_loss(&m, na) + 2.0 * c1 * t + c2 * t * t
    }

    #[test]
    fn line_search_finds_the_minimum_of_the_piecewise_quadratic() {
        let mut rng = seeded(1);
        for case in 0..300 {
            let np = rng.random_range(1..12);
            let na = rng.random_range(0..=np);
            let a: Vec<f64> = (0..np).map(|_| rng.random_range(-2.0..2.0)).collect();
            let mut b: Vec<f64> = (0..np).map(|_| rng.random_range(-2.0..2.0)).collect();
            if case % 5 == 0 {
                b[0] = 0.0;
            }
            let c2 = rng.random_range(0.0..1.0);
            let c1 = rng.random_range(-1.0..1.0);
            let t = exact_line_search(&a, &b, na, c1, c2);
            assert!(t >= 0.0);
            let f = |t: f64| phi(&a, &b, na, c1, c2, t);
            // Optimal against a fine grid and its neighbours.
            for q in 0..400 {
                let u = q as f64 * 0.02;
                assert!(f(t) <= f(u) + 1e-12, "case {case}: t={t} u={u}");
            }
            for e in [1e-6, -1e-6] {
                if t + e >= 0.0 {
                    assert!(f(t) <= f(t + e) + 1e-12);
                }
            }
        }
    }

    #[test]
    fn pair_derivatives_match_finite_differences() {
        let a = [0.3, 1.7, -0.5, 0.2];
        let (mut c, mut w) = ([0.0; 4], [0.0; 4]);
        pair_derivatives(&a, 3, &mut c, &mut w);
        for k in 0..4 {
            let h = 1e-6;
            let mut ap = a;
            ap[k] += h;
            let mut am = a;
            am[k] -= h;
            let fd = (pair_loss(&ap, 3) - pair_loss(&am, 3)) / (2.0 * h);
            assert!((fd - c[k]).abs() < 1e-8);
        }
        assert_eq!(w, [1.0, 0.0, 1.0, 1.0]);
    }
}
