// About how much memory a parsed value holds, so that a daemon can count a request by what
// it holds rather than by its text: `[0,0,…]` holds about twelve times its text (each number
// a 24-byte slot), a long string about its text. An estimate from capacities and strides, not
// the allocator's own figures; what matters is that it grows as the memory does.

extension JSONValue {
    /// Bytes held on the heap by this value beyond its own slot (`MemoryLayout<JSONValue>`):
    /// its array's or dictionary's storage, keys and strings too long to be kept inline,
    /// and everything nested.
    public var heldBytes: Int {
        switch self {
        case .string(let s): return JSONValue.heldBytes(of: s)
        case .array(let a):
            guard a.capacity > 0 else { return 0 }
            return JSONValue.storageHeader + a.capacity * MemoryLayout<JSONValue>.stride
                + a.reduce(0) { $0 + $1.heldBytes }
        case .object(let o):
            guard o.capacity > 0 else { return 0 }
            // A dictionary keeps its buckets at most three quarters full.
            return JSONValue.storageHeader + o.capacity * JSONValue.entryBytes * 4 / 3
                + o.reduce(0) { $0 + JSONValue.heldBytes(of: $1.key) + $1.value.heldBytes }
        default: return 0
        }
    }

    /// Bytes a String holds on the heap: none up to 15 UTF-8 bytes (kept inline).
    public static func heldBytes(of s: String) -> Int {
        let n = s.utf8.count
        return n <= 15 ? 0 : storageHeader + n
    }

    /// The header of an array's, a dictionary's or a string's heap storage.
    static let storageHeader = 32
    /// A dictionary entry: its key and its value.
    static let entryBytes = MemoryLayout<String>.stride + MemoryLayout<JSONValue>.stride
}

extension JSONMember {
    /// Bytes an array of `members` holds, with everything in them.
    public static func heldBytes(of members: [JSONMember]) -> Int {
        guard members.capacity > 0 else { return 0 }
        return JSONValue.storageHeader + members.capacity * MemoryLayout<JSONMember>.stride
            + members.reduce(0) { $0 + JSONValue.heldBytes(of: $1.name) + $1.value.heldBytes }
    }
}
