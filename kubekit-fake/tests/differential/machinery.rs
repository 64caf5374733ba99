//! Scenarios of the API machinery every kind shares: object metadata, list and watch
//! options, patches, deletion, tables, CustomResourceDefinitions and request errors.

use super::*;

use http::Method;

/// The answer to a request whatever its shape: its code and its body (JSON, or the text
/// of a body that is not JSON), or the `Status` of a refusal.
async fn raw_answer(req: Request) -> Value {
    match req.send().await {
        Ok(res) => {
            let body = serde_json::from_slice::<Value>(res.body())
                .unwrap_or_else(|_| json!(String::from_utf8_lossy(res.body())));
            json!({"code": res.status().as_u16(), "body": body})
        }
        Err(e) => match e.status() {
            Some(s) => json!({"error": s}),
            None => json!({"code": e.code(), "no status": true}),
        },
    }
}

/// A ConfigMap named `name` with `metadata` merged into its metadata.
fn cm_with(name: &str, metadata: Value) -> Value {
    let mut body = cm(name, json!({}));
    if let (Some(meta), Some(extra)) = (body["metadata"].as_object_mut(), metadata.as_object()) {
        meta.extend(extra.clone());
    }
    body
}

/// What of an accepted object a metadata scenario shows: its metadata without the fields
/// the servers set (uid, times, resourceVersion, managedFields), or the refusal.
fn meta_shown(answer: kubekit::rest::Result<Value>) -> kubekit::rest::Result<Value> {
    answer.map(|o| {
        let mut m = o["metadata"].clone();
        if let Some(m) = m.as_object_mut() {
            for k in [
                "uid",
                "creationTimestamp",
                "resourceVersion",
                "managedFields",
            ] {
                m.remove(k);
            }
        }
        m
    })
}

#[tokio::test]
async fn label_keys_and_values_are_validated_alike() {
    differential("mx-labels", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let long_prefix = format!("{}.example.com/a", "p".repeat(250));
        let cases = [
            ("a prefixed key", json!({"example.com/app": "web"})),
            ("a key of 63 characters", json!({"k".repeat(63): "v"})),
            ("a key of 64 characters", json!({"k".repeat(64): "v"})),
            (
                "a prefix of more than 253 characters",
                json!({long_prefix: "v"}),
            ),
            ("an empty prefix", json!({"/app": "v"})),
            ("an upper-case prefix", json!({"Example.com/app": "v"})),
            (
                "an empty name after the prefix",
                json!({"example.com/": "v"}),
            ),
            ("two slashes", json!({"a/b/c": "v"})),
            ("a key starting with a dash", json!({"-app": "v"})),
            ("a key with a space", json!({"my app": "v"})),
            ("an empty key", json!({"": "v"})),
            ("an empty value", json!({"app": ""})),
            ("a value of 63 characters", json!({"app": "v".repeat(63)})),
            ("a value of 64 characters", json!({"app": "v".repeat(64)})),
            ("a value ending with a dash", json!({"app": "web-"})),
            ("a value with a slash", json!({"app": "a/b"})),
            (
                "a value with dots and underscores",
                json!({"app": "a.b_c-d"}),
            ),
        ];
        let (cms, ws) = (t.on("configmaps"), t.on("widgets"));
        for (i, (label, labels)) in cases.into_iter().enumerate() {
            let name = format!("l{i}");
            let created = cms.create(cm(&name, labels.clone())).await;
            r.answer(&format!("configmap: {label}"), meta_shown(created));
            let created = ws.create(widget(&name, labels)).await;
            r.answer(&format!("widget: {label}"), meta_shown(created));
        }
        cms.create(cm("patched", json!({}))).await.expect("patched");
        let bad = json!({"metadata": {"labels": {"app": "no good"}}});
        r.answer(
            "a merge patch adding a bad label value",
            cms.patch("patched", PatchType::Merge, bad).await,
        );
        let mut stored = cms.get("patched").await.expect("patched");
        stored["metadata"]["labels"] = json!({"bad key!": "v"});
        r.answer(
            "an update with a bad label key",
            cms.update("patched", &stored, false).await,
        );
    })
    .await;
}

#[tokio::test]
async fn annotation_keys_and_their_total_size_are_validated_alike() {
    differential("mx-annotations", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        const LIMIT: usize = 256 * 1024;
        // The key `big` (3 bytes) and its value fill the limit exactly.
        let full = "x".repeat(LIMIT - 3);
        let over = "x".repeat(LIMIT - 2);
        let cases = [
            ("an upper-case key", json!({"Example.com/Note": "v"})),
            ("a key with a space", json!({"a note": "v"})),
            ("a key of 64 characters", json!({"n".repeat(64): "v"})),
            (
                "a value with anything in it",
                json!({"note": "any text: / ! ünïcode\n"}),
            ),
            ("an empty key", json!({"": "v"})),
            ("exactly the total limit", json!({"big": full})),
            ("one byte over the total limit", json!({"big": over})),
        ];
        let (cms, ws) = (t.on("configmaps"), t.on("widgets"));
        let shown = |a: kubekit::rest::Result<Value>| {
            meta_shown(a).map(|m| {
                let sizes: BTreeMap<String, usize> = m["annotations"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().map_or(0, str::len)))
                    .collect();
                json!(sizes)
            })
        };
        for (i, (label, annotations)) in cases.into_iter().enumerate() {
            let name = format!("a{i}");
            let meta = json!({"annotations": annotations});
            r.answer(
                &format!("configmap: {label}"),
                shown(cms.create(cm_with(&name, meta.clone())).await),
            );
            let mut w = widget(&name, json!({}));
            w["metadata"]["annotations"] = meta["annotations"].clone();
            r.answer(&format!("widget: {label}"), shown(ws.create(w).await));
        }
        let half = "x".repeat(LIMIT / 2);
        let first = json!({"metadata": {"annotations": {"one": half}}});
        let second = json!({"metadata": {"annotations": {"two": half}}});
        r.answer(
            "half the limit patched in",
            shown(cms.patch("a0", PatchType::Merge, first).await),
        );
        r.answer(
            "the other half patched in goes over",
            shown(cms.patch("a0", PatchType::Merge, second).await),
        );
    })
    .await;
}

#[tokio::test]
async fn finalizer_names_are_validated_and_warned_about_alike() {
    differential("mx-finalizers", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let cases = [
            ("a domain-qualified finalizer", json!(["kubekit.dev/hold"])),
            ("a finalizer without a domain", json!(["hold"])),
            ("a finalizer with a bad name", json!(["bad name!"])),
            ("two slashes", json!(["a/b/c"])),
            (
                "the same finalizer twice",
                json!(["kubekit.dev/a", "kubekit.dev/a"]),
            ),
            (
                "orphan and foregroundDeletion",
                json!(["orphan", "foregroundDeletion"]),
            ),
            ("kubernetes' own", json!(["kubernetes"])),
        ];
        let (cms, ws) = (t.on("configmaps"), t.on("widgets"));
        for (i, (label, finalizers)) in cases.into_iter().enumerate() {
            let name = format!("f{i}");
            let body = cm_with(&name, json!({"finalizers": finalizers}));
            let req = cms.req(t.rest.post()).body(&body);
            let created = with_warnings(req).await;
            r.answer(
                &format!("configmap: {label}"),
                created.map(|a| json!([a["object"]["metadata"]["finalizers"], a["warnings"]])),
            );
            let mut w = widget(&name, json!({}));
            w["metadata"]["finalizers"] = finalizers;
            let created = with_warnings(ws.req(t.rest.post()).body(&w)).await;
            r.answer(
                &format!("widget: {label}"),
                created.map(|a| json!([a["object"]["metadata"]["finalizers"], a["warnings"]])),
            );
        }
        // A finalizer added to an object being deleted.
        ws.delete("f0", json!({})).await.expect("f0 deleting");
        let added = json!({"metadata": {"finalizers": ["kubekit.dev/hold", "kubekit.dev/more"]}});
        r.answer(
            "a finalizer added while deleting",
            meta_shown(ws.patch("f0", PatchType::Merge, added).await),
        );
        let removed = json!({"metadata": {"finalizers": null}});
        r.answer(
            "the finalizers removed",
            meta_shown(ws.patch("f0", PatchType::Merge, removed).await),
        );
        r.answer("gone", ws.get("f0").await);
        for i in 1..7 {
            for res in [&cms, &ws] {
                let released = json!({"metadata": {"finalizers": null}});
                let _ = res
                    .patch(&format!("f{i}"), PatchType::Merge, released)
                    .await;
            }
        }
    })
    .await;
}

#[tokio::test]
async fn owner_references_are_validated_alike() {
    differential("mx-owners", async |t: &Target, r: &mut Record| {
        let cms = t.on("configmaps");
        let owner = cms.create(cm("owner", json!({}))).await.expect("owner");
        let uid = owner["metadata"]["uid"].clone();
        let reference = |extra: Value| {
            let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid});
            if let (Some(o), Some(extra)) = (o.as_object_mut(), extra.as_object()) {
                for (k, v) in extra {
                    if v.is_null() {
                        o.remove(k);
                    } else {
                        o.insert(k.clone(), v.clone());
                    }
                }
            }
            o
        };
        let cases = [
            ("a whole reference", json!([reference(json!({"blockOwnerDeletion": true}))])),
            ("no apiVersion", json!([reference(json!({"apiVersion": null}))])),
            ("an apiVersion of three parts", json!([reference(json!({"apiVersion": "a/b/c"}))])),
            ("an apiVersion with a group only", json!([reference(json!({"apiVersion": "apps/"}))])),
            ("no kind", json!([reference(json!({"kind": null}))])),
            ("no name", json!([reference(json!({"name": null}))])),
            ("no uid", json!([reference(json!({"uid": null}))])),
            ("an Event as the owner", json!([reference(json!({"kind": "Event"}))])),
            ("an events.k8s.io Event as the owner", json!([reference(json!({"kind": "Event", "apiVersion": "events.k8s.io/v1"}))])),
            ("one controller", json!([reference(json!({"controller": true}))])),
            ("two controllers", json!([
                reference(json!({"controller": true})),
                reference(json!({"controller": true, "uid": "00000000-0000-0000-0000-000000000009", "name": "other"})),
            ])),
            ("a controller and an owner", json!([
                reference(json!({"controller": true})),
                reference(json!({"controller": false, "uid": "00000000-0000-0000-0000-000000000009", "name": "other"})),
            ])),
        ];
        for (i, (label, refs)) in cases.into_iter().enumerate() {
            let body = cm_with(&format!("o{i}"), json!({"ownerReferences": refs}));
            let created = cms.create(body).await;
            r.answer(
                label,
                created.map(|o| o["metadata"]["ownerReferences"].clone()),
            );
            r.mask_uids_of_last();
        }
        let bad = json!({"metadata": {"ownerReferences": [reference(json!({"kind": null}))]}});
        r.answer(
            "a patch removing an owner's kind",
            cms.patch("o0", PatchType::Merge, bad).await,
        );
        r.mask_uids_of_last();
    })
    .await;
}

#[tokio::test]
async fn metadata_the_server_sets_is_overwritten_or_refused_alike() {
    differential("mx-system", async |t: &Target, r: &mut Record| {
        let cms = t.on("configmaps");
        let set = json!({
            "uid": "00000000-0000-0000-0000-000000000001",
            "creationTimestamp": "2000-01-01T00:00:00Z",
            "deletionTimestamp": "2000-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 30,
            "selfLink": "/api/v1/somewhere",
            "generation": 7,
        });
        let created = cms.create(cm_with("sys", set)).await;
        let created = r.answer("fields a client may not set on create", created);
        let created = created.expect("sys");
        r.push(
            "the uid and time are the server's",
            json!([
                created["metadata"]["uid"] == "00000000-0000-0000-0000-000000000001",
                created["metadata"]["creationTimestamp"] == "2000-01-01T00:00:00Z",
            ]),
        );
        r.answer(
            "a resourceVersion on create",
            cms.create(cm_with("rv", json!({"resourceVersion": "12345"})))
                .await,
        );
        r.answer(
            "a negative generation on create",
            cms.create(cm_with("gen", json!({"generation": -1}))).await,
        );
        let managed = json!({"managedFields": [{"manager": "me", "operation": "Update",
            "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]});
        r.answer(
            "managedFields written by a client on create",
            cms.create(cm_with("mf", managed)).await,
        );
        let bad_managed = json!({"managedFields": [{"manager": "me", "operation": "Sideways",
            "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]});
        r.answer(
            "managedFields of an unknown operation",
            cms.create(cm_with("mf2", bad_managed)).await,
        );
        let stored = cms.get("sys").await.expect("sys");
        let changed = |path: &str, v: Value| {
            let mut o = stored.clone();
            o["metadata"][path] = v;
            o
        };
        let updates = [
            (
                "an update changing the uid",
                changed("uid", json!("00000000-0000-0000-0000-000000000002")),
            ),
            ("an update without the uid", {
                let mut o = stored.clone();
                o["metadata"].as_object_mut().map(|m| m.remove("uid"));
                o
            }),
            (
                "an update changing the creationTimestamp",
                changed("creationTimestamp", json!("2001-01-01T00:00:00Z")),
            ),
            (
                "an update setting a deletionTimestamp",
                changed("deletionTimestamp", json!("2001-01-01T00:00:00Z")),
            ),
            (
                "an update changing the generation",
                changed("generation", json!(9)),
            ),
            (
                "an update with a negative generation",
                changed("generation", json!(-3)),
            ),
            (
                "an update changing the name",
                changed("name", json!("other")),
            ),
        ];
        for (label, body) in updates {
            r.answer(label, cms.update("sys", &body, false).await);
        }
        let patches = [
            (
                "a patch changing the uid",
                json!({"metadata": {"uid": "00000000-0000-0000-0000-000000000003"}}),
            ),
            (
                "a patch changing the name",
                json!({"metadata": {"name": "other"}}),
            ),
            (
                "a patch changing the namespace",
                json!({"metadata": {"namespace": "other"}}),
            ),
            (
                "a patch changing the creationTimestamp",
                json!({"metadata": {"creationTimestamp": "2001-01-01T00:00:00Z"}}),
            ),
            (
                "a patch with a resourceVersion that does not parse",
                json!({"metadata": {"resourceVersion": "abc"}}),
            ),
            (
                "a patch removing the resourceVersion",
                json!({"metadata": {"resourceVersion": null}}),
            ),
        ];
        for (label, patch) in patches {
            r.answer(label, cms.patch("sys", PatchType::Merge, patch).await);
        }
    })
    .await;
}

#[tokio::test]
async fn a_namespace_in_the_body_must_be_the_urls_alike() {
    differential("mx-namespace", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let cms = t.on("configmaps");
        let ns = t.ns.clone();
        r.answer(
            "the URL's namespace in the body",
            meta_shown(cms.create(cm_with("same", json!({"namespace": ns}))).await),
        );
        r.answer(
            "another namespace in the body",
            cms.create(cm_with("other", json!({"namespace": "default"})))
                .await,
        );
        r.answer(
            "an empty namespace in the body",
            meta_shown(cms.create(cm_with("empty", json!({"namespace": ""}))).await),
        );
        let mut stored = cms.get("same").await.expect("same");
        stored["metadata"]["namespace"] = json!("default");
        r.answer(
            "an update naming another namespace",
            cms.update("same", &stored, false).await,
        );
        let mut w = widget("w", json!({}));
        w["metadata"]["namespace"] = json!("default");
        r.answer(
            "a custom resource naming another namespace",
            t.on("widgets").create(w).await,
        );
        // A cluster-scoped object: its namespace is dropped.
        let role = json!({"metadata": {"name": format!("{}-role", t.ns), "namespace": "default"},
            "rules": []});
        let created =
            create_cluster_scoped(t, "rbac.authorization.k8s.io", "clusterroles", &role).await;
        r.answer(
            "a cluster-scoped object naming a namespace",
            meta_shown(created).map(|m| {
                json!([
                    m.get("namespace"),
                    m["name"] == json!(format!("{}-role", t.ns))
                ])
            }),
        );
        let _ = t
            .rest
            .delete()
            .group_version("rbac.authorization.k8s.io", "v1")
            .resource("clusterroles")
            .name(&format!("{}-role", t.ns))
            .send()
            .await;
        // A namespaced resource asked for without a namespace.
        let req = t.rest.post().group_version("", "v1").resource("configmaps");
        r.push(
            "a create of a namespaced resource without a namespace",
            raw_answer(req.body(&cm("nons", json!({})))).await,
        );
        let req = t
            .rest
            .get()
            .group_version("", "v1")
            .resource("configmaps")
            .name("same");
        r.push(
            "a get of a namespaced object without a namespace",
            raw_answer(req).await,
        );
        let listed = t
            .rest
            .get()
            .group_version("", "v1")
            .resource("configmaps")
            .param("fieldSelector", &format!("metadata.namespace={ns}"))
            .param("labelSelector", "!kubernetes.io/not-there")
            .send()
            .await
            .and_then(|r| r.decode::<Value>());
        let names = listed.map(|l| {
            let names: BTreeSet<String> = l["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .filter(|n| n != "kube-root-ca.crt")
                .collect();
            json!(names)
        });
        r.answer("a list across all namespaces selecting one", names);
    })
    .await;
}

#[tokio::test]
async fn generated_names_follow_their_prefix_alike() {
    differential("mx-generate", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let cms = t.on("configmaps");
        let shape = |prefix: &str, a: kubekit::rest::Result<Value>| {
            a.map(|o| {
                let name = o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let rest = name.strip_prefix(prefix);
                json!({
                    "length": name.len(),
                    "prefixed": rest.is_some(),
                    "suffix": rest.map(|s| s.len()),
                    "generateName": o["metadata"]["generateName"],
                })
            })
        };
        let long = "g".repeat(70);
        let cases: Vec<(&str, Value, String)> = vec![
            (
                "a prefix with a dash",
                json!({"generateName": "web-"}),
                "web-".into(),
            ),
            (
                "a prefix without a dash",
                json!({"generateName": "web"}),
                "web".into(),
            ),
            (
                "a name and a prefix: the name wins",
                json!({"name": "named", "generateName": "web-"}),
                "named".into(),
            ),
            (
                "a prefix of 70 characters is cut",
                json!({"generateName": long}),
                "g".repeat(58),
            ),
            (
                "a prefix ending with a dot",
                json!({"generateName": "web."}),
                "web.".into(),
            ),
            (
                "an upper-case prefix",
                json!({"generateName": "Web-"}),
                "Web-".into(),
            ),
            (
                "a prefix of a dash only",
                json!({"generateName": "-"}),
                "-".into(),
            ),
        ];
        for (label, meta, prefix) in cases {
            let mut body = cm("x", json!({}));
            body["metadata"] = meta;
            let created = cms.create(body).await;
            if created.is_err() {
                r.answer(label, created.map(|_| json!(null)));
                // The name generated is random: its suffix is masked.
                if let Some((_, answer)) = r.0.last_mut() {
                    let generated =
                        regex::Regex::new(&format!("{}[b-z2-9]{{5}}", regex::escape(&prefix)))
                            .expect("a regex");
                    let text = generated
                        .replace_all(&answer.to_string(), format!("{prefix}<suffix>"))
                        .into_owned();
                    *answer = serde_json::from_str(&text).unwrap_or_default();
                }
            } else {
                r.answer(label, shape(&prefix, created));
            }
        }
        let mut w = widget("x", json!({}));
        w["metadata"] = json!({"generateName": "w-"});
        r.answer(
            "a custom resource's generated name",
            shape("w-", t.on("widgets").create(w).await),
        );
        let dry = cms.req(t.rest.post()).param("dryRun", "All");
        let generated = Res::send(dry.body(&json!({"metadata": {"generateName": "dry-"}}))).await;
        r.answer(
            "a dry-run create generates a name",
            shape("dry-", generated),
        );
        let applied = cms.apply(
            "",
            ("a", false, None),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": "ap-"}}),
        );
        r.push("an apply without a name", raw_answer_of(applied.await));
    })
    .await;
}

/// An answer as [`raw_answer`] shows it, from a decoded answer.
fn raw_answer_of(answer: kubekit::rest::Result<Value>) -> Value {
    match answer {
        Ok(v) => json!({"body": v}),
        Err(e) => match e.status() {
            Some(s) => json!({"error": s}),
            None => json!({"code": e.code(), "no status": true}),
        },
    }
}

/// The names of a list's items, in order (without what the real server puts in every
/// namespace).
fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .filter(|n| n != "kube-root-ca.crt")
        .collect()
}

/// A list's item names, whether it continues and how many remain (or the refusal).
fn page(answer: kubekit::rest::Result<Value>) -> kubekit::rest::Result<Value> {
    answer.map(|l| {
        json!({
            "names": item_names(&l),
            "continues": l["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty()),
            "remainingItemCount": l["metadata"]["remainingItemCount"],
        })
    })
}

#[tokio::test]
async fn pages_are_one_snapshot_while_objects_change_between_them_alike() {
    differential("mx-pages", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let ws = t.on("widgets");
        for i in 0..6 {
            ws.create(widget(&format!("p{i}"), json!({"page": "yes"})))
                .await
                .expect("created");
        }
        let first = ws.list(&[("limit", "2")]).await.expect("first page");
        r.answer("the first page", page(Ok(first.clone())));
        let token = first["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        ws.delete("p3", json!({})).await.expect("p3 deleted");
        ws.create(widget("p6", json!({"page": "yes"})))
            .await
            .expect("p6");
        ws.patch("p4", PatchType::Merge, json!({"spec": {"size": 9}}))
            .await
            .expect("p4");
        let second = ws
            .list(&[("limit", "2"), ("continue", &token)])
            .await
            .expect("second");
        r.answer(
            "the second page still has the deleted object",
            page(Ok(second.clone())),
        );
        r.push(
            "the second page's p4 is from before the patch",
            json!(
                second["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|i| i["metadata"]["name"] == "p4")
                    .map(|i| i["spec"]["size"].clone())
                    .collect::<Vec<_>>()
            ),
        );
        let token2 = second["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let third = ws.list(&[("limit", "5"), ("continue", &token2)]).await;
        r.answer("the last page", page(third));
        r.answer("a list now", page(ws.list(&[("limit", "10")]).await));
        r.answer(
            "a continue with a resourceVersion",
            ws.list(&[
                ("limit", "2"),
                ("continue", &token),
                ("resourceVersion", "0"),
            ])
            .await,
        );
        r.answer(
            "a continue with resourceVersionMatch",
            ws.list(&[
                ("continue", &token),
                ("resourceVersionMatch", "NotOlderThan"),
            ])
            .await,
        );
        r.answer(
            "a continue with a label selector",
            page(
                ws.list(&[
                    ("limit", "2"),
                    ("continue", &token),
                    ("labelSelector", "page=yes"),
                ])
                .await,
            ),
        );
        r.answer(
            "a limit of 0 lists everything",
            page(ws.list(&[("limit", "0")]).await),
        );
        r.answer(
            "a negative limit lists everything",
            page(ws.list(&[("limit", "-1")]).await),
        );
        r.answer(
            "a limit with a selector that skips objects",
            page(
                ws.list(&[("limit", "2"), ("fieldSelector", "metadata.name!=p0")])
                    .await,
            ),
        );
    })
    .await;
}

#[tokio::test]
async fn resource_version_options_of_lists_are_checked_alike() {
    differential("mx-rv-match", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let cms = t.on("widgets");
        let a = cms
            .create(widget("a", json!({"rv": "x"})))
            .await
            .expect("a");
        let rv_a = a["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        cms.create(widget("b", json!({"rv": "x"})))
            .await
            .expect("b");
        let sel = ("labelSelector", "rv=x");
        let far = (rv_a.parse::<u64>().unwrap_or(0) + 10_000_000).to_string();
        let cases: Vec<(&str, Params)> = vec![
            ("no resourceVersion", vec![]),
            ("resourceVersion 0", vec![("resourceVersion", "0")]),
            (
                "resourceVersion 0 with a limit",
                vec![("resourceVersion", "0"), ("limit", "1")],
            ),
            (
                "not older than the first create",
                vec![
                    ("resourceVersion", &rv_a),
                    ("resourceVersionMatch", "NotOlderThan"),
                ],
            ),
            (
                "exactly at the first create",
                vec![
                    ("resourceVersion", &rv_a),
                    ("resourceVersionMatch", "Exact"),
                ],
            ),
            (
                "exactly at the first create, paged",
                vec![
                    ("resourceVersion", &rv_a),
                    ("resourceVersionMatch", "Exact"),
                    ("limit", "1"),
                ],
            ),
            ("a resourceVersion alone", vec![("resourceVersion", &rv_a)]),
            (
                "a resourceVersion alone with a limit",
                vec![("resourceVersion", &rv_a), ("limit", "1")],
            ),
            (
                "exactly at 0",
                vec![("resourceVersion", "0"), ("resourceVersionMatch", "Exact")],
            ),
            (
                "not older than 0",
                vec![
                    ("resourceVersion", "0"),
                    ("resourceVersionMatch", "NotOlderThan"),
                ],
            ),
            (
                "not older than nothing",
                vec![("resourceVersionMatch", "NotOlderThan")],
            ),
            (
                "an unknown match",
                vec![
                    ("resourceVersion", &rv_a),
                    ("resourceVersionMatch", "Newest"),
                ],
            ),
            (
                "a resourceVersion from the future, exactly",
                vec![("resourceVersion", &far), ("resourceVersionMatch", "Exact")],
            ),
        ];
        let digits = regex::Regex::new("[0-9]+").expect("a regex");
        for (label, mut params) in cases {
            params.push(sel);
            let listed = cms.list(&params).await;
            r.answer(label, page(listed));
            // The resourceVersions a refusal quotes are each server's own.
            if let Some((_, answer)) = r.0.last_mut()
                && let Some(message) = answer["error"]["message"].as_str()
            {
                answer["error"]["message"] = json!(digits.replace_all(message, "N"));
            }
        }
    })
    .await;
}

/// Query parameters of a request.
type Params<'a> = Vec<(&'a str, &'a str)>;

/// The first `n` events of a watch with `params`, as [`Res::watch`] records them.
async fn watched(res: &Res<'_>, params: &[(&str, &str)], n: usize) -> kubekit::rest::Result<Value> {
    res.watch(params, n, async {}).await.map(Value::from)
}

#[tokio::test]
async fn watch_options_are_checked_and_honoured_alike() {
    differential("mx-watch-options", async |t: &Target, r: &mut Record| {
        let cms = t.on("configmaps");
        let a = cms.create(cm("a", json!({"w": "x"}))).await.expect("a");
        let rv_a = a["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        cms.create(cm("b", json!({"w": "x"}))).await.expect("b");
        let sel = ("labelSelector", "w=x");
        let cases: Vec<(&str, Params, usize)> = vec![
            (
                "a watch from 0 starts with every object",
                vec![("resourceVersion", "0"), ("timeoutSeconds", "2")],
                3,
            ),
            (
                "a watch without a resourceVersion starts with every object",
                vec![("timeoutSeconds", "2")],
                3,
            ),
            (
                "a watch from the first create",
                vec![("resourceVersion", &rv_a), ("timeoutSeconds", "2")],
                2,
            ),
            (
                "sendInitialEvents without resourceVersionMatch",
                vec![
                    ("sendInitialEvents", "true"),
                    ("allowWatchBookmarks", "true"),
                ],
                1,
            ),
            (
                "sendInitialEvents with an exact match",
                vec![
                    ("sendInitialEvents", "true"),
                    ("allowWatchBookmarks", "true"),
                    ("resourceVersionMatch", "Exact"),
                    ("resourceVersion", &rv_a),
                ],
                1,
            ),
            (
                "sendInitialEvents without bookmarks",
                vec![
                    ("sendInitialEvents", "true"),
                    ("resourceVersionMatch", "NotOlderThan"),
                ],
                1,
            ),
            (
                "sendInitialEvents=false with NotOlderThan",
                vec![
                    ("sendInitialEvents", "false"),
                    ("resourceVersionMatch", "NotOlderThan"),
                    ("allowWatchBookmarks", "true"),
                    ("resourceVersion", &rv_a),
                    ("timeoutSeconds", "2"),
                ],
                2,
            ),
            (
                "a watch with resourceVersionMatch alone",
                vec![
                    ("resourceVersionMatch", "NotOlderThan"),
                    ("resourceVersion", &rv_a),
                ],
                1,
            ),
            (
                "a streaming list from 0",
                vec![
                    ("sendInitialEvents", "true"),
                    ("allowWatchBookmarks", "true"),
                    ("resourceVersionMatch", "NotOlderThan"),
                    ("resourceVersion", "0"),
                ],
                3,
            ),
            (
                "a negative timeoutSeconds",
                vec![("timeoutSeconds", "-1"), ("resourceVersion", &rv_a)],
                1,
            ),
            (
                "a timeoutSeconds that does not parse",
                vec![("timeoutSeconds", "soon")],
                1,
            ),
        ];
        for (label, mut params, n) in cases {
            params.push(sel);
            let events = watched(&cms, &params, n).await;
            r.answer(label, events);
        }
    })
    .await;
}

#[tokio::test]
async fn json_patch_operations_and_their_errors_answer_alike() {
    differential("mx-json-patch", async |t: &Target, r: &mut Record| {
        let cms = t.on("configmaps");
        let mut body = cm("j", json!({"app": "web"}));
        body["metadata"]["annotations"] = json!({"example.com/a": "1"});
        body["data"] = json!({"k": "v", "list": "a"});
        cms.create(body).await.expect("j");
        let shown = |a: kubekit::rest::Result<Value>| {
            a.map(|o| json!({"labels": o["metadata"]["labels"], "annotations": o["metadata"]["annotations"], "data": o["data"]}))
        };
        let steps = [
            ("add a key", json!([{"op": "add", "path": "/data/n", "value": "1"}])),
            ("add replaces a key", json!([{"op": "add", "path": "/data/n", "value": "2"}])),
            ("remove a key", json!([{"op": "remove", "path": "/data/n"}])),
            ("replace a key", json!([{"op": "replace", "path": "/data/k", "value": "w"}])),
            ("move a key", json!([{"op": "move", "from": "/data/k", "path": "/data/moved"}])),
            ("copy a key", json!([{"op": "copy", "from": "/data/moved", "path": "/data/copied"}])),
            ("a passing test then a change", json!([{"op": "test", "path": "/data/copied", "value": "w"}, {"op": "add", "path": "/data/t", "value": "ok"}])),
            ("a key with a slash, as ~1", json!([{"op": "add", "path": "/metadata/labels/example.com~1team", "value": "a"}])),
            ("an annotation key with a slash, as ~1", json!([{"op": "replace", "path": "/metadata/annotations/example.com~1a", "value": "2"}])),
            ("a missing key with a tilde, as ~0", json!([{"op": "remove", "path": "/data/a~0b"}])),
            ("add a whole map", json!([{"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}])),
            ("remove a missing key", json!([{"op": "remove", "path": "/data/missing"}])),
            ("replace a missing key adds it", json!([{"op": "replace", "path": "/data/missing", "value": "x"}])),
            ("add under a missing map", json!([{"op": "add", "path": "/nothing/here", "value": "x"}])),
            ("move a key", json!([{"op": "move", "from": "/data/missing", "path": "/data/x"}])),
            ("move from a missing key", json!([{"op": "move", "from": "/data/missing", "path": "/data/y"}])),
            ("copy from a missing key copies null", json!([{"op": "copy", "from": "/data/missing", "path": "/data/x"}])),
            ("a failing test", json!([{"op": "test", "path": "/data/t", "value": "no"}])),
            ("a test of a missing key", json!([{"op": "test", "path": "/data/missing", "value": "no"}])),
            ("a path without a slash", json!([{"op": "add", "path": "data/z", "value": "z"}])),
            ("an op without a path", json!([{"op": "add", "value": "x"}])),
            ("an op without a value adds null", json!([{"op": "add", "path": "/data/n"}])),
            ("an empty patch", json!([])),
            ("a change of the name", json!([{"op": "replace", "path": "/metadata/name", "value": "other"}])),
            ("the whole document replaced", json!([{"op": "replace", "path": "", "value": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}}])),
            ("the last change stays after all", json!([{"op": "test", "path": "/metadata/name", "value": "j"}])),
        ];
        for (label, patch) in steps {
            r.answer(label, shown(cms.patch("j", PatchType::Json, patch).await));
        }
        r.answer(
            "a JSON patch of a missing object",
            cms.patch("missing", PatchType::Json, json!([{"op": "add", "path": "/data/x", "value": "x"}])).await,
        );
        let mut list_holder = json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}], "selector": {"app": "x"}}});
        list_holder["apiVersion"] = json!("v1");
        let services = t.on("services");
        services.create(list_holder).await.expect("svc");
        let ports = |a: kubekit::rest::Result<Value>| a.map(|s| s["spec"]["ports"].clone());
        let list_steps = [
            ("add at the end of a list", json!([{"op": "add", "path": "/spec/ports/-", "value": {"port": 82, "name": "c", "protocol": "TCP", "targetPort": 82}}])),
            ("add at an index", json!([{"op": "add", "path": "/spec/ports/0", "value": {"port": 79, "name": "z", "protocol": "TCP", "targetPort": 79}}])),
            ("remove an index", json!([{"op": "remove", "path": "/spec/ports/1"}])),
            ("an index out of range", json!([{"op": "remove", "path": "/spec/ports/9"}])),
            ("an index that is not a number", json!([{"op": "replace", "path": "/spec/ports/first/port", "value": 1}])),
        ];
        for (label, patch) in list_steps {
            r.answer(label, ports(services.patch("svc", PatchType::Json, patch).await));
        }
    })
    .await;
}

#[tokio::test]
async fn merge_patches_delete_with_null_and_replace_lists_alike() {
    differential("mx-merge-patch", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let ws = t.on("widgets");
        let mut w = widget("m", json!({"a": "1", "b": "2"}));
        w["spec"] = json!({"size": 1, "tags": ["x", "y"], "nested": {"keep": 1, "drop": 2}, "items": [{"name": "a"}, {"name": "b"}]});
        let created = ws.create(w).await.expect("m");
        let steps = [
            ("null deletes a label", json!({"metadata": {"labels": {"a": null}}})),
            ("null deletes a nested field", json!({"spec": {"nested": {"drop": null}}})),
            ("a list is replaced whole", json!({"spec": {"tags": ["z"]}})),
            ("a list of maps is replaced whole", json!({"spec": {"items": [{"name": "c"}]}})),
            ("null deletes a whole map", json!({"spec": {"nested": null}})),
            ("an empty patch changes nothing", json!({})),
            ("null for a field that is not there", json!({"spec": {"absent": null}})),
            ("the matching resourceVersion", json!({"metadata": {"resourceVersion": null}, "spec": {"size": 2}})),
            ("a stale resourceVersion", json!({"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"size": 3}})),
            ("a patch of the kind", json!({"kind": "Gadget"})),
            ("a patch of the apiVersion", json!({"apiVersion": format!("{GROUP}/v2")})),
            ("a patch nulling the metadata", json!({"metadata": null})),
        ];
        for (label, patch) in steps {
            r.answer(label, ws.patch("m", PatchType::Merge, patch).await);
        }
        let cms = t.on("configmaps");
        cms.create(cm("c", json!({"a": "1"}))).await.expect("c");
        let cm_steps = [
            ("null deletes a data key", json!({"data": {"k": null}})),
            ("the data nulled", json!({"data": null})),
        ];
        for (label, patch) in cm_steps {
            r.answer(label, cms.patch("c", PatchType::Merge, patch).await);
        }
    })
    .await;
}

#[tokio::test]
async fn delete_options_are_checked_alike() {
    differential("mx-delete-options", async |t: &Target, r: &mut Record| {
        let cms = t.on("configmaps");
        for name in ["a", "b", "c", "d", "e", "f", "g"] {
            cms.create(cm(name, json!({"del": "yes"}))).await.expect("created");
        }
        let kept = |a: kubekit::rest::Result<Value>| a.map(|o| json!({"kind": o["kind"], "status": o.get("status"), "details": o.get("details"), "name": o["metadata"]["name"]}));
        let cases = [
            ("an unknown propagation policy", "a", json!({"propagationPolicy": "Sideways"})),
            ("orphanDependents and a propagation policy", "a", json!({"orphanDependents": true, "propagationPolicy": "Background"})),
            ("a negative grace period", "g", json!({"gracePeriodSeconds": -5})),
            ("an unknown dryRun", "a", json!({"dryRun": ["Some"]})),
            ("preconditions that both hold", "a", json!({"preconditions": {"resourceVersion": null}})),
            ("a grace period of 0", "b", json!({"gracePeriodSeconds": 0})),
            ("a long grace period", "c", json!({"gracePeriodSeconds": 3600})),
            ("orphanDependents", "d", json!({"orphanDependents": false})),
            ("a dry run", "e", json!({"dryRun": ["All"]})),
            ("a body of another kind", "f", json!({"kind": "ConfigMap", "apiVersion": "v1"})),
            ("a body of another group", "f", json!({"kind": "DeleteOptions", "apiVersion": "apps/v1"})),
        ];
        for (label, name, opts) in cases {
            let mut opts = opts;
            if opts["preconditions"].is_object() {
                let stored = cms.get(name).await.expect("stored");
                opts["preconditions"] = json!({"uid": stored["metadata"]["uid"], "resourceVersion": stored["metadata"]["resourceVersion"]});
                let mut del = opts.clone();
                del["dryRun"] = json!(["All"]);
                opts = del;
            }
            r.answer(label, kept(cms.delete(name, opts).await));
        }
        r.answer("after", page(cms.list(&[("labelSelector", "del=yes")]).await));
        let query = |params: &[(&str, &str)]| {
            let mut req = cms.req(t.rest.delete());
            for (k, v) in params {
                req = req.param(k, v);
            }
            Res::send(req)
        };
        r.answer(
            "a deletecollection selecting by name, dry run",
            page(query(&[("fieldSelector", "metadata.name=a"), ("dryRun", "All")]).await),
        );
        r.answer("nothing deleted", page(cms.list(&[("labelSelector", "del=yes")]).await));
        r.answer(
            "a deletecollection selecting by name",
            page(query(&[("fieldSelector", "metadata.name=a")]).await),
        );
        r.answer(
            "a deletecollection by an unknown field",
            query(&[("fieldSelector", "data.k=v")]).await,
        );
        r.answer(
            "a deletecollection with a bad propagation policy",
            query(&[("propagationPolicy", "Sideways"), ("labelSelector", "del=yes")]).await,
        );
        r.answer("the rest", page(cms.list(&[("labelSelector", "del=yes")]).await));
    })
    .await;
}

/// A table of `res` (`params` added), with `includeObject` as asked.
async fn table_of(res: &Res<'_>, t: &Target, name: Option<&str>, params: &[(&str, &str)]) -> Value {
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let mut req = res.req(t.rest.get()).accept(TABLE);
    if let Some(name) = name {
        req = req.name(name);
    }
    for (k, v) in params {
        req = req.param(k, v);
    }
    table_rows(raw_answer(req).await)
}

/// A table answer's kind, metadata, column names and rows (each row's last cell, an age,
/// as `<age>`: its text depends on when each server ran), or the refusal.
fn table_rows(mut answer: Value) -> Value {
    if answer.get("body").is_none() {
        return answer;
    }
    let body = answer["body"].clone();
    let names: Vec<Value> = body["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!([c["name"], c["type"], c["format"], c["priority"]]))
        .collect();
    answer["body"] = json!({"apiVersion": body["apiVersion"], "kind": body["kind"],
        "metadata": body["metadata"], "columns": names, "rows": body["rows"]});
    if let Some(rows) = answer["body"]["rows"].as_array_mut() {
        for row in rows {
            if let Some(cells) = row["cells"].as_array_mut()
                && let Some(last) = cells.last_mut()
            {
                *last = json!("<age>");
            }
        }
    }
    answer
}

#[tokio::test]
async fn tables_with_and_without_their_objects_answer_alike() {
    differential("mx-tables", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let (cms, ws) = (t.on("configmaps"), t.on("widgets"));
        cms.create(cm("t1", json!({"tab": "x"}))).await.expect("t1");
        ws.create(widget("w1", json!({"tab": "x"})))
            .await
            .expect("w1");
        let sel = ("labelSelector", "tab=x");
        for (what, res) in [("configmaps", &cms), ("widgets", &ws)] {
            for include in ["", "None", "Metadata", "Object", "Everything"] {
                let mut params = vec![sel];
                if !include.is_empty() {
                    params.push(("includeObject", include));
                }
                let table = table_of(res, t, None, &params).await;
                r.push(&format!("{what} with includeObject={include}"), table);
            }
            let one = table_of(
                res,
                t,
                Some(if what == "widgets" { "w1" } else { "t1" }),
                &[],
            )
            .await;
            r.push(&format!("one of the {what}"), one);
            let missing = table_of(res, t, Some("missing"), &[]).await;
            r.push(&format!("a missing one of the {what}"), missing);
            let paged = table_of(res, t, None, &[sel, ("limit", "1")]).await;
            r.push(&format!("a page of {what}"), paged);
        }
        const TABLE_ONLY: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let watch = raw_answer(
            cms.req(t.rest.get())
                .accept(TABLE_ONLY)
                .param("watch", "true")
                .param("timeoutSeconds", "1")
                .param("labelSelector", "tab=none"),
        )
        .await;
        r.push("a watch of tables", watch);
    })
    .await;
}

/// The group of this scenario's own CRDs (unique to its namespace).
fn own_group(t: &Target) -> String {
    format!("{}.kubekit.dev", t.ns)
}

/// A CRD of `kind` in the scenario's own group with `versions`, namespaced.
fn own_crd(t: &Target, kind: &str, versions: Value) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{}", own_group(t))},
        "spec": {
            "group": own_group(t), "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": versions,
        },
    })
}

/// A served version `name` of a CRD with `schema` as its openAPIV3Schema.
fn crd_version(name: &str, storage: bool, schema: Value) -> Value {
    json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": schema}})
}

/// Requests to CustomResourceDefinitions.
fn crds(req: Request) -> Request {
    req.group_version("apiextensions.k8s.io", "v1")
        .resource("customresourcedefinitions")
}

/// Creates `crd`: the answer's spec, or the refusal.
async fn create_crd(t: &Target, crd: &Value) -> kubekit::rest::Result<Value> {
    let created = crds(t.rest.post())
        .body(crd)
        .send()
        .await?
        .decode::<Value>()?;
    Ok(created["spec"].clone())
}

/// Deletes the CRD named `name` (what the scenario created).
async fn delete_crd(t: &Target, name: &str) {
    let _ = crds(t.rest.delete()).name(name).send().await;
}

#[tokio::test]
async fn crd_schemas_that_are_not_structural_are_refused_alike() {
    differential("mx-crd-schemas", async |t: &Target, r: &mut Record| {
        let object = |props: Value| json!({"type": "object", "properties": {"spec": props}});
        let typed = |props: Value| object(json!({"type": "object", "properties": props}));
        let map_list = |extra: Value| {
            let mut a = json!({"type": "array", "x-kubernetes-list-type": "map",
                "items": {"type": "object", "properties": {"k": {"type": "string"}}}});
            if let (Some(a), Some(extra)) = (a.as_object_mut(), extra.as_object()) {
                a.extend(extra.clone());
            }
            typed(json!({"a": a}))
        };
        let cases = [
            ("a schema without a type at its root", json!({"properties": {"spec": {"type": "object"}}})),
            ("a property without a type", object(json!({"properties": {"a": {"description": "no type"}}}))),
            ("a root that is not an object", json!({"type": "string"})),
            ("properties and additionalProperties", object(json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}))),
            ("a $ref", typed(json!({"a": {"$ref": "#/definitions/x"}}))),
            ("uniqueItems", typed(json!({"a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}))),
            ("an array without items", typed(json!({"a": {"type": "array"}}))),
            ("an int-or-string with a type", typed(json!({"a": {"type": "string", "x-kubernetes-int-or-string": true}}))),
            ("a map list without keys", map_list(json!({}))),
            ("a map list whose key is not required", map_list(json!({"x-kubernetes-list-map-keys": ["k"]}))),
            ("a map list whose key is required", map_list(json!({"x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}}}}))),
            ("a set of objects", typed(json!({"a": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}))),
            ("an unknown list type", typed(json!({"a": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}}))),
            ("an embedded resource without fields", typed(json!({"a": {"type": "object", "x-kubernetes-embedded-resource": true}}))),
            ("a default of the wrong type", typed(json!({"a": {"type": "integer", "default": "one"}}))),
            ("a default outside its enum", typed(json!({"a": {"type": "string", "enum": ["x"], "default": "y"}}))),
            ("metadata with a field of its own", json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}})),
            ("an unknown format is accepted", typed(json!({"a": {"type": "string", "format": "weird"}}))),
            ("a map of preserved fields", object(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}))),
        ];
        for (i, (label, schema)) in cases.into_iter().enumerate() {
            let crd = own_crd(t, &format!("Schema{i}"), json!([crd_version("v1", true, schema)]));
            let created = create_crd(t, &crd).await;
            let accepted = created.is_ok();
            r.answer(label, created.map(|_| json!("accepted")));
            if accepted {
                delete_crd(t, crd["metadata"]["name"].as_str().unwrap_or_default()).await;
            }
        }
    })
    .await;
}

#[tokio::test]
async fn crd_names_scopes_and_versions_are_validated_alike() {
    differential("mx-crd-spec", async |t: &Target, r: &mut Record| {
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let with = |kind: &str, change: &dyn Fn(&mut Value)| {
            let mut crd = own_crd(t, kind, json!([crd_version("v1", true, open.clone())]));
            change(&mut crd);
            crd
        };
        let cases: Vec<(&str, Value)> = vec![
            ("a version name that is not a label", with("Badver", &|c| c["spec"]["versions"][0]["name"] = json!("V_1"))),
            ("a version without a schema", with("Noschema", &|c| { c["spec"]["versions"][0].as_object_mut().map(|v| v.remove("schema")); })),
            ("a bad short name", with("Short", &|c| c["spec"]["names"]["shortNames"] = json!(["s_1"]))),
            ("a bad category", with("Category", &|c| c["spec"]["names"]["categories"] = json!(["Bad Cat"]))),
            ("a webhook conversion without its config", with("Convert", &|c| c["spec"]["conversion"] = json!({"strategy": "Webhook"}))),
            ("a scale path that is not a path", with("Scalebad", &|c| c["spec"]["versions"][0]["subresources"] = json!({"scale": {"specReplicasPath": "spec.replicas", "statusReplicasPath": ".status.replicas"}}))),
            ("a column without a JSON path", with("Column", &|c| c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "Size", "type": "integer"}]))),
            ("a column of an unknown type", with("Column2", &|c| c["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "Size", "type": "float", "jsonPath": ".spec.size"}]))),
            (
                "an unknown scope",
                with("Scope", &|c| c["spec"]["scope"] = json!("Everywhere")),
            ),
            (
                "a kind in lower case",
                with("Lower", &|c| c["spec"]["names"]["kind"] = json!("lower")),
            ),
            (
                "the list kind the kind",
                with("Same", &|c| c["spec"]["names"]["listKind"] = json!("Same")),
            ),
            (
                "an unknown conversion",
                with("Convert2", &|c| {
                    c["spec"]["conversion"] = json!({"strategy": "Magic"})
                }),
            ),
            (
                "a group without a dot",
                with("Nodot", &|c| {
                    c["spec"]["group"] = json!("nodot");
                    c["metadata"]["name"] = json!("nodots.nodot");
                }),
            ),
        ];
        for (label, crd) in cases {
            let created = create_crd(t, &crd).await;
            let accepted = created.is_ok();
            r.answer(label, created.map(|_| json!("accepted")));
            if accepted {
                delete_crd(t, crd["metadata"]["name"].as_str().unwrap_or_default()).await;
            }
        }
    })
    .await;
}

/// Creates `crd` and waits until its resource `plural` (version `version`) is served.
async fn serve_crd(t: &Target, crd: &Value, plural: &str, version: &str) {
    create_crd(t, crd).await.expect("the CRD is created");
    let group = own_group(t);
    testenv::eventually(60, "the CRD is served", || async {
        t.rest
            .get()
            .group_version(&group, version)
            .namespace(&t.ns)
            .resource(plural)
            .send()
            .await
            .ok()
    })
    .await;
}

/// The stored CRD named `name`.
async fn get_crd(t: &Target, name: &str) -> kubekit::rest::Result<Value> {
    crds(t.rest.get()).name(name).send().await?.decode()
}

/// `crd` (as stored) with `change` made, put back: the answer's spec and stored
/// versions, or the refusal.
async fn update_crd(
    t: &Target,
    name: &str,
    change: impl FnOnce(&mut Value),
) -> kubekit::rest::Result<Value> {
    let mut crd = get_crd(t, name).await?;
    change(&mut crd);
    let updated: Value = crds(t.rest.put())
        .name(name)
        .body(&crd)
        .send()
        .await?
        .decode()?;
    Ok(
        json!({"versions": updated["spec"]["versions"], "scope": updated["spec"]["scope"],
        "storedVersions": updated["status"]["storedVersions"]}),
    )
}

#[tokio::test]
async fn crd_updates_keep_stored_versions_and_scope_alike() {
    differential("mx-crd-update", async |t: &Target, r: &mut Record| {
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let crd = own_crd(t, "Thing", json!([crd_version("v1", true, open.clone())]));
        let name = crd["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        serve_crd(t, &crd, "things", "v1").await;
        let add_v2 = |c: &mut Value| {
            c["spec"]["versions"][0]["storage"] = json!(false);
            if let Some(v) = c["spec"]["versions"].as_array_mut() {
                v.push(crd_version(
                    "v2",
                    true,
                    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                ));
            }
        };
        r.answer(
            "v2 added as the storage version",
            update_crd(t, &name, add_v2).await,
        );
        r.answer(
            "v1 removed while stored",
            update_crd(t, &name, |c| {
                c["spec"]["versions"].as_array_mut().map(|v| v.remove(0));
            })
            .await,
        );
        r.answer(
            "v1 no longer served",
            update_crd(t, &name, |c| {
                c["spec"]["versions"][0]["served"] = json!(false)
            })
            .await,
        );
        r.answer(
            "the scope changed",
            update_crd(t, &name, |c| c["spec"]["scope"] = json!("Cluster")).await,
        );
        r.answer(
            "the group changed",
            update_crd(t, &name, |c| {
                c["spec"]["group"] = json!("other.kubekit.dev")
            })
            .await,
        );
        r.answer(
            "the kind changed",
            update_crd(t, &name, |c| c["spec"]["names"]["kind"] = json!("Other")).await,
        );
        r.answer(
            "the plural changed",
            update_crd(t, &name, |c| c["spec"]["names"]["plural"] = json!("others")).await,
        );
        let status = |stored: Value| move |c: &mut Value| c["status"]["storedVersions"] = stored;
        let put_status = async |change: Box<dyn FnOnce(&mut Value)>| {
            let mut c = get_crd(t, &name).await?;
            change(&mut c);
            let put: Value = crds(t.rest.put())
                .name(&name)
                .subresource("status")
                .body(&c)
                .send()
                .await?
                .decode()?;
            Ok(put["status"]["storedVersions"].clone())
        };
        r.answer(
            "stored versions without v1",
            put_status(Box::new(status(json!(["v2"])))).await,
        );
        r.answer(
            "stored versions naming a missing version",
            put_status(Box::new(status(json!(["v2", "v9"])))).await,
        );
        r.answer(
            "stored versions without the storage version",
            put_status(Box::new(status(json!([])))).await,
        );
        r.answer(
            "v1 removed once no longer stored",
            update_crd(t, &name, |c| {
                c["spec"]["versions"].as_array_mut().map(|v| v.remove(0));
            })
            .await,
        );
        delete_crd(t, &name).await;
    })
    .await;
}

/// The entries of the legacy discovery documents of the scenario's own group: the group
/// (its versions and preferred one) and each version's resources.
async fn own_discovery(t: &Target, versions: &[&str]) -> Value {
    let group = own_group(t);
    let get = |path: String| async move { raw_answer(t.rest.get().abs_path(&path)).await };
    let mut out = vec![get(format!("/apis/{group}")).await];
    for v in versions {
        out.push(get(format!("/apis/{group}/{v}")).await);
    }
    json!(out)
}

#[tokio::test]
async fn crd_versions_names_and_categories_are_discovered_alike() {
    differential("mx-crd-discovery", async |t: &Target, r: &mut Record| {
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut versions = vec![];
        for (v, storage) in [("v1alpha1", false), ("v1beta2", false), ("v1", true), ("v2", false), ("v10", false), ("foo", false)] {
            versions.push(crd_version(v, storage, open.clone()));
        }
        let mut crd = own_crd(t, "Disc", json!(versions));
        crd["spec"]["names"]["shortNames"] = json!(["dc", "dsc"]);
        crd["spec"]["names"]["categories"] = json!(["all", "kubekit"]);
        crd["spec"]["versions"][1]["served"] = json!(false);
        crd["spec"]["versions"][2]["subresources"] = json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
        let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
        serve_crd(t, &crd, "discs", "v1").await;
        let stored = get_crd(t, &name).await.map(|c| json!({"spec": c["spec"], "status": c["status"]}));
        r.answer("the stored CRD", stored.map(|mut s| { s["status"]["conditions"] = json!("<conditions>"); s }));
        r.push(
            "discovery",
            own_discovery(t, &["v1beta2"]).await,
        );
        delete_crd(t, &name).await;
    })
    .await;
}

#[tokio::test]
async fn subresource_paths_of_custom_resources_answer_alike() {
    differential("mx-subresources", async |t: &Target, r: &mut Record| {
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut crd = own_crd(t, "Plain", json!([crd_version("v1", true, open)]));
        crd["spec"]["scope"] = json!("Namespaced");
        let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_string();
        serve_crd(t, &crd, "plains", "v1").await;
        let group = own_group(t);
        let plains = |req: Request| req.group_version(&group, "v1").namespace(&t.ns).resource("plains");
        let obj = json!({"apiVersion": format!("{group}/v1"), "kind": "Plain", "metadata": {"name": "p"},
            "spec": {"replicas": 1}, "status": {"ok": true}});
        r.answer("a create keeps status without the subresource", Res::send(plains(t.rest.post()).body(&obj)).await);
        for sub in ["status", "scale", "nothing"] {
            r.push(&format!("get /{sub}"), raw_answer(plains(t.rest.get()).name("p").subresource(sub)).await);
            r.push(&format!("put /{sub}"), raw_answer(plains(t.rest.put()).name("p").subresource(sub).body(&obj)).await);
        }
        r.push("a subresource of a missing object", raw_answer(plains(t.rest.get()).name("missing").subresource("status")).await);
        ensure_widgets(t).await;
        let ws = t.on("widgets");
        ws.create(widget("w", json!({}))).await.expect("w");
        let wreq = |req: Request| ws.req(req).name("w");
        r.push("a widget's status", raw_answer(wreq(t.rest.get()).subresource("status")).await);
        r.push("a widget's unknown subresource", raw_answer(wreq(t.rest.get()).subresource("logs")).await);
        r.push("a missing widget's scale", raw_answer(ws.req(t.rest.get()).name("missing").subresource("scale")).await);
        r.push("a post to a widget's status", raw_answer(wreq(t.rest.post()).subresource("status").body(&widget("w", json!({})))).await);
        r.push("a delete of a widget's status", raw_answer(wreq(t.rest.delete()).subresource("status")).await);
        r.answer("the widget after a delete of its status", ws.get("w").await);
        let mut renamed = widget("w", json!({}));
        renamed["metadata"]["name"] = json!("other");
        r.push("a status update naming another object", raw_answer(wreq(t.rest.put()).subresource("status").body(&renamed)).await);
        delete_crd(t, &name).await;
    })
    .await;
}

#[tokio::test]
async fn requests_the_server_cannot_route_or_read_are_refused_alike() {
    differential("mx-requests", async |t: &Target, r: &mut Record| {
        let ns = t.ns.clone();
        let cms = t.on("configmaps");
        cms.create(cm("c", json!({}))).await.expect("c");
        let path = |p: &str| p.replace("NS", &ns);
        let gets = [
            "/api/v1/namespaces/NS/nothings",
            "/api/v2/namespaces/NS/configmaps",
            "/apis/nothing.example.com/v1/things",
            "/apis/apps/v9/deployments",
            "/apis/apps/v1/namespaces/NS/nothings",
            "/api/v1/namespaces/NS/configmaps/c/status",
            "/api/v1/namespaces/NS/configmaps/c/x/y",
            "/apis/apps",
            "/apis/nothing.example.com",
        ];
        for p in gets {
            r.push(
                &format!("GET {p}"),
                raw_answer(t.rest.get().abs_path(&path(p))).await,
            );
        }
        let body = cm("x", json!({}));
        let writes = [
            (Method::PUT, "/api/v1/namespaces/NS/configmaps"),
            (Method::POST, "/api/v1/namespaces/NS/configmaps/c"),
            (Method::DELETE, "/api/v1/namespaces"),
            (Method::POST, "/api/v1/configmaps"),
            (Method::PATCH, "/api/v1/namespaces/NS/configmaps"),
            (Method::OPTIONS, "/api/v1/namespaces/NS/configmaps"),
        ];
        for (method, p) in writes {
            let label = format!("{method} {p}");
            r.push(
                &label,
                raw_answer(t.rest.request(method).abs_path(&path(p)).body(&body)).await,
            );
        }
        let on_c = || cms.req(t.rest.put()).name("c");
        r.push(
            "a body of text/plain",
            raw_answer(cms.req(t.rest.post()).body_bytes("hello", "text/plain")).await,
        );
        r.push(
            "a body of YAML",
            raw_answer(cms.req(t.rest.post()).body_bytes(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\n",
                "application/yaml",
            ))
            .await,
        );
        r.push(
            "an update of text/plain",
            raw_answer(on_c().body_bytes("hello", "text/plain")).await,
        );
        r.push(
            "a patch of text/plain",
            raw_answer(
                cms.req(t.rest.request(Method::PATCH))
                    .name("c")
                    .body_bytes("{}", "text/plain"),
            )
            .await,
        );
        r.push(
            "an Accept of text/plain",
            raw_answer(cms.req(t.rest.get()).name("c").accept("text/plain")).await,
        );
        r.push(
            "an Accept of anything",
            raw_answer(cms.req(t.rest.get()).name("c").accept("*/*")).await["code"].clone(),
        );
        let big =
            json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(3 * 1024 * 1024 + 10)}});
        r.push(
            "a body over 3 MiB",
            raw_answer(cms.req(t.rest.post()).body(&big)).await,
        );
        let nearly =
            json!({"metadata": {"name": "nearly"}, "data": {"k": "x".repeat(1024 * 1024 + 10)}});
        r.push(
            "a ConfigMap over 1 MiB",
            raw_answer(cms.req(t.rest.post()).body(&nearly)).await,
        );
        r.push(
            "a body without a kind",
            raw_answer(cms.req(t.rest.post()).body_bytes(
                r#"{"apiVersion": "v1", "metadata": {"name": "nokind"}}"#,
                "application/json",
            ))
            .await,
        );
        r.push(
            "a body without an apiVersion",
            raw_answer(cms.req(t.rest.post()).body_bytes(
                r#"{"kind": "ConfigMap", "metadata": {"name": "noversion"}}"#,
                "application/json",
            ))
            .await,
        );
        r.push(
            "a body of a list",
            raw_answer(cms.req(t.rest.post()).body_bytes(
                r#"{"apiVersion": "v1", "kind": "ConfigMapList", "items": []}"#,
                "application/json",
            ))
            .await,
        );
        r.push(
            "an empty body",
            raw_answer(cms.req(t.rest.post()).body_bytes("", "application/json")).await,
        );
        r.push(
            "an update of a body without a name",
            raw_answer(
                on_c().body(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})),
            )
            .await,
        );
        r.push(
            "an update whose name is another",
            raw_answer(on_c().body(&cm("d", json!({})))).await,
        );
    })
    .await;
}

#[tokio::test]
async fn apply_requests_of_the_wrong_shape_are_refused_alike() {
    differential("mx-apply-errors", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let cms = t.on("configmaps");
        let send_apply = |name: &str, params: &[(&str, &str)], body: &'static str| {
            let mut req = cms.req(t.rest.patch(PatchType::Apply)).name(name);
            for (k, v) in params {
                req = req.param(k, v);
            }
            raw_answer(req.body_bytes(body, "application/apply-patch+yaml"))
        };
        let m = [("fieldManager", "m")];
        r.push("YAML without apiVersion", send_apply("ap", &m, "kind: ConfigMap\nmetadata:\n  name: ap\n").await);
        r.push("YAML without kind", send_apply("ap", &m, "apiVersion: v1\nmetadata:\n  name: ap\n").await);
        r.push("YAML of another kind", send_apply("ap", &m, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ap\n").await);
        r.push("YAML without a name", send_apply("ap", &m, "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n").await);
        r.push("YAML naming another namespace", send_apply("ap", &m, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n  namespace: default\n").await);
        r.push("YAML that is a list", send_apply("ap", &m, "- a\n- b\n").await);
        r.push("a manager name too long", send_apply("ap", &[("fieldManager", &"m".repeat(129))], "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n").await);
        r.push("force that is not a bool", send_apply("ap", &[("fieldManager", "m"), ("force", "maybe")], "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n").await);
        r.push("an apply that creates", send_apply("ap", &m, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n  labels:\n    a: b\ndata:\n  k: v\n").await);
        r.push("managedFields in an apply", send_apply("ap", &m, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n  managedFields:\n  - manager: x\n    operation: Apply\n").await);
        r.push("a bad label in an apply", send_apply("ap", &m, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n  labels:\n    a: \"no good\"\n").await);
        let merge = cms.req(t.rest.patch(PatchType::Merge)).name("ap").param("force", "true");
        r.push("force on a merge patch", raw_answer(merge.body(&json!({"data": {"z": "1"}}))).await);
        let merge = cms.req(t.rest.patch(PatchType::Merge)).name("ap").param("fieldManager", &"m".repeat(129));
        r.push("a long manager on a merge patch", raw_answer(merge.body(&json!({"data": {"z": "1"}}))).await);
        let ws = t.on("widgets");
        let status = ws.apply("w", ("m", false, Some("status")),
            json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": {"name": "w"}, "status": {"ready": true}}));
        r.answer("an apply of a missing object's status", status.await);
    })
    .await;
}

#[tokio::test]
async fn dry_runs_of_every_verb_of_a_custom_resource_write_nothing_alike() {
    differential("mx-dry-run", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let ws = t.on("widgets");
        let dry = |req: Request| ws.req(req).param("dryRun", "All");
        let stored = ws.create(widget("kept", json!({"dry": "x"}))).await.expect("kept");
        r.answer("a dry-run create", Res::send(dry(t.rest.post()).body(&widget("new", json!({"dry": "x"})))).await);
        let mut changed = stored.clone();
        changed["spec"]["size"] = json!(5);
        r.answer("a dry-run update", Res::send(dry(t.rest.put()).name("kept").body(&changed)).await);
        let mut status = stored.clone();
        status["status"] = json!({"ready": true});
        r.answer("a dry-run status update", Res::send(dry(t.rest.put()).name("kept").subresource("status").body(&status)).await);
        let patch = json!([{"op": "replace", "path": "/spec/size", "value": 7}]);
        r.answer("a dry-run JSON patch", Res::send(dry(t.rest.patch(PatchType::Json)).name("kept").body(&patch)).await);
        let apply = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Widget", "metadata": {"name": "kept"}, "spec": {"size": 8}});
        r.answer("a dry-run apply", Res::send(dry(t.rest.patch(PatchType::Apply)).name("kept").param("fieldManager", "m").body(&apply)).await);
        let scale = json!({"spec": {"replicas": 4}});
        r.answer("a dry-run scale patch", Res::send(dry(t.rest.patch(PatchType::Merge)).name("kept").subresource("scale").body(&scale)).await);
        r.answer("a dry-run delete", Res::send(dry(t.rest.delete()).name("kept")).await);
        r.answer("a dry-run deletecollection", page(Res::send(dry(t.rest.delete()).param("labelSelector", "dry=x")).await));
        r.answer("the widget is as it was", ws.get("kept").await);
        r.answer("nothing else was created", page(ws.list(&[("labelSelector", "dry=x")]).await));
        r.answer("a dry-run update of a missing object", Res::send(dry(t.rest.put()).name("missing").body(&widget("missing", json!({})))).await);
        r.answer("a dry-run delete of a missing object", Res::send(dry(t.rest.delete()).name("missing")).await);
        let twice = ws.req(t.rest.post()).param("dryRun", "All").param("dryRun", "All");
        r.answer("dryRun given twice", Res::send(twice.body(&widget("twice", json!({})))).await);
        let empty = ws.req(t.rest.post()).param("dryRun", "");
        r.answer("an empty dryRun", Res::send(empty.body(&widget("empty", json!({})))).await);
    })
    .await;
}

/// Installs the Typed CRD of the scenario's own group: an int-or-string, an embedded
/// resource, a map list keyed by `name`, a set, and a map of strings.
async fn serve_typed(t: &Target) -> String {
    let spec = json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true},
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true},
        "entries": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "value": {"type": "integer"}}}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "count": {"type": "integer", "format": "int32"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
    }});
    let schema = json!({"type": "object", "properties": {"spec": spec}});
    let crd = own_crd(t, "Typed", json!([crd_version("v1", true, schema)]));
    serve_crd(t, &crd, "typeds", "v1").await;
    crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn custom_resources_of_structural_types_are_checked_alike() {
    differential("mx-crd-types", async |t: &Target, r: &mut Record| {
        let name = serve_typed(t).await;
        let group = own_group(t);
        let typed = |req: Request| req.group_version(&group, "v1").namespace(&t.ns).resource("typeds");
        let cases = [
            ("an int port", json!({"port": 80})),
            ("a named port", json!({"port": "http"})),
            ("a port that is a bool", json!({"port": true})),
            ("an embedded resource", json!({"template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "b"}}, "data": {"k": "v"}}})),
                                    ("an embedded resource with a bad name", json!({"template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}})),
                        ("an embedded resource without a kind", json!({"template": {"apiVersion": "v1", "metadata": {"name": "x"}}})),
            ("an embedded resource without an apiVersion", json!({"template": {"kind": "ConfigMap"}})),
            ("a map list key twice", json!({"entries": [{"name": "a", "value": 1}, {"name": "a", "value": 2}]})),
            ("a set with a value twice", json!({"tags": ["a", "a"]})),
            ("map list entries by name", json!({"entries": [{"name": "a", "value": 1}, {"name": "b", "value": 2}]})),
                        ("a map list entry without its key", json!({"entries": [{"value": 1}]})),
            ("a set", json!({"tags": ["a", "b"]})),
                        ("a map of strings with a number", json!({"labels": {"a": 1}})),
                                    ("an integer where a number goes", json!({"ratio": 2})),
            ("a string where a bool goes", json!({"flag": "true"})),
            ("an unknown field is pruned", json!({"unknown": 1, "flag": true})),
        ];
        for (i, (label, spec)) in cases.into_iter().enumerate() {
            let obj = json!({"apiVersion": format!("{group}/v1"), "kind": "Typed",
                "metadata": {"name": format!("t{i}")}, "spec": spec});
            let created = Res::send(typed(t.rest.post()).body(&obj)).await;
            r.answer(label, created.map(|o| o["spec"].clone()));
        }
        delete_crd(t, &name).await;
    })
    .await;
}

#[tokio::test]
async fn updates_of_missing_objects_create_them_where_the_kind_allows_alike() {
    differential("mx-create-on-update", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let bodies = [
            ("configmaps", cm("u", json!({}))),
            ("leases", json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "u"}, "spec": {"holderIdentity": "me"}})),
            ("endpoints", json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "u"}})),
            ("events", json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "u"},
                "involvedObject": {"kind": "ConfigMap", "name": "u", "namespace": t.ns}, "reason": "R", "message": "m", "type": "Normal"})),
            ("limitranges", json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "u"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}})),
            ("secrets", json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "u"}})),
            ("serviceaccounts", json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "u"}})),
            ("roles", json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "u"}, "rules": []})),
            ("widgets", widget("u", json!({}))),
        ];
        for (resource, body) in bodies {
            let shown = |a: kubekit::rest::Result<Value>| {
                a.map(|o| json!({"kind": o["kind"], "name": o["metadata"]["name"], "created": true}))
            };
            r.answer(&format!("{resource}: an update of a missing object"), shown(t.on(resource).update("u", &body, false).await));
            let mut with_rv = body.clone();
            with_rv["metadata"]["name"] = json!("v");
            with_rv["metadata"]["resourceVersion"] = json!("1");
            r.answer(&format!("{resource}: with a resourceVersion"), shown(t.on(resource).update("v", &with_rv, false).await));
        }
    })
    .await;
}

#[tokio::test]
async fn objects_being_deleted_answer_further_deletes_and_writes_alike() {
    differential("mx-deleting", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let ws = t.on("widgets");
        let mut w = widget("d", json!({}));
        w["metadata"]["finalizers"] = json!(["kubekit.dev/hold"]);
        ws.create(w).await.expect("d");
        r.answer("the first delete", ws.delete("d", json!({})).await);
        r.answer("a second delete", ws.delete("d", json!({})).await);
        r.answer(
            "a delete with a grace period",
            ws.delete("d", json!({"gracePeriodSeconds": 10})).await,
        );
        r.answer(
            "a change of the spec while deleting",
            ws.patch("d", PatchType::Merge, json!({"spec": {"size": 4}}))
                .await,
        );
        r.answer(
            "the deletionTimestamp removed",
            ws.patch(
                "d",
                PatchType::Merge,
                json!({"metadata": {"deletionTimestamp": null}}),
            )
            .await,
        );
        r.answer(
            "a label added while deleting",
            ws.patch(
                "d",
                PatchType::Merge,
                json!({"metadata": {"labels": {"a": "b"}}}),
            )
            .await,
        );
        r.answer(
            "a create of the same name",
            ws.create(widget("d", json!({}))).await,
        );
        r.answer(
            "the finalizers released",
            ws.patch(
                "d",
                PatchType::Merge,
                json!({"metadata": {"finalizers": ["foregroundDeletion", "orphan"]}}),
            )
            .await,
        );
        r.answer(
            "every finalizer released",
            ws.patch(
                "d",
                PatchType::Merge,
                json!({"metadata": {"finalizers": null}}),
            )
            .await,
        );
        r.answer("gone", ws.get("d").await);
        let cms = t.on("configmaps");
        let mut c = cm("c", json!({}));
        c["metadata"]["finalizers"] = json!(["kubekit.dev/hold"]);
        cms.create(c).await.expect("c");
        r.answer(
            "a configmap's delete with a grace period",
            cms.delete("c", json!({"gracePeriodSeconds": 30})).await,
        );
        let mut pending = cms.get("c").await.expect("c");
        pending["metadata"]["finalizers"] = json!([]);
        pending["metadata"]["deletionGracePeriodSeconds"] = json!(5);
        r.answer(
            "an update changing the grace period",
            cms.update("c", &pending, false).await,
        );
        pending["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        r.answer(
            "an update releasing it",
            cms.update("c", &pending, false).await,
        );
    })
    .await;
}

#[tokio::test]
async fn lists_and_watches_across_namespaces_answer_alike() {
    differential("mx-all-namespaces", async |t: &Target, r: &mut Record| {
        ensure_widgets(t).await;
        let ws = t.on("widgets");
        let label = format!("run={}", t.ns);
        let labels = json!({"run": t.ns});
        for name in ["a", "b"] {
            ws.create(widget(name, labels.clone())).await.expect("created");
        }
        let all = |req: Request| req.group_version(GROUP, "v1").resource("widgets");
        let send = |req: Request| async move { req.send().await?.decode::<Value>() };
        r.answer("a list across namespaces", send(all(t.rest.get()).param("labelSelector", &label)).await);
        r.answer(
            "a list across namespaces by namespace",
            page(send(all(t.rest.get()).param("fieldSelector", &format!("metadata.namespace={}", t.ns)).param("labelSelector", &label)).await),
        );
        r.answer(
            "a list across namespaces by name",
            page(send(all(t.rest.get()).param("fieldSelector", "metadata.name=a").param("labelSelector", &label)).await),
        );
        r.answer(
            "a list across namespaces, paged",
            page(send(all(t.rest.get()).param("limit", "1").param("labelSelector", &label)).await),
        );
        r.push(
            "a create without a namespace",
            raw_answer(all(t.rest.post()).body(&widget("c", labels.clone()))).await,
        );
        r.push(
            "a deletecollection across namespaces",
            raw_answer(all(t.rest.delete()).param("labelSelector", "run=nothing-at-all")).await,
        );
        let watch = all(t.rest.get()).param("labelSelector", &label).param("resourceVersion", "0");
        let events: Vec<Value> = watch
            .watch::<Value>()
            .await
            .expect("a watch")
            .take(2)
            .map(|e| match e {
                Ok(WatchEvent::Added(o)) => json!({"type": "ADDED", "name": o["metadata"]["name"], "namespace": o["metadata"]["namespace"]}),
                other => json!({"other": format!("{other:?}")}),
            })
            .collect()
            .await;
        let mut events = events;
        events.sort_by_key(|e| e.to_string());
        r.push("a watch across namespaces", json!(events));
    })
    .await;
}

#[tokio::test]
async fn patches_of_status_and_scale_subresources_answer_alike() {
    differential(
        "mx-subresource-patches",
        async |t: &Target, r: &mut Record| {
            ensure_widgets(t).await;
            let ws = t.on("widgets");
            ws.create(widget("s", json!({}))).await.expect("s");
            let status = [
                (
                    "a JSON patch of status",
                    PatchType::Json,
                    json!([{"op": "add", "path": "/status/ready", "value": true}]),
                ),
                (
                    "a JSON patch of spec through status",
                    PatchType::Json,
                    json!([{"op": "replace", "path": "/spec/size", "value": 9}]),
                ),
                (
                    "a merge patch of status and labels",
                    PatchType::Merge,
                    json!({"status": {"size": 2}, "metadata": {"labels": {"x": "y"}}}),
                ),
                (
                    "a failing JSON patch of status",
                    PatchType::Json,
                    json!([{"op": "remove", "path": "/status/missing"}]),
                ),
                (
                    "a strategic patch of a custom resource's status",
                    PatchType::StrategicMerge,
                    json!({"status": {"size": 3}}),
                ),
            ];
            for (label, how, patch) in status {
                r.answer(label, ws.patch_status("s", how, patch).await);
            }
            let scale = |how: PatchType, patch: Value| {
                Res::send(
                    ws.req(t.rest.patch(how))
                        .name("s")
                        .subresource("scale")
                        .body(&patch),
                )
            };
            r.answer(
                "a merge patch of the scale",
                scale(PatchType::Merge, json!({"spec": {"replicas": 5}})).await,
            );
            r.answer(
                "a JSON patch of the scale",
                scale(
                    PatchType::Json,
                    json!([{"op": "replace", "path": "/spec/replicas", "value": 6}]),
                )
                .await,
            );
            r.answer(
                "a JSON patch of the scale's status",
                scale(
                    PatchType::Json,
                    json!([{"op": "replace", "path": "/status/replicas", "value": 6}]),
                )
                .await,
            );
            // Its spec and status (the fake records no manager of the scale subresource).
            r.answer(
                "the widget after",
                ws.get("s").await.map(|w| json!([w["spec"], w["status"]])),
            );
            let cms = t.on("configmaps");
            cms.create(cm("c", json!({}))).await.expect("c");
            r.answer(
                "a status patch of a kind without status",
                cms.patch_status("c", PatchType::Merge, json!({"data": {"a": "b"}}))
                    .await,
            );
        },
    )
    .await;
}
