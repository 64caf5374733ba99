//! Sets of field paths, as `metadata.managedFields` records them (`FieldsV1`): which fields
//! of an object a manager owns.
//!
//! A path is a list of [`Pe`]s: a field of a struct or a key of a map (`f:name`), an item
//! of an associative list by its keys (`k:{"name":"app"}`), an item of a set by its value
//! (`v:"a"`), an item by its index (`i:0`). In a set, a path is a *member* (owned itself)
//! or has children (owned below it), or both; `FieldsV1` writes a member with children as
//! the `"."` key of its object.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::status::shown;

/// One element of a field path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pe {
    /// A struct field or a map key.
    Field(String),
    /// An item of an associative list: its keys as a JSON object, keys sorted.
    Key(String),
    /// An item of a set: its value as JSON.
    Value(String),
    /// An item of a list by index.
    Index(usize),
}

impl Pe {
    /// The element of `FieldsV1` (`f:name`, `k:{…}`, `v:…`, `i:0`); `None` for anything
    /// else.
    pub(crate) fn parse(s: &str) -> Option<Pe> {
        let (kind, rest) = s.split_once(':')?;
        Some(match kind {
            "f" => Pe::Field(rest.to_string()),
            "k" => Pe::Key(rest.to_string()),
            "v" => Pe::Value(rest.to_string()),
            "i" => Pe::Index(rest.parse().ok()?),
            _ => return None,
        })
    }

    /// The element as `FieldsV1` writes it.
    pub(crate) fn encode(&self) -> String {
        match self {
            Pe::Field(f) => format!("f:{f}"),
            Pe::Key(k) => format!("k:{k}"),
            Pe::Value(v) => format!("v:{v}"),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    /// The element as the API server writes it in a conflict (`.name`, `[name="app"]`,
    /// `[="a"]`, `[0]`).
    fn display(&self) -> String {
        match self {
            Pe::Field(f) => format!(".{f}"),
            Pe::Key(k) => {
                let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let keys: Vec<String> = keys
                    .iter()
                    .map(|(k, v)| format!("{k}={}", shown(v)))
                    .collect();
                format!("[{}]", keys.join(","))
            }
            Pe::Value(v) => format!(
                "[={}]",
                shown(&serde_json::from_str(v).unwrap_or(Value::Null))
            ),
            Pe::Index(i) => format!("[{i}]"),
        }
    }
}

/// A path as the API server writes it (`.spec.containers[name="app"].image`).
pub(crate) fn display(path: &[Pe]) -> String {
    path.iter().map(Pe::display).collect()
}

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Fields(BTreeMap<Pe, Node>);

/// A path's entry in a set: whether it is a member, and the set below it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Node {
    pub(crate) member: bool,
    pub(crate) children: Fields,
}

impl Node {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }
}

impl Fields {
    /// Whether the set has no member at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.values().all(Node::is_empty)
    }

    /// Adds `path` as a member.
    pub(crate) fn insert(&mut self, path: &[Pe]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut set = self;
        for pe in parents {
            set = &mut set.0.entry(pe.clone()).or_default().children;
        }
        set.0.entry(last.clone()).or_default().member = true;
    }

    /// The node at `pe`, made if missing.
    pub(crate) fn child(&mut self, pe: Pe) -> &mut Node {
        self.0.entry(pe).or_default()
    }

    /// Adds every member of `other`.
    pub(crate) fn union(&mut self, other: &Fields) {
        for (pe, node) in &other.0 {
            let mine = self.0.entry(pe.clone()).or_default();
            mine.member |= node.member;
            mine.children.union(&node.children);
        }
    }

    /// The members of `self` that are not members of `other`.
    pub(crate) fn difference(&self, other: &Fields) -> Fields {
        self.combine(other, |mine, theirs| {
            (mine.member && !theirs.is_some_and(|t| t.member), false)
        })
    }

    /// The members of `self` that are not members of `other` nor below one of them.
    pub(crate) fn recursive_difference(&self, other: &Fields) -> Fields {
        self.combine(other, |mine, theirs| match theirs {
            Some(t) if t.member => (false, true),
            _ => (mine.member, false),
        })
    }

    /// The members of both sets.
    pub(crate) fn intersection(&self, other: &Fields) -> Fields {
        let mut out = Fields::default();
        for (pe, node) in &self.0 {
            if let Some(theirs) = other.0.get(pe) {
                let n = Node {
                    member: node.member && theirs.member,
                    children: node.children.intersection(&theirs.children),
                };
                if !n.is_empty() {
                    out.0.insert(pe.clone(), n);
                }
            }
        }
        out
    }

    /// `self` node by node against `other`: `keep` says whether a node stays a member and
    /// whether its whole subtree goes.
    fn combine(&self, other: &Fields, keep: fn(&Node, Option<&Node>) -> (bool, bool)) -> Fields {
        let mut out = Fields::default();
        for (pe, node) in &self.0 {
            let theirs = other.0.get(pe);
            let (member, drop_all) = keep(node, theirs);
            if drop_all {
                continue;
            }
            let children = match theirs {
                Some(t) => node.children.combine(&t.children, keep),
                None => node.children.clone(),
            };
            let n = Node { member, children };
            if !n.is_empty() {
                out.0.insert(pe.clone(), n);
            }
        }
        out
    }

    /// Whether `path` or anything below it is a member.
    pub(crate) fn has_prefix(&self, path: &[Pe]) -> bool {
        match path.split_first() {
            None => !self.is_empty(),
            Some((pe, rest)) => self.0.get(pe).is_some_and(|n| match rest {
                [] => !n.is_empty(),
                _ => n.children.has_prefix(rest),
            }),
        }
    }

    /// The entries of the set, in order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&Pe, &Node)> {
        self.0.iter()
    }

    /// Every member, in the API server's order (the members of a set before the paths
    /// below its children).
    pub(crate) fn paths(&self) -> Vec<Vec<Pe>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<Pe>, out: &mut Vec<Vec<Pe>>) {
        for (pe, node) in &self.0 {
            if node.member {
                prefix.push(pe.clone());
                out.push(prefix.clone());
                prefix.pop();
            }
        }
        for (pe, node) in &self.0 {
            prefix.push(pe.clone());
            node.children.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The set as `FieldsV1`.
    pub(crate) fn to_json(&self) -> Value {
        let mut out = Map::new();
        for (pe, node) in &self.0 {
            if node.is_empty() {
                continue;
            }
            let mut inner = match node.children.to_json() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            if node.member && !inner.is_empty() {
                inner.insert(".".into(), Value::Object(Map::new()));
            }
            out.insert(pe.encode(), Value::Object(inner));
        }
        Value::Object(out)
    }

    /// The set `FieldsV1` describes.
    pub(crate) fn from_json(v: &Value) -> Result<Fields, String> {
        let map = v.as_object().ok_or("FieldsV1 is not a JSON object")?;
        let mut out = Fields::default();
        for (k, inner) in map {
            if k == "." {
                continue;
            }
            let pe = Pe::parse(k).ok_or_else(|| format!("unknown path element {k:?}"))?;
            let children = Fields::from_json(inner)?;
            let leaf = inner.as_object().is_some_and(Map::is_empty);
            let member = leaf || inner.get(".").is_some();
            out.0.insert(pe, Node { member, children });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> Pe {
        Pe::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_that_have_children() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}}});
        let set = Fields::from_json(&v).unwrap();
        assert_eq!(set.to_json(), v);
        assert!(set.has_prefix(&[f("metadata"), f("labels")]));
        assert!(!set.has_prefix(&[f("status")]));
        let paths: Vec<String> = set.paths().iter().map(|p| display(p)).collect();
        assert_eq!(
            paths,
            [
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.containers[name=\"c\"]",
                ".spec.containers[name=\"c\"].image"
            ]
        );
        assert!(Fields::from_json(&json!({"x:y": {}})).is_err());
    }

    #[test]
    fn difference_keeps_children_and_recursive_difference_drops_subtrees() {
        let mut a = Fields::default();
        a.insert(&[f("metadata")]);
        a.insert(&[f("metadata"), f("labels"), f("x")]);
        a.insert(&[f("status"), f("phase")]);
        a.insert(&[f("spec"), f("x")]);
        let mut b = Fields::default();
        b.insert(&[f("metadata")]);
        b.insert(&[f("status")]);
        let d = a.difference(&b);
        assert!(d.has_prefix(&[f("metadata"), f("labels"), f("x")]));
        assert!(d.has_prefix(&[f("status"), f("phase")]));
        let r = a.recursive_difference(&b);
        assert!(!r.has_prefix(&[f("status")]));
        assert!(!r.has_prefix(&[f("metadata")]));
        assert!(r.has_prefix(&[f("spec"), f("x")]));
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("metadata")]]);
    }
}
