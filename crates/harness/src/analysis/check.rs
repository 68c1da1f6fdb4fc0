//! `dyad check`: compare cached results with every spec's expectation bands.

use crate::analysis::results::{ExperimentResults, Stat};
use crate::spec::{At, DataKind, Expectation, Selector};

/// One expectation's outcome.
#[derive(Debug, Clone)]
pub struct CheckLine {
    pub experiment: String,
    pub what: String,
    pub min: f64,
    pub max: f64,
    /// Our mean over repeats, when available.
    pub value: Option<f64>,
    pub ok: bool,
    pub problem: Option<String>,
    /// Why the band does not apply to this run (it is then `ok`, and counted as skipped).
    pub skipped: Option<String>,
    /// Why the band cannot fail: the untrained model (step 0) meets it, so it would not catch
    /// a learner that learns nothing. A defect of the spec; `dyad check` fails on it.
    pub defect: Option<String>,
}

fn describe(e: &Expectation) -> String {
    format!(
        "{} {} {}{} ({})",
        e.dataset,
        e.solver,
        e.metric,
        e.k.map(|k| format!("@{k}")).unwrap_or_default(),
        e.set
    )
}

/// Check every expectation of one experiment.
pub fn check(res: &ExperimentResults<'_>) -> Vec<CheckLine> {
    let profile = res.plan.profile;
    res.plan
        .spec
        .spec
        .expect
        .iter()
        .map(|e| {
            let (min, max) = (*e.min.at(profile), *e.max.at(profile));
            let mut line = CheckLine {
                experiment: res.plan.spec.id.clone(),
                what: describe(e),
                min,
                max,
                value: None,
                ok: false,
                problem: None,
                skipped: None,
                defect: None,
            };
            let data = res.plan.datasets.iter().find(|d| d.id == e.dataset);
            let synthetic = data.map(|d| d.resolved.synthetic);
            let unpublished = data.is_some_and(|d| d.resolved.unpublished.is_some());
            let applies = match (e.data, synthetic) {
                (DataKind::Real, Some(true)) => {
                    Some("band is for real data; SYNTHETIC stand-in in use")
                }
                (DataKind::Synthetic, Some(false)) => {
                    Some("band is for the synthetic stand-in; real data in use")
                }
                (_, Some(false)) if unpublished => {
                    Some("band is calibrated on the published release; this data's content differs")
                }
                _ => None,
            };
            if let Some(why) = applies {
                line.ok = true;
                line.skipped = Some(why.to_string());
                return line;
            }
            if !res.complete() {
                line.problem = Some(format!("not run ({} cells missing)", res.missing()));
                return line;
            }
            match res.select(&e.selector()) {
                Ok(v) => {
                    let m = Stat::of(&v).expect("non-empty").mean;
                    line.value = Some(m);
                    line.ok = (min..=max).contains(&m);
                    if !line.ok {
                        line.problem = Some(format!("{m:.4} outside [{min}, {max}]"));
                    }
                }
                Err(err) => line.problem = Some(err),
            }
            // The untrained model's value on the same set (the step-0 record of an iterative
            // learner): a band containing it cannot catch a learner that learns nothing.
            let iterative = res
                .solvers_named(&e.solver)
                .first()
                .is_some_and(|&si| res.plan.solvers[si].iterative);
            let recorded = !crate::tasks::CELL_METRICS
                .iter()
                .any(|m| m.name == e.metric);
            if iterative && recorded && e.at != At::Step(0) {
                let untrained = Selector {
                    at: At::Step(0),
                    ..e.selector()
                };
                if let Some(s0) = res.select(&untrained).ok().and_then(|v| Stat::of(&v))
                    && (min..=max).contains(&s0.mean)
                {
                    line.defect = Some(format!(
                        "the untrained model (step 0: {:.4}) meets this band, so it cannot \
                         catch a learner that does not learn",
                        s0.mean
                    ));
                    line.ok = false;
                }
            }
            line
        })
        .collect()
}

/// One sanity check of an experiment (`dyad check` fails on any that does not hold; the
/// report prints them as one line per experiment).
#[derive(Debug, Clone)]
pub struct SanityLine {
    pub experiment: String,
    /// What is checked, e.g. "perfect ranking has mAP 1".
    pub what: String,
    pub ok: bool,
    /// The numbers behind it (cells checked, worst deviation), or what failed.
    pub detail: String,
}

/// A probe record: its metric, what it checks, and when its value passes.
type Probe = (&'static str, &'static str, fn(f64) -> bool);

/// Largest deviation tolerated where two computations must agree up to rounding.
const ROUNDING: f64 = 1e-9;
/// Largest mAP difference tolerated between a learner's identity start and the Euclidean
/// baseline. The two rank alike in exact arithmetic, but rows normalised to unit norm carry
/// norms of 1 ± 1e-16, so a distance separates candidates the bilinear form ties exactly
/// (documents sharing the query's terms with equal weights), and ties are scored as their
/// expectation: measured up to 1e-4 on 20 Newsgroups (quick profile). An artefact such as
/// empty rows ranked first moves mAP by whole points.
const TIE_ROUNDING: f64 = 1e-3;

/// The sanity checks of one experiment, from its cached cells (see
/// [`crate::tasks::retrieval::SANITY`]):
///
/// * every retrieval cell: the perfect ranking's mAP is 1, a constant scorer's
///   precision@k sits at chance, and the final model evaluated twice gives the same values;
/// * a learner whose step-0 model ranks as the Euclidean baseline
///   ([`dyad_kernels::Start::IdentityDistance`], or `IdentityBilinear` on rows of unit
///   norm) has, at step 0, the Euclidean baseline's mAP on every split both ran, to
///   [`TIE_ROUNDING`] (when the spec runs the Euclidean baseline on that data set);
/// * a learner that starts at `W = 0` ([`dyad_kernels::Start::Zero`]) has, at step 0, the
///   constant scorer's mAP.
///
/// the pair-ranking task's checks ([`crate::analysis::sanity_pairs`]) and the other tasks' range,
/// shared-value and identity checks ([`crate::analysis::sanity_tasks`]).
///
/// Tasks without probes yield nothing; [`sanity_summary`] says so.
pub fn sanity(res: &ExperimentResults<'_>) -> Vec<SanityLine> {
    use crate::tasks::retrieval::SANITY;
    let plan = res.plan;
    let experiment = plan.spec.id.clone();
    let mut out = Vec::new();
    let line = |what: &str, ok: bool, detail: String| SanityLine {
        experiment: experiment.clone(),
        what: what.to_string(),
        ok,
        detail,
    };
    // Probes recorded in every cell.
    let probes: [Probe; 3] = [
        ("sanity_oracle_map", "a perfect ranking has mAP 1", |v| {
            (v - 1.0).abs() <= ROUNDING
        }),
        (
            "sanity_constant_gap",
            "a constant scorer sits at chance at every k",
            |v| v.abs() <= ROUNDING,
        ),
        (
            "sanity_repeat_delta",
            "a model evaluated twice gives the same values",
            |v| v == 0.0,
        ),
    ];
    for (metric, what, good) in probes {
        let (mut n, mut bad, mut worst) = (0usize, Vec::new(), 0.0f64);
        for (cell, r) in plan.cells.iter().zip(&res.cells) {
            let Some(r) = r else { continue };
            for rec in r
                .records
                .iter()
                .filter(|x| x.metric == metric && x.set.starts_with(SANITY))
            {
                n += 1;
                let dev = if metric == "sanity_oracle_map" {
                    (rec.value - 1.0).abs()
                } else {
                    rec.value.abs()
                };
                worst = worst.max(dev);
                if !good(rec.value) {
                    bad.push(crate::engine::run::describe(plan, plan_index(plan, cell)));
                }
            }
        }
        if n > 0 {
            out.push(line(
                what,
                bad.is_empty(),
                if bad.is_empty() {
                    format!("{n} evaluations, largest deviation {worst:.1e}")
                } else {
                    format!("fails in {} of {n}: {}", bad.len(), bad.join("; "))
                },
            ));
        }
    }
    // Step-0 models against the Euclidean baseline and the constant scorer.
    let step0 = |ci: usize, metric: &str, set: &str| -> Option<f64> {
        res.cells[ci].as_ref().and_then(|r| {
            r.records
                .iter()
                .find(|x| x.step == 0 && x.metric == metric && x.set == set && x.k.is_none())
                .map(|x| x.value)
        })
    };
    let primary = plan.primary_set();
    let euclid: Vec<usize> = (0..plan.solvers.len())
        .filter(|&i| plan.solvers[i].name == "euclidean")
        .collect();
    for (si, sv) in plan.solvers.iter().enumerate() {
        let start = sv
            .built()
            .and_then(|b| b.family::<dyn dyad_kernels::Ranker>().map(|r| r.start()))
            .unwrap_or(dyad_kernels::Start::Unstated);
        use dyad_kernels::Start;
        for (di, d) in plan.datasets.iter().enumerate() {
            let cells: Vec<usize> = (0..plan.cells.len())
                .filter(|&c| plan.cells[c].solver == si && plan.cells[c].dataset == di)
                .collect();
            let (mut n, mut worst, mut bad) = (0usize, 0.0f64, 0usize);
            let what = match start {
                Start::IdentityBilinear | Start::IdentityDistance => {
                    let unit = d
                        .resolved
                        .shape
                        .as_ref()
                        .and_then(|s| s.audit.as_ref())
                        .map(|a| a.not_unit_norm == 0);
                    if start == Start::IdentityBilinear && unit != Some(true) {
                        continue;
                    }
                    let Some(&ei) = euclid.iter().find(|&&e| {
                        plan.solvers[e].datasets.is_empty()
                            || plan.solvers[e].datasets.contains(&d.id)
                    }) else {
                        continue;
                    };
                    for &c in &cells {
                        let repeat = plan.cells[c].repeat;
                        let Some(ec) = (0..plan.cells.len()).find(|&x| {
                            plan.cells[x].solver == ei
                                && plan.cells[x].dataset == di
                                && plan.cells[x].repeat == repeat
                        }) else {
                            continue;
                        };
                        if let (Some(a), Some(b)) =
                            (step0(c, "map", &primary), step0(ec, "map", &primary))
                        {
                            n += 1;
                            let dev = (a - b).abs();
                            worst = worst.max(dev);
                            bad += usize::from(dev > TIE_ROUNDING);
                        }
                    }
                    format!(
                        "{} at step 0 ranks as the Euclidean baseline on `{}` (mAP)",
                        sv.label, d.id
                    )
                }
                Start::Zero => {
                    for &c in &cells {
                        let probe = format!("{SANITY}-{primary}");
                        if let (Some(a), Some(b)) = (
                            step0(c, "map", &primary),
                            res.cells[c].as_ref().and_then(|r| {
                                r.records
                                    .iter()
                                    .find(|x| x.metric == "sanity_constant_map" && x.set == probe)
                                    .map(|x| x.value)
                            }),
                        ) {
                            n += 1;
                            let dev = (a - b).abs();
                            worst = worst.max(dev);
                            bad += usize::from(dev > ROUNDING);
                        }
                    }
                    format!(
                        "{} at step 0 (W = 0) sits at chance on `{}` (mAP of a constant scorer)",
                        sv.label, d.id
                    )
                }
                Start::Unstated => continue,
            };
            if n > 0 {
                out.push(line(
                    &what,
                    bad == 0,
                    if bad == 0 {
                        format!("{n} splits, largest difference {worst:.1e}")
                    } else {
                        format!("differs on {bad} of {n} splits (largest difference {worst:.4})")
                    },
                ));
            }
        }
    }
    out.extend(crate::analysis::sanity_pairs::lines(res));
    out.extend(crate::analysis::sanity_tasks::lines(res));
    out
}

/// The index of `cell` in its plan (cells are compared by key).
fn plan_index(plan: &crate::engine::plan::Plan, cell: &crate::engine::plan::Cell) -> usize {
    plan.cells
        .iter()
        .position(|c| c.key == cell.key)
        .unwrap_or_default()
}

/// The report's sanity line of an experiment: what was checked and whether it holds.
pub fn sanity_summary(res: &ExperimentResults<'_>) -> String {
    let lines = sanity(res);
    if lines.is_empty() {
        return format!(
            "Sanity: no checks for this experiment (task `{}` records no probes, and no learner \
             here starts at a baseline it can be compared with).",
            res.plan.task.name()
        );
    }
    let failed: Vec<&SanityLine> = lines.iter().filter(|l| !l.ok).collect();
    let parts: Vec<String> = lines
        .iter()
        .map(|l| {
            format!(
                "{} {} ({})",
                if l.ok { "✅" } else { "❌" },
                l.what,
                l.detail
            )
        })
        .collect();
    format!(
        "Sanity: {} of {} checks hold — {}.",
        lines.len() - failed.len(),
        lines.len(),
        parts.join("; ")
    )
}
