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

use super::reply::{Reply, SqlError};
use super::worker::Worker;
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

impl Worker {
    pub(crate) fn copy_from_start(
        &mut self,
        table: &Name,
        columns: &Option<Vec<String>>,
        options: &CopyOptions,
        out: &Out,
    ) -> Result<(), SqlError> {
        // Checks the table exists and counts its columns before any data.
        let probe = self
            .conn
            .prepare(&format!("SELECT * FROM {} LIMIT 0", table.quoted()))?;
        let ncols = columns
            .as_ref()
            .map(|c| c.len())
            .unwrap_or(probe.columns.len());
        drop(probe);
        // An unguessable name: other sessions' statements may read the spool directory.
        let path = self
            .shared
            .spool
            .join(format!("copy-{:032x}.csv", rand::random::<u128>()));
        let file = BufWriter::with_capacity(1 << 20, File::create(&path).map_err(io_err)?);
        self.copy_in = Some(CopyIn {
            path,
            file,
            partial: Vec::new(),
            table: table.clone(),
            columns: columns.clone(),
            options: options.clone(),
        });
        out.send(Reply::CopyInResponse(ncols as i16));
        Ok(())
    }

    pub fn copy_data(&mut self, data: &[u8], out: &Out) {
        let Some(c) = self.copy_in.as_mut() else {
            return;
        };
        let r = (|| {
            if c.options.csv {
                return c.file.write_all(data).map_err(io_err);
            }
            c.partial.extend_from_slice(data);
            let mut csv = Vec::with_capacity(c.partial.len() + 64);
            let mut start = 0;
            while let Some(nl) = c.partial[start..].iter().position(|b| *b == b'\n') {
                let mut line = &c.partial[start..start + nl];
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                if line != b"\\." {
                    text_line_to_csv(line, &c.options, &mut csv);
                }
                start += nl + 1;
            }
            c.partial.drain(..start);
            c.file.write_all(&csv).map_err(io_err)
        })();
        if let Err(e) = r {
            self.copy_in = None;
            self.on_error();
            out.send(Reply::Error(e));
        }
    }

    pub fn copy_done(&mut self, out: &Out) {
        let Some(mut c) = self.copy_in.take() else {
            return;
        };
        let r = (|| {
            if !c.options.csv && !c.partial.is_empty() && c.partial != b"\\." {
                let mut csv = Vec::new();
                text_line_to_csv(&c.partial, &c.options, &mut csv);
                c.file.write_all(&csv).map_err(io_err)?;
            }
            c.file.flush().map_err(io_err)?;
            let cols = c
                .columns
                .as_ref()
                .map(|cs| {
                    format!(
                        " ({})",
                        cs.iter()
                            .map(|x| quote_ident(x))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .unwrap_or_default();
            let o = &c.options;
            let lit = |b: u8| (b as char).to_string().replace('\'', "''");
            let opts = if o.csv {
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
            };
            let sql = format!(
                "COPY {}{cols} FROM '{}' ({opts})",
                c.table.quoted(),
                c.path.display().to_string().replace('\'', "''")
            );
            Ok::<u64, SqlError>(self.conn.exec(&sql)?)
        })();
        drop(c);
        match r {
            Ok(n) => {
                out.send(Reply::Complete(format!("COPY {n}")));
            }
            Err(e) => {
                self.on_error();
                out.send(Reply::Error(e));
            }
        }
        out.send(Reply::Status(self.status()));
    }

    pub fn copy_fail(&mut self, message: &str, out: &Out) {
        self.copy_in = None;
        self.on_error();
        out.send(Reply::Error(SqlError::new(
            SqlState::QUERY_CANCELED,
            format!("COPY from stdin failed: {message}"),
        )));
        out.send(Reply::Status(self.status()));
    }

    /// Runs `source` and sends its rows as COPY data; returns the row count.
    pub(crate) fn copy_to(
        &mut self,
        source: &str,
        o: &CopyOptions,
        out: &Out,
    ) -> Result<u64, SqlError> {
        let mut r = self.conn.query(source)?;
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
}
