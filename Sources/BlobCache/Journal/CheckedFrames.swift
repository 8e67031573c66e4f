import Synchronization

/// How far one walk has checked a journal's frames (their lengths and CRCs), for the core
/// applying them: a frame boundary of the image, as a file offset, that only grows.
final class CheckedFrames: Sendable {
    private let start: Int
    private let checked: Atomic<Int>
    private let abandoned = Atomic<Bool>(false)

    /// Nothing checked yet: the walk starts at file offset `start`.
    init(start: Int) {
        self.start = start
        checked = Atomic(start)
    }

    /// Every frame that ends at or before this offset has a good CRC.
    var end: Int { checked.load(ordering: .acquiring) }

    /// Walks the frames of `image` (whose first byte is at file offset `start`), checking each,
    /// and says how far they are good every 256 frames and at the end, then calls
    /// `every256Frames` (the replay's prefault); stops early once `abandon()` is called.
    func check(_ image: UnsafeRawBufferPointer, salt: UInt64, every256Frames: () -> Void = {}) {
        var frames = JournalReader.Frames(records: image, at: start, salt: salt)
        var count = 0
        while case .frame = frames.next() {
            count += 1
            if count % 256 == 0 {
                checked.store(frames.offset, ordering: .releasing)
                if abandoned.load(ordering: .relaxed) { return }
                every256Frames()
            }
        }
        checked.store(frames.offset, ordering: .releasing)
    }

    /// Tells `check` that nobody needs the rest (the applying core has stopped).
    func abandon() { abandoned.store(true, ordering: .relaxed) }
}
