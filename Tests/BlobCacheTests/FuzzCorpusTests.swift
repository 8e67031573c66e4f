import Foundation
import Testing
@testable import BlobCache

/// Every saved fuzz input (Tests/Fuzz/Corpus: the seeds made from real files and every input
/// that once crashed) goes through its parser in every test run, sanitizer runs included, with
/// a few thousand deterministic mutations of each: truncations and byte changes at every
/// region of the input. libFuzzer (Tools/fuzz.sh) explores further; this keeps what it found.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    private static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    private static func inputs(_ target: FuzzTarget) -> [(name: String, bytes: [UInt8])] {
        let folder = corpus.appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { ($0, readFile(folder.appendingPathComponent($0).path)) }
    }

    @Test("every target has seed inputs, and each runs through its parser", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) {
        let inputs = Self.inputs(target)
        #expect(!inputs.isEmpty, "no corpus for \(target.rawValue)")
        for input in inputs { input.bytes.withUnsafeBytes { target.run($0) } }
    }

    /// 400 mutations of each seed; under a sanitizer (which sets BLOBCACHE_FAULT_STRIDE, as for
    /// the fault suites) a tenth of them: the plain run covers them all.
    private static let rounds = 400 / max(1, ProcessInfo.processInfo.environment["BLOBCACHE_FAULT_STRIDE"].flatMap(Int.init) ?? 1)

    @Test("mutations of every seed run through their parser", arguments: FuzzTarget.allCases)
    func mutations(target: FuzzTarget) {
        var random = SeededGenerator(seed: 11)
        var runs = 0
        for input in Self.inputs(target) where !input.bytes.isEmpty {
            let bytes = input.bytes
            let count = bytes.count
            for round in 0..<Self.rounds {
                // The mode byte stays; one to four bytes elsewhere take a boundary or random value.
                var mutated = bytes
                for _ in 0..<(1 + round % 4) where count > 1 {
                    let at = 1 + Int.random(in: 0..<(count - 1), using: &random)
                    let values: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, UInt8.random(in: 0...255, using: &random)]
                    mutated[at] = values[round % values.count]
                }
                if round % 10 == 9 { mutated.removeLast(Int.random(in: 0..<count, using: &random)) }
                mutated.withUnsafeBytes { target.run($0) }
                runs += 1
            }
        }
        #expect(runs > 0)
    }
}
