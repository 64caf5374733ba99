//! The `greeting-controller` example end to end: the real binary against the real control
//! plane. A Greeting gets a ConfigMap of its message, controlled by it; a new message
//! reaches the ConfigMap, and a ConfigMap deleted by hand comes back.

mod support;

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::clientset::{DeleteOptions, GetOptions};
use support::{Example, kubectl, namespace_config_maps, wait_for_crd};
use testenv::eventually;

fn greeting(ns: &str, message: &str) -> String {
    format!(
        "apiVersion: examples.kubekit.dev/v1\nkind: Greeting\n\
         metadata: {{name: hello, namespace: {ns}}}\nspec: {{message: {message}}}\n"
    )
}

#[tokio::test]
async fn a_greeting_gets_a_config_map_of_its_message_that_follows_it_and_comes_back() {
    let cp = testenv::control_plane();
    let (ns, config_maps) = namespace_config_maps(cp, "greeting").await;
    let _example = Example::start(env!("CARGO_BIN_EXE_greeting-controller"), cp, &[]);
    wait_for_crd(cp, "greetings.examples.kubekit.dev").await;
    let message_is = |want: &'static str| {
        let config_maps = &config_maps;
        move || async move {
            let cm = config_maps
                .get_opt("hello", &GetOptions::default())
                .await
                .ok()??;
            let message = cm.data.as_ref()?.get("message")?;
            (message == want).then_some(cm)
        }
    };

    kubectl(cp, &["apply", "-f", "-"], &greeting(&ns, "world"));
    let cm: ConfigMap = eventually(60, "the ConfigMap of `world`", message_is("world")).await;
    let owners = cm.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(
        (
            owners[0].kind.as_str(),
            owners[0].name.as_str(),
            owners[0].controller
        ),
        ("Greeting", "hello", Some(true))
    );

    kubectl(cp, &["apply", "-f", "-"], &greeting(&ns, "again"));
    eventually(60, "the ConfigMap of `again`", message_is("again")).await;

    // The ConfigMap's deletion enqueues its owner, which applies it again.
    let deleted = config_maps.delete("hello", &DeleteOptions::default()).await;
    deleted.unwrap();
    let back = eventually(60, "the ConfigMap back", message_is("again")).await;
    assert_ne!(back.metadata.uid, cm.metadata.uid, "a new ConfigMap");
}
