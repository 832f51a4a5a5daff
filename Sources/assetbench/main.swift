// assetbench: the speed goals of scripts/bench.sh (part store) that compare the engine with a
// SQLite C baseline. Usage: assetbench [N] [scratch-folder]; scripts/bench.sh builds and runs
// it. Every folder it makes lives below the scratch folder and is removed before it exits.
// The goals measured over a running daemon's socket are subcommands (SocketBench.swift):
// populate, wait, socket, ping-scan; `top100` runs the top-100 workload alone (Top100Bench.swift).

import Glibc

if let status = SocketCommands.run(CommandLine.arguments) { exit(status) }

let options = Options(CommandLine.arguments)
let scratch = Scratch(parent: options.folder)
let exitCode: Int32
do {
    try Bench(n: options.n, scratch: scratch).run()
    exitCode = 0
} catch {
    printError("assetbench: \(error)")
    exitCode = 1
}
scratch.removeAll()
exit(exitCode)
