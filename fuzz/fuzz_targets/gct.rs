#![no_main]
//! `dyad_datasets::fuzzing::gct`: the reader must return a value or a typed error for every
//! input, never panic (what it reads and checks is documented there).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| dyad_datasets::fuzzing::gct(data));
