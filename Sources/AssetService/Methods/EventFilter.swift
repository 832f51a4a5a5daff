// What a `watch` asks for: the session keeps it and sends the events that pass. Collections
// by their bytes, as the store keys them: a watch on `café` gets nothing of `cafe` + U+0301.

import AssetStore

/// Which events a watcher gets.
public struct EventFilter: Sendable, Equatable {
    /// Collections whose object and edge events pass; nil for all.
    public var collections: Set<UTF8Key>?
    /// Event types that pass; nil for all.
    public var types: Set<String>?

    public init(collections: Set<UTF8Key>? = nil, types: Set<String>? = nil) {
        self.collections = collections
        self.types = types
    }
}
