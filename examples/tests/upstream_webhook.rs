//! The `upstream-webhook` example end to end: the real binary serving the conversion and
//! defaulting webhooks of the two-version `Upstream` CRD, which the real kube-apiserver
//! calls (its `caBundle` written by the example's generated authority); kubectl creates,
//! kubekit's typed clients read and write in either version.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use kubekit::clientset::{CreateOptions, GetOptions, ResourceClient, UpdateOptions};
use kubekit::rest::{RestClient, RestConfig};
use kubekit_examples::upstream::{DEFAULT_TIMEOUT_SECONDS, TLS_ANNOTATION, v1, v2};
use testenv::eventually;

/// The example's process, killed when dropped.
struct Example(Child);

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `kubectl apply -f -` of `yaml`: whether it succeeded.
fn kubectl_apply(yaml: &str) -> bool {
    let cp = testenv::control_plane();
    let Ok(mut child) = (cp.kubectl().args(["apply", "-f", "-"]))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(yaml.as_bytes());
    }
    child.wait().is_ok_and(|status| status.success())
}

#[tokio::test]
async fn an_upstream_stored_in_v1_reads_in_v2_writes_back_without_loss_and_gets_its_default() {
    let cp = testenv::control_plane();
    let ns = cp.create_namespace(&cp.client().await, "upstream").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _example = Example(
        Command::new(env!("CARGO_BIN_EXE_upstream-webhook"))
            .arg("--kubeconfig")
            .arg(cp.kubeconfig_path())
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .spawn()
            .expect("start upstream-webhook"),
    );
    let rest = RestClient::new(
        &RestConfig::from_kubeconfig(cp.kubeconfig_path())
            .await
            .unwrap(),
    )
    .unwrap();
    let (old, new) = (
        ResourceClient::<v1::Upstream>::namespaced(rest.clone(), &ns),
        ResourceClient::<v2::Upstream>::namespaced(rest.clone(), &ns),
    );

    // Created in v1 with kubectl, without a timeout: defaulted (through v2) on create.
    let manifest = format!(
        "apiVersion: examples.kubekit.dev/v1\nkind: Upstream\n\
         metadata: {{name: db, namespace: {ns}, labels: {{tier: data}}, annotations: {{note: kept}}}}\n\
         spec: {{host: db.internal, port: 5432}}\n"
    );
    let stored = eventually(60, "the CRD and the webhooks to serve", || async {
        if !kubectl_apply(&manifest) {
            return None;
        }
        let stored = old.get("db", &GetOptions::default()).await.ok()?;
        stored.spec.timeout_seconds.map(|_| stored)
    })
    .await;
    assert_eq!(
        stored.spec,
        v1::UpstreamSpec {
            host: "db.internal".into(),
            port: 5432,
            timeout_seconds: Some(DEFAULT_TIMEOUT_SECONDS),
        }
    );

    // Read in v2 through the conversion webhook.
    let read = new.get("db", &GetOptions::default()).await.unwrap();
    assert_eq!(
        read.spec,
        v2::UpstreamSpec {
            address: "db.internal:5432".into(),
            tls: false,
            timeout_seconds: Some(DEFAULT_TIMEOUT_SECONDS),
        }
    );
    assert_eq!(read.metadata.labels, stored.metadata.labels);
    assert_eq!(read.metadata.annotations, stored.metadata.annotations);
    assert_eq!(read.metadata.uid, stored.metadata.uid);

    // Written back in v2 with what v1 cannot say: stored in v1, nothing lost either way.
    let mut changed = read.clone();
    changed.spec.tls = true;
    let written = new
        .update(&changed, &UpdateOptions::default())
        .await
        .unwrap();
    assert_eq!(written.spec, changed.spec);
    let as_v1 = old.get("db", &GetOptions::default()).await.unwrap();
    assert_eq!(
        (as_v1.spec.host.as_str(), as_v1.spec.port),
        ("db.internal", 5432)
    );
    let annotations = as_v1.metadata.annotations.clone().unwrap();
    assert_eq!(annotations[TLS_ANNOTATION], "true");
    assert_eq!(annotations["note"], "kept");
    let again = new.get("db", &GetOptions::default()).await.unwrap();
    assert_eq!(again.spec, changed.spec);
    assert_eq!(again.metadata.annotations, read.metadata.annotations);

    // Written back in v1 unchanged: the v2 view is what it was.
    old.update(&as_v1, &UpdateOptions::default()).await.unwrap();
    assert_eq!(
        new.get("db", &GetOptions::default()).await.unwrap().spec,
        changed.spec
    );

    // Created in v2 with an address v1 cannot split: the same after the round trip.
    let odd = v2::Upstream::new(
        "odd",
        v2::UpstreamSpec {
            address: "cache:08".into(),
            tls: true,
            timeout_seconds: None,
        },
    );
    let created = new.create(&odd, &CreateOptions::default()).await.unwrap();
    assert_eq!(created.spec.timeout_seconds, Some(DEFAULT_TIMEOUT_SECONDS));
    let odd_v1 = old.get("odd", &GetOptions::default()).await.unwrap();
    assert_eq!(
        (odd_v1.spec.host.as_str(), odd_v1.spec.port),
        ("cache:08", 0)
    );
    let odd_v2 = new.get("odd", &GetOptions::default()).await.unwrap();
    assert_eq!(odd_v2.spec, created.spec);
}
