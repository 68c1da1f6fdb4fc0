//! The OASIS image representation (spec §6.1; \[J\] §3): multi-scale overlapping blocks, a
//! uniform-LBP texture histogram and a palette colour histogram per block, a visual codebook
//! learned by k-means, and tf-idf weighted, L2-normalised bags of visual words.
//!
//! Every choice the papers leave open is a field of [`ImageFeatureConfig`]; its canonical
//! text ([`ImageFeatureConfig::canonical`]) is part of the features' identity. Defaults and
//! the documented choices:
//!
//! * **Decoding.** JPEG and PNG (format from the magic bytes, else the extension); grey,
//!   grey+alpha, RGB, RGBA and 16-bit images are converted to 8-bit RGB (alpha dropped, grey
//!   replicated). EXIF orientation is ignored. An undecodable file is a
//!   [`DataError::Inconsistent`] naming the file; a panic inside the decoder is caught and
//!   reported the same way.
//! * **Pyramid.** Level 0 is the image itself; level `k + 1` is level `k` down-scaled by
//!   `scale_factor` = 1.25 (each side `round(side / 1.25)`, resampled from level `k` by
//!   **area averaging**, i.e. a box filter with fractional pixel coverage). Blocks of 64x64
//!   pixels are taken every 32 pixels, **full blocks only** (`(side - 64) / 32 + 1` per side;
//!   a right/bottom strip narrower than a block step is not covered). Level 0 is always used
//!   when it holds at least one block; every further level is used while it holds at least
//!   `min_blocks` = 10 blocks; the first level with fewer is **not** used
//!   (`keep_last_level = false`, matching the spec's 300x200 example: 8·5 + 6·4 + 5·3 = 79
//!   blocks). Images with a side below 64 pixels have no blocks (an empty bag).
//! * **Texture.** Grey level `0.299 R + 0.587 G + 0.114 B` (Rec. 601). [`Lbp`] computes
//!   `LBP_{8,2}`: sample `p` (0..8) at `(x + 2 cos(2πp/8), y - 2 sin(2πp/8))` (image y axis
//!   down, so sample 0 is east, 2 north, 4 west, 6 south), bilinearly interpolated (samples
//!   on the pixel grid are read directly); bit `p` is set iff sample `p` >= the centre. A
//!   block's texture histogram counts the pixels whose whole circle lies **inside the block**
//!   (the inner 60x60 pixels), over 59 bins: the 58 uniform codes (at most two circular 0/1
//!   transitions) in ascending code order, then one bin for all other codes.
//! * **Colour.** Every pixel of the block (64x64) is mapped to the nearest palette colour
//!   (squared RGB distance, ties to the lower index); 20 colours, learned by k-means on RGB
//!   pixels sampled uniformly (with replacement) from the level-0 pixels of the fitting
//!   images.
//! * **Block descriptor.** `[texture (59) | colour (20)]`, each histogram L1-normalised
//!   (`block_norm = "l1_each"`, so texture and colour weigh the same); alternatives: one L1
//!   normalisation of the concatenation, or raw counts.
//! * **Visual words.** k-means (k = 1000; 10000 optional) on block descriptors of the fitting
//!   images (all of them, or a uniform sample of `codebook_max_samples`); every block maps to
//!   its nearest codeword (squared Euclidean). See [`super::kmeans`] for initialisation,
//!   empty clusters and stopping.
//! * **Weighting.** `f_j · -ln(df_j / N)` with `df_j` the number of fitting images holding
//!   word `j` and `N` the number of fitting images, then L2 normalisation (spec \[J\] form; the
//!   same formula as [`crate::pipelines::tfidf`]). A word absent from every
//!   fitting image gets weight 0 (not stored), as does a word present in all of them.
//!
//! [`fit`] learns the palette, the codebook and the idf from fitting images;
//! [`FittedPipeline::transform`] maps images to tf-idf rows; [`caltech_features`] runs the
//! whole pipeline on a Caltech-256 subset and caches the result as svmlight plus a TOML
//! sidecar.

use super::kmeans::{self, KMeansParams};
use crate::caltech256::{Caltech256, ImageEntry, Subset};
use crate::formats::svmlight::{self, SvmlightData, SvmlightOptions};
use crate::identity::labeled_set_content_id;
use crate::pipelines::tfidf::{idf_of_bags, tfidf_l2_bags};
use crate::{ContentHasher, ContentId, DataError};
use dyad_core::{LabeledSet, derive_seed, seeded};
use image::RgbImage;
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use sprs::CsMat;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version tag of the feature definition (part of every identity).
pub const FEATURES_VERSION: &str = "dyad-oasis-image-features/v1";

/// Number of LBP samples (the `8` of `LBP_{8,2}`).
pub const LBP_POINTS: usize = 8;
/// Bins of the uniform LBP histogram: 58 uniform codes + 1 for all others.
pub const LBP_BINS: usize = 59;

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// Resampling filter between pyramid levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resample {
    /// Area averaging (box filter with fractional coverage): anti-aliased.
    Area,
    /// Bilinear interpolation at the target pixel centres (no anti-aliasing).
    Bilinear,
}

/// Normalisation of a block descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockNorm {
    /// Texture and colour histograms each sum to 1.
    L1Each,
    /// The concatenated descriptor sums to 1.
    L1Joint,
    /// Raw pixel counts.
    Counts,
}

/// Every choice of the image representation (spec §6.1). Unknown fields are errors; absent
/// fields take the documented defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ImageFeatureConfig {
    /// Block side in pixels (64).
    pub block_size: usize,
    /// Block step in pixels (32).
    pub block_step: usize,
    /// Down-scaling factor between pyramid levels (1.25).
    pub scale_factor: f64,
    /// Levels after the first are used while they hold at least this many blocks (10).
    pub min_blocks: usize,
    /// Also use the first level with fewer than `min_blocks` (but at least one) blocks.
    pub keep_last_level: bool,
    /// Resampling filter between levels (area).
    pub resample: Resample,
    /// Grey level weights of R, G, B (Rec. 601: 0.299, 0.587, 0.114).
    pub gray_weights: [f64; 3],
    /// LBP circle radius in pixels (2).
    pub lbp_radius: f64,
    /// Colour palette size (20).
    pub palette_size: usize,
    /// Visual codebook size (1000; the web experiments used 10000).
    pub codebook_size: usize,
    /// Block descriptor normalisation (l1_each).
    pub block_norm: BlockNorm,
    /// RGB pixels sampled per fitting image for the palette (256).
    pub palette_pixels_per_image: usize,
    /// At most this many palette samples in total (uniform subsample; 200000).
    pub palette_max_samples: usize,
    /// At most this many block descriptors for the codebook (uniform subsample; 100000).
    pub codebook_max_samples: usize,
    /// k-means assignment steps at most (30).
    pub kmeans_max_iter: usize,
    /// k-means stops when an assignment step lowers the inertia by at most this fraction.
    pub kmeans_tolerance: f64,
}

impl Default for ImageFeatureConfig {
    fn default() -> Self {
        ImageFeatureConfig {
            block_size: 64,
            block_step: 32,
            scale_factor: 1.25,
            min_blocks: 10,
            keep_last_level: false,
            resample: Resample::Area,
            gray_weights: [0.299, 0.587, 0.114],
            lbp_radius: 2.0,
            palette_size: 20,
            codebook_size: 1000,
            block_norm: BlockNorm::L1Each,
            palette_pixels_per_image: 256,
            palette_max_samples: 200_000,
            codebook_max_samples: 100_000,
            kmeans_max_iter: 30,
            kmeans_tolerance: 1e-4,
        }
    }
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Resample {
    pub fn as_str(self) -> &'static str {
        match self {
            Resample::Area => "area",
            Resample::Bilinear => "bilinear",
        }
    }
}

impl BlockNorm {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockNorm::L1Each => "l1_each",
            BlockNorm::L1Joint => "l1_joint",
            BlockNorm::Counts => "counts",
        }
    }
}

impl ImageFeatureConfig {
    /// Descriptor length: texture bins + palette size.
    pub fn descriptor_dim(&self) -> usize {
        LBP_BINS + self.palette_size
    }

    /// The canonical text form: TOML `key = value` lines in a fixed order, floats in Rust's
    /// shortest round-trip form. It deserialises back to the same configuration.
    pub fn canonical(&self) -> String {
        let g = self.gray_weights;
        format!(
            "block_size = {}\nblock_step = {}\nscale_factor = {:?}\nmin_blocks = {}\n\
             keep_last_level = {}\nresample = {}\ngray_weights = [{:?}, {:?}, {:?}]\n\
             lbp_radius = {:?}\npalette_size = {}\ncodebook_size = {}\nblock_norm = {}\n\
             palette_pixels_per_image = {}\npalette_max_samples = {}\n\
             codebook_max_samples = {}\nkmeans_max_iter = {}\nkmeans_tolerance = {:?}\n",
            self.block_size,
            self.block_step,
            self.scale_factor,
            self.min_blocks,
            self.keep_last_level,
            toml_str(self.resample.as_str()),
            g[0],
            g[1],
            g[2],
            self.lbp_radius,
            self.palette_size,
            self.codebook_size,
            toml_str(self.block_norm.as_str()),
            self.palette_pixels_per_image,
            self.palette_max_samples,
            self.codebook_max_samples,
            self.kmeans_max_iter,
            self.kmeans_tolerance,
        )
    }

    /// Check every field's range.
    pub fn validate(&self) -> Result<(), DataError> {
        let bad = |m: String| Err(DataError::Param(format!("image features: {m}")));
        if !(self.lbp_radius.is_finite() && self.lbp_radius >= 1.0 && self.lbp_radius <= 16.0) {
            return bad(format!(
                "lbp_radius must be in [1, 16], got {}",
                self.lbp_radius
            ));
        }
        let margin = self.lbp_radius.ceil() as usize;
        if !(2 * margin < self.block_size && self.block_size <= 4096) {
            return bad(format!(
                "block_size must exceed the LBP circle (> {}) and be <= 4096, got {}",
                2 * margin,
                self.block_size
            ));
        }
        if self.block_step == 0 || self.block_step > self.block_size {
            return bad(format!(
                "block_step must be in 1..={}, got {}",
                self.block_size, self.block_step
            ));
        }
        if !(self.scale_factor.is_finite() && self.scale_factor > 1.0 && self.scale_factor <= 16.0)
        {
            return bad(format!(
                "scale_factor must be in (1, 16], got {}",
                self.scale_factor
            ));
        }
        if self.min_blocks == 0 {
            return bad("min_blocks must be >= 1".into());
        }
        let g = self.gray_weights;
        if g.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || g.iter().sum::<f64>() <= 0.0 {
            return bad(format!(
                "gray_weights must be finite, >= 0 and not all 0, got {g:?}"
            ));
        }
        if !(1..=255).contains(&self.palette_size) {
            return bad(format!(
                "palette_size must be in 1..=255, got {}",
                self.palette_size
            ));
        }
        if !(1..=1 << 20).contains(&self.codebook_size) {
            return bad(format!(
                "codebook_size must be in 1..=2^20, got {}",
                self.codebook_size
            ));
        }
        if self.palette_pixels_per_image == 0 || self.palette_max_samples < self.palette_size {
            return bad(format!(
                "need palette_pixels_per_image >= 1 and palette_max_samples >= palette_size, \
                 got {} and {}",
                self.palette_pixels_per_image, self.palette_max_samples
            ));
        }
        if self.codebook_max_samples < self.codebook_size {
            return bad(format!(
                "codebook_max_samples ({}) must be >= codebook_size ({})",
                self.codebook_max_samples, self.codebook_size
            ));
        }
        if self.kmeans_max_iter == 0
            || !(self.kmeans_tolerance.is_finite() && self.kmeans_tolerance >= 0.0)
        {
            return bad(format!(
                "need kmeans_max_iter >= 1 and a finite kmeans_tolerance >= 0, got {} and {}",
                self.kmeans_max_iter, self.kmeans_tolerance
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------

fn undecodable(path: &Path, detail: impl std::fmt::Display) -> DataError {
    DataError::Inconsistent {
        path: path.to_path_buf(),
        message: format!("cannot decode as an image (JPEG/PNG): {detail}"),
    }
}

fn open_reader(
    path: &Path,
) -> Result<image::io::Reader<std::io::BufReader<std::fs::File>>, DataError> {
    image::io::Reader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|e| DataError::io(path, e))
}

/// Decode an image file to 8-bit RGB.
pub fn decode_rgb(path: &Path) -> Result<RgbImage, DataError> {
    let reader = open_reader(path)?;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.decode())) {
        Ok(Ok(img)) => Ok(img.to_rgb8()),
        Ok(Err(e)) => Err(undecodable(path, e)),
        Err(_) => Err(undecodable(path, "the decoder panicked")),
    }
}

/// Width and height of an image file, from its header only.
pub fn image_dimensions(path: &Path) -> Result<(u32, u32), DataError> {
    let reader = open_reader(path)?;
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.into_dimensions())) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(undecodable(path, e)),
        Err(_) => Err(undecodable(path, "the decoder panicked")),
    }
}

/// Something that yields an RGB image: a file path (decoded on demand) or an image in memory.
pub trait ImageSource {
    fn load(&self) -> Result<Cow<'_, RgbImage>, DataError>;
}

impl ImageSource for Path {
    fn load(&self) -> Result<Cow<'_, RgbImage>, DataError> {
        decode_rgb(self).map(Cow::Owned)
    }
}

impl ImageSource for PathBuf {
    fn load(&self) -> Result<Cow<'_, RgbImage>, DataError> {
        decode_rgb(self).map(Cow::Owned)
    }
}

impl ImageSource for RgbImage {
    fn load(&self) -> Result<Cow<'_, RgbImage>, DataError> {
        Ok(Cow::Borrowed(self))
    }
}

impl ImageSource for ImageEntry {
    fn load(&self) -> Result<Cow<'_, RgbImage>, DataError> {
        decode_rgb(&self.path).map(Cow::Owned)
    }
}

impl<T: ImageSource + ?Sized> ImageSource for &T {
    fn load(&self) -> Result<Cow<'_, RgbImage>, DataError> {
        (**self).load()
    }
}

// ---------------------------------------------------------------------------------------
// Pyramid and resampling
// ---------------------------------------------------------------------------------------

/// One used pyramid level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelShape {
    pub width: usize,
    pub height: usize,
    pub blocks_x: usize,
    pub blocks_y: usize,
}

impl LevelShape {
    pub fn blocks(&self) -> usize {
        self.blocks_x * self.blocks_y
    }
}

/// Full blocks of side `size` every `step` pixels along a side of `len` pixels.
pub fn blocks_along(len: usize, size: usize, step: usize) -> usize {
    if len < size || step == 0 {
        0
    } else {
        (len - size) / step + 1
    }
}

/// The pyramid levels used for a `width x height` image (see the module docs).
pub fn pyramid_shapes(width: usize, height: usize, cfg: &ImageFeatureConfig) -> Vec<LevelShape> {
    let mut out: Vec<LevelShape> = Vec::new();
    let (mut w, mut h) = (width, height);
    loop {
        let s = LevelShape {
            width: w,
            height: h,
            blocks_x: blocks_along(w, cfg.block_size, cfg.block_step),
            blocks_y: blocks_along(h, cfg.block_size, cfg.block_step),
        };
        let n = s.blocks();
        if n == 0 {
            break;
        }
        if out.is_empty() || n >= cfg.min_blocks {
            out.push(s);
        } else {
            if cfg.keep_last_level {
                out.push(s);
            }
            break;
        }
        let next = |v: usize| (v as f64 / cfg.scale_factor).round() as usize;
        let (nw, nh) = (next(w), next(h));
        if nw >= w && nh >= h {
            break; // cannot happen for scale_factor > 1 and sides >= block_size >= 3
        }
        (w, h) = (nw, nh);
    }
    out
}

/// Planar `f32` RGB.
#[derive(Debug, Clone, PartialEq)]
struct Planes {
    w: usize,
    h: usize,
    ch: [Vec<f32>; 3],
}

fn planes_from_rgb(img: &RgbImage) -> Planes {
    let (w, h) = (img.width() as usize, img.height() as usize);
    let mut ch = [
        Vec::with_capacity(w * h),
        Vec::with_capacity(w * h),
        Vec::with_capacity(w * h),
    ];
    for px in img.as_raw().chunks_exact(3) {
        ch[0].push(f32::from(px[0]));
        ch[1].push(f32::from(px[1]));
        ch[2].push(f32::from(px[2]));
    }
    Planes { w, h, ch }
}

/// Resampling taps: for every output index, the first source index and the weights (summing
/// to 1) of consecutive source samples.
fn taps(src: usize, dst: usize, filter: Resample) -> Vec<(usize, Vec<f32>)> {
    let s = src as f64 / dst as f64;
    (0..dst)
        .map(|i| match filter {
            Resample::Area => {
                let lo = i as f64 * s;
                let hi = ((i + 1) as f64 * s).min(src as f64);
                let j0 = (lo.floor() as usize).min(src - 1);
                let j1 = (hi.ceil() as usize).clamp(j0 + 1, src);
                let w: Vec<f64> = (j0..j1)
                    .map(|j| (hi.min((j + 1) as f64) - lo.max(j as f64)).max(0.0))
                    .collect();
                let total: f64 = w.iter().sum();
                let w = if total > 0.0 {
                    w.iter().map(|v| (v / total) as f32).collect()
                } else {
                    vec![1.0]
                };
                (j0, w)
            }
            Resample::Bilinear => {
                let c = ((i as f64 + 0.5) * s - 0.5).clamp(0.0, (src - 1) as f64);
                let j0 = c.floor() as usize;
                let f = c - j0 as f64;
                if f > 0.0 && j0 + 1 < src {
                    (j0, vec![(1.0 - f) as f32, f as f32])
                } else {
                    (j0, vec![1.0])
                }
            }
        })
        .collect()
}

/// `Σ w_k v_k` written as `v_0 + Σ_{k≥1} w_k (v_k - v_0)` (equal for weights summing to 1),
/// which keeps constant regions exactly constant: flat areas must not acquire rounding noise
/// that LBP's `>=` comparisons would turn into texture.
#[inline]
fn combine(vals: &[f32], w: &[f32]) -> f32 {
    let v0 = vals[0];
    let mut acc = v0;
    for (&v, &wk) in vals[1..].iter().zip(&w[1..]) {
        acc += wk * (v - v0);
    }
    acc
}

fn resample(p: &Planes, nw: usize, nh: usize, filter: Resample) -> Planes {
    let tx = taps(p.w, nw, filter);
    let ty = taps(p.h, nh, filter);
    let mut tmp = vec![0f32; p.h * nw];
    let ch = std::array::from_fn(|c| {
        let src = &p.ch[c];
        for y in 0..p.h {
            let row = &src[y * p.w..(y + 1) * p.w];
            let out = &mut tmp[y * nw..(y + 1) * nw];
            for (o, (s, w)) in out.iter_mut().zip(&tx) {
                *o = combine(&row[*s..*s + w.len()], w);
            }
        }
        let mut dst = vec![0f32; nw * nh];
        for (y, (s, w)) in ty.iter().enumerate() {
            let out = &mut dst[y * nw..(y + 1) * nw];
            let first = &tmp[s * nw..(s + 1) * nw];
            out.copy_from_slice(first);
            for (k, &wk) in w.iter().enumerate().skip(1) {
                let r = &tmp[(s + k) * nw..(s + k + 1) * nw];
                for ((o, &v), &v0) in out.iter_mut().zip(r).zip(first) {
                    *o += wk * (v - v0);
                }
            }
        }
        dst
    });
    Planes { w: nw, h: nh, ch }
}

// ---------------------------------------------------------------------------------------
// LBP
// ---------------------------------------------------------------------------------------

/// Circular 0/1 transitions of an 8-bit LBP code.
pub fn lbp_transitions(code: u8) -> u32 {
    (code ^ code.rotate_left(1)).count_ones()
}

/// Whether an LBP code is uniform (at most two circular transitions).
pub fn is_uniform(code: u8) -> bool {
    lbp_transitions(code) <= 2
}

/// Histogram bin of every code: uniform codes in ascending order get bins 0..58, all other
/// codes bin 58.
pub fn uniform_bin_table() -> [u8; 256] {
    let mut t = [(LBP_BINS - 1) as u8; 256];
    let mut next = 0u8;
    for c in 0..=255u8 {
        if is_uniform(c) {
            t[c as usize] = next;
            next += 1;
        }
    }
    t
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tap {
    Direct {
        dx: isize,
        dy: isize,
    },
    Bilinear {
        x0: isize,
        y0: isize,
        fx: f32,
        fy: f32,
    },
}

/// The `LBP_{8,R}` operator (see the module docs for the sampling convention).
#[derive(Debug, Clone, PartialEq)]
pub struct Lbp {
    taps: [Tap; LBP_POINTS],
    margin: usize,
    bins: [u8; 256],
}

/// The `len` grey values starting at `(x0 + dx, y + dy)`.
#[inline]
fn window(gray: &[f32], w: usize, y: usize, x0: usize, len: usize, dx: isize, dy: isize) -> &[f32] {
    let start = ((y as isize + dy) * w as isize + x0 as isize + dx) as usize;
    &gray[start..start + len]
}

impl Lbp {
    /// `LBP_{8,radius}`.
    pub fn new(radius: f64) -> Self {
        let taps = std::array::from_fn(|p| {
            let a = std::f64::consts::TAU * p as f64 / LBP_POINTS as f64;
            let (dx, dy) = (radius * a.cos(), -radius * a.sin());
            let on_grid = |v: f64| (v - v.round()).abs() < 1e-9;
            if on_grid(dx) && on_grid(dy) {
                Tap::Direct {
                    dx: dx.round() as isize,
                    dy: dy.round() as isize,
                }
            } else {
                let (x0, y0) = (dx.floor(), dy.floor());
                Tap::Bilinear {
                    x0: x0 as isize,
                    y0: y0 as isize,
                    fx: (dx - x0) as f32,
                    fy: (dy - y0) as f32,
                }
            }
        });
        Lbp {
            taps,
            margin: radius.ceil() as usize,
            bins: uniform_bin_table(),
        }
    }

    /// Pixels within this distance of the border have no code (their circle does not fit).
    pub fn margin(&self) -> usize {
        self.margin
    }

    /// The histogram bin of a code.
    pub fn bin(&self, code: u8) -> usize {
        self.bins[code as usize] as usize
    }

    /// The code of pixel `(x, y)` of a row-major `w x h` grey image, or `None` when its
    /// circle does not fit in the image.
    pub fn code(&self, gray: &[f32], w: usize, h: usize, x: usize, y: usize) -> Option<u8> {
        let m = self.margin;
        if gray.len() < w * h || x < m || y < m || x + m >= w || y + m >= h {
            return None;
        }
        let mut out = [0u8];
        self.fill_row(gray, w, y, x, x + 1, &mut out);
        Some(out[0])
    }

    /// Codes of pixels `x0..x1` of row `y` into `out[..x1 - x0]`; every circle must fit.
    fn fill_row(&self, gray: &[f32], w: usize, y: usize, x0: usize, x1: usize, out: &mut [u8]) {
        let len = x1 - x0;
        let centre = &gray[y * w + x0..y * w + x1];
        let out = &mut out[..len];
        out.fill(0);
        for (p, tap) in self.taps.iter().enumerate() {
            match *tap {
                Tap::Direct { dx, dy } => {
                    let s = window(gray, w, y, x0, len, dx, dy);
                    for ((o, &v), &c) in out.iter_mut().zip(s).zip(centre) {
                        *o |= u8::from(v >= c) << p;
                    }
                }
                Tap::Bilinear {
                    x0: ox,
                    y0: oy,
                    fx,
                    fy,
                } => {
                    let a = window(gray, w, y, x0, len, ox, oy);
                    let b = window(gray, w, y, x0, len, ox + 1, oy);
                    let c = window(gray, w, y, x0, len, ox, oy + 1);
                    let d = window(gray, w, y, x0, len, ox + 1, oy + 1);
                    for i in 0..len {
                        // Lerp form: exact on constant neighbourhoods.
                        let top = a[i] + fx * (b[i] - a[i]);
                        let bot = c[i] + fx * (d[i] - c[i]);
                        let v = top + fy * (bot - top);
                        out[i] |= u8::from(v >= centre[i]) << p;
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Block descriptors
// ---------------------------------------------------------------------------------------

/// The block descriptors of one image, level by level, block rows top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockDescriptors {
    /// Descriptor length (59 + palette size).
    pub dim: usize,
    /// Row stride of `data` (`dim` rounded up to a multiple of 8; the padding is 0).
    pub stride: usize,
    pub data: Vec<f32>,
    pub levels: Vec<LevelShape>,
}

impl BlockDescriptors {
    pub fn len(&self) -> usize {
        self.data.len() / self.stride
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Descriptor `i` (without padding).
    pub fn get(&self, i: usize) -> &[f32] {
        &self.data[i * self.stride..i * self.stride + self.dim]
    }
}

/// Block descriptor extraction with a given palette.
#[derive(Debug, Clone, PartialEq)]
struct Extractor {
    cfg: ImageFeatureConfig,
    lbp: Lbp,
    palette: Vec<[f32; 3]>,
    gray: [f32; 3],
}

fn padded(dim: usize) -> usize {
    dim.div_ceil(8) * 8
}

impl Extractor {
    fn new(cfg: &ImageFeatureConfig, palette: Vec<[f32; 3]>) -> Self {
        let g = cfg.gray_weights;
        Extractor {
            cfg: cfg.clone(),
            lbp: Lbp::new(cfg.lbp_radius),
            palette,
            gray: [g[0] as f32, g[1] as f32, g[2] as f32],
        }
    }

    fn describe(&self, img: &RgbImage) -> BlockDescriptors {
        let dim = LBP_BINS + self.palette.len();
        let stride = padded(dim);
        let levels = pyramid_shapes(img.width() as usize, img.height() as usize, &self.cfg);
        let total: usize = levels.iter().map(LevelShape::blocks).sum();
        let mut data = Vec::with_capacity(total * stride);
        if !levels.is_empty() {
            let mut planes = planes_from_rgb(img);
            for (k, s) in levels.iter().enumerate() {
                if k > 0 {
                    planes = resample(&planes, s.width, s.height, self.cfg.resample);
                }
                self.level_blocks(&planes, s, stride, &mut data);
            }
        }
        BlockDescriptors {
            dim,
            stride,
            data,
            levels,
        }
    }

    fn level_blocks(&self, p: &Planes, s: &LevelShape, stride: usize, out: &mut Vec<f32>) {
        let (w, bs, step, m) = (
            p.w,
            self.cfg.block_size,
            self.cfg.block_step,
            self.lbp.margin,
        );
        let span_x = (s.blocks_x - 1) * step + bs;
        let span_y = (s.blocks_y - 1) * step + bs;
        let [r, g, b] = &p.ch;
        let gray: Vec<f32> = r
            .iter()
            .zip(g)
            .zip(b)
            .map(|((&r, &g), &b)| self.gray[0] * r + self.gray[1] * g + self.gray[2] * b)
            .collect();
        let mut codes = vec![0u8; w * p.h];
        for y in m..span_y - m {
            self.lbp
                .fill_row(&gray, w, y, m, span_x - m, &mut codes[y * w + m..]);
        }
        let mut colour = vec![0u8; w * p.h];
        let mut best = vec![0f32; span_x];
        let mut best_j = vec![0u32; span_x];
        for y in 0..span_y {
            let row = y * w..y * w + span_x;
            let (rr, gg, bb) = (&r[row.clone()], &g[row.clone()], &b[row.clone()]);
            best.fill(f32::INFINITY);
            for (j, c) in self.palette.iter().enumerate() {
                let j = j as u32;
                // Branch-free (mask) selects vectorise; ties keep the lower index.
                for ((((bd, bj), &r), &g), &b) in best
                    .iter_mut()
                    .zip(best_j.iter_mut())
                    .zip(rr)
                    .zip(gg)
                    .zip(bb)
                {
                    let (dr, dg, db) = (r - c[0], g - c[1], b - c[2]);
                    let d = dr * dr + dg * dg + db * db;
                    let mask = u32::from(d < *bd).wrapping_neg();
                    *bd = d.min(*bd);
                    *bj = (*bj & !mask) | (j & mask);
                }
            }
            for (o, &j) in colour[row].iter_mut().zip(&best_j) {
                *o = j as u8;
            }
        }
        let dim = LBP_BINS + self.palette.len();
        let mut hist = vec![0u32; dim];
        let inner = ((bs - 2 * m) * (bs - 2 * m)) as f32;
        let area = (bs * bs) as f32;
        for by in 0..s.blocks_y {
            for bx in 0..s.blocks_x {
                let (x0, y0) = (bx * step, by * step);
                hist.fill(0);
                for y in y0 + m..y0 + bs - m {
                    for &c in &codes[y * w + x0 + m..y * w + x0 + bs - m] {
                        hist[self.lbp.bin(c)] += 1;
                    }
                }
                for y in y0..y0 + bs {
                    for &c in &colour[y * w + x0..y * w + x0 + bs] {
                        hist[LBP_BINS + c as usize] += 1;
                    }
                }
                let (t, c) = match self.cfg.block_norm {
                    BlockNorm::L1Each => (1.0 / inner, 1.0 / area),
                    BlockNorm::L1Joint => (1.0 / (inner + area), 1.0 / (inner + area)),
                    BlockNorm::Counts => (1.0, 1.0),
                };
                out.extend(hist[..LBP_BINS].iter().map(|&v| v as f32 * t));
                out.extend(hist[LBP_BINS..].iter().map(|&v| v as f32 * c));
                out.extend(std::iter::repeat_n(0.0, stride - dim));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Fitting and transforming
// ---------------------------------------------------------------------------------------

/// What fitting did.
#[derive(Debug, Clone, PartialEq)]
pub struct FitStats {
    pub images: usize,
    pub palette_samples: usize,
    pub palette_iterations: usize,
    pub blocks: usize,
    pub codebook_samples: usize,
    pub codebook_iterations: usize,
    pub codebook_inertia: f64,
    pub codebook_reseeded: usize,
}

/// A fitted pipeline: palette, visual codebook and idf weights.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedPipeline {
    pub config: ImageFeatureConfig,
    /// Palette colours (RGB, 0..=255).
    pub palette: Vec<[f32; 3]>,
    /// `codebook_size x stride` codewords (stride = descriptor dim rounded up to 8, padding 0).
    codebook: Vec<f32>,
    codebook_norms: Vec<f32>,
    /// idf weight of every visual word.
    pub idf: Vec<f64>,
    pub stats: Option<FitStats>,
    extractor: Extractor,
}

fn sample_indices(rng: &mut dyad_core::Rng, len: usize, amount: usize) -> Vec<usize> {
    let mut v = rand::seq::index::sample(rng, len, amount).into_vec();
    v.sort_unstable();
    v
}

/// Learn the palette, the visual codebook and the idf weights from `images` (spec §6.1;
/// deterministic in `seed`). Images are decoded twice (palette pass, descriptor pass) so that
/// only pixel samples and block descriptors are held in memory.
pub fn fit<I: ImageSource>(
    images: &[I],
    config: &ImageFeatureConfig,
    seed: u64,
) -> Result<FittedPipeline, DataError> {
    config.validate()?;
    if images.is_empty() {
        return Err(DataError::Param("image features: no fitting images".into()));
    }
    // Palette.
    let mut rng = seeded(derive_seed(seed, "images/palette"));
    let mut pixels: Vec<f32> = Vec::new();
    for src in images {
        let img = src.load()?;
        let raw = img.as_raw();
        let n = raw.len() / 3;
        if n == 0 {
            continue;
        }
        for _ in 0..config.palette_pixels_per_image {
            let i = rng.random_range(0..n);
            pixels.extend(raw[3 * i..3 * i + 3].iter().map(|&v| f32::from(v)));
        }
    }
    if pixels.len() / 3 > config.palette_max_samples {
        let keep = sample_indices(&mut rng, pixels.len() / 3, config.palette_max_samples);
        pixels = keep
            .iter()
            .flat_map(|&i| pixels[3 * i..3 * i + 3].to_vec())
            .collect();
    }
    let km = kmeans::kmeans(
        &pixels,
        3,
        KMeansParams {
            k: config.palette_size,
            max_iter: config.kmeans_max_iter,
            tolerance: config.kmeans_tolerance,
        },
        &mut rng,
    )
    .map_err(|e| DataError::Param(format!("colour palette: {e}")))?;
    let palette: Vec<[f32; 3]> = km
        .centroids
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    let (palette_samples, palette_iterations) = (pixels.len() / 3, km.iterations);
    drop(pixels);

    // Block descriptors of every fitting image.
    let extractor = Extractor::new(config, palette.clone());
    let stride = padded(config.descriptor_dim());
    let mut all: Vec<f32> = Vec::new();
    let mut ranges = Vec::with_capacity(images.len());
    for src in images {
        let img = src.load()?;
        let d = extractor.describe(&img);
        let start = all.len() / stride;
        all.extend_from_slice(&d.data);
        ranges.push(start..all.len() / stride);
    }
    let blocks = all.len() / stride;
    let mut rng = seeded(derive_seed(seed, "images/codebook"));
    let sample: Cow<'_, [f32]> = if blocks > config.codebook_max_samples {
        let keep = sample_indices(&mut rng, blocks, config.codebook_max_samples);
        Cow::Owned(
            keep.iter()
                .flat_map(|&i| all[i * stride..(i + 1) * stride].iter().copied())
                .collect(),
        )
    } else {
        Cow::Borrowed(&all)
    };
    let km = kmeans::kmeans(
        &sample,
        stride,
        KMeansParams {
            k: config.codebook_size,
            max_iter: config.kmeans_max_iter,
            tolerance: config.kmeans_tolerance,
        },
        &mut rng,
    )
    .map_err(|e| {
        DataError::Param(format!(
            "visual codebook: {e} (block descriptors of {} fitting images)",
            images.len()
        ))
    })?;
    let codebook_samples = sample.len() / stride;
    drop(sample);
    let mut fitted = FittedPipeline::assemble(config, palette, km.centroids, Vec::new());
    let bags: Vec<BTreeMap<usize, f64>> = ranges
        .into_iter()
        .map(|r| fitted.bag_of(&all[r.start * stride..r.end * stride]))
        .collect();
    fitted.idf = idf_of_bags(&bags, config.codebook_size);
    fitted.stats = Some(FitStats {
        images: images.len(),
        palette_samples,
        palette_iterations,
        blocks,
        codebook_samples,
        codebook_iterations: km.iterations,
        codebook_inertia: km.inertia,
        codebook_reseeded: km.reseeded,
    });
    Ok(fitted)
}

impl FittedPipeline {
    fn assemble(
        config: &ImageFeatureConfig,
        palette: Vec<[f32; 3]>,
        codebook: Vec<f32>,
        idf: Vec<f64>,
    ) -> Self {
        let stride = padded(config.descriptor_dim());
        FittedPipeline {
            config: config.clone(),
            extractor: Extractor::new(config, palette.clone()),
            palette,
            codebook_norms: kmeans::sq_norms(&codebook, stride),
            codebook,
            idf,
            stats: None,
        }
    }

    /// A pipeline from given parts: `palette_size` colours, a `codebook_size x
    /// descriptor_dim` row-major codebook (unpadded) and `codebook_size` idf weights.
    pub fn from_parts(
        config: &ImageFeatureConfig,
        palette: Vec<[f32; 3]>,
        codebook: &[f32],
        idf: Vec<f64>,
    ) -> Result<Self, DataError> {
        config.validate()?;
        let dim = config.descriptor_dim();
        if palette.len() != config.palette_size
            || codebook.len() != config.codebook_size * dim
            || idf.len() != config.codebook_size
        {
            return Err(DataError::Param(format!(
                "image features: parts of the wrong size (palette {}, codebook {}, idf {}) for \
                 palette_size {} and codebook_size {} x {dim}",
                palette.len(),
                codebook.len(),
                idf.len(),
                config.palette_size,
                config.codebook_size
            )));
        }
        let values_ok = palette.iter().flatten().all(|v| v.is_finite())
            && codebook.iter().all(|v| v.is_finite())
            && idf.iter().all(|v| v.is_finite() && *v >= 0.0);
        if !values_ok {
            return Err(DataError::Param(
                "image features: non-finite or negative parts".into(),
            ));
        }
        let stride = padded(dim);
        let mut padded_cb = vec![0f32; config.codebook_size * stride];
        for (dst, src) in padded_cb
            .chunks_exact_mut(stride)
            .zip(codebook.chunks_exact(dim))
        {
            dst[..dim].copy_from_slice(src);
        }
        Ok(Self::assemble(config, palette, padded_cb, idf))
    }

    /// Codeword `j` (without padding).
    pub fn codeword(&self, j: usize) -> &[f32] {
        let stride = padded(self.config.descriptor_dim());
        &self.codebook[j * stride..j * stride + self.config.descriptor_dim()]
    }

    /// Number of visual words.
    pub fn dim(&self) -> usize {
        self.config.codebook_size
    }

    /// The block descriptors of an image.
    pub fn descriptors(&self, img: &RgbImage) -> BlockDescriptors {
        self.extractor.describe(img)
    }

    fn bag_of(&self, padded_descriptors: &[f32]) -> BTreeMap<usize, f64> {
        let stride = padded(self.config.descriptor_dim());
        let mut bag = BTreeMap::new();
        for x in padded_descriptors.chunks_exact(stride) {
            let (j, _) = kmeans::nearest(&self.codebook, &self.codebook_norms, stride, x);
            *bag.entry(j).or_insert(0.0) += 1.0;
        }
        bag
    }

    /// Visual-word counts of an image.
    pub fn bag(&self, img: &RgbImage) -> BTreeMap<usize, f64> {
        self.bag_of(&self.descriptors(img).data)
    }

    /// tf-idf weighted, L2-normalised bags of visual words, one row per image
    /// (`images.len() x codebook_size` CSR). An image without blocks gives an empty row.
    pub fn transform<I: ImageSource>(&self, images: &[I]) -> Result<CsMat<f64>, DataError> {
        let bags = images
            .iter()
            .map(|src| {
                let img = src.load()?;
                Ok(self.bag(&img))
            })
            .collect::<Result<Vec<_>, DataError>>()?;
        Ok(tfidf_l2_bags(&bags, &self.idf))
    }

    /// Identity of the fitted pipeline: configuration, palette, codebook and idf.
    pub fn identity(&self) -> ContentId {
        let mut h = ContentHasher::new(FEATURES_VERSION);
        h.str("fitted");
        h.str(&self.config.canonical());
        for c in self.palette.iter().flatten() {
            h.u64(u64::from(c.to_bits()));
        }
        for c in &self.codebook {
            h.u64(u64::from(c.to_bits()));
        }
        for &v in &self.idf {
            h.f64(v);
        }
        h.finish()
    }
}

// ---------------------------------------------------------------------------------------
// Caltech-256 end to end
// ---------------------------------------------------------------------------------------

/// Which images the palette, codebook and idf are learned from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitOn {
    /// Images of the classes **not** in the subset (spec §12.1 item 2: "a disjoint class
    /// set"): no image that is later split into train/test influences the representation.
    Disjoint,
    /// Images of the subset itself, labels unused (transductive: test images of later splits
    /// contribute unsupervised statistics).
    Subset,
}

impl FitOn {
    pub fn as_str(self) -> &'static str {
        match self {
            FitOn::Disjoint => "disjoint",
            FitOn::Subset => "subset",
        }
    }
}

/// Data-set level choices of the Caltech-256 features, plus the image representation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaltechFeatureConfig {
    /// Images with a side shorter than this are "too small" and dropped (64 = one block).
    pub min_side: u32,
    /// Fitting images (disjoint).
    pub fit_on: FitOn,
    /// At most this many fitting images, drawn uniformly with the seed (2000).
    pub fit_max_images: usize,
    pub features: ImageFeatureConfig,
}

impl Default for CaltechFeatureConfig {
    fn default() -> Self {
        CaltechFeatureConfig {
            min_side: 64,
            fit_on: FitOn::Disjoint,
            fit_max_images: 2000,
            features: ImageFeatureConfig::default(),
        }
    }
}

impl CaltechFeatureConfig {
    /// The canonical TOML text, with the image representation as table `[features]`.
    pub fn canonical(&self) -> String {
        self.canonical_under("")
    }

    fn canonical_under(&self, table: &str) -> String {
        let features_header = if table.is_empty() {
            "[features]".to_string()
        } else {
            format!("[{table}.features]")
        };
        format!(
            "min_side = {}\nfit_on = {}\nfit_max_images = {}\n\n{features_header}\n{}",
            self.min_side,
            toml_str(self.fit_on.as_str()),
            self.fit_max_images,
            self.features.canonical()
        )
    }

    pub fn validate(&self) -> Result<(), DataError> {
        if self.fit_max_images == 0 {
            return Err(DataError::Param("fit_max_images must be >= 1".into()));
        }
        self.features.validate()
    }
}

/// What happened with the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheStatus {
    /// No cache directory given.
    Disabled,
    /// Loaded from this svmlight file.
    Hit(PathBuf),
    /// Computed and written to this svmlight file.
    Written(PathBuf),
    /// A cache entry with the right key existed but was unusable; recomputed and rewritten.
    Rebuilt { path: PathBuf, reason: String },
}

/// The Caltech-256 features of a subset.
#[derive(Debug, Clone)]
pub struct CaltechFeatures {
    /// tf-idf rows; classes are the subset's folders by folder number, named by folder.
    pub set: LabeledSet,
    /// Each row's image, relative to the `256_ObjectCategories` folder.
    pub images: Vec<String>,
    /// Images dropped by the size filter.
    pub too_small: Vec<String>,
    /// Non-image entries found in the subset's class folders.
    pub skipped: Vec<PathBuf>,
    /// Fitting images used (relative paths).
    pub fit_images: Vec<String>,
    /// Identity of the inputs: version, canonical configuration, seed, subset, and every
    /// listed image's relative path, byte size and dimensions.
    pub key: ContentId,
    /// Content identity of `set` ([`labeled_set_content_id`]).
    pub content_id: ContentId,
    pub cache: CacheStatus,
    /// The fitted pipeline (`None` when loaded from the cache).
    pub pipeline: Option<FittedPipeline>,
}

fn listing_key(
    config: &CaltechFeatureConfig,
    seed: u64,
    subset: &Subset,
    class_folders: &[String],
    images: &[ImageEntry],
    too_small: &[ImageEntry],
    fit: &[&ImageEntry],
) -> ContentId {
    let mut h = ContentHasher::new(FEATURES_VERSION);
    h.str("caltech256");
    h.str(&config.canonical()).u64(seed).str(subset.name());
    h.u64(class_folders.len() as u64);
    for f in class_folders {
        h.str(f);
    }
    for (tag, list) in [("images", images), ("too-small", too_small)] {
        h.str(tag).u64(list.len() as u64);
        for e in list {
            h.str(&e.relative)
                .u64(e.bytes)
                .u64(u64::from(e.width))
                .u64(u64::from(e.height))
                .u64(u64::from(e.label));
        }
    }
    h.str("fit").u64(fit.len() as u64);
    for e in fit {
        h.str(&e.relative).u64(e.bytes);
    }
    h.finish()
}

/// The value of `name = "..."` in a sidecar written by this module.
fn sidecar_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        l.strip_prefix(name)?
            .trim_start()
            .strip_prefix('=')?
            .trim()
            .strip_prefix('"')?
            .strip_suffix('"')
    })
}

fn load_cached(
    svm: &Path,
    sidecar: &Path,
    key: &ContentId,
    classes: &[String],
    images: &[ImageEntry],
    dim: usize,
) -> Result<(LabeledSet, ContentId), String> {
    let text =
        std::fs::read_to_string(sidecar).map_err(|e| format!("{}: {e}", sidecar.display()))?;
    if sidecar_value(&text, "format") != Some(FEATURES_VERSION)
        || sidecar_value(&text, "key") != Some(key.0.as_str())
    {
        return Err(format!("{}: other format or key", sidecar.display()));
    }
    let content_id = sidecar_value(&text, "content_id")
        .ok_or_else(|| format!("{}: no content_id", sidecar.display()))?;
    let data = svmlight::read_svmlight(
        svm,
        SvmlightOptions {
            zero_based: false,
            n_features: Some(dim),
        },
    )
    .map_err(|e| e.to_string())?;
    if data.len() != images.len() {
        return Err(format!(
            "{}: {} rows for {} images",
            svm.display(),
            data.len(),
            images.len()
        ));
    }
    for (i, e) in images.iter().enumerate() {
        if data.comments[i].as_deref() != Some(e.relative.as_str())
            || data.labels[i] != f64::from(e.label)
        {
            return Err(format!(
                "{}:{}: row does not belong to {} (class {})",
                svm.display(),
                data.lines[i],
                e.relative,
                e.label
            ));
        }
    }
    let labels = images.iter().map(|e| e.label).collect();
    let set = LabeledSet::new(data.x, labels, classes.to_vec(), None).map_err(|e| e.to_string())?;
    let id = labeled_set_content_id(&set);
    if id.0 != content_id {
        return Err(format!(
            "{}: content {} differs from the recorded {}",
            svm.display(),
            id.short(),
            &content_id[..content_id.len().min(12)]
        ));
    }
    Ok((set, id))
}

/// The OASIS features of a Caltech-256 subset (spec §12.1 items 1-3), end to end: list the
/// subset (dropping images with a side below `min_side`), pick the fitting images
/// ([`FitOn`]; at most `fit_max_images`, drawn with `seed`), [`fit`] the pipeline with `seed`,
/// transform every kept image of the subset.
///
/// With a `cache_dir`, the result is stored there as `caltech256-<subset>-<key>.svm`
/// (svmlight, 1-based, label = class index, comment = image path) plus a `.toml` sidecar
/// with the format version, the key, the content identity, the class names and the
/// canonical configuration; both are written atomically (temporary file + rename), the
/// sidecar last. A later call with the same key (same configuration, seed, subset and image
/// files by path, size and dimensions) loads the svmlight file instead of recomputing; an
/// entry that fails any check is recomputed ([`CacheStatus::Rebuilt`]).
pub fn caltech_features(
    root: &Path,
    subset: &Subset,
    config: &CaltechFeatureConfig,
    seed: u64,
    cache_dir: Option<&Path>,
) -> Result<CaltechFeatures, DataError> {
    config.validate()?;
    let ds = Caltech256::open(root)?;
    let classes = ds.resolve(subset)?;
    let listing = ds.list(&classes, config.min_side)?;
    let class_folders: Vec<String> = classes
        .iter()
        .map(|&c| ds.classes[c].folder.clone())
        .collect();
    let fit_candidates: Vec<ImageEntry> = match config.fit_on {
        FitOn::Subset => listing.images.clone(),
        FitOn::Disjoint => ds.list(&ds.complement(&classes), config.min_side)?.images,
    };
    if fit_candidates.is_empty() {
        return Err(DataError::Param(format!(
            "no fitting images for subset {} with fit_on = {} (min_side {})",
            subset.name(),
            config.fit_on.as_str(),
            config.min_side
        )));
    }
    let fit_images: Vec<&ImageEntry> = if fit_candidates.len() > config.fit_max_images {
        let mut rng = seeded(derive_seed(seed, "caltech256/fit-images"));
        sample_indices(&mut rng, fit_candidates.len(), config.fit_max_images)
            .into_iter()
            .map(|i| &fit_candidates[i])
            .collect()
    } else {
        fit_candidates.iter().collect()
    };
    let key = listing_key(
        config,
        seed,
        subset,
        &class_folders,
        &listing.images,
        &listing.too_small,
        &fit_images,
    );
    let rels = |v: &[ImageEntry]| v.iter().map(|e| e.relative.clone()).collect::<Vec<_>>();
    let images = rels(&listing.images);
    let too_small = rels(&listing.too_small);
    let fit_rel: Vec<String> = fit_images.iter().map(|e| e.relative.clone()).collect();
    let dim = config.features.codebook_size;

    let paths = cache_dir.map(|d| {
        let stem = format!("caltech256-{}-{}", subset.name(), key.short());
        (
            d.join(format!("{stem}.svm")),
            d.join(format!("{stem}.toml")),
        )
    });
    let mut rebuild_reason = None;
    if let Some((svm, sidecar)) = &paths
        && sidecar.exists()
    {
        match load_cached(svm, sidecar, &key, &class_folders, &listing.images, dim) {
            Ok((set, content_id)) => {
                return Ok(CaltechFeatures {
                    set,
                    images,
                    too_small,
                    skipped: listing.skipped,
                    fit_images: fit_rel,
                    key,
                    content_id,
                    cache: CacheStatus::Hit(svm.clone()),
                    pipeline: None,
                });
            }
            Err(reason) => rebuild_reason = Some(reason),
        }
    }

    let pipeline = fit(&fit_images, &config.features, seed)?;
    let x = pipeline.transform(&listing.images)?;
    let labels: Vec<u32> = listing.images.iter().map(|e| e.label).collect();
    let set = LabeledSet::new(x, labels, class_folders.clone(), None)
        .map_err(|e| DataError::Param(e.to_string()))?;
    let content_id = labeled_set_content_id(&set);

    let cache = match paths {
        None => CacheStatus::Disabled,
        Some((svm, sidecar)) => {
            if let Some(dir) = cache_dir {
                std::fs::create_dir_all(dir).map_err(|e| DataError::io(dir, e))?;
            }
            let mut data = SvmlightData::new(
                set.labels.iter().map(|&l| f64::from(l)).collect(),
                set.x.clone(),
            );
            data.comments = images.iter().map(|r| Some(r.clone())).collect();
            svmlight::write_svmlight(&svm, &data, false, false)?;
            let class_list = class_folders
                .iter()
                .map(|c| toml_str(c))
                .collect::<Vec<_>>()
                .join(", ");
            let text = format!(
                "# Cached OASIS image features written by dyad-datasets; do not edit.\n\
                 format = {}\nkey = {}\ncontent_id = {}\nsubset = {}\nseed = {seed}\n\
                 features_file = {}\nrows = {}\ndim = {dim}\nn_too_small = {}\n\
                 n_fit_images = {}\nclasses = [{class_list}]\n\n[config]\n{}",
                toml_str(FEATURES_VERSION),
                toml_str(&key.0),
                toml_str(&content_id.0),
                toml_str(subset.name()),
                toml_str(
                    &svm.file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                ),
                set.n(),
                too_small.len(),
                fit_rel.len(),
                config.canonical_under("config"),
            );
            svmlight::write_atomically(&sidecar, |mut f| {
                use std::io::Write;
                f.write_all(text.as_bytes())
            })?;
            match rebuild_reason {
                Some(reason) => CacheStatus::Rebuilt { path: svm, reason },
                None => CacheStatus::Written(svm),
            }
        }
    };
    Ok(CaltechFeatures {
        set,
        images,
        too_small,
        skipped: listing.skipped,
        fit_images: fit_rel,
        key,
        content_id,
        cache,
        pipeline: Some(pipeline),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;

    fn gray_image(w: usize, h: usize, f: impl Fn(usize, usize) -> f32) -> Vec<f32> {
        (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .map(|(x, y)| f(x, y))
            .collect()
    }

    #[test]
    fn there_are_58_uniform_codes_and_59_bins() {
        let uniform: Vec<u8> = (0..=255u8).filter(|&c| is_uniform(c)).collect();
        assert_eq!(uniform.len(), 58);
        // 2 codes without transitions (0, 255) + 8 * 7 with exactly two.
        assert_eq!(
            uniform.iter().filter(|&&c| lbp_transitions(c) == 0).count(),
            2
        );
        assert_eq!(
            uniform.iter().filter(|&&c| lbp_transitions(c) == 2).count(),
            56
        );
        assert_eq!(lbp_transitions(0b0101_0101), 8);
        assert_eq!(lbp_transitions(0b1000_0001), 2); // circular: bits 7 and 0 are neighbours
        assert_eq!(lbp_transitions(0b0000_0101), 4);
        let t = uniform_bin_table();
        let mut seen = [0usize; LBP_BINS];
        t.iter().for_each(|&b| seen[b as usize] += 1);
        assert!(seen[..58].iter().all(|&n| n == 1));
        assert_eq!(seen[58], 256 - 58);
        assert_eq!((t[0], t[1], t[2], t[3], t[4], t[5]), (0, 1, 2, 3, 4, 58));
        assert_eq!(t[255], 57);
    }

    #[test]
    fn lbp_codes_on_hand_computed_patches() {
        let lbp = Lbp::new(2.0);
        assert_eq!(lbp.margin(), 2);
        // Constant patch: every sample equals the centre, all bits set.
        let flat = gray_image(7, 7, |_, _| 77.7);
        assert_eq!(lbp.code(&flat, 7, 7, 3, 3), Some(255));
        assert_eq!(lbp.code(&flat, 7, 7, 1, 3), None); // circle does not fit
        assert_eq!(lbp.code(&flat, 7, 7, 3, 5), None);
        // Centre 50 on a background of 10 with one bright (100) pixel on the grid: east -> bit 0, north -> bit 2, west 4, south 6.
        for ((x, y), code) in [((5, 3), 1u8), ((3, 1), 4), ((1, 3), 16), ((3, 5), 64)] {
            let img = gray_image(7, 7, |a, b| match (a, b) {
                (3, 3) => 50.0,
                p if p == (x, y) => 100.0,
                _ => 10.0,
            });
            assert_eq!(
                lbp.code(&img, 7, 7, 3, 3),
                Some(code),
                "bright pixel at {x},{y}"
            );
        }
        // Vertical step: x <= 3 dark (0), x >= 4 bright (100); centre (4, 3) is bright.
        // East, north-east (x = 5.41), north, south, south-east are bright (>= centre);
        // north-west (x = 2.59), west, south-west are dark: bits 0,1,2,6,7 = 199.
        let step = gray_image(9, 7, |x, _| if x >= 4 { 100.0 } else { 0.0 });
        assert_eq!(lbp.code(&step, 9, 7, 4, 3), Some(199));
        assert!(is_uniform(199));
        // A dark centre sees only samples >= itself.
        assert_eq!(lbp.code(&step, 9, 7, 3, 3), Some(255));
        // Interpolation: the north-east sample of (3, 3) sits at (4.414, 1.586), so a single
        // 100 at (5, 1) contributes (√2-1)·(√2-1)·100 = 17.157...
        let spot = |c: f32| {
            gray_image(7, 7, move |x, y| match (x, y) {
                (5, 1) => 100.0,
                (3, 3) => c,
                _ => 0.0,
            })
        };
        assert_eq!(lbp.code(&spot(17.1), 7, 7, 3, 3), Some(2));
        assert_eq!(lbp.code(&spot(17.2), 7, 7, 3, 3), Some(0));
    }

    /// Independent LBP: textbook bilinear interpolation in f64 at every sample.
    fn naive_code(g: &[f32], w: usize, x: usize, y: usize, r: f64) -> (u8, f64) {
        let c = f64::from(g[y * w + x]);
        let px = |xx: usize, yy: usize| f64::from(g[yy * w + xx]);
        let mut code = 0u8;
        let mut closest = f64::INFINITY;
        for p in 0..8 {
            let a = std::f64::consts::TAU * p as f64 / 8.0;
            let sx = x as f64 + r * a.cos();
            let sy = y as f64 - r * a.sin();
            let (x0, y0) = (sx.floor(), sy.floor());
            let (fx, fy) = (sx - x0, sy - y0);
            let (x0, y0) = (x0 as usize, y0 as usize);
            let at = |dx: usize, dy: usize, wgt: f64| {
                if wgt.abs() < 1e-12 {
                    0.0
                } else {
                    wgt * px(x0 + dx, y0 + dy)
                }
            };
            let v = at(0, 0, (1.0 - fx) * (1.0 - fy))
                + at(1, 0, fx * (1.0 - fy))
                + at(0, 1, (1.0 - fx) * fy)
                + at(1, 1, fx * fy);
            closest = closest.min((v - c).abs());
            if v >= c {
                code |= 1 << p;
            }
        }
        (code, closest)
    }

    #[test]
    fn lbp_matches_a_naive_implementation_on_random_images() {
        let mut rng = seeded(9);
        let (w, h) = (23, 17);
        for radius in [2.0, 1.0, 2.5] {
            let img: Vec<f32> = (0..w * h)
                .map(|_| f32::from(rng.random_range(0u8..=255)))
                .collect();
            let lbp = Lbp::new(radius);
            let m = lbp.margin();
            let mut compared = 0;
            for y in m..h - m {
                for x in m..w - m {
                    let (want, gap) = naive_code(&img, w, x, y, radius);
                    let got = lbp.code(&img, w, h, x, y).unwrap();
                    if gap > 1e-3 || gap == 0.0 {
                        assert_eq!(got, want, "r {radius} at ({x},{y})");
                        compared += 1;
                    }
                }
            }
            assert!(compared > (w - 2 * m) * (h - 2 * m) * 9 / 10);
        }
    }

    #[test]
    fn pyramid_levels_and_block_counts() {
        let cfg = ImageFeatureConfig::default();
        let shapes = pyramid_shapes(300, 200, &cfg);
        let dims: Vec<_> = shapes
            .iter()
            .map(|s| (s.width, s.height, s.blocks_x, s.blocks_y))
            .collect();
        // Spec §12.1 item 8: 8·5 + 6·4 + 5·3 = 79; the next level (154x102) has 3·2 = 6.
        assert_eq!(
            dims,
            vec![(300, 200, 8, 5), (240, 160, 6, 4), (192, 128, 5, 3)]
        );
        assert_eq!(shapes.iter().map(LevelShape::blocks).sum::<usize>(), 79);
        let keep = ImageFeatureConfig {
            keep_last_level: true,
            ..cfg.clone()
        };
        let with_last = pyramid_shapes(300, 200, &keep);
        assert_eq!(with_last.len(), 4);
        assert_eq!((with_last[3].width, with_last[3].height), (154, 102));
        assert_eq!(with_last.iter().map(LevelShape::blocks).sum::<usize>(), 85);
        // 640x480: 19·14, 512x384: 15·11, 410x307: 11·8, 328x246: 9·6, 262x197: 7·5,
        // 210x158: 5·3; then 168x126 has 4·2 = 8 < 10.
        let big: Vec<usize> = pyramid_shapes(640, 480, &cfg)
            .iter()
            .map(LevelShape::blocks)
            .collect();
        assert_eq!(big, vec![266, 165, 88, 54, 35, 15]);
        // Level 0 is used even below 10 blocks; smaller than one block: nothing.
        assert_eq!(pyramid_shapes(100, 100, &cfg).len(), 1);
        assert_eq!(pyramid_shapes(100, 100, &cfg)[0].blocks(), 4);
        assert_eq!(pyramid_shapes(64, 64, &cfg)[0].blocks(), 1);
        assert!(pyramid_shapes(63, 500, &cfg).is_empty());
        assert_eq!(blocks_along(95, 64, 32), 1);
        assert_eq!(blocks_along(96, 64, 32), 2);
    }

    #[test]
    fn area_resampling_matches_hand_computation_and_keeps_flat_regions_flat() {
        let p = Planes {
            w: 5,
            h: 1,
            ch: [
                vec![0.0, 10.0, 20.0, 30.0, 40.0],
                vec![7.3; 5],
                vec![1.0, 1.0, 1.0, 1.0, 1.0],
            ],
        };
        // s = 1.25: [0,1.25) -> (0 + 0.25·10)/1.25 = 2, [1.25,2.5) -> (0.75·10 + 0.5·20)/1.25
        // = 14, then 26 and 38.
        let r = resample(&p, 4, 1, Resample::Area);
        for (got, want) in r.ch[0].iter().zip([2.0f32, 14.0, 26.0, 38.0]) {
            assert!((got - want).abs() < 1e-4, "{:?}", r.ch[0]);
        }
        assert!(r.ch[1].iter().all(|&v| v == 7.3));
        let flat = Planes {
            w: 300,
            h: 200,
            ch: [vec![76.5; 60000], vec![0.1; 60000], vec![255.0; 60000]],
        };
        for filter in [Resample::Area, Resample::Bilinear] {
            let r = resample(&flat, 240, 160, filter);
            assert_eq!((r.w, r.h), (240, 160));
            assert!(r.ch[0].iter().all(|&v| v == 76.5));
            assert!(r.ch[1].iter().all(|&v| v == 0.1));
            assert!(r.ch[2].iter().all(|&v| v == 255.0));
        }
        // Area averaging preserves the mean of a 2x2 checkerboard scaled by 2.
        let mut checker = Planes {
            w: 8,
            h: 8,
            ch: [vec![0.0; 64], vec![0.0; 64], vec![0.0; 64]],
        };
        for i in 0..64 {
            checker.ch[0][i] = if (i % 8 + i / 8) % 2 == 0 { 200.0 } else { 0.0 };
        }
        let r = resample(&checker, 4, 4, Resample::Area);
        assert!(r.ch[0].iter().all(|&v| (v - 100.0).abs() < 1e-4));
    }

    fn two_colour_pipeline() -> FittedPipeline {
        let cfg = ImageFeatureConfig {
            palette_size: 2,
            codebook_size: 2,
            palette_max_samples: 2,
            codebook_max_samples: 2,
            ..ImageFeatureConfig::default()
        };
        let dim = cfg.descriptor_dim();
        let uniform = uniform_bin_table()[255] as usize;
        // Codeword 0: flat red block; codeword 1: flat blue block.
        let mut cb = vec![0f32; 2 * dim];
        cb[uniform] = 1.0;
        cb[LBP_BINS] = 1.0;
        cb[dim + uniform] = 1.0;
        cb[dim + LBP_BINS + 1] = 1.0;
        FittedPipeline::from_parts(
            &cfg,
            vec![[255.0, 0.0, 0.0], [0.0, 0.0, 255.0]],
            &cb,
            vec![1.0, 2.0],
        )
        .unwrap()
    }

    #[test]
    fn block_descriptors_on_a_two_colour_image() {
        let fp = two_colour_pipeline();
        // 128x64, red for x < 64, blue for x >= 64: three blocks at x = 0, 32, 64.
        let img = RgbImage::from_fn(128, 64, |x, _| {
            if x < 64 {
                image::Rgb([255, 0, 0])
            } else {
                image::Rgb([0, 0, 255])
            }
        });
        let d = fp.descriptors(&img);
        assert_eq!((d.len(), d.dim, d.stride), (3, 61, 64));
        assert_eq!(d.levels.len(), 1);
        let all_ones = fp.extractor.lbp.bin(255);
        // Left and right blocks: flat, every inner code 255; colour histogram one-hot.
        for (b, colour) in [(0, [1.0, 0.0]), (2, [0.0, 1.0])] {
            let v = d.get(b);
            assert_eq!(v[all_ones], 1.0);
            assert_eq!(v[..LBP_BINS].iter().sum::<f32>(), 1.0);
            assert_eq!(&v[LBP_BINS..], &colour);
        }
        // Middle block (x 32..96, inner pixels x 34..94): the red pixels at x = 62, 63 see
        // blue at east, north-east and south-east -> code 0b0111_1100 = 124; every other
        // inner pixel has code 255 (blue is darker than red in grey). 2 x 60 of 3600 pixels.
        let v = d.get(1);
        let edge = fp.extractor.lbp.bin(124);
        assert!((v[edge] - 120.0 / 3600.0).abs() < 1e-7, "{v:?}");
        assert!((v[all_ones] - 3480.0 / 3600.0).abs() < 1e-7);
        assert_eq!(&v[LBP_BINS..], &[0.5, 0.5]);
        // Bags: block 0 -> word 0, block 2 -> word 1; the middle block is equidistant in
        // colour but its texture is nearer... to both equally: check the flat ones only.
        let red = RgbImage::from_pixel(64, 64, image::Rgb([250, 5, 0]));
        let blue = RgbImage::from_pixel(70, 64, image::Rgb([0, 0, 240]));
        assert_eq!(fp.bag(&red), BTreeMap::from([(0, 1.0)]));
        assert_eq!(fp.bag(&blue), BTreeMap::from([(1, 1.0)]));
        let x = fp.transform(&[red, blue, RgbImage::new(10, 10)]).unwrap();
        assert_eq!(x.shape(), (3, 2));
        assert_eq!(x.outer_view(0).unwrap().indices(), &[0]);
        assert_eq!(x.outer_view(0).unwrap().data(), &[1.0]);
        assert_eq!(x.outer_view(1).unwrap().indices(), &[1]);
        assert_eq!(x.outer_view(2).unwrap().nnz(), 0);
        // Joint normalisation and raw counts.
        let mut cfg = fp.config.clone();
        cfg.block_norm = BlockNorm::Counts;
        let counts =
            FittedPipeline::from_parts(&cfg, fp.palette.clone(), &vec![0.0; 122], vec![0.0; 2])
                .unwrap()
                .descriptors(&img);
        assert_eq!(counts.get(1)[edge], 120.0);
        assert_eq!(&counts.get(1)[LBP_BINS..], &[2048.0, 2048.0]);
        cfg.block_norm = BlockNorm::L1Joint;
        let joint =
            FittedPipeline::from_parts(&cfg, fp.palette.clone(), &vec![0.0; 122], vec![0.0; 2])
                .unwrap()
                .descriptors(&img);
        assert!((joint.get(0).iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn config_defaults_canonical_form_and_unknown_fields() {
        let d = ImageFeatureConfig::default();
        assert_eq!(toml::from_str::<ImageFeatureConfig>("").unwrap(), d);
        let canon = d.canonical();
        assert_eq!(toml::from_str::<ImageFeatureConfig>(&canon).unwrap(), d);
        assert!(canon.contains("scale_factor = 1.25\n"));
        assert!(canon.contains("resample = \"area\"\n"));
        assert!(canon.contains("kmeans_tolerance = 0.0001\n"));
        let odd = ImageFeatureConfig {
            keep_last_level: true,
            resample: Resample::Bilinear,
            block_norm: BlockNorm::L1Joint,
            kmeans_tolerance: 1e-9,
            gray_weights: [1.0 / 3.0, 1.0 / 3.0, 0.1],
            codebook_size: 10_000,
            ..d.clone()
        };
        assert_ne!(odd.canonical(), canon);
        assert_eq!(
            toml::from_str::<ImageFeatureConfig>(&odd.canonical()).unwrap(),
            odd
        );
        let e = toml::from_str::<ImageFeatureConfig>("block_sise = 64").unwrap_err();
        assert!(e.to_string().contains("block_sise"), "{e}");
        let c = CaltechFeatureConfig::default();
        assert_eq!(
            toml::from_str::<CaltechFeatureConfig>(&c.canonical()).unwrap(),
            c
        );
        assert_eq!(
            toml::from_str::<CaltechFeatureConfig>(
                "fit_on = \"subset\"\n[features]\ncodebook_size = 7"
            )
            .unwrap()
            .features
            .codebook_size,
            7
        );
        assert!(toml::from_str::<CaltechFeatureConfig>("[features]\nx = 1").is_err());
        for bad in [
            ImageFeatureConfig {
                scale_factor: 1.0,
                ..d.clone()
            },
            ImageFeatureConfig {
                block_size: 4,
                ..d.clone()
            },
            ImageFeatureConfig {
                block_step: 0,
                ..d.clone()
            },
            ImageFeatureConfig {
                palette_size: 256,
                ..d.clone()
            },
            ImageFeatureConfig {
                lbp_radius: f64::NAN,
                ..d.clone()
            },
            ImageFeatureConfig {
                gray_weights: [0.0; 3],
                ..d.clone()
            },
            ImageFeatureConfig {
                codebook_max_samples: 999,
                ..d.clone()
            },
        ] {
            assert!(
                matches!(bad.validate(), Err(DataError::Param(_))),
                "{bad:?}"
            );
        }
        assert!(d.validate().is_ok());
    }
}
