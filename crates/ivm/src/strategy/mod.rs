//! How the match counts of outer and semi joins are found: choices of cost, apart from the
//! algebra of the operators that use them (`ops::outer`, `ops::semi`).
//!
//! - `keyed`: counts per changed join key, when the predicate is key equalities plus
//!   conditions on the other side alone;
//! - `restricted`: a correlated count read only over the rows that match some candidate.

pub mod keyed;
pub mod restricted;
