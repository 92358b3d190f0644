//! Starts a `duckmv` server for the benchmark and stops it again.
//!
//! The server runs on a free loopback port (`--listen 127.0.0.1:0`) with a database in a fresh
//! temporary directory; its address is read from the `listening on HOST:PORT` log line. Its
//! stderr is drained for its whole life (a full pipe would block the server) and the last lines
//! are kept for error messages.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::BenchError;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// Graceful shutdown checkpoints the database, which takes a while after a large load.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(120);
const KEPT_LINES: usize = 50;

pub struct Server {
    child: Option<Child>,
    pub addr: SocketAddr,
    dir: PathBuf,
    log: Arc<Mutex<VecDeque<String>>>,
}

/// `duckmv` next to the running executable (both are built into the same target directory).
pub fn default_binary() -> Result<PathBuf, BenchError> {
    let exe = std::env::current_exe().map_err(|e| BenchError::io("locate own executable", e))?;
    Ok(exe.with_file_name(format!("duckmv{}", std::env::consts::EXE_SUFFIX)))
}

/// The database file in the server's temporary directory.
const DATABASE_FILE: &str = "bench.duckdb";

impl Server {
    pub fn start(binary: &Path) -> Result<Server, BenchError> {
        Self::start_with(binary, &[])
    }

    /// Starts `binary` with `extra` flags after the benchmark's own.
    pub fn start_with(binary: &Path, extra: &[&str]) -> Result<Server, BenchError> {
        let dir = std::env::temp_dir().join(format!("duckmv-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::io("create temp dir", e))?;
        let db = dir.join(DATABASE_FILE);
        let mut child = Command::new(binary)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--database")
            .arg(&db)
            // The benchmark's user may CHECKPOINT (the capture measurement starts its bulk
            // samples from an empty WAL).
            .arg("--superuser")
            .arg("bench")
            .args(extra)
            .env_remove("DUCKMV_LISTEN")
            .env_remove("DUCKMV_DATABASE")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                let _ = std::fs::remove_dir_all(&dir);
                BenchError::io(format!("start {}", binary.display()), e)
            })?;
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = mpsc::channel();
        {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let line = strip_ansi(&line);
                    if let Some(addr) = parse_listening(&line) {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(addr);
                        }
                    }
                    let mut log = log.lock().unwrap();
                    if log.len() == KEPT_LINES {
                        log.pop_front();
                    }
                    log.push_back(line);
                }
            });
        }
        let mut server = Server {
            child: Some(child),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            dir,
            log,
        };
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(addr) => {
                    server.addr = addr;
                    return Ok(server);
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => {
                    // Closed stderr (the server exited) or no address in time.
                    let log = server.log_tail();
                    return Err(BenchError::Server(format!(
                        "{} did not report `listening on`; its log:\n{log}",
                        binary.display()
                    )));
                }
            }
        }
    }

    pub fn dsn(&self) -> String {
        format!(
            "host={} port={} user=bench dbname=bench connect_timeout=30",
            self.addr.ip(),
            self.addr.port()
        )
    }

    /// The write-ahead log file of the server's database.
    pub fn wal_path(&self) -> PathBuf {
        self.dir.join(format!("{DATABASE_FILE}.wal"))
    }

    pub fn log_tail(&self) -> String {
        self.log
            .lock()
            .unwrap()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// SIGTERM, then wait for the checkpoint; SIGKILL if it takes too long.
    pub fn stop(&mut self) -> Result<(), BenchError> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
        let result = loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => break Ok(()),
                Ok(Some(status)) => {
                    break Err(BenchError::Server(format!(
                        "server exited with {status} on SIGTERM; its log:\n{}",
                        self.log_tail()
                    )))
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(BenchError::Server(format!(
                        "server did not stop within {SHUTDOWN_TIMEOUT:?} of SIGTERM"
                    )));
                }
                Err(e) => break Err(BenchError::io("wait for server", e)),
            }
        };
        let _ = std::fs::remove_dir_all(&self.dir);
        result
    }
}

impl Drop for Server {
    // An early error must not leave a server running or its database behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The address in a `… listening on 127.0.0.1:5433 …` log line.
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on")? + "listening on".len()..];
    let start = rest.find(|c: char| c.is_ascii_digit() || c == '[')?;
    let token: String = rest[start..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit() || matches!(c, '.' | ':' | '[' | ']'))
        .collect();
    token.parse().ok()
}

/// Removes ANSI colour sequences (`ESC [ … letter`).
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

/// The server to benchmark: `dsn` when given, else one started from
/// `bin` (default: the duckmv next to this binary), kept alive by the
/// returned handle.
pub fn target(
    dsn: Option<&str>,
    bin: Option<&Path>,
) -> Result<(String, Option<Server>), BenchError> {
    if let Some(dsn) = dsn {
        return Ok((dsn.to_string(), None));
    }
    let bin = match bin {
        Some(b) => b.to_path_buf(),
        None => default_binary()?,
    };
    let s = Server::start(&bin)?;
    eprintln!("[server] {} listening on {}", bin.display(), s.addr);
    Ok((s.dsn(), Some(s)))
}

/// Runs `bench` with the connection string of the target server (see [`target`]), then stops
/// a server it started, with its last log lines when the run failed.
pub async fn against<T, F>(
    args: &crate::cli::Args,
    bench: impl FnOnce(String) -> F,
) -> Result<T, BenchError>
where
    F: std::future::Future<Output = Result<T, BenchError>>,
{
    let (dsn, server) = target(args.dsn.as_deref(), args.server_bin.as_deref())?;
    let outcome = bench(dsn).await;
    if let Some(mut s) = server {
        let stopped = s.stop();
        if let (Err(e), Ok(_)) = (&stopped, &outcome) {
            eprintln!("duckmv-bench: warning: {e}");
        }
        if outcome.is_err() {
            eprintln!("[server] last log lines:\n{}", s.log_tail());
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_address_in_log_lines() {
        let a = parse_listening(
            "2026-11-29T17:00:00Z  INFO duckmv::server: listening on 127.0.0.1:40123",
        );
        assert_eq!(a, Some("127.0.0.1:40123".parse().unwrap()));
        let a = parse_listening("INFO listening on addr=[::1]:5433 ok");
        assert_eq!(a, Some("[::1]:5433".parse().unwrap()));
        assert_eq!(parse_listening("starting"), None);
        assert_eq!(
            strip_ansi("\u{1b}[32m INFO\u{1b}[0m listening on 1.2.3.4:5"),
            " INFO listening on 1.2.3.4:5"
        );
    }

    #[test]
    fn a_missing_binary_is_an_error_not_a_hang() {
        let e = Server::start(Path::new("/nonexistent/duckmv"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/duckmv"), "{e}");
    }
}
