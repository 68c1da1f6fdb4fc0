//! The FuncISH stand-in (funcish.md §8): genes with GO categories, one synthetic
//! expression-masked ISH image per gene (two for a few), relation sets, all from a seed.
//!
//! # Ontology and genes (§8 items 1–2)
//!
//! * **Real GO** (provider `gene-ontology`): the installed Gene Ontology and the human gene
//!   annotations (see [`crate::go`]); `genes` genes are drawn uniformly from the genes with at
//!   least one biological-process annotation and keep their real, propagated annotations and
//!   symbols. Categories, DAG and information content are therefore real; the images are not.
//! * **Random DAG** (provider `go-random`, when GO is not installed): `random_terms` terms on
//!   7 levels, each non-root term with 1–3 `is_a` parents on earlier levels; a "neural"
//!   subtree (a level-1 term and ~8 % of the terms, whose parents stay inside it); each gene
//!   draws 1–6 terms with Zipf-like popularity (`1/(rank + 1)^0.8` over a random order of the
//!   terms below level 1), propagated to their ancestors.
//! * **Categories**: terms (not the root) with `min_category ..= max_category` genes; the
//!   upper bound defaults to `max(round(500 · genes / 15,612), 3 · min_category)`: the paper's
//!   500 scaled to the gene count (§8 item 2) but never so small that no category fits.
//!   Neural categories descend from [`crate::go::NEURAL_ROOTS`] (real) or the neural subtree.
//!
//! # Images (§8 item 3)
//!
//! Each category owns a texture **program** with probability `signal_neural` (neural) or
//! `signal_other`: a blob radius at one of the four SIFT scales (`1.5, 3, 6, 12` px at a
//! height of 512, scaled with the height, at least 0.75 px), an amplitude `U(0.4, 1)` (times
//! `neural_gain` for neural categories, capped at 1), a coverage (`coverage · U(0.5, 1.5)` of
//! the brain area), an optional band (probability 0.3: blobs only within ±0.1·H of a row drawn
//! per image), and with probability 0.25 a diffuse expression extent `U(0.1, 0.3)` (the
//! fraction of the brain covered by faint expression: it makes the zero-descriptor counts
//! informative, the paper's surprising finding). An image superimposes, at **random places**
//! drawn per image, the programs of its gene's categories (each with probability
//! `penetrance`, 0.35, or `penetrance_neural`, 0.8, drawn once per gene: an image shows a
//! gene's functions only in part; with every programme shown the quick profile's mean
//! held-out AUC was 0.79 against the paper's 0.63): Gaussian blobs
//! `a · U(0.7, 1) · exp(−d²/2r²)`, summed and clipped at 1; Gaussian noise of `noise` on
//! expressed pixels only; everything outside the elliptical brain (semi-axes 0.46·H, 0.47·W)
//! is exactly 0, as in ABA's expression-masked images. A second image series (`second_series`
//! of the genes) redraws the places and scales the radii by `U(0.9, 1.1)` (§8 item 5).
//!
//! Every gene also has a **private pattern** (a program of its own: any scale, amplitude
//! `U(0.3, 0.8)`), as every real gene has an expression pattern beside its functions; it keeps
//! the categories' signal from being the only thing in the image.
//!
//! **No-expression images** (§2.1 step 3): `no_expression / (1 − no_expression)` extra
//! images per kept one (the paper's 4,823 of 21,174) are rendered for further genes with only
//! faint specks (intensity 0.03), and every rendered image passes the filter
//! [`has_expression`] (at least 0.1 % of the brain at intensity ≥ 0.05): those failing are
//! dropped and counted, with their genes.
//!
//! # Relations (§8 item 4)
//!
//! * **Cell-type markers**: three program-owning categories (neural first, then the largest)
//!   are the latent cell types; genes sharing one are related.
//! * **Pathways**: `pathways` groups, each seeded by a program-owning category: each of its
//!   genes joins with probability 0.6, plus random genes (a quarter of the group's size).
//! * **PPIs**: each gene draws `Poisson(ppi_per_gene / 2)` partners, 70 % from a random
//!   category of its own, 30 % uniformly; the relation is symmetric.
//!
//! Rendering is a pure function of the seed and the image index: images are drawn on demand
//! ([`Renderer::render`]) and never stored.

use super::{ImageSource, IshSet, Labels, Relations, label_genes, term_names, tidy};
use crate::DataError;
use crate::go::{Annotations, GoData};
use dyad_core::{Rng, derive_seed, seeded};
use ndarray::Array2;
use rand::Rng as _;
use rand::seq::{IndexedRandom, SliceRandom};
use rand_distr::{Distribution, Poisson, StandardNormal};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Version of the generator (part of the provider's identity).
pub const STANDIN_VERSION: u32 = 2;

/// The stand-in's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IshStandinConfig {
    /// Genes with at least one expressed image.
    #[serde(default = "d_genes")]
    pub genes: usize,
    #[serde(default = "d_height")]
    pub height: usize,
    #[serde(default = "d_width")]
    pub width: usize,
    #[serde(default = "d_min")]
    pub min_category: usize,
    /// Default: `max(round(500 · genes / 15,612), 3 · min_category)`.
    #[serde(default)]
    pub max_category: Option<usize>,
    /// The ontology: the installed Gene Ontology when there is one (else the random DAG), or
    /// always the random DAG.
    #[serde(default)]
    pub ontology: OntologyChoice,
    /// Terms of the random DAG (used when GO is not installed).
    #[serde(default = "d_terms")]
    pub random_terms: usize,
    #[serde(default = "d_second")]
    pub second_series: f64,
    #[serde(default = "d_noexpr")]
    pub no_expression: f64,
    #[serde(default = "d_sig_neural")]
    pub signal_neural: f64,
    #[serde(default = "d_sig_other")]
    pub signal_other: f64,
    #[serde(default = "d_gain")]
    pub neural_gain: f64,
    /// Mean fraction of the brain one program's blobs cover.
    #[serde(default = "d_coverage")]
    pub coverage: f64,
    #[serde(default = "d_noise")]
    pub noise: f64,
    /// Probability that a gene's image shows the programme of one of its categories (drawn
    /// per gene and category, shared by its series): ISH images show a gene's functions only
    /// in part.
    #[serde(default = "d_penetrance")]
    pub penetrance: f64,
    /// The same for the nervous-system categories (higher: spec §8 item 3's stronger neural
    /// signal).
    #[serde(default = "d_penetrance_neural")]
    pub penetrance_neural: f64,
    #[serde(default = "d_pathways")]
    pub pathways: usize,
    #[serde(default = "d_ppi")]
    pub ppi_per_gene: f64,
    #[serde(default)]
    pub seed: u64,
}

fn d_genes() -> usize {
    1500
}
fn d_height() -> usize {
    512
}
fn d_width() -> usize {
    1024
}
fn d_min() -> usize {
    15
}
fn d_terms() -> usize {
    400
}
fn d_second() -> f64 {
    0.05
}
fn d_noexpr() -> f64 {
    0.23
}
fn d_sig_neural() -> f64 {
    0.9
}
fn d_sig_other() -> f64 {
    0.5
}
fn d_gain() -> f64 {
    1.5
}
fn d_coverage() -> f64 {
    0.04
}
fn d_noise() -> f64 {
    0.02
}
fn d_penetrance() -> f64 {
    0.35
}
fn d_penetrance_neural() -> f64 {
    0.8
}
fn d_pathways() -> usize {
    50
}
fn d_ppi() -> f64 {
    3.0
}

impl Default for IshStandinConfig {
    fn default() -> Self {
        serde_json::from_value(serde_json::json!({})).expect("defaults")
    }
}

impl IshStandinConfig {
    pub fn validate(&self) -> Result<(), String> {
        let frac = |name: &str, v: f64, hi_open: bool| {
            let ok = v.is_finite() && v >= 0.0 && if hi_open { v < 1.0 } else { v <= 1.0 };
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "`{name}` must be in [0, 1{}; got {v}",
                    if hi_open { ")" } else { "]" }
                ))
            }
        };
        if self.genes < 20 {
            return Err(format!("`genes` must be at least 20; got {}", self.genes));
        }
        if self.height < 32 || self.width < 32 {
            return Err(format!(
                "images must be at least 32 x 32; got {} x {}",
                self.height, self.width
            ));
        }
        if self.height * self.width > 64 << 20 {
            return Err(format!(
                "images of {} x {} pixels are larger than the 8192 x 8192 this stand-in draws",
                self.height, self.width
            ));
        }
        if self.min_category < 2 {
            return Err("`min_category` must be at least 2".into());
        }
        if self.max_category.is_some_and(|m| m < self.min_category) {
            return Err("`max_category` is below `min_category`".into());
        }
        if self.random_terms < 20 {
            return Err("`random_terms` must be at least 20".into());
        }
        frac("second_series", self.second_series, false)?;
        frac("no_expression", self.no_expression, true)?;
        frac("signal_neural", self.signal_neural, false)?;
        frac("signal_other", self.signal_other, false)?;
        frac("coverage", self.coverage, false)?;
        frac("penetrance", self.penetrance, false)?;
        frac("penetrance_neural", self.penetrance_neural, false)?;
        for (name, v) in [
            ("neural_gain", self.neural_gain),
            ("noise", self.noise),
            ("ppi_per_gene", self.ppi_per_gene),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("`{name}` must be finite and non-negative; got {v}"));
            }
        }
        Ok(())
    }

    /// The category size bounds in effect.
    pub fn category_bounds(&self) -> (usize, usize) {
        let scaled = (500.0 * self.genes as f64 / 15_612.0).round() as usize;
        (
            self.min_category,
            self.max_category
                .unwrap_or(scaled.max(3 * self.min_category)),
        )
    }
}

/// Which ontology the stand-in labels its genes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OntologyChoice {
    /// The real Gene Ontology if installed (provider `gene-ontology`), else `go-random`.
    #[default]
    Installed,
    /// Always the random DAG (`go-random`).
    Random,
}

/// A category's texture program (the planted truth).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// Which of the four scales (0 = finest).
    pub scale: u8,
    /// Blob radius in pixels at this image size.
    pub radius: f64,
    pub amplitude: f64,
    pub coverage: f64,
    pub banded: bool,
    /// Fraction of the brain with faint diffuse expression (0: none).
    pub extent: f64,
}

/// What the generator planted: each category's program (if any) and the latent cell types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IshTruth {
    pub programs: Vec<Option<Program>>,
    /// Categories standing for the cell types of the marker relation.
    pub cell_types: Vec<usize>,
}

/// Draws image `i` on demand.
pub struct Renderer {
    height: usize,
    width: usize,
    noise: f64,
    seed: u64,
    programs: Vec<Option<Program>>,
    /// Per image: the programs (category indices) it shows, its second-series flag, and
    /// whether it is a no-expression image.
    images: Vec<ImagePlan>,
}

#[derive(Clone)]
struct ImagePlan {
    categories: Vec<u32>,
    /// The gene's own expression pattern, beside its categories' programs.
    private: Option<Program>,
    series: u8,
    blank: bool,
    /// The image's index among all rendered images (its seed), kept through the filter.
    index: usize,
}

const RADII: [f64; 4] = [1.5, 3.0, 6.0, 12.0];

/// The no-expression filter: at least 0.1 % of the brain (ellipse) at intensity ≥ 0.05.
pub fn has_expression(img: &Array2<f32>) -> bool {
    let (h, w) = img.dim();
    let brain = std::f64::consts::PI * 0.46 * 0.47 * (h * w) as f64;
    let lit = img.iter().filter(|&&v| v >= 0.05).count();
    lit as f64 >= 1e-3 * brain
}

impl Renderer {
    fn in_brain(&self, y: f64, x: f64) -> bool {
        let (cy, cx) = (self.height as f64 / 2.0, self.width as f64 / 2.0);
        let (a, b) = (0.46 * self.height as f64, 0.47 * self.width as f64);
        let (dy, dx) = ((y - cy) / a, (x - cx) / b);
        dy * dy + dx * dx <= 1.0
    }

    fn random_point(&self, rng: &mut Rng, band: Option<(f64, f64)>) -> (f64, f64) {
        let (h, w) = (self.height as f64, self.width as f64);
        for _ in 0..64 {
            let y = match band {
                Some((lo, hi)) => rng.random_range(lo..hi),
                None => rng.random_range(0.0..h),
            };
            let x = rng.random_range(0.0..w);
            if self.in_brain(y, x) {
                return (y, x);
            }
        }
        (h / 2.0, w / 2.0)
    }

    /// Image `i`: grayscale in `[0, 1]`, 0 outside the brain.
    pub fn render(&self, i: usize) -> Array2<f32> {
        let (h, w) = (self.height, self.width);
        let plan = &self.images[i];
        let mut rng = seeded(derive_seed(self.seed, &format!("ish-image/{}", plan.index)));
        let mut img = Array2::<f32>::zeros((h, w));
        let brain = std::f64::consts::PI * 0.46 * 0.47 * (h * w) as f64;
        if plan.blank {
            for _ in 0..10 {
                let (y, x) = self.random_point(&mut rng, None);
                img[[y as usize, x as usize]] = 0.03;
            }
            return img;
        }
        let jitter = if plan.series > 0 {
            rng.random_range(0.9..1.1)
        } else {
            1.0
        };
        // Diffuse expression: the largest extent among the image's programs, as a union of
        // large soft discs covering about that fraction of the brain.
        let extent = plan
            .categories
            .iter()
            .filter_map(|&c| self.programs[c as usize].as_ref())
            .map(|p| p.extent)
            .fold(0.0, f64::max);
        if extent > 0.0 {
            let r = 0.12 * h as f64;
            let discs = (extent * brain / (std::f64::consts::PI * r * r)).ceil() as usize;
            for _ in 0..discs {
                let (cy, cx) = self.random_point(&mut rng, None);
                splat(&mut img, cy, cx, r, 0.08, true);
            }
        }
        let shown = plan
            .categories
            .iter()
            .filter_map(|&c| self.programs[c as usize].as_ref())
            .chain(plan.private.as_ref());
        for p in shown {
            let band = p.banded.then(|| {
                let yc = rng.random_range(0.2..0.8) * h as f64;
                (
                    (yc - 0.1 * h as f64).max(0.0),
                    (yc + 0.1 * h as f64).min(h as f64),
                )
            });
            let r = p.radius * jitter;
            let area = std::f64::consts::PI * (1.5 * r) * (1.5 * r);
            let n = (p.coverage * brain / area).round().max(1.0) as usize;
            for _ in 0..n {
                let (y, x) = self.random_point(&mut rng, band);
                let a = p.amplitude * rng.random_range(0.7..1.0);
                splat(&mut img, y, x, r, a, false);
            }
        }
        // Noise on expressed pixels, clip, mask.
        let (cy, cx) = (h as f64 / 2.0, w as f64 / 2.0);
        let (a, b) = (0.46 * h as f64, 0.47 * w as f64);
        for y in 0..h {
            for x in 0..w {
                let v = &mut img[[y, x]];
                let (dy, dx) = ((y as f64 + 0.5 - cy) / a, (x as f64 + 0.5 - cx) / b);
                if dy * dy + dx * dx > 1.0 {
                    *v = 0.0;
                    continue;
                }
                if *v > 0.01 {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    *v = (*v as f64 + self.noise * z).clamp(0.0, 1.0) as f32;
                }
            }
        }
        img
    }
}

/// Add a Gaussian blob (or, `flat`, a soft disc of level `a`) of radius `r` at `(y, x)`.
fn splat(img: &mut Array2<f32>, y: f64, x: f64, r: f64, a: f64, flat: bool) {
    let (h, w) = img.dim();
    let reach = 3.0 * r;
    let (y0, y1) = (
        (y - reach).floor().max(0.0) as usize,
        ((y + reach).ceil() as usize).min(h),
    );
    let (x0, x1) = (
        (x - reach).floor().max(0.0) as usize,
        ((x + reach).ceil() as usize).min(w),
    );
    let inv = 1.0 / (2.0 * r * r);
    for yy in y0..y1 {
        let dy = yy as f64 + 0.5 - y;
        for xx in x0..x1 {
            let dx = xx as f64 + 0.5 - x;
            let d2 = dy * dy + dx * dx;
            let v = if flat {
                if d2 <= r * r { a } else { 0.0 }
            } else {
                a * (-d2 * inv).exp()
            };
            if v > 1e-3 {
                let p = &mut img[[yy, xx]];
                *p = if flat {
                    p.max(v as f32)
                } else {
                    (*p + v as f32).min(1.0)
                };
            }
        }
    }
}

/// Generate the stand-in from an ontology with gene annotations (the real GO, or the random
/// one of [`crate::go::random`]): `genes` of its annotated genes, drawn uniformly.
pub fn generate(cfg: &IshStandinConfig, go: &GoData) -> Result<(IshSet, IshTruth), DataError> {
    cfg.validate().map_err(DataError::Param)?;
    let mut rng = seeded(derive_seed(cfg.seed, "ish-standin"));
    // ---- Genes and their propagated annotations.
    let onto = &go.ontology;
    let annotations = &go.annotations;
    let ancestors = onto.ancestor_sets();
    let neural_terms = onto.descends_from(&ancestors, &go.neural_roots);
    let usable: Vec<usize> = (0..annotations.genes.len())
        .filter(|&g| !annotations.direct[g].is_empty())
        .collect();
    if usable.len() < cfg.genes {
        return Err(DataError::Param(format!(
            "`genes` = {} but the annotations hold only {} annotated genes",
            cfg.genes,
            usable.len()
        )));
    }
    let mut pick: Vec<usize> = usable
        .choose_multiple(&mut rng, cfg.genes)
        .copied()
        .collect();
    pick.sort_unstable();
    let chosen = Annotations {
        genes: pick.iter().map(|&g| annotations.genes[g].clone()).collect(),
        direct: pick
            .iter()
            .map(|&g| annotations.direct[g].clone())
            .collect(),
        unknown_terms: 0,
        negated: 0,
        source: annotations.source.clone(),
    };
    let gene_terms = chosen.propagated(&ancestors);
    let genes = chosen.genes;
    let note = if go.real {
        format!(
            "real Gene Ontology ({}, {}) and real {} annotations of {} randomly drawn genes",
            onto.source, onto.release, annotations.source, cfg.genes
        )
    } else {
        format!(
            "{} with random annotations (the Gene Ontology is not installed)",
            onto.source
        )
    };
    // ---- Categories, information content.
    let (lo, hi) = cfg.category_bounds();
    let Labels {
        ic,
        categories,
        gene_categories: gene_cats,
    } = label_genes(onto, &neural_terms, &gene_terms, lo, hi)?;
    // ---- Programs.
    let scale_factor = cfg.height as f64 / 512.0;
    let programs: Vec<Option<Program>> = categories
        .iter()
        .map(|c| {
            let p = if c.neural {
                cfg.signal_neural
            } else {
                cfg.signal_other
            };
            if !rng.random_bool(p) {
                return None;
            }
            let scale = rng.random_range(0..4u8);
            let gain = if c.neural { cfg.neural_gain } else { 1.0 };
            Some(Program {
                scale,
                radius: (RADII[scale as usize] * scale_factor).max(0.75),
                amplitude: (rng.random_range(0.4..1.0) * gain).min(1.0),
                coverage: cfg.coverage * rng.random_range(0.5..1.5),
                banded: rng.random_bool(0.3),
                extent: if rng.random_bool(0.25) {
                    rng.random_range(0.1..0.3)
                } else {
                    0.0
                },
            })
        })
        .collect();
    // ---- Image plans: one per gene, a second series for some, blanks for further genes.
    let mut plans = Vec::new();
    let mut plan_gene = Vec::new();
    for (g, cats) in gene_cats.iter().enumerate() {
        let scale = rng.random_range(0..4u8);
        let private = Some(Program {
            scale,
            radius: (RADII[scale as usize] * scale_factor).max(0.75),
            amplitude: rng.random_range(0.3..0.8),
            coverage: cfg.coverage * rng.random_range(0.5..1.5),
            banded: rng.random_bool(0.3),
            extent: 0.0,
        });
        let shown: Vec<u32> = cats
            .iter()
            .copied()
            .filter(|&c| {
                rng.random_bool(if categories[c as usize].neural {
                    cfg.penetrance_neural
                } else {
                    cfg.penetrance
                })
            })
            .collect();
        let series = if rng.random_bool(cfg.second_series) {
            2
        } else {
            1
        };
        for s in 0..series {
            plans.push(ImagePlan {
                categories: shown.clone(),
                private: private.clone(),
                series: s,
                blank: false,
                index: 0,
            });
            plan_gene.push(g as u32);
        }
    }
    let kept = plans.len();
    let blanks = (kept as f64 * cfg.no_expression / (1.0 - cfg.no_expression)).round() as usize;
    for _ in 0..blanks {
        plans.push(ImagePlan {
            categories: Vec::new(),
            private: None,
            series: 0,
            blank: true,
            index: 0,
        });
        plan_gene.push(u32::MAX);
    }
    // Shuffle so that the filter, not the position, tells the blanks apart.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.shuffle(&mut rng);
    let plans: Vec<ImagePlan> = order
        .iter()
        .enumerate()
        .map(|(k, &i)| ImagePlan {
            index: k,
            ..plans[i].clone()
        })
        .collect();
    let plan_gene: Vec<u32> = order.iter().map(|&i| plan_gene[i]).collect();
    let all = Renderer {
        height: cfg.height,
        width: cfg.width,
        noise: cfg.noise,
        seed: derive_seed(cfg.seed, "ish-render"),
        programs: programs.clone(),
        images: plans,
    };
    // The no-expression filter on every rendered image.
    let keep: Vec<bool> = (0..all.images.len())
        .map(|i| has_expression(&all.render(i)))
        .collect();
    let mut image_gene = Vec::new();
    let mut image_series = Vec::new();
    let mut kept_plans = Vec::new();
    let mut discarded = 0;
    let mut gene_has_image = vec![false; cfg.genes];
    for (i, &k) in keep.iter().enumerate() {
        if !k {
            discarded += 1;
            continue;
        }
        let g = plan_gene[i];
        if g == u32::MAX {
            return Err(DataError::Param(
                "a no-expression image passed the expression filter (stand-in bug)".into(),
            ));
        }
        gene_has_image[g as usize] = true;
        image_gene.push(g);
        image_series.push(all.images[i].series);
        kept_plans.push(all.images[i].clone());
    }
    if let Some(g) = gene_has_image.iter().position(|h| !h) {
        return Err(DataError::Param(format!(
            "gene {g}'s images failed the expression filter (stand-in bug: raise `coverage`)"
        )));
    }
    let renderer = Renderer {
        images: kept_plans,
        ..all
    };
    // ---- Relations.
    let owning: Vec<usize> = (0..categories.len())
        .filter(|&c| programs[c].is_some() && categories[c].genes.len() >= 2)
        .collect();
    let mut by_pref = owning.clone();
    by_pref.sort_by_key(|&c| {
        (
            !categories[c].neural,
            std::cmp::Reverse(categories[c].genes.len()),
            c,
        )
    });
    let cell_types: Vec<usize> = by_pref.into_iter().take(3).collect();
    let g = cfg.genes;
    let mut cell: Vec<Vec<u32>> = vec![Vec::new(); g];
    for &c in &cell_types {
        for &a in &categories[c].genes {
            cell[a as usize].extend(categories[c].genes.iter().copied().filter(|&b| b != a));
        }
    }
    let mut path: Vec<Vec<u32>> = vec![Vec::new(); g];
    if !owning.is_empty() {
        for _ in 0..cfg.pathways {
            let c = *owning.choose(&mut rng).expect("non-empty");
            let mut members: Vec<u32> = categories[c]
                .genes
                .iter()
                .copied()
                .filter(|_| rng.random_bool(0.6))
                .collect();
            let extra = members.len().div_ceil(4);
            for _ in 0..extra {
                members.push(rng.random_range(0..g as u32));
            }
            members.sort_unstable();
            members.dedup();
            for &a in &members {
                path[a as usize].extend(members.iter().copied().filter(|&b| b != a));
            }
        }
    }
    let mut ppi: Vec<Vec<u32>> = vec![Vec::new(); g];
    if cfg.ppi_per_gene > 0.0 {
        let pois = Poisson::new(cfg.ppi_per_gene / 2.0).expect("positive rate");
        for a in 0..g {
            let k = pois.sample(&mut rng) as usize;
            for _ in 0..k {
                let b = if !gene_cats[a].is_empty() && rng.random_bool(0.7) {
                    let c = *gene_cats[a].choose(&mut rng).expect("non-empty");
                    *categories[c as usize]
                        .genes
                        .choose(&mut rng)
                        .expect("non-empty")
                } else {
                    rng.random_range(0..g as u32)
                };
                if b as usize != a {
                    ppi[a].push(b);
                    ppi[b as usize].push(a as u32);
                }
            }
        }
    }
    let set = IshSet {
        genes,
        image_gene,
        image_series,
        height: cfg.height,
        width: cfg.width,
        terms: term_names(onto),
        ancestors,
        ic,
        categories,
        relations: Relations {
            cell_type: tidy(cell),
            pathway: tidy(path),
            ppi: tidy(ppi),
        },
        discarded_no_expression: discarded,
        ontology_note: note,
        synthetic_images: true,
        source: ImageSource::Generated(Arc::new(renderer)),
    };
    Ok((
        set,
        IshTruth {
            programs,
            cell_types,
        },
    ))
}
