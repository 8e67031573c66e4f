#if canImport(Glibc)
import Glibc
#endif

/// Asks the kernel to back a large buffer with transparent huge pages before it is first
/// written. Restoring a snapshot writes tens of MiB of fresh memory; at 4 KiB a fault that is
/// thousands of faults (about 0.5 ms per MiB on the machines here), at 2 MiB a handful.
/// A hint only: where THP is off, or off Linux, nothing changes.
enum HugePages {
    static func advise(_ buffer: UnsafeMutableRawBufferPointer) {
        #if os(Linux)
        guard let base = buffer.baseAddress, buffer.count >= 4 << 20 else { return }
        let page = 4096
        let start = (Int(bitPattern: base) + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: base) + buffer.count) & ~(page - 1)
        guard end > start else { return }
        _ = madvise(UnsafeMutableRawPointer(bitPattern: start), end - start, MADV_HUGEPAGE)
        #endif
    }
}
