//! Bounded fuzzing (proptest) of what kubekit reads from outside: the watch decoder and the
//! list decoder (JSON and protobuf), label selectors and configurations built from
//! kubeconfig input.
//!
//! Each target runs [`CASES`] generated inputs per `cargo test` (split between its
//! properties), in a debug build under 30 s per target on two cores; set
//! `KUBEKIT_FUZZ_CASES` to run another number per property (a nightly job may run
//! millions). Failures are not persisted to files: proptest prints the shrunk input.
//! Run them alone with `cargo test -p kubekit --lib fuzz::`.
//!
//! No input may panic, and each property states what the result must be. Linear time is
//! checked by counting, not timing: the watch decoder searches each byte for a newline
//! once ([`WatchDecoder::unscanned`] is 0 whenever it waits for more), and
//! [`worst_inputs_take_linear_time`] (ignored: it times, and timed assertions have no
//! place in the unit tests) compares a 16x input against its baseline.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};

use crate::labels::Selector;
use crate::rest::{Error, WatchDecoder, WatchEvent, decode_event, decode_list};

/// Inputs per target and run.
const CASES: u32 = 100_000;

/// A runner of `cases` inputs (or `KUBEKIT_FUZZ_CASES`), without failure files.
fn runner(cases: u32) -> TestRunner {
    let cases = std::env::var("KUBEKIT_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    })
}

/// Runs `test` over `cases` inputs of `strategy`; a failure panics with the shrunk input.
fn fuzz<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    if let Err(e) = runner(cases).run(&strategy, test) {
        panic!("{e}");
    }
}

/// Pieces that watch streams are made of, valid and not, so that random concatenations
/// reach deep into the decoder rather than failing at the first byte.
fn watch_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => "[a-z0-9]{1,8}".prop_map(|name| format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"{name}","resourceVersion":"5"}}}}}}"#
        ).into_bytes()),
        1 => Just(br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#.to_vec()),
        1 => Just(br#"{"type":"ERROR","object":{"code":410,"reason":"Expired"}}"#.to_vec()),
        1 => Just(br#"{"object":{"metadata":{"name":"late"}},"type":"DELETED"}"#.to_vec()),
        1 => Just(br#"{"type":"RENAMED","object":{}}"#.to_vec()),
        4 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        2 => proptest::collection::vec(
            prop_oneof![Just(b'{'), Just(b'}'), Just(b'"'), Just(b':'), Just(b','), Just(b'['),
                        Just(b'\\'), Just(b' '), Just(b'\n'), any::<u8>()],
            0..24,
        ),
        1 => Just(br#"{"type":"MODIFIED","object":"#.to_vec()),
        2 => Just(br#"{"type":"ADDED","object":{"metadata":{"name":"m","managedFields":[{"manager":"k","fieldsV1":{"f:data":{"f:}":{}}}}],"uid":"u"},"data":{"k":"v"}}}"#.to_vec()),
        1 => Just(br#"{"type":"MODIFIED","object":{"metadata":{"managedFields":"#.to_vec()),
    ]
}

fn watch_stream() -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
    (
        proptest::collection::vec(watch_piece(), 0..12).prop_map(|p| p.concat()),
        proptest::collection::vec(1usize..48, 1..8),
    )
}

/// What an event decoded to, for comparing two decodings.
fn outcome(event: Result<WatchEvent<ConfigMap>, Error>) -> Result<&'static str, String> {
    event.map(|e| e.type_name()).map_err(|e| match e {
        Error::Decode { .. } => "decode".into(),
        other => other.to_string(),
    })
}

/// Feeds `stream` in chunks of the sizes in `chunks` (cycled) and collects what comes out,
/// checking after every wait that no byte will be searched twice.
fn decode_in_chunks(
    mut decoder: WatchDecoder<ConfigMap>,
    stream: &[u8],
    chunks: &[usize],
) -> Result<Vec<Result<&'static str, String>>, TestCaseError> {
    let mut out = Vec::new();
    let mut rest = stream;
    for size in chunks.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (chunk, after) = rest.split_at((*size).min(rest.len()));
        rest = after;
        decoder.feed(chunk);
        while let Some(event) = decoder.next_event() {
            out.push(outcome(event));
        }
        prop_assert_eq!(
            decoder.unscanned(),
            0,
            "waiting with bytes not yet searched"
        );
    }
    out.extend(decoder.finish().map(outcome));
    Ok(out)
}

#[test]
fn fuzz_watch_decoder_gives_what_whole_lines_give_in_any_chunking() {
    fuzz(CASES / 2, watch_stream(), |(stream, chunks)| {
        let got = decode_in_chunks(WatchDecoder::new("cms"), &stream, &chunks)?;
        // The oracle: each line decoded whole; the last one (no newline) by `finish`.
        let mut lines: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
        let last = lines.pop().unwrap_or_default();
        let mut want: Vec<_> = lines
            .into_iter()
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .map(|l| outcome(decode_event(l, "cms")))
            .collect();
        if !last.iter().all(u8::is_ascii_whitespace) {
            want.push(outcome(decode_event(last, "cms")));
        }
        prop_assert_eq!(got, want);
        Ok(())
    });
}

#[test]
fn fuzz_json_events_cut_of_managed_fields_decode_as_the_whole_line_with_them_dropped() {
    fuzz(CASES / 4, watch_stream(), |(stream, _)| {
        for line in stream.split(|b| *b == b'\n') {
            let cut = crate::rest::json::without_managed_fields(line, &[b"object"]);
            let whole = decode_event::<ConfigMap>(line, "cms");
            let without = decode_event::<ConfigMap>(&cut, "cms");
            match (whole, without) {
                (Ok(mut whole), Ok(without)) => {
                    if let WatchEvent::Added(cm)
                    | WatchEvent::Modified(cm)
                    | WatchEvent::Deleted(cm) = &mut whole
                    {
                        cm.metadata.managed_fields = None;
                    }
                    prop_assert_eq!(format!("{whole:?}"), format!("{without:?}"));
                }
                (Ok(_), Err(e)) => prop_assert!(false, "the cut line fails: {e}"),
                // Malformed managedFields are cut without being read.
                (Err(_), _) => {}
            }
        }
        Ok(())
    });
}

#[test]
fn fuzz_watch_decoder_holds_at_most_its_limit_and_stops_after_a_line_too_long() {
    let input = (watch_stream(), 1usize..96);
    fuzz(CASES / 2, input, |((stream, chunks), limit)| {
        let mut d = WatchDecoder::<ConfigMap>::new("cms").with_max_event_bytes(limit);
        let mut too_large = false;
        let mut rest = &stream[..];
        for size in chunks.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, after) = rest.split_at((*size).min(rest.len()));
            rest = after;
            d.feed(chunk);
            while let Some(event) = d.next_event() {
                prop_assert!(!too_large, "an event after the line too long");
                too_large = matches!(event, Err(Error::TooLarge { .. }));
            }
            prop_assert!(
                d.buffered() <= limit + chunk.len(),
                "{} buffered",
                d.buffered()
            );
            prop_assert_eq!(d.unscanned(), 0);
        }
        if too_large {
            prop_assert!(d.is_failed() && d.finish().is_none());
        }
        Ok(())
    });
}

/// A list body: items valid or not, and how it is damaged, if at all.
#[derive(Debug, Clone)]
enum Item {
    Valid(String),
    Invalid(&'static str),
}

fn list_body() -> impl Strategy<Value = (Vec<Item>, Option<usize>)> {
    let item = prop_oneof![
        3 => (0u32..1_000_000).prop_map(|n| Item::Valid(format!("n{n}"))),
        1 => prop_oneof![
            Just(r#"{"metadata":{"name":5}}"#),
            Just(r#"{"data":{"k":1}}"#),
            Just(r#""a string""#),
            Just("[1,2]"),
            Just("null"),
            Just(r#"{"metadata":{"labels":{"a":["b"]}}}"#),
        ]
        .prop_map(Item::Invalid),
    ];
    (
        proptest::collection::vec(item, 0..16),
        proptest::option::weighted(0.3, any::<usize>()),
    )
}

fn render(items: &[Item]) -> String {
    let items: Vec<String> = items
        .iter()
        .map(|i| match i {
            Item::Valid(name) => {
                format!(r#"{{"metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#)
            }
            Item::Invalid(raw) => (*raw).to_string(),
        })
        .collect();
    format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"7"}},"items":[{}]}}"#,
        items.join(",")
    )
}

#[test]
fn fuzz_list_decoder_keeps_valid_items_in_order_and_counts_the_skipped() {
    fuzz(CASES * 9 / 10, list_body(), |(items, cut)| {
        let body = render(&items);
        match cut.map(|c| c % body.len()) {
            // Cut anywhere before its end, a list is not a list.
            Some(cut) => {
                prop_assert!(decode_list::<ConfigMap>(&body.as_bytes()[..cut], "cms").is_err())
            }
            None => {
                let list = decode_list::<ConfigMap>(body.as_bytes(), "cms")
                    .map_err(|e| TestCaseError::fail(format!("a valid list refused: {e}")))?;
                let want: Vec<_> = items
                    .iter()
                    .filter_map(|i| match i {
                        Item::Valid(name) => Some(name.as_str()),
                        Item::Invalid(_) => None,
                    })
                    .collect();
                let got: Vec<_> = list
                    .items
                    .iter()
                    .filter_map(|c| c.metadata.name.as_deref())
                    .collect();
                prop_assert_eq!(got, want.clone());
                prop_assert_eq!(list.skipped.len(), items.len() - want.len());
                prop_assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
            }
        }
        Ok(())
    });
}

/// Pieces of protobuf watch streams: whole frames of every event type (and of an unknown
/// one), frames cut short or with absurd lengths, and random bytes.
fn protobuf_watch_piece() -> impl Strategy<Value = Vec<u8>> {
    fn frame(kind: &str, object: Vec<u8>) -> Vec<u8> {
        let mut out = Vec::new();
        kubekit_protobuf::WatchEvent {
            event_type: kind.into(),
            object: &object,
        }
        .write_frame(&mut out);
        out
    }
    let cm = |name: String| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name);
        cm.metadata.resource_version = Some("5".into());
        kubekit_protobuf::encode(&cm)
    };
    let status = kubekit_protobuf::encode_as(
        "v1",
        "Status",
        &k8s_openapi::apimachinery::pkg::apis::meta::v1::Status::default(),
    );
    prop_oneof![
        3 => "[a-z0-9]{1,8}".prop_map(move |name| frame("ADDED", cm(name))),
        1 => Just(frame("BOOKMARK", kubekit_protobuf::encode(&ConfigMap::default()))),
        1 => Just(frame("ERROR", status)),
        1 => Just(frame("RENAMED", Vec::new())),
        1 => "[a-z]{1,4}".prop_map(move |name| { let mut f = frame("DELETED", cm(name)); f.truncate(f.len() / 2); f }),
        1 => Just(vec![0xff, 0xff, 0xff, 0xff]),
        2 => proptest::collection::vec(any::<u8>(), 0..24),
    ]
}

#[test]
fn fuzz_protobuf_watch_decoder_gives_what_the_whole_stream_gives_in_any_chunking() {
    let stream = (
        proptest::collection::vec(protobuf_watch_piece(), 0..10).prop_map(|p| p.concat()),
        proptest::collection::vec(1usize..48, 1..8),
    );
    fuzz(CASES / 4, stream, |(stream, chunks)| {
        let decoder = || WatchDecoder::<ConfigMap>::protobuf("cms").with_max_event_bytes(1 << 16);
        let got = decode_in_chunks(decoder(), &stream, &chunks)?;
        let want = decode_in_chunks(decoder(), &stream, &[stream.len().max(1)])?;
        prop_assert_eq!(got, want);
        Ok(())
    });
}

#[test]
fn fuzz_protobuf_list_decoder_refuses_arbitrary_bytes_without_panicking() {
    let body = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        // An envelope naming the right kind, so that the bytes after it reach the items.
        proptest::collection::vec(any::<u8>(), 0..256).prop_map(|tail| {
            let list: k8s_openapi::List<ConfigMap> = k8s_openapi::List {
                items: Vec::new(),
                metadata: Default::default(),
            };
            let mut body = kubekit_protobuf::encode(&list);
            body.extend(tail);
            body
        }),
    ];
    fuzz(CASES / 10, body, |bytes| {
        if let Ok(list) = crate::rest::protobuf::decode_protobuf_list::<ConfigMap>(
            &bytes,
            "cms",
            Default::default(),
        ) {
            prop_assert!(list.items.len() + list.skipped.len() <= bytes.len());
        }
        Ok(())
    });
}

#[test]
fn fuzz_list_decoder_refuses_arbitrary_bytes_without_panicking() {
    fuzz(
        CASES / 10,
        proptest::collection::vec(any::<u8>(), 0..256),
        |bytes| {
            if let Ok(list) = decode_list::<ConfigMap>(&bytes, "cms") {
                prop_assert!(list.items.len() + list.skipped.len() <= bytes.len());
            }
            Ok(())
        },
    );
}

fn selector_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z0-9]{1,6}",
        1 => "[a-z]{1,5}\\.[a-z]{1,5}/",
        2 => prop_oneof![Just("="), Just("=="), Just("!="), Just("!"), Just(">"), Just("<")].prop_map(String::from),
        2 => prop_oneof![Just(" in ("), Just(" notin ("), Just(")"), Just(","), Just(" ")].prop_map(String::from),
        1 => "[-_./ ()!=<>,]{1,3}",
        1 => any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..16).prop_map(|p| p.concat())
}

#[test]
fn fuzz_label_selectors_parse_to_a_canonical_form_or_an_error() {
    fuzz(CASES, selector_text(), |text| {
        let Ok(selector) = text.parse::<Selector>() else {
            return Ok(());
        };
        // What a selector prints parses back to itself and prints the same.
        let printed = selector.to_string();
        let again: Selector = printed
            .parse()
            .map_err(|e| TestCaseError::fail(format!("{printed:?} does not parse: {e}")))?;
        prop_assert_eq!(&again, &selector);
        prop_assert_eq!(again.to_string(), printed);
        // Matching is total.
        let labels = BTreeMap::from([("a".to_string(), "1".to_string())]);
        let _ = selector.matches(&labels);
        Ok(())
    });
}

/// Kubeconfig fields: servers with and without schemes, user information, ports, paths
/// and garbage; secrets that must never be printed.
fn kubeconfig_input() -> impl Strategy<Value = (String, String, String, bool, String)> {
    let server = prop_oneof![
        "(https?|ftp)://([a-z]{1,6}:PASSWORD[a-z]{0,4}@)?[a-z0-9.-]{1,12}(:[0-9]{1,6})?(/[a-z]{0,6})?",
        "[ -~]{0,30}",
    ];
    (
        server,
        "TOKEN[a-zA-Z0-9]{0,12}",
        "PASSWORD[!-~]{0,8}",
        any::<bool>(),
        "[a-z0-9-]{0,12}",
    )
}

#[test]
fn fuzz_configs_from_kubeconfig_input_never_print_a_credential() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    fuzz(
        CASES,
        kubeconfig_input(),
        |(server, token, password, basic, ns)| {
            // The document a kubeconfig file holds (as JSON: YAML's parser is kube's, and slow
            // in a debug build).
            let user = if basic {
                serde_json::json!({"username": "u", "password": password})
            } else {
                serde_json::json!({"token": token})
            };
            let document = serde_json::json!({
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": ns}}],
                "current-context": "x",
            });
            let Ok(kubeconfig) = serde_json::from_value::<kube::config::Kubeconfig>(document)
            else {
                return Ok(());
            };
            let built = rt.block_on(kube::config::Config::from_custom_kubeconfig(
                kubeconfig,
                &Default::default(),
            ));
            let Ok(kube) = built else {
                return Ok(());
            };
            let config = crate::rest::RestConfig::from_kube(kube);
            let shown = format!("{config:?} {}", config.host());
            prop_assert!(
                !shown.contains("TOKEN") && !shown.contains("PASSWORD"),
                "{}",
                shown
            );
            prop_assert!(
                config
                    .host()
                    .authority()
                    .is_none_or(|a| !a.as_str().contains('@'))
            );
            if let Some(warning) = config.cleartext_credentials() {
                prop_assert!(!warning.contains("TOKEN") && !warning.contains("PASSWORD"));
            }
            Ok(())
        },
    );
}

/// Worst cases of each reader at 1x and 16x: a linear reader takes ~16x as long, a
/// quadratic one ~256x. Ignored: it measures time (`cargo test -p kubekit --lib --release
/// fuzz::worst -- --ignored --nocapture` prints the ratios).
#[test]
#[ignore = "timed: run by hand"]
fn worst_inputs_take_linear_time() {
    fn time(f: impl Fn()) -> f64 {
        let start = std::time::Instant::now();
        f();
        start.elapsed().as_secs_f64()
    }
    let watch_line = |mib: usize| {
        move || {
            let line = vec![b'x'; mib << 20];
            let mut d = WatchDecoder::<ConfigMap>::new("cms");
            for chunk in line.chunks(16 << 10) {
                d.feed(chunk);
                assert!(d.next_event().is_none());
            }
            assert!(d.finish().is_some());
        }
    };
    let list = |n: usize| {
        move || {
            let items = vec![Item::Valid("a".into()); n];
            let body = render(&items);
            assert_eq!(
                decode_list::<ConfigMap>(body.as_bytes(), "cms")
                    .unwrap()
                    .items
                    .len(),
                n
            );
        }
    };
    let selector = |n: usize| {
        move || {
            let text: Vec<String> = (0..n).map(|i| format!("k{i} in (a,b,c)")).collect();
            assert!(text.join(",").parse::<Selector>().is_ok());
        }
    };
    for (name, ratio) in [
        (
            "watch line, 1 vs 16 MiB",
            time(watch_line(16)) / time(watch_line(1)),
        ),
        (
            "list, 2k vs 32k items",
            time(list(32_000)) / time(list(2_000)),
        ),
        (
            "selector, 1k vs 16k requirements",
            time(selector(16_000)) / time(selector(1_000)),
        ),
    ] {
        println!("{name}: x{ratio:.1}");
        assert!(ratio < 64.0, "{name}: x{ratio:.1}, not linear");
    }
}
