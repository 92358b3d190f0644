//! COPY FROM STDIN and COPY TO STDOUT.
//!
//! Incoming data is streamed to a temporary CSV file (PostgreSQL's text
//! format converted on the fly) and loaded with DuckDB's own COPY, so memory
//! stays flat whatever the load's size, and the load fires the capture
//! triggers of materialized views like any other insert.

use crate::sqlstate::SqlState;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use super::context::Context;
use super::copy_error;
use super::reply::{Reply, SqlError};
use super::Out;
use crate::sql::copy::{csv_field, text_field, text_line_to_csv, CopyOptions};
use crate::sql::{quote_ident, Name};
use crate::types::{self, Format};

pub struct CopyIn {
    path: PathBuf,
    file: BufWriter<File>,
    partial: Vec<u8>,
    table: Name,
    columns: Option<Vec<String>>,
    options: CopyOptions,
    /// Loaded by INSERTs of bound parameters (`copy_insert`), spooled as the client sent it.
    by_insert: bool,
    /// The columns loaded, in order.
    names: Vec<String>,
    /// Text-format lines converted so far, and the first of them of the wrong width: the load
    /// fails with PostgreSQL's message for it.
    line: u64,
    bad: Option<SqlError>,
    /// Started by a simple query, whose last statement it is: its end is the query string's
    /// (an extended-protocol COPY ends at the client's Sync).
    pub ends_query: bool,
}

impl Drop for CopyIn {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn io_err(e: std::io::Error) -> SqlError {
    SqlError::new(
        SqlState::IO_ERROR,
        format!("could not write COPY data: {e}"),
    )
}

impl CopyIn {
    /// Starts COPY … FROM STDIN into `table`: checks the table before any data comes, opens the
    /// spool file and tells the client to send.
    pub fn start(
        ctx: &Context,
        table: &Name,
        columns: &Option<Vec<String>>,
        options: &CopyOptions,
        out: &Out,
    ) -> Result<CopyIn, SqlError> {
        // Checks the table and columns exist and learns their types before any data.
        let cols = columns.as_deref().map_or_else(|| "*".into(), quoted_list);
        let probe = ctx
            .conn
            .prepare(&format!("SELECT {cols} FROM {} LIMIT 0", table.quoted()))?;
        let names: Vec<String> = probe.columns.iter().map(|c| c.name.clone()).collect();
        let types: Vec<_> = probe.columns.iter().map(|c| c.ty.clone()).collect();
        let by_insert =
            options.binary || (!options.csv && super::copy_insert::reads_text_by_insert(&types));
        drop(probe);
        // An unguessable name: other sessions' statements may read the spool directory.
        let path = ctx
            .shared
            .spool
            .join(format!("copy-{:032x}.csv", rand::random::<u128>()));
        let file = BufWriter::with_capacity(1 << 20, File::create(&path).map_err(io_err)?);
        out.send(Reply::CopyInResponse {
            columns: names.len() as i16,
            binary: options.binary,
        });
        Ok(CopyIn {
            path,
            file,
            partial: Vec::new(),
            table: table.clone(),
            columns: columns.clone(),
            options: options.clone(),
            by_insert,
            names,
            line: 0,
            bad: None,
            ends_query: false,
        })
    }

    /// One CopyData message: spooled as CSV (text-format lines converted as they complete).
    pub fn write(&mut self, data: &[u8]) -> Result<(), SqlError> {
        if self.options.csv || self.by_insert {
            return self.file.write_all(data).map_err(io_err);
        }
        let mut pending = std::mem::take(&mut self.partial);
        pending.extend_from_slice(data);
        let mut csv = Vec::with_capacity(pending.len() + 64);
        let mut start = 0;
        while let Some(nl) = pending[start..].iter().position(|b| *b == b'\n') {
            let mut line = &pending[start..start + nl];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line != b"\\." {
                self.convert(line, &mut csv);
            }
            start += nl + 1;
        }
        pending.drain(..start);
        self.partial = pending;
        self.file.write_all(&csv).map_err(io_err)
    }

    /// One text-format line as CSV, its width checked against the columns.
    fn convert(&mut self, line: &[u8], csv: &mut Vec<u8>) {
        self.line += 1;
        let fields = text_line_to_csv(line, &self.options, csv);
        if self.bad.is_none() {
            self.bad = copy_error::field_count(fields, &self.names, self.line, &self.table.name);
        }
    }

    /// The table it loads, lower-cased as statements' write targets are.
    pub fn target(&self) -> String {
        self.table.name.to_ascii_lowercase()
    }

    /// CopyDone: loads the spooled rows with DuckDB's COPY, or with INSERTs (`copy_insert`);
    /// returns the row count.
    pub fn finish(mut self, ctx: &Context) -> Result<u64, SqlError> {
        if self.by_insert {
            self.file.flush().map_err(io_err)?;
            let text = (!self.options.binary).then_some(&self.options);
            return super::copy_insert::load(
                &ctx.conn,
                &self.table,
                &self.columns,
                &self.names,
                &self.path,
                text,
            );
        }
        if !self.options.csv && !self.partial.is_empty() && self.partial != b"\\." {
            let mut csv = Vec::new();
            let partial = std::mem::take(&mut self.partial);
            self.convert(&partial, &mut csv);
            self.file.write_all(&csv).map_err(io_err)?;
        }
        if let Some(e) = self.bad.take() {
            return Err(e);
        }
        self.file.flush().map_err(io_err)?;
        let cols = column_list(&self.columns);
        let sql = format!(
            "COPY {}{cols} FROM '{}' ({})",
            self.table.quoted(),
            self.path.display().to_string().replace('\'', "''"),
            duckdb_options(&self.options)
        );
        ctx.conn
            .exec(&sql)
            .map_err(|e| copy_error::load(e, &self.path, &self.names, &self.table.name))
    }
}

/// `"a", "b"`: the columns quoted for SQL.
fn quoted_list(columns: &[String]) -> String {
    let names: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    names.join(", ")
}

/// ` ("a", "b")` after a table name for a COPY's column list; empty without one.
pub(super) fn column_list(columns: &Option<Vec<String>>) -> String {
    columns
        .as_deref()
        .map(|cs| format!(" ({})", quoted_list(cs)))
        .unwrap_or_default()
}

/// DuckDB's COPY options for the spooled file: the client's CSV options, or those of the CSV
/// the text format was converted to.
fn duckdb_options(o: &CopyOptions) -> String {
    let lit = |b: u8| (b as char).to_string().replace('\'', "''");
    if o.csv {
        format!(
            "FORMAT csv, HEADER {}, DELIMITER '{}', QUOTE '{}', ESCAPE '{}', NULL '{}', allow_quoted_nulls false",
            o.header,
            lit(o.delimiter),
            lit(o.quote),
            lit(o.escape),
            o.null.replace('\'', "''")
        )
    } else {
        "FORMAT csv, HEADER false, DELIMITER ',', QUOTE '\"', ESCAPE '\"', NULL '', allow_quoted_nulls false".into()
    }
}

/// Runs `source` and sends its rows as COPY data; returns the row count.
pub fn copy_to(ctx: &Context, source: &str, o: &CopyOptions, out: &Out) -> Result<u64, SqlError> {
    let mut r = ctx.conn.query(source)?;
    let ncols = r.columns.len();
    out.send(Reply::CopyOutResponse(ncols as i16));
    if o.csv && o.header {
        let mut line = Vec::new();
        for (i, c) in r.columns.iter().enumerate() {
            if i > 0 {
                line.push(o.delimiter);
            }
            csv_field(Some(c.name.as_bytes()), o, &mut line);
        }
        line.push(b'\n');
        out.send(Reply::CopyData(line));
    }
    let cols: Vec<_> = r
        .columns
        .iter()
        .map(|c| (c.ty.clone(), Format::Text))
        .collect();
    let mut n = 0u64;
    while let Some(batch) = r.next_batch()? {
        let mut rows = Vec::with_capacity(batch.num_rows());
        types::encode_rows(&batch, &cols, 0, batch.num_rows(), &mut rows)?;
        // One CopyData message per row, as PostgreSQL sends them: psycopg's
        // `Copy.rows()` parses each message as exactly one row.
        for row in &rows {
            let mut buf = Vec::with_capacity(row.len() + 1);
            let mut p = 0;
            for i in 0..ncols {
                if i > 0 {
                    buf.push(o.delimiter);
                }
                let len = i32::from_be_bytes(row[p..p + 4].try_into().unwrap());
                p += 4;
                let v = if len < 0 {
                    None
                } else {
                    let v = &row[p..p + len as usize];
                    p += len as usize;
                    Some(v)
                };
                if o.csv {
                    csv_field(v, o, &mut buf);
                } else {
                    text_field(v, o, &mut buf);
                }
            }
            buf.push(b'\n');
            if !out.send(Reply::CopyData(buf)) {
                return Err(SqlError::new(
                    SqlState::CONNECTION_FAILURE,
                    "client went away",
                ));
            }
        }
        n += rows.len() as u64;
    }
    out.send(Reply::CopyDone);
    Ok(n)
}
