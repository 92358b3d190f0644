//! SAVEPOINT, RELEASE [SAVEPOINT] and ROLLBACK [WORK | TRANSACTION] TO
//! [SAVEPOINT]: which one, and the savepoint's name as PostgreSQL folds it.

use super::lex::{Tok, Token};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SavepointOp {
    Define(String),
    Release(String),
    RollbackTo(String),
}

/// Reads a savepoint command; Err is a syntax error's message.
pub fn parse(toks: &[Token]) -> Result<SavepointOp, String> {
    let word = |i: usize| {
        toks.get(i)
            .filter(|t| t.kind == Tok::Word)
            .map(|t| t.text.as_str())
            .unwrap_or("")
    };
    let (op, mut i): (fn(String) -> SavepointOp, usize) = match word(0) {
        "SAVEPOINT" => (SavepointOp::Define, 1),
        "RELEASE" => (SavepointOp::Release, 1),
        "ROLLBACK" | "ABORT" => {
            let mut i = 1;
            if matches!(word(i), "WORK" | "TRANSACTION") {
                i += 1;
            }
            if word(i) != "TO" {
                return Err("syntax error: expected TO".into());
            }
            (SavepointOp::RollbackTo, i + 1)
        }
        _ => return Err("not a savepoint command".into()),
    };
    // SAVEPOINT is optional after RELEASE and TO; `RELEASE savepoint` with
    // nothing after it names a savepoint called "savepoint".
    if !matches!(word(0), "SAVEPOINT") && word(i) == "SAVEPOINT" && toks.len() > i + 1 {
        i += 1;
    }
    let rest: Vec<_> = toks[i.min(toks.len())..]
        .iter()
        .filter(|t| !t.is_punct(";"))
        .collect();
    match rest.as_slice() {
        [t] if t.kind == Tok::Word => Ok(op(t.text.to_lowercase())),
        [t] if t.kind == Tok::Ident => Ok(op(t.text.clone())),
        [] => Err("syntax error: savepoint name expected".into()),
        _ => Err("syntax error after the savepoint name".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SavepointOp::*;

    fn parse(sql: &str) -> Result<SavepointOp, String> {
        super::parse(&super::super::lex::tokenize(sql))
    }

    #[test]
    fn forms() {
        assert_eq!(parse("SAVEPOINT a"), Ok(Define("a".into())));
        assert_eq!(parse("savepoint \"_pg3_1\""), Ok(Define("_pg3_1".into())));
        assert_eq!(parse("SAVEPOINT Mixed;"), Ok(Define("mixed".into())));
        assert_eq!(parse("RELEASE SAVEPOINT a"), Ok(Release("a".into())));
        assert_eq!(parse("release a"), Ok(Release("a".into())));
        assert_eq!(parse("release savepoint"), Ok(Release("savepoint".into())));
        assert_eq!(parse("ROLLBACK TO SAVEPOINT a"), Ok(RollbackTo("a".into())));
        assert_eq!(parse("rollback work to b"), Ok(RollbackTo("b".into())));
        assert_eq!(
            parse("ROLLBACK TRANSACTION TO SAVEPOINT \"X\""),
            Ok(RollbackTo("X".into()))
        );
        assert!(parse("SAVEPOINT").is_err());
        assert!(parse("SAVEPOINT a b").is_err());
        assert!(parse("ROLLBACK a").is_err());
    }
}
