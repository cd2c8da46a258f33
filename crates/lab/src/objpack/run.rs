//! Runs the matrix: per network one emulated link, the paper's server in
//! the server namespace (one thread, one run at a time), the paper's client
//! in the client namespace; the link counts packets and bytes per run.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use pagewire_emu::{Link, LinkConfig};
use serde::Serialize;

use super::files::{self, FileSet};
use super::methods::{self, ClientMeasure, Method, ServerMeasure};

/// Port of the bench server inside the server namespace.
pub const PORT: u16 = 8002;

/// Link configuration for a profile name (the profile plus overrides).
pub type LinkFactory = Box<dyn Fn(&str) -> Result<LinkConfig>>;

pub struct ObjpackConfig {
    /// Networks by profile name (`lan100`, `wan`, ...), each with its sets.
    pub nets: Vec<(String, usize)>,
    pub methods: Vec<Method>,
    pub seed: u64,
    pub out_dir: PathBuf,
    pub link_config: LinkFactory,
    pub progress: bool,
}

/// One run: one set of 100 files moved by one method over one network.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub net: String,
    pub group_kb: usize,
    pub set: usize,
    pub method: Method,
    pub server: ServerMeasure,
    pub client: ClientMeasure,
    pub packets: u64,
    pub bytes: u64,
    pub connections: u64,
    pub retransmissions: u64,
}

pub struct ObjpackOutcome {
    pub rows: Vec<RunRow>,
    pub wall_s: f64,
    /// Per group: (mean KB, min, median, max file size) over its sets.
    pub group_sizes: Vec<(usize, usize, usize, usize)>,
}

enum Cmd {
    Run(Method, FileSet),
    Stop,
}

pub fn run(cfg: &ObjpackConfig) -> Result<ObjpackOutcome> {
    let started = Instant::now();
    let max_sets = cfg.nets.iter().map(|n| n.1).max().unwrap_or(0);
    let sets = files::generate(&cfg.out_dir.join("files"), cfg.seed, max_sets)?;
    let mut group_sizes = Vec::new();
    for mean in files::GROUP_MEANS {
        let mut all: Vec<usize> = sets
            .iter()
            .filter(|s| s.group_mean == mean)
            .flat_map(|s| s.files.iter().map(|f| f.1))
            .collect();
        all.sort();
        if let (Some(&lo), Some(&hi)) = (all.first(), all.last()) {
            group_sizes.push((mean >> 10, lo, all[all.len() / 2], hi));
        }
    }
    let mut rows = Vec::new();
    crate::interrupt::install();
    for (net, nsets) in &cfg.nets {
        if crate::interrupt::signalled() {
            break;
        }
        let lc = (cfg.link_config)(net)?;
        let link = Link::start(lc).with_context(|| format!("start the {net} link"))?;
        let addr = SocketAddr::from((link.server_addr(), PORT));
        let (cmd_tx, cmd_rx) = mpsc::channel::<Cmd>();
        let (res_tx, res_rx) = mpsc::channel::<Result<ServerMeasure>>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let server = link.spawn_thread_in_server(move || {
            let listener = match TcpListener::bind(addr) {
                Ok(l) => {
                    let _ = ready_tx.send(Ok(()));
                    l
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow!("bind {addr}: {e}")));
                    return;
                }
            };
            while let Ok(Cmd::Run(m, set)) = cmd_rx.recv() {
                let _ = res_tx.send(methods::serve(&listener, m, &set));
            }
        })?;
        ready_rx
            .recv()
            .map_err(|_| anyhow!("bench server thread ended"))??;
        // Sets in order, methods interleaved within a set, so slow drifts
        // of the machine spread over every method alike.
        let todo: Vec<(&FileSet, Method)> = sets
            .iter()
            .filter(|s| s.index < *nsets)
            .flat_map(|s| cfg.methods.iter().map(move |&m| (s, m)))
            .collect();
        for (i, (set, m)) in todo.iter().enumerate() {
            if cfg.progress {
                eprint!(
                    "\r{net}: run {}/{} ({} KB set {} {})        ",
                    i + 1,
                    todo.len(),
                    set.group_mean >> 10,
                    set.index,
                    m.name()
                );
            }
            // Ctrl-C: the run in flight finishes (its transfer is short),
            // the rows so far are reported.
            if crate::interrupt::signalled() {
                break;
            }
            let _in_flight = crate::interrupt::InFlight::finishing();
            cmd_tx
                .send(Cmd::Run(*m, (*set).clone()))
                .map_err(|_| anyhow!("bench server thread ended"))?;
            link.begin_run(None)?;
            let set_c = (*set).clone();
            let m_c = *m;
            let client = link.run_in_client(move || methods::fetch(addr, m_c, &set_c))?;
            let server_m = res_rx
                .recv()
                .map_err(|_| anyhow!("bench server thread ended"))?;
            let counters = link.end_run()?;
            let client = client.with_context(|| {
                format!(
                    "{net} {} KB set {} {}",
                    set.group_mean >> 10,
                    set.index,
                    m.name()
                )
            })?;
            let server_m = server_m.with_context(|| {
                format!(
                    "server: {net} {} KB set {} {}",
                    set.group_mean >> 10,
                    set.index,
                    m.name()
                )
            })?;
            rows.push(RunRow {
                net: net.clone(),
                group_kb: set.group_mean >> 10,
                set: set.index,
                method: *m,
                server: server_m,
                client,
                packets: counters.packets_total,
                bytes: counters.bytes_total,
                connections: counters.connections_opened,
                retransmissions: counters.retransmissions,
            });
        }
        if cfg.progress {
            eprintln!();
        }
        let _ = cmd_tx.send(Cmd::Stop);
        drop(cmd_tx);
        let _ = server.join();
        drop(link);
    }
    Ok(ObjpackOutcome {
        rows,
        wall_s: started.elapsed().as_secs_f64(),
        group_sizes,
    })
}
