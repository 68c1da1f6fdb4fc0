//! Statistics that figures and verdicts share: the envelope of a solver grid's curves, power
//! fits of runtime scaling and how lower-bounded points bound their exponent, and the paired
//! t-test of comparisons over splits.

use crate::analysis::results::CurvePoint;

/// The best of several curves at every x of any of them: each curve's value at its last point
/// at or before x (curves with no point yet are left out), the best mean chosen with its
/// spread. `higher` says which way is better.
pub fn envelope(curves: &[Vec<CurvePoint>], higher: bool) -> Vec<CurvePoint> {
    let mut xs: Vec<f64> = curves.iter().flatten().map(|p| p.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .filter_map(|x| {
            curves
                .iter()
                .filter_map(|c| c.iter().take_while(|p| p.x <= x).last())
                .map(|p| p.y)
                .reduce(|a, b| {
                    let b_better = if higher {
                        b.mean > a.mean
                    } else {
                        b.mean < a.mean
                    };
                    if b_better { b } else { a }
                })
                .map(|y| CurvePoint { x, y })
        })
        .collect()
}

/// Least-squares fit of `log y = log a + b log x`; `None` with fewer than two usable points.
pub fn power_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = logs.len() as f64;
    if logs.len() < 2 {
        return None;
    }
    let (mx, my) = (
        logs.iter().map(|p| p.0).sum::<f64>() / n,
        logs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let b = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    Some(((my - b * mx).exp(), b))
}

/// What a fitted exponent says when some of the y values are only lower bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlopeBound {
    /// Every y is exact.
    Exact,
    /// The true exponent is at least the fitted one: no lower-bounded point lies left of the
    /// mean of log x, so raising its y cannot lower the least-squares slope (the slope's
    /// derivative in log y_i is (log x_i - mean log x) / Sxx).
    AtLeast,
    /// Some lower-bounded point lies left of the mean: the slope is not bounded.
    Unknown,
}

/// How the exponent of [`power_fit`] over `points` is bounded when the points at
/// `lower_xs` are lower bounds.
pub fn slope_bound(points: &[(f64, f64)], lower_xs: &[f64]) -> SlopeBound {
    let logs: Vec<f64> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, _)| x.ln())
        .collect();
    let lower: Vec<f64> = lower_xs
        .iter()
        .filter(|x| points.iter().any(|(px, _)| px == *x))
        .map(|x| x.ln())
        .collect();
    if lower.is_empty() || logs.is_empty() {
        return SlopeBound::Exact;
    }
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    // A point on the mean (to rounding) does not move the slope.
    let tol = 1e-9 * mean.abs().max(1.0);
    if lower.iter().all(|&l| l >= mean - tol) {
        SlopeBound::AtLeast
    } else {
        SlopeBound::Unknown
    }
}

/// Two-sided 95 % critical value of Student's t with `df` degrees of freedom.
pub fn t_critical(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        d if d <= 30 => T[d - 1],
        _ => 1.96,
    }
}

/// The outcome of one paired comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paired {
    Better,
    Worse,
    Tie,
}

/// Judge `l_r − factor · r_r + margin > 0` over the splits both have (see the module docs).
/// Returns the outcome, the two means and the pair count.
pub fn paired(
    l: &std::collections::BTreeMap<u32, f64>,
    r: &std::collections::BTreeMap<u32, f64>,
    factor: f64,
    margin: f64,
) -> (Paired, f64, f64, usize) {
    let pairs: Vec<(f64, f64)> = l
        .iter()
        .filter_map(|(k, a)| r.get(k).map(|b| (*a, *b)))
        .collect();
    let n = pairs.len();
    let lm = pairs.iter().map(|p| p.0).sum::<f64>() / n.max(1) as f64;
    let rm = pairs.iter().map(|p| p.1).sum::<f64>() / n.max(1) as f64;
    if n == 0 {
        return (Paired::Tie, lm, rm, 0);
    }
    let d: Vec<f64> = pairs.iter().map(|(a, b)| a - factor * b + margin).collect();
    let mean = d.iter().sum::<f64>() / n as f64;
    let outcome = if n == 1 {
        // One split: a 5 % relative margin stands in for the unknown spread.
        let scale = pairs[0].0.abs().max((factor * pairs[0].1).abs());
        if mean.abs() <= 0.05 * scale {
            Paired::Tie
        } else if mean > 0.0 {
            Paired::Better
        } else {
            Paired::Worse
        }
    } else {
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let half = t_critical(n - 1) * sd / (n as f64).sqrt();
        if mean > half {
            Paired::Better
        } else if mean < -half {
            Paired::Worse
        } else {
            Paired::Tie
        }
    };
    (outcome, lm, rm, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::results::Stat;

    fn pts(xy: &[(f64, f64)]) -> Vec<CurvePoint> {
        xy.iter()
            .map(|&(x, mean)| CurvePoint {
                x,
                y: Stat {
                    mean,
                    sd: x,
                    sem: 0.0,
                    n: 3,
                },
            })
            .collect()
    }

    #[test]
    fn the_envelope_takes_each_curves_last_point_and_the_best_mean() {
        // A fast low-rank model early, a slow high-rank one that overtakes it.
        let fast = pts(&[(1.0, 0.2), (2.0, 0.3), (4.0, 0.35)]);
        let slow = pts(&[(3.0, 0.1), (5.0, 0.5)]);
        let e = envelope(&[fast.clone(), slow.clone()], true);
        let got: Vec<(f64, f64, f64)> = e.iter().map(|p| (p.x, p.y.mean, p.y.sd)).collect();
        // At x = 3 the slow model (0.1) has started but the fast one's 0.3 (from x = 2) wins;
        // at x = 5 the slow one's 0.5 beats the fast one's last value 0.35, with its own SD.
        assert_eq!(
            got,
            vec![
                (1.0, 0.2, 1.0),
                (2.0, 0.3, 2.0),
                (3.0, 0.3, 2.0),
                (4.0, 0.35, 4.0),
                (5.0, 0.5, 5.0)
            ]
        );
        // Lower is better: the smallest mean at each x.
        let low: Vec<f64> = envelope(&[fast, slow], false)
            .iter()
            .map(|p| p.y.mean)
            .collect();
        assert_eq!(low, vec![0.2, 0.3, 0.1, 0.1, 0.35]);
    }

    #[test]
    fn a_lower_bound_right_of_the_mean_bounds_the_slope_from_below() {
        // y = 2 x exactly: slope 1.
        let pts = [(10.0, 20.0), (100.0, 200.0), (1000.0, 2000.0)];
        let (a, b) = power_fit(&pts).unwrap();
        assert!((b - 1.0).abs() < 1e-12 && (a - 2.0).abs() < 1e-9);
        assert_eq!(slope_bound(&pts, &[]), SlopeBound::Exact);
        assert_eq!(slope_bound(&pts, &[1000.0]), SlopeBound::AtLeast);
        // The middle point sits on the mean of log x (it does not move the slope); the first
        // lies left of it.
        assert_eq!(slope_bound(&pts, &[100.0]), SlopeBound::AtLeast);
        assert_eq!(slope_bound(&pts, &[10.0]), SlopeBound::Unknown);
        assert_eq!(slope_bound(&pts, &[10.0, 1000.0]), SlopeBound::Unknown);
        // x values that are not points of the series are ignored.
        assert_eq!(slope_bound(&pts, &[5.0]), SlopeBound::Exact);
        // The bound is real: raising the last y raises the fitted slope.
        let raised = [(10.0, 20.0), (100.0, 200.0), (1000.0, 5000.0)];
        assert!(power_fit(&raised).unwrap().1 > b);
    }
}
