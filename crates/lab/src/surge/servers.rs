//! The servers of the SURGE suite: pagewire, nginx and Apache with the
//! prefork MPM (a process per connection, the closest living relative of
//! the paper's Apache 1.3.0), each with a configuration generated into the
//! run directory and started inside the server's cgroup.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use pagewire_emu::Link;

use super::cgroup::Cgroup;

/// Which server answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Server {
    Pagewire { exe: PathBuf },
    Nginx,
    Apache,
}

impl Server {
    pub fn label(&self) -> &'static str {
        match self {
            Server::Pagewire { .. } => "pagewire",
            Server::Nginx => "nginx",
            Server::Apache => "apache",
        }
    }
}

/// Apache's binary and modules (Debian layout, `apache2` package).
pub const APACHE_BIN: &str = "/usr/sbin/apache2";
pub const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

/// Paper 004 Table 10 (Apache 1.3.0's highperformance.conf), in Apache 2.4
/// names: KeepAlive On, MaxKeepAliveRequests 150, KeepAliveTimeout 15,
/// MinSpareServers 5, MaxSpareServers 10, StartServers 5, MaxClients 900
/// (MaxRequestWorkers, with ServerLimit raised to match),
/// MaxRequestsPerChild 10000000 (MaxConnectionsPerChild).
pub fn apache_conf(root: &Path, dir: &Path, addr: &str) -> String {
    format!(
        "# made by pagewire {ver} bench --suite surge (generated Apache configuration)\n\
         # Paper 004 Table 10's Apache 1.3.0 settings, with Apache 2.4's prefork MPM.\n\
         LoadModule mpm_prefork_module {m}/mod_mpm_prefork.so\n\
         LoadModule authz_core_module {m}/mod_authz_core.so\n\
         LoadModule mime_module {m}/mod_mime.so\n\
         ServerName surge.test\n\
         ServerRoot {dir}\n\
         DefaultRuntimeDir {dir}\n\
         PidFile {dir}/httpd.pid\n\
         Mutex file:{dir} default\n\
         ErrorLog {dir}/error.log\n\
         LogLevel warn\n\
         User www-data\n\
         Group www-data\n\
         Listen {addr}\n\
         DocumentRoot {root}\n\
         <Directory />\n  Require all denied\n  AllowOverride None\n</Directory>\n\
         <Directory {root}>\n  Require all granted\n  AllowOverride None\n</Directory>\n\
         TypesConfig /dev/null\n\
         AddType text/html .html\n\
         AddType image/gif .gif\n\
         EnableSendfile On\n\
         EnableMMAP On\n\
         HostnameLookups Off\n\
         KeepAlive On\n\
         MaxKeepAliveRequests 150\n\
         KeepAliveTimeout 15\n\
         StartServers 5\n\
         MinSpareServers 5\n\
         MaxSpareServers 10\n\
         ServerLimit 900\n\
         MaxRequestWorkers 900\n\
         MaxConnectionsPerChild 10000000\n\
         ListenBacklog 1024\n",
        ver = env!("CARGO_PKG_VERSION"),
        m = APACHE_MODULES,
        dir = dir.display(),
        root = root.display(),
    )
}

/// nginx, one worker (event-driven: every connection in one process), the
/// same keep-alive policy as the Apache configuration.
pub fn nginx_conf(root: &Path, dir: &Path, addr: &str) -> String {
    format!(
        "# made by pagewire {ver} bench --suite surge (generated nginx configuration)\n\
         daemon off;\n\
         master_process off;\n\
         worker_processes 1;\n\
         worker_rlimit_nofile 8192;\n\
         user root;\n\
         pid {dir}/nginx.pid;\n\
         error_log {dir}/error.log warn;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n\
         \x20 access_log off;\n\
         \x20 client_body_temp_path {dir}/tmp_body;\n\
         \x20 proxy_temp_path {dir}/tmp_proxy;\n\
         \x20 fastcgi_temp_path {dir}/tmp_fastcgi;\n\
         \x20 uwsgi_temp_path {dir}/tmp_uwsgi;\n\
         \x20 scgi_temp_path {dir}/tmp_scgi;\n\
         \x20 types {{ text/html html; image/gif gif; }}\n\
         \x20 default_type application/octet-stream;\n\
         \x20 sendfile on;\n\
         \x20 tcp_nodelay on;\n\
         \x20 keepalive_requests 150;\n\
         \x20 keepalive_timeout 15s;\n\
         \x20 server {{\n\
         \x20   listen {addr} backlog=1024;\n\
         \x20   root {root};\n\
         \x20 }}\n\
         }}\n",
        ver = env!("CARGO_PKG_VERSION"),
        dir = dir.display(),
        root = root.display(),
    )
}

/// The running server; stopped (its process group, then its cgroup) on drop.
pub struct Running {
    child: Child,
    pub log: PathBuf,
    /// The server namespace, held open from the start so the monitor can
    /// enter it even after the server's first process died.
    pub netns: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

impl Running {
    /// The shell's pid: inside the server namespace, for /proc/PID/net.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        pagewire_emu::cli::stop_process_group(&mut self.child, Duration::from_secs(3));
    }
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// Starts `server` serving `root` on `addr` inside `cg`, in the link's server namespace.
pub fn start(
    server: &Server,
    link: &Link,
    cg: &Cgroup,
    root: &Path,
    dir: &Path,
    addr: &str,
) -> Result<Running> {
    fs::create_dir_all(dir)?;
    // Peers read relative paths against their own roots (nginx's -p prefix,
    // Apache's compiled ServerRoot), not our working directory: a relative
    // `--out` must reach them absolute.
    let dir = &std::path::absolute(dir).with_context(|| format!("{}", dir.display()))?;
    let root = &std::path::absolute(root).with_context(|| format!("{}", root.display()))?;
    let log = dir.join("server.log");
    let logf = fs::File::create(&log).with_context(|| format!("create {}", log.display()))?;
    let exec = match server {
        Server::Pagewire { exe } => format!(
            "exec {} serve --root {} --addr {addr} --no-compress --idle-timeout 15s",
            sh_quote(exe),
            sh_quote(root)
        ),
        Server::Nginx => {
            let conf = dir.join("nginx.conf");
            fs::write(&conf, nginx_conf(root, dir, addr))?;
            format!("exec nginx -c {} -p {}", sh_quote(&conf), sh_quote(dir))
        }
        Server::Apache => {
            if !Path::new(APACHE_BIN).exists() {
                bail!("apache2 is not installed ({APACHE_BIN}); run scripts/setup-deps.sh");
            }
            let conf = dir.join("apache2.conf");
            fs::write(&conf, apache_conf(root, dir, addr))?;
            format!("exec {APACHE_BIN} -f {} -DFOREGROUND", sh_quote(&conf))
        }
    };
    let line = format!("{}{exec}", cg.enter_prefix());
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&line)
        .stdin(Stdio::null())
        .stdout(logf.try_clone()?)
        .stderr(logf);
    let child = link
        .spawn_in_server(cmd)
        .with_context(|| format!("start {} in the server namespace", server.label()))?;
    let netns = fs::File::open(format!("/proc/{}/ns/net", child.id()))
        .ok()
        .map(|f| std::sync::Arc::new(std::os::fd::OwnedFd::from(f)));
    let mut r = Running { child, log, netns };
    let up = link.wait_server_listening(Duration::from_secs(20))?;
    if let Some(st) = r.exited() {
        bail!(
            "{} exited ({st}) before serving: {}",
            server.label(),
            fs::read_to_string(&r.log).unwrap_or_default()
        );
    }
    if !up {
        bail!(
            "{} did not listen within 20 s: {}",
            server.label(),
            fs::read_to_string(&r.log).unwrap_or_default()
        );
    }
    Ok(r)
}
