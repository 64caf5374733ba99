//! The `App` custom resource (group `appcontroller.k8s.io`, version `v1`): an application
//! made of a Deployment and a Service that the App controller creates, keeps in line with
//! the App's spec and reports on in the App's status.
//!
//! The CRD manifest shipped in `artifacts/crd/appcontroller.k8s.io_apps.yaml` is generated
//! from these types ([`crd_yaml`], or `cargo run -p app-controller --bin crdgen`); a test
//! fails when the two disagree.

pub mod controller;
pub mod webhook;

use k8s_openapi::api::apps::v1::DeploymentStatus;
use k8s_openapi::api::core::v1::ServiceStatus;
use kube::CustomResource;
use kube::core::CustomResourceExt;
use kubekit::applyconfigurations::ApplyConfiguration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The body of the App programs' `main`: logs to stdout (filtered by `RUST_LOG`, `info`
/// by default; colours on a terminal), runs `run`, and turns its error into a logged line
/// naming `program` and a failing exit code.
pub async fn run_program(
    program: &str,
    run: impl Future<Output = anyhow::Result<()>>,
) -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match run.await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{program}: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The desired state of an App: the Deployment and the Service it consists of.
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
    group = "appcontroller.k8s.io",
    version = "v1",
    kind = "App",
    doc = "An application made of a Deployment and a Service, kept in line with its spec by the App controller.",
    plural = "apps",
    singular = "app",
    namespaced,
    // `*.k8s.io` groups are reserved for APIs approved by the Kubernetes project; the server
    // rejects a CRD in one unless it declares its approval status, and "unapproved, ..." is
    // the declaration an unofficial API makes.
    annotation("api-approved.kubernetes.io", "unapproved, experimental-only"),
    status = "AppStatus",
    printcolumn = r#"{"name":"Deployment","type":"string","jsonPath":".spec.deploymentTemplate.name"}"#,
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.deploymentTemplate.image"}"#,
    printcolumn = r#"{"name":"Desired","type":"integer","jsonPath":".spec.deploymentTemplate.replicas"}"#,
    printcolumn = r#"{"name":"Available","type":"integer","jsonPath":".status.deploymentStatus.availableReplicas"}"#,
    printcolumn = r#"{"name":"Service","type":"string","jsonPath":".spec.serviceTemplate.name"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AppSpec {
    /// The Deployment to run; none is made when its name is empty.
    #[serde(default)]
    pub deployment_template: DeploymentTemplate,
    /// The Service in front of the Deployment's pods; none is made when its name is empty.
    #[serde(default)]
    pub service_template: ServiceTemplate,
}

/// What the App's Deployment looks like.
#[derive(
    ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentTemplate {
    /// Name of the Deployment, in the App's namespace.
    #[serde(default)]
    pub name: String,
    /// Container image the Deployment's pods run.
    #[serde(default)]
    pub image: String,
    /// Desired number of pods.
    #[serde(default)]
    pub replicas: i32,
}

/// What the App's Service looks like.
#[derive(
    ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ServiceTemplate {
    /// Name of the Service, in the App's namespace.
    #[serde(default)]
    pub name: String,
}

/// The observed state of an App: the status of its Deployment and Service, copied by
/// the controller through the status subresource.
#[derive(
    ApplyConfiguration, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// Status of the App's Deployment, once it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_status: Option<DeploymentStatus>,
    /// Status of the App's Service, once it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_status: Option<ServiceStatus>,
}

/// The App CRD manifest as YAML, exactly as shipped in
/// `artifacts/crd/appcontroller.k8s.io_apps.yaml`.
pub fn crd_yaml() -> String {
    serde_yaml::to_string(&App::crd()).expect("a CRD always serializes to YAML")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_crd_manifest_matches_the_rust_types() {
        let shipped: serde_json::Value = serde_yaml::from_str(include_str!(
            "../artifacts/crd/appcontroller.k8s.io_apps.yaml"
        ))
        .expect("shipped CRD parses");
        let generated = serde_json::to_value(App::crd()).expect("CRD to JSON");
        assert_eq!(
            shipped, generated,
            "artifacts/crd/appcontroller.k8s.io_apps.yaml is out of date: \
             regenerate it with `cargo run -p app-controller --bin crdgen > app-controller/artifacts/crd/appcontroller.k8s.io_apps.yaml`"
        );
    }

    #[test]
    fn seed_example_manifests_decode_into_apps_in_namespace_tcs() {
        for (yaml, name, deploy, image, replicas, svc) in [
            (
                include_str!("../artifacts/example/test_app.yaml"),
                "test-app",
                "app-deploy",
                "nginx",
                2,
                "app-service",
            ),
            (
                include_str!("../artifacts/example/test_app_2.yaml"),
                "test-app-2",
                "app-deploy-test",
                "tomcat",
                3,
                "app-service-test",
            ),
        ] {
            let app: App = serde_yaml::from_str(yaml).expect("example App parses");
            assert_eq!(app.metadata.name.as_deref(), Some(name));
            assert_eq!(app.metadata.namespace.as_deref(), Some("tcs"));
            assert_eq!(
                app.spec.deployment_template,
                DeploymentTemplate {
                    name: deploy.into(),
                    image: image.into(),
                    replicas
                }
            );
            assert_eq!(app.spec.service_template.name, svc);
        }
    }
}
