//! How deeply a statement nests. DuckDB's parser, binder and planner, and the server's own
//! analyses, recurse once per level; a statement nested tens of thousands deep would overflow the
//! session thread's stack and abort the process. PostgreSQL answers such statements with 54001
//! ("stack depth limit exceeded") and so does the server, before anything recurses.
//!
//! A chain of set operations (`SELECT … UNION ALL SELECT … UNION ALL …`) is a tree as deep as it
//! is long, and DuckDB 2.0's planner walks it in more than quadratic time (measured over the wire:
//! 1,000 branches 0.28 s, 2,000 0.86 s, 4,000 6.2 s, 10,000 34 s, during which the session
//! cannot be cancelled), so the operations in a statement count as levels too.

use super::lex::{Tok, Token};
use super::lexed::Lexed;

/// The deepest nesting of parentheses accepted. Hand-written and generated SQL stays far below
/// it; the session thread's stack holds it with room to spare (tested in tests/wire_protocol.rs).
pub const MAX_DEPTH: usize = 1000;

/// The deepest nesting in `sql`: of parentheses (outside strings, names and comments), or of set
/// operations, whichever is deeper.
pub fn nesting(toks: &[Token]) -> usize {
    let (mut depth, mut max, mut set_ops) = (0usize, 0usize, 0usize);
    for t in toks {
        if t.kind == Tok::Word {
            if matches!(t.text.as_str(), "UNION" | "INTERSECT" | "EXCEPT") {
                set_ops += 1;
            }
            continue;
        }
        if t.kind != Tok::Punct {
            continue;
        }
        match t.text.as_str() {
            "(" | "[" => {
                depth += 1;
                max = max.max(depth);
            }
            ")" | "]" => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max.max(set_ops)
}

/// Whether `sql` nests deeper than [`MAX_DEPTH`].
pub fn too_deep(s: &Lexed) -> bool {
    // A statement with fewer tokens than the limit cannot nest past it.
    s.tokens().len() > MAX_DEPTH && nesting(s.tokens()) > MAX_DEPTH
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nesting(sql: &str) -> usize {
        super::nesting(&super::super::lex::tokenize(sql))
    }

    fn too_deep(sql: &str) -> bool {
        super::too_deep(&Lexed::new(sql))
    }

    #[test]
    fn counts_parentheses_outside_quotes() {
        assert_eq!(nesting("select ((1)), '((((' , \"(\" -- (((\n"), 2);
        let deep = format!("select {}1{}", "(".repeat(1001), ")".repeat(1001));
        assert!(too_deep(&deep));
        let ok = format!("select {}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(!too_deep(&ok));
        let unions = vec!["select 1"; 1002].join(" union all ");
        assert!(too_deep(&unions));
        assert!(!too_deep(&vec!["select 1"; 1001].join(" union all ")));
    }
}
