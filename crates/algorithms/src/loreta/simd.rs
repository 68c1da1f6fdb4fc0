//! Run-time selection of the vector width for the `O((n+m)k)` passes of LORETA-1.
//!
//! The workspace is built for the baseline x86-64 target (SSE2). The passes over the factors
//! are compute-bound at `k = 50` (about 12 flops per stored float per step), so they are
//! compiled three times, for AVX-512, AVX2 and the baseline, and the widest one the CPU
//! supports is picked once per state. The element-wise kernels ([`crate::linalg::axpy`],
//! [`crate::linalg::axpy2`]) vectorise by themselves; the dot products [`dot2`] are written
//! with intrinsics (LLVM vectorises its reduction only 2 lanes wide). Every version fixes the
//! order of every floating-point operation (eight partial sums reduced by the same tree, no
//! fused multiply-add), so all three produce the same bits (tested). The only `unsafe` code
//! is here: calls of the feature-specific versions after run-time detection, and unaligned
//! loads of 8-element chunks.

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

    /// Every instruction set this CPU can run (tests).
    #[cfg(test)]
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
pub(crate) const BASE: u8 = 0;
pub(crate) const AVX2: u8 = 1;
pub(crate) const AVX512: u8 = 2;

/// `(x . a, x . b)`, each with sixteen partial sums: lane `q` of accumulator `c % 2` sums
/// the products of the elements `8c + q` (chunk `c` of eight), two accumulators so that the
/// additions form two independent chains; then the two accumulators are added lane by lane,
/// the eight lanes reduced as `((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7))`, and the remainder
/// (`len % 8` elements, summed in order) added. The row `x` is loaded once for both products.
/// `W` selects the implementation; `W = AVX2` and `W = AVX512` may only be used inside the
/// functions [`multiversion!`] compiles for those features (which run only after detection).
#[inline(always)]
pub(crate) fn dot2<const W: u8>(x: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
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
    let tree = |s: [f64; 8]| ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    (tree(sa) + ta, tree(sb) + tb)
}

/// `p += x r1 + y r2` element-wise (as [`crate::linalg::axpy2`]), then [`dot2`] of the
/// updated `p` with `a` and `b`, in one sweep: the same bits as the two calls, without
/// reading back the freshly stored row (a store-forwarding stall when the vector widths of
/// the two loops differ).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn update_dot2<const W: u8>(
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
        let tree = |s: [f64; 8]| ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
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
}

/// `multiversion!(name, body, (arg: Type, ...) -> Ret)` defines `fn name(isa: Isa, args...)`
/// that runs `body::<W>` (an `#[inline(always)]` function generic over the width `W` of
/// [`dot2`]) compiled for `isa`.
macro_rules! multiversion {
    ($name:ident, $body:ident, ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty) => {
        #[allow(clippy::too_many_arguments)]
        fn $name(isa: $crate::loreta::simd::Isa, $($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx512f")]
                fn wide($($arg: $ty),*) -> $ret {
                    $body::<{ $crate::loreta::simd::AVX512 }>($($arg),*)
                }
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx2")]
                fn mid($($arg: $ty),*) -> $ret {
                    $body::<{ $crate::loreta::simd::AVX2 }>($($arg),*)
                }
                match isa {
                    // SAFETY: `Isa::Avx512` and `Isa::Avx2` are only produced by
                    // `Isa::detect`/`Isa::available` after run-time detection of the feature.
                    $crate::loreta::simd::Isa::Avx512 => return unsafe { wide($($arg),*) },
                    $crate::loreta::simd::Isa::Avx2 => return unsafe { mid($($arg),*) },
                    $crate::loreta::simd::Isa::Baseline => {}
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = isa;
            $body::<{ $crate::loreta::simd::BASE }>($($arg),*)
        }
    };
}

pub(crate) use multiversion;

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
