//! Dense multi-scale SIFT (FuncISH §2.2) on a 512 x 1024 stand-in-like image (an elliptical
//! textured "brain" on a black background), 4 levels, bin 9, step 13; both windows; the
//! flat window also at 128 x 256 and 2048 x 4096. Plus the
//! bag of words of that image against 4 dictionaries of 500 words (the assignment cost).

use criterion::{Criterion, criterion_group, criterion_main};
use dyad_datasets::pipelines::bow::{Dictionaries, DictionaryConfig};
use dyad_datasets::pipelines::dsift::{DsiftConfig, Window, multiscale_dsift};
use ndarray::Array2;
use std::hint::black_box;

fn brain(h: usize, w: usize) -> Array2<f32> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    Array2::from_shape_fn((h, w), |(y, x)| {
        let (u, v) = (
            (x as f32 - w as f32 / 2.0) / (0.45 * w as f32),
            (y as f32 - h as f32 / 2.0) / (0.42 * h as f32),
        );
        if u * u + v * v > 1.0 {
            return 0.0;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let noise = (state >> 56) as f32 / 8.0;
        let (xf, yf) = (x as f32, y as f32);
        (80.0
            + 50.0 * (0.21 * xf).sin() * (0.17 * yf).cos()
            + 30.0 * (0.013 * xf * yf).sin()
            + noise)
            .clamp(0.0, 255.0)
    })
}

fn bench(c: &mut Criterion) {
    let img = brain(512, 1024);
    let mut g = c.benchmark_group("dsift");
    g.sample_size(10);
    for window in [Window::Flat, Window::Gaussian] {
        let cfg = DsiftConfig {
            window,
            ..DsiftConfig::default()
        };
        let levels = multiscale_dsift(img.view(), &cfg).unwrap();
        let n: usize = levels.iter().map(|l| l.grid_len()).sum();
        eprintln!("512x1024, {window:?}: {n} keypoints over 4 levels");
        g.bench_function(format!("multiscale_512x1024_{}", window.as_str()), |b| {
            b.iter(|| black_box(multiscale_dsift(img.view(), &cfg).unwrap()))
        });
    }
    // The quick profile's smallest and the paper profile's stand-in sizes (flat window).
    for (h, w) in [(128, 256), (2048, 4096)] {
        let img = brain(h, w);
        let cfg = DsiftConfig::default();
        g.bench_function(format!("multiscale_{h}x{w}_flat"), |b| {
            b.iter(|| black_box(multiscale_dsift(img.view(), &cfg).unwrap()))
        });
    }
    // Bag of words against K = 500 random unit-norm words per level (only the assignment
    // is timed).
    let cfg = DsiftConfig::default();
    let levels = multiscale_dsift(img.view(), &cfg).unwrap();
    let dict_cfg = DictionaryConfig::default();
    let mut state = 1u64;
    let words: Vec<Vec<f32>> = (0..cfg.levels)
        .map(|_| {
            let mut v: Vec<f32> = (0..dict_cfg.k * 128)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (state >> 40) as f32 / (1u64 << 24) as f32
                })
                .collect();
            for w in v.chunks_exact_mut(128) {
                let n = w.iter().map(|x| x * x).sum::<f32>().sqrt();
                w.iter_mut().for_each(|x| *x /= n);
            }
            v
        })
        .collect();
    let dicts = Dictionaries::from_centroids(&cfg, &dict_cfg, 0, words).unwrap();
    let n: usize = levels.iter().map(|l| l.len()).sum();
    eprintln!("512x1024: {n} non-zero descriptors to assign");
    g.bench_function("bag_512x1024_k500", |b| {
        b.iter(|| black_box(dicts.bag(&levels).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
