//! Integration tests of `kubekit::retry`: read-modify-writes against the real API server,
//! retried on its 409 Conflict.

use std::cell::Cell;

use k8s_openapi::api::core::v1::ConfigMap;
use kubekit::clientset::{CreateOptions, GetOptions, ResourceClient, UpdateOptions};
use kubekit::rest::Error;
use kubekit::retry::{Backoff, retry_on_conflict};

use crate::clientset::{config_map, setup};

/// The ConfigMap `counter` with its count one higher.
fn bumped(mut cm: ConfigMap) -> ConfigMap {
    let data = cm.data.get_or_insert_default();
    let count: u32 = data.get("count").and_then(|c| c.parse().ok()).unwrap_or(0);
    data.insert("count".into(), (count + 1).to_string());
    cm
}

async fn count(cms: &ResourceClient<ConfigMap>) -> String {
    let cm = cms.get("counter", &GetOptions::default()).await.unwrap();
    cm.data.unwrap_or_default()["count"].clone()
}

/// One increment of `counter`, read afresh unless `stale` is given (used once).
async fn increment(
    cms: &ResourceClient<ConfigMap>,
    stale: Option<ConfigMap>,
) -> Result<ConfigMap, Error> {
    let cm = match stale {
        Some(cm) => cm,
        None => cms.get("counter", &GetOptions::default()).await?,
    };
    cms.update(&bumped(cm), &UpdateOptions::default()).await
}

#[tokio::test]
async fn a_conflicting_update_is_read_again_and_applied_once_on_top_of_the_other_write() {
    let (cs, ns) = setup("retry-conflict").await;
    let cms = cs.core_v1().config_maps(&ns);
    let counter = config_map("counter", &[], &[("count", "0")]);
    let stale = cms
        .create(&counter, &CreateOptions::default())
        .await
        .unwrap();
    increment(&cms, None)
        .await
        .expect("another writer's update");

    let (attempts, stale) = (Cell::new(0), Cell::new(Some(stale)));
    retry_on_conflict(Backoff::DEFAULT_RETRY, || {
        attempts.set(attempts.get() + 1);
        increment(&cms, stale.take())
    })
    .await
    .expect("applied on the second attempt");
    assert_eq!(attempts.get(), 2, "the stale write conflicted once");
    assert_eq!(count(&cms).await, "2", "both increments kept");
}

#[tokio::test]
async fn concurrent_writers_each_land_every_increment() {
    let (cs, ns) = setup("retry-concurrent").await;
    let cms = cs.core_v1().config_maps(&ns);
    let counter = config_map("counter", &[], &[("count", "0")]);
    cms.create(&counter, &CreateOptions::default())
        .await
        .unwrap();
    let backoff = Backoff {
        steps: 50,
        ..Backoff::DEFAULT_RETRY
    };
    let writer = |cms: ResourceClient<ConfigMap>| async move {
        for _ in 0..10 {
            retry_on_conflict(backoff, || increment(&cms, None)).await?;
        }
        Ok::<_, Error>(())
    };
    let (a, b, c) = tokio::join!(
        writer(cms.clone()),
        writer(cms.clone()),
        writer(cms.clone())
    );
    (a.and(b).and(c)).expect("every increment applied within 50 attempts");
    assert_eq!(count(&cms).await, "30");
}

#[tokio::test]
async fn an_error_other_than_conflict_is_returned_without_retrying() {
    let (cs, ns) = setup("retry-not-found").await;
    let cms = cs.core_v1().config_maps(&ns);
    let attempts = Cell::new(0);
    let err = retry_on_conflict(Backoff::DEFAULT_RETRY, || {
        attempts.set(attempts.get() + 1);
        increment(&cms, None)
    })
    .await
    .expect_err("no such ConfigMap");
    assert!(err.is_not_found(), "{err}");
    assert_eq!(attempts.get(), 1);
}
