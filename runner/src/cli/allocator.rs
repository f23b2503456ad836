//! The allocator's settings for this process.
//!
//! A command reads a journal and a runbook on two threads at once and builds tens of megabytes
//! of short-lived values (a resume of a 5,000-step runbook peaks near 60 MiB). With glibc's
//! defaults each thread's heap grows 128 KiB at a time and gives memory back as soon as it is
//! freed, so the two threads keep asking the kernel for memory, fault it in again, and wait
//! for each other on the process's memory map while they do. Growing heaps by 64 MiB at a time
//! (address space only: pages still become resident when first touched, so the peak memory is
//! the same) took a fifth off such a resume.

/// Sets the allocator up; called first thing, before any other thread exists.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const TOP_PAD: libc::c_int = 64 << 20;
        // SAFETY: mallopt only changes the allocator's parameters, and no other thread exists yet.
        // A refusal (0) leaves the defaults, which are correct, only slower.
        unsafe {
            libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
        }
    }
}
