#![no_main]
//! The experiment spec parser (`LoadedSpec::parse`: TOML, `extends`, typed deserialisation,
//! structural validation) must return a spec or a `SpecError` for every UTF-8 input, never
//! panic. The input poses as `experiments/oasis/fuzz.toml` of this repository, so an `extends`
//! reads the real OASIS spec it names.

use dyad_harness::spec::LoadedSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(source) = std::str::from_utf8(data) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../experiments/oasis/fuzz.toml"
        );
        let _ = LoadedSpec::parse(std::path::Path::new(path), source.to_string());
    }
});
