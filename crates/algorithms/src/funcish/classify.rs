//! Per-category logistic regression with nested cross-validation (FuncISH §2.6).
