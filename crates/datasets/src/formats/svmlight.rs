//! The svmlight / libsvm sparse text format: one example per line,
//!
//! ```text
//! <label> [qid:<u64>] <index>:<value> <index>:<value> ... [# comment]
//! ```
//!
//! * Indices are 1-based by default ([`SvmlightOptions::zero_based`] switches to 0-based) and
//!   must be strictly increasing within a line.
//! * Labels and values are decimal floating-point numbers (`+1`, `-1`, `2`, `0.5`, `1e-3`);
//!   NaN and infinities are rejected. Multi-label lists (`1,2`) are not supported.
//! * Tokens are separated by ASCII spaces or tabs; `\r\n` line ends are accepted.
//! * Everything after the first `#` is the line's comment (surrounding whitespace is trimmed,
//!   so it does not round-trip). A line that is empty or holds only a comment is not an
//!   example and is skipped.
//! * Input may be plain or gzip (detected by magic bytes).
//!
//! Errors are [`DataError::Line`]s naming the 1-based line and the 1-based *byte* column of
//! the offending token. The writer emits exactly what the reader reads back: values are
//! printed in Rust's shortest round-trip form (`{}` or `{:e}`, whichever is shorter), so
//! every finite `f64` survives a round trip bit for bit (except `-0.0` labels, read as `0`).

use crate::DataError;
use dyad_core::LabeledSet;
use sprs::CsMat;
use std::io::Write;
use std::path::Path;

/// Reader options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SvmlightOptions {
    /// Indices start at 0 (libsvm and svmlight use 1; the default is `false`).
    pub zero_based: bool,
    /// Number of columns of the output matrix. `None`: one more than the largest column seen
    /// (0 for a file without features). When given, a larger index is an error.
    pub n_features: Option<usize>,
}

/// The decoded content of an svmlight file, one entry per example line.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmlightData {
    /// The label of each example (finite; `-0` is read as `0`).
    pub labels: Vec<f64>,
    /// The `qid:` of each example, where given.
    pub qids: Vec<Option<u64>>,
    /// CSR features; column `j` is svmlight index `j + 1` (or `j` when zero-based).
    pub x: CsMat<f64>,
    /// The trimmed text after `#` on each example line, where present.
    pub comments: Vec<Option<String>>,
    /// The 1-based source line of each example (all zero for data not read from a file).
    pub lines: Vec<u64>,
}

impl SvmlightData {
    /// Data without qids or comments (e.g. for writing).
    pub fn new(labels: Vec<f64>, x: CsMat<f64>) -> Self {
        let n = labels.len();
        SvmlightData {
            labels,
            qids: vec![None; n],
            x,
            comments: vec![None; n],
            lines: vec![0; n],
        }
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The distinct labels in ascending numeric order: class `c` of
    /// [`into_labeled_set`](Self::into_labeled_set) is `classes()[c]`.
    pub fn classes(&self) -> Vec<f64> {
        let mut c = self.labels.clone();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    }

    /// A labelled set whose classes are the distinct labels **in ascending numeric order**
    /// (so the class indices do not depend on row order), each named by the label's shortest
    /// decimal form (`"-1"`, `"1"`, `"2.5"`). qids and comments are dropped.
    pub fn into_labeled_set(self) -> LabeledSet {
        let classes = self.classes();
        let labels = self
            .labels
            .iter()
            .map(|l| {
                classes
                    .binary_search_by(|c| c.total_cmp(l))
                    .expect("every label is one of the classes") as u32
            })
            .collect();
        let names = classes.iter().map(|c| format!("{c}")).collect();
        LabeledSet::new(self.x, labels, names, None).expect("labels in range by construction")
    }
}

/// Read an svmlight file (plain or gzip).
pub fn read_svmlight(path: &Path, opts: SvmlightOptions) -> Result<SvmlightData, DataError> {
    let bytes = super::read_maybe_gzip(path)?;
    parse_svmlight(path, &bytes, opts)
}

/// Read an svmlight file as a labelled set (classes = distinct labels in ascending numeric
/// order, see [`SvmlightData::into_labeled_set`]).
pub fn read_svmlight_labeled(path: &Path, opts: SvmlightOptions) -> Result<LabeledSet, DataError> {
    Ok(read_svmlight(path, opts)?.into_labeled_set())
}

fn is_sep(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn shown(tok: &[u8]) -> String {
    let s = String::from_utf8_lossy(tok);
    if s.chars().count() > 40 {
        format!("`{}...`", s.chars().take(40).collect::<String>())
    } else {
        format!("`{s}`")
    }
}

fn parse_finite(tok: &[u8]) -> Option<f64> {
    let v: f64 = std::str::from_utf8(tok).ok()?.parse().ok()?;
    v.is_finite().then_some(if v == 0.0 { 0.0 } else { v })
}

fn parse_digits(tok: &[u8]) -> Option<u64> {
    if tok.is_empty() || !tok.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(tok).ok()?.parse().ok()
}

/// Parse svmlight text (already decompressed); `path` is used for error messages only.
pub fn parse_svmlight(
    path: &Path,
    bytes: &[u8],
    opts: SvmlightOptions,
) -> Result<SvmlightData, DataError> {
    let mut labels = Vec::new();
    let mut qids = Vec::new();
    let mut comments = Vec::new();
    let mut lines = Vec::new();
    let mut indptr = vec![0usize];
    let mut indices: Vec<usize> = Vec::new();
    let mut data: Vec<f64> = Vec::new();
    let mut max_col: Option<usize> = None;
    let base: u64 = if opts.zero_based { 0 } else { 1 };

    for (line_no, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = line_no as u64 + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let (body, comment) = match raw.iter().position(|&b| b == b'#') {
            Some(p) => (&raw[..p], Some(&raw[p + 1..])),
            None => (raw, None),
        };
        // Tokens with their 1-based byte columns.
        let mut toks = Vec::new();
        let mut i = 0;
        while i < body.len() {
            if is_sep(body[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < body.len() && !is_sep(body[i]) {
                i += 1;
            }
            toks.push((start as u64 + 1, &body[start..i]));
        }
        let Some(&(label_col, label_tok)) = toks.first() else {
            continue; // blank or comment-only line
        };
        let err = |col: u64, expected: String, tok: &[u8]| {
            DataError::line(path, line_no, Some(col), expected, shown(tok))
        };
        let label = parse_finite(label_tok)
            .ok_or_else(|| err(label_col, "a finite numeric label".into(), label_tok))?;
        let mut rest = &toks[1..];
        let mut qid = None;
        if let Some(&(col, tok)) = rest.first()
            && let Some(q) = tok.strip_prefix(b"qid:")
        {
            qid = Some(
                parse_digits(q).ok_or_else(|| err(col, "`qid:` followed by a u64".into(), tok))?,
            );
            rest = &rest[1..];
        }
        let mut prev: Option<u64> = None;
        for &(col, tok) in rest {
            let Some(colon) = tok.iter().position(|&b| b == b':') else {
                return Err(err(col, "an `index:value` pair".into(), tok));
            };
            let (idx_tok, val_tok) = (&tok[..colon], &tok[colon + 1..]);
            let idx = parse_digits(idx_tok)
                .ok_or_else(|| err(col, "an unsigned integer feature index".into(), tok))?;
            if idx < base {
                return Err(err(col, format!("a feature index >= {base}"), tok));
            }
            if let Some(p) = prev
                && idx <= p
            {
                return Err(err(
                    col,
                    format!("a feature index greater than the previous index {p}"),
                    tok,
                ));
            }
            prev = Some(idx);
            let column = usize::try_from(idx - base)
                .ok()
                .filter(|&c| c < usize::MAX / 2)
                .ok_or_else(|| err(col, "a feature index that fits in memory".into(), tok))?;
            if let Some(n) = opts.n_features
                && column >= n
            {
                return Err(err(
                    col,
                    format!("a feature index below {} ({n} features)", n as u64 + base),
                    tok,
                ));
            }
            let value = parse_finite(val_tok).ok_or_else(|| {
                err(
                    col + colon as u64 + 1,
                    "a finite numeric feature value".into(),
                    val_tok,
                )
            })?;
            indices.push(column);
            data.push(value);
            max_col = Some(max_col.map_or(column, |m| m.max(column)));
        }
        indptr.push(indices.len());
        labels.push(label);
        qids.push(qid);
        comments.push(comment.map(|c| String::from_utf8_lossy(c).trim().to_string()));
        lines.push(line_no);
    }
    let cols = opts
        .n_features
        .unwrap_or_else(|| max_col.map_or(0, |m| m + 1));
    let n = labels.len();
    let x =
        CsMat::try_new((n, cols), indptr, indices, data).map_err(|e| DataError::Inconsistent {
            path: path.to_path_buf(),
            message: format!("internal CSR construction failed: {}", e.3),
        })?;
    Ok(SvmlightData {
        labels,
        qids,
        x,
        comments,
        lines,
    })
}

/// The shortest of `{}` and `{:e}` (both shortest round-trip forms of a finite `f64`).
pub fn format_f64(v: f64) -> String {
    let a = format!("{v}");
    let b = format!("{v:e}");
    if b.len() < a.len() { b } else { a }
}

/// Check that `data` can be written so that [`parse_svmlight`] reads it back unchanged.
pub fn validate_for_write(data: &SvmlightData) -> Result<(), DataError> {
    let bad = |m: String| Err(DataError::Param(m));
    let n = data.labels.len();
    if !data.x.is_csr() || data.x.rows() != n {
        return bad(format!(
            "svmlight output needs a CSR matrix with one row per label ({n} labels, {} rows)",
            data.x.rows()
        ));
    }
    if data.qids.len() != n || data.comments.len() != n {
        return bad("qids and comments must have one entry per label".into());
    }
    if let Some(i) = data.labels.iter().position(|l| !l.is_finite()) {
        return bad(format!("row {i}: non-finite label {}", data.labels[i]));
    }
    for (i, row) in data.x.outer_iterator().enumerate() {
        if let Some(v) = row.data().iter().find(|v| !v.is_finite()) {
            return bad(format!("row {i}: non-finite value {v}"));
        }
        if row.indices().windows(2).any(|w| w[0] >= w[1]) {
            return bad(format!("row {i}: indices not strictly increasing"));
        }
    }
    if let Some(i) = data
        .comments
        .iter()
        .position(|c| c.as_ref().is_some_and(|c| c.contains(['\n', '\r'])))
    {
        return bad(format!("row {i}: comment contains a line break"));
    }
    Ok(())
}

/// Write `data` in svmlight format to `w` (after [`validate_for_write`]).
pub fn write_svmlight_to<W: Write>(
    w: &mut W,
    data: &SvmlightData,
    zero_based: bool,
) -> Result<(), std::io::Error> {
    let base = usize::from(!zero_based);
    let mut line = String::new();
    for (i, row) in data.x.outer_iterator().enumerate() {
        use std::fmt::Write as _;
        line.clear();
        line.push_str(&format_f64(data.labels[i]));
        if let Some(q) = data.qids[i] {
            let _ = write!(line, " qid:{q}");
        }
        for (&j, &v) in row.indices().iter().zip(row.data()) {
            let _ = write!(line, " {}:{}", j + base, format_f64(v));
        }
        if let Some(c) = &data.comments[i] {
            let _ = write!(line, " # {c}");
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

/// Write `data` to `path` atomically (a temporary file in the same directory, then a
/// rename), gzip-compressed when `gzip`.
pub fn write_svmlight(
    path: &Path,
    data: &SvmlightData,
    zero_based: bool,
    gzip: bool,
) -> Result<(), DataError> {
    validate_for_write(data)?;
    write_atomically(path, |f| {
        if gzip {
            let mut enc = flate2::write::GzEncoder::new(f, flate2::Compression::default());
            write_svmlight_to(&mut enc, data, zero_based)?;
            enc.finish()?.flush()
        } else {
            let mut b = std::io::BufWriter::new(f);
            write_svmlight_to(&mut b, data, zero_based)?;
            b.flush()
        }
    })
}

/// Create `path` by writing a temporary file next to it and renaming it into place, so that
/// readers never see a partly written file. The temporary file is removed on failure.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(std::fs::File) -> std::io::Result<()>,
) -> Result<(), DataError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = std::fs::File::create(&tmp)
        .and_then(write)
        .and_then(|()| std::fs::rename(&tmp, path));
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        DataError::io(path, e)
    })
}

/// Write a labelled set with each row's class index as its label.
pub fn write_labeled_set(
    path: &Path,
    set: &LabeledSet,
    zero_based: bool,
    gzip: bool,
) -> Result<(), DataError> {
    let data = SvmlightData::new(
        set.labels.iter().map(|&l| f64::from(l)).collect(),
        set.x.clone(),
    );
    write_svmlight(path, &data, zero_based, gzip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<SvmlightData, DataError> {
        parse_svmlight(Path::new("f.svm"), s.as_bytes(), SvmlightOptions::default())
    }

    fn line_col(e: DataError) -> (u64, Option<u64>, String) {
        match e {
            DataError::Line {
                line,
                column,
                expected,
                ..
            } => (line, column, expected),
            other => panic!("expected a line error, got {other}"),
        }
    }

    #[test]
    fn parses_labels_qids_indices_and_comments() {
        let d = p("# header comment\n+1 qid:3 1:0.5 4:-2 # img a\r\n\n-1 2:1e-3\n2.5\n").unwrap();
        assert_eq!(d.labels, vec![1.0, -1.0, 2.5]);
        assert_eq!(d.qids, vec![Some(3), None, None]);
        assert_eq!(d.comments, vec![Some("img a".into()), None, None]);
        assert_eq!(d.lines, vec![2, 4, 5]);
        assert_eq!(d.x.shape(), (3, 4));
        assert_eq!(d.x.outer_view(0).unwrap().indices(), &[0, 3]);
        assert_eq!(d.x.outer_view(0).unwrap().data(), &[0.5, -2.0]);
        assert_eq!(d.x.outer_view(1).unwrap().indices(), &[1]);
        assert_eq!(d.x.outer_view(1).unwrap().data(), &[1e-3]);
        assert_eq!(d.x.outer_view(2).unwrap().nnz(), 0);

        let z = parse_svmlight(
            Path::new("z"),
            b"0 0:1 7:2\n",
            SvmlightOptions {
                zero_based: true,
                n_features: Some(10),
            },
        )
        .unwrap();
        assert_eq!(z.x.shape(), (1, 10));
        assert_eq!(z.x.outer_view(0).unwrap().indices(), &[0, 7]);
    }

    #[test]
    fn labeled_set_classes_are_sorted_numerically() {
        let s = p("10 1:1\n-1 1:1\n2 1:1\n10 1:1\n+2 2:1\n")
            .unwrap()
            .into_labeled_set();
        assert_eq!(s.class_names, vec!["-1", "2", "10"]);
        assert_eq!(s.labels, vec![2, 0, 1, 2, 1]);
    }

    #[test]
    fn malformed_tokens_name_line_and_column() {
        let cases: [(&str, u64, u64, &str); 12] = [
            ("1 1:1\nx 1:1\n", 2, 1, "label"),
            ("1 1:1\n1 1:nan\n", 2, 5, "finite"),
            ("1 1:inf\n", 1, 5, "finite"),
            ("nan 1:1\n", 1, 1, "label"),
            ("1 3:1 2:1\n", 1, 7, "greater than the previous index 3"),
            ("1 3:1  3:1\n", 1, 8, "greater than the previous index 3"),
            ("1 0:1\n", 1, 3, ">= 1"),
            ("1  -1:1\n", 1, 4, "unsigned integer"),
            ("1 1:1 foo\n", 1, 7, "index:value"),
            ("1 qid:x 1:1\n", 1, 3, "qid"),
            ("1 1:\n", 1, 5, "finite"),
            ("1 99999999999999999999999:1\n", 1, 3, "unsigned integer"),
        ];
        for (text, line, col, what) in cases {
            let (l, c, expected) = line_col(p(text).unwrap_err());
            assert_eq!((l, c), (line, Some(col)), "{text:?}");
            assert!(expected.contains(what), "{text:?}: {expected}");
        }
        let e = parse_svmlight(
            Path::new("f.svm"),
            b"1 5:1\n",
            SvmlightOptions {
                zero_based: false,
                n_features: Some(4),
            },
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("f.svm:1:3: expected"), "{e}");
        // Invalid UTF-8 inside a token is an error, not a panic.
        let (l, c, _) = line_col(
            parse_svmlight(Path::new("f"), b"1 1:\xff\n", SvmlightOptions::default()).unwrap_err(),
        );
        assert_eq!((l, c), (1, Some(5)));
    }

    #[test]
    fn write_read_round_trip_is_exact() {
        let vals = [
            0.1 + 0.2,
            std::f64::consts::PI,
            -1e-300,
            5e-324,
            1.7976931348623157e308,
            123_456_789.123_456_79,
            1.0 / 3.0,
            0.0,
        ];
        let indptr = vec![0, 3, 3, 8];
        let indices = vec![0, 5, 999, 1, 2, 3, 4, 1000];
        let x = CsMat::new((3, 1001), indptr, indices, vals.to_vec());
        let mut d = SvmlightData::new(vec![1.0, -3.5, 1e20], x);
        d.qids[1] = Some(7);
        d.comments[2] = Some("a # b".into());
        let dir = tempfile::tempdir().unwrap();
        for (zero_based, gzip) in [(false, false), (true, true)] {
            let path = dir.path().join(format!("d-{zero_based}-{gzip}.svm"));
            write_svmlight(&path, &d, zero_based, gzip).unwrap();
            let raw = std::fs::read(&path).unwrap();
            assert_eq!(gzip, raw.starts_with(&[0x1f, 0x8b]));
            let back = read_svmlight(
                &path,
                SvmlightOptions {
                    zero_based,
                    n_features: Some(1001),
                },
            )
            .unwrap();
            assert_eq!(back.labels, d.labels);
            assert_eq!(back.qids, d.qids);
            assert_eq!(back.comments, d.comments);
            assert_eq!(back.x, d.x);
            for (a, b) in back.x.data().iter().zip(d.x.data()) {
                assert_eq!(a.to_bits(), b.to_bits());
            }
        }
        let text = {
            let mut v = Vec::new();
            write_svmlight_to(&mut v, &d, false).unwrap();
            String::from_utf8(v).unwrap()
        };
        assert_eq!(
            text,
            "1 1:0.30000000000000004 6:3.141592653589793 1000:-1e-300\n\
             -3.5 qid:7\n\
             1e20 2:5e-324 3:1.7976931348623157e308 4:123456789.12345679 \
             5:0.3333333333333333 1001:0 # a # b\n"
        );
    }

    #[test]
    fn writer_refuses_what_the_reader_would_reject() {
        let x = CsMat::new((1, 2), vec![0, 1], vec![0], vec![f64::NAN]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.svm");
        assert!(matches!(
            write_svmlight(&path, &SvmlightData::new(vec![1.0], x), false, false),
            Err(DataError::Param(_))
        ));
        assert!(!path.exists());
        let x = CsMat::new((1, 2), vec![0, 1], vec![0], vec![1.0]);
        let mut d = SvmlightData::new(vec![1.0], x);
        d.comments[0] = Some("two\nlines".into());
        assert!(write_svmlight(&path, &d, false, false).is_err());
    }
}
