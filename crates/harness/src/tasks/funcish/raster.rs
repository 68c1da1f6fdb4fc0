//! A small RGB canvas for the pictures FuncISH's cells carry (Fig. 5's word glyphs, Fig. 6's
//! descriptor overlays): grayscale images, lines and rectangles, encoded as PNG. Text stays in
//! the report's caption, so pictures need no font.

use ndarray::ArrayView2;

pub(super) type Rgb = [u8; 3];

pub(super) const WHITE: Rgb = [255, 255, 255];
pub(super) const GRID_RED: Rgb = [214, 39, 40];
pub(super) const INK: Rgb = [30, 30, 30];

pub(super) struct Canvas {
    pub w: usize,
    pub h: usize,
    rgb: Vec<u8>,
}

impl Canvas {
    pub fn new(w: usize, h: usize, background: Rgb) -> Self {
        let mut rgb = Vec::with_capacity(w * h * 3);
        for _ in 0..w * h {
            rgb.extend_from_slice(&background);
        }
        Canvas { w, h, rgb }
    }

    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            let i = (y as usize * self.w + x as usize) * 3;
            self.rgb[i..i + 3].copy_from_slice(&c);
        }
    }

    #[cfg(test)]
    pub fn get(&self, x: usize, y: usize) -> Rgb {
        let i = (y * self.w + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// A grayscale image in `[0, 1]` (0 black), magnified `scale` times (nearest pixel), with
    /// its top-left corner at `(x0, y0)`.
    pub fn gray(&mut self, img: ArrayView2<f32>, x0: usize, y0: usize, scale: usize) {
        for ((r, c), &v) in img.indexed_iter() {
            let g = (v.clamp(0.0, 1.0) * 255.0).round() as u8;
            for dy in 0..scale {
                for dx in 0..scale {
                    self.set(
                        (x0 + c * scale + dx) as i64,
                        (y0 + r * scale + dy) as i64,
                        [g, g, g],
                    );
                }
            }
        }
    }

    /// A straight line (DDA), `width` pixels thick.
    pub fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), c: Rgb, width: usize) {
        let n = ((x1 - x0).abs().max((y1 - y0).abs()).ceil() as usize).max(1);
        let half = width as i64 / 2;
        for i in 0..=n {
            let t = i as f64 / n as f64;
            let (x, y) = (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
            for dy in -half..=(width as i64 - 1 - half) {
                for dx in -half..=(width as i64 - 1 - half) {
                    self.set(x.round() as i64 + dx, y.round() as i64 + dy, c);
                }
            }
        }
    }

    /// The outline of the square of side `side` centred at `(cx, cy)`.
    pub fn square(&mut self, (cx, cy): (f64, f64), side: f64, c: Rgb, width: usize) {
        let h = side / 2.0;
        let (a, b) = ((cx - h, cy - h), (cx + h, cy + h));
        self.line(a, (b.0, a.1), c, width);
        self.line((b.0, a.1), b, c, width);
        self.line(b, (a.0, b.1), c, width);
        self.line((a.0, b.1), a, c, width);
    }

    pub fn png(&self) -> Result<Vec<u8>, String> {
        use image::ImageEncoder;
        let mut out = Vec::new();
        image::codecs::png::PngEncoder::new(&mut out)
            .write_image(
                &self.rgb,
                self.w as u32,
                self.h as u32,
                image::ColorType::Rgb8,
            )
            .map_err(|e| e.to_string())?;
        Ok(out)
    }
}

/// A colour from dark red (`t = 0`) through orange to bright yellow (`t = 1`): Fig. 6's
/// importance scale.
pub(super) fn heat(t: f64) -> Rgb {
    let t = t.clamp(0.0, 1.0);
    let r = 140.0 + 115.0 * t.min(0.5) * 2.0;
    let g = 255.0 * t;
    let b = 40.0 * t;
    [r.round() as u8, g.round() as u8, b.round() as u8]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawing_stays_inside_and_encodes() {
        let mut c = Canvas::new(20, 10, WHITE);
        c.line((-5.0, 5.0), (30.0, 5.0), INK, 1);
        c.square((10.0, 5.0), 4.0, GRID_RED, 1);
        c.gray(ndarray::array![[0.0f32, 1.0], [0.5, 2.0]].view(), 0, 0, 2);
        assert_eq!(c.get(19, 5), INK);
        assert_eq!(c.get(8, 3), GRID_RED);
        assert_eq!(c.get(0, 0), [0, 0, 0]);
        assert_eq!(c.get(3, 1), [255, 255, 255]);
        assert_eq!(c.get(1, 3), [128, 128, 128]);
        let png = c.png().unwrap();
        let back = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!(back.dimensions(), (20, 10));
        assert_eq!(back.get_pixel(19, 5).0, INK);
        assert_eq!(heat(0.0), [140, 0, 0]);
        assert_eq!(heat(1.0), [255, 255, 40]);
    }
}
