//! Where DuckDB spills what does not fit in memory. The server's DuckDB instance is an
//! in-memory one with the user's file attached, so DuckDB's own default would be `.tmp` in
//! whatever directory the server was started from: files of the database's contents written
//! where nobody looks for them, and never cleaned up after a crash.

/// Beside a database file, `<file>.tmp` (DuckDB's own choice for a file it opens itself); for
/// `:memory:`, a directory of this process under the system's temporary directory.
pub fn directory(path: &str) -> String {
    if path == ":memory:" || path.is_empty() {
        let dir = std::env::temp_dir().join(format!("duckmv-spill-{}", std::process::id()));
        dir.display().to_string()
    } else {
        format!("{path}.tmp")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Database;
    use duckdb::arrow::array::{Array, StringArray};

    fn text(conn: &crate::engine::Conn, sql: &str) -> String {
        let mut r = conn.query(sql).unwrap();
        let batch = r.next_batch().unwrap().unwrap();
        let col = batch.column(0);
        let col = col.as_any().downcast_ref::<StringArray>().unwrap();
        col.value(0).to_string()
    }

    // DuckDB is told to spill beside the database file, and a sort too large for the memory
    // limit spills there: nothing appears in the server's working directory.
    #[test]
    fn spills_go_beside_the_database_file() {
        let dir = std::env::temp_dir().join(format!("duckmv-spill-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("db.duckdb");
        let db = Database::open(file.to_str().unwrap()).unwrap();
        let conn = db.connect().unwrap();
        assert_eq!(
            text(&conn, "SELECT current_setting('temp_directory')"),
            format!("{}.tmp", file.display())
        );
        conn.exec("SET memory_limit = '100MB'").unwrap();
        conn.exec("SET threads = 1").unwrap();
        let groups = text(
            &conn,
            "SELECT count(*)::VARCHAR FROM (SELECT h, count(*) FROM (SELECT md5(i::VARCHAR) AS h \
             FROM range(3000000) t(i)) GROUP BY h)",
        );
        assert_eq!(groups, "3000000");
        let spilled = std::path::Path::new(&format!("{}.tmp", file.display())).exists();
        assert!(spilled, "the aggregate did not spill beside the file");
        drop(conn);
        drop(db);
        assert!(
            !std::path::Path::new(".tmp").exists(),
            "spilled into the cwd"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let memory = std::env::temp_dir().join(format!("duckmv-spill-{}", std::process::id()));
        assert_eq!(directory(":memory:"), memory.display().to_string());
    }
}
