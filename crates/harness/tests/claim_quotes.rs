//! Every claim of a paper carries the paper's words: its `quote` must occur in the paper's
//! seed text (`../shared/seeds` beside the repository), in the version its `section` names,
//! after the normalisation of `dyad_harness::spec::quotes` (letters and digits only, lowercased,
//! ligatures spelled out). Without the seeds the tests skip and say so, unless
//! `DYAD_REQUIRE_DATA` is set (CI has `../shared`), where that is a failure.

use dyad_harness::spec::quotes::{check_quote, load_seeds};
use dyad_harness::spec::{LoadedSpec, Origin, discover};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The seed directory, or `None` (skip) when it is absent and not required.
fn seeds_dir() -> Option<PathBuf> {
    let dir = root().join("../shared/seeds");
    if dir.is_dir() {
        return Some(dir);
    }
    if dyad_datasets::testdata::required() {
        panic!(
            "DYAD_REQUIRE_DATA is set but the papers' seed texts are not in {}",
            dir.display()
        );
    }
    eprintln!(
        "SKIPPED: the papers' seed texts are not in {} (DYAD_REQUIRE_DATA=1 makes this a failure)",
        dir.display()
    );
    None
}

fn specs() -> Vec<LoadedSpec> {
    discover(&root().join("experiments"))
        .unwrap()
        .iter()
        .map(|p| LoadedSpec::load(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn every_claim_of_a_paper_quotes_its_paper() {
    let Some(dir) = seeds_dir() else { return };
    let mut failures = Vec::new();
    let mut checked = 0;
    for spec in specs() {
        let seeds = load_seeds(&dir, &spec.spec.paper).unwrap_or_else(|e| panic!("{e}"));
        for c in &spec.spec.claims {
            if c.origin == Origin::Ours {
                continue;
            }
            let (quote, section) = (c.quote.as_deref(), c.section.as_deref());
            let (Some(q), Some(s)) = (quote, section) else {
                failures.push(format!("{} [{}]: no quote or section", spec.id, c.id));
                continue;
            };
            checked += 1;
            if let Err(e) = check_quote(q, s, &seeds) {
                failures.push(format!("{} [{}] ({s}): {e}: \"{q}\"", spec.id, c.id));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} quotes are not the papers' words:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 100, "only {checked} claims of the papers");
}

/// The check can fail: a made-up sentence, a real one with a word changed, and a real one
/// attributed to the wrong version of its paper are refused.
#[test]
fn a_made_up_quote_is_refused() {
    let Some(dir) = seeds_dir() else { return };
    let loreta = load_seeds(&dir, "loreta").unwrap();
    let real = "also improves retrieval precision by 33% as compared with training a full rank \
                model over pre-selected most informative features";
    assert_eq!(check_quote(real, "NIPS §1", &loreta), Ok(()));
    assert_eq!(check_quote(real, "JMLR §1", &loreta), Ok(()));
    let changed = real.replace("33%", "50%");
    assert!(check_quote(&changed, "NIPS §1", &loreta).is_err());
    let made_up = "LORETA is two orders of magnitude faster than every other method we tried";
    assert!(check_quote(made_up, "JMLR §7.1.5", &loreta).is_err());
    // Only the JMLR version compares with naive PSD gradient descent.
    let jmlr_only = "This approach was more stable in the PSD case than in the general case";
    assert_eq!(check_quote(jmlr_only, "JMLR §7.1.4", &loreta), Ok(()));
    let e = check_quote(jmlr_only, "NIPS §5.1", &loreta).unwrap_err();
    assert!(e.contains("JMLR"), "{e}");
    // Another paper's words are not this paper's.
    let aroma = load_seeds(&dir, "aroma").unwrap();
    assert!(check_quote(real, "§5", &aroma).is_err());
}
