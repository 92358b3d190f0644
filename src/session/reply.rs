//! What a session says back to its client, independent of the wire
//! library: the `wire` layer turns each reply into protocol messages.

use crate::sqlstate::SqlState;
use bytes::BytesMut;

use crate::types::Format;

/// One result column as RowDescription describes it.
#[derive(Clone, Debug)]
pub struct FieldDesc {
    pub name: String,
    pub oid: u32,
    pub len: i16,
    pub typmod: i32,
    pub format: Format,
}

/// An error or notice with its SQLSTATE.
#[derive(Clone, Debug)]
pub struct SqlError {
    pub code: SqlState,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl SqlError {
    pub fn new(code: SqlState, message: impl Into<String>) -> Self {
        SqlError {
            code,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }
}

impl From<crate::engine::EngineError> for SqlError {
    fn from(e: crate::engine::EngineError) -> Self {
        let code = e.sqlstate();
        if code == SqlState::QUERY_CANCELED {
            return SqlError::new(code, "canceling statement due to user request");
        }
        // PostgreSQL messages are one line; DuckDB's hints and the
        // LINE/caret excerpt go to DETAIL.
        let msg = e.client_message();
        match msg.split_once('\n') {
            Some((first, rest)) if !rest.trim().is_empty() => {
                let mut err = SqlError::new(code, first.trim());
                err.detail = Some(rest.trim().to_string());
                err
            }
            _ => SqlError::new(code, msg),
        }
    }
}

impl From<crate::types::TypeError> for SqlError {
    fn from(e: crate::types::TypeError) -> Self {
        SqlError::new(e.sqlstate(), e.to_string())
    }
}

/// Transaction status as ReadyForQuery reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStatus {
    Idle,
    InBlock,
    Failed,
}

#[derive(Debug)]
pub enum Reply {
    RowDescription(Vec<FieldDesc>),
    ParameterDescription(Vec<u32>),
    NoData,
    /// DataRow bodies (length-prefixed fields) of `fields` columns each.
    Rows(Vec<BytesMut>, i16),
    Complete(String),
    Suspended,
    EmptyQuery,
    Notice(SqlError),
    Warning(SqlError),
    ParameterStatus(String, String),
    Error(SqlError),
    ParseComplete,
    BindComplete,
    CloseComplete,
    Ready(TxStatus),
    /// The transaction status changed without a ReadyForQuery (COPY done:
    /// the protocol layer sends that itself).
    Status(TxStatus),
    /// COPY FROM STDIN starts: the table's column count and whether the data is binary.
    CopyInResponse {
        columns: i16,
        binary: bool,
    },
    CopyOutResponse(i16),
    CopyData(Vec<u8>),
    CopyDone,
}

/// A data row of one text column, as [`Reply::Rows`] carries it (the value's length, then
/// its bytes).
pub fn text_row(v: &str) -> BytesMut {
    let mut row = BytesMut::with_capacity(4 + v.len());
    row.extend_from_slice(&(v.len() as i32).to_be_bytes());
    row.extend_from_slice(v.as_bytes());
    row
}
