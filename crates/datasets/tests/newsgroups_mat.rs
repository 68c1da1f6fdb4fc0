//! `20news_w1000.mat` against the real file in `$DYAD_DATA_DIR/20newsgroups` (when the
//! variable is set, a missing file is a failure, not a skip). The expected numbers were
//! established with an independent throw-away parser (Python `struct` + `zlib`), not with the
//! reader under test.

use dyad_datasets::formats::mat::{MatValue, WriteOptions, parse_mat, read_mat, write_mat};
use dyad_datasets::newsgroups::w1000::{NewsgroupsW1000, locate};
use std::path::{Path, PathBuf};

fn real_file() -> Option<PathBuf> {
    dyad_datasets::testdata::real_dir("20newsgroups", "20news_w1000.mat", |d| locate(d).is_ok())
        .map(|d| d.join(dyad_datasets::newsgroups::w1000::FILE_NAME))
}

#[test]
fn real_file_holds_the_documented_variables() {
    let Some(path) = real_file() else { return };
    let m = read_mat(&path).unwrap();
    assert!(!m.big_endian);
    assert!(
        m.header_text.starts_with(
            "MATLAB 5.0 MAT-file, Platform: GLNX86, Created on: Fri Jun 25 13:27:59 2010"
        ),
        "{}",
        m.header_text
    );
    let described: Vec<(&str, String)> = m
        .variables
        .iter()
        .map(|(n, v)| (n.as_str(), v.describe()))
        .collect();
    assert_eq!(
        described,
        vec![
            ("num_class", "double [1x1]".to_string()),
            ("vocab", "cell [1x1000]".to_string()),
            ("trainW", "sparse [11256x1000]".to_string()),
            ("trainC", "sparse [11256x20]".to_string()),
            ("testW", "sparse [7489x1000]".to_string()),
            ("testC", "sparse [7489x20]".to_string()),
            ("class_names", "cell [20x1]".to_string()),
        ]
    );
    assert_eq!(m.get("num_class").unwrap().scalar(), Some(20.0));
    let MatValue::Sparse { re, logical, .. } = m.get("trainW").unwrap() else {
        panic!()
    };
    assert!(!logical);
    assert_eq!(re.len(), 329_602);
    assert_eq!(re.iter().sum::<f64>(), 584_889.0);
    assert_eq!(re.iter().cloned().fold(0.0, f64::max), 302.0);
    assert!(re.iter().all(|v| v.fract() == 0.0 && *v >= 1.0));
}

#[test]
fn real_file_decodes_to_the_published_split() {
    let Some(path) = real_file() else { return };
    let n = NewsgroupsW1000::load(&path).unwrap();
    assert_eq!(
        (n.train_counts.rows(), n.test_counts.rows()),
        (11_256, 7_489)
    );
    assert_eq!(n.n_words(), 1000);
    assert_eq!(
        (n.train_counts.nnz(), n.test_counts.nnz()),
        (329_602, 216_777)
    );
    assert_eq!(n.test_counts.data().iter().sum::<f64>(), 376_505.0);
    assert_eq!(n.class_names.len(), 20);
    assert_eq!(n.class_names[0], "alt.atheism");
    assert_eq!(n.class_names[2], "comp.os.ms-windows.misc");
    assert_eq!(n.class_names[19], "talk.religion.misc");
    let mut per_class = [0usize; 20];
    n.train_labels
        .iter()
        .for_each(|&l| per_class[l as usize] += 1);
    assert_eq!(
        per_class,
        [
            480, 580, 572, 587, 575, 591, 580, 591, 596, 594, 597, 594, 590, 593, 593, 598, 545,
            562, 463, 375
        ]
    );
    let mut per_class = [0usize; 20];
    n.test_labels
        .iter()
        .for_each(|&l| per_class[l as usize] += 1);
    assert_eq!(
        per_class,
        [
            317, 388, 391, 392, 383, 390, 378, 395, 397, 397, 398, 395, 393, 390, 392, 397, 362,
            374, 309, 251
        ]
    );
    assert_eq!(n.vocab.len(), 1000);
    assert_eq!(
        n.vocab[0],
        vec!["windows", "window", "windowed", "windowing"]
    );
    assert_eq!(
        n.vocab[999],
        vec!["hawking", "hawkes", "hawk", "hawke", "hawks"]
    );
    assert_eq!(n.vocab.iter().map(Vec::len).sum::<usize>(), 3280);
    // Sparse: about 29 distinct words per document out of 1000, no empty document.
    assert!(n.train_counts.outer_iterator().all(|r| r.nnz() > 0));
    let set = n.to_labeled_set(true);
    assert_eq!((set.n(), set.dim(), set.n_classes()), (18_745, 1000, 20));
    let density = set.x.nnz() as f64 / (set.n() * set.dim()) as f64;
    assert!(density < 0.05, "density {density}");
    for row in set.x.outer_iterator() {
        let s: f64 = row.data().iter().map(|v| v * v).sum();
        assert!((s - 1.0).abs() < 1e-12);
    }
}

#[test]
fn real_identity_is_stable_and_survives_repacking() {
    let Some(path) = real_file() else { return };
    let a = NewsgroupsW1000::load(&path).unwrap();
    let id = a.content_id();
    assert_eq!(id, NewsgroupsW1000::load(&path).unwrap().content_id());
    // Regression pin: a change here means the decoded content (or its hashing) changed.
    assert_eq!(
        id.0,
        "57a8685be58d5919204fa464ce4f2108dcc8e775e743312e3e04fe741597787a"
    );
    // Rewrite every variable uncompressed, big-endian, with unnarrowed storage.
    let m = read_mat(&path).unwrap();
    let bytes = write_mat(
        "repacked",
        &m.variables,
        WriteOptions {
            big_endian: true,
            ..Default::default()
        },
    )
    .unwrap();
    let p = Path::new("repacked.mat");
    let b = NewsgroupsW1000::from_mat(p, &parse_mat(p, &bytes).unwrap()).unwrap();
    assert_eq!(b.content_id(), id);
}

#[test]
fn damaged_real_file_gives_typed_errors() {
    use dyad_datasets::DataError;
    let Some(path) = real_file() else { return };
    let bytes = std::fs::read(&path).unwrap();
    let p = Path::new("damaged.mat");
    // Truncated in the middle of the big trainW element: its tag claims more than is left.
    match parse_mat(p, &bytes[..bytes.len() / 2]) {
        Err(DataError::Format { offset, .. }) => assert!(offset < bytes.len() as u64 / 2),
        other => panic!("{other:?}"),
    }
    // Scrambled compressed bytes inside trainW (the third top-level element).
    let mut bad = bytes.clone();
    for b in &mut bad[400_000..400_064] {
        *b ^= 0x5a;
    }
    assert!(matches!(
        parse_mat(p, &bad),
        Err(DataError::Corrupt { .. } | DataError::Format { .. })
    ));
}
