//! Kubernetes' JSON Patch library (k8s.io/apiserver/pkg/cel/library/jsonpatch.go):
//! `jsonpatch.escapeKey(s)` escapes a key for a JSON Pointer path (`~` as `~0`, `/` as
//! `~1`), for MutatingAdmissionPolicies' `JSONPatch` paths.

use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{overloads, text};

/// The functions [`register`] declares (without their namespace).
pub(super) const FUNCTIONS: &[&str] = &["escapeKey"];

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        global "jsonpatch.escapeKey" "string_jsonpatch_escapeKey_string" (STRING_TYPE) => escape_key;
    )
}

fn escape_key(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let key = text(args, 0)?.replace('~', "~0").replace('/', "~1");
    Ok(Cel::String(Arc::new(key)))
}

#[cfg(test)]
mod tests {
    use crate::cel_rules::evaluate_value;
    use serde_json::json;

    #[test]
    fn escape_key_escapes_tildes_before_slashes() {
        let escaped = evaluate_value("jsonpatch.escapeKey('a/b~c')", &[]);
        assert_eq!(escaped, Ok(json!("a~1b~0c")));
    }
}
