//! A CronJob's schedule, read as kube-apiserver reads it (robfig/cron v3's standard
//! parser: five fields — minute, hour, day of month, month, day of week — each a list of
//! `*`, `?`, numbers, names (`jan`, `mon`, any case), ranges and steps; or a descriptor,
//! `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`,
//! `@every <Go duration>`), with its error messages.
//!
//! A schedule that starts with `TZ=` or `CRON_TZ=` is not parsed here: the real server
//! refuses it anyway (see `defaults::check_workload`), with a message of its own.

/// What a field may hold: its least and greatest values, and the names of values.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// The bounds of the five fields, in order.
const FIELDS: [Bounds; 5] = [
    Bounds {
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 12,
        names: MONTHS,
    },
    Bounds {
        min: 0,
        max: 6,
        names: DAYS,
    },
];

/// Why `schedule` is no schedule, in robfig/cron's words; `None` when it is one.
pub(crate) fn error(schedule: &str) -> Option<String> {
    if schedule.starts_with("TZ=") || schedule.starts_with("CRON_TZ=") {
        return None;
    }
    if schedule.starts_with('@') {
        return descriptor(schedule).err();
    }
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != FIELDS.len() {
        return Some(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    fields.iter().zip(&FIELDS).find_map(|(field, bounds)| {
        field
            .split(',')
            .filter(|r| !r.is_empty())
            .find_map(|range| check_range(range, bounds).err())
    })
}

/// A descriptor (`@hourly`, `@every 5m`, ...).
fn descriptor(text: &str) -> Result<(), String> {
    const NAMED: &[&str] = &[
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ];
    if NAMED.contains(&text) {
        return Ok(());
    }
    match text.strip_prefix("@every ") {
        Some(duration) => {
            go_duration(duration).map_err(|e| format!("failed to parse duration {text}: {e}"))
        }
        None => Err(format!("unrecognized descriptor: {text}")),
    }
}

/// One range of a field: `*`/`?`, `n`, `a-b`, each with an optional `/step`.
fn check_range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (bounds.min, bounds.max)
    } else {
        let start = int_or_name(low_and_high[0], bounds.names)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], bounds.names)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = non_negative(range_and_step[1])?;
            if low_and_high.len() == 1 {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// A value's name (any case) or number.
fn int_or_name(expr: &str, names: &[&str]) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    match names.iter().position(|n| *n == lower) {
        // Months count from 1, days of the week from 0.
        Some(i) if names.len() == 12 => Ok(i as u64 + 1),
        Some(i) => Ok(i as u64),
        None => non_negative(expr),
    }
}

/// A number as Go's `strconv.Atoi` reads it, refused when negative.
fn non_negative(expr: &str) -> Result<u64, String> {
    let num = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    u64::try_from(num).map_err(|_| format!("negative number ({num}) not allowed: {expr}"))
}

/// Go's `strconv.Atoi`: an optional sign, then decimal digits.
fn atoi(text: &str) -> Result<i64, String> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let quoted = kubekit::validation::quote(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing {quoted}: invalid syntax"));
    }
    text.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {quoted}: value out of range"))
}

/// A duration as Go's `time.ParseDuration` reads it (`1h30m`, `1.5s`, `-2m`, `0`), or its
/// error.
fn go_duration(text: &str) -> Result<(), String> {
    let quoted = kubekit::validation::quote(text);
    let invalid = || format!("time: invalid duration {quoted}");
    let mut rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        let digits = number.replacen('.', "", 1);
        if digits.is_empty() || digits.contains('.') {
            return Err(invalid());
        }
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        match unit {
            "" => return Err(format!("time: missing unit in duration {quoted}")),
            "ns" | "us" | "\u{b5}s" | "\u{3bc}s" | "ms" | "s" | "m" | "h" => {}
            other => {
                let unit = kubekit::validation::quote(other);
                return Err(format!("time: unknown unit {unit} in duration {quoted}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_are_read_as_robfig_cron_reads_them() {
        for good in [
            "*/5 * * * *",
            "0 0 1 JAN mon",
            "5/10 * * * ?",
            "@hourly",
            "@every 1h30m",
        ] {
            assert_eq!(error(good), None, "{good}");
        }
        for (bad, why) in [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "-1 * * * *",
                "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax",
            ),
            (
                "@every 5",
                "failed to parse duration @every 5: time: missing unit in duration \"5\"",
            ),
        ] {
            assert_eq!(error(bad).as_deref(), Some(why), "{bad}");
        }
    }

    #[test]
    fn odd_schedules_are_no_panic() {
        for odd in [
            "",
            "@",
            "@every ",
            "/ - , * *",
            "\u{b5} é ☃ 1 2",
            "@every .s",
            "1/ 2- ,, * *",
        ] {
            let _ = error(odd);
        }
    }
}
