//! The row kernels of the PA-I step, `margin = p^T W q` and `W <- W + tau p q^T` with
//! `q = p+ - p-`, over the rows of `W` that `p` selects; two ways of reading `q`:
//!
//! * **gather** (text-like rows, few non-zeros spread over many columns): each row of `W` is
//!   read and written at the support of `q` only, `nnz(p) nnz(q)` scattered accesses.
//! * **dense** (image-like rows, many non-zeros over a compact range of columns): `q` is
//!   scattered once per step into a reused dense buffer (zeroed again after the step), and
//!   each selected row is swept contiguously over the columns `lo..hi` that the support of
//!   `q` spans: a vectorised dot product ([`crate::simd::dot_span`]) and a vectorised axpy
//!   ([`crate::simd::axpy_span`]), compiled per instruction set ([`crate::simd`]).
//!
//! Both sum the dot products in the same fixed order (lane `i % 8` of accumulator
//! `(i / 8) % 2`, see [`crate::simd`]) and update every entry by the same `w + s q_i`, so the
//! two kernels give the same bits, at every vector width: the choice is a matter of speed
//! only and never changes a result (tested).
//!
//! **The choice** ([`Kernel::Auto`]): dense when the span of `q` is at most
//! [`DENSE_SPAN_PER_NNZ`] times its number of non-zeros, gather otherwise. The constant is
//! the measured break-even (`benches/oasis_step.rs`, group `oasis_kernel_choice`): see its
//! documentation.

use crate::simd::{Elem, Isa, axpy_gather, axpy_span, dot_gather, dot_span, multiversion};
use dyad_core::SparseVec;
use sprs::CsVecView;

/// Dense kernel when `span(q) <= DENSE_SPAN_PER_NNZ * nnz(q)`, with `span(q)` the distance
/// from the first to one past the last index of the support of `q = p+ - p-`.
///
/// Measured break-even (one run, AVX-512, `f64` and `f32` alike within the noise): the dense
/// kernel costs about one chunk of 8 columns per gathered non-zero, so a span of about 8
/// columns per non-zero. MNIST-like rows (`nnz(q)` about 200 over a span of about 600) are
/// far on the dense side (ratio 3), 20 Newsgroups-like rows (about 60 over nearly 1,000)
/// far on the gather side (ratio 16).
pub const DENSE_SPAN_PER_NNZ: usize = 8;

/// Which row kernel a step uses (see the module docs). Results do not depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kernel {
    /// By density: [`Kernel::Dense`] when `span(q) <= DENSE_SPAN_PER_NNZ nnz(q)`.
    #[default]
    Auto,
    /// Sparse-by-sparse: gather and scatter at the support of `q`.
    Gather,
    /// Sparse rows of `W` against `q` scattered into a dense buffer.
    Dense,
}

/// Scratch space of the PA-I step, reused across steps: `q = p+ - p-` as a sparse vector and
/// scattered into a dense buffer of length `d` (all zero between steps), the kernel choice
/// and the instruction set.
#[derive(Debug, Clone)]
pub struct StepScratch {
    pub(crate) diff: SparseVec,
    dense: Vec<f64>,
    kernel: Kernel,
    pub(crate) isa: Isa,
}

impl Default for StepScratch {
    fn default() -> Self {
        Self::with_kernel(Kernel::Auto)
    }
}

impl StepScratch {
    /// Scratch space whose steps use `kernel` (benchmarks and tests; results do not depend
    /// on it), on the widest instruction set of this CPU.
    pub fn with_kernel(kernel: Kernel) -> Self {
        Self {
            diff: SparseVec::default(),
            dense: Vec::new(),
            kernel,
            isa: Isa::detect(),
        }
    }

    /// Pin the instruction set (tests: every set must give the same bits).
    #[cfg(test)]
    pub(crate) fn set_isa(&mut self, isa: Isa) {
        self.isa = isa;
    }

    /// `q = pos - neg` into `diff`, scattered into the dense buffer when the dense kernel is
    /// chosen for it. Must be followed by [`StepScratch::finish`].
    pub(crate) fn prepare(&mut self, d: usize, pos: CsVecView<'_, f64>, neg: CsVecView<'_, f64>) {
        self.diff.set_difference(pos, neg);
        if self.span().is_some_and(|_| self.dense_chosen()) {
            if self.dense.len() != d {
                self.dense = vec![0.0; d];
            }
            for (&i, &v) in self.diff.indices.iter().zip(&self.diff.values) {
                self.dense[i] = v;
            }
        }
    }

    /// Zero the dense buffer again (touching only the support of `q`).
    pub(crate) fn finish(&mut self) {
        if self.span().is_some_and(|_| self.dense_chosen()) {
            for &i in &self.diff.indices {
                self.dense[i] = 0.0;
            }
        }
    }

    fn span(&self) -> Option<(usize, usize)> {
        Some((*self.diff.indices.first()?, *self.diff.indices.last()? + 1))
    }

    fn dense_chosen(&self) -> bool {
        match self.kernel {
            Kernel::Gather => false,
            Kernel::Dense => true,
            Kernel::Auto => self
                .span()
                .is_some_and(|(lo, hi)| hi - lo <= DENSE_SPAN_PER_NNZ * self.diff.nnz()),
        }
    }

    /// `q` as the kernels read it (after [`StepScratch::prepare`]).
    pub(crate) fn support(&self) -> Support<'_> {
        let dense = match self.span() {
            Some((lo, hi)) if self.dense_chosen() => Some((&self.dense[..], lo, hi)),
            _ => None,
        };
        Support {
            indices: &self.diff.indices,
            values: &self.diff.values,
            dense,
        }
    }
}

/// The vector `q` of a step: its support, and (dense kernel) its dense copy with the span
/// `lo..hi` of the support.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Support<'a> {
    pub indices: &'a [usize],
    pub values: &'a [f64],
    pub dense: Option<(&'a [f64], usize, usize)>,
}

/// `p^T W q = sum_a p_a (W[a, :] . q)`, the rows' dot products in the order of
/// [`crate::simd`], the outer sum over `a` in index order.
#[inline(always)]
fn margin_body<const W: u8, T: Elem>(
    w: &[T],
    d: usize,
    p: (&[usize], &[f64]),
    q: Support<'_>,
) -> f64 {
    let mut sum = 0.0;
    for (&a, &pa) in p.0.iter().zip(p.1) {
        let row = &w[a * d..(a + 1) * d];
        let dot = match q.dense {
            Some((x, lo, hi)) => dot_span::<W, T>(row, x, lo, hi),
            None => dot_gather(row, q.indices, q.values),
        };
        sum += pa * dot;
    }
    sum
}

/// `W[a, :] <- W[a, :] + (tau p_a) q` for every `a` in the support of `p`.
#[inline(always)]
fn update_body<const W: u8, T: Elem>(
    w: &mut [T],
    d: usize,
    p: (&[usize], &[f64]),
    tau: f64,
    q: Support<'_>,
) {
    for (&a, &pa) in p.0.iter().zip(p.1) {
        let row = &mut w[a * d..(a + 1) * d];
        let s = tau * pa;
        match q.dense {
            Some((x, lo, hi)) => axpy_span(&mut row[lo..hi], s, &x[lo..hi]),
            None => axpy_gather(row, s, q.indices, q.values),
        }
    }
}

multiversion!(pub(crate) margin<T: Elem>, margin_body, (w: &[T], d: usize, p: (&[usize], &[f64]), q: Support<'_>) -> f64);
multiversion!(pub(crate) update<T: Elem>, update_body, (w: &mut [T], d: usize, p: (&[usize], &[f64]), tau: f64, q: Support<'_>) -> ());

/// `u <- u + sum_a q_a W[a, :]` (`u = W^T q` from zero): the left product of scoring.
#[inline(always)]
fn left_product_body<const W: u8, T: Elem>(w: &[T], d: usize, q: (&[usize], &[f64]), u: &mut [f64]) {
    for (&a, &qa) in q.0.iter().zip(q.1) {
        crate::simd::axpy_widen(u, qa, &w[a * d..(a + 1) * d]);
    }
}

multiversion!(pub(crate) left_product<T: Elem>, left_product_body, (w: &[T], d: usize, q: (&[usize], &[f64]), u: &mut [f64]) -> ());
