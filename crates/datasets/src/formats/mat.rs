//! MATLAB Level 5 MAT-files (the format MATLAB writes with `save -v6` and `save -v7`).
//!
//! # Layout
//!
//! A file is a 128-byte header followed by a sequence of *data elements*:
//!
//! * **Header.** 116 bytes of descriptive text (`MATLAB 5.0 MAT-file, Platform: ...`), 8 bytes
//!   of subsystem-data offset (all zeros or all spaces when absent), a 2-byte version (0x0100)
//!   and the 2-byte endian indicator: the characters `M`,`I` written as one 16-bit integer by
//!   the writing machine, so a little-endian file holds the bytes `"IM"` and a big-endian file
//!   `"MI"`. The version and every later multi-byte number use the file's byte order.
//! * **Data element.** An 8-byte tag (`u32` data type, `u32` byte count), the data, and padding
//!   to the next multiple of 8 bytes. When the upper 16 bits of the first tag word are non-zero
//!   the element uses the 4-byte *small element* form instead: byte count (at most 4) in the
//!   upper 16 bits, data type in the lower 16 bits, and the data in the following 4 bytes.
//! * **miCOMPRESSED (15).** A zlib stream that inflates to further data elements (MATLAB puts
//!   one `miMATRIX` in each). Compressed elements are *not* padded.
//! * **miMATRIX (14).** Sub-elements: array flags (`miUINT32` x 2: the class in the low byte,
//!   bit 0x0800 complex, 0x0400 global, 0x0200 logical; the second word is `nzmax` for
//!   sparse arrays), dimensions (`miINT32`, at least two), the array name (`miINT8`), then
//!   class-specific data:
//!   - numeric classes: the real part and, when complex, the imaginary part, column-major;
//!   - char: the characters (`miUINT16`/`miUTF16`, `miUTF8`, or `miUINT8` as some non-MATLAB
//!     writers use), column-major;
//!   - sparse: `ir` (row indices), `jc` (column starts, `cols + 1` entries), `pr` (and `pi`);
//!   - cell: one `miMATRIX` (with an empty name) per cell, column-major;
//!   - struct: the field-name length `L` (`miINT32`), the field names (`miINT8`, `L` bytes each,
//!     NUL-padded), then for every element (column-major) one `miMATRIX` per field.
//!
//! # Choices where the specification is loose
//!
//! * Numeric data may be stored in a smaller type than its class (MATLAB stores integer-valued
//!   doubles as `miUINT8`, for example); every numeric storage type is converted to the class.
//!   For integer classes the stored values must be integral and inside the class's range.
//!   Values are kept as `f64`, exact for every class except int64/uint64 beyond 2^53; for those
//!   two classes the `exact` field of [`MatValue::Numeric`] carries the exact real part as `i128`.
//! * Logical arrays are `uint8` (or any numeric class) with the logical flag; non-zero is true.
//! * A zero-byte `miMATRIX` (MATLAB writes these for empty struct fields and cells) is read as
//!   the empty `0x0` double `[]`.
//! * Sparse arrays: MATLAB writes `ir` with `nzmax` entries but `pr` with only `nnz = jc[cols]`;
//!   the reader therefore accepts `ir`/`pr`/`pi` of at least `nnz` entries and keeps the first
//!   `nnz`. Row indices must be strictly increasing inside each column (as MATLAB keeps them),
//!   so the result converts to CSR without sorting.
//! * Char data: UTF-16 code units are decoded to a `String` (a lone surrogate becomes
//!   U+FFFD); the number of UTF-16 units must match the dimensions (for `miUTF8` storage the
//!   decoded text is counted in UTF-16 units, MATLAB's notion of a character). 8-bit storage is
//!   read as Latin-1.
//! * Compression is accepted at the top level only (MATLAB never nests it); trailing bytes after
//!   a zlib stream's end inside its element are ignored, a stream that ends before its end marker
//!   is [`DataError::Corrupt`].
//! * Missing padding at the very end of an enclosing element or of the file is tolerated;
//!   any other leftover byte inside an element is a format error.
//! * Objects (class 3), function handles and opaque classes are rejected with a typed error.
//!
//! # Errors
//!
//! Every malformed input is a [`DataError::Format`] naming the byte offset where it stopped
//! making sense. Inside a compressed element that offset counts from the start of the
//! *decompressed* stream, and the `expected` text says so and names the file offset of the
//! compressed element. Broken zlib data is [`DataError::Corrupt`]. Sizes read from the file are
//! checked against the bytes that remain before anything is allocated, and nesting of cells and
//! structs is limited to [`MAX_DEPTH`] levels, so no input can make the reader panic, overflow
//! its stack or allocate more than a small multiple of the (decompressed) input. Decompressed
//! data is bounded by the stream itself: deflate cannot expand more than about 1032:1.

use crate::DataError;
use sprs::CsMat;
use std::io::Write;
use std::path::Path;

const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_INT16: u32 = 3;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_SINGLE: u32 = 7;
const MI_DOUBLE: u32 = 9;
const MI_INT64: u32 = 12;
const MI_UINT64: u32 = 13;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MI_UTF8: u32 = 16;
const MI_UTF16: u32 = 17;
const MI_UTF32: u32 = 18;

const FLAG_COMPLEX: u32 = 0x0800;
const FLAG_GLOBAL: u32 = 0x0400;
const FLAG_LOGICAL: u32 = 0x0200;

const CLASS_CELL: u8 = 1;
const CLASS_STRUCT: u8 = 2;
const CLASS_OBJECT: u8 = 3;
const CLASS_CHAR: u8 = 4;
const CLASS_SPARSE: u8 = 5;

/// Maximal nesting depth of cells and structs.
/// The largest struct array without fields accepted (it stores no bytes per element).
pub const MAX_FIELDLESS: usize = 1 << 20;

pub const MAX_DEPTH: usize = 128;

/// Name of a data type code, for messages.
fn mi_name(ty: u32) -> String {
    let s = match ty {
        MI_INT8 => "miINT8",
        MI_UINT8 => "miUINT8",
        MI_INT16 => "miINT16",
        MI_UINT16 => "miUINT16",
        MI_INT32 => "miINT32",
        MI_UINT32 => "miUINT32",
        MI_SINGLE => "miSINGLE",
        MI_DOUBLE => "miDOUBLE",
        MI_INT64 => "miINT64",
        MI_UINT64 => "miUINT64",
        MI_MATRIX => "miMATRIX",
        MI_COMPRESSED => "miCOMPRESSED",
        MI_UTF8 => "miUTF8",
        MI_UTF16 => "miUTF16",
        MI_UTF32 => "miUTF32",
        _ => return format!("data type {ty}"),
    };
    s.to_string()
}

/// Bytes per value of a numeric data type, `None` for the others.
fn mi_size(ty: u32) -> Option<usize> {
    Some(match ty {
        MI_INT8 | MI_UINT8 => 1,
        MI_INT16 | MI_UINT16 => 2,
        MI_INT32 | MI_UINT32 | MI_SINGLE => 4,
        MI_DOUBLE | MI_INT64 | MI_UINT64 => 8,
        _ => return None,
    })
}

fn is_integer_type(ty: u32) -> bool {
    matches!(
        ty,
        MI_INT8 | MI_UINT8 | MI_INT16 | MI_UINT16 | MI_INT32 | MI_UINT32 | MI_INT64 | MI_UINT64
    )
}

/// The numeric array classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumClass {
    Double,
    Single,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
}

impl NumClass {
    /// All numeric classes, in class-code order.
    pub const ALL: [NumClass; 10] = [
        NumClass::Double,
        NumClass::Single,
        NumClass::Int8,
        NumClass::UInt8,
        NumClass::Int16,
        NumClass::UInt16,
        NumClass::Int32,
        NumClass::UInt32,
        NumClass::Int64,
        NumClass::UInt64,
    ];

    fn from_code(code: u8) -> Option<Self> {
        Self::ALL.get(usize::from(code).checked_sub(6)?).copied()
    }

    /// The array-class code in the array flags (mxDOUBLE_CLASS = 6 ... mxUINT64_CLASS = 15).
    pub fn code(self) -> u8 {
        6 + Self::ALL.iter().position(|&c| c == self).unwrap_or(0) as u8
    }

    /// MATLAB's name of the class.
    pub fn name(self) -> &'static str {
        match self {
            NumClass::Double => "double",
            NumClass::Single => "single",
            NumClass::Int8 => "int8",
            NumClass::UInt8 => "uint8",
            NumClass::Int16 => "int16",
            NumClass::UInt16 => "uint16",
            NumClass::Int32 => "int32",
            NumClass::UInt32 => "uint32",
            NumClass::Int64 => "int64",
            NumClass::UInt64 => "uint64",
        }
    }

    /// The data type MATLAB stores this class in when it does not narrow it.
    fn native_type(self) -> u32 {
        match self {
            NumClass::Double => MI_DOUBLE,
            NumClass::Single => MI_SINGLE,
            NumClass::Int8 => MI_INT8,
            NumClass::UInt8 => MI_UINT8,
            NumClass::Int16 => MI_INT16,
            NumClass::UInt16 => MI_UINT16,
            NumClass::Int32 => MI_INT32,
            NumClass::UInt32 => MI_UINT32,
            NumClass::Int64 => MI_INT64,
            NumClass::UInt64 => MI_UINT64,
        }
    }

    /// Inclusive value range of an integer class, `None` for double and single.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            NumClass::Double | NumClass::Single => return None,
            NumClass::Int8 => (i8::MIN.into(), i8::MAX.into()),
            NumClass::UInt8 => (0, u8::MAX.into()),
            NumClass::Int16 => (i16::MIN.into(), i16::MAX.into()),
            NumClass::UInt16 => (0, u16::MAX.into()),
            NumClass::Int32 => (i32::MIN.into(), i32::MAX.into()),
            NumClass::UInt32 => (0, u32::MAX.into()),
            NumClass::Int64 => (i64::MIN.into(), i64::MAX.into()),
            NumClass::UInt64 => (0, u64::MAX.into()),
        })
    }

    fn is_wide_int(self) -> bool {
        matches!(self, NumClass::Int64 | NumClass::UInt64)
    }
}

/// One decoded MATLAB array. All multi-element data is column-major, as in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum MatValue {
    /// A dense numeric array (classes double, single, int8 ... uint64).
    Numeric {
        class: NumClass,
        dims: Vec<usize>,
        /// Real part, converted to `f64` (exact except int64/uint64 beyond 2^53).
        re: Vec<f64>,
        /// Imaginary part of a complex array.
        im: Option<Vec<f64>>,
        /// The exact real part of int64/uint64 arrays; `None` for every other class.
        exact: Option<Vec<i128>>,
    },
    /// A char array; `text` holds the characters in column-major order (for a `1 x n` row,
    /// simply the string). See [`MatValue::char_rows`] for multi-row arrays.
    Char { dims: Vec<usize>, text: String },
    /// A logical array.
    Logical { dims: Vec<usize>, data: Vec<bool> },
    /// A sparse matrix in MATLAB's compressed-column form: the rows of column `c` are
    /// `ir[jc[c]..jc[c + 1]]` (strictly increasing) with values `re[jc[c]..jc[c + 1]]`.
    Sparse {
        rows: usize,
        cols: usize,
        ir: Vec<usize>,
        jc: Vec<usize>,
        re: Vec<f64>,
        im: Option<Vec<f64>>,
        logical: bool,
    },
    /// A cell array.
    Cell {
        dims: Vec<usize>,
        items: Vec<MatValue>,
    },
    /// A struct array: `items[element][field]`, fields in the order of `fields`.
    Struct {
        dims: Vec<usize>,
        fields: Vec<String>,
        items: Vec<Vec<MatValue>>,
    },
}

fn product(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

impl MatValue {
    /// A real double array (convenience for building values).
    pub fn double(dims: Vec<usize>, re: Vec<f64>) -> Self {
        MatValue::Numeric {
            class: NumClass::Double,
            dims,
            re,
            im: None,
            exact: None,
        }
    }

    /// A `1 x n` char row.
    pub fn string(text: &str) -> Self {
        MatValue::Char {
            dims: vec![1, text.encode_utf16().count()],
            text: text.to_string(),
        }
    }

    /// The dimensions (`[rows, cols]` for sparse matrices).
    pub fn dims(&self) -> Vec<usize> {
        match self {
            MatValue::Numeric { dims, .. }
            | MatValue::Char { dims, .. }
            | MatValue::Logical { dims, .. }
            | MatValue::Cell { dims, .. }
            | MatValue::Struct { dims, .. } => dims.clone(),
            MatValue::Sparse { rows, cols, .. } => vec![*rows, *cols],
        }
    }

    /// Number of elements (the product of the dimensions; saturating).
    pub fn len(&self) -> usize {
        product(&self.dims()).unwrap_or(usize::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A short description of the kind of array, for messages (`"double"`, `"char"`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            MatValue::Numeric { class, .. } => class.name(),
            MatValue::Char { .. } => "char",
            MatValue::Logical { .. } => "logical",
            MatValue::Sparse { .. } => "sparse",
            MatValue::Cell { .. } => "cell",
            MatValue::Struct { .. } => "struct",
        }
    }

    /// `"double [3x4]"`-style description, for messages.
    pub fn describe(&self) -> String {
        let dims: Vec<String> = self.dims().iter().map(usize::to_string).collect();
        format!("{} [{}]", self.kind(), dims.join("x"))
    }

    /// The text of a char array (column-major).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MatValue::Char { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The real part of a dense numeric array.
    pub fn numbers(&self) -> Option<&[f64]> {
        match self {
            MatValue::Numeric { re, .. } => Some(re),
            _ => None,
        }
    }

    /// The value of a real numeric (or logical) array with exactly one element.
    pub fn scalar(&self) -> Option<f64> {
        match self {
            MatValue::Numeric { re, im: None, .. } if re.len() == 1 => Some(re[0]),
            MatValue::Logical { data, .. } if data.len() == 1 => Some(f64::from(u8::from(data[0]))),
            _ => None,
        }
    }

    /// The items of a cell array.
    pub fn cell_items(&self) -> Option<&[MatValue]> {
        match self {
            MatValue::Cell { items, .. } => Some(items),
            _ => None,
        }
    }

    /// Field `name` of element `index` (0-based, column-major) of a struct array.
    pub fn field(&self, index: usize, name: &str) -> Option<&MatValue> {
        match self {
            MatValue::Struct { fields, items, .. } => {
                let f = fields.iter().position(|n| n == name)?;
                items.get(index)?.get(f)
            }
            _ => None,
        }
    }

    /// The rows of a two-dimensional char array (`None` for other values, or when the text
    /// holds characters outside the Basic Multilingual Plane so that characters and UTF-16
    /// units cannot be matched).
    pub fn char_rows(&self) -> Option<Vec<String>> {
        let MatValue::Char { dims, text } = self else {
            return None;
        };
        let [r, c] = dims[..] else { return None };
        let chars: Vec<char> = text.chars().collect();
        if chars.len() != r.checked_mul(c)? {
            return None;
        }
        Some(
            (0..r)
                .map(|i| (0..c).map(|j| chars[i + j * r]).collect())
                .collect(),
        )
    }

    /// The real part of a sparse matrix as a CSR matrix (rows x cols).
    pub fn sparse_to_csr(&self) -> Option<CsMat<f64>> {
        let MatValue::Sparse {
            rows,
            cols,
            ir,
            jc,
            re,
            ..
        } = self
        else {
            return None;
        };
        CsMat::try_new_csc((*rows, *cols), jc.clone(), ir.clone(), re.clone())
            .ok()
            .map(|m| m.to_csr())
    }
}

/// A decoded MAT-file.
#[derive(Debug, Clone, PartialEq)]
pub struct MatFile {
    /// The descriptive header text, trailing spaces and NULs removed.
    pub header_text: String,
    /// The subsystem-data offset of the header, when one is set.
    pub subsystem_offset: Option<u64>,
    /// Whether the file is big-endian (`"MI"`).
    pub big_endian: bool,
    /// The variables in file order, with their names.
    pub variables: Vec<(String, MatValue)>,
}

impl MatFile {
    /// The first variable called `name`.
    pub fn get(&self, name: &str) -> Option<&MatValue> {
        self.variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The variable names, in file order.
    pub fn names(&self) -> Vec<&str> {
        self.variables.iter().map(|(n, _)| n.as_str()).collect()
    }
}

/// Read a MAT-file from disk.
pub fn read_mat(path: &Path) -> Result<MatFile, DataError> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    parse_mat(path, &bytes)
}

/// Parse MAT-file bytes; `path` is used for error messages only.
pub fn parse_mat(path: &Path, bytes: &[u8]) -> Result<MatFile, DataError> {
    if bytes.len() < 128 {
        return Err(DataError::format(
            path,
            bytes.len() as u64,
            "a 128-byte MAT-file header",
            format!("end of file after {} bytes", bytes.len()),
        ));
    }
    let big = match &bytes[126..128] {
        b"IM" => false,
        b"MI" => true,
        other => {
            return Err(DataError::format(
                path,
                126,
                "the endian indicator \"IM\" or \"MI\" of a Level 5 MAT-file",
                format!("{:02x} {:02x}", other[0], other[1]),
            ));
        }
    };
    let version = if big {
        u16::from_be_bytes([bytes[124], bytes[125]])
    } else {
        u16::from_le_bytes([bytes[124], bytes[125]])
    };
    if version != 0x0100 {
        let found = if version == 0x0200 {
            "0x0200 (a MAT v7.3 file, which is an HDF5 container and not supported)".to_string()
        } else {
            format!("{version:#06x}")
        };
        return Err(DataError::format(
            path,
            124,
            "MAT-file version 0x0100",
            found,
        ));
    }
    let text_end = bytes[..116]
        .iter()
        .rposition(|&b| b != b' ' && b != 0)
        .map_or(0, |p| p + 1);
    let header_text = String::from_utf8_lossy(&bytes[..text_end]).into_owned();
    let ss = &bytes[116..124];
    let subsystem_offset = if ss.iter().all(|&b| b == 0) || ss.iter().all(|&b| b == b' ') {
        None
    } else {
        let a: [u8; 8] = ss.try_into().unwrap_or([0; 8]);
        Some(if big {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        })
    };

    let file = Parser {
        path,
        data: bytes,
        big,
        inflated_from: None,
    };
    let mut variables = Vec::new();
    let mut pos = 128;
    while pos < bytes.len() {
        let e = file.elem(pos, bytes.len())?;
        match e.ty {
            MI_MATRIX => variables.push(file.matrix(&e, 0)?),
            MI_COMPRESSED => {
                let inflated = inflate(path, &bytes[e.data..e.data + e.len], e.start)?;
                let inner = Parser {
                    path,
                    data: &inflated,
                    big,
                    inflated_from: Some(e.start),
                };
                let mut p = 0;
                while p < inflated.len() {
                    let ie = inner.elem(p, inflated.len())?;
                    if ie.ty != MI_MATRIX {
                        return Err(inner.err(
                            ie.start,
                            "a miMATRIX element inside miCOMPRESSED",
                            mi_name(ie.ty),
                        ));
                    }
                    variables.push(inner.matrix(&ie, 0)?);
                    p = ie.next;
                }
            }
            other => {
                return Err(file.err(
                    e.start,
                    "a miMATRIX or miCOMPRESSED top-level element",
                    mi_name(other),
                ));
            }
        }
        pos = e.next;
    }
    Ok(MatFile {
        header_text,
        subsystem_offset,
        big_endian: big,
        variables,
    })
}

/// Inflate a zlib stream completely; a stream that stops before its end marker or fails its
/// checksum is [`DataError::Corrupt`].
fn inflate(path: &Path, input: &[u8], file_offset: usize) -> Result<Vec<u8>, DataError> {
    use flate2::{Decompress, FlushDecompress, Status};
    let corrupt = |out: usize, detail: String| DataError::Corrupt {
        path: path.to_path_buf(),
        offset: out as u64,
        detail: format!(
            "zlib stream of the miCOMPRESSED element at file byte {file_offset}: {detail}"
        ),
    };
    let mut d = Decompress::new(true);
    let mut out: Vec<u8> = Vec::with_capacity(input.len().saturating_mul(4).clamp(64, 1 << 24));
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(1 << 12));
        }
        let (in0, out0) = (d.total_in(), d.total_out());
        let consumed = usize::try_from(in0).unwrap_or(usize::MAX).min(input.len());
        let status = d
            .decompress_vec(&input[consumed..], &mut out, FlushDecompress::None)
            .map_err(|e| corrupt(out.len(), e.to_string()))?;
        match status {
            Status::StreamEnd => return Ok(out),
            Status::Ok | Status::BufError => {
                let stalled = d.total_in() == in0 && d.total_out() == out0;
                if stalled && out.len() < out.capacity() {
                    return Err(corrupt(
                        out.len(),
                        "the stream ends before its end marker (truncated)".into(),
                    ));
                }
            }
        }
    }
}

/// One data element: where its tag starts, where its data starts, how long the data is, and
/// where the next element starts.
#[derive(Debug, Clone, Copy)]
struct Elem {
    ty: u32,
    start: usize,
    data: usize,
    len: usize,
    next: usize,
}

struct Parser<'a> {
    path: &'a Path,
    data: &'a [u8],
    big: bool,
    /// File offset of the miCOMPRESSED element `data` was inflated from.
    inflated_from: Option<usize>,
}

/// `N` bytes of `c` in little-endian order.
fn le<const N: usize>(c: &[u8], big: bool) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&c[..N]);
    if big {
        a.reverse();
    }
    a
}

impl Parser<'_> {
    fn err(
        &self,
        offset: usize,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> DataError {
        let mut expected = expected.into();
        if let Some(at) = self.inflated_from {
            expected = format!(
                "{expected} (offset inside the decompressed stream of the miCOMPRESSED element \
                 at file byte {at})"
            );
        }
        DataError::format(self.path, offset as u64, expected, found)
    }

    fn u32_at(&self, off: usize) -> u32 {
        u32::from_le_bytes(le(&self.data[off..off + 4], self.big))
    }

    /// The element whose tag starts at `pos`, which must end by `end`.
    fn elem(&self, pos: usize, end: usize) -> Result<Elem, DataError> {
        let left = end.saturating_sub(pos);
        if left < 8 {
            return Err(self.err(
                pos,
                "an 8-byte data element tag",
                format!("{left} bytes left in the enclosing element"),
            ));
        }
        let w0 = self.u32_at(pos);
        if w0 >> 16 != 0 {
            let len = (w0 >> 16) as usize;
            if len > 4 {
                return Err(self.err(
                    pos,
                    "a small data element of at most 4 bytes",
                    format!("{len} bytes (type {})", w0 & 0xffff),
                ));
            }
            return Ok(Elem {
                ty: w0 & 0xffff,
                start: pos,
                data: pos + 4,
                len,
                next: pos + 8,
            });
        }
        let len = self.u32_at(pos + 4) as usize;
        let data = pos + 8;
        if len > end - data {
            return Err(self.err(
                pos + 4,
                format!(
                    "a {} element of at most {} bytes (what is left of the enclosing element)",
                    mi_name(w0),
                    end - data
                ),
                format!("{len} bytes"),
            ));
        }
        let padded = if w0 == MI_COMPRESSED {
            len
        } else {
            len.div_ceil(8) * 8
        };
        Ok(Elem {
            ty: w0,
            start: pos,
            data,
            len,
            next: (data + padded).min(end),
        })
    }

    fn bytes(&self, e: &Elem) -> &[u8] {
        &self.data[e.data..e.data + e.len]
    }

    /// Values of a numeric element, converted to f64.
    fn numbers(&self, e: &Elem, what: &str) -> Result<Vec<f64>, DataError> {
        let Some(size) = mi_size(e.ty) else {
            return Err(self.err(
                e.start,
                format!("a numeric data type for {what}"),
                mi_name(e.ty),
            ));
        };
        if !e.len.is_multiple_of(size) {
            return Err(self.err(
                e.start,
                format!(
                    "a byte count divisible by {size} for {what} ({})",
                    mi_name(e.ty)
                ),
                e.len.to_string(),
            ));
        }
        let b = self.bytes(e);
        let big = self.big;
        Ok(match e.ty {
            MI_INT8 => b.iter().map(|&x| f64::from(x as i8)).collect(),
            MI_UINT8 => b.iter().map(|&x| f64::from(x)).collect(),
            MI_INT16 => b
                .chunks_exact(2)
                .map(|c| f64::from(i16::from_le_bytes(le(c, big))))
                .collect(),
            MI_UINT16 => b
                .chunks_exact(2)
                .map(|c| f64::from(u16::from_le_bytes(le(c, big))))
                .collect(),
            MI_INT32 => b
                .chunks_exact(4)
                .map(|c| f64::from(i32::from_le_bytes(le(c, big))))
                .collect(),
            MI_UINT32 => b
                .chunks_exact(4)
                .map(|c| f64::from(u32::from_le_bytes(le(c, big))))
                .collect(),
            MI_SINGLE => b
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes(le(c, big))))
                .collect(),
            MI_DOUBLE => b
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(le(c, big)))
                .collect(),
            MI_INT64 => b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(le(c, big)) as f64)
                .collect(),
            _ => b
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(le(c, big)) as f64)
                .collect(),
        })
    }

    /// Exact values of a numeric element stored as an integer type (floats must be integral).
    fn exact_ints(&self, e: &Elem, what: &str) -> Result<Vec<i128>, DataError> {
        let big = self.big;
        match e.ty {
            MI_INT64 | MI_UINT64 if e.len.is_multiple_of(8) => Ok(self
                .bytes(e)
                .chunks_exact(8)
                .map(|c| {
                    if e.ty == MI_INT64 {
                        i128::from(i64::from_le_bytes(le(c, big)))
                    } else {
                        i128::from(u64::from_le_bytes(le(c, big)))
                    }
                })
                .collect()),
            _ => {
                let v = self.numbers(e, what)?;
                let mut out = Vec::with_capacity(v.len());
                for (i, x) in v.into_iter().enumerate() {
                    // Every f64 with |x| < 2^127 converts exactly when integral.
                    if x.fract() != 0.0 || !x.is_finite() || x.abs() >= 1.7e38 {
                        return Err(self.err(
                            e.data + i * mi_size(e.ty).unwrap_or(1),
                            format!("an integral value for {what}"),
                            x.to_string(),
                        ));
                    }
                    out.push(x as i128);
                }
                Ok(out)
            }
        }
    }

    /// The array data of a miMATRIX element (name, value).
    fn matrix(&self, e: &Elem, depth: usize) -> Result<(String, MatValue), DataError> {
        if depth > MAX_DEPTH {
            return Err(self.err(
                e.start,
                format!("cells and structs nested at most {MAX_DEPTH} deep"),
                "deeper nesting",
            ));
        }
        let end = e.data + e.len;
        if e.len == 0 {
            return Ok((String::new(), MatValue::double(vec![0, 0], Vec::new())));
        }
        // Array flags.
        let f = self.elem(e.data, end)?;
        if f.ty != MI_UINT32 || f.len != 8 {
            return Err(self.err(
                f.start,
                "array flags: a miUINT32 element of 8 bytes",
                format!("{} of {} bytes", mi_name(f.ty), f.len),
            ));
        }
        let flags = self.u32_at(f.data);
        let class = (flags & 0xff) as u8;
        let complex = flags & FLAG_COMPLEX != 0;
        let logical = flags & FLAG_LOGICAL != 0;
        let _global = flags & FLAG_GLOBAL != 0;

        // Dimensions.
        let d = self.elem(f.next, end)?;
        if d.ty != MI_INT32 || d.len % 4 != 0 || d.len < 8 {
            return Err(self.err(
                d.start,
                "dimensions: a miINT32 element with at least two values",
                format!("{} of {} bytes", mi_name(d.ty), d.len),
            ));
        }
        let mut dims = Vec::with_capacity(d.len / 4);
        for (i, c) in self.bytes(&d).chunks_exact(4).enumerate() {
            let v = i32::from_le_bytes(le(c, self.big));
            if v < 0 {
                return Err(self.err(d.data + 4 * i, "a non-negative dimension", v.to_string()));
            }
            dims.push(v as usize);
        }
        let Some(count) = product(&dims) else {
            return Err(self.err(
                d.data,
                "dimensions whose product fits in memory",
                format!("{dims:?}"),
            ));
        };

        // Name.
        let nm = self.elem(d.next, end)?;
        if nm.ty != MI_INT8 && nm.ty != MI_UINT8 {
            return Err(self.err(nm.start, "the array name: a miINT8 element", mi_name(nm.ty)));
        }
        let name = std::str::from_utf8(self.bytes(&nm))
            .map_err(|_| self.err(nm.data, "an array name in ASCII", "invalid UTF-8"))?
            .to_string();
        let mut pos = nm.next;

        let value = match class {
            CLASS_CELL => {
                if count > (end - pos) / 8 {
                    return Err(self.err(
                        pos,
                        format!("{count} cell elements (at least 8 bytes each)"),
                        format!("{} bytes left", end - pos),
                    ));
                }
                let mut items = Vec::with_capacity(count);
                for i in 0..count {
                    let c = self.elem(pos, end)?;
                    if c.ty != MI_MATRIX {
                        return Err(self.err(
                            c.start,
                            format!("a miMATRIX element for cell {}", i + 1),
                            mi_name(c.ty),
                        ));
                    }
                    items.push(self.matrix(&c, depth + 1)?.1);
                    pos = c.next;
                }
                MatValue::Cell { dims, items }
            }
            CLASS_STRUCT => {
                let (fields, p) = self.field_names(pos, end)?;
                pos = p;
                let total = count.checked_mul(fields.len());
                // A struct array without fields stores nothing per element; bound it anyway
                // so that a corrupt dimension cannot make us allocate one row per element.
                if fields.is_empty() && count > MAX_FIELDLESS {
                    return Err(self.err(
                        pos,
                        format!("a field-less struct array of at most {MAX_FIELDLESS} elements"),
                        format!("{count} elements"),
                    ));
                }
                if total.is_none_or(|t| t > (end - pos) / 8) {
                    return Err(self.err(
                        pos,
                        format!(
                            "{count} struct elements x {} fields (at least 8 bytes each)",
                            fields.len()
                        ),
                        format!("{} bytes left", end - pos),
                    ));
                }
                let mut items = Vec::with_capacity(count);
                for i in 0..count {
                    let mut row = Vec::with_capacity(fields.len());
                    for fname in &fields {
                        let c = self.elem(pos, end)?;
                        if c.ty != MI_MATRIX {
                            return Err(self.err(
                                c.start,
                                format!(
                                    "a miMATRIX element for field `{fname}` of element {}",
                                    i + 1
                                ),
                                mi_name(c.ty),
                            ));
                        }
                        row.push(self.matrix(&c, depth + 1)?.1);
                        pos = c.next;
                    }
                    items.push(row);
                }
                MatValue::Struct {
                    dims,
                    fields,
                    items,
                }
            }
            CLASS_OBJECT => {
                return Err(self.err(
                    f.data,
                    "a supported array class (object arrays, class 3, are not supported)",
                    "an object array",
                ));
            }
            CLASS_CHAR => {
                if complex {
                    return Err(self.err(f.data, "a real char array", "the complex flag"));
                }
                let c = self.elem(pos, end)?;
                pos = c.next;
                MatValue::Char {
                    text: self.chars(&c, count)?,
                    dims,
                }
            }
            CLASS_SPARSE => {
                let (v, p) = self.sparse(pos, end, &d, dims, complex, logical)?;
                pos = p;
                v
            }
            6..=15 => {
                let nclass = NumClass::from_code(class).unwrap_or(NumClass::Double);
                let r = self.elem(pos, end)?;
                pos = r.next;
                let re = self.numbers(&r, "the real part")?;
                if re.len() != count {
                    return Err(self.err(
                        r.start,
                        format!("{count} values for dimensions {dims:?}"),
                        format!("{} ({})", re.len(), mi_name(r.ty)),
                    ));
                }
                let im = if complex {
                    let i = self.elem(pos, end)?;
                    pos = i.next;
                    let im = self.numbers(&i, "the imaginary part")?;
                    if im.len() != count {
                        return Err(self.err(
                            i.start,
                            format!("{count} imaginary values for dimensions {dims:?}"),
                            format!("{} ({})", im.len(), mi_name(i.ty)),
                        ));
                    }
                    Some(im)
                } else {
                    None
                };
                if logical {
                    if complex {
                        return Err(self.err(f.data, "a real logical array", "the complex flag"));
                    }
                    MatValue::Logical {
                        dims,
                        data: re.iter().map(|&x| x != 0.0).collect(),
                    }
                } else {
                    let exact = if nclass.is_wide_int() {
                        Some(self.exact_ints(&r, "the real part of an int64/uint64 array")?)
                    } else {
                        None
                    };
                    if let Some((lo, hi)) = nclass.int_range() {
                        self.check_range(&r, &re, exact.as_deref(), nclass, lo, hi)?;
                        if let Some(im) = &im {
                            self.check_range(&r, im, None, nclass, lo, hi)?;
                        }
                    }
                    MatValue::Numeric {
                        class: nclass,
                        dims,
                        re,
                        im,
                        exact,
                    }
                }
            }
            other => {
                return Err(self.err(
                    f.data,
                    "a supported array class (cell, struct, char, sparse or numeric: 1, 2, 4-15)",
                    format!("class {other}"),
                ));
            }
        };
        if pos != end {
            return Err(self.err(
                pos,
                format!("the end of the {} array", value.kind()),
                format!("{} more bytes", end - pos),
            ));
        }
        Ok((name, value))
    }

    fn check_range(
        &self,
        e: &Elem,
        values: &[f64],
        exact: Option<&[i128]>,
        class: NumClass,
        lo: i128,
        hi: i128,
    ) -> Result<(), DataError> {
        let size = mi_size(e.ty).unwrap_or(1);
        let bad = match exact {
            Some(x) => x.iter().position(|&v| v < lo || v > hi),
            None => values
                .iter()
                .position(|&v| v.fract() != 0.0 || !(lo as f64..=hi as f64).contains(&v)),
        };
        match bad {
            None => Ok(()),
            Some(i) => Err(self.err(
                e.data + i * size,
                format!("an integral {} value in {lo}..={hi}", class.name()),
                values[i].to_string(),
            )),
        }
    }

    /// Field-name length and field names of a struct; returns the names and the next offset.
    fn field_names(&self, pos: usize, end: usize) -> Result<(Vec<String>, usize), DataError> {
        let l = self.elem(pos, end)?;
        if l.ty != MI_INT32 || l.len != 4 {
            return Err(self.err(
                l.start,
                "the field-name length: a miINT32 element with one value",
                format!("{} of {} bytes", mi_name(l.ty), l.len),
            ));
        }
        let len = self.u32_at(l.data) as usize;
        let n = self.elem(l.next, end)?;
        if n.ty != MI_INT8 && n.ty != MI_UINT8 {
            return Err(self.err(n.start, "the field names: a miINT8 element", mi_name(n.ty)));
        }
        if n.len > 0 && (len == 0 || n.len % len != 0) {
            return Err(self.err(
                l.data,
                format!(
                    "a field-name length dividing the {} bytes of field names",
                    n.len
                ),
                len.to_string(),
            ));
        }
        let mut fields: Vec<String> = Vec::new();
        if n.len > 0 {
            for (i, slot) in self.bytes(&n).chunks_exact(len).enumerate() {
                let stop = slot.iter().position(|&b| b == 0).unwrap_or(slot.len());
                let name = std::str::from_utf8(&slot[..stop]).map_err(|_| {
                    self.err(n.data + i * len, "an ASCII field name", "invalid UTF-8")
                })?;
                if fields.iter().any(|f| f == name) {
                    return Err(self.err(
                        n.data + i * len,
                        "distinct field names",
                        format!("`{name}` twice"),
                    ));
                }
                fields.push(name.to_string());
            }
        }
        Ok((fields, n.next))
    }

    /// Char data holding `count` MATLAB characters (UTF-16 code units).
    fn chars(&self, c: &Elem, count: usize) -> Result<String, DataError> {
        let b = self.bytes(c);
        let big = self.big;
        let (text, units) = match c.ty {
            MI_UTF8 => {
                let s = std::str::from_utf8(b)
                    .map_err(|e| {
                        self.err(c.data + e.valid_up_to(), "UTF-8 char data", "invalid UTF-8")
                    })?
                    .to_string();
                let n = s.encode_utf16().count();
                (s, n)
            }
            MI_UINT8 | MI_INT8 => (b.iter().map(|&x| char::from(x)).collect(), b.len()),
            MI_UINT16 | MI_UTF16 | MI_INT16 if b.len().is_multiple_of(2) => {
                let u: Vec<u16> = b
                    .chunks_exact(2)
                    .map(|x| u16::from_le_bytes(le(x, big)))
                    .collect();
                let s = char::decode_utf16(u.iter().copied())
                    .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect();
                (s, u.len())
            }
            MI_UTF32 | MI_UINT32 | MI_INT32 if b.len().is_multiple_of(4) => {
                let mut s = String::new();
                for (i, x) in b.chunks_exact(4).enumerate() {
                    let v = u32::from_le_bytes(le(x, big));
                    let ch = char::from_u32(v).ok_or_else(|| {
                        self.err(c.data + 4 * i, "a Unicode scalar value", format!("{v:#x}"))
                    })?;
                    s.push(ch);
                }
                (s, b.len() / 4)
            }
            _ => {
                return Err(self.err(
                    c.start,
                    "char data (miUTF8, miUTF16, miUINT16 or miUINT8)",
                    format!("{} of {} bytes", mi_name(c.ty), c.len),
                ));
            }
        };
        if units != count {
            return Err(self.err(
                c.start,
                format!("{count} characters for the char array's dimensions"),
                units.to_string(),
            ));
        }
        Ok(text)
    }

    /// Sparse data (ir, jc, pr, pi) starting at `pos`.
    fn sparse(
        &self,
        mut pos: usize,
        end: usize,
        d: &Elem,
        dims: Vec<usize>,
        complex: bool,
        logical: bool,
    ) -> Result<(MatValue, usize), DataError> {
        let [rows, cols] = dims[..] else {
            return Err(self.err(
                d.start,
                "two dimensions for a sparse array",
                format!("{dims:?}"),
            ));
        };
        let ir_e = self.elem(pos, end)?;
        pos = ir_e.next;
        let jc_e = self.elem(pos, end)?;
        pos = jc_e.next;
        for (e, what) in [
            (&ir_e, "sparse row indices ir"),
            (&jc_e, "sparse column starts jc"),
        ] {
            if !is_integer_type(e.ty) {
                return Err(self.err(
                    e.start,
                    format!("an integer data type for {what}"),
                    mi_name(e.ty),
                ));
            }
        }
        let ir_f = self.numbers(&ir_e, "ir")?;
        let jc_f = self.numbers(&jc_e, "jc")?;
        let ir_size = mi_size(ir_e.ty).unwrap_or(1);
        let jc_size = mi_size(jc_e.ty).unwrap_or(1);
        if jc_f.len() != cols + 1 {
            return Err(self.err(
                jc_e.start,
                format!("{} column starts jc for {cols} columns", cols + 1),
                jc_f.len().to_string(),
            ));
        }
        let mut jc = Vec::with_capacity(jc_f.len());
        let mut prev = 0.0;
        for (i, &v) in jc_f.iter().enumerate() {
            let ok = if i == 0 { v == 0.0 } else { v >= prev };
            if !ok || v > ir_f.len() as f64 {
                return Err(self.err(
                    jc_e.data + i * jc_size,
                    format!(
                        "column starts jc beginning at 0, non-decreasing, at most {} (entries of ir)",
                        ir_f.len()
                    ),
                    format!("jc[{i}] = {v}"),
                ));
            }
            prev = v;
            jc.push(v as usize);
        }
        let nnz = jc[cols];
        let mut ir = Vec::with_capacity(nnz);
        for c in 0..cols {
            for k in jc[c]..jc[c + 1] {
                let v = ir_f[k];
                let after_prev = k == jc[c] || v > ir_f[k - 1];
                if v < 0.0 || v >= rows as f64 || !after_prev {
                    return Err(self.err(
                        ir_e.data + k * ir_size,
                        format!(
                            "row indices ir in 0..{rows}, strictly increasing within column {c}"
                        ),
                        format!("ir[{k}] = {v}"),
                    ));
                }
                ir.push(v as usize);
            }
        }
        let pr_e = self.elem(pos, end)?;
        pos = pr_e.next;
        let mut re = self.numbers(&pr_e, "sparse values pr")?;
        if re.len() < nnz {
            return Err(self.err(
                pr_e.start,
                format!("at least {nnz} sparse values pr (jc[cols])"),
                re.len().to_string(),
            ));
        }
        re.truncate(nnz);
        let im = if complex {
            let pi_e = self.elem(pos, end)?;
            pos = pi_e.next;
            let mut im = self.numbers(&pi_e, "sparse imaginary values pi")?;
            if im.len() < nnz {
                return Err(self.err(
                    pi_e.start,
                    format!("at least {nnz} sparse imaginary values pi"),
                    im.len().to_string(),
                ));
            }
            im.truncate(nnz);
            Some(im)
        } else {
            None
        };
        Ok((
            MatValue::Sparse {
                rows,
                cols,
                ir,
                jc,
                re,
                im,
                logical,
            },
            pos,
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

/// Options of [`write_mat`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Write a big-endian (`"MI"`) file instead of a little-endian one.
    pub big_endian: bool,
    /// Wrap every variable in a miCOMPRESSED element (as `save -v7` does).
    pub compress: bool,
    /// Use the 4-byte small-element form for data of 1 to 4 bytes (as MATLAB does).
    pub small_elements: bool,
    /// Store numeric data in the smallest integer type holding all values (as MATLAB does
    /// with integer-valued doubles); otherwise in the class's own type.
    pub narrow_storage: bool,
    /// Store char data as miUTF8 instead of miUINT16.
    pub char_utf8: bool,
}

/// Write variables as a Level 5 MAT-file. The writer exists mainly so that tests can build
/// files of every layout the reader accepts; what it writes reads back to equal values.
/// Inconsistent values (data lengths not matching dimensions, bad sparse structure, sizes
/// beyond the format's 32-bit fields) are [`DataError::Param`].
pub fn write_mat(
    header_text: &str,
    variables: &[(String, MatValue)],
    opts: WriteOptions,
) -> Result<Vec<u8>, DataError> {
    let w = Writer { opts };
    let mut out = Vec::new();
    let mut text: Vec<u8> = header_text.bytes().take(116).collect();
    text.resize(116, b' ');
    out.extend_from_slice(&text);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&w.u16b(0x0100));
    out.extend_from_slice(if opts.big_endian { b"MI" } else { b"IM" });
    for (name, value) in variables {
        let mut m = Vec::new();
        w.matrix(&mut m, name, value)?;
        if opts.compress {
            let mut enc =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&m)
                .and_then(|()| enc.finish())
                .map(|z| {
                    out.extend_from_slice(&w.u32b(MI_COMPRESSED));
                    out.extend_from_slice(&w.u32b(z.len() as u32));
                    out.extend_from_slice(&z);
                })
                .map_err(|e| DataError::Param(format!("zlib compression failed: {e}")))?;
        } else {
            out.extend_from_slice(&m);
        }
    }
    Ok(out)
}

struct Writer {
    opts: WriteOptions,
}

fn param<T>(m: impl Into<String>) -> Result<T, DataError> {
    Err(DataError::Param(m.into()))
}

fn u32_len(n: usize, what: &str) -> Result<u32, DataError> {
    u32::try_from(n).or_else(|_| param(format!("{what} ({n}) does not fit a MAT-file size field")))
}

impl Writer {
    fn u16b(&self, v: u16) -> [u8; 2] {
        if self.opts.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn u32b(&self, v: u32) -> [u8; 4] {
        if self.opts.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    /// One data element: tag, payload, padding.
    fn elem(&self, out: &mut Vec<u8>, ty: u32, payload: &[u8]) -> Result<(), DataError> {
        let n = u32_len(payload.len(), "element size")?;
        if self.opts.small_elements && (1..=4).contains(&payload.len()) {
            out.extend_from_slice(&self.u32b((n << 16) | ty));
            out.extend_from_slice(payload);
            out.resize(out.len() + 4 - payload.len(), 0);
        } else {
            out.extend_from_slice(&self.u32b(ty));
            out.extend_from_slice(&self.u32b(n));
            out.extend_from_slice(payload);
            out.resize(out.len() + (8 - payload.len() % 8) % 8, 0);
        }
        Ok(())
    }

    /// Encode values (all representable in `ty`) in type `ty`.
    fn encode(&self, ty: u32, values: &[f64], exact: Option<&[i128]>) -> Vec<u8> {
        let big = self.opts.big_endian;
        let mut out = Vec::with_capacity(values.len() * mi_size(ty).unwrap_or(8));
        macro_rules! put {
            ($v:expr) => {{
                let v = $v;
                if big {
                    out.extend_from_slice(&v.to_be_bytes())
                } else {
                    out.extend_from_slice(&v.to_le_bytes())
                }
            }};
        }
        for (i, &x) in values.iter().enumerate() {
            let ex = exact.map(|e| e[i]);
            match ty {
                MI_INT8 => put!(x as i8),
                MI_UINT8 => put!(x as u8),
                MI_INT16 => put!(x as i16),
                MI_UINT16 => put!(x as u16),
                MI_INT32 => put!(x as i32),
                MI_UINT32 => put!(x as u32),
                MI_SINGLE => put!(x as f32),
                MI_INT64 => put!(ex.map_or(x as i64, |e| e as i64)),
                MI_UINT64 => put!(ex.map_or(x as u64, |e| e as u64)),
                _ => put!(x),
            }
        }
        out
    }

    /// The storage type for values of `class` under the options.
    fn storage(&self, class: NumClass, parts: &[&[f64]], exact: Option<&[i128]>) -> u32 {
        if !self.opts.narrow_storage {
            return class.native_type();
        }
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for part in parts {
            for &x in *part {
                if x.fract() != 0.0 || !x.is_finite() {
                    return class.native_type();
                }
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
        if let Some(e) = exact
            && e.iter().any(|&v| v.abs() > (1 << 31))
        {
            return class.native_type();
        }
        let candidates = [
            (MI_UINT8, 0.0, 255.0),
            (MI_INT8, -128.0, 127.0),
            (MI_UINT16, 0.0, 65535.0),
            (MI_INT16, -32768.0, 32767.0),
            (MI_UINT32, 0.0, 4294967295.0),
            (MI_INT32, -2147483648.0, 2147483647.0),
        ];
        candidates
            .iter()
            .find(|&&(_, a, b)| lo >= a && hi <= b)
            .map_or(class.native_type(), |&(t, _, _)| t)
    }

    fn header(
        &self,
        out: &mut Vec<u8>,
        class: u8,
        flags: u32,
        nzmax: u32,
        dims: &[usize],
        name: &str,
    ) -> Result<(), DataError> {
        let mut f = Vec::new();
        f.extend_from_slice(&self.u32b(u32::from(class) | flags));
        f.extend_from_slice(&self.u32b(nzmax));
        self.elem(out, MI_UINT32, &f)?;
        if dims.len() < 2 {
            return param(format!(
                "a MAT array needs at least two dimensions, got {dims:?}"
            ));
        }
        let mut d = Vec::new();
        for &x in dims {
            let v =
                i32::try_from(x).or_else(|_| param(format!("dimension {x} exceeds 2^31 - 1")))?;
            d.extend_from_slice(&self.u32b(v as u32));
        }
        self.elem(out, MI_INT32, &d)?;
        self.elem(out, MI_INT8, name.as_bytes())
    }

    /// A complete miMATRIX element (tag included).
    fn matrix(&self, out: &mut Vec<u8>, name: &str, v: &MatValue) -> Result<(), DataError> {
        let mut m = Vec::new();
        let count = product(&v.dims())
            .ok_or_else(|| DataError::Param(format!("dimensions {:?} overflow", v.dims())))?;
        let check = |n: usize, what: &str| {
            if n == count {
                Ok(())
            } else {
                param(format!("`{name}`: {n} {what} for {count} elements"))
            }
        };
        match v {
            MatValue::Numeric {
                class,
                dims,
                re,
                im,
                exact,
            } => {
                check(re.len(), "real values")?;
                if let Some(im) = im {
                    check(im.len(), "imaginary values")?;
                }
                if let Some(e) = exact {
                    check(e.len(), "exact values")?;
                }
                let flags = if im.is_some() { FLAG_COMPLEX } else { 0 };
                self.header(&mut m, class.code(), flags, 0, dims, name)?;
                let parts: Vec<&[f64]> = std::iter::once(re.as_slice())
                    .chain(im.as_deref())
                    .collect();
                let ty = self.storage(*class, &parts, exact.as_deref());
                self.elem(&mut m, ty, &self.encode(ty, re, exact.as_deref()))?;
                if let Some(im) = im {
                    self.elem(&mut m, ty, &self.encode(ty, im, None))?;
                }
            }
            MatValue::Char { dims, text } => {
                check(text.encode_utf16().count(), "UTF-16 characters")?;
                self.header(&mut m, CLASS_CHAR, 0, 0, dims, name)?;
                if self.opts.char_utf8 {
                    self.elem(&mut m, MI_UTF8, text.as_bytes())?;
                } else {
                    let units: Vec<f64> = text.encode_utf16().map(f64::from).collect();
                    self.elem(&mut m, MI_UINT16, &self.encode(MI_UINT16, &units, None))?;
                }
            }
            MatValue::Logical { dims, data } => {
                check(data.len(), "logical values")?;
                self.header(&mut m, NumClass::UInt8.code(), FLAG_LOGICAL, 0, dims, name)?;
                let b: Vec<u8> = data.iter().map(|&x| u8::from(x)).collect();
                self.elem(&mut m, MI_UINT8, &b)?;
            }
            MatValue::Sparse {
                rows,
                cols,
                ir,
                jc,
                re,
                im,
                logical,
            } => {
                let nnz = jc.last().copied().unwrap_or(0);
                let ok = jc.len() == cols + 1
                    && jc[0] == 0
                    && jc.windows(2).all(|w| w[0] <= w[1])
                    && ir.len() == nnz
                    && re.len() == nnz
                    && im.as_ref().is_none_or(|i| i.len() == nnz)
                    && (0..*cols).all(|c| {
                        let s = &ir[jc[c]..jc[c + 1]];
                        s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&r| r < *rows)
                    });
                if !ok {
                    return param(format!("`{name}`: inconsistent sparse structure"));
                }
                let mut flags = if *logical { FLAG_LOGICAL } else { 0 };
                if im.is_some() {
                    flags |= FLAG_COMPLEX;
                }
                self.header(
                    &mut m,
                    CLASS_SPARSE,
                    flags,
                    u32_len(nnz, "nnz")?,
                    &[*rows, *cols],
                    name,
                )?;
                let irf: Vec<f64> = ir.iter().map(|&x| x as f64).collect();
                let jcf: Vec<f64> = jc.iter().map(|&x| x as f64).collect();
                if jc[*cols] > i32::MAX as usize || *rows > i32::MAX as usize {
                    return param(format!("`{name}`: sparse sizes exceed 2^31 - 1"));
                }
                self.elem(&mut m, MI_INT32, &self.encode(MI_INT32, &irf, None))?;
                self.elem(&mut m, MI_INT32, &self.encode(MI_INT32, &jcf, None))?;
                let parts: Vec<&[f64]> = std::iter::once(re.as_slice())
                    .chain(im.as_deref())
                    .collect();
                let ty = self.storage(NumClass::Double, &parts, None);
                self.elem(&mut m, ty, &self.encode(ty, re, None))?;
                if let Some(im) = im {
                    self.elem(&mut m, ty, &self.encode(ty, im, None))?;
                }
            }
            MatValue::Cell { dims, items } => {
                check(items.len(), "cells")?;
                self.header(&mut m, CLASS_CELL, 0, 0, dims, name)?;
                for item in items {
                    self.matrix(&mut m, "", item)?;
                }
            }
            MatValue::Struct {
                dims,
                fields,
                items,
            } => {
                check(items.len(), "struct elements")?;
                if items.iter().any(|r| r.len() != fields.len()) {
                    return param(format!(
                        "`{name}`: a struct element without one value per field"
                    ));
                }
                self.header(&mut m, CLASS_STRUCT, 0, 0, dims, name)?;
                let l = fields.iter().map(String::len).max().unwrap_or(0) + 1;
                if fields.iter().any(|f| f.as_bytes().contains(&0)) {
                    return param(format!("`{name}`: a field name containing NUL"));
                }
                self.elem(
                    &mut m,
                    MI_INT32,
                    &self.u32b(u32_len(l, "field-name length")?),
                )?;
                let mut names = Vec::with_capacity(l * fields.len());
                for f in fields {
                    names.extend_from_slice(f.as_bytes());
                    names.resize(names.len() + l - f.len(), 0);
                }
                self.elem(&mut m, MI_INT8, &names)?;
                for row in items {
                    for item in row {
                        self.matrix(&mut m, "", item)?;
                    }
                }
            }
        }
        out.extend_from_slice(&self.u32b(MI_MATRIX));
        out.extend_from_slice(&self.u32b(u32_len(m.len(), "array size")?));
        out.extend_from_slice(&m);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng};

    fn p() -> &'static Path {
        Path::new("t.mat")
    }

    fn numeric(class: NumClass, dims: Vec<usize>, re: Vec<f64>) -> MatValue {
        let exact = class
            .is_wide_int()
            .then(|| re.iter().map(|&x| x as i128).collect());
        MatValue::Numeric {
            class,
            dims,
            re,
            im: None,
            exact,
        }
    }

    /// One variable of every kind, including nesting, empties and edge values.
    fn zoo() -> Vec<(String, MatValue)> {
        let mut v: Vec<(String, MatValue)> = Vec::new();
        for class in NumClass::ALL {
            let vals: Vec<f64> = match class {
                NumClass::Double => vec![1.5, -2.25, 1e300, 0.0, -0.0, 3.0],
                NumClass::Single => vec![1.5, -2.25, 3221225472.0, 0.0, 0.125, 7.0],
                _ => {
                    let (lo, hi) = class.int_range().unwrap();
                    let lo = (lo as f64).max(-9.0e15);
                    let hi = (hi as f64).min(9.0e15);
                    vec![lo, hi, 0.0, 1.0, hi - 1.0, lo + 1.0]
                }
            };
            v.push((
                format!("a_{}", class.name()),
                numeric(class, vec![2, 3], vals),
            ));
        }
        v.push((
            "big_u64".into(),
            MatValue::Numeric {
                class: NumClass::UInt64,
                dims: vec![1, 2],
                re: vec![u64::MAX as f64, 9007199254740993u64 as f64],
                im: None,
                exact: Some(vec![u64::MAX.into(), 9007199254740993]),
            },
        ));
        v.push((
            "cplx".into(),
            MatValue::Numeric {
                class: NumClass::Double,
                dims: vec![1, 2],
                re: vec![1.0, 2.0],
                im: Some(vec![-1.0, 0.5]),
                exact: None,
            },
        ));
        v.push((
            "cplx_i16".into(),
            MatValue::Numeric {
                class: NumClass::Int16,
                dims: vec![2, 1],
                re: vec![1.0, -300.0],
                im: Some(vec![-1.0, 7.0]),
                exact: None,
            },
        ));
        v.push((
            "nd".into(),
            MatValue::double(vec![2, 1, 2], vec![1.0, 2.0, 3.0, 4.0]),
        ));
        v.push(("empty".into(), MatValue::double(vec![0, 0], vec![])));
        v.push(("s".into(), MatValue::string("hello, wörld ✓")));
        v.push(("e".into(), MatValue::string("")));
        v.push((
            "rows2".into(),
            MatValue::Char {
                dims: vec![2, 3],
                text: "adbecf".into(),
            },
        ));
        v.push((
            "mask".into(),
            MatValue::Logical {
                dims: vec![1, 4],
                data: vec![true, false, false, true],
            },
        ));
        // 3 x 4 sparse: column 0 rows {0, 2}, column 1 empty, column 2 row 1, column 3 row 2.
        v.push((
            "sp".into(),
            MatValue::Sparse {
                rows: 3,
                cols: 4,
                ir: vec![0, 2, 1, 2],
                jc: vec![0, 2, 2, 3, 4],
                re: vec![1.0, 2.5, -3.0, 4.0],
                im: None,
                logical: false,
            },
        ));
        v.push((
            "spc".into(),
            MatValue::Sparse {
                rows: 2,
                cols: 2,
                ir: vec![1],
                jc: vec![0, 0, 1],
                re: vec![1.0],
                im: Some(vec![2.0]),
                logical: false,
            },
        ));
        v.push((
            "spl".into(),
            MatValue::Sparse {
                rows: 2,
                cols: 1,
                ir: vec![0, 1],
                jc: vec![0, 2],
                re: vec![1.0, 1.0],
                im: None,
                logical: true,
            },
        ));
        v.push((
            "sp0".into(),
            MatValue::Sparse {
                rows: 5,
                cols: 0,
                ir: vec![],
                jc: vec![0],
                re: vec![],
                im: None,
                logical: false,
            },
        ));
        let inner = MatValue::Struct {
            dims: vec![1, 1],
            fields: vec!["word".into(), "x".into()],
            items: vec![vec![
                numeric(NumClass::UInt16, vec![1, 3], vec![0.0, 999.0, 5.0]),
                MatValue::double(vec![1, 3], vec![0.5, 1.5, 2.5]),
            ]],
        };
        v.push((
            "st".into(),
            MatValue::Struct {
                dims: vec![2, 1],
                fields: vec!["ID".into(), "sbow".into(), "c".into()],
                items: vec![
                    vec![
                        MatValue::string("n01440764_1"),
                        inner.clone(),
                        MatValue::Cell {
                            dims: vec![1, 2],
                            items: vec![
                                MatValue::string("a"),
                                MatValue::double(vec![0, 0], vec![]),
                            ],
                        },
                    ],
                    vec![
                        MatValue::string("n01440764_22"),
                        inner,
                        MatValue::Cell {
                            dims: vec![0, 0],
                            items: vec![],
                        },
                    ],
                ],
            },
        ));
        v.push((
            "nofields".into(),
            MatValue::Struct {
                dims: vec![1, 1],
                fields: vec![],
                items: vec![vec![]],
            },
        ));
        v.push((
            "cc".into(),
            MatValue::Cell {
                dims: vec![2, 2],
                items: vec![
                    MatValue::Cell {
                        dims: vec![1, 1],
                        items: vec![MatValue::string("deep")],
                    },
                    numeric(NumClass::Int8, vec![1, 1], vec![-5.0]),
                    MatValue::Logical {
                        dims: vec![0, 1],
                        data: vec![],
                    },
                    MatValue::Struct {
                        dims: vec![0, 0],
                        fields: vec!["a".into()],
                        items: vec![],
                    },
                ],
            },
        ));
        v
    }

    fn all_options() -> Vec<WriteOptions> {
        let mut out = Vec::new();
        for bits in 0..32u32 {
            out.push(WriteOptions {
                big_endian: bits & 1 != 0,
                compress: bits & 2 != 0,
                small_elements: bits & 4 != 0,
                narrow_storage: bits & 8 != 0,
                char_utf8: bits & 16 != 0,
            });
        }
        out
    }

    #[test]
    fn every_kind_round_trips_under_every_layout() {
        let vars = zoo();
        for opts in all_options() {
            let bytes = write_mat("MATLAB 5.0 MAT-file, dyad test", &vars, opts).unwrap();
            let m = parse_mat(p(), &bytes).unwrap_or_else(|e| panic!("{opts:?}: {e}"));
            assert_eq!(m.header_text, "MATLAB 5.0 MAT-file, dyad test");
            assert_eq!(m.big_endian, opts.big_endian);
            assert_eq!(m.subsystem_offset, None);
            assert_eq!(m.variables.len(), vars.len());
            for ((n1, v1), (n2, v2)) in vars.iter().zip(&m.variables) {
                assert_eq!(n1, n2);
                assert_eq!(v1, v2, "{opts:?}: variable {n1}");
            }
        }
    }

    #[test]
    fn negative_zero_and_bits_survive() {
        let bytes = write_mat("", &zoo(), WriteOptions::default()).unwrap();
        let m = parse_mat(p(), &bytes).unwrap();
        let re = m.get("a_double").unwrap().numbers().unwrap();
        assert_eq!(re[4].to_bits(), (-0.0f64).to_bits());
        let MatValue::Numeric { exact, re, .. } = m.get("big_u64").unwrap() else {
            panic!()
        };
        assert_eq!(exact.as_ref().unwrap()[1], 9007199254740993);
        assert_eq!(re[1], 9007199254740992.0); // rounded in the f64 view only
    }

    /// A hand-assembled little-endian file, byte by byte, checked against the spec layout:
    /// one uncompressed `x = [1 2 3]` stored as miUINT8 with small-element name, and one
    /// compressed `s = 'ab'`.
    #[test]
    fn hand_built_file_decodes_as_the_spec_says() {
        let mut b = Vec::new();
        b.extend_from_slice(&[b' '; 116]);
        b[..6].copy_from_slice(b"MATLAB");
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&[0x00, 0x01, b'I', b'M']);
        let mut m = Vec::new();
        m.extend_from_slice(&[6, 0, 0, 0, 8, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]); // flags: double
        m.extend_from_slice(&[5, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0]); // dims 1x3
        m.extend_from_slice(&[1, 0, 1, 0, b'x', 0, 0, 0]); // small miINT8 name "x"
        m.extend_from_slice(&[2, 0, 3, 0, 1, 2, 3, 0]); // small miUINT8 data [1 2 3]
        b.extend_from_slice(&[14, 0, 0, 0, m.len() as u8, 0, 0, 0]);
        b.extend_from_slice(&m);
        let mut s = Vec::new();
        s.extend_from_slice(&[14, 0, 0, 0, 48, 0, 0, 0]);
        s.extend_from_slice(&[6, 0, 0, 0, 8, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]); // char
        s.extend_from_slice(&[5, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0]);
        s.extend_from_slice(&[1, 0, 1, 0, b's', 0, 0, 0]);
        s.extend_from_slice(&[4, 0, 4, 0, b'a', 0, b'b', 0]); // small miUINT16 "ab"
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&s).unwrap();
        let z = enc.finish().unwrap();
        b.extend_from_slice(&[15, 0, 0, 0]);
        b.extend_from_slice(&(z.len() as u32).to_le_bytes());
        b.extend_from_slice(&z);
        let f = parse_mat(p(), &b).unwrap();
        assert_eq!(f.header_text, "MATLAB");
        assert_eq!(f.names(), vec!["x", "s"]);
        assert_eq!(
            f.get("x").unwrap(),
            &MatValue::double(vec![1, 3], vec![1.0, 2.0, 3.0])
        );
        assert_eq!(f.get("s").unwrap().as_str(), Some("ab"));
        // The same bytes with our writer's options give the same file.
        let ours = write_mat(
            "MATLAB",
            &f.variables,
            WriteOptions {
                small_elements: true,
                narrow_storage: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(&ours[..128 + 8 + m.len()], &b[..128 + 8 + m.len()]);
    }

    #[test]
    fn zero_byte_matrix_is_the_empty_double_and_char_rows_work() {
        // A cell {[]} whose only cell is a zero-byte miMATRIX, as MATLAB writes.
        let w = Writer {
            opts: WriteOptions::default(),
        };
        let mut m = Vec::new();
        w.header(&mut m, CLASS_CELL, 0, 0, &[1, 1], "c").unwrap();
        m.extend_from_slice(&w.u32b(MI_MATRIX));
        m.extend_from_slice(&w.u32b(0));
        let mut b = write_mat("", &[], WriteOptions::default()).unwrap();
        b.extend_from_slice(&w.u32b(MI_MATRIX));
        b.extend_from_slice(&w.u32b(m.len() as u32));
        b.extend_from_slice(&m);
        let f = parse_mat(p(), &b).unwrap();
        assert_eq!(
            f.get("c").unwrap().cell_items().unwrap(),
            &[MatValue::double(vec![0, 0], vec![])]
        );
        let rows = MatValue::Char {
            dims: vec![2, 3],
            text: "adbecf".into(),
        };
        assert_eq!(rows.char_rows().unwrap(), vec!["abc", "def"]);
    }

    #[test]
    fn storage_narrower_than_class_is_converted_and_checked() {
        let opts = WriteOptions {
            narrow_storage: true,
            ..Default::default()
        };
        let v = vec![(
            "d".to_string(),
            MatValue::double(vec![1, 3], vec![0.0, 200.0, 7.0]),
        )];
        let b = write_mat("", &v, opts).unwrap();
        // The real part is stored as miUINT8: tag type 2 right after the 8-byte name element.
        let data_tag = 128 + 8 + 16 + 16 + 16;
        assert_eq!(
            u32::from_le_bytes(b[data_tag..data_tag + 4].try_into().unwrap()),
            MI_UINT8
        );
        assert_eq!(parse_mat(p(), &b).unwrap().variables, v);
        // An int8 array whose stored (uint8) value is out of range is an error at that value.
        let mut bad = write_mat(
            "",
            &[(
                "i".into(),
                numeric(NumClass::Int8, vec![1, 2], vec![1.0, 2.0]),
            )],
            opts,
        )
        .unwrap();
        assert_eq!(
            u32::from_le_bytes(bad[data_tag..data_tag + 4].try_into().unwrap()),
            MI_UINT8
        );
        bad[data_tag + 9] = 200;
        match parse_mat(p(), &bad) {
            Err(DataError::Format {
                offset, expected, ..
            }) => {
                assert_eq!(offset as usize, data_tag + 9);
                assert!(expected.contains("int8"), "{expected}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn header_errors_name_their_offsets() {
        let good = write_mat("x", &zoo(), WriteOptions::default()).unwrap();
        let off = |b: &[u8]| match parse_mat(p(), b) {
            Err(DataError::Format { offset, .. }) => offset,
            other => panic!("{other:?}"),
        };
        let mut b = good.clone();
        b[126] = b'X';
        assert_eq!(off(&b), 126);
        let mut b = good.clone();
        b[124] = 0;
        b[125] = 2;
        assert_eq!(off(&b), 124);
        assert!(parse_mat(p(), &b).unwrap_err().to_string().contains("HDF5"));
        let mut b = good.clone();
        b[128] = 99; // unknown top-level element type
        assert_eq!(off(&b), 128);
        let mut b = good.clone();
        b[116..124].copy_from_slice(&5u64.to_le_bytes());
        assert_eq!(parse_mat(p(), &b).unwrap().subsystem_offset, Some(5));
    }

    #[test]
    fn objects_and_bad_classes_are_typed_errors() {
        let mut b = write_mat(
            "",
            &[("o".into(), MatValue::double(vec![1, 1], vec![1.0]))],
            WriteOptions::default(),
        )
        .unwrap();
        let class_byte = 128 + 8 + 8;
        b[class_byte] = 3;
        let e = parse_mat(p(), &b).unwrap_err();
        assert!(
            matches!(&e, DataError::Format { offset, .. } if *offset as usize == class_byte),
            "{e}"
        );
        assert!(e.to_string().contains("object"), "{e}");
        b[class_byte] = 16;
        assert!(matches!(parse_mat(p(), &b), Err(DataError::Format { .. })));
    }

    #[test]
    fn errors_inside_compressed_elements_say_so() {
        let v = vec![(
            "x".to_string(),
            MatValue::double(vec![1, 2], vec![1.0, 2.0]),
        )];
        let plain = write_mat("", &v, WriteOptions::default()).unwrap();
        // Claim 3 columns: 3 values expected, 2 stored.
        let mut inner = plain[128..].to_vec();
        inner[8 + 16 + 12] = 3;
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&inner).unwrap();
        let z = enc.finish().unwrap();
        let mut b = plain[..128].to_vec();
        b.extend_from_slice(&15u32.to_le_bytes());
        b.extend_from_slice(&(z.len() as u32).to_le_bytes());
        b.extend_from_slice(&z);
        match parse_mat(p(), &b) {
            Err(DataError::Format {
                offset, expected, ..
            }) => {
                assert_eq!(offset, 8 + 16 + 16 + 16); // the real part's tag, in the stream
                assert!(
                    expected.contains("decompressed stream") && expected.contains("file byte 128"),
                    "{expected}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_zlib_is_corrupt() {
        let v = vec![(
            "x".to_string(),
            MatValue::double(vec![1, 64], vec![0.25; 64]),
        )];
        let b = write_mat(
            "",
            &v,
            WriteOptions {
                compress: true,
                ..Default::default()
            },
        )
        .unwrap();
        let zlen = u32::from_le_bytes(b[132..136].try_into().unwrap()) as usize;
        assert_eq!(b.len(), 136 + zlen);
        // Truncated stream (with the tag's byte count adjusted so only the stream is short).
        let mut t = b[..136 + zlen / 2].to_vec();
        t[132..136].copy_from_slice(&((zlen / 2) as u32).to_le_bytes());
        assert!(
            matches!(parse_mat(p(), &t), Err(DataError::Corrupt { .. })),
            "{:?}",
            parse_mat(p(), &t)
        );
        // Broken Adler-32 checksum.
        let mut c = b.clone();
        let n = c.len();
        c[n - 1] ^= 0xff;
        assert!(matches!(parse_mat(p(), &c), Err(DataError::Corrupt { .. })));
        // Garbage instead of a zlib header.
        let mut g = b.clone();
        g[136] = 0x12;
        assert!(matches!(parse_mat(p(), &g), Err(DataError::Corrupt { .. })));
    }

    #[test]
    fn huge_claimed_sizes_fail_fast_without_allocating() {
        let w = Writer {
            opts: WriteOptions::default(),
        };
        for class in [CLASS_CELL, CLASS_STRUCT, 6, CLASS_CHAR, CLASS_SPARSE] {
            let mut m = Vec::new();
            w.header(
                &mut m,
                class,
                0,
                0,
                &[i32::MAX as usize, i32::MAX as usize],
                "h",
            )
            .unwrap();
            if class == CLASS_STRUCT {
                w.elem(&mut m, MI_INT32, &w.u32b(2)).unwrap();
                w.elem(&mut m, MI_INT8, b"a\0").unwrap();
            }
            m.extend_from_slice(&[0; 16]);
            let mut b = write_mat("", &[], WriteOptions::default()).unwrap();
            b.extend_from_slice(&w.u32b(MI_MATRIX));
            b.extend_from_slice(&w.u32b(m.len() as u32));
            b.extend_from_slice(&m);
            assert!(
                matches!(parse_mat(p(), &b), Err(DataError::Format { .. })),
                "class {class}"
            );
            // A tag claiming 4 GiB.
            let mut t = b.clone();
            t[132..136].copy_from_slice(&u32::MAX.to_le_bytes());
            assert!(matches!(
                parse_mat(p(), &t),
                Err(DataError::Format { offset: 132, .. })
            ));
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let mut v = MatValue::string("x");
        for _ in 0..(MAX_DEPTH + 5) {
            v = MatValue::Cell {
                dims: vec![1, 1],
                items: vec![v],
            };
        }
        let b = write_mat("", &[("deep".into(), v)], WriteOptions::default()).unwrap();
        let e = parse_mat(p(), &b).unwrap_err();
        assert!(e.to_string().contains("nested"), "{e}");
    }

    #[test]
    fn sparse_structure_is_validated() {
        let sp = zoo().into_iter().find(|(n, _)| n == "sp").unwrap();
        let b = write_mat("", std::slice::from_ref(&sp), WriteOptions::default()).unwrap();
        let m = parse_mat(p(), &b).unwrap();
        let csr = m.get("sp").unwrap().sparse_to_csr().unwrap();
        assert!(csr.is_csr());
        let rows: Vec<(Vec<usize>, Vec<f64>)> = csr
            .outer_iterator()
            .map(|r| (r.indices().to_vec(), r.data().to_vec()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (vec![0], vec![1.0]),
                (vec![2], vec![-3.0]),
                (vec![0, 3], vec![2.5, 4.0])
            ]
        );
        // ir's data starts after the tag (8), flags (16), dims (16), name (16) and ir's tag (8).
        let ir_data = 128 + 8 + 16 + 16 + 16 + 8;
        let mut bad = b.clone();
        bad[ir_data + 4] = 0; // ir = [0, 0, ...]: not increasing inside column 0
        let e = parse_mat(p(), &bad).unwrap_err();
        assert!(
            matches!(e, DataError::Format { offset, .. } if offset as usize == ir_data + 4),
            "{e}"
        );
        let mut bad = b.clone();
        bad[ir_data + 8] = 3; // row 3 of 3
        assert!(matches!(
            parse_mat(p(), &bad),
            Err(DataError::Format { .. })
        ));
        // ir with more entries than nnz (MATLAB's nzmax) is accepted.
        let MatValue::Sparse {
            rows,
            cols,
            ir,
            jc,
            re,
            ..
        } = sp.1.clone()
        else {
            panic!()
        };
        let mut ir2 = ir.clone();
        ir2.extend([0, 0]);
        let w = Writer {
            opts: WriteOptions::default(),
        };
        let mut mm = Vec::new();
        w.header(&mut mm, CLASS_SPARSE, 0, 6, &[rows, cols], "sp")
            .unwrap();
        let f = |v: &[usize]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        w.elem(&mut mm, MI_INT32, &w.encode(MI_INT32, &f(&ir2), None))
            .unwrap();
        w.elem(&mut mm, MI_INT32, &w.encode(MI_INT32, &f(&jc), None))
            .unwrap();
        w.elem(&mut mm, MI_DOUBLE, &w.encode(MI_DOUBLE, &re, None))
            .unwrap();
        let mut b2 = write_mat("", &[], WriteOptions::default()).unwrap();
        b2.extend_from_slice(&w.u32b(MI_MATRIX));
        b2.extend_from_slice(&w.u32b(mm.len() as u32));
        b2.extend_from_slice(&mm);
        assert_eq!(parse_mat(p(), &b2).unwrap().get("sp").unwrap(), &sp.1);
    }

    /// Every prefix of small files (every layout) is a typed error, never a panic.
    #[test]
    fn every_truncation_is_a_typed_error() {
        let vars: Vec<(String, MatValue)> = zoo()
            .into_iter()
            .filter(|(n, _)| ["a_int16", "s", "sp", "st", "cc", "big_u64"].contains(&n.as_str()))
            .collect();
        for opts in all_options().into_iter().step_by(3) {
            let b = write_mat("trunc", &vars, opts).unwrap();
            for cut in 0..b.len() {
                match parse_mat(p(), &b[..cut]) {
                    Err(DataError::Format { .. } | DataError::Corrupt { .. }) => {}
                    Ok(m) => {
                        // A cut exactly between two top-level elements is a valid shorter file.
                        assert!(m.variables.len() < vars.len(), "{opts:?} cut {cut}");
                        assert_eq!(&m.variables[..], &vars[..m.variables.len()]);
                    }
                    Err(e) => panic!("{opts:?} cut {cut}: unexpected {e}"),
                }
            }
        }
    }

    /// Random byte corruption: a typed error or a valid result, never a panic.
    #[test]
    fn random_corruption_never_panics() {
        let vars = zoo();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for opts in all_options().into_iter().step_by(5) {
            let b = write_mat("fuzz", &vars, opts).unwrap();
            for _ in 0..1500 {
                let mut c = b.clone();
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(0..c.len());
                    c[i] = match rng.random_range(0..3) {
                        0 => rng.random(),
                        1 => c[i] ^ (1 << rng.random_range(0..8)),
                        _ => 0xff,
                    };
                }
                match parse_mat(p(), &c) {
                    Ok(_) | Err(DataError::Format { .. }) | Err(DataError::Corrupt { .. }) => {}
                    Err(e) => panic!("unexpected error kind {e}"),
                }
            }
        }
    }

    #[test]
    fn writer_refuses_inconsistent_values() {
        let bad = [
            MatValue::double(vec![2, 2], vec![1.0]),
            MatValue::Char {
                dims: vec![1, 3],
                text: "ab".into(),
            },
            MatValue::Sparse {
                rows: 2,
                cols: 1,
                ir: vec![1, 0],
                jc: vec![0, 2],
                re: vec![1.0, 1.0],
                im: None,
                logical: false,
            },
            MatValue::double(vec![3], vec![1.0, 2.0, 3.0]),
        ];
        for v in bad {
            assert!(matches!(
                write_mat("", &[("v".into(), v)], WriteOptions::default()),
                Err(DataError::Param(_))
            ));
        }
    }

    /// Found by `cargo fuzz run mat`: a struct array without fields whose dimensions claim
    /// ~1.4e9 elements made the reader allocate one row per element.
    #[test]
    fn fuzz_regression_fieldless_struct_with_huge_dimensions() {
        let hex = "4d41544c414220342e30204d41542d66696c652c2066757a7a207365656420202a0120202020202020202020202034ffdfdfdfdf27df202020202060202020202020202020200000202020202020202020202020202020202020202020202020202020202020202020202020202020202020202000000000000000000001494d0e000000480000000600000008000000020200000000000005000000080000002100002b02000000010000000100000061010000000000000500040008000000010000000000000000000001494d0e00000048000000060000002002313f94";
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let e = parse_mat(Path::new("crash.mat"), &bytes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field-less struct array"), "{e}");
    }
}
