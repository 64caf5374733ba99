//! Integration tests of `kubekit::watch::RetryWatcher` against the real API server: watches
//! the server closes every second, resumed without losing or repeating a change.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::cache::{ListWatch, ListerWatcher};
use kubekit::clientset::{
    CreateOptions, DeleteOptions, ListOptions, ResourceClient, UpdateOptions, WatchStream,
};
use kubekit::rest::{ObjectList, Result, WatchEvent};
use kubekit::watch::RetryWatcher;

use crate::clientset::{config_map, setup};

/// A lister-watcher that counts the watches it starts.
struct Counting {
    inner: ListWatch<ResourceClient<ConfigMap>>,
    watches: Arc<AtomicUsize>,
}

impl ListerWatcher<ConfigMap> for Counting {
    fn list(&self, opts: ListOptions) -> BoxFuture<'_, Result<ObjectList<ConfigMap>>> {
        self.inner.list(opts)
    }

    fn watch(&self, opts: ListOptions) -> BoxFuture<'_, Result<WatchStream<ConfigMap>>> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        self.inner.watch(opts)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[tokio::test]
async fn a_retry_watcher_resumes_watches_the_server_closes_without_losing_or_repeating_a_change() {
    let (cs, ns) = setup("retry-watcher").await;
    let cms = cs.core_v1().config_maps(&ns);
    let from = cms.list(&ListOptions::default()).await.unwrap();
    let from = from.metadata.resource_version.unwrap();
    let watches = Arc::new(AtomicUsize::new(0));
    // Only this test's ConfigMaps: the namespace's kube-root-ca.crt appears when it likes.
    let one_second = ListWatch::new(cms.clone()).with_tweak(|o| {
        o.timeout_seconds = Some(1);
        o.label_selector = Some("retry-watcher=yes".into());
    });
    let counting = Counting {
        inner: one_second,
        watches: watches.clone(),
    };
    let mut watcher = RetryWatcher::new(counting, &from).unwrap();

    // Writes spread over ~4 s, so that the server closes the watch several times between
    // them.
    let writer = tokio::spawn(async move {
        let mut expected = Vec::new();
        for i in 0..4 {
            let name = format!("cm-{i}");
            let cm = config_map(&name, &[("retry-watcher", "yes")], &[("v", "1")]);
            let created = cms.create(&cm, &CreateOptions::default()).await.unwrap();
            expected.push(("ADDED", name.clone()));
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut changed = created;
            changed.data = Some([("v".to_string(), "2".to_string())].into());
            cms.update(&changed, &UpdateOptions::default())
                .await
                .unwrap();
            expected.push(("MODIFIED", name.clone()));
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        cms.delete("cm-0", &DeleteOptions::default()).await.unwrap();
        expected.push(("DELETED", "cm-0".to_string()));
        expected
    });

    let mut seen = Vec::new();
    let mut versions = Vec::new();
    let collect = async {
        while seen.len() < 9 {
            let event = watcher.next().await.expect("the watch goes on").unwrap();
            let meta = &event.object().expect("a change, not an error").metadata;
            versions.push(
                meta.resource_version
                    .clone()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
            );
            seen.push((event.type_name(), meta.name.clone().unwrap()));
        }
    };
    tokio::time::timeout(Duration::from_secs(60), collect)
        .await
        .expect("nine changes within 60 s");
    assert_eq!(seen, writer.await.unwrap(), "every change once, in order");
    assert!(versions.is_sorted(), "{versions:?}");
    let started = watches.load(Ordering::SeqCst);
    assert!(
        started >= 3,
        "the server closed the watch: {started} watches"
    );
    assert_eq!(watcher.resource_version(), versions[8].to_string());
}

#[tokio::test]
async fn until_returns_the_change_its_condition_waits_for() {
    let (cs, ns) = setup("retry-watcher-until").await;
    let cms = cs.core_v1().config_maps(&ns);
    let counter = config_map("counter", &[], &[("v", "0")]);
    let mut current = cms
        .create(&counter, &CreateOptions::default())
        .await
        .unwrap();
    let from = current.metadata.resource_version.clone().unwrap();
    let mut watcher = RetryWatcher::new(ListWatch::new(cms.clone()), &from).unwrap();
    let writer = tokio::spawn(async move {
        for v in 1..=5 {
            current.data = Some([("v".to_string(), v.to_string())].into());
            current = cms
                .update(&current, &UpdateOptions::default())
                .await
                .unwrap();
        }
    });
    let v_is_3 = |event: &WatchEvent<ConfigMap>| {
        let data = event.object().and_then(|c| c.data.as_ref());
        data.and_then(|d| d.get("v")).is_some_and(|v| v == "3")
    };
    let third = tokio::time::timeout(Duration::from_secs(60), watcher.until(v_is_3))
        .await
        .expect("v=3 within 60 s")
        .unwrap();
    assert_eq!(third.type_name(), "MODIFIED");
    writer.await.unwrap();
}
