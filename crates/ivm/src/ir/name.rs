//! Relation names as the plan stores them, printed with every part quoted.

use std::fmt;

use sqlparser::ast::{ObjectName, ObjectNamePart};

use super::quoted;

/// A relation's name, one part per dot (`_duckmv`, `mv_3`); every part is quoted when printed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Name(pub Vec<String>);

impl Name {
    /// The name of a relation as the plan stores it: quoted or bare parts joined by dots
    /// (`"main"."t"`, `_duckmv.d_3_t`).
    pub fn of(stored: &str) -> Name {
        let mut parts = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = stored.trim().chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                '.' if !quoted => parts.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        parts.push(cur);
        Name(parts)
    }

    pub fn to_ast(&self) -> ObjectName {
        ObjectName(
            self.0
                .iter()
                .map(|p| ObjectNamePart::Identifier(quoted(p)))
                .collect(),
        )
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_ast().fmt(f)
    }
}
