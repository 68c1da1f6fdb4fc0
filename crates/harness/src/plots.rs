//! Figures (plotters, SVG and PNG): one image per plot spec, one panel per data set, one
//! series per solver (and per evaluated set), error bars = s.e.m. over repeats, the chance
//! line where the spec asks for it. Output bytes depend only on the results.

use crate::results::{CurvePoint, ExperimentResults, Stat};
use crate::spec::{PlotSpec, XAxis};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Once;

const PANEL_W: u32 = 560;
const PANEL_H: u32 = 440;

/// Colours by solver index (the papers' figures use distinct hues per method).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

/// One line of a panel.
struct Series {
    name: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<CurvePoint>,
}

struct Panel {
    caption: String,
    series: Vec<Series>,
    chance: Option<f64>,
}

fn panels(res: &ExperimentResults<'_>, plot: &PlotSpec) -> Vec<Panel> {
    let plan = res.plan;
    let sets: Vec<String> = if plot.sets.is_empty() {
        plan.sets()
    } else {
        plot.sets.clone()
    };
    if let (XAxis::Param, Some(param)) = (&plot.x, &plot.x_param) {
        return vec![param_panel(res, plot, &sets, param)];
    }
    plan.datasets
        .iter()
        .enumerate()
        .map(|(di, d)| {
            let mut series = Vec::new();
            for (si, sv) in plan.solvers.iter().enumerate() {
                if !plot.solvers.is_empty()
                    && !plot.solvers.iter().any(|s| *s == sv.label || s == sv.name)
                {
                    continue;
                }
                for (seti, set) in sets.iter().enumerate() {
                    let points = res.curve(di, si, set, &plot.metric, &plot.x);
                    if points.is_empty() {
                        continue;
                    }
                    let name = if sets.len() > 1 {
                        format!("{} ({set})", sv.label)
                    } else {
                        sv.label.clone()
                    };
                    // Train/validation curves are their test curve's colour, dashed; other
                    // sets (e.g. the simulated raters' per-query sets) get colours of their own.
                    let evaluated = ["test", "train", "validation"].contains(&set.as_str());
                    let shade = if evaluated { 0 } else { seti };
                    series.push(Series {
                        name,
                        color: PALETTE[(si + shade) % PALETTE.len()],
                        dashed: set == "train" || set == "validation",
                        points,
                    });
                }
            }
            let chance = plot.chance.then(|| {
                let set = sets.iter().find(|s| *s == "test").unwrap_or(&sets[0]);
                (0..plan.solvers.len())
                    .flat_map(|si| res.curve(di, si, set, "chance", &XAxis::Step))
                    .map(|p| p.y.mean)
                    .next()
            });
            let tag = if d.resolved.synthetic {
                " [SYNTHETIC stand-in]"
            } else {
                ""
            };
            Panel {
                caption: format!("{}{tag}", d.id),
                series,
                chance: chance.flatten(),
            }
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
fn param_panel(
    res: &ExperimentResults<'_>,
    plot: &PlotSpec,
    sets: &[String],
    param: &[String],
) -> Panel {
    let plan = res.plan;
    let set = sets.iter().find(|s| *s == "test").unwrap_or(&sets[0]);
    let mut series = Vec::new();
    for (si, sv) in plan.solvers.iter().enumerate() {
        let points = res.param_series(si, set, &plot.metric, param);
        if points.is_empty() {
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
            color: PALETTE[si % PALETTE.len()],
            dashed: false,
            points,
        });
    }
    for (oi, o) in plot.overlays.iter().enumerate() {
        let color = PALETTE[(plan.solvers.len() + oi) % PALETTE.len()];
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
                points,
            });
        }
    }
    let synthetic: Vec<&str> = plan
        .datasets
        .iter()
        .filter(|d| d.resolved.synthetic)
        .map(|d| d.id.as_str())
        .collect();
    let caption = if synthetic.is_empty() {
        "all data sets".to_string()
    } else {
        format!("SYNTHETIC stand-in data: {}", synthetic.join(", "))
    };
    Panel {
        caption,
        series,
        chance: None,
    }
}

/// Draw `plot` for `res` into `<dir>/<stem>.svg` and `.png`; returns both paths.
pub fn render(
    res: &ExperimentResults<'_>,
    plot: &PlotSpec,
    dir: &Path,
    stem: &str,
) -> Result<[PathBuf; 2], String> {
    register_fonts();
    let panels = panels(res, plot);
    let size = (PANEL_W * panels.len().max(1) as u32, PANEL_H + 40);
    let title = format!("{} — {}", res.plan.spec.spec.figure, plot.title);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root, &title, plot, &panels)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        draw(&root, &title, plot, &panels)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let png = encode_png(&rgb, size)?;
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

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    plot: &PlotSpec,
    panels: &[Panel],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(title, ("sans-serif", 20).into_font().style(FontStyle::Bold))
        .map_err(err)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        draw_panel(area, plot, panel).map_err(err)?;
    }
    Ok(())
}

fn bounds(plot: &PlotSpec, panel: &Panel) -> ((f64, f64), (f64, f64)) {
    let xs = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x));
    let xs: Vec<f64> = xs.filter(|&x| !plot.log_x || x > 0.0).collect();
    let (mut x0, mut x1) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    if !x0.is_finite() {
        (x0, x1) = (if plot.log_x { 1.0 } else { 0.0 }, 1.0);
    }
    if !plot.log_x && x0 > 0.0 && x0 <= 1.0 {
        x0 = 0.0; // k axes and step axes start at 0, as in the papers
    }
    if x1 <= x0 {
        x1 = if plot.log_x { x0 * 10.0 } else { x0 + 1.0 };
    }
    let y = match plot.y_range {
        Some([a, b]) => (a, b),
        None if plot.log_y => {
            let ys: Vec<f64> = panel
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.y.mean))
                .filter(|&y| y > 0.0)
                .collect();
            let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if lo.is_finite() && hi > lo {
                (lo / 2.0, hi * 2.0)
            } else {
                (0.1, 10.0)
            }
        }
        None => {
            let ys = panel.series.iter().flat_map(|s| {
                s.points
                    .iter()
                    .flat_map(|p| [p.y.mean - p.y.sem, p.y.mean + p.y.sem])
            });
            let hi = ys.chain(panel.chance).fold(f64::NEG_INFINITY, f64::max);
            let hi = if hi.is_finite() && hi > 0.0 {
                hi * 1.08
            } else {
                1.0
            };
            (0.0, hi)
        }
    };
    ((x0, x1), y)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plot: &PlotSpec,
    panel: &Panel,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let ((x0, x1), (y0, y1)) = bounds(plot, panel);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.caption, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(64);
    macro_rules! chart {
        ($x:expr, $y:expr) => {{
            let mut chart = builder.build_cartesian_2d($x, $y)?;
            chart
                .configure_mesh()
                .x_desc(&plot.x_label)
                .y_desc(&plot.y_label)
                .x_label_formatter(&|x| tick(*x))
                .y_label_formatter(&|y| tick(*y))
                .label_style(("sans-serif", 13))
                .light_line_style(WHITE.mix(0.0))
                .draw()?;
            draw_series(&mut chart, panel, plot, (x0, x1))
        }};
    }
    match (plot.log_x, plot.log_y) {
        (false, false) => chart!(x0..x1, y0..y1),
        (true, false) => chart!((x0..x1).log_scale(), y0..y1),
        (false, true) => chart!(x0..x1, (y0..y1).log_scale()),
        (true, true) => chart!((x0..x1).log_scale(), (y0..y1).log_scale()),
    }
}

/// Axis tick text: integers without decimals, thousands as `K`, millions as `M`.
fn tick(x: f64) -> String {
    let a = x.abs();
    if a >= 1e6 && (x / 1e5).fract() == 0.0 {
        format!("{}M", x / 1e6)
    } else if a >= 1e3 && (x / 100.0).fract() == 0.0 {
        format!("{}K", x / 1e3)
    } else if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

fn draw_series<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    panel: &Panel,
    plot: &PlotSpec,
    (x0, x1): (f64, f64),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for s in &panel.series {
        let style = s.color.stroke_width(2);
        let pts: Vec<&CurvePoint> = s
            .points
            .iter()
            .filter(|p| !plot.log_x || p.x > 0.0)
            .collect();
        // A series with one point (a baseline without training steps) spans the x range.
        let line: Vec<(f64, f64)> =
            if pts.len() == 1 && matches!(plot.x, XAxis::Step | XAxis::Seconds) {
                vec![(x0, pts[0].y.mean), (x1, pts[0].y.mean)]
            } else {
                pts.iter().map(|p| (p.x, p.y.mean)).collect()
            };
        let color = s.color;
        let dashed = s.dashed;
        let legend = move |(x, y): (i32, i32)| -> DynElement<'static, DB, (i32, i32)> {
            if dashed {
                DashedPathElement::new(vec![(x, y), (x + 22, y)], 5, 3, color.stroke_width(2))
                    .into_dyn()
            } else {
                PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(2)).into_dyn()
            }
        };
        if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(line, 6, 4, style))?
                .label(&s.name)
                .legend(legend);
        } else {
            chart
                .draw_series(LineSeries::new(line, style))?
                .label(&s.name)
                .legend(legend);
        }
        chart.draw_series(
            pts.iter()
                .filter(|p| p.y.sem > 0.0 && (!plot.log_y || p.y.mean > p.y.sem))
                .map(|p| {
                    ErrorBar::new_vertical(
                        p.x,
                        p.y.mean - p.y.sem,
                        p.y.mean,
                        p.y.mean + p.y.sem,
                        color.stroke_width(1),
                        6,
                    )
                }),
        )?;
    }
    if let Some(c) = panel.chance {
        let black = BLACK.stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(vec![(x0, c), (x1, c)], 8, 5, black))?
            .label("Random")
            .legend(|(x, y)| {
                DashedPathElement::new(vec![(x, y), (x + 22, y)], 5, 3, BLACK.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
}

#[cfg(test)]
mod tests {
    use super::{SlopeBound, power_fit, slope_bound};

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
