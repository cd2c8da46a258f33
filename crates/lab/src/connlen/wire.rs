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

/// A socket whose window is the buffer's label. Linux doubles SO_SNDBUF
/// and SO_RCVBUF and keeps part of them for its own bookkeeping, so a 4096
/// buffer alone advertises only about 2.4 KB. Instead the buffers are set to
/// twice the label (memory never binds) and `TCP_WINDOW_CLAMP` caps the
/// advertised window at the label. Both before listen/connect: the clamp
/// decides the window scale offered in the SYN and the first window.
fn socket(buffer: Buffer) -> std::io::Result<TcpSocket> {
    let s = TcpSocket::new_v4()?;
    if let Some(b) = buffer.bytes() {
        s.set_send_buffer_size(b.saturating_mul(2))?;
        s.set_recv_buffer_size(b.saturating_mul(2))?;
        set_window_clamp(&s, b)?;
    }
    Ok(s)
}

// No safe wrapper for TCP_WINDOW_CLAMP in our dependencies (socket2,
// rustix): one setsockopt.
#[allow(unsafe_code)]
fn set_window_clamp(s: &TcpSocket, bytes: u32) -> std::io::Result<()> {
    let v: libc::c_int = bytes.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: a valid socket descriptor and a c_int option value of the
    // size passed.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
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
            let l = socket(b).and_then(|s| {
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
/// the server closes. Checks the count.
pub async fn fetch(addr: SocketAddr, buffer: Buffer, length: u64) -> Result<Measurement> {
    let s = socket(buffer)?;
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
            let s = socket(Buffer::Bytes(8192)).unwrap();
            s.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let l = s.listen(16).unwrap();
            let addr = l.local_addr().unwrap();
            tokio::spawn(accept_loop(l));
            for len in [0u64, 1, 2048, 100_000] {
                let m = fetch(addr, Buffer::Bytes(8192), len).await.unwrap();
                assert!(m.client_rcvbuf >= 8192);
            }
            let e = fetch(addr, Buffer::Default, MAX_LENGTH + 1).await;
            assert!(e.is_err(), "oversized request must fail");
            fetch(addr, Buffer::Default, 5000).await.unwrap();
        });
    }

    /// The window the client advertises is the buffer's label, not what
    /// Linux makes of SO_RCVBUF. On loopback the MSS (~65 KB) is larger
    /// than these windows, so no rounding to whole segments applies.
    #[test]
    fn advertised_window_is_the_label_on_loopback() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for b in [4096u32, 8192, 16384] {
                let s = socket(Buffer::Bytes(b)).unwrap();
                s.bind("127.0.0.1:0".parse().unwrap()).unwrap();
                let l = s.listen(16).unwrap();
                let addr = l.local_addr().unwrap();
                let server = tokio::spawn(accept_loop(l));
                let m = fetch(addr, Buffer::Bytes(b), 200_000).await.unwrap();
                server.abort();
                let Some(w) = m.window else {
                    eprintln!("SKIPPED: TCP_INFO has no tcpi_rcv_wnd (kernel < 6.2)");
                    return;
                };
                assert_eq!(w, b, "buffer {b}: advertised window {w}");
            }
        });
    }
}
