//! Figures (plotters, SVG and PNG): one image per plot spec, its panels and series built by
//! the plot's kind ([`kinds`]: by default one panel per data set, one series per solver and
//! evaluated set), error bars = s.e.m. over repeats, the chance line where the spec asks for
//! it. Output bytes depend only on the results.
//!
//! This module draws what the kinds build, with what they share (colours, captions, the
//! reference and overlay series); where everything sits is
//! [`super::layout`]'s (so that [`layout`] can be checked without drawing). The SVG is at 1x;
//! the PNG at [`PNG_SCALE`]x, anti-aliased, with the text drawn glyph by glyph from the
//! embedded DejaVu font's metrics ([`super::png`]).

use crate::analysis::results::{CurvePoint, ExperimentResults, Stat};
use crate::spec::{PlotSpec, XAxis};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

pub mod kinds;

use super::font::{FONT, register_fonts};
use super::layout::{
    ASCENT, MARKER_R, Panel, Series, TICK_LEN, compute_layout, drawn_points, half_bar, marked,
};
use super::layout::{Align, Layout, Rect};
use super::png::{
    PNG_SCALE, SUPERSAMPLE, TEXT, downsample, encode_png, raster_label, render_stamp, stamp_of,
};

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
    fn new(plan: &crate::engine::plan::Plan, plot: &PlotSpec, by_series: bool) -> Self {
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

/// Whether `plot` draws solver `sv`: its `solvers` (labels, registry names or a grid's series
/// label), else all.
fn solver_drawn(plot: &PlotSpec, sv: &crate::engine::plan::SolverInstance) -> bool {
    plot.solvers.is_empty()
        || plot
            .solvers
            .iter()
            .any(|s| *s == sv.label || s == sv.name || *s == sv.series)
}

/// Whether `plot` draws data set `d` (its `datasets`, else all).
fn dataset_drawn(plot: &PlotSpec, d: &crate::engine::plan::DatasetInstance) -> bool {
    plot.datasets.is_empty() || plot.datasets.contains(&d.id)
}

/// The data sets `plot` draws, with their indices in the plan.
fn drawn_datasets<'a>(
    plan: &'a crate::engine::plan::Plan,
    plot: &'a PlotSpec,
) -> impl Iterator<Item = (usize, &'a crate::engine::plan::DatasetInstance)> + 'a {
    plan.datasets
        .iter()
        .enumerate()
        .filter(move |(_, d)| dataset_drawn(plot, d))
}

/// A panel's caption: the data set's id, marked when it is a stand-in.
fn panel_caption(d: &crate::engine::plan::DatasetInstance) -> String {
    let tag = if d.resolved.synthetic {
        " [SYNTHETIC stand-in]"
    } else if d.resolved.unpublished.is_some() {
        " [UNPUBLISHED content]"
    } else {
        ""
    };
    format!("{}{tag}", d.id)
}

/// The sets a plot draws: its `sets`, else every set the plan evaluates.
fn drawn_sets(res: &ExperimentResults<'_>, plot: &PlotSpec) -> Vec<String> {
    if plot.sets.is_empty() {
        res.plan.sets()
    } else {
        plot.sets.clone()
    }
}

/// The panels of `plot`, as its kind builds them (none for a kind that is not registered,
/// which spec validation refuses).
fn panels<'p>(res: &ExperimentResults<'_>, plot: &'p PlotSpec) -> Vec<Panel<'p>> {
    let sets = drawn_sets(res, plot);
    kinds::of(plot).map_or_else(Vec::new, |k| (k.panels)(res, plot, &sets))
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

/// The plot's `overlays` (series given as numbers, e.g. the paper's points), each in its
/// own colour after the solvers', with its power-law extrapolation where it asks for one.
fn overlay_series(plot: &PlotSpec, colours: &Colours) -> Vec<Series> {
    let mut series = Vec::new();
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
    series
}

/// The layout of `plot` for `res`, as [`render`] draws it.
pub fn layout(res: &ExperimentResults<'_>, plot: &PlotSpec) -> Layout {
    let panels = panels(res, plot);
    compute_layout(&figure_title(res, plot), &panels, None)
}

fn figure_title(res: &ExperimentResults<'_>, plot: &PlotSpec) -> String {
    format!("{} — {}", res.plan.spec.spec.figure, plot.title)
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
    let svg_path = dir.join(format!("{stem}.svg"));
    let png_path = dir.join(format!("{stem}.png"));
    // Drawn before from the same SVG by the same code: nothing to do.
    let stamp = render_stamp(&svg);
    if stamp_of(&png_path).as_deref() == Some(stamp.as_str())
        && std::fs::read(&svg_path).is_ok_and(|old| old == svg.as_bytes())
    {
        return Ok([svg_path, png_path]);
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
    let png = encode_png(&rgb, (pw, ph), &stamp)?;
    crate::engine::cache::write_atomic(&svg_path, svg.as_bytes()).map_err(|e| e.to_string())?;
    crate::engine::cache::write_atomic(&png_path, &png).map_err(|e| e.to_string())?;
    Ok([svg_path, png_path])
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
                stroke(root, run, style, s_.dashed, s).map_err(err)?;
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
            stroke(root, run, style, e.dashed, s).map_err(err)?;
            if e.marker {
                let c = ((e.swatch.x0 + e.swatch.x1) / 2.0, y);
                marker(root, p(c), color, e.dashed, s).map_err(err)?;
            }
        }
    }
    Ok(())
}

/// A filled circle (hollow for dashed series).
/// A series' line (or its legend swatch) through `run`: dashed 6-on, 4-off at scale `s`, or
/// solid.
fn stroke<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: Vec<(i32, i32)>,
    style: ShapeStyle,
    dashed: bool,
    s: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if dashed {
        root.draw(&DashedPathElement::new(
            run,
            (6.0 * s) as i32,
            (4.0 * s) as i32,
            style,
        ))
    } else {
        root.draw(&PathElement::new(run, style))
    }
}

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
