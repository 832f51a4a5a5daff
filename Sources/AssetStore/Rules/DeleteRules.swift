// The eight delete rules (YapDatabase's six plus Core Data's Deny, both ways) as a bit set,
// their wire names, and the check that rejects combinations that cannot mean anything.

import JSON

/// A set of delete rules carried by an edge.
public struct DeleteRules: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The destination is notified when the source goes.
    public static let notifyIfSourceDeleted = DeleteRules(rawValue: 1)
    /// The source is notified when the destination goes.
    public static let notifyIfDestinationDeleted = DeleteRules(rawValue: 2)
    /// The source is deleted when the destination goes.
    public static let deleteSourceIfDestinationDeleted = DeleteRules(rawValue: 4)
    /// The destination is deleted (a file: unlinked) when the source goes.
    public static let deleteDestinationIfSourceDeleted = DeleteRules(rawValue: 8)
    /// The source is deleted when its last retaining edge goes.
    public static let deleteSourceIfAllDestinationsDeleted = DeleteRules(rawValue: 16)
    /// The destination is deleted when the last retaining edge to it goes (reference counting).
    public static let deleteDestinationIfAllSourcesDeleted = DeleteRules(rawValue: 32)
    /// The source cannot be deleted while this edge stands.
    public static let denyDeleteSource = DeleteRules(rawValue: 64)
    /// The destination cannot be deleted while this edge stands.
    public static let denyDeleteDestination = DeleteRules(rawValue: 128)

    /// Every rule with its wire name, in bit order.
    public static let named: [(String, DeleteRules)] = [
        ("notifyIfSourceDeleted", .notifyIfSourceDeleted),
        ("notifyIfDestinationDeleted", .notifyIfDestinationDeleted),
        ("deleteSourceIfDestinationDeleted", .deleteSourceIfDestinationDeleted),
        ("deleteDestinationIfSourceDeleted", .deleteDestinationIfSourceDeleted),
        ("deleteSourceIfAllDestinationsDeleted", .deleteSourceIfAllDestinationsDeleted),
        ("deleteDestinationIfAllSourcesDeleted", .deleteDestinationIfAllSourcesDeleted),
        ("denyDeleteSource", .denyDeleteSource),
        ("denyDeleteDestination", .denyDeleteDestination),
    ]

    /// Rules that do something when the source goes.
    public static let firingOnSourceGone: DeleteRules = [
        .notifyIfSourceDeleted, .deleteDestinationIfSourceDeleted, .deleteDestinationIfAllSourcesDeleted,
    ]
    /// Rules that do something when the destination goes.
    public static let firingOnDestinationGone: DeleteRules = [
        .notifyIfDestinationDeleted, .deleteSourceIfDestinationDeleted, .deleteSourceIfAllDestinationsDeleted,
    ]

    /// The wire names of the rules in the set, in bit order.
    public var names: [String] { Self.named.filter { contains($0.1) }.map(\.0) }

    public var description: String { names.joined(separator: ",") }

    /// Parses an array of rule names, or the bitmask integer.
    public init(json: JSONValue) throws(StoreError) {
        switch json {
        case .int(let i):
            guard i >= 0, i < 256 else { throw StoreError(.invalidRules, "rule bitmask \(i) has unknown bits") }
            self.init(rawValue: Int(i))
        case .array(let items):
            var r = DeleteRules()
            for item in items {
                guard let name = item.stringValue else { throw StoreError(.invalidParams, "rules must be names") }
                guard let rule = Self.named.first(where: { $0.0 == name })?.1 else {
                    throw StoreError(.invalidRules, "unknown rule \"\(name)\"", detail: .string(name))
                }
                r.insert(rule)
            }
            self = r
        case .null:
            self = []
        default:
            // A wrong type is a malformed request, not an illegal rule.
            throw StoreError(.invalidParams, "rules must be an array of names or an integer")
        }
    }

    /// Parses rule names; unknown names are `invalid_rules`.
    public init(names: [String]) throws(StoreError) {
        try self.init(json: .array(names.map(JSONValue.string)))
    }

    /// The names as a JSON array.
    public var json: JSONValue { .array(names.map(JSONValue.string)) }

    /// Throws `invalid_rules`, naming the pair, for combinations that contradict each other
    /// or cannot apply to a file destination.
    public func validate(fileDestination: Bool) throws(StoreError) {
        func reject(_ a: DeleteRules, _ b: DeleteRules, _ why: String) throws(StoreError) {
            let pair = a.names + b.names
            throw StoreError(
                .invalidRules, "\(pair.joined(separator: " with ")): \(why)",
                detail: .array(pair.map(JSONValue.string)))
        }
        guard rawValue & ~255 == 0 else { throw StoreError(.invalidRules, "unknown rule bits") }
        if contains(.deleteDestinationIfSourceDeleted) && contains(.deleteDestinationIfAllSourcesDeleted) {
            try reject(
                .deleteDestinationIfSourceDeleted, .deleteDestinationIfAllSourcesDeleted,
                "one deletes the destination at once, the other counts references")
        }
        if contains(.deleteSourceIfDestinationDeleted) && contains(.deleteSourceIfAllDestinationsDeleted) {
            try reject(
                .deleteSourceIfDestinationDeleted, .deleteSourceIfAllDestinationsDeleted,
                "one deletes the source at once, the other counts references")
        }
        if contains(.denyDeleteDestination),
            let other = Self.named.first(where: {
                Self.firingOnDestinationGone.contains($0.1) && contains($0.1)
            })
        {
            try reject(.denyDeleteDestination, other.1, "a destination that cannot be deleted never fires it")
        }
        if contains(.denyDeleteSource),
            let other = Self.named.first(where: {
                Self.firingOnSourceGone.contains($0.1) && contains($0.1)
            })
        {
            try reject(.denyDeleteSource, other.1, "a source that cannot be deleted never fires it")
        }
        if fileDestination {
            for rule in [DeleteRules.notifyIfSourceDeleted, .denyDeleteSource, .denyDeleteDestination]
            where contains(rule) {
                throw StoreError(
                    .invalidRules, "\(rule.names[0]) does not apply to a file destination",
                    detail: .array([.string(rule.names[0]), .string("file")]))
            }
        }
    }
}
