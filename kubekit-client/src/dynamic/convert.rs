//! Conversion between [`Unstructured`] and typed objects (apimachinery's
//! `DefaultUnstructuredConverter`).
//!
//! # Contract
//!
//! - [`to_typed`] refuses an object whose `apiVersion` or `kind` is set and differs from
//!   `K`'s, with [`ConversionError::KindMismatch`] naming both; an object that has neither
//!   (e.g. built by hand) is taken to be a `K`.
//! - An object that is of the right kind but whose fields do not fit `K` (a string where
//!   `K` has a number, …) is [`ConversionError::Invalid`], naming the object and `K`.
//! - [`from_typed`] always sets `apiVersion` and `kind` to `K`'s.
//! - Neither ever panics, whatever the object holds.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Pod;
//! use kubekit::dynamic::{ConversionError, Unstructured, from_typed, to_typed};
//!
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("web".into());
//! let obj: Unstructured = from_typed(&pod).unwrap();
//! assert_eq!((obj.api_version.as_str(), obj.kind.as_str()), ("v1", "Pod"));
//! assert_eq!(to_typed::<Pod>(&obj).unwrap(), pod);
//!
//! let err = to_typed::<Deployment>(&obj).unwrap_err();
//! assert!(matches!(err, ConversionError::KindMismatch { .. }));
//! assert_eq!(
//!     err.to_string(),
//!     "cannot convert Pod \"web\" (v1, Kind=Pod) into apps/v1, Kind=Deployment: \
//!      apiVersion/kind differ"
//! );
//! ```

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::unstructured::{Unstructured, describe_object};
use crate::meta::GroupVersionKind;

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The object is of another kind than the target type.
    #[error("cannot convert {object} ({found}) into {expected}: apiVersion/kind differ")]
    KindMismatch {
        /// The object, e.g. `Service "demo/web"`.
        object: String,
        /// Its apiVersion and kind.
        found: Box<GroupVersionKind>,
        /// Those of the target type.
        expected: Box<GroupVersionKind>,
    },
    /// The object's fields do not fit the target type.
    #[error("cannot convert {object} into {expected}: {source}")]
    Invalid {
        /// The object, e.g. `Pod "demo/web"`.
        object: String,
        /// The target type's apiVersion and kind.
        expected: GroupVersionKind,
        /// What did not fit, with its path.
        #[source]
        source: serde_json::Error,
    },
}

/// Checks that `obj` may be a `K`: its apiVersion and kind, where set, are `K`'s.
fn check_kind<K: Resource<DynamicType = ()>>(obj: &Unstructured) -> Result<(), ConversionError> {
    let expected = GroupVersionKind::of::<K>();
    let api_version_differs =
        !obj.api_version.is_empty() && obj.api_version != expected.api_version();
    let kind_differs = !obj.kind.is_empty() && obj.kind != expected.kind;
    if api_version_differs || kind_differs {
        return Err(ConversionError::KindMismatch {
            object: obj.describe(),
            found: Box::new(obj.gvk()),
            expected: Box::new(expected),
        });
    }
    Ok(())
}

fn invalid<K: Resource<DynamicType = ()>>(
    object: String,
    source: serde_json::Error,
) -> ConversionError {
    ConversionError::Invalid {
        object,
        expected: GroupVersionKind::of::<K>(),
        source,
    }
}

/// `obj` as a `K`; see the [module docs](self). The object is copied; use
/// [`into_typed`] to convert without copying.
pub fn to_typed<K>(obj: &Unstructured) -> Result<K, ConversionError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    check_kind::<K>(obj)?;
    let value = serde_json::to_value(obj).map_err(|e| invalid::<K>(obj.describe(), e))?;
    serde_json::from_value(value).map_err(|e| invalid::<K>(obj.describe(), e))
}

/// `obj` as a `K`, moving its fields instead of copying them.
pub fn into_typed<K>(obj: Unstructured) -> Result<K, ConversionError>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    check_kind::<K>(&obj)?;
    let object = obj.describe();
    let Unstructured {
        api_version,
        kind,
        metadata,
        mut fields,
    } = obj;
    let metadata = serde_json::to_value(metadata).map_err(|e| invalid::<K>(object.clone(), e))?;
    fields.insert("metadata".into(), metadata);
    if !api_version.is_empty() {
        fields.insert("apiVersion".into(), Value::String(api_version));
    }
    if !kind.is_empty() {
        fields.insert("kind".into(), Value::String(kind));
    }
    serde_json::from_value(Value::Object(fields)).map_err(|e| invalid::<K>(object, e))
}

/// The typed object `obj` as an [`Unstructured`], with `K`'s apiVersion and kind.
pub fn from_typed<K>(obj: &K) -> Result<Unstructured, ConversionError>
where
    K: Resource<DynamicType = ()> + Serialize,
{
    let describe = || describe_object(&K::kind(&()), obj.meta());
    let value = serde_json::to_value(obj).map_err(|e| invalid::<K>(describe(), e))?;
    let mut u: Unstructured =
        serde_json::from_value(value).map_err(|e| invalid::<K>(describe(), e))?;
    u.api_version = K::api_version(&()).into_owned();
    u.kind = K::kind(&()).into_owned();
    Ok(u)
}

impl Unstructured {
    /// This object as a `K`; see [`to_typed`].
    pub fn to_typed<K>(&self) -> Result<K, ConversionError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        to_typed(self)
    }

    /// This object as a `K`, without copying; see [`into_typed`].
    pub fn into_typed<K>(self) -> Result<K, ConversionError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        into_typed(self)
    }

    /// The typed object `obj` as an `Unstructured`; see [`from_typed`].
    pub fn from_typed<K>(obj: &K) -> Result<Self, ConversionError>
    where
        K: Resource<DynamicType = ()> + Serialize,
    {
        from_typed(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use app_controller::App;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    fn deployment() -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }))
        .expect("deployment")
    }

    #[test]
    fn typed_to_unstructured_and_back_is_lossless() {
        let d = deployment();
        let u = from_typed(&d).expect("from typed");
        assert_eq!(u.gvk(), GroupVersionKind::new("apps", "v1", "Deployment"));
        assert_eq!(u.nested(&["spec", "replicas"]), Some(&json!(2)));
        assert_eq!(u.describe(), "Deployment \"demo/web\"");
        assert_eq!(to_typed::<Deployment>(&u).expect("to typed"), d);
        assert_eq!(u.into_typed::<Deployment>().expect("into typed"), d);
    }

    #[test]
    fn custom_resources_convert_like_built_ins() {
        let mut app = App::new("a", app_controller::AppSpec::default());
        app.spec.deployment_template.replicas = 3;
        let u = Unstructured::from_typed(&app).expect("from typed");
        assert_eq!(
            u.gvk(),
            GroupVersionKind::new("appcontroller.k8s.io", "v1", "App")
        );
        let back = u.to_typed::<App>().expect("to typed");
        assert_eq!((back.metadata, back.spec), (app.metadata, app.spec));
    }

    #[test]
    fn kind_mismatch_names_both_kinds() {
        let u = from_typed(&deployment()).expect("from typed");
        let err = to_typed::<Pod>(&u).expect_err("a Deployment is not a Pod");
        match &err {
            ConversionError::KindMismatch {
                found, expected, ..
            } => {
                assert_eq!(**found, GroupVersionKind::new("apps", "v1", "Deployment"));
                assert_eq!(**expected, GroupVersionKind::new("", "v1", "Pod"));
            }
            other => panic!("expected a kind mismatch, got {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            "cannot convert Deployment \"demo/web\" (apps/v1, Kind=Deployment) into v1, Kind=Pod: \
             apiVersion/kind differ"
        );
        let err = u
            .clone()
            .into_typed::<App>()
            .expect_err("a Deployment is not an App");
        assert!(
            err.to_string()
                .contains("appcontroller.k8s.io/v1, Kind=App"),
            "{err}"
        );

        // Same kind name, other group: still a mismatch.
        let mut other_group = u;
        other_group.api_version = "example.com/v1".into();
        let err = to_typed::<Deployment>(&other_group).expect_err("other group");
        assert!(
            err.to_string().contains("example.com/v1, Kind=Deployment"),
            "{err}"
        );
    }

    #[test]
    fn object_without_type_information_is_taken_as_the_target_kind() {
        let u: Unstructured =
            serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"k": "v"}}))
                .expect("unstructured");
        let cm: ConfigMap = to_typed(&u).expect("to typed");
        assert_eq!(cm.data.expect("data")["k"], "v");
    }

    #[test]
    fn fields_that_do_not_fit_the_type_are_an_error_naming_object_and_type() {
        let u: Unstructured = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n"},
            "data": {"k": 5},
        }))
        .expect("unstructured");
        let err = to_typed::<ConfigMap>(&u).expect_err("data values are strings");
        assert!(matches!(err, ConversionError::Invalid { .. }));
        let msg = err.to_string();
        assert!(
            msg.starts_with("cannot convert ConfigMap \"n/c\" into v1, Kind=ConfigMap: "),
            "{msg}"
        );
        let err = into_typed::<ConfigMap>(u).expect_err("data values are strings");
        assert!(matches!(err, ConversionError::Invalid { .. }));
    }
}
