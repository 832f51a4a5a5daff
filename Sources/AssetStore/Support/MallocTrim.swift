// glibc's malloc_trim, for the daemon's buffers and the policy runs' page cache: malloc.h is
// not in Swift's Glibc module. It hands freed heap pages back to the kernel, which glibc
// otherwise keeps (resident memory stays at its peak).

/// Releases free heap memory above `pad` bytes; 1 if any was released.
@_silgen_name("malloc_trim")
public func mallocTrim(_ pad: Int) -> Int32
