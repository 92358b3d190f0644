//! `GROUPING SETS`, `ROLLUP` and `CUBE`. A query grouped by sets S₁ … Sₙ is the bag union of
//! the same query grouped by each Sᵢ, where the keys outside Sᵢ read NULL and `GROUPING(…)`
//! is Sᵢ's constant. So the view is the UNION ALL of one branch per set: the set's grouped
//! query as a derived table (keys and aggregate calls as its columns, see `lift`), with the
//! select list and HAVING lifted over it — HAVING filters the branch's rows, since it is
//! evaluated per group with the absent keys NULL. Each branch's aggregate is maintained like
//! any aggregate read as a relation (`subagg`), so a refresh touches, per set, the groups the
//! change touches. The empty set is the ungrouped aggregate, which has its one row even over
//! no input, as the grand total of a ROLLUP has.

use super::reasons::Why;
use sqlparser::ast::{Expr, GroupByExpr, Select, SetExpr, SetOperator, SetQuantifier};

use super::lift::{derived, positional_or_alias, Lift};
use super::{full, Analyzer, R};

/// More branches than this recompute: each is an aggregate of its own (a CUBE of 6 keys
/// already has 64).
pub(super) const MAX_SETS: usize = 32;

impl Analyzer<'_> {
    /// Whether `s` groups by GROUPING SETS, ROLLUP or CUBE.
    pub(super) fn has_grouping_sets(&self, s: &Select) -> bool {
        matches!(&s.group_by, GroupByExpr::Expressions(keys, _)
            if keys.iter().any(|k| matches!(k, Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_))))
    }

    /// `s` as the UNION ALL of one branch per grouping set.
    pub(super) fn grouping_set_branches(&self, s: &Select) -> R<SetExpr> {
        let GroupByExpr::Expressions(items, modifiers) = &s.group_by else {
            return full(Why::GroupingSetsWithGroupByAll);
        };
        if !modifiers.is_empty() {
            return full(Why::GroupByModifiers);
        }
        if self.has_window(s) {
            return full(Why::WindowOverGroupingSets);
        }
        if s.qualify.is_some() || s.distinct.is_some() {
            return full(Why::QualifyOrDistinctWithGroupingSets);
        }
        let sets = expand(items);
        if sets.len() > MAX_SETS {
            return full(Why::TooManySets);
        }
        let mut keys: Vec<Expr> = Vec::new();
        for k in sets.iter().flatten() {
            if !keys.iter().any(|x| x.to_string() == k.to_string()) {
                keys.push(k.clone());
            }
        }
        if keys.iter().any(|k| positional_or_alias(k, s)) {
            return full(Why::GroupingSetsOfPositionsOrAliases);
        }
        let mut branches = Vec::new();
        for (n, set) in sets.iter().enumerate() {
            branches.push(self.branch(s, &keys, set, n)?);
        }
        let union = branches
            .into_iter()
            .reduce(|left, right| SetExpr::SetOperation {
                op: SetOperator::Union,
                set_quantifier: SetQuantifier::All,
                left: Box::new(left),
                right: Box::new(right),
            });
        union.map_or_else(|| full(Why::EmptyGroupingSets), Ok)
    }

    /// The branch of grouping set number `n`.
    fn branch(&self, s: &Select, keys: &[Expr], set: &[Expr], n: usize) -> R<SetExpr> {
        let alias = format!("__mv_set{}", n + 1);
        let mut lift = Lift::new(self, &alias, keys);
        lift.present = keys
            .iter()
            .map(|k| set.iter().any(|x| x.to_string() == k.to_string()))
            .collect();
        let mut outer = s.clone();
        outer.selection = outer.having.take();
        let mut others: Vec<&mut Expr> = outer.selection.iter_mut().collect();
        lift.block(&mut outer.projection, &mut others)?;
        let grouped = lift.columns();
        if grouped.is_empty() {
            return full(Why::GroupingSetsWithoutAnAggregate);
        }
        let inner = Select {
            projection: grouped,
            group_by: GroupByExpr::Expressions(set.to_vec(), Vec::new()),
            having: None,
            ..s.clone()
        };
        outer.from = derived(inner, &alias);
        outer.group_by = GroupByExpr::Expressions(Vec::new(), Vec::new());
        Ok(SetExpr::Select(Box::new(outer)))
    }
}

/// The grouping sets of a GROUP BY list: the cross product of each item's sets (a plain key
/// is one set of itself; ROLLUP(a, b) is (a, b), (a), (); CUBE every subset).
fn expand(items: &[Expr]) -> Vec<Vec<Expr>> {
    let mut product: Vec<Vec<Expr>> = vec![Vec::new()];
    for item in items {
        let sets: Vec<Vec<Expr>> = match item {
            Expr::GroupingSets(sets) => sets.clone(),
            Expr::Rollup(parts) => (0..=parts.len())
                .rev()
                .map(|n| parts[..n].concat())
                .collect(),
            Expr::Cube(parts) => (0..1usize << parts.len())
                .rev()
                .map(|mask| {
                    let chosen = parts.iter().enumerate();
                    let chosen = chosen.filter(|(i, _)| mask & (1 << (parts.len() - 1 - i)) != 0);
                    chosen.flat_map(|(_, p)| p.clone()).collect()
                })
                .collect(),
            plain => vec![vec![plain.clone()]],
        };
        product = product
            .iter()
            .flat_map(|prefix| {
                sets.iter()
                    .map(move |set| [prefix.clone(), set.clone()].concat())
            })
            .collect();
    }
    product
}

#[cfg(test)]
mod tests {
    use super::expand;
    use crate::text::parse_query;
    use sqlparser::ast::{Expr, GroupByExpr, SetExpr};

    fn sets(group_by: &str) -> Vec<Vec<String>> {
        let q = parse_query(&format!("SELECT count(*) FROM t GROUP BY {group_by}")).unwrap();
        let SetExpr::Select(s) = q.body.as_ref() else {
            unreachable!()
        };
        let GroupByExpr::Expressions(items, _) = &s.group_by else {
            unreachable!()
        };
        let text = |set: Vec<Expr>| set.iter().map(ToString::to_string).collect();
        expand(items).into_iter().map(text).collect()
    }

    #[test]
    fn rollup_cube_and_sets_expand_to_their_grouping_sets() {
        assert_eq!(sets("ROLLUP (a, b)"), [vec!["a", "b"], vec!["a"], vec![]]);
        assert_eq!(
            sets("CUBE (a, b)"),
            [vec!["a", "b"], vec!["a"], vec!["b"], vec![]]
        );
        assert_eq!(
            sets("GROUPING SETS ((a, b), (c), ())"),
            [vec!["a", "b"], vec!["c"], vec![]]
        );
    }

    #[test]
    fn plain_keys_multiply_every_set() {
        assert_eq!(
            sets("x, ROLLUP (a), CUBE (b)"),
            [
                vec!["x", "a", "b"],
                vec!["x", "a"],
                vec!["x", "b"],
                vec!["x"]
            ]
        );
        // A composite element stays together.
        assert_eq!(
            sets("ROLLUP ((a, b), c)"),
            [vec!["a", "b", "c"], vec!["a", "b"], vec![]]
        );
    }

    #[test]
    fn having_reads_select_aliases_and_absent_keys_as_null() {
        let mut db = crate::compile::tests::Fake;
        let an = crate::compile::Analyzer::new(&mut db, 9).unwrap();
        let q = parse_query(
            "SELECT g, count(*) AS n FROM t GROUP BY ROLLUP (g) HAVING n > 1 OR g IS NULL",
        )
        .unwrap();
        let SetExpr::Select(s) = q.body.as_ref() else {
            unreachable!()
        };
        let Ok(SetExpr::SetOperation { left, right, .. }) = an.grouping_set_branches(s) else {
            panic!("not two branches");
        };
        let filter = |b: &SetExpr| match b {
            SetExpr::Select(s) => s.selection.clone().unwrap().to_string(),
            other => panic!("{other}"),
        };
        assert_eq!(
            filter(&left),
            "__mv_set1.__mv_a1 > 1 OR __mv_set1.__mv_g1 IS NULL"
        );
        assert_eq!(filter(&right), "__mv_set2.__mv_a1 > 1 OR NULL IS NULL");
    }
}
