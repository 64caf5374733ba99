//! The App's admission webhooks: [`AppValidator`] refuses Apps the controller could not
//! build (negative replicas, a named Deployment without an image, names the server would
//! refuse for the Deployment or the Service, one name for both) and [`AppDefaulter`] pins an untagged image to `:latest`, which is what the
//! kubelet would pull anyway, so the App says what runs. `app-webhook` serves both
//! (`cargo run -p app-controller --bin app-webhook -- --help`).

use kube::core::Resource;
use kubekit::validation::{dns1035_label, dns1123_subdomain};
use kubekit::webhook::{AdmissionRequest, Defaulter, Validator, Verdict};

use crate::App;

/// Validates Apps on create and update (deletes are always allowed).
#[derive(Clone, Copy, Debug, Default)]
pub struct AppValidator;

impl Validator<App> for AppValidator {
    async fn validate_create(&self, app: &App, _: &AdmissionRequest) -> Verdict {
        let mut problems = Vec::new();
        let deployment = &app.spec.deployment_template;
        if deployment.replicas < 0 {
            problems.push("spec.deploymentTemplate.replicas must not be negative".to_string());
        }
        if !deployment.name.is_empty() {
            for p in dns1123_subdomain(&deployment.name) {
                problems.push(format!("spec.deploymentTemplate.name: {p}"));
            }
        }
        if !deployment.name.is_empty() && deployment.image.is_empty() {
            problems.push("spec.deploymentTemplate.image is required with a name".to_string());
        }
        let service = &app.spec.service_template.name;
        if !service.is_empty() {
            for p in dns1035_label(service) {
                problems.push(format!("spec.serviceTemplate.name: {p}"));
            }
            if *service == deployment.name {
                problems.push(format!(
                    "spec.serviceTemplate.name: {service:?} is the Deployment's name too; \
                     the App's children need names of their own"
                ));
            }
        }
        if !problems.is_empty() {
            let name = app.meta().name.as_deref().unwrap_or_default();
            return Verdict::deny(format!("App {name:?} is invalid: {}", problems.join("; ")))
                .with_reason("Invalid")
                .with_code(422);
        }
        Verdict::allow()
    }
}

/// Sets the App's defaults: an image without a tag or digest gets `:latest`.
#[derive(Clone, Copy, Debug, Default)]
pub struct AppDefaulter;

impl Defaulter<App> for AppDefaulter {
    async fn set_defaults(&self, app: &mut App, _: &AdmissionRequest) -> Verdict {
        let image = &mut app.spec.deployment_template.image;
        let last = image.rsplit('/').next().unwrap_or_default();
        if !image.is_empty() && !last.contains(':') && !image.contains('@') {
            image.push_str(":latest");
        }
        Verdict::allow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AppSpec, DeploymentTemplate, ServiceTemplate};

    fn request() -> AdmissionRequest {
        serde_json::from_value(serde_json::json!({ "uid": "u", "operation": "CREATE" })).unwrap()
    }

    fn app(deployment: &str, image: &str, replicas: i32, service: &str) -> App {
        App::new(
            "a",
            AppSpec {
                deployment_template: DeploymentTemplate {
                    name: deployment.into(),
                    image: image.into(),
                    replicas,
                },
                service_template: ServiceTemplate {
                    name: service.into(),
                },
            },
        )
    }

    #[tokio::test]
    async fn apps_with_negative_replicas_or_names_the_server_refuses_are_denied_with_every_problem()
    {
        let verdict = AppValidator
            .validate_create(&app("Bad_Name", "", -1, "9svc"), &request())
            .await;
        assert!(!verdict.is_allowed());
        let message = verdict.message();
        assert!(
            message.contains("replicas must not be negative"),
            "{message}"
        );
        assert!(
            message.contains("spec.deploymentTemplate.name"),
            "{message}"
        );
        assert!(message.contains("spec.serviceTemplate.name"), "{message}");
        assert!(
            message.contains("image is required with a name"),
            "{message}"
        );
        for valid in [
            app("web", "nginx:1", 2, "web-svc"),
            app("", "", 0, "web"),
            app("web", "nginx:latest", 0, ""),
        ] {
            let verdict = AppValidator.validate_create(&valid, &request()).await;
            assert_eq!(verdict, Verdict::allow());
        }
    }

    #[tokio::test]
    async fn an_app_whose_deployment_and_service_share_a_name_is_denied() {
        let verdict = AppValidator
            .validate_create(&app("web", "nginx:1", 1, "web"), &request())
            .await;
        assert!(!verdict.is_allowed());
        assert!(
            verdict.message().contains("names of their own"),
            "{}",
            verdict.message()
        );
    }

    #[tokio::test]
    async fn untagged_images_get_latest_and_tagged_or_pinned_ones_stay() {
        for (image, defaulted) in [
            ("nginx", "nginx:latest"),
            (
                "registry:5000/team/nginx",
                "registry:5000/team/nginx:latest",
            ),
            ("nginx:1.27", "nginx:1.27"),
            ("nginx@sha256:abc", "nginx@sha256:abc"),
            ("", ""),
        ] {
            let mut app = app("web", image, 1, "");
            assert!(
                AppDefaulter
                    .set_defaults(&mut app, &request())
                    .await
                    .is_allowed()
            );
            assert_eq!(app.spec.deployment_template.image, defaulted, "{image}");
        }
    }
}
