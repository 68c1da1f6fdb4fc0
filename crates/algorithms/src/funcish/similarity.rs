//! flat-sim and GO-sim (FuncISH §2.7, §2.8).
