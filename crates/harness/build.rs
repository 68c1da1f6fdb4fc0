//! Fingerprints the source of every workspace crate whose code can change a result, so that
//! a cell's provenance says when the code that computed it changed.
//!
//! A file's fingerprint hashes its *token stream* (proc-macro2), not its bytes: comments, doc
//! comments, formatting and `#[cfg(test)]` items do not count. Written to
//! `$OUT_DIR/fingerprints.rs`:
//!
//! * `SOURCE_FINGERPRINTS`: `(path relative to crates/, hex sha256)` for every `.rs` file under
//!   a crate's `src/` (tasks and data providers name the files they run);
//! * `PACKAGE_SOURCES`: `(package name, source directories)`: the `src/` of the package and of
//!   every workspace crate it depends on (its `dyad-*` `[dependencies]`, transitively). A
//!   solver's fingerprint is that of its crate's directories, so no code a cell ran can change
//!   unnoticed.

#[path = "src/engine/srchash.rs"]
mod srchash;

use srchash::fingerprint;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A workspace crate: its directory under `crates/`, package name and `dyad-*` dependencies.
struct Package {
    dir: String,
    name: String,
    deps: Vec<String>,
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let crates = manifest.parent().unwrap().to_path_buf();
    let packages = packages(&crates);
    let mut files = Vec::new();
    for p in &packages {
        let dir = crates.join(&p.dir).join("src");
        println!("cargo:rerun-if-changed={}", dir.display());
        println!(
            "cargo:rerun-if-changed={}",
            crates.join(&p.dir).join("Cargo.toml").display()
        );
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
    out.push_str("pub static PACKAGE_SOURCES: &[(&str, &[&str])] = &[\n");
    for p in &packages {
        let dirs: Vec<String> = closure(p, &packages)
            .into_iter()
            .map(|d| format!("{d}/src/"))
            .collect();
        writeln!(out, "    ({:?}, &{dirs:?}),", p.name).unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("fingerprints.rs");
    std::fs::write(dest, out).unwrap();
    git_commit(&crates);
    render_deps(crates.parent().unwrap());
}

/// The crates that turn a figure's layout into pixels and PNG bytes (rasteriser, glyphs,
/// font, encoder and its compressors).
const RENDER_CRATES: [&str; 10] = [
    "plotters",
    "plotters-backend",
    "plotters-bitmap",
    "plotters-svg",
    "ab_glyph",
    "ab_glyph_rasterizer",
    "dejavu",
    "png",
    "fdeflate",
    "miniz_oxide",
];

/// The crates that encode a tidy table's files (CSV, Parquet and its GZIP pages).
const TABLE_CRATES: [&str; 5] = ["csv", "csv-core", "parquet", "flate2", "miniz_oxide"];

/// `DYAD_RENDER_DEPS` and `DYAD_TABLE_DEPS`: `name version` of each of [`RENDER_CRATES`]
/// (resp. [`TABLE_CRATES`]) in `Cargo.lock`, joined by `, `: part of a figure's render stamp
/// (an upgrade that changes pixels but not the SVG redraws the PNGs) and of a tidy table's
/// stamp (an encoder upgrade rewrites the tables).
fn render_deps(root: &Path) {
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    for (var, crates) in [
        ("DYAD_RENDER_DEPS", &RENDER_CRATES[..]),
        ("DYAD_TABLE_DEPS", &TABLE_CRATES[..]),
    ] {
        let mut found = Vec::new();
        let mut name = None;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("name = ") {
                name = Some(n.trim_matches('"').to_string());
            } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take())
                && crates.contains(&n.as_str())
            {
                found.push(format!("{n} {}", v.trim_matches('"')));
            }
        }
        found.sort();
        println!("cargo:rustc-env={var}={}", found.join(", "));
    }
}

/// The workspace crates: every `crates/*/Cargo.toml`, with the `dyad-*` names of its
/// `[dependencies]` (dev- and build-dependencies do not run in a cell).
fn packages(crates: &Path) -> Vec<Package> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(crates)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let mut name = None;
        let mut deps = Vec::new();
        let mut section = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_string();
                continue;
            }
            let key = line
                .split(['=', '.', ' '])
                .next()
                .unwrap_or_default()
                .trim_matches('"');
            if section == "[package]" && key == "name" {
                name = line.split('"').nth(1).map(str::to_string);
            } else if section == "[dependencies]" && key.starts_with("dyad-") {
                deps.push(key.to_string());
            }
        }
        out.push(Package {
            dir: dir.file_name().unwrap().to_string_lossy().into_owned(),
            name: name.expect("a [package] name"),
            deps,
        });
    }
    out
}

/// The directories of `p` and of every workspace crate it depends on, transitively.
fn closure(p: &Package, all: &[Package]) -> BTreeSet<String> {
    let by_name: BTreeMap<&str, &Package> = all.iter().map(|q| (q.name.as_str(), q)).collect();
    let mut seen = BTreeSet::new();
    let mut todo = vec![p];
    while let Some(q) = todo.pop() {
        if seen.insert(q.dir.clone()) {
            todo.extend(
                q.deps
                    .iter()
                    .filter_map(|d| by_name.get(d.as_str()).copied()),
            );
        }
    }
    seen
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
