//! Calendar dates without a date library: days since 1970-01-01 to a proleptic-Gregorian UTC date, as
//! the manifest's timestamps and the generated datasets' dates write them.

/// Days since 1970-01-01 → (year, month 1–12, day 1–31). Civil-from-days (Howard Hinnant's algorithm),
/// exact for every `i64` day a timestamp can hold.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

/// Days since 1970-01-01 → `YYYY-MM-DD`.
pub fn date_from_days(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Seconds since 1970-01-01T00:00:00Z → `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_from_unix_secs(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        date_from_days(days),
        rem / 3_600,
        (rem % 3_600) / 60,
        rem % 60
    )
}

/// The clock now, as `YYYY-MM-DDTHH:MM:SSZ` (the manifest's `created_at`, the model logs' headers).
pub fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339_from_unix_secs(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_known_calendar_days() {
        assert_eq!(date_from_days(0), "1970-01-01");
        assert_eq!(date_from_days(-1), "1969-12-31");
        assert_eq!(date_from_days(19_723), "2024-01-01");
        // 2000 is a leap year (divisible by 400), 1900 is not (divisible by 100).
        assert_eq!(date_from_days(11_016), "2000-02-29");
        assert_eq!(date_from_days(11_017), "2000-03-01");
        assert_eq!(date_from_days(-25_508), "1900-03-01");
        assert_eq!(date_from_days(-25_509), "1900-02-28");
    }

    #[test]
    fn every_day_of_four_centuries_follows_the_previous_one() {
        // Walk 1900-01-01 .. 2300-01-01 day by day with an independent month-length table.
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let (mut y, mut m, mut d) = (1900i64, 1u32, 1u32);
        for days in -25_567..120_000 {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            let len = match m {
                2 if leap(y) => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            d += 1;
            if d > len {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }

    #[test]
    fn timestamps_carry_the_time_of_day() {
        assert_eq!(rfc3339_from_unix_secs(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_from_unix_secs(1_764_868_883),
            "2025-12-04T17:21:23Z"
        );
    }
}
