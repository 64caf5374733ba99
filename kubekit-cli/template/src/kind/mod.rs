//! The `__KIND__` custom resource (`__GROUP__/__VERSION__`) and its controller.

pub mod controller;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use kube::core::CustomResourceExt;
use kubekit::applyconfigurations::ApplyConfiguration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a __KIND__ asks for: a ConfigMap `__SNAKE__-<its name>` holding its message.
#[derive(
    CustomResource,
    ApplyConfiguration,
    Serialize,
    Deserialize,
    Clone,
    Debug,
    Default,
    PartialEq,
    JsonSchema,
)]
#[kube(
    group = "__GROUP__",
    version = "__VERSION__",
    kind = "__KIND__",
    plural = "__PLURAL__",
    namespaced,
    status = "__KIND__Status",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct __KIND__Spec {
    /// What the ConfigMap's `message` key holds.
    #[serde(default)]
    pub message: String,
}

/// What the controller observed of a __KIND__.
#[derive(
    ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct __KIND__Status {
    /// `Ready`: whether the ConfigMap holds the spec's message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The CustomResourceDefinition of __KIND__, as YAML (`deploy/crd.yaml`).
pub fn crd_yaml() -> String {
    serde_yaml::to_string(&__KIND__::crd()).expect("a CRD serializes to YAML")
}
