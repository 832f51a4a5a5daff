// Errors the engine reports to its callers. Each has a stable code (the data.code names
// of assetd(8), CONTROL PROTOCOL, Errors, plus invalid_params) and a message for humans
// that never contains SQL text.

import JSON

/// An error from the store, with a stable code.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable error codes (assetd(8), CONTROL PROTOCOL, Errors), plus
    /// `invalid_params` for malformed arguments.
    public enum Code: String, Sendable, CaseIterable {
        case invalidParams = "invalid_params"
        case notFound = "not_found"
        case conflict
        case invalidPath = "invalid_path"
        case pathOutsideRoots = "path_outside_roots"
        case notARegularFile = "not_a_regular_file"
        case unsafePath = "unsafe_path"
        case invalidRules = "invalid_rules"
        case danglingEdge = "dangling_edge"
        case deleteDenied = "delete_denied"
        case queryRejected = "query_rejected"
        case permissionDenied = "permission_denied"
        case storageFull = "storage_full"
        case untaggedRoot = "untagged_root"
        case busy
        /// A reply larger than the daemon's control.max_reply_bytes.
        case replyTooLarge = "reply_too_large"
        /// A lease past the daemon's control.max_lease_entries_per_connection or total_lease_entries.
        case leaseLimit = "lease_limit"
        /// A request whose rules would delete more objects than the daemon's control.max_cascade_objects
        /// (or its deletions remove more edges than ten times that, plus ten).
        case cascadeLimit = "cascade_limit"
        case internalError = "internal"
    }

    /// What kind of failure.
    public let code: Code
    /// A sentence for people.
    public let message: String
    /// Structured detail for programs (the edge that denied, the offending pair of rules…).
    public let detail: JSONValue?
    /// The errno of the system call that failed, where a file's look ended on one
    /// (FileProbe): a transient one (`FileProbe.isTransient`) says nothing about the file.
    var systemError: Int32?

    /// A reply over `limit` bytes, with the hint to ask for less: `advice`, else the ways a
    /// query or a listing asks for less.
    public static func replyTooLarge(_ limit: Int, advice: String? = nil) -> StoreError {
        StoreError(
            .replyTooLarge,
            "the reply would be larger than \(limit) bytes (control.max_reply_bytes): ask for less, "
                + (advice
                    ?? "with a LIMIT in the clause (ORDER BY key and key > the last one for the next page), "
                    + "include \"keys\", or object.list with limit and after")
        )
    }

    /// A lease refused because `whose` leases would hold more than `limit` entries (`key`).
    /// With `lapsed`, `held` counts lapsed leases not removed yet, bounded at twice `limit`.
    public static func leaseLimit(
        _ whose: String, _ key: String, _ limit: Int, held: Int, lapsed: Bool = false
    ) -> StoreError {
        let message =
            lapsed
            ? "\(whose) would hold more than \(2 * limit) objects and files counting lapsed leases (\(key) = "
                + "\(limit), \(held) held): lapsed leases are freed by the next sweep; release "
                + "leases first, or lease for longer"
            : "\(whose) would hold more than \(limit) objects and files (\(key) = \(limit), \(held) held): "
                + "release leases first, or lease less at once"
        return StoreError(
            .leaseLimit, message,
            detail: ["limit": .string(key), "value": .int(Int64(limit))])
    }

    /// A request refused because its rules would delete more than `limit` objects, or its
    /// deletions remove more than `edges` edges (the bound's share for edges).
    public static func cascadeLimit(_ limit: Int, edges: Int? = nil) -> StoreError {
        let what =
            edges.map { "its deletions would remove more than \($0) edges" }
            ?? "the delete rules would delete more than \(limit) objects"
        return StoreError(
            .cascadeLimit,
            "\(what) for this request "
                + "(control.max_cascade_objects = \(limit)): nothing was changed; delete the "
                + "objects the cascade would reach in smaller steps first, or ask an admin",
            detail: ["limit": "control.max_cascade_objects", "value": .int(Int64(limit))])
    }

    /// An error with a code and message.
    public init(_ code: Code, _ message: String, detail: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// True when a write committed but its WAL could not be synced: retrying would commit it again.
    public var isUnsynced: Bool { detail?["unsynced"] == true }
}
