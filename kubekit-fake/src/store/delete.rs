//! Deletion: a delete's preconditions, the finalizers its propagation policy adds (or
//! switches, for an object already being deleted), the object removed or marked for
//! deletion, a CRD's resource no longer served; and a Namespace's `finalize` subresource.

use std::sync::Arc;

use serde_json::{Value, json};

use super::garbage::{FOREGROUND, ORPHAN, finalizers, set_finalizers};
use super::{EventType, Store, meta, meta_mut, meta_str, now};
use crate::resources::{self, ResourceInfo};
use crate::status::{ApiError, ApiResult};

/// How a delete should go.
#[derive(Debug, Clone, Default)]
pub struct DeleteRequest {
    /// `dryRun: [All]` (or the query's): answer as if deleted, delete nothing.
    pub dry_run: bool,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
    pub propagation: Option<String>,
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; this was its last stored state (the real server answers a
    /// delete with it, at its last resourceVersion; the `DELETED` event carries the
    /// deletion's).
    Gone(Arc<Value>),
    /// The object is marked for deletion and waits for its finalizers.
    Pending(Arc<Value>),
}

/// Refuses to delete a system PriorityClass, as the real server's admission does.
fn refuse_system_priority_class(info: &ResourceInfo, name: &str) -> ApiResult<()> {
    if info.builtin && crate::kinds::is_system_priority_class(info, name) {
        let message = format!(
            "{} \"{name}\" is forbidden: this is a system priority class and cannot be deleted",
            info.qualified()
        );
        return Err(ApiError::new(403, "Forbidden", message)
            .with_details(json!({"name": name, "group": info.group, "kind": info.plural})));
    }
    Ok(())
}

/// The delete's preconditions on `old`: its uid, then its resourceVersion.
fn check_preconditions(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    req: &DeleteRequest,
) -> ApiResult<()> {
    let check = |label: &str, want: &Option<String>, field: &str| match want {
        Some(want) if meta_str(old, field) != Some(want.as_str()) => {
            Err(ApiError::precondition_failed(
                info,
                name,
                label,
                want,
                meta_str(old, field).unwrap_or(""),
            ))
        }
        _ => Ok(()),
    };
    check("UID", &req.uid, "uid")?;
    check("ResourceVersion", &req.resource_version, "resourceVersion")
}

/// The garbage collector's finalizer `req`'s propagation policy adds, if any.
fn propagation_finalizer(req: &DeleteRequest) -> Option<&'static str> {
    match req.propagation.as_deref() {
        Some("Foreground") => Some(FOREGROUND),
        Some("Orphan") => Some(ORPHAN),
        _ => None,
    }
}

/// Whether `info` is the Namespaces' resource: a namespace always waits for its content
/// to be deleted first.
fn is_namespace(info: &ResourceInfo) -> bool {
    info.builtin && info.plural == "namespaces"
}

impl Store {
    /// A Namespace's `finalize` subresource: its `spec.finalizers` set to `spec_finalizers`
    /// (`resource_version`, when given, must be the stored one); a namespace being deleted
    /// that has no finalizer left is removed. With `dry_run`, the answer without a write.
    pub(crate) fn finalize_namespace(
        &mut self,
        info: &ResourceInfo,
        name: &str,
        spec_finalizers: Value,
        resource_version: Option<&str>,
        dry_run: bool,
    ) -> ApiResult<Arc<Value>> {
        let old = self.get(info, "", name)?;
        if resource_version.is_some_and(|rv| meta_str(&old, "resourceVersion") != Some(rv)) {
            return Err(ApiError::stale(info, name));
        }
        let mut new = (*old).clone();
        // No list, or an empty one (which the real server does not store either).
        if spec_finalizers.as_array().is_none_or(Vec::is_empty) {
            if let Some(spec) = new["spec"].as_object_mut() {
                spec.remove("finalizers");
            }
        } else {
            new["spec"]["finalizers"] = spec_finalizers;
        }
        if new == *old {
            return Ok(old);
        }
        if dry_run {
            return Ok(Arc::new(new));
        }
        let none_left = new["spec"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty)
            && finalizers(&new).is_empty();
        if meta(&new).get("deletionTimestamp").is_some() && none_left {
            self.write(info, EventType::Deleted, new.clone(), Some(old));
            return Ok(Arc::new(new));
        }
        Ok(self.write(info, EventType::Modified, new, Some(old)))
    }

    /// Deletes `name`, or marks it for deletion when finalizers (its own, or those the
    /// propagation policy adds) must run first.
    pub fn delete(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        req: &DeleteRequest,
    ) -> ApiResult<Deleted> {
        refuse_system_priority_class(info, name)?;
        let old = self.get(info, ns, name)?;
        check_preconditions(info, name, &old, req)?;
        let result = self.delete_or_mark(info, old, req);
        self.forget_crd(info, &result);
        self.collect_garbage();
        Ok(result)
    }

    /// Removes `old`, or marks it for deletion with the finalizers it waits for: its own,
    /// and the one `req`'s propagation policy adds.
    fn delete_or_mark(
        &mut self,
        info: &ResourceInfo,
        old: Arc<Value>,
        req: &DeleteRequest,
    ) -> Deleted {
        let mut fins = finalizers(&old);
        if let Some(f) = propagation_finalizer(req)
            && !fins.iter().any(|x| x == f)
            && meta(&old).get("deletionTimestamp").is_none()
        {
            fins.push(f.to_string());
        }
        if fins.is_empty() && !is_namespace(info) {
            self.remove_object(info, old)
        } else if meta(&old).get("deletionTimestamp").is_some() {
            self.switch_finalizers(info, old, &fins, req)
        } else {
            self.mark_for_deletion(info, old, &fins)
        }
    }

    /// Removes `old` from the store.
    fn remove_object(&mut self, info: &ResourceInfo, old: Arc<Value>) -> Deleted {
        self.write(info, EventType::Deleted, (*old).clone(), Some(old.clone()));
        Deleted::Gone(old)
    }

    /// `old`, already being deleted and waiting for `fins`, deleted again: a policy given
    /// again switches the garbage collector's finalizer, as the real server's graceful
    /// deletion does.
    fn switch_finalizers(
        &mut self,
        info: &ResourceInfo,
        old: Arc<Value>,
        fins: &[String],
        req: &DeleteRequest,
    ) -> Deleted {
        let mut switched = fins.to_vec();
        match req.propagation.as_deref() {
            Some("Foreground") => switched.retain(|f| f != ORPHAN),
            Some("Orphan") => switched.retain(|f| f != FOREGROUND),
            Some(_) => switched.retain(|f| f != ORPHAN && f != FOREGROUND),
            None => {}
        }
        if let Some(f) = propagation_finalizer(req)
            && !switched.iter().any(|x| x == f)
        {
            switched.push(f.to_string());
        }
        if switched == fins {
            Deleted::Pending(old)
        } else if switched.is_empty() && !is_namespace(info) {
            self.remove_object(info, old)
        } else {
            let mut marked = (*old).clone();
            set_finalizers(&mut marked, &switched);
            Deleted::Pending(self.write(info, EventType::Modified, marked, Some(old)))
        }
    }

    /// Marks `old` for deletion, waiting for `fins`: its deletionTimestamp set, its
    /// generation counted, a namespace `Terminating`.
    fn mark_for_deletion(
        &mut self,
        info: &ResourceInfo,
        old: Arc<Value>,
        fins: &[String],
    ) -> Deleted {
        let mut marked = (*old).clone();
        set_finalizers(&mut marked, fins);
        let m = meta_mut(&mut marked);
        m.insert("deletionTimestamp".into(), json!(now()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        if let Some(g) = m.get("generation").and_then(Value::as_i64) {
            m.insert("generation".into(), json!(g + 1));
        }
        if is_namespace(info) {
            marked["status"] = json!({"phase": "Terminating"});
        }
        Deleted::Pending(self.write(info, EventType::Modified, marked, Some(old)))
    }

    /// Stops serving the resource of a CRD that `result` removed, and drops its objects.
    fn forget_crd(&mut self, info: &ResourceInfo, result: &Deleted) {
        if info.group == "apiextensions.k8s.io"
            && let Deleted::Gone(crd) = result
            && let Ok(defined) = resources::from_crd(crd)
        {
            self.resources
                .retain(|r| !(r.group == defined.group && r.plural == defined.plural));
            self.tables.remove(&(defined.group, defined.plural));
        }
    }
}
