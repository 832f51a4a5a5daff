// Turn hooks: run once per iteration after that iteration's callbacks, never keep the loop
// alive on their own, and close cleanly (also from inside their own callback).

import CUV
import EventLoop
import Testing

extension EventLoopTests {
    @Suite struct TurnHookTests {
        @Test("a turn hook runs after the callbacks of each iteration")
        func runsAfterEachTurnsCallbacks() throws {
            let loop = try Loop()
            var fired = 0
            var seenByHook = [Int]()
            let hook = try TurnHook(loop: loop) { seenByHook.append(fired) }
            let timer = try Timer(loop: loop)
            try timer.start(after: 0, repeating: 0.001) {
                fired += 1
                if fired == 3 { timer.close() }
            }
            runUntilIdle(loop)
            #expect(fired == 3)
            // Every timer callback is followed by a hook run that sees it, in order.
            for n in 1...3 { #expect(seenByHook.contains(n)) }
            #expect(seenByHook == seenByHook.sorted())
            hook.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("an after-polling hook runs right after the poll phase's callbacks, before the next timers")
        func afterPollingRunsAfterPollCallbacks() throws {
            let loop = try Loop()
            var log = [String]()
            let hook = try TurnHook(loop: loop, at: .afterPolling) { log.append("check") }
            let waker = try Waker(loop: loop) { log.append("wake") }
            let timer = try Timer(loop: loop)
            var fired = 0
            try timer.start(after: 0, repeating: 0.001) {
                fired += 1
                log.append("timer")
                waker.wake()  // its callback runs in this iteration's poll phase
                if fired == 3 {
                    timer.close()
                    waker.close()
                }
            }
            runUntilIdle(loop)
            let wakes = log.indices.filter { log[$0] == "wake" }
            #expect(!wakes.isEmpty)
            for i in wakes { #expect(i + 1 < log.count && log[i + 1] == "check", "\(log)") }
            hook.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("in one turn, an after-polling hook runs after a wake-up queued before it, a before-polling one before")
        func afterPollingInOneTurn() throws {
            let loop = try Loop()
            var log = [String]()
            let after = try TurnHook(loop: loop, at: .afterPolling) { log.append("after") }
            let before = try TurnHook(loop: loop) { log.append("before") }
            let waker = try Waker(loop: loop) { log.append("wake") }
            waker.wake()
            _ = loop.runOnce(wait: false)
            #expect(log == ["before", "wake", "after"])
            for h in [after, before] { h.close() }
            waker.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("a turn hook alone does not keep run() alive")
        func doesNotKeepLoopAlive() throws {
            let loop = try Loop()
            var runs = 0
            let hook = try TurnHook(loop: loop) { runs += 1 }
            loop.run()  // returns: nothing but the unref'd hook is active
            #expect(runs <= 1)
            hook.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("a turn hook closed inside its callback runs no more")
        func closesInsideCallback() throws {
            let loop = try Loop()
            var runs = 0
            var closed = 0
            var hook: TurnHook?
            hook = try TurnHook(loop: loop) {
                runs += 1
                hook?.close { closed += 1 }
            }
            let timer = try Timer(loop: loop)
            var fired = 0
            try timer.start(after: 0, repeating: 0.001) {
                fired += 1
                if fired == 5 { timer.close() }
            }
            runUntilIdle(loop)
            #expect(fired == 5)
            #expect(runs == 1)
            #expect(closed == 1)
            hook = nil
            expectClosesCleanly(loop)
        }
    }
}
