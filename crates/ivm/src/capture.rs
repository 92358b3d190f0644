//! Change capture: one change log per tracked relation, shared by every view that reads it.
//!
//! A base table's log (`_duckmv.log_<id>`) is written by three statement-level AFTER triggers
//! with transition tables, inside the writing transaction (a rollback leaves no row), once per
//! statement whatever the number of views. An upstream materialized view's log is written by
//! its refresh (no triggers on internal tables: DuckDB refuses MERGE on tables with triggers,
//! and the refresh uses MERGE). Each log row is a signed row (`_mv_mult`) with a position
//! (`_mv_pos`, from one sequence).
//!
//! Each (view, source) pair is a reader of one log with a consumed position in
//! `_duckmv.log_readers`. Its delta relation (the plan's `Source::delta`) is a view of the log
//! past that position, so the delta SQL of a plan keeps one text and stays prepared. A refresh
//! reads its deltas and moves its positions to the log's end in its snapshot, in its own
//! transaction: a rollback moves nothing, a commit consumes exactly what was read.
//!
//! Why positions visible in a snapshot are a prefix of the log (so "the end in my snapshot"
//! never skips a row committed later): writers of tracked tables hold the capture lock from
//! their first write to their transaction's end (`session::capture_lock`), so a writer takes
//! positions only after every earlier writer has committed or rolled back; a transaction that
//! commits after a snapshot began took all its positions after every transaction the snapshot
//! sees had ended. A view's log is appended only by that view's refreshes, and every refresh
//! that writes updates all of the view's reader rows (or, with none, its catalog row): two
//! concurrent ones conflict and one rolls back, so they too append one after another.
//! Rolled-back positions leave gaps, which no reader minds.
//!
//! Rows every reader has consumed are deleted by [`vacuum`], which the server runs in the
//! background, never on the write path.

use std::collections::HashMap;

use super::plan::{Block, Body, Item, ItemFrom, Plan, Rel, Source, SourceKind};
use super::text::{ident, lit};
use super::{IvmError, Sql};

const OPS: [&str; 3] = ["ins", "del", "upd"];

/// The sequence every log position comes from.
const POSITIONS: &str = "_duckmv.log_pos";

/// Creates the log catalog (idempotent).
pub fn bootstrap(db: &mut dyn Sql) -> Result<(), IvmError> {
    for sql in [
        "CREATE SEQUENCE IF NOT EXISTS _duckmv.log_ids",
        "CREATE SEQUENCE IF NOT EXISTS _duckmv.log_pos",
        "CREATE TABLE IF NOT EXISTS _duckmv.change_logs (id BIGINT, source_schema VARCHAR, \
         source_name VARCHAR, source_view_id BIGINT, log_table VARCHAR, columns VARCHAR)",
        "CREATE TABLE IF NOT EXISTS _duckmv.log_readers (view_id BIGINT, log_id BIGINT, \
         reader VARCHAR, consumed BIGINT)",
    ] {
        db.exec(sql)?;
    }
    let logs = db.query(
        "SELECT l.log_table FROM _duckmv.change_logs l WHERE NOT EXISTS (SELECT 1 FROM \
         information_schema.columns c WHERE c.table_schema = '_duckmv' \
         AND '_duckmv.' || c.table_name = l.log_table AND c.column_name = '_mv_at')",
    )?;
    for table in logs
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
    {
        add_written_at(db, &table)?;
    }
    Ok(())
}

/// A log as `_duckmv.change_logs` records it.
struct Log {
    id: i64,
    table: String,
    columns: Vec<String>,
}

fn trigger_name(log_id: i64, op: &str) -> String {
    format!("_duckmv_log_{log_id}_{op}")
}

/// The catalog condition naming a source's log.
fn source_key(s: &Source) -> String {
    match (s.kind, s.view_id) {
        (SourceKind::View, Some(v)) => format!("source_view_id = {v}"),
        _ => format!(
            "source_view_id IS NULL AND lower(source_schema) = lower({}) AND lower(source_name) = lower({})",
            lit(&s.schema),
            lit(&s.name)
        ),
    }
}

fn find_log(db: &mut dyn Sql, s: &Source) -> Result<Option<Log>, IvmError> {
    let rows = db.query(&format!(
        "SELECT id, log_table, columns FROM _duckmv.change_logs WHERE {}",
        source_key(s)
    ))?;
    let Some(r) = rows.into_iter().next() else {
        return Ok(None);
    };
    let get = |i: usize| r[i].clone().unwrap_or_default();
    Ok(Some(Log {
        id: get(0)
            .parse()
            .map_err(|_| IvmError::Internal("bad log id".into()))?,
        table: get(1),
        columns: serde_json::from_str(&get(2))
            .map_err(|e| IvmError::Internal(format!("bad log columns: {e}")))?,
    }))
}

/// The log of source `s`, created when no view read it yet, and widened when `s` reads a
/// column the log lacks (a column added to the table after the log was made).
fn ensure_log(db: &mut dyn Sql, s: &Source) -> Result<Log, IvmError> {
    let log = match find_log(db, s)? {
        Some(log) => log,
        None => return create_log(db, s),
    };
    let missing: Vec<&String> = s
        .columns
        .iter()
        .filter(|c| !log.columns.iter().any(|l| l.eq_ignore_ascii_case(c)))
        .collect();
    if missing.is_empty() {
        return Ok(log);
    }
    let mut log = log;
    for c in missing {
        let ty = db.query(&format!(
            "SELECT column_type FROM (DESCRIBE SELECT {} FROM {})",
            ident(c),
            s.relation
        ))?;
        let ty = ty
            .first()
            .and_then(|r| r[0].clone())
            .ok_or_else(|| IvmError::Internal(format!("no type for column {c}")))?;
        db.exec(&format!(
            "ALTER TABLE {} ADD COLUMN {} {ty}",
            log.table,
            ident(c)
        ))?;
        log.columns.push(c.clone());
    }
    save_columns(db, &log)?;
    if s.kind == SourceKind::Table {
        drop_triggers(db, s, log.id)?;
        create_triggers(db, s, &log)?;
    }
    Ok(log)
}

fn save_columns(db: &mut dyn Sql, log: &Log) -> Result<(), IvmError> {
    let cols =
        serde_json::to_string(&log.columns).map_err(|e| IvmError::Internal(e.to_string()))?;
    db.exec(&format!(
        "UPDATE _duckmv.change_logs SET columns = {} WHERE id = {}",
        lit(&cols),
        log.id
    ))?;
    Ok(())
}

/// A new, empty log. A view's log has the view's columns in order (its refresh appends its
/// output rows as they are); a table's, the columns its first reader reads.
fn create_log(db: &mut dyn Sql, s: &Source) -> Result<Log, IvmError> {
    let id: i64 = db
        .query("SELECT nextval('_duckmv.log_ids')")?
        .first()
        .and_then(|r| r[0].as_deref())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| IvmError::Internal("no log id".into()))?;
    let table = format!("_duckmv.log_{id}");
    let columns: Vec<String> = if s.kind == SourceKind::View {
        db.query(&format!(
            "SELECT column_name FROM (DESCRIBE SELECT * FROM {})",
            s.relation
        ))?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect()
    } else {
        s.columns.clone()
    };
    let cols = column_list(&columns);
    db.exec(&format!(
        "CREATE TABLE {table} AS SELECT {cols}, CAST(0 AS BIGINT) AS _mv_mult, \
         CAST(0 AS BIGINT) AS _mv_pos FROM {} LIMIT 0",
        s.relation
    ))?;
    add_written_at(db, &table)?;
    let log = Log { id, table, columns };
    let (schema, name, view_id) = (lit(&s.schema), lit(&s.name), s.view_id);
    db.exec(&format!(
        "INSERT INTO _duckmv.change_logs VALUES ({id}, {schema}, {name}, {}, {}, '[]')",
        view_id.map_or("NULL".to_string(), |v| v.to_string()),
        lit(&log.table)
    ))?;
    save_columns(db, &log)?;
    if s.kind == SourceKind::Table {
        create_triggers(db, s, &log)?;
    }
    Ok(log)
}

/// Adds `_mv_at`, when each row was written (its transaction's start), to a log that lacks it
/// (logs of earlier versions): `duckmv.views` shows how long the oldest pending row has waited.
/// A default, so the triggers' column lists need no change; a view's refresh appends it last.
fn add_written_at(db: &mut dyn Sql, table: &str) -> Result<(), IvmError> {
    db.exec(&format!(
        "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS _mv_at TIMESTAMP DEFAULT now()"
    ))?;
    Ok(())
}

fn column_list(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| ident(c))
        .collect::<Vec<_>>()
        .join(", ")
}

fn create_triggers(db: &mut dyn Sql, s: &Source, log: &Log) -> Result<(), IvmError> {
    let (t, l) = (&s.relation, &log.table);
    let cols = column_list(&log.columns);
    let into = format!("INSERT INTO {l} ({cols}, _mv_mult, _mv_pos)");
    let rows = |from: &str, sign: i64| {
        format!("SELECT {cols}, {sign}, nextval('{POSITIONS}') FROM {from}")
    };
    db.exec(&format!(
        "CREATE TRIGGER {} AFTER INSERT ON {t} REFERENCING NEW TABLE AS _mv_new FOR EACH STATEMENT \
         {into} {}",
        trigger_name(log.id, "ins"),
        rows("_mv_new", 1)
    ))?;
    db.exec(&format!(
        "CREATE TRIGGER {} AFTER DELETE ON {t} REFERENCING OLD TABLE AS _mv_old FOR EACH STATEMENT \
         {into} {}",
        trigger_name(log.id, "del"),
        rows("_mv_old", -1)
    ))?;
    db.exec(&format!(
        "CREATE TRIGGER {} AFTER UPDATE ON {t} REFERENCING OLD TABLE AS _mv_old NEW TABLE AS _mv_new \
         FOR EACH STATEMENT {into} {} UNION ALL {}",
        trigger_name(log.id, "upd"),
        rows("_mv_old", -1),
        rows("_mv_new", 1)
    ))?;
    Ok(())
}

/// Drops the log's triggers that exist (a dropped table took its triggers with it).
fn drop_triggers(db: &mut dyn Sql, s: &Source, log_id: i64) -> Result<(), IvmError> {
    let present = db.query(&format!(
        "SELECT trigger_name FROM duckdb_triggers() WHERE database_name = current_database() \
         AND lower(schema_name) = lower({}) AND lower(table_name) = lower({})",
        lit(&s.schema),
        lit(&s.name)
    ))?;
    for op in OPS {
        let name = trigger_name(log_id, op);
        if present
            .iter()
            .any(|r| r[0].as_deref() == Some(name.as_str()))
        {
            db.exec(&format!("DROP TRIGGER {name} ON {}", s.relation))?;
        }
    }
    Ok(())
}

/// Makes `plan` a reader of its sources' logs (creating them as needed): each source's delta
/// relation becomes a view of its log past the view's position, which starts at the log's end
/// in this transaction's snapshot (the view's first population reads the same snapshot).
/// Records each log's table in the plan.
pub fn install(db: &mut dyn Sql, plan: &mut Plan) -> Result<(), IvmError> {
    for s in plan.sources.iter_mut() {
        let Some(delta) = s.delta.clone() else {
            continue;
        };
        if s.kind.kept() {
            continue;
        }
        let log = ensure_log(db, s)?;
        db.exec(&format!(
            "INSERT INTO _duckmv.log_readers SELECT {}, {}, {}, coalesce(max(_mv_pos), 0) FROM {}",
            plan.id,
            log.id,
            lit(&delta),
            log.table
        ))?;
        s.log = Some(log.table);
    }
    for s in &plan.sources {
        if let Some(sql) = delta_view_sql(plan, "CREATE VIEW", s) {
            db.exec(&sql)?;
        }
    }
    Ok(())
}

/// `<create> delta AS …`: the log's rows past the reader's position, consolidated: rows equal
/// in every logged column are summed into one signed row, and those whose signs cancel (a row
/// inserted then deleted, or an UPDATE of columns no reader logs) are left out, so the delta
/// queries never see them. Consolidating is exact because every delta query is linear in its
/// deltas' multiplicities (it joins them and multiplies or sums their `_mv_mult`); NULLs group
/// together, as equal rows of a bag.
///
/// The position comes from a join with the reader's row, not a scalar subquery: inside a
/// correlated subquery of a delta query (a semi join's old count, say), DuckDB decorrelated a
/// nested scalar subquery into a plan that ran for minutes and spilled gigabytes on a 60k-row
/// table (TPC-H Q21 at SF 0.01); the join form runs in milliseconds there.
///
/// A plan that nets cancelling rows out by itself reads the rows as they are (see
/// [`consolidates`]).
pub fn delta_view_sql(plan: &Plan, create: &str, source: &Source) -> Option<String> {
    let (delta, log) = (source.delta.as_ref()?, source.log.as_ref()?);
    let cols: Vec<String> = source
        .columns
        .iter()
        .map(|c| format!("_mv_l.{}", ident(c)))
        .collect();
    let from = pending_from(delta, log);
    let cols = cols.join(", ");
    Some(if consolidates(plan) {
        format!(
            "{create} {delta} AS SELECT {cols}, CAST(sum(_mv_l._mv_mult) AS BIGINT) AS _mv_mult \
             FROM {from} GROUP BY ALL HAVING sum(_mv_l._mv_mult) <> 0"
        )
    } else {
        format!("{create} {delta} AS SELECT {cols}, _mv_l._mv_mult FROM {from}")
    })
}

/// Whether `plan` reads its changes consolidated. A plan whose one input is one source read by
/// one block, kept as a bag or in invertible aggregates, sums the signs of equal rows in its
/// own GROUP BY, so cancelling rows cost it nothing and consolidating first would group the
/// change twice (about 3 ms for 8,000 log rows here, 147 ms for 800,000); so do MIN/MAX with
/// kept values (`Aggregator::nets_its_change`). Joins, existence tests, outer joins and
/// MIN/MAX without kept values would carry cancelling rows through lookups, or rescan a group
/// for a deleted extreme that came back; a recursive query over-deletes what a lost row
/// derived.
pub fn consolidates(plan: &Plan) -> bool {
    if plan.recursion.is_some() {
        // A row inserted and deleted again must not look like a delete, which over-deletes
        // and derives again.
        return true;
    }
    let lone = |b: &Block| {
        b.exists.is_empty()
            && b.guards.is_empty()
            && matches!(
                b.items.as_slice(),
                [Item {
                    from: ItemFrom::Source(_),
                    ..
                }]
            )
    };
    match &plan.body {
        Body::Bag {
            rel: Rel::Block(b), ..
        } => !lone(b),
        Body::Aggregate(a) => {
            let nets = a.state_fns().all(|f| crate::agg::of(f).nets_its_change());
            !(a.copies.is_empty() && lone(&a.input) && nets)
        }
        _ => true,
    }
}

/// The FROM and WHERE that select reader `delta`'s pending rows of `log`, as `_mv_l`.
fn pending_from(delta: &str, log: &str) -> String {
    format!(
        "{log} AS _mv_l, _duckmv.log_readers AS _mv_r \
         WHERE _mv_r.reader = {} AND _mv_l._mv_pos > _mv_r.consumed",
        lit(delta)
    )
}

/// A probe's row for reader `delta` of `log`, tagged `tag`: `(tag, pending, NULL, end)`, the
/// reader's pending rows before consolidation (what a refresh would read, at the cost of a
/// count, no grouping) and the last of their positions, where [`advance_to_ends_sql`] moves the
/// reader (NULL when nothing is pending: the reader stays, as it would at the log's end, which
/// is then at or before its position). One read of the pending rows gives both, so the
/// refresh's advance reads no log.
///
/// Only the pending rows are read: the position condition is the join's, whose bounds DuckDB
/// applies to the log's scan, skipping the row groups before the reader's position. A log
/// holding the backlog of a view refreshed less often cost every probe of the views that had
/// consumed it a scan of it: with 1.2M rows behind, V1's probe took 3.6–4.5 ms in the server
/// against 1.4–1.6 ms in this form (1.7 ms either way over an empty log).
pub fn pending_and_end_sql(tag: usize, delta: &str, log: &str) -> String {
    format!(
        "SELECT {tag}, count(*), NULL, max(_mv_l._mv_pos) FROM _duckmv.log_readers AS _mv_r \
         JOIN {log} AS _mv_l ON _mv_l._mv_pos > _mv_r.consumed WHERE _mv_r.reader = {}",
        lit(delta)
    )
}

/// Stops `plan` reading its logs; a log nobody reads any more goes, with its triggers.
pub fn uninstall(db: &mut dyn Sql, plan: &Plan) -> Result<(), IvmError> {
    for s in &plan.sources {
        let Some(delta) = &s.delta else { continue };
        if s.kind.kept() {
            continue;
        }
        db.exec(&format!("DROP VIEW IF EXISTS {delta}"))?;
        db.exec(&format!(
            "DELETE FROM _duckmv.log_readers WHERE reader = {}",
            lit(delta)
        ))?;
        let Some(log) = find_log(db, s)? else {
            continue;
        };
        let readers = db.query(&format!(
            "SELECT 1 FROM _duckmv.log_readers WHERE log_id = {}",
            log.id
        ))?;
        if !readers.is_empty() {
            continue;
        }
        if s.kind == SourceKind::Table {
            drop_triggers(db, s, log.id)?;
        }
        db.exec(&format!("DROP TABLE IF EXISTS {}", log.table))?;
        db.exec(&format!(
            "DELETE FROM _duckmv.change_logs WHERE id = {}",
            log.id
        ))?;
    }
    Ok(())
}

/// Consumes every pending change of the view (after a full refresh has made them moot): moves
/// its position in every log to the end in this transaction's snapshot, outside a refresh
/// (whose probe has read the ends already).
pub fn clear(db: &mut dyn Sql, plan: &Plan) -> Result<(), IvmError> {
    if let Some((sql, sources)) = advance_to_ends_sql(plan) {
        let ends = log_ends(db, plan)?;
        db.exec_hot(&sql, &end_params(&sources, &ends)?)?;
    }
    Ok(())
}

/// The end of each source's log in this snapshot (None: no log, or an empty one).
pub fn log_ends(db: &mut dyn Sql, plan: &Plan) -> Result<Vec<Option<i64>>, IvmError> {
    let mut ends = vec![None; plan.sources.len()];
    let parts: Vec<String> = plan
        .sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some(format!("SELECT {i}, max(_mv_pos) FROM {}", s.log.as_ref()?)))
        .collect();
    if parts.is_empty() {
        return Ok(ends);
    }
    let rows = db.query(&parts.join(" UNION ALL "))?;
    ends_by_tag(&rows, 1, &mut ends);
    Ok(ends)
}

/// Fills `ends` from rows tagged with a source's position in column 0 and holding its log's
/// end in column `col` (rows with other tags, as the probe's −1, are left out).
pub fn ends_by_tag(rows: &[Vec<Option<String>>], col: usize, ends: &mut [Option<i64>]) {
    for row in rows {
        let tag = row[0].as_deref().and_then(|v| v.parse::<usize>().ok());
        if let Some(slot) = tag.and_then(|i| ends.get_mut(i)) {
            *slot = row[col].as_deref().and_then(|v| v.parse::<i64>().ok());
        }
    }
}

/// The parameters of [`advance_to_ends_sql`]'s statement: the ends of `sources`' logs.
pub fn end_params(sources: &[usize], ends: &[Option<i64>]) -> Result<Vec<String>, IvmError> {
    sources
        .iter()
        .map(|i| match ends.get(*i) {
            Some(end) => Ok(end.unwrap_or(i64::MIN).to_string()),
            None => Err(IvmError::Internal(format!("no log end for source {i}"))),
        })
        .collect()
}

/// The statement moving every reader of the view to its log's end, None when no source has a
/// log: parameter `$k` is the end of the log of the k-th source returned (see
/// [`end_params`]). Every reader, not only those of the sources a refresh read: see
/// `program::advance`. One UPDATE for all the sources: every statement costs
/// DuckDB most of a millisecond however little it does. The ends are parameters, read by the
/// refresh's probe with its counts, so the logs are not scanned again; the CASE over readers
/// costs half of what a join with a UNION ALL of the logs' maxima did (0.6 against 1.3–1.4
/// ms, two readers).
pub fn advance_to_ends_sql(plan: &Plan) -> Option<(String, Vec<usize>)> {
    let readers: Vec<(usize, String)> = plan
        .sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match (&s.delta, &s.log) {
            (Some(delta), Some(_)) => Some((i, lit(delta))),
            _ => None,
        })
        .collect();
    if readers.is_empty() {
        return None;
    }
    let whens: Vec<String> = readers
        .iter()
        .enumerate()
        .map(|(k, (_, r))| format!("WHEN {r} THEN CAST(${}::VARCHAR AS BIGINT)", k + 1))
        .collect();
    let names: Vec<&str> = readers.iter().map(|(_, r)| r.as_str()).collect();
    let sql = format!(
        "UPDATE _duckmv.log_readers SET consumed = greatest(consumed, CASE reader {} END) \
         WHERE reader IN ({})",
        whens.join(" "),
        names.join(", ")
    );
    Some((sql, readers.into_iter().map(|(i, _)| i).collect()))
}

/// The statement appending `change` (the view's columns in order, then the sign) to a view's
/// log, with a position and the time written.
pub fn append_sql(log: &str, change: &str) -> String {
    format!("INSERT INTO {log} SELECT *, nextval('{POSITIONS}'), now() FROM ({change}) AS _mv_c")
}

/// The log that view `id`'s refreshes append to, when some view reads it incrementally.
pub fn downstream_log(db: &mut dyn Sql, id: i64) -> Result<Option<String>, IvmError> {
    let rows = db.query_hot(
        &format!("SELECT log_table FROM _duckmv.change_logs WHERE source_view_id = {id}"),
        &[],
    )?;
    Ok(rows.into_iter().next().and_then(|r| r[0].clone()))
}

/// Deletes the log rows every reader has consumed; returns how many. `done` remembers, per
/// log, the position deleted up to, so a log whose readers have not moved costs no statement.
/// Each log is one statement, so the server can run this as autocommit statements in the
/// background.
pub fn vacuum(db: &mut dyn Sql, done: &mut HashMap<String, i64>) -> Result<u64, IvmError> {
    let logs = db.query(
        "SELECT l.log_table, min(r.consumed) FROM _duckmv.change_logs l \
         JOIN _duckmv.log_readers r ON r.log_id = l.id GROUP BY l.log_table",
    )?;
    let mut removed = 0;
    for l in logs {
        let (Some(table), Some(upto)) = (&l[0], &l[1]) else {
            continue;
        };
        let upto: i64 = upto
            .parse()
            .map_err(|_| IvmError::Internal("bad log position".into()))?;
        if done.get(table).is_some_and(|d| *d >= upto) {
            continue;
        }
        removed += db.exec(&format!("DELETE FROM {table} WHERE _mv_pos <= {upto}"))?;
        done.insert(table.clone(), upto);
    }
    Ok(removed)
}
