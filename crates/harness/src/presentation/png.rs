//! The PNG: text rasterised glyph by glyph from the font's own metrics (so letters are evenly
//! spaced at every size), the supersampled shapes box-filtered down (anti-aliasing), and the
//! encoding.

use super::font::{FONT, metrics};
use super::layout::{Align, Label};
use plotters::prelude::*;

/// PNGs are written at this multiple of the SVG's size (print resolution: 192 dpi at 96 CSS
/// pixels per inch). The report shows them at the SVG size.
pub const PNG_SCALE: u32 = 2;
/// The PNG's lines and shapes are drawn at this multiple of the PNG's resolution and
/// box-filtered down (anti-aliasing); text is rasterised at the PNG's resolution.
pub(super) const SUPERSAMPLE: u32 = 2;
pub(super) fn encode_png(rgb: &[u8], (w, h): (u32, u32)) -> Result<Vec<u8>, String> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(rgb, w, h, image::ColorType::Rgb8)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Box filter of an RGB buffer by an integer factor.
pub(super) fn downsample(big: &[u8], (w, h): (u32, u32), f: u32) -> Vec<u8> {
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

pub(super) const TEXT: RGBColor = RGBColor(0x22, 0x22, 0x22);

/// Text into an RGB buffer at `s` times the layout's pixels, glyph by glyph from the font's
/// own metrics (advance, kerning and left side bearing), so letters are evenly spaced.
pub(super) fn raster_label(
    rgb: &mut [u8],
    (w, h): (u32, u32),
    l: &Label,
    s: f64,
) -> Result<(), String> {
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
