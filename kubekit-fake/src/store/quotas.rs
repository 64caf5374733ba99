//! ResourceQuota in the store: its admission plugin on a write (see `quotas`), and the
//! status of a namespace's quotas brought up to date after each write in it, as
//! kube-controller-manager's quota controller does.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{EventType, Store, meta_str};
use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult};

impl Store {
    /// The ResourceQuotas of namespace `ns`.
    fn quotas_in(&self, ns: &str) -> Vec<Value> {
        let Some(quotas) = self.lookup("", "v1", "resourcequotas") else {
            return Vec::new();
        };
        self.table_ref(&quotas)
            .map(|t| {
                t.objects
                    .iter()
                    .filter(|((namespace, _), _)| namespace == ns)
                    .map(|(_, q)| (**q).clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every object of namespace `ns`, with its resource.
    pub(super) fn objects_in(&self, ns: &str) -> Vec<(ResourceInfo, Arc<Value>)> {
        self.all_objects()
            .into_iter()
            .filter(|(info, o)| info.namespaced && meta_str(o, "namespace") == Some(ns))
            .collect()
    }

    /// The ResourceQuota admission plugin on `obj`, `name` of `info` being created in
    /// `ns` (`old` is `None`) or replacing `old` (see `quotas`): the real server's `403`
    /// when a quota of the namespace refuses it.
    pub(super) fn quotas_admit(
        &self,
        info: &ResourceInfo,
        ns: &str,
        name: &str,
        obj: &Value,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        if !info.namespaced || !self.holds_any("", "resourcequotas") {
            return Ok(());
        }
        let quotas = self.quotas_in(ns);
        match crate::quotas::refusal(info, obj, old, &quotas) {
            None => Ok(()),
            Some(why) => {
                let message = format!("{} \"{name}\" is forbidden: {why}", info.qualified());
                Err(ApiError::new(403, "Forbidden", message)
                    .with_details(json!({"kind": info.plural, "name": name})))
            }
        }
    }

    /// Brings the status of namespace `ns`'s ResourceQuotas up to date with its objects,
    /// as kube-controller-manager's quota controller does.
    pub(super) fn refresh_quotas(&mut self, ns: &str) {
        let Some(info) = self.lookup("", "v1", "resourcequotas") else {
            return;
        };
        let quotas = self.quotas_in(ns);
        if quotas.is_empty() {
            return;
        }
        let objects = self.objects_in(ns);
        // The status writes change no usage: they need no refresh of their own.
        self.refreshing_quotas = true;
        for quota in quotas {
            let status = crate::quotas::status(&quota, &objects);
            if quota["status"] != status {
                let old = Arc::new(quota.clone());
                let mut updated = quota;
                updated["status"] = status;
                self.write(&info, EventType::Modified, updated, Some(old));
            }
        }
        self.refreshing_quotas = false;
    }
}
