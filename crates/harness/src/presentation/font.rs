//! The embedded DejaVu Sans font: its metrics (advances, left side bearings, character map
//! and pair kerning), parsed from the TrueType tables themselves so that the layout measures
//! text exactly as the PNG rasteriser draws it, and its registration with plotters.

use plotters::style::FontStyle;
use std::collections::HashMap;
use std::sync::{Once, OnceLock};

/// What the layout needs of a TrueType font: advances, left side bearings, the character map
/// and the pair kerning of the `kern` table (all in font units).
pub(super) struct FontMetrics {
    pub(super) units_per_em: f64,
    /// hhea ascender - descender: the height ab_glyph (plotters' rasteriser) scales to.
    pub(super) height: f64,
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

    pub(super) fn glyph(&self, c: char) -> u16 {
        self.cmap.get(&(c as u32)).copied().unwrap_or(0)
    }

    pub(super) fn advance(&self, g: u16) -> f64 {
        f64::from(self.advance.get(g as usize).copied().unwrap_or(0))
    }

    pub(super) fn lsb(&self, g: u16) -> f64 {
        f64::from(self.lsb.get(g as usize).copied().unwrap_or(0))
    }

    pub(super) fn kern(&self, a: u16, b: u16) -> f64 {
        f64::from(self.kern.get(&(a, b)).copied().unwrap_or(0))
    }

    /// Pen positions (font units) of each character of `text`, and the total advance.
    pub(super) fn pens(&self, text: &str) -> (Vec<(char, u16, f64)>, f64) {
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

pub(super) fn metrics(bold: bool) -> &'static FontMetrics {
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
pub(super) fn text_width(text: &str, em: f64, bold: bool) -> f64 {
    let m = metrics(bold);
    m.pens(text).1 * em / m.units_per_em
}

/// The registered font's name; in the SVG it reads as a font-family list with a fallback.
pub(super) const FONT: &str = "DejaVu Sans, sans-serif";

/// The embedded DejaVu Sans, registered under [`FONT`] for plotters' rasteriser.
pub(super) fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}
