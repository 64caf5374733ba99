//! The CEL validation rules of custom resources (`x-kubernetes-validations` in a CRD's
//! schema), evaluated with the `cel` crate as kube-apiserver's apiextensions validator
//! evaluates them with cel-go.
//!
//! # Contract
//!
//! - **When a CRD is written**, each rule (and `messageExpression`) is compiled: a syntax
//!   error or a call of a function CEL and Kubernetes do not have refuses the CRD with a
//!   `422` on the rule's field. There is no type checker: a call with arguments of the
//!   wrong types, which the real server refuses here, fails when the rule is evaluated;
//!   and a library function called without its namespace (`named(...)` for
//!   `format.named(...)`) passes the check and fails when evaluated too. A rule reading
//!   `oldSelf` under the items of a list whose `x-kubernetes-list-type` is not `map`
//!   refuses the CRD ("oldSelf cannot be used on the uncorrelatable portion of the
//!   schema"), and so does an `optionalOldSelf` on a rule that does not read it. Each
//!   rule's and `messageExpression`'s estimated cost is checked (see `cel_cost`). A
//!   node's children are checked before its own rules, as the real server reports them.
//! - **When an object is written** (once its schema checks pass), every rule is evaluated
//!   with `self` the value at its node, from the root down (the root's rules, with
//!   `self` the whole object, on writes of the object, at the field `<nil>`): the node's rules
//!   first, then its properties (in name order; the real server visits them in Go's map
//!   order, which varies), list items and map values. The spec and
//!   the rest on writes of the object, the status on writes of the status. Values are
//!   typed by the schema: `integer` as `int`, `number` as `double`, strings of
//!   `format: date-time` as `timestamp`, objects as maps.
//! - **Transition rules** (those reading `oldSelf`) run on an update where the value
//!   existed before (under the same property or map key, or, in a list of type `map`,
//!   the item of the same keys), unless `optionalOldSelf` makes `oldSelf` an optional,
//!   absent on a create.
//! - **Cost**: each evaluation is charged its cost (see `cel_cost`); one over the
//!   per-call limit, or over what is left of the write's budget, is a fault at its node
//!   (`Invalid value: "<schema type>": ...`) and no rule runs after it.
//! - **A rule that is false** is a fault at its node's path (with its `fieldPath`
//!   appended): its `messageExpression`'s value, else its `message`, else `failed rule:
//!   <rule>`, as `Invalid value: "<schema type>": ...` (or `Forbidden`, `Required`,
//!   `Duplicate` per its `reason`). A rule that fails to evaluate is a fault at its node
//!   whatever its `fieldPath` and `reason`: `Invalid value: "<schema type>": <error>
//!   evaluating rule: <message or rule>`, as the real server words it.
//! - **Functions**: CEL's standard library, optional values, the strings and lists
//!   extensions, and Kubernetes' libraries: regex (`find`, `findAll`) and those of
//!   `cel_library` (quantity, IP and CIDR, URL, semver, named formats, sets, lists).
//! - **Not done**: the type checker (see `cel_cost` for what the estimator makes of
//!   types it does not know). Where both sides of `&&` or `||` fail, the error reported is the right one's (the `cel` crate's evaluation),
//!   where cel-go reports the left one's.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::extractors::This;
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use serde_json::Value;

use crate::cel_cost::{Budget, Charged};
use crate::status::shown;

/// A failed check: field, cause reason, detail.
pub(crate) type Fault = (String, &'static str, String);

/// The functions a rule may call (operators and macros aside): CEL's standard ones, the
/// extensions' and Kubernetes' that kubekit-fake evaluates.
const KNOWN: &[&str] = &[
    // Standard.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "dyn",
    "type",
    "duration",
    "timestamp",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    // Optional values (`optional.of`, ...: a namespace's functions are named alone).
    "of",
    "none",
    "ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    // Strings.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "format",
    "quote",
    "reverse",
    // Lists.
    "slice",
    "flatten",
    "distinct",
    "sort",
    "range",
    // Kubernetes' regex and lists.
    "find",
    "findAll",
];

/// CEL's environment: the standard library, optional values, the strings and lists
/// extensions and Kubernetes' libraries.
fn base_env() -> Env {
    let mut env = Env::stdlib();
    // Both register into a fresh environment; they cannot conflict.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    // Kubernetes' libraries declare their own types and names: none is the standard
    // library's or an extension's.
    let _ = env.add_extension(crate::cel_library::register);
    env
}

/// [`base_env`], built once.
fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(base_env())).clone()
}

/// Compiles `source` and checks the functions it calls (see the module's docs).
pub(crate) fn compile(source: &str) -> Result<Program, String> {
    compile_in(&env(), source)
}

/// [`compile`] in `env`.
fn compile_in(env: &Env, source: &str) -> Result<Program, String> {
    let program = env
        .compile(source)
        .map_err(|e| format!("compilation failed: {e}"))?;
    let references = program.references();
    for function in references.functions() {
        if function.starts_with(['_', '@', '!'])
            || KNOWN.contains(&function)
            || crate::cel_library::functions().any(|f| f == function)
        {
            continue;
        }
        return Err(format!(
            "compilation failed: ERROR: <input>: undeclared reference to '{function}' (in container '')"
        ));
    }
    Ok(program)
}

/// A compiled program and the environment it runs in.
type Compiled = (Arc<Env>, std::rc::Rc<Program>);

/// Programs by their source, per thread: rules are evaluated at every write of their
/// objects, and parsing is most of a simple rule's cost. Cleared when it holds
/// [`CACHED_PROGRAMS`].
fn cached(
    source: &str,
    build: impl FnOnce() -> Result<Compiled, String>,
) -> Result<Compiled, String> {
    thread_local! {
        static PROGRAMS: std::cell::RefCell<HashMap<String, Compiled>> =
            std::cell::RefCell::new(HashMap::new());
    }
    if let Some(program) = PROGRAMS.with(|p| p.borrow().get(source).cloned()) {
        return Ok(program);
    }
    let program = build()?;
    PROGRAMS.with(|p| {
        let mut programs = p.borrow_mut();
        if programs.len() >= CACHED_PROGRAMS {
            programs.clear();
        }
        programs.insert(source.to_string(), program.clone());
    });
    Ok(program)
}

/// [`compile`]d programs, [`cached`].
fn compiled(source: &str) -> Result<std::rc::Rc<Program>, String> {
    cached(source, || Ok((env(), std::rc::Rc::new(compile(source)?)))).map(|(_, p)| p)
}

/// How many programs [`cached`] keeps per thread.
const CACHED_PROGRAMS: usize = 1024;

/// A context in [`env`] with Kubernetes' functions the extensions lack.
fn context() -> Context<'static, 'static> {
    context_in(env())
}

/// [`context`] in `env`.
fn context_in(env: Arc<Env>) -> Context<'static, 'static> {
    let mut context = Context::with_env(env);
    // None of these names is an overload of the environment's.
    let _ = context.add_function("matches", matches);
    let _ = context.add_function("find", find);
    let _ = context.add_function("findAll", find_all);
    context
}

/// A struct type whose literals take any fields: `Object{...}`, `Object.spec{...}` and
/// `JSONPatch{...}` in a MutatingAdmissionPolicy's expressions, which the real server
/// types from the object's schema.
struct Constructed(cel::common::types::Type);

impl cel::StructType for Constructed {
    fn get_type(&self) -> &cel::common::types::Type {
        &self.0
    }

    fn new_value<'b, 'v>(
        &self,
        fields: std::collections::BTreeMap<String, cel::common::value::CowVal<'b, 'v>>,
    ) -> Result<Box<dyn cel::common::value::Val + 'v>, ExecutionError> {
        let mut value = cel::common::types::CelStruct::new(self.0.name().to_string());
        for (name, field) in fields {
            value.add_field_value(name, field);
        }
        Ok(Box::new(value))
    }
}

/// The mutation expression `source` compiled in [`base_env`] with its struct literals'
/// types (those named `Object...` and `JSONPatch`) declared, [`cached`].
fn mutation_program(source: &str) -> Result<Compiled, String> {
    static LITERAL: OnceLock<regex::Regex> = OnceLock::new();
    let literal = LITERAL.get_or_init(|| {
        regex::Regex::new(r"\b(Object(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*|JSONPatch)\s*\{")
            .expect("a valid regex")
    });
    // Apart from rules of the same text, which compile in the shared environment.
    cached(&format!("mutation:{source}"), || {
        let mut env = base_env();
        let mut names: Vec<String> = literal
            .captures_iter(source)
            .map(|c| c[1].split_whitespace().collect())
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            let declared = env.add_type(Constructed(cel::common::types::Type::new_struct(name)));
            declared.map_err(|e| format!("compilation failed: {e}"))?;
        }
        let program = compile_in(&env, source)?;
        Ok((Arc::new(env), std::rc::Rc::new(program)))
    })
}

/// Compiles a MutatingAdmissionPolicy's `applyConfiguration` or `jsonPatch` expression
/// (see [`compile`]), with its struct literals' types.
pub(crate) fn compile_mutation(source: &str) -> Result<(), String> {
    mutation_program(source).map(drop)
}

/// Evaluates a MutatingAdmissionPolicy's `applyConfiguration` or `jsonPatch` expression
/// with `variables` (see [`evaluate`]): its value as JSON, a struct literal's as an
/// object of its fields.
pub(crate) fn evaluate_mutation(
    source: &str,
    variables: &[(&str, &Value)],
    opaque: &[(&str, Cel)],
) -> Result<Value, String> {
    let (env, program) = mutation_program(source)?;
    run(&program, context_in(env), source, variables, opaque)
}

/// `f` of `pattern` compiled, from a per-thread cache: a rule on a list's items matches
/// every item with the same pattern (and a cached regex keeps its search caches).
fn with_regex<T>(pattern: &str, f: impl FnOnce(&regex::Regex) -> T) -> Result<T, regex::Error> {
    thread_local! {
        static REGEXES: std::cell::RefCell<HashMap<String, regex::Regex>> =
            std::cell::RefCell::new(HashMap::new());
    }
    REGEXES.with(|r| {
        let mut regexes = r.borrow_mut();
        if !regexes.contains_key(pattern) {
            let re = regex::Regex::new(pattern)?;
            if regexes.len() >= CACHED_PROGRAMS {
                regexes.clear();
            }
            regexes.insert(pattern.to_string(), re);
        }
        Ok(f(&regexes[pattern]))
    })
}

/// [`with_regex`], failing as Kubernetes' regex functions do.
fn regex<T>(pattern: &str, f: impl FnOnce(&regex::Regex) -> T) -> Result<T, ExecutionError> {
    with_regex(pattern, f).map_err(|e| ExecutionError::function_error("find", e))
}

/// `s.matches(re)` and `matches(s, re)`: whether `re` matches somewhere in `s`.
fn matches(This(s): This<Arc<String>>, pattern: Arc<String>) -> Result<Cel, ExecutionError> {
    match with_regex(&pattern, |re| re.is_match(&s)) {
        Ok(found) => Ok(Cel::Bool(found)),
        Err(err) => Err(ExecutionError::function_error(
            "matches",
            format!("'{pattern}' not a valid regex:\n{err}"),
        )),
    }
}

/// `s.find(re)`: the first match, or an empty string.
fn find(This(s): This<Arc<String>>, pattern: Arc<String>) -> Result<Cel, ExecutionError> {
    let found = regex(&pattern, |re| {
        re.find(&s)
            .map_or(String::new(), |m| m.as_str().to_string())
    })?;
    Ok(Cel::String(Arc::new(found)))
}

/// `s.findAll(re)` and `s.findAll(re, n)`: every match (at most `n` when `n` is not
/// negative).
fn find_all(
    This(s): This<Arc<String>>,
    cel::extractors::Arguments(args): cel::extractors::Arguments,
) -> Result<Cel, ExecutionError> {
    let pattern = match args.first() {
        Some(Cel::String(p)) => p.clone(),
        _ => {
            return Err(ExecutionError::function_error(
                "findAll",
                "a regex is needed",
            ));
        }
    };
    let limit = match args.get(1) {
        Some(Cel::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let found: Vec<Cel> = regex(&pattern, |re| {
        re.find_iter(&s)
            .take(limit)
            .map(|m| Cel::String(Arc::new(m.as_str().to_string())))
            .collect()
    })?;
    Ok(Cel::List(Arc::new(found)))
}

/// Whether `source` compiles and reads the variable `name`.
pub(crate) fn reads_variable(source: &str, name: &str) -> bool {
    compiled(source).is_ok_and(|program| program.references().has_variable(name))
}

/// Evaluates `source` to a boolean with `variables`, JSON values as CEL sees them without
/// a schema (admission's `object`, `oldObject`, `request`): its result, or why there is
/// none.
#[cfg(test)]
pub(crate) fn evaluate(source: &str, variables: &[(&str, &Value)]) -> Result<bool, String> {
    evaluate_with(source, variables, &[])
}

/// [`evaluate`] with `opaque` bound too: values of Kubernetes' libraries.
pub(crate) fn evaluate_with(
    source: &str,
    variables: &[(&str, &Value)],
    opaque: &[(&str, Cel)],
) -> Result<bool, String> {
    match evaluate_value_with(source, variables, opaque)? {
        Value::Bool(b) => Ok(b),
        other => Err(format!("expected a boolean, got {other}")),
    }
}

/// An evaluation of a CEL expression with variables bound (JSON values, and values of
/// Kubernetes' libraries such as the `authorizer`): [`evaluate_value_with`] or
/// [`evaluate_mutation`].
pub(crate) type Evaluator = fn(&str, &[(&str, &Value)], &[(&str, Cel)]) -> Result<Value, String>;

/// Evaluates `source` with `variables` (see [`evaluate`]) to a JSON value.
#[cfg(test)]
pub(crate) fn evaluate_value(source: &str, variables: &[(&str, &Value)]) -> Result<Value, String> {
    evaluate_value_with(source, variables, &[])
}

/// [`evaluate_value`] with `opaque` bound too: values of Kubernetes' libraries.
pub(crate) fn evaluate_value_with(
    source: &str,
    variables: &[(&str, &Value)],
    opaque: &[(&str, Cel)],
) -> Result<Value, String> {
    let program = compiled(source)?;
    run(&program, context(), source, variables, opaque)
}

/// Runs `program` (of `source`) in `context` with `variables` (JSON values) and `opaque`
/// (library values) bound.
fn run(
    program: &Program,
    mut context: Context<'static, 'static>,
    source: &str,
    variables: &[(&str, &Value)],
    opaque: &[(&str, Cel)],
) -> Result<Value, String> {
    for (name, value) in variables {
        context.add_variable_from_value(*name, to_cel(&Value::Null, value));
    }
    for (name, value) in opaque {
        context.add_variable_from_value(*name, value.clone());
    }
    match program.execute(&context) {
        Ok(value) => from_cel(&value).ok_or_else(|| format!("a value JSON cannot hold: {value:?}")),
        // cel-go's words.
        Err(ExecutionError::NoSuchKey(key)) => Err(format!("no such key: {key}")),
        Err(ExecutionError::NoSuchOverload(e))
            if e.function() == "_._"
                && e.argument_types().first().is_some_and(|t| t == "null_type") =>
        {
            // A field of a null variable (`object` on a delete): cel-go names the field.
            let null: Vec<&str> = variables
                .iter()
                .filter(|(_, v)| v.is_null())
                .map(|(n, _)| *n)
                .collect();
            Err(match first_field_of(source, &null) {
                Some(field) => format!("no such key: {field}"),
                None => e.to_string(),
            })
        }
        Err(e) => Err(crate::cel_library::message(&e)),
    }
}

/// A CEL value as JSON, if JSON can hold it (timestamps as RFC 3339 text).
fn from_cel(value: &Cel) -> Option<Value> {
    Some(match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number)?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Timestamp(t) => Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        Cel::List(items) => Value::Array(items.iter().map(from_cel).collect::<Option<_>>()?),
        Cel::Map(map) => {
            let mut fields = serde_json::Map::new();
            for (k, v) in map.map.iter() {
                let key = match k {
                    cel::objects::Key::String(s) => s.to_string(),
                    cel::objects::Key::Int(i) => i.to_string(),
                    cel::objects::Key::Uint(u) => u.to_string(),
                    cel::objects::Key::Bool(b) => b.to_string(),
                };
                fields.insert(key, from_cel(v)?);
            }
            Value::Object(fields)
        }
        Cel::Struct(fields) => Value::Object(
            fields
                .field_values()
                .iter()
                .map(|(name, field)| {
                    let field = Cel::try_from(field.as_ref()).ok()?;
                    Some((name.clone(), from_cel(&field)?))
                })
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

/// The first field selected of one of `variables` in `source` (`metadata` of
/// `object.metadata.labels`).
fn first_field_of<'a>(source: &'a str, variables: &[&str]) -> Option<&'a str> {
    variables
        .iter()
        .filter_map(|v| {
            let mut from = 0;
            while let Some(at) = source[from..].find(v).map(|i| i + from) {
                let before = source[..at].chars().next_back();
                let rest = &source[at + v.len()..];
                from = at + v.len();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                    continue;
                }
                if let Some(field) = rest.strip_prefix('.') {
                    let end = field
                        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .unwrap_or(field.len());
                    return Some((at, &field[..end]));
                }
            }
            None
        })
        .min_by_key(|(at, _)| *at)
        .map(|(_, field)| field)
}

/// `v` as CEL sees it under schema `s`.
fn to_cel(s: &Value, v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) if s["type"] == "number" => Cel::Float(n.as_f64().unwrap_or_default()),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(t) => {
            let timestamp = (s["format"] == "date-time")
                .then(|| chrono::DateTime::parse_from_rfc3339(t).ok())
                .flatten();
            match timestamp {
                Some(ts) => Cel::Timestamp(ts),
                None => Cel::String(Arc::new(t.clone())),
            }
        }
        Value::Array(items) => Cel::List(Arc::new(
            items.iter().map(|i| to_cel(&s["items"], i)).collect(),
        )),
        Value::Object(fields) => {
            let map: HashMap<String, Cel> = fields
                .iter()
                .map(|(k, v)| (k.clone(), to_cel(child_schema(s, k), v)))
                .collect();
            Cel::from(map)
        }
    }
}

/// The schema of property `key` of an object of schema `s`.
fn child_schema<'a>(s: &'a Value, key: &str) -> &'a Value {
    match s["properties"].get(key) {
        Some(child) => child,
        None => &s["additionalProperties"],
    }
}

/// Evaluates the rules of `schema` (a CRD version's `openAPIV3Schema`) over `obj`, with
/// `old` for transition rules; the status alone with `status_only`, else the rest.
pub(crate) fn validate(
    schema: &Value,
    obj: &Value,
    old: Option<&Value>,
    status_only: bool,
) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut budget = Budget::default();
    if !status_only {
        // The root's rules, over the whole object, at no field.
        for rule in schema["x-kubernetes-validations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if budget.stopped {
                break;
            }
            faults.extend(check_rule(schema, rule, obj, old, ROOT, &mut budget));
        }
    }
    for (key, s) in schema["properties"].as_object().into_iter().flatten() {
        if (key == "status") != status_only || key == "metadata" {
            continue;
        }
        if let Some(v) = obj.get(key) {
            let before = old.and_then(|o| o.get(key));
            walk(s, v, before, key, &mut budget, &mut faults);
        }
    }
    faults
}

/// The field of the root's rules' faults, as the real server shows it.
const ROOT: &str = "<nil>";

/// The rules of node `s` over `v` at `path`, then those of its children, until a rule
/// stops the validation (see `cel_cost`).
fn walk(
    s: &Value,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    budget: &mut Budget,
    faults: &mut Vec<Fault>,
) {
    if v.is_null() || budget.stopped {
        return;
    }
    for rule in s["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if budget.stopped {
            return;
        }
        if let Some(fault) = check_rule(s, rule, v, old, path, budget) {
            faults.push(fault);
        }
    }
    match v {
        Value::Object(fields) => {
            for (key, child) in fields {
                let child_s = child_schema(s, key);
                if child_s.is_null() {
                    continue;
                }
                let child_path = match s["properties"].get(key) {
                    Some(_) => format!("{path}.{key}"),
                    None => format!("{path}[{key}]"),
                };
                let before = old.and_then(|o| o.get(key));
                walk(child_s, child, before, &child_path, budget, faults);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{i}]");
                let before = old.and_then(|o| correlated_item(s, item, o));
                walk(&s["items"], item, before, &item_path, budget, faults);
            }
        }
        _ => {}
    }
}

/// The item of `old` (a list of schema `s`) that `item` updates: of a list of type
/// `map`, the one of the same keys; the items of other lists are not correlated.
fn correlated_item<'a>(s: &Value, item: &Value, old: &'a Value) -> Option<&'a Value> {
    if s["x-kubernetes-list-type"] != "map" {
        return None;
    }
    let keys = s["x-kubernetes-list-map-keys"].as_array()?;
    let key_of = |v: &Value| {
        keys.iter()
            .map(|k| v.get(k.as_str()?).cloned())
            .collect::<Vec<_>>()
    };
    let wanted = key_of(item);
    old.as_array()?.iter().find(|o| key_of(o) == wanted)
}

/// One rule over `v`: `None` when it holds (or does not apply), else its fault.
fn check_rule(
    s: &Value,
    rule: &Value,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    budget: &mut Budget,
) -> Option<Fault> {
    let source = rule["rule"].as_str().unwrap_or_default();
    let program = match compiled(source) {
        Ok(p) => p,
        Err(why) => return Some((path.to_string(), "FieldValueInvalid", why)),
    };
    let optional_old = rule["optionalOldSelf"] == true;
    let transition = program.references().has_variable("oldSelf");
    if transition && old.is_none() && !optional_old {
        return None;
    }
    let cost = crate::cel_cost::actual_cost(program.expression(), s, v, old, optional_old);
    if let Some(why) = budget.charge(cost, Charged::Rule(rule_named(rule))) {
        return Some((
            path.to_string(),
            "FieldValueInvalid",
            format!("Invalid value: {}: {why}", schema_type(s)),
        ));
    }
    let mut context = context();
    context.add_variable_from_value("self", to_cel(s, v));
    match (old, optional_old) {
        (Some(o), false) => context.add_variable_from_value("oldSelf", to_cel(s, o)),
        (old, true) => match optional(s, old) {
            Ok(value) => context.add_variable_from_value("oldSelf", value),
            Err(e) => {
                let detail = format!("rule evaluation error: {e}");
                return Some((path.to_string(), "FieldValueInvalid", detail));
            }
        },
        (None, false) => {}
    }
    let field = match rule["fieldPath"]
        .as_str()
        .map(|p| p.trim_start_matches('.'))
    {
        Some(p) if !p.is_empty() && path == ROOT => p.to_string(),
        Some(p) if !p.is_empty() => format!("{path}.{p}"),
        _ => path.to_string(),
    };
    let detail = match program.execute(&context) {
        Ok(Cel::Bool(true)) => return None,
        Ok(Cel::Bool(false)) => {
            if let Some(why) = charge_message(s, rule, v, old, budget) {
                let detail = format!("Invalid value: {}: {why}", schema_type(s));
                return Some((field, "FieldValueInvalid", detail));
            }
            message(rule, &context).unwrap_or_else(|| {
                let given = rule["message"].as_str().map(str::trim).unwrap_or_default();
                match given {
                    "" => format!("failed rule: {}", source.trim()),
                    given => given.to_string(),
                }
            })
        }
        Ok(other) => format!("rule did not evaluate to a boolean: {other:?}"),
        Err(e) => return Some(evaluation_error(s, rule, &e, path)),
    };
    // Objects and lists are not shown, scalars are.
    let value = match v {
        Value::Object(_) | Value::Array(_) => String::new(),
        scalar => format!("{}: ", shown(scalar)),
    };
    let (reason, detail) = match rule["reason"].as_str() {
        Some("FieldValueForbidden") => ("FieldValueForbidden", format!("Forbidden: {detail}")),
        Some("FieldValueRequired") => ("FieldValueRequired", format!("Required value: {detail}")),
        Some("FieldValueDuplicate") => (
            "FieldValueDuplicate",
            format!("Duplicate value: {value}{detail}"),
        ),
        _ => (
            "FieldValueInvalid",
            format!("Invalid value: {value}{detail}"),
        ),
    };
    Some((field, reason, detail))
}

/// A rule that failed to evaluate, as the real server reports it: at the rule's node
/// (whatever its `fieldPath` and `reason`), with the node's schema type as the value and
/// the rule's message, else the rule, naming it.
fn evaluation_error(s: &Value, rule: &Value, e: &ExecutionError, path: &str) -> Fault {
    let named = rule_named(rule);
    let error = crate::cel_library::message(e);
    let detail = if error.starts_with("no such overload") {
        format!(
            "'{error}': call arguments did not match a supported operator, function or macro signature for rule: {named}"
        )
    } else {
        format!("{error} evaluating rule: {named}")
    };
    (
        path.to_string(),
        "FieldValueInvalid",
        format!("Invalid value: {}: {detail}", schema_type(s)),
    )
}

/// How the real server names a rule in its errors: its message, else the rule.
fn rule_named(rule: &Value) -> &str {
    match rule["message"].as_str().map(str::trim) {
        Some(message) if !message.is_empty() => message,
        _ => rule["rule"].as_str().unwrap_or_default().trim(),
    }
}

/// Schema `s`'s type, quoted, as the value of the real server's rule errors.
fn schema_type(s: &Value) -> String {
    shown(&Value::String(
        s["type"].as_str().unwrap_or_default().to_string(),
    ))
}

/// `oldSelf` under `optionalOldSelf`: `optional.of(old)`, or `optional.none()`.
fn optional(s: &Value, old: Option<&Value>) -> Result<Cel, String> {
    let mut context = context();
    let source = match old {
        Some(o) => {
            context.add_variable_from_value("old", to_cel(s, o));
            "optional.of(old)"
        }
        None => "optional.none()",
    };
    compiled(source)?
        .execute(&context)
        .map_err(|e| e.to_string())
}

/// Charges the evaluation of a false rule's `messageExpression` (see `cel_cost`): the
/// real server's reason to stop, if it is over a limit.
fn charge_message(
    s: &Value,
    rule: &Value,
    v: &Value,
    old: Option<&Value>,
    budget: &mut Budget,
) -> Option<String> {
    let source = rule["messageExpression"].as_str()?;
    let program = compiled(source).ok()?;
    let cost = crate::cel_cost::actual_cost(program.expression(), s, v, old, false);
    budget.charge(cost, Charged::Message(source))
}

/// A rule's `messageExpression`, when it evaluates to a string that is not empty.
fn message(rule: &Value, context: &Context) -> Option<String> {
    let source = rule["messageExpression"].as_str()?;
    match compiled(source).ok()?.execute(context).ok()? {
        Cel::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    }
}

/// The compile errors of every rule and `messageExpression` in a CRD version's schema
/// (`at` names its root), as faults at the rule's field
/// (`<at>.x-kubernetes-validations[i].rule`), and the faults of their estimated costs
/// (see `cel_cost`): each node's children first, then its rules, as the real server
/// reports them.
pub(crate) fn compile_errors(schema: &Value, at: &str, faults: &mut Vec<Fault>) {
    let mut total = crate::cel_cost::Total::default();
    let root = Place {
        root: true,
        cardinality: Some(1),
        uncorrelatable: None,
    };
    node_errors(schema, at, &root, &mut total, faults);
    faults.extend(total.faults(at));
}

/// Where a schema node is, for [`node_errors`].
struct Place<'a> {
    /// Whether it is the resource's root.
    root: bool,
    /// How many times it can occur (`None`: unbounded).
    cardinality: Option<u64>,
    /// The highest list above it whose items the real server cannot correlate between
    /// an object and its update (a list whose type is not `map`).
    uncorrelatable: Option<&'a str>,
}

/// [`compile_errors`] of node `schema` at `at`.
fn node_errors(
    schema: &Value,
    at: &str,
    place: &Place,
    total: &mut crate::cel_cost::Total,
    faults: &mut Vec<Fault>,
) {
    let cardinality = place
        .cardinality
        .and_then(|c| crate::cel_cost::max_elements(schema).map(|m| c.saturating_mul(m)));
    let mut children: Vec<(String, &Value)> = Vec::new();
    if schema["additionalProperties"].is_object() {
        children.push((
            format!("{at}.additionalProperties"),
            &schema["additionalProperties"],
        ));
    }
    for (key, child) in schema["properties"].as_object().into_iter().flatten() {
        children.push((format!("{at}.properties[{key}]"), child));
    }
    for (child_at, child) in children {
        let child_place = Place {
            root: false,
            cardinality,
            uncorrelatable: place.uncorrelatable,
        };
        node_errors(child, &child_at, &child_place, total, faults);
    }
    if schema["items"].is_object() {
        let correlated = schema["x-kubernetes-list-type"] == "map";
        let items_place = Place {
            root: false,
            cardinality,
            uncorrelatable: place.uncorrelatable.or((!correlated).then_some(at)),
        };
        node_errors(
            &schema["items"],
            &format!("{at}.items"),
            &items_place,
            total,
            faults,
        );
    }
    for (i, rule) in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for key in ["rule", "messageExpression"] {
            let Some(source) = rule[key].as_str() else {
                continue;
            };
            let field = format!("{at}.x-kubernetes-validations[{i}].{key}");
            match compile(source) {
                Ok(program) => {
                    let expr = program.expression();
                    let (what, cost) = match key {
                        "rule" => {
                            let optional = rule["optionalOldSelf"] == true;
                            let cost = crate::cel_cost::rule_cost(
                                expr,
                                schema,
                                place.root,
                                optional,
                                place.cardinality,
                            );
                            ("rule", cost)
                        }
                        _ => (
                            "messageExpression",
                            crate::cel_cost::message_cost(expr, schema, place.root),
                        ),
                    };
                    if let Some(why) = crate::cel_cost::over_limit(what, cost) {
                        faults.push((field.clone(), "FieldValueForbidden", why));
                    }
                    total.observe(&field, cost);
                }
                Err(why) => faults.push((
                    field,
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {}: {why}",
                        shown(&Value::String(source.into()))
                    ),
                )),
            }
        }
        let source = rule["rule"].as_str().unwrap_or_default();
        if let Ok(program) = compile(source) {
            let field = format!("{at}.x-kubernetes-validations[{i}]");
            faults.extend(old_self_error(&program, rule, &field, place.uncorrelatable));
        }
    }
}

/// The fault of a rule reading `oldSelf` where its value cannot be correlated (under the
/// items of list `uncorrelatable`), or of an `optionalOldSelf` on a rule that does not
/// read it.
fn old_self_error(
    program: &Program,
    rule: &Value,
    field: &str,
    uncorrelatable: Option<&str>,
) -> Option<Fault> {
    if program.references().has_variable("oldSelf") {
        let list = uncorrelatable?;
        let source = shown(&rule["rule"]);
        let why = format!(
            "Invalid value: {source}: oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"
        );
        return Some((format!("{field}.rule"), "FieldValueInvalid", why));
    }
    let optional = rule.get("optionalOldSelf")?;
    let why = format!(
        "Invalid value: {}: may not be set if oldSelf is not used in rule",
        shown(optional)
    );
    Some((format!("{field}.optionalOldSelf"), "FieldValueInvalid", why))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn faults(schema: Value, obj: Value, old: Option<Value>) -> Vec<Fault> {
        let root = json!({"type": "object", "properties": {"spec": schema}});
        let old = old.map(|o| json!({"spec": o}));
        validate(&root, &json!({"spec": obj}), old.as_ref(), false)
    }

    fn details(found: Vec<Fault>) -> Vec<String> {
        found.into_iter().map(|f| f.2).collect()
    }

    #[test]
    fn a_false_rule_is_a_fault_at_its_node_with_its_message_or_the_rule() {
        let schema = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.a < self.b", "message": "a before b"}, {"rule": "self.a > 0"}],
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
        let found = faults(schema, json!({"a": 0, "b": -1}), None);
        assert_eq!(
            found,
            [
                (
                    "spec".into(),
                    "FieldValueInvalid",
                    "Invalid value: a before b".into()
                ),
                (
                    "spec".into(),
                    "FieldValueInvalid",
                    "Invalid value: failed rule: self.a > 0".into()
                ),
            ]
        );
    }

    #[test]
    fn transition_rules_run_on_updates_only_unless_old_self_is_optional() {
        let immutable =
            json!({"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]});
        assert!(faults(immutable.clone(), json!("x"), None).is_empty());
        assert_eq!(
            details(faults(immutable, json!("x"), Some(json!("y")))),
            ["Invalid value: \"x\": failed rule: self == oldSelf"]
        );
        let grows = json!({"type": "integer", "x-kubernetes-validations": [{"optionalOldSelf": true,
            "rule": "!oldSelf.hasValue() || self >= oldSelf.value()"}]});
        assert_eq!(faults(grows.clone(), json!(3), None), []);
        assert_eq!(faults(grows.clone(), json!(3), Some(json!(2))), []);
        assert_eq!(faults(grows, json!(1), Some(json!(2))).len(), 1);
    }

    #[test]
    fn values_are_typed_by_the_schema() {
        let ratio = json!({"type": "number", "x-kubernetes-validations": [{"rule": "self < 1.5"}]});
        assert!(faults(ratio.clone(), json!(1), None).is_empty());
        assert_eq!(
            details(faults(ratio, json!(2), None)),
            ["Invalid value: 2: failed rule: self < 1.5"]
        );
        let when = json!({"type": "string", "format": "date-time", "x-kubernetes-validations": [
            {"rule": "self > timestamp('2020-01-01T00:00:00Z')"}]});
        assert!(faults(when.clone(), json!("2021-05-01T00:00:00Z"), None).is_empty());
        assert_eq!(faults(when, json!("2019-05-01T00:00:00Z"), None).len(), 1);
    }

    #[test]
    fn kubernetes_list_and_regex_functions_evaluate() {
        let tags = json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
            {"rule": "self.isSorted()"}, {"rule": "self.map(t, size(t)).sum() < 5"},
            {"rule": "self.join('').find('[0-9]+') == '12'"},
            {"rule": "self[0].findAll('[a-z]').size() == 1"}]});
        assert_eq!(faults(tags.clone(), json!(["a", "b12"]), None), []);
        assert_eq!(
            details(faults(tags, json!(["b", "a1234"]), None)),
            [
                "Invalid value: failed rule: self.isSorted()",
                "Invalid value: failed rule: self.map(t, size(t)).sum() < 5",
                "Invalid value: failed rule: self.join('').find('[0-9]+') == '12'",
            ]
        );
    }

    #[test]
    fn the_roots_rules_see_the_whole_object_at_no_field() {
        let root = json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith(self.spec.prefix)", "message": "prefix"},
            {"rule": "self.spec.prefix != 'x-'", "fieldPath": ".spec.prefix"}],
            "properties": {"spec": {"type": "object", "properties": {"prefix": {"type": "string"}}}}});
        let obj = |name: &str, prefix: &str| json!({"metadata": {"name": name}, "spec": {"prefix": prefix}});
        assert_eq!(validate(&root, &obj("app-1", "app-"), None, false), []);
        assert_eq!(
            validate(&root, &obj("x-1", "x-"), None, false),
            [(
                "spec.prefix".into(),
                "FieldValueInvalid",
                "Invalid value: failed rule: self.spec.prefix != 'x-'".into()
            )]
        );
        let found = validate(&root, &obj("web-1", "app-"), None, false);
        assert_eq!(
            found,
            [(
                ROOT.into(),
                "FieldValueInvalid",
                "Invalid value: prefix".into()
            )]
        );
        assert_eq!(validate(&root, &obj("web-1", "app-"), None, true), []);
    }

    #[test]
    fn matches_finds_the_pattern_anywhere_and_refuses_an_invalid_one() {
        let text = json!("abc-123");
        let matched = |rule: &str| evaluate(rule, &[("s", &text)]);
        assert_eq!(matched("s.matches('[0-9]+')"), Ok(true));
        assert_eq!(matched("matches(s, '^[0-9]')"), Ok(false));
        assert_eq!(matched("s.matches('[0-9]+') && s.matches('^a')"), Ok(true));
        let invalid = matched("s.matches('(a')").unwrap_err();
        assert!(invalid.contains("'(a' not a valid regex"), "{invalid}");
    }

    #[test]
    fn rules_calling_unknown_functions_do_not_compile_and_kubernetes_libraries_do() {
        assert!(compile("self.size() > 1 && self.startsWith('a')").is_ok());
        let unknown = compile("self.frobnicate()").unwrap_err();
        assert!(
            unknown.contains("undeclared reference to 'frobnicate'"),
            "{unknown}"
        );
        assert!(compile("quantity(self).isLessThan(quantity('1Gi'))").is_ok());
        assert!(compile("sets.contains(self, ['a']) && url(self.u).getHost() != ''").is_ok());
        let unknown = compile("self.frobnicate(quantity('1'))").unwrap_err();
        assert!(unknown.contains("'frobnicate'"), "{unknown}");
        let syntax = compile("self.a ==").unwrap_err();
        assert!(syntax.starts_with("compilation failed"), "{syntax}");
    }

    #[test]
    fn a_field_of_a_null_variable_is_no_such_key_as_cel_go_says() {
        let null = Value::Null;
        let found = evaluate("has(object.metadata.labels)", &[("object", &null)]);
        assert_eq!(found, Err("no such key: metadata".to_string()));
        let labels = json!({"metadata": {"labels": {"a": "b"}}});
        let found = evaluate("object.metadata.labels['x'] == 'y'", &[("object", &labels)]);
        assert_eq!(found, Err("no such key: x".to_string()));
        assert_eq!(
            evaluate("oldObject == null", &[("oldObject", &null)]),
            Ok(true)
        );
    }

    #[test]
    fn a_message_expression_gives_the_detail_and_a_reason_its_kind() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "x-kubernetes-validations": [
                {"rule": "self.n > 1", "messageExpression": "self.n == 0 ? 'n is 0' : 'n is 1'"},
                {"rule": "self.n > 2", "message": "too small", "reason": "FieldValueForbidden", "fieldPath": ".n"}]});
        assert_eq!(
            faults(schema, json!({"n": 0}), None),
            [
                (
                    "spec".into(),
                    "FieldValueInvalid",
                    "Invalid value: n is 0".into()
                ),
                (
                    "spec.n".into(),
                    "FieldValueForbidden",
                    "Forbidden: too small".into()
                ),
            ]
        );
    }
}
