#![no_main]
//! The MAT v5 reader must return a value or a typed error for every input, never panic, and
//! never allocate beyond what the input can justify.

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let _ = dyad_datasets::formats::mat::parse_mat(Path::new("fuzz.mat"), data);
});
