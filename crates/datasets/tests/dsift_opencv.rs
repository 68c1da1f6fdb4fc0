//! dyad's dense SIFT against OpenCV's SIFT descriptors at the same keypoints (an independent
//! implementation, run as the Python peer `peers/dsift_opencv.py`).
//!
//! Matching the conventions (read from OpenCV's `sift.dispatch.cpp` / `sift.simd.hpp`):
//! * **Bin width.** OpenCV's spatial bin is `SIFT_DESCR_SCL_FCTR · scl = 3 · size/2` pixels
//!   for a keypoint of octave 0 (`scl = size · 0.5`), so `size = 2b/3` gives our `b`. Its bin
//!   centres sit at `±0.5, ±1.5` bins from the centre and each sample is shared with the
//!   two nearest bins by `1 − |Δ|` (trilinear interpolation); samples with `rbin, cbin ∈
//!   (−1, 4)` count, i.e. offsets `|u| < 2.5b`: exactly our cells, triangular kernels and
//!   `5b − 1` support.
//! * **Window.** `exp(−(u² + v²)/(2·(d/2)²))` in bin units with `d = 4`: σ = 2 bins, our
//!   `Window::Gaussian` (VLFeat's default). Our default `Window::Flat` (VLFeat "fast": one
//!   weight per cell) is compared too, with a looser bound.
//! * **Centre.** OpenCV rounds the keypoint centre to a pixel, so `b` is even here (8): our
//!   centres `x₀ + 1.5b` are then whole pixels. (With odd `b` they are half pixels and
//!   OpenCV's descriptor is taken half a pixel away; that agreement is printed only.)
//! * **Gradient.** `dx = I(x+1) − I(x−1)`, `dy = I(y−1) − I(y+1)` (y up), so OpenCV's
//!   orientation is minus ours: our bin `t` is its bin `(8 − t) mod 8`; cells share our
//!   row-major layout. Pixels on the image border are skipped by OpenCV (we use one-sided
//!   differences), so only keypoints whose support avoids the border are compared.
//! * **Smoothing.** OpenCV blurs the image to the pyramid's base σ first; `sigma = 0.5`
//!   makes that blur σ = 0.1 (the identity on integer images).
//! * **Output.** OpenCV scales to 512 and rounds to integers: error ≤ 0.5/512 per entry.
//!
//! Tolerance: with the same definition the only differences are OpenCV's rounding
//! (≤ 1e-3 per entry, so `1 − cos ≤ 128·(1e-3)²/2 ≈ 6e-5`), its fast `atan2`
//! approximation (errors of a fraction of a degree move a little mass between neighbouring
//! orientation bins), and summation order. We require mean cosine ≥ 0.9998 and 5th
//! percentile ≥ 0.9995 for the Gaussian window (measured: 0.99998 and 0.99998 at b = 8
//! and b = 6); any convention error (orientation sign, cell transposition, bin width off
//! by a pixel, window σ) drops the cosine well below that, and the test checks that the
//! un-mapped orientation order is far off (mean < 0.95). The flat window is a different
//! window by design (one weight per cell): mean ≥ 0.995, 5th percentile ≥ 0.99 (measured
//! 0.998 and 0.997).
//!
//! Needs the peers' environment (`$DYAD_PEERS_VENV`, else `.venv-peers/` at the workspace
//! root) with `cv2`; without it the test prints SKIPPED and passes, unless
//! `DYAD_REQUIRE_PEERS=1`, where it fails.

use dyad_datasets::pipelines::dsift::{DsiftConfig, LevelDescriptors, Window, dense_sift};
use ndarray::Array2;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn skip_or_fail(why: String) -> Option<PathBuf> {
    if std::env::var("DYAD_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
        panic!("DYAD_REQUIRE_PEERS=1 but {why}");
    }
    println!("SKIPPED: dsift_opencv: {why}");
    None
}

/// The peers' Python with `cv2`, or `None` after printing why.
fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("DYAD_PEERS_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv-peers"));
    let py = venv.join("bin").join("python");
    if !py.is_file() {
        return skip_or_fail(format!(
            "the Python peers' environment {} is not built (run `just peers`)",
            venv.display()
        ));
    }
    match Command::new(&py).args(["-c", "import cv2"]).output() {
        Ok(o) if o.status.success() => Some(py),
        Ok(o) => skip_or_fail(format!(
            "{} cannot import cv2 (rebuild the environment from peers/requirements.txt): {}",
            py.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => skip_or_fail(format!("cannot run {}: {e}", py.display())),
    }
}

fn script() -> PathBuf {
    std::env::var_os("DYAD_PEERS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("peers"))
        .join("dsift_opencv.py")
}

/// A textured 8-bit image: blobs and stripes of several scales plus noise, with a flat
/// dark area (so some keypoints are zero descriptors).
fn texture(h: usize, w: usize) -> Array2<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    Array2::from_shape_fn((h, w), |(y, x)| {
        if y < 50 && x < 60 {
            return 12;
        }
        let (xf, yf) = (x as f32, y as f32);
        let v = 110.0
            + 45.0 * (0.19 * xf + 0.07 * yf).sin()
            + 35.0 * (0.043 * xf * 0.9 - 0.11 * yf).cos() * (0.023 * xf * yf / 40.0).sin()
            + 25.0 * ((xf - 90.0).hypot(yf - 70.0) * 0.3).sin()
            + 20.0 * noise();
        v.round().clamp(0.0, 255.0) as u8
    })
}

/// OpenCV's descriptors at the given centres, each normalised to unit length.
fn opencv(py: &Path, img: &Array2<u8>, xy: &[(f32, f32)], size: f32) -> Vec<Vec<f64>> {
    let dir = tempfile::tempdir().unwrap();
    let (h, w) = img.dim();
    let bytes: Vec<u8> = img.iter().copied().collect();
    std::fs::write(dir.path().join("img.u8"), bytes).unwrap();
    let kp: Vec<u8> = xy
        .iter()
        .flat_map(|&(x, y)| [x.to_le_bytes(), y.to_le_bytes()])
        .flatten()
        .collect();
    std::fs::write(dir.path().join("kp.f32"), kp).unwrap();
    let out = Command::new(py)
        .arg(script())
        .arg(dir.path().join("img.u8"))
        .arg(dir.path().join("kp.f32"))
        .arg(dir.path().join("desc.f32"))
        .args(["--height", &h.to_string(), "--width", &w.to_string()])
        .args(["--size", &size.to_string(), "--sigma", "0.5"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the OpenCV peer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stderr).trim());
    let raw = std::fs::read(dir.path().join("desc.f32")).unwrap();
    assert_eq!(raw.len(), xy.len() * 128 * 4);
    raw.chunks_exact(128 * 4)
        .map(|d| {
            let v: Vec<f64> = d
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
                .collect();
            let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v.iter().map(|x| x / n).collect()
        })
        .collect()
}

/// Our descriptor in OpenCV's orientation convention (bin t -> (8 − t) mod 8).
fn to_opencv_order(d: &[f32]) -> Vec<f64> {
    let mut out = vec![0.0; 128];
    for cell in 0..16 {
        for t in 0..8 {
            out[cell * 8 + (8 - t) % 8] = f64::from(d[cell * 8 + t]);
        }
    }
    out
}

struct Agreement {
    n: usize,
    /// Mean cosine without the orientation mapping (a wrong convention): the control.
    unmapped: f64,
    mean: f64,
    p5: f64,
    min: f64,
    max_abs: f64,
}

/// Per-descriptor cosine between ours and OpenCV's, over the stored descriptors whose
/// support (centre ± (2.5b − 1)) keeps one pixel off the border.
fn agreement(py: &Path, img: &Array2<u8>, bin: usize, window: Window) -> Agreement {
    let cfg = DsiftConfig {
        bin,
        step: 7,
        levels: 1,
        window,
        zero_tol: 1e-12,
    };
    let f = img.mapv(f32::from);
    let l: LevelDescriptors = dense_sift(f.view(), &cfg).unwrap();
    let (h, w) = img.dim();
    let half = 2.5 * bin as f32 - 1.0;
    let mut rows = Vec::new();
    let mut xy = Vec::new();
    for (r, &g) in l.grid_index.iter().enumerate() {
        let (x, y) = l.position(g as usize);
        if x - half >= 1.0
            && y - half >= 1.0
            && x + half <= (w - 2) as f32
            && y + half <= (h - 2) as f32
        {
            rows.push(r);
            xy.push((x, y));
        }
    }
    assert!(rows.len() > 100, "{}", rows.len());
    assert!(
        l.zero_count > 0,
        "bin {bin}: no zero descriptor, grid {:?}",
        l.grid
    );
    let cv = opencv(py, img, &xy, 2.0 * bin as f32 / 3.0);
    let mut cos: Vec<f64> = Vec::new();
    let mut max_abs = 0f64;
    let mut unmapped = 0f64;
    for (&r, c) in rows.iter().zip(&cv) {
        let d = l.descriptors.row(r);
        unmapped += d.iter().zip(c).map(|(&a, b)| f64::from(a) * b).sum::<f64>();
        let ours = to_opencv_order(d.as_slice().unwrap());
        cos.push(ours.iter().zip(c).map(|(a, b)| a * b).sum());
        for (a, b) in ours.iter().zip(c) {
            max_abs = max_abs.max((a - b).abs());
        }
    }
    cos.sort_by(f64::total_cmp);
    Agreement {
        n: cos.len(),
        unmapped: unmapped / cos.len() as f64,
        mean: cos.iter().sum::<f64>() / cos.len() as f64,
        p5: cos[cos.len() / 20],
        min: cos[0],
        max_abs,
    }
}

#[test]
fn dense_sift_agrees_with_opencv_sift_at_the_same_keypoints() {
    let Some(py) = python() else { return };
    let img = texture(150, 210);
    let report = |bin: usize, window: Window| {
        let a = agreement(&py, &img, bin, window);
        println!(
            "bin {bin}, {window:?} window: {} descriptors, cosine mean {:.6}, 5th percentile \
             {:.6}, min {:.6}; max |entry difference| {:.4}; without the orientation \
             mapping: mean {:.4}",
            a.n, a.mean, a.p5, a.min, a.max_abs, a.unmapped
        );
        // The check discriminates: a wrong orientation convention is far off.
        assert!(a.unmapped < 0.95, "control: {}", a.unmapped);
        a
    };
    let g = report(8, Window::Gaussian);
    assert!(g.mean >= 0.9998 && g.p5 >= 0.9995, "Gaussian window, bin 8");
    let g6 = report(6, Window::Gaussian);
    assert!(
        g6.mean >= 0.9998 && g6.p5 >= 0.9995,
        "Gaussian window, bin 6"
    );
    let f = report(8, Window::Flat);
    assert!(f.mean >= 0.995 && f.p5 >= 0.99, "flat window, bin 8");
    // Odd bin: OpenCV rounds our half-pixel centres (information only).
    report(9, Window::Gaussian);
}
