//! Feature pipelines: from raw documents or images to the papers' representations.
