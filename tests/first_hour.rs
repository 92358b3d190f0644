//! What a new user does first: start the server exactly as README.md says, on its embedded
//! default, and on whatever database file name they pick.

mod common;

use common::TestServer;

/// `cargo run --release` runs the server binary with no flags: loopback port 5433 and
/// `./duckmv.duckdb` in the working directory. (Fails with the server's log if port 5433 is
/// taken on this machine.)
#[test]
fn starts_with_no_flags_in_an_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_exact(dir.path(), &[]);
    assert_eq!(server.addr.to_string(), "127.0.0.1:5433");
    let out = server.psql_ok(
        &[
            "-At",
            "-c",
            "select 42",
            "-c",
            "select count(*) from duckmv.views",
        ],
        "",
    );
    assert_eq!(out, "42\n0\n");
    assert!(dir.path().join("duckmv.duckdb").exists());
    server.terminate();
}

/// Every file name works, including those DuckDB would turn into a catalog named like a
/// schema (`duckmv`, `main`), in-memory, and paths with spaces and dashes; data survives a
/// restart on the same file.
#[test]
fn starts_on_any_database_file_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub dir")).unwrap();
    for name in [
        "duckmv.duckdb",
        "main.duckdb",
        "db.duckdb",
        "_duckmv.duckdb",
        "pg_catalog.duckdb",
        "information_schema.duckdb",
        "with space.duckdb",
        "a-dash.duckdb",
        "sub dir/x-y z.db",
        ":memory:",
    ] {
        let args = ["--listen", "127.0.0.1:0", "--database", name];
        let server = TestServer::start_exact(dir.path(), &args);
        let setup = "create table t (k int, v int);
             insert into t values (1, 10), (1, 5), (2, 7);
             create materialized view mv as select k, sum(v) as s from t group by k;
             insert into t values (2, 1);
             refresh materialized view mv;";
        server.psql_ok(&["-q", "-v", "ON_ERROR_STOP=1", "-c", setup], "");
        let check = "select k, s from mv order by k";
        assert_eq!(
            server.psql_ok(&["-At", "-c", check], ""),
            "1|15\n2|8\n",
            "database {name:?}"
        );
        // The client's database name, not the file's, is the current database.
        assert_eq!(
            server.psql_ok(&["-At", "-c", "select current_database()"], ""),
            "test\n",
            "database {name:?}"
        );
        server.terminate();
        if name == ":memory:" {
            continue;
        }
        assert!(dir.path().join(name).exists(), "{name:?} was not created");
        let again = TestServer::start_exact(dir.path(), &args);
        assert_eq!(
            again.psql_ok(&["-At", "-c", check], ""),
            "1|15\n2|8\n",
            "after restart on {name:?}"
        );
        again.terminate();
    }
}
