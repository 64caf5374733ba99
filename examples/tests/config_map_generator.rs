//! The `config-map-generator` example end to end: the real binary against the real control
//! plane, driven with kubectl as its docs say. A generator gets its ConfigMap and a `Ready`
//! condition; a change of its data reaches the ConfigMap; `kubectl delete` of the
//! generator deletes the ConfigMap through the finalizer, then the generator goes.

mod support;

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::clientset::GetOptions;
use support::{Example, kubectl, namespace_config_maps, wait_for_crd};
use testenv::eventually;

fn generator(ns: &str, value: &str) -> String {
    format!(
        "apiVersion: examples.kubekit.dev/v1\nkind: ConfigMapGenerator\n\
         metadata: {{name: greeting, namespace: {ns}}}\nspec: {{data: {{hello: {value}}}}}\n"
    )
}

#[tokio::test]
async fn the_generator_gets_its_config_map_a_ready_condition_and_a_cleanup_on_delete() {
    let cp = testenv::control_plane();
    let (ns, config_maps) = namespace_config_maps(cp, "generator").await;
    let _example = Example::start(
        env!("CARGO_BIN_EXE_config-map-generator"),
        cp,
        &["--namespace", &ns],
    );
    // The example installs its CRD; apply once the server serves it.
    wait_for_crd(cp, "configmapgenerators.examples.kubekit.dev").await;
    kubectl(cp, &["apply", "-f", "-"], &generator(&ns, "world"));

    let data = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("hello")).cloned();
    let cm = eventually(60, "the ConfigMap", || async {
        config_maps
            .get("greeting", &GetOptions::default())
            .await
            .ok()
    })
    .await;
    assert_eq!(data(&cm).as_deref(), Some("world"));
    let owner = &cm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("ConfigMapGenerator", Some(true))
    );
    let ready = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    eventually(60, "Ready=True", || async {
        let args = [
            "get",
            "configmapgenerator",
            "greeting",
            "-n",
            &ns,
            "-o",
            ready,
        ];
        (kubectl(cp, &args, "") == "True").then_some(())
    })
    .await;
    let finalizers = kubectl(
        cp,
        &[
            "get",
            "configmapgenerator",
            "greeting",
            "-n",
            &ns,
            "-o",
            "jsonpath={.metadata.finalizers}",
        ],
        "",
    );
    assert!(
        finalizers.contains("examples.kubekit.dev/config-map"),
        "{finalizers}"
    );

    kubectl(cp, &["apply", "-f", "-"], &generator(&ns, "again"));
    eventually(60, "the changed data in the ConfigMap", || async {
        let cm = config_maps
            .get("greeting", &GetOptions::default())
            .await
            .ok()?;
        (data(&cm).as_deref() == Some("again")).then_some(())
    })
    .await;

    // kubectl delete waits for the generator to be gone; the finalizer went first, after
    // the ConfigMap was deleted (no garbage collector is needed for it).
    kubectl(
        cp,
        &[
            "delete",
            "configmapgenerator",
            "greeting",
            "-n",
            &ns,
            "--timeout=60s",
        ],
        "",
    );
    let left = config_maps
        .get_opt("greeting", &GetOptions::default())
        .await
        .unwrap();
    assert!(
        left.is_none(),
        "the cleanup deleted the ConfigMap: {left:?}"
    );
}
