//! kubekit's webhook server called by the real kube-apiserver (its own control plane: the
//! webhook configurations made here apply to the whole cluster). The server listens on
//! 127.0.0.1 with a certificate kube-apiserver verifies against the `caBundle` kubekit
//! writes; nothing here turns verification off.

#[path = "it/common.rs"]
mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use app_controller::App;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use kube::core::CustomResourceExt;
use kubekit::clientset::{CreateOptions, GetOptions, ResourceClient, UpdateOptions};
use kubekit::manager::{Manager, ManagerBuilder, ManagerError};
use kubekit::rest::RestClient;
use kubekit::rest::RestConfig;
use kubekit::webhook::{
    AdmissionRequest, CaBundleTarget, CertificateAuthority, Certificates, Conversion, Defaulter,
    FailurePolicy, Validator, Verdict, WebhookEndpoint, WebhookMetrics, WebhookServer, mutate_path,
    validate_path,
};
use kubekit_examples::upstream;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use serde_json::json;
use testenv::{eventually, eventually_ok};
use tokio_util::sync::CancellationToken;

use common::{admin_client, namespace};

/// Denies Apps with negative replicas; panics on an App named `panic-please` and takes
/// 5 s over one named `slow-please`.
struct AppValidator;

impl Validator<App> for AppValidator {
    async fn validate_create(&self, app: &App, _: &AdmissionRequest) -> Verdict {
        match app.metadata.name.as_deref() {
            Some("panic-please") => panic!("asked to panic"),
            Some("slow-please") => tokio::time::sleep(Duration::from_secs(5)).await,
            _ => {}
        }
        if app.spec.deployment_template.replicas < 0 {
            return Verdict::deny("spec.deploymentTemplate.replicas must not be negative")
                .with_reason("Invalid")
                .with_code(422);
        }
        Verdict::allow()
    }
}

/// One replica and the `nginx` image unless the App says otherwise.
struct AppDefaulter;

impl Defaulter<App> for AppDefaulter {
    async fn set_defaults(&self, app: &mut App, _: &AdmissionRequest) -> Verdict {
        let template = &mut app.spec.deployment_template;
        if template.replicas == 0 {
            template.replicas = 1;
        }
        if template.image.is_empty() {
            template.image = "nginx".into();
        }
        Verdict::allow()
    }
}

/// A webhook entry calling `url`, for `rules`, in namespace `ns` only.
fn webhook(
    name: &str,
    url: &str,
    rules: serde_json::Value,
    ns: &str,
    policy: &str,
) -> serde_json::Value {
    json!({
        "name": name,
        "clientConfig": { "url": url },
        "rules": rules,
        "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": ns } },
        "failurePolicy": policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10,
    })
}

/// The rules of webhooks on Apps.
fn app_rules() -> serde_json::Value {
    json!([{ "apiGroups": ["appcontroller.k8s.io"], "apiVersions": ["v1"],
             "operations": ["CREATE", "UPDATE"], "resources": ["apps"] }])
}

/// Creates the validating webhook configuration `name` with `webhooks`.
async fn create_validating(rest: &RestClient, name: &str, webhooks: Vec<serde_json::Value>) {
    let config: ValidatingWebhookConfiguration =
        serde_json::from_value(json!({ "metadata": { "name": name }, "webhooks": webhooks }))
            .unwrap();
    ResourceClient::<ValidatingWebhookConfiguration>::cluster(rest.clone())
        .create(&config, &CreateOptions::default())
        .await
        .expect("create the validating webhook configuration");
}

/// Creates the CRD (unless there) and waits until it is Established.
async fn install_crd(rest: &RestClient, crd: &CustomResourceDefinition) {
    let crds = ResourceClient::<CustomResourceDefinition>::cluster(rest.clone());
    if let Err(e) = crds.create(crd, &CreateOptions::default()).await {
        assert!(e.is_already_exists(), "create CRD: {e}");
    }
    let name = crd.metadata.name.clone().unwrap();
    eventually(60, "the CRD to be Established", || async {
        let crd = crds.get(&name, &GetOptions::default()).await.ok()?;
        crd.status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
            .then_some(())
    })
    .await;
}

/// An App named `name` with `replicas`.
fn app(name: &str, replicas: i32) -> App {
    let mut app = App::new(name, Default::default());
    app.spec.deployment_template.name = "web".into();
    app.spec.deployment_template.replicas = replicas;
    app
}

/// `kubectl apply` of `manifest` in `ns`: success, and stdout and stderr. Run without
/// blocking the runtime, which also runs the webhook server kube-apiserver is calling.
async fn kubectl_apply(ns: &str, manifest: &serde_json::Value) -> (bool, String) {
    use tokio::io::AsyncWriteExt as _;
    let mut child = tokio::process::Command::from(testenv::control_plane().kubectl())
        .args(["apply", "-n", ns, "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run kubectl");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(manifest.to_string().as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[tokio::test]
async fn kubectl_apply_of_an_invalid_app_is_denied_with_the_validators_message_and_defaults_show_after_create()
 {
    let rest = admin_client().await;
    let ns = namespace("webhook-admit").await;
    install_crd(&rest, &App::crd()).await;

    let ca = CertificateAuthority::generate("kubekit-test-ca").unwrap();
    let metrics = WebhookMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let cancel = CancellationToken::new();
    let server = WebhookServer::new(Certificates::issued_by(&ca, &["127.0.0.1"]).unwrap())
        .validator::<App, _>(AppValidator)
        .defaulter::<App, _>(AppDefaulter)
        .metrics(&metrics);
    let readiness = server.readiness();
    assert!(readiness.check().is_err(), "ready before serving");
    let served = server
        .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
        .await
        .unwrap();
    readiness.check().expect("ready once serving");
    let base = format!("https://127.0.0.1:{}", served.address().port());

    let name = format!("{ns}-apps");
    create_validating(
        &rest,
        &name,
        vec![webhook(
            "validate.apps.kubekit.test",
            &format!("{base}{}", validate_path::<App>()),
            app_rules(),
            &ns,
            "Fail",
        )],
    )
    .await;
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": { "name": name },
        "webhooks": [webhook("default.apps.kubekit.test", &format!("{base}{}", mutate_path::<App>()), app_rules(), &ns, "Fail")],
    }))
    .unwrap();
    ResourceClient::<MutatingWebhookConfiguration>::cluster(rest.clone())
        .create(&mutating, &CreateOptions::default())
        .await
        .unwrap();
    for target in [
        CaBundleTarget::ValidatingWebhookConfiguration(name.clone()),
        CaBundleTarget::MutatingWebhookConfiguration(name.clone()),
    ] {
        ca.write_ca_bundle(&rest, &target).await.unwrap();
    }

    // kube-apiserver picks the configurations up asynchronously: wait until it denies a
    // dry-run create, which stores nothing.
    let apps = ResourceClient::<App>::namespaced(rest.clone(), &ns);
    let dry_run = CreateOptions {
        dry_run: true,
        ..Default::default()
    };
    eventually_ok(
        30,
        "kube-apiserver to call the validating webhook",
        || async {
            match apps.create(&app("probe", -1), &dry_run).await {
                Ok(_) => Err("the dry-run create of an invalid App was admitted".to_string()),
                Err(e) if e.to_string().contains("must not be negative") => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await;

    let invalid = serde_json::to_value(app("invalid", -3)).unwrap();
    let (ok, output) = kubectl_apply(&ns, &invalid).await;
    assert!(!ok, "kubectl apply of an invalid App succeeded: {output}");
    assert!(
        output
            .contains("denied the request: spec.deploymentTemplate.replicas must not be negative"),
        "{output}"
    );

    let mut valid = serde_json::to_value(app("defaulted", 0)).unwrap();
    valid["spec"]["deploymentTemplate"]
        .as_object_mut()
        .unwrap()
        .retain(|k, _| k == "name");
    let (ok, output) = kubectl_apply(&ns, &valid).await;
    assert!(ok, "kubectl apply of a valid App failed: {output}");
    let stored = apps.get("defaulted", &GetOptions::default()).await.unwrap();
    assert_eq!(stored.spec.deployment_template.replicas, 1);
    assert_eq!(stored.spec.deployment_template.image, "nginx");
    assert_eq!(stored.spec.deployment_template.name, "web");

    let panicked = apps
        .create(&app("panic-please", 1), &CreateOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        panicked.contains("the webhook panicked: asked to panic"),
        "{panicked}"
    );
    // The server goes on after the panic.
    apps.create(&app("after-panic", 2), &CreateOptions::default())
        .await
        .unwrap();

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let validate = validate_path::<App>();
    assert!(
        text.contains(&format!(
            r#"controller_runtime_webhook_requests_total{{webhook="{validate}",code="200"}}"#
        )),
        "{text}"
    );
    assert!(
        text.contains("controller_runtime_webhook_latency_seconds_bucket"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            r#"controller_runtime_webhook_requests_in_flight{{webhook="{validate}"}} 0"#
        )),
        "{text}"
    );
    cancel.cancel();
    served.stopped().await;
    assert!(readiness.check().is_err(), "ready after stopping");
}

/// A TLS connection to `address` that verifies the server's certificate against `ca` for
/// 127.0.0.1 (verification on: a certificate of another authority is refused).
async fn tls_connect(
    address: SocketAddr,
    ca: &CertificateAuthority,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.ca_bundle().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await?;
    let name = rustls::pki_types::ServerName::IpAddress(address.ip().into());
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// Whether the server at `address` presents a certificate that `ca` verifies.
async fn served_by(address: SocketAddr, ca: &CertificateAuthority) -> bool {
    tls_connect(address, ca).await.is_ok()
}

/// POSTs `body` to `path` over HTTPS (HTTP/1.1, one request): the status and the body.
async fn post(
    address: SocketAddr,
    ca: &CertificateAuthority,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut tls = tls_connect(address, ca).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    // The server may answer (413) before it has read the whole body.
    let _ = tls.write_all(body).await;
    let mut response = Vec::new();
    let mut chunk = [0; 8192];
    while let Ok(n @ 1..) = tls.read(&mut chunk).await {
        response.extend_from_slice(&chunk[..n]);
    }
    let response = String::from_utf8_lossy(&response);
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {response:?}"));
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, body.to_owned())
}

/// An `AdmissionReview` creating `app`.
fn admission_review(app: &App) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": { "uid": "uid-1", "operation": "CREATE", "object": app },
    }))
    .unwrap()
}

/// A validating server for Apps with a 1 KiB body limit and a 300 ms timeout, its CA and
/// its metrics.
async fn limited_server(
    cancel: &CancellationToken,
) -> (SocketAddr, CertificateAuthority, Registry) {
    let ca = CertificateAuthority::generate("limits-ca").unwrap();
    let metrics = WebhookMetrics::default();
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let served = WebhookServer::new(Certificates::issued_by(&ca, &["127.0.0.1"]).unwrap())
        .validator::<App, _>(AppValidator)
        .max_request_bytes(1024)
        .timeout(Duration::from_millis(300))
        .metrics(&metrics)
        .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
        .await
        .unwrap();
    (served.address(), ca, registry)
}

#[tokio::test]
async fn a_review_of_another_kind_or_version_gets_400_naming_what_the_webhook_serves() {
    let cancel = CancellationToken::new();
    let (address, ca, _) = limited_server(&cancel).await;
    let path = validate_path::<App>();
    let conversion = br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#;
    let (status, body) = post(address, &ca, &path, "application/json", conversion).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains(r#"serves admission.k8s.io/v1 AdmissionReview, not "apiextensions.k8s.io/v1" "ConversionReview""#),
        "{body}"
    );
    let beta = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#;
    let (status, body) = post(address, &ca, &path, "application/json", beta).await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = post(address, &ca, &path, "application/json", b"not json").await;
    assert_eq!(status, 400);
    let (status, _) = post(
        address,
        &ca,
        &path,
        "text/plain",
        &admission_review(&app("a", 1)),
    )
    .await;
    assert_eq!(status, 415);
    cancel.cancel();
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413_and_the_server_goes_on() {
    let cancel = CancellationToken::new();
    let (address, ca, _) = limited_server(&cancel).await;
    let path = validate_path::<App>();
    let mut big = app("big", 1);
    big.spec.deployment_template.image = "x".repeat(4096);
    let (status, body) = post(
        address,
        &ca,
        &path,
        "application/json",
        &admission_review(&big),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    let (status, body) = post(
        address,
        &ca,
        &path,
        "application/json",
        &admission_review(&app("small", 1)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""allowed":true"#), "{body}");
    cancel.cancel();
}

#[tokio::test]
async fn a_handler_past_the_timeout_is_denied_with_504_and_an_unknown_path_is_404_and_not_counted()
{
    let cancel = CancellationToken::new();
    let (address, ca, registry) = limited_server(&cancel).await;
    let path = validate_path::<App>();
    let (status, body) = post(
        address,
        &ca,
        &path,
        "application/json",
        &admission_review(&app("slow-please", 1)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(r#""allowed":false"#) && body.contains(r#""code":504"#),
        "{body}"
    );
    assert!(body.contains("did not answer within 300ms"), "{body}");
    let (status, _) = post(address, &ca, "/nothing-here", "application/json", b"{}").await;
    assert_eq!(status, 404);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(!text.contains("nothing-here"), "{text}");
    assert!(
        text.contains(&format!(
            r#"controller_runtime_webhook_requests_total{{webhook="{path}",code="200"}} 1"#
        )),
        "{text}"
    );
    cancel.cancel();
}

/// Writes a certificate and key issued by `ca` for 127.0.0.1 into `dir`, key first (so a
/// reader may see the new key with the old certificate, which must not be loaded).
fn write_certificate(dir: &Path, ca: &CertificateAuthority) -> (PathBuf, PathBuf) {
    let (cert, key) = ca.issue(&["127.0.0.1"]).unwrap();
    let (cert_path, key_path) = (dir.join("tls.crt"), dir.join("tls.key"));
    std::fs::write(&key_path, key).unwrap();
    std::fs::write(&cert_path, cert).unwrap();
    (cert_path, key_path)
}

#[tokio::test]
async fn certificate_files_rotated_while_requests_flow_fail_no_request() {
    let rest = admin_client().await;
    let ns = namespace("webhook-rotate").await;
    install_crd(&rest, &App::crd()).await;
    let (old_ca, new_ca) = (
        CertificateAuthority::generate("old-ca").unwrap(),
        CertificateAuthority::generate("new-ca").unwrap(),
    );
    let dir = std::env::temp_dir().join(format!("kubekit-webhook-rotate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = write_certificate(&dir, &old_ca);

    let cancel = CancellationToken::new();
    let served = WebhookServer::new(
        Certificates::from_files(&cert, &key).reload_every(Duration::from_millis(100)),
    )
    .validator::<App, _>(AppValidator)
    .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
    .await
    .unwrap();
    let address = served.address();
    assert!(served_by(address, &old_ca).await);
    assert!(
        !served_by(address, &new_ca).await,
        "a certificate of another CA was accepted"
    );

    // Both authorities are trusted while the certificate changes, as when cert-manager
    // rotates the serving certificate under an unchanged bundle.
    let name = format!("{ns}-rotate");
    let mut hook = webhook(
        "rotate.apps.kubekit.test",
        &format!("https://{address}{}", validate_path::<App>()),
        app_rules(),
        &ns,
        "Fail",
    );
    hook["clientConfig"]["caBundle"] = json!(base64_of(&format!(
        "{}{}",
        old_ca.ca_bundle(),
        new_ca.ca_bundle()
    )));
    create_validating(&rest, &name, vec![hook]).await;
    let apps = ResourceClient::<App>::namespaced(rest.clone(), &ns);
    eventually(30, "kube-apiserver to call the webhook", || async {
        let e = apps
            .create(
                &app("probe", -1),
                &CreateOptions {
                    dry_run: true,
                    ..Default::default()
                },
            )
            .await
            .err()?;
        e.to_string().contains("must not be negative").then_some(())
    })
    .await;

    let (stop, created) = (CancellationToken::new(), Arc::new(AtomicUsize::new(0)));
    let writer = tokio::spawn({
        let (apps, stop, created) = (apps.clone(), stop.clone(), created.clone());
        async move {
            let mut failures = Vec::new();
            for i in 0.. {
                if stop.is_cancelled() {
                    break;
                }
                match apps
                    .create(&app(&format!("app-{i}"), 1), &CreateOptions::default())
                    .await
                {
                    Ok(_) => created.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        failures.push(e.to_string());
                        0
                    }
                };
            }
            failures
        }
    });
    for ca in [&new_ca, &old_ca, &new_ca] {
        tokio::time::sleep(Duration::from_millis(700)).await;
        write_certificate(&dir, ca);
        eventually(
            10,
            "the server to present the rotated certificate",
            || async { served_by(address, ca).await.then_some(()) },
        )
        .await;
    }
    // Now trust only the new authority: requests go on only because the server presents
    // the new certificate.
    new_ca
        .write_ca_bundle(&rest, &CaBundleTarget::ValidatingWebhookConfiguration(name))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.cancel();
    let failures = writer.await.unwrap();
    assert!(
        failures.is_empty(),
        "requests failed during rotation: {failures:?}"
    );
    assert!(
        created.load(Ordering::Relaxed) > 10,
        "too few requests to judge"
    );
    cancel.cancel();
    served.stopped().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// The base64 of `text`, as a `caBundle` in JSON.
fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn a_webhook_that_cannot_be_reached_denies_under_failure_policy_fail_and_admits_under_ignore()
{
    let rest = admin_client().await;
    let (fail_ns, ignore_ns) = (
        namespace("webhook-fail").await,
        namespace("webhook-ignore").await,
    );
    // A port nobody listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("https://{closed}/validate");
    let rules = json!([{ "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"] }]);
    let ca = CertificateAuthority::generate("unreachable-ca").unwrap();
    let name = format!("{fail_ns}-policy");
    create_validating(
        &rest,
        &name,
        vec![
            webhook(
                "ignore.kubekit.test",
                &url,
                rules.clone(),
                &ignore_ns,
                "Ignore",
            ),
            webhook("fail.kubekit.test", &url, rules, &fail_ns, "Fail"),
        ],
    )
    .await;
    ca.write_ca_bundle(&rest, &CaBundleTarget::ValidatingWebhookConfiguration(name))
        .await
        .unwrap();
    let config_map = |name: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm
    };
    let failing = ResourceClient::<ConfigMap>::namespaced(rest.clone(), &fail_ns);
    let mut n = 0;
    let refusal = eventually(30, "kube-apiserver to call the unreachable webhook", || {
        n += 1;
        let (failing, cm) = (failing.clone(), config_map(&format!("probe-{n}")));
        async move { failing.create(&cm, &CreateOptions::default()).await.err() }
    })
    .await;
    assert!(
        refusal.to_string().contains("failed calling webhook"),
        "{refusal}"
    );
    ResourceClient::<ConfigMap>::namespaced(rest.clone(), &ignore_ns)
        .create(&config_map("admitted"), &CreateOptions::default())
        .await
        .expect("failurePolicy Ignore admits when the webhook cannot be reached");
}

/// The `Widget` of `conversion.kubekit.test`, version v1 (stored): a size with its unit.
mod v1 {
    use super::*;

    /// A widget's spec in v1.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(
        group = "conversion.kubekit.test",
        version = "v1",
        kind = "Widget",
        namespaced,
        schema = "disabled"
    )]
    pub struct WidgetSpec {
        pub size: String,
    }
}

/// The `Widget`, version v2 (the hub): the size in MiB.
mod v2 {
    use super::*;

    /// A widget's spec in v2.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(
        group = "conversion.kubekit.test",
        version = "v2",
        kind = "Widget",
        namespaced,
        schema = "disabled"
    )]
    #[serde(rename_all = "camelCase")]
    pub struct WidgetSpec {
        pub size_mib: u32,
    }
}

impl From<v1::Widget> for v2::Widget {
    fn from(w: v1::Widget) -> Self {
        let size_mib = w.spec.size.trim_end_matches("Mi").parse().unwrap_or(0);
        v2::Widget {
            metadata: w.metadata,
            spec: v2::WidgetSpec { size_mib },
        }
    }
}

/// Panics on size 13, for the test of panicking conversions.
impl From<v2::Widget> for v1::Widget {
    fn from(w: v2::Widget) -> Self {
        if w.spec.size_mib == 13 {
            panic!("unlucky size");
        }
        v1::Widget {
            metadata: w.metadata,
            spec: v1::WidgetSpec {
                size: format!("{}Mi", w.spec.size_mib),
            },
        }
    }
}

#[tokio::test]
async fn an_object_stored_in_v1_reads_as_v2_and_writes_back_through_v2_without_loss() {
    let rest = admin_client().await;
    let ns = namespace("webhook-convert").await;
    let ca = CertificateAuthority::generate("conversion-ca").unwrap();
    let cancel = CancellationToken::new();
    let served = WebhookServer::new(Certificates::issued_by(&ca, &["127.0.0.1"]).unwrap())
        .conversion(
            "/convert",
            Conversion::<v2::Widget>::hub().spoke::<v1::Widget>(),
        )
        .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
        .await
        .unwrap();
    let schema = json!({ "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } });
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": "widgets.conversion.kubekit.test" },
        "spec": {
            "group": "conversion.kubekit.test",
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList" },
            "versions": [
                { "name": "v1", "served": true, "storage": true, "schema": schema },
                { "name": "v2", "served": true, "storage": false, "schema": schema },
            ],
            "conversion": { "strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": { "url": format!("https://{}/convert", served.address()) },
            }},
        },
    }))
    .unwrap();
    install_crd(&rest, &crd).await;
    ca.write_ca_bundle(
        &rest,
        &CaBundleTarget::CustomResourceDefinition("widgets.conversion.kubekit.test".into()),
    )
    .await
    .unwrap();

    let (old, new) = (
        ResourceClient::<v1::Widget>::namespaced(rest.clone(), &ns),
        ResourceClient::<v2::Widget>::namespaced(rest.clone(), &ns),
    );
    let mut widget = v1::Widget::new(
        "w",
        v1::WidgetSpec {
            size: "64Mi".into(),
        },
    );
    widget.metadata.labels = Some([("tier".to_string(), "gold".to_string())].into());
    widget.metadata.annotations = Some([("note".to_string(), "kept".to_string())].into());
    let created = old
        .create(&widget, &CreateOptions::default())
        .await
        .unwrap();

    let read = eventually_ok(30, "the v2 read through the conversion webhook", || async {
        new.get("w", &GetOptions::default()).await
    })
    .await;
    assert_eq!(read.spec.size_mib, 64);
    assert_eq!(read.metadata.labels, created.metadata.labels);
    assert_eq!(read.metadata.annotations, created.metadata.annotations);
    assert_eq!(read.metadata.uid, created.metadata.uid);

    let mut bigger = read.clone();
    bigger.spec.size_mib = 128;
    new.update(&bigger, &UpdateOptions::default())
        .await
        .unwrap();
    let back = old.get("w", &GetOptions::default()).await.unwrap();
    assert_eq!(back.spec.size, "128Mi");
    assert_eq!(back.metadata.labels, widget.metadata.labels);
    assert_eq!(back.metadata.annotations, widget.metadata.annotations);

    // Written back unchanged through v2, the stored v1 object is what it was.
    let unchanged = new.get("w", &GetOptions::default()).await.unwrap();
    new.update(&unchanged, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        old.get("w", &GetOptions::default()).await.unwrap().spec,
        back.spec
    );
    cancel.cancel();
    served.stopped().await;
}

/// A `ConversionReview` of one v2 Widget of `size_mib` into v1.
fn conversion_review(size_mib: u32) -> Vec<u8> {
    let widget = v2::Widget::new("w", v2::WidgetSpec { size_mib });
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": { "uid": "uid-2", "desiredAPIVersion": "conversion.kubekit.test/v1", "objects": [widget] },
    }))
    .unwrap()
}

#[tokio::test]
async fn a_panicking_conversion_fails_its_review_with_the_panic_message_and_the_server_goes_on() {
    let ca = CertificateAuthority::generate("conversion-panic-ca").unwrap();
    let cancel = CancellationToken::new();
    let served = WebhookServer::new(Certificates::issued_by(&ca, &["127.0.0.1"]).unwrap())
        .conversion(
            "/convert",
            Conversion::<v2::Widget>::hub().spoke::<v1::Widget>(),
        )
        .serve("127.0.0.1:0".parse().unwrap(), cancel.clone())
        .await
        .unwrap();
    let (status, body) = post(
        served.address(),
        &ca,
        "/convert",
        "application/json",
        &conversion_review(13),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"Failure""#), "{body}");
    assert!(
        body.contains("the conversion panicked: unlucky size"),
        "{body}"
    );
    let (status, body) = post(
        served.address(),
        &ca,
        "/convert",
        "application/json",
        &conversion_review(64),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains(r#""status":"Success""#) && body.contains(r#""size":"64Mi""#),
        "{body}"
    );
    cancel.cancel();
}

/// Selects the namespace `ns` alone (webhooks here apply to the whole shared cluster).
fn only_namespace(ns: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some([("kubernetes.io/metadata.name".to_string(), ns.to_string())].into()),
        ..Default::default()
    }
}

/// A manager with a webhook server on a free port of 127.0.0.1, its certificates
/// `certificates`, installing its manifests named `name`.
async fn webhook_manager(name: &str, certificates: Certificates) -> ManagerBuilder {
    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap();
    Manager::builder(config)
        .webhook_server("127.0.0.1:0".parse().unwrap(), certificates)
        .install_webhook_manifests(name, WebhookEndpoint::Url("https://127.0.0.1:0".into()))
}

/// Runs `mgr` on a task until the returned token fires.
fn run_manager(mgr: Manager) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { mgr.start(cancel).await.expect("the manager runs") }
    });
    (cancel, task)
}

/// A free port on 127.0.0.1 (bound, then let go).
fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `GET path` on `address` over plain HTTP: the status code.
async fn http_status(address: SocketAddr, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    response.get(9..12)?.parse().ok()
}

#[tokio::test]
async fn a_manager_serves_the_webhooks_registered_next_to_its_controllers_installs_their_manifests_and_is_ready_once_they_are_called()
 {
    let rest = admin_client().await;
    let ns = namespace("webhook-manager").await;
    install_crd(&rest, &App::crd()).await;
    let health = free_port();
    let name = format!("{ns}-manager");
    let mut mgr = webhook_manager(&name, Certificates::generated("manager-ca", &["127.0.0.1"]))
        .await
        .health_probe_bind_address(health)
        .build()
        .unwrap();
    mgr.webhook::<App>()
        .validator(AppValidator)
        .defaulter(AppDefaulter)
        .namespace_selector(only_namespace(&ns));
    let (cancel, task) = run_manager(mgr);
    eventually(30, "/readyz to pass", || async {
        (http_status(health, "/readyz").await? == 200).then_some(())
    })
    .await;

    // Ready means installed, with the caBundle: both configurations say so.
    let validating = ResourceClient::<ValidatingWebhookConfiguration>::cluster(rest.clone())
        .get(&name, &GetOptions::default())
        .await
        .unwrap();
    let hook = &validating.webhooks.as_ref().unwrap()[0];
    assert_eq!(hook.name, "validate.apps.appcontroller.k8s.io");
    assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    assert_eq!(hook.namespace_selector, Some(only_namespace(&ns)));
    assert!(hook.client_config.ca_bundle.is_some());
    let url = hook.client_config.url.as_deref().unwrap();
    assert!(
        url.starts_with("https://127.0.0.1:") && !url.starts_with("https://127.0.0.1:0/"),
        "{url}"
    );
    let mutating = ResourceClient::<MutatingWebhookConfiguration>::cluster(rest.clone())
        .get(&name, &GetOptions::default())
        .await
        .unwrap();
    assert!(
        mutating.webhooks.unwrap()[0]
            .client_config
            .ca_bundle
            .is_some()
    );

    let apps = ResourceClient::<App>::namespaced(rest.clone(), &ns);
    let denied = eventually(30, "kube-apiserver to call the validator", || async {
        let e = apps
            .create(&app("invalid", -1), &CreateOptions::default())
            .await
            .err()?;
        e.to_string().contains("must not be negative").then_some(e)
    })
    .await;
    assert!(
        denied.to_string().contains("denied the request"),
        "{denied}"
    );
    let mut defaulted = app("defaulted", 0);
    defaulted.spec.deployment_template.image.clear();
    let created = apps
        .create(&defaulted, &CreateOptions::default())
        .await
        .unwrap();
    assert_eq!(created.spec.deployment_template.replicas, 1);
    assert_eq!(created.spec.deployment_template.image, "nginx");

    cancel.cancel();
    task.await.unwrap();
    assert_eq!(http_status(health, "/readyz").await, None, "stopped");
}

#[tokio::test]
async fn a_manager_refused_its_webhook_manifests_retries_until_its_rbac_is_granted() {
    let rest = admin_client().await;
    let ns = namespace("webhook-rbac").await;
    let cp = testenv::control_plane();
    let user = format!("{ns}-installer");
    let kubeconfig = cp.user_kubeconfig(&user, &[]);
    let config = RestConfig::from_kubeconfig(&kubeconfig).await.unwrap();
    let health = free_port();
    let name = format!("{ns}-rbac");
    let mut mgr = Manager::builder(config)
        .webhook_server(
            "127.0.0.1:0".parse().unwrap(),
            Certificates::generated("rbac-ca", &["127.0.0.1"]),
        )
        .install_webhook_manifests(&name, WebhookEndpoint::Url("https://127.0.0.1:0".into()))
        .health_probe_bind_address(health)
        .build()
        .unwrap();
    mgr.webhook::<App>()
        .validator(AppValidator)
        .namespace_selector(only_namespace(&ns));
    let (cancel, task) = run_manager(mgr);

    // Refused (403): not ready, nothing installed, and still running.
    let validating = ResourceClient::<ValidatingWebhookConfiguration>::cluster(rest.clone());
    eventually(30, "/readyz to answer", || async {
        http_status(health, "/readyz").await
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_ne!(http_status(health, "/readyz").await, Some(200));
    let missing = validating.get(&name, &GetOptions::default()).await;
    assert!(
        missing.is_err_and(|e| e.is_not_found()),
        "installed without RBAC"
    );
    assert!(!task.is_finished(), "the manager gave up on a 403");

    // Granted: the next attempt installs, with the caBundle, and the manager is ready.
    let role = format!("{ns}-webhook-installer");
    let cluster_role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": role },
        "rules": [{ "apiGroups": ["admissionregistration.k8s.io"],
                    "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
                    "verbs": ["get", "create", "patch", "update"] }],
    }))
    .unwrap();
    ResourceClient::<ClusterRole>::cluster(rest.clone())
        .create(&cluster_role, &CreateOptions::default())
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": role },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }],
    }))
    .unwrap();
    ResourceClient::<ClusterRoleBinding>::cluster(rest.clone())
        .create(&binding, &CreateOptions::default())
        .await
        .unwrap();
    eventually(60, "/readyz to pass once the RBAC is granted", || async {
        (http_status(health, "/readyz").await? == 200).then_some(())
    })
    .await;
    let installed = validating.get(&name, &GetOptions::default()).await.unwrap();
    let hook = &installed.webhooks.as_ref().unwrap()[0];
    assert!(hook.client_config.ca_bundle.is_some());

    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn webhooks_registered_without_a_webhook_server_are_an_error_at_start() {
    let cp = testenv::control_plane();
    let config = RestConfig::from_kubeconfig(cp.kubeconfig_path())
        .await
        .unwrap();
    let mut mgr = Manager::builder(config).build().unwrap();
    mgr.webhook::<App>().validator(AppValidator);
    let e = mgr.start(CancellationToken::new()).await.unwrap_err();
    assert!(
        matches!(&e, ManagerError::NoWebhookServer(paths) if paths == &[validate_path::<App>()]),
        "{e}"
    );
}

/// The PEM certificates in the `caBundle` of the first webhook of `name`.
async fn bundle_of(rest: &RestClient, name: &str) -> Option<String> {
    let config = ResourceClient::<ValidatingWebhookConfiguration>::cluster(rest.clone())
        .get(name, &GetOptions::default())
        .await
        .ok()?;
    let bundle = config.webhooks?.first()?.client_config.ca_bundle.clone()?;
    String::from_utf8(bundle.0).ok()
}

#[tokio::test]
async fn generated_certificates_rotate_before_expiry_through_an_old_and_new_bundle_and_no_admission_or_conversion_fails()
 {
    let rest = admin_client().await;
    let ns = namespace("webhook-ca-rotate").await;
    install_crd(&rest, &App::crd()).await;
    // The example's two-version Upstream, whose conversion the rotation must not break.
    let endpoint = WebhookEndpoint::Url("https://127.0.0.1:0".into());
    install_crd(&rest, &upstream::crd(&endpoint)).await;
    let name = format!("{ns}-ca-rotate");
    let validity = Duration::from_secs(12);
    let certificates = Certificates::generated("rotating-ca", &["127.0.0.1"])
        .validity(validity)
        .rotation_overlap(Duration::from_secs(2));
    let mut mgr = webhook_manager(&name, certificates).await.build().unwrap();
    mgr.webhook::<App>()
        .validator(AppValidator)
        .defaulter(AppDefaulter)
        .namespace_selector(only_namespace(&ns));
    mgr.webhook::<upstream::v2::Upstream>()
        .converter(Conversion::hub().spoke::<upstream::v1::Upstream>());
    let (cancel, task) = run_manager(mgr);
    let apps = ResourceClient::<App>::namespaced(rest.clone(), &ns);
    let dry_run = CreateOptions {
        dry_run: true,
        ..Default::default()
    };
    eventually(30, "kube-apiserver to call the validator", || async {
        let e = apps.create(&app("probe", -1), &dry_run).await.err()?;
        e.to_string().contains("must not be negative").then_some(())
    })
    .await;
    let stored = upstream::v1::Upstream::new(
        "db",
        upstream::v1::UpstreamSpec {
            host: "db".into(),
            port: 5432,
            timeout_seconds: None,
        },
    );
    ResourceClient::<upstream::v1::Upstream>::namespaced(rest.clone(), &ns)
        .create(&stored, &CreateOptions::default())
        .await
        .unwrap();
    let upstreams = ResourceClient::<upstream::v2::Upstream>::namespaced(rest.clone(), &ns);
    eventually_ok(30, "kube-apiserver to call the converter", || async {
        upstreams.get("db", &GetOptions::default()).await
    })
    .await;

    let stop = CancellationToken::new();
    let writer = tokio::spawn({
        let (apps, stop, dry_run) = (apps.clone(), stop.clone(), dry_run.clone());
        async move {
            let (mut failures, mut admitted) = (Vec::new(), 0);
            while !stop.is_cancelled() {
                match apps.create(&app("flowing", 0), &dry_run).await {
                    Ok(app) if app.spec.deployment_template.image == "nginx" => admitted += 1,
                    Ok(app) => failures.push(format!("not defaulted: {:?}", app.spec)),
                    Err(e) => failures.push(e.to_string()),
                }
                match upstreams.get("db", &GetOptions::default()).await {
                    Ok(db) if db.spec.address == "db:5432" => {}
                    Ok(db) => failures.push(format!("converted wrong: {:?}", db.spec)),
                    Err(e) => failures.push(e.to_string()),
                }
            }
            (failures, admitted)
        }
    });
    // Three validity periods: at least two rotations, each seen as a bundle of two
    // authorities, then one.
    let mut bundles: Vec<String> = Vec::new();
    let until = tokio::time::Instant::now() + validity * 2 + validity / 2;
    while tokio::time::Instant::now() < until {
        if let Some(bundle) = bundle_of(&rest, &name).await
            && bundles.last() != Some(&bundle)
        {
            bundles.push(bundle);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.cancel();
    let (failures, admitted) = writer.await.unwrap();
    assert!(
        failures.is_empty(),
        "requests failed during rotation: {failures:?}"
    );
    assert!(admitted > 20, "too few requests to judge: {admitted}");
    let counts: Vec<usize> = bundles
        .iter()
        .map(|b| b.matches("BEGIN CERTIFICATE").count())
        .collect();
    assert!(
        counts.starts_with(&[1, 2, 1, 2, 1]),
        "bundles seen (certificates in each): {counts:?}"
    );
    cancel.cancel();
    task.await.unwrap();
    // The CRD's conversion stanza got the same bundles (read once the rotation stopped).
    let crd = ResourceClient::<CustomResourceDefinition>::cluster(rest.clone())
        .get("upstreams.examples.kubekit.dev", &GetOptions::default())
        .await
        .unwrap();
    let crd_bundle = crd
        .spec
        .conversion
        .and_then(|c| c.webhook?.client_config?.ca_bundle);
    assert_eq!(
        crd_bundle.map(|b| b.0),
        bundle_of(&rest, &name).await.map(String::into_bytes)
    );
}

/// Panics on Apps named `panic-…`; never answers for Apps named `hang-…`.
struct Misbehaving;

impl Validator<App> for Misbehaving {
    async fn validate_create(&self, app: &App, _: &AdmissionRequest) -> Verdict {
        let name = app.metadata.name.as_deref().unwrap_or_default();
        if name.starts_with("panic-") {
            panic!("asked to panic");
        }
        if name.starts_with("hang-") {
            std::future::pending::<()>().await;
        }
        Verdict::allow()
    }
}

#[tokio::test]
async fn a_handler_that_panics_or_hangs_past_timeout_seconds_is_refused_under_fail_and_admitted_under_ignore()
 {
    let rest = admin_client().await;
    install_crd(&rest, &App::crd()).await;
    let mut running = Vec::new();
    for policy in [FailurePolicy::Fail, FailurePolicy::Ignore] {
        let ns = namespace(&format!("webhook-{policy:?}").to_lowercase()).await;
        let name = format!("{ns}-policy");
        let mut mgr = webhook_manager(&name, Certificates::generated("policy-ca", &["127.0.0.1"]))
            .await
            .build()
            .unwrap();
        mgr.webhook::<App>()
            .validator(Misbehaving)
            .failure_policy(policy)
            .timeout_seconds(1)
            .namespace_selector(only_namespace(&ns));
        running.push(run_manager(mgr));
        let apps = ResourceClient::<App>::namespaced(rest.clone(), &ns);
        // Until kube-apiserver calls the webhook, the Apps are admitted without it.
        let dry_run = CreateOptions {
            dry_run: true,
            ..Default::default()
        };
        eventually(30, "kube-apiserver to call the webhook", || async {
            let configs = ResourceClient::<ValidatingWebhookConfiguration>::cluster(rest.clone());
            configs.get(&name, &GetOptions::default()).await.ok()?;
            match policy {
                FailurePolicy::Fail => apps
                    .create(&app("panic-probe", 1), &dry_run)
                    .await
                    .err()
                    .map(drop),
                // Under Ignore the call is seen by its time: a hang takes the whole second.
                FailurePolicy::Ignore => {
                    let start = tokio::time::Instant::now();
                    apps.create(&app("hang-probe", 1), &dry_run).await.ok()?;
                    (start.elapsed() >= Duration::from_millis(900)).then_some(())
                }
            }
        })
        .await;
        for kind in ["panic", "hang"] {
            let start = tokio::time::Instant::now();
            let result = apps
                .create(&app(&format!("{kind}-app"), 1), &CreateOptions::default())
                .await;
            let took = start.elapsed();
            match (policy, result) {
                (FailurePolicy::Fail, Err(e)) => {
                    let e = e.to_string();
                    let expected = match kind {
                        "panic" => "the webhook panicked: asked to panic",
                        _ => "failed calling webhook",
                    };
                    assert!(e.contains(expected), "{kind} under Fail: {e}");
                }
                (FailurePolicy::Ignore, Ok(_)) => {}
                (policy, result) => panic!("{kind} under {policy:?}: {result:?}"),
            }
            assert!(
                took < Duration::from_secs(5),
                "{kind} under {policy:?} took {took:?}, past timeoutSeconds"
            );
        }
        // A well-behaved App is admitted either way: the server went on.
        apps.create(&app("fine", 1), &CreateOptions::default())
            .await
            .unwrap();
    }
    for (cancel, task) in running {
        cancel.cancel();
        task.await.unwrap();
    }
}
