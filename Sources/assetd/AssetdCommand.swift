// assetd's command line (assetd(8), DESCRIPTION and EXIT STATUS): runs in the foreground and logs
// to stderr. Config errors exit 78; a database or socket held by another daemon, or a default root
// the disk will not take, exits 1.

import ArgumentParser
import AssetDaemon
import ControlProtocol
import Foundation
import Logging

@main
struct AssetdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assetd", abstract: "The assetd file-asset lifecycle daemon.", version: Version.product)

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The config file (default: /etc/assetd/assetd.toml as root, else $XDG_CONFIG_HOME/assetd/assetd.toml, else embedded defaults).",
            valueName: "path"))
    var config: String?

    @Flag(name: .long, help: "Check the configuration, print the effective settings and exit.")
    var checkConfig = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Bind this root to the database at this start though its marker names another database or it holds files the database never registered (repeatable; see assetd(8), ROOTS).",
            valueName: "root"))
    var adoptRoot: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log level: trace, debug, info, notice, warning, error, critical (overrides log.level).", valueName: "level"
        ))
    var logLevel: String?

    func run() throws {
        // The database, its side files, its folder and backups are readable by assetd only,
        // whatever umask it was started with (the unit's UMask=0077 does the same).
        umask(0o077)
        var settings: DaemonConfig
        do {
            settings = try DaemonConfig.load(path: config)
        } catch {
            FileHandle.standardError.write(Data("assetd: \(error)\n".utf8))
            throw ExitCode(78)
        }
        if let logLevel {
            guard let level = LogLevel(rawValue: logLevel) else {
                FileHandle.standardError.write(Data("assetd: --log-level: unknown level \(logLevel)\n".utf8))
                throw ExitCode(64)
            }
            settings.logLevel = level
        }
        // Only a configured root: a slip in the path must not pass unnoticed.
        for root in adoptRoot where !settings.isRoot(root) {
            let roots = settings.roots.joined(separator: ", ")
            FileHandle.standardError.write(
                Data("assetd: --adopt-root \(root): not one of files.roots (\(roots))\n".utf8))
            throw ExitCode(64)
        }
        settings.adoptRoots = adoptRoot
        let rootWarnings: [String]
        do {
            // --check-config judges the roots as start does, but creates nothing.
            rootWarnings = try settings.prepareRoots(create: !checkConfig)
        } catch {
            // A config error exits 78 (systemd does not restart); a default root the disk
            // will not take now exits 1, so it is tried again once there is room.
            FileHandle.standardError.write(Data("assetd: \(error)\n".utf8))
            throw ExitCode(error.exitStatus)
        }
        do {
            try settings.checkConfigFile()
            try settings.checkStateFolders()
            try settings.checkMinFree()
        } catch {
            FileHandle.standardError.write(Data("assetd: \(error)\n".utf8))
            throw ExitCode(78)
        }
        // Warned of, not refused: a read-only root can be meant (docs/DESIGN.md, Roots).
        let readOnlyRoots = settings.readOnlyRootWarnings()
        if checkConfig {
            // What start would refuse about the roots' markers (assetd(8), ROOTS).
            let bindings = settings.rootBindingProblems()
            if !bindings.refusals.isEmpty {
                for b in bindings.refusals { FileHandle.standardError.write(Data("assetd: \(b)\n".utf8)) }
                throw ExitCode(78)
            }
            for w in readOnlyRoots + bindings.warnings + settings.accessWarnings + settings.limitWarnings
                + settings.policyWarnings
            {
                FileHandle.standardError.write(Data("assetd: warning: \(w)\n".utf8))
            }
            print(settings.summary.joined(separator: "\n"))
            return
        }
        LoggingSystem.bootstrap { EscapingLogHandler(inner: StreamLogHandler.standardError(label: $0)) }
        // Twice the cores: measured on 2 cores, 16 threads thrash (socket gets 0.10x Redis),
        // 4 give 0.20x and still leave readers room while two long scans run. Set before the
        // first uv_queue_work; a user's own value wins.
        setenv("UV_THREADPOOL_SIZE", "\(max(4, 2 * ProcessInfo.processInfo.activeProcessorCount))", 0)
        var logger = Logger(label: "assetd")
        logger.logLevel = Logger.Level(settings.logLevel)
        for warning in rootWarnings + readOnlyRoots + settings.accessWarnings + settings.limitWarnings
            + settings.policyWarnings
        {
            logger.warning("\(warning)")
        }
        let daemon: Daemon
        do {
            daemon = try Daemon(
                config: settings, configPath: config, logLevelOverride: logLevel.flatMap(LogLevel.init(rawValue:)),
                logger: logger)
        } catch {
            logger.error("cannot start: \(error)")
            throw ExitCode(1)
        }
        let status = daemon.run()
        if status != 0 { throw ExitCode(status) }
    }
}
