// What a `watch` asks for: the session keeps it and sends the events that pass.

/// Which events a watcher gets.
public struct EventFilter: Sendable, Equatable {
    /// Collections whose object and edge events pass; nil for all.
    public var collections: Set<String>?
    /// Event types that pass; nil for all.
    public var types: Set<String>?

    public init(collections: Set<String>? = nil, types: Set<String>? = nil) {
        self.collections = collections
        self.types = types
    }
}
