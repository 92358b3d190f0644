//! One statement's text with its tokens, lexed once.
//!
//! A statement passes many checks on its way to DuckDB (what command it is, which tables it
//! writes, whether it has RETURNING, its command tag, the guard's rules, the compatibility
//! rewrites). Each reads this value instead of lexing the text again. A query string is lexed
//! once as a whole and cut at its top-level `;` tokens (`split`), so even splitting shares the
//! one lexer. Only a rewrite that produces new text (the connected catalog dropped, a reserved
//! word quoted) lexes that new text, which is then the statement.

use super::lex::{tokenize, Tok, Token};

#[derive(Clone, Debug, Default)]
pub struct Lexed {
    text: String,
    tokens: Vec<Token>,
}

impl Lexed {
    /// Lexes `text`, one statement.
    pub fn new(text: impl Into<String>) -> Lexed {
        let text = text.into();
        let tokens = tokenize(&text);
        Lexed { text, tokens }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    pub fn into_text(self) -> String {
        self.text
    }

    /// The first `n` keywords, skipping leading parentheses.
    pub fn leading_words(&self, n: usize) -> impl Iterator<Item = &str> {
        self.tokens
            .iter()
            .skip_while(|t| t.is_punct("("))
            .take_while(|t| t.kind == Tok::Word)
            .take(n)
            .map(|t| t.text.as_str())
    }

    /// The first keyword (after leading parentheses), upper-cased.
    pub fn first_word(&self) -> Option<&str> {
        self.leading_words(1).next()
    }

    /// Whether the keyword `kw` (upper-case) appears anywhere as a bare word.
    pub fn has_kw(&self, kw: &str) -> bool {
        self.tokens.iter().any(|t| t.is_kw(kw))
    }

    /// What follows the first bare keyword `kw` (the query of `CREATE … AS query`), with its
    /// tokens, without lexing it again.
    pub fn after_keyword(&self, kw: &str) -> Option<Lexed> {
        let at = self.tokens.iter().position(|t| t.is_kw(kw))?;
        let rest = self.tokens[at + 1..].to_vec();
        let mut out = Vec::new();
        push(
            &mut out,
            &self.text,
            self.tokens[at].end,
            self.text.len(),
            rest,
        );
        out.pop()
    }

    /// Whether the statement holds nothing but whitespace and comments.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Splits a query string into statements at its `;` tokens: each trimmed, without the `;`, with
/// its tokens. Statements that hold nothing but whitespace and comments are dropped. Tokens are
/// moved, not copied: a bulk INSERT of millions of tokens is held once.
pub fn split(sql: &str) -> Vec<Lexed> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut toks = Vec::new();
    for t in tokenize(sql) {
        if t.is_punct(";") {
            push(&mut out, sql, start, t.start, std::mem::take(&mut toks));
            start = t.end;
        } else {
            toks.push(t);
        }
    }
    push(&mut out, sql, start, sql.len(), toks);
    out
}

/// Adds the statement `sql[from..to]` with `toks` (offsets into `sql`, made offsets into the
/// statement), unless it has no token.
fn push(out: &mut Vec<Lexed>, sql: &str, from: usize, to: usize, mut toks: Vec<Token>) {
    if toks.is_empty() {
        return;
    }
    let piece = &sql[from..to];
    let lead = piece.len() - piece.trim_start().len();
    let text = piece.trim().to_string();
    let base = from + lead;
    for t in &mut toks {
        t.start -= base;
        t.end = (t.end - base).min(text.len());
    }
    out.push(Lexed { text, tokens: toks });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(sql: &str) -> Vec<String> {
        split(sql).into_iter().map(Lexed::into_text).collect()
    }

    #[test]
    fn splits_plain() {
        assert_eq!(s("select 1; select 2;"), vec!["select 1", "select 2"]);
        assert_eq!(s("select 1"), vec!["select 1"]);
        assert!(s(" ; ;; -- nothing\n").is_empty());
    }

    #[test]
    fn keeps_quoted_semicolons() {
        assert_eq!(
            s("select 'a;b'; select \"x;y\" from t"),
            vec!["select 'a;b'", "select \"x;y\" from t"]
        );
        assert_eq!(
            s("select 'it''s;'; select 2"),
            vec!["select 'it''s;'", "select 2"]
        );
        assert_eq!(
            s("select E'a\\';b'; select 2"),
            vec!["select E'a\\';b'", "select 2"]
        );
        assert_eq!(
            s("select $$a;b$$; select $q$;$q$"),
            vec!["select $$a;b$$", "select $q$;$q$"]
        );
        assert_eq!(s("select $1; select 2"), vec!["select $1", "select 2"]);
    }

    #[test]
    fn skips_comments() {
        assert_eq!(
            s("select 1 -- a;b\n; /* c;d /* e; */ */ select 2"),
            vec!["select 1 -- a;b", "/* c;d /* e; */ */ select 2"]
        );
    }

    /// The tokens of each piece are those of its own text, at its own offsets.
    #[test]
    fn tokens_match_the_pieces_text() {
        let sql = "  select 'a;b' , x ;\n\t insert into \"T\" values ($1) ; -- end";
        for piece in split(sql) {
            let fresh = tokenize(piece.text());
            assert_eq!(piece.tokens().len(), fresh.len(), "{}", piece.text());
            for (a, b) in piece.tokens().iter().zip(&fresh) {
                assert_eq!((a.start, a.end, &a.text), (b.start, b.end, &b.text));
            }
        }
        assert_eq!(split(sql)[1].first_word(), Some("INSERT"));
        assert_eq!(Lexed::new("(select 1)").first_word(), Some("SELECT"));
        let insert = Lexed::new("/* c */ insert into t");
        let words: Vec<_> = insert.leading_words(2).collect();
        assert_eq!(words, vec!["INSERT", "INTO"]);
        let create = Lexed::new("create materialized view v as  select 'as' from t ");
        let query = create.after_keyword("AS").unwrap();
        assert_eq!(query.text(), "select 'as' from t");
        assert_eq!(query.tokens()[1].text, "'as'");
        assert_eq!(query.tokens()[1].start, 7);
    }
}
