//! The expected-time model ([`crate::expect`]) beside a getall results.json
//! (Padmanabhan & Mogul, "Improving HTTP Latency", section 6): each cell's
//! page ([`Page::getall`]: N images of one size, with the pagewire
//! server's heads), the robot as the suite configures it (one connection
//! at a time for HTTP/1.0, the pipelined requests flushed at the page's
//! end, the imitated 1994 host costs where the run had them), and the
//! strategy's round-trip structure; the load time predicted beside the
//! measured one. The suite records load times only, so packets and bytes
//! are predicted and not compared.

use anyhow::{anyhow, Context, Result};
use serde_json::Value;

use crate::expect::suites::{errors, SuiteCell, SuiteEval};
use crate::expect::{predict, Client, Cost, Inputs, LinkSpec, Page};
use crate::model::Test;

use super::{Hosts, Method, HOSTS_1994_PER_CONNECTION, HOSTS_1994_PER_OBJECT};

/// What "seconds" is in this suite's evaluation.
pub const SECONDS: &str =
    "the load time: the robot's start to the last byte of the last object (mean of the repetitions)";

/// The robot's strategy for a method of the suite.
pub fn strategy_of(m: Method) -> pagewire_client::Strategy {
    use pagewire_client::Strategy as S;
    match m {
        Method::Http10 => S::Http10,
        Method::Persistent => S::Http11,
        Method::Pipelined => S::Pipeline,
        Method::Getall => S::Getall,
        Method::Objpack => S::Objpack,
    }
}

/// The robot's mean request bytes on a page of `n` images of `size`
/// bytes: `GET path HTTP/1.1`, `Host` (the server's address and port 80,
/// `198.18.0.2:80`), `User-Agent: pagewire/VERSION` (the suite's
/// `minimal` request profile), and the field the method adds to the page
/// request (`Getall: 1`, or `Accept` for the package).
pub fn request_bytes(m: Method, size: usize, n: usize) -> f64 {
    let one = |path: &str, extra: &str| {
        format!(
            "GET {path} HTTP/1.1\r\nHost: 198.18.0.2:80\r\n{extra}User-Agent: pagewire/{}\r\n\r\n",
            env!("CARGO_PKG_VERSION")
        )
        .len() as f64
    };
    let page_extra = match m {
        Method::Getall => "Getall: 1\r\n".to_string(),
        Method::Objpack => format!("Accept: {}\r\n", pagewire_objpack::MEDIA_TYPE),
        _ => String::new(),
    };
    let mut total = one(&format!("/s{size}/p{n}.html"), &page_extra);
    let mut count = 1.0;
    if !matches!(m, Method::Getall | Method::Objpack) {
        for k in 0..n {
            total += one(&format!("/s{size}/i{k}.gif"), "");
            count += 1.0;
        }
    }
    total / count
}

/// Puts the model beside every cell of a getall results.json.
pub fn eval_value(v: &Value, server_s: f64) -> Result<SuiteEval> {
    let links = v
        .pointer("/provenance/link_configs")
        .and_then(Value::as_object)
        .context("results.json has no provenance.link_configs")?;
    let hosts = match v.pointer("/plan/hosts").and_then(Value::as_str) {
        Some("1994") => Hosts::Y1994,
        _ => Hosts::None,
    };
    let (per_connection_s, per_object_s) = match hosts {
        Hosts::Y1994 => (
            HOSTS_1994_PER_CONNECTION.as_secs_f64(),
            HOSTS_1994_PER_OBJECT.as_secs_f64(),
        ),
        Hosts::None => (0.0, 0.0),
    };
    let cells = v
        .get("cells")
        .and_then(Value::as_array)
        .context("results.json has no cells")?;
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    let mut flagged = 0;
    for (i, c) in cells.iter().enumerate() {
        if c.pointer("/link_lateness/flagged").and_then(Value::as_bool) == Some(true) {
            flagged += 1;
            continue;
        }
        let bad = || anyhow!("cell {i} lacks net, size, images, method or load_s");
        let net = c.get("net").and_then(Value::as_str).ok_or_else(bad)?;
        let size = c.get("size").and_then(Value::as_u64).ok_or_else(bad)? as usize;
        let images = c.get("images").and_then(Value::as_u64).ok_or_else(bad)? as usize;
        let name = c.get("method").and_then(Value::as_str).ok_or_else(bad)?;
        let method: Method = name.parse().map_err(|e: String| anyhow!("cell {i}: {e}"))?;
        let measured_s = c
            .pointer("/load_s/mean")
            .and_then(Value::as_f64)
            .ok_or_else(bad)?;
        let runs = c.pointer("/load_s/n").and_then(Value::as_u64).unwrap_or(0) as usize;
        let link = LinkSpec::from_config(
            links
                .get(net)
                .with_context(|| format!("no link configuration for {net}"))?,
        )?;
        let page = Page::getall(size, images);
        let inp = Inputs {
            page: &page,
            link,
            client: Client {
                request_bytes: request_bytes(method, size, images),
                one_at_a_time: true,
                flush_at_page_end: true,
                per_connection_s,
                per_object_s,
                ..Client::default()
            },
            server_s,
        };
        let p = predict(&inp, strategy_of(method), Test::First);
        let measured = Cost {
            packets: f64::NAN,
            bytes: f64::NAN,
            payload: f64::NAN,
            seconds: measured_s,
        };
        out.push(SuiteCell {
            net: net.to_string(),
            method: method.name().to_string(),
            group_kb: None,
            sets: None,
            size: Some(size),
            images: Some(images),
            runs,
            measured,
            predicted: p.predicted,
            lower_bound_s: p.lower_bound_s,
            lower_bound_round_trips: p.lower_bound_round_trips,
            breakdown: p.breakdown,
            error_pct: errors(&p.predicted, &measured),
            client: None,
        });
    }
    if flagged > 0 {
        skipped.push(format!(
            "{flagged} cells flagged for link lateness (left out, as the claims leave them out)"
        ));
    }
    Ok(SuiteEval::new("getall", SECONDS, server_s, out, skipped))
}

/// The model's word on the contradicted claims of a getall results.json
/// (`claims`: as judged on it): every cell's mean load time replaced by
/// the model's (its spread and repetitions kept), judged again.
pub fn model_notes(
    v: &Value,
    claims: &[crate::claims::Claim],
) -> Vec<crate::claims::model_column::ModelNote> {
    use crate::claims::model_column::notes_on;
    if !claims
        .iter()
        .any(|c| c.verdict == crate::claims::Verdict::Contradicted)
    {
        return Vec::new();
    }
    let eval = match eval_value(v, 0.0) {
        Ok(e) => e,
        Err(e) => {
            return notes_on(
                claims,
                None,
                &format!("the model cannot read these cells: {e}"),
            )
        }
    };
    let mut m = v.clone();
    if let Some(cells) = m.get_mut("cells").and_then(Value::as_array_mut) {
        cells.retain_mut(|c| {
            let hit = eval.cells.iter().find(|e| {
                c.get("net").and_then(Value::as_str) == Some(e.net.as_str())
                    && c.get("size").and_then(Value::as_u64) == e.size.map(|x| x as u64)
                    && c.get("images").and_then(Value::as_u64) == e.images.map(|x| x as u64)
                    && c.get("method").and_then(Value::as_str) == Some(e.method.as_str())
            });
            match (hit, c.pointer_mut("/load_s/mean")) {
                (Some(e), Some(slot)) => {
                    *slot = serde_json::json!(e.predicted.seconds);
                    true
                }
                _ => false,
            }
        });
    }
    match super::claims::judge_value(&m) {
        Ok(j) => notes_on(claims, Some(&j.claims), ""),
        Err(e) => notes_on(
            claims,
            None,
            &format!("the model's cells cannot be judged: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of N images is the suite's page: its HTML names every image
    /// once, in order, and each image is `size` bytes.
    #[test]
    fn the_page_is_the_suites_page() {
        let p = Page::getall(2544, 10);
        assert_eq!(p.images.len(), 10);
        assert!(p.images.iter().all(|o| o.body == 2544));
        assert!(p.images.windows(2).all(|w| w[0].ref_end < w[1].ref_end));
        assert!(p.images[9].ref_end <= p.html.body);
        // GETALL and the package send one request; the others 11.
        assert!(request_bytes(Method::Getall, 2544, 10) > request_bytes(Method::Http10, 2544, 0));
    }

    /// On the remote link, HTTP/1.0 one connection at a time costs two
    /// round trips per object and GETALL two in all: with 10 small images
    /// the model's GETALL saves more than half, as the round trips say.
    #[test]
    fn remote_round_trips() {
        let link = serde_json::json!({"rtt_ms": 70.0, "down_rate": 1544000.0, "up_rate": 1544000.0, "mtu": 1500});
        let v = serde_json::json!({
            "provenance": {"link_configs": {"remote": link}},
            "plan": {"hosts": "none"},
            "cells": [
                {"net": "remote", "size": 2544, "images": 10, "method": "http10", "load_s": {"mean": 1.6, "sd": 0.0, "n": 3}},
                {"net": "remote", "size": 2544, "images": 10, "method": "getall", "load_s": {"mean": 0.35, "sd": 0.0, "n": 3}},
            ]
        });
        let e = eval_value(&v, 0.0).unwrap();
        let (h, g) = (&e.cells[0], &e.cells[1]);
        // 11 objects x 2 RTT = 1.54 s of round trips at least.
        assert!(h.predicted.seconds > 1.54, "{}", h.predicted.seconds);
        assert!(h.lower_bound_s <= h.predicted.seconds);
        assert!(
            g.predicted.seconds < 0.5 * h.predicted.seconds,
            "{}",
            g.predicted.seconds
        );
        assert_eq!(e.scopes[0].cells, 2);
    }

    /// On every committed getall run (today's hosts, `--tcp 1997`, the
    /// 1994 hosts), no cell is predicted below its own lower bound.
    #[test]
    fn committed_runs_are_never_predicted_below_their_bound() {
        for dir in [
            "",
            "/rerun-2026-11-26",
            "/tcp1997",
            "/hosts1994",
            "/hosts1994-quick",
        ] {
            let path = format!(
                "{}/../../docs/getall-results{dir}/results.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let e = eval_value(&v, 0.0).unwrap();
            assert!(e.cells.len() >= 40, "{path}: {}", e.cells.len());
            for c in &e.cells {
                assert!(
                    c.predicted.seconds >= c.lower_bound_s - 1e-9,
                    "{path} {}: {} < {}",
                    c.label(),
                    c.predicted.seconds,
                    c.lower_bound_s
                );
            }
        }
    }
}
