//! RFC 3339 timestamps in UTC (`2026-11-25T22:55:54Z`), formatted from `SystemTime`
//! without a date crate, for the registry, the scan cache and the audit log; and a strict
//! syntactic check for timestamps handed to the registry.
//!
//! Must not read the clock anywhere except [`rfc3339_now`] and `rfc3339_millis_now`.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as RFC 3339 UTC with whole seconds.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// Formats a time as RFC 3339 UTC with whole seconds, e.g. `2026-11-25T22:55:54Z`.
/// Times before 1970 are clamped to the epoch.
pub fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = fields(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// The current time as RFC 3339 UTC with milliseconds, e.g. `2026-11-25T23:10:04.123Z`
/// (audit records, where calls in the same second must still be ordered).
pub fn rfc3339_millis_now() -> String {
    rfc3339_millis(SystemTime::now())
}

/// Formats a time as RFC 3339 UTC with milliseconds. Times before 1970 are clamped.
pub fn rfc3339_millis(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = fields(t);
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_millis());
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// A compact form for file names: `20261125T225554Z` (no colons).
pub fn compact(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = fields(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

fn fields(t: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400) as u32;
    let (y, mo, d) = civil_from_days(days);
    (y, mo, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar,
/// by counting 400-year eras of 146,097 days whose years start on March 1st.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) → days since 1970-01-01, the inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses the form [`rfc3339`] writes, `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds), as
/// remote registry catalogs carry their expiry. Other forms give `None`: a time atip
/// wrote is read back exactly, nothing else is guessed.
pub fn parse_rfc3339_utc(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 20 || !is_rfc3339(s) || b[19] != b'Z' {
        return None;
    }
    let num = |from: usize, n: usize| s.get(from..from + n)?.parse::<u32>().ok();
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let days = days_from_civil(i64::from(y), mo, d);
    let secs = u64::try_from(days).ok()? * 86_400 + u64::from(h * 3600 + mi * 60 + sec);
    let t = UNIX_EPOCH + std::time::Duration::from_secs(secs);
    // A day past the month's end (02-31) would not format back to the same text.
    (rfc3339(t) == s).then_some(t)
}

/// Parses an HTTP date in its one current form (IMF-fixdate, RFC 9110 §5.6.7), as
/// `Retry-After` carries it: `Sun, 06 Nov 1994 08:49:37 GMT`. Other forms give `None`.
pub fn parse_http_date(s: &str) -> Option<SystemTime> {
    let rest = s.trim().split_once(", ")?.1;
    let mut parts = rest.split(' ');
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let mut field = |max: u64| hms.next()?.parse::<u64>().ok().filter(|v| *v <= max);
    let (h, mi, sec) = (field(23)?, field(59)?, field(60)?);
    if parts.next()? != "GMT" || parts.next().is_some() || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + mi * 60 + sec;
    Some(UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// Whether `s` is an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS`, optional fraction,
/// then `Z` or `±HH:MM`. Field ranges are checked (leap second 60 allowed), not the
/// number of days of each month beyond 31.
pub fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(part).ok()?.parse().ok())
            .flatten()
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let date_ok = (|| {
        digits(0, 4)?;
        let mo = digits(5, 2)?;
        let d = digits(8, 2)?;
        let h = digits(11, 2)?;
        let mi = digits(14, 2)?;
        let sec = digits(17, 2)?;
        let ok = at(4, b'-')
            && at(7, b'-')
            && (at(10, b'T') || at(10, b't'))
            && at(13, b':')
            && at(16, b':')
            && (1..=12).contains(&mo)
            && (1..=31).contains(&d)
            && h < 24
            && mi < 60
            && sec <= 60;
        ok.then_some(())
    })()
    .is_some();
    if !date_ok {
        return false;
    }
    let mut i = 19;
    if at(i, b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            i + 6 == b.len()
                && at(i + 3, b':')
                && digits(i + 1, 2).is_some_and(|h| h < 24)
                && digits(i + 4, 2).is_some_and(|m| m < 60)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn reads_back_what_it_writes_and_nothing_else() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        assert_eq!(parse_rfc3339_utc(&rfc3339(t)), Some(t));
        for bad in [
            "2026-02-31T00:00:00Z",
            "2026-11-25T22:55:54+00:00",
            "2026-11-25T22:55:54.5Z",
            "2026-11-25 22:55:54Z",
            "",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_647_354);
        assert_eq!(rfc3339(t), "2026-11-25T22:55:54Z");
        assert_eq!(compact(t), "20261125T225554Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_107_542_399); // 2100-02-28T23:59:59
        assert_eq!(rfc3339(t), "2100-02-28T23:59:59Z");
        assert_eq!(
            rfc3339(t + Duration::from_secs(1)),
            "2100-03-01T00:00:00Z",
            "2100 is not a leap year"
        );
    }

    #[test]
    fn every_day_round_trips_through_the_check() {
        for day in 0..(366 * 200) {
            let t = UNIX_EPOCH + Duration::from_secs(day * 86_400 + 3_599);
            let s = rfc3339(t);
            assert!(is_rfc3339(&s), "{s}");
        }
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").map(rfc3339),
            Some("1994-11-06T08:49:37Z".into())
        );
        assert_eq!(
            parse_http_date("Thu, 26 Nov 2026 03:45:30 GMT").map(rfc3339),
            Some("2026-11-26T03:45:30Z".into())
        );
        for day in (0..(366 * 100)).step_by(37) {
            let t = UNIX_EPOCH + Duration::from_secs(day * 86_400 + 45_296);
            let (y, mo, d, _, _, _) = fields(t);
            assert_eq!(days_from_civil(y, mo, d), day as i64);
        }
        for bad in [
            "",
            "120",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn checks_syntax() {
        for ok in [
            "2026-11-25T22:55:54Z",
            "2026-11-25T22:55:54.123Z",
            "2026-11-25T22:55:54+01:00",
            "2026-11-25t22:55:54z",
        ] {
            assert!(is_rfc3339(ok), "{ok}");
        }
        for bad in [
            "",
            "2026-11-25",
            "2026-11-25 22:55:54Z",
            "2026-13-25T22:55:54Z",
            "2026-11-25T24:55:54Z",
            "2026-11-25T22:55:54",
            "2026-11-25T22:55:54.Z",
            "2026-11-25T22:55:54+0100",
            "2026-11-25T22:55:54Zjunk",
            "２026-11-25T22:55:54Z",
        ] {
            assert!(!is_rfc3339(bad), "{bad}");
        }
    }
}
