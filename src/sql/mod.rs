//! Statement text: splitting a query string, reading what a statement is,
//! and the command tags PostgreSQL clients expect.

pub mod alter;
pub mod classify;
pub mod copy;
pub mod depth;
pub mod lex;
pub mod lexed;
pub mod matview_options;
pub mod merge;
pub mod multi;
pub mod notify;
pub mod params;
pub mod savepoint;
pub mod serial;
pub mod upsert;

#[cfg(test)]
mod fuzz_tests;

pub use classify::{
    classify, command_tag, quote_ident, replaced_relation, write_targets, ClassifyError, Command,
    Name,
};
pub use lexed::{split as split_statements, Lexed};
