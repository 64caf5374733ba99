//! kubekit's informers and listers against the fake, with the assertions of kubekit's own
//! informer tests against the real control plane: the cache converges to the server's
//! state through churn, listers select by label, and — through fault injection — the
//! informer recovers from cut watches and a 410 with a relist.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::clientset::{Clientset, CreateOptions, DeleteOptions, ListOptions, UpdateOptions};
use kubekit::informers::SharedInformerFactory;
use kubekit::labels::Selector;
use kubekit::listers::Lister;
use kubekit_fake::FakeApiServer;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

fn config_map(i: usize) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("cm-{i}"));
    let parity = if i.is_multiple_of(2) { "even" } else { "odd" };
    cm.metadata.labels = Some(BTreeMap::from([("parity".into(), parity.into())]));
    cm.data = Some(BTreeMap::from([("i".into(), i.to_string())]));
    cm
}

async fn create(cs: &Clientset, range: std::ops::Range<usize>) {
    let cms = cs.core_v1().config_maps(NS);
    for i in range {
        cms.create(&config_map(i), &CreateOptions::default())
            .await
            .expect("created");
    }
}

async fn update(cs: &Clientset, range: std::ops::Range<usize>) {
    let cms = cs.core_v1().config_maps(NS);
    for i in range {
        let mut cm = config_map(i);
        cm.data = Some(BTreeMap::from([("i".into(), format!("{i}-updated"))]));
        cms.update(&cm, &UpdateOptions::default())
            .await
            .expect("updated");
    }
}

async fn delete(cs: &Clientset, range: std::ops::Range<usize>) {
    let cms = cs.core_v1().config_maps(NS);
    for i in range {
        cms.delete(&format!("cm-{i}"), &DeleteOptions::default())
            .await
            .expect("deleted");
    }
}

/// Waits until the lister holds exactly the server's ConfigMaps (name → resourceVersion).
async fn assert_cache_converges(cs: &Clientset, lister: &Lister<ConfigMap>) {
    let server: BTreeMap<String, String> = cs
        .core_v1()
        .config_maps(NS)
        .list(&ListOptions::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|cm| {
            (
                cm.metadata.name.unwrap_or_default(),
                cm.metadata.resource_version.unwrap_or_default(),
            )
        })
        .collect();
    let cached = || -> BTreeMap<String, String> {
        lister
            .list(&Selector::everything())
            .iter()
            .map(|cm| {
                (
                    cm.metadata.name.clone().unwrap_or_default(),
                    cm.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect()
    };
    let converged = tokio::time::timeout(Duration::from_secs(10), async {
        while cached() != server {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        converged.is_ok(),
        "cache {:?}\nserver {server:?}",
        cached().len()
    );
}

async fn informer_cache_follows_churn(streaming: bool) {
    let server = FakeApiServer::start().await.expect("fake starts");
    let cs = Clientset::new(&server.config()).expect("clientset");
    create(&cs, 0..300).await;
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace(NS)
        .page_size(100)
        .streaming_list(streaming)
        .build();
    let cms = factory.core_v1().config_maps();
    factory.start();
    let synced = factory.wait_for_cache_sync(&CancellationToken::new()).await;
    assert!(synced.values().all(|ok| *ok), "{synced:?}");
    let lister = cms.lister();
    assert_eq!(lister.list(&Selector::everything()).len(), 300);

    tokio::join!(
        create(&cs, 300..600),
        update(&cs, 0..100),
        delete(&cs, 100..200)
    );
    assert_cache_converges(&cs, &lister).await;
    assert_eq!(lister.list(&Selector::everything()).len(), 500);
    let odd = lister.list(&"parity=odd".parse::<Selector>().expect("selector"));
    assert_eq!(odd.len(), 250);
    let cm = lister.namespaced(NS).get("cm-7").expect("cm-7 cached");
    assert_eq!(
        cm.data
            .as_ref()
            .and_then(|d| d.get("i"))
            .map(String::as_str),
        Some("7-updated")
    );
    assert!(
        lister
            .namespaced(NS)
            .get("cm-150")
            .unwrap_err()
            .is_not_found()
    );

    // A cut watch, then a 410 on the next one: the informer re-watches, relists, and its
    // cache still ends equal to the server's.
    server.expire_next_watches(1);
    server.cut_watches();
    tokio::join!(create(&cs, 600..700), delete(&cs, 0..50));
    assert_cache_converges(&cs, &lister).await;
    assert_eq!(lister.list(&Selector::everything()).len(), 550);
    factory.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn informer_over_a_streaming_list_keeps_an_exact_cache_through_churn_cut_watches_and_410() {
    informer_cache_follows_churn(true).await;
}

#[tokio::test]
async fn informer_over_paged_lists_keeps_an_exact_cache_through_churn_cut_watches_and_410() {
    informer_cache_follows_churn(false).await;
}
