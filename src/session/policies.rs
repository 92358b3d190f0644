//! What the server keeps in memory about views' refresh policies, read again with the rest of
//! the catalog (`Shared::reload_catalog`): which views a change must maintain at once
//! (`immediate`), and which the background refresher looks after (`every …`).

use crate::ivm::{RefreshPolicy, ViewPolicy};
use crate::sql::quote_ident;

#[derive(Default)]
pub struct Policies {
    /// Every view, in id order (a view after the views it reads).
    views: Vec<ViewPolicy>,
}

/// A view as REFRESH names it: quoted schema and name.
pub fn refresh_name(v: &ViewPolicy) -> String {
    format!("{}.{}", quote_ident(&v.schema), quote_ident(&v.name))
}

impl Policies {
    pub fn new(views: Vec<ViewPolicy>) -> Self {
        Policies { views }
    }

    /// The immediate views that read any of `changed` (lower-cased relation names), in id
    /// order, as (name for REFRESH, bare lower-cased name). Views over these are found when
    /// their refresh feeds them (`matview::refresh`).
    pub fn immediate_for(&self, changed: &[String]) -> Vec<(String, String)> {
        self.views
            .iter()
            .filter(|v| v.policy == RefreshPolicy::Immediate)
            .filter(|v| v.sources.iter().any(|s| changed.contains(s)))
            .map(|v| (refresh_name(v), v.name.to_ascii_lowercase()))
            .collect()
    }

    /// The scheduled views, in id order.
    pub fn scheduled(&self) -> Vec<ViewPolicy> {
        self.views
            .iter()
            .filter(|v| v.policy.interval().is_some())
            .cloned()
            .collect()
    }

    /// Whether any view is scheduled (the refresher sleeps otherwise).
    pub fn any_scheduled(&self) -> bool {
        self.views.iter().any(|v| v.policy.interval().is_some())
    }

    /// The views that read any of `changed`, directly or through other views (lower-cased
    /// names), so the refresher knows which scheduled views a commit left work for.
    pub fn readers_of(&self, changed: &[String]) -> Vec<i64> {
        let mut touched: Vec<String> = changed.to_vec();
        let mut out = Vec::new();
        for v in &self.views {
            if v.sources.iter().any(|s| touched.contains(s)) {
                out.push(v.id);
                touched.push(v.name.to_ascii_lowercase());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn view(id: i64, name: &str, policy: RefreshPolicy, sources: &[&str]) -> ViewPolicy {
        ViewPolicy {
            id,
            schema: "main".into(),
            name: name.into(),
            policy,
            sources: sources.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn catalog() -> Policies {
        let every = RefreshPolicy::Every(Duration::from_secs(1));
        Policies::new(vec![
            view(1, "a", RefreshPolicy::Immediate, &["t"]),
            view(2, "b", RefreshPolicy::OnDemand, &["t", "u"]),
            view(3, "c", RefreshPolicy::Immediate, &["a"]),
            view(4, "d", every, &["b"]),
            view(5, "e", RefreshPolicy::Immediate, &["b"]),
        ])
    }

    #[test]
    fn immediate_views_are_the_direct_readers() {
        let p = catalog();
        let names = |changed: &str| -> Vec<String> {
            p.immediate_for(&[changed.to_string()])
                .into_iter()
                .map(|(display, _)| display)
                .collect()
        };
        assert_eq!(names("t"), vec!["\"main\".\"a\""]);
        assert_eq!(names("a"), vec!["\"main\".\"c\""]);
        // b is on demand: writing u changes nothing immediate until b is refreshed.
        assert!(names("u").is_empty());
        assert_eq!(names("b"), vec!["\"main\".\"e\""]);
        assert!(names("other").is_empty());
    }

    #[test]
    fn readers_are_found_through_views() {
        let p = catalog();
        assert_eq!(p.readers_of(&["u".into()]), vec![2, 4, 5]);
        assert_eq!(p.readers_of(&["t".into()]), vec![1, 2, 3, 4, 5]);
        assert_eq!(
            p.scheduled().iter().map(|v| v.id).collect::<Vec<_>>(),
            vec![4]
        );
        assert!(p.any_scheduled());
        assert!(!Policies::default().any_scheduled());
    }
}
