//! A custom resource checked against its CRD's structural schema (`openAPIV3Schema` of the
//! storage version), as kube-apiserver does it.
//!
//! # Contract
//!
//! - [`prune`]: fields the schema does not declare are dropped (unless under
//!   `x-kubernetes-preserve-unknown-fields`), each named in a warning `unknown field
//!   "spec.x"` (`fieldValidation=Warn`, the default), refused with the real server's `400`
//!   (`Strict`), or dropped silently (`Ignore`); a null where the schema does not say
//!   `nullable` is dropped too. `apiVersion`, `kind` and `metadata` are the server's.
//! - [`default`]: a missing field with a `default` gets it, then its own fields' defaults.
//! - [`validate`]: `type` (`x-kubernetes-int-or-string`: an integer or a string;
//!   `nullable`), `required`, `enum`, `minimum`/`maximum` (and exclusive), `minLength`/
//!   `maxLength`, `pattern`, a string's `format` (see [`formats`](crate::formats)),
//!   `minItems`/`maxItems`, `minProperties`/`maxProperties`, into items and properties;
//!   failures are `422 Invalid` with the real server's messages and cause reasons. Fields
//!   are checked in name order (the real server's order among several failures follows
//!   its map iteration, which is random). Not checked: the formats `formats` names as
//!   such, `multipleOf`, `uniqueItems`, `allOf`/`anyOf`/`oneOf`/`not`, CEL rules
//!   (`x-kubernetes-validations`).
//! - Then, as the real server does after them: an embedded resource
//!   (`x-kubernetes-embedded-resource`) has an `apiVersion` and a `kind`; a `set` list has
//!   no item twice and a `map` list no two items with the same keys (`Duplicate value`,
//!   at the second).

use serde_json::{Map, Value};

use crate::resources::ResourceInfo;
use crate::status::{ApiError, ApiResult, shown};

/// What a write asks of unknown fields (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Strict,
    Warn,
    Ignore,
}

impl FieldValidation {
    /// The query parameter's value; `Warn` when absent or unknown.
    pub(crate) fn parse(v: Option<&str>) -> Self {
        match v {
            Some("Strict") => Self::Strict,
            Some("Ignore") => Self::Ignore,
            _ => Self::Warn,
        }
    }
}

/// Drops from `obj` what `schema` does not declare; the warnings to send, or the `400` of
/// a strict write.
pub(crate) fn prune(
    info: &ResourceInfo,
    version: &str,
    schema: &Value,
    obj: &mut Value,
    validation: FieldValidation,
) -> ApiResult<Vec<String>> {
    let mut unknown = Vec::new();
    prune_value(schema, obj, "", &mut unknown);
    report_unknown(info, version, unknown, validation)
}

/// What a write does with the `unknown` fields it dropped (their paths, `spec.x`): their
/// warnings to send (`Warn`), none (`Ignore`), or the real server's `400` (`Strict`).
pub(crate) fn report_unknown(
    info: &ResourceInfo,
    version: &str,
    mut unknown: Vec<String>,
    validation: FieldValidation,
) -> ApiResult<Vec<String>> {
    unknown.sort();
    let warnings: Vec<String> = unknown
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect();
    match validation {
        FieldValidation::Strict if !warnings.is_empty() => Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
            warnings.join(", "),
            kind = info.kind,
        ))),
        FieldValidation::Warn => Ok(warnings),
        _ => Ok(Vec::new()),
    }
}

fn preserves(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

/// Prunes `v`, found at `path` (`""`: the object itself, whose `apiVersion`, `kind` and
/// `metadata` are the server's), by `schema`.
fn prune_value(schema: &Value, v: &mut Value, path: &str, unknown: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let props = schema["properties"].as_object();
            let extra = schema.get("additionalProperties").filter(|a| a.is_object());
            let mut gone = Vec::new();
            for (k, child) in m.iter_mut() {
                if path.is_empty() && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_path = match path {
                    "" => k.clone(),
                    _ => format!("{path}.{k}"),
                };
                match (props.and_then(|p| p.get(k)), extra) {
                    (Some(s), _) | (None, Some(s)) => prune_value(s, child, &child_path, unknown),
                    (None, None) if preserves(schema) => {}
                    (None, None) => {
                        unknown.push(child_path);
                        gone.push(k.clone());
                    }
                }
                let child_schema = props.and_then(|p| p.get(k)).or(extra);
                if child.is_null() && child_schema.is_some_and(|s| s["nullable"] != true) {
                    gone.push(k.clone());
                }
            }
            for k in gone {
                m.remove(&k);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                prune_value(&schema["items"], item, &format!("{path}[{i}]"), unknown);
            }
        }
        _ => {}
    }
}

/// Fills the defaults `schema` declares into `v`.
fn default(schema: &Value, v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(props) = schema["properties"].as_object() {
                for (k, s) in props {
                    if let Some(d) = s.get("default")
                        && !m.contains_key(k)
                    {
                        m.insert(k.clone(), d.clone());
                    }
                }
            }
            for (k, child) in m.iter_mut() {
                let s = schema["properties"]
                    .get(k)
                    .or_else(|| schema.get("additionalProperties"));
                if let Some(s) = s {
                    default(s, child);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                default(&schema["items"], item);
            }
        }
        _ => {}
    }
}

/// Fills a custom resource's defaults, as its decoder does before admission; nothing for
/// a type without a schema.
pub(crate) fn fill_defaults(info: &ResourceInfo, obj: &mut Value) {
    if let Some(schema) = &info.validation {
        default(schema, obj);
    }
}

/// Fills a custom resource's defaults and validates it (its status only, with
/// `status_only`): its schema, then its CEL rules (see `cel_rules`; `old` is the object
/// an update replaces, for transition rules); nothing for a type without a schema.
pub(crate) fn default_and_validate(
    info: &ResourceInfo,
    name: &str,
    (obj, old): (&mut Value, Option<&Value>),
    status_only: bool,
) -> ApiResult<()> {
    fill_defaults(info, obj);
    let Some(schema) = &info.validation else {
        return Ok(());
    };
    let mut faults = validate(schema, obj, status_only);
    if !status_only {
        structure_faults(schema, obj, "", &mut faults);
    }
    // Its CEL rules, unless a fault of the schema's checks blocks them (the real server's
    // `hasBlockingErr`: a type, a missing field, a value not supported, too long or too
    // many), which a cause of its own then says.
    if has_rules(schema) {
        let blocking = faults.iter().any(|(_, reason, _)| {
            matches!(
                *reason,
                "FieldValueNotSupported"
                    | "FieldValueRequired"
                    | "FieldValueTooLong"
                    | "FieldValueTooMany"
                    | "FieldValueTypeInvalid"
            )
        });
        if blocking {
            faults.push((
                "<nil>".into(),
                "FieldValueInvalid",
                "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
            ));
        } else {
            faults.extend(crate::cel_rules::validate(schema, obj, old, status_only));
        }
    }
    if faults.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(info, name, &faults))
}

/// Whether `schema` has CEL rules anywhere.
/// The faults the real server finds after the schema's own checks, walking `v` (at
/// `path`) with `schema`: an embedded resource without `apiVersion` or `kind`, and the
/// second of two equal items of a `set` list or two items of a `map` list with equal
/// keys.
fn structure_faults(schema: &Value, v: &Value, path: &str, faults: &mut Vec<Fault>) {
    let at = |child: &str| match path {
        "" => child.to_string(),
        p => format!("{p}.{child}"),
    };
    match v {
        Value::Object(fields) => {
            if schema["x-kubernetes-embedded-resource"] == Value::Bool(true) {
                for required in ["apiVersion", "kind"] {
                    if fields
                        .get(required)
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        faults.push((at(required), "FieldValueRequired", "Required value".into()));
                    }
                }
            }
            for (name, field) in fields {
                let field_schema = match schema["properties"].get(name) {
                    Some(s) => s,
                    None => &schema["additionalProperties"],
                };
                if field_schema.is_object() {
                    structure_faults(field_schema, field, &at(name), faults);
                }
            }
        }
        Value::Array(items) => {
            let keys: Vec<&str> = schema["x-kubernetes-list-map-keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            // What identifies an item: itself in a set, its keys in a map.
            let identity = |item: &Value| match schema["x-kubernetes-list-type"].as_str() {
                Some("set") => Some(item.clone()),
                Some("map") => {
                    let key: Map<String, Value> = keys
                        .iter()
                        .filter_map(|k| item.get(*k).map(|v| (k.to_string(), v.clone())))
                        .collect();
                    Some(Value::Object(key))
                }
                _ => None,
            };
            for (i, item) in items.iter().enumerate() {
                if let Some(id) = identity(item)
                    && items[..i]
                        .iter()
                        .any(|earlier| identity(earlier).as_ref() == Some(&id))
                {
                    let detail = format!("Duplicate value: {}", shown(&id));
                    faults.push((format!("{path}[{i}]"), "FieldValueDuplicate", detail));
                }
                if schema["items"].is_object() {
                    structure_faults(&schema["items"], item, &format!("{path}[{i}]"), faults);
                }
            }
        }
        _ => {}
    }
}

/// The faults of a CRD's `openAPIV3Schema` (`schema`, at `at`) that make it not
/// structural or not servable, with the real server's messages: the root's type (an
/// object), a property without a type, `properties` with `additionalProperties`, `$ref`,
/// `uniqueItems`, an array without `items`, list types and their map keys, a set of
/// objects that are not atomic, an embedded resource without fields, a `default` of the
/// wrong type or outside its `enum`, and `metadata` with fields other than `name` and
/// `generateName`.
pub(crate) fn structural_faults(schema: &Value, at: &str, faults: &mut Vec<Fault>) {
    match schema["type"].as_str() {
        None => faults.push((
            format!("{at}.type"),
            "FieldValueRequired",
            "Required value: must not be empty at the root".into(),
        )),
        Some("object") => {}
        Some(other) => faults.push((
            format!("{at}.type"),
            "FieldValueInvalid",
            format!("Invalid value: \"{other}\": must be object at the root"),
        )),
    }
    if let Some(metadata) = schema["properties"]["metadata"].as_object()
        && metadata
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.keys().any(|k| k != "name" && k != "generateName"))
    {
        faults.push((
            format!("{at}.properties[metadata]"),
            "FieldValueForbidden",
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified".into(),
        ));
    }
    node_faults(schema, at, faults);
}

/// [`structural_faults`] of one schema node and those under it (a property without a
/// type after the faults of its own properties, as the real server lists them).
fn node_faults(s: &Value, at: &str, faults: &mut Vec<Fault>) {
    let mut add = |field: &str, reason: &'static str, detail: String| {
        faults.push((format!("{at}.{field}"), reason, detail));
    };
    if s.get("$ref").is_some() {
        add(
            "$ref",
            "FieldValueForbidden",
            "Forbidden: $ref is not supported".into(),
        );
    }
    if s["uniqueItems"] == Value::Bool(true) {
        let why = "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic";
        add("uniqueItems", "FieldValueForbidden", why.into());
    }
    if s["properties"].is_object() && s["additionalProperties"].is_object() {
        let why = "Forbidden: additionalProperties and properties are mutual exclusive";
        add("additionalProperties", "FieldValueForbidden", why.into());
    }
    if s["type"] == "array" && !s["items"].is_object() {
        add(
            "items",
            "FieldValueRequired",
            "Required value: must be specified".into(),
        );
    }
    if s["x-kubernetes-embedded-resource"] == Value::Bool(true)
        && !s["properties"].is_object()
        && s["x-kubernetes-preserve-unknown-fields"] != Value::Bool(true)
    {
        let why = "Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        add("properties", "FieldValueRequired", why.into());
    }
    match s["x-kubernetes-list-type"].as_str() {
        None | Some("atomic") => {}
        Some("set") => {
            let items = &s["items"];
            if items["type"] == "object" && items["x-kubernetes-map-type"] != "atomic" {
                let why = "Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set";
                add(
                    "items.x-kubernetes-map-type",
                    "FieldValueInvalid",
                    why.into(),
                );
            }
        }
        Some("map") => {
            let keys: Vec<&str> = s["x-kubernetes-list-map-keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if keys.is_empty() {
                let why = "Required value: must not be empty if x-kubernetes-list-type is map";
                add(
                    "x-kubernetes-list-map-keys",
                    "FieldValueRequired",
                    why.into(),
                );
            }
            let required = s["items"]["required"].as_array();
            for key in keys {
                let is_required = required.is_some_and(|r| r.iter().any(|k| k == key));
                if !is_required && s["items"]["properties"][key].get("default").is_none() {
                    let why = "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";
                    add(
                        &format!("items.properties[{key}].default"),
                        "FieldValueRequired",
                        why.into(),
                    );
                }
            }
        }
        Some(other) => {
            let detail = format!(
                "Unsupported value: \"{other}\": supported values: \"atomic\", \"set\", \"map\""
            );
            add("x-kubernetes-list-type", "FieldValueNotSupported", detail);
        }
    }
    if let Some(default) = s.get("default") {
        let wanted = s["type"].as_str().unwrap_or_default();
        let found = type_name(default);
        let fits =
            wanted.is_empty() || found == wanted || (wanted == "number" && found == "integer");
        if !fits {
            let detail = format!(
                "Invalid value: \"{found}\":  in body must be of type {wanted}: \"{found}\""
            );
            add("default", "FieldValueTypeInvalid", detail);
        } else if let Some(allowed) = s["enum"].as_array()
            && !allowed.contains(default)
        {
            let supported: Vec<String> = allowed.iter().map(shown).collect();
            let detail = format!(
                "Unsupported value: {}: supported values: {}",
                shown(default),
                supported.join(", ")
            );
            add("default", "FieldValueNotSupported", detail);
        }
    }
    for (name, property) in s["properties"].as_object().into_iter().flatten() {
        let here = format!("{at}.properties[{name}]");
        node_faults(property, &here, faults);
        // A `$ref` is refused as such, not as a missing type.
        let typed = property.get("type").is_some()
            || property.get("$ref").is_some()
            || property["x-kubernetes-int-or-string"] == Value::Bool(true)
            || property["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
        if !typed {
            faults.push((
                format!("{here}.type"),
                "FieldValueRequired",
                "Required value: must not be empty for specified object fields".into(),
            ));
        }
    }
    if s["items"].is_object() {
        node_faults(&s["items"], &format!("{at}.items"), faults);
    }
    if s["additionalProperties"].is_object() {
        node_faults(
            &s["additionalProperties"],
            &format!("{at}.additionalProperties"),
            faults,
        );
    }
}

fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(fields) => fields
            .iter()
            .any(|(k, v)| k == "x-kubernetes-validations" || has_rules(v)),
        Value::Array(items) => items.iter().any(has_rules),
        _ => false,
    }
}

/// A failed check: field, cause reason, detail.
type Fault = (String, &'static str, String);

/// The faults of `obj` against `schema`; with `status_only` of its status only, as the
/// status subresource checks it (messages then name fields from within the status).
fn validate(schema: &Value, obj: &Value, status_only: bool) -> Vec<Fault> {
    let mut faults = Vec::new();
    let props = schema["properties"].as_object();
    for (k, s) in props.into_iter().flatten() {
        if (k == "status") != status_only {
            continue;
        }
        if let Some(v) = obj.get(k) {
            let msg_path = if status_only { "" } else { k.as_str() };
            check(s, v, k, msg_path, &mut faults);
        }
    }
    faults
}

/// The JSON type of `v` as the validator names it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A bound as the validator writes it (`10`, `0.5`).
fn bound(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        Some(f) => f.to_string(),
        None => v.to_string(),
    }
}

/// Checks `v` at `path` against `s`; messages name it `msg_path` (the path within the
/// status for the status subresource).
fn check(s: &Value, v: &Value, path: &str, msg_path: &str, faults: &mut Vec<Fault>) {
    let in_body = msg_path;
    let actual = type_name(v);
    let expected = if s["x-kubernetes-int-or-string"] == true {
        Some("integer,string")
    } else {
        s["type"].as_str()
    };
    if v.is_null() && s["nullable"] == true {
        return;
    }
    if let Some(t) = expected {
        let fits = t
            .split(',')
            .any(|t| t == actual || (t == "number" && actual == "integer"));
        if !fits {
            let detail = format!(
                "Invalid value: \"{actual}\": {in_body} in body must be of type {t}: \"{actual}\""
            );
            faults.push((path.to_string(), "FieldValueTypeInvalid", detail));
            return;
        }
    }
    let invalid = |why: String| {
        (
            path.to_string(),
            "FieldValueInvalid",
            format!("Invalid value: {}: {in_body} in body {why}", shown(v)),
        )
    };
    match v {
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if let Some(max) = s["maxLength"].as_u64().filter(|m| len > *m) {
                let detail = format!("Too long: may not be more than {max} bytes");
                faults.push((path.to_string(), "FieldValueTooLong", detail));
            }
            if let Some(min) = s["minLength"].as_u64().filter(|m| len < *m) {
                faults.push(invalid(format!("should be at least {min} chars long")));
            }
            if let Some(p) = s["pattern"].as_str()
                && regex::Regex::new(p).is_ok_and(|re| !re.is_match(text))
            {
                faults.push(invalid(format!("should match '{p}'")));
            }
            // A format applies to strings of a schema that is of type string, or of none.
            if let Some(format) = s["format"].as_str()
                && s["type"].as_str().is_none_or(|t| t == "string")
                && !crate::formats::valid(format, text)
            {
                let detail = format!(
                    "Invalid value: {}: {in_body} in body must be of type {format}: {}",
                    shown(v),
                    shown(v)
                );
                faults.push((path.to_string(), "FieldValueTypeInvalid", detail));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or_default();
            let exclusive = |k: &str| s[k] == true;
            if let Some(max) = s["maximum"].as_f64() {
                if exclusive("exclusiveMaximum") && x >= max {
                    faults.push(invalid(format!(
                        "should be less than {}",
                        bound(&s["maximum"])
                    )));
                } else if x > max {
                    let b = bound(&s["maximum"]);
                    faults.push(invalid(format!("should be less than or equal to {b}")));
                }
            }
            if let Some(min) = s["minimum"].as_f64() {
                if exclusive("exclusiveMinimum") && x <= min {
                    let b = bound(&s["minimum"]);
                    faults.push(invalid(format!("should be greater than {b}")));
                } else if x < min {
                    let b = bound(&s["minimum"]);
                    faults.push(invalid(format!("should be greater than or equal to {b}")));
                }
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = s["maxItems"].as_u64().filter(|m| n > *m) {
                let detail = format!("Too many: {n}: must have at most {max} items");
                faults.push((path.to_string(), "FieldValueTooMany", detail));
            }
            if let Some(min) = s["minItems"].as_u64().filter(|m| n < *m) {
                faults.push(invalid(format!("should have at least {min} items")));
            }
            for (i, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{i}]");
                let item_msg = format!("{in_body}[{i}]");
                check(&s["items"], item, &item_path, &item_msg, faults);
            }
        }
        Value::Object(m) => check_object(s, m, path, in_body, faults),
        _ => {}
    }
    if let Some(allowed) = s["enum"].as_array()
        && !allowed.contains(v)
    {
        let supported: Vec<String> = allowed.iter().map(shown).collect();
        let detail = format!(
            "Unsupported value: {}: supported values: {}",
            shown(v),
            supported.join(", ")
        );
        faults.push((path.to_string(), "FieldValueNotSupported", detail));
    }
}

fn check_object(
    s: &Value,
    m: &Map<String, Value>,
    path: &str,
    in_body: &str,
    faults: &mut Vec<Fault>,
) {
    let n = m.len() as u64;
    if let Some(max) = s["maxProperties"].as_u64().filter(|x| n > *x) {
        let detail = format!("Too many: {n}: must have at most {max} items");
        faults.push((path.to_string(), "FieldValueTooMany", detail));
    }
    if let Some(min) = s["minProperties"].as_u64().filter(|x| n < *x) {
        let detail =
            format!("Invalid value: {n}: {in_body} in body should have at least {min} properties");
        faults.push((path.to_string(), "FieldValueInvalid", detail));
    }
    for (k, child) in m {
        let child_schema = s["properties"]
            .get(k)
            .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()));
        if let Some(cs) = child_schema {
            let child_path = format!("{path}.{k}");
            let child_msg = if in_body.is_empty() {
                k.clone()
            } else {
                format!("{in_body}.{k}")
            };
            check(cs, child, &child_path, &child_msg, faults);
        }
    }
    for k in s["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !m.contains_key(k) {
            faults.push((
                format!("{path}.{k}"),
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info() -> ResourceInfo {
        let mut info = crate::resources::builtin_of("", "ConfigMap");
        info.kind = "Gadget".into();
        info
    }

    #[test]
    fn schemas_and_values_of_odd_shapes_are_no_panic() {
        let schemas = [
            json!({"properties": "not a map"}),
            json!({"type": "object", "properties": {"spec": {"type": "string", "pattern": "(["}}}),
            json!({"type": "object", "properties": {"spec": {"items": 3, "maxItems": "x"}}}),
            json!(null),
        ];
        let values = [
            json!({"spec": [1, {"a": null}]}),
            json!({"spec": "x"}),
            json!(7),
        ];
        for s in &schemas {
            for v in &values {
                let mut v = v.clone();
                let _ = prune(&info(), "v1", s, &mut v, FieldValidation::Strict);
                default(s, &mut v);
                let _ = validate(s, &v, false);
                let _ = validate(s, &v, true);
            }
        }
    }

    #[test]
    fn nested_defaults_fill_a_defaulted_parent_and_nulls_are_dropped() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "a": {"type": "object", "default": {}, "properties": {"b": {"type": "integer", "default": 3}}},
            "c": {"type": "string", "default": "x"},
        }}}});
        let mut v = json!({"spec": {"c": null}});
        let warnings = prune(&info(), "v1", &s, &mut v, FieldValidation::Warn).unwrap();
        assert!(warnings.is_empty());
        default(&s, &mut v);
        assert_eq!(v, json!({"spec": {"a": {"b": 3}, "c": "x"}}));
    }

    #[test]
    fn duplicates_of_sets_and_map_keys_and_incomplete_embedded_resources_are_found() {
        let s = json!({"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object"}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true},
        }});
        let v = json!({"set": ["a", "b", "a"], "map": [{"k": 1, "v": 1}, {"k": 1, "v": 2}],
            "embedded": {"kind": "K"}});
        let mut faults = Vec::new();
        structure_faults(&s, &v, "spec", &mut faults);
        let shown: Vec<String> = faults.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
        assert_eq!(
            shown,
            [
                "spec.embedded.apiVersion: Required value",
                "spec.map[1]: Duplicate value: {\"k\":1}",
                "spec.set[2]: Duplicate value: \"a\"",
            ]
        );
    }

    #[test]
    fn a_schema_that_is_not_structural_is_refused_deepest_first() {
        let schema = json!({"type": "object", "properties": {"spec": {"properties": {
            "a": {"description": "untyped"},
            "b": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
        }}}});
        let mut faults = Vec::new();
        structural_faults(&schema, "s", &mut faults);
        let fields: Vec<&str> = faults.iter().map(|(f, _, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "s.properties[spec].properties[a].type",
                "s.properties[spec].properties[b].x-kubernetes-list-map-keys",
                "s.properties[spec].type",
            ]
        );
    }
}
