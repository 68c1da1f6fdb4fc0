pub mod caltech;
pub mod mnist;
