//! Shared pieces of the line-oriented expression formats (Kent Ridge CSV, GCT/RES/CLS, Allen
//! CSV): a streaming line reader over plain or gzip files, CSV field splitting with quotes, and
//! number parsing with field-numbered errors.

use crate::DataError;
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Reads a text file line by line, transparently decompressing gzip (detected by its magic
/// bytes), without holding the whole file in memory. Line terminators (`\n` or `\r\n`) are
/// stripped, as is a UTF-8 byte-order mark at the start of the file.
pub(crate) struct Lines {
    reader: Box<dyn BufRead>,
    gzip: bool,
    line: u64,
    consumed: u64,
    buf: Vec<u8>,
}

impl Lines {
    pub(crate) fn open(path: &Path) -> Result<Self, DataError> {
        let io = |e| DataError::io(path, e);
        let mut file = File::open(path).map_err(io)?;
        let mut magic = [0u8; 2];
        let mut got = 0;
        while got < 2 {
            match file.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let gzip = got == 2 && magic == [0x1f, 0x8b];
        let reader: Box<dyn BufRead> = if gzip {
            Box::new(BufReader::with_capacity(
                1 << 16,
                flate2::read::MultiGzDecoder::new(BufReader::new(file)),
            ))
        } else {
            Box::new(BufReader::with_capacity(1 << 16, file))
        };
        Ok(Self {
            reader,
            gzip,
            line: 0,
            consumed: 0,
            buf: Vec::new(),
        })
    }

    /// Lines of in-memory bytes (plain or gzip, detected by magic bytes).
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Self {
        let gzip = bytes.starts_with(&[0x1f, 0x8b]);
        let cursor = std::io::Cursor::new(bytes);
        let reader: Box<dyn BufRead> = if gzip {
            Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(cursor)))
        } else {
            Box::new(cursor)
        };
        Self {
            reader,
            gzip,
            line: 0,
            consumed: 0,
            buf: Vec::new(),
        }
    }

    /// The next line and its 1-based number, or `None` at the end of the file.
    pub(crate) fn next_line(&mut self, path: &Path) -> Result<Option<(u64, &str)>, DataError> {
        self.buf.clear();
        let n = match self.reader.read_until(b'\n', &mut self.buf) {
            Ok(n) => n,
            Err(e) if self.gzip => {
                return Err(DataError::Corrupt {
                    path: path.to_path_buf(),
                    offset: self.consumed + self.buf.len() as u64,
                    detail: e.to_string(),
                });
            }
            Err(e) => return Err(DataError::io(path, e)),
        };
        if n == 0 {
            return Ok(None);
        }
        self.consumed += n as u64;
        self.line += 1;
        let mut end = self.buf.len();
        if end > 0 && self.buf[end - 1] == b'\n' {
            end -= 1;
            if end > 0 && self.buf[end - 1] == b'\r' {
                end -= 1;
            }
        }
        let start = if self.line == 1 && self.buf[..end].starts_with(&[0xef, 0xbb, 0xbf]) {
            3
        } else {
            0
        };
        match std::str::from_utf8(&self.buf[start..end]) {
            Ok(s) => Ok(Some((self.line, s))),
            Err(e) => Err(DataError::line(
                path,
                self.line,
                None,
                "UTF-8 text",
                format!(
                    "an invalid byte at byte {} of the line",
                    e.valid_up_to() + 1
                ),
            )),
        }
    }

    /// The number of lines returned so far.
    pub(crate) fn line_number(&self) -> u64 {
        self.line
    }
}

/// A field for an error message: quoted, and shortened when long.
pub(crate) fn show(field: &str) -> String {
    const MAX: usize = 40;
    if field.chars().count() <= MAX {
        format!("{field:?}")
    } else {
        let head: String = field.chars().take(MAX).collect();
        format!("{head:?}...")
    }
}

/// Parse a finite number; surrounding spaces and one pair of enclosing double quotes are
/// ignored. `None` for anything else (including `NaN`, infinities and empty fields).
pub(crate) fn parse_finite(field: &str) -> Option<f64> {
    let mut f = field.trim_matches(|c| c == ' ' || c == '\t');
    if f.len() >= 2 && f.starts_with('"') && f.ends_with('"') {
        f = &f[1..f.len() - 1];
    }
    f.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parse a finite number or fail with a line/field-numbered error.
pub(crate) fn number(path: &Path, line: u64, column: usize, field: &str) -> Result<f64, DataError> {
    parse_finite(field).ok_or_else(|| {
        DataError::line(
            path,
            line,
            Some(column as u64),
            "a finite number",
            show(field),
        )
    })
}

/// Parse a non-negative integer (surrounding spaces and quotes ignored).
pub(crate) fn parse_uint(field: &str) -> Option<u64> {
    let mut f = field.trim_matches(|c| c == ' ' || c == '\t');
    if f.len() >= 2 && f.starts_with('"') && f.ends_with('"') {
        f = &f[1..f.len() - 1];
    }
    if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    f.parse().ok()
}

/// Split one CSV line into fields (RFC 4180 quoting within the line: a field may be enclosed in
/// double quotes, and `""` inside it is a literal quote). Fields are returned unquoted; quoted
/// fields may not span lines. Errors name the 1-based field.
pub(crate) fn split_csv<'a>(
    path: &Path,
    line_no: u64,
    line: &'a str,
) -> Result<Vec<Cow<'a, str>>, DataError> {
    if !line.contains('"') {
        return Ok(line.split(',').map(Cow::Borrowed).collect());
    }
    let mut fields = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        let column = fields.len() as u64 + 1;
        // Leading spaces before an opening quote are tolerated.
        let mut j = i;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'"' {
            let mut value = String::new();
            let mut k = j + 1;
            loop {
                match line[k..].find('"') {
                    None => {
                        return Err(DataError::line(
                            path,
                            line_no,
                            Some(column),
                            "a closing double quote before the end of the line",
                            show(&line[j..]),
                        ));
                    }
                    Some(q) => {
                        value.push_str(&line[k..k + q]);
                        k += q + 1;
                        if bytes.get(k) == Some(&b'"') {
                            value.push('"');
                            k += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
            while k < bytes.len() && bytes[k] == b' ' {
                k += 1;
            }
            fields.push(Cow::Owned(value));
            match bytes.get(k) {
                None => return Ok(fields),
                Some(b',') => i = k + 1,
                Some(_) => {
                    return Err(DataError::line(
                        path,
                        line_no,
                        Some(column),
                        "a comma after the closing quote",
                        show(&line[k..]),
                    ));
                }
            }
        } else {
            let end = line[i..].find(',').map_or(line.len(), |p| i + p);
            let field = &line[i..end];
            if field.contains('"') {
                return Err(DataError::line(
                    path,
                    line_no,
                    Some(column),
                    "a field without quotes, or entirely enclosed in quotes",
                    show(field),
                ));
            }
            fields.push(Cow::Borrowed(field));
            if end == line.len() {
                return Ok(fields);
            }
            i = end + 1;
        }
    }
}

/// Split a tab-separated line, dropping trailing empty (blank) fields beyond `keep`: many GCT/RES
/// writers end lines with a tab.
pub(crate) fn split_tabs(line: &str, keep: usize) -> Vec<&str> {
    let mut f: Vec<&str> = line.split('\t').collect();
    while f.len() > keep && f.last().is_some_and(|s| s.trim().is_empty()) {
        f.pop();
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn csv_quoting_follows_rfc_4180_within_a_line() {
        let p = Path::new("t.csv");
        let f = split_csv(p, 1, r#"1,"a, b","say ""hi""",,x"#).unwrap();
        assert_eq!(f, vec!["1", "a, b", "say \"hi\"", "", "x"]);
        assert_eq!(split_csv(p, 1, "").unwrap(), vec![""]);
        assert_eq!(split_csv(p, 1, r#""a","#).unwrap(), vec!["a", ""]);
        let e = split_csv(p, 7, r#"1,"open"#).unwrap_err().to_string();
        assert!(
            e.starts_with("t.csv:7:2: expected a closing double quote"),
            "{e}"
        );
        let e = split_csv(p, 7, r#"1,"a"b,c"#).unwrap_err().to_string();
        assert!(e.starts_with("t.csv:7:2:"), "{e}");
        let e = split_csv(p, 3, r#"1,2,x"y"#).unwrap_err().to_string();
        assert!(e.starts_with("t.csv:3:3:"), "{e}");
    }

    #[test]
    fn numbers_must_be_finite() {
        assert_eq!(parse_finite(" -1.5e2 "), Some(-150.0));
        assert_eq!(parse_finite("\"3\""), Some(3.0));
        for bad in ["", "NaN", "inf", "-infinity", "1,5", "x", "1e999"] {
            assert_eq!(parse_finite(bad), None, "{bad}");
        }
        assert_eq!(parse_uint("0042"), Some(42));
        assert_eq!(parse_uint("-1"), None);
        assert_eq!(parse_uint("+1"), None);
        let e = number(Path::new("f"), 2, 5, "abc").unwrap_err().to_string();
        assert_eq!(e, "f:2:5: expected a finite number, found \"abc\"");
        assert!(show(&"y".repeat(100)).ends_with("\"..."));
    }

    #[test]
    fn lines_strip_terminators_and_read_gzip() {
        let dir = tempfile::tempdir().unwrap();
        let text = "\u{feff}a,b\r\nc\n\nlast";
        let plain = dir.path().join("p.txt");
        std::fs::write(&plain, text).unwrap();
        let gz = dir.path().join("p.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(text.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        for p in [&plain, &gz] {
            let mut l = Lines::open(p).unwrap();
            let mut got = Vec::new();
            while let Some((n, s)) = l.next_line(p).unwrap() {
                got.push((n, s.to_string()));
            }
            assert_eq!(
                got,
                vec![
                    (1, "a,b".to_string()),
                    (2, "c".to_string()),
                    (3, String::new()),
                    (4, "last".to_string())
                ]
            );
            assert_eq!(l.line_number(), 4);
        }
        // Invalid UTF-8 and a truncated gzip stream are typed errors.
        std::fs::write(&plain, b"ok\n\xff\xfe\n").unwrap();
        let mut l = Lines::open(&plain).unwrap();
        l.next_line(&plain).unwrap();
        let e = l.next_line(&plain).unwrap_err();
        assert!(matches!(e, DataError::Line { line: 2, .. }), "{e}");
        let big: String = (0..20_000).map(|i| format!("{i},{}\n", i * 3)).collect();
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(big.as_bytes()).unwrap();
        let packed = enc.finish().unwrap();
        std::fs::write(&gz, &packed[..packed.len() / 2]).unwrap();
        let mut l = Lines::open(&gz).unwrap();
        let e = loop {
            match l.next_line(&gz) {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("truncated stream read to the end"),
                Err(e) => break e,
            }
        };
        assert!(matches!(e, DataError::Corrupt { .. }), "{e}");
        assert!(matches!(
            Lines::open(&dir.path().join("absent")),
            Err(DataError::Io { .. })
        ));
    }
}
