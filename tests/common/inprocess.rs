//! The IVM engine in-process: a bare `duckdb::Connection` implements `ivm::Sql`, and every engine
//! call runs in a transaction, as the server runs it.

use duckdb::Connection;
use duckmv::ivm::{self, CreateView, DbError, IvmError, Sql};

use super::shapes::Target;

pub struct Db {
    pub conn: Connection,
    /// Statements the engine ran through [`Sql`].
    pub calls: usize,
}

/// DuckDB's message, with the code the server's engine layer would give it.
fn sql_err(e: duckdb::Error) -> DbError {
    let message = e.to_string();
    DbError {
        state: duckmv::engine::error::sqlstate_for(&message, 0),
        message,
    }
}

impl Sql for Db {
    fn exec(&mut self, sql: &str) -> Result<u64, DbError> {
        self.calls += 1;
        self.conn
            .execute(sql, [])
            .map(|n| n as u64)
            .map_err(sql_err)
    }

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        self.calls += 1;
        let wrapped = format!("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM ({sql}) AS _q");
        let mut stmt = self.conn.prepare(&wrapped).map_err(sql_err)?;
        let mut rows = stmt.query([]).map_err(sql_err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(sql_err)? {
            let n = row.as_ref().column_count();
            let mut r = Vec::with_capacity(n);
            for i in 0..n {
                r.push(row.get::<_, Option<String>>(i).map_err(sql_err)?);
            }
            out.push(r);
        }
        Ok(out)
    }

    fn binds_alone(&mut self, sql: &str) -> bool {
        self.conn.try_clone().is_ok_and(|c| c.prepare(sql).is_ok())
    }
}

impl Db {
    pub fn new() -> Db {
        let conn = Connection::open_in_memory().unwrap();
        let mut db = Db { conn, calls: 0 };
        db.tx(|db| ivm::bootstrap(db)).unwrap();
        db
    }

    /// Runs an engine call in its own transaction, committing on success.
    pub fn tx<T>(&mut self, f: impl FnOnce(&mut Db) -> Result<T, IvmError>) -> Result<T, IvmError> {
        self.conn.execute_batch("BEGIN").unwrap();
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT").unwrap();
                Ok(v)
            }
            Err(e) => {
                self.conn.execute_batch("ROLLBACK").unwrap();
                Err(e)
            }
        }
    }

    pub fn run(&self, sql: &str) {
        self.conn
            .execute_batch(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.conn
            .query_row(sql, [], |r| r.get::<_, i64>(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn text(&mut self, sql: &str) -> Vec<Vec<Option<String>>> {
        self.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn create(&mut self, name: &str, query: &str) -> ivm::Outcome {
        let v = CreateView {
            name: name.into(),
            columns: None,
            query: query.into(),
            with_data: true,
            if_not_exists: false,
        };
        self.tx(|db| ivm::create_view(db, &v))
            .unwrap_or_else(|e| panic!("create {name}: {e}"))
    }

    pub fn refresh(&mut self, name: &str) -> ivm::Outcome {
        self.tx(|db| ivm::refresh_view(db, name, true))
            .unwrap_or_else(|e| panic!("refresh {name}: {e}"))
    }

    /// The oracle ([`Target::assert_oracle`]): the view equals its query run fresh, as bags.
    pub fn assert_oracle(&mut self, view: &str, query: &str, ctx: &str) {
        Target::assert_oracle(self, view, query, ctx, &[]);
    }

    /// The rows of `sql` as `(a,b) (c,d)`, in the order the query returns them.
    pub fn dump(&self, sql: &str) -> String {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT CAST(COLUMNS(*) AS VARCHAR) FROM ({sql}) AS _q"
            ))
            .unwrap();
        let mut rows = stmt.query([]).unwrap();
        let mut out = Vec::new();
        while let Some(row) = rows.next().unwrap() {
            let n = row.as_ref().column_count();
            let vals: Vec<String> = (0..n)
                .map(|i| {
                    row.get::<_, Option<String>>(i)
                        .unwrap()
                        .unwrap_or_else(|| "NULL".into())
                })
                .collect();
            out.push(format!("({})", vals.join(",")));
        }
        out.join(" ")
    }
}

impl Target for Db {
    fn run(&mut self, sql: &str) {
        Db::run(self, sql)
    }

    fn rows(&mut self, sql: &str) -> Vec<Vec<String>> {
        self.text(sql)
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| v.unwrap_or_else(|| "NULL".into()))
                    .collect()
            })
            .collect()
    }

    fn create(&mut self, name: &str, query: &str) -> Vec<String> {
        Db::create(self, name, query).notices
    }

    fn refresh(&mut self, name: &str) {
        Db::refresh(self, name);
    }
}
