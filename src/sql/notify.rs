//! LISTEN, UNLISTEN, NOTIFY and a statement that is only `SELECT pg_notify(channel, payload)`:
//! the channel as PostgreSQL names it (an identifier, folded to lower case unless quoted) and
//! the payload's text.

use super::lex::{Tok, Token};
use super::lexed::Lexed;

/// An argument of `pg_notify`: text known when the statement is read, NULL, or a parameter
/// bound later (`$n`, 1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    Text(String),
    Null,
    Param(usize),
}

/// The commands of this module, as `classify` names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotifyCommand {
    Listen(String),
    /// None: UNLISTEN *.
    Unlisten(Option<String>),
    Notify {
        channel: String,
        payload: String,
    },
    /// `SELECT pg_notify(channel, payload) [AS name]`; `column` names the result column.
    PgNotify {
        channel: Arg,
        payload: Arg,
        column: String,
    },
}

impl NotifyCommand {
    /// How many parameters (`$n`) the statement takes.
    pub fn param_count(&self) -> usize {
        let NotifyCommand::PgNotify {
            channel, payload, ..
        } = self
        else {
            return 0;
        };
        [channel, payload]
            .iter()
            .map(|a| match a {
                Arg::Param(n) => *n,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }
}

/// PostgreSQL's message for a token it did not expect (`None`: the statement ended early).
fn unexpected(sql: &str, t: Option<&Token>) -> String {
    match t {
        Some(t) => format!("syntax error at or near \"{}\"", &sql[t.start..t.end]),
        None => "syntax error at end of input".into(),
    }
}

/// The tokens of a statement without its closing semicolons.
fn body(toks: &[Token]) -> &[Token] {
    let mut end = toks.len();
    while end > 0 && toks[end - 1].is_punct(";") {
        end -= 1;
    }
    &toks[..end]
}

/// A channel name: an identifier as PostgreSQL folds it.
fn channel(sql: &str, t: Option<&Token>) -> Result<String, String> {
    match t {
        Some(t) if t.kind == Tok::Word => Ok(t.text.to_ascii_lowercase()),
        Some(t) if t.kind == Tok::Ident && t.text.is_empty() => {
            Err("zero-length delimited identifier".into())
        }
        Some(t) if t.kind == Tok::Ident => Ok(t.text.clone()),
        other => Err(unexpected(sql, other)),
    }
}

/// Fails unless the statement ends at `i`.
fn end(sql: &str, toks: &[Token], i: usize) -> Result<(), String> {
    match toks.get(i) {
        None => Ok(()),
        other => Err(unexpected(sql, other)),
    }
}

/// Reads LISTEN / UNLISTEN / NOTIFY; Err is a syntax error's message.
pub fn parse(s: &Lexed) -> Result<NotifyCommand, String> {
    let (sql, toks) = (s.text(), body(s.tokens()));
    let first = toks.first().map(|t| t.text.as_str()).unwrap_or("");
    let cmd = match first {
        "LISTEN" => NotifyCommand::Listen(channel(sql, toks.get(1))?),
        "UNLISTEN" if toks.get(1).is_some_and(|t| t.is_punct("*")) => NotifyCommand::Unlisten(None),
        "UNLISTEN" => NotifyCommand::Unlisten(Some(channel(sql, toks.get(1))?)),
        "NOTIFY" => {
            let channel = channel(sql, toks.get(1))?;
            if toks.get(2).is_some_and(|t| t.is_punct(",")) {
                let payload = match toks.get(3) {
                    Some(t) if t.kind == Tok::Str => string(sql, t)?,
                    other => return Err(unexpected(sql, other)),
                };
                end(sql, toks, 4)?;
                return Ok(NotifyCommand::Notify { channel, payload });
            }
            end(sql, toks, 2)?;
            return Ok(NotifyCommand::Notify {
                channel,
                payload: String::new(),
            });
        }
        _ => return Err("not a LISTEN, UNLISTEN or NOTIFY command".into()),
    };
    end(sql, toks, 2)?;
    Ok(cmd)
}

/// `SELECT [pg_catalog.]pg_notify(a, b) [[AS] name]` and nothing more, with each argument a
/// string literal, NULL or a parameter, optionally cast to text. None for any other statement,
/// which goes to DuckDB as written.
pub fn parse_pg_notify(s: &Lexed) -> Option<Result<NotifyCommand, String>> {
    let (sql, toks) = (s.text(), body(s.tokens()));
    let mut i = 1;
    if toks.get(i)?.is_kw("PG_CATALOG") && toks.get(i + 1)?.is_punct(".") {
        i += 2;
    }
    if !toks.get(i)?.is_kw("PG_NOTIFY") || !toks.get(i + 1)?.is_punct("(") {
        return None;
    }
    let (channel, next) = arg(sql, toks, i + 2)?;
    if !toks.get(next)?.is_punct(",") {
        return None;
    }
    let (payload, next) = arg(sql, toks, next + 1)?;
    if !toks.get(next)?.is_punct(")") {
        return None;
    }
    let (column, next) = alias(toks, next + 1)?;
    if next != toks.len() {
        return None;
    }
    Some(match (channel, payload) {
        (Ok(channel), Ok(payload)) => Ok(NotifyCommand::PgNotify {
            channel,
            payload,
            column,
        }),
        (Err(e), _) | (_, Err(e)) => Err(e),
    })
}

/// One argument of `pg_notify` at `i` and where the next token is; None for anything but a
/// string, NULL or `$n`, each with optional `::text` / `::varchar` casts.
fn arg(sql: &str, toks: &[Token], i: usize) -> Option<(Result<Arg, String>, usize)> {
    let t = toks.get(i)?;
    let a = match t.kind {
        Tok::Str => string(sql, t).map(Arg::Text),
        Tok::Word if t.text == "NULL" => Ok(Arg::Null),
        Tok::Punct if t.text.len() > 1 && t.text.starts_with('$') => {
            Ok(Arg::Param(t.text[1..].parse().ok().filter(|n| *n > 0)?))
        }
        _ => return None,
    };
    let mut j = i + 1;
    while toks.get(j).is_some_and(|t| t.is_punct("::")) {
        let ty = toks.get(j + 1)?;
        if !(ty.is_kw("TEXT") || ty.is_kw("VARCHAR")) {
            return None;
        }
        j += 2;
    }
    Some((a, j))
}

/// The result column's name: an alias at `i` (with or without AS), else `pg_notify`.
fn alias(toks: &[Token], mut i: usize) -> Option<(String, usize)> {
    let with_as = toks.get(i).is_some_and(|t| t.is_kw("AS"));
    if with_as {
        i += 1;
    }
    match toks.get(i) {
        Some(t) if t.kind == Tok::Word => Some((t.text.to_ascii_lowercase(), i + 1)),
        Some(t) if t.kind == Tok::Ident => Some((t.text.clone(), i + 1)),
        None if !with_as => Some(("pg_notify".into(), i)),
        _ => None,
    }
}

/// The text of a string literal token: '…', E'…' (backslash escapes), N'…' or $tag$…$tag$.
fn string(sql: &str, t: &Token) -> Result<String, String> {
    let raw = t.text.as_str();
    if let Some(rest) = raw.strip_prefix('$') {
        let tag_len = rest.find('$').map(|k| k + 2).unwrap_or(raw.len());
        let tag = &raw[..tag_len];
        return raw[tag_len..]
            .strip_suffix(tag)
            .filter(|_| raw.len() >= 2 * tag_len)
            .map(str::to_string)
            .ok_or_else(|| "unterminated dollar-quoted string".into());
    }
    let (escapes, quoted) = match raw.as_bytes().first() {
        Some(b'\'') => (false, raw),
        Some(b'E' | b'e') => (true, &raw[1..]),
        Some(b'N' | b'n') => (false, &raw[1..]),
        _ => return Err(unexpected(sql, Some(t))),
    };
    let inner = quoted
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .filter(|_| quoted.len() >= 2)
        .ok_or("unterminated quoted string")?;
    if escapes {
        return unescape(inner);
    }
    // A lone quote left inside: the literal never ended (`'abc''`).
    let text = inner.replace("''", "'");
    if inner.replace("''", "").contains('\'') {
        return Err("unterminated quoted string".into());
    }
    Ok(text)
}

/// The text of an E'…' string's body: PostgreSQL's backslash escapes, and '' for a quote.
/// Octal and hex escapes give bytes, as in PostgreSQL: the result must be valid UTF-8.
fn unescape(s: &str) -> Result<String, String> {
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            // The lexer only ends the literal at a lone quote: this is the first of ''.
            chars.next();
            out.push(b'\'');
            continue;
        }
        if c != '\\' {
            push(&mut out, c);
            continue;
        }
        let Some(e) = chars.next() else {
            return Err("unterminated quoted string".into());
        };
        let (radix, max, first) = match e {
            'b' => (0, 0, '\u{8}'),
            'f' => (0, 0, '\u{c}'),
            'n' => (0, 0, '\n'),
            'r' => (0, 0, '\r'),
            't' => (0, 0, '\t'),
            '0'..='7' => (8, 3, e),
            'x' => (16, 2, e),
            'u' => (16, 4, e),
            'U' => (16, 8, e),
            other => (0, 0, other),
        };
        if radix == 0 {
            push(&mut out, first);
            continue;
        }
        let mut digits = String::new();
        if radix == 8 {
            digits.push(e);
        }
        while digits.len() < max {
            match chars.peek() {
                Some(d) if d.is_digit(radix) => digits.push(*d),
                _ => break,
            }
            chars.next();
        }
        if digits.is_empty() {
            // `\x` without hex digits is an x.
            push(&mut out, e);
            continue;
        }
        let code = u32::from_str_radix(&digits, radix).map_err(|e| e.to_string())?;
        if matches!(e, 'u' | 'U') {
            match char::from_u32(code).filter(|c| *c != '\0') {
                Some(c) => push(&mut out, c),
                None => return Err("invalid Unicode escape value".into()),
            }
        } else {
            // A byte, as PostgreSQL's lexer keeps it.
            out.push((code & 0xff) as u8);
        }
    }
    if out.contains(&0) {
        return Err("invalid byte sequence for encoding \"UTF8\": 0x00".into());
    }
    String::from_utf8(out).map_err(|_| "invalid byte sequence for encoding \"UTF8\"".into())
}

fn push(out: &mut Vec<u8>, c: char) {
    let mut buf = [0; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use NotifyCommand::*;

    fn parse(sql: &str) -> Result<NotifyCommand, String> {
        super::parse(&Lexed::new(sql))
    }

    fn pg_notify(sql: &str) -> Option<Result<NotifyCommand, String>> {
        super::parse_pg_notify(&Lexed::new(sql))
    }

    fn notify(channel: &str, payload: &str) -> NotifyCommand {
        Notify {
            channel: channel.into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn channels_are_identifiers() {
        assert_eq!(parse("LISTEN Events"), Ok(Listen("events".into())));
        assert_eq!(
            parse("listen \"duckmv_refresh.V\";"),
            Ok(Listen("duckmv_refresh.V".into()))
        );
        assert_eq!(parse("UNLISTEN a"), Ok(Unlisten(Some("a".into()))));
        assert_eq!(parse("unlisten *"), Ok(Unlisten(None)));
        assert_eq!(parse("NOTIFY A"), Ok(notify("a", "")));
        assert_eq!(parse("notify \"A b\", 'it''s'"), Ok(notify("A b", "it's")));
    }

    #[test]
    fn payloads_are_string_literals() {
        assert_eq!(
            parse("NOTIFY c, E'a\\nb\\'c\\\\'"),
            Ok(notify("c", "a\nb'c\\"))
        );
        assert_eq!(
            parse("NOTIFY c, e'\\x41\\101\\u00e9'"),
            Ok(notify("c", "AAé"))
        );
        assert_eq!(parse("NOTIFY c, $$x 'y'$$"), Ok(notify("c", "x 'y'")));
        assert_eq!(parse("NOTIFY c, $t$a$$b$t$"), Ok(notify("c", "a$$b")));
        assert_eq!(parse("NOTIFY c, N'n'"), Ok(notify("c", "n")));
        assert_eq!(parse("NOTIFY c, ''"), Ok(notify("c", "")));
    }

    #[test]
    fn malformed_forms_are_syntax_errors() {
        assert_eq!(parse("LISTEN"), Err("syntax error at end of input".into()));
        assert_eq!(
            parse("LISTEN a b"),
            Err("syntax error at or near \"b\"".into())
        );
        assert!(parse("LISTEN 'a'").is_err());
        assert!(parse("LISTEN \"\"").is_err());
        assert!(parse("UNLISTEN").is_err());
        assert!(parse("UNLISTEN * x").is_err());
        assert!(parse("NOTIFY").is_err());
        assert!(parse("NOTIFY c,").is_err());
        assert!(parse("NOTIFY c, 1").is_err());
        assert!(parse("NOTIFY c 'x'").is_err());
        assert!(parse("NOTIFY c, 'x', 'y'").is_err());
        assert!(parse("NOTIFY c, 'unterminated").is_err());
        assert!(parse("NOTIFY c, 'unterminated''").is_err());
        assert!(parse("NOTIFY c, X'41'").is_err());
    }

    #[test]
    fn classify_names_them() {
        use crate::sql::{classify, Command};
        let c = |s: &str| classify(&Lexed::new(s));
        assert_eq!(c("listen x").unwrap(), Command::Notify(Listen("x".into())));
        assert_eq!(
            c("SELECT pg_notify('a', 'b')").unwrap(),
            Command::Notify(PgNotify {
                channel: Arg::Text("a".into()),
                payload: Arg::Text("b".into()),
                column: "pg_notify".into()
            })
        );
        assert_eq!(c("select 1").unwrap(), Command::Passthrough);
        assert!(c("notify").is_err());
    }

    #[test]
    fn pg_notify_as_the_whole_statement() {
        let call = |c: Arg, p: Arg, col: &str| {
            Some(Ok(PgNotify {
                channel: c,
                payload: p,
                column: col.into(),
            }))
        };
        let text = |s: &str| Arg::Text(s.into());
        assert_eq!(
            pg_notify("SELECT pg_notify('Ch', 'p')"),
            call(text("Ch"), text("p"), "pg_notify")
        );
        assert_eq!(
            pg_notify("select pg_catalog.pg_notify($1, $2::text) AS \"pg_notify\";"),
            call(Arg::Param(1), Arg::Param(2), "pg_notify")
        );
        assert_eq!(
            pg_notify("SELECT pg_notify('c'::varchar, NULL) n"),
            call(text("c"), Arg::Null, "n")
        );
        assert_eq!(pg_notify("SELECT pg_notify('c', 'p'), 1"), None);
        assert_eq!(pg_notify("SELECT pg_notify(x, 'p') FROM t"), None);
        assert_eq!(pg_notify("SELECT pg_notify('c', 'p') FROM t"), None);
        assert_eq!(pg_notify("SELECT pg_notify('c', 'p'::int)"), None);
        assert_eq!(pg_notify("SELECT 1"), None);
        assert!(matches!(
            pg_notify("SELECT pg_notify('c', E'\\400')"),
            Some(Err(_))
        ));
    }
}
