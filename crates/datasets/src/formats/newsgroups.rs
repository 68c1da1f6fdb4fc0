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

use crate::pipelines::text::BowCorpus;
use crate::{ContentHasher, ContentId, DataError};
use dyad_core::{LabeledSet, Partition};
use sprs::CsMat;
use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

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

/// Decode bytes as ISO-8859-1: every byte is the Unicode code point of the same value.
pub fn decode_latin1(bytes: &[u8]) -> String {
    if bytes.is_ascii() {
        // Valid UTF-8 already: skip the per-character loop.
        return String::from_utf8_lossy(bytes).into_owned();
    }
    bytes.iter().map(|&b| char::from(b)).collect()
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

/// Fill `buf` as far as the stream allows; returns the number of bytes read (short only at
/// end of stream).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

// ---------------------------------------------------------------------------------------
// tar
// ---------------------------------------------------------------------------------------

/// What a tar entry is (only what the readers need to tell apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    /// Hard or symbolic link (its data is never read).
    Link,
    /// Character/block device or FIFO.
    Special,
}

/// One entry of a tar stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarEntry {
    /// The entry's path (long-name and pax records applied), decoded as ISO-8859-1.
    pub path: String,
    pub kind: EntryKind,
    /// Offset of the entry's (last) header block in the tar stream.
    pub header_offset: u64,
    /// The file's contents (empty for anything but regular files).
    pub data: Vec<u8>,
}

/// A streaming tar parser: an iterator of entries that stops at the first error.
pub struct TarReader<R: Read> {
    inner: R,
    path: PathBuf,
    gzip: bool,
    offset: u64,
    done: bool,
}

impl<R: Read> TarReader<R> {
    /// Parse the tar stream `inner`; `path` names it in errors; `gzip` says that read errors
    /// come from a gzip decoder (reported as [`DataError::Corrupt`]).
    pub fn new(inner: R, path: &Path, gzip: bool) -> Self {
        TarReader {
            inner,
            path: path.to_path_buf(),
            gzip,
            offset: 0,
            done: false,
        }
    }

    fn read_err(&self, e: std::io::Error, extra: usize) -> DataError {
        if self.gzip {
            DataError::Corrupt {
                path: self.path.clone(),
                offset: self.offset + extra as u64,
                detail: e.to_string(),
            }
        } else {
            DataError::io(&self.path, e)
        }
    }

    /// Read exactly `buf.len()` bytes; `what` describes them for a truncation error.
    fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<(), DataError> {
        let n = read_full(&mut self.inner, buf).map_err(|e| self.read_err(e, 0))?;
        if n < buf.len() {
            return Err(DataError::format(
                &self.path,
                self.offset + n as u64,
                what.to_string(),
                format!("end of stream after {n} of {} bytes", buf.len()),
            ));
        }
        self.offset += n as u64;
        Ok(())
    }

    /// Read `size` bytes of entry data plus the padding to the next block boundary.
    fn read_data(&mut self, size: u64, name: &str) -> Result<Vec<u8>, DataError> {
        let mut data = Vec::with_capacity(size.min(1 << 20) as usize);
        let got = (&mut self.inner)
            .take(size)
            .read_to_end(&mut data)
            .map_err(|e| self.read_err(e, data.len()))? as u64;
        if got < size {
            return Err(DataError::format(
                &self.path,
                self.offset + got,
                format!("{size} bytes of data for `{name}`"),
                format!("end of stream after {got} bytes"),
            ));
        }
        self.offset += size;
        let pad = ((512 - size % 512) % 512) as usize;
        let mut padding = [0u8; 512];
        self.read_exact(&mut padding[..pad], "padding to a 512-byte block boundary")?;
        Ok(data)
    }

    /// Read everything after the end-of-archive marker so that a gzip trailer is checked.
    fn drain(&mut self) -> Result<(), DataError> {
        let mut buf = [0u8; 8192];
        loop {
            let n = read_full(&mut self.inner, &mut buf).map_err(|e| self.read_err(e, 0))?;
            self.offset += n as u64;
            if n < buf.len() {
                return Ok(());
            }
        }
    }

    fn next_entry(&mut self) -> Result<Option<TarEntry>, DataError> {
        let mut long_name: Option<String> = None;
        let mut pax_path: Option<String> = None;
        let mut pax_size: Option<u64> = None;
        let mut block = [0u8; 512];
        loop {
            let start = self.offset;
            let n = read_full(&mut self.inner, &mut block).map_err(|e| self.read_err(e, 0))?;
            if n == 0 {
                return Err(DataError::format(
                    &self.path,
                    start,
                    "a tar header or the end-of-archive marker (a zero block)",
                    "end of stream",
                ));
            }
            if n < 512 {
                return Err(DataError::format(
                    &self.path,
                    start + n as u64,
                    "a complete 512-byte tar header block",
                    format!("end of stream after {n} bytes"),
                ));
            }
            self.offset += 512;
            if block.iter().all(|&b| b == 0) {
                if long_name.is_some() || pax_path.is_some() || pax_size.is_some() {
                    return Err(DataError::format(
                        &self.path,
                        start,
                        "the header that a long-name or pax record announced",
                        "the end-of-archive marker",
                    ));
                }
                self.drain()?;
                return Ok(None);
            }
            check_checksum(&block).map_err(|(at, expected, found)| {
                DataError::format(&self.path, start + at, expected, found)
            })?;
            let field = |at: usize, len: usize| {
                parse_number(&block[at..at + len]).map_err(|found| {
                    DataError::format(
                        &self.path,
                        start + at as u64,
                        "an octal or base-256 number",
                        found,
                    )
                })
            };
            let size = match pax_size.take() {
                Some(s) => s,
                None => field(124, 12)?,
            };
            let header_name = {
                let name = cstr(&block[0..100]);
                let posix = &block[257..263] == b"ustar\0";
                let prefix = if posix {
                    cstr(&block[345..500])
                } else {
                    &[][..]
                };
                if prefix.is_empty() {
                    decode_latin1(name)
                } else {
                    format!("{}/{}", decode_latin1(prefix), decode_latin1(name))
                }
            };
            let typeflag = block[156];
            match typeflag {
                b'L' => {
                    let data = self.read_data(size, "GNU long name")?;
                    long_name = Some(decode_latin1(cstr(&data)));
                    continue;
                }
                b'K' => {
                    self.read_data(size, "GNU long link name")?;
                    continue;
                }
                b'x' => {
                    let data = self.read_data(size, "pax extended header")?;
                    let (p, s) = parse_pax(&data).map_err(|(at, found)| {
                        DataError::format(
                            &self.path,
                            start + 512 + at as u64,
                            "a pax record `<length> <key>=<value>\\n`",
                            found,
                        )
                    })?;
                    if p.is_some() {
                        pax_path = p;
                    }
                    if s.is_some() {
                        pax_size = s;
                    }
                    continue;
                }
                b'g' => {
                    self.read_data(size, "pax global header")?;
                    continue;
                }
                _ => {}
            }
            let path = pax_path.take().or(long_name.take()).unwrap_or(header_name);
            let kind = match typeflag {
                b'0' | 0 | b'7' => EntryKind::File,
                b'5' => EntryKind::Directory,
                b'1' | b'2' => EntryKind::Link,
                b'3' | b'4' | b'6' => EntryKind::Special,
                other => {
                    return Err(DataError::format(
                        &self.path,
                        start + 156,
                        "a supported tar entry type (file, directory, link, long name, pax)",
                        format!("type {:?} for `{path}`", char::from(other)),
                    ));
                }
            };
            // Old tar writers mark directories by a trailing slash on a regular-file type.
            let kind = if kind == EntryKind::File && path.ends_with('/') {
                EntryKind::Directory
            } else {
                kind
            };
            let data = match kind {
                EntryKind::File => self.read_data(size, &path)?,
                EntryKind::Link => Vec::new(), // link headers carry no data
                _ => {
                    self.read_data(size, &path)?;
                    Vec::new()
                }
            };
            return Ok(Some(TarEntry {
                path,
                kind,
                header_offset: start,
                data,
            }));
        }
    }
}

impl<R: Read> Iterator for TarReader<R> {
    type Item = Result<TarEntry, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_entry() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A NUL-terminated field.
fn cstr(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

/// A numeric header field: octal digits between optional spaces/NULs, or GNU base-256
/// (high bit of the first byte set, big-endian two's complement; negative values rejected).
fn parse_number(field: &[u8]) -> Result<u64, String> {
    if field.first().is_some_and(|&b| b & 0x80 != 0) {
        if field[0] & 0x40 != 0 {
            return Err("a negative base-256 number".into());
        }
        let mut v: u64 = u64::from(field[0] & 0x3f);
        for &b in &field[1..] {
            v = v
                .checked_mul(256)
                .and_then(|v| v.checked_add(u64::from(b)))
                .ok_or_else(|| "a base-256 number over 2^64".to_string())?;
        }
        return Ok(v);
    }
    let trimmed: &[u8] = {
        let s = field
            .iter()
            .position(|&b| b != b' ' && b != 0)
            .unwrap_or(field.len());
        let e = field[s..]
            .iter()
            .position(|&b| b == b' ' || b == 0)
            .map_or(field.len(), |e| s + e);
        if field[e..].iter().any(|&b| b != b' ' && b != 0) {
            return Err(format!("{:?}", String::from_utf8_lossy(field)));
        }
        &field[s..e]
    };
    let mut v: u64 = 0;
    for &b in trimmed {
        if !(b'0'..=b'7').contains(&b) {
            return Err(format!("{:?}", String::from_utf8_lossy(field)));
        }
        v = v
            .checked_mul(8)
            .map(|v| v + u64::from(b - b'0'))
            .ok_or_else(|| "an octal number over 2^64".to_string())?;
    }
    Ok(v)
}

/// Verify the header checksum (unsigned byte sum with the checksum field read as spaces;
/// the historic signed sum is accepted too). On failure: (offset in block, expected, found).
fn check_checksum(block: &[u8; 512]) -> Result<(), (u64, String, String)> {
    let stored = parse_number(&block[148..156])
        .map_err(|f| (148, "an octal header checksum".to_string(), f))?;
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in block.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    if stored == unsigned || i64::try_from(stored).ok() == Some(signed) {
        Ok(())
    } else {
        Err((
            148,
            format!("header checksum {unsigned:o} (octal)"),
            format!("{stored:o} (not a valid tar header)"),
        ))
    }
}

/// The `path` and `size` of a pax extended header; errors give (offset, found).
type PaxFields = (Option<String>, Option<u64>);
fn parse_pax(data: &[u8]) -> Result<PaxFields, (usize, String)> {
    let (mut path, mut size) = (None, None);
    let mut at = 0;
    while at < data.len() {
        if data[at..].iter().all(|&b| b == 0) {
            break;
        }
        let sp = data[at..]
            .iter()
            .position(|&b| b == b' ')
            .ok_or((at, "a record without a length".to_string()))?;
        let len: usize = std::str::from_utf8(&data[at..at + sp])
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&l: &usize| l > sp + 1 && at + l <= data.len())
            .ok_or((at, "a bad record length".to_string()))?;
        let record = &data[at + sp + 1..at + len];
        if record.last() != Some(&b'\n') {
            return Err((at, "a record not ending in a newline".into()));
        }
        let record = &record[..record.len() - 1];
        let eq = record
            .iter()
            .position(|&b| b == b'=')
            .ok_or((at, "a record without `=`".to_string()))?;
        let (key, value) = (&record[..eq], &record[eq + 1..]);
        match key {
            b"path" => path = Some(String::from_utf8_lossy(value).into_owned()),
            b"size" => {
                size = Some(
                    std::str::from_utf8(value)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or((at, format!("size {:?}", String::from_utf8_lossy(value))))?,
                )
            }
            _ => {}
        }
        at += len;
    }
    Ok((path, size))
}

// ---------------------------------------------------------------------------------------
// the "matlab" bag-of-words release
// ---------------------------------------------------------------------------------------

/// The files of the matlab release, by role.
pub const MATLAB_FILES: [&str; 7] = [
    "vocabulary.txt",
    "train.data",
    "train.label",
    "train.map",
    "test.data",
    "test.label",
    "test.map",
];

/// Lines of a text file (any trailing `\r` removed), with 1-based numbers. A final newline
/// does not start an extra line.
fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|&b| b == b'\n')
        .filter(move |_| !empty)
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.strip_suffix(b"\r").unwrap_or(l)))
}

/// Whitespace-separated fields of a line with their 1-based byte columns.
fn fields(line: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if line[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let s = i;
        while i < line.len() && !line[i].is_ascii_whitespace() {
            i += 1;
        }
        out.push((s as u64 + 1, &line[s..i]));
    }
    out
}

fn show(b: &[u8]) -> String {
    format!("{:?}", decode_latin1(b))
}

/// A 1-based index in `1..=max`.
fn index_field(
    path: &Path,
    line: u64,
    (col, f): (u64, &[u8]),
    what: &str,
    max: u64,
) -> Result<u64, DataError> {
    let v = std::str::from_utf8(f)
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    match v {
        Some(v) if (1..=max).contains(&v) => Ok(v),
        _ => Err(DataError::line(
            path,
            line,
            Some(col),
            format!("{what} in 1..={max}"),
            show(f),
        )),
    }
}

fn read_map(path: &Path) -> Result<Vec<String>, DataError> {
    let bytes = super::read_maybe_gzip(path)?;
    let mut entries: Vec<(u64, String, u64)> = Vec::new();
    for (no, l) in lines(&bytes) {
        let f = fields(l);
        if f.len() != 2 {
            return Err(DataError::line(
                path,
                no,
                None,
                "`<newsgroup> <class index>`",
                format!("{} fields: {}", f.len(), show(l)),
            ));
        }
        let idx = index_field(path, no, f[1], "a class index", u32::MAX as u64)?;
        entries.push((no, decode_latin1(f[0].1), idx));
    }
    let k = entries.len() as u64;
    let mut names = vec![None; entries.len()];
    for (no, name, idx) in entries {
        if idx > k {
            return Err(DataError::line(
                path,
                no,
                None,
                format!("a class index in 1..={k} ({k} classes listed)"),
                idx.to_string(),
            ));
        }
        if names[idx as usize - 1].is_some() {
            return Err(DataError::line(
                path,
                no,
                None,
                "a class index not used before",
                idx.to_string(),
            ));
        }
        names[idx as usize - 1] = Some(name);
    }
    if names.is_empty() {
        return Err(DataError::Inconsistent {
            path: path.to_path_buf(),
            message: "no classes listed".into(),
        });
    }
    Ok(names
        .into_iter()
        .map(|n| n.expect("a permutation"))
        .collect())
}

fn read_labels(path: &Path, n_classes: usize) -> Result<Vec<u32>, DataError> {
    let bytes = super::read_maybe_gzip(path)?;
    let mut out = Vec::new();
    for (no, l) in lines(&bytes) {
        let f = fields(l);
        if f.len() != 1 {
            return Err(DataError::line(
                path,
                no,
                None,
                "one class index per line",
                format!("{} fields: {}", f.len(), show(l)),
            ));
        }
        out.push(index_field(path, no, f[0], "a class index", n_classes as u64)? as u32 - 1);
    }
    Ok(out)
}

fn read_vocabulary(path: &Path) -> Result<Vec<String>, DataError> {
    let bytes = super::read_maybe_gzip(path)?;
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut out = Vec::new();
    for (no, l) in lines(&bytes) {
        let f = fields(l);
        if f.len() != 1 {
            return Err(DataError::line(
                path,
                no,
                None,
                "one word per line",
                format!("{} fields: {}", f.len(), show(l)),
            ));
        }
        let w = decode_latin1(f[0].1);
        if let Some(first) = seen.insert(w.clone(), no) {
            return Err(DataError::line(
                path,
                no,
                Some(f[0].0),
                format!("a word not listed before (line {first})"),
                show(f[0].1),
            ));
        }
        out.push(w);
    }
    Ok(out)
}

/// `(doc, word, count)` triplets (0-based indices) of a `.data` file, sorted by document and
/// word, checked against the number of documents (label lines) and the vocabulary size.
fn read_data(
    path: &Path,
    n_docs: usize,
    n_words: usize,
    label_file: &str,
) -> Result<Vec<(u32, u32, f64)>, DataError> {
    let bytes = super::read_maybe_gzip(path)?;
    let mut out: Vec<(u32, u32, f64, u64)> = Vec::new();
    let mut max_doc = 0u64;
    for (no, l) in lines(&bytes) {
        let f = fields(l);
        if f.len() != 3 {
            return Err(DataError::line(
                path,
                no,
                None,
                "`<docIdx> <wordIdx> <count>`",
                format!("{} fields: {}", f.len(), show(l)),
            ));
        }
        let doc = index_field(
            path,
            no,
            f[0],
            &format!("a document index ({n_docs} lines in {label_file})"),
            n_docs as u64,
        )?;
        let word = index_field(
            path,
            no,
            f[1],
            "a word index (vocabulary.txt)",
            n_words as u64,
        )?;
        let count = index_field(path, no, f[2], "a positive count", u32::MAX as u64)?;
        max_doc = max_doc.max(doc);
        out.push(((doc - 1) as u32, (word - 1) as u32, count as f64, no));
    }
    if max_doc != n_docs as u64 {
        return Err(DataError::Inconsistent {
            path: path.to_path_buf(),
            message: format!(
                "{label_file} has {n_docs} labels but the highest document index here is {max_doc}"
            ),
        });
    }
    out.sort_unstable_by_key(|&(d, w, _, no)| (d, w, no));
    for w in out.windows(2) {
        if (w[0].0, w[0].1) == (w[1].0, w[1].1) {
            return Err(DataError::line(
                path,
                w[1].3,
                None,
                format!(
                    "a (document, word) pair not listed before (line {})",
                    w[0].3
                ),
                format!("document {} word {} again", w[1].0 + 1, w[1].1 + 1),
            ));
        }
    }
    Ok(out.into_iter().map(|(d, w, c, _)| (d, w, c)).collect())
}

/// Read the matlab bag-of-words release from `dir` (each file plain or gzip): rows are the
/// training documents then the test documents (official partition recorded), columns the
/// words of `vocabulary.txt`, values the raw counts. Malformed lines, out-of-range indices,
/// repeated `(document, word)` pairs and duplicate words are [`DataError::Line`] errors naming
/// file, line and column; a `.data` file whose highest document index differs from the
/// number of lines of its `.label` file, and `train.map`/`test.map` that disagree, are
/// [`DataError::Inconsistent`].
pub fn read_matlab(dir: &Path) -> Result<BowCorpus, DataError> {
    let missing: Vec<&str> = MATLAB_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(DataError::Missing {
            name: "20newsgroups (matlab)".into(),
            dir: dir.to_path_buf(),
            tried: MATLAB_FILES.join(", "),
            hint: format!(
                "missing {}; the files come from 20news-bydate-matlab.tgz on the 20 Newsgroups \
                 home page",
                missing.join(", ")
            ),
        });
    }
    let p = |f: &str| dir.join(f);
    let terms = read_vocabulary(&p("vocabulary.txt"))?;
    let classes = read_map(&p("train.map"))?;
    let test_classes = read_map(&p("test.map"))?;
    if classes != test_classes {
        return Err(DataError::Inconsistent {
            path: p("test.map"),
            message: "test.map lists other classes (or another order) than train.map".into(),
        });
    }
    let mut labels = read_labels(&p("train.label"), classes.len())?;
    let test_labels = read_labels(&p("test.label"), classes.len())?;
    let train = read_data(&p("train.data"), labels.len(), terms.len(), "train.label")?;
    let test = read_data(
        &p("test.data"),
        test_labels.len(),
        terms.len(),
        "test.label",
    )?;
    let n_train = labels.len();
    let n = n_train + test_labels.len();
    let mut indptr = vec![0usize; n + 1];
    let mut indices = Vec::with_capacity(train.len() + test.len());
    let mut data = Vec::with_capacity(train.len() + test.len());
    for (offset, part) in [(0usize, &train), (n_train, &test)] {
        for &(d, w, c) in part.iter() {
            indptr[offset + d as usize + 1] += 1;
            indices.push(w as usize);
            data.push(c);
        }
    }
    for i in 0..n {
        indptr[i + 1] += indptr[i];
    }
    let x = CsMat::new((n, terms.len()), indptr, indices, data);
    labels.extend(test_labels);
    let partition = (0..n)
        .map(|i| {
            if i < n_train {
                Partition::Train
            } else {
                Partition::Test
            }
        })
        .collect();
    let counts = LabeledSet::new(x, labels, classes, Some(partition))
        .map_err(|e| DataError::Param(e.to_string()))?;
    Ok(BowCorpus { counts, terms })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar header block for `name` (ustar, POSIX or GNU magic).
    pub(crate) fn header(name: &str, size: u64, typeflag: u8, gnu: bool) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
        h[136..148].copy_from_slice(b"00000000000\0");
        h[156] = typeflag;
        if gnu {
            h[257..265].copy_from_slice(b"ustar  \0");
        } else {
            h[257..265].copy_from_slice(b"ustar\x0000");
        }
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }

    /// A tar archive of `(path, contents)` files (GNU long names for long paths).
    pub(crate) fn tar(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in files {
            if name.len() >= 100 {
                let mut long = name.as_bytes().to_vec();
                long.push(0);
                out.extend_from_slice(&header("././@LongLink", long.len() as u64, b'L', true));
                out.extend_from_slice(&long);
                out.resize(out.len().div_ceil(512) * 512, 0);
                out.extend_from_slice(&header(&name[..99], data.len() as u64, b'0', true));
            } else {
                out.extend_from_slice(&header(name, data.len() as u64, b'0', true));
            }
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.extend_from_slice(&[0u8; 1024]);
        out
    }

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

    #[test]
    fn number_fields() {
        assert_eq!(parse_number(b"0000644\0"), Ok(0o644));
        assert_eq!(parse_number(b"  17 \0\0"), Ok(0o17));
        assert_eq!(parse_number(b"\0\0\0\0"), Ok(0));
        assert_eq!(parse_number(&[0x80, 0, 0, 1, 0]), Ok(256));
        assert!(parse_number(b"0008").is_err());
        assert!(parse_number(b"12 34").is_err());
        assert!(parse_number(&[0xff, 0xff]).is_err());
        assert_eq!(decode_latin1(b"a\xe9\xff"), "a\u{e9}\u{ff}");
    }

    fn write_matlab(dir: &Path, files: &[(&str, &str)]) {
        let base = [
            ("vocabulary.txt", "apple\nbanana\ncherry\n"),
            ("train.map", "alt.atheism 1\nsci.med 2\n"),
            ("test.map", "alt.atheism 1\nsci.med 2\n"),
            ("train.label", "1\n2\n2\n"),
            ("test.label", "2\n"),
            ("train.data", "1 1 2\n1 3 1\n2 2 5\n3 1 1\n"),
            ("test.data", "1 3 4\r\n"),
        ];
        for (name, text) in base {
            let t = files
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(text, |(_, t)| *t);
            std::fs::write(dir.join(name), t).unwrap();
        }
    }

    #[test]
    fn matlab_files_become_a_count_matrix_with_the_official_partition() {
        let dir = tempfile::tempdir().unwrap();
        write_matlab(dir.path(), &[]);
        let b = read_matlab(dir.path()).unwrap();
        assert_eq!(b.terms, vec!["apple", "banana", "cherry"]);
        let s = &b.counts;
        assert_eq!((s.n(), s.dim()), (4, 3));
        assert_eq!(s.labels, vec![0, 1, 1, 1]);
        assert_eq!(s.class_names, vec!["alt.atheism", "sci.med"]);
        assert_eq!(
            s.partition.as_deref(),
            Some(
                &[
                    Partition::Train,
                    Partition::Train,
                    Partition::Train,
                    Partition::Test
                ][..]
            )
        );
        let dense: Vec<Vec<f64>> =
            s.x.outer_iterator()
                .map(|r| {
                    let mut d = vec![0.0; 3];
                    r.iter().for_each(|(j, &v)| d[j] = v);
                    d
                })
                .collect();
        assert_eq!(
            dense,
            vec![
                vec![2.0, 0.0, 1.0],
                vec![0.0, 5.0, 0.0],
                vec![1.0, 0.0, 0.0],
                vec![0.0, 0.0, 4.0]
            ]
        );
    }

    #[test]
    fn matlab_errors_name_file_line_and_column() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "train.data",
                "1 1 2\n1 4 1\n2 2 5\n3 1 1\n",
                "train.data:2:3: expected a word index",
            ),
            (
                "train.data",
                "1 1 2\n1 3 x\n2 2 5\n3 1 1\n",
                "train.data:2:5: expected a positive count",
            ),
            (
                "train.data",
                "1 1 2\n1 3 0\n2 2 5\n3 1 1\n",
                "train.data:2:5:",
            ),
            (
                "train.data",
                "1 1 2\n4 3 1\n2 2 5\n3 1 1\n",
                "train.data:2:1: expected a document index (3 lines in train.label) in 1..=3",
            ),
            (
                "train.data",
                "1 1 2\n1 3\n",
                "train.data:2: expected `<docIdx> <wordIdx> <count>`",
            ),
            (
                "train.data",
                "1 1 2\n2 2 5\n3 1 1\n1 1 7\n",
                "train.data:4: expected a (document, word) pair not listed before (line 1)",
            ),
            (
                "train.data",
                "1 1 2\n2 2 5\n",
                "train.label has 3 labels but the highest document index here is 2",
            ),
            (
                "train.label",
                "1\n3\n2\n",
                "train.label:2:1: expected a class index in 1..=2",
            ),
            (
                "train.label",
                "1\n\n2\n",
                "train.label:2: expected one class index per line",
            ),
            (
                "test.label",
                "2\n1\n",
                "test.label has 2 labels but the highest document index here is 1",
            ),
            (
                "train.map",
                "alt.atheism 1\nsci.med 3\n",
                "train.map:2: expected a class index in 1..=2",
            ),
            (
                "train.map",
                "alt.atheism 1\nsci.med 1\n",
                "train.map:2: expected a class index not used before",
            ),
            (
                "test.map",
                "sci.med 1\nalt.atheism 2\n",
                "test.map lists other classes",
            ),
            (
                "vocabulary.txt",
                "apple\nbanana\napple\n",
                "vocabulary.txt:3:1: expected a word not listed before (line 1)",
            ),
        ];
        for (file, text, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            write_matlab(dir.path(), &[(file, text)]);
            let e = read_matlab(dir.path()).unwrap_err().to_string();
            assert!(e.contains(want), "{file} {text:?}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        write_matlab(dir.path(), &[]);
        std::fs::remove_file(dir.path().join("test.map")).unwrap();
        let e = read_matlab(dir.path()).unwrap_err().to_string();
        assert!(e.contains("missing test.map"), "{e}");
    }
}
