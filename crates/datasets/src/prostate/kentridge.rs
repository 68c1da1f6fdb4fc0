//! The Kent Ridge Bio-medical Data Set Repository CSV (`.data`) files, e.g. Singh et al. (2002)
//! prostate `prostate_TumorVSNormal_train.data` / `_test.data`.
//!
//! No header; one sample per line: the expression values (comma-separated numbers, integers or
//! decimals) followed by the class label as the last field. Every line must have the same number
//! of fields. The reader transposes into an [`ExpressionSet`] (genes x samples); genes have no
//! names in these files and get the ids `col1`, `col2`, ... (the 1-based CSV column), samples get
//! `{sample_prefix}{k}` (1-based sample number). Plain or gzip.

use crate::DataError;
use crate::expression::{Categorical, ExpressionSet};
use crate::formats::expr_text::{Lines, number, show};
use ndarray::Array2;
use std::collections::HashMap;
use std::path::Path;

/// How to read a Kent Ridge file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KentRidgeOptions {
    /// The allowed class labels, in code order; any other label is an error. `None` accepts
    /// every label, coded in order of first appearance.
    pub classes: Option<Vec<String>>,
    /// The number of values per line; `None` takes it from the first line.
    pub n_values: Option<usize>,
    /// Prefix of the sample ids (`{prefix}{k}`, `k` the 1-based sample number).
    pub sample_prefix: String,
}

/// Read a Kent Ridge `.data` file (plain or gzip).
pub fn read_kentridge(path: &Path, options: &KentRidgeOptions) -> Result<ExpressionSet, DataError> {
    from_lines(path, Lines::open(path)?, options)
}

/// Parse Kent Ridge `.data` bytes (plain or gzip); `path` names the source in errors.
pub fn parse_kentridge(
    path: &Path,
    bytes: Vec<u8>,
    options: &KentRidgeOptions,
) -> Result<ExpressionSet, DataError> {
    from_lines(path, Lines::from_bytes(bytes), options)
}

fn from_lines(
    path: &Path,
    mut lines: Lines,
    options: &KentRidgeOptions,
) -> Result<ExpressionSet, DataError> {
    let mut d = options.n_values;
    // Sample-major values (one line after another); transposed at the end.
    let mut values: Vec<f64> = Vec::new();
    let mut raw_labels: Vec<u32> = Vec::new();
    let mut names: Vec<String> = options.classes.clone().unwrap_or_default();
    let mut index: HashMap<String, u32> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), i as u32))
        .collect();
    let mut blank_since: Option<u64> = None;
    while let Some((line_no, line)) = lines.next_line(path)? {
        if line.trim().is_empty() {
            blank_since.get_or_insert(line_no);
            continue;
        }
        if let Some(b) = blank_since {
            return Err(DataError::line(
                path,
                b,
                None,
                "a sample line (blank lines are allowed only at the end)",
                "a blank line",
            ));
        }
        let n_fields = line.split(',').count();
        let want = match d {
            Some(d) => d + 1,
            None => {
                if n_fields < 2 {
                    return Err(DataError::line(
                        path,
                        line_no,
                        None,
                        "at least one value and a class label, separated by commas",
                        format!("{n_fields} field"),
                    ));
                }
                d = Some(n_fields - 1);
                n_fields
            }
        };
        if n_fields != want {
            return Err(DataError::line(
                path,
                line_no,
                None,
                format!(
                    "{want} comma-separated fields ({} values and a label)",
                    want - 1
                ),
                format!("{n_fields} fields"),
            ));
        }
        let mut fields = line.split(',');
        for column in 1..want {
            let field = fields.next().expect("counted");
            values.push(number(path, line_no, column, field)?);
        }
        let label = fields.next().expect("counted").trim();
        let code = match index.get(label) {
            Some(&c) => c,
            None if options.classes.is_some() || label.is_empty() => {
                let allowed = names.join(", ");
                return Err(DataError::line(
                    path,
                    line_no,
                    Some(want as u64),
                    if label.is_empty() {
                        "a non-empty class label".to_string()
                    } else {
                        format!("a class label ({allowed})")
                    },
                    show(label),
                ));
            }
            None => {
                let c = names.len() as u32;
                names.push(label.to_string());
                index.insert(label.to_string(), c);
                c
            }
        };
        raw_labels.push(code);
    }
    let n = raw_labels.len();
    if n == 0 {
        return Err(DataError::line(
            path,
            lines.line_number() + 1,
            None,
            "at least one sample line",
            "end of file",
        ));
    }
    let d = d.expect("set by the first line");
    let matrix = Array2::from_shape_vec((n, d), values)
        .expect("n lines of d values")
        .reversed_axes()
        .as_standard_layout()
        .into_owned();
    let gene_ids = (1..=d).map(|j| format!("col{j}")).collect();
    let sample_ids = (1..=n)
        .map(|k| format!("{}{k}", options.sample_prefix))
        .collect();
    let labels = Categorical::new(names, raw_labels)?;
    ExpressionSet::new(matrix, gene_ids, sample_ids)?.with_labels(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn two_classes() -> KentRidgeOptions {
        KentRidgeOptions {
            classes: Some(vec!["Tumor".into(), "Normal".into()]),
            n_values: None,
            sample_prefix: "s".into(),
        }
    }

    #[test]
    fn reads_and_transposes_a_small_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "x.data",
            "1,2,3.5,Tumor\n-4,0,6e1,Normal\r\n7,-8.25,9,Tumor\n\n",
        );
        let s = read_kentridge(&p, &two_classes()).unwrap();
        assert_eq!((s.n_genes(), s.n_samples()), (3, 3));
        assert_eq!(
            s.values(),
            &ndarray::array![[1.0, -4.0, 7.0], [2.0, 0.0, -8.25], [3.5, 60.0, 9.0]]
        );
        assert_eq!(s.gene_ids(), &["col1", "col2", "col3"]);
        assert_eq!(s.sample_ids(), &["s1", "s2", "s3"]);
        let l = s.labels().unwrap();
        assert_eq!(l.names(), &["Tumor", "Normal"]);
        assert_eq!(l.codes(), &[0, 1, 0]);

        // Open label set: codes in order of first appearance.
        let open = read_kentridge(&p, &KentRidgeOptions::default()).unwrap();
        assert_eq!(open.labels().unwrap().names(), &["Tumor", "Normal"]);
        assert_eq!(open.sample_ids(), &["1", "2", "3"]);

        // Same content gzipped: same identity.
        let gz = dir.path().join("x.data.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&std::fs::read(&p).unwrap()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(
            read_kentridge(&gz, &two_classes()).unwrap().content_id(),
            s.content_id()
        );
    }

    #[test]
    fn malformed_lines_name_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, &str); 8] = [
            (
                "1,2,Tumor\n3,Normal\n",
                "x.data:2: expected 3 comma-separated fields",
            ),
            (
                "1,2,Tumor\n3,4,5,Normal\n",
                "x.data:2: expected 3 comma-separated fields",
            ),
            (
                "1,2,Tumor\n3,abc,Normal\n",
                "x.data:2:2: expected a finite number, found \"abc\"",
            ),
            (
                "1,,Tumor\n",
                "x.data:1:2: expected a finite number, found \"\"",
            ),
            ("1,NaN,Tumor\n", "x.data:1:2: expected a finite number"),
            (
                "1,2,Tumor\n3,4,Benign\n",
                "x.data:2:3: expected a class label (Tumor, Normal), found \"Benign\"",
            ),
            (
                "1,2,Tumor\n\n3,4,Normal\n",
                "x.data:2: expected a sample line",
            ),
            (
                "Tumor\n",
                "x.data:1: expected at least one value and a class label",
            ),
        ];
        for (text, want) in cases {
            let p = write(dir.path(), "x.data", text);
            let e = read_kentridge(&p, &two_classes()).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let p = write(dir.path(), "x.data", "1,2,\n");
        let e = read_kentridge(&p, &KentRidgeOptions::default()).unwrap_err();
        assert!(
            e.to_string()
                .contains("x.data:1:3: expected a non-empty class label"),
            "{e}"
        );
        let p = write(dir.path(), "x.data", "");
        assert!(read_kentridge(&p, &two_classes()).is_err());
        // A fixed width that the file does not have.
        let p = write(dir.path(), "x.data", "1,2,Tumor\n");
        let opts = KentRidgeOptions {
            n_values: Some(3),
            ..two_classes()
        };
        let e = read_kentridge(&p, &opts).unwrap_err().to_string();
        assert!(
            e.contains("x.data:1: expected 4 comma-separated fields (3 values"),
            "{e}"
        );
    }
}
