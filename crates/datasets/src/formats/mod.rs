//! Parsers for generic public file formats (IDX, MAT v5, svmlight, tar, the Broad GCT/RES/CLS
//! expression formats and shared CSV pieces). Readers of one data set's own layout live in
//! that data set's folder.

pub(crate) mod expr_text;
pub mod gct;
pub mod idx;
pub mod mat;
pub mod svmlight;
pub mod tar;

use crate::DataError;

/// Bytes decoded as ISO-8859-1: every byte is the code point of the same value, so no input
/// is ever rejected for its encoding.
pub fn decode_latin1(bytes: &[u8]) -> String {
    if bytes.is_ascii() {
        // Valid UTF-8 already: skip the per-character loop.
        return String::from_utf8_lossy(bytes).into_owned();
    }
    bytes.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod latin1_tests {
    #[test]
    fn every_byte_is_its_code_point() {
        assert_eq!(super::decode_latin1(b"a\xe9\xff"), "a\u{e9}\u{ff}");
        assert_eq!(super::decode_latin1(b"plain"), "plain");
    }
}
use std::io::Read;
use std::path::Path;

/// Read a whole file, transparently decompressing gzip (detected by its magic bytes, not by
/// the file name). A truncated or corrupt stream is a [`DataError::Corrupt`] naming how many
/// decompressed bytes were read before it failed.
pub fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>, DataError> {
    let raw = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    if raw.len() < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len() * 4);
    let mut dec = flate2::read::MultiGzDecoder::new(&raw[..]);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match dec.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(DataError::Corrupt {
                    path: path.to_path_buf(),
                    offset: out.len() as u64,
                    detail: e.to_string(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_is_detected_by_magic_and_truncation_is_typed() {
        let dir = tempfile::tempdir().unwrap();
        let payload: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&payload).unwrap();
        let gz = enc.finish().unwrap();
        let p = dir.path().join("no-extension");
        std::fs::write(&p, &gz).unwrap();
        assert_eq!(read_maybe_gzip(&p).unwrap(), payload);
        std::fs::write(&p, &gz[..gz.len() / 2]).unwrap();
        assert!(matches!(
            read_maybe_gzip(&p),
            Err(DataError::Corrupt { .. })
        ));
        let mut bad = gz.clone();
        let n = bad.len();
        bad[n - 6] ^= 0xff; // CRC/size trailer
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(
            read_maybe_gzip(&p),
            Err(DataError::Corrupt { .. })
        ));
    }
}
