//! `statement_timeout`: a per-session watchdog thread that interrupts the
//! running DuckDB query once its deadline passes. It is started only when a
//! session first sets a timeout, so sessions without one pay nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::engine::Interrupter;

struct State {
    deadline: Mutex<Option<Instant>>,
    wake: Condvar,
    fired: AtomicBool,
}

pub struct Watchdog {
    state: Arc<State>,
}

impl Watchdog {
    pub fn start(interrupter: Arc<Interrupter>) -> Watchdog {
        let state = Arc::new(State {
            deadline: Mutex::new(None),
            wake: Condvar::new(),
            fired: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&state);
        std::thread::Builder::new()
            .name("duckmv-timeout".into())
            .spawn(move || loop {
                let Some(state) = weak.upgrade() else { return };
                let mut d = state.deadline.lock();
                match *d {
                    None => {
                        state.wake.wait_for(&mut d, Duration::from_secs(1));
                        drop(d);
                    }
                    Some(t) if Instant::now() >= t => {
                        *d = None;
                        state.fired.store(true, Ordering::SeqCst);
                        interrupter.interrupt();
                    }
                    Some(t) => {
                        state.wake.wait_for(&mut d, t - Instant::now());
                    }
                }
            })
            .expect("start timeout thread");
        Watchdog { state }
    }

    pub fn arm(&self, after: Duration) {
        self.state.fired.store(false, Ordering::SeqCst);
        *self.state.deadline.lock() = Some(Instant::now() + after);
        self.state.wake.notify_one();
    }

    /// Disarms; true when the timeout fired since `arm`.
    pub fn disarm(&self) -> bool {
        *self.state.deadline.lock() = None;
        self.state.fired.swap(false, Ordering::SeqCst)
    }
}

/// Parses a PostgreSQL duration setting (`5000`, `5s`, `250ms`, `1min`);
/// 0 or unparsable means no timeout.
pub fn parse_duration(v: &str) -> Option<Duration> {
    let v = v.trim().trim_matches('\'').trim().to_ascii_lowercase();
    let split = v
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n * 1e3,
        "min" => n * 60e3,
        "h" => n * 3600e3,
        "d" => n * 86400e3,
        "us" => n / 1e3,
        _ => return None,
    };
    (ms > 0.0).then(|| Duration::from_micros((ms * 1e3) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5000"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("'250ms'"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1min"), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration("0"), None);
    }
}
