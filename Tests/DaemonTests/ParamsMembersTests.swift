// Params read from a request's members (a point read's, no dictionary) answer every lookup as
// Params of the request's params object do: a repeated name the last, null as absent.

import AssetService
import ControlProtocol
import Testing

@Suite struct ParamsMembersTests {
    @Test("params from members and from the object agree on every lookup and every error")
    func membersAgreeWithObject() throws {
        let lines = [
            #"{"collection":"c","key":"k"}"#,
            #"{"collection":"c","key":"x","key":"k","touch":true}"#,
            #"{"collection":"c","key":"k","touch":null,"key":null}"#,
            #"{"collection":"c","key":5,"touch":"yes"}"#,
            #"{"collection":{"a":1},"ref":{"collection":"d","key":"e"},"touch":false,"touch":true}"#,
            #"{}"#,
        ]
        for params in lines {
            let line = #"{"jsonrpc":"2.0","id":1,"method":"object.get","params":\#(params)}"#
            let request = try Array(line.utf8).withUnsafeBufferPointer { RPCRequest.parse($0) }.get()
            let flat = Params(request)
            let object = Params(request.params)
            #expect(request.paramMembers != nil)
            for name in ["collection", "key", "touch", "ref", "absent"] {
                #expect(flat.value(name) == object.value(name), "\(params) \(name)")
            }
            #expect(flat.object == object.object)
            #expect(
                MethodTable.capture { try flat.ref().description }
                    == MethodTable.capture { try object.ref().description }, "\(params)")
            #expect(
                MethodTable.capture { try flat.optionalBool("touch") }
                    == MethodTable.capture { try object.optionalBool("touch") }, "\(params)")
            #expect(
                MethodTable.capture { try flat.ref("ref").description }
                    == MethodTable.capture { try object.ref("ref").description }, "\(params)")
        }
    }
}
