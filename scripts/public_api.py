#!/usr/bin/env python3
"""The public API of a crate, from rustdoc's JSON, as one line per item; and the
difference between two such listings told as breaking or compatible.

    public_api.py list CRATE.json                     the listing, sorted
    public_api.py check BASELINE CRATE.json VERSION   what changed since the baseline,
                                                      classified; fails unless VERSION
                                                      allows it
    public_api.py selftest                            the classifier and the version rule
    public_api.py crates                              each published crate of the
                                                      workspace (`publish` not false):
                                                      its name, version and the features
                                                      docs.rs documents (`-` for none)

A line names an item by every public path it is reachable by (re-exports included) with
its signature: `fn kubekit_client::Client::get(&self, ...) -> ...`, a struct's public
fields, an enum's variants, a trait's items, the inherent methods and the trait
implementations (auto traits included: losing `Send` breaks users) of a type.

What is breaking (cargo's SemVer reference, "API compatibility"):
- a line removed: an item, path, signature, field, variant or implementation gone or
  changed (a change is a line removed and another added);
- a line added that users' code can break on: a variant of an enum that is not
  `#[non_exhaustive]`, a public field of a struct users can build with a literal (all
  fields public, not `#[non_exhaustive]`), a trait item without a default. An item
  added beside others is compatible, as is one added within a new item.
Not seen: changes of behaviour, of private items, of `#[doc(hidden)]` items, and of
bounds that rustdoc does not show (variance, `Sized`); a sealed trait's new items are
called breaking.
"""

import json
import subprocess
import sys

# The rustdoc JSON format this reads (rustdoc 1.95's).
FORMAT_VERSION = 57

# --- types as written -------------------------------------------------------------------


class Crate:
    """One rustdoc JSON document: its items and the paths of the items it names."""

    def __init__(self, doc):
        if doc.get("format_version") != FORMAT_VERSION:
            print(f"public_api.py reads rustdoc's JSON format {FORMAT_VERSION}; this rustdoc wrote format "
                  f"{doc.get('format_version')}: a difference in the listing may come from it", file=sys.stderr)
        self.index = doc["index"]
        self.public = {}
        self.paths = doc["paths"]
        self.root = str(doc["root"])
        self.name = self.index[self.root]["name"]

    def item(self, id_):
        return self.index.get(str(id_))

    def path_of(self, id_, written):
        """An item's shortest public path (where it is defined may be a private module,
        which code can move between without changing the API), else rustdoc's."""
        public = self.public.get(str(id_))
        if public:
            return public
        summary = self.paths.get(str(id_))
        return "::".join(summary["path"]) if summary else written

    # Types, generic arguments and bounds, rendered as Rust writes them.

    def ty(self, t):
        if t is None:
            return "()"
        (kind, v), = t.items()
        if kind == "resolved_path":
            return self.path_of(v["id"], v["path"]) + self.args(v.get("args"))
        if kind in ("generic", "primitive"):
            return v
        if kind == "tuple":
            return "(" + ", ".join(self.ty(x) for x in v) + ("," if len(v) == 1 else "") + ")"
        if kind == "slice":
            return "[" + self.ty(v) + "]"
        if kind == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if kind == "borrowed_ref":
            lifetime = v["lifetime"] + " " if v.get("lifetime") else ""
            return "&" + lifetime + ("mut " if v["is_mutable"] else "") + self.ty(v["type"])
        if kind == "raw_pointer":
            return ("*mut " if v["is_mutable"] else "*const ") + self.ty(v["type"])
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "dyn_trait":
            traits = [self.poly(p) for p in v["traits"]]
            if v.get("lifetime"):
                traits.append(v["lifetime"])
            return "dyn " + " + ".join(traits)
        if kind == "qualified_path":
            trait = self.ty({"resolved_path": v["trait"]}) if v.get("trait") else ""
            return f"<{self.ty(v['self_type'])} as {trait}>::{v['name']}{self.args(v.get('args'))}"
        if kind == "function_pointer":
            return "fn" + self.sig(v["sig"])
        if kind == "infer":
            return "_"
        if kind == "pat":
            return self.ty(v["type"]) + " is " + v.get("__pat_unstable_do_not_use", "")
        return json.dumps(t, sort_keys=True)

    def args(self, a):
        if not a:
            return ""
        if a == "return_type_notation":
            return "(..)"
        (kind, v), = a.items()
        if kind == "parenthesized":
            out = " -> " + self.ty(v["output"]) if v.get("output") else ""
            return "(" + ", ".join(self.ty(x) for x in v["inputs"]) + ")" + out
        parts = []
        for arg in v["args"]:
            if arg == "infer":
                parts.append("_")
                continue
            (k, x), = arg.items()
            parts.append(x if k == "lifetime" else self.ty(x) if k == "type" else x.get("expr", "_"))
        for c in v.get("constraints", []):
            binding = c["binding"]
            if "equality" in binding:
                term = binding["equality"]
                value = self.ty(term["type"]) if "type" in term else term["constant"]["expr"]
                parts.append(f"{c['name']}{self.args(c.get('args'))} = {value}")
            else:
                parts.append(f"{c['name']}: {self.bounds(binding['constraint'])}")
        return "<" + ", ".join(parts) + ">" if parts else ""

    def poly(self, p):
        hrtb = self.hrtb(p.get("generic_params", []))
        return hrtb + self.ty({"resolved_path": p["trait"]})

    def hrtb(self, params):
        return "for<" + ", ".join(p["name"] for p in params) + "> " if params else ""

    def bounds(self, bounds):
        out = []
        for b in bounds:
            (kind, v), = b.items()
            if kind == "trait_bound":
                modifier = {"maybe": "?", "maybe_const": "~const "}.get(v.get("modifier"), "")
                out.append(modifier + self.hrtb(v.get("generic_params", [])) + self.ty({"resolved_path": v["trait"]}))
            elif kind == "outlives":
                out.append(v)
            else:
                out.append("use<" + ", ".join(str(x) for x in v) + ">")
        return " + ".join(out)

    def generics(self, g):
        params = []
        for p in g.get("params", []):
            (kind, v), = p["kind"].items()
            if kind == "lifetime":
                params.append(p["name"] + (": " + " + ".join(v["outlives"]) if v["outlives"] else ""))
            elif kind == "type":
                if v.get("is_synthetic"):
                    continue
                bound = ": " + self.bounds(v["bounds"]) if v["bounds"] else ""
                default = " = " + self.ty(v["default"]) if v.get("default") else ""
                params.append(p["name"] + bound + default)
            else:
                params.append(f"const {p['name']}: {self.ty(v['type'])}")
        where = []
        for w in g.get("where_predicates", []):
            (kind, v), = w.items()
            if kind == "bound_predicate":
                hrtb = self.hrtb(v.get("generic_params", []))
                where.append(f"{hrtb}{self.ty(v['type'])}: {self.bounds(v['bounds'])}")
            elif kind == "lifetime_predicate":
                where.append(f"{v['lifetime']}: {' + '.join(v['outlives'])}")
            else:
                where.append(f"{self.ty(v['lhs'])} == {json.dumps(v['rhs'], sort_keys=True)}")
        head = "<" + ", ".join(params) + ">" if params else ""
        return head, (" where " + ", ".join(where) if where else "")

    def sig(self, s):
        inputs = ", ".join(f"{n}: {self.ty(t)}" if n != "self" else self.ty(t) for n, t in s["inputs"])
        out = " -> " + self.ty(s["output"]) if s.get("output") else ""
        return f"({inputs}{', ...' if s.get('is_c_variadic') else ''}){out}"

    def function(self, path, f):
        header = f["header"]
        quals = "".join(q for q, on in (("const ", header["is_const"]), ("async ", header["is_async"]),
                                           ("unsafe ", header["is_unsafe"])) if on)
        head, where = self.generics(f["generics"])
        return f"{quals}fn {path}{head}{self.sig(f['sig'])}{where}"

    # --- the items, walked from the root along public paths ----------------------------

    def listing(self):
        """(line, breaking_if_added, parent_line) for every public item. The walk is made
        twice: the first finds each item's public paths, which the second writes types with."""
        for _ in range(2):
            self.out = []
            self.seen = set()
            self.found = {}
            self.module(self.root, self.name)
            self.public = {id_: min(paths, key=lambda p: (p.count("::"), p)) for id_, paths in self.found.items()}
        return self.out

    def emit(self, line, breaking=False, parent=None):
        self.out.append((line, breaking, parent))

    def module(self, id_, path):
        if (id_, path) in self.seen:
            return
        self.seen.add((id_, path))
        self.emit(f"mod {path}")
        for child in self.item(id_)["inner"]["module"]["items"]:
            self.named(str(child), path)

    def named(self, id_, parent_path, name=None):
        item = self.item(id_)
        if item is None or item["visibility"] != "public" and "use" not in item["inner"]:
            return
        (kind, inner), = item["inner"].items()
        if kind == "use":
            return self.reexport(item, inner, parent_path)
        path = f"{parent_path}::{name or item['name']}"
        self.found.setdefault(id_, set()).add(path)
        if kind == "module":
            return self.module(id_, path)
        attrs = json.dumps(item.get("attrs", []))
        exhaustive = "non_exhaustive" not in attrs
        marker = "" if exhaustive else " #[non_exhaustive]"
        if kind == "function":
            self.emit(self.function(path, inner))
        elif kind == "struct":
            head, where = self.generics(inner["generics"])
            line = f"struct {path}{head}{where}{marker}"
            self.emit(line)
            fields = inner["kind"]
            if isinstance(fields, dict) and "plain" in fields:
                literal = exhaustive and not fields["plain"]["has_stripped_fields"]
                for f in fields["plain"]["fields"]:
                    field = self.item(f)
                    self.emit(f"field {path}.{field['name']}: {self.field_ty(f)}", literal, line)
            elif isinstance(fields, dict) and "tuple" in fields:
                for i, f in enumerate(fields["tuple"]):
                    if f is not None:
                        self.emit(f"field {path}.{i}: {self.field_ty(f)}", False, line)
            self.impls(path, inner["impls"])
        elif kind == "enum":
            head, where = self.generics(inner["generics"])
            line = f"enum {path}{head}{where}{marker}"
            self.emit(line)
            for v in inner["variants"]:
                self.variant(path, self.item(v), exhaustive, line)
            self.impls(path, inner["impls"])
        elif kind == "union":
            self.emit(f"union {path}{''.join(self.generics(inner['generics']))}")
            self.impls(path, inner["impls"])
        elif kind == "trait":
            self.trait(path, inner)
        elif kind == "type_alias":
            head, where = self.generics(inner["generics"])
            self.emit(f"type {path}{head} = {self.ty(inner['type'])}{where}")
        elif kind == "constant":
            self.emit(f"const {path}: {self.ty(inner['type'])}")
        elif kind == "static":
            self.emit(f"static {'mut ' if inner['is_mutable'] else ''}{path}: {self.ty(inner['type'])}")
        elif kind == "macro":
            self.emit(f"macro {path}!")
        elif kind == "proc_macro":
            helpers = f" attributes({', '.join(inner['helpers'])})" if inner.get("helpers") else ""
            self.emit(f"proc_macro {inner['kind']} {path}{helpers}")
        else:
            self.emit(f"{kind} {path}")

    def reexport(self, item, use, parent_path):
        if item["visibility"] != "public":
            return
        target = use.get("id")
        local = target is not None and self.item(target) is not None
        if use["is_glob"]:
            if local and "module" in self.item(target)["inner"]:
                for child in self.item(target)["inner"]["module"]["items"]:
                    self.named(str(child), parent_path)
            elif local and "enum" in self.item(target)["inner"]:
                self.emit(f"use {parent_path}::* = {use['source']}::*")
            else:
                self.emit(f"use {parent_path}::* = {use['source']}::*")
        elif local:
            self.named(str(target), parent_path, use["name"])
        else:
            # Another crate's item, by the path the `pub use` names it with.
            self.emit(f"use {parent_path}::{use['name']} = {use['source']}")

    def field_ty(self, id_):
        """The type of the struct or variant field `id_`."""
        return self.ty(self.item(id_)["inner"]["struct_field"])

    def variant(self, enum_path, v, exhaustive, parent):
        kind = v["inner"]["variant"]["kind"]
        shape = ""
        if isinstance(kind, dict) and "tuple" in kind:
            shape = "(" + ", ".join(self.field_ty(f) if f is not None else "_" for f in kind["tuple"]) + ")"
        elif isinstance(kind, dict) and "struct" in kind:
            shape = " { " + ", ".join(f"{self.item(f)['name']}: {self.field_ty(f)}" for f in kind["struct"]["fields"]) + " }"
        self.emit(f"variant {enum_path}::{v['name']}{shape}", exhaustive, parent)

    def trait(self, path, t):
        head, where = self.generics(t["generics"])
        supertraits = ": " + self.bounds(t["bounds"]) if t["bounds"] else ""
        unsafe = "unsafe " if t["is_unsafe"] else ""
        line = f"{unsafe}trait {path}{head}{supertraits}{where}"
        self.emit(line)
        for id_ in t["items"]:
            member = self.item(id_)
            (kind, inner), = member["inner"].items()
            member_path = f"{path}::{member['name']}"
            if kind == "function":
                self.emit(self.function(member_path, inner), not inner["has_body"], line)
            elif kind == "assoc_type":
                bounds = ": " + self.bounds(inner["bounds"]) if inner["bounds"] else ""
                default = " = " + self.ty(inner["type"]) if inner.get("type") else ""
                self.emit(f"type {member_path}{bounds}{default}", not inner.get("type"), line)
            elif kind == "assoc_const":
                default = " = .." if inner.get("value") else ""
                self.emit(f"const {member_path}: {self.ty(inner['type'])}{default}", not inner.get("value"), line)

    def impls(self, path, ids):
        for id_ in ids:
            imp = self.item(id_)["inner"]["impl"]
            if imp.get("blanket_impl") is not None:
                continue
            head, where = self.generics(imp["generics"])
            if imp.get("trait") is None:
                for member_id in imp["items"]:
                    member = self.item(member_id)
                    if member["visibility"] != "public":
                        continue
                    (kind, inner), = member["inner"].items()
                    member_path = f"{path}::{member['name']}"
                    if kind == "function":
                        self.emit(f"impl{head} " + self.function(member_path, inner) + where)
                    elif kind == "assoc_const":
                        self.emit(f"impl{head} const {member_path}: {self.ty(inner['type'])}{where}")
            else:
                negative = "!" if imp.get("is_negative") else ""
                trait = self.ty({"resolved_path": imp["trait"]})
                if trait == "core::marker::Freeze":  # unstable: no user can name it
                    continue
                self.emit(f"impl{head} {negative}{trait} for {self.ty(imp['for'])}{where}")


# --- the difference, classified ---------------------------------------------------------


def classify(old_lines, new_items):
    """(breaking, compatible): lines removed or added, each with why when breaking."""
    new_lines = {line for line, _, _ in new_items}
    breaking = [f"- {line}" for line in sorted(old_lines - new_lines)]
    compatible = []
    for line, breaking_if_added, parent in sorted(set(new_items)):
        if line in old_lines:
            continue
        if breaking_if_added and parent in old_lines:
            breaking.append(f"+ {line}")
        else:
            compatible.append(f"+ {line}")
    return breaking, compatible


def needed(version, breaking):
    """The version a change needs after `version`: cargo's rule, where the leftmost
    non-zero number is the major one."""
    major, minor, patch = (int(x) for x in version.split("-")[0].split(".")[:3])
    if breaking:
        return f"{major + 1}.0.0" if major else f"0.{minor + 1}.0" if minor else f"0.0.{patch + 1}"
    return f"{major}.{minor + 1}.0" if major else f"0.{minor}.{patch + 1}"


def read_listing(path):
    """The baseline's version (from its `# version X` line) and its lines."""
    with open(path) as f:
        lines = [line.rstrip("\n") for line in f]
    version = next((line.split()[-1] for line in lines if line.startswith("# version ")), None)
    if version is None:
        sys.exit(f"{path}: no `# version X` line: not a listing that `public-api.sh update` wrote")
    return version, {line for line in lines if line and not line.startswith("#")}


def version_key(version):
    return tuple(int(x) for x in version.split("-")[0].split(".")[:3])


def check(baseline, doc, version):
    """Whether `version` may have the API of `doc`, given the API `baseline` records:
    prints what changed and the version that allows it; false when `version` does not."""
    recorded, old = read_listing(baseline)
    breaking, compatible = classify(old, Crate(doc).listing())
    for kind, lines in (("breaking", breaking), ("compatible", compatible)):
        if lines:
            print(f"  {kind} ({len(lines)}):")
            print("\n".join(f"    {line}" for line in lines))
    if not breaking and not compatible:
        return True
    wanted = needed(recorded, bool(breaking))
    if version_key(version) >= version_key(wanted):
        print(f"  {version} allows these changes from {recorded}")
        return True
    kind = "a breaking" if breaking else "a compatible"
    print(f"  {kind} change from {recorded}, which needs version {wanted} (the crate is {version}); while "
          f"{recorded} is unreleased, record the API as it is with `scripts/public-api.sh update`")
    return False


def selftest():
    old = {"mod m", "enum m::E", "variant m::E::A", "struct m::S", "field m::S.a: u8",
           "trait m::T", "fn m::T::f(&self)", "fn m::f(u8)"}
    new = [("mod m", False, None), ("enum m::E", False, None), ("variant m::E::A", True, "enum m::E"),
           ("variant m::E::B", True, "enum m::E"), ("struct m::S", False, None),
           ("field m::S.a: u8", True, "struct m::S"), ("field m::S.b: u8", True, "struct m::S"),
           ("trait m::T", False, None), ("fn m::T::f(&self)", True, "trait m::T"),
           ("fn m::T::g(&self)", False, "trait m::T"), ("fn m::f(u16)", False, None),
           ("enum m::N #[non_exhaustive]", False, None), ("variant m::N::A", False, "enum m::N #[non_exhaustive]"),
           ("enum m::F", False, None), ("variant m::F::A", True, "enum m::F")]
    breaking, compatible = classify(old, new)
    assert breaking == ["- fn m::f(u8)", "+ field m::S.b: u8", "+ variant m::E::B"], breaking
    assert compatible == ["+ enum m::F", "+ enum m::N #[non_exhaustive]", "+ fn m::T::g(&self)", "+ fn m::f(u16)",
                          "+ variant m::F::A", "+ variant m::N::A"], compatible
    assert [needed("0.1.0", True), needed("0.1.0", False), needed("1.2.3", True), needed("1.2.3", False),
            needed("0.0.4", True)] == ["0.2.0", "0.1.1", "2.0.0", "1.3.0", "0.0.5"]
    print("public_api.py: the classifier and the version rule behave")


def published():
    """Each published crate of the workspace, from `cargo metadata`: (name, version, the
    features docs.rs documents but k8s-openapi's, whose version comes from the environment)."""
    metadata = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1", "--locked"],
                              check=True, stdout=subprocess.PIPE).stdout
    for p in json.loads(metadata)["packages"]:
        if p["publish"] is None:
            docs = ((p.get("metadata") or {}).get("docs") or {}).get("rs") or {}
            features = [f for f in docs.get("features", []) if not f.startswith("k8s-openapi/")]
            yield p["name"], p["version"], features


def main(argv):
    if argv[1:] == ["selftest"]:
        return selftest()
    if argv[1:] == ["crates"]:
        for name, version, features in published():
            print(name, version, ",".join(features) or "-")
        return
    if argv[1:2] == ["list"] and len(argv) == 3:
        with open(argv[2]) as f:
            items = Crate(json.load(f)).listing()
        print("\n".join(sorted({line for line, _, _ in items})))
        return
    if argv[1:2] == ["check"] and len(argv) == 5:
        with open(argv[3]) as f:
            sys.exit(0 if check(argv[2], json.load(f), argv[4]) else 1)
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
