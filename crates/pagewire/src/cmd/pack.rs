//! `pagewire pack`: write one page and the objects it embeds as an object
//! package (docs/objpack.md).
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use pagewire_objpack::{page_package, Limits};
use pagewire_site::store::{LoadOptions, Site};

#[derive(clap::Args)]
pub struct Args {
    /// The site's root directory.
    #[arg(long)]
    pub root: PathBuf,
    /// The page, as a path on the site: `/`, `/index.html`, `/a/b.html`.
    #[arg(long, default_value = "/")]
    pub page: String,
    /// Where to write the package (`-` for stdout). Written to a temporary
    /// name and renamed, so it appears whole or not at all. (`--out` is
    /// an alias: every other `--out` names a directory.)
    #[arg(long = "out-file", alias = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// Print what was packed as one JSON object on stdout (not with
    /// `--out-file -`, whose package is stdout).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.json && args.out.as_os_str() == "-" {
        crate::usage_bail!(
            "--json with --out-file -: the package is written to stdout; write it to a file"
        );
    }
    let site = Site::from_dir_with(
        &args.root,
        &LoadOptions {
            no_compression: true,
            ..LoadOptions::default()
        },
    )
    .with_context(|| format!("loading {}", args.root.display()))?;
    let page = if args.page.starts_with('/') {
        args.page.clone()
    } else {
        format!("/{}", args.page)
    };
    let pkg = page_package(&site, &page, &Limits::default())?;
    let bytes = pkg.assemble(&site);
    if args.out.as_os_str() == "-" {
        std::io::stdout().lock().write_all(&bytes)?;
    } else {
        let dir = args
            .out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        // Mode 0666 before the umask, as for any file a command creates
        // (tempfile's default, 0600, is for secrets; a package is not one).
        let mut tmp = tempfile::Builder::new()
            .permissions(
                <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o666),
            )
            .tempfile_in(dir)
            .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
        tmp.write_all(&bytes)?;
        tmp.persist(&args.out)
            .map_err(|e| e.error)
            .with_context(|| format!("writing {}", args.out.display()))?;
    }
    let m = &pkg.manifest;
    if args.json {
        let doc = serde_json::json!({
            "out": args.out.display().to_string(),
            "page": page,
            "files": m.entries().len(),
            "package_bytes": m.package_bytes(),
            "head_bytes": m.head().len(),
            "data_bytes": m.data_bytes(),
            "entries": m.entries().iter().map(|e| serde_json::json!({
                "name": e.name, "size": e.size
            })).collect::<Vec<_>>(),
            "not_packed": pkg.missing,
        });
        println!("{doc}");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "packed {} files, {} bytes ({} header and table, {} data)",
        m.entries().len(),
        m.package_bytes(),
        m.head().len(),
        m.data_bytes()
    );
    for url in &pkg.missing {
        eprintln!("not packed (other server or not in the site): {url}");
    }
    Ok(ExitCode::SUCCESS)
}
