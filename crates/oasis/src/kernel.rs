//! The row kernels of the PA-I step, `margin = p^T W q` and `W <- W + tau p q^T` with
//! `q = p+ - p-`, over the rows of `W` that `p` selects; two ways of reading `q`:
//!
//! * **gather** (text-like rows, few non-zeros spread over many columns): each row of `W` is
//!   read and written at the support of `q` only, `nnz(p) nnz(q)` scattered accesses.
//! * **dense** (image-like rows, many non-zeros over a compact range of columns): `q` is
//!   scattered once per step into a reused dense buffer (zeroed again after the step), and
//!   each selected row is swept contiguously over the columns `lo..hi` that the support of
//!   `q` spans: a vectorised dot product ([`dyad_kernels::simd::dot_span`]) and a vectorised axpy
//!   ([`dyad_kernels::simd::axpy_span`]), compiled per instruction set ([`dyad_kernels::simd`]).
//!
//! Both sum the dot products in the same fixed order (lane `i % 8` of accumulator
//! `(i / 8) % 4`, see [`dyad_kernels::simd`]) and update every entry by the same `w + s q_i`, so the
//! two kernels give the same bits, at every vector width: the choice is a matter of speed
//! only and never changes a result (tested).
//!
//! **The choice** ([`Kernel::Auto`]): dense when the span of `q` is at most
//! [`DENSE_SPAN_PER_NNZ`] times its number of non-zeros, gather otherwise. The constant is
//! the measured break-even (`benches/oasis_step.rs`, group `oasis_kernel_choice`): see its
//! documentation.
//!
//! Two details keep the bits equal. The dense sweep adds `w_i * 0 = +-0` to the partial sums
//! and `s * 0 = +-0` to the entries off the support of `q`: neither changes a value, and
//! neither changes a bit because no accumulator (it starts at `+0`) and no stored entry is
//! ever `-0` (the constructors store `-0` as `+0`, and an `f32` update that rounds to `-0`
//! is stored as `+0`; see `Elem::narrow` in [`dyad_kernels::simd`]). A non-finite entry of `W`
//! would break this (`inf * 0 = NaN`); the steps never produce one from finite inputs.
//!
//! **Speed** (one run of `cargo bench --workspace --bench oasis_step -- --quick`,
//! AMD EPYC with AVX-512, one core of a 2-core VM shared with other jobs, load about 2;
//! time on the CPU per step, `W` filled before timing, about 99 % of steps active;
//! `DENSE_SPAN_PER_NNZ` was 8 in that run, which makes the same choices on these rows):
//!
//! | rows (d, nnz per row)  | legacy f64 | gather f64 | dense f64 | auto f64 | gather f32 | dense f32 | auto f32 |
//! |------------------------|-----------:|-----------:|----------:|---------:|-----------:|----------:|---------:|
//! | MNIST-like (784, ~140) | 46.9 µs    | 41.4 µs    | 26.6 µs   | 25.4 µs  | 41.4 µs    | 21.5 µs   | 20.7 µs  |
//! | 20NG-like (1000, 30)   | 3.66 µs    | 3.90 µs    | 9.38 µs   | 4.08 µs  | 3.91 µs    | 8.13 µs   | 3.91 µs  |
//!
//! So about 39,400 steps/s (f64) and 48,300 steps/s (f32) on the MNIST J-F5 shape (the
//! goal of issue 12 is 25,000), and about 245,000 / 256,000 on the 20 Newsgroups shape.
//! "legacy" is the step before these kernels (commit 855b1bf: sequential sparse-by-sparse
//! sums), kept in the bench. On the 20NG shape the gather kernel is about 7 % slower than
//! the legacy step: it sums into 32 fixed slots (the order the dense kernel needs) instead
//! of one running sum; the reads of `W` at scattered columns dominate either way.
//!
//! The machine bound beside it (`oasis_bound`): one read and one write of every row a
//! MNIST-like step selects (about 140 whole rows of 784), with the simplest loop `w += 1`:
//! 16.9 µs in f64, 8.1 µs in f32. The dense step takes 1.5 times the bound in f64 and 2.6
//! times in f32: it reads each row twice (margin, then update) and, in f32, converts every
//! entry to f64 and back. With the rows in cache (`oasis_hot`, the same query every step)
//! it still takes 22.7 / 20.7 µs, so the step is bound by its arithmetic (the conversions;
//! 512-bit operations are double-pumped on this CPU), not by memory. A whole fit
//! (`oasis_fit`, 5,000 steps on 400 MNIST-like rows, sampling included): 91.8 ms in f64,
//! 72.0 ms in f32.

use dyad_core::SparseVec;
use dyad_kernels::simd::{Elem, Isa, axpy_gather, axpy_span, dot_gather, dot_span, multiversion};
use sprs::CsVecView;

/// Dense kernel when `span(q) <= DENSE_SPAN_PER_NNZ * nnz(q)`, with `span(q)` the distance
/// from the first to one past the last index of the support of `q = p+ - p-`.
///
/// Measured break-even (one run, AVX-512, `f64` and `f32` alike; `oasis_kernel_choice`,
/// d = 1,000, span of `q` about 1,000): rows of 64 non-zeros (`nnz(q)` about 128, ratio
/// about 8) gather 14.6 µs, dense 18.4 µs; rows of 128 (`nnz(q)` about 256, ratio about 4)
/// gather 46.9 µs, dense 39.1 µs. So the break-even lies between 4 and 8 columns per
/// non-zero; 6 is taken. MNIST-like rows (`nnz(q)` about 200 over a span of about 600) are
/// far on the dense side (ratio 3), 20 Newsgroups-like rows (about 60 over nearly 1,000)
/// far on the gather side (ratio 16).
pub const DENSE_SPAN_PER_NNZ: usize = 6;

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
/// [`dyad_kernels::simd`], the outer sum over `a` in index order.
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
fn left_product_body<const W: u8, T: Elem>(
    w: &[T],
    d: usize,
    q: (&[usize], &[f64]),
    u: &mut [f64],
) {
    for (&a, &qa) in q.0.iter().zip(q.1) {
        dyad_kernels::simd::axpy_widen(u, qa, &w[a * d..(a + 1) * d]);
    }
}

multiversion!(pub(crate) left_product<T: Elem>, left_product_body, (w: &[T], d: usize, q: (&[usize], &[f64]), u: &mut [f64]) -> ());

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BilinearModel, Precision};
    use dyad_core::{Rng, seeded};
    use dyad_kernels::fixtures::{mnist_like, random_sparse};
    use ndarray::Array2;
    use rand::Rng as _;
    use sprs::CsVec;

    /// Image-like rows (d = 784, dense kernel under `Auto`) and text-like rows (d = 203, not a
    /// multiple of 8 so the trailing elements are exercised; gather kernel under `Auto`).
    fn pools() -> Vec<(&'static str, Vec<CsVec<f64>>)> {
        let set = mnist_like(40, 4, &mut seeded(1));
        let images = (0..40)
            .map(|i| set.x.outer_view(i).unwrap().to_owned())
            .collect();
        let mut rng = seeded(2);
        let text = (0..40).map(|_| random_sparse(203, 9, &mut rng)).collect();
        vec![("images", images), ("text", text)]
    }

    /// 150 steps (every fifth the symmetric one) from a random `W`, with `kernel` on `isa`:
    /// the bits of every outcome and of the final `W`.
    fn run(
        pool: &[CsVec<f64>],
        precision: Precision,
        kernel: Kernel,
        isa: Isa,
    ) -> (Vec<u64>, Vec<u64>, usize) {
        let d = pool[0].dim();
        let mut rng = seeded(3);
        let w0 = Array2::from_shape_fn((d, d), |(a, b)| {
            f64::from(u8::from(a == b)) + rng.random_range(-0.01..0.01)
        });
        let mut model = BilinearModel::from_matrix_with(w0, precision);
        let mut scratch = StepScratch::with_kernel(kernel);
        scratch.set_isa(isa);
        let pick = |rng: &mut Rng| pool[rng.random_range(0..pool.len())].view();
        let (mut outcomes, mut active) = (Vec::new(), 0);
        for t in 0..150 {
            let (p, a, b) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
            let out = if t % 5 == 4 {
                model.pa1_step_symmetric(p, a, b, 0.1, &mut scratch)
            } else {
                model.pa1_step(p, a, b, 0.1, &mut scratch)
            };
            active += usize::from(out.tau > 0.0);
            outcomes.extend([out.loss.to_bits(), out.tau.to_bits()]);
        }
        let w = model.matrix().iter().map(|v| v.to_bits()).collect();
        (outcomes, w, active)
    }

    #[test]
    fn auto_chooses_dense_for_images_and_gather_for_text() {
        for (name, pool) in pools() {
            let mut scratch = StepScratch::default();
            let mut dense = 0;
            for i in 0..20 {
                scratch.prepare(pool[0].dim(), pool[i].view(), pool[i + 20].view());
                dense += usize::from(scratch.support().dense.is_some());
                scratch.finish();
                assert!(scratch.dense.iter().all(|&v| v == 0.0), "buffer zeroed");
            }
            let want = if name == "images" { 20 } else { 0 };
            assert_eq!(dense, want, "{name}");
        }
    }

    #[test]
    fn every_kernel_and_instruction_set_gives_the_same_bits() {
        for (name, pool) in pools() {
            for precision in [Precision::F64, Precision::F32] {
                let reference = run(&pool, precision, Kernel::Gather, Isa::Baseline);
                assert!(
                    reference.2 > 100,
                    "{name}: only {} active steps",
                    reference.2
                );
                for kernel in [Kernel::Gather, Kernel::Dense, Kernel::Auto] {
                    for isa in Isa::available() {
                        let got = run(&pool, precision, kernel, isa);
                        let what = format!("{name} {precision:?} {kernel:?} {isa:?}");
                        assert_eq!(got.0, reference.0, "outcomes: {what}");
                        assert!(got.1 == reference.1, "W: {what}");
                    }
                }
            }
        }
    }

    #[test]
    fn dense_and_gather_dot_products_agree_bit_for_bit_at_any_support() {
        // Supports starting and ending anywhere in a chunk, with the trailing elements.
        let d = 83;
        let mut rng = seeded(4);
        let w: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0) * 1e3).collect();
        let w32: Vec<f32> = w.iter().map(|&v| f32::narrow(v)).collect();
        for _ in 0..200 {
            let nnz = rng.random_range(1..d);
            let x = random_sparse(d, nnz, &mut rng);
            let (idx, val) = (x.indices(), x.data());
            let mut dense = vec![0.0; d];
            for (&i, &v) in idx.iter().zip(val) {
                dense[i] = -v;
            }
            let neg: Vec<f64> = val.iter().map(|v| -v).collect();
            let (lo, hi) = (idx[0], idx[nnz - 1] + 1);
            let g64 = dot_gather(&w, idx, &neg);
            let s64 = dot_span::<{ dyad_kernels::simd::BASE }, f64>(&w, &dense, lo, hi);
            assert_eq!(g64.to_bits(), s64.to_bits());
            let g32 = dot_gather(&w32, idx, &neg);
            let s32 = dot_span::<{ dyad_kernels::simd::BASE }, f32>(&w32, &dense, lo, hi);
            assert_eq!(g32.to_bits(), s32.to_bits());
            let plain: f64 = idx.iter().zip(&neg).map(|(&i, v)| w[i] * v).sum();
            assert!((g64 - plain).abs() <= 1e-9 * plain.abs().max(1.0));
        }
    }

    #[test]
    fn f32_entries_never_hold_negative_zero() {
        assert_eq!(f32::narrow(-1e-50).to_bits(), 0);
        assert_eq!(f32::narrow(-0.0).to_bits(), 0);
        assert_eq!(f32::narrow(-1.5), -1.5);
        let w = Array2::from_shape_vec((2, 2), vec![-0.0, 1.0, -1e-50, -0.0]).unwrap();
        for precision in [Precision::F64, Precision::F32] {
            let m = BilinearModel::from_matrix_with(w.clone(), precision);
            assert!(
                m.matrix()
                    .iter()
                    .all(|v| v.to_bits() != (-0.0f64).to_bits())
            );
        }
    }
}
