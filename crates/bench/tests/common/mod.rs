//! Running `duckmv-bench` from a test: against the server binary of the same build, with a
//! deadline, both pipes drained so the child never blocks on a full one.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The server binary beside the benchmark's. It is another package of the workspace, built
/// into the same directory by `cargo test --workspace` (scripts/test) before any test runs.
pub fn server() -> PathBuf {
    let bench = std::path::Path::new(env!("CARGO_BIN_EXE_duckmv-bench"));
    let server = bench.with_file_name(format!("duckmv{}", std::env::consts::EXE_SUFFIX));
    assert!(
        server.exists(),
        "{} is missing: run `cargo test --workspace` or build the duckmv binary first",
        server.display()
    );
    server
}

/// Runs the benchmark with `args` and `--server-bin`; panics with its output when it fails or
/// outlives `timeout`. Returns (stdout, stderr).
pub fn run_bench(args: &[&str], timeout: Duration) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duckmv-bench"))
        .args(args)
        .arg("--server-bin")
        .arg(server())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start duckmv-bench");
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut so, &mut s).ok();
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut se, &mut s).ok();
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "duckmv-bench did not finish within {timeout:?}; stderr:\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(
        status.success(),
        "duckmv-bench failed ({status}); stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    (stdout, stderr)
}
