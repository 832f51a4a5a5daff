// The wall clock can step: NTP's first sync on a machine without a battery-backed clock,
// `date -s`, a virtual machine resumed from a snapshot. The store's stamps (an object's
// creation, a queued unlink's time and next attempt) and the files' own times are the wall
// clock's, as shown to clients and kept across restarts; but the delays that protect
// (files.unlink_delay, the unlink backoff, policy min_age, files.orphan_grace) must not end
// early when it steps forward. So every clock step this process sees is remembered, and a stamp
// made before a step forward is aged on the step-free clock (the wall clock at the start plus
// the boot clock since): an age is honoured while either clock says it has not passed. A step
// back only makes the wall clock's ages shorter (protective); the unlink queue bounds what it
// parks (Store+Sweep.swift). Across a restart only the wall clock is left. docs/DESIGN.md,
// The clocks.

import Glibc
import Synchronization

/// The wall clock, with the steps of it this process has seen against a step-free clock.
public final class ClockSteps: Sendable {
    let wall: @Sendable () -> Double
    let steady: @Sendable () -> Double
    private let state: Mutex<State>

    /// How far the wall clock may move against the steady clock and not count as a step (a
    /// slew): the owed look's (OwedLook.swift), which trusts the same two clocks.
    static let slack = Double(OwedLook.clockSlack) / 1e9

    struct State {
        /// Wall less steady at the last step seen (at the start, before any).
        var offset: Double
        /// The least wall less steady seen since the start.
        var lowest: Double
        /// Stamps below this were made before the latest step forward: see `Reading`.
        var boundary = -Double.infinity
        /// Steps back seen since the start.
        var stepsBack = 0
    }

    /// A reading of both clocks and of the steps seen so far.
    public struct Reading: Sendable {
        /// The wall clock, Unix seconds.
        public var wall: Double
        /// The steady clock, seconds (CLOCK_BOOTTIME in the daemon).
        public var steady: Double
        /// Stamps below this may have been made before a step forward and are aged less by
        /// `forward`; -infinity when the wall clock never stepped forward.
        var boundary: Double
        /// How much further the wall clock is ahead of the steady one than it ever was before.
        var forward: Double
        /// Steps back seen since the start.
        var stepsBack: Int

        /// Whether a step forward was seen: only then are some stamps aged less.
        var steppedForward: Bool { boundary > -.infinity }

        /// What is older than `age` seconds by both clocks.
        func olderThan(_ age: Double) -> AgeCutoff {
            AgeCutoff(before: wall - age, boundary: boundary, correctedBefore: wall - age - forward)
        }

        /// The wall time a steady-clock time `t` reads as now.
        func wall(atSteady t: Double) -> Double { wall + (t - steady) }
    }

    /// Reads `wall` and `steady` (tests pass their own; the daemon the system's clocks).
    init(wall: @escaping @Sendable () -> Double, steady: @escaping @Sendable () -> Double) {
        self.wall = wall
        self.steady = steady
        let d = wall() - steady()
        state = Mutex(State(offset: d, lowest: d))
    }

    /// Both clocks now. A step forward marks where the stamps made before it end: at the wall
    /// time read now, after it. A stamp made after it, but within the time since the last
    /// reading (the daemon reads it every second), is taken for one made before, which only
    /// protects it longer. Not the time the clock would read without the step: after a step
    /// back, the stamps made before that one lie above it, and were judged by the stepped wall
    /// clock alone (a step back of an hour, then forward two, evicted objects 4 s old).
    public func read() -> Reading {
        state.withLock { s in
            let (w, t) = (wall(), steady())
            let d = w - t
            if d > s.offset + ClockSteps.slack {
                s.boundary = w
                s.offset = d
            } else if d < s.offset - ClockSteps.slack {
                s.stepsBack += 1
                s.offset = d
            }
            s.lowest = min(s.lowest, d)
            let forward = s.boundary == -.infinity ? 0 : max(0, d - s.lowest)
            return Reading(wall: w, steady: t, boundary: s.boundary, forward: forward, stepsBack: s.stepsBack)
        }
    }

    /// CLOCK_BOOTTIME in seconds: it never steps, and counts the time the machine was
    /// suspended, as the wall clock does.
    public static func bootClock() -> Double { Double(bootNanoseconds()) / 1e9 }

    /// CLOCK_BOOTTIME in nanoseconds.
    static func bootNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_BOOTTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// Which stamps (wall clock) are older than an age by both clocks: at most `before`, and
/// either at least `boundary` (made after the last step forward) or at most `correctedBefore`.
struct AgeCutoff: Sendable, Equatable {
    var before: Double
    var boundary: Double
    var correctedBefore: Double

    /// A cutoff on the wall clock alone (tests, and stamps of no clock of this process).
    init(before: Double) { (self.before, boundary, correctedBefore) = (before, -.infinity, before) }

    init(before: Double, boundary: Double, correctedBefore: Double) {
        (self.before, self.boundary, self.correctedBefore) = (before, boundary, correctedBefore)
    }

    func isOld(_ stamp: Double) -> Bool { stamp <= before && (stamp >= boundary || stamp <= correctedBefore) }

    /// `isOld` in SQL on `column`, and its arguments; as it always was without a step forward.
    func sql(_ column: String) -> (String, [Double]) {
        guard boundary > -.infinity else { return ("\(column) <= ?", [before]) }
        return ("\(column) <= ? AND (\(column) >= ? OR \(column) <= ?)", [before, boundary, correctedBefore])
    }
}
