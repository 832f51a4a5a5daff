// The lifecycle policies of assetd.toml(5), [policy], as the engine applies them: a byte budget
// with a low-water mark, per-owner quotas, TTLs per collection, a free-space floor per managed
// root's filesystem and a grace age for new objects. Durations are seconds, sizes bytes.

/// The order in which `max_bytes` and `policy.evict` pick objects (assetd.toml(5), `order`).
public enum EvictionOrder: String, Sendable, Equatable, CaseIterable {
    /// Least recently accessed first.
    case lru
    /// S3-FIFO: a small FIFO queue for new objects, a main queue with a 2-bit clock for those
    /// accessed again, and a ghost record of keys evicted from the small queue.
    case s3fifo
    /// SIEVE: one FIFO queue and a hand that spares an object visited since it last passed.
    case sieve
}

/// `[policy]` from the configuration. Without one, nothing is evicted or expired.
public struct PolicyConfiguration: Sendable, Equatable {
    /// One `[[policy.quota]]`.
    public struct Quota: Sendable, Equatable {
        public var owner: String
        public var maxBytes: Int64
        public init(owner: String, maxBytes: Int64) {
            self.owner = owner
            self.maxBytes = maxBytes
        }
    }

    /// One `[[policy.ttl]]`: objects idle longer than `maxIdle` (since `accessed`) or older
    /// than `maxAge` (since `created`) expire.
    public struct TTL: Sendable, Equatable {
        public var collection: String
        public var maxIdle: Double?
        public var maxAge: Double?
        public init(collection: String, maxIdle: Double? = nil, maxAge: Double? = nil) {
            self.collection = collection
            self.maxIdle = maxIdle
            self.maxAge = maxAge
        }
    }

    /// Seconds between the daemon's enforcement runs.
    public var interval: Double = 300
    /// The byte budget over all registered files, each counted once.
    public var maxBytes: Int64?
    /// Over budget, evict down to this share of it.
    public var lowWater: Double = 0.9
    /// Free bytes wanted on each managed root's filesystem.
    public var minFree: Int64?
    /// Objects younger than this (since `created`) are never evicted or expired.
    public var minAge: Double = 600
    /// How the byte budget and `policy.evict` choose what goes.
    public var order: EvictionOrder = .s3fifo
    /// Objects deleted per transaction.
    public var batch: Int = 1000
    public var quotas: [Quota] = []
    public var ttls: [TTL] = []

    public init() {}
}
