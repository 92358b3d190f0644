//! The benchmark's modules, one job each. `run` orchestrates; everything else is either pure
//! (SQL text, statistics, rendering) and unit-tested, or a thin measurement over a client.

pub mod capture;
pub mod changes;
pub mod cli;
pub mod data;
pub mod error;
pub mod measure;
pub mod report;
pub mod run;
pub mod seed;
pub mod server;
pub mod stats;
pub mod stream;
pub mod svg;
pub mod views;
