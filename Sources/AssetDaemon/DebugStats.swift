// Debug builds only, for tests of a running assetd: counts of the daemon's internals, shown
// in `stats` under `debug` while ASSETD_DEBUG_STATS is set. `event_lines_rendered`: event
// lines rendered since start, so a test sees that a commit's events are rendered once
// however many watchers take them; `parsed_requests_waiting`: requests queued that were
// parsed when read, not kept as text; `identity_lookups`: peers looked up in the user and
// group databases at accept, so a test sees that a refused connection costs none;
// `parses_waiting`: connections whose long line waits for the running requests to hold less
// (ParseGate), `parses_running` the long lines it let in and not yet done;
// `read_only_maintenance`: how many non-admins' read-only runs hold their uid's slot, or null, so a test
// sees a dropped job free both; `users`: uids whose share is kept (UserShare);
// `leases_draining`: leases waiting for their uid's writes under way, and `turns_waiting`:
// calls waiting their uid's turn (LeasedTurns); `edge_rows_read`: edge rows the store has
// read (EdgeRow.swift), so a test sees that file.get stops at the reply limit; `puts_waiting`:
// puts queued for the group commit and not yet answered, so a test sees them all queued
// before the committer goes on. Release builds count nothing.

#if DEBUG
import Glibc

enum DebugStats {
    /// Whether `stats` shows them.
    static let shown = getenv("ASSETD_DEBUG_STATS") != nil
    /// Event lines rendered so far.
    // Loop-bound: events are rendered on the loop thread only.
    nonisolated(unsafe) static var eventLinesRendered = 0
    /// Peers looked up in the user and group databases at accept.
    // Loop-bound: connections are accepted on the loop thread only.
    nonisolated(unsafe) static var identityLookups = 0
}
#endif
