//! `kind = "scatter"`: per data set, every drawn solver's mean at each value of a coordinate
//! (`x`, e.g. `"category"`) against the mean of the solver named by `versus` at the same
//! value, with the line y = x (FuncISH Fig. S4: per-category AUCs of two dictionary sizes).

use super::super::{Colours, drawn_datasets, panel_caption, solver_drawn};
use super::PlotKind;
use crate::analysis::results::{CurvePoint, ExperimentResults, Stat};
use crate::presentation::layout::{Panel, Series};
use crate::spec::{PlotSpec, Spec, XAxis};
use plotters::style::BLACK;

pub static SCATTER: PlotKind = PlotKind {
    name: "scatter",
    reads: &["versus"],
    check,
    panels,
};

fn check(_: &Spec, p: &PlotSpec) -> Result<(), (&'static str, String)> {
    if p.versus.is_none() {
        return Err((
            "kind",
            "kind \"scatter\" needs `versus`, the solver on the x axis".into(),
        ));
    }
    if !matches!(p.x, XAxis::Named(_)) {
        return Err((
            "x",
            "kind \"scatter\" pairs solvers by a coordinate: `x` must name one (e.g. \
             \"category\")"
                .into(),
        ));
    }
    Ok(())
}

fn panels<'p>(res: &ExperimentResults<'_>, plot: &'p PlotSpec, sets: &[String]) -> Vec<Panel<'p>> {
    let Some(versus) = plot.versus.as_deref() else {
        return Vec::new();
    };
    let plan = res.plan;
    let Some(vi) = plan
        .solvers
        .iter()
        .position(|sv| sv.label == versus || sv.name == versus)
    else {
        return Vec::new();
    };
    let colours = Colours::new(plan, plot, false);
    drawn_datasets(plan, plot)
        .map(|(di, d)| {
            let mut series = Vec::new();
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for set in sets {
                let base: std::collections::BTreeMap<u64, f64> = res
                    .curve(di, vi, set, &plot.metric, &plot.x, plot.k)
                    .into_iter()
                    .map(|p| (p.x.to_bits(), p.y.mean))
                    .collect();
                for (si, sv) in plan.solvers.iter().enumerate() {
                    if si == vi || !solver_drawn(plot, sv) {
                        continue;
                    }
                    let points: Vec<CurvePoint> = res
                        .curve(di, si, set, &plot.metric, &plot.x, plot.k)
                        .into_iter()
                        .filter_map(|p| base.get(&p.x.to_bits()).map(|&x| CurvePoint { x, y: p.y }))
                        .collect();
                    for q in &points {
                        lo = lo.min(q.x).min(q.y.mean);
                        hi = hi.max(q.x).max(q.y.mean);
                    }
                    if !points.is_empty() {
                        series.push(Series {
                            name: if sets.len() > 1 {
                                format!("{} ({set})", sv.label)
                            } else {
                                sv.label.clone()
                            },
                            color: colours.solver(si, 0),
                            dashed: false,
                            points,
                            scatter: true,
                        });
                    }
                }
            }
            if lo < hi {
                let at = |v: f64| CurvePoint {
                    x: v,
                    y: Stat {
                        mean: v,
                        sd: 0.0,
                        sem: 0.0,
                        n: 1,
                    },
                };
                series.push(Series {
                    name: "y = x".into(),
                    color: BLACK,
                    dashed: true,
                    points: vec![at(lo), at(hi)],
                    scatter: false,
                });
            }
            Panel {
                plot,
                caption: panel_caption(d),
                series,
                chance: None,
            }
        })
        .collect()
}
