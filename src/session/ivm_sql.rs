//! The IVM engine's connection for REFRESH: statements a refresh repeats stay prepared on the
//! session's connection, so DuckDB plans them once instead of on every refresh (planning a
//! refresh's MERGE costs several milliseconds; running it on a small delta, a fraction of one).
//! DuckDB re-binds a prepared statement by itself when the catalog changed.

use std::collections::HashMap;

use super::ivm_bridge::{collect_rows, db_error, ConnSql};
use crate::engine::{Conn, Prepared, QueryResult};
use crate::ivm;
use crate::types::ParamValue;

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
