//! The Kent Ridge prostate loader against the real files in `$DYAD_DATA_DIR/prostate` (when the
//! variable is set, a missing file is a failure, not a skip), and against damaged copies.

use dyad_datasets::DataError;
use dyad_datasets::prostate::{FILES, N_GENES, Prostate, locate, read_part};
use dyad_datasets::provider::Presence;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The real prostate directory, or `None` (test skipped; see `dyad_datasets::testdata`).
fn real_dir() -> Option<PathBuf> {
    dyad_datasets::testdata::real_dir("prostate", "the Kent Ridge prostate data", |d| {
        matches!(locate(d), Ok(Presence::Complete(_)))
    })
}

fn files(dir: &Path) -> [PathBuf; 2] {
    match locate(dir) {
        Ok(Presence::Complete(f)) => f.try_into().unwrap(),
        other => panic!("{other:?}"),
    }
}

fn gzip_to(src: &Path, dst: &Path) {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(src).unwrap()).unwrap();
    std::fs::write(dst, enc.finish().unwrap()).unwrap();
}

#[test]
fn real_files_have_the_published_counts_labels_and_values() {
    let Some(dir) = real_dir() else { return };
    let p = Prostate::load(&dir).unwrap();
    let (train, test) = (&p.train, &p.test);
    assert_eq!((train.n_genes(), train.n_samples()), (N_GENES, 102));
    assert_eq!((test.n_genes(), test.n_samples()), (N_GENES, 34));
    assert_eq!(train.gene_ids()[0], "col1");
    assert_eq!(train.gene_ids()[N_GENES - 1], "col12600");
    assert_eq!(train.sample_ids()[0], "train-1");
    assert_eq!(test.sample_ids()[33], "test-34");

    // Singh et al. (2002): 52 tumour + 50 normal training samples; the independent test set
    // has 25 tumour + 9 normal. Both files list the tumours first.
    for (set, tumor, normal) in [(train, 52, 50), (test, 25, 9)] {
        let l = set.labels().unwrap();
        assert_eq!(l.names(), &["Tumor", "Normal"]);
        assert_eq!(l.counts(), vec![tumor, normal]);
        assert_eq!(l.members(0), (0..tumor).collect::<Vec<_>>());
    }

    // Values as written in the files (first and last values of the first and last lines).
    let col = |set: &dyad_datasets::expression::ExpressionSet, s: usize| set.sample(s).to_vec();
    let first = col(train, 0);
    assert_eq!(
        &first[..10],
        &[-9.0, 1.0, 1.0, 15.0, -2.0, -3.0, 4.0, 8.0, -12.0, -12.0]
    );
    assert_eq!(
        &col(train, 101)[N_GENES - 5..],
        &[0.0, 5.0, -2.0, -8.0, 19.0]
    );
    assert_eq!(
        &col(test, 0)[..10],
        &[
            -12.0, 16.0, 37.0, 40.0, 269.0, 209.0, 197.0, 695.0, 748.0, 816.0
        ]
    );
    assert_eq!(
        &col(test, 33)[N_GENES - 5..],
        &[26.0, 53.0, -60.0, -80.0, 169.0]
    );
    // The first normal training sample (line 53) is the only one written with decimals.
    assert_eq!(&col(train, 52)[..5], &[-6.7, 6.1, -0.1, 11.9, 3.1]);
    let fractional = |set: &dyad_datasets::expression::ExpressionSet| -> Vec<(usize, usize)> {
        (0..set.n_samples())
            .map(|s| (s, set.sample(s).iter().filter(|v| v.fract() != 0.0).count()))
            .filter(|&(_, k)| k > 0)
            .collect()
    };
    assert_eq!(fractional(train), vec![(52, 11_386)]);
    assert!(fractional(test).is_empty());

    // Ranges and scale: the test set is on a roughly twelve times larger intensity scale.
    assert_eq!(train.value_range(), Some((-1807.0, 17530.0)));
    assert_eq!(test.value_range(), Some((-5536.0, 38660.0)));
    assert_eq!(train.values()[[22, 93]], 17530.0);
    assert_eq!(test.values()[[15, 10]], -5536.0);
    let mean = |set: &dyad_datasets::expression::ExpressionSet| set.values().mean().unwrap();
    assert!((mean(train) - 26.1919).abs() < 1e-3, "{}", mean(train));
    assert!((mean(test) - 308.2143).abs() < 1e-3, "{}", mean(test));

    let all = p.combined();
    assert_eq!(all.n_samples(), 136);
    assert_eq!(all.labels().unwrap().counts(), vec![77, 59]);
    assert_eq!(all.groups().unwrap().names(), &["train", "test"]);
    assert_eq!(all.groups().unwrap().counts(), vec![102, 34]);

    assert_eq!(
        train.content_id().0,
        "7396c99300d2304522fc463ad0a522993daf85bd7aaa45e2b289d346010ba675"
    );
    assert_eq!(
        test.content_id().0,
        "ab66cf5680f0cd674258f9421ae782269ca7ca218e05a615269ccbfa802926ea"
    );
}

#[test]
fn identity_survives_gzip() {
    let Some(dir) = real_dir() else { return };
    let [train, test] = files(&dir);
    let tmp = tempfile::tempdir().unwrap();
    gzip_to(&train, &tmp.path().join(format!("{}.gz", FILES[0])));
    gzip_to(&test, &tmp.path().join(format!("{}.gz", FILES[1])));
    let packed = files(tmp.path());
    assert!(packed[0].to_string_lossy().ends_with(".data.gz"));
    let a = Prostate::load(&dir).unwrap();
    let b = Prostate::load(tmp.path()).unwrap();
    assert_eq!(a.train.content_id(), b.train.content_id());
    assert_eq!(a.test.content_id(), b.test.content_id());
    assert_eq!(a.content_id(), b.content_id());
    assert_eq!(a, b);
    // The parts differ from each other.
    assert_ne!(a.train.content_id(), a.test.content_id());
}

#[test]
fn damaged_copies_give_errors_naming_file_line_and_field() {
    let Some(dir) = real_dir() else { return };
    let [train, _] = files(&dir);
    let text = std::fs::read_to_string(&train).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(FILES[0]);
    let with_line = |k: usize, new: &str| {
        let mut l = lines.clone();
        l[k] = new;
        l.join("\n") + "\n"
    };

    // A non-numeric value at line 7, field 5.
    let mut f: Vec<&str> = lines[6].split(',').collect();
    f[4] = "n/a";
    let joined = f.join(",");
    std::fs::write(&path, with_line(6, &joined)).unwrap();
    match read_part(&path, "x") {
        Err(DataError::Line {
            path: p,
            line,
            column,
            ..
        }) => {
            assert_eq!((p, line, column), (path.clone(), 7, Some(5)));
        }
        other => panic!("{other:?}"),
    }
    // A missing value (one field fewer) at line 40.
    let f: Vec<&str> = lines[39].split(',').collect();
    let joined = [&f[..100], &f[101..]].concat().join(",");
    std::fs::write(&path, with_line(39, &joined)).unwrap();
    let e = read_part(&path, "x").unwrap_err().to_string();
    assert!(
        e.contains(":40: expected 12601 comma-separated fields") && e.contains("found 12600"),
        "{e}"
    );
    // An unknown label on the last line.
    let last = lines[101].replace(",Normal", ",Benign");
    std::fs::write(&path, with_line(101, &last)).unwrap();
    let e = read_part(&path, "x").unwrap_err().to_string();
    assert!(
        e.contains(":102:12601: expected a class label (Tumor, Normal), found \"Benign\""),
        "{e}"
    );
    // A truncated gzip copy.
    let gz = tmp.path().join("cut.data.gz");
    gzip_to(&train, &gz);
    let bytes = std::fs::read(&gz).unwrap();
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(
        read_part(&gz, "x"),
        Err(DataError::Corrupt { .. })
    ));
}

#[test]
fn a_missing_directory_says_what_was_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Prostate::load(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("prostate_TumorVSNormal_train.data, prostate_TumorVSNormal_test.data"),
        "{e}"
    );
    // One file of the two: incomplete, naming the missing one (plain or gzipped).
    std::fs::write(tmp.path().join(FILES[0]), b"x").unwrap();
    let e = Prostate::load(tmp.path()).unwrap_err();
    assert!(matches!(e, DataError::Incomplete { .. }), "{e}");
    assert!(
        e.to_string().contains(
            "missing prostate_TumorVSNormal_test.data or prostate_TumorVSNormal_test.data.gz"
        ),
        "{e}"
    );
}
