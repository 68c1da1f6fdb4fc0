//! Hyper-parameters chosen at the edge of their grid, and fits that stopped at an iteration
//! cap: a tuned value at the lowest or highest grid point may only mean the grid stopped too
//! soon, and a fit at its cap has not converged, so the report flags both beside each
//! experiment (issue 42 §4) instead of letting a verdict rest on them unseen.
//!
//! Choices are read from the cells: the candidate a cell kept (`tuned`, the retrieval
//! task's hold-out choice) and the per-x-value records `chosen_<param>` of tasks that choose
//! per x value (pair ranking's λ, k, width per labels-per-class). A parameter counts when it
//! takes at least two distinct numeric values over the solver's `tune` candidates. Caps are
//! read from the records `iterations` against the solver's `max_iter` parameter, and the
//! stationarity residuals of convex fits (full KR's `‖∇E‖/‖∇E(0)‖`) from the records
//! `stationarity`: one above [`STATIONARY`] is a fit that did not reach its optimum.

use crate::analysis::results::ExperimentResults;
use std::collections::BTreeMap;

/// How often one tuned parameter of one solver instance was chosen at its grid's edges.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeCount {
    /// Legend label of the solver instance.
    pub solver: String,
    /// The instance's index in the plan's solvers.
    pub instance: usize,
    pub param: String,
    /// The grid's values, ascending.
    pub grid: Vec<f64>,
    /// Choices at the lowest value, at the highest, and in all.
    pub low: usize,
    pub high: usize,
    pub choices: usize,
}

impl EdgeCount {
    /// More than half of the choices sit on one edge: the grid does not bracket the choice.
    pub fn flagged(&self) -> bool {
        2 * self.low.max(self.high) > self.choices
    }
}

/// How many chosen fits of a solver instance stopped at their iteration cap.
#[derive(Debug, Clone, PartialEq)]
pub struct CapCount {
    pub solver: String,
    pub cap: u64,
    pub at_cap: usize,
    pub fits: usize,
}

/// A stationarity residual above this is not an optimum (Newton ends orders of magnitude
/// lower: its stopping rule is a relative decrease of `E` below 1e-10).
pub const STATIONARY: f64 = 1e-3;

/// The stationarity residuals of a solver instance's chosen fits.
#[derive(Debug, Clone, PartialEq)]
pub struct StationarityCount {
    pub solver: String,
    pub fits: usize,
    /// The largest residual.
    pub max: f64,
    /// The plan's indices of the cells with a fit whose residual exceeds [`STATIONARY`] (or
    /// is not a number), once per such fit.
    pub above: Vec<usize>,
}

/// Numeric values of `param` over the candidates, ascending and distinct.
fn grid_of(tune: &[toml::Value], param: &str) -> Vec<f64> {
    let mut v: Vec<f64> = tune
        .iter()
        .filter_map(|t| t.get(param))
        .filter_map(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

fn json_number(v: Option<&serde_json::Value>) -> Option<f64> {
    v.and_then(serde_json::Value::as_f64)
}

/// Edge counts of every tuned parameter of every solver instance with a grid.
pub fn edges(res: &ExperimentResults<'_>) -> Vec<EdgeCount> {
    let plan = res.plan;
    let mut out = Vec::new();
    for (si, sv) in plan.solvers.iter().enumerate() {
        if sv.tune.len() < 2 {
            continue;
        }
        let mut params: Vec<String> = sv
            .tune
            .iter()
            .filter_map(|t| t.as_table())
            .flat_map(|t| t.keys().cloned())
            .collect();
        params.sort();
        params.dedup();
        for param in params {
            let grid = grid_of(&sv.tune, &param);
            if grid.len() < 2 {
                continue;
            }
            let (lo, hi) = (grid[0], grid[grid.len() - 1]);
            let mut count = EdgeCount {
                solver: sv.label.clone(),
                instance: si,
                param: param.clone(),
                grid: grid.clone(),
                low: 0,
                high: 0,
                choices: 0,
            };
            let per_x = format!("chosen_{param}");
            for (cell, r) in plan.cells.iter().zip(&res.cells) {
                let Some(r) = r else { continue };
                if cell.solver != si {
                    continue;
                }
                let recorded: Vec<f64> = r
                    .records
                    .iter()
                    .filter(|x| x.metric == per_x && x.coord.is_some())
                    .map(|x| x.value)
                    .collect();
                let chosen = if recorded.is_empty() {
                    json_number(r.tuned.as_ref().and_then(|t| t.get(&param)))
                        .into_iter()
                        .collect()
                } else {
                    recorded
                };
                for v in chosen {
                    count.choices += 1;
                    count.low += usize::from(v == lo);
                    count.high += usize::from(v == hi);
                }
            }
            if count.choices > 0 {
                out.push(count);
            }
        }
    }
    out
}

/// The iteration cap of a solver instance: its `max_iter`, or, for a tuned instance (whose
/// canonical form is `{"params", "tune": [candidates]}`), the candidates' common `max_iter`
/// (`None` when they differ).
pub fn cap_of(canonical: &serde_json::Value) -> Option<u64> {
    let cap = |v: &serde_json::Value| json_number(v.get("max_iter")).map(|c| c as u64);
    match canonical.get("tune").and_then(|t| t.as_array()) {
        None => cap(canonical),
        Some(candidates) => {
            let caps: Vec<Option<u64>> = candidates.iter().map(cap).collect();
            let first = *caps.first()?;
            caps.iter().all(|c| *c == first).then_some(first).flatten()
        }
    }
}

/// Fits at their cap, per solver instance with a `max_iter` parameter and `iterations`
/// records.
pub fn caps(res: &ExperimentResults<'_>) -> Vec<CapCount> {
    let plan = res.plan;
    let mut by: BTreeMap<usize, CapCount> = BTreeMap::new();
    for (cell, r) in plan.cells.iter().zip(&res.cells) {
        let Some(r) = r else { continue };
        let sv = &plan.solvers[cell.solver];
        let Some(cap) = cap_of(&sv.canonical) else {
            continue;
        };
        for x in r.records.iter().filter(|x| x.metric == "iterations") {
            let c = by.entry(cell.solver).or_insert(CapCount {
                solver: sv.label.clone(),
                cap,
                at_cap: 0,
                fits: 0,
            });
            c.fits += 1;
            c.at_cap += usize::from(x.value as u64 >= cap);
        }
    }
    by.into_values().collect()
}

/// Stationarity residuals per solver instance with `stationarity` records.
pub fn stationarity(res: &ExperimentResults<'_>) -> Vec<StationarityCount> {
    let plan = res.plan;
    let mut by: BTreeMap<usize, StationarityCount> = BTreeMap::new();
    for (ci, (cell, r)) in plan.cells.iter().zip(&res.cells).enumerate() {
        let Some(r) = r else { continue };
        for x in r.records.iter().filter(|x| x.metric == "stationarity") {
            let c = by.entry(cell.solver).or_insert(StationarityCount {
                solver: plan.solvers[cell.solver].label.clone(),
                fits: 0,
                max: 0.0,
                above: Vec::new(),
            });
            c.fits += 1;
            c.max = if x.value.is_finite() {
                c.max.max(x.value)
            } else {
                f64::INFINITY
            };
            if x.value.is_nan() || x.value > STATIONARY {
                c.above.push(ci);
            }
        }
    }
    by.into_values().collect()
}

/// The spec's choice that keeps this edge on purpose (its `edges` name the instance's label,
/// series or registry name and the parameter), if any.
pub fn decision<'a>(res: &ExperimentResults<'a>, x: &EdgeCount) -> Option<&'a crate::spec::Choice> {
    let sv = &res.plan.solvers[x.instance];
    res.plan.spec.spec.choices.iter().find(|c| {
        c.edges
            .iter()
            .any(|e| e.param == x.param && sv.answers_to(&e.solver))
    })
}

/// The flagged edges among `edges` (the experiment's [`edges`]) of the solver instances
/// `named` accepts, one phrase per series and parameter (every rank of a grid summed): what a
/// verdict resting on them says (issue 42 §4), with the choice that keeps the edge when the
/// spec records one.
pub fn flagged_phrases(
    res: &ExperimentResults<'_>,
    edges: &[EdgeCount],
    named: impl Fn(&crate::engine::plan::SolverInstance) -> bool,
) -> Vec<String> {
    let mut by: BTreeMap<(String, String), (EdgeCount, usize, Option<String>)> = BTreeMap::new();
    for x in edges.iter().filter(|x| x.flagged()) {
        let sv = &res.plan.solvers[x.instance];
        if !named(sv) {
            continue;
        }
        let kept = decision(res, x).map(|c| c.topic.clone());
        let entry = by
            .entry((sv.series.clone(), x.param.clone()))
            .or_insert_with(|| {
                let zero = EdgeCount {
                    low: 0,
                    high: 0,
                    choices: 0,
                    ..x.clone()
                };
                (zero, 0, kept.clone())
            });
        entry.0.low += x.low;
        entry.0.high += x.high;
        entry.0.choices += x.choices;
        entry.1 += 1;
        if entry.2.is_none() {
            entry.2 = kept;
        }
    }
    by.into_iter()
        .map(|((series, param), (x, instances, kept))| {
            let who = if instances > 1 {
                format!("{series} ({instances} instances)")
            } else {
                x.solver.clone()
            };
            let side = if x.high >= x.low {
                format!("highest in {} of {}", x.high, x.choices)
            } else {
                format!("lowest in {} of {}", x.low, x.choices)
            };
            let kept = kept
                .map(|t| format!(" (kept on purpose: see the choice \"{t}\")"))
                .unwrap_or_default();
            format!("{who} {param} chosen at its grid's {side} choices{kept}")
        })
        .collect()
}

/// The report's line on grid edges, caps and stationarity, `None` when the experiment tunes
/// nothing, caps nothing and records no residual.
pub fn summary(res: &ExperimentResults<'_>) -> Option<String> {
    let e = edges(res);
    let c = caps(res);
    let st = stationarity(res);
    if e.is_empty() && c.is_empty() && st.is_empty() {
        return None;
    }
    let show = |v: f64| {
        if v != 0.0 && (v.abs() < 1e-3 || v.abs() >= 1e4) {
            format!("{v:e}")
        } else {
            format!("{v}")
        }
    };
    let mut parts: Vec<String> = e
        .iter()
        .map(|x| {
            let kept = match decision(res, x) {
                Some(c) if x.flagged() => format!(" (kept on purpose: \"{}\")", c.topic),
                _ => String::new(),
            };
            format!(
                "{}{} {} over {{{}}}: lowest {} / highest {} of {} choices{kept}",
                if x.flagged() { "⚠ " } else { "" },
                x.solver,
                x.param,
                x.grid
                    .iter()
                    .map(|&v| show(v))
                    .collect::<Vec<_>>()
                    .join(", "),
                x.low,
                x.high,
                x.choices
            )
        })
        .collect();
    parts.extend(c.iter().map(|x| {
        format!(
            "{}{} stopped at its cap of {} iterations in {} of {} chosen fits",
            if x.at_cap > 0 { "⚠ " } else { "" },
            x.solver,
            x.cap,
            x.at_cap,
            x.fits
        )
    }));
    parts.extend(st.iter().map(|x| {
        format!(
            "{}{} ends at a stationarity residual ‖∇E‖/‖∇E(0)‖ of at most {:.1e} over {} chosen \
             fits ({} above {STATIONARY:e})",
            if x.above.is_empty() { "" } else { "⚠ " },
            x.solver,
            x.max,
            x.fits,
            x.above.len()
        )
    }));
    let flagged = e.iter().filter(|x| x.flagged()).count()
        + c.iter().filter(|x| x.at_cap > 0).count()
        + st.iter().filter(|x| !x.above.is_empty()).count();
    let kept = e
        .iter()
        .filter(|x| x.flagged() && decision(res, x).is_some())
        .count();
    let kept = if kept > 0 {
        format!(", {kept} of them kept on purpose with a reason in the experiment's choices")
    } else {
        String::new()
    };
    Some(format!(
        "Tuning and convergence{}: {}.",
        if flagged > 0 {
            format!(
                " ({flagged} flagged ⚠{kept}: a choice on a grid edge in most cells is not shown \
                 to be tuned, and a fit at its cap or above the residual bound is not converged; \
                 verdicts resting on them say less)"
            )
        } else {
            String::new()
        },
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_the_distinct_numeric_values_in_order() {
        let tune: Vec<toml::Value> = [
            "lambda = 1.0\nk = 2",
            "lambda = 0.01\nk = 2",
            "lambda = 1.0\nk = 4",
        ]
        .iter()
        .map(|s| toml::Value::Table(s.parse().unwrap()))
        .collect();
        assert_eq!(grid_of(&tune, "lambda"), vec![0.01, 1.0]);
        assert_eq!(grid_of(&tune, "k"), vec![2.0, 4.0]);
        assert!(grid_of(&tune, "eta").is_empty());
    }

    #[test]
    fn the_cap_of_a_tuned_solver_is_its_candidates_common_max_iter() {
        use serde_json::json;
        assert_eq!(cap_of(&json!({"max_iter": 100, "lambda": 1.0})), Some(100));
        assert_eq!(cap_of(&json!({"lambda": 1.0})), None);
        let tuned = json!({
            "params": {"max_iter": 1000, "lambda": 0.01},
            "tune": [{"max_iter": 1000, "lambda": 1e-6}, {"max_iter": 1000, "lambda": 1.0}],
        });
        assert_eq!(cap_of(&tuned), Some(1000));
        let varied = json!({
            "params": {"max_iter": 1000},
            "tune": [{"max_iter": 10}, {"max_iter": 1000}],
        });
        assert_eq!(cap_of(&varied), None);
        assert_eq!(cap_of(&json!({"params": {}, "tune": []})), None);
    }

    #[test]
    fn a_parameter_is_flagged_when_most_choices_sit_on_one_edge() {
        let c = |low, high, choices| EdgeCount {
            solver: "TR".into(),
            instance: 0,
            param: "lambda".into(),
            grid: vec![0.1, 1.0, 10.0],
            low,
            high,
            choices,
        };
        assert!(c(6, 0, 10).flagged());
        assert!(c(0, 6, 10).flagged());
        assert!(!c(5, 0, 10).flagged());
        assert!(!c(3, 3, 10).flagged());
    }
}
