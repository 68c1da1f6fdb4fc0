//! One-dimensional angle searches: Brent's method and a dense grid (sparse PCA, spec §3.2 and
//! the generic Algorithm 1), and the closed-form maximiser of the tensor coordinate function
//! (spec §4.2).
//!
//! # Closed form of the tensor coordinate function
//!
//! With the family's convention (`ũ_i = c u_i + s u_j`, `ũ_j = −s u_i + c u_j`) and
//! `a = T̃_iii, b = T̃_jjj, p = T̃_ijj, q = T̃_iij`, expanding `T(ũ_i,ũ_i,ũ_i) + T(ũ_j,ũ_j,ũ_j)`
//! by symmetry gives `c³(a+b) + s³(b−a) + 3c²s(q−p) + 3cs²(p+q)`, and `c² = 1 − s²` turns it into
//!
//! ```text
//! g(θ) − R = α c³ + β s³ + κ c + δ s,
//! α = a + b − 3p − 3q,  β = b − a + 3p − 3q,  κ = 3(p + q),  δ = 3(q − p)
//! ```
//!
//! (the text's Eq. 9 is this with θ → −θ: its rotation is the transposed one). Stationary
//! points with `c ≠ 0` are the roots of the cubic in `t = tan θ` obtained by dividing `g′` by
//! `c³`:
//!
//! ```text
//! −κ t³ + (3β + δ) t² − (3α + κ) t + δ = 0
//! ```
//!
//! Candidates: `θ = atan t_r` and `atan t_r + π` for every real root, `θ = ±π/2` (the
//! stationary points with `c = 0` the division loses) and `θ = 0` (no move), each polished by
//! up to two Newton steps on `g′` (kept only when they raise `g`), so that a nearly degenerate
//! cubic (leading coefficient ≈ 0, roots near ±∞) loses no accuracy. The best candidate wins;
//! `θ = 0` being one of them, the step never lowers the objective. All-zero coefficients
//! (`g` constant) give `θ = 0`.

use std::f64::consts::{FRAC_PI_2, PI};

/// Result of a 1-D search: the best angle found, its value, and the number of function
/// evaluations spent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    pub theta: f64,
    pub value: f64,
    pub evals: u32,
}

/// Maximise `f` on `[lo, hi]` by Brent's method (golden section with parabolic interpolation:
/// the Forsythe–Malcolm–Moler `fmin`, MATLAB's `fminbnd`), stopping when the bracket is within
/// `xtol` of the current best or after `max_evals` evaluations. Returns the best point
/// evaluated. Finds a local maximum; `f` is never evaluated at the end points.
pub fn brent_max(
    mut f: impl FnMut(f64) -> f64,
    lo: f64,
    hi: f64,
    xtol: f64,
    max_evals: u32,
) -> Search {
    // Minimise −f.
    let golden = 0.5 * (3.0 - 5f64.sqrt());
    let eps = f64::EPSILON.sqrt();
    let (mut a, mut b) = (lo, hi);
    let mut x = a + golden * (b - a);
    let (mut v, mut w) = (x, x);
    let mut fx = -f(x);
    let mut evals = 1;
    let (mut fv, mut fw) = (fx, fx);
    let (mut d, mut e) = (0.0f64, 0.0f64);
    while evals < max_evals {
        let xm = 0.5 * (a + b);
        let tol1 = eps * x.abs() + xtol / 3.0;
        let tol2 = 2.0 * tol1;
        if (x - xm).abs() <= tol2 - 0.5 * (b - a) {
            break;
        }
        let mut golden_step = true;
        if e.abs() > tol1 {
            // Parabola through (v, fv), (w, fw), (x, fx).
            let mut r = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            r = e;
            e = d;
            if p.abs() < (0.5 * q * r).abs() && p > q * (a - x) && p < q * (b - x) {
                d = p / q;
                let u = x + d;
                if u - a < tol2 || b - u < tol2 {
                    d = if xm >= x { tol1 } else { -tol1 };
                }
                golden_step = false;
            }
        }
        if golden_step {
            e = if x >= xm { a - x } else { b - x };
            d = golden * e;
        }
        let u = if d.abs() >= tol1 {
            x + d
        } else if d >= 0.0 {
            x + tol1
        } else {
            x - tol1
        };
        let fu = -f(u);
        evals += 1;
        if fu <= fx {
            if u >= x {
                a = x;
            } else {
                b = x;
            }
            (v, fv) = (w, fw);
            (w, fw) = (x, fx);
            (x, fx) = (u, fu);
        } else {
            if u < x {
                a = u;
            } else {
                b = u;
            }
            if fu <= fw || w == x {
                (v, fv) = (w, fw);
                (w, fw) = (u, fu);
            } else if fu <= fv || v == x || v == w {
                (v, fv) = (u, fu);
            }
        }
    }
    Search {
        theta: x,
        value: -fx,
        evals,
    }
}

/// Maximise `f` over `points` equally spaced angles `lo + (hi − lo)·k/points`, `k < points`.
pub fn grid_max(mut f: impl FnMut(f64) -> f64, lo: f64, hi: f64, points: u32) -> Search {
    let mut best = Search {
        theta: lo,
        value: f64::NEG_INFINITY,
        evals: 0,
    };
    for k in 0..points {
        let theta = lo + (hi - lo) * (k as f64) / (points as f64);
        let value = f(theta);
        best.evals += 1;
        if value > best.value {
            best.theta = theta;
            best.value = value;
        }
    }
    best
}

/// The coordinate function `g(θ) − R = α c³ + β s³ + κ c + δ s` of Algorithm 3.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorCoordinate {
    pub alpha: f64,
    pub beta: f64,
    pub kappa: f64,
    pub delta: f64,
}

impl TensorCoordinate {
    /// From `a = T̃_iii, b = T̃_jjj, p = T̃_ijj, q = T̃_iij` (module docs).
    pub fn new(a: f64, b: f64, p: f64, q: f64) -> Self {
        Self {
            alpha: a + b - 3.0 * p - 3.0 * q,
            beta: b - a + 3.0 * p - 3.0 * q,
            kappa: 3.0 * (p + q),
            delta: 3.0 * (q - p),
        }
    }

    /// `g(θ) − R`.
    pub fn value(&self, theta: f64) -> f64 {
        let (s, c) = theta.sin_cos();
        self.alpha * c * c * c + self.beta * s * s * s + self.kappa * c + self.delta * s
    }

    fn derivatives(&self, theta: f64) -> (f64, f64) {
        let (s, c) = theta.sin_cos();
        let (a, b, k, d) = (self.alpha, self.beta, self.kappa, self.delta);
        let g1 = -3.0 * a * c * c * s + 3.0 * b * s * s * c - k * s + d * c;
        let g2 = -3.0 * a * (c * c * c - 2.0 * c * s * s) + 3.0 * b * (2.0 * s * c * c - s * s * s)
            - k * c
            - d * s;
        (g1, g2)
    }

    /// The maximiser over `[−π, π)` and its gain `g(θ*) − g(0) ≥ 0` (module docs).
    pub fn maximize(&self) -> (f64, f64) {
        let g0 = self.value(0.0);
        let mut best = (0.0, g0);
        let mut consider = |theta: f64| {
            let mut th = theta;
            let mut val = self.value(th);
            for _ in 0..2 {
                let (g1, g2) = self.derivatives(th);
                if g2 >= 0.0 || !g2.is_finite() {
                    break;
                }
                let next = th - g1 / g2;
                let nv = self.value(next);
                if nv > val {
                    th = next;
                    val = nv;
                } else {
                    break;
                }
            }
            if val > best.1 {
                best = (th, val);
            }
        };
        let (roots, n) = real_cubic_roots(
            -self.kappa,
            3.0 * self.beta + self.delta,
            -(3.0 * self.alpha + self.kappa),
            self.delta,
        );
        for &t in &roots[..n] {
            let th = t.atan();
            consider(th);
            consider(th + PI);
        }
        consider(FRAC_PI_2);
        consider(-FRAC_PI_2);
        let (mut theta, value) = best;
        // Into [−π, π).
        theta = (theta + PI).rem_euclid(2.0 * PI) - PI;
        (theta, (value - g0).max(0.0))
    }
}

/// Real roots of `a t³ + b t² + c t + d` (dropping to the quadratic or linear case when the
/// leading coefficients are negligible), each polished by Newton steps.
pub fn real_cubic_roots(a: f64, b: f64, c: f64, d: f64) -> ([f64; 3], usize) {
    let mut out = [0.0; 3];
    let scale = a.abs().max(b.abs()).max(c.abs()).max(d.abs());
    if scale == 0.0 || !scale.is_finite() {
        return (out, 0);
    }
    let (a, b, c, d) = (a / scale, b / scale, c / scale, d / scale);
    let tiny = 1e-13;
    let mut n = 0;
    if a.abs() <= tiny {
        if b.abs() <= tiny {
            if c.abs() > tiny {
                out[0] = -d / c;
                n = 1;
            }
        } else {
            let disc = c * c - 4.0 * b * d;
            if disc >= 0.0 {
                // Stable quadratic formula.
                let qq = -0.5 * (c + c.signum() * disc.sqrt());
                if qq != 0.0 {
                    out[0] = qq / b;
                    out[1] = d / qq;
                    n = 2;
                } else {
                    out[0] = 0.0;
                    n = 1;
                }
            }
        }
    } else {
        let (bb, cc, dd) = (b / a, c / a, d / a);
        let p = cc - bb * bb / 3.0;
        let q = 2.0 * bb * bb * bb / 27.0 - bb * cc / 3.0 + dd;
        let shift = -bb / 3.0;
        let disc = 0.25 * q * q + p * p * p / 27.0;
        if disc > 0.0 {
            let sq = disc.sqrt();
            let u = (-0.5 * q - q.signum() * sq).cbrt();
            let x = if u != 0.0 { u - p / (3.0 * u) } else { 0.0 };
            out[0] = x + shift;
            n = 1;
        } else if p == 0.0 {
            out[0] = shift;
            n = 1;
        } else {
            let r = 2.0 * (-p / 3.0).sqrt();
            let arg = ((3.0 * q) / (2.0 * p) * (-3.0 / p).sqrt()).clamp(-1.0, 1.0);
            let phi = arg.acos() / 3.0;
            for (k, o) in out.iter_mut().enumerate() {
                *o = r * (phi - 2.0 * PI * k as f64 / 3.0).cos() + shift;
            }
            n = 3;
        }
    }
    for t in &mut out[..n] {
        for _ in 0..3 {
            let f = ((a * *t + b) * *t + c) * *t + d;
            let df = (3.0 * a * *t + 2.0 * b) * *t + c;
            if df == 0.0 || !df.is_finite() {
                break;
            }
            let next = *t - f / df;
            if next.is_finite() {
                *t = next;
            }
        }
    }
    (out, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;

    #[test]
    fn brent_finds_the_maximum_of_smooth_functions() {
        let f = |x: f64| -(x - 0.3).powi(2) + 2.0;
        let s = brent_max(f, -1.0, 1.0, 1e-8, 100);
        assert!((s.theta - 0.3).abs() < 1e-6 && (s.value - 2.0).abs() < 1e-12);
        // Parabolic steps make it fast on a quadratic.
        assert!(s.evals < 15, "{} evaluations", s.evals);
        // The evaluation cap is honoured.
        let s = brent_max(|x: f64| x.sin(), -1.0, 1.0, 1e-12, 4);
        assert_eq!(s.evals, 4);
        let g = grid_max(|x: f64| -(x - 0.25).abs(), 0.0, 1.0, 100);
        assert_eq!((g.theta, g.evals), (0.25, 100));
    }

    #[test]
    fn cubic_roots_are_roots() {
        let mut rng = seeded(3);
        for _ in 0..2000 {
            let c: Vec<f64> = (0..4).map(|_| rng.random_range(-2.0..2.0)).collect();
            let (r, n) = real_cubic_roots(c[0], c[1], c[2], c[3]);
            assert!(n == 1 || n == 3);
            for &t in &r[..n] {
                let f = ((c[0] * t + c[1]) * t + c[2]) * t + c[3];
                let scale = 1.0 + t.abs().powi(3);
                assert!(f.abs() < 1e-9 * scale, "residual {f}");
            }
        }
        // Known roots 1, 2, 3 and degenerate leading coefficients.
        let (r, n) = real_cubic_roots(1.0, -6.0, 11.0, -6.0);
        let mut r = r[..n].to_vec();
        r.sort_by(f64::total_cmp);
        assert!(n == 3 && (r[0] - 1.0).abs() < 1e-12 && (r[2] - 3.0).abs() < 1e-12);
        let (r, n) = real_cubic_roots(0.0, 1.0, -3.0, 2.0);
        assert_eq!(n, 2);
        assert!((r[0] * r[1] - 2.0).abs() < 1e-12);
        assert_eq!(real_cubic_roots(0.0, 0.0, 0.0, 0.0).1, 0);
    }

    #[test]
    fn closed_form_angle_beats_a_fine_grid_search() {
        let mut rng = seeded(7);
        let grid = 200_000;
        for case in 0..300 {
            let (a, b, p, q) = if case < 5 {
                // Degenerate cases: symmetric, all zero, zero cubic leading coefficient.
                [
                    (1.0, 1.0, 0.0, 0.0),
                    (0.0, 0.0, 0.0, 0.0),
                    (1.0, -2.0, 0.5, -0.5),
                    (0.0, 0.0, 1.0, 0.0),
                    (2.0, 0.5, 0.0, 0.0),
                ][case]
            } else {
                (
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-2.0..2.0),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                )
            };
            let g = TensorCoordinate::new(a, b, p, q);
            let (theta, gain) = g.maximize();
            assert!((-PI..PI).contains(&theta));
            let best = grid_max(|t| g.value(t), -PI, PI, grid);
            let closed = g.value(theta);
            assert!(
                closed >= best.value - 1e-9,
                "case {case}: closed form {closed} < grid {}",
                best.value
            );
            // Nothing better exists than what the grid plus its resolution allows.
            assert!(closed <= best.value + 1e-6);
            assert!((gain - (closed - g.value(0.0))).abs() < 1e-12);
            assert!(gain >= 0.0);
        }
    }
}
