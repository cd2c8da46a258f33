//! Cached clocks: the `Date` header (RFC 9110 §6.6.1, one-second resolution)
//! and the Common Log Format timestamp are formatted at most once per second
//! per thread (the second is read from the kernel's coarse real-time clock,
//! a vDSO read), and connection deadlines use a coarse millisecond clock
//! that the sweeper thread advances, so the hot path never formats a date
//! and never needs a system call to note the time.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// IMF-fixdate is always 29 bytes: "Sun, 06 Nov 1994 08:49:37 GMT".
pub const HTTP_DATE_LEN: usize = 29;
/// CLF timestamp "10/Oct/2000:13:55:36 +0000" is always 26 bytes.
pub const CLF_DATE_LEN: usize = 26;

struct Cached {
    second: u64,
    http: [u8; HTTP_DATE_LEN],
    clf: [u8; CLF_DATE_LEN],
}

thread_local! {
    static CACHE: RefCell<Cached> = const { RefCell::new(Cached {
        second: u64::MAX,
        http: [b' '; HTTP_DATE_LEN],
        clf: [b' '; CLF_DATE_LEN],
    }) };
}

/// The Unix second now, from the kernel's coarse real-time clock: a vDSO
/// read of the time the last timer tick stored, without reading and
/// scaling the TSC as `CLOCK_REALTIME` does. It lags the precise clock by
/// at most one tick (1-10 ms), so a `Date` may name the previous second for
/// that long after the boundary; `Date` has one-second resolution and is
/// "the time at which the message originated" (RFC 9110 §6.6.1), which a
/// server may take at any point of its processing.
fn unix_second() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    match clock_gettime(ClockId::CLOCK_REALTIME_COARSE) {
        Ok(ts) => u64::try_from(ts.tv_sec()).unwrap_or(0),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    }
}

fn refresh(c: &mut Cached) {
    let second = unix_second();
    if second != c.second {
        c.second = second;
        let now = UNIX_EPOCH + std::time::Duration::from_secs(second);
        let s = httpdate::fmt_http_date(now);
        c.http.copy_from_slice(&s.as_bytes()[..HTTP_DATE_LEN]);
        c.clf.copy_from_slice(clf_date(second).as_bytes());
    }
}

/// Calls `f` with the current IMF-fixdate.
pub fn with_http_date<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        refresh(&mut c);
        f(&c.http)
    })
}

/// Calls `f` with the current CLF timestamp (UTC).
pub fn with_clf_date<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        refresh(&mut c);
        f(&c.clf)
    })
}

/// "10/Oct/2000:13:55:36 +0000" for a Unix time: the access log writes the
/// same date format the prefetch crate's log reader parses, so both use one
/// formatter.
pub fn clf_date(unix_seconds: u64) -> String {
    pagewire_prefetch::log::format_date(unix_seconds as i64, 0)
}

/// A monotonic millisecond clock advanced by the sweeper thread every
/// `SWEEP_INTERVAL`; connections read it with one relaxed load.
#[derive(Debug)]
pub struct CoarseClock {
    epoch: Instant,
    now_ms: AtomicU64,
}

impl CoarseClock {
    pub fn new() -> Self {
        CoarseClock {
            epoch: Instant::now(),
            now_ms: AtomicU64::new(0),
        }
    }
    pub fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::Relaxed)
    }
    /// Called by the sweeper.
    pub fn tick(&self) -> u64 {
        let ms = self.epoch.elapsed().as_millis() as u64;
        self.now_ms.store(ms, Ordering::Relaxed);
        ms
    }
}

impl Default for CoarseClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clf_dates() {
        assert_eq!(super::clf_date(0), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(super::clf_date(971_186_136), "10/Oct/2000:13:55:36 +0000");
        assert_eq!(super::clf_date(951_782_400), "29/Feb/2000:00:00:00 +0000");
        super::with_http_date(|d| assert!(d.ends_with(b" GMT")));
    }

    /// The coarse clock's `Date` names the current second (or, within one
    /// timer tick of a boundary, the one before), never a stale or future one.
    #[test]
    fn http_date_is_now() {
        use std::time::{Duration, SystemTime, UNIX_EPOCH};
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_secs();
        for _ in 0..3 {
            let before = secs(SystemTime::now());
            let date = super::with_http_date(|d| String::from_utf8(d.to_vec()).unwrap());
            let after = secs(SystemTime::now());
            let t = secs(httpdate::parse_http_date(&date).unwrap());
            assert!(t <= after, "{date} is after the second {after}");
            assert!(
                t + 1 >= before,
                "{date} is older than the second before {before}"
            );
            std::thread::sleep(Duration::from_millis(400));
        }
    }
}
