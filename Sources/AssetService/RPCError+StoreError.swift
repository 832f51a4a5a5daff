// The one mapping from the engine's errors to the protocol's: every StoreError a method lets
// through reaches the client as this. The switch is exhaustive so a new engine code must be
// given its wire code here.

import AssetStore
import ControlProtocol

extension RPCError {
    /// The engine's error as the protocol reports it: `invalid_params` as -32602, `internal`
    /// as -32603, the rest as application errors with the same `data.code` and the detail.
    public init(_ e: StoreError) {
        switch e.code {
        case .invalidParams: self = .invalidParams(e.message)
        case .internalError: self = RPCError(code: RPCError.internalErrorCode, message: e.message)
        default: self = .application(RPCError.Code(e.code), e.message, detail: e.detail)
        }
    }
}

extension RPCError.Code {
    /// The wire code of an engine code.
    public init(_ code: StoreError.Code) {
        switch code {
        case .invalidParams: self = .invalidParams
        case .notFound: self = .notFound
        case .conflict: self = .conflict
        case .invalidPath: self = .invalidPath
        case .pathOutsideRoots: self = .pathOutsideRoots
        case .notARegularFile: self = .notARegularFile
        case .unsafePath: self = .unsafePath
        case .invalidRules: self = .invalidRules
        case .danglingEdge: self = .danglingEdge
        case .deleteDenied: self = .deleteDenied
        case .queryRejected: self = .queryRejected
        case .permissionDenied: self = .permissionDenied
        case .storageFull: self = .storageFull
        case .untaggedRoot: self = .untaggedRoot
        case .busy: self = .busy
        case .replyTooLarge: self = .replyTooLarge
        case .leaseLimit: self = .leaseLimit
        case .cascadeLimit: self = .cascadeLimit
        case .internalError: self = .internalError
        }
    }
}
