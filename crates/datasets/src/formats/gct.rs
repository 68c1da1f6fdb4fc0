//! The Broad Institute (GenePattern / GSEA) expression formats: GCT, RES and the categorical CLS
//! class file. The Singh et al. (2002) prostate data is also distributed this way
//! (`Prostate_TN_final0701_allmeanScale.res` + `.cls`).
//!
//! * **GCT 1.2** (tab-separated): line 1 `#1.2`; line 2 `rows<TAB>columns`; line 3
//!   `Name<TAB>Description<TAB>sample…`; then one line per gene: id, description, one value per
//!   sample. Missing values are rejected (every value must be a finite number).
//! * **RES** (tab-separated): line 1 `Description<TAB>Accession<TAB>s1<TAB><TAB>s2<TAB><TAB>…`
//!   (each sample name followed by the empty header of its call column); line 2 the sample
//!   descriptions (`<TAB>d1<TAB><TAB>d2…`, kept when present); line 3 the number of data rows;
//!   then per gene: description, accession, and per sample a value and an `A`/`P`/`M` call.
//!   Gene ids are the accessions, gene names the descriptions.
//! * **CLS** (categorical; space- or tab-separated): line 1 `n_samples n_classes 1`; line 2
//!   `# name1 name2 …`; line 3 one label per sample, either class names from line 2 or class
//!   numbers (the first label decides which: if it is a class name, all must be). Numbers are
//!   ambiguous in practice: most tools read label `k` as the `k`-th name
//!   (0-based; [`ClsNumbering::ByIndex`]), GSEA assigns the first label used to the first name,
//!   the second distinct label to the second, … ([`ClsNumbering::ByFirstAppearance`]).
//!
//! Trailing empty fields (a tab at the end of a line) and blank lines at the end of a file are
//! accepted; anything else out of place is a [`DataError::Line`] naming the line and field.

use super::expr_text::{Lines, number, parse_uint, show, split_tabs};
use crate::expression::{Categorical, ExpressionSet};
use crate::{ContentHasher, ContentId, DataError};
use ndarray::Array2;
use std::path::Path;

/// Read the next line, failing with "expected `what`" at end of file.
fn require<'a>(lines: &'a mut Lines, path: &Path, what: &str) -> Result<(u64, &'a str), DataError> {
    let after = lines.line_number();
    lines
        .next_line(path)?
        .ok_or_else(|| DataError::line(path, after + 1, None, what.to_string(), "end of file"))
}

/// After the announced rows: only blank lines may follow.
fn expect_only_blank_lines(lines: &mut Lines, path: &Path, rows: usize) -> Result<(), DataError> {
    while let Some((no, line)) = lines.next_line(path)? {
        if !line.trim().is_empty() {
            return Err(DataError::line(
                path,
                no,
                None,
                format!("end of file after the {rows} data rows announced in the header"),
                format!("another line starting {}", show(line)),
            ));
        }
    }
    Ok(())
}

/// A count field (non-negative integer) with field number.
fn count(
    path: &Path,
    line: u64,
    column: usize,
    field: &str,
    what: &str,
) -> Result<usize, DataError> {
    parse_uint(field)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| {
            DataError::line(
                path,
                line,
                Some(column as u64),
                what.to_string(),
                show(field),
            )
        })
}

/// Read a GCT 1.2 file (plain or gzip): ids from `Name`, gene names from `Description`.
pub fn read_gct(path: &Path) -> Result<ExpressionSet, DataError> {
    gct_from_lines(path, Lines::open(path)?)
}

/// Parse GCT bytes (plain or gzip); `path` names the source in errors.
pub fn parse_gct(path: &Path, bytes: Vec<u8>) -> Result<ExpressionSet, DataError> {
    gct_from_lines(path, Lines::from_bytes(bytes))
}

fn gct_from_lines(path: &Path, mut lines: Lines) -> Result<ExpressionSet, DataError> {
    let (no, version) = require(&mut lines, path, "the GCT version line `#1.2`")?;
    if version.trim_end() != "#1.2" {
        return Err(DataError::line(
            path,
            no,
            None,
            "the GCT version line `#1.2`",
            show(version),
        ));
    }
    let (no, dims) = require(
        &mut lines,
        path,
        "the GCT dimensions line `rows<TAB>columns`",
    )?;
    let f: Vec<&str> = dims.split(['\t', ' ']).filter(|s| !s.is_empty()).collect();
    if f.len() != 2 {
        return Err(DataError::line(
            path,
            no,
            None,
            "two numbers (rows and sample columns)",
            format!("{} fields", f.len()),
        ));
    }
    let rows = count(path, no, 1, f[0], "a row count")?;
    let cols = count(path, no, 2, f[1], "a sample-column count")?;
    // Refuse absurd announced sizes before allocating (the rows are read one by one anyway).
    if rows.checked_mul(cols).is_none_or(|c| c > (1 << 34)) {
        return Err(DataError::line(
            path,
            no,
            None,
            "dimensions whose product fits in memory",
            format!("{rows} x {cols}"),
        ));
    }
    let (no, header) = require(
        &mut lines,
        path,
        "the GCT header `Name<TAB>Description<TAB>…`",
    )?;
    let h = split_tabs(header, 2 + cols);
    if h.len() < 2
        || !h[0].trim().eq_ignore_ascii_case("name")
        || !h[1].trim().eq_ignore_ascii_case("description")
    {
        return Err(DataError::line(
            path,
            no,
            Some(1),
            "the header to start with `Name<TAB>Description`",
            show(header),
        ));
    }
    if h.len() != 2 + cols {
        return Err(DataError::line(
            path,
            no,
            None,
            format!("{cols} sample names (from the dimensions line)"),
            format!("{}", h.len() - 2),
        ));
    }
    let sample_ids: Vec<String> = h[2..].iter().map(|s| s.trim().to_string()).collect();
    let mut values = Vec::with_capacity(rows.saturating_mul(cols).min(1 << 20));
    let mut gene_ids = Vec::with_capacity(rows.min(1 << 20));
    let mut gene_names = Vec::with_capacity(rows.min(1 << 20));
    for r in 0..rows {
        let (no, line) = require(
            &mut lines,
            path,
            &format!("data row {} of the {rows} announced", r + 1),
        )?;
        let f = split_tabs(line, 2 + cols);
        if f.len() != 2 + cols {
            return Err(DataError::line(
                path,
                no,
                None,
                format!(
                    "{} tab-separated fields (name, description, {cols} values)",
                    2 + cols
                ),
                format!("{} fields", f.len()),
            ));
        }
        for (j, field) in f[2..].iter().enumerate() {
            values.push(number(path, no, j + 3, field)?);
        }
        gene_ids.push(f[0].trim().to_string());
        gene_names.push(f[1].trim().to_string());
    }
    expect_only_blank_lines(&mut lines, path, rows)?;
    let m = Array2::from_shape_vec((rows, cols), values).expect("rows x cols values");
    ExpressionSet::new(m, gene_ids, sample_ids)?.with_gene_names(gene_names)
}

/// An Affymetrix absent / present / marginal call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    Absent,
    Present,
    Marginal,
}

impl Call {
    fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "A" => Some(Call::Absent),
            "P" => Some(Call::Present),
            "M" => Some(Call::Marginal),
            _ => None,
        }
    }

    fn code(self) -> u64 {
        match self {
            Call::Absent => 0,
            Call::Present => 1,
            Call::Marginal => 2,
        }
    }
}

/// A RES file: the expression values with their calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Res {
    /// Genes x samples; gene ids are the accessions, gene names the descriptions.
    pub data: ExpressionSet,
    /// One call per value, same shape as `data.values()`.
    pub calls: Array2<Call>,
    /// The sample descriptions of line 2 (empty strings where absent).
    pub sample_descriptions: Vec<String>,
}

impl Res {
    /// Identity of the values, annotations and calls (not of the sample descriptions).
    pub fn content_id(&self) -> ContentId {
        let mut h = ContentHasher::new("res/v1");
        h.str(&self.data.content_id().0);
        let mut buf = Vec::with_capacity(self.calls.ncols());
        for row in self.calls.rows() {
            buf.clear();
            buf.extend(row.iter().map(|c| c.code() as u8));
            h.bytes(&buf);
        }
        h.finish()
    }
}

/// Read a RES file (plain or gzip).
pub fn read_res(path: &Path) -> Result<Res, DataError> {
    res_from_lines(path, Lines::open(path)?)
}

/// Parse RES bytes (plain or gzip); `path` names the source in errors.
pub fn parse_res(path: &Path, bytes: Vec<u8>) -> Result<Res, DataError> {
    res_from_lines(path, Lines::from_bytes(bytes))
}

fn res_from_lines(path: &Path, mut lines: Lines) -> Result<Res, DataError> {
    let (no, header) = require(
        &mut lines,
        path,
        "the RES header `Description<TAB>Accession<TAB>…`",
    )?;
    let h = split_tabs(header, 0);
    if h.len() < 3
        || !h[0].trim().eq_ignore_ascii_case("description")
        || !h[1].trim().eq_ignore_ascii_case("accession")
    {
        return Err(DataError::line(
            path,
            no,
            Some(1),
            "the header `Description<TAB>Accession<TAB>sample<TAB><TAB>sample…`",
            show(header),
        ));
    }
    // Sample names at fields 3, 5, 7, …; fields 4, 6, … head the call columns (usually empty).
    let mut sample_ids = Vec::new();
    for (k, chunk) in h[2..].chunks(2).enumerate() {
        let name = chunk[0].trim();
        if name.is_empty() {
            return Err(DataError::line(
                path,
                no,
                Some((3 + 2 * k) as u64),
                "a sample name (names are separated by two tabs)",
                "an empty field",
            ));
        }
        sample_ids.push(name.to_string());
    }
    let n = sample_ids.len();
    let (_, desc_line) = require(&mut lines, path, "the RES sample-description line")?;
    let d: Vec<&str> = desc_line.split('\t').collect();
    let sample_descriptions = (0..n)
        .map(|k| {
            d.get(1 + 2 * k)
                .map_or(String::new(), |s| s.trim().to_string())
        })
        .collect();
    let (no, rows_line) = require(&mut lines, path, "the RES row-count line")?;
    let rows_field = split_tabs(rows_line, 1)[0];
    let rows = count(path, no, 1, rows_field, "the number of data rows")?;
    if rows.checked_mul(n).is_none_or(|c| c > (1 << 34)) {
        return Err(DataError::line(
            path,
            no,
            Some(1),
            "a row count whose matrix fits in memory",
            rows.to_string(),
        ));
    }
    let width = 2 + 2 * n;
    let mut values = Vec::with_capacity(rows.saturating_mul(n).min(1 << 20));
    let mut calls = Vec::with_capacity(rows.saturating_mul(n).min(1 << 20));
    let mut gene_ids = Vec::with_capacity(rows.min(1 << 20));
    let mut gene_names = Vec::with_capacity(rows.min(1 << 20));
    for r in 0..rows {
        let (no, line) = require(
            &mut lines,
            path,
            &format!("data row {} of the {rows} announced", r + 1),
        )?;
        let f = split_tabs(line, width);
        if f.len() != width {
            return Err(DataError::line(
                path,
                no,
                None,
                format!(
                    "{width} tab-separated fields (description, accession, value and call for \
                     {n} samples)"
                ),
                format!("{} fields", f.len()),
            ));
        }
        for k in 0..n {
            let column = 3 + 2 * k;
            values.push(number(path, no, column, f[column - 1])?);
            let call = Call::parse(f[column]).ok_or_else(|| {
                DataError::line(
                    path,
                    no,
                    Some(column as u64 + 1),
                    "an absent/present/marginal call A, P or M",
                    show(f[column]),
                )
            })?;
            calls.push(call);
        }
        gene_names.push(f[0].trim().to_string());
        gene_ids.push(f[1].trim().to_string());
    }
    expect_only_blank_lines(&mut lines, path, rows)?;
    let m = Array2::from_shape_vec((rows, n), values).expect("rows x n values");
    let calls = Array2::from_shape_vec((rows, n), calls).expect("rows x n calls");
    let data = ExpressionSet::new(m, gene_ids, sample_ids)?.with_gene_names(gene_names)?;
    Ok(Res {
        data,
        calls,
        sample_descriptions,
    })
}

/// How numeric labels in a CLS file map to the class names (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClsNumbering {
    /// Label `k` is the `k`-th class name (0-based).
    #[default]
    ByIndex,
    /// The first distinct label is the first class name, the second the second, … (GSEA).
    ByFirstAppearance,
}

/// Read a categorical CLS file (plain or gzip) into one class per sample.
pub fn read_cls(path: &Path, numbering: ClsNumbering) -> Result<Categorical, DataError> {
    cls_from_lines(path, Lines::open(path)?, numbering)
}

/// Parse CLS bytes (plain or gzip); `path` names the source in errors.
pub fn parse_cls(
    path: &Path,
    bytes: Vec<u8>,
    numbering: ClsNumbering,
) -> Result<Categorical, DataError> {
    cls_from_lines(path, Lines::from_bytes(bytes), numbering)
}

fn cls_from_lines(
    path: &Path,
    mut lines: Lines,
    numbering: ClsNumbering,
) -> Result<Categorical, DataError> {
    let (no, first) = require(&mut lines, path, "the CLS line `n_samples n_classes 1`")?;
    if first.trim_start().starts_with('#') {
        return Err(DataError::line(
            path,
            no,
            Some(1),
            "a categorical CLS file (`n_samples n_classes 1`); continuous `#numeric` CLS files \
             are not supported",
            show(first),
        ));
    }
    let f: Vec<&str> = first.split_whitespace().collect();
    if f.len() != 3 {
        return Err(DataError::line(
            path,
            no,
            None,
            "three numbers `n_samples n_classes 1`",
            format!("{} fields", f.len()),
        ));
    }
    let n = count(path, no, 1, f[0], "the number of samples")?;
    let k = count(path, no, 2, f[1], "the number of classes")?;
    if f[2] != "1" {
        return Err(DataError::line(path, no, Some(3), "1", show(f[2])));
    }
    let (no, second) = require(&mut lines, path, "the CLS class-name line `# name…`")?;
    let Some(rest) = second.trim_start().strip_prefix('#') else {
        return Err(DataError::line(
            path,
            no,
            Some(1),
            "the class-name line to start with `#`",
            show(second),
        ));
    };
    let names: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    if names.len() != k {
        return Err(DataError::line(
            path,
            no,
            None,
            format!("{k} class names (from line 1)"),
            format!("{}", names.len()),
        ));
    }
    if let Some(dup) = (1..k).find(|&i| names[..i].contains(&names[i])) {
        return Err(DataError::line(
            path,
            no,
            Some(dup as u64 + 2),
            "distinct class names",
            format!("{} again", show(&names[dup])),
        ));
    }
    let (no, third) = require(&mut lines, path, "the CLS label line")?;
    let tokens: Vec<&str> = third.split_whitespace().collect();
    if tokens.len() != n {
        return Err(DataError::line(
            path,
            no,
            None,
            format!("{n} labels (from line 1)"),
            format!("{}", tokens.len()),
        ));
    }
    // The first label decides: a class name means names throughout, otherwise numbers.
    let name_code = |t: &str| names.iter().position(|m| m == t).map(|c| c as u32);
    let codes = match tokens.first().map(|t| name_code(t)) {
        Some(Some(_)) => {
            let mut codes = Vec::with_capacity(n);
            for (i, t) in tokens.iter().enumerate() {
                let Some(c) = name_code(t) else {
                    return Err(DataError::line(
                        path,
                        no,
                        Some(i as u64 + 1),
                        format!("a class name from line 2 ({})", names.join(", ")),
                        show(t),
                    ));
                };
                codes.push(c);
            }
            codes
        }
        _ => {
            let mut first_seen: Vec<u64> = Vec::new();
            let mut codes = Vec::with_capacity(n);
            for (i, t) in tokens.iter().enumerate() {
                let column = Some(i as u64 + 1);
                let Some(v) = parse_uint(t) else {
                    return Err(DataError::line(
                        path,
                        no,
                        column,
                        "a class number (the first label is not a class name, so all labels \
                         must be numbers)",
                        show(t),
                    ));
                };
                let code = match numbering {
                    ClsNumbering::ByIndex => v,
                    ClsNumbering::ByFirstAppearance => {
                        match first_seen.iter().position(|&x| x == v) {
                            Some(c) => c as u64,
                            None => {
                                first_seen.push(v);
                                first_seen.len() as u64 - 1
                            }
                        }
                    }
                };
                if code >= k as u64 {
                    return Err(DataError::line(
                        path,
                        no,
                        column,
                        match numbering {
                            ClsNumbering::ByIndex => format!("a class number below {k}"),
                            ClsNumbering::ByFirstAppearance => {
                                format!("at most {k} distinct class numbers")
                            }
                        },
                        show(t),
                    ));
                }
                codes.push(code as u32);
            }
            codes
        }
    };
    while let Some((no, line)) = lines.next_line(path)? {
        if !line.trim().is_empty() {
            return Err(DataError::line(
                path,
                no,
                None,
                "end of file after the label line",
                show(line),
            ));
        }
    }
    Categorical::new(names, codes)
}

/// Read a GCT or RES expression file with a CLS class file: the CLS labels become the samples'
/// class labels. A sample-count mismatch is [`DataError::Inconsistent`] naming the CLS file.
pub fn read_with_cls(
    expression: &Path,
    cls: &Path,
    numbering: ClsNumbering,
) -> Result<ExpressionSet, DataError> {
    let data = if is_res(expression)? {
        read_res(expression)?.data
    } else {
        read_gct(expression)?
    };
    let labels = read_cls(cls, numbering)?;
    if labels.len() != data.n_samples() {
        return Err(DataError::Inconsistent {
            path: cls.to_path_buf(),
            message: format!(
                "{} class labels for the {} samples of {}",
                labels.len(),
                data.n_samples(),
                expression.display()
            ),
        });
    }
    data.with_labels(labels)
}

/// Whether a file's first line is a RES header (rather than the GCT `#1.2`).
fn is_res(path: &Path) -> Result<bool, DataError> {
    let mut lines = Lines::open(path)?;
    Ok(lines.next_line(path)?.is_some_and(|(_, l)| {
        l.trim_start()
            .to_ascii_lowercase()
            .starts_with("description")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const GCT: &str = "#1.2\n3\t2\nName\tDescription\tT1\tN1\n\
                       g1\tfirst gene\t1.5\t-2\ng2\t\t0\t7e2\t\ng3\tthird\t3\t4\n\n";

    const RES: &str = "Description\tAccession\tT1\t\tN1\t\n\
                       \tscan T1\t\tscan N1\t\n\
                       3\n\
                       first gene\tg1\t1.5\tP\t-2\tA\n\
                       \tg2\t0\tM\t7e2\tP\n\
                       third\tg3\t3\tA\t4\tA\t\n";

    #[test]
    fn gct_and_res_decode_to_the_same_content() {
        let dir = tempfile::tempdir().unwrap();
        let gct = read_gct(&write(dir.path(), "a.gct", GCT)).unwrap();
        assert_eq!(gct.values(), &array![[1.5, -2.0], [0.0, 700.0], [3.0, 4.0]]);
        assert_eq!(gct.gene_ids(), &["g1", "g2", "g3"]);
        assert_eq!(gct.gene_names().unwrap(), &["first gene", "", "third"]);
        assert_eq!(gct.sample_ids(), &["T1", "N1"]);

        let res = read_res(&write(dir.path(), "a.res", RES)).unwrap();
        assert_eq!(res.data.content_id(), gct.content_id());
        assert_eq!(
            res.calls,
            array![
                [Call::Present, Call::Absent],
                [Call::Marginal, Call::Present],
                [Call::Absent, Call::Absent]
            ]
        );
        assert_eq!(res.sample_descriptions, vec!["scan T1", "scan N1"]);
        let mut other = res.clone();
        other.calls[[0, 0]] = Call::Absent;
        assert_ne!(other.content_id(), res.content_id());
    }

    #[test]
    fn cls_labels_by_name_index_and_first_appearance() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "a.cls", "4 2 1\n# Tumor Normal\n1 1 0 1\n");
        let by_index = read_cls(&p, ClsNumbering::ByIndex).unwrap();
        assert_eq!(by_index.names(), &["Tumor", "Normal"]);
        assert_eq!(by_index.codes(), &[1, 1, 0, 1]);
        let gsea = read_cls(&p, ClsNumbering::ByFirstAppearance).unwrap();
        assert_eq!(gsea.codes(), &[0, 0, 1, 0]);
        let p = write(dir.path(), "b.cls", "3\t2\t1\n#\tA\tB\nB\tA\tB\n\n");
        assert_eq!(
            read_cls(&p, ClsNumbering::ByIndex).unwrap().codes(),
            &[1, 0, 1]
        );

        // GCT + CLS.
        let gct = write(dir.path(), "a.gct", GCT);
        let res = write(dir.path(), "a.res", RES);
        let cls = write(dir.path(), "c.cls", "2 2 1\n# Tumor Normal\nTumor Normal\n");
        let a = read_with_cls(&gct, &cls, ClsNumbering::ByIndex).unwrap();
        let b = read_with_cls(&res, &cls, ClsNumbering::ByIndex).unwrap();
        assert_eq!(a.labels().unwrap().codes(), &[0, 1]);
        assert_eq!(a.content_id(), b.content_id());
        let cls3 = write(dir.path(), "d.cls", "3 2 1\n# Tumor Normal\n0 1 1\n");
        let e = read_with_cls(&gct, &cls3, ClsNumbering::ByIndex).unwrap_err();
        assert!(
            matches!(e, DataError::Inconsistent { ref path, .. } if path == &cls3),
            "{e}"
        );
    }

    #[test]
    fn malformed_gct_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, &str); 9] = [
            ("#1.3\n", "x.gct:1: expected the GCT version line"),
            ("#1.2\n3\n", "x.gct:2: expected two numbers"),
            ("#1.2\n3\tx\n", "x.gct:2:2: expected a sample-column count"),
            (
                "#1.2\n1\t2\nId\tDescription\ta\tb\n",
                "x.gct:3:1: expected the header",
            ),
            (
                "#1.2\n1\t2\nName\tDescription\ta\n",
                "x.gct:3: expected 2 sample names",
            ),
            (
                "#1.2\n1\t2\nName\tDescription\ta\tb\ng\td\t1\n",
                "x.gct:4: expected 4 tab-separated fields",
            ),
            (
                "#1.2\n1\t2\nName\tDescription\ta\tb\ng\td\t1\tNA\n",
                "x.gct:4:4: expected a finite number, found \"NA\"",
            ),
            (
                "#1.2\n2\t2\nName\tDescription\ta\tb\ng\td\t1\t2\n",
                "x.gct:5: expected data row 2 of the 2 announced, found end of file",
            ),
            (
                "#1.2\n1\t2\nName\tDescription\ta\tb\ng\td\t1\t2\nh\td\t1\t2\n",
                "x.gct:5: expected end of file after the 1 data rows",
            ),
        ];
        for (text, want) in cases {
            let p = write(dir.path(), "x.gct", text);
            let e = read_gct(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let p = write(dir.path(), "x.gct", "#1.2\n99999999999\t99999999999\n");
        assert!(read_gct(&p).is_err());
    }

    #[test]
    fn malformed_res_and_cls_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let res_cases: [(&str, &str); 6] = [
            ("Name\tAccession\ta\n", "x.res:1:1: expected the header"),
            (
                "Description\tAccession\ta\t\t\t\tb\n",
                "x.res:1:5: expected a sample name",
            ),
            (
                "Description\tAccession\ta\t\n\t\nmany\n",
                "x.res:3:1: expected the number of data rows",
            ),
            (
                "Description\tAccession\ta\t\n\t\n1\nd\tg\t1\n",
                "x.res:4: expected 4 tab-separated fields",
            ),
            (
                "Description\tAccession\ta\t\n\t\n1\nd\tg\t1\tX\n",
                "x.res:4:4: expected an absent/present/marginal call",
            ),
            (
                "Description\tAccession\ta\t\n\t\n1\nd\tg\tz\tP\n",
                "x.res:4:3: expected a finite number",
            ),
        ];
        for (text, want) in res_cases {
            let p = write(dir.path(), "x.res", text);
            let e = read_res(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let cls_cases: [(&str, &str); 8] = [
            (
                "#numeric\n#age\n1 2\n",
                "x.cls:1:1: expected a categorical CLS file",
            ),
            ("3 2\n", "x.cls:1: expected three numbers"),
            ("3 2 2\n", "x.cls:1:3: expected 1"),
            (
                "3 2 1\nA B\n",
                "x.cls:2:1: expected the class-name line to start with `#`",
            ),
            ("3 2 1\n# A B C\n", "x.cls:2: expected 2 class names"),
            ("3 2 1\n# A B\n0 1\n", "x.cls:3: expected 3 labels"),
            (
                "3 2 1\n# A B\n0 1 2\n",
                "x.cls:3:3: expected a class number below 2",
            ),
            (
                "3 2 1\n# A B\nA B C\n",
                "x.cls:3:3: expected a class name from line 2 (A, B), found \"C\"",
            ),
        ];
        for (text, want) in cls_cases {
            let p = write(dir.path(), "x.cls", text);
            let e = read_cls(&p, ClsNumbering::ByIndex).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let p = write(dir.path(), "x.cls", "3 2 1\n# A A\n0 1 1\n");
        assert!(
            read_cls(&p, ClsNumbering::ByIndex)
                .unwrap_err()
                .to_string()
                .contains("x.cls:2:3: expected distinct")
        );
        let p = write(dir.path(), "x.cls", "3 2 1\n# A B\n5 6 7\n");
        let e = read_cls(&p, ClsNumbering::ByFirstAppearance)
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.cls:3:3: expected at most 2 distinct"), "{e}");
        let p = write(dir.path(), "x.cls", "3 2 1\n# A B\n0 1 1\nextra\n");
        assert!(
            read_cls(&p, ClsNumbering::ByIndex)
                .unwrap_err()
                .to_string()
                .contains("x.cls:4:")
        );
    }
}
