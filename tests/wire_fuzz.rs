//! Malformed and extreme protocol input, bounded in count and time: random bytes, truncated,
//! oversized and negative lengths, unknown message types, Parse/Bind with wrong counts, formats
//! and lengths, Execute of missing portals, CopyData outside COPY, garbage start-up packets,
//! 16 MB queries, statements nested 10,000 deep, NUL bytes, and the inputs recorded from outside
//! in tests/data/protocol. Every complete input gets an answer (an error is fine) or a closed
//! connection within seconds, and after each one a new client is served.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::rng::Rng;
use common::TestServer;

impl Rng {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// Between `min` and `min + spread - 1` random bytes.
    fn some_bytes(&mut self, min: usize, spread: u64) -> Vec<u8> {
        let n = min + self.below(spread) as usize;
        self.bytes(n)
    }
    fn i16(&mut self) -> i16 {
        match self.below(4) {
            0 => -1,
            1 => i16::MAX,
            _ => self.below(4) as i16,
        }
    }
    fn i32(&mut self) -> i32 {
        match self.below(5) {
            0 => -1,
            1 => -7,
            2 => i32::MAX,
            _ => self.below(6) as i32,
        }
    }
}

fn msg(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty];
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn cstr(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

fn startup_packet() -> Vec<u8> {
    let mut body = 196608i32.to_be_bytes().to_vec();
    for (k, v) in [("user", "fuzz"), ("database", "fuzz")] {
        cstr(&mut body, k);
        cstr(&mut body, v);
    }
    body.push(0);
    let mut m = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    m.extend(body);
    m
}

const SQL: &[&str] = &[
    "select 1",
    "select $1::int",
    "select count(*) from fz where a = $1",
    "insert into fz values ($1, $2)",
    "refresh materialized view fzmv",
    "show \"😀",
    "select * from fz; select 2",
    "",
];

/// One complete, structurally wrong or odd message sequence, ending with Sync.
fn extended(r: &mut Rng) -> Vec<u8> {
    let sql = SQL[r.below(SQL.len() as u64) as usize];
    let mut out = Vec::new();
    match r.below(6) {
        0 => {
            let mut b = Vec::new();
            cstr(&mut b, "");
            cstr(&mut b, sql);
            let n = r.i16();
            b.extend_from_slice(&n.to_be_bytes());
            for _ in 0..r.below(3) {
                b.extend_from_slice(&(r.next() as u32).to_be_bytes());
            }
            out.extend(msg(b'P', &b));
        }
        1 => {
            let mut p = Vec::new();
            cstr(&mut p, "s");
            cstr(&mut p, sql);
            p.extend_from_slice(&0i16.to_be_bytes());
            out.extend(msg(b'P', &p));
            let mut b = Vec::new();
            cstr(&mut b, "");
            cstr(&mut b, if r.below(2) == 0 { "s" } else { "nope" });
            let formats = r.i16();
            b.extend_from_slice(&formats.to_be_bytes());
            for _ in 0..r.below(3) {
                b.extend_from_slice(&r.i16().to_be_bytes());
            }
            b.extend_from_slice(&r.i16().to_be_bytes());
            for _ in 0..r.below(3) {
                let len = r.i32();
                b.extend_from_slice(&len.to_be_bytes());
                b.extend(r.some_bytes(0, 4));
            }
            b.extend_from_slice(&r.i16().to_be_bytes());
            out.extend(msg(b'B', &b));
            out.extend(msg(b'E', b"\0\0\0\0\0"));
        }
        2 => {
            let mut e = Vec::new();
            cstr(&mut e, "missing");
            e.extend_from_slice(&r.i32().to_be_bytes());
            out.extend(msg(b'E', &e));
            out.extend(msg(b'D', b"Snope\0"));
            out.extend(msg(b'D', b"Pnope\0"));
            out.extend(msg(b'C', b"Xnope\0"));
        }
        3 => {
            out.extend(msg(b'd', &r.some_bytes(0, 64)));
            out.extend(msg(b'c', b""));
            out.extend(msg(b'f', b"oops\0"));
        }
        4 => {
            let ty = [b'A', b'z', b'#', 0u8, b'F', b'W', b'p'][r.below(7) as usize];
            out.extend(msg(ty, &r.some_bytes(0, 32)));
        }
        _ => {
            // A query with a NUL inside its string, or invalid UTF-8.
            let mut q = b"select 1\0 trailing".to_vec();
            if r.below(2) == 0 {
                q = vec![0xff, b's', b'e', b'l', b'e', b'c', b't', b' ', b'1', 0];
            }
            out.extend(msg(b'Q', &q));
        }
    }
    out.extend(msg(b'S', b""));
    out
}

/// Frames with lengths that cannot be right.
fn bad_length(r: &mut Rng) -> Vec<u8> {
    let ty = [b'Q', b'P', b'B', b'S', b'E', b'X'][r.below(6) as usize];
    let len: i32 = [0, 1, 3, -1, -100, 0x7fff_ffff, 0x4000_0000][r.below(7) as usize];
    let mut m = vec![ty];
    m.extend_from_slice(&len.to_be_bytes());
    m.extend(r.some_bytes(0, 16));
    m
}

#[derive(Debug, PartialEq)]
enum Outcome {
    /// A ReadyForQuery (with or without an error before it).
    Answered,
    /// The server closed the connection (after an error or not).
    Closed,
    /// Nothing within the time allowed, connection still open.
    Hung,
}

/// Reads until ReadyForQuery, close, or the deadline.
fn outcome(s: &mut TcpStream, within: Duration) -> Outcome {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Outcome::Hung;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Outcome::Closed,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if ready_in(&got) {
                    return Outcome::Answered;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Outcome::Hung
            }
            Err(_) => return Outcome::Closed,
        }
    }
}

/// Whether `got` holds a complete ReadyForQuery message (walking the message frames).
fn ready_in(got: &[u8]) -> bool {
    let mut i = 0;
    while i + 5 <= got.len() {
        let len = i32::from_be_bytes(got[i + 1..i + 5].try_into().unwrap()) as usize;
        if got[i] == b'Z' && i + 1 + len <= got.len() {
            return true;
        }
        i += 1 + len;
    }
    false
}

/// A connection after a normal start-up.
fn started(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(&startup_packet()).unwrap();
    assert_eq!(
        outcome(&mut s, Duration::from_secs(10)),
        Outcome::Answered,
        "start-up"
    );
    s
}

/// Sends `payload` after start-up; a complete input must be answered or closed.
fn check(server: &TestServer, what: &str, payload: &[u8], complete: bool) {
    let mut s = started(server.addr);
    let _ = s.write_all(payload);
    if !complete {
        let _ = s.shutdown(Shutdown::Write);
    }
    let got = outcome(&mut s, Duration::from_secs(15));
    assert_ne!(
        got,
        Outcome::Hung,
        "{what}: no answer and the connection is still open\nserver log:\n{}",
        server.log()
    );
    served(server, what);
}

/// A new client is still served.
fn served(server: &TestServer, after: &str) {
    let mut s = started(server.addr);
    s.write_all(&msg(b'Q', b"select 42\0")).unwrap();
    assert_eq!(
        outcome(&mut s, Duration::from_secs(15)),
        Outcome::Answered,
        "after {after}: a new client was not served\nserver log:\n{}",
        server.log()
    );
}

#[test]
fn malformed_protocol_input_is_answered_or_closed_and_the_server_lives() {
    let server = TestServer::start();
    server.psql_ok(
        &["-q", "-c", "create table fz (a int, b text); create materialized view fzmv as select a, count(*) from fz group by a"],
        "",
    );
    let mut r = Rng(0x0dd_ba11_c0ff_ee00);
    let started_at = Instant::now();
    for i in 0..150 {
        check(&server, &format!("extended #{i}"), &extended(&mut r), true);
    }
    for i in 0..40 {
        check(
            &server,
            &format!("bad length #{i}"),
            &bad_length(&mut r),
            false,
        );
    }
    for i in 0..40 {
        // Random bytes, sometimes after a valid type byte.
        let mut b = r.some_bytes(1, 300);
        if i % 2 == 0 {
            b[0] = b"QPBEDSX"[r.below(7) as usize];
        }
        check(&server, &format!("random bytes #{i}"), &b, false);
    }
    // Garbage instead of a start-up packet, SSLRequest or CancelRequest.
    for i in 0..30 {
        let mut s = TcpStream::connect(server.addr).unwrap();
        let mut b = match i % 3 {
            0 => r.some_bytes(8, 64),
            1 => [
                &8i32.to_be_bytes()[..],
                &80877103i32.to_be_bytes(),
                &r.bytes(8),
            ]
            .concat(),
            _ => [
                &16i32.to_be_bytes()[..],
                &80877102i32.to_be_bytes(),
                &r.bytes(4),
            ]
            .concat(),
        };
        if i % 5 == 0 {
            b.truncate(3);
        }
        let _ = s.write_all(&b);
        let _ = s.shutdown(Shutdown::Write);
        let got = outcome(&mut s, Duration::from_secs(15));
        assert_ne!(got, Outcome::Hung, "start-up garbage #{i}");
        served(&server, &format!("start-up garbage #{i}"));
    }
    // A 16 MB query, and statements nested 10,000 deep (also as a view's query).
    let big = format!("select length('{}')\0", "x".repeat(16 << 20));
    check(&server, "16 MB query", &msg(b'Q', big.as_bytes()), true);
    let deep = format!(
        "{}select 1 as a{}",
        "select * from (".repeat(10_000),
        ") t".repeat(10_000)
    );
    for sql in [
        deep.clone(),
        format!("create materialized view deepmv as {deep}"),
    ] {
        let mut s = started(server.addr);
        s.write_all(&msg(b'Q', format!("{sql}\0").as_bytes()))
            .unwrap();
        assert_eq!(
            outcome(&mut s, Duration::from_secs(30)),
            Outcome::Answered,
            "deep nesting"
        );
    }
    served(&server, "deep nesting");
    // Everything recorded from outside.
    for entry in
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/protocol")).unwrap()
    {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bin") {
            // Some are cut short: the client then closes its side, as a client that gives up would.
            let bytes = std::fs::read(&path).unwrap();
            check(&server, &path.display().to_string(), &bytes, false);
        }
    }
    assert!(
        started_at.elapsed() < Duration::from_secs(240),
        "the fuzz took {:?}",
        started_at.elapsed()
    );
}
