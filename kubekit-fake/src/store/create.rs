//! A create's phases, in the order the real server checks: the name (given, or generated
//! from `generateName`), its namespace admitting it and the name free, a CRD's checks, the
//! name's rules, the metadata the server sets, defaults, the admission plugins built in,
//! what the object gets from what is stored (a Service's addresses, a ResourceQuota's
//! usage), validation, the storage's refusal of a `resourceVersion`; and its commit.

use std::sync::Arc;

use serde_json::{Value, json};

use super::garbage::owner_uids;
use super::strategy::{Prepared, track_fields, validate};
use super::validate::check_name;
use super::{EventType, Store, key_of, meta, meta_mut, meta_str, new_uid, now};
use crate::crd_schema;
use crate::defaults;
use crate::events;
use crate::managed::Write;
use crate::resources::{self, ResourceInfo};
use crate::status::{ApiError, ApiResult};

/// The longest prefix of a generated name: 63 bytes with the random suffix.
const MAX_GENERATED_PREFIX: usize = 58;

fn random_suffix() -> String {
    // The alphabet of apimachinery's `utilrand.String` (no vowels, no confusable digits).
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// Whether `info` is the core (`v1`) built-in `kind`.
fn is_core(info: &ResourceInfo, kind: &str) -> bool {
    info.builtin && info.group.is_empty() && info.kind == kind
}

/// The name `obj` is created with: its own, or one generated from its `generateName`.
fn name_to_create(info: &ResourceInfo, obj: &Value) -> ApiResult<String> {
    let generate = meta_str(obj, "generateName").map(str::to_string);
    match (meta_str(obj, "name"), generate) {
        (Some(n), _) if !n.is_empty() => Ok(n.to_string()),
        (_, Some(prefix)) if !prefix.is_empty() => {
            // apimachinery's generator cuts the prefix so that the name has 63 bytes.
            let mut cut = prefix.len().min(MAX_GENERATED_PREFIX);
            while !prefix.is_char_boundary(cut) {
                cut -= 1;
            }
            Ok(format!("{}{}", &prefix[..cut], random_suffix()))
        }
        _ => Err(ApiError::invalid(
            info,
            "",
            "metadata.name",
            "FieldValueRequired",
            "Required value: name or generateName is required",
        )),
    }
}

/// The metadata the server sets on a create: `obj`'s type, name and namespace, a new uid,
/// its creationTimestamp and first generation; what a client may not set dropped (the
/// status of a resource with a status subresource, deletion fields, selfLink).
fn set_server_metadata(info: &ResourceInfo, ns: &str, name: &str, obj: &mut Value) {
    if info.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    obj["apiVersion"] = json!(info.api_version(&info.versions[0]));
    obj["kind"] = json!(info.kind);
    let m = meta_mut(obj);
    m.insert("name".into(), json!(name));
    if info.namespaced {
        m.insert("namespace".into(), json!(ns));
    } else {
        m.remove("namespace");
    }
    m.insert("uid".into(), json!(new_uid()));
    m.insert("creationTimestamp".into(), json!(now()));
    for server_set in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        m.remove(server_set);
    }
    // A kind without a generation of its own keeps the client's, as on the real server.
    if info.generation {
        m.insert("generation".into(), json!(1));
    }
}

/// Refuses an object to be created that carries a `resourceVersion`: the storage's
/// refusal, after validation and admission, a bare `500`.
fn refuse_resource_version(obj: &Value) -> ApiResult<()> {
    if meta_str(obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
        return Err(ApiError::new(
            500,
            "",
            "resourceVersion should not be set on objects to be created",
        ));
    }
    Ok(())
}

impl Store {
    /// Creates `obj` in `ns` (`""` for cluster-scoped): the server-set metadata, and for a
    /// `CustomResourceDefinition`, its resource served from now on. `write` records the
    /// fields in managedFields; `None` keeps `obj`'s (server-side apply made them).
    pub(crate) fn create(
        &mut self,
        info: &ResourceInfo,
        ns: &str,
        obj: Value,
        write: Option<&Write>,
    ) -> ApiResult<Arc<Value>> {
        let prepared = self.prepare_create(info, ns, obj, write)?;
        self.commit_create(prepared)
    }

    /// What creating `obj` in `ns` would store, checked and defaulted (the strategy's
    /// prepare and validate, and the admission plugins built in), without storing it: see
    /// [`commit_create`](Self::commit_create).
    pub(crate) fn prepare_create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        write: Option<&Write>,
    ) -> ApiResult<Prepared> {
        let name = name_to_create(info, &obj)?;
        self.namespace_admits(info, ns, &name)?;
        self.check_free(info, ns, &name)?;
        let crd = self.check_new_crd(info, &name, &mut obj)?;
        check_name(info, &obj, &name)?;
        set_server_metadata(info, ns, &name, &mut obj);
        defaults::apply(info, &mut obj, None);
        crd_schema::default_and_validate(info, &name, (&mut obj, None), false)?;
        track_fields(write, None, &mut obj);
        self.admit_create(info, ns, &name, &mut obj)?;
        self.fill_from_store(info, ns, &mut obj);
        validate(info, &name, &obj, None)?;
        refuse_resource_version(&obj)?;
        if let Some(crd) = &crd {
            // Served at once: its names accepted and established, as the real server's
            // controllers report a moment after the create.
            obj["status"] = resources::established_crd_status(&obj, crd, &now());
        }
        Ok(Prepared {
            info: info.clone(),
            object: obj,
            previous: None,
            crd,
        })
    }

    /// A CRD being created, defaulted and checked: the resource it is to serve, which may
    /// not be a built-in one (`None` for any other object).
    fn check_new_crd(
        &self,
        info: &ResourceInfo,
        name: &str,
        obj: &mut Value,
    ) -> ApiResult<Option<ResourceInfo>> {
        if info.group != "apiextensions.k8s.io" {
            return Ok(None);
        }
        resources::default_crd(obj);
        let faults = resources::crd_spec_faults(obj);
        if !faults.is_empty() {
            return Err(ApiError::invalid_fields(info, name, &faults));
        }
        let invalid = |e: String| ApiError::invalid(info, name, "spec", "FieldValueInvalid", &e);
        let crd = resources::from_crd(obj).map_err(invalid)?;
        if self
            .resources
            .iter()
            .any(|r| r.builtin && r.group == crd.group && r.plural == crd.plural)
        {
            return Err(invalid(format!(
                "spec.names.plural: Invalid value: \"{}\": {}.{} is a built-in resource",
                crd.plural, crd.plural, crd.group
            )));
        }
        Ok(Some(crd))
    }

    /// What an object being created in `ns` gets from what is stored: a ResourceQuota the
    /// usage of its namespace, a Service a cluster IP and node ports no other holds.
    fn fill_from_store(&self, info: &ResourceInfo, ns: &str, obj: &mut Value) {
        if is_core(info, "ResourceQuota") {
            obj["status"] = crate::quotas::status(obj, &self.objects_in(ns));
        }
        if is_core(info, "Service") {
            let (ips, ports) = self.allocated_to_services(info);
            defaults::allocate(obj, &ips, &ports);
        }
    }

    /// The cluster IPs and node ports the stored Services hold.
    fn allocated_to_services(&self, services: &ResourceInfo) -> (Vec<String>, Vec<i64>) {
        let all: Vec<&Arc<Value>> = self
            .table_ref(services)
            .map(|t| t.objects.values().collect())
            .unwrap_or_default();
        let ips = all
            .iter()
            .filter_map(|s| s["spec"]["clusterIP"].as_str().map(str::to_string))
            .collect();
        let ports = all
            .iter()
            .flat_map(|s| s["spec"]["ports"].as_array().into_iter().flatten())
            .filter_map(|p| p["nodePort"].as_i64())
            .collect();
        (ips, ports)
    }

    /// `409 AlreadyExists` when `name` is taken (saying so when the object holding it is
    /// being deleted, as the real server does).
    fn check_free(&self, info: &ResourceInfo, ns: &str, name: &str) -> ApiResult<()> {
        match self.get(info, ns, name) {
            Ok(held) => {
                let mut e = ApiError::already_exists(info, name);
                if meta(&held).get("deletionTimestamp").is_some() {
                    e.message = format!("object is being deleted: {}", e.message);
                }
                Err(e)
            }
            Err(_) => Ok(()),
        }
    }

    /// Stores what [`prepare_create`](Self::prepare_create) made, unless the store changed
    /// meanwhile so that it may no longer be (its name taken, its namespace gone or being
    /// deleted, a Service's cluster IP or node port taken).
    pub(crate) fn commit_create(&mut self, prepared: Prepared) -> ApiResult<Arc<Value>> {
        let Prepared {
            info, object, crd, ..
        } = prepared;
        self.check_still_creatable(&info, &object)?;
        if let Some(crd) = crd {
            self.serve(crd);
        }
        Ok(self.store_created(&info, object))
    }

    /// The checks of [`prepare_create`](Self::prepare_create) that what was stored since
    /// may fail: the namespace, the name, a Service's addresses.
    fn check_still_creatable(&self, info: &ResourceInfo, object: &Value) -> ApiResult<()> {
        let (ns, name) = key_of(object);
        self.namespace_admits(info, &ns, &name)?;
        self.check_free(info, &ns, &name)?;
        if is_core(info, "Service") {
            let (ips, ports) = self.allocated_to_services(info);
            defaults::check_allocations(info, &name, object, &ips, &ports)?;
        }
        Ok(())
    }

    /// Serves the resource a CRD defines, in place of any served as its group and plural.
    fn serve(&mut self, crd: ResourceInfo) {
        self.resources
            .retain(|r| !(r.group == crd.group && r.plural == crd.plural));
        self.resources.push(crd);
    }

    /// Writes a new object, and collects it when its owners are gone.
    fn store_created(&mut self, info: &ResourceInfo, object: Value) -> Arc<Value> {
        let owned = !owner_uids(&object).is_empty();
        let obj = events::stored(info, object);
        let created = self.write(info, EventType::Added, obj, None);
        if owned {
            // An object created with owners that no longer exist is collected, as the
            // real garbage collector does a moment later.
            self.collect_garbage();
        }
        created
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::store::Store;

    #[test]
    fn crds_that_would_break_the_server_are_refused_as_invalid() {
        let mut s = Store::new();
        let crds = s
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .unwrap();
        let crd = |group: &str, plural: &str, versions: Value| {
            json!({
                "metadata": {"name": format!("{plural}.{group}")},
                "spec": {"group": group, "scope": "Namespaced", "versions": versions,
                         "names": {"plural": plural, "kind": "Thing"}},
            })
        };
        let unnamed = json!([{"served": true}, {"name": "v1", "served": true, "storage": true}]);
        let schema = json!({"openAPIV3Schema": {"type": "object"}});
        let one = json!([{"name": "v1", "served": true, "storage": true, "schema": schema}]);
        for (obj, why) in [
            (
                crd("example.com", "things", unnamed),
                "spec.versions[0].name",
            ),
            (crd("", "namespaces", one.clone()), "spec.group"),
            (crd("apps", "deployments", one.clone()), "spec.group"),
            (
                crd("coordination.k8s.io", "leases", one),
                "built-in resource",
            ),
        ] {
            let refused = s.create(&crds, "", obj, None).unwrap_err();
            assert_eq!(refused.code, 422);
            assert!(refused.message.contains(why), "{}", refused.message);
        }
        let ns = s.lookup("", "v1", "namespaces").unwrap();
        s.create(&ns, "", json!({"metadata": {"name": "still-served"}}), None)
            .unwrap();
    }
}
