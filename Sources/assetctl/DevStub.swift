// TEMPORARY development stub; deleted before hand-off.
import AssetStore
import ControlProtocol
struct LocalInvoker {
    init(databasePath: String, configPath: String?) throws {}
    func call(_ method: String, _ params: JSONValue) throws(RPCError) -> JSONValue {
        throw RPCError.application(.busy, "stub: database busy")
    }
}
