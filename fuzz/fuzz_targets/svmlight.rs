#![no_main]
//! The svmlight reader must parse or return a typed line/column error, never panic; what it
//! parses must survive a write/read round trip.

use dyad_datasets::formats::svmlight::{SvmlightOptions, parse_svmlight, validate_for_write, write_svmlight_to};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.svm");
    if let Ok(d) = parse_svmlight(path, data, SvmlightOptions::default()) {
        if validate_for_write(&d).is_ok() {
            let mut out = Vec::new();
            write_svmlight_to(&mut out, &d, false).unwrap();
            let again = parse_svmlight(path, &out, SvmlightOptions::default()).unwrap();
            assert_eq!(again.labels.len(), d.labels.len());
            assert_eq!(again.x.nnz(), d.x.nnz());
        }
    }
});
