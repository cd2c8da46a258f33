//! Connections and flushes: what the connections report to the session
//! (opened, closed, bytes written and read, flushes), for the report.

use super::*;

impl Ctx {
    pub(super) fn conn_opened(&self, st: &mut State, now: Instant) -> usize {
        st.open_now += 1;
        st.max_open = st.max_open.max(st.open_now);
        let id = st.conns.len();
        let now = ms(self.since_start(now));
        st.conns.push(ConnectionRecord {
            opened_ms: now,
            closed_ms: now,
            connect_ms: None,
            ssl_ms: None,
            requests_sent: 0,
            responses_received: 0,
            bytes_sent: 0,
            bytes_received: 0,
            writes: 0,
            reads: 0,
            unanswered: 0,
            pipelined: false,
            end: ConnEnd::Open,
        });
        id
    }

    pub(super) fn conn_closed(&self, st: &mut State, conn: usize, end: ConnEnd, now: Instant) {
        st.open_now = st.open_now.saturating_sub(1);
        let now = ms(self.since_start(now));
        let c = &mut st.conns[conn];
        c.closed_ms = now;
        c.end = end;
    }

    /// The TCP handshake before the connection was opened and the TLS or
    /// QUIC handshake after (HAR `connect` and `ssl`).
    pub(super) fn conn_handshake(
        &self,
        st: &mut State,
        conn: usize,
        connect: Duration,
        ssl: Option<Duration>,
    ) {
        if let Some(c) = st.conns.get_mut(conn) {
            c.connect_ms = Some(ms(connect));
            c.ssl_ms = ssl.map(ms);
        }
    }

    pub(super) fn conn_unanswered(&self, st: &mut State, conn: usize, n: usize) {
        st.conns[conn].unanswered += n as u32;
    }

    pub(super) fn conn_pipelined(&self, st: &mut State, conn: usize) {
        st.conns[conn].pipelined = true;
    }

    pub(super) fn flushed(
        &self,
        st: &mut State,
        conn: usize,
        reason: FlushReason,
        bytes: usize,
        now: Instant,
    ) {
        let at = self.since_start(now);
        let at_ms = ms(at);
        // The requests waiting in this connection's buffer leave now.
        let objs = &mut st.objs;
        st.unsent.retain(|&(c, id)| {
            if c != conn {
                return true;
            }
            if let Some(o) = objs.get_mut(id) {
                o.sent = Some(at);
            }
            false
        });
        st.flushes.push(FlushRecord {
            connection: conn,
            at_ms,
            reason,
            bytes,
        });
    }

    pub(super) fn wrote(&self, st: &mut State, conn: usize, n: usize) {
        st.bytes.total_bytes_sent += n as u64;
        let c = &mut st.conns[conn];
        c.writes += 1;
        c.bytes_sent += n as u64;
    }

    /// Objects with a result so far (a GETALL's or a package's parts count
    /// one each).
    pub(super) fn records_done(&self, st: &State) -> usize {
        st.objs.iter().filter(|o| o.record.is_some()).count()
    }

    /// The fetch is not over before `t`: the robot's imitated host cost
    /// ([`crate::config::HostCost`]) ran until then after the last object.
    pub(super) fn busy_until(&self, st: &mut State, t: Instant) {
        let t = self.since_start(t);
        st.last_done = st.last_done.max(t);
    }

    pub(super) fn read(&self, st: &mut State, conn: usize, n: usize, now: Instant) {
        let now = self.since_start(now);
        // Connection 0 carries the page's request first in every strategy.
        if conn == 0 && st.ttfb.is_none() {
            st.ttfb = Some(now);
        }
        st.bytes.total_bytes_received += n as u64;
        let c = &mut st.conns[conn];
        c.reads += 1;
        c.bytes_received += n as u64;
    }
}
