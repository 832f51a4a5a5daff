// assetfuzz: a coverage-guided fuzzer over one target, chosen by ASSETFUZZ_TARGET (request,
// config, query), with libFuzzer's options as arguments. Built with libFuzzer only by
// scripts/fuzz.sh (-DFUZZING); a normal build makes a stub that says so.

import FuzzTargets

#if FUZZING
import Glibc

/// The target, read once: libFuzzer's own main owns the command line.
let target: FuzzTarget = {
    let name = getenv("ASSETFUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let t = FuzzTarget(rawValue: name) else {
        print("assetfuzz: set ASSETFUZZ_TARGET to \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))")
        exit(2)
    }
    return t
}()

/// libFuzzer's entry: one input. Also what its own main would call, which the linker keeps
/// though SwiftPM's main (this file) is the one that runs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    target.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

_ = target
var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(runDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
#else
print("assetfuzz is built and run by scripts/fuzz.sh (libFuzzer)")
#endif
