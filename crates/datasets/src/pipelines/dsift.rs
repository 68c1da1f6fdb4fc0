//! Dense multi-scale SIFT (FuncISH §2.2): VLFeat-`vl_dsift`-style descriptors on a regular
//! grid of a grayscale image and of its 2×, 4×, 8× box-downsampled copies.
//!
//! # Definition
//!
//! Image `I` is an [`ArrayView2<f32>`] with rows = `y` (down) and columns = `x` (right); any
//! intensity unit works (descriptors are normalised).
//!
//! 1. **Gradient** (VLFeat's): central differences `gx = (I[y][x+1] − I[y][x−1]) / 2`,
//!    `gy = (I[y+1][x] − I[y−1][x]) / 2`; on the first/last column (row) the one-sided
//!    difference `I[.][1] − I[.][0]` (`I[.][W−1] − I[.][W−2]`); 0 along an axis of length 1.
//!    Magnitude `m = √(gx² + gy²)`, angle `φ = atan2(gy, gx) mod 2π`. Because `y` points down,
//!    `φ` grows **clockwise** on the displayed image: orientation bin 0 is a gradient pointing
//!    right (intensity rising to the right), 2 down, 4 left, 6 up.
//! 2. **Orientation split**: `t = 8φ / 2π`; `(1 − frac t)·m` goes to bin `⌊t⌋ mod 8` and
//!    `frac(t)·m` to the next bin. (The angle is computed by an octant reduction and a
//!    branch-free single-precision arctangent, within 2e-6 of `atan2` in `t`; tested.)
//! 3. **Cells**: a descriptor has 4×4 cells of `b×b` pixels (`b` = [`DsiftConfig::bin`]).
//!    Cell centres lie on pixels, `b` apart: for the keypoint whose first cell centre is
//!    `(x₀, y₀)`, cell `(j, i)` (row `j`, column `i`, both `0..4`) is centred at
//!    `(x₀ + i·b, y₀ + j·b)` and the keypoint centre is `(x₀ + 1.5b, y₀ + 1.5b)` (a
//!    half-integer when `b` is odd, as in VLFeat). A pixel at offset `(u, v)` from a cell
//!    centre adds `tri(u)·tri(v)·window` of its oriented magnitude to that cell, with the
//!    triangular (bilinear) kernel `tri(u) = max(0, 1 − |u|/b)`: each pixel is shared
//!    bilinearly between its neighbouring cell centres, as in SIFT's trilinear
//!    interpolation. The window ([`Window`], σ = 2b around the keypoint centre as in VLFeat
//!    and in Lowe's SIFT) is either
//!    * `flat` (default; VLFeat's "fast" mode): constant inside each cell, equal to the
//!      mean of the Gaussian over the cell's `2b − 1` offsets along each axis (so the
//!      inner cells weigh a little more than the outer ones, exactly as VLFeat does), or
//!    * `gaussian` (VLFeat's default mode; Lowe/OpenCV): the Gaussian evaluated at every
//!      pixel, `exp(−(dx² + dy²) / (2σ²))`, `(dx, dy)` = pixel − keypoint centre.
//! 4. **Layout**: 128 values, **cell-major, orientation-minor**, cells row by row:
//!    `d[(j·4 + i)·8 + t]` (VLFeat's `vl_dsift` order before MATLAB's transposition). Then
//!    `v ← v/‖v‖₂`, `v ← min(v, 0.2)`, `v ← v/‖v‖₂`. If the un-normalised `‖v‖₂ <
//!    zero_tol` (default 1e-12: in practice "exactly 0", i.e. no gradient anywhere in the
//!    support, as on the masked black background) the descriptor is the **zero descriptor**:
//!    counted in [`LevelDescriptors::zero_count`], not stored. A constant bright patch is a
//!    zero descriptor too (no gradient).
//! 5. **Grid** [A]: keypoints every `s` pixels (`s` = [`DsiftConfig::step`]) in both
//!    directions, starting at the top-left, **wherever every pixel with non-zero weight lies
//!    inside the image**: the support of the triangular kernels is `5b − 1` pixels per axis
//!    (first cell centre `x₀ ≥ b − 1`, last cell centre `x₀ + 3b ≤ W − b`), so no padding
//!    convention is needed. Per axis of length `n`: `⌊(n − 5b + 1)/s⌋ + 1` keypoints if
//!    `n ≥ 5b − 1`, else none ([`grid_len`]). (VLFeat instead lets the outer half of the
//!    outer cells fall off the image and pads the gradient by continuity.) The nominal
//!    descriptor side is `4b` pixels (the paper's 36 µm at `b = 9` px of 1 µm), `4b·2^l`
//!    original pixels at level `l` ([`DsiftConfig::footprint_px`]).
//!
//! # Scales
//!
//! Level `l` (`0..levels`, factor `f = 2^l`) is [`downsample`]`(img, f)`: the mean of each
//! `f×f` block (sums in `f64`, so a constant image stays exactly constant), output
//! `⌈H/f⌉ × ⌈W/f⌉`; a partial block at the bottom/right edge is the mean of its in-image
//! pixels [A]. Every level is computed from the original image (not by repeated halving).
//! The same `b` and `s` are used at every level (a fixed pixel footprint on successively
//! coarser images, as the paper's 36/72/144/288 µm say). Keypoint positions are reported
//! in the level's pixels ([`LevelDescriptors::position`]) and in original pixels
//! ([`LevelDescriptors::original_position`]: level pixel `p` ↦ `p·f + (f − 1)/2`, the
//! centre of its block).
//!
//! # Cost
//!
//! As VLFeat: the gradient is computed once per level into 8 orientation planes, which are
//! filtered separably by the (windowed) triangular kernels and sampled at the cell centres;
//! nothing loops over a descriptor's pixels. Only the rows and columns that are cell
//! centres are filtered, and gradient rows are produced on demand into a ring of `2b − 1`
//! rows (`8·(2b − 1)·W` floats of working memory, not `8·H·W`): per level
//! `O(H·W)` for the gradient, `O(4·(H/s)·(2b − 1)·8·W)` for the vertical filter,
//! `O(#descriptors·128·(2b − 1))` for the horizontal one.

use crate::DataError;
use ndarray::{Array2, ArrayView2, ArrayView3};
use serde::{Deserialize, Serialize};

/// Version tag of the descriptor definition (part of every identity).
pub const DSIFT_VERSION: &str = "dyad-funcish-dsift/v1";
/// Descriptor length: 4 × 4 cells × 8 orientations.
pub const DESCRIPTOR_DIM: usize = 128;
/// Cells per side.
pub const CELLS: usize = 4;
/// Orientation bins.
pub const ORIENTATIONS: usize = 8;
/// The Gaussian window's σ in bins (VLFeat's `windowSize`, Lowe's `d/2`).
pub const WINDOW_SIGMA_BINS: f64 = 2.0;
/// Entries are clamped at this value after the first normalisation.
pub const CLAMP: f32 = 0.2;

/// Spatial window of a descriptor (module docs, step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// VLFeat "fast": one weight per cell (the Gaussian's mean over the cell).
    Flat,
    /// The Gaussian at every pixel (VLFeat's default, Lowe, OpenCV).
    Gaussian,
}

impl Window {
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Flat => "flat",
            Window::Gaussian => "gaussian",
        }
    }
}

fn default_bin() -> usize {
    9
}
fn default_step() -> usize {
    13
}
fn default_levels() -> usize {
    4
}
fn default_window() -> Window {
    Window::Flat
}
fn default_zero_tol() -> f64 {
    1e-12
}

/// Dense SIFT parameters (FuncISH §2.2). Unknown fields are errors; absent fields take the
/// defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsiftConfig {
    /// Cell side `b` in pixels (9: the paper's 36 µm descriptor at ~1 µm/px).
    #[serde(default = "default_bin")]
    pub bin: usize,
    /// Grid step `s` in pixels, the same at every level (13: ~10⁶ descriptors on 8K×16K).
    #[serde(default = "default_step")]
    pub step: usize,
    /// Number of scales; level `l` is the image downsampled by `2^l` (4: factors 1, 2, 4, 8).
    #[serde(default = "default_levels")]
    pub levels: usize,
    /// Spatial window (flat = VLFeat "fast").
    #[serde(default = "default_window")]
    pub window: Window,
    /// A descriptor whose un-normalised norm is below this is the zero descriptor.
    #[serde(default = "default_zero_tol")]
    pub zero_tol: f64,
}

impl Default for DsiftConfig {
    fn default() -> Self {
        DsiftConfig {
            bin: default_bin(),
            step: default_step(),
            levels: default_levels(),
            window: default_window(),
            zero_tol: default_zero_tol(),
        }
    }
}

impl DsiftConfig {
    /// Check every field's range (cheap, no data).
    pub fn validate(&self) -> Result<(), DataError> {
        let bad = |m: String| Err(DataError::Param(format!("dense SIFT: {m}")));
        if !(1..=512).contains(&self.bin) {
            return bad(format!("bin must be in 1..=512, got {}", self.bin));
        }
        if !(1..=1 << 16).contains(&self.step) {
            return bad(format!("step must be in 1..=65536, got {}", self.step));
        }
        if !(1..=16).contains(&self.levels) {
            return bad(format!("levels must be in 1..=16, got {}", self.levels));
        }
        if !(self.zero_tol.is_finite() && self.zero_tol >= 0.0) {
            return bad(format!(
                "zero_tol must be finite and >= 0, got {}",
                self.zero_tol
            ));
        }
        Ok(())
    }

    /// The canonical text form: TOML `key = value` lines in a fixed order (floats in Rust's
    /// shortest round-trip form). It deserialises back to the same configuration.
    pub fn canonical(&self) -> String {
        format!(
            "bin = {}\nstep = {}\nlevels = {}\nwindow = \"{}\"\nzero_tol = {:?}\n",
            self.bin,
            self.step,
            self.levels,
            self.window.as_str(),
            self.zero_tol
        )
    }

    /// Downsampling factor of level `l`: `2^l`.
    pub fn factor(level: usize) -> usize {
        1 << level
    }

    /// Nominal descriptor side at `level` in original pixels: `4·b·2^l` (Figs. 5, 6).
    pub fn footprint_px(&self, level: usize) -> usize {
        (CELLS * self.bin) << level
    }

    /// Side of the pixels with non-zero weight at `level`, in original pixels:
    /// `(5b − 1)·2^l`.
    pub fn support_px(&self, level: usize) -> usize {
        (5 * self.bin - 1) << level
    }

    /// `(rows, cols)` of the keypoint grid at `level` of an `height × width` image.
    pub fn grid_shape(&self, height: usize, width: usize, level: usize) -> (usize, usize) {
        let f = Self::factor(level);
        (
            grid_len(height.div_ceil(f), self.bin, self.step),
            grid_len(width.div_ceil(f), self.bin, self.step),
        )
    }
}

/// Keypoints along an axis of `n` pixels: `⌊(n − 5b + 1)/s⌋ + 1` if `n ≥ 5b − 1`, else 0.
pub fn grid_len(n: usize, bin: usize, step: usize) -> usize {
    let support = 5 * bin - 1;
    if n < support || step == 0 {
        0
    } else {
        (n - support) / step + 1
    }
}

/// The descriptors of one level of one image.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelDescriptors {
    /// Level index `l` (factor `2^l`).
    pub level: usize,
    /// Cell side and grid step used (level pixels).
    pub bin: usize,
    pub step: usize,
    /// `(height, width)` of the level image and of the original image.
    pub level_shape: (usize, usize),
    pub original_shape: (usize, usize),
    /// `(rows, cols)` of the keypoint grid.
    pub grid: (usize, usize),
    /// The non-zero descriptors, `n × 128`, in grid order (row-major over keypoints).
    pub descriptors: Array2<f32>,
    /// Grid index (`row·cols + col`) of each stored descriptor, increasing.
    pub grid_index: Vec<u32>,
    /// Number of zero descriptors (grid size − stored descriptors).
    pub zero_count: usize,
}

impl LevelDescriptors {
    /// Downsampling factor `2^level`.
    pub fn factor(&self) -> usize {
        1 << self.level
    }

    /// Number of keypoints of the grid (stored + zero descriptors).
    pub fn grid_len(&self) -> usize {
        self.grid.0 * self.grid.1
    }

    /// Number of stored (non-zero) descriptors.
    pub fn len(&self) -> usize {
        self.grid_index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.grid_index.is_empty()
    }

    /// Centre `(x, y)` of grid keypoint `g` (row-major grid index) in level pixels.
    pub fn position(&self, g: usize) -> (f32, f32) {
        let (row, col) = (g / self.grid.1.max(1), g % self.grid.1.max(1));
        let first = (self.bin - 1) as f32 + 1.5 * self.bin as f32;
        (
            first + (col * self.step) as f32,
            first + (row * self.step) as f32,
        )
    }

    /// Centre `(x, y)` of grid keypoint `g` in original pixels (`p·f + (f − 1)/2`).
    pub fn original_position(&self, g: usize) -> (f32, f32) {
        let (x, y) = self.position(g);
        let f = self.factor() as f32;
        (x * f + (f - 1.0) / 2.0, y * f + (f - 1.0) / 2.0)
    }

    /// Centres `(x, y)` of the stored descriptors, in level pixels.
    pub fn positions(&self) -> Vec<(f32, f32)> {
        self.grid_index
            .iter()
            .map(|&g| self.position(g as usize))
            .collect()
    }

    /// Grid indices of the zero descriptors, increasing.
    pub fn zero_grid_index(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.zero_count);
        let mut stored = self.grid_index.iter().peekable();
        for g in 0..self.grid_len() as u32 {
            if stored.peek() == Some(&&g) {
                stored.next();
            } else {
                out.push(g);
            }
        }
        out
    }
}

/// Box-average `img` over `f × f` blocks and decimate: output `⌈H/f⌉ × ⌈W/f⌉`, each pixel
/// the mean of its block's in-image pixels (partial blocks at the bottom/right edge average
/// fewer pixels). Sums are in `f64`. `f = 1` copies.
pub fn downsample(img: ArrayView2<f32>, f: usize) -> Array2<f32> {
    let (h, w) = img.dim();
    let f = f.max(1);
    if f == 1 {
        return img.to_owned();
    }
    let (oh, ow) = (h.div_ceil(f), w.div_ceil(f));
    let mut out = Array2::<f32>::zeros((oh, ow));
    let mut colsum = vec![0f64; w];
    for by in 0..oh {
        colsum.iter_mut().for_each(|a| *a = 0.0);
        let y1 = ((by + 1) * f).min(h);
        for y in by * f..y1 {
            for (a, &v) in colsum.iter_mut().zip(img.row(y)) {
                *a += f64::from(v);
            }
        }
        let rows = (y1 - by * f) as f64;
        for (o, block) in out.row_mut(by).iter_mut().zip(colsum.chunks(f)) {
            *o = (block.iter().sum::<f64>() / (rows * block.len() as f64)) as f32;
        }
    }
    out
}

/// `atan(q) · 4/π` for `q ∈ [0, 1]` (Cephes `atanf` reduction and polynomial), in `[0, 1]`.
/// Branch-free (selects only), so loops over it vectorise.
#[inline(always)]
fn atan_unit_octant(q: f32) -> f32 {
    const TAN_PI_8: f32 = 0.414_213_57;
    let big = q > TAN_PI_8;
    let z = if big { (q - 1.0) / (q + 1.0) } else { q };
    let base = if big {
        std::f32::consts::FRAC_PI_4
    } else {
        0.0
    };
    let z2 = z * z;
    let p = (((8.053_744_5e-2 * z2 - 1.387_768_6e-1) * z2 + 1.997_771_1e-1) * z2 - 3.333_295e-1)
        * z2
        * z
        + z;
    let a = (base + p) * (4.0 * std::f32::consts::FRAC_1_PI);
    a.clamp(0.0, 1.0)
}

/// `t = 8·atan2(gy, gx)/2π mod 8` in `[0, 8]` (8 only by rounding, meaning 0), by an octant
/// reduction; 0 for a zero gradient. Branch-free.
#[inline(always)]
fn orientation_t(gx: f32, gy: f32) -> f32 {
    let (ax, ay) = (gx.abs(), gy.abs());
    let steep = ay > ax;
    let (mn, mx) = if steep { (ax, ay) } else { (ay, ax) };
    let q = if mx > 0.0 { mn / mx } else { 0.0 };
    let a = atan_unit_octant(q);
    // First quadrant (|gx|, |gy|), then mirror for gx < 0 and for gy < 0.
    let p = if steep { 2.0 - a } else { a };
    let p = if gx < 0.0 { 4.0 - p } else { p };
    if gy < 0.0 { 8.0 - p } else { p }
}

/// Orientation of a gradient: `(bin, frac)` with `t = 8·atan2(gy, gx)/2π mod 8 =
/// bin + frac`, `bin ∈ 0..8`, `frac ∈ [0, 1)`.
#[inline]
pub fn orientation(gx: f32, gy: f32) -> (usize, f32) {
    let t = orientation_t(gx, gy);
    let t0 = t as usize; // t >= 0
    (t0 % ORIENTATIONS, t - t0 as f32)
}

/// The per-cell weights of a window along one axis: `kernel[i][u + b − 1]` for cell `i` and
/// offset `u ∈ (−b, b)` from its centre, and the per-cell constant factor `cell[i]`.
fn kernels(bin: usize, window: Window) -> ([Vec<f32>; CELLS], [f32; CELLS]) {
    let b = bin as f64;
    let sigma = WINDOW_SIGMA_BINS * b;
    let gauss = |i: usize, u: i64| {
        let d = (i as f64 - 1.5) * b + u as f64;
        (-0.5 * (d / sigma) * (d / sigma)).exp()
    };
    let offsets = || -(bin as i64 - 1)..=(bin as i64 - 1);
    let tri = |u: i64| 1.0 - (u.abs() as f64) / b;
    let mut ker: [Vec<f32>; CELLS] = Default::default();
    let mut cell = [1f32; CELLS];
    for i in 0..CELLS {
        ker[i] = match window {
            Window::Flat => offsets().map(|u| tri(u) as f32).collect(),
            Window::Gaussian => offsets().map(|u| (tri(u) * gauss(i, u)) as f32).collect(),
        };
        if window == Window::Flat {
            let n = (2 * bin - 1) as f64;
            cell[i] = (offsets().map(|u| gauss(i, u)).sum::<f64>() / n) as f32;
        }
    }
    (ker, cell)
}

/// Scratch rows of the gradient.
struct GradScratch {
    gx: Vec<f32>,
    gy: Vec<f32>,
}

/// One gradient row `y` into `out` (`W` pixels × 8 orientations, interleaved `[x][t]`).
fn gradient_row(img: &ArrayView2<f32>, y: usize, out: &mut [f32], g: &mut GradScratch) {
    let (h, w) = img.dim();
    let row = img.row(y);
    let row = row.as_slice().expect("standard layout rows");
    let (up, down, scale_y) = if h == 1 {
        (y, y, 0.0)
    } else if y == 0 {
        (0, 1, 1.0)
    } else if y == h - 1 {
        (h - 2, h - 1, 1.0)
    } else {
        (y - 1, y + 1, 0.5)
    };
    let (ru, rd) = (img.row(up), img.row(down));
    let (ru, rd) = (
        ru.as_slice().expect("standard layout rows"),
        rd.as_slice().expect("standard layout rows"),
    );
    let (gx, gy) = (&mut g.gx[..w], &mut g.gy[..w]);
    if w >= 2 {
        gx[0] = row[1] - row[0];
        gx[w - 1] = row[w - 1] - row[w - 2];
        for ((o, &a), &b) in gx[1..w - 1].iter_mut().zip(&row[2..]).zip(&row[..w - 2]) {
            *o = 0.5 * (a - b);
        }
    } else {
        gx.iter_mut().for_each(|v| *v = 0.0);
    }
    for ((o, &a), &b) in gy.iter_mut().zip(rd).zip(ru) {
        *o = scale_y * (a - b);
    }
    // Magnitude and orientation (vectorisable), in place: gx <- m, gy <- t.
    for (x, y) in gx.iter_mut().zip(gy.iter_mut()) {
        let (a, b) = (*x, *y);
        *x = (a * a + b * b).sqrt();
        *y = orientation_t(a, b);
    }
    for ((o, &m), &t) in out
        .chunks_exact_mut(ORIENTATIONS)
        .zip(gx.iter())
        .zip(gy.iter())
    {
        // t >= 0: truncation is the floor (no libm call, no stack round trip).
        let t0 = t as usize;
        let frac = t - t0 as f32;
        let (w0, w1) = ((1.0 - frac) * m, frac * m);
        let (t0, t1) = (t0 & (ORIENTATIONS - 1), (t0 + 1) & (ORIENTATIONS - 1));
        for (k, v) in o.iter_mut().enumerate() {
            *v = if k == t0 { w0 } else { 0.0 } + if k == t1 { w1 } else { 0.0 };
        }
    }
}

/// Normalise, clamp at 0.2, renormalise in place; `false` (and all zeros) for a zero
/// descriptor (`‖v‖ < zero_tol`).
pub fn normalize_descriptor(v: &mut [f32], zero_tol: f64) -> bool {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm < zero_tol || norm == 0.0 || norm.is_nan() {
        v.iter_mut().for_each(|x| *x = 0.0);
        return false;
    }
    let mut n2 = 0f64;
    for x in v.iter_mut() {
        *x = ((f64::from(*x) / norm) as f32).min(CLAMP);
        n2 += f64::from(*x) * f64::from(*x);
    }
    let inv = 1.0 / n2.sqrt();
    for x in v.iter_mut() {
        *x = (f64::from(*x) * inv) as f32;
    }
    true
}

fn check_image(img: &ArrayView2<f32>) -> Result<(), DataError> {
    if img.iter().any(|v| !v.is_finite()) {
        return Err(DataError::Param(
            "dense SIFT: the image has non-finite pixels".into(),
        ));
    }
    Ok(())
}

/// Dense SIFT of `img` itself (level 0, no downsampling).
pub fn dense_sift(img: ArrayView2<f32>, cfg: &DsiftConfig) -> Result<LevelDescriptors, DataError> {
    cfg.validate()?;
    check_image(&img)?;
    Ok(level_descriptors(img, cfg, 0, img.dim()))
}

/// Dense SIFT at the `cfg.levels` scales (module docs, "Scales").
pub fn multiscale_dsift(
    img: ArrayView2<f32>,
    cfg: &DsiftConfig,
) -> Result<Vec<LevelDescriptors>, DataError> {
    cfg.validate()?;
    check_image(&img)?;
    let shape = img.dim();
    Ok((0..cfg.levels)
        .map(|l| {
            if l == 0 {
                level_descriptors(img, cfg, 0, shape)
            } else {
                let lv = downsample(img, DsiftConfig::factor(l));
                level_descriptors(lv.view(), cfg, l, shape)
            }
        })
        .collect())
}

/// Dense SIFT of an already downsampled level image (the fast implementation; the caller
/// has validated `cfg` and the pixels).
fn level_descriptors(
    img: ArrayView2<f32>,
    cfg: &DsiftConfig,
    level: usize,
    original_shape: (usize, usize),
) -> LevelDescriptors {
    let (h, w) = img.dim();
    let (b, s) = (cfg.bin, cfg.step);
    let (ny, nx) = (grid_len(h, b, s), grid_len(w, b, s));
    let n = ny * nx;
    let mut raw = vec![0f32; n * DESCRIPTOR_DIM];
    if n > 0 {
        fill_raw(&img, cfg, ny, nx, &mut raw);
    }
    let mut kept = Vec::with_capacity(n * DESCRIPTOR_DIM);
    let mut grid_index = Vec::with_capacity(n);
    for (g, d) in raw.chunks_exact_mut(DESCRIPTOR_DIM).enumerate() {
        if normalize_descriptor(d, cfg.zero_tol) {
            kept.extend_from_slice(d);
            grid_index.push(g as u32);
        }
    }
    let stored = grid_index.len();
    LevelDescriptors {
        level,
        bin: b,
        step: s,
        level_shape: (h, w),
        original_shape,
        grid: (ny, nx),
        descriptors: Array2::from_shape_vec((stored, DESCRIPTOR_DIM), kept).expect("rows of 128"),
        grid_index,
        zero_count: n - stored,
    }
}

/// The un-normalised descriptors of the `ny × nx` grid into `raw` (module docs, "Cost").
fn fill_raw(img: &ArrayView2<f32>, cfg: &DsiftConfig, ny: usize, nx: usize, raw: &mut [f32]) {
    const O: usize = ORIENTATIONS;
    let img = if img.is_standard_layout() {
        img.view()
    } else {
        // Rows must be contiguous for the gradient.
        return fill_raw(&img.as_standard_layout().view(), cfg, ny, nx, raw);
    };
    let w = img.dim().1;
    let (b, s) = (cfg.bin, cfg.step);
    let klen = 2 * b - 1;
    let (ker, cell) = kernels(b, cfg.window);
    // Ring of gradient rows: row y lives in slot y % klen.
    let mut ring = vec![0f32; klen * w * O];
    let mut scratch = GradScratch {
        gx: vec![0.0; w],
        gy: vec![0.0; w],
    };
    let mut next_row = 0usize;
    // Vertical filter tasks (cell-centre row r, keypoint row ky, cell row j), by r.
    let mut tasks: Vec<(usize, usize, usize)> = (0..ny)
        .flat_map(|ky| (0..CELLS).map(move |j| (b - 1 + ky * s + j * b, ky, j)))
        .collect();
    tasks.sort_unstable();
    let mut acc = vec![0f32; w * O];
    for &(r, ky, j) in &tasks {
        while next_row < r + b {
            let slot = next_row % klen;
            gradient_row(
                &img,
                next_row,
                &mut ring[slot * w * O..(slot + 1) * w * O],
                &mut scratch,
            );
            next_row += 1;
        }
        // Vertical filter of all 8 planes at row r.
        acc.iter_mut().for_each(|v| *v = 0.0);
        for (o, &k) in ker[j].iter().enumerate() {
            let slot = (r + o + 1 - b) % klen;
            let src = &ring[slot * w * O..(slot + 1) * w * O];
            for (a, &g) in acc.iter_mut().zip(src) {
                *a += k * g;
            }
        }
        // Horizontal filter at the cell-centre columns of every keypoint of row ky.
        for kx in 0..nx {
            let base = (ky * nx + kx) * DESCRIPTOR_DIM;
            for (i, ki) in ker.iter().enumerate() {
                let left = kx * s + i * b; // = centre − (b − 1)
                let mut out = [0f32; O];
                for (px, &k) in acc[left * O..(left + klen) * O].chunks_exact(O).zip(ki) {
                    for t in 0..O {
                        out[t] += k * px[t];
                    }
                }
                let c = cell[j] * cell[i];
                let dst = &mut raw[base + (j * CELLS + i) * O..][..O];
                for t in 0..O {
                    dst[t] = c * out[t];
                }
            }
        }
    }
}

/// A descriptor as a `4 × 4 × 8` view (cell row, cell column, orientation), e.g. to draw
/// a visual word's glyph (Fig. 5).
pub fn as_cells(descriptor: &[f32]) -> Result<ArrayView3<'_, f32>, DataError> {
    ArrayView3::from_shape((CELLS, CELLS, ORIENTATIONS), descriptor).map_err(|_| {
        DataError::Param(format!(
            "dense SIFT: a descriptor has {DESCRIPTOR_DIM} values, got {}",
            descriptor.len()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand::Rng as _;

    fn cfg(bin: usize, step: usize, levels: usize, window: Window) -> DsiftConfig {
        DsiftConfig {
            bin,
            step,
            levels,
            window,
            zero_tol: 1e-12,
        }
    }

    /// Smooth texture (sinusoids) plus integer-valued noise, with a black rectangle.
    fn textured(h: usize, w: usize, seed: u64, black: bool) -> Array2<f32> {
        let mut rng = seeded(seed);
        let (a, b, c) = (
            rng.random_range(0.1..0.5f32),
            rng.random_range(0.1..0.5f32),
            rng.random_range(0.0..6.0f32),
        );
        Array2::from_shape_fn((h, w), |(y, x)| {
            if black && y < h / 2 && x < w / 2 {
                return 0.0;
            }
            let (xf, yf) = (x as f32, y as f32);
            let v =
                100.0 + 40.0 * (a * xf + c).sin() * (b * yf).cos() + 30.0 * (0.05 * xf * yf).sin();
            (v + rng.random_range(0..20) as f32).round()
        })
    }

    // ---- naive per-pixel reference of the module definition (f64 throughout) ----

    fn ref_gradient(img: &Array2<f32>, y: usize, x: usize) -> (f64, f64) {
        let (h, w) = img.dim();
        let p = |y: usize, x: usize| f64::from(img[[y, x]]);
        let gx = if w == 1 {
            0.0
        } else if x == 0 {
            p(y, 1) - p(y, 0)
        } else if x == w - 1 {
            p(y, w - 1) - p(y, w - 2)
        } else {
            (p(y, x + 1) - p(y, x - 1)) / 2.0
        };
        let gy = if h == 1 {
            0.0
        } else if y == 0 {
            p(1, x) - p(0, x)
        } else if y == h - 1 {
            p(h - 1, x) - p(h - 2, x)
        } else {
            (p(y + 1, x) - p(y - 1, x)) / 2.0
        };
        (gx, gy)
    }

    fn ref_normalize(v: &mut [f64]) -> bool {
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if n < 1e-12 {
            return false;
        }
        v.iter_mut().for_each(|x| *x = (*x / n).min(0.2));
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        true
    }

    /// Every grid keypoint's descriptor (None = zero descriptor), by direct summation over
    /// the pixels of every cell.
    fn reference(img: &Array2<f32>, c: &DsiftConfig) -> Vec<Option<Vec<f64>>> {
        let (h, w) = img.dim();
        let (b, s) = (c.bin as i64, c.step);
        let bf = b as f64;
        let sigma = 2.0 * bf;
        let g = |d: f64| (-d * d / (2.0 * sigma * sigma)).exp();
        // VLFeat "fast": per-cell mean of the Gaussian over the 2b − 1 offsets.
        let cell_mean = |i: i64| {
            (-(b - 1)..=(b - 1))
                .map(|u| g((i as f64 - 1.5) * bf + u as f64))
                .sum::<f64>()
                / (2 * b - 1) as f64
        };
        let (ny, nx) = (grid_len(h, c.bin, s), grid_len(w, c.bin, s));
        let mut out = Vec::new();
        for ky in 0..ny {
            for kx in 0..nx {
                let (y0, x0) = ((b - 1) as usize + ky * s, (b - 1) as usize + kx * s);
                let (kcy, kcx) = (y0 as f64 + 1.5 * bf, x0 as f64 + 1.5 * bf);
                let mut d = vec![0f64; 128];
                for j in 0..4i64 {
                    for i in 0..4i64 {
                        let (cy, cx) = (y0 as i64 + j * b, x0 as i64 + i * b);
                        for y in cy - b + 1..cy + b {
                            for x in cx - b + 1..cx + b {
                                let (gx, gy) = ref_gradient(img, y as usize, x as usize);
                                let m = (gx * gx + gy * gy).sqrt();
                                if m == 0.0 {
                                    continue;
                                }
                                let t = gy.atan2(gx).rem_euclid(std::f64::consts::TAU) * 8.0
                                    / std::f64::consts::TAU;
                                let t0 = t.floor();
                                let frac = t - t0;
                                let t0 = (t0 as usize) % 8;
                                let wy = 1.0 - ((y - cy).abs() as f64) / bf;
                                let wx = 1.0 - ((x - cx).abs() as f64) / bf;
                                let win = match c.window {
                                    Window::Flat => cell_mean(j) * cell_mean(i),
                                    Window::Gaussian => g(x as f64 - kcx) * g(y as f64 - kcy),
                                };
                                let base = ((j * 4 + i) * 8) as usize;
                                d[base + t0] += wy * wx * win * (1.0 - frac) * m;
                                d[base + (t0 + 1) % 8] += wy * wx * win * frac * m;
                            }
                        }
                    }
                }
                out.push(if ref_normalize(&mut d) { Some(d) } else { None });
            }
        }
        out
    }

    fn dense_by_grid(l: &LevelDescriptors) -> Vec<Option<Vec<f32>>> {
        let mut out = vec![None; l.grid_len()];
        for (r, &g) in l.grid_index.iter().enumerate() {
            out[g as usize] = Some(l.descriptors.row(r).to_vec());
        }
        out
    }

    #[test]
    fn config_defaults_canonical_form_and_validation() {
        let d = DsiftConfig::default();
        assert_eq!(
            (d.bin, d.step, d.levels, d.window),
            (9, 13, 4, Window::Flat)
        );
        assert_eq!(toml::from_str::<DsiftConfig>("").unwrap(), d);
        assert_eq!(toml::from_str::<DsiftConfig>(&d.canonical()).unwrap(), d);
        let g = cfg(4, 5, 2, Window::Gaussian);
        assert_eq!(toml::from_str::<DsiftConfig>(&g.canonical()).unwrap(), g);
        assert_ne!(g.canonical(), d.canonical());
        assert!(toml::from_str::<DsiftConfig>("bins = 3").is_err());
        assert!(toml::from_str::<DsiftConfig>("window = \"box\"").is_err());
        d.validate().unwrap();
        for bad in [
            DsiftConfig {
                bin: 0,
                ..d.clone()
            },
            DsiftConfig {
                step: 0,
                ..d.clone()
            },
            DsiftConfig {
                levels: 0,
                ..d.clone()
            },
            DsiftConfig {
                zero_tol: f64::NAN,
                ..d.clone()
            },
            DsiftConfig {
                zero_tol: -1.0,
                ..d.clone()
            },
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains("dense SIFT"), "{e}");
        }
        assert_eq!(d.footprint_px(0), 36);
        assert_eq!(d.footprint_px(3), 288);
        assert_eq!(d.support_px(1), 88);
        // ~1M descriptors on an 8K x 16K image over the 4 levels (spec §2.2).
        let total: usize = (0..4)
            .map(|l| {
                let (r, c) = d.grid_shape(8192, 16384, l);
                r * c
            })
            .sum();
        assert!((900_000..1_100_000).contains(&total), "{total}");
        let img = Array2::<f32>::zeros((30, 30));
        let mut nan = img.clone();
        nan[[3, 3]] = f32::NAN;
        assert!(dense_sift(nan.view(), &d).is_err());
        assert!(dense_sift(img.view(), &DsiftConfig { bin: 0, ..d }).is_err());
    }

    #[test]
    fn orientation_matches_atan2() {
        let mut rng = seeded(3);
        let mut cases: Vec<(f32, f32)> = vec![
            (1.0, 0.0),
            (0.0, 1.0),
            (-1.0, 0.0),
            (0.0, -1.0),
            (1.0, 1.0),
            (-1.0, 1.0),
            (-1.0, -1.0),
            (1.0, -1.0),
            (-3.0, 1e-30),
            (2.0, -1e-7),
        ];
        cases.extend(
            (0..20_000).map(|_| (rng.random_range(-5.0..5.0), rng.random_range(-5.0..5.0))),
        );
        for (gx, gy) in cases {
            let (t0, frac) = orientation(gx, gy);
            assert!(t0 < 8 && (0.0..=1.0).contains(&frac));
            let t = f64::from(gy)
                .atan2(f64::from(gx))
                .rem_euclid(std::f64::consts::TAU)
                * 8.0
                / std::f64::consts::TAU;
            let got = t0 as f64 + f64::from(frac);
            let diff = (got - t).rem_euclid(8.0);
            let diff = diff.min(8.0 - diff);
            assert!(diff < 2e-6, "({gx}, {gy}): {got} vs {t}");
        }
    }

    #[test]
    fn keypoints_per_level_follow_the_grid_formula() {
        for &(h, w, b, s) in &[
            (44, 49, 4, 5),
            (18, 19, 4, 1),
            (19, 20, 4, 3),
            (100, 37, 9, 13),
            (64, 128, 9, 13),
            (5, 5, 1, 2),
        ] {
            let img = textured(h, w, 1, false);
            let c = cfg(b, s, 1, Window::Flat);
            let l = dense_sift(img.view(), &c).unwrap();
            // Brute force: first cell centre p with p − (b − 1) >= 0 and p + 3b + b − 1 <= n − 1.
            let count = |n: usize| (b - 1..n).step_by(s).filter(|p| p + 4 * b < n + 1).count();
            assert_eq!(l.grid, (count(h), count(w)), "{h}x{w} b={b} s={s}");
            assert_eq!(l.grid, c.grid_shape(h, w, 0));
            assert_eq!(l.len() + l.zero_count, count(h) * count(w));
            // The support of the last keypoint ends inside the image.
            if l.grid_len() > 0 {
                let (x, y) = l.position(l.grid_len() - 1);
                assert!(x + 2.5 * b as f32 - 1.0 <= (w - 1) as f32);
                assert!(y + 2.5 * b as f32 - 1.0 <= (h - 1) as f32);
                assert_eq!(l.position(0), (2.5 * b as f32 - 1.0, 2.5 * b as f32 - 1.0));
            }
        }
        // Multiscale: level shapes, grid shapes and original positions.
        let img = textured(100, 150, 2, false);
        let c = cfg(3, 4, 3, Window::Flat);
        let ls = multiscale_dsift(img.view(), &c).unwrap();
        assert_eq!(ls.len(), 3);
        for (l, lv) in ls.iter().enumerate() {
            let f = 1 << l;
            assert_eq!(lv.level, l);
            assert_eq!(lv.level_shape, (100usize.div_ceil(f), 150usize.div_ceil(f)));
            assert_eq!(lv.original_shape, (100, 150));
            assert_eq!(lv.grid, c.grid_shape(100, 150, l));
            let (x, y) = lv.position(1);
            let (ox, oy) = lv.original_position(1);
            assert_eq!(
                (ox, oy),
                (
                    x * f as f32 + (f as f32 - 1.0) / 2.0,
                    y * f as f32 + (f as f32 - 1.0) / 2.0
                )
            );
        }
    }

    #[test]
    fn downsample_by_hand() {
        let c = Array2::from_elem((7, 5), 0.1f32);
        for f in 1..=8 {
            let d = downsample(c.view(), f);
            assert_eq!(d.dim(), (7usize.div_ceil(f), 5usize.div_ceil(f)));
            assert!(d.iter().all(|&v| v == 0.1), "f = {f}: {d:?}");
        }
        let img = Array2::from_shape_vec((4, 4), (0..16).map(|v| v as f32).collect()).unwrap();
        // Blocks {0,1,4,5}, {2,3,6,7}, {8,9,12,13}, {10,11,14,15}.
        assert_eq!(
            downsample(img.view(), 2),
            Array2::from_shape_vec((2, 2), vec![2.5, 4.5, 10.5, 12.5]).unwrap()
        );
        assert_eq!(downsample(img.view(), 4), Array2::from_elem((1, 1), 7.5));
        // 3 x 5 by 2: partial blocks average their in-image pixels only.
        let img = Array2::from_shape_vec((3, 5), (0..15).map(|v| v as f32).collect()).unwrap();
        assert_eq!(
            downsample(img.view(), 2),
            Array2::from_shape_vec(
                (2, 3),
                vec![3.0, 5.0, 6.5, 10.5, 12.5, 14.0] // {0,1,5,6} {2,3,7,8} {4,9}; {10,11} {12,13} {14}
            )
            .unwrap()
        );
    }

    #[test]
    fn step_edges_put_all_mass_in_the_gradient_direction() {
        let c = cfg(4, 3, 1, Window::Flat);
        // (image, expected orientation bin): dark left/bright right = gradient to the right
        // (bin 0), the reverse (bin 4), dark top/bright bottom = gradient down (bin 2), and up (6).
        let n = 40;
        let cases: Vec<(Array2<f32>, usize)> = vec![
            (
                Array2::from_shape_fn((n, n), |(_, x)| f32::from(x >= 20)),
                0,
            ),
            (Array2::from_shape_fn((n, n), |(_, x)| f32::from(x < 20)), 4),
            (
                Array2::from_shape_fn((n, n), |(y, _)| f32::from(y >= 20)),
                2,
            ),
            (Array2::from_shape_fn((n, n), |(y, _)| f32::from(y < 20)), 6),
        ];
        for (img, bin) in cases {
            let l = dense_sift(img.view(), &c).unwrap();
            assert!(!l.is_empty() && l.zero_count > 0);
            for (r, &g) in l.grid_index.iter().enumerate() {
                let d = l.descriptors.row(r);
                let mass_in_bin: f32 = (0..16).map(|cell| d[cell * 8 + bin]).sum();
                let other: f32 = d.iter().sum::<f32>() - mass_in_bin;
                assert!(mass_in_bin > 0.5 && other == 0.0, "bin {bin}: {d:?}");
                // The support (5b − 1 = 19 px around the centre) touches the edge at 19.5.
                let (x, y) = l.position(g as usize);
                let p = if bin % 4 == 0 { x } else { y };
                assert!((p - 19.5).abs() < 10.0, "{p}");
            }
            // Keypoints whose support misses the edge are zero descriptors.
            for g in l.zero_grid_index() {
                let (x, y) = l.position(g as usize);
                let p = if bin % 4 == 0 { x } else { y };
                assert!((p - 19.5).abs() >= 10.0, "{p}");
            }
        }
    }

    #[test]
    fn constant_and_black_patches_are_zero_descriptors() {
        let c = cfg(4, 3, 2, Window::Flat);
        for v in [0.0f32, 5.0, 0.1] {
            let img = Array2::from_elem((50, 61), v);
            for l in multiscale_dsift(img.view(), &c).unwrap() {
                assert!(l.is_empty());
                assert_eq!(l.zero_count, l.grid_len());
                assert!(l.zero_count > 0);
                assert_eq!(l.descriptors.dim(), (0, 128));
            }
        }
        // Black top-left area: keypoints whose whole support is black are zero; others not.
        let img = textured(60, 80, 5, true);
        let l = dense_sift(img.view(), &c).unwrap();
        let zeros = l.zero_grid_index();
        assert!(!zeros.is_empty() && !l.is_empty());
        for g in 0..l.grid_len() {
            let (x, y) = l.position(g);
            // Support: centre ± (2.5b − 1) = ± 9 pixels. Black for y < 30, x < 40, and a
            // pixel just outside it still has a non-zero gradient (central differences).
            let all_black = y + 9.0 + 1.0 < 30.0 && x + 9.0 + 1.0 < 40.0;
            assert_eq!(zeros.contains(&(g as u32)), all_black, "{x}, {y}");
        }
        let mut v = vec![0f32; 128];
        v[5] = 1e-13;
        assert!(!normalize_descriptor(&mut v, 1e-12));
        assert!(v.iter().all(|&x| x == 0.0));
    }

    #[test]
    fn descriptors_have_unit_norm_and_are_clamped() {
        // By hand: (3, 4) -> (0.6, 0.8) -> (0.2, 0.2) -> (1/√2, 1/√2).
        let mut v = vec![0f32; 128];
        v[0] = 3.0;
        v[7] = 4.0;
        assert!(normalize_descriptor(&mut v, 1e-12));
        assert!((v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert!((v[7] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        // Spread out (every entry < 0.2 after the first normalisation): unchanged by the clamp.
        let mut u: Vec<f32> = (0..128).map(|i| 1.0 + (i % 5) as f32).collect();
        let n = u.iter().map(|x| x * x).sum::<f32>().sqrt();
        let expect: Vec<f32> = u.iter().map(|x| x / n).collect();
        assert!(normalize_descriptor(&mut u, 1e-12));
        for (a, b) in u.iter().zip(&expect) {
            assert!((a - b).abs() < 1e-6);
        }
        // On real descriptors: the output is exactly normalise → clamp → renormalise of the
        // un-normalised grid values, and the clamp does change some of them.
        let img = textured(70, 90, 7, true);
        for window in [Window::Flat, Window::Gaussian] {
            let c = cfg(4, 3, 1, window);
            let l = dense_sift(img.view(), &c).unwrap();
            assert!(l.len() > 100);
            let (ny, nx) = l.grid;
            let mut raw = vec![0f32; ny * nx * 128];
            fill_raw(&img.view(), &c, ny, nx, &mut raw);
            let mut clamped = 0;
            for (r, &g) in l.grid_index.iter().enumerate() {
                let d = l.descriptors.row(r);
                let n2: f32 = d.iter().map(|x| x * x).sum();
                assert!((n2 - 1.0).abs() < 1e-5, "{n2}");
                let v: Vec<f64> = raw[g as usize * 128..][..128]
                    .iter()
                    .map(|&x| f64::from(x))
                    .collect();
                let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                let mut e: Vec<f64> = v.iter().map(|x| (x / n).min(0.2)).collect();
                if v.iter().any(|x| x / n > 0.2) {
                    clamped += 1;
                }
                let m = e.iter().map(|x| x * x).sum::<f64>().sqrt();
                e.iter_mut().for_each(|x| *x /= m);
                for (a, b) in d.iter().zip(&e) {
                    assert!((f64::from(*a) - b).abs() < 1e-6);
                }
                // Clamped entries end at the maximum 0.2 / m > 0.2; nothing exceeds it.
                assert!(d.iter().all(|&x| f64::from(x) <= 0.2 / m + 1e-6));
            }
            assert!(clamped > 10, "{window:?}: {clamped}");
        }
    }

    #[test]
    fn fast_filtering_equals_the_naive_definition() {
        for (window, seed, b, s) in [
            (Window::Flat, 11, 4, 5),
            (Window::Gaussian, 12, 4, 5),
            (Window::Flat, 13, 3, 2),
            (Window::Gaussian, 14, 5, 7),
            (Window::Gaussian, 15, 1, 1),
        ] {
            let img = textured(47, 61, seed, true);
            let c = cfg(b, s, 1, window);
            let fast = dense_sift(img.view(), &c).unwrap();
            let naive = reference(&img, &c);
            assert_eq!(naive.len(), fast.grid_len());
            let got = dense_by_grid(&fast);
            let mut compared = 0;
            for (g, (a, r)) in got.iter().zip(&naive).enumerate() {
                match (a, r) {
                    (None, None) => {}
                    (Some(a), Some(r)) => {
                        compared += 1;
                        for (x, y) in a.iter().zip(r) {
                            assert!(
                                (f64::from(*x) - y).abs() < 1e-5,
                                "{window:?} b={b} keypoint {g}: {x} vs {y}"
                            );
                        }
                    }
                    _ => panic!("{window:?} keypoint {g}: zero in one only"),
                }
            }
            assert!(compared > 20, "{compared}");
            // The black area holds whole supports of the small bins only.
            assert!(b > 4 || fast.zero_count > 0);
        }
        // And on a downsampled level (level 1 of the multiscale run = the reference on the
        // downsampled image).
        let img = textured(90, 100, 21, true);
        let c = cfg(3, 4, 2, Window::Gaussian);
        let ls = multiscale_dsift(img.view(), &c).unwrap();
        let naive = reference(&downsample(img.view(), 2), &c);
        for (a, r) in dense_by_grid(&ls[1]).iter().zip(&naive) {
            match (a, r) {
                (None, None) => {}
                (Some(a), Some(r)) => {
                    assert!(
                        a.iter()
                            .zip(r)
                            .all(|(x, y)| (f64::from(*x) - y).abs() < 1e-5)
                    )
                }
                _ => panic!("zero in one only"),
            }
        }
    }

    #[test]
    fn rotating_the_image_permutes_cells_and_orientations() {
        // (H − 5b + 1) and (W − 5b + 1) multiples of s: the grid maps onto itself.
        let (h, w, b, s) = (44, 49, 4, 5);
        let img = textured(h, w, 9, true);
        // Clockwise on the displayed image: new[r][c] = old[H − 1 − c][r].
        let rot = Array2::from_shape_fn((w, h), |(r, c)| img[[h - 1 - c, r]]);
        for window in [Window::Flat, Window::Gaussian] {
            let c = cfg(b, s, 1, window);
            let a = dense_sift(img.view(), &c).unwrap();
            let r = dense_sift(rot.view(), &c).unwrap();
            let (ny, nx) = a.grid;
            assert_eq!(r.grid, (nx, ny));
            assert_eq!(a.zero_count, r.zero_count);
            let (ga, gr) = (dense_by_grid(&a), dense_by_grid(&r));
            let mut compared = 0;
            for ky in 0..ny {
                for kx in 0..nx {
                    // Old centre (x, y) -> new (H − 1 − y, x).
                    let (kyr, kxr) = (kx, ny - 1 - ky);
                    let (x, y) = a.position(ky * nx + kx);
                    assert_eq!(r.position(kyr * ny + kxr), (h as f32 - 1.0 - y, x));
                    match (&ga[ky * nx + kx], &gr[kyr * ny + kxr]) {
                        (None, None) => {}
                        (Some(d), Some(e)) => {
                            compared += 1;
                            for j in 0..4 {
                                for i in 0..4 {
                                    for t in 0..8 {
                                        // Cell (j, i) -> (i, 3 − j); orientation + 90°.
                                        let old = d[(j * 4 + i) * 8 + t];
                                        let new = e[(i * 4 + 3 - j) * 8 + (t + 2) % 8];
                                        assert!((old - new).abs() < 1e-5, "{old} vs {new}");
                                    }
                                }
                            }
                        }
                        _ => panic!("zero descriptor in one image only"),
                    }
                }
            }
            assert!(compared > 30, "{compared}");
        }
    }

    #[test]
    fn cells_view_and_empty_images() {
        let d: Vec<f32> = (0..128).map(|v| v as f32).collect();
        let v = as_cells(&d).unwrap();
        assert_eq!(v[[1, 2, 3]], ((4 + 2) * 8 + 3) as f32);
        assert!(as_cells(&d[..100]).is_err());
        let tiny = Array2::<f32>::zeros((3, 100));
        let l = dense_sift(tiny.view(), &DsiftConfig::default()).unwrap();
        assert_eq!((l.grid_len(), l.len(), l.zero_count), (0, 0, 0));
        let empty = Array2::<f32>::zeros((0, 0));
        assert_eq!(
            multiscale_dsift(empty.view(), &DsiftConfig::default())
                .unwrap()
                .len(),
            4
        );
    }
}
