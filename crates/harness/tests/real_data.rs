//! The real-data providers against `$DYAD_DATA_DIR` (CI points it at the shared mirror and
//! sets `DYAD_REQUIRE_DATA`, so that a data set that should be there and is not is a failure,
//! not a skip; see `dyad_datasets::testdata`).

use dyad_core::LabeledSet;
use dyad_datasets::expression::ExpressionSet;
use dyad_datasets::testdata::real_dir;
use dyad_harness::data::{Data, DataContext, provider};
use std::path::Path;

/// A context over the real data directory with a fresh cache, if the data set is there.
fn ctx(
    sub: &str,
    what: &str,
    present: impl Fn(&Path) -> bool,
) -> Option<(tempfile::TempDir, DataContext)> {
    let dir = real_dir(sub, what, present)?;
    let cache = tempfile::tempdir().unwrap();
    let c = DataContext::new(
        dir.parent().unwrap().to_path_buf(),
        cache.path().to_path_buf(),
    );
    Some((cache, c))
}

fn load(
    c: &DataContext,
    name: &str,
    params: serde_json::Value,
) -> (dyad_harness::data::Resolved, std::sync::Arc<Data>) {
    let r = provider(name)
        .unwrap()
        .resolve(c, &params)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!r.synthetic, "{name} fell back to a stand-in: {}", r.note);
    assert!(r.note.contains("$DYAD_DATA_DIR/"), "{}", r.note);
    let d = (r.loader)().unwrap_or_else(|e| panic!("{name}: {e}"));
    (r, d)
}

#[test]
fn newsgroups_through_the_text_pipeline_and_the_mat_release() {
    let Some((_t, c)) = ctx("20newsgroups", "20 Newsgroups", |d| {
        d.join("20news-bydate.tar.gz").is_file() && d.join("20news_w1000.mat").is_file()
    }) else {
        return;
    };
    let (r, d) = load(
        &c,
        "20newsgroups",
        serde_json::json!({"pipeline": {"features": 1000}}),
    );
    let s = d.get::<LabeledSet>().unwrap();
    // 88 messages keep no selected term and are dropped (text pipeline's default).
    assert_eq!((s.n(), s.dim(), s.n_classes()), (18_758, 1000, 20));
    assert_eq!(
        r.identity,
        "cbfcb3be847c492f5d96f09e0138126399192f3ec21f493ed622ea394de411ec"
    );
    // The shape recorded with the identity is the data's.
    assert_eq!(r.shape.as_ref().map(|s| s.rows), Some(18_758));
    assert_eq!(
        r.shape.as_ref().map(|s| s.dropped.values().sum::<usize>()),
        Some(88)
    );

    let (r, d) = load(&c, "20newsgroups-w1000", serde_json::json!({}));
    let s = d.get::<LabeledSet>().unwrap();
    assert_eq!((s.n(), s.dim(), s.n_classes()), (18_745, 1000, 20));
    assert_eq!(
        r.identity,
        "57a8685be58d5919204fa464ce4f2108dcc8e775e743312e3e04fe741597787a"
    );
}

#[test]
fn prostate_is_the_kent_ridge_training_file() {
    let Some((_t, c)) = ctx("prostate", "the Kent Ridge prostate data", |d| {
        d.join("prostate_TumorVSNormal_train.data").is_file()
    }) else {
        return;
    };
    let (r, d) = load(&c, "prostate", serde_json::json!({}));
    let e = d.get::<ExpressionSet>().unwrap();
    assert_eq!((e.n_genes(), e.n_samples()), (12_600, 102));
    assert_eq!(
        r.identity,
        dyad_datasets::registry::dataset("prostate")
            .unwrap()
            .identity
            .unwrap()
    );
}

#[test]
fn mnist_identity_is_remembered_and_checked_on_load() {
    let Some((_t, c)) = ctx("mnist", "MNIST", |d| {
        matches!(
            dyad_datasets::mnist::locate(d),
            Ok(dyad_datasets::provider::Presence::Complete(_))
        )
    }) else {
        return;
    };
    let (r, d) = load(&c, "mnist", serde_json::json!({}));
    let s = d.get::<LabeledSet>().unwrap();
    assert_eq!((s.n(), s.dim()), (70_000, 784));
    assert_eq!(
        r.identity,
        dyad_datasets::registry::dataset("mnist")
            .unwrap()
            .identity
            .unwrap()
    );

    // A copy whose files are later altered without changing their size or mtime: the memo
    // answers without reading them (same identity, no error), and loading catches the change.
    let copy = tempfile::tempdir().unwrap();
    std::fs::create_dir(copy.path().join("mnist")).unwrap();
    for e in std::fs::read_dir(c.data_dir.join("mnist"))
        .unwrap()
        .flatten()
    {
        std::fs::copy(e.path(), copy.path().join("mnist").join(e.file_name())).unwrap();
    }
    let cache = tempfile::tempdir().unwrap();
    let cc = DataContext::new(copy.path().to_path_buf(), cache.path().to_path_buf());
    let first = provider("mnist")
        .unwrap()
        .resolve(&cc, &serde_json::json!({}))
        .unwrap();
    assert_eq!(first.identity, r.identity);
    assert!(cc.memo_path().is_file());
    let labels = std::fs::read_dir(copy.path().join("mnist"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("t10k-labels"))
        .unwrap();
    let meta = std::fs::metadata(&labels).unwrap();
    let mut bytes = std::fs::read(&labels).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&labels, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&labels).unwrap();
    f.set_modified(meta.modified().unwrap()).unwrap();
    drop(f);
    let cc = DataContext::new(copy.path().to_path_buf(), cache.path().to_path_buf());
    let again = provider("mnist")
        .unwrap()
        .resolve(&cc, &serde_json::json!({}))
        .unwrap();
    assert_eq!(again.identity, r.identity, "answered from the memo");
    // (A gzip file fails its checksum; a plain one its identity.)
    assert!((again.loader)().is_err());
}
