//! The layout of a figure, computed here (not by plotters' chart builder) so that it can be
//! checked: [`Layout`] holds every rectangle a reader sees (plot areas, tick labels, legend,
//! titles) and where each data point is drawn. Legends sit below the panels, outside every
//! plot area; titles and captions wrap (or shrink) to fit; axes span the data with a little
//! padding; log axes are labelled at decades (or 1-2-5 within a decade) with labels kept
//! apart. Text is measured with the embedded font's metrics ([`super::font`]). Public so that
//! tests can check a figure as a reader would.

use super::font::{metrics, text_width};
use super::png::PNG_SCALE;
use crate::analysis::results::{CurvePoint, Stat};
use crate::spec::{ErrorBars, PlotSpec, XAxis};
use plotters::prelude::*;

/// A font size (pixels per em at 1x) adjusted so that the rasteriser's scale at
/// [`PNG_SCALE`] is an even number of pixels: plotters places glyphs relative to half that
/// scale, truncated, so an odd or fractional scale shifts glyphs up or down by a pixel.
fn em(nominal: f64) -> f64 {
    let m = metrics(false);
    let ratio = m.height / m.units_per_em;
    let ab = nominal * f64::from(PNG_SCALE) * ratio;
    (2.0 * (ab / 2.0).round()) / (f64::from(PNG_SCALE) * ratio)
}

const MARGIN: f64 = 10.0;
const LINE: f64 = 1.25;
/// Baseline below the top of a line's box, and box bottom below the baseline, in em.
pub(super) const ASCENT: f64 = 0.76;
const DESCENT: f64 = 0.24;
pub(super) const TICK_LEN: f64 = 4.0;
pub(super) const MARKER_R: f64 = 3.0;
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
    pub(crate) fn grow(&self, d: f64) -> Rect {
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

/// One line of a panel.
pub(crate) struct Series {
    pub(super) name: String,
    pub(super) color: RGBColor,
    pub(super) dashed: bool,
    pub(super) points: Vec<CurvePoint>,
    /// Points only, no line (a scatter of one solver against another).
    pub(super) scatter: bool,
}

pub(crate) struct Panel<'p> {
    /// The plot the panel belongs to: its axes, labels and error bars (a composite figure's
    /// panels come from several plots).
    pub(super) plot: &'p PlotSpec,
    pub(super) caption: String,
    pub(super) series: Vec<Series>,
    pub(super) chance: Option<f64>,
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
pub(super) fn half_bar(plot: &PlotSpec, y: &Stat) -> f64 {
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

pub(super) fn compute_layout(title: &str, panels: &[Panel<'_>], columns: Option<usize>) -> Layout {
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
pub(super) fn marked(s: &Series) -> bool {
    s.points.len() <= 40
}

/// The points of a series that are drawn (positive x on a log axis, positive y on a log axis).
pub(super) fn drawn_points<'s>(
    plot: &'s PlotSpec,
    s: &'s Series,
) -> impl Iterator<Item = &'s CurvePoint> {
    s.points.iter().filter(move |p| {
        p.x.is_finite()
            && p.y.mean.is_finite()
            && (!plot.log_x || p.x > 0.0)
            && (!plot.log_y || p.y.mean > 0.0)
    })
}

#[cfg(test)]
mod tests {
    use super::super::font::register_fonts;
    use super::*;

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
}
