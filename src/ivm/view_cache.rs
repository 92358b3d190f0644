//! Compiled views kept in server memory, shared by all sessions: a refresh finds its plan here
//! instead of querying the catalog and parsing the plan's JSON every time.
//!
//! An entry is only a hint. Each refresh's probe checks, in its own transaction, that a view with
//! the entry's id and name still exists (ids are never reused and plans never change), and the
//! server clears the cache after every CREATE, DROP or ALTER of a materialized view and every
//! rollback. A probe that fails (a concurrent session dropped the view's tables) drops the entry,
//! so the next refresh reads the catalog again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::catalog::ViewRow;

#[derive(Default)]
pub struct ViewCache {
    views: Mutex<HashMap<(String, String), Arc<ViewRow>>>,
}

fn key(schema: &str, name: &str) -> (String, String) {
    (schema.to_lowercase(), name.to_lowercase())
}

impl ViewCache {
    pub(crate) fn get(&self, schema: &str, name: &str) -> Option<Arc<ViewRow>> {
        self.views.lock().unwrap().get(&key(schema, name)).cloned()
    }

    pub(crate) fn put(&self, schema: &str, name: &str, view: Arc<ViewRow>) {
        self.views.lock().unwrap().insert(key(schema, name), view);
    }

    pub(crate) fn forget(&self, schema: &str, name: &str) {
        self.views.lock().unwrap().remove(&key(schema, name));
    }

    /// Forgets everything (after DDL on materialized views, or a rollback).
    pub fn clear(&self) {
        self.views.lock().unwrap().clear();
    }
}
