//! psql against duckmv: the simple query protocol as a person at a terminal
//! sees it (printed results, command tags, errors with SQLSTATE).

mod common;

use common::TestServer;

/// Non-empty stdout lines.
fn lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// The SQLSTATEs of the `ERROR:  XXXXX: message` lines psql prints with
/// VERBOSITY verbose, in order.
fn error_codes(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find("ERROR:")? + "ERROR:".len()..];
            let code = rest.trim_start().split(':').next()?;
            let ok = code.len() == 5 && code.chars().all(|c| c.is_ascii_alphanumeric());
            Some(if ok {
                code.to_owned()
            } else {
                format!("no code in: {l}")
            })
        })
        .collect()
}

#[test]
fn select_42_prints_42() {
    let server = TestServer::start();
    assert_eq!(server.psql_ok(&["-At", "-c", "select 42"], ""), "42\n");
    // The aligned default output, as the README shows it.
    let table = server.psql_ok(&["-c", "select 42"], "");
    assert!(table.contains("42") && table.contains("(1 row)"), "{table}");
}

#[test]
fn any_user_and_database_name_is_accepted() {
    let server = TestServer::start();
    // psql takes the last -U / -d given.
    let out = server.psql_ok(
        &["-U", "alice", "-d", "some_db", "-At", "-c", "select 1"],
        "",
    );
    assert_eq!(out, "1\n");
}

#[test]
fn multi_statement_message_runs_in_order() {
    let server = TestServer::start();
    server.psql_ok(&["-c", "create table t(a int)"], "");
    // One Query message; psql 15 prints the result of every statement.
    let out = server.psql_ok(
        &[
            "-Atq",
            "-c",
            "insert into t values (1); select count(*) from t; \
             insert into t values (2); select count(*) from t",
        ],
        "",
    );
    assert_eq!(lines(&out), ["1", "2"]);
}

#[test]
fn failing_statement_skips_the_rest_and_rolls_back_the_message() {
    let server = TestServer::start();
    server.psql_ok(&["-c", "create table t(a int)"], "");
    let out = server.psql(
        &[
            "-v",
            "VERBOSITY=verbose",
            "-c",
            "insert into t values (1); insert into no_such_table values (1); \
             insert into t values (2)",
        ],
        "",
    );
    assert!(
        !out.status.success(),
        "psql -c must fail when a statement fails"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(error_codes(&stderr), ["42P01"], "{stderr}");
    // Neither the earlier insert nor the later one left a row.
    assert_eq!(
        server.psql_ok(&["-At", "-c", "select count(*) from t"], ""),
        "0\n"
    );
}

#[test]
fn begin_commit_rollback_and_their_tags() {
    let server = TestServer::start();
    let out = server.psql_ok(
        &["-At"],
        "create table t(a int);\n\
         begin;\n\
         insert into t values (1), (2), (3);\n\
         update t set a = a + 10 where a >= 2;\n\
         delete from t where a = 12;\n\
         commit;\n\
         start transaction;\n\
         insert into t values (100);\n\
         rollback;\n\
         select a from t order by a;\n",
    );
    assert_eq!(
        lines(&out),
        [
            "CREATE TABLE",
            "BEGIN",
            "INSERT 0 3",
            "UPDATE 2",
            "DELETE 1",
            "COMMIT",
            "START TRANSACTION",
            "INSERT 0 1",
            "ROLLBACK",
            "1",
            "13",
        ]
    );
}

#[test]
fn failed_transaction_refuses_statements_until_rollback() {
    let server = TestServer::start();
    let out = server.psql(
        &["-At"],
        "\\set VERBOSITY verbose\n\
         create table t(a int);\n\
         begin;\n\
         insert into t values (1);\n\
         select * from no_such_table;\n\
         insert into t values (2);\n\
         select 1;\n\
         commit;\n\
         select count(*) from t;\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        error_codes(&stderr),
        ["42P01", "25P02", "25P02"],
        "{stderr}"
    );
    // COMMIT of the failed transaction answers ROLLBACK; nothing was kept.
    assert_eq!(
        lines(&stdout),
        ["CREATE TABLE", "BEGIN", "INSERT 0 1", "ROLLBACK", "0"],
        "{stderr}"
    );
}

#[test]
fn errors_carry_sqlstate_and_session_survives_each() {
    let server = TestServer::start();
    // (statement, expected SQLSTATE, a word the message must name)
    let cases = [
        ("selec 1", "42601", "selec"),
        ("select * from no_such_table", "42P01", "no_such_table"),
        ("select no_such_column from u", "42703", "no_such_column"),
        ("create table u(a int)", "42P07", "u"),
        ("insert into u values (1, 5)", "23505", ""),
        ("insert into u values (2, null)", "23502", ""),
        // DuckDB 2.0 raises for integer division and modulo by zero (`/`
        // is float division and returns infinity).
        ("select 7 // 0", "22012", ""),
        ("select 7 % 0", "22012", ""),
    ];
    let mut script =
        String::from("\\set VERBOSITY verbose\ncreate table u(id int primary key, v int not null);\ninsert into u values (1, 1);\n");
    for (i, (sql, _, _)) in cases.iter().enumerate() {
        script.push_str(&format!("{sql};\nselect 'alive {i}';\n"));
    }
    let out = server.psql(&["-At"], &script);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    let expected: Vec<&str> = cases.iter().map(|c| c.1).collect();
    assert_eq!(error_codes(&stderr), expected, "stderr:\n{stderr}");

    let error_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("ERROR:")).collect();
    for ((sql, _, word), line) in cases.iter().zip(&error_lines) {
        assert!(
            line.contains(word),
            "message for `{sql}` should name `{word}`: {line}"
        );
    }
    for (i, case) in cases.iter().enumerate() {
        assert!(
            stdout.lines().any(|l| l == format!("alive {i}")),
            "session did not survive `{}`:\n{stdout}\n{stderr}",
            case.0
        );
    }
}

#[test]
fn a_time_zone_other_than_utc_is_kept_for_show_with_a_notice() {
    let server = TestServer::start();
    let out = server.psql(
        &["-Atq"],
        "SET TimeZone = 'Europe/Paris';\nSHOW TimeZone;\nSET TIME ZONE 'UTC';\nSELECT 1;\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    // The setting is kept (SHOW and the drivers' ParameterStatus report it) and the session
    // is told that times stay UTC, once: setting UTC back says nothing.
    assert_eq!(lines(&stdout), ["Europe/Paris", "1"], "{stdout}");
    assert_eq!(stderr.matches("NOTICE:").count(), 1, "{stderr}");
    assert!(
        stderr.contains("NOTICE:  duckmv computes timestamptz values in UTC"),
        "{stderr}"
    );
}
