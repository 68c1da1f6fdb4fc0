//! Brain in-situ hybridisation images with their genes' GO annotations: the data of FuncISH
//! (funcish.md §2.1, §2.5, §3).
//!
//! The real data (Allen Brain Atlas adult mouse ISH, expression-masked, one medial sagittal
//! slice per image series; mouse GO annotations; cell-type markers, KEGG, IntAct) is not
//! reachable from here (spec §3): [`standin`] generates the stand-in of spec §8, drawing its
//! categories, DAG and information content from the **real** Gene Ontology when it is
//! installed (and its genes and their annotations from the real human annotations), and from
//! a random DAG otherwise. Images, relations and everything learned from them stay
//! SYNTHETIC.
//!
//! An [`IshSet`] holds what the FuncISH pipeline needs: the images (generated on demand from
//! a seed, so a paper-sized set of 2048 × 4096 images never sits in memory), the gene of each
//! image, the GO categories with their genes, the ancestors and information content GO-sim
//! needs, the relation sets of Fig. 4, and how many images were discarded for showing no
//! expression.

pub mod allen;
pub mod provider;
pub mod standin;

use ndarray::Array2;
use std::sync::Arc;

/// One GO category used as a classification label.
#[derive(Debug, Clone, PartialEq)]
pub struct Category {
    /// Ontology term index (into [`IshSet::terms`]).
    pub term: u32,
    /// Genes annotated to it (propagated), sorted indices into [`IshSet::genes`].
    pub genes: Vec<u32>,
    /// One of the nervous-system categories (Fig. 3's 164).
    pub neural: bool,
}

/// An ontology term as the report names it.
#[derive(Debug, Clone, PartialEq)]
pub struct TermName {
    pub id: String,
    pub name: String,
}

/// The relation sets of Fig. 4: for each gene, its related genes (sorted, never itself).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Relations {
    /// Markers of the same cell type (Cahoy et al. 2008's role).
    pub cell_type: Vec<Vec<u32>>,
    /// Co-membership in a pathway (KEGG's role).
    pub pathway: Vec<Vec<u32>>,
    /// Protein–protein interactions (IntAct's role).
    pub ppi: Vec<Vec<u32>>,
}

impl Relations {
    /// The three sets with their figure names.
    pub fn named(&self) -> [(&'static str, &Vec<Vec<u32>>); 3] {
        [
            ("cell-type markers", &self.cell_type),
            ("pathways", &self.pathway),
            ("PPIs", &self.ppi),
        ]
    }
}

/// Where the pixels come from.
#[derive(Clone)]
pub enum ImageSource {
    /// Rendered on demand by the stand-in's generator.
    Generated(Arc<standin::Renderer>),
    /// Image files, decoded on demand.
    Files(Arc<Vec<std::path::PathBuf>>),
}

/// Images of genes with their GO categories (see the module documentation).
#[derive(Clone)]
pub struct IshSet {
    /// Gene symbols.
    pub genes: Vec<String>,
    /// Gene of each (retained) image.
    pub image_gene: Vec<u32>,
    /// The image series of each image within its gene (0, or 1 for a second series).
    pub image_series: Vec<u8>,
    /// Image height and width (pixels).
    pub height: usize,
    pub width: usize,
    /// Every ontology term (the categories' ancestors index into it).
    pub terms: Vec<TermName>,
    /// Ancestors-or-self of every term over is_a/part_of, sorted.
    pub ancestors: Vec<Vec<u32>>,
    /// Information content of every term over the genes in use (0 for terms no gene carries).
    pub ic: Vec<f64>,
    /// The classification categories.
    pub categories: Vec<Category>,
    pub relations: Relations,
    /// Images generated (or found) with no expression and dropped (spec §2.1 step 3).
    pub discarded_no_expression: usize,
    /// What the ontology and the annotations are: real release or random DAG.
    pub ontology_note: String,
    pub synthetic_images: bool,
    pub(crate) source: ImageSource,
}

impl std::fmt::Debug for IshSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IshSet")
            .field("genes", &self.genes.len())
            .field("images", &self.image_gene.len())
            .field("categories", &self.categories.len())
            .finish()
    }
}

impl IshSet {
    pub fn n_images(&self) -> usize {
        self.image_gene.len()
    }

    /// The grayscale, expression-masked image `i` (values in `[0, 1]`, background 0); a
    /// real image file is decoded again (an error if it changed or vanished since loading).
    pub fn image(&self, i: usize) -> Result<Array2<f32>, crate::DataError> {
        match &self.source {
            ImageSource::Generated(r) => Ok(r.render(i)),
            ImageSource::Files(paths) => allen::read_gray(&paths[i]),
        }
    }

    /// The images of each category's genes: the positive image indices, sorted.
    pub fn positive_images(&self) -> Vec<Vec<u32>> {
        let mut by_gene: Vec<Vec<u32>> = vec![Vec::new(); self.genes.len()];
        for (i, &g) in self.image_gene.iter().enumerate() {
            by_gene[g as usize].push(i as u32);
        }
        self.categories
            .iter()
            .map(|c| {
                let mut v: Vec<u32> = c
                    .genes
                    .iter()
                    .flat_map(|&g| by_gene[g as usize].iter().copied())
                    .collect();
                v.sort_unstable();
                v
            })
            .collect()
    }
}

/// The ontology's terms as the report names them.
pub fn term_names(onto: &crate::go::Ontology) -> Vec<TermName> {
    onto.terms
        .iter()
        .map(|t| TermName {
            id: t.id.clone(),
            name: t.name.clone(),
        })
        .collect()
}

/// Relation lists sorted and without repeats.
pub(crate) fn tidy(mut v: Vec<Vec<u32>>) -> Vec<Vec<u32>> {
    for s in &mut v {
        s.sort_unstable();
        s.dedup();
    }
    v
}

/// GO categories of a gene universe (see [`label_genes`]).
pub struct Labels {
    /// Information content of every term over the genes (0 for terms no gene carries).
    pub ic: Vec<f64>,
    pub categories: Vec<Category>,
    /// Categories of each gene, ascending.
    pub gene_categories: Vec<Vec<u32>>,
}

/// The categories of `gene_terms` (propagated annotations of each gene): biological-process
/// terms carried by `lo ..= hi` of the genes and not by all of them (spec §2.5), neural when
/// `neural_terms` says so; and the information content of every term over these genes.
pub fn label_genes(
    onto: &crate::go::Ontology,
    neural_terms: &[bool],
    gene_terms: &[Vec<u32>],
    lo: usize,
    hi: usize,
) -> Result<Labels, crate::DataError> {
    let n = gene_terms.len();
    let counts = crate::go::term_counts(onto.len(), gene_terms);
    let ic: Vec<f64> = crate::go::information_content(&counts, n)
        .into_iter()
        .map(|v| v.unwrap_or(0.0))
        .collect();
    let cat_terms: Vec<u32> = (0..onto.len())
        .filter(|&t| (lo..=hi).contains(&(counts[t] as usize)) && counts[t] as usize != n)
        .filter(|&t| onto.terms[t].namespace == crate::go::Namespace::BiologicalProcess)
        .map(|t| t as u32)
        .collect();
    if cat_terms.is_empty() {
        return Err(crate::DataError::Param(format!(
            "no GO category has {lo} to {hi} of the {n} genes: use more genes or a lower minimum category size"
        )));
    }
    let mut cat_of_term = vec![u32::MAX; onto.len()];
    for (c, &t) in cat_terms.iter().enumerate() {
        cat_of_term[t as usize] = c as u32;
    }
    let mut cat_genes: Vec<Vec<u32>> = vec![Vec::new(); cat_terms.len()];
    let mut gene_categories: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (g, ts) in gene_terms.iter().enumerate() {
        for &t in ts {
            let c = cat_of_term[t as usize];
            if c != u32::MAX {
                cat_genes[c as usize].push(g as u32);
                gene_categories[g].push(c);
            }
        }
    }
    let categories = cat_terms
        .iter()
        .zip(cat_genes)
        .map(|(&t, genes)| Category {
            term: t,
            genes,
            neural: neural_terms[t as usize],
        })
        .collect();
    Ok(Labels {
        ic,
        categories,
        gene_categories,
    })
}

/// The NeuroBlast stand-in's representation (spec §8 item 4): the image averaged over a
/// coarse `rows × cols` grid (cell boundaries at `floor(k·H/rows)`), row-major.
pub fn coarse_grid(img: &Array2<f32>, rows: usize, cols: usize) -> Vec<f64> {
    let (h, w) = img.dim();
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let (y0, y1) = (
            r * h / rows,
            ((r + 1) * h / rows).max(r * h / rows + 1).min(h),
        );
        for c in 0..cols {
            let (x0, x1) = (
                c * w / cols,
                ((c + 1) * w / cols).max(c * w / cols + 1).min(w),
            );
            let mut s = 0.0f64;
            for y in y0..y1 {
                for x in x0..x1 {
                    s += img[[y, x]] as f64;
                }
            }
            let n = ((y1 - y0) * (x1 - x0)).max(1);
            out[r * cols + c] = s / n as f64;
        }
    }
    out
}

#[cfg(test)]
mod tests;
