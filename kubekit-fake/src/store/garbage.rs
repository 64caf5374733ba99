//! Finalizers, and what kube-controller-manager's garbage collector and namespace
//! controller do, done by the store at once after a write: objects whose owners are gone
//! deleted, dependents orphaned or deleted in the foreground, deleted namespaces emptied,
//! and the garbage collector's finalizers removed when done.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{DeleteRequest, EventType, Store, meta, meta_mut, meta_str};
use crate::resources::ResourceInfo;

pub(super) const FOREGROUND: &str = "foregroundDeletion";
pub(super) const ORPHAN: &str = "orphan";

pub(super) fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)["finalizers"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn set_finalizers(obj: &mut Value, list: &[String]) {
    let m = meta_mut(obj);
    if list.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), json!(list));
    }
}

pub(super) fn owner_uids(obj: &Value) -> Vec<&str> {
    meta(obj)["ownerReferences"]
        .as_array()
        .map(|refs| refs.iter().filter_map(|r| r["uid"].as_str()).collect())
        .unwrap_or_default()
}

/// One step of garbage collection.
enum Action {
    /// Delete the object (its owners are gone, or being deleted in the foreground, or its
    /// namespace is being deleted).
    Delete,
    /// Remove an emptied namespace.
    Remove,
    /// Remove this finalizer: the dependents it waited for are gone or orphaned.
    Finish(&'static str),
    /// Remove the owner reference to this uid (its owner is deleted with `Orphan`).
    Disown(String),
}

impl Store {
    /// What kube-controller-manager's garbage collector and namespace controller do, at
    /// once: deletes objects whose owners are all gone, empties namespaces and objects
    /// being deleted in the foreground, orphans the dependents of objects deleted with
    /// `Orphan`, and removes their finalizers when done. Runs until nothing changes.
    pub(super) fn collect_garbage(&mut self) {
        if !self.own_garbage_collection || std::mem::replace(&mut self.collecting, true) {
            return;
        }
        self.collect_garbage_steps();
        self.collecting = false;
    }

    /// Turns the store's own garbage collection and namespace emptying on (the default) or
    /// off, for a kube-controller-manager running beside it to do them as in a cluster.
    pub(crate) fn set_own_garbage_collection(&mut self, on: bool) {
        self.own_garbage_collection = on;
        self.collect_garbage();
    }

    /// The loop of [`collect_garbage`](Self::collect_garbage).
    fn collect_garbage_steps(&mut self) {
        while let Some((info, obj, action)) = self.next_garbage_action() {
            self.collect(&info, obj, action);
        }
    }

    /// The first object garbage collection has to act on, and how.
    fn next_garbage_action(&self) -> Option<(ResourceInfo, Arc<Value>, Action)> {
        let all = self.all_objects();
        let uids: HashSet<&str> = all.iter().filter_map(|(_, o)| meta_str(o, "uid")).collect();
        let terminating: HashMap<&str, Vec<String>> = all
            .iter()
            .filter(|(_, o)| meta(o).get("deletionTimestamp").is_some())
            .filter_map(|(_, o)| Some((meta_str(o, "uid")?, finalizers(o))))
            .collect();
        let terminating_ns: HashSet<&str> = all
            .iter()
            .filter(|(i, o)| {
                i.builtin && i.plural == "namespaces" && meta(o).get("deletionTimestamp").is_some()
            })
            .filter_map(|(_, o)| meta_str(o, "name"))
            .collect();
        all.iter().find_map(|(info, obj)| {
            let owners = owner_uids(obj);
            let pending = meta(obj).get("deletionTimestamp").is_some();
            let in_dying_ns = info.namespaced
                && meta_str(obj, "namespace").is_some_and(|ns| terminating_ns.contains(ns));
            let gc_owner = !owners.is_empty() && owners.iter().all(|u| !uids.contains(u));
            let owner_finalizing = |finalizer: &str| {
                owners.iter().copied().find(|u| {
                    terminating
                        .get(u)
                        .is_some_and(|f| f.iter().any(|f| f == finalizer))
                })
            };
            let uid = meta_str(obj, "uid").unwrap_or("");
            let has_dependents = || all.iter().any(|(_, d)| owner_uids(d).contains(&uid));
            let own_finalizer = [FOREGROUND, ORPHAN]
                .into_iter()
                .find(|f| finalizers(obj).iter().any(|x| x == f));
            let action = if let Some(owner) = owner_finalizing(ORPHAN) {
                Action::Disown(owner.to_string())
            } else if !pending
                && (gc_owner || in_dying_ns || owner_finalizing(FOREGROUND).is_some())
            {
                Action::Delete
            } else if pending
                && let Some(finalizer) = own_finalizer
                && !has_dependents()
            {
                Action::Finish(finalizer)
            } else if pending
                && info.builtin
                && info.plural == "namespaces"
                && finalizers(obj).is_empty()
                && !all
                    .iter()
                    .any(|(i, o)| i.namespaced && meta_str(o, "namespace") == meta_str(obj, "name"))
            {
                Action::Remove
            } else {
                return None;
            };
            Some((info.clone(), obj.clone(), action))
        })
    }

    /// Does one step of garbage collection on `obj`.
    fn collect(&mut self, info: &ResourceInfo, obj: Arc<Value>, action: Action) {
        let ns = meta_str(&obj, "namespace").unwrap_or("").to_string();
        let name = meta_str(&obj, "name").unwrap_or("").to_string();
        match action {
            Action::Delete => {
                let _ = self.delete(info, &ns, &name, &DeleteRequest::default());
            }
            Action::Remove => {
                self.write(info, EventType::Deleted, (*obj).clone(), Some(obj));
            }
            Action::Finish(finalizer) => {
                let mut done = (*obj).clone();
                let rest: Vec<String> = finalizers(&obj)
                    .into_iter()
                    .filter(|f| f != finalizer)
                    .collect();
                set_finalizers(&mut done, &rest);
                let _ = self.update(info, &ns, &name, done, false, None);
            }
            Action::Disown(owner) => {
                let mut disowned = (*obj).clone();
                if let Some(refs) = disowned["metadata"]["ownerReferences"].as_array_mut() {
                    refs.retain(|r| r["uid"].as_str() != Some(owner.as_str()));
                    if refs.is_empty() {
                        meta_mut(&mut disowned).remove("ownerReferences");
                    }
                }
                let _ = self.update(info, &ns, &name, disowned, false, None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::store::testing::{create_configmaps, setup};
    use crate::store::{DeleteRequest, Store};

    #[test]
    fn deleting_a_namespace_of_many_objects_collects_every_one() {
        let (mut s, cm) = setup();
        create_configmaps(&mut s, &cm, 1_000);
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.delete(&ns, "", "ns", &DeleteRequest::default()).unwrap();
        assert!(s.snapshot(&cm, Some("ns"), None).unwrap().1.is_empty());
        assert_eq!(s.get(&ns, "", "ns").unwrap_err().code, 404);
    }

    #[test]
    fn a_namespace_held_by_its_own_finalizer_goes_once_it_is_removed() {
        let mut s = Store::new();
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
        s.create(&ns, "", held, None).unwrap();
        s.delete(&ns, "", "held", &DeleteRequest::default())
            .unwrap();
        let mut terminating = (*s.get(&ns, "", "held").unwrap()).clone();
        assert_eq!(terminating["status"]["phase"], "Terminating");
        terminating["metadata"]["finalizers"] = json!([]);
        s.update(&ns, "", "held", terminating, false, None).unwrap();
        assert_eq!(s.get(&ns, "", "held").unwrap_err().code, 404);
    }

    #[test]
    fn without_its_own_collection_a_namespace_waits_for_finalize() {
        let (mut s, cm) = setup();
        s.set_own_garbage_collection(false);
        create_configmaps(&mut s, &cm, 1);
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.delete(&ns, "", "ns", &DeleteRequest::default()).unwrap();
        assert_eq!(s.snapshot(&cm, Some("ns"), None).unwrap().1.len(), 1);
        s.delete(&cm, "ns", "cm-0", &DeleteRequest::default())
            .unwrap();
        assert_eq!(
            s.get(&ns, "", "ns").unwrap()["status"]["phase"],
            "Terminating"
        );
        s.finalize_namespace(&ns, "ns", json!([]), None, false)
            .unwrap();
        assert_eq!(s.get(&ns, "", "ns").unwrap_err().code, 404);
    }
}
