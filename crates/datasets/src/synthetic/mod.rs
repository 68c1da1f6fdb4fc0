pub mod caltech;
pub mod imagenet;
pub mod mnist;
