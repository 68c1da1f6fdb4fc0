//! The IDX format of MNIST (LeCun et al.): a 4-byte magic (two zero bytes, a type code, the
//! number of dimensions), one big-endian `u32` per dimension, then the data in row-major
//! order, big-endian for multi-byte types.

use crate::DataError;
use std::path::Path;

/// The element type of an IDX file (byte 2 of the magic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdxType {
    U8,
    I8,
    I16,
    I32,
    F32,
    F64,
}

impl IdxType {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0x08 => IdxType::U8,
            0x09 => IdxType::I8,
            0x0B => IdxType::I16,
            0x0C => IdxType::I32,
            0x0D => IdxType::F32,
            0x0E => IdxType::F64,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            IdxType::U8 | IdxType::I8 => 1,
            IdxType::I16 => 2,
            IdxType::I32 | IdxType::F32 => 4,
            IdxType::F64 => 8,
        }
    }
}

/// A decoded IDX array. `data` holds the raw big-endian element bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct IdxArray {
    pub kind: IdxType,
    pub dims: Vec<usize>,
    pub data: Vec<u8>,
    /// Bytes of header before the data (for error offsets).
    pub header_len: usize,
}

impl IdxArray {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Read an IDX file, plain or gzip-compressed.
pub fn read_idx(path: &Path) -> Result<IdxArray, DataError> {
    let bytes = super::read_maybe_gzip(path)?;
    parse_idx(path, bytes)
}

/// Parse IDX bytes (already decompressed); `path` is used for error messages only.
pub fn parse_idx(path: &Path, bytes: Vec<u8>) -> Result<IdxArray, DataError> {
    let fail = |offset: usize, expected: String, found: String| {
        Err(DataError::format(path, offset as u64, expected, found))
    };
    if bytes.len() < 4 {
        return fail(
            0,
            "a 4-byte IDX magic number".into(),
            format!("{} bytes", bytes.len()),
        );
    }
    if bytes[0] != 0 || bytes[1] != 0 {
        return fail(
            0,
            "IDX magic starting with two zero bytes".into(),
            format!("{:02x} {:02x}", bytes[0], bytes[1]),
        );
    }
    let Some(kind) = IdxType::from_code(bytes[2]) else {
        return fail(
            2,
            "an IDX type code (08, 09, 0b, 0c, 0d or 0e)".into(),
            format!("{:02x}", bytes[2]),
        );
    };
    let ndims = bytes[3] as usize;
    if ndims == 0 {
        return fail(3, "at least one dimension".into(), "0".into());
    }
    let header_len = 4 + 4 * ndims;
    if bytes.len() < header_len {
        return fail(
            bytes.len(),
            format!("{ndims} big-endian u32 dimension sizes ({header_len} header bytes)"),
            format!("end of file after {} bytes", bytes.len()),
        );
    }
    let dims: Vec<usize> = (0..ndims)
        .map(|i| {
            let o = 4 + 4 * i;
            u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) as usize
        })
        .collect();
    let expected = dims
        .iter()
        .try_fold(kind.size(), |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize);
    let Some(expected) = expected else {
        return fail(
            4,
            "dimension sizes whose product fits in memory".into(),
            format!("{dims:?}"),
        );
    };
    let have = bytes.len() - header_len;
    if have != expected {
        let what = if have < expected {
            "truncated data"
        } else {
            "trailing bytes"
        };
        return fail(
            header_len + have.min(expected),
            format!("{expected} data bytes for dimensions {dims:?}"),
            format!("{have} ({what})"),
        );
    }
    let mut data = bytes;
    data.drain(..header_len);
    Ok(IdxArray {
        kind,
        dims,
        data,
        header_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx_bytes(code: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, code, dims.len() as u8];
        for d in dims {
            b.extend_from_slice(&d.to_be_bytes());
        }
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn parses_a_small_array() {
        let a = parse_idx(
            Path::new("t"),
            idx_bytes(0x08, &[2, 3], &[1, 2, 3, 4, 5, 6]),
        )
        .unwrap();
        assert_eq!(a.dims, vec![2, 3]);
        assert_eq!(a.kind, IdxType::U8);
        assert_eq!(a.data, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(a.header_len, 12);
    }

    #[test]
    fn every_truncation_is_a_typed_error() {
        let good = idx_bytes(0x08, &[2, 3], &[1, 2, 3, 4, 5, 6]);
        for cut in 0..good.len() {
            let e = parse_idx(Path::new("t"), good[..cut].to_vec()).unwrap_err();
            assert!(matches!(e, DataError::Format { .. }), "cut {cut}: {e}");
        }
        let mut long = good.clone();
        long.push(0);
        let e = parse_idx(Path::new("t"), long).unwrap_err().to_string();
        assert!(
            e.contains("trailing bytes") && e.contains("at byte 18"),
            "{e}"
        );
    }

    #[test]
    fn bad_magic_and_type_name_their_offset() {
        let e = parse_idx(Path::new("f.idx"), vec![1, 0, 8, 1, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().starts_with("f.idx: at byte 0:"), "{e}");
        let e = parse_idx(Path::new("f.idx"), vec![0, 0, 7, 1, 0, 0, 0, 0]).unwrap_err();
        assert!(e.to_string().contains("at byte 2"), "{e}");
        let huge = idx_bytes(0x0E, &[u32::MAX, u32::MAX, u32::MAX], &[]);
        assert!(parse_idx(Path::new("f"), huge).is_err());
    }
}
