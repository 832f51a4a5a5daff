// Room for more bytes at the end of a buffer that many replies are appended to.

extension Array where Element == UInt8 {
    /// Makes room for `extra` more bytes, at least doubling the capacity when it grows.
    /// `reserveCapacity` alone allocates exactly what it is asked for, so calling it before
    /// each of many appends to one buffer copies the whole buffer every time: 512 pipelined
    /// replies rendered into a session's output held the loop for hundreds of milliseconds.
    @inlinable
    public mutating func reserveMore(_ extra: Int) {
        let needed = count + extra
        if needed > capacity { reserveCapacity(Swift.max(needed, 2 * capacity)) }
    }
}
