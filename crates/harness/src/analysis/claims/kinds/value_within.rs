//! The `value-within` claim kind.

use super::super::{
    ClaimKind, Verdict, interval_verdict, no_check, no_quantity, num, selector, worst,
};
use crate::analysis::results::ExperimentResults;
use crate::spec::Claim;

/// `value-within`: the metric's value itself lies in `range` on every covered data set (e.g.
/// a log10 p below −3, a fraction above chance): holds when the 95 % interval of the mean
/// over splits lies inside, does not hold when it lies outside, otherwise not
/// distinguishable.
pub const VALUE_WITHIN: ClaimKind = ClaimKind {
    name: "value-within",
    needs: "range",
    complete,
    reads: &[],
    check: no_check,
    quantity: no_quantity,
    judge: value_within,
};

/// What the kind needs.
fn complete(c: &Claim) -> bool {
    c.range.is_some()
}

/// `value-within`: the mean over splits, with its 95 % t interval, against `range`.
fn value_within(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let [lo, hi] = claim.range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
    let mut verdict = Verdict::Holds;
    let mut parts = Vec::new();
    for d in datasets {
        let values = res.select(&selector(claim, d, &claim.solver, claim.k))?;
        let (v, st, a, b) = interval_verdict(&values, lo, hi)
            .ok_or(format!("no `{}` values on `{d}`", claim.metric))?;
        verdict = worst(verdict, v);
        let bound = |x: f64| match x {
            x if x <= -1e300 => "−∞".to_string(),
            x if x >= 1e300 => "∞".to_string(),
            x => format!("{x}"),
        };
        parts.push(format!(
            "{d}: {} (95 % interval {} .. {}, n = {}; range {} .. {})",
            num(st.mean),
            num(a),
            num(b),
            st.n,
            bound(lo),
            bound(hi)
        ));
    }
    Ok((verdict, parts.join("; ")))
}
