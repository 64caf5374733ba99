//! `cache::ListPager` against the real kube-apiserver. (Its fallback after a compaction is
//! tested in `tests/compaction.rs`: compacting etcd here would break the other tests'
//! watches.)

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::cache::{ListPager, ListWatch};
use kubekit::clientset::{CreateOptions, ListOptions, ResourceClient};

use crate::common::{admin_client, namespace};

fn names(items: &[ConfigMap]) -> BTreeSet<(String, String)> {
    items
        .iter()
        .map(|c| {
            let m = &c.metadata;
            (m.name.clone().unwrap(), m.resource_version.clone().unwrap())
        })
        .collect()
}

/// The test's ConfigMaps, not the namespace's `kube-root-ca.crt`.
fn sel() -> ListOptions {
    ListOptions::default().labels("paged=yes")
}

#[tokio::test]
async fn pager_lists_1200_config_maps_in_3_pages_equal_to_a_full_list() {
    let rest = admin_client().await;
    let ns = namespace("pager").await;
    let cms = ResourceClient::<ConfigMap>::namespaced(rest.clone(), &ns);
    const N: usize = 1200;
    futures_util::stream::iter(0..N)
        .map(|i| {
            let cms = cms.clone();
            async move {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(format!("cm-{i:04}"));
                cm.metadata.labels = Some([("paged".to_string(), "yes".to_string())].into());
                cms.create(&cm, &CreateOptions::default()).await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("create 1200 config maps");

    let requests = Arc::new(AtomicUsize::new(0));
    let pager = {
        let (cms, requests) = (cms.clone(), requests.clone());
        ListPager::from_fn(move |opts: ListOptions| {
            let cms = cms.clone();
            requests.fetch_add(1, Ordering::SeqCst);
            async move { cms.list(&opts).await }
        })
    };
    let pages: Vec<_> = pager.pages(sel()).try_collect().await.expect("pages");
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    let sizes: Vec<usize> = pages.iter().map(|p| p.items.len()).collect();
    assert_eq!(sizes, [500, 500, 200]);
    assert!(pages.iter().all(|p| !p.restarted));
    let paged: Vec<ConfigMap> = pages.into_iter().flat_map(|p| p.items).collect();

    let full = cms.list(&sel()).await.expect("full list");
    assert!(full.metadata.continue_.is_none());
    assert_eq!(paged.len(), N, "no object twice");
    assert_eq!(names(&paged), names(&full.items));

    // The same through a ListerWatcher, joined.
    let joined = ListPager::new(ListWatch::new(cms.clone()))
        .list(sel())
        .await
        .expect("list");
    assert_eq!(names(&joined.items), names(&full.items));
    assert!(joined.metadata.continue_.is_none());
    let mut count = 0;
    ListPager::new(ListWatch::new(cms))
        .page_size(250)
        .each_item(sel(), |_: ConfigMap| {
            count += 1;
            Ok::<_, kubekit::rest::Error>(())
        })
        .await
        .expect("each item");
    assert_eq!(count, N);
}
