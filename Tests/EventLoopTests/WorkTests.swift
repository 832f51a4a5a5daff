// The thread pool: work runs off the loop thread, completions run on it, and the loop stays
// alive until the last completion.

@testable import EventLoop
import Testing

extension EventLoopTests {
    @Suite struct WorkTests {
        @Test("the pool's size is read as libuv reads UV_THREADPOOL_SIZE, a negative value as 1,024")
        func threadsReadAsLibuvDoes() {
            #expect(Work.threads(UV_THREADPOOL_SIZE: nil) == 4)
            #expect(Work.threads(UV_THREADPOOL_SIZE: "8") == 8)
            #expect(Work.threads(UV_THREADPOOL_SIZE: "0") == 1)
            #expect(Work.threads(UV_THREADPOOL_SIZE: "x") == 1)
            #expect(Work.threads(UV_THREADPOOL_SIZE: "5000") == 1024)
            #expect(Work.threads(UV_THREADPOOL_SIZE: "-1") == 1024)
        }

        @Test("100 work items run off the loop thread and complete on it")
        func workRunsOffLoopDoneRunsOn() throws {
            let loop = try Loop()
            let loopThread = currentThread
            let ran = Locked(0)
            let ranOnLoopThread = Locked(0)
            var done = 0
            var doneOffLoopThread = 0
            for _ in 0..<100 {
                try Work.submit(
                    loop: loop,
                    {
                        ran.withLock { $0 += 1 }
                        if currentThread == loopThread { ranOnLoopThread.withLock { $0 += 1 } }
                    },
                    done: {
                        done += 1
                        if currentThread != loopThread { doneOffLoopThread += 1 }
                    })
            }
            runUntilIdle(loop)
            #expect(ran.value == 100)
            #expect(ranOnLoopThread.value == 0)
            #expect(done == 100)
            #expect(doneOffLoopThread == 0)
            expectClosesCleanly(loop)
        }

        @Test("done sees what work wrote")
        func doneSeesResult() throws {
            let loop = try Loop()
            let result = Locked<[Int]>([])
            var seen: [Int] = []
            try Work.submit(loop: loop, { result.withLock { $0 = Array(1...1000) } }, done: { seen = result.value })
            runUntilIdle(loop)
            #expect(seen == Array(1...1000))
            expectClosesCleanly(loop)
        }
    }
}
