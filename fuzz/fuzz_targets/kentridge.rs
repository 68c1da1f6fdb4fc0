#![no_main]
//! The Kent Ridge CSV reader (prostate data) must parse or return a typed line/field error,
//! never panic.

use dyad_datasets::prostate::kentridge::{KentRidgeOptions, parse_kentridge};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let _ = parse_kentridge(Path::new("fuzz.data"), data.to_vec(), &KentRidgeOptions::default());
});
