//! The random-DML oracle over view shapes kept as data: one file per operator family under
//! `tests/shapes/`, read and run by [`check`].
//!
//! A family file names where its views run (`via inprocess`: the IVM engine on a bare DuckDB
//! connection, every refresh incremental; `via wire`: a duckmv server through tokio-postgres),
//! its seeds and rounds, its tables with their columns' value domains (see [`super::dml`]),
//! then its views:
//!
//! ```text
//! -- a comment
//! via inprocess
//! seeds 1 2 3
//! rounds 25
//! nulls 12
//! table t (k INTEGER 0..7, g VARCHAR a|b|c, v INTEGER -3..12) rows 18
//! name: SELECT …
//!   a continued query line (indented)
//!   => the start of the strategy duckmv.views must show (default "incremental")
//! ```
//!
//! Views are created in order (a later one may read an earlier one). Each seed starts from new
//! tables; each round commits or rolls back a few transactions of random statements, then
//! refreshes every view and compares it with its query run fresh, as bags in both directions.

use std::path::PathBuf;

use super::dml::{Schema, Table};
use super::rng::Rng;
use super::TestServer;

/// What the runner needs from a database holding materialized views.
pub trait Target {
    /// Runs statements; panics on an error.
    fn run(&mut self, sql: &str);
    /// The rows of a query as text, NULL spelled `NULL`.
    fn rows(&mut self, sql: &str) -> Vec<Vec<String>>;
    /// Creates a materialized view; the NOTICEs it gave, where the target sees them.
    fn create(&mut self, name: &str, query: &str) -> Vec<String>;
    fn refresh(&mut self, name: &str);

    fn strategy(&mut self, name: &str) -> String {
        let sql = format!("SELECT strategy FROM duckmv.views WHERE name = '{name}'");
        self.rows(&sql).concat().concat()
    }

    fn dump(&mut self, sql: &str) -> String {
        let rows = self.rows(&format!("SELECT * FROM ({sql}) AS _q ORDER BY ALL"));
        let lines: Vec<String> = rows.iter().map(|r| r.join("|")).collect();
        lines.join("\n")
    }

    /// Panics unless `view` equals `query` run fresh, as bags, showing both and `tables`.
    fn assert_oracle(&mut self, view: &str, query: &str, context: &str, tables: &[&str]) {
        let sql = format!(
            "SELECT count(*) FROM ((SELECT * FROM {view} EXCEPT ALL ({query})) UNION ALL \
             (({query}) EXCEPT ALL SELECT * FROM {view})) AS d"
        );
        let n = &self.rows(&sql)[0][0];
        if n == "0" || floats_agree(self, view, query) {
            return;
        }
        let mut shown = String::new();
        for t in tables {
            shown += &format!("\n{t}:\n{}", self.dump(&format!("SELECT * FROM {t}")));
        }
        panic!(
            "view {view} differs from its query by {n} rows, {context}\nview:\n{}\nquery:\n{}{shown}",
            self.dump(&format!("SELECT * FROM {view}")),
            self.dump(query),
        );
    }
}

/// Relative difference two floating-point values of a view and its query may have.
const FLOAT_TOLERANCE: f64 = 1e-9;

/// Whether `view` and `query` hold the same rows once their floating-point columns are
/// compared to [`FLOAT_TOLERANCE`]. A sum of doubles depends on the order of its terms, which
/// DuckDB does not fix (its documentation: floating-point aggregates are non-deterministic
/// with several threads), so a group recomputed alone need not match the query bit for bit.
fn floats_agree<T: Target + ?Sized>(t: &mut T, view: &str, query: &str) -> bool {
    let types = t.rows(&format!(
        "SELECT column_type FROM (DESCRIBE SELECT * FROM {view})"
    ));
    let float: Vec<bool> = types
        .iter()
        .map(|r| ["DOUBLE", "FLOAT", "REAL"].contains(&r[0].as_str()))
        .collect();
    if !float.contains(&true) {
        return false;
    }
    let sorted = |rows: Vec<Vec<String>>| {
        let mut rows: Vec<(Vec<String>, Vec<String>)> = rows
            .into_iter()
            .map(|r| r.into_iter().zip(&float).partition(|(_, f)| !**f))
            .map(|(exact, inexact): (Vec<_>, Vec<_>)| {
                let strip = |v: Vec<(String, &bool)>| v.into_iter().map(|(x, _)| x).collect();
                (strip(exact), strip(inexact))
            })
            .collect();
        rows.sort();
        rows
    };
    let a = sorted(t.rows(&format!("SELECT * FROM {view}")));
    let b = sorted(t.rows(&format!("SELECT * FROM ({query}) AS _q")));
    let close = |x: &String, y: &String| match (x.parse::<f64>(), y.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= FLOAT_TOLERANCE * x.abs().max(y.abs()),
        _ => x == y,
    };
    a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|((ea, fa), (eb, fb))| ea == eb && fa.iter().zip(fb).all(|(x, y)| close(x, y)))
}

/// Where a family's views run.
#[derive(Debug, PartialEq)]
pub enum Via {
    InProcess,
    Wire,
}

#[derive(Debug)]
pub struct View {
    pub name: String,
    pub query: String,
    /// The start of the strategy the catalog must show.
    pub expect: String,
}

/// One family file, read.
#[derive(Debug)]
pub struct Family {
    pub name: String,
    pub via: Via,
    pub seeds: Vec<u64>,
    pub rounds: usize,
    pub schema: Schema,
    pub views: Vec<View>,
}

impl Family {
    pub fn load(name: &str) -> Family {
        let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "shapes", name]
            .iter()
            .collect();
        let path = path.with_extension("shapes");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Family::parse(name, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    pub fn parse(name: &str, text: &str) -> Result<Family, String> {
        let mut f = Family {
            name: name.into(),
            via: Via::InProcess,
            seeds: vec![1],
            rounds: 10,
            schema: Schema {
                tables: Vec::new(),
                null_pct: 12,
            },
            views: Vec::new(),
        };
        for (i, line) in text.lines().enumerate() {
            f.read_line(line)
                .map_err(|e| format!("line {}: {e}: {line}", i + 1))?;
        }
        if f.views.is_empty() || f.schema.tables.is_empty() {
            return Err("a family needs tables and views".into());
        }
        Ok(f)
    }

    fn read_line(&mut self, line: &str) -> Result<(), String> {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("--") {
            return Ok(());
        }
        if line.starts_with(char::is_whitespace) {
            let view = self
                .views
                .last_mut()
                .ok_or("a continuation before any view")?;
            match trimmed.strip_prefix("=>") {
                Some(expect) => view.expect = expect.trim().to_string(),
                None => {
                    view.query.push(' ');
                    view.query.push_str(trimmed);
                }
            }
            return Ok(());
        }
        let (key, rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
        let numbers = || -> Result<Vec<u64>, String> {
            rest.split_whitespace()
                .map(|n| n.parse().map_err(|_| format!("not a number: {n}")))
                .collect()
        };
        match key {
            "via" => {
                self.via = match rest.trim() {
                    "inprocess" => Via::InProcess,
                    "wire" => Via::Wire,
                    other => return Err(format!("unknown target {other}")),
                }
            }
            "seeds" => self.seeds = numbers()?,
            "rounds" => self.rounds = *numbers()?.first().ok_or("no number")? as usize,
            "nulls" => self.schema.null_pct = *numbers()?.first().ok_or("no number")?,
            "table" => self.schema.tables.push(Table::parse(rest)?),
            _ => {
                let (name, query) = trimmed.split_once(':').ok_or("not `name: query`")?;
                self.views.push(View {
                    name: name.trim().to_string(),
                    query: query.trim().to_string(),
                    expect: "incremental".into(),
                });
            }
        }
        Ok(())
    }
}

/// Runs every seed of the family file `tests/shapes/<name>.shapes`.
pub fn check(name: &str) {
    let family = Family::load(name);
    for &seed in &family.seeds {
        match family.via {
            Via::InProcess => run(&mut super::inprocess::Db::new(), &family, seed),
            Via::Wire => run(&mut Wire::start(), &family, seed),
        };
    }
}

/// One seed of a family on a new database; the NOTICEs the CREATEs gave.
pub fn run(db: &mut dyn Target, family: &Family, seed: u64) -> Vec<String> {
    let mut r = Rng::seeded(seed);
    for stmt in family.schema.fill(&mut r) {
        db.run(&stmt);
    }
    let tables: Vec<&str> = family
        .schema
        .tables
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let at = |what: &str| format!("{} seed {seed} {what}", family.name);
    let mut notices = Vec::new();
    for v in &family.views {
        let said = db.create(&v.name, &v.query);
        let incremental = v.expect.starts_with("incremental");
        assert!(said.is_empty() || !incremental, "{}: {said:?}", at(&v.name));
        notices.extend(said);
        let strategy = db.strategy(&v.name);
        assert!(
            strategy.starts_with(&v.expect),
            "{}: strategy `{strategy}`, expected `{}…`",
            at(&v.name),
            v.expect
        );
        db.assert_oracle(&v.name, &v.query, &at("after create"), &tables);
    }
    for round in 0..family.rounds {
        let mut batches = Vec::new();
        for _ in 0..1 + r.below(3) {
            let stmts: Vec<String> = (0..1 + r.below(4))
                .map(|_| family.schema.statement(&mut r))
                .collect();
            let end = if r.chance(20) { "ROLLBACK" } else { "COMMIT" };
            let batch = format!("BEGIN; {}; {end};", stmts.join("; "));
            db.run(&batch);
            batches.push(batch);
        }
        let context = at(&format!("round {round}, after\n  {}", batches.join("\n  ")));
        for v in &family.views {
            db.refresh(&v.name);
            db.assert_oracle(&v.name, &v.query, &context, &tables);
        }
    }
    notices
}

/// A duckmv server and one tokio-postgres client, driven from synchronous code.
pub struct Wire {
    client: tokio_postgres::Client,
    rt: tokio::runtime::Runtime,
    _server: TestServer,
}

impl Wire {
    pub fn start() -> Wire {
        let server = TestServer::start();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(server.client());
        Wire {
            client,
            rt,
            _server: server,
        }
    }
}

impl Target for Wire {
    fn run(&mut self, sql: &str) {
        self.rt.block_on(super::exec(&self.client, sql));
    }

    fn rows(&mut self, sql: &str) -> Vec<Vec<String>> {
        self.rt.block_on(super::text_rows(&self.client, sql))
    }

    fn create(&mut self, name: &str, query: &str) -> Vec<String> {
        self.run(&format!("CREATE MATERIALIZED VIEW {name} AS {query}"));
        Vec::new()
    }

    fn refresh(&mut self, name: &str) {
        self.run(&format!("REFRESH MATERIALIZED VIEW {name}"));
    }
}
