//! Human units on the command line: durations like `2s`, `500ms`, `1m`, and sizes like
//! `64KiB`, `8MiB`. One parser each, used by every flag that takes them.

use std::time::Duration;

/// A duration or size that does not parse; the message quotes it and says what is
/// accepted. Clap takes it as a flag's value-parser error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// No number in front.
    #[error("invalid {kind} '{text}': expected e.g. {example}")]
    Number {
        /// `duration` or `size`.
        kind: &'static str,
        /// The text given.
        text: String,
        /// What a good one looks like.
        example: &'static str,
    },
    /// An unknown unit.
    #[error("invalid {kind} unit '{unit}' in '{text}': use {units}")]
    Unit {
        /// `duration` or `size`.
        kind: &'static str,
        /// The unit given.
        unit: String,
        /// The text given.
        text: String,
        /// The units accepted.
        units: &'static str,
    },
    /// Negative, too large, or not finite.
    #[error("{kind} '{text}' is out of range")]
    Range {
        /// `duration` or `size`.
        kind: &'static str,
        /// The text given.
        text: String,
    },
}

/// Parses `500ms`, `2s`, `1.5s`, `3m`, `1h`, `30d`. A bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    const KIND: &str = "duration";
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| UnitError::Number {
        kind: KIND,
        text: text.to_owned(),
        example: "2s or 500ms",
    })?;
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        other => {
            return Err(UnitError::Unit {
                kind: KIND,
                unit: other.to_owned(),
                text: text.to_owned(),
                units: "ms, s, m, h or d",
            });
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || !(0.0..=86_400.0 * 365.0).contains(&secs) {
        return Err(UnitError::Range {
            kind: KIND,
            text: text.to_owned(),
        });
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way it is parsed: `2s`, `500ms`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Parses `4096`, `64KiB`, `64K`, `8MiB`, `8MB`, `1GiB` (binary multiples).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    const KIND: &str = "size";
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: u64 = num.parse().map_err(|_| UnitError::Number {
        kind: KIND,
        text: text.to_owned(),
        example: "64KiB or 8MiB",
    })?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(UnitError::Unit {
                kind: KIND,
                unit: other.to_owned(),
                text: text.to_owned(),
                units: "KiB, MiB or GiB",
            });
        }
    };
    value.checked_mul(scale).ok_or_else(|| UnitError::Range {
        kind: KIND,
        text: text.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("2x").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2s");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("8MiB").unwrap(), 8 << 20);
        assert!(parse_size("8XB").is_err());
        assert!(parse_size("99999999999999GiB").is_err());
    }
}
