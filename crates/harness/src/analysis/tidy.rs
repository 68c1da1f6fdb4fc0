//! The tidy table of one experiment as files: one row per record, typed columns, written as
//! CSV (the `csv` crate) and Parquet (the `parquet` crate's column writer, GZIP pages).
//!
//! What the report, plots and claims read is aggregated in [`super::results`] from the cells
//! themselves; these files are for the reader's own analysis (pandas, polars, R, DuckDB).
//! Why no dataframe library builds them: docs/speed.md, "Tables without polars".

use parquet::basic::{Compression, ConvertedType, GzipLevel, LogicalType, Repetition, Type};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{Type as SchemaType, TypePtr};
use std::sync::Arc;

/// One column's values; `Opt*` columns hold missing values (empty in the CSV, null in
/// Parquet).
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Str(Vec<String>),
    OptStr(Vec<Option<String>>),
    Bool(Vec<bool>),
    U32(Vec<u32>),
    OptU32(Vec<Option<u32>>),
    U64(Vec<u64>),
    OptU64(Vec<Option<u64>>),
    F64(Vec<f64>),
    OptF64(Vec<Option<f64>>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Str(v) => v.len(),
            Column::OptStr(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::OptU32(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::OptU64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::OptF64(v) => v.len(),
        }
    }

    /// Row `i` as CSV writes it: floats in Rust's shortest round-trip form (`1e-7`, `NaN`,
    /// `inf`), a missing value empty.
    fn text(&self, i: usize) -> String {
        fn opt<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
            v.as_ref().map(f).unwrap_or_default()
        }
        match self {
            Column::Str(v) => v[i].clone(),
            Column::OptStr(v) => opt(&v[i], String::clone),
            Column::Bool(v) => v[i].to_string(),
            Column::U32(v) => v[i].to_string(),
            Column::OptU32(v) => opt(&v[i], u32::to_string),
            Column::U64(v) => v[i].to_string(),
            Column::OptU64(v) => opt(&v[i], u64::to_string),
            Column::F64(v) => format!("{:?}", v[i]),
            Column::OptF64(v) => opt(&v[i], |x| format!("{x:?}")),
        }
    }

    /// The Parquet field: physical type, logical annotation and whether it may be null.
    fn field(&self, name: &str) -> parquet::errors::Result<TypePtr> {
        use Column::*;
        let (physical, logical, optional) = match self {
            Str(_) => (Type::BYTE_ARRAY, Some(LogicalType::String), false),
            OptStr(_) => (Type::BYTE_ARRAY, Some(LogicalType::String), true),
            Bool(_) => (Type::BOOLEAN, None, false),
            U32(_) | OptU32(_) => (
                Type::INT32,
                Some(LogicalType::Integer {
                    bit_width: 32,
                    is_signed: false,
                }),
                matches!(self, OptU32(_)),
            ),
            U64(_) | OptU64(_) => (
                Type::INT64,
                Some(LogicalType::Integer {
                    bit_width: 64,
                    is_signed: false,
                }),
                matches!(self, OptU64(_)),
            ),
            F64(_) => (Type::DOUBLE, None, false),
            OptF64(_) => (Type::DOUBLE, None, true),
        };
        let repetition = if optional {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        };
        let mut b = SchemaType::primitive_type_builder(name, physical).with_repetition(repetition);
        if let Some(l) = logical {
            let converted = ConvertedType::from(Some(l.clone()));
            b = b.with_logical_type(Some(l)).with_converted_type(converted);
        }
        Ok(Arc::new(b.build()?))
    }
}

/// The definition levels and present values of an optional column (`None`: required).
fn levels<T: Clone, U>(v: &[Option<T>], f: impl Fn(&T) -> U) -> (Vec<i16>, Vec<U>) {
    let def = v.iter().map(|x| i16::from(x.is_some())).collect();
    (def, v.iter().flatten().map(f).collect())
}

fn bytes(s: &str) -> ByteArray {
    ByteArray::from(s.as_bytes().to_vec())
}

/// A table of named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    columns: Vec<(&'static str, Column)>,
}

impl Table {
    /// Appends a column; every column must have as many rows as the first.
    pub fn push(&mut self, name: &'static str, col: Column) {
        debug_assert!(
            self.columns
                .first()
                .is_none_or(|(_, c)| c.len() == col.len()),
            "column {name} has another length"
        );
        self.columns.push((name, col));
    }

    /// Rows (0 without columns).
    pub fn height(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c)
    }

    /// The table as CSV (RFC 4180 quoting), a header line first.
    pub fn csv(&self) -> Result<Vec<u8>, String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.columns.iter().map(|(n, _)| *n))
            .map_err(|e| e.to_string())?;
        for i in 0..self.height() {
            w.write_record(self.columns.iter().map(|(_, c)| c.text(i)))
                .map_err(|e| e.to_string())?;
        }
        w.into_inner().map_err(|e| e.to_string())
    }

    /// The table as one Parquet row group (dictionary-encoded, GZIP-compressed pages).
    pub fn parquet(&self) -> Result<Vec<u8>, String> {
        self.parquet_inner().map_err(|e| e.to_string())
    }

    fn parquet_inner(&self) -> parquet::errors::Result<Vec<u8>> {
        let fields = self
            .columns
            .iter()
            .map(|(n, c)| c.field(n))
            .collect::<parquet::errors::Result<Vec<_>>>()?;
        let schema = Arc::new(
            SchemaType::group_type_builder("dyad_results")
                .with_fields(fields)
                .build()?,
        );
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::GZIP(GzipLevel::default()))
                .set_created_by(format!("dyad {}", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        let mut out = Vec::new();
        let mut file = SerializedFileWriter::new(&mut out, schema, props)?;
        let mut group = file.next_row_group()?;
        for (_, col) in &self.columns {
            let Some(mut w) = group.next_column()? else {
                break;
            };
            match col {
                Column::Str(v) => {
                    let v: Vec<ByteArray> = v.iter().map(|s| bytes(s)).collect();
                    w.typed::<ByteArrayType>().write_batch(&v, None, None)?;
                }
                Column::OptStr(v) => {
                    let (def, v) = levels(v, |s| bytes(s));
                    w.typed::<ByteArrayType>()
                        .write_batch(&v, Some(&def), None)?;
                }
                Column::Bool(v) => {
                    w.typed::<BoolType>().write_batch(v, None, None)?;
                }
                // Unsigned integers are stored in their signed physical type, bit for bit,
                // as the logical type `INTEGER(_, false)` tells readers.
                Column::U32(v) => {
                    let v: Vec<i32> = v.iter().map(|&x| x as i32).collect();
                    w.typed::<Int32Type>().write_batch(&v, None, None)?;
                }
                Column::OptU32(v) => {
                    let (def, v) = levels(v, |&x| x as i32);
                    w.typed::<Int32Type>().write_batch(&v, Some(&def), None)?;
                }
                Column::U64(v) => {
                    let v: Vec<i64> = v.iter().map(|&x| x as i64).collect();
                    w.typed::<Int64Type>().write_batch(&v, None, None)?;
                }
                Column::OptU64(v) => {
                    let (def, v) = levels(v, |&x| x as i64);
                    w.typed::<Int64Type>().write_batch(&v, Some(&def), None)?;
                }
                Column::F64(v) => {
                    w.typed::<DoubleType>().write_batch(v, None, None)?;
                }
                Column::OptF64(v) => {
                    let (def, v) = levels(v, |&x| x);
                    w.typed::<DoubleType>().write_batch(&v, Some(&def), None)?;
                }
            }
            w.close()?;
        }
        group.close()?;
        file.close()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    fn sample() -> Table {
        let mut t = Table::default();
        t.push(
            "name",
            Column::Str(vec!["a,b".into(), "say \"hi\"".into(), String::new()]),
        );
        t.push(
            "coord",
            Column::OptStr(vec![None, Some("category".into()), None]),
        );
        t.push("synthetic", Column::Bool(vec![true, false, true]));
        t.push("repeat", Column::U32(vec![0, 1, u32::MAX]));
        t.push("k", Column::OptU32(vec![Some(10), None, Some(1)]));
        t.push("seed", Column::U64(vec![20120401, 0, u64::MAX]));
        t.push("step", Column::OptU64(vec![None, Some(7), None]));
        t.push("value", Column::F64(vec![0.1 + 0.2, 1e-7, f64::NAN]));
        t.push("x", Column::OptF64(vec![Some(-0.0), None, Some(1e300)]));
        t
    }

    #[test]
    fn csv_quotes_and_leaves_missing_values_empty() {
        let csv = String::from_utf8(sample().csv().unwrap()).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "name,coord,synthetic,repeat,k,seed,step,value,x");
        assert_eq!(
            lines[1],
            "\"a,b\",,true,0,10,20120401,,0.30000000000000004,-0.0"
        );
        assert_eq!(lines[2], "\"say \"\"hi\"\"\",category,false,1,,0,7,1e-7,");
        assert_eq!(
            lines[3],
            format!(",,true,{},1,{},,NaN,1e300", u32::MAX, u64::MAX)
        );
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn parquet_reads_back_value_for_value_with_nulls_and_types() {
        let t = sample();
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &t.parquet().unwrap()).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), 3);
        let schema = meta.file_metadata().schema_descr();
        let names: Vec<String> = (0..schema.num_columns())
            .map(|i| schema.column(i).name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "name",
                "coord",
                "synthetic",
                "repeat",
                "k",
                "seed",
                "step",
                "value",
                "x"
            ]
        );
        let rows: Vec<Vec<Field>> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| {
                r.unwrap()
                    .get_column_iter()
                    .map(|(_, f)| f.clone())
                    .collect()
            })
            .collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][0], Field::Str("a,b".into()));
        assert_eq!(rows[0][1], Field::Null);
        assert_eq!(rows[1][1], Field::Str("category".into()));
        assert_eq!(rows[1][2], Field::Bool(false));
        assert_eq!(rows[2][3], Field::UInt(u32::MAX));
        assert_eq!(rows[1][4], Field::Null);
        assert_eq!(rows[0][4], Field::UInt(10));
        assert_eq!(rows[2][5], Field::ULong(u64::MAX));
        assert_eq!(rows[1][6], Field::ULong(7));
        assert_eq!(rows[0][7], Field::Double(0.1 + 0.2));
        assert!(matches!(rows[2][7], Field::Double(x) if x.is_nan()));
        assert!(matches!(rows[0][8], Field::Double(x) if x == 0.0 && x.is_sign_negative()));
        assert_eq!(rows[1][8], Field::Null);
        assert_eq!(rows[2][8], Field::Double(1e300));
    }
}
