//! Verdicts on the papers' claims, computed from our results: holds, does not hold, or not
//! comparable (with the reason).

use crate::plots::SlopeBound;
use crate::results::ExperimentResults;
use crate::spec::{Claim, ClaimKind, Selector, XAxis};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    DoesNotHold,
    NotComparable,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotComparable => "not comparable",
        })
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub id: String,
    pub text: String,
    pub verdict: Verdict,
    /// The numbers behind the verdict, or why there is none.
    pub detail: String,
}

fn covered<'a>(res: &'a ExperimentResults<'_>, claim: &'a Claim) -> Vec<&'a str> {
    if claim.datasets.is_empty() {
        res.plan.datasets.iter().map(|d| d.id.as_str()).collect()
    } else {
        claim.datasets.iter().map(String::as_str).collect()
    }
}

/// A number for a verdict's detail: three decimals, or three significant digits for small
/// values (per-step seconds).
fn num(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.3e}")
    } else {
        format!("{x:.3}")
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Judge one claim.
pub fn judge(res: &ExperimentResults<'_>, claim: &Claim) -> Outcome {
    let outcome = |verdict, detail: String| Outcome {
        id: claim.id.clone(),
        text: claim.text.clone(),
        verdict,
        detail,
    };
    if !res.complete() {
        return outcome(
            Verdict::NotComparable,
            format!(
                "not run: {} of {} cells missing",
                res.missing(),
                res.cells.len()
            ),
        );
    }
    let datasets = covered(res, claim);
    let synthetic: Vec<&str> = datasets
        .iter()
        .copied()
        .filter(|id| {
            res.plan
                .datasets
                .iter()
                .any(|d| d.id == *id && d.resolved.synthetic)
        })
        .collect();
    let computed = match claim.kind {
        ClaimKind::Greater | ClaimKind::Better | ClaimKind::Close => compare(res, claim, &datasets),
        ClaimKind::Near => near(res, claim, &datasets),
        ClaimKind::PeakWithin => peak_within(res, claim, &datasets),
        ClaimKind::SlopeWithin => slope_within(res, claim, &datasets),
    };
    match computed {
        Err(e) => outcome(Verdict::NotComparable, e),
        Ok((ok, detail)) if claim.needs_real_data && !synthetic.is_empty() => outcome(
            Verdict::NotComparable,
            format!(
                "SYNTHETIC stand-in data ({}): the claim is about the paper's data (ours would {}: {detail})",
                synthetic.join(", "),
                if ok { "hold" } else { "not hold" }
            ),
        ),
        Ok((true, detail)) => outcome(Verdict::Holds, detail),
        Ok((false, detail)) => outcome(Verdict::DoesNotHold, detail),
    }
}

fn selector(claim: &Claim, dataset: &str, solver: &str, k: Option<u32>) -> Selector {
    Selector {
        dataset: Some(dataset.to_string()),
        solver: Some(solver.to_string()),
        metric: claim.metric.clone(),
        set: claim.set.clone(),
        k,
        coord: claim.coord,
        at: claim.at,
    }
}

/// The ks a claim covers: its own, or every k the claim's set and metric are recorded at
/// (e.g. 1..=50 for precision on the test set, 1..=10 for the simulated raters' set), or
/// none for a metric without k.
fn ks(res: &ExperimentResults<'_>, claim: &Claim) -> Vec<Option<u32>> {
    if let Some(k) = claim.k {
        return vec![Some(k)];
    }
    let recorded: std::collections::BTreeSet<u32> = res
        .cells
        .iter()
        .flatten()
        .flat_map(|c| &c.records)
        .filter(|r| r.set == claim.set && r.metric == claim.metric)
        .filter_map(|r| r.k)
        .collect();
    if recorded.is_empty() {
        vec![None]
    } else {
        recorded.into_iter().map(Some).collect()
    }
}

/// `greater`: `solver`'s value exceeds `versus`'s (`l + tolerance > factor r`, strictly when
/// no tolerance is given); `better`: the same in the metric's direction (for a
/// lower-is-better metric, `l - tolerance < r / factor`); `close`: the two are within
/// `tolerance` (`|l - r| <= tolerance`). On every data set, at every selected k.
fn compare(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(bool, String), String> {
    let versus = claim.versus.as_deref().unwrap_or_default();
    let tol = claim.tolerance.unwrap_or(0.0);
    let factor = claim.factor.unwrap_or(1.0);
    let close = claim.kind == ClaimKind::Close;
    let lower_better =
        claim.kind == ClaimKind::Better && !res.plan.metric(&claim.metric).higher_is_better;
    let verb = match (close, claim.kind == ClaimKind::Better) {
        (true, _) => "within",
        (false, true) => "better at",
        (false, false) => "higher at",
    };
    let mut all = true;
    let mut parts = Vec::new();
    for d in datasets {
        let ks = ks(res, claim);
        let (mut wins, mut first_loss) = (0, None);
        let (mut l_sum, mut r_sum) = (0.0, 0.0);
        for &k in &ks {
            let l = mean(&res.select(&selector(claim, d, &claim.solver, k))?);
            let r = mean(&res.select(&selector(claim, d, versus, k))?);
            l_sum += l;
            r_sum += r;
            let hit = if close {
                (l - r).abs() <= tol
            } else if lower_better {
                factor * (l - tol) < r
            } else {
                l + tol > factor * r
            };
            if hit {
                wins += 1;
            } else if first_loss.is_none() {
                first_loss = k.or(Some(0));
            }
        }
        all &= wins == ks.len();
        let n = ks.len() as f64;
        parts.push(if ks.len() == 1 {
            format!("{d}: {} vs {}", num(l_sum), num(r_sum))
        } else {
            format!(
                "{d}: {verb} {wins}/{} k (mean {} vs {}{})",
                ks.len(),
                num(l_sum / n),
                num(r_sum / n),
                first_loss
                    .map(|k| format!("; first k where not: {k}"))
                    .unwrap_or_default()
            )
        });
    }
    let mut margin = match (close, tol > 0.0) {
        (true, _) => format!(" (tolerance {tol})"),
        (false, true) => format!(" (margin {tol})"),
        (false, false) => String::new(),
    };
    if factor != 1.0 {
        margin.push_str(&format!(" (factor {factor})"));
    }
    Ok((all, format!("{}{margin}", parts.join("; "))))
}

fn near(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(bool, String), String> {
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
    Ok((ok, parts.join("; ")))
}

/// The index of the one solver a claim names (by label, else registry name).
fn one_solver(res: &ExperimentResults<'_>, name: &str) -> Result<usize, String> {
    match res.solvers_named(name).as_slice() {
        &[si] => Ok(si),
        _ => Err(format!("`{name}` does not name exactly one solver")),
    }
}

fn peak_within(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(bool, String), String> {
    let [lo, hi] = claim.range.unwrap_or([0.0, f64::INFINITY]);
    let si = one_solver(res, &claim.solver)?;
    let mut ok = true;
    let mut parts = Vec::new();
    for d in datasets {
        let di = res
            .plan
            .datasets
            .iter()
            .position(|x| x.id == *d)
            .ok_or(format!("no data set `{d}`"))?;
        let curve = res.curve(di, si, &claim.set, &claim.metric, &XAxis::Step);
        let metric = res.plan.metric(&claim.metric);
        let peak = curve
            .iter()
            .fold(None::<&crate::results::CurvePoint>, |b, p| match b {
                Some(b) if !metric.better(p.y.mean, b.y.mean) => Some(b),
                _ => Some(p),
            })
            .ok_or(format!("no `{}` curve on `{d}`", claim.metric))?;
        let hit = (lo..=hi).contains(&peak.x);
        ok &= hit;
        parts.push(format!("{d}: peak {:.3} at step {}", peak.y.mean, peak.x));
    }
    Ok((ok, format!("{} (range {lo}..{hi})", parts.join("; "))))
}

fn slope_within(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(bool, String), String> {
    let [lo, hi] = claim.range.unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
    let si = one_solver(res, &claim.solver)?;
    let x_param = claim.x_param.clone().unwrap_or_default();
    let mut points: Vec<(f64, f64)> = datasets
        .iter()
        .filter_map(|d| {
            let di = res.plan.datasets.iter().position(|x| x.id == *d)?;
            let p = res.param_point(di, si, &claim.set, &claim.metric, &x_param)?;
            Some((p.x, p.y.mean))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (_, b) = crate::plots::power_fit(&points).ok_or(format!(
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
    match crate::plots::slope_bound(&points, &lower) {
        SlopeBound::Exact => Ok((
            (lo..=hi).contains(&b),
            format!("fitted exponent {b:.2} {over}"),
        )),
        // A lower bound above the range decides; anything else does not.
        SlopeBound::AtLeast if b > hi => Ok((false, format!("fitted exponent >= {b:.2} {over}"))),
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
