use super::*;
use std::io::Write;

/// A small ontology, written as OBO:
///
/// ```text
///            R (GO:0000001, BP root)
///          /    \
///   A (is_a R)   B (is_a R)
///      \        /   \
///       C (is_a A, part_of B)   D (regulates B, is_a R)
///       |
///       E (is_a C), alt id GO:0000099
///   X obsolete, Y in molecular_function
/// ```
const OBO: &str = r#"format-version: 1.2
data-version: releases/2022-07-01
ontology: go

[Term]
id: GO:0000001
name: root process
namespace: biological_process
def: "The root! (an exclamation mark inside quotes is not a comment)" [GOC:x]

[Term]
id: GO:0000002
name: a
namespace: biological_process
is_a: GO:0000001 ! root process

[Term]
id: GO:0000003
name: b
namespace: biological_process
is_a: GO:0000001 ! root process

[Term]
id: GO:0000004
name: c
namespace: biological_process
is_a: GO:0000002 ! a
relationship: part_of GO:0000003 ! b

[Term]
id: GO:0000005
name: d
namespace: biological_process
is_a: GO:0000001
relationship: regulates GO:0000003 ! b

[Term]
id: GO:0000006
name: e
namespace: biological_process
alt_id: GO:0000099
is_a: GO:0000004 ! c

[Term]
id: GO:0000007
name: x
namespace: biological_process
is_obsolete: true

[Term]
id: GO:0000008
name: y
namespace: molecular_function

[Typedef]
id: part_of
name: part of
is_transitive: true
"#;

fn obo() -> Ontology {
    parse_obo_bytes(OBO.as_bytes().to_vec(), Path::new("test.obo")).unwrap()
}

fn idx(o: &Ontology, id: &str) -> u32 {
    o.find(id).unwrap()
}

#[test]
fn obo_terms_edges_alt_ids_and_obsolete_terms() {
    let o = obo();
    assert_eq!(o.len(), 7, "the obsolete term is dropped");
    assert_eq!(o.release, "releases/2022-07-01");
    assert!(o.find("GO:0000007").is_none());
    assert_eq!(o.find("GO:0000099"), o.find("GO:0000006"), "alt id");
    let c = idx(&o, "GO:0000004");
    assert_eq!(o.terms[c as usize].name, "c");
    assert_eq!(
        o.parents[c as usize],
        vec![
            (idx(&o, "GO:0000002"), Relation::IsA),
            (idx(&o, "GO:0000003"), Relation::PartOf)
        ]
    );
    let d = idx(&o, "GO:0000005");
    assert!(o.parents[d as usize].contains(&(idx(&o, "GO:0000003"), Relation::Regulates)));
    assert_eq!(
        o.terms[idx(&o, "GO:0000008") as usize].namespace,
        Namespace::MolecularFunction
    );
    assert!(o.terms[0].name == "root process");
}

#[test]
fn ancestors_follow_is_a_and_part_of_but_not_regulates() {
    let o = obo();
    let anc = o.ancestor_sets();
    let ids = |t: u32| -> Vec<&str> {
        anc[t as usize]
            .iter()
            .map(|&a| o.terms[a as usize].id.as_str())
            .collect()
    };
    assert_eq!(
        ids(idx(&o, "GO:0000006")),
        vec![
            "GO:0000001",
            "GO:0000002",
            "GO:0000003",
            "GO:0000004",
            "GO:0000006"
        ]
    );
    assert_eq!(ids(idx(&o, "GO:0000005")), vec!["GO:0000001", "GO:0000005"]);
    assert_eq!(ids(idx(&o, "GO:0000001")), vec!["GO:0000001"]);
    let under_b = o.descends_from(&anc, &[idx(&o, "GO:0000003")]);
    let names: Vec<&str> = (0..o.len())
        .filter(|&t| under_b[t])
        .map(|t| o.terms[t].name.as_str())
        .collect();
    assert_eq!(names, vec!["b", "c", "e"]);
}

#[test]
fn propagation_counts_and_information_content() {
    let o = obo();
    let anc = o.ancestor_sets();
    let (e, d, a) = (
        idx(&o, "GO:0000006"),
        idx(&o, "GO:0000005"),
        idx(&o, "GO:0000002"),
    );
    let ann = Annotations::from_pairs(
        vec![
            ("g1".into(), e),
            ("g2".into(), d),
            ("g3".into(), a),
            ("g1".into(), a),
        ],
        0,
        0,
        "test",
    );
    let prop = ann.propagated(&anc);
    assert_eq!(prop[0].len(), 5, "g1: e and its four ancestors");
    let counts = term_counts(o.len(), &prop);
    let root = idx(&o, "GO:0000001") as usize;
    assert_eq!(counts[root], 3);
    assert_eq!(counts[a as usize], 2);
    assert_eq!(counts[idx(&o, "GO:0000003") as usize], 1);
    let ic = information_content(&counts, 3);
    assert_eq!(ic[root], Some(0.0), "the root carries every gene: IC 0");
    assert!((ic[a as usize].unwrap() - (1.5f64).log10()).abs() < 1e-15);
    assert_eq!(ic[idx(&o, "GO:0000008") as usize], None);
}

#[test]
fn obo_errors_name_the_line() {
    let bad = OBO.replace("is_a: GO:0000004 ! c", "is_a: GO:0001234 ! missing");
    let e = parse_obo_bytes(bad.into_bytes(), Path::new("t.obo")).unwrap_err();
    let line = OBO
        .lines()
        .position(|l| l == "is_a: GO:0000004 ! c")
        .unwrap() as u64
        + 1;
    match e {
        DataError::Line { line: l, found, .. } => {
            assert_eq!(l, line);
            assert!(found.contains("GO:0001234"), "{found}");
        }
        other => panic!("{other}"),
    }
    let bad = OBO.replace(
        "namespace: molecular_function",
        "namespace: molecular_funktion",
    );
    let e = parse_obo_bytes(bad.into_bytes(), Path::new("t.obo")).unwrap_err();
    assert!(e.to_string().contains("molecular_funktion"), "{e}");
    // A cycle a -> c -> a.
    let bad = OBO.replace(
        "name: a\nnamespace: biological_process\nis_a: GO:0000001 ! root process",
        "name: a\nnamespace: biological_process\nis_a: GO:0000004",
    );
    let e = parse_obo_bytes(bad.into_bytes(), Path::new("t.obo")).unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
    let e = parse_obo_bytes(b"just text\n".to_vec(), Path::new("t.obo")).unwrap_err();
    assert!(matches!(e, DataError::Line { line: 1, .. }), "{e}");
}

#[test]
fn gzipped_obo_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("go-basic.obo.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(OBO.as_bytes()).unwrap();
    std::fs::write(&p, enc.finish().unwrap()).unwrap();
    let o = read_ontology(&p).unwrap();
    assert_eq!(o.terms, obo().terms);
    assert_eq!(o.parents, obo().parents);
}

/// The same ontology in Bioconductor's GO.db schema (with its "all" pseudo-term).
fn write_go_sqlite(path: &Path) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE metadata (name VARCHAR(80) PRIMARY KEY, value VARCHAR(255));
         INSERT INTO metadata VALUES ('GOSOURCEDATE', '2022-07-01');
         CREATE TABLE go_term (_id INTEGER PRIMARY KEY, go_id CHAR(10) NOT NULL UNIQUE,
             term VARCHAR(255) NOT NULL, ontology VARCHAR(9) NOT NULL, definition TEXT NULL);
         INSERT INTO go_term VALUES (1, 'all', 'all', 'universal', NULL);
         INSERT INTO go_term VALUES (11, 'GO:0000001', 'root process', 'BP', NULL);
         INSERT INTO go_term VALUES (12, 'GO:0000002', 'a', 'BP', NULL);
         INSERT INTO go_term VALUES (13, 'GO:0000003', 'b', 'BP', NULL);
         INSERT INTO go_term VALUES (14, 'GO:0000004', 'c', 'BP', NULL);
         INSERT INTO go_term VALUES (15, 'GO:0000005', 'd', 'BP', NULL);
         INSERT INTO go_term VALUES (16, 'GO:0000006', 'e', 'BP', NULL);
         INSERT INTO go_term VALUES (18, 'GO:0000008', 'y', 'MF', NULL);
         CREATE TABLE go_synonym (_id INTEGER NOT NULL, synonym VARCHAR(255) NOT NULL,
             secondary CHAR(10) NULL, like_go_id SMALLINT);
         INSERT INTO go_synonym VALUES (16, 'GO:0000099', 'GO:0000099', 1);
         INSERT INTO go_synonym VALUES (16, 'an e', NULL, 0);
         CREATE TABLE go_bp_parents (_id INTEGER NOT NULL, _parent_id INTEGER NOT NULL,
             relationship_type VARCHAR(7) NOT NULL);
         INSERT INTO go_bp_parents VALUES (11, 1, 'isa');
         INSERT INTO go_bp_parents VALUES (12, 11, 'isa');
         INSERT INTO go_bp_parents VALUES (13, 11, 'isa');
         INSERT INTO go_bp_parents VALUES (14, 12, 'isa');
         INSERT INTO go_bp_parents VALUES (14, 13, 'part of');
         INSERT INTO go_bp_parents VALUES (15, 11, 'isa');
         INSERT INTO go_bp_parents VALUES (15, 13, 'regulates');
         INSERT INTO go_bp_parents VALUES (16, 14, 'isa');
         CREATE TABLE go_mf_parents (_id INTEGER NOT NULL, _parent_id INTEGER NOT NULL,
             relationship_type VARCHAR(7) NOT NULL);
         INSERT INTO go_mf_parents VALUES (18, 1, 'isa');
         CREATE TABLE go_cc_parents (_id INTEGER NOT NULL, _parent_id INTEGER NOT NULL,
             relationship_type VARCHAR(7) NOT NULL);",
    )
    .unwrap();
}

#[test]
fn go_db_sqlite_reads_as_the_obo_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("GO.sqlite");
    write_go_sqlite(&p);
    let s = read_ontology(&p).unwrap();
    let o = obo();
    assert_eq!(s.release, "2022-07-01");
    assert_eq!(s.len(), o.len());
    for (t, term) in s.terms.iter().enumerate() {
        let u = o.find(&term.id).unwrap() as usize;
        assert_eq!(term, &o.terms[u]);
        let mut ps: Vec<(String, Relation)> = s.parents[t]
            .iter()
            .map(|&(p, r)| (s.terms[p as usize].id.clone(), r))
            .collect();
        let mut qs: Vec<(String, Relation)> = o.parents[u]
            .iter()
            .map(|&(p, r)| (o.terms[p as usize].id.clone(), r))
            .collect();
        ps.sort_by(|a, b| a.0.cmp(&b.0));
        qs.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(ps, qs, "parents of {}", term.id);
    }
    assert_eq!(s.find("GO:0000099"), s.find("GO:0000006"));
    // Not a GO.db file: an error naming the file.
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, b"SQLite format 3\0 but not really").unwrap();
    let e = read_ontology(&junk).unwrap_err();
    assert!(e.to_string().contains("junk.sqlite"), "{e}");
}

fn gaf_line(symbol: &str, qualifier: &str, go: &str, evidence: &str, aspect: &str) -> String {
    format!(
        "MGI\tMGI:1\t{symbol}\t{qualifier}\t{go}\tPMID:1\t{evidence}\t\t{aspect}\tname\t\tprotein\ttaxon:10090\t20120101\tMGI\t\t\n"
    )
}

#[test]
fn gaf_skips_negations_other_aspects_and_counts_unknown_terms() {
    let o = obo();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mgi.gaf");
    let mut text = String::from("!gaf-version: 2.2\n!comment\n");
    text += &gaf_line("Pvalb", "", "GO:0000006", "IDA", "P");
    text += &gaf_line("Pvalb", "involved_in", "GO:0000099", "IEA", "P"); // alt id of e
    text += &gaf_line("Calb1", "NOT|involved_in", "GO:0000005", "IDA", "P");
    text += &gaf_line("Calb1", "", "GO:0000005", "ISS", "P");
    text += &gaf_line("Calb1", "", "GO:0000008", "IDA", "F");
    text += &gaf_line("Calb2", "", "GO:0009999", "IDA", "P");
    std::fs::write(&p, &text).unwrap();
    let a = read_annotations(&p, &o, &AnnotationFilter::default()).unwrap();
    assert_eq!(a.genes, vec!["Calb1", "Pvalb"]);
    assert_eq!(
        a.direct,
        vec![vec![idx(&o, "GO:0000005")], vec![idx(&o, "GO:0000006")]]
    );
    assert_eq!((a.unknown_terms, a.negated), (1, 1));
    let f = AnnotationFilter {
        drop_evidence: vec!["ISS".into()],
        ..Default::default()
    };
    let a = read_gaf(&p, &o, &f).unwrap();
    assert_eq!(a.genes, vec!["Pvalb"]);
    let f = AnnotationFilter {
        namespace: Namespace::MolecularFunction,
        ..Default::default()
    };
    assert_eq!(read_gaf(&p, &o, &f).unwrap().genes, vec!["Calb1"]);
    // A short line is an error naming its line.
    std::fs::write(&p, format!("{text}MGI\tMGI:2\tX\n")).unwrap();
    match read_gaf(&p, &o, &AnnotationFilter::default()).unwrap_err() {
        DataError::Line { line, .. } => assert_eq!(line, 9),
        other => panic!("{other}"),
    }
}

#[test]
fn orgdb_sqlite_annotations() {
    let o = obo();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("org.Hs.eg.sqlite");
    let db = rusqlite::Connection::open(&p).unwrap();
    db.execute_batch(
        "CREATE TABLE gene_info (_id INTEGER NOT NULL UNIQUE, gene_name VARCHAR(255) NOT NULL,
             symbol VARCHAR(80) NOT NULL);
         INSERT INTO gene_info VALUES (1, 'parvalbumin', 'PVALB');
         INSERT INTO gene_info VALUES (2, 'calbindin 1', 'CALB1');
         CREATE TABLE go_bp (_id INTEGER NOT NULL, go_id CHAR(10) NOT NULL, evidence CHAR(3) NOT NULL);
         INSERT INTO go_bp VALUES (1, 'GO:0000006', 'IDA');
         INSERT INTO go_bp VALUES (1, 'GO:0000002', 'IEA');
         INSERT INTO go_bp VALUES (2, 'GO:0000005', 'TAS');
         INSERT INTO go_bp VALUES (2, 'GO:0001111', 'TAS');",
    )
    .unwrap();
    drop(db);
    let a = read_annotations(&p, &o, &AnnotationFilter::default()).unwrap();
    assert_eq!(a.genes, vec!["CALB1", "PVALB"]);
    assert_eq!(
        a.direct[1],
        vec![idx(&o, "GO:0000002"), idx(&o, "GO:0000006")]
    );
    assert_eq!(a.unknown_terms, 1);
}

/// The real ontology and human annotations, when installed (Debian `r-bioc-go.db`,
/// `r-bioc-org.hs.eg.db`) or in `$DYAD_DATA_DIR/go`; mandatory under `DYAD_REQUIRE_DATA`.
#[test]
fn real_gene_ontology_and_human_annotations() {
    let data = std::env::var_os("DYAD_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("datasets"));
    let onto_file = ontology_candidates(&data).into_iter().find(|p| p.is_file());
    let ann_file = annotation_candidates(&data)
        .into_iter()
        .find(|p| p.is_file());
    let (Some(onto_file), Some(ann_file)) = (onto_file, ann_file) else {
        if crate::testdata::required() {
            panic!(
                "DYAD_REQUIRE_DATA is set but the Gene Ontology is not installed (apt install r-bioc-go.db r-bioc-org.hs.eg.db, or go-basic.obo and a GAF in $DYAD_DATA_DIR/go)"
            );
        }
        eprintln!("SKIPPED: the Gene Ontology is not installed");
        return;
    };
    let o = read_ontology(&onto_file).unwrap();
    let bp = o
        .terms
        .iter()
        .filter(|t| t.namespace == Namespace::BiologicalProcess)
        .count();
    assert!(
        o.len() > 40_000 && bp > 25_000,
        "{} terms, {bp} BP",
        o.len()
    );
    let root = o.find(BP_ROOT).unwrap();
    let anc = o.ancestor_sets();
    // Every BP term reaches the BP root.
    for (t, term) in o.terms.iter().enumerate() {
        if term.namespace == Namespace::BiologicalProcess {
            assert!(anc[t].binary_search(&root).is_ok(), "{}", term.id);
        }
    }
    let synaptic = o.find("GO:0007268").unwrap(); // chemical synaptic transmission
    assert!(anc[synaptic as usize].contains(&o.find("GO:0099536").unwrap()));
    let a = read_annotations(&ann_file, &o, &AnnotationFilter::default()).unwrap();
    assert!(a.genes.len() > 15_000, "{} annotated genes", a.genes.len());
    let prop = a.propagated(&anc);
    let counts = term_counts(o.len(), &prop);
    assert_eq!(counts[root as usize] as usize, a.genes.len());
    let categories = (0..o.len())
        .filter(|&t| (15..=500).contains(&counts[t]))
        .count();
    // The paper: 2,081 categories of 15–500 imaged mouse genes (2012); human, 2022: more.
    assert!(
        (1_500..8_000).contains(&categories),
        "{categories} categories"
    );
    let roots: Vec<u32> = NEURAL_ROOTS.iter().map(|r| o.find(r).unwrap()).collect();
    let neural = o.descends_from(&anc, &roots);
    let n_neural = (0..o.len())
        .filter(|&t| neural[t] && (15..=500).contains(&counts[t]))
        .count();
    let frac = n_neural as f64 / categories as f64;
    eprintln!(
        "real GO ({}, {}): {} terms, {bp} BP; {} genes ({}); {categories} categories of 15-500 genes, {n_neural} neural ({:.1} %; paper 164 / 2081 = 7.9 %)",
        o.source,
        o.release,
        o.len(),
        a.genes.len(),
        a.source,
        100.0 * frac
    );
    assert!((0.03..0.2).contains(&frac), "neural fraction {frac}");
}
