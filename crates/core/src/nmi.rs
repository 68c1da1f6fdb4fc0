//! Normalised mutual information between two clusterings (Manning, Raghavan & Schütze 2008,
//! §16.3), the clustering score of the Givens paper's mixture experiments (givens.md §6.4):
//!
//! ```text
//! NMI(Ω, C) = I(Ω; C) / ((H(Ω) + H(C)) / 2)
//! I(Ω; C)   = Σ_k Σ_j (|ω_k ∩ c_j| / N) log(N |ω_k ∩ c_j| / (|ω_k| |c_j|))
//! H(Ω)      = −Σ_k (|ω_k| / N) log(|ω_k| / N)
//! ```
//!
//! Labels are arbitrary integers (only equality matters; empty clusters do not count). The
//! score is symmetric, in `[0, 1]`, and 1 exactly for identical partitions up to renaming.
//! When both partitions have a single cluster the ratio is `0/0`; it is defined as 1 (the
//! partitions are identical). When only one has a single cluster, `I = 0` and NMI = 0.
//! Natural logarithms (the base cancels).

use std::collections::HashMap;

/// NMI of `predicted` against `truth` (equal lengths). Empty input gives 1 (nothing to
/// disagree on).
pub fn nmi(predicted: &[usize], truth: &[usize]) -> f64 {
    assert_eq!(
        predicted.len(),
        truth.len(),
        "nmi: clusterings of different lengths"
    );
    let n = predicted.len();
    if n == 0 {
        return 1.0;
    }
    let mut joint: HashMap<(usize, usize), usize> = HashMap::new();
    let mut a: HashMap<usize, usize> = HashMap::new();
    let mut b: HashMap<usize, usize> = HashMap::new();
    for (&p, &t) in predicted.iter().zip(truth) {
        *joint.entry((p, t)).or_default() += 1;
        *a.entry(p).or_default() += 1;
        *b.entry(t).or_default() += 1;
    }
    let nf = n as f64;
    let entropy = |m: &HashMap<usize, usize>| -> f64 {
        // Sorted for a deterministic summation order.
        let mut counts: Vec<usize> = m.values().copied().collect();
        counts.sort_unstable();
        counts
            .iter()
            .map(|&c| {
                let p = c as f64 / nf;
                -p * p.ln()
            })
            .sum()
    };
    let (ha, hb) = (entropy(&a), entropy(&b));
    if ha + hb == 0.0 {
        return 1.0;
    }
    let mut cells: Vec<((usize, usize), usize)> = joint.into_iter().collect();
    cells.sort_unstable();
    let mi: f64 = cells
        .iter()
        .map(|&((p, t), c)| {
            let c = c as f64;
            (c / nf) * (nf * c / (a[&p] as f64 * b[&t] as f64)).ln()
        })
        .sum();
    (mi / (0.5 * (ha + hb))).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_cases() {
        // Identical up to renaming.
        assert!((nmi(&[0, 0, 1, 1, 2], &[5, 5, 3, 3, 9]) - 1.0).abs() < 1e-15);
        // Independent: each predicted cluster splits each class evenly.
        assert!(nmi(&[0, 0, 1, 1], &[0, 1, 0, 1]).abs() < 1e-15);
        // One cluster against two classes: I = 0.
        assert_eq!(nmi(&[0, 0, 0, 0], &[0, 0, 1, 1]), 0.0);
        assert_eq!(nmi(&[7, 7, 7], &[1, 1, 1]), 1.0);
        // Manning et al. (2008) Fig. 16.4 example: 17 points, 3 clusters, NMI ≈ 0.36.
        // Clusters: {x×5, o×1}, {x×1, o×4, ◇×1}, {x×2, ◇×3}; classes x=0, o=1, ◇=2.
        let pred = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2];
        let truth = [0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 2, 0, 0, 2, 2, 2];
        let v = nmi(&pred, &truth);
        assert!((v - 0.36).abs() < 0.005, "NMI {v}");
        // Explicit formula on a 2 × 2 case: counts [[2, 1], [0, 1]], N = 4.
        let (p, t) = ([0, 0, 0, 1], [0, 0, 1, 1]);
        let ln = f64::ln;
        let i =
            0.5 * ln(4.0 * 2.0 / (3.0 * 2.0)) + 0.25 * ln(4.0 / (3.0 * 2.0)) + 0.25 * ln(4.0 / 2.0);
        let ha = -(0.75 * ln(0.75) + 0.25 * ln(0.25));
        let hb = ln(2.0);
        assert!((nmi(&p, &t) - i / (0.5 * (ha + hb))).abs() < 1e-15);
        // Symmetric.
        assert_eq!(nmi(&p, &t), nmi(&t, &p));
    }
}
