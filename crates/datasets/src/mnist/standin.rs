//! A seeded synthetic stand-in for MNIST, used when the real files are absent.
//!
//! Ten classes, each a template of 3–5 pen strokes (line segments) in the central 20x20 box of
//! a 28x28 canvas. Each image jitters every stroke end point (Gaussian, `jitter` pixels),
//! shifts the whole glyph by up to two pixels, varies the pen width, and renders with
//! anti-aliased edges to bytes 0..=255. The result has MNIST's shape (28x28 bytes, labels
//! 0–9, an official train/test partition) and a similar ink density (about a fifth of the
//! pixels), with within-class variation and between-class overlap; it is not handwriting and
//! every result computed from it is marked synthetic.

use crate::DataError;
use crate::mnist::Mnist;
use dyad_core::seeded;
use rand::Rng as _;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MnistStandin {
    /// Images in the training part (balanced over the ten classes).
    #[serde(default = "d_train")]
    pub train: usize,
    /// Images in the test part (0: none, as the real loader's `test_images = 0` gives).
    #[serde(default = "d_test")]
    pub test: usize,
    /// Standard deviation of stroke end-point jitter, in pixels.
    #[serde(default = "d_jitter")]
    pub jitter: f64,
    #[serde(default)]
    pub seed: u64,
}

fn d_train() -> usize {
    6000
}
fn d_test() -> usize {
    1000
}
fn d_jitter() -> f64 {
    1.5
}

impl Default for MnistStandin {
    fn default() -> Self {
        Self {
            train: d_train(),
            test: d_test(),
            jitter: d_jitter(),
            seed: 0,
        }
    }
}

type Stroke = [(f64, f64); 2];

impl MnistStandin {
    /// Generate the raw (byte) images; deterministic in the parameters.
    pub fn generate(&self) -> Result<Mnist, DataError> {
        let part_ok = |n: usize| n >= 10;
        if !part_ok(self.train)
            || !(self.test == 0 || part_ok(self.test))
            || !(0.0..=5.0).contains(&self.jitter)
        {
            return Err(DataError::Param(format!(
                "MNIST stand-in needs train >= 10 (got {}), test 0 or >= 10 (got {}) and jitter in \
                 [0, 5] (got {})",
                self.train, self.test, self.jitter
            )));
        }
        let mut rng = seeded(self.seed);
        let templates: Vec<Vec<Stroke>> = (0..10)
            .map(|_| {
                let n = rng.random_range(3..=5);
                let mut pt = || (rng.random_range(4.0..24.0), rng.random_range(4.0..24.0));
                (0..n).map(|_| [pt(), pt()]).collect()
            })
            .collect();
        let noise = Normal::new(0.0, self.jitter.max(1e-12)).expect("valid sd");
        let mut render_part = |n: usize| {
            let (mut images, mut labels) = (Vec::with_capacity(n * 784), Vec::with_capacity(n));
            for i in 0..n {
                let class = i % 10;
                let (dx, dy) = (rng.random_range(-2.0..=2.0), rng.random_range(-2.0..=2.0));
                let width = rng.random_range(1.2..2.4);
                let strokes: Vec<Stroke> = templates[class]
                    .iter()
                    .map(|s| {
                        s.map(|(x, y)| {
                            (
                                x + dx + noise.sample(&mut rng),
                                y + dy + noise.sample(&mut rng),
                            )
                        })
                    })
                    .collect();
                render(&strokes, width, &mut images);
                labels.push(class as u8);
            }
            (images, labels)
        };
        let (train_images, train_labels) = render_part(self.train);
        let (test_images, test_labels) = render_part(self.test);
        Ok(Mnist {
            rows: 28,
            cols: 28,
            train_images,
            train_labels,
            test_images,
            test_labels,
        })
    }
}

/// Anti-aliased strokes of pen width `width` onto a fresh 28x28 canvas appended to `out`.
fn render(strokes: &[Stroke], width: f64, out: &mut Vec<u8>) {
    for r in 0..28 {
        for c in 0..28 {
            let p = (c as f64 + 0.5, r as f64 + 0.5);
            let ink = strokes
                .iter()
                .map(|s| (1.0 - (segment_distance(p, s) - width / 2.0)).clamp(0.0, 1.0))
                .fold(0.0, f64::max);
            out.push((ink * 255.0).round() as u8);
        }
    }
}

fn segment_distance(p: (f64, f64), s: &Stroke) -> f64 {
    let [(ax, ay), (bx, by)] = *s;
    let (vx, vy) = (bx - ax, by - ay);
    let len2 = vx * vx + vy * vy;
    let t = if len2 == 0.0 {
        0.0
    } else {
        (((p.0 - ax) * vx + (p.1 - ay) * vy) / len2).clamp(0.0, 1.0)
    };
    let (qx, qy) = (ax + t * vx - p.0, ay + t * vy - p.1);
    (qx * qx + qy * qy).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_density_and_determinism() {
        let g = MnistStandin {
            train: 200,
            test: 50,
            ..Default::default()
        };
        let m = g.generate().unwrap();
        assert_eq!(m, g.generate().unwrap());
        assert_eq!((m.train_images.len(), m.test_labels.len()), (200 * 784, 50));
        let ink =
            m.train_images.iter().filter(|&&v| v > 0).count() as f64 / m.train_images.len() as f64;
        assert!((0.05..0.4).contains(&ink), "ink density {ink}");
        let set = m.to_labeled_set(true);
        assert_eq!((set.n(), set.dim(), set.n_classes()), (250, 784, 10));
    }

    #[test]
    fn an_empty_test_part_is_allowed_and_small_parts_are_not() {
        let none = MnistStandin {
            train: 30,
            test: 0,
            ..Default::default()
        };
        let m = none.generate().unwrap();
        assert_eq!((m.train_labels.len(), m.test_labels.len()), (30, 0));
        assert!(m.test_images.is_empty());
        for (train, test) in [(30, 5), (5, 30), (0, 0)] {
            let err = MnistStandin {
                train,
                test,
                ..Default::default()
            }
            .generate()
            .unwrap_err()
            .to_string();
            assert!(err.contains(&format!("got {train}")), "{err}");
        }
    }
}
