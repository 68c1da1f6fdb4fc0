//! The MNIST loader against the real files in `$DYAD_DATA_DIR/mnist` (CI points it at the
//! shared mirror; when the variable is set, a missing file is a failure, not a skip), and
//! against damaged copies of them.

use dyad_datasets::DataError;
use dyad_datasets::mnist::{Mnist, locate};
use dyad_datasets::provider::Presence;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The real MNIST directory, or `None` (test skipped; see `dyad_datasets::testdata`).
fn real_dir() -> Option<PathBuf> {
    dyad_datasets::testdata::real_dir("mnist", "MNIST", |d| {
        matches!(locate(d), Ok(Presence::Complete(_)))
    })
}

/// Copy the real files into `dst` decompressed, under the other (dotted) spelling.
fn decompressed_copy(src: &Path, dst: &Path) {
    for (stem, ext) in dyad_datasets::mnist::PARTS {
        let Ok(Presence::Complete(found)) = locate(src) else {
            panic!("MNIST absent from {}", src.display())
        };
        let path = found
            .iter()
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(stem))
            .unwrap();
        let mut bytes = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        std::fs::write(dst.join(format!("{stem}.{ext}")), bytes).unwrap();
    }
}

#[test]
fn real_files_have_the_published_counts_labels_and_identity() {
    let Some(dir) = real_dir() else { return };
    let m = Mnist::load(&dir).unwrap();
    assert_eq!((m.rows, m.cols), (28, 28));
    assert_eq!(
        (m.train_labels.len(), m.test_labels.len()),
        (60_000, 10_000)
    );
    assert_eq!(m.train_images.len(), 60_000 * 784);
    assert_eq!(&m.train_labels[..10], &[5, 0, 4, 1, 9, 2, 1, 3, 1, 4]);
    assert_eq!(&m.test_labels[..10], &[7, 2, 1, 0, 4, 1, 4, 9, 5, 9]);
    let mut counts = [0usize; 10];
    m.train_labels.iter().for_each(|&l| counts[l as usize] += 1);
    assert_eq!(
        counts,
        [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    );
    assert_eq!(
        m.content_id().0,
        "fdbf0b1cb23b313197a3ee1c756fe2324916838f101c25df99944bed3150632b"
    );
    let set = m.to_labeled_set(true);
    assert_eq!((set.n(), set.dim(), set.n_classes()), (70_000, 784, 10));
}

#[test]
fn identity_survives_decompression_and_renaming() {
    let Some(dir) = real_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    decompressed_copy(&dir, tmp.path());
    assert!(tmp.path().join("train-images.idx3-ubyte").is_file());
    let a = Mnist::load(&dir).unwrap();
    let b = Mnist::load(tmp.path()).unwrap();
    assert_eq!(a.content_id(), b.content_id());
}

#[test]
fn damaged_files_give_typed_errors_naming_file_and_offset() {
    let Some(dir) = real_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    decompressed_copy(&dir, tmp.path());
    let labels = tmp.path().join("t10k-labels.idx1-ubyte");
    let images = tmp.path().join("t10k-images.idx3-ubyte");
    let original_labels = std::fs::read(&labels).unwrap();

    // A label that is not a digit.
    let mut bad = original_labels.clone();
    bad[8 + 123] = 10;
    std::fs::write(&labels, &bad).unwrap();
    match Mnist::load(tmp.path()) {
        Err(DataError::Format { path, offset, .. }) => {
            assert_eq!(path, labels);
            assert_eq!(offset, 8 + 123);
        }
        other => panic!("{other:?}"),
    }
    // Fewer labels than images.
    let mut short = original_labels.clone();
    short[4..8].copy_from_slice(&9_999u32.to_be_bytes());
    short.pop();
    std::fs::write(&labels, &short).unwrap();
    assert!(matches!(
        Mnist::load(tmp.path()),
        Err(DataError::Inconsistent { .. })
    ));
    std::fs::write(&labels, &original_labels).unwrap();

    // A truncated image file.
    let img = std::fs::read(&images).unwrap();
    std::fs::write(&images, &img[..img.len() - 1000]).unwrap();
    let e = Mnist::load(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("t10k-images.idx3-ubyte: at byte") && e.contains("truncated"),
        "{e}"
    );

    // A truncated and a corrupted gzip stream.
    let gz = tmp.path().join("t10k-images.idx3-ubyte.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&img).unwrap();
    let packed = enc.finish().unwrap();
    std::fs::remove_file(&images).unwrap();
    std::fs::write(&gz, &packed[..packed.len() / 3]).unwrap();
    assert!(matches!(
        Mnist::load(tmp.path()),
        Err(DataError::Corrupt { .. })
    ));
    let mut flipped = packed.clone();
    for b in &mut flipped[packed.len() / 2..packed.len() / 2 + 64] {
        *b ^= 0x5a;
    }
    std::fs::write(&gz, &flipped).unwrap();
    assert!(Mnist::load(tmp.path()).is_err());
}

#[test]
fn a_missing_directory_says_what_was_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Mnist::load(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("train-images-idx3-ubyte.gz") && e.contains("train-images.idx3-ubyte"),
        "{e}"
    );
}
