//! Figures (plotters, SVG and PNG): one image per plot spec, one panel per data set, one
//! series per solver (and per evaluated set), error bars = s.e.m. over repeats, the chance
//! line where the spec asks for it. Output bytes depend only on the results.

use crate::results::{CurvePoint, ExperimentResults};
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
        plan.ranking
            .evaluate
            .iter()
            .map(|s| s.as_str().to_string())
            .collect()
    } else {
        plot.sets.clone()
    };
    plan.datasets
        .iter()
        .enumerate()
        .map(|(di, d)| {
            let mut series = Vec::new();
            for (si, sv) in plan.solvers.iter().enumerate() {
                for set in &sets {
                    let points = res.curve(di, si, set, &plot.metric, plot.x);
                    if points.is_empty() {
                        continue;
                    }
                    let name = if sets.len() > 1 {
                        format!("{} ({set})", sv.label)
                    } else {
                        sv.label.clone()
                    };
                    series.push(Series {
                        name,
                        color: PALETTE[si % PALETTE.len()],
                        dashed: set != "test",
                        points,
                    });
                }
            }
            let chance = plot.chance.then(|| {
                let set = sets.iter().find(|s| *s == "test").unwrap_or(&sets[0]);
                (0..plan.solvers.len())
                    .flat_map(|si| res.curve(di, si, set, "chance", XAxis::Step))
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
        .y_label_area_size(58);
    if plot.log_x {
        let mut chart = builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(&plot.x_label)
            .y_desc(&plot.y_label)
            .x_label_formatter(&|x| tick(*x))
            .label_style(("sans-serif", 13))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        draw_series(&mut chart, panel, plot, (x0, x1))
    } else {
        let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(&plot.x_label)
            .y_desc(&plot.y_label)
            .x_label_formatter(&|x| tick(*x))
            .label_style(("sans-serif", 13))
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        draw_series(&mut chart, panel, plot, (x0, x1))
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

fn draw_series<'a, DB, X>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    panel: &Panel,
    plot: &PlotSpec,
    (x0, x1): (f64, f64),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
{
    for s in &panel.series {
        let style = s.color.stroke_width(2);
        let pts: Vec<&CurvePoint> = s
            .points
            .iter()
            .filter(|p| !plot.log_x || p.x > 0.0)
            .collect();
        // A series with one point (a baseline without training steps) spans the x range.
        let line: Vec<(f64, f64)> = if pts.len() == 1 && plot.x != XAxis::K {
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
        chart.draw_series(pts.iter().filter(|p| p.y.sem > 0.0).map(|p| {
            ErrorBar::new_vertical(
                p.x,
                p.y.mean - p.y.sem,
                p.y.mean,
                p.y.mean + p.y.sem,
                color.stroke_width(1),
                6,
            )
        }))?;
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
