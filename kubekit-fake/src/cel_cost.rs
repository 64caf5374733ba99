//! The cost of CEL rules, as kube-apiserver bounds it: the cost a rule is estimated to
//! have at most, checked when its CRD is written, and the cost of an evaluation,
//! checked when an object is written.
//!
//! # Contract
//!
//! - **Estimated cost**: each rule's parsed expression is walked as cel-go's cost
//!   estimator walks a checked one (`checker/cost.go`, with Kubernetes' library costs of
//!   `apiserver/pkg/cel/library/cost.go`): 1 per identifier and selection of a map's or
//!   object's field, 0 per literal, 10 per list and 30 per map created, a comprehension's
//!   (`all`, `exists`, `exists_one`, `map`, `filter`) condition and step times the size
//!   of its range, string functions by the sizes of their strings (a tenth per
//!   character, regexes by the product of the string's and the pattern's), `in` by the
//!   list's size, list concatenation 1, and 1 for other calls. The sizes are the
//!   schema's, as apiextensions' `SchemaDeclType` gives them: `maxLength` (times 4, in
//!   bytes), `maxItems`, `maxProperties`, the longest `enum` value, or, without them,
//!   what fits in a 3 MiB request given the smallest serialized item.
//! - A rule's cost is that times the most times its node can occur: the product of the
//!   `maxItems`/`maxProperties` above it, or, when one is missing, how many of the
//!   node's smallest serialization fit in 3 MiB. A rule over 10,000,000, or a
//!   `messageExpression` over it (not multiplied), refuses the CRD (`Forbidden`,
//!   "estimated rule cost exceeds budget by factor of ..."); the whole schema's over
//!   100,000,000 refuses it too, with its four most expensive rules (of those over
//!   1,000,000) named. The factors are the real server's.
//! - **Types** come from the schema (there is no type checker): where the estimator cannot
//!   know an operand's type (a value of `x-kubernetes-int-or-string`, a function's result
//!   it does not type), an operator with overloads takes the costliest of them, as
//!   cel-go does for `dyn` operands; a call whose result size it cannot know (`string()`
//!   of a value, a function's result) has an unknown size, as in cel-go.
//! - **Runtime cost**: the `cel` crate has no cost tracker. An evaluation's cost is the
//!   same estimate with the sizes of the values the rule is evaluated with (the longest
//!   string or list at each place of the value), which is cel-go's actual cost where a
//!   rule walks its whole range (it stops earlier where `all` finds a false item, or
//!   `exists` a true one), and at most the estimate with the schema's sizes. A rule over
//!   1,000,000 stops the validation ("call cost exceeds limit"), and so do the rules of a
//!   write together over 10,000,000 ("running out of cost budget"); the
//!   `messageExpression` of a false rule is charged too, with its own words.
//! - **Not done**: the per-rule limit is not lifted for a version whose schema an update
//!   leaves unchanged (the real server lifts it, the total limit still holds); `cel.bind`
//!   and two-variable comprehensions are estimated as their parts, without the binding's
//!   sizes.

use std::collections::{BTreeMap, HashMap};

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

/// The cost one evaluation of a rule may have: cel-go's per-call limit.
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// The cost all rules evaluated on one write may have together.
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;
/// The estimated cost a rule may have (times the times its node can occur).
const RULE_LIMIT: u64 = 10_000_000;
/// The estimated cost a schema's rules may have together.
const SCHEMA_LIMIT: u64 = 100_000_000;
/// The largest request: the bound of sizes a schema does not bound.
const MAX_REQUEST: u64 = 3 * 1024 * 1024;

/// cel-go's `SizeEstimate` and `CostEstimate`: a range that saturates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    min: u64,
    max: u64,
}

impl Range {
    const UNKNOWN: Range = Range {
        min: 0,
        max: u64::MAX,
    };

    fn fixed(n: u64) -> Range {
        Range { min: n, max: n }
    }

    fn add(self, other: Range) -> Range {
        Range {
            min: self.min.saturating_add(other.min),
            max: self.max.saturating_add(other.max),
        }
    }

    fn mul(self, other: Range) -> Range {
        Range {
            min: self.min.saturating_mul(other.min),
            max: self.max.saturating_mul(other.max),
        }
    }

    /// Times a cost factor, rounded up.
    fn factor(self, f: f64) -> Range {
        Range {
            min: by_factor(self.min, f),
            max: by_factor(self.max, f),
        }
    }

    fn union(self, other: Range) -> Range {
        Range {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }
}

/// cel-go's `multiplyByCostFactor`.
fn by_factor(x: u64, f: f64) -> u64 {
    let product = (x as f64 * f).ceil();
    if product >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        product as u64
    }
}

/// A string's traversal cost per character.
const TRAVERSAL: f64 = 0.1;
/// A regex's cost per character of its pattern.
const REGEX: f64 = 0.25;

/// What a schema node declares to CEL: apiextensions' `DeclType`.
#[derive(Debug, Clone, PartialEq)]
struct Decl {
    shape: Shape,
    /// The most characters, items or properties.
    max_elements: u64,
    /// The fewest bytes of its JSON.
    min_size: u64,
}

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Scalar(Ty<'static>),
    List(Box<Decl>),
    Map(Box<Decl>, Box<Decl>),
    Object(BTreeMap<String, Decl>),
}

/// A CEL type, as far as the estimator knows it.
#[derive(Debug, Clone, PartialEq)]
enum Ty<'d> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Timestamp,
    Duration,
    List(Box<Ty<'d>>),
    Map(Box<Ty<'d>>),
    Object(&'d BTreeMap<String, Decl>),
    Optional(Box<Ty<'d>>),
    /// Kubernetes' library types: quantity, URL, IP, CIDR, semver, format.
    Library(&'static str),
    Dyn,
}

impl<'d> Ty<'d> {
    fn of(decl: &'d Decl) -> Ty<'d> {
        match &decl.shape {
            Shape::Scalar(t) => t.clone(),
            Shape::List(items) => Ty::List(Box::new(Ty::of(items))),
            Shape::Map(_, values) => Ty::Map(Box::new(Ty::of(values))),
            Shape::Object(fields) => Ty::Object(fields),
        }
    }

    /// Whether cel-go knows its size without a schema (`isScalar`).
    fn scalar(&self) -> bool {
        match self {
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Timestamp | Ty::Duration => true,
            Ty::Optional(t) => t.scalar(),
            _ => false,
        }
    }

    fn items(&self) -> Ty<'d> {
        match self {
            Ty::List(t) => (**t).clone(),
            Ty::Map(_) => Ty::String,
            _ => Ty::Dyn,
        }
    }

    fn text(&self) -> bool {
        matches!(self, Ty::String | Ty::Bytes)
    }
}

/// A string's declaration of at most `max` characters (in bytes, 4 per character).
fn text_decl(ty: Ty<'static>, max: u64, min_size: u64) -> Decl {
    Decl {
        shape: Shape::Scalar(ty),
        max_elements: max,
        min_size,
    }
}

fn number(schema: &Value, key: &str) -> Option<u64> {
    schema[key].as_i64().map(|n| n.max(0) as u64)
}

/// The declaration of schema `s` (apiextensions' `SchemaDeclType`); `root` for a
/// resource's root, which gains `apiVersion`, `kind` and `metadata`. `None` where CEL
/// sees no value.
fn schema_decl(s: &Value, root: bool) -> Option<Decl> {
    let unbounded = MAX_REQUEST - 2;
    if s["x-kubernetes-int-or-string"] == true {
        let max = number(s, "maxLength").map_or(unbounded, |n| n.saturating_mul(4));
        return Some(text_decl(Ty::Dyn, max, 1));
    }
    let decl = match s["type"].as_str()? {
        "array" => {
            let items = &s["items"];
            let items = schema_decl(items, items["x-kubernetes-embedded-resource"] == true)?;
            let max = number(s, "maxItems").unwrap_or(unbounded / (items.min_size + 1));
            Decl {
                shape: Shape::List(Box::new(items)),
                max_elements: max,
                min_size: 2,
            }
        }
        "object" if s["additionalProperties"].is_object() => {
            let values = &s["additionalProperties"];
            let values = schema_decl(values, values["x-kubernetes-embedded-resource"] == true)?;
            let max = number(s, "maxProperties").unwrap_or(unbounded / (values.min_size + 6));
            Decl {
                shape: Shape::Map(Box::new(text_decl(Ty::String, 0, 2)), Box::new(values)),
                max_elements: max,
                min_size: 2,
            }
        }
        "object" if s["additionalProperties"].is_boolean() => return None,
        "object" => {
            let required: Vec<&str> = s["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut fields = BTreeMap::new();
            let mut min_size = 2;
            for (name, p) in s["properties"].as_object().into_iter().flatten() {
                let Some(field) = schema_decl(p, p["x-kubernetes-embedded-resource"] == true)
                else {
                    continue;
                };
                if required.contains(&name.as_str()) && p.get("default").is_none() {
                    min_size += name.len() as u64 + field.min_size + 4;
                }
                fields.insert(name.clone(), field);
            }
            if root {
                add_type_and_object_meta(s, &mut fields);
            }
            Decl {
                shape: Shape::Object(fields),
                max_elements: 0,
                min_size,
            }
        }
        "string" => match s["format"].as_str().unwrap_or_default() {
            "byte" => text_decl(Ty::Bytes, number(s, "maxLength").unwrap_or(unbounded), 2),
            "duration" => text_decl(Ty::Duration, 32, 3),
            "date" => text_decl(Ty::Timestamp, 12, 12),
            "date-time" => text_decl(Ty::Timestamp, 32, 21),
            _ => {
                let longest_enum = s["enum"].as_array().filter(|e| !e.is_empty()).map(|e| {
                    e.iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as u64)
                        .max()
                        .unwrap_or(0)
                });
                let max = match number(s, "maxLength") {
                    Some(n) => n.saturating_mul(4),
                    None => longest_enum.unwrap_or(unbounded),
                };
                text_decl(Ty::String, max, 2)
            }
        },
        "boolean" => text_decl(Ty::Bool, 0, 4),
        "number" => text_decl(Ty::Double, 0, 1),
        "integer" => text_decl(Ty::Int, 0, 1),
        _ => return None,
    };
    Some(decl)
}

/// A resource root's `apiVersion`, `kind` and `metadata` (`name`, `generateName`), as
/// the real server declares them unless the schema does.
fn add_type_and_object_meta(s: &Value, fields: &mut BTreeMap<String, Decl>) {
    let declared = |p: &str| s["properties"].pointer(p).is_some();
    if declared("/kind") && declared("/apiVersion") && declared("/metadata/properties/name") {
        return;
    }
    let unbounded = MAX_REQUEST - 2;
    for name in ["kind", "apiVersion"] {
        fields.insert(name.into(), text_decl(Ty::String, unbounded, 2));
    }
    let capped = |name: &str, cap: u64| {
        let given = number(
            &s["properties"]["metadata"]["properties"][name],
            "maxLength",
        );
        text_decl(Ty::String, given.unwrap_or(cap).min(cap) * 4, 2)
    };
    let meta = BTreeMap::from([
        ("name".to_string(), capped("name", 253)),
        ("generateName".to_string(), capped("generateName", 252)),
    ]);
    fields.insert(
        "metadata".into(),
        Decl {
            shape: Shape::Object(meta),
            max_elements: 0,
            min_size: 2,
        },
    );
}

/// The declaration of schema `s` sized by `values`, the values at its place: the
/// longest of each (characters, items, properties), 1 for other values (cel-go's
/// `actualSize`).
fn value_decl(s: &Value, values: &[&Value]) -> Option<Decl> {
    let longest = |size: fn(&Value) -> Option<usize>| {
        values.iter().filter_map(|v| size(v)).max().unwrap_or(0) as u64
    };
    let chars = longest(|v| v.as_str().map(|t| t.chars().count()));
    let decl = match &schema_decl(s, false)?.shape {
        Shape::Scalar(t) => {
            let max = match t {
                Ty::String | Ty::Bytes => chars,
                Ty::Dyn => chars.max(1),
                _ => 1,
            };
            text_decl(t.clone(), max, 0)
        }
        Shape::List(_) => {
            let items: Vec<&Value> = values
                .iter()
                .filter_map(|v| v.as_array())
                .flatten()
                .collect();
            Decl {
                shape: Shape::List(Box::new(value_decl(&s["items"], &items)?)),
                max_elements: longest(|v| v.as_array().map(Vec::len)),
                min_size: 0,
            }
        }
        Shape::Map(_, _) => {
            let objects = values.iter().filter_map(|v| v.as_object());
            let keys = objects
                .clone()
                .flat_map(|o| o.keys())
                .map(|k| k.chars().count());
            let key = text_decl(Ty::String, keys.max().unwrap_or(0) as u64, 0);
            let entries: Vec<&Value> = objects.flat_map(|o| o.values()).collect();
            Decl {
                shape: Shape::Map(
                    Box::new(key),
                    Box::new(value_decl(&s["additionalProperties"], &entries)?),
                ),
                max_elements: longest(|v| v.as_object().map(serde_json::Map::len)),
                min_size: 0,
            }
        }
        Shape::Object(_) => {
            let mut fields = BTreeMap::new();
            for (name, p) in s["properties"].as_object().into_iter().flatten() {
                let at: Vec<&Value> = values.iter().filter_map(|v| v.get(name)).collect();
                if let Some(field) = value_decl(p, &at) {
                    fields.insert(name.clone(), field);
                }
            }
            Decl {
                shape: Shape::Object(fields),
                max_elements: longest(|v| v.as_object().map(serde_json::Map::len)),
                min_size: 0,
            }
        }
    };
    Some(decl)
}

/// The size and entries a comprehension or function knows of a list or map
/// (`entrySizeEstimate`).
#[derive(Clone, Copy, Debug)]
struct Entries {
    list: bool,
    key: Range,
    value: Range,
}

impl Entries {
    fn union(a: Option<Entries>, b: Option<Entries>) -> Option<Entries> {
        let (a, b) = (a?, b?);
        Some(Entries {
            list: a.list,
            key: a.key.union(b.key),
            value: a.value.union(b.value),
        })
    }
}

/// What the estimator knows of an expression.
#[derive(Clone, Debug)]
struct Info<'d> {
    ty: Ty<'d>,
    /// The field path cel-go tracks: a variable's name, then fields, `@items`, `@values`
    /// and `@keys`.
    path: Vec<String>,
    /// The size its evaluation or literal gives.
    computed: Option<Range>,
    /// A local variable's size.
    variable: Option<Range>,
    entries: Option<Entries>,
    /// An integer literal's value, when not negative.
    limit: Option<u64>,
}

impl<'d> Info<'d> {
    fn typed(ty: Ty<'d>) -> Info<'d> {
        Info {
            ty,
            path: Vec::new(),
            computed: None,
            variable: None,
            entries: None,
            limit: None,
        }
    }

    fn sized(ty: Ty<'d>, size: u64) -> Info<'d> {
        Info {
            computed: Some(Range::fixed(size)),
            ..Info::typed(ty)
        }
    }
}

/// A local variable: a comprehension's accumulator or item.
#[derive(Clone)]
struct Local<'d> {
    ty: Ty<'d>,
    path: Vec<String>,
    size: Option<Range>,
    entries: Option<Entries>,
}

/// The estimator of one expression over `root` (the declaration of `self` and
/// `oldSelf`).
struct Coster<'d> {
    root: &'d Decl,
    old_self_optional: bool,
    locals: HashMap<String, Vec<Local<'d>>>,
}

/// The accumulator of the macros' comprehensions.
const ACCUMULATOR: &str = "@result";

impl<'d> Coster<'d> {
    /// The declaration at `path` (its first element, the variable, aside).
    fn decl_at(&self, path: &[String]) -> Option<&'d Decl> {
        let mut decl = self.root;
        for name in path.iter().skip(1) {
            decl = match (&decl.shape, name.as_str()) {
                (Shape::List(items), "@items") => items,
                (Shape::Map(_, values), "@values") => values,
                (Shape::Map(keys, _), "@keys") => keys,
                (Shape::Object(fields), field) => fields.get(field)?,
                _ => return None,
            };
        }
        Some(decl)
    }

    /// cel-go's `computeSize`: what the evaluation gave, else the schema's, else 1 for
    /// a scalar, else a variable's.
    fn size(&self, info: &Info) -> Option<Range> {
        if let Some(size) = info.computed {
            return Some(size);
        }
        if !info.path.is_empty()
            && let Some(decl) = self.decl_at(&info.path)
        {
            return Some(Range {
                min: 0,
                max: decl.max_elements,
            });
        }
        if info.ty.scalar() {
            return Some(Range::fixed(1));
        }
        info.variable
    }

    fn size_or_unknown(&self, info: &Info) -> Range {
        self.size(info).unwrap_or(Range::UNKNOWN)
    }

    /// The size of the items of list `info` (Kubernetes' `listElementNode`): by the path,
    /// unknown without one (or under an accumulator).
    fn item_size(&self, info: &Info) -> Option<Range> {
        if !matches!(info.ty, Ty::List(_)) {
            return None;
        }
        if info.path.is_empty() || info.path[0] == ACCUMULATOR {
            return Some(Range::UNKNOWN);
        }
        let mut path = info.path.clone();
        path.push("@items".into());
        Some(self.decl_at(&path).map_or(Range::UNKNOWN, |d| Range {
            min: 0,
            max: d.max_elements,
        }))
    }

    fn cost(&mut self, e: &IdedExpr) -> (Range, Info<'d>) {
        match &e.expr {
            Expr::Literal(literal) => (Range::fixed(0), literal_info(literal)),
            Expr::Ident(name) => (Range::fixed(1), self.ident(name)),
            Expr::Select(select) => {
                let (cost, operand) = self.cost(&select.operand);
                if select.test {
                    return (cost.add(Range::fixed(1)), Info::typed(Ty::Bool));
                }
                let (extra, ty) = match &operand.ty {
                    Ty::Object(fields) => (1, fields.get(&select.field).map_or(Ty::Dyn, Ty::of)),
                    Ty::Map(values) => (1, (**values).clone()),
                    _ => (0, Ty::Dyn),
                };
                let mut path = operand.path.clone();
                path.push(select.field.clone());
                let info = Info {
                    path,
                    ..Info::typed(ty)
                };
                (cost.add(Range::fixed(extra)), info)
            }
            Expr::List(list) => {
                let mut sum = Range::fixed(10);
                let mut items = Range {
                    min: if list.elements.is_empty() {
                        0
                    } else {
                        u64::MAX
                    },
                    max: 0,
                };
                let mut ty = Ty::Dyn;
                for element in &list.elements {
                    let (cost, info) = self.cost(element);
                    sum = sum.add(cost);
                    items = items.union(self.size_or_unknown(&info));
                    ty = info.ty;
                }
                let mut info = Info::sized(Ty::List(Box::new(ty)), list.elements.len() as u64);
                info.entries = Some(Entries {
                    list: true,
                    key: Range::fixed(1),
                    value: items,
                });
                (sum, info)
            }
            Expr::Map(map) => {
                let mut sum = Range::fixed(30);
                let empty = if map.entries.is_empty() { 0 } else { u64::MAX };
                let (mut keys, mut values) =
                    (Range { min: empty, max: 0 }, Range { min: empty, max: 0 });
                let mut ty = Ty::Dyn;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        let (key_cost, key) = self.cost(&entry.key);
                        let (value_cost, value) = self.cost(&entry.value);
                        sum = sum.add(key_cost).add(value_cost);
                        keys = keys.union(self.size_or_unknown(&key));
                        values = values.union(self.size_or_unknown(&value));
                        ty = value.ty;
                    }
                }
                let mut info = Info::sized(Ty::Map(Box::new(ty)), map.entries.len() as u64);
                info.entries = Some(Entries {
                    list: false,
                    key: keys,
                    value: values,
                });
                (sum, info)
            }
            Expr::Struct(fields) => {
                let mut sum = Range::fixed(40);
                for entry in &fields.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        sum = sum.add(self.cost(&field.value).0);
                    }
                }
                (sum, Info::typed(Ty::Dyn))
            }
            Expr::Comprehension(comprehension) => self.comprehension(comprehension),
            Expr::Call(call) => self.call(&call.func_name, call.target.as_deref(), &call.args),
            Expr::Unspecified => (Range::fixed(0), Info::typed(Ty::Dyn)),
        }
    }

    fn ident(&self, name: &str) -> Info<'d> {
        if let Some(local) = self.locals.get(name).and_then(|l| l.last()) {
            return Info {
                ty: local.ty.clone(),
                path: local.path.clone(),
                computed: None,
                variable: local.size,
                entries: local.entries,
                limit: None,
            };
        }
        let ty = match name {
            "self" => Ty::of(self.root),
            "oldSelf" if self.old_self_optional => Ty::Optional(Box::new(Ty::of(self.root))),
            "oldSelf" => Ty::of(self.root),
            _ => Ty::Dyn,
        };
        Info {
            path: vec![name.to_string()],
            ..Info::typed(ty)
        }
    }

    fn push(&mut self, name: &str, local: Local<'d>) {
        self.locals.entry(name.to_string()).or_default().push(local);
    }

    fn pop(&mut self, name: &str) {
        if let Some(stack) = self.locals.get_mut(name) {
            stack.pop();
        }
    }

    fn comprehension(&mut self, c: &cel::common::ast::ComprehensionExpr) -> (Range, Info<'d>) {
        let (range_cost, range) = self.cost(&c.iter_range);
        let (init_cost, init) = self.cost(&c.accu_init);
        let mut sum = range_cost.add(init_cost);
        let accumulator = Local {
            ty: init.ty.clone(),
            path: init.path.clone(),
            size: self.size(&init),
            entries: init.entries,
        };
        self.push(&c.accu_var, accumulator);
        let list = range
            .entries
            .map_or(matches!(range.ty, Ty::List(_)), |e| e.list);
        let item = |suffix: &str, size: Option<Range>, ty: Ty<'d>| {
            let mut path = range.path.clone();
            path.push(suffix.to_string());
            Local {
                ty,
                path,
                size,
                entries: None,
            }
        };
        let keys = range.entries.map(|e| e.key);
        let values = range.entries.map(|e| e.value);
        let items_ty = range.ty.items();
        match &c.iter_var2 {
            Some(second) => {
                let (key, key_ty) = if list {
                    ("@indices", Ty::Int)
                } else {
                    ("@keys", Ty::String)
                };
                self.push(&c.iter_var, item(key, keys, key_ty));
                let value_ty = match &range.ty {
                    Ty::List(t) | Ty::Map(t) => (**t).clone(),
                    _ => Ty::Dyn,
                };
                let value = if list { "@items" } else { "@values" };
                self.push(second, item(value, values, value_ty));
            }
            None if list => self.push(&c.iter_var, item("@items", values, items_ty)),
            None => self.push(&c.iter_var, item("@keys", keys, items_ty)),
        }
        let (loop_cost, _) = self.cost(&c.loop_cond);
        let (step_cost, step) = self.cost(&c.loop_step);
        self.pop(&c.iter_var);
        if let Some(second) = &c.iter_var2 {
            self.pop(second);
        }
        let (result_cost, result) = self.cost(&c.result);
        self.pop(&c.accu_var);
        sum = sum.add(result_cost);
        let count = self.size_or_unknown(&range);
        sum = sum.add(count.mul(step_cost.add(loop_cost)));
        let mut info = Info::typed(result.ty);
        match &c.accu_init.expr {
            Expr::Literal(_) => info.computed = self.size(&init),
            Expr::List(_) | Expr::Map(_) => {
                info.computed = Some(count);
                info.entries = step.entries;
                if let (Ty::List(_), Some(entries)) = (&info.ty, step.entries)
                    && entries.list
                {
                    info.ty = Ty::List(Box::new(Ty::Dyn));
                }
            }
            _ => {}
        }
        (sum, info)
    }

    fn call(
        &mut self,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> (Range, Info<'d>) {
        if name == "dyn" && target.is_none() && args.len() == 1 {
            let (cost, info) = self.cost(&args[0]);
            return (
                cost.add(Range::fixed(1)),
                Info {
                    ty: Ty::Dyn,
                    ..info
                },
            );
        }
        // A namespace's function (`sets.contains`, `optional.of`, `format.named`).
        let (name, target) = match target.map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if matches!(
                    ns.as_str(),
                    "sets" | "optional" | "format" | "strings" | "math"
                ) && !self.locals.contains_key(ns) =>
            {
                (format!("{ns}.{name}"), None)
            }
            _ => (name.to_string(), target),
        };
        let mut costs = Vec::with_capacity(args.len());
        let mut infos = Vec::with_capacity(args.len());
        for arg in args {
            let (cost, info) = self.cost(arg);
            costs.push(cost);
            infos.push(info);
        }
        let arg_costs = match (name.as_str(), costs.as_slice()) {
            // Short-circuits: at least the left side's.
            ("_&&_" | "_||_", [l, r]) => {
                let cost = Range {
                    min: l.min,
                    max: l.max.saturating_add(r.max),
                };
                return (cost, Info::typed(Ty::Bool));
            }
            ("_?_:_", [c, t, f]) => c.add(t.union(*f)),
            _ => costs.iter().fold(Range::fixed(0), |sum, c| sum.add(*c)),
        };
        let mut sum = Range::fixed(0);
        let target = target.map(|t| {
            let (cost, info) = self.cost(t);
            sum = cost;
            info
        });
        let call = Call {
            coster: self,
            name: &name,
            target: target.as_ref(),
            args: &infos,
        };
        let (cost, mut info) = call.estimate();
        (sum.add(cost).add(arg_costs), {
            if info.computed.is_none() && !info.path.is_empty() {
                info.computed = self.size(&info);
            }
            info
        })
    }
}

/// One call being estimated: its function, target and arguments.
struct Call<'a, 'd> {
    coster: &'a Coster<'d>,
    name: &'a str,
    target: Option<&'a Info<'d>>,
    args: &'a [Info<'d>],
}

/// What a call of a string's size costs: `factor` per character of `size`.
fn traversal(size: Range, factor: f64) -> Range {
    size.factor(factor)
}

impl<'d> Call<'_, 'd> {
    fn size(&self, info: &Info) -> Range {
        self.coster.size_or_unknown(info)
    }

    fn arg(&self, i: usize) -> Option<&Info<'d>> {
        self.args.get(i)
    }

    /// The call's cost (its arguments' and target's aside) and what its value is.
    fn estimate(&self) -> (Range, Info<'d>) {
        let one = Range::fixed(1);
        let target_ty = self.target.map(|t| t.ty.clone());
        let arg_ty = |i: usize| self.arg(i).map_or(Ty::Dyn, |a| a.ty.clone());
        let string = |cost: Range| (cost, Info::typed(Ty::String));
        let boolean = |cost: Range| (cost, Info::typed(Ty::Bool));
        let int = |cost: Range| (cost, Info::typed(Ty::Int));
        match (self.name, self.target, self.args) {
            ("_?_:_", None, [_, t, f]) => {
                let size = self.size(t).union(self.size(f));
                let mut info = Info::sized(t.ty.clone(), 0);
                info.computed = Some(size);
                info.entries = Entries::union(t.entries, f.entries);
                (Range::fixed(0), info)
            }
            ("_[_]" | "_[?_]", None, [container, _]) => {
                let (suffix, ty) = match &container.ty {
                    Ty::List(t) => ("@items", (**t).clone()),
                    Ty::Map(t) => ("@values", (**t).clone()),
                    _ => ("@items", Ty::Dyn),
                };
                let mut path = container.path.clone();
                path.push(suffix.to_string());
                let mut info = Info {
                    path,
                    ..Info::typed(ty)
                };
                info.computed = container.entries.map(|e| e.value);
                (one, info)
            }
            ("_==_" | "_!=_", None, [l, r]) => boolean(self.equality(l, r)),
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [l, r]) => {
                let text = l.ty.text() || r.ty.text();
                let unknown = l.ty == Ty::Dyn && r.ty == Ty::Dyn;
                let cost = if text || unknown {
                    self.compare(l, r).union(one)
                } else {
                    one
                };
                boolean(cost)
            }
            ("_+_", None, [l, r]) => self.add(l, r),
            ("@in", None, [_, container]) => match &container.ty {
                Ty::Map(_) => boolean(one),
                _ => boolean(self.size(container).union(one)),
            },
            ("size", _, _) => int(one),
            ("startsWith" | "endsWith", Some(_), [prefix]) => {
                boolean(traversal(self.size(prefix), TRAVERSAL))
            }
            ("contains", Some(t), [sub]) if t.ty.text() || t.ty == Ty::Dyn => boolean(
                traversal(self.size(t), TRAVERSAL).mul(traversal(self.size(sub), TRAVERSAL)),
            ),
            ("matches", Some(s), [re]) | ("matches", None, [s, re]) => boolean(self.regex(s, re)),
            ("find" | "findAll", Some(s), [re, ..]) => {
                let size = self.size(s);
                let ty = if self.name == "find" {
                    Ty::String
                } else {
                    Ty::List(Box::new(Ty::String))
                };
                let mut info = Info::typed(ty);
                info.computed = Some(Range {
                    min: 0,
                    max: size.max,
                });
                (self.regex(s, re), info)
            }
            ("lowerAscii" | "upperAscii" | "trim" | "substring", Some(t), _) => {
                let size = self.size(t);
                let mut info = Info::typed(Ty::String);
                info.computed = Some(size);
                (traversal(size, TRAVERSAL), info)
            }
            ("replace", Some(t), [from, to, ..]) => self.replace(t, from, to),
            ("split", Some(t), _) => {
                let size = self.size(t);
                let limit = self.arg(1).and_then(|a| a.limit).unwrap_or(size.max);
                let mut info = Info::typed(Ty::List(Box::new(Ty::String)));
                info.computed = Some(Range { min: 0, max: limit });
                (traversal(size, 2.0 * TRAVERSAL), info)
            }
            ("join", Some(list), _) => {
                let count = self.size(list);
                let mut size = match self.coster.item_size(list) {
                    Some(item) => count.mul(item),
                    None => Range::fixed(0),
                };
                if let Some(separator) = self.arg(0) {
                    let separators = Range {
                        min: count.min.saturating_sub(1),
                        max: count.max.saturating_sub(1),
                    };
                    size = size.add(self.size(separator).mul(separators));
                }
                let mut info = Info::typed(Ty::String);
                info.computed = Some(size);
                (traversal(size, TRAVERSAL), info)
            }
            (
                "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes",
                Some(t),
                _,
            ) => {
                let cost = match (self.coster.item_size(t), t.ty.items()) {
                    (Some(item), Ty::String | Ty::Bytes) => {
                        self.size(t).mul(one.add(traversal(item, TRAVERSAL)))
                    }
                    (Some(_), _) => self.size(t),
                    (None, _) => traversal(self.size(t), TRAVERSAL),
                };
                let ty = match self.name {
                    "isSorted" | "includes" => Ty::Bool,
                    "indexOf" | "lastIndexOf" => Ty::Int,
                    _ => t.ty.items(),
                };
                (cost, Info::typed(ty))
            }
            ("url", None, [s]) => {
                let size = self.size(s);
                let mut info = Info::typed(Ty::Library("url"));
                info.computed = Some(size);
                (traversal(size, TRAVERSAL), info)
            }
            ("quantity" | "semver" | "cidr", None, [s, ..]) | ("ip", None, [s]) => {
                let library = match self.name {
                    "quantity" => "quantity",
                    "semver" => "semver",
                    "cidr" => "cidr",
                    _ => "ip",
                };
                (
                    traversal(self.size(s), TRAVERSAL),
                    Info::typed(Ty::Library(library)),
                )
            }
            ("isQuantity" | "isSemver" | "isIP" | "isCIDR", None, [s, ..]) => {
                boolean(traversal(self.size(s), TRAVERSAL))
            }
            ("ip.isCanonical", None, [s]) => boolean(traversal(self.size(s), 2.0 * TRAVERSAL)),
            ("containsIP" | "containsCIDR", Some(_), [other]) => {
                let addresses = Range { min: 4, max: 16 };
                let mut cost = traversal(addresses.add(addresses), TRAVERSAL);
                if self.name == "containsCIDR" {
                    cost = cost.add(traversal(addresses, TRAVERSAL)).add(one);
                }
                if other.ty == Ty::String {
                    cost = cost.add(traversal(self.size(other), TRAVERSAL));
                }
                boolean(cost)
            }
            ("validate", Some(_), [s]) => (
                traversal(self.size(s), TRAVERSAL).factor(128.0 * REGEX),
                Info::typed(Ty::Optional(Box::new(Ty::List(Box::new(Ty::String))))),
            ),
            ("sets.contains" | "sets.intersects", None, [a, b]) => {
                boolean(self.size(a).mul(self.size(b)).add(one))
            }
            ("sets.equivalent", None, [a, b]) => {
                boolean(self.size(a).mul(self.size(b)).factor(2.0).add(one))
            }
            ("bytes", None, [s]) if s.ty == Ty::String => {
                let size = self.size(s);
                let mut info = Info::typed(Ty::Bytes);
                info.computed = Some(Range {
                    min: size.min,
                    max: size.max.saturating_mul(4),
                });
                (traversal(size, TRAVERSAL), info)
            }
            ("string", None, [b]) if b.ty == Ty::Bytes => {
                let size = self.size(b);
                let mut info = Info::typed(Ty::String);
                info.computed = Some(Range {
                    min: size.min / 4,
                    max: size.max,
                });
                (traversal(size, TRAVERSAL), info)
            }
            ("strings.quote", None, [s]) => {
                let size = self.size(s);
                let mut info = Info::typed(Ty::String);
                info.computed = Some(Range {
                    min: size.min.saturating_add(2),
                    max: size.max.saturating_mul(2).saturating_add(2),
                });
                (traversal(size, TRAVERSAL), info)
            }
            ("format", Some(t), _) if t.ty == Ty::String => {
                string(traversal(self.size(t), TRAVERSAL))
            }
            _ => (
                one,
                Info::typed(result_type(self.name, target_ty.as_ref(), &arg_ty(0))),
            ),
        }
    }

    /// `_==_` and `_!=_`: the shorter operand's traversal, or Kubernetes' costs of its
    /// library types.
    fn equality(&self, l: &Info, r: &Info) -> Range {
        if l.ty == r.ty
            && let Ty::Library(library) = l.ty
        {
            return match library {
                "url" => {
                    let size = self.coster.size(r).unwrap_or(Range::fixed(1));
                    Range {
                        min: 1,
                        max: size.max,
                    }
                    .factor(TRAVERSAL)
                }
                "format" => Range { min: 1, max: 64 }.factor(TRAVERSAL),
                _ => Range::fixed(1),
            };
        }
        self.compare(l, r)
    }

    /// A comparison by traversal of the shorter operand.
    fn compare(&self, l: &Info, r: &Info) -> Range {
        let shortest = self.size(l).max.min(self.size(r).max);
        Range {
            min: u64::from(shortest > 0),
            max: shortest,
        }
        .factor(TRAVERSAL)
    }

    /// `s.matches(re)`, `s.find(re)`: the string's traversal times the pattern's.
    fn regex(&self, s: &Info, re: &Info) -> Range {
        let text = self.size(s).add(Range::fixed(1)).factor(TRAVERSAL);
        text.mul(self.size(re).factor(REGEX))
    }

    /// `_+_`: strings and bytes by their sizes, lists 1 (tracking their sizes), others 1;
    /// operands of unknown types as the costliest.
    fn add(&self, l: &Info<'d>, r: &Info<'d>) -> (Range, Info<'d>) {
        let one = Range::fixed(1);
        let size = self.size(l).add(self.size(r));
        let concatenation = |ty: Ty<'d>, cost: Range| {
            let mut info = Info::typed(ty);
            info.computed = Some(size);
            info.entries = Entries::union(l.entries, r.entries);
            (cost, info)
        };
        let text = traversal(size, TRAVERSAL);
        match (&l.ty, &r.ty) {
            (Ty::String, _) | (_, Ty::String) => concatenation(Ty::String, text),
            (Ty::Bytes, _) | (_, Ty::Bytes) => concatenation(Ty::Bytes, text),
            (Ty::List(t), _) | (Ty::Dyn, Ty::List(t)) => concatenation(Ty::List(t.clone()), one),
            (Ty::Dyn, Ty::Dyn) => concatenation(Ty::Dyn, text.union(one)),
            (t, _) => (one, Info::typed(t.clone())),
        }
    }

    /// `s.replace(from, to)`: twice the string's traversal; its result's size grows with
    /// the replacements.
    fn replace(&self, t: &Info, from: &Info, to: &Info) -> (Range, Info<'d>) {
        let size = self.size(t);
        let (from, to) = (self.size(from), self.size(to));
        let (mut count, mut retained) = (Range::fixed(0), Range::fixed(0));
        if from.min == 0 {
            count.max = if size.max < u64::MAX {
                size.max + 1
            } else {
                size.max
            };
            retained.max = size.max;
        } else if to.max <= from.min {
            retained.max = size.max;
        } else {
            count.max = (size.max as f64 / from.min as f64).ceil() as u64;
        }
        if from.max == 0 {
            count.min = if size.min < u64::MAX {
                size.min + 1
            } else {
                size.min
            };
            retained.min = size.min;
        } else if from.max <= to.min {
            retained.min = size.min;
        } else {
            count.min = (size.min as f64 / from.max as f64).ceil() as u64;
        }
        let mut info = Info::typed(Ty::String);
        info.computed = Some(count.mul(to).add(retained));
        (traversal(size, 2.0 * TRAVERSAL), info)
    }
}

/// The type of a call's result, for the calls [`Call::estimate`] prices at 1.
fn result_type<'d>(name: &str, target: Option<&Ty<'d>>, first: &Ty<'d>) -> Ty<'d> {
    match name {
        "!_"
        | "@not_strictly_false"
        | "has"
        | "hasValue"
        | "isSorted"
        | "isLessThan"
        | "isGreaterThan"
        | "isInteger"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "bool"
        | "startsWith"
        | "endsWith"
        | "contains" => Ty::Bool,
        "int" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" | "getDate"
        | "getDayOfMonth" | "getDayOfWeek" | "getDayOfYear" | "getFullYear" | "getMonth"
        | "sign" | "compareTo" | "asInteger" | "major" | "minor" | "patch" | "prefixLength"
        | "family" | "charAt_" => Ty::Int,
        "uint" => Ty::Uint,
        "double" | "asApproximateFloat" => Ty::Double,
        "string" | "charAt" | "getScheme" | "getHostname" | "getHost" | "getPort"
        | "getEscapedPath" => Ty::String,
        "timestamp" => Ty::Timestamp,
        "duration" => Ty::Duration,
        "add" | "sub" => Ty::Library("quantity"),
        "format.named" => Ty::Optional(Box::new(Ty::Library("format"))),
        "masked" | "prefix" => Ty::Library("cidr"),
        "optional.of" | "optional.ofNonZeroValue" => Ty::Optional(Box::new(first.clone())),
        "value" | "orValue" => match target {
            Some(Ty::Optional(t)) => (**t).clone(),
            _ => Ty::Dyn,
        },
        "-_" | "_-_" | "_*_" | "_/_" | "_%_" => first.clone(),
        "slice" | "distinct" | "sort" | "reverse" => target.cloned().unwrap_or(Ty::Dyn),
        _ => Ty::Dyn,
    }
}

fn literal_info<'d>(literal: &LiteralValue) -> Info<'d> {
    match literal {
        LiteralValue::String(s) => Info::sized(Ty::String, s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => Info::sized(Ty::Bytes, b.inner().len() as u64),
        LiteralValue::Boolean(_) => Info::sized(Ty::Bool, 1),
        LiteralValue::Double(_) => Info::sized(Ty::Double, 1),
        LiteralValue::Int(i) => {
            let mut info = Info::sized(Ty::Int, 1);
            info.limit = u64::try_from(*i.inner()).ok();
            info
        }
        LiteralValue::UInt(_) => Info::sized(Ty::Uint, 1),
        LiteralValue::Null => Info::sized(Ty::Null, 1),
    }
}

/// The most cost `expr` may have over values of declaration `root`.
fn estimate(expr: &IdedExpr, root: &Decl, old_self_optional: bool) -> u64 {
    let mut coster = Coster {
        root,
        old_self_optional,
        locals: HashMap::new(),
    };
    coster.cost(expr).0.max
}

/// How many times a value of schema `s` may hold each of its children
/// (apiextensions' `extractMaxElements`); `None` when unbounded.
pub(crate) fn max_elements(s: &Value) -> Option<u64> {
    match s["type"].as_str() {
        Some("object") if !s["additionalProperties"].is_null() => number(s, "maxProperties"),
        Some("array") => number(s, "maxItems"),
        _ => Some(1),
    }
}

/// The estimated cost of rule `expr` at schema node `s` (`root` for the resource's
/// root) that can occur `cardinality` times (`None`: unbounded, bounded then by the
/// request's size), as the real server compares it with its limits.
pub(crate) fn rule_cost(
    expr: &IdedExpr,
    s: &Value,
    root: bool,
    old_self_optional: bool,
    cardinality: Option<u64>,
) -> u64 {
    let Some(decl) = schema_decl(s, root) else {
        return 0;
    };
    let cost = estimate(expr, &decl, old_self_optional);
    let times = cardinality.unwrap_or(MAX_REQUEST / (decl.min_size + 1));
    if cost == 0 {
        0
    } else {
        cost.saturating_mul(times)
    }
}

/// The estimated cost of a `messageExpression` at schema node `s`.
pub(crate) fn message_cost(expr: &IdedExpr, s: &Value, root: bool) -> u64 {
    schema_decl(s, root).map_or(0, |decl| estimate(expr, &decl, false))
}

/// The real server's words for an estimated cost over `limit`.
fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "Forbidden: {what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The fault of a rule (`what`: "rule") or `messageExpression` whose estimated cost is
/// over the per-expression limit.
pub(crate) fn over_limit(what: &str, cost: u64) -> Option<String> {
    (cost > RULE_LIMIT).then(|| over_budget(&format!("estimated {what} cost"), cost, RULE_LIMIT))
}

/// The estimated costs of a schema's rules together, and the most expensive of them.
#[derive(Default)]
pub(crate) struct Total {
    total: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    /// Counts the cost of the rule or `messageExpression` at `field`.
    pub(crate) fn observe(&mut self, field: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((field.to_string(), cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }

    /// The faults of a schema (at `at`) whose rules together are over the limit.
    pub(crate) fn faults(&self, at: &str) -> Vec<crate::cel_rules::Fault> {
        if self.total <= SCHEMA_LIMIT {
            return Vec::new();
        }
        let mut faults: Vec<crate::cel_rules::Fault> = self
            .most_expensive
            .iter()
            .map(|(field, _)| {
                let why = "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
                (field.clone(), "FieldValueForbidden", why.to_string())
            })
            .collect();
        let what = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema";
        faults.push((
            at.to_string(),
            "FieldValueForbidden",
            over_budget(what, self.total, SCHEMA_LIMIT),
        ));
        faults
    }
}

/// The cost of evaluating `expr` at schema node `s` with `self` = `value` (and
/// `oldSelf` = `old`): the estimate with the values' sizes (see the module's docs).
pub(crate) fn actual_cost(
    expr: &IdedExpr,
    s: &Value,
    value: &Value,
    old: Option<&Value>,
    old_self_optional: bool,
) -> u64 {
    let values: Vec<&Value> = std::iter::once(value).chain(old).collect();
    let actual = value_decl(s, &values).map_or(0, |decl| estimate(expr, &decl, old_self_optional));
    // The estimate with the schema's sizes bounds the actual cost too (where a size
    // the values' do not give, such as a conversion's result, is unknown to both).
    let bound =
        schema_decl(s, false).map_or(u64::MAX, |decl| estimate(expr, &decl, old_self_optional));
    actual.min(bound)
}

/// The budget of one write's rules: what is left, and whether a rule stopped the
/// validation.
pub(crate) struct Budget {
    left: u64,
    /// Set once a rule ran out of the budget or over the per-call limit.
    pub(crate) stopped: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            left: RUNTIME_BUDGET,
            stopped: false,
        }
    }
}

/// What a [`Budget`] is charged for.
pub(crate) enum Charged<'a> {
    /// A rule, named by its message or text.
    Rule(&'a str),
    /// A `messageExpression` of this text.
    Message(&'a str),
}

impl Budget {
    /// Charges an evaluation of `cost`: `None` if it is within the limits, else the
    /// real server's reason to stop, and no rule runs after.
    pub(crate) fn charge(&mut self, cost: u64, what: Charged) -> Option<String> {
        // cel-go stops an evaluation as soon as it costs more than the limit.
        let spent = cost.min(PER_CALL_LIMIT + 1);
        let over_budget = spent > self.left;
        self.left = self.left.saturating_sub(spent);
        if !over_budget && cost <= PER_CALL_LIMIT {
            return None;
        }
        self.stopped = true;
        let out_of_budget =
            "failed due to running out of cost budget, no further validation rules will be run";
        let cancelled = "'operation cancelled: actual cost limit exceeded'";
        let over_limit = "no further validation rules will be run due to call cost exceeds limit";
        Some(match (what, over_budget) {
            (Charged::Rule(_), true) => format!("validation {out_of_budget}"),
            (Charged::Rule(named), false) => format!("{cancelled}: {over_limit} for rule: {named}"),
            (Charged::Message(_), true) => format!("messageExpression evaluation {out_of_budget}"),
            (Charged::Message(source), false) => format!(
                "{over_limit} for messageExpression: {}",
                crate::status::shown(&Value::String(source.to_string()))
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cost(rule: &str, s: Value) -> u64 {
        let program = cel::Program::compile(rule).expect("a valid rule");
        let decl = schema_decl(&s, false).expect("a declared schema");
        estimate(program.expression(), &decl, false)
    }

    fn strings(max_items: Option<u64>, max_length: Option<u64>) -> Value {
        let mut items = json!({"type": "string"});
        if let Some(n) = max_length {
            items["maxLength"] = json!(n);
        }
        let mut list = json!({"type": "array", "items": items});
        if let Some(n) = max_items {
            list["maxItems"] = json!(n);
        }
        list
    }

    #[test]
    fn field_selection_and_comparison_of_scalars_cost_their_steps() {
        let s = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string", "maxLength": 10}}});
        // self (1) + .n (1) + == of an integer field (0).
        assert_eq!(cost("self.n == 1", s.clone()), 2);
        // The string's 40 bytes against a literal of 1: min 1 * 0.1, rounded up.
        assert_eq!(cost("self.s == 'a'", s.clone()), 3);
        assert_eq!(cost("self.s.size() < 3 && self.n > 0", s), 7);
    }

    #[test]
    fn comprehensions_cost_their_steps_times_their_range() {
        // 10 items of 40 bytes: each step `x.startsWith('a')` costs 1 + 1 + 0.1,
        // the condition 2, and && 1.
        let all = cost(
            "self.all(x, x.startsWith('a'))",
            strings(Some(10), Some(10)),
        );
        assert_eq!(all, 1 + 1 + 10 * (2 + 1 + 2));
        // Unbounded: (3 MiB - 2) / (2 + 1) items.
        let unbounded = cost("self.all(x, x.size() > 0)", strings(None, None));
        assert_eq!(unbounded, 1 + 1 + 1_048_575 * (2 + 1 + 3));
    }

    #[test]
    fn nested_comprehensions_multiply_and_regexes_cost_string_times_pattern() {
        let lists = json!({"type": "array", "maxItems": 10, "items": strings(Some(20), Some(5))});
        let nested = cost("self.all(l, l.all(x, x.size() < 3))", lists);
        let inner = 1 + 1 + 20 * (2 + 1 + 3);
        assert_eq!(nested, 1 + 1 + 10 * (2 + 1 + inner));
        // matches: ceil((20 + 1) * 0.1) * ceil(7 * 0.25) + self.
        let s = json!({"type": "string", "maxLength": 5});
        assert_eq!(cost("self.matches('^[a-z]+')", s), 1 + 3 * 2);
    }

    #[test]
    fn a_rule_cost_is_multiplied_by_how_often_its_node_occurs() {
        let item = json!({"type": "string", "maxLength": 10});
        let program = cel::Program::compile("self.startsWith('a')").unwrap();
        assert_eq!(
            rule_cost(program.expression(), &item, false, false, Some(7)),
            7 * 2
        );
        // Unbounded: 3 MiB / (2 + 1).
        let times = 3 * 1024 * 1024 / 3;
        assert_eq!(
            rule_cost(program.expression(), &item, false, false, None),
            2 * times
        );
        assert_eq!(max_elements(&strings(Some(4), None)), Some(4));
        assert_eq!(max_elements(&strings(None, None)), None);
    }

    #[test]
    fn budget_messages_give_the_real_servers_factors() {
        assert_eq!(
            over_limit("rule", 12_582_912).unwrap(),
            "Forbidden: estimated rule cost exceeds budget by factor of 1.258291x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(
            over_limit("rule", 31_000_000)
                .unwrap()
                .contains("factor of 3.1x")
        );
        assert!(
            over_limit("rule", u64::MAX)
                .unwrap()
                .contains("more than 100x")
        );
        assert_eq!(over_limit("rule", 10_000_000), None);
    }

    #[test]
    fn runtime_cost_uses_the_values_sizes_and_stops_over_the_limits() {
        let s = strings(None, None);
        let program = cel::Program::compile("self.all(x, self.all(y, x == y || x != y))").unwrap();
        let small = json!(["a", "b"]);
        let cost = actual_cost(program.expression(), &s, &small, None, false);
        assert!(cost < 100, "{cost}");
        let big = Value::Array((0..2000).map(|i| json!(format!("item-{i}"))).collect());
        let cost = actual_cost(program.expression(), &s, &big, None, false);
        assert!(cost > PER_CALL_LIMIT, "{cost}");
        let mut budget = Budget::default();
        assert_eq!(budget.charge(600_000, Charged::Rule("r")), None);
        let stop = budget.charge(cost, Charged::Rule("r")).unwrap();
        assert!(
            stop.contains("call cost exceeds limit for rule: r"),
            "{stop}"
        );
        assert!(budget.stopped);
        let mut budget = Budget::default();
        for _ in 0..10 {
            assert_eq!(budget.charge(999_999, Charged::Rule("r")), None);
        }
        assert_eq!(
            budget.charge(20, Charged::Rule("r")).unwrap(),
            "validation failed due to running out of cost budget, no further validation rules will be run"
        );
        let mut budget = Budget::default();
        let stop = budget
            .charge(2_000_000, Charged::Message("'a' + self"))
            .unwrap();
        assert_eq!(
            stop,
            "no further validation rules will be run due to call cost exceeds limit for messageExpression: \"'a' + self\""
        );
        let mut budget = Budget {
            left: 5,
            ..Budget::default()
        };
        let stop = budget.charge(6, Charged::Message("m")).unwrap();
        assert!(
            stop.starts_with(
                "messageExpression evaluation failed due to running out of cost budget"
            ),
            "{stop}"
        );
    }
}
