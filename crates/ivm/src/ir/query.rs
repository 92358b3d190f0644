//! Typed queries: the SELECTs, FROM items and joins the engine generates, rendered through
//! the `sqlparser` AST like [`Expr`]. Every FROM item the engine builds is one of these values,
//! so a delta term can be inspected (which relations it joins, under which aliases) and a test
//! can compare structure instead of text.

use sqlparser::ast::helpers::attached_token::AttachedToken;
use sqlparser::ast::{
    self, GroupByExpr, JoinConstraint, JoinOperator, ObjectName, ObjectNamePart, SelectFlavor,
    SelectItem, SetExpr, SetOperator, SetQuantifier, TableAlias, TableAliasColumnDef, TableFactor,
    TableWithJoins, WildcardAdditionalOptions,
};
use std::fmt;

use super::fixpoint::Fixpoint;
use super::shared::Shared;
use super::{all, quoted, Expr, Name, OrderBy};

/// A query: a SELECT, a UNION ALL of queries, a VALUES list, or a query with CTEs.
#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    Select(Box<Select>),
    UnionAll(Vec<Query>),
    Values(Vec<Vec<Expr>>),
    With {
        ctes: Vec<Cte>,
        body: Box<Query>,
    },
    /// A recursive CTE and the query reading it.
    Fixpoint(Box<Fixpoint>),
    /// A query computed once by its statement (see `shared`).
    Shared(Box<Shared>),
}

/// `name AS [MATERIALIZED] (query)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cte {
    pub name: String,
    pub query: Query,
    pub materialized: bool,
}

/// `SELECT items FROM from WHERE filter… GROUP BY … HAVING having… ORDER BY … LIMIT limit
/// OFFSET offset`; the filter and HAVING are conjunctions, each conjunct its own entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub items: Vec<Item>,
    pub from: Vec<From>,
    pub filter: Vec<Expr>,
    pub group_by: GroupBy,
    pub having: Vec<Expr>,
    pub order_by: Option<OrderBy>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    /// `QUALIFY` (a window view's filter over its window functions).
    pub qualify: Option<Expr>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub enum GroupBy {
    #[default]
    None,
    Exprs(Vec<Expr>),
    /// `GROUP BY ALL`.
    All,
}

/// A select-list item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `expr [AS "alias"]`.
    Expr(Expr, Option<String>),
    /// `*`.
    Star,
    /// `alias.*`.
    StarOf(String),
}

impl Item {
    /// `expr AS "alias"`.
    pub fn named(e: Expr, alias: impl Into<String>) -> Item {
        Item::Expr(e, Some(alias.into()))
    }
}

/// A FROM item under an alias, or a (parenthesized) join of two.
#[derive(Clone, Debug, PartialEq)]
pub enum From {
    Table {
        name: Name,
        alias: Option<String>,
    },
    /// `[LATERAL] (query) AS alias[(columns)]`.
    Query {
        query: Box<Query>,
        alias: String,
        columns: Vec<String>,
        lateral: bool,
    },
    Join(Box<Join>),
    /// `name(args) [AS alias[(columns)]]`: a table function (`range(n)`).
    Call {
        name: &'static str,
        args: Vec<Expr>,
        alias: Option<(String, Vec<String>)>,
    },
}

/// `(left KIND JOIN right [ON on])`.
#[derive(Clone, Debug, PartialEq)]
pub struct Join {
    pub left: From,
    pub kind: JoinKind,
    pub right: From,
    pub on: Option<Expr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Full,
    Cross,
    Semi,
    Anti,
}

impl From {
    /// `name AS alias`.
    pub fn table(name: Name, alias: impl Into<String>) -> From {
        From::Table {
            name,
            alias: Some(alias.into()),
        }
    }

    /// `(query) AS alias`.
    pub fn query(query: Query, alias: impl Into<String>) -> From {
        From::Query {
            query: Box::new(query),
            alias: alias.into(),
            columns: Vec::new(),
            lateral: false,
        }
    }

    /// `LATERAL (query) AS alias`.
    pub fn lateral(query: Query, alias: impl Into<String>) -> From {
        From::Query {
            query: Box::new(query),
            alias: alias.into(),
            columns: Vec::new(),
            lateral: true,
        }
    }

    /// `(self KIND JOIN right ON on)`.
    pub fn join(self, kind: JoinKind, right: From, on: Expr) -> From {
        From::Join(Box::new(Join {
            left: self,
            kind,
            right,
            on: Some(on),
        }))
    }

    /// `(self CROSS JOIN right)`.
    pub fn cross(self, right: From) -> From {
        From::Join(Box::new(Join {
            left: self,
            kind: JoinKind::Cross,
            right,
            on: None,
        }))
    }

    fn to_ast(&self) -> TableFactor {
        match self {
            From::Call { name, args, alias } => table_factor(
                ObjectName(vec![ObjectNamePart::Identifier(ast::Ident::new(*name))]),
                alias.as_ref().map(|(a, c)| table_alias(a, c)),
                Some(ast::TableFunctionArgs {
                    args: args
                        .iter()
                        .map(|a| ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(a.to_ast())))
                        .collect(),
                    settings: None,
                }),
            ),
            From::Table { name, alias } => table_factor(
                name.to_ast(),
                alias.as_deref().map(|a| table_alias(a, &[])),
                None,
            ),
            From::Query {
                query,
                alias,
                columns,
                lateral,
            } => TableFactor::Derived {
                lateral: *lateral,
                subquery: Box::new(query.to_ast()),
                alias: Some(table_alias(alias, columns)),
                sample: None,
            },
            From::Join(j) => {
                let constraint = match &j.on {
                    Some(on) => JoinConstraint::On(on.to_ast()),
                    None => JoinConstraint::None,
                };
                let join_operator = match j.kind {
                    JoinKind::Inner => JoinOperator::Inner(constraint),
                    JoinKind::Left => JoinOperator::Left(constraint),
                    JoinKind::Full => JoinOperator::FullOuter(constraint),
                    JoinKind::Cross => JoinOperator::CrossJoin(constraint),
                    JoinKind::Semi => JoinOperator::Semi(constraint),
                    JoinKind::Anti => JoinOperator::Anti(constraint),
                };
                TableFactor::NestedJoin {
                    table_with_joins: Box::new(TableWithJoins {
                        relation: j.left.to_ast(),
                        joins: vec![ast::Join {
                            relation: j.right.to_ast(),
                            global: false,
                            join_operator,
                        }],
                    }),
                    alias: None,
                }
            }
        }
    }
}

impl From {
    /// The alias this item is known by (a join has none of its own).
    pub fn alias(&self) -> Option<&str> {
        match self {
            From::Table { alias, .. } => alias.as_deref(),
            From::Query { alias, .. } => Some(alias),
            From::Call { alias, .. } => alias.as_ref().map(|(a, _)| a.as_str()),
            From::Join(_) => None,
        }
    }

    /// This item and every FROM item inside it, at any depth: join operands and the FROM
    /// items of subqueries read as relations (not those inside expressions).
    pub fn all(&self) -> Vec<&From> {
        let mut out = vec![self];
        match self {
            From::Join(j) => {
                out.extend(j.left.all());
                out.extend(j.right.all());
            }
            From::Query { query, .. } => out.extend(query.froms()),
            From::Table { .. } | From::Call { .. } => {}
        }
        out
    }

    /// Whether this is the table `name` (its parts as [`Name::of`] gives them).
    pub fn is_table(&self, name: &str) -> bool {
        matches!(self, From::Table { name: n, .. } if *n == Name::of(name))
    }
}

/// A named relation or table function in FROM.
fn table_factor(
    name: ObjectName,
    alias: Option<TableAlias>,
    args: Option<ast::TableFunctionArgs>,
) -> TableFactor {
    TableFactor::Table {
        name,
        alias,
        args,
        with_hints: Vec::new(),
        version: None,
        with_ordinality: false,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_directives: Vec::new(),
        inheritance: None,
    }
}

pub(super) fn table_alias(name: &str, columns: &[String]) -> TableAlias {
    TableAlias {
        explicit: true,
        name: quoted(name),
        columns: columns
            .iter()
            .map(|c| TableAliasColumnDef {
                name: quoted(c),
                data_type: None,
            })
            .collect(),
        at: None,
    }
}

impl Select {
    /// `SELECT items FROM from`.
    pub fn new(items: Vec<Item>, from: Vec<From>) -> Select {
        Select {
            items,
            from,
            ..Select::default()
        }
    }

    /// This select with `conds` added to its WHERE.
    pub fn filtered(mut self, conds: impl IntoIterator<Item = Expr>) -> Select {
        self.filter.extend(conds);
        self
    }

    fn to_ast(&self) -> ast::Select {
        let projection = self
            .items
            .iter()
            .map(|i| match i {
                Item::Expr(e, None) => SelectItem::UnnamedExpr(e.to_ast()),
                Item::Expr(e, Some(a)) => SelectItem::ExprWithAlias {
                    expr: e.to_ast(),
                    alias: quoted(a),
                },
                Item::Star => SelectItem::Wildcard(WildcardAdditionalOptions::default()),
                Item::StarOf(a) => SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(ObjectName(vec![
                        ObjectNamePart::Identifier(quoted(a)),
                    ])),
                    WildcardAdditionalOptions::default(),
                ),
            })
            .collect();
        let conj = |c: &[Expr]| (!c.is_empty()).then(|| all(c.iter().cloned()).to_ast());
        let from = self
            .from
            .iter()
            .map(|f| TableWithJoins {
                relation: f.to_ast(),
                joins: Vec::new(),
            })
            .collect();
        ast::Select {
            distinct: self.distinct.then_some(ast::Distinct::Distinct),
            group_by: match &self.group_by {
                GroupBy::None => GroupByExpr::Expressions(Vec::new(), Vec::new()),
                GroupBy::Exprs(keys) => {
                    GroupByExpr::Expressions(keys.iter().map(Expr::to_ast).collect(), Vec::new())
                }
                GroupBy::All => GroupByExpr::All(Vec::new()),
            },
            having: conj(&self.having),
            qualify: self.qualify.as_ref().map(Expr::to_ast),
            ..ast_select(projection, from, conj(&self.filter))
        }
    }
}

/// `SELECT projection FROM from [WHERE selection]` as a `sqlparser` AST, every other clause
/// empty: the one place that spells out the AST's many fields.
pub fn ast_select(
    projection: Vec<SelectItem>,
    from: Vec<TableWithJoins>,
    selection: Option<ast::Expr>,
) -> ast::Select {
    ast::Select {
        select_token: AttachedToken::empty(),
        optimizer_hints: Vec::new(),
        distinct: None,
        select_modifiers: None,
        top: None,
        top_before_distinct: false,
        projection,
        exclude: None,
        into: None,
        from,
        lateral_views: Vec::new(),
        prewhere: None,
        selection,
        connect_by: Vec::new(),
        group_by: GroupByExpr::Expressions(Vec::new(), Vec::new()),
        cluster_by: Vec::new(),
        distribute_by: Vec::new(),
        sort_by: Vec::new(),
        having: None,
        named_window: Vec::new(),
        qualify: None,
        window_before_qualify: false,
        value_table_mode: None,
        flavor: SelectFlavor::Standard,
    }
}

impl Query {
    /// A query of one SELECT.
    pub fn select(s: Select) -> Query {
        Query::Select(Box::new(s))
    }

    /// The UNION ALL of `parts`; the part itself when there is one.
    pub fn union_all(mut parts: Vec<Query>) -> Query {
        if parts.len() == 1 {
            return parts.pop().unwrap();
        }
        Query::UnionAll(parts)
    }

    /// Every FROM item of the query at any depth (see [`From::all`]), CTEs included.
    pub fn froms(&self) -> Vec<&From> {
        match self {
            Query::Select(s) => s.from.iter().flat_map(From::all).collect(),
            Query::UnionAll(parts) => parts.iter().flat_map(Query::froms).collect(),
            Query::Values(_) => Vec::new(),
            Query::With { ctes, body } => ctes
                .iter()
                .flat_map(|c| c.query.froms())
                .chain(body.froms())
                .collect(),
            Query::Shared(sh) => sh.query.froms(),
            Query::Fixpoint(fx) => fx
                .prelude
                .iter()
                .map(|c| &c.query)
                .chain([&fx.seed, &fx.step, &fx.body])
                .flat_map(Query::froms)
                .collect(),
        }
    }

    pub fn to_ast(&self) -> ast::Query {
        let (with, body) = match self {
            Query::With { ctes, body } => {
                let with = ast::With {
                    with_token: AttachedToken::empty(),
                    recursive: false,
                    cte_tables: ctes.iter().map(Cte::to_ast).collect(),
                };
                (Some(with), body.set_expr())
            }
            Query::Fixpoint(fx) => {
                let (with, body) = fx.to_ast();
                (Some(with), body)
            }
            Query::Shared(sh) => {
                let with = ast::With {
                    with_token: AttachedToken::empty(),
                    recursive: false,
                    cte_tables: vec![sh.cte().to_ast()],
                };
                (Some(with), sh.read().set_expr())
            }
            q => (None, q.set_expr()),
        };
        // A SELECT's ORDER BY and LIMIT are clauses of the query around it, CTEs or not.
        let last = match self {
            Query::With { body, .. } => body.as_ref(),
            q => q,
        };
        let (order_by, limit, offset) = match last {
            Query::Select(s) => (s.order_by.as_ref().map(OrderBy::to_ast), s.limit, s.offset),
            _ => (None, None, None),
        };
        let count = |n: u64| Expr::Int(n as i64).to_ast();
        let limit_clause =
            (limit.is_some() || offset.is_some()).then(|| ast::LimitClause::LimitOffset {
                limit: limit.map(count),
                offset: offset.map(|n| ast::Offset {
                    value: count(n),
                    rows: ast::OffsetRows::None,
                }),
                limit_by: Vec::new(),
            });
        ast::Query {
            with,
            order_by,
            limit_clause,
            ..plain_query(body)
        }
    }

    /// The query as a set expression: UNION ALL branches are nested queries, so each keeps
    /// its own clauses and parentheses.
    pub(super) fn set_expr(&self) -> SetExpr {
        match self {
            Query::Select(s) => SetExpr::Select(Box::new(s.to_ast())),
            Query::Values(rows) => SetExpr::Values(ast::Values {
                explicit_row: false,
                value_keyword: false,
                rows: rows
                    .iter()
                    .map(|r| ast::Parens {
                        opening_token: AttachedToken::empty(),
                        content: r.iter().map(Expr::to_ast).collect(),
                        closing_token: AttachedToken::empty(),
                    })
                    .collect(),
            }),
            Query::UnionAll(parts) => parts
                .iter()
                .map(|p| SetExpr::Query(Box::new(p.to_ast())))
                .reduce(|l, r| SetExpr::SetOperation {
                    left: Box::new(l),
                    op: SetOperator::Union,
                    set_quantifier: SetQuantifier::All,
                    right: Box::new(r),
                })
                .expect("a UNION ALL has parts"),
            Query::With { .. } | Query::Fixpoint(_) | Query::Shared(_) => {
                SetExpr::Query(Box::new(self.to_ast()))
            }
        }
    }
}

/// `body` as a query with no clauses around it.
pub fn plain_query(body: SetExpr) -> ast::Query {
    ast::Query {
        with: None,
        body: Box::new(body),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }
}

impl Cte {
    pub(super) fn to_ast(&self) -> ast::Cte {
        ast::Cte {
            // A CTE's name takes no AS of its own: `name AS (query)`.
            alias: TableAlias {
                explicit: false,
                ..table_alias(&self.name, &[])
            },
            query: Box::new(self.query.to_ast()),
            from: None,
            materialized: self
                .materialized
                .then_some(ast::CteAsMaterialized::Materialized),
            closing_paren_token: AttachedToken::empty(),
        }
    }
}

/// A query printed whole: its shared queries are CTEs of its top.
impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.hoisted().to_ast().fmt(f)
    }
}

impl fmt::Display for From {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_ast().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{col, Op};

    #[test]
    fn stored_names_split_into_quoted_parts() {
        assert_eq!(Name::of("\"main\".\"t\"").0, vec!["main", "t"]);
        assert_eq!(Name::of("_duckmv.d_1_t").0, vec!["_duckmv", "d_1_t"]);
        assert_eq!(Name::of("\"a.b\".\"c\"\"d\"").0, vec!["a.b", "c\"d"]);
        assert_eq!(Name::of("_duckmv.mv_3").to_string(), "\"_duckmv\".\"mv_3\"");
    }

    #[test]
    fn ctes_print_with_one_as() {
        let q = Query::With {
            ctes: vec![Cte {
                name: "_mv_dd".into(),
                query: Query::Values(vec![vec![Expr::Int(1)]]),
                materialized: true,
            }],
            body: Box::new(Query::select(Select::new(
                vec![Item::Star],
                vec![From::table(Name(vec!["_mv_dd".into()]), "d")],
            ))),
        };
        let text = q.to_string();
        assert!(
            text.starts_with(r#"WITH "_mv_dd" AS MATERIALIZED ("#),
            "{text}"
        );
    }

    /// A work table is typed from its change query with LIMIT 0; with CTEs in front (a shared
    /// change hoisted), the LIMIT stayed with the SELECT's AST and was not printed, and an
    /// ungrouped aggregate's empty change left a row in the new work table.
    #[test]
    fn a_limit_under_ctes_is_printed() {
        let mut s = Select::new(vec![Item::Star], vec![From::table(Name::of("main.t"), "t")]);
        s.limit = Some(0);
        let q = Query::With {
            ctes: vec![Cte {
                name: "c".into(),
                query: Query::Values(vec![vec![Expr::Int(1)]]),
                materialized: true,
            }],
            body: Box::new(Query::select(s)),
        };
        assert!(q.to_string().ends_with("LIMIT 0"), "{q}");
    }

    #[test]
    fn joins_are_parenthesized_and_aliases_quoted() {
        let a = From::table(Name::of("main.a"), "a");
        let b = From::table(Name::of("main.b"), "b");
        let j = a.join(JoinKind::Left, b, col("a", "k").eq(col("b", "k")));
        assert_eq!(
            j.to_string(),
            r#"("main"."a" AS "a" LEFT JOIN "main"."b" AS "b" ON "a"."k" = "b"."k")"#
        );
    }

    #[test]
    fn selects_union_and_lateral_subqueries_print_as_duckdb_reads_them() {
        let t = From::table(Name::of("main.t"), "t");
        let count = Query::select(Select::new(
            vec![Item::named(Expr::CountStar, "n")],
            vec![From::table(Name::of("main.u"), "u")],
        ));
        let s = Select::new(
            vec![Item::StarOf("t".into()), Item::named(col("c", "n"), "n")],
            vec![t, From::lateral(count, "c")],
        )
        .filtered([
            col("t", "a").bin(Op::Gt, Expr::Int(1)),
            col("t", "b").eq(Expr::Int(2)).or(Expr::Bool(false)),
        ]);
        let q = Query::union_all(vec![Query::select(s.clone()), Query::select(s)]);
        let text = q.to_string();
        assert!(
            text.starts_with(
                r#"(SELECT "t".*, "c"."n" AS "n" FROM "main"."t" AS "t", LATERAL (SELECT count(*) AS "n" FROM "main"."u" AS "u") AS "c" WHERE ("t"."a" > 1) AND (("t"."b" = 2) OR false)) UNION ALL ("#
            ),
            "{text}"
        );
        let round = crate::text::parse_query(&text).expect("parses back");
        assert_eq!(round.to_string(), text);
    }
}
