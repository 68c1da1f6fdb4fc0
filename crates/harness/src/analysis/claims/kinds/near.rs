//! The `near` claim kind.

use super::super::{ClaimKind, Verdict, mean, no_check, no_quantity, verdict_of};
use crate::analysis::results::ExperimentResults;
use crate::spec::Claim;

/// `near`: our value is within `tolerance` of every matching reference number.
pub const NEAR: ClaimKind = ClaimKind {
    name: "near",
    needs: "tolerance",
    complete,
    reads: &[],
    check: no_check,
    quantity: no_quantity,
    judge: near,
};

/// What the kind needs.
fn complete(c: &Claim) -> bool {
    c.tolerance.is_some()
}

fn near(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let tol = claim.tolerance.unwrap_or(0.0);
    let refs: Vec<_> = res
        .plan
        .spec
        .spec
        .references
        .iter()
        .filter(|r| {
            datasets.contains(&r.dataset.as_str())
                && r.metric == claim.metric
                && r.set == claim.set
                && (r.solver == claim.solver)
                && (claim.k.is_none() || r.k == claim.k)
        })
        .collect();
    if refs.is_empty() {
        return Err("no reference numbers match this claim".into());
    }
    let mut ok = true;
    let mut parts = Vec::new();
    for r in refs {
        let Some(value) = r.value else { continue };
        let ours = mean(&res.select(&r.selector())?);
        let hit = (ours - value).abs() <= tol;
        ok &= hit;
        parts.push(format!(
            "{}{}: ours {ours:.3} vs paper {:.3} (|diff| {:.3} {} {tol})",
            r.dataset,
            r.k.map(|k| format!(" @{k}")).unwrap_or_default(),
            value,
            (ours - value).abs(),
            if hit { "<=" } else { ">" }
        ));
    }
    Ok((verdict_of(ok), parts.join("; ")))
}
