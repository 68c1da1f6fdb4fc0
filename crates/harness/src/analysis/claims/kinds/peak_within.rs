//! The `peak-within` claim kind.

use super::super::{
    ClaimKind, Verdict, dataset_index, no_check, no_quantity, one_solver, verdict_of,
};
use crate::analysis::results::ExperimentResults;
use crate::spec::{Claim, XAxis};

/// `peak-within`: the step where the mean metric peaks lies in `range`.
pub const PEAK_WITHIN: ClaimKind = ClaimKind {
    name: "peak-within",
    needs: "range",
    complete,
    reads: &[],
    check: no_check,
    quantity: no_quantity,
    judge: peak_within,
};

/// What the kind needs.
fn complete(c: &Claim) -> bool {
    c.range.is_some()
}

fn peak_within(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let [lo, hi] = claim.range.unwrap_or([0.0, f64::INFINITY]);
    let si = one_solver(res, &claim.solver)?;
    let mut ok = true;
    let mut parts = Vec::new();
    for d in datasets {
        let di = dataset_index(res, d)?;
        let curve = res.curve(di, si, &claim.set, &claim.metric, &XAxis::Step, claim.k);
        let metric = res.plan.metric(&claim.metric);
        let peak = curve
            .iter()
            .fold(
                None::<&crate::analysis::results::CurvePoint>,
                |b, p| match b {
                    Some(b) if !metric.better(p.y.mean, b.y.mean) => Some(b),
                    _ => Some(p),
                },
            )
            .ok_or(format!("no `{}` curve on `{d}`", claim.metric))?;
        let hit = (lo..=hi).contains(&peak.x);
        ok &= hit;
        parts.push(format!("{d}: peak {:.3} at step {}", peak.y.mean, peak.x));
    }
    Ok((
        verdict_of(ok),
        format!("{} (range {lo}..{hi})", parts.join("; ")),
    ))
}
