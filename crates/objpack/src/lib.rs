#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod attrs;
mod name;
mod reader;
mod writer;

pub mod unpack;

pub use attrs::{Attributes, ATTR_BYTES, ETAG_FIELD_BYTES, MEDIA_TYPE_FIELD_BYTES};
pub use name::{check_name, NameError, TEMP_PREFIX};
pub use reader::{Event, Reader, Step};
pub use writer::{Entry, Manifest};

/// The registered media type of an object package (`application/vnd.*` tree,
/// RFC 6838 §3.2; not registered with IANA).
pub const MEDIA_TYPE: &str = "application/vnd.pagewire.objpack";

/// File name extension of a package on disk (the paper: "Object packages
/// should be recognized by a specific file extension").
pub const EXTENSION: &str = "objp";

/// First four bytes of every package.
pub const MAGIC: [u8; 4] = *b"OBJP";

/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;

/// Length of the fixed header before the object information field.
pub const HEADER_BYTES: usize = 16;

/// Bytes per file in the size subfield.
pub const SIZE_BYTES: usize = 8;

/// Bounds a reader enforces before it allocates or writes anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most files in one package.
    pub max_files: u32,
    /// Longest file name in bytes (without its NUL).
    pub max_name_bytes: usize,
    /// Largest object information field; the reader holds it in memory
    /// while it checks the CRC, so this bounds the reader's memory.
    pub max_info_bytes: u32,
    /// Largest single file.
    pub max_file_bytes: u64,
    /// Largest sum of all file sizes.
    pub max_total_bytes: u64,
}

impl Default for Limits {
    /// 10,000 files of up to 1 KiB names (a page with more embedded objects
    /// than that is not a page), a 4 MiB table, 4 GiB per file and 64 GiB
    /// in all: far above any web page, low enough that a hostile header
    /// cannot make a reader allocate much.
    fn default() -> Self {
        Limits {
            max_files: 10_000,
            max_name_bytes: 1024,
            max_info_bytes: 4 << 20,
            max_file_bytes: 4 << 30,
            max_total_bytes: 64 << 30,
        }
    }
}

/// Why a package was refused. Every error that concerns one file names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("not an object package (bad magic)")]
    BadMagic,
    #[error("unsupported object package version {0} (this reader knows {VERSION})")]
    UnsupportedVersion(u16),
    #[error("unknown header flags {0:#06x}")]
    UnknownFlags(u16),
    #[error("object information field is {got} bytes, the limit is {limit}")]
    InfoTooLarge { got: u32, limit: u32 },
    #[error("object information field fails its CRC-32 (header {expected:#010x}, computed {computed:#010x})")]
    BadChecksum { expected: u32, computed: u32 },
    #[error("package holds {got} files, the limit is {limit}")]
    TooManyFiles { got: u32, limit: u32 },
    #[error("object information field is malformed: {0}")]
    BadInfo(&'static str),
    #[error("file #{index}: bad name: {reason}")]
    BadName { index: u32, reason: NameError },
    #[error("file {name:?} appears twice")]
    DuplicateName { name: String },
    #[error("file {name:?} is also a directory of another file")]
    NameConflict { name: String },
    #[error("files {name:?} and {other:?} differ only in case (one file on a case-insensitive file system)")]
    CaseCollision { name: String, other: String },
    #[error("the package's events were not all read (the caller stopped before the end)")]
    Undrained,
    #[error("file {name:?} is {size} bytes, the limit is {limit}")]
    FileTooLarge { name: String, size: u64, limit: u64 },
    #[error("files total more than {limit} bytes")]
    TotalTooLarge { limit: u64 },
    #[error("file {name:?}: bad attributes: {reason}")]
    BadAttributes { name: String, reason: &'static str },
    #[error("package is truncated in its header")]
    TruncatedHeader,
    #[error("package is truncated in file {name:?} ({got} of {size} bytes)")]
    Truncated { name: String, got: u64, size: u64 },
    #[error("{0} bytes after the last file")]
    TrailingData(usize),
}

impl Error {
    /// The file this error is about, if one.
    pub fn file(&self) -> Option<&str> {
        match self {
            Error::DuplicateName { name }
            | Error::NameConflict { name }
            | Error::CaseCollision { name, .. }
            | Error::FileTooLarge { name, .. }
            | Error::BadAttributes { name, .. }
            | Error::Truncated { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// CRC-32 (IEEE 802.3 polynomial, as in zlib and PNG) of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

#[cfg(feature = "site")]
pub mod page;
#[cfg(feature = "site")]
pub use page::{page_package, PagePackage};
