//! sqllogictest runner: every `tests/slt/**/*.slt` file is one test, run
//! against its own fresh server over the simple query protocol (text
//! results, NULL written as `NULL`, the empty string as `(empty)`).
//!
//! Run one file: `cargo test --release --test sqllogic -- basic`.
//! Errors can be matched by message regex (`statement error no such`) or
//! by SQLSTATE (`statement error (42P01)`).

mod common;

use std::path::{Path, PathBuf};

use sqllogictest::harness::{glob, run, Arguments, Failed, Trial};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};
use tokio_postgres::SimpleQueryMessage;

use common::TestServer;

/// Files run two at a time by default: each has its own server and DuckDB
/// uses every core, so more would only contend on small machines.
const DEFAULT_PARALLEL_FILES: usize = 2;

fn main() {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(DEFAULT_PARALLEL_FILES);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let pattern = format!("{}/**/*.slt", root.display());
    let mut trials = Vec::new();
    for entry in glob(&pattern).expect("valid glob") {
        let path: PathBuf = entry.expect("readable slt path");
        let name = path
            .strip_prefix(&root)
            .unwrap()
            .with_extension("")
            .display()
            .to_string();
        trials.push(Trial::test(name, move || run_file(&path)));
    }
    assert!(!trials.is_empty(), "no .slt files under {}", root.display());
    run(&args, trials).exit();
}

fn run_file(path: &Path) -> Result<(), Failed> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let server = TestServer::start();
        let conn_str = server.conn_str();
        let mut runner = Runner::new(move || {
            let conn_str = conn_str.clone();
            async move { Pg::connect(&conn_str).await }
        });
        runner.add_label("duckmv");
        let result = runner.run_file_async(path).await;
        runner.shutdown_async().await;
        result.map_err(|e| {
            Failed::from(format!(
                "{}\n---- server log ----\n{}",
                e.display(false),
                server.log()
            ))
        })
    })
}

/// One sqllogictest connection: a tokio-postgres client speaking the simple
/// query protocol.
struct Pg {
    client: tokio_postgres::Client,
}

impl Pg {
    async fn connect(conn_str: &str) -> Result<Pg, SltError> {
        let (client, connection) = tokio_postgres::connect(conn_str, tokio_postgres::NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Pg { client })
    }
}

/// A server error as sqllogictest matches it: `SQLSTATE: message`, so a
/// record can match either part with a regex.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", code.as_deref().unwrap_or("-----"))]
struct SltError {
    code: Option<String>,
    message: String,
}

impl From<tokio_postgres::Error> for SltError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => SltError {
                code: Some(db.code().code().to_owned()),
                message: db.message().to_owned(),
            },
            None => SltError {
                code: None,
                message: e.to_string(),
            },
        }
    }
}

#[async_trait::async_trait]
impl AsyncDB for Pg {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        // A record may hold several statements; the last one's result counts.
        let mut columns = None;
        let mut rows = Vec::new();
        let mut count = 0;
        for msg in self.client.simple_query(sql).await? {
            match msg {
                SimpleQueryMessage::RowDescription(cols) => {
                    columns = Some(cols.len());
                    rows.clear();
                }
                SimpleQueryMessage::Row(row) => rows.push(
                    (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_owned(),
                            Some("") => "(empty)".to_owned(),
                            Some(v) => v.to_owned(),
                        })
                        .collect(),
                ),
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        Ok(match columns {
            Some(n) => DBOutput::Rows {
                types: vec![DefaultColumnType::Any; n],
                rows,
            },
            None => DBOutput::StatementComplete(count),
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "duckmv"
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }

    fn error_sql_state(err: &SltError) -> Option<String> {
        err.code.clone()
    }
}
