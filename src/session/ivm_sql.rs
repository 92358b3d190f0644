//! How the IVM engine runs SQL on a session's connection (its `Sql` trait). `ConnSql` runs each
//! statement as it comes. `HotSql`, used by REFRESH, runs the statements a refresh repeats from
//! parses the server keeps for every session, which saves parsing them again (DuckDB 2.0's
//! parser takes 1–1.5 ms over a refresh's MERGE). It does not save planning: DuckDB 2.0 binds
//! and optimizes a statement that reads a table at every execution, prepared or not, and a
//! refresh's statements all do. Planning a TPC-H view's MERGE costs 5–14 ms at SF 1 (README,
//! Benchmark).

use crate::engine::{Conn, QueryResult};
use crate::ivm;
use crate::sqlstate::SqlState;
use duckdb::arrow::util::display::array_value_to_string;

/// The IVM engine's view of a session connection.
pub struct ConnSql<'a>(pub &'a Conn);

impl ivm::Sql for ConnSql<'_> {
    fn exec(&mut self, sql: &str) -> Result<u64, ivm::DbError> {
        let start = std::time::Instant::now();
        let r = self.0.exec(sql).map_err(db_error);
        tracing::debug!(target: "duckmv::ivm::sql", ms = start.elapsed().as_secs_f64() * 1e3, "{sql}");
        r
    }

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, ivm::DbError> {
        let start = std::time::Instant::now();
        let mut r = self.0.query(sql).map_err(|e| {
            tracing::debug!(target: "duckmv::ivm::sql", "failed: {sql}: {}", e.message);
            db_error(e)
        })?;
        let rows = collect_rows(&mut r)?;
        tracing::debug!(target: "duckmv::ivm::sql", ms = start.elapsed().as_secs_f64() * 1e3, "{sql}");
        Ok(rows)
    }

    fn binds_alone(&mut self, sql: &str) -> bool {
        self.0.prepares_alone(sql)
    }
}

/// A DuckDB error as the IVM engine sees it, with the code the engine layer maps it to.
pub fn db_error(e: crate::engine::EngineError) -> ivm::DbError {
    ivm::DbError {
        state: e.sqlstate(),
        message: e.message,
    }
}

/// A result's rows, every value as text (NULL as None).
pub fn collect_rows(
    r: &mut crate::engine::QueryResult,
) -> Result<Vec<Vec<Option<String>>>, ivm::DbError> {
    let mut rows = Vec::new();
    while let Some(b) = r.next_batch().map_err(db_error)? {
        for i in 0..b.num_rows() {
            let mut row = Vec::with_capacity(b.num_columns());
            for c in b.columns() {
                row.push(if c.is_null(i) {
                    None
                } else {
                    Some(array_value_to_string(c, i).map_err(|e| ivm::DbError {
                        message: e.to_string(),
                        state: SqlState::INTERNAL_ERROR,
                    })?)
                });
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The IVM engine's view of a session connection for REFRESH: statements a refresh repeats run
/// through the server's kept parses (`Conn::run_repeated`).
pub struct HotSql<'a> {
    conn: &'a Conn,
}

impl<'a> HotSql<'a> {
    pub fn new(conn: &'a Conn) -> Self {
        HotSql { conn }
    }

    fn run(&mut self, sql: &str, params: &[String]) -> Result<QueryResult, ivm::DbError> {
        self.conn.run_repeated(sql, params).map_err(db_error)
    }
}

impl ivm::Sql for HotSql<'_> {
    fn exec(&mut self, sql: &str) -> Result<u64, ivm::DbError> {
        ConnSql(self.conn).exec(sql)
    }

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, ivm::DbError> {
        ConnSql(self.conn).query(sql)
    }

    fn binds_alone(&mut self, sql: &str) -> bool {
        ConnSql(self.conn).binds_alone(sql)
    }

    fn exec_hot(&mut self, sql: &str, params: &[String]) -> Result<u64, ivm::DbError> {
        let start = std::time::Instant::now();
        let mut r = self.run(sql, params)?;
        let n = r.drain_changed_rows().map_err(db_error)?;
        tracing::debug!(target: "duckmv::ivm::sql", ms = start.elapsed().as_secs_f64() * 1e3, rows = n, "(hot) {sql}");
        Ok(n)
    }

    fn query_hot(
        &mut self,
        sql: &str,
        params: &[String],
    ) -> Result<Vec<Vec<Option<String>>>, ivm::DbError> {
        let start = std::time::Instant::now();
        let mut r = self.run(sql, params)?;
        let rows = collect_rows(&mut r)?;
        tracing::debug!(target: "duckmv::ivm::sql", ms = start.elapsed().as_secs_f64() * 1e3, "(hot) {sql}");
        Ok(rows)
    }
}
