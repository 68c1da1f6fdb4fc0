#![no_main]
//! The IDX parser must return a value or a typed error for every input, never panic.

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = dyad_datasets::formats::idx::parse_idx(Path::new("fuzz.idx"), data.to_vec()) {
        assert_eq!(a.data.len(), a.len() * a.kind.size());
    }
});
