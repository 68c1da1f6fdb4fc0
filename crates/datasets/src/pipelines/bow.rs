//! Per-level visual dictionaries and bags of visual words with zero-descriptor counts (FuncISH §2.3, §2.4).
