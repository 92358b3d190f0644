//! COPY FROM STDIN loaded by INSERTs of bound parameters, for data DuckDB's CSV reader would
//! misread: PostgreSQL's binary format (asyncpg's `copy_records_to_table`, psycopg's and
//! tokio-postgres's binary copies), and text format into columns whose PostgreSQL text form
//! DuckDB reads differently (bytea's `\x0001ff` hex form, `{1,2}` arrays, composite values).
//!
//! The client's bytes are spooled as they come. At CopyDone the rows are read back and inserted
//! by a prepared multi-row INSERT: each field is decoded as a parameter of its column's type in
//! the data's format, so COPY reads exactly what a bound parameter would, and the rows are
//! captured for views like any insert, in the COPY's transaction.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::engine::{Conn, Prepared};
use crate::sql::copy::{text_fields, CopyOptions};
use crate::sql::Name;
use crate::sqlstate::SqlState;
use crate::types::{decode_param, DuckType, Format};

use super::reply::SqlError;

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// Rows per INSERT: enough to amortize a statement, few enough parameters to bind quickly.
const BATCH_VALUES: usize = 4096;

fn bad_format(msg: impl Into<String>) -> SqlError {
    SqlError::new(SqlState::BAD_COPY_FILE_FORMAT, msg)
}

/// Whether text-format data for columns of these types goes through `load`: DuckDB's CSV
/// reader takes `\x…` escapes per byte and `[…]` lists, not PostgreSQL's forms.
pub fn reads_text_by_insert(types: &[DuckType]) -> bool {
    types.iter().any(|t| {
        matches!(
            t,
            DuckType::Blob
                | DuckType::List(_)
                | DuckType::Array(..)
                | DuckType::Struct(_)
                | DuckType::Map(..)
                | DuckType::Union(_)
        )
    })
}

/// Loads the spooled data at `path` (binary, or text with `text`'s options) into `table`'s
/// columns called `names` (`columns`, or all of them); returns the row count.
pub fn load(
    conn: &Conn,
    table: &Name,
    columns: &Option<Vec<String>>,
    names: &[String],
    path: &Path,
    text: Option<&CopyOptions>,
) -> Result<u64, SqlError> {
    let ncols = names.len();
    let file =
        File::open(path).map_err(|e| bad_format(format!("could not read COPY data: {e}")))?;
    let reader = BufReader::with_capacity(1 << 20, file);
    let into = Target {
        conn,
        table,
        columns,
        ncols,
    };
    match text {
        None => {
            let mut tuples = Tuples::open(reader)?;
            into.insert_all(Format::Binary, || tuples.next(ncols))
        }
        Some(o) => {
            let mut lines = TextRows {
                r: reader,
                o,
                names,
                table: &table.name,
                line: 0,
                done: false,
            };
            into.insert_all(Format::Text, || lines.next())
        }
    }
}

struct Target<'a> {
    conn: &'a Conn,
    table: &'a Name,
    columns: &'a Option<Vec<String>>,
    ncols: usize,
}

type Fields = Vec<Option<Vec<u8>>>;

impl Target<'_> {
    /// Inserts every row `next` yields, in batches.
    fn insert_all(
        &self,
        format: Format,
        mut next: impl FnMut() -> Result<Option<Fields>, SqlError>,
    ) -> Result<u64, SqlError> {
        let per_batch = (BATCH_VALUES / self.ncols.max(1)).max(1);
        let mut full: Option<Prepared> = None;
        let mut batch = Vec::with_capacity(per_batch);
        let mut loaded = 0;
        loop {
            let row = next()?;
            let end = row.is_none();
            batch.extend(row);
            if batch.len() == per_batch || (end && !batch.is_empty()) {
                let p = if batch.len() == per_batch {
                    match &mut full {
                        Some(p) => p,
                        None => full.insert(self.insert(per_batch)?),
                    }
                } else {
                    &mut self.insert(batch.len())?
                };
                loaded += self.run(p, &batch, format, loaded)?;
                batch.clear();
            }
            if end {
                return Ok(loaded);
            }
        }
    }

    /// `INSERT INTO table (columns) VALUES ($1, …), …` for `rows` rows.
    fn insert(&self, rows: usize) -> Result<Prepared, SqlError> {
        let ncols = self.ncols;
        let cols = super::copy::column_list(self.columns);
        let values: Vec<String> = (0..rows)
            .map(|r| {
                let params: Vec<String> =
                    (1..=ncols).map(|c| format!("${}", r * ncols + c)).collect();
                format!("({})", params.join(", "))
            })
            .collect();
        let sql = format!(
            "INSERT INTO {}{cols} VALUES {}",
            self.table.quoted(),
            values.join(", ")
        );
        Ok(self.conn.prepare(&sql)?)
    }

    /// Binds one batch's fields (decoded for the columns' types) and runs the INSERT.
    /// `before`: the rows loaded so far, for error messages.
    fn run(
        &self,
        p: &mut Prepared,
        batch: &[Fields],
        format: Format,
        before: u64,
    ) -> Result<u64, SqlError> {
        p.clear_bindings();
        for (r, row) in batch.iter().enumerate() {
            for (c, field) in row.iter().enumerate() {
                let i = r * self.ncols + c;
                let target = p.params.get(i).cloned().unwrap_or(DuckType::Null);
                let v = decode_param(field.as_deref(), format, 0, &target).map_err(|e| {
                    let e = SqlError::from(e);
                    let line = before + r as u64 + 1;
                    SqlError::new(
                        e.code,
                        format!("{} (COPY row {line}, column {})", e.message, c + 1),
                    )
                })?;
                p.bind(i + 1, &v)?;
            }
        }
        Ok(self.conn.execute(p)?.drain_changed_rows()?)
    }
}

/// The rows of COPY text-format data: a line each until the end or a `\.` line.
struct TextRows<'a, R> {
    r: R,
    o: &'a CopyOptions,
    names: &'a [String],
    table: &'a str,
    line: u64,
    done: bool,
}

impl<R: BufRead> TextRows<'_, R> {
    fn next(&mut self) -> Result<Option<Fields>, SqlError> {
        let mut buf = Vec::new();
        if self.done
            || self
                .r
                .read_until(b'\n', &mut buf)
                .map_err(|e| bad_format(format!("could not read COPY data: {e}")))?
                == 0
        {
            return Ok(None);
        }
        self.line += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if buf == b"\\." {
            self.done = true;
            return Ok(None);
        }
        let fields = text_fields(&buf, self.o);
        match super::copy_error::field_count(fields.len(), self.names, self.line, self.table) {
            Some(e) => Err(e),
            None => Ok(Some(fields)),
        }
    }
}

/// The tuples of a binary COPY stream.
struct Tuples<R> {
    r: R,
}

impl<R: Read> Tuples<R> {
    /// Reads the header: the signature, the flags (no OIDs) and the extension area (skipped).
    fn open(mut r: R) -> Result<Self, SqlError> {
        let mut sig = [0u8; 11];
        r.read_exact(&mut sig)
            .map_err(|_| bad_format("COPY file signature not recognized"))?;
        if &sig != SIGNATURE {
            return Err(bad_format("COPY file signature not recognized"));
        }
        let flags = read_i32(&mut r, "invalid COPY file header (missing flags)")?;
        if flags & (1 << 16) != 0 {
            return Err(SqlError::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "COPY data with OIDs is not supported",
            ));
        }
        if flags & !0xffff & !(1 << 16) != 0 {
            return Err(bad_format(
                "unrecognized critical flags in COPY file header",
            ));
        }
        let ext = read_i32(&mut r, "invalid COPY file header (missing length)")?;
        let ext =
            u64::try_from(ext).map_err(|_| bad_format("invalid COPY file header (bad length)"))?;
        let skipped = std::io::copy(&mut (&mut r).take(ext), &mut std::io::sink())
            .map_err(|_| bad_format("invalid COPY file header (wrong length)"))?;
        if skipped != ext {
            return Err(bad_format("invalid COPY file header (wrong length)"));
        }
        Ok(Tuples { r })
    }

    /// The next tuple's fields (None for NULL), or None at the trailer.
    fn next(&mut self, ncols: usize) -> Result<Option<Fields>, SqlError> {
        let mut count = [0u8; 2];
        self.r
            .read_exact(&mut count)
            .map_err(|_| bad_format("unexpected EOF in COPY data"))?;
        let count = i16::from_be_bytes(count);
        if count == -1 {
            return Ok(None);
        }
        if count < 0 || count as usize != ncols {
            return Err(bad_format(format!(
                "row field count is {count}, expected {ncols}"
            )));
        }
        let mut fields = Vec::with_capacity(ncols);
        for _ in 0..ncols {
            let len = read_i32(&mut self.r, "unexpected EOF in COPY data")?;
            if len == -1 {
                fields.push(None);
                continue;
            }
            let len = usize::try_from(len).map_err(|_| bad_format("invalid field size"))?;
            let mut v = Vec::new();
            let got = (&mut self.r)
                .take(len as u64)
                .read_to_end(&mut v)
                .map_err(|_| bad_format("unexpected EOF in COPY data"))?;
            if got != len {
                return Err(bad_format("unexpected EOF in COPY data"));
            }
            fields.push(Some(v));
        }
        Ok(Some(fields))
    }
}

fn read_i32(r: &mut impl Read, what: &str) -> Result<i32, SqlError> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).map_err(|_| bad_format(what))?;
    Ok(i32::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tuples: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        out.extend(0i32.to_be_bytes());
        out.extend(4i32.to_be_bytes());
        out.extend(b"skip");
        for t in tuples {
            out.extend((t.len() as i16).to_be_bytes());
            for f in *t {
                match f {
                    None => out.extend((-1i32).to_be_bytes()),
                    Some(v) => {
                        out.extend((v.len() as i32).to_be_bytes());
                        out.extend(*v);
                    }
                }
            }
        }
        out.extend((-1i16).to_be_bytes());
        out
    }

    #[test]
    fn reads_tuples_nulls_and_the_trailer() {
        let data = stream(&[&[Some(b"ab"), None], &[Some(b""), Some(&[0, 1])]]);
        let mut t = Tuples::open(&data[..]).unwrap();
        assert_eq!(t.next(2).unwrap(), Some(vec![Some(b"ab".to_vec()), None]));
        assert_eq!(
            t.next(2).unwrap(),
            Some(vec![Some(vec![]), Some(vec![0, 1])])
        );
        assert_eq!(t.next(2).unwrap(), None);
    }

    #[test]
    fn rejects_bad_signatures_counts_and_truncation() {
        fn e<T>(r: Result<T, SqlError>) -> Option<(SqlState, String)> {
            r.err().map(|e| (e.code, e.message))
        }
        let bad = e(Tuples::open(&b"PGCOPY\nxx\r\n\0\0\0\0\0\0\0\0\0"[..]).map(|_| ()));
        assert_eq!(bad.unwrap().0, SqlState::BAD_COPY_FILE_FORMAT);
        let data = stream(&[&[Some(b"x")]]);
        let mut t = Tuples::open(&data[..]).unwrap();
        let wrong = e(t.next(2)).unwrap();
        assert_eq!(wrong.1, "row field count is 1, expected 2");
        let data = stream(&[&[Some(b"xyz")]]);
        let cut = &data[..data.len() - 4];
        let mut t = Tuples::open(cut).unwrap();
        assert_eq!(e(t.next(1)).unwrap().1, "unexpected EOF in COPY data");
    }
}
