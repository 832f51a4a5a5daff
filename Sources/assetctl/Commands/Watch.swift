// `assetctl watch [--collection C]… [--type T]…` → watch, then one line per event until the
// daemon closes the connection or the user interrupts (exit 0 either way). Socket only.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `watch`.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Print events as they happen, one per line.")

    @ParentCommand var root: AssetCtl

    @Option(help: ArgumentHelp("Only events of this collection (repeatable).", valueName: "collection"))
    var collection: [String] = []

    @Option(help: ArgumentHelp("Only events of this type, e.g. object.deleted (repeatable).", valueName: "type"))
    var type: [String] = []

    func run() throws {
        if root.db != nil {
            throw CLIFailure("watch needs a running assetd; it does not work with --db", status: ExitStatus.usage)
        }
        let backend = try root.backend()
        guard let client = backend.client else { return }
        var params: [String: JSONValue] = [:]
        if !collection.isEmpty { params["collections"] = .array(collection.map(JSONValue.string)) }
        if !type.isEmpty { params["types"] = .array(type.map(JSONValue.string)) }
        _ = try backend.call("watch", .object(params))
        // Output is written unbuffered, so leaving at once loses nothing.
        signal(SIGINT) { _ in _exit(0) }
        // A launcher may have blocked SIGINT; watching ends with it, so unblock it.
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &interrupt, nil)
        while true {
            let event: JSONValue?
            do {
                event = try client.nextEvent()
            } catch {
                throw Backend.failure(error, target: backend.target)
            }
            guard let event else { return }
            Console.out((root.json ? event.serialized() : Formatting.eventLine(event)) + "\n")
        }
    }
}
