//! Real data in tests. A test that reads a real data set asks [`real_dir`] for its directory:
//! without `$DYAD_DATA_DIR`, or with the data absent from it, the test is skipped and says so
//! on stderr — unless `$DYAD_REQUIRE_DATA` is set (CI sets it, pointing `$DYAD_DATA_DIR` at the
//! shared mirror), in which case absent data is a failure. A fresh clone with no data passes
//! `just test`; CI cannot silently skip the real-data checks.

use std::path::PathBuf;

/// Whether real data is mandatory (`$DYAD_REQUIRE_DATA` set to anything but `0` or empty).
pub fn required() -> bool {
    std::env::var("DYAD_REQUIRE_DATA").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `$DYAD_DATA_DIR/<sub>` when `present` says the data set is there; `None` (skip, with a
/// message naming `what`) otherwise; a panic when the data is required but absent.
pub fn real_dir(
    sub: &str,
    what: &str,
    present: impl Fn(&std::path::Path) -> bool,
) -> Option<PathBuf> {
    let root = std::env::var_os("DYAD_DATA_DIR").map(PathBuf::from);
    let dir = root.as_ref().map(|r| r.join(sub));
    match dir {
        Some(d) if present(&d) => Some(d),
        _ if required() => panic!(
            "DYAD_REQUIRE_DATA is set but {what} is not usable in {}",
            dir.map_or("(DYAD_DATA_DIR unset)".into(), |d| d.display().to_string())
        ),
        _ => {
            eprintln!(
                "SKIPPED: {what} not found{} (set DYAD_DATA_DIR to a directory holding it; DYAD_REQUIRE_DATA=1 makes this a failure)",
                dir.map(|d| format!(" in {}", d.display()))
                    .unwrap_or_default()
            );
            None
        }
    }
}

/// Four plain IDX files in `dir` of MNIST's format and shape (28 x 28 images, labels 0..9)
/// holding `n` training and `n` test images whose pixels follow `seed`: real data in MNIST's
/// place that is not the published release (for tests of how such data is labelled).
pub fn write_other_mnist(dir: &std::path::Path, n: u32, seed: u8) {
    std::fs::create_dir_all(dir).expect("creating the directory");
    for (stem, images) in [
        ("train", true),
        ("train", false),
        ("t10k", true),
        ("t10k", false),
    ] {
        let mut b = Vec::new();
        if images {
            b.extend([0, 0, 8, 3]);
            for d in [n, 28, 28] {
                b.extend(d.to_be_bytes());
            }
            b.extend((0..n * 784).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
        } else {
            b.extend([0, 0, 8, 1]);
            b.extend(n.to_be_bytes());
            b.extend((0..n).map(|i| (i % 10) as u8));
        }
        let kind = if images { "images-idx3" } else { "labels-idx1" };
        std::fs::write(dir.join(format!("{stem}-{kind}-ubyte")), b).expect("writing IDX");
    }
}

/// Rewrite the files of [`write_other_mnist`] in `dir` with pixels from `seed`, keeping every
/// file's size and modification time: data changed in place behind a record of its stamps.
pub fn rewrite_other_mnist_in_place(dir: &std::path::Path, n: u32, seed: u8) {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("reading the directory")
        .flatten()
        .map(|e| e.path())
        .collect();
    let times: Vec<_> = files
        .iter()
        .map(|f| {
            std::fs::metadata(f)
                .and_then(|m| m.modified())
                .expect("a time")
        })
        .collect();
    write_other_mnist(dir, n, seed);
    for (f, t) in files.iter().zip(times) {
        std::fs::File::options()
            .write(true)
            .open(f)
            .and_then(|f| f.set_modified(t))
            .expect("restoring the modification time");
    }
}
