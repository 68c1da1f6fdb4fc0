//! The names a spec's plots, tables and claims read, checked against what its cells record
//! (issue 45): a misspelt metric would otherwise draw an empty figure, fill a table row with
//! "—" or leave a claim "not comparable", and exit 0.
//!
//! A name is known when the task describes it ([`crate::tasks::Task::metrics`], the cell
//! metrics every task records, its coordinates) or when the cell protocol declares it for a
//! solver (a model's own statistics, e.g. `model_bytes` or `symmetry_index`, which each
//! ranker declares: [`dyad_kernels::Ranker::statistics`]). [`check_planned`] runs at plan
//! time with those names; [`check`] runs again once the experiment's cells are computed,
//! with the names they record besides, before its tables and figures are written. The error
//! names the spec's file, line and key, and lists the names there are.

use crate::analysis::results::ExperimentResults;
use crate::engine::plan::SolverInstance;
use crate::spec::profile::Profile;
use crate::spec::{LoadedSpec, SpecError, XAxis};
use crate::tasks::{CELL_METRICS, CellProtocol, Task};
use std::collections::BTreeSet;

/// The metric and coordinate names a task describes and its protocol declares for the
/// solvers of a plan.
fn declared(
    task: &dyn Task,
    protocol: &dyn CellProtocol,
    solvers: &[SolverInstance],
) -> (BTreeSet<String>, BTreeSet<String>) {
    let metrics = task
        .metrics()
        .iter()
        .chain(CELL_METRICS)
        .map(|m| m.name)
        .chain(solvers.iter().flat_map(|sv| protocol.declared_metrics(sv)))
        .map(str::to_string)
        .collect();
    let coords = task.coordinates().iter().map(|c| c.to_string()).collect();
    (metrics, coords)
}

/// Every name the plan's plots, tables and claims read is declared (at plan time).
pub fn check_planned(
    spec: &LoadedSpec,
    profile: Profile,
    task: &dyn Task,
    protocol: &dyn CellProtocol,
    solvers: &[SolverInstance],
) -> Result<(), SpecError> {
    let (metrics, coords) = declared(task, protocol, solvers);
    check_names(spec, profile, task.name(), &metrics, &coords)
}

/// The metric and coordinate names the experiment's task describes and declares and its
/// cells record.
fn recorded(res: &ExperimentResults<'_>) -> (BTreeSet<String>, BTreeSet<String>) {
    let plan = res.plan;
    let (mut metrics, mut coords) = declared(plan.task, plan.protocol.as_ref(), &plan.solvers);
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
    let (metrics, coords) = recorded(res);
    check_names(
        &res.plan.spec,
        res.plan.profile,
        res.plan.task.name(),
        &metrics,
        &coords,
    )
}

fn check_names(
    spec: &LoadedSpec,
    profile: Profile,
    task: &str,
    metrics: &BTreeSet<String>,
    coords: &BTreeSet<String>,
) -> Result<(), SpecError> {
    let unknown = |what: String, path: &[&str], name: &str, with_coords: bool| {
        let mut names: Vec<&str> = metrics.iter().map(String::as_str).collect();
        if with_coords {
            names.extend(coords.iter().map(String::as_str));
        }
        spec.error_at_key(
            path,
            format!(
                "key `{}`: {what} names \"{name}\", which neither task `{task}` nor its cells \
                 record (they record: {})",
                path.iter()
                    .filter(|k| k.parse::<usize>().is_err())
                    .copied()
                    .collect::<Vec<_>>()
                    .join("."),
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
        if c.profile.is_some_and(|p| p != profile) {
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
