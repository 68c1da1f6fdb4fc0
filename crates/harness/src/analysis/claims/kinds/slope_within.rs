//! The `slope-within` claim kind.

use super::super::{
    ClaimKind, Verdict, grid_instances, no_check, no_quantity, num, one_solver, verdict_of,
};
use crate::analysis::results::ExperimentResults;
use crate::analysis::stats::{SlopeBound, power_fit, slope_bound};
use crate::spec::Claim;

/// `slope-within`: the exponent `b` of a least-squares fit `metric = a x^b` over the data
/// sets, with x the data-set parameter `x_param` (or over a solver grid's instances, x their
/// grid value), lies in `range` (e.g. linear runtime scaling).
pub const SLOPE_WITHIN: ClaimKind = ClaimKind {
    name: "slope-within",
    needs: "range` and `x_param",
    complete,
    reads: &[],
    check: no_check,
    quantity: no_quantity,
    judge: slope_within,
};

/// What the kind needs.
fn complete(c: &Claim) -> bool {
    c.range.is_some() && c.x_param.is_some()
}

fn slope_within(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let [lo, hi] = claim.range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
    let x_param = claim.x_param.clone().unwrap_or_default();
    if let Some(grid) = grid_instances(res, &claim.solver, &x_param) {
        return grid_slope(res, claim, datasets, &grid, [lo, hi], &x_param);
    }
    let si = one_solver(res, &claim.solver)?;
    let mut points: Vec<(f64, f64)> = datasets
        .iter()
        .filter_map(|d| {
            let di = res.plan.datasets.iter().position(|x| x.id == *d)?;
            let p = res.param_point(di, si, &claim.set, &claim.metric, claim.k, &x_param)?;
            Some((p.x, p.y.mean))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (_, b) = power_fit(&points).ok_or(format!(
        "fewer than two positive points of `{}` against {}",
        claim.metric,
        x_param.join("/")
    ))?;
    let lower = res.lower_bound_xs(si, &claim.metric, &x_param);
    let listed: Vec<String> = points
        .iter()
        .map(|(x, y)| {
            let at_least = if lower.contains(x) { ">= " } else { "" };
            format!("{x} -> {at_least}{}", num(*y))
        })
        .collect();
    let over = format!("over {} (range {lo}..{hi})", listed.join(", "));
    match slope_bound(&points, &lower) {
        SlopeBound::Exact => Ok((
            verdict_of((lo..=hi).contains(&b)),
            format!("fitted exponent {b:.2} {over}"),
        )),
        // A lower bound above the range decides; anything else does not.
        SlopeBound::AtLeast if b > hi => Ok((
            Verdict::DoesNotHold,
            format!("fitted exponent >= {b:.2} {over}"),
        )),
        SlopeBound::AtLeast => Err(format!(
            "fitted exponent >= {b:.2} {over}: the largest subsets had not saturated by the \
             grid's last checkpoint ('>='), so the exponent is only a lower bound"
        )),
        SlopeBound::Unknown => Err(format!(
            "fitted exponent {b:.2} {over}: points marked '>=' had not saturated by the grid's \
             last checkpoint, and not only at the largest x, so the exponent is not bounded"
        )),
    }
}

/// `slope-within` over a solver grid: on each data set, fit `metric = a x^b` through the
/// grid's points (x = the instance's grid value, y = its final mean); every exponent must
/// lie in the range.
fn grid_slope(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
    grid: &[(usize, f64)],
    [lo, hi]: [f64; 2],
    x_param: &[String],
) -> Result<(Verdict, String), String> {
    let mut ok = true;
    let mut parts = Vec::new();
    for d in datasets {
        let Some(di) = res.plan.datasets.iter().position(|x| x.id == *d) else {
            continue;
        };
        let mut points: Vec<(f64, f64)> = grid
            .iter()
            .filter_map(|&(si, x)| {
                res.point_at(di, si, &claim.set, &claim.metric, claim.k, x)
                    .map(|p| (p.x, p.y.mean))
            })
            .collect();
        if points.is_empty() {
            // The grid does not run on this data set (`datasets = [...]`).
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (_, b) = power_fit(&points).ok_or(format!(
            "{d}: fewer than two positive points of `{}` against {}",
            claim.metric,
            x_param.join("/")
        ))?;
        ok &= (lo..=hi).contains(&b);
        let listed: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x} -> {}", num(*y)))
            .collect();
        parts.push(format!(
            "{d}: fitted exponent {b:.2} over {}",
            listed.join(", ")
        ));
    }
    if parts.is_empty() {
        return Err("no data set holds the grid's cells".into());
    }
    Ok((
        verdict_of(ok),
        format!("{} (range {lo}..{hi})", parts.join("; ")),
    ))
}
