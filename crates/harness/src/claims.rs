//! Verdicts on the papers' claims, computed from our results: holds, does not hold, not
//! distinguishable (the difference lies within the spread over splits), or not comparable
//! (with the reason). Every claim is either the paper's, carrying the paper's words (`quote`,
//! `section`), or ours (`origin = "ours"`: a diagnostic or sanity check of the reproduction),
//! and the report counts the two apart.
//!
//! **Real or synthetic.** A verdict is labelled by the data the claim reads: its `datasets`
//! when it lists them, else the data sets on which its solver has cells, plus its
//! `versus_dataset`. When any of these is a SYNTHETIC stand-in (or simulated), the verdict is a
//! **shape check** of the pipeline, never a confirmation of the paper: [`Outcome::synthetic`]
//! says so and the report labels it. A data set the claim does not read (another solver's,
//! say) does not make its verdict synthetic.
//!
//! **Comparisons** (`greater`, `better`) are paired by split: with `n >= 2` repeats the
//! differences `d_r = l_r − f·r_r` (`f` the claim's factor) are judged by a two-sided paired
//! t-test at 95 %: a claim holds only when `mean(d) + margin > t · se(d)`, does not hold when
//! `mean(d) + margin < −t · se(d)`, and is not distinguishable otherwise. With one repeat
//! there is no spread to judge against: a difference smaller than 5 % of the larger value is
//! not distinguishable, and the detail says "one split". Over several k, one clearly worse k
//! makes the claim fail, and any k within the spread makes it not distinguishable. These are
//! for claims that state a direction ("better than", "at least 10 times faster").
//!
//! **Quantities** (`factor`, `difference`) are for claims that state a number: "improves
//! retrieval precision by 33 %" is the factor 1.33, "two orders of magnitude faster" the
//! factor 100. The measured quantity is computed per split, paired (`q_r = l_r / r_r`, or
//! `l_r − r_r`; with `log = true`, `log10(l_r / r_r)`), and its mean over splits with the 95 %
//! t interval `[a, b]` is set beside the paper's number `P` and the band `P ± tolerance`
//! (`P · 10^±tolerance` on the log scale):
//!
//! - **holds** ("agrees"): the whole interval lies inside the band: the measurement is
//!   compatible with the paper's number within the stated tolerance;
//! - **not distinguishable**: the interval straddles an edge of the band;
//! - **does not hold**: the interval lies outside the band; the detail says **close** when it
//!   still meets the band widened to twice the tolerance, **far** otherwise.
//!
//! So a factor of 1.30 measured [1.28, 1.32] against the paper's 1.33 with tolerance 0.1
//! holds ("agrees") instead of failing a hard threshold "at least 1.33". With one split the
//! interval is the value itself and the detail says "one split". Over several data sets or
//! k the worst verdict counts.

use crate::plots::SlopeBound;
use crate::results::ExperimentResults;
use crate::spec::{Claim, ClaimKind, Origin, Selector, XAxis};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    DoesNotHold,
    /// The difference lies within the spread over splits.
    NotDistinguishable,
    NotComparable,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotDistinguishable => "not distinguishable",
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
    /// The claim read a SYNTHETIC stand-in (or simulated) data set: a shape check.
    pub synthetic: bool,
    /// The paper's claim, or our diagnostic.
    pub origin: Origin,
    /// The paper's words and where they are (claims of the paper).
    pub quote: Option<String>,
    pub section: Option<String>,
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

/// Whether every cell a claim reads is cached: those of the data sets it covers (and of
/// `versus_dataset`). A partly computed spec judges the claims about its complete data sets.
pub fn ready(res: &ExperimentResults<'_>, claim: &Claim) -> bool {
    missing_for(res, claim) == 0
}

/// Per data set of the plan (by index): whether `claim` reads it.
fn reads(res: &ExperimentResults<'_>, claim: &Claim) -> Vec<bool> {
    let read = read_datasets(res, claim);
    res.plan
        .datasets
        .iter()
        .map(|d| read.contains(&d.id.as_str()))
        .collect()
}

/// The data sets `claim` reads: those it covers and its `versus_dataset`.
pub fn read_datasets<'a>(res: &'a ExperimentResults<'_>, claim: &'a Claim) -> Vec<&'a str> {
    let mut read = covered(res, claim);
    if let Some(vd) = claim.versus_dataset.as_deref()
        && !read.contains(&vd)
    {
        read.push(vd);
    }
    read
}

fn missing_for(res: &ExperimentResults<'_>, claim: &Claim) -> usize {
    let read = reads(res, claim);
    res.missing_by_dataset()
        .iter()
        .zip(&read)
        .filter(|&(_, &r)| r)
        .map(|(m, _)| m)
        .sum()
}

fn cells_for(res: &ExperimentResults<'_>, claim: &Claim) -> usize {
    let read = reads(res, claim);
    res.plan.cells.iter().filter(|c| read[c.dataset]).count()
}

/// The data sets a claim covers: its `datasets`, else those where the solver it names has
/// cells (a solver restricted to some data sets of its spec reads only those), else all.
fn covered<'a>(res: &'a ExperimentResults<'_>, claim: &'a Claim) -> Vec<&'a str> {
    if !claim.datasets.is_empty() {
        return claim.datasets.iter().map(String::as_str).collect();
    }
    let solvers: Vec<usize> = (0..res.plan.solvers.len())
        .filter(|&i| {
            let sv = &res.plan.solvers[i];
            sv.series == claim.solver || sv.label == claim.solver || sv.name == claim.solver
        })
        .collect();
    let with_cells: Vec<&str> = res
        .plan
        .datasets
        .iter()
        .enumerate()
        .filter(|(di, _)| {
            res.plan
                .cells
                .iter()
                .any(|c| c.dataset == *di && solvers.contains(&c.solver))
        })
        .map(|(_, d)| d.id.as_str())
        .collect();
    if with_cells.is_empty() {
        res.plan.datasets.iter().map(|d| d.id.as_str()).collect()
    } else {
        with_cells
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
    let synthetic: Vec<&str> = read_datasets(res, claim)
        .into_iter()
        .filter(|id| {
            res.plan
                .datasets
                .iter()
                .any(|d| d.id == *id && d.resolved.synthetic)
        })
        .collect();
    let outcome = |verdict, detail: String| Outcome {
        id: claim.id.clone(),
        text: claim.text.clone(),
        verdict,
        detail,
        synthetic: !synthetic.is_empty(),
        origin: claim.origin,
        quote: claim.quote.clone(),
        section: claim.section.clone(),
    };
    let waiting = missing_for(res, claim);
    if waiting > 0 {
        return outcome(
            Verdict::NotComparable,
            format!(
                "not run: {waiting} of the {} cells of its data sets missing",
                cells_for(res, claim)
            ),
        );
    }
    if let Some(p) = claim.profile.filter(|&p| p != res.plan.profile) {
        return outcome(
            Verdict::NotComparable,
            format!("judged at the `{p}` profile only"),
        );
    }
    let datasets = covered(res, claim);
    let computed = match claim.kind {
        ClaimKind::Greater | ClaimKind::Better | ClaimKind::Close => compare(res, claim, &datasets),
        ClaimKind::Near => near(res, claim, &datasets),
        ClaimKind::PeakWithin => peak_within(res, claim, &datasets),
        ClaimKind::SlopeWithin => slope_within(res, claim, &datasets),
        ClaimKind::ValueWithin => value_within(res, claim, &datasets),
        ClaimKind::Correlated => correlated(res, claim, &datasets),
        ClaimKind::Factor | ClaimKind::Difference => quantity(res, claim, &datasets),
    };
    match computed {
        Err(e) => outcome(Verdict::NotComparable, e),
        Ok((v, detail)) if claim.needs_real_data && !synthetic.is_empty() => outcome(
            Verdict::NotComparable,
            format!(
                "SYNTHETIC stand-in data ({}): the claim is about the paper's data (ours: {v}; {detail})",
                synthetic.join(", "),
            ),
        ),
        Ok((v, detail)) => outcome(v, detail),
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

/// `greater`: `solver`'s value exceeds `versus`'s (`l + tolerance > factor r`); `better`:
/// the same in the metric's direction (for a lower-is-better metric such as seconds, `factor
/// l < r + tolerance`: "at least `factor` times faster"); both paired by split (module docs).
/// `close`: the two means are within `tolerance`. On every data set, at every selected k.
fn compare(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let versus = claim.versus.as_deref().unwrap_or(&claim.solver);
    let tol = claim.tolerance.unwrap_or(0.0);
    let factor = claim.factor.unwrap_or(1.0);
    let close = claim.kind == ClaimKind::Close;
    let lower_better =
        claim.kind == ClaimKind::Better && !res.plan.metric(&claim.metric).higher_is_better;
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
        } else if claim.kind == ClaimKind::Better {
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

fn verdict_of(ok: bool) -> Verdict {
    if ok {
        Verdict::Holds
    } else {
        Verdict::DoesNotHold
    }
}

/// The index of the data set with this id.
fn dataset_index(res: &ExperimentResults<'_>, id: &str) -> Result<usize, String> {
    res.plan
        .datasets
        .iter()
        .position(|x| x.id == id)
        .ok_or(format!("no data set `{id}`"))
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
            .fold(None::<&crate::results::CurvePoint>, |b, p| match b {
                Some(b) if !metric.better(p.y.mean, b.y.mean) => Some(b),
                _ => Some(p),
            })
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

/// The mean of `values` with its 95 % t interval `[a, b]` (the mean alone for one value),
/// judged against `[lo, hi]`: inside holds, disjoint does not hold, else not distinguishable.
pub fn interval_verdict(
    values: &[f64],
    lo: f64,
    hi: f64,
) -> Option<(Verdict, crate::results::Stat, f64, f64)> {
    let st = crate::results::Stat::of(values)?;
    let half = if st.n > 1 {
        t_critical(st.n - 1) * st.sd / (st.n as f64).sqrt()
    } else {
        0.0
    };
    let (a, b) = (st.mean - half, st.mean + half);
    let v = if a >= lo && b <= hi {
        Verdict::Holds
    } else if b < lo || a > hi {
        Verdict::DoesNotHold
    } else {
        Verdict::NotDistinguishable
    };
    Some((v, st, a, b))
}

/// How a stated quantity is measured: a ratio (optionally on a log scale) or a difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    Ratio,
    LogRatio,
    Difference,
}

impl Quantity {
    fn of(claim: &Claim) -> Quantity {
        match (claim.kind, claim.log) {
            (ClaimKind::Difference, _) => Quantity::Difference,
            (_, true) => Quantity::LogRatio,
            _ => Quantity::Ratio,
        }
    }

    /// A value on the judged scale as the reader reads it (a factor, or a difference).
    fn show(self, x: f64) -> String {
        match self {
            Quantity::Difference => format!("{x:+.3}"),
            Quantity::Ratio => factor_text(x),
            Quantity::LogRatio => factor_text(10f64.powf(x)),
        }
    }
}

/// A factor: `×1.30`, `×36.4`, `×120`.
fn factor_text(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("×{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("×{x:.1}")
    } else {
        format!("×{x:.2}")
    }
}

/// A factor near 1 as a gain: `+30 %` (`+0 %`, never `-0 %`).
fn gain_text(x: f64) -> String {
    let g = ((x - 1.0) * 100.0).round();
    format!("{:+.0} %", if g == 0.0 { 0.0 } else { g })
}

/// A stated quantity computed from two means alone (a kept report's numbers, whose cells
/// are gone): the point value beside the paper's, and whether it falls in the band. No
/// verdict: that needs the per-split values and their spread.
pub fn quantity_from_means(claim: &Claim, l: f64, r: f64) -> Option<String> {
    let q = Quantity::of(claim);
    let (paper, tol) = (claim.paper_value?, claim.tolerance?);
    let value = match q {
        Quantity::Difference => l - r,
        _ if r <= 0.0 || l <= 0.0 => return None,
        Quantity::Ratio => l / r,
        Quantity::LogRatio => (l / r).log10(),
    };
    let centre = if q == Quantity::LogRatio {
        paper.log10()
    } else {
        paper
    };
    let place = if (value - centre).abs() <= tol {
        "inside the band"
    } else if (value - centre).abs() <= 2.0 * tol {
        "outside the band, within twice the tolerance"
    } else {
        "far outside the band"
    };
    let gains = match q {
        Quantity::Ratio if paper < 3.0 => {
            format!(" ({} vs {})", gain_text(value), gain_text(paper))
        }
        _ => String::new(),
    };
    Some(format!(
        "{} from the means vs {} in the paper{gains}: {place} (±{tol}{})",
        q.show(value),
        match q {
            Quantity::Difference => format!("{paper:+.3}"),
            _ => factor_text(paper),
        },
        if q == Quantity::LogRatio {
            " decades"
        } else {
            ""
        }
    ))
}

/// The verdict on a stated quantity (module docs): `values` are the per-split measurements
/// on the judged scale (ratios, log10 ratios or differences), `paper` the paper's number (a
/// factor or a difference, not a logarithm), `tol` the band's half-width on the judged scale.
/// Returns the verdict and its detail: the measured value with its 95 % interval beside the
/// paper's, and how close (agrees / straddles / close / far).
pub fn quantity_verdict(
    values: &[f64],
    paper: f64,
    tol: f64,
    q: Quantity,
) -> Option<(Verdict, String)> {
    let centre = match q {
        Quantity::LogRatio => paper.log10(),
        _ => paper,
    };
    let (lo, hi) = (centre - tol, centre + tol);
    let (v, st, a, b) = interval_verdict(values, lo, hi)?;
    let word = match v {
        Verdict::Holds => "agrees",
        Verdict::NotDistinguishable => "its interval straddles the band's edge",
        _ if b >= lo - tol && a <= hi + tol => "close (within twice the tolerance)",
        _ => "far",
    };
    let interval = if st.n > 1 {
        format!(" [{}, {}] measured", q.show(a), q.show(b))
    } else {
        " measured on one split (no interval)".to_string()
    };
    let gains = match q {
        Quantity::Ratio if paper < 3.0 => format!(
            " ({}{} vs {})",
            gain_text(st.mean),
            if st.n > 1 {
                format!(" [{}, {}]", gain_text(a), gain_text(b))
            } else {
                String::new()
            },
            gain_text(paper)
        ),
        _ => String::new(),
    };
    let band = match q {
        Quantity::LogRatio => format!("band {} .. {} (±{tol} decades)", q.show(lo), q.show(hi)),
        _ => format!("band {} .. {} (±{tol})", q.show(lo), q.show(hi)),
    };
    Some((
        v,
        format!(
            "{}{interval} vs {} in the paper{gains}, {band}: {word}",
            q.show(st.mean),
            match q {
                Quantity::Difference => format!("{paper:+.3}"),
                _ => factor_text(paper),
            },
        ),
    ))
}

/// `factor` / `difference`: per covered data set (and selected k), the per-split quantity
/// `solver` against `versus` (on `versus_dataset` when given), judged by [`quantity_verdict`];
/// the worst verdict over data sets and k counts.
fn quantity(
    res: &ExperimentResults<'_>,
    claim: &Claim,
    datasets: &[&str],
) -> Result<(Verdict, String), String> {
    let versus = claim.versus.as_deref().unwrap_or(&claim.solver);
    let paper = claim.paper_value.ok_or("no `paper_value`")?;
    let tol = claim.tolerance.unwrap_or(0.0);
    let q = Quantity::of(claim);
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

/// The worse of two verdicts of parts of one claim.
fn worst(a: Verdict, b: Verdict) -> Verdict {
    match (a, b) {
        (Verdict::DoesNotHold, _) | (_, Verdict::DoesNotHold) => Verdict::DoesNotHold,
        (Verdict::NotDistinguishable, _) | (_, Verdict::NotDistinguishable) => {
            Verdict::NotDistinguishable
        }
        _ => Verdict::Holds,
    }
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
        let (u, v) = crate::results::paired(&means(a), &means(b));
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

/// The instances `name` selects (a grid's series label, or a registry name), with their value of `x_param`, when they are the points of
/// a solver grid over that parameter (e.g. LORETA at ranks 10 ... 100): `None` otherwise.
pub fn grid_instances(
    res: &ExperimentResults<'_>,
    name: &str,
    x_param: &[String],
) -> Option<Vec<(usize, f64)>> {
    // The grid's series label (the spec solver's label), else the registry name.
    let by_series: Vec<usize> = (0..res.plan.solvers.len())
        .filter(|&i| res.plan.solvers[i].series == name)
        .collect();
    let instances = if by_series.len() > 1 {
        by_series
    } else {
        res.solvers_named(name)
    };
    if instances.len() < 2 {
        return None;
    }
    instances
        .iter()
        .map(|&si| {
            let gp = &res.plan.solvers[si].grid_point;
            x_param
                .iter()
                .find_map(|p| gp.get(p).and_then(crate::results::number))
                .map(|x| (si, x))
        })
        .collect()
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
        let (_, b) = crate::plots::power_fit(&points).ok_or(format!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn reps(v: &[f64]) -> BTreeMap<u32, f64> {
        v.iter().enumerate().map(|(i, x)| (i as u32, *x)).collect()
    }

    #[test]
    fn paired_differences_within_the_spread_are_not_distinguishable() {
        // 0.265 vs 0.262 with splits that disagree: a tie.
        let l = reps(&[0.27, 0.25, 0.28, 0.26, 0.265]);
        let r = reps(&[0.26, 0.27, 0.25, 0.27, 0.26]);
        assert_eq!(paired(&l, &r, 1.0, 0.0).0, Paired::Tie);
        // A consistent small gain is significant when the splits agree.
        let l2 = reps(&[0.27, 0.28, 0.26, 0.275, 0.265]);
        let r2 = reps(&[0.26, 0.27, 0.25, 0.265, 0.255]);
        assert_eq!(paired(&l2, &r2, 1.0, 0.0).0, Paired::Better);
        assert_eq!(paired(&r2, &l2, 1.0, 0.0).0, Paired::Worse);
        // Hand-computed t: d = [1, 2, 3] -> mean 2, sd 1, se 1/sqrt(3); t(2) = 4.303 -> the
        // half-width 2.484 exceeds the mean: a tie; with d = [2, 2.1, 1.9] it is not.
        let (o, lm, rm, n) = paired(&reps(&[1.0, 2.0, 3.0]), &reps(&[0.0, 0.0, 0.0]), 1.0, 0.0);
        assert_eq!((o, lm, rm, n), (Paired::Tie, 2.0, 0.0, 3));
        let (o, ..) = paired(&reps(&[2.0, 2.1, 1.9]), &reps(&[0.0, 0.0, 0.0]), 1.0, 0.0);
        assert_eq!(o, Paired::Better);
        // Factor: "10x the versus" with 10.5x on each of five splits holds; on two splits
        // the spread cannot be judged tightly enough (t(1) = 12.7).
        let l = reps(&[10.5, 21.0, 31.5, 42.0, 52.5]);
        let r = reps(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(paired(&l, &r, 10.0, 0.0).0, Paired::Better);
        let (o, ..) = paired(&reps(&[10.5, 21.0]), &reps(&[1.0, 2.0]), 10.0, 0.0);
        assert_eq!(o, Paired::Tie);
        // One split: 5 % relative margin.
        assert_eq!(
            paired(&reps(&[1.04]), &reps(&[1.0]), 1.0, 0.0).0,
            Paired::Tie
        );
        assert_eq!(
            paired(&reps(&[1.2]), &reps(&[1.0]), 1.0, 0.0).0,
            Paired::Better
        );
        // Only common splits are paired.
        let (_, _, _, n) = paired(&reps(&[1.0, 2.0]), &BTreeMap::from([(1, 0.0)]), 1.0, 0.0);
        assert_eq!(n, 1);
        assert_eq!(t_critical(4), 2.776);
        assert_eq!(t_critical(100), 1.96);
    }

    #[test]
    fn stated_numbers_are_judged_by_how_close_the_measurement_is() {
        let v = |values: &[f64], paper: f64, tol: f64, q: Quantity| {
            quantity_verdict(values, paper, tol, q).unwrap()
        };
        // The example: +30 % with a tight spread against the paper's +33 %.
        let (verdict, detail) = v(&[1.28, 1.30, 1.32, 1.29, 1.31], 1.33, 0.1, Quantity::Ratio);
        assert_eq!(verdict, Verdict::Holds, "{detail}");
        assert!(
            detail.starts_with("×1.30 [×1.28, ×1.32] measured vs ×1.33 in the paper (+30 % [+28 %, +32 %] vs +33 %)")
                && detail.ends_with("band ×1.23 .. ×1.43 (±0.1): agrees"),
            "{detail}"
        );
        // Outside the band but within twice the tolerance: close; beyond: far.
        let (verdict, detail) = v(&[1.35, 1.36, 1.34], 1.5, 0.1, Quantity::Ratio);
        assert_eq!(verdict, Verdict::DoesNotHold);
        assert!(
            detail.ends_with("close (within twice the tolerance)"),
            "{detail}"
        );
        let (verdict, detail) = v(&[0.80, 0.81, 0.79], 1.5, 0.1, Quantity::Ratio);
        assert_eq!(verdict, Verdict::DoesNotHold);
        assert!(detail.ends_with(": far"), "{detail}");
        // An interval across the band's edge: not distinguishable.
        let (verdict, detail) = v(&[1.2, 1.5, 1.35], 1.33, 0.1, Quantity::Ratio);
        assert_eq!(verdict, Verdict::NotDistinguishable);
        assert!(detail.contains("straddles"), "{detail}");
        // Orders of magnitude on the log scale: ×50, ×60, ×70 against ×100 ± half a decade
        // (log10 mean 1.774, half-width 4.303 · 0.073 / √3 = 0.181: inside [1.5, 2.5]).
        let logs: Vec<f64> = [50.0f64, 60.0, 70.0].iter().map(|x| x.log10()).collect();
        let (verdict, detail) = v(&logs, 100.0, 0.5, Quantity::LogRatio);
        assert_eq!(verdict, Verdict::Holds, "{detail}");
        assert!(
            detail.starts_with("×59.4 [×39.1, ×90.3] measured vs ×100 in the paper, band ×31.6 .. ×316 (±0.5 decades)"),
            "{detail}"
        );
        let tens: Vec<f64> = [8.0f64, 9.0, 10.0].iter().map(|x| x.log10()).collect();
        assert_eq!(
            v(&tens, 100.0, 0.5, Quantity::LogRatio).0,
            Verdict::DoesNotHold
        );
        // A difference, and one split (no interval: the value itself).
        let (verdict, detail) = v(
            &[-0.010, -0.008, -0.012],
            -0.0091,
            0.02,
            Quantity::Difference,
        );
        assert_eq!(verdict, Verdict::Holds, "{detail}");
        assert!(
            detail.starts_with("-0.010 [-0.015, -0.005] measured vs -0.009 in the paper"),
            "{detail}"
        );
        let (verdict, detail) = v(&[1.31], 1.33, 0.1, Quantity::Ratio);
        assert_eq!(verdict, Verdict::Holds);
        assert!(detail.contains("one split"), "{detail}");
        assert!(quantity_verdict(&[], 1.0, 0.1, Quantity::Ratio).is_none());
    }

    #[test]
    fn value_intervals_inside_outside_and_straddling() {
        // mean 2, sd 1, n = 3: half-width 4.303 / sqrt(3) = 2.484
        let v = [1.0, 2.0, 3.0];
        let (verdict, st, a, b) = interval_verdict(&v, -1.0, 5.0).unwrap();
        assert_eq!((verdict, st.mean, st.n), (Verdict::Holds, 2.0, 3));
        assert!((a - (2.0 - 4.303 / 3f64.sqrt())).abs() < 1e-12 && (b - 4.484).abs() < 1e-3);
        assert_eq!(
            interval_verdict(&v, 0.0, 3.0).unwrap().0,
            Verdict::NotDistinguishable
        );
        assert_eq!(
            interval_verdict(&v, 5.0, 9.0).unwrap().0,
            Verdict::DoesNotHold
        );
        assert_eq!(
            interval_verdict(&v, -9.0, -0.5).unwrap().0,
            Verdict::DoesNotHold
        );
        // one value: the value itself
        assert_eq!(
            interval_verdict(&[0.3], 0.25, 1.0).unwrap().0,
            Verdict::Holds
        );
        assert_eq!(
            interval_verdict(&[0.2], 0.25, 1.0).unwrap().0,
            Verdict::DoesNotHold
        );
        assert!(interval_verdict(&[], 0.0, 1.0).is_none());
    }
}
