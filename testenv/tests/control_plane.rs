//! Smoke tests of the local control plane: the real kube-apiserver, etcd and
//! kube-controller-manager started by `scripts/local-cluster.sh`, driven with kube's client
//! and with kubectl.

use app_controller::{App, AppSpec, DeploymentTemplate, ServiceTemplate};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::core::CustomResourceExt;

use testenv::eventually;

#[tokio::test]
async fn namespace_created_for_a_test_exists_on_the_server() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "smoke-ns").await;
    let got = Api::<Namespace>::all(client)
        .get(&ns)
        .await
        .expect("get namespace");
    assert_eq!(got.metadata.name.as_deref(), Some(ns.as_str()));
    assert_eq!(got.status.and_then(|s| s.phase).as_deref(), Some("Active"));
}

#[tokio::test]
async fn configmap_create_get_list_update_delete_round_trip() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "smoke-cm").await;
    let api = Api::<ConfigMap>::namespaced(client, &ns);

    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            ..Default::default()
        },
        data: Some([("mode".to_string(), "fast".to_string())].into()),
        ..Default::default()
    };
    let created = api
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    assert!(created.metadata.resource_version.is_some());

    let mut got = api.get("settings").await.expect("get");
    assert_eq!(got.data.as_ref().unwrap()["mode"], "fast");

    let listed = api.list(&ListParams::default()).await.expect("list");
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert!(
        names.contains(&"settings".to_string()),
        "list returned {names:?}"
    );

    got.data
        .as_mut()
        .unwrap()
        .insert("mode".into(), "safe".into());
    let updated = api
        .replace("settings", &PostParams::default(), &got)
        .await
        .expect("update");
    assert_eq!(updated.data.as_ref().unwrap()["mode"], "safe");
    assert_ne!(
        updated.metadata.resource_version,
        created.metadata.resource_version
    );

    api.delete("settings", &DeleteParams::default())
        .await
        .expect("delete");
    let err = api
        .get("settings")
        .await
        .expect_err("deleted configmap is gone");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "expected 404 after delete, got {err:?}"
    );
}

#[tokio::test]
async fn app_crd_becomes_established_and_kubectl_lists_apps() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let crd = App::crd();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create App CRD: {e}"),
    }
    eventually(30, "App CRD Established", || {
        let crds = crds.clone();
        async move {
            let c = crds.get("apps.appcontroller.k8s.io").await.ok()?;
            let established = c
                .status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            established.then_some(())
        }
    })
    .await;

    let ns = cp.create_namespace(&client, "smoke-app").await;
    let app = App::new(
        "demo",
        AppSpec {
            deployment_template: DeploymentTemplate {
                name: "demo-deploy".into(),
                image: "nginx".into(),
                replicas: 2,
            },
            service_template: ServiceTemplate {
                name: "demo-svc".into(),
            },
        },
    );
    // The CRD is served a moment after it is Established; retry the first create briefly.
    let apps = Api::<App>::namespaced(client.clone(), &ns);
    let created = eventually(30, "App create", || {
        let apps = apps.clone();
        let app = app.clone();
        async move { apps.create(&PostParams::default(), &app).await.ok() }
    })
    .await;
    assert_eq!(created.spec, app.spec);

    // The status subresource is enabled: a status write does not change the spec.
    let mut with_status = created.clone();
    with_status.status = Some(Default::default());
    with_status.spec.deployment_template.replicas = 7;
    let after = apps
        .replace_status("demo", &PostParams::default(), &with_status)
        .await
        .expect("replace_status");
    assert_eq!(
        after.spec.deployment_template.replicas, 2,
        "status writes must ignore the spec"
    );

    let out = cp
        .kubectl()
        .args(["get", "apps", "-A", "-o", "name"])
        .output()
        .expect("run kubectl");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl get apps -A failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().any(|l| l == "app.appcontroller.k8s.io/demo"),
        "kubectl printed {stdout:?}"
    );
}

#[tokio::test]
async fn controller_manager_creates_replicasets_for_deployments() {
    let cp = testenv::control_plane();
    let client = cp.client().await;
    let ns = cp.create_namespace(&client, "smoke-kcm").await;
    let deploy = testenv::deployment("web", 1);
    Api::<Deployment>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &deploy)
        .await
        .expect("create deployment");
    let rs_api = Api::<ReplicaSet>::namespaced(client, &ns);
    let owner = eventually(60, "a ReplicaSet owned by the Deployment", || {
        let rs_api = rs_api.clone();
        async move {
            let list = rs_api.list(&ListParams::default()).await.ok()?;
            list.items
                .into_iter()
                .find_map(|rs| rs.metadata.owner_references?.into_iter().next())
        }
    })
    .await;
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Deployment", "web")
    );
}
