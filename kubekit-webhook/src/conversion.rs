//! Conversion between the versions of a custom resource, hub and spokes (controller-runtime's
//! `conversion.Hub` / `Convertible`): one version is the hub, every other version (a spoke)
//! converts to and from it with `From`, and kubekit converts any version to any other
//! through the hub.
//!
//! An object of a version not registered, or one that does not decode as its version's
//! type, fails the whole review with a message (kube-apiserver then fails the request
//! that needed the conversion); a panic in a `From` does the same, and the server goes on.

use std::collections::HashMap;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

/// The conversions of one custom resource, with `H` as its hub.
///
/// ```
/// use kube::CustomResource;
/// use kubekit::webhook::{Conversion, WebhookServer};
/// use serde::{Deserialize, Serialize};
///
/// mod v1 {
///     use super::*;
///     /// A widget whose size has a unit.
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
///     #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, schema = "disabled")]
///     pub struct WidgetSpec { pub size: String }
/// }
/// mod v2 {
///     use super::*;
///     /// A widget whose size is in MiB: the hub.
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
///     #[kube(group = "example.com", version = "v2", kind = "Widget", namespaced, schema = "disabled")]
///     pub struct WidgetSpec { pub size_mib: u32 }
/// }
///
/// impl From<v1::Widget> for v2::Widget {
///     fn from(w: v1::Widget) -> Self {
///         let size_mib = w.spec.size.trim_end_matches("Mi").parse().unwrap_or(0);
///         v2::Widget { metadata: w.metadata, spec: v2::WidgetSpec { size_mib } }
///     }
/// }
/// impl From<v2::Widget> for v1::Widget {
///     fn from(w: v2::Widget) -> Self {
///         let size = format!("{}Mi", w.spec.size_mib);
///         v1::Widget { metadata: w.metadata, spec: v1::WidgetSpec { size } }
///     }
/// }
///
/// fn main() {
///     let conversion = Conversion::<v2::Widget>::hub().spoke::<v1::Widget>();
///     # let ca = kubekit::webhook::CertificateAuthority::generate("demo").unwrap();
///     # let certificates = kubekit::webhook::Certificates::issued_by(&ca, &["127.0.0.1"]).unwrap();
///     let server = WebhookServer::new(certificates).conversion("/convert", conversion);
/// }
/// ```
pub struct Conversion<H> {
    versions: HashMap<String, Version<H>>,
}

/// How one version goes to and comes from the hub.
struct Version<H> {
    to_hub: fn(&RawValue) -> Result<H, String>,
    from_hub: fn(H) -> Result<Value, String>,
}

impl<H> std::fmt::Debug for Conversion<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversion")
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The `apiVersion` of a resource type.
fn api_version<K: Resource<DynamicType = ()>>() -> String {
    K::api_version(&()).into_owned()
}

/// Decodes `raw` as `S` and brings it to the hub.
fn to_hub<S, H>(raw: &RawValue) -> Result<H, String>
where
    S: DeserializeOwned + Into<H>,
{
    serde_json::from_str::<S>(raw.get())
        .map(Into::into)
        .map_err(|e| {
            format!(
                "the object does not decode as {}: {e}",
                std::any::type_name::<S>()
            )
        })
}

/// Brings a hub object to `S` and encodes it.
fn from_hub<S, H>(hub: H) -> Result<Value, String>
where
    S: Serialize + From<H>,
{
    serde_json::to_value(S::from(hub))
        .map_err(|e| format!("encoding {}: {e}", std::any::type_name::<S>()))
}

impl<H> Conversion<H>
where
    H: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// The conversions of a resource whose hub version is `H` (so far, that version alone).
    pub fn hub() -> Self {
        let mut versions = HashMap::new();
        versions.insert(
            api_version::<H>(),
            Version {
                to_hub: to_hub::<H, H>,
                from_hub: from_hub::<H, H>,
            },
        );
        Self { versions }
    }

    /// Adds the spoke version `S`, converted to and from the hub by `From`.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Resource<DynamicType = ()> + Serialize + DeserializeOwned + From<H> + Into<H> + 'static,
    {
        self.versions.insert(
            api_version::<S>(),
            Version {
                to_hub: to_hub::<S, H>,
                from_hub: from_hub::<S, H>,
            },
        );
        self
    }
}

/// A [`Conversion`], its hub type hidden: what the server calls.
pub(crate) trait Convert: Send + Sync + 'static {
    /// `objects` in `desired` (an `apiVersion`), or why they cannot be.
    fn convert(&self, objects: &[Box<RawValue>], desired: &str) -> Result<Vec<Value>, String>;
}

/// The `apiVersion` an object says it is in.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiVersionOf {
    #[serde(default)]
    api_version: String,
}

impl<H> Convert for Conversion<H>
where
    H: Send + Sync + 'static,
{
    fn convert(&self, objects: &[Box<RawValue>], desired: &str) -> Result<Vec<Value>, String> {
        let target = self
            .versions
            .get(desired)
            .ok_or_else(|| format!("no conversion to {desired}"))?;
        objects
            .iter()
            .map(|raw| {
                let from = serde_json::from_str::<ApiVersionOf>(raw.get())
                    .map_err(|e| format!("an object is not a JSON object: {e}"))?
                    .api_version;
                let source = self
                    .versions
                    .get(&from)
                    .ok_or_else(|| format!("no conversion from {from:?}"))?;
                (target.from_hub)((source.to_hub)(raw)?)
            })
            .collect()
    }
}
