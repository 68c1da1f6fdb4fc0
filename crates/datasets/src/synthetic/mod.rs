pub mod caltech;
pub mod expression;
pub mod imagenet;
pub mod mnist;
pub mod newsgroups;
pub mod raters;
pub mod web;
