//! The baselines of the AROMA paper beside the shared metric-learning ones
//! (`dyad_metric_baselines`): hierarchical semantic indexing (HIER).

pub mod hier;
