//! `kind = "param"` (the kind of `x = "param"`): one panel over all data sets, x = a numeric
//! parameter of each data set (`x_param`), one series per solver (a solver grid over that
//! parameter is one series), optionally a power law fitted to each (`fit_power`) and series
//! given as numbers (`overlays`, e.g. literature runtimes, dashed).

use super::super::{Colours, drawn_datasets, overlay_series, reference, solver_drawn};
use super::PlotKind;
use crate::analysis::results::{CurvePoint, ExperimentResults};
use crate::analysis::stats::{SlopeBound, power_fit, slope_bound};
use crate::presentation::layout::{Panel, Series};
use crate::spec::{PlotSpec, Spec, XAxis};

pub static PARAM: PlotKind = PlotKind {
    name: "param",
    reads: &["x_param", "fit_power", "overlays"],
    check,
    panels,
};

fn check(_: &Spec, p: &PlotSpec) -> Result<(), (&'static str, String)> {
    if p.x != XAxis::Param {
        return Err(("x", "kind \"param\" needs `x = \"param\"`".into()));
    }
    if p.x_param.is_none() {
        return Err((
            "x",
            "`x = \"param\"` goes with `x_param`, the data sets' parameter on the x axis".into(),
        ));
    }
    Ok(())
}

fn panels<'p>(res: &ExperimentResults<'_>, plot: &'p PlotSpec, sets: &[String]) -> Vec<Panel<'p>> {
    plot.x_param
        .as_ref()
        .map(|param| vec![param_panel(res, plot, sets, param)])
        .unwrap_or_default()
}

/// One panel over all data sets: x = each data set's parameter, one series per solver, plus
/// the given overlays.
fn param_panel<'p>(
    res: &ExperimentResults<'_>,
    plot: &'p PlotSpec,
    sets: &[String],
    param: &[String],
) -> Panel<'p> {
    let plan = res.plan;
    let set = sets.iter().find(|s| *s == "test").unwrap_or(&sets[0]);
    let colours = Colours::new(plan, plot, true);
    let mut series = Vec::new();
    // Instances of one spec solver whose grid sets the parameter (LORETA at ranks 10 ...
    // 400) form one series per data set, in the colour of its first instance.
    let mut grid_series: Vec<(String, usize, Vec<CurvePoint>)> = Vec::new();
    let several = drawn_datasets(plan, plot).count() > 1;
    let drawn = |sv: &crate::engine::plan::SolverInstance| solver_drawn(plot, sv);
    for (si, sv) in plan.solvers.iter().enumerate() {
        if !drawn(sv) {
            continue;
        }
        let Some(x) = param.iter().find_map(|p| {
            sv.grid_point
                .get(p)
                .and_then(crate::analysis::results::number)
        }) else {
            continue;
        };
        for (di, d) in drawn_datasets(plan, plot) {
            let Some(p) = res.point_at(di, si, set, &plot.metric, plot.k, x) else {
                continue;
            };
            let name = if several {
                format!("{} ({})", sv.series, d.id)
            } else {
                sv.series.clone()
            };
            match grid_series.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, _, pts)) => pts.push(p),
                None => grid_series.push((name, si, vec![p])),
            }
        }
    }
    // The grid's x range, where solvers without the parameter are drawn as levels.
    let grid_range = grid_series
        .iter()
        .flat_map(|(_, _, pts)| pts.iter().map(|p| p.x))
        .fold(None, |r: Option<(f64, f64)>, x| {
            Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))))
        });
    for (name, si, mut points) in grid_series {
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        series.push(Series {
            name,
            color: colours.solver(si, 0),
            dashed: false,
            scatter: false,
            points,
        });
    }
    for (si, sv) in plan.solvers.iter().enumerate() {
        if !drawn(sv) || param.iter().any(|p| sv.grid_point.contains_key(p)) {
            continue;
        }
        let points = res.param_series(si, set, &plot.metric, plot.k, param, &plot.datasets);
        if points.is_empty() {
            // A solver the parameter does not apply to (OASIS beside AROMA's r sweep): its
            // final value on each data set, dashed across the grid's range.
            let Some((lo, hi)) = grid_range else { continue };
            for (di, d) in drawn_datasets(plan, plot) {
                let Some(p) = res.point_at(di, si, set, &plot.metric, plot.k, lo) else {
                    continue;
                };
                let name = if several {
                    format!("{} ({})", sv.label, d.id)
                } else {
                    sv.label.clone()
                };
                series.push(Series {
                    name,
                    color: colours.solver(si, 0),
                    dashed: true,
                    scatter: false,
                    points: vec![p, CurvePoint { x: hi, ..p }],
                });
            }
            continue;
        }
        let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.y.mean)).collect();
        let name = match power_fit(&xy).filter(|_| plot.fit_power) {
            Some((_, b)) => match slope_bound(&xy, &res.lower_bound_xs(si, &plot.metric, param)) {
                SlopeBound::Exact => format!("{} (slope {b:.2})", sv.label),
                SlopeBound::AtLeast => {
                    format!("{} (slope >= {b:.2}: not saturated at largest x)", sv.label)
                }
                SlopeBound::Unknown => {
                    format!("{} (slope {b:.2}, unbounded: lower-bound points)", sv.label)
                }
            },
            None => sv.label.clone(),
        };
        series.push(Series {
            name,
            color: colours.solver(si, 0),
            dashed: false,
            scatter: false,
            points,
        });
    }
    if let Some(r) = &plot.reference {
        let points = (0..plan.solvers.len())
            .map(|si| res.param_series(si, set, &r.metric, plot.k, param, &plot.datasets))
            .find(|p| !p.is_empty());
        series.extend(points.map(|points| reference(r, points)));
    }
    series.extend(overlay_series(plot, &colours));
    let synthetic: Vec<&str> = drawn_datasets(plan, plot)
        .filter(|(_, d)| d.resolved.synthetic)
        .map(|(_, d)| d.id.as_str())
        .collect();
    let caption = if synthetic.is_empty() {
        "all data sets".to_string()
    } else {
        format!("SYNTHETIC stand-in data: {}", synthetic.join(", "))
    };
    Panel {
        plot,
        caption,
        series,
        chance: None,
    }
}
