//! The fuzz targets' regression inputs (`fuzz/regressions/<target>/`: a minimised corpus and
//! every crash input found) replayed on stable Rust: each reader must return a value or a typed
//! error for every one of them, never panic (`dyad_datasets::fuzzing`, `fuzz/README.md`).

use dyad_datasets::fuzzing::TARGETS;
use std::path::{Path, PathBuf};

/// The regression inputs of `target`, sorted by name.
fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_regression_input_parses_or_fails_with_a_typed_error() {
    let mut failed = Vec::new();
    for (target, run) in TARGETS {
        let files = inputs(target);
        assert!(
            !files.is_empty(),
            "no regression inputs for target `{target}`"
        );
        for file in files {
            let data = std::fs::read(&file).expect("readable regression input");
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                failed.push(file.display().to_string());
            }
        }
    }
    assert!(failed.is_empty(), "readers panicked on: {failed:#?}");
}
