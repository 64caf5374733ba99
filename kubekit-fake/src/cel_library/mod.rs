//! Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library, and cel-go's sets
//! extension the real server adds), as overloads on the `cel` crate's environment: the
//! quantity, IP and CIDR, URL, semver, named-format, sets, lists and JSON Patch functions
//! CRD rules, `matchConditions` and admission policies call.
//!
//! Each library's values (a `Quantity`, an `IP`, ...) are opaque CEL values of the real
//! library's type name; their functions are overloads on that type, so `string(ip)` and
//! `string(1)` are both CEL's `string`. A function refusing its input fails the
//! evaluation with the real library's text ([`fail`]), which the rule's fault reports.

use std::sync::LazyLock;

use cel::common::types::Type;
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

pub(crate) mod format;
mod jsonpatch;
mod lists;
mod net;
pub(crate) mod quantity;
mod semver;
mod sets;
mod url;

/// Registers every library's types and overloads on `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    quantity::register(env)?;
    net::register(env)?;
    url::register(env)?;
    semver::register(env)?;
    format::register(env)?;
    jsonpatch::register(env)?;
    sets::register(env)?;
    lists::register(env)?;
    Ok(())
}

/// The names of the functions [`register`] adds, for the compile check of the functions a
/// program calls: as its references name them, without a namespace (`sets.contains` is
/// `contains`).
pub(crate) fn functions() -> impl Iterator<Item = &'static str> {
    [
        quantity::FUNCTIONS,
        net::FUNCTIONS,
        url::FUNCTIONS,
        semver::FUNCTIONS,
        format::FUNCTIONS,
        jsonpatch::FUNCTIONS,
        sets::FUNCTIONS,
        lists::FUNCTIONS,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// An overload's implementation on plain CEL values: its arguments, the receiver first.
type Op = fn(&[Cel]) -> Result<Cel, ExecutionError>;

/// Declares overloads of the `cel` crate's [`cel::common::functions::Function`] shape,
/// each calling an [`Op`] on the arguments as [`Cel`] values:
/// `overloads!(env, member "isInteger" "quantity_is_integer" (QUANTITY) => is_integer)`,
/// `overloads!(env, global "quantity" "string_to_quantity" (STRING_TYPE) => parse)`.
macro_rules! overloads {
    ($env:expr, $(
        $kind:ident $name:literal $id:literal ($($arg:expr),* $(,)?) => $op:path
    );+ $(;)?) => {{
        let env: &mut cel::Env = $env;
        $(
            $crate::cel_library::overloads!(@one env, $kind $name $id ($($arg),*) => $op);
        )+
        Ok::<(), cel::DeclarationError>(())
    }};
    (@one $env:ident, member $name:literal $id:literal ($target:expr $(, $arg:expr)*) => $op:path) => {{
        fn wrapper<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            $crate::cel_library::call(args, $op)
        }
        $env.add_member_overload($name, $id, $target, vec![$($arg),*], wrapper)?;
    }};
    (@one $env:ident, global $name:literal $id:literal ($($arg:expr),*) => $op:path) => {{
        fn wrapper<'b, 'v>(
            args: Vec<cel::common::value::CowVal<'b, 'v>>,
        ) -> Result<cel::common::value::CowVal<'b, 'v>, cel::ExecutionError> {
            $crate::cel_library::call(args, $op)
        }
        $env.add_overload($name, $id, vec![$($arg),*], wrapper)?;
    }};
}
pub(crate) use overloads;

/// Calls `op` on `args` as [`Cel`] values and gives its result back as an evaluator value.
pub(crate) fn call<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    op: Op,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let values = args
        .iter()
        .map(|a| Cel::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let result: Box<dyn cel::common::value::Val> = op(&values)?.try_into()?;
    Ok(CowVal::from(
        result as Box<dyn cel::common::value::Val + 'v>,
    ))
}

/// An evaluation error with the library's own text, which [`message`] gives back.
pub(crate) fn fail(text: impl Into<String>) -> ExecutionError {
    ExecutionError::function_error(LIBRARY, text.into())
}

/// The function name [`fail`] gives its errors.
const LIBRARY: &str = "kubernetes";

/// An evaluation error as cel-go words it: a library's refusal is its own text.
pub(crate) fn message(e: &ExecutionError) -> String {
    match e {
        ExecutionError::FunctionError { function, message } if function == LIBRARY => {
            message.clone()
        }
        e => e.to_string(),
    }
}

/// The opaque value of type `T` an overload declared on `T`'s type was given.
pub(crate) fn opaque<T: 'static>(value: &Cel) -> Result<&T, ExecutionError> {
    match value {
        Cel::Opaque(o) => o
            .downcast_ref::<T>()
            .ok_or_else(|| fail(format!("unexpected {} value", o.runtime_type_name()))),
        other => Err(fail(format!("unexpected value {other:?}"))),
    }
}

/// The string argument at `at`.
pub(crate) fn text(args: &[Cel], at: usize) -> Result<&str, ExecutionError> {
    match args.get(at) {
        Some(Cel::String(s)) => Ok(s),
        other => Err(fail(format!("expected a string, got {other:?}"))),
    }
}

/// The type of the opaque values named `name`, for overload declarations.
pub(crate) fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// `s` quoted as Go's `strconv.Quote` quotes it (see [`go_quote_bytes`]).
pub(crate) fn go_quote(s: &str) -> String {
    go_quote_bytes(s.as_bytes())
}

/// `bytes` as Go's `strconv.Quote` writes them: in double quotes, `"` and `\` escaped,
/// characters Go does not print as `\a`, `\n`, ..., `\xNN`, `\uNNNN` or `\UNNNNNNNN`,
/// and bytes that are not UTF-8 as `\xNN`.
pub(crate) fn go_quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                c if printable(c) => out.push(c),
                '\u{7}' => out.push_str("\\a"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", u32::from(c))),
                c if u32::from(c) < 0x10000 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                c => out.push_str(&format!("\\U{:08x}", u32::from(c))),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint`: a letter, mark, number, punctuation or symbol, or a space.
fn printable(c: char) -> bool {
    static GRAPHIC: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r"^[\p{L}\p{M}\p{N}\p{P}\p{S}]$").ok());
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    GRAPHIC
        .as_ref()
        .is_some_and(|re| re.is_match(c.encode_utf8(&mut [0; 4])))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_library_registers_beside_the_standard_library_and_extensions() {
        let mut env = cel::Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .expect("strings");
        env.add_extension(cel::extensions::lists).expect("lists");
        assert_eq!(env.add_extension(super::register), Ok(()));
    }
}
