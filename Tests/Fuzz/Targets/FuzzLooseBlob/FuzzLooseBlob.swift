@testable import BlobCache

/// libFuzzer's entry point: one input through `FuzzTarget.looseBlob` (no `main`: libFuzzer has it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FuzzTarget.looseBlob.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
