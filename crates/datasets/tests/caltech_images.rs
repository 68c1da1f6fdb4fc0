//! The OASIS image pipeline end to end on small generated images in the Caltech-256 folder
//! layout: class separation after the pipeline, determinism, the svmlight cache, the size
//! filter, and typed errors for corrupt images.

use dyad_core::{Rng, seeded};
use dyad_datasets::DataError;
use dyad_datasets::caltech256::Subset;
use dyad_datasets::pipelines::images::{
    CacheStatus, CaltechFeatureConfig, FitOn, ImageFeatureConfig, caltech_features, decode_rgb,
    fit, image_dimensions,
};
use image::{Rgb, RgbImage};
use rand::Rng as _;
use std::path::{Path, PathBuf};

const COLOURS: [[u8; 3]; 10] = [
    [220, 30, 30],
    [30, 200, 40],
    [40, 50, 220],
    [240, 220, 40],
    [200, 40, 200],
    [40, 210, 210],
    [250, 140, 20],
    [120, 60, 20],
    [240, 240, 240],
    [20, 20, 20],
];

/// A textured two-colour image of class `class`: stripes (vertical, horizontal) or a
/// checkerboard of a class-specific period and colour pair, with a random phase, random
/// size in 100..=300 and per-pixel noise.
fn class_image(class: usize, rng: &mut Rng) -> RgbImage {
    let (w, h) = (rng.random_range(100..=300), rng.random_range(100..=300));
    class_image_sized(class, w, h, rng)
}

fn class_image_sized(class: usize, w: u32, h: u32, rng: &mut Rng) -> RgbImage {
    let (a, b) = (COLOURS[class % 10], COLOURS[(class + 3) % 10]);
    let period = 6 + 4 * (class % 4) as u32;
    let (px, py) = (rng.random_range(0..period), rng.random_range(0..period));
    let kind = class % 3;
    let mut img = RgbImage::new(w, h);
    for (x, y, p) in img.enumerate_pixels_mut() {
        let (u, v) = ((x + px) / (period / 2), (y + py) / (period / 2));
        let on = match kind {
            0 => u % 2 == 0,
            1 => v % 2 == 0,
            _ => (u + v) % 2 == 0,
        };
        let base = if on { a } else { b };
        let mut c = [0u8; 3];
        for k in 0..3 {
            c[k] = (i32::from(base[k]) + rng.random_range(-12..=12)).clamp(0, 255) as u8;
        }
        *p = Rgb(c);
    }
    img
}

fn small_config() -> ImageFeatureConfig {
    ImageFeatureConfig {
        codebook_size: 48,
        kmeans_max_iter: 20,
        ..ImageFeatureConfig::default()
    }
}

#[test]
fn same_class_images_are_nearer_after_the_pipeline() {
    let mut rng = seeded(11);
    let classes = 10;
    let per_class = 4;
    let mut train = Vec::new();
    let mut test = Vec::new();
    for c in 0..classes {
        for i in 0..per_class {
            let img = class_image(c, &mut rng);
            if i < 3 {
                train.push((c, img))
            } else {
                test.push((c, img))
            }
        }
    }
    let train_imgs: Vec<&RgbImage> = train.iter().map(|(_, i)| i).collect();
    let fp = fit(&train_imgs, &small_config(), 3).unwrap();
    let stats = fp.stats.clone().unwrap();
    assert_eq!(stats.images, 30);
    assert!(stats.blocks >= 30, "{stats:?}");
    // Held-out images transformed with the fitted pipeline, plus the fitting images.
    let all: Vec<(usize, &RgbImage)> = train.iter().chain(&test).map(|(c, i)| (*c, i)).collect();
    let imgs: Vec<&RgbImage> = all.iter().map(|(_, i)| *i).collect();
    let x = fp.transform(&imgs).unwrap();
    assert_eq!(x.shape(), (40, 48));
    let rows: Vec<Vec<f64>> = (0..40)
        .map(|i| {
            let mut d = vec![0.0; 48];
            let r = x.outer_view(i).unwrap();
            for (&j, &v) in r.indices().iter().zip(r.data()) {
                d[j] = v;
            }
            d
        })
        .collect();
    for r in &rows {
        let n: f64 = r.iter().map(|v| v * v).sum();
        assert!((n - 1.0).abs() < 1e-9, "rows are L2-normalised: {n}");
    }
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let (mut within, mut between, mut nw, mut nb) = (0.0, 0.0, 0, 0);
    let mut correct = 0;
    for i in 0..40 {
        let mut best = (f64::NEG_INFINITY, usize::MAX);
        for j in 0..40 {
            if i == j {
                continue;
            }
            let s = dot(&rows[i], &rows[j]);
            if all[i].0 == all[j].0 {
                within += s;
                nw += 1;
            } else {
                between += s;
                nb += 1;
            }
            if s > best.0 {
                best = (s, j);
            }
        }
        correct += usize::from(all[best.1].0 == all[i].0);
    }
    let (within, between) = (within / nw as f64, between / nb as f64);
    assert!(
        within > 2.0 * between,
        "mean within-class similarity {within:.3} vs between {between:.3}"
    );
    assert!(correct >= 36, "1-NN accuracy {correct}/40");
    // The held-out images alone: nearest fitting image of the same class.
    let held_out_correct = (30..40)
        .filter(|&i| {
            let j = (0..30)
                .max_by(|&a, &b| dot(&rows[i], &rows[a]).total_cmp(&dot(&rows[i], &rows[b])))
                .unwrap();
            all[j].0 == all[i].0
        })
        .count();
    assert!(held_out_correct >= 9, "held-out 1-NN {held_out_correct}/10");
}

/// Same two colours in equal proportions, different textures: only LBP can tell them apart.
fn texture_image(kind: usize, rng: &mut Rng) -> RgbImage {
    let (w, h) = (rng.random_range(120..=260), rng.random_range(120..=260));
    let (px, py) = (rng.random_range(0..8u32), rng.random_range(0..8u32));
    RgbImage::from_fn(w, h, |x, y| {
        let (u, v) = ((x + px) / 4, (y + py) / 4);
        let on = match kind {
            0 => u % 2 == 0,
            1 => v % 2 == 0,
            2 => (u + v) % 2 == 0,
            _ => ((x + px + y) / 4) % 2 == 0,
        };
        let n = rng_noise(x, y);
        if on {
            Rgb([200 - n, 60 + n, 60])
        } else {
            Rgb([60 + n, 60, 200 - n])
        }
    })
}

fn rng_noise(x: u32, y: u32) -> u8 {
    ((x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) % 9) as u8
}

#[test]
fn texture_alone_separates_classes() {
    let mut rng = seeded(8);
    let labelled: Vec<(usize, RgbImage)> = (0..24)
        .map(|i| (i % 4, texture_image(i % 4, &mut rng)))
        .collect();
    let imgs: Vec<&RgbImage> = labelled.iter().map(|(_, i)| i).collect();
    let cfg = ImageFeatureConfig {
        codebook_size: 16,
        ..ImageFeatureConfig::default()
    };
    let fp = fit(&imgs, &cfg, 4).unwrap();
    let x = fp.transform(&imgs).unwrap();
    let sim = |i: usize, j: usize| {
        let (a, b) = (x.outer_view(i).unwrap(), x.outer_view(j).unwrap());
        a.dot(&b)
    };
    let correct = (0..24)
        .filter(|&i| {
            let j = (0..24)
                .filter(|&j| j != i)
                .max_by(|&a, &b| sim(i, a).total_cmp(&sim(i, b)))
                .unwrap();
            labelled[j].0 == labelled[i].0
        })
        .count();
    assert!(
        correct >= 22,
        "1-NN accuracy on texture-only classes {correct}/24"
    );
}

#[test]
fn fitting_is_deterministic_in_the_seed() {
    let mut rng = seeded(5);
    let imgs: Vec<RgbImage> = (0..12).map(|i| class_image(i % 4, &mut rng)).collect();
    let cfg = ImageFeatureConfig {
        codebook_size: 16,
        ..ImageFeatureConfig::default()
    };
    let a = fit(&imgs, &cfg, 1).unwrap();
    let b = fit(&imgs, &cfg, 1).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.identity(), b.identity());
    let c = fit(&imgs, &cfg, 2).unwrap();
    assert_ne!(a.identity(), c.identity());
    assert_ne!(a.palette, c.palette);
    // The palette holds the generated colours: each of the 4 classes' 2 colours has a
    // palette entry within noise distance.
    for class in 0..4 {
        for colour in [COLOURS[class], COLOURS[(class + 3) % 10]] {
            let d = a
                .palette
                .iter()
                .map(|p| {
                    (0..3)
                        .map(|k| (p[k] - f32::from(colour[k])).powi(2))
                        .sum::<f32>()
                })
                .fold(f32::INFINITY, f32::min);
            assert!(
                d < 30.0 * 30.0,
                "colour {colour:?}: nearest palette entry at {d}"
            );
        }
    }
    assert_eq!(a.transform(&imgs).unwrap(), b.transform(&imgs).unwrap());
}

struct Layout {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

/// `256_ObjectCategories` with 5 classes x 4 JPEG images, one too-small image in 002, a
/// stray file and a subfolder with an image in 003.
fn layout() -> Layout {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("256_ObjectCategories");
    let mut rng = seeded(21);
    for (c, name) in ["001.alpha", "002.beta", "003.gamma", "004.delta", "005.eps"]
        .iter()
        .enumerate()
    {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for i in 1..=4 {
            class_image(c, &mut rng)
                .save(dir.join(format!("{:03}_{i:04}.jpg", c + 1)))
                .unwrap();
        }
    }
    RgbImage::from_pixel(50, 80, Rgb([1, 2, 3]))
        .save(root.join("002.beta/002_0005.png"))
        .unwrap();
    std::fs::write(root.join("003.gamma/RENAME2"), b"not an image").unwrap();
    std::fs::create_dir(root.join("003.gamma/greg")).unwrap();
    class_image(0, &mut rng)
        .save(root.join("003.gamma/greg/x.jpg"))
        .unwrap();
    Layout { _tmp: tmp, root }
}

fn subset() -> Subset {
    Subset::Folders(vec![
        "005.eps".into(),
        "002.beta".into(),
        "003.gamma".into(),
    ])
}

#[test]
fn caltech_features_end_to_end_with_cache() {
    let l = layout();
    let cache = l.root.parent().unwrap().join("cache");
    let config = CaltechFeatureConfig {
        fit_on: FitOn::Subset,
        features: ImageFeatureConfig {
            codebook_size: 24,
            ..ImageFeatureConfig::default()
        },
        ..CaltechFeatureConfig::default()
    };
    let a = caltech_features(&l.root, &subset(), &config, 7, Some(&cache)).unwrap();
    let CacheStatus::Written(svm) = &a.cache else {
        panic!("{:?}", a.cache)
    };
    assert_eq!(a.set.class_names, vec!["002.beta", "003.gamma", "005.eps"]);
    assert_eq!(a.set.n(), 12);
    assert_eq!(a.set.dim(), 24);
    assert_eq!(a.set.labels, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    assert_eq!(a.images[0], "002.beta/002_0001.jpg");
    assert_eq!(a.images[11], "005.eps/005_0004.jpg");
    assert_eq!(a.too_small, vec!["002.beta/002_0005.png"]);
    let skipped: Vec<String> = a
        .skipped
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(skipped, vec!["RENAME2", "greg"]);
    assert_eq!(a.fit_images, a.images);
    for row in a.set.x.outer_iterator() {
        let n: f64 = row.data().iter().map(|v| v * v).sum();
        assert!((n - 1.0).abs() < 1e-9);
    }

    // The sidecar is TOML recording key, identity, classes and the configuration.
    let sidecar = svm.with_extension("toml");
    let side: toml::Table = toml::from_str(&std::fs::read_to_string(&sidecar).unwrap()).unwrap();
    assert_eq!(side["key"].as_str().unwrap(), a.key.0);
    assert_eq!(side["content_id"].as_str().unwrap(), a.content_id.0);
    assert_eq!(side["n_too_small"].as_integer(), Some(1));
    assert_eq!(side["classes"].as_array().unwrap().len(), 3);
    let recorded: CaltechFeatureConfig = side["config"].clone().try_into().unwrap();
    assert_eq!(recorded, config);
    let no_temp_files = std::fs::read_dir(&cache)
        .unwrap()
        .all(|e| !e.unwrap().file_name().to_string_lossy().starts_with('.'));
    assert!(no_temp_files);

    // Second call: loaded from the cache, identical.
    let b = caltech_features(&l.root, &subset(), &config, 7, Some(&cache)).unwrap();
    assert_eq!(b.cache, CacheStatus::Hit(svm.clone()));
    assert_eq!(b.set, a.set);
    assert_eq!(b.content_id, a.content_id);
    assert!(b.pipeline.is_none());

    // Without the cache: recomputed, bit-identical.
    let c = caltech_features(&l.root, &subset(), &config, 7, None).unwrap();
    assert_eq!(c.cache, CacheStatus::Disabled);
    assert_eq!(c.content_id, a.content_id);

    // A damaged cache file is detected and rebuilt.
    let text = std::fs::read_to_string(svm).unwrap();
    std::fs::write(svm, text.replacen(":", ":x", 1)).unwrap();
    let d = caltech_features(&l.root, &subset(), &config, 7, Some(&cache)).unwrap();
    let CacheStatus::Rebuilt { reason, .. } = &d.cache else {
        panic!("{:?}", d.cache)
    };
    assert!(reason.contains(":1:"), "{reason}");
    assert_eq!(d.content_id, a.content_id);

    // Another configuration or seed is another key and another file.
    let mut other = config.clone();
    other.features.codebook_size = 20;
    let e = caltech_features(&l.root, &subset(), &other, 7, Some(&cache)).unwrap();
    assert_ne!(e.key, a.key);
    assert!(matches!(&e.cache, CacheStatus::Written(p) if p != svm));
    assert_eq!(e.set.dim(), 20);
    let f = caltech_features(&l.root, &subset(), &config, 8, None).unwrap();
    assert_ne!(f.key, a.key);
    assert_ne!(f.content_id, a.content_id);

    // A stricter size filter drops more images and changes the key.
    let strict = CaltechFeatureConfig {
        min_side: 120,
        ..config.clone()
    };
    let g = caltech_features(&l.root, &subset(), &strict, 7, None).unwrap();
    assert!(g.too_small.len() > 1 && g.set.n() + g.too_small.len() == 13);
    assert_ne!(g.key, a.key);
}

#[test]
fn disjoint_fitting_uses_only_other_classes() {
    let l = layout();
    let config = CaltechFeatureConfig {
        fit_on: FitOn::Disjoint,
        fit_max_images: 6,
        features: ImageFeatureConfig {
            codebook_size: 16,
            ..ImageFeatureConfig::default()
        },
        ..CaltechFeatureConfig::default()
    };
    let r = caltech_features(&l.root, &subset(), &config, 1, None).unwrap();
    assert_eq!(r.fit_images.len(), 6);
    assert!(
        r.fit_images
            .iter()
            .all(|p| p.starts_with("001.alpha/") || p.starts_with("004.delta/")),
        "{:?}",
        r.fit_images
    );
    assert_eq!(r.set.n(), 12);
    let all = Subset::Folders(
        ["001.alpha", "002.beta", "003.gamma", "004.delta", "005.eps"]
            .map(String::from)
            .to_vec(),
    );
    let e = caltech_features(&l.root, &all, &config, 1, None).unwrap_err();
    assert!(matches!(e, DataError::Param(_)), "{e}");
    let missing = Subset::Folders(vec!["002.beta".into(), "006.zeta".into()]);
    let e = caltech_features(&l.root, &missing, &config, 1, None).unwrap_err();
    assert!(e.to_string().contains("006.zeta"), "{e}");
}

fn jpeg_bytes(path: &Path) -> Vec<u8> {
    let mut rng = seeded(2);
    class_image(1, &mut rng).save(path).unwrap();
    std::fs::read(path).unwrap()
}

#[test]
fn corrupt_images_are_typed_errors_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.jpg");
    let bytes = jpeg_bytes(&good);
    assert!(decode_rgb(&good).is_ok());

    // Garbage with a .jpg name: the header cannot be read.
    let garbage = tmp.path().join("garbage.jpg");
    std::fs::write(&garbage, b"\xff\xd8\xff\xe0 this is not really a jpeg").unwrap();
    for e in [
        image_dimensions(&garbage).unwrap_err(),
        decode_rgb(&garbage).unwrap_err(),
    ] {
        assert!(matches!(e, DataError::Inconsistent { .. }), "{e}");
        assert!(e.to_string().contains("garbage.jpg"), "{e}");
    }
    // A JPEG cut inside its header.
    let cut = tmp.path().join("cut.jpg");
    std::fs::write(&cut, &bytes[..40]).unwrap();
    let e = decode_rgb(&cut).unwrap_err();
    assert!(e.to_string().contains("cut.jpg"), "{e}");
    // A missing file is an I/O error naming it.
    let e = decode_rgb(&tmp.path().join("absent.jpg")).unwrap_err();
    assert!(matches!(e, DataError::Io { .. }) && e.to_string().contains("absent.jpg"));

    // Through the whole pipeline: the corrupt file in a class folder is named.
    let l = layout();
    // Cut inside the entropy-coded data: the header (and so the listing) is fine, decoding
    // fails.
    let bad = l.root.join("003.gamma/003_0002.jpg");
    let half = &bytes[..bytes.len() * 6 / 10];
    std::fs::write(&bad, half).unwrap();
    assert!(image_dimensions(&bad).is_ok());
    let e = decode_rgb(&bad).unwrap_err();
    assert!(matches!(e, DataError::Inconsistent { .. }), "{e}");
    let config = CaltechFeatureConfig {
        fit_on: FitOn::Subset,
        features: ImageFeatureConfig {
            codebook_size: 8,
            ..ImageFeatureConfig::default()
        },
        ..CaltechFeatureConfig::default()
    };
    let e = caltech_features(&l.root, &subset(), &config, 1, None).unwrap_err();
    assert!(e.to_string().contains("003_0002.jpg"), "{e}");
}

/// Throughput of the pipeline on 300x200 JPEGs (the spec's example size) with the default
/// configuration (k = 1000), and of the codebook k-means at its default scale.
#[test]
#[ignore = "benchmark: cargo test --release -p dyad-datasets --test caltech_images -- --ignored --nocapture"]
fn throughput_300x200() {
    use dyad_datasets::pipelines::kmeans::{KMeansParams, kmeans};
    // CPU time of this thread (the machine is shared: wall time overstates the cost).
    struct Instant(f64);
    impl Instant {
        fn now() -> Self {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
            Instant(
                s.split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
                    / 1e9,
            )
        }
        fn elapsed(&self) -> std::time::Duration {
            std::time::Duration::from_secs_f64((Instant::now().0 - self.0).max(1e-9))
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = seeded(1);
    let n = 200;
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| {
            let p = tmp.path().join(format!("{i:04}.jpg"));
            class_image_sized(i % 10, 300, 200, &mut rng)
                .save(&p)
                .unwrap();
            p
        })
        .collect();
    let t = Instant::now();
    for p in &paths {
        decode_rgb(p).unwrap();
    }
    let decode = t.elapsed().as_secs_f64();
    let cfg = ImageFeatureConfig::default();
    let t = Instant::now();
    let fp = fit(&paths, &cfg, 1).unwrap();
    let fit_s = t.elapsed().as_secs_f64();
    let stats = fp.stats.clone().unwrap();
    let t = Instant::now();
    let x = fp.transform(&paths).unwrap();
    let transform = t.elapsed().as_secs_f64();
    assert_eq!(x.rows(), n);
    let imgs: Vec<RgbImage> = paths.iter().map(|p| decode_rgb(p).unwrap()).collect();
    let t = Instant::now();
    let mut blocks = 0;
    let mut descriptors = Vec::new();
    for img in &imgs {
        let d = fp.descriptors(img);
        blocks += d.len();
        descriptors.extend_from_slice(&d.data);
    }
    let describe = t.elapsed().as_secs_f64();
    eprintln!(
        "CPU time per thread; {n} images 300x200 ({blocks} blocks, {:.1}/image): decode {:.0} img/s; descriptors only \
         {:.0} img/s; transform (decode + descriptors + 1000-word assignment + tf-idf) {:.0} img/s; \
         fit {:.1} s ({} blocks, codebook {} iterations)",
        blocks as f64 / n as f64,
        n as f64 / decode,
        n as f64 / describe,
        n as f64 / transform,
        fit_s,
        stats.blocks,
        stats.codebook_iterations
    );
    // Codebook k-means at the default scale: 100,000 descriptors (the real ones, jittered),
    // k = 1000.
    let stride = descriptors.len() / blocks;
    let mut big = Vec::with_capacity(100_000 * stride);
    let mut jitter = seeded(2);
    while big.len() < 100_000 * stride {
        for v in &descriptors {
            big.push(v + jitter.random_range(0.0..1e-3f32));
        }
    }
    big.truncate(100_000 * stride);
    let iters_list: &[usize] = if std::env::var_os("DYAD_BENCH_SKIP_KMEANS").is_some() {
        &[]
    } else {
        &[1, 5]
    };
    for &iters in iters_list {
        let t = Instant::now();
        let km = kmeans(
            &big,
            stride,
            KMeansParams {
                k: 1000,
                max_iter: iters,
                tolerance: 0.0,
            },
            &mut seeded(3),
        )
        .unwrap();
        eprintln!(
            "codebook k-means, 100000 x {stride} descriptors, k = 1000, {} iteration(s) incl. \
             k-means++ init: {:.1} s",
            km.iterations,
            t.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn grey_and_rgba_files_decode_to_rgb() {
    let tmp = tempfile::tempdir().unwrap();
    let grey = image::GrayImage::from_fn(70, 66, |x, y| image::Luma([(x * 3 + y) as u8]));
    let grey_png = tmp.path().join("g.png");
    grey.save(&grey_png).unwrap();
    let rgb = decode_rgb(&grey_png).unwrap();
    assert_eq!(rgb.dimensions(), (70, 66));
    assert_eq!(rgb.get_pixel(5, 7).0, [22, 22, 22]);
    // Grey JPEG (lossy: replicated channels, values near the original).
    let grey_jpg = tmp.path().join("g.jpg");
    grey.save(&grey_jpg).unwrap();
    let rgb = decode_rgb(&grey_jpg).unwrap();
    let p = rgb.get_pixel(40, 30).0;
    assert!(
        p[0] == p[1] && p[1] == p[2] && (i32::from(p[0]) - 150).abs() <= 8,
        "{p:?}"
    );
    // RGBA: alpha dropped. A PNG named .jpg is recognised by its magic bytes.
    let rgba = image::RgbaImage::from_pixel(64, 64, image::Rgba([10, 20, 30, 0]));
    let odd = tmp.path().join("actually-png.jpg");
    rgba.save_with_format(&odd, image::ImageFormat::Png)
        .unwrap();
    assert_eq!(image_dimensions(&odd).unwrap(), (64, 64));
    assert_eq!(decode_rgb(&odd).unwrap().get_pixel(3, 3).0, [10, 20, 30]);
}
