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
/// The PNG text chunk holding a figure's render stamp ([`render_stamp`]).
const STAMP_KEY: &str = "dyad-render";

/// An RGB buffer as PNG (the settings of `image`'s encoder: default compression, adaptive
/// filtering), with `stamp` in a text chunk.
pub(super) fn encode_png(rgb: &[u8], (w, h): (u32, u32), stamp: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Default);
        enc.set_filter(png::FilterType::Sub);
        enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        (enc.add_text_chunk(STAMP_KEY.into(), stamp.into())).map_err(|e| e.to_string())?;
        let mut writer = enc.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// What a figure's PNG is drawn from: its SVG (the same layout and panels, drawn by the same
/// code), the fingerprint of the code that lays out and rasterises figures and the versions of
/// the crates that rasterise and encode it (`DYAD_RENDER_DEPS`, from `Cargo.lock` by the build
/// script). Equal stamps mean equal pixels, so a figure whose SVG and PNG on disk carry the
/// stamp of the figure about to be drawn is not drawn again (a re-run with every cell cached
/// renders nothing). The report's pages (report.rs) are not part of it: whatever they pass to
/// a figure shows in its SVG, and an edit of the pages alone leaves every PNG as it was.
pub(super) fn render_stamp(svg: &str) -> String {
    use sha2::{Digest, Sha256};
    // The drawing code's fingerprint, hashed once per process, not once per figure.
    static CODE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        crate::registry::fingerprint(&[
            "harness/src/presentation/plots/",
            "harness/src/presentation/layout.rs",
            "harness/src/presentation/font.rs",
            "harness/src/presentation/png.rs",
        ])
    });
    let mut h = Sha256::new();
    h.update(CODE.as_bytes());
    h.update(env!("DYAD_RENDER_DEPS").as_bytes());
    h.update(svg.as_bytes());
    dyad_datasets::identity::hex(&h.finalize())
}

/// The render stamp of the PNG at `path`, if it is one dyad wrote.
pub(super) fn stamp_of(path: &std::path::Path) -> Option<String> {
    let file = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    let reader = png::Decoder::new(file).read_info().ok()?;
    (reader.info().uncompressed_latin1_text.iter())
        .find(|t| t.keyword == STAMP_KEY)
        .map(|t| t.text.clone())
}

/// Box filter of an RGB buffer by an integer factor: each output pixel the rounded mean of its
/// `f x f` block (rows and columns beyond the last whole block are dropped). Per output row,
/// the block's `f` input rows are added element-wise first (in memory order, vectorised), then
/// each pixel's `f` columns.
pub(super) fn downsample(big: &[u8], (w, h): (u32, u32), f: u32) -> Vec<u8> {
    let (w, oh, f) = (w as usize, (h / f) as usize, f as usize);
    let ow = w / f;
    let n = (f * f) as u32;
    let mut out = Vec::with_capacity(ow * oh * 3);
    let mut columns = vec![0u32; ow * f * 3];
    // The rounded mean of a block; a shift when the block's size is a power of two (the
    // division was half of the filter's time).
    let shift = n.trailing_zeros();
    let mean = |s: u32| {
        if n.is_power_of_two() {
            (s + n / 2) >> shift
        } else {
            (s + n / 2) / n
        }
    };
    for block in big.chunks_exact(w * 3 * f).take(oh) {
        columns.fill(0);
        for row in block.chunks_exact(w * 3) {
            for (c, &v) in columns.iter_mut().zip(row) {
                *c += u32::from(v);
            }
        }
        for px in columns.chunks_exact(f * 3) {
            let mut sum = [0u32; 3];
            for p in px.chunks_exact(3) {
                for (s, &v) in sum.iter_mut().zip(p) {
                    *s += v;
                }
            }
            out.extend(sum.map(|s| mean(s) as u8));
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

#[cfg(test)]
mod stamp_tests {
    /// The build script's list of drawing crates, against the workspace's `Cargo.lock`.
    #[test]
    fn the_render_stamp_names_the_drawing_crates_at_their_locked_versions() {
        let deps: Vec<&str> = env!("DYAD_RENDER_DEPS").split(", ").collect();
        let lock =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
                .unwrap();
        for must in [
            "plotters ",
            "plotters-bitmap ",
            "png ",
            "ab_glyph ",
            "dejavu ",
        ] {
            assert!(
                deps.iter().any(|d| d.starts_with(must)),
                "{must}in {deps:?}"
            );
        }
        for d in &deps {
            let (name, version) = d.split_once(' ').unwrap();
            let entry = format!("name = \"{name}\"\nversion = \"{version}\"\n");
            assert!(lock.contains(&entry), "{d} is not in Cargo.lock");
        }
    }
}

#[cfg(test)]
mod downsample_tests {
    use super::downsample;

    /// The box filter pixel by pixel, as written in its definition.
    fn reference(big: &[u8], (w, h): (u32, u32), f: u32) -> Vec<u8> {
        let (ow, oh, n) = (w / f, h / f, f * f);
        let mut out = vec![0u8; (ow * oh * 3) as usize];
        for y in 0..oh {
            for x in 0..ow {
                for c in 0..3 {
                    let mut sum = 0u32;
                    for dy in 0..f {
                        for dx in 0..f {
                            sum +=
                                u32::from(big[(((y * f + dy) * w + x * f + dx) * 3 + c) as usize]);
                        }
                    }
                    out[((y * ow + x) * 3 + c) as usize] = ((sum + n / 2) / n) as u8;
                }
            }
        }
        out
    }

    #[test]
    fn the_box_filter_equals_its_definition_with_partial_blocks_dropped() {
        // Sizes that are and are not multiples of the factor, values across the whole range.
        for (w, h, f) in [
            (8, 6, 2),
            (9, 7, 2),
            (13, 10, 3),
            (4, 4, 4),
            (5, 3, 1),
            (3, 2, 4),
        ] {
            let big: Vec<u8> = (0..w * h * 3)
                .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
                .collect();
            let got = downsample(&big, (w, h), f);
            assert_eq!(got, reference(&big, (w, h), f), "{w} x {h} by {f}");
            assert_eq!(got.len(), ((w / f) * (h / f) * 3) as usize);
        }
        // Rounding half up: a block of 1s and 2s averages 1.5 -> 2; all 255 stays 255.
        assert_eq!(
            downsample(&[1, 1, 1, 2, 2, 2], (2, 1), 1),
            vec![1, 1, 1, 2, 2, 2]
        );
        assert_eq!(downsample(&[1, 1, 1, 2, 2, 2], (2, 1), 2), Vec::<u8>::new());
        let two_rows = [1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1];
        assert_eq!(downsample(&two_rows, (2, 2), 2), vec![2, 2, 2]);
        assert_eq!(downsample(&[255; 12], (2, 2), 2), vec![255, 255, 255]);
    }
}
