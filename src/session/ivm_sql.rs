//! How the IVM engine runs SQL on a session's connection (its `Sql` trait). `ConnSql` runs each
//! statement as it comes. `HotSql`, used by REFRESH, keeps the statements a refresh repeats
//! prepared on the session's connection, which saves parsing them again (DuckDB 2.0's parser
//! takes 1–1.5 ms over a refresh's MERGE). It does not save planning: DuckDB 2.0 binds and
//! optimizes a prepared statement again at every execution when it reads a table (its
//! optimizer marks such plans as holding the database's state), and a refresh's statements all
//! do. Planning a TPC-H view's MERGE costs 5–14 ms at SF 1 (README, Benchmark).

use std::collections::HashMap;

use crate::engine::{Conn, Prepared, QueryResult};
use crate::ivm;
use crate::sqlstate::SqlState;
use crate::types::ParamValue;
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

/// A session's prepared refresh statements, by SQL text.
#[derive(Default)]
pub struct HotStatements {
    prepared: HashMap<String, Prepared>,
}

/// More distinct statements than this (views dropped and created over a long session) and the
/// cache starts again from empty.
const MAX_STATEMENTS: usize = 512;

pub struct HotSql<'a> {
    conn: &'a Conn,
    hot: &'a mut HotStatements,
}

impl<'a> HotSql<'a> {
    pub fn new(conn: &'a Conn, hot: &'a mut HotStatements) -> Self {
        HotSql { conn, hot }
    }

    fn run(&mut self, sql: &str, params: &[String]) -> Result<QueryResult, ivm::DbError> {
        if !self.hot.prepared.contains_key(sql) {
            if self.hot.prepared.len() >= MAX_STATEMENTS {
                self.hot.prepared.clear();
            }
            let p = self.conn.prepare(sql).map_err(db_error)?;
            self.hot.prepared.insert(sql.to_string(), p);
        }
        let p = self.hot.prepared.get_mut(sql).unwrap();
        p.clear_bindings();
        for (i, v) in params.iter().enumerate() {
            p.bind(i + 1, &ParamValue::Text(v.clone()))
                .map_err(db_error)?;
        }
        let r = self.conn.execute(p);
        if r.is_err() {
            // Whatever went wrong (a dropped table), the next refresh prepares afresh.
            self.hot.prepared.remove(sql);
        }
        r.map_err(db_error)
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
        tracing::debug!(target: "duckmv::ivm::sql", ms = start.elapsed().as_secs_f64() * 1e3, "(hot) {sql}");
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
