//! The engine layer: from a parsed spec to computed cells. It reads the [`crate::spec`] layer
//! and the plug-ins ([`crate::tasks`], [`crate::data`], [`crate::registry`]), and knows
//! nothing of tables, verdicts or figures.
//!
//! - [`plan`]: a spec at a profile expanded into cells with content-hashed keys, every
//!   parameter and data size checked before any data is read;
//! - [`cache`]: the cells on disk, each stored atomically, with the code that computed it;
//! - [`run`]: the missing cells computed in parallel (and `--recompute` compared);
//! - [`cluster`]: the same across machines sharing a directory;
//! - [`interrupt`]: SIGINT/SIGTERM during a run release its claims and say what finished;
//! - [`provenance`] and [`srchash`]: the version, commit and source fingerprints kept beside
//!   each cell.

pub mod cache;
pub mod cluster;
pub mod interrupt;
pub mod plan;
pub mod provenance;
pub mod run;
pub mod srchash;
