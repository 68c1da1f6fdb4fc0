//! `dyad check`: compare cached results with every spec's expectation bands.

use crate::results::{ExperimentResults, Stat};
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
            let synthetic = res
                .plan
                .datasets
                .iter()
                .find(|d| d.id == e.dataset)
                .map(|d| d.resolved.synthetic);
            let applies = match (e.data, synthetic) {
                (DataKind::Real, Some(true)) => {
                    Some("band is for real data; SYNTHETIC stand-in in use")
                }
                (DataKind::Synthetic, Some(false)) => {
                    Some("band is for the synthetic stand-in; real data in use")
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
