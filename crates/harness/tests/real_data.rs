//! The real-data providers against `$DYAD_DATA_DIR` (CI points it at the shared mirror; when
//! it is set, a data set that should be there and is not is a failure, not a skip).

use dyad_harness::data::{Data, DataContext, provider};
use std::path::PathBuf;

fn ctx() -> Option<(tempfile::TempDir, DataContext)> {
    let Some(dir) = std::env::var_os("DYAD_DATA_DIR") else {
        eprintln!("DYAD_DATA_DIR is not set: real-data provider checks skipped");
        return None;
    };
    let cache = tempfile::tempdir().unwrap();
    let c = DataContext::new(PathBuf::from(dir), cache.path().to_path_buf());
    Some((cache, c))
}

fn load(
    c: &DataContext,
    name: &str,
    params: &str,
) -> (dyad_harness::data::Resolved, std::sync::Arc<Data>) {
    let t: toml::Table = toml::from_str(params).unwrap();
    let r = (provider(name).unwrap().resolve)(c, &t).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!r.synthetic, "{name} fell back to a stand-in: {}", r.note);
    let d = (r.loader)().unwrap_or_else(|e| panic!("{name}: {e}"));
    (r, d)
}

#[test]
fn real_providers_read_the_mirror() {
    let Some((_cache, c)) = ctx() else { return };
    let (r, d) = load(&c, "20newsgroups", "pipeline = { features = 1000 }");
    let Data::Labeled(s) = &*d else {
        panic!("{}", d.kind())
    };
    assert_eq!((s.n(), s.dim(), s.n_classes()), (18_846, 1000, 20));
    assert_eq!(
        r.identity,
        "cbfcb3be847c492f5d96f09e0138126399192f3ec21f493ed622ea394de411ec"
    );

    let (r, d) = load(&c, "20newsgroups-w1000", "");
    let Data::Labeled(s) = &*d else {
        panic!("{}", d.kind())
    };
    assert_eq!((s.n(), s.dim(), s.n_classes()), (18_745, 1000, 20));
    assert_eq!(
        r.identity,
        "57a8685be58d5919204fa464ce4f2108dcc8e775e743312e3e04fe741597787a"
    );

    let (r, d) = load(&c, "prostate", "");
    let Data::Expression(e) = &*d else {
        panic!("{}", d.kind())
    };
    assert_eq!((e.n_genes(), e.n_samples()), (12_600, 102));
    assert_eq!(
        r.identity,
        dyad_datasets::registry::dataset("prostate")
            .unwrap()
            .identity
            .unwrap()
    );

    let (r, d) = load(&c, "mnist", "");
    let Data::Labeled(s) = &*d else {
        panic!("{}", d.kind())
    };
    assert_eq!((s.n(), s.dim()), (70_000, 784));
    assert_eq!(
        r.identity,
        dyad_datasets::registry::dataset("mnist")
            .unwrap()
            .identity
            .unwrap()
    );
    // The identity memo answers the second time without reading the data.
    let t = std::time::Instant::now();
    let again = (provider("mnist").unwrap().resolve)(&c, &toml::Table::new()).unwrap();
    assert_eq!(again.identity, r.identity);
    assert!(t.elapsed().as_millis() < 500);
}
