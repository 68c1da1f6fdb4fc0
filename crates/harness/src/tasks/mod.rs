pub mod human;
pub mod ranking;
