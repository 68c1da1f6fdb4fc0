//! The real FuncISH data, as a user assembles it from the Allen Brain Atlas (funcish.md §2.1,
//! §3): `$DYAD_DATA_DIR/allen-ish/`
//!
//! * `images.csv`: a header naming at least the columns `image` and `gene` (others, e.g.
//!   `series` or `section_data_set_id`, are ignored), then one line per image series: the
//!   image file (a path relative to `images/`) and the gene's symbol. The ABA API lists the
//!   sagittal series of the adult mouse ISH atlas with their genes
//!   (`api/v2/data/query.csv?criteria=model::SectionDataSet,rma::criteria,[failed$eqfalse],products[abbreviation$eq'Mouse'],plane_of_section[name$eq'sagittal'],genes&tabular=data_sets.id,genes.acronym`),
//!   and `api/v2/section_image_download/<id>?view=expression` downloads the expression mask of
//!   a section: the most medial section of each series is the paper's image.
//! * `images/…`: the expression-masked images, PNG or JPEG, grey or colour (converted to grey
//!   with Rec. 601 weights), 8 or 16 bits; read as intensities in `[0, 1]`.
//! * `relations/cell_type.tsv` and `relations/pathway.tsv` (optional): `gene<TAB>group`
//!   lines (a gene may be in several groups; genes sharing a group are related);
//!   `relations/ppi.tsv` (optional): `gene<TAB>gene` interaction lines. `#` lines are
//!   comments. Genes that have no image are ignored.
//!
//! The GO categories come from the `gene-ontology` provider (the mouse GAF `mgi.gaf.gz` in
//! `$DYAD_DATA_DIR/go/` is what the paper used). Images showing no expression are dropped and
//! counted ([`super::standin::has_expression`], spec §2.1 step 3), and genes left without an
//! image with them.

use super::{ImageSource, IshSet, Labels, Relations, label_genes, term_names, tidy};
use crate::DataError;
use crate::formats::expr_text::{Lines, show, split_csv};
use crate::go::GoData;
use ndarray::Array2;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The index file.
pub const INDEX: &str = "images.csv";

/// Decode an image file to grey intensities in `[0, 1]`.
pub fn read_gray(path: &Path) -> Result<Array2<f32>, DataError> {
    let img = std::panic::catch_unwind(|| image::open(path))
        .map_err(|_| DataError::Inconsistent {
            path: path.to_path_buf(),
            message: "the image decoder panicked".into(),
        })?
        .map_err(|e| DataError::Inconsistent {
            path: path.to_path_buf(),
            message: format!("not a readable PNG or JPEG image: {e}"),
        })?;
    let gray = img.to_luma16();
    let (w, h) = gray.dimensions();
    let data: Vec<f32> = gray
        .into_raw()
        .into_iter()
        .map(|v| v as f32 / 65535.0)
        .collect();
    Array2::from_shape_vec((h as usize, w as usize), data).map_err(|e| DataError::Inconsistent {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// `(image path, gene)` per line of `images.csv`.
pub fn read_index(dir: &Path) -> Result<Vec<(PathBuf, String)>, DataError> {
    let path = dir.join(INDEX);
    index_from_lines(dir, Lines::open(&path)?)
}

/// Parse the bytes of `dir`'s `images.csv` (plain or gzip): `(image path, gene)` per line.
pub fn parse_index(dir: &Path, bytes: Vec<u8>) -> Result<Vec<(PathBuf, String)>, DataError> {
    index_from_lines(dir, Lines::from_bytes(bytes))
}

fn index_from_lines(dir: &Path, mut lines: Lines) -> Result<Vec<(PathBuf, String)>, DataError> {
    let path = dir.join(INDEX);
    let Some((_, header)) = lines.next_line(&path)? else {
        return Err(DataError::Line {
            path,
            line: 1,
            column: None,
            expected: "a header with the columns `image` and `gene`".into(),
            found: "an empty file".into(),
        });
    };
    let names: Vec<String> = split_csv(&path, 1, header)?
        .into_iter()
        .map(|s| s.trim().to_string())
        .collect();
    let col = |n: &str| names.iter().position(|c| c == n);
    let (Some(ci), Some(cg)) = (col("image"), col("gene")) else {
        return Err(DataError::Line {
            path,
            line: 1,
            column: None,
            expected: "a header with the columns `image` and `gene`".into(),
            found: show(header),
        });
    };
    let mut out = Vec::new();
    while let Some((no, line)) = lines.next_line(&path)? {
        if line.trim().is_empty() {
            continue;
        }
        let f = split_csv(&path, no, line)?;
        let field = |c: usize, what: &str| -> Result<String, DataError> {
            match f.get(c).map(|s| s.trim()) {
                Some(v) if !v.is_empty() => Ok(v.to_string()),
                _ => Err(DataError::Line {
                    path: path.clone(),
                    line: no,
                    column: Some(c as u64 + 1),
                    expected: what.into(),
                    found: show(line),
                }),
            }
        };
        let image = field(ci, "an image file name")?;
        let gene = field(cg, "a gene symbol")?;
        out.push((dir.join("images").join(image), gene));
    }
    if out.is_empty() {
        return Err(DataError::Inconsistent {
            path,
            message: "lists no image".into(),
        });
    }
    Ok(out)
}

/// Pairs `(a, b)` of a two-column relation file (`None` when the file is absent).
fn read_pairs(path: &Path) -> Result<Option<Vec<(String, String)>>, DataError> {
    if !path.is_file() {
        return Ok(None);
    }
    let mut lines = Lines::open(path)?;
    let mut out = Vec::new();
    while let Some((no, line)) = lines.next_line(path)? {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let mut it = t.split('\t');
        match (it.next(), it.next()) {
            (Some(a), Some(b)) if !a.trim().is_empty() && !b.trim().is_empty() => {
                out.push((a.trim().to_string(), b.trim().to_string()))
            }
            _ => {
                return Err(DataError::Line {
                    path: path.to_path_buf(),
                    line: no,
                    column: None,
                    expected: "two tab-separated fields".into(),
                    found: show(line),
                });
            }
        }
    }
    Ok(Some(out))
}

/// Relations from `gene<TAB>group` lines: genes sharing a group are related.
fn groups(pairs: &[(String, String)], index: &HashMap<&str, u32>, n: usize) -> Vec<Vec<u32>> {
    let mut by_group: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (g, grp) in pairs {
        if let Some(&i) = index.get(g.as_str()) {
            by_group.entry(grp).or_default().push(i);
        }
    }
    let mut rel = vec![Vec::new(); n];
    for members in by_group.values() {
        for &a in members {
            rel[a as usize].extend(members.iter().copied().filter(|&b| b != a));
        }
    }
    tidy(rel)
}

/// Load the real data set in `dir`, labelled with `go`'s categories of `lo..=hi` genes.
pub fn load(dir: &Path, go: &GoData, lo: usize, hi: usize) -> Result<IshSet, DataError> {
    let index = read_index(dir)?;
    // Decode every image once: its size, and the no-expression filter.
    let mut kept: Vec<(PathBuf, String)> = Vec::new();
    let mut discarded = 0;
    let mut shape = None;
    for (path, gene) in index {
        let img = read_gray(&path)?;
        match shape {
            None => shape = Some(img.dim()),
            Some(s) if s != img.dim() => {
                return Err(DataError::Inconsistent {
                    path,
                    message: format!(
                        "is {} x {} but the first image is {} x {}: the images must share one size",
                        img.dim().0,
                        img.dim().1,
                        s.0,
                        s.1
                    ),
                });
            }
            _ => {}
        }
        if super::standin::has_expression(&img) {
            kept.push((path, gene));
        } else {
            discarded += 1;
        }
    }
    let (height, width) = shape.unwrap_or((0, 0));
    // Genes: the imaged genes that have annotations.
    let annotated: HashMap<&str, usize> = go
        .annotations
        .genes
        .iter()
        .enumerate()
        .map(|(i, g)| (g.as_str(), i))
        .collect();
    let mut genes: Vec<String> = kept
        .iter()
        .map(|(_, g)| g.clone())
        .filter(|g| annotated.contains_key(g.as_str()))
        .collect();
    genes.sort();
    genes.dedup();
    if genes.is_empty() {
        return Err(DataError::Inconsistent {
            path: dir.join(INDEX),
            message: "no imaged gene has a GO annotation (are the annotations of the same species, by symbol?)".into(),
        });
    }
    let gene_index: HashMap<&str, u32> = genes
        .iter()
        .enumerate()
        .map(|(i, g)| (g.as_str(), i as u32))
        .collect();
    let mut paths = Vec::new();
    let mut image_gene = Vec::new();
    let mut image_series = Vec::new();
    let mut seen = vec![0u8; genes.len()];
    for (p, g) in &kept {
        if let Some(&i) = gene_index.get(g.as_str()) {
            paths.push(p.clone());
            image_gene.push(i);
            image_series.push(seen[i as usize]);
            seen[i as usize] = seen[i as usize].saturating_add(1);
        }
    }
    let ancestors = go.ontology.ancestor_sets();
    let neural = go.ontology.descends_from(&ancestors, &go.neural_roots);
    let direct = crate::go::Annotations {
        genes: genes.clone(),
        direct: genes
            .iter()
            .map(|g| go.annotations.direct[annotated[g.as_str()]].clone())
            .collect(),
        unknown_terms: 0,
        negated: 0,
        source: go.annotations.source.clone(),
    };
    let gene_terms = direct.propagated(&ancestors);
    let Labels { ic, categories, .. } = label_genes(&go.ontology, &neural, &gene_terms, lo, hi)?;
    let rel_dir = dir.join("relations");
    let n = genes.len();
    let empty = || vec![Vec::new(); n];
    let cell_type = read_pairs(&rel_dir.join("cell_type.tsv"))?
        .map_or_else(empty, |p| groups(&p, &gene_index, n));
    let pathway = read_pairs(&rel_dir.join("pathway.tsv"))?
        .map_or_else(empty, |p| groups(&p, &gene_index, n));
    let ppi = match read_pairs(&rel_dir.join("ppi.tsv"))? {
        None => empty(),
        Some(p) => {
            let mut rel = empty();
            for (a, b) in &p {
                if let (Some(&i), Some(&j)) =
                    (gene_index.get(a.as_str()), gene_index.get(b.as_str()))
                    && i != j
                {
                    rel[i as usize].push(j);
                    rel[j as usize].push(i);
                }
            }
            tidy(rel)
        }
    };
    Ok(IshSet {
        genes,
        image_gene,
        image_series,
        height,
        width,
        terms: term_names(&go.ontology),
        ancestors,
        ic,
        categories,
        relations: Relations {
            cell_type,
            pathway,
            ppi,
        },
        discarded_no_expression: discarded,
        ontology_note: format!(
            "{} ({}), {} annotations",
            go.ontology.source, go.ontology.release, go.annotations.source
        ),
        synthetic_images: false,
        source: ImageSource::Files(Arc::new(paths)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::go::random::{RandomGoConfig, random_go};

    /// A tiny real-format data set: PNG images (one blank), an index, relations.
    fn write_dataset(dir: &Path, go: &GoData, genes: usize) {
        std::fs::create_dir_all(dir.join("images")).unwrap();
        std::fs::create_dir_all(dir.join("relations")).unwrap();
        let mut csv = String::from("series,image,gene\n");
        for g in 0..genes {
            let name = format!("s{g}.png");
            let mut img = image::GrayImage::new(64, 32);
            if g % 7 != 3 {
                for y in 8..24 {
                    for x in (g % 20)..(g % 20 + 30) {
                        img.put_pixel(x as u32, y, image::Luma([120 + (g % 100) as u8]));
                    }
                }
            }
            img.save(dir.join("images").join(&name)).unwrap();
            csv += &format!("{g},{name},{}\n", go.annotations.genes[g]);
        }
        std::fs::write(dir.join(INDEX), csv).unwrap();
        std::fs::write(
            dir.join("relations/cell_type.tsv"),
            format!(
                "# gene\tcell type\n{}\tastro\n{}\tastro\n{}\toligo\nUNKNOWN\tastro\n",
                go.annotations.genes[0], go.annotations.genes[1], go.annotations.genes[2]
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("relations/ppi.tsv"),
            format!("{}\t{}\n", go.annotations.genes[4], go.annotations.genes[5]),
        )
        .unwrap();
    }

    #[test]
    fn real_layout_loads_filters_and_relates() {
        let go = random_go(&RandomGoConfig {
            terms: 100,
            genes: 120,
            seed: 3,
        });
        let dir = tempfile::tempdir().unwrap();
        write_dataset(dir.path(), &go, 120);
        let set = load(dir.path(), &go, 5, 60).unwrap();
        // Every seventh image is blank: dropped and counted.
        let blanks = (0..120).filter(|g| g % 7 == 3).count();
        assert_eq!(set.discarded_no_expression, blanks);
        assert_eq!(set.n_images(), 120 - blanks);
        assert_eq!((set.height, set.width), (32, 64));
        assert!(!set.synthetic_images);
        let img = set.image(0).unwrap();
        assert!(
            (img[[10, 5]] - 120.0 / 255.0).abs() < 1e-3,
            "{}",
            img[[10, 5]]
        );
        // Relations: genes 0 and 1 share a cell type, 2 is alone; 4-5 interact.
        let idx = |k: usize| {
            set.genes
                .iter()
                .position(|g| *g == go.annotations.genes[k])
                .unwrap() as u32
        };
        assert_eq!(set.relations.cell_type[idx(0) as usize], vec![idx(1)]);
        assert!(set.relations.cell_type[idx(2) as usize].is_empty());
        assert_eq!(set.relations.ppi[idx(5) as usize], vec![idx(4)]);
        assert!(
            set.relations.pathway.iter().all(Vec::is_empty),
            "no pathway file"
        );
        assert!(!set.categories.is_empty());
    }

    #[test]
    fn bad_files_are_errors_naming_them() {
        let go = random_go(&RandomGoConfig {
            terms: 100,
            genes: 40,
            seed: 3,
        });
        let dir = tempfile::tempdir().unwrap();
        write_dataset(dir.path(), &go, 40);
        // A header without `gene`.
        std::fs::write(dir.path().join(INDEX), "image,symbol\ns0.png,G00000\n").unwrap();
        let e = load(dir.path(), &go, 5, 30).unwrap_err();
        assert!(matches!(e, DataError::Line { line: 1, .. }), "{e}");
        // A line without a gene.
        std::fs::write(dir.path().join(INDEX), "image,gene\ns0.png,\n").unwrap();
        let e = load(dir.path(), &go, 5, 30).unwrap_err();
        assert!(
            matches!(
                e,
                DataError::Line {
                    line: 2,
                    column: Some(2),
                    ..
                }
            ),
            "{e}"
        );
        // A corrupt image names its file.
        std::fs::write(dir.path().join("images/s1.png"), b"not a png").unwrap();
        std::fs::write(
            dir.path().join(INDEX),
            "image,gene\ns0.png,G00000\ns1.png,G00001\n",
        )
        .unwrap();
        let e = load(dir.path(), &go, 5, 30).unwrap_err();
        assert!(e.to_string().contains("s1.png"), "{e}");
        // A relation line with one field names its line.
        write_dataset(dir.path(), &go, 40);
        std::fs::write(
            dir.path().join("relations/pathway.tsv"),
            "G00001\tp1\nG00002\n",
        )
        .unwrap();
        let e = load(dir.path(), &go, 5, 30).unwrap_err();
        assert!(matches!(e, DataError::Line { line: 2, .. }), "{e}");
    }
}
