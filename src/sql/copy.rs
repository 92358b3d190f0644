//! `COPY … FROM STDIN` / `COPY … TO STDOUT`: reading the statement, and
//! converting between PostgreSQL's COPY text format and the CSV that
//! DuckDB's own COPY reads and that clients may ask for.

use super::classify::Name;
use super::lex::{Tok, Token};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub csv: bool,
    pub header: bool,
    pub delimiter: u8,
    /// The NULL marker: `\N` in text format, empty in CSV.
    pub null: String,
    pub quote: u8,
    pub escape: u8,
    /// PostgreSQL's binary format (COPY FROM STDIN only).
    pub binary: bool,
}

impl CopyOptions {
    fn text() -> Self {
        CopyOptions {
            csv: false,
            header: false,
            delimiter: b'\t',
            null: "\\N".into(),
            quote: b'"',
            escape: b'"',
            binary: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Copy {
    From {
        table: Name,
        columns: Option<Vec<String>>,
        options: CopyOptions,
    },
    /// `source` is a query (a table name becomes `SELECT cols FROM t`).
    To {
        source: String,
        options: CopyOptions,
    },
}

/// Reads a COPY statement that uses STDIN/STDOUT; None for other COPYs
/// (to or from files, which DuckDB runs itself).
pub fn parse_copy(s: &super::lexed::Lexed) -> Result<Option<Copy>, String> {
    let (sql, toks) = (s.text(), s.tokens());
    if !toks.first().is_some_and(|t| t.is_kw("COPY")) {
        return Ok(None);
    }
    let mut i = 1;
    let mut source_query = None;
    let mut table = None;
    if toks.get(i).is_some_and(|t| t.is_punct("(")) {
        let close = matching_paren(toks, i).ok_or("unbalanced parentheses in COPY")?;
        source_query = Some(sql[toks[i].end..toks[close].start].trim().to_string());
        i = close + 1;
    } else {
        let mut parts = Vec::new();
        while let Some(t) = toks.get(i) {
            match t.kind {
                Tok::Word => parts.push(t.text.to_ascii_lowercase()),
                Tok::Ident => parts.push(t.text.clone()),
                _ => break,
            }
            i += 1;
            if toks.get(i).is_some_and(|t| t.is_punct(".")) {
                i += 1;
            } else {
                break;
            }
        }
        let name = parts.pop().ok_or("COPY needs a table name")?;
        let schema = parts.pop();
        table = Some(Name {
            catalog: parts.pop(),
            schema,
            name,
        });
    }
    let mut columns = None;
    if toks.get(i).is_some_and(|t| t.is_punct("(")) {
        let close = matching_paren(toks, i).ok_or("unbalanced parentheses in COPY")?;
        columns = Some(
            toks[i + 1..close]
                .iter()
                .filter(|t| matches!(t.kind, Tok::Word | Tok::Ident))
                .map(|t| {
                    if t.kind == Tok::Word {
                        t.text.to_ascii_lowercase()
                    } else {
                        t.text.clone()
                    }
                })
                .collect::<Vec<_>>(),
        );
        i = close + 1;
    }
    let dir = toks.get(i).map(|t| t.text.clone()).unwrap_or_default();
    let target = toks.get(i + 1).map(|t| t.text.clone()).unwrap_or_default();
    let from = match (dir.as_str(), target.as_str()) {
        ("FROM", "STDIN") => true,
        ("TO", "STDOUT") => false,
        _ => return Ok(None),
    };
    let options = parse_options(&toks[i + 2..])?;
    Ok(Some(if from {
        let table = table.ok_or("COPY FROM STDIN needs a table")?;
        Copy::From {
            table,
            columns,
            options,
        }
    } else {
        if options.binary {
            return Err("COPY TO STDOUT in binary format is not supported".into());
        }
        let source = match (source_query, table) {
            (Some(q), _) => q,
            (None, Some(t)) => {
                let cols = columns
                    .as_ref()
                    .map(|c| {
                        c.iter()
                            .map(|c| super::quote_ident(c))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_else(|| "*".into());
                format!("SELECT {cols} FROM {}", t.quoted())
            }
            _ => unreachable!(),
        };
        Copy::To { source, options }
    }))
}

fn matching_paren(toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.is_punct("(") {
            depth += 1;
        } else if t.is_punct(")") {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

fn string_value(t: &Token) -> String {
    let s = t.text.trim_start_matches(['E', 'e']);
    let inner = s
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(s);
    let inner = inner.replace("''", "'");
    if t.text.starts_with(['E', 'e']) {
        inner.replace("\\t", "\t").replace("\\\\", "\\")
    } else {
        inner
    }
}

/// Both the `WITH (FORMAT csv, HEADER)` form and the old `CSV HEADER
/// DELIMITER ','` form.
fn parse_options(toks: &[Token]) -> Result<CopyOptions, String> {
    let mut o = CopyOptions::text();
    let mut delimiter = None;
    let mut null = None;
    let mut j = 0;
    while j < toks.len() {
        let t = &toks[j];
        let next = toks.get(j + 1);
        let val_is = |k: &str| next.is_some_and(|n| n.is_kw(k));
        match t.text.as_str() {
            "FORMAT" => {
                let f = next
                    .map(|n| n.text.to_ascii_uppercase())
                    .unwrap_or_default();
                match f.trim_matches('\'') {
                    "CSV" => o.csv = true,
                    "TEXT" => o.csv = false,
                    "BINARY" => o.binary = true,
                    other => return Err(format!("COPY format \"{other}\" not recognized")),
                }
                j += 1;
            }
            "CSV" => o.csv = true,
            "BINARY" => o.binary = true,
            "HEADER" => {
                o.header =
                    !(val_is("FALSE") || val_is("OFF") || next.is_some_and(|n| n.text == "0"));
                if val_is("TRUE")
                    || val_is("FALSE")
                    || val_is("ON")
                    || val_is("OFF")
                    || val_is("MATCH")
                {
                    j += 1;
                }
            }
            "DELIMITER" => {
                let v = next.map(string_value).ok_or("DELIMITER needs a value")?;
                delimiter = Some(*v.as_bytes().first().ok_or("empty DELIMITER")?);
                j += 1;
            }
            "NULL" => {
                null = Some(next.map(string_value).ok_or("NULL needs a value")?);
                j += 1;
            }
            "QUOTE" => {
                o.quote = *next
                    .map(string_value)
                    .ok_or("QUOTE needs a value")?
                    .as_bytes()
                    .first()
                    .unwrap_or(&b'"');
                j += 1;
            }
            "ESCAPE" => {
                o.escape = *next
                    .map(string_value)
                    .ok_or("ESCAPE needs a value")?
                    .as_bytes()
                    .first()
                    .unwrap_or(&b'"');
                j += 1;
            }
            "ENCODING" => j += 1,
            _ => {}
        }
        j += 1;
    }
    if o.csv {
        o.delimiter = delimiter.unwrap_or(b',');
        o.null = null.unwrap_or_default();
    } else {
        o.delimiter = delimiter.unwrap_or(b'\t');
        o.null = null.unwrap_or_else(|| "\\N".into());
    }
    Ok(o)
}

/// One line of COPY text format split into its fields, escapes resolved; None for the NULL
/// marker.
pub fn text_fields(line: &[u8], o: &CopyOptions) -> Vec<Option<Vec<u8>>> {
    let null = o.null.as_bytes();
    line.split(|b| *b == o.delimiter)
        .map(|field| (field != null).then(|| unescape(field)))
        .collect()
}

fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let c = field[i];
        let v = if c == b'\\' && i + 1 < field.len() {
            i += 1;
            match field[i] {
                b'b' => 8,
                b'f' => 12,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'v' => 11,
                b'x' => {
                    let hex: Vec<u8> = field[i + 1..]
                        .iter()
                        .take(2)
                        .take_while(|d| d.is_ascii_hexdigit())
                        .copied()
                        .collect();
                    i += hex.len();
                    u8::from_str_radix(std::str::from_utf8(&hex).unwrap_or("0"), 16).unwrap_or(0)
                }
                d @ b'0'..=b'7' => {
                    let mut val = (d - b'0') as u32;
                    let mut k = 0;
                    while k < 2 && i + 1 < field.len() && (b'0'..=b'7').contains(&field[i + 1]) {
                        i += 1;
                        val = val * 8 + (field[i] - b'0') as u32;
                        k += 1;
                    }
                    val as u8
                }
                other => other,
            }
        } else {
            c
        };
        out.push(v);
        i += 1;
    }
    out
}

/// Converts one line of COPY text format (without its newline) to a CSV
/// record where NULL is an unquoted empty field and every value is quoted.
pub fn text_line_to_csv(line: &[u8], o: &CopyOptions, out: &mut Vec<u8>) -> usize {
    let fields = text_fields(line, o);
    for (n, field) in fields.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let Some(v) = field else { continue };
        out.push(b'"');
        for &b in v {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    }
    out.push(b'\n');
    fields.len()
}

/// Appends one field in COPY text format (`None` = NULL).
pub fn text_field(v: Option<&[u8]>, o: &CopyOptions, out: &mut Vec<u8>) {
    match v {
        None => out.extend_from_slice(o.null.as_bytes()),
        Some(bytes) => {
            for &c in bytes {
                match c {
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' if o.delimiter == b'\t' => out.extend_from_slice(b"\\t"),
                    c if c == o.delimiter => {
                        out.push(b'\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
        }
    }
}

/// Appends one field in CSV (`None` = NULL, written as the NULL marker).
pub fn csv_field(v: Option<&[u8]>, o: &CopyOptions, out: &mut Vec<u8>) {
    match v {
        None => out.extend_from_slice(o.null.as_bytes()),
        Some(bytes) => {
            let needs = bytes.is_empty() && o.null.is_empty()
                || bytes
                    .iter()
                    .any(|&c| c == o.delimiter || c == o.quote || c == b'\n' || c == b'\r')
                || bytes == o.null.as_bytes();
            if !needs {
                out.extend_from_slice(bytes);
                return;
            }
            out.push(o.quote);
            for &c in bytes {
                if c == o.quote || c == o.escape {
                    out.push(o.escape);
                }
                out.push(c);
            }
            out.push(o.quote);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_copy(sql: &str) -> Result<Option<Copy>, String> {
        super::parse_copy(&crate::sql::lexed::Lexed::new(sql))
    }

    #[test]
    fn reads_copy_statements() {
        let c = parse_copy("COPY t (a, b) FROM STDIN WITH (FORMAT csv, HEADER true)")
            .unwrap()
            .unwrap();
        match c {
            Copy::From {
                table,
                columns,
                options,
            } => {
                assert_eq!(table.name, "t");
                assert_eq!(columns, Some(vec!["a".into(), "b".into()]));
                assert!(options.csv && options.header);
                assert_eq!(options.delimiter, b',');
            }
            _ => panic!(),
        }
        let c = parse_copy("copy (select 1) to stdout csv header")
            .unwrap()
            .unwrap();
        assert!(
            matches!(c, Copy::To { ref source, ref options } if source == "select 1" && options.csv && options.header)
        );
        assert!(parse_copy("COPY t FROM '/tmp/x.csv'").unwrap().is_none());
        let c = parse_copy("COPY public.t TO STDOUT").unwrap().unwrap();
        assert!(
            matches!(c, Copy::To { ref source, .. } if source == "SELECT * FROM \"public\".\"t\"")
        );
    }

    #[test]
    fn text_format_to_csv() {
        let mut out = Vec::new();
        text_line_to_csv(b"1\t\\N\ta\\tb\\\\c\t\"q\"", &CopyOptions::text(), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"1\",,\"a\tb\\c\",\"\"\"q\"\"\"\n"
        );
    }

    #[test]
    fn fields_out() {
        let o = CopyOptions::text();
        let mut out = Vec::new();
        text_field(Some(b"a\tb\\"), &o, &mut out);
        out.push(b'\t');
        text_field(None, &o, &mut out);
        assert_eq!(out, b"a\\tb\\\\\t\\N");
        let csv = parse_options(&super::super::lex::tokenize("CSV")).unwrap();
        let mut out = Vec::new();
        csv_field(Some(b"x,y"), &csv, &mut out);
        out.push(b',');
        csv_field(Some(b""), &csv, &mut out);
        out.push(b',');
        csv_field(None, &csv, &mut out);
        assert_eq!(out, b"\"x,y\",\"\",");
    }
}
