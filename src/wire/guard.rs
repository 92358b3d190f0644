//! Checks every message a client sends before pgwire decodes it.
//!
//! pgwire's decoders trust the counts inside a message: a Parse declaring −1 parameter types, a
//! Bind whose value length runs past the message, a length below 4, a string without its NUL —
//! each panics (out-of-bounds `get_*`/`split_to`) or reads into the next message. This stream
//! wrapper sits between the (TLS-decrypted) socket and pgwire's framing and passes on only
//! messages whose structure fits their declared length exactly. The first one that does not
//! becomes an `InvalidData` read error, which the connection loop answers with FATAL 08P01
//! ("invalid message format") before closing, as PostgreSQL does.
//!
//! What a password message ('p') must contain depends on what the server asked for, so the
//! wrapper also follows the server's outgoing messages far enough to see authentication requests.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest message accepted; PostgreSQL's own limit for a query string is 1 GB.
pub const MAX_MESSAGE: usize = 1 << 30;
/// Messages that carry no user data are tiny; anything larger is not one of them.
const MAX_SMALL_MESSAGE: usize = 10_000;
const SSL_REQUEST: i32 = 80877103;
const GSSENC_REQUEST: i32 = 80877104;
const CANCEL_REQUEST: i32 = 80877102;

/// What the next password-family message ('p') must be, from the last authentication request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// No request seen (or authentication is over): pgwire ignores such messages.
    Nothing,
    Password,
    SaslInitial,
    SaslResponse,
}

/// Follows the framing of what the server writes: type byte, length, and for 'R' the code.
#[derive(Default)]
struct Outgoing {
    head: Vec<u8>,
    skip: usize,
}

impl Outgoing {
    /// Reads written bytes; returns the code of every authentication request completed in them.
    fn feed(&mut self, mut bytes: &[u8], codes: &mut Vec<i32>) {
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let want = if self.head.first() == Some(&b'R') {
                9
            } else {
                5
            };
            let n = (want - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.head.len() < want {
                continue;
            }
            if self.head[0] == b'R' && self.head.len() == 5 {
                continue; // read the code too
            }
            let len = i32::from_be_bytes(self.head[1..5].try_into().unwrap()).max(4) as usize;
            if self.head[0] == b'R' {
                codes.push(i32::from_be_bytes(self.head[5..9].try_into().unwrap()));
                self.skip = len.saturating_sub(8);
            } else {
                self.skip = len - 4;
            }
            self.head.clear();
        }
    }
}

/// A byte stream from a client whose messages are checked before they are read.
pub struct Guarded<S> {
    inner: S,
    /// Bytes received and not yet checked (at most one incomplete message at the end).
    unchecked: BytesMut,
    /// Checked bytes, ready for the decoder.
    checked: BytesMut,
    /// Whether the next message is the untyped start-up packet.
    startup: bool,
    expect: Expect,
    outgoing: Outgoing,
    /// The first malformed message's fault, reported once `checked` is drained.
    broken: Option<String>,
    eof: bool,
}

impl<S> Guarded<S> {
    /// Wraps `inner`; `buffered` holds bytes already read from it by the TLS negotiation.
    pub fn new(inner: S, buffered: BytesMut) -> Self {
        let mut g = Guarded {
            inner,
            unchecked: buffered,
            checked: BytesMut::new(),
            startup: true,
            expect: Expect::Nothing,
            outgoing: Outgoing::default(),
            broken: None,
            eof: false,
        };
        g.check();
        g
    }

    /// Moves every complete, well-formed message from `unchecked` to `checked`.
    fn check(&mut self) {
        while self.broken.is_none() {
            match self.next_message() {
                Ok(Some(n)) => {
                    let msg = self.unchecked.split_to(n);
                    self.checked.extend_from_slice(&msg);
                    self.startup = false;
                }
                Ok(None) => return,
                Err(fault) => {
                    self.broken = Some(fault);
                    self.unchecked.clear();
                }
            }
        }
    }

    /// The size of the complete message at the head of `unchecked` once it is known to be well
    /// formed; None while it is incomplete.
    fn next_message(&self) -> Result<Option<usize>, String> {
        let b = &self.unchecked[..];
        let (head, ty) = if self.startup {
            (0, None)
        } else {
            (1, b.first().copied())
        };
        if b.len() < head + 4 {
            return Ok(None);
        }
        let len = i32::from_be_bytes(b[head..head + 4].try_into().unwrap());
        let limit = match ty {
            None => MAX_SMALL_MESSAGE,
            Some(b'Q' | b'P' | b'B' | b'd' | b'p' | b'f') => MAX_MESSAGE,
            Some(_) => MAX_SMALL_MESSAGE,
        };
        if len < 4 || len as usize > limit {
            return Err(format!("invalid message length {len}"));
        }
        let total = head + len as usize;
        if b.len() < total {
            return Ok(None);
        }
        let body = &b[head + 4..total];
        match ty {
            None => startup(body),
            Some(t) => typed(t, body, self.expect),
        }
        .map_err(|fault| match ty {
            Some(t) => format!("invalid message format ('{}' message): {fault}", t as char),
            None => format!("invalid startup packet layout: {fault}"),
        })?;
        Ok(Some(total))
    }

    fn saw_written(&mut self, bytes: &[u8]) {
        let mut codes = Vec::new();
        self.outgoing.feed(bytes, &mut codes);
        for code in codes {
            self.expect = match code {
                3 | 5 => Expect::Password,
                10 => Expect::SaslInitial,
                11 => Expect::SaslResponse,
                _ => Expect::Nothing,
            };
        }
    }
}

/// A reader over one message body that fails instead of running past its end.
struct Body<'a>(&'a [u8]);

impl Body<'_> {
    fn cstring(&mut self) -> Result<(), String> {
        let nul = self
            .0
            .iter()
            .position(|&c| c == 0)
            .ok_or("a string is not terminated")?;
        self.0 = &self.0[nul + 1..];
        Ok(())
    }
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.0.len() < n {
            return Err("the message ends early".into());
        }
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        Ok(h)
    }
    fn i16(&mut self) -> Result<i16, String> {
        Ok(self.take(2)?.get_i16())
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(self.take(4)?.get_i32())
    }
    fn count(&mut self) -> Result<usize, String> {
        let n = self.i16()?;
        usize::try_from(n).map_err(|_| format!("negative count {n}"))
    }
    /// A length-prefixed value (−1 for NULL).
    fn value(&mut self) -> Result<(), String> {
        match self.i32()? {
            -1 => Ok(()),
            n if n < 0 => Err(format!("invalid value length {n}")),
            n => self.take(n as usize).map(|_| ()),
        }
    }
    fn end(&self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err("the message has trailing bytes".into())
        }
    }
}

fn startup(body: &[u8]) -> Result<(), String> {
    let mut b = Body(body);
    let code = b.i32()?;
    match code {
        CANCEL_REQUEST => {
            b.take(4)?; // pid
            if b.0.len() < 4 || b.0.len() > 256 {
                return Err("invalid cancel key".into());
            }
            Ok(())
        }
        SSL_REQUEST | GSSENC_REQUEST => b.end(),
        _ => {
            // Parameters: name/value pairs, then a terminating NUL.
            while b.0.first().is_some_and(|&c| c != 0) {
                b.cstring()?;
                b.cstring()?;
            }
            b.take(1)?;
            b.end()
        }
    }
}

fn typed(ty: u8, body: &[u8], expect: Expect) -> Result<(), String> {
    let mut b = Body(body);
    match ty {
        b'Q' | b'f' => b.cstring()?, // query, CopyFail
        b'P' => {
            b.cstring()?;
            b.cstring()?;
            let n = b.count()?;
            b.take(4 * n)?;
        }
        b'B' => {
            b.cstring()?;
            b.cstring()?;
            let formats = b.count()?;
            b.take(2 * formats)?;
            for _ in 0..b.count()? {
                b.value()?;
            }
            let results = b.count()?;
            b.take(2 * results)?;
        }
        b'E' => {
            b.cstring()?;
            b.i32()?;
        }
        b'D' | b'C' => {
            let target = b.take(1)?[0];
            if target != b'S' && target != b'P' {
                return Err(format!("invalid target '{}'", target as char));
            }
            b.cstring()?;
        }
        b'S' | b'H' | b'X' | b'c' => {}
        b'd' => return Ok(()),
        b'p' => match expect {
            Expect::Password => b.cstring()?,
            Expect::SaslInitial => {
                b.cstring()?;
                b.value()?;
            }
            Expect::SaslResponse | Expect::Nothing => return Ok(()),
        },
        other => return Err(format!("invalid frontend message type {}", other)),
    }
    b.end()
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.checked.is_empty() {
                let n = this.checked.len().min(buf.remaining());
                buf.put_slice(&this.checked[..n]);
                this.checked.advance(n);
                return Poll::Ready(Ok(()));
            }
            if let Some(fault) = this.broken.take() {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, fault)));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut rb = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            if rb.filled().is_empty() {
                // An incomplete message at the end of the stream is dropped with it.
                this.eof = true;
                continue;
            }
            this.unchecked.extend_from_slice(rb.filled());
            this.check();
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        self.saw_written(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![ty];
        m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// Feeds `bytes` after a start-up packet; returns what passed and the fault, if any.
    fn guard(bytes: &[u8]) -> (usize, Option<String>) {
        let mut start = Vec::new();
        let params = b"user\0u\0\0";
        start.extend_from_slice(&((8 + params.len()) as i32).to_be_bytes());
        start.extend_from_slice(&196608i32.to_be_bytes());
        start.extend_from_slice(params);
        let n = start.len();
        start.extend_from_slice(bytes);
        let g = Guarded::new((), BytesMut::from(&start[..]));
        (g.checked.len() - n, g.broken)
    }

    #[test]
    fn well_formed_messages_pass() {
        let mut all = msg(b'Q', b"select 1\0");
        all.extend(msg(b'P', b"\0select $1\0\0\x01\0\0\0\x17"));
        all.extend(msg(b'B', b"\0\0\0\x01\0\x01\0\x01\0\0\0\x011\0\0"));
        all.extend(msg(b'E', b"\0\0\0\0\0"));
        all.extend(msg(b'S', b""));
        assert_eq!(guard(&all), (all.len(), None));
    }

    #[test]
    fn a_negative_parameter_count_is_refused() {
        let (passed, fault) = guard(&msg(b'P', b"\0select 1\0\xff\xff"));
        assert_eq!(passed, 0);
        assert!(fault.unwrap().contains("negative count"));
    }

    #[test]
    fn a_value_running_past_the_message_is_refused() {
        let (passed, fault) = guard(&msg(b'B', b"\0\0\0\0\0\x01\x7f\0\0\0ab\0\0"));
        assert_eq!(passed, 0);
        assert!(fault.is_some());
    }

    #[test]
    fn lengths_below_four_and_trailing_bytes_are_refused() {
        assert!(guard(b"Q\0\0\0\x02").1.is_some());
        assert!(guard(&msg(b'Q', b"select 1\0junk")).1.is_some());
        assert!(guard(&msg(b'S', b"x")).1.is_some());
    }

    #[test]
    fn messages_before_a_fault_still_pass() {
        let mut all = msg(b'Q', b"select 1\0");
        let ok = all.len();
        all.extend(msg(b'Z', b""));
        assert_eq!(guard(&all).0, ok);
    }

    #[test]
    fn a_password_message_must_fit_the_request() {
        let mut g = Guarded::new((), BytesMut::new());
        g.startup = false;
        // The server asked for SASL: a bare password string is not an initial response.
        g.saw_written(&[b'R', 0, 0, 0, 23, 0, 0, 0, 10]);
        g.saw_written(b"SCRAM-SHA-256\0\0");
        assert_eq!(g.expect, Expect::SaslInitial);
        g.unchecked.extend_from_slice(&msg(b'p', b"secret\0"));
        g.check();
        assert!(g.broken.is_some());
    }
}
