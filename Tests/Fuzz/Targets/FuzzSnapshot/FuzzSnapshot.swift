@testable import BlobCache

/// libFuzzer's entry point: one input through `FuzzTarget.snapshot` (no `main`: libFuzzer has it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.snapshot.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
