//! 20 Newsgroups (Lang 1995) in the two public formats of its home page
//! (people.csail.mit.edu/jrennie/20Newsgroups):
//!
//! * the **"bydate"** release `20news-bydate.tar.gz`: top directories `20news-bydate-train/`
//!   and `20news-bydate-test/`, one directory per newsgroup below them, one file per message
//!   (raw Usenet text in ISO-8859-1). It is read streaming through gzip and tar, never
//!   unpacked to disk ([`NewsCorpus::read_tar`]); the same layout unpacked in a folder is read
//!   by [`NewsCorpus::read_dir`]. The tar parser is our own: 512-byte blocks, octal (or GNU
//!   base-256) numbers, header checksums verified, POSIX `ustar` name prefixes, GNU long names
//!   (`L`) and pax extended headers (`x`: `path`, `size`) understood.
//! * the **"matlab"** bag-of-words release (`train.data`, `train.label`, `train.map`,
//!   `test.data`, `test.label`, `test.map`, `vocabulary.txt`), read by [`read_matlab`] into a
//!   [`BowCorpus`] of raw counts.
//!
//! Message bytes are decoded as ISO-8859-1 (every byte is the code point of the same value),
//! so no input is ever rejected for its encoding. A corpus is kept in a **canonical order**
//! (training messages first, then by newsgroup name, then by message id: numeric ids by value
//! before any non-numeric id, non-numeric ids by bytes), and its [`NewsCorpus::content_id`] is
//! a hash of the decoded messages in that order: the same messages packed as a tarball, a
//! plain tar, or a folder, in any archive order, have the same identity.
//!
//! Names that start with `.` (for example macOS `._*` resource forks) are skipped in both the
//! archive and the folder reader. Archive entries outside the two split directories are
//! ignored; a regular file inside them that is not `<split>/<newsgroup>/<message>` is an error.

pub mod provider;
pub mod standin;
pub mod w1000;

use crate::formats::tar::{EntryKind, TarReader, read_full};
use crate::{ContentHasher, ContentId, DataError};

pub use crate::formats::decode_latin1;
use dyad_core::Partition;
use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Read};
use std::path::Path;

/// Top directory of the official training part.
pub const TRAIN_DIR: &str = "20news-bydate-train";
/// Top directory of the official test part.
pub const TEST_DIR: &str = "20news-bydate-test";
/// File names of the bydate archive tried by [`NewsCorpus::load`], in preference order.
pub const ARCHIVE_NAMES: [&str; 3] = [
    "20news-bydate.tar.gz",
    "20news-bydate.tgz",
    "20news-bydate.tar",
];

/// The twenty newsgroups, in the (sorted) order used for class indices.
pub const NEWSGROUPS: [&str; 20] = [
    "alt.atheism",
    "comp.graphics",
    "comp.os.ms-windows.misc",
    "comp.sys.ibm.pc.hardware",
    "comp.sys.mac.hardware",
    "comp.windows.x",
    "misc.forsale",
    "rec.autos",
    "rec.motorcycles",
    "rec.sport.baseball",
    "rec.sport.hockey",
    "sci.crypt",
    "sci.electronics",
    "sci.med",
    "sci.space",
    "soc.religion.christian",
    "talk.politics.guns",
    "talk.politics.mideast",
    "talk.politics.misc",
    "talk.religion.misc",
];

/// One Usenet message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Index into [`NewsCorpus::class_names`].
    pub label: u32,
    /// The official split the message comes from.
    pub partition: Partition,
    /// The message id: its file name (e.g. `"49960"`).
    pub id: String,
    /// The raw message (headers and body), decoded as ISO-8859-1.
    pub text: String,
}

/// A corpus of messages in canonical order (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewsCorpus {
    /// Newsgroup names, sorted by bytes; a message's class index points here.
    pub class_names: Vec<String>,
    pub messages: Vec<Message>,
}

fn split_name(p: Partition) -> &'static str {
    match p {
        Partition::Train => TRAIN_DIR,
        Partition::Test => TEST_DIR,
    }
}

fn split_of(name: &str) -> Option<Partition> {
    match name {
        TRAIN_DIR => Some(Partition::Train),
        TEST_DIR => Some(Partition::Test),
        _ => None,
    }
}

/// Canonical sort key of a message id: numeric ids by value first, then the rest by bytes.
fn id_key(id: &str) -> (u8, u64, &str) {
    match id.parse::<u64>() {
        Ok(v) if id.bytes().all(|b| b.is_ascii_digit()) => (0, v, id),
        _ => (1, 0, id),
    }
}

/// A message before class indices are assigned, with where it came from (for errors).
struct RawMessage {
    partition: Partition,
    class: String,
    id: String,
    text: String,
    origin: String,
}

impl NewsCorpus {
    /// Load the bydate release from `dir`: the first of [`ARCHIVE_NAMES`] that exists, else
    /// the unpacked folders `dir/20news-bydate-train` and `dir/20news-bydate-test` (or the
    /// same below `dir/20news-bydate`). `Missing` names everything that was tried.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        for name in ARCHIVE_NAMES {
            let p = dir.join(name);
            if p.is_file() {
                return Self::read_tar(&p);
            }
        }
        for root in [dir.to_path_buf(), dir.join("20news-bydate")] {
            if root.join(TRAIN_DIR).is_dir() && root.join(TEST_DIR).is_dir() {
                return Self::read_dir(&root);
            }
        }
        Err(DataError::Missing {
            name: "20newsgroups (bydate)".into(),
            dir: dir.to_path_buf(),
            tried: format!(
                "{}, {TRAIN_DIR}/ + {TEST_DIR}/, 20news-bydate/{TRAIN_DIR}/ + 20news-bydate/{TEST_DIR}/",
                ARCHIVE_NAMES.join(", ")
            ),
            hint: "Download 20news-bydate.tar.gz from the 20 Newsgroups home page \
                   (people.csail.mit.edu/jrennie/20Newsgroups) into this directory."
                .into(),
        })
    }

    /// Read a bydate tar archive, gzip-compressed or plain (detected by the gzip magic, not
    /// the file name), streaming. Damaged archives give [`DataError::Format`] with the byte
    /// offset in the (decompressed) tar stream, or [`DataError::Corrupt`] when the gzip
    /// stream itself is damaged.
    pub fn read_tar(path: &Path) -> Result<Self, DataError> {
        let file = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut magic = [0u8; 2];
        let n = read_full(&mut reader, &mut magic).map_err(|e| DataError::io(path, e))?;
        let head = std::io::Cursor::new(magic[..n].to_vec()).chain(reader);
        if n == 2 && magic == [0x1f, 0x8b] {
            let dec = flate2::read::MultiGzDecoder::new(head);
            Self::read_tar_stream(BufReader::with_capacity(1 << 16, dec), path, true)
        } else {
            Self::read_tar_stream(head, path, false)
        }
    }

    /// Read an uncompressed tar stream (or, with `gzip_decoded`, the output of a gzip
    /// decoder: read errors are then reported as [`DataError::Corrupt`]). `path` names the
    /// source in errors.
    pub fn read_tar_stream(
        reader: impl Read,
        path: &Path,
        gzip_decoded: bool,
    ) -> Result<Self, DataError> {
        let mut raw = Vec::new();
        for entry in TarReader::new(reader, path, gzip_decoded) {
            let entry = entry?;
            if entry.kind == EntryKind::Directory {
                continue;
            }
            let comps: Vec<&str> = entry
                .path
                .split('/')
                .filter(|c| !c.is_empty() && *c != ".")
                .collect();
            let Some(at) = comps.iter().position(|c| split_of(c).is_some()) else {
                continue;
            };
            if comps.iter().any(|c| c.starts_with('.')) {
                continue;
            }
            let rest = &comps[at + 1..];
            if entry.kind != EntryKind::File {
                return Err(DataError::format(
                    path,
                    entry.header_offset,
                    "a regular file",
                    format!("a {:?} entry `{}`", entry.kind, entry.path),
                ));
            }
            if rest.len() != 2 {
                return Err(DataError::format(
                    path,
                    entry.header_offset,
                    "a message file <split>/<newsgroup>/<message id>",
                    format!("file `{}`", entry.path),
                ));
            }
            raw.push(RawMessage {
                partition: split_of(comps[at]).expect("checked above"),
                class: rest[0].to_string(),
                id: rest[1].to_string(),
                text: decode_latin1(&entry.data),
                origin: format!("entry `{}` at byte {}", entry.path, entry.header_offset),
            });
        }
        Self::from_raw(path, raw)
    }

    /// Read the unpacked bydate layout: `root/20news-bydate-train/<group>/<message>` and
    /// `root/20news-bydate-test/<group>/<message>`.
    pub fn read_dir(root: &Path) -> Result<Self, DataError> {
        let mut raw = Vec::new();
        for partition in [Partition::Train, Partition::Test] {
            let split_dir = root.join(split_name(partition));
            for group in sorted_entries(&split_dir)? {
                let gpath = split_dir.join(&group);
                let meta = std::fs::metadata(&gpath).map_err(|e| DataError::io(&gpath, e))?;
                if !meta.is_dir() {
                    return Err(DataError::Inconsistent {
                        path: gpath,
                        message: "expected a newsgroup directory, found a file".into(),
                    });
                }
                for id in sorted_entries(&gpath)? {
                    let mpath = gpath.join(&id);
                    let meta = std::fs::metadata(&mpath).map_err(|e| DataError::io(&mpath, e))?;
                    if !meta.is_file() {
                        return Err(DataError::Inconsistent {
                            path: mpath,
                            message: "expected a message file, found a directory".into(),
                        });
                    }
                    let bytes = std::fs::read(&mpath).map_err(|e| DataError::io(&mpath, e))?;
                    raw.push(RawMessage {
                        partition,
                        class: group.clone(),
                        id,
                        text: decode_latin1(&bytes),
                        origin: mpath.display().to_string(),
                    });
                }
            }
        }
        Self::from_raw(root, raw)
    }

    fn from_raw(path: &Path, mut raw: Vec<RawMessage>) -> Result<Self, DataError> {
        if raw.is_empty() {
            return Err(DataError::Inconsistent {
                path: path.to_path_buf(),
                message: format!("no messages found below {TRAIN_DIR}/ or {TEST_DIR}/"),
            });
        }
        raw.sort_by(|a, b| {
            (a.partition == Partition::Test, &a.class, id_key(&a.id)).cmp(&(
                b.partition == Partition::Test,
                &b.class,
                id_key(&b.id),
            ))
        });
        for w in raw.windows(2) {
            if (w[0].partition, &w[0].class, &w[0].id) == (w[1].partition, &w[1].class, &w[1].id) {
                return Err(DataError::Inconsistent {
                    path: path.to_path_buf(),
                    message: format!(
                        "message {}/{}/{} occurs twice ({} and {})",
                        split_name(w[0].partition),
                        w[0].class,
                        w[0].id,
                        w[0].origin,
                        w[1].origin
                    ),
                });
            }
        }
        let class_names: Vec<String> = raw
            .iter()
            .map(|m| m.class.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let index: HashMap<&str, u32> = class_names
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i as u32))
            .collect();
        let labels: Vec<u32> = raw.iter().map(|m| index[m.class.as_str()]).collect();
        let messages = raw
            .into_iter()
            .zip(labels)
            .map(|(m, label)| Message {
                label,
                partition: m.partition,
                id: m.id,
                text: m.text,
            })
            .collect();
        Ok(NewsCorpus {
            class_names,
            messages,
        })
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The newsgroup of a message.
    pub fn class_of(&self, m: &Message) -> &str {
        &self.class_names[m.label as usize]
    }

    /// Number of messages of each class in the (training, test) parts.
    pub fn class_counts(&self) -> Vec<(usize, usize)> {
        let mut c = vec![(0, 0); self.class_names.len()];
        for m in &self.messages {
            if let Some(slot) = c.get_mut(m.label as usize) {
                match m.partition {
                    Partition::Train => slot.0 += 1,
                    Partition::Test => slot.1 += 1,
                }
            }
        }
        c
    }

    /// Number of messages in the (training, test) parts.
    pub fn split_sizes(&self) -> (usize, usize) {
        let train = self
            .messages
            .iter()
            .filter(|m| m.partition == Partition::Train)
            .count();
        (train, self.messages.len() - train)
    }

    /// Content identity of the decoded messages in canonical order: independent of packing
    /// (tar, gzip, folder) and of the order of entries in an archive.
    pub fn content_id(&self) -> ContentId {
        let mut order: Vec<&Message> = self.messages.iter().collect();
        let class = |m: &Message| self.class_names.get(m.label as usize).map(String::as_str);
        order.sort_by(|a, b| {
            (a.partition == Partition::Test, class(a), id_key(&a.id)).cmp(&(
                b.partition == Partition::Test,
                class(b),
                id_key(&b.id),
            ))
        });
        let mut h = ContentHasher::new("20newsgroups-text/v1");
        h.u64(order.len() as u64);
        for m in order {
            h.str(split_name(m.partition))
                .str(class(m).unwrap_or(""))
                .str(&m.id)
                .str(&m.text);
        }
        h.finish()
    }
}

/// Names in a directory, sorted, hidden (`.`-prefixed) names skipped.
fn sorted_entries(dir: &Path) -> Result<Vec<String>, DataError> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))? {
        let e = e.map_err(|e| DataError::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::tar::tests::{header, tar};

    fn small_archive() -> Vec<u8> {
        tar(&[
            ("20news-bydate-test/sci.med/7", b"From: c\n\nbody test"),
            ("20news-bydate-train/sci.med/10", b"From: b\n\nsecond \xe9"),
            ("20news-bydate-train/alt.atheism/9", b"From: a\n\nfirst"),
            ("20news-bydate-train/sci.med/9", b"From: x\n\nninth"),
        ])
    }

    fn read(bytes: &[u8]) -> Result<NewsCorpus, DataError> {
        NewsCorpus::read_tar_stream(bytes, Path::new("t.tar"), false)
    }

    #[test]
    fn a_small_archive_is_read_in_canonical_order_with_latin1_text() {
        let c = read(&small_archive()).unwrap();
        assert_eq!(c.class_names, vec!["alt.atheism", "sci.med"]);
        let got: Vec<(u32, Partition, &str)> = c
            .messages
            .iter()
            .map(|m| (m.label, m.partition, m.id.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Partition::Train, "9"),
                (1, Partition::Train, "9"),
                (1, Partition::Train, "10"), // numeric order, not byte order
                (1, Partition::Test, "7"),
            ]
        );
        assert_eq!(c.messages[2].text, "From: b\n\nsecond \u{e9}");
        assert_eq!(c.class_counts(), vec![(1, 0), (2, 1)]);
        assert_eq!(c.split_sizes(), (3, 1));
    }

    #[test]
    fn identity_ignores_archive_order_and_packing_but_not_content() {
        let a = read(&small_archive()).unwrap();
        let b = read(&tar(&[
            ("./20news-bydate-train/sci.med/9", b"From: x\n\nninth"),
            ("20news-bydate-train/alt.atheism/9", b"From: a\n\nfirst"),
            ("20news-bydate-test/sci.med/7", b"From: c\n\nbody test"),
            ("20news-bydate-train/sci.med/10", b"From: b\n\nsecond \xe9"),
            ("20news-bydate-train/._junk", b"ignored"),
        ]))
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.content_id(), b.content_id());
        // gzip-compressed, from a file.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.tgz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &small_archive()).unwrap();
        std::fs::write(&p, enc.finish().unwrap()).unwrap();
        assert_eq!(
            NewsCorpus::read_tar(&p).unwrap().content_id(),
            a.content_id()
        );
        // Unpacked in a folder.
        for m in &a.messages {
            let d = dir.path().join(split_name(m.partition)).join(a.class_of(m));
            std::fs::create_dir_all(&d).unwrap();
            let bytes: Vec<u8> = m.text.chars().map(|c| c as u32 as u8).collect();
            std::fs::write(d.join(&m.id), bytes).unwrap();
        }
        let f = NewsCorpus::load(dir.path()).unwrap();
        assert_eq!(f, a);
        let mut changed = a.clone();
        changed.messages[0].text.push(' ');
        assert_ne!(changed.content_id(), a.content_id());
        let mut moved = a.clone();
        moved.messages[3].partition = Partition::Train;
        assert_ne!(moved.content_id(), a.content_id());
    }

    #[test]
    fn long_names_pax_paths_and_posix_prefixes_are_understood() {
        let long_group = format!("g{}", "x".repeat(120));
        let name = format!("20news-bydate-train/{long_group}/1");
        let mut bytes = tar(&[(name.as_str(), b"hi")]);
        bytes.truncate(bytes.len() - 1024);
        // POSIX prefix field.
        let mut h = header("2", 3, b'0', false);
        h[345..345 + 30].copy_from_slice(b"20news-bydate-test/comp.x.long");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        bytes.extend_from_slice(&h);
        bytes.extend_from_slice(b"abc");
        bytes.resize(bytes.len().div_ceil(512) * 512, 0);
        // pax path record overriding the header name.
        let rec = "38 path=20news-bydate-test/sci.pax/77\n";
        assert_eq!(rec.len(), 38);
        bytes.extend_from_slice(&header("PaxHeader", rec.len() as u64, b'x', false));
        bytes.extend_from_slice(rec.as_bytes());
        bytes.resize(bytes.len().div_ceil(512) * 512, 0);
        bytes.extend_from_slice(&header("ignored", 1, b'0', false));
        bytes.extend_from_slice(b"p");
        bytes.resize(bytes.len().div_ceil(512) * 512, 0);
        bytes.extend_from_slice(&[0u8; 1024]);
        let c = read(&bytes).unwrap();
        assert_eq!(
            c.class_names,
            vec!["comp.x.long", long_group.as_str(), "sci.pax"]
        );
        let ids: Vec<&str> = c.messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, vec!["1", "2", "77"]);
        assert_eq!(c.messages[2].text, "p");
    }

    #[test]
    fn every_truncation_and_damage_is_a_typed_error() {
        let good = small_archive();
        // Drop the end marker: every cut at any byte must fail with a Format error.
        for cut in (0..good.len() - 1024).step_by(7).chain([good.len() - 1024]) {
            match read(&good[..cut]) {
                Err(DataError::Format { offset, .. }) => assert!(offset <= cut as u64),
                other => panic!("cut {cut}: {other:?}"),
            }
        }
        // A flipped header byte breaks the checksum, reported at the checksum field.
        let mut bad = good.clone();
        bad[512 * 2 + 5] ^= 0x20;
        let e = read(&bad).unwrap_err();
        assert!(matches!(e, DataError::Format { offset: 1172, .. }), "{e}");
        // A bad octal size.
        let mut h = header("20news-bydate-train/a/1", 0, b'0', true);
        h[124..136].copy_from_slice(b"00000009999\0");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let e = read(&h).unwrap_err().to_string();
        assert!(e.contains("at byte 124") && e.contains("octal"), "{e}");
        // A file at the wrong depth.
        let e = read(&tar(&[("20news-bydate-train/lonely", b"x")])).unwrap_err();
        assert!(e.to_string().contains("at byte 0"), "{e}");
        // Unknown entry types and duplicates.
        let mut s = header("20news-bydate-train/a/1", 0, b'S', true).to_vec();
        s.extend_from_slice(&[0u8; 1024]);
        assert!(read(&s).unwrap_err().to_string().contains("at byte 156"));
        let dup = tar(&[
            ("20news-bydate-train/a/1", b"x"),
            ("20news-bydate-train/a/1", b"y"),
        ]);
        assert!(matches!(read(&dup), Err(DataError::Inconsistent { .. })));
        // No messages at all.
        assert!(matches!(
            read(&[0u8; 1024]),
            Err(DataError::Inconsistent { .. })
        ));
        // Random garbage never panics.
        let mut x: u64 = 12345;
        for _ in 0..200 {
            let mut junk = good.clone();
            for _ in 0..4 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let i = (x >> 33) as usize % junk.len();
                junk[i] = (x >> 20) as u8;
            }
            let _ = read(&junk);
        }
    }

    #[test]
    fn damaged_gzip_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("20news-bydate.tar.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &small_archive()).unwrap();
        let gz = enc.finish().unwrap();
        std::fs::write(&p, &gz[..gz.len() - 10]).unwrap();
        assert!(matches!(
            NewsCorpus::load(dir.path()),
            Err(DataError::Corrupt { .. })
        ));
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 6] ^= 0xff; // length trailer
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(
            NewsCorpus::read_tar(&p),
            Err(DataError::Corrupt { .. })
        ));
        let e = NewsCorpus::load(&dir.path().join("nowhere")).unwrap_err();
        assert!(matches!(e, DataError::Missing { .. }), "{e}");
    }
}
