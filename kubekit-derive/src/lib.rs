//! kubekit's derive macros. [`ApplyConfiguration`](derive@ApplyConfiguration) writes the
//! typed server-side apply configuration of a custom resource, as
//! `kubekit-applyconfigurations-gen` writes those of the built-in kinds. Use it through
//! `kubekit::applyconfigurations::ApplyConfiguration`.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Field, Fields, GenericArgument, Ident, LitStr, Path,
    PathArguments, Type, parse_macro_input,
};

/// Derives the apply configuration of a struct: a twin named `<Struct>Apply` with every
/// field an `Option`, serialized only when set, under the JSON name serde gives the field
/// (`#[serde(rename_all)]`, `#[serde(rename)]`; `#[serde(skip)]`ped fields are left
/// out, a `#[serde(flatten)]`ed one's configuration is flattened too), and a builder
/// method per field: a list's appends, a map's adds, any other sets.
/// A field's configuration is its type's (`Configurable`): the twin of a struct that
/// derives this too, the generated configuration of a k8s-openapi type, the value itself
/// for a scalar, a string, a `Quantity` or an enum that derives this.
///
/// On the spec struct of `#[derive(CustomResource)]` it also writes the configuration of
/// the whole object from kube's `#[kube(group, version, kind, namespaced, status, root)]`:
/// `<Kind>Apply`, with `new(name, namespace)` (`new(name)` when cluster-scoped), `spec`,
/// `status`, `metadata`, `labels` and `annotations`, an `ApplyConfiguration` that
/// `ResourceClient::apply` and `apply_status` send.
///
/// On an enum it makes the enum a leaf: applied whole, its configuration is itself.
///
/// `#[apply(crate = "path")]` names the crate of the configurations when it is not
/// `::kubekit::applyconfigurations` (`kubekit_applyconfigurations` without kubekit).
#[proc_macro_derive(ApplyConfiguration, attributes(apply))]
pub fn derive_apply_configuration(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// What the container's attributes say.
struct Container {
    /// Where the configurations' crate is.
    krate: Path,
    /// serde's `rename_all`.
    rename_all: Option<String>,
    /// kube's `#[kube(...)]`, on a custom resource's spec.
    kube: Option<Kube>,
}

/// The parts of kube's `#[kube(...)]` an object's configuration needs.
struct Kube {
    group: String,
    version: String,
    kind: String,
    /// The root struct's name when it is not the kind (`root = "..."`).
    root: Option<String>,
    namespaced: bool,
    /// The status type (`status = "AppStatus"`).
    status: Option<Type>,
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            "ApplyConfiguration: a generic type has no apply configuration",
        ));
    }
    let container = container(&input.attrs)?;
    let krate = &container.krate;
    let ident = &input.ident;
    let fields = match &input.data {
        Data::Enum(_) => {
            return Ok(quote! {
                impl #krate::Configurable for #ident {
                    type Configuration = #ident;
                }
            });
        }
        Data::Struct(syn::DataStruct {
            fields: Fields::Named(named),
            ..
        }) => &named.named,
        _ => {
            return Err(syn::Error::new(
                input.span(),
                "ApplyConfiguration derives for structs with named fields and enums",
            ));
        }
    };
    let vis = &input.vis;
    let twin = format_ident!("{}Apply", ident);
    let serde_crate = quote!(#krate::__private::serde);
    let serde_crate_str = serde_crate.to_string();
    let mut twin_fields = Vec::new();
    let mut methods = Vec::new();
    for field in fields {
        let options = FieldOptions::read(&field.attrs)?;
        if options.skip {
            continue;
        }
        let name = field.ident.as_ref().expect("named fields have names");
        let json = match options.rename {
            Some(json) => json,
            None => rename(&unraw(name), container.rename_all.as_deref(), field)?,
        };
        let ty = &field.ty;
        let docs = field.attrs.iter().filter(|a| a.path().is_ident("doc"));
        if options.flatten {
            // Its fields are the object's own: not an `Option` (an unset one sends nothing
            // and reads back unset), set whole.
            twin_fields.push(quote! {
                #(#docs)*
                #[serde(flatten)]
                pub #name: <#ty as #krate::Configurable>::Configuration,
            });
            let doc = format!(" Sets the fields of `{name}`, flattened into this object.");
            methods.push(quote! {
                #[doc = #doc]
                #[must_use]
                pub fn #name(mut self, value: <#ty as #krate::Configurable>::Configuration) -> Self {
                    self.#name = value;
                    self
                }
            });
            continue;
        }
        twin_fields.push(quote! {
            #(#docs)*
            #[serde(rename = #json, skip_serializing_if = "Option::is_none")]
            pub #name: Option<<#ty as #krate::Configurable>::Configuration>,
        });
        methods.push(setter(krate, name, &json, ty));
    }
    let twin_doc = format!(
        " The apply configuration of [`{ident}`]: every field optional, sent only when set."
    );
    let mut out = quote! {
        #[doc = #twin_doc]
        #[derive(Clone, Debug, Default, PartialEq, #serde_crate::Serialize, #serde_crate::Deserialize)]
        #[serde(crate = #serde_crate_str)]
        #vis struct #twin {
            #(#twin_fields)*
        }

        impl #twin {
            #(#methods)*
        }

        impl #krate::Configurable for #ident {
            type Configuration = #twin;
        }
    };
    if let Some(kube) = &container.kube {
        out.extend(object(krate, vis, &twin, kube));
    }
    Ok(out)
}

/// The builder method of one field: a list's appends, a map's adds, a string's takes
/// anything that becomes one, any other sets the field's configuration.
fn setter(krate: &Path, name: &Ident, json: &str, ty: &Type) -> Tokens {
    let ty = inside(ty, "Option").unwrap_or(ty);
    if let Some(item) = inside(ty, "Vec") {
        let doc = format!(" Appends `items` to `{json}`.");
        return quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #name(mut self, items: impl IntoIterator<Item = <#item as #krate::Configurable>::Configuration>) -> Self {
                self.#name.get_or_insert_with(Default::default).extend(items);
                self
            }
        };
    }
    if let Some((key, value)) = map_types(ty) {
        let doc = format!(" Adds `entries` to `{json}`.");
        return quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #name<K: Into<#key>>(mut self, entries: impl IntoIterator<Item = (K, <#value as #krate::Configurable>::Configuration)>) -> Self {
                self.#name
                    .get_or_insert_with(Default::default)
                    .extend(entries.into_iter().map(|(k, v)| (k.into(), v)));
                self
            }
        };
    }
    let doc = format!(" Sets `{json}`.");
    if last_segment(ty).is_some_and(|s| s.ident == "String" && s.arguments.is_empty()) {
        return quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #name(mut self, value: impl Into<String>) -> Self {
                self.#name = Some(value.into());
                self
            }
        };
    }
    quote! {
        #[doc = #doc]
        #[must_use]
        pub fn #name(mut self, value: <#ty as #krate::Configurable>::Configuration) -> Self {
            self.#name = Some(value);
            self
        }
    }
}

/// The configuration of the whole custom resource whose spec is `spec`.
fn object(krate: &Path, vis: &syn::Visibility, spec: &Ident, kube: &Kube) -> Tokens {
    let root = format_ident!("{}", kube.root.as_deref().unwrap_or(&kube.kind));
    let config = format_ident!("{}Apply", root);
    let api_version = format!("{}/{}", kube.group, kube.version);
    let kind = &kube.kind;
    let serde_crate = quote!(#krate::__private::serde);
    let serde_crate_str = serde_crate.to_string();
    let meta = quote!(#krate::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let namespaced = kube.namespaced;
    let (params, with_namespace, new_doc) = if namespaced {
        (
            quote!(name: impl Into<String>, namespace: impl Into<String>),
            quote!(.namespace(namespace)),
            format!(
                " The apply configuration of the {kind} `name` in `namespace`: its \
                 `apiVersion`, `kind`, name and namespace set, nothing else."
            ),
        )
    } else {
        (
            quote!(name: impl Into<String>),
            quote!(),
            format!(
                " The apply configuration of the {kind} `name`: its `apiVersion`, `kind` \
                 and name set, nothing else."
            ),
        )
    };
    let (status_field, status_method) = match &kube.status {
        Some(status) => (
            quote! {
                /// The status, applied through the `status` subresource
                /// (`ResourceClient::apply_status`).
                #[serde(rename = "status", skip_serializing_if = "Option::is_none")]
                pub status: Option<<#status as #krate::Configurable>::Configuration>,
            },
            quote! {
                /// Sets `status`.
                #[must_use]
                pub fn status(mut self, value: <#status as #krate::Configurable>::Configuration) -> Self {
                    self.status = Some(value);
                    self
                }
            },
        ),
        None => (quote!(), quote!()),
    };
    let doc = format!(
        " The apply configuration of a whole [`{root}`] (`{api_version}`, kind `{kind}`): \
         what `ResourceClient::apply` sends."
    );
    let labels = meta_map(&meta, "labels");
    let annotations = meta_map(&meta, "annotations");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, Default, PartialEq, #serde_crate::Serialize, #serde_crate::Deserialize)]
        #[serde(crate = #serde_crate_str)]
        #vis struct #config {
            /// `apiVersion`: set by `new`.
            #[serde(rename = "apiVersion", skip_serializing_if = "Option::is_none")]
            pub api_version: Option<String>,
            /// `kind`: set by `new`.
            #[serde(rename = "kind", skip_serializing_if = "Option::is_none")]
            pub kind: Option<String>,
            /// The object's metadata: its name and namespace, the labels and annotations
            /// applied.
            #[serde(rename = "metadata", skip_serializing_if = "Option::is_none")]
            pub metadata: Option<#meta>,
            /// The spec.
            #[serde(rename = "spec", skip_serializing_if = "Option::is_none")]
            pub spec: Option<#spec>,
            #status_field
        }

        impl #config {
            #[doc = #new_doc]
            pub fn new(#params) -> Self {
                Self {
                    api_version: Some(#api_version.into()),
                    kind: Some(#kind.into()),
                    metadata: Some(<#meta>::default().name(name) #with_namespace),
                    ..Self::default()
                }
            }

            /// Sets `metadata`.
            #[must_use]
            pub fn metadata(mut self, value: #meta) -> Self {
                self.metadata = Some(value);
                self
            }

            #labels
            #annotations

            /// Sets `spec`.
            #[must_use]
            pub fn spec(mut self, value: #spec) -> Self {
                self.spec = Some(value);
                self
            }

            #status_method
        }

        impl #krate::ApplyConfiguration for #config {
            const API_VERSION: &'static str = #api_version;
            const KIND: &'static str = #kind;
            const NAMESPACED: bool = #namespaced;

            fn metadata(&self) -> Option<&#meta> {
                self.metadata.as_ref()
            }

            fn metadata_mut(&mut self) -> &mut #meta {
                self.metadata.get_or_insert_with(Default::default)
            }
        }

        impl #krate::Configurable for #root {
            type Configuration = #config;
        }
    }
}

/// The method that adds entries to `metadata.<map>`.
fn meta_map(meta: &Tokens, map: &str) -> Tokens {
    let method = format_ident!("{}", map);
    let doc = format!(" Adds `entries` to `metadata.{map}`.");
    quote! {
        #[doc = #doc]
        #[must_use]
        pub fn #method<K: Into<String>>(mut self, entries: impl IntoIterator<Item = (K, String)>) -> Self {
            let meta: #meta = self.metadata.take().unwrap_or_default();
            self.metadata = Some(meta.#method(entries));
            self
        }
    }
}

/// The last segment of a path type (`Vec<T>` of `std::vec::Vec<T>`).
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// The type arguments of `ty` when it is `wrapper<...>`.
fn arguments<'a>(ty: &'a Type, wrapper: &str) -> Vec<&'a Type> {
    match last_segment(ty) {
        Some(s) if s.ident == wrapper => match &s.arguments {
            PathArguments::AngleBracketed(a) => a
                .args
                .iter()
                .filter_map(|a| match a {
                    GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// `T` when `ty` is `wrapper<T>`.
fn inside<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    match arguments(ty, wrapper)[..] {
        [t] => Some(t),
        _ => None,
    }
}

/// The key and value types of a `BTreeMap` or `HashMap`.
fn map_types(ty: &Type) -> Option<(&Type, &Type)> {
    ["BTreeMap", "HashMap"]
        .iter()
        .find_map(|m| match arguments(ty, m)[..] {
            [k, v] => Some((k, v)),
            _ => None,
        })
}

/// A field's name without `r#`.
fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map(str::to_string).unwrap_or(s)
}

/// The JSON name serde's `rename_all = rule` gives the field `name`.
fn rename(name: &str, rule: Option<&str>, field: &Field) -> syn::Result<String> {
    let words: Vec<&str> = name.split('_').collect();
    let capitalized = |w: &&str| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default()
    };
    Ok(match rule {
        None | Some("snake_case") => name.to_string(),
        Some("lowercase") => name.to_lowercase(),
        Some("UPPERCASE") | Some("SCREAMING_SNAKE_CASE") => name.to_uppercase(),
        Some("PascalCase") => words.iter().map(capitalized).collect(),
        Some("camelCase") => {
            let (first, rest) = words.split_first().expect("split gives one word at least");
            std::iter::once(first.to_string())
                .chain(rest.iter().map(capitalized))
                .collect()
        }
        Some("kebab-case") => name.replace('_', "-"),
        Some("SCREAMING-KEBAB-CASE") => name.replace('_', "-").to_uppercase(),
        Some(other) => {
            return Err(syn::Error::new(
                field.span(),
                format!(
                    "ApplyConfiguration: serde's rename_all = {other:?} is not a rule serde has"
                ),
            ));
        }
    })
}

/// What a field's `#[serde(...)]` attributes say.
#[derive(Default)]
struct FieldOptions {
    rename: Option<String>,
    skip: bool,
    flatten: bool,
}

impl FieldOptions {
    fn read(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut options = Self::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("rename") {
                    options.rename = Some(serialized_name(&meta)?);
                } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_serializing") {
                    options.skip = true;
                } else if meta.path.is_ident("flatten") {
                    options.flatten = true;
                } else {
                    skip_value(meta.input)?;
                }
                Ok(())
            })?;
        }
        Ok(options)
    }
}

/// The container's attributes: `#[apply(crate)]`, serde's `rename_all`, kube's `#[kube]`.
fn container(attrs: &[Attribute]) -> syn::Result<Container> {
    let mut krate: Path = syn::parse_quote!(::kubekit::applyconfigurations);
    let mut rename_all = None;
    let mut kube = None;
    for attr in attrs {
        if attr.path().is_ident("apply") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("crate") {
                    krate = meta.value()?.parse::<LitStr>()?.parse()?;
                    Ok(())
                } else {
                    Err(meta.error("ApplyConfiguration: #[apply] takes `crate = \"path\"`"))
                }
            })?;
        } else if attr.path().is_ident("serde") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("rename_all") {
                    rename_all = Some(serialized_name(&meta)?);
                } else {
                    skip_value(meta.input)?;
                }
                Ok(())
            })?;
        } else if attr.path().is_ident("kube") {
            kube = Some(read_kube(attr)?);
        }
    }
    Ok(Container {
        krate,
        rename_all,
        kube,
    })
}

/// kube's `#[kube(...)]`: the group, version and kind are required, as kube requires them.
fn read_kube(attr: &Attribute) -> syn::Result<Kube> {
    let (mut group, mut version, mut kind, mut root, mut status) = (None, None, None, None, None);
    let mut namespaced = false;
    attr.parse_nested_meta(|meta| {
        let string = |meta: &syn::meta::ParseNestedMeta| -> syn::Result<String> {
            Ok(meta.value()?.parse::<LitStr>()?.value())
        };
        if meta.path.is_ident("group") {
            group = Some(string(&meta)?);
        } else if meta.path.is_ident("version") {
            version = Some(string(&meta)?);
        } else if meta.path.is_ident("kind") {
            kind = Some(string(&meta)?);
        } else if meta.path.is_ident("root") {
            root = Some(string(&meta)?);
        } else if meta.path.is_ident("status") {
            status = Some(meta.value()?.parse::<LitStr>()?.parse::<Type>()?);
        } else if meta.path.is_ident("namespaced") {
            namespaced = true;
        } else {
            skip_value(meta.input)?;
        }
        Ok(())
    })?;
    let missing = |what: &str| {
        syn::Error::new(
            attr.span(),
            format!("ApplyConfiguration: #[kube(...)] names no {what}"),
        )
    };
    Ok(Kube {
        group: group.ok_or_else(|| missing("group"))?,
        version: version.ok_or_else(|| missing("version"))?,
        kind: kind.ok_or_else(|| missing("kind"))?,
        root,
        namespaced,
        status,
    })
}

/// The name of `rename = "x"` or `rename(serialize = "x", …)` (also `rename_all`'s).
fn serialized_name(meta: &syn::meta::ParseNestedMeta) -> syn::Result<String> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(meta.value()?.parse::<LitStr>()?.value());
    }
    let mut name = None;
    meta.parse_nested_meta(|inner| {
        let value = inner.value()?.parse::<LitStr>()?.value();
        if inner.path.is_ident("serialize") {
            name = Some(value);
        }
        Ok(())
    })?;
    name.ok_or_else(|| meta.error("ApplyConfiguration: no `serialize = \"...\"` name"))
}

/// Consumes what follows an attribute's key that is not read (`= value`, `(...)`), up to
/// the next comma.
fn skip_value(input: ParseStream) -> syn::Result<()> {
    input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            if let proc_macro2::TokenTree::Punct(p) = &tt
                && p.as_char() == ','
            {
                break;
            }
            rest = next;
        }
        Ok(((), rest))
    })
}
