//! Kubernetes' quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go):
//! `quantity(s)`, `isQuantity(s)`, `sign(q)`, and the members `isInteger()`,
//! `asInteger()`, `asApproximateFloat()`, `isGreaterThan(q)`, `isLessThan(q)`,
//! `compareTo(q)`, `add(q or int)` and `sub(q or int)`; two quantities are equal when their
//! values are.
//!
//! Values are read as apimachinery's `resource.ParseQuantity` reads them, with its error
//! texts and its two representations, which the answers depend on: a quantity whose
//! digits fit an int64 at a scale of nano or more is held as an integer and a power of
//! ten, any other (long, finer than nano, or a fraction with a binary suffix) as an exact
//! decimal rounded up to nano, and `isInteger()` is only ever true of the first kind, as
//! in Go. Sums stay integers until they overflow. Not done: quantities of more than
//! [`MAX_DIGITS`] digits (counted in nanos), and arithmetic on values whose exponents lie
//! more than [`MAX_EXPONENT_GAP`] apart, are refused rather than expanded; a value finer
//! than a nano is one nano whatever its digits.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{INT_TYPE, STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::{fail, opaque, opaque_type, overloads, text};

/// The functions [`register`] declares.
pub(super) const FUNCTIONS: &[&str] = &[
    "quantity",
    "isQuantity",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
];

/// The type name of [`Quantity`] values.
const QUANTITY: &str = "kubernetes.Quantity";

fn quantity_type() -> Type {
    opaque_type(QUANTITY)
}

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        global "quantity" "string_to_quantity" (STRING_TYPE) => to_quantity;
        global "isQuantity" "is_quantity_string" (STRING_TYPE) => is_quantity;
        global "sign" "quantity_sign" (quantity_type()) => sign;
        member "isGreaterThan" "quantity_is_greater_than" (quantity_type(), quantity_type()) => is_greater_than;
        member "isLessThan" "quantity_is_less_than" (quantity_type(), quantity_type()) => is_less_than;
        member "compareTo" "quantity_compare_to" (quantity_type(), quantity_type()) => compare_to;
        member "asApproximateFloat" "quantity_get_float" (quantity_type()) => as_approximate_float;
        member "asInteger" "quantity_get_int" (quantity_type()) => as_integer;
        member "isInteger" "quantity_is_integer" (quantity_type()) => is_integer;
        member "add" "quantity_add" (quantity_type(), quantity_type()) => add;
        member "add" "quantity_add_int" (quantity_type(), INT_TYPE) => add;
        member "sub" "quantity_sub" (quantity_type(), quantity_type()) => sub;
        member "sub" "quantity_sub_int" (quantity_type(), INT_TYPE) => sub;
    )
}

/// The furthest apart two exponents may be for a sum or difference to be computed.
const MAX_EXPONENT_GAP: u32 = 10_000;

/// A quantity's value, `mantissa × 10^exponent`, in one of Go's two representations.
#[derive(Debug, Clone)]
enum Quantity {
    /// apimachinery's `int64Amount`.
    Int { value: i64, exponent: i32 },
    /// An `inf.Dec`: exact, and never an integer to `isInteger()`.
    Dec { unscaled: BigInt, exponent: i32 },
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY
    }
}

impl Quantity {
    fn parts(&self) -> (BigInt, i32) {
        match self {
            Quantity::Int { value, exponent } => (BigInt::from(*value), *exponent),
            Quantity::Dec { unscaled, exponent } => (unscaled.clone(), *exponent),
        }
    }

    fn sign(&self) -> i64 {
        match self {
            Quantity::Int { value, .. } => value.signum(),
            Quantity::Dec { unscaled, .. } => match unscaled.sign() {
                num_bigint::Sign::Minus => -1,
                num_bigint::Sign::NoSign => 0,
                num_bigint::Sign::Plus => 1,
            },
        }
    }

    /// The value compared exactly, whatever the exponents.
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (self.sign(), other.sign());
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        let ((m, e), (n, f)) = (self.parts(), other.parts());
        // The position of the leading digit decides, unless it is the same.
        let lead = |m: &BigInt, e: i32| i64::from(e) + m.abs().to_string().len() as i64;
        let by_magnitude = lead(&m, e).cmp(&lead(&n, f));
        if by_magnitude != Ordering::Equal {
            return if a > 0 {
                by_magnitude
            } else {
                by_magnitude.reverse()
            };
        }
        // Same leading position: the gap is at most the digits of one of them.
        let low = e.min(f);
        (m * pow10(e.abs_diff(low))).cmp(&(n * pow10(f.abs_diff(low))))
    }

    /// `int64Amount.AsInt64`: only integers held as such.
    fn as_int64(&self) -> Option<i64> {
        match self {
            Quantity::Int { value, exponent: 0 } => Some(*value),
            Quantity::Int { value, exponent } if *exponent > 0 => {
                let factor = 10i64.checked_pow(u32::try_from(*exponent).ok()?)?;
                value.checked_mul(factor)
            }
            _ => None,
        }
    }

    fn approximate(&self) -> f64 {
        let (base, exponent) = match self {
            Quantity::Int { value, exponent } => (*value as f64, *exponent),
            Quantity::Dec { unscaled, exponent } => {
                (unscaled.to_f64().unwrap_or(f64::NAN), *exponent)
            }
        };
        if exponent == 0 {
            return base;
        }
        base * format!("1e{exponent}")
            .parse::<f64>()
            .unwrap_or(f64::INFINITY)
    }

    /// `Quantity.Add`: as integers while they fit, exactly as a decimal after.
    fn plus(&self, other: &Quantity) -> Result<Quantity, ExecutionError> {
        let ints = match (self, other) {
            (
                Quantity::Int { value, exponent },
                Quantity::Int {
                    value: v,
                    exponent: x,
                },
            ) => int_add(*value, *exponent, *v, *x),
            _ => None,
        };
        if let Some(sum) = ints {
            return Ok(sum);
        }
        let ((m, e), (n, f)) = (self.parts(), other.parts());
        let low = e.min(f);
        if e.abs_diff(f) > MAX_EXPONENT_GAP {
            return Err(fail("quantities too far apart in size to add"));
        }
        Ok(Quantity::Dec {
            unscaled: m * pow10(e.abs_diff(low)) + n * pow10(f.abs_diff(low)),
            exponent: low,
        })
    }

    fn negated(&self) -> Quantity {
        match self {
            Quantity::Int { value, exponent } => match value.checked_neg() {
                Some(value) => Quantity::Int {
                    value,
                    exponent: *exponent,
                },
                None => Quantity::Dec {
                    unscaled: -BigInt::from(*value),
                    exponent: *exponent,
                },
            },
            Quantity::Dec { unscaled, exponent } => Quantity::Dec {
                unscaled: -unscaled.clone(),
                exponent: *exponent,
            },
        }
    }
}

/// `int64Amount.Add`, or `None` where it overflows.
fn int_add(a: i64, e: i32, b: i64, f: i32) -> Option<Quantity> {
    let (value, exponent) = match (a, b) {
        (_, 0) => (a, e),
        (0, _) => (b, f),
        _ if e == f => (a.checked_add(b)?, e),
        _ if e > f => (scaled(a, e.checked_sub(f)?)?.checked_add(b)?, f),
        _ => (a.checked_add(scaled(b, f.checked_sub(e)?)?)?, e),
    };
    Some(Quantity::Int { value, exponent })
}

/// `value × 10^by`, if it fits.
fn scaled(value: i64, by: i32) -> Option<i64> {
    value.checked_mul(10i64.checked_pow(u32::try_from(by).ok()?)?)
}

fn pow10(n: u32) -> BigInt {
    BigInt::from(10u8).pow(n)
}

/// apimachinery's `splitREString`, in its format error.
const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC: &str = "unable to parse numeric part of quantity";
const SUFFIX: &str = "unable to parse quantity's suffix";
/// kubekit-fake's refusal of a quantity of more than [`MAX_DIGITS`] digits.
const TOO_LARGE: &str = "kubekit-fake does not evaluate quantities of more than 100000 digits";

/// The most digits a quantity may have in nanos.
const MAX_DIGITS: u32 = 100_000;

/// The parts of a quantity's text, as `parseQuantityString` splits it.
struct Split<'a> {
    positive: bool,
    /// The number as written (sign, digits and point), for the exact path.
    value: &'a str,
    /// The integer digits without leading zeros ("0" when none).
    num: &'a str,
    /// The fraction's digits.
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Split<'_>, &'static str> {
    let b = s.as_bytes();
    let digits_from = |at: usize| {
        b[at..]
            .iter()
            .position(|c| !c.is_ascii_digit())
            .map_or(b.len(), |n| at + n)
    };
    let mut pos = 0;
    let positive = match b.first() {
        Some(b'-') => {
            pos += 1;
            false
        }
        Some(b'+') => {
            pos += 1;
            true
        }
        _ => true,
    };
    while b.get(pos) == Some(&b'0') {
        pos += 1;
    }
    if pos == b.len() {
        let (num, value) = ("0", "0");
        return Ok(Split {
            positive,
            value,
            num,
            denom: "",
            suffix: "",
        });
    }
    let end = digits_from(pos);
    let mut num = &s[pos..end];
    if end == b.len() {
        return Ok(Split {
            positive,
            value: s,
            num,
            denom: "",
            suffix: "",
        });
    }
    pos = end;
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b[pos] == b'.' {
        let end = digits_from(pos + 1);
        denom = &s[pos + 1..end];
        if end == b.len() {
            return Ok(Split {
                positive,
                value: s,
                num,
                denom,
                suffix: "",
            });
        }
        pos = end;
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if matches!(b.get(pos), Some(b'-' | b'+')) {
        pos += 1;
    }
    if digits_from(pos) != b.len() {
        return Err(FORMAT_WRONG);
    }
    Ok(Split {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// How a suffix scales: a base (2 or 10), its exponent, and whether it is binary SI.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = [
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("", 0),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    ];
    if let Some((_, e)) = decimal.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *e, Format::Decimal));
    }
    let binary = [
        ("Ki", 10),
        ("Mi", 20),
        ("Gi", 30),
        ("Ti", 40),
        ("Pi", 50),
        ("Ei", 60),
    ];
    if let Some((_, e)) = binary.iter().find(|(s, _)| *s == suffix) {
        return Some((2, *e, Format::Binary));
    }
    let exponent = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty())?;
    // Go parses an int64 and keeps its low 32 bits.
    let parsed: i64 = exponent.parse().ok()?;
    Some((10, parsed as i32, Format::Exponent))
}

/// How a quantity is written: decimal SI suffixes, binary SI suffixes, or an exponent.
#[derive(PartialEq, Clone, Copy)]
enum Format {
    /// `k`, `M`, `m`, ...
    Decimal,
    /// `Ki`, `Mi`, ...
    Binary,
    /// `e3`, ...
    Exponent,
}

/// `resource.ParseQuantity`.
fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(FORMAT_WRONG);
    }
    if s == "0" {
        return Ok(Quantity::Int {
            value: 0,
            exponent: 0,
        });
    }
    let Split {
        positive,
        value,
        num,
        denom,
        suffix,
    } = split(s)?;
    let (base, exponent, format) = interpret(suffix).ok_or(SUFFIX)?;
    let digits = (num.len() + denom.len()) as i64;
    let (mut scale, mantissa, precision) = match format {
        Format::Decimal | Format::Exponent => (i64::from(exponent), 1i64, 18 - digits),
        Format::Binary if exponent >= 0 && denom.is_empty() => {
            let precision = 15 - num.len() as i64 - i64::from(exponent) * 3 / 10 - 1;
            (0, 1i64 << exponent, precision)
        }
        Format::Binary => (0, 1, -1),
    };
    if precision >= 0 {
        scale -= denom.len() as i64;
        if scale >= -9 {
            let shifted: i64 = format!("{num}{denom}").parse().map_err(|_| NUMERIC)?;
            if let Some(result) = shifted.checked_mul(mantissa) {
                let value = if positive { result } else { -result };
                let exponent = i32::try_from(scale).map_err(|_| NUMERIC)?;
                return Ok(Quantity::Int { value, exponent });
            }
        }
    }
    exact(value, base, exponent, format)
}

/// The path of `ParseQuantity` through `inf.Dec`: exact, rounded up (away from zero) to
/// nano, binary SI capped at the largest int64.
fn exact(value: &str, base: u32, exponent: i32, format: Format) -> Result<Quantity, &'static str> {
    let unsigned = value.trim_start_matches(['+', '-']);
    let negative = value.starts_with('-');
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if int.is_empty() && frac.is_empty() {
        return Err(NUMERIC);
    }
    let digits = format!("{int}{frac}");
    let mut unscaled: BigInt = digits.parse().map_err(|_| NUMERIC)?;
    let mut exp = -i64::try_from(frac.len()).map_err(|_| NUMERIC)?;
    if base == 10 {
        exp += i64::from(exponent);
    } else {
        unscaled <<= u32::try_from(exponent).map_err(|_| SUFFIX)?;
    }
    // Rounded to nano: a value of any size is then held in nanos, as in Go, which its
    // approximate float shows.
    if !unscaled.is_zero() {
        if exp < -9 {
            let down = u32::try_from(-9 - exp).map_err(|_| NUMERIC)?;
            unscaled = if u64::from(down) > unscaled.to_string().len() as u64 {
                // Finer than a nano by more digits than it has: one nano, rounded up.
                BigInt::from(1u8)
            } else {
                let divisor = pow10(down);
                let (q, r) = (&unscaled / &divisor, &unscaled % &divisor);
                if r.is_zero() { q } else { q + 1 }
            };
        } else {
            let up = u32::try_from(exp + 9).map_err(|_| NUMERIC)?;
            if up > MAX_DIGITS {
                return Err(TOO_LARGE);
            }
            unscaled *= pow10(up);
        }
        exp = -9;
    }
    if format == Format::Binary {
        let max = BigInt::from(i64::MAX);
        let over = match u32::try_from(exp) {
            Ok(up) => up > 19 || &unscaled * pow10(up) > max,
            Err(_) => unscaled > &max * pow10(exp.unsigned_abs().min(u64::from(u32::MAX)) as u32),
        };
        if over {
            unscaled = max;
            return Ok(Quantity::Dec {
                unscaled: if negative { -unscaled } else { unscaled },
                exponent: 0,
            });
        }
    }
    let exponent = i32::try_from(exp).map_err(|_| NUMERIC)?;
    Ok(Quantity::Dec {
        unscaled: if negative { -unscaled } else { unscaled },
        exponent,
    })
}

/// The text of quantity `s` as the real server writes it back (Go's `Quantity.String()`:
/// binary SI while the value is a whole multiple of 1024 of at least 1024, else decimal
/// SI or an exponent, its mantissa without trailing zeros and its exponent a multiple of
/// three), or `None` when `s` is not a quantity.
pub(crate) fn canonical(s: &str) -> Option<String> {
    let q = parse(s).ok()?;
    let format = match split(s).ok().and_then(|p| interpret(p.suffix)) {
        Some((_, _, format)) if s != "0" => format,
        _ => Format::Decimal,
    };
    let (m, e) = q.parts();
    Some(canonical_text(m, e, format))
}

/// [`canonical`] of `m × 10^e` written in `format`.
fn canonical_text(m: BigInt, e: i32, format: Format) -> String {
    let e = i64::from(e);
    if m.is_zero() {
        return "0".into();
    }
    // A binary SI form is only sought for values of at most some forty digits.
    if format == Format::Binary && e <= 40 {
        let whole = match u32::try_from(e) {
            Ok(up) => Some(&m * pow10(up)),
            Err(_) => {
                let down = pow10(u32::try_from(e.unsigned_abs()).unwrap_or(u32::MAX));
                (&m % &down).is_zero().then(|| &m / &down)
            }
        };
        if let Some(mut n) = whole.filter(|n| n.abs() >= BigInt::from(1024)) {
            let mut k = 0;
            let kibi = BigInt::from(1024);
            while k < 6 && (&n % &kibi).is_zero() {
                n /= &kibi;
                k += 1;
            }
            return format!("{n}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k]);
        }
    }
    let (mut m, mut e) = (m, e);
    let ten = BigInt::from(10);
    while (&m % &ten).is_zero() {
        m /= &ten;
        e += 1;
    }
    let r = e.rem_euclid(3);
    m *= pow10(u32::try_from(r).unwrap_or_default());
    e -= r;
    let suffix = match format {
        Format::Exponent if e == 0 => String::new(),
        Format::Exponent => format!("e{e}"),
        _ => match e {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        }
        .to_string(),
    };
    format!("{m}{suffix}")
}

/// A quantity of `milli` thousandths as the real server writes it back, of a binary SI
/// quantity when `binary` (a sum keeps the format of the first quantity it adds).
pub(crate) fn canonical_of_milli(milli: &BigInt, binary: bool) -> String {
    let format = if binary {
        Format::Binary
    } else {
        Format::Decimal
    };
    canonical_text(milli.clone(), -3, format)
}

/// Whether quantity `s` is written with a binary SI suffix (`Ki`, `Mi`, ...).
pub(crate) fn is_binary(s: &str) -> bool {
    split(s)
        .ok()
        .and_then(|p| interpret(p.suffix))
        .is_some_and(|(_, _, format)| format == Format::Binary)
}

/// Quantity `s` in thousandths, rounded up (Go's `MilliValue`), or `None` when it is not
/// a quantity.
pub(crate) fn milli(s: &str) -> Option<BigInt> {
    let (m, e) = parse(s).ok()?.parts();
    let shift = i64::from(e) + 3;
    Some(match u32::try_from(shift) {
        // Values past `MILLI_CAP` digits are held at it: they only ever compare with
        // bounds people write.
        Ok(up) if i64::from(up) + m.to_string().len() as i64 > MILLI_CAP => {
            let cap = pow10(MILLI_CAP as u32);
            if m.sign() == num_bigint::Sign::Minus {
                -cap
            } else {
                cap
            }
        }
        Ok(up) => m * pow10(up),
        Err(_) => {
            // Quantities are held in nanos: at most six digits go.
            let down = pow10(
                u32::try_from(shift.unsigned_abs())
                    .unwrap_or(u32::MAX)
                    .min(12),
            );
            let (q, r) = (&m / &down, &m % &down);
            if r.is_zero() || m.sign() == num_bigint::Sign::Minus {
                q
            } else {
                q + 1
            }
        }
    })
}

/// The most digits [`milli`] gives.
const MILLI_CAP: i64 = 60;

fn value(q: Quantity) -> Cel {
    Cel::Opaque(Arc::new(q))
}

/// The quantity argument at `at`.
fn arg(args: &[Cel], at: usize) -> Result<&Quantity, ExecutionError> {
    opaque::<Quantity>(args.get(at).ok_or_else(|| fail("a quantity is needed"))?)
}

/// The second argument of `add` and `sub`: a quantity, or an int as a quantity.
fn operand(args: &[Cel]) -> Result<Quantity, ExecutionError> {
    match args.get(1) {
        Some(Cel::Int(i)) => Ok(Quantity::Int {
            value: *i,
            exponent: 0,
        }),
        _ => arg(args, 1).cloned(),
    }
}

fn to_quantity(args: &[Cel]) -> Result<Cel, ExecutionError> {
    parse(text(args, 0)?).map(value).map_err(fail)
}

fn is_quantity(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(parse(text(args, 0)?).is_ok()))
}

fn sign(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Int(arg(args, 0)?.sign()))
}

fn is_greater_than(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(
        arg(args, 0)?.cmp(arg(args, 1)?) == Ordering::Greater,
    ))
}

fn is_less_than(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(
        arg(args, 0)?.cmp(arg(args, 1)?) == Ordering::Less,
    ))
}

fn compare_to(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Int(arg(args, 0)?.cmp(arg(args, 1)?) as i64))
}

fn as_approximate_float(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Float(arg(args, 0)?.approximate()))
}

fn as_integer(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let integer = arg(args, 0)?.as_int64();
    integer
        .map(Cel::Int)
        .ok_or_else(|| fail("cannot convert value to integer"))
}

fn is_integer(args: &[Cel]) -> Result<Cel, ExecutionError> {
    Ok(Cel::Bool(arg(args, 0)?.as_int64().is_some()))
}

fn add(args: &[Cel]) -> Result<Cel, ExecutionError> {
    arg(args, 0)?.plus(&operand(args)?).map(value)
}

fn sub(args: &[Cel]) -> Result<Cel, ExecutionError> {
    arg(args, 0)?.plus(&operand(args)?.negated()).map(value)
}

#[cfg(test)]
mod tests {
    use crate::cel_rules::evaluate_value;
    use serde_json::{Value, json};

    fn eval(source: &str) -> Result<Value, String> {
        evaluate_value(source, &[])
    }

    #[test]
    fn quantities_parse_as_resource_parse_quantity() {
        for (source, want) in [
            ("isQuantity('1.5G')", true),
            ("isQuantity('1.3Gi')", true),
            ("isQuantity('10000k')", true),
            ("isQuantity('1e3')", true),
            ("isQuantity('1,3G')", false),
            ("isQuantity('200K')", false),
            ("isQuantity('Three')", false),
            // Go reads a suffix alone as zero (though the library's docs say otherwise).
            ("isQuantity('Mi')", true),
            ("isQuantity('1i')", false),
            ("isQuantity('')", false),
            ("isQuantity('1e')", false),
        ] {
            assert_eq!(eval(source), Ok(json!(want)), "{source}");
        }
        let got = eval("quantity('200K')").expect_err("K is no suffix");
        assert!(got.ends_with("unable to parse quantity's suffix"), "{got}");
        let got = eval("quantity('1,3G')").expect_err("a comma");
        assert!(
            got.ends_with("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
            "{got}"
        );
    }

    #[test]
    fn only_quantities_held_as_integers_convert_to_int() {
        for (source, want) in [
            ("quantity('50k').asInteger()", json!(50000)),
            ("quantity('50000000G').isInteger()", json!(true)),
            ("quantity('1Ki').asInteger()", json!(1024)),
            ("quantity('1500m').isInteger()", json!(false)),
            ("quantity('1000m').isInteger()", json!(false)),
            // A fraction with a binary suffix is held as a decimal, as in Go.
            ("quantity('1.5Gi').isInteger()", json!(false)),
            (
                "quantity('9999999999999999999999999999999999999G').isInteger()",
                json!(false),
            ),
            (
                "quantity('50k').add(quantity('20k')).asInteger()",
                json!(70000),
            ),
            ("quantity('50k').sub(20000).asInteger()", json!(30000)),
            (
                "quantity('50k').add(quantity('500m')).isInteger()",
                json!(false),
            ),
            ("quantity('1.5').asApproximateFloat()", json!(1.5)),
            ("quantity('50M').asApproximateFloat()", json!(5.0e7)),
        ] {
            assert_eq!(eval(source), Ok(want), "{source}");
        }
        let got = eval("quantity('1.5').asInteger()").expect_err("a fraction");
        assert!(got.ends_with("cannot convert value to integer"), "{got}");
    }

    /// The figures `resource.ParseQuantity` (apimachinery v0.37.2) gives: whether
    /// `AsInt64` succeeds, and `AsApproximateFloat64`.
    #[test]
    fn quantities_have_the_representation_and_value_go_gives_them() {
        for (text, integer, float) in [
            ("Mi", true, 0.0),
            ("1.5Gi", false, 1.610612736e9),
            ("1000m", false, 1.0),
            ("50000000G", true, 5e16),
            (
                "9999999999999999999999999999999999999G",
                false,
                1.0000000000000001e46,
            ),
            ("-0.0000000001", false, -1e-9),
            ("1e100", false, 1e100),
            ("1e-100", false, 1e-9),
            (".", true, 0.0),
            ("1.", true, 1.0),
            ("+.5", false, 0.5),
            ("99999999999999999999Ki", false, 9.223372036854776e18),
            ("1.5e3", true, 1500.0),
            ("100Ei", false, 9.223372036854776e18),
        ] {
            let source = format!(
                "[quantity('{text}').isInteger(), quantity('{text}').asApproximateFloat()]"
            );
            assert_eq!(eval(&source), Ok(json!([integer, float])), "{text}");
        }
    }

    #[test]
    fn quantities_compare_by_value_whatever_their_suffix() {
        for (source, want) in [
            ("quantity('1Gi').isGreaterThan(quantity('1G'))", json!(true)),
            ("quantity('1000M').compareTo(quantity('1G'))", json!(0)),
            ("quantity('1000M') == quantity('1G')", json!(true)),
            ("quantity('999m').isLessThan(quantity('1'))", json!(true)),
            ("quantity('-1').isLessThan(quantity('-2'))", json!(false)),
            (
                "quantity('1e100').isGreaterThan(quantity('1E'))",
                json!(true),
            ),
            (
                "quantity('0.0000000001').compareTo(quantity('1n'))",
                json!(0),
            ),
            ("sign(quantity('-5m'))", json!(-1)),
            ("sign(quantity('0Gi'))", json!(0)),
        ] {
            assert_eq!(eval(source), Ok(want), "{source}");
        }
    }
}

#[cfg(test)]
mod canonical_tests {
    use super::{canonical, milli};
    use num_bigint::BigInt;

    /// The texts apimachinery's `Quantity.String()` gives these (v0.37.2).
    #[test]
    fn quantities_are_written_back_as_the_real_server_writes_them() {
        for (given, want) in [
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("0.5", "500m"),
            ("1024Mi", "1Gi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("512", "512"),
            ("100Ki", "100Ki"),
            ("0.5Ki", "512"),
            ("1e3", "1e3"),
            ("1000", "1k"),
            ("2000000", "2M"),
            ("0", "0"),
            ("0Mi", "0"),
            ("1200k", "1200k"),
            ("1.5e3", "1500"),
            ("2048", "2048"),
            ("1023Ki", "1023Ki"),
        ] {
            assert_eq!(canonical(given).as_deref(), Some(want), "{given}");
        }
        assert_eq!(canonical("lots"), None);
    }

    #[test]
    fn extreme_exponents_neither_panic_nor_expand() {
        assert_eq!(canonical("1e-2000000000").as_deref(), Some("1e-9"));
        assert!(milli("1e2000000000").is_none_or(|m| m.to_string().len() <= 62));
        assert!(milli("1e2147483647").is_none_or(|m| m.to_string().len() <= 62));
        let _ = canonical("10e2147483647");
        let _ = canonical("1e-2147483648");
        assert_eq!(milli("1e-2000000000"), Some(BigInt::from(1)));
    }

    #[test]
    fn milli_values_round_up() {
        assert_eq!(milli("1"), Some(BigInt::from(1000)));
        assert_eq!(milli("250m"), Some(BigInt::from(250)));
        assert_eq!(milli("1n"), Some(BigInt::from(1)));
        assert_eq!(milli("1Ki"), Some(BigInt::from(1_024_000)));
    }
}
