//! `kind = "curves"` (the default): one panel per data set, one series per solver (and per
//! evaluated set) against steps, seconds, k or a coordinate. With `envelope`, a solver grid's
//! instances are one series, the best at every x; with `relative_to`, every series is its
//! difference to one solver, paired by repeat; `overlays` (the paper's points) are drawn in
//! every panel.

use super::super::{
    Colours, drawn_datasets, overlay_series, panel_caption, reference, solver_drawn,
};
use super::PlotKind;
use crate::analysis::results::{CurvePoint, ExperimentResults, Stat};
use crate::analysis::stats::envelope;
use crate::presentation::layout::{Panel, Series};
use crate::spec::{ErrorBars, PlotSpec, Spec, XAxis};

pub static CURVES: PlotKind = PlotKind {
    name: "curves",
    reads: &["envelope", "relative_to", "overlays"],
    check,
    panels,
};

fn check(spec: &Spec, p: &PlotSpec) -> Result<(), (&'static str, String)> {
    if p.x == XAxis::Param {
        return Err((
            "x",
            "`x = \"param\"` (one point per data set) is the kind \"param\"".into(),
        ));
    }
    if let Some(r) = &p.relative_to {
        let named = spec
            .solvers
            .iter()
            .any(|sv| sv.label.as_deref() == Some(r.as_str()) || sv.name.get_ref() == r);
        if !named || p.x == XAxis::Seconds || p.envelope {
            return Err((
                "relative_to",
                format!(
                    "`relative_to` names a solver of the spec (label or registry name, got \
                     \"{r}\"), pairs by step, k or coordinate (not `x = \"seconds\"`) and is \
                     not an envelope"
                ),
            ));
        }
    }
    if p.envelope && !matches!(p.x, XAxis::Step | XAxis::Seconds) {
        return Err((
            "envelope",
            "`envelope` needs `x = \"step\"` or `x = \"seconds\"`".into(),
        ));
    }
    Ok(())
}

fn panels<'p>(res: &ExperimentResults<'_>, plot: &'p PlotSpec, sets: &[String]) -> Vec<Panel<'p>> {
    let plan = res.plan;
    let colours = Colours::new(plan, plot, plot.envelope);
    drawn_datasets(plan, plot)
        .map(|(di, d)| {
            let mut series = Vec::new();
            // With `envelope`, the instances of one grid are one series (drawn at its first
            // instance, in that instance's colour).
            let higher = plan.metric(&plot.metric).higher_is_better;
            let relative = plot.relative_to.as_ref().and_then(|r| {
                plan.solvers
                    .iter()
                    .position(|sv| sv.label == *r || sv.name == *r)
            });
            for (si, sv) in plan.solvers.iter().enumerate() {
                if !solver_drawn(plot, sv) {
                    continue;
                }
                let members: Vec<usize> = if plot.envelope {
                    if plan.solvers[..si].iter().any(|o| o.series == sv.series) {
                        continue;
                    }
                    (si..plan.solvers.len())
                        .filter(|&o| plan.solvers[o].series == sv.series)
                        .collect()
                } else {
                    vec![si]
                };
                let label = if members.len() > 1 {
                    format!("{} (best of {})", sv.series, members.len())
                } else {
                    sv.label.clone()
                };
                for (seti, set) in sets.iter().enumerate() {
                    let curve = |m: usize| match relative {
                        Some(r) if r != m => {
                            let diff =
                                res.difference_curve(di, m, r, set, &plot.metric, &plot.x, plot.k);
                            if plot.error_bars != ErrorBars::SdMethod {
                                return diff;
                            }
                            // The difference of the means, with the solver's own spread at
                            // the same x (over its repeats).
                            let own = res.curve(di, m, set, &plot.metric, &plot.x, plot.k);
                            diff.into_iter()
                                .filter_map(|p| {
                                    let o = own.iter().find(|o| o.x == p.x)?;
                                    Some(CurvePoint {
                                        x: p.x,
                                        y: Stat {
                                            sd: o.y.sd,
                                            sem: o.y.sem,
                                            ..p.y
                                        },
                                    })
                                })
                                .collect()
                        }
                        // The reference itself: the zero line at its own x values.
                        Some(_) => res
                            .curve(di, m, set, &plot.metric, &plot.x, plot.k)
                            .into_iter()
                            .map(|p| CurvePoint {
                                x: p.x,
                                y: Stat {
                                    mean: 0.0,
                                    sd: 0.0,
                                    sem: 0.0,
                                    n: p.y.n,
                                },
                            })
                            .collect(),
                        None => res.curve(di, m, set, &plot.metric, &plot.x, plot.k),
                    };
                    let curves: Vec<Vec<CurvePoint>> = members.iter().map(|&m| curve(m)).collect();
                    let points = if members.len() > 1 {
                        envelope(&curves, higher)
                    } else {
                        curves.into_iter().next().unwrap_or_default()
                    };
                    if points.is_empty() {
                        continue;
                    }
                    let name = if sets.len() > 1 {
                        format!("{label} ({set})")
                    } else {
                        label.clone()
                    };
                    // Train/validation curves are their test curve's colour, dashed; other
                    // sets (e.g. the simulated raters' per-query sets) get colours of their own.
                    let evaluated = ["test", "train", "validation"].contains(&set.as_str());
                    let shade = if evaluated { 0 } else { seti };
                    series.push(Series {
                        name,
                        color: colours.solver(si, shade),
                        dashed: set == "train" || set == "validation" || relative == Some(si),
                        scatter: false,
                        points,
                    });
                }
            }
            if let Some(r) = &plot.reference {
                let set = sets.iter().find(|s| *s == "test").unwrap_or(&sets[0]);
                let points = (0..plan.solvers.len())
                    .map(|si| res.curve(di, si, set, &r.metric, &plot.x, plot.k))
                    .find(|p| !p.is_empty());
                series.extend(points.map(|points| reference(r, points)));
            }
            series.extend(overlay_series(plot, &colours));
            let chance = plot.chance.then(|| {
                let set = sets.iter().find(|s| *s == "test").unwrap_or(&sets[0]);
                (0..plan.solvers.len())
                    .flat_map(|si| res.curve(di, si, set, "chance", &XAxis::Step, None))
                    .map(|p| p.y.mean)
                    .next()
            });
            Panel {
                plot,
                caption: panel_caption(d),
                series,
                chance: chance.flatten(),
            }
        })
        .collect()
}
