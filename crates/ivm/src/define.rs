//! From a definition to a compiled plan: the rewrites applied before analysis. A final ORDER BY
//! is taken off and kept for the user-facing view (`order`); an EXCEPT or INTERSECT becomes a
//! count of each side (`set_ops`). Each rewrite must describe the same columns as the
//! definition, and a rewrite the analysis cannot maintain is dropped for the definition itself
//! (which then recomputes, with the analysis's reason).

use super::alter::column_types_of;
use super::compile::{self, Compiled};
use super::plan::Body;
use super::{order, set_ops, IvmError, Sql};

/// A compiled definition and what CREATE says about it besides.
pub struct Defined {
    pub compiled: Compiled,
    /// Why the rows are not kept in the ORDER BY's order, when they are not.
    pub order_dropped: Option<String>,
}

/// Compiles `query`, whose output DuckDB names `query_names` with `types`; `columns` are the
/// view's names for them (the user's column list applied).
pub fn define(
    db: &mut dyn Sql,
    id: i64,
    query: &str,
    query_names: &[String],
    columns: Vec<String>,
    types: Vec<String>,
) -> Result<Defined, IvmError> {
    let ordered = order::split(query, query_names);
    let reordered = ordered.query != query && same_columns(db, &ordered.query, query, &types)?;
    let maintained = if reordered {
        ordered.query.as_str()
    } else {
        query
    };
    let counted = match set_ops::rewrite(maintained, query_names) {
        Some((sql, op)) => counted_compile(db, id, &sql, &columns, &types)?.map(|c| (c, op)),
        None => None,
    };
    let mut compiled = match counted {
        Some((mut c, op)) if c.full_reason.is_none() => {
            c.plan.strategy = format!(
                "incremental: {}, as a count per row of each side",
                op.name()
            );
            c.plan.set_op = Some(op);
            c
        }
        Some((c, _)) => {
            // A side that cannot be maintained: the definition recomputes, for that reason.
            let mut whole = compile::compile(db, id, maintained, columns, types)?;
            if let Some(reason) = c.full_reason {
                whole.plan.strategy = format!("full: {reason}");
                whole.full_reason = Some(reason);
            }
            whole
        }
        None => compile::compile(db, id, maintained, columns, types)?,
    };
    if reordered && ordered.limit.is_some() && compiled.full_reason.is_some() {
        // Recomputed anyway: recompute the top rows, not the whole result.
        compiled.plan.body = Body::Full {
            query: query.to_string(),
        };
        return Ok(Defined {
            compiled,
            order_dropped: None,
        });
    }
    let order_dropped = if reordered {
        compiled.plan.order_by = ordered.order_by;
        if let Some(limit) = ordered.limit {
            compiled.plan.strategy = format!(
                "{}; {limit} of the whole result, which is kept",
                compiled.plan.strategy
            );
            compiled.plan.limit = Some(limit);
        }
        ordered.dropped
    } else {
        None
    };
    Ok(Defined {
        compiled,
        order_dropped,
    })
}

/// The set operation's grouped count, compiled, when it describes the view's columns plus two
/// counts.
fn counted_compile(
    db: &mut dyn Sql,
    id: i64,
    counted: &str,
    columns: &[String],
    types: &[String],
) -> Result<Option<Compiled>, IvmError> {
    let Some(described) = describes(db, counted)? else {
        return Ok(None);
    };
    if described.len() != types.len() + 2 || described[..types.len()] != *types {
        return Ok(None);
    }
    let mut names = columns.to_vec();
    names.extend([set_ops::LEFT.to_string(), set_ops::RIGHT.to_string()]);
    Ok(Some(compile::compile(db, id, counted, names, described)?))
}

/// Whether `stripped`, the definition `query` without its final ORDER BY/LIMIT, describes the
/// same `types`. When neither binds on a connection of its own, the definition reads tables
/// created in this transaction, which that connection cannot see; the strip took clauses off
/// the syntax tree and left the columns as they were, so the answer is yes.
fn same_columns(
    db: &mut dyn Sql,
    stripped: &str,
    query: &str,
    types: &[String],
) -> Result<bool, IvmError> {
    match describes(db, stripped)? {
        Some(described) => Ok(described == types),
        None => Ok(!db.binds_alone(&format!("DESCRIBE {query}"))),
    }
}

/// The column types of `query`, or None when DuckDB cannot describe it. Asked of a statement
/// that binds on its own first: a failed statement would end the caller's transaction. (So a
/// definition over tables created in the same transaction is not rewritten.)
fn describes(db: &mut dyn Sql, query: &str) -> Result<Option<Vec<String>>, IvmError> {
    if !db.binds_alone(&format!("DESCRIBE {query}")) {
        return Ok(None);
    }
    column_types_of(db, query).map(Some)
}
