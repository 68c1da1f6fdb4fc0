//! Fingerprints the source of every crate whose code can change a result, so that a cell's
//! cache key changes exactly when the code that computed it changes.
//!
//! A file's fingerprint hashes its *token stream* (proc-macro2), not its bytes: comments, doc
//! comments, formatting and `#[cfg(test)]` items do not count. The table is written to
//! `$OUT_DIR/fingerprints.rs` as `(path relative to crates/, hex sha256)` pairs.

#[path = "src/srchash.rs"]
mod srchash;

use srchash::fingerprint;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &["core/src", "algorithms/src", "datasets/src", "harness/src"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let crates = manifest.parent().unwrap().to_path_buf();
    let mut files = Vec::new();
    for root in ROOTS {
        let dir = crates.join(root);
        println!("cargo:rerun-if-changed={}", dir.display());
        collect(&dir, &mut files);
    }
    files.sort();
    let mut out = String::from("pub static SOURCE_FINGERPRINTS: &[(&str, &str)] = &[\n");
    for f in files {
        let rel = f
            .strip_prefix(&crates)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&f).unwrap();
        writeln!(out, "    ({rel:?}, {:?}),", fingerprint(&text)).unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("fingerprints.rs");
    std::fs::write(dest, out).unwrap();
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}
