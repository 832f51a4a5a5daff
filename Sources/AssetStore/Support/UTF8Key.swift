// Strings as dictionary and set keys by their UTF-8 bytes. String's own equality is canonical
// equivalence, under which two different paths or keys can be equal; a copy of the bytes
// (`Array(s.utf8)`) compares right but allocates and hashes byte by byte. These hash the
// bytes in one call and compare them in place.

import Glibc

/// A string (a path, a collection) compared and hashed as its UTF-8 bytes.
public struct UTF8Key: Hashable, Sendable {
    public let string: String

    public init(_ string: String) { self.string = string }

    public static func == (a: UTF8Key, b: UTF8Key) -> Bool { same(a.string, b.string) }

    public func hash(into h: inout Hasher) { UTF8Key.combine(string, into: &h) }

    /// Feeds `s`'s bytes and its length to `h`.
    static func combine(_ s: String, into h: inout Hasher) {
        var s = s
        s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
        h.combine(s.utf8.count)
    }

    /// Whether `a` and `b` have the same UTF-8 bytes.
    static func same(_ a: String, _ b: String) -> Bool {
        var (a, b) = (a, b)
        // memcmp: `elementsEqual` on buffers compares a byte per iteration.
        return a.withUTF8 { x in
            b.withUTF8 { y in
                x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
    }
}

extension UTF8Key: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}

/// An object reference compared and hashed as the UTF-8 bytes of its collection and key, as
/// SQLite compares them: what a lease or a guard protects must be the row it names.
public struct ObjectRefKey: Hashable, Sendable {
    public let ref: ObjectRef

    public init(_ ref: ObjectRef) { self.ref = ref }

    public static func == (a: ObjectRefKey, b: ObjectRefKey) -> Bool {
        UTF8Key.same(a.ref.key, b.ref.key) && UTF8Key.same(a.ref.collection, b.ref.collection)
    }

    public func hash(into h: inout Hasher) {
        UTF8Key.combine(ref.collection, into: &h)
        UTF8Key.combine(ref.key, into: &h)
    }
}
