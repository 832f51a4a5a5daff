// The part of a put that needs no transaction: its names checked, its value serialized and
// its texts laid out for binding. The daemon makes it before it queues a put for the group
// commit, on its loop, so that the one writer, which every client's puts wait for, does only
// the put's reads and writes.

/// A put ready for `WriteTransaction.put(_:)`.
public struct PreparedPut: Sendable {
    public let ref: ObjectRef
    let value: JSONValue
    /// The value's top-level `owner` string, else the owner it was made with.
    public let owner: String
    /// The value's text, then the collection, key, owner and metadata: the lookup and the
    /// insert bind them from here without a copy.
    let texts: [UInt8]
    let valueEnd: Int
    let collection: Range<Int>
    let key: Range<Int>
    let ownerText: Range<Int>
    let metadataText: Range<Int>?

    /// Checks `ref` and the owner (the value's `owner` string, else `owner`), and serializes
    /// the value and metadata.
    public init(_ ref: ObjectRef, value: JSONValue, metadata: JSONValue? = nil, owner: String) throws(StoreError) {
        try ref.validate()
        let owner = value["owner"]?.stringValue ?? owner
        guard !owner.utf8.contains(0) else {
            throw StoreError(.invalidParams, "owner must not contain a NUL byte")
        }
        var texts = [UInt8]()
        texts.reserveCapacity(128)
        value.write(to: &texts)
        valueEnd = texts.count
        collection = Self.append(ref.collection, to: &texts)
        key = Self.append(ref.key, to: &texts)
        ownerText = Self.append(owner, to: &texts)
        metadataText = metadata.map { Self.append($0.serialized(), to: &texts) }
        self.texts = texts
        self.ref = ref
        self.value = value
        self.owner = owner
    }

    /// Appends `text`'s UTF-8 bytes to `texts`; where they are.
    private static func append(_ text: String, to texts: inout [UInt8]) -> Range<Int> {
        let start = texts.count
        texts.append(contentsOf: text.utf8)
        return start..<texts.count
    }
}
