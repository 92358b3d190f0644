//! UNION ALL: linear, so `Δ(A ∪ B) = ΔA ∪ ΔB`; a branch whose inputs did not change adds no
//! term.

use super::{rel_cur, rel_delta};
use crate::ir::Query;
use crate::plan::{Rel, Source};

pub(super) fn cur(sources: &[Source], parts: &[Rel]) -> Query {
    Query::union_all(parts.iter().map(|p| rel_cur(sources, p)).collect())
}

pub(super) fn delta(sources: &[Source], parts: &[Rel], changed: &[bool]) -> Option<Query> {
    let ds: Vec<Query> = parts
        .iter()
        .filter_map(|p| rel_delta(sources, p, changed))
        .collect();
    (!ds.is_empty()).then(|| Query::union_all(ds))
}
