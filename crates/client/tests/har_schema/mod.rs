//! Every HAR these tests write is HAR 1.2 (docs/schemas/har-1.2.schema.json)
//! with `time` equal to the sum of its timings.

use serde_json::Value;

pub fn check(har: &Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schemas/har-1.2.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler
        .add_resource("har-1.2.schema.json", schema)
        .expect("the schema is a JSON document");
    let idx = compiler
        .compile("har-1.2.schema.json", &mut schemas)
        .unwrap_or_else(|e| panic!("the HAR schema compiles: {e:#}"));
    if let Err(e) = schemas.validate(har, idx) {
        panic!("HAR 1.2:\n{e:#}");
    }
    for (i, e) in har["log"]["entries"].as_array().unwrap().iter().enumerate() {
        let t = &e["timings"];
        let sum: f64 = ["blocked", "dns", "connect", "send", "wait", "receive"]
            .iter()
            .map(|k| t[*k].as_f64().unwrap_or(-1.0).max(0.0))
            .sum();
        let time = e["time"].as_f64().unwrap();
        assert!(
            (time - sum).abs() < 1e-6 * time.max(1.0),
            "entry {i}: time {time} != sum of timings {sum}: {t}"
        );
    }
}
