//! LISTEN / NOTIFY between sessions: the hub every session shares (channel → listening
//! sessions, session → where its client's notifications go), a session's place in it, and the
//! notifications a transaction holds until it commits.
//!
//! A notification reaches a listener's connection through an unbounded channel that the wire
//! layer drains only between messages, so publishing never waits for a slow client (PostgreSQL
//! queues them too, up to its 8 GB queue).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc::UnboundedSender;

use super::reply::SqlError;
use crate::sqlstate::SqlState;

/// PostgreSQL's limit: a payload must be shorter than this many bytes.
pub const MAX_PAYLOAD: usize = 8000;

/// The channel every refresh that changed a view notifies.
pub const REFRESH_CHANNEL: &str = "duckmv_refresh";

/// One notification as a listener's client receives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The backend pid of the session that sent it.
    pub pid: i32,
    pub channel: String,
    pub payload: String,
}

/// Who listens on which channel, for all sessions.
#[derive(Default)]
pub struct Hub {
    next_id: AtomicU64,
    inner: Mutex<Subscriptions>,
}

#[derive(Default)]
struct Subscriptions {
    /// Channel → the listeners on it.
    channels: HashMap<String, HashSet<u64>>,
    /// Listener → its client's inbox and its channels; only listeners on some channel.
    listeners: HashMap<u64, (UnboundedSender<Notification>, HashSet<String>)>,
}

impl Hub {
    /// How many channels have listeners, and how many sessions listen: what the hub holds.
    pub fn size(&self) -> (usize, usize) {
        let s = self.inner.lock();
        (s.channels.len(), s.listeners.len())
    }

    fn listen(&self, id: u64, inbox: &UnboundedSender<Notification>, channel: &str) {
        let mut s = self.inner.lock();
        s.channels
            .entry(channel.to_string())
            .or_default()
            .insert(id);
        s.listeners
            .entry(id)
            .or_insert_with(|| (inbox.clone(), HashSet::new()))
            .1
            .insert(channel.to_string());
    }

    fn unlisten(&self, id: u64, channel: &str) {
        let mut s = self.inner.lock();
        let Some((_, mine)) = s.listeners.get_mut(&id) else {
            return;
        };
        mine.remove(channel);
        if mine.is_empty() {
            s.listeners.remove(&id);
        }
        s.drop_listener_of(channel, id);
    }

    fn unlisten_all(&self, id: u64) {
        let mut s = self.inner.lock();
        let Some((_, mine)) = s.listeners.remove(&id) else {
            return;
        };
        for channel in mine {
            s.drop_listener_of(&channel, id);
        }
    }

    /// Sends each note, in order, to every session listening on its channel (the sender too).
    /// A listener whose client is gone is skipped: its session removes it when it ends.
    fn publish(&self, pid: i32, notes: Vec<(String, String)>) {
        let s = self.inner.lock();
        for (channel, payload) in notes {
            let Some(ids) = s.channels.get(&channel) else {
                continue;
            };
            for id in ids {
                if let Some((inbox, _)) = s.listeners.get(id) {
                    let _ = inbox.send(Notification {
                        pid,
                        channel: channel.clone(),
                        payload: payload.clone(),
                    });
                }
            }
        }
    }
}

impl Subscriptions {
    fn drop_listener_of(&mut self, channel: &str, id: u64) {
        if let Some(ids) = self.channels.get_mut(channel) {
            ids.remove(&id);
            if ids.is_empty() {
                self.channels.remove(channel);
            }
        }
    }
}

/// A session's place in the hub: its backend pid, its client's inbox, and its subscriptions,
/// which go with it when the session ends (however it ends).
pub struct Listener {
    hub: Arc<Hub>,
    id: u64,
    /// The pid the cancel registry gave the connection (0 until the connection says).
    pid: i32,
    inbox: UnboundedSender<Notification>,
}

impl Listener {
    pub fn new(hub: Arc<Hub>, inbox: UnboundedSender<Notification>) -> Self {
        let id = hub.next_id.fetch_add(1, Ordering::Relaxed);
        Listener {
            hub,
            id,
            pid: 0,
            inbox,
        }
    }

    pub fn set_pid(&mut self, pid: i32) {
        self.pid = pid;
    }

    /// LISTEN takes effect at once, not at commit as in PostgreSQL, and a rollback does not
    /// undo it: the difference only shows for notifications committed while the LISTEN's own
    /// transaction is still open, which this session then receives.
    pub fn listen(&self, channel: &str) {
        self.hub.listen(self.id, &self.inbox, channel);
    }

    /// UNLISTEN channel, or UNLISTEN * (None); at once, like `listen`.
    pub fn unlisten(&self, channel: Option<&str>) {
        match channel {
            Some(c) => self.hub.unlisten(self.id, c),
            None => self.hub.unlisten_all(self.id),
        }
    }

    /// Delivers a committed transaction's notifications.
    pub fn publish(&self, notes: &mut Notes) {
        if !notes.queue.is_empty() {
            self.hub.publish(self.pid, notes.take());
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.hub.unlisten_all(self.id);
    }
}

/// The notifications a transaction queued: published when it commits, dropped when it rolls
/// back or fails.
#[derive(Default)]
pub struct Notes {
    queue: Vec<(String, String)>,
    /// What is queued, to fold identical notifications into one, as PostgreSQL does.
    seen: HashSet<(String, String)>,
}

impl Notes {
    /// Queues a notification on `channel`; delivered when the transaction commits.
    pub fn push(&mut self, channel: String, payload: String) {
        let note = (channel, payload);
        if self.seen.insert(note.clone()) {
            self.queue.push(note);
        }
    }

    pub fn clear(&mut self) {
        self.queue.clear();
        self.seen.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    fn take(&mut self) -> Vec<(String, String)> {
        self.seen.clear();
        std::mem::take(&mut self.queue)
    }
}

/// PostgreSQL's checks on a notification. A channel name has no length limit here: DuckDB's
/// names have none, and `duckmv_refresh.<view>` must stay listenable for long view names.
pub fn check(channel: &str, payload: &str) -> Result<(), SqlError> {
    if channel.is_empty() {
        return Err(SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "channel name cannot be empty",
        ));
    }
    if payload.len() >= MAX_PAYLOAD {
        return Err(SqlError::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "payload string too long",
        ));
    }
    Ok(())
}

/// Queues what a refresh that changed `rows` rows of `view` tells listeners: a notification
/// on `duckmv_refresh` and one on `duckmv_refresh.<view>`, both with the payload
/// `{"view":"<view>","rows":<rows>}`. `view` is the name the IVM engine was given (quoted,
/// `main` for public); it is named by its name alone in the default schema, as
/// `<schema>.<name>` in another (an attached database's name is left out). A refresh that
/// changed nothing queues nothing.
pub fn refreshed(notes: &mut Notes, view: &str, rows: u64) {
    if rows == 0 {
        return;
    }
    let name = refresh_name(view);
    let payload = format!(
        "{{\"view\":{},\"rows\":{rows}}}",
        serde_json::Value::String(name.clone())
    );
    notes.push(REFRESH_CHANNEL.to_string(), payload.clone());
    notes.push(format!("{REFRESH_CHANNEL}.{name}"), payload);
}

/// A view's name in its refresh notifications (see `refreshed`).
fn refresh_name(view: &str) -> String {
    use crate::sql::lex::{tokenize, Tok};
    let parts: Vec<String> = tokenize(view)
        .into_iter()
        .filter_map(|t| match t.kind {
            Tok::Ident => Some(t.text),
            Tok::Word => Some(t.text.to_ascii_lowercase()),
            _ => None,
        })
        .collect();
    match parts.as_slice() {
        [.., schema, name] if schema != "main" && schema != "public" => format!("{schema}.{name}"),
        [.., name] => name.clone(),
        [] => view.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

    fn session(hub: &Arc<Hub>, pid: i32) -> (Listener, UnboundedReceiver<Notification>) {
        let (tx, rx) = unbounded_channel();
        let mut l = Listener::new(hub.clone(), tx);
        l.set_pid(pid);
        (l, rx)
    }

    fn received(rx: &mut UnboundedReceiver<Notification>) -> Vec<(i32, String, String)> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|n| (n.pid, n.channel, n.payload))
            .collect()
    }

    fn notes(list: &[(&str, &str)]) -> Notes {
        let mut n = Notes::default();
        for (c, p) in list {
            n.push(c.to_string(), p.to_string());
        }
        n
    }

    #[test]
    fn listeners_receive_what_is_published_on_their_channels() {
        let hub = Arc::new(Hub::default());
        let (a, mut ra) = session(&hub, 1001);
        let (b, mut rb) = session(&hub, 1002);
        a.listen("x");
        b.listen("x");
        b.listen("y");
        b.publish(&mut notes(&[("x", "1"), ("y", "2"), ("z", "3")]));
        assert_eq!(received(&mut ra), [(1002, "x".into(), "1".into())]);
        assert_eq!(
            received(&mut rb),
            [
                (1002, "x".into(), "1".into()),
                (1002, "y".into(), "2".into())
            ]
        );
        b.unlisten(Some("x"));
        a.publish(&mut notes(&[("x", "4"), ("y", "5")]));
        assert_eq!(received(&mut ra), [(1001, "x".into(), "4".into())]);
        assert_eq!(received(&mut rb), [(1001, "y".into(), "5".into())]);
        a.unlisten(None);
        b.publish(&mut notes(&[("x", "6")]));
        assert!(received(&mut ra).is_empty());
    }

    #[test]
    fn identical_notifications_of_a_transaction_fold_into_one() {
        let n = notes(&[("x", "1"), ("x", "1"), ("x", "2"), ("y", "1"), ("x", "1")]);
        assert_eq!(
            n.queue,
            [
                ("x".to_string(), "1".to_string()),
                ("x".into(), "2".into()),
                ("y".into(), "1".into())
            ]
        );
    }

    #[test]
    fn publishing_empties_the_queue_and_clearing_drops_it() {
        let hub = Arc::new(Hub::default());
        let (a, mut ra) = session(&hub, 1);
        a.listen("x");
        let mut n = notes(&[("x", "1")]);
        a.publish(&mut n);
        assert!(n.is_empty());
        n.push("x".into(), "1".into());
        a.publish(&mut n);
        assert_eq!(received(&mut ra).len(), 2, "folding is per transaction");
        n.push("x".into(), "2".into());
        n.clear();
        a.publish(&mut n);
        assert!(received(&mut ra).is_empty());
    }

    #[test]
    fn a_session_that_ends_leaves_nothing_in_the_hub() {
        let hub = Arc::new(Hub::default());
        let (a, ra) = session(&hub, 1);
        let (b, mut rb) = session(&hub, 2);
        a.listen("x");
        a.listen("y");
        b.listen("x");
        assert_eq!(hub.size(), (2, 2));
        // The client went first: publishing to its inbox is harmless.
        drop(ra);
        b.publish(&mut notes(&[("x", "1"), ("y", "1")]));
        assert_eq!(received(&mut rb).len(), 1);
        drop(a);
        assert_eq!(hub.size(), (1, 1));
        b.unlisten(Some("x"));
        assert_eq!(hub.size(), (0, 0));
        b.unlisten(Some("never"));
        b.unlisten(None);
        assert_eq!(hub.size(), (0, 0));
    }

    #[test]
    fn limits_are_postgresql_s() {
        assert!(check("c", &"x".repeat(MAX_PAYLOAD - 1)).is_ok());
        let e = check("c", &"x".repeat(MAX_PAYLOAD)).unwrap_err();
        assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
        assert_eq!(e.message, "payload string too long");
        assert_eq!(
            check("", "").unwrap_err().code,
            SqlState::INVALID_PARAMETER_VALUE
        );
        assert!(check(&"c".repeat(200), "").is_ok());
    }

    #[test]
    fn a_refresh_that_changed_rows_notifies_both_channels() {
        let mut n = Notes::default();
        refreshed(&mut n, "\"v\"", 3);
        refreshed(&mut n, "main.\"W\"", 1);
        refreshed(&mut n, "\"s\".\"x\"", 2);
        refreshed(&mut n, "\"q\"\"uote\"", 1);
        refreshed(&mut n, "\"none\"", 0);
        let channels: Vec<&str> = n.queue.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(
            channels,
            [
                "duckmv_refresh",
                "duckmv_refresh.v",
                "duckmv_refresh",
                "duckmv_refresh.W",
                "duckmv_refresh",
                "duckmv_refresh.s.x",
                "duckmv_refresh",
                "duckmv_refresh.q\"uote",
            ]
        );
        assert_eq!(n.queue[0].1, r#"{"view":"v","rows":3}"#);
        assert_eq!(n.queue[1].1, r#"{"view":"v","rows":3}"#);
        assert_eq!(n.queue[3].1, r#"{"view":"W","rows":1}"#);
        assert_eq!(n.queue[5].1, r#"{"view":"s.x","rows":2}"#);
        let v: serde_json::Value = serde_json::from_str(&n.queue[7].1).unwrap();
        assert_eq!(v["view"], "q\"uote");
    }
}
