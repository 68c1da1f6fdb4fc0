pub mod caltech;
pub mod mnist;
pub mod newsgroups;
