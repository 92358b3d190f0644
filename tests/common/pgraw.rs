//! A minimal PostgreSQL protocol v3 client that shows every backend message.
//!
//! tokio-postgres and psql hide what the tests need to see: ReadyForQuery
//! status bytes, exact command tags, Flush, text-format parameters, Close,
//! PortalSuspended and the SSLRequest answer. This client sends frontend
//! messages one by one and decodes what comes back.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a read may wait for the server before the test fails.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// One decoded backend message.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    ParseComplete,
    BindComplete,
    CloseComplete,
    NoData,
    PortalSuspended,
    EmptyQuery,
    ParameterDescription(Vec<u32>),
    RowDescription(Vec<Field>),
    DataRow(Vec<Option<Vec<u8>>>),
    CommandComplete(String),
    Error {
        code: String,
        message: String,
    },
    Notice {
        code: String,
        message: String,
    },
    ReadyForQuery(char),
    /// Any other message, by type byte.
    Other(u8, Vec<u8>),
}

/// One column of a RowDescription.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub type_oid: u32,
    pub format: i16,
}

impl Msg {
    /// The values of a DataRow as UTF-8 text (`None` for NULL).
    pub fn text_values(&self) -> Vec<Option<String>> {
        match self {
            Msg::DataRow(vals) => vals
                .iter()
                .map(|v| v.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()))
                .collect(),
            other => panic!("not a DataRow: {other:?}"),
        }
    }
}

/// A connection after startup, ready for queries.
pub struct RawConn {
    stream: TcpStream,
}

impl RawConn {
    /// Connects and completes the startup handshake (user `test`, database
    /// `test`, trust authentication).
    pub fn connect(addr: SocketAddr) -> RawConn {
        let stream = TcpStream::connect(addr).expect("tcp connect");
        Self::startup(stream)
    }

    /// Completes startup on an already opened socket (e.g. after an
    /// SSLRequest was refused).
    pub fn startup(stream: TcpStream) -> RawConn {
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut conn = RawConn { stream };
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes()); // protocol 3.0
        for (k, v) in [("user", "test"), ("database", "test")] {
            cstr(&mut body, k);
            cstr(&mut body, v);
        }
        body.push(0);
        let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        conn.stream.write_all(&msg).unwrap();
        loop {
            let (tag, body) = conn.read_raw().expect("server closed during startup");
            match tag {
                b'R' => {
                    let code = i32::from_be_bytes(body[0..4].try_into().unwrap());
                    assert_eq!(
                        code, 0,
                        "expected AuthenticationOk (trust), got auth request {code}"
                    );
                }
                b'S' | b'K' | b'N' => {}
                b'E' => panic!("startup failed: {:?}", decode(tag, body)),
                b'Z' => return conn,
                other => panic!("unexpected message {:?} during startup", other as char),
            }
        }
    }

    /// Sends an SSLRequest on a fresh socket and returns the one-byte answer
    /// together with the socket, so startup can continue on it.
    pub fn ssl_request(addr: SocketAddr) -> (u8, TcpStream) {
        let mut stream = TcpStream::connect(addr).expect("tcp connect");
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        let mut msg = 8i32.to_be_bytes().to_vec();
        msg.extend_from_slice(&80877103i32.to_be_bytes());
        stream.write_all(&msg).unwrap();
        let mut answer = [0u8; 1];
        stream.read_exact(&mut answer).expect("SSLRequest answer");
        (answer[0], stream)
    }

    // ---- frontend messages -------------------------------------------------

    fn send(&mut self, tag: u8, body: &[u8]) {
        let mut msg = vec![tag];
        msg.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        msg.extend_from_slice(body);
        self.stream.write_all(&msg).unwrap();
    }

    /// Query (simple protocol).
    pub fn query(&mut self, sql: &str) {
        let mut b = Vec::new();
        cstr(&mut b, sql);
        self.send(b'Q', &b);
    }

    /// Parse: `param_types` are OIDs, 0 meaning "let the server infer".
    pub fn parse(&mut self, name: &str, sql: &str, param_types: &[u32]) {
        let mut b = Vec::new();
        cstr(&mut b, name);
        cstr(&mut b, sql);
        b.extend_from_slice(&(param_types.len() as i16).to_be_bytes());
        for t in param_types {
            b.extend_from_slice(&t.to_be_bytes());
        }
        self.send(b'P', &b);
    }

    /// Bind with one format code for all parameters and one for all results
    /// (0 text, 1 binary).
    pub fn bind(
        &mut self,
        portal: &str,
        statement: &str,
        param_format: i16,
        params: &[Option<&[u8]>],
        result_format: i16,
    ) {
        let mut b = Vec::new();
        cstr(&mut b, portal);
        cstr(&mut b, statement);
        b.extend_from_slice(&1i16.to_be_bytes());
        b.extend_from_slice(&param_format.to_be_bytes());
        b.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for p in params {
            match p {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v);
                }
            }
        }
        b.extend_from_slice(&1i16.to_be_bytes());
        b.extend_from_slice(&result_format.to_be_bytes());
        self.send(b'B', &b);
    }

    /// Describe a statement (`b'S'`) or portal (`b'P'`).
    pub fn describe(&mut self, kind: u8, name: &str) {
        let mut b = vec![kind];
        cstr(&mut b, name);
        self.send(b'D', &b);
    }

    /// Execute a portal; `max_rows` 0 means all rows.
    pub fn execute(&mut self, portal: &str, max_rows: i32) {
        let mut b = Vec::new();
        cstr(&mut b, portal);
        b.extend_from_slice(&max_rows.to_be_bytes());
        self.send(b'E', &b);
    }

    /// Close a statement (`b'S'`) or portal (`b'P'`).
    pub fn close(&mut self, kind: u8, name: &str) {
        let mut b = vec![kind];
        cstr(&mut b, name);
        self.send(b'C', &b);
    }

    pub fn sync(&mut self) {
        self.send(b'S', &[]);
    }

    pub fn flush(&mut self) {
        self.send(b'H', &[]);
    }

    pub fn terminate(&mut self) {
        self.send(b'X', &[]);
    }

    // ---- backend messages --------------------------------------------------

    /// Reads one message; `None` when the server closed the connection.
    fn read_raw(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut head = [0u8; 5];
        match self.stream.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => panic!("reading from server: {e}"),
        }
        let len = i32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len - 4];
        self.stream.read_exact(&mut body).expect("message body");
        Some((head[0], body))
    }

    /// Reads one message, skipping asynchronous ParameterStatus and notices.
    pub fn recv(&mut self) -> Msg {
        loop {
            let (tag, body) = self.read_raw().expect("server closed the connection");
            match decode(tag, body) {
                Msg::Other(b'S', _) | Msg::Notice { .. } => continue,
                msg => return msg,
            }
        }
    }

    /// Reads messages up to and including ReadyForQuery.
    pub fn until_ready(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        loop {
            let msg = self.recv();
            let done = matches!(msg, Msg::ReadyForQuery(_));
            out.push(msg);
            if done {
                return out;
            }
        }
    }

    /// Sends a simple query and returns everything up to ReadyForQuery.
    pub fn simple(&mut self, sql: &str) -> Vec<Msg> {
        self.query(sql);
        self.until_ready()
    }

    /// True when the server closes the socket within a few seconds. Whatever
    /// it sends first (e.g. a FATAL 57P01 at shutdown) is skipped.
    pub fn closed_by_server(&mut self) -> bool {
        self.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 512];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                // A reset also means the server closed its end.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// Sets how long `recv` waits (a short timeout checks that nothing came).
    pub fn set_read_timeout(&mut self, t: Duration) {
        self.stream.set_read_timeout(Some(t)).unwrap();
    }
}

/// Helpers to pick results out of a message list.
pub fn tags(msgs: &[Msg]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            Msg::CommandComplete(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

pub fn errors(msgs: &[Msg]) -> Vec<String> {
    msgs.iter()
        .filter_map(|m| match m {
            Msg::Error { code, .. } => Some(code.clone()),
            _ => None,
        })
        .collect()
}

pub fn rows(msgs: &[Msg]) -> Vec<Vec<Option<String>>> {
    msgs.iter()
        .filter(|m| matches!(m, Msg::DataRow(_)))
        .map(Msg::text_values)
        .collect()
}

pub fn ready_status(msgs: &[Msg]) -> char {
    match msgs.last() {
        Some(Msg::ReadyForQuery(s)) => *s,
        other => panic!("expected ReadyForQuery last, got {other:?}"),
    }
}

fn cstr(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(s.as_bytes());
    buf.push(0);
}

fn read_cstr(body: &[u8], pos: &mut usize) -> String {
    let end = body[*pos..].iter().position(|&b| b == 0).unwrap() + *pos;
    let s = String::from_utf8_lossy(&body[*pos..end]).into_owned();
    *pos = end + 1;
    s
}

fn i16_at(b: &[u8], pos: &mut usize) -> i16 {
    let v = i16::from_be_bytes(b[*pos..*pos + 2].try_into().unwrap());
    *pos += 2;
    v
}

fn i32_at(b: &[u8], pos: &mut usize) -> i32 {
    let v = i32::from_be_bytes(b[*pos..*pos + 4].try_into().unwrap());
    *pos += 4;
    v
}

fn error_fields(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    let mut pos = 0;
    while pos < body.len() && body[pos] != 0 {
        let field = body[pos];
        pos += 1;
        let value = read_cstr(body, &mut pos);
        match field {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    (code, message)
}

fn decode(tag: u8, body: Vec<u8>) -> Msg {
    let mut pos = 0;
    match tag {
        b'1' => Msg::ParseComplete,
        b'2' => Msg::BindComplete,
        b'3' => Msg::CloseComplete,
        b'n' => Msg::NoData,
        b's' => Msg::PortalSuspended,
        b'I' => Msg::EmptyQuery,
        b't' => {
            let n = i16_at(&body, &mut pos);
            Msg::ParameterDescription((0..n).map(|_| i32_at(&body, &mut pos) as u32).collect())
        }
        b'T' => {
            let n = i16_at(&body, &mut pos);
            let fields = (0..n)
                .map(|_| {
                    let name = read_cstr(&body, &mut pos);
                    let _table = i32_at(&body, &mut pos);
                    let _attnum = i16_at(&body, &mut pos);
                    let type_oid = i32_at(&body, &mut pos) as u32;
                    let _size = i16_at(&body, &mut pos);
                    let _modifier = i32_at(&body, &mut pos);
                    let format = i16_at(&body, &mut pos);
                    Field {
                        name,
                        type_oid,
                        format,
                    }
                })
                .collect();
            Msg::RowDescription(fields)
        }
        b'D' => {
            let n = i16_at(&body, &mut pos);
            let vals = (0..n)
                .map(|_| {
                    let len = i32_at(&body, &mut pos);
                    if len < 0 {
                        None
                    } else {
                        let v = body[pos..pos + len as usize].to_vec();
                        pos += len as usize;
                        Some(v)
                    }
                })
                .collect();
            Msg::DataRow(vals)
        }
        b'C' => Msg::CommandComplete(read_cstr(&body, &mut pos)),
        b'E' => {
            let (code, message) = error_fields(&body);
            Msg::Error { code, message }
        }
        b'N' => {
            let (code, message) = error_fields(&body);
            Msg::Notice { code, message }
        }
        b'Z' => Msg::ReadyForQuery(body[0] as char),
        other => Msg::Other(other, body),
    }
}
