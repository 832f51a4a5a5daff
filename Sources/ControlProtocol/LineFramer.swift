// Splits a byte stream into lines of at most `maximumLength` bytes (newline not counted).
// A longer line is reported once and the framer stops: the connection is to be closed.

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
        var start = 0
        var i = scanned
        while i < buffer.count {
            if buffer[i] == 10 {
                var end = i
                if end > start, buffer[end - 1] == 13 { end -= 1 }
                if i - start > maximumLength {
                    overflowed = true
                    items.append(.tooLong)
                    buffer = []
                    scanned = 0
                    return items
                }
                // Blank lines (nothing but spaces and tabs) are ignored.
                if buffer[start..<end].contains(where: { $0 != 32 && $0 != 9 }) {
                    items.append(.line(Array(buffer[start..<end])))
                }
                start = i + 1
            }
            i += 1
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
