// Writing JSON text through a pointer into room sized beforehand, then appending it to a
// buffer at once: each `Array.append` costs about 100 instructions whatever it copies, and a
// point read's reply was about twenty of them. A cursor never checks its room: the caller's
// `maximum` must cover the worst case of everything it writes (the bounds below). Debug
// builds (the tests) check each write against the room before it is made.

/// Writes JSON text forward from a pointer. Made by ``Swift/Array/appendText(maximum:_:)``.
public struct JSONCursor {
    /// Where the next byte goes.
    @usableFromInline var at: UnsafeMutablePointer<UInt8>
    #if DEBUG
    /// Where the room ends.
    @usableFromInline let end: UnsafeMutablePointer<UInt8>
    #endif

    @usableFromInline init(_ at: UnsafeMutablePointer<UInt8>, room: Int) {
        self.at = at
        #if DEBUG
        end = at + room
        #endif
    }

    /// Debug builds: stops before a write of `n` bytes at `p` would pass the room's end, not
    /// after (the room may be on the stack).
    @inlinable @inline(__always)
    func claim(_ n: Int, at p: UnsafeMutablePointer<UInt8>? = nil) {
        #if DEBUG
        precondition((p ?? at) + n <= end, "a cursor's write would pass its room")
        #endif
    }

    /// The most bytes ``double(_:)`` writes: `null`, or a description such as
    /// `-2.2250738585072014e-308`.
    public static let doubleMaximum = 32

    /// The most bytes ``string(_:)`` writes for `count` bytes: quotes and `\u00XX` each.
    public static func stringMaximum(_ count: Int) -> Int { 2 + 6 * count }

    /// Writes text of ours as it is.
    @inlinable @inline(__always)
    public mutating func literal(_ text: StaticString) {
        let n = text.utf8CodeUnitCount
        claim(n)
        at.update(from: text.utf8Start, count: n)
        at += n
    }

    /// Writes one byte.
    @inlinable @inline(__always)
    public mutating func byte(_ b: UInt8) {
        claim(1)
        at.pointee = b
        at += 1
    }

    /// Writes `bytes` as they are.
    @inlinable @inline(__always)
    public mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        claim(bytes.count)
        at.update(from: base, count: bytes.count)
        at += bytes.count
    }

    /// Writes `bytes` (UTF-8) as a JSON string literal, as ``JSONValue/writeString(bytes:to:)`` does.
    public mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) {
        // Through a local: stores through `at` itself reloaded it for every byte.
        var p = at
        claim(1, at: p)
        p.pointee = UInt8(ascii: "\"")
        p += 1
        // Runs that need no escaping copied at once.
        var run = 0
        while run < bytes.count {
            let i = JSONValue.firstToEscape(bytes, from: run)
            if i > run {
                claim(i - run, at: p)
                p.update(from: bytes.baseAddress! + run, count: i - run)
                p += i - run
            }
            guard i < bytes.count else { break }
            at = p
            escaped(bytes[i])
            p = at
            run = i + 1
        }
        claim(1, at: p)
        p.pointee = UInt8(ascii: "\"")
        at = p + 1
    }

    /// The bytes `escaped(b)` writes.
    static func escapedCount(_ b: UInt8) -> Int {
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09: return 2
        default: return 6
        }
    }

    /// Writes `b`, a byte a JSON string may not hold as it is, escaped (`escapedCount(b)` bytes).
    mutating func escaped(_ b: UInt8) {
        byte(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): byte(b)
        case 0x0A: byte(UInt8(ascii: "n"))
        case 0x0D: byte(UInt8(ascii: "r"))
        case 0x09: byte(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            literal("u00")
            byte(hex.utf8Start[Int(b >> 4)])
            byte(hex.utf8Start[Int(b & 15)])
        }
    }

    /// Writes `d` as Swift's `description` spells it (the shortest text that reads back as
    /// `d`), or `null` if it is not finite (JSON has no NaN or infinity).
    public mutating func double(_ d: Double) {
        guard d.isFinite else { return literal("null") }
        if microseconds(d) || tenthsOfMicroseconds(d) { return }
        // The standard library prints a Double from a buffer on its stack (`_writeASCII`).
        d.write(to: &self)
    }

    /// "00" to "99", for writing two digits at a time.
    @usableFromInline static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    /// Writes `i` in decimal, as ``JSONValue/writeInt(_:to:)`` does (at most 20 bytes).
    public mutating func int(_ i: Int64) {
        if i < 0 { byte(UInt8(ascii: "-")) }
        unsigned(i.magnitude)
    }

    /// 10^0 … 10^19.
    @usableFromInline static let powersOf10: [UInt64] = (0..<20).map { (0..<$0).reduce(1) { p, _ in p * 10 } }

    /// Writes `v` in decimal: its digits counted first, then written from the last, two at a time.
    @usableFromInline
    mutating func unsigned(_ v: UInt64) {
        // The count from the bit length (log10 2 is about 1233/4096), then one comparison:
        // a loop of comparisons cost about 40 instructions for a time's ten digits.
        let estimate = ((64 - v.leadingZeroBitCount) &* 1233) >> 12
        let digits = Swift.max(1, v >= JSONCursor.powersOf10[estimate] ? estimate + 1 : estimate)
        let table = JSONCursor.digitPairs.utf8Start
        var v = v
        claim(digits)
        var p = at + digits
        at = p
        while v >= 100 {
            let pair = Int(v % 100) * 2
            v /= 100
            p -= 2
            p[0] = table[pair]
            p[1] = table[pair + 1]
        }
        if v >= 10 {
            p[-2] = table[Int(v) * 2]
            p[-1] = table[Int(v) * 2 + 1]
        } else {
            p[-1] = UInt8(truncatingIfNeeded: v) &+ 48
        }
    }

    /// Writes `d` if it is at least 1, below 2^32 and reads back from a decimal with at most
    /// six digits after the point, as a time to the microsecond does; false (nothing written)
    /// otherwise. Below 2^32 two doubles are less than 10^-6 apart, so at most one such decimal
    /// reads back as `d`, and it is then the shortest that does: the text `description`
    /// prints. At most 17 bytes.
    @usableFromInline
    mutating func microseconds(_ d: Double) -> Bool {
        guard d >= 1 && d < 4_294_967_296 else { return false }
        let micros = (d * 1_000_000).rounded()
        // micros is an integer below 2^53, so the division is exact up to one rounding: equal
        // means the decimal micros / 10^6 reads back as d.
        guard micros / 1_000_000 == d else { return false }
        let m = UInt64(micros)
        let whole = UInt32(truncatingIfNeeded: m / 1_000_000)
        let fraction = UInt32(truncatingIfNeeded: m % 1_000_000)
        unsigned(UInt64(whole))
        byte(UInt8(ascii: "."))
        // Six digits, then the trailing zeros taken back ("1764193925.0" keeps one, as
        // description prints a whole number).
        sixDigits(Int(fraction))
        var kept = 6
        while kept > 1 && (at - 1).pointee == UInt8(ascii: "0") {
            at -= 1
            kept -= 1
        }
        return true
    }

    /// Writes `d` if it is in [2^29, 2^32) (the years 1987 to 2106 as times) and no decimal
    /// with six digits after the point reads back as it (``microseconds(_:)`` said no): the
    /// store's clock keeps a time to its double's precision, so most times in replies are
    /// such. There two doubles are more than 10^-7 apart, so the decimal with seven digits
    /// nearest `d`, worked out exactly, reads back as `d`; being the shortest that does, and
    /// the nearest (the even one when `d` lies halfway), it is what `description` prints.
    /// False (nothing written) otherwise. At most 18 bytes.
    @usableFromInline
    mutating func tenthsOfMicroseconds(_ d: Double) -> Bool {
        guard d >= 536_870_912 && d < 4_294_967_296 else { return false }
        // d is m * 2^-shift exactly, m its 53-bit significand, shift 21 to 23.
        let m = d.significandBitPattern | (1 << 52)
        let shift = 52 - Int(d.exponent)
        let (high, low) = m.multipliedFullWidth(by: 10_000_000)
        // m * 10^7 / 2^shift, below 2^32 * 10^7, and what the shift drops.
        var q = high << (64 - shift) | low >> shift
        let rest = low & ((1 << shift) - 1)
        let half: UInt64 = 1 << (shift - 1)
        // Halfway: both read back; description takes the even last digit.
        if rest > half || (rest == half && q & 1 == 1) { q += 1 }
        // A last digit 0 would be six digits that read back: not expected, but not written.
        guard q % 10 != 0 else { return false }
        let whole = q / 10_000_000
        let fraction = Int(q % 10_000_000)
        unsigned(whole)
        byte(UInt8(ascii: "."))
        sixDigits(fraction / 10)
        byte(UInt8(truncatingIfNeeded: fraction % 10) &+ 48)
        return true
    }

    /// Writes `v`, below 10^6, as six digits, two at a time.
    @inline(__always)
    mutating func sixDigits(_ v: Int) {
        let table = JSONCursor.digitPairs.utf8Start
        let high = v / 10_000 * 2
        let middle = v / 100 % 100 * 2
        let low = v % 100 * 2
        claim(6)
        at[0] = table[high]
        at[1] = table[high + 1]
        at[2] = table[middle]
        at[3] = table[middle + 1]
        at[4] = table[low]
        at[5] = table[low + 1]
        at += 6
    }
}

/// Takes what the standard library prints (``double(_:)``) without making a String.
extension JSONCursor: TextOutputStream {
    public mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { bytes($0) }
    }

    public mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes(buffer)
    }
}

extension Array where Element == UInt8 {
    /// Appends what `body` writes through a cursor, at most `maximum` bytes (the caller's
    /// bound for everything it writes: a cursor does not check), in one append.
    @inlinable
    public mutating func appendText(maximum: Int, _ body: (inout JSONCursor) throws -> Void) rethrows {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maximum) { room in
            // baseAddress!: a temporary allocation of any capacity has one.
            let start = room.baseAddress!
            var cursor = JSONCursor(start, room: maximum)
            try body(&cursor)
            precondition(cursor.at - start <= maximum, "a cursor wrote past its room")
            append(contentsOf: UnsafeBufferPointer(start: start, count: cursor.at - start))
        }
    }
}
