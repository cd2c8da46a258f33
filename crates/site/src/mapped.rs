//! Large files served from the page cache instead of the heap: a file of `MAP_MIN_BYTES` or more is mapped read-only and handed
//! out as a `Bytes` that owns the mapping, so loading a site costs no read
//! of its large files (the server listens at once), and every consumer of a
//! body (ranges, GETALL, packages) works unchanged.
//!
//! Pages of a mapping count toward the process's resident set once touched.
//! A writer that has sent a part of a mapped body calls [`release`] on it:
//! the pages leave this process's page tables (`MADV_DONTNEED`; for a
//! read-only file mapping that only drops them here, the data stays in the
//! page cache and a later read faults it back in), so serving a 1.5 GB file
//! keeps the resident set at a few megabytes.
//!
//! A mapped file must not be truncated while served (as for any server
//! that maps files): reading past the new end would fault.

use std::fs::File;
use std::io;
use std::sync::Mutex;

use bytes::Bytes;

/// Files this large or larger are mapped, not read.
pub const MAP_MIN_BYTES: u64 = 4 << 20;

/// Address ranges `[start, end)` of live mappings.
static LIVE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

struct Mapping {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; sharing
// `&[u8]` views of it across threads is as safe as sharing any `&[u8]`.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let start = self.ptr as usize;
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|&(s, _)| s != start);
        // SAFETY: unmapping exactly what `map` mapped, once.
        let _ = unsafe { rustix::mm::munmap(self.ptr, self.len) };
    }
}

/// Maps `file` (`len` bytes) read-only as a `Bytes`. An empty file gives
/// an empty `Bytes` (nothing to map).
pub fn map(file: &File, len: u64) -> io::Result<Bytes> {
    if len == 0 {
        return Ok(Bytes::new());
    }
    let len = usize::try_from(len).map_err(|_| io::Error::other("file too large to map"))?;
    // SAFETY: a fresh private read-only mapping of a file we hold open; no
    // Rust reference to its memory exists before this returns.
    let ptr = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::PRIVATE,
            file,
            0,
        )
    }
    .map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))?;
    // Served front to back: read ahead, drop behind.
    // SAFETY: advice on the mapping just made.
    let _ = unsafe { rustix::mm::madvise(ptr, len, rustix::mm::Advice::Sequential) };
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((ptr as usize, ptr as usize + len));
    Ok(Bytes::from_owner(Mapping { ptr, len }))
}

/// True if `bytes` lie inside a live mapping made by [`map`].
pub fn is_mapped(bytes: &[u8]) -> bool {
    let (s, e) = (
        bytes.as_ptr() as usize,
        bytes.as_ptr() as usize + bytes.len(),
    );
    !bytes.is_empty()
        && LIVE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|&(ms, me)| ms <= s && e <= me)
}

/// Drops the whole pages inside `sent` (a part of a mapped body that was
/// written out) from this process's resident set. Does nothing for bytes
/// that are not in a mapping made by [`map`] (never touches heap memory).
pub fn release(sent: &[u8]) {
    let page = rustix::param::page_size();
    let s = sent.as_ptr() as usize;
    let e = s + sent.len();
    let first = s.div_ceil(page) * page;
    let last = e / page * page;
    if last <= first {
        return;
    }
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if live.iter().any(|&(ms, me)| ms <= s && e <= me) {
        // SAFETY: whole pages inside a live private read-only file mapping
        // (held alive by the caller's `Bytes`); DONTNEED only drops them
        // from the page tables and the next read faults them back in from
        // the file, so every view of this memory stays valid.
        let _ = unsafe {
            rustix::mm::madvise(
                first as *mut std::ffi::c_void,
                last - first,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapped_file_reads_back_and_release_keeps_it_readable() {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..3 * 65536u32).map(|i| (i % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let b = map(&f, data.len() as u64).unwrap();
        assert_eq!(&b[..], &data[..]);
        assert!(is_mapped(&b[10..20]));
        assert!(!is_mapped(&data[..]));
        release(&b[..]);
        // Faulted back in from the file after release.
        assert_eq!(&b[..], &data[..]);
        // Heap bytes are never advised.
        let heap = data.clone();
        release(&heap);
        assert_eq!(heap, data);
        let slice = b.slice(100..200);
        drop(b);
        assert_eq!(&slice[..], &data[100..200]);
    }
}
