//! The presentation layer: figures and the report, from the [`crate::analysis`] layer's
//! tables and verdicts. Nothing below it depends on it.
//!
//! - [`plots`]: one figure per plot spec (panels, series, error bars), drawn as SVG and PNG;
//! - [`layout`]: every rectangle a reader sees, computed (and checkable) before drawing;
//! - [`font`]: the embedded DejaVu font's metrics, which the layout measures text with;
//! - [`png`]: rasterising the text glyph by glyph and encoding the PNG;
//! - [`report`]: `REPORT.md`, `index.html` and one HTML page per paper.

pub mod font;
pub mod layout;
pub mod plots;
pub mod png;
pub mod report;
