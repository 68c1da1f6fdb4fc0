//! NumPy's file formats, as far as the peers need them: `.npy` arrays (written: `<f8`, `<i8`,
//! `<i4`, `|S<n>`; read: `<f8` in C or Fortran order) and `.npz` archives (written: a zip of
//! `.npy` members, stored uncompressed). Format 1.0, little-endian, as `numpy.save` writes.

use std::io::{self, Write};
use std::path::Path;

/// An array ready to be written: its dtype descriptor, shape and raw little-endian bytes.
pub struct Array {
    descr: String,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl Array {
    /// `<f8` (float64).
    pub fn f64(shape: &[usize], values: &[f64]) -> Self {
        assert_eq!(shape.iter().product::<usize>(), values.len(), "shape");
        Self {
            descr: "<f8".into(),
            shape: shape.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// `<i8` (int64).
    pub fn i64(shape: &[usize], values: &[i64]) -> Self {
        assert_eq!(shape.iter().product::<usize>(), values.len(), "shape");
        Self {
            descr: "<i8".into(),
            shape: shape.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// `<i4` (int32).
    pub fn i32(shape: &[usize], values: &[i32]) -> Self {
        assert_eq!(shape.iter().product::<usize>(), values.len(), "shape");
        Self {
            descr: "<i4".into(),
            shape: shape.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// Indices as `<i4` when every value fits, else `<i8` (SciPy's choice for CSR arrays).
    pub fn indices(shape: &[usize], values: &[usize]) -> Self {
        if values.iter().all(|&v| i32::try_from(v).is_ok()) {
            let v: Vec<i32> = values.iter().map(|&v| v as i32).collect();
            Self::i32(shape, &v)
        } else {
            let v: Vec<i64> = values.iter().map(|&v| v as i64).collect();
            Self::i64(shape, &v)
        }
    }

    /// A 0-d byte string (`|S<n>`), e.g. the `format` member of a SciPy sparse `.npz`.
    pub fn bytes_scalar(s: &str) -> Self {
        Self {
            descr: format!("|S{}", s.len().max(1)),
            shape: Vec::new(),
            bytes: if s.is_empty() {
                vec![0]
            } else {
                s.as_bytes().to_vec()
            },
        }
    }

    /// The whole `.npy` file.
    pub fn to_npy(&self) -> Vec<u8> {
        let shape = match self.shape.as_slice() {
            [] => "()".to_string(),
            [n] => format!("({n},)"),
            s => format!(
                "({})",
                s.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut header = format!(
            "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
            self.descr
        );
        // Magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
        let unpadded = 10 + header.len() + 1;
        header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
        header.push('\n');
        let mut out = Vec::with_capacity(10 + header.len() + self.bytes.len());
        out.extend_from_slice(b"\x93NUMPY\x01\x00");
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&self.bytes);
        out
    }
}

/// Write one array as `.npy`.
pub fn write_npy(path: &Path, a: &Array) -> io::Result<()> {
    std::fs::write(path, a.to_npy())
}

/// Write named arrays as an `.npz` (a zip archive of `<name>.npy` members, stored). Members
/// and the archive must stay below 4 GiB (no zip64).
pub fn write_npz(path: &Path, members: &[(&str, Array)]) -> io::Result<()> {
    let too_big = || io::Error::other("npz member or archive of 4 GiB or more (zip64 unsupported)");
    let mut out = io::BufWriter::new(std::fs::File::create(path)?);
    let mut central = Vec::new();
    let mut offset: u64 = 0;
    for (name, a) in members {
        let data = a.to_npy();
        let name = format!("{name}.npy");
        let crc = crc32fast::hash(&data);
        let size = u32::try_from(data.len()).map_err(|_| too_big())?;
        let at = u32::try_from(offset).map_err(|_| too_big())?;
        let common = |buf: &mut Vec<u8>| {
            buf.extend_from_slice(&20u16.to_le_bytes()); // version needed: 2.0
            buf.extend_from_slice(&0u16.to_le_bytes()); // flags
            buf.extend_from_slice(&0u16.to_le_bytes()); // method: stored
            buf.extend_from_slice(&0u16.to_le_bytes()); // time 00:00
            buf.extend_from_slice(&0x21u16.to_le_bytes()); // date 1980-01-01
            buf.extend_from_slice(&crc.to_le_bytes());
            buf.extend_from_slice(&size.to_le_bytes()); // compressed
            buf.extend_from_slice(&size.to_le_bytes()); // uncompressed
            buf.extend_from_slice(&(name.len() as u16).to_le_bytes());
            buf.extend_from_slice(&0u16.to_le_bytes()); // extra length
        };
        let mut local = b"PK\x03\x04".to_vec();
        common(&mut local);
        local.extend_from_slice(name.as_bytes());
        out.write_all(&local)?;
        out.write_all(&data)?;
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut central);
        central.extend_from_slice(&0u16.to_le_bytes()); // comment length
        central.extend_from_slice(&0u16.to_le_bytes()); // disk
        central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&at.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
        offset += (local.len() + data.len()) as u64;
    }
    let cd_at = u32::try_from(offset).map_err(|_| too_big())?;
    let cd_len = u32::try_from(central.len()).map_err(|_| too_big())?;
    out.write_all(&central)?;
    let mut end = b"PK\x05\x06".to_vec();
    end.extend_from_slice(&0u16.to_le_bytes()); // this disk
    end.extend_from_slice(&0u16.to_le_bytes()); // central directory's disk
    end.extend_from_slice(&(members.len() as u16).to_le_bytes());
    end.extend_from_slice(&(members.len() as u16).to_le_bytes());
    end.extend_from_slice(&cd_len.to_le_bytes());
    end.extend_from_slice(&cd_at.to_le_bytes());
    end.extend_from_slice(&0u16.to_le_bytes()); // comment length
    out.write_all(&end)?;
    out.flush()
}

/// A float64 array read from a `.npy` file, in C (row-major) order.
#[derive(Debug, Clone, PartialEq)]
pub struct F64Array {
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
}

/// Read a `.npy` file of `<f8` values (C or Fortran order; format 1.0, 2.0 or 3.0).
pub fn read_f64(path: &Path) -> Result<F64Array, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_f64(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`read_f64`] on the file's bytes.
pub fn parse_f64(bytes: &[u8]) -> Result<F64Array, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file".into());
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported .npy format version {v}")),
    };
    let header = bytes
        .get(start..start + len)
        .ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(header).map_err(|_| "non-UTF-8 .npy header")?;
    let descr = header_value(header, "descr").ok_or("no 'descr' in the .npy header")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    if descr != "<f8" && descr != "=f8" {
        return Err(format!("dtype {descr}, expected float64 ('<f8')"));
    }
    let fortran = match header_value(header, "fortran_order") {
        Some("True") => true,
        Some("False") => false,
        _ => return Err("no 'fortran_order' in the .npy header".into()),
    };
    let shape_text = header_value(header, "shape").ok_or("no 'shape' in the .npy header")?;
    let shape: Vec<usize> = shape_text
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad shape {shape_text}"))
        })
        .collect::<Result<_, _>>()?;
    let count = shape
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .ok_or("shape overflows")?;
    let data = &bytes[start + len..];
    if data.len() != count * 8 {
        return Err(format!(
            "{} data bytes for shape {shape:?} (expected {})",
            data.len(),
            count * 8
        ));
    }
    let raw: Vec<f64> = data
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let values = if fortran && shape.len() > 1 {
        // Column-major to row-major: element (i0, i1, ...) sits at sum i_k * stride_k with the
        // first axis fastest.
        let mut out = vec![0.0; count];
        let mut f_strides = vec![1usize; shape.len()];
        for k in 1..shape.len() {
            f_strides[k] = f_strides[k - 1] * shape[k - 1];
        }
        let mut idx = vec![0usize; shape.len()];
        for o in out.iter_mut() {
            *o = raw[idx
                .iter()
                .zip(&f_strides)
                .map(|(i, s)| i * s)
                .sum::<usize>()];
            for k in (0..shape.len()).rev() {
                idx[k] += 1;
                if idx[k] < shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
        out
    } else {
        raw
    };
    Ok(F64Array { shape, values })
}

/// The text of `'key': value` in a `.npy` header dict (up to the next top-level comma).
fn header_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let at = header
        .find(&format!("'{key}'"))
        .or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = header[at + key.len() + 2..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, ch) in rest.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(rest[..=i].trim());
                }
            }
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_padded_to_64_bytes_and_read_back() {
        for shape in [vec![], vec![3], vec![2, 3], vec![1, 2, 2]] {
            let n: usize = shape.iter().product();
            let values: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 1.0).collect();
            let bytes = Array::f64(&shape, &values).to_npy();
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0);
            assert_eq!(bytes[10 + header_len - 1], b'\n');
            let back = parse_f64(&bytes).unwrap();
            assert_eq!(back.shape, shape);
            assert_eq!(back.values, values);
        }
    }

    #[test]
    fn fortran_order_is_read_row_major() {
        let header = "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }";
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        // Columns of [[1, 2, 3], [4, 5, 6]].
        for v in [1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        let a = parse_f64(&bytes).unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.values, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    #[test]
    fn wrong_dtypes_and_truncated_files_are_errors() {
        let bytes = Array::i64(&[2], &[1, 2]).to_npy();
        assert!(parse_f64(&bytes).unwrap_err().contains("<i8"));
        let bytes = Array::f64(&[2], &[1.0, 2.0]).to_npy();
        assert!(parse_f64(&bytes[..bytes.len() - 1]).is_err());
        assert!(parse_f64(b"PK\x03\x04").is_err());
    }

    #[test]
    fn npz_is_a_zip_of_npy_members() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npz");
        write_npz(
            &path,
            &[
                ("data", Array::f64(&[2], &[1.0, 2.0])),
                ("format", Array::bytes_scalar("csr")),
            ],
        )
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..4], b"PK\x03\x04");
        let end = bytes.len() - 22;
        assert_eq!(&bytes[end..end + 4], b"PK\x05\x06");
        assert_eq!(u16::from_le_bytes([bytes[end + 10], bytes[end + 11]]), 2);
        // The first member's data follows its 30-byte header and name, CRC-checked.
        let name_len = u16::from_le_bytes([bytes[26], bytes[27]]) as usize;
        assert_eq!(&bytes[30..30 + name_len], b"data.npy");
        let size = u32::from_le_bytes(bytes[18..22].try_into().unwrap()) as usize;
        let member = &bytes[30 + name_len..30 + name_len + size];
        assert_eq!(
            crc32fast::hash(member),
            u32::from_le_bytes(bytes[14..18].try_into().unwrap())
        );
        assert_eq!(parse_f64(member).unwrap().values, vec![1.0, 2.0]);
    }
}
