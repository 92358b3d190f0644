//! Every analysis the server runs on a statement's text, fed text built to break byte-offset
//! arithmetic: multi-byte characters next to quotes and operators, unterminated quotes, escapes at
//! the end, invalid UTF-8 turned into U+FFFD (as the wire layer decodes it). None may panic: a
//! panic on the session thread would leave the client without a reply.

use super::*;

/// Inputs that panicked before (recorded from outside) and their neighbours.
const RECORDED: &[&str] = &[
    "show \"😀",
    "explain lock *İ",
    "explain lock *İ ",
    "concurrentlylevel->>ß",
    "drop materialized view \"ü",
    "\u{fffd}select 1",
    ".😀0createlock'x'intoB'101'explaiń",
    "0isolation$99999999999''usingexplain}\u{feff}uniontable\trecursive\u{feff}*commit$$x$$discardpg_cataloganalyzecaseX'ff'isdeclaregroup$a$",
    "only lock \n ; into [ \r\n view filter e'\\ qualify recursive $$ from when ) ] distinct \u{200b} partition e'\\ prepare \" to \u{200b} 0 İ",
    "E'\\",
    "e'\\ß",
    "x'",
    "$a$ü",
    "\"",
    "\"\"",
    "-ß",
    "<ß",
    ":ß",
    "|😀",
];

const PIECES: &[&str] = &[
    "select",
    "insert into",
    "update",
    "delete from",
    "merge into",
    "copy",
    "create",
    "materialized",
    "view",
    "refresh",
    "drop",
    "alter",
    "table",
    "with",
    "values",
    "returning",
    "on conflict",
    "set",
    "show",
    "begin",
    "commit",
    "savepoint",
    "rollback to",
    "(",
    ")",
    ",",
    ";",
    ".",
    "'",
    "\"",
    "E'",
    "$$",
    "$1",
    "$a$",
    "--",
    "/*",
    "*/",
    "\\",
    "::",
    "<>",
    "||",
    "ß",
    "😀",
    "İ",
    "\u{fffd}",
    "\u{200b}",
    " ",
    "\n",
    "t",
    "x",
    "1",
    "2.5",
    "*",
    "=",
    "from",
    "where",
    "as",
];

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn text(&mut self) -> String {
        let n = 1 + self.next() % 12;
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(PIECES[(self.next() % PIECES.len() as u64) as usize]);
            if self.next().is_multiple_of(3) {
                s.push(' ');
            }
        }
        s
    }
}

fn analyse(text: &str) {
    let toks = lex::tokenize(text);
    for t in &toks {
        assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
        assert!(t.start <= t.end && t.end <= text.len());
    }
    for s in split_statements(text) {
        for t in s.tokens() {
            assert!(s.text().is_char_boundary(t.start) && s.text().is_char_boundary(t.end));
            assert!(t.start <= t.end && t.end <= s.text().len());
        }
        let _ = classify(&s);
        let _ = write_targets(&s);
        let _ = copy::parse_copy(&s);
        let _ = multi::split(&s);
        let _ = params::cast_types(&s);
        let _ = params::substitute(&s, &|n| format!("${n}"));
        let _ = savepoint::parse(s.tokens());
        let _ = upsert::rewrite(s.text(), &mut |_| Ok(vec!["a".into(), "b".into()]));
        let _ = crate::compat::rewrite(&s);
        let _ = crate::compat::normalize(s.clone(), "db");
    }
}

#[test]
fn recorded_inputs_do_not_panic() {
    for text in RECORDED {
        let r = std::panic::catch_unwind(|| analyse(text));
        assert!(r.is_ok(), "analysing {text:?} panicked");
    }
}

#[test]
fn generated_inputs_do_not_panic() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    for i in 0..20_000 {
        let text = g.text();
        let r = std::panic::catch_unwind(|| analyse(&text));
        assert!(r.is_ok(), "input {i} panicked: {text:?}");
    }
}

#[test]
fn every_prefix_of_the_recorded_inputs_is_analysed() {
    for text in RECORDED {
        for (i, _) in text.char_indices() {
            let prefix = &text[..i];
            let r = std::panic::catch_unwind(|| analyse(prefix));
            assert!(r.is_ok(), "analysing {prefix:?} panicked");
        }
    }
}
