//! Run-time selection of the vector width for the hot loops of the crate (LORETA-1's passes
//! over its factors, OASIS's row kernels).
//!
//! The workspace is built for the baseline x86-64 target (SSE2). The hot loops are compiled
//! three times, for AVX-512, AVX2 and the baseline, and the widest one the CPU supports is
//! picked once per learner state ([`Isa::detect`]) through [`multiversion!`]. Element-wise
//! kernels ([`crate::linalg::axpy`], [`crate::linalg::axpy2`], [`axpy_span`]) vectorise by
//! themselves inside the feature-specific copies; the reductions ([`dot2`], [`dot_span`])
//! are written with intrinsics (LLVM vectorises a reduction only 2 lanes wide, since it may
//! not reorder it). Every version fixes the order of every floating-point operation (eight
//! lanes times two accumulators reduced by the same tree, no fused multiply-add), so all
//! three produce the same bits (tested).
//!
//! Two reductions share that order:
//!
//! * [`dot2`] (LORETA): two dot products of whole rows, chunk `c` of eight going to
//!   accumulator `c % 2`.
//! * [`dot_span`] / [`dot_gather`] (OASIS): `sum_i w_i x_i` over a row `w` of a dense matrix
//!   stored as [`Elem`] (`f64`, or `f32` widened to `f64`), where `x` is sparse. Element `i`
//!   is summed into lane `i % 8` of accumulator `(i / 8) % 4` (chunks counted from the start
//!   of the row, not of the span, so the assignment does not depend on the support), the
//!   `len % 8` trailing elements into a separate scalar in index order; then the four
//!   accumulators are added lane by lane as `(a0 + a1) + (a2 + a3)`, reduced by the tree of
//!   [`dot2`], and the trailing sum added. [`dot_span`] reads `x` dense over a span of chunks, [`dot_gather`] reads only
//!   the support of `x`; since an accumulator starts at `+0` and adding a product `w_i * 0 =
//!   +-0` changes no partial sum (not even the sign of a zero sum), both give the same bits.
//!
//! The only `unsafe` code of the crate is here: calls of the feature-specific versions after
//! run-time detection, and unaligned loads of 8-element chunks.

/// The instruction set a pass is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Baseline,
}

impl Isa {
    /// The widest instruction set of this CPU.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
        }
        Isa::Baseline
    }

    /// Every instruction set this CPU can run (the tests of every family crate compare them).
    pub fn available() -> Vec<Self> {
        let mut out = vec![Isa::Baseline];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                out.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                out.push(Isa::Avx512);
            }
        }
        out
    }
}

/// Vector width parameter of the pass bodies: `BASE` (no intrinsics), `AVX2`, `AVX512`.
pub const BASE: u8 = 0;
pub const AVX2: u8 = 1;
pub const AVX512: u8 = 2;

/// `(x . a, x . b)`, each with sixteen partial sums: lane `q` of accumulator `c % 2` sums
/// the products of the elements `8c + q` (chunk `c` of eight), two accumulators so that the
/// additions form two independent chains; then the two accumulators are added lane by lane,
/// the eight lanes reduced as `((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7))`, and the remainder
/// (`len % 8` elements, summed in order) added. The row `x` is loaded once for both products.
/// `W` selects the implementation; `W = AVX2` and `W = AVX512` may only be used inside the
/// functions [`multiversion!`] compiles for those features (which run only after detection).
#[inline(always)]
pub fn dot2<const W: u8>(x: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
    debug_assert!(x.len() == a.len() && x.len() == b.len());
    let full = x.len() / 8 * 8;
    let (xs, as_, bs) = (&x[..full], &a[..full], &b[..full]);
    #[cfg(target_arch = "x86_64")]
    let (sa, sb) = if W == AVX512 {
        // SAFETY: W = AVX512 only inside functions compiled with, and run after run-time
        // detection of, avx512f (see `multiversion!`).
        unsafe { x86::sums_avx512(xs, as_, bs) }
    } else if W == AVX2 {
        // SAFETY: as above, for avx2.
        unsafe { x86::sums_avx2(xs, as_, bs) }
    } else {
        sums(xs, as_, bs)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (sa, sb) = sums(xs, as_, bs);
    let (mut ta, mut tb) = (0.0, 0.0);
    for ((x, a), b) in x[full..].iter().zip(&a[full..]).zip(&b[full..]) {
        ta += x * a;
        tb += x * b;
    }
    (tree(sa) + ta, tree(sb) + tb)
}

/// `p += x r1 + y r2` element-wise (as [`crate::linalg::axpy2`]), then [`dot2`] of the
/// updated `p` with `a` and `b`, in one sweep: the same bits as the two calls, without
/// reading back the freshly stored row (a store-forwarding stall when the vector widths of
/// the two loops differ).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn update_dot2<const W: u8>(
    p: &mut [f64],
    x: f64,
    r1: &[f64],
    y: f64,
    r2: &[f64],
    a: &[f64],
    b: &[f64],
) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    if W == AVX512 {
        let full = p.len() / 8 * 8;
        // SAFETY: W = AVX512 only inside functions compiled with, and run after run-time
        // detection of, avx512f (see `multiversion!`).
        let (sa, sb) = unsafe {
            x86::update_sums_avx512(&mut p[..full], x, &r1[..full], y, &r2[..full], a, b)
        };
        let (mut ta, mut tb) = (0.0, 0.0);
        for i in full..p.len() {
            p[i] += x * r1[i] + y * r2[i];
            ta += p[i] * a[i];
            tb += p[i] * b[i];
        }
        return (tree(sa) + ta, tree(sb) + tb);
    }
    crate::linalg::axpy2(p, x, r1, y, r2);
    dot2::<W>(p, a, b)
}

/// The lane sums of [`dot2`] (lengths a multiple of 8), portable.
#[inline(always)]
fn sums(x: &[f64], a: &[f64], b: &[f64]) -> ([f64; 8], [f64; 8]) {
    let (mut a0, mut a1, mut b0, mut b1) = ([0.0f64; 8], [0.0f64; 8], [0.0f64; 8], [0.0f64; 8]);
    for (c, ((x, a), b)) in x
        .chunks_exact(8)
        .zip(a.chunks_exact(8))
        .zip(b.chunks_exact(8))
        .enumerate()
    {
        let (sa, sb) = if c % 2 == 0 {
            (&mut a0, &mut b0)
        } else {
            (&mut a1, &mut b1)
        };
        for q in 0..8 {
            sa[q] += x[q] * a[q];
            sb[q] += x[q] * b[q];
        }
    }
    (
        std::array::from_fn(|q| a0[q] + a1[q]),
        std::array::from_fn(|q| b0[q] + b1[q]),
    )
}

/// The storage type of a dense matrix the row kernels read: `f64`, or `f32` widened to `f64`
/// for every operation (products, sums and updates are computed in `f64`; an updated `f32`
/// entry is rounded once, when stored).
pub trait Elem: Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    fn widen(self) -> f64;
    /// The stored value of an updated entry. Never `-0` when the update is `w + s x` with a
    /// stored `w` (itself never `-0`): the dense kernel adds `s * 0 = +-0` to the entries off
    /// the support of `x`, which leaves every such entry's bits unchanged only because no
    /// entry is `-0` (`-0 + +0 = +0`). In `f64`, `w + y` is `-0` only when both are, so
    /// the invariant holds by itself once the constructors establish it; in `f32` the
    /// rounding of a tiny negative sum can give `-0`, so [`Elem::narrow`] maps it to `+0`.
    fn narrow(v: f64) -> Self;
    /// The accumulators of [`dot_span`] over the chunks `c0..c1` of `w` (chunk `c` is
    /// `w[8c..8c+8]`, summed into accumulator `c % 4`), combined lane by lane. `x` is as long
    /// as `w`; `8 c1 <= w.len()`. `W` as in [`dot2`].
    fn chunk_sums<const W: u8>(w: &[Self], x: &[f64], c0: usize, c1: usize) -> [f64; 8];
}

impl Elem for f64 {
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    #[inline(always)]
    fn narrow(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn chunk_sums<const W: u8>(w: &[f64], x: &[f64], c0: usize, c1: usize) -> [f64; 8] {
        assert!(c0 >= c1 || (8 * c1 <= w.len() && 8 * c1 <= x.len()));
        #[cfg(target_arch = "x86_64")]
        {
            if W == AVX512 {
                // SAFETY: W = AVX512 only inside functions compiled with, and run after
                // run-time detection of, avx512f (see `multiversion!`); bounds checked above.
                return unsafe { x86::chunk_sums_avx512_f64(w, x, c0, c1) };
            } else if W == AVX2 {
                // SAFETY: as above, for avx2.
                return unsafe { x86::chunk_sums_avx2_f64(w, x, c0, c1) };
            }
        }
        chunk_sums_portable(w, x, c0, c1)
    }
}

impl Elem for f32 {
    #[inline(always)]
    fn widen(self) -> f64 {
        f64::from(self)
    }
    /// Rounded to nearest, and a negative zero (an update that underflows below the
    /// smallest `f32`) stored as `+0`, so that the stored entries never hold `-0` (see
    /// [`Elem::narrow`]).
    #[inline(always)]
    fn narrow(v: f64) -> Self {
        (v as f32) + 0.0
    }
    #[inline(always)]
    fn chunk_sums<const W: u8>(w: &[f32], x: &[f64], c0: usize, c1: usize) -> [f64; 8] {
        assert!(c0 >= c1 || (8 * c1 <= w.len() && 8 * c1 <= x.len()));
        #[cfg(target_arch = "x86_64")]
        {
            if W == AVX512 {
                // SAFETY: as for f64.
                return unsafe { x86::chunk_sums_avx512_f32(w, x, c0, c1) };
            } else if W == AVX2 {
                // SAFETY: as for f64.
                return unsafe { x86::chunk_sums_avx2_f32(w, x, c0, c1) };
            }
        }
        chunk_sums_portable(w, x, c0, c1)
    }
}

/// [`Elem::chunk_sums`] without intrinsics.
#[inline(always)]
fn chunk_sums_portable<T: Elem>(w: &[T], x: &[f64], c0: usize, c1: usize) -> [f64; 8] {
    let mut acc = [[0.0f64; 8]; SPAN_ACC];
    for c in c0..c1 {
        let (wc, xc) = (&w[8 * c..8 * c + 8], &x[8 * c..8 * c + 8]);
        let a = &mut acc[c % SPAN_ACC];
        for q in 0..8 {
            a[q] += wc[q].widen() * xc[q];
        }
    }
    combine(&acc)
}

/// Number of accumulators of [`dot_span`]: chunk `c` of eight goes to accumulator
/// `c % SPAN_ACC` (four independent chains hide the latency of the additions).
const SPAN_ACC: usize = 4;

/// The accumulators of [`dot_span`] added lane by lane, `(a0 + a1) + (a2 + a3)`.
#[inline(always)]
fn combine(acc: &[[f64; 8]; SPAN_ACC]) -> [f64; 8] {
    std::array::from_fn(|q| (acc[0][q] + acc[1][q]) + (acc[2][q] + acc[3][q]))
}

/// The reduction tree shared by [`dot2`] and [`dot_span`].
#[inline(always)]
fn tree(s: [f64; 8]) -> f64 {
    ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

/// `sum_i w_i x_i` over `i` in `lo..hi`, in the order of the module docs, for `x` dense (as
/// long as `w`) and zero outside the support it stands for; the chunks that `lo..hi` meets
/// are read whole. Equals [`dot_gather`] over that support, bit for bit.
#[inline(always)]
pub fn dot_span<const W: u8, T: Elem>(w: &[T], x: &[f64], lo: usize, hi: usize) -> f64 {
    debug_assert!(w.len() == x.len() && lo <= hi && hi <= w.len());
    let full = w.len() / 8 * 8;
    let c0 = lo / 8;
    let c1 = hi.min(full).div_ceil(8).max(c0);
    let mut tail = 0.0;
    for i in lo.max(full)..hi {
        tail += w[i].widen() * x[i];
    }
    tree(T::chunk_sums::<W>(w, x, c0, c1)) + tail
}

/// [`dot_span`] reading only the support `(indices, values)` of `x` (indices increasing).
#[inline(always)]
pub fn dot_gather<T: Elem>(w: &[T], indices: &[usize], values: &[f64]) -> f64 {
    let full = w.len() / 8 * 8;
    // Lane `i % 8` of accumulator `(i / 8) % 4` is entry `i % 32` of the flattened array.
    let mut flat = [0.0f64; 8 * SPAN_ACC];
    let split = indices.partition_point(|&i| i < full);
    for (&i, &v) in indices[..split].iter().zip(values) {
        flat[i % (8 * SPAN_ACC)] += w[i].widen() * v;
    }
    let mut tail = 0.0;
    for (&i, &v) in indices[split..].iter().zip(&values[split..]) {
        tail += w[i].widen() * v;
    }
    let acc: [[f64; 8]; SPAN_ACC] =
        std::array::from_fn(|a| std::array::from_fn(|q| flat[8 * a + q]));
    tree(combine(&acc)) + tail
}

/// `w_i <- w_i + s x_i` for every `i` (slices of equal length; `f32` entries computed in `f64`
/// and rounded once). Vectorises by itself inside [`multiversion!`] bodies.
#[inline(always)]
pub fn axpy_span<T: Elem>(w: &mut [T], s: f64, x: &[f64]) {
    debug_assert_eq!(w.len(), x.len());
    for (wi, &xi) in w.iter_mut().zip(x) {
        *wi = T::narrow(wi.widen() + s * xi);
    }
}

/// [`axpy_span`] on the support `(indices, values)` of `x` only: the same value for every
/// entry (an entry off the support gains `s * 0`, which changes no value).
#[inline(always)]
pub fn axpy_gather<T: Elem>(w: &mut [T], s: f64, indices: &[usize], values: &[f64]) {
    for (&i, &v) in indices.iter().zip(values) {
        w[i] = T::narrow(w[i].widen() + s * v);
    }
}

/// `u_i <- u_i + s w_i` (`w` widened): a row of `W^T q` accumulated into `f64`.
#[inline(always)]
pub fn axpy_widen<T: Elem>(u: &mut [f64], s: f64, w: &[T]) {
    debug_assert_eq!(u.len(), w.len());
    for (ui, wi) in u.iter_mut().zip(w) {
        *ui += s * wi.widen();
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The lane sums of [`super::dot2`] in 512-bit registers.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn sums_avx512(x: &[f64], a: &[f64], b: &[f64]) -> ([f64; 8], [f64; 8]) {
        let (mut a0, mut a1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let (mut b0, mut b1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let chunks = x.len() / 8;
        let (px, pa, pb) = (x.as_ptr(), a.as_ptr(), b.as_ptr());
        // SAFETY (all loads): chunk c is read only for c < chunks, i.e. 8 c + 8 <= len.
        let load = |p: *const f64, c: usize| unsafe { _mm512_loadu_pd(p.add(8 * c)) };
        let mut c = 0;
        while c + 1 < chunks {
            let (x0, x1) = (load(px, c), load(px, c + 1));
            a0 = _mm512_add_pd(a0, _mm512_mul_pd(x0, load(pa, c)));
            b0 = _mm512_add_pd(b0, _mm512_mul_pd(x0, load(pb, c)));
            a1 = _mm512_add_pd(a1, _mm512_mul_pd(x1, load(pa, c + 1)));
            b1 = _mm512_add_pd(b1, _mm512_mul_pd(x1, load(pb, c + 1)));
            c += 2;
        }
        if c < chunks {
            let x0 = load(px, c);
            a0 = _mm512_add_pd(a0, _mm512_mul_pd(x0, load(pa, c)));
            b0 = _mm512_add_pd(b0, _mm512_mul_pd(x0, load(pb, c)));
        }
        let (mut oa, mut ob) = ([0.0f64; 8], [0.0f64; 8]);
        // SAFETY: both outputs hold 8 elements.
        unsafe {
            _mm512_storeu_pd(oa.as_mut_ptr(), _mm512_add_pd(a0, a1));
            _mm512_storeu_pd(ob.as_mut_ptr(), _mm512_add_pd(b0, b1));
        }
        (oa, ob)
    }

    /// [`super::update_dot2`] on whole chunks of 8 (`p.len()` a multiple of 8), 512-bit.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn update_sums_avx512(
        p: &mut [f64],
        x: f64,
        r1: &[f64],
        y: f64,
        r2: &[f64],
        a: &[f64],
        b: &[f64],
    ) -> ([f64; 8], [f64; 8]) {
        let (mut a0, mut a1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let (mut b0, mut b1) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let (bx, by) = (_mm512_set1_pd(x), _mm512_set1_pd(y));
        let chunks = p.len() / 8;
        let pp = p.as_mut_ptr();
        let (p1, p2, pa, pb) = (r1.as_ptr(), r2.as_ptr(), a.as_ptr(), b.as_ptr());
        // SAFETY (all loads and stores): chunk c is touched only for c < chunks, and every
        // slice holds at least 8 chunks' worth (`r1`, `r2` as `p`; `a`, `b` at least as long).
        let load = |q: *const f64, c: usize| unsafe { _mm512_loadu_pd(q.add(8 * c)) };
        let update = |c: usize| {
            let v = _mm512_add_pd(
                load(pp, c),
                _mm512_add_pd(
                    _mm512_mul_pd(bx, load(p1, c)),
                    _mm512_mul_pd(by, load(p2, c)),
                ),
            );
            unsafe { _mm512_storeu_pd(pp.add(8 * c), v) };
            v
        };
        let mut c = 0;
        while c + 1 < chunks {
            let (v0, v1) = (update(c), update(c + 1));
            a0 = _mm512_add_pd(a0, _mm512_mul_pd(v0, load(pa, c)));
            b0 = _mm512_add_pd(b0, _mm512_mul_pd(v0, load(pb, c)));
            a1 = _mm512_add_pd(a1, _mm512_mul_pd(v1, load(pa, c + 1)));
            b1 = _mm512_add_pd(b1, _mm512_mul_pd(v1, load(pb, c + 1)));
            c += 2;
        }
        if c < chunks {
            let v0 = update(c);
            a0 = _mm512_add_pd(a0, _mm512_mul_pd(v0, load(pa, c)));
            b0 = _mm512_add_pd(b0, _mm512_mul_pd(v0, load(pb, c)));
        }
        let (mut oa, mut ob) = ([0.0f64; 8], [0.0f64; 8]);
        // SAFETY: both outputs hold 8 elements.
        unsafe {
            _mm512_storeu_pd(oa.as_mut_ptr(), _mm512_add_pd(a0, a1));
            _mm512_storeu_pd(ob.as_mut_ptr(), _mm512_add_pd(b0, b1));
        }
        (oa, ob)
    }

    /// The lane sums of [`super::dot2`] in 256-bit registers (lanes 0-3 and 4-7 apart).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn sums_avx2(x: &[f64], a: &[f64], b: &[f64]) -> ([f64; 8], [f64; 8]) {
        let z = _mm256_setzero_pd();
        // [accumulator parity][half]
        let (mut sa, mut sb) = ([[z; 2]; 2], [[z; 2]; 2]);
        let chunks = x.len() / 8;
        let (px, pa, pb) = (x.as_ptr(), a.as_ptr(), b.as_ptr());
        for c in 0..chunks {
            let p = c % 2;
            for h in 0..2 {
                let off = 8 * c + 4 * h;
                // SAFETY: off + 4 <= 8 c + 8 <= len.
                let (vx, va, vb) = unsafe {
                    (
                        _mm256_loadu_pd(px.add(off)),
                        _mm256_loadu_pd(pa.add(off)),
                        _mm256_loadu_pd(pb.add(off)),
                    )
                };
                sa[p][h] = _mm256_add_pd(sa[p][h], _mm256_mul_pd(vx, va));
                sb[p][h] = _mm256_add_pd(sb[p][h], _mm256_mul_pd(vx, vb));
            }
        }
        let (mut oa, mut ob) = ([0.0f64; 8], [0.0f64; 8]);
        for h in 0..2 {
            // SAFETY: each half is 4 elements of 8.
            unsafe {
                _mm256_storeu_pd(
                    oa.as_mut_ptr().add(4 * h),
                    _mm256_add_pd(sa[0][h], sa[1][h]),
                );
                _mm256_storeu_pd(
                    ob.as_mut_ptr().add(4 * h),
                    _mm256_add_pd(sb[0][h], sb[1][h]),
                );
            }
        }
        (oa, ob)
    }

    /// [`super::Elem::chunk_sums`] for `f64` rows in 512-bit registers.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn chunk_sums_avx512_f64(
        w: &[f64],
        x: &[f64],
        c0: usize,
        c1: usize,
    ) -> [f64; 8] {
        let (pw, px) = (w.as_ptr(), x.as_ptr());
        // SAFETY (all loads): chunk c is read only for c < c1, and 8 c1 <= len (caller).
        let prod = |c: usize| unsafe {
            _mm512_mul_pd(
                _mm512_loadu_pd(pw.add(8 * c)),
                _mm512_loadu_pd(px.add(8 * c)),
            )
        };
        sums512(c0, c1, prod)
    }

    /// [`super::Elem::chunk_sums`] for `f32` rows (widened exactly) in 512-bit registers.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn chunk_sums_avx512_f32(
        w: &[f32],
        x: &[f64],
        c0: usize,
        c1: usize,
    ) -> [f64; 8] {
        let (pw, px) = (w.as_ptr(), x.as_ptr());
        // SAFETY (all loads): as for f64.
        let prod = |c: usize| unsafe {
            _mm512_mul_pd(
                _mm512_cvtps_pd(_mm256_loadu_ps(pw.add(8 * c))),
                _mm512_loadu_pd(px.add(8 * c)),
            )
        };
        sums512(c0, c1, prod)
    }

    /// Accumulator `c % 4` sums `prod(c)` for `c` in `c0..c1`; the four added lane by lane
    /// as `(a0 + a1) + (a2 + a3)`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn sums512(c0: usize, c1: usize, prod: impl Fn(usize) -> __m512d) -> [f64; 8] {
        let z = _mm512_setzero_pd();
        let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
        let mut c = c0;
        // Head: up to the first multiple of 4 (chunks go to accumulator c % 4).
        while c < c1 && !c.is_multiple_of(4) {
            match c % 4 {
                1 => a1 = _mm512_add_pd(a1, prod(c)),
                2 => a2 = _mm512_add_pd(a2, prod(c)),
                _ => a3 = _mm512_add_pd(a3, prod(c)),
            }
            c += 1;
        }
        while c + 4 <= c1 {
            a0 = _mm512_add_pd(a0, prod(c));
            a1 = _mm512_add_pd(a1, prod(c + 1));
            a2 = _mm512_add_pd(a2, prod(c + 2));
            a3 = _mm512_add_pd(a3, prod(c + 3));
            c += 4;
        }
        if c < c1 {
            a0 = _mm512_add_pd(a0, prod(c));
        }
        if c + 1 < c1 {
            a1 = _mm512_add_pd(a1, prod(c + 1));
        }
        if c + 2 < c1 {
            a2 = _mm512_add_pd(a2, prod(c + 2));
        }
        let mut out = [0.0f64; 8];
        let sum = _mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3));
        // SAFETY: `out` holds 8 elements.
        unsafe { _mm512_storeu_pd(out.as_mut_ptr(), sum) };
        out
    }

    /// [`super::Elem::chunk_sums`] for `f64` rows in 256-bit registers (lanes 0-3, 4-7 apart).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn chunk_sums_avx2_f64(
        w: &[f64],
        x: &[f64],
        c0: usize,
        c1: usize,
    ) -> [f64; 8] {
        let (pw, px) = (w.as_ptr(), x.as_ptr());
        // SAFETY (all loads): off + 4 <= 8 c + 8 <= 8 c1 <= len (caller).
        let prod = |off: usize| unsafe {
            _mm256_mul_pd(_mm256_loadu_pd(pw.add(off)), _mm256_loadu_pd(px.add(off)))
        };
        sums256(c0, c1, prod)
    }

    /// [`super::Elem::chunk_sums`] for `f32` rows in 256-bit registers.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn chunk_sums_avx2_f32(
        w: &[f32],
        x: &[f64],
        c0: usize,
        c1: usize,
    ) -> [f64; 8] {
        let (pw, px) = (w.as_ptr(), x.as_ptr());
        // SAFETY (all loads): as for f64.
        let prod = |off: usize| unsafe {
            _mm256_mul_pd(
                _mm256_cvtps_pd(_mm_loadu_ps(pw.add(off))),
                _mm256_loadu_pd(px.add(off)),
            )
        };
        sums256(c0, c1, prod)
    }

    /// [`sums512`] with each chunk as two halves `prod(8c)`, `prod(8c + 4)`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn sums256(c0: usize, c1: usize, prod: impl Fn(usize) -> __m256d) -> [f64; 8] {
        let z = _mm256_setzero_pd();
        // [accumulator][half]
        let mut acc = [[z; 2]; 4];
        for c in c0..c1 {
            for (h, a) in acc[c % 4].iter_mut().enumerate() {
                *a = _mm256_add_pd(*a, prod(8 * c + 4 * h));
            }
        }
        let mut out = [0.0f64; 8];
        #[allow(clippy::needless_range_loop)] // h indexes four accumulators and the output
        for h in 0..2 {
            let sum = _mm256_add_pd(
                _mm256_add_pd(acc[0][h], acc[1][h]),
                _mm256_add_pd(acc[2][h], acc[3][h]),
            );
            // SAFETY: each half is 4 elements of 8.
            unsafe { _mm256_storeu_pd(out.as_mut_ptr().add(4 * h), sum) };
        }
        out
    }
}

/// `multiversion!(vis name<T: Bound>, body, (arg: Type, ...) -> Ret)` defines
/// `vis fn name<T: Bound>(isa: Isa, args...)` that runs `body::<W, T>` (an `#[inline(always)]`
/// function generic over the width `W` of [`dot2`] / [`dot_span`], and over one optional type
/// parameter) compiled for `isa`. The visibility and the type parameter may be omitted.
#[macro_export]
macro_rules! multiversion {
    ($vis:vis $name:ident $(<$t:ident: $bound:path>)?, $body:ident, ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty) => {
        #[allow(clippy::too_many_arguments)]
        $vis fn $name $(<$t: $bound>)? (isa: $crate::simd::Isa, $($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx512f")]
                fn wide $(<$t: $bound>)? ($($arg: $ty),*) -> $ret {
                    $body::<{ $crate::simd::AVX512 } $(, $t)?>($($arg),*)
                }
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx2")]
                fn mid $(<$t: $bound>)? ($($arg: $ty),*) -> $ret {
                    $body::<{ $crate::simd::AVX2 } $(, $t)?>($($arg),*)
                }
                match isa {
                    // SAFETY: `Isa::Avx512` and `Isa::Avx2` are only produced by
                    // `Isa::detect`/`Isa::available` after run-time detection of the feature.
                    $crate::simd::Isa::Avx512 => return unsafe { wide $(::<$t>)? ($($arg),*) },
                    $crate::simd::Isa::Avx2 => return unsafe { mid $(::<$t>)? ($($arg),*) },
                    $crate::simd::Isa::Baseline => {}
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = isa;
            $body::<{ $crate::simd::BASE } $(, $t)?>($($arg),*)
        }
    };
}

pub use crate::multiversion;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot2_is_the_same_bits_at_every_width() {
        for len in [5usize, 8, 16, 53, 64] {
            let x: Vec<f64> = (0..len).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
            let a: Vec<f64> = (0..len).map(|i| (i as f64 * 1.1).cos() / 7.0).collect();
            let b: Vec<f64> = (0..len).map(|i| (i as f64 * 0.3).tan()).collect();
            let base = dot2::<BASE>(&x, &a, &b);
            let plain = |v: &[f64]| x.iter().zip(v).map(|(p, q)| p * q).sum::<f64>();
            assert!((base.0 - plain(&a)).abs() < 1e-9 * plain(&a).abs().max(1.0));
            assert!((base.1 - plain(&b)).abs() < 1e-9 * plain(&b).abs().max(1.0));
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn mid(x: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
                    dot2::<AVX2>(x, a, b)
                }
                #[target_feature(enable = "avx512f")]
                fn wide(x: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
                    dot2::<AVX512>(x, a, b)
                }
                for isa in Isa::available() {
                    let got = match isa {
                        // SAFETY: detected by `Isa::available`.
                        Isa::Avx2 => unsafe { mid(&x, &a, &b) },
                        Isa::Avx512 => unsafe { wide(&x, &a, &b) },
                        Isa::Baseline => base,
                    };
                    assert_eq!(got.0.to_bits(), base.0.to_bits(), "{isa:?} len {len}");
                    assert_eq!(got.1.to_bits(), base.1.to_bits(), "{isa:?} len {len}");
                }
            }
        }
    }

    #[test]
    fn update_dot2_equals_axpy2_then_dot2_at_every_width() {
        for len in [5usize, 13, 16, 50] {
            let f = |k: f64| {
                (0..len)
                    .map(|i| ((i as f64 + k) * 0.71).sin())
                    .collect::<Vec<f64>>()
            };
            let (p0, r1, r2, a, b) = (f(0.0), f(1.0), f(2.0), f(3.0), f(4.0));
            let mut want_p = p0.clone();
            crate::linalg::axpy2(&mut want_p, 0.3, &r1, -1.7, &r2);
            let want = dot2::<BASE>(&want_p, &a, &b);
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f")]
            fn wide(p: &mut [f64], r1: &[f64], r2: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
                update_dot2::<AVX512>(p, 0.3, r1, -1.7, r2, a, b)
            }
            for isa in Isa::available() {
                let mut p = p0.clone();
                let got = match isa {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: detected by `Isa::available`.
                    Isa::Avx512 => unsafe { wide(&mut p, &r1, &r2, &a, &b) },
                    _ => update_dot2::<BASE>(&mut p, 0.3, &r1, -1.7, &r2, &a, &b),
                };
                assert_eq!(p, want_p, "{isa:?} len {len}");
                assert_eq!(got.0.to_bits(), want.0.to_bits(), "{isa:?} len {len}");
                assert_eq!(got.1.to_bits(), want.1.to_bits(), "{isa:?} len {len}");
            }
        }
    }
}
