//! Lifecycle: commands run inside the namespaces with the address
//! variables; concurrent links do not collide; nothing of ours is left
//! after a link is dropped, also when a test panics inside it.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use pagewire_emu::ns::processes_in_netns;

/// True if anything on the system still refers to network namespace
/// `inode`: a process or thread in it, or an open fd to it.
fn netns_referenced(inode: u64) -> bool {
    let want = format!("net:[{inode}]");
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    for p in procs.flatten() {
        if p.file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
            .is_none()
        {
            continue;
        }
        if let Ok(tasks) = std::fs::read_dir(p.path().join("task")) {
            for t in tasks.flatten() {
                if std::fs::read_link(t.path().join("ns/net"))
                    .is_ok_and(|l| l.as_os_str() == want.as_str())
                {
                    return true;
                }
            }
        }
        if let Ok(fds) = std::fs::read_dir(p.path().join("fd")) {
            for f in fds.flatten() {
                if std::fs::read_link(f.path()).is_ok_and(|l| l.as_os_str() == want.as_str()) {
                    return true;
                }
            }
        }
    }
    false
}

fn pid_alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped by its parent) is not running.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            let state = s[s.rfind(')').unwrap() + 2..].chars().next();
            state != Some('Z') && state != Some('X')
        })
        .unwrap_or(false)
}

#[test]
fn commands_see_their_namespace_and_addresses() {
    if !can_run() {
        return;
    }
    let link = start(profile("lan"));
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "echo $PAGEWIRE_SERVER_ADDR $PAGEWIRE_CLIENT_ADDR; {} -4 -o addr show dev pw0",
            pagewire_emu::ns::ip_binary()
        ))
        .stdout(Stdio::piped());
    let mut child = link.spawn_in_server(cmd).unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(out.starts_with("198.18.0.2 198.18.0.1\n"), "{out}");
    assert!(out.contains("inet 198.18.0.2/24"), "{out}");
    // The client side sees its own namespace: one pw0, no host devices.
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("grep -c ':' /proc/net/dev; grep -c pw0 /proc/net/dev")
        .stdout(Stdio::piped());
    let out = link
        .spawn_in_client(cmd)
        .unwrap()
        .wait_with_output()
        .unwrap();
    // lo and pw0 only.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2\n1");
}

#[test]
fn concurrent_links_do_not_collide() {
    if !can_run() {
        return;
    }
    let handles: Vec<_> = (0..3)
        .map(|i| {
            std::thread::spawn(move || {
                let link = start(profile("lan"));
                let listener = listen(&link);
                let port = listener.local_addr().unwrap().port();
                let data = payload(30_000 + i);
                let server = serve(listener, data.clone(), 1);
                link.begin_run(None).unwrap();
                let d = download(&link, port, 0);
                server.join().unwrap();
                let c = link.end_run_now().unwrap();
                assert!(d.data == data);
                assert_eq!(c.connections_opened, 1);
                link.netns_inodes()
            })
        })
        .collect();
    let mut inodes: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| {
            let (a, b) = h.join().unwrap();
            [a, b]
        })
        .collect();
    inodes.sort();
    inodes.dedup();
    assert_eq!(inodes.len(), 6);
}

// The children are deliberately never waited for: the panic unwinds past
// them, and the link's Drop must kill them anyway.
#[allow(clippy::zombie_processes)]
#[test]
fn nothing_left_after_a_panic_inside_a_link() {
    if !can_run() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let link = start(profile("wan"));
        // A direct child, and a grandchild that leaves the process group.
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("setsid sleep 300 & echo $!; exec sleep 300")
            .stdout(Stdio::piped());
        let mut child = link.spawn_in_server(cmd).unwrap();
        let mut line = [0u8; 16];
        let n = child.stdout.as_mut().unwrap().read(&mut line).unwrap();
        let grandchild: u32 = String::from_utf8_lossy(&line[..n]).trim().parse().unwrap();
        let client_child = link
            .spawn_in_client({
                let mut c = Command::new("sleep");
                c.arg("300");
                c
            })
            .unwrap();
        tx.send((
            link.netns_inodes(),
            vec![child.id(), client_child.id(), grandchild],
        ))
        .unwrap();
        link.run_in_client(|| panic!("deliberate panic inside the link"))
            .unwrap();
    }));
    assert!(result.is_err(), "the closure's panic propagates");
    let ((c, s), pids) = rx.recv().unwrap();
    // Dropping the link during unwinding killed everything and released
    // the namespaces (the kernel frees them asynchronously: allow 2 s).
    for _ in 0..200 {
        if !pids.iter().any(|&p| pid_alive(p)) && !netns_referenced(c) && !netns_referenced(s) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for p in &pids {
        assert!(!pid_alive(*p), "process {p} survived the link");
    }
    assert!(processes_in_netns(c).is_empty() && processes_in_netns(s).is_empty());
    assert!(!netns_referenced(c), "client namespace still referenced");
    assert!(!netns_referenced(s), "server namespace still referenced");
}

#[test]
fn leftovers_of_a_crashed_run_are_removed_at_next_start() {
    if !can_run() {
        return;
    }
    // A process left behind by a link owner that no longer runs (pid 1 with
    // a start time it never had stands for the dead owner).
    let mut orphan = Command::new("sleep")
        .arg("300")
        .env("PAGEWIRE_LINK_OWNER", "1.999999999999")
        .spawn()
        .unwrap();
    // One whose owner is alive (this process) is left alone.
    let mut alive = Command::new("sleep")
        .arg("300")
        .env("PAGEWIRE_LINK_OWNER", pagewire_emu::owner_token())
        .spawn()
        .unwrap();
    let _link = start(profile("none"));
    let status = orphan.wait().unwrap();
    assert!(!status.success(), "the orphan was killed");
    assert!(
        alive.try_wait().unwrap().is_none(),
        "a live owner's process survives"
    );
    alive.kill().unwrap();
    alive.wait().unwrap();
}
