//! Admission and conversion webhooks (controller-runtime's `pkg/webhook`): an HTTPS server
//! that kube-apiserver calls with `admission.k8s.io/v1` `AdmissionReview`s and
//! `apiextensions.k8s.io/v1` `ConversionReview`s, and the typed handlers it runs —
//! [`Validator<K>`], [`Defaulter<K>`] and hub-and-spoke [`Conversion`]s.
//!
//! # Contract
//!
//! - **Paths.** A validator of `K` is served at [`validate_path::<K>()`](validate_path) and a
//!   defaulter at [`mutate_path::<K>()`](mutate_path), the paths controller-runtime's builder
//!   gives them (`/validate-<group with dashes>-<version>-<kind>`); a conversion at the path
//!   it is registered with. Only `POST` with `Content-Type: application/json` is served.
//! - **Reviews.** A body that is not an `admission.k8s.io/v1` `AdmissionReview` (on an
//!   admission path) or an `apiextensions.k8s.io/v1` `ConversionReview` (on a conversion
//!   path) is answered `400 Bad Request` with a message naming what was expected and what
//!   came. An object that does not decode as `K` is a denial with code 400.
//! - **Limits.** A body over [`WebhookServer::max_request_bytes`] (7 MiB unless set; an
//!   `AdmissionReview` carries up to two objects of at most 3 MiB each) is answered
//!   `413 Payload Too Large` before it is read further. A handler that runs past
//!   [`WebhookServer::timeout`] (9 s unless set, under kube-apiserver's default
//!   `timeoutSeconds` of 10) is denied (code 504) with a message that says so; the limit
//!   acts where an admission handler awaits (one that blocks its thread is not
//!   interrupted). Conversions run on tokio's blocking pool: one past the limit fails the
//!   review at once, and finishes in the background.
//! - **Panics and timeouts.** A panic in a handler is caught and a handler past the time
//!   limit given up on; either is answered as the handler's `failurePolicy` says
//!   ([`FailurePolicy`]): under `Fail` (the default) a denial (code 500 or 504) with the
//!   panic's message or the limit, under `Ignore` an admission carrying it as a warning.
//!   The server goes on serving.
//! - **Metrics** (controller-runtime's names, labelled by `webhook`, the path):
//!   `controller_runtime_webhook_requests_total` (also by HTTP `code`),
//!   `controller_runtime_webhook_latency_seconds`, `controller_runtime_webhook_requests_in_flight`.
//!   Requests for paths nobody registered are not counted, so a client cannot make labels.
//! - **Certificates**: see [`Certificates`]: files reloaded when they change, or issued by a
//!   [`CertificateAuthority`] kubekit generates and writes into `caBundle`s.
//! - **Registrations and manifests.** [`Webhooks`] holds the handlers with their
//!   configuration (`failurePolicy`, `timeoutSeconds`, namespace selector);
//!   [`Webhooks::manifests`] generates the `ValidatingWebhookConfiguration`, the
//!   `MutatingWebhookConfiguration` and each CRD's conversion stanza from them, to ship
//!   ([`WebhookManifests::to_yaml`]) or to install when the server starts
//!   ([`WebhookServer::install_manifests`]).
//! - **Readiness.** [`WebhookServer::readiness`] reports ready once the server listens with
//!   its certificate loaded (its manifests installed and its `caBundle` written, when so
//!   configured), and not after it stops.
//! - **In a manager** (`kubekit::manager::ManagerBuilder::webhook_server`,
//!   `kubekit::manager::Manager::webhook`) the server runs with the
//!   controllers, its readiness is the `webhook` check of `/readyz` and its metrics are in
//!   the manager's registry:
//!
//! ```no_run
//! use app_controller::App;
//! use app_controller::webhook::{AppDefaulter, AppValidator};
//! use kubekit::controller::shutdown_signal;
//! use kubekit::manager::Manager;
//! use kubekit::webhook::{Certificates, FailurePolicy, WebhookEndpoint};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = kubekit::rest::RestConfig::infer().await?;
//! let mut mgr = Manager::builder(config)
//!     .webhook_server("0.0.0.0:9443".parse()?, Certificates::generated("my-ca", &["127.0.0.1"]))
//!     .install_webhook_manifests("my-operator", WebhookEndpoint::Url("https://127.0.0.1:0".into()))
//!     .build()?;
//! mgr
//!     .webhook::<App>()
//!     .failure_policy(FailurePolicy::Fail)
//!     .validator(AppValidator)
//!     .defaulter(AppDefaulter);
//! mgr.start(shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! A server on its own:
//!
//! ```no_run
//! use app_controller::App;
//! use kubekit::webhook::{AdmissionRequest, Certificates, Validator, Verdict, WebhookServer};
//! use tokio_util::sync::CancellationToken;
//!
//! struct AppValidator;
//! impl Validator<App> for AppValidator {
//!     async fn validate_create(&self, app: &App, _: &AdmissionRequest) -> Verdict {
//!         if app.spec.deployment_template.replicas < 0 {
//!             return Verdict::deny("spec.deploymentTemplate.replicas must not be negative");
//!         }
//!         Verdict::allow()
//!     }
//! }
//!
//! # async fn run() -> Result<(), kubekit::webhook::Error> {
//! let certificates = Certificates::from_files(
//!     "/tmp/k8s-webhook-server/serving-certs/tls.crt",
//!     "/tmp/k8s-webhook-server/serving-certs/tls.key",
//! );
//! let served = WebhookServer::new(certificates)
//!     .validator::<App, _>(AppValidator)
//!     .serve("0.0.0.0:9443".parse().unwrap(), CancellationToken::new())
//!     .await?;
//! served.stopped().await;
//! # Ok(())
//! # }
//! ```

mod admission;
mod certs;
mod conversion;
mod review;
mod server;
mod webhooks;

pub use admission::{Defaulter, Validator, Verdict};
pub use certs::{CaBundleTarget, CertificateAuthority, Certificates};
pub use conversion::Conversion;
pub use kubekit_client::serve::Served;
pub use review::{AdmissionRequest, GroupVersionKind, GroupVersionResource, Operation, UserInfo};
pub use server::{Readiness, WebhookMetrics, WebhookServer};
pub use webhooks::{
    FailurePolicy, WebhookBuilder, WebhookEndpoint, WebhookManifests, Webhooks, convert_path,
};

use kube::Resource;

/// The errors of starting a webhook server or writing a `caBundle`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address could not be bound.
    #[error("binding the webhook server: {0}")]
    Bind(#[source] std::io::Error),
    /// A certificate or key could not be read, parsed or generated.
    #[error("webhook certificate: {0}")]
    Certificate(String),
    /// The API server refused to store a `caBundle` or a manifest.
    #[error("writing to the API server: {0}")]
    Api(#[from] kubekit_client::rest::Error),
    /// Manifests to install, or a generated authority's `caBundle` to write, and no
    /// client ([`WebhookServer::client`]) to write them with.
    #[error("{0} needs a client (WebhookServer::client)")]
    NoClient(&'static str),
}

/// `<prefix>-<group with dashes>-<version>-<kind in lower case>`, as controller-runtime.
fn path_for<K: Resource<DynamicType = ()>>(prefix: &str) -> String {
    format!(
        "/{prefix}-{}-{}-{}",
        K::group(&()).replace('.', "-"),
        K::version(&()),
        K::kind(&()).to_lowercase()
    )
}

/// The path a validator of `K` is served at: `/validate-appcontroller-k8s-io-v1-app` for
/// the App.
pub fn validate_path<K: Resource<DynamicType = ()>>() -> String {
    path_for::<K>("validate")
}

/// The path a defaulter of `K` is served at: `/mutate-appcontroller-k8s-io-v1-app` for the
/// App.
pub fn mutate_path<K: Resource<DynamicType = ()>>() -> String {
    path_for::<K>("mutate")
}
