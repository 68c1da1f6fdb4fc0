//! Seeded, deterministic k-means (Lloyd's algorithm, squared Euclidean distance) with
//! k-means++ initialisation, for colour palettes and visual codebooks.
//!
//! * Points are rows of a row-major `f32` matrix with `dim` columns.
//! * Initialisation: k-means++ (Arthur & Vassilvitskii 2007): the first centre is a uniformly
//!   random point, each further centre a point drawn with probability proportional to its
//!   squared distance to the nearest centre chosen so far (uniformly, if all distances are 0).
//! * Iteration: assign every point to its nearest centre (ties: the lowest index), then move
//!   every centre to the mean of its points (sums in `f64`). A centre left without points is
//!   re-seeded at the point farthest from its own centre (each such point used once).
//! * Stopping: after `max_iter` assignment steps, or as soon as an assignment step changes no
//!   label or lowers the inertia (sum of squared distances) by at most `tolerance` times its
//!   previous value.
//!
//! The assignment step runs in parallel over blocks of points (each point's nearest centre is
//! its own computation); everything that sums over points does so sequentially in point order,
//! so the result depends only on the points, the parameters and the generator's state, never on
//! the thread count.

use crate::DataError;
use dyad_core::Rng;
use rand::Rng as _;
use rayon::prelude::*;

/// k-means parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KMeansParams {
    pub k: usize,
    pub max_iter: usize,
    pub tolerance: f64,
}

/// A fitted k-means model.
#[derive(Debug, Clone, PartialEq)]
pub struct KMeans {
    /// `k x dim` row-major centres.
    pub centroids: Vec<f32>,
    pub dim: usize,
    /// Inertia of the last assignment step.
    pub inertia: f64,
    /// Assignment steps run.
    pub iterations: usize,
    /// Empty clusters re-seeded, over all iterations.
    pub reseeded: usize,
}

impl KMeans {
    pub fn k(&self) -> usize {
        self.centroids.len() / self.dim.max(1)
    }

    /// Index of the nearest centre to `x` and the squared distance.
    pub fn nearest(&self, x: &[f32]) -> (usize, f32) {
        nearest(
            &self.centroids,
            &sq_norms(&self.centroids, self.dim),
            self.dim,
            x,
        )
    }
}

/// The sum of eight accumulators in the fixed pairwise order [`dot`], [`dot4`] and [`sq_dist`]
/// share (so their results are bit-identical to each other's).
#[inline]
fn reduce8(a: &[f32; 8]) -> f32 {
    ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
}

/// Dot product with eight independent accumulators (vectorises without `-ffast-math`).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut acc = [0f32; 8];
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = reduce8(&acc);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Squared Euclidean distance, eight accumulators.
#[inline]
pub fn sq_dist(a: &[f32], b: &[f32]) -> f32 {
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut acc = [0f32; 8];
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    let mut s = reduce8(&acc);
    for (x, y) in ra.iter().zip(rb) {
        s += (x - y) * (x - y);
    }
    s
}

/// Squared norms of the rows of a `? x dim` matrix.
pub fn sq_norms(rows: &[f32], dim: usize) -> Vec<f32> {
    rows.chunks_exact(dim.max(1)).map(|r| dot(r, r)).collect()
}

/// The nearest row of `centroids` to `x` (ties: the lowest index) and its squared distance
/// (computed as `|x|^2 + |c|^2 - 2 x.c`, clamped at 0); `norms` = [`sq_norms`] of centroids.
///
/// Four centres at a time ([`dot4`]: four independent accumulator sets keep both vector adders
/// busy where one [`dot`] waits on its own additions); every product is bit-identical to
/// [`dot`]'s.
#[inline]
pub fn nearest(centroids: &[f32], norms: &[f32], dim: usize, x: &[f32]) -> (usize, f32) {
    let mut best = (0, f32::INFINITY);
    let quads = centroids.chunks_exact(4 * dim);
    let rest = quads.remainder();
    let mut j = 0;
    for q in quads {
        let d4 = dot4(x, q, dim);
        for (t, d) in d4.iter().enumerate() {
            let d = norms[j + t] - 2.0 * d;
            if d < best.1 {
                best = (j + t, d);
            }
        }
        j += 4;
    }
    for (c, &n) in rest.chunks_exact(dim).zip(&norms[j..]) {
        let d = n - 2.0 * dot(x, c);
        if d < best.1 {
            best = (j, d);
        }
        j += 1;
    }
    (best.0, (best.1 + dot(x, x)).max(0.0))
}

/// `[dot(x, q_0), ..., dot(x, q_3)]` for the four rows of the `4 x dim` block `q`, each summed
/// in exactly [`dot`]'s order.
#[inline]
fn dot4(x: &[f32], q: &[f32], dim: usize) -> [f32; 4] {
    let full = dim / 8 * 8;
    let rows = [
        &q[..dim],
        &q[dim..2 * dim],
        &q[2 * dim..3 * dim],
        &q[3 * dim..4 * dim],
    ];
    let mut acc = [[0f32; 8]; 4];
    for c in (0..full).step_by(8) {
        let xc = &x[c..c + 8];
        for (a, r) in acc.iter_mut().zip(&rows) {
            let rc = &r[c..c + 8];
            for i in 0..8 {
                a[i] += xc[i] * rc[i];
            }
        }
    }
    let mut out = [0f32; 4];
    for ((o, a), r) in out.iter_mut().zip(&acc).zip(&rows) {
        let mut s = reduce8(a);
        for (xv, rv) in x[full..dim].iter().zip(&r[full..dim]) {
            s += xv * rv;
        }
        *o = s;
    }
    out
}

/// Fit k-means to the `n x dim` row-major `points`.
pub fn kmeans(
    points: &[f32],
    dim: usize,
    params: KMeansParams,
    rng: &mut Rng,
) -> Result<KMeans, DataError> {
    let KMeansParams {
        k,
        max_iter,
        tolerance,
    } = params;
    if dim == 0 || !points.len().is_multiple_of(dim) {
        return Err(DataError::Param(format!(
            "k-means: {} values do not form rows of dimension {dim}",
            points.len()
        )));
    }
    let n = points.len() / dim;
    if k == 0 || n < k {
        return Err(DataError::Param(format!(
            "k-means: need at least k = {k} >= 1 points, have {n}"
        )));
    }
    if points.iter().any(|v| !v.is_finite()) {
        return Err(DataError::Param("k-means: non-finite input".into()));
    }
    if tolerance.is_nan() || tolerance < 0.0 {
        return Err(DataError::Param(format!(
            "k-means: tolerance must be >= 0, got {tolerance}"
        )));
    }
    let row = |i: usize| &points[i * dim..(i + 1) * dim];

    // k-means++ initialisation.
    let mut centroids = Vec::with_capacity(k * dim);
    let first = rng.random_range(0..n);
    centroids.extend_from_slice(row(first));
    let mut min_d2: Vec<f64> = (0..n)
        .map(|i| f64::from(sq_dist(row(i), row(first))))
        .collect();
    for _ in 1..k {
        let total: f64 = min_d2.iter().sum();
        let pick = if total > 0.0 {
            let u = rng.random::<f64>() * total;
            let mut acc = 0.0;
            let mut pick = None;
            for (i, &d) in min_d2.iter().enumerate() {
                acc += d;
                if acc > u && d > 0.0 {
                    pick = Some(i);
                    break;
                }
            }
            // Rounding can leave `u` beyond the last partial sum: take the last candidate.
            pick.unwrap_or_else(|| min_d2.iter().rposition(|&d| d > 0.0).unwrap_or(0))
        } else {
            rng.random_range(0..n)
        };
        let c = row(pick).to_vec();
        for (i, m) in min_d2.iter_mut().enumerate() {
            let d = f64::from(sq_dist(row(i), &c));
            if d < *m {
                *m = d;
            }
        }
        centroids.extend_from_slice(&c);
    }

    lloyd(points, dim, centroids, max_iter, tolerance)
}

/// Points per parallel task of the assignment step.
const ASSIGN_CHUNK: usize = 256;

/// Lloyd iterations from the given `k x dim` starting centres (see the module docs).
pub fn lloyd(
    points: &[f32],
    dim: usize,
    mut centroids: Vec<f32>,
    max_iter: usize,
    tolerance: f64,
) -> Result<KMeans, DataError> {
    if dim == 0
        || !points.len().is_multiple_of(dim)
        || !centroids.len().is_multiple_of(dim)
        || centroids.is_empty()
    {
        return Err(DataError::Param(format!(
            "k-means: {} values and {} centre values do not form rows of dimension {dim}",
            points.len(),
            centroids.len()
        )));
    }
    let n = points.len() / dim;
    let k = centroids.len() / dim;
    let row = |i: usize| &points[i * dim..(i + 1) * dim];
    let mut labels = vec![usize::MAX; n];
    let mut dists = vec![0f32; n];
    let mut prev_inertia = f64::INFINITY;
    let mut inertia = f64::INFINITY;
    let mut iterations = 0;
    let mut reseeded = 0;
    let mut sums = vec![0f64; k * dim];
    let mut counts = vec![0usize; k];
    let mut nearest_all = vec![(0usize, 0f32); n];
    for it in 0..max_iter {
        iterations = it + 1;
        let norms = sq_norms(&centroids, dim);
        let mut changed = 0usize;
        inertia = 0.0;
        // The assignment step, the whole cost (n k dim), in parallel: each point's nearest
        // centre is its own computation, and the sums below run in point order, so the result
        // does not depend on the thread count.
        nearest_all
            .par_chunks_mut(ASSIGN_CHUNK)
            .enumerate()
            .for_each(|(b, out)| {
                for (o, i) in out.iter_mut().zip(b * ASSIGN_CHUNK..) {
                    *o = nearest(&centroids, &norms, dim, row(i));
                }
            });
        for (i, &(j, d)) in nearest_all.iter().enumerate() {
            if labels[i] != j {
                changed += 1;
                labels[i] = j;
            }
            dists[i] = d;
            inertia += f64::from(d);
        }
        if changed == 0 || (it > 0 && prev_inertia - inertia <= tolerance * prev_inertia) {
            break;
        }
        prev_inertia = inertia;
        sums.iter_mut().for_each(|s| *s = 0.0);
        counts.iter_mut().for_each(|c| *c = 0);
        for (i, &j) in labels.iter().enumerate() {
            counts[j] += 1;
            for (s, &v) in sums[j * dim..(j + 1) * dim].iter_mut().zip(row(i)) {
                *s += f64::from(v);
            }
        }
        let empty: Vec<usize> = (0..k).filter(|&j| counts[j] == 0).collect();
        for j in 0..k {
            if counts[j] > 0 {
                let inv = 1.0 / counts[j] as f64;
                for (c, &s) in centroids[j * dim..(j + 1) * dim]
                    .iter_mut()
                    .zip(&sums[j * dim..(j + 1) * dim])
                {
                    *c = (s * inv) as f32;
                }
            }
        }
        if !empty.is_empty() {
            let mut far: Vec<usize> = (0..n).collect();
            far.sort_by(|&a, &b| dists[b].total_cmp(&dists[a]).then(a.cmp(&b)));
            for (&j, &i) in empty.iter().zip(&far) {
                centroids[j * dim..(j + 1) * dim].copy_from_slice(row(i));
                reseeded += 1;
            }
        }
    }
    Ok(KMeans {
        centroids,
        dim,
        inertia,
        iterations,
        reseeded,
    })
}

/// `k` distinct rows of the `n x dim` matrix `points`, chosen uniformly at random (as a
/// `k x dim` row-major matrix): the "random data points" initialisation.
pub fn random_rows_init(
    points: &[f32],
    dim: usize,
    k: usize,
    rng: &mut Rng,
) -> Result<Vec<f32>, DataError> {
    if dim == 0 || !points.len().is_multiple_of(dim) {
        return Err(DataError::Param(format!(
            "k-means: {} values do not form rows of dimension {dim}",
            points.len()
        )));
    }
    let n = points.len() / dim;
    if k == 0 || n < k {
        return Err(DataError::Param(format!(
            "k-means: need at least k = {k} >= 1 points, have {n}"
        )));
    }
    let mut out = Vec::with_capacity(k * dim);
    for i in rand::seq::index::sample(rng, n, k) {
        out.extend_from_slice(&points[i * dim..(i + 1) * dim]);
    }
    Ok(out)
}

/// Sum over the points of the squared distance to the nearest centre (in `f64`): the
/// k-means energy of `centroids` on `points`.
pub fn energy(points: &[f32], dim: usize, centroids: &[f32]) -> f64 {
    let norms = sq_norms(centroids, dim);
    points
        .chunks_exact(dim.max(1))
        .map(|x| f64::from(nearest(centroids, &norms, dim, x).1))
        .sum()
}

/// The runs of [`lloyd_restarts`] and the one kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Restarts {
    /// The kept run (its `inertia` is that of its last assignment step).
    pub best: KMeans,
    /// Index of the kept run.
    pub best_run: usize,
    /// [`energy`] of every run's final centres, in run order.
    pub energies: Vec<f64>,
}

/// `restarts` runs of [`lloyd`] from [`random_rows_init`] starts (drawn in turn from
/// `rng`); keeps the run whose final centres have the lowest [`energy`] (ties: the earliest).
pub fn lloyd_restarts(
    points: &[f32],
    dim: usize,
    k: usize,
    restarts: usize,
    max_iter: usize,
    tolerance: f64,
    rng: &mut Rng,
) -> Result<Restarts, DataError> {
    if restarts == 0 {
        return Err(DataError::Param("k-means: restarts must be >= 1".into()));
    }
    if points.iter().any(|v| !v.is_finite()) {
        return Err(DataError::Param("k-means: non-finite input".into()));
    }
    let mut best: Option<(KMeans, usize)> = None;
    let mut energies = Vec::with_capacity(restarts);
    for run in 0..restarts {
        let init = random_rows_init(points, dim, k, rng)?;
        let m = lloyd(points, dim, init, max_iter, tolerance)?;
        let e = energy(points, dim, &m.centroids);
        if best.is_none() || energies.iter().all(|&b| e < b) {
            best = Some((m, run));
        }
        energies.push(e);
    }
    let (best, best_run) = best.expect("restarts >= 1");
    Ok(Restarts {
        best,
        best_run,
        energies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyad_core::seeded;
    use rand_distr::{Distribution, Normal};

    fn blobs(seed: u64) -> (Vec<f32>, Vec<[f32; 2]>) {
        let centres = vec![[0.0f32, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]];
        let mut rng = seeded(seed);
        let noise = Normal::new(0.0f32, 0.5).unwrap();
        let mut pts = Vec::new();
        for i in 0..400 {
            let c = centres[i % 4];
            pts.push(c[0] + noise.sample(&mut rng));
            pts.push(c[1] + noise.sample(&mut rng));
        }
        (pts, centres)
    }

    #[test]
    fn recovers_separated_blobs_deterministically() {
        let (pts, centres) = blobs(1);
        let p = KMeansParams {
            k: 4,
            max_iter: 50,
            tolerance: 0.0,
        };
        let a = kmeans(&pts, 2, p, &mut seeded(5)).unwrap();
        let b = kmeans(&pts, 2, p, &mut seeded(5)).unwrap();
        assert_eq!(a, b);
        for c in &centres {
            let (j, d) = a.nearest(c);
            assert!(d < 0.05, "centre {c:?} -> {j}: {d}");
        }
        // Inertia ~ n * 2 * sigma^2 = 400 * 0.5.
        assert!((150.0..250.0).contains(&a.inertia), "{}", a.inertia);
        assert!(a.iterations < 50);
        let c = kmeans(&pts, 2, p, &mut seeded(6)).unwrap();
        assert!((c.inertia - a.inertia).abs() < 1e-3 * a.inertia);
    }

    #[test]
    fn more_clusters_than_distinct_points_do_not_break() {
        let pts = [1.0f32, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 1.0, 1.0];
        let m = kmeans(
            &pts,
            2,
            KMeansParams {
                k: 4,
                max_iter: 10,
                tolerance: 1e-4,
            },
            &mut seeded(0),
        )
        .unwrap();
        assert!(m.centroids.iter().all(|v| *v == 1.0 || *v == 5.0));
        assert_eq!(m.inertia, 0.0);
        assert_eq!(m.k(), 4);
        assert!(
            kmeans(
                &pts,
                2,
                KMeansParams {
                    k: 6,
                    max_iter: 1,
                    tolerance: 0.0
                },
                &mut seeded(0)
            )
            .is_err()
        );
        assert!(
            kmeans(
                &[f32::NAN, 0.0],
                1,
                KMeansParams {
                    k: 1,
                    max_iter: 1,
                    tolerance: 0.0
                },
                &mut seeded(0)
            )
            .is_err()
        );
    }

    #[test]
    fn empty_clusters_are_reseeded_at_the_farthest_point() {
        // Two identical starting centres: both points go to centre 0 (ties: lowest index),
        // centre 1 is empty and re-seeded at the farthest point (10); centre 0 moves to the
        // mean 5; the next steps settle at {0, 10}.
        let m = lloyd(&[0.0, 10.0], 1, vec![0.0, 0.0], 10, 0.0).unwrap();
        assert_eq!(m.reseeded, 1);
        assert_eq!(m.centroids, vec![0.0, 10.0]);
        assert_eq!(m.inertia, 0.0);
        assert_eq!(m.iterations, 3);
        // Hand-computed first step only.
        let m = lloyd(&[0.0, 10.0], 1, vec![0.0, 0.0], 1, 0.0).unwrap();
        assert_eq!(m.centroids, vec![5.0, 10.0]);
        assert_eq!(m.inertia, 100.0);
        // k-means++ never starts on a point already at distance 0: three distinct centres.
        let m = kmeans(
            &[0.0, 0.0, 0.0, 100.0, 1.0],
            1,
            KMeansParams {
                k: 3,
                max_iter: 20,
                tolerance: 0.0,
            },
            &mut seeded(3),
        )
        .unwrap();
        let mut c = m.centroids.clone();
        c.sort_by(f32::total_cmp);
        assert_eq!(c, vec![0.0, 1.0, 100.0]);
    }

    #[test]
    fn the_result_does_not_depend_on_the_thread_count() {
        // More points than one parallel block, so the assignment really is split.
        let mut rng = seeded(11);
        let (n, dim, k) = (3 * ASSIGN_CHUNK + 17, 5, 7);
        let points: Vec<f32> = (0..n * dim).map(|_| rng.random::<f32>()).collect();
        let fit = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let init = points[..k * dim].to_vec();
            pool.install(|| lloyd(&points, dim, init, 50, 0.0).unwrap())
        };
        let (one, three) = (fit(1), fit(3));
        assert!(one.iterations > 2, "too easy to tell anything");
        assert_eq!(one.centroids, three.centroids);
        assert_eq!(one.inertia.to_bits(), three.inertia.to_bits());
        assert_eq!(one.iterations, three.iterations);
    }

    #[test]
    fn nearest_four_at_a_time_equals_one_at_a_time_bit_for_bit() {
        let mut rng = seeded(5);
        for (dim, k) in [(128, 500), (13, 7), (8, 4), (3, 2), (17, 9)] {
            let centroids: Vec<f32> = (0..k * dim).map(|_| rng.random::<f32>() - 0.5).collect();
            let norms = sq_norms(&centroids, dim);
            for _ in 0..20 {
                let x: Vec<f32> = (0..dim).map(|_| rng.random::<f32>() - 0.5).collect();
                // The reference: one centre at a time through `dot`.
                let mut best = (0, f32::INFINITY);
                for (j, c) in centroids.chunks_exact(dim).enumerate() {
                    let d = norms[j] - 2.0 * dot(&x, c);
                    if d < best.1 {
                        best = (j, d);
                    }
                }
                let want = (best.0, (best.1 + dot(&x, &x)).max(0.0));
                let got = nearest(&centroids, &norms, dim, &x);
                assert_eq!(
                    (got.0, got.1.to_bits()),
                    (want.0, want.1.to_bits()),
                    "dim {dim} k {k}"
                );
            }
            // Ties go to the lowest index, also across blocks of four.
            let mut dup = centroids[..dim].repeat(6);
            dup[..dim].iter_mut().for_each(|v| *v += 10.0);
            let dn = sq_norms(&dup, dim);
            assert_eq!(nearest(&dup, &dn, dim, &centroids[..dim]).0, 1);
        }
    }

    #[test]
    fn dot_and_distance_match_naive_sums() {
        let a: Vec<f32> = (0..79).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..79).map(|i| (i as f32 * 0.11).cos()).collect();
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
        assert!((f64::from(dot(&a, &b)) - naive).abs() < 1e-4);
        let naive: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from((x - y) * (x - y)))
            .sum();
        assert!((f64::from(sq_dist(&a, &b)) - naive).abs() < 1e-4);
        let norms = sq_norms(&[a.clone(), b.clone()].concat(), 79);
        let (j, d) = nearest(&[a.clone(), b.clone()].concat(), &norms, 79, &b);
        assert_eq!(j, 1);
        assert!(d.abs() < 1e-4);
    }
    #[test]
    fn restarts_keep_the_lowest_energy_and_are_deterministic() {
        // Three separated blobs of unequal spread; k = 3 from random points sometimes puts
        // two starts in one blob and ends in a worse local minimum.
        let mut rng = seeded(4);
        let noise = Normal::new(0.0f32, 1.0).unwrap();
        let mut pts = Vec::new();
        for (c, n, sd) in [
            ([0.0f32, 0.0], 150, 1.0f32),
            ([30.0, 0.0], 20, 0.3),
            ([0.0, 30.0], 20, 0.3),
        ] {
            for _ in 0..n {
                pts.push(c[0] + sd * noise.sample(&mut rng));
                pts.push(c[1] + sd * noise.sample(&mut rng));
            }
        }
        let r = lloyd_restarts(&pts, 2, 3, 12, 50, 0.0, &mut seeded(1)).unwrap();
        assert_eq!(r.energies.len(), 12);
        let min = r.energies.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(r.energies[r.best_run], min);
        assert_eq!(r.energies.iter().position(|&e| e == min), Some(r.best_run));
        assert!((energy(&pts, 2, &r.best.centroids) - min).abs() < 1e-9 * min.max(1.0));
        // The runs differ (some end in a local minimum) and the kept one is the global one:
        // one centre per blob.
        let max = r.energies.iter().cloned().fold(0.0, f64::max);
        assert!(max > 2.0 * min, "{:?}", r.energies);
        for c in [[0.0f32, 0.0], [30.0, 0.0], [0.0, 30.0]] {
            assert!(r.best.nearest(&c).1 < 1.0);
        }
        // Same seed, same result; one run = the first run of more.
        assert_eq!(
            r,
            lloyd_restarts(&pts, 2, 3, 12, 50, 0.0, &mut seeded(1)).unwrap()
        );
        let one = lloyd_restarts(&pts, 2, 3, 1, 50, 0.0, &mut seeded(1)).unwrap();
        assert_eq!(one.energies[0], r.energies[0]);
        // Random-row starts are k distinct rows.
        let init = random_rows_init(&pts, 2, 190, &mut seeded(2)).unwrap();
        let mut rows: Vec<(u32, u32)> = init
            .chunks_exact(2)
            .map(|p| (p[0].to_bits(), p[1].to_bits()))
            .collect();
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), 190);
        assert!(random_rows_init(&pts, 2, 191, &mut seeded(2)).is_err());
        assert!(lloyd_restarts(&pts, 2, 3, 0, 50, 0.0, &mut seeded(1)).is_err());
    }
}
