//! Building the header and object information field of a package.

use std::collections::HashSet;

use crate::{check_name, crc32, Attributes, Error, Limits, HEADER_BYTES, MAGIC, VERSION};

/// One file of a package: its relative name, size and attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub size: u64,
    pub attrs: Attributes,
}

/// The validated table of a package. The package is
/// [`Manifest::head`] followed by every file's bytes in table order.
#[derive(Debug, Clone)]
pub struct Manifest {
    entries: Vec<Entry>,
    head: Vec<u8>,
    data_bytes: u64,
}

impl Manifest {
    /// Checks `entries` against `limits` (the same checks a [`crate::Reader`]
    /// makes, so whatever is written here can be read back) and encodes the
    /// header and object information field.
    pub fn new(entries: Vec<Entry>, limits: &Limits) -> Result<Manifest, Error> {
        let count = u32::try_from(entries.len()).map_err(|_| Error::TooManyFiles {
            got: u32::MAX,
            limit: limits.max_files,
        })?;
        check_table(&entries, limits)?;
        let mut info = Vec::new();
        info.extend_from_slice(&count.to_be_bytes());
        for e in &entries {
            info.extend_from_slice(e.name.as_bytes());
            info.push(0);
        }
        for e in &entries {
            info.extend_from_slice(&e.size.to_be_bytes());
        }
        for e in &entries {
            e.attrs.encode(&mut info);
        }
        let info_len = u32::try_from(info.len())
            .ok()
            .filter(|&n| n <= limits.max_info_bytes)
            .ok_or(Error::InfoTooLarge {
                got: u32::try_from(info.len()).unwrap_or(u32::MAX),
                limit: limits.max_info_bytes,
            })?;
        let mut head = Vec::with_capacity(HEADER_BYTES + info.len());
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&VERSION.to_be_bytes());
        head.extend_from_slice(&0u16.to_be_bytes());
        head.extend_from_slice(&info_len.to_be_bytes());
        head.extend_from_slice(&crc32(&info).to_be_bytes());
        head.extend_from_slice(&info);
        let data_bytes = entries.iter().map(|e| e.size).sum();
        Ok(Manifest {
            entries,
            head,
            data_bytes,
        })
    }

    /// Header plus object information field.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Sum of the file sizes.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// Length of the whole package.
    pub fn package_bytes(&self) -> u64 {
        self.head.len() as u64 + self.data_bytes
    }

    /// The whole package in memory, for bodies that are in memory anyway.
    pub fn assemble<'a>(&self, bodies: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.package_bytes()).unwrap_or(0));
        out.extend_from_slice(&self.head);
        let mut n = 0;
        for (body, e) in bodies.into_iter().zip(&self.entries) {
            assert_eq!(body.len() as u64, e.size, "body of {} changed size", e.name);
            out.extend_from_slice(body);
            n += 1;
        }
        assert_eq!(n, self.entries.len(), "one body per entry");
        out
    }
}

/// The table checks shared by writer and reader.
pub(crate) fn check_table(entries: &[Entry], limits: &Limits) -> Result<(), Error> {
    let count = u32::try_from(entries.len()).unwrap_or(u32::MAX);
    if count > limits.max_files {
        return Err(Error::TooManyFiles {
            got: count,
            limit: limits.max_files,
        });
    }
    let mut total: u64 = 0;
    let mut names: HashSet<&str> = HashSet::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        check_name(e.name.as_bytes(), limits.max_name_bytes).map_err(|reason| Error::BadName {
            index: i as u32,
            reason,
        })?;
        if !names.insert(&e.name) {
            return Err(Error::DuplicateName {
                name: e.name.clone(),
            });
        }
        if e.size > limits.max_file_bytes {
            return Err(Error::FileTooLarge {
                name: e.name.clone(),
                size: e.size,
                limit: limits.max_file_bytes,
            });
        }
        total = total
            .checked_add(e.size)
            .filter(|&t| t <= limits.max_total_bytes)
            .ok_or(Error::TotalTooLarge {
                limit: limits.max_total_bytes,
            })?;
        e.attrs.check().map_err(|reason| Error::BadAttributes {
            name: e.name.clone(),
            reason,
        })?;
    }
    // Names equal but for case are one file on case-insensitive file
    // systems (macOS, Windows): the second would replace the first.
    let mut folded: std::collections::HashMap<String, &str> =
        std::collections::HashMap::with_capacity(entries.len());
    for e in entries {
        if let Some(other) = folded.insert(e.name.to_lowercase(), &e.name) {
            return Err(Error::CaseCollision {
                name: e.name.clone(),
                other: other.to_string(),
            });
        }
    }
    // A file may not also be a directory of another ("a" and "a/b"): the
    // second could not be created on unpack; nor case-insensitively.
    for e in entries {
        let mut at = 0;
        while let Some(i) = e.name[at..].find('/') {
            let dir = &e.name[..at + i];
            if names.contains(dir) || folded.contains_key(&dir.to_lowercase()) {
                return Err(Error::NameConflict {
                    name: dir.to_string(),
                });
            }
            at += i + 1;
        }
    }
    Ok(())
}
