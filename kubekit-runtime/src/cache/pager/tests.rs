use std::sync::Arc;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::test_support::{Fake, Script, status};
use kubekit_client::clientset::ResourceVersionMatch;

fn names(items: &[ConfigMap]) -> Vec<String> {
    items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect()
}

async fn collect(pager: &ListPager<ConfigMap>, opts: ListOptions) -> Vec<Result<Page<ConfigMap>>> {
    pager.pages(opts).collect().await
}

fn three_pages(script: &Script) {
    script.list("10", Some("c1"), &[("a", "1"), ("b", "2")]);
    script.list("10", Some("c2"), &[("c", "3"), ("d", "4")]);
    script.list("10", None, &[("e", "5")]);
}

#[tokio::test]
async fn pages_follow_continue_tokens_with_the_default_page_size() {
    let script = Arc::new(Script::default());
    three_pages(&script);
    let pager = ListPager::new(Fake(script.clone()));
    let pages: Vec<_> = collect(&pager, ListOptions::default().labels("app=web"))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(pages.len(), 3);
    assert_eq!(names(&pages[0].items), ["a", "b"]);
    assert_eq!(names(&pages[2].items), ["e"]);
    assert!(
        pages
            .iter()
            .all(|p| !p.restarted && p.resource_version() == "10")
    );
    let calls = script.calls();
    assert_eq!(calls.len(), 3);
    let tokens: Vec<_> = calls
        .iter()
        .map(|(_, o)| o.continue_token.clone())
        .collect();
    assert_eq!(tokens, [None, Some("c1".into()), Some("c2".into())]);
    for (_, o) in &calls {
        assert_eq!(o.limit, Some(DEFAULT_PAGE_SIZE));
        assert_eq!(o.label_selector.as_deref(), Some("app=web"));
    }
}

#[tokio::test]
async fn version_goes_on_the_first_request_only_and_the_callers_limit_wins() {
    let script = Arc::new(Script::default());
    three_pages(&script);
    let pager = ListPager::new(Fake(script.clone())).page_size(7);
    let opts = ListOptions {
        limit: Some(2),
        resource_version: Some("5".into()),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        ..Default::default()
    };
    let list = pager.list(opts).await.unwrap();
    assert_eq!(names(&list.items), ["a", "b", "c", "d", "e"]);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("10"));
    assert_eq!(list.metadata.continue_, None);
    let calls = script.calls();
    assert_eq!(calls[0].1.resource_version.as_deref(), Some("5"));
    assert_eq!(
        calls[0].1.resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
    for (_, o) in &calls[1..] {
        assert_eq!(
            o.resource_version, None,
            "a continue request carries no version"
        );
        assert_eq!(o.resource_version_match, None);
        assert!(o.continue_token.is_some());
    }
    assert!(calls.iter().all(|(_, o)| o.limit == Some(2)));
}

#[tokio::test]
async fn page_size_zero_lists_in_one_request() {
    let script = Arc::new(Script::default());
    script.list("10", None, &[("a", "1")]);
    let pager = ListPager::new(Fake(script.clone())).page_size(0);
    let list = pager.list(ListOptions::default()).await.unwrap();
    assert_eq!(names(&list.items), ["a"]);
    assert_eq!(script.calls()[0].1.limit, None);
}

#[tokio::test]
async fn an_expired_continue_token_falls_back_to_a_full_list_marked_restarted() {
    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1"), ("b", "2")]);
    script.list_error(status(410, "Expired"));
    script.list("20", None, &[("b", "2"), ("c", "3"), ("d", "4")]);
    let pager = ListPager::new(Fake(script.clone()));
    let opts = ListOptions {
        resource_version: Some("0".into()),
        ..Default::default()
    };
    let pages: Vec<_> = collect(&pager, opts)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(pages.len(), 2);
    assert!(!pages[0].restarted);
    assert!(pages[1].restarted);
    assert_eq!(names(&pages[1].items), ["b", "c", "d"]);
    assert_eq!(pages[1].resource_version(), "20");
    let calls = script.calls();
    assert_eq!(calls.len(), 3);
    let full = &calls[2].1;
    assert_eq!(full.limit, None, "the full list has no limit");
    assert_eq!(full.continue_token, None);
    assert_eq!(
        full.resource_version.as_deref(),
        Some("0"),
        "at the caller's version"
    );
}

#[tokio::test]
async fn list_after_an_expiry_is_the_full_list_alone() {
    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1"), ("b", "2")]);
    script.list_error(status(410, "Expired"));
    script.list("20", None, &[("b", "2"), ("c", "3")]);
    let list = ListPager::new(Fake(script.clone()))
        .list(ListOptions::default())
        .await
        .unwrap();
    assert_eq!(names(&list.items), ["b", "c"]);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("20"));
}

#[tokio::test]
async fn with_the_fallback_off_an_expired_token_ends_the_stream_with_the_error() {
    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1")]);
    script.list_error(status(410, "Expired"));
    let pager = ListPager::new(Fake(script.clone())).full_list_if_expired(false);
    let pages = collect(&pager, ListOptions::default()).await;
    assert_eq!(pages.len(), 2);
    assert!(pages[0].is_ok());
    assert!(pages[1].as_ref().unwrap_err().is_resource_expired());
    assert_eq!(script.calls().len(), 2);
    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1")]);
    script.list_error(status(410, "Expired"));
    let e = ListPager::new(Fake(script))
        .full_list_if_expired(false)
        .list(ListOptions::default())
        .await
        .unwrap_err();
    assert!(e.is_resource_expired());
}

#[tokio::test]
async fn a_410_on_the_first_request_or_on_the_full_list_is_an_error() {
    let script = Arc::new(Script::default());
    script.list_error(status(410, "Expired"));
    let pager = ListPager::new(Fake(script.clone()));
    let e = pager.list(ListOptions::default()).await.unwrap_err();
    assert!(e.is_resource_expired());
    assert_eq!(
        script.calls().len(),
        1,
        "no fallback without a continue token"
    );

    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1")]);
    script.list_error(status(410, "Expired"));
    script.list_error(status(500, "InternalError"));
    let pages = collect(
        &ListPager::new(Fake(script.clone())),
        ListOptions::default(),
    )
    .await;
    assert_eq!(pages.len(), 2);
    assert_eq!(
        pages[1].as_ref().unwrap_err().status().unwrap().code,
        Some(500)
    );
    assert_eq!(script.calls().len(), 3);
}

#[tokio::test]
async fn other_errors_end_the_stream_without_a_fallback() {
    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1")]);
    script.list_error(status(403, "Forbidden"));
    let pages = collect(
        &ListPager::new(Fake(script.clone())),
        ListOptions::default(),
    )
    .await;
    assert_eq!(pages.len(), 2);
    assert!(pages[1].as_ref().unwrap_err().is_forbidden());
    assert_eq!(script.calls().len(), 2);
}

#[tokio::test]
async fn each_item_visits_in_order_and_stops_at_the_first_error() {
    let script = Arc::new(Script::default());
    three_pages(&script);
    let pager = ListPager::new(Fake(script.clone()));
    let mut seen = Vec::new();
    let r: Result<(), Error> = pager
        .each_item(ListOptions::default(), |c: ConfigMap| {
            let name = c.metadata.name.unwrap();
            if name == "c" {
                return Err(Error::Request("stop at c".into()));
            }
            seen.push(name);
            Ok(())
        })
        .await;
    assert_eq!(r.unwrap_err().to_string(), "invalid request: stop at c");
    assert_eq!(seen, ["a", "b"]);
    assert_eq!(script.calls().len(), 2, "no page asked for after the error");

    let script = Arc::new(Script::default());
    three_pages(&script);
    let mut all = Vec::new();
    ListPager::new(Fake(script))
        .each_item_async(ListOptions::default(), |c: ConfigMap| {
            all.push(c.metadata.name.unwrap());
            async { Ok::<_, Error>(()) }
        })
        .await
        .unwrap();
    assert_eq!(all, ["a", "b", "c", "d", "e"]);
}

#[tokio::test]
async fn each_item_never_restarts() {
    let script = Arc::new(Script::default());
    script.list("10", Some("c1"), &[("a", "1")]);
    script.list_error(status(410, "Expired"));
    let mut seen = Vec::new();
    let e = ListPager::new(Fake(script.clone()))
        .each_item(ListOptions::default(), |c: ConfigMap| {
            seen.push(c.metadata.name.unwrap());
            Ok::<_, Error>(())
        })
        .await
        .unwrap_err();
    assert!(e.is_resource_expired());
    assert_eq!(seen, ["a"]);
    assert_eq!(script.calls().len(), 2);
}

#[tokio::test]
async fn a_closure_lists_pages_like_simple_page_func() {
    let script = Arc::new(Script::default());
    three_pages(&script);
    let lw = Arc::new(Fake(script.clone()));
    let pager = ListPager::from_fn(move |opts| {
        let lw = lw.clone();
        async move { lw.list(opts).await }
    })
    .page_size(2);
    let list = pager.list(ListOptions::default()).await.unwrap();
    assert_eq!(list.items.len(), 5);
    assert!(script.calls().iter().all(|(_, o)| o.limit == Some(2)));
}
