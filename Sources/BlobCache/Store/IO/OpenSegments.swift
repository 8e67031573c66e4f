/// The pack segments a store keeps open: at most `capacity` of them, the least recently used
/// closed first, so a cache of any number of segments needs a bounded number of descriptors
/// and mappings. Closing drops only the store's reference: a reader (or a pack collection)
/// still holding a segment keeps it open until it is done.
struct OpenSegments {
    /// How many segments stay open at most.
    let capacity: Int
    /// A box per open segment, so that marking a use changes it in place (one search on the
    /// read path, not a search and a store).
    private final class Entry {
        let segment: PackSegment
        var lastUse: UInt64
        init(_ segment: PackSegment, lastUse: UInt64) {
            self.segment = segment
            self.lastUse = lastUse
        }
    }

    private var entries = SegmentMap<Entry>()
    private var uses: UInt64 = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a store keeps at least one segment open")
        self.capacity = capacity
    }

    /// The open segment `number`, marked as just used; `nil` when it is not open.
    mutating func segment(_ number: UInt32) -> PackSegment? {
        guard let entry = entries[number] else { return nil }
        uses += 1
        entry.lastUse = uses
        return entry.segment
    }

    /// Keeps `segment` open, closing the least recently used one when full.
    mutating func keep(_ segment: PackSegment) {
        if entries[segment.number] == nil, entries.count >= capacity,
           let oldest = entries.values.indices.min(by: { entries.values[$0].lastUse < entries.values[$1].lastUse }) {
            entries[entries.keys[oldest]] = nil
        }
        uses += 1
        entries[segment.number] = Entry(segment, lastUse: uses)
    }

    /// The open segment `number`, without marking it used.
    func peek(_ number: UInt32) -> PackSegment? { entries[number]?.segment }

    /// Closes segment `number` (once no reader holds it).
    mutating func close(_ number: UInt32) { entries[number] = nil }

    /// How many segments are open.
    var count: Int { entries.count }

    /// The numbers of the open segments.
    var numbers: Set<UInt32> { Set(entries.keys) }
}
