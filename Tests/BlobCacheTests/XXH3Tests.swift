import Testing
@testable import BlobCache

/// XXH3-64, a loose blob's checksum from format 3: the system's xxHash behind a kernel picked at
/// run time, so checked here against values of the reference implementation.
@Suite("XXH3")
struct XXH3Tests {
    private let data = (0..<300_000).map { UInt8(truncatingIfNeeded: ($0 * 31) >> 3) }

    /// From the `xxhash` Python package (the C library's bindings), `xxh3_64_intdigest(data[:n])`:
    /// every length class of XXH3 (0, 1–3, 4–8, 9–16, 17–128, 129–240, and long inputs, whole
    /// and partial stripes and blocks).
    private let expected: [(Int, UInt64)] = [
        (0, 0x2D06_8005_38D3_94C2), (1, 0xC44B_DFF4_074E_ECDB), (3, 0x96D9_7441_6DA0_DC92),
        (4, 0x1AED_5621_5A76_FB91), (8, 0xACFA_8C02_4C10_E961), (9, 0xBFDF_6272_356A_BC8F),
        (16, 0x6DE0_D140_23CA_71C9), (17, 0x4ED5_018D_9ECC_4CF5), (128, 0xB921_3927_8A3A_07A0),
        (129, 0x3427_B55C_0FBE_890C), (240, 0x82AF_D046_795B_7CF9), (241, 0xC041_AB15_D642_052F),
        (1000, 0x2515_D8F6_1014_A185), (1024, 0x3C45_90D6_00AB_831C), (4096, 0x0759_080D_FF73_3E37),
        (5000, 0x6004_385F_A055_6523), (100_000, 0xEC19_E665_6535_77DF), (300_000, 0xA9AB_3897_9511_B080),
    ]

    @Test("matches the reference implementation at every length class, however head and body are cut")
    func referenceVectors() {
        data.withUnsafeBytes { all in
            for (count, digest) in expected {
                for split in Set([0, min(count, 1), min(count, 24), count / 2, count]) {
                    let head = UnsafeRawBufferPointer(rebasing: all[..<split])
                    let body = UnsafeRawBufferPointer(rebasing: all[split..<count])
                    #expect(XXH3.hash(body, after: head) == digest, "\(count) bytes cut at \(split) (AVX2: \(XXH3.usesAVX2))")
                    #expect(XXH3.hashWithDefaultKernel(body, after: head) == digest, "\(count) bytes, default kernel")
                }
            }
        }
    }

    @Test("a stream gives the one-shot digest whatever the pieces, and a running checksum in stripes too")
    func streaming() {
        data.withUnsafeBytes { all in
            for (count, digest) in expected where count >= 1000 {
                for piece in [1, 7, 64, 1000, 65_536] {
                    let stream = XXH3.Stream()
                    var offset = 0
                    while offset < count {
                        let end = min(offset + piece, count)
                        stream.update(UnsafeRawBufferPointer(rebasing: all[offset..<end]))
                        offset = end
                    }
                    #expect(stream.digest() == digest, "\(count) bytes in pieces of \(piece)")
                    #expect(stream.digest() == digest, "reading the digest leaves the stream as it was")
                }
                let head = UnsafeRawBufferPointer(rebasing: all[..<24])
                let running = RunningChecksum(for: .xxh3(0), head: head)!
                let stripes = 24 + (count - 24) & ~31
                running.absorb(UnsafeRawBufferPointer(rebasing: all[24..<stripes]))
                let tail = UnsafeRawBufferPointer(rebasing: all[stripes..<count])
                #expect(running.finish(tail: tail) == digest)
                #expect(running.finish(tail: tail) == digest, "finishing twice gives the same digest")
            }
        }
    }
}
