// Splits a byte stream into lines of at most `maximumLength` bytes (newline not counted).
// A longer line is reported once and the framer stops: the connection is to be closed.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Accumulates bytes and yields complete, non-blank lines.
public struct LineFramer: Sendable {
    /// The longest accepted line.
    public let maximumLength: Int
    private var buffer: [UInt8] = []
    private var scanned = 0
    /// True once a line was too long; nothing more is yielded.
    public private(set) var overflowed = false

    /// What feeding bytes produced.
    public enum Item: Sendable, Equatable {
        /// A complete line without its "\n" (and without a trailing "\r").
        case line([UInt8])
        /// A line exceeded the limit.
        case tooLong
    }

    public init(maximumLength: Int) {
        self.maximumLength = maximumLength
    }

    /// Bytes buffered but not yet part of a complete line.
    public var pendingCount: Int { buffer.count }

    /// Adds bytes; returns the items completed by them, in order. Blank lines are skipped.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Item] {
        guard !overflowed else { return [] }
        buffer.append(contentsOf: bytes)
        var items = [Item]()
        let (start, tooLong) = buffer.withUnsafeBufferPointer { b in
            var start = 0
            var i = scanned
            // memchr finds each newline: a byte loop in Swift was a fifth of a small request's
            // framing and parsing.
            while i < b.count, let found = memchr(b.baseAddress! + i, 10, b.count - i) {
                i = b.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
                if i - start > maximumLength {
                    items.append(.tooLong)
                    return (start, true)
                }
                var end = i
                if end > start, b[end - 1] == 13 { end -= 1 }
                // Blank lines (nothing but spaces and tabs) are ignored.
                if b[start..<end].contains(where: { $0 != 32 && $0 != 9 }) {
                    items.append(.line(Array(UnsafeBufferPointer(rebasing: b[start..<end]))))
                }
                i += 1
                start = i
            }
            return (start, false)
        }
        if tooLong {
            overflowed = true
            buffer = []
            scanned = 0
            return items
        }
        buffer.removeFirst(start)
        scanned = buffer.count
        if buffer.count > maximumLength {
            overflowed = true
            items.append(.tooLong)
            buffer = []
            scanned = 0
        }
        return items
    }
}
