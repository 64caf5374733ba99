//! Scenarios of CEL rules' cost: the estimated cost checked when a rule is written and
//! the cost budget of its evaluation.

use super::*;

/// The group of a scenario's own CRDs (cluster-wide names, so made unique by `t.ns`).
fn cost_group(t: &Target) -> String {
    format!("{}.cost.kubekit.dev", t.ns)
}

/// A CRD of kind `kind` (plural: lower case and an `s`) in [`cost_group`], whose spec
/// has schema `spec`.
fn cost_crd(t: &Target, kind: &str, spec: Value) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    let group = cost_group(t);
    json!({"metadata": {"name": format!("{plural}.{group}")}, "spec": {"group": group,
        "scope": "Namespaced", "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}})
}

/// `schema` with `rules` (rule texts) as its `x-kubernetes-validations`.
fn ruled(mut schema: Value, rules: &[&str]) -> Value {
    let rules: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
    schema["x-kubernetes-validations"] = json!(rules);
    schema
}

/// A list of strings, with `maxItems` and `maxLength` where given.
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

/// An object schema of `properties`.
fn object(properties: Value) -> Value {
    json!({"type": "object", "properties": properties})
}

/// Writes (as a dry run) a CRD whose spec has schema `spec`: `"accepted"`, or the
/// refusal's whole status.
async fn dry_crd(t: &Target, spec: Value) -> Value {
    let body = cost_crd(t, "Cost", spec);
    let answer = t
        .rest
        .post()
        .group_version("apiextensions.k8s.io", "v1")
        .resource("customresourcedefinitions")
        .param("dryRun", "All")
        .body(&body)
        .send()
        .await
        .and_then(|r| r.decode::<Value>());
    match answer {
        Ok(_) => json!("accepted"),
        Err(e) => match e.status() {
            Some(status) => serde_json::to_value(status).expect("status serializes"),
            None => json!({"transport error": e.to_string()}),
        },
    }
}

/// Records, for each `(label, spec)`, what a dry-run CRD write of `spec` answered.
async fn record_crds(t: &Target, r: &mut Record, steps: Vec<(&str, Value)>) {
    for (label, spec) in steps {
        r.push(label, dry_crd(t, spec).await);
    }
}

/// A regex of `length` characters that every string of `a`s (and the empty one) matches.
fn pattern(length: usize, letter: char) -> String {
    format!("^{}$", format!("{letter}?").repeat((length - 2) / 2))
}

#[tokio::test]
async fn rules_over_the_estimated_cost_limit_refuse_their_crd_alike() {
    differential("celcost-limit", async |t: &Target, r: &mut Record| {
        let dashed = "self.all(t, t.contains('-'))";
        let groups = |max_items: Option<u64>| {
            let mut list = json!({"type": "array", "items": object(json!({
                "tags": ruled(strings(Some(100), Some(63)), &[dashed])}))});
            if let Some(n) = max_items {
                list["maxItems"] = json!(n);
            }
            object(json!({"groups": list}))
        };
        let labels = |max: Option<u64>, rule: &str| {
            let mut map = json!({"type": "object", "additionalProperties": {"type": "string"}});
            if let Some(n) = max {
                map["maxProperties"] = json!(n);
            }
            object(json!({"labels": ruled(map, &[rule])}))
        };
        let message = |expression: &str| {
            let mut tags = strings(Some(100), Some(63));
            tags["x-kubernetes-validations"] =
                json!([{"rule": "self.size() < 10", "messageExpression": expression}]);
            object(json!({"tags": tags}))
        };
        let steps = vec![
            (
                "all over an unbounded list of unbounded strings",
                object(json!({"tags": ruled(strings(None, None), &[dashed])})),
            ),
            (
                "all over unbounded items of bounded strings",
                object(json!({"tags": ruled(strings(None, Some(63)), &[dashed])})),
            ),
            (
                "all over a bounded list of unbounded strings",
                object(json!({"tags": ruled(strings(Some(100), None), &[dashed])})),
            ),
            (
                "all over a bounded list of bounded strings",
                object(json!({"tags": ruled(strings(Some(100), Some(63)), &[dashed])})),
            ),
            ("a bounded rule under an unbounded list", groups(None)),
            ("under a list of 1000", groups(Some(1000))),
            ("under a list of 4000", groups(Some(4000))),
            ("under a list of 10000", groups(Some(10000))),
            (
                "keys of an unbounded map",
                labels(None, "self.all(k, k.contains('x'))"),
            ),
            (
                "values of an unbounded map",
                labels(None, "self.all(k, self[k].contains('x'))"),
            ),
            (
                "values of a bounded map",
                labels(Some(20), "self.all(k, self[k].contains('x'))"),
            ),
            (
                "a message naming a string of an integer",
                message("'too many tags: ' + string(self.size())"),
            ),
            (
                "a message joining the tags",
                message("'too many tags: ' + self.join(', ')"),
            ),
        ];
        record_crds(t, r, steps).await;
    })
    .await;
}

#[tokio::test]
async fn schemas_whose_rules_together_cost_too_much_are_refused_alike() {
    differential("celcost-total", async |t: &Target, r: &mut Record| {
        // Each rule about 8 million: under the rule limit, 13 of them over the total.
        let rules: Vec<String> = (0..13)
            .map(|i| format!("self.all(n, n.matches('{}'))", pattern(400 - 4 * i, 'a')))
            .collect();
        let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
        let names =
            |n: usize| object(json!({"names": ruled(strings(Some(2000), Some(100)), &rules[..n])}));
        let spread = object(json!({
            "first": ruled(strings(Some(2000), Some(100)), &rules[..7]),
            "second": ruled(strings(Some(2000), Some(100)), &rules[7..]),
        }));
        let steps = vec![
            ("twelve rules within the total", names(12)),
            ("thirteen rules over it", names(13)),
            ("thirteen rules over two lists", spread),
        ];
        record_crds(t, r, steps).await;
    })
    .await;
}

#[tokio::test]
async fn nested_comprehensions_over_lists_of_lists_multiply_their_costs_alike() {
    differential("celcost-nested", async |t: &Target, r: &mut Record| {
        let matrix = |outer: Option<u64>, inner: Option<u64>, rule: &str| {
            let mut row = json!({"type": "array", "items": {"type": "integer"}});
            if let Some(n) = inner {
                row["maxItems"] = json!(n);
            }
            let mut list = json!({"type": "array", "items": row});
            if let Some(n) = outer {
                list["maxItems"] = json!(n);
            }
            object(json!({"matrix": ruled(list, &[rule])}))
        };
        let positive = "self.all(row, row.all(v, v >= 0))";
        let one_zero = "self.exists(row, row.exists_one(v, v == 0))";
        let counts = "self.map(row, row.filter(v, v > 0).size()).all(n, n < 100)";
        let cube = |n: u64| {
            let inner = json!({"type": "array", "maxItems": n, "items": {"type": "integer"}});
            let middle = json!({"type": "array", "maxItems": n, "items": inner});
            let outer = json!({"type": "array", "maxItems": n, "items": middle});
            object(json!({"cube": ruled(outer, &["self.all(a, a.all(b, b.all(c, c > 0)))"])}))
        };
        let steps = vec![
            (
                "all of all over 1000 by 1000",
                matrix(Some(1000), Some(1000), positive),
            ),
            (
                "all of all over 2000 by 2000",
                matrix(Some(2000), Some(2000), positive),
            ),
            (
                "all of all over unbounded rows",
                matrix(Some(10), None, positive),
            ),
            (
                "all of all over unbounded lists",
                matrix(None, None, positive),
            ),
            (
                "exists of exists_one over 1000 by 1000",
                matrix(Some(1000), Some(1000), one_zero),
            ),
            (
                "exists of exists_one over 2000 by 2000",
                matrix(Some(2000), Some(2000), one_zero),
            ),
            (
                "map of filter over 500 by 500",
                matrix(Some(500), Some(500), counts),
            ),
            (
                "map of filter over 1000 by 1000",
                matrix(Some(1000), Some(1000), counts),
            ),
            (
                "map of filter over 2000 by 2000",
                matrix(Some(2000), Some(2000), counts),
            ),
            ("three levels of 100", cube(100)),
            ("three levels of 200", cube(200)),
        ];
        record_crds(t, r, steps).await;
    })
    .await;
}

#[tokio::test]
async fn string_rules_cost_by_their_lengths_alike() {
    differential("celcost-strings", async |t: &Target, r: &mut Record| {
        let text = |max: Option<u64>| match max {
            Some(n) => json!({"type": "string", "maxLength": n}),
            None => json!({"type": "string"}),
        };
        let spec = |rule: &str| {
            ruled(
                object(
                    json!({"a": text(Some(64)), "b": text(Some(64)), "s": text(None),
                    "list": strings(Some(50), Some(32)),
                    "mode": {"type": "string", "enum": ["fast", "thorough"]}}),
                ),
                &[rule],
            )
        };
        let long_match = format!("self.s.matches('{}')", pattern(140, 'a'));
        let rules = [
            ("concatenation and equality", "self.a + self.b != self.a"),
            ("a string containing itself", "self.s.contains(self.s)"),
            (
                "a string containing a bounded one",
                "self.s.contains(self.a)",
            ),
            (
                "twice that",
                "self.s.contains(self.a) && self.s.contains(self.b)",
            ),
            (
                "a short regex over an unbounded string",
                "self.s.matches('^[a-z]+$')",
            ),
            ("a long regex over it", long_match.as_str()),
            ("find over it", "self.s.find('[0-9]+') != ''"),
            ("split and all", "self.s.split(',').all(p, p.size() < 10)"),
            ("replace", "self.s.replace('a', 'bb').size() > 0"),
            (
                "lowerAscii then contains",
                "self.s.lowerAscii().contains(self.a)",
            ),
            ("join of a bounded list", "self.list.join(',').size() < 100"),
            (
                "exists comparing lowered items",
                "self.list.exists(x, x.lowerAscii() == self.a)",
            ),
            ("in a list", "'x' in self.list"),
            (
                "an enum's longest value",
                "self.list.all(x, x.startsWith(self.mode))",
            ),
            (
                "an enum against an unbounded string",
                "self.s.contains(self.mode)",
            ),
        ];
        let steps = rules
            .iter()
            .map(|(label, rule)| (*label, spec(rule)))
            .collect();
        record_crds(t, r, steps).await;
    })
    .await;
}

/// Creates the CRD of `kind` with spec schema `spec` in [`cost_group`] and waits until
/// its resource is served: the resource.
async fn served_crd<'a>(t: &'a Target, kind: &str, spec: Value, group: &'a str) -> Res<'a> {
    let body = cost_crd(t, kind, spec);
    create_cluster_scoped(
        t,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &body,
    )
    .await
    .expect("the CRD is created");
    let resource = Res {
        t,
        group,
        version: "v1",
        resource: format!("{}s", kind.to_lowercase()),
    };
    testenv::eventually(60, "the CRD is served", || async {
        resource.list(&[]).await.ok()
    })
    .await;
    resource
}

/// Deletes the CRD of `kind` in [`cost_group`].
async fn delete_crd(t: &Target, kind: &str) {
    let name = format!("{}s.{}", kind.to_lowercase(), cost_group(t));
    t.rest
        .delete()
        .group_version("apiextensions.k8s.io", "v1")
        .resource("customresourcedefinitions")
        .name(&name)
        .send()
        .await
        .expect("the CRD is deleted");
}

/// An object of `kind` in [`cost_group`] named `name` with `spec`.
fn cost_object(t: &Target, kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("{}/v1", cost_group(t)), "kind": kind,
        "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn rules_running_over_the_call_limit_or_the_write_budget_stop_alike() {
    differential("celcost-runtime", async |t: &Target, r: &mut Record| {
        // Five rules on each name (each 111 at runtime on a name of 100 characters),
        // and a rule comparing every pair of items.
        let name_rules: Vec<String> = "bcdef"
            .chars()
            .map(|l| format!("self.matches('^a*{}$')", format!("{l}?").repeat(18)))
            .collect();
        let name_rules: Vec<&str> = name_rules.iter().map(String::as_str).collect();
        let mut names = strings(Some(20000), Some(100));
        names["items"] = ruled(names["items"].clone(), &name_rules);
        let mut pairs = strings(Some(800), Some(20));
        pairs["x-kubernetes-validations"] =
            json!([{"rule": "self.all(x, self.exists_one(y, y == x))", "message": "pairs must be unique"}]);
        let group = cost_group(t);
        let spreads = served_crd(t, "Spread", object(json!({"names": names, "pairs": pairs})), &group).await;
        let spread = |name: &str, spec: Value| cost_object(t, "Spread", name, spec);
        let a100 = "a".repeat(100);
        let distinct = |n: usize| Value::Array((0..n).map(|i| json!(format!("pair-{i:015}"))).collect());
        let small = json!({"names": [a100, a100], "pairs": ["x", "y"]});
        r.answer("a spread within the limits", spreads.create(spread("small", small)).await.map(|s| s["spec"].clone()));
        let pairs_300 = json!({"pairs": distinct(300)});
        r.answer("300 pairs", spreads.create(spread("three-hundred", pairs_300)).await.map(|s| s["spec"]["pairs"].as_array().map(Vec::len).into()));
        r.answer("800 pairs, over the call limit", spreads.create(spread("eight-hundred", json!({"pairs": distinct(800)}))).await);
        let mut doubled = distinct(300);
        doubled[299] = doubled[0].clone();
        r.answer("300 pairs with a duplicate", spreads.create(spread("doubled", json!({"pairs": doubled}))).await);
        let many = |n: usize| Value::Array(vec![json!(a100); n]);
        r.answer("18020 names, over the budget", spreads.create(spread("many", json!({"names": many(18020)}))).await);
        let mut first_bad = many(18020);
        first_bad[0] = json!("b".repeat(100));
        r.answer("a bad name, then over the budget", spreads.create(spread("first-bad", json!({"names": first_bad}))).await);
        r.answer("1000 names", spreads.create(spread("thousand", json!({"names": many(1000)}))).await.map(|s| s["spec"]["names"].as_array().map(Vec::len).into()));
        delete_crd(t, "Spread").await;
    })
    .await;
}

#[tokio::test]
async fn transition_rules_and_their_messages_answer_alike() {
    differential("celcost-transition", async |t: &Target, r: &mut Record| {
        let entries = json!({"type": "array", "maxItems": 10, "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "maxLength": 10}, "amount": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.amount >= oldSelf.amount", "message": "amounts may only grow",
                    "fieldPath": ".amount", "reason": "FieldValueForbidden"}]}});
        let mut tags = strings(Some(10), Some(10));
        tags["x-kubernetes-list-type"] = json!("set");
        tags["x-kubernetes-validations"] = json!([{"rule": "oldSelf.all(t, t in self)", "message": "tags may not be removed"}]);
        let spec = object(json!({
            "owner": {"type": "string", "maxLength": 30, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "owner is immutable"}]},
            "limit": {"type": "integer", "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self >= oldSelf.value()",
                "optionalOldSelf": true, "messageExpression": "self < 0 ? 'limit may not be negative' : 'limit may only grow'"}]},
            "note": {"type": "string", "maxLength": 40, "x-kubernetes-validations": [{"rule": "self.size() < 20",
                "message": "note too long", "messageExpression": "self.startsWith('!') ? '' : 'note ' + self + ' is too long'"}]},
            "entries": entries,
            "tags": tags,
        }));
        let group = cost_group(t);
        let ledgers = served_crd(t, "Ledger", spec, &group).await;
        let ledger = |spec: Value| cost_object(t, "Ledger", "books", spec);
        let first = json!({"owner": "ann", "limit": 5, "note": "fine",
            "entries": [{"name": "a", "amount": 1}, {"name": "b", "amount": 2}], "tags": ["x", "y"]});
        r.answer("a ledger", ledgers.create(ledger(first)).await.map(|l| l["spec"].clone()));
        let steps = [
            ("another owner", json!({"spec": {"owner": "bob"}})),
            ("a lower limit", json!({"spec": {"limit": 3}})),
            ("a negative limit", json!({"spec": {"limit": -1}})),
            ("a long note", json!({"spec": {"note": "this note is far too long"}})),
            ("a long note whose message expression is empty", json!({"spec": {"note": "!this note is far too long"}})),
            ("a lower amount", json!({"spec": {"entries": [{"name": "a", "amount": 0}, {"name": "b", "amount": 2}]}})),
            ("reordered with a lower amount", json!({"spec": {"entries": [{"name": "b", "amount": 2}, {"name": "a", "amount": 0}]}})),
            ("a new entry", json!({"spec": {"entries": [{"name": "a", "amount": 1}, {"name": "b", "amount": 2}, {"name": "c", "amount": 0}]}})),
            ("a tag removed", json!({"spec": {"tags": ["x"]}})),
            ("changes the rules allow", json!({"spec": {"limit": 9, "tags": ["x", "y", "z"], "note": "ok",
                "entries": [{"name": "a", "amount": 4}, {"name": "b", "amount": 2}]}})),
        ];
        for (label, patch) in steps {
            let patched = ledgers.patch("books", PatchType::Merge, patch).await;
            r.answer(label, patched.map(|l| l["spec"].clone()));
        }
        delete_crd(t, "Ledger").await;
        let transition = json!([{"rule": "self == oldSelf"}]);
        let items_of = |list_type: Option<&str>| {
            let mut list = strings(Some(10), Some(10));
            list["items"]["x-kubernetes-validations"] = transition.clone();
            if let Some(kind) = list_type {
                list["x-kubernetes-list-type"] = json!(kind);
            }
            object(json!({"list": list}))
        };
        let steps = vec![
            ("a transition rule on an atomic list's items", items_of(None)),
            ("on a set's items", items_of(Some("set"))),
            ("optionalOldSelf without oldSelf", object(json!({"n": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self > 0", "optionalOldSelf": true}]}}))),
        ];
        record_crds(t, r, steps).await;
    })
    .await;
}

#[tokio::test]
async fn library_and_untyped_rules_are_estimated_alike() {
    differential("celcost-library", async |t: &Target, r: &mut Record| {
        let spec = |rule: &str| {
            ruled(
                object(json!({
                    "q": {"type": "string", "maxLength": 20},
                    "u": {"type": "string"},
                    "either": {"x-kubernetes-int-or-string": true},
                    "short": {"x-kubernetes-int-or-string": true, "maxLength": 10},
                    "list": strings(Some(1000), Some(64)),
                    "many": strings(None, Some(10)),
                    "labels": {"type": "object", "maxProperties": 50,
                        "additionalProperties": {"type": "string", "maxLength": 63}},
                    "at": {"type": "string", "format": "date-time"},
                })),
                &[rule],
            )
        };
        let rules = [
            (
                "a quantity comparison",
                "quantity(self.q).isLessThan(quantity('1Gi'))",
            ),
            (
                "a URL's host of an unbounded string",
                "url(self.u).getHost() != ''",
            ),
            ("IPs in a bounded list", "self.list.all(x, isIP(x))"),
            (
                "sets of a bounded list",
                "sets.equivalent(self.list, self.list)",
            ),
            (
                "sets of an unbounded list",
                "sets.intersects(self.many, self.many)",
            ),
            (
                "int-or-string equality",
                "self.either == 'a' || self.either == 1",
            ),
            (
                "int-or-string sums in a comprehension",
                "self.list.all(x, self.either + self.short != x)",
            ),
            (
                "map values against a regex",
                "self.labels.all(k, self.labels[k].matches('^[a-z]+$'))",
            ),
            (
                "a timestamp comparison",
                "self.at < timestamp('2030-01-01T00:00:00Z')",
            ),
            (
                "a join of mapped items",
                "self.list.map(x, x.upperAscii()).join(',').size() < 100000",
            ),
            ("indexOf of a list", "self.list.indexOf('a') >= 0"),
            (
                "a has and a ternary",
                "has(self.q) ? self.q.size() < 5 : self.list.exists(x, x == 'q')",
            ),
        ];
        let steps = rules
            .iter()
            .map(|(label, rule)| (*label, spec(rule)))
            .collect();
        record_crds(t, r, steps).await;
    })
    .await;
}

/// A CRD of kind `kind` in [`cost_group`] whose root has `rules` and whose spec has
/// schema `spec`.
fn root_ruled_crd(t: &Target, kind: &str, rules: Value, spec: Value) -> Value {
    let mut crd = cost_crd(t, kind, spec);
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = rules;
    crd
}

#[tokio::test]
async fn rules_at_the_schema_root_see_the_name_alike() {
    differential("celcost-root", async |t: &Target, r: &mut Record| {
        let spec = object(json!({"prefix": {"type": "string", "maxLength": 10}, "s": {"type": "string"}}));
        let group = cost_group(t);
        for (label, rule) in [
            ("the name against an unbounded string", "self.metadata.name.contains(self.spec.s)"),
            ("the kind against an unbounded string", "self.kind.contains(self.spec.s)"),
        ] {
            let body = root_ruled_crd(t, "Rooted", json!([{"rule": rule}]), spec.clone());
            let created = t
                .rest
                .post()
                .group_version("apiextensions.k8s.io", "v1")
                .resource("customresourcedefinitions")
                .param("dryRun", "All")
                .body(&body)
                .send()
                .await
                .and_then(|r| r.decode::<Value>());
            r.push(label, code_and_fields(created));
        }
        let rules = json!([{"rule": "self.metadata.name.startsWith(self.spec.prefix)", "message": "the name must start with the prefix"}]);
        let body = root_ruled_crd(t, "Rooted", rules, spec);
        create_cluster_scoped(t, "apiextensions.k8s.io", "customresourcedefinitions", &body)
            .await
            .expect("the CRD is created");
        let rooted = Res { t, group: &group, version: "v1", resource: "rooteds".into() };
        testenv::eventually(60, "the CRD is served", || async { rooted.list(&[]).await.ok() }).await;
        let object = |name: &str, prefix: &str| cost_object(t, "Rooted", name, json!({"prefix": prefix}));
        r.answer("a name with the prefix", rooted.create(object("app-one", "app-")).await.map(|o| o["spec"].clone()));
        r.answer("a name without it", rooted.create(object("web-one", "app-")).await);
        r.answer("another prefix", rooted.patch("app-one", PatchType::Merge, json!({"spec": {"prefix": "web-"}})).await);
        delete_crd(t, "Rooted").await;
    })
    .await;
}
