//! Feature pipelines: from raw documents or images to the papers' representations.
pub mod bow;
pub mod dsift;
pub mod images;
pub mod kmeans;
pub mod text;
pub mod tfidf;
