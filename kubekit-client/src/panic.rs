//! What a caught panic said, for the report of the code that caught it.

use std::any::Any;

/// The message of a panic payload (`panic!` with a literal or a formatted message), or a
/// placeholder for any other payload.
pub fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("non-string panic payload")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_formatted_panics_give_their_message() {
        let literal = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(message(literal.as_ref()), "plain");
        let formatted = std::panic::catch_unwind(|| panic!("key {}", 7)).unwrap_err();
        assert_eq!(message(formatted.as_ref()), "key 7");
        let other = std::panic::catch_unwind(|| std::panic::panic_any(42)).unwrap_err();
        assert_eq!(message(other.as_ref()), "non-string panic payload");
    }
}
