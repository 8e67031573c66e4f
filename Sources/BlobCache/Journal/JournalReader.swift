/// Walks the records of a journal image, checking each frame, and says how the walk ended.
///
/// Like LevelDB's log reader: a short record at the very end is a torn tail (a writer died
/// mid-append); a bad record before the end is corruption, and nothing after it is trusted.
struct JournalReader {
    enum End: Equatable {
        /// Every byte was a good record.
        case clean
        /// The last record was cut short at this offset (the end of the last good record).
        case tornTail(validEnd: Int)
        /// A record at this offset failed its CRC or did not parse; nothing after is trusted.
        case corrupt(offset: Int, reason: String)
    }

    /// The reason of a `.corrupt` end at a record whose CRC holds but whose seal does not open.
    static let sealFailure = "record does not open (AES-GCM tag)"

    /// How many frames the image holds, by their length fields alone (no checksums): an upper
    /// bound on the entries replay can make, to size the index before it starts. Stops at a
    /// frame no record can have (a zero length: no kind of record has an empty payload), so
    /// that a zero-filled tail, what a power cut can leave, does not count as millions of records.
    static func countFrames(records image: UnsafeRawBufferPointer) -> Int {
        var offset = 0, count = 0
        while image.count - offset >= JournalFormat.frameSize {
            let length = Int(UInt32(littleEndian: image.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard length >= 1, length <= JournalFormat.maxPayload else { break }
            offset += JournalFormat.frameSize + length
            count += 1
        }
        return count
    }

    /// Replays every good record of `image` (header included) through `apply`, in order; a
    /// record `apply` refuses (returns `false`) is corruption. Returns how the walk ended and
    /// how many records were good. `cipher` opens the payloads of an encrypted journal.
    static func walk(_ image: UnsafeRawBufferPointer, salt: UInt64, cipher: CacheCipher?, framesOnly: Bool = false,
                     _ apply: (JournalRecord, _ offset: Int) -> Bool) -> (end: End, records: Int) {
        walk(records: UnsafeRawBufferPointer(rebasing: image[JournalFormat.headerSize...]), at: JournalFormat.headerSize,
             salt: salt, cipher: cipher, framesOnly: framesOnly, apply)
    }

    /// Replays the records in `records`, which are the journal's bytes from file offset `start`
    /// (a record boundary) to its end. Offsets in the result and in `apply` are file offsets.
    /// `framesOnly`: lengths and CRCs are checked, nothing is decoded or applied (an
    /// encrypted journal checked without its key).
    static func walk(records image: UnsafeRawBufferPointer, at start: Int, salt: UInt64, cipher: CacheCipher?,
                     framesOnly: Bool = false, _ apply: (JournalRecord, _ offset: Int) -> Bool) -> (end: End, records: Int) {
        var frames = Frames(records: image, at: start, salt: salt)
        var count = 0
        while true {
            switch frames.next() {
            case .end(let end):
                return (end, count)
            case .frame(let kind, let payload, let offset):
                if !framesOnly {
                    let decoded: JournalRecord?
                    if let cipher {
                        guard let opened = cipher.open(payload, context: .record(kind: kind), { JournalRecord.decode(kind: kind, payload: $0) }) else {
                            return (.corrupt(offset: offset, reason: sealFailure), count)
                        }
                        decoded = opened
                    } else {
                        decoded = JournalRecord.decode(kind: kind, payload: payload)
                    }
                    guard let record = decoded else { return (.corrupt(offset: offset, reason: unparsable(kind: kind)), count) }
                    guard apply(record, offset) else { return (.corrupt(offset: offset, reason: refused(kind: kind)), count) }
                }
                count += 1
            }
        }
    }

    /// The reason of a `.corrupt` end at a record of type `kind` whose payload does not parse.
    static func unparsable(kind: UInt8) -> String { "record of type \(kind) does not parse" }

    /// The reason of a `.corrupt` end at a record of type `kind` that the index refuses.
    static func refused(kind: UInt8) -> String { "record of type \(kind) claims more bytes than any cache holds" }

    /// The frames of a journal image in order, each one's length and CRC checked: the one
    /// place that knows where a record ends and whether the walk stops there. A frame that ends
    /// at or before `checkedUpTo` (a frame boundary another walk of the same image has already
    /// checked up to, `assumeChecked(upTo:)`) has its CRC taken as checked.
    ///
    ///     var frames = JournalReader.Frames(records: image, at: start, salt: salt)
    ///     while case .frame(let kind, let payload, let offset) = frames.next() { ... }
    struct Frames {
        enum Step {
            /// A good frame: its type byte, its payload and its file offset.
            case frame(kind: UInt8, payload: UnsafeRawBufferPointer, offset: Int)
            /// No more good frames, and why.
            case end(End)
        }

        /// Frames ending at or before this file offset are not checked again.
        private(set) var checkedUpTo: Int
        private let image: UnsafeRawBufferPointer
        private let start: Int
        private let seed: UInt32
        private var position = 0

        init(records image: UnsafeRawBufferPointer, at start: Int, salt: UInt64) {
            self.image = image
            self.start = start
            self.seed = JournalFormat.seed(salt: salt)
            checkedUpTo = start
        }

        /// The file offset of the next frame: after a `.frame`, where that frame ends.
        var offset: Int { start + position }

        /// Takes the CRCs of the frames up to file offset `boundary` as checked: it must be the
        /// `offset` another walk of the same image from the same start reached. Only grows.
        mutating func assumeChecked(upTo boundary: Int) {
            checkedUpTo = max(checkedUpTo, boundary)
        }

        /// The next frame, or how the walk ended (the same end again on every later call).
        mutating func next() -> Step {
            let total = image.count
            guard position < total else { return .end(.clean) }
            guard total - position >= JournalFormat.frameSize else { return .end(.tornTail(validEnd: start + position)) }
            let length = Int(UInt32(littleEndian: image.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
            guard length >= 1, length <= JournalFormat.maxPayload else {
                return .end(.corrupt(offset: start + position, reason: "record length \(length) is impossible"))
            }
            let end = position + JournalFormat.frameSize + length
            guard end <= total else { return .end(.tornTail(validEnd: start + position)) }
            let body = UnsafeRawBufferPointer(rebasing: image[(position + 8)..<end])
            if start + end > checkedUpTo {
                let crc = UInt32(littleEndian: image.loadUnaligned(fromByteOffset: position + 4, as: UInt32.self))
                guard CRC32.update(seed, body) == crc else {
                    return .end(.corrupt(offset: start + position, reason: "record CRC mismatch"))
                }
            }
            defer { position = end }
            return .frame(kind: body[0], payload: UnsafeRawBufferPointer(rebasing: body[1...]), offset: start + position)
        }
    }
}
