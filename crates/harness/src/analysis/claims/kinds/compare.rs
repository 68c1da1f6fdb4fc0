//! Comparisons of two solvers, paired by split (see [`super::super`]'s module docs):
//! `greater`, `better` and `close`.

use super::super::{ClaimKind, Verdict, ks, mean, no_check, no_quantity, num, selector};
use crate::analysis::results::ExperimentResults;
use crate::analysis::stats::{Paired, paired};
use crate::spec::Claim;

/// Which comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Greater,
    Better,
    Close,
}

/// `greater`: `solver`'s value exceeds `versus`'s (times `factor`) on every selected data set
/// (and every k when none is given); with `tolerance`, "at least as large up to that margin".
pub const GREATER: ClaimKind = ClaimKind {
    name: "greater",
    judge: greater,
    ..BETTER
};

/// `better`: like `greater`, in the metric's own direction (higher for accuracies, lower for
/// times).
pub const BETTER: ClaimKind = ClaimKind {
    name: "better",
    needs: "versus` or `versus_dataset",
    complete: versus,
    reads: &[],
    check: no_check,
    quantity: no_quantity,
    judge: better,
};

/// `close`: `solver` and `versus` are within `tolerance` of each other everywhere `greater`
/// looks.
pub const CLOSE: ClaimKind = ClaimKind {
    name: "close",
    needs: "versus` (or `versus_dataset`) and `tolerance",
    complete: versus_and_tolerance,
    judge: close,
    ..BETTER
};

/// A claim naming what it is compared with.
fn versus(c: &Claim) -> bool {
    c.versus.is_some() || c.versus_dataset.is_some()
}

fn versus_and_tolerance(c: &Claim) -> bool {
    versus(c) && c.tolerance.is_some()
}

fn greater(
    res: &ExperimentResults<'_>,
    c: &Claim,
    d: &[&str],
) -> Result<(Verdict, String), String> {
    compare(res, c, d, How::Greater)
}

fn better(res: &ExperimentResults<'_>, c: &Claim, d: &[&str]) -> Result<(Verdict, String), String> {
    compare(res, c, d, How::Better)
}

fn close(res: &ExperimentResults<'_>, c: &Claim, d: &[&str]) -> Result<(Verdict, String), String> {
    compare(res, c, d, How::Close)
}

/// `greater`: `solver`'s value exceeds `versus`'s (`l + tolerance > factor r`); `better`:
/// the same in the metric's direction (for a lower-is-better metric such as seconds, `factor
/// l < r + tolerance`: "at least `factor` times faster"); both paired by split (module docs).
/// `close`: the two means are within `tolerance`. On every data set, at every selected k.
fn compare(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
    how: How,
) -> Result<(Verdict, String), String> {
    let versus = claim.versus.as_deref().unwrap_or(&claim.solver);
    let tol = claim.tolerance.unwrap_or(0.0);
    let factor = claim.factor.unwrap_or(1.0);
    let close = how == How::Close;
    let lower_better = how == How::Better && !res.plan.metric(&claim.metric).higher_is_better;
    let mut counts = [0usize; 3]; // better, tie, worse
    let mut parts = Vec::new();
    let mut splits = usize::MAX;
    for d in datasets {
        let ks = ks(res, claim);
        let (mut c, mut first_bad) = ([0usize; 3], None);
        let (mut l_sum, mut r_sum) = (0.0, 0.0);
        for &k in &ks {
            let l = res.select_repeats(&selector(claim, d, &claim.solver, k))?;
            let vd = claim.versus_dataset.as_deref().unwrap_or(d);
            let r = res.select_repeats(&selector(claim, vd, versus, k))?;
            let outcome = if close {
                let (lm, rm) = (
                    mean(&l.values().copied().collect::<Vec<_>>()),
                    mean(&r.values().copied().collect::<Vec<_>>()),
                );
                l_sum += lm;
                r_sum += rm;
                splits = splits.min(l.len().min(r.len()));
                if (lm - rm).abs() <= tol {
                    Paired::Better
                } else {
                    Paired::Worse
                }
            } else {
                // Lower is better: `factor · l < r + tolerance`, i.e. `r − factor · l +
                // tolerance > 0`: the same test with the roles swapped.
                let (o, lm, rm, n) = if lower_better {
                    let (o, rm, lm, n) = paired(&r, &l, factor, tol);
                    (o, lm, rm, n)
                } else {
                    paired(&l, &r, factor, tol)
                };
                l_sum += lm;
                r_sum += rm;
                splits = splits.min(n);
                o
            };
            let slot = match outcome {
                Paired::Better => 0,
                Paired::Tie => 1,
                Paired::Worse => 2,
            };
            c[slot] += 1;
            if slot > 0 && first_bad.is_none() {
                first_bad = Some((k.unwrap_or(0), slot));
            }
        }
        for i in 0..3 {
            counts[i] += c[i];
        }
        let n = ks.len() as f64;
        let verb = if close {
            "within"
        } else if how == How::Better {
            "better"
        } else {
            "higher"
        };
        let d = match &claim.versus_dataset {
            Some(vd) => format!("{d} vs {vd}"),
            None => d.to_string(),
        };
        parts.push(if ks.len() == 1 {
            format!(
                "{d}: {} vs {}{}",
                num(l_sum),
                num(r_sum),
                match c {
                    [_, 1, _] => " (within the spread)",
                    [_, _, 1] if !close => " (clearly not)",
                    _ => "",
                }
            )
        } else {
            format!(
                "{d}: {verb} at {}/{} k{} (mean {} vs {}{})",
                c[0],
                ks.len(),
                if c[1] > 0 {
                    format!(", within the spread at {}", c[1])
                } else {
                    String::new()
                },
                num(l_sum / n),
                num(r_sum / n),
                first_bad
                    .map(|(k, s)| format!(
                        "; first k {}: {k}",
                        if s == 1 {
                            "within the spread"
                        } else {
                            "where not"
                        }
                    ))
                    .unwrap_or_default()
            )
        });
    }
    let verdict = if counts[2] > 0 {
        Verdict::DoesNotHold
    } else if counts[1] > 0 {
        Verdict::NotDistinguishable
    } else {
        Verdict::Holds
    };
    let mut margin = match (close, tol > 0.0) {
        (true, _) => format!(" (tolerance {tol})"),
        (false, true) => format!(" (margin {tol})"),
        (false, false) => String::new(),
    };
    if factor != 1.0 {
        margin.push_str(&format!(" (factor {factor})"));
    }
    let spread = match splits {
        1 => "; one split: no spread to judge against (5 % margin)".to_string(),
        n if n != usize::MAX && !close => format!("; paired over {n} splits, 95 %"),
        _ => String::new(),
    };
    Ok((verdict, format!("{}{margin}{spread}", parts.join("; "))))
}
