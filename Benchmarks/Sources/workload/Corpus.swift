import Foundation

/// The benchmark corpus (Benchmarks/corpus/README.md), loaded into memory so timing
/// measures the cache and not the reading of inputs.
struct Corpus {
    struct File { let path: String; let offset: Int; let size: Int }

    let directory: String
    let files: [File]
    let concat: [UInt8]

    init(directory: String) throws {
        self.directory = directory
        let manifest = try String(contentsOfFile: directory + "/manifest.tsv", encoding: .utf8)
        files = manifest.split(separator: "\n").dropFirst().map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            return File(path: String(fields[0]), offset: Int(fields[2])!, size: Int(fields[1])!)
        }
        concat = try Self.load(directory + "/concat.bin")
    }

    static func load(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw WorkloadError.missingCorpus(path)
        }
        return Array(data)
    }

    /// `count` fixed-size blobs from a synth_*.bin file.
    static func blobs(_ path: String, size: Int, count: Int) throws -> [[UInt8]] {
        let all = try load(path)
        return (0..<min(count, all.count / size)).map { Array(all[($0 * size)..<(($0 + 1) * size)]) }
    }

    /// The W5 trace: warm-up count and the operations (put or get, manifest row).
    static func trace(_ path: String) throws -> (warmup: Int, ops: [(put: Bool, index: Int)]) {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var warmup = 0
        var ops: [(Bool, Int)] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") {
                let fields = line.dropFirst().split(whereSeparator: { $0 == "\t" || $0 == " " })
                if fields.first == "warmup", let n = Int(fields.last!) { warmup = n }
                continue
            }
            let fields = line.split(separator: "\t")
            ops.append((fields[0] == "P", Int(fields[1])!))
        }
        return (warmup, ops)
    }
}

enum WorkloadError: Error, CustomStringConvertible {
    case missingCorpus(String)
    case usage(String)
    var description: String {
        switch self {
        case .missingCorpus(let path): "corpus file \(path) is missing: run python3 Benchmarks/corpus/make_corpus.py"
        case .usage(let text): text
        }
    }
}
