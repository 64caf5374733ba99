//! The generated configurations read back what they write, and name what does not decode.

use kubekit_applyconfigurations::api::apps::v1::{Deployment, DeploymentSpec};
use kubekit_applyconfigurations::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use serde_json::json;

#[test]
fn a_generated_configuration_reads_back_what_it_wrote() {
    let deployment = Deployment::new("web", "demo")
        .labels([("app", "web".to_string())])
        .spec(
            DeploymentSpec::default().replicas(3).template(
                PodTemplateSpec::default()
                    .spec(PodSpec::default().containers([Container::default().name("web")])),
            ),
        );
    let json = serde_json::to_value(&deployment).unwrap();
    let read: Deployment = serde_json::from_value(json).unwrap();
    assert_eq!(read, deployment);
}

#[test]
fn null_and_unknown_fields_read_as_unset() {
    let spec: DeploymentSpec =
        serde_json::from_value(json!({ "replicas": null, "paused": true, "futureField": 1 }))
            .unwrap();
    assert_eq!(spec, DeploymentSpec::default().paused(true));
}

#[test]
fn a_field_of_the_wrong_type_is_an_error_naming_its_path() {
    let err = serde_json::from_value::<Deployment>(json!({
        "spec": { "template": { "spec": { "containers": [{ "name": 7 }] } } }
    }))
    .unwrap_err();
    let message = err.to_string();
    assert!(
        ["spec", "template", "containers", "name"]
            .iter()
            .all(|f| message.contains(f)),
        "{message}"
    );
}
