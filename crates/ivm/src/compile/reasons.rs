//! The support check's one table: every reason a query is refreshed by recomputing instead of
//! incrementally, by section. The compiler refuses a construct with [`Why`]; its text is what
//! the CREATE notice and `duckmv.views.strategy` name, and the same table generates the
//! README's list of what is recomputed (the test below keeps the two equal; run it with
//! `DUCKMV_WRITE_README=1` to rewrite the README's list). A text with `{}` names a detail
//! (a function, a table) given with [`Why::with`].

use std::fmt::Display;

macro_rules! reasons {
    ($($section:literal { $($why:ident => $text:literal,)* })*) => {
        /// A construct without an incremental rule.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Why {
            $($($why,)*)*
        }

        impl Why {
            /// The reason as users read it (`{}` where [`Why::with`] puts the detail).
            pub fn text(self) -> &'static str {
                match self {
                    $($(Why::$why => $text,)*)*
                }
            }
        }

        /// Every reason, by section, in the order the README lists them.
        pub const TABLE: &[(&str, &[Why])] = &[$(($section, &[$(Why::$why),*])),*];
    };
}

reasons! {
    "FROM and joins" {
        QueryWithoutFrom => "a query without FROM",
        ThisKindOfJoin => "this kind of join",
        NaturalJoin => "NATURAL JOIN",
        JoinUsing => "JOIN ... USING",
        TableAliasColumnList => "a table alias with a column list",
        Lateral => "LATERAL",
        ParenthesizedJoin => "a parenthesized join",
        TableFunction => "a table function",
        ThisKindOfFromItem => "this kind of FROM item",
        StarExcludeReplace => "* with EXCLUDE/REPLACE",
        UnresolvedQualifiedStar => "a qualified * duckmv cannot resolve",
        ThisKindOfSelectItem => "this kind of select item",
        UnmatchedSelectList => "a select list duckmv cannot match to the view's columns",
        RightJoinAfterSemiOrAnti => "a RIGHT JOIN after a SEMI or ANTI JOIN",
        FullJoinAfterSemiOrAnti => "a FULL JOIN after a SEMI or ANTI JOIN",
        JoinTooWide => "a join of more than 8 relations",
        NotARelation => "a reference to {}, which is not a base table or materialized view",
        OtherDatabase => "a table in another attached database (\"{}\")",
        ColumnListWithTypes => "a column list with types",
        ColumnListTooLong => "a column list longer than its subquery's columns",
        ColumnListOverStar => "a column list over `*`",
        ColumnListRenamesToUsedName => "a column list renaming {} to a name its subquery uses",
    }
    "Query structure" {
        UnionByName => "UNION BY NAME",
        ThisKindOfQuery => "this kind of query",
        OrderBy => "ORDER BY",
        Limit => "LIMIT",
        ThisQueryClause => "this query clause",
        WithRecursive => "WITH RECURSIVE inside a subquery or CTE",
        DistinctInUnion => "DISTINCT ON, or DISTINCT inside UNION ALL",
        ThisKindOfUnionBranch => "this kind of UNION branch",
        MixOfUnionAndUnionAll => "a mix of UNION and UNION ALL",
        DistinctInSubquery => "DISTINCT inside a subquery",
        ThisKindOfSubquery => "this kind of subquery",
        NestedUnion => "nested UNION",
        SetOperation => "{} here",
    }
    "Recursive queries" {
        RecursiveCtes => "WITH RECURSIVE with more than one recursive CTE, or CTEs that read each other",
        RecursiveShape => "a recursive CTE other than one term UNION one term that reads it once",
        RecursiveTerm => "a recursive CTE term other than a join of tables with a filter",
    }
    "Select lists and expressions" {
        ConstantGroupByKey => "a constant GROUP BY key",
        GroupByPosition => "a GROUP BY position",
        DistinctOn => "DISTINCT ON",
        TopInto => "TOP / INTO",
        ThisSelectClause => "this SELECT clause",
        WindowFunction => "a window function",
        Qualify => "QUALIFY",
        SyntaxNotAnalysed => "syntax duckmv cannot analyse",
        ReservedName => "the name {}, which duckmv reserves",
        SubqueryInExpression => "a subquery in an expression",
        WindowHere => "window function {}()",
        Volatile => "non-deterministic function {}()",
        AggregateHere => "aggregate {}() here",
    }
    "Aggregates and grouping" {
        DistinctWithAggregates => "DISTINCT with aggregates",
        ExistenceInDifferingAggregates => "EXISTS/IN in aggregates whose copies differ",
        StarInAnAggregateQuery => "* in an aggregate query",
        GroupByModifiers => "GROUP BY modifiers",
        GroupingSetsCubeRollup => "GROUPING SETS / CUBE / ROLLUP",
        NonKeyOverGroups => "an expression over grouped columns that is not a GROUP BY key",
        GroupingSetsWithGroupByAll => "GROUPING SETS / CUBE / ROLLUP with GROUP BY ALL",
        WindowOverGroupingSets => "window functions over GROUPING SETS / CUBE / ROLLUP",
        QualifyOrDistinctWithGroupingSets => "QUALIFY or DISTINCT with GROUPING SETS / CUBE / ROLLUP",
        GroupingSetsOfPositionsOrAliases => "GROUPING SETS of select-list positions or aliases",
        EmptyGroupingSets => "an empty GROUPING SETS",
        GroupingSetsWithoutAnAggregate => "GROUPING SETS without an aggregate",
        TooManySets => "more than 32 grouping sets",
        InGroupedRead => "{} in a grouped query read through its groups",
        NestedAggregate => "a nested aggregate",
        LambdaInAggregate => "a lambda in an aggregate",
        FilterTestsSubquery => "{}() with a FILTER that tests a subquery",
        WholeCallStar => "aggregate {}(*)",
    }
    "Subqueries" {
        SetOperationInExistence => "a set operation inside EXISTS/IN",
        InSubqueryNotOneColumn => "IN over a subquery without exactly one column",
        InSubqueryReusesTableName => "IN over a subquery that reuses its left operand's table name (alias one of them)",
        NestedExistenceOverJoin => "a nested EXISTS/IN over a join",
        UnresolvedInOperand => "an IN operand duckmv cannot resolve",
        CorrelatedAggregateSubquery => "a correlated aggregate subquery",
        FloatSumInAggregateSubquery => "SUM/AVG of floating-point values in an aggregate subquery",
        UnnamedAggregateSubqueryColumn => "an aggregate subquery column without an alias",
        NestedExistenceOuter => "a nested EXISTS/IN that refers to an outer query",
        FunctionInAggregateSubquery => "{}() in an aggregate subquery",
    }
    "Window functions" {
        WindowOverAliasGroups => "window functions over a GROUP BY of select-list aliases whose tables are not yet committed",
        DistinctWithWindowFunctions => "DISTINCT with window functions whose PARTITION BY keys are not all selected",
        NamedWindow => "a window name without a WINDOW definition",
        UnfoundWindowFunction => "a window function duckmv cannot find",
        LambdaWithWindows => "a lambda in a query with window functions",
        WindowSubqueryWithRecursion => "a window subquery beside WITH RECURSIVE",
        WindowSubqueryColumn => "a window subquery column named {}, as duckmv names partition keys",
    }
}

impl Why {
    /// The reason with its detail in place of `{}`.
    pub fn with(self, detail: impl Display) -> String {
        debug_assert!(self.text().contains("{}"), "{self:?} takes no detail");
        match self.text().split_once("{}") {
            Some((before, after)) => format!("{before}{detail}{after}"),
            None => self.text().to_string(),
        }
    }
}

impl From<Why> for String {
    fn from(why: Why) -> String {
        debug_assert!(!why.text().contains("{}"), "{why:?} needs its detail");
        why.text().to_string()
    }
}

/// The README's list of what is recomputed: a line per section, details shown as `…`.
pub fn readme_list() -> String {
    let mut out = String::new();
    for (section, reasons) in TABLE {
        let texts: Vec<String> = reasons
            .iter()
            .map(|w| w.text().replace("{}", "…"))
            .collect();
        out.push_str(&format!("- {section}: {}.\n", texts.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "<!-- recomputed: generated from crates/ivm/src/compile/reasons.rs -->\n";
    const END: &str = "<!-- end of the generated list -->";

    #[test]
    fn the_readme_lists_every_reason() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).expect("README.md");
        let start = readme
            .find(BEGIN)
            .expect("README has the list's opening marker")
            + BEGIN.len();
        let end = start
            + readme[start..]
                .find(END)
                .expect("README has the list's end marker");
        let list = readme_list();
        if std::env::var_os("DUCKMV_WRITE_README").is_some() {
            let new = format!("{}{list}{}", &readme[..start], &readme[end..]);
            std::fs::write(path, new).expect("README.md written");
            return;
        }
        assert_eq!(
            readme[start..end],
            list,
            "README's list is not the table's; rerun with DUCKMV_WRITE_README=1"
        );
    }

    #[test]
    fn details_fill_their_place_and_limits_match_their_constants() {
        assert_eq!(
            Why::Volatile.with("random"),
            "non-deterministic function random()"
        );
        assert_eq!(String::from(Why::NaturalJoin), "NATURAL JOIN");
        assert!(Why::JoinTooWide
            .text()
            .contains(&super::super::from::MAX_JOIN_INPUTS.to_string()));
        assert!(Why::TooManySets
            .text()
            .contains(&super::super::grouping_sets::MAX_SETS.to_string()));
    }

    /// The notice is all a user sees of a reason, so two reasons must not read alike.
    #[test]
    fn no_two_reasons_share_a_text() {
        let all: Vec<Why> = TABLE.iter().flat_map(|(_, w)| w.iter().copied()).collect();
        let texts: std::collections::HashSet<&str> = all.iter().map(|w| w.text()).collect();
        assert_eq!(texts.len(), all.len(), "two reasons with one text");
    }
}
