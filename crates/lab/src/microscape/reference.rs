//! Paper 001's published measurements, transcribed as data.
//!
//! Nielsen et al., "Network Performance Effects of HTTP/1.1, CSS1, and PNG",
//! W3C NOTE-pipelining-970624 / SIGCOMM '97. Tables 4-9: means of 5 runs of
//! the libwww robot against Jigsaw 1.06 and Apache 1.2b10; Pa = packets,
//! Bytes = TCP payload bytes (headers excluded: the paper's %ov equals
//! 40·Pa / (Bytes + 40·Pa) in every cell, see docs/bench.md), Sec = seconds,
//! %ov = share of the bytes on the wire that are TCP/IP headers. Table 3: the initial (pre-tuning) Jigsaw LAN
//! revalidation test with socket counts. The paper did not run HTTP/1.0 on
//! PPP (Tables 8 and 9 have no HTTP/1.0 row).

use crate::model::{Net, Strategy, Test};

/// The two servers the paper measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    Jigsaw,
    Apache,
}

impl Server {
    pub fn name(self) -> &'static str {
        match self {
            Server::Jigsaw => "Jigsaw",
            Server::Apache => "Apache",
        }
    }
}

/// One cell group of Tables 4-9.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    pub table: u8,
    pub server: Server,
    pub net: Net,
    pub strategy: Strategy,
    pub test: Test,
    pub packets: f64,
    pub bytes: f64,
    pub seconds: f64,
    pub overhead_pct: f64,
}

use Net::*;
use Server::*;
use Strategy::*;
use Test::*;

macro_rules! rows {
    ($( $t:literal $srv:ident $net:ident $st:ident : $pa:literal $by:literal $sec:literal $ov:literal | $pa2:literal $by2:literal $sec2:literal $ov2:literal ;)*) => {
        &[ $(
            Reference { table: $t, server: $srv, net: $net, strategy: $st, test: First,
                        packets: $pa, bytes: $by, seconds: $sec, overhead_pct: $ov },
            Reference { table: $t, server: $srv, net: $net, strategy: $st, test: Revalidate,
                        packets: $pa2, bytes: $by2, seconds: $sec2, overhead_pct: $ov2 },
        )* ]
    };
}

/// Tables 4-9, every row, first-time then cache validation.
pub const TABLES_4_TO_9: &[Reference] = rows! {
    // Table 4 - Jigsaw - High Bandwidth, Low Latency
    4 Jigsaw Lan Http10:          510.2 216289.0 0.97 8.6 | 374.8 61117.0 0.78 19.7;
    4 Jigsaw Lan Http11:          281.0 191843.0 1.25 5.5 | 133.4 17694.0 0.89 23.2;
    4 Jigsaw Lan Pipeline:        181.8 191551.0 0.68 3.7 |  32.8 17694.0 0.54 6.9;
    4 Jigsaw Lan PipelineDeflate: 148.8 159654.0 0.71 3.6 |  32.6 17687.0 0.54 6.9;
    // Table 5 - Apache - High Bandwidth, Low Latency
    5 Apache Lan Http10:          489.4 215536.0 0.72 8.3 | 365.4 60605.0 0.41 19.4;
    5 Apache Lan Http11:          244.2 189023.0 0.81 4.9 |  98.4 14009.0 0.40 21.9;
    5 Apache Lan Pipeline:        175.8 189607.0 0.49 3.6 |  29.2 14009.0 0.23 7.7;
    5 Apache Lan PipelineDeflate: 139.8 156834.0 0.41 3.4 |  28.4 14002.0 0.23 7.5;
    // Table 6 - Jigsaw - High Bandwidth, High Latency
    6 Jigsaw Wan Http10:          565.8 251913.0 4.17 8.2 | 389.2 62348.0 2.96 20.0;
    6 Jigsaw Wan Http11:          304.0 193595.0 6.64 5.9 | 137.0 18065.6 4.95 23.3;
    6 Jigsaw Wan Pipeline:        214.2 193887.0 2.33 4.2 |  34.8 18233.2 1.10 7.1;
    6 Jigsaw Wan PipelineDeflate: 183.2 161698.0 2.09 4.3 |  35.4 19102.2 1.15 6.9;
    // Table 7 - Apache - High Bandwidth, High Latency
    7 Apache Wan Http10:          559.6 248655.2 4.09 8.3 | 370.0 61887.0 2.64 19.3;
    7 Apache Wan Http11:          309.4 191436.0 6.14 6.1 | 104.2 14255.0 4.43 22.6;
    7 Apache Wan Pipeline:        221.4 191180.6 2.23 4.4 |  29.8 15352.0 0.86 7.2;
    7 Apache Wan PipelineDeflate: 182.0 159170.0 2.11 4.4 |  29.0 15088.0 0.83 7.2;
    // Table 8 - Jigsaw - Low Bandwidth, High Latency (no HTTP/1.0 row)
    8 Jigsaw Ppp Http11:          309.6 190687.0 63.8 6.1 |  89.2 17528.0 12.9 16.9;
    8 Jigsaw Ppp Pipeline:        284.4 190735.0 53.3 5.6 |  31.0 17598.0 5.4 6.6;
    8 Jigsaw Ppp PipelineDeflate: 234.2 159449.0 47.4 5.5 |  31.0 17591.0 5.4 6.6;
    // Table 9 - Apache - Low Bandwidth, High Latency (no HTTP/1.0 row)
    9 Apache Ppp Http11:          308.6 187869.0 65.6 6.2 |  89.0 13843.0 11.1 20.5;
    9 Apache Ppp Pipeline:        281.4 187918.0 53.4 5.7 |  26.0 13912.0 3.4 7.0;
    9 Apache Ppp PipelineDeflate: 233.0 157214.0 47.2 5.6 |  26.0 13905.0 3.4 7.0;
};

/// The table number for a server and network (Tables 4-9); None for a
/// network paper 001 did not measure.
pub fn table_number(server: Server, net: Net) -> Option<u8> {
    Some(match (server, net) {
        (Jigsaw, Lan) => 4,
        (Apache, Lan) => 5,
        (Jigsaw, Wan) => 6,
        (Apache, Wan) => 7,
        (Jigsaw, Ppp) => 8,
        (Apache, Ppp) => 9,
        _ => return None,
    })
}

/// The paper's value for one cell, if it measured it.
pub fn lookup(
    server: Server,
    net: Net,
    strategy: Strategy,
    test: Test,
) -> Option<&'static Reference> {
    TABLES_4_TO_9
        .iter()
        .find(|r| r.server == server && r.net == net && r.strategy == strategy && r.test == test)
}

/// One browser row of Tables 10 and 11 (PPP only: "Low Bandwidth, High
/// Latency"; means of 3 runs): first-time retrieval, then cache validation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrowserRow {
    pub table: u8,
    pub server: Server,
    /// As the paper's row names it (Table 2: Netscape Communicator 4.0
    /// beta 5, Microsoft Internet Explorer 4.0 beta 1, on Windows NT).
    pub browser: &'static str,
    pub test: Test,
    pub packets: f64,
    /// TCP payload, as Tables 4-9.
    pub bytes: f64,
    pub seconds: f64,
    pub overhead_pct: f64,
}

macro_rules! browser_rows {
    ($( $t:literal $srv:ident $name:literal : $pa:literal $by:literal $sec:literal $ov:literal | $pa2:literal $by2:literal $sec2:literal $ov2:literal ;)*) => {
        &[ $(
            BrowserRow { table: $t, server: $srv, browser: $name, test: First,
                         packets: $pa, bytes: $by, seconds: $sec, overhead_pct: $ov },
            BrowserRow { table: $t, server: $srv, browser: $name, test: Revalidate,
                         packets: $pa2, bytes: $by2, seconds: $sec2, overhead_pct: $ov2 },
        )* ]
    };
}

/// Tables 10 (Jigsaw) and 11 (Apache): Netscape Navigator and Internet
/// Explorer of 1997 over the 28.8k PPP link, every row.
pub const TABLES_10_11: &[BrowserRow] = browser_rows! {
    10 Jigsaw "Netscape Navigator" : 339.4 201807.0 58.8 6.3 | 108.0 19282.0 14.9 18.3;
    10 Jigsaw "Internet Explorer" : 360.3 199934.0 63.0 6.7 | 301.0 61009.0 17.0 16.5;
    11 Apache "Netscape Navigator" : 334.3 199243.0 58.7 6.3 | 103.3 23741.0 5.9 14.8;
    11 Apache "Internet Explorer" : 381.3 204219.0 60.6 6.9 | 117.0 23056.0 8.3 16.9;
};

/// Table 3 - Jigsaw - Initial High Bandwidth, Low Latency Cache Revalidation
/// Test (before buffer tuning; 1 s flush timer; HTTP/1.0 with HEADs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Table3Row {
    pub strategy: Strategy,
    pub max_sockets: u32,
    pub total_sockets: u32,
    pub packets_client_to_server: u32,
    pub packets_server_to_client: u32,
    pub packets_total: u32,
    pub seconds: f64,
}

pub const TABLE_3: [Table3Row; 3] = [
    Table3Row {
        strategy: Http10,
        max_sockets: 6,
        total_sockets: 40,
        packets_client_to_server: 226,
        packets_server_to_client: 271,
        packets_total: 497,
        seconds: 1.85,
    },
    Table3Row {
        strategy: Http11,
        max_sockets: 1,
        total_sockets: 1,
        packets_client_to_server: 70,
        packets_server_to_client: 153,
        packets_total: 223,
        seconds: 4.13,
    },
    Table3Row {
        strategy: Pipeline,
        max_sockets: 1,
        total_sockets: 1,
        packets_client_to_server: 25,
        packets_server_to_client: 58,
        packets_total: 83,
        seconds: 3.02,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_complete() {
        for server in [Jigsaw, Apache] {
            for net in Net::PAPER {
                for st in Strategy::PAPER_001 {
                    for test in Test::ALL {
                        let r = lookup(server, net, st, test);
                        // The paper has no HTTP/1.0 row on PPP.
                        assert_eq!(
                            r.is_some(),
                            !(net == Ppp && st == Http10),
                            "{server:?} {net} {st} {test}"
                        );
                        if let Some(r) = r {
                            assert_eq!(Some(r.table), table_number(server, net));
                        }
                    }
                }
            }
        }
        assert_eq!(TABLES_4_TO_9.len(), 2 * (4 + 4 + 3) * 2);
    }

    /// Tables 10-11 transcribed: four rows per table, and every cell's %ov
    /// is the paper's 40·Pa / (Bytes + 40·Pa) to its printed digit.
    #[test]
    fn browser_tables_are_consistent() {
        assert_eq!(TABLES_10_11.len(), 8);
        for r in TABLES_10_11 {
            let ov = 100.0 * 40.0 * r.packets / (r.bytes + 40.0 * r.packets);
            assert!((ov - r.overhead_pct).abs() <= 0.051, "{r:?}: {ov}");
            assert_eq!(r.table, if r.server == Jigsaw { 10 } else { 11 });
        }
    }

    #[test]
    fn table_3_rows_add_up() {
        for r in TABLE_3 {
            assert_eq!(
                r.packets_client_to_server + r.packets_server_to_client,
                r.packets_total
            );
        }
    }
}
