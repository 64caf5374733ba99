//! The shard hash, ranges and selector text against the API server's own rules
//! (`k8s.io/apimachinery/pkg/sharding`, `k8s.io/apiserver/pkg/sharding` v0.37.2).

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};

use super::*;
#[cfg(feature = "compact")]
use crate::cache::Compact;

const LOWER: &str = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";

#[test]
fn shard_hash_is_the_api_servers_fnv1a_64_of_the_utf8_bytes() {
    // Printed by a Go program running HashField's code (hash/fnv New64a, %016x).
    for (value, hash) in [
        ("", 0xcbf29ce484222325),
        ("a", 0xaf63dc4c8601ec8c),
        ("default", 0xebada5168620c5fe),
        ("kube-system", 0xdf65c7bc1d82b35e),
        ("0b7a3c1e-5f2d-4c8e-9a61-3d2f4e5b6c7d", 0xb3d422cfaf0797f0),
        ("héllo", 0xa35ff71f960240e0),
        ("foobar", 0x85944171f73967e8),
    ] {
        assert_eq!(shard_hash(value), hash, "{value:?}");
    }
}

#[test]
fn a_shard_selector_goes_with_lists_and_watches_as_shard_selector() {
    use kubekit_client::clientset::ListOptions;

    let selector = ShardSelector::uid(ShardRange::new(0, 1 << 63).unwrap());
    let opts = ListOptions::default().shard(selector);
    let expected = vec![("shardSelector", LOWER.to_string())];
    assert_eq!(opts.list_params(), expected);
    assert_eq!(opts.watch_params(), expected);
    let text = ListOptions::default().shard(LOWER);
    assert_eq!(text.shard_selector.as_deref(), Some(LOWER));
}

#[test]
fn selector_text_is_what_the_server_echoes_and_parses_back() {
    let lower = ShardSelector::uid(ShardRange::new(0, 1 << 63).unwrap());
    assert_eq!(lower.to_string(), LOWER);
    let both = ShardSelector::new(
        ShardKey::Namespace,
        [
            ShardRange::new(0xaa, 0xff).unwrap(),
            ShardRange::new(1 << 63, HASH_SPACE_END).unwrap(),
        ],
    )
    .unwrap();
    let text = "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff') \
                || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')";
    assert_eq!(both.to_string(), text);
    for selector in [lower, both] {
        assert_eq!(
            ShardSelector::parse(&selector.to_string()),
            Ok(selector.clone())
        );
        assert_eq!(selector.to_string().parse::<ShardSelector>(), Ok(selector));
    }
}

#[test]
fn parse_accepts_what_the_server_accepts() {
    let lower = ShardSelector::parse(LOWER).unwrap();
    for text in [
        "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')",
        "  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  '0x8000000000000000' )  ",
        r#"shardRange(object.metadata.uid, "0x0000000000000000", "0x8000000000000000")"#,
        "(shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'))",
    ] {
        assert_eq!(ShardSelector::parse(text).as_ref(), Ok(&lower), "{text}");
    }
    let three = ShardSelector::parse(
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000005') || \
         (shardRange(object.metadata.uid, '0x0000000000000005', '0x000000000000000a') || \
         shardRange(object.metadata.uid, '0x000000000000000a', '0x000000000000000f'))",
    )
    .unwrap();
    assert_eq!(three.ranges().len(), 3);
    assert_eq!(three.ranges()[2], ShardRange::new(10, 15).unwrap());
}

#[test]
fn parse_refuses_what_the_server_refuses_with_an_error() {
    // The failing cases of the server's parser_test.go, and a few more.
    for text in [
        "",
        "shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '8000000000000000')",
        "shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
        "shardRange(object.metadata.name, '0x00', '0x80')",
        "shardRange(object.metadata.labels, '0x00', '0x80')",
        "invalidFunc(object.metadata.uid, '0x00', '0x80')",
        "shardRange(object.metadata.uid, '0x000000000000000000', '0x80')",
        "shardRange(object.metadata.uid, '0x0g', '0x80')",
        "shardRange(object.metadata.uid, '0x0', '0x8') && shardRange(object.metadata.uid, '0x8', '0xf')",
        "shardRange(object.metadata.uid, 0, 8)",
        "object.metadata.uid > '0x0'",
        "shardRange(object.metadata.uid, '0x0')",
        "shardRange(object.metadata.uid, hex(0), '0x8')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
         shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
        "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0xff')",
        "shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
        "shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')",
        // Uppercase hex, 2^64 as a start, a bound past 2^64, trailing text, unterminated.
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000ABC')",
        "shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') x",
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x80000",
        "shardRange(, '0x0000000000000000', '0x8000000000000000')",
    ] {
        let err = ShardSelector::parse(text).expect_err(text);
        assert!(
            matches!(
                err,
                ShardSelectorError::Syntax { .. } | ShardSelectorError::EmptyRange { .. }
            ),
            "{text}: {err}"
        );
    }
    let err = ShardSelector::parse(
        "shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("start 0xffffffffffffffff must be less than its end 0x0000000000000000"),
        "{err}"
    );
}

#[test]
fn ranges_are_checked_when_built() {
    assert_eq!(
        ShardRange::new(5, 5),
        Err(ShardSelectorError::EmptyRange { start: 5, end: 5 })
    );
    assert!(ShardRange::new(6, 5).is_err());
    assert_eq!(
        ShardRange::new(0, HASH_SPACE_END + 1),
        Err(ShardSelectorError::EndPastSpace {
            end: HASH_SPACE_END + 1
        })
    );
    assert_eq!(ShardRange::new(0, HASH_SPACE_END), Ok(ShardRange::FULL));
    assert_eq!(
        ShardSelector::new(ShardKey::Uid, []),
        Err(ShardSelectorError::NoRanges)
    );
    let full = ShardRange::FULL;
    assert!(full.contains(0) && full.contains(u64::MAX));
    let r = ShardRange::new(10, 20).unwrap();
    assert!(!r.contains(9) && r.contains(10) && r.contains(19) && !r.contains(20));
}

#[test]
fn even_parts_cover_the_space_contiguously_without_overlap() {
    assert!(ShardRange::even_parts(0).is_empty());
    assert_eq!(ShardRange::even_parts(1), [ShardRange::FULL]);
    for count in [2, 3, 7, 64] {
        let parts = ShardRange::even_parts(count);
        assert_eq!(parts.len(), count as usize);
        assert_eq!(parts[0].start(), 0);
        assert_eq!(parts.last().unwrap().end(), HASH_SPACE_END);
        for pair in parts.windows(2) {
            assert_eq!(u128::from(pair[1].start()), pair[0].end());
        }
    }
    assert_eq!(ShardRange::even_parts(2)[1].start(), 1 << 63);
}

#[test]
fn matches_hashes_the_uid_or_the_namespace_of_typed_and_compact_objects() {
    let uid = "0b7a3c1e-5f2d-4c8e-9a61-3d2f4e5b6c7d"; // 0xb3d4…: upper half
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("default".into()); // 0xebad…: upper half
    pod.metadata.uid = Some(uid.into());
    let [lower, upper] = <[ShardRange; 2]>::try_from(ShardRange::even_parts(2)).unwrap();
    assert!(ShardSelector::uid(upper).matches(&pod));
    assert!(!ShardSelector::uid(lower).matches(&pod));
    assert!(ShardSelector::namespace(upper).matches(&pod));
    assert_eq!(ShardSelector::uid(lower).hash_of(&pod), shard_hash(uid));

    #[cfg(feature = "compact")]
    {
        let json = serde_json::to_vec(&pod).unwrap();
        let compact = Compact::<Pod>::from_json(&json).unwrap();
        assert!(ShardSelector::uid(upper).matches(&compact));
        assert_eq!(ShardKey::Namespace.value_of(&compact), "default");
    }

    // A cluster-scoped object's namespace hashes as "" (0xcbf2…: upper half).
    let ns = Namespace::default();
    assert_eq!(ShardKey::Namespace.value_of(&ns), "");
    assert!(ShardSelector::namespace(upper).matches(&ns));
    assert!(!ShardSelector::namespace(lower).matches(&ConfigMap::default()));
}

#[test]
fn a_controller_uid_selector_follows_the_controllers_uid_and_keeps_what_nobody_controls() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    let owner = "0b7a3c1e-5f2d-4c8e-9a61-3d2f4e5b6c7d"; // 0xb3d4…: upper half
    let reference = |uid: &str, controller| OwnerReference {
        uid: uid.into(),
        controller: Some(controller),
        ..OwnerReference::default()
    };
    let mut child = ConfigMap::default();
    child.metadata.uid = Some("a".into()); // 0xaf63…: upper half too, not the one hashed
    child.metadata.owner_references = Some(vec![reference("x", false), reference(owner, true)]);
    let [lower, upper] = <[ShardRange; 2]>::try_from(ShardRange::even_parts(2)).unwrap();
    let by_controller = |range| ShardSelector::new(ShardKey::ControllerUid, [range]).unwrap();
    assert_eq!(ShardKey::ControllerUid.value_of(&child), owner);
    assert!(by_controller(upper).matches(&child));
    assert!(!by_controller(lower).matches(&child));
    // The controller moved to the other half: so did the child.
    child.metadata.owner_references = Some(vec![reference("a-controller", true)]);
    assert_eq!(shard_hash("a-controller") >> 63, 0, "lower half");
    assert!(by_controller(lower).matches(&child) && !by_controller(upper).matches(&child));

    // Without a controller (none, or only non-controlling owners) it is in every shard.
    child.metadata.owner_references = Some(vec![reference(owner, false)]);
    assert_eq!(ShardKey::ControllerUid.value_of(&child), "");
    assert!(by_controller(lower).matches(&child) && by_controller(upper).matches(&child));

    // Its text is kubekit's own, parsed back; the server is never sent it.
    let text = by_controller(lower).to_string();
    assert!(
        text.starts_with("shardRange(controller.metadata.uid, "),
        "{text}"
    );
    assert_eq!(ShardSelector::parse(&text).unwrap(), by_controller(lower));
    assert!(!ShardKey::ControllerUid.server_side());
    assert!(ShardKey::Uid.server_side() && ShardKey::Namespace.server_side());
    let filter = ShardFilter::new(by_controller(lower), None);
    assert_eq!(filter.param(), None);
    let filter = ShardFilter::new(ShardSelector::uid(lower), None);
    assert!(
        filter
            .param()
            .is_some_and(|p| p.starts_with("shardRange(object.metadata.uid"))
    );
}

#[test]
fn the_filter_says_the_server_filters_only_when_it_echoed_the_same_selector() {
    let metrics = crate::cache::ReflectorMetrics::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let selector = ShardSelector::parse(LOWER).unwrap();
    let filter = ShardFilter::new(selector, Some(metrics.bind_shard("cms")));
    let gauge = |registry: &prometheus_client::registry::Registry| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text.lines()
            .find(|l| l.starts_with("reflector_shard_server_filtered{"))
            .map(str::to_string)
    };
    let spaced = "shardRange( object.metadata.uid, '0x0000000000000000', '0x8000000000000000' )";
    for (echo, server) in [
        (Some(LOWER), true),
        (None, false),
        (Some(spaced), true),
        (
            Some("shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')"),
            false,
        ),
        (Some("garbage"), false),
    ] {
        filter.listed("cms", echo);
        let want = format!(
            r#"reflector_shard_server_filtered{{name="cms"}} {}"#,
            u8::from(server)
        );
        assert_eq!(gauge(&registry), Some(want), "{echo:?}");
    }
}

#[test]
fn a_reflector_warns_of_each_unfiltered_list_reason_once_across_its_reshards() {
    use super::{NOT_ECHOED, OTHER_ECHOED, ShardWarnings};
    let warnings = std::sync::Arc::new(ShardWarnings::default());
    let [lower, upper] = <[ShardRange; 2]>::try_from(ShardRange::even_parts(2)).unwrap();
    let first = ShardFilter::new(ShardSelector::uid(lower), None).warning_once_with(&warnings);
    first.listed("cms", None);
    // The next shard's filter shares the warnings: the reason was given already.
    assert!(!warnings.first(NOT_ECHOED));
    assert!(
        warnings.first(OTHER_ECHOED),
        "another reason is still to be given"
    );
    let second = ShardFilter::new(ShardSelector::uid(upper), None).warning_once_with(&warnings);
    second.listed("cms", None);
    // A filter of its own warns afresh.
    let alone = ShardFilter::new(ShardSelector::uid(upper), None);
    assert!(alone.warnings.first(NOT_ECHOED));
}
