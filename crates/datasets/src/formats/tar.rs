//! A streaming tar parser (POSIX ustar and GNU): 512-byte blocks, octal (or GNU base-256)
//! numbers, header checksums verified, POSIX `ustar` name prefixes, GNU long names (`L`) and
//! pax extended headers (`x`: `path`, `size`) understood. Errors name the byte offset of the
//! field that is wrong; read errors of a gzip decoder underneath are [`DataError::Corrupt`].
//! Used to read the 20 Newsgroups by-date tarball without unpacking it, and by `dyad data
//! fetch` to unpack downloaded archives.

use crate::DataError;
use crate::formats::decode_latin1;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Fill `buf` as far as the stream allows; returns the number of bytes read (short only at
/// end of stream).
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
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

/// Unpack the (optionally gzip-compressed) tar archive `archive` into `dest`: regular files
/// and directories only; links and special files are skipped; an entry whose path would
/// leave `dest` (absolute, or with `..`) is an error. Returns the number of files written.
pub fn unpack(archive: &Path, dest: &Path) -> Result<usize, DataError> {
    let file = std::fs::File::open(archive).map_err(|e| DataError::io(archive, e))?;
    let mut head = [0u8; 2];
    let gzip = {
        let mut f = std::fs::File::open(archive).map_err(|e| DataError::io(archive, e))?;
        read_full(&mut f, &mut head).map_err(|e| DataError::io(archive, e))? == 2
            && head == [0x1f, 0x8b]
    };
    let reader: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(
            file,
        )))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    let mut written = 0;
    for entry in TarReader::new(reader, archive, gzip) {
        let entry = entry?;
        let rel = Path::new(&entry.path);
        if rel.is_absolute()
            || rel.components().any(|c| {
                !matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            })
        {
            return Err(DataError::format(
                archive,
                entry.header_offset,
                "a relative path inside the archive",
                entry.path.clone(),
            ));
        }
        let out = dest.join(rel);
        match entry.kind {
            EntryKind::Directory => {
                std::fs::create_dir_all(&out).map_err(|e| DataError::io(&out, e))?;
            }
            EntryKind::File => {
                if let Some(parent) = out.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| DataError::io(parent, e))?;
                }
                std::fs::write(&out, &entry.data).map_err(|e| DataError::io(&out, e))?;
                written += 1;
            }
            EntryKind::Link | EntryKind::Special => {}
        }
    }
    Ok(written)
}

#[cfg(test)]
pub(crate) mod tests {
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

    #[test]
    fn number_fields() {
        assert_eq!(parse_number(b"0000644\0"), Ok(0o644));
        assert_eq!(parse_number(b"  17 \0\0"), Ok(0o17));
        assert_eq!(parse_number(b"\0\0\0\0"), Ok(0));
        assert_eq!(parse_number(&[0x80, 0, 0, 1, 0]), Ok(256));
        assert!(parse_number(b"0008").is_err());
        assert!(parse_number(b"12 34").is_err());
        assert!(parse_number(&[0xff, 0xff]).is_err());
    }

    #[test]
    fn unpack_writes_files_and_refuses_paths_outside() {
        let dir = tempfile::tempdir().unwrap();
        let arch = dir.path().join("a.tar");
        std::fs::write(
            &arch,
            tar(&[("top/x/1.txt", b"one"), ("top/2.txt", b"two")]),
        )
        .unwrap();
        let dest = dir.path().join("out");
        assert_eq!(unpack(&arch, &dest).unwrap(), 2);
        assert_eq!(std::fs::read(dest.join("top/x/1.txt")).unwrap(), b"one");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &tar(&[("../evil", b"x")])).unwrap();
        std::fs::write(&arch, enc.finish().unwrap()).unwrap();
        let e = unpack(&arch, &dest).unwrap_err().to_string();
        assert!(e.contains("relative path"), "{e}");
        assert!(!dir.path().join("evil").exists());
    }
}
