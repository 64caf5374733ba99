//! The custom resource of the benchmark's custom-resource mode (`--resource widgets`):
//! `widgets.bench.kubekit.dev/v1`, namespaced, with a spec and a status as an operator's
//! resources have them (an image, replicas, a command, env, ports and settings; a phase,
//! counts and conditions). Both Rust peers cache this type, as their users would write
//! it; client-go's peer caches the same objects through its dynamic informer.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{NamespaceResourceScope, Resource};
use serde::{Deserialize, Serialize};

/// The API group.
pub const GROUP: &str = "bench.kubekit.dev";
/// The version.
pub const VERSION: &str = "v1";
/// The resource (plural) name.
pub const PLURAL: &str = "widgets";

/// A Widget: what the informers of `--resource widgets` cache.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Widget {
    /// The object's metadata.
    pub metadata: ObjectMeta,
    /// What is asked for.
    #[serde(default)]
    pub spec: WidgetSpec,
    /// What is observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<WidgetStatus>,
}

/// A Widget's spec.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// The image to run.
    #[serde(default)]
    pub image: String,
    /// How many replicas.
    #[serde(default)]
    pub replicas: i32,
    /// The command line.
    #[serde(default)]
    pub command: Vec<String>,
    /// Environment variables.
    #[serde(default)]
    pub env: Vec<WidgetEnv>,
    /// Ports served.
    #[serde(default)]
    pub ports: Vec<WidgetPort>,
    /// Settings, by name.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Whether reconciling is paused.
    #[serde(default)]
    pub paused: bool,
}

/// An environment variable.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WidgetEnv {
    /// Its name.
    pub name: String,
    /// Its value.
    #[serde(default)]
    pub value: String,
}

/// A port.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WidgetPort {
    /// Its name.
    pub name: String,
    /// Its number.
    pub port: i32,
    /// TCP or UDP.
    #[serde(default)]
    pub protocol: String,
}

/// A Widget's status.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// Pending, Running, …
    #[serde(default)]
    pub phase: String,
    /// The generation last acted on.
    #[serde(default)]
    pub observed_generation: i64,
    /// Replicas ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// The conditions, by type.
    #[serde(default)]
    pub conditions: Vec<WidgetCondition>,
}

/// A condition, as `metav1.Condition` has it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WidgetCondition {
    /// Ready, Progressing, …
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// A CamelCase reason.
    #[serde(default)]
    pub reason: String,
    /// A message for people.
    #[serde(default)]
    pub message: String,
    /// When the status last changed (RFC 3339).
    #[serde(default)]
    pub last_transition_time: String,
}

impl Resource for Widget {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Widget".into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        GROUP.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        VERSION.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        PLURAL.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
