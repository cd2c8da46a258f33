//! Network namespaces held by file descriptors, TUN devices inside them,
//! and threads / processes that run inside them.
//!
//! The namespaces are ANONYMOUS: a thread `unshare(CLONE_NEWNET)`s and keeps
//! an fd to `/proc/thread-self/ns/net`; nothing is bind-mounted under
//! /run/netns. The kernel frees a namespace (and the TUN device in it) when
//! the last fd and the last process inside are gone, so a crashed run leaves
//! no namespace behind, and concurrent runs cannot collide on names or
//! addresses (each pair of namespaces is its own world).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;

use anyhow::{bail, Context, Result};

/// A network namespace, alive while this fd (or a process inside) exists.
pub struct Netns {
    fd: OwnedFd,
    /// Inode of the namespace: how /proc/<pid>/ns/net identifies it.
    inode: u64,
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Netns {
    /// Creates a new network namespace (on a short-lived thread, so the
    /// caller's own namespace is untouched).
    pub fn create() -> Result<Self> {
        std::thread::spawn(|| -> Result<Netns> {
            // SAFETY: plain syscall; only this thread changes namespace.
            cvt(unsafe { libc::unshare(libc::CLONE_NEWNET) })
                .context("unshare(CLONE_NEWNET) (needs CAP_SYS_ADMIN)")?;
            let f = std::fs::File::open("/proc/thread-self/ns/net")
                .context("open /proc/thread-self/ns/net")?;
            let inode = f.metadata()?.ino();
            Ok(Netns {
                fd: OwnedFd::from(f),
                inode,
            })
        })
        .join()
        .map_err(|_| anyhow::anyhow!("namespace thread panicked"))?
    }

    pub fn inode(&self) -> u64 {
        self.inode
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Moves the CALLING THREAD into this namespace.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: setns on an fd we own; affects only the calling thread.
        cvt(unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
    }
}

/// Opens a TUN device named `name` in the calling thread's namespace:
/// IFF_TUN (IP packets, no Ethernet) | IFF_NO_PI (no 4-byte packet-info
/// header), non-blocking. Without IFF_VNET_HDR the kernel cannot hand us
/// GSO super-packets, so every packet read is one real IP packet <= MTU.
pub fn open_tun(name: &str) -> Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: open(2) with a valid C string.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::PermissionDenied {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata("/dev/net/tun")
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0);
            bail!(
                "open /dev/net/tun: {e}: the device is mode {mode:o}; \
                 a normal user (even in a user namespace) needs it readable and writable: \
                 `chmod 0666 /dev/net/tun` (the usual default) or run as root"
            );
        }
        bail!("open /dev/net/tun: {e} (needs the tun module: modprobe tun)");
    }
    // SAFETY: fd was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= ifr.ifr_name.len() {
        bail!("TUN name {name:?} too long");
    }
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF takes a pointer to an ifreq that lives for the call.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr) })
        .with_context(|| format!("ioctl(TUNSETIFF, {name}) (needs CAP_NET_ADMIN)"))?;
    Ok(fd)
}

/// Writes a sysctl of the calling thread's network namespace (net.* sysctls
/// under /proc/sys/net are per namespace, resolved for the opening thread).
pub fn write_sysctl(name: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    std::fs::write(&path, value).with_context(|| format!("sysctl {name}={value}"))
}

/// Where `ip` lives: PATH first, then the usual sbin directories (a normal
/// user's PATH often lacks them).
pub fn ip_binary() -> &'static str {
    for p in ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"] {
        if Path::new(p).exists() {
            return p;
        }
    }
    "ip"
}

/// Runs `ip -batch -` with `script` in the calling thread's namespace (a
/// child forked from a thread inherits that thread's namespaces).
pub fn ip_batch(script: &str) -> Result<()> {
    use std::io::Write;
    let mut child = Command::new(ip_binary())
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("run `ip` (iproute2 must be installed)")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "ip -batch failed ({}): {}\nscript:\n{script}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

type Job = Box<dyn FnOnce() + Send>;

/// A long-lived thread inside a namespace that spawns the child processes of
/// that side. Children get PR_SET_PDEATHSIG(SIGKILL), which fires when the
/// thread that forked them exits: this thread exits when the link is
/// dropped, or when the whole process dies (crash, SIGKILL), so no server or
/// client command outlives the link.
pub struct Spawner {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Spawner {
    pub fn new(ns: &Netns, name: &str) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<io::Result<()>>();
        // Dup the fd so the thread does not borrow `ns`.
        let fd = ns.fd.try_clone()?;
        let thread = std::thread::Builder::new()
            .name(format!("pw-{name}"))
            .spawn(move || {
                // SAFETY: setns on a valid fd, this thread only.
                let r = cvt(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) });
                drop(fd);
                let ok = r.is_ok();
                let _ = ready_tx.send(r.map(|_| ()));
                if !ok {
                    return;
                }
                // Bounded by the link's lifetime: ends when the sender drops.
                while let Ok(job) = rx.recv() {
                    job();
                }
            })?;
        ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("spawner thread died"))?
            .context("setns into the namespace")?;
        Ok(Self {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Runs `f` on the spawner thread and waits for its result.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let (rtx, rrx) = mpsc::channel();
        self.tx
            .as_ref()
            .expect("alive until drop")
            .send(Box::new(move || {
                let _ = rtx.send(f());
            }))
            .map_err(|_| anyhow::anyhow!("spawner thread is gone"))?;
        rrx.recv()
            .map_err(|_| anyhow::anyhow!("spawner job panicked"))
    }

    /// Spawns `cmd` inside the namespace in its own process group, killed
    /// with SIGKILL if the link goes away.
    pub fn spawn(&self, mut cmd: Command) -> Result<Child> {
        cmd.process_group(0);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork
        // and exec here.
        unsafe {
            cmd.pre_exec(|| {
                cvt(libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ))?;
                Ok(())
            });
        }
        let prog = format!("{:?}", cmd.get_program());
        self.run(move || cmd.spawn())?
            .with_context(|| format!("spawn {prog}"))
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends SIGKILL to every process whose network namespace is `inode`
/// (except this process), e.g. grandchildren a server command started in
/// the background. Returns how many were signalled.
pub fn kill_all_in_netns(inode: u64) -> usize {
    let me = std::process::id();
    let want = format!("net:[{inode}]");
    let mut n = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if std::fs::read_link(e.path().join("ns/net")).is_ok_and(|l| l.as_os_str() == want.as_str())
        {
            // SAFETY: kill(2) on a pid we just saw in our namespace.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            n += 1;
        }
    }
    n
}

/// Processes (not threads of this process) currently inside namespace `inode`.
pub fn processes_in_netns(inode: u64) -> Vec<u32> {
    let me = std::process::id();
    let want = format!("net:[{inode}]");
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid != me
                && std::fs::read_link(e.path().join("ns/net"))
                    .is_ok_and(|l| l.as_os_str() == want.as_str())
            {
                out.push(pid);
            }
        }
    }
    out
}

/// A duplicate of the namespace fd (for a thread that outlives a borrow).
pub fn dup_fd(ns: &Netns) -> io::Result<OwnedFd> {
    ns.fd.try_clone()
}

/// Moves the calling thread into the namespace of `fd`.
pub fn enter_fd(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: setns on a valid fd; affects only the calling thread.
    cvt(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// The unprivileged packet path: an `AF_PACKET` socket (SOCK_DGRAM: IP
/// packets without the Ethernet header) bound to interface `ifname` of the
/// calling thread's namespace, reading only what arrives there (its own
/// transmissions are ignored), non-blocking. Needs CAP_NET_RAW in the user
/// namespace that owns the network namespace (a user namespace's root has
/// it), where a TUN device needs /dev/net/tun to be openable.
pub fn open_packet_socket(ifname: &str) -> Result<(OwnedFd, libc::c_int)> {
    let proto = (libc::ETH_P_IP as u16).to_be();
    // SAFETY: socket(2) with constant arguments.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto as libc::c_int,
        )
    })
    .context("socket(AF_PACKET) (needs CAP_NET_RAW)")?;
    // SAFETY: fd was just returned by socket and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let cname = CString::new(ifname).context("interface name")?;
    // SAFETY: valid C string.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error()).with_context(|| format!("no interface {ifname}"));
    }
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with an int that lives across the call.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .context("setsockopt(PACKET_IGNORE_OUTGOING) (Linux >= 4.20)")?;
    // The kernel's receive time of every packet (SCM_TIMESTAMPNS): the
    // forwarder enters a packet into the link model at the moment it
    // reached the veth, not when the forwarder's thread got to read it
    // (best effort: without it, the read time).
    // SAFETY: setsockopt with an int that lives across the call.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    // As deep as a TUN queue is long, at least: bursts of a fast link must
    // not be dropped by the socket (best effort: capped by net.core.rmem_max).
    let buf: libc::c_int = 4 << 20;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: as above.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&buf as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: bind with a sockaddr_ll that lives across the call.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .with_context(|| format!("bind the packet socket to {ifname}"))?;
    Ok((fd, ifindex as libc::c_int))
}

/// Turns off checksum offload, scatter-gather, TSO, GSO and GRO on
/// `ifname` (the legacy SIOCETHTOOL set calls; `ethtool -K` does the same),
/// so that every packet a packet socket reads from a veth is one real IP
/// packet no larger than the MTU with its checksums filled in.
pub fn disable_offloads(ifname: &str) -> Result<()> {
    // linux/ethtool.h: ETHTOOL_STXCSUM, _SSG, _STSO, _SGSO, _SGRO.
    const SETS: [(u32, &str); 5] = [
        (0x17, "tx-checksumming"),
        (0x19, "scatter-gather"),
        (0x1f, "tcp-segmentation-offload"),
        (0x24, "generic-segmentation-offload"),
        (0x2c, "generic-receive-offload"),
    ];
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    // SAFETY: socket(2) with constant arguments.
    let s = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })
        .context("socket for SIOCETHTOOL")?;
    // SAFETY: just created, owned here.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    for (cmd, what) in SETS {
        let mut v = EthtoolValue { cmd, data: 0 };
        // SAFETY: ifreq is plain old data; all-zero is valid.
        let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
        if ifname.len() >= ifr.ifr_name.len() {
            bail!("interface name {ifname:?} too long");
        }
        for (d, c) in ifr.ifr_name.iter_mut().zip(ifname.bytes()) {
            *d = c as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = (&mut v as *mut EthtoolValue).cast();
        // SAFETY: SIOCETHTOOL with an ifreq pointing at `v`, both alive.
        let r = unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCETHTOOL, &mut ifr) };
        if r < 0 {
            let e = io::Error::last_os_error();
            // A device without the feature refuses to change it: nothing to do.
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(e).with_context(|| format!("ethtool {ifname} {what} off"));
            }
        }
    }
    Ok(())
}

/// Whether /dev/net/tun can be opened by this process (the TUN path).
pub fn tun_openable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .is_ok()
}

/// Where `nft` lives (see `ip_binary`).
pub fn nft_binary() -> &'static str {
    for p in ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft", "/bin/nft"] {
        if Path::new(p).exists() {
            return p;
        }
    }
    "nft"
}

/// Loads an nftables ruleset (`nft -f -`) in the calling thread's namespace.
pub fn nft_batch(script: &str) -> Result<()> {
    use std::io::Write;
    let mut child = Command::new(nft_binary())
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("run `nft` (install nftables: apt-get install nftables)")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "nft -f failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
