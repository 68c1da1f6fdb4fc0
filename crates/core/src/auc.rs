//! Area under the ROC curve (Mann–Whitney), its permutation significance, and rank tests (FuncISH §4).
