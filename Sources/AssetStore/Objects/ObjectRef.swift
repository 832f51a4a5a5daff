// The identity of an object: (collection, key). Both are non-empty UTF-8 strings of at most
// 1,024 bytes; validation lives here so every entry point applies the same limits.

import JSON

/// Names one object.
public struct ObjectRef: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The longest collection or key, in UTF-8 bytes.
    public static let maximumLength = 1024

    /// The collection.
    public var collection: String
    /// The key within the collection.
    public var key: String

    /// A reference; not validated until used.
    public init(_ collection: String, _ key: String) {
        self.collection = collection
        self.key = key
    }

    /// Throws `invalid_params` unless both parts are non-empty and short enough.
    public func validate() throws(StoreError) {
        try Self.validate("collection", collection)
        try Self.validate("key", key)
    }

    private static func validate(_ what: String, _ s: String) throws(StoreError) {
        guard !s.isEmpty else { throw StoreError(.invalidParams, "\(what) must not be empty") }
        // SQLite and C APIs end text at NUL: "a\0b" would alias "a". Looked for in the bytes
        // in place: through the UTF8View it was a tenth of a point read's own work.
        var text = s
        guard !text.withUTF8({ $0.contains(0) }) else {
            throw StoreError(.invalidParams, "\(what) must not contain a NUL byte")
        }
        guard s.utf8.count <= maximumLength else {
            throw StoreError(.invalidParams, "\(what) is longer than \(maximumLength) bytes")
        }
    }

    public var description: String { "\(collection)/\(key)" }

    public static func < (a: ObjectRef, b: ObjectRef) -> Bool {
        (a.collection, a.key) < (b.collection, b.key)
    }

    /// `{"collection": …, "key": …}`.
    public var json: JSONValue { .object(["collection": .string(collection), "key": .string(key)]) }
}
