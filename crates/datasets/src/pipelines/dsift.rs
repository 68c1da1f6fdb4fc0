//! Dense multi-scale SIFT (FuncISH §2.2).
