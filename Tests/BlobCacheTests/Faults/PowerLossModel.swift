import Foundation
import SystemPackage
@testable import BlobCache

/// What a power cut could undo, in the spirit of ALICE (OSDI '14) and CrashMonkey (OSDI '18):
/// the directory as it was when tracking started (taken as durable), then every change since,
/// each file and name identified by a node of its own. At a crash point, `image(_:)` builds a
/// directory as the disk could hold it after losing power there:
///
/// - a write or truncate is durable once its file is fsynced after it; a create, rename,
///   unlink, mkdir or rmdir once its directory is fsynced after it;
/// - of the rest, a drop set keeps some: name changes as a prefix in the order they were made
///   (a journaling file system commits metadata in order), and each write whole, not at all,
///   or torn at 4 KiB pages (the pages it did not keep read as what was there before, or as
///   zeros past the old end of the file).
struct PowerLossModel: Sendable {
    /// A change since tracking started.
    enum Change: Sendable {
        case write(node: Int, offset: Int, bytes: [UInt8])
        case truncate(node: Int, length: Int)
        case create(path: String, node: Int)
        case rename(from: String, to: String)
        case unlink(path: String)
        case makeDirectory(String)
        case removeDirectory(String)
        case syncFile(node: Int)
        case syncDirectory(String)

        var isNameChange: Bool {
            switch self {
            case .create, .rename, .unlink, .makeDirectory, .removeDirectory: true
            default: false
            }
        }

        /// The directories whose fsync makes this name change durable.
        var directories: [String] {
            switch self {
            case .create(let path, _), .unlink(let path), .makeDirectory(let path), .removeDirectory(let path):
                [PowerLossModel.parent(path)]
            case .rename(let from, let to): [PowerLossModel.parent(from), PowerLossModel.parent(to)]
            default: []
            }
        }
    }

    /// Which non-durable changes survive.
    enum DropSet: Sendable, Hashable, CustomStringConvertible {
        /// Only what was made durable.
        case durableOnly
        /// Everything (what a process crash leaves).
        case everything
        /// A seeded mix: a prefix of the name changes, each write kept, dropped or torn.
        case random(UInt64)

        var description: String {
            switch self {
            case .durableOnly: "durable only"
            case .everything: "everything"
            case .random(let seed): "random #\(seed)"
            }
        }
    }

    let root: String
    private var baseFiles: [String: Int] = [:]
    private var baseDirectories: Set<String> = []
    private var baseContents: [Int: [UInt8]] = [:]
    private var names: [String: Int] = [:]
    private var directories: Set<String> = []
    private var nodeOfDescriptor: [Int32: Int] = [:]
    private var directoryOfDescriptor: [Int32: String] = [:]
    private var nextNode = 0
    private(set) var changes: [Change] = []

    /// Reads the directory at `root` as the durable starting point.
    init(root: String) {
        self.root = root
        let manager = FileManager.default
        baseDirectories.insert("")
        if let walker = manager.enumerator(atPath: root) {
            while let relative = walker.nextObject() as? String {
                var isDirectory: ObjCBool = false
                guard manager.fileExists(atPath: root + "/" + relative, isDirectory: &isDirectory) else { continue }
                if isDirectory.boolValue {
                    baseDirectories.insert(relative)
                } else {
                    let node = nextNode
                    nextNode += 1
                    baseFiles[relative] = node
                    baseContents[node] = readFile(root + "/" + relative)
                }
            }
        }
        names = baseFiles
        directories = baseDirectories
    }

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    private func relative(_ path: CachePath) -> String? {
        let text = path.string
        if text == root { return "" }
        guard text.hasPrefix(root + "/") else { return nil }
        return String(text.dropFirst(root.count + 1))
    }

    // MARK: Recording (called by FaultyFileSystem after each call succeeded)

    mutating func opened(_ path: CachePath, fd: Int32, created: Bool, truncated: Bool) {
        guard let name = relative(path) else { return }
        if directories.contains(name) {
            directoryOfDescriptor[fd] = name
            return
        }
        let node: Int
        if let existing = names[name], !created {
            node = existing
        } else {
            node = nextNode
            nextNode += 1
            names[name] = node
            changes.append(.create(path: name, node: node))
        }
        nodeOfDescriptor[fd] = node
        if truncated && !created { changes.append(.truncate(node: node, length: 0)) }
    }

    mutating func closed(fd: Int32) {
        nodeOfDescriptor[fd] = nil
        directoryOfDescriptor[fd] = nil
    }

    mutating func wrote(fd: Int32, bytes: [UInt8], at offset: Int64) {
        guard let node = nodeOfDescriptor[fd] else { return }
        changes.append(.write(node: node, offset: Int(offset), bytes: bytes))
    }

    mutating func truncated(fd: Int32, to length: Int64) {
        guard let node = nodeOfDescriptor[fd] else { return }
        changes.append(.truncate(node: node, length: Int(length)))
    }

    mutating func synced(fd: Int32) {
        if let node = nodeOfDescriptor[fd] { changes.append(.syncFile(node: node)) }
        if let directory = directoryOfDescriptor[fd] { changes.append(.syncDirectory(directory)) }
    }

    mutating func renamed(_ source: CachePath, to destination: CachePath) {
        guard let from = relative(source), let to = relative(destination) else { return }
        names[to] = names[from]
        names[from] = nil
        changes.append(.rename(from: from, to: to))
    }

    mutating func unlinked(_ path: CachePath) {
        guard let name = relative(path) else { return }
        names[name] = nil
        changes.append(.unlink(path: name))
    }

    mutating func madeDirectory(_ path: CachePath) {
        guard let name = relative(path) else { return }
        directories.insert(name)
        changes.append(.makeDirectory(name))
    }

    mutating func removedDirectory(_ path: CachePath) {
        guard let name = relative(path) else { return }
        directories.remove(name)
        changes.append(.removeDirectory(name))
    }

    // MARK: After the crash

    /// Whether each change was durable when the power went.
    func durability() -> [Bool] {
        var durable = [Bool](repeating: false, count: changes.count)
        var syncedNodes = Set<Int>(), syncedDirectories = Set<String>()
        for index in changes.indices.reversed() {
            switch changes[index] {
            case .syncFile(let node): syncedNodes.insert(node); durable[index] = true
            case .syncDirectory(let directory): syncedDirectories.insert(directory); durable[index] = true
            case .write(let node, _, _), .truncate(let node, _): durable[index] = syncedNodes.contains(node)
            case let change: durable[index] = change.directories.allSatisfy(syncedDirectories.contains)
            }
        }
        return durable
    }

    /// How many changes no fsync made durable (0: a power cut here loses nothing).
    var nonDurableChanges: Int { durability().filter { !$0 }.count }

    /// Writes the directory a power cut now could leave under `drops` to `destination`.
    func image(_ drops: DropSet, at destination: String) throws {
        let durable = durability()
        var generator = SeededGenerator(seed: { if case .random(let seed) = drops { return seed } else { return 0 } }())
        let nameChanges = changes.indices.filter { changes[$0].isNameChange && !durable[$0] }
        let cut: Int
        switch drops {
        case .durableOnly: cut = 0
        case .everything: cut = nameChanges.count
        case .random: cut = Int(generator.next() % UInt64(nameChanges.count + 1))
        }
        let keptNameChanges = Set(nameChanges.prefix(cut))

        var files = baseFiles
        var folders = baseDirectories
        var contents = baseContents
        for (index, change) in changes.enumerated() {
            switch change {
            case .syncFile, .syncDirectory:
                continue
            case .write(let node, let offset, let bytes):
                var pages: (Int) -> Bool = { _ in true }
                if !durable[index] {
                    switch drops {
                    case .durableOnly: continue
                    case .everything: break
                    case .random:
                        switch generator.next() % 3 {
                        case 0: continue
                        case 1: break
                        default:
                            let seed = generator.next()
                            pages = { page in (UInt64(page) &* 0x9E37_79B9_7F4A_7C15 ^ seed) >> 63 == 1 }
                        }
                    }
                }
                var data = contents[node] ?? []
                if data.count < offset + bytes.count { data += [UInt8](repeating: 0, count: offset + bytes.count - data.count) }
                for (at, byte) in bytes.enumerated() where pages((offset + at) / 4096) { data[offset + at] = byte }
                contents[node] = data
            case .truncate(let node, let length):
                if !durable[index] {
                    if case .durableOnly = drops { continue }
                    if case .random = drops, generator.next() % 2 == 0 { continue }
                }
                var data = contents[node] ?? []
                if data.count > length { data.removeLast(data.count - length) } else { data += [UInt8](repeating: 0, count: length - data.count) }
                contents[node] = data
            default:
                guard durable[index] || keptNameChanges.contains(index) else { continue }
                switch change {
                case .create(let path, let node):
                    if folders.contains(Self.parent(path)) { files[path] = node }
                    if contents[node] == nil { contents[node] = [] }
                case .rename(let from, let to):
                    if let node = files.removeValue(forKey: from), folders.contains(Self.parent(to)) { files[to] = node }
                case .unlink(let path):
                    files[path] = nil
                case .makeDirectory(let path):
                    if folders.contains(Self.parent(path)) { folders.insert(path) }
                case .removeDirectory(let path):
                    if !files.keys.contains(where: { Self.parent($0) == path }),
                       !folders.contains(where: { Self.parent($0) == path && $0 != path }) {
                        folders.remove(path)
                    }
                default:
                    break
                }
            }
        }
        let manager = FileManager.default
        try manager.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for folder in folders.sorted() where !folder.isEmpty {
            try manager.createDirectory(atPath: destination + "/" + folder, withIntermediateDirectories: true)
        }
        for (path, node) in files where folders.contains(Self.parent(path)) {
            guard manager.createFile(atPath: destination + "/" + path, contents: Data(contents[node] ?? [])) else {
                throw CocoaError(.fileWriteUnknown)
            }
        }
    }
}
