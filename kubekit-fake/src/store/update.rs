//! An update's phases, in the order the real server checks: the object it replaces, the
//! name against the URL's, a custom resource's type meta, the resourceVersion as a
//! precondition; then for a status update the status taken and validated, for any other
//! the metadata the server keeps, the metadata's and a CRD's checks, defaults, admission,
//! validation, managed fields and the generation; and its commit, which may finish a
//! deletion.

use std::sync::Arc;

use serde_json::{Value, json};

use super::garbage::finalizers;
use super::strategy::{Prepared, track_fields, validate};
use super::validate::check_type_meta;
use super::{EventType, Store, key_of, meta, meta_mut, meta_str, omit_empty_metadata};
use crate::crd_schema;
use crate::defaults;
use crate::events;
use crate::managed::Write;
use crate::object_meta::Fault;
use crate::resources::{self, ResourceInfo};
use crate::status::{ApiError, ApiResult};

/// `obj` without metadata and status: what bumps `generation` when it changes.
fn spec_of(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        for k in ["metadata", "status", "apiVersion", "kind"] {
            m.remove(k);
        }
    }
    v
}

/// The stored object as the request's API shows it: an update is compared and changed in
/// that form (see `events`).
fn shown_old(info: &ResourceInfo, stored_old: &Arc<Value>) -> Arc<Value> {
    match events::is_event(info) {
        true => Arc::new(events::shown(info, stored_old)),
        false => stored_old.clone(),
    }
}

/// Refuses `new` when it has no name, or not `name`, the URL's.
fn check_url_name(name: &str, new: &Value) -> ApiResult<()> {
    match meta_str(new, "name").filter(|n| !n.is_empty()) {
        None => Err(ApiError::bad_request(format!(
            "the name of the object ({name} based on URL) was undeterminable: name must be provided"
        ))),
        Some(n) if n != name => Err(ApiError::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        ))),
        Some(_) => Ok(()),
    }
}

/// The update's precondition, `new`'s resourceVersion: one that does not parse is the
/// storage's `500`, one not `old`'s a conflict. An empty resourceVersion is none: an
/// unconditional update, which the real server allows for built-in resources only.
fn check_resource_version(
    info: &ResourceInfo,
    name: &str,
    new: &Value,
    old: &Value,
) -> ApiResult<()> {
    match meta_str(new, "resourceVersion").filter(|rv| !rv.is_empty()) {
        Some(rv) if rv.parse::<u64>().is_err() => {
            let quoted = kubekit::validation::quote(rv);
            let why = format!("strconv.ParseUint: parsing {quoted}: invalid syntax");
            Err(ApiError::new(500, "", why))
        }
        Some(rv) if meta_str(old, "resourceVersion") != Some(rv) => {
            Err(ApiError::stale(info, name))
        }
        None if !info.builtin => {
            let detail = "Invalid value: 0: must be specified for an update";
            let field = "metadata.resourceVersion";
            let mut e = ApiError::invalid(info, name, field, "FieldValueInvalid", detail);
            // Here the real server names a custom resource by its resource, not its kind.
            e.message = format!(
                "{} \"{name}\" is invalid: {field}: {detail}",
                info.qualified()
            );
            if let Some(details) = e.details.as_mut() {
                details["kind"] = json!(info.plural);
            }
            Err(e)
        }
        _ => Ok(()),
    }
}

/// `into`'s status made `from`'s (removed when `from` has none).
fn take_status(into: &mut Value, from: &Value) {
    if let Some(m) = into.as_object_mut() {
        match from.get("status") {
            Some(s) => m.insert("status".into(), s.clone()),
            None => m.remove("status"),
        };
    }
}

/// A status update's object: `old` with `new`'s status, defaulted and validated against a
/// custom resource's schema, with its managed fields (`write`'s, or `new`'s when `None`).
fn prepare_status(
    info: &ResourceInfo,
    name: &str,
    new: &Value,
    old: &Value,
    write: Option<&Write>,
) -> ApiResult<Value> {
    let mut r = old.clone();
    take_status(&mut r, new);
    if info.builtin && info.group == "apiextensions.k8s.io" {
        resources::record_storage_version(&mut r);
    }
    crd_schema::default_and_validate(info, name, (&mut r, Some(old)), true)?;
    match write {
        Some(w) => w.track_update(Some(old), &mut r),
        None => {
            let applied = new["metadata"]["managedFields"].clone();
            meta_mut(&mut r).insert("managedFields".into(), applied);
        }
    }
    Ok(r)
}

/// The metadata the server keeps of `old` whatever `new` says: names, uid, creation,
/// deletion and generation.
fn keep_server_metadata(new: &mut Value, old: &Value) {
    let m = meta_mut(new);
    for kept in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match meta(old).get(kept) {
            Some(v) => m.insert(kept.into(), v.clone()),
            None => m.remove(kept),
        };
    }
}

/// Refuses `new`'s metadata (with `update_faults`, what it changed of `old`'s), and a
/// CRD's spec and changes, once it is defaulted (and its storage version recorded).
fn check_metadata(
    info: &ResourceInfo,
    name: &str,
    new: &mut Value,
    old: &Value,
    update_faults: Vec<Fault>,
) -> ApiResult<()> {
    let mut faults = crate::object_meta::faults(new, info.builtin);
    faults.extend(update_faults);
    if info.builtin && info.group == "apiextensions.k8s.io" {
        resources::default_crd(new);
        faults.extend(resources::crd_spec_faults(new));
        faults.extend(resources::crd_update_faults(new, old));
        resources::record_storage_version(new);
    }
    if !faults.is_empty() {
        return Err(ApiError::invalid_fields(info, name, &faults));
    }
    Ok(())
}

/// `new`'s generation one more than `old`'s when its spec changed, for a kind that counts
/// them.
fn bump_generation(info: &ResourceInfo, old: &Value, new: &mut Value) {
    if (info.generation || crate::kinds::generation_from_first_change(info))
        && spec_of(old) != spec_of(new)
        && !crate::kinds::keeps_first_generation(info)
    {
        let g = meta(old)["generation"].as_i64().unwrap_or(0) + 1;
        meta_mut(new).insert("generation".into(), json!(g));
    }
}

/// What an update keeps of `old` whatever it sends: its type, and its resourceVersion
/// until the write gives a new one.
fn keep_type_and_version(result: &mut Value, old: &Value) {
    for k in ["apiVersion", "kind"] {
        result[k] = old[k].clone();
    }
    meta_mut(result).insert(
        "resourceVersion".into(),
        meta(old)["resourceVersion"].clone(),
    );
    omit_empty_metadata(result);
}

/// Whether `result`, an update's object, is to be removed: it is being deleted and waits
/// for no finalizer. A namespace also waits for the finalizers of its spec
/// (kube-controller-manager's namespace controller removes `kubernetes` through
/// `finalize`).
fn finishes_deletion(info: &ResourceInfo, result: &Value) -> bool {
    let spec_finalizing = info.builtin
        && info.plural == "namespaces"
        && result["spec"]["finalizers"]
            .as_array()
            .is_some_and(|f| !f.is_empty());
    meta(result).get("deletionTimestamp").is_some()
        && finalizers(result).is_empty()
        && !spec_finalizing
}

impl Store {
    /// Replaces `name` with `new` (the main resource), or only its status (`status_only`).
    /// A stale `metadata.resourceVersion` is a conflict; a missing one updates
    /// unconditionally. `write` records the change in managedFields; `None` keeps `new`'s
    /// (server-side apply made them).
    pub(crate) fn update(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        new: Value,
        status_only: bool,
        write: Option<&Write>,
    ) -> ApiResult<Arc<Value>> {
        let prepared = self.prepare_update(info, ns, name, new, status_only, write)?;
        Ok(self
            .commit_update(prepared)
            .expect("nothing changed between prepare and commit"))
    }

    /// What replacing `name` with `new` would store, checked and defaulted, without storing
    /// it: see [`commit_update`](Self::commit_update).
    pub(crate) fn prepare_update(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        new: Value,
        status_only: bool,
        write: Option<&Write>,
    ) -> ApiResult<Prepared> {
        let stored_old = self.get(info, ns, name)?;
        let old = shown_old(info, &stored_old);
        check_url_name(name, &new)?;
        if !info.builtin {
            check_type_meta(info, name, &new, &old)?;
        }
        check_resource_version(info, name, &new, &old)?;
        let mut result = if status_only {
            prepare_status(info, name, &new, &old, write)?
        } else {
            self.prepare_main(info, ns, name, new, &old, write)?
        };
        keep_type_and_version(&mut result, &old);
        Ok(Prepared {
            info: info.clone(),
            object: result,
            previous: Some(stored_old),
            crd: None,
        })
    }

    /// An update of the main resource's object: `new` with the metadata the server keeps
    /// (and, for a resource with a status subresource, `old`'s status), checked, defaulted,
    /// admitted and validated, its managed fields recorded and its generation counted.
    fn prepare_main(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        mut new: Value,
        old: &Value,
        write: Option<&Write>,
    ) -> ApiResult<Value> {
        if info.status {
            take_status(&mut new, old);
        }
        let update_faults = crate::object_meta::update_faults(&new, old);
        keep_server_metadata(&mut new, old);
        check_metadata(info, name, &mut new, old, update_faults)?;
        defaults::apply(info, &mut new, Some(old));
        if info.builtin {
            crate::workloads::admit_update(&info.group, &info.kind, &mut new);
        }
        crd_schema::default_and_validate(info, name, (&mut new, Some(old)), false)?;
        defaults::check_update(info, name, old, &new)?;
        self.quotas_admit(info, ns, name, &new, Some(old))?;
        validate(info, name, &new, Some(old))?;
        track_fields(write, Some(old), &mut new);
        bump_generation(info, old, &mut new);
        Ok(new)
    }

    /// Stores what [`prepare_update`](Self::prepare_update) made; `None` when the object
    /// changed (or went) meanwhile: then it is to be prepared again.
    pub(crate) fn commit_update(&mut self, prepared: Prepared) -> Option<Arc<Value>> {
        let Prepared {
            info,
            object,
            previous,
            ..
        } = prepared;
        let stored_old = previous.expect("an update has an old object");
        if !self.still_stored(&info, &stored_old) {
            return None;
        }
        let result = events::stored(&info, object);
        if result == *stored_old {
            return Some(stored_old);
        }
        Some(self.store_updated(&info, result, stored_old))
    }

    /// Whether `stored` is what is stored under its name.
    fn still_stored(&self, info: &ResourceInfo, stored: &Arc<Value>) -> bool {
        let (ns, name) = key_of(stored);
        self.get(info, &ns, &name)
            .is_ok_and(|now| Arc::ptr_eq(&now, stored))
    }

    /// Writes `result` in place of `stored_old`, or removes it when the update finishes its
    /// deletion; then collects garbage when it is being deleted.
    fn store_updated(
        &mut self,
        info: &ResourceInfo,
        result: Value,
        stored_old: Arc<Value>,
    ) -> Arc<Value> {
        if finishes_deletion(info, &result) {
            // The update deletes the object; like the real server, it answers with the
            // object at its last stored resourceVersion.
            self.write(info, EventType::Deleted, result.clone(), Some(stored_old));
            self.collect_garbage();
            return Arc::new(result);
        }
        let terminating = meta(&result).get("deletionTimestamp").is_some();
        let written = self.write(info, EventType::Modified, result, Some(stored_old));
        if terminating {
            // A finalizer gone may let garbage collection finish (a namespace's removal).
            self.collect_garbage();
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::store::testing::setup;

    #[test]
    fn an_update_that_changes_nothing_keeps_the_resource_version() {
        let (mut s, cm) = setup();
        let a = s
            .create(&cm, "ns", json!({"metadata": {"name": "a"}}), None)
            .unwrap();
        let same = s.update(&cm, "ns", "a", (*a).clone(), false, None).unwrap();
        assert_eq!(a, same);
    }
}
