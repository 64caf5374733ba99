//! RBAC on the fake: users from tokens and impersonation, what their roles grant, the
//! real server's refusals, and kubectl's `auth can-i` and `--as` against it.

mod common;

use kubekit::rest::RestClient;
use kubekit_fake::FakeApiServer;
use serde_json::{Value, json};

use common::kubectl_output;

/// A server with RBAC, the admin's client, and namespace `team` with Role `reader` (get and
/// list ConfigMaps) bound to user `alice`.
async fn team() -> (FakeApiServer, RestClient) {
    let server = FakeApiServer::with_rbac().await.expect("fake starts");
    let admin = RestClient::new(&server.config()).expect("rest client");
    let create =
        |group: &'static str, resource: &'static str, ns: Option<&'static str>, body: Value| {
            let admin = admin.clone();
            async move {
                let mut req = admin.post().group_version(group, "v1").resource(resource);
                if let Some(ns) = ns {
                    req = req.namespace(ns);
                }
                req.body(&body)
                    .send()
                    .await
                    .expect("created")
                    .decode::<Value>()
                    .expect("an object")
            }
        };
    create(
        "",
        "namespaces",
        None,
        json!({"metadata": {"name": "team"}}),
    )
    .await;
    let rbac = "rbac.authorization.k8s.io";
    create(
        rbac,
        "roles",
        Some("team"),
        json!({"metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
    )
    .await;
    create(
        rbac,
        "rolebindings",
        Some("team"),
        json!({"metadata": {"name": "read"},
        "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "reader"},
        "subjects": [{"apiGroup": rbac, "kind": "User", "name": "alice"}]}),
    )
    .await;
    (server, admin)
}

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = kubectl_output(kubeconfig, args, "");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

// kubectl blocks its thread: the fake serves it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_answers_what_the_users_roles_grant() {
    let (server, _admin) = team().await;
    let alice = server.user_kubeconfig("alice", &[]).unwrap();
    let can_i = |args: &[&str]| {
        let mut all = vec!["--namespace", "team", "auth", "can-i"];
        all.extend_from_slice(args);
        kubectl(&alice, &all)
    };
    assert_eq!(can_i(&["list", "configmaps"]), (true, "yes\n".into()));
    assert_eq!(can_i(&["create", "configmaps"]).1, "no\n");
    assert_eq!(can_i(&["list", "secrets"]).1, "no\n");
    // The admin asks for alice.
    let admin = server.kubeconfig_path();
    let as_alice = [
        "--namespace",
        "team",
        "auth",
        "can-i",
        "get",
        "configmaps",
        "--as",
        "alice",
    ];
    assert_eq!(kubectl(admin, &as_alice), (true, "yes\n".into()));
    server.shutdown().await;
}

#[tokio::test]
async fn a_bearer_token_is_its_users_and_an_unknown_one_is_unauthorized() {
    let (server, _admin) = team().await;
    let alice = RestClient::new(&server.user_config("alice", &[])).expect("rest client");
    let configmaps = |client: &RestClient, ns: &str| {
        client
            .get()
            .group_version("", "v1")
            .namespace(ns)
            .resource("configmaps")
    };
    configmaps(&alice, "team")
        .send()
        .await
        .expect("alice lists the team's ConfigMaps");
    let refused = configmaps(&alice, "default").send().await.unwrap_err();
    let status = refused.status().expect("a Status");
    assert_eq!(status.code, Some(403));
    assert_eq!(
        status.message.as_deref(),
        Some(
            "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        )
    );
    let mut kube = server.config().kube_config().clone();
    kube.auth_info.token = Some("not-a-token".to_string().into());
    let stranger = RestClient::new(&kubekit::rest::RestConfig::from_kube(kube)).unwrap();
    let status = configmaps(&stranger, "team").send().await.unwrap_err();
    assert_eq!(status.status().and_then(|s| s.code), Some(401));
    server.shutdown().await;
}
