//! `pagewire load --shard K/3` from three client network namespaces against
//! one `pagewire serve` in a server namespace, merged with `pagewire load
//! merge` and compared with one unsharded run of the same UEs: the local
//! stand-in for shards on several machines (paper 004's SURGE).
//!
//! Topology (all inside namespaces this test creates; addresses from
//! 198.18.0.0/15): the server namespace holds 198.18.100.1 on `lo` and one
//! veth end `sK` (198.18.K+1.1/24) per client; client namespace K holds the
//! other end `v0` (198.18.K+1.2/24) and a route to 198.18.100.1 through it.
//! Namespaces are anonymous (`pagewire_emu::ns`): they and their veth pairs
//! vanish when the last fd and process inside are gone, so dropping the
//! `Host`s (also while a panic unwinds) kills the processes and frees
//! everything. Needs root (CI runs as root); skips otherwise.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pagewire_emu::ns::{self, Netns, Spawner};

mod common;

const PW: &str = env!("CARGO_BIN_EXE_pagewire");
const SERVER: &str = "198.18.100.1";
const PORT: u16 = 8080;
const SHARDS: usize = 3;
const UES: u64 = 60;
/// Each run's length; the whole test stays well under a minute.
const DURATION: &str = "5s";
/// Longest any one `pagewire load` may take before the test fails.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// One network namespace, a thread inside it that runs `ip` and spawns
/// processes, and the processes it started. Dropping it stops them, kills
/// anything else left inside, and releases the namespace.
struct Host {
    ns: Netns,
    spawner: Option<Spawner>,
    children: Vec<Child>,
}

impl Host {
    fn new(name: &str) -> Host {
        let ns = Netns::create().expect("create a network namespace");
        let spawner = Spawner::new(&ns, name).expect("spawner thread");
        Host {
            ns,
            spawner: Some(spawner),
            children: Vec::new(),
        }
    }

    fn spawner(&self) -> &Spawner {
        self.spawner.as_ref().expect("alive until drop")
    }

    /// Runs an `ip -batch` script inside the namespace.
    fn ip(&self, script: String) {
        self.spawner()
            .run(move || ns::ip_batch(&script))
            .expect("spawner")
            .expect("ip -batch");
    }

    /// The spawner thread's id: a "pid" `ip ... netns` accepts for this
    /// namespace (the kernel resolves thread ids too).
    fn tid(&self) -> String {
        let link = self
            .spawner()
            .run(|| std::fs::read_link("/proc/thread-self"))
            .expect("spawner")
            .expect("readlink /proc/thread-self");
        // "PID/task/TID"
        link.to_string_lossy()
            .rsplit('/')
            .next()
            .expect("tid")
            .to_string()
    }

    fn spawn(&mut self, cmd: Command) -> usize {
        self.children
            .push(self.spawner().spawn(cmd).expect("spawn in namespace"));
        self.children.len() - 1
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        for c in &mut self.children {
            pagewire_emu::cli::stop_process_group(c, Duration::from_secs(2));
        }
        for _ in 0..3 {
            if ns::kill_all_in_netns(self.ns.inode()) == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // The spawner thread exits (PDEATHSIG for any child left), then the
        // namespace fd closes and the kernel frees the namespace and its
        // veth ends (a veth pair dies with either end).
        self.spawner.take();
    }
}

/// Waits (bounded) for a child and returns its stdout; fails the test on
/// a timeout or a non-zero exit.
fn finish(child: &mut Child, what: &str) -> String {
    let until = Instant::now() + LOAD_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < until,
            "{what} did not end within {LOAD_TIMEOUT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    assert!(status.success(), "{what}: {status}\n{out}\n{err}");
    out
}

fn load_cmd(site: &Path, out: &Path, shard: Option<usize>) -> Command {
    let mut c = Command::new(PW);
    c.args(["load", "--target", &format!("http://{SERVER}:{PORT}")])
        .args(["--ues", &UES.to_string(), "--duration", DURATION])
        .args(["--mode", "http11", "--seed", "7", "--no-progress", "--json"])
        .arg("--site")
        .arg(site)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(k) = shard {
        c.args(["--shard", &format!("{k}/{SHARDS}")]);
    }
    c
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

#[test]
fn shards_in_separate_namespaces_merge_into_one_run() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let started = Instant::now();
    let site = tempfile::tempdir().unwrap();
    let made = Command::new(PW)
        .args(["site", "surge", "--files", "200", "--seed", "5", "--out"])
        .arg(site.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");

    let mut server = Host::new("srv");
    server.ip(format!("link set lo up\naddr add {SERVER}/32 dev lo\n"));
    let server_tid = server.tid();
    let mut clients: Vec<Host> = (0..SHARDS).map(|k| Host::new(&format!("cl{k}"))).collect();
    for (k, c) in clients.iter().enumerate() {
        let net = k + 1;
        c.ip(format!(
            "link set lo up\n\
             link add v0 type veth peer name s{k} netns {server_tid}\n\
             addr add 198.18.{net}.2/24 dev v0\n\
             link set v0 up\n\
             route add {SERVER}/32 via 198.18.{net}.1\n"
        ));
        server.ip(format!(
            "addr add 198.18.{net}.1/24 dev s{k}\nlink set s{k} up\n"
        ));
    }

    let mut serve = Command::new(PW);
    serve
        .args([
            "serve",
            "--no-compress",
            "--addr",
            &format!("{SERVER}:{PORT}"),
            "--root",
        ])
        .arg(site.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let s = server.spawn(serve);
    let mut line = String::new();
    BufReader::new(server.children[s].stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening on "), "serve said {line:?}");

    // The three shards at once, each from its own namespace.
    let out = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = (0..SHARDS)
        .map(|k| out.path().join(format!("shard{k}")))
        .collect();
    let idx: Vec<usize> = clients
        .iter_mut()
        .enumerate()
        .map(|(k, c)| c.spawn(load_cmd(site.path(), &dirs[k], Some(k))))
        .collect();
    let mut shard_gets = 0;
    let mut shard_conns = 0;
    for (k, c) in clients.iter_mut().enumerate() {
        let s = json(&finish(&mut c.children[idx[k]], &format!("shard {k}")));
        assert_eq!(s["errors"], 0, "shard {k}: {s}");
        assert_eq!(s["run"]["ues"], UES / SHARDS as u64, "shard {k}");
        assert!(s["gets"].as_u64().unwrap() > 0, "shard {k}: {s}");
        shard_gets += s["gets"].as_u64().unwrap();
        shard_conns += s["connections"].as_u64().unwrap();
    }

    // The same UEs unsharded, from the first client namespace.
    let whole_dir = out.path().join("whole");
    let w = clients[0].spawn(load_cmd(site.path(), &whole_dir, None));
    let whole = json(&finish(&mut clients[0].children[w], "unsharded run"));
    assert_eq!(whole["errors"], 0, "{whole}");

    let merged = Command::new(PW)
        .args(["load", "merge", "--json"])
        .args(&dirs)
        .output()
        .unwrap();
    assert!(merged.status.success(), "{merged:?}");
    let merged = json(&String::from_utf8_lossy(&merged.stdout));
    let get = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    eprintln!(
        "whole: {} GETs, {} connections; merged {SHARDS} shards: {} GETs, {} connections; {:.1} s",
        get(&whole, "gets"),
        get(&whole, "connections"),
        get(&merged, "gets"),
        get(&merged, "connections"),
        started.elapsed().as_secs_f64()
    );
    // Exact: the merge adds the shards.
    assert_eq!(get(&merged, "gets"), shard_gets);
    assert_eq!(get(&merged, "connections"), shard_conns);
    assert_eq!(merged["run"]["ues"], UES);
    assert_eq!(merged["errors"], 0, "{merged}");
    assert_eq!(merged["get_latency_ms"]["count"], merged["gets"]);
    // Same UEs, same seed: the same work within noise (closed-loop UEs, so
    // only response times shift the schedule).
    let rel = |a: u64, b: u64| (a as f64 - b as f64).abs() / b.max(1) as f64;
    assert!(
        rel(get(&merged, "gets"), get(&whole, "gets")) < 0.10,
        "GETs: merged {merged} vs whole {whole}"
    );
    assert!(
        rel(get(&merged, "connections"), get(&whole, "connections")) < 0.10,
        "connections: merged {merged} vs whole {whole}"
    );
    // http11 keeps one connection per UE until the server closes it: at
    // least one per UE that sent anything, far fewer than GETs.
    assert!(get(&merged, "connections") < get(&merged, "gets"));

    // Teardown leaves nothing running in any namespace.
    let inodes: Vec<u64> = std::iter::once(&server)
        .chain(clients.iter())
        .map(|h| h.ns.inode())
        .collect();
    drop(clients);
    drop(server);
    for i in inodes {
        assert!(
            ns::processes_in_netns(i).is_empty(),
            "processes left in net:[{i}]"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}
