//! Queries a statement computes once, before the rest: a materialized CTE at the top of the
//! statement, read by name where the query stood.
//!
//! DuckDB plans a derived table that holds CTEs of its own (an aggregate's change: the touched
//! groups now and as they were) as one opaque input and joins it last, whatever its size. In
//! the term of TPC-H Q2 that joins the change of its correlated MIN (a few hundred groups)
//! with part, supplier and partsupp, it joined those three first, through a cross product of
//! part and supplier (8M rows), and the term took 0.8 s; with the change a CTE of the statement
//! it is joined first and the term takes 30 ms. A shared query is named by a hash of its text,
//! so the same change read by several terms is computed once.
//!
//! Only an uncorrelated query may be shared: it moves out of every scope it stood in. Where a
//! query is printed without its statement (a shared query inside a recursive CTE, which is not
//! searched), it prints as `WITH name AS MATERIALIZED (query) SELECT * FROM name` in place.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use super::query::{Cte, From, Item, Query, Select};
use super::{Expr, Name};

/// A query computed once per statement (see the module comment).
#[derive(Clone, Debug, PartialEq)]
pub struct Shared {
    pub name: String,
    pub query: Query,
}

impl Shared {
    /// The CTE that computes it.
    pub fn cte(&self) -> Cte {
        Cte {
            name: self.name.clone(),
            query: self.query.clone(),
            materialized: true,
        }
    }

    /// `SELECT * FROM name`: the query where it stood, once hoisted.
    pub fn read(&self) -> Query {
        Query::select(Select::new(
            vec![Item::Star],
            vec![From::Table {
                name: Name(vec![self.name.clone()]),
                alias: None,
            }],
        ))
    }
}

impl Query {
    /// `query` (uncorrelated), computed once by the statement that reads it.
    pub fn shared(query: Query) -> Query {
        let mut h = DefaultHasher::new();
        query.to_string().hash(&mut h);
        let name = format!("_mv_sh{:016x}", h.finish());
        Query::Shared(Box::new(Shared { name, query }))
    }

    /// The query with every shared query in it made a CTE of its top, each before the CTEs
    /// that read it and each once.
    pub fn hoisted(&self) -> Query {
        let mut q = self.clone();
        let mut ctes = Vec::new();
        lift(&mut q, &mut ctes);
        if ctes.is_empty() {
            return q;
        }
        match q {
            Query::With { ctes: own, body } => {
                ctes.extend(own);
                Query::With { ctes, body }
            }
            body => Query::With {
                ctes,
                body: Box::new(body),
            },
        }
    }
}

impl From {
    /// A derived table with its query [`Query::hoisted`]; any other item as it is.
    pub fn hoisted(&self) -> From {
        match self {
            From::Query {
                query,
                alias,
                columns,
                lateral,
            } => From::Query {
                query: Box::new(query.hoisted()),
                alias: alias.clone(),
                columns: columns.clone(),
                lateral: *lateral,
            },
            other => other.clone(),
        }
    }
}

/// Moves the shared queries of `q` into `out` (innermost first), reading each by name.
fn lift(q: &mut Query, out: &mut Vec<Cte>) {
    match q {
        Query::Shared(sh) => {
            lift(&mut sh.query, out);
            if !out.iter().any(|c| c.name == sh.name) {
                out.push(sh.cte());
            }
            *q = sh.read();
        }
        Query::Select(s) => {
            s.from.iter_mut().for_each(|f| lift_from(f, out));
            for e in s.filter.iter_mut().chain(s.having.iter_mut()) {
                lift_expr(e, out);
            }
            for it in s.items.iter_mut() {
                if let Item::Expr(e, _) = it {
                    lift_expr(e, out);
                }
            }
        }
        Query::UnionAll(parts) => parts.iter_mut().for_each(|p| lift(p, out)),
        Query::With { ctes, body } => {
            ctes.iter_mut().for_each(|c| lift(&mut c.query, out));
            lift(body, out);
        }
        // A recursive CTE's parts stay in its scope.
        Query::Values(_) | Query::Fixpoint(_) => {}
    }
}

fn lift_from(f: &mut From, out: &mut Vec<Cte>) {
    match f {
        From::Query { query, .. } => lift(query, out),
        From::Join(j) => {
            lift_from(&mut j.left, out);
            lift_from(&mut j.right, out);
            if let Some(on) = &mut j.on {
                lift_expr(on, out);
            }
        }
        From::Table { .. } | From::Call { .. } => {}
    }
}

/// The subqueries of an expression (the user's own expressions hold none of ours).
fn lift_expr(e: &mut Expr, out: &mut Vec<Cte>) {
    match e {
        Expr::Exists { query, .. } | Expr::Scalar(query) => lift(query, out),
        Expr::Call { args, filter, .. } => {
            args.iter_mut().for_each(|a| lift_expr(a, out));
            if let Some(f) = filter {
                lift_expr(f, out);
            }
        }
        Expr::Bin(l, _, r) => {
            lift_expr(l, out);
            lift_expr(r, out);
        }
        Expr::Case { whens, otherwise } => {
            for (c, r) in whens.iter_mut() {
                lift_expr(c, out);
                lift_expr(r, out);
            }
            lift_expr(otherwise, out);
        }
        Expr::IsNull(x)
        | Expr::IsNotNull(x)
        | Expr::BigInt(x)
        | Expr::CastTo(x, _)
        | Expr::Not(x)
        | Expr::Neg(x) => lift_expr(x, out),
        Expr::Col { .. }
        | Expr::Int(_)
        | Expr::Str(_)
        | Expr::Bool(_)
        | Expr::Null
        | Expr::CountStar
        | Expr::User(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::col;

    fn table(name: &str, alias: &str) -> From {
        From::table(Name::of(name), alias)
    }

    /// A shared query read twice, once inside another derived table and once in an EXISTS,
    /// is one CTE of the statement; printed alone, it computes itself in place.
    #[test]
    fn a_shared_query_is_one_cte_of_the_statement() {
        let change = Query::shared(Query::select(Select::new(
            vec![Item::Star],
            vec![table("_duckmv.d_1_t", "d")],
        )));
        let Query::Shared(sh) = &change else {
            panic!("{change:?}")
        };
        let alone = change.to_string();
        assert!(
            alone.starts_with(&format!("WITH \"{}\" AS MATERIALIZED (", sh.name)),
            "{alone}"
        );
        let inner = Query::select(Select::new(
            vec![Item::Star],
            vec![From::query(change.clone(), "x"), table("main.u", "u")],
        ));
        let outer = Query::select(
            Select::new(vec![Item::Star], vec![From::query(inner, "y")]).filtered([Expr::Exists {
                query: Box::new(change.clone()),
                negated: false,
            }
            .and(col("y", "k").eq(Expr::Int(1)))]),
        );
        let text = outer.hoisted().to_string();
        assert!(
            text.starts_with(&format!("WITH \"{}\" AS MATERIALIZED (", sh.name)),
            "{text}"
        );
        assert_eq!(text.matches("d_1_t").count(), 1, "{text}");
        assert_eq!(text.matches(&sh.name).count(), 3, "{text}");
    }
}
