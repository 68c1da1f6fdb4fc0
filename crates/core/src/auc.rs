//! Area under the ROC curve (Mann–Whitney), its permutation significance, and the rank and
//! correlation tests of FuncISH (`../shared/papers/funcish.md` §4).
//!
//! # AUC
//!
//! [`auc`] is the Mann–Whitney statistic with average ranks for ties (spec §4):
//!
//! ```text
//! AUC = (Σ_{i∈pos} rank_i − n₊(n₊+1)/2) / (n₊·n₋)
//! ```
//!
//! i.e. the fraction of (positive, negative) pairs ordered correctly, a tied pair counting ½.
//! It equals the trapezoidal area under the ROC curve whose vertices are the (FPR, TPR) points
//! after each group of tied scores ([`roc_area_trapezoid`], kept as the independent reference
//! the tests compare with). Scores are ordered by `f64::total_cmp`; a NaN score gives `None`,
//! as does a label set without a positive or without a negative (the AUC is undefined: the
//! caller counts and skips such folds).
//!
//! # Permutation significance
//!
//! [`grouped_auc_permutation`] tests a statistic that is the *mean over groups* (the outer
//! test folds of a cross-validation) of the per-group AUC. Under the null, labels are
//! exchangeable *within* a group: each permutation shuffles the labels inside every group,
//! keeping each group's number of positives, and recomputes the mean. Permuting inside groups
//! respects the folds: each fold's scores come from a different model (different training
//! sets, possibly different chosen C and calibration), so pooling scores across folds would
//! test a different statistic. Because the scores do not move, a group's ranks are computed
//! once; a permutation draws a uniformly random set of `n₊` ranks (a partial Fisher–Yates
//! shuffle of the rank array, `O(min(n₊, n₋))` per group and permutation), so 1,000
//! permutations of a 16K-image category cost microseconds, not sorts. Groups whose AUC is
//! undefined are skipped (in the observed statistic and in every permutation alike).
//!
//! `p = (1 + #{perm ≥ obs}) / (1 + permutations)` (spec §4), which lies in
//! `[1/(1+B), 1]` and is (super-)uniform under the null. Rank sums are sums of half-integers,
//! exact in `f64`, and observed and permuted statistics go through the same arithmetic, so the
//! comparison `≥` is exact; a relative slack of `1e-12` guards it anyway.
//!
//! # Rank-sum test
//!
//! [`mann_whitney`] is the two-sided Wilcoxon rank-sum (Mann–Whitney U) test by the normal
//! approximation with tie correction and continuity correction — the values of
//! `scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic",
//! use_continuity=True)`:
//!
//! ```text
//! U₁ = R₁ − n₁(n₁+1)/2,   U = max(U₁, n₁n₂ − U₁),   μ = n₁n₂/2
//! σ² = n₁n₂/12 · ((n+1) − Σ_ties (t³ − t) / (n(n−1)))
//! z = (U − μ − ½) / σ,    p = 2·(1 − Φ(z)) = erfc(z/√2)   (clipped to 1)
//! ```
//!
//! The exact small-sample distribution is not implemented (the FuncISH comparisons have
//! 164 vs 1,917 categories). All values tied gives `σ = 0`: `z = 0`, `p = 1`.
//!
//! # Pearson correlation
//!
//! [`pearson`]: `r` and its two-sided p-value under the t distribution with `ν = n − 2` degrees
//! of freedom, `t = r √(ν / (1 − r²))`, `p = I_{ν/(ν+t²)}(ν/2, ½) = I_{1−r²}(ν/2, ½)` (the
//! regularised incomplete beta function; the second form avoids forming `t`). This is
//! `scipy.stats.pearsonr`'s p-value.
//!
//! # Very small p-values
//!
//! The spec quotes p < 10⁻³⁸, 10⁻¹⁰⁰ and 10⁻²⁰⁰; a Pearson r = 0.846 over 2,081 categories
//! (Table S1) has p ≈ 10⁻⁵⁶⁹, below the smallest `f64`. Every test therefore also returns
//! `log10_p`, computed in log space throughout (`ln erfc` from the continued fraction of the
//! incomplete gamma function, `ln I_x(a, b)` from the continued fraction of the incomplete
//! beta function, both with their prefactors kept as logarithms), so it stays exact where `p`
//! underflows to 0.
//!
//! # Special functions
//!
//! Written here rather than taken from a crate (`statrs`): the tests need their logarithms
//! past `f64` underflow, which `statrs` does not give, and they are short. `ln Γ` is
//! Lanczos' approximation (`g = 7`, 9 terms; relative error ~1e-15); the regularised
//! incomplete gamma and beta functions are the series / modified-Lentz continued fractions of
//! Numerical Recipes (§6.2, §6.4), iterated to a relative change below `1e-16`. The tests
//! compare them with published values (scipy's `erfc`, `log_ndtr`, `gammaln`, `betainc`,
//! quoted in comments).

use crate::rng::Rng;
use rand::Rng as _;

/// Average 1-based ranks of `values` (ties share the mean of their positions), in the order
/// of `f64::total_cmp`.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && values[order[j]].total_cmp(&values[order[i]]).is_eq() {
            j += 1;
        }
        // positions i..j (0-based) share rank (i+1 + j)/2
        let r = (i + 1 + j) as f64 / 2.0;
        for &k in &order[i..j] {
            ranks[k] = r;
        }
        i = j;
    }
    ranks
}

/// The sum of squared tie-group sizes minus sizes, `Σ (t³ − t)`, of `values`.
fn tie_term(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mut s = 0.0;
    let mut i = 0;
    while i < v.len() {
        let mut j = i + 1;
        while j < v.len() && v[j].total_cmp(&v[i]).is_eq() {
            j += 1;
        }
        let t = (j - i) as f64;
        s += t * t * t - t;
        i = j;
    }
    s
}

/// The AUC of `scores` for the binary `labels` (`true` = positive): the Mann–Whitney
/// statistic with average ranks for ties. `None` when the lengths differ, a score is NaN, or
/// there is no positive or no negative.
pub fn auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    if scores.len() != labels.len() || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let n_pos = labels.iter().filter(|&&l| l).count();
    let n_neg = labels.len() - n_pos;
    if n_pos == 0 || n_neg == 0 {
        return None;
    }
    let ranks = average_ranks(scores);
    let r: f64 = ranks
        .iter()
        .zip(labels)
        .filter(|(_, l)| **l)
        .map(|(r, _)| r)
        .sum();
    Some(auc_from_rank_sum(r, n_pos, n_neg))
}

fn auc_from_rank_sum(rank_sum: f64, n_pos: usize, n_neg: usize) -> f64 {
    let p = n_pos as f64;
    (rank_sum - p * (p + 1.0) / 2.0) / (p * n_neg as f64)
}

/// The trapezoidal area under the ROC curve: thresholds at every distinct score (descending),
/// one vertex (FPR, TPR) per tie group, straight segments between them. Equal to [`auc`]
/// (tested); kept as its independent reference. `None` as for [`auc`].
pub fn roc_area_trapezoid(scores: &[f64], labels: &[bool]) -> Option<f64> {
    if scores.len() != labels.len() || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let n_pos = labels.iter().filter(|&&l| l).count() as f64;
    let n_neg = labels.len() as f64 - n_pos;
    if n_pos == 0.0 || n_neg == 0.0 {
        return None;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let (mut tp, mut fp, mut area) = (0.0, 0.0, 0.0);
    let mut i = 0;
    while i < order.len() {
        let (tp0, fp0) = (tp, fp);
        let mut j = i;
        while j < order.len() && scores[order[j]].total_cmp(&scores[order[i]]).is_eq() {
            if labels[order[j]] {
                tp += 1.0;
            } else {
                fp += 1.0;
            }
            j += 1;
        }
        area += (fp - fp0) / n_neg * (tp + tp0) / (2.0 * n_pos);
        i = j;
    }
    Some(area)
}

/// The outcome of [`grouped_auc_permutation`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AucPermutation {
    /// The observed statistic: mean over the usable groups of their AUC.
    pub statistic: f64,
    /// `(1 + #{permuted ≥ observed}) / (1 + permutations)`.
    pub p_value: f64,
    pub permutations: usize,
    /// Groups with an AUC (both classes present).
    pub groups_used: usize,
    /// Groups skipped (no positive or no negative).
    pub groups_skipped: usize,
}

/// Permutation test of the mean over `groups` of the per-group AUC, labels permuted within
/// each group (module docs). `None` when no group has both classes, a group's lengths differ,
/// or a score is NaN. All randomness comes from `rng`.
pub fn grouped_auc_permutation(
    groups: &[(&[f64], &[bool])],
    permutations: usize,
    rng: &mut Rng,
) -> Option<AucPermutation> {
    // per usable group: its ranks (to be shuffled), n_pos, n_neg, and whether to draw the
    // negatives (the smaller class) instead of the positives.
    struct G {
        ranks: Vec<f64>,
        n_pos: usize,
        n_neg: usize,
        total: f64,
    }
    let mut gs = Vec::new();
    let mut skipped = 0;
    let mut observed_sum = 0.0;
    for (scores, labels) in groups {
        if scores.len() != labels.len() || scores.iter().any(|s| s.is_nan()) {
            return None;
        }
        let n_pos = labels.iter().filter(|&&l| l).count();
        let n_neg = labels.len() - n_pos;
        if n_pos == 0 || n_neg == 0 {
            skipped += 1;
            continue;
        }
        let ranks = average_ranks(scores);
        let r: f64 = ranks
            .iter()
            .zip(labels.iter())
            .filter(|(_, l)| **l)
            .map(|(r, _)| r)
            .sum();
        observed_sum += auc_from_rank_sum(r, n_pos, n_neg);
        let total = ranks.iter().sum();
        gs.push(G {
            ranks,
            n_pos,
            n_neg,
            total,
        });
    }
    if gs.is_empty() {
        return None;
    }
    let m = gs.len() as f64;
    let observed = observed_sum / m;
    let slack = 1e-12 * observed.abs().max(1.0);
    let mut exceed = 0usize;
    for _ in 0..permutations {
        let mut sum = 0.0;
        for g in gs.iter_mut() {
            let n = g.ranks.len();
            let k = g.n_pos.min(g.n_neg);
            let mut drawn = 0.0;
            for i in 0..k {
                let j = rng.random_range(i..n);
                g.ranks.swap(i, j);
                drawn += g.ranks[i];
            }
            let r = if g.n_pos <= g.n_neg {
                drawn
            } else {
                g.total - drawn
            };
            sum += auc_from_rank_sum(r, g.n_pos, g.n_neg);
        }
        if sum / m >= observed - slack {
            exceed += 1;
        }
    }
    Some(AucPermutation {
        statistic: observed,
        p_value: (1 + exceed) as f64 / (1 + permutations) as f64,
        permutations,
        groups_used: gs.len(),
        groups_skipped: skipped,
    })
}

/// A two-sided Wilcoxon rank-sum (Mann–Whitney U) test (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankSumTest {
    /// `U₁ = R₁ − n₁(n₁+1)/2` of the first sample.
    pub u: f64,
    /// `U₁ / (n₁n₂)`: the AUC of the first sample against the second.
    pub auc: f64,
    /// The continuity-corrected normal deviate `(max(U₁, U₂) − μ − ½) / σ`.
    pub z: f64,
    pub p_value: f64,
    /// `log10 p`, exact where `p` underflows.
    pub log10_p: f64,
}

/// Two-sided Wilcoxon rank-sum test of `x` against `y` (normal approximation, tie and
/// continuity corrections; module docs). `None` when a sample is empty or holds a NaN.
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<RankSumTest> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 || x.iter().chain(y).any(|v| v.is_nan()) {
        return None;
    }
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    let ranks = average_ranks(&all);
    let r1: f64 = ranks[..n1].iter().sum();
    let (f1, f2) = (n1 as f64, n2 as f64);
    let n = f1 + f2;
    let u1 = r1 - f1 * (f1 + 1.0) / 2.0;
    let u = u1.max(f1 * f2 - u1);
    let mu = f1 * f2 / 2.0;
    let ties = tie_term(&all);
    let var = f1 * f2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    let (z, log10_p) = if var > 0.0 {
        let z = (u - mu - 0.5) / var.sqrt();
        (
            z,
            (ln_erfc(z / std::f64::consts::SQRT_2) / std::f64::consts::LN_10).min(0.0),
        )
    } else {
        (0.0, 0.0)
    };
    Some(RankSumTest {
        u: u1,
        auc: u1 / (f1 * f2),
        z,
        p_value: 10f64.powf(log10_p).min(1.0),
        log10_p,
    })
}

/// Pearson's correlation with its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correlation {
    pub r: f64,
    pub n: usize,
    /// `r √((n − 2) / (1 − r²))` (±∞ at |r| = 1).
    pub t: f64,
    pub p_value: f64,
    /// `log10 p`, exact where `p` underflows (−∞ at |r| = 1).
    pub log10_p: f64,
}

/// Pearson's r of `x` and `y` and its two-sided p-value under the t distribution with
/// `n − 2` degrees of freedom (module docs). `None` when the lengths differ, `n < 3`, a value
/// is not finite, or a sample is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<Correlation> {
    let n = x.len();
    if n != y.len() || n < 3 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (da, db) = (a - mx, b - my);
        sxy += da * db;
        sxx += da * da;
        syy += db * db;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let r = (sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0);
    let nu = (n - 2) as f64;
    let one_minus = (1.0 - r) * (1.0 + r);
    let (t, log10_p) = if one_minus <= 0.0 {
        (r.signum() * f64::INFINITY, f64::NEG_INFINITY)
    } else {
        (
            r * (nu / one_minus).sqrt(),
            (ln_beta_inc(nu / 2.0, 0.5, one_minus) / std::f64::consts::LN_10).min(0.0),
        )
    };
    Some(Correlation {
        r,
        n,
        t,
        p_value: 10f64.powf(log10_p),
        log10_p,
    })
}

/// Welch's two-sample t-test (unequal variances).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WelchTest {
    /// `(mean x − mean y) / √(s²ₓ/nₓ + s²ᵧ/nᵧ)`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// `log10` of the two-sided p-value, exact where `p` underflows.
    pub log10_p: f64,
}

/// Welch's t-test of `x` against `y`: two-sided `p = I_{ν/(ν+t²)}(ν/2, ½)`. `None` when a
/// sample has fewer than 2 values, a value is not finite, or both samples are constant.
pub fn welch_t(x: &[f64], y: &[f64]) -> Option<WelchTest> {
    let (nx, ny) = (x.len(), y.len());
    if nx < 2 || ny < 2 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let stats = |v: &[f64]| {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / (n - 1.0);
        (m, var / n)
    };
    let ((mx, vx), (my, vy)) = (stats(x), stats(y));
    let se2 = vx + vy;
    if se2 <= 0.0 {
        return None;
    }
    let t = (mx - my) / se2.sqrt();
    let df = se2 * se2 / (vx * vx / (nx as f64 - 1.0) + vy * vy / (ny as f64 - 1.0));
    let log10_p =
        (ln_beta_inc(df / 2.0, 0.5, df / (df + t * t)) / std::f64::consts::LN_10).min(0.0);
    Some(WelchTest { t, df, log10_p })
}

// ---- special functions ----

const EPS: f64 = 1e-16;
const FPMIN: f64 = 1e-300;
const MAX_ITER: usize = 100_000;

/// `ln Γ(x)` for `x > 0` (Lanczos, `g = 7`, 9 coefficients; reflection below ½).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x)Γ(1−x) = π / sin(πx)
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `ln Q(a, x)`, the log of the regularised upper incomplete gamma function, `a > 0`,
/// `x ≥ 0`: series for `P` when `x < a + 1`, continued fraction for `Q` otherwise.
pub fn ln_gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let ln_front = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        let (mut ap, mut del, mut sum) = (a, 1.0 / a, 1.0 / a);
        for _ in 0..MAX_ITER {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * EPS {
                break;
            }
        }
        let p = (ln_front + sum.ln()).exp();
        (-p).ln_1p()
    } else {
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / FPMIN;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..MAX_ITER {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < FPMIN {
                d = FPMIN;
            }
            c = b + an / c;
            if c.abs() < FPMIN {
                c = FPMIN;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < EPS {
                break;
            }
        }
        ln_front + h.ln()
    }
}

/// `ln erfc(x)`, finite for every finite `x` (`erfc(x) = Q(½, x²)` for `x ≥ 0`).
pub fn ln_erfc(x: f64) -> f64 {
    if x >= 0.0 {
        ln_gamma_q(0.5, x * x)
    } else {
        // erfc(x) = 2 − erfc(−x) = 1 + P(½, x²)
        (2.0 - ln_gamma_q(0.5, x * x).exp()).ln()
    }
}

/// The complementary error function.
pub fn erfc(x: f64) -> f64 {
    ln_erfc(x).exp()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < FPMIN {
        d = FPMIN;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// `ln I_x(a, b)`, the log of the regularised incomplete beta function, `a, b > 0`,
/// `0 ≤ x ≤ 1`.
pub fn ln_beta_inc(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if x >= 1.0 {
        return 0.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (-x).ln_1p();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front + beta_cf(a, b, x).ln() - a.ln()
    } else {
        let upper = (ln_front + beta_cf(b, a, 1.0 - x).ln() - b.ln()).exp();
        (-upper).ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded;

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    #[test]
    fn perfect_reversed_and_hand_computed_auc() {
        let s = [0.1, 0.2, 0.3, 0.4, 0.5];
        let l = [false, false, false, true, true];
        assert_eq!(auc(&s, &l), Some(1.0));
        let rev = [true, true, false, false, false];
        assert_eq!(auc(&s, &rev), Some(0.0));
        // pos 0.35 beats 0.1, loses to 0.4; pos 0.8 beats both: 3/4
        assert_eq!(
            auc(&[0.1, 0.4, 0.35, 0.8], &[false, false, true, true]),
            Some(0.75)
        );
        // with a tie: pos 0.5 ties neg 0.5 (½) and beats 0.2; pos 0.9 beats both: 3.5/4
        assert_eq!(
            auc(&[0.5, 0.5, 0.2, 0.9], &[true, false, false, true]),
            Some(0.875)
        );
        // all tied: ½
        assert_eq!(auc(&[1.0; 4], &[true, false, true, false]), Some(0.5));
        // undefined
        assert_eq!(auc(&[0.1, 0.2], &[true, true]), None);
        assert_eq!(auc(&[0.1, 0.2], &[false, false]), None);
        assert_eq!(auc(&[f64::NAN, 0.2], &[true, false]), None);
        assert_eq!(auc(&[0.1], &[true, false]), None);
        assert_eq!(
            average_ranks(&[3.0, 1.0, 3.0, 2.0]),
            vec![3.5, 1.0, 3.5, 2.0]
        );
    }

    #[test]
    fn mann_whitney_auc_equals_trapezoidal_roc_area_with_ties() {
        let mut rng = seeded(3);
        for trial in 0..200 {
            let n = 2 + trial % 40;
            // few distinct values: many ties
            let scores: Vec<f64> = (0..n)
                .map(|_| rng.random_range(0..5) as f64 / 4.0)
                .collect();
            let labels: Vec<bool> = (0..n).map(|_| rng.random_bool(0.4)).collect();
            let a = auc(&scores, &labels);
            let b = roc_area_trapezoid(&scores, &labels);
            match (a, b) {
                (Some(a), Some(b)) => assert!((a - b).abs() < 1e-12, "{a} vs {b}"),
                (None, None) => {}
                other => panic!("{other:?}"),
            }
            // brute force over pairs
            if let Some(a) = a {
                let (mut num, mut den) = (0.0, 0.0);
                for i in 0..n {
                    for j in 0..n {
                        if labels[i] && !labels[j] {
                            den += 1.0;
                            num += if scores[i] > scores[j] {
                                1.0
                            } else if scores[i] == scores[j] {
                                0.5
                            } else {
                                0.0
                            };
                        }
                    }
                }
                assert!((a - num / den).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn special_functions_match_published_values() {
        // scipy.special.erfc(x) for x in [0.1, 0.5, 1, 2, 3, 5, 10, 26]
        let erfc_ref = [
            (0.1, 0.8875370839817152),
            (0.5, 0.4795001221869535),
            (1.0, 0.15729920705028516),
            (2.0, 0.004677734981047266),
            (3.0, 2.2090496998585445e-05),
            (5.0, 1.5374597944280347e-12),
            (10.0, 2.0884875837625446e-45),
            (26.0, 5.663192408856145e-296),
        ];
        for (x, v) in erfc_ref {
            assert!(rel(erfc(x), v) < 1e-13, "erfc({x}) = {} vs {v}", erfc(x));
        }
        assert!(rel(erfc(-1.0), 2.0 - 0.15729920705028516) < 1e-14);
        // (scipy.special.log_ndtr(-x*sqrt(2)) + log(2)) / log(10) = log10 erfc(x); erfc(30)
        // underflows f64.
        for (x, v) in [(10.0, -44.68016810230907), (30.0, -392.5909708445167)] {
            let l = ln_erfc(x) / std::f64::consts::LN_10;
            assert!(rel(l, v) < 1e-13, "log10 erfc({x}) = {l} vs {v}");
        }
        // math.lgamma
        for (x, v) in [
            (0.5, 0.5723649429247004),
            (3.7, 1.4280723266653883),
            (10.0, 12.801827480081467),
            (100.5, 361.4355404677776),
        ] {
            assert!(rel(ln_gamma(x), v) < 1e-13, "lgamma({x})");
        }
        assert!(ln_gamma(1.0).abs() < 1e-14 && ln_gamma(2.0).abs() < 1e-14);
        // scipy.special.betainc(a, b, x)
        for (a, b, x, v) in [
            (2.5, 0.5, 0.3, 0.018927124071945658),
            (10.0, 0.5, 0.99, 0.6579281751567845),
            (0.5, 3.0, 0.2, 0.733430296619931),
        ] {
            let got = ln_beta_inc(a, b, x).exp();
            assert!(rel(got, v) < 1e-12, "I_{x}({a},{b}) = {got} vs {v}");
        }
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        // scipy.stats.mannwhitneyu(x, y, alternative='two-sided', method='asymptotic',
        //                          use_continuity=True)
        // -> MannwhitneyuResult(statistic=35.0, pvalue=0.17190967716601435)
        let x = [1.1, 2.3, 2.3, 3.0, 4.5, 5.2, 6.0, 6.0];
        let y = [0.5, 1.1, 2.3, 2.9, 3.0, 3.3];
        let t = mann_whitney(&x, &y).unwrap();
        assert_eq!(t.u, 35.0);
        assert!(rel(t.p_value, 0.17190967716601435) < 1e-12, "{t:?}");
        assert!((t.auc - 35.0 / 48.0).abs() < 1e-15);
        // symmetric in the two-sided p
        let s = mann_whitney(&y, &x).unwrap();
        assert_eq!(s.u, 48.0 - 35.0);
        assert!(rel(s.p_value, t.p_value) < 1e-14);
        // separated samples of 200: scipy pvalue=4.830856390397399e-67
        let a: Vec<f64> = (200..400).map(f64::from).collect();
        let b: Vec<f64> = (0..200).map(f64::from).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(rel(t.p_value, 4.830856390397399e-67) < 1e-10, "{t:?}");
        // 2000 vs 2000 separated: z = 54.76539681065253, p underflows f64;
        // (scipy.special.log_ndtr(-z) + log 2) / log 10 = -653.1152883475515
        let a: Vec<f64> = (2000..4000).map(f64::from).collect();
        let b: Vec<f64> = (0..2000).map(f64::from).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(rel(t.z, 54.76539681065253) < 1e-12);
        assert!(rel(t.log10_p, -653.1152883475515) < 1e-12, "{t:?}");
        assert_eq!(t.p_value, 0.0);
        // all tied: no evidence
        let t = mann_whitney(&[1.0, 1.0], &[1.0, 1.0, 1.0]).unwrap();
        assert_eq!(t.p_value, 1.0);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    #[test]
    fn pearson_matches_scipy() {
        let a = [1., 2., 3., 4., 5., 6., 7., 8., 9., 10.];
        // scipy.stats.pearsonr(a, c) -> statistic=0.3343253990189949, pvalue=0.34507104773311176
        let c = [3., 1., 4., 1., 5., 9., 2., 6., 5., 3.];
        let r = pearson(&a, &c).unwrap();
        assert!(rel(r.r, 0.3343253990189949) < 1e-13);
        assert!(rel(r.p_value, 0.34507104773311176) < 1e-12, "{r:?}");
        // scipy.stats.pearsonr(a, b) -> statistic=0.9996348730956724, pvalue=7.772542362380957e-14
        let b = [2.1, 3.9, 6.2, 7.8, 10.1, 12.2, 13.8, 16.1, 18.2, 19.9];
        let r = pearson(&a, &b).unwrap();
        assert!(rel(r.r, 0.9996348730956724) < 1e-13);
        assert!(rel(r.p_value, 7.772542362380957e-14) < 1e-9, "{r:?}");
        let neg: Vec<f64> = c.iter().map(|v| -v).collect();
        let rn = pearson(&a, &neg).unwrap();
        assert!(
            rel(rn.r, -0.3343253990189949) < 1e-13 && rel(rn.p_value, 0.34507104773311176) < 1e-12
        );
        assert!(pearson(&a, &[1.0; 10]).is_none());
        assert!(pearson(&[1.0, 2.0], &[1.0, 2.0]).is_none());
        let perfect = pearson(&a, &a).unwrap();
        assert_eq!(perfect.log10_p, f64::NEG_INFINITY);
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind(x, y, equal_var=False): descriptor sides in um (Fig. 6's test)
        let x = [36., 36., 72., 36., 72., 36., 144., 36.];
        let y = [144., 288., 72., 144., 288., 288., 144.];
        let w = welch_t(&x, &y).unwrap();
        assert!(rel(w.t, -3.7322499780534217) < 1e-13, "{w:?}");
        assert!(rel(w.df, 7.861158463217809) < 1e-13, "{w:?}");
        assert!(
            rel(10f64.powf(w.log10_p), 0.005952750066808397) < 1e-10,
            "{w:?}"
        );
        let x = [1., 2., 3., 4., 5., 6.];
        let y = [2.5, 3.5, 4.0, 6.0, 7.5, 8.0, 9.0, 9.5];
        let w = welch_t(&x, &y).unwrap();
        assert!(rel(w.t, -2.2702771229544076) < 1e-13, "{w:?}");
        assert!(rel(w.df, 11.982014403689238) < 1e-13, "{w:?}");
        assert!(
            rel(10f64.powf(w.log10_p), 0.04244750025239003) < 1e-10,
            "{w:?}"
        );
        // symmetric in the sign of t; undefined cases
        let r = welch_t(&y, &x).unwrap();
        assert_eq!((r.t, r.log10_p), (-w.t, w.log10_p));
        assert!(welch_t(&[1.0], &x).is_none());
        assert!(welch_t(&[2.0, 2.0], &[3.0, 3.0]).is_none());
    }

    #[test]
    fn pearson_log_p_past_underflow() {
        // Table S1's lowest correlation, r = 0.846 over n = 2081: t = 72.34714524972965 and
        // log10 p = -569.5088546062191 (scipy.integrate.quad of the t density from t to t+5
        // in log space, scaled by its log value at t: independent of the beta function).
        let nu = 2079.0;
        let r: f64 = 0.846;
        let lp = ln_beta_inc(nu / 2.0, 0.5, (1.0 - r) * (1.0 + r)) / std::f64::consts::LN_10;
        assert!(rel(lp, -569.5088546062191) < 1e-11, "{lp}");
    }

    #[test]
    fn permutation_p_within_bounds_and_uniform_under_the_null() {
        let mut rng = seeded(11);
        // perfectly separated folds: p = 1/(1+B)
        let s1 = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
        let l1 = [
            false, false, false, false, false, false, false, true, true, true,
        ];
        let groups: Vec<(&[f64], &[bool])> = vec![(&s1, &l1), (&s1, &l1)];
        let t = grouped_auc_permutation(&groups, 999, &mut rng).unwrap();
        assert_eq!(t.statistic, 1.0);
        assert!((t.p_value - 1.0 / 1000.0).abs() < 1e-15);
        // reversed: every permutation is >= 0, p = 1
        let rev = [
            true, true, true, false, false, false, false, false, false, false,
        ];
        let t = grouped_auc_permutation(&[(&s1, &rev)], 200, &mut rng).unwrap();
        assert_eq!(t.p_value, 1.0);
        // a group without positives is skipped
        let none = [false; 10];
        let t = grouped_auc_permutation(&[(&s1, &l1), (&s1, &none)], 10, &mut rng).unwrap();
        assert_eq!((t.groups_used, t.groups_skipped), (1, 1));
        assert!(grouped_auc_permutation(&[(&s1, &none)], 10, &mut rng).is_none());
        // null: random scores and labels; p-values roughly uniform
        let mut ps = Vec::new();
        for _ in 0..400 {
            let mut groups_data = Vec::new();
            for _ in 0..3 {
                let s: Vec<f64> = (0..30).map(|_| rng.random::<f64>()).collect();
                let l: Vec<bool> = (0..30).map(|i| i % 5 == 0).collect();
                groups_data.push((s, l));
            }
            let groups: Vec<(&[f64], &[bool])> = groups_data
                .iter()
                .map(|(s, l)| (s.as_slice(), l.as_slice()))
                .collect();
            let t = grouped_auc_permutation(&groups, 199, &mut rng).unwrap();
            assert!(t.p_value >= 1.0 / 200.0 && t.p_value <= 1.0);
            ps.push(t.p_value);
        }
        let frac = |a: f64| ps.iter().filter(|&&p| p <= a).count() as f64 / ps.len() as f64;
        // binomial sd at 400 draws: ~0.015 at 0.05, ~0.025 at 0.5
        assert!((frac(0.05) - 0.05).abs() < 0.04, "{}", frac(0.05));
        assert!((frac(0.5) - 0.5).abs() < 0.08, "{}", frac(0.5));
        let mean = ps.iter().sum::<f64>() / ps.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "{mean}");
    }
}
