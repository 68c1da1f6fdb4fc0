//! The names a spec's plots, tables and claims read, checked against what its cells record
//! (issue 45): a misspelt metric would otherwise draw an empty figure, fill a table row with
//! "—" or leave a claim "not comparable", and exit 0.
//!
//! A name is known when the task describes it ([`crate::tasks::Task::metrics`], the cell
//! metrics every task records, its coordinates) or when a computed cell of the experiment
//! records it (a model's own statistics, e.g. `model_bytes` or `symmetry_index`, which
//! models name as they report them). The check therefore runs once the experiment's cells
//! are computed, before its tables and figures are written; the error names the spec's file,
//! line and key, and lists the names there are.

use crate::analysis::results::ExperimentResults;
use crate::spec::{SpecError, XAxis};
use crate::tasks::CELL_METRICS;
use std::collections::BTreeSet;

/// The metric and coordinate names the experiment's task describes and its cells record.
fn recorded(res: &ExperimentResults<'_>) -> (BTreeSet<String>, BTreeSet<String>) {
    let task = res.plan.task;
    let mut metrics: BTreeSet<String> = task
        .metrics()
        .iter()
        .chain(CELL_METRICS)
        .map(|m| m.name.to_string())
        .collect();
    let mut coords: BTreeSet<String> = task.coordinates().iter().map(|c| c.to_string()).collect();
    for r in res.cells.iter().flatten() {
        for x in &r.records {
            if !metrics.contains(&x.metric) {
                metrics.insert(x.metric.clone());
            }
            if let Some(c) = &x.coord
                && !coords.contains(&c.name)
            {
                coords.insert(c.name.clone());
            }
        }
    }
    (metrics, coords)
}

/// Every metric a plot (its `metric`, its `x` when that is a metric or coordinate, its
/// `reference`), a table row or a claim of this profile names is recorded.
pub fn check(res: &ExperimentResults<'_>) -> Result<(), SpecError> {
    let spec = &res.plan.spec;
    let (metrics, coords) = recorded(res);
    let unknown = |what: String, path: &[&str], name: &str, with_coords: bool| {
        let mut names: Vec<&str> = metrics.iter().map(String::as_str).collect();
        if with_coords {
            names.extend(coords.iter().map(String::as_str));
        }
        spec.error_at_key(
            path,
            format!(
                "key `{}`: {what} names \"{name}\", which neither task `{}` nor its cells \
                 record (they record: {})",
                path.iter()
                    .filter(|k| k.parse::<usize>().is_err())
                    .copied()
                    .collect::<Vec<_>>()
                    .join("."),
                res.plan.task.name(),
                names.join(", ")
            ),
        )
    };
    let s = &spec.spec;
    for (i, p) in s.plots.iter().enumerate() {
        let i = i.to_string();
        let what = format!("plot `{}`", p.id);
        if !metrics.contains(&p.metric) {
            return Err(unknown(what, &["plots", &i, "metric"], &p.metric, false));
        }
        if let XAxis::Named(x) = &p.x
            && !metrics.contains(x)
            && !coords.contains(x)
        {
            return Err(unknown(what, &["plots", &i, "x"], x, true));
        }
        if let Some(r) = &p.reference
            && !metrics.contains(&r.metric)
        {
            return Err(unknown(what, &["plots", &i, "reference"], &r.metric, false));
        }
    }
    for (i, t) in s.tables.iter().enumerate() {
        let i = i.to_string();
        for (j, row) in t.rows.iter().enumerate() {
            if !metrics.contains(&row.metric) {
                return Err(unknown(
                    format!("table `{}`", t.id),
                    &["tables", &i, "rows", &j.to_string(), "metric"],
                    &row.metric,
                    false,
                ));
            }
        }
    }
    for (i, c) in s.claims.iter().enumerate() {
        // A claim judged at another profile only names what that profile has.
        if c.profile.is_some_and(|p| p != res.plan.profile) {
            continue;
        }
        if !metrics.contains(&c.metric) {
            return Err(unknown(
                format!("claim `{}`", c.id),
                &["claims", &i.to_string(), "metric"],
                &c.metric,
                false,
            ));
        }
    }
    Ok(())
}
