pub mod caltech;
pub mod expression;
pub mod mnist;
