//! Run-time selection of the vector width for the `O((n+m)k)` passes of LORETA-1.
//!
//! The workspace is built for the baseline x86-64 target (SSE2). The passes over the factors
//! are compute-bound at `k = 50` (about 12 flops per stored float per step), so they are
//! compiled three times, for AVX-512, AVX2 and the baseline, and the widest one the CPU
//! supports is picked once per state. The element-wise kernels ([`crate::linalg::axpy`],
//! [`crate::linalg::axpy2`]) vectorise by themselves; the dot product [`dot8`] is written
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

/// `x . a` with eight partial sums (lane `q` sums the products of the elements `8i + q`),
/// reduced as `((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7))`, plus the remainder summed in order.
/// `W` selects the implementation; `W = AVX2` and `W = AVX512` may only be used inside the
/// functions [`multiversion!`] compiles for those features (which run only after detection).
#[inline(always)]
pub(crate) fn dot8<const W: u8>(x: &[f64], a: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), a.len());
    let (cx, ca) = (x.chunks_exact(8), a.chunks_exact(8));
    let (rx, ra) = (cx.remainder(), ca.remainder());
    #[cfg(target_arch = "x86_64")]
    let s = if W == AVX512 {
        // SAFETY: W = AVX512 only inside functions compiled with, and run after run-time
        // detection of, avx512f (see `multiversion!`).
        unsafe { x86::partial_sums_avx512(cx, ca) }
    } else if W == AVX2 {
        // SAFETY: as above, for avx2.
        unsafe { x86::partial_sums_avx2(cx, ca) }
    } else {
        partial_sums(cx, ca)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let s = partial_sums(cx, ca);
    let mut tail = 0.0;
    for (x, a) in rx.iter().zip(ra) {
        tail += x * a;
    }
    ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail
}

#[inline(always)]
fn partial_sums(
    cx: std::slice::ChunksExact<'_, f64>,
    ca: std::slice::ChunksExact<'_, f64>,
) -> [f64; 8] {
    let mut s = [0.0f64; 8];
    for (x, a) in cx.zip(ca) {
        for q in 0..8 {
            s[q] += x[q] * a[q];
        }
    }
    s
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;
    use std::slice::ChunksExact;

    /// The eight partial sums of [`super::dot8`] in one 512-bit register.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn partial_sums_avx512(
        cx: ChunksExact<'_, f64>,
        ca: ChunksExact<'_, f64>,
    ) -> [f64; 8] {
        let mut acc = _mm512_setzero_pd();
        for (x, a) in cx.zip(ca) {
            // SAFETY: both chunks hold exactly 8 elements.
            let (vx, va) = unsafe { (_mm512_loadu_pd(x.as_ptr()), _mm512_loadu_pd(a.as_ptr())) };
            acc = _mm512_add_pd(acc, _mm512_mul_pd(vx, va));
        }
        let mut out = [0.0f64; 8];
        // SAFETY: `out` holds 8 elements.
        unsafe { _mm512_storeu_pd(out.as_mut_ptr(), acc) };
        out
    }

    /// The eight partial sums of [`super::dot8`] in two 256-bit registers (lanes 0-3, 4-7).
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn partial_sums_avx2(
        cx: ChunksExact<'_, f64>,
        ca: ChunksExact<'_, f64>,
    ) -> [f64; 8] {
        let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for (x, a) in cx.zip(ca) {
            // SAFETY: both chunks hold exactly 8 elements.
            let (xl, xh, al, ah) = unsafe {
                (
                    _mm256_loadu_pd(x.as_ptr()),
                    _mm256_loadu_pd(x.as_ptr().add(4)),
                    _mm256_loadu_pd(a.as_ptr()),
                    _mm256_loadu_pd(a.as_ptr().add(4)),
                )
            };
            lo = _mm256_add_pd(lo, _mm256_mul_pd(xl, al));
            hi = _mm256_add_pd(hi, _mm256_mul_pd(xh, ah));
        }
        let mut out = [0.0f64; 8];
        // SAFETY: `out` holds 8 elements.
        unsafe {
            _mm256_storeu_pd(out.as_mut_ptr(), lo);
            _mm256_storeu_pd(out.as_mut_ptr().add(4), hi);
        }
        out
    }
}

/// `multiversion!(name, body, (arg: Type, ...) -> Ret)` defines `fn name(isa: Isa, args...)`
/// that runs `body::<W>` (an `#[inline(always)]` function generic over the width `W` of
/// [`dot8`]) compiled for `isa`.
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
    fn dot8_is_the_same_bits_at_every_width() {
        let x: Vec<f64> = (0..53).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
        let a: Vec<f64> = (0..53).map(|i| (i as f64 * 1.1).cos() / 7.0).collect();
        let base = dot8::<BASE>(&x, &a);
        let plain: f64 = x.iter().zip(&a).map(|(p, q)| p * q).sum();
        assert!((base - plain).abs() < 1e-9 * plain.abs().max(1.0));
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            fn mid(x: &[f64], a: &[f64]) -> f64 {
                dot8::<AVX2>(x, a)
            }
            #[target_feature(enable = "avx512f")]
            fn wide(x: &[f64], a: &[f64]) -> f64 {
                dot8::<AVX512>(x, a)
            }
            for isa in Isa::available() {
                let got = match isa {
                    // SAFETY: detected by `Isa::available`.
                    Isa::Avx2 => unsafe { mid(&x, &a) },
                    Isa::Avx512 => unsafe { wide(&x, &a) },
                    Isa::Baseline => base,
                };
                assert_eq!(got.to_bits(), base.to_bits(), "{isa:?}");
            }
        }
    }
}
