//! The Allen Human Brain Atlas per-donor microarray release (Hawrylycz et al. 2012), as used by
//! the Givens streaming sparse-PCA experiment (givens.md §7, E2).
//!
//! Each donor directory (e.g. `normalized_microarray_donor9861`) holds, among others:
//!
//! * `MicroarrayExpression.csv`: no header; one line per probe: the probe id, then one
//!   normalised expression value per sample (the samples in `SampleAnnot.csv` order);
//! * `Probes.csv`: header `probe_id, probe_name, gene_id, gene_symbol, gene_name, entrez_id,
//!   chromosome`, one line per probe;
//! * `SampleAnnot.csv`: header `structure_id, slab_num, well_id, slab_type, structure_acronym,
//!   structure_name, polygon_id, mri_voxel_x, mri_voxel_y, mri_voxel_z, mni_x, mni_y, mni_z`, one
//!   line per sample (per expression column).
//!
//! Columns of the two annotated files are found by their header names (extra columns are
//! ignored; CSV quoting as written by the Allen Institute is understood). Each file may also be
//! gzipped (`Probes.csv.gz`, ...). The expression file is **streamed**: it is read line by line
//! straight into the output matrix (summing into gene rows when collapsing), so memory is the
//! output matrix plus one line, and the work is linear in the file size.
//!
//! Probes can be kept (`probes x samples`: gene ids = probe ids, gene names = gene symbols) or
//! collapsed to genes by averaging all probes with the same gene symbol (givens.md, tag \[A\]:
//! average probes per gene; gene ids = symbols, gene names = the gene name of the symbol's first
//! probe; probes without a symbol are dropped). Several donors read together become one matrix with the
//! donor (directory name) as the sample group: the paper's 3,702 samples from six donors.
//! Sample ids are `{donor}/{well_id}`.

pub mod provider;

use crate::DataError;
use crate::expression::{Categorical, ExpressionSet};
use crate::formats::expr_text::{Lines, number, parse_finite, parse_uint, show, split_csv};
use ndarray::Array2;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub const EXPRESSION_FILE: &str = "MicroarrayExpression.csv";
pub const PROBES_FILE: &str = "Probes.csv";
pub const SAMPLES_FILE: &str = "SampleAnnot.csv";

/// Per-donor sample counts quoted by givens.md §7 for the public release (tag \[X\], not verified
/// here): 946 + 893 + 363 + 529 + 470 + 501 = 3,702.
pub const PAPER_DONOR_SAMPLES: [usize; 6] = [946, 893, 363, 529, 470, 501];

/// The columns read from `Probes.csv`, by header name.
pub const PROBE_COLUMNS: [&str; 7] = [
    "probe_id",
    "probe_name",
    "gene_id",
    "gene_symbol",
    "gene_name",
    "entrez_id",
    "chromosome",
];

/// The columns read from `SampleAnnot.csv`, by header name.
pub const SAMPLE_COLUMNS: [&str; 13] = [
    "structure_id",
    "slab_num",
    "well_id",
    "slab_type",
    "structure_acronym",
    "structure_name",
    "polygon_id",
    "mri_voxel_x",
    "mri_voxel_y",
    "mri_voxel_z",
    "mni_x",
    "mni_y",
    "mni_z",
];

/// One line of `Probes.csv`. Only `probe_id` is interpreted (it links the expression rows);
/// the other fields are kept as written (unquoted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub probe_id: u64,
    pub probe_name: String,
    pub gene_id: String,
    pub gene_symbol: String,
    pub gene_name: String,
    pub entrez_id: String,
    pub chromosome: String,
}

/// One line of `SampleAnnot.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleAnnotation {
    pub structure_id: u64,
    pub slab_num: u64,
    pub well_id: u64,
    pub slab_type: String,
    pub structure_acronym: String,
    pub structure_name: String,
    pub polygon_id: u64,
    /// `mri_voxel_x, _y, _z`.
    pub mri_voxel: [f64; 3],
    /// `mni_x, _y, _z` (MNI152 coordinates).
    pub mni: [f64; 3],
}

/// What the rows of the result are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProbeCollapse {
    /// One row per probe (all 58,692 in the real release).
    None,
    /// One row per gene symbol: the mean of its probes (givens.md, tag \[A\]).
    #[default]
    MeanByGeneSymbol,
}

/// Expression read from one or more donor directories.
#[derive(Debug, Clone, PartialEq)]
pub struct AllenExpression {
    /// Genes (or probes) x samples; groups = donors (directory names).
    pub data: ExpressionSet,
    /// The sample annotations, in column order.
    pub samples: Vec<SampleAnnotation>,
    /// How many probes were averaged into each row (all 1 without collapsing).
    pub probes_per_row: Vec<usize>,
    /// Probes left out (collapsing drops probes without a gene symbol).
    pub dropped_probes: usize,
}

/// Find `name` or `name.gz` in `dir`.
fn locate(dir: &Path, name: &str) -> Result<PathBuf, DataError> {
    let tried = [name.to_string(), format!("{name}.gz")];
    tried
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| DataError::Missing {
            name: "allen-human-brain-atlas".into(),
            dir: dir.to_path_buf(),
            tried: tried.join(", "),
            hint: "Each donor directory of the AHBA microarray release (human.brain-map.org, \
                   'normalized_microarray_donor*') holds MicroarrayExpression.csv, Probes.csv \
                   and SampleAnnot.csv."
                .into(),
        })
}

/// A CSV file with a header: returns the position of each required column.
fn header_columns(
    path: &Path,
    lines: &mut Lines,
    required: &[&str],
) -> Result<Vec<usize>, DataError> {
    let Some((no, header)) = lines.next_line(path)? else {
        return Err(DataError::line(
            path,
            1,
            None,
            format!("a header line naming the columns {}", required.join(", ")),
            "an empty file",
        ));
    };
    let names: Vec<String> = split_csv(path, no, header)?
        .into_iter()
        .map(|f| f.trim().to_string())
        .collect();
    required
        .iter()
        .map(|r| {
            names.iter().position(|n| n == r).ok_or_else(|| {
                DataError::line(
                    path,
                    no,
                    None,
                    format!("a header with a column `{r}`"),
                    show(header),
                )
            })
        })
        .collect()
}

/// Read the data lines of a headed CSV, giving each line's fields in `required` order.
fn headed_rows<T>(
    path: &Path,
    mut lines: Lines,
    required: &[&str],
    mut row: impl FnMut(u64, &[&str], &[usize]) -> Result<T, DataError>,
) -> Result<Vec<T>, DataError> {
    let cols = header_columns(path, &mut lines, required)?;
    let width = cols.iter().max().map_or(0, |&m| m + 1);
    let mut out = Vec::new();
    let mut blank_since = None;
    while let Some((no, line)) = lines.next_line(path)? {
        if line.trim().is_empty() {
            blank_since.get_or_insert(no);
            continue;
        }
        if let Some(b) = blank_since {
            return Err(DataError::line(
                path,
                b,
                None,
                "a data line (blank lines are allowed only at the end)",
                "a blank line",
            ));
        }
        let fields = split_csv(path, no, line)?;
        if fields.len() < width {
            return Err(DataError::line(
                path,
                no,
                None,
                format!("at least {width} comma-separated fields (as in the header)"),
                format!("{} fields", fields.len()),
            ));
        }
        let picked: Vec<&str> = cols.iter().map(|&c| fields[c].trim()).collect();
        out.push(row(no, &picked, &cols)?);
    }
    Ok(out)
}

fn uint_field(path: &Path, no: u64, column: usize, what: &str, f: &str) -> Result<u64, DataError> {
    parse_uint(f).ok_or_else(|| {
        DataError::line(
            path,
            no,
            Some(column as u64 + 1),
            format!("{what} (a non-negative integer)"),
            show(f),
        )
    })
}

/// Read `Probes.csv` (plain or gzip). Probe ids must be distinct.
pub fn read_probes(path: &Path) -> Result<Vec<Probe>, DataError> {
    probes_from_lines(path, Lines::open(path)?)
}

/// Parse `Probes.csv` bytes (plain or gzip); `path` names the source in errors.
pub fn parse_probes(path: &Path, bytes: Vec<u8>) -> Result<Vec<Probe>, DataError> {
    probes_from_lines(path, Lines::from_bytes(bytes))
}

fn probes_from_lines(path: &Path, lines: Lines) -> Result<Vec<Probe>, DataError> {
    let mut seen: HashMap<u64, u64> = HashMap::new();
    headed_rows(path, lines, &PROBE_COLUMNS, |no, f, cols| {
        let probe_id = uint_field(path, no, cols[0], "a probe id", f[0])?;
        if let Some(first) = seen.insert(probe_id, no) {
            return Err(DataError::line(
                path,
                no,
                Some(cols[0] as u64 + 1),
                "a probe id not used before",
                format!("probe {probe_id} again (first on line {first})"),
            ));
        }
        Ok(Probe {
            probe_id,
            probe_name: f[1].to_string(),
            gene_id: f[2].to_string(),
            gene_symbol: f[3].to_string(),
            gene_name: f[4].to_string(),
            entrez_id: f[5].to_string(),
            chromosome: f[6].to_string(),
        })
    })
}

/// Read `SampleAnnot.csv` (plain or gzip).
pub fn read_sample_annotations(path: &Path) -> Result<Vec<SampleAnnotation>, DataError> {
    sample_annotations_from_lines(path, Lines::open(path)?)
}

/// Parse `SampleAnnot.csv` bytes (plain or gzip); `path` names the source in errors.
pub fn parse_sample_annotations(
    path: &Path,
    bytes: Vec<u8>,
) -> Result<Vec<SampleAnnotation>, DataError> {
    sample_annotations_from_lines(path, Lines::from_bytes(bytes))
}

fn sample_annotations_from_lines(
    path: &Path,
    lines: Lines,
) -> Result<Vec<SampleAnnotation>, DataError> {
    headed_rows(path, lines, &SAMPLE_COLUMNS, |no, f, cols| {
        let real = |i: usize| {
            parse_finite(f[i]).ok_or_else(|| {
                DataError::line(
                    path,
                    no,
                    Some(cols[i] as u64 + 1),
                    format!("{} (a finite number)", SAMPLE_COLUMNS[i]),
                    show(f[i]),
                )
            })
        };
        Ok(SampleAnnotation {
            structure_id: uint_field(path, no, cols[0], "a structure id", f[0])?,
            slab_num: uint_field(path, no, cols[1], "a slab number", f[1])?,
            well_id: uint_field(path, no, cols[2], "a well id", f[2])?,
            slab_type: f[3].to_string(),
            structure_acronym: f[4].to_string(),
            structure_name: f[5].to_string(),
            polygon_id: uint_field(path, no, cols[6], "a polygon id", f[6])?,
            mri_voxel: [real(7)?, real(8)?, real(9)?],
            mni: [real(10)?, real(11)?, real(12)?],
        })
    })
}

/// One donor's metadata, read before streaming the expression.
struct Donor {
    name: String,
    expression: PathBuf,
    probes_path: PathBuf,
    probes: Vec<Probe>,
    samples: Vec<SampleAnnotation>,
}

fn donor_name(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Read one donor directory.
pub fn read_donor(dir: &Path, collapse: ProbeCollapse) -> Result<AllenExpression, DataError> {
    read_donors(&[dir.to_path_buf()], collapse)
}

/// Read several donor directories into one matrix (samples of `dirs[0]` first), with the donor
/// (directory name) as the sample group. All donors must list the same probes, in the same
/// order, with the same gene symbols (as in the real release).
pub fn read_donors(
    dirs: &[PathBuf],
    collapse: ProbeCollapse,
) -> Result<AllenExpression, DataError> {
    if dirs.is_empty() {
        return Err(DataError::Param("no donor directories given".into()));
    }
    let mut donors = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let name = donor_name(dir);
        if donors.iter().any(|d: &Donor| d.name == name) {
            return Err(DataError::Param(format!(
                "two donor directories are named {name:?}; donor names (and sample ids) would \
                 collide"
            )));
        }
        let probes_path = locate(dir, PROBES_FILE)?;
        let samples_path = locate(dir, SAMPLES_FILE)?;
        let expression = locate(dir, EXPRESSION_FILE)?;
        let probes = read_probes(&probes_path)?;
        let samples = read_sample_annotations(&samples_path)?;
        if let Some(first) = donors.first() {
            check_same_probes(first, &probes, &probes_path)?;
        }
        donors.push(Donor {
            name,
            expression,
            probes_path,
            probes,
            samples,
        });
    }
    assemble(&donors, collapse, |d| Lines::open(&d.expression))
}

/// One donor from the bytes of its three files (plain or gzip), named `donor`; errors name
/// the files by their usual names ([`PROBES_FILE`], [`SAMPLES_FILE`], [`EXPRESSION_FILE`]).
pub fn parse_donor(
    probes: Vec<u8>,
    samples: Vec<u8>,
    expression: Vec<u8>,
    collapse: ProbeCollapse,
) -> Result<AllenExpression, DataError> {
    let probes_path = PathBuf::from(PROBES_FILE);
    let donor = Donor {
        name: "donor".into(),
        expression: PathBuf::from(EXPRESSION_FILE),
        probes: parse_probes(&probes_path, probes)?,
        probes_path,
        samples: parse_sample_annotations(Path::new(SAMPLES_FILE), samples)?,
    };
    let mut expression = Some(expression);
    assemble(&[donor], collapse, |_| {
        Ok(Lines::from_bytes(expression.take().unwrap_or_default()))
    })
}

/// The matrix of donors whose annotations are read; `open` gives each donor's expression
/// lines, streamed in order.
fn assemble(
    donors: &[Donor],
    collapse: ProbeCollapse,
    mut open: impl FnMut(&Donor) -> Result<Lines, DataError>,
) -> Result<AllenExpression, DataError> {
    // Output rows and the probe -> row map, from the (common) probe list.
    let probes = &donors[0].probes;
    let mut row_of_probe: Vec<Option<usize>> = Vec::with_capacity(probes.len());
    let mut gene_ids = Vec::new();
    let mut gene_names = Vec::new();
    let mut probes_per_row = Vec::new();
    let mut dropped_probes = 0;
    match collapse {
        ProbeCollapse::None => {
            for (i, p) in probes.iter().enumerate() {
                row_of_probe.push(Some(i));
                gene_ids.push(p.probe_id.to_string());
                gene_names.push(p.gene_symbol.clone());
                probes_per_row.push(1);
            }
        }
        ProbeCollapse::MeanByGeneSymbol => {
            let mut row_of_symbol: HashMap<&str, usize> = HashMap::new();
            for p in probes {
                if p.gene_symbol.is_empty() {
                    row_of_probe.push(None);
                    dropped_probes += 1;
                    continue;
                }
                let row = *row_of_symbol.entry(&p.gene_symbol).or_insert_with(|| {
                    gene_ids.push(p.gene_symbol.clone());
                    gene_names.push(p.gene_name.clone());
                    probes_per_row.push(0);
                    gene_ids.len() - 1
                });
                probes_per_row[row] += 1;
                row_of_probe.push(Some(row));
            }
        }
    }
    let probe_index: HashMap<u64, usize> = probes
        .iter()
        .enumerate()
        .map(|(i, p)| (p.probe_id, i))
        .collect();

    let total: usize = donors.iter().map(|d| d.samples.len()).sum();
    let rows = gene_ids.len();
    if rows.checked_mul(total).is_none_or(|c| c > (1 << 34)) {
        return Err(DataError::Param(format!(
            "{rows} x {total} expression matrix is too large"
        )));
    }
    let mut out = Array2::<f64>::zeros((rows, total));
    let mut offset = 0;
    for d in donors {
        let s = d.samples.len();
        stream_expression(d, open(d)?, &probe_index, &row_of_probe, offset, &mut out)?;
        if collapse == ProbeCollapse::MeanByGeneSymbol {
            for (r, &k) in probes_per_row.iter().enumerate() {
                if k > 1 {
                    let row = out.row_mut(r).into_slice().expect("standard layout");
                    row[offset..offset + s]
                        .iter_mut()
                        .for_each(|v| *v /= k as f64);
                }
            }
        }
        offset += s;
    }

    let mut sample_ids = Vec::with_capacity(total);
    let mut group_codes = Vec::with_capacity(total);
    let mut samples = Vec::with_capacity(total);
    for (k, d) in donors.iter().enumerate() {
        for a in &d.samples {
            sample_ids.push(format!("{}/{}", d.name, a.well_id));
            group_codes.push(k as u32);
        }
        samples.extend(d.samples.iter().cloned());
    }
    let groups = Categorical::new(donors.iter().map(|d| d.name.clone()).collect(), group_codes)?;
    let data = ExpressionSet::new(out, gene_ids, sample_ids)?
        .with_gene_names(gene_names)?
        .with_groups(groups)?;
    Ok(AllenExpression {
        data,
        samples,
        probes_per_row,
        dropped_probes,
    })
}

fn check_same_probes(first: &Donor, probes: &[Probe], path: &Path) -> Result<(), DataError> {
    let differ = |message: String| {
        Err(DataError::Inconsistent {
            path: path.to_path_buf(),
            message,
        })
    };
    if probes.len() != first.probes.len() {
        return differ(format!(
            "{} probes, but {} lists {}; all donors must list the same probes",
            probes.len(),
            first.probes_path.display(),
            first.probes.len()
        ));
    }
    for (i, (a, b)) in first.probes.iter().zip(probes).enumerate() {
        if a.probe_id != b.probe_id || a.gene_symbol != b.gene_symbol {
            return differ(format!(
                "probe {} (data line {}) is {} ({:?}), but {} has {} ({:?}) there",
                i + 1,
                i + 2,
                b.probe_id,
                b.gene_symbol,
                first.probes_path.display(),
                a.probe_id,
                a.gene_symbol
            ));
        }
    }
    Ok(())
}

/// Stream one donor's `MicroarrayExpression.csv` (`lines`) into columns `offset..offset + s`
/// of `out` (`s` its samples), adding each probe's values to its output row.
fn stream_expression(
    donor: &Donor,
    mut lines: Lines,
    probe_index: &HashMap<u64, usize>,
    row_of_probe: &[Option<usize>],
    offset: usize,
    out: &mut Array2<f64>,
) -> Result<(), DataError> {
    let (path, probes_path) = (donor.expression.as_path(), donor.probes_path.as_path());
    let s = donor.samples.len();
    let mut seen_on: Vec<u64> = vec![0; row_of_probe.len()];
    let mut blank_since = None;
    while let Some((no, line)) = lines.next_line(path)? {
        if line.trim().is_empty() {
            blank_since.get_or_insert(no);
            continue;
        }
        if let Some(b) = blank_since {
            return Err(DataError::line(
                path,
                b,
                None,
                "a probe line (blank lines are allowed only at the end)",
                "a blank line",
            ));
        }
        let mut fields = line.split(',');
        let id_field = fields.next().expect("split yields at least one field");
        let Some(id) = parse_uint(id_field) else {
            return Err(DataError::line(
                path,
                no,
                Some(1),
                "a probe id (a non-negative integer; this file has no header)",
                show(id_field),
            ));
        };
        let Some(&i) = probe_index.get(&id) else {
            return Err(DataError::line(
                path,
                no,
                Some(1),
                format!("a probe id listed in {}", probes_path.display()),
                id.to_string(),
            ));
        };
        if seen_on[i] != 0 {
            return Err(DataError::line(
                path,
                no,
                Some(1),
                "a probe not seen before",
                format!("probe {id} again (first on line {})", seen_on[i]),
            ));
        }
        seen_on[i] = no;
        let row = row_of_probe[i];
        let mut target = row.map(|r| {
            let slice = out.row_mut(r).into_slice().expect("standard layout");
            &mut slice[offset..offset + s]
        });
        for j in 0..s {
            let Some(field) = fields.next() else {
                return Err(DataError::line(
                    path,
                    no,
                    None,
                    format!(
                        "{} comma-separated fields (probe id and {s} samples)",
                        s + 1
                    ),
                    format!("{} fields", j + 1),
                ));
            };
            let v = number(path, no, j + 2, field)?;
            if let Some(t) = target.as_deref_mut() {
                t[j] += v;
            }
        }
        if fields.next().is_some() {
            return Err(DataError::line(
                path,
                no,
                Some(s as u64 + 2),
                format!(
                    "{} comma-separated fields (probe id and one value per sample in \
                     SampleAnnot.csv)",
                    s + 1
                ),
                format!("{} fields", s + 2 + fields.count()),
            ));
        }
    }
    if let Some(i) = seen_on.iter().position(|&l| l == 0) {
        let missing = seen_on.iter().filter(|&&l| l == 0).count();
        let id = probe_index
            .iter()
            .find(|&(_, &k)| k == i)
            .map_or(0, |(&id, _)| id);
        return Err(DataError::Inconsistent {
            path: path.to_path_buf(),
            message: format!(
                "no expression line for {missing} probe(s) listed in {}, the first being probe {id}",
                probes_path.display()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;
    use std::io::Write;

    const PROBES: &str = "\"probe_id\",\"probe_name\",\"gene_id\",\"gene_symbol\",\"gene_name\",\"entrez_id\",\"chromosome\"\n\
        1058685,\"A_23_P20713\",729,\"C8G\",\"complement component 8, gamma polypeptide\",733,9\n\
        1058684,\"CUST_15185_PI416261804\",731,\"C9\",\"complement component 9\",735,5\n\
        1058683,\"A_32_P203917\",731,\"C9\",\"complement component 9\",735,5\n\
        1058682,\"CUST_1_PI0\",0,\"\",\"\",,\n";

    const SAMPLES: &str = "\"structure_id\",\"slab_num\",\"well_id\",\"slab_type\",\"structure_acronym\",\"structure_name\",\"polygon_id\",\"mri_voxel_x\",\"mri_voxel_y\",\"mri_voxel_z\",\"mni_x\",\"mni_y\",\"mni_z\"\n\
        4077,22,594,\"CX\",\"SFG-m\",\"superior frontal gyrus, left, medial bank of gyrus\",67,72,133,30,-9.7,55.2,32.1\n\
        4323,11,2985,\"CX\",\"PHG-its\",\"parahippocampal gyrus, left, inferior temporal sulcus\",1196,82,137,117,-26.5,-12.6,-30.4\n";

    // Probe rows in another order than Probes.csv, to check that ids (not positions) link them.
    const EXPRESSION: &str = "1058684,2.5,4\n1058685,1.25,-3\n1058682,9,9\n1058683,3.5,8\n";

    fn donor(root: &Path, name: &str, expression: &str) -> PathBuf {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(PROBES_FILE), PROBES).unwrap();
        std::fs::write(d.join(SAMPLES_FILE), SAMPLES).unwrap();
        std::fs::write(d.join(EXPRESSION_FILE), expression).unwrap();
        d
    }

    #[test]
    fn annotations_are_parsed_with_quotes_and_commas() {
        let dir = tempfile::tempdir().unwrap();
        let d = donor(dir.path(), "donor1", EXPRESSION);
        let probes = read_probes(&d.join(PROBES_FILE)).unwrap();
        assert_eq!(probes.len(), 4);
        assert_eq!(probes[0].probe_id, 1058685);
        assert_eq!(
            probes[0].gene_name,
            "complement component 8, gamma polypeptide"
        );
        assert_eq!(probes[0].chromosome, "9");
        assert_eq!(probes[3].gene_symbol, "");
        assert_eq!(probes[3].entrez_id, "");
        let s = read_sample_annotations(&d.join(SAMPLES_FILE)).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].well_id, 2985);
        assert_eq!(s[1].structure_acronym, "PHG-its");
        assert_eq!(
            s[0].structure_name,
            "superior frontal gyrus, left, medial bank of gyrus"
        );
        assert_eq!(s[0].mri_voxel, [72.0, 133.0, 30.0]);
        assert_eq!(s[1].mni, [-26.5, -12.6, -30.4]);
    }

    #[test]
    fn probes_are_kept_or_averaged_per_gene() {
        let dir = tempfile::tempdir().unwrap();
        let d = donor(dir.path(), "donor1", EXPRESSION);
        let p = read_donor(&d, ProbeCollapse::None).unwrap();
        assert_eq!(
            p.data.values(),
            &array![[1.25, -3.0], [2.5, 4.0], [3.5, 8.0], [9.0, 9.0]]
        );
        assert_eq!(
            p.data.gene_ids(),
            &["1058685", "1058684", "1058683", "1058682"]
        );
        assert_eq!(p.data.gene_names().unwrap(), &["C8G", "C9", "C9", ""]);
        assert_eq!(p.data.sample_ids(), &["donor1/594", "donor1/2985"]);
        assert_eq!(p.probes_per_row, vec![1; 4]);
        assert_eq!(p.dropped_probes, 0);

        let g = read_donor(&d, ProbeCollapse::MeanByGeneSymbol).unwrap();
        // C9 = mean of (2.5, 4) and (3.5, 8); the symbol-less probe is dropped.
        assert_eq!(g.data.values(), &array![[1.25, -3.0], [3.0, 6.0]]);
        assert_eq!(g.data.gene_ids(), &["C8G", "C9"]);
        assert_eq!(
            g.data.gene_names().unwrap(),
            &[
                "complement component 8, gamma polypeptide",
                "complement component 9"
            ]
        );
        assert_eq!(g.probes_per_row, vec![1, 2]);
        assert_eq!(g.dropped_probes, 1);
        assert_eq!(g.data.groups().unwrap().names(), &["donor1"]);
        assert_eq!(g.samples.len(), 2);
    }

    #[test]
    fn several_donors_become_one_matrix_grouped_by_donor() {
        let dir = tempfile::tempdir().unwrap();
        let a = donor(dir.path(), "donorA", EXPRESSION);
        let b = donor(
            dir.path(),
            "donorB",
            "1058685,10,20\n1058684,0,0\n1058683,1,1\n1058682,5,5\n",
        );
        // The second donor gzipped: same reading.
        for f in [PROBES_FILE, SAMPLES_FILE, EXPRESSION_FILE] {
            let raw = std::fs::read(b.join(f)).unwrap();
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(&raw).unwrap();
            std::fs::write(b.join(format!("{f}.gz")), enc.finish().unwrap()).unwrap();
            std::fs::remove_file(b.join(f)).unwrap();
        }
        let both = read_donors(&[a.clone(), b.clone()], ProbeCollapse::MeanByGeneSymbol).unwrap();
        assert_eq!(
            both.data.values(),
            &array![[1.25, -3.0, 10.0, 20.0], [3.0, 6.0, 0.5, 0.5]]
        );
        let groups = both.data.groups().unwrap();
        assert_eq!(groups.names(), &["donorA", "donorB"]);
        assert_eq!(groups.codes(), &[0, 0, 1, 1]);
        assert_eq!(groups.counts(), vec![2, 2]);
        assert_eq!(both.data.sample_ids()[2], "donorB/594");
        // Reading the donors one by one and concatenating gives the same content.
        let one = read_donor(&a, ProbeCollapse::MeanByGeneSymbol).unwrap();
        let two = read_donor(&b, ProbeCollapse::MeanByGeneSymbol).unwrap();
        let cat = ExpressionSet::concat_samples(&[&one.data, &two.data]).unwrap();
        assert_eq!(cat.content_id(), both.data.content_id());
        // The same directory twice is refused.
        assert!(matches!(
            read_donors(&[a.clone(), a], ProbeCollapse::None),
            Err(DataError::Param(_))
        ));
    }

    #[test]
    fn a_larger_donor_streams_correctly() {
        // 3,000 probes over 1,000 genes x 150 samples, rows shuffled: every gene mean checks.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("big");
        std::fs::create_dir_all(&d).unwrap();
        let (n_probes, s) = (3000usize, 150usize);
        let mut probes = String::from(
            "probe_id,probe_name,gene_id,gene_symbol,gene_name,entrez_id,chromosome\n",
        );
        for p in 0..n_probes {
            probes.push_str(&format!(
                "{},P{p},{},G{},gene {},{},1\n",
                100 + p,
                p % 1000,
                p % 1000,
                p % 1000,
                p % 1000
            ));
        }
        let mut samples = String::from(SAMPLES.lines().next().unwrap());
        samples.push('\n');
        for k in 0..s {
            samples.push_str(&format!("1,1,{k},CX,A,\"a, b\",1,0,0,0,0.5,0.5,0.5\n"));
        }
        let value = |p: usize, k: usize| ((p * 31 + k * 7) % 97) as f64 / 4.0;
        let mut expr = String::new();
        for q in 0..n_probes {
            let p = (q * 7) % n_probes; // 7 is coprime to 3000: a permutation
            expr.push_str(&(100 + p).to_string());
            for k in 0..s {
                expr.push_str(&format!(",{}", value(p, k)));
            }
            expr.push('\n');
        }
        std::fs::write(d.join(PROBES_FILE), probes).unwrap();
        std::fs::write(d.join(SAMPLES_FILE), samples).unwrap();
        std::fs::write(d.join(EXPRESSION_FILE), expr).unwrap();
        let g = read_donor(&d, ProbeCollapse::MeanByGeneSymbol).unwrap();
        assert_eq!(g.data.values().dim(), (1000, s));
        for gene in [0usize, 1, 499, 999] {
            assert_eq!(g.data.gene_ids()[gene], format!("G{gene}"));
            for k in [0usize, 77, 149] {
                let want = (0..3).map(|t| value(gene + 1000 * t, k)).sum::<f64>() / 3.0;
                assert!((g.data.values()[[gene, k]] - want).abs() < 1e-12);
            }
        }
        assert!(g.probes_per_row.iter().all(|&k| k == 3));
    }

    #[test]
    fn malformed_inputs_are_typed_and_located() {
        let dir = tempfile::tempdir().unwrap();
        let expr_cases: [(&str, &str); 7] = [
            (
                "1058684,2.5\n",
                "MicroarrayExpression.csv:1: expected 3 comma-separated fields",
            ),
            (
                "1058684,2.5,4,7\n",
                "MicroarrayExpression.csv:1:4: expected 3 comma-separated fields",
            ),
            (
                "1058684,2.5,x\n",
                "MicroarrayExpression.csv:1:3: expected a finite number, found \"x\"",
            ),
            (
                "probe,s1,s2\n",
                "MicroarrayExpression.csv:1:1: expected a probe id",
            ),
            (
                "1058684,1,1\n1058684,2,2\n",
                "MicroarrayExpression.csv:2:1: expected a probe not seen before",
            ),
            (
                "1058684,1,1\n777,2,2\n",
                "MicroarrayExpression.csv:2:1: expected a probe id listed in",
            ),
            (
                "1058684,1,1\n\n1058685,1,1\n",
                "MicroarrayExpression.csv:2: expected a probe line",
            ),
        ];
        for (i, (text, want)) in expr_cases.iter().enumerate() {
            let d = donor(dir.path(), &format!("e{i}"), text);
            let e = read_donor(&d, ProbeCollapse::None).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // A probe without expression.
        let d = donor(
            dir.path(),
            "short",
            "1058684,1,1\n1058685,1,1\n1058683,1,1\n",
        );
        let e = read_donor(&d, ProbeCollapse::None).unwrap_err();
        assert!(matches!(e, DataError::Inconsistent { .. }), "{e}");
        assert!(e.to_string().contains("probe 1058682"), "{e}");

        // Annotation files.
        let d = donor(dir.path(), "annot", EXPRESSION);
        let cases: [(&str, String, &str); 6] = [
            (
                PROBES_FILE,
                PROBES.replace("\"gene_symbol\"", "\"symbol\""),
                "Probes.csv:1: expected a header with a column `gene_symbol`",
            ),
            (
                PROBES_FILE,
                PROBES.replace("1058683,", "10x8683,"),
                "Probes.csv:4:1: expected a probe id",
            ),
            (
                PROBES_FILE,
                PROBES.replace("1058683,", "1058685,"),
                "Probes.csv:4:1: expected a probe id not used before",
            ),
            (
                PROBES_FILE,
                PROBES.replace(
                    "\"C9\",\"complement component 9\",735,5\n1058682",
                    "\"C9,\"x\",735,5\n1058682",
                ),
                "Probes.csv:4:",
            ),
            (
                SAMPLES_FILE,
                SAMPLES.replace(",-26.5,", ",west,"),
                "SampleAnnot.csv:3:11: expected mni_x (a finite number)",
            ),
            (
                SAMPLES_FILE,
                SAMPLES.replace("1196,82,137,117,-26.5,-12.6,-30.4", "1196"),
                "SampleAnnot.csv:3: expected at least 13 comma-separated fields",
            ),
        ];
        for (file, text, want) in cases {
            std::fs::write(d.join(file), &text).unwrap();
            let e = read_donor(&d, ProbeCollapse::None).unwrap_err().to_string();
            assert!(e.contains(want), "{file}: {e}");
            std::fs::write(d.join(PROBES_FILE), PROBES).unwrap();
            std::fs::write(d.join(SAMPLES_FILE), SAMPLES).unwrap();
        }
        // Donors listing different probes.
        let other = donor(dir.path(), "other", EXPRESSION);
        std::fs::write(other.join(PROBES_FILE), PROBES.replace("\"C8G\"", "\"C8\"")).unwrap();
        let e = read_donors(&[d.clone(), other.clone()], ProbeCollapse::None).unwrap_err();
        assert!(matches!(e, DataError::Inconsistent { .. }), "{e}");
        // A missing file names what was looked for.
        std::fs::remove_file(other.join(SAMPLES_FILE)).unwrap();
        let e = read_donor(&other, ProbeCollapse::None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("SampleAnnot.csv, SampleAnnot.csv.gz"), "{e}");
        assert!(read_donors(&[], ProbeCollapse::None).is_err());
    }
}
