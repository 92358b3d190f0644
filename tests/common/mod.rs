//! Test harness shared by the integration tests: starts the real `duckmv`
//! binary on a free port with its own database and hands out clients.
//!
//! Every test talks to the server only through real clients (tokio-postgres,
//! psql, or the raw protocol client in `pgraw`), so the tests exercise exactly
//! what a user would see.

#![allow(dead_code)]

pub mod dml;
pub mod inprocess;
pub mod pgraw;
pub mod rng;
pub mod shapes;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long the server may take to print its `listening on` line. Generous
/// because the first start after a build may run while other tests load the
/// machine.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful shutdown (close sessions, checkpoint) may take.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
/// Upper bound for one psql invocation, so a hung server fails the test
/// instead of hanging the suite. `DUCKMV_TEST_PSQL_TIMEOUT_SECS` raises it
/// for a server that runs slower by design (`scripts/asan` sets it).
fn psql_timeout() -> Duration {
    let secs = std::env::var("DUCKMV_TEST_PSQL_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// A running `duckmv` process on a free loopback port.
pub struct TestServer {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub port: u16,
    pub pid: u32,
    pub db_path: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    // Held so the temporary database directory lives as long as the server.
    _dir: Option<TempDir>,
}

impl TestServer {
    /// Starts a server on a fresh database file in a temporary directory.
    pub fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("create temp dir");
        let db = dir.path().join("test.duckdb");
        Self::launch(&db, Config::Flags, Some(dir))
    }

    /// Starts a server on the given database path (a file or `:memory:`).
    /// The caller owns the path, so a second server can reopen it.
    pub fn start_with(db_path: impl AsRef<Path>) -> TestServer {
        Self::launch(db_path.as_ref(), Config::Flags, None)
    }

    /// Starts a server on the given database path with extra command-line flags.
    pub fn start_on_with_args(db_path: impl AsRef<Path>, args: &[&str]) -> TestServer {
        Self::launch(
            db_path.as_ref(),
            Config::Args(args.iter().map(|a| a.to_string()).collect()),
            None,
        )
    }

    /// Starts a server on a fresh database with extra command-line flags.
    pub fn start_with_args(args: &[&str]) -> TestServer {
        let dir = tempfile::tempdir().expect("create temp dir");
        let db = dir.path().join("test.duckdb");
        Self::launch(
            &db,
            Config::Args(args.iter().map(|a| a.to_string()).collect()),
            Some(dir),
        )
    }

    /// Starts a server on a fresh database with extra flags and environment variables (users and
    /// their passwords come from the environment or a file, never from flags).
    pub fn start_with_args_env(args: &[&str], env: &[(&str, &str)]) -> TestServer {
        let dir = tempfile::tempdir().expect("create temp dir");
        let db = dir.path().join("test.duckdb");
        Self::launch(
            &db,
            Config::ArgsEnv(
                args.iter().map(|a| a.to_string()).collect(),
                env.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            Some(dir),
        )
    }

    /// Like `start_with`, but configures the server through the
    /// `DUCKMV_LISTEN` / `DUCKMV_DATABASE` environment variables only.
    pub fn start_with_env(db_path: impl AsRef<Path>) -> TestServer {
        Self::launch(db_path.as_ref(), Config::Env, None)
    }

    /// Starts the server as a user would: in working directory `cwd` with exactly `args` (no
    /// `--listen`, no `--database` unless given), nothing from `DUCKMV_*` in the environment.
    pub fn start_exact(cwd: &Path, args: &[&str]) -> TestServer {
        Self::launch(
            &cwd.join("duckmv.duckdb"),
            Config::Exact {
                cwd: cwd.to_path_buf(),
                args: args.iter().map(|a| a.to_string()).collect(),
            },
            None,
        )
    }

    fn launch(db: &Path, config: Config, dir: Option<TempDir>) -> TestServer {
        // DUCKMV_BIN runs the tests against another build of the server (as the client suites'
        // with-server.sh does).
        let bin = std::env::var_os("DUCKMV_BIN")
            .unwrap_or_else(|| std::ffi::OsString::from(env!("CARGO_BIN_EXE_duckmv")));
        let mut cmd = Command::new(bin);
        for (k, _) in std::env::vars() {
            if k.starts_with("DUCKMV_") && k != "DUCKMV_TEST_LOG" {
                cmd.env_remove(k);
            }
        }
        // Never let the developer's environment reconfigure the server.
        cmd.env_remove("DUCKMV_LISTEN")
            .env_remove("DUCKMV_DATABASE");
        match config {
            Config::Flags => {
                cmd.arg("--listen")
                    .arg("127.0.0.1:0")
                    .arg("--database")
                    .arg(db);
            }
            Config::Env => {
                cmd.env("DUCKMV_LISTEN", "127.0.0.1:0")
                    .env("DUCKMV_DATABASE", db);
            }
            Config::Args(extra) => {
                cmd.arg("--listen")
                    .arg("127.0.0.1:0")
                    .arg("--database")
                    .arg(db)
                    .args(extra);
            }
            Config::ArgsEnv(extra, env) => {
                cmd.arg("--listen")
                    .arg("127.0.0.1:0")
                    .arg("--database")
                    .arg(db)
                    .args(extra)
                    .envs(env);
            }
            Config::Exact { cwd, args } => {
                cmd.current_dir(cwd).args(args);
            }
        }
        // Plain text logs: the readiness line is parsed below.
        cmd.env("NO_COLOR", "1")
            .env(
                "RUST_LOG",
                std::env::var("DUCKMV_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn duckmv binary");
        let pid = child.id();
        let stderr = child.stderr.take().expect("piped stderr");

        let log = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        {
            let log = Arc::clone(&log);
            // The reader keeps draining stderr for the server's whole life so
            // the server never blocks on a full pipe, and keeps every line for
            // the failure message.
            std::thread::spawn(move || {
                let mut ready_tx = Some(ready_tx);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let plain = strip_ansi(&line);
                    if let Some(addr) = parse_listening(&plain) {
                        if let Some(tx) = ready_tx.take() {
                            let _ = tx.send(addr);
                        }
                    }
                    log.lock().unwrap().push(plain);
                }
            });
        }

        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let addr = loop {
            match ready_rx.recv_timeout(Duration::from_millis(100)) {
                Ok(addr) => break addr,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // stderr closed: the process is gone or going.
                    let status = child.wait().ok();
                    panic!(
                        "duckmv exited before listening (status {status:?}); stderr:\n{}",
                        log.lock().unwrap().join("\n")
                    );
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(200));
                panic!(
                    "duckmv exited before listening (status {status}); stderr:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "duckmv did not log `listening on` within {STARTUP_TIMEOUT:?}; stderr:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        };

        TestServer {
            child: Some(child),
            addr,
            port: addr.port(),
            pid,
            db_path: db.to_path_buf(),
            log,
            _dir: dir,
        }
    }

    /// The connection string tokio-postgres uses for this server.
    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=test dbname=test connect_timeout=10",
            self.port
        )
    }

    /// Connects a tokio-postgres client and drives its connection in a task.
    pub async fn client(&self) -> tokio_postgres::Client {
        self.client_to("test").await
    }

    /// Like `client`, connected under database name `dbname` (the name three-part names
    /// and current_database() use).
    pub async fn client_to(&self, dbname: &str) -> tokio_postgres::Client {
        let conn_str = self
            .conn_str()
            .replace("dbname=test", &format!("dbname={dbname}"));
        let (client, connection) = tokio_postgres::connect(&conn_str, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to duckmv: {e}\nserver log:\n{}", self.log()));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                eprintln!("tokio-postgres connection ended with error: {e}");
            }
        });
        client
    }

    /// A raw protocol-level connection (startup done, ReadyForQuery read).
    pub fn raw(&self) -> pgraw::RawConn {
        pgraw::RawConn::connect(self.addr)
    }

    /// Runs `psql -X -h 127.0.0.1 -p PORT -U test -d test ARGS` with `stdin`
    /// as its input and returns its output, whatever the exit status.
    pub fn psql(&self, args: &[&str], stdin: &str) -> Output {
        let mut cmd = Command::new("psql");
        cmd.args(["-X", "-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "test", "-d", "test"])
            .args(args);
        // Nothing from the developer's environment may redirect psql.
        for var in [
            "PGHOST",
            "PGHOSTADDR",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
            "PGOPTIONS",
            "PGSERVICE",
            "PGSERVICEFILE",
            "PGSSLMODE",
            "PSQLRC",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("PGCONNECT_TIMEOUT", "10")
            .env("PGAPPNAME", "duckmv-tests")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .expect("run psql (scripts/install-test-deps installs it)");
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_owned();
        std::thread::spawn(move || {
            let _ = input.write_all(stdin.as_bytes());
        });
        let output = wait_output(child, psql_timeout())
            .unwrap_or_else(|| panic!("psql timed out; server log:\n{}", self.log()));
        output
    }

    /// `psql` whose stdout is returned as a string; panics with both streams
    /// and the server log when psql exits non-zero.
    pub fn psql_ok(&self, args: &[&str], stdin: &str) -> String {
        let out = self.psql(args, stdin);
        if !out.status.success() {
            panic!(
                "psql {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}\nserver log:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                self.log()
            );
        }
        String::from_utf8(out.stdout).expect("psql output is UTF-8")
    }

    /// Everything the server wrote to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Resident memory of the server process in KiB (Linux `/proc`).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .expect("read /proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS line")
    }

    /// Sends SIGTERM, waits, and asserts a clean exit (status 0).
    pub fn terminate(self) {
        self.stop(libc::SIGTERM);
    }

    /// Sends `signal`, waits for the process, and asserts it exited with 0.
    pub fn stop(mut self, signal: i32) {
        let child = self.child.take().expect("server still running");
        // SAFETY: kill(2) on a pid we spawned and have not reaped yet.
        let rc = unsafe { libc::kill(self.pid as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.pid);
        let status = wait_status(child, SHUTDOWN_TIMEOUT).unwrap_or_else(|| {
            panic!(
                "duckmv did not exit within {SHUTDOWN_TIMEOUT:?} after signal {signal}; log:\n{}",
                self.log()
            )
        });
        // Let the reader thread collect the last lines for the message.
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            status.success(),
            "duckmv exited with {status} after signal {signal}; log:\n{}",
            self.log()
        );
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "---- duckmv stderr (pid {}) ----\n{}\n---- end ----",
                self.pid,
                self.log()
            );
        }
    }
}

enum Config {
    Flags,
    Env,
    /// Flags, plus these extra arguments.
    Args(Vec<String>),
    /// Flags, extra arguments, and environment variables.
    ArgsEnv(Vec<String>, Vec<(String, String)>),
    /// Exactly these arguments, in this working directory.
    Exact {
        cwd: PathBuf,
        args: Vec<String>,
    },
}

/// A self-signed certificate for localhost and its key, written into `dir` by openssl.
pub fn self_signed_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("c.pem"), dir.join("k.pem"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    (cert, key)
}

/// Extracts the address from a line such as
/// `2026-11-29T16:00:00Z  INFO duckmv::server: listening on 127.0.0.1:40123`.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on")? + "listening on".len()..];
    // Tolerate `listening on addr=…` or quoting around the address.
    let start = rest.find(|c: char| c.is_ascii_digit() || c == '[')?;
    let token: String = rest[start..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    token.parse().ok()
}

/// Removes ANSI color sequences (`ESC [ … letter`) from a log line.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Waits for a child with a deadline; kills it and returns None on timeout.
fn wait_status(mut child: Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `wait_with_output` with a deadline. Both pipes are drained in threads so a
/// chatty child cannot block on a full pipe while we poll.
fn wait_output(mut child: Child, timeout: Duration) -> Option<Output> {
    fn drain(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    }
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    let status = wait_status(child, timeout)?;
    Some(Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    })
}

/// The SQLSTATE of a tokio-postgres error, or a panic naming the error when it
/// is not a server error (e.g. the connection broke).
pub fn sqlstate(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => db.code().code().to_owned(),
        None => panic!("expected a server error, got: {err:?}"),
    }
}

/// Asserts that `result` is a server error with the given SQLSTATE and returns
/// its message.
pub fn expect_sqlstate<T: std::fmt::Debug>(
    result: Result<T, tokio_postgres::Error>,
    code: &str,
) -> String {
    match result {
        Ok(v) => panic!("expected error {code}, got success: {v:?}"),
        Err(e) => {
            let got = sqlstate(&e);
            let msg = e.as_db_error().unwrap().message().to_owned();
            assert_eq!(got, code, "wrong SQLSTATE; message: {msg}");
            msg
        }
    }
}

/// Runs a simple-protocol query and returns the command-complete row counts
/// and the rows as text (`None` for NULL).
pub async fn simple(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Result<(Vec<u64>, Vec<Vec<Option<String>>>), tokio_postgres::Error> {
    use tokio_postgres::SimpleQueryMessage as M;
    let mut counts = Vec::new();
    let mut rows = Vec::new();
    for msg in client.simple_query(sql).await? {
        match msg {
            M::CommandComplete(n) => counts.push(n),
            M::Row(row) => rows.push(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => {}
        }
    }
    Ok((counts, rows))
}

/// Runs `sql` (one or more statements) and panics with the statement on error.
pub async fn exec(c: &tokio_postgres::Client, sql: &str) {
    c.batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The rows of `sql` as text, NULL spelled `NULL`; panics with the statement on error.
pub async fn text_rows(c: &tokio_postgres::Client, sql: &str) -> Vec<Vec<String>> {
    let (_, rows) = simple(c, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .collect()
}

/// The rows of `sql` as `a|b` lines, for failure messages.
pub async fn dump(c: &tokio_postgres::Client, sql: &str) -> String {
    text_rows(c, sql)
        .await
        .iter()
        .map(|r| r.join("|"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The IVM oracle's measure: how many rows `view` and `query`, run fresh, differ by as bags —
/// `(view EXCEPT ALL query) UNION ALL (query EXCEPT ALL view)`. Zero when they are equal.
pub async fn bag_difference(c: &tokio_postgres::Client, view: &str, query: &str) -> i64 {
    let sql = format!(
        "SELECT count(*) FROM ((SELECT * FROM {view} EXCEPT ALL ({query})) UNION ALL \
         (({query}) EXCEPT ALL SELECT * FROM {view})) AS d"
    );
    text_rows(c, &sql).await[0][0].parse().unwrap()
}

/// The IVM oracle as a test assertion: panics unless `view` equals `query` run fresh, as bags,
/// showing both sides and the rows of `tables` (the sources worth seeing when it fails).
pub async fn assert_oracle(
    c: &tokio_postgres::Client,
    view: &str,
    query: &str,
    context: &str,
    tables: &[&str],
) {
    let n = bag_difference(c, view, query).await;
    if n == 0 {
        return;
    }
    let mut shown = String::new();
    for t in tables {
        let rows = dump(c, &format!("SELECT * FROM {t} ORDER BY ALL")).await;
        shown.push_str(&format!("\n{t}:\n{rows}"));
    }
    panic!(
        "oracle failed for {view} after {context}: {n} rows differ\nview:\n{}\nquery:\n{}{shown}",
        dump(c, &format!("SELECT * FROM {view} ORDER BY ALL")).await,
        dump(c, &format!("SELECT * FROM ({query}) q ORDER BY ALL")).await,
    );
}
