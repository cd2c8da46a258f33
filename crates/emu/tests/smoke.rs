use pagewire_emu::{Link, LinkConfig};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

#[test]
fn smoke() {
    let link = Link::start(LinkConfig::profile("wan").unwrap()).unwrap();
    let addr = link.server_addr();
    let l = link
        .run_in_server(move || TcpListener::bind((addr, 0)))
        .unwrap()
        .unwrap();
    let port = l.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.write_all(&vec![7u8; 200_000]).unwrap();
    });
    link.begin_run(Some("/tmp/pw-smoke.pcap".as_ref())).unwrap();
    let got = link
        .run_in_client(move || {
            let t0 = Instant::now();
            let mut c = TcpStream::connect((addr, port)).unwrap();
            let ct = t0.elapsed();
            let mut v = Vec::new();
            c.read_to_end(&mut v).unwrap();
            (ct, v.len(), t0.elapsed())
        })
        .unwrap();
    t.join().unwrap();
    let c = link.end_run().unwrap();
    eprintln!("{got:?}\n{}", serde_json::to_string_pretty(&c).unwrap());
}
