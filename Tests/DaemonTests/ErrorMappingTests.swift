// Engine errors as the wire reports them (AssetService's RPCError+StoreError.swift): every
// engine code has the wire code of the same name, and the JSON-RPC numbers are kept.

import AssetService
import AssetStore
import ControlProtocol
import Testing

@Suite struct ErrorMappingTests {
    @Test("engine errors map to -32000 with data.code, invalid params to -32602, internal to -32603")
    func errorMapping() {
        #expect(RPCError(StoreError(.notFound, "x")).code == -32000)
        #expect(RPCError(StoreError(.notFound, "x")).stableCode == "not_found")
        #expect(RPCError(StoreError(.invalidParams, "x")).code == -32602)
        #expect(RPCError(StoreError(.internalError, "x")).code == -32603)
        #expect(RPCError(StoreError(.deleteDenied, "x", detail: ["name": "e"])).data?["detail"]?["name"] == "e")
    }

    @Test("every engine code becomes the wire code with the same stable string", arguments: StoreError.Code.allCases)
    func sameStableString(code: StoreError.Code) {
        #expect(RPCError.Code(code).rawValue == code.rawValue)
    }

    @Test("the codes only the protocol produces keep their stable strings")
    func protocolCodes() {
        #expect(RPCError.Code.shuttingDown.rawValue == "shutting_down")
        #expect(RPCError.requestTooLarge(limit: 10).stableCode == "request_too_large")
        #expect(
            Set(RPCError.Code.allCases.map(\.rawValue)).subtracting(StoreError.Code.allCases.map(\.rawValue))
                == ["shutting_down", "request_too_large"])
    }
}
