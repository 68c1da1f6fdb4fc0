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

use crate::analysis::results::ExperimentResults;
use crate::analysis::stats::t_critical;
use crate::spec::{Claim, LoadedSpec, Origin, Selector, SpecError};
use std::fmt;

pub mod kinds;

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

/// A kind of claim: `kind = "<name>"` in a spec's `[[claims]]`, what else it needs of the
/// claim's keys and how it is judged. Each kind is a file in [`kinds`] declaring its entry,
/// and a line in [`kinds::CLAIM_KINDS`]; the spec names it, and nothing else enumerates the
/// kinds.
pub struct ClaimKind {
    /// The spec's `kind` (e.g. `"greater"`).
    pub name: &'static str,
    /// What the kind needs beyond the keys every claim has, as an error names it (e.g.
    /// "versus` or `versus_dataset").
    pub needs: &'static str,
    /// Whether a claim has what the kind needs.
    pub complete: fn(&Claim) -> bool,
    /// The optional keys that only some kinds read ([`KIND_KEYS`]) which this one reads.
    pub reads: &'static [&'static str],
    /// Further checks of the claim's values: the key at fault and what is wrong with it
    /// ([`no_check`]: none).
    pub check: fn(&Claim) -> Result<(), (&'static str, String)>,
    /// How the number a claim of this kind states is measured (`factor`, `difference`): the
    /// report shows it from the means when the cells are gone ([`no_quantity`]: the kind
    /// states none).
    pub quantity: fn(&Claim) -> Option<Quantity>,
    /// The verdict over the covered data sets, with the numbers behind it, or why there is
    /// none.
    pub judge: Judge,
}

/// How a kind judges a claim over the covered data sets.
pub type Judge = fn(&ExperimentResults<'_>, &Claim, &[&str]) -> Result<(Verdict, String), String>;

/// A kind without checks of its own.
pub fn no_check(_: &Claim) -> Result<(), (&'static str, String)> {
    Ok(())
}

/// A kind that states no number.
pub fn no_quantity(_: &Claim) -> Option<Quantity> {
    None
}

/// Keys of a claim that only some kinds read: written for another kind, they are an error.
pub const KIND_KEYS: [&str; 2] = ["log", "paper_value"];

/// The registered claim kind named `name`.
pub fn kind(name: &str) -> Option<&'static ClaimKind> {
    kinds::CLAIM_KINDS.iter().copied().find(|k| k.name == name)
}

/// The part of a spec's validation that the claim kinds own: every claim names a registered
/// kind, has what that kind needs, and writes no key only other kinds read. Errors are at the
/// claim's key, as the spec's own. Run with the spec's validation, when specs are selected
/// ([`crate::Workspace::select_specs`]).
pub fn validate(spec: &LoadedSpec) -> Result<(), SpecError> {
    for (i, c) in spec.spec.claims.iter().enumerate() {
        let at = |key: &str, msg: String| {
            spec.error_at_key(
                &["claims", &i.to_string(), key],
                format!("claim `{}`: {msg}", c.id),
            )
        };
        let Some(k) = kind(&c.kind) else {
            let known: Vec<&str> = kinds::CLAIM_KINDS.iter().map(|k| k.name).collect();
            return Err(at(
                "kind",
                format!("unknown kind \"{}\" (known: {})", c.kind, known.join(", ")),
            ));
        };
        for key in KIND_KEYS {
            let written = match key {
                "log" => c.log,
                _ => c.paper_value.is_some(),
            };
            if written && !k.reads.contains(&key) {
                let readers: Vec<String> = kinds::CLAIM_KINDS
                    .iter()
                    .filter(|k| k.reads.contains(&key))
                    .map(|k| format!("\"{}\"", k.name))
                    .collect();
                let what = if key == "log" {
                    "`log = true`"
                } else {
                    "`paper_value`"
                };
                return Err(at(
                    key,
                    format!(
                        "{what} goes with `kind = {}`",
                        readers.join("` or `kind = ")
                    ),
                ));
            }
        }
        if !(k.complete)(c) {
            return Err(at(
                "kind",
                format!("kind \"{}\" needs `{}`", c.kind, k.needs),
            ));
        }
        (k.check)(c).map_err(|(key, msg)| at(key, msg))?;
    }
    Ok(())
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
pub(crate) fn num(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.3e}")
    } else {
        format!("{x:.3}")
    }
}

pub(crate) fn mean(v: &[f64]) -> f64 {
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
    let computed = match kind(&claim.kind) {
        Some(k) => (k.judge)(res, claim, &datasets),
        None => Err(format!("unknown claim kind `{}`", claim.kind)),
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
        Ok((v, detail)) => {
            let unpublished: Vec<&str> = read_datasets(res, claim)
                .into_iter()
                .filter(|id| {
                    res.plan
                        .datasets
                        .iter()
                        .any(|d| d.id == *id && d.resolved.unpublished.is_some())
                })
                .collect();
            if unpublished.is_empty() {
                outcome(v, detail)
            } else {
                outcome(
                    v,
                    format!(
                        "{detail}; on UNPUBLISHED CONTENT ({}): real data, but not the \
                         published release the paper used",
                        unpublished.join(", ")
                    ),
                )
            }
        }
    }
}

pub(crate) fn selector(claim: &Claim, dataset: &str, solver: &str, k: Option<u32>) -> Selector {
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
pub(crate) fn ks(res: &ExperimentResults<'_>, claim: &Claim) -> Vec<Option<u32>> {
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

pub(crate) fn verdict_of(ok: bool) -> Verdict {
    if ok {
        Verdict::Holds
    } else {
        Verdict::DoesNotHold
    }
}

/// The index of the data set with this id.
pub(crate) fn dataset_index(res: &ExperimentResults<'_>, id: &str) -> Result<usize, String> {
    res.plan
        .datasets
        .iter()
        .position(|x| x.id == id)
        .ok_or(format!("no data set `{id}`"))
}

/// The index of the one solver a claim names (by label, else registry name).
pub(crate) fn one_solver(res: &ExperimentResults<'_>, name: &str) -> Result<usize, String> {
    match res.solvers_named(name).as_slice() {
        &[si] => Ok(si),
        _ => Err(format!("`{name}` does not name exactly one solver")),
    }
}

/// The mean of `values` with its 95 % t interval `[a, b]` (the mean alone for one value),
/// judged against `[lo, hi]`: inside holds, disjoint does not hold, else not distinguishable.
pub fn interval_verdict(
    values: &[f64],
    lo: f64,
    hi: f64,
) -> Option<(Verdict, crate::analysis::results::Stat, f64, f64)> {
    let st = crate::analysis::results::Stat::of(values)?;
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

/// The worse of two verdicts of parts of one claim.
pub(crate) fn worst(a: Verdict, b: Verdict) -> Verdict {
    match (a, b) {
        (Verdict::DoesNotHold, _) | (_, Verdict::DoesNotHold) => Verdict::DoesNotHold,
        (Verdict::NotDistinguishable, _) | (_, Verdict::NotDistinguishable) => {
            Verdict::NotDistinguishable
        }
        _ => Verdict::Holds,
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
                .find_map(|p| gp.get(p).and_then(crate::analysis::results::number))
                .map(|x| (si, x))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::{Paired, paired};
    use crate::spec::tests::{line_of_key, with_claim};

    /// A spec parsed and its claims' kinds checked, as `Workspace::select_specs` does.
    fn parse(src: &str) -> Result<LoadedSpec, SpecError> {
        let s = LoadedSpec::parse(std::path::Path::new("experiments/demo/f.toml"), src.into())?;
        validate(&s).map(|()| s)
    }

    #[test]
    fn unknown_kinds_are_errors_naming_the_known_ones() {
        let src = with_claim("origin = \"ours\"\n").replace("\"greater\"", "\"bigger\"");
        let e = parse(&src).unwrap_err();
        assert_eq!(e.line, Some(line_of_key(&src, "kind")), "{e}");
        assert!(e.to_string().contains("greater, better, close"), "{e}");
    }

    #[test]
    fn a_stated_number_needs_the_papers_value_and_a_tolerance() {
        let factor = |extra: &str| {
            with_claim(&format!("origin = \"ours\"\n{extra}"))
                .replace("kind = \"greater\"", "kind = \"factor\"")
        };
        assert!(parse(&factor("paper_value = 1.33\ntolerance = 0.1\n")).is_ok());
        assert!(
            parse(&factor(
                "paper_value = 100.0\ntolerance = 0.5\nlog = true\n"
            ))
            .is_ok()
        );
        let difference = factor("paper_value = -0.01\ntolerance = 0.02\n")
            .replace("kind = \"factor\"", "kind = \"difference\"");
        assert!(parse(&difference).is_ok());
        for (extra, key, says) in [
            ("tolerance = 0.1\n", "kind", "paper_value"),
            ("paper_value = 1.33\n", "kind", "tolerance"),
            (
                "paper_value = 1.33\ntolerance = 0.1\nfactor = 1.33\n",
                "kind",
                "no `factor",
            ),
            (
                "paper_value = -1.0\ntolerance = 0.1\n",
                "paper_value",
                "positive",
            ),
        ] {
            let src = factor(extra);
            let e = parse(&src).unwrap_err();
            assert_eq!(e.line, Some(line_of_key(&src, key)), "{e}");
            assert!(e.to_string().contains(says), "{e}");
        }
        // `log` and `paper_value` belong to stated numbers only.
        for (extra, key) in [
            ("log = true\n", "log"),
            ("paper_value = 2.0\n", "paper_value"),
        ] {
            let src = with_claim(&format!("origin = \"ours\"\n{extra}"));
            let e = parse(&src).unwrap_err();
            assert_eq!(e.line, Some(line_of_key(&src, key)), "{e}");
        }
        let src = difference.replace("tolerance = 0.02\n", "tolerance = 0.02\nlog = true\n");
        assert!(
            parse(&src)
                .unwrap_err()
                .to_string()
                .contains("`log = true` goes with")
        );
    }

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
