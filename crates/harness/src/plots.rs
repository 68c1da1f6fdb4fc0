//! Figures (plotters, SVG and PNG): one image per plot spec, one panel per data set, one
//! series per solver (and per evaluated set), error bars = s.e.m. over repeats, the chance
//! line where the spec asks for it. Output bytes depend only on the results.
//!
//! The layout is computed here (not by plotters' chart builder) so that it can be checked:
//! [`layout`] returns every rectangle a reader sees (plot areas, tick labels, legend, titles)
//! and where each data point is drawn. Legends sit below the panels, outside every plot
//! area; titles and captions wrap (or shrink) to fit; axes span the data with a little
//! padding; log axes are labelled at decades (or 1-2-5 within a decade) with labels kept
//! apart. The SVG is at 1x; the PNG at [`PNG_SCALE`]x, anti-aliased, with the text drawn
//! glyph by glyph from the embedded DejaVu font's metrics.

use crate::results::{CurvePoint, ExperimentResults, Stat};
use crate::spec::{ErrorBars, PlotSpec, XAxis};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock};

/// Distinct hues (the papers' figures use one per method): Tableau's ten, then two more.
/// A plot's drawn solvers take them in spec order ([`Colours`]).
const PALETTE: [RGBColor; 12] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0xe7, 0xba, 0x52),
];

/// The colour of each solver of a plot: the solvers the plot draws take consecutive palette
/// entries in spec order, one per drawn solver (or one per series, where a grid's instances
/// are drawn as one series), so no two drawn solvers share a colour while the palette lasts
/// (a spec drawing more than [`PALETTE`]'s twelve wraps round), and a solver has the same
/// colour in every panel of the plot. Overlays take the entries after the solvers'; a set
/// other than train, validation and test shifts its solver's entry by the set's index.
struct Colours {
    slot: Vec<usize>,
    used: usize,
}

impl Colours {
    fn new(plan: &crate::plan::Plan, plot: &PlotSpec, by_series: bool) -> Self {
        let mut seen: Vec<&str> = Vec::new();
        let mut slot = Vec::with_capacity(plan.solvers.len());
        for sv in &plan.solvers {
            if !solver_drawn(plot, sv) {
                slot.push(0);
                continue;
            }
            let key = if by_series {
                sv.series.as_str()
            } else {
                sv.label.as_str()
            };
            slot.push(match seen.iter().position(|k| *k == key) {
                Some(i) if by_series => i,
                _ => {
                    seen.push(key);
                    seen.len() - 1
                }
            });
        }
        Colours {
            slot,
            used: seen.len(),
        }
    }

    /// Solver `si`'s colour, shifted by `shade` entries (other evaluated sets).
    fn solver(&self, si: usize, shade: usize) -> RGBColor {
        PALETTE[(self.slot[si] + shade) % PALETTE.len()]
    }

    /// The colour of the plot's `i`-th overlay, after every drawn solver's.
    fn overlay(&self, i: usize) -> RGBColor {
        PALETTE[(self.used + i) % PALETTE.len()]
    }
}

/// The embedded DejaVu Sans, registered under [`FONT`] for plotters' rasteriser.
fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// One line of a panel.
struct Series {
    name: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<CurvePoint>,
    /// Points only, no line (a scatter of one solver against another).
    scatter: bool,
}

/// Whether `plot` draws solver `sv`: its `solvers` (labels, registry names or a grid's series
/// label), else all.
fn solver_drawn(plot: &PlotSpec, sv: &crate::plan::SolverInstance) -> bool {
    plot.solvers.is_empty()
        || plot
            .solvers
            .iter()
            .any(|s| *s == sv.label || s == sv.name || *s == sv.series)
}

/// Whether `plot` draws data set `d` (its `datasets`, else all).
fn dataset_drawn(plot: &PlotSpec, d: &crate::plan::DatasetInstance) -> bool {
    plot.datasets.is_empty() || plot.datasets.contains(&d.id)
}

/// A panel's caption: the data set's id, marked when it is a stand-in.
fn panel_caption(d: &crate::plan::DatasetInstance) -> String {
    let tag = if d.resolved.synthetic {
        " [SYNTHETIC stand-in]"
    } else {
        ""
    };
    format!("{}{tag}", d.id)
}

struct Panel<'p> {
    /// The plot the panel belongs to: its axes, labels and error bars (a composite figure's
    /// panels come from several plots).
    plot: &'p PlotSpec,
    caption: String,
    series: Vec<Series>,
    chance: Option<f64>,
}

fn panels<'p>(res: &ExperimentResults<'_>, plot: &'p PlotSpec) -> Vec<Panel<'p>> {
    let plan = res.plan;
    let sets: Vec<String> = if plot.sets.is_empty() {
        plan.sets()
    } else {
        plot.sets.clone()
    };
    if let (XAxis::Param, Some(param)) = (&plot.x, &plot.x_param) {
        return vec![param_panel(res, plot, &sets, param)];
    }
    if let Some(versus) = &plot.scatter_versus {
        return scatter_panels(res, plot, &sets, versus);
    }
    let colours = Colours::new(plan, plot, plot.envelope);
    plan.datasets
        .iter()
        .enumerate()
        .filter(|(_, d)| dataset_drawn(plot, d))
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

/// `scatter_versus`: per data set, every drawn solver's per-coordinate means against the
/// named solver's, and the diagonal.
fn scatter_panels<'p>(
    res: &ExperimentResults<'_>,
    plot: &'p PlotSpec,
    sets: &[String],
    versus: &str,
) -> Vec<Panel<'p>> {
    let plan = res.plan;
    let Some(vi) = plan
        .solvers
        .iter()
        .position(|sv| sv.label == versus || sv.name == versus)
    else {
        return Vec::new();
    };
    let colours = Colours::new(plan, plot, false);
    plan.datasets
        .iter()
        .enumerate()
        .filter(|(_, d)| dataset_drawn(plot, d))
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

/// The series of a plot's reference metric: black, solid.
fn reference(r: &crate::spec::ReferenceSeries, points: Vec<CurvePoint>) -> Series {
    Series {
        name: r.label.clone(),
        color: BLACK,
        dashed: false,
        scatter: false,
        points,
    }
}

/// The best of several curves at every x of any of them: each curve's value at its last point
/// at or before x (curves with no point yet are left out), the best mean chosen with its
/// spread. `higher` says which way is better.
pub fn envelope(curves: &[Vec<CurvePoint>], higher: bool) -> Vec<CurvePoint> {
    let mut xs: Vec<f64> = curves.iter().flatten().map(|p| p.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .filter_map(|x| {
            curves
                .iter()
                .filter_map(|c| c.iter().take_while(|p| p.x <= x).last())
                .map(|p| p.y)
                .reduce(|a, b| {
                    let b_better = if higher {
                        b.mean > a.mean
                    } else {
                        b.mean < a.mean
                    };
                    if b_better { b } else { a }
                })
                .map(|y| CurvePoint { x, y })
        })
        .collect()
}

/// Least-squares fit of `log y = log a + b log x`; `None` with fewer than two usable points.
pub fn power_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = logs.len() as f64;
    if logs.len() < 2 {
        return None;
    }
    let (mx, my) = (
        logs.iter().map(|p| p.0).sum::<f64>() / n,
        logs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let b = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    Some(((my - b * mx).exp(), b))
}

/// What a fitted exponent says when some of the y values are only lower bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlopeBound {
    /// Every y is exact.
    Exact,
    /// The true exponent is at least the fitted one: no lower-bounded point lies left of the
    /// mean of log x, so raising its y cannot lower the least-squares slope (the slope's
    /// derivative in log y_i is (log x_i - mean log x) / Sxx).
    AtLeast,
    /// Some lower-bounded point lies left of the mean: the slope is not bounded.
    Unknown,
}

/// How the exponent of [`power_fit`] over `points` is bounded when the points at
/// `lower_xs` are lower bounds.
pub fn slope_bound(points: &[(f64, f64)], lower_xs: &[f64]) -> SlopeBound {
    let logs: Vec<f64> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, _)| x.ln())
        .collect();
    let lower: Vec<f64> = lower_xs
        .iter()
        .filter(|x| points.iter().any(|(px, _)| px == *x))
        .map(|x| x.ln())
        .collect();
    if lower.is_empty() || logs.is_empty() {
        return SlopeBound::Exact;
    }
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    // A point on the mean (to rounding) does not move the slope.
    let tol = 1e-9 * mean.abs().max(1.0);
    if lower.iter().all(|&l| l >= mean - tol) {
        SlopeBound::AtLeast
    } else {
        SlopeBound::Unknown
    }
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
    let drawn_set = |d: &crate::plan::DatasetInstance| dataset_drawn(plot, d);
    let several = plan.datasets.iter().filter(|d| drawn_set(d)).count() > 1;
    let drawn = |sv: &crate::plan::SolverInstance| solver_drawn(plot, sv);
    for (si, sv) in plan.solvers.iter().enumerate() {
        if !drawn(sv) {
            continue;
        }
        let Some(x) = param
            .iter()
            .find_map(|p| sv.grid_point.get(p).and_then(crate::results::number))
        else {
            continue;
        };
        for (di, d) in plan
            .datasets
            .iter()
            .enumerate()
            .filter(|(_, d)| drawn_set(d))
        {
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
            for (di, d) in plan
                .datasets
                .iter()
                .enumerate()
                .filter(|(_, d)| drawn_set(d))
            {
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
    for (oi, o) in plot.overlays.iter().enumerate() {
        let color = colours.overlay(oi);
        let mut points: Vec<CurvePoint> = o
            .points
            .iter()
            .map(|&[x, y]| CurvePoint {
                x,
                y: Stat {
                    mean: y,
                    sd: 0.0,
                    sem: 0.0,
                    n: 1,
                },
            })
            .collect();
        series.push(Series {
            name: o.label.clone(),
            color,
            dashed: false,
            scatter: false,
            points: points.clone(),
        });
        if let (Some(e), Some(to)) = (o.exponent, o.extrapolate_to) {
            // y = a x^e through the points (least squares for a in log space).
            let a = (o
                .points
                .iter()
                .map(|&[x, y]| y.ln() - e * x.ln())
                .sum::<f64>()
                / o.points.len() as f64)
                .exp();
            let from = o.points.iter().map(|p| p[0]).fold(f64::INFINITY, f64::min);
            points = (0..=24)
                .map(|i| {
                    let x = from * (to / from).powf(i as f64 / 24.0);
                    CurvePoint {
                        x,
                        y: Stat {
                            mean: a * x.powf(e),
                            sd: 0.0,
                            sem: 0.0,
                            n: 1,
                        },
                    }
                })
                .collect();
            series.push(Series {
                name: format!("{} extrapolated (x^{e})", o.label),
                color,
                dashed: true,
                scatter: false,
                points,
            });
        }
    }
    let synthetic: Vec<&str> = plan
        .datasets
        .iter()
        .filter(|d| d.resolved.synthetic && drawn_set(d))
        .map(|d| d.id.as_str())
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

// ---------------------------------------------------------------------------------------------
// Text metrics (from the embedded DejaVu font, so layout and drawing agree)
// ---------------------------------------------------------------------------------------------

/// What the layout needs of a TrueType font: advances, left side bearings, the character map
/// and the pair kerning of the `kern` table (all in font units).
struct FontMetrics {
    units_per_em: f64,
    /// hhea ascender - descender: the height ab_glyph (plotters' rasteriser) scales to.
    height: f64,
    advance: Vec<u16>,
    lsb: Vec<i16>,
    cmap: HashMap<u32, u16>,
    kern: HashMap<(u16, u16), i16>,
}

impl FontMetrics {
    fn parse(b: &[u8]) -> Option<FontMetrics> {
        let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_be_bytes([s[0], s[1]]));
        let i16_at = |o: usize| u16_at(o).map(|v| v as i16);
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        };
        let tables = u16_at(4)? as usize;
        let table = |tag: &[u8; 4]| {
            (0..tables)
                .map(|i| 12 + 16 * i)
                .find(|&r| b.get(r..r + 4) == Some(&tag[..]))
                .and_then(|r| u32_at(r + 8))
                .map(|o| o as usize)
        };
        let head = table(b"head")?;
        let hhea = table(b"hhea")?;
        let maxp = table(b"maxp")?;
        let hmtx = table(b"hmtx")?;
        let units_per_em = f64::from(u16_at(head + 18)?);
        let height = f64::from(i16_at(hhea + 4)?) - f64::from(i16_at(hhea + 6)?);
        let long = u16_at(hhea + 34)? as usize;
        let glyphs = u16_at(maxp + 4)? as usize;
        let (mut advance, mut lsb) = (Vec::with_capacity(glyphs), Vec::with_capacity(glyphs));
        for g in 0..glyphs {
            if g < long {
                advance.push(u16_at(hmtx + 4 * g)?);
                lsb.push(i16_at(hmtx + 4 * g + 2)?);
            } else {
                advance.push(*advance.last()?);
                lsb.push(i16_at(hmtx + 4 * long + 2 * (g - long))?);
            }
        }
        // cmap: the Windows Unicode BMP subtable (format 4).
        let mut cmap = HashMap::new();
        let c = table(b"cmap")?;
        let sub = (0..u16_at(c + 2)? as usize)
            .map(|i| c + 4 + 8 * i)
            .find(|&r| u16_at(r) == Some(3) && u16_at(r + 2) == Some(1))
            .and_then(|r| u32_at(r + 4))
            .map(|o| c + o as usize)
            .filter(|&s| u16_at(s) == Some(4))?;
        let segs = u16_at(sub + 6)? as usize / 2;
        let ends = sub + 14;
        let starts = ends + 2 * segs + 2;
        let deltas = starts + 2 * segs;
        let ranges = deltas + 2 * segs;
        for s in 0..segs {
            let (end, start) = (u16_at(ends + 2 * s)?, u16_at(starts + 2 * s)?);
            let (delta, ro) = (u16_at(deltas + 2 * s)?, u16_at(ranges + 2 * s)? as usize);
            for ch in start..=end.min(0xfffe) {
                let gid = if ro == 0 {
                    ch.wrapping_add(delta)
                } else {
                    match u16_at(ranges + 2 * s + ro + 2 * (ch - start) as usize)? {
                        0 => 0,
                        g => g.wrapping_add(delta),
                    }
                };
                if gid != 0 {
                    cmap.insert(u32::from(ch), gid);
                }
            }
        }
        // kern: horizontal format-0 subtables.
        let mut kern = HashMap::new();
        if let Some(k) = table(b"kern") {
            let mut sub = k + 4;
            for _ in 0..u16_at(k + 2)? {
                let (len, coverage) = (u16_at(sub + 2)? as usize, u16_at(sub + 4)?);
                if coverage >> 8 == 0 && coverage & 1 == 1 {
                    for p in 0..u16_at(sub + 6)? as usize {
                        let o = sub + 14 + 6 * p;
                        kern.insert((u16_at(o)?, u16_at(o + 2)?), i16_at(o + 4)?);
                    }
                }
                sub += len;
            }
        }
        Some(FontMetrics {
            units_per_em,
            height,
            advance,
            lsb,
            cmap,
            kern,
        })
    }

    fn glyph(&self, c: char) -> u16 {
        self.cmap.get(&(c as u32)).copied().unwrap_or(0)
    }

    fn advance(&self, g: u16) -> f64 {
        f64::from(self.advance.get(g as usize).copied().unwrap_or(0))
    }

    fn lsb(&self, g: u16) -> f64 {
        f64::from(self.lsb.get(g as usize).copied().unwrap_or(0))
    }

    fn kern(&self, a: u16, b: u16) -> f64 {
        f64::from(self.kern.get(&(a, b)).copied().unwrap_or(0))
    }

    /// Pen positions (font units) of each character of `text`, and the total advance.
    fn pens(&self, text: &str) -> (Vec<(char, u16, f64)>, f64) {
        let mut pen = 0.0;
        let mut prev = None;
        let mut out = Vec::new();
        for c in text.chars() {
            let g = self.glyph(c);
            if let Some(p) = prev {
                pen += self.kern(p, g);
            }
            out.push((c, g, pen));
            pen += self.advance(g);
            prev = Some(g);
        }
        (out, pen)
    }
}

fn metrics(bold: bool) -> &'static FontMetrics {
    static REGULAR: OnceLock<FontMetrics> = OnceLock::new();
    static BOLD: OnceLock<FontMetrics> = OnceLock::new();
    let (cell, bytes) = if bold {
        (&BOLD, dejavu::sans::bold())
    } else {
        (&REGULAR, dejavu::sans::regular())
    };
    cell.get_or_init(|| FontMetrics::parse(bytes).expect("the embedded DejaVu font parses"))
}

/// Width of `text` at `em` pixels per em.
fn text_width(text: &str, em: f64, bold: bool) -> f64 {
    let m = metrics(bold);
    m.pens(text).1 * em / m.units_per_em
}

/// A font size (pixels per em at 1x) adjusted so that the rasteriser's scale at
/// [`PNG_SCALE`] is an even number of pixels: plotters places glyphs relative to half that
/// scale, truncated, so an odd or fractional scale shifts glyphs up or down by a pixel.
fn em(nominal: f64) -> f64 {
    let m = metrics(false);
    let ratio = m.height / m.units_per_em;
    let ab = nominal * f64::from(PNG_SCALE) * ratio;
    (2.0 * (ab / 2.0).round()) / (f64::from(PNG_SCALE) * ratio)
}

// ---------------------------------------------------------------------------------------------
// Layout (public so that tests can check the figure as a reader would)
// ---------------------------------------------------------------------------------------------

/// PNGs are written at this multiple of the SVG's size (print resolution: 192 dpi at 96 CSS
/// pixels per inch). The report shows them at the SVG size.
pub const PNG_SCALE: u32 = 2;
/// The PNG's lines and shapes are drawn at this multiple of the PNG's resolution and
/// box-filtered down (anti-aliasing); text is rasterised at the PNG's resolution.
const SUPERSAMPLE: u32 = 2;
/// The registered font's name; in the SVG it reads as a font-family list with a fallback.
const FONT: &str = "DejaVu Sans, sans-serif";

const MARGIN: f64 = 10.0;
const LINE: f64 = 1.25;
/// Baseline below the top of a line's box, and box bottom below the baseline, in em.
const ASCENT: f64 = 0.76;
const DESCENT: f64 = 0.24;
const TICK_LEN: f64 = 4.0;
const MARKER_R: f64 = 3.0;
const SWATCH: f64 = 28.0;

/// An axis-aligned rectangle in figure pixels (SVG units; PNG pixels / [`PNG_SCALE`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }
    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }
    /// Whether the interiors overlap (touching edges do not).
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    pub fn contains(&self, (x, y): (f64, f64)) -> bool {
        x >= self.x0 && x <= self.x1 && y >= self.y0 && y <= self.y1
    }
    /// Whether `o` lies within this rectangle (to a tenth of a pixel).
    pub fn encloses(&self, o: &Rect) -> bool {
        let t = 0.1;
        o.x0 >= self.x0 - t && o.x1 <= self.x1 + t && o.y0 >= self.y0 - t && o.y1 <= self.y1 + t
    }
    fn grow(&self, d: f64) -> Rect {
        Rect {
            x0: self.x0 - d,
            y0: self.y0 - d,
            x1: self.x1 + d,
            y1: self.y1 + d,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Center,
    Right,
}

/// One line of text: `(x, y)` is the anchor on the baseline (for vertical text, reading
/// upwards, `x` is the baseline and `y` the anchor along it).
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub text: String,
    pub x: f64,
    pub y: f64,
    /// Pixels per em.
    pub em: f64,
    pub bold: bool,
    pub align: Align,
    pub vertical: bool,
}

impl Label {
    pub fn width(&self) -> f64 {
        text_width(&self.text, self.em, self.bold)
    }

    /// The line's box: its advance width by ascent + descent.
    pub fn rect(&self) -> Rect {
        let w = self.width();
        let start = match self.align {
            Align::Left => 0.0,
            Align::Center => -w / 2.0,
            Align::Right => -w,
        };
        let (a, d) = (ASCENT * self.em, DESCENT * self.em);
        if self.vertical {
            Rect {
                x0: self.x - a,
                x1: self.x + d,
                y0: self.y - start - w,
                y1: self.y - start,
            }
        } else {
            Rect {
                x0: self.x + start,
                x1: self.x + start + w,
                y0: self.y - a,
                y1: self.y + d,
            }
        }
    }
}

/// One axis: its range (data units), scale and ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub log: bool,
    pub lo: f64,
    pub hi: f64,
    /// Labelled ticks.
    pub ticks: Vec<f64>,
    /// Unlabelled ticks (the 2..9 multiples on a log axis).
    pub minor: Vec<f64>,
}

impl Axis {
    /// Position of `v` along the axis, 0 at `lo` and 1 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

/// One panel: its plot area, axes, texts, and the pixel position of every point drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct PanelLayout {
    /// The panel's cell in the figure.
    pub cell: Rect,
    /// The plot area (the frame of the axes).
    pub plot: Rect,
    pub x: Axis,
    pub y: Axis,
    pub caption: Vec<Label>,
    pub x_ticks: Vec<Label>,
    pub y_ticks: Vec<Label>,
    pub x_title: Vec<Label>,
    pub y_title: Vec<Label>,
    /// Every data point (marker centre) and error-bar end drawn, in figure pixels.
    pub points: Vec<(f64, f64)>,
}

impl PanelLayout {
    /// Figure pixels of data coordinates.
    pub fn px(&self, x: f64, y: f64) -> (f64, f64) {
        (
            self.plot.x0 + self.x.frac(x) * self.plot.width(),
            self.plot.y1 - self.y.frac(y) * self.plot.height(),
        )
    }
}

/// One legend entry: a line sample (with the series' marker) and its name.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    pub swatch: Rect,
    pub lines: Vec<Label>,
    pub color: (u8, u8, u8),
    pub dashed: bool,
    pub marker: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Legend {
    pub frame: Rect,
    pub entries: Vec<LegendEntry>,
}

/// Where everything of a figure goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub title: Vec<Label>,
    pub panels: Vec<PanelLayout>,
    /// Below the panels, outside every plot area.
    pub legend: Option<Legend>,
}

impl Layout {
    /// The SVG's size in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.width.ceil() as u32, self.height.ceil() as u32)
    }

    /// The PNG's size in pixels.
    pub fn png_size(&self) -> (u32, u32) {
        let (w, h) = self.size();
        (w * PNG_SCALE, h * PNG_SCALE)
    }

    /// Every line of text in the figure.
    pub fn labels(&self) -> Vec<&Label> {
        let mut out: Vec<&Label> = self.title.iter().collect();
        for p in &self.panels {
            out.extend(
                p.caption
                    .iter()
                    .chain(&p.x_ticks)
                    .chain(&p.y_ticks)
                    .chain(&p.x_title)
                    .chain(&p.y_title),
            );
        }
        if let Some(l) = &self.legend {
            out.extend(l.entries.iter().flat_map(|e| &e.lines));
        }
        out
    }
}

/// The layout of `plot` for `res`, as [`render`] draws it.
pub fn layout(res: &ExperimentResults<'_>, plot: &PlotSpec) -> Layout {
    let panels = panels(res, plot);
    compute_layout(&figure_title(res, plot), &panels, None)
}

fn figure_title(res: &ExperimentResults<'_>, plot: &PlotSpec) -> String {
    format!("{} — {}", res.plan.spec.spec.figure, plot.title)
}

/// Greedy word wrap of `text` to `max_w` at `em`; the font shrinks (to 70%) before a word is
/// broken, so nothing is ever cut. Returns the size used and the lines.
fn fit(text: &str, nominal: f64, bold: bool, max_w: f64, max_lines: usize) -> (f64, Vec<String>) {
    let mut size = nominal;
    loop {
        let lines = wrap(text, size, bold, max_w);
        let fits =
            lines.len() <= max_lines && lines.iter().all(|l| text_width(l, size, bold) <= max_w);
        let smaller = em(size * 0.9);
        if fits || smaller >= size || smaller < nominal * 0.7 {
            if fits {
                return (size, lines);
            }
            // Still too long: break words by characters.
            let mut out = Vec::new();
            for l in lines {
                let mut cur = String::new();
                for c in l.chars() {
                    let mut next = cur.clone();
                    next.push(c);
                    if !cur.is_empty() && text_width(&next, size, bold) > max_w {
                        out.push(std::mem::take(&mut cur));
                        cur.push(c);
                    } else {
                        cur = next;
                    }
                }
                out.push(cur);
            }
            return (size, out);
        }
        size = smaller;
    }
}

fn wrap(text: &str, size: f64, bold: bool, max_w: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let candidate = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if !cur.is_empty() && text_width(&candidate, size, bold) > max_w {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        } else {
            cur = candidate;
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

fn label(text: &str, x: f64, y: f64, em: f64, align: Align) -> Label {
    Label {
        text: text.to_string(),
        x,
        y,
        em,
        bold: false,
        align,
        vertical: false,
    }
}

/// Data range of the x axis, padded so that no point sits on the frame.
fn x_range(panel: &Panel<'_>) -> (f64, f64) {
    let plot = panel.plot;
    let xs: Vec<f64> = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .filter(|&x| x.is_finite() && (!plot.log_x || x > 0.0))
        .collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if plot.log_x {
        if !lo.is_finite() {
            return (1.0, 10.0);
        }
        if hi <= lo {
            return (lo / 3.0, hi * 3.0);
        }
        let f = (hi / lo).powf(0.04);
        return (lo / f, hi * f);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    // k axes and step axes start at 0, as in the papers (a coordinate such as an attribute's
    // index or a recorded quantity does not).
    let from_zero = !matches!(plot.x, XAxis::Named(_));
    let lo = if from_zero && lo > 0.0 && lo <= 1.0 {
        0.0
    } else {
        lo
    };
    if hi <= lo {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - d, hi + d);
    }
    let pad = 0.03 * (hi - lo);
    (lo - pad, hi + pad)
}

/// Range of the y axis: the data's (mean ± s.e.m., the chance line) with a little padding.
/// It starts at 0 only when the data come close to 0 (within 15% of their span), so small
/// differences far from 0 stay visible; a constant series gets a range around its value.
fn y_range(values: &[f64], log: bool, fixed: Option<[f64; 2]>) -> (f64, f64) {
    if let Some([a, b]) = fixed {
        return (a, b);
    }
    let vals: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return if log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        if hi <= lo * (1.0 + 1e-9) {
            return (lo / 2.0, hi * 2.0);
        }
        let f = (hi / lo).powf(0.06);
        return (lo / f, hi * f);
    }
    let span = hi - lo;
    if span <= 1e-12 * lo.abs().max(1e-300) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - d, hi + d);
    }
    let pad = 0.06 * span;
    let y0 = if lo > 0.0 && (lo <= 0.15 * span || lo - pad < 0.0) {
        0.0
    } else {
        lo - pad
    };
    (y0, hi + pad)
}

/// A "nice" step (1, 2, 2.5 or 5 times a power of ten) at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw * (1.0 - 1e-9) {
            return m * mag;
        }
    }
    10.0 * mag
}

fn linear_ticks(lo: f64, hi: f64, n: usize) -> (Vec<f64>, f64) {
    let step = nice_step((hi - lo) / n.max(1) as f64);
    let (a, b) = (
        (lo / step - 1e-9).ceil() as i64,
        (hi / step + 1e-9).floor() as i64,
    );
    let ticks = (a..=b)
        .map(|i| i as f64 * step)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect();
    (ticks, step)
}

/// Decimals needed to write multiples of `step` exactly.
fn decimals(step: f64) -> usize {
    (0..=9)
        .find(|&d| {
            let s = step * 10f64.powi(d as i32);
            (s - s.round()).abs() < 1e-6 * s.abs().max(1.0)
        })
        .unwrap_or(9)
}

/// Labels of linear ticks with a common number of decimals; thousands as K and millions as
/// M when the step allows it.
fn linear_labels(ticks: &[f64], step: f64) -> Vec<String> {
    let top = ticks.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (unit, suffix) = if top >= 1e6 && step >= 1e5 {
        (1e6, "M")
    } else if top >= 1e3 && step >= 100.0 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    let d = decimals(step / unit);
    ticks
        .iter()
        .map(|&v| {
            if v == 0.0 && !suffix.is_empty() {
                "0".to_string()
            } else {
                format!("{:.*}{suffix}", d, v / unit)
            }
        })
        .collect()
}

/// A single number as a tick label: integers without decimals, thousands as `K`, millions
/// as `M`, small numbers in decimal (or `1e-7` style below 10^-4).
pub fn tick(x: f64) -> String {
    let a = x.abs();
    let (unit, suffix) = if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    if a != 0.0 && a < 1e-4 {
        let e = a.log10().floor() as i32;
        let m = x / 10f64.powi(e);
        let m = format!("{:.2}", m)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string();
        return format!("{m}e{e}");
    }
    let v = x / unit;
    let d = decimals(v).min(4);
    let s = format!("{:.*}", d, v);
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

/// Candidate labelled tick sets of a log axis, densest first, and its minor ticks.
fn log_candidates(lo: f64, hi: f64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let inside = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    let multiples = |ms: &[f64]| -> Vec<f64> {
        (d0..=d1)
            .flat_map(|d| ms.iter().map(move |m| m * 10f64.powi(d)))
            .filter(inside)
            .collect()
    };
    let decades: Vec<f64> = multiples(&[1.0]);
    let mut cands = Vec::new();
    if decades.len() < 3 {
        cands.push(multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]));
        cands.push(multiples(&[1.0, 2.0, 5.0]));
        cands.push(multiples(&[1.0, 3.0]));
    }
    for every in [1usize, 2, 3, 4, 5, 10] {
        let thin: Vec<f64> = (d0..=d1)
            .filter(|d| d.rem_euclid(every as i32) == 0)
            .map(|d| 10f64.powi(d))
            .filter(inside)
            .collect();
        cands.push(thin);
    }
    cands.retain(|c| c.len() >= 2);
    if cands.is_empty() {
        // Less than a factor of ~2: nice linear steps on the log scale.
        for n in [6, 4, 3, 2] {
            let (t, _) = linear_ticks(lo, hi, n);
            if t.len() >= 2 {
                cands.push(t);
            }
        }
        if cands.is_empty() {
            cands.push(vec![(lo * hi).sqrt()]);
        }
    }
    let minor = if d1 - d0 <= 8 {
        multiples(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
            .into_iter()
            .filter(|v| !cands[0].iter().any(|t| (t / v - 1.0).abs() < 1e-9))
            .collect()
    } else {
        decades
    };
    (cands, minor)
}

/// Candidate (ticks, labels) of an axis, densest first.
/// Tick values and their labels.
type TickSet = (Vec<f64>, Vec<String>);

fn tick_candidates(lo: f64, hi: f64, log: bool) -> (Vec<TickSet>, Vec<f64>) {
    if log {
        let (cands, minor) = log_candidates(lo, hi);
        let out = cands
            .into_iter()
            .map(|t| {
                let labels = t.iter().map(|&v| tick(v)).collect();
                (t, labels)
            })
            .collect();
        return (out, minor);
    }
    let mut out: Vec<TickSet> = Vec::new();
    for n in (2..=10).rev() {
        let (t, step) = linear_ticks(lo, hi, n);
        if t.len() >= 2 && !out.iter().any(|(o, _)| *o == t) {
            let labels = linear_labels(&t, step);
            out.push((t, labels));
        }
    }
    if out.is_empty() {
        out.push((vec![lo], vec![tick(lo)]));
    }
    (out, Vec::new())
}

/// Whether consecutive label boxes keep `gap` between them along x (or y).
fn spaced(labels: &[Label], gap: f64, along_x: bool) -> bool {
    labels.windows(2).all(|w| {
        let (a, b) = (w[0].rect(), w[1].rect());
        if along_x {
            b.x0 - a.x1 >= gap || a.x0 - b.x1 >= gap
        } else {
            b.y0 - a.y1 >= gap || a.y0 - b.y1 >= gap
        }
    })
}

struct Fonts {
    title: f64,
    caption: f64,
    axis: f64,
    tick: f64,
    legend: f64,
}

fn fonts() -> Fonts {
    Fonts {
        title: em(15.0),
        caption: em(13.0),
        axis: em(12.0),
        tick: em(11.0),
        legend: em(12.0),
    }
}

/// The y axis of a panel: ticks chosen for `plot_h`, labels right-aligned at `x`.
/// Half the length of a point's error bar, as the plot asks.
fn half_bar(plot: &PlotSpec, y: &Stat) -> f64 {
    match plot.error_bars {
        ErrorBars::Sem => y.sem,
        ErrorBars::Sd | ErrorBars::SdMethod => y.sd,
    }
}

fn y_axis(panel: &Panel<'_>, y0: f64, y1: f64) -> (Axis, Vec<(f64, String)>) {
    let plot = panel.plot;
    let values: Vec<f64> = panel
        .series
        .iter()
        .flat_map(|s| {
            s.points.iter().flat_map(|p| {
                let e = half_bar(plot, &p.y);
                [p.y.mean - e, p.y.mean, p.y.mean + e]
            })
        })
        .filter(|v| !plot.log_y || *v > 0.0)
        .chain(panel.chance)
        .collect();
    let (lo, hi) = y_range(&values, plot.log_y, plot.y_range);
    let f = fonts();
    let (cands, minor) = tick_candidates(lo, hi, plot.log_y);
    let axis = |ticks: Vec<f64>| Axis {
        log: plot.log_y,
        lo,
        hi,
        ticks,
        minor: minor.clone(),
    };
    let h = y1 - y0;
    for (t, labels) in &cands {
        let a = axis(t.clone());
        let ls: Vec<Label> = t
            .iter()
            .zip(labels)
            .map(|(&v, s)| {
                let y = y1 - a.frac(v) * h;
                label(s, 0.0, y + (ASCENT - 0.5) * f.tick, f.tick, Align::Right)
            })
            .collect();
        if spaced(&ls, 0.5 * f.tick, false) {
            return (a, t.iter().copied().zip(labels.iter().cloned()).collect());
        }
    }
    let (t, labels) = cands.last().cloned().unwrap_or_default();
    (axis(t.clone()), t.into_iter().zip(labels).collect())
}

fn compute_layout(title: &str, panels: &[Panel<'_>], columns: Option<usize>) -> Layout {
    let f = fonts();
    let n = panels.len().max(1);
    let cols = n.min(columns.unwrap_or(3).max(1));
    let rows = n.div_ceil(cols);
    let (cell_w, plot_h) = if n == 1 {
        (520.0, 300.0)
    } else {
        (380.0, 250.0)
    };
    let width = cell_w * cols as f64 + 2.0 * MARGIN;

    // Title.
    let (title_em, title_lines) = fit(title, f.title, true, width - 2.0 * MARGIN, 3);
    let mut y = MARGIN;
    let mut title_labels = Vec::new();
    for l in title_lines {
        title_labels.push(Label {
            bold: true,
            ..label(
                &l,
                width / 2.0,
                y + ASCENT * title_em * LINE,
                title_em,
                Align::Center,
            )
        });
        y += title_em * LINE;
    }
    y += 6.0;

    // Captions: every panel reserves as many lines as the longest.
    let caption_fits: Vec<(f64, Vec<String>)> = panels
        .iter()
        .map(|p| fit(&p.caption, f.caption, false, cell_w - 16.0, 3))
        .collect();
    let caption_lines = caption_fits.iter().map(|c| c.1.len()).max().unwrap_or(1);
    let caption_h = caption_lines as f64 * f.caption * LINE + 4.0;
    let x_titles: Vec<(f64, Vec<String>)> = panels
        .iter()
        .map(|p| fit(&p.plot.x_label, f.axis, false, cell_w - 90.0, 2))
        .collect();
    let xt_h = x_titles
        .iter()
        .map(|(em, lines)| lines.len() as f64 * em * LINE)
        .fold(0.0, f64::max);
    let below = TICK_LEN + 3.0 + f.tick * LINE + 4.0 + xt_h + 8.0;
    let cell_h = caption_h + plot_h + below;

    let mut out_panels = Vec::new();
    for (i, panel) in panels.iter().enumerate() {
        let (r, c) = (i / cols, i % cols);
        let cell = Rect {
            x0: MARGIN + c as f64 * cell_w,
            y0: y + r as f64 * cell_h,
            x1: MARGIN + (c + 1) as f64 * cell_w,
            y1: y + (r + 1) as f64 * cell_h,
        };
        let (cap_em, cap_lines) = &caption_fits[i];
        let caption = cap_lines
            .iter()
            .enumerate()
            .map(|(li, l)| {
                let base = cell.y0 + (li as f64 + ASCENT) * cap_em * LINE;
                label(l, (cell.x0 + cell.x1) / 2.0, base, *cap_em, Align::Center)
            })
            .collect();
        let plot_y0 = cell.y0 + caption_h;
        let plot_y1 = plot_y0 + plot_h;
        let plot = panel.plot;
        let (xt_em, xt_lines) = &x_titles[i];
        let xt_em = *xt_em;
        let (yaxis, yticks) = y_axis(panel, plot_y0, plot_y1);
        let tick_w = yticks
            .iter()
            .map(|(_, s)| text_width(s, f.tick, false))
            .fold(0.0, f64::max);
        let (yt_em, yt_lines) = fit(&plot.y_label, f.axis, false, plot_h, 2);
        let left = 6.0 + yt_lines.len() as f64 * yt_em * LINE + 4.0 + tick_w + 3.0 + TICK_LEN;
        let plot_rect = Rect {
            x0: cell.x0 + left,
            y0: plot_y0,
            x1: cell.x1 - 18.0,
            y1: plot_y1,
        };
        let y_ticks: Vec<Label> = yticks
            .iter()
            .map(|(v, s)| {
                let py = plot_rect.y1 - yaxis.frac(*v) * plot_h;
                label(
                    s,
                    plot_rect.x0 - TICK_LEN - 3.0,
                    py + (ASCENT - 0.5) * f.tick,
                    f.tick,
                    Align::Right,
                )
            })
            .collect();
        let y_title = yt_lines
            .iter()
            .enumerate()
            .map(|(li, l)| Label {
                vertical: true,
                ..label(
                    l,
                    cell.x0 + 6.0 + (li as f64 + ASCENT) * yt_em * LINE,
                    (plot_rect.y0 + plot_rect.y1) / 2.0,
                    yt_em,
                    Align::Center,
                )
            })
            .collect();

        // x axis: the densest ticks whose labels keep apart and stay in the cell.
        let (x0, x1) = x_range(panel);
        let (mut cands, minor) = tick_candidates(x0, x1, plot.log_x);
        // Integer coordinates (an attribute's index, labels per class) get integer ticks when
        // some tick set has them.
        let integral = |v: f64| v.fract() == 0.0;
        if panel
            .series
            .iter()
            .flat_map(|s| &s.points)
            .all(|p| integral(p.x))
        {
            let mut whole: Vec<_> = cands
                .iter()
                .filter(|(t, _)| t.iter().all(|&v| integral(v)))
                .cloned()
                .collect();
            if whole.is_empty() && !plot.log_x {
                // The nice steps skipped 1 (a range of about two): every integer.
                let (a, b) = (x0.ceil(), x1.floor());
                if (1.0..=11.0).contains(&(b - a)) {
                    let t: Vec<f64> = (0..=(b - a) as usize).map(|v| a + v as f64).collect();
                    let labels = linear_labels(&t, 1.0);
                    whole.push((t, labels));
                }
            }
            if !whole.is_empty() {
                cands = whole;
            }
        }
        let xlabel_y = plot_rect.y1 + TICK_LEN + 3.0 + ASCENT * f.tick * LINE;
        let place = |ticks: &[f64], labels: &[String]| -> (Axis, Vec<Label>) {
            let a = Axis {
                log: plot.log_x,
                lo: x0,
                hi: x1,
                ticks: ticks.to_vec(),
                minor: minor.clone(),
            };
            let ls = ticks
                .iter()
                .zip(labels)
                .map(|(&v, s)| {
                    let px = plot_rect.x0 + a.frac(v) * plot_rect.width();
                    let mut l = label(s, px, xlabel_y, f.tick, Align::Center);
                    // Keep the label in the cell (shifted inwards if need be).
                    let r = l.rect();
                    if r.x1 > cell.x1 - 2.0 {
                        l.x -= r.x1 - (cell.x1 - 2.0);
                    }
                    l
                })
                .collect();
            (a, ls)
        };
        let mut chosen = None;
        for (t, labels) in &cands {
            let (a, ls) = place(t, labels);
            if spaced(&ls, 0.8 * f.tick, true) {
                chosen = Some((a, ls));
                break;
            }
        }
        let (xaxis, x_ticks) = chosen.unwrap_or_else(|| {
            let (t, l) = cands.last().cloned().unwrap_or_default();
            place(&t, &l)
        });
        let x_title = xt_lines
            .iter()
            .enumerate()
            .map(|(li, l)| {
                let base = plot_rect.y1
                    + TICK_LEN
                    + 3.0
                    + f.tick * LINE
                    + 4.0
                    + (li as f64 + ASCENT) * xt_em * LINE;
                label(
                    l,
                    (plot_rect.x0 + plot_rect.x1) / 2.0,
                    base,
                    xt_em,
                    Align::Center,
                )
            })
            .collect();
        let mut pl = PanelLayout {
            cell,
            plot: plot_rect,
            x: xaxis,
            y: yaxis,
            caption,
            x_ticks,
            y_ticks,
            x_title,
            y_title,
            points: Vec::new(),
        };
        pl.points = panel
            .series
            .iter()
            .flat_map(|s| drawn_points(plot, s))
            .flat_map(|p| {
                let mut v = vec![pl.px(p.x, p.y.mean)];
                let e = half_bar(plot, &p.y);
                if e > 0.0 && (!plot.log_y || p.y.mean > e) {
                    v.push(pl.px(p.x, p.y.mean - e));
                    v.push(pl.px(p.x, p.y.mean + e));
                }
                v
            })
            .filter(|&q| pl.plot.grow(0.5).contains(q))
            .collect();
        out_panels.push(pl);
    }
    let mut y = y + rows as f64 * cell_h;

    // Legend: one for the figure, below the panels.
    let mut entries: Vec<(String, RGBColor, bool, bool)> = Vec::new();
    for p in panels {
        for s in &p.series {
            let e = (s.name.clone(), s.color, s.dashed, marked(s));
            if !entries.contains(&e) {
                entries.push(e);
            }
        }
        if p.chance.is_some() {
            let e = ("Random".to_string(), RGBColor(0, 0, 0), true, false);
            if !entries.contains(&e) {
                entries.push(e);
            }
        }
    }
    let legend = (!entries.is_empty()).then(|| {
        let pad = 8.0;
        let gap = 18.0;
        let avail = width - 2.0 * MARGIN - 2.0 * pad;
        let text_max = avail - SWATCH - 6.0;
        let fitted: Vec<Vec<String>> = entries
            .iter()
            .map(|e| wrap(&e.0, f.legend, false, text_max))
            .collect();
        let entry_w = |lines: &Vec<String>| {
            SWATCH
                + 6.0
                + lines
                    .iter()
                    .map(|l| text_width(l, f.legend, false))
                    .fold(0.0, f64::max)
        };
        let col_w = fitted.iter().map(entry_w).fold(0.0, f64::max);
        let ncols = (((avail + gap) / (col_w + gap)).floor() as usize).clamp(1, entries.len());
        let used = ncols as f64 * col_w + (ncols - 1) as f64 * gap;
        let x0 = (width - used) / 2.0;
        let mut row_y = y + pad;
        let mut out = Vec::new();
        for chunk in entries
            .iter()
            .zip(&fitted)
            .collect::<Vec<_>>()
            .chunks(ncols)
        {
            let lines = chunk.iter().map(|(_, l)| l.len()).max().unwrap_or(1);
            for (ci, ((_, color, dashed, marker), ls)) in chunk.iter().enumerate() {
                let ex = x0 + ci as f64 * (col_w + gap);
                let mid = row_y + f.legend * LINE / 2.0;
                out.push(LegendEntry {
                    swatch: Rect {
                        x0: ex,
                        y0: mid - MARKER_R,
                        x1: ex + SWATCH,
                        y1: mid + MARKER_R,
                    },
                    lines: ls
                        .iter()
                        .enumerate()
                        .map(|(li, l)| {
                            let base = row_y + (li as f64 + ASCENT) * f.legend * LINE;
                            label(l, ex + SWATCH + 6.0, base, f.legend, Align::Left)
                        })
                        .collect(),
                    color: (color.0, color.1, color.2),
                    dashed: *dashed,
                    marker: *marker,
                });
            }
            row_y += lines as f64 * f.legend * LINE + 4.0;
        }
        let frame = Rect {
            x0: x0 - pad,
            y0: y,
            x1: x0 + used + pad,
            y1: row_y - 4.0 + pad,
        };
        Legend {
            frame,
            entries: out,
        }
    });
    if let Some(l) = &legend {
        y = l.frame.y1;
    }
    Layout {
        width,
        height: (y + MARGIN).ceil(),
        title: title_labels,
        panels: out_panels,
        legend,
    }
}

/// Series with few points get a marker on each.
fn marked(s: &Series) -> bool {
    s.points.len() <= 40
}

/// The points of a series that are drawn (positive x on a log axis, positive y on a log axis).
fn drawn_points<'s>(plot: &'s PlotSpec, s: &'s Series) -> impl Iterator<Item = &'s CurvePoint> {
    s.points.iter().filter(move |p| {
        p.x.is_finite()
            && p.y.mean.is_finite()
            && (!plot.log_x || p.x > 0.0)
            && (!plot.log_y || p.y.mean > 0.0)
    })
}

// ---------------------------------------------------------------------------------------------
// Drawing
// ---------------------------------------------------------------------------------------------

/// Draw `plot` for `res` into `<dir>/<stem>.svg` and `.png`; returns both paths.
pub fn render(
    res: &ExperimentResults<'_>,
    plot: &PlotSpec,
    dir: &Path,
    stem: &str,
) -> Result<[PathBuf; 2], String> {
    register_fonts();
    let panels = panels(res, plot);
    let lay = compute_layout(&figure_title(res, plot), &panels, None);
    draw_figure(&lay, &panels, dir, stem)
}

/// Draw a composite figure (`[[figures]]`): the panels of every `(results, plot)` source in
/// order, `columns` to a row, into `<dir>/<stem>.svg` and `.png`; returns both paths.
pub fn render_figure(
    title: &str,
    sources: &[(&ExperimentResults<'_>, &PlotSpec)],
    columns: Option<usize>,
    dir: &Path,
    stem: &str,
) -> Result<[PathBuf; 2], String> {
    register_fonts();
    let panels: Vec<Panel<'_>> = sources
        .iter()
        .flat_map(|(res, plot)| panels(res, plot))
        .collect();
    let lay = compute_layout(title, &panels, columns);
    draw_figure(&lay, &panels, dir, stem)
}

/// One drawn series of a panel: its legend name and, per point, `(x, y, half the error bar)`
/// as drawn (the error bar as the plot's `error_bars` asks).
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnSeries {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
}

/// What [`render`] draws of `plot`, panel by panel: the series with their points.
pub fn drawn_series(res: &ExperimentResults<'_>, plot: &PlotSpec) -> Vec<Vec<DrawnSeries>> {
    panels(res, plot)
        .iter()
        .map(|p| {
            p.series
                .iter()
                .map(|s| DrawnSeries {
                    name: s.name.clone(),
                    points: drawn_points(plot, s)
                        .map(|q| (q.x, q.y.mean, half_bar(plot, &q.y)))
                        .collect(),
                })
                .collect()
        })
        .collect()
}

/// The layout of a composite figure, as [`render_figure`] draws it.
pub fn figure_layout(
    title: &str,
    sources: &[(&ExperimentResults<'_>, &PlotSpec)],
    columns: Option<usize>,
) -> Layout {
    let panels: Vec<Panel<'_>> = sources
        .iter()
        .flat_map(|(res, plot)| panels(res, plot))
        .collect();
    compute_layout(title, &panels, columns)
}

fn draw_figure(
    lay: &Layout,
    panels: &[Panel<'_>],
    dir: &Path,
    stem: &str,
) -> Result<[PathBuf; 2], String> {
    let (w, h) = lay.size();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        draw(&root, lay, panels, 1.0)?;
        draw_labels_svg(&root, lay)?;
        root.present().map_err(|e| e.to_string())?;
    }
    // Shapes at PNG_SCALE * SUPERSAMPLE, box-filtered down; then the text at PNG_SCALE.
    let ss = PNG_SCALE * SUPERSAMPLE;
    let mut big = vec![255u8; (w * ss * h * ss * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut big, (w * ss, h * ss)).into_drawing_area();
        draw(&root, lay, panels, f64::from(ss))?;
        root.present().map_err(|e| e.to_string())?;
    }
    let (pw, ph) = lay.png_size();
    let mut rgb = downsample(&big, (w * ss, h * ss), SUPERSAMPLE);
    for l in lay.labels() {
        raster_label(&mut rgb, (pw, ph), l, f64::from(PNG_SCALE))?;
    }
    let png = encode_png(&rgb, (pw, ph))?;
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    crate::cache::write_atomic(&svg_path, svg.as_bytes()).map_err(|e| e.to_string())?;
    crate::cache::write_atomic(&png_path, &png).map_err(|e| e.to_string())?;
    Ok([svg_path, png_path])
}

fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, String> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(rgb, w, h, image::ColorType::Rgb8)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Box filter of an RGB buffer by an integer factor.
fn downsample(big: &[u8], (w, h): (u32, u32), f: u32) -> Vec<u8> {
    let (ow, oh) = (w / f, h / f);
    let mut out = vec![0u8; (ow * oh * 3) as usize];
    let n = f * f;
    for y in 0..oh {
        for x in 0..ow {
            for c in 0..3 {
                let mut sum = 0u32;
                for dy in 0..f {
                    for dx in 0..f {
                        let i = (((y * f + dy) * w + x * f + dx) * 3 + c) as usize;
                        sum += u32::from(big[i]);
                    }
                }
                out[((y * ow + x) * 3 + c) as usize] = ((sum + n / 2) / n) as u8;
            }
        }
    }
    out
}

const TEXT: RGBColor = RGBColor(0x22, 0x22, 0x22);

/// Text into an RGB buffer at `s` times the layout's pixels, glyph by glyph from the font's
/// own metrics (advance, kerning and left side bearing), so letters are evenly spaced.
fn raster_label(rgb: &mut [u8], (w, h): (u32, u32), l: &Label, s: f64) -> Result<(), String> {
    let m = metrics(l.bold);
    let em_px = l.em * s;
    let k = em_px / m.units_per_em;
    // plotters' ab_glyph scale is the font's height (ascender - descender) in pixels.
    let scale = (m.height * k).round();
    let style = if l.bold {
        FontStyle::Bold
    } else {
        FontStyle::Normal
    };
    let font = FontDesc::new(FontFamily::Name(FONT), scale, style);
    let (pens, total) = m.pens(&l.text);
    let width = total * k;
    let start = match l.align {
        Align::Left => 0.0,
        Align::Center => -width / 2.0,
        Align::Right => -width,
    };
    let (ax, ay) = (l.x * s, l.y * s);
    let half = (scale / 2.0) as i32;
    let mut blend = |x: i64, y: i64, a: f32| {
        if a <= 0.0 || x < 0 || y < 0 || x >= i64::from(w) || y >= i64::from(h) {
            return;
        }
        let a = f64::from(a.min(1.0));
        let i = ((y as usize) * (w as usize) + x as usize) * 3;
        for (c, t) in [TEXT.0, TEXT.1, TEXT.2].into_iter().enumerate() {
            let v = f64::from(rgb[i + c]) * (1.0 - a) + f64::from(t) * a;
            rgb[i + c] = v.round() as u8;
        }
    };
    for (c, g, pen) in pens {
        if c.is_whitespace() {
            continue;
        }
        // Ink starts at the pen plus the left side bearing; plotters draws it at 0.
        let ox = (start + pen * k).round() + (m.lsb(g) * k).floor();
        let r = font.draw(&c.to_string(), (0, 0), |x, y, a| {
            let (rx, ry) = (ox + f64::from(x), f64::from(y - half));
            let (dx, dy) = if l.vertical { (ry, -rx) } else { (rx, ry) };
            blend((ax + dx).round() as i64, (ay + dy).round() as i64, a);
            Ok::<(), ()>(())
        });
        match r {
            Ok(_) => {}
            Err(e) => return Err(format!("font: {e:?}")),
        }
    }
    Ok(())
}

fn draw_labels_svg<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lay: &Layout,
) -> Result<(), String> {
    for l in lay.labels() {
        let style = if l.bold {
            FontStyle::Bold
        } else {
            FontStyle::Normal
        };
        // plotters writes font-size = size / 1.24 into the SVG.
        let font = FontDesc::new(FontFamily::Name(FONT), l.em * 1.24, style);
        let font = if l.vertical {
            font.transform(FontTransform::Rotate270)
        } else {
            font
        };
        let h = match l.align {
            Align::Left => HPos::Left,
            Align::Center => HPos::Center,
            Align::Right => HPos::Right,
        };
        let ts = font.color(&TEXT).pos(Pos::new(h, VPos::Top));
        // VPos::Top puts the baseline 0.76 em below the anchor (along the text's down).
        let pos = if l.vertical {
            ((l.x - ASCENT * l.em).round() as i32, l.y.round() as i32)
        } else {
            (l.x.round() as i32, (l.y - ASCENT * l.em).round() as i32)
        };
        root.draw(&Text::new(l.text.clone(), pos, ts))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Liang–Barsky: the part of segment `a`–`b` inside `r`.
fn clip(a: (f64, f64), b: (f64, f64), r: &Rect) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - r.x0),
        (dx, r.x1 - a.0),
        (-dy, a.1 - r.y0),
        (dy, r.y1 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    (t0 <= t1).then_some((
        (a.0 + t0 * dx, a.1 + t0 * dy),
        (a.0 + t1 * dx, a.1 + t1 * dy),
    ))
}

/// A polyline clipped to `r`, as the runs that stay inside.
fn clip_polyline(pts: &[(f64, f64)], r: &Rect) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    for w in pts.windows(2) {
        if let Some((a, b)) = clip(w[0], w[1], r) {
            match runs.last_mut() {
                Some(run) if run.last() == Some(&a) => run.push(b),
                _ => runs.push(vec![a, b]),
            }
        }
    }
    runs
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lay: &Layout,
    panels: &[Panel<'_>],
    s: f64,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let p = |(x, y): (f64, f64)| ((x * s).round() as i32, (y * s).round() as i32);
    let sw = |w: f64| ((w * s).round() as u32).max(1);
    let grid = RGBColor(0xe4, 0xe4, 0xe4);
    let frame = RGBColor(0x55, 0x55, 0x55);
    root.fill(&WHITE).map_err(err)?;
    for (pl, panel) in lay.panels.iter().zip(panels) {
        let plot = panel.plot;
        let r = pl.plot;
        // Grid at the labelled ticks, minor ticks on log axes.
        for &v in &pl.y.ticks {
            let (_, y) = pl.px(pl.x.lo, v);
            root.draw(&PathElement::new(
                vec![p((r.x0, y)), p((r.x1, y))],
                grid.stroke_width(sw(1.0)),
            ))
            .map_err(err)?;
        }
        for &v in &pl.x.ticks {
            let (x, _) = pl.px(v, pl.y.lo);
            root.draw(&PathElement::new(
                vec![p((x, r.y0)), p((x, r.y1))],
                grid.stroke_width(sw(1.0)),
            ))
            .map_err(err)?;
        }
        // Series.
        for s_ in &panel.series {
            let pts: Vec<&CurvePoint> = drawn_points(plot, s_).collect();
            let line: Vec<(f64, f64)> =
                if pts.len() == 1 && matches!(plot.x, XAxis::Step | XAxis::Seconds) {
                    // A baseline without training steps spans the x range.
                    let (_, y) = pl.px(pl.x.lo, pts[0].y.mean);
                    vec![(r.x0, y), (r.x1, y)]
                } else {
                    pts.iter().map(|q| pl.px(q.x, q.y.mean)).collect()
                };
            let style = s_.color.stroke_width(sw(1.6));
            let line = if s_.scatter { Vec::new() } else { line };
            for run in clip_polyline(&line, &r) {
                let run: Vec<(i32, i32)> = run.into_iter().map(p).collect();
                if s_.dashed {
                    root.draw(&DashedPathElement::new(
                        run,
                        (6.0 * s) as i32,
                        (4.0 * s) as i32,
                        style,
                    ))
                    .map_err(err)?;
                } else {
                    root.draw(&PathElement::new(run, style)).map_err(err)?;
                }
            }
            for q in &pts {
                let e = half_bar(plot, &q.y);
                if e > 0.0 && (!plot.log_y || q.y.mean > e) {
                    let a = pl.px(q.x, q.y.mean - e);
                    let b = pl.px(q.x, q.y.mean + e);
                    if let Some((a, b)) = clip(a, b, &r) {
                        let st = s_.color.stroke_width(sw(1.0));
                        root.draw(&PathElement::new(vec![p(a), p(b)], st))
                            .map_err(err)?;
                        for e in [a, b] {
                            if e.1 > r.y0 + 0.5 && e.1 < r.y1 - 0.5 {
                                root.draw(&PathElement::new(
                                    vec![p((e.0 - 3.0, e.1)), p((e.0 + 3.0, e.1))],
                                    st,
                                ))
                                .map_err(err)?;
                            }
                        }
                    }
                }
            }
            if marked(s_) || s_.scatter {
                for q in &pts {
                    let c = pl.px(q.x, q.y.mean);
                    if r.grow(0.5).contains(c) {
                        marker(root, p(c), s_.color, s_.dashed, s).map_err(err)?;
                    }
                }
            }
        }
        if let Some(c) = panel.chance {
            let (_, y) = pl.px(pl.x.lo, c);
            if let Some((a, b)) = clip((r.x0, y), (r.x1, y), &r) {
                root.draw(&DashedPathElement::new(
                    vec![p(a), p(b)],
                    (8.0 * s) as i32,
                    (5.0 * s) as i32,
                    BLACK.stroke_width(sw(1.6)),
                ))
                .map_err(err)?;
            }
        }
        // Frame and ticks (outside the frame).
        root.draw(&Rectangle::new(
            [p((r.x0, r.y0)), p((r.x1, r.y1))],
            frame.stroke_width(sw(1.0)),
        ))
        .map_err(err)?;
        let major = |len: f64| frame.stroke_width(sw(if len > 3.0 { 1.0 } else { 0.8 }));
        for (vals, len) in [(&pl.y.ticks, TICK_LEN), (&pl.y.minor, TICK_LEN / 2.0)] {
            for &v in vals {
                let (_, y) = pl.px(pl.x.lo, v);
                if y >= r.y0 - 0.5 && y <= r.y1 + 0.5 {
                    root.draw(&PathElement::new(
                        vec![p((r.x0 - len, y)), p((r.x0, y))],
                        major(len),
                    ))
                    .map_err(err)?;
                }
            }
        }
        for (vals, len) in [(&pl.x.ticks, TICK_LEN), (&pl.x.minor, TICK_LEN / 2.0)] {
            for &v in vals {
                let (x, _) = pl.px(v, pl.y.lo);
                if x >= r.x0 - 0.5 && x <= r.x1 + 0.5 {
                    root.draw(&PathElement::new(
                        vec![p((x, r.y1)), p((x, r.y1 + len))],
                        major(len),
                    ))
                    .map_err(err)?;
                }
            }
        }
    }
    if let Some(l) = &lay.legend {
        let f = l.frame;
        root.draw(&Rectangle::new(
            [p((f.x0, f.y0)), p((f.x1, f.y1))],
            RGBColor(0xaa, 0xaa, 0xaa).stroke_width(sw(1.0)),
        ))
        .map_err(err)?;
        for e in &l.entries {
            let color = RGBColor(e.color.0, e.color.1, e.color.2);
            let y = (e.swatch.y0 + e.swatch.y1) / 2.0;
            let run = vec![p((e.swatch.x0, y)), p((e.swatch.x1, y))];
            let style = color.stroke_width(sw(1.6));
            if e.dashed {
                root.draw(&DashedPathElement::new(
                    run,
                    (6.0 * s) as i32,
                    (4.0 * s) as i32,
                    style,
                ))
                .map_err(err)?;
            } else {
                root.draw(&PathElement::new(run, style)).map_err(err)?;
            }
            if e.marker {
                let c = ((e.swatch.x0 + e.swatch.x1) / 2.0, y);
                marker(root, p(c), color, e.dashed, s).map_err(err)?;
            }
        }
    }
    Ok(())
}

/// A filled circle (hollow for dashed series).
fn marker<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: (i32, i32),
    color: RGBColor,
    hollow: bool,
    s: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let r = (MARKER_R * s).round() as i32;
    if hollow {
        root.draw(&Circle::new(c, r, WHITE.filled()))?;
        root.draw(&Circle::new(
            c,
            r,
            color.stroke_width(((1.2 * s).round() as u32).max(1)),
        ))
    } else {
        root.draw(&Circle::new(c, r, color.filled()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(xy: &[(f64, f64)]) -> Vec<CurvePoint> {
        xy.iter()
            .map(|&(x, mean)| CurvePoint {
                x,
                y: Stat {
                    mean,
                    sd: x,
                    sem: 0.0,
                    n: 3,
                },
            })
            .collect()
    }

    #[test]
    fn the_envelope_takes_each_curves_last_point_and_the_best_mean() {
        // A fast low-rank model early, a slow high-rank one that overtakes it.
        let fast = pts(&[(1.0, 0.2), (2.0, 0.3), (4.0, 0.35)]);
        let slow = pts(&[(3.0, 0.1), (5.0, 0.5)]);
        let e = envelope(&[fast.clone(), slow.clone()], true);
        let got: Vec<(f64, f64, f64)> = e.iter().map(|p| (p.x, p.y.mean, p.y.sd)).collect();
        // At x = 3 the slow model (0.1) has started but the fast one's 0.3 (from x = 2) wins;
        // at x = 5 the slow one's 0.5 beats the fast one's last value 0.35, with its own SD.
        assert_eq!(
            got,
            vec![
                (1.0, 0.2, 1.0),
                (2.0, 0.3, 2.0),
                (3.0, 0.3, 2.0),
                (4.0, 0.35, 4.0),
                (5.0, 0.5, 5.0)
            ]
        );
        // Lower is better: the smallest mean at each x.
        let low: Vec<f64> = envelope(&[fast, slow], false)
            .iter()
            .map(|p| p.y.mean)
            .collect();
        assert_eq!(low, vec![0.2, 0.3, 0.1, 0.1, 0.35]);
    }

    #[test]
    fn y_ranges_show_the_data_not_zero() {
        // mAP between 0.015 and 0.02: the axis does not start at 0.
        let (lo, hi) = y_range(&[0.015, 0.017, 0.02], false, None);
        assert!(
            lo > 0.01 && lo < 0.015 && hi > 0.02 && hi < 0.021,
            "{lo} {hi}"
        );
        // A rate that comes near 0 keeps 0.
        assert_eq!(y_range(&[0.01, 0.5, 0.9], false, None).0, 0.0);
        // A constant series gets a range around its value, with ticks on both sides.
        let (lo, hi) = y_range(&[0.5, 0.5], false, None);
        assert!(lo < 0.5 && hi > 0.5, "{lo} {hi}");
        let (cands, _) = tick_candidates(lo, hi, false);
        assert!(cands[0].0.len() >= 3, "{:?}", cands[0]);
        assert!(cands[0].0.iter().any(|t| *t < 0.5) && cands[0].0.iter().any(|t| *t > 0.5));
        let (lo, hi) = y_range(&[0.0], false, None);
        assert!(lo < 0.0 && hi > 0.0);
        // Negative data keep their padding.
        let (lo, hi) = y_range(&[-2.0, -1.0], false, None);
        assert!(lo < -2.0 && hi > -1.0);
        // The spec's range wins.
        assert_eq!(y_range(&[5.0], false, Some([0.0, 1.0])), (0.0, 1.0));
    }

    #[test]
    fn log_ticks_are_decades_with_labels_apart() {
        register_fonts();
        for (lo, hi) in [
            (9e4, 1.1e5),
            (1e4, 1e6),
            (0.001, 1000.0),
            (3.0, 7e9),
            (31000.0, 38000.0),
            (0.5, 2.0),
        ] {
            let (cands, _) = tick_candidates(lo, hi, true);
            assert!(!cands.is_empty());
            for (t, labels) in &cands {
                assert!(
                    t.iter().all(|v| *v >= lo * 0.999 && *v <= hi * 1.001),
                    "{t:?}"
                );
                assert_eq!(t.len(), labels.len());
            }
            if (hi / lo).log10() >= 2.0 {
                assert!(
                    cands[0]
                        .0
                        .iter()
                        .all(|v| (v.log10() - v.log10().round()).abs() < 1e-9)
                );
            }
        }
        let (c, _) = tick_candidates(9e4, 1.1e5, true);
        assert_eq!(c[0].1, vec!["90K", "100K"]);
        // On a narrow axis, the densest set whose labels keep apart is chosen; each range
        // above has one.
        for (lo, hi) in [
            (9e4, 1.1e5),
            (1e4, 1e6),
            (0.001, 1000.0),
            (3.0, 7e9),
            (1.0, 1e12),
        ] {
            let (cands, _) = tick_candidates(lo, hi, true);
            let a = Axis {
                log: true,
                lo,
                hi,
                ticks: Vec::new(),
                minor: Vec::new(),
            };
            let fits = cands.iter().any(|(t, labels)| {
                let ls: Vec<Label> = t
                    .iter()
                    .zip(labels)
                    .map(|(&v, s)| label(s, a.frac(v) * 150.0, 0.0, 11.0, Align::Center))
                    .collect();
                spaced(&ls, 8.0, true)
            });
            assert!(fits, "{lo}..{hi}: {cands:?}");
        }
        let (c, _) = tick_candidates(1e4, 1e6, true);
        assert_eq!(c[0].1, vec!["10K", "100K", "1M"]);
    }

    #[test]
    fn tick_text() {
        assert_eq!(tick(100000.0), "100K");
        assert_eq!(tick(1e6), "1M");
        assert_eq!(tick(2500.0), "2.5K");
        assert_eq!(tick(0.001), "0.001");
        assert_eq!(tick(1e-6), "1e-6");
        assert_eq!(tick(7.0), "7");
        assert_eq!(
            linear_labels(&[0.0, 0.25, 0.5], 0.25),
            vec!["0.00", "0.25", "0.50"]
        );
        assert_eq!(
            linear_labels(&[0.0, 20000.0, 40000.0], 20000.0),
            vec!["0", "20K", "40K"]
        );
    }

    #[test]
    fn text_metrics_come_from_the_font() {
        // DejaVu Sans: "i" is narrower than "m", kerning tightens "AV".
        assert!(text_width("i", 10.0, false) < text_width("m", 10.0, false));
        let m = metrics(false);
        let (a, v) = (m.glyph('A'), m.glyph('V'));
        assert!(m.kern(a, v) < 0.0);
        assert!(
            text_width("AV", 10.0, false)
                < text_width("A", 10.0, false) + text_width("V", 10.0, false)
        );
        assert!(text_width("x", 10.0, true) > text_width("x", 10.0, false));
        // Wrapping never cuts: every word survives.
        let (_, lines) = fit(
            "a long title that does not fit in one line",
            15.0,
            true,
            120.0,
            3,
        );
        assert!(lines.len() > 1);
        assert_eq!(
            lines.join(" "),
            "a long title that does not fit in one line"
        );
        for l in &lines {
            assert!(text_width(l, 15.0, true) <= 120.0);
        }
    }

    #[test]
    fn a_lower_bound_right_of_the_mean_bounds_the_slope_from_below() {
        // y = 2 x exactly: slope 1.
        let pts = [(10.0, 20.0), (100.0, 200.0), (1000.0, 2000.0)];
        let (a, b) = power_fit(&pts).unwrap();
        assert!((b - 1.0).abs() < 1e-12 && (a - 2.0).abs() < 1e-9);
        assert_eq!(slope_bound(&pts, &[]), SlopeBound::Exact);
        assert_eq!(slope_bound(&pts, &[1000.0]), SlopeBound::AtLeast);
        // The middle point sits on the mean of log x (it does not move the slope); the first
        // lies left of it.
        assert_eq!(slope_bound(&pts, &[100.0]), SlopeBound::AtLeast);
        assert_eq!(slope_bound(&pts, &[10.0]), SlopeBound::Unknown);
        assert_eq!(slope_bound(&pts, &[10.0, 1000.0]), SlopeBound::Unknown);
        // x values that are not points of the series are ignored.
        assert_eq!(slope_bound(&pts, &[5.0]), SlopeBound::Exact);
        // The bound is real: raising the last y raises the fitted slope.
        let raised = [(10.0, 20.0), (100.0, 200.0), (1000.0, 5000.0)];
        assert!(power_fit(&raised).unwrap().1 > b);
    }
}
