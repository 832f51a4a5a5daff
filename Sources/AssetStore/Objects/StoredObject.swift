// Objects and registry rows as readers get them, with their JSON forms for the protocol.

import JSON

/// An object with its files.
public struct StoredObject: Sendable, Hashable {
    /// Which object.
    public var ref: ObjectRef
    /// Its value.
    public var value: JSONValue
    /// Its metadata, if any.
    public var metadata: JSONValue?
    /// Its owner.
    public var owner: String
    /// Unix seconds.
    public var created: Double
    /// Unix seconds of the last put.
    public var modified: Double
    /// Unix seconds of the last put or touch.
    public var accessed: Double
    /// The files it holds through file edges.
    public var files: [FileRecord]

    /// The object as the protocol shows it.
    public var json: JSONValue {
        .object([
            "collection": .string(ref.collection), "key": .string(ref.key), "value": value,
            "metadata": metadata ?? .null, "owner": .string(owner), "created": .double(created),
            "modified": .double(modified), "accessed": .double(accessed),
            "files": .array(files.map(\.json)),
        ])
    }
}

/// A file registry row.
public struct FileRecord: Sendable, Hashable {
    /// Normalised absolute path.
    public var path: String
    /// Bytes, as last seen (0 when missing).
    public var size: Int64
    /// `st_dev` when last seen.
    public var device: Int64?
    /// `st_ino` when last seen.
    public var inode: Int64?
    /// Modification time when last seen.
    public var mtime: Double?
    /// True when the file did not exist when last seen.
    public var missing: Bool
    /// When the registry first saw it.
    public var firstSeen: Double

    /// The row as the protocol shows it.
    public var json: JSONValue {
        .object([
            "path": .string(path), "size": .int(size), "device": device.map(JSONValue.int) ?? .null,
            "inode": inode.map(JSONValue.int) ?? .null, "mtime": mtime.map(JSONValue.double) ?? .null,
            "missing": .bool(missing), "first_seen": .double(firstSeen),
        ])
    }
}

/// A file and the edges that keep it alive ("why is this file still here?").
public struct FileReport: Sendable, Hashable {
    /// The registry row.
    public var record: FileRecord
    /// Every edge to the file.
    public var edges: [Edge]
    /// Edges that retain it (carry deleteDestinationIfAllSourcesDeleted).
    public var retainedBy: Int { edges.filter { $0.rules.contains(.deleteDestinationIfAllSourcesDeleted) }.count }
}
