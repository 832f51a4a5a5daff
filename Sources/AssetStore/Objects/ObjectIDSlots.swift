// Where a point reader last found an object: (collection, key) → its row id, in a fixed table
// of slots chosen by a hash of the two. A get whose slot holds its ref reads the row by id,
// without the (collection, key) index's cursor and seek (about a sixth of a socket get's
// loop work). The table only says where to look, never what is there: the row is read under
// the reader's snapshot like any other, and an id names one object for ever (AUTOINCREMENT
// ids are never reused, and no statement changes an object's collection or key), so a row
// found by id is that object as of the snapshot; none found (deleted since) sends the read
// back to the index. Bounded: a fixed number of slots of fixed size, refs too long for a
// slot never kept, a slot overwritten by the next ref that hashes to it.

import Glibc

/// A fixed table of (collection, key) → row id, for one thread.
final class ObjectIDSlots {
    /// Bytes a slot holds: the id, the two lengths, then the collection's and key's bytes.
    static let slotBytes = 64
    /// The longest collection and key together that a slot holds.
    static let refBytes = slotBytes - 10
    /// How many slots (a power of two). Zero-filled on demand by the kernel: pages never used
    /// cost no memory.
    let count: Int
    private let base: UnsafeMutableRawPointer

    init(count: Int) {
        precondition(count > 0 && count & (count - 1) == 0, "a power of two")
        self.count = count
        // calloc: the table's pages are the kernel's zero pages until a slot is written.
        guard let memory = calloc(count, Self.slotBytes) else { fatalError("out of memory for \(count) id slots") }
        base = memory
    }

    deinit { free(base) }

    /// The slot of `collection` and `key`: FNV-1a over both, with the collection's length
    /// between them, so ("ab", "c") and ("a", "bc") differ.
    @inline(__always)
    private func slot(
        _ collection: UnsafeBufferPointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>
    )
        -> UnsafeMutableRawPointer
    {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in collection { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h = (h ^ UInt64(truncatingIfNeeded: collection.count)) &* 0x100_0000_01b3
        for b in key { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        h ^= h >> 29
        return base + Int(truncatingIfNeeded: h & UInt64(count - 1)) * Self.slotBytes
    }

    /// The id last stored for exactly these bytes, or nil.
    func id(_ collection: UnsafeBufferPointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard collection.count + key.count <= Self.refBytes else { return nil }
        let s = slot(collection, key)
        let id = s.loadUnaligned(as: Int64.self)
        guard id != 0, s.load(fromByteOffset: 8, as: UInt8.self) == collection.count,
            s.load(fromByteOffset: 9, as: UInt8.self) == key.count,
            Self.holds(s + 10, collection), Self.holds(s + 10 + collection.count, key)
        else { return nil }
        return id
    }

    /// Whether the bytes at `p` are `bytes`.
    @inline(__always)
    private static func holds(_ p: UnsafeMutableRawPointer, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let b = bytes.baseAddress else { return true }
        return memcmp(p, b, bytes.count) == 0
    }

    /// Remembers `id` for these bytes (if they fit a slot), replacing the slot's last ref.
    func set(_ collection: UnsafeBufferPointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>, _ id: Int64) {
        guard collection.count + key.count <= Self.refBytes else { return }
        let s = slot(collection, key)
        s.storeBytes(of: id, as: Int64.self)
        s.storeBytes(of: UInt8(collection.count), toByteOffset: 8, as: UInt8.self)
        s.storeBytes(of: UInt8(key.count), toByteOffset: 9, as: UInt8.self)
        if let c = collection.baseAddress { (s + 10).copyMemory(from: c, byteCount: collection.count) }
        if let k = key.baseAddress { (s + 10 + collection.count).copyMemory(from: k, byteCount: key.count) }
    }

    /// Forgets these bytes' slot if it holds them (their object is gone).
    func remove(_ collection: UnsafeBufferPointer<UInt8>, _ key: UnsafeBufferPointer<UInt8>) {
        guard id(collection, key) != nil else { return }
        slot(collection, key).storeBytes(of: 0 as Int64, as: Int64.self)
    }
}
