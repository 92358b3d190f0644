//! Whether sessions are working, and since when none has: background work that would stall a
//! statement (a checkpoint) waits for a quiet moment.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Activity {
    origin: Instant,
    /// Sessions handling a client request right now.
    busy: AtomicUsize,
    /// When the last request ended, in µs since `origin`.
    last_end_us: AtomicU64,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            origin: Instant::now(),
            busy: AtomicUsize::new(0),
            last_end_us: AtomicU64::new(0),
        }
    }
}

/// A session at work, until dropped.
pub struct Busy<'a>(&'a Activity);

impl Activity {
    /// Marks a session at work until the returned value is dropped.
    pub fn busy(&self) -> Busy<'_> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy(self)
    }

    /// How long no session has been at work; None while one is.
    pub fn quiet_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let last = Duration::from_micros(self.last_end_us.load(Ordering::SeqCst));
        Some(self.origin.elapsed().saturating_sub(last))
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let now = self.0.origin.elapsed().as_micros() as u64;
        // The end time first: whoever then sees no session busy also sees when the last ended.
        self.0.last_end_us.fetch_max(now, Ordering::SeqCst);
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_only_when_no_session_works() {
        let a = Activity::default();
        let one = a.busy();
        let two = a.busy();
        assert_eq!(a.quiet_for(), None);
        drop(one);
        assert_eq!(a.quiet_for(), None);
        drop(two);
        std::thread::sleep(Duration::from_millis(5));
        let quiet = a.quiet_for().unwrap();
        assert!(quiet >= Duration::from_millis(5), "{quiet:?}");
        assert!(quiet < Duration::from_secs(5), "{quiet:?}");
    }
}
