//! dyad-datasets: readers for the papers' public data formats, the feature pipelines that
//! turn them into the papers' representations, and seeded synthetic stand-ins for data that is
//! absent or proprietary.
//!
//! Every loader returns typed [`DataError`]s that name the file and the byte offset (or line)
//! where the input stopped making sense; no input makes a loader panic. Every data set has a
//! *content identity* ([`ContentId`]): a hash of its canonical decoded content, so the same
//! data repacked (gzip or plain, another file name spelling) keeps its identity.

pub mod allen;
pub mod caltech256;
pub mod expression;
pub mod fetch;
pub mod formats;
pub mod fsutil;
pub mod fuzzing;
pub mod gmm;
pub mod go;
pub mod identity;
pub mod imagenet;
pub mod ish;
pub mod mnist;
pub mod newsgroups;
pub mod pair_ranking;
pub mod pipelines;
pub mod prostate;
pub mod provider;
pub mod registry;
pub mod testdata;
pub mod web;

pub use identity::{ContentHasher, ContentId};

use std::path::{Path, PathBuf};

/// Errors raised while locating, reading or generating data.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: at byte {offset}: expected {expected}, found {found}")]
    Format {
        path: PathBuf,
        offset: u64,
        expected: String,
        found: String,
    },
    #[error("{path}: corrupt compressed stream after {offset} decompressed bytes: {detail}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    /// A line-oriented format went wrong at `line` (1-based), optionally at a column/field.
    #[error("{path}:{line}{}: expected {expected}, found {found}", column.map(|c| format!(":{c}")).unwrap_or_default())]
    Line {
        path: PathBuf,
        line: u64,
        column: Option<u64>,
        expected: String,
        found: String,
    },
    #[error("{path}: {message}")]
    Inconsistent { path: PathBuf, message: String },
    #[error("data set `{name}` not found in {dir}: looked for {tried}. {hint}")]
    Missing {
        name: String,
        dir: PathBuf,
        tried: String,
        hint: String,
    },
    /// Some files of a real data set are present and others are not: an error, never a
    /// silent stand-in.
    #[error(
        "data set `{name}` is incomplete in {dir}: found {found}; missing {missing}. {hint} (Remove the partial files to use the SYNTHETIC stand-in instead.)"
    )]
    Incomplete {
        name: String,
        dir: PathBuf,
        found: String,
        missing: String,
        hint: String,
    },
    #[error("download of {url} failed: {message}")]
    Fetch { url: String, message: String },
    #[error("invalid data parameter: {0}")]
    Param(String),
}

impl DataError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        DataError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn line(
        path: &Path,
        line: u64,
        column: Option<u64>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        DataError::Line {
            path: path.to_path_buf(),
            line,
            column,
            expected: expected.into(),
            found: found.into(),
        }
    }

    pub fn format(
        path: &Path,
        offset: u64,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        DataError::Format {
            path: path.to_path_buf(),
            offset,
            expected: expected.into(),
            found: found.into(),
        }
    }
}
