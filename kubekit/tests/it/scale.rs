//! The scale client against the real control plane: Deployments and a custom resource
//! whose CRD declares a scale subresource.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kubekit::clientset::{CreateOptions, GetOptions, PatchBody};
use kubekit::dynamic::DynamicClient;
use kubekit::meta::GroupVersionResource;
use kubekit::scale::{GroupResource, ScaleClient, ScaleError};
use serde_json::json;

use crate::clientset::{deployment, setup};

#[tokio::test]
async fn deployment_scale_is_read_updated_and_patched_and_a_stale_update_conflicts() {
    let (cs, ns) = setup("scale").await;
    let deployments = cs.apps_v1().deployments(&ns);
    deployments
        .create(&deployment("web"), &CreateOptions::default())
        .await
        .unwrap();
    let scales = ScaleClient::discover(cs.rest_client().clone())
        .await
        .unwrap();
    let gr = GroupResource::new("apps", "deployments");
    assert!(scales.scalable().contains(&&gr));
    assert!(
        scales
            .scalable()
            .contains(&&GroupResource::new("apps", "statefulsets"))
    );

    let scale = scales.get(&gr, &ns, "web").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(1));
    // kube-controller-manager writes the Deployment's status meanwhile: read, change and
    // write again until the write is not stale (client-go's RetryOnConflict).
    let mut three = None;
    for _ in 0..10 {
        let mut scale = scales.get(&gr, &ns, "web").await.unwrap();
        scale.spec.as_mut().unwrap().replicas = Some(3);
        match scales.update(&gr, &ns, &scale).await {
            Ok(updated) => {
                assert_eq!(updated.spec.as_ref().unwrap().replicas, Some(3));
                three = Some(scale);
                break;
            }
            Err(e) if e.is_conflict() => continue,
            Err(e) => panic!("update the scale: {e}"),
        }
    }
    let three = three.expect("an update without conflict within 10 tries");
    let replicas = |d: Deployment| d.spec.replicas;
    let read = deployments
        .get("web", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(replicas(read), Some(3), "the Deployment itself was scaled");

    let patch = PatchBody::Merge(json!({"spec": {"replicas": 5}}));
    let patched = scales.patch(&gr, &ns, "web", &patch).await.unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(5));

    // `three` carries the resourceVersion from before the patch.
    let stale = scales.update(&gr, &ns, &three).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    let read = deployments
        .get("web", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(replicas(read), Some(5), "the stale update changed nothing");

    let missing = scales.get(&gr, &ns, "nope").await.unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let unscalable = scales
        .get(&GroupResource::new("", "configmaps"), &ns, "x")
        .await
        .unwrap_err();
    assert!(matches!(unscalable, ScaleError::NoScale(_)), "{unscalable}");
}

#[tokio::test]
async fn a_custom_resource_with_a_scale_subresource_is_scaled_through_its_spec_path() {
    let (cs, ns) = setup("scale-crd").await;
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.scale.kubekit.dev"},
        "spec": {
            "group": "scale.kubekit.dev",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"scale": {
                    "specReplicasPath": ".spec.count",
                    "statusReplicasPath": ".status.count",
                }},
            }],
        },
    }))
    .unwrap();
    let crds = cs.apiextensions_v1().custom_resource_definitions();
    match crds.create(&crd, &CreateOptions::default()).await {
        Ok(_) => {}
        Err(e) if e.is_already_exists() => {}
        Err(e) => panic!("create the Widget CRD: {e}"),
    }
    let gr = GroupResource::new("scale.kubekit.dev", "widgets");
    // Served once the CRD is established and discovery shows it.
    let scales = testenv::eventually(60, "widgets to be scalable", || async {
        let scales = ScaleClient::discover(cs.rest_client().clone()).await.ok()?;
        scales.scalable().contains(&&gr).then_some(scales)
    })
    .await;
    let widgets = DynamicClient::from_rest_client(cs.rest_client().clone())
        .resource(&GroupVersionResource::new(
            "scale.kubekit.dev",
            "v1",
            "widgets",
        ))
        .namespace(&ns);
    let widget: kubekit::dynamic::Unstructured = serde_json::from_value(json!({
        "apiVersion": "scale.kubekit.dev/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"count": 2},
    }))
    .unwrap();
    widgets
        .create(&widget, &CreateOptions::default())
        .await
        .unwrap();
    let scale = scales.get(&gr, &ns, "w").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    let patch = PatchBody::Merge(json!({"spec": {"replicas": 7}}));
    scales.patch(&gr, &ns, "w", &patch).await.unwrap();
    let read = widgets.get("w", &GetOptions::default()).await.unwrap();
    assert_eq!(
        read.fields["spec"]["count"], 7,
        "the CRD's specReplicasPath was set"
    );
}
