//! Objects of the API decoded from JSON in one pass, each collection at its exact size.
//!
//! serde grows a `Vec` by doubling while it reads a JSON array whose length it is not told,
//! and serde_json tells none: a decoded `k8s-openapi` Pod keeps about a tenth of its heap
//! as unused capacity (lists of containers, env vars, volumes, ports, conditions; arrays
//! in `serde_json::Value` trees). simd-json indexes the whole document before it decodes,
//! so it tells every array's length, and each `Vec` is allocated once at its size; it
//! decodes faster too. `bench/run.sh compact` measures both on the informer benchmark's
//! Pods.
//!
//! A document simd-json refuses is decoded again by serde_json, whose answer counts: an
//! error reads as it always did (serde_json's message with line and column), and what
//! only serde_json accepts (a `serde_json::value::RawValue` field in a user's type) still
//! decodes.

use std::cell::RefCell;
use std::collections::HashSet;

use serde::de::{DeserializeOwned, DeserializeSeed};

/// Scratch space kept per thread up to this size: simd-json decodes a copy of the input
/// (it unescapes strings in place) and indexes it in buffers of about the input's size.
const KEPT_SCRATCH_BYTES: usize = 1 << 20;

#[derive(Default)]
struct Scratch {
    input: Vec<u8>,
    buffers: Option<simd_json::Buffers>,
    /// Types of which simd-json refused a document that serde_json decoded (they hold a
    /// `RawValue`, as [`Compact`](crate::cache::Compact) does): decoded by serde_json
    /// alone from then on, on this thread.
    serde_only: HashSet<&'static str>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// Decodes `json` into the value of `seed` (a `K`, or something holding one) by
/// simd-json, else by `fallback` (serde_json), whose answer then counts; see the
/// [module docs](self).
pub(crate) fn decode_with<K, V>(
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

/// `json` decoded as a `T`: by simd-json, or by serde_json when simd-json refuses it (see
/// the [module docs](self)).
pub(crate) fn from_slice<T: DeserializeOwned>(json: &[u8]) -> serde_json::Result<T> {
    decode_with::<T, T>(json, std::marker::PhantomData::<T>, || {
        serde_json::from_slice(json)
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde::Deserialize;
    use serde_json::value::RawValue;

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

    #[test]
    fn what_only_serde_json_accepts_still_decodes() {
        #[derive(Deserialize)]
        struct WithRaw {
            raw: Box<RawValue>,
        }
        let decoded: WithRaw = from_slice(br#"{"raw": {"a": [1, 2]}}"#).unwrap();
        assert_eq!(decoded.raw.get(), r#"{"a": [1, 2]}"#);
        let learnt = |s: &RefCell<Scratch>| {
            s.borrow()
                .serde_only
                .contains(&std::any::type_name::<WithRaw>())
        };
        assert!(
            SCRATCH.with(learnt),
            "serde_json alone decodes WithRaw from now on"
        );
        let again: WithRaw = from_slice(br#"{"raw": 1}"#).unwrap();
        assert_eq!(again.raw.get(), "1");
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
