//! Downloading a data set from its canonical source: resumable (HTTP range requests on a
//! `.part` file), checked (size and SHA-256 before the file takes its final name), and quick
//! to fail when the network is unreachable, with a message saying where to put the files by
//! hand.

use crate::DataError;
use crate::identity::hex;
use crate::registry::{DatasetInfo, Source, Unpack};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Present with the right checksum: nothing downloaded.
    AlreadyPresent,
    /// Downloaded (resumed from `resumed_from` bytes of an earlier partial download).
    Downloaded { bytes: u64, resumed_from: u64 },
    /// Downloaded and unpacked (a tar archive): `files` regular files written beside it.
    Unpacked {
        bytes: u64,
        resumed_from: u64,
        files: usize,
    },
}

/// Progress of a download, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub done: u64,
    pub total: Option<u64>,
}

/// Download options.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Time to establish a connection (including name resolution) before giving up.
    pub connect_timeout: Duration,
    /// Longest silence while receiving before giving up.
    pub read_timeout: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
        }
    }
}

fn fetch_err(url: &str, message: impl Into<String>) -> DataError {
    DataError::Fetch {
        url: url.to_string(),
        message: message.into(),
    }
}

/// SHA-256 (hex) of a file.
pub fn sha256_file(path: &Path) -> Result<String, DataError> {
    let mut f = std::fs::File::open(path).map_err(|e| DataError::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| DataError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

/// Download `url` to `dest`, resuming `dest.part` when present, and checking `sha256` and
/// `size` (when given) before renaming into place. A corrupt download is deleted; an
/// interrupted one is kept for the next attempt to resume.
pub fn download(
    url: &str,
    dest: &Path,
    sha256: Option<&str>,
    size: Option<u64>,
    opts: &FetchOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome, DataError> {
    if dest.is_file() {
        match sha256 {
            Some(want) if sha256_file(dest)? == want => return Ok(Outcome::AlreadyPresent),
            None => return Ok(Outcome::AlreadyPresent),
            Some(_) => {} // present but different: download again
        }
    }
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| DataError::io(dir, e))?;
    }
    let part = part_path(dest);
    let mut have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    if size.is_some_and(|s| have > s) {
        have = 0;
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(opts.connect_timeout))
        .timeout_resolve(Some(opts.connect_timeout))
        .timeout_per_read(Some(opts.read_timeout))
        .http_status_as_error(false)
        .build()
        .into();
    if have > 0 && size == Some(have) {
        // A previous attempt received every byte but stopped before the checks.
        let resumed = Outcome::Downloaded {
            bytes: 0,
            resumed_from: have,
        };
        return finish(url, &part, dest, sha256, size, resumed);
    }
    let mut req = agent.get(url);
    if have > 0 {
        req = req.header("Range", &format!("bytes={have}-"));
    }
    let mut resp = req
        .call()
        .map_err(|e| fetch_err(url, format!("cannot reach the server: {e}")))?;
    // 206: the server honours the range, append; 200: it sends everything, start over.
    let base = match resp.status().as_u16() {
        206 if have > 0 => have,
        200 => 0,
        416 if have > 0 => {
            // The range starts past the end: the partial file is already complete.
            let resumed = Outcome::Downloaded {
                bytes: 0,
                resumed_from: have,
            };
            return finish(url, &part, dest, sha256, size, resumed);
        }
        s => return Err(fetch_err(url, format!("HTTP status {s}"))),
    };
    let total = resp.body().content_length().map(|n| n + base).or(size);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(base > 0)
        .truncate(base == 0)
        .open(&part)
        .map_err(|e| DataError::io(&part, e))?;
    let mut written = base;
    let mut reader = resp.body_mut().as_reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = file.sync_all();
                return Err(fetch_err(
                    url,
                    format!(
                        "transfer interrupted after {written} bytes ({e}); {} kept, run again to resume",
                        part.display()
                    ),
                ));
            }
        };
        file.write_all(&buf[..n])
            .map_err(|e| DataError::io(&part, e))?;
        written += n as u64;
        progress(Progress {
            done: written,
            total,
        });
    }
    file.sync_all().map_err(|e| DataError::io(&part, e))?;
    if let Some(t) = total
        && written < t
    {
        return Err(fetch_err(
            url,
            format!(
                "transfer ended after {written} of {t} bytes; {} kept, run again to resume",
                part.display()
            ),
        ));
    }
    let outcome = Outcome::Downloaded {
        bytes: written - base,
        resumed_from: base,
    };
    finish(url, &part, dest, sha256, size, outcome)
}

/// Check a finished `.part` file and move it into place.
fn finish(
    url: &str,
    part: &Path,
    dest: &Path,
    sha256: Option<&str>,
    size: Option<u64>,
    outcome: Outcome,
) -> Result<Outcome, DataError> {
    let len = std::fs::metadata(part)
        .map_err(|e| DataError::io(part, e))?
        .len();
    if let Some(s) = size
        && len != s
    {
        let _ = std::fs::remove_file(part);
        return Err(fetch_err(
            url,
            format!("downloaded {len} bytes but the release has {s}; the partial file was deleted"),
        ));
    }
    if let Some(want) = sha256 {
        let got = sha256_file(part)?;
        if got != want {
            let _ = std::fs::remove_file(part);
            return Err(fetch_err(
                url,
                format!(
                    "checksum mismatch: expected sha256 {want}, got {got}; the corrupt download was deleted"
                ),
            ));
        }
    }
    std::fs::rename(part, dest).map_err(|e| DataError::io(dest, e))?;
    Ok(outcome)
}

/// Fetch every downloadable file of a data set into `<data_dir>/<dir>/`. Files without a
/// download address must already be present; otherwise the error says how to obtain them.
pub fn fetch(
    info: &DatasetInfo,
    data_dir: &Path,
    opts: &FetchOptions,
    progress: &mut dyn FnMut(&Source, Progress),
) -> Result<Vec<(&'static str, Outcome)>, DataError> {
    let dir = data_dir.join(info.dir);
    if info.sources.is_empty() {
        return Err(DataError::Missing {
            name: info.name.into(),
            dir,
            tried: "no public download address".into(),
            hint: info.manual.into(),
        });
    }
    let mut out = Vec::new();
    for s in info.sources {
        let dest = dir.join(s.file);
        let outcome = match s.url {
            Some(url) => download(url, &dest, s.sha256, s.size, opts, &mut |p| progress(s, p))
                .map_err(|e| match e {
                    DataError::Fetch { url, message } => DataError::Fetch {
                        url,
                        message: format!("{message}. To install by hand: {}", info.manual),
                    },
                    other => other,
                })?,
            None if dest.is_file() => Outcome::AlreadyPresent,
            None => {
                return Err(DataError::Missing {
                    name: info.name.into(),
                    dir,
                    tried: s.file.into(),
                    hint: info.manual.into(),
                });
            }
        };
        let outcome = match outcome {
            Outcome::Downloaded {
                bytes,
                resumed_from,
            } if s.unpack == Unpack::Tar => {
                // Unpacked next to the archive, which stays (its checksum is what `verify`
                // checks).
                let files = crate::formats::tar::unpack(&dest, dest.parent().unwrap_or(&dir))?;
                Outcome::Unpacked {
                    bytes,
                    resumed_from,
                    files,
                }
            }
            other => other,
        };
        out.push((s.file, outcome));
    }
    Ok(out)
}
