//! Verdicts on the papers' claims, computed from our results: holds, does not hold, or not
//! comparable (with the reason).

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
        ClaimKind::Greater => greater(res, claim, &datasets),
        ClaimKind::Near => near(res, claim, &datasets),
        ClaimKind::PeakWithin => peak_within(res, claim, &datasets),
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
        at: claim.at,
    }
}

fn ks(res: &ExperimentResults<'_>, claim: &Claim) -> Vec<Option<u32>> {
    match (claim.k, claim.metric.as_str()) {
        (Some(k), _) => vec![Some(k)],
        (None, "precision") => (1..=res.plan.ranking.k_max as u32).map(Some).collect(),
        (None, _) => vec![None],
    }
}

fn greater(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(bool, String), String> {
    let versus = claim.versus.as_deref().unwrap_or_default();
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
            if l > r {
                wins += 1;
            } else if first_loss.is_none() {
                first_loss = k.or(Some(0));
            }
        }
        all &= wins == ks.len();
        let n = ks.len() as f64;
        parts.push(if ks.len() == 1 {
            format!("{d}: {:.3} vs {:.3}", l_sum, r_sum)
        } else {
            format!(
                "{d}: higher at {wins}/{} k (mean {:.3} vs {:.3}{})",
                ks.len(),
                l_sum / n,
                r_sum / n,
                first_loss
                    .map(|k| format!("; first k where not: {k}"))
                    .unwrap_or_default()
            )
        });
    }
    Ok((all, parts.join("; ")))
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

fn peak_within(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(bool, String), String> {
    let [lo, hi] = claim.range.unwrap_or([0.0, f64::INFINITY]);
    let solvers = res.solvers_named(&claim.solver);
    let &[si] = solvers.as_slice() else {
        return Err(format!(
            "`{}` does not name exactly one solver",
            claim.solver
        ));
    };
    let mut ok = true;
    let mut parts = Vec::new();
    for d in datasets {
        let di = res
            .plan
            .datasets
            .iter()
            .position(|x| x.id == *d)
            .ok_or(format!("no data set `{d}`"))?;
        let curve = res.curve(di, si, &claim.set, &claim.metric, XAxis::Step);
        let peak = curve
            .iter()
            .fold(None::<&crate::results::CurvePoint>, |b, p| match b {
                Some(b) if b.y.mean >= p.y.mean => Some(b),
                _ => Some(p),
            })
            .ok_or(format!("no `{}` curve on `{d}`", claim.metric))?;
        let hit = (lo..=hi).contains(&peak.x);
        ok &= hit;
        parts.push(format!("{d}: peak {:.3} at step {}", peak.y.mean, peak.x));
    }
    Ok((ok, format!("{} (range {lo}..{hi})", parts.join("; "))))
}
