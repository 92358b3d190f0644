//! A running statement's result, read one DuckDB chunk at a time as Arrow record batches, so
//! results stream.

use std::os::raw::c_char;

use duckdb::arrow::array::{Array, Int64Array, RecordBatch, StructArray};
use duckdb::arrow::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use duckdb::ffi;

use super::duck::{borrow_c_string, Column};
use super::error::EngineError;
use super::values::logical_to_duck;

/// A running statement's result, read chunk by chunk.
pub struct QueryResult {
    raw: ffi::duckdb_result,
    arrow_options: ffi::duckdb_arrow_options,
    schema: FFI_ArrowSchema,
    pub columns: Vec<Column>,
    /// True when the statement returns rows; false for a row count or nothing.
    pub returns_rows: bool,
    pub returns_count: bool,
    done: bool,
}

// SAFETY: owned by the session worker thread with its connection.
unsafe impl Send for QueryResult {}

impl Drop for QueryResult {
    fn drop(&mut self) {
        unsafe {
            ffi::duckdb_destroy_arrow_options(&mut self.arrow_options);
            ffi::duckdb_destroy_result(&mut self.raw);
        }
    }
}

impl QueryResult {
    pub(super) unsafe fn new(mut raw: ffi::duckdb_result) -> Result<Self, EngineError> {
        unsafe {
            let rtype = ffi::duckdb_result_return_type(raw) as u32;
            let n = ffi::duckdb_column_count(&mut raw);
            let mut columns = Vec::with_capacity(n as usize);
            let mut types = Vec::with_capacity(n as usize);
            let mut names: Vec<*const c_char> = Vec::with_capacity(n as usize);
            for i in 0..n {
                let name_ptr = ffi::duckdb_column_name(&mut raw, i);
                names.push(name_ptr);
                let lt = ffi::duckdb_column_logical_type(&mut raw, i);
                types.push(lt);
                columns.push(Column {
                    name: borrow_c_string(name_ptr).unwrap_or_default(),
                    ty: logical_to_duck(lt),
                });
            }
            let arrow_options = ffi::duckdb_result_get_arrow_options(&mut raw);
            let mut schema = FFI_ArrowSchema::empty();
            let err = ffi::duckdb_to_arrow_schema(
                arrow_options,
                types.as_mut_ptr(),
                names.as_mut_ptr(),
                n,
                &mut schema as *mut _ as *mut ffi::ArrowSchema,
            );
            for mut lt in types {
                ffi::duckdb_destroy_logical_type(&mut lt);
            }
            let r = QueryResult {
                raw,
                arrow_options,
                schema,
                columns,
                returns_rows: rtype == 3,
                returns_count: rtype == 1,
                done: false,
            };
            if !err.is_null() {
                let msg = borrow_c_string(ffi::duckdb_error_data_message(err))
                    .unwrap_or_else(|| "Arrow schema conversion failed".into());
                let mut err = err;
                ffi::duckdb_destroy_error_data(&mut err);
                return Err(EngineError::internal(msg));
            }
            Ok(r)
        }
    }

    /// The next batch of rows, or None at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, EngineError> {
        if self.done {
            return Ok(None);
        }
        unsafe {
            let mut chunk = ffi::duckdb_fetch_chunk(self.raw);
            if chunk.is_null() || ffi::duckdb_data_chunk_get_size(chunk) == 0 {
                if !chunk.is_null() {
                    ffi::duckdb_destroy_data_chunk(&mut chunk);
                }
                self.done = true;
                if let Some(msg) = borrow_c_string(ffi::duckdb_result_error(&mut self.raw)) {
                    let kind = ffi::duckdb_result_error_type(&mut self.raw) as u32;
                    return Err(EngineError::new(msg, kind));
                }
                return Ok(None);
            }
            let mut array = FFI_ArrowArray::empty();
            let err = ffi::duckdb_data_chunk_to_arrow(
                self.arrow_options,
                chunk,
                &mut array as *mut _ as *mut ffi::ArrowArray,
            );
            ffi::duckdb_destroy_data_chunk(&mut chunk);
            if !err.is_null() {
                let msg = borrow_c_string(ffi::duckdb_error_data_message(err))
                    .unwrap_or_else(|| "Arrow conversion failed".into());
                let mut err = err;
                ffi::duckdb_destroy_error_data(&mut err);
                return Err(EngineError::internal(msg));
            }
            let data = from_ffi(array, &self.schema)
                .map_err(|e| EngineError::internal(format!("Arrow import failed: {e}")))?;
            Ok(Some(RecordBatch::from(StructArray::from(data))))
        }
    }

    /// For INSERT/UPDATE/DELETE without RETURNING: the number of rows changed.
    pub fn drain_changed_rows(&mut self) -> Result<u64, EngineError> {
        let mut n = 0u64;
        let counts = self.returns_count;
        while let Some(b) = self.next_batch()? {
            if counts && b.num_columns() == 1 {
                if let Some(a) = b.column(0).as_any().downcast_ref::<Int64Array>() {
                    n += a.iter().flatten().map(|v| v as u64).sum::<u64>();
                }
            }
        }
        Ok(n)
    }
}
