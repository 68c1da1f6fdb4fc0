//! Symmetric matrices updated by queued rank-one terms, and the kernels that apply a queue.
//!
//! Online learners that add a dense rank-one term to a `d x d` matrix every step (f-AROMA's
//! `W`, `Λ`, `Ω`; ITML's Bregman projections `A += β (Az)(Az)^T`) but read it only through
//! products with sparse vectors need not stream the matrix every step: the terms are
//! queued, `A x = A_0 x + Σ_t g_t (v_t·x) v_t` is formed through the queue (the rows of
//! `A_0` at `supp(x)`, contiguous because both triangles are stored, plus one axpy per
//! queued term), and when [`QUEUE`] terms are waiting they are applied in one sweep
//! ([`rank_update`]: four rows at a time, so each element of a term vector is loaded once
//! for four rows). A step then costs `O(d nnz(x) + QUEUE d)` plus `1/QUEUE` of the sweep
//! (`d^2 / 2` multiply-adds amortised for a symmetric matrix, whose lower triangle is
//! computed and copied up, so it is symmetric bit for bit). Every kernel is element-wise
//! in a fixed order, so it vectorises at any width with the same bits (no fused
//! multiply-add); the sweeps are compiled per width by the callers ([`crate::simd`]).
//! The queued form changes rounding only (the same sums associated differently).

use crate::linalg::{LinalgError, try_zeroed};
use crate::simd::{Isa, multiversion};
use dyad_core::sparse::dot_dense;
use ndarray::Array2;

/// Rank-one terms queued before a sweep (module docs). Measured on f-AROMA at d = 1,000
/// (`just bench`, group `f_aroma_round`, one row at a time): 404 µs per updating round at
/// 16, 367 µs at 32, 350 µs at 64; the sweep's flops per term do not depend on the queue
/// length, only its memory traffic and the per-step queue work `O(QUEUE d)` do.
pub const QUEUE: usize = 32;

/// `row += Σ_t coefs[t] vecs[t][..row.len()]`, the terms four at a time (one load and
/// store of `row` per four terms), `vecs[t]` the `t`-th slice of length `stride`.
/// Element-wise, so it vectorises at any width with the same bits (no fused multiply-add).
#[inline(always)]
pub fn add_terms(row: &mut [f64], coefs: &[f64], vecs: &[f64], stride: usize) {
    let len = row.len();
    let v = |t: usize| &vecs[t * stride..t * stride + len];
    let mut t = 0;
    while t + 4 <= coefs.len() {
        let (c0, c1, c2, c3) = (coefs[t], coefs[t + 1], coefs[t + 2], coefs[t + 3]);
        let (v0, v1, v2, v3) = (v(t), v(t + 1), v(t + 2), v(t + 3));
        for j in 0..len {
            row[j] += c0 * v0[j] + c1 * v1[j] + c2 * v2[j] + c3 * v3[j];
        }
        t += 4;
    }
    for (c, t) in coefs[t..].iter().zip(t..) {
        for (x, &y) in row.iter_mut().zip(v(t)) {
            *x += c * y;
        }
    }
}

/// [`add_terms`] on four rows of equal length at once, each with its own coefficients and
/// the same `vecs`: every entry gets the same operations in the same order (so the same
/// bits), and each element of `vecs` is loaded once for the four rows instead of four
/// times.
#[inline(always)]
pub fn add_terms4(rows: [&mut [f64]; 4], coefs: [&[f64]; 4], vecs: &[f64], stride: usize) {
    let [r0, r1, r2, r3] = rows;
    let len = r0.len();
    let (r1, r2, r3) = (&mut r1[..len], &mut r2[..len], &mut r3[..len]);
    let v = |t: usize| &vecs[t * stride..t * stride + len];
    let k = coefs[0].len();
    let mut t = 0;
    while t + 4 <= k {
        let c = |r: usize| -> [f64; 4] {
            let c: &[f64] = coefs[r];
            [c[t], c[t + 1], c[t + 2], c[t + 3]]
        };
        let (a, b, c, d) = (c(0), c(1), c(2), c(3));
        let (v0, v1, v2, v3) = (v(t), v(t + 1), v(t + 2), v(t + 3));
        for j in 0..len {
            let (x0, x1, x2, x3) = (v0[j], v1[j], v2[j], v3[j]);
            r0[j] += a[0] * x0 + a[1] * x1 + a[2] * x2 + a[3] * x3;
            r1[j] += b[0] * x0 + b[1] * x1 + b[2] * x2 + b[3] * x3;
            r2[j] += c[0] * x0 + c[1] * x1 + c[2] * x2 + c[3] * x3;
            r3[j] += d[0] * x0 + d[1] * x1 + d[2] * x2 + d[3] * x3;
        }
        t += 4;
    }
    let tail = |r: usize| &coefs[r][t..];
    for (((x, &a), &b), (&c, &d)) in (t..k)
        .map(v)
        .zip(tail(0))
        .zip(tail(1))
        .zip(tail(2).iter().zip(tail(3)))
    {
        for j in 0..len {
            r0[j] += a * x[j];
            r1[j] += b * x[j];
            r2[j] += c * x[j];
            r3[j] += d * x[j];
        }
    }
}

/// `a += Σ_t s_t x_t y_t^T` on the `rows x n` row-major `a` (`x_t`: the `t`-th slice of `x`,
/// length `xs`; `y_t` of `y`, length `n`), or with `lower` only on the entries `j <= i`:
/// four rows at a time ([`add_terms4`] over the columns they share, [`add_terms`] for the
/// rest), every entry summed as [`add_terms`] sums it. `coefs`: scratch of `4 s.len()`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn rank_update(
    a: &mut [f64],
    n: usize,
    s: &[f64],
    x: &[f64],
    xs: usize,
    y: &[f64],
    lower: bool,
    coefs: &mut [f64],
) {
    let k = s.len();
    if n == 0 || k == 0 {
        return;
    }
    let rows = a.len() / n;
    let coefs = &mut coefs[..4 * k];
    let fill = |c: &mut [f64], i: usize| {
        for (t, (ct, &st)) in c.iter_mut().zip(s).enumerate() {
            *ct = st * x[t * xs + i];
        }
    };
    let full = rows / 4 * 4;
    for (b, block) in a[..full * n].chunks_exact_mut(4 * n).enumerate() {
        let i0 = 4 * b;
        for (r, c) in coefs.chunks_exact_mut(k).enumerate() {
            fill(c, i0 + r);
        }
        let shared = if lower { i0 + 1 } else { n };
        let (q0, rest) = block.split_at_mut(n);
        let (q1, rest) = rest.split_at_mut(n);
        let (q2, q3) = rest.split_at_mut(n);
        let mut rows_coefs = coefs.chunks_exact(k);
        let cs: [&[f64]; 4] = std::array::from_fn(|_| rows_coefs.next().expect("four rows"));
        add_terms4(
            [
                &mut q0[..shared],
                &mut q1[..shared],
                &mut q2[..shared],
                &mut q3[..shared],
            ],
            [cs[0], cs[1], cs[2], cs[3]],
            y,
            n,
        );
        if lower {
            for (r, row) in [q1, q2, q3].into_iter().enumerate() {
                let end = i0 + r + 2;
                add_terms(&mut row[shared..end], cs[r + 1], &y[shared..], n);
            }
        }
    }
    for i in full..rows {
        let c = &mut coefs[..k];
        fill(c, i);
        let end = if lower { i + 1 } else { n };
        add_terms(&mut a[i * n..i * n + end], c, y, n);
    }
}

/// `out = Σ_k x_k A[k, :]` for the rows of a row-major `A` with `cols` columns.
pub fn rows_times(a: &[f64], cols: usize, idx: &[usize], val: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    for (&k, &xk) in idx.iter().zip(val) {
        for (o, &y) in out.iter_mut().zip(&a[k * cols..(k + 1) * cols]) {
            *o += xk * y;
        }
    }
}

/// `out[t] = vecs[t] · x` for the first `out.len()` slices of length `stride`.
pub fn queue_dots(vecs: &[f64], stride: usize, idx: &[usize], val: &[f64], out: &mut [f64]) {
    for (t, o) in out.iter_mut().enumerate() {
        *o = dot_dense(&vecs[t * stride..(t + 1) * stride], idx, val);
    }
}

/// `A_0 += Σ_t g_t v_t v_t^T` on the lower triangle of the `n x n` row-major `a`
/// ([`rank_update`]), then the lower triangle copied onto the upper one (blocks of 64 x 64,
/// so both sides stay in cache): exactly symmetric.
#[inline(always)]
pub fn flush_symmetric(a: &mut [f64], n: usize, g: &[f64], vecs: &[f64], coefs: &mut [f64]) {
    rank_update(a, n, g, vecs, n, vecs, true, coefs);
    const B: usize = 64;
    for bi in (0..n).step_by(B) {
        for bj in (0..=bi).step_by(B) {
            for i in bi..(bi + B).min(n) {
                for j in bj..(bj + B).min(i) {
                    a[j * n + i] = a[i * n + j];
                }
            }
        }
    }
}

/// A symmetric `n x n` matrix `A = A_0 + Σ_t g_t v_t v_t^T` (module docs): `A_0` in full,
/// row-major, exactly symmetric; up to [`QUEUE`] terms waiting.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedSym {
    n: usize,
    a: Vec<f64>,
    vecs: Vec<f64>,
    g: Vec<f64>,
    coefs: Vec<f64>,
    isa: Isa,
}

/// One sweep of a [`QueuedSym`], compiled per vector width.
#[inline(always)]
fn sweep_body<const W: u8>(a: &mut [f64], n: usize, g: &[f64], vecs: &[f64], coefs: &mut [f64]) {
    flush_symmetric(a, n, g, vecs, coefs);
}

multiversion!(sweep, sweep_body, (a: &mut [f64], n: usize, g: &[f64], vecs: &[f64], coefs: &mut [f64]) -> ());

impl QueuedSym {
    /// `c I` of order `n` (fallible allocation).
    pub fn scaled_identity(n: usize, c: f64) -> Result<Self, LinalgError> {
        let len = n
            .checked_mul(n)
            .ok_or_else(|| LinalgError(format!("symmetric matrix of order {n} overflows")))?;
        let mut a = try_zeroed(len, "symmetric matrix")?;
        for i in 0..n {
            a[i * n + i] = c;
        }
        Ok(Self {
            n,
            a,
            vecs: vec![0.0; QUEUE * n],
            g: Vec::with_capacity(QUEUE),
            coefs: vec![0.0; 4 * QUEUE],
            isa: Isa::detect(),
        })
    }

    pub fn dim(&self) -> usize {
        self.n
    }

    /// `out = A x` for a sparse `x` (strictly increasing `idx`), through the queue.
    pub fn mul_sparse(&self, idx: &[usize], val: &[f64], out: &mut [f64]) {
        let (n, k) = (self.n, self.g.len());
        rows_times(&self.a, n, idx, val, out);
        let mut c = [0.0; QUEUE];
        queue_dots(&self.vecs, n, idx, val, &mut c[..k]);
        for (c, &g) in c.iter_mut().zip(&self.g) {
            *c *= g;
        }
        add_terms(out, &c[..k], &self.vecs, n);
    }

    /// `A += g v v^T` (queued; a sweep when the queue is full).
    pub fn rank_one(&mut self, g: f64, v: &[f64]) {
        let (n, k) = (self.n, self.g.len());
        assert_eq!(v.len(), n, "rank-one vector length");
        self.vecs[k * n..(k + 1) * n].copy_from_slice(v);
        self.g.push(g);
        if self.g.len() == QUEUE {
            self.flush();
        }
    }

    /// Apply the queued terms (one sweep).
    pub fn flush(&mut self) {
        if !self.g.is_empty() {
            sweep(
                self.isa,
                &mut self.a,
                self.n,
                &self.g,
                &self.vecs,
                &mut self.coefs,
            );
            self.g.clear();
        }
    }

    /// The matrix with its queue applied (the same sweep, on a copy).
    pub fn to_dense(&self) -> Array2<f64> {
        let mut c = self.clone();
        c.flush();
        Array2::from_shape_vec((self.n, self.n), c.a).expect("n x n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;

    #[test]
    fn queued_products_and_sweeps_equal_the_dense_updates() {
        // Random rank-one terms of both signs, across two sweeps and a partial queue:
        // products through the queue and the swept matrix equal the dense sums, the
        // swept matrix is symmetric bit for bit, and every vector width gives the same bits.
        let n = 23;
        let mut rng = seeded(3);
        let mut q = QueuedSym::scaled_identity(n, 2.0).unwrap();
        let mut dense = Array2::<f64>::eye(n) * 2.0;
        for step in 0..(2 * QUEUE + 7) {
            let v: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let g = rng.random_range(-0.05..0.1);
            q.rank_one(g, &v);
            let va = ndarray::Array1::from(v);
            let outer = va
                .view()
                .insert_axis(ndarray::Axis(1))
                .dot(&va.view().insert_axis(ndarray::Axis(0)));
            dense = dense + g * outer;
            let (idx, val) = (vec![1, 4, 9, 22], vec![0.5, -1.0, 2.0, 0.25]);
            let mut out = vec![0.0; n];
            q.mul_sparse(&idx, &val, &mut out);
            for (i, o) in out.iter().enumerate() {
                let want: f64 = idx.iter().zip(&val).map(|(&j, &x)| dense[[i, j]] * x).sum();
                assert!(
                    (o - want).abs() < 1e-12,
                    "step {step}, row {i}: {o} vs {want}"
                );
            }
        }
        assert!(!q.g.is_empty());
        let got = q.to_dense();
        assert!((&got - &dense).iter().all(|d| d.abs() < 1e-12));
        assert_eq!(got, got.t());
        let widths: Vec<Array2<f64>> = Isa::available()
            .into_iter()
            .map(|isa| {
                let mut c = q.clone();
                c.isa = isa;
                c.to_dense()
            })
            .collect();
        assert!(widths.iter().all(|w| *w == got));
    }
}
