//! The entry points of the fuzz targets (`fuzz/`, cargo-fuzz on nightly) and of their
//! regression replay on stable (`tests/fuzz_regressions.rs`, over `fuzz/regressions/<target>/`):
//! each feeds arbitrary bytes to one reader of external input, which must return a value or a
//! typed [`DataError`](crate::DataError) and never panic. Where a reader has an invariant that
//! is cheap to state (a round trip, a size), it is asserted here too, so a violation is a crash
//! of the target.
//!
//! Readers that take several files get them from one input split at the byte `0xFF`, which
//! never occurs in UTF-8 text ([`parts`]).

use crate::formats::expr_text::{Lines, parse_finite, parse_uint, split_csv, split_tabs};
use std::path::Path;

/// What a fuzz target runs on each input.
pub type Target = fn(&[u8]);

/// Every target: its name (the fuzz target and the folder of its regression inputs) and the
/// function it runs on each input.
pub const TARGETS: &[(&str, Target)] = &[
    ("idx", idx),
    ("mat", mat),
    ("svmlight", svmlight),
    ("kentridge", kentridge),
    ("tar", tar),
    ("gct", gct),
    ("expr_text", expr_text),
    ("allen", allen),
    ("obo", obo),
    ("attributes", attributes),
    ("imagenet", imagenet),
    ("ish_index", ish_index),
];

/// The byte that separates the files of a multi-file input.
pub const SEPARATOR: u8 = 0xFF;

/// The first `N` parts of `data` split at [`SEPARATOR`] (missing parts are empty; the last
/// part keeps any further separators).
pub fn parts<const N: usize>(data: &[u8]) -> [Vec<u8>; N] {
    let mut out: [Vec<u8>; N] = std::array::from_fn(|_| Vec::new());
    for (slot, part) in out.iter_mut().zip(data.splitn(N, |&b| b == SEPARATOR)) {
        *slot = part.to_vec();
    }
    out
}

/// MNIST's IDX arrays: a parsed array holds exactly its announced elements.
pub fn idx(data: &[u8]) {
    use crate::formats::idx::parse_idx;
    if let Ok(a) = parse_idx(Path::new("fuzz.idx"), data.to_vec()) {
        assert_eq!(a.data.len(), a.len() * a.kind.size());
    }
}

/// MAT v5 (20 Newsgroups' 1,000-word packaging, ImageNet SBOW, the relative attributes), and
/// the 20 Newsgroups decoder of a parsed file.
pub fn mat(data: &[u8]) {
    let path = Path::new("fuzz.mat");
    if let Ok(m) = crate::formats::mat::parse_mat(path, data) {
        let _ = crate::newsgroups::w1000::NewsgroupsW1000::from_mat(path, &m);
    }
}

/// svmlight text; what parses and may be written survives a write/read round trip.
pub fn svmlight(data: &[u8]) {
    use crate::formats::svmlight::{
        SvmlightOptions, parse_svmlight, validate_for_write, write_svmlight_to,
    };
    let path = Path::new("fuzz.svm");
    if let Ok(d) = parse_svmlight(path, data, SvmlightOptions::default())
        && validate_for_write(&d).is_ok()
    {
        let mut out = Vec::new();
        write_svmlight_to(&mut out, &d, false).expect("writing to memory");
        let again = parse_svmlight(path, &out, SvmlightOptions::default())
            .expect("what was written parses again");
        assert_eq!(again.labels.len(), d.labels.len());
        assert_eq!(again.x.nnz(), d.x.nnz());
    }
}

/// The Kent Ridge CSV of the prostate data.
pub fn kentridge(data: &[u8]) {
    use crate::prostate::kentridge::{KentRidgeOptions, parse_kentridge};
    let _ = parse_kentridge(
        Path::new("fuzz.data"),
        data.to_vec(),
        &KentRidgeOptions::default(),
    );
}

/// The streaming tar reader (plain, or gzip by its magic bytes, as `NewsCorpus::read_tar`
/// detects it) and the 20 Newsgroups by-date layout read from it; a plain input is read a
/// second time with valid header checksums ([`with_tar_checksums`]).
pub fn tar(data: &[u8]) {
    use crate::newsgroups::NewsCorpus;
    let path = Path::new("fuzz.tar");
    if data.starts_with(&[0x1f, 0x8b]) {
        let dec = flate2::read::MultiGzDecoder::new(data);
        let _ = NewsCorpus::read_tar_stream(dec, path, true);
    } else {
        let _ = NewsCorpus::read_tar_stream(data, path, false);
        let _ = NewsCorpus::read_tar_stream(&with_tar_checksums(data)[..], path, false);
    }
}

/// `data` with a valid checksum in every non-zero 512-byte block, so that mutated headers get
/// past the checksum test to the fields behind it (data blocks get one too: their content is
/// arbitrary anyway).
pub fn with_tar_checksums(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    for block in v.chunks_exact_mut(512) {
        if block.iter().all(|&b| b == 0) {
            continue;
        }
        block[148..156].fill(b' ');
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }
    v
}

/// The Broad GCT, RES and CLS files (each reader on every input: the others fail at line 1).
pub fn gct(data: &[u8]) {
    use crate::formats::gct::{ClsNumbering, parse_cls, parse_gct, parse_res};
    let path = Path::new("fuzz.gct");
    if let Ok(set) = parse_gct(path, data.to_vec()) {
        assert_eq!(set.values().len(), set.n_genes() * set.n_samples());
    }
    if let Ok(res) = parse_res(path, data.to_vec()) {
        assert_eq!(res.calls.dim(), res.data.values().dim());
    }
    for numbering in [ClsNumbering::ByIndex, ClsNumbering::ByFirstAppearance] {
        let _ = parse_cls(path, data.to_vec(), numbering);
    }
}

/// The shared pieces of the expression text formats: lines (plain or gzip), CSV fields with
/// quotes, tab-separated fields, numbers. A line without quotes splits into its commas.
pub fn expr_text(data: &[u8]) {
    let path = Path::new("fuzz.csv");
    let mut lines = Lines::from_bytes(data.to_vec());
    while let Ok(Some((no, line))) = lines.next_line(path) {
        if let Ok(fields) = split_csv(path, no, line) {
            if !line.contains('"') {
                assert_eq!(fields.join(","), line);
            }
            for f in &fields {
                let _ = (parse_finite(f), parse_uint(f));
            }
        }
        for f in split_tabs(line, 2) {
            if let Some(v) = parse_finite(f) {
                assert!(v.is_finite());
            }
        }
    }
}

/// The Allen Human Brain Atlas CSV files: `Probes.csv`, `SampleAnnot.csv` and
/// `MicroarrayExpression.csv` (three parts), each annotation file alone, then the donor.
pub fn allen(data: &[u8]) {
    use crate::allen::{
        PROBES_FILE, ProbeCollapse, SAMPLES_FILE, parse_donor, parse_probes,
        parse_sample_annotations,
    };
    let [probes, samples, expression] = parts::<3>(data);
    let p = parse_probes(Path::new(PROBES_FILE), probes.clone());
    let s = parse_sample_annotations(Path::new(SAMPLES_FILE), samples.clone());
    if p.is_ok() && s.is_ok() {
        for collapse in [ProbeCollapse::None, ProbeCollapse::MeanByGeneSymbol] {
            if let Ok(e) = parse_donor(
                probes.clone(),
                samples.clone(),
                expression.clone(),
                collapse,
            ) {
                assert_eq!(e.data.n_samples(), e.samples.len());
                assert_eq!(e.data.n_genes(), e.probes_per_row.len());
            }
        }
    }
}

/// The Gene Ontology's OBO file, then a GAF annotation file (second part) against it (or
/// against a two-term ontology when the first part does not parse).
pub fn obo(data: &[u8]) {
    use crate::go::{AnnotationFilter, Namespace, parse_gaf_bytes, parse_obo_bytes};
    const TWO_TERMS: &[u8] = b"format-version: 1.2\n\n[Term]\nid: GO:0000001\nname: a\n\
        namespace: biological_process\n\n[Term]\nid: GO:0000002\nname: b\n\
        namespace: biological_process\nis_a: GO:0000001\n";
    let [obo, gaf] = parts::<2>(data);
    let onto = parse_obo_bytes(obo, Path::new("fuzz.obo"))
        .or_else(|_| parse_obo_bytes(TWO_TERMS.to_vec(), Path::new("two.obo")))
        .expect("the two-term ontology parses");
    if onto.topological_order().is_ok() {
        let _ = onto.ancestor_sets();
    }
    for namespace in [Namespace::BiologicalProcess, Namespace::MolecularFunction] {
        let filter = AnnotationFilter {
            namespace,
            ..AnnotationFilter::default()
        };
        let _ = parse_gaf_bytes(gaf.clone(), Path::new("fuzz.gaf"), &onto, &filter);
    }
}

/// The tensor-ranking paper's MAT readers: the relative-attributes `data.mat` (OSR, PubFig,
/// Shoes) and the features + labels file (ETH-80 HOG).
pub fn attributes(data: &[u8]) {
    use crate::pair_ranking::attributes::{features_labels_from_mat, relative_attributes_from_mat};
    let path = Path::new("fuzz.mat");
    if let Ok(m) = crate::formats::mat::parse_mat(path, data) {
        for read in [relative_attributes_from_mat, features_labels_from_mat] {
            if let Ok(set) = read(path, &m) {
                assert_eq!(set.x.nrows(), set.group.len());
            }
        }
    }
}

/// ImageNet's `meta.mat` (the synset hierarchy) and an SBOW file of 1,000 visual words.
pub fn imagenet(data: &[u8]) {
    use crate::imagenet::{meta_from_mat, sbow_from_mat};
    let path = Path::new("fuzz.mat");
    if let Ok(m) = crate::formats::mat::parse_mat(path, data) {
        let _ = meta_from_mat(path, &m);
        let _ = sbow_from_mat(path, &m, 1000);
    }
}

/// The Allen mouse ISH index `images.csv`.
pub fn ish_index(data: &[u8]) {
    let _ = crate::ish::allen::parse_index(Path::new("ish"), data.to_vec());
}
