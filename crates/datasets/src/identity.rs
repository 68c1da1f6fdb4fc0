//! Content identities: hashes of a data set's canonical decoded content.

use sha2::{Digest, Sha256};
use std::fmt;

/// A data set's content identity (lower-case hex SHA-256).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentId(pub String);

impl fmt::Display for ContentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl ContentId {
    /// The first 12 hex digits, for display.
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(12)]
    }
}

/// Hashes a sequence of typed, length-prefixed fields, so that no two different field
/// sequences can produce the same byte stream.
pub struct ContentHasher(Sha256);

impl ContentHasher {
    /// A hasher for content of the given kind (e.g. `"mnist/v1"`).
    pub fn new(kind: &str) -> Self {
        let mut h = ContentHasher(Sha256::new());
        h.str(kind);
        h
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.update((b.len() as u64).to_le_bytes());
        self.0.update(b);
        self
    }

    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.update(v.to_le_bytes());
        self
    }

    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.0.update(v.to_bits().to_le_bytes());
        self
    }

    pub fn finish(self) -> ContentId {
        ContentId(hex(&self.0.finalize()))
    }
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Content identity of any labelled set: its CSR arrays, labels and class names.
pub fn labeled_set_content_id(set: &dyad_core::LabeledSet) -> ContentId {
    let mut h = ContentHasher::new("labeled-set/v1");
    h.u64(set.n() as u64).u64(set.dim() as u64);
    for row in set.x.outer_iterator() {
        h.u64(row.nnz() as u64);
        for (&i, &v) in row.indices().iter().zip(row.data()) {
            h.u64(i as u64).f64(v);
        }
    }
    for &l in &set.labels {
        h.u64(u64::from(l));
    }
    for name in &set.class_names {
        h.str(name);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_length_prefixed() {
        let mut a = ContentHasher::new("k");
        a.str("ab").str("c");
        let mut b = ContentHasher::new("k");
        b.str("a").str("bc");
        assert_ne!(a.finish(), b.finish());
        assert_eq!(hex(&[0, 15, 255]), "000fff");
    }
}
