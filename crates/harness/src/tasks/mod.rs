pub mod ranking;
