import BlobCache
import Foundation

// `--workloads presets`: W1 (the corpus's real files) and W3 (1,000 values of 1 MiB) once per
// compression preset, each put row with the bytes stored: what each preset costs on disk
// against what it gives in put and get speed. PRESETS=adaptive,off (names as `description`
// spells them, any case) runs only those, in that order; Benchmarks/compression.py sets it.

extension CompressionPolicy {
    /// The presets, in the order the workload runs them.
    static let presets: [CompressionPolicy] = [.adaptive, .balanced, .fastReads, .smallest, .off]

    /// The presets `PRESETS` names, else all of them; an unknown name stops the runner.
    static func chosenPresets() throws -> [CompressionPolicy] {
        guard let names = ProcessInfo.processInfo.environment["PRESETS"], !names.isEmpty else { return presets }
        return try names.split(separator: ",").map { name in
            guard let preset = presets.first(where: { "\($0)".lowercased() == name.lowercased() }) else {
                throw WorkloadError.usage("PRESETS: unknown compression preset \(name): "
                                          + presets.map(\.description).joined(separator: ", "))
            }
            return preset
        }
    }
}

func presets(_ options: Options, corpus: Corpus) throws -> [Measurement] {
    let chosen = try CompressionPolicy.chosenPresets()
    let w3 = try Corpus.blobs(options.corpus + "/synth_1m.bin", size: 1 << 20, count: 1000)
    let w3Keys = w3.map(md5Hex)
    let w3Flat = w3.flatMap { $0 }
    var results: [Measurement] = []
    for preset in chosen {
        var setting = options
        setting.compression = preset
        try corpus.concat.withUnsafeBytes { all in
            results += try putThenGet("W1.\(preset)", setting, keys: corpus.files.map(\.path)) { index in
                let file = corpus.files[index]
                return UnsafeRawBufferPointer(rebasing: all[file.offset..<file.offset + file.size])
            }
        }
        try w3Flat.withUnsafeBytes { all in
            results += try putThenGet("W3.\(preset)", setting, keys: w3Keys) {
                UnsafeRawBufferPointer(rebasing: all[($0 << 20)..<(($0 + 1) << 20)])
            }
        }
    }
    return results
}
