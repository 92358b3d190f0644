//! Writers for nested Arrow arrays: lists (as PostgreSQL arrays, multi-dimensional when
//! rectangular), structs, maps and unions (as JSON, like DuckDB's `to_json`), and dictionaries
//! (ENUM).

use std::cell::RefCell;

use bytes::{BufMut, BytesMut};
use duckdb::arrow::array::{
    Array, ArrowPrimitiveType, DictionaryArray, FixedSizeListArray, GenericListArray, MapArray,
    OffsetSizeTrait, StructArray, UnionArray,
};
use duckdb::arrow::datatypes::{ArrowDictionaryKeyType, ArrowNativeType};

use super::oid::oids;
use super::text::{write_array_element, write_json_string};
use super::writers::{write_value, ValueWriter};
use super::TypeError;

/// PostgreSQL allows at most 6 array dimensions.
const MAX_DIMS: usize = 6;

/// The structure of a list-like writer, so nested lists can be walked as one array.
pub(crate) trait ListAccess {
    /// The child index range of list `i`.
    fn bounds(&self, i: usize) -> (usize, usize);
    fn child(&self) -> &dyn ValueWriter;
}

/// Either kind of list storage.
pub(crate) enum ListStore<'a, O: OffsetSizeTrait> {
    Var(&'a GenericListArray<O>),
    Fixed(&'a FixedSizeListArray),
}

pub(crate) struct ListW<'a, O: OffsetSizeTrait> {
    pub store: ListStore<'a, O>,
    pub child: Box<dyn ValueWriter + 'a>,
    /// The array type OID, or JSON when the leaf is a STRUCT/MAP/UNION.
    pub oid: u32,
    /// Reused buffer for element text that may need quoting.
    pub scratch: RefCell<BytesMut>,
}

impl<O: OffsetSizeTrait> ListAccess for ListW<'_, O> {
    #[inline]
    fn bounds(&self, i: usize) -> (usize, usize) {
        match &self.store {
            ListStore::Var(a) => {
                let offs = a.value_offsets();
                (offs[i].as_usize(), offs[i + 1].as_usize())
            }
            ListStore::Fixed(a) => {
                let n = a.value_length() as usize;
                let start = a.value_offset_at(i);
                (start, start + n)
            }
        }
    }
    fn child(&self) -> &dyn ValueWriter {
        self.child.as_ref()
    }
}

/// Nesting depth (1 for a list of scalars) and the leaf writer.
fn depth_and_leaf(list: &dyn ListAccess) -> (usize, &dyn ValueWriter) {
    let mut depth = 1;
    let mut w = list.child();
    while let Some(l) = w.as_list() {
        depth += 1;
        w = l.child();
    }
    (depth, w)
}

/// Fills `dims` with the length at each level; false when sub-lists differ in length or are
/// NULL, which a PostgreSQL array cannot represent.
fn rectangular(
    list: &dyn ListAccess,
    i: usize,
    level: usize,
    depth: usize,
    dims: &mut [usize; MAX_DIMS],
) -> bool {
    let (s, e) = list.bounds(i);
    let len = e - s;
    if dims[level] == usize::MAX {
        dims[level] = len;
    } else if dims[level] != len {
        return false;
    }
    if level + 1 < depth {
        let child = list.child();
        let Some(sub) = child.as_list() else {
            return false;
        };
        for j in s..e {
            if child.is_null(j) || !rectangular(sub, j, level + 1, depth, dims) {
                return false;
            }
        }
    }
    true
}

fn emit_text(
    list: &dyn ListAccess,
    i: usize,
    level: usize,
    depth: usize,
    out: &mut BytesMut,
    scratch: &mut BytesMut,
) -> Result<(), TypeError> {
    out.put_u8(b'{');
    let (s, e) = list.bounds(i);
    let child = list.child();
    for j in s..e {
        if j > s {
            out.put_u8(b',');
        }
        if level + 1 < depth {
            let sub = child.as_list().expect("checked by rectangular()");
            emit_text(sub, j, level + 1, depth, out, scratch)?;
        } else if child.is_null(j) {
            out.extend_from_slice(b"NULL");
        } else if child.quote_free() {
            write_value(child, j, false, out)?;
        } else {
            scratch.clear();
            write_value(child, j, false, scratch)?;
            write_array_element(scratch, out);
        }
    }
    out.put_u8(b'}');
    Ok(())
}

fn emit_binary(
    list: &dyn ListAccess,
    i: usize,
    level: usize,
    depth: usize,
    out: &mut BytesMut,
    has_null: &mut bool,
) -> Result<(), TypeError> {
    let (s, e) = list.bounds(i);
    let child = list.child();
    for j in s..e {
        if level + 1 < depth {
            let sub = child.as_list().expect("checked by rectangular()");
            emit_binary(sub, j, level + 1, depth, out, has_null)?;
        } else if child.is_null(j) {
            *has_null = true;
            out.put_i32(-1);
        } else {
            let at = out.len();
            out.put_i32(0);
            write_value(child, j, true, out)?;
            let len = (out.len() - at - 4) as i32;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
    }
    Ok(())
}

impl<O: OffsetSizeTrait> ListW<'_, O> {
    /// The dimensions of list `i` as a PostgreSQL array, or None when it is not rectangular.
    fn dims(&self, i: usize) -> Option<(usize, [usize; MAX_DIMS])> {
        let (depth, _) = depth_and_leaf(self);
        if depth > MAX_DIMS {
            return None;
        }
        let mut dims = [usize::MAX; MAX_DIMS];
        rectangular(self, i, 0, depth, &mut dims).then_some((depth, dims))
    }
}

impl<O: OffsetSizeTrait> ValueWriter for ListW<'_, O> {
    fn is_null(&self, i: usize) -> bool {
        match &self.store {
            ListStore::Var(a) => a.is_null(i),
            ListStore::Fixed(a) => a.is_null(i),
        }
    }

    /// `array_out`: `{1,2,NULL}`, `{{1,2},{3,4}}`; a jagged nested list becomes JSON text.
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let Some((depth, dims)) = self.dims(i) else {
            return self.json(i, out);
        };
        if dims[..depth].contains(&0) {
            out.extend_from_slice(b"{}");
            return Ok(());
        }
        match self.scratch.try_borrow_mut() {
            Ok(mut scratch) => emit_text(self, i, 0, depth, out, &mut scratch),
            Err(_) => emit_text(self, i, 0, depth, out, &mut BytesMut::new()),
        }
    }

    /// `array_send`: ndim, has-null flag, element OID, (length, lower bound 1) per dimension,
    /// then every element with its length.
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (_, leaf) = depth_and_leaf(self);
        let elem_oid = leaf.oid();
        let Some((depth, dims)) = self.dims(i) else {
            return Err(TypeError::Unsupported(
                "a nested list whose sub-lists differ in length (or are NULL) has no binary \
                 PostgreSQL array form; request text format"
                    .into(),
            ));
        };
        if dims[..depth].contains(&0) {
            out.put_i32(0);
            out.put_i32(0);
            out.put_u32(elem_oid);
            return Ok(());
        }
        out.put_i32(depth as i32);
        let flag_at = out.len();
        out.put_i32(0);
        out.put_u32(elem_oid);
        for d in &dims[..depth] {
            out.put_i32(*d as i32);
            out.put_i32(1);
        }
        let mut has_null = false;
        emit_binary(self, i, 0, depth, out, &mut has_null)?;
        if has_null {
            out[flag_at..flag_at + 4].copy_from_slice(&1i32.to_be_bytes());
        }
        Ok(())
    }

    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(b'[');
        let (s, e) = self.bounds(i);
        for j in s..e {
            if j > s {
                out.put_u8(b',');
            }
            if self.child.is_null(j) {
                out.extend_from_slice(b"null");
            } else {
                self.child.json(j, out)?;
            }
        }
        out.put_u8(b']');
        Ok(())
    }

    fn oid(&self) -> u32 {
        self.oid
    }

    fn as_list(&self) -> Option<&dyn ListAccess> {
        Some(self)
    }
}

/// Writes a JSON object member name.
fn json_key(name: &str, out: &mut BytesMut) {
    write_json_string(name.as_bytes(), out);
    out.put_u8(b':');
}

/// STRUCT as a JSON object.
pub(crate) struct StructW<'a> {
    pub arr: &'a StructArray,
    pub fields: Vec<(String, Box<dyn ValueWriter + 'a>)>,
}

impl ValueWriter for StructW<'_> {
    fn is_null(&self, i: usize) -> bool {
        self.arr.is_null(i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.json(i, out)
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.json(i, out)
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(b'{');
        for (n, (name, w)) in self.fields.iter().enumerate() {
            if n > 0 {
                out.put_u8(b',');
            }
            json_key(name, out);
            if w.is_null(i) {
                out.extend_from_slice(b"null");
            } else {
                w.json(i, out)?;
            }
        }
        out.put_u8(b'}');
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::JSON
    }
}

/// MAP as a JSON object whose member names are the keys' text.
pub(crate) struct MapW<'a> {
    pub arr: &'a MapArray,
    pub keys: Box<dyn ValueWriter + 'a>,
    pub values: Box<dyn ValueWriter + 'a>,
}

impl ValueWriter for MapW<'_> {
    fn is_null(&self, i: usize) -> bool {
        self.arr.is_null(i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.json(i, out)
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.json(i, out)
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let offs = self.arr.value_offsets();
        let (s, e) = (offs[i] as usize, offs[i + 1] as usize);
        out.put_u8(b'{');
        let mut key = BytesMut::new();
        for j in s..e {
            if j > s {
                out.put_u8(b',');
            }
            key.clear();
            if !self.keys.is_null(j) {
                self.keys.text(j, &mut key)?;
            }
            write_json_string(&key, out);
            out.put_u8(b':');
            if self.values.is_null(j) {
                out.extend_from_slice(b"null");
            } else {
                self.values.json(j, out)?;
            }
        }
        out.put_u8(b'}');
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::JSON
    }
}

/// UNION as the JSON value of its selected member.
pub(crate) struct UnionW<'a> {
    pub arr: &'a UnionArray,
    /// Member names and writers indexed by type id (DuckDB assigns ids 0..n).
    pub members: Vec<Option<(String, Box<dyn ValueWriter + 'a>)>>,
}

impl UnionW<'_> {
    fn member(&self, i: usize) -> Option<(&str, &dyn ValueWriter, usize)> {
        let id = self.arr.type_id(i);
        let (name, w) = self.members.get(id as usize)?.as_ref()?;
        Some((name, w.as_ref(), self.arr.value_offset(i)))
    }
}

impl ValueWriter for UnionW<'_> {
    fn is_null(&self, i: usize) -> bool {
        match self.member(i) {
            Some((_, w, j)) => w.is_null(j),
            None => true,
        }
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.json(i, out)
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.json(i, out)
    }
    /// As DuckDB's `to_json`: an object with the selected member, `{"s":"x"}`.
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        match self.member(i) {
            Some((name, w, j)) if !w.is_null(j) => {
                out.put_u8(b'{');
                json_key(name, out);
                w.json(j, out)?;
                out.put_u8(b'}');
                Ok(())
            }
            _ => {
                out.extend_from_slice(b"null");
                Ok(())
            }
        }
    }
    fn oid(&self) -> u32 {
        oids::JSON
    }
}

/// A dictionary-encoded column (ENUM): each value delegates to the dictionary entry.
pub(crate) struct DictW<'a, K: ArrowDictionaryKeyType> {
    pub arr: &'a DictionaryArray<K>,
    pub values: Box<dyn ValueWriter + 'a>,
}

impl<K> DictW<'_, K>
where
    K: ArrowDictionaryKeyType + ArrowPrimitiveType,
{
    #[inline]
    fn key(&self, i: usize) -> usize {
        self.arr.keys().value(i).as_usize()
    }
}

impl<K> ValueWriter for DictW<'_, K>
where
    K: ArrowDictionaryKeyType + ArrowPrimitiveType,
{
    fn is_null(&self, i: usize) -> bool {
        self.arr.is_null(i) || self.values.is_null(self.key(i))
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.values.text(self.key(i), out)
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.values.binary(self.key(i), out)
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.values.json(self.key(i), out)
    }
    fn oid(&self) -> u32 {
        self.values.oid()
    }
    fn quote_free(&self) -> bool {
        self.values.quote_free()
    }
}
