//! The codec on its own: objects of every field family survive encode → decode, the JSON
//! form's rules for zero values hold, and bad input is an error, never a panic.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, Pod, PodSpec, ResourceRequirements, Secret, Service,
    ServicePort, ServiceSpec,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSON, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    JSONSchemaPropsOrStringArray,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIResource, APIResourceList, FieldsV1, ManagedFieldsEntry, MicroTime, ObjectMeta, Time,
};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::{ByteString, List};
use kubekit_protobuf::runtime::{Encoder, Field, WireType};
use kubekit_protobuf::{Unknown, WatchEvent, decode, decode_message, encode, split_frame};
use proptest::prelude::*;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        labels: Some([("app".to_string(), "x".to_string())].into()),
        creation_timestamp: Some(Time(Timestamp::new(1_700_000_000, 0).unwrap())),
        generation: Some(3),
        managed_fields: Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            fields_v1: Some(FieldsV1(
                serde_json::json!({"f:metadata": {"f:labels": {".": {}}}}),
            )),
            time: Some(Time(Timestamp::new(1_700_000_001, 0).unwrap())),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn round_trip<T>(value: &T) -> T
where
    T: k8s_openapi::Resource + kubekit_protobuf::Message + PartialEq + std::fmt::Debug,
{
    let bytes = encode(value);
    let back: T = decode(&bytes).unwrap();
    assert_eq!(&back, value);
    back
}

#[test]
fn a_pod_with_maps_lists_quantities_and_int_or_strings_survives_a_round_trip() {
    let pod = Pod {
        metadata: meta("p"),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                args: Some(vec!["-a".into(), "ü".into()]),
                ports: Some(vec![ContainerPort {
                    container_port: 8080,
                    ..Default::default()
                }]),
                resources: Some(ResourceRequirements {
                    limits: Some([("cpu".to_string(), Quantity("500m".into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            termination_grace_period_seconds: Some(-1),
            host_network: Some(true),
            ..Default::default()
        }),
        status: None,
    };
    round_trip(&pod);
    let svc = Service {
        metadata: meta("s"),
        spec: Some(ServiceSpec {
            ports: Some(vec![
                ServicePort {
                    port: 80,
                    target_port: Some(IntOrString::Int(8080)),
                    ..Default::default()
                },
                ServicePort {
                    port: 81,
                    target_port: Some(IntOrString::String("http".into())),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        status: None,
    };
    round_trip(&svc);
}

#[test]
fn bytes_micro_times_raw_extensions_and_wrapped_lists_survive_a_round_trip() {
    round_trip(&Secret {
        metadata: meta("s"),
        data: Some([("k".to_string(), ByteString(vec![0, 255, 10]))].into()),
        ..Default::default()
    });
    round_trip(&Lease {
        metadata: meta("l"),
        spec: Some(LeaseSpec {
            renew_time: Some(MicroTime(
                Timestamp::new(1_700_000_000, 123_456_000).unwrap(),
            )),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    });
    round_trip(&ControllerRevision {
        metadata: meta("r"),
        data: RawExtension(serde_json::json!({"spec": {"replicas": 2}})),
        revision: Some(4),
    });
    round_trip(&SubjectAccessReview {
        metadata: ObjectMeta::default(),
        spec: SubjectAccessReviewSpec {
            extra: Some([("scopes".to_string(), vec!["a".to_string(), "b".to_string()])].into()),
            user: Some("u".into()),
            ..Default::default()
        },
        status: None,
    });
    let list = APIResourceList {
        group_version: "v1".into(),
        resources: vec![APIResource {
            name: "pods".into(),
            verbs: vec!["get".into(), "list".into()],
            namespaced: true,
            kind: "Pod".into(),
            ..Default::default()
        }],
    };
    let mut e = Encoder::default();
    kubekit_protobuf::Message::encode_fields(&list, &mut e);
    assert_eq!(
        decode_message::<APIResourceList>(&e.into_bytes()).unwrap(),
        list
    );
}

#[test]
fn a_crd_schema_with_every_union_survives_a_round_trip() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let leaf = JSONSchemaProps {
        type_: Some("string".into()),
        ..Default::default()
    };
    let schema = JSONSchemaProps {
        type_: Some("object".into()),
        properties: Some(
            [
                (
                    "list".to_string(),
                    JSONSchemaProps {
                        items: Some(JSONSchemaPropsOrArray::Schema(Box::new(leaf.clone()))),
                        ..Default::default()
                    },
                ),
                (
                    "tuple".to_string(),
                    JSONSchemaProps {
                        items: Some(JSONSchemaPropsOrArray::Schemas(vec![leaf.clone()])),
                        ..Default::default()
                    },
                ),
                (
                    "open".to_string(),
                    JSONSchemaProps {
                        additional_properties: Some(JSONSchemaPropsOrBool::Bool(true)),
                        ..Default::default()
                    },
                ),
                (
                    "typed".to_string(),
                    JSONSchemaProps {
                        additional_properties: Some(JSONSchemaPropsOrBool::Schema(Box::new(
                            leaf.clone(),
                        ))),
                        ..Default::default()
                    },
                ),
                (
                    "deps".to_string(),
                    JSONSchemaProps {
                        dependencies: Some(
                            [(
                                "a".to_string(),
                                JSONSchemaPropsOrStringArray::Strings(vec!["b".into()]),
                            )]
                            .into(),
                        ),
                        ..Default::default()
                    },
                ),
                (
                    "defaulted".to_string(),
                    JSONSchemaProps {
                        default: Some(JSON(serde_json::json!({"x": [1, "y", null]}))),
                        enum_: Some(vec![
                            JSON(serde_json::json!("a")),
                            JSON(serde_json::json!(2)),
                        ]),
                        not: Some(Box::new(leaf)),
                        maximum: Some(2.5),
                        x_kubernetes_preserve_unknown_fields: Some(true),
                        ..Default::default()
                    },
                ),
            ]
            .into(),
        ),
        ..Default::default()
    };
    let mut crd = CustomResourceDefinition {
        metadata: meta("apps.example.com"),
        ..Default::default()
    };
    crd.spec.group = "example.com".into();
    crd.spec.versions = vec![Default::default()];
    crd.spec.versions[0].name = "v1".into();
    crd.spec.versions[0].schema = Some(Default::default());
    crd.spec.versions[0]
        .schema
        .as_mut()
        .unwrap()
        .open_api_v3_schema = Some(schema);
    round_trip(&crd);
}

#[test]
fn a_list_is_its_items_and_metadata() {
    let list = List::<ConfigMap> {
        items: vec![
            ConfigMap {
                metadata: meta("a"),
                ..Default::default()
            },
            ConfigMap {
                metadata: meta("b"),
                ..Default::default()
            },
        ],
        metadata: Default::default(),
    };
    let bytes = encode(&list);
    let unknown = Unknown::read(&bytes).unwrap();
    assert_eq!(
        (unknown.api_version.as_str(), unknown.kind.as_str()),
        ("v1", "ConfigMapList")
    );
    assert_eq!(decode::<List<ConfigMap>>(&bytes).unwrap(), list);
}

/// A ConfigMap message with one field (metadata = 1, holding `fields`).
fn object_meta_wire(fields: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    let mut e = Encoder::default();
    e.key(1, WireType::Len);
    e.nested(fields);
    e.into_bytes()
}

#[test]
fn zero_values_of_fields_json_omits_are_none_and_pointers_keep_theirs() {
    // ObjectMeta.generation is an int64 with omitempty (not a pointer): zero is None.
    // deletionGracePeriodSeconds is a *int64: zero is Some(0).
    let raw = object_meta_wire(|e| {
        Field::encode(&String::new(), 2, e); // generateName ""
        Field::encode(&0i64, 7, e); // generation 0
        Field::encode(&0i64, 10, e); // deletionGracePeriodSeconds 0
    });
    let cm: ConfigMap = decode_message(&raw).unwrap();
    assert_eq!(cm.metadata.generate_name, None);
    assert_eq!(cm.metadata.generation, None);
    assert_eq!(cm.metadata.deletion_grace_period_seconds, Some(0));
}

#[test]
fn a_list_of_scalars_reads_packed_or_not_and_a_list_of_messages_is_never_read_as_packed() {
    // Pod.spec (2) → PodSpec.securityContext (14) → supplementalGroups (4, int64), as Go
    // writes it (a value per key) and packed (one length-delimited record).
    let pod_with_groups = |groups: &dyn Fn(&mut Encoder)| {
        let mut e = Encoder::default();
        e.key(2, WireType::Len);
        e.nested(|spec| {
            spec.key(14, WireType::Len);
            spec.nested(groups);
        });
        e.into_bytes()
    };
    let unpacked = pod_with_groups(&|e| {
        for g in [1i64, 2, 300] {
            Field::encode(&g, 4, e);
        }
    });
    let packed = pod_with_groups(&|e| {
        e.key(4, WireType::Len);
        e.nested(|e| [1u64, 2, 300].into_iter().for_each(|g| e.varint(g)));
    });
    for raw in [unpacked, packed] {
        let pod: Pod = decode_message(&raw).unwrap();
        let groups = pod
            .spec
            .unwrap()
            .security_context
            .unwrap()
            .supplemental_groups;
        assert_eq!(groups, Some(vec![1, 2, 300]));
    }
    // PodSpec.containers (2) is a list of messages: a record holding what would be a
    // packed list of them is one container, whose bytes must be a Container.
    let mut e = Encoder::default();
    e.key(2, WireType::Len);
    e.nested(|spec| {
        spec.key(2, WireType::Len);
        spec.nested(|c| Field::encode(&"app".to_string(), 1, c));
    });
    let pod: Pod = decode_message(&e.into_bytes()).unwrap();
    assert_eq!(pod.spec.unwrap().containers[0].name, "app");
}

#[test]
fn a_zero_time_is_none_and_time_keeps_whole_seconds() {
    let raw = object_meta_wire(|e| {
        e.key(8, WireType::Len); // creationTimestamp: an empty Time, Go's zero
        e.nested(|_| {});
        e.key(9, WireType::Len); // deletionTimestamp with nanos, which Time drops
        e.nested(|e| {
            Field::encode(&1_700_000_000i64, 1, e);
            Field::encode(&5i32, 2, e);
        });
    });
    let cm: ConfigMap = decode_message(&raw).unwrap();
    assert_eq!(cm.metadata.creation_timestamp, None);
    assert_eq!(
        cm.metadata.deletion_timestamp,
        Some(Time(Timestamp::new(1_700_000_000, 0).unwrap()))
    );
}

#[test]
fn invalid_utf8_in_a_string_becomes_the_replacement_character() {
    let raw = object_meta_wire(|e| {
        e.key(1, WireType::Len);
        e.bytes(b"a\xffb");
    });
    let cm: ConfigMap = decode_message(&raw).unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("a\u{fffd}b"));
}

#[test]
fn an_absurd_length_prefix_is_an_error_naming_the_field_not_an_allocation() {
    let mut e = Encoder::default();
    e.key(1, WireType::Len);
    e.varint(u64::MAX >> 1);
    let err = decode_message::<ConfigMap>(&e.into_bytes()).unwrap_err();
    assert!(
        err.to_string()
            .contains("field 1 of k8s.io.api.core.v1.ConfigMap"),
        "{err}"
    );
    assert!(err.to_string().contains("runs past the end"), "{err}");
}

#[test]
fn nesting_deeper_than_the_bound_is_an_error() {
    // JSONSchemaProps.not (field 28 in the proto) nests a schema in a schema.
    let mut inner = Vec::new();
    for _ in 0..200 {
        let mut e = Encoder::default();
        e.key(28, WireType::Len);
        e.bytes(&inner);
        inner = e.into_bytes();
    }
    let err = decode_message::<JSONSchemaProps>(&inner).unwrap_err();
    assert!(err.message().contains("nest deeper than"), "{err}");
}

#[test]
fn an_envelope_of_another_kind_or_without_magic_is_refused_clearly() {
    let bytes = encode(&Secret::default());
    let err = decode::<ConfigMap>(&bytes).unwrap_err();
    assert!(
        err.to_string()
            .contains("expected v1 ConfigMap, the server sent v1 Secret"),
        "{err}"
    );
    let err = decode::<ConfigMap>(b"{\"kind\":\"ConfigMap\"}").unwrap_err();
    assert!(
        err.to_string().contains("does not start with k8s\\0"),
        "{err}"
    );
}

#[test]
fn watch_frames_split_at_their_length_and_carry_an_enveloped_object() {
    let cm = ConfigMap {
        metadata: meta("w"),
        data: Some(BTreeMap::new()),
        ..Default::default()
    };
    let object = encode(&cm);
    let mut stream = Vec::new();
    WatchEvent {
        event_type: "ADDED".into(),
        object: &object,
    }
    .write_frame(&mut stream);
    WatchEvent {
        event_type: "DELETED".into(),
        object: &object,
    }
    .write_frame(&mut stream);
    let (first, rest) = split_frame(&stream, 1 << 20).unwrap().unwrap();
    let event = WatchEvent::read(first).unwrap();
    assert_eq!(event.event_type, "ADDED");
    let back: ConfigMap = decode(event.object).unwrap();
    assert_eq!(back.metadata, cm.metadata);
    assert!(
        split_frame(&rest[..rest.len() - 1], 1 << 20)
            .unwrap()
            .is_none(),
        "a partial frame waits"
    );
    assert!(
        split_frame(rest, 8)
            .unwrap_err()
            .to_string()
            .contains("passes the limit")
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_message::<Pod>(&bytes);
        let _ = decode_message::<JSONSchemaProps>(&bytes);
        let _ = decode::<List<Pod>>(&bytes);
        let _ = WatchEvent::read(&bytes);
    }

    #[test]
    fn a_valid_pod_with_bytes_flipped_never_panics(pos in 0usize..4096, byte in any::<u8>()) {
        let pod = Pod { metadata: meta("p"), spec: Some(PodSpec { containers: vec![Container { name: "c".into(), ..Default::default() }], ..Default::default() }), status: None };
        let mut bytes = encode(&pod);
        let pos = pos % bytes.len();
        bytes[pos] = byte;
        let _ = decode::<Pod>(&bytes);
    }
}

#[test]
fn a_decoder_told_to_skip_managed_fields_leaves_them_out_and_keeps_the_rest() {
    let cm = ConfigMap {
        metadata: meta("m"),
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    };
    let raw = Unknown::read(&encode(&cm)).unwrap().raw.to_vec();
    let options = kubekit_protobuf::DecodeOptions {
        skip_managed_fields: true,
    };
    let skipped: ConfigMap = kubekit_protobuf::decode_message_with(&raw, options).unwrap();
    assert_eq!(skipped.metadata.managed_fields, None);
    let mut want = cm.clone();
    want.metadata.managed_fields = None;
    assert_eq!(skipped, want);
    let codec = kubekit_protobuf::codec::<ConfigMap>().unwrap();
    assert_eq!(
        codec
            .decode_message_with::<ConfigMap>(&raw, options)
            .unwrap(),
        want
    );
    assert_eq!(codec.decode_message::<ConfigMap>(&raw).unwrap(), cm);
}

#[test]
fn repeated_fields_are_allocated_once_at_their_length() {
    let container = |name: &str| Container {
        name: name.into(),
        args: Some(vec!["a".into(), "b".into(), "c".into()]),
        ports: Some(vec![ContainerPort {
            container_port: 80,
            ..Default::default()
        }]),
        ..Default::default()
    };
    let pod = Pod {
        metadata: meta("p"),
        spec: Some(PodSpec {
            containers: vec![container("a"), container("b"), container("c")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let decoded: Pod = decode(&encode(&pod)).unwrap();
    assert_eq!(decoded, pod);
    let containers = &decoded.spec.as_ref().unwrap().containers;
    assert_eq!(containers.capacity(), 3, "three containers, room for three");
    for c in containers {
        assert_eq!(c.args.as_ref().unwrap().capacity(), 3);
        assert_eq!(c.ports.as_ref().unwrap().capacity(), 1);
    }
}
