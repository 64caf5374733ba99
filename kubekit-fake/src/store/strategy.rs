//! What a create and an update share, as the phases of kube-apiserver's registry
//! strategies (prepare, validate, admit, store): the [`Prepared`] write that leaves the
//! first three for the fourth, the recording of managed fields that ends its preparation,
//! and the validation both end with. The phases of each are in `create` and `update`.

use std::sync::Arc;

use serde_json::Value;

use super::omit_empty_metadata;
use super::validate::check_crd_rules;
use crate::defaults;
use crate::managed::Write;
use crate::resources::ResourceInfo;
use crate::status::ApiResult;

/// A create or update checked, defaulted and ready to store (what validating admission
/// sees): made by [`Store::prepare_create`] or [`Store::prepare_update`], stored by
/// [`Store::commit_create`] or [`Store::commit_update`].
///
/// [`Store::prepare_create`]: super::Store::prepare_create
/// [`Store::prepare_update`]: super::Store::prepare_update
/// [`Store::commit_create`]: super::Store::commit_create
/// [`Store::commit_update`]: super::Store::commit_update
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub(super) info: ResourceInfo,
    /// The object as it would be stored.
    pub(crate) object: Value,
    /// The stored object an update replaces.
    pub(crate) previous: Option<Arc<Value>>,
    /// The resource a CRD's create serves.
    pub(super) crd: Option<ResourceInfo>,
}

/// Records the write in `obj`'s managedFields, against `old` (`None` for a create), for
/// `write`'s manager; `None` keeps `obj`'s (server-side apply made them).
pub(super) fn track_fields(write: Option<&Write>, old: Option<&Value>, obj: &mut Value) {
    if let Some(w) = write {
        omit_empty_metadata(obj);
        w.track_update(old, obj);
    }
}

/// The validation a create and an update end with, once defaulted and admitted (`old` is
/// `None` for a create): a workload's, a built-in kind's, an admission configuration's, an
/// admission policy's, and a CRD's CEL rules.
pub(super) fn validate(
    info: &ResourceInfo,
    name: &str,
    obj: &Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    defaults::check_workload(info, name, obj, old)?;
    if info.builtin {
        crate::kinds::check(info, name, obj, old)?;
    }
    crate::admission_config::check_configuration(info, name, obj)?;
    crate::policy_validation::check(info, name, obj)?;
    check_crd_rules(info, name, obj)
}
