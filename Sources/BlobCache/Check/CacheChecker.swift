import Dispatch
import SystemPackage

extension BlobCache {
    /// Checks a cache directory like `git fsck`: the journal's header and framing, every blob's
    /// name, placement, header, length, checksum, decoding and digest, entries whose blob is
    /// missing, dangling blobs, temporary and unknown files, recorded sizes and the limits.
    /// It reads the journal itself, before any repair an open would make, so it reports what
    /// is there; with `options.repair` it then fixes everything it reported and checks again.
    ///
    ///     let report = try BlobCache.check(directory: "/var/cache/app")
    ///     report.findings.forEach { print($0) }
    public static func check(directory: String, options: CheckOptions = CheckOptions()) throws -> CheckReport {
        try check(CacheFiles(root: CachePath(normalizing: directory)), io: .posix, options: options)
    }

    /// `check(directory:options:)` through a given file system (tests inject faults with it).
    static func check(_ files: CacheFiles, io: FileIO, options: CheckOptions) throws -> CheckReport {
        guard try io.isDirectory(files.root) else {
            throw BlobCacheError.directoryUnusable(path: files.root.string, reason: "it is not a directory")
        }
        let io = io.matchingAccess(of: files.root)
        let cipher = try options.encryption.map(CacheCipher.init)
        // An encrypted journal and no key: checked as far as it can be, but not repaired.
        if let header = JournalFile.peekHeader(files: files, io: io) {
            if header.keyCheck == nil || cipher != nil || options.repair {
                try header.requireKey(cipher, cache: files.root.string)
            }
        }
        let lock = try DirectoryLock.open(files, io: io, timeout: options.lockTimeout)
        defer { lock.close() }
        // Joined (unless repairing), so that no open cuts a segment tail this check may be reading.
        if !options.repair { try lock.withExclusive { lock.joinOpens() } }
        let limits = try options.limits ?? defaultLimits(in: files, io: io)
        guard options.repair else {
            return try checkBesideWriters(files, io: io, lock: lock, limits: limits, fast: options.fast, cipher: cipher)
        }
        return try lock.withExclusive {
            var report = try CacheChecker.run(files, io: io, limits: limits, fast: options.fast, cipher: cipher)
            if !report.findings.isEmpty {
                try Engine.repair(files, io: io, findings: report.findings, limits: limits, lock: lock,
                                        encryption: options.encryption)
                report.repaired = true
                report.errorsLeft = try CacheChecker.run(files, io: io, limits: limits, fast: options.fast, cipher: cipher).errors
            }
            return report
        }
    }

    /// A check without repair, beside other processes using the cache: it runs without the
    /// flock, and when it found anything while another process committed a change (the
    /// journal or `DIR/sequence` differ before and after), it runs again holding the flock,
    /// so that nothing a writer was doing meanwhile is reported as a problem.
    private static func checkBesideWriters(_ files: CacheFiles, io: FileIO, lock: DirectoryLock, limits: Limits,
                                           fast: Bool, cipher: CacheCipher?) throws -> CheckReport {
        func stamp() -> [Int64] {
            let journal = io.status(files.journal)
            var sequence: [UInt8] = []
            if let fd = try? io.openIfExists(files.sequence) {
                sequence = (try? io.read(fd, count: 8, at: 8, path: files.sequence)) ?? []
                io.close(fd)
            }
            return [Int64(journal?.st_ino ?? 0), Int64(journal?.st_size ?? -1)] + sequence.map(Int64.init)
        }
        let before = try lock.withExclusive { stamp() }
        let report = try CacheChecker.run(files, io: io, limits: limits, fast: fast, cipher: cipher)
        // (The note that an encrypted cache was checked without its key is no finding of a writer's.)
        if report.findings.allSatisfy({ $0.problem == "encrypted-unchecked" }) { return report }
        if try lock.withExclusive({ stamp() }) == before { return report }
        return try lock.withExclusive { try CacheChecker.run(files, io: io, limits: limits, fast: fast, cipher: cipher) }
    }
}

/// One pass of checks over a locked cache directory.
struct CacheChecker {
    let files: CacheFiles
    let io: FileIO
    let limits: BlobCache.Limits
    let fast: Bool
    /// Opens what an encrypted cache sealed; `nil` without a key (or for a plain cache).
    let cipher: CacheCipher?
    private var report = BlobCache.CheckReport()

    init(_ files: CacheFiles, io: FileIO, limits: BlobCache.Limits, fast: Bool, cipher: CacheCipher?) {
        self.cipher = cipher
        self.files = files
        self.io = io
        self.limits = limits
        self.fast = fast
    }

    private mutating func error(_ problem: String, _ subject: String, _ path: CachePath, _ detail: String) {
        report.findings.append(.init(severity: .error, problem: problem, subject: subject, path: path.string, detail: detail))
    }

    private mutating func note(_ problem: String, _ subject: String, _ path: CachePath, _ detail: String) {
        report.findings.append(.init(severity: .note, problem: problem, subject: subject, path: path.string, detail: detail))
    }

    /// A damaged pack record: reported at `segment@offset`, which names the record, not a file.
    private mutating func recordCorrupt(_ id: BlobID, in segment: CachePath, at offset: some BinaryInteger, _ detail: String) {
        report.findings.append(.init(severity: .error, problem: "pack-record-corrupt", subject: id.hex,
                                     path: "\(segment.string)@\(offset)", detail: detail))
    }

    /// Runs every check once.
    static func run(_ files: CacheFiles, io: FileIO, limits: BlobCache.Limits, fast: Bool,
                    cipher: CacheCipher?) throws -> BlobCache.CheckReport {
        var checker = CacheChecker(files, io: io, limits: limits, fast: fast, cipher: cipher)
        return try checker.run()
    }

    private mutating func run() throws -> BlobCache.CheckReport {
        let index = checkJournal()
        let packs = files.packs
        let scan = try DirectoryScan(files: files, io: io)
        for path in scan.unknownFiles {
            note("unknown-file", "-", path, "not a blob named by its content in its shard, nor a temporary file: not the cache's, left alone")
        }
        let misplaced = try files.ownFiles.filter { try io.fileType($0).map { $0 != .regular } ?? false }
        for path in misplaced + scan.irregularFiles {
            error("not-a-regular-file", "-", path,
                  "a symbolic link, a directory or an impossibly large file where the cache keeps a file of its own: never followed or written through; move it away")
        }
        // A live process's staged file is a set in flight, not a leftover.
        for path in scan.temporaryFiles where path.lastComponent.map(CacheFiles.stagingOwnerIsGone) ?? false {
            note("stale-temp", "-", path, "temporary file left by a writer that is gone")
        }
        for path in scan.emptyShardDirectories { note("empty-shard", "-", path, "empty shard directory") }
        checkLooseBlobs(scan.looseBlobs, index: index)
        checkPacks(scan.segments, index: index, packs: packs)
        if let index { checkTotals(index) }
        report.findings.sort { ($0.severity == .error ? 0 : 1, $0.problem, $0.path) < ($1.severity == .error ? 0 : 1, $1.problem, $1.path) }
        return report
    }

    /// Replays the journal as an open would, reporting damage instead of repairing it.
    private mutating func checkJournal() -> CacheIndex? {
        let path = files.journal
        // Read, or mapped when large: nothing is allocated for what a file merely claims to hold.
        do {
            guard let checked = try MappedFile.withContents(of: path, io: io, { image in checkJournal(image, at: path) }) else {
                error("journal-missing", "-", path, "no journal: keys cannot be known")
                return nil
            }
            return checked
        } catch {
            self.error("journal-missing", "-", path, "unreadable (\(error)): keys cannot be known")
            return nil
        }
    }

    /// Checks a journal's bytes (and the snapshot against them); the index a replay gives.
    private mutating func checkJournal(_ image: UnsafeRawBufferPointer, at path: CachePath) -> CacheIndex? {
        let header: JournalFormat.Header
        switch JournalFormat.decodeHeader(image) {
        case .success(let parsed): header = parsed
        case .failure(.damaged(let reason)):
            error("journal-bad-header", "-", path, reason)
            return nil
        case .failure(.newerVersion(let version)):
            error("journal-bad-header", "-", path, "format version \(version) is newer than this tool")
            return nil
        }
        if header.keyCheck != nil && cipher == nil {
            checkFramesOnly(image, at: path, salt: header.salt)
            return nil
        }
        var index = CacheIndex()
        let walk = JournalReader.walk(image, salt: header.salt, cipher: cipher) { record, _ in index.apply(record) }
        reportEnd(of: walk.end, journalSize: image.count, at: path)
        if case .clean = walk.end { checkSnapshot(against: index, journal: image, salt: header.salt) }
        report.entriesChecked = index.entryCount
        return index
    }

    /// Reports how a walk of the journal at `path` ended: a torn tail, or a record not trusted.
    private mutating func reportEnd(of end: JournalReader.End, journalSize: Int, at path: CachePath) {
        switch end {
        case .clean: break
        case .tornTail(let validEnd):
            error("journal-torn-tail", "-", path, "last record cut short at byte \(validEnd) (\(journalSize - validEnd) bytes)")
        case .corrupt(let offset, let reason):
            error("journal-checksum", "-", path, "\(reason) at byte \(offset); records after it are not trusted")
        }
    }

    /// An encrypted journal without its key: its frames' lengths and CRCs are checked, its
    /// records cannot be read, and the report says what went unchecked.
    private mutating func checkFramesOnly(_ image: UnsafeRawBufferPointer, at path: CachePath, salt: UInt64) {
        let walk = JournalReader.walk(image, salt: salt, cipher: nil, framesOnly: true) { _, _ in true }
        reportEnd(of: walk.end, journalSize: image.count, at: path)
        note("encrypted-unchecked", "-", path,
             "the cache is encrypted and no key was given: checked the journal's \(walk.records) record frames (lengths, CRCs) and every blob's header and checksum; not checked: record contents, entries, the snapshot, blob contents and ids, missing or dangling blobs, limits (give the key to check them)")
    }

    /// Checks `DIR/index`, if there is one: intact, and restoring it then replaying the rest of
    /// the journal gives exactly the index a full replay gave.
    private mutating func checkSnapshot(against replayed: CacheIndex, journal: UnsafeRawBufferPointer, salt: UInt64) {
        let path = files.snapshot
        let opened: Result<(file: MappedFile, header: IndexSnapshot.Header), BlobDamage>?
        do { opened = try IndexSnapshot.map(path, io: io, journalSize: Int64(journal.count), cipher: cipher) } catch {
            self.error("snapshot-corrupt", "-", path, "unreadable: \(error)")
            return
        }
        guard let opened else { return }
        let problem: (id: String, detail: String)? = { () -> (String, String)? in
            let file: MappedFile, header: IndexSnapshot.Header
            switch opened {
            case .failure(.sizeMismatch): return ("snapshot-stale", "reflects another journal (it is not used; the next open deletes it)")
            case .failure(.header(IndexSnapshot.otherLayout)):
                return ("snapshot-stale", "\(IndexSnapshot.otherLayout) (it is not used; the next open replays the journal)")
            case .failure(let damage): return ("snapshot-corrupt", "\(damage.kind): \(damage.detail)")
            case .success(let parsed): (file, header) = parsed
            }
            guard header.journalSalt == salt, header.journalLength <= Int64(journal.count),
                  header.journalLength >= Int64(JournalFormat.headerSize) else {
                return ("snapshot-stale", "reflects another journal (it is not used; the next open deletes it)")
            }
            guard var restored = IndexSnapshot.restore(file, header: header) else {
                return ("snapshot-corrupt", "body hash mismatch or inconsistent records")
            }
            let tail = journal.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[Int(header.journalLength)...]) }
            let walk = JournalReader.walk(records: tail, at: Int(header.journalLength), salt: salt, cipher: cipher) { record, _ in
                restored.apply(record)
            }
            guard walk.end == .clean else {
                return ("snapshot-mismatch", "the journal after byte \(header.journalLength) does not start at a record")
            }
            // A segmented LRU's order (which entries are protected, where new ones joined) is
            // the journal's only approximately: the rest must agree exactly.
            return restored.firstDifference(from: replayed, order: !header.segmented).map { ("snapshot-mismatch", $0) }
        }()
        guard let problem else { return }
        if problem.id == "snapshot-stale" { note(problem.id, "-", path, problem.detail) } else { error(problem.id, "-", path, problem.detail) }
    }

    private mutating func checkLooseBlobs(_ blobs: [(id: BlobID, path: CachePath)], index: CacheIndex?) {
        // Verify on every core: MD5 and decompression dominate.
        let results = Locked([Int: (BlobDamage?, Int, LooseBlobFormat.Header?)]())
        let fast = self.fast, io = self.io, cipher = self.cipher
        DispatchQueue.concurrentPerform(iterations: blobs.count) { n in
            let outcome = Self.verifyLoose(blobs[n].id, at: blobs[n].path, fast: fast, io: io, cipher: cipher)
            results.withLock { $0[n] = outcome }
        }
        let outcomes = results.withLock { $0 }
        var seen = Set<BlobID>()
        for (n, blob) in blobs.enumerated() {
            let (damage, size, header) = outcomes[n]!
            report.blobsChecked += 1
            report.bytesChecked += size
            seen.insert(blob.id)
            let indexed = index?.blob(blob.id)
            if let damage {
                // One no entry uses that does not open under this key: a rekey stopped before
                // its new journal took over (or one after it, before the old blobs went).
                if case .sealing = damage, let index, index.blob(blob.id) == nil {
                    note("dangling-blob", blob.id.hex, blob.path,
                         "no entry refers to it, and it is sealed under another key (left by an interrupted rekey)")
                } else {
                    error("blob-corrupt", blob.id.hex, blob.path, "\(damage.kind): \(damage.detail)")
                }
                continue
            }
            guard let indexed, case .loose = indexed.info.place else {
                if index != nil { note("dangling-blob", blob.id.hex, blob.path, "no entry refers to it") }
                continue
            }
            // A note, not an error: the file checked out, and reads trust its own header. A
            // recompression stopped between its rename and its journal record leaves this.
            if let header, header.payloadLength != indexed.info.payloadLength || header.codec != indexed.info.codec {
                note("size-mismatch", blob.id.hex, blob.path,
                      "journal records \(indexed.info.payloadLength) stored bytes (\(indexed.info.codec.name)), file has \(header.payloadLength) (\(header.codec.name))")
            }
        }
        guard let index else { return }
        for (key, slot) in index.keyedSlots {
            let id = index.blob(ofEntry: slot).id
            if case .loose = index.blob(id)!.info.place, !seen.contains(id) {
                error("missing-blob", BlobCache.escapedKey(key), files.loosePath(of: id), "entry's blob \(id) is missing")
            }
        }
    }

    /// (damage, bytes read, header) for one loose blob file.
    /// Without `cipher`, a sealed blob whose checksum holds counts as intact (its contents
    /// cannot be checked).
    private static func verifyLoose(_ id: BlobID, at path: CachePath, fast: Bool, io: FileIO,
                                    cipher: CacheCipher?) -> (BlobDamage?, Int, LooseBlobFormat.Header?) {
        if let pieced = verifyPieced(id, at: path, fast: fast, io: io, cipher: cipher) { return pieced }
        let checked = try? MappedFile.withContents(of: path, io: io) { bytes -> (BlobDamage?, Int, LooseBlobFormat.Header?) in
            let header = try? LooseBlobFormat.parseHeader(bytes).get()
            switch LooseBlobFormat.decode(file: bytes, expecting: nil, id: id, cipher: cipher) {
            case .failure(.sealing) where cipher == nil && header?.sealed == true: return (nil, bytes.count, header)
            case .failure(let damage): return (damage, bytes.count, header)
            case .success(let value):
                let hasher = BlobHasher(cipher)
                if !fast, hasher.id(of: value) != id {
                    return (.digest("content hashes to \(hasher.id(of: value)), not its name"), bytes.count, header)
                }
                return (nil, bytes.count, header)
            }
        }
        return checked ?? (.missing("unreadable"), 0, nil)
    }

    /// `verifyLoose` of a pieced blob (format 4), read and hashed a piece at a time so that a
    /// value of any size is checked in bounded memory; `nil` when the file is not one.
    private static func verifyPieced(_ id: BlobID, at path: CachePath, fast: Bool, io: FileIO,
                                     cipher: CacheCipher?) -> (BlobDamage?, Int, LooseBlobFormat.Header?)? {
        guard let checked = PiecedBlobReader.verifyFile(at: path, io: io, id: id, cipher: cipher, hashing: !fast) else { return nil }
        // Without the key a sealed blob's contents cannot be checked: its header and every
        // piece's checksum are.
        if case .sealing? = checked.damage, cipher == nil, checked.header?.sealed == true,
           let framing = PiecedBlobReader.verifyFile(at: path, io: io, id: id, cipher: nil, checksumsOnly: true) {
            return (framing.damage, framing.size, framing.header)
        }
        return (checked.damage, checked.size, checked.header)
    }

    private mutating func checkPacks(_ segments: [(number: UInt32, path: CachePath)], index: CacheIndex?, packs: CachePath) {
        var present = Set<UInt32>()
        for (number, path) in segments {
            // Read, or mapped when large; one that cannot be read is a missing segment.
            guard (try? MappedFile.withContents(of: path, io: io, { image in checkSegment(number, at: path, image: image, index: index) })) != nil else {
                continue
            }
            present.insert(number)
        }
        guard let index else { return }
        for (key, slot) in index.keyedSlots {
            let id = index.blob(ofEntry: slot).id
            if case .packed(let number, _) = index.blob(id)!.info.place, !present.contains(number) {
                error("missing-blob", BlobCache.escapedKey(key), packs.appending(PackFormat.fileName(of: number)),
                      "entry's blob \(id) is in a missing pack segment")
            }
        }
    }

    /// Checks one mapped segment: its header, then every live record the index places in it.
    private mutating func checkSegment(_ number: UInt32, at path: CachePath, image bytes: UnsafeRawBufferPointer, index: CacheIndex?) {
        if let problem = PackFormat.checkSegmentHeader(bytes, number: number) {
            error("pack-corrupt", "-", path, problem)
            return
        }
        guard let index else {
            if cipher == nil { checkSealedRecords(number, at: path, image: bytes) }
            return
        }
        for (id, blob) in index.storedBlobs {
            guard case .packed(number, let offset) = blob.info.place else { continue }
            report.blobsChecked += 1
            report.bytesChecked += blob.info.footprint
            guard Int(offset) + blob.info.footprint <= bytes.count else {
                recordCorrupt(id, in: path, at: offset, "record runs past the end of the segment")
                continue
            }
            let record = UnsafeRawBufferPointer(rebasing: bytes[Int(offset)..<Int(offset) + blob.info.footprint])
            switch PackFormat.decode(record: record, expecting: blob.info, cipher: cipher) {
            case .failure(let damage):
                recordCorrupt(id, in: path, at: offset, "\(damage.kind): \(damage.detail)")
            case .success(let value):
                let hasher = BlobHasher(cipher)
                if !fast, hasher.id(of: value) != id {
                    recordCorrupt(id, in: path, at: offset, "digest: content hashes to \(hasher.id(of: value))")
                }
            }
        }
    }

    /// Without the index (an encrypted journal and no key), every record of a segment is
    /// checked by its header and checksum, in order, up to the first that does not parse.
    private mutating func checkSealedRecords(_ number: UInt32, at path: CachePath, image bytes: UnsafeRawBufferPointer) {
        var damaged: [(Int, BlobID, BlobDamage)] = []
        _ = PackScanner.scan(bytes, cipher: nil) { offset, header, result in
            switch result {
            case .failure(.sealing) where header.sealed: break
            case .failure(let damage): damaged.append((offset, header.id, damage))
            case .success: break
            }
            report.blobsChecked += 1
            report.bytesChecked += PackFormat.recordHeaderSize + header.payloadLength
        }
        for (offset, id, damage) in damaged {
            recordCorrupt(id, in: path, at: offset, "\(damage.kind): \(damage.detail)")
        }
    }

    private mutating func checkTotals(_ index: CacheIndex) {
        let journal = files.journal
        if let max = limits.maxStoredBytes, index.storedBytes > max {
            error("over-limit", "-", journal, "\(index.storedBytes) stored bytes exceed the limit of \(max)")
        }
        if let max = limits.maxEntries, index.entryCount > max {
            error("over-limit", "-", journal, "\(index.entryCount) entries exceed the limit of \(max)")
        }
    }
}
