//! Numbers the paper states (`factor`, `difference`), judged by how close the measurement
//! is to them (see [`super::super`]'s module docs).

use super::super::{
    ClaimKind, Quantity, Verdict, ks, mean, no_check, num, quantity_verdict, selector, worst,
};
use crate::analysis::results::ExperimentResults;
use crate::spec::Claim;

/// `factor`: a number the paper states as a ratio ("improves by 33 %", "two orders of
/// magnitude faster"): the measured factor `solver / versus`, paired by split, with its 95 %
/// interval, against `paper_value` ± `tolerance` (in decades with `log = true`).
pub const FACTOR: ClaimKind = ClaimKind {
    name: "factor",
    needs: "versus` (or `versus_dataset`), `paper_value` and `tolerance`, and no `factor",
    complete,
    reads: &["log", "paper_value"],
    check: positive,
    quantity: ratio,
    judge: factor,
};

/// `difference`: the same for a stated difference `solver − versus` (e.g. "0.6231 vs
/// 0.6322").
pub const DIFFERENCE: ClaimKind = ClaimKind {
    name: "difference",
    reads: &["paper_value"],
    check: no_check,
    quantity: difference_quantity,
    judge: difference,
    ..FACTOR
};

/// A factor's paper value is positive and its tolerance at least 0.
fn positive(c: &Claim) -> Result<(), (&'static str, String)> {
    if c.paper_value.is_some_and(|v| v <= 0.0) || c.tolerance.is_some_and(|t| t < 0.0) {
        return Err((
            "paper_value",
            "a `factor` claim needs a positive `paper_value` and a tolerance >= 0".into(),
        ));
    }
    Ok(())
}

/// A factor is judged as a ratio, on a log scale with `log = true`.
fn ratio(c: &Claim) -> Option<Quantity> {
    Some(if c.log {
        Quantity::LogRatio
    } else {
        Quantity::Ratio
    })
}

fn difference_quantity(_: &Claim) -> Option<Quantity> {
    Some(Quantity::Difference)
}

fn factor(res: &ExperimentResults<'_>, c: &Claim, d: &[&str]) -> Result<(Verdict, String), String> {
    quantity(res, c, d, ratio(c).unwrap_or(Quantity::Ratio))
}

fn difference(
    res: &ExperimentResults<'_>,
    c: &Claim,
    d: &[&str],
) -> Result<(Verdict, String), String> {
    quantity(res, c, d, Quantity::Difference)
}

/// What a stated number needs: what it is compared with, the paper's value and the band.
fn complete(c: &Claim) -> bool {
    (c.versus.is_some() || c.versus_dataset.is_some())
        && c.paper_value.is_some()
        && c.tolerance.is_some()
        && c.factor.is_none()
}

/// `factor` / `difference`: per covered data set (and selected k), the per-split quantity
/// `solver` against `versus` (on `versus_dataset` when given), judged by [`quantity_verdict`];
/// the worst verdict over data sets and k counts.
fn quantity(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
    q: Quantity,
) -> Result<(Verdict, String), String> {
    let versus = claim.versus.as_deref().unwrap_or(&claim.solver);
    let paper = claim.paper_value.ok_or("no `paper_value`")?;
    let tol = claim.tolerance.unwrap_or(0.0);
    let mut verdict = Verdict::Holds;
    let mut parts = Vec::new();
    let mut splits = usize::MAX;
    for d in datasets {
        let vd = claim.versus_dataset.as_deref().unwrap_or(d);
        for k in ks(res, claim) {
            let l = res.select_repeats(&selector(claim, d, &claim.solver, k))?;
            let r = res.select_repeats(&selector(claim, vd, versus, k))?;
            let mut values = Vec::new();
            for (rep, a) in &l {
                let Some(b) = r.get(rep) else { continue };
                values.push(match q {
                    Quantity::Difference => a - b,
                    _ if *b <= 0.0 || (q == Quantity::LogRatio && *a <= 0.0) => {
                        return Err(format!(
                            "{d}: a ratio of {} to {} is undefined at split {rep}",
                            num(*a),
                            num(*b)
                        ));
                    }
                    Quantity::Ratio => a / b,
                    Quantity::LogRatio => (a / b).log10(),
                });
            }
            splits = splits.min(values.len());
            let (v, detail) = quantity_verdict(&values, paper, tol, q)
                .ok_or(format!("{d}: no split that both solvers have"))?;
            verdict = worst(verdict, v);
            let (lm, rm) = (
                mean(&l.values().copied().collect::<Vec<_>>()),
                mean(&r.values().copied().collect::<Vec<_>>()),
            );
            parts.push(format!(
                "{d}{}{}: {detail} (means {} vs {})",
                match &claim.versus_dataset {
                    Some(vd) => format!(" vs {vd}"),
                    None => String::new(),
                },
                k.filter(|_| claim.k.is_none())
                    .map(|k| format!(" @{k}"))
                    .unwrap_or_default(),
                num(lm),
                num(rm)
            ));
        }
    }
    let spread = match splits {
        n if n > 1 && n != usize::MAX => format!("; paired over {n} splits, 95 % interval"),
        _ => String::new(),
    };
    Ok((verdict, format!("{}{spread}", parts.join("; "))))
}
