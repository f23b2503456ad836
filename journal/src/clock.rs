/// Now, in UTC, as RFC 3339 with exactly six fractional digits. The fixed width makes the stored
/// text sort like the instant it names, so `ts >= ?` comparisons work on the index.
pub(crate) fn now_rfc3339() -> String {
    format_ts(jiff::Timestamp::now())
}

pub(crate) fn format_ts(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_fixed_width_microseconds() {
        let ts: jiff::Timestamp = "2024-03-01T10:00:00Z".parse().unwrap();
        assert_eq!(format_ts(ts), "2024-03-01T10:00:00.000000Z");
        let ts: jiff::Timestamp = "2024-03-01T10:00:00.123456789Z".parse().unwrap();
        assert_eq!(format_ts(ts), "2024-03-01T10:00:00.123456Z");
    }
}
