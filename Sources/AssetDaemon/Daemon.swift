// The daemon: owns the loop and the store, and runs start-up in the order of assetd(8), START-UP
// AND SHUTDOWN (open the store, rebuild changed indexes, drain unlinks, bind the socket, READY=1),
// the sweep timer (which also ends lapsed leases), the policy timer, signals (TERM/INT stop
// gracefully, HUP reloads), and the shutdown sequence. The policy timer is in Daemon+Policy.swift.

import AssetService
import AssetStore
import ControlProtocol
import EventLoop
import Foundation
import Logging
import Synchronization

/// A running assetd.
public final class Daemon {
    /// A SIGHUP came before its watcher was up (set from a signal handler).
    static let hangUpDuringStart = Atomic<Bool>(false)

    /// Settings in force (access lists and log level change on SIGHUP).
    private(set) var config: DaemonConfig
    private let configPath: String?
    /// `--log-level`: wins over log.level, on reload too.
    private let logLevelOverride: LogLevel?
    var logger: Logger
    let loop: Loop
    /// The thread pool: the daemon's own jobs at once, clients' in turn by uid.
    let pool: PoolTurns
    private(set) var store: Store!
    private(set) var server: ControlServer!
    private var signals: [SignalWatcher] = []
    private var sweepTimer: EventLoop.Timer?
    /// What systemd's start timeout is extended by before the check of a crash's WAL: 10 min,
    /// about 50 GB read cold at the 9.5 s per 533 MB measured (docs/PERFORMANCE.md).
    static let walCheckTimeoutExtension = 600_000_000

    /// Runs `store.enforce()` every policy.interval while `[policy]` is configured.
    var policyTimer: EventLoop.Timer?
    /// Every `store.access_flush`: writes the access times touches left in memory.
    var accessFlushTimer: EventLoop.Timer?
    /// A flush of access times is on the pool: the timer does not queue another.
    var accessFlushRunning = false
    /// One maintenance run at a time: clients' and the policy timer's.
    let maintenance: MaintenanceSlot
    /// control.subuid_file's ranges: the uids of one count as one user of their own for the
    /// per-uid bounds (ControlServer.accept). Read at start and on SIGHUP.
    private(set) var subordinates = SubordinateRanges()
    /// Files of leases ended since the last sweep, which the next sweep reschedules (bounded).
    private var endedLeases = EndedLeaseFiles()
    private(set) var stopping = false
    private(set) var finished = false
    private var inFlight = 0
    private var sweeping = false
    private var sweepAgain = false
    /// Checkpoint failures already logged: each new one is logged once, on the sweep timer.
    private var loggedCheckpointFailures = 0
    private var loggedSyncFailure = false
    let started = QueryClock.now()
    private(set) var lastCommit: Int64 = 0

    /// A daemon for `config`, read from `configPath` (nil: the default file or embedded defaults).
    public init(config: DaemonConfig, configPath: String?, logLevelOverride: LogLevel? = nil, logger: Logger) throws {
        self.config = config
        self.configPath = configPath
        self.logLevelOverride = logLevelOverride
        self.logger = logger
        loop = try Loop()
        pool = PoolTurns(loop: loop)
        maintenance = MaintenanceSlot(readOnlyTotal: pool.perUser)
    }

    /// Runs until stopped; returns the exit status (0 after a clean stop, 1 if start-up failed).
    public func run() -> Int32 {
        signal(SIGPIPE, SIG_IGN)  // a client gone mid-write must be an error, not the end of the daemon
        // A launcher may have blocked signals; systemd does not. Start from an empty mask so
        // SIGTERM, SIGINT and SIGHUP always reach their watchers.
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        // Until its watcher is up (after the store opens, which may take minutes), a SIGHUP
        // would end the daemon by default, and systemd restarts only a failure: noted instead,
        // and the reload it asked for done once the watcher is up.
        signal(SIGHUP) { _ in Daemon.hangUpDuringStart.store(true, ordering: .relaxed) }
        for line in config.summary { logger.info("\(line)") }
        #if DEBUG
        StartHold.wait()
        #endif
        switch SocketProbe.state(of: config.socketPath) {
        case .live:
            logger.error("another assetd is serving \(config.socketPath); leaving it alone")
            return 1
        case .notASocket:
            logger.error("\(config.socketPath) exists and is not a socket")
            return 1
        case .stale, .absent:
            break
        }
        // A database about to be created: a root another database bound, or full of files,
        // is refused before an empty database is left at store.path (assetd(8), ROOTS).
        if access(config.storePath, F_OK) != 0, case let problems = config.rootBindingProblems().refusals,
            !problems.isEmpty
        {
            for p in problems { logger.error("\(p)") }
            return 78
        }
        // After a crash the open reads the whole database through the WAL it left (quick_check,
        // assetd(8)): on a large cold store that outlasts systemd's start timeout, so it is said
        // and the timeout extended before it begins.
        if let wal = try? FileManager.default.attributesOfItem(atPath: config.storePath + "-wal")[.size] as? Int,
            wal > 0
        {
            let line = "checking the WAL a crash left (\(wal) bytes): reads the whole database once"
            logger.notice("\(config.storePath)-wal: \(line)")
            SystemdNotify.send("STATUS=\(line)\nEXTEND_TIMEOUT_USEC=\(Daemon.walCheckTimeoutExtension)")
        }
        do {
            let rebuilds = RebuildLog(logger)
            var sc = config.storeConfiguration()
            sc.lockHolder = "assetd"  // an `assetctl --db` that finds it held fails, not skips
            store = try Store(path: config.storePath, configuration: sc) { p in
                rebuilds.note(p)
            }
        } catch let e as StoreError where e.code == .busy {
            logger.error("\(config.storePath): \(e.message)")  // "the database is held by another process (pid N)"
            return 1
        } catch let e as StoreError where Store.isAdminRefusal(e) {
            // A backup copy ("... run `assetctl --db PATH --config CONFIG restore` first"), a
            // foreign log, a newer schema, a damaged file, a root of another database or daemon,
            // an upgrade the disk has no room for. 78, as a config error: systemd does not
            // restart (RestartPreventExitStatus), nothing changes until an admin acts.
            logger.error("\(e.message)")
            return 78
        } catch {
            logger.error("cannot open the database \(config.storePath): \(error)")
            return 1
        }
        for w in store.openWarnings { logger.warning("\(w)") }
        lastCommit = (try? store.read { try $0.lastCommit() }) ?? 0
        // Checked again after the store opened: a daemon may have started meanwhile.
        switch SocketProbe.state(of: config.socketPath) {
        case .live:
            logger.error("another assetd is serving \(config.socketPath); leaving it alone")
            store.close()
            return 1
        case .stale:
            logger.info("replacing a stale socket at \(config.socketPath)")
            unlink(config.socketPath)
        case .notASocket:
            store.close()
            return 1
        case .absent:
            break
        }
        let folder = (config.socketPath as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        loadSubordinates()
        server = ControlServer(daemon: self)
        do {
            try server.start(path: config.socketPath, mode: config.socketMode)
            for (sig, action) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
                signals.append(try SignalWatcher(loop: loop, signal: sig) { [unowned self] in beginStop(action) })
            }
            signals.append(try SignalWatcher(loop: loop, signal: SIGHUP) { [unowned self] in reload() })
            if Daemon.hangUpDuringStart.exchange(false, ordering: .relaxed) {
                logger.info("a SIGHUP came while starting: reloading")
                reload()
            }
            let timer = try EventLoop.Timer(loop: loop)
            try timer.start(after: 1, repeating: 1) { [unowned self] in tick() }
            sweepTimer = timer
            try startPolicyTimer()
            try startAccessFlushTimer()
        } catch {
            logger.error("cannot serve \(config.socketPath): \(error)")
            server.closeAll()  // stops the put threads before the store closes under them
            store.close()
            return 1
        }
        SystemdNotify.send("READY=1\nSTATUS=serving \(config.socketPath)")  // over a rebuild's status
        logger.info("ready: serving \(config.socketPath)")
        loop.run()
        do { try loop.close() } catch { logger.warning("event loop closed with handles open: \(error)") }
        logger.info("stopped")
        return 0
    }

    /// Runs the daemon's own `work` (a sweep, a flush, a policy run) on the thread pool now,
    /// ahead of clients' jobs, counted as in flight until `done` has run.
    func submit(_ work: @escaping @Sendable () -> Void, done: @escaping () -> Void) throws(UVError) {
        workStarted()
        do {
            try pool.submitOwn(work) { [unowned self] in
                done()
                workEnded()
            }
        } catch {
            inFlight -= 1
            throw error
        }
    }

    /// Runs a client's `work` on the thread pool in `uid`'s turn, counted as in flight until
    /// `done` has run; dropped unrun if `connection` closes before its turn.
    func submit(
        uid: UInt32, connection: UInt64, _ work: @escaping @Sendable () -> Void, done: @escaping () -> Void
    ) {
        workStarted()
        pool.submit(uid: uid, connection: connection, work) { [unowned self] in
            done()
            workEnded()
        }
    }

    /// Work handed off the loop (a pool job, a queued put): a stop waits for it to end.
    func workStarted() {
        inFlight += 1
    }

    /// `count` pieces of work have ended and been answered.
    func workEnded(_ count: Int = 1) {
        inFlight -= count
        checkStopped()
    }

    /// Records the latest commit (replies to ping carry it).
    func noteCommit(_ commit: Int64) {
        lastCommit = max(lastCommit, commit)
    }

    /// Every second: the sweep, and a log line for checkpoint failures, which happen off any
    /// request (a WAL that cannot be checkpointed grows until the disk is full).
    private func tick() {
        logSpaceNotices()
        server.trimMemory()
        server.secondPassed()
        server.stopOrphanedQueries()
        let wal = store.walStatus
        if wal.checkpointFailures > loggedCheckpointFailures {
            logger.error(
                "checkpoint failed (\(wal.checkpointFailures - loggedCheckpointFailures) more, the WAL is \(wal.frames) pages): \(wal.lastCheckpointError ?? "unknown error")"
            )
            loggedCheckpointFailures = wal.checkpointFailures
        }
        if let failure = store.syncFailure {
            if !loggedSyncFailure {
                loggedSyncFailure = true
                let why = "writes are refused, and unlinks and policy runs wait, until assetd is restarted"
                logger.critical("a sync of the database failed (\(failure)): \(why)")
            }
            _ = store.leases.removeExpired()  // lapsed leases: the sweep that drops them is off
            return
        }
        scheduleSweep()
    }

    /// Runs due unlinks on the pool; one sweep at a time, another right after if asked meanwhile.
    /// None while stopping: the queue is durable and the next start drains it. None after a
    /// failed sync either: it could only fail, every second (the restart drains the queue).
    func scheduleSweep() {
        guard !stopping, store.syncFailure == nil else { return }
        if sweeping {
            sweepAgain = true
            return
        }
        sweeping = true
        let box = Box<Result<SweepReport, any Error>>()
        let store = self.store!
        let ended = endedLeases
        endedLeases = EndedLeaseFiles()
        do {
            try submit({
                box.value = Result {
                    store.maintainSpace()  // the reserve back once there is room; the WAL kept small when there is not
                    // Leases that ended or lapsed first: their kept files become due again.
                    var all = ended
                    all.add(store.leases.removeExpired())
                    try MethodTable.leasesEnded(all, store)
                    return try store.sweep()
                }
            }) { [unowned self] in
                sweeping = false
                switch box.value {
                case .success(let report)?:
                    reportSweep(report)
                case .failure(let e)?:
                    logger.error("sweep failed: \(e)")
                case nil:
                    break
                }
                if sweepAgain && !stopping {
                    sweepAgain = false
                    scheduleSweep()
                }
            }
        } catch {
            sweeping = false
            logger.error("cannot schedule a sweep: \(error)")
        }
    }

    /// Leases that ended with their connection: the next sweep reschedules their files.
    func leasesEnded(_ leases: [Lease]) {
        // After a failed sync the restart reschedules what leases held back (no sweep runs).
        guard !leases.isEmpty, !finished, store.syncFailure == nil else { return }
        endedLeases.add(leases)
        scheduleSweep()
    }

    /// SIGTERM, SIGINT or `shutdown`: stop accepting, let in-flight requests finish.
    func beginStop(_ why: String) {
        guard !stopping else { return }
        stopping = true
        logger.info("stopping (\(why)): finishing \(inFlight) in-flight requests")
        SystemdNotify.send("STOPPING=1")
        server.stopAccepting()
        // A query may run to its time limit and others wait for a lane thread: the stop
        // would outlast systemd's TimeoutStopSec.
        server.stopQueries()
        pool.liftCaps()
        unlink(config.socketPath)
        sweepTimer?.close()
        sweepTimer = nil
        policyTimer?.close()
        policyTimer = nil
        accessFlushTimer?.close()
        accessFlushTimer = nil
        checkStopped()
    }

    /// Once stopping and nothing runs: close connections, checkpoint, close the store.
    func checkStopped() {
        guard stopping, !finished, inFlight == 0, server.allIdle else { return }
        finished = true
        server.closeAll()
        // The signal watchers stay until the store is closed: closing one restores the default
        // action, and a second SIGTERM would then kill the process mid-checkpoint (which waits
        // up to 10 s for readers). After that the signals are ignored until exit.
        // The touches still in memory go into the WAL the checkpoint then writes back.
        if let why = store.writePendingAccesses() { logger.warning("access times lost at shutdown: \(why)") }
        logger.info("checkpointing the database before exit")
        do {
            if try !store.checkpoint() {
                logger.warning("the WAL could not be emptied before exit: another process is reading the database")
            }
        } catch {
            logger.warning("checkpoint at shutdown failed: \(error)")
        }
        store.close(checkpoint: false)  // just done (a second would wait for that reader again)
        for s in signals { s.close() }
        signals = []
        for sig in [SIGTERM, SIGINT, SIGHUP] { signal(sig, SIG_IGN) }
    }

    /// Reads control.subuid_file's ranges; the lines skipped, and the oddities of those kept,
    /// are logged once a reading. A range holding the daemon's uid or an admin uid is refused.
    /// Connections counted as another principal before are closed (subordinatesReloaded).
    private func loadSubordinates() {
        let path = config.subuidFile
        subordinates = SubordinateRanges.load(path: path, refusing: Set(config.adminUIDs + [getuid()]))
        for s in subordinates.skipped { logger.warning("\(path): \(s)") }
        for s in subordinates.notes { logger.notice("\(path): \(s)") }
        if !path.isEmpty { logger.info("\(path): \(subordinates.ranges.count) subordinate uid ranges") }
    }

    /// SIGHUP: re-reads access lists and the log level; a bad file keeps the old settings.
    private func reload() {
        // Again at each reload, of the running roots, whatever the new file holds: a root can be
        // remounted read-only with no restart.
        for w in config.readOnlyRootWarnings() { logger.warning("\(w)") }
        do {
            var fresh = try DaemonConfig.load(path: configPath)
            try fresh.checkConfigFile()
            try fresh.checkReloadable(replacing: config)
            // Roots change only at a restart: min_free is judged on the file systems it will
            // be enforced on, the running roots', not those the file names now.
            let rootsChanged = fresh.roots.map { Array($0.utf8) } != config.roots.map { Array($0.utf8) }
            fresh.roots = config.roots
            try fresh.checkMinFree()
            // The running layout judged again: a bind mount made since may show the database's
            // folder, the socket's or the config file inside a root (assetd.toml(5), files.roots).
            // Logged, not refused: the settings (admins dropped, ownership turned on) still apply.
            do {
                try config.checkRootsHoldNothingOfOurs()
            } catch {
                logger.error("the running layout is refused at the next start: \(error)")
            }
            for change in accessChanges(to: fresh) { logger.warning("reload: \(change)") }
            config.adminUIDs = fresh.adminUIDs
            config.adminGroups = fresh.adminGroups
            config.enforceOwnership = fresh.enforceOwnership
            store.enforceOwnership = fresh.enforceOwnership
            config.subuidFile = fresh.subuidFile
            let before = subordinates.ranges
            loadSubordinates()
            if subordinates.ranges != before { server?.subordinatesReloaded() }
            server?.settingsReloaded()
            config.logLevel = logLevelOverride ?? fresh.logLevel
            logger.logLevel = Logger.Level(config.logLevel)
            let interval = config.policy?.interval
            config.policy = fresh.policy
            store.policy = fresh.policy
            // Restarting an unchanged timer would push its next run out on every reload.
            if fresh.policy?.interval != interval { try startPolicyTimer() }
            let source = fresh.sourcePath ?? "embedded defaults"
            logger.info("reloaded \(source): access lists, subuid ranges, log level and policies")
            if rootsChanged {
                logger.notice("files.roots changed: it takes effect at the next start; still managing \(config.roots)")
            }
            for w in fresh.accessWarnings { logger.warning("\(w)") }
            logMinFreeCaps()
        } catch {
            logger.error("reload failed, keeping the current settings: \(error)")
        }
    }

    /// What a reload gives up of access control, said where the admin reads the log.
    private func accessChanges(to fresh: DaemonConfig) -> [String] {
        var out = [String]()
        let uids = fresh.adminUIDs.filter { !config.adminUIDs.contains($0) }
        if !uids.isEmpty { out.append("control.admin_uids adds \(uids)") }
        let groups = fresh.adminGroups.filter { !config.adminGroups.contains($0) }
        if !groups.isEmpty { out.append("control.admin_groups adds \(groups)") }
        return out
    }
}
