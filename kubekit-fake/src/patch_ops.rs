//! JSON patch (RFC 6902) applied as kube-apiserver applies it, with the library it uses
//! (evanphx/json-patch v4), leniencies included.
//!
//! # Contract
//!
//! - A path is split at `/` after its first segment (`~1` is `/`, `~0` is `~`); every
//!   segment but the last must exist, the last names the member or index acted on. A path
//!   without a leading `/` loses its first segment (`data/x` acts on the document's `x`);
//!   the empty path names nothing but in a `replace`, which replaces the whole document.
//! - `add` sets a member or inserts at an index (`-` appends); a missing `value` adds
//!   `null`. `remove` needs the member or index to exist. `replace` of a missing member
//!   adds it (of a missing index fails). `copy` from a missing member copies `null`;
//!   `move` needs it. `test` of a missing member passes only against `null` or no value.
//! - Any other operation, and any failure, is an error (the real server's `422`).

use serde_json::Value;

/// `doc` with `ops` applied in order, or why one failed.
pub(crate) fn apply(mut doc: Value, ops: &[Value]) -> Result<Value, String> {
    for op in ops {
        apply_one(&mut doc, op)?;
    }
    Ok(doc)
}

/// The container a path's last segment is in, and that segment.
fn find<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let segments: Vec<String> = path
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (key, parents) = segments.split_last()?;
    let parents = parents.get(1..)?;
    let mut at = doc;
    for segment in parents {
        at = match at {
            Value::Object(m) => m.get_mut(segment)?,
            Value::Array(a) => a.get_mut(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
        if !(at.is_object() || at.is_array()) {
            return None;
        }
    }
    Some((at, key.clone()))
}

/// An index into a list of `len` items (`allow_end`: the one past the last too).
fn index(key: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    let i: i64 = key.parse().map_err(|_| format!("invalid index: {key}"))?;
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let i = if i < 0 { i + len_i } else { i };
    let limit = if allow_end { len_i } else { len_i - 1 };
    if i < 0 || i > limit {
        return Err(format!("index out of range: {key}"));
    }
    usize::try_from(i).map_err(|_| format!("index out of range: {key}"))
}

/// The value at `key` of `container` (`None`: a missing member; an error: a bad index).
fn get(container: &Value, key: &str) -> Result<Option<Value>, String> {
    match container {
        Value::Object(m) => Ok(m.get(key).cloned()),
        Value::Array(a) => Ok(Some(a[index(key, a.len(), false)?].clone())),
        _ => Err("not a container".into()),
    }
}

fn add(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(m) => {
            m.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(a) if key == "-" => {
            a.push(value);
            Ok(())
        }
        Value::Array(a) => {
            let i = index(key, a.len(), true)?;
            a.insert(i, value);
            Ok(())
        }
        _ => Err("not a container".into()),
    }
}

fn remove(container: &mut Value, key: &str) -> Result<Value, String> {
    match container {
        Value::Object(m) => m
            .remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}")),
        Value::Array(a) => {
            let i = index(key, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err("not a container".into()),
    }
}

fn apply_one(doc: &mut Value, op: &Value) -> Result<(), String> {
    let text = |k: &str| op.get(k).and_then(Value::as_str);
    let path = text("path").ok_or("operation missing path field")?;
    let value = op.get("value").cloned().unwrap_or(Value::Null);
    let missing =
        |what: &str| format!("{what} operation does not apply: doc is missing path: {path}");
    match text("op").unwrap_or_default() {
        "add" => {
            let (c, key) = find(doc, path).ok_or_else(|| missing("add"))?;
            add(c, &key, value)
        }
        "remove" => {
            let (c, key) = find(doc, path).ok_or_else(|| missing("remove"))?;
            remove(c, &key).map(|_| ())
        }
        // The empty path of a replace is the whole document.
        "replace" if path.is_empty() => {
            *doc = value;
            Ok(())
        }
        "replace" => {
            let (c, key) = find(doc, path).ok_or_else(|| missing("replace"))?;
            match c {
                Value::Array(a) => {
                    let i = index(&key, a.len(), false)?;
                    a[i] = value;
                    Ok(())
                }
                other => add(other, &key, value),
            }
        }
        op_name @ ("move" | "copy") => {
            let from = text("from").ok_or("operation missing from field")?;
            let (c, key) = find(doc, from).ok_or_else(|| missing(op_name))?;
            let taken = match op_name {
                "move" => remove(c, &key)?,
                _ => get(c, &key)?.unwrap_or(Value::Null),
            };
            let (c, key) = find(doc, path).ok_or_else(|| missing(op_name))?;
            add(c, &key, taken)
        }
        "test" => {
            let (c, key) = find(doc, path).ok_or_else(|| missing("test"))?;
            match get(c, &key)? {
                None if value.is_null() => Ok(()),
                Some(found) if found == value => Ok(()),
                _ => Err(format!("testing value {path} failed")),
            }
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_members_are_replaced_and_copied_as_the_servers_library_does() {
        let doc = json!({"data": {"a": "1"}, "list": [1, 2]});
        let ops = json!([
            {"op": "replace", "path": "/data/missing", "value": "x"},
            {"op": "copy", "from": "/data/none", "path": "/data/copied"},
            {"op": "add", "path": "data/top", "value": 1},
            {"op": "add", "path": "/list/-", "value": 3},
            {"op": "add", "path": "/data/nothing"},
            {"op": "test", "path": "/data/absent"},
        ]);
        let patched = apply(doc, ops.as_array().unwrap()).unwrap();
        assert_eq!(
            patched,
            json!({"data": {"a": "1", "missing": "x", "copied": null, "nothing": null},
                   "top": 1, "list": [1, 2, 3]})
        );
    }

    #[test]
    fn missing_paths_indexes_and_moves_fail() {
        let doc = json!({"data": {}, "list": [1]});
        for op in [
            json!({"op": "remove", "path": "/data/missing"}),
            json!({"op": "replace", "path": "/list/5", "value": 1}),
            json!({"op": "move", "from": "/data/missing", "path": "/data/x"}),
            json!({"op": "add", "path": "/nothing/here", "value": 1}),
            json!({"op": "test", "path": "/data/missing", "value": "x"}),
            json!({"op": "remove", "path": ""}),
            json!({"op": "nope", "path": "/data/x"}),
        ] {
            assert!(
                apply(doc.clone(), std::slice::from_ref(&op)).is_err(),
                "{op}"
            );
        }
    }
}
