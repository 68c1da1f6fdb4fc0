//! The baselines of the LORETA papers (spec §4): naive factored GD (B1), naive PSD GD (B2),
//! iterative PA (B3), PA v2 (B4), OASIS or LEGO over infogain-selected features (B5, B6), the
//! matrix and group multiclass perceptrons (B8, B9) and the class-centroid label ranker.

pub mod centroid;
pub mod factored_gd;
pub mod group_perceptron;
pub mod infogain;
pub mod iterative_pa;
pub mod matrix_perceptron;
pub mod naive_psd_gd;
pub mod pa_v2;
