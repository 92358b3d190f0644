//! Running a prepared statement: portals, streaming rows to the client, and the statements a
//! rewrite runs in its place.

use crate::sqlstate::SqlState;
use std::collections::VecDeque;
use std::rc::Rc;

use duckdb::arrow::array::RecordBatch;

use super::context::Context;
use super::reply::{FieldDesc, Reply, SqlError};
use super::statement::{Statement, StmtKind};
use super::transaction::Tx;
use super::{matview, Out};
use crate::engine::{Column, QueryResult, StatementKind};
use crate::sql;
use crate::types::{self, DuckType, Format, ParamValue};

pub fn row_description(st: &Statement, formats: &[Format]) -> Reply {
    if !st.returns_rows() {
        return Reply::NoData;
    }
    Reply::RowDescription(fields(st.columns(), formats))
}

pub fn fields(cols: &[Column], formats: &[Format]) -> Vec<FieldDesc> {
    cols.iter()
        .enumerate()
        .map(|(i, c)| {
            let pg = types::pg_type(&c.ty);
            FieldDesc {
                name: c.name.clone(),
                oid: pg.oid,
                len: pg.len,
                typmod: pg.typmod,
                format: formats.get(i).copied().unwrap_or(Format::Text),
            }
        })
        .collect()
}

pub struct Portal {
    pub stmt: Rc<Statement>,
    pub params: Vec<ParamValue>,
    pub formats: Vec<Format>,
    /// Bind's result format codes, applied to the columns the statement
    /// really returns.
    pub codes: Vec<i16>,
    pub state: PortalState,
}

pub enum PortalState {
    New,
    Streaming(Box<Stream>),
    Done,
}

pub struct Stream {
    /// DuckDB's open result; None once everything is in `queue`.
    result: Option<QueryResult>,
    queue: VecDeque<RecordBatch>,
    /// Rows of the front batch already sent.
    offset: usize,
    cols: Vec<(DuckType, Format)>,
    sent: u64,
    /// An error DuckDB raised while the rest was buffered.
    failed: Option<SqlError>,
    /// Rows are sent without their columns (`SELECT FROM t`).
    no_columns: bool,
}

impl Stream {
    /// A batch as it is sent: without columns for an empty select list.
    fn keep(&self, b: RecordBatch) -> Result<RecordBatch, SqlError> {
        if !self.no_columns {
            return Ok(b);
        }
        b.project(&[])
            .map_err(|e| SqlError::new(SqlState::INTERNAL_ERROR, e.to_string()))
    }
}

impl Portal {
    pub fn new(stmt: Rc<Statement>, params: Vec<ParamValue>, formats: Vec<Format>) -> Self {
        Portal {
            stmt,
            params,
            formats,
            codes: Vec::new(),
            state: PortalState::New,
        }
    }
}

/// Moves a suspended portal's remaining rows out of DuckDB into memory.
pub fn buffer_rest(p: &mut Portal) {
    if let PortalState::Streaming(s) = &mut p.state {
        if let Some(mut r) = s.result.take() {
            loop {
                match r.next_batch() {
                    Ok(Some(b)) => match s.keep(b) {
                        Ok(b) => s.queue.push_back(b),
                        Err(e) => {
                            s.failed = Some(e);
                            break;
                        }
                    },
                    Ok(None) => break,
                    // Reported when the client fetches past the rows read.
                    Err(e) => {
                        s.failed = Some(e.into());
                        break;
                    }
                }
            }
        }
    }
}

/// What every statement does before it first runs: counted for savepoints, the capture lock
/// taken for what it writes, the transaction's snapshot noted.
pub fn start(ctx: &Context, tx: &mut Tx, stmt: &Statement) -> Result<(), SqlError> {
    tx.savepoints.note(stmt.only_reads());
    tx.lock_capture(ctx, &stmt.writes, stmt.insert_only)?;
    tx.note_snapshot();
    Ok(())
}

/// Executes (or continues) a portal of a statement DuckDB runs, sending at most `limit` rows
/// (0 = all). `describe` sends the RowDescription first (simple protocol). Commands the server
/// answers itself are the worker's.
pub fn execute(
    ctx: &mut Context,
    tx: &mut Tx,
    portal: &mut Portal,
    limit: u64,
    describe: bool,
    out: &Out,
) -> Result<(), SqlError> {
    if let PortalState::New = portal.state {
        let stmt = portal.stmt.clone();
        start(ctx, tx, &stmt)?;
        match &stmt.kind {
            StmtKind::Empty => {
                out.send(Reply::EmptyQuery);
                portal.state = PortalState::Done;
                return Ok(());
            }
            StmtKind::Rewrite(r) => {
                // Its write targets were checked when it was prepared.
                matview::check_statement(ctx, tx, &stmt.command, out)?;
                let (n, rows) = run_steps(ctx, &r.steps)?;
                super::immediate::maintain(ctx, tx, &stmt.writes)?;
                let tag = match r.tag {
                    "INSERT" => format!("INSERT 0 {n}"),
                    "MERGE" => format!("MERGE {n}"),
                    other => other.to_string(),
                };
                if r.describe.is_none() {
                    out.send(Reply::Complete(tag));
                    portal.state = PortalState::Done;
                    return Ok(());
                }
                // RETURNING: the collected rows stream like a query's, then the tag.
                let formats: Vec<Format> = if describe {
                    Vec::new()
                } else {
                    portal.formats.clone()
                };
                if describe {
                    out.send(Reply::RowDescription(fields(stmt.columns(), &formats)));
                }
                let cols = stmt
                    .columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let f = formats.get(i).copied().unwrap_or(Format::Text);
                        (c.ty.clone(), f)
                    })
                    .collect();
                let mut s = Stream {
                    result: None,
                    queue: rows.into(),
                    offset: 0,
                    cols,
                    sent: 0,
                    failed: None,
                    no_columns: false,
                };
                fetch(&mut s, 0, out)?;
                out.send(Reply::Complete(tag));
                portal.state = PortalState::Done;
                return Ok(());
            }
            StmtKind::Command(_) => {
                return Err(SqlError::new(
                    SqlState::INTERNAL_ERROR,
                    "a command the server answers reached DuckDB's executor",
                ))
            }
            StmtKind::Duck(p) => {
                matview::check_statement(ctx, tx, &stmt.command, out)?;
                if let Some(tag) = matview::alter_tracked(ctx, tx, &stmt.command, &stmt.lexed, out)?
                {
                    out.send(Reply::Complete(tag));
                    portal.state = PortalState::Done;
                    return Ok(());
                }
                let mut p = p.borrow_mut();
                p.clear_bindings();
                for (i, v) in portal.params.iter().enumerate() {
                    p.bind(i + 1, v)?;
                }
                let mut result = ctx.conn.execute(&p)?;
                if !result.returns_rows {
                    let rows = result.drain_changed_rows()?;
                    drop(result);
                    drop(p);
                    super::immediate::maintain(ctx, tx, &stmt.writes)?;
                    let kind = match &stmt.kind {
                        StmtKind::Duck(p) => p.borrow().kind,
                        _ => StatementKind::Other,
                    };
                    out.send(Reply::Complete(sql::command_tag(
                        &stmt.lexed,
                        kind,
                        rows,
                        false,
                    )));
                    portal.state = PortalState::Done;
                    return Ok(());
                }
                let formats: Vec<Format> = if describe {
                    Vec::new()
                } else {
                    portal.formats.clone()
                };
                // From the result: a statement planned once learns its columns only now.
                let no_columns = super::statement::placeholder_only(&result.columns);
                let shown: &[crate::engine::Column] =
                    if no_columns { &[] } else { &result.columns };
                let cols = shown
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        (
                            c.ty.clone(),
                            formats.get(i).copied().unwrap_or(Format::Text),
                        )
                    })
                    .collect();
                if describe {
                    out.send(Reply::RowDescription(fields(shown, &formats)));
                }
                portal.state = PortalState::Streaming(Box::new(Stream {
                    result: Some(result),
                    queue: VecDeque::new(),
                    offset: 0,
                    cols,
                    sent: 0,
                    failed: None,
                    no_columns,
                }));
            }
        }
    }
    let kind = match &portal.stmt.kind {
        StmtKind::Duck(p) => p.borrow().kind,
        _ => StatementKind::Select,
    };
    match &mut portal.state {
        PortalState::Streaming(s) => {
            let finished = fetch(s, limit, out)?;
            if finished {
                // RETURNING, or a data-modifying CTE: its writes are done once its rows are.
                let writes = portal.stmt.writes.clone();
                super::immediate::maintain(ctx, tx, &writes)?;
                let tag = sql::command_tag(&portal.stmt.lexed, kind, s.sent, true);
                out.send(Reply::Complete(tag));
                portal.state = PortalState::Done;
            } else {
                out.send(Reply::Suspended);
            }
        }
        PortalState::Done => {
            out.send(Reply::Complete(sql::command_tag(
                &portal.stmt.lexed,
                kind,
                0,
                true,
            )));
        }
        PortalState::New => unreachable!(),
    }
    Ok(())
}

/// Runs a rewrite's statements in order: the changed-row count for the tag, and the rows of
/// its RETURNING statements.
fn run_steps(
    ctx: &Context,
    steps: &[sql::upsert::Step],
) -> Result<(u64, Vec<RecordBatch>), SqlError> {
    use sql::upsert::Step;
    let mut n = 0;
    let mut rows = Vec::new();
    for step in steps {
        match step {
            Step::Run { sql, counted } => {
                let changed = ctx.conn.exec(sql)?;
                if *counted {
                    n += changed;
                }
            }
            Step::MustBeEmpty { sql, code, message } => {
                let mut r = ctx.conn.query(sql)?;
                while let Some(b) = r.next_batch()? {
                    if b.num_rows() > 0 {
                        return Err(SqlError::new(*code, *message));
                    }
                }
            }
            Step::Returning { sql } => {
                let mut r = ctx.conn.query(sql)?;
                while let Some(b) = r.next_batch()? {
                    n += b.num_rows() as u64;
                    rows.push(b);
                }
            }
        }
    }
    Ok((n, rows))
}

/// Sends up to `limit` rows (0 = all); true when the result is exhausted.
fn fetch(s: &mut Stream, limit: u64, out: &Out) -> Result<bool, SqlError> {
    let ncols = s.cols.len() as i16;
    let mut budget = if limit == 0 { u64::MAX } else { limit };
    loop {
        if s.queue.is_empty() {
            if let Some(e) = s.failed.take() {
                return Err(e);
            }
            match s.result.as_mut() {
                Some(r) => match r.next_batch()? {
                    Some(b) => {
                        let b = s.keep(b)?;
                        s.queue.push_back(b)
                    }
                    None => {
                        s.result = None;
                        return Ok(true);
                    }
                },
                None => return Ok(true),
            }
        }
        if budget == 0 {
            // The limit is reached and rows remain: suspend.
            return Ok(false);
        }
        let batch = s.queue.front().unwrap();
        let avail = batch.num_rows() - s.offset;
        let take = (avail as u64).min(budget) as usize;
        let mut rows = Vec::with_capacity(take);
        types::encode_rows(batch, &s.cols, s.offset, s.offset + take, &mut rows)?;
        if !out.send(Reply::Rows(rows, ncols)) {
            return Err(SqlError::new(
                SqlState::CONNECTION_FAILURE,
                "client went away",
            ));
        }
        s.sent += take as u64;
        budget -= take as u64;
        s.offset += take;
        if s.offset >= batch.num_rows() {
            s.queue.pop_front();
            s.offset = 0;
        }
    }
}
