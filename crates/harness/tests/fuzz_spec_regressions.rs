//! The `spec` fuzz target's regression inputs (`fuzz/regressions/spec/`: a minimised corpus and
//! every crash input found) replayed on stable Rust: the spec parser must return a spec or a
//! `SpecError` for each, never panic. Like the target, each input poses as
//! `experiments/oasis/fuzz.toml`, so an `extends` reads the real OASIS spec it names.

use dyad_harness::spec::LoadedSpec;
use std::path::Path;

#[test]
fn every_spec_regression_input_parses_or_fails_with_a_spec_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("fuzz/regressions/spec");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    let as_path = root.join("experiments/oasis/fuzz.toml");
    let mut failed = Vec::new();
    for file in files {
        let Ok(source) = String::from_utf8(std::fs::read(&file).expect("readable input")) else {
            continue; // the target skips what is not UTF-8, as `LoadedSpec::load` refuses it
        };
        if std::panic::catch_unwind(|| LoadedSpec::parse(&as_path, source)).is_err() {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "the spec parser panicked on: {failed:#?}"
    );
}
