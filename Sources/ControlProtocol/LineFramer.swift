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
    /// Bytes the buffer has room for: after a long line it is given back, down to what is held.
    public var heldCapacity: Int { buffer.capacity }
    /// A buffer with room for more than this, and four times what it holds, is made smaller.
    static let keptCapacity = 64 << 10

    /// Adds bytes; returns the items completed by them, in order. Blank lines are skipped.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Item] {
        var items = [Item]()
        feed(bytes) { piece in
            switch piece {
            case .line(let line): items.append(.line(Array(line)))
            case .tooLong: items.append(.tooLong)
            }
        }
        return items
    }

    /// What `feed(_:_:)` hands on: a line is valid only during the call.
    public enum Piece {
        case line(UnsafeBufferPointer<UInt8>)
        case tooLong
    }

    /// Adds bytes and hands each item they complete to `each`, in order; blank lines are
    /// skipped. With nothing held over from earlier bytes, the lines are read where they lie
    /// and only an unfinished last line is kept: a request that arrives whole is not copied
    /// into the framer's buffer, nor into an array of its own (the copies, the array of items
    /// and their releases were about 1,000 instructions a small request on the loop).
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ each: (Piece) -> Void) {
        guard !overflowed, bytes.count > 0 else { return }
        let start: Int
        let tooLong: Bool
        if buffer.isEmpty {
            start = 0
            tooLong = bytes.withMemoryRebound(to: UInt8.self) { b in
                let (rest, over) = split(b, from: 0, each)
                // The unfinished last line, kept for the next bytes.
                if !over { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: b[rest...])) }
                return over
            }
        } else {
            buffer.append(contentsOf: bytes)
            let from = scanned
            (start, tooLong) = buffer.withUnsafeBufferPointer { b in split(b, from: from, each) }
        }
        if tooLong {
            overflowed = true
            buffer = []
            scanned = 0
            return
        }
        buffer.removeFirst(start)
        // removeFirst keeps the capacity: a connection that once sent a megabyte line would
        // hold two for its life, idle, counted as the few bytes pending.
        if buffer.capacity > LineFramer.keptCapacity, buffer.count * 4 < buffer.capacity {
            var kept = [UInt8]()  // a copy: Array(buffer) would share the same storage
            kept.reserveCapacity(buffer.count)
            kept.append(contentsOf: buffer)
            buffer = kept
        }
        scanned = buffer.count
        if buffer.count > maximumLength {
            overflowed = true
            each(.tooLong)
            buffer = []
            scanned = 0
        }
    }

    /// Hands on the lines of `b`, whose bytes before `from` hold no newline; returns where the
    /// unfinished rest begins, or that a line was too long (then nothing after it is handed on).
    private func split(
        _ b: UnsafeBufferPointer<UInt8>, from: Int, _ each: (Piece) -> Void
    ) -> (start: Int, tooLong: Bool) {
        guard let base = b.baseAddress else { return (0, false) }
        var start = 0
        var i = from
        // memchr finds each newline: a byte loop in Swift was a fifth of a small request's
        // framing and parsing.
        while i < b.count, let found = memchr(base + i, 10, b.count - i) {
            i = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if i - start > maximumLength {
                each(.tooLong)
                return (start, true)
            }
            var end = i
            if end > start, b[end - 1] == 13 { end -= 1 }
            // Blank lines (nothing but spaces and tabs) are ignored.
            if b[start..<end].contains(where: { $0 != 32 && $0 != 9 }) {
                each(.line(UnsafeBufferPointer(rebasing: b[start..<end])))
            }
            i += 1
            start = i
        }
        return (start, false)
    }
}
