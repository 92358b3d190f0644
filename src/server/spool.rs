//! The COPY spool directory: where COPY FROM STDIN data waits for DuckDB to load it.
//!
//! A directory of its own in the temporary directory, with an unguessable name, readable by
//! the server's user only, removed when the server stops. A server that is killed or crashes
//! cannot remove it, and it may hold rows a client copied; so each server holds an exclusive
//! lock on a file inside its spool for as long as it runs, and at start-up removes the spools
//! of its user whose lock is free: their servers are gone.

use std::fs::{DirBuilder, File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use tracing::{info, warn};

const PREFIX: &str = "duckmv-spool-";
/// A spool being created: its lock is taken before it gets its final name, so a sweeping
/// server never sees a live spool whose lock is free.
const NEW_PREFIX: &str = "duckmv-spool-new-";
const LOCK: &str = ".lock";

pub struct Spool {
    path: PathBuf,
    /// Held (and locked) while the server runs; the lock goes with the process.
    _lock: File,
}

impl Spool {
    /// Creates this server's spool, then removes those its user's dead servers left.
    pub fn create() -> anyhow::Result<Spool> {
        let tmp = std::env::temp_dir();
        let tag = format!("{}-{:032x}", std::process::id(), rand::random::<u128>());
        let new = tmp.join(format!("{NEW_PREFIX}{tag}"));
        DirBuilder::new()
            .mode(0o700)
            .create(&new)
            .with_context(|| format!("creating the COPY spool directory {}", new.display()))?;
        let lock = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(new.join(LOCK))
            .and_then(|f| f.lock().map(|()| f))
            .with_context(|| format!("locking the COPY spool directory {}", new.display()));
        let path = tmp.join(format!("{PREFIX}{tag}"));
        let lock = lock.and_then(|f| {
            std::fs::rename(&new, &path)
                .with_context(|| format!("naming the COPY spool directory {}", path.display()))?;
            Ok(f)
        });
        let lock = match lock {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&new);
                return Err(e);
            }
        };
        let spool = Spool { path, _lock: lock };
        spool.sweep(&tmp);
        Ok(spool)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the spools of servers that are gone. Best effort: what cannot be read is left.
    fn sweep(&self, tmp: &Path) {
        let Ok(own) = std::fs::metadata(&self.path) else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(tmp) else {
            return;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with(PREFIX) || name.starts_with(NEW_PREFIX) {
                continue;
            }
            let path = entry.path();
            if path == self.path || !is_stale(&path, own.uid()) {
                continue;
            }
            match std::fs::remove_dir_all(&path) {
                Ok(()) => removed += 1,
                Err(e) => warn!("removing the stale COPY spool {}: {e}", path.display()),
            }
        }
        if removed > 0 {
            info!("removed {removed} COPY spool directories left by servers that stopped abruptly");
        }
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A spool whose server is gone: a directory (not a link) of `uid` whose lock file can be
/// locked. A spool without a lock file was made by an older server; it is stale when the
/// process named in it no longer runs, which only `/proc` can tell.
fn is_stale(path: &Path, uid: u32) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_dir() || meta.uid() != uid {
        return false;
    }
    match File::open(path.join(LOCK)) {
        Ok(f) => f.try_lock().is_ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => process_gone(path),
        Err(_) => false,
    }
}

fn process_gone(path: &Path) -> bool {
    let pid = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(PREFIX))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok());
    let proc = Path::new("/proc");
    match pid {
        Some(pid) if proc.join("self").exists() => !proc.join(pid.to_string()).exists(),
        _ => false,
    }
}
