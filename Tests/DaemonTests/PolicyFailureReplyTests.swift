// A policy request whose run failed after committing batches answers with what they did,
// `complete: false` and the error, instead of an error that hides the deletions.

@testable import AssetDaemon
@testable import AssetService
import AssetStore
import ControlProtocol
import Testing

@Suite("policy replies after a partial failure")
struct PolicyFailureReplyTests {
    @Test("the reply lists what the committed batches deleted, with the error that stopped the run")
    func partialPlanInReply() throws {
        var partial = PolicyPlan(dryRun: false)
        partial.objects = [PlannedDeletion(ref: ObjectRef("c", "k0"), reason: .age, bytes: 10)]
        partial.files = ["/r/f0"]
        partial.bytes = 10
        let outcome = try MethodTable.planned {
            throw PolicyRunFailure(completed: partial, underlying: StoreError(.storageFull, "the disk is full"))
        }
        let r = outcome.result
        #expect(r["complete"] == false)
        #expect(r["objects"]?.arrayValue?.count == 1 && r["bytes"] == 10)
        #expect(r["error"]?["data"]?["code"] == "storage_full")
        #expect(r["error"]?["message"] == "the disk is full")
    }

    @Test("a run that failed before committing anything is a plain error")
    func plainError() {
        #expect(throws: StoreError.self) {
            try MethodTable.planned { throw StoreError(.storageFull, "the disk is full") }
        }
    }
}
