//! The paper's client and server. The request is the length as 8 bytes
//! (big-endian); the answer is that many bytes, then the server's FIN.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use pagewire_emu::Link;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::Buffer;

/// Longest length the server accepts: bad input is refused, not obeyed
/// (the plans ask for at most 4 MB; 1 GiB leaves room for longer sweeps).
pub const MAX_LENGTH: u64 = 1 << 30;
/// How long the server waits for the 8-byte request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Chunk written repeatedly: "bytes from thin air".
const CHUNK: usize = 64 * 1024;
/// Bound on one trial: 4 MB through a 4 KB window over 70 ms takes ~70 s.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(600);

/// The server's socket: SO_RCVBUF the label, SO_SNDBUF four times it, so
/// the sender's memory never holds it below the client's window.
fn server_socket(buffer: Buffer) -> std::io::Result<TcpSocket> {
    let s = TcpSocket::new_v4()?;
    if let Some(b) = buffer.bytes() {
        s.set_send_buffer_size(b.saturating_mul(4))?;
        s.set_recv_buffer_size(b)?;
    }
    Ok(s)
}

/// The client's socket: SO_RCVBUF `rcvbuf` (see [`calibrate`]) set before
/// `connect` (it decides the window scale offered in the SYN), SO_SNDBUF
/// the label.
fn client_socket(buffer: Buffer, rcvbuf: Option<u32>) -> std::io::Result<TcpSocket> {
    let s = TcpSocket::new_v4()?;
    if let Some(b) = buffer.bytes() {
        s.set_send_buffer_size(b)?;
        s.set_recv_buffer_size(rcvbuf.unwrap_or(b))?;
    }
    Ok(s)
}

/// Byte offset of `tcpi_rcv_wnd` in Linux's `struct tcp_info` (since Linux
/// 6.2; not in the libc crate's struct): the receive window the socket last
/// advertised, in bytes.
const TCPI_RCV_WND_OFFSET: usize = 232;

/// The receive window `fd` last advertised (TCP_INFO), or None on kernels
/// older than 6.2.
// TCP_INFO past the fields of the libc crate's struct: one getsockopt into
// a byte buffer.
#[allow(unsafe_code)]
pub fn advertised_window(fd: &impl AsRawFd) -> std::io::Result<Option<u32>> {
    let mut buf = [0u8; 512];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the buffer is writable for `len` bytes and the kernel writes
    // at most `len` bytes, returning how many in `len`.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let end = TCPI_RCV_WND_OFFSET + 4;
    if (len as usize) < end {
        return Ok(None);
    }
    let mut w = [0u8; 4];
    w.copy_from_slice(&buf[TCPI_RCV_WND_OFFSET..end]);
    Ok(Some(u32::from_ne_bytes(w)))
}

async fn serve_one(mut s: TcpStream) -> Result<()> {
    let mut req = [0u8; 8];
    tokio::time::timeout(REQUEST_TIMEOUT, s.read_exact(&mut req))
        .await
        .map_err(|_| anyhow!("no request within {REQUEST_TIMEOUT:?}"))??;
    let len = u64::from_be_bytes(req);
    if len > MAX_LENGTH {
        bail!("asked for {len} bytes, more than {MAX_LENGTH}");
    }
    let chunk = [0x5au8; CHUNK];
    let mut left = len;
    // Bounded by `len` <= MAX_LENGTH.
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        s.write_all(&chunk[..n]).await?;
        left -= n as u64;
    }
    s.shutdown().await?;
    Ok(())
}

async fn accept_loop(l: TcpListener) {
    loop {
        match l.accept().await {
            Ok((s, _)) => {
                tokio::spawn(async move {
                    if let Err(e) = serve_one(s).await {
                        eprintln!("conn-length server: {e:#}");
                    }
                });
            }
            // EMFILE and the like: keep serving the others after a pause.
            Err(e) => {
                eprintln!("conn-length server: accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Binds one listener per buffer size at `ip` (port chosen by the kernel)
/// and serves until `stop` fires. Sends the ports once bound.
fn serve(
    ip: std::net::Ipv4Addr,
    buffers: Vec<Buffer>,
    ports_tx: mpsc::Sender<Result<Vec<u16>>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ports_tx.send(Err(e.into()));
            return;
        }
    };
    rt.block_on(async move {
        let mut listeners = Vec::new();
        for &b in &buffers {
            let l = server_socket(b).and_then(|s| {
                s.set_reuseaddr(true)?;
                s.bind(SocketAddr::from((ip, 0)))?;
                s.listen(128)
            });
            match l {
                Ok(l) => listeners.push(l),
                Err(e) => {
                    let _ = ports_tx.send(Err(anyhow!("listen ({}): {e}", b.label())));
                    return;
                }
            }
        }
        let ports = listeners
            .iter()
            .map(|l| l.local_addr().map(|a| a.port()))
            .collect::<std::io::Result<Vec<_>>>();
        let _ = ports_tx.send(ports.map_err(Into::into));
        for l in listeners {
            tokio::spawn(accept_loop(l));
        }
        let _ = stop.await;
    });
}

/// The server running on a thread inside a link's server namespace.
pub struct ServerHandle {
    ports: Vec<u16>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl ServerHandle {
    pub fn start_in(link: &Link, buffers: &[Buffer]) -> Result<ServerHandle> {
        let (ports_tx, ports_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let ip = link.server_addr();
        let buffers = buffers.to_vec();
        let thread = link.spawn_thread_in_server(move || serve(ip, buffers, ports_tx, stop_rx))?;
        let ports = ports_rx
            .recv_timeout(Duration::from_secs(10))
            .context("the server thread did not start")??;
        Ok(ServerHandle {
            ports,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Port of the listener for each buffer, in the order given.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Rounds of [`calibrate`] at most.
const CALIBRATION_ROUNDS: u32 = 5;

/// Finds the client SO_RCVBUF whose advertised window is the label. Linux
/// doubles SO_RCVBUF and advertises a share of it that depends on the
/// path's buffer overhead (its `scaling_ratio`, learnt from the segments
/// received), and `TCP_WINDOW_CLAMP` does not hold (Linux 6.18 resets it
/// when that ratio changes), so: transfer 16 windows (at least 64 KB), read
/// the window advertised at the end (TCP_INFO), scale SO_RCVBUF by
/// label / window, and repeat until the window is the label or, without
/// window scaling (whole segments of `mss`), the largest number of whole
/// segments that fits in it. Returns (SO_RCVBUF, window); the label and
/// None when the kernel does not report the window.
pub async fn calibrate(addr: SocketAddr, label: u32, mss: u32) -> Result<(u32, Option<u32>)> {
    let buffer = Buffer::Bytes(label);
    let length = (u64::from(label) * 16).max(64 * 1024);
    let mut r = label;
    let mut best: Option<(u32, u32)> = None;
    for _ in 0..CALIBRATION_ROUNDS {
        let m = fetch(addr, buffer, Some(r), length).await?;
        let Some(w) = m.window.filter(|&w| w > 0) else {
            return Ok((label, None));
        };
        // Closest to the label from below wins; above it, the smallest.
        let better = match best {
            None => true,
            Some((_, bw)) if w <= label => bw > label || w > bw,
            Some((_, bw)) => bw > label && w < bw,
        };
        if better {
            best = Some((r, w));
        }
        if w <= label && w + mss.min(label) > label {
            return Ok((r, Some(w)));
        }
        let next = (u64::from(r) * u64::from(label) / u64::from(w)).clamp(1024, 64 << 20) as u32;
        // Whole segments: nudge past a rounding step that scaling alone
        // does not cross.
        r = if next != r {
            next
        } else if w > label {
            r - r / 16
        } else {
            r + r / 16
        };
    }
    Ok(best.map_or((label, None), |(r, w)| (r, Some(w))))
}

/// One trial's result.
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    /// From the start of `connect` to the server's FIN.
    pub elapsed: Duration,
    /// SO_RCVBUF as the kernel reported it after setting.
    pub client_rcvbuf: u32,
    /// The receive window the client advertised when the transfer ended
    /// (TCP_INFO `tcpi_rcv_wnd`: the window the sender was held to), None
    /// on kernels before 6.2.
    pub window: Option<u32>,
}

/// One trial: connect, ask for `length` bytes, read and discard them until
/// the server closes. Checks the count. `rcvbuf`: the client's SO_RCVBUF
/// (None: the label).
pub async fn fetch(
    addr: SocketAddr,
    buffer: Buffer,
    rcvbuf: Option<u32>,
    length: u64,
) -> Result<Measurement> {
    let s = client_socket(buffer, rcvbuf)?;
    let client_rcvbuf = s.recv_buffer_size()?;
    let go = async {
        let t0 = Instant::now();
        let mut c = s.connect(addr).await.context("connect")?;
        c.write_all(&length.to_be_bytes()).await?;
        let mut buf = vec![0u8; CHUNK];
        let mut got = 0u64;
        // Bounded: ends at EOF, and the server sends at most MAX_LENGTH.
        loop {
            let n = c.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            got += n as u64;
        }
        let elapsed = t0.elapsed();
        if got != length {
            bail!("asked for {length} bytes, got {got}");
        }
        Ok((elapsed, advertised_window(&c)?))
    };
    let (elapsed, window) = tokio::time::timeout(TRIAL_TIMEOUT, go)
        .await
        .map_err(|_| anyhow!("trial took longer than {TRIAL_TIMEOUT:?}"))??;
    Ok(Measurement {
        elapsed,
        client_rcvbuf,
        window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pair on loopback (no namespaces): exact counts, and a refused
    /// oversized request does not stop the server.
    #[test]
    fn pair_transfers_exact_counts_on_loopback() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let s = server_socket(Buffer::Bytes(8192)).unwrap();
            s.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let l = s.listen(16).unwrap();
            let addr = l.local_addr().unwrap();
            tokio::spawn(accept_loop(l));
            for len in [0u64, 1, 2048, 100_000] {
                let m = fetch(addr, Buffer::Bytes(8192), None, len).await.unwrap();
                assert!(m.client_rcvbuf >= 8192);
            }
            let e = fetch(addr, Buffer::Default, None, MAX_LENGTH + 1).await;
            assert!(e.is_err(), "oversized request must fail");
            fetch(addr, Buffer::Default, None, 5000).await.unwrap();
        });
    }

    /// After calibration the window the client advertises is the label, not
    /// what Linux makes of SO_RCVBUF = label. On loopback the MSS (~65 KB)
    /// exceeds these windows, so whole-segment rounding does not apply.
    #[test]
    fn calibrated_window_is_the_label_on_loopback() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for b in [4096u32, 16384] {
                let s = server_socket(Buffer::Bytes(b)).unwrap();
                s.bind("127.0.0.1:0".parse().unwrap()).unwrap();
                let l = s.listen(16).unwrap();
                let addr = l.local_addr().unwrap();
                let server = tokio::spawn(accept_loop(l));
                let (r, w) = calibrate(addr, b, 65483).await.unwrap();
                let Some(w) = w else {
                    eprintln!("SKIPPED: TCP_INFO has no tcpi_rcv_wnd (kernel < 6.2)");
                    return;
                };
                // A trial with the calibrated buffer advertises it too.
                let m = fetch(addr, Buffer::Bytes(b), Some(r), 100_000)
                    .await
                    .unwrap();
                server.abort();
                assert!(
                    w <= b && w >= b - b / 8,
                    "buffer {b}: window {w} (SO_RCVBUF {r})"
                );
                let again = m.window.unwrap();
                assert!(
                    again <= b && again >= b - b / 8,
                    "buffer {b}: trial window {again}"
                );
            }
        });
    }
}
