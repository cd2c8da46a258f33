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
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
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
