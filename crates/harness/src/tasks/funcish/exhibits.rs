//! What a `gene-function` cell shows beside its numbers (funcish.md §2.11, §2.13, §5):
//!
//! * **Table 1**: the 15 categories of best held-out AUC, with their sizes (the paper's are
//!   all small: their AUCs are high-variance, and so are ours).
//! * **Table 2**: two gene pairs and the five categories contributing most to their flat-sim
//!   (`â_i b̂_i`, spec §7 item 12 [A]). The paper picked Synpo2 with Npepps and Rasa4 by
//!   hand; here the query gene and its two partners are chosen by a rule: among the first
//!   300 genes, the gene whose two of ten nearest genes (flat-sim, first images) share the
//!   fewest of their top-5 explanations, ties by the larger summed similarity — two
//!   similarities "of different types", as the paper's example shows.
//! * **Fig. 5A–D**: the three words of largest mean absolute weight over the categories at
//!   each scale, drawn as SIFT glyphs (4 × 4 red cells, eight gradient-orientation strokes
//!   per cell, lengths ∝ the centroid's histogram).
//! * **Fig. 6**: one image with the descriptors of two categories' top-20 words (largest
//!   positive weights) drawn as squares of their footprint, coloured by weight rank (bright
//!   yellow: the largest), and Welch's t-test of the footprints (36, 72, 144, 288 µm at the
//!   four scales) of the two categories' occurrences (§2.11 [A]). The paper showed Add2 with
//!   two of its categories; here the image and pair are chosen by a rule that needs no
//!   planted truth: the image whose gene carries two significantly predicted categories
//!   (permutation p < 0.05) whose top words' mean footprints differ most.
//! * **Fig. S2**: BoW cosine of the image pairs of one gene (second series) against a random
//!   sample of pairs of different genes: histograms, medians and the rank-sum p (§2.13).
//! * **§8.6 shape checks** (stand-in only, they need the planted programmes): the mean AUC of
//!   the categories that carry a programme and of those that do not (their signal comes only
//!   through relatives in the DAG and shared genes); the fraction of programme-carrying
//!   categories whose largest standardised weight (`|w_j| · sd_j`, so that the fine scales'
//!   many descriptors do not dominate by count) falls on the planted scale; chance is 1/4.

use super::raster::{Canvas, GRID_RED, INK, WHITE, heat};
use super::{Features, VisualConfig};
use crate::cache::{Artifact, Coord, Record};
use dyad_core::seeded;
use dyad_datasets::ish::IshSet;
use dyad_datasets::ish::standin::IshTruth;
use dyad_datasets::pipelines::dsift::{as_cells, multiscale_dsift};
use dyad_funcish::classify::NestedCvResult;
use dyad_funcish::similarity::{cosine, flat_explain};
use rand::Rng as _;

/// Descriptor footprint at the finest scale in µm (§2.11: 36, 72, 144, 288 µm).
const FOOTPRINT_UM: f64 = 36.0;
/// Top words per category drawn in Fig. 6 and tested (§2.11 [A]: 20).
const TOP_WORDS: usize = 20;
/// Fig. S2 similarity bins over [0, 1].
const SIM_BINS: usize = 20;

pub(super) struct Exhibits<'a> {
    pub set: &'a IshSet,
    pub truth: Option<&'a IshTruth>,
    pub feats: &'a Features,
    pub visual: &'a VisualConfig,
    pub r: &'a NestedCvResult,
    pub seconds: f64,
}

pub(super) fn record(
    set: &str,
    metric: &str,
    coord: Option<(&str, f64)>,
    value: f64,
    seconds: f64,
) -> Record {
    Record {
        set: set.to_string(),
        metric: metric.to_string(),
        step: 0,
        seconds,
        k: None,
        coord: coord.map(|(n, v)| Coord {
            name: n.to_string(),
            value: v,
        }),
        value,
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

impl Exhibits<'_> {
    fn rec(&self, set: &str, metric: &str, coord: Option<(&str, f64)>, value: f64) -> Record {
        record(set, metric, coord, value, self.seconds)
    }

    /// The flat bag's layout `L·K + L`, when the features are flat bags.
    fn flat_layout(&self) -> Option<(usize, usize)> {
        let (l, k) = (
            self.feats.dictionaries.num_levels(),
            self.feats.dictionaries.k(),
        );
        (self.visual.pyramid.is_none() && self.r.weights.ncols() == l * k + l).then_some((l, k))
    }

    /// Table 1.
    pub fn top_categories(&self, n: usize) -> Artifact {
        let mut idx: Vec<(usize, f64)> = self
            .r
            .categories
            .iter()
            .enumerate()
            .filter_map(|(c, res)| res.mean_auc.map(|a| (c, a)))
            .collect();
        idx.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let rows = idx
            .iter()
            .take(n)
            .map(|&(c, auc)| {
                let cat = &self.set.categories[c];
                let term = &self.set.terms[cat.term as usize];
                let res = &self.r.categories[c];
                vec![
                    term.id.clone(),
                    term.name.clone(),
                    cat.genes.len().to_string(),
                    format!("{auc:.2}"),
                    res.p_value.map_or("—".into(), |p| format!("{p:.3}")),
                    if cat.neural { "yes" } else { "" }.to_string(),
                ]
            })
            .collect();
        Artifact::table(
            "table-1",
            format!("Table 1: the {n} GO categories of best held-out AUC"),
            &[
                "GO ID",
                "category",
                "genes",
                "AUC",
                "permutation p",
                "neural",
            ],
            rows,
        )
    }

    /// Table 2 (rule in the module docs); `None` with fewer than three genes.
    pub fn explanations(&self) -> Option<Artifact> {
        let p = &self.r.probabilities;
        let n_genes = self.set.genes.len();
        let mut first = vec![usize::MAX; n_genes];
        for (i, &g) in self.set.image_gene.iter().enumerate() {
            if first[g as usize] == usize::MAX {
                first[g as usize] = i;
            }
        }
        let genes: Vec<usize> = (0..n_genes).filter(|&g| first[g] != usize::MAX).collect();
        if genes.len() < 3 || p.ncols() == 0 {
            return None;
        }
        // Rows of the standard-layout probabilities: slices, no copy per comparison.
        let row = |g: usize| p.row(first[g]).to_slice().expect("contiguous rows");
        let top5 = |a: &[f64], b: &[f64]| -> Vec<usize> {
            flat_explain(a, b, 5).into_iter().map(|(c, _)| c).collect()
        };
        let mut best: Option<(usize, f64, usize, usize, usize)> = None;
        for &a in genes.iter().take(300) {
            let ra = row(a);
            let mut near: Vec<(usize, f64)> = genes
                .iter()
                .filter(|&&g| g != a)
                .map(|&g| (g, cosine(ra, row(g))))
                .collect();
            near.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
            near.truncate(10);
            let expl: Vec<Vec<usize>> = near.iter().map(|&(g, _)| top5(ra, row(g))).collect();
            for i in 0..near.len() {
                for j in i + 1..near.len() {
                    let shared = expl[i].iter().filter(|c| expl[j].contains(c)).count();
                    let sim = near[i].1 + near[j].1;
                    let better =
                        best.is_none_or(|(s, v, ..)| shared < s || (shared == s && sim > v));
                    if better {
                        best = Some((shared, sim, a, near[i].0, near[j].0));
                    }
                }
            }
        }
        let (_, _, a, b1, b2) = best?;
        let (ra, r1, r2) = (row(a), row(b1), row(b2));
        let e1 = flat_explain(ra, r1, 5);
        let e2 = flat_explain(ra, r2, 5);
        let term = |c: usize| &self.set.terms[self.set.categories[c].term as usize];
        let rows = e1
            .iter()
            .zip(&e2)
            .map(|(&(c1, v1), &(c2, v2))| {
                vec![
                    term(c1).id.clone(),
                    term(c1).name.clone(),
                    format!("{v1:.3}"),
                    term(c2).id.clone(),
                    term(c2).name.clone(),
                    format!("{v2:.3}"),
                ]
            })
            .collect();
        let name = |g: usize| self.set.genes[g].clone();
        Some(Artifact::table(
            "table-2",
            format!(
                "Table 2: the five GO categories explaining the flat-sim of {} with {} ({:.3}, left) and with {} ({:.3}, right)",
                name(a),
                name(b1),
                cosine(ra, r1),
                name(b2),
                cosine(ra, r2)
            ),
            &[
                &format!("{}–{} GO ID", name(a), name(b1)),
                "category",
                "â_i b̂_i",
                &format!("{}–{} GO ID", name(a), name(b2)),
                "category",
                "â_i b̂_i",
            ],
            rows,
        ))
    }

    /// Fig. S2's records: same-gene and different-gene BoW cosines.
    pub fn same_gene(&self, pairs: usize, seed: u64, out: &mut Vec<Record>) {
        let bow = &self.feats.bow;
        let n = bow.nrows();
        let mut by_gene: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, &g) in self.set.image_gene.iter().enumerate() {
            by_gene.entry(g).or_default().push(i);
        }
        let mut same = Vec::new();
        for imgs in by_gene.values().filter(|v| v.len() > 1) {
            for (x, &i) in imgs.iter().enumerate() {
                for &j in &imgs[x + 1..] {
                    same.push(cosine(
                        bow.row(i).as_slice().expect("contiguous"),
                        bow.row(j).as_slice().expect("contiguous"),
                    ));
                }
            }
        }
        let mut rng = seeded(seed);
        let mut different = Vec::with_capacity(pairs);
        let distinct = by_gene.len() > 1;
        while distinct && different.len() < pairs {
            let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
            if self.set.image_gene[i] != self.set.image_gene[j] {
                different.push(cosine(
                    bow.row(i).as_slice().expect("contiguous"),
                    bow.row(j).as_slice().expect("contiguous"),
                ));
            }
        }
        out.push(self.rec("test", "same_gene_pairs", None, same.len() as f64));
        if same.is_empty() || different.is_empty() {
            return;
        }
        if let Some(t) = dyad_core::auc::mann_whitney(&same, &different) {
            out.push(self.rec("test", "same_vs_different_log10_p", None, t.log10_p));
            out.push(self.rec("test", "same_vs_different_auc", None, t.auc));
        }
        for (set, v) in [("same-gene", &mut same), ("different-gene", &mut different)] {
            let mut counts = [0usize; SIM_BINS];
            for &s in v.iter() {
                counts[((s.clamp(0.0, 1.0) * SIM_BINS as f64) as usize).min(SIM_BINS - 1)] += 1;
            }
            for (b, &k) in counts.iter().enumerate() {
                let centre = (b as f64 + 0.5) / SIM_BINS as f64;
                out.push(self.rec(
                    set,
                    "similarity_density",
                    Some(("similarity", centre)),
                    k as f64 / v.len() as f64,
                ));
            }
            let m = median(v);
            out.push(self.rec(
                "test",
                &format!("{}_median_similarity", set.replace('-', "_")),
                None,
                m,
            ));
        }
    }

    /// Standardised importance `|w_cj| · sd_j` of every category and feature.
    fn standardised(&self) -> ndarray::Array2<f64> {
        let x = &self.feats.bow;
        let n = x.nrows().max(2) as f64;
        let sd: Vec<f64> = x
            .columns()
            .into_iter()
            .map(|c| {
                let m = c.sum() / n;
                (c.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0)).sqrt()
            })
            .collect();
        let mut w = self.r.weights.mapv(f64::abs);
        for mut row in w.rows_mut() {
            for (v, s) in row.iter_mut().zip(&sd) {
                *v *= s;
            }
        }
        w
    }

    /// §8.6 shape checks: categories with a planted programme are predicted above those
    /// without, and weight the scale of their programme.
    pub fn planted_scale(&self, out: &mut Vec<Record>) {
        let Some(truth) = self.truth else {
            return;
        };
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for (c, res) in self.r.categories.iter().enumerate() {
            if let Some(a) = res.mean_auc {
                match truth.programs.get(c) {
                    Some(Some(_)) => with.push(a),
                    _ => without.push(a),
                }
            }
        }
        if !with.is_empty() {
            out.push(self.rec("test", "programme_mean_auc", None, super::mean(&with)));
        }
        if !without.is_empty() {
            out.push(self.rec("test", "no_programme_mean_auc", None, super::mean(&without)));
        }
        let Some((levels, k)) = self.flat_layout() else {
            return;
        };
        let w = self.standardised();
        // (planted scale, scale of the largest standardised weight, the finest scale's share of
        // the standardised weight) of every programme-carrying category with an AUC.
        let mut pairs: Vec<(usize, usize, f64)> = Vec::new();
        for (c, res) in self.r.categories.iter().enumerate() {
            let Some(Some(prog)) = truth.programs.get(c) else {
                continue;
            };
            if res.mean_auc.is_none() {
                continue;
            }
            let row = w.row(c);
            let sums: Vec<f64> = (0..levels)
                .map(|l| row.slice(ndarray::s![l * k..(l + 1) * k]).sum())
                .collect();
            let best = (0..levels)
                .max_by(|&a, &b| sums[a].total_cmp(&sums[b]))
                .unwrap_or(0);
            let total: f64 = sums.iter().sum();
            let finest = if total > 0.0 { sums[0] / total } else { 0.0 };
            pairs.push((prog.scale as usize, best, finest));
        }
        if pairs.is_empty() {
            return;
        }
        let n = pairs.len() as f64;
        let hit = pairs.iter().filter(|(p, b, _)| p == b).count();
        out.push(self.rec("test", "planted_scale_match", None, hit as f64 / n));
        out.push(self.rec("test", "planted_scale_categories", None, n));
        // Where the programmes were planted and where their categories' weight lies, per scale
        // (the planted ones may include scales the features lack): a failed check shows
        // whether the classifier favours one scale whatever was planted.
        let scales = pairs.iter().map(|p| p.0 + 1).max().unwrap_or(0).max(levels);
        // The spec's reading (§8.6: "small-cell terms weight the finest scale"): the finest
        // scale's share of the weight, by planted scale, and its mean over the programmes
        // planted at the finest scale minus over those at the coarsest planted one.
        let mut finest_by_scale = Vec::new();
        for l in 0..scales {
            let scale = Some(("scale", (1usize << l) as f64));
            let planted = pairs.iter().filter(|p| p.0 == l).count() as f64 / n;
            out.push(self.rec("planted", "scale_share", scale, planted));
            if l < levels {
                let weighted = pairs.iter().filter(|p| p.1 == l).count() as f64 / n;
                out.push(self.rec("weighted", "scale_share", scale, weighted));
            }
            let here: Vec<f64> = pairs.iter().filter(|p| p.0 == l).map(|p| p.2).collect();
            if !here.is_empty() {
                let m = super::mean(&here);
                out.push(self.rec("planted", "finest_weight_share", scale, m));
                finest_by_scale.push(m);
            }
        }
        if pairs.iter().any(|p| p.0 == 0) && finest_by_scale.len() > 1 {
            let gap = finest_by_scale[0] - finest_by_scale[finest_by_scale.len() - 1];
            out.push(self.rec("test", "finest_share_gap", None, gap));
        }
    }

    /// Fig. 5A–D: a picture of the top-3 words of each scale.
    pub fn word_glyphs(&self) -> Option<Artifact> {
        let (levels, k) = self.flat_layout()?;
        let w = &self.r.weights;
        if w.nrows() == 0 {
            return None;
        }
        let mean_abs: Vec<f64> = (0..levels * k)
            .map(|j| w.column(j).iter().map(|x| x.abs()).sum::<f64>() / w.nrows() as f64)
            .collect();
        const CELL: usize = 40;
        const PAD: usize = 24;
        let side = 4 * CELL;
        let (cols, rows) = (3usize, levels);
        let mut canvas = Canvas::new(PAD + cols * (side + PAD), PAD + rows * (side + PAD), WHITE);
        let mut caption = Vec::new();
        for l in 0..levels {
            let mut words: Vec<usize> = (0..k).collect();
            words.sort_by(|&a, &b| mean_abs[l * k + b].total_cmp(&mean_abs[l * k + a]));
            let top: Vec<usize> = words.into_iter().take(cols).collect();
            caption.push(format!(
                "row {} (scale ×{}, {} µm): words {}",
                l + 1,
                1 << l,
                FOOTPRINT_UM as usize * (1 << l),
                top.iter()
                    .map(|&t| format!("{t} (mean |w| {:.3})", mean_abs[l * k + t]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            for (col, &word) in top.iter().enumerate() {
                let centroid = self.feats.dictionaries.centroid(l, word)?;
                let cells = as_cells(centroid).ok()?;
                let peak = cells.iter().copied().fold(0f32, f32::max).max(1e-12);
                let (x0, y0) = (PAD + col * (side + PAD), PAD + l * (side + PAD));
                for i in 0..=4 {
                    let o = (i * CELL) as f64;
                    let (fx, fy) = (x0 as f64, y0 as f64);
                    canvas.line((fx + o, fy), (fx + o, fy + side as f64), GRID_RED, 1);
                    canvas.line((fx, fy + o), (fx + side as f64, fy + o), GRID_RED, 1);
                }
                for r in 0..4 {
                    for c in 0..4 {
                        let cx = (x0 + c * CELL) as f64 + CELL as f64 / 2.0;
                        let cy = (y0 + r * CELL) as f64 + CELL as f64 / 2.0;
                        for o in 0..8 {
                            let len =
                                f64::from(cells[[r, c, o]] / peak) * (CELL as f64 / 2.0 - 2.0);
                            let a = o as f64 * std::f64::consts::FRAC_PI_4;
                            canvas.line((cx, cy), (cx + len * a.cos(), cy - len * a.sin()), INK, 2);
                        }
                    }
                }
            }
        }
        let png = canvas.png().ok()?;
        Some(Artifact::picture(
            "fig-5",
            format!(
                "Fig. 5A–D: the three visual words of largest mean |weight| over the categories at each scale, as SIFT glyphs (4 × 4 cells, eight orientation strokes per cell, length ∝ the word's gradient histogram); {}",
                caption.join("; ")
            ),
            &png,
        ))
    }

    /// Fig. 6: the overlay picture and Welch's test of the two categories' footprints.
    pub fn overlay(&self, out: &mut Vec<Record>) -> Result<Option<Artifact>, String> {
        let Some((levels, k)) = self.flat_layout() else {
            return Ok(None);
        };
        let w = &self.r.weights;
        // Each category's top words (largest positive weights) and their mean footprint.
        let top: Vec<Vec<(usize, f64)>> = (0..w.nrows())
            .map(|c| {
                let mut j: Vec<usize> = (0..levels * k).filter(|&j| w[[c, j]] > 0.0).collect();
                j.sort_by(|&a, &b| w[[c, b]].total_cmp(&w[[c, a]]).then(a.cmp(&b)));
                j.into_iter()
                    .take(TOP_WORDS)
                    .map(|j| (j, w[[c, j]]))
                    .collect()
            })
            .collect();
        let footprint = |j: usize| FOOTPRINT_UM * f64::from(1u32 << (j / k));
        let mean_fp: Vec<Option<f64>> = top
            .iter()
            .map(|t| {
                (!t.is_empty())
                    .then(|| t.iter().map(|&(j, _)| footprint(j)).sum::<f64>() / t.len() as f64)
            })
            .collect();
        // Categories predicted significantly (any with an AUC when none is).
        let significant = |c: usize| self.r.categories[c].p_value.is_some_and(|p| p < 0.05);
        let any_significant = (0..w.nrows()).any(significant);
        let usable = |c: usize| {
            self.r.categories[c].mean_auc.is_some()
                && mean_fp[c].is_some()
                && (significant(c) || !any_significant)
        };
        let mut cats_of: Vec<Vec<usize>> = vec![Vec::new(); self.set.genes.len()];
        for (c, cat) in self.set.categories.iter().enumerate() {
            if usable(c) {
                for &g in &cat.genes {
                    cats_of[g as usize].push(c);
                }
            }
        }
        // The image (first of its gene) and pair of most different footprints.
        let mut best: Option<(f64, usize, usize, usize)> = None;
        let mut seen = vec![false; self.set.genes.len()];
        for (i, &g) in self.set.image_gene.iter().enumerate() {
            if std::mem::replace(&mut seen[g as usize], true) {
                continue;
            }
            let cs = &cats_of[g as usize];
            for (x, &a) in cs.iter().enumerate() {
                for &b in &cs[x + 1..] {
                    let d = (mean_fp[a].unwrap_or(0.0) - mean_fp[b].unwrap_or(0.0)).abs();
                    if best.is_none_or(|(bd, ..)| d > bd) {
                        let (big, small) = if mean_fp[a] >= mean_fp[b] {
                            (a, b)
                        } else {
                            (b, a)
                        };
                        best = Some((d, i, big, small));
                    }
                }
            }
        }
        let Some((_, image, big, small)) = best else {
            return Ok(None);
        };
        let img = self.set.image(image).map_err(|e| e.to_string())?;
        let desc = multiscale_dsift(img.view(), &self.visual.dsift).map_err(|e| e.to_string())?;
        let assigned: Vec<Vec<u32>> = desc
            .iter()
            .map(|lv| {
                self.feats
                    .dictionaries
                    .assign(lv)
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        let (h, wd) = img.dim();
        let scale = (1024 / wd.max(1)).max(1);
        let (pw, ph) = (wd * scale, h * scale);
        let gap = 16;
        let mut canvas = Canvas::new(pw, 2 * ph + gap, WHITE);
        let mut sizes: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for (panel, &c) in [big, small].iter().enumerate() {
            let y0 = panel * (ph + gap);
            canvas.gray(img.view(), 0, y0, scale);
            let rank: std::collections::HashMap<usize, usize> = top[c]
                .iter()
                .enumerate()
                .map(|(r, &(j, _))| (j, r))
                .collect();
            // Weakest first, so the brightest squares are drawn on top.
            let mut marks = Vec::new();
            for (lv, words) in desc.iter().zip(&assigned) {
                for (d, &word) in words.iter().enumerate() {
                    let j = lv.level * k + word as usize;
                    if let Some(&r) = rank.get(&j) {
                        let (x, y) = lv.original_position(lv.grid_index[d] as usize);
                        let side = (4 * lv.bin * lv.factor()) as f64;
                        marks.push((r, x as f64, y as f64, side));
                        sizes[panel].push(footprint(j));
                    }
                }
            }
            marks.sort_by_key(|m| std::cmp::Reverse(m.0));
            let n = top[c].len().max(2) - 1;
            for (r, x, y, side) in marks {
                let t = 1.0 - r as f64 / n as f64;
                canvas.square(
                    (x * scale as f64, y0 as f64 + y * scale as f64),
                    side * scale as f64,
                    heat(t),
                    2,
                );
            }
        }
        if let Some(t) = dyad_core::auc::welch_t(&sizes[0], &sizes[1]) {
            out.push(self.rec("test", "overlay_size_t", None, t.t));
            out.push(self.rec("test", "overlay_size_log10_p", None, t.log10_p));
        }
        let label = |c: usize| {
            let term = &self.set.terms[self.set.categories[c].term as usize];
            let planted = self
                .truth
                .and_then(|t| t.programs.get(c).cloned().flatten())
                .map_or(String::new(), |p| {
                    format!(", planted programme at scale ×{}", 1 << p.scale)
                });
            format!(
                "{} {} (AUC {:.2}, {} occurrences, mean footprint {:.0} µm{planted})",
                term.id,
                term.name,
                self.r.categories[c].mean_auc.unwrap_or(f64::NAN),
                sizes[(c != big) as usize].len(),
                {
                    let s = &sizes[(c != big) as usize];
                    s.iter().sum::<f64>() / s.len().max(1) as f64
                }
            )
        };
        let png = canvas.png()?;
        Ok(Some(Artifact::picture(
            "fig-6",
            format!(
                "Fig. 6: image of {} with the descriptors of each category's top-{TOP_WORDS} words (squares of their footprint; bright yellow = largest weight), top: {}, bottom: {}",
                self.set.genes[self.set.image_gene[image] as usize],
                label(big),
                label(small)
            ),
            &png,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_lengths() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
