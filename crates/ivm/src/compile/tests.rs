//! The compiler's unit tests: which shapes are incremental, and why the others are not.

use super::*;
use crate::plan::{Aggregate, Rel};
use crate::DbError;

/// Answers the catalog lookups the compiler makes: tables t(k, g, v) and u(k, w), no
/// materialized views, a few aggregate and volatile functions.
pub(crate) struct Fake;
impl Sql for Fake {
    fn exec(&mut self, _sql: &str) -> Result<u64, DbError> {
        Ok(0)
    }

    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let s = |v: &str| Some(v.to_string());
        if sql.contains("duckdb_functions()") {
            let f = [
                ("sum", "true"),
                ("count", "true"),
                ("min", "true"),
                ("max", "true"),
                ("avg", "true"),
                ("count_if", "true"),
            ];
            let mut rows: Vec<_> = f.iter().map(|(a, b)| vec![s(a), s(b)]).collect();
            rows.push(vec![s("string_agg"), s("true")]);
            rows.push(vec![s("random"), s("false")]);
            return Ok(rows);
        }
        if sql == "SELECT current_database()" {
            return Ok(vec![vec![s("memory")]]);
        }
        if sql.contains("information_schema.columns") {
            let cols: &[&str] = if sql.contains("'u'") {
                &["k", "w"]
            } else {
                &["k", "g", "v"]
            };
            return Ok(cols.iter().map(|c| vec![s(c)]).collect());
        }
        if sql.contains("information_schema.tables") && sql.contains("BASE TABLE") {
            for t in ["t", "u"] {
                if sql.contains(&format!("lower('{t}')")) {
                    return Ok(vec![vec![s("memory"), s("main"), s(t)]]);
                }
            }
            return Ok(vec![]);
        }
        if sql.starts_with("DESCRIBE") && sql.contains(" AS \"_sum1\"") {
            // The types of SUM/AVG arguments: every column here is an INTEGER.
            let n = sql.matches(" AS \"_sum").count();
            return Ok((1..=n)
                .map(|i| vec![s(&format!("_sum{i}")), s("INTEGER")])
                .collect());
        }
        if sql.starts_with("DESCRIBE WITH RECURSIVE") {
            // Every recursive CTE here is r(a, b) of integers.
            return Ok(["a", "b"]
                .iter()
                .map(|c| vec![s(c), s("INTEGER")])
                .collect());
        }
        if sql.starts_with("DESCRIBE") && sql.contains(" OVER (") {
            // Every window subquery here is (k, rn).
            return Ok(vec![vec![s("k"), s("INTEGER")], vec![s("rn"), s("BIGINT")]]);
        }
        if sql.starts_with("DESCRIBE") {
            return Err(DbError {
                message: "not in this fake".into(),
                state: duckmv_sqlstate::SqlState::INTERNAL_ERROR,
            });
        }
        Ok(vec![])
    }
}

/// A definition over t(k, g, v) and u(k, w) compiled as view 9 with `ncols` INTEGER columns.
pub(crate) fn compiled(q: &str, ncols: usize) -> Compiled {
    let cols: Vec<String> = (1..=ncols).map(|i| format!("col{i}")).collect();
    let types = vec!["INTEGER".to_string(); ncols];
    compile(&mut Fake, 9, q, cols, types).unwrap()
}

fn reason(q: &str, ncols: usize) -> Option<String> {
    compiled(q, ncols).full_reason
}

#[test]
fn classifies_incremental_shapes() {
    for (q, n, strategy) in [
        (
            "SELECT k, v + 1 AS w FROM t WHERE v > 0",
            2,
            "incremental: projection over one table",
        ),
        (
            "SELECT * FROM t",
            3,
            "incremental: projection over one table",
        ),
        (
            "SELECT DISTINCT g FROM t",
            1,
            "incremental: distinct over one table",
        ),
        (
            "SELECT g, SUM(v), MAX(v) FROM t GROUP BY g",
            3,
            "incremental: aggregate(max,sum) over one table",
        ),
        (
            "SELECT COUNT(*) FROM t",
            1,
            "incremental: aggregate(count) over one table",
        ),
        (
            "SELECT t.g, u.w FROM t JOIN u ON t.k = u.k",
            2,
            "incremental: projection over inner join",
        ),
        (
            "SELECT t.g, u.w FROM t LEFT JOIN u ON t.k = u.k",
            2,
            "incremental: projection over left join",
        ),
        (
            "SELECT u.w, count(*) FROM t RIGHT JOIN u ON t.k = u.k GROUP BY u.w",
            2,
            "incremental: aggregate(count) over right join",
        ),
        (
            "SELECT t.k FROM t FULL JOIN u ON t.k = u.k",
            1,
            "incremental: projection over full join",
        ),
        (
            "SELECT k FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.k > t.v) AND g > 1",
            1,
            "incremental: projection over NOT EXISTS",
        ),
        (
            "SELECT k FROM t WHERE k NOT IN (SELECT w FROM u)",
            1,
            "incremental: projection over NOT IN",
        ),
        (
            "SELECT t.k FROM t SEMI JOIN u ON t.k = u.k",
            1,
            "incremental: projection over semi join",
        ),
        (
            "SELECT k FROM t UNION ALL SELECT k FROM u",
            1,
            "incremental: projection over UNION ALL",
        ),
        (
            "WITH c AS (SELECT k, v FROM t) SELECT k, AVG(v) FROM c GROUP BY k",
            2,
            "incremental: aggregate(avg) over CTE, subquery",
        ),
    ] {
        let c = compiled(q, n);
        assert_eq!(c.full_reason, None, "{q}");
        assert_eq!(c.plan.strategy, strategy, "{q}");
    }
}

/// Shapes without an incremental rule, and the reason each is given.
const REFUSED: &[(&str, usize, &str)] = &[
    (
        "SELECT t.k FROM t SEMI JOIN u ON t.k = u.k FULL JOIN t AS x ON x.k = t.k",
        1,
        "a FULL JOIN after a SEMI or ANTI JOIN",
    ),
    (
        "SELECT t.k FROM t WHERE CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.k IN (SELECT x.k FROM t x)) THEN t.v > 1 END",
        1,
        "a nested EXISTS/IN that refers to an outer query",
    ),
    (
        "SELECT t.k FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k HAVING count(*) > 1)",
        1,
        "a correlated aggregate subquery",
    ),
    (
        "SELECT t.k FROM t WHERE t.k IN (SELECT count(*) FROM u WHERE w > g)",
        1,
        "a correlated aggregate subquery",
    ),
    (
        "SELECT s.k FROM (SELECT k, count(*) + 1 FROM u GROUP BY k) s",
        1,
        "an aggregate subquery column without an alias",
    ),
    (
        "SELECT t.k IN (SELECT k FROM u), t.v IN (SELECT w FROM u), EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM u WHERE u.k = t.k) FROM t",
        4,
        "more than three EXISTS/IN tests in the select list",
    ),
    (
        "SELECT s.e FROM (SELECT EXISTS (SELECT 1 FROM u WHERE u.k = t.k) AS e FROM t) s",
        1,
        "a subquery in an expression",
    ),
    (
        "SELECT k, (SELECT max(w) FROM u) FROM t",
        2,
        "a subquery in an expression",
    ),
    (
        "SELECT k FROM t ORDER BY k",
        1,
        "ORDER BY",
    ),
    (
        "SELECT k FROM t LIMIT 3",
        1,
        "LIMIT",
    ),
    (
        "SELECT k, random() FROM t",
        2,
        "non-deterministic function random()",
    ),
    (
        "SELECT 1",
        1,
        "a query without FROM",
    ),
    (
        "SELECT k FROM t WHERE __mv_ex_0__ OR k IN (SELECT k FROM u)",
        1,
        "the name __mv_ex_0__, which duckmv reserves",
    ),
    (
        "SELECT k FROM (WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT r.a, t.g FROM r, t WHERE r.b = t.k) SELECT a AS k FROM r) x",
        1,
        "WITH RECURSIVE inside a subquery or CTE",
    ),
    (
        "WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT r.a, t.g FROM r, t WHERE r.b = t.k AND NOT EXISTS (SELECT 1 FROM u WHERE u.k = t.k)) SELECT * FROM r",
        2,
        "a recursive CTE term other than a join of tables with a filter",
    ),
    (
        "WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT r.a, max(t.g) FROM r, t WHERE r.b = t.k GROUP BY r.a) SELECT * FROM r",
        2,
        "a recursive CTE term other than a join of tables with a filter",
    ),
    (
        "WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT r.a, t.g FROM r LEFT JOIN t ON r.b = t.k) SELECT * FROM r",
        2,
        "a recursive CTE term other than a join of tables with a filter",
    ),
    (
        "WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT x.a, y.b FROM r x, r y WHERE x.b = y.a) SELECT * FROM r",
        2,
        "a recursive CTE other than one term UNION one term that reads it once",
    ),
    (
        "WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT r.a, t.g FROM r, t WHERE r.b = t.k), s(a, b) AS (SELECT a, b FROM r UNION SELECT s.a, r.b FROM s, r WHERE s.b = r.a) SELECT * FROM s",
        2,
        "WITH RECURSIVE with more than one recursive CTE, or CTEs that read each other",
    ),
];

#[test]
fn names_the_construct_it_cannot_maintain() {
    for (q, n, why) in REFUSED {
        assert_eq!(reason(q, *n).as_deref(), Some(*why), "{q}");
    }
    assert!(
        reason("SELECT k FROM nosuch", 1).is_some_and(|r| r.starts_with("a reference to nosuch"))
    );
}

#[test]
fn near_misses_stay_incremental() {
    // Aggregates without a rule of their own are kept whole, recomputed per touched group.
    for (q, n, strategy) in [
        (
            "SELECT g, string_agg(g, ',') FROM t GROUP BY g",
            2,
            "incremental: aggregate(string_agg) over one table",
        ),
        (
            "SELECT g, sum(v ORDER BY v), count(*) FROM t GROUP BY g",
            3,
            "incremental: aggregate(count,sum) over one table",
        ),
    ] {
        let c = compiled(q, n);
        assert_eq!(
            (c.full_reason, c.plan.strategy.as_str()),
            (None, strategy),
            "{q}"
        );
    }
    // DISTINCT aggregates at the top level; an IN test under OR is a guard (NOT is refused).
    assert_eq!(
        reason("SELECT k FROM t WHERE k IN (SELECT k FROM u) OR k = 1", 1),
        None
    );
    // A test inside CASE becomes a hole of the compiler's own, not a reserved user name.
    assert_eq!(
        reason(
            "SELECT k FROM t WHERE CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.k = t.k) THEN v > 1 ELSE v < 0 END",
            1
        ),
        None
    );
}

#[test]
fn full_plans_record_the_tables_they_read() {
    // For DROP TABLE protection.
    let c = compiled(
        "SELECT t.k FROM t, u WHERE t.k = u.k OR CASE WHEN EXISTS (SELECT 1 FROM u WHERE u.k IN (SELECT x.k FROM t x)) THEN TRUE END",
        1,
    );
    let names: Vec<&str> = c.plan.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["t", "u"]);
    assert!(
        c.plan.strategy.starts_with("full: a nested EXISTS/IN"),
        "{}",
        c.plan.strategy
    );
}

fn aggregate(q: &str, ncols: usize) -> Aggregate {
    match compiled(q, ncols).plan.body {
        Body::Aggregate(a) => a,
        other => panic!("not an aggregate: {other:?}"),
    }
}

#[test]
fn sum_and_avg_of_one_argument_share_their_state() {
    let a = aggregate(
        "SELECT g, SUM(v) AS s, AVG(v) AS a, AVG(k) AS b, COUNT(v) AS n FROM t GROUP BY g",
        5,
    );
    assert_eq!(a.aggs.len(), 4);
    let slots: Vec<usize> = a.state_fns().map(|f| f.slot).collect();
    assert_eq!(slots, [1, 2, 3], "SUM(v) and AVG(v) share slot 1");
    let out: Vec<String> = a.output.iter().map(UserExpr::to_string).collect();
    assert!(out[1].contains("s_1") && out[2].contains("s_1"));
    assert!(out[3].contains("s_2"));
}

#[test]
fn aggregates_are_rewritten_over_state_columns() {
    let a = aggregate(
        "SELECT g, SUM(v) + COUNT(*) AS x, MIN(v) FROM t GROUP BY g HAVING SUM(v) > 2",
        3,
    );
    assert_eq!(a.groups, 1);
    let select: Vec<&Expr> = a.input.select.iter().map(UserExpr::ast).collect();
    assert!(
        matches!(select[..], [Expr::Identifier(g), Expr::Identifier(v)] if g.value == "g" && v.value == "v")
    );
    assert_eq!(
        a.aggs.len(),
        3,
        "SUM(v) in HAVING reuses the select list's slot"
    );
    assert!(matches!(a.output[0].ast(), Expr::Identifier(g) if g.value == "_g1"));
    assert_eq!(
        a.output[1].to_string(),
        r#"(CASE WHEN "n_1" = 0 THEN NULL ELSE "s_1" END) + "_mv_count""#
    );
    assert_eq!(
        a.having.as_ref().map(UserExpr::to_string).as_deref(),
        Some(r#"(CASE WHEN "n_1" = 0 THEN NULL ELSE "s_1" END) > 2"#)
    );
}

#[test]
fn star_expands_against_every_join_input() {
    let c = compiled("SELECT * FROM t JOIN u ON t.k = u.k", 5);
    let Body::Bag {
        rel: Rel::Block(b), ..
    } = &c.plan.body
    else {
        panic!("not a bag")
    };
    let columns: Vec<Vec<&str>> = b
        .select
        .iter()
        .map(|e| match e.ast() {
            Expr::CompoundIdentifier(parts) => parts.iter().map(|p| p.value.as_str()).collect(),
            other => panic!("not a column: {other}"),
        })
        .collect();
    let want = [["t", "k"], ["t", "g"], ["t", "v"], ["u", "k"], ["u", "w"]];
    assert_eq!(columns, want);
    let Some(Expr::Nested(on)) = b.filter.as_ref().map(UserExpr::ast) else {
        panic!("the ON predicate is the filter: {:?}", b.filter);
    };
    assert!(matches!(
        on.as_ref(),
        Expr::BinaryOp {
            op: sqlparser::ast::BinaryOperator::Eq,
            ..
        }
    ));
}

/// Base tables are seen with only the columns the definition names (see `read_columns`).
#[test]
fn sources_carry_the_columns_the_definition_reads() {
    for (q, n, cols) in [
        ("SELECT g, sum(v) AS s FROM t GROUP BY g", 2, vec!["g", "v"]),
        ("SELECT k FROM t WHERE v > 0", 1, vec!["k", "v"]),
        ("SELECT count(*) AS n FROM t", 1, vec!["k"]),
        ("SELECT * FROM t", 3, vec!["k", "g", "v"]),
    ] {
        let plan = compiled(q, n).plan;
        assert_eq!(plan.sources[0].columns, cols, "{q}");
    }
}

/// A view over a recursive CTE reads its rows as a source of its own, which its terms read
/// through the same index; a WITH RECURSIVE whose CTE never reads itself is an ordinary CTE.
#[test]
fn a_recursive_cte_is_a_source_its_step_and_the_query_read() {
    let q = "WITH RECURSIVE r(a, b) AS (SELECT k, g FROM t UNION SELECT r.a, t.g FROM r, t \
             WHERE r.b = t.k) SELECT a, count(*) FROM r GROUP BY a";
    let c = compiled(q, 2);
    assert_eq!(c.full_reason, None);
    let plan = &c.plan;
    let r = plan.recursion.as_ref().expect("a recursion");
    let src = &plan.sources[r.source];
    assert_eq!(src.kind, crate::plan::SourceKind::Recursive);
    assert_eq!(src.columns, ["a", "b"]);
    assert_eq!(src.relation, "_duckmv.rec_9");
    let reads = |b: &Block| -> Vec<usize> {
        b.items
            .iter()
            .map(|i| match i.from {
                ItemFrom::Source(s) => s,
                _ => usize::MAX,
            })
            .collect()
    };
    let t = plan.sources.iter().position(|s| s.name == "t").unwrap();
    assert_eq!(reads(&r.base), [t]);
    assert_eq!(reads(&r.step), [r.source, t]);
    assert!(r.reads(plan.sources.len())[t]);
    assert!(!r.reads(plan.sources.len())[r.source]);
    let Body::Aggregate(a) = &plan.body else {
        panic!("{:?}", plan.body)
    };
    assert_eq!(reads(&a.input), [r.source]);
    assert!(
        plan.strategy.contains("over WITH RECURSIVE"),
        "{}",
        plan.strategy
    );
    assert!(plan.strategy.contains("semi-naive"), "{}", plan.strategy);

    let plain = compiled("WITH RECURSIVE r AS (SELECT k FROM t) SELECT k FROM r", 1);
    assert_eq!(plain.full_reason, None);
    assert!(plain.plan.recursion.is_none());
}

/// A UNION reads aggregate branches as aggregate relations; a DISTINCT branch of a UNION is
/// plain (UNION keeps each row once anyway); inside UNION ALL it is not maintained.
#[test]
fn union_branches_may_aggregate() {
    for q in [
        "SELECT k, count(*) FROM t GROUP BY k UNION ALL SELECT k, sum(w) FROM u GROUP BY k",
        "SELECT g, max(v) FROM t GROUP BY g UNION SELECT k, min(w) FROM u GROUP BY k",
        "SELECT DISTINCT k FROM t UNION SELECT k FROM u",
        "SELECT s.k FROM (SELECT k, count(*) AS c FROM t GROUP BY k UNION ALL SELECT k, w FROM u) s",
    ] {
        let n = if q.starts_with("SELECT s.k") || q.contains("DISTINCT") {
            1
        } else {
            2
        };
        assert_eq!(compiled_alone(q, n).full_reason, None, "{q}");
    }
    assert_eq!(
        reason("SELECT DISTINCT k FROM t UNION ALL SELECT k FROM u", 1).as_deref(),
        Some("DISTINCT ON, or DISTINCT inside UNION ALL")
    );
}

/// [`compiled`] where every subquery binds on its own: none is correlated.
pub(crate) fn compiled_alone(q: &str, ncols: usize) -> Compiled {
    let cols: Vec<String> = (1..=ncols).map(|i| format!("col{i}")).collect();
    compile(&mut Alone, 9, q, cols, vec!["INTEGER".into(); ncols]).unwrap()
}

/// The sources and block of a bag view compiled by [`compiled_alone`].
pub(crate) fn bag_block(q: &str, ncols: usize) -> (Vec<crate::plan::Source>, crate::plan::Block) {
    let c = compiled_alone(q, ncols);
    assert_eq!(c.full_reason, None);
    match c.plan.body {
        crate::plan::Body::Bag {
            rel: Rel::Block(b), ..
        } => (c.plan.sources, b),
        other => panic!("{other:?}"),
    }
}

/// [`Fake`] where every subquery binds on its own: none is correlated.
struct Alone;
impl Sql for Alone {
    fn exec(&mut self, sql: &str) -> Result<u64, DbError> {
        Fake.exec(sql)
    }
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        Fake.query(sql)
    }
    fn binds_alone(&mut self, _sql: &str) -> bool {
        true
    }
}

/// A window query read through a derived table or CTE and only projected and filtered outside
/// is the window query with the outer filter as its QUALIFY; joined with anything else it is
/// not.
#[test]
fn a_filtered_window_subquery_is_a_window_query() {
    for q in [
        "SELECT k, v FROM (SELECT k, v, row_number() OVER (PARTITION BY k ORDER BY v) AS rn \
         FROM t) x WHERE rn <= 2",
        "WITH r AS (SELECT *, rank() OVER (PARTITION BY k ORDER BY v) AS rk FROM t) \
         SELECT r.k, r.g FROM r WHERE r.rk = 1 AND r.v > 0",
    ] {
        let c = compiled(q, 2);
        assert_eq!(c.full_reason, None, "{q}");
        let Body::Windowed(w) = &c.plan.body else {
            panic!("{q}: {:?}", c.plan.body)
        };
        assert!(w.qualify.is_some(), "{q}");
    }
    // Joined with another table: the view keeps the window query's rows as a source.
    let joined = "SELECT x.k, u.w FROM (SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) \
                  AS rn FROM t) x, u WHERE x.k = u.k AND rn <= 2";
    let c = compiled(joined, 2);
    assert_eq!(c.full_reason, None);
    let [w] = c.plan.windows.as_slice() else {
        panic!("{:?}", c.plan.windows)
    };
    let src = &c.plan.sources[w.source];
    assert_eq!(src.kind, crate::plan::SourceKind::Window);
    assert_eq!(
        (
            src.relation.as_str(),
            src.delta.as_deref(),
            src.columns.len()
        ),
        ("_duckmv.win_9_1", Some("_duckmv.wd_9_1"), 2)
    );
    assert!(
        c.plan.strategy.ends_with("window subquery"),
        "{}",
        c.plan.strategy
    );
    // Two window queries are kept apart; one CTE read twice is kept once.
    let two = "SELECT x.k, y.rn FROM (SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) \
               AS rn FROM t) x, (SELECT k, rank() OVER (ORDER BY v) AS rn FROM t) y \
               WHERE x.k = y.k";
    assert_eq!(compiled(two, 2).plan.windows.len(), 2);
    let shared = "WITH w AS (SELECT k, rank() OVER (PARTITION BY k ORDER BY v) AS rn FROM t) \
                  SELECT a.k, b.rn FROM w AS a, w AS b WHERE a.k = b.rn";
    let c = compiled(shared, 2);
    assert_eq!((c.full_reason, c.plan.windows.len()), (None, 1));
}
