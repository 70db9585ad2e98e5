//! Page-aligned anonymous memory for working sets, with an explicit choice
//! of transparent huge pages.
//!
//! Buffers are mapped with `mmap` (not the allocator) so that (a) a buffer
//! is fresh memory first touched by the thread that fills it, never a heap
//! block another thread touched before, (b) `munmap` returns it to the
//! system at once, and (c) huge pages can be requested (`MADV_HUGEPAGE`,
//! start aligned to 2 MiB) or refused (`MADV_NOHUGEPAGE`, so a system with
//! THP `always` does not give them silently). Off Linux the allocator is
//! used with page alignment and no huge-page control.

use std::ptr::NonNull;

use benchsuite_core::BenchError;

/// Size of a transparent huge page on x86_64 and most aarch64 kernels.
pub const HUGE_PAGE: usize = 2 << 20;

/// Alignment of every buffer start (a page; at least a cache line).
pub const PAGE: usize = 4096;

/// Whether to ask for transparent huge pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pages {
    /// `MADV_HUGEPAGE` on a 2 MiB-aligned range.
    Huge,
    /// `MADV_NOHUGEPAGE`: 4 KiB pages even under THP `always`.
    Small,
}

/// An owned, page-aligned buffer (zero-filled by the kernel on first touch).
#[derive(Debug)]
pub struct Buf {
    ptr: NonNull<u8>,
    map: *mut u8,
    map_len: usize,
}

// SAFETY: a Buf owns its mapping exclusively (like a Box<[u8]>); moving it
// to another thread moves that ownership.
unsafe impl Send for Buf {}

impl Buf {
    /// Maps `len` bytes (at least one byte). With [`Pages::Huge`] the start
    /// is aligned to 2 MiB so whole huge pages can back it.
    pub fn new(len: usize, pages: Pages) -> Result<Buf, BenchError> {
        let len = len.max(1);
        let align = match pages {
            Pages::Huge => HUGE_PAGE,
            Pages::Small => PAGE,
        };
        let body = len
            .checked_next_multiple_of(align)
            .ok_or_else(|| BenchError::Other(format!("buffer of {len} bytes is too large")))?;
        let map_len = body
            .checked_add(align - PAGE)
            .ok_or_else(|| BenchError::Other(format!("buffer of {len} bytes is too large")))?;
        let map = map_anon(map_len)?;
        let offset = (align - (map as usize % align)) % align;
        // SAFETY: offset < align and the mapping is map_len = body + align -
        // PAGE bytes with a page-aligned start, so offset <= align - PAGE and
        // map + offset is inside the mapping.
        let start = unsafe { map.add(offset) };
        let buf = Buf {
            ptr: NonNull::new(start)
                .ok_or_else(|| BenchError::Other("mmap returned a null mapping".into()))?,
            map,
            map_len,
        };
        advise(start, body, pages);
        Ok(buf)
    }

    /// Start of the buffer (page-aligned, or 2 MiB-aligned for huge pages).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        unmap(self.map, self.map_len);
    }
}

#[cfg(target_os = "linux")]
fn map_anon(len: usize) -> Result<*mut u8, BenchError> {
    // SAFETY: an anonymous private mapping at an address the kernel
    // chooses; no existing memory is affected. The result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(BenchError::last_os_error(format!(
            "mmap of {}",
            benchsuite_core::units::format_size(len as u64)
        )));
    }
    Ok(p.cast())
}

#[cfg(target_os = "linux")]
fn unmap(map: *mut u8, len: usize) {
    // SAFETY: `map`/`len` are exactly the mapping made by map_anon, owned by
    // the Buf being dropped; nothing references it afterwards.
    unsafe {
        libc::munmap(map.cast(), len);
    }
}

#[cfg(target_os = "linux")]
fn advise(start: *mut u8, len: usize, pages: Pages) {
    let advice = match pages {
        Pages::Huge => libc::MADV_HUGEPAGE,
        Pages::Small => libc::MADV_NOHUGEPAGE,
    };
    // SAFETY: [start, start + len) lies inside our own mapping (see
    // Buf::new); madvise only changes paging hints. Failure (THP compiled
    // out) is harmless: the record reports the backing it actually got.
    unsafe {
        libc::madvise(start.cast(), len, advice);
    }
}

#[cfg(not(target_os = "linux"))]
fn map_anon(len: usize) -> Result<*mut u8, BenchError> {
    let layout = std::alloc::Layout::from_size_align(len, PAGE)
        .map_err(|e| BenchError::caused("buffer layout", e))?;
    // SAFETY: the layout has a non-zero size (len >= 1 page).
    let p = unsafe { std::alloc::alloc(layout) };
    if p.is_null() {
        return Err(BenchError::Other(format!("cannot allocate {len} bytes")));
    }
    Ok(p)
}

#[cfg(not(target_os = "linux"))]
fn unmap(map: *mut u8, len: usize) {
    if let Ok(layout) = std::alloc::Layout::from_size_align(len, PAGE) {
        // SAFETY: allocated by map_anon with this same layout.
        unsafe { std::alloc::dealloc(map, layout) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: *mut u8, _len: usize, _pages: Pages) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_writable_and_sized() {
        for (len, pages) in [
            (1, Pages::Small),
            (10_000, Pages::Small),
            (3 << 20, Pages::Huge),
        ] {
            let b = Buf::new(len, pages).unwrap();
            let align = if pages == Pages::Huge {
                HUGE_PAGE
            } else {
                PAGE
            };
            assert_eq!(b.as_ptr() as usize % align, 0);
            // SAFETY: the buffer holds `len` bytes.
            let s = unsafe { std::slice::from_raw_parts_mut(b.as_ptr(), len) };
            s.fill(7);
            assert!(s.iter().all(|&x| x == 7));
        }
    }
}
