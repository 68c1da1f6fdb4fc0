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
    git_commit(&crates);
}

/// `DYAD_GIT_COMMIT`: the commit this build's source comes from, `+dirty` when a tracked file
/// of the build (`crates/`, `Cargo.toml`, `Cargo.lock`) differs from it, `unknown` outside a
/// git checkout. Provenance of every cell, read at build time: a run reports the code it
/// runs, not the state of the working tree when its first cell is stored.
fn git_commit(crates: &Path) {
    let root = crates.parent().unwrap();
    let git = |args: &[&str]| {
        // `--no-optional-locks`: `status` must not refresh the index, whose change would run
        // this script (and rebuild the crate) again at every build.
        std::process::Command::new("git")
            .arg("--no-optional-locks")
            .arg("-C")
            .arg(root)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "HEAD"]) {
        Some(c) if !c.is_empty() => {
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "crates",
                "Cargo.toml",
                "Cargo.lock",
            ])
            .is_some_and(|s| !s.is_empty());
            if dirty { format!("{c}+dirty") } else { c }
        }
        _ => "unknown".to_string(),
    };
    // A new commit, a checkout or a staged change runs this again, as does any edit under
    // crates/ (below) or of the manifests.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        // Only paths that exist: a missing one would make every build run this again.
        for f in ["HEAD", "index", "packed-refs", "refs/heads"] {
            let p = Path::new(&dir).join(f);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rerun-if-changed={}", crates.display());
    for f in ["Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    println!("cargo:rustc-env=DYAD_GIT_COMMIT={commit}");
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
