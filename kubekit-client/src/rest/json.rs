//! Objects of the API decoded from JSON, and the `managedFields` cut from it.
//!
//! By default objects are decoded by serde_json. With kubekit's `simd-json` feature, they
//! are decoded by simd-json first, each collection at its exact size: serde grows a `Vec`
//! by doubling while it reads a JSON array whose length it is not told, and serde_json
//! tells none, so a decoded `k8s-openapi` Pod keeps about a tenth of its heap as unused
//! capacity (lists of containers, env vars, volumes, ports, conditions). simd-json indexes
//! the whole document before it decodes, so it tells every array's length; it decodes
//! faster too. The feature is off by default because it compiles every decoded type's
//! `Deserialize` a second time, for simd-json, and the built-in types' objects come as
//! protobuf, which kubekit-protobuf decodes at their exact sizes anyway: JSON is then what
//! custom resources (and clients configured for JSON) are read as.
//!
//! With the feature, a document simd-json refuses is decoded again by serde_json, whose
//! answer counts: an error reads as without the feature (serde_json's message with line
//! and column), and what only serde_json accepts (a `serde_json::value::RawValue` field in
//! a user's type) decodes.

use std::borrow::Cow;
use std::ops::Range;

use serde::de::{DeserializeOwned, DeserializeSeed};

/// Decodes `json` into the value of `seed` (a `K`, or something holding one): by
/// `fallback` (serde_json) or, with the `simd-json` feature, by simd-json with `seed` first
/// (see the [module docs](self)).
#[cfg_attr(
    not(feature = "simd-json"),
    expect(
        clippy::extra_unused_type_parameters,
        reason = "`K` names the type whose documents simd-json refused, with the feature"
    )
)]
pub(crate) fn decode_with<K, V>(
    json: &[u8],
    seed: impl for<'de> DeserializeSeed<'de, Value = V>,
    fallback: impl FnOnce() -> serde_json::Result<V>,
) -> serde_json::Result<V> {
    #[cfg(feature = "simd-json")]
    {
        simd::decode_with::<K, V>(json, seed, fallback)
    }
    #[cfg(not(feature = "simd-json"))]
    {
        let _ = (json, seed);
        fallback()
    }
}

/// `json` decoded as a `T` (see the [module docs](self)).
pub(crate) fn from_slice<T: DeserializeOwned>(json: &[u8]) -> serde_json::Result<T> {
    decode_with::<T, T>(json, std::marker::PhantomData::<T>, || {
        serde_json::from_slice(json)
    })
}

/// Decoding by simd-json, with serde_json as the fallback: kubekit's `simd-json` feature.
#[cfg(feature = "simd-json")]
mod simd {
    use std::cell::RefCell;
    use std::collections::HashSet;

    use serde::de::DeserializeSeed;

    /// Scratch space kept per thread up to this size: simd-json decodes a copy of the
    /// input (it unescapes strings in place) and indexes it in buffers of about the
    /// input's size.
    pub(super) const KEPT_SCRATCH_BYTES: usize = 1 << 20;

    #[derive(Default)]
    pub(super) struct Scratch {
        pub(super) input: Vec<u8>,
        buffers: Option<simd_json::Buffers>,
        /// Types of which simd-json refused a document that serde_json decoded (they hold
        /// a `RawValue`, as `kubekit::cache::Compact` does): decoded by serde_json
        /// alone from then on, on this thread.
        pub(super) serde_only: HashSet<&'static str>,
    }

    thread_local! {
        pub(super) static SCRATCH: RefCell<Scratch> = RefCell::default();
    }

    /// [`decode_with`](super::decode_with) with the feature on.
    pub(super) fn decode_with<K, V>(
        json: &[u8],
        seed: impl for<'de> DeserializeSeed<'de, Value = V>,
        fallback: impl FnOnce() -> serde_json::Result<V>,
    ) -> serde_json::Result<V> {
        // Named, not `TypeId`d, so the types decoded need not be `'static`.
        let kind = std::any::type_name::<K>();
        let simd = SCRATCH.with(|scratch| {
            let mut scratch = scratch.try_borrow_mut().ok()?;
            if scratch.serde_only.contains(&kind) {
                return None;
            }
            let Scratch { input, buffers, .. } = &mut *scratch;
            input.clear();
            input.extend_from_slice(json);
            let buffers = buffers.get_or_insert_with(|| simd_json::Buffers::new(json.len()));
            let value = simd_json::Deserializer::from_slice_with_buffers(input, buffers)
                .ok()
                .and_then(|mut de| seed.deserialize(&mut de).ok());
            if input.capacity() > KEPT_SCRATCH_BYTES {
                *input = Vec::new();
                scratch.buffers = None;
            }
            Some(value)
        });
        match simd {
            Some(Some(value)) => Ok(value),
            tried => {
                let answer = fallback();
                if answer.is_ok() && tried.is_some() {
                    SCRATCH.with(|s| s.borrow_mut().serde_only.insert(kind));
                }
                answer
            }
        }
    }
}

/// `json` without `metadata.managedFields` of the object it holds at `path` (the keys that
/// lead to it: none for an object, `["object"]` for a watch event), the rest byte for byte
/// as it was. Only the structure up to the end of `managedFields` is scanned (strings and
/// nesting), nothing is decoded, and what follows is not looked at. JSON that is not as
/// expected up to there comes back unchanged, for the decoder to report.
pub(crate) fn without_managed_fields<'a>(json: &'a [u8], path: &[&[u8]]) -> Cow<'a, [u8]> {
    let Some(cut) = managed_fields_span(json, path) else {
        return Cow::Borrowed(json);
    };
    let mut out = Vec::with_capacity(json.len() - cut.len());
    out.extend_from_slice(&json[..cut.start]);
    out.extend_from_slice(&json[cut.end..]);
    Cow::Owned(out)
}

/// The bytes to remove for [`without_managed_fields`]: the member with a comma beside it.
fn managed_fields_span(json: &[u8], path: &[&[u8]]) -> Option<Range<usize>> {
    let mut object = skip_whitespace(json, 0);
    for key in path.iter().copied().chain([&b"metadata"[..]]) {
        object = find_member(json, object, key)?.value_start;
    }
    let member = find_member(json, object, b"managedFields")?;
    let value_end = skip_value(json, member.value_start)?;
    let after = skip_whitespace(json, value_end);
    Some(match (member.comma_before, json.get(after)?) {
        (Some(comma), b',' | b'}') => comma..value_end,
        (None, b',') => member.key_start..after + 1,
        (None, b'}') => member.key_start..value_end,
        _ => return None,
    })
}

/// Where one member of a JSON object starts.
struct Member {
    /// The opening quote of its key.
    key_start: usize,
    /// The first byte of its value.
    value_start: usize,
    /// The comma before its key, if it is not the first member.
    comma_before: Option<usize>,
}

/// The member named `key` of the object that starts at `start` (its `{`); the members
/// before it are skipped, its value and what follows are not looked at.
fn find_member(json: &[u8], start: usize, key: &[u8]) -> Option<Member> {
    if json.get(start) != Some(&b'{') {
        return None;
    }
    let mut at = skip_whitespace(json, start + 1);
    let mut comma_before = None;
    loop {
        let key_start = at;
        let key_end = skip_string(json, key_start)?;
        at = skip_whitespace(json, key_end);
        if json.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_whitespace(json, at + 1);
        if &json[key_start + 1..key_end - 1] == key {
            return Some(Member {
                key_start,
                value_start,
                comma_before,
            });
        }
        at = skip_whitespace(json, skip_value(json, value_start)?);
        if json.get(at) != Some(&b',') {
            return None;
        }
        comma_before = Some(at);
        at = skip_whitespace(json, at + 1);
    }
}

fn skip_whitespace(json: &[u8], mut at: usize) -> usize {
    while json.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The end (past the closing quote) of the string whose opening quote is at `start`.
fn skip_string(json: &[u8], start: usize) -> Option<usize> {
    if json.get(start) != Some(&b'"') {
        return None;
    }
    let mut at = start + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', json.get(at..)?)?;
        match json[at] {
            b'"' => return Some(at + 1),
            _ => at += 2,
        }
    }
}

/// The end of the value that starts at `start`. Inside objects and arrays, strings are
/// skipped by a vectorised search for their end, and only the bytes between them are
/// looked at one by one: short runs of punctuation, numbers and literals.
fn skip_value(json: &[u8], start: usize) -> Option<usize> {
    match json.get(start)? {
        b'"' => skip_string(json, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut at = start;
            loop {
                let gap_end = memchr::memchr(b'"', json.get(at..)?).map_or(json.len(), |q| at + q);
                for (i, byte) in json[at..gap_end].iter().enumerate() {
                    match byte {
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(at + i + 1);
                            }
                        }
                        _ => {}
                    }
                }
                at = skip_string(json, gap_end)?;
            }
        }
        _ => {
            let len = json[start..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                .unwrap_or(json.len() - start);
            (len > 0).then_some(start + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde::Deserialize;
    use serde_json::value::RawValue;

    use super::*;

    #[test]
    fn errors_are_serde_jsons_with_line_and_column() {
        let err = from_slice::<Pod>(br#"{"metadata":{"name":7}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            serde_json::from_slice::<Pod>(br#"{"metadata":{"name":7}}"#)
                .unwrap_err()
                .to_string()
        );
        assert!(err.to_string().contains("line 1 column"), "{err}");
        let trailing = from_slice::<Pod>(br#"{"metadata":{}} x"#).unwrap_err();
        assert!(
            trailing.to_string().contains("trailing characters"),
            "{trailing}"
        );
    }

    #[derive(Deserialize)]
    struct WithRaw {
        raw: Box<RawValue>,
    }

    #[test]
    fn what_only_serde_json_accepts_decodes() {
        let decoded: WithRaw = from_slice(br#"{"raw": {"a": [1, 2]}}"#).unwrap();
        assert_eq!(decoded.raw.get(), r#"{"a": [1, 2]}"#);
        let again: WithRaw = from_slice(br#"{"raw": 1}"#).unwrap();
        assert_eq!(again.raw.get(), "1");
    }

    /// What the `simd-json` feature adds.
    #[cfg(feature = "simd-json")]
    mod simd {
        use std::cell::RefCell;

        use super::super::simd::{KEPT_SCRATCH_BYTES, SCRATCH, Scratch};
        use super::*;

        #[test]
        fn vecs_are_decoded_at_their_exact_length() {
            let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
                "spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"}]},{"name":"b"},{"name":"c"}]}}"#;
            let pod: Pod = from_slice(json).unwrap();
            let containers = &pod.spec.as_ref().unwrap().containers;
            assert_eq!(containers.len(), 3);
            assert_eq!(
                containers.capacity(),
                3,
                "serde_json alone would leave room for 4"
            );
            let env = containers[0].env.as_ref().unwrap();
            assert_eq!((env.len(), env.capacity()), (1, 1));
            assert_eq!(
                serde_json::to_value(&pod).unwrap(),
                serde_json::from_slice::<serde_json::Value>(json).unwrap()
            );
        }

        #[test]
        fn a_type_simd_json_refuses_is_decoded_by_serde_json_alone_from_then_on() {
            let _: WithRaw = from_slice(br#"{"raw": {"a": [1, 2]}}"#).unwrap();
            let learnt = |s: &RefCell<Scratch>| {
                s.borrow()
                    .serde_only
                    .contains(&std::any::type_name::<WithRaw>())
            };
            assert!(SCRATCH.with(learnt));
            let _: Pod = from_slice(br#"{"metadata":{"name":"a"}}"#).unwrap();
            assert!(!SCRATCH.with(|s| {
                s.borrow()
                    .serde_only
                    .contains(&std::any::type_name::<Pod>())
            }));
        }

        #[test]
        fn scratch_space_over_the_limit_is_given_back_and_the_thread_decodes_on() {
            let big = format!(
                r#"{{"metadata":{{"name":"{}"}}}}"#,
                "n".repeat(2 * KEPT_SCRATCH_BYTES)
            );
            let pod: Pod = from_slice(big.as_bytes()).unwrap();
            assert_eq!(pod.metadata.name.unwrap().len(), 2 * KEPT_SCRATCH_BYTES);
            SCRATCH.with(|s| assert!(s.borrow().input.capacity() <= KEPT_SCRATCH_BYTES));
            let small: Pod = from_slice(br#"{"metadata":{"name":"a"}}"#).unwrap();
            assert_eq!(small.metadata.name.as_deref(), Some("a"));
        }
    }

    #[test]
    fn managed_fields_are_cut_wherever_they_stand_in_the_metadata() {
        let managed = r#"[{"manager":"k","fieldsV1":{"f:a":{"}":"{["}}}]"#;
        for metadata in [
            format!(r#"{{"name":"p","managedFields":{managed},"uid":"u"}}"#),
            format!(r#"{{"managedFields":{managed},"name":"p","uid":"u"}}"#),
            format!(r#"{{"name":"p","uid":"u", "managedFields" : {managed} }}"#),
        ] {
            let json = format!(
                r#"{{"kind":"Pod","spec":{{"managedFields":1}},"metadata":{metadata},"status":{{}}}}"#
            );
            let cut = without_managed_fields(json.as_bytes(), &[]);
            let value: serde_json::Value = serde_json::from_slice(&cut).unwrap();
            let mut expected: serde_json::Value = serde_json::from_str(&json).unwrap();
            expected["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
            assert_eq!(value, expected, "{json}");
            assert_eq!(value["spec"]["managedFields"], 1, "only the metadata's");
        }
        let only = format!(r#"{{"metadata":{{"managedFields":{managed}}}}}"#);
        assert_eq!(
            &*without_managed_fields(only.as_bytes(), &[]),
            br#"{"metadata":{}}"#
        );
        let event = format!(r#"{{"type":"ADDED","object":{only}}}"#);
        assert_eq!(
            &*without_managed_fields(event.as_bytes(), &[b"object"]),
            br#"{"type":"ADDED","object":{"metadata":{}}}"#
        );
        // What follows the metadata is left for the decoder, even when it is malformed.
        let cut_short = format!(r#"{{"object":{only},"status":{{"#);
        assert_eq!(
            &*without_managed_fields(cut_short.as_bytes(), &[b"object"]),
            br#"{"object":{"metadata":{}},"status":{"#
        );
    }

    #[test]
    fn json_without_managed_fields_or_malformed_is_left_as_it_is() {
        for json in [
            &br#"{"metadata":{"name":"p"}}"#[..],
            br#"{"metadata":{"name":"p","managedFields":[{"a":"\"]"}]"#,
            br#"{"metadata":"x"}"#,
            br#"[1,2]"#,
            br#"{"metadata":{"name":"p" "managedFields":[]}}"#,
            b"",
        ] {
            assert!(
                matches!(without_managed_fields(json, &[]), Cow::Borrowed(_)),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
    }

    #[test]
    fn a_pod_decoded_without_its_managed_fields_equals_it_with_them_dropped() {
        let json = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"},
            "managedFields":[{"manager":"kubectl","operation":"Update","fieldsV1":{"f:metadata":{"f:labels":{".":{}}}}}],
            "annotations":{"x":"{\"managedFields\":[]}"}},"spec":{"containers":[{"name":"c"}]}}"#;
        let mut full: Pod = from_slice(json).unwrap();
        assert!(full.metadata.managed_fields.is_some());
        full.metadata.managed_fields = None;
        let cut: Pod = from_slice(&without_managed_fields(json, &[])).unwrap();
        assert_eq!(cut, full);
    }
}
