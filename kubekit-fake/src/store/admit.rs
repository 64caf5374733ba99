//! The admission plugins built into the store, run on a create: NamespaceLifecycle (also
//! asked before admission webhooks are called), the workloads' (a Pod's priority from its
//! PriorityClass, among others; see `workloads`) and LimitRanger. ResourceQuota's is in
//! `quotas`.

use serde_json::{Value, json};

use super::{Store, meta};
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

impl Store {
    /// Whether objects may be created in namespace `ns` (kube-apiserver's
    /// `NamespaceLifecycle`): it exists and is not being deleted.
    pub(crate) fn namespace_admits(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> ApiResult<()> {
        if !info.namespaced {
            return Ok(());
        }
        let namespaces = self
            .lookup("", "v1", "namespaces")
            .expect("namespaces are built in");
        let namespace = self.get(&namespaces, "", ns)?;
        if meta(&namespace).get("deletionTimestamp").is_some() {
            // With the cause clients look for (kube-controller-manager's root-CA publisher
            // does not retry on it).
            let mut details = crate::status::details(info, name);
            details["causes"] = json!([{"reason": "NamespaceTerminating",
                "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]);
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    info.qualified()
                ),
            )
            .with_details(details));
        }
        Ok(())
    }

    /// The admission plugins built in on `obj`, `name` of `info` being created in `ns`:
    /// the workloads', LimitRanger's (for a Pod or PersistentVolumeClaim) and
    /// ResourceQuota's.
    pub(super) fn admit_create(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: &mut Value,
    ) -> ApiResult<()> {
        if info.builtin {
            self.admit_workload(info, name, obj)?;
            crate::kinds::prepare_for_create(info, obj);
        }
        if info.builtin
            && info.group.is_empty()
            && matches!(info.kind.as_str(), "Pod" | "PersistentVolumeClaim")
        {
            self.limit_ranges_admit(info, ns, name, obj)?;
        }
        self.quotas_admit(info, ns, name, obj, None)
    }

    /// The workloads' admission on a built-in `obj`, `name` being created (see
    /// `workloads::admit`; a Pod's with the stored PriorityClasses): the real server's
    /// `403` for what it refuses.
    fn admit_workload(&self, info: &ResourceInfo, name: &str, obj: &mut Value) -> ApiResult<()> {
        let is_pod = info.group.is_empty() && info.kind == "Pod";
        let classes = if is_pod {
            self.priority_classes()
        } else {
            Vec::new()
        };
        crate::workloads::admit(&info.group, &info.kind, obj, &classes).map_err(|why| {
            let message = format!("{} \"{name}\" is forbidden: {why}", info.qualified());
            ApiError::new(403, "Forbidden", message)
                .with_details(json!({"kind": info.plural, "name": name}))
        })
    }

    /// The LimitRanger admission plugin on `obj`, a Pod or PersistentVolumeClaim `name`
    /// being created in `ns` (see `limit_ranges`): its defaults set, or the real server's
    /// `403` for what breaches the namespace's LimitRanges.
    fn limit_ranges_admit(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: &mut Value,
    ) -> ApiResult<()> {
        let Some(limit_ranges) = self.lookup("", "v1", "limitranges") else {
            return Ok(());
        };
        let ranges: Vec<Value> = self
            .table_ref(&limit_ranges)
            .map(|t| {
                t.objects
                    .iter()
                    .filter(|((namespace, _), _)| namespace == ns)
                    .map(|(_, lr)| (**lr).clone())
                    .collect()
            })
            .unwrap_or_default();
        if ranges.is_empty() {
            return Ok(());
        }
        let breaches = crate::limit_ranges::admit(&info.kind, obj, &ranges);
        if breaches.is_empty() {
            return Ok(());
        }
        let message = format!(
            "{} \"{name}\" is forbidden: {}",
            info.qualified(),
            crate::limit_ranges::refusal(&breaches)
        );
        Err(ApiError::new(403, "Forbidden", message)
            .with_details(json!({"kind": info.plural, "name": name})))
    }

    /// The stored PriorityClasses.
    fn priority_classes(&self) -> Vec<Value> {
        self.lookup("scheduling.k8s.io", "v1", "priorityclasses")
            .and_then(|info| {
                self.table_ref(&info)
                    .map(|t| t.objects.values().map(|c| (**c).clone()).collect())
            })
            .unwrap_or_default()
    }
}
