//! 20 Newsgroups against the real bydate tarball in `$DYAD_DATA_DIR/20newsgroups` (CI points
//! it at the shared mirror; when the variable is set, a missing file is a failure, not a
//! skip): counts, class names, packing-independent identity, and the LORETA §5.1 pipeline
//! end to end.

use dyad_core::Partition;
use dyad_datasets::formats::tar::TarReader;
use dyad_datasets::newsgroups::{NEWSGROUPS, NewsCorpus, TEST_DIR, TRAIN_DIR};
use dyad_datasets::pipelines::text::TextPipeline;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// The real tarball, or `None` (test skipped; see `dyad_datasets::testdata`).
fn tarball() -> Option<PathBuf> {
    dyad_datasets::testdata::real_dir("20newsgroups", "20news-bydate.tar.gz", |d| {
        d.join("20news-bydate.tar.gz").is_file()
    })
    .map(|d| d.join("20news-bydate.tar.gz"))
}

/// The corpus, read once for all tests of this file.
fn corpus() -> Option<&'static NewsCorpus> {
    static CORPUS: OnceLock<NewsCorpus> = OnceLock::new();
    let p = tarball()?;
    Some(CORPUS.get_or_init(|| {
        let t = Instant::now();
        let c = NewsCorpus::read_tar(&p).unwrap();
        eprintln!("read {} messages in {:.2?}", c.len(), t.elapsed());
        c
    }))
}

#[test]
fn real_tarball_has_the_published_counts_and_names() {
    let Some(c) = corpus() else { return };
    assert_eq!(c.split_sizes(), (11_314, 7_532));
    assert_eq!(c.class_names, NEWSGROUPS);
    let counts = c.class_counts();
    let train: Vec<usize> = counts.iter().map(|p| p.0).collect();
    let test: Vec<usize> = counts.iter().map(|p| p.1).collect();
    assert_eq!(
        train,
        [
            480, 584, 591, 590, 578, 593, 585, 594, 598, 597, 600, 595, 591, 594, 593, 599, 546,
            564, 465, 377
        ]
    );
    assert_eq!(
        test,
        [
            319, 389, 394, 392, 385, 395, 390, 396, 398, 397, 399, 396, 393, 396, 394, 398, 364,
            376, 310, 251
        ]
    );
    let first = &c.messages[0];
    assert_eq!(
        (c.class_of(first), first.partition, first.id.as_str()),
        ("alt.atheism", Partition::Train, "49960")
    );
    assert!(
        first
            .text
            .starts_with("From: mathew <mathew@mantis.co.uk>\n")
    );
    // Raw latin-1 bytes decode to the code points of the same value.
    let non_ascii = c.messages.iter().filter(|m| !m.text.is_ascii()).count();
    assert_eq!(non_ascii, 37);
    assert_eq!(
        c.content_id().0,
        "cbfcb3be847c492f5d96f09e0138126399192f3ec21f493ed622ea394de411ec",
        "content identity of the decoded corpus"
    );
}

#[test]
fn identity_is_the_same_for_the_tarball_and_an_unpacked_copy() {
    let Some(path) = tarball() else { return };
    let c = corpus().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // Unpack with the crate's own tar reader, in reverse archive order.
    let file = std::fs::File::open(&path).unwrap();
    let dec = flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file));
    let mut entries: Vec<_> = TarReader::new(dec, &path, true)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    entries.reverse();
    let mut files = 0;
    for e in entries {
        let target = tmp.path().join(&e.path);
        if e.path.ends_with('/') {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, &e.data).unwrap();
            files += 1;
        }
    }
    assert_eq!(files, 18_846);
    assert!(tmp.path().join(TRAIN_DIR).is_dir() && tmp.path().join(TEST_DIR).is_dir());
    let unpacked = NewsCorpus::load(tmp.path()).unwrap();
    assert_eq!(unpacked.content_id(), c.content_id());
    assert_eq!(&unpacked, c);
}

#[test]
fn the_loreta_pipeline_end_to_end() {
    let Some(c) = corpus() else { return };
    let p = TextPipeline::default();
    let t = Instant::now();
    let f = p.run(c).unwrap();
    let elapsed = t.elapsed();
    eprintln!(
        "pipeline: {} documents x {} features, nnz {}, in {:.2?}; {} candidate terms, \
         vocabulary {}",
        f.set.n(),
        f.set.dim(),
        f.set.x.nnz(),
        elapsed,
        f.fitted.candidates,
        f.fitted.vocabulary
    );
    eprintln!(
        "top IG terms: {:?}",
        f.fitted
            .terms
            .iter()
            .zip(&f.fitted.info_gain)
            .take(20)
            .map(|(t, g)| format!("{t} {g:.4}"))
            .collect::<Vec<_>>()
    );
    // 18,846 messages, of which 47 training and 41 test messages keep no selected term and
    // are dropped (the pipeline's default).
    assert_eq!(
        (f.set.n(), f.set.dim(), f.set.n_classes()),
        (18_758, 1_000, 20)
    );
    assert_eq!(f.dropped_empty, (47, 41));
    assert_eq!(f.fitted.n_train, 11_314);
    // Distinct training terms (letters only, >= 2 letters, lowercased) less the stop list.
    assert_eq!(f.fitted.candidates, 85_492);
    assert_eq!(f.fitted.vocabulary, 50_000);
    assert!(f.fitted.info_gain.windows(2).all(|w| w[0] >= w[1]));
    for (i, row) in f.set.x.outer_iterator().enumerate() {
        let n2: f64 = row.data().iter().map(|v| v * v).sum();
        assert!(row.nnz() > 0, "row {i} is empty");
        assert!((n2 - 1.0).abs() < 1e-12, "row {i}: squared norm {n2}");
        assert!(row.data().iter().all(|&v| v > 0.0));
    }
    let audit = f.set.row_audit();
    eprintln!("rows: {}", audit.summary());
    assert_eq!((audit.empty, audit.not_unit_norm), (0, 0));
    assert_eq!(
        &f.fitted.terms[..5],
        ["god", "windows", "dod", "government", "team"]
    );
    assert!(elapsed.as_secs_f64() < 10.0, "pipeline took {elapsed:?}");
    // Deterministic: a second run gives the same features and identity.
    assert_eq!(p.run(c).unwrap(), f);
}
