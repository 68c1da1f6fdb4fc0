//! The `correlated` claim kind.

use super::super::{ClaimKind, Verdict, dataset_index, no_check, no_quantity, one_solver};
use crate::analysis::results::ExperimentResults;
use crate::spec::Claim;

/// `correlated`: the Pearson correlation of `solver`'s and `versus`'s per-coordinate means of
/// the metric (coordinate `over`, e.g. one value per category), on every covered data set,
/// lies in `range` (e.g. per-category AUCs of two dictionary sizes, Table S1).
pub const CORRELATED: ClaimKind = ClaimKind {
    name: "correlated",
    needs: "versus`, `range` and `over",
    complete,
    reads: &[],
    check: no_check,
    quantity: no_quantity,
    judge: correlated,
};

/// What the kind needs.
fn complete(c: &Claim) -> bool {
    c.versus.is_some() && c.range.is_some() && c.over.is_some()
}

/// `correlated`: per data set, the Pearson r of `solver`'s and `versus`'s per-coordinate
/// means (coordinate `over`, paired by value, the means over repeats, as the `correlate`
/// table shows them) in `range`. It is a descriptive statistic of the means, so there is no
/// "not distinguishable": in range or not.
fn correlated(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let [lo, hi] = claim.range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
    let over = claim
        .over
        .as_deref()
        .ok_or("`correlated` needs `over`, the coordinate that pairs the values")?;
    let versus = claim.versus.as_deref().unwrap_or(&claim.solver);
    let (a, b) = (one_solver(res, &claim.solver)?, one_solver(res, versus)?);
    let x = crate::spec::XAxis::Named(over.to_string());
    let mut verdict = Verdict::Holds;
    let mut parts = Vec::new();
    for d in datasets {
        let di = dataset_index(res, d)?;
        let means = |si| res.coordinate_means(di, si, &claim.set, &claim.metric, &x, claim.k);
        let (u, v) = crate::analysis::results::paired(&means(a), &means(b));
        let c = dyad_core::auc::pearson(&u, &v).ok_or(format!(
            "fewer than three `{over}` values of `{}` on `{d}` that both solvers have",
            claim.metric
        ))?;
        if !(lo..=hi).contains(&c.r) {
            verdict = Verdict::DoesNotHold;
        }
        parts.push(format!(
            "{d}: r = {:.3} over {} {over} values (range {} .. {})",
            c.r, c.n, lo, hi
        ));
    }
    Ok((verdict, parts.join("; ")))
}
